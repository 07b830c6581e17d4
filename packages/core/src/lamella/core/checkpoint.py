"""`checkpoint` (remat): trade memory for compute in reverse-mode differentiation.

A checkpointed function is bound as the `checkpoint` primitive carrying its
jaxpr. When differentiated in reverse mode, its partial-evaluation rule saves
only what the `policy` allows (by default nothing but the inputs) and the
backward pass recomputes the rest from them.

Policies are `policy(primitive, *avals, **params) -> bool`: may this
equation's output be saved? `checkpoint_policies` has JAX's common ones.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

from lamella.core import partial_eval
from lamella.core.api_util import abstractify_args, flatten_outputs, fun_name
from lamella.core.call_rules import register_call_rules
from lamella.core.jaxpr import ClosedJaxpr, Jaxpr, Var, dce_jaxpr, eval_jaxpr
from lamella.core.primitive import Primitive
from lamella.core.rules import deflinear, defvectorized
from lamella.core.staging import trace_subjaxpr, trace_to_jaxpr
from lamella.core.trace import set_current_trace
from lamella.core.tree_util import tree_flatten, tree_map, tree_unflatten
from lamella.core.util import merge_lists, partition_list


class RematPrimitive(Primitive):
    multiple_results = True

    def pp_params(self, params):
        return [("jaxpr", params["jaxpr"]), ("prevent_cse", params["prevent_cse"]),
                ("differentiated", params["differentiated"]),
                ("policy", getattr(params["policy"], "__name__", params["policy"]))]


remat_p = RematPrimitive("checkpoint")
remat_p.def_impl(lambda *args, jaxpr, **_: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args))
remat_p.def_abstract_eval(lambda *avals, jaxpr, **_: jaxpr.out_avals)


def _saveable(policy: Callable | None, eqn) -> bool:
    if policy is None:
        return False
    return bool(policy(eqn.primitive, *[v.aval for v in eqn.invars], **eqn.params))


def _remat_partial_eval(trace, args, *, jaxpr, prevent_cse, differentiated, policy):
    """Known side: the primal outputs plus policy-saved values. Unknown side:
    recompute the other residuals from the known inputs, then the tangents."""
    unknowns = [trace.is_unknown(x) for x in args]
    known, unknown, out_unknowns, num_res = partial_eval.partial_eval_jaxpr(jaxpr, unknowns)
    k = known.jaxpr
    n_known_outs = len(k.outvars) - num_res
    residuals = k.outvars[n_known_outs:]
    saved = [v for e in k.eqns if _saveable(policy, e) for v in e.outvars]
    # The recomputation: known inputs and saved values -> residuals.
    recompute = dce_jaxpr(Jaxpr(k.constvars, [*k.invars, *saved], residuals,
                                [e for e in k.eqns if not (_saveable(policy, e))]))
    needed_saved = _used_inputs(recompute)[len(k.invars):]
    saved = [v for v, used in zip(saved, needed_saved) if used]
    recompute = Jaxpr(k.constvars, [*k.invars, *saved], residuals, recompute.eqns)
    forward = dce_jaxpr(Jaxpr(k.constvars, k.invars, [*k.outvars[:n_known_outs], *saved],
                              k.eqns))
    known_args, unknown_args = partition_list(unknowns, args)
    params = dict(prevent_cse=prevent_cse, policy=policy)
    with set_current_trace(trace.known):
        known_outs = remat_p.bind(*known_args, jaxpr=ClosedJaxpr(forward, known.consts),
                                  differentiated=differentiated, **params)
    known_outs, saved_vals = known_outs[:n_known_outs], known_outs[n_known_outs:]
    backward = _compose(ClosedJaxpr(recompute, known.consts), unknown,
                        len(known_args), len(saved))
    with set_current_trace(trace.unknown):
        unknown_outs = remat_p.bind(*known_args, *saved_vals, *unknown_args, jaxpr=backward,
                                    differentiated=True, **params)
    return merge_lists(out_unknowns, known_outs, unknown_outs)


def _used_inputs(jaxpr: Jaxpr) -> list[bool]:
    used = {v for e in jaxpr.eqns for v in e.invars if isinstance(v, Var)}
    used.update(v for v in jaxpr.outvars if isinstance(v, Var))
    return [v in used for v in jaxpr.invars]


def _compose(recompute: ClosedJaxpr, unknown: ClosedJaxpr, n_known: int, n_saved: int
             ) -> ClosedJaxpr:
    """known inputs, saved values, unknown inputs -> unknown outputs."""
    avals = [*recompute.in_avals, *unknown.in_avals[len(recompute.out_avals):]]

    def fun(*args):
        residuals = eval_jaxpr(recompute.jaxpr, recompute.consts, *args[:n_known + n_saved])
        return eval_jaxpr(unknown.jaxpr, unknown.consts, *residuals, *args[n_known + n_saved:])
    jaxpr, consts = trace_to_jaxpr(fun, avals)
    return ClosedJaxpr(jaxpr, consts)


register_call_rules(remat_p, partial_eval_rule=False)
partial_eval.partial_eval_rules[remat_p] = _remat_partial_eval


# ---------------------------------------------------------------------------
# Names and policies.

name_p = Primitive("name")
name_p.def_impl(lambda x, *, name: x)
name_p.def_abstract_eval(lambda x, *, name: x)
deflinear(name_p, lambda ct, *, name: [ct])
defvectorized(name_p)


def checkpoint_name(x: Any, name: str) -> Any:
    """Tags `x` (a pytree) with a name that checkpoint policies can refer to.



    Args:
      x: a pytree of arrays.
      name: the name a checkpoint policy can refer to
        (`checkpoint_policies.save_only_these_names(name)`).

    Returns:
      `x`, unchanged in value.

    """
    return tree_map(lambda leaf: name_p.bind(leaf, name=name), x)


def _named_policy(names: Sequence[str], save_named: bool) -> Callable:
    names = frozenset(names)

    def policy(prim, *avals, **params):
        if prim is name_p:
            return (params["name"] in names) == save_named
        return not save_named
    return policy


def everything_saveable(prim, *avals, **params) -> bool:
    return True


def nothing_saveable(prim, *avals, **params) -> bool:
    return False


def dots_saveable(prim, *avals, **params) -> bool:
    return prim.name == "dot_general"


def dots_with_no_batch_dims_saveable(prim, *avals, **params) -> bool:
    if prim.name != "dot_general":
        return False
    (_, _), (lhs_batch, rhs_batch) = params["dimension_numbers"]
    return not lhs_batch and not rhs_batch


def save_only_these_names(*names: str) -> Callable:
    return _named_policy(names, save_named=True)


def save_anything_except_these_names(*names: str) -> Callable:
    policy = _named_policy(names, save_named=False)
    return policy


def save_any_names_but_these(*names: str) -> Callable:
    excluded = frozenset(names)

    def policy(prim, *avals, **params):
        return prim is name_p and params["name"] not in excluded
    return policy


checkpoint_policies = SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_only_these_names=save_only_these_names,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
)


def checkpoint(fun: Callable, *, prevent_cse: bool = True, policy: Callable | None = None,
               static_argnums: int | tuple[int, ...] = ()) -> Callable:
    """Makes `fun` recompute its intermediates in the backward pass instead of saving them.

    Args:
      fun: the function whose intermediates to recompute.
      prevent_cse: keep XLA from merging the recomputation with the forward pass.
      policy: `policy(primitive, *avals, **params) -> bool` says which values may
        be saved after all (see `checkpoint_policies`); None saves only inputs.
      static_argnums: arguments passed to `fun` as Python values.

    Returns:
      A function like `fun` whose reverse-mode derivative recomputes instead of
      storing.

    >>> import numpy as np
    >>> from lamella.core import grad
    >>> from lamella.core.structural import reduce_sum
    >>> grad(checkpoint(lambda x: reduce_sum(x, (0,))))(np.ones(2, np.float32))
    array([1., 1.], dtype=float32)
    """
    statics = {static_argnums} if isinstance(static_argnums, int) else set(static_argnums)
    name = fun_name(fun)

    @functools.wraps(fun)
    def remat_fun(*args, **kwargs):
        static_pos = {i % len(args) for i in statics if -len(args) <= i < len(args)}
        dyn = [a for i, a in enumerate(args) if i not in static_pos]
        flat, in_tree = tree_flatten((dyn, kwargs))
        out_tree = []

        def flat_fun(*leaves):
            dyn_vals, kw = tree_unflatten(in_tree, leaves)
            it = iter(dyn_vals)
            full = [a if i in static_pos else next(it) for i, a in enumerate(args)]
            outs, tree = flatten_outputs(fun(*full, **kw), f"checkpointed {name}")
            out_tree.append(tree)
            return outs

        avals = abstractify_args(flat, lambda: [f"leaf {i}" for i in range(len(flat))],
                                 f"checkpointed {name}")
        closed, consts = trace_subjaxpr(flat_fun, avals)
        outs = remat_p.bind(*consts, *flat, jaxpr=closed, prevent_cse=prevent_cse,
                            differentiated=False, policy=policy)
        return tree_unflatten(out_tree[0], outs)

    return remat_fun


remat = checkpoint
