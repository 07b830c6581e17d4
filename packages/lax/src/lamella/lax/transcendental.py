"""Transcendental primitives: exponentials, logarithms, powers, trigonometric
and hyperbolic functions and their inverses, roots, atan2, with JVPs.

The functions JAX gives an `accuracy=` keyword (exp, exp2, log, log1p, expm1,
tanh, logistic, sin, cos, tan, sqrt, rsqrt, cbrt) take a `Tolerance` or an
`AccuracyMode`, carried as the primitive's `accuracy` param and lowered to
StableHLO's `result_accuracy` attribute. XLA's CPU backend has one
implementation of each, so results do not change with it.
"""

from __future__ import annotations

import enum
from typing import Any

from lamella.core import ad
from lamella.core.trace import aval_of
from lamella.lax import symbolic_lowering
from lamella.lax.arithmetic import add, div, integer_pow, mul, neg, square, sub
from lamella.lax.fill import full_like
from lamella.lax.logical import eq, select
from lamella.lax.lowering import chlo, constant, hlo
from lamella.lax.mlir_context import dtype_of
from lamella.lax.standard import (
    FLOAT,
    INEXACT,
    binary_op,
    broadcast_all,
    const,
    defjvp,
    hide_none_params,
    naryop,
    unop,
)


def _zeros(x):
    return ad.zeros_like_aval(aval_of(x))


class AccuracyMode(enum.Enum):
    """Which implementation an `accuracy=` argument asks for."""

    HIGHEST = 1
    DEFAULT = 2


class Tolerance:
    """Tolerances an implementation of a unary function must meet: at most two of
    `atol`, `rtol`, `ulps`, not all zero, none negative.

    >>> Tolerance(atol=1e-6)
    Tolerance(atol=1e-06, rtol=0.0, ulps=0)
    """

    __slots__ = ("atol", "rtol", "ulps")

    def __init__(self, atol: float = 0.0, rtol: float = 0.0, ulps: int = 0):
        if atol < 0.0 or rtol < 0.0 or ulps < 0:
            raise ValueError("Tolerances must be non-negative.")
        if atol == 0.0 and rtol == 0.0 and ulps == 0:
            raise ValueError("At least one of atol, rtol, or ulps must be set.")
        self.atol, self.rtol, self.ulps = float(atol), float(rtol), int(ulps)

    def _key(self) -> tuple[float, float, int]:
        return self.atol, self.rtol, self.ulps

    def __eq__(self, other: object) -> bool:
        return type(other) is Tolerance and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Tolerance(atol={self.atol}, rtol={self.rtol}, ulps={self.ulps})"


def _check_accuracy(name: str, accuracy: Any) -> Any:
    if accuracy is None or isinstance(accuracy, (Tolerance, AccuracyMode)):
        return accuracy
    raise TypeError(f"{name}: accuracy must be None, a lax.Tolerance or a lax.AccuracyMode, "
                    f"got {accuracy!r}")


def _result_accuracy(accuracy: Any):
    if accuracy is None:
        return None
    if isinstance(accuracy, AccuracyMode):
        return hlo.ResultAccuracyAttr.get(0.0, 0.0, 0, accuracy.name)
    return hlo.ResultAccuracyAttr.get(accuracy.atol, accuracy.rtol, accuracy.ulps, "TOLERANCE")


def _accurate(op):
    """A lowering through the StableHLO op `op`, which takes `result_accuracy`."""
    return lambda x, *, accuracy: op(x, result_accuracy=_result_accuracy(accuracy))


def _define(name, accepted, lower):
    prim = unop(name, accepted, lower)

    def op(x):
        return prim.bind(x)
    op.__name__ = name
    op.__doc__ = f"Elementwise {name}."
    return prim, op


def _define_with_accuracy(name, accepted, lower):
    prim = unop(name, accepted, lower)
    hide_none_params(prim, "accuracy")

    def op(x, *, accuracy: Tolerance | AccuracyMode | None = None):
        return prim.bind(x, accuracy=_check_accuracy(name, accuracy))
    op.__name__ = name
    op.__doc__ = (f"Elementwise {name}; `accuracy` (a `Tolerance` or an `AccuracyMode`) "
                  "selects an implementation where the backend has several.")
    return prim, op


def _exp2_lowering(x, *, accuracy):
    # pow(2, x) rather than exp(x log 2): the rounding of x log 2 costs up to |x| ulps
    # (2**100 came out 2e-6 off in float32), and pow is exact at integers.
    two = symbolic_lowering.splat(x, constant(2, dtype_of(x)))
    return hlo.power(two, x)


