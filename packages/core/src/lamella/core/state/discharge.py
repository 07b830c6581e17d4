"""Discharge: turning a stateful jaxpr into a functional one, and `run_state`.

A stateful jaxpr takes refs and reads and writes them with `get`, `swap` and
`addupdate` (and with higher-order primitives whose bodies do). Discharging
evaluates it with every ref replaced by the array it currently holds: each
equation that touches a ref goes through its *discharge rule*, which computes
its results and the refs' new contents functionally. The result computes the
same outputs plus the final contents of every ref argument.

The rules that index arrays need lax's slicing operations, so lamella.lax
registers them (`lamella.lax.state_rules`); a higher layer registers rules for
its own primitives with `register_discharge_rule`.

A rule is `rule(in_avals, out_avals, *args, **params) -> (new_args, outs)`:
`new_args` holds, per operand, the new contents of a ref operand (or None when
it is unchanged), and `outs` the equation's results (a list if the primitive
has multiple results).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lamella.core.avals import get_aval
from lamella.core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from lamella.core.staging import convert_constvars_jaxpr, trace_to_jaxpr
from lamella.core.state.primitives import addupdate_p, get_p, swap_p
from lamella.core.state.types import AbstractRef, is_ref_aval
from lamella.core.state.views import Ref
from lamella.core.structural import add_any_p
from lamella.core.tree_util import tree_flatten, tree_unflatten

__all__ = ["discharge_rules", "discharge_state", "eval_discharged", "register_discharge_rule",
           "run_state", "stateful_primitives", "trace_stateful", "trace_stateful_body"]

discharge_rules: dict[Any, Callable] = {}
"""Per primitive: how it acts on the contents of the refs it is given."""

stateful_primitives: set[Any] = set()
"""Primitives discharged even when no ref is among their operands (one that allocates
refs of its own, such as Pallas's `run_scoped`)."""


def register_discharge_rule(primitive: Any) -> Callable[[Callable], Callable]:
    """Decorator registering `primitive`'s discharge rule."""
    def register(rule: Callable) -> Callable:
        discharge_rules[primitive] = rule
        return rule
    return register


def eval_discharged(jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any]
                    ) -> tuple[list[Any], list[Any]]:
    """Evaluates a stateful jaxpr on the current trace with each ref argument replaced by
    its contents. Returns the outputs and the final contents of the ref arguments."""
    env: dict[Any, Any] = {}

    def read(v):
        return v.val if type(v) is Literal else env[v]

    for var, val in zip(jaxpr.constvars, consts):
        env[var] = val
    for var, val in zip(jaxpr.invars, args):
        env[var] = val
    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        in_avals = [v.aval for v in eqn.invars]
        if eqn.primitive in stateful_primitives or any(is_ref_aval(a) for a in in_avals):
            rule = discharge_rules.get(eqn.primitive)
            if rule is None:
                raise NotImplementedError(
                    f"No discharge rule for primitive '{eqn.primitive}', which was applied to "
                    "a ref: refs can be used only by get/swap/addupdate and by the primitives "
                    "that have discharge rules (lax's cond, while_loop, scan, fori_loop).")
            new_invals, outs = rule(in_avals, [v.aval for v in eqn.outvars], *invals,
                                    **eqn.params)
            for var, new in zip(eqn.invars, new_invals):
                if new is not None:
                    env[var] = new
        else:
            outs = eqn.primitive.bind(*invals, **eqn.params)
        if not eqn.primitive.multiple_results:
            outs = [outs]
        for var, val in zip(eqn.outvars, outs):
            env[var] = val
    outs = [read(v) for v in jaxpr.outvars]
    finals = [env[v] for v in jaxpr.invars if is_ref_aval(v.aval)]
    return outs, finals


