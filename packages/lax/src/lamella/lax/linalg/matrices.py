"""Small matrix helpers for lamella.lax.linalg, made of lax operations.

Every helper acts on the last two axes and batches over the leading ones, so
the rules built from them trace, batch and differentiate like any lax code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core.trace import aval_of
from lamella.lax.arithmetic import add, conj, div, mul
from lamella.lax.contraction import Precision, dot_general
from lamella.lax.conversion import convert_element_type
from lamella.lax.fill import full, full_like
from lamella.lax.logical import eq, ge, le, select
from lamella.lax.reductions import reduce_sum
from lamella.lax.shapes import broadcast_in_dim, broadcasted_iota, slice, transpose


def is_complex(x: Any) -> bool:
    return aval_of(x).dtype.kind == "c"


def real_dtype(dtype: np.dtype) -> np.dtype:
    """The real counterpart of a float or complex dtype."""
    return np.dtype(np.float32) if dtype == np.complex64 else \
        np.dtype(np.float64) if dtype == np.complex128 else np.dtype(dtype)


def complex_dtype(dtype: np.dtype) -> np.dtype:
    """The complex dtype of the same precision."""
    return np.dtype(np.complex64) if dtype in (np.float32, np.complex64) \
        else np.dtype(np.complex128)


def T(x: Any) -> Any:
    """Each matrix transposed."""
    ndim = aval_of(x).ndim
    return transpose(x, (*range(ndim - 2), ndim - 1, ndim - 2))


def H(x: Any) -> Any:
    """Each matrix conjugate-transposed."""
    return conj(T(x)) if is_complex(x) else T(x)


def matmul(a: Any, b: Any) -> Any:
    """Matrix product over the last two axes, batched over equal leading axes."""
    ndim = aval_of(a).ndim
    batch = tuple(range(ndim - 2))
    return dot_general(a, b, (((ndim - 1,), (ndim - 2,)), (batch, batch)),
                       precision=Precision.HIGHEST)


def int32(value: int) -> Any:
    # Explicitly typed: under x64 a Python int would be an int64 operand.
    return full((), value, np.int32)


def scalar(value: Any, dtype: Any) -> Any:
    return full((), value, dtype)


def _tri_mask(shape: Sequence[int], k: int, lower: bool) -> Any:
    """True on and below diagonal k (``lower``), or on and above it."""
    ndim = len(shape)
    rows = broadcasted_iota(np.int32, shape, ndim - 2)
    cols = broadcasted_iota(np.int32, shape, ndim - 1)
    return le(cols, add(rows, int32(k))) if lower else ge(cols, add(rows, int32(k)))


def tril(x: Any, k: int = 0) -> Any:
    return select(_tri_mask(aval_of(x).shape, k, True), x, full_like(x, 0))


def triu(x: Any, k: int = 0) -> Any:
    return select(_tri_mask(aval_of(x).shape, k, False), x, full_like(x, 0))


def eye(n: int, dtype: Any, m: int | None = None) -> Any:
    """The n-by-m (default n-by-n) identity."""
    m = n if m is None else m
    return convert_element_type(eq(broadcasted_iota(np.int32, (n, m), 0),
                                   broadcasted_iota(np.int32, (n, m), 1)), dtype)


def broadcast_to(x: Any, shape: Sequence[int]) -> Any:
    """A matrix `x` broadcast over the leading axes of `shape`."""
    return broadcast_in_dim(x, (*shape[:-2], *aval_of(x).shape), (len(shape) - 2, len(shape) - 1))


def batched_eye(shape: Sequence[int], dtype: Any) -> Any:
    """Identities of the (possibly rectangular) matrix shape of `shape`, batched."""
    return broadcast_to(eye(shape[-2], dtype, shape[-1]), shape)


def diagonal(x: Any) -> Any:
    """The main diagonal of each (square) matrix, as a vector."""
    aval = aval_of(x)
    return reduce_sum(mul(x, batched_eye(aval.shape, aval.dtype)), (aval.ndim - 1,))


def columns(x: Any, start: int, stop: int) -> Any:
    """Entries start:stop along the last axis: columns of matrices, or of vectors."""
    shape = aval_of(x).shape
    return slice(x, (0,) * (len(shape) - 1) + (start,), (*shape[:-1], stop))


def rows(x: Any, start: int, stop: int) -> Any:
    """Rows start:stop of each matrix."""
    shape = aval_of(x).shape
    return slice(x, (0,) * (len(shape) - 2) + (start, 0), (*shape[:-2], stop, shape[-1]))


def scale_columns(x: Any, v: Any) -> Any:
    """x[..., :, j] * v[..., j], with `v` converted to x's dtype."""
    aval = aval_of(x)
    v = convert_element_type(v, aval.dtype)
    return mul(x, broadcast_in_dim(v, aval.shape, (*range(aval.ndim - 2), aval.ndim - 1)))


def scale_rows(x: Any, v: Any) -> Any:
    """x[..., i, :] * v[..., i], with `v` converted to x's dtype."""
    aval = aval_of(x)
    v = convert_element_type(v, aval.dtype)
    return mul(x, broadcast_in_dim(v, aval.shape, tuple(range(aval.ndim - 1))))


def permutation_matrix(permutation: Any, dtype: Any) -> Any:
    """P with P[..., i, permutation[..., i]] = 1, so that P a = a[permutation]."""
    aval = aval_of(permutation)
    shape = (*aval.shape, aval.shape[-1])
    return convert_element_type(
        eq(broadcast_in_dim(permutation, shape, tuple(range(aval.ndim))),
           broadcasted_iota(np.int32, shape, aval.ndim)), dtype)


def symmetrize(x: Any) -> Any:
    """``(x + x^H) / 2``: the Hermitian part of each matrix.

    >>> symmetrize(np.array([[1.0, 2.0], [0.0, 1.0]], np.float32))
    Array([[1., 1.],
           [1., 1.]], dtype=float32)
    """
    return div(add(x, H(x)), full((), 2, aval_of(x).dtype))
