"""Set operations and counting (jax.numpy style): `unique` and its array-API
variants, `union1d`, `intersect1d`, `setdiff1d`, `setxor1d`, `isin`, `bincount`
and histograms.

Results whose size depends on the data need concrete inputs unless a static
`size=` (`length=` for `bincount`) is given; with it they work on traced data
under jit and vmap, truncating or padding the result with `fill_value`.
All of them sort first, so results come out sorted, NaNs last.

>>> import numpy as np
>>> unique(np.int32([3, 1, 3, 2]))
Array([1, 2, 3], dtype=int32)
>>> unique(np.int32([3, 1, 3]), size=3, fill_value=0)
Array([1, 3, 0], dtype=int32)
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from lamella import lax
from lamella.core import dtypes as core_dtypes
from lamella.core.errors import ConcretizationTypeError
from lamella.core.trace import aval_of
from lamella.numpy.dtypes import promote_dtypes, promote_dtypes_inexact
from lamella.numpy.placement import check_out_sharding
from lamella.numpy.sorting import (
    _array,
    _concrete,
    _first_true,
    _full,
    _int_dtype,
    _moveaxis,
    _shape,
    _static_size,
    _take_rows,
    _valid,
    searchsorted,
)
from lamella.numpy.util import (
    asarray_internal,
    canonicalize_axis,
    check_arraylike,
    concrete_int,
    concrete_value,
    flatten_1d,
    ndim,
)

__all__ = [
    "bincount", "histogram", "histogram2d", "histogram_bin_edges", "histogramdd",
    "intersect1d", "isin", "setdiff1d", "setxor1d", "union1d", "unique", "unique_all",
    "unique_counts", "unique_inverse", "unique_values",
]

_ISIN_METHODS = ("auto", "compare_all", "binary_search", "sort")


class UniqueAllResult(NamedTuple):
    """What `unique_all` returns."""
    values: Any
    indices: Any
    inverse_indices: Any
    counts: Any


class UniqueCountsResult(NamedTuple):
    """What `unique_counts` returns."""
    values: Any
    counts: Any


class UniqueInverseResult(NamedTuple):
    """What `unique_inverse` returns."""
    values: Any
    inverse_indices: Any


# --- sorted rows and their runs of equal values --------------------------------------
def _isnan(x: Any) -> Any:
    return lax.ne(x, x)


def _sort_rows(aux: Any) -> tuple[Any, Any]:
    """`aux` (n >= 1 rows) sorted lexicographically by row, and the (stable) permutation."""
    n, *rest = _shape(aux)
    columns = lax.reshape(aux, (n, math.prod(rest)))
    keys = [lax.reshape(lax.slice_in_dim(columns, j, j + 1, axis=1), (n,))
            for j in range(math.prod(rest))]
    if aval_of(aux).dtype.kind == "c" and len(keys) == 1:
        # NumPy gathers complex values with a NaN in either part at the end, so that
        # they can be merged as equal.
        keys = [_isnan(keys[0]), *keys]
    perm = lax.sort((*keys, lax.iota(_int_dtype(), n)), dimension=0, num_keys=len(keys))[-1]
    return _take_rows(aux, perm), perm


def _run_starts(sorted_aux: Any, equal_nan: bool) -> Any:
    """True where a row differs from the one before it (the first row included)."""
    n, *rest = _shape(sorted_aux)
    later = lax.slice_in_dim(sorted_aux, 1, n, axis=0)
    earlier = lax.slice_in_dim(sorted_aux, 0, n - 1, axis=0)
    differs = lax.ne(later, earlier)
    dtype = aval_of(sorted_aux).dtype
    if equal_nan and (core_dtypes.is_float(dtype) or dtype.kind == "c"):
        both_nan = lax.bitwise_and(_isnan(later), _isnan(earlier))
        differs = lax.bitwise_and(differs, lax.bitwise_not(both_nan))
    if rest:
        differs = lax.reduce_or(differs, tuple(range(1, len(rest) + 1)))
    return lax.concatenate([_full((1,), True, np.bool_), differs], 0)


def _unique(arr: Any, axis: int, return_index: bool, return_inverse: bool,
            return_counts: bool, equal_nan: bool, size: int | None, fill_value: Any
            ) -> list[Any]:
    aux = _moveaxis(arr, axis, 0)
    n, *rest = _shape(aux)
    dtype, dt = aval_of(aux).dtype, _int_dtype()
    if n == 0:
        if size and fill_value is None:
            raise ValueError("unique: for an empty input and size > 0, fill_value must be given")
        k = size or 0
        out = [_moveaxis(lax.broadcast_in_dim(asarray_internal(fill_value or 0, dtype),
                                              (k, *rest), ()), 0, axis)]
        out += [_full((k,), 0, dt)] * return_index + [_full((0,), 0, dt)] * return_inverse
        return out + [_full((k,), 0, dt)] * return_counts
    if math.prod(rest) == 0:
        # Empty slices are all equal: one unique slice, the first.
        sorted_aux, perm = lax.slice_in_dim(aux, 0, 1, axis=0), _full((1,), 0, dt)
        starts = _full((1,), True, np.bool_)
    else:
        sorted_aux, perm = _sort_rows(aux)
        starts = _run_starts(sorted_aux, equal_nan)
    m = _shape(starts)[0]
    if size is None:
        positions = np.flatnonzero(_concrete(starts, "unique")).astype(dt)
        k, valid = len(positions), None
        chosen = asarray_internal(positions)
    else:
        k = size
        padded, count = _first_true(starts, k)
        valid = _valid(k, count)
        # JAX pads with the first (smallest) unique value.
        chosen = lax.select(valid, padded, _full((k,), 0, dt))
    values = _take_rows(sorted_aux, chosen)
    if valid is not None and fill_value is not None:
        fill = lax.broadcast_in_dim(asarray_internal(fill_value, dtype), (k, *rest), ())
        values = lax.select(lax.broadcast_in_dim(valid, (k, *rest), (0,)), values, fill)
    out = [_moveaxis(values, 0, axis)]
    if return_index:
        out.append(_take_rows(perm, chosen))
    if return_inverse:
        if m < n:
            out.append(_full((n,), 0, dt))
        else:
            group = lax.sub(lax.cumsum(lax.convert_element_type(starts, dt), 0),
                            _full((n,), 1, dt))
            out.append(lax.sort((perm, group), dimension=0)[1])
    if return_counts:
        # A group's count is the distance from its start to the next start (or the end).
        bounds, _ = _first_true(starts, k + 1)
        counts = lax.sub(lax.slice(bounds, (1,), (k + 1,)), lax.slice(bounds, (0,), (k,)))
        if m < n:
            counts = lax.mul(counts, _full((k,), n, dt))
        out.append(counts)
    return out


def unique(ar: Any, return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis: int | None = None, *, equal_nan: bool = True,
           size: int | None = None, fill_value: Any = None, sorted: bool = True) -> Any:
    """The sorted unique values of `ar` (flattened when `axis` is None, else the unique
    slices along `axis`), optionally with the index of each one's first occurrence,
    the inverse indices that rebuild `ar`, and the counts.

    Without `size`, `ar` must be concrete. With `size`, the first `size` unique
    values are returned, padded with `fill_value` (default: the smallest unique
    value); padded indices point at it too, padded counts are 0. `sorted` is unused.

    >>> unique(np.int32([3, 1, 3]), return_index=True, return_counts=True)
    (Array([1, 3], dtype=int32), Array([1, 0], dtype=int32), Array([1, 2], dtype=int32))
    """
    arr = _array("unique", ar)
    if size is None:
        _concrete(arr, "unique")
    else:
        size = _static_size(size, "unique")
    in_shape = _shape(arr)
    if axis is None:
        arr, axis_int = flatten_1d(arr), 0
    else:
        axis_int = canonicalize_axis(axis, len(in_shape), "unique: axis")
    out = _unique(arr, axis_int, return_index, return_inverse, return_counts, equal_nan, size,
                  fill_value)
    if return_inverse and axis is None:
        i = 1 + return_index
        out[i] = lax.reshape(out[i], in_shape)
    return out[0] if len(out) == 1 else tuple(out)


def unique_values(x: Any, /, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The sorted unique values of `x` (NaNs all distinct, as in the array API).

    >>> unique_values(np.int32([2, 2, 1]))
    Array([1, 2], dtype=int32)
    """
    return unique(x, equal_nan=False, size=size, fill_value=fill_value)


