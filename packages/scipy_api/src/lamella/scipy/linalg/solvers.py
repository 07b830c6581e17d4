"""Linear systems and their relatives: ``solve`` (by the structure `assume_a`
names), ``solve_triangular``, ``inv``, ``det`` and ``solve_sylvester``.

``solve_sylvester`` is Bartels-Stewart: complex Schur forms of A and B, then
the triangular equation one column at a time (a scan of triangular solves).
"""

from __future__ import annotations

from typing import Any

import lamella.lax as lax
import lamella.lax.linalg as lax_linalg
import lamella.numpy as lnp
from lamella.scipy.linalg.cholesky import cho_factor, cho_solve
from lamella.scipy.linalg.common import (
    broadcast_batches,
    check_matrix,
    compiled,
    complex_dtype,
    hermitian_from,
    inexact,
    is_complex,
    mH,
    right_hand_side,
    triangular_solve,
)

__all__ = ["det", "inv", "solve", "solve_sylvester", "solve_triangular"]


def det(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """The determinant of each square matrix (differentiable, also where singular).

    >>> import lamella.numpy as lnp
    >>> det(lnp.array([[1.0, 2.0], [3.0, 4.0]])).round(3)
    Array(-2., dtype=float32)
    """
    del overwrite_a, check_finite
    a, = inexact(a)
    check_matrix("det", a)
    return lnp.linalg.det(a)


def inv(a: Any, overwrite_a: bool = False, check_finite: bool = True) -> Any:
    """The inverse of each square matrix (infinities or NaNs where it is singular).

    >>> import lamella.numpy as lnp
    >>> inv(lnp.array([[2.0, 0.0], [0.0, 4.0]]))
    Array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float32)
    """
    del overwrite_a, check_finite
    a, = inexact(a)
    check_matrix("inv", a)
    return lnp.linalg.inv(a)


# JAX's four names, and SciPy's longer spellings with the structures it adds.
_ASSUME_A = {"gen": "gen", "general": "gen", "sym": "sym", "symmetric": "sym", "her": "her",
             "hermitian": "her", "pos": "pos", "positive definite": "pos",
             "diagonal": "diagonal", "tridiagonal": "tridiagonal", "banded": "gen",
             "upper triangular": "upper", "lower triangular": "lower"}


def solve(a: Any, b: Any, lower: bool = False, overwrite_a: bool = False,
          overwrite_b: bool = False, debug: bool = False, check_finite: bool = True,
          assume_a: str = "gen") -> Any:
    """Solves ``a x = b`` for square `a` and `b` of shape ``(n,)`` or ``(..., n, k)``.

    `assume_a`: ``'gen'`` (LU), ``'sym'`` / ``'her'`` (only the triangle named by
    `lower` is read), ``'pos'`` (Cholesky; its derivative reuses the factors),
    and SciPy's ``'diagonal'``, ``'upper triangular'``, ``'lower triangular'``,
    ``'tridiagonal'`` (each reads only its entries; tridiagonal systems take O(n)
    time, LAPACK's gtsv), ``'banded'`` (LU) and long spellings of the others.

    >>> import lamella.numpy as lnp
    >>> solve(lnp.array([[3.0, 1.0], [1.0, 2.0]]), lnp.array([9.0, 8.0]), assume_a="pos").round(3)
    Array([2.       , 3.0000002], dtype=float32)
    """
    del overwrite_a, overwrite_b, debug, check_finite
    if assume_a not in _ASSUME_A:
        raise ValueError(f"solve: assume_a must be one of {sorted(set(_ASSUME_A))}; "
                         f"got {assume_a!r}")
    kind = _ASSUME_A[assume_a]
    a, b = inexact(a, b)
    check_matrix("solve", a)
    n = a.shape[-1]
    b_matrix, vector = right_hand_side("solve", n, b)
    if kind == "gen":
        return lnp.linalg.solve(a, b)
    if kind in ("sym", "her"):
        return lnp.linalg.solve(hermitian_from(a, lower, conjugate=kind == "her"), b)
    if kind == "diagonal":
        x = b_matrix / lnp.diagonal(a, axis1=-2, axis2=-1)[..., :, None]
    elif kind in ("upper", "lower"):
        x = triangular_solve(a, b_matrix, lower=kind == "lower")
    elif kind == "tridiagonal":
        x = compiled(_solve_tridiagonal)(a, b_matrix)
    else:
        x = compiled(_solve_positive_definite, lower=bool(lower))(a, b_matrix)
    return x[..., 0] if vector else x


def _solve_tridiagonal(a: Any, b: Any) -> Any:
    # As SciPy (gtsv), only the three diagonals are read: O(n) work, not LU's O(n^3).
    a, b = broadcast_batches("solve", a, b)
    if a.shape[-1] == 0:
        return b
    no_pad = [(0, 0)] * (a.ndim - 2)
    below = lnp.pad(lnp.diagonal(a, -1, axis1=-2, axis2=-1), [*no_pad, (1, 0)])
    above = lnp.pad(lnp.diagonal(a, 1, axis1=-2, axis2=-1), [*no_pad, (0, 1)])
    return lax_linalg.tridiagonal_solve(below, lnp.diagonal(a, axis1=-2, axis2=-1), above, b)


def _solve_positive_definite(a: Any, b: Any, lower: bool) -> Any:
    factors = cho_factor(lax.stop_gradient(a), lower=lower)
    # One factorization serves the solve and, through custom_linear_solve, its derivatives.
    return lax.custom_linear_solve(lambda x: a @ x, b, solve=lambda _, x: cho_solve(factors, x),
                                   symmetric=True)


def solve_triangular(a: Any, b: Any, trans: int | str = 0, lower: bool = False,
                     unit_diagonal: bool = False, overwrite_b: bool = False, debug: Any = None,
                     check_finite: bool = True) -> Any:
    """Solves ``op(a) x = b`` for triangular `a`: op is identity (`trans` 0 or 'N'),
    transpose (1, 'T') or conjugate transpose (2, 'C'). Only the triangle named by
    `lower` is read; `unit_diagonal` assumes ones on the diagonal.

    >>> import lamella.numpy as lnp
    >>> solve_triangular(lnp.array([[2.0, 1.0], [0.0, 4.0]]), lnp.array([4.0, 8.0]))
    Array([1., 2.], dtype=float32)
    """
    del overwrite_b, debug, check_finite
    ops = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False),
           2: (True, True), "C": (True, True)}
    if isinstance(trans, bool) or trans not in ops:
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C'; "
                         f"got {trans!r}")
    transpose_a, conjugate_a = ops[trans]
    a, b = inexact(a, b)
    check_matrix("solve_triangular", a)
    b, vector = right_hand_side("solve_triangular", a.shape[-1], b, a.ndim)
    x = triangular_solve(a, b, lower=lower, transpose_a=transpose_a, conjugate_a=conjugate_a,
                         unit_diagonal=unit_diagonal)
    return x[..., 0] if vector else x


