"""Traces and tracers: how primitives are interpreted.

Every `Primitive.bind` goes to the *current trace*. A transformation (jvp,
vmap, staging into a jaxpr) installs its trace as current while the user's
function runs; each trace unwraps its own tracers, applies its rule, and binds
the rule's operations on its *parent* trace, the one current before it. At the
bottom, `EvalTrace` calls the primitive's `impl`.

A trace treats a tracer that is not its own as a constant of the enclosing
computation and passes it down unchanged. That is what keeps nested
transformations apart: `grad` of a function that closes over an outer `grad`'s
tracer differentiates only with respect to its own input. Traces that share a
`tag` are the same transformation seen through several sub-computations.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from lamella.core import dtypes
from lamella.core.avals import ShapedArray, get_aval
from lamella.core.dispatch import current_executor
from lamella.core.errors import (
    ConcretizationTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)


class Trace:
    """Base class: interprets primitives applied to this trace's tracers."""

    is_alive = True
    description = "a transformation"  # e.g. "jvp of f", used in error messages

    def process_primitive(self, primitive, args: tuple, params: dict):
        raise NotImplementedError(f"{type(self).__name__} does not interpret primitives")

    def process_custom_jvp_call(self, primitive, fun, jvp, args, symbolic_zeros):
        raise NotImplementedError(f"{type(self).__name__} does not handle custom_jvp")

    def process_custom_vjp_call(self, primitive, fun, fwd, bwd, args, out_trees, symbolic_zeros):
        raise NotImplementedError(f"{type(self).__name__} does not handle custom_vjp")

    def invalidate(self) -> None:
        """Marks the trace finished: its tracers may no longer be used."""
        self.is_alive = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.description})"


class TraceTag:
    """The identity of one application of a transformation: traces made for its
    sub-computations (a jitted body, a loop body) share the tag, so they recognise one
    another's tracers."""

    __slots__ = ("__weakref__",)

    def __repr__(self) -> str:
        return f"TraceTag({id(self):#x})"


class Tracer:
    """A stand-in for an array while a transformation runs."""

    __slots__ = ("_trace",)
    __array_priority__ = 1000

    def __init__(self, trace: Trace):
        self._trace = trace

    @property
    def aval(self) -> ShapedArray:
        raise NotImplementedError

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: self.aval.ndim)
    size = property(lambda self: self.aval.size)
    weak_type = property(lambda self: self.aval.weak_type)

    def to_concrete_value(self) -> Any:
        """The concrete value behind this tracer, or None when it is abstract."""
        return None

    def _origin(self) -> str:
        """Why this value is abstract, for error messages."""
        return f"It was created by {self._trace.description}."

    def _creation_site(self) -> Any:
        """The user's source line that made this value, when the trace recorded it."""
        for inner in (getattr(self, "primal", None), getattr(self, "val", None)):
            if isinstance(inner, Tracer):
                return inner._creation_site()
        return None

    def _concrete(self, conversion: str, error: type = ConcretizationTypeError) -> Any:
        value = self.to_concrete_value()
        if value is None:
            raise error(
                f"Abstract tracer value encountered where a concrete value is expected: "
                f"a traced array of type {self.aval.str_short()} was passed to `{conversion}`. "
                f"{self._origin()} Python control flow and conversions can't depend on "
                "traced values: use lamella.lax.cond/while_loop/select for data-dependent "
                "control flow, or mark the argument static (jit's static_argnums / "
                "static_argnames).")
        return value

    def __bool__(self) -> bool:
        return bool(self._concrete("bool", TracerBoolConversionError))

    def __int__(self) -> int:
        return int(self._concrete("int"))

    def __float__(self) -> float:
        return float(self._concrete("float"))

    def __complex__(self) -> complex:
        return complex(self._concrete("complex"))

    def __index__(self) -> int:
        value = self.to_concrete_value()
        if value is None:
            raise TracerIntegerConversionError(
                f"A traced array of type {self.aval.str_short()} was used as a Python integer "
                f"(an index, a size or a `range` bound). {self._origin()} Pass the value as a "
                "static argument (static_argnums / static_argnames) or use lamella.lax's "
                "dynamic_slice / fori_loop.")
        return int(value)

    def __array__(self, dtype=None, copy=None):
        raise TracerArrayConversionError(
            f"A traced array of type {self.aval.str_short()} was converted to a NumPy array "
            f"(np.asarray, np.array or a NumPy function). {self._origin()} NumPy can't operate "
            "on traced values: use lamella.numpy (or lamella.lax) inside transformed functions, "
            "or move the NumPy code outside them.")

    def __len__(self) -> int:
        return len(self.aval)

    def __repr__(self) -> str:
        return self._describe(_long_type)

    def _describe(self, type_of: Callable[[Any], str]) -> str:
        """The repr, in JAX's style (`JitTracer(float32[3])`, ...), with avals shown by
        `type_of` (a layer whose values wrap tracers, e.g. PRNG keys, shows its own type)."""
        return f"{type(self).__name__}({type_of(self.aval)})"