exp_p, exp = _define_with_accuracy("exp", INEXACT, _accurate(hlo.exponential))
exp2_p, exp2 = _define_with_accuracy("exp2", INEXACT, _exp2_lowering)
log_p, log = _define_with_accuracy("log", INEXACT, _accurate(hlo.log))
log1p_p, log1p = _define_with_accuracy("log1p", INEXACT, _accurate(hlo.log_plus_one))
expm1_p, expm1 = _define_with_accuracy("expm1", INEXACT, _accurate(hlo.exponential_minus_one))
tanh_p, tanh = _define_with_accuracy("tanh", INEXACT, _accurate(hlo.tanh))
logistic_p, logistic = _define_with_accuracy("logistic", INEXACT, _accurate(hlo.logistic))
sin_p, sin = _define_with_accuracy("sin", INEXACT, _accurate(hlo.sine))
cos_p, cos = _define_with_accuracy("cos", INEXACT, _accurate(hlo.cosine))
tan_p, tan = _define_with_accuracy("tan", INEXACT, _accurate(hlo.tan))
asin_p, asin = _define("asin", INEXACT, chlo.asin)
acos_p, acos = _define("acos", INEXACT, chlo.acos)
atan_p, atan = _define("atan", INEXACT, chlo.atan)
sinh_p, sinh = _define("sinh", INEXACT, chlo.sinh)
cosh_p, cosh = _define("cosh", INEXACT, chlo.cosh)
asinh_p, asinh = _define("asinh", INEXACT, chlo.asinh)
acosh_p, acosh = _define("acosh", INEXACT, chlo.acosh)
atanh_p, atanh = _define("atanh", INEXACT, chlo.atanh)
sqrt_p, sqrt = _define_with_accuracy("sqrt", INEXACT, _accurate(hlo.sqrt))
rsqrt_p, rsqrt = _define_with_accuracy("rsqrt", INEXACT, _accurate(hlo.rsqrt))
cbrt_p, cbrt = _define_with_accuracy("cbrt", FLOAT, _accurate(hlo.cbrt))

# JAX's derivative formulas (so derivative jaxprs print alike), computed at default
# accuracy: the `accuracy` param is not passed on.
ad.defjvp2(exp_p, lambda t, ans, x, **_: mul(t, ans))
ad.defjvp2(exp2_p, lambda t, ans, x, **_: mul(log(const(x, 2)), mul(t, ans)))
ad.defjvp(log_p, lambda t, x, **_: div(t, x))
ad.defjvp(log1p_p, lambda t, x, **_: div(t, add(x, const(x, 1))))
ad.defjvp2(expm1_p, lambda t, ans, x, **_: mul(t, add(ans, const(ans, 1))))
ad.defjvp2(tanh_p, lambda t, ans, x, **_: mul(add(t, mul(t, ans)), sub(const(x, 1), ans)))
ad.defjvp2(logistic_p, lambda t, ans, x, **_: mul(t, mul(ans, sub(const(ans, 1), ans))))
ad.defjvp(sin_p, lambda t, x, **_: mul(t, cos(x)))
ad.defjvp(cos_p, lambda t, x, **_: neg(mul(t, sin(x))))
ad.defjvp2(tan_p, lambda t, ans, x, **_: mul(t, add(const(x, 1), square(ans))))
ad.defjvp(asin_p, lambda t, x: mul(t, rsqrt(sub(const(x, 1), square(x)))))
ad.defjvp(acos_p, lambda t, x: mul(t, neg(rsqrt(sub(const(x, 1), square(x))))))
ad.defjvp(atan_p, lambda t, x: div(t, add(const(x, 1), square(x))))
ad.defjvp(sinh_p, lambda t, x: mul(t, cosh(x)))
ad.defjvp(cosh_p, lambda t, x: mul(t, sinh(x)))
ad.defjvp(asinh_p, lambda t, x: mul(t, rsqrt(add(square(x), const(x, 1)))))
ad.defjvp(acosh_p, lambda t, x: mul(t, rsqrt(sub(square(x), const(x, 1)))))
ad.defjvp(atanh_p, lambda t, x: mul(integer_pow(add(const(x, 1), x), -1),
                                    div(t, sub(const(x, 1), x))))
ad.defjvp2(sqrt_p, lambda t, ans, x, **_: mul(t, div(const(x, 0.5), ans)))
ad.defjvp2(rsqrt_p, lambda t, ans, x, **_: mul(t, mul(const(x, -0.5), div(ans, x))))
ad.defjvp2(cbrt_p, lambda t, ans, x, **_: mul(t, mul(const(x, 1 / 3), integer_pow(ans, -2))))

# --- atan2 --------------------------------------------------------------------
atan2_p = naryop("atan2", FLOAT, hlo.atan2)


atan2 = binary_op(atan2_p, doc="The angle of the point (y, x): atan(x / y) in the right quadrant.")


def _atan2_denominator(x, y):
    return add(mul(x, x), mul(y, y))


defjvp(atan2_p, lambda t, x, y: mul(t, div(y, _atan2_denominator(x, y))),
       lambda t, x, y: mul(t, div(neg(x), _atan2_denominator(x, y))))

# --- pow ----------------------------------------------------------------------
pow_p = naryop("pow", INEXACT, hlo.power)
pow = binary_op(pow_p)


def _pow_jvp_x(t, x, y):
    # d/dx x**y = y * x**(y-1); written so that x = 0 with y = 0 gives 0, not nan.
    x, y = broadcast_all(x, y)
    one = full_like(y, 1)
    safe = select(eq(y, _zeros(y)), one, y)
    return mul(t, select(eq(y, _zeros(y)), _zeros(x),
                         mul(safe, pow(x, sub(safe, one)))))


def _pow_jvp_y(t, x, y):
    # d/dy x**y = log(x) x**y, with the convention 0 * log(0) = 0 at x = 0.
    x, y = broadcast_all(x, y)
    is_zero = eq(x, _zeros(x))
    safe_x = select(is_zero, full_like(x, 1), x)
    return mul(t, select(is_zero, _zeros(x), mul(log(safe_x), pow(x, y))))


defjvp(pow_p, _pow_jvp_x, _pow_jvp_y)
