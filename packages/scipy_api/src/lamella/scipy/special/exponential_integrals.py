"""The exponential integrals exp1 = E1, expn = E_n and expi = Ei.

E_n(x) is its power series for x <= 1 (a fixed 24 terms) and the continued
fraction e^-x / (x + n - 1*n / (x + n + 2 - 2 (n + 1) / (x + n + 4 - ...))) above,
evaluated backwards from a fixed depth. Ei(x) for x > 0 is its
series (all terms positive) up to x = 50 and its asymptotic series above; for
x < 0 it is -E1(-x). Where JAX returns NaN — expi(0), expi(+-inf), exp1(inf) —
these give SciPy's -inf, inf, 0 and 0, and expn(n >= 2, 0) is 1 / (n - 1).

>>> import numpy as np
>>> exp1(np.float32([0.5, 1.0, np.inf]))
Array([0.5597736 , 0.21938396, 0.        ], dtype=float32)
"""

from __future__ import annotations

import numpy as np

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp
from lamella.scipy.special._numerics import Array, ArrayLike, apply, eps, is_float64, iterate
from lamella.scipy.special.gamma import _digamma, _gamma

__all__ = ["exp1", "expi", "expn"]

_SERIES_TERMS = 24  # x^k / (k k!) < 1e-25 for x <= 1, k >= 24
_MAX_STEPS = 1000
_EULER = float(np.euler_gamma)


def _series_below_one(n: Array, x: Array) -> Array:
    """E_n(x) for n >= 1 and 0 < x <= 1:
    (-x)^(n-1) / (n-1)! (psi(n) - log x) - sum over k != n-1 of (-x)^k / ((k - n + 1) k!)."""
    total = lnp.zeros_like(x)
    power = lnp.ones_like(x)  # (-x)^k / k!
    for k in range(_SERIES_TERMS):
        skip = k == n - 1
        total = total - lnp.where(skip, 0.0, power / lnp.where(skip, 1.0, k - n + 1))
        power = power * -x / (k + 1)
    special = lnp.exp((n - 1) * lnp.log(x)) / _gamma(n) * (_digamma(n) - lnp.log(x))
    return total + lnp.where((n - 1) % 2 == 1, -special, special)


def _fraction_above_one(n: Array, x: Array) -> Array:
    """E_n(x) for x > 1 by its continued fraction evaluated backwards from a fixed
    depth (stable, unlike the forward Lentz recurrence, which gathers ~10 ulps
    near x = 1); at x = 1 the depth reaches 2 ulps in float32 and 5 in float64."""
    depth = 130 if is_float64(x) else 40

    def step(j, t):
        i = depth - j
        return x + n + 2 * (i - 1) - i * (n - 1 + i) / t

    t = lax.fori_loop(0, depth, step, x + n + 2 * depth)
    return lnp.exp(-x) / t


def _expn_value(n: Array, x: Array) -> Array:
    whole = (n >= 0) & (n == lnp.floor(n))
    regular = whole & (n >= 1) & (x > 0) & lnp.isfinite(x)
    below = regular & (x <= 1)
    safe_n = lnp.where(regular, n, 1.0)
    series = _series_below_one(safe_n, lnp.where(below, x, 0.5))
    fraction = _fraction_above_one(safe_n, lnp.where(regular & ~below, x, 2.0))
    out = lnp.where(below, series, fraction)
    out = lnp.where(n == 0, lnp.exp(-x) / x, out)
    at_zero = lnp.where(n >= 2, 1 / lnp.maximum(n - 1, 1.0), lnp.inf)
    out = lnp.where(x == 0, at_zero, out)
    out = lnp.where(x == lnp.inf, 0.0, out)
    return lnp.where(~whole | (x < 0) | lnp.isnan(x), lnp.nan, out)


@lc.custom_jvp
def _expn(n: Array, x: Array) -> Array:
    return _expn_value(n, x)


