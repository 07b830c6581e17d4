"""Reductions to condensed form by Householder similarity transforms: ``hessenberg``
(LAPACK gehrd) and, for Hermitian matrices, ``tridiagonal`` (sytrd/hetrd).

Both return the reflectors packed as LAPACK leaves them, with their scalar
factors ``taus``; `householder_product` turns them into the orthogonal Q. As
in JAX, neither has a derivative.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lamella.core import ShapedArray
from lamella.core.trace import aval_of
from lamella.lax.linalg.kernels import check_matrix, front_batcher, lapack, nan_fill
from lamella.lax.linalg.matrices import int32, is_complex, real_dtype
from lamella.lax.logical import eq
from lamella.lax.lowering import lower_fun, register_lowering
from lamella.lax.standard import standard_primitive


def _check_nonempty(name: str, aval: ShapedArray) -> None:
    check_matrix(name, aval, square=True)
    if aval.shape[-1] == 0:
        raise ValueError(f"{name} needs matrices of at least 1-by-1, got shape {aval.shape}")


# --- hessenberg ---------------------------------------------------------------------

hessenberg_p = standard_primitive("hessenberg", multiple_results=True)


def hessenberg(a: Any) -> tuple[Any, Any]:
    """Reduces square matrices to upper Hessenberg form: ``(a', taus)``.

    H = Q^H a Q is upper Hessenberg. It lies in a' on and above the first
    subdiagonal; below it, column i holds reflector i+1 (v with zeros up to
    row i, one at row i+1), with its factor in ``taus[i]`` (n - 1 of them), so
    that Q = blockdiag(1, householder_product(a'[1:, :-1], taus)).

    >>> import numpy as np
    >>> a, taus = hessenberg(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    >>> a, taus
    (Array([[1., 2.],
           [3., 4.]], dtype=float32), Array([0.], dtype=float32))
    """
    a_out, taus = hessenberg_p.bind(a)
    return a_out, taus


@hessenberg_p.def_abstract_eval
def _hessenberg_abstract_eval(a):
    _check_nonempty("hessenberg", a)
    return [a, a.update(shape=(*a.shape[:-2], a.shape[-1] - 1))]


def _hessenberg_lower(a):
    aval = aval_of(a)
    batch, n = aval.shape[:-2], aval.shape[-1]
    # low = 1 and high = n (LAPACK's 1-based ilo/ihi): reduce the whole matrix.
    reduced, taus, info = lapack("gehrd", [a], [(aval.shape, aval.dtype),
                                                ((*batch, n - 1), aval.dtype),
                                                (batch, np.int32)], low=1, high=n)
    ok = eq(info, int32(0))
    return [nan_fill(ok, reduced), nan_fill(ok, taus)]


register_lowering(hessenberg_p, lower_fun(_hessenberg_lower))
front_batcher(hessenberg_p)


# --- tridiagonal --------------------------------------------------------------------

tridiagonal_p = standard_primitive("tridiagonal", multiple_results=True)


def tridiagonal(a: Any, *, lower: bool = True) -> tuple[Any, Any, Any, Any]:
    """Reduces Hermitian matrices to real symmetric tridiagonal form: ``(a', d, e, taus)``.

    T = Q^H a Q has diagonal `d` and off-diagonal `e` (both real). Only the
    `lower` (or upper) triangle of `a` is read; a' holds T's diagonal and first
    sub- (super-) diagonal there, and the reflectors beyond it, with their
    factors in `taus`.

    >>> import numpy as np
    >>> _, d, e, _ = tridiagonal(np.array([[2.0, 1.0], [1.0, 3.0]], np.float32))
    >>> d, e
    (Array([2., 3.], dtype=float32), Array([1.], dtype=float32))
    """
    a_out, d, e, taus = tridiagonal_p.bind(a, lower=bool(lower))
    return a_out, d, e, taus


@tridiagonal_p.def_abstract_eval
def _tridiagonal_abstract_eval(a, *, lower):
    _check_nonempty("tridiagonal", a)
    batch, n = a.shape[:-2], a.shape[-1]
    real = real_dtype(a.dtype)
    return [a, ShapedArray((*batch, n), real), ShapedArray((*batch, n - 1), real),
            a.update(shape=(*batch, n - 1))]


def _tridiagonal_lower(a, *, lower):
    aval = aval_of(a)
    batch, n = aval.shape[:-2], aval.shape[-1]
    real = real_dtype(aval.dtype)
    *outs, info = lapack("hetrd" if is_complex(a) else "sytrd", [a],
                         [(aval.shape, aval.dtype), ((*batch, n), real), ((*batch, n - 1), real),
                          ((*batch, n - 1), aval.dtype), (batch, np.int32)],
                         uplo="L" if lower else "U")
    ok = eq(info, int32(0))
    return [nan_fill(ok, x) for x in outs]


register_lowering(tridiagonal_p, lower_fun(_tridiagonal_lower))
front_batcher(tridiagonal_p)
