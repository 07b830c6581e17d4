"""Index helpers: r_, c_, s_, index_exp, ix_, ravel_multi_index, unravel_index,
mask_indices, fill_diagonal and place, and vander.

>>> r_[1:3, 7]
Array([1, 2, 7], dtype=int32)
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from lamella import lax
from lamella.numpy import ufuncs
from lamella.numpy.creation import arange, array, linspace
from lamella.numpy.dtypes import canonicalize_user_dtype
from lamella.numpy.manipulation import concatenate, transpose
from lamella.numpy.util import (
    asarray_internal,
    check_arraylike,
    concrete_int,
    concrete_value,
    default_float_dtype,
    default_int_dtype,
    dtype_of,
    flatten_1d,
)
from lamella.numpy.util import shape as _shape

__all__ = [
    "c_", "fill_diagonal", "index_exp", "ix_", "mask_indices", "place", "r_",
    "ravel_multi_index", "s_", "unravel_index", "vander",
]


def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:
    """The Vandermonde matrix of a 1-D x: columns are powers x**(N-1), ..., x**0
    (ascending with increasing=True).

    >>> vander(np.int32([1, 2, 3]), 3)
    Array([[1, 1, 1],
           [4, 2, 1],
           [9, 3, 1]], dtype=int32)
    """
    check_arraylike("vander", x)
    (x,) = ufuncs._promote_and_broadcast("vander", x, kind="numeric")
    if len(_shape(x)) != 1:
        raise ValueError(f"vander: x must be one-dimensional, got shape {_shape(x)}")
    (n,) = _shape(x)
    N = n if N is None else concrete_int(N, "the N argument of vander")
    if N < 0:
        raise ValueError(f"vander: N must be non-negative, got {N}")
    if N == 0:
        return lax.full((n, 0), 0, dtype_of(x))
    # Running products give exact integer powers and gradients that stay finite at 0.
    ones = lax.full((n, 1), 1, dtype_of(x))
    reps = lax.broadcast_in_dim(x, (n, N - 1), (0,))
    powers = lax.cumprod(lax.concatenate([ones, reps], 1), axis=1)
    return powers if increasing else lax.rev(powers, (1,))


def _immutable(name: str, inplace: bool) -> None:
    if inplace:
        raise ValueError(f"lamella arrays are immutable: {name} cannot modify its argument "
                         f"in place; pass inplace=False and use the returned array.")


def _cyclic(vals: Any, n: int, dtype: np.dtype, name: str) -> Any:
    # NumPy repeats (or truncates) the supplied values over the n target positions.
    vals = flatten_1d(lax.convert_element_type(asarray_internal(vals), dtype))
    size = _shape(vals)[0]
    if size == 0:
        if n:
            raise ValueError(f"{name}: cannot insert from an empty array of values")
        return vals
    return vals[np.arange(n) % size]


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    """A copy of `a` with its main diagonal set to `val` (repeated as needed). JAX arrays
    are immutable, so inplace=False is required.

    >>> fill_diagonal(np.zeros((2, 3), np.int32), 5, inplace=False)
    Array([[5, 0, 0],
           [0, 5, 0]], dtype=int32)
    """
    _immutable("fill_diagonal", inplace)
    check_arraylike("fill_diagonal", a, val)
    a = asarray_internal(a)
    shape = _shape(a)
    if len(shape) < 2:
        raise ValueError(f"fill_diagonal: array must be at least 2-d, got shape {shape}")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError(f"fill_diagonal: all dimensions of input must be of equal length, "
                         f"got shape {shape}")
    total = int(np.prod(shape, dtype=np.int64))
    if len(shape) == 2:
        step = shape[1] + 1
        end = total if wrap else min(total, shape[1] * shape[1])
    else:
        step = 1 + int(np.sum(np.cumprod(shape[:-1])))
        end = total
    idx = np.arange(0, end, step)
    flat = flatten_1d(a).at[idx].set(_cyclic(val, len(idx), dtype_of(a), "fill_diagonal"))
    return lax.reshape(flat, shape)


def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True) -> Any:
    """A copy of `arr` with the positions where (concrete) `mask` is true filled from
    `vals`, repeated as needed. inplace=False is required.

    >>> place(np.int32([1, 2, 3, 4]), np.array([True, False, True, True]), np.int32([9, 8]),
    ...       inplace=False)
    Array([9, 2, 8, 9], dtype=int32)
    """
    _immutable("place", inplace)
    check_arraylike("place", arr, mask, vals)
    arr = asarray_internal(arr)
    mask_np = concrete_value(mask, "the mask argument of place")
    if mask_np.shape != _shape(arr):
        raise ValueError(f"place: mask shape {mask_np.shape} does not match array shape "
                         f"{_shape(arr)}")
    idx = np.flatnonzero(mask_np)
    flat = flatten_1d(arr).at[idx].set(_cyclic(vals, len(idx), dtype_of(arr), "place"))
    return lax.reshape(flat, _shape(arr))


def _dims(dims: Any, name: str) -> tuple[int, ...]:
    dims = (dims,) if isinstance(dims, (int, np.integer)) else dims
    out = tuple(operator.index(d) for d in dims)
    if any(d < 0 for d in out):
        raise ValueError(f"{name}: dimensions must be non-negative, got {out}")
    return out


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise",
                      order: str = "C", *, dtype: Any = None) -> Any:
    """Flat indices of the index tuples in `multi_index` into an array of shape `dims`
    (of `dtype`, by default the indices' promoted integer type). mode='raise' needs
    concrete indices; 'wrap' and 'clip' work under jit.

    >>> ravel_multi_index((np.int32([0, 1]), np.int32([2, 0])), (2, 3))
    Array([2, 3], dtype=int32)
    """
    dims = _dims(dims, "ravel_multi_index")
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: got {len(multi_index)} index arrays for "
                         f"{len(dims)} dimensions {dims}")
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: order must be 'C' or 'F', got {order!r}")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"ravel_multi_index: mode must be 'raise', 'wrap' or 'clip', "
                         f"got {mode!r}")
    check_arraylike("ravel_multi_index", *multi_index)
    idx = ufuncs._promote_and_broadcast("ravel_multi_index", *multi_index)
    if dtype is not None:
        dtype = canonicalize_user_dtype(dtype, "ravel_multi_index")
        idx = [lax.convert_element_type(i, dtype) for i in idx]
    for i in idx:
        if dtype_of(i).kind not in "iu":
            raise TypeError(f"ravel_multi_index: indices must be integers, got dtype {dtype_of(i)}")
    if mode == "raise":
        for i, d in zip(idx, dims):
            v = concrete_value(i, "the indices of ravel_multi_index with mode='raise'")
            if np.any((v < 0) | (v >= d)):
                raise ValueError(f"ravel_multi_index: invalid entry in coordinates array "
                                 f"(index out of bounds for dimension of size {d})")
    elif mode == "wrap":
        idx = [ufuncs.remainder(i, d) for i, d in zip(idx, dims)]
    else:
        idx = [ufuncs.clip(i, 0, d - 1) for i, d in zip(idx, dims)]
    scan = dims[::-1] if order == "C" else dims
    strides = np.concatenate([[1], np.cumprod(scan[:-1], dtype=np.int64)]).astype(int)
    strides = strides[::-1] if order == "C" else strides
    out = None
    for i, s in zip(idx, strides):
        term = lax.mul(i, lax.full_like(i, int(s)))
        out = term if out is None else lax.add(out, term)
    return out


def unravel_index(indices: Any, shape: Sequence[int]) -> tuple[Any, ...]:
    """The index tuples of flat `indices` into an array of `shape`. As in JAX, negative
    indices count from the end and out-of-range ones are clipped rather than raising.

    >>> unravel_index(np.int32([5, 1]), (2, 3))
    (Array([1, 0], dtype=int32), Array([2, 1], dtype=int32))
    """
    check_arraylike("unravel_index", indices)
    shape = _dims(shape, "unravel_index")
    (flat,) = ufuncs._promote_and_broadcast("unravel_index", indices)
    if dtype_of(flat).kind not in "iu":
        raise TypeError(f"unravel_index: indices must be integers, got dtype {dtype_of(flat)}")
    total = int(np.prod(shape, dtype=np.int64))
    if total == 0:
        raise ValueError("unravel_index: cannot unravel into an empty shape")
    if dtype_of(flat).kind == "i":
        flat = ufuncs.clip(flat, -total, total - 1)
        flat = lax.select(lax.lt(flat, lax.full_like(flat, 0)),
                          lax.add(flat, lax.full_like(flat, total)), flat)
    else:
        flat = ufuncs.clip(flat, 0, total - 1)
    out = []
    for d in reversed(shape):
        out.append(lax.rem(flat, lax.full_like(flat, d)))
        flat = lax.div(flat, lax.full_like(flat, d))
    return tuple(reversed(out))


def mask_indices(n: int, mask_func: Callable[[Any, int], Any], k: int = 0, *,
                 size: int | None = None) -> tuple[Any, Any]:
    """Indices where mask_func(ones((n, n)), k) is nonzero, e.g. mask_func=triu. With
    `size`, exactly that many (truncated or padded with zeros), so it works under jit.

    >>> from lamella.numpy.creation import triu
    >>> mask_indices(2, triu)
    (Array([0, 0, 1], dtype=int32), Array([0, 1, 1], dtype=int32))
    >>> mask_indices(2, triu, size=4)[1]
    Array([0, 1, 1, 0], dtype=int32)
    """
    n = concrete_int(n, "the n argument of mask_indices")
    mask = mask_func(lax.full((n, n), 1, default_int_dtype()), k)
    if size is not None:
        from lamella.numpy.sorting import nonzero  # sorting builds on this module's helpers
        return nonzero(mask, size=size)
    mask = concrete_value(mask, "the result of mask_func in mask_indices (pass size= to "
                                "use it under jit)")
    rows, cols = np.nonzero(mask)
    return asarray_internal(rows, default_int_dtype()), asarray_internal(cols, default_int_dtype())


def ix_(*args: Any) -> tuple[Any, ...]:
    """Open-mesh index arrays from 1-D integer sequences, for cross-product indexing.

    >>> [a.shape for a in ix_(np.int32([0, 1]), np.int32([2, 0, 1]))]
    [(2, 1), (1, 3)]
    """
    check_arraylike("ix_", *args)
    n = len(args)
    out = []
    for i, a in enumerate(args):
        a = asarray_internal(a)
        if len(_shape(a)) != 1:
            raise ValueError(f"ix_: arguments must be 1-dimensional, got shape {_shape(a)}")
        if dtype_of(a) == np.bool_:
            raise NotImplementedError("ix_: boolean arguments are not supported (as in JAX); "
                                      "convert them with nonzero first")
        shape = [1] * n
        shape[i] = _shape(a)[0]
        out.append(lax.reshape(a, tuple(shape)))
    return tuple(out)


index_exp = np.index_exp
s_ = np.s_


class _AxisConcat:
    """NumPy's r_/c_: slices become ranges (a complex step means a point count, as in
    linspace), scalars and arrays are raised to `ndmin` dimensions and concatenated
    along `axis`. A leading string 'axis[,ndmin[,trans1d]]' overrides the defaults."""

    def __init__(self, name: str, axis: int, ndmin: int, trans1d: int):
        self.name, self.axis, self.ndmin, self.trans1d = name, axis, ndmin, trans1d

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive in ("r", "c"):
                raise NotImplementedError(f"{self.name}: the matrix directive {directive!r} "
                                          "is not supported")
            try:
                params = [int(p) for p in directive.split(",")]
            except ValueError:
                raise ValueError(f"{self.name}: could not understand directive "
                                 f"{directive!r}") from None
            if len(params) > 3:
                raise ValueError(f"{self.name}: directive {directive!r} has more than 3 fields")
            axis, ndmin, trans1d = (params + [axis, ndmin, trans1d][len(params):])
        parts = []
        for item in items:
            if isinstance(item, slice):
                start = 0 if item.start is None else item.start
                step = 1 if item.step is None else item.step
                if isinstance(step, complex):
                    part = linspace(start, item.stop, int(abs(step)))
                else:
                    part = arange(start, item.stop, step)
                item_ndim = 0
            elif isinstance(item, str):
                raise ValueError(f"{self.name}: a string directive must come first")
            else:
                part = asarray_internal(item)
                item_ndim = len(_shape(part))
            part = array(part, ndmin=ndmin)
            if trans1d != -1 and ndmin - item_ndim > 0:
                # Move the original dimensions to position trans1d, as NumPy does.
                shifts = ndmin - abs(ndmin + trans1d + 1) % ndmin
                order = list(range(ndmin))
                part = transpose(part, tuple(order[shifts:] + order[:shifts]))
            parts.append(part)
        if not parts:
            return lax.full((0,), 0, default_float_dtype())
        return concatenate(parts, axis=axis)

    def __len__(self) -> int:
        return 0


r_ = _AxisConcat("r_", 0, 1, -1)
c_ = _AxisConcat("c_", -1, 2, 0)
