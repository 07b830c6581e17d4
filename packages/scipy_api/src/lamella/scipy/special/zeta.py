"""The Hurwitz zeta function zeta(x, q) and — where JAX raises for q=None —
the Riemann zeta function zeta(x) for every real x, as SciPy.

Values with q come from lax's zeta; the derivative in x (which lax lacks) is the
Euler-Maclaurin formula differentiated. Riemann's zeta is lax's zeta(x, 1) for
x >= 1, Euler-Maclaurin on [0, 1) (where the series diverges but the formula
does not) and the functional equation
zeta(x) = 2^x pi^(x-1) sin(pi x / 2) Gamma(1 - x) zeta(1 - x) below 0, in logs.

>>> import numpy as np
>>> zeta(np.float32([2.0, 0.5, -1.0]))
Array([ 1.644934  , -1.4603543 , -0.08333333], dtype=float32)
"""

from __future__ import annotations

import math

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp
from lamella.scipy.special._numerics import BERNOULLI_EVEN, Array, ArrayLike, apply, sinpi
from lamella.scipy.special.gamma import _gammaln

__all__ = ["zeta"]

_HEAD = 10  # terms summed before the Euler-Maclaurin tail


def _euler_maclaurin(s: Array, q: Array) -> Array:
    """sum_{j<10} (j + q)^-s + w^(1-s) / (s - 1) + w^-s / 2
    + sum_m B_2m / (2m)! s (s+1) ... (s+2m-2) w^(-s-2m+1), w = q + 10: the Hurwitz
    zeta function for q > 0 and any s != 1 (with its derivatives, by autodiff)."""
    head = sum(lnp.exp(-s * lnp.log(q + j)) for j in range(_HEAD))
    w = q + _HEAD
    log_w = lnp.log(w)
    tail = lnp.exp((1 - s) * log_w) / (s - 1) + lnp.exp(-s * log_w) / 2
    rising = s
    for m, b in enumerate(BERNOULLI_EVEN, start=1):
        tail = tail + b / math.factorial(2 * m) * rising * lnp.exp((-s - 2 * m + 1) * log_w)
        rising = rising * (s + 2 * m - 1) * (s + 2 * m)
    return head + tail


@lc.custom_jvp
def _hurwitz(x: Array, q: Array) -> Array:
    return lax.zeta(x, q)


@_hurwitz.defjvp
def _hurwitz_jvp(primals, tangents):
    x, q = primals
    tx, tq = tangents
    safe = (q > 0) & (x > 1)
    _, slope_x = lc.jvp(lambda s: _euler_maclaurin(s, lnp.where(safe, q, 1.0)),
                        (lnp.where(safe, x, 2.0),), (lnp.ones_like(x),))
    slope_x = lnp.where(safe, slope_x, lnp.nan)
    return _hurwitz(x, q), tx * slope_x - tq * x * _hurwitz(x + 1, q)


def _riemann(x: Array) -> Array:
    above = x >= 1
    middle = (x >= 0) & (x < 1)
    below = x < 0
    direct = _hurwitz(lnp.where(above, x, 2.0), lnp.ones_like(x))
    in_middle = _euler_maclaurin(lnp.where(middle, x, 0.5), lnp.ones_like(x))
    # The functional equation in logs (Gamma(1 - x) overflows long before the result).
    r = lnp.where(below, x, -1.0)
    sine = sinpi(r / 2)
    log_size = (r * math.log(2) + (r - 1) * math.log(math.pi) + lnp.log(lnp.abs(sine))
                + _gammaln(1 - r) + lnp.log(_hurwitz(1 - r, lnp.ones_like(x))))
    reflected = lnp.sign(sine) * lnp.exp(log_size)
    out = lnp.where(above, direct, lnp.where(middle, in_middle, reflected))
    out = lnp.where(x == lnp.inf, 1.0, out)
    return lnp.where((x == -lnp.inf) | lnp.isnan(x), lnp.nan, out)


def zeta(x: ArrayLike, q: ArrayLike | None = None) -> Array:
    """The Hurwitz zeta function, the sum over n >= 0 of (n + q)^-x; with q=None
    (JAX raises) Riemann's zeta function for all real x, as SciPy: its analytic
    continuation below 1, with zeros at the negative even integers.

    Differentiable in x and in q.

    >>> import numpy as np
    >>> zeta(np.float32(2.0), np.float32([1.0, 2.0]))
    Array([1.644934  , 0.64493406], dtype=float32)
    """
    if q is None:
        return apply("zeta", _riemann, x)
    return apply("zeta", _hurwitz, x, q)