def triangular_sylvester(r: Any, s: Any, f: Any) -> Any:
    """Y with ``r Y + Y s = f`` for upper triangular r (m-by-m) and s (n-by-n):
    column j solves ``(r + s[j, j] I) y_j = f_j - Y[:, :j] s[:j, j]``."""
    m, n = f.shape
    eye = lnp.eye(m, dtype=r.dtype)

    def column(y, j):
        earlier = lnp.where(lnp.arange(n) < j, s[:, j], 0)
        rhs = f[:, j] - y @ earlier
        y_j = lax_linalg.triangular_solve(r + s[j, j] * eye, rhs[:, None], left_side=True,
                                          lower=False)[:, 0]
        # dynamic_update_slice, not a scatter, so that the scan transposes (sqrtm's VJP).
        return lax.dynamic_update_slice(y, y_j[:, None], (0, j)), None

    y, _ = lax.scan(column, lnp.zeros_like(f), lnp.arange(n))
    return y


def _sylvester_2d(a: Any, b: Any, c: Any, method: str, tol: float) -> Any:
    dtype = complex_dtype(c.dtype)
    if method == "schur":
        r, u = lax_linalg.schur(a.astype(dtype))
        s, v = lax_linalg.schur(b.astype(dtype))
        x = u @ triangular_sylvester(r, s, mH(u) @ c.astype(dtype) @ v) @ mH(v)
        ea, eb = lnp.diagonal(r), lnp.diagonal(s)
    else:
        ea, ua = lnp.linalg.eig(a)
        eb, ub = lnp.linalg.eig(b)
        y = lnp.linalg.solve(ua, c.astype(dtype) @ ub) / (ea[:, None] + eb[None, :])
        x = ua @ y @ lnp.linalg.inv(ub)
    if not is_complex(c):
        x = lnp.real(x)
    near_singular = lnp.any(lnp.abs(ea[:, None] + eb[None, :]) < tol)
    return lnp.where(near_singular, lnp.nan, x)


def solve_sylvester(A: Any, B: Any, C: Any, *, method: str = "schur",
                    tol: float = 1e-8) -> Any:
    """X with ``A X + X B = C``, for A (..., m, m), B (..., n, n), C (..., m, n).

    `method` ``'schur'`` (Bartels-Stewart, robust) or ``'eigen'`` (eigenvectors,
    faster, for diagonalizable A and B). The result is NaN where some
    ``|eig(A)_i + eig(B)_j| < tol``: the equation is (nearly) singular.

    >>> import lamella.numpy as lnp
    >>> solve_sylvester(lnp.array([[1.0, 0.0], [0.0, 2.0]]), lnp.array([[3.0]]),
    ...                 lnp.array([[4.0], [10.0]]))
    Array([[1.],
           [2.]], dtype=float32)
    """
    if method not in ("schur", "eigen"):
        raise ValueError(f"solve_sylvester: method must be 'schur' or 'eigen'; got {method!r}")
    A, B, C = inexact(A, B, C)
    check_matrix("solve_sylvester", A, "A")
    check_matrix("solve_sylvester", B, "B")
    check_matrix("solve_sylvester", C, "C", square=False)
    m, n = C.shape[-2:]
    if A.shape[-1] != m or B.shape[-1] != n:
        raise ValueError(f"solve_sylvester: A must be ({m}, {m}) and B ({n}, {n}) for C of "
                         f"shape {C.shape}; got A.shape={A.shape} and B.shape={B.shape}")
    return compiled(_sylvester_2d, (2, 2, 2), method=method, tol=tol)(A, B, C)