def discharge_state(jaxpr: Jaxpr | ClosedJaxpr, consts: Sequence[Any] = ()) -> ClosedJaxpr:
    """The functional form of a stateful jaxpr.

    Its inputs are those of `jaxpr` with each ref replaced by an array of the ref's
    shape and dtype; its outputs are those of `jaxpr` followed by the final
    contents of each ref input, in order.
    """
    if isinstance(jaxpr, ClosedJaxpr):
        jaxpr, consts = jaxpr.jaxpr, jaxpr.consts
    in_avals = [v.aval.inner_aval if is_ref_aval(v.aval) else v.aval for v in jaxpr.invars]

    def functional(*args):
        outs, finals = eval_discharged(jaxpr, consts, args)
        return [*outs, *finals]

    new, new_consts = trace_to_jaxpr(functional, in_avals)
    return ClosedJaxpr(new, new_consts)


def trace_stateful(fun: Callable[..., Sequence[Any]], in_avals: Sequence[Any],
                   names: Sequence[str | None] | None = None) -> tuple[Jaxpr, list[Any]]:
    """Traces `fun` (a function of flat values, refs where `in_avals` has an
    `AbstractRef`, returning a flat list) into a stateful jaxpr and its consts.
    Ref arguments reach `fun` as `Ref` views, named after `names` for errors."""
    names = list(names) if names is not None else [None] * len(in_avals)

    def wrapped(*args):
        return fun(*[Ref(a, name=n) if is_ref_aval(av) else a
                     for a, av, n in zip(args, in_avals, names)])
    return trace_to_jaxpr(wrapped, in_avals)


def trace_stateful_body(fun: Callable[..., Sequence[Any]], in_avals: Sequence[Any]
                        ) -> tuple[ClosedJaxpr, list[Any]]:
    """Like `trace_stateful`, for the body of a higher-order primitive: everything the
    body closes over (refs of the enclosing computation included) becomes a leading
    input, and is returned to be passed as an operand."""
    jaxpr, consts = trace_stateful(fun, in_avals)
    return ClosedJaxpr(convert_constvars_jaxpr(jaxpr), []), consts


def run_state(f: Callable[[Any], None]) -> Callable[[Any], Any]:
    """`run_state(f)(init)`: runs `f` on refs initialised with the pytree `init` and
    returns their final contents (a pytree like `init`).

    >>> import numpy as np
    >>> def body(refs):
    ...     x_ref, y_ref = refs
    ...     y_ref[...] = x_ref[...]
    >>> [float(v) for v in run_state(body)((np.float32(1), np.float32(0)))]
    [1.0, 1.0]
    """
    def run(init: Any) -> Any:
        leaves, tree = tree_flatten(init)
        leaves = [np.asarray(x, get_aval(x).dtype) if isinstance(x, (int, float, complex, bool))
                  else x for x in leaves]
        avals = [AbstractRef(get_aval(x)) for x in leaves]

        def body(*refs):
            f(tree_unflatten(tree, list(refs)))
            return []

        jaxpr, consts = trace_stateful(body, avals)
        _, finals = eval_discharged(jaxpr, consts, leaves)
        return tree_unflatten(tree, finals)
    return run


# ---------------------------------------------------------------------------
# Whole-ref access needs no slicing, so core discharges it itself; lamella.lax
# replaces these rules with ones for every index.


def _whole(specs, what: str) -> None:
    if not all(s.is_full() for s in specs):
        raise NotImplementedError(
            f"Discharging an indexed ref {what} needs lamella.lax's slicing rules: import "
            "lamella.lax (core alone discharges only whole-ref access, ref[...]).")


@register_discharge_rule(get_p)
def _get_whole(in_avals, out_avals, ref, *dyn, specs):
    _whole(specs, "read")
    return [None] * (1 + len(dyn)), ref


@register_discharge_rule(swap_p)
def _swap_whole(in_avals, out_avals, ref, val, *dyn, specs):
    _whole(specs, "write")
    return [val, *[None] * (1 + len(dyn))], ref


@register_discharge_rule(addupdate_p)
def _addupdate_whole(in_avals, out_avals, ref, val, *dyn, specs):
    _whole(specs, "update")
    return [add_any_p.bind(ref, val), *[None] * (1 + len(dyn))], []
