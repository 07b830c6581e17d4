"""Sorting, searching and selecting by a mask (jax.numpy style): `sort`, `argsort`,
`lexsort`, `partition`, `searchsorted`, `digitize`, `nonzero`, `where`, `compress`, ...

Everything orders values like NumPy (and `lax.sort`): NaNs last, -0.0 equal to
0.0, complex numbers by real then imaginary part. Functions whose output shape
depends on the data (`nonzero`, `argwhere`, `flatnonzero`, one-argument
`where`, `extract`, `compress`) need concrete inputs unless a static `size=` is
given; with `size=` they work on traced data, padding the result with
`fill_value`.

>>> import numpy as np
>>> sort(np.float32([3, np.nan, 1]))
Array([ 1.,  3., nan], dtype=float32)
>>> nonzero(np.int32([0, 5, 0, 7]), size=3, fill_value=-1)
(Array([ 1,  3, -1], dtype=int32),)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from lamella import lax
from lamella.core import dtypes as core_dtypes
from lamella.core.trace import aval_of
from lamella.numpy.dtypes import canonicalize_user_dtype, promote_dtypes
from lamella.numpy.ufuncs import where as _where3
from lamella.numpy.util import (
    asarray_internal,
    canonicalize_axis,
    check_arraylike,
    concrete_int,
    concrete_value,
    eager_jit,
    flatten_1d,
)
from lamella.numpy.util import checked_array as _array
from lamella.numpy.util import shape as _shape

__all__ = [
    "argpartition", "argsort", "argwhere", "compress", "digitize", "extract", "flatnonzero",
    "lexsort", "nonzero", "partition", "searchsorted", "sort", "sort_complex", "where",
]

_SEARCH_METHODS = ("scan", "scan_unrolled", "sort", "compare_all")


# --- shared helpers (setops.py uses them too) ----------------------------------------
def _int_dtype() -> np.dtype:
    """JAX's default integer for indices and counts: int32, int64 under x64."""
    return core_dtypes.canonicalize_dtype(np.dtype(np.int64))



def _moveaxis(x: Any, source: int, destination: int) -> Any:
    perm = [i for i in range(len(_shape(x))) if i != source]
    perm.insert(destination, source)
    return x if perm == sorted(perm) else lax.transpose(x, tuple(perm))


def _axis_or_flat(x: Any, axis: Any, name: str) -> tuple[Any, int]:
    if axis is None:
        return flatten_1d(x), 0
    return x, canonicalize_axis(axis, len(_shape(x)), f"{name}: axis")


def _full(shape: Sequence[int], value: Any, dtype: Any) -> Any:
    return lax.full(tuple(shape), value, np.dtype(dtype))


def _take_rows(x: Any, indices: Any, mode: str = "clip", fill_value: Any = None) -> Any:
    """x[indices] along axis 0 (x must have rows): shape indices.shape + x.shape[1:]."""
    shape, ishape = _shape(x), _shape(indices)
    dnums = lax.GatherDimensionNumbers(
        offset_dims=tuple(range(len(ishape), len(ishape) + len(shape) - 1)),
        collapsed_slice_dims=(0,), start_index_map=(0,))
    return lax.gather(x, lax.expand_dims(indices, (len(ishape),)), dnums, (1, *shape[1:]),
                      mode=mode, fill_value=fill_value)


def _truth(x: Any) -> Any:
    if aval_of(x).dtype == np.bool_:
        return x
    return lax.ne(x, lax.full_like(x, 0))


def _concrete(x: Any, name: str, static_arg: str = "size") -> np.ndarray:
    return concrete_value(
        x, f"The input of {name} (its output shape depends on the data; pass a static "
        f"{static_arg}= argument to use {name} under jit, vmap or grad)")


def _static_size(size: Any, name: str) -> int:
    size = concrete_int(size, f"the size argument of {name}")
    if size < 0:
        raise ValueError(f"{name}: size must be non-negative, got {size}")
    return size


