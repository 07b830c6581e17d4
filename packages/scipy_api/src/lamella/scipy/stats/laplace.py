"""The Laplace (double exponential) distribution, density
exp(-|x - loc| / scale) / (2 scale): jax.scipy.stats.laplace's functions.

The CDF is exp(z) / 2 below loc and 1 - exp(-z) / 2 above (as -expm1 would not
help: the upper half is near 1). A scale <= 0 gives NaN, as SciPy.

>>> import numpy as np
>>> from lamella.scipy.stats import laplace
>>> laplace.cdf(np.float32([-50.0, 0.0, 1.0]))
Array([9.6437495e-23, 5.0000000e-01, 8.1606030e-01], dtype=float32)
"""

from __future__ import annotations

import math

import lamella.numpy as lnp
from lamella.scipy.stats._common import Array, ArrayLike, apply, nan_unless, safe, standardize

__all__ = ["cdf", "logpdf", "pdf"]


def _logpdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, -lnp.abs(z) - math.log(2) - lnp.log(safe(valid, scale, 1.0)))


def _pdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, 0.5 * lnp.exp(-lnp.abs(z)) / safe(valid, scale, 1.0))


def _cdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    half_tail = 0.5 * lnp.exp(-lnp.abs(z))
    return nan_unless(valid, lnp.where(z < 0, half_tail, 1 - half_tail))


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log density -|x - loc| / scale - log(2 scale).

    >>> import numpy as np
    >>> logpdf(np.float32([-1.0, 0.0, 3.0]), 0.0, 2.0)
    Array([-1.8862944, -1.3862944, -2.8862944], dtype=float32)
    """
    return apply("laplace.logpdf", _logpdf, x, loc, scale)


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The density exp(-|x - loc| / scale) / (2 scale).

    >>> import numpy as np
    >>> pdf(np.float32([0.0, 1.0]))
    Array([0.5       , 0.18393973], dtype=float32)
    """
    return apply("laplace.pdf", _pdf, x, loc, scale)


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The CDF: exp(z) / 2 for z = (x - loc) / scale < 0, 1 - exp(-z) / 2 above.

    >>> import numpy as np
    >>> cdf(np.float32([-1.0, 1.0]))
    Array([0.18393973, 0.8160603 ], dtype=float32)
    """
    return apply("laplace.cdf", _cdf, x, loc, scale)
