"""Array creation (jax.numpy's names and dtype rules): from data, filled, ranges,
grids, triangles and diagonals.

Default dtypes follow JAX: floats are float32 and integers int32 unless x64 is
enabled; a Python scalar keeps its weak type (`full((2,), 1.0)` is weak float32).

>>> arange(4)
Array([0, 1, 2, 3], dtype=int32)
>>> eye(2, k=1)
Array([[0., 1.],
       [0., 0.]], dtype=float32)
"""

from __future__ import annotations

import builtins
import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from lamella import lax
from lamella.core import dtypes as core_dtypes
from lamella.core import vmap
from lamella.core.shape_poly import DimExpr
from lamella.core.trace import Tracer, aval_of
from lamella.lax import runtime
from lamella.lax.explicit_sharding import like_sharding
from lamella.numpy import ufuncs
from lamella.numpy.contractions import diagonal
from lamella.numpy.dtypes import canonicalize_user_dtype, result_type
from lamella.numpy.manipulation import broadcast_to
from lamella.numpy.placement import copy_array, place
from lamella.numpy.util import (
    asarray_internal,
    canonicalize_axis,
    concrete_value,
    default_float_dtype,
    default_int_dtype,
    dim_max,
    ndim,
)

__all__ = [
    "arange", "array", "array_equal", "array_equiv", "asarray", "copy", "diag",
    "diag_indices", "diag_indices_from", "diagflat", "empty", "empty_like", "eye",
    "frombuffer", "fromfunction", "full", "full_like", "geomspace", "identity", "indices",
    "linspace", "logspace", "meshgrid", "mgrid", "ogrid", "ones", "ones_like", "tri",
    "tril", "tril_indices", "tril_indices_from", "triu", "triu_indices",
    "triu_indices_from", "zeros", "zeros_like",
]


def _dtype_or(dtype: Any, default: np.dtype, name: str | None = None) -> np.dtype:
    # `name`: the function the caller asked for `dtype`, which warns (as JAX does)
    # when x64 is off and it is a 64-bit dtype.
    if dtype is None:
        return default
    if name is None:
        return core_dtypes.canonicalize_dtype(np.dtype(dtype))
    return canonicalize_user_dtype(dtype, name)