def _first_true(mask: Any, size: int) -> tuple[Any, Any]:
    """The positions of the first `size` true entries of the 1-D `mask` (padded
    with len(mask)) and the number of true entries."""
    dt = _int_dtype()
    (n,) = _shape(mask)
    count = lax.reduce_sum(lax.convert_element_type(mask, dt), (0,))
    if n == 0 or size == 0:
        return _full((size,), n, dt), count
    rank = lax.sub(lax.cumsum(lax.convert_element_type(mask, dt), 0), _full((n,), 1, dt))
    # Entries that are false, or beyond `size`, scatter out of bounds and are dropped.
    target = lax.select(mask, rank, _full((n,), size, dt))
    dnums = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                        scatter_dims_to_operand_dims=(0,))
    out = lax.scatter(_full((size,), n, dt), lax.expand_dims(target, (1,)), lax.iota(dt, n),
                      dnums, mode="drop")
    return out, count


def _valid(size: int, count: Any) -> Any:
    """[i < count for i in range(size)]."""
    dt = aval_of(count).dtype
    return lax.lt(lax.iota(dt, size), lax.broadcast_in_dim(count, (size,), ()))


# --- NumPy's sort order as elementwise comparisons -------------------------------------
def _is_float(x: Any) -> bool:
    return core_dtypes.is_float(aval_of(x).dtype)


def _order_lt(x: Any, y: Any) -> Any:
    """x < y in sort order (NaNs last, complex lexicographic)."""
    if aval_of(x).dtype.kind == "c":
        xr, yr = lax.real(x), lax.real(y)
        return lax.bitwise_or(_order_lt(xr, yr), lax.bitwise_and(
            _order_eq(xr, yr), _order_lt(lax.imag(x), lax.imag(y))))
    if _is_float(x):
        nan_only_y = lax.bitwise_and(lax.eq(x, x), lax.ne(y, y))
        return lax.bitwise_or(lax.lt(x, y), nan_only_y)
    return lax.lt(x, y)


def _order_eq(x: Any, y: Any) -> Any:
    """x == y in sort order (NaN equal to NaN)."""
    if aval_of(x).dtype.kind == "c":
        return lax.bitwise_and(_order_eq(lax.real(x), lax.real(y)),
                               _order_eq(lax.imag(x), lax.imag(y)))
    if _is_float(x):
        return lax.bitwise_or(lax.eq(x, y), lax.bitwise_and(lax.ne(x, x), lax.ne(y, y)))
    return lax.eq(x, y)


def _order_le(x: Any, y: Any) -> Any:
    return lax.bitwise_or(_order_lt(x, y), _order_eq(x, y))


# --- sorting -------------------------------------------------------------------------
def sort(a: Any, axis: int | None = -1, *, kind: Any = None, order: Any = None,
         stable: bool = True, descending: bool = False) -> Any:
    """`a` sorted along `axis` (flattened when None); NaNs last, `descending`
    reverses the order. `kind` is ignored.

    >>> sort(np.int32([[3, 1, 2], [0, 5, 4]]))
    Array([[1, 2, 3],
           [0, 4, 5]], dtype=int32)
    """
    arr = _array("sort", a)
    if order is not None:
        raise ValueError("sort: the `order` argument is not supported")
    arr, axis = _axis_or_flat(arr, axis, "sort")
    out = lax.sort(arr, dimension=axis, is_stable=bool(stable))
    return lax.rev(out, (axis,)) if descending else out


def argsort(a: Any, axis: int | None = -1, *, kind: Any = None, order: Any = None,
            stable: bool = True, descending: bool = False, dtype: Any = None) -> Any:
    """The indices (of integer `dtype`, the default int unless given) that sort `a` along
    `axis` (flattened when None). Ties keep their original order, also when `descending`.

    >>> argsort(np.float32([3, 1, 2]))
    Array([1, 2, 0], dtype=int32)
    """
    arr = _array("argsort", a)
    if order is not None:
        raise ValueError("argsort: the `order` argument is not supported")
    arr, axis = _axis_or_flat(arr, axis, "argsort")
    shape = _shape(arr)
    dt = _int_dtype() if dtype is None else canonicalize_user_dtype(dtype, "argsort")
    if dt.kind not in "iu":
        raise ValueError(f"argsort: dtype must be an integer type, got {dt.name}")
    positions = lax.broadcasted_iota(dt, shape, axis)
    if not descending:
        return lax.sort((arr, positions), dimension=axis, is_stable=bool(stable))[1]
    # Sorting the reversed array keeps later ties later; reversing back and mapping
    # positions to the original order then lists equal values first-come first.
    _, perm = lax.sort((lax.rev(arr, (axis,)), positions), dimension=axis,
                       is_stable=bool(stable))
    return lax.sub(_full(shape, shape[axis] - 1, dt), lax.rev(perm, (axis,)))


