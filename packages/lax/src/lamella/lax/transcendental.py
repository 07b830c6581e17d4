"""Transcendental primitives: exponentials, logarithms, trigonometric and
hyperbolic functions and their inverses, roots, atan2, with JVPs."""

from __future__ import annotations

import math

from lamella.core import ad
from lamella.lax.arithmetic import add, div, integer_pow, mul, neg, sub
from lamella.lax.lowering import chlo, constant, hlo
from lamella.lax.standard import FLOAT, INEXACT, broadcast_operands, naryop, unop


def _const(x, value):
    from lamella.lax.misc import full_like
    return full_like(x, value)


def _define(name, accepted, lower):
    prim = unop(name, accepted, lower)

    def op(x):
        return prim.bind(x)
    op.__name__ = name
    op.__doc__ = f"Elementwise {name}."
    return prim, op


def _exp2_lowering(x):
    from lamella.lax.arithmetic import _dtype_of
    # pow(2, x) rather than exp(x log 2): the rounding of x log 2 costs up to |x| ulps
    # (2**100 came out 2e-6 off in float32), and pow is exact at integers.
    two = hlo.broadcast_in_dim(x.type, constant(2, _dtype_of(x)), [])
    return hlo.power(two, x)


exp_p, exp = _define("exp", INEXACT, hlo.exponential)
exp2_p, exp2 = _define("exp2", INEXACT, _exp2_lowering)
log_p, log = _define("log", INEXACT, hlo.log)
log1p_p, log1p = _define("log1p", INEXACT, hlo.log_plus_one)
expm1_p, expm1 = _define("expm1", INEXACT, hlo.exponential_minus_one)
tanh_p, tanh = _define("tanh", INEXACT, hlo.tanh)
logistic_p, logistic = _define("logistic", INEXACT, hlo.logistic)
sin_p, sin = _define("sin", INEXACT, hlo.sine)
cos_p, cos = _define("cos", INEXACT, hlo.cosine)
tan_p, tan = _define("tan", INEXACT, hlo.tan)
asin_p, asin = _define("asin", INEXACT, chlo.asin)
acos_p, acos = _define("acos", INEXACT, chlo.acos)
atan_p, atan = _define("atan", INEXACT, chlo.atan)
sinh_p, sinh = _define("sinh", INEXACT, chlo.sinh)
cosh_p, cosh = _define("cosh", INEXACT, chlo.cosh)
asinh_p, asinh = _define("asinh", INEXACT, chlo.asinh)
acosh_p, acosh = _define("acosh", INEXACT, chlo.acosh)
atanh_p, atanh = _define("atanh", INEXACT, chlo.atanh)
sqrt_p, sqrt = _define("sqrt", INEXACT, hlo.sqrt)
rsqrt_p, rsqrt = _define("rsqrt", INEXACT, hlo.rsqrt)
cbrt_p, cbrt = _define("cbrt", FLOAT, hlo.cbrt)

ad.defjvp2(exp_p, lambda t, ans, x: mul(t, ans))
ad.defjvp2(exp2_p, lambda t, ans, x: mul(t, mul(ans, _const(x, math.log(2)))))
ad.defjvp(log_p, lambda t, x: div(t, x))
ad.defjvp(log1p_p, lambda t, x: div(t, add(x, _const(x, 1))))
ad.defjvp2(expm1_p, lambda t, ans, x: mul(t, add(ans, _const(x, 1))))
ad.defjvp2(tanh_p, lambda t, ans, x: mul(t, sub(_const(x, 1), mul(ans, ans))))
ad.defjvp2(logistic_p, lambda t, ans, x: mul(t, mul(ans, sub(_const(x, 1), ans))))
ad.defjvp(sin_p, lambda t, x: mul(t, cos(x)))
ad.defjvp(cos_p, lambda t, x: neg(mul(t, sin(x))))
ad.defjvp2(tan_p, lambda t, ans, x: mul(t, add(_const(x, 1), mul(ans, ans))))
ad.defjvp(asin_p, lambda t, x: mul(t, rsqrt(sub(_const(x, 1), mul(x, x)))))
ad.defjvp(acos_p, lambda t, x: neg(mul(t, rsqrt(sub(_const(x, 1), mul(x, x))))))
ad.defjvp(atan_p, lambda t, x: div(t, add(_const(x, 1), mul(x, x))))
ad.defjvp(sinh_p, lambda t, x: mul(t, cosh(x)))
ad.defjvp(cosh_p, lambda t, x: mul(t, sinh(x)))
ad.defjvp(asinh_p, lambda t, x: mul(t, rsqrt(add(mul(x, x), _const(x, 1)))))
ad.defjvp(acosh_p, lambda t, x: mul(t, rsqrt(mul(sub(x, _const(x, 1)),
                                                  add(x, _const(x, 1))))))
ad.defjvp(atanh_p, lambda t, x: div(t, sub(_const(x, 1), mul(x, x))))
ad.defjvp2(sqrt_p, lambda t, ans, x: div(t, mul(_const(x, 2), ans)))
ad.defjvp2(rsqrt_p, lambda t, ans, x: mul(t, mul(_const(x, -0.5), div(ans, x))))
ad.defjvp2(cbrt_p, lambda t, ans, x: mul(t, mul(_const(x, 1 / 3), integer_pow(ans, -2))))

# --- atan2 --------------------------------------------------------------------
atan2_p = naryop("atan2", FLOAT, hlo.atan2)


def atan2(x, y):
    """The angle of the point (y, x): atan(x / y) in the right quadrant."""
    return atan2_p.bind(*broadcast_operands("atan2", x, y))


def _atan2_denominator(x, y):
    return add(mul(x, x), mul(y, y))


ad.defjvp(atan2_p, lambda t, x, y: mul(t, div(y, _atan2_denominator(x, y))),
          lambda t, x, y: mul(t, div(neg(x), _atan2_denominator(x, y))))
