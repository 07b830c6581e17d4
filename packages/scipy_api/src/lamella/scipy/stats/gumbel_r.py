"""The right-skewed Gumbel (maximum extreme value) distribution, CDF
exp(-exp(-z)) with z = (x - loc) / scale: jax.scipy.stats.gumbel_r's functions.

logcdf is -exp(-z) exactly, sf is -expm1(-exp(-z)) (exact where the CDF is near
1) and logsf is log(1 - exp(-exp(-z))) by `log1mexp`, or -z plus a series once
exp(-z) is tiny (logsf(100) = -100 in float32, not -inf); ppf(p) is
loc - scale log(-log p). A scale <= 0 gives NaN, as SciPy. `gumbel_l` is this
distribution mirrored and uses the same kernels.

>>> import numpy as np
>>> from lamella.scipy.stats import gumbel_r
>>> gumbel_r.logsf(np.float32([-3.0, 0.0, 30.0]))
Array([-1.8921786e-09, -4.5867515e-01, -3.0000000e+01], dtype=float32)
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


def standard_logpdf(z: Array) -> Array:
    """log density -z - exp(-z) of the standard right Gumbel."""
    return -z - lnp.exp(-z)


def standard_logcdf(z: Array) -> Array:
    return -lnp.exp(-z)


def standard_sf(z: Array) -> Array:
    return -lnp.expm1(-lnp.exp(-z))


def standard_logsf(z: Array) -> Array:
    """log(1 - exp(-u)), u = exp(-z); past z = 10 as -z + log1p(-u/2 + u**2/6 - u**3/24),
    since u underflows (and 1 - exp(-u) with it) long before the result does."""
    u = lnp.exp(-z)
    far = z > 10
    u_far = safe(far, u, 0.0)
    series = -z + log1p(u_far * (-0.5 + u_far * (1 / 6 - u_far / 24)))
    return lnp.where(far, series, log1mexp(-safe(~far, u, 1.0)))


def standard_ppf(p: Array) -> Array:
    """-log(-log p): -inf at 0, inf at 1, NaN outside [0, 1]. Above 1/2, log p is
    log1p(p - 1) with p - 1 exact (log of a number near 1 loses digits in XLA's
    float32 log)."""
    upper = p > 0.5
    log_p = lnp.where(upper, log1p(safe(upper, p, 1.0) - 1), lnp.log(safe(~upper, p, 0.25)))
    return nan_unless(p <= 1, -lnp.log(-log_p))


def _scaled(kernel):
    def density(x, loc, scale):
        z, valid = standardize(x, loc, scale)
        return nan_unless(valid, kernel(z) - lnp.log(safe(valid, scale, 1.0)))
    return density


def _of_z(kernel):
    def function(x, loc, scale):
        z, valid = standardize(x, loc, scale)
        return nan_unless(valid, kernel(z))
    return function


_logpdf = _scaled(standard_logpdf)
_logcdf = _of_z(standard_logcdf)
_sf = _of_z(standard_sf)
_logsf = _of_z(standard_logsf)


def _pdf(x, loc, scale):
    return lnp.exp(_logpdf(x, loc, scale))


def _cdf(x, loc, scale):
    return lnp.exp(_logcdf(x, loc, scale))


def _ppf(p, loc, scale):
    return nan_unless(scale > 0, loc + scale * standard_ppf(p))


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log density -z - exp(-z) - log(scale).

    >>> import numpy as np
    >>> logpdf(np.float32([0.0, 1.0]))
    Array([-1.       , -1.3678794], dtype=float32)
    """
    return apply("gumbel_r.logpdf", _logpdf, x, loc, scale)


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The density exp(-z - exp(-z)) / scale.

    >>> import numpy as np
    >>> pdf(np.float32([0.0]))
    Array([0.36787945], dtype=float32)
    """
    return apply("gumbel_r.pdf", _pdf, x, loc, scale)


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The CDF exp(-exp(-z)).

    >>> import numpy as np
    >>> cdf(np.float32([0.0, 2.0]))
    Array([0.36787945, 0.87342304], dtype=float32)
    """
    return apply("gumbel_r.cdf", _cdf, x, loc, scale)


def logcdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the CDF, -exp(-z).

    >>> import numpy as np
    >>> logcdf(np.float32([-5.0, 20.0]))
    Array([-1.4841316e+02, -2.0611537e-09], dtype=float32)
    """
    return apply("gumbel_r.logcdf", _logcdf, x, loc, scale)


def sf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The survival function 1 - exp(-exp(-z)), as -expm1.

    >>> import numpy as np
    >>> sf(np.float32([20.0]))
    Array([2.0611537e-09], dtype=float32)
    """
    return apply("gumbel_r.sf", _sf, x, loc, scale)


def logsf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the survival function.

    >>> import numpy as np
    >>> logsf(np.float32([100.0]))
    Array([-100.], dtype=float32)
    """
    return apply("gumbel_r.logsf", _logsf, x, loc, scale)


def ppf(p: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The quantile loc - scale log(-log p).

    >>> import numpy as np
    >>> ppf(np.float32([0.0, 0.5, 1.0]))
    Array([      -inf, 0.36651292,        inf], dtype=float32)
    """
    return apply("gumbel_r.ppf", _ppf, p, loc, scale)
