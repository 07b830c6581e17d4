"""`linear_call`: a linear function called together with its own transpose.

`linear_call(fun, fun_transpose, residual_args, linear_args)` is
`fun(residual_args, linear_args)`, where `fun` is linear in `linear_args`;
transposing it calls `fun_transpose(residual_args, cotangent)` instead of
transposing `fun`'s body (whose transpose may be unknown or costly). It is a
primitive carrying both functions as jaxprs, so every transformation handles
it: JVP is the call itself on the tangents, transposition swaps the two
functions, batching batches both.

>>> import numpy as np
>>> from lamella.core import linear_transpose
>>> from lamella.core.structural import broadcast_in_dim, reduce_sum
>>> total = lambda r, x: reduce_sum(x, (0,))
>>> spread = lambda r, ct: broadcast_in_dim(ct, (3,), ())  # total's transpose, written out
>>> f = lambda x: linear_call(total, spread, (), x)
>>> linear_transpose(f, np.ones(3, np.float32))(np.float32(2.0))
(array([2., 2., 2.], dtype=float32),)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lamella.core.batching import batch_jaxpr
from lamella.core.jaxpr import eval_jaxpr
from lamella.core.primitive import Primitive
from lamella.core.rules import (
    Zero,
    at_front,
    fancy_primitive_batchers,
    instantiate_zeros,
    is_undefined_primal,
    primitive_jvps,
    primitive_transposes,
)
from lamella.core.staging import trace_subjaxpr
from lamella.core.trace import aval_of
from lamella.core.tree_util import tree_flatten, tree_unflatten


class LinearCallPrimitive(Primitive):
    multiple_results = True

    def pp_params(self, params):
        return [("callee", params["callee"]), ("transpose", params["transpose"])]


linear_call_p = LinearCallPrimitive("linear_call")


@linear_call_p.def_impl
def _linear_call_impl(*args, callee, transpose, num_callee_consts, num_transpose_consts,
                      num_res):
    consts_t = num_transpose_consts
    return eval_jaxpr(callee.jaxpr, callee.consts, *args[consts_t:])


@linear_call_p.def_abstract_eval
def _linear_call_abstract_eval(*avals, callee, **params):
    return callee.out_avals


def _split(args, num_transpose_consts, num_callee_consts, num_res):
    t_consts = list(args[:num_transpose_consts])
    rest = args[num_transpose_consts:]
    c_consts = list(rest[:num_callee_consts])
    res = list(rest[num_callee_consts:num_callee_consts + num_res])
    lin = list(rest[num_callee_consts + num_res:])
    return t_consts, c_consts, res, lin


def _linear_call_jvp(primals, tangents, *, callee, transpose, num_callee_consts,
                     num_transpose_consts, num_res):
    n_nonlinear = num_transpose_consts + num_callee_consts + num_res
    if any(type(t) is not Zero for t in tangents[:n_nonlinear]):
        raise TypeError("linear_call: differentiating with respect to the residual arguments "
                        "(or values the functions close over) is not supported; the call is "
                        "linear only in linear_args.")
    params = dict(callee=callee, transpose=transpose, num_callee_consts=num_callee_consts,
                  num_transpose_consts=num_transpose_consts, num_res=num_res)
    out = linear_call_p.bind(*primals, **params)
    linear_tangents = [instantiate_zeros(t) for t in tangents[n_nonlinear:]]
    tangent_out = linear_call_p.bind(*primals[:n_nonlinear], *linear_tangents, **params)
    return out, tangent_out


def _linear_call_transpose(cts, *args, callee, transpose, num_callee_consts,
                           num_transpose_consts, num_res):
    t_consts, c_consts, res, lin = _split(args, num_transpose_consts, num_callee_consts,
                                          num_res)
    if any(is_undefined_primal(x) for x in (*t_consts, *c_consts, *res)):
        raise TypeError("linear_call is linear only in linear_args, not in residual_args")
    cts = [instantiate_zeros(ct) for ct in cts]
    # The transpose is again a linear call, with the roles of the two functions swapped.
    cts_lin = linear_call_p.bind(*c_consts, *t_consts, *res, *cts, callee=transpose,
                                 transpose=callee, num_callee_consts=num_transpose_consts,
                                 num_transpose_consts=num_callee_consts, num_res=num_res)
    return [None] * (len(args) - len(lin)) + list(cts_lin)


def _linear_call_batch(axis_data, args, dims, *, callee, transpose, num_callee_consts,
                       num_transpose_consts, num_res):
    size = axis_data.size
    n_nonlinear = num_transpose_consts + num_callee_consts + num_res
    # Linear arguments all get the batch axis (so the transpose's outputs, batched at 0,
    # match them); the others keep theirs, moved to the front.
    args = [at_front(x, d, size) if d is not None or i >= n_nonlinear else x
            for i, (x, d) in enumerate(zip(args, dims))]
    dims = [0 if d is not None or i >= n_nonlinear else None for i, d in enumerate(dims)]
    t_dims, c_dims, r_dims, l_dims = _split(dims, num_transpose_consts, num_callee_consts,
                                            num_res)
    callee_b, out_dims = batch_jaxpr(callee, axis_data, (*c_dims, *r_dims, *l_dims), True)
    transpose_b, _ = batch_jaxpr(transpose, axis_data, (*t_dims, *r_dims, *out_dims), True)
    outs = linear_call_p.bind(*args, callee=callee_b, transpose=transpose_b,
                              num_callee_consts=num_callee_consts,
                              num_transpose_consts=num_transpose_consts, num_res=num_res)
    return outs, out_dims


primitive_jvps[linear_call_p] = _linear_call_jvp
primitive_transposes[linear_call_p] = _linear_call_transpose
fancy_primitive_batchers[linear_call_p] = _linear_call_batch


def linear_call(fun: Callable, fun_transpose: Callable, residual_args: Any,
                linear_args: Any) -> Any:
    """`fun(residual_args, linear_args)`, transposed by `fun_transpose(residual_args, ct)`.

    Args:
      fun: `(residuals, x) -> y`, linear in `x`.
      fun_transpose: `(residuals, ct) -> x_ct`, the transpose of `fun` in `x`.
      residual_args: a pytree of arrays both functions take unchanged.
      linear_args: a pytree of arrays `fun` is linear in.

    Returns:
      `fun(residual_args, linear_args)`.
    """
    res_flat, res_tree = tree_flatten(residual_args)
    lin_flat, lin_tree = tree_flatten(linear_args)
    out_trees = []

    def flat_callee(*leaves):
        res = tree_unflatten(res_tree, leaves[:len(res_flat)])
        lin = tree_unflatten(lin_tree, leaves[len(res_flat):])
        out_flat, out_tree = tree_flatten(fun(res, lin))
        out_trees.append(out_tree)
        return out_flat

    callee, callee_consts = trace_subjaxpr(flat_callee, [aval_of(x)
                                                          for x in (*res_flat, *lin_flat)])
    out_tree = out_trees[0]

    def flat_transpose(*leaves):
        res = tree_unflatten(res_tree, leaves[:len(res_flat)])
        ct = tree_unflatten(out_tree, leaves[len(res_flat):])
        cts_flat, cts_tree = tree_flatten(fun_transpose(res, ct))
        if cts_tree != lin_tree:
            raise TypeError(f"linear_call: fun_transpose must return cotangents with the "
                            f"structure of linear_args, {lin_tree}, got {cts_tree}")
        return cts_flat

    transpose, transpose_consts = trace_subjaxpr(
        flat_transpose, [aval_of(x) for x in res_flat] + list(callee.out_avals))
    # The sub-jaxprs take their closed-over values as leading inputs (closure conversion).
    outs = linear_call_p.bind(*transpose_consts, *callee_consts, *res_flat, *lin_flat,
                              callee=callee, transpose=transpose,
                              num_callee_consts=len(callee_consts),
                              num_transpose_consts=len(transpose_consts),
                              num_res=len(res_flat))
    return tree_unflatten(out_tree, outs)
