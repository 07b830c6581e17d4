"""Helpers every lamella.numpy module shares: turning array-likes into Arrays,
checking arguments, normalising axes, and reading concrete values.

>>> canonicalize_axis(-1, 3)
2
>>> asarray_internal([1, 2.5]).dtype
dtype('float32')
"""

from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from lamella import lax
from lamella.core import dtypes as core_dtypes
from lamella.core import trace as _trace
from lamella.core.dispatch import current_executor
from lamella.core.errors import ConcretizationTypeError
from lamella.core.jit import jit
from lamella.core.shape_poly import (
    DimExpr,
    dimension_as_value,
    max_dim,
    min_dim,
)
from lamella.core.trace import Tracer, aval_of
from lamella.lax import runtime
from lamella.lax.conversion import convert_element_type
from lamella.numpy.dtypes import _as_array, _canonical_and_weak, promote_dtypes

try:
    from numpy.exceptions import AxisError
except ImportError:  # NumPy < 1.25
    from numpy import AxisError  # type: ignore[attr-defined,no-redef]

__all__ = ["AxisError", "asarray_internal", "canonicalize_axis", "canonicalize_axes",
           "check_arraylike", "checked_array", "concrete_int", "concrete_value", "dim_max",
           "dim_min", "eager_fast",
           "eager_jit", "eager_operand_type", "eager_operands_ok",
           "is_arraylike", "ndim", "shape", "size"]


def is_arraylike(x: Any) -> bool:
    """True for the values lamella.numpy accepts as arrays (no lists: JAX refuses them)."""
    return isinstance(x, (Tracer, np.ndarray, np.generic, int, float, complex, bool,
                          lax.Array)) or hasattr(x, "__array__")


def check_arraylike(name: str, *args: Any) -> None:
    """Raises a TypeError naming `name` when an argument is not array-like
    (lists and tuples included, as in JAX: convert them with `asarray` first)."""
    for i, x in enumerate(args):
        if not is_arraylike(x):
            kind = type(x).__name__
            hint = (" (lists and tuples are not accepted: wrap it with lamella.numpy.asarray)"
                    if isinstance(x, (list, tuple)) else "")
            raise TypeError(f"{name}: argument {i} must be an array, got {kind}{hint}")


def checked_array(name: str, x: Any) -> Any:
    """`x` as an Array or tracer after `check_arraylike(name, x)` (lists refused)."""
    check_arraylike(name, x)
    return asarray_internal(x)


def asarray_internal(x: Any, dtype: Any = None) -> Any:
    """`x` (array, scalar, or nested list/tuple of them) as an Array or tracer of its
    canonical dtype (or `dtype`); Python scalars stay weakly typed."""
    if dtype is None and isinstance(x, (lax.Array, Tracer)):
        return x  # already canonical: Arrays and tracers are made so
    if isinstance(x, (list, tuple)):
        if any(isinstance(e, (Tracer, DimExpr)) or isinstance(e, (list, tuple))
               and _has_tracer(e) for e in x):
            return _stack_traced(x, dtype)
    elif type(x) is DimExpr:  # a symbolic dimension as a value: a traced integer scalar
        x = dimension_as_value(x)
        return x if dtype is None else convert_element_type(
            x, core_dtypes.canonicalize_dtype(np.dtype(dtype)), False)
    x = _as_array(x)
    if dtype is None:
        dt, weak = _canonical_and_weak(x)
    else:
        dt, weak = core_dtypes.canonicalize_dtype(np.dtype(dtype)), False
    return convert_element_type(x, dt, weak)


def _has_tracer(seq: Sequence) -> bool:
    return any(isinstance(e, (Tracer, DimExpr)) or isinstance(e, (list, tuple))
               and _has_tracer(e) for e in seq)


def _stack_traced(seq: Sequence, dtype: Any) -> Any:
    elements = [asarray_internal(e) for e in seq]
    elements = promote_dtypes(*elements) if dtype is None else [
        asarray_internal(e, dtype) for e in elements]
    shapes = {aval_of(e).shape for e in elements}
    if len(shapes) != 1:
        raise ValueError(f"setting an array element with a sequence: the nested sequence "
                         f"has inhomogeneous shapes {sorted(shapes)}")
    return lax.concatenate([lax.expand_dims(e, (0,)) for e in elements], 0)


def shape(x: Any) -> tuple[int, ...]:
    """The shape of an array-like (tracers included)."""
    return tuple(aval_of(asarray_internal(x) if isinstance(x, (list, tuple)) else x).shape)


