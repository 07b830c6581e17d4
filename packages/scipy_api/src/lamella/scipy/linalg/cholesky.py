"""Cholesky factorization and solves: ``cholesky``, ``cho_factor``, ``cho_solve``.

As in SciPy, only the triangle named by `lower` is read. Unlike SciPy (and as
in JAX), the factor from ``cho_factor`` has zeros in its other triangle.
"""

from __future__ import annotations

from typing import Any

import lamella.lax.linalg as lax_linalg
from lamella.scipy.linalg.common import (
    check_matrix,
    compiled,
    inexact,
    mH,
    right_hand_side,
    triangular_solve,
)

__all__ = ["cho_factor", "cho_solve", "cholesky"]


def cholesky(a: Any, lower: bool = False, overwrite_a: bool = False,
             check_finite: bool = True) -> Any:
    """The Cholesky factor of Hermitian positive-definite matrices: upper U with
    ``a = U^H U`` (default), or lower L with ``a = L L^H``. NaNs where `a` is not
    positive definite. `overwrite_a` and `check_finite` are accepted and unused.

    >>> import lamella.numpy as lnp
    >>> cholesky(lnp.array([[4.0, 2.0], [2.0, 5.0]]))
    Array([[2., 1.],
           [0., 2.]], dtype=float32)
    """
    del overwrite_a, check_finite
    a, = inexact(a)
    check_matrix("cholesky", a)
    return compiled(_cholesky, lower=bool(lower))(a)


def _cholesky(a: Any, lower: bool) -> Any:
    if lower:
        return lax_linalg.cholesky(a, symmetrize_input=False)
    # LAPACK reads the lower triangle: the upper one of `a` is that of a^H.
    return mH(lax_linalg.cholesky(mH(a), symmetrize_input=False))


def cho_factor(a: Any, lower: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> tuple[Any, bool]:
    """``(c, lower)``: the Cholesky factor of `a`, for :func:`cho_solve`.

    >>> import lamella.numpy as lnp
    >>> c, lower = cho_factor(lnp.array([[4.0, 2.0], [2.0, 5.0]]), lower=True)
    >>> c, lower
    (Array([[2., 0.],
           [1., 2.]], dtype=float32), True)
    """
    del overwrite_a, check_finite
    return cholesky(a, lower=lower), lower


def cho_solve(c_and_lower: tuple[Any, bool], b: Any, overwrite_b: bool = False,
              check_finite: bool = True) -> Any:
    """Solves ``a x = b`` given ``(c, lower) = cho_factor(a)``.

    `b` is a vector of shape ``(n,)`` or a batch of matrices ``(..., n, k)``;
    batch axes of `c` and `b` broadcast.

    >>> import lamella.numpy as lnp
    >>> cho_solve((lnp.array([[2.0, 1.0], [0.0, 2.0]]), False), lnp.array([6.0, 7.0]))
    Array([1., 1.], dtype=float32)
    """
    del overwrite_b, check_finite
    try:
        c, lower = c_and_lower
    except (TypeError, ValueError):
        raise TypeError("cho_solve: the first argument must be the pair (c, lower) that "
                        "cho_factor returns") from None
    c, b = inexact(c, b)
    check_matrix("cho_solve", c, "c")
    b, vector = right_hand_side("cho_solve", c.shape[-1], b, c.ndim)
    x = compiled(_cho_solve, lower=bool(lower))(c, b)
    return x[..., 0] if vector else x


def _cho_solve(c: Any, b: Any, lower: bool) -> Any:
    # a = L L^H (lower) or U^H U: two triangular solves, the second with op = ^H.
    y = triangular_solve(c, b, lower=lower, transpose_a=not lower, conjugate_a=not lower)
    return triangular_solve(c, y, lower=lower, transpose_a=lower, conjugate_a=lower)
