"""Triton rules for lax's elementwise primitives: arith for arithmetic, comparisons
and bit operations, libdevice (`tt.extern_elementwise` on `__nv_*`, as Triton's
own `libdevice` module calls it) for the transcendental functions.

Operands may be scalars while the result is a tensor (lax's n-ary primitives
take scalar operands): each rule first broadcasts them to the result's shape.
Half-precision transcendentals are computed in float32, as Triton does.

>>> from lamella.lax import exp_p, max_p
>>> from lamella.pallas.triton.rule_table import triton_rules
>>> exp_p in triton_rules and max_p in triton_rules
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import arith, math
from jaxlib.triton import dialect as tt

import lamella.lax as lax
from lamella.pallas.triton.builder import (
    broadcast_to,
    cast,
    full,
    ir_type,
    is_float,
    is_signed,
)
from lamella.pallas.triton.rule_table import RuleContext, register

__all__ = ["binary", "compare", "libdevice"]


def _operands(ctx: RuleContext, *xs: ir.Value) -> list[ir.Value]:
    shape = ctx.avals_out[0].shape
    return [broadcast_to(x, shape) for x in xs]


def _dtype(ctx: RuleContext) -> np.dtype:
    return np.dtype(ctx.avals_in[0].dtype)


def binary(float_op: Callable | None, signed_op: Callable | None,
           unsigned_op: Callable | None = None) -> Callable[..., ir.Value]:
    """A rule choosing the arith op by the operands' dtype."""
    unsigned_op = unsigned_op or signed_op

    def rule(ctx: RuleContext, x, y, **_):
        dtype = _dtype(ctx)
        op = float_op if is_float(dtype) else signed_op if is_signed(dtype) else unsigned_op
        if op is None:
            raise TypeError(f"{ctx.kernel.name}: the Triton lowering of this operation does not "
                            f"support {dtype}")
        return op(*_operands(ctx, x, y))
    return rule


register(lax.add_p)(binary(arith.addf, arith.addi))
register(lax.sub_p)(binary(arith.subf, arith.subi))
register(lax.mul_p)(binary(arith.mulf, arith.muli))
register(lax.div_p)(binary(arith.divf, arith.divsi, arith.divui))
register(lax.rem_p)(binary(arith.remf, arith.remsi, arith.remui))
# lax.max/min propagate NaN: arith's maximumf/minimumf do.
register(lax.max_p)(binary(arith.maximumf, arith.maxsi, arith.maxui))
register(lax.min_p)(binary(arith.minimumf, arith.minsi, arith.minui))
register(lax.and_p)(binary(None, arith.andi))
register(lax.or_p)(binary(None, arith.ori))
register(lax.xor_p)(binary(None, arith.xori))
register(lax.shift_left_p)(binary(None, arith.shli))
register(lax.shift_right_arithmetic_p)(binary(None, arith.shrsi))
register(lax.shift_right_logical_p)(binary(None, arith.shrui))

_FLOAT_PREDICATES = {"eq": "OEQ", "ne": "UNE", "lt": "OLT", "le": "OLE", "gt": "OGT",
                     "ge": "OGE"}
_INT_PREDICATES = {"eq": ("eq", "eq"), "ne": ("ne", "ne"), "lt": ("slt", "ult"),
                   "le": ("sle", "ule"), "gt": ("sgt", "ugt"), "ge": ("sge", "uge")}


def compare(name: str) -> Callable[..., ir.Value]:
    """The rule of comparison `name`: ordered float predicates (`ne` unordered, so
    NaN != NaN), signed or unsigned integer ones."""
    def rule(ctx: RuleContext, x, y):
        x, y = _operands(ctx, x, y)
        dtype = _dtype(ctx)
        if is_float(dtype):
            return arith.cmpf(getattr(arith.CmpFPredicate, _FLOAT_PREDICATES[name]), x, y)
        signed, unsigned = _INT_PREDICATES[name]
        pred = signed if is_signed(dtype) else unsigned
        return arith.cmpi(getattr(arith.CmpIPredicate, pred), x, y)
    return rule


for _name in _FLOAT_PREDICATES:
    register(getattr(lax, f"{_name}_p"))(compare(_name))


@register(lax.not_p)
def _not(ctx: RuleContext, x):
    ones = full(ctx.avals_out[0].shape, -1 if _dtype(ctx) != np.bool_ else 1, _dtype(ctx))
    return arith.xori(x, ones)


@register(lax.neg_p)
def _neg(ctx: RuleContext, x):
    if is_float(_dtype(ctx)):
        return arith.negf(x)
    return arith.subi(full(ctx.avals_out[0].shape, 0, _dtype(ctx)), x)


@register(lax.abs_p)
def _abs(ctx: RuleContext, x):
    return math.absf(x) if is_float(_dtype(ctx)) else math.absi(x)


