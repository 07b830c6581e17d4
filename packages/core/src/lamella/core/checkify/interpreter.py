"""The checkify transformation: an interpreter of jaxprs that threads an `Error` value
through the equations.

Each equation is evaluated on the current trace (so checkify composes with jit, vmap
and grad around it); a primitive with a rule in `error_checks` is evaluated by its
rule instead, which also returns the updated error:

    error_checks[p](error, enabled_errors, *args, **params) -> (error, outs)

Automatic checks (NaNs, division by zero, out-of-bounds indices) are rules for the
primitives of a compiler layer (lamella.lax registers them); core holds the rules of
its own higher-order primitives (`jit`, `checkpoint`) and of `check`. A primitive
carrying a jaxpr is checkified by turning its body into a jaxpr that also takes and
returns the error's arrays (`jaxpr_to_checkify_jaxpr`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lamella.core.avals import ShapedArray
from lamella.core.checkify.errors import Error, ErrorEffect
from lamella.core.checkify.primitives import check_p, placeholder, update_error
from lamella.core.checkpoint import remat_p
from lamella.core.jaxpr import ClosedJaxpr, Jaxpr, Literal
from lamella.core.jit import jit_p
from lamella.core.primitive import Primitive
from lamella.core.source_info import carry_source_info
from lamella.core.staging import trace_to_jaxpr
from lamella.core.trace import aval_of
from lamella.core.tree_util import PyTreeDef, tree_flatten, tree_leaves, tree_unflatten

ErrorCheckRule = Callable[..., tuple[Error, Any]]
error_checks: dict[Primitive, ErrorCheckRule] = {}


def checkify_jaxpr(closed: ClosedJaxpr, enabled_errors: frozenset, error: Error,
                   *args: Any) -> tuple[Error, list[Any]]:
    """Evaluates `closed` on `args` with the enabled checks, starting from `error`."""
    return checkify_jaxpr_flat(closed.jaxpr, closed.consts, enabled_errors, error, *args)


def checkify_jaxpr_flat(jaxpr: Jaxpr, consts: Sequence[Any], enabled_errors: frozenset,
                        error: Error, *args: Any) -> tuple[Error, list[Any]]:
    env: dict = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(v):
        return v.val if type(v) is Literal else env[v]

    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        rule = error_checks.get(eqn.primitive)
        with carry_source_info(eqn.source_info):
            if rule is None:
                outs = eqn.primitive.bind(*invals, **eqn.params)
            else:
                error, outs = rule(error, enabled_errors, *invals, **eqn.params)
        env.update(zip(eqn.outvars, outs if eqn.primitive.multiple_results else [outs]))
    return error, [read(v) for v in jaxpr.outvars]


def with_placeholders(error: Error, effects: set[ErrorEffect]) -> Error:
    """`error` with a not-yet-happened slot for each kind in `effects` it lacks, so a
    loop's or a branch's error arrays have the same types on the way in and out."""
    pred, code, payload = dict(error._pred), dict(error._code), dict(error._payload)
    for effect in effects - pred.keys():
        pred[effect], code[effect], payload[effect] = placeholder(effect)
    return Error(pred, code, error._metadata, payload)


def jaxpr_to_checkify_jaxpr(closed: ClosedJaxpr, enabled_errors: frozenset, error: Error,
                            in_avals: Sequence[ShapedArray]
                            ) -> tuple[ClosedJaxpr, PyTreeDef, set[ErrorEffect]]:
    """`closed` as a jaxpr of (error arrays, *inputs) -> (error arrays, *outputs), the
    tree of its output error, and the kinds of error it can hold."""
    err_leaves, err_tree = tree_flatten(error)
    found: list = []

    def checked(*vals):
        out_error, outs = checkify_jaxpr(closed, enabled_errors,
                                         tree_unflatten(err_tree, vals[:len(err_leaves)]),
                                         *vals[len(err_leaves):])
        leaves, tree = tree_flatten(out_error)
        found.append((tree, set(out_error._pred)))
        return [*leaves, *outs]

    jaxpr, consts = trace_to_jaxpr(checked, [*map(aval_of, err_leaves), *in_avals])
    out_tree, effects = found[0]
    return ClosedJaxpr(jaxpr, consts), out_tree, effects


def num_leaves(error: Error) -> int:
    return len(tree_leaves(error))


# ---------------------------------------------------------------------------
# Rules of core's primitives.


def _check_discharge(error, enabled_errors, *leaves, err_tree, debug):
    """A `check` becomes an update of the error; kinds not enabled are dropped."""
    checked = tree_unflatten(err_tree, leaves)
    for effect, pred in checked._pred.items():
        if effect.error_type in enabled_errors:
            error = update_error(error, effect, pred, checked._code[effect],
                                 checked._payload[effect], {})
    return error._replace(_metadata={**checked._metadata, **error._metadata}), []


def _call_rule(primitive: Primitive, extra_inputs: Callable[[dict, int], dict]
               ) -> ErrorCheckRule:
    """The rule of a primitive calling its `jaxpr` param on its operands: the call runs
    the checkified body, with the error's arrays as extra leading operands."""
    def rule(error, enabled_errors, *args, jaxpr, **params):
        in_avals = [aval_of(a) for a in args]
        checked, out_tree, _ = jaxpr_to_checkify_jaxpr(jaxpr, enabled_errors, error, in_avals)
        err_leaves = tree_leaves(error)
        outs = primitive.bind(*err_leaves, *args, jaxpr=checked,
                              **extra_inputs(params, len(err_leaves)))
        n_out = out_tree.num_leaves
        return tree_unflatten(out_tree, outs[:n_out]), outs[n_out:]
    return rule


error_checks[check_p] = _check_discharge
error_checks[jit_p] = _call_rule(jit_p, lambda params, n: dict(
    params, donated_invars=(False,) * n + tuple(params["donated_invars"])))
error_checks[remat_p] = _call_rule(remat_p, lambda params, n: params)
