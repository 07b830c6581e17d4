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
from typing import Any, NamedTuple

from lamella.core import ad, dtypes, partial_eval
from lamella.core.api_util import (
    abstractify_args,
    as_tuple,
    flatten_outputs,
    fun_name,
    fun_signature,
    resolve_static,
)
from lamella.core.call_rules import register_call_rules
from lamella.core.jaxpr import ClosedJaxpr, Jaxpr, Var, dce_jaxpr, eval_jaxpr
from lamella.core.primitive import Primitive
from lamella.core.rules import deflinear, defvectorized
from lamella.core.staging import trace_subjaxpr, trace_to_jaxpr
from lamella.core.trace import set_current_trace
from lamella.core.tree_util import (
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_map,
    tree_unflatten,
)
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


class SaveableType:
    """What a policy returns to save a value (as `True` does)."""

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "Saveable"


class RecomputeType:
    """What a policy returns to recompute a value (as `False` does)."""

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "Recompute"


Saveable = SaveableType()
Recompute = RecomputeType()


class Offloadable(NamedTuple):
    """What a policy returns to save a value in another memory (`src` -> `dst`, e.g.
    'device' -> 'pinned_host'). A CPU's device memory is host memory: the value is saved."""

    src: str
    dst: str


def _saveable(policy: Callable | None, eqn) -> bool:
    if policy is None:
        return False
    decision = policy(eqn.primitive, *[v.aval for v in eqn.invars], **eqn.params)
    return isinstance(decision, Offloadable) or bool(decision)


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


def save_from_both_policies(policy_1: Callable, policy_2: Callable) -> Callable:
    """Saves what either policy saves."""
    def policy(prim, *avals, **params):
        return bool(policy_1(prim, *avals, **params)) or bool(policy_2(prim, *avals, **params))
    return policy


def offload_dot_with_no_batch_dims(offload_src: str, offload_dst: str) -> Callable:
    """Offloads (saves in `offload_dst` memory) matrix products without batch dimensions."""
    def policy(prim, *avals, **params):
        if dots_with_no_batch_dims_saveable(prim, *avals, **params):
            return Offloadable(offload_src, offload_dst)
        return Recompute
    return policy


def save_and_offload_only_these_names(*, names_which_can_be_saved: Sequence[str],
                                      names_which_can_be_offloaded: Sequence[str],
                                      offload_src: str, offload_dst: str) -> Callable:
    """Saves values named in `names_which_can_be_saved`, offloads those in
    `names_which_can_be_offloaded`, recomputes the rest."""
    saved, offloaded = frozenset(names_which_can_be_saved), frozenset(names_which_can_be_offloaded)

    def policy(prim, *avals, **params):
        if prim is name_p and params["name"] in saved:
            return Saveable
        if prim is name_p and params["name"] in offloaded:
            return Offloadable(offload_src, offload_dst)
        return Recompute
    return policy