def unique_counts(x: Any, /, *, size: int | None = None,
                  fill_value: Any = None) -> UniqueCountsResult:
    """The sorted unique values of `x` and how often each occurs.

    >>> unique_counts(np.int32([2, 2, 1])).counts
    Array([1, 2], dtype=int32)
    """
    values, counts = unique(x, return_counts=True, equal_nan=False, size=size,
                            fill_value=fill_value)
    return UniqueCountsResult(values, counts)


def unique_inverse(x: Any, /, *, size: int | None = None,
                   fill_value: Any = None) -> UniqueInverseResult:
    """The sorted unique values of `x` and, shaped like `x`, the index of each element
    of `x` among them.

    >>> unique_inverse(np.int32([2, 2, 1])).inverse_indices
    Array([1, 1, 0], dtype=int32)
    """
    values, inverse = unique(x, return_inverse=True, equal_nan=False, size=size,
                             fill_value=fill_value)
    return UniqueInverseResult(values, inverse)


def unique_all(x: Any, /, *, size: int | None = None,
               fill_value: Any = None) -> UniqueAllResult:
    """The sorted unique values of `x`, the indices of their first occurrences, the
    inverse indices (shaped like `x`) and the counts.

    >>> unique_all(np.int32([2, 2, 1])).indices
    Array([2, 0], dtype=int32)
    """
    return UniqueAllResult(*unique(x, return_index=True, return_inverse=True,
                                   return_counts=True, equal_nan=False, size=size,
                                   fill_value=fill_value))


