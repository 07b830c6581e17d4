"""Questions a primitive's author asks about the traces running now (the trace
helpers of JAX's `jax.extend.core`).

A transformation's trace points at its parent (the trace current before it), so
the traces running now form a chain from `current_trace()` down to evaluation or
to the staging of a jaxpr. These functions read that chain.

>>> import numpy as np
>>> import lamella.core as lc
>>> seen = []
>>> _ = lc.vmap(lambda x: seen.append(unsafe_am_i_under_a_vmap_DO_NOT_USE()) or x)(np.zeros(2))
>>> seen, unsafe_am_i_under_a_vmap_DO_NOT_USE()
([True], False)
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from lamella.core.batching import BatchTrace
from lamella.core.errors import ConcretizationTypeError
from lamella.core.staging import StagingTrace
from lamella.core.trace import Trace, Tracer, current_trace, set_current_trace

__all__ = ["axis_size", "concrete_or_error", "extend_axis_env", "find_top_trace",
           "get_opaque_trace_state", "nonempty_axis_env_DO_NOT_USE", "take_current_trace",
           "unsafe_am_i_under_a_jit_DO_NOT_USE", "unsafe_am_i_under_a_vmap_DO_NOT_USE",
           "unsafe_get_axis_names_DO_NOT_USE"]


def _running_traces() -> Iterator[Trace]:
    """The current trace, its parent, and so on down the chain."""
    trace: Trace | None = current_trace()
    while trace is not None:
        yield trace
        trace = getattr(trace, "parent", None) or getattr(trace, "known", None)


def find_top_trace(_: Any) -> Trace:
    """The innermost running trace that owns one of the tracers in `xs` (the trace a
    primitive applied to `xs` must go to); the current trace when `xs` holds none.

    >>> find_top_trace([1.0]) is current_trace()
    True
    """
    xs = _ if isinstance(_, (list, tuple)) else [_]
    owners = {id(x._trace) for x in xs if isinstance(x, Tracer)}
    if not owners:
        return current_trace()
    for trace in _running_traces():
        if id(trace) in owners:
            return trace
    return current_trace()


class _NoTrace(Trace):
    """Current inside `take_current_trace`: binding there is a mistake."""

    description = "take_current_trace (no trace is current)"

    def process_primitive(self, primitive, args, params):
        raise RuntimeError(f"{primitive.name} was bound inside `take_current_trace()`: apply "
                           f"it on the trace the block took, trace.process_primitive(...).")


@contextlib.contextmanager
def take_current_trace() -> Iterator[Trace]:
    """Takes the current trace for the block: it is yielded, and nothing is current inside
    (a rule applies primitives on the taken trace explicitly).

    >>> with take_current_trace() as trace:
    ...     trace.description
    'evaluation'
    """
    taken = current_trace()
    with set_current_trace(_NoTrace()):
        yield taken


class _OpaqueTraceState:
    __slots__ = ("trace",)

    def __init__(self, trace: Trace):
        self.trace = trace

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _OpaqueTraceState) and other.trace is self.trace

    def __hash__(self) -> int:
        return id(self.trace)


def get_opaque_trace_state(convention: Any = None) -> _OpaqueTraceState:
    """A token equal to another exactly when both were taken under the same trace (how an
    extension checks it is called back where it was set up).

    >>> get_opaque_trace_state() == get_opaque_trace_state()
    True
    """
    return _OpaqueTraceState(current_trace())


def concrete_or_error(force: Any, val: Any, context: str = "") -> Any:
    """`force(val)` if `val` is concrete (a tracer that knows its value counts), else a
    ConcretizationTypeError naming `context`.

    >>> concrete_or_error(int, 3.0)
    3
    """
    force = force or (lambda x: x)
    if isinstance(val, Tracer):
        known = val.to_concrete_value()
        if known is None:
            raise ConcretizationTypeError(
                f"Abstract tracer value encountered where a concrete value is expected: "
                f"{val!r}. {context}".rstrip())
        val = known
    return force(val)


def unsafe_am_i_under_a_jit_DO_NOT_USE() -> bool:
    """Whether a jaxpr is being staged (jit, make_jaxpr, a control-flow body) right now."""
    return any(isinstance(t, StagingTrace) for t in _running_traces())


def unsafe_am_i_under_a_vmap_DO_NOT_USE() -> bool:
    """Whether a vmap is running."""
    return any(isinstance(t, BatchTrace) for t in _running_traces())


class _AxisEnv(threading.local):
    def __init__(self) -> None:
        self.frames: list[tuple[Any, int]] = []


_axis_env = _AxisEnv()


@contextlib.contextmanager
def extend_axis_env(names_and_sizes: Sequence[tuple[Any, int]]) -> Iterator[None]:
    """Puts named axes in scope inside the block without a vmap (`make_jaxpr(axis_env=)`):
    collectives over them can be traced.

    >>> with extend_axis_env([("i", 4)]):
    ...     axis_size("i")
    4
    """
    pairs = [(name, int(size)) for name, size in names_and_sizes]
    _axis_env.frames.extend(pairs)
    try:
        yield
    finally:
        del _axis_env.frames[len(_axis_env.frames) - len(pairs):]


def axis_size(name: Any) -> int:
    """The size of the named axis `name` in scope (a vmap's or an `axis_env` one)."""
    for t in _running_traces():
        if isinstance(t, BatchTrace) and t.axis_data.name == name:
            return t.axis_data.size
    for env_name, size in reversed(_axis_env.frames):
        if env_name == name:
            return size
    raise NameError(f"unbound axis name: {name}. The axis names in scope are "
                    f"{unsafe_get_axis_names_DO_NOT_USE()}.")


def unsafe_get_axis_names_DO_NOT_USE() -> list[Any]:
    """The names of the named axes in scope, innermost first (vmaps, then `axis_env`)."""
    names = [t.axis_data.name for t in _running_traces()
             if isinstance(t, BatchTrace) and t.axis_data.name is not None]
    names += [name for name, _ in reversed(_axis_env.frames)]
    return list(dict.fromkeys(names))  # a vmap's name is in both places


def nonempty_axis_env_DO_NOT_USE() -> bool:
    """Whether any named axis is in scope."""
    return bool(unsafe_get_axis_names_DO_NOT_USE())
