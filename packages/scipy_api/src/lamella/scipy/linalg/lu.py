"""LU factorization with partial pivoting: ``lu``, ``lu_factor``, ``lu_solve``.

All three take batches (leading axes), ``lu`` too (JAX's is unbatched; SciPy's
is batched). ``lu_factor`` returns LAPACK's 0-based sequential row swaps.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import lamella.lax.linalg as lax_linalg
import lamella.numpy as lnp
from lamella.scipy.linalg.common import (
    check_matrix,
    compiled,
    inexact,
    mT,
    right_hand_side,
    triangular_solve,
)

__all__ = ["lu", "lu_factor", "lu_solve"]


def lu_factor(a: Any, overwrite_a: bool = False,
              check_finite: bool = True) -> tuple[Any, Any]:
    """``(lu, piv)``: L (unit diagonal, below) and U (on and above) packed in one
    matrix, and the row swaps (row i was swapped with row ``piv[i]``), as LAPACK.

    >>> import lamella.numpy as lnp
    >>> lu, piv = lu_factor(lnp.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> lu, piv
    (Array([[3.        , 4.        ],
           [0.33333334, 0.6666666 ]], dtype=float32), Array([1, 1], dtype=int32))
    """
    del overwrite_a, check_finite
    a, = inexact(a)
    check_matrix("lu_factor", a, square=False)
    packed, pivots, _ = lax_linalg.lu(a)
    return packed, pivots


def permutation_matrix(permutation: Any, dtype: Any) -> Any:
    """P with ``P[..., perm[i], i] = 1``, so that ``a = P l u`` when ``a[perm] = l u``."""
    n = permutation.shape[-1]
    return (permutation[..., None, :] == lnp.arange(n)[:, None]).astype(dtype)


def lu(a: Any, permute_l: bool = False, overwrite_a: bool = False,
       check_finite: bool = True) -> tuple[Any, ...]:
    """``(p, l, u)`` with ``a = p @ l @ u``, or ``(p @ l, u)`` when `permute_l`.

    For an (m, n) `a` and k = min(m, n): `p` is (m, m), `l` (m, k) unit lower
    triangular, `u` (k, n) upper triangular. Leading axes are batch axes.

    >>> import lamella.numpy as lnp
    >>> p, l, u = lu(lnp.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> p
    Array([[0., 1.],
           [1., 0.]], dtype=float32)
    """
    del overwrite_a, check_finite
    a, = inexact(a)
    check_matrix("lu", a, square=False)
    return compiled(_lu, permute_l=bool(permute_l))(a)


def _lu(a: Any, permute_l: bool) -> tuple[Any, ...]:
    m, n = a.shape[-2:]
    k = min(m, n)
    packed, _, permutation = lax_linalg.lu(a)
    l_factor = lnp.tril(packed[..., :, :k], -1) + lnp.eye(m, k, dtype=a.dtype)
    u_factor = lnp.triu(packed[..., :k, :])
    p = permutation_matrix(permutation, a.dtype)
    if permute_l:
        return p @ l_factor, u_factor
    return p, l_factor, u_factor


def lu_solve(lu_and_piv: tuple[Any, Any], b: Any, trans: int = 0, overwrite_b: bool = False,
             check_finite: bool = True) -> Any:
    """Solves ``a x = b`` (`trans` 0), ``a^T x = b`` (1) or ``a^H x = b`` (2), given
    ``(lu, piv) = lu_factor(a)``. `b` is ``(n,)`` or ``(..., n, k)``.

    >>> import lamella.numpy as lnp
    >>> factors = lu_factor(lnp.array([[1.0, 2.0], [3.0, 4.0]]))
    >>> lu_solve(factors, lnp.array([5.0, 11.0]))
    Array([1., 2.], dtype=float32)
    """
    del overwrite_b, check_finite
    if trans not in (0, 1, 2):
        raise ValueError(f"lu_solve: trans must be 0, 1 or 2; got {trans!r}")
    try:
        packed, pivots = lu_and_piv
    except (TypeError, ValueError):
        raise TypeError("lu_solve: the first argument must be the pair (lu, piv) that "
                        "lu_factor returns") from None
    packed, b = inexact(packed, b)
    check_matrix("lu_solve", packed, "lu")
    n = packed.shape[-1]
    pivots = lnp.asarray(pivots)
    if pivots.shape[-1:] != (n,):
        raise ValueError(f"lu_solve: piv must have shape (..., {n}) to match lu of shape "
                         f"{packed.shape}; got shape {pivots.shape}")
    b, vector = right_hand_side("lu_solve", n, b, packed.ndim, warn=False)
    x = compiled(_lu_solve, trans=trans)(packed, pivots, b)
    return x[..., 0] if vector else x


def _lu_solve(packed: Any, pivots: Any, b: Any, trans: int) -> Any:
    n = packed.shape[-1]
    permutation = lax_linalg.lu_pivots_to_permutation(pivots.astype(np.int32), n)
    p = permutation_matrix(permutation, packed.dtype)
    if trans == 0:
        # a = p l u: x = u^-1 l^-1 p^T b.
        y = triangular_solve(packed, mT(p) @ b, lower=True, unit_diagonal=True)
        x = triangular_solve(packed, y, lower=False)
    else:
        conj = trans == 2
        y = triangular_solve(packed, b, lower=False, transpose_a=True, conjugate_a=conj)
        y = triangular_solve(packed, y, lower=True, transpose_a=True, conjugate_a=conj,
                             unit_diagonal=True)
        x = p @ y
    return x