# --- two-set operations ----------------------------------------------------------------
def _unique_1d(x: Any, assume_unique: bool) -> tuple[Any, Any, Any]:
    """(sorted unique values padded to len(x), index of each one's first occurrence,
    number of unique values) for a non-empty 1-D `x`."""
    n, dt = _shape(x)[0], _int_dtype()
    if assume_unique:
        values, perm = lax.sort((x, lax.iota(dt, n)), dimension=0)
        return values, perm, _full((), n, dt)
    sorted_x, perm = _sort_rows(x)
    positions, count = _first_true(_run_starts(sorted_x, True), n)
    return _take_rows(sorted_x, positions), _take_rows(perm, positions), count


def _concrete_pair(name: str, size: Any, *arrays: Any) -> int | None:
    if size is None:
        for a in arrays:
            _concrete(a, name)
        return None
    return _static_size(size, name)


def _finish(values: Any, count: Any, size: int | None, fill_value: Any) -> Any:
    """`values` (its first `count` entries valid) cut to `size` entries and padded
    with `fill_value` (default: the first value, or 0 when there is none); without
    `size`, cut to the concrete `count`."""
    n, dtype = _shape(values)[0], aval_of(values).dtype
    if size is None:
        return lax.slice(values, (0,), (int(np.asarray(count)),))
    if size > n:
        values = lax.concatenate([values, _full((size - n,), 0, dtype)], 0)
    values = lax.slice(values, (0,), (size,))
    if size == 0:
        return values
    if fill_value is None:
        first = lax.broadcast_in_dim(lax.reshape(lax.slice(values, (0,), (1,)), ()), (), ())
        fill = lax.select(lax.gt(count, lax.full_like(count, 0)), first, _full((), 0, dtype))
    else:
        fill = asarray_internal(fill_value, dtype)
    return lax.select(_valid(size, count), values, lax.broadcast_in_dim(fill, (size,), ()))


