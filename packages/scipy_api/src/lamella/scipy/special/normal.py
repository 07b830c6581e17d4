"""The standard normal distribution: ndtr (its CDF Phi), ndtri (the quantile) and
log_ndtr (log Phi), accurate far into both tails.

Everything goes through the tail Phi(-t) = exp(-t**2/2) erfcx(t/sqrt(2)) / 2 with
the exponential formed from the exact t (see `_gaussian`), so

- ndtr keeps a relative accuracy of a few ulps down to the underflow (erfc of a
  rounded x/sqrt(2) would lose x**2 ulps there);
- log_ndtr(x) for x < 0 is -x**2/2 + log(erfcx(-x/sqrt(2)) / 2), two terms of one
  sign, so it is accurate for every x without an asymptotic series; for x > 0 it
  is log1p(-Phi(-x)), as a series while Phi(-x) < 1/4 (JAX's log(Phi(x)) is 4%
  off at x = 5 in float32, where Phi(x) rounds to 1 - 5 eps);
- ndtri is Wichura's AS 241, good to ~1e-16, with min(p, 1 - p) exact.

Integers are refused with a TypeError as in JAX; 16-bit floats are computed in
float32.

>>> import numpy as np
>>> log_ndtr(np.float32([-40.0, 0.0, 5.0]))
Array([-8.0460846e+02, -6.9314718e-01, -2.8665164e-07], dtype=float32)
"""

from __future__ import annotations

import math
import operator
from typing import Any

import lamella.core as lc
import lamella.numpy as lnp
from lamella.scipy.special._gaussian import (
    SQRT_HALF,
    erfcx_nonnegative,
    exp_square,
    normal_quantile,
    normal_tail,
)
from lamella.scipy.special._numerics import Array, ArrayLike, apply, horner, is_float64

__all__ = ["log_ndtr", "ndtr", "ndtri"]

_SQRT_2PI = math.sqrt(2 * math.pi)


def _require_floating(name: str, x: Any) -> None:
    dtype = lnp.asarray(x).dtype
    if not lnp.issubdtype(dtype, lnp.floating):
        raise TypeError(f"{name}: x has dtype {dtype}, but it takes real floating-point "
                        f"values (as JAX's {name}); convert with x.astype(float).")


@lc.custom_jvp
def _ndtr(x: Array) -> Array:
    return lnp.where(x < 0, normal_tail(lnp.abs(x)), 1 - normal_tail(lnp.abs(x)))


_ndtr.defjvps(lambda t, y, x: t * exp_square(x, -0.5) / _SQRT_2PI)


def ndtr(x: ArrayLike) -> Array:
    """The standard normal CDF, Phi(x) = (1 + erf(x / sqrt(2))) / 2.

    >>> import numpy as np
    >>> ndtr(np.float32([-30.0, 0.0, 1.0]))
    Array([0.       , 0.5      , 0.8413447], dtype=float32)
    """
    _require_floating("ndtr", x)
    return apply("ndtr", _ndtr, x)


@lc.custom_jvp
def _ndtri(p: Array) -> Array:
    return normal_quantile(p)


_ndtri.defjvps(lambda t, y, p: t * _SQRT_2PI * lnp.exp(0.5 * y * y))


def ndtri(p: ArrayLike) -> Array:
    """The inverse of `ndtr`: the x with Phi(x) = p. -inf at 0, inf at 1, NaN
    outside [0, 1].

    >>> import numpy as np
    >>> ndtri(np.float32([1e-30, 0.5, 0.975]))
    Array([-11.464024 ,   0.       ,   1.9599644], dtype=float32)
    """
    _require_floating("ndtri", p)
    return apply("ndtri", _ndtri, p)


def _log1p_minus(q: Array) -> Array:
    """log(1 - q) for 0 <= q < 1/4 as -q (1 + q/2 + q**2/3 + ...), to rounding."""
    terms = 27 if is_float64(q) else 12
    return -q * horner(q, tuple(1 / n for n in range(terms, 0, -1)))


@lc.custom_jvp
def _log_ndtr(x: Array) -> Array:
    t = lnp.abs(x)
    scaled_tail = 0.5 * erfcx_nonnegative(t * SQRT_HALF)  # Phi(-t) exp(t**2 / 2)
    below = x <= 0
    tail = exp_square(lnp.where(below, 0.0, t), -0.5) * scaled_tail  # Phi(-x) above 0
    # One logarithm serves both sides: of scaled_tail below 0, and of 1 - tail above,
    # where 1 - tail is exact enough once tail >= 1/4; smaller tails take the series.
    logarithm = lnp.log(lnp.where(below, scaled_tail, 1 - tail))
    upper = lnp.where(tail < 0.25, _log1p_minus(lnp.minimum(tail, 0.25)), logarithm)
    # t * (t / 2) rather than t * t / 2: it overflows only where the result does.
    return lnp.where(below, -(0.5 * t) * t + logarithm, upper)


def _normal_hazard(x: Array) -> Array:
    """phi(x) / Phi(x), the derivative of log_ndtr: below 0 with the exp(-x**2/2) of
    both cancelled (erfcx of a positive argument is well conditioned); above 0,
    where Phi(x) is near 1, directly."""
    below = x < 0
    lower = math.sqrt(2 / math.pi) / erfcx_nonnegative(lnp.where(below, -x, 0.0) * SQRT_HALF)
    upper = exp_square(x, -0.5) / (_SQRT_2PI * (1 - normal_tail(lnp.where(below, 0.0, x))))
    return lnp.where(below, lower, upper)


_log_ndtr.defjvps(lambda t, y, x: t * _normal_hazard(x))


def log_ndtr(x: ArrayLike, series_order: int = 3) -> Array:
    """log(Phi(x)), the logarithm of the standard normal CDF, for every x.

    Args:
      x: real floating-point values.
      series_order: the number of terms of the asymptotic series JAX uses for
        x < -10 (float32) or -20 (float64). Checked as JAX checks it (an int in
        [0, 30]), but unused: the result here is exact at any x, not a series.

    >>> import numpy as np
    >>> log_ndtr(np.float32([-5.0, -1.0, 3.0]))
    Array([-1.5064999e+01, -1.8410217e+00, -1.3508098e-03], dtype=float32)
    """
    if not isinstance(series_order, int) or isinstance(series_order, bool):
        raise TypeError(f"log_ndtr: series_order must be a Python int, got "
                        f"{type(series_order).__name__}.")
    if not 0 <= operator.index(series_order) <= 30:
        raise ValueError(f"log_ndtr: series_order must be in [0, 30], got {series_order}.")
    _require_floating("log_ndtr", x)
    return apply("log_ndtr", _log_ndtr, x)
