"""`while_loop`: a loop whose trip count is decided at run time, as one primitive.

`while_p` carries two closed jaxprs: `cond_jaxpr` (cond consts, carry -> bool[])
and `body_jaxpr` (body consts, carry -> carry). Its operands are the cond
consts, the body consts, then the initial carry; its results are the final
carry. Every transformation is a rule here, next to the others:

- JVP: the loop carries (primals, tangents); which tangents are nonzero is a
  fixpoint over the body, and the condition sees primals only.
- Partial evaluation: the known part of the carry runs in a loop of its own;
  the rest is staged whole, since a loop of unknown length can save no
  per-iteration residuals. Transposing that staged loop is the error that
  reverse mode through `while_loop` raises.
- Batching: batched carries and consts give a batched loop; a batched
  predicate runs the loop while any element is active and freezes the
  finished ones (a select between the old and the new carry).
- Lowering: one `stablehlo.while`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from lamella.core import ShapedArray, ad, batching, partial_eval
from lamella.core.config import config
from lamella.core.jaxpr import ClosedJaxpr, Jaxpr, Var, dce_jaxpr, jaxpr_as_fun
from lamella.core.staging import trace_to_jaxpr
from lamella.core.structural import broadcast_in_dim
from lamella.core.trace import aval_of, set_current_trace
from lamella.core.tree_util import tree_flatten, tree_structure, tree_unflatten
from lamella.core.util import merge_lists, split_list
from lamella.lax.control_flow.common import (
    TraceCache,
    avals_of,
    check_carry,
    describe_types,
    promote_weak_carry,
    trace_fun,
)
from lamella.lax.logical import select_n
from lamella.lax.lowering import (
    aval_to_ir_type,
    closed_consts,
    hlo,
    ir,
    lower_jaxpr,
    register_lowering,
)
from lamella.lax.reductions import reduce_or
from lamella.lax.standard import standard_primitive

__all__ = ["while_loop", "while_p"]

T = TypeVar("T")


def while_loop(cond_fun: Callable[[T], Any], body_fun: Callable[[T], T], init_val: T) -> T:
    """Runs `body_fun` on the carry while `cond_fun(carry)` is true; returns the carry.

    The semantics of this Python loop, staged as one loop of the compiled program:

        val = init_val
        while cond_fun(val):
            val = body_fun(val)
        return val

    `cond_fun` must return a boolean scalar, and `body_fun` a carry with the
    structure, shapes and dtypes of `init_val`. Forward-mode differentiation
    works; reverse mode does not (the trip count is unknown until run time):
    use `lax.scan`, or `lax.fori_loop` with concrete bounds, for that.

    Args:
      cond_fun: `carry -> boolean scalar`.
      body_fun: `carry -> carry`, keeping structure, shapes and dtypes.
      init_val: the initial carry, a pytree of arrays.

    Returns:
      The carry when `cond_fun` first returns false.

    >>> import numpy as np
    >>> import lamella.lax as lax
    >>> while_loop(lambda x: lax.lt(x, 10), lambda x: lax.mul(x, 2), np.int32(1))
    Array(16, dtype=int32)
    """
    if config.read("disable_jit"):
        val = init_val
        while cond_fun(val):
            val = body_fun(val)
        return val
    leaves, args_tree = tree_flatten((init_val,))
    carry_tree = tree_structure(init_val)
    avals = tuple(avals_of(leaves))
    cond, consts, body = _traces(
        (cond_fun, body_fun), (args_tree, avals),
        lambda: _trace_loop(cond_fun, body_fun, args_tree, avals))
    if body.out_tree == carry_tree:
        leaves, changed = promote_weak_carry(leaves, avals, body.out_avals)
        if changed:
            avals = tuple(avals_of(leaves))
            cond, consts, body = _traces(
                (cond_fun, body_fun), (args_tree, avals),
                lambda: _trace_loop(cond_fun, body_fun, args_tree, avals))
    check_carry("while_loop body_fun", carry_tree, avals, body.out_tree, body.out_avals)
    outs = while_p.bind(*cond.consts, *body.consts, *leaves, cond_jaxpr=cond.closed,
                        body_jaxpr=body.closed, cond_nconsts=len(cond.consts),
                        body_nconsts=len(body.consts))
    return tree_unflatten(carry_tree, outs)


_traces = TraceCache()


def _trace_loop(cond_fun, body_fun, args_tree, avals):
    """(cond, all consts, body): the consts item lets the cache skip closures over tracers."""
    cond = trace_fun(cond_fun, args_tree, avals, "while_loop cond_fun")
    _check_predicate(cond)
    body = trace_fun(body_fun, args_tree, avals, "while_loop body_fun")
    return cond, [*cond.consts, *body.consts], body


def _check_predicate(cond) -> None:
    avals = cond.out_avals
    if len(avals) != 1 or avals[0].shape != () or avals[0].dtype != np.dtype(bool):
        raise TypeError("while_loop cond_fun must return a boolean scalar, but it returned "
                        f"{describe_types(cond.out_tree, avals)}.")


# ---------------------------------------------------------------------------
# The primitive.

while_p = standard_primitive("while", multiple_results=True)


@while_p.def_abstract_eval
def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    carry = avals[cond_nconsts + body_nconsts:]
    body_out = body_jaxpr.out_avals
    if len(carry) != len(body_out) or any(
            a.shape != b.shape or a.dtype != b.dtype for a, b in zip(carry, body_out)):
        raise TypeError(f"while's body maps a carry of types "
                        f"({', '.join(a.str_short() for a in carry)}) to "
                        f"({', '.join(a.str_short() for a in body_out)}).")
    # The result is the init (no iteration) or a body output: weak only if both are.
    return [a.update(weak_type=a.weak_type and b.weak_type) for a, b in zip(carry, body_out)]


# --- JVP ----------------------------------------------------------------------


def _with_unused_inputs(closed: ClosedJaxpr, avals: list[ShapedArray]) -> ClosedJaxpr:
    """`closed` taking extra trailing inputs that it ignores."""
    jaxpr = closed.jaxpr
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, [*jaxpr.invars, *map(Var, avals)], jaxpr.outvars,
                             jaxpr.eqns, jaxpr.effects, jaxpr.debug_info), closed.consts)


def _with_inputs_ordered(closed: ClosedJaxpr, order: list[int]) -> ClosedJaxpr:
    """`closed` taking its inputs in a new order: input i is old input order[i]."""
    jaxpr = closed.jaxpr
    invars = [jaxpr.invars[i] for i in order]
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, invars, jaxpr.outvars, jaxpr.eqns, jaxpr.effects,
                             jaxpr.debug_info), closed.consts)


def _nonzero(t: Any) -> bool:
    return type(t) is not ad.Zero


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc, bc, init = split_list(primals, [cond_nconsts, body_nconsts])
    _, bc_dot, init_dot = split_list(tangents, [cond_nconsts, body_nconsts])
    bc_nz = list(map(_nonzero, bc_dot))
    # A carry's tangent is nonzero if its init's is, or if the body makes it so
    # from nonzero tangents: iterate until the set stops growing.
    carry_nz = list(map(_nonzero, init_dot))
    while True:
        body_jvp, out_nz = ad.jvp_jaxpr(body_jaxpr, bc_nz + carry_nz, instantiate=carry_nz)
        if list(out_nz) == carry_nz:
            break
        carry_nz = [a or b for a, b in zip(carry_nz, out_nz)]
    zeros = [ad.Zero(aval_of(x).to_tangent_aval()) for x in init]
    if not any(carry_nz):
        return while_p.bind(*primals, cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr,
                            cond_nconsts=cond_nconsts, body_nconsts=body_nconsts), zeros
    # jvp_jaxpr takes (consts, carry, const tangents, carry tangents); the loop
    # body takes its consts first, so the const tangents move ahead of the carry.
    nb, nc, nbd, ncd = len(bc), len(init), sum(bc_nz), sum(carry_nz)
    order = [*range(nb), *range(nb + nc, nb + nc + nbd), *range(nb, nb + nc),
             *range(nb + nc + nbd, nb + nc + nbd + ncd)]
    body = _with_inputs_ordered(body_jvp, order)
    tangent_avals = [aval_of(x).to_tangent_aval() for x, nz in zip(init, carry_nz) if nz]
    cond = _with_unused_inputs(cond_jaxpr, tangent_avals)
    carry_dot = [ad.instantiate_zeros(t) for t, nz in zip(init_dot, carry_nz) if nz]
    outs = while_p.bind(*cc, *bc, *[t for t in bc_dot if _nonzero(t)], *init, *carry_dot,
                        cond_jaxpr=cond, body_jaxpr=body, cond_nconsts=cond_nconsts,
                        body_nconsts=nb + nbd)
    tangent_outs = iter(outs[nc:])
    return outs[:nc], [next(tangent_outs) if nz else z for nz, z in zip(carry_nz, zeros)]


ad.primitive_jvps[while_p] = _while_jvp


# --- partial evaluation and transposition -------------------------------------


def _known_part(closed: ClosedJaxpr, unknowns: list[bool], instantiate: list[bool]
                ) -> tuple[ClosedJaxpr, tuple[bool, ...]]:
    """The jaxpr computing the known outputs of `closed` from its known inputs alone."""
    known, _, out_unknowns, num_res = partial_eval.partial_eval_jaxpr(closed, unknowns,
                                                                      instantiate)
    n_known_outs = len(known.jaxpr.outvars) - num_res
    jaxpr = dce_jaxpr(known.jaxpr, [i < n_known_outs for i in range(len(known.jaxpr.outvars))])
    return ClosedJaxpr(jaxpr, known.consts), out_unknowns


def _while_partial_eval(trace, args, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    params = dict(cond_jaxpr=cond_jaxpr, body_jaxpr=body_jaxpr, cond_nconsts=cond_nconsts,
                  body_nconsts=body_nconsts)
    unknowns = [trace.is_unknown(x) for x in args]
    cc_uk, bc_uk, carry_uk = split_list(unknowns, [cond_nconsts, body_nconsts])
    # Which carries are unknown: those whose init is, plus what the body derives
    # from unknowns, to a fixpoint.
    while True:
        _, _, out_uk, _ = partial_eval.partial_eval_jaxpr(body_jaxpr, bc_uk + carry_uk)
        if all(a or not b for a, b in zip(carry_uk, out_uk)):
            break
        carry_uk = [a or b for a, b in zip(carry_uk, out_uk)]
    cond_known, (pred_uk,) = _known_part(cond_jaxpr, cc_uk + carry_uk, [False])
    if pred_uk or all(carry_uk):
        with set_current_trace(trace.unknown):
            return while_p.bind(*args, **params)
    # The known carries loop on their own now (their condition and updates need
    # no unknown value). The unknown ones need every iteration's known values,
    # which a loop of unknown length cannot save, so the whole loop is staged,
    # recomputing the known carries alongside.
    body_known, _ = _known_part(body_jaxpr, bc_uk + carry_uk, carry_uk)
    cc, bc, carry = split_list(args, [cond_nconsts, body_nconsts])
    known_cc = [x for x, u in zip(cc, cc_uk) if not u]
    known_bc = [x for x, u in zip(bc, bc_uk) if not u]
    known_carry = [x for x, u in zip(carry, carry_uk) if not u]
    with set_current_trace(trace.known):
        known_outs = while_p.bind(*known_cc, *known_bc, *known_carry, cond_jaxpr=cond_known,
                                  body_jaxpr=body_known, cond_nconsts=len(known_cc),
                                  body_nconsts=len(known_bc))
    if not any(carry_uk):
        return known_outs
    with set_current_trace(trace.unknown):
        staged = while_p.bind(*args, **params)
    return merge_lists(carry_uk, known_outs, [o for o, u in zip(staged, carry_uk) if u])


partial_eval.partial_eval_rules[while_p] = _while_partial_eval


def _while_transpose(cts, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    raise ValueError(
        "Reverse-mode differentiation does not work for lax.while_loop (nor for "
        "lax.fori_loop with traced bounds, which runs as a while_loop): the number of "
        "iterations is only known at run time, so the values each iteration needs on the "
        "backward pass cannot be saved. Use lax.scan, or lax.fori_loop with static "
        "(concrete Python int) lower and upper bounds, which supports reverse mode. "
        "Forward mode (jvp, linearize, jacfwd) works with while_loop.")


ad.primitive_transposes[while_p] = _while_transpose


# --- batching -----------------------------------------------------------------


def _while_batch(axis_data, args, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts,
                 body_nconsts):
    size = axis_data.size
    cc, bc, init = split_list(args, [cond_nconsts, body_nconsts])
    cc_dims, bc_dims, init_dims = split_list(dims, [cond_nconsts, body_nconsts])
    # Batched carries live at axis 0. A carry is batched if its init is or the
    # body makes it so (a batched const or another batched carry flows in).
    carry_bat = [d is not batching.not_mapped for d in init_dims]

    def carry_dims(bat):
        return [0 if b else batching.not_mapped for b in bat]

    while True:
        body, out_dims = batching.batch_jaxpr(body_jaxpr, axis_data,
                                              bc_dims + carry_dims(carry_bat), carry_bat)
        out_bat = [d is not batching.not_mapped for d in out_dims]
        if out_bat == carry_bat:
            break
        carry_bat = [a or b for a, b in zip(carry_bat, out_bat)]
    cond, (pred_dim,) = batching.batch_jaxpr(cond_jaxpr, axis_data,
                                             cc_dims + carry_dims(carry_bat))
    pred_batched = pred_dim is not batching.not_mapped
    if pred_batched and not all(carry_bat):
        # Elements finish at different iterations, so every carry is per element.
        carry_bat = [True] * len(init)
        body, _ = batching.batch_jaxpr(body_jaxpr, axis_data, bc_dims + carry_dims(carry_bat),
                                       True)
        cond, _ = batching.batch_jaxpr(cond_jaxpr, axis_data, cc_dims + carry_dims(carry_bat))
    init = [batching.at_front(x, d, size) if b else x
            for x, d, b in zip(init, init_dims, carry_bat)]
    if pred_batched:
        cond, body = _any_active_loop(cond, body, len(cc), [aval_of(x) for x in cc],
                                      [aval_of(x) for x in bc], [aval_of(x) for x in init])
        outs = while_p.bind(*cc, *cc, *bc, *init, cond_jaxpr=cond, body_jaxpr=body,
                            cond_nconsts=len(cc), body_nconsts=len(cc) + len(bc))
    else:
        outs = while_p.bind(*cc, *bc, *init, cond_jaxpr=cond, body_jaxpr=body,
                            cond_nconsts=len(cc), body_nconsts=len(bc))
    return outs, carry_dims(carry_bat)


def _any_active_loop(cond: ClosedJaxpr, body: ClosedJaxpr, ncc: int, cc_avals, bc_avals,
                     carry_avals) -> tuple[ClosedJaxpr, ClosedJaxpr]:
    """The condition and body of a loop over a batch with a per-element predicate.

    The loop runs while any element's predicate holds; the body steps only the
    active elements and keeps the others' carries. The body needs the predicate,
    so it takes the cond consts ahead of its own.
    """
    cond_fun, body_fun = jaxpr_as_fun(cond), jaxpr_as_fun(body)

    def any_active(*args):
        (active,) = cond_fun(*args)
        return [reduce_or(active, (0,))]

    def step_active(*args):
        cc, bc, carry = split_list(args, [ncc, len(bc_avals)])
        (active,) = cond_fun(*cc, *carry)
        stepped = body_fun(*bc, *carry)
        masks = {aval_of(active).shape: active}  # one broadcast per carry shape
        for old in carry:
            shape = aval_of(old).shape
            if shape not in masks:
                masks[shape] = broadcast_in_dim(active, shape, (0,))
        return [select_n(masks[aval_of(old).shape], old, new)
                for old, new in zip(carry, stepped)]

    def closed(fun, avals):
        jaxpr, consts = trace_to_jaxpr(fun, avals)
        return ClosedJaxpr(jaxpr, consts)

    return (closed(any_active, [*cc_avals, *carry_avals]),
            closed(step_active, [*cc_avals, *bc_avals, *carry_avals]))


batching.fancy_primitive_batchers[while_p] = _while_batch


# --- lowering -----------------------------------------------------------------


def _while_lowering(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    # The consts travel in the loop state (unchanged), so the regions use only
    # their own arguments.
    types = [aval_to_ir_type(a) for a in ctx.avals_in]
    loop = hlo.WhileOp(types, list(args))
    module = ctx.module_context
    cond_block = loop.regions[0].blocks.append(*types)
    with ir.InsertionPoint(cond_block):
        cc, _, carry = split_list(list(cond_block.arguments), [cond_nconsts, body_nconsts])
        pred = lower_jaxpr(module, cond_jaxpr.jaxpr, closed_consts(cond_jaxpr), [*cc, *carry])
        hlo.return_(pred)
    body_block = loop.regions[1].blocks.append(*types)
    with ir.InsertionPoint(body_block):
        cc, bc, carry = split_list(list(body_block.arguments), [cond_nconsts, body_nconsts])
        new = lower_jaxpr(module, body_jaxpr.jaxpr, closed_consts(body_jaxpr), [*bc, *carry])
        hlo.return_([*cc, *bc, *new])
    return list(loop.results)[cond_nconsts + body_nconsts:]


register_lowering(while_p, _while_lowering)