def _isin_flat(elements: Any, tests: Any, method: str) -> Any:
    """For each element, whether it equals one of `tests` (flattened); NaN never does."""
    elements, tests = promote_dtypes(elements, tests)
    tests = flatten_1d(tests)
    shape, m = _shape(elements), _shape(tests)[0]
    if m == 0:
        return _full(shape, False, np.bool_)
    if method == "compare_all":
        full_shape = (*shape, m)
        equal = lax.eq(lax.broadcast_in_dim(elements, full_shape, tuple(range(len(shape)))),
                       lax.broadcast_in_dim(tests, full_shape, (len(shape),)))
        return lax.reduce_or(equal, (len(shape),))
    sorted_tests = lax.sort(tests, dimension=0)
    position = searchsorted(sorted_tests, elements)
    return lax.eq(_take_rows(sorted_tests, position), elements)


def isin(element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
         *, method: str = "auto") -> Any:
    """Whether each element of `element` occurs in `test_elements` (negated when
    `invert`). `method`: "compare_all" (all pairs), "binary_search", "sort" or
    "auto" (both a binary search here).

    >>> isin(np.int32([1, 2, 3]), np.int32([[3, 5], [1, 1]]))
    Array([ True, False,  True], dtype=bool)
    """
    check_arraylike("isin", element, test_elements)
    if method not in _ISIN_METHODS:
        raise ValueError(f"isin: method must be one of {_ISIN_METHODS}, got {method!r}")
    found = _isin_flat(asarray_internal(element), asarray_internal(test_elements), method)
    return lax.bitwise_not(found) if invert else found


def union1d(ar1: Any, ar2: Any, *, size: int | None = None, fill_value: Any = None) -> Any:
    """The sorted unique values found in either (flattened) array.

    >>> union1d(np.int32([3, 1]), np.int32([2, 1]))
    Array([1, 2, 3], dtype=int32)
    """
    check_arraylike("union1d", ar1, ar2)
    a1, a2 = (flatten_1d(a) for a in promote_dtypes(ar1, ar2))
    size = _concrete_pair("union1d", size, a1, a2)
    return unique(lax.concatenate([a1, a2], 0), size=size, fill_value=fill_value)


def intersect1d(ar1: Any, ar2: Any, assume_unique: bool = False, return_indices: bool = False,
                *, size: int | None = None, fill_value: Any = None) -> Any:
    """The sorted unique values found in both (flattened) arrays; with `return_indices`
    also the index of each one's first occurrence in either array.

    With `size`, values are padded with `fill_value` (default: the smallest value
    of the intersection) and indices with the array's size (out of bounds).

    >>> intersect1d(np.int32([4, 1, 3]), np.int32([3, 4, 5]), return_indices=True)
    (Array([3, 4], dtype=int32), Array([2, 0], dtype=int32), Array([0, 1], dtype=int32))
    """
    check_arraylike("intersect1d", ar1, ar2)
    a1, a2 = (flatten_1d(a) for a in promote_dtypes(ar1, ar2))
    size = _concrete_pair("intersect1d", size, a1, a2)
    n1, n2, dt = _shape(a1)[0], _shape(a2)[0], _int_dtype()
    if n1 == 0 or n2 == 0:
        k = size or 0
        values = _full((k,), 0 if fill_value is None else fill_value, aval_of(a1).dtype)
        return (values, _full((k,), n1, dt), _full((k,), n2, dt)) if return_indices else values
    u1, first1, count1 = _unique_1d(a1, assume_unique)
    sorted2, perm2 = lax.sort((a2, lax.iota(dt, n2)), dimension=0)
    position = searchsorted(sorted2, u1)
    hit = lax.bitwise_and(_valid(n1, count1), lax.eq(_take_rows(sorted2, position), u1))
    chosen, count = _first_true(hit, n1 if size is None else size)
    values = _finish(_take_rows(u1, chosen), count, size, fill_value)
    if not return_indices:
        return values
    k = _shape(values)[0]
    chosen = lax.slice(chosen, (0,), (k,))
    valid = _valid(k, count)
    index1 = lax.select(valid, _take_rows(first1, chosen), _full((k,), n1, dt))
    index2 = _take_rows(perm2, _take_rows(position, chosen))
    return values, index1, lax.select(valid, index2, _full((k,), n2, dt))


