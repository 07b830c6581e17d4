"""The logistic distribution, CDF 1 / (1 + exp(-(x - loc) / scale)):
jax.scipy.stats.logistic's functions (JAX's set: no logcdf or logsf).

The density is written in |z| (exp(-|z|) / (1 + exp(-|z|))**2), so it neither
overflows nor loses the tails; sf is expit(-z) rather than 1 - cdf, ppf is
logit(q) and isf is -logit(q), both exact near q = 1/2. A scale <= 0 gives NaN,
as SciPy.

>>> import numpy as np
>>> from lamella.scipy.stats import logistic
>>> logistic.sf(np.float32([0.0, 40.0]))
Array([5.000000e-01, 4.248354e-18], dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy import special
from lamella.scipy.stats._common import (
    Array,
    ArrayLike,
    apply,
    log1p,
    nan_unless,
    safe,
    standardize,
)

__all__ = ["cdf", "isf", "logpdf", "pdf", "ppf", "sf"]


def _logpdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    t = lnp.abs(z)
    value = -t - 2 * log1p(lnp.exp(-t)) - lnp.log(safe(valid, scale, 1.0))
    return nan_unless(valid, value)


def _pdf(x, loc, scale):
    return lnp.exp(_logpdf(x, loc, scale))


def _cdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, special.expit(z))


def _sf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, special.expit(-z))


def _ppf(q, loc, scale):
    return nan_unless(scale > 0, loc + scale * special.logit(q))


def _isf(q, loc, scale):
    return nan_unless(scale > 0, loc - scale * special.logit(q))


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log density -|z| - 2 log(1 + exp(-|z|)) - log(scale), z = (x - loc) / scale.

    >>> import numpy as np
    >>> logpdf(np.float32([0.0, 100.0]))
    Array([  -1.3862944, -100.       ], dtype=float32)
    """
    return apply("logistic.logpdf", _logpdf, x, loc, scale)


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The density exp(-z) / (scale (1 + exp(-z))**2).

    >>> import numpy as np
    >>> pdf(np.float32([0.0, 1.0]))
    Array([0.25      , 0.19661194], dtype=float32)
    """
    return apply("logistic.pdf", _pdf, x, loc, scale)


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The CDF expit((x - loc) / scale).

    >>> import numpy as np
    >>> cdf(np.float32([-100.0, 0.0, 1.0]))
    Array([0.       , 0.5      , 0.7310586], dtype=float32)
    """
    return apply("logistic.cdf", _cdf, x, loc, scale)


def sf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The survival function expit(-(x - loc) / scale).

    >>> import numpy as np
    >>> sf(np.float32([1.0]))
    Array([0.26894143], dtype=float32)
    """
    return apply("logistic.sf", _sf, x, loc, scale)


def ppf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The quantile loc + scale logit(x) (JAX names the probability `x`).

    >>> import numpy as np
    >>> ppf(np.float32([0.0, 0.5, 0.75]))
    Array([     -inf, 0.       , 1.0986123], dtype=float32)
    """
    return apply("logistic.ppf", _ppf, x, loc, scale)


def isf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The inverse survival function loc - scale logit(x).

    >>> import numpy as np
    >>> isf(np.float32([0.25, 1.0]))
    Array([1.0986123,      -inf], dtype=float32)
    """
    return apply("logistic.isf", _isf, x, loc, scale)