def ndim(x: Any) -> int:
    """The number of dimensions of an array-like."""
    return len(shape(x))


def size(x: Any) -> int:
    """The number of elements of an array-like."""
    return int(np.prod(shape(x), dtype=np.int64))


def canonicalize_axis(axis: Any, rank: int, name: str = "axis") -> int:
    """`axis` in [0, rank), accepting negative axes; an AxisError naming the bad axis
    and the rank otherwise.

    >>> canonicalize_axis(-2, 2)
    0
    """
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {axis!r}") from None
    if not -rank <= axis < rank:
        raise AxisError(f"{name} {axis} is out of bounds for array of dimension {rank}")
    return axis % rank if rank else axis


def canonicalize_axes(axis: Any, rank: int, name: str = "axis") -> tuple[int, ...]:
    """`axis` (None for all, an int, or a sequence) as a sorted tuple of distinct
    non-negative axes."""
    if axis is None:
        return tuple(range(rank))
    if isinstance(axis, (int, np.integer)):
        return (canonicalize_axis(axis, rank, name),)
    axes = tuple(canonicalize_axis(a, rank, name) for a in axis)
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated {name} in {tuple(axis)}")
    return tuple(sorted(axes))


# Bounds of symbolic dimensions (shape-polymorphic export), decided for every size of
# the dimension variables or an InconclusiveDimensionOperation. The comparisons are
# non-strict, so ties (b - 1 against 0 at b = 1) are decided; `a >= b` and `b >= a` are
# decided from different bounds, so the second is tried when the first is not.
def dim_max(a: Any, b: Any) -> Any:
    """The larger of two dimensions (`max(a, b)` for ints; a symbolic one is decided
    for every size or kept as the expression ``max(a, b)``, JAX's `core.max_dim`).

    >>> from lamella.core.export import symbolic_shape
    >>> b, = symbolic_shape("b")
    >>> dim_max(b - 1, 0), dim_min(1, b), dim_min(b, 2)
    (b - 1, 1, min(b, 2))
    """
    if type(a) is int and type(b) is int:
        return a if a >= b else b
    return max_dim(a, b)


def dim_min(a: Any, b: Any) -> Any:
    """The smaller of two dimensions (see `dim_max`)."""
    if type(a) is int and type(b) is int:
        return a if a <= b else b
    return min_dim(a, b)


def concrete_value(x: Any, context: str) -> np.ndarray:
    """The NumPy value of `x`; under a trace a ConcretizationTypeError that says what
    needed it (`context`, e.g. "the `size` argument of nonzero")."""
    if isinstance(x, Tracer):
        value = x.to_concrete_value()
        if value is None:
            raise ConcretizationTypeError(
                f"{context} must be concrete, but a traced value was passed "
                f"(shape {aval_of(x).shape}, dtype {aval_of(x).dtype}). Pass it as a "
                "static argument, or compute it outside the transformed function.")
        return np.asarray(value)
    return np.asarray(x)


def concrete_int(x: Any, context: str) -> int:
    """`x` as a Python int, requiring it concrete (see `concrete_value`)."""
    value = concrete_value(x, context)
    if value.shape != () or value.dtype.kind not in "biu":
        raise TypeError(f"{context} must be an integer scalar, got {x!r}")
    return int(value)


def eager_jit(*static: str) -> Callable[[Callable], Callable]:
    """Decorator: a concrete, eager call of a composite function runs as one cached
    `jit` (a single compiled dispatch instead of one per primitive, as jax.numpy
    does); under any transformation it runs inline, so jaxprs stay flat. `static`
    names the non-array parameters (axis, dtype, keepdims, ...); a call with an
    unhashable one (an axis list) also runs inline. (`eager_fast` under its older
    name; names `fun` lacks are ignored.)

    >>> @eager_jit("axis")
    ... def total(x, axis=None):
    ...     return lax.reduce_sum(x, (axis,))
    >>> total(np.float32([1, 2]), axis=0)
    Array(3., dtype=float32)
    """
    def decorate(fun: Callable) -> Callable:
        params = inspect.signature(fun).parameters
        return eager_fast(*(n for n in static if n in params))(fun)
    return decorate


# --- the eager fast path -----------------------------------------------------------------
# Operands jaxlib's C++ dispatcher signs exactly as the Python path types them: Arrays,
# Python scalars (weak), None, and NumPy values of dtypes that need no narrowing.
# Python ints outside int32 and 64-bit NumPy integers run inline, which raises
# lamella's own overflow errors.
_PLAIN_OPERANDS = {runtime.Array, float, bool, complex, type(None)}
_HOST_DTYPES = frozenset(np.dtype(t) for t in (
    np.bool_, np.int8, np.int16, np.int32, np.uint8, np.uint16, np.uint32,
    np.float16, np.float32, np.float64, np.complex64, np.complex128))