def lexsort(keys: Any, axis: int = -1) -> Any:
    """The indices that sort by several keys along `axis`; the last key is the primary one.

    >>> lexsort((np.int32([1, 0, 1]), np.int32([2, 2, 1])))
    Array([2, 1, 0], dtype=int32)
    """
    if isinstance(keys, (list, tuple)):
        arrays = [_array("lexsort", k) for k in keys]
    else:
        stacked = _array("lexsort", keys)
        if not _shape(stacked):
            raise TypeError("lexsort: keys must be a sequence of arrays or an array of rank >= 1")
        arrays = [lax.index_in_dim(stacked, i, 0, keepdims=False)
                  for i in range(_shape(stacked)[0])]
    if not arrays:
        raise TypeError("lexsort: need a sequence of keys with len > 0")
    shapes = {_shape(k) for k in arrays}
    if len(shapes) > 1:
        raise ValueError(f"lexsort: all keys need to be the same shape, got {sorted(shapes)}")
    shape = _shape(arrays[0])
    if not shape:
        return _full((), 0, _int_dtype())
    axis = canonicalize_axis(axis, len(shape), "lexsort: axis")
    positions = lax.broadcasted_iota(_int_dtype(), shape, axis)
    return lax.sort((*arrays[::-1], positions), dimension=axis, is_stable=True,
                    num_keys=len(arrays))[-1]


def _check_kth(kth: Any, n: int, name: str) -> None:
    kths = kth if isinstance(kth, (list, tuple)) else [kth]
    for k in kths:
        canonicalize_axis(concrete_int(k, f"the kth argument of {name}"), n, f"{name}: kth")


def partition(a: Any, kth: int, axis: int = -1) -> Any:
    """`a` rearranged along `axis` so that the element at `kth` is where a sort puts
    it, smaller (or equal) elements before it and larger (or equal) after it.

    This implementation returns the fully sorted array, which is such a partition.

    >>> partition(np.int32([5, 1, 4, 2]), 1)
    Array([1, 2, 4, 5], dtype=int32)
    """
    arr = _array("partition", a)
    axis = canonicalize_axis(axis, len(_shape(arr)), "partition: axis")
    _check_kth(kth, _shape(arr)[axis], "partition")
    return lax.sort(arr, dimension=axis)


def argpartition(a: Any, kth: int, axis: int = -1) -> Any:
    """The indices that partition `a` along `axis` around `kth` (see `partition`).

    >>> argpartition(np.int32([5, 1, 4, 2]), 1)
    Array([1, 3, 2, 0], dtype=int32)
    """
    arr = _array("argpartition", a)
    axis = canonicalize_axis(axis, len(_shape(arr)), "argpartition: axis")
    _check_kth(kth, _shape(arr)[axis], "argpartition")
    return argsort(arr, axis)


def sort_complex(a: Any) -> Any:
    """`a` sorted along its last axis (real part first, then imaginary), as complex.

    >>> sort_complex(np.int32([3, 1, 2]))
    Array([1.+0.j, 2.+0.j, 3.+0.j], dtype=complex64)
    """
    arr = _array("sort_complex", a)
    axis = canonicalize_axis(-1, len(_shape(arr)), "sort_complex: axis")
    out = lax.sort(arr, dimension=axis)
    dtype = aval_of(out).dtype
    target = dtype if dtype.kind == "c" else np.dtype(
        np.complex128 if dtype == np.float64 else np.complex64)
    return lax.convert_element_type(out, target)