def _shape_tuple(shape: Any, name: str) -> tuple[int, ...]:
    if isinstance(shape, (tuple, list)):  # np.ndim cannot read symbolic dimensions
        shape = tuple(shape)
    else:
        shape = (shape,) if type(shape) is DimExpr or np.ndim(shape) == 0 else tuple(shape)
    try:
        # A symbolic dimension (shape-polymorphic export) is a size as it is.
        shape = tuple(operator.index(concrete_value(d, f"the shape of {name}"))
                      if type(d) is not DimExpr else d for d in shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be a sequence of integers, got {shape!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"{name}: negative dimensions are not allowed, got shape {shape}")
    return shape


# --- from data -------------------------------------------------------------------------
def _leaves(obj: Any) -> list[Any]:
    if isinstance(obj, (list, tuple)):
        return [leaf for item in obj for leaf in _leaves(item)]
    return [obj]


def array(object: Any, dtype: Any = None, *args: Any, copy: bool = True, order: str = "K",
          ndmin: int = 0, device: Any = None, out_sharding: Any = None) -> Any:
    """An Array from array-like data: arrays, scalars, nested lists and tuples (which may
    hold tracers). Lists take the JAX promotion of their elements, so a list of Python
    floats is float32; a bare Python scalar stays weakly typed. With `copy` (the
    default) an Array argument is copied into a buffer of its own.

    >>> array([1, 2.5])
    Array([1. , 2.5], dtype=float32)
    >>> array([[1, 2]], dtype=np.int8, ndmin=3).shape
    (1, 1, 2)
    """
    if args:
        warnings.warn("Passing the copy, order, and ndmin arguments to lamella.numpy.array "
                      "positionally is deprecated (as in JAX). Use keyword arguments instead.",
                      DeprecationWarning, stacklevel=2)
        if len(args) > 3:
            raise TypeError(f"array() takes at most 5 positional arguments ({2 + len(args)} "
                            "given)")
        values = [copy, order, ndmin]
        values[:len(args)] = args
        copy, order, ndmin = values
    return _array("array", object, dtype, copy, order, ndmin, device, out_sharding)


def _array(name: str, object: Any, dtype: Any, copy: bool | None, order: str | None,
           ndmin: int, device: Any, out_sharding: Any) -> Any:
    if order not in (None, "K", "A", "C"):
        raise NotImplementedError(f"{name}: only C order is supported, got order={order!r}")
    if dtype is not None:
        dtype = canonicalize_user_dtype(dtype, name)
    if isinstance(object, lax.Array) and object.is_deleted():
        # Even when nothing would be converted: handing back a dead Array only moves
        # the error to its first use.
        raise runtime.DeletedArrayError(
            f"{name}: the Array {object.aval.str_short()} has been deleted, either by "
            ".delete() or by donating it to an earlier call; it cannot be used anymore")
    source = object
    if isinstance(object, (list, tuple)):
        leaves = _leaves(object)
        if dtype is None and leaves:
            for leaf in leaves:
                if leaf is None or isinstance(leaf, str):
                    raise TypeError(f"{name}: cannot build an array from "
                                    f"{type(leaf).__name__} elements")
            dtype = result_type(*leaves)
        if not any(isinstance(leaf, (Tracer, DimExpr)) for leaf in leaves):
            object = np.asarray(object, dtype=None if dtype is None else np.dtype(dtype))
    elif type(object) is int and dtype is not None:
        # As JAX (and NumPy): a Python int must fit the requested dtype (OverflowError
        # otherwise), and one that does is taken whole (a uint32 above int32's range).
        object = np.asarray(object, dtype=np.dtype(dtype))
    elif object is None or isinstance(object, str):
        raise TypeError(f"{name}: cannot build an array from {type(object).__name__}")
    elif not isinstance(object, (Tracer, lax.Array, np.ndarray, np.generic, int, float,
                                 complex, bool, DimExpr)):
        if hasattr(object, "__array__"):
            object = np.asarray(object)
        elif hasattr(object, "__dlpack__"):
            object = np.from_dlpack(object)
        else:
            raise TypeError(f"{name}: unsupported input type {type(object).__name__}")
    out = asarray_internal(object, dtype)
    if ndmin > ndim(out):
        out = lax.expand_dims(out, tuple(range(ndmin - ndim(out))))
    if copy and out is source:
        out = copy_array(out)
    return place(out, device, out_sharding, name)


def asarray(a: Any, dtype: Any = None, order: str | None = None, *,
            copy: bool | None = None, device: Any = None, out_sharding: Any = None) -> Any:
    """`a` as an Array (no copy when it already is one of the right dtype, unless
    `copy=True`).

    >>> asarray([True, False]).dtype
    dtype('bool')
    """
    return _array("asarray", a, dtype, copy, order, 0, device, out_sharding)


def copy(a: Any, order: str | None = None) -> Any:
    """A copy of `a`: a new Array with a buffer of its own."""
    return array(a, copy=True, order=order)


def frombuffer(buffer: bytes | Any, dtype: Any = float, count: int = -1,
               offset: int = 0) -> Any:
    """A 1-D Array interpreting a bytes-like buffer (NumPy's frombuffer, then on device).

    >>> frombuffer(b"\\x01\\x02", dtype=np.uint8)
    Array([1, 2], dtype=uint8)
    """
    return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))


# --- filled ----------------------------------------------------------------------------
def _filled(name: str, shape: Any, value: Any, dtype: Any, device: Any,
            out_sharding: Any) -> Any:
    out = lax.full(_shape_tuple(shape, name), value,
                   _dtype_or(dtype, default_float_dtype(), name))
    return place(out, device, out_sharding, name)


def zeros(shape: Any, dtype: Any = None, *, device: Any = None,
          out_sharding: Any = None) -> Any:
    """An array of zeros (float32 by default).

    >>> zeros((2,), np.int32)
    Array([0, 0], dtype=int32)
    """
    return _filled("zeros", shape, 0, dtype, device, out_sharding)


