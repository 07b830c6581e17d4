"""Triton rules for shapes, dtypes, `dot_general` and reductions.

- `broadcast_in_dim`: `tt.splat` of a scalar, else `tt.expand_dims` for the new
  dims and `tt.broadcast`; `reshape`/`squeeze`: `tt.reshape`; `iota`:
  `tt.make_range` placed along its dimension; `transpose`: `tt.trans`.
- `dot_general` (a 2-D matrix product, as `pl.dot` makes): `tt.dot` into a zero
  accumulator of float32 (int32 for integers), IEEE float32 unless the
  precision asks for TF32, as JAX's Triton lowering does.
- `reduce_sum/max/min/prod/and/or/xor`: one `tt.reduce` per axis whose region
  combines two scalars.

>>> from lamella.lax import dot_general_p, reduce_sum_p
>>> from lamella.pallas.triton.rule_table import triton_rules
>>> dot_general_p in triton_rules and reduce_sum_p in triton_rules
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import arith
from jaxlib.triton import dialect as tt

import lamella.lax as lax
from lamella.pallas.triton.builder import (
    broadcast_to,
    cast,
    element_type,
    full,
    ir_type,
    is_float,
    is_signed,
    make_range,
    shape_of,
    splat,
)
from lamella.pallas.triton.rule_table import RuleContext, register

__all__ = ["reduce_axis"]


@register(lax.broadcast_in_dim_p)
def _broadcast_in_dim(ctx: RuleContext, x, *dyn, shape, broadcast_dimensions, **_):
    shape = tuple(shape)
    if not shape_of(x):
        return splat(x, shape)
    expanded = [1] * len(shape)
    for d, n in zip(broadcast_dimensions, shape_of(x)):
        expanded[d] = n
    for axis in range(len(shape)):
        if axis not in broadcast_dimensions:
            x = tt.expand_dims(x, axis)
    if tuple(expanded) != shape:
        x = tt.broadcast(ir_type(shape, ctx.avals_out[0].dtype), x)
    return x


def _reshape_to(ctx: RuleContext, x, shape: Sequence[int]):
    shape = tuple(shape)
    have = shape_of(x)
    if have == shape:
        return x
    if not have:
        return splat(x, shape)
    if not shape:
        return tt.unsplat(x)
    return tt.reshape(ir_type(shape, ctx.avals_out[0].dtype), x, allow_reorder=False)


@register(lax.reshape_p)
def _reshape(ctx: RuleContext, x, *dyn, new_sizes, **_):
    return _reshape_to(ctx, x, new_sizes)


@register(lax.squeeze_p)
def _squeeze(ctx: RuleContext, x, *, dimensions):
    return _reshape_to(ctx, x, ctx.avals_out[0].shape)


@register(lax.iota_p)
def _iota(ctx: RuleContext, *, dtype, shape, dimension, **_):
    values = make_range(shape[dimension])
    for axis in range(len(shape)):
        if axis != dimension:
            values = tt.expand_dims(values, axis)
    if len(shape) > 1:
        values = tt.broadcast(ir_type(shape, np.int32), values)
    return cast(values, np.int32, dtype)


@register(lax.convert_element_type_p)
def _convert(ctx: RuleContext, x, *, new_dtype, **_):
    return cast(x, ctx.avals_in[0].dtype, new_dtype)


@register(lax.select_n_p)
def _select_n(ctx: RuleContext, which, *cases):
    shape = ctx.avals_out[0].shape
    which_dtype = np.dtype(ctx.avals_in[0].dtype)
    which = broadcast_to(which, shape)
    cases = [broadcast_to(c, shape) for c in cases]
    if which_dtype == np.bool_:
        return arith.select(which, cases[1], cases[0])
    # An integer index: case k where which == k, the last case beyond.
    result = cases[-1]
    for k in reversed(range(len(cases) - 1)):
        hit = arith.cmpi(arith.CmpIPredicate.eq, which, full(shape, k, which_dtype))
        result = arith.select(hit, cases[k], result)
    return result


@register(lax.transpose_p)
def _transpose(ctx: RuleContext, x, *, permutation):
    if tuple(permutation) == tuple(range(len(permutation))):
        return x
    return tt.trans(x, list(permutation))


@register(lax.stop_gradient_p, lax.optimization_barrier_p, lax.copy_p)
def _identity(ctx: RuleContext, *xs, **_):
    return xs[0] if len(xs) == 1 and not ctx.avals_out[1:] else list(xs)


_TF32 = {"TF32", "HIGH", "DEFAULT_TF32", "TENSORFLOAT32", "BF16_BF16_F32"}


def _input_precision(precision: Any, dtype: np.dtype):
    names = {str(getattr(p, "name", p)).upper()
             for p in (precision if isinstance(precision, tuple) else (precision,))}
    if names & {"HIGH", "TF32_TF32_F32"}:
        return tt.InputPrecision.TF32
    if dtype == np.float32:
        return tt.InputPrecision.IEEE
    return None


@register(lax.dot_general_p)
def _dot_general(ctx: RuleContext, a, b, *, dimension_numbers, precision=None,
                 preferred_element_type=None, **_):
    (ca, cb), (ba, bb) = dimension_numbers
    a_aval, b_aval = ctx.avals_in
    if ba or bb or a_aval.ndim != 2 or b_aval.ndim != 2 or len(ca) != 1:
        raise TypeError(f"{ctx.kernel.name}: on GPU a dot must be a 2-D matrix product "
                        f"(pl.dot), got {a_aval.str_short()} x {b_aval.str_short()} with "
                        f"dimension numbers {dimension_numbers}")
    if np.dtype(a_aval.dtype) != np.dtype(b_aval.dtype):
        raise TypeError(f"{ctx.kernel.name}: pl.dot on GPU needs operands of one dtype, got "
                        f"{a_aval.dtype} and {b_aval.dtype}")
    if tuple(ca) == (0,):
        a = tt.trans(a, [1, 0])
    if tuple(cb) == (1,):
        b = tt.trans(b, [1, 0])
    m, n = shape_of(a)[0], shape_of(b)[1]
    out_dtype = np.dtype(ctx.avals_out[0].dtype)
    acc_dtype = np.dtype(np.int32) if not is_float(a_aval.dtype) else (
        out_dtype if out_dtype in (np.float16, np.float64) else np.dtype(np.float32))
    acc = full((m, n), 0, acc_dtype)
    kwargs = {}
    prec = _input_precision(precision, np.dtype(a_aval.dtype))
    if prec is not None:
        kwargs["input_precision"] = prec
    out = tt.dot(a, b, acc, **kwargs)
    return cast(out, acc_dtype, out_dtype)


def reduce_axis(x: ir.Value, axis: int, dtype: Any,
                combine: Callable[[ir.Value, ir.Value], ir.Value]) -> ir.Value:
    """`tt.reduce` of `x` along `axis` with the scalar `combine`."""
    op = tt.ReduceOp([x], axis)
    et = element_type(dtype)
    block = op.regions[0].blocks.append(et, et)
    with ir.InsertionPoint(block):
        tt.reduce_return([combine(*block.arguments)])
    return op.results[0]


def _combiner(kind: str, dtype: np.dtype) -> Callable[[ir.Value, ir.Value], ir.Value]:
    f, s = is_float(dtype), is_signed(dtype)
    return {
        "sum": arith.addf if f else arith.addi,
        "prod": arith.mulf if f else arith.muli,
        "max": arith.maximumf if f else arith.maxsi if s else arith.maxui,
        "min": arith.minimumf if f else arith.minsi if s else arith.minui,
        "and": arith.andi, "or": arith.ori, "xor": arith.xori,
    }[kind]


def _reduction(kind: str):
    def rule(ctx: RuleContext, x, *, axes, **_):
        dtype = np.dtype(ctx.avals_in[0].dtype)
        if kind in ("and", "or", "xor") and is_float(dtype):
            raise TypeError(f"reduce_{kind} needs integer or bool operands, got {dtype}")
        # Highest axis first, so the remaining axes keep their numbers.
        for axis in sorted(axes, reverse=True):
            x = reduce_axis(x, axis, dtype, _combiner(kind, dtype))
        return x
    return rule


for _kind in ("sum", "prod", "max", "min", "and", "or", "xor"):
    register(getattr(lax, f"reduce_{_kind}_p"))(_reduction(_kind))