checkpoint_policies = SimpleNamespace(
    save_from_both_policies=save_from_both_policies,
    offload_dot_with_no_batch_dims=offload_dot_with_no_batch_dims,
    save_and_offload_only_these_names=save_and_offload_only_these_names,
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
               static_argnums: int | tuple[int, ...] = (),
               static_argnames: str | tuple[str, ...] = (), concrete: bool = False) -> Callable:
    """Makes `fun` recompute its intermediates in the backward pass instead of saving them.

    Args:
      fun: the function whose intermediates to recompute.
      prevent_cse: keep XLA from merging the recomputation with the forward pass.
      policy: `policy(primitive, *avals, **params) -> bool` says which values may
        be saved after all (see `checkpoint_policies`); None saves only inputs.
      static_argnums: arguments passed to `fun` as Python values.
      static_argnames: keyword arguments passed to `fun` as Python values.
      concrete: removed from JAX in 0.10 (as there, True is an error naming
        `static_argnums`, its replacement).

    Returns:
      A function like `fun` whose reverse-mode derivative recomputes instead of
      storing.

    >>> import numpy as np
    >>> from lamella.core import grad
    >>> from lamella.core.structural import reduce_sum
    >>> grad(checkpoint(lambda x: reduce_sum(x, (0,))))(np.ones(2, np.float32))
    array([1., 1.], dtype=float32)
    """
    if concrete:
        raise NotImplementedError(
            "The `concrete` option to checkpoint was removed (as in JAX 0.10): mark the "
            "arguments that Python control flow reads with `static_argnums` instead.")
    statics, static_names = resolve_static(fun_signature(fun), as_tuple(static_argnums),
                                           as_tuple(static_argnames))
    name = fun_name(fun)

    @functools.wraps(fun)
    def remat_fun(*args, **kwargs):
        static_pos = {i % len(args) for i in statics if -len(args) <= i < len(args)}
        dyn = [a for i, a in enumerate(args) if i not in static_pos]
        static_kwargs = {k: v for k, v in kwargs.items() if k in static_names}
        kwargs = {k: v for k, v in kwargs.items() if k not in static_names}
        flat, in_tree = tree_flatten((dyn, kwargs))
        out_tree = []

        def flat_fun(*leaves):
            dyn_vals, kw = tree_unflatten(in_tree, leaves)
            it = iter(dyn_vals)
            full = [a if i in static_pos else next(it) for i, a in enumerate(args)]
            outs, tree = flatten_outputs(fun(*full, **kw, **static_kwargs),
                                         f"checkpointed {name}")
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


def saved_residuals(fun: Callable, *args: Any, **kwargs: Any) -> list[tuple[Any, str]]:
    """What reverse-mode differentiation of `fun` at `args` saves for the backward pass:
    a list of (aval, where it comes from), as `print_saved_residuals` shows it."""
    flat_args, in_tree = tree_flatten(args)
    out_tree = []

    def flat_fun(*leaves):
        outs, tree = flatten_outputs(fun(*tree_unflatten(in_tree, leaves), **kwargs),
                                     fun_name(fun))
        out_tree.append(tree)
        return outs

    avals = abstractify_args(flat_args, lambda: [f"args{i}" for i in range(len(flat_args))],
                             f"print_saved_residuals of {fun_name(fun)}")
    jaxpr, consts = trace_to_jaxpr(flat_fun, avals)
    closed = ClosedJaxpr(jaxpr, consts)
    differentiable = [dtypes.is_inexact(a.dtype) for a in avals]
    jvp_closed, _ = ad.jvp_jaxpr(closed, differentiable)
    unknowns = [False] * len(avals) + [True] * sum(differentiable)
    known, _, _, num_res = partial_eval.partial_eval_jaxpr(jvp_closed, unknowns)
    k = known.jaxpr
    residuals = k.outvars[len(k.outvars) - num_res:]
    producers = {v: e for e in k.eqns for v in e.outvars}
    names = _argument_names(fun, args, in_tree)
    described = []
    for v in residuals:
        if v in k.invars:
            where = f"from the argument {names[k.invars.index(v)]}"
        elif v in producers:
            eqn = producers[v]
            where = f"output of {eqn.primitive.name}"
            if eqn.source_info is not None:
                info = eqn.source_info
                where += f" from {info.filename}:{info.lineno} ({info.function})"
        else:
            where = "a constant"
        described.append((v.aval, where))
    return described


def _argument_names(fun: Callable, args: tuple, in_tree) -> list[str]:
    params = list(fun_signature(fun).parameters) if fun_signature(fun) else []
    names = []
    for i, arg in enumerate(args):
        base = params[i] if i < len(params) else f"args[{i}]"
        names.extend(base + keystr(path) for path, _ in tree_flatten_with_path(arg)[0])
    return names


def print_saved_residuals(fun: Callable, *args: Any, **kwargs: Any) -> None:
    """Prints what differentiating `fun` in reverse mode at `args` keeps in memory.

    >>> import numpy as np
    >>> from lamella.core.structural import reduce_sum
    >>> print_saved_residuals(lambda x: reduce_sum(x, (0,)), np.ones(3, np.float32))
    """
    for aval, where in saved_residuals(fun, *args, **kwargs):
        print(f"{aval.str_short()} {where}")