@_expn.defjvp
def _expn_jvp(primals, tangents):
    n, x = primals
    _, tx = tangents
    # dE_n/dx = -E_(n-1)(x), with E_-1(x) = e^-x (1 + x) / x^2.
    below = lnp.where(n >= 1, _expn_value(lnp.maximum(n - 1, 0.0), x),
                      lnp.exp(-x) * (1 + x) / (x * x))
    return _expn(n, x), -tx * below


def expn(n: ArrayLike, x: ArrayLike) -> Array:
    """The generalized exponential integral E_n(x) = integral of exp(-x t) / t^n
    for t from 1 to inf, for whole n >= 0 and x >= 0 (NaN otherwise, as in JAX).

    expn(n, 0) is 1 / (n - 1) for n >= 2 (JAX says 1 / n). Differentiable in x.

    >>> import numpy as np
    >>> expn(np.array([0, 1, 2, 3]), np.float32(0.0))
    Array([inf, inf, 1. , 0.5], dtype=float32)
    """
    return apply("expn", _expn, n, x)


def _exp1(x: Array) -> Array:
    return _expn(lnp.ones_like(x), x)


def exp1(x: ArrayLike) -> Array:
    """The exponential integral E1(x) = integral of exp(-t) / t for t from x to inf,
    for x >= 0: inf at 0, 0 at inf, NaN for x < 0 (where it is complex).

    >>> import numpy as np
    >>> exp1(np.float32(1.0))
    Array(0.21938396, dtype=float32)
    """
    return apply("exp1", _exp1, x)


# --- expi -----------------------------------------------------------------------------
_ASYMPTOTIC_FROM = 50.0


def _ei_positive(x: Array, active: Array) -> Array:
    """Ei(x) for x > 0: euler_gamma + log x + sum x^k / (k k!) below 50, and
    e^x / x sum k! / x^k (stopped at its smallest term) above."""
    small = x < _ASYMPTOTIC_FROM
    tolerance = eps(x)

    def series_step(state):
        k, power, total = state  # power = x^k / k!
        k = k + 1
        power = power * x / k
        term = power / k
        return (k, power, total + term), term > tolerance * total

    start = (lnp.zeros_like(x), lnp.ones_like(x), lnp.zeros_like(x))
    series = iterate(series_step, start, active & small, _MAX_STEPS)[-1]
    series = _EULER + lnp.log(x) + series

    def asymptotic_step(state):
        k, term, total = state
        k = k + 1
        new = term * k / x
        going = (new < term) & (new > tolerance * total)
        return (k, new, total + new), going

    start = (lnp.zeros_like(x), lnp.ones_like(x), lnp.ones_like(x))
    asymptotic = iterate(asymptotic_step, start, active & ~small, _MAX_STEPS)[-1]
    # e^x / x overflows before their product does not: split the exponential.
    asymptotic = lnp.exp(x / 2) * (lnp.exp(x / 2) / x * asymptotic)
    return lnp.where(small, series, asymptotic)


@lc.custom_jvp
def _expi(x: Array) -> Array:
    positive = (x > 0) & lnp.isfinite(x)
    out = _ei_positive(lnp.where(positive, x, 1.0), positive)
    negative = -_expn(lnp.ones_like(x), lnp.where(x < 0, -x, 1.0))
    out = lnp.where(x < 0, negative, out)
    out = lnp.where(x == 0, -lnp.inf, lnp.where(x == lnp.inf, lnp.inf, out))
    out = lnp.where(x == -lnp.inf, -0.0, out)
    return lnp.where(lnp.isnan(x), lnp.nan, out)


@_expi.defjvp
def _expi_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return _expi(x), t * lnp.exp(x) / x


def expi(x: ArrayLike) -> Array:
    """The exponential integral Ei(x), the principal value of the integral of
    exp(t) / t for t from -inf to x: -inf at 0, inf at inf, -0 at -inf.

    >>> import numpy as np
    >>> expi(np.float32([-1.0, 1.0]))
    Array([-0.21938396,  1.8951179 ], dtype=float32)
    """
    return apply("expi", _expi, x)

