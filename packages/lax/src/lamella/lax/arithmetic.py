"""Arithmetic primitives: neg, sign, abs, add, sub, mul, div, rem, integer_pow,
max, min, square, and the complex parts real, imag, conj, complex — each with
its shape rule, JVP (or linearity and transpose), batching and lowering."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from lamella.core import ShapedArray, ad, dtypes
from lamella.core.trace import aval_of
from lamella.lax import symbolic_lowering
from lamella.lax.conversion import convert_element_type
from lamella.lax.fill import full_like
from lamella.lax.logical import complex_choose, eq, ge, select
from lamella.lax.lowering import aval_to_ir_type, chlo, constant, hlo, register_lowering
from lamella.lax.mlir_context import dtype_of, shape_and_dtype
from lamella.lax.rounding import floor
from lamella.lax.standard import (
    ANY,
    COMPLEX,
    FLOAT,
    INEXACT,
    INT,
    NUMBER,
    SINT,
    binary_op,
    broadcast_to_result,
    broadcasting_shape,
    check_dtypes,
    check_same_dtypes,
    const,
    defjvp,
    hide_none_params,
    maybe_broadcast,
    naryop,
    unbroadcast,
    unop,
)


def _zeros_like(x):
    return ad.zeros_like_aval(aval_of(x))


# --- neg ----------------------------------------------------------------------
neg_p = unop("neg", NUMBER, hlo.negate)


def neg(x):
    """-x"""
    return neg_p.bind(x)


ad.deflinear(neg_p, lambda ct: [neg(ct)])

# --- sign ---------------------------------------------------------------------
def _sign_lowering(x):
    if dtype_of(x).kind != "u":
        return hlo.sign(x)
    # stablehlo.sign takes no unsigned integers; their sign is 0 or 1.
    zero, one = (symbolic_lowering.splat(x, constant(v, dtype_of(x))) for v in (0, 1))
    is_zero = hlo.compare(x, zero, hlo.ComparisonDirectionAttr.get("EQ"),
                          compare_type=hlo.ComparisonTypeAttr.get("UNSIGNED"))
    return hlo.select(is_zero, zero, one)


sign_p = unop("sign", NUMBER, _sign_lowering)


def sign(x):
    """-1, 0 or 1 by the sign of x (x/|x| for complex)."""
    return sign_p.bind(x)


ad.defjvp_zero(sign_p)

# --- add, sub -----------------------------------------------------------------
add_p = naryop("add", NUMBER, hlo.add)
sub_p = naryop("sub", NUMBER, hlo.subtract)
add = binary_op(add_p)
sub = binary_op(sub_p)


def _add_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = add(x, y)
    shape = aval_of(out).shape
    if type(tx) is ad.Zero and type(ty) is ad.Zero:
        return out, ad.Zero.from_primal_value(out)
    if type(tx) is ad.Zero:
        return out, maybe_broadcast(shape, ty)
    if type(ty) is ad.Zero:
        return out, maybe_broadcast(shape, tx)
    return out, add(tx, ty)


def _sub_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = sub(x, y)
    shape = aval_of(out).shape
    if type(tx) is ad.Zero and type(ty) is ad.Zero:
        return out, ad.Zero.from_primal_value(out)
    if type(tx) is ad.Zero:
        return out, maybe_broadcast(shape, neg(ty))
    if type(ty) is ad.Zero:
        return out, maybe_broadcast(shape, tx)
    return out, sub(tx, ty)


def _linear_operand_ct(ct, operand, transform=None):
    """The cotangent of a linear operand: `transform(ct)` summed over broadcast axes;
    None for an operand that is not linear (a known primal)."""
    if not ad.is_undefined_primal(operand):
        return None
    if type(ct) is ad.Zero:
        return ad.Zero(operand.aval)
    return unbroadcast(operand.aval, transform(ct) if transform else ct)


ad.primitive_jvps[add_p] = _add_jvp
ad.primitive_jvps[sub_p] = _sub_jvp
ad.primitive_transposes[add_p] = lambda ct, x, y: [
    _linear_operand_ct(ct, x), _linear_operand_ct(ct, y)]
ad.primitive_transposes[sub_p] = lambda ct, x, y: [
    _linear_operand_ct(ct, x), _linear_operand_ct(ct, y, neg)]

# --- mul ----------------------------------------------------------------------
mul_p = naryop("mul", NUMBER, None)


def mul(x, y, *, out_dtype=None):
    """x * y; with `out_dtype`, the operands are converted to it first.

    >>> mul(np.int8(100), np.int8(3), out_dtype=np.int32)
    Array(300, dtype=int32)
    """
    out_dtype = None if out_dtype is None else dtypes.canonicalize_dtype(out_dtype)
    return mul_p.bind(x, y, out_dtype=out_dtype)


@mul_p.def_abstract_eval
def _mul_abstract_eval(x, y, *, out_dtype):
    check_dtypes("mul", NUMBER, x, y)
    check_same_dtypes("mul", x, y)
    shape = broadcasting_shape("mul", x, y)
    if out_dtype is not None:
        return ShapedArray(shape, out_dtype)
    return ShapedArray(shape, x.dtype, x.weak_type and y.weak_type)


def _mul_lowering(ctx, x, y, *, out_dtype):
    x, y = broadcast_to_result(ctx, [x, y])
    if out_dtype is not None and out_dtype != ctx.avals_in[0].dtype:
        x, y = (hlo.convert(aval_to_ir_type(ctx.avals_out[0]), v) for v in (x, y))
    return [hlo.multiply(x, y)]


register_lowering(mul_p, _mul_lowering)
defjvp(mul_p, lambda t, x, y, out_dtype: mul(t, y, out_dtype=out_dtype),
       lambda t, x, y, out_dtype: mul(x, t, out_dtype=out_dtype))


def _mul_transpose(ct, x, y, *, out_dtype):
    if ad.is_undefined_primal(x):
        back = None if out_dtype is None else x.aval.dtype
        return [_linear_operand_ct(ct, x, lambda ct: mul(ct, y, out_dtype=back)), None]
    back = None if out_dtype is None else y.aval.dtype
    return [None, _linear_operand_ct(ct, y, lambda ct: mul(x, ct, out_dtype=back))]


ad.primitive_transposes[mul_p] = _mul_transpose
hide_none_params(mul_p, "out_dtype")

# --- mulhi: the high half of a double-width product -------------------------------


def _mulhi_lowering(ctx, x, y):
    """Computed in twice the width below 64 bits; from 32-bit halves at 64 bits
    (XLA has no multiply-high)."""
    x, y = broadcast_to_result(ctx, [x, y])
    aval = ctx.avals_out[0]
    dtype, bits = aval.dtype, 8 * aval.dtype.itemsize
    signed = dtype.kind == "i"
    full = lambda v, t: hlo.broadcast_in_dim(t, constant(v, shape_and_dtype(t)[1]), [])  # noqa: E731
    if bits < 64:
        wide_dtype = np.dtype(f"{'i' if signed else 'u'}{2 * bits // 8}")
        wide = aval_to_ir_type(aval.update(dtype=wide_dtype))
        product = hlo.multiply(hlo.convert(wide, x), hlo.convert(wide, y))
        shift = hlo.shift_right_arithmetic if signed else hlo.shift_right_logical
        return [hlo.convert(x.type, shift(product, full(bits, wide)))]
    u64 = aval_to_ir_type(aval.update(dtype=np.dtype(np.uint64)))
    ux, uy = (hlo.bitcast_convert(u64, v) if signed else v for v in (x, y))
    mask, half = full(0xFFFFFFFF, u64), full(32, u64)
    x_lo, x_hi = hlo.and_(ux, mask), hlo.shift_right_logical(ux, half)
    y_lo, y_hi = hlo.and_(uy, mask), hlo.shift_right_logical(uy, half)
    lo_lo = hlo.multiply(x_lo, y_lo)
    cross = hlo.add(hlo.multiply(x_hi, y_lo), hlo.shift_right_logical(lo_lo, half))
    cross2 = hlo.add(hlo.multiply(x_lo, y_hi), hlo.and_(cross, mask))
    high = hlo.add(hlo.add(hlo.multiply(x_hi, y_hi), hlo.shift_right_logical(cross, half)),
                   hlo.shift_right_logical(cross2, half))
    if not signed:
        return [high]
    # The signed high half: subtract y where x < 0 and x where y < 0 (mod 2**64).
    zero = full(0, x.type)
    less = hlo.ComparisonDirectionAttr.get("LT")
    signed_cmp = hlo.ComparisonTypeAttr.get("SIGNED")
    zero_u = full(0, u64)
    for a, b in ((x, uy), (y, ux)):
        negative = hlo.compare(a, zero, less, compare_type=signed_cmp)
        high = hlo.subtract(high, hlo.select(negative, b, zero_u))
    return [hlo.bitcast_convert(x.type, high)]


mulhi_p = naryop("mulhi", INT, None)
register_lowering(mulhi_p, _mulhi_lowering)
ad.defjvp_zero(mulhi_p)


def mulhi(x, y, /):
    """The high half of the double-width product of two integers: for N-bit
    operands, the upper N bits of the 2N-bit x * y.

    >>> mulhi(np.uint32(4000000000), np.uint32(4000000000))
    Array(3725290298, dtype=uint32)
    """
    return mulhi_p.bind(x, y)


# --- div ----------------------------------------------------------------------
def _guarded_integer_division(op: Callable, by_zero: str) -> Callable:
    """`op` (divide or remainder) made safe for XLA's constant folder, which
    divides integer constants in C: x / 0 and MIN / -1 trap (SIGFPE) and kill the
    process. The divisor is replaced where it would trap, and the results are
    XLA's own runtime ones: x / 0 = -1 (all ones), x % 0 = x, MIN / -1 = MIN,
    MIN % -1 = 0."""
    def lower(x, y):
        dtype = dtype_of(x)
        if dtype.kind not in "iu":
            return op(x, y)
        full = lambda v: symbolic_lowering.splat(x, constant(v, dtype))  # noqa: E731
        kind = hlo.ComparisonTypeAttr.get("SIGNED" if dtype.kind == "i" else "UNSIGNED")
        eq = lambda a, b: hlo.compare(a, b, hlo.ComparisonDirectionAttr.get("EQ"),  # noqa: E731
                                      compare_type=kind)
        zero_divisor = eq(y, full(0))
        trap = zero_divisor
        if dtype.kind == "i":
            overflow = hlo.and_(eq(x, full(np.iinfo(dtype).min)), eq(y, full(-1)))
            trap = hlo.or_(trap, overflow)
        result = op(x, hlo.select(trap, full(1), y))
        all_ones = np.iinfo(dtype).max if dtype.kind == "u" else -1
        return hlo.select(zero_divisor, full(all_ones) if by_zero == "all ones" else x, result)
    return lower


div_p = naryop("div", NUMBER, _guarded_integer_division(hlo.divide, "all ones"))
div = binary_op(div_p)
defjvp(div_p, lambda t, x, y: div(t, y),
       lambda t, x, y: mul(mul(neg(t), x), integer_pow(y, -2)))


def _div_transpose(ct, x, y):
    if ad.is_undefined_primal(y):
        raise TypeError("div is linear only in its numerator")
    return [_linear_operand_ct(ct, x, lambda ct: div(ct, y)), None]


ad.primitive_transposes[div_p] = _div_transpose

# --- rem: the remainder with the sign of the dividend (C fmod) ------------------
# Not for complex numbers: XLA has no complex remainder (it crashes compiling one).
rem_p = naryop("rem", (INT, FLOAT), _guarded_integer_division(hlo.remainder, "dividend"))
rem = binary_op(rem_p)


def _trunc_div(x, y):
    q = div(x, y)
    return mul(sign(q), floor(mul(sign(q), q)))


defjvp(rem_p, lambda t, x, y: t, lambda t, x, y: mul(neg(t), _trunc_div(x, y)))

# --- integer_pow --------------------------------------------------------------
integer_pow_p = unop("integer_pow", NUMBER, lambda x, *, y: _integer_pow_lowering(x, y))


@integer_pow_p.def_abstract_eval
def _integer_pow_abstract_eval(x, *, y):
    check_dtypes("integer_pow", NUMBER, x)
    if y < 0 and x.dtype.kind in "iu":
        raise TypeError(f"integer_pow cannot raise integers to the negative power {y}; "
                        "convert the base to a floating dtype first.")
    return x


def integer_pow(x, y: int):
    """x ** y for a static Python integer y (repeated squaring)."""
    return integer_pow_p.bind(x, y=int(y))


def _integer_pow_lowering(x, y: int):
    is_reciprocal = y < 0
    y = -y if is_reciprocal else y  # (this module's `abs` is lax.abs)
    acc = None
    square_ = x
    while y > 0:
        if y & 1:
            acc = square_ if acc is None else hlo.multiply(acc, square_)
        y >>= 1
        if y:
            square_ = hlo.multiply(square_, square_)
    if acc is None:
        acc = symbolic_lowering.splat(x, constant(1, dtype_of(x)))
    if is_reciprocal:
        one = symbolic_lowering.splat(x, constant(1, dtype_of(x)))
        acc = hlo.divide(one, acc)
    return acc


def _integer_pow_jvp(t, x, *, y):
    if y == 0:
        return _zeros_like(t)
    if y == 1:
        return t
    if y == 2:
        return mul(t, mul(const(x, 2), x))
    return mul(t, mul(const(x, y), integer_pow(x, y - 1)))


ad.defjvp(integer_pow_p, _integer_pow_jvp)


square_p = unop("square", NUMBER, lambda x: hlo.multiply(x, x))
ad.defjvp(square_p, lambda t, x: mul(t, mul(full_like(x, 2), x)))


def square(x):
    """x * x.

    >>> square(np.float32(3.0))
    Array(9., dtype=float32)
    """
    return square_p.bind(x)


def reciprocal(x):
    """1 / x, elementwise (`integer_pow(x, -1)`).

    >>> reciprocal(np.float32(4.0))
    Array(0.25, dtype=float32)
    """
    return integer_pow(x, -1)


# --- abs ----------------------------------------------------------------------
def _abs_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32 if dtype == np.complex64 else np.float64) \
        if dtype.kind == "c" else dtype


abs_p = unop("abs", (SINT, FLOAT, COMPLEX), hlo.abs, result_dtype=_abs_dtype)


def abs(x):
    """|x| (the modulus, a real array, for complex x)."""
    return abs_p.bind(x)


def _abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    out = abs(x)
    if type(t) is ad.Zero:
        return out, ad.Zero.from_primal_value(out)
    if aval_of(x).dtype.kind != "c":
        return out, select(ge(x, const(x, 0)), t, neg(t))
    is_zero = eq(out, _zeros_like(out))
    safe = select(is_zero, full_like(out, 1), out)
    direction = div(conj(x), convert_element_type(safe, aval_of(x).dtype))
    return out, select(is_zero, _zeros_like(out), real(mul(direction, t)))


ad.primitive_jvps[abs_p] = _abs_jvp

# --- max, min -----------------------------------------------------------------
def _minmax_lowering(real_op: Callable, direction: str) -> Callable:
    return lambda x, y: (complex_choose(x, y, direction) if dtype_of(x).kind == "c"
                         else real_op(x, y))


max_p = naryop("max", ANY, _minmax_lowering(hlo.maximum, "GT"))
min_p = naryop("min", ANY, _minmax_lowering(hlo.minimum, "LT"))
max = binary_op(max_p)
min = binary_op(min_p)


def _balanced_eq(x, z, y):
    """1 where x is the max/min z (1/2 at ties, so gradients split evenly)."""
    return div(select(eq(x, z), full_like(z, 1), full_like(z, 0)),
               select(eq(y, z), full_like(z, 2), full_like(z, 1)))


def _chooser_jvp(prim):
    def rule(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        out = prim.bind(x, y)
        shape = aval_of(out).shape
        t_out = ad.Zero.from_primal_value(out)
        for t, a, b in ((tx, x, y), (ty, y, x)):
            if type(t) is not ad.Zero:
                t_out = ad.add_tangents(t_out, maybe_broadcast(shape,
                                                               mul(t, _balanced_eq(a, out, b))))
        return out, t_out
    ad.primitive_jvps[prim] = rule


_chooser_jvp(max_p)
_chooser_jvp(min_p)

# --- complex parts: real, imag, conj, complex ------------------------------------
def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64 if dtype == np.complex128 else np.float32)


def _complex_dtype(dtype: np.dtype) -> np.dtype:
    if dtype.kind != "c" and dtype.itemsize < 4:  # float16, bfloat16
        # XLA has no complex type with 16-bit parts (stablehlo.complex rejects them).
        raise TypeError(f"complex numbers have float32 or float64 parts, got {dtype.name}; "
                        "convert to float32 first.")
    return np.dtype(np.complex128 if dtype in (np.float64, np.complex128) else np.complex64)


real_p = unop("real", COMPLEX, hlo.real, result_dtype=_real_dtype)
imag_p = unop("imag", COMPLEX, hlo.imag, result_dtype=_real_dtype)
conj_p = unop("conj", INEXACT, lambda x: x, result_dtype=_complex_dtype)
complex_p = naryop("complex", FLOAT, hlo.complex,
                   result_dtype=lambda x, y: _complex_dtype(x))


def real(x):
    """The real part of a complex array."""
    return real_p.bind(x)


def imag(x):
    """The imaginary part of a complex array."""
    return imag_p.bind(x)


def conj(x):
    """The complex conjugate (a complex array, also for real x)."""
    return conj_p.bind(x)


complex = binary_op(complex_p, doc="x + i y from two real arrays.")


def _conj_lowering(ctx, x):
    if ctx.avals_in[0].dtype.kind != "c":
        zero = symbolic_lowering.splat(x, constant(0, ctx.avals_in[0].dtype))
        return [hlo.complex(x, zero)]
    return [chlo.conj(x)]


register_lowering(conj_p, _conj_lowering)
ad.deflinear(real_p, lambda ct: [complex(ct, ad.zeros_like_aval(aval_of(ct)))])
ad.deflinear(imag_p, lambda ct: [complex(ad.zeros_like_aval(aval_of(ct)), neg(ct))])
ad.deflinear2(conj_p, lambda ct, x: [conj(ct) if x.aval.dtype.kind == "c" else real(ct)])
ad.primitive_jvps[complex_p] = partial(ad.linear_jvp, complex_p)
ad.primitive_transposes[complex_p] = lambda ct, x, y: [
    _linear_operand_ct(ct, x, real), _linear_operand_ct(ct, y, lambda ct: neg(imag(ct)))]

__all__ = ["abs", "abs_p", "add", "add_p", "complex", "complex_p", "conj", "conj_p", "div",
           "div_p", "imag", "imag_p", "integer_pow", "integer_pow_p", "max", "max_p", "min",
           "min_p", "mul", "mul_p", "mulhi", "mulhi_p", "neg", "neg_p", "real", "real_p",
           "reciprocal", "rem", "rem_p", "sign", "sign_p", "square", "square_p", "sub", "sub_p"]
