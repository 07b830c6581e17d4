"""The autodiff interpreters: the JVP trace and transposition (JAX's `jax.interpreters.ad`).

The public API built on them (`jvp`, `grad`, `vjp`, ...) is in `autodiff_api.py`;
the rule tables and helpers they apply are in `rules.py`, re-exported here.

Forward mode runs the user's function on `JVPTracer`s, each a (primal, tangent)
pair, applying each primitive's JVP rule from `primitive_jvps`:

    rule(primals, tangents, **params) -> (primal_out, tangent_out)

Tangents known to be zero are the symbolic `Zero(aval)`, so no work is spent
on them. Reverse mode is `linearize` (forward mode with the tangent half staged
into a linear jaxpr, see `partial_eval`) followed by `backward_pass`, which walks
the linear jaxpr backwards with each primitive's transpose rule from
`primitive_transposes`:

    rule(cotangent_out, *args, **params) -> cotangents for each arg

where the linear arguments are `UndefinedPrimal`s and the others are values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lamella.core import dtypes
from lamella.core.avals import ShapedArray
from lamella.core.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var, jaxpr_as_fun
from lamella.core.primitive import Primitive
from lamella.core.rules import (
    UndefinedPrimal,
    Zero,
    add_jaxvals,
    add_jaxvals_p,
    add_tangents,
    defbilinear,
    defjvp,
    defjvp2,
    defjvp_zero,
    deflinear,
    deflinear2,
    get_primitive_transpose,
    instantiate_zeros,
    is_undefined_primal,
    linear_jvp,
    primitive_batchers,
    primitive_jvps,
    primitive_transposes,
    zeros_like_aval,
)
from lamella.core.source_info import call_site, carry_source_info, describe
from lamella.core.staging import trace_to_jaxpr
from lamella.core.trace import (
    Trace,
    Tracer,
    TraceTag,
    aval_of,
    check_foreign_tracer,
    concrete_value,
    current_trace,
    set_current_trace,
)
from lamella.core.util import merge_lists, weakref_lru_cache

__all__ = [  # the interpreters, and the rule tables and helpers re-exported from rules
    "JVPTrace", "JVPTracer", "UndefinedPrimal", "Zero", "add_jaxvals", "add_jaxvals_p",
    "add_tangents", "backward_pass", "custom_lin_p", "defbilinear", "defjvp", "defjvp2",
    "defjvp_zero", "deflinear", "deflinear2", "get_primitive_transpose", "instantiate_zeros",
    "is_undefined_primal", "jvp_flat", "jvp_jaxpr", "linear_jvp",
    "primitive_jvps", "primitive_transposes", "transpose_jaxpr", "zeros_like_aval",
]

# ---------------------------------------------------------------------------
# The JVP trace.


class JVPTracer(Tracer):
    """A primal value paired with its tangent."""

    __slots__ = ("primal", "tangent")

    def __init__(self, trace: JVPTrace, primal: Any, tangent: Any):
        self._trace = trace
        self.primal = primal
        self.tangent = tangent

    @property
    def aval(self) -> ShapedArray:
        return aval_of(self.primal)

    def to_concrete_value(self) -> Any:
        return concrete_value(self.primal)

    def _describe(self, type_of) -> str:
        def show(v):
            if isinstance(v, Tracer):
                return v._describe(type_of)
            return f"Zero({type_of(v.aval)})" if isinstance(v, Zero) else str(v)
        primal, tangent = self.primal, self.tangent
        # A tangent staged by another trace than the primal's is being linearized (grad,
        # vjp, linearize): JAX shows it as a GradTracer with the tangent's type only.
        if (isinstance(tangent, Tracer) and not isinstance(tangent, JVPTracer)
                and (not isinstance(primal, Tracer) or primal._trace is not tangent._trace)):
            return (f"GradTracer(primal={show(primal)}, "
                    f"typeof(tangent)={tangent.aval.str_short()})")
        return f"JVPTracer(primal={show(primal)}, tangent={show(tangent)})"

    def _origin(self) -> str:
        if isinstance(self.primal, Tracer):
            return self.primal._origin()
        return super()._origin()


class JVPTrace(Trace):
    """Interprets primitives on (primal, tangent) pairs with the JVP rules."""

    def __init__(self, parent: Trace, tag: TraceTag, description: str = "jvp"):
        self.parent = parent
        self.tag = tag
        self.description = description

    def to_primal_tangent(self, x: Any) -> tuple[Any, Any]:
        if isinstance(x, JVPTracer) and x._trace.tag is self.tag:
            return x.primal, x.tangent
        if isinstance(x, Tracer):
            check_foreign_tracer(x)
        return x, Zero.from_primal_value(x)

    def wrap(self, primal: Any, tangent: Any) -> Any:
        return primal if type(tangent) is Zero else JVPTracer(self, primal, tangent)

    def process_primitive(self, primitive, args, params):
        primals, tangents = [], []
        for x in args:
            p, t = self.to_primal_tangent(x)
            primals.append(p)
            tangents.append(t)
        if all(type(t) is Zero for t in tangents):
            with set_current_trace(self.parent):
                return primitive.bind(*primals, **params)
        rule = primitive_jvps.get(primitive)
        if rule is None:
            raise NotImplementedError(
                f"Differentiation rule (JVP) for primitive '{primitive.name}' not implemented: "
                f"register one in ad.primitive_jvps[{primitive.name}_p] (or use ad.defjvp / "
                "ad.deflinear) to differentiate through it.")
        with set_current_trace(self.parent), call_site():
            primal_out, tangent_out = rule(primals, tangents, **params)
        if primitive.multiple_results:
            for p, t in zip(primal_out, tangent_out):
                _check_tangent(primitive.name, p, t)
            return [self.wrap(p, t) for p, t in zip(primal_out, tangent_out)]
        _check_tangent(primitive.name, primal_out, tangent_out)
        return self.wrap(primal_out, tangent_out)

    def process_custom_jvp_call(self, primitive, fun, jvp, args, symbolic_zeros):
        primals, tangents = zip(*map(self.to_primal_tangent, args))
        with set_current_trace(self.parent):
            if all(type(t) is Zero for t in tangents):
                return self.parent.process_custom_jvp_call(primitive, fun, jvp, primals,
                                                           symbolic_zeros)
            primal_outs, tangent_outs = jvp(list(primals), list(tangents))
        for p, t in zip(primal_outs, tangent_outs):
            _check_tangent("the custom_jvp rule", p, t)
        return [self.wrap(p, t) for p, t in zip(primal_outs, tangent_outs)]

    def process_custom_vjp_call(self, primitive, fun, fwd, bwd, args, out_trees, symbolic_zeros):
        primals, tangents = zip(*map(self.to_primal_tangent, args))
        with set_current_trace(self.parent):
            if all(type(t) is Zero for t in tangents):
                return self.parent.process_custom_vjp_call(primitive, fun, fwd, bwd, primals,
                                                           out_trees, symbolic_zeros)
            nonzeros = [type(t) is not Zero for t in tangents]
            primal_outs, residuals = fwd(list(primals), nonzeros)
            out_avals = tuple(aval_of(p).to_tangent_aval() for p in primal_outs)
            tangent_outs = custom_lin_p.bind(
                *residuals, *map(instantiate_zeros, tangents), num_res=len(residuals),
                bwd=bwd, out_avals=out_avals, symbolic_zeros=symbolic_zeros)
        return [self.wrap(p, t) for p, t in zip(primal_outs, tangent_outs)]


# custom_vjp under JVP: `fwd` runs now; the tangent is `custom_lin` of the
# residuals, a linear primitive whose transpose calls `bwd`.

custom_lin_p = Primitive("custom_lin")
custom_lin_p.multiple_results = True


@custom_lin_p.def_impl
def _custom_lin_impl(*args, **params):
    raise TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function; "
                    "use reverse mode (grad, vjp) or define the function with custom_jvp.")


custom_lin_p.def_abstract_eval(lambda *avals, out_avals, **_: list(out_avals))


def _custom_lin_transpose(cts, *args, num_res, bwd, out_avals, symbolic_zeros):
    cts_in = bwd(list(args[:num_res]), list(cts))
    return [None] * num_res + list(cts_in)


primitive_transposes[custom_lin_p] = _custom_lin_transpose
# Batched tangents reach custom_lin only under forward mode (jacfwd, vmap of jvp).
primitive_batchers[custom_lin_p] = _custom_lin_impl


def _check_tangent(rule_name: str, primal: Any, tangent: Any) -> None:
    primal_aval = aval_of(primal)
    tangent_aval = tangent.aval if type(tangent) is Zero else aval_of(tangent)
    expected = dtypes.tangent_dtype(primal_aval.dtype)
    if primal_aval.shape != tangent_aval.shape or (
            tangent_aval.dtype != expected and tangent_aval.dtype != primal_aval.dtype):
        raise TypeError(
            f"The JVP rule of {rule_name} produced a tangent of type "
            f"{tangent_aval.str_short()} for a primal output of type {primal_aval.str_short()}: "
            f"a tangent must have its primal's shape and dtype "
            f"(dtype {dtypes.short_name(expected)} here).")


def jvp_flat(fun: Callable[..., Sequence[Any]], primals: Sequence[Any],
             tangents: Sequence[Any], parent: Trace, description: str = "jvp"
             ) -> tuple[list[Any], list[Any]]:
    """Runs `fun` on JVP tracers; returns primal outputs and (possibly Zero) tangents."""
    trace = JVPTrace(parent, TraceTag(), description)
    args = [trace.wrap(p, t) for p, t in zip(primals, tangents)]
    try:
        with set_current_trace(trace):
            outs = fun(*args)
        primal_outs, tangent_outs = [], []
        for out in outs:
            p, t = trace.to_primal_tangent(out)
            primal_outs.append(p)
            tangent_outs.append(t)
        return primal_outs, tangent_outs
    finally:
        trace.invalidate()


def jvp_jaxpr(closed: ClosedJaxpr, nonzeros: Sequence[bool],
              instantiate: bool | Sequence[bool] = False) -> tuple[ClosedJaxpr, tuple[bool, ...]]:
    """The jaxpr computing `closed` and its JVP.

    Inputs: all primals, then the tangents of the `nonzeros` inputs. Outputs: all
    primal outputs, then the nonzero tangent outputs (which are also returned).
    """
    if isinstance(instantiate, bool):
        instantiate = (instantiate,) * len(closed.out_avals)
    return _jvp_jaxpr(closed, tuple(nonzeros), tuple(instantiate))


@weakref_lru_cache()
def _jvp_jaxpr(closed, nonzeros, instantiate):
    in_avals = closed.in_avals
    n = len(in_avals)
    tangent_avals = [a.to_tangent_aval() for a, nz in zip(in_avals, nonzeros) if nz]
    out_nonzeros: list[bool] = []

    def fun(*args):
        primals, tangents_in = args[:n], iter(args[n:])
        tangents = [next(tangents_in) if nz else Zero(a.to_tangent_aval())
                    for a, nz in zip(in_avals, nonzeros)]
        primal_outs, tangent_outs = jvp_flat(jaxpr_as_fun(closed), primals, tangents,
                                             current_trace())
        tangent_outs = [instantiate_zeros(t) if inst else t
                        for t, inst in zip(tangent_outs, instantiate)]
        out_nonzeros.extend(type(t) is not Zero for t in tangent_outs)
        return [*primal_outs, *[t for t in tangent_outs if type(t) is not Zero]]

    jaxpr, consts = trace_to_jaxpr(fun, [*in_avals, *tangent_avals])
    return ClosedJaxpr(jaxpr, consts), tuple(out_nonzeros)


# ---------------------------------------------------------------------------
# Transposition.


def backward_pass(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any],
                  cotangents_out: Sequence[Any]) -> list[Any]:
    """Transposes a jaxpr that is linear in its `UndefinedPrimal` arguments.

    Equations that touch no linear input are evaluated forwards first (remat
    recomputation lives there); the rest are transposed in reverse order.
    Returns a cotangent (possibly Zero) per linear argument and None elsewhere.
    """
    primal_env: dict[Var, Any] = dict(zip(jaxpr.constvars, consts))
    linear_vars: set[Var] = set()
    for var, arg in zip(jaxpr.invars, args):
        if type(arg) is UndefinedPrimal:
            linear_vars.add(var)
        else:
            primal_env[var] = arg

    def read_primal(v):
        return v.val if type(v) is Literal else primal_env[v]

    linear_eqns = []
    for eqn in jaxpr.eqns:
        if any(type(v) is Var and v in linear_vars for v in eqn.invars):
            linear_eqns.append(eqn)
            linear_vars.update(eqn.outvars)
        else:
            with carry_source_info(eqn.source_info):
                outs = eqn.primitive.bind(*map(read_primal, eqn.invars), **eqn.params)
            primal_env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results
                                  else [outs]))

    ct_env: dict[Var, Any] = {}

    def write_ct(v, ct, source: str):
        if type(v) is not Var or v not in linear_vars or ct is None or type(ct) is Zero:
            return
        ct_aval = aval_of(ct)
        if ct_aval.shape != v.aval.shape:
            raise TypeError(f"{source} produced a cotangent of type {ct_aval.str_short()} "
                            f"for a value of type {v.aval.str_short()}: cotangents must "
                            "have the shape of the value they belong to.")
        ct_env[v] = add_tangents(ct_env[v], ct) if v in ct_env else ct

    for var, ct in zip(jaxpr.outvars, cotangents_out):
        write_ct(var, ct, "The output cotangent")

    for eqn in reversed(linear_eqns):
        cts = [ct_env.pop(v) if v in ct_env else Zero(v.aval.to_tangent_aval())
               for v in eqn.outvars]
        if all(type(c) is Zero for c in cts):
            continue
        rule = primitive_transposes.get(eqn.primitive)
        if rule is None:
            raise NotImplementedError(
                f"Transpose rule (for reverse-mode differentiation) for primitive "
                f"'{eqn.primitive.name}' not implemented: register one in "
                f"ad.primitive_transposes[{eqn.primitive.name}_p]. The primitive was "
                f"applied at {describe(eqn.source_info)}.")
        invals = [UndefinedPrimal(v.aval) if type(v) is Var and v in linear_vars
                  else read_primal(v) for v in eqn.invars]
        with carry_source_info(eqn.source_info):
            cts_in = rule(cts if eqn.primitive.multiple_results else cts[0], *invals,
                          **eqn.params)
        if len(cts_in) != len(eqn.invars):
            raise TypeError(f"The transpose rule of '{eqn.primitive.name}' returned "
                            f"{len(cts_in)} cotangents for {len(eqn.invars)} operands.")
        for v, ct in zip(eqn.invars, cts_in):
            write_ct(v, ct, f"The transpose rule of '{eqn.primitive.name}'")

    return [ct_env.get(v, Zero(v.aval.to_tangent_aval())) if type(a) is UndefinedPrimal
            else None for v, a in zip(jaxpr.invars, args)]


def transpose_jaxpr(closed: ClosedJaxpr, linear: Sequence[bool]) -> ClosedJaxpr:
    """The transpose of a jaxpr linear in its `linear` inputs.

    Inputs: the non-linear inputs, then one cotangent per output. Outputs: one
    cotangent per linear input (zeros where there is no dependence).
    """
    return _transpose_jaxpr(closed, tuple(linear))


@weakref_lru_cache()
def _transpose_jaxpr(closed, linear):
    in_avals = closed.in_avals
    nonlinear_avals = [a for a, lin in zip(in_avals, linear) if not lin]
    ct_avals = [a.to_tangent_aval() for a in closed.out_avals]

    def fun(*args):
        nonlinear, cts = args[:len(nonlinear_avals)], args[len(nonlinear_avals):]
        undefined = [UndefinedPrimal(a) for a, lin in zip(in_avals, linear) if lin]
        primals = merge_lists(linear, nonlinear, undefined)
        cts_in = backward_pass(closed.jaxpr, closed.consts, primals, cts)
        return [instantiate_zeros(ct) for ct, lin in zip(cts_in, linear) if lin]

    jaxpr, consts = trace_to_jaxpr(fun, [*nonlinear_avals, *ct_avals])
    return ClosedJaxpr(jaxpr, consts)