# --- searching -------------------------------------------------------------------------
@eager_jit("side", "method")
def searchsorted(a: Any, v: Any, side: str = "left", sorter: Any = None, *,
                 method: str = "scan") -> Any:
    """Where each element of `v` would be inserted into the sorted 1-D `a` to keep it
    sorted: before equal elements (`side="left"`) or after them ("right"). NaNs
    count as the largest values. `method` ("scan", "scan_unrolled", "sort" or
    "compare_all") picks the algorithm; all give the same result.

    >>> searchsorted(np.float32([1, 2, 2, 3]), np.float32([2, 0, 5]))
    Array([1, 0, 4], dtype=int32)
    >>> searchsorted(np.float32([1, 2, 2, 3]), 2, side="right")
    Array(3, dtype=int32)
    """
    check_arraylike("searchsorted", a, v)
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if method not in _SEARCH_METHODS:
        raise ValueError(f"searchsorted: method must be one of {_SEARCH_METHODS}, "
                         f"got {method!r}")
    a_arr, v_arr = promote_dtypes(a, v)
    if len(_shape(a_arr)) != 1:
        raise ValueError(f"searchsorted: a must be 1-dimensional, got shape {_shape(a_arr)}")
    if sorter is not None:
        check_arraylike("searchsorted", sorter)
        sorter = asarray_internal(sorter)
        if _shape(sorter) != _shape(a_arr) or aval_of(sorter).dtype.kind not in "iu":
            raise ValueError(f"searchsorted: sorter must be an integer array of the shape of a "
                             f"{_shape(a_arr)}, got {aval_of(sorter).dtype}{_shape(sorter)}")
        if _shape(a_arr)[0]:
            a_arr = _take_rows(a_arr, sorter)
    n = _shape(a_arr)[0]
    if n == 0:
        return _full(_shape(v_arr), 0, np.int32)
    if aval_of(a_arr).dtype == np.bool_:
        a_arr, v_arr = (lax.convert_element_type(x, np.int32) for x in (a_arr, v_arr))
    if method == "compare_all":
        return _search_compare_all(a_arr, v_arr, side)
    if method == "sort":
        return _search_sort(a_arr, v_arr, side)
    return _search_scan(a_arr, v_arr, side, unrolled=method == "scan_unrolled")


def _search_scan(a: Any, v: Any, side: str, unrolled: bool) -> Any:
    # Binary search on [low, high); every level halves it, so bit_length(n) levels end it.
    n, shape = _shape(a)[0], _shape(v)
    goes_right = _order_lt if side == "left" else _order_le
    one = _full(shape, 1, np.int32)

    def level(_: Any, bounds: tuple[Any, Any]) -> tuple[Any, Any]:
        low, high = bounds
        # A shift halves the (non-negative) width; low + width // 2 cannot overflow.
        mid = lax.add(low, lax.shift_right_logical(lax.sub(high, low), one))
        active = lax.lt(low, high)
        right = lax.bitwise_and(active, goes_right(_take_rows(a, mid), v))
        left = lax.bitwise_and(active, lax.bitwise_not(right))
        return lax.select(right, lax.add(mid, one), low), lax.select(left, mid, high)

    bounds = (_full(shape, 0, np.int32), _full(shape, n, np.int32))
    if unrolled:
        for i in range(n.bit_length()):
            bounds = level(i, bounds)
    else:
        bounds = lax.fori_loop(0, n.bit_length(), level, bounds)
    return bounds[0]


def _search_compare_all(a: Any, v: Any, side: str) -> Any:
    n, shape = _shape(a)[0], _shape(v)
    full_shape = (*shape, n)
    before = _order_lt if side == "left" else _order_le
    hits = before(lax.broadcast_in_dim(a, full_shape, (len(shape),)),
                  lax.broadcast_in_dim(v, full_shape, tuple(range(len(shape)))))
    return lax.reduce_sum(lax.convert_element_type(hits, np.int32), (len(shape),))


def _rank(x: Any) -> Any:
    """The position of each element of the 1-D `x` in its stable sort: one sort, then
    the permutation inverted by a scatter (linear, where a second sort is not)."""
    positions = lax.iota(np.int32, _shape(x)[0])
    _, perm = lax.sort((x, positions), dimension=0)
    dnums = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                        scatter_dims_to_operand_dims=(0,))
    return lax.scatter(positions, lax.expand_dims(perm, (1,)), positions, dnums,
                       indices_are_sorted=False, unique_indices=True,
                       mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)


def _search_sort(a: Any, v: Any, side: str) -> Any:
    # In a stable sort of queries and `a` together, a query's rank counts the
    # elements of `a` before it (ties broken by which comes first) plus the queries
    # before it; subtracting the latter leaves the insertion point.
    n, shape = _shape(a)[0], _shape(v)
    queries = flatten_1d(v)
    m = _shape(queries)[0]
    if side == "left":
        ranks = lax.slice(_rank(lax.concatenate([queries, a], 0)), (0,), (m,))
    else:
        ranks = lax.slice(_rank(lax.concatenate([a, queries], 0)), (n,), (n + m,))
    return lax.reshape(lax.sub(ranks, _rank(queries)), shape)


