"""Argument handling every sampler shares: shapes, dtypes, parameter broadcasting."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella import lax
from lamella.core import dtypes as core_dtypes
from lamella.core.trace import Tracer, aval_of
from lamella.numpy import dtypes as np_dtypes
from lamella.numpy.util import asarray_internal
from lamella.random.keys import _canonical_shape, _single_key


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...] | None:
    """NumPy's broadcast of `shapes`, or None when they do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for dims in zip(*((1,) * (rank - len(s)) + tuple(s) for s in shapes)):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def check_shape(name: str, shape: Sequence[int], *param_shapes: Sequence[int]) -> None:
    """A ValueError unless the parameters broadcast to exactly `shape`, as JAX requires."""
    if broadcast_shapes(tuple(shape), *param_shapes) != tuple(shape):
        shapes = ", ".join(str(tuple(s)) for s in param_shapes)
        raise ValueError(f"{name}: parameter shapes {shapes} must broadcast to the shape "
                         f"argument {tuple(shape)} (with the result equal to it)")


def sample_shape(name: str, shape: Any, *params: Any) -> tuple[int, ...]:
    """`shape` canonicalised (None: the parameters' broadcast shape) and checked."""
    shapes = [aval_of(p).shape for p in params]
    if shape is None:
        out = broadcast_shapes(*shapes)
        if out is None:
            raise ValueError(f"{name}: parameter shapes "
                             f"{', '.join(str(s) for s in shapes)} do not broadcast")
        return out
    shape = _canonical_shape(name, shape)
    check_shape(name, shape, *shapes)
    return shape


def float_dtype(name: str, dtype: Any, complex_ok: bool = False) -> np.dtype:
    """The canonical floating (or complex) dtype requested (None: the default float),
    or a ValueError."""
    dt = (core_dtypes.canonicalize_dtype(np.dtype(np.float64)) if dtype is None
          else np_dtypes.canonicalize_user_dtype(dtype, name))
    if not (np_dtypes.issubdtype(dt, np.floating)
            or complex_ok and np_dtypes.issubdtype(dt, np.complexfloating)):
        kind = "a float or complex dtype" if complex_ok else "a float dtype"
        raise ValueError(f"dtype argument to `{name}` must be {kind}, got {dt.name}")
    return dt


def int_dtype(name: str, dtype: Any) -> np.dtype:
    """The canonical integer dtype requested (None: the default int), or a TypeError."""
    dt = (core_dtypes.canonicalize_dtype(np.dtype(np.int64)) if dtype is None
          else np_dtypes.canonicalize_user_dtype(dtype, name))
    if not np_dtypes.issubdtype(dt, np.integer):
        raise TypeError(f"dtype argument to `{name}` must be an integer dtype, got {dt.name}")
    return dt


def param(x: Any, dtype: Any) -> Any:
    """A distribution parameter as an array of `dtype`."""
    if isinstance(x, Tracer) and aval_of(x).dtype == dtype:
        return x
    return asarray_internal(x, dtype)


def prepare(name: str, key: Any, dtype: Any, shape: Any, *params: Any,
            shape_optional: bool = True) -> tuple[Any, np.dtype, tuple[int, ...], tuple[Any, ...]]:
    """The common start of a float sampler: `(words, dtype, shape, params)`.

    The key's raw words, the canonical float dtype, each parameter as an array
    of that dtype, and the sample shape checked against them. `shape` None
    means the parameters' broadcast shape, unless `shape_optional` is False
    (samplers whose shape defaults to `()`), where it is rejected like any
    other non-shape.
    """
    words, _ = _single_key(name, key)
    dtype = float_dtype(name, dtype)
    params = tuple(param(p, dtype) for p in params)
    if not shape_optional:
        shape = _canonical_shape(name, shape)
    return words, dtype, sample_shape(name, shape, *params), params


def broadcast_to(x: Any, shape: Sequence[int]) -> Any:
    """`x` broadcast (NumPy rules, checked by the caller) to `shape`."""
    shape = tuple(shape)
    in_shape = aval_of(x).shape
    if in_shape == shape:
        return x
    lead = len(shape) - len(in_shape)
    keep = [i for i, d in enumerate(in_shape) if d == shape[lead + i]]
    squeezed = lax.reshape(x, tuple(in_shape[i] for i in keep))
    return lax.broadcast_in_dim(squeezed, shape, tuple(lead + i for i in keep))


def const(dtype: np.dtype, value: float) -> Any:
    """`value` as a scalar of `dtype` (not weakly typed, so it keeps `dtype`)."""
    return np.array(value, dtype)
