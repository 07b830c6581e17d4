"""Reductions and statistics (jax.numpy style) built from lamella.lax primitives.

Every reduction reduces with one lax primitive (reduce_sum/prod/max/min/and/or,
argmax/argmin, cumsum/cumprod, sort for order statistics), so all of them work
under jit, grad and vmap. Dtype rules follow JAX: `sum`/`prod` of bools and
narrow integers give the default integer (int32 without x64), `mean`/`var` of
integers the default float, float16/bfloat16 sums accumulate in float32 and are
cast back, and nothing becomes float64 unless x64 is on. `out` exists only for
NumPy compatibility: anything but None is refused.

>>> import numpy as np
>>> sum(np.int8([100, 100]))
Array(200, dtype=int32)
>>> mean(np.int32([1, 2]))
Array(1.5, dtype=float32)
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from lamella import lax
from lamella.core import dtypes as core_dtypes
from lamella.core.trace import aval_of
from lamella.numpy.dtypes import canonicalize_user_dtype, promote_dtypes_inexact
from lamella.numpy.placement import check_out_sharding
from lamella.numpy.util import (
    asarray_internal,
    canonicalize_axes,
    canonicalize_axis,
    check_arraylike,
    default_float_dtype,
    default_int_dtype,
    eager_jit,
)
from lamella.numpy.util import checked_array as _asarray
from lamella.numpy.util import shape as _shape

# The non-array parameters of the reductions (static under eager_jit).
_STATIC = ("axis", "dtype", "out", "keepdims", "promote_integers", "ddof", "correction",
           "method", "overwrite_input", "returned", "include_initial")

__all__ = [
    "all", "amax", "amin", "any", "argmax", "argmin", "average", "count_nonzero", "cumprod",
    "cumsum", "cumulative_prod", "cumulative_sum", "max", "mean", "median", "min",
    "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean", "nanmedian",
    "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd", "nansum", "nanvar",
    "percentile", "prod", "ptp", "quantile", "std", "sum", "var",
]

_QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


# --- dtypes --------------------------------------------------------------------------
# Computed per call: enable_x64 can change between calls.
def _canonical(dtype: Any) -> np.dtype:
    return core_dtypes.canonicalize_dtype(np.dtype(dtype))


def _promote_integer(dtype: np.dtype) -> np.dtype:
    # NumPy widens to 64 bits; JAX (and lamella) to the default integer width.
    if dtype.kind == "b":
        return default_int_dtype()
    if dtype.kind in "iu":
        default = _canonical(np.int64 if dtype.kind == "i" else np.uint64)
        return default if dtype.itemsize < default.itemsize else dtype
    return dtype


def _to_inexact(dtype: np.dtype) -> np.dtype:
    return dtype if dtype.kind in "fc" or dtype.name == "bfloat16" else default_float_dtype()


def _upcast_f16(dtype: np.dtype) -> np.dtype:
    # Half-precision sums lose too much; accumulate in float32 and cast back.
    return np.dtype(np.float32) if dtype.name in ("float16", "bfloat16") else dtype


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64 if dtype == np.complex128 else np.float32) \
        if dtype.kind == "c" else dtype


def _is_inexact(x: Any) -> bool:
    dtype = aval_of(x).dtype
    return dtype.kind in "fc" or dtype.name == "bfloat16"


def _lowest(dtype: np.dtype) -> Any:
    if dtype.kind == "b":
        return False
    # Complex numbers order lexicographically: -inf (+0j) is below every one of them.
    return -np.inf if dtype.kind in "fc" or dtype.name == "bfloat16" else np.iinfo(dtype).min


def _highest(dtype: np.dtype) -> Any:
    if dtype.kind == "b":
        return True
    return np.inf if dtype.kind in "fc" or dtype.name == "bfloat16" else np.iinfo(dtype).max


# --- argument handling -----------------------------------------------------------------
def _check_out(name: str, out: Any) -> None:
    if out is not None:
        raise NotImplementedError(
            f"The 'out' argument to lamella.numpy.{name} is not supported.")



def _axes(axis: Any, rank: int) -> tuple[int, ...]:
    if axis is not None and not isinstance(axis, (tuple, list)):
        axis = operator.index(axis)
    return canonicalize_axes(axis, rank)


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return math.prod(shape[d] for d in axes)


def _kept_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool
                ) -> tuple[int, ...]:
    return tuple(1 if i in axes else d for i, d in enumerate(shape)
                 if keepdims or i not in axes)


def _broadcast_mask(name: str, where: Any, shape: tuple[int, ...]) -> Any:
    """`where` as a bool mask of exactly `shape` (it may broadcast to it, not beyond)."""
    check_arraylike(name, where)
    where = asarray_internal(where)
    if aval_of(where).dtype != np.bool_:
        where = lax.ne(where, lax.full_like(where, 0))
    w_shape = _shape(where)
    fits = len(w_shape) <= len(shape) and builtins.all(
        w in (1, s) for w, s in zip(w_shape[::-1], shape[::-1]))
    if not fits:
        raise ValueError(f"{name}: the where mask of shape {w_shape} does not broadcast to "
                         f"the array's shape {shape}")
    offset = len(shape) - len(w_shape)
    kept = [i for i, w in enumerate(w_shape) if w == shape[offset + i]]
    where = lax.reshape(where, tuple(w_shape[i] for i in kept))
    return lax.broadcast_in_dim(where, shape, tuple(offset + i for i in kept))


def _fill(x: Any, value: Any) -> Any:
    return lax.full_like(x, value, aval_of(x).dtype)


def _isnan(x: Any) -> Any:
    return lax.ne(x, x)


def _moveaxes_last(x: Any, axes: tuple[int, ...]) -> Any:
    """`x` with `axes` moved to the end and flattened into one axis."""
    shape = _shape(x)
    kept = [i for i in range(len(shape)) if i not in axes]
    x = lax.transpose(x, (*kept, *axes))
    return lax.reshape(x, (*(shape[i] for i in kept), _count(shape, axes)))


# --- the generic reduction -------------------------------------------------------------
class _Monoid(NamedTuple):
    reduce: Callable[[Any, tuple[int, ...]], Any]
    combine: Callable[[Any, Any], Any]
    identity: Callable[[np.dtype], Any]


_SUM = _Monoid(lax.reduce_sum, lax.add, lambda dtype: 0)
_PROD = _Monoid(lax.reduce_prod, lax.mul, lambda dtype: 1)
_MAX = _Monoid(lax.reduce_max, lax.max, _lowest)
_MIN = _Monoid(lax.reduce_min, lax.min, _highest)
_ALL = _Monoid(lax.reduce_and, lax.bitwise_and, lambda dtype: True)
_ANY = _Monoid(lax.reduce_or, lax.bitwise_or, lambda dtype: False)
# Sums and products computed in bool (dtype=bool) are `any` and `all`.
_IN_BOOL = {_SUM: _ANY, _PROD: _ALL}
# NumPy's names in its "no identity" message.
_UFUNC_NAMES = {"max": "maximum", "min": "minimum", "nanmax": "maximum", "nanmin": "minimum",
                "ptp": "maximum"}


def _reduction(name: str, monoid: _Monoid, a: Any, axis: Any, dtype: Any, out: Any,
               keepdims: bool, initial: Any, where: Any, *, has_identity: bool = True,
               promote_integers: bool = False, upcast_f16: bool = False,
               to_numeric: bool = False) -> Any:
    _check_out(name, out)
    a = _asarray(name, a)
    shape = _shape(a)
    axes = _axes(axis, len(shape))
    if not has_identity and initial is None:
        if where is not None:
            raise ValueError(f"reduction operation {name} does not have an identity, so to "
                             "use a where mask one has to specify 'initial'")
        if builtins.any(shape[d] == 0 for d in axes):
            raise ValueError(f"zero-size array to reduction operation "
                             f"{_UFUNC_NAMES.get(name, name)} which has no identity")
    in_dtype = aval_of(a).dtype
    if to_numeric and in_dtype == np.bool_:
        in_dtype = default_int_dtype()
    if dtype is not None:
        result_dtype = canonicalize_user_dtype(dtype, name)
    else:
        result_dtype = _promote_integer(in_dtype) if promote_integers else in_dtype
    computation = _upcast_f16(result_dtype) if upcast_f16 else result_dtype
    a = lax.convert_element_type(a, computation)
    if computation == np.bool_:
        monoid = _IN_BOOL.get(monoid, monoid)
    if where is not None:
        a = lax.select(_broadcast_mask(name, where, shape), a,
                       _fill(a, monoid.identity(computation)))
    result = monoid.reduce(a, axes)
    if initial is not None:
        start = lax.convert_element_type(asarray_internal(initial), computation)
        if _shape(start) != ():
            raise ValueError(f"{name}: initial value must be a scalar, got an array of shape "
                             f"{_shape(start)}")
        result = monoid.combine(lax.broadcast_in_dim(start, _shape(result), ()), result)
    if keepdims:
        result = lax.expand_dims(result, axes)
    return lax.convert_element_type(result, result_dtype)


@eager_jit(*_STATIC)
def sum(a: Any, axis: Any = None, dtype: Any = None, out: None = None,  # noqa: A001
        keepdims: bool = False, initial: Any = None, where: Any = None,
        promote_integers: bool = True) -> Any:
    """Sum over `axis` (None: all axes; an int or a tuple). Bools and integers narrower
    than the default integer are summed in it unless `promote_integers=False`.

    >>> sum(np.float32([[1, 2], [3, 4]]), axis=0)
    Array([4., 6.], dtype=float32)
    >>> sum(np.array([True, True, False]))
    Array(2, dtype=int32)
    """
    return _reduction("sum", _SUM, a, axis, dtype, out, keepdims, initial, where,
                      promote_integers=promote_integers, upcast_f16=True, to_numeric=True)


@eager_jit(*_STATIC)
def prod(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
         keepdims: bool = False, initial: Any = None, where: Any = None,
         promote_integers: bool = True) -> Any:
    """Product over `axis` (1 over an empty axis), with `sum`'s dtype rules.

    >>> prod(np.int32([[1, 2], [3, 4]]), axis=1)
    Array([ 2, 12], dtype=int32)
    """
    return _reduction("prod", _PROD, a, axis, dtype, out, keepdims, initial, where,
                      promote_integers=promote_integers, upcast_f16=True, to_numeric=True)


@eager_jit(*_STATIC)
def max(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,  # noqa: A001
        initial: Any = None, where: Any = None) -> Any:
    """Maximum over `axis`; NaN if the slice holds a NaN. Empty slices need `initial`
    (and so does `where`).

    >>> max(np.float32([[1, 5], [3, 4]]), axis=1)
    Array([5., 4.], dtype=float32)
    """
    return _reduction("max", _MAX, a, axis, None, out, keepdims, initial, where,
                      has_identity=False)


@eager_jit(*_STATIC)
def min(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,  # noqa: A001
        initial: Any = None, where: Any = None) -> Any:
    """Minimum over `axis`; NaN if the slice holds a NaN.

    >>> min(np.int32([[1, 5], [3, 4]]), axis=0)
    Array([1, 4], dtype=int32)
    """
    return _reduction("min", _MIN, a, axis, None, out, keepdims, initial, where,
                      has_identity=False)


amax = max
amin = min


def _truth(a: Any) -> Any:
    a = asarray_internal(a)
    return a if aval_of(a).dtype == np.bool_ else lax.ne(a, lax.full_like(a, 0))


@eager_jit(*_STATIC)
def all(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,  # noqa: A001
        *, where: Any = None) -> Any:
    """Whether every element over `axis` is true (True over an empty axis).

    >>> all(np.int32([[1, 0], [2, 3]]), axis=1)
    Array([False,  True], dtype=bool)
    """
    check_arraylike("all", a)
    return _reduction("all", _ALL, _truth(a), axis, None, out, keepdims, None, where)


@eager_jit(*_STATIC)
def any(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,  # noqa: A001
        *, where: Any = None) -> Any:
    """Whether some element over `axis` is true (False over an empty axis).

    >>> any(np.float32([0, 0.5]))
    Array(True, dtype=bool)
    """
    check_arraylike("any", a)
    return _reduction("any", _ANY, _truth(a), axis, None, out, keepdims, None, where)


@eager_jit(*_STATIC)
def ptp(a: Any, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
    """Peak to peak: `max - min` over `axis`.

    >>> ptp(np.int32([[1, 7], [4, 2]]), axis=0)
    Array([3, 5], dtype=int32)
    """
    _check_out("ptp", out)
    return lax.sub(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


@eager_jit(*_STATIC)
def count_nonzero(a: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """The number of nonzero elements over `axis`, in the default integer dtype.

    >>> count_nonzero(np.float32([[0, 1], [2, 3]]), axis=0)
    Array([1, 2], dtype=int32)
    """
    check_arraylike("count_nonzero", a)
    return sum(_truth(a), axis, dtype=default_int_dtype(), keepdims=keepdims)


# --- means and variances ---------------------------------------------------------------
def _normalizer(name: str, a: Any, axes: tuple[int, ...], where: Any, keepdims: bool,
                dtype: np.dtype) -> Any:
    """The number of elements each slice averages over, as `dtype`."""
    shape = _shape(a)
    if where is None:
        out_shape = _kept_shape(shape, axes, keepdims)
        return lax.full(out_shape, _count(shape, axes), dtype)
    mask = _broadcast_mask(name, where, shape)
    return sum(mask, axes, dtype=dtype, keepdims=keepdims)


@eager_jit(*_STATIC)
def mean(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
         keepdims: bool = False, *, where: Any = None) -> Any:
    """Arithmetic mean over `axis` (NaN over an empty axis); integers and bools give
    the default float.

    >>> mean(np.float32([[1, 2], [3, 5]]), axis=1)
    Array([1.5, 4. ], dtype=float32)
    """
    _check_out("mean", out)
    a = _asarray("mean", a)
    axes = _axes(axis, len(_shape(a)))
    result_dtype = (_to_inexact(aval_of(a).dtype) if dtype is None
                    else canonicalize_user_dtype(dtype, "mean"))
    computation = _upcast_f16(result_dtype)
    total = sum(a, axes, dtype=computation, keepdims=keepdims, where=where)
    count = _normalizer("mean", a, axes, where, keepdims, computation)
    return lax.convert_element_type(lax.div(total, count), result_dtype)


def _var_dtypes(name: str, a_dtype: np.dtype, dtype: Any) -> tuple[np.dtype, np.dtype]:
    """(computation dtype, result dtype): complex input gives a real variance."""
    if dtype is not None:
        dtype = canonicalize_user_dtype(dtype, name)
        if a_dtype.kind == "c" and dtype.kind != "c":
            raise ValueError(f"{name}: a real dtype ({dtype}) for the variance of complex "
                             f"values ({a_dtype}) is not supported")
        return _upcast_f16(dtype), dtype
    if a_dtype.kind in "fc" or a_dtype.name == "bfloat16":
        return _upcast_f16(a_dtype), _real_dtype(a_dtype)
    return default_float_dtype(), default_float_dtype()


def _correction(name: str, ddof: Any, correction: Any) -> Any:
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError(f"{name}: ddof and correction can't be provided simultaneously")
    return correction


def _abs2(centered: Any) -> Any:
    if aval_of(centered).dtype.kind == "c":
        return lax.real(lax.mul(centered, lax.conj(centered)))
    return lax.mul(centered, centered)


@eager_jit(*_STATIC)
def var(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: Any = 0,
        keepdims: bool = False, *, where: Any = None, mean: Any = None,
        correction: Any = None) -> Any:
    """Variance over `axis`, dividing by N - ddof (`correction` is the array-API name
    for ddof). Complex input gives a real variance. `mean`, if given, is used as the
    mean of `a` (shaped as with keepdims=True) instead of computing it.

    >>> var(np.float32([1, 2, 3, 4]))
    Array(1.25, dtype=float32)
    >>> var(np.float32([1, 2, 3, 4]), ddof=1)
    Array(1.6666667, dtype=float32)
    """
    _check_out("var", out)
    ddof = _correction("var", ddof, correction)
    a = _asarray("var", a)
    computation, result_dtype = _var_dtypes("var", aval_of(a).dtype, dtype)
    a = lax.convert_element_type(a, computation)
    axes = _axes(axis, len(_shape(a)))
    centered = _centered("var", a, axes, mean, where, computation)
    squares = _abs2(centered)
    real = aval_of(squares).dtype
    count = _normalizer("var", a, axes, where, keepdims, real)
    count = lax.sub(count, lax.convert_element_type(asarray_internal(ddof), real))
    total = sum(squares, axes, keepdims=keepdims, where=where)
    return lax.convert_element_type(lax.div(total, count), result_dtype)


@eager_jit(*_STATIC)
def std(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: Any = 0,
        keepdims: bool = False, *, where: Any = None, mean: Any = None,
        correction: Any = None) -> Any:
    """Standard deviation: the square root of `var` (same arguments).

    >>> std(np.float32([1, 3]))
    Array(1., dtype=float32)
    >>> std(np.float32([1, 3]), mean=np.float32(1))  # deviations from a given mean
    Array(1.4142135, dtype=float32)
    """
    _check_out("std", out)
    return lax.sqrt(var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean,
                        correction=correction))


def _centered(name: str, a: Any, axes: tuple[int, ...], given_mean: Any, where: Any,
              computation: np.dtype) -> Any:
    """`a` minus its mean over `axes`, or minus `given_mean`, which must broadcast to the
    shape of a keepdims=True mean (NumPy's and JAX's rule)."""
    if given_mean is None:
        return lax.sub(a, mean(a, axes, computation, keepdims=True, where=where))
    given = lax.convert_element_type(_asarray(name, given_mean), computation)
    shape, g_shape = _shape(a), _shape(given)
    kept = tuple(1 if d in axes else n for d, n in enumerate(shape))
    lead = len(kept) - len(g_shape)
    if lead < 0 or builtins.any(g not in (1, k) for g, k in zip(g_shape, kept[lead:])):
        raise ValueError(f"{name}: the mean given has shape {g_shape}, which does not "
                         f"broadcast to {kept}, the shape of a mean over axes {axes} with "
                         "keepdims=True")
    squeezed = [i for i, g in enumerate(g_shape) if g == 1 and shape[lead + i] != 1]
    given = lax.reshape(given, tuple(g for i, g in enumerate(g_shape) if i not in squeezed))
    dims = tuple(lead + i for i in range(len(g_shape)) if i not in squeezed)
    return lax.sub(a, lax.broadcast_in_dim(given, shape, dims))


# --- NaN-ignoring reductions --------------------------------------------------------------
def _replace_nan(a: Any, value: Any) -> Any:
    return lax.select(_isnan(a), _fill(a, value), a) if _is_inexact(a) else a


@eager_jit(*_STATIC)
def nansum(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
           keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    """`sum` treating NaNs as zero.

    >>> nansum(np.float32([1, np.nan, 2]))
    Array(3., dtype=float32)
    """
    a = _asarray("nansum", a)
    return sum(_replace_nan(a, 0), axis, dtype, out, keepdims, initial, where)


@eager_jit(*_STATIC)
def nanprod(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
    """`prod` treating NaNs as one.

    >>> nanprod(np.float32([2, np.nan, 3]))
    Array(6., dtype=float32)
    """
    a = _asarray("nanprod", a)
    return prod(_replace_nan(a, 1), axis, dtype, out, keepdims, initial, where)


def _nan_extremum(name: str, reduce: Callable, identity: Callable, a: Any, axis: Any,
                  out: Any, keepdims: bool, initial: Any, where: Any) -> Any:
    _check_out(name, out)
    a = _asarray(name, a)
    if not _is_inexact(a):
        return reduce(a, axis, None, keepdims, initial, where)
    nan = _isnan(a)
    result = reduce(lax.select(nan, _fill(a, identity(aval_of(a).dtype)), a), axis, None,
                    keepdims, initial, where)
    if initial is None:
        # Like NumPy, a slice of NaNs alone has a NaN extremum.
        all_nan = all(nan, axis, keepdims=keepdims, where=where)
        result = lax.select(all_nan, _fill(result, np.nan), result)
    return result


@eager_jit(*_STATIC)
def nanmax(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    """`max` ignoring NaNs (NaN where a slice is all NaN).

    >>> nanmax(np.float32([[1, np.nan], [np.nan, np.nan]]), axis=1)
    Array([ 1., nan], dtype=float32)
    """
    return _nan_extremum("nanmax", max, _lowest, a, axis, out, keepdims, initial, where)


@eager_jit(*_STATIC)
def nanmin(a: Any, axis: Any = None, out: None = None, keepdims: bool = False,
           initial: Any = None, where: Any = None) -> Any:
    """`min` ignoring NaNs (NaN where a slice is all NaN).

    >>> nanmin(np.float32([3, np.nan, 2]))
    Array(2., dtype=float32)
    """
    return _nan_extremum("nanmin", min, _highest, a, axis, out, keepdims, initial, where)


def _nan_mask_and(name: str, a: Any, where: Any) -> Any:
    """The mask of the non-NaN elements, restricted to `where`."""
    keep = lax.bitwise_not(_isnan(a))
    if where is not None:
        keep = lax.bitwise_and(keep, _broadcast_mask(name, where, _shape(a)))
    return keep


@eager_jit(*_STATIC)
def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: None = None,
            keepdims: bool = False, where: Any = None) -> Any:
    """`mean` of the non-NaN elements (NaN where there are none).

    >>> nanmean(np.float32([1, np.nan, 2]))
    Array(1.5, dtype=float32)
    """
    _check_out("nanmean", out)
    a = _asarray("nanmean", a)
    if not _is_inexact(a):
        return mean(a, axis, dtype, None, keepdims, where=where)
    return mean(_replace_nan(a, 0), axis, dtype, None, keepdims,
                where=_nan_mask_and("nanmean", a, where))


@eager_jit(*_STATIC)
def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: Any = 0,
           keepdims: bool = False, where: Any = None, mean: Any = None) -> Any:
    """`var` of the non-NaN elements (NaN where fewer than ddof + 1 remain); `mean`, if
    given, replaces their mean.

    >>> nanvar(np.float32([1, np.nan, 3]))
    Array(1., dtype=float32)
    """
    _check_out("nanvar", out)
    a = _asarray("nanvar", a)
    if not _is_inexact(a):
        return var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean)
    computation, result_dtype = _var_dtypes("nanvar", aval_of(a).dtype, dtype)
    a = lax.convert_element_type(a, computation)
    axes = _axes(axis, len(_shape(a)))
    keep = _nan_mask_and("nanvar", a, where)
    a = _replace_nan(a, 0)
    centered = _centered("nanvar", a, axes, mean, keep, computation)
    squares = _abs2(centered)
    real = aval_of(squares).dtype
    count = sum(keep, axes, dtype=real, keepdims=keepdims)
    count = lax.sub(count, lax.convert_element_type(asarray_internal(ddof), real))
    total = sum(squares, axes, keepdims=keepdims, where=keep)
    empty = lax.le(count, _fill(count, 0))
    # The safe divisor keeps the gradient of the masked-out branch finite.
    result = lax.div(total, lax.select(empty, _fill(count, 1), count))
    result = lax.select(empty, _fill(result, np.nan), result)
    return lax.convert_element_type(result, result_dtype)


@eager_jit(*_STATIC)
def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: None = None, ddof: Any = 0,
           keepdims: bool = False, where: Any = None, mean: Any = None) -> Any:
    """The square root of `nanvar` (same arguments).

    >>> nanstd(np.float32([1, np.nan, 3]))
    Array(1., dtype=float32)
    """
    _check_out("nanstd", out)
    return lax.sqrt(nanvar(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean))


# --- argmax and argmin -----------------------------------------------------------------------
def _arg_extremum(name: str, lax_fn: Callable, a: Any, axis: Any, out: Any,
                  keepdims: bool | None) -> Any:
    _check_out(name, out)
    a = _asarray(name, a)
    shape = _shape(a)
    if axis is None:
        a, reduced = lax.reshape(a, (_count(shape, tuple(range(len(shape)))),)), 0
        keep_axes = tuple(range(len(shape)))
    else:
        reduced = canonicalize_axis(axis, len(shape))
        keep_axes = (reduced,)
    if _shape(a)[reduced] == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    result = lax_fn(a, reduced, default_int_dtype())
    return lax.expand_dims(result, keep_axes) if keepdims else result


@eager_jit(*_STATIC)
def argmax(a: Any, axis: Any = None, out: None = None, keepdims: bool | None = None) -> Any:
    """Index of the maximum along `axis` (of the flattened array if None): the first on
    ties, the first NaN if there is one.

    >>> argmax(np.float32([[1, 7, 7], [9, 2, 3]]), axis=1)
    Array([1, 0], dtype=int32)
    """
    return _arg_extremum("argmax", lax.argmax, a, axis, out, keepdims)


@eager_jit(*_STATIC)
def argmin(a: Any, axis: Any = None, out: None = None, keepdims: bool | None = None) -> Any:
    """Index of the minimum along `axis`: the first on ties, the first NaN if any.

    >>> argmin(np.int32([3, 1, 1]))
    Array(1, dtype=int32)
    """
    return _arg_extremum("argmin", lax.argmin, a, axis, out, keepdims)


def _nan_arg_extremum(name: str, arg_fn: Callable, fill: Callable, a: Any, axis: Any,
                      out: Any, keepdims: bool | None) -> Any:
    _check_out(name, out)
    a = _asarray(name, a)
    if not _is_inexact(a):
        return arg_fn(a, axis, keepdims=keepdims)
    nan = _isnan(a)
    result = arg_fn(lax.select(nan, _fill(a, fill(aval_of(a).dtype)), a), axis,
                    keepdims=keepdims)
    # As in JAX, an all-NaN slice gives -1 (NumPy raises, which a traced value cannot).
    all_nan = all(nan, axis, keepdims=bool(keepdims))
    return lax.select(all_nan, _fill(result, -1), result)


@eager_jit(*_STATIC)
def nanargmax(a: Any, axis: Any = None, out: None = None, keepdims: bool | None = None
              ) -> Any:
    """`argmax` ignoring NaNs; -1 for a slice of NaNs alone.

    >>> nanargmax(np.float32([1, np.nan, 3]))
    Array(2, dtype=int32)
    """
    return _nan_arg_extremum("nanargmax", argmax, _lowest, a, axis, out, keepdims)


@eager_jit(*_STATIC)
def nanargmin(a: Any, axis: Any = None, out: None = None, keepdims: bool | None = None
              ) -> Any:
    """`argmin` ignoring NaNs; -1 for a slice of NaNs alone.

    >>> nanargmin(np.float32([np.nan, 3, 1]))
    Array(2, dtype=int32)
    """
    return _nan_arg_extremum("nanargmin", argmin, _highest, a, axis, out, keepdims)


# --- cumulative reductions -----------------------------------------------------------------
def _cumulative(name: str, lax_fn: Callable, a: Any, axis: Any, dtype: Any, out: Any,
                nan_fill: Any = None, promote_integers: bool = False) -> Any:
    _check_out(name, out)
    a = _asarray(name, a)
    if axis is None or _shape(a) == ():
        a = lax.reshape(a, (_count(_shape(a), tuple(range(len(_shape(a))))),))
    axis = canonicalize_axis(0 if axis is None else axis, len(_shape(a)))
    if nan_fill is not None:
        a = _replace_nan(a, nan_fill)
    result_dtype = aval_of(a).dtype if dtype is None else canonicalize_user_dtype(dtype, name)
    if dtype is not None and result_dtype == np.bool_:
        a = _truth(a)
    # Booleans accumulate as integers (lax has no boolean cumsum); dtype=bool casts back.
    accumulate = result_dtype
    if accumulate == np.bool_ or dtype is None and promote_integers:
        accumulate = _promote_integer(accumulate)
    result = lax_fn(lax.convert_element_type(a, accumulate), axis)
    return result if dtype is None else lax.convert_element_type(result, result_dtype)


@eager_jit(*_STATIC)
def cumsum(a: Any, axis: Any = None, dtype: Any = None, out: None = None) -> Any:
    """Running sums along `axis` (of the flattened array if None). Bools sum as the
    default integer; other integers keep their dtype.

    >>> cumsum(np.int32([[1, 2], [3, 4]]), axis=0)
    Array([[1, 2],
           [4, 6]], dtype=int32)
    """
    return _cumulative("cumsum", lax.cumsum, a, axis, dtype, out)


@eager_jit(*_STATIC)
def cumprod(a: Any, axis: Any = None, dtype: Any = None, out: None = None) -> Any:
    """Running products along `axis` (of the flattened array if None).

    >>> cumprod(np.float32([1, 2, 3]))
    Array([1., 2., 6.], dtype=float32)
    """
    return _cumulative("cumprod", lax.cumprod, a, axis, dtype, out)


@eager_jit(*_STATIC)
def nancumsum(a: Any, axis: Any = None, dtype: Any = None, out: None = None) -> Any:
    """`cumsum` treating NaNs as zero.

    >>> nancumsum(np.float32([1, np.nan, 2]))
    Array([1., 1., 3.], dtype=float32)
    """
    return _cumulative("nancumsum", lax.cumsum, a, axis, dtype, out, nan_fill=0)


@eager_jit(*_STATIC)
def nancumprod(a: Any, axis: Any = None, dtype: Any = None, out: None = None) -> Any:
    """`cumprod` treating NaNs as one.

    >>> nancumprod(np.float32([2, np.nan, 3]))
    Array([2., 2., 6.], dtype=float32)
    """
    return _cumulative("nancumprod", lax.cumprod, a, axis, dtype, out, nan_fill=1)


def _array_api_cumulative(name: str, lax_fn: Callable, identity: int, x: Any, axis: Any,
                          dtype: Any, include_initial: bool) -> Any:
    x = _asarray(name, x)
    rank = len(_shape(x))
    if rank == 0:
        raise ValueError(f"{name}: the input must have at least one dimension, got a scalar")
    if axis is None:
        if rank > 1:
            raise ValueError(f"{name}: the input has rank {rank}, so axis must be given "
                             "(it is optional only for one-dimensional arrays)")
        axis = 0
    axis = canonicalize_axis(axis, rank)
    result = _cumulative(name, lax_fn, x, axis, dtype, None, promote_integers=True)
    if include_initial:
        shape = list(_shape(result))
        shape[axis] = 1
        start = lax.full(tuple(shape), identity, aval_of(result).dtype)
        result = lax.concatenate([start, result], axis)
    return result


@eager_jit(*_STATIC)
def cumulative_sum(x: Any, /, *, axis: Any = None, dtype: Any = None,
                   include_initial: bool = False) -> Any:
    """The array API's cumulative sum: like `cumsum`, but integers widen as in `sum`,
    `axis` is required beyond one dimension, and `include_initial` prepends a zero.

    >>> cumulative_sum(np.int8([1, 2, 3]), include_initial=True)
    Array([0, 1, 3, 6], dtype=int32)
    """
    return _array_api_cumulative("cumulative_sum", lax.cumsum, 0, x, axis, dtype,
                                 include_initial)


@eager_jit(*_STATIC)
def cumulative_prod(x: Any, /, *, axis: Any = None, dtype: Any = None,
                    include_initial: bool = False) -> Any:
    """The array API's cumulative product (`include_initial` prepends a one).

    >>> cumulative_prod(np.float32([2, 3]), include_initial=True)
    Array([1., 2., 6.], dtype=float32)
    """
    return _array_api_cumulative("cumulative_prod", lax.cumprod, 1, x, axis, dtype,
                                 include_initial)


# --- quantiles -------------------------------------------------------------------------------
def _take_last(sorted_x: Any, index: Any) -> Any:
    """sorted_x[..., index] for integer `index` of shape (nq, *batch, 1): a masked sum,
    which gathers with traced indices and differentiates like a gather."""
    n = _shape(sorted_x)[-1]
    shape = (*_shape(index)[:-1], n)
    positions = lax.broadcasted_iota(aval_of(index).dtype, shape, len(shape) - 1)
    hit = lax.eq(lax.broadcast_in_dim(index, shape, tuple(range(len(shape)))), positions)
    values = lax.broadcast_in_dim(sorted_x, shape, tuple(range(1, len(shape))))
    return lax.reduce_sum(lax.select(hit, values, _fill(values, 0)), (len(shape) - 1,))


def _quantile(name: str, a: Any, q: Any, axis: Any, out: Any, method: str, keepdims: bool,
              ignore_nan: bool, weights: Any = None) -> Any:
    _check_out(name, out)
    check_arraylike(name, a, q)
    if method not in _QUANTILE_METHODS:
        raise ValueError(f"{name}: method must be one of {_QUANTILE_METHODS}, got {method!r}")
    if weights is not None and method != "inverted_cdf":
        raise ValueError(f"{name}: only method 'inverted_cdf' supports weights, got "
                         f"method={method!r}")
    if method == "inverted_cdf":
        return _inverted_cdf(name, a, q, axis, keepdims, ignore_nan, weights)
    a, q = promote_dtypes_inexact(asarray_internal(a), asarray_internal(q))
    a = lax.convert_element_type(a, aval_of(a).dtype)
    dtype = aval_of(a).dtype
    if dtype.kind == "c":
        raise ValueError(f"{name} does not support complex input, as the operation is "
                         "poorly defined")
    q_shape = _shape(q)
    if len(q_shape) > 1:
        raise ValueError(f"{name}: q must have rank <= 1, got shape {q_shape}")
    shape = _shape(a)
    axes = _axes(axis, len(shape))
    n = _count(shape, axes)
    x = lax.sort(_moveaxes_last(a, axes), dimension=-1)  # NaNs sort last
    batch = _shape(x)[:-1]
    # Positions in float32 at least: half precision cannot index large slices exactly.
    pos_dtype = _upcast_f16(dtype)
    nq = math.prod(q_shape)
    qs = lax.convert_element_type(lax.reshape(q, (nq,)), pos_dtype)
    full = (nq, *batch, 1)
    qs = lax.broadcast_in_dim(qs, full, (0,))
    nan = _isnan(x)
    if ignore_nan:
        count = lax.reduce_sum(lax.convert_element_type(lax.bitwise_not(nan), pos_dtype),
                               (len(batch),))
        count = lax.broadcast_in_dim(count, full, tuple(range(1, len(full) - 1)))
    else:
        count = lax.full(full, n, pos_dtype)
    last = lax.sub(count, _fill(count, 1))
    pos = lax.mul(qs, last)
    low, high = lax.floor(pos), lax.ceil(pos)
    if method == "nearest":
        # NumPy rounds half-way positions to the even index.
        low = high = lax.round(pos, lax.RoundingMethod.TO_NEAREST_EVEN)
    zero = _fill(pos, 0)
    low = lax.convert_element_type(lax.max(zero, lax.min(low, last)), np.int32)
    high = lax.convert_element_type(lax.max(zero, lax.min(high, last)), np.int32)
    if n == 0:
        result = lax.full((nq, *batch), np.nan, dtype)
    else:
        low_value, high_value = _take_last(x, low), _take_last(x, high)
        weight = lax.convert_element_type(lax.squeeze(lax.sub(pos, lax.floor(pos)), (
            len(full) - 1,)), dtype)
        if method == "linear":
            result = lax.add(lax.mul(low_value, lax.sub(_fill(weight, 1), weight)),
                             lax.mul(high_value, weight))
        elif method == "midpoint":
            result = lax.mul(lax.add(low_value, high_value), _fill(low_value, 0.5))
        else:
            result = {"lower": low_value, "higher": high_value, "nearest": low_value}[method]
        if not ignore_nan:
            # Like NumPy, a NaN anywhere in a slice makes its quantiles NaN.
            any_nan = lax.broadcast_in_dim(lax.reduce_or(nan, (len(batch),)), (nq, *batch),
                                           tuple(range(1, len(batch) + 1)))
            result = lax.select(any_nan, _fill(result, np.nan), result)
    return lax.reshape(result, (*q_shape, *_kept_shape(shape, axes, keepdims)))


def _inverted_cdf(name: str, a: Any, q: Any, axis: Any, keepdims: bool, ignore_nan: bool,
                  weights: Any) -> Any:
    """NumPy's "inverted_cdf" quantile: the first sorted value whose cumulative weight
    reaches q times the total (each weight 1 when `weights` is None)."""
    a, q = promote_dtypes_inexact(asarray_internal(a), asarray_internal(q))
    dtype = aval_of(a).dtype
    if dtype.kind == "c":
        raise ValueError(f"{name} does not support complex input, as the operation is "
                         "poorly defined")
    q_shape, shape = _shape(q), _shape(a)
    if len(q_shape) > 1:
        raise ValueError(f"{name}: q must have rank <= 1, got shape {q_shape}")
    axes = _axes(axis, len(shape))
    w = _quantile_weights(name, weights, shape, axes, dtype)
    x, w = _moveaxes_last(a, axes), _moveaxes_last(w, axes)
    nan = _isnan(x)
    if ignore_nan:
        w = lax.select(nan, _fill(w, 0), w)
    x, w = lax.sort((x, w), dimension=len(_shape(x)) - 1, num_keys=1)  # NaNs sort last
    batch, n = _shape(x)[:-1], _shape(x)[-1]
    nq = math.prod(q_shape)
    if n == 0:
        return lax.full((*q_shape, *_kept_shape(shape, axes, keepdims)), np.nan, dtype)
    cumulative = lax.cumsum(w, len(batch))
    total = lax.slice_in_dim(cumulative, n - 1, n, axis=len(batch))
    full = (nq, *batch, n)
    target = lax.mul(lax.broadcast_in_dim(lax.reshape(q, (nq,)), full, (0,)),
                     lax.broadcast_in_dim(total, full, tuple(range(1, len(full)))))
    below = lax.lt(lax.broadcast_in_dim(cumulative, full, tuple(range(1, len(full)))), target)
    index = lax.reduce_sum(lax.convert_element_type(below, np.int32), (len(full) - 1,))
    index = lax.expand_dims(lax.min(index, lax.full_like(index, n - 1)), (len(full) - 1,))
    result = _take_last(x, index)
    if not ignore_nan:  # as NumPy: a NaN anywhere in a slice makes its quantiles NaN
        any_nan = lax.broadcast_in_dim(lax.reduce_or(nan, (len(batch),)), (nq, *batch),
                                       tuple(range(1, len(batch) + 1)))
        result = lax.select(any_nan, _fill(result, np.nan), result)
    return lax.reshape(result, (*q_shape, *_kept_shape(shape, axes, keepdims)))


def _quantile_weights(name: str, weights: Any, shape: tuple[int, ...], axes: tuple[int, ...],
                      dtype: np.dtype) -> Any:
    """`weights` broadcast to `a`'s shape: given with `a`'s shape, or 1-D along the one
    reduced axis."""
    if weights is None:
        return lax.full(shape, 1, dtype)
    w = lax.convert_element_type(_asarray(name, weights), dtype)
    w_shape = _shape(w)
    if w_shape == shape:
        return w
    if len(axes) == 1 and w_shape == (shape[axes[0]],):
        return lax.broadcast_in_dim(w, shape, axes)
    raise ValueError(f"{name}: weights must have the shape of `a` {shape}, or be 1-D with "
                     f"the length of the reduced axis; got shape {w_shape}")


@eager_jit(*_STATIC)
def quantile(a: Any, q: Any, axis: Any = None, out: None = None,
             overwrite_input: bool = False, method: str = "linear",
             keepdims: bool = False, *, weights: Any = None) -> Any:
    """The `q`-th quantiles (q in [0, 1], a scalar or 1-D) over `axis`; `method` is
    "linear", "lower", "higher", "midpoint", "nearest" or "inverted_cdf" as in NumPy
    (only "inverted_cdf" takes `weights`). A slice holding a NaN has NaN quantiles. The
    result's leading axes are q's.

    >>> quantile(np.float32([1, 2, 3, 4]), np.float32([0.25, 0.5]))
    Array([1.75, 2.5 ], dtype=float32)
    >>> quantile(np.float32([1, 2, 3]), 0.5, weights=np.float32([1, 1, 4]),
    ...          method="inverted_cdf")
    Array(3., dtype=float32)
    """
    return _quantile("quantile", a, q, axis, out, method, keepdims, ignore_nan=False,
                     weights=weights)


@eager_jit(*_STATIC)
def nanquantile(a: Any, q: Any, axis: Any = None, out: None = None,
                overwrite_input: bool = False, method: str = "linear",
                keepdims: bool = False, *, weights: Any = None) -> Any:
    """`quantile` of the non-NaN elements (NaN for a slice of NaNs alone).

    >>> nanquantile(np.float32([1, np.nan, 3]), 0.5)
    Array(2., dtype=float32)
    """
    return _quantile("nanquantile", a, q, axis, out, method, keepdims, ignore_nan=True,
                     weights=weights)


def _percent(name: str, q: Any) -> Any:
    check_arraylike(name, q)
    (q,) = promote_dtypes_inexact(asarray_internal(q))
    return lax.div(q, _fill(q, 100))


@eager_jit(*_STATIC)
def percentile(a: Any, q: Any, axis: Any = None, out: None = None,
               overwrite_input: bool = False, method: str = "linear",
               keepdims: bool = False, *, weights: Any = None, out_sharding: Any = None
               ) -> Any:
    """`quantile` with q in percent, [0, 100].

    >>> percentile(np.float32([1, 2, 3, 4]), 50)
    Array(2.5, dtype=float32)
    """
    check_out_sharding("percentile", out_sharding)
    return quantile(a, _percent("percentile", q), axis, out, overwrite_input, method,
                    keepdims, weights=weights)


@eager_jit(*_STATIC)
def nanpercentile(a: Any, q: Any, axis: Any = None, out: None = None,
                  overwrite_input: bool = False, method: str = "linear",
                  keepdims: bool = False, *, weights: Any = None) -> Any:
    """`nanquantile` with q in percent.

    >>> nanpercentile(np.float32([1, np.nan, 3]), 100)
    Array(3., dtype=float32)
    """
    return nanquantile(a, _percent("nanpercentile", q), axis, out, overwrite_input, method,
                       keepdims, weights=weights)


@eager_jit(*_STATIC)
def median(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
           keepdims: bool = False) -> Any:
    """The median over `axis` (the midpoint of the two middle values for even sizes).

    >>> median(np.int32([3, 1, 4, 2]))
    Array(2.5, dtype=float32)
    """
    return quantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims)


@eager_jit(*_STATIC)
def nanmedian(a: Any, axis: Any = None, out: None = None, overwrite_input: bool = False,
              keepdims: bool = False) -> Any:
    """The median of the non-NaN elements.

    >>> nanmedian(np.float32([3, np.nan, 1]))
    Array(2., dtype=float32)
    """
    return nanquantile(a, 0.5, axis, out, overwrite_input, "midpoint", keepdims)


# --- weighted average ------------------------------------------------------------------------
@eager_jit(*_STATIC)
def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False,
            keepdims: bool = False) -> Any:
    """The weighted mean over `axis`. `weights` has a's shape, or is 1-D with the
    length of the single `axis`. With `returned`, also the sum of the weights
    (broadcast to the result's shape).

    >>> average(np.float32([1, 2, 4]), weights=np.float32([1, 1, 2]))
    Array(2.75, dtype=float32)
    """
    if weights is None:
        check_arraylike("average", a)
        (a,) = promote_dtypes_inexact(asarray_internal(a))
        a = lax.convert_element_type(a, aval_of(a).dtype)
        axes = _axes(axis, len(_shape(a)))
        avg = mean(a, axes, keepdims=keepdims)
        weight_sum = lax.full(_shape(avg), _count(_shape(a), axes), aval_of(avg).dtype)
    else:
        check_arraylike("average", a, weights)
        a, weights = promote_dtypes_inexact(asarray_internal(a), asarray_internal(weights))
        a_shape, w_shape = _shape(a), _shape(weights)
        axes = _axes(axis, len(a_shape))
        if a_shape != w_shape:
            weights = _weights_along_axis(axis, axes, a_shape, weights)
        weight_sum = sum(weights, axes, keepdims=keepdims)
        avg = lax.div(sum(lax.mul(a, weights), axes, keepdims=keepdims), weight_sum)
    if returned:
        if _shape(weight_sum) != _shape(avg):
            weight_sum = lax.broadcast_in_dim(weight_sum, _shape(avg), ())
        return avg, weight_sum
    return avg


def _weights_along_axis(axis: Any, axes: tuple[int, ...], a_shape: tuple[int, ...],
                        weights: Any) -> Any:
    """1-D `weights` laid along the single reduced axis of an array of `a_shape`."""
    w_shape = _shape(weights)
    context = f"the shapes of a {a_shape} and weights {w_shape} differ"
    if len(w_shape) != 1:
        raise ValueError(f"average: 1-D weights expected when {context}")
    if axis is None:
        raise ValueError(f"average: axis must be specified when {context}")
    if len(axes) != 1 or isinstance(axis, (tuple, list)):
        raise ValueError(f"average: a single axis is expected when {context}")
    if w_shape[0] != a_shape[axes[0]]:
        raise ValueError(f"average: length of weights {w_shape} not compatible with axis "
                         f"{axis} of a {a_shape}")
    return lax.broadcast_in_dim(weights, a_shape, axes)