def setdiff1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
              fill_value: Any = None) -> Any:
    """The sorted unique values of `ar1` that are not in `ar2` (in `ar1`'s order when
    `assume_unique`). With `size`, padded with `fill_value` (default 0).

    >>> setdiff1d(np.int32([5, 1, 3, 1]), np.int32([3]))
    Array([1, 5], dtype=int32)
    """
    check_arraylike("setdiff1d", ar1, ar2)
    a1, a2 = flatten_1d(asarray_internal(ar1)), flatten_1d(asarray_internal(ar2))
    size = _concrete_pair("setdiff1d", size, a1)
    dtype = aval_of(a1).dtype
    fill = 0 if fill_value is None else fill_value
    n1 = _shape(a1)[0]
    if n1 == 0:
        return _full((size or 0,), fill, dtype)
    if assume_unique:
        u1, count1 = a1, _full((), n1, _int_dtype())
    else:
        u1, _, count1 = _unique_1d(a1, False)
    keep = lax.bitwise_and(_valid(n1, count1), lax.bitwise_not(_isin_flat(u1, a2, "auto")))
    chosen, count = _first_true(keep, n1 if size is None else size)
    return _finish(_take_rows(u1, chosen), count, size, fill)


def setxor1d(ar1: Any, ar2: Any, assume_unique: bool = False, *, size: int | None = None,
             fill_value: Any = None) -> Any:
    """The sorted values found in exactly one of the (flattened) arrays. With `size`,
    padded with `fill_value` (default: the smallest value of the result).

    >>> setxor1d(np.int32([1, 2, 3]), np.int32([3, 4]))
    Array([1, 2, 4], dtype=int32)
    """
    check_arraylike("setxor1d", ar1, ar2)
    a1, a2 = (flatten_1d(a) for a in promote_dtypes(ar1, ar2))
    size = _concrete_pair("setxor1d", size, a1, a2)
    parts, masks = [], []
    for mine, other in ((a1, a2), (a2, a1)):
        n = _shape(mine)[0]
        if n == 0:
            continue
        values, _, count = _unique_1d(mine, assume_unique)
        parts.append(values)
        masks.append(lax.bitwise_and(_valid(n, count),
                                     lax.bitwise_not(_isin_flat(values, other, "auto"))))
    if not parts:
        return _full((size or 0,), 0 if fill_value is None else fill_value, aval_of(a1).dtype)
    mask = lax.concatenate(masks, 0)
    # The selected values first, each group sorted.
    _, values = lax.sort((lax.bitwise_not(mask), lax.concatenate(parts, 0)), dimension=0,
                         num_keys=2)
    count = lax.reduce_sum(lax.convert_element_type(mask, _int_dtype()), (0,))
    return _finish(values, count, size, fill_value)


