"""The generalized normal distribution with shape beta, density
beta / (2 Gamma(1/beta)) exp(-|x|**beta): jax.scipy.stats.gennorm's functions
(JAX's set and signatures: no loc or scale).

The CDF is Q(1/beta, |x|**beta) / 2 below 0 and 1 minus that above, so the lower
tail keeps its relative accuracy (JAX's (1 + sign(x) P) / 2 rounds it to 0).
beta <= 0 gives NaN, as SciPy; |x|**beta is 0 at x = 0 with a finite
derivative in beta.

>>> import numpy as np
>>> from lamella.scipy.stats import gennorm
>>> gennorm.cdf(np.float32([-30.0, 0.0, 1.0]), 1.5)
Array([0.        , 0.5       , 0.88759124], dtype=float32)
"""

from __future__ import annotations

import math

import lamella.numpy as lnp
from lamella.scipy import special
from lamella.scipy.stats._common import Array, ArrayLike, apply, nan_unless, safe

__all__ = ["cdf", "logpdf", "pdf"]


def _power(x: Array, beta: Array) -> Array:
    """|x|**beta, 0 at x = 0 (where log|x| would make its beta-derivative NaN)."""
    t = lnp.abs(x)
    zero = t == 0
    return lnp.where(zero, 0.0, lnp.exp(beta * lnp.log(safe(~zero, t, 1.0))))


def _logpdf(x, beta):
    valid = beta > 0
    beta = safe(valid, beta, 1.0)
    value = lnp.log(beta) - math.log(2) - special.gammaln(1 / beta) - _power(x, beta)
    return nan_unless(valid, value)


def _pdf(x, beta):
    return lnp.exp(_logpdf(x, beta))


def _cdf(x, beta):
    valid = beta > 0
    beta = safe(valid, beta, 1.0)
    half_tail = 0.5 * special.gammaincc(1 / beta, _power(x, beta))
    return nan_unless(valid, lnp.where(x < 0, half_tail, 1 - half_tail))


def logpdf(x: ArrayLike, beta: ArrayLike) -> Array:
    """log density log(beta / 2) - log Gamma(1/beta) - |x|**beta.

    >>> import numpy as np
    >>> logpdf(np.float32([0.0, 2.0]), 2.0)
    Array([-0.5723649, -4.572365 ], dtype=float32)
    """
    return apply("gennorm.logpdf", _logpdf, x, beta)


def pdf(x: ArrayLike, beta: ArrayLike) -> Array:
    """The density beta / (2 Gamma(1/beta)) exp(-|x|**beta).

    >>> import numpy as np
    >>> pdf(np.float32([0.0]), 1.0)
    Array([0.5], dtype=float32)
    """
    return apply("gennorm.pdf", _pdf, x, beta)


def cdf(x: ArrayLike, beta: ArrayLike) -> Array:
    """The CDF: Q(1/beta, |x|**beta) / 2 below 0, 1 - Q(1/beta, |x|**beta) / 2 above.

    >>> import numpy as np
    >>> cdf(np.float32([-1.0, 1.0]), 1.0)
    Array([0.18393987, 0.8160601 ], dtype=float32)
    """
    return apply("gennorm.cdf", _cdf, x, beta)