def ones(shape: Any, dtype: Any = None, *, device: Any = None,
         out_sharding: Any = None) -> Any:
    """An array of ones (float32 by default)."""
    return _filled("ones", shape, 1, dtype, device, out_sharding)


def empty(shape: Any, dtype: Any = None, *, device: Any = None,
          out_sharding: Any = None) -> Any:
    """Like `zeros`: XLA has no uninitialised memory, so "empty" arrays are zeros."""
    return _filled("empty", shape, 0, dtype, device, out_sharding)


def full(shape: Any, fill_value: Any, dtype: Any = None, *, device: Any = None,
         out_sharding: Any = None) -> Any:
    """An array of `shape` filled with `fill_value` (broadcast when it is an array).

    >>> full((2,), 1.5)
    Array([1.5, 1.5], dtype=float32, weak_type=True)
    """
    shape = _shape_tuple(shape, "full")
    if dtype is None and isinstance(fill_value, (bool, int, float, complex)):
        return place(lax.full(shape, fill_value), device, out_sharding, "full")  # stays weak
    if dtype is not None:
        dtype = canonicalize_user_dtype(dtype, "full")
    # broadcast_to, not lax.full, so that a weakly typed Array fill stays weak, as in JAX.
    fill = asarray_internal(fill_value, dtype)
    return place(broadcast_to(fill, shape), device, out_sharding, "full")


def _like(name: str, a: Any, fill: Any, dtype: Any, shape: Any) -> Any:
    a = asarray_internal(a)
    aval = aval_of(a)
    shape = aval.shape if shape is None else _shape_tuple(shape, name)
    if dtype is None:  # a weakly typed `a` gives a weakly typed result, as in JAX
        return lax.full_like(a, fill, shape=shape)
    return like_sharding(a, lax.full(shape, fill, _dtype_or(dtype, aval.dtype, name)))


def zeros_like(a: Any, dtype: Any = None, shape: Any = None, *,
               device: Any = None, out_sharding: Any = None) -> Any:
    """Zeros with the shape and dtype (and weak type) of `a`, or the given ones.

    >>> zeros_like(np.ones((2,), np.int8))
    Array([0, 0], dtype=int8)
    """
    return place(_like("zeros_like", a, 0, dtype, shape), device, out_sharding, "zeros_like")


def ones_like(a: Any, dtype: Any = None, shape: Any = None, *,
              device: Any = None, out_sharding: Any = None) -> Any:
    """Ones with the shape and dtype (and weak type) of `a`, or the given ones."""
    return place(_like("ones_like", a, 1, dtype, shape), device, out_sharding, "ones_like")


def empty_like(prototype: Any, dtype: Any = None, shape: Any = None, *,
               device: Any = None) -> Any:
    """Like `zeros_like` (XLA has no uninitialised memory)."""
    return place(_like("empty_like", prototype, 0, dtype, shape), device)


def full_like(a: Any, fill_value: Any, dtype: Any = None, shape: Any = None, *,
              device: Any = None, out_sharding: Any = None) -> Any:
    """An array shaped like `a` (dtype of `a` unless given) filled with `fill_value`.

    >>> full_like(np.zeros(2, np.float16), 3)
    Array([3., 3.], dtype=float16)
    """
    a = asarray_internal(a)
    aval = aval_of(a)
    shape = aval.shape if shape is None else _shape_tuple(shape, "full_like")
    # A Python int is converted straight to the dtype: it may be a valid value there
    # (uint32 above 2**31) that int32, its own canonical dtype, cannot hold.
    fill = fill_value if type(fill_value) is int else asarray_internal(fill_value)
    # A scalar fill takes a's weak type, as in JAX; an array fill is converted to a strong dtype.
    weak = dtype is None and aval.weak_type and ndim(fill) == 0
    dtype = aval.dtype if dtype is None else _dtype_or(dtype, aval.dtype, "full_like")
    fill = lax.convert_element_type(fill, dtype, weak)
    return place(like_sharding(a, broadcast_to(fill, shape)), device, out_sharding, "full_like")


