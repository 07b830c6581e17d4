"""checkify for lax: the lowering of core's `error_merge` and `check` primitives, the
automatic checks of lax's primitives (NaN outputs, division by zero, out-of-bounds
indices), and rules that thread the error through `cond`, `scan` and `while`.

Checks in a loop body become extra loop carries: the body is checkified twice, once
to learn which kinds of error it can raise and once with a slot for each, so the
error's arrays have the same types on the way in and out. A `while` also checks its
predicate: once before the loop and, inside the body, after each step (JAX's way).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lamella.core import dtypes
from lamella.core.avals import ShapedArray
from lamella.core.checkify import (
    DivisionByZeroError,
    Error,
    NaNError,
    OOBError,
    assert_func,
    check_p,
    checkify_jaxpr,
    error_checks,
    error_merge_p,
    split_merge_operands,
    with_placeholders,
)
from lamella.core.jaxpr import ClosedJaxpr, dce_jaxpr
from lamella.core.source_info import user_frame
from lamella.core.staging import trace_to_jaxpr
from lamella.core.trace import aval_of
from lamella.core.tree_util import tree_flatten, tree_leaves, tree_unflatten
from lamella.lax import arithmetic, indexing, logical, reductions, shapes
from lamella.lax.control_flow.cond import cond_p
from lamella.lax.control_flow.loops import while_p
from lamella.lax.control_flow.scan import scan_p
from lamella.lax.conversion import convert_element_type
from lamella.lax.executor import compiled_eagerly
from lamella.lax.lowering import lower_fun, register_lowering

# ---------------------------------------------------------------------------
# Lowering core's primitives.


def _expand(x: Any, shape: tuple[int, ...]) -> Any:
    """`x` broadcast to `shape`, its axes aligned on the left (core's convention)."""
    ndim = len(aval_of(x).shape)
    return shapes.broadcast_in_dim(x, shape, tuple(range(ndim)))


def _or(x: Any, y: Any) -> Any:
    return logical.bitwise_or(x, y)


def _error_merge(*args, num_payload, negate_new, reduce_ndim):
    old_pred, old_code, old_payload, new_pred, new_code, new_payload = \
        split_merge_operands(args, num_payload)
    failed = logical.bitwise_not(new_pred) if negate_new else new_pred
    full = aval_of(failed).shape
    batch = full[:len(full) - reduce_ndim]
    old = _expand(old_pred, batch)
    n = math.prod(full[len(batch):])
    axis = len(batch)
    flat = shapes.reshape(failed, batch + (n,))
    # Each batch element's last failing index, as a one-hot mask over the n candidates.
    last = arithmetic.sub(np.int32(n - 1),
                          reductions.argmax(shapes.rev(flat, (axis,)), axis, np.int32))
    onehot = logical.eq(shapes.broadcasted_iota(np.int32, batch + (n,), axis),
                        _expand(last, batch + (n,)))

    def pick(x: Any, own: tuple[int, ...]) -> Any:
        x = shapes.reshape(_expand(x, full + own), batch + (n,) + own)
        if n == 1:
            return shapes.reshape(x, batch + own)
        mask = _expand(onehot, batch + (n,) + own)
        if aval_of(x).dtype == np.bool_:
            return reductions.reduce_or(logical.bitwise_and(mask, x), (axis,))
        zeros = shapes.broadcast_in_dim(np.zeros((), aval_of(x).dtype), batch + (n,) + own, ())
        return reductions.reduce_sum(arithmetic.select(mask, x, zeros), (axis,))

    pred = _or(old, reductions.reduce_or(flat, (axis,)))
    code = arithmetic.select(old, _expand(old_code, batch), pick(new_code, ()))
    payload = []
    for o, p in zip(old_payload, new_payload):
        own = aval_of(p).shape[len(full):]
        payload.append(arithmetic.select(_expand(old, batch + own), _expand(o, batch + own),
                                         pick(p, own)))
    return [pred, code, *payload]


_FUNCTIONALIZATION_ERROR = (
    "Cannot abstractly evaluate a checkify.check which was not functionalized. This "
    "probably means you tried to stage (jit/scan/pmap/...) a `check` without "
    "functionalizing it through `checkify.checkify`.")


def _check_lowering(ctx, *args, err_tree, debug):
    if debug:  # a debug_check only runs when checkify functionalizes it
        return []
    raise ValueError(_FUNCTIONALIZATION_ERROR)


register_lowering(error_merge_p, lower_fun(_error_merge, multiple_results=True))
register_lowering(check_p, _check_lowering)


# ---------------------------------------------------------------------------
# Automatic checks.


def _any(x: Any) -> Any:
    return reductions.reduce_or(x, tuple(range(len(aval_of(x).shape))))


def _check_nans(primitive, error: Error, enabled: frozenset, out: Any) -> Error:
    if NaNError not in enabled:
        return error
    outs = [o for o in (out if primitive.multiple_results else [out])
            if dtypes.issubdtype(aval_of(o).dtype, np.inexact)]
    if not outs:
        return error
    any_nan = _any(logical.ne(outs[0], outs[0]))
    for o in outs[1:]:
        any_nan = _or(any_nan, _any(logical.ne(o, o)))
    return assert_func(error, any_nan, NaNError(user_frame(), primitive.name))


def _nan_rule(primitive) -> Callable:
    def rule(error, enabled, *args, **params):
        out = primitive.bind(*args, **params)
        return _check_nans(primitive, error, enabled, out), out
    return rule


def _div_rule(error, enabled, x, y):
    if DivisionByZeroError in enabled:
        zero = np.zeros((), aval_of(y).dtype)
        error = assert_func(error, _any(logical.eq(y, zero)), DivisionByZeroError(user_frame()))
    return _nan_rule(arithmetic.div_p)(error, enabled, x, y)


def _oob_payload(masks: Sequence[Any], starts: Sequence[Any], axes: Sequence[int],
                 operand_shape: tuple[int, ...]) -> Any:
    """int32 [index, axis, axis size] of the first out-of-bounds start index."""
    payload = None
    for mask, start, axis in reversed(list(zip(masks, starts, axes))):
        entry = shapes.concatenate([
            shapes.reshape(convert_element_type(start, np.int32), (1,)),
            np.array([axis, operand_shape[axis]], np.int32)], 0)
        payload = entry if payload is None else arithmetic.select(
            shapes.broadcast_in_dim(mask, (3,), ()), entry, payload)
    return payload


def _window_oob(error, name, operand_shape, starts, sizes):
    masks = [_or(logical.lt(s, np.zeros((), aval_of(s).dtype)),
                 logical.gt(s, np.asarray(dim - size, aval_of(s).dtype)))
             for s, dim, size in zip(starts, operand_shape, sizes)]
    failed = masks[0]
    for m in masks[1:]:
        failed = _or(failed, m)
    payload = _oob_payload(masks, starts, range(len(starts)), operand_shape)
    return assert_func(error, failed, OOBError(user_frame(), name, operand_shape, payload))


def _dynamic_slice_rule(error, enabled, operand, *starts, slice_sizes, **params):
    out = shapes.dynamic_slice_p.bind(operand, *starts, slice_sizes=slice_sizes, **params)
    if OOBError in enabled and starts:
        error = _window_oob(error, "dynamic_slice", aval_of(operand).shape, starts, slice_sizes)
    return error, out


def _dynamic_update_slice_rule(error, enabled, operand, update, *starts, **params):
    out = shapes.dynamic_update_slice_p.bind(operand, update, *starts, **params)
    if OOBError in enabled and starts:
        error = _window_oob(error, "dynamic_update_slice", aval_of(operand).shape, starts,
                            aval_of(update).shape)
    return error, out


def _gather_rule(error, enabled, operand, indices, *, dimension_numbers, slice_sizes, **params):
    out = indexing.gather_p.bind(operand, indices, dimension_numbers=dimension_numbers,
                                 slice_sizes=slice_sizes, **params)
    if OOBError not in enabled:
        return error, out
    shape = aval_of(operand).shape
    index_map = tuple(dimension_numbers.start_index_map)
    ind_shape = aval_of(indices).shape  # batch dims, then the index vector (last)
    k = ind_shape[-1]
    flat = shapes.reshape(convert_element_type(indices, np.int32), (math.prod(ind_shape),))
    upper = np.tile(np.array([shape[a] - slice_sizes[a] for a in index_map], np.int32),
                    math.prod(ind_shape[:-1]))
    mask = _or(logical.lt(flat, np.int32(0)), logical.gt(flat, upper))
    first = reductions.argmax(mask, 0, np.int32)
    component = arithmetic.rem(first, np.int32(k))
    axis, size = np.int32(index_map[0]), np.int32(shape[index_map[0]])
    for j in range(1, k):
        is_j = logical.eq(component, np.int32(j))
        axis = arithmetic.select(is_j, np.int32(index_map[j]), axis)
        size = arithmetic.select(is_j, np.int32(shape[index_map[j]]), size)
    index = shapes.reshape(shapes.dynamic_slice(flat, (first,), (1,)), ())
    payload = shapes.concatenate([shapes.reshape(v, (1,)) for v in (index, axis, size)], 0)
    error = assert_func(error, _any(mask), OOBError(user_frame(), "gather", shape, payload))
    return error, out


_NAN_PRIMITIVES = (
    "acos acosh add asin asinh atan2 atan atanh bessel_i0e bessel_i1e cbrt "
    "conv_general_dilated cos cosh cumlogsumexp cummax cummin cumprod cumsum digamma "
    "dot_general erf_inv erf erfc exp expm1 fft igamma_grad_a igamma igammac integer_pow "
    "lgamma custom_linear_solve log1p log logistic mul pad pow reduce reduce_prod reduce_sum "
    "reduce_window reduce_window_sum regularized_incomplete_beta rem rsqrt sin sinh sqrt "
    "sub tan tanh").split()  # JAX's list of the primitives that can make a NaN

# lax's primitives by name: this module is imported last by lamella.lax, after all of them.
_lax_primitives = {p.name: p for p in compiled_eagerly}
for _name in _NAN_PRIMITIVES:
    if _name in _lax_primitives:
        error_checks[_lax_primitives[_name]] = _nan_rule(_lax_primitives[_name])
error_checks[arithmetic.div_p] = _div_rule
error_checks[shapes.dynamic_slice_p] = _dynamic_slice_rule
error_checks[shapes.dynamic_update_slice_p] = _dynamic_update_slice_rule
error_checks[indexing.gather_p] = _gather_rule


# ---------------------------------------------------------------------------
# Control flow: the error's arrays become operands and results of the body.


def _trace_checked(fun: Callable[[Error, list], tuple[Error, list]], error: Error,
                   layout: Callable[[list, list], list], in_avals: Sequence[ShapedArray],
                   split: Callable[[list], tuple[list, list]]
                   ) -> tuple[ClosedJaxpr, Any, set]:
    """Traces `fun(error, args) -> (error, outs)` as a jaxpr whose inputs are
    `layout(error arrays, args)`; `split(inputs)` recovers (error arrays, args). Returns
    the jaxpr (outputs: error arrays, then outs), the output error's tree and kinds."""
    err_leaves, err_tree = tree_flatten(error)
    found: list = []

    def flat(*vals):
        err_vals, args = split(list(vals))
        out_error, outs = fun(tree_unflatten(err_tree, err_vals), args)
        leaves, tree = tree_flatten(out_error)
        found.append((tree, set(out_error._pred)))
        return [*leaves, *outs]

    jaxpr, consts = trace_to_jaxpr(flat, layout([aval_of(e) for e in err_leaves], in_avals))
    return ClosedJaxpr(jaxpr, consts), found[0][0], found[0][1]


def _trace_to_fixed_point(fun, error: Error, layout, in_avals, split
                          ) -> tuple[Error, ClosedJaxpr, Any]:
    """`_trace_checked` for a loop body: the error gets a slot for each kind the body
    can raise first, so the body's error arrays come out as they went in."""
    *_, effects = _trace_checked(fun, error, layout, in_avals, split)
    error = with_placeholders(error, effects)
    closed, out_tree, _ = _trace_checked(fun, error, layout, in_avals, split)
    return error, closed, out_tree


def _scan_rule(error, enabled, *args, jaxpr, length, reverse, unroll, num_consts, num_carry,
               linear):
    consts, rest = list(args[:num_consts]), list(args[num_consts:])
    avals = [*map(aval_of, consts), *map(aval_of, rest[:num_carry]),
             *(aval_of(x).update(shape=aval_of(x).shape[1:]) for x in rest[num_carry:])]

    def body(err, vals):
        return checkify_jaxpr(jaxpr, enabled, err, *vals)

    def layout(err_avals, in_avals):  # consts, error, carry, xs
        return [*in_avals[:num_consts], *err_avals, *in_avals[num_consts:]]

    def split(vals):
        n = len(vals) - len(avals)
        return vals[num_consts:num_consts + n], vals[:num_consts] + vals[num_consts + n:]

    error, closed, out_tree = _trace_to_fixed_point(body, error, layout, avals, split)
    err_leaves = tree_leaves(error)
    k = len(err_leaves)
    outs = scan_p.bind(*consts, *err_leaves, *rest, jaxpr=closed, length=length,
                       reverse=reverse, unroll=unroll, num_consts=num_consts,
                       num_carry=num_carry + k, linear=(False,) * (len(args) + k))
    return tree_unflatten(out_tree, outs[:k]), outs[k:]


def _while_rule(error, enabled, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    if cond_jaxpr.out_avals[0].shape:
        raise ValueError("Checkify does not support batched while-loops "
                         "(checkify-of-vmap-of-while). \nHint: if possible, move the vmap to "
                         "the outer level to get vmap-of-checkify-of-while.")
    cc = list(args[:cond_nconsts])
    bc = list(args[cond_nconsts:cond_nconsts + body_nconsts])
    carry = list(args[cond_nconsts + body_nconsts:])
    error, _ = checkify_jaxpr(cond_jaxpr, enabled, error, *cc, *carry)  # the first test
    n_consts = cond_nconsts + body_nconsts
    avals = [aval_of(x) for x in (*cc, *bc, *carry)]

    def body(err, vals):  # a step, then the test that decides the next one
        c_consts, b_consts, state = (vals[:cond_nconsts], vals[cond_nconsts:n_consts],
                                     vals[n_consts:])
        err, outs = checkify_jaxpr(body_jaxpr, enabled, err, *b_consts, *state)
        err, _ = checkify_jaxpr(cond_jaxpr, enabled, err, *c_consts, *outs)
        return err, outs

    def layout(err_avals, in_avals):  # cond consts, body consts, error, carry
        return [*in_avals[:n_consts], *err_avals, *in_avals[n_consts:]]

    def split(vals):
        n = len(vals) - len(avals)
        return vals[n_consts:n_consts + n], vals[:n_consts] + vals[n_consts + n:]

    error, checked_body, out_tree = _trace_to_fixed_point(body, error, layout, avals, split)
    err_leaves = tree_leaves(error)
    k = len(err_leaves)

    def test(err, vals):  # the loop's predicate; its checks already ran in the body
        return err, checkify_jaxpr(cond_jaxpr, enabled, err, *vals)[1]

    cond_avals = [*map(aval_of, cc), *map(aval_of, carry)]
    checked_cond, _, _ = _trace_checked(
        test, error, lambda e, a: [*a[:cond_nconsts], *e, *a[cond_nconsts:]], cond_avals,
        lambda v: (v[cond_nconsts:cond_nconsts + k], v[:cond_nconsts] + v[cond_nconsts + k:]))
    cond_only = dce_jaxpr(checked_cond.jaxpr, [False] * k + [True])
    outs = while_p.bind(*cc, *cc, *bc, *err_leaves, *carry,
                        cond_jaxpr=ClosedJaxpr(cond_only, checked_cond.consts),
                        body_jaxpr=checked_body, cond_nconsts=cond_nconsts,
                        body_nconsts=n_consts)
    return tree_unflatten(out_tree, outs[:k]), outs[k:]


def _cond_rule(error, enabled, index, *ops, branches):
    avals = [aval_of(x) for x in ops]

    def branch_fun(branch):
        return lambda err, vals: checkify_jaxpr(branch, enabled, err, *vals)

    def layout(err_avals, in_avals):
        return [*err_avals, *in_avals]

    def split_for(k):
        return lambda vals: (vals[:k], vals[k:])

    k0 = len(tree_leaves(error))
    effects: set = set()
    for branch in branches:
        effects |= _trace_checked(branch_fun(branch), error, layout, avals, split_for(k0))[2]
    error = with_placeholders(error, effects)
    err_leaves = tree_leaves(error)
    k = len(err_leaves)
    traced = [_trace_checked(branch_fun(b), error, layout, avals, split_for(k)) for b in branches]
    outs = cond_p.bind(index, *err_leaves, *ops, branches=tuple(t[0] for t in traced))
    out_errors = [tree_unflatten(t[1], outs[:k]) for t in traced]
    metadata = {code: tree for e in out_errors for code, tree in e._metadata.items()}
    return out_errors[0]._replace(_metadata=metadata), outs[k:]


error_checks[scan_p] = _scan_rule
error_checks[while_p] = _while_rule
error_checks[cond_p] = _cond_rule
