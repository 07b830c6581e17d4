"""Lowerings for the primitives lamella.core defines.

Core's structural primitives (add_any, broadcast_in_dim, reshape, transpose,
reduce_sum, stop_gradient, name) get StableHLO lowerings and are applied
eagerly through XLA, so values stay on the device; core's higher-order
primitives (jit, checkpoint, custom_jvp_call, custom_vjp_call) lower their
sub-jaxprs.
"""

from __future__ import annotations

import numpy as np

from lamella.core import custom_batching, custom_derivatives, structural
from lamella.core.call_rules import on_new_call_primitive
from lamella.core.checkpoint import name_p, remat_p
from lamella.core.jit import jit_p
from lamella.core.linear_call import linear_call_p
from lamella.lax import symbolic_lowering
from lamella.lax.executor import compiled_eagerly
from lamella.lax.lowering import (
    aval_to_ir_type,
    call_function,
    closed_consts,
    constant,
    hlo,
    ir,
    lower_jaxpr,
    register_lowering,
)

compiled_eagerly.update([structural.add_any_p, structural.broadcast_in_dim_p,
                         structural.reshape_p, structural.transpose_p, structural.reduce_sum_p,
                         structural.stop_gradient_p, name_p])


def _add_any(ctx, x, y):
    if ctx.avals_out[0].dtype == np.dtype(bool):  # float0 tangents are stored as bools
        return [hlo.or_(x, y)]
    return [hlo.add(x, y)]


register_lowering(structural.add_any_p, _add_any)
register_lowering(structural.broadcast_in_dim_p, lambda ctx, x, *, shape, broadcast_dimensions: [
    symbolic_lowering.broadcast_in_dim(ctx.avals_out[0], x, broadcast_dimensions)])
register_lowering(structural.reshape_p, lambda ctx, x, *, new_sizes, dimensions: [
    symbolic_lowering.reshape(ctx.avals_out[0], x)])
register_lowering(structural.transpose_p, lambda ctx, x, *, permutation: [
    hlo.transpose(x, list(permutation))])
register_lowering(structural.stop_gradient_p, lambda ctx, x: [x])
register_lowering(name_p, lambda ctx, x, *, name: [x])


def reduce_with(ctx, x, init_value, combine, axes) -> list:
    """A stablehlo.reduce over `axes` with a scalar `combine(a, b)` body."""
    aval_out = ctx.avals_out[0]
    scalar_type = ir.RankedTensorType.get([], aval_to_ir_type(aval_out).element_type)
    op = hlo.ReduceOp([aval_to_ir_type(aval_out)], [x], [constant(init_value, aval_out.dtype)],
                      list(axes))
    block = op.regions[0].blocks.append(scalar_type, scalar_type)
    with ir.InsertionPoint(block):
        hlo.return_([combine(*block.arguments)])
    return list(op.results)


register_lowering(structural.reduce_sum_p, lambda ctx, x, *, axes, out_sharding=None: reduce_with(
    ctx, x, 0, hlo.add, axes))


def _call_lowering(ctx, *args, jaxpr, name, **params):
    return call_function(ctx.module_context, jaxpr, name, args)


def _inline(ctx, *args, jaxpr, **params):
    return lower_jaxpr(ctx.module_context, jaxpr.jaxpr, closed_consts(jaxpr), args)


def _custom_call_lowering(ctx, *args, call_jaxpr, **params):
    return _inline(ctx, *args, jaxpr=call_jaxpr)


def _remat_lowering(ctx, *args, jaxpr, prevent_cse, differentiated, policy):
    if prevent_cse and differentiated:
        # Keep XLA from merging the recomputation with the forward pass.
        args = list(hlo.optimization_barrier(list(args))) if args else args
    return _inline(ctx, *args, jaxpr=jaxpr)


register_lowering(jit_p, _call_lowering)
on_new_call_primitive(lambda p: register_lowering(
    p, lambda ctx, *args, jaxpr, **params: _inline(ctx, *args, jaxpr=jaxpr)))
register_lowering(custom_derivatives.custom_jvp_call_p, _custom_call_lowering)
register_lowering(custom_derivatives.custom_vjp_call_p, _custom_call_lowering)
register_lowering(remat_p, _remat_lowering)
register_lowering(custom_batching.custom_vmap_call_p,
                  lambda ctx, *args, call, **params: _inline(ctx, *args, jaxpr=call))


def _linear_call_lowering(ctx, *args, callee, transpose, num_callee_consts,
                          num_transpose_consts, num_res):
    return _inline(ctx, *args[num_transpose_consts:], jaxpr=callee)


register_lowering(linear_call_p, _linear_call_lowering)