def digitize(x: Any, bins: Any, right: bool = False, *, method: str | None = None) -> Any:
    """The index of the bin of each element of `x`, for monotonically increasing or
    decreasing 1-D `bins`; `right` makes bins closed on the right.

    >>> digitize(np.float32([0.5, 1.0, 2.5]), np.float32([0, 1, 2]))
    Array([1, 2, 3], dtype=int32)
    """
    check_arraylike("digitize", x, bins)
    x_arr, bins_arr = asarray_internal(x), asarray_internal(bins)
    if len(_shape(bins_arr)) != 1:
        raise ValueError(f"digitize: bins must be a 1-dimensional array, got shape "
                         f"{_shape(bins_arr)}")
    n, shape = _shape(bins_arr)[0], _shape(x_arr)
    if n == 0:
        return _full(shape, 0, np.int32)
    side = "left" if right else "right"
    kwargs = {} if method is None else {"method": method}
    increasing = searchsorted(bins_arr, x_arr, side=side, **kwargs)
    decreasing = lax.sub(_full(shape, n, np.int32),
                         searchsorted(lax.rev(bins_arr, (0,)), x_arr, side=side, **kwargs))
    ascending = lax.ge(lax.slice(bins_arr, (n - 1,), (n,)), lax.slice(bins_arr, (0,), (1,)))
    ascending = lax.broadcast_in_dim(lax.reshape(ascending, ()), shape, ())
    return lax.select(ascending, increasing, decreasing)


# --- selecting by a mask ---------------------------------------------------------------
def nonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> tuple[Any, ...]:
    """The indices of the nonzero elements of `a`, one array per dimension.

    Without `size`, `a` must be concrete. With `size`, the first `size` indices are
    returned, padded with `fill_value` (a scalar or one per dimension; default 0).

    >>> nonzero(np.int32([[0, 1], [2, 0]]))
    (Array([0, 1], dtype=int32), Array([1, 0], dtype=int32))
    """
    arr = _array("nonzero", a)
    shape = _shape(arr)
    if not shape:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                         "atleast_1d(scalar).nonzero() instead.")
    mask = flatten_1d(_truth(arr))
    if size is None:
        size = int(np.count_nonzero(_concrete(mask, "nonzero")))
    else:
        size = _static_size(size, "nonzero")
    flat, count = _first_true(mask, size)
    dt = _int_dtype()
    # Padding positions equal the element count, whose unraveled index is all zeros.
    out = []
    for i, dim in enumerate(shape):
        stride = math.prod(shape[i + 1:])
        index = lax.div(flat, _full((size,), max(stride, 1), dt))
        out.append(lax.rem(index, _full((size,), max(dim, 1), dt)))
    if fill_value is not None:
        fills = tuple(fill_value) if isinstance(fill_value, (list, tuple)) else (
            (fill_value,) * len(shape))
        if len(fills) != len(shape) or any(np.ndim(f) != 0 for f in fills):
            raise ValueError(f"nonzero: fill_value must be a scalar or a tuple of length "
                             f"{len(shape)}, got {fill_value!r}")
        valid = _valid(size, count)
        out = [lax.select(valid, o, lax.broadcast_in_dim(asarray_internal(f, dt), (size,), ()))
               for o, f in zip(out, fills)]
    return tuple(out)