# --- ranges ----------------------------------------------------------------------------
def _concrete_scalar(x: Any, name: str, what: str) -> Any:
    value = concrete_value(x, f"the {what} argument of {name}")
    if value.ndim:
        raise ValueError(f"{name}: {what} must be a scalar, got shape {value.shape}")
    return value.item()


def arange(start: Any, stop: Any = None, step: Any = None, dtype: Any = None, *,
           device: Any = None, out_sharding: Any = None) -> Any:
    """Evenly spaced values in [start, stop) (the bounds must be concrete, as in JAX:
    the length of the result is part of its shape).

    >>> arange(1, 2, 0.25)
    Array([1.  , 1.25, 1.5 , 1.75], dtype=float32)
    """
    if stop is None:  # arange(n) and arange(n, step=k) count from zero
        start, stop = 0, start
    if DimExpr in (type(start), type(stop), type(step)):
        return place(_symbolic_arange(start, stop, step, dtype), device, out_sharding, "arange")
    start, stop = (_concrete_scalar(v, "arange", n) for v, n in ((start, "start"), (stop, "stop")))
    step = 1 if step is None else _concrete_scalar(step, "arange", "step")
    if any(isinstance(a, complex) for a in (start, stop, step)):
        raise TypeError("arange does not accept complex arguments")
    if step == 0:
        raise ValueError("arange: step must not be zero")
    dt = _dtype_or(dtype, core_dtypes.canonicalize_dtype(np.result_type(start, stop, step)),
                   "arange")
    if start == 0 and step == 1 and dt.kind in "iu" and isinstance(stop, int):
        return place(lax.iota(dt, builtins.max(stop, 0)), device, out_sharding, "arange")
    return place(asarray_internal(np.arange(start, stop, step, dtype=dt)), device, out_sharding,
                 "arange")


def _symbolic_arange(start: Any, stop: Any, step: Any, dtype: Any) -> Any:
    """`arange` with a symbolic dimension among its integer bounds: an iota whose
    length is a dimension expression (decided to be >= 0 for every size, or an
    InconclusiveDimensionOperation)."""
    step = 1 if step is None else step
    for what, v in (("start", start), ("stop", stop), ("step", step)):
        if type(v) is not DimExpr and not isinstance(v, (int, np.integer)):
            raise TypeError(f"arange with a symbolic dimension takes integer bounds, got "
                            f"{what}={v!r}")
    if type(step) is DimExpr:
        raise TypeError(f"arange: step must be a constant integer, got the symbolic "
                        f"dimension '{step}'")
    if step == 0:
        raise ValueError("arange: step must not be zero")
    distance = stop - start if step > 0 else start - stop
    count = dim_max(0, distance + abs(step) - 1) // abs(step)
    dt = _dtype_or(dtype, default_int_dtype(), "arange")
    out = lax.iota(dt, count)
    if step != 1:
        out = lax.mul(out, lax.full((count,), step, dt))
    if type(start) is DimExpr or start != 0:
        out = lax.add(out, lax.broadcast_in_dim(asarray_internal(start, dt), (count,), ()))
    return out


def linspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             retstep: bool = False, dtype: Any = None, axis: int = 0, *,
             device: Any = None) -> Any:
    """`num` evenly spaced samples from `start` to `stop` (arrays broadcast; the new
    axis is `axis`). Start and stop may be traced; `num` must be concrete.

    >>> linspace(0, 1, 5)
    Array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
    """
    if type(num) is not DimExpr:  # a symbolic num is refused below, as JAX does
        num = operator.index(concrete_value(num, "the num argument of linspace").item())
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative")
    dt = _dtype_or(dtype, result_type(start, stop, default_float_dtype()), "linspace")
    compute = result_type(dt, default_float_dtype()) if dt.kind in "biu" else dt
    start = lax.convert_element_type(asarray_internal(start), compute)
    stop = lax.convert_element_type(asarray_internal(stop), compute)
    start, stop = ufuncs._broadcast("linspace", start, stop)
    bshape = aval_of(start).shape
    axis = canonicalize_axis(axis, len(bshape) + 1)
    out_shape = (*bshape[:axis], num, *bshape[axis:])
    div = num - 1 if endpoint else num
    expand = (lambda v: lax.broadcast_in_dim(
        v, out_shape, tuple(d for d in range(len(out_shape)) if d != axis)))
    s, e = expand(start), expand(stop)
    step = lax.div(lax.sub(stop, start), lax.full_like(start, builtins.max(div, 1)))
    steps = lax.broadcasted_iota(compute, out_shape, axis)
    out = lax.add(s, lax.mul(steps, expand(step)))
    if endpoint and num > 1:
        # The last sample is exactly `stop`, as NumPy guarantees.
        last = lax.eq(lax.broadcasted_iota(np.int32, out_shape, axis),
                      lax.full(out_shape, num - 1, np.int32))
        out = lax.select(last, e, out)
    if dt.kind in "iu":
        out = lax.floor(out)
    out = lax.convert_element_type(out, dt)
    if retstep:
        return out, lax.convert_element_type(step, dt) if div > 0 else ufuncs._const(step, np.nan)
    return place(out, device)


def logspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
             base: Any = 10.0, dtype: Any = None, axis: int = 0) -> Any:
    """`base ** linspace(start, stop, num)`.

    >>> logspace(0, 2, 3)
    Array([  1.,  10., 100.], dtype=float32)
    """
    dt = _dtype_or(dtype, result_type(start, stop, default_float_dtype()), "logspace")
    compute = result_type(dt, default_float_dtype()) if dt.kind in "biu" else dt
    exponents = linspace(start, stop, num, endpoint, dtype=compute, axis=axis)
    base = lax.convert_element_type(asarray_internal(base), compute)
    base = lax.expand_dims(base, (canonicalize_axis(axis, ndim(base) + 1),)) if ndim(base) else base
    return lax.convert_element_type(ufuncs.power(base, exponents), dt)


def geomspace(start: Any, stop: Any, num: int = 50, endpoint: bool = True,
              dtype: Any = None, axis: int = 0) -> Any:
    """Samples spaced evenly on a log scale from `start` to `stop` (same-sign endpoints;
    negative ones give negative samples, as NumPy).

    >>> geomspace(1, 1000, 4)
    Array([   1.,   10.,  100., 1000.], dtype=float32)
    """
    dt = _dtype_or(dtype, result_type(start, stop, default_float_dtype()), "geomspace")
    compute = result_type(dt, default_float_dtype()) if dt.kind in "biu" else dt
    start = lax.convert_element_type(asarray_internal(start), compute)
    stop = lax.convert_element_type(asarray_internal(stop), compute)
    sign = ufuncs.sign(start)
    log_start, log_stop = ufuncs.log10(ufuncs.absolute(start)), ufuncs.log10(ufuncs.absolute(stop))
    out = logspace(log_start, log_stop, num, endpoint, 10.0, compute, axis)
    s = lax.expand_dims(sign, (canonicalize_axis(axis, ndim(sign) + 1),)) if ndim(sign) else sign
    out = ufuncs.multiply(s, out)
    if num > 0:
        # Pin the endpoints exactly, as NumPy does.
        axis = canonicalize_axis(axis, ndim(out))
        idx = lax.broadcasted_iota(np.int32, aval_of(out).shape, axis)
        first = ufuncs.equal(idx, 0)
        ends = [(first, start)]
        if endpoint and num > 1:
            ends.append((ufuncs.equal(idx, num - 1), stop))
        for mask, value in ends:
            value = lax.expand_dims(value, (axis,)) if ndim(value) else value
            out = ufuncs.where(mask, value, out)
    return lax.convert_element_type(out, dt)


# --- matrices --------------------------------------------------------------------------
def _tri_mask(n: int, m: int, k: int) -> Any:
    rows = lax.broadcasted_iota(np.int32, (n, m), 0)
    cols = lax.broadcasted_iota(np.int32, (n, m), 1)
    return lax.ge(lax.add(rows, lax.full((n, m), k, np.int32)), cols)


