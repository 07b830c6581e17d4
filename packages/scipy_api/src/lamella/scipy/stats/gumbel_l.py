"""The left-skewed Gumbel (minimum extreme value) distribution, the mirror image
of `gumbel_r`: CDF 1 - exp(-exp(z)) with z = (x - loc) / scale.
jax.scipy.stats.gumbel_l's functions, each gumbel_r's kernel at -z (so the
accuracy notes there hold with the tails swapped). A scale <= 0 gives NaN.

>>> import numpy as np
>>> from lamella.scipy.stats import gumbel_l
>>> gumbel_l.logcdf(np.float32([-30.0, 0.0, 3.0]))
Array([-3.0000000e+01, -4.5867515e-01, -1.8921786e-09], dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy.stats import gumbel_r
from lamella.scipy.stats._common import (
    Array,
    ArrayLike,
    apply,
    log1p,
    nan_unless,
    safe,
    standardize,
)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]


def _mirrored(kernel, density=False):
    def function(x, loc, scale):
        z, valid = standardize(x, loc, scale)
        log_scale = lnp.log(safe(valid, scale, 1.0)) if density else 0.0
        return nan_unless(valid, kernel(-z) - log_scale)
    return function


_logpdf = _mirrored(gumbel_r.standard_logpdf, density=True)
_cdf = _mirrored(gumbel_r.standard_sf)
_logcdf = _mirrored(gumbel_r.standard_logsf)
_logsf = _mirrored(gumbel_r.standard_logcdf)


def _pdf(x, loc, scale):
    return lnp.exp(_logpdf(x, loc, scale))


def _sf(x, loc, scale):
    return lnp.exp(_logsf(x, loc, scale))


def _ppf(p, loc, scale):
    # The mirror of gumbel_r's quantile at 1 - p: log(-log1p(-p)) keeps small p.
    inside = (p >= 0) & (p <= 1)
    value = lnp.log(-log1p(-safe(inside, p, 0.5)))
    return nan_unless((scale > 0) & inside, loc + scale * value)


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log density z - exp(z) - log(scale).

    >>> import numpy as np
    >>> logpdf(np.float32([0.0, -1.0]))
    Array([-1.       , -1.3678794], dtype=float32)
    """
    return apply("gumbel_l.logpdf", _logpdf, x, loc, scale)


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The density exp(z - exp(z)) / scale.

    >>> import numpy as np
    >>> pdf(np.float32([0.0]))
    Array([0.36787945], dtype=float32)
    """
    return apply("gumbel_l.pdf", _pdf, x, loc, scale)


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The CDF 1 - exp(-exp(z)).

    >>> import numpy as np
    >>> cdf(np.float32([-20.0, 0.0]))
    Array([2.0611537e-09, 6.3212055e-01], dtype=float32)
    """
    return apply("gumbel_l.cdf", _cdf, x, loc, scale)


def logcdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the CDF.

    >>> import numpy as np
    >>> logcdf(np.float32([-100.0]))
    Array([-100.], dtype=float32)
    """
    return apply("gumbel_l.logcdf", _logcdf, x, loc, scale)


def sf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The survival function exp(-exp(z)).

    >>> import numpy as np
    >>> sf(np.float32([0.0, 2.0]))
    Array([0.36787945, 0.00061798], dtype=float32)
    """
    return apply("gumbel_l.sf", _sf, x, loc, scale)


def logsf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the survival function, -exp(z).

    >>> import numpy as np
    >>> logsf(np.float32([-20.0, 5.0]))
    Array([-2.0611537e-09, -1.4841316e+02], dtype=float32)
    """
    return apply("gumbel_l.logsf", _logsf, x, loc, scale)


def ppf(p: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The quantile loc + scale log(-log(1 - p)).

    >>> import numpy as np
    >>> ppf(np.float32([0.0, 1e-10, 1.0]))
    Array([     -inf, -23.02585,       inf], dtype=float32)
    """
    return apply("gumbel_l.ppf", _ppf, p, loc, scale)