def flatnonzero(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The indices of the nonzero elements of the flattened `a` (see `nonzero`).

    >>> flatnonzero(np.int32([[0, 1], [2, 0]]))
    Array([1, 2], dtype=int32)
    """
    arr = _array("flatnonzero", a)
    return nonzero(flatten_1d(arr), size=size, fill_value=fill_value)[0]


def argwhere(a: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The indices of the nonzero elements of `a`, one row per element (see `nonzero`).

    >>> argwhere(np.int32([[0, 1], [2, 0]]))
    Array([[0, 1],
           [1, 0]], dtype=int32)
    """
    arr = _array("argwhere", a)
    scalar = not _shape(arr)
    columns = nonzero(lax.reshape(arr, (1,)) if scalar else arr, size=size,
                      fill_value=fill_value)
    rows = _shape(columns[0])[0]
    if scalar:
        return _full((rows, 0), 0, _int_dtype())
    return lax.concatenate([lax.expand_dims(c, (1,)) for c in columns], 1)


def where(condition: Any, x: Any = None, y: Any = None, /, *, size: int | None = None,
          fill_value: Any = None) -> Any:
    """With `x` and `y`: elementwise `x` where `condition` is true, else `y`.
    With `condition` alone: `nonzero(condition, size=size, fill_value=fill_value)`.

    >>> where(np.bool_([True, False]), np.int32(1), np.int32(0))
    Array([1, 0], dtype=int32)
    >>> where(np.int32([0, 3, 4]))
    (Array([1, 2], dtype=int32),)
    """
    if x is None and y is None:
        return nonzero(condition, size=size, fill_value=fill_value)
    if x is None or y is None:
        raise ValueError("where: either both or neither of x and y must be given, got "
                         f"x={'None' if x is None else 'an array'} and "
                         f"y={'None' if y is None else 'an array'}")
    if size is not None or fill_value is not None:
        raise ValueError("where: size and fill_value can only be used with the one-argument "
                         "form where(condition)")
    return _where3(condition, x, y)


def compress(condition: Any, a: Any, axis: int | None = None, *, size: int | None = None,
             fill_value: Any = 0, out: None = None) -> Any:
    """The slices of `a` along `axis` (of the flattened `a` when None) where the 1-D
    `condition` is true. Without `size`, `condition` must be concrete; with it, the
    first `size` selected slices are returned, padded with `fill_value`.

    >>> compress(np.bool_([True, False, True]), np.int32([1, 2, 3]))
    Array([1, 3], dtype=int32)
    >>> compress(np.bool_([False, True, False]), np.int32([1, 2, 3]), size=2)
    Array([2, 0], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("compress: the `out` argument is not supported")
    check_arraylike("compress", condition, a)
    cond, arr = _truth(asarray_internal(condition)), asarray_internal(a)
    if len(_shape(cond)) != 1:
        raise ValueError(f"compress: condition must be a 1-D array, got shape {_shape(cond)}")
    if axis is None:
        arr, axis = flatten_1d(arr), 0
    else:
        axis = canonicalize_axis(axis, len(_shape(arr)), "compress: axis")
        arr = _moveaxis(arr, axis, 0)
    n, m = _shape(arr)[0], _shape(cond)[0]
    rest = _shape(arr)[1:]
    if size is None:
        cond_value = _concrete(cond, "compress")
        if cond_value[n:].any():
            raise ValueError(f"compress: condition (length {m}) selects entries beyond the "
                             f"size {n} of the array axis")
        chosen = np.flatnonzero(cond_value[:n]).astype(_int_dtype())
        result = (_take_rows(arr, chosen) if n else _full((0, *rest), 0, aval_of(arr).dtype))
        return _moveaxis(result, 0, axis)
    size = _static_size(size, "compress")
    k = min(n, m)
    if size > k:
        raise ValueError(f"compress: size must not exceed the number of entries considered "
                         f"(min(len(condition), a.shape[axis]) = {k}), got size={size}")
    dtype = aval_of(arr).dtype
    fill = lax.broadcast_in_dim(asarray_internal(fill_value, dtype), (size, *rest), ())
    if size == 0:
        return _moveaxis(fill, 0, axis)
    chosen, count = _first_true(lax.slice(cond, (0,), (k,)), size)
    valid = lax.broadcast_in_dim(_valid(size, count), (size, *rest), (0,))
    result = lax.select(valid, _take_rows(arr, chosen), fill)
    return _moveaxis(result, 0, axis)


def extract(condition: Any, arr: Any, *, size: int | None = None, fill_value: Any = 0) -> Any:
    """The elements of the flattened `arr` where the flattened `condition` is nonzero
    (see `compress`).

    >>> extract(np.int32([[1, 0], [0, 1]]), np.float32([[1, 2], [3, 4]]))
    Array([1., 4.], dtype=float32)
    """
    check_arraylike("extract", condition, arr)
    return compress(flatten_1d(asarray_internal(condition)), flatten_1d(asarray_internal(arr)),
                    size=size, fill_value=fill_value)