# --- counting --------------------------------------------------------------------------
def bincount(x: Any, weights: Any = None, minlength: int = 0, *,
             length: int | None = None, out_sharding: Any = None) -> Any:
    """How often each value 0, 1, ... occurs in the 1-D non-negative integer array `x`
    (sums of `weights` instead, when given).

    The result has `length` entries (values beyond it are dropped; negative values
    count as 0, as in JAX); without `length`, `x` must be concrete and the length
    is max(minlength, max(x) + 1).

    >>> bincount(np.int32([0, 2, 2]))
    Array([1, 0, 2], dtype=int32)
    >>> bincount(np.int32([0, 2, 2]), np.float32([0.5, 1, 1]), length=4)
    Array([0.5, 0. , 2. , 0. ], dtype=float32)
    """
    check_out_sharding("bincount", out_sharding)
    check_arraylike("bincount", x)
    xs = asarray_internal(x)
    if aval_of(xs).dtype == np.bool_:
        xs = lax.convert_element_type(xs, np.int32)
    if aval_of(xs).dtype.kind not in "iu":
        raise TypeError(f"bincount: x must have an integer type, got {aval_of(xs).dtype}")
    if len(_shape(xs)) != 1:
        raise ValueError(f"bincount: x must be 1-dimensional, got shape {_shape(xs)}")
    minlength = concrete_int(minlength, "the minlength argument of bincount")
    if minlength < 0:
        raise ValueError(f"bincount: minlength must be non-negative, got {minlength}")
    if length is None:
        values = _concrete(xs, "bincount", "length")
        length = max(minlength, int(values.max()) + 1 if values.size else 0)
    else:
        length = concrete_int(length, "the length argument of bincount")
        if length < 0:
            raise ValueError(f"bincount: length must be non-negative, got {length}")
    n = _shape(xs)[0]
    if weights is None:
        w = _full((n,), 1, _int_dtype())
    else:
        check_arraylike("bincount", weights)
        w = asarray_internal(weights)
        if _shape(w) != _shape(xs):
            raise ValueError(f"bincount: weights must have the shape of x, got weights of "
                             f"shape {_shape(w)} and x of shape {_shape(xs)}")
    return _scatter_add(_full((length,), 0, aval_of(w).dtype),
                        lax.max(xs, lax.full_like(xs, 0)), w)


def _scatter_add(out: Any, indices: Any, updates: Any) -> Any:
    """out[indices] += updates for 1-D arrays; out-of-bounds indices are dropped."""
    dnums = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                        scatter_dims_to_operand_dims=(0,))
    return lax.scatter_add(out, lax.expand_dims(indices, (1,)), updates, dnums, mode="drop")


# --- histograms ------------------------------------------------------------------------
def _inexact_dtype(x: Any) -> np.dtype:
    return aval_of(promote_dtypes_inexact(x)[0]).dtype


def histogram_bin_edges(a: Any, bins: Any = 10, range: Any = None,  # noqa: A002
                        weights: Any = None) -> Any:
    """The edges of the bins `histogram` uses: `bins` itself when it is an array of
    edges, else `bins` + 1 equally spaced edges over `range` (default: the data's
    min and max; a zero-width range is widened by 0.5 on each side).

    >>> histogram_bin_edges(np.float32([1, 2, 5]), bins=4)
    Array([1., 2., 3., 4., 5.], dtype=float32)
    """
    del weights  # only string `bins` would use them, and those are not supported
    if isinstance(bins, str):
        raise NotImplementedError("histogram_bin_edges: string values of bins are not supported")
    check_arraylike("histogram_bin_edges", a, bins)
    arr = asarray_internal(a)
    dtype = _inexact_dtype(arr)
    if ndim(bins) == 1:
        return asarray_internal(bins, dtype)
    count = concrete_int(bins, "the bins argument of histogram_bin_edges")
    if count < 1:
        raise ValueError(f"histogram_bin_edges: bins must be a positive integer, got {count}")
    if range is None:
        if not _shape(arr) or math.prod(_shape(arr)):
            flat = lax.convert_element_type(flatten_1d(arr), dtype)
            low, high = lax.reduce_min(flat, (0,)), lax.reduce_max(flat, (0,))
        else:
            low, high = _full((), 0, dtype), _full((), 1, dtype)
    else:
        if np.shape(range) != (2,) and not (isinstance(range, (list, tuple)) and len(range) == 2):
            raise ValueError(f"histogram_bin_edges: range must be None or a pair of scalars, "
                             f"got {range!r}")
        low, high = (asarray_internal(r, dtype) for r in range)
        _check_range_order(low, high)
    # A zero-width range becomes one of width 1, as in NumPy.
    empty = lax.eq(low, high)
    half = _full((), 0.5, dtype)
    low = lax.select(empty, lax.sub(low, half), low)
    high = lax.select(empty, lax.add(high, half), high)
    step = lax.div(lax.sub(high, low), _full((), count, dtype))
    steps = lax.mul(lax.iota(dtype, count), lax.broadcast_in_dim(step, (count,), ()))
    inner = lax.add(steps, lax.broadcast_in_dim(low, (count,), ()))
    return lax.concatenate([inner, lax.reshape(high, (1,))], 0)


