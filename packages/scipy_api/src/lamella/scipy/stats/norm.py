"""The normal distribution N(loc, scale**2): jax.scipy.stats.norm's functions.

The tails go through lamella.scipy.special's ndtr/log_ndtr/ndtri, which keep
their relative accuracy down to the underflow: logcdf(-40) = -804.6 and
logsf(40) = -804.6 in float32, sf(x) is ndtr(-z) (not 1 - cdf) and isf(q) is
-ndtri(q) (not ppf(1 - q), which loses small q). pdf forms exp(-z**2/2) from an
exact split of z**2 (rounding z**2 first costs z**2/2 ulps: 800 at z = 40).
A scale <= 0 gives NaN, as SciPy (JAX returns numbers there).

>>> import numpy as np
>>> from lamella.scipy.stats import norm
>>> norm.logcdf(np.float32([-40.0, 0.0, 40.0]))
Array([-8.0460846e+02, -6.9314718e-01, -0.0000000e+00], dtype=float32)
"""

from __future__ import annotations

import math

import lamella.numpy as lnp
from lamella.scipy import special
from lamella.scipy.special._gaussian import exp_square
from lamella.scipy.stats._common import (
    LOG_SQRT_2PI,
    Array,
    ArrayLike,
    apply,
    nan_unless,
    safe,
    standardize,
)

__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def log_density(z: Array) -> Array:
    """log phi(z), the standard normal log density; (z / 2) * z overflows only where
    the result is -inf anyway."""
    return -(0.5 * z) * z - LOG_SQRT_2PI


def _logpdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, log_density(z) - lnp.log(safe(valid, scale, 1.0)))


def _pdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    density = exp_square(z, -0.5) * (1 / math.sqrt(2 * math.pi))
    return nan_unless(valid, density / safe(valid, scale, 1.0))


def _cdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, special.ndtr(z))


def _sf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, special.ndtr(-z))


def _logcdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, special.log_ndtr(z))


def _logsf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, special.log_ndtr(-z))


def _ppf(q, loc, scale):
    return nan_unless(scale > 0, loc + scale * special.ndtri(q))


def _isf(q, loc, scale):
    return nan_unless(scale > 0, loc - scale * special.ndtri(q))


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the normal density, -((x - loc) / scale)**2 / 2 - log(scale sqrt(2 pi)).

    >>> import numpy as np
    >>> logpdf(np.float32([0.0, 1.0]), 1.0, 2.0)
    Array([-1.7370857, -1.6120857], dtype=float32)
    """
    return apply("norm.logpdf", _logpdf, x, loc, scale)


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The normal density.

    >>> import numpy as np
    >>> pdf(np.float32([0.0, 1.0]))
    Array([0.3989423 , 0.24197073], dtype=float32)
    """
    return apply("norm.pdf", _pdf, x, loc, scale)


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The normal CDF, ndtr((x - loc) / scale).

    >>> import numpy as np
    >>> cdf(np.float32([-30.0, 0.0, 1.0]))
    Array([0.       , 0.5      , 0.8413447], dtype=float32)
    """
    return apply("norm.cdf", _cdf, x, loc, scale)


def logcdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the normal CDF, exact far into both tails.

    >>> import numpy as np
    >>> logcdf(np.float32([-10.0, 5.0]))
    Array([-5.3231285e+01, -2.8665164e-07], dtype=float32)
    """
    return apply("norm.logcdf", _logcdf, x, loc, scale)


def sf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The survival function 1 - cdf, computed as cdf of the mirrored point.

    >>> import numpy as np
    >>> sf(np.float32([0.0, 10.0]))
    Array([5.0000000e-01, 7.6198544e-24], dtype=float32)
    """
    return apply("norm.sf", _sf, x, loc, scale)


def logsf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the survival function.

    >>> import numpy as np
    >>> logsf(np.float32([10.0, -5.0]))
    Array([-5.3231285e+01, -2.8665164e-07], dtype=float32)
    """
    return apply("norm.logsf", _logsf, x, loc, scale)


def ppf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The quantile function, the inverse of `cdf`: -inf at 0, inf at 1, NaN outside.

    >>> import numpy as np
    >>> ppf(np.float32([0.025, 0.5]), 1.0, 2.0)
    Array([-2.9199278,  1.       ], dtype=float32)
    """
    return apply("norm.ppf", _ppf, q, loc, scale)


def isf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The inverse survival function, `ppf(1 - q)` without rounding 1 - q.

    >>> import numpy as np
    >>> isf(np.float32([1e-20, 0.5]))
    Array([9.262341, 0.      ], dtype=float32)
    """
    return apply("norm.isf", _isf, q, loc, scale)