def _long_type(aval: Any) -> str:
    return aval.str_short(short_dtypes=False)


def escaped_tracer_error(tracer: Tracer) -> UnexpectedTracerError:
    trace = tracer._trace
    state = "has already finished" if not trace.is_alive else "is not active in this context"
    site = tracer._creation_site()
    where = f" at {site}" if site is not None else ""
    return UnexpectedTracerError(
        f"Encountered an unexpected tracer: a {type(tracer).__name__} of type "
        f"{tracer.aval.str_short()} created{where} by {trace.description}, which {state}. "
        "A transformed function leaked an intermediate value (stored it in a global, an "
        "attribute or a list outside the function) and it was used after the transformation "
        "ended. Return values from the function explicitly instead of storing them.")


def check_foreign_tracer(x: Tracer) -> None:
    """Raises if a tracer that belongs to another trace has outlived its trace."""
    if not x._trace.is_alive:
        raise escaped_tracer_error(x)


class EvalTrace(Trace):
    """The bottom of every stack: the registered executor applies primitives to
    concrete values (core's interpreter calls their `impl`)."""

    description = "evaluation"

    def process_primitive(self, primitive, args, params):
        return current_executor().apply(primitive, tuple(map(_concrete_input, args)), params)

    def process_custom_jvp_call(self, primitive, fun, jvp, args, symbolic_zeros):
        return fun(*args)

    def process_custom_vjp_call(self, primitive, fun, fwd, bwd, args, out_trees, symbolic_zeros):
        return fun(*args)


def _concrete_input(x: Any) -> Any:
    if isinstance(x, Tracer):
        raise escaped_tracer_error(x)
    if type(x) is np.ndarray or isinstance(x, np.generic):
        dtype = dtypes.canonicalize_dtype(x.dtype)
        if dtype != x.dtype:
            return x.astype(dtype)
    return x


eval_trace = EvalTrace()


class _TraceState(threading.local):
    def __init__(self) -> None:
        self.trace: Trace = eval_trace


_state = _TraceState()


def current_trace() -> Trace:
    """The trace that a `bind` right now would go to."""
    return _state.trace


_top_level_observers: list[Callable[[bool], None]] = []


def observe_top_level(callback: Callable[[bool], None]) -> None:
    """Calls `callback(at_top_level)` whenever this thread starts or stops tracing (its
    current trace becomes, or stops being, the eval trace). A runtime whose compiled
    calls bypass Python keys them on it, so a call made while tracing is staged."""
    _top_level_observers.append(callback)


def _notify_top_level(at_top_level: bool) -> None:
    for callback in _top_level_observers:
        callback(at_top_level)


class set_current_trace:
    """Makes `trace` current inside a `with` block."""

    __slots__ = ("trace", "previous")

    def __init__(self, trace: Trace):
        self.trace = trace

    def __enter__(self) -> Trace:
        previous = self.previous = _state.trace
        trace = _state.trace = self.trace
        if (previous is eval_trace) is not (trace is eval_trace) and _top_level_observers:
            _notify_top_level(trace is eval_trace)
        return trace

    def __exit__(self, *exc) -> None:
        trace, previous = _state.trace, self.previous
        _state.trace = previous
        if (previous is eval_trace) is not (trace is eval_trace) and _top_level_observers:
            _notify_top_level(previous is eval_trace)


def concrete_value(x: Any) -> Any:
    """`x` as a concrete value if it has one (a tracer may know it), else None."""
    if isinstance(x, Tracer):
        return x.to_concrete_value()
    return x


def aval_of(x: Any) -> ShapedArray:
    return x.aval if isinstance(x, Tracer) else get_aval(x)
