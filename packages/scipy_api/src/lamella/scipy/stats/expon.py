"""The exponential distribution, density exp(-(x - loc) / scale) / scale on
x >= loc: jax.scipy.stats.expon's functions.

cdf is -expm1(-z) (exact for small z, where 1 - exp(-z) rounds), logcdf is
log(1 - e^-z) by `log1mexp`, logsf is -z exactly and ppf is -log1p(-q). Below
loc: pdf 0, cdf 0, sf 1. A scale <= 0 gives NaN, as SciPy.

>>> import numpy as np
>>> from lamella.scipy.stats import expon
>>> expon.logcdf(np.float32([1e-10, 1.0, 100.0]))
Array([-23.02585   ,  -0.45867515,  -0.        ], dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy.stats._common import (
    Array,
    ArrayLike,
    apply,
    log1mexp,
    log1p,
    nan_unless,
    safe,
    standardize,
)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def _logpdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    value = lnp.where(z >= 0, -z, -lnp.inf) - lnp.log(safe(valid, scale, 1.0))
    return nan_unless(valid, value)


def _pdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    density = lnp.where(z >= 0, lnp.exp(-lnp.maximum(z, 0.0)), 0.0)
    return nan_unless(valid, density / safe(valid, scale, 1.0))


def _cdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, -lnp.expm1(-lnp.maximum(z, 0.0)))


def _logcdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, lnp.where(z > 0, log1mexp(-safe(z > 0, z, 1.0)), -lnp.inf))


def _sf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, lnp.exp(-lnp.maximum(z, 0.0)))


def _logsf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, -lnp.maximum(z, 0.0))


def _ppf(q, loc, scale):
    inside = (q >= 0) & (q <= 1)
    return nan_unless((scale > 0) & inside, loc - scale * log1p(-safe(inside, q, 0.5)))


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log density: -(x - loc) / scale - log(scale) on x >= loc, -inf below.

    >>> import numpy as np
    >>> logpdf(np.float32([-1.0, 0.0, 2.0]), 0.0, 2.0)
    Array([      -inf, -0.6931472, -1.6931472], dtype=float32)
    """
    return apply("expon.logpdf", _logpdf, x, loc, scale)


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The density exp(-(x - loc) / scale) / scale on x >= loc.

    >>> import numpy as np
    >>> pdf(np.float32([-1.0, 0.0, 1.0]))
    Array([0.        , 1.        , 0.36787945], dtype=float32)
    """
    return apply("expon.pdf", _pdf, x, loc, scale)


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The CDF 1 - exp(-(x - loc) / scale), as -expm1.

    >>> import numpy as np
    >>> cdf(np.float32([1e-10, 1.0]))
    Array([1.0000000e-10, 6.3212055e-01], dtype=float32)
    """
    return apply("expon.cdf", _cdf, x, loc, scale)


def logcdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the CDF.

    >>> import numpy as np
    >>> logcdf(np.float32([-1.0, 1e-10]))
    Array([     -inf, -23.02585], dtype=float32)
    """
    return apply("expon.logcdf", _logcdf, x, loc, scale)


def sf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The survival function exp(-(x - loc) / scale), 1 below loc.

    >>> import numpy as np
    >>> sf(np.float32([-1.0, 50.0]))
    Array([1.0000000e+00, 1.9287499e-22], dtype=float32)
    """
    return apply("expon.sf", _sf, x, loc, scale)


def logsf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the survival function, -(x - loc) / scale (0 below loc).

    >>> import numpy as np
    >>> logsf(np.float32([-1.0, 200.0]))
    Array([  -0., -200.], dtype=float32)
    """
    return apply("expon.logsf", _logsf, x, loc, scale)


def ppf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The quantile -scale log(1 - q) + loc: 0 at q = 0, inf at 1, NaN outside [0, 1].

    >>> import numpy as np
    >>> ppf(np.float32([0.0, 1e-10, 0.5, 1.0]))
    Array([0.000000e+00, 1.000000e-10, 6.931472e-01,          inf], dtype=float32)
    """
    return apply("expon.ppf", _ppf, q, loc, scale)