@register(lax.sign_p)
def _sign(ctx: RuleContext, x):
    dtype, shape = _dtype(ctx), ctx.avals_out[0].shape
    zero, one = full(shape, 0, dtype), full(shape, 1, dtype)
    if is_float(dtype):
        # copysign(1, x) where x != 0, x itself (0, -0 or NaN) elsewhere.
        nonzero = arith.cmpf(arith.CmpFPredicate.ONE, x, zero)
        return arith.select(nonzero, math.copysign(one, x), x)
    if not is_signed(dtype):
        return cast(arith.cmpi(arith.CmpIPredicate.ne, x, zero), np.bool_, dtype)
    positive = cast(arith.cmpi(arith.CmpIPredicate.sgt, x, zero), np.bool_, dtype)
    negative = cast(arith.cmpi(arith.CmpIPredicate.slt, x, zero), np.bool_, dtype)
    return arith.subi(positive, negative)


@register(lax.integer_pow_p)
def _integer_pow(ctx: RuleContext, x, *, y: int):
    dtype, shape = _dtype(ctx), ctx.avals_out[0].shape
    mul = arith.mulf if is_float(dtype) else arith.muli
    result, base, n = None, x, abs(y)
    while n:  # square and multiply
        if n & 1:
            result = base if result is None else mul(result, base)
        n >>= 1
        if n:
            base = mul(base, base)
    if result is None:
        result = full(shape, 1, dtype)
    if y < 0:
        result = arith.divf(full(shape, 1, dtype), result)
    return result


@register(lax.square_p)
def _square(ctx: RuleContext, x):
    return arith.mulf(x, x) if is_float(_dtype(ctx)) else arith.muli(x, x)


@register(lax.population_count_p)
def _popcount(ctx: RuleContext, x):
    return math.ctpop(x)


@register(lax.clz_p)
def _clz(ctx: RuleContext, x):
    return math.ctlz(x)


def _extern(symbol: str, args: list[ir.Value], shape, dtype) -> ir.Value:
    return tt.extern_elementwise(ir_type(shape, dtype), args, libname="", libpath="",
                                 symbol=symbol, pure=True)


def libdevice(name: str) -> Callable[..., ir.Value]:
    """A rule calling libdevice's `__nv_<name>f` (float32) or `__nv_<name>` (float64);
    narrower floats go through float32."""
    def rule(ctx: RuleContext, *xs, **_):
        dtype, shape = _dtype(ctx), ctx.avals_out[0].shape
        if not is_float(dtype):
            raise TypeError(f"{ctx.kernel.name}: {name} on GPU needs a floating-point operand, "
                            f"got {dtype}")
        args = _operands(ctx, *xs)
        if dtype == np.float64:
            return _extern(f"__nv_{name}", args, shape, np.float64)
        wide = [cast(a, dtype, np.float32) for a in args]
        out = _extern(f"__nv_{name}f", wide, shape, np.float32)
        return cast(out, np.float32, dtype)
    return rule


for _prim, _name in [
    (lax.exp_p, "exp"), (lax.exp2_p, "exp2"), (lax.expm1_p, "expm1"), (lax.log_p, "log"),
    (lax.log1p_p, "log1p"), (lax.sqrt_p, "sqrt"), (lax.rsqrt_p, "rsqrt"), (lax.cbrt_p, "cbrt"),
    (lax.sin_p, "sin"), (lax.cos_p, "cos"), (lax.tan_p, "tan"), (lax.asin_p, "asin"),
    (lax.acos_p, "acos"), (lax.atan_p, "atan"), (lax.sinh_p, "sinh"), (lax.cosh_p, "cosh"),
    (lax.tanh_p, "tanh"), (lax.asinh_p, "asinh"), (lax.acosh_p, "acosh"),
    (lax.atanh_p, "atanh"), (lax.erf_p, "erf"), (lax.erfc_p, "erfc"),
    (lax.erf_inv_p, "erfinv"), (lax.lgamma_p, "lgamma"), (lax.floor_p, "floor"),
    (lax.ceil_p, "ceil"), (lax.atan2_p, "atan2"), (lax.pow_p, "pow"),
    (lax.nextafter_p, "nextafter"),
]:
    register(_prim)(libdevice(_name))


@register(lax.round_p)
def _round(ctx: RuleContext, x, *, rounding_method: Any = 0):
    # 0 / AWAY_FROM_ZERO is libdevice's round, 1 / TO_NEAREST_EVEN its rint.
    even = int(getattr(rounding_method, "value", rounding_method)) == 1
    return libdevice("rint" if even else "round")(ctx, x)


@register(lax.logistic_p)
def _logistic(ctx: RuleContext, x):
    dtype, shape = _dtype(ctx), ctx.avals_out[0].shape
    one = full(shape, 1, dtype)
    e = libdevice("exp")(ctx, arith.negf(x))
    return arith.divf(one, arith.addf(one, e))


@register(lax.is_finite_p)
def _is_finite(ctx: RuleContext, x):
    inf = full(ctx.avals_out[0].shape, np.inf, _dtype(ctx))
    return arith.cmpf(arith.CmpFPredicate.OLT, math.absf(x), inf)


@register(lax.clamp_p)
def _clamp(ctx: RuleContext, lo, x, hi):
    dtype = np.dtype(ctx.avals_in[1].dtype)
    lo, x, hi = _operands(ctx, lo, x, hi)
    if is_float(dtype):
        return arith.minimumf(arith.maximumf(x, lo), hi)
    if is_signed(dtype):
        return arith.minsi(arith.maxsi(x, lo), hi)
    return arith.minui(arith.maxui(x, lo), hi)

