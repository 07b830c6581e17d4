"""The Pareto distribution with shape b, density b / z**(b + 1) / scale on
z = (x - loc) / scale >= 1: jax.scipy.stats.pareto's functions.

logsf is -b log z exactly, cdf is -expm1(-b log z) (exact near z = 1, where
1 - z**-b cancels: SciPy's is 1e6 ulps off at z = 1 + 1e-6), logcdf is
log(1 - z**-b) by `log1mexp`; sf, pdf and ppf are powers (z**-b, b z**-(b+1) and
(1 - q)**(-1/b): an exponential of a large logarithm would multiply its rounding).
Below z = 1 the density and CDF are 0. b <= 0 or scale <= 0 gives NaN, as SciPy.

>>> import numpy as np
>>> from lamella.scipy.stats import pareto
>>> pareto.cdf(np.float32([0.5, 1.0000001, 2.0]), 3.0)
Array([0.0000000e+00, 3.5762778e-07, 8.7500000e-01], dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy.stats._common import (
    Array,
    ArrayLike,
    apply,
    log1mexp,
    nan_unless,
    safe,
    standardize,
)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def _log_z(x, b, loc, scale):
    """log z clipped at 0 (z < 1 is below the support), whether z >= 1, and
    whether the parameters are valid."""
    z, valid = standardize(x, loc, scale)
    inside = z >= 1
    return lnp.log(safe(inside, z, 1.0)), inside, valid & (b > 0)


def _logpdf(x, b, loc, scale):
    log_z, inside, valid = _log_z(x, b, loc, scale)
    b_ok = safe(valid, b, 1.0)
    value = lnp.log(b_ok) - (b_ok + 1) * log_z - lnp.log(safe(valid, scale, 1.0))
    return nan_unless(valid, lnp.where(inside, value, -lnp.inf))


def _pdf(x, b, loc, scale):
    z, valid = standardize(x, loc, scale)
    valid = valid & (b > 0)
    b = safe(valid, b, 1.0)
    inside = z >= 1
    power = lnp.power(safe(inside, z, 1.0), -(b + 1))
    # Where the power alone would be subnormal (flushed to 0 by XLA), the log form.
    tiny = power < 1e4 * lnp.finfo(z.dtype).tiny
    density = lnp.where(tiny, lnp.exp(_logpdf(x, b, loc, lnp.ones_like(scale))), b * power)
    return nan_unless(valid, lnp.where(inside, density / safe(valid, scale, 1.0), 0.0))


def _logsf(x, b, loc, scale):
    log_z, _, valid = _log_z(x, b, loc, scale)
    return nan_unless(valid, -b * log_z)


def _sf(x, b, loc, scale):
    z, valid = standardize(x, loc, scale)
    valid = valid & (b > 0)
    return nan_unless(valid, lnp.power(lnp.maximum(z, 1.0), -safe(valid, b, 1.0)))


def _cdf(x, b, loc, scale):
    return -lnp.expm1(_logsf(x, b, loc, scale))


def _logcdf(x, b, loc, scale):
    logsf = _logsf(x, b, loc, scale)
    positive = logsf < 0
    value = lnp.where(positive, log1mexp(safe(positive, logsf, -1.0)), -lnp.inf)
    return lnp.where(lnp.isnan(logsf), lnp.nan, value)


def _ppf(q, b, loc, scale):
    inside = (q >= 0) & (q <= 1)
    valid = (b > 0) & (scale > 0) & inside
    z = lnp.power(1 - safe(inside, q, 0.5), -1 / safe(valid, b, 1.0))
    return nan_unless(valid, loc + scale * z)


def logpdf(x: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log density log(b) - (b + 1) log z - log(scale) on z >= 1.

    >>> import numpy as np
    >>> logpdf(np.float32([0.5, 1.0, 2.0]), 2.0)
    Array([      -inf,  0.6931472, -1.3862944], dtype=float32)
    """
    return apply("pareto.logpdf", _logpdf, x, b, loc, scale)


def pdf(x: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The density b / (scale z**(b + 1)) on z >= 1.

    >>> import numpy as np
    >>> pdf(np.float32([2.0]), 2.0)
    Array([0.25], dtype=float32)
    """
    return apply("pareto.pdf", _pdf, x, b, loc, scale)


def cdf(x: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The CDF 1 - z**-b on z >= 1.

    >>> import numpy as np
    >>> cdf(np.float32([2.0]), 1.0)
    Array([0.5], dtype=float32)
    """
    return apply("pareto.cdf", _cdf, x, b, loc, scale)


def logcdf(x: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the CDF, -inf below the support.

    >>> import numpy as np
    >>> logcdf(np.float32([0.5, 2.0]), 1.0)
    Array([      -inf, -0.6931472], dtype=float32)
    """
    return apply("pareto.logcdf", _logcdf, x, b, loc, scale)


def sf(x: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The survival function z**-b (1 below the support).

    >>> import numpy as np
    >>> sf(np.float32([0.5, 10.0]), 2.0)
    Array([1.  , 0.01], dtype=float32)
    """
    return apply("pareto.sf", _sf, x, b, loc, scale)


def logsf(x: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the survival function, -b log z.

    >>> import numpy as np
    >>> logsf(np.float32([1e30]), 2.0)
    Array([-138.1551], dtype=float32)
    """
    return apply("pareto.logsf", _logsf, x, b, loc, scale)


def ppf(q: ArrayLike, b: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The quantile loc + scale (1 - q)**(-1/b).

    >>> import numpy as np
    >>> ppf(np.float32([0.0, 0.75, 1.0]), 2.0)
    Array([ 1.,  2., inf], dtype=float32)
    """
    return apply("pareto.ppf", _ppf, q, b, loc, scale)