def _matrix_size(x: Any, name: str) -> int:
    if type(x) is DimExpr:
        return x
    return operator.index(concrete_value(x, f"the {name}").item())


def eye(N: int, M: int | None = None, k: int = 0, dtype: Any = None, *,
        device: Any = None) -> Any:
    """An N×M matrix with ones on the k-th diagonal.

    >>> eye(2, dtype=np.int32)
    Array([[1, 0],
           [0, 1]], dtype=int32)
    """
    n = _matrix_size(N, "N argument of eye")
    m = n if M is None else _matrix_size(M, "M argument of eye")
    k = _matrix_size(k, "k argument of eye")
    if n < 0 or m < 0:
        raise ValueError(f"eye: negative dimensions are not allowed, got ({n}, {m})")
    rows = lax.broadcasted_iota(np.int32, (n, m), 0)
    cols = lax.broadcasted_iota(np.int32, (n, m), 1)
    on = lax.eq(lax.add(rows, lax.full((n, m), k, np.int32)), cols)
    return place(lax.convert_element_type(on, _dtype_or(dtype, default_float_dtype(), "eye")),
                  device)


def identity(n: int, dtype: Any = None) -> Any:
    """The n×n identity matrix."""
    return eye(n, dtype=dtype)


def tri(N: int, M: int | None = None, k: int = 0, dtype: Any = None) -> Any:
    """Ones at and below the k-th diagonal of an N×M matrix.

    >>> tri(2, dtype=np.int32)
    Array([[1, 0],
           [1, 1]], dtype=int32)
    """
    n = _matrix_size(N, "N argument of tri")
    m = n if M is None else _matrix_size(M, "M argument of tri")
    mask = _tri_mask(n, m, _matrix_size(k, "k argument of tri"))
    return lax.convert_element_type(mask, _dtype_or(dtype, default_float_dtype(), "tri"))


def _triangle(name: str, m: Any, k: int, lower: bool) -> Any:
    m = asarray_internal(m)
    shape = aval_of(m).shape
    if len(shape) < 1:
        raise ValueError(f"{name}: input must have at least 1 dimension, got a scalar")
    if len(shape) == 1:
        m = lax.broadcast_in_dim(m, (shape[0], shape[0]), (1,))
        shape = (shape[0], shape[0])
    k = _matrix_size(k, f"k argument of {name}")
    mask = _tri_mask(shape[-2], shape[-1], k if lower else k - 1)
    if not lower:
        mask = lax.bitwise_not(mask)
    mask = lax.broadcast_in_dim(mask, shape, (len(shape) - 2, len(shape) - 1))
    return lax.select(mask, m, lax.full_like(m, 0))


def tril(m: Any, k: int = 0) -> Any:
    """`m` with the entries above the k-th diagonal zeroed (on the last two axes).

    >>> tril(np.int32([[1, 2], [3, 4]]))
    Array([[1, 0],
           [3, 4]], dtype=int32)
    """
    return _triangle("tril", m, k, lower=True)


def triu(m: Any, k: int = 0) -> Any:
    """`m` with the entries below the k-th diagonal zeroed (on the last two axes)."""
    return _triangle("triu", m, k, lower=False)


def diag(v: Any, k: int = 0) -> Any:
    """The k-th diagonal of a matrix, or a matrix with `v` on its k-th diagonal.

    >>> diag(np.int32([1, 2]))
    Array([[1, 0],
           [0, 2]], dtype=int32)
    >>> diag(np.int32([[1, 2], [3, 4]]), k=1)
    Array([2], dtype=int32)
    """
    v = asarray_internal(v)
    k = _matrix_size(k, "k argument of diag")
    shape = aval_of(v).shape
    if len(shape) == 2:
        return diagonal(v, k)
    if len(shape) != 1:
        raise ValueError(f"diag: input must be 1-D or 2-D, got shape {shape}")
    n = shape[0] + abs(k)
    on = eye(n, k=k, dtype=np.bool_)
    # Row i of the result holds v[i] (k >= 0) or v[i + k] (k < 0).
    # On the k-th diagonal, entry (r, c) holds v[r] when k >= 0 and v[c] when k < 0.
    padded = lax.pad(v, lax.full((), 0, aval_of(v).dtype), [(0, abs(k), 0)])
    spread = lax.broadcast_in_dim(padded, (n, n), (0,) if k >= 0 else (1,))
    return lax.select(on, spread, lax.full_like(spread, 0))