_INT32_LOW, _INT32_END = -2**31, 2**31
_ARRAY = runtime.Array
_trace_state = _trace._state
_eval_trace = _trace.eval_trace


def _plain_operand(v: Any) -> bool:
    kind = type(v)
    if kind in _PLAIN_OPERANDS:
        return True
    if kind is int:
        return _INT32_LOW <= v < _INT32_END
    if (kind is np.ndarray or isinstance(v, np.generic)) and v.dtype in _HOST_DTYPES:
        return True
    # a sequence of Arrays (concatenate, stack)
    return (kind is list or kind is tuple) and all(type(e) is _ARRAY for e in v)


def _plain_operands(values: Any) -> bool:
    for v in values:
        if type(v) is not _ARRAY and not _plain_operand(v):
            return False
    return True


def eager_operand_type(cls: type) -> None:
    """Let values of `cls` (a pytree node over Arrays, such as typed PRNG keys) take
    the eager fast path as operands."""
    _PLAIN_OPERANDS.add(cls)


def eager_operands_ok(*values: Any) -> bool:
    """Whether an eager call with these operands may run as a cached jit here: at the
    top level, with operands C++ types as Python does. (Per-thread flag overrides are
    in the C++ cache key.)"""
    return _trace_state.trace is _eval_trace and _plain_operands(values)


def _hashable(values: Any) -> bool:
    try:
        hash(tuple(values))
    except TypeError:
        return False
    return True


def eager_fast(*static: str) -> Callable[[Callable], Callable]:
    """Decorator: an eager call runs `fun` as one cached `jit` through jaxlib's C++
    dispatcher, which is the decorated function itself when `fun` has no static
    parameters (as jax.numpy's functions are jitted), so a repeated call runs no
    Python at all. While tracing (the C++ cache keys on it), or with operands C++
    would type differently from Python (see `_plain_operands`), `fun` runs inline,
    op by op. `static` names parameters passed as Python values (axis, decimals,
    equal_nan, ...); a call with an unhashable one runs inline.

    >>> @eager_fast()
    ... def double(x):
    ...     return lax.mul(x, lax.full_like(x, 2))
    >>> double(np.float32([1, 2]))
    Array([2., 4.], dtype=float32)
    """
    def decorate(fun: Callable) -> Callable:
        compiled = jit(fun, static_argnames=static) if static else jit(fun)
        jitted = getattr(compiled, "jit_function", compiled)
        names = list(inspect.signature(fun).parameters)
        positions = frozenset(names.index(n) for n in static)
        static_names = frozenset(static)

        def inline_when(args: tuple, kwargs: dict) -> bool:
            if _trace_state.trace is not _eval_trace:
                return True
            operands = [a for i, a in enumerate(args) if i not in positions] \
                if positions else args
            return not (_plain_operands(operands) and _plain_operands(
                [v for k, v in kwargs.items() if k not in static_names]))

        fast = current_executor().fast_dispatch(jitted, inline_when=inline_when)
        if not static:
            for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
                setattr(fast, attribute, getattr(fun, attribute))
            fast.__wrapped__ = fun
            return fast

        # C++ refuses an unhashable static value (ValueError) before anything runs: such
        # a call (an axis given as a list) runs inline.
        @functools.wraps(fun)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return fast(*args, **kwargs)
            except ValueError:
                if _hashable(a for i, a in enumerate(args) if i in positions) and _hashable(
                        v for k, v in kwargs.items() if k in static_names):
                    raise
            return fun(*args, **kwargs)
        return call
    return decorate


def dtype_of(x: Any) -> np.dtype:
    """The dtype of an array-like value, as traced."""
    return aval_of(x).dtype


def default_float_dtype() -> np.dtype:
    """float64 with x64 on, float32 otherwise."""
    return core_dtypes.canonicalize_dtype(np.dtype("float64"))


def default_int_dtype() -> np.dtype:
    """int64 with x64 on, int32 otherwise."""
    return core_dtypes.canonicalize_dtype(np.dtype("int64"))


def flatten_1d(x: Any) -> Any:
    """`x` reshaped to one dimension (row-major), as a lax operation."""
    return lax.reshape(x, (int(np.prod(shape(x), dtype=np.int64)),))
