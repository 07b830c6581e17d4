"""The staging trace: runs a Python function on tracers and records a jaxpr.

Each primitive applied to a staging tracer becomes an equation; values that are
not this trace's own (NumPy arrays, Python scalars, tracers of enclosing
transformations) become constants: scalars inline as literals, the rest as
constvars. Higher-order callers hoist tracer constants into explicit arguments
(`hoist_tracer_consts`) so the enclosing transformation sees them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from lamella.core.avals import ShapedArray, explicit_sharding, get_aval, manual_axes_typing
from lamella.core.effects import effects_of
from lamella.core.jaxpr import (
    NO_EFFECTS,
    ClosedJaxpr,
    DebugInfo,
    Jaxpr,
    JaxprEqn,
    Literal,
    Var,
    literal_if_scalar,
)
from lamella.core.rules import Zero
from lamella.core.source_info import describe, user_frame
from lamella.core.trace import Trace, Tracer, check_foreign_tracer, eval_trace, set_current_trace

const_fold_rules: dict[Any, Callable[..., tuple[Any, ShapedArray] | None]] = {}
"""Per primitive: `rule(*concrete_args, **params) -> (value, aval)` or None. When
every operand is concrete the staging trace writes the result as a literal (or
constant) instead of an equation: e.g. a Python scalar converted to float16."""


class JaxprTracer(Tracer):
    """A value being staged: it stands for a variable (or a literal) of the jaxpr
    under construction."""

    __slots__ = ("_var",)  # not "var": lamella.numpy gives tracers a var() method

    def __init__(self, trace: StagingTrace, var: Var | Literal):
        self._trace = trace
        self._var = var

    @property
    def aval(self) -> ShapedArray:
        return self._var.aval

    def _origin(self) -> str:
        return self._trace.origin_of(self._var)

    def _creation_site(self):
        return next((e.source_info for e in self._trace.eqns if self._var in e.outvars), None)

    def _describe(self, type_of) -> str:
        return f"JitTracer({type_of(self.aval)})"  # JAX's name for a staged value


_propagate_shardings: Callable[..., Any] | None = None


def _enable_sharding_propagation() -> None:
    global _propagate_shardings
    _propagate_shardings = explicit_sharding.propagate


explicit_sharding.when_enabled(_enable_sharding_propagation)


class StagingTrace(Trace):
    """Records every primitive applied to its tracers as a jaxpr equation."""

    def __init__(self, debug_info: DebugInfo | None = None):
        self.eqns: list[JaxprEqn] = []
        self.invars: list[Var] = []
        self.constvars: list[Var] = []
        self.consts: list[Any] = []
        self._const_ids: dict[int, Var] = {}
        self.debug_info = debug_info
        if debug_info is not None:
            self.description = f"{debug_info.traced_for} of {debug_info.func_name}"
        else:
            self.description = "staging into a jaxpr"

    def new_arg(self, aval: ShapedArray) -> JaxprTracer:
        var = Var(aval)
        self.invars.append(var)
        return JaxprTracer(self, var)

    def to_atom(self, x: Any) -> Var | Literal:
        if isinstance(x, JaxprTracer) and x._trace is self:
            return x._var
        if isinstance(x, Tracer):
            check_foreign_tracer(x)
            return self._const_var(x, x.aval)
        aval = get_aval(x)
        literal = literal_if_scalar(x, aval)
        if literal is not None:
            return literal
        if isinstance(x, np.ndarray) and x.dtype != aval.dtype:
            x = x.astype(aval.dtype)
        return self._const_var(x, aval)

    def _const_var(self, x: Any, aval: ShapedArray) -> Var:
        var = self._const_ids.get(id(x))
        if var is None:
            var = self._const_ids[id(x)] = Var(aval)
            self.constvars.append(var)
            self.consts.append(x)  # keeps x alive, so its id stays unique
        return var

    def process_primitive(self, primitive, args, params):
        if _compile_time_eval.active and not any(isinstance(x, Tracer) for x in args):
            with set_current_trace(eval_trace):
                return primitive.bind(*args, **params)
        fold = const_fold_rules.get(primitive)
        if fold is not None and not any(isinstance(x, Tracer) for x in args):
            folded = fold(*args, **params)
            if folded is not None:
                value, aval = folded
                literal = literal_if_scalar(value, aval)
                return JaxprTracer(self, literal if literal is not None
                                   else self._const_var(value, aval))
        invars = [x._var if type(x) is JaxprTracer and x._trace is self else self.to_atom(x)
                  for x in args]
        source = user_frame(2)
        rule = primitive._abstract_eval or primitive.abstract_eval
        in_avals = [v.aval for v in invars]
        try:
            out = rule(*in_avals, **params)
            if _propagate_shardings is not None:  # explicit sharding is in use
                out = _propagate_shardings(primitive, in_avals, out, params)
            if manual_axes_typing.propagate is not None:  # inside a shard_map body
                out = manual_axes_typing.propagate(primitive, in_avals, out, params)
        except (TypeError, ValueError) as e:
            raise _with_location(e, primitive, source) from None
        effects = effects_of(primitive, params)
        if primitive.multiple_results:
            outvars = [Var(aval) for aval in out]
            self.eqns.append(JaxprEqn(invars, outvars, primitive, params, effects, source))
            return [JaxprTracer(self, v) for v in outvars]
        outvar = Var(out)
        self.eqns.append(JaxprEqn(invars, [outvar], primitive, params, effects, source))
        return JaxprTracer(self, outvar)

    def process_custom_jvp_call(self, primitive, fun, jvp, args, symbolic_zeros):
        closed, consts = trace_subjaxpr(fun, [self._aval(x) for x in args])
        params = dict(call_jaxpr=closed, jvp_jaxpr_fun=jvp_ignoring_consts(jvp, len(consts)),
                      num_consts=len(consts), symbolic_zeros=symbolic_zeros)
        return self.process_primitive(primitive, (*consts, *args), params)

    def process_custom_vjp_call(self, primitive, fun, fwd, bwd, args, out_trees, symbolic_zeros):
        closed, consts = trace_subjaxpr(fun, [self._aval(x) for x in args])
        n = len(consts)
        params = dict(call_jaxpr=closed, fwd_jaxpr_thunk=fwd_ignoring_consts(fwd, n),
                      bwd=bwd_ignoring_consts(bwd, n), num_consts=n, out_trees=out_trees,
                      symbolic_zeros=symbolic_zeros)
        return self.process_primitive(primitive, (*consts, *args), params)

    def _aval(self, x: Any) -> ShapedArray:
        return x.aval if isinstance(x, Tracer) else get_aval(x)

    def to_jaxpr(self, outs: Sequence[Any]) -> tuple[Jaxpr, list[Any]]:
        """Finishes the trace: the jaxpr with outputs `outs`, and its consts."""
        outvars = [self.to_atom(x) for x in outs]
        effects = NO_EFFECTS
        for eqn in self.eqns:
            if eqn.effects:
                effects = effects | eqn.effects
        jaxpr = Jaxpr(self.constvars, self.invars, outvars, self.eqns, effects,
                      self.debug_info)
        self.invalidate()
        return jaxpr, self.consts

    def origin_of(self, var: Var) -> str:
        """Explains which arguments of the traced function a variable depends on."""
        info = self.debug_info
        where = ""
        if info is not None:
            src = f" at {info.func_src}" if info.func_src else ""
            where = f"The error occurred while tracing the function {info.func_name}{src} " \
                    f"for {info.traced_for}. "
        if var in self.constvars:
            return where + "The value is closed over by the traced function."
        args = self._progenitor_args(var)
        if not args and self._progenitor_args(var, self.constvars):
            return where + "The value depends on values closed over by the traced function " \
                           "(such as an enclosing transformation's traced values)."
        if not args:
            return where + "The value does not depend on the function's arguments; " \
                           "it was computed with traced operations."
        names = info.arg_names if info is not None and info.arg_names else None
        labels = [names[i] if names and i < len(names) else f"argument {i}" for i in args]
        return where + f"The value depends on {', '.join(f'`{n}`' for n in labels)}."

    def _progenitor_args(self, var: Var, inputs: list[Var] | None = None) -> list[int]:
        """The positions among `inputs` (default: the invars) that `var` depends on."""
        needed = {var}
        for eqn in reversed(self.eqns):
            if any(v in needed for v in eqn.outvars):
                needed.update(v for v in eqn.invars if isinstance(v, Var))
        return [i for i, v in enumerate(self.invars if inputs is None else inputs)
                if v in needed]


class _CompileTimeEval(threading.local):
    active = False


_compile_time_eval = _CompileTimeEval()


@contextlib.contextmanager
def ensure_compile_time_eval() -> Iterator[None]:
    """Within the block, operations on concrete values run now, even while tracing
    (inside `jit`): their results are concrete arrays Python can inspect. Operations
    on traced values are staged as usual.

    >>> import numpy as np
    >>> from lamella.core import jit
    >>> from lamella.core.structural import broadcast_in_dim, reduce_sum
    >>> @jit
    ... def f(x):
    ...     with ensure_compile_time_eval():
    ...         n = reduce_sum(np.ones(3, np.float32), (0,))  # concrete: 3.0
    ...     return broadcast_in_dim(x, (int(n),), ())
    >>> f(np.float32(2.0))
    array([2., 2., 2.], dtype=float32)
    """
    previous = _compile_time_eval.active
    _compile_time_eval.active = True
    try:
        yield
    finally:
        _compile_time_eval.active = previous


def _with_location(error: Exception, primitive, source) -> Exception:
    message = f"{error} (in primitive '{primitive.name}' applied at {describe(source)})"
    if getattr(error, "_lamella_located", False):
        return error
    try:
        new = type(error)(message)
    except Exception:
        error.add_note(message)
        new = error
    new._lamella_located = True
    return new


def trace_to_jaxpr(fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray],
                   debug_info: DebugInfo | None = None, *, trace: StagingTrace | None = None
                   ) -> tuple[Jaxpr, list[Any]]:
    """Traces a function of flat arrays returning a flat sequence into (jaxpr, consts).

    A caller that wants to inspect the trace afterwards may pass its own."""
    trace = trace if trace is not None else StagingTrace(debug_info)
    args = [trace.new_arg(aval) for aval in in_avals]
    try:
        with set_current_trace(trace):
            outs = fun(*args)
        return trace.to_jaxpr(outs)
    finally:
        trace.invalidate()


def convert_constvars_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """Turns constvars into leading invars."""
    return Jaxpr((), [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns,
                 jaxpr.effects, jaxpr.debug_info)


def hoist_tracer_consts(jaxpr: Jaxpr, consts: Sequence[Any]) -> tuple[ClosedJaxpr, list[Any]]:
    """Closes a jaxpr over its concrete consts; tracer consts become leading inputs.

    Returns the closed jaxpr and the tracers to pass before the other arguments.
    """
    is_tracer = [isinstance(c, Tracer) for c in consts]
    if not any(is_tracer):
        return ClosedJaxpr(jaxpr, consts), []
    hoisted_vars = [v for v, t in zip(jaxpr.constvars, is_tracer) if t]
    kept_vars = [v for v, t in zip(jaxpr.constvars, is_tracer) if not t]
    new = Jaxpr(kept_vars, [*hoisted_vars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns,
                jaxpr.effects, jaxpr.debug_info)
    return (ClosedJaxpr(new, [c for c, t in zip(consts, is_tracer) if not t]),
            [c for c, t in zip(consts, is_tracer) if t])


def trace_subjaxpr(fun: Callable[..., Sequence[Any]], in_avals: Sequence[ShapedArray]
                   ) -> tuple[ClosedJaxpr, list[Any]]:
    """Traces a function for a higher-order primitive's body.

    All constants become explicit leading inputs, so the body is a closed jaxpr
    with no consts and the enclosing trace sees every value the body uses.
    """
    jaxpr, consts = trace_to_jaxpr(fun, in_avals)
    return ClosedJaxpr(convert_constvars_jaxpr(jaxpr), []), consts


# ---------------------------------------------------------------------------
# Closure conversion: a staged body takes the values it closed over as leading
# inputs, so rules written for the explicit arguments must skip them.


def _closure_error(kind: str) -> TypeError:
    return TypeError(
        f"Detected differentiation of a {kind} function with respect to a closed-over value. "
        f"That isn't supported because the custom rule only specifies how to differentiate "
        f"the {kind} function with respect to its explicit arguments. Pass the closed-over "
        "value into the function as an argument, and adapt the rule.")


def jvp_ignoring_consts(jvp: Callable, num_consts: int) -> Callable:
    """A flat JVP rule for a body whose first `num_consts` inputs were closed over."""
    if num_consts == 0:
        return jvp

    def rule(primals, tangents):
        if any(type(t) is not Zero for t in tangents[:num_consts]):
            raise _closure_error("custom_jvp")
        return jvp(primals[num_consts:], tangents[num_consts:])
    return rule


def fwd_ignoring_consts(fwd: Callable, num_consts: int) -> Callable:
    """A flat custom_vjp fwd rule for a body whose first `num_consts` inputs were closed over."""
    if num_consts == 0:
        return fwd

    def rule(primals, nonzeros):
        if any(nonzeros[:num_consts]):
            raise _closure_error("custom_vjp")
        return fwd(primals[num_consts:], nonzeros[num_consts:])
    return rule


def bwd_ignoring_consts(bwd: Callable, num_consts: int) -> Callable:
    """A flat custom_vjp bwd rule that gives no cotangent to the closed-over inputs."""
    if num_consts == 0:
        return bwd
    return lambda res, cts: [None] * num_consts + list(bwd(res, cts))