def diagflat(v: Any, k: int = 0) -> Any:
    """A 2-D array with the flattened `v` on its k-th diagonal."""
    v = asarray_internal(v)
    return diag(lax.reshape(v, (int(np.prod(aval_of(v).shape, dtype=np.int64)),)), k)


def tril_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    """Row and column indices of the lower triangle of an n×m matrix (static sizes).

    >>> tril_indices(2)
    (Array([0, 1, 1], dtype=int32), Array([0, 0, 1], dtype=int32))
    """
    rows, cols = np.tril_indices(n, k, m)
    return asarray_internal(rows.astype(default_int_dtype())), asarray_internal(
        cols.astype(default_int_dtype()))


def triu_indices(n: int, k: int = 0, m: int | None = None) -> tuple[Any, Any]:
    """Row and column indices of the upper triangle of an n×m matrix (static sizes)."""
    rows, cols = np.triu_indices(n, k, m)
    return asarray_internal(rows.astype(default_int_dtype())), asarray_internal(
        cols.astype(default_int_dtype()))


def _square_shape(name: str, arr: Any) -> tuple[int, int]:
    shape = aval_of(asarray_internal(arr)).shape
    if len(shape) != 2:
        raise ValueError(f"{name}: input must be 2-D, got shape {shape}")
    return shape


def tril_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    """`tril_indices` for the shape of the 2-D `arr`."""
    n, m = _square_shape("tril_indices_from", arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr: Any, k: int = 0) -> tuple[Any, Any]:
    """`triu_indices` for the shape of the 2-D `arr`."""
    n, m = _square_shape("triu_indices_from", arr)
    return triu_indices(n, k, m)


def diag_indices(n: int, ndim: int = 2) -> tuple[Any, ...]:
    """Indices of the main diagonal of an n×…×n array (`ndim` copies of arange(n)).

    >>> diag_indices(2)
    (Array([0, 1], dtype=int32), Array([0, 1], dtype=int32))
    """
    if n < 0 or ndim < 0:
        raise ValueError(f"diag_indices: n and ndim must be non-negative, got {n}, {ndim}")
    return (lax.iota(default_int_dtype(), n),) * ndim


def diag_indices_from(arr: Any) -> tuple[Any, ...]:
    """`diag_indices` of a square array of any rank."""
    shape = aval_of(asarray_internal(arr)).shape
    if len(shape) < 2 or len(set(shape)) != 1:
        raise ValueError(f"diag_indices_from: input must be square and at least 2-D, got "
                         f"shape {shape}")
    return diag_indices(shape[0], len(shape))


