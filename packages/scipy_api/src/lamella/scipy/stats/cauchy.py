"""The Cauchy distribution, density 1 / (pi scale (1 + z**2)) with
z = (x - loc) / scale: jax.scipy.stats.cauchy's functions.

- logpdf uses log1p(z**2) as 2 log|z| + log1p(1/z**2) past |z| = 1, so it does
  not overflow for |z| > 1e19 (float32) where z**2 does;
- cdf is atan2(1, -z) / pi (= 1/2 + atan(z) / pi): the lower tail keeps its
  relative accuracy (1/2 + atan(z)/pi cancels to 0 for z < -1e8), and sf is the
  same at -z; logcdf/logsf are log1p(-sf) where the other side is small;
- ppf is -1 / tan(pi q) below q = 1/4 and 1 / tan(pi (1 - q)) above 3/4 (1 - q
  is exact there), tan(pi (q - 1/2)) between, so small tails keep their digits.

A scale <= 0 gives NaN, as SciPy.

>>> import numpy as np
>>> from lamella.scipy.stats import cauchy
>>> cauchy.cdf(np.float32([-1e10, 0.0, 1.0]))
Array([3.183099e-11, 5.000000e-01, 7.500000e-01], dtype=float32)
"""

from __future__ import annotations

import math

import lamella.numpy as lnp
from lamella.scipy.stats._common import (
    Array,
    ArrayLike,
    apply,
    log1p,
    nan_unless,
    safe,
    standardize,
)

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def log1p_square(z: Array) -> Array:
    """log(1 + z**2) without overflowing z**2 (shared with Student's t)."""
    t = lnp.abs(z)
    big = t > 1
    t_big = safe(big, t, 2.0)
    t_small = safe(~big, t, 1.0)
    return lnp.where(big, 2 * lnp.log(t_big) + log1p(1 / (t_big * t_big)),
                     log1p(t_small * t_small))


def _logpdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    value = -math.log(math.pi) - lnp.log(safe(valid, scale, 1.0)) - log1p_square(z)
    return nan_unless(valid, value)


def _pdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    t = lnp.abs(z)
    big = t > 1e10  # 1 + z**2 is z**2 there; z * z would overflow in float32 past 1e19
    t_big = safe(big, t, 2e10)
    t_small = safe(~big, t, 1.0)
    density = lnp.where(big, (1 / (math.pi * t_big)) / t_big,
                        1 / (math.pi * (1 + t_small * t_small)))
    return nan_unless(valid, density / safe(valid, scale, 1.0))


def _lower(z: Array) -> Array:
    """P(Z <= z) for the standard Cauchy, with relative accuracy in the lower tail."""
    return lnp.arctan2(lnp.ones_like(z), -z) / math.pi


def _log_lower(z: Array) -> Array:
    upper = _lower(-z)
    return lnp.where(upper < 0.5, log1p(-upper), lnp.log(_lower(z)))


def _cdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, _lower(z))


def _sf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, _lower(-z))


def _logcdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, _log_lower(z))


def _logsf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, _log_lower(-z))


def _quantile(q: Array) -> Array:
    """The standard Cauchy quantile, tan(pi (q - 1/2)), NaN outside [0, 1]."""
    low, high = q < 0.25, q > 0.75
    middle = lnp.tan(math.pi * (safe(~(low | high), q, 0.5) - 0.5))
    lower = -1 / lnp.tan(math.pi * safe(low, q, 0.25))
    upper = 1 / lnp.tan(math.pi * (1 - safe(high, q, 0.75)))
    value = lnp.where(low, lower, lnp.where(high, upper, middle))
    return nan_unless((q >= 0) & (q <= 1), value)


def _ppf(q, loc, scale):
    return nan_unless(scale > 0, loc + scale * _quantile(q))


def _isf(q, loc, scale):
    return nan_unless(scale > 0, loc - scale * _quantile(q))


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log density -log(pi scale) - log(1 + z**2).

    >>> import numpy as np
    >>> logpdf(np.float32([0.0, 1e30]))
    Array([  -1.1447299, -139.29984  ], dtype=float32)
    """
    return apply("cauchy.logpdf", _logpdf, x, loc, scale)


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The density 1 / (pi scale (1 + z**2)).

    >>> import numpy as np
    >>> pdf(np.float32([0.0, 1.0]))
    Array([0.31830987, 0.15915494], dtype=float32)
    """
    return apply("cauchy.pdf", _pdf, x, loc, scale)


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The CDF 1/2 + arctan(z) / pi.

    >>> import numpy as np
    >>> cdf(np.float32([-1.0, 1e10]))
    Array([0.25, 1.  ], dtype=float32)
    """
    return apply("cauchy.cdf", _cdf, x, loc, scale)


def logcdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the CDF.

    >>> import numpy as np
    >>> logcdf(np.float32([-1e10, 1e10]))
    Array([-2.417058e+01, -3.183099e-11], dtype=float32)
    """
    return apply("cauchy.logcdf", _logcdf, x, loc, scale)


def sf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The survival function 1/2 - arctan(z) / pi.

    >>> import numpy as np
    >>> sf(np.float32([1e10]))
    Array([3.183099e-11], dtype=float32)
    """
    return apply("cauchy.sf", _sf, x, loc, scale)


def logsf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the survival function.

    >>> import numpy as np
    >>> logsf(np.float32([1e10]))
    Array([-24.17058], dtype=float32)
    """
    return apply("cauchy.logsf", _logsf, x, loc, scale)


def ppf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The quantile loc + scale tan(pi (q - 1/2)).

    >>> import numpy as np
    >>> ppf(np.float32([0.0, 1e-10, 0.75, 1.0]))
    Array([          -inf, -3.1830986e+09,  1.0000000e+00,            inf],
          dtype=float32)
    """
    return apply("cauchy.ppf", _ppf, q, loc, scale)


def isf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The inverse survival function loc - scale tan(pi (q - 1/2)).

    >>> import numpy as np
    >>> isf(np.float32([1e-10, 0.5]))
    Array([3.1830986e+09, 0.0000000e+00], dtype=float32)
    """
    return apply("cauchy.isf", _isf, q, loc, scale)
