"""Information-theory terms: xlogy, xlog1py, entr, rel_entr and kl_div.

Each is 0 where its x (or p) is 0, with derivatives defined there. rel_entr and
kl_div keep their relative accuracy where p and q are close, which is where
they are smallest and matter most in a sum of divergences:

- log(p/q) is log1p((p - q)/q) for q/2 <= p <= 2q (p - q is then exact), and
  log(p) - log(q) when p/q would over- or underflow;
- kl_div(p, q) = q ((1 + t) log1p(t) - t) with t = (p - q)/q, which for
  |t| <= 1/2 is the series q sum_n>=2 (-t)**n / (n (n - 1)): p log(p/q) - p + q
  would cancel down to (p - q)**2 / 2q and keep only its rounding error.

>>> import numpy as np
>>> kl_div(np.float32(1.0001), np.float32(1.0))
Array(5.001493e-09, dtype=float32)
"""

from __future__ import annotations

from functools import cache

import lamella.core as lc
import lamella.numpy as lnp
from lamella.scipy.special._elementary import log1p
from lamella.scipy.special._numerics import Array, ArrayLike, apply, horner, is_float64

__all__ = ["entr", "kl_div", "rel_entr", "xlog1py", "xlogy"]


# --- xlogy, xlog1py -----------------------------------------------------------------------------
def _x_times(log, x: Array, y: Array) -> Array:
    """x * log(y), 0 where x == 0 unless y is NaN (as SciPy)."""
    return lnp.where((x != 0) | lnp.isnan(y), x * log(y), 0.0)


def _x_over(x: Array, y: Array) -> Array:
    """x / y, 0 where x == 0: the derivative of x log(y) in y, which vanishes with x."""
    return lnp.where(x == 0, 0.0, x / lnp.where(x == 0, 1.0, y))


@lc.custom_jvp
def _xlogy(x: Array, y: Array) -> Array:
    return _x_times(lnp.log, x, y)


_xlogy.defjvps(lambda t, out, x, y: t * lnp.log(y), lambda t, out, x, y: t * _x_over(x, y))


def xlogy(x: ArrayLike, y: ArrayLike) -> Array:
    """x * log(y), and 0 where x is 0 (even at y = 0) unless y is NaN.

    >>> import numpy as np
    >>> xlogy(np.float32([0.0, 2.0]), np.float32([0.0, np.e]))
    Array([0., 2.], dtype=float32)
    """
    return apply("xlogy", _xlogy, x, y)


@lc.custom_jvp
def _xlog1py(x: Array, y: Array) -> Array:
    return _x_times(log1p, x, y)


_xlog1py.defjvps(lambda t, out, x, y: t * log1p(y),
                 lambda t, out, x, y: t * _x_over(x, 1 + y))


def xlog1py(x: ArrayLike, y: ArrayLike) -> Array:
    """x * log1p(y), and 0 where x is 0 (even at y = -1) unless y is NaN.

    >>> import numpy as np
    >>> xlog1py(np.float32([0.0, 2.0]), np.float32([-1.0, 1e-8]))
    Array([0.e+00, 2.e-08], dtype=float32)
    """
    return apply("xlog1py", _xlog1py, x, y)


# --- entr ---------------------------------------------------------------------------------------
@lc.custom_jvp
def _entr(x: Array) -> Array:
    return lnp.where(x < 0, -lnp.inf, -_x_times(lnp.log, x, x))


_entr.defjvps(lambda t, y, x: -t * (lnp.log(x) + 1))


def entr(x: ArrayLike) -> Array:
    """The entropy term -x log(x): 0 at x = 0 and -inf for x < 0.

    >>> import numpy as np
    >>> entr(np.float32([0.0, 0.5, -1.0]))
    Array([-0.       ,  0.3465736,       -inf], dtype=float32)
    """
    return apply("entr", _entr, x)


# --- rel_entr, kl_div ----------------------------------------------------------------------------
def _log_ratio(p: Array, q: Array) -> Array:
    """log(p / q) for p, q > 0, to a few ulps of the result."""
    ratio = p / q
    close = (p >= 0.5 * q) & (p <= 2 * q)
    tiny = float(lnp.finfo(p.dtype).tiny)
    representable = (ratio >= tiny) & (ratio < lnp.inf)
    out = lnp.where(representable, lnp.log(ratio), lnp.log(p) - lnp.log(q))
    return lnp.where(close, log1p((p - q) / q), out)


def _divergence_cases(p: Array, q: Array, p_zero: Array) -> Array:
    """The value where p > 0 and q > 0 do not both hold: `p_zero` where p = 0 <= q,
    NaN for NaN and inf otherwise (p < 0, q < 0, or q = 0 < p)."""
    out = lnp.where((p == 0) & (q >= 0), p_zero, lnp.inf)
    return lnp.where(lnp.isnan(p) | lnp.isnan(q), lnp.nan, out)


@lc.custom_jvp
def _rel_entr(p: Array, q: Array) -> Array:
    both = (p > 0) & (q > 0)
    sp, sq = lnp.where(both, p, 1.0), lnp.where(both, q, 1.0)
    return lnp.where(both, sp * _log_ratio(sp, sq), _divergence_cases(p, q, 0.0))


_rel_entr.defjvps(lambda t, out, p, q: t * (lnp.log(p / q) + 1),
                  lambda t, out, p, q: -t * (p / q))


def rel_entr(p: ArrayLike, q: ArrayLike) -> Array:
    """The relative entropy term p log(p / q): 0 where p = 0 <= q, inf where p or q
    is negative or q = 0 < p.

    >>> import numpy as np
    >>> rel_entr(np.float32([0.5, 0.0, 1.0]), np.float32([0.25, 1.0, -1.0]))
    Array([0.3465736, 0.       ,       inf], dtype=float32)
    """
    return apply("rel_entr", _rel_entr, p, q)


@cache
def _kl_series(terms: int) -> tuple[float, ...]:
    """Coefficients, highest order first, of ((1 + t) log1p(t) - t) / t**2 in t:
    (-1)**n / (n (n - 1)) for n = 2, 3, ..."""
    return tuple((-1) ** n / (n * (n - 1)) for n in range(terms + 1, 1, -1))


@lc.custom_jvp
def _kl_div(p: Array, q: Array) -> Array:
    both = (p > 0) & (q > 0)
    sp, sq = lnp.where(both, p, 1.0), lnp.where(both, q, 1.0)
    t = (sp - sq) / sq
    # For |t| <= 1/2 the terms fall like 2**-n / n**2: 48 reach float64 rounding.
    series = sq * (t * t) * horner(t, _kl_series(48 if is_float64(p) else 20))
    direct = sp * _log_ratio(sp, sq) - (sp - sq)
    value = lnp.where(lnp.abs(t) <= 0.5, series, direct)
    return lnp.where(both, value, _divergence_cases(p, q, q))


_kl_div.defjvps(lambda t, out, p, q: t * lnp.log(p / q), lambda t, out, p, q: t * (1 - p / q))


def kl_div(p: ArrayLike, q: ArrayLike) -> Array:
    """The Kullback-Leibler divergence term p log(p / q) - p + q: q where p = 0 <= q,
    inf where p or q is negative or q = 0 < p.

    >>> import numpy as np
    >>> kl_div(np.float32([0.5, 0.0, 1.0]), np.float32([0.25, 2.0, 1.0]))
    Array([0.09657359, 2.        , 0.        ], dtype=float32)
    """
    return apply("kl_div", _kl_div, p, q)
