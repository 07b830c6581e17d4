"""`cond` and `switch`: choose one of several branches at run time, inside the program.

Both bind one primitive, `cond`, whose operands are an int32 branch index and
the branches' flat inputs, and whose `branches` param holds one closed jaxpr
per branch, all with the same signature:

    { lambda ; a:i32[] b:f32[3]. let
        c:f32[3] = cond[
          branches=({ lambda ; d:f32[3]. let e:f32[3] = neg d in (e,) }
                    { lambda ; f:f32[3]. let g:f32[3] = sin f in (g,) })
        ] a b
      in (c,) }

Values a branch closes over become leading operands, shared by all branches
(each branch takes every one, using its own). Every transformation keeps one
`cond`: JVP and transposition transform each branch; partial evaluation (so
`grad`) splits each branch into a known and an unknown half, all known halves
returning the same list of residuals; `vmap` batches each branch, except when
the index itself is batched: then every branch runs and `select_n` picks each
element's result, which is safe because branches have no side effects. It
lowers to `stablehlo.case`, one region per branch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad, batching, partial_eval
from lamella.core.api_util import abstractify_args, fun_name
from lamella.core.config import config
from lamella.core.jaxpr import ClosedJaxpr, Jaxpr, Var, eval_jaxpr
from lamella.core.staging import trace_to_jaxpr
from lamella.core.structural import broadcast_in_dim
from lamella.core.trace import aval_of, concrete_value, set_current_trace
from lamella.core.tree_util import keystr, tree_flatten, tree_flatten_with_path, tree_unflatten
from lamella.core.util import merge_lists, partition_list, weakref_lru_cache
from lamella.lax.control_flow.common import (
    TraceCache,
    TracedFunction,
    describe_types,
    same_types,
    trace_fun,
)
from lamella.lax.conversion import convert_element_type
from lamella.lax.logical import clamp, ne, select_n
from lamella.lax.lowering import (
    aval_to_ir_type,
    closed_consts,
    hlo,
    ir,
    lower_jaxpr,
    register_lowering,
)
from lamella.lax.standard import standard_primitive

__all__ = ["cond", "cond_p", "switch"]


# ---------------------------------------------------------------------------
# The user-facing operators.


# The default of `operand=`: the old keyword form `cond(pred, f, g, operand=x)`.
_no_operand_sentinel = object()


def _keyword_operand(operands: tuple, operand: Any) -> tuple:
    if operand is _no_operand_sentinel:
        return operands
    if operands:
        raise TypeError(f"if 'operand' keyword is passed then no positional operands can be "
                        f"passed, got operand={operand!r} and positional operands {operands}")
    return (operand,)


def cond(pred: Any, true_fun: Callable, false_fun: Callable, *operands: Any,
         operand: Any = _no_operand_sentinel) -> Any:
    """`true_fun(*operands)` if `pred` else `false_fun(*operands)`, decided at run time.

    Both branches are traced (once each) and must return the same pytree
    structure with the same shapes and dtypes; only the chosen one runs.
    `pred` is a scalar boolean, or an integer scalar (nonzero means true).

    Args:
      pred: a boolean scalar (or an integer scalar, nonzero meaning true).
      true_fun, false_fun: functions of `*operands` returning the same pytree
        structure, shapes and dtypes.
      *operands: the arguments passed to the chosen branch.
      operand: the older keyword form of a single operand (not with `*operands`).

    Returns:
      The chosen branch's output.

    >>> import numpy as np
    >>> from lamella.lax import sin, neg
    >>> cond(np.float32(1.0) > 0, sin, neg, np.float32(0.5))
    Array(0.47942555, dtype=float32)
    >>> cond(False, sin, neg, np.float32(0.5))
    Array(-0.5, dtype=float32)
    """
    operands = _keyword_operand(operands, operand)
    if not (callable(true_fun) and callable(false_fun)):
        raise TypeError("lax.cond: true_fun and false_fun arguments should be callable, got "
                        f"{type(true_fun).__name__} and {type(false_fun).__name__}.")
    aval = _scalar_aval("cond", "predicate", pred)
    if aval.dtype != np.dtype(bool):
        if aval.dtype.kind not in "iu":
            raise TypeError(f"lax.cond predicate must be a boolean or integer scalar, got "
                            f"dtype {aval.dtype.name}. Compare it explicitly (say `x > 0`) "
                            "to get a boolean.")
        pred = ne(pred, np.zeros((), aval.dtype))
    if config.read("disable_jit") and concrete_value(pred) is not None:
        return true_fun(*operands) if bool(concrete_value(pred)) else false_fun(*operands)
    index = convert_element_type(pred, np.int32)
    # Branch 0 runs for index 0 (false); errors list the functions in the user's order.
    return _bind_branches("cond", index, (true_fun, false_fun), operands,
                          labels=("true_fun", "false_fun"), reverse=True)


def switch(index: Any, branches: Sequence[Callable], *operands: Any,
           operand: Any = _no_operand_sentinel) -> Any:
    """`branches[index](*operands)`, decided at run time; `index` is clamped into range.

    All branches are traced (once each) and must return the same pytree
    structure with the same shapes and dtypes; only the chosen one runs.

    Args:
      index: an integer scalar; it is clamped into `[0, len(branches) - 1]`.
      branches: functions of `*operands` returning the same pytree structure,
        shapes and dtypes.
      *operands: the arguments passed to the chosen branch.
      operand: the older keyword form of a single operand (not with `*operands`).

    Returns:
      The chosen branch's output.

    >>> import numpy as np
    >>> from lamella.lax import cos, neg, sin
    >>> switch(2, [sin, cos, neg], np.float32(0.5))
    Array(-0.5, dtype=float32)
    >>> switch(-7, [sin, cos, neg], np.float32(0.0))  # clamped to branch 0
    Array(0., dtype=float32)
    """
    operands = _keyword_operand(operands, operand)
    branches = tuple(branches)
    if not branches:
        raise ValueError("lax.switch: empty branch sequence; pass at least one function.")
    for i, branch in enumerate(branches):
        if not callable(branch):
            raise TypeError(f"lax.switch: branches[{i}] should be callable, got "
                            f"{type(branch).__name__}.")
    aval = _scalar_aval("switch", "index", index)
    if aval.dtype.kind not in "iu":
        raise TypeError(f"lax.switch index must be an integer scalar, got dtype "
                        f"{aval.dtype.name}.")
    if len(branches) == 1:
        return branches[0](*operands)
    index = convert_element_type(index, np.int32)
    index = clamp(np.int32(0), index, np.int32(len(branches) - 1))
    if config.read("disable_jit") and concrete_value(index) is not None:
        return branches[int(concrete_value(index))](*operands)
    return _bind_branches("switch", index, branches, operands,
                          labels=tuple(f"branch {i}" for i in range(len(branches))))


def _scalar_aval(what: str, name: str, x: Any) -> ShapedArray:
    if x is None:
        raise TypeError(f"lax.{what} {name} is None.")
    try:
        aval = aval_of(x)
    except TypeError:
        raise TypeError(f"lax.{what} {name} must be a scalar array, got a value of type "
                        f"{type(x).__name__}.") from None
    if aval.shape:
        raise TypeError(f"lax.{what} {name} must be a scalar, got a value of shape {aval.shape}. "
                        "To choose between arrays elementwise use lax.select (or vmap the "
                        f"{what}).")
    return aval


def _bind_branches(what: str, index: Any, funs: tuple[Callable, ...], operands: tuple,
                   labels: tuple[str, ...], reverse: bool = False) -> Any:
    flat, in_tree = tree_flatten(operands)

    def names():
        return [f"operands{keystr(path)}" for path, _ in tree_flatten_with_path(operands)[0]]

    avals = abstractify_args(flat, names, f"lax.{what}")
    branches, consts, out_tree = _trace_branches(what, funs, labels, in_tree, tuple(avals))
    outs = cond_p.bind(index, *consts, *flat, branches=branches[::-1] if reverse else branches)
    return tree_unflatten(out_tree, outs)


# ---------------------------------------------------------------------------
# Tracing the branches to jaxprs with one signature.

_traces = TraceCache()


def _trace_branches(what, funs, labels, in_tree, avals):
    return _traces(funs, (in_tree, avals),
                   lambda: _trace_branches_uncached(what, funs, labels, in_tree, avals))


def _trace_branches_uncached(what, funs, labels, in_tree, avals):
    traced = [trace_fun(f, in_tree, avals, f"lax.{what} {label}")
              for f, label in zip(funs, labels)]
    first = traced[0]
    for fun, t, label in zip(funs[1:], traced[1:], labels[1:]):
        if t.out_tree != first.out_tree or not same_types(t.out_avals, first.out_avals):
            width = max(len(labels[0]), len(label)) + len(" output:")
            raise TypeError(
                f"lax.{what} branches must return the same structure, shapes and dtypes, "
                f"but {labels[0]} ({fun_name(funs[0])}) and {label} ({fun_name(fun)}) differ:\n"
                f"  {labels[0] + ' output:':<{width}} "
                f"{describe_types(first.out_tree, first.out_avals)}\n"
                f"  {label + ' output:':<{width}} {describe_types(t.out_tree, t.out_avals)}")
    consts: list[Any] = []
    seen: set[int] = set()
    for t in traced:
        for c in t.consts:
            if id(c) not in seen:
                seen.add(id(c))
                consts.append(c)
    return tuple(_taking_all_consts(t, consts) for t in traced), consts, first.out_tree


def _taking_all_consts(traced: TracedFunction, consts: list[Any]) -> ClosedJaxpr:
    """The branch with every branch's consts as leading inputs, ignoring the others'."""
    jaxpr = traced.closed.jaxpr
    n = len(traced.consts)
    own = {id(c): v for c, v in zip(traced.consts, jaxpr.invars[:n])}
    const_vars = [own[id(c)] if id(c) in own else Var(aval_of(c)) for c in consts]
    return ClosedJaxpr(Jaxpr((), [*const_vars, *jaxpr.invars[n:]], jaxpr.outvars, jaxpr.eqns,
                             jaxpr.effects, jaxpr.debug_info), traced.closed.consts)


# ---------------------------------------------------------------------------
# The primitive: operands (index, *branch inputs), params `branches`.

cond_p = standard_primitive("cond", multiple_results=True)


@cond_p.def_abstract_eval
def _cond_abstract_eval(index: ShapedArray, *args: ShapedArray,
                        branches: tuple[ClosedJaxpr, ...]) -> list[ShapedArray]:
    if index.shape or index.dtype != np.dtype(np.int32):
        raise TypeError(f"cond index must be an i32[] scalar, got {index.str_short()}")
    if not branches:
        raise TypeError("cond needs at least one branch")
    for i, branch in enumerate(branches):
        if not same_types(args, branch.in_avals):
            got = ", ".join(a.str_short() for a in args)
            want = ", ".join(a.str_short() for a in branch.in_avals)
            raise TypeError(f"cond branch {i} takes ({want}) but was given ({got})")
        if not same_types(branch.out_avals, branches[0].out_avals):
            raise TypeError(f"cond branch {i} returns a different type than branch 0")
    # A value is weakly typed only if it is in every branch: otherwise strong, as in JAX.
    return [aval.update(weak_type=all(b.out_avals[i].weak_type for b in branches))
            for i, aval in enumerate(branches[0].out_avals)]


def _union(masks) -> tuple[bool, ...]:
    masks = list(masks)
    return tuple(any(column) for column in zip(*masks))


def _cond_jvp(primals, tangents, *, branches):
    index, *ops = primals
    nonzeros = [type(t) is not ad.Zero for t in tangents[1:]]
    # Every branch must produce tangents for the same outputs: the union, instantiated.
    out_nonzeros = _union(ad.jvp_jaxpr(b, nonzeros)[1] for b in branches)
    jvp_branches = tuple(ad.jvp_jaxpr(b, nonzeros, instantiate=out_nonzeros)[0]
                         for b in branches)
    nonzero_tangents = [t for t in tangents[1:] if type(t) is not ad.Zero]
    outs = cond_p.bind(index, *ops, *nonzero_tangents, branches=jvp_branches)
    out_avals = branches[0].out_avals
    tangents_out = iter(outs[len(out_avals):])
    return outs[:len(out_avals)], [next(tangents_out) if nz else ad.Zero(a.to_tangent_aval())
                                   for a, nz in zip(out_avals, out_nonzeros)]


def _cond_transpose(cts, index, *ops, branches):
    if ad.is_undefined_primal(index):
        raise TypeError("cond is not linear in its branch index")
    linear = [ad.is_undefined_primal(x) for x in ops]
    transposed = tuple(ad.transpose_jaxpr(b, linear) for b in branches)
    nonlinear = [x for x, lin in zip(ops, linear) if not lin]
    outs = iter(cond_p.bind(index, *nonlinear, *map(ad.instantiate_zeros, cts),
                            branches=transposed))
    return [None] + [next(outs) if lin else None for lin in linear]


def _cond_batch(axis_data, args, dims, *, branches):
    index, *ops = args
    index_dim, op_dims = dims[0], dims[1:]
    if index_dim is batching.not_mapped:
        # Every branch must batch the same outputs: the union, instantiated.
        out_batched = _union([d is not batching.not_mapped for d in
                              batching.batch_jaxpr(b, axis_data, op_dims)[1]] for b in branches)
        batched = tuple(batching.batch_jaxpr(b, axis_data, op_dims, instantiate=out_batched)[0]
                        for b in branches)
        outs = cond_p.bind(index, *ops, branches=batched)
        return outs, [0 if b else batching.not_mapped for b in out_batched]
    # Each element picks its own branch: run them all and select, elementwise.
    index = batching.moveaxis(index, index_dim, 0)
    branch_outs = [eval_jaxpr(batched.jaxpr, batched.consts, *ops) for batched in
                   (batching.batch_jaxpr(b, axis_data, op_dims, instantiate=True)[0]
                    for b in branches)]
    outs = []
    for cases in zip(*branch_outs):
        shape = aval_of(cases[0]).shape
        which = index if len(shape) == 1 else broadcast_in_dim(index, shape, (0,))
        outs.append(select_n(which, *cases))
    return outs, [0] * len(outs)


def _cond_partial_eval(trace, args, *, branches):
    index, *ops = args
    if trace.is_unknown(index):
        with set_current_trace(trace.unknown):
            return cond_p.bind(*args, branches=branches)
    unknowns = tuple(trace.is_unknown(x) for x in ops)
    known_branches, unknown_branches, out_unknowns, num_res = _split_branches(
        branches[0], branches[1:], unknowns)
    known_ops, unknown_ops = partition_list(unknowns, ops)
    with set_current_trace(trace.known):
        known_outs = cond_p.bind(index, *known_ops, branches=known_branches)
    if not any(out_unknowns):
        return known_outs
    split = len(known_outs) - num_res
    known_outs, residuals = known_outs[:split], known_outs[split:]
    with set_current_trace(trace.unknown):
        unknown_outs = cond_p.bind(index, *residuals, *unknown_ops, branches=unknown_branches)
    return merge_lists(out_unknowns, known_outs, unknown_outs)


@weakref_lru_cache()
def _split_branches(first: ClosedJaxpr, rest: tuple[ClosedJaxpr, ...], unknowns: tuple[bool, ...]):
    """Known and unknown halves of every branch, with one residual list for all.

    Returns (known branches, unknown branches, out_unknowns, number of residuals).
    Known halves return the known outputs, then the residual slots; a slot
    holds one branch's residual, or zeros when another branch ran. Residuals
    of equal type share a slot across branches, since only one branch runs.
    """
    branches = (first, *rest)
    out_unknowns = _union(partial_eval.partial_eval_jaxpr(b, unknowns)[2] for b in branches)
    splits = [partial_eval.partial_eval_jaxpr(b, unknowns, instantiate=out_unknowns)
              for b in branches]
    if not any(out_unknowns):  # nothing is computed later, so nothing needs saving
        return tuple(_known_half(k, len(k.out_avals) - n, [], [])
                     for k, _, _, n in splits), (), out_unknowns, 0
    slots, slot_of = _share_slots([k.out_avals[len(k.out_avals) - n:]
                                   for k, _, _, n in splits])
    known = tuple(_known_half(k, len(k.out_avals) - n, where, slots)
                  for (k, _, _, n), where in zip(splits, slot_of))
    unknown = tuple(_unknown_half(u, where, slots) for (_, u, _, _), where in zip(splits, slot_of))
    return known, unknown, out_unknowns, len(slots)


def _share_slots(res_avals: list[list[ShapedArray]]
                 ) -> tuple[list[ShapedArray], list[list[int]]]:
    """Residual slots, and for each branch the slot of each of its residuals."""
    slots: list[ShapedArray] = []
    slot_of = []
    for avals in res_avals:
        taken: set[int] = set()
        where = []
        for aval in avals:
            j = next((j for j, s in enumerate(slots) if j not in taken
                      and s.shape == aval.shape and s.dtype == aval.dtype), None)
            if j is None:
                slots.append(aval.strip_weak_type())
                j = len(slots) - 1
            taken.add(j)
            where.append(j)
        slot_of.append(where)
    return slots, slot_of


def _known_half(known: ClosedJaxpr, num_outs: int, where: list[int],
                slots: list[ShapedArray]) -> ClosedJaxpr:
    def fun(*args):
        outs = eval_jaxpr(known.jaxpr, known.consts, *args)
        filled: list[Any] = [None] * len(slots)
        for j, residual in zip(where, outs[num_outs:]):
            filled[j] = residual
        return [*outs[:num_outs], *(ad.zeros_like_aval(s) if f is None else f
                                    for f, s in zip(filled, slots))]
    jaxpr, consts = trace_to_jaxpr(fun, known.in_avals)
    return ClosedJaxpr(jaxpr, consts)


def _unknown_half(unknown: ClosedJaxpr, where: list[int],
                  slots: list[ShapedArray]) -> ClosedJaxpr:
    def fun(*args):
        residuals, rest = args[:len(slots)], args[len(slots):]
        return eval_jaxpr(unknown.jaxpr, unknown.consts, *(residuals[j] for j in where), *rest)
    jaxpr, consts = trace_to_jaxpr(fun, [*slots, *unknown.in_avals[len(where):]])
    return ClosedJaxpr(jaxpr, consts)


def _cond_lowering(ctx, index, *args, branches):
    case = hlo.CaseOp([aval_to_ir_type(a) for a in ctx.avals_out], index, len(branches))
    for region, branch in zip(case.regions, branches):
        with ir.InsertionPoint(region.blocks.append()):
            hlo.return_(lower_jaxpr(ctx.module_context, branch.jaxpr, closed_consts(branch),
                                    args))
    return list(case.results)


ad.primitive_jvps[cond_p] = _cond_jvp
ad.primitive_transposes[cond_p] = _cond_transpose
batching.fancy_primitive_batchers[cond_p] = _cond_batch
partial_eval.partial_eval_rules[cond_p] = _cond_partial_eval
register_lowering(cond_p, _cond_lowering)