def _check_range_order(low: Any, high: Any) -> None:
    try:
        lo, hi = concrete_value(low, "range"), concrete_value(high, "range")
    except ConcretizationTypeError:
        return  # traced: nothing to check statically
    if lo > hi:
        raise ValueError(f"histogram: range must satisfy min <= max, got ({lo}, {hi})")


def _bin_index(values: Any, edges: Any) -> Any:
    """1 + the bin of each value: 0 below the first edge, len(edges) above the last
    (and for NaN); the last bin includes its right edge."""
    index = searchsorted(edges, values, side="right")
    n = _shape(edges)[0]
    last = lax.broadcast_in_dim(lax.reshape(lax.slice(edges, (n - 1,), (n,)), ()),
                                _shape(values), ())
    return lax.select(lax.eq(values, last), lax.full_like(index, n - 1), index)


def histogram(a: Any, bins: Any = 10, range: Any = None, weights: Any = None,  # noqa: A002
              density: bool | None = None) -> tuple[Any, Any]:
    """The histogram of the flattened `a`: (counts, or sums of `weights`, per bin;
    bin edges). With `density`, normalised to integrate to 1. Counts are floats,
    as in JAX; values outside the range (and NaNs) are ignored.

    >>> histogram(np.float32([1, 2, 2, 5]), bins=2)
    (Array([3., 1.], dtype=float32), Array([1., 3., 5.], dtype=float32))
    """
    check_arraylike("histogram", a)
    if weights is None:
        (arr,) = promote_dtypes_inexact(a)
        w = lax.full_like(arr, 1)
    else:
        check_arraylike("histogram", weights)
        arr, w = promote_dtypes_inexact(a, weights)
        if _shape(arr) != _shape(w):
            raise ValueError(f"histogram: weights must have the shape of a, got weights of "
                             f"shape {_shape(w)} and a of shape {_shape(arr)}")
    arr, w = flatten_1d(arr), flatten_1d(w)
    edges = histogram_bin_edges(arr, bins, range)
    n = _shape(edges)[0]
    hist = _scatter_add(_full((n + 1,), 0, aval_of(w).dtype), _bin_index(arr, edges), w)
    hist = lax.slice(hist, (1,), (n,))
    if density:
        widths = lax.sub(lax.slice(edges, (1,), (n,)), lax.slice(edges, (0,), (n - 1,)))
        total = lax.broadcast_in_dim(lax.reduce_sum(hist, (0,)), (n - 1,), ())
        hist = lax.div(lax.div(hist, widths), total)
    return hist, edges


