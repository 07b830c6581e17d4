"""Partial evaluation: split a computation into what is known now and what is not.

`PartialEvalTrace` routes each primitive: if none of its inputs is *unknown*
(a tracer of the `unknown` staging trace) it runs on the `known` trace right
away; otherwise it is staged into the unknown jaxpr, and the known values it
uses become that jaxpr's constants, the *residuals*.

This one mechanism gives both
- `linearize`: JVP on top of a partial-eval trace whose unknowns are the
  tangents. Primal work runs once, now (so Python control flow on primal values
  works under `grad`); tangent work is recorded as a linear jaxpr over residuals.
- `partial_eval_jaxpr`: the same with a staging trace as the known side, which
  splits a jaxpr in two (how `grad` goes through `jit`).

Higher-order primitives that should be split rather than staged whole register
a rule in `partial_eval_rules`: `rule(trace, args, **params) -> outputs`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lamella.core.jaxpr import ClosedJaxpr, Jaxpr, eval_jaxpr
from lamella.core.staging import JaxprTracer, StagingTrace
from lamella.core.trace import Trace, set_current_trace
from lamella.core.util import merge_lists, weakref_lru_cache

partial_eval_rules: dict[Any, Callable] = {}


class PartialEvalTrace(Trace):
    """Runs known work on `known`; stages work touching unknowns into `unknown`."""

    description = "partial evaluation"

    def __init__(self, known: Trace, unknown: StagingTrace):
        self.known = known
        self.unknown = unknown

    def is_unknown(self, x: Any) -> bool:
        return isinstance(x, JaxprTracer) and x._trace is self.unknown

    def process_primitive(self, primitive, args, params):
        if not any(map(self.is_unknown, args)):
            with set_current_trace(self.known):
                return primitive.bind(*args, **params)
        rule = partial_eval_rules.get(primitive)
        if rule is not None:
            return rule(self, args, **params)
        with set_current_trace(self.unknown):
            return primitive.bind(*args, **params)

    def _side(self, args) -> Trace:
        return self.unknown if any(map(self.is_unknown, args)) else self.known

    def process_custom_jvp_call(self, primitive, fun, jvp, args, symbolic_zeros):
        side = self._side(args)
        with set_current_trace(side):
            return side.process_custom_jvp_call(primitive, fun, jvp, args, symbolic_zeros)

    def process_custom_vjp_call(self, primitive, fun, fwd, bwd, args, out_trees, symbolic_zeros):
        side = self._side(args)
        with set_current_trace(side):
            return side.process_custom_vjp_call(primitive, fun, fwd, bwd, args, out_trees,
                                                symbolic_zeros)


def partial_eval_jaxpr(closed: ClosedJaxpr, unknowns: Sequence[bool],
                       instantiate: bool | Sequence[bool] = False
                       ) -> tuple[ClosedJaxpr, ClosedJaxpr, tuple[bool, ...], int]:
    """Splits `closed` given which inputs are unknown.

    Returns `(known, unknown, out_unknowns, num_res)`: `known` maps the known
    inputs to the known outputs followed by `num_res` residuals; `unknown` maps
    the residuals followed by the unknown inputs to the unknown outputs.
    `instantiate` forces outputs to be unknown.
    """
    if isinstance(instantiate, bool):
        instantiate = (instantiate,) * len(closed.out_avals)
    return _partial_eval_jaxpr(closed, tuple(unknowns), tuple(instantiate))


@weakref_lru_cache()
def _partial_eval_jaxpr(closed, unknowns, instantiate):
    known_trace, unknown_trace = StagingTrace(), StagingTrace()
    known_in = [known_trace.new_arg(a) for a, u in zip(closed.in_avals, unknowns) if not u]
    unknown_in = [unknown_trace.new_arg(a) for a, u in zip(closed.in_avals, unknowns) if u]
    trace = PartialEvalTrace(known_trace, unknown_trace)
    with set_current_trace(trace):
        outs = eval_jaxpr(closed.jaxpr, closed.consts, *merge_lists(unknowns, known_in, unknown_in))
    trace.invalidate()
    out_unknowns = tuple(trace.is_unknown(o) or inst for o, inst in zip(outs, instantiate))

    jaxpr, consts = unknown_trace.to_jaxpr([o for o, u in zip(outs, out_unknowns) if u])
    is_res = [isinstance(c, JaxprTracer) and c._trace is known_trace for c in consts]
    residuals = [c for c, r in zip(consts, is_res) if r]
    unknown_jaxpr = Jaxpr([v for v, r in zip(jaxpr.constvars, is_res) if not r],
                          [*(v for v, r in zip(jaxpr.constvars, is_res) if r), *jaxpr.invars],
                          jaxpr.outvars, jaxpr.eqns, jaxpr.effects)
    unknown = ClosedJaxpr(unknown_jaxpr, [c for c, r in zip(consts, is_res) if not r])

    known_outs = [o for o, u in zip(outs, out_unknowns) if not u]
    jaxpr, consts = known_trace.to_jaxpr([*known_outs, *residuals])
    return ClosedJaxpr(jaxpr, consts), unknown, out_unknowns, len(residuals)