# --- grids -----------------------------------------------------------------------------
def meshgrid(*xi: Any, copy: bool = True, sparse: bool = False,
             indexing: str = "xy") -> list[Any]:
    """Coordinate grids from 1-D coordinate vectors ("xy": Cartesian, "ij": matrix).

    >>> [g.shape for g in meshgrid(np.arange(3), np.arange(2))]
    [(2, 3), (2, 3)]
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    xi = [asarray_internal(x) for x in xi]
    for i, x in enumerate(xi):
        if ndim(x) != 1:
            raise ValueError(f"meshgrid: arguments must be 1-D, argument {i} has shape "
                             f"{aval_of(x).shape}")
    shape = [aval_of(x).shape[0] for x in xi]
    if indexing == "xy" and len(xi) > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, x in enumerate(xi):
        axis = i
        if indexing == "xy" and len(xi) > 1 and i < 2:
            axis = 1 - i
        target = tuple(s if d == axis else 1 for d, s in enumerate(shape)) if sparse else \
            tuple(shape)
        out.append(lax.broadcast_in_dim(x, target, (axis,)))
    return out


def indices(dimensions: Sequence[int], dtype: Any = None,
            sparse: bool = False) -> Any:
    """An array (or, with `sparse`, a tuple of broadcastable arrays) of grid indices.

    >>> indices((2, 3)).shape
    (2, 2, 3)
    """
    dims = _shape_tuple(dimensions, "indices")
    dt = _dtype_or(dtype, default_int_dtype(), "indices")
    grids = []
    for axis, size in enumerate(dims):
        shape = tuple(size if d == axis else 1 for d in range(len(dims))) if sparse else dims
        grids.append(lax.broadcasted_iota(dt, shape, axis))
    if sparse:
        return tuple(grids)
    if not dims:
        return lax.full((0,), 0, dt)
    return lax.concatenate([lax.expand_dims(g, (0,)) for g in grids], 0)


def fromfunction(function: Callable[..., Any], shape: Sequence[int], *,
                 dtype: Any = float, **kwargs: Any) -> Any:
    """`function` evaluated at every index of `shape`, by vmapping it over each axis, so
    it may be written for scalar indices.

    >>> fromfunction(lambda i, j: i + j, (2, 2), dtype=np.int32)
    Array([[0, 1],
           [1, 2]], dtype=int32)
    """
    dims = _shape_tuple(shape, "fromfunction")
    dt = _dtype_or(dtype, default_float_dtype())
    fn = lambda *idx: function(*idx, **kwargs)  # noqa: E731
    for axis in reversed(range(len(dims))):
        fn = vmap(fn, in_axes=tuple(0 if a == axis else None for a in range(len(dims))))
    return fn(*[lax.iota(dt, d) for d in dims])


class _Grid:
    """`mgrid[...]` / `ogrid[...]`: dense or open grids from slice notation; a complex
    step `5j` means five points including the stop, as in NumPy."""

    def __init__(self, sparse: bool, name: str):
        self.sparse, self.name = sparse, name

    def __getitem__(self, key: Any) -> Any:
        single = not isinstance(key, tuple)
        keys = (key,) if single else key
        axes = [self._axis(k) for k in keys]
        if single:
            return axes[0]
        if self.sparse:
            return list(meshgrid(*axes, indexing="ij", sparse=True))
        dtype = result_type(*axes)
        grids = meshgrid(*[lax.convert_element_type(a, dtype) for a in axes], indexing="ij")
        return lax.concatenate([lax.expand_dims(g, (0,)) for g in grids], 0)

    def _axis(self, k: Any) -> Any:
        if not isinstance(k, slice):
            raise TypeError(f"{self.name}: expected slices like [0:5] or [0:1:5j], got {k!r}")
        start = 0 if k.start is None else k.start
        step = 1 if k.step is None else k.step
        if isinstance(step, complex):
            return linspace(start, k.stop, int(abs(step)), endpoint=True)
        return arange(start, k.stop, step)

    def __repr__(self) -> str:
        return f"lamella.numpy.{self.name}"


mgrid = _Grid(sparse=False, name="mgrid")
ogrid = _Grid(sparse=True, name="ogrid")


# --- comparisons of whole arrays ------------------------------------------------------
def array_equal(a1: Any, a2: Any, equal_nan: bool = False) -> Any:
    """True when both arrays have the same shape and elements (a bool Array).

    >>> array_equal(np.int32([1, 2]), np.float32([1, 2]))
    Array(True, dtype=bool)
    """
    a1, a2 = asarray_internal(a1), asarray_internal(a2)
    if aval_of(a1).shape != aval_of(a2).shape:
        return asarray_internal(np.bool_(False))
    equal = ufuncs.equal(a1, a2)
    if equal_nan:
        equal = ufuncs.logical_or(equal, ufuncs.logical_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
    return _all(equal)


def array_equiv(a1: Any, a2: Any) -> Any:
    """True when the arrays broadcast together and are elementwise equal."""
    a1, a2 = asarray_internal(a1), asarray_internal(a2)
    try:
        equal = ufuncs.equal(a1, a2)
    except ValueError:
        return asarray_internal(np.bool_(False))
    return _all(equal)


def _all(x: Any) -> Any:
    return lax.reduce_and(x, tuple(range(ndim(x))))