def histogramdd(sample: Any, bins: Any = 10, range: Sequence[Any] | None = None,  # noqa: A002
                weights: Any = None, density: bool | None = None) -> tuple[Any, list[Any]]:
    """The D-dimensional histogram of the N points `sample` (shape (N, D)): (counts of
    shape (bins_0, ..., bins_D-1), list of D edge arrays). `bins` is one bin spec
    (int or edges) for all dimensions or one per dimension; `range` one pair (or
    None) per dimension. Unweighted counts are integers, as in JAX.

    >>> histogramdd(np.float32([[0, 0], [1, 1], [1, 0]]), bins=2)[0]
    Array([[1, 0],
           [1, 1]], dtype=int32)
    """
    check_arraylike("histogramdd", sample)
    points = asarray_internal(sample)
    if len(_shape(points)) != 2:
        raise ValueError(f"histogramdd: sample must have shape (N, D), got {_shape(points)}")
    n, d = _shape(points)
    if weights is not None:
        check_arraylike("histogramdd", weights)
        weights = asarray_internal(weights)
        if _shape(weights) != (n,):
            raise ValueError(f"histogramdd: weights must have shape ({n},), one per sample, "
                             f"got {_shape(weights)}")
    if range is not None and len(range) != d:
        raise ValueError(f"histogramdd: range must have {d} entries (pairs or None), "
                         f"got {range!r}")
    if isinstance(bins, (list, tuple)):
        if len(bins) != d:
            raise ValueError(f"histogramdd: bins must have one entry per dimension ({d}), "
                             f"got {len(bins)}")
        per_dim = list(bins)
    else:
        per_dim = [bins] * d
    edges, flat, strides = [], _full((n,), 0, _int_dtype()), []
    sizes = []
    for i in builtins.range(d):
        column = lax.reshape(lax.slice_in_dim(points, i, i + 1, axis=1), (n,))
        e = histogram_bin_edges(column, per_dim[i], None if range is None else range[i])
        edges.append(e)
        sizes.append(_shape(e)[0] + 1)
        strides.append(_bin_index(lax.convert_element_type(column, aval_of(e).dtype), e))
    for index, stride in zip(strides, np.cumprod([1, *sizes[::-1]])[-2::-1]):
        index = lax.convert_element_type(index, _int_dtype())
        flat = lax.add(flat, lax.mul(index, lax.full_like(index, int(stride))))
    hist = bincount(flat, weights, length=math.prod(sizes))
    hist = lax.reshape(hist, tuple(sizes))
    hist = lax.slice(hist, (1,) * d, tuple(s - 1 for s in sizes))
    if density:
        hist = lax.convert_element_type(hist, _inexact_dtype(points))
        total = lax.reduce_sum(hist, tuple(builtins.range(d)))
        hist = lax.div(hist, lax.full_like(hist, 1) if d == 0 else
                       lax.broadcast_in_dim(total, _shape(hist), ()))
        for i, e in enumerate(edges):
            m = _shape(e)[0]
            widths = lax.sub(lax.slice(e, (1,), (m,)), lax.slice(e, (0,), (m - 1,)))
            hist = lax.div(hist, lax.broadcast_in_dim(
                lax.convert_element_type(widths, aval_of(hist).dtype), _shape(hist), (i,)))
    return hist, edges


def histogram2d(x: Any, y: Any, bins: Any = 10, range: Sequence[Any] | None = None,  # noqa: A002
                weights: Any = None, density: bool | None = None
                ) -> tuple[Any, Any, Any]:
    """The 2-D histogram of points (x[i], y[i]): (counts, x edges, y edges). `bins` is
    an int or edges for both axes, or a pair of them.

    >>> histogram2d(np.float32([0, 1, 1]), np.float32([0, 1, 0]), bins=2)[0]
    Array([[1, 0],
           [1, 1]], dtype=int32)
    """
    check_arraylike("histogram2d", x, y)
    xs, ys = promote_dtypes(x, y)
    if len(_shape(xs)) != 1 or _shape(xs) != _shape(ys):
        raise ValueError(f"histogram2d: x and y must be 1-D arrays of one length, got shapes "
                         f"{_shape(xs)} and {_shape(ys)}")
    if not isinstance(bins, (list, tuple)) and ndim(bins) == 1 or (
            isinstance(bins, (list, tuple)) and len(bins) != 2):
        bins = [bins, bins]
    sample = lax.concatenate([lax.expand_dims(xs, (1,)), lax.expand_dims(ys, (1,))], 1)
    hist, (x_edges, y_edges) = histogramdd(sample, bins, range, weights, density)
    return hist, x_edges, y_edges

