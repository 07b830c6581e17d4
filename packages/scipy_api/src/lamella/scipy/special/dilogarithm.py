"""Spence's function spence(x) = integral of log(t) / (1 - t) from 1 to x, the
dilogarithm Li2(1 - x).

Li2(z) for -1 <= z <= 1/2 is the series sum B_n u^(n+1) / (n+1)! in
u = -log(1 - z) (|u| <= log 2, 13 terms for float64); the rest of x >= 0 is
mapped there by Li2(z) + Li2(1 - z) = pi^2/6 - log(z) log(1 - z) and
Li2(z) + Li2(1/z) = -pi^2/6 - log(-z)^2 / 2. The derivative is log(x) / (1 - x),
-1 at x = 1 (JAX's is NaN for 1 < x < 4).

>>> import numpy as np
>>> spence(np.float32([0.0, 1.0, 2.0]))
Array([ 1.644934,  0.      , -0.822467], dtype=float32)
"""

from __future__ import annotations

import math
from functools import cache

import lamella.core as lc
import lamella.numpy as lnp
from lamella.scipy.special._numerics import Array, ArrayLike, apply, horner, log1p, zeta_minus_one

__all__ = ["spence"]

_PI2_6 = math.pi ** 2 / 6


@cache
def _li2_series() -> tuple[float, ...]:
    """The coefficients of Li2 in u = -log(1 - z), highest order first:
    u - u^2/4 + sum_k B_2k u^(2k+1) / (2k+1)! (B_2k from zeta(2k))."""
    coefficients = {1: 1.0, 2: -0.25}
    for k in range(1, 13):
        b = (-1) ** (k + 1) * 2 * (1 + zeta_minus_one(2 * k)) * math.factorial(2 * k) / (
            2 * math.pi) ** (2 * k)
        coefficients[2 * k + 1] = b / math.factorial(2 * k + 1)
    top = max(coefficients)
    return tuple(coefficients.get(p, 0.0) for p in range(top, -1, -1))


def _li2(u: Array) -> Array:
    return horner(u, _li2_series())


@lc.custom_jvp
def _spence(x: Array) -> Array:
    middle = (x >= 0.5) & (x <= 2)
    low = x < 0.5
    safe_low = lnp.where(low & (x > 0), x, 0.25)
    safe_high = lnp.where(x > 2, x, 4.0)
    # x in [1/2, 2]: Li2(1 - x), u = -log(x).
    out = _li2(-lnp.log(lnp.where(middle, x, 1.0)))
    # x in [0, 1/2): pi^2/6 - log(x) log(1 - x) - Li2(x), u = -log1p(-x).
    from_low = (_PI2_6 - lnp.log(safe_low) * log1p(-safe_low)
                - _li2(-log1p(-safe_low)))
    # x > 2: -pi^2/6 - log(x - 1)^2 / 2 - Li2(1 / (1 - x)), u = log1p(-1/x).
    log_x1 = lnp.log(safe_high - 1)
    from_high = -_PI2_6 - 0.5 * log_x1 * log_x1 - _li2(log1p(-1 / safe_high))
    out = lnp.where(low, from_low, lnp.where(x > 2, from_high, out))
    out = lnp.where(x == 0, _PI2_6, lnp.where(x == 1, 0.0, out))
    return lnp.where((x < 0) | (x == lnp.inf) | lnp.isnan(x), lnp.nan, out)


@_spence.defjvp
def _spence_jvp(primals, tangents):
    x, = primals
    t, = tangents
    shift = x - 1
    safe = lnp.where(shift == 0, 1.0, shift)
    slope = lnp.where(shift == 0, -1.0, -log1p(safe) / safe)
    return _spence(x), t * slope


def spence(x: ArrayLike) -> Array:
    """Spence's function, the integral of log(t) / (1 - t) from 1 to x, for x >= 0
    (NaN below, as SciPy). Differentiable everywhere on x > 0.

    >>> import numpy as np
    >>> spence(np.float32(0.5))  # pi^2/12 - log(2)^2/2
    Array(0.5822405, dtype=float32)
    """
    return apply("spence", _spence, x)
