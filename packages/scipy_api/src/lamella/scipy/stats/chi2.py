"""The chi-squared distribution with df degrees of freedom, the gamma
distribution with shape df / 2 and scale 2: jax.scipy.stats.chi2's functions,
on `gamma`'s kernels. At x = 0 the density is inf for df < 2, 1/2 for df = 2
(SciPy's value; JAX gives NaN) and 0 above. df <= 0 or scale <= 0 gives NaN.

>>> import numpy as np
>>> from lamella.scipy.stats import chi2
>>> chi2.logpdf(np.float32([0.0, 1.0]), 2.0)
Array([-0.6931472, -1.1931472], dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy.stats import gamma
from lamella.scipy.stats._common import Array, ArrayLike, apply

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def _logpdf(x, df, loc, scale):
    return gamma._logpdf(x, df / 2, loc, 2 * scale)


def _pdf(x, df, loc, scale):
    return lnp.exp(_logpdf(x, df, loc, scale))


def _tails(x, df, loc, scale):
    return gamma.tails(x, df / 2, loc, 2 * scale)


def logpdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log density of chi-squared(df).

    >>> import numpy as np
    >>> logpdf(np.float32([1.0, 3.0]), 3.0)
    Array([-1.4189385, -1.8696324], dtype=float32)
    """
    return apply("chi2.logpdf", _logpdf, x, df, loc, scale)


def pdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The chi-squared density.

    >>> import numpy as np
    >>> pdf(np.float32([2.0]), 2.0)
    Array([0.18393973], dtype=float32)
    """
    return apply("chi2.pdf", _pdf, x, df, loc, scale)


def cdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The CDF P(df / 2, x / 2).

    >>> import numpy as np
    >>> cdf(np.float32([3.841459]), 1.0)
    Array([0.95], dtype=float32)
    """
    return apply("chi2.cdf", _tails, x, df, loc, scale, output=0)


def logcdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the CDF.

    >>> import numpy as np
    >>> logcdf(np.float32([2.0]), 2.0)
    Array([-0.45867562], dtype=float32)
    """
    return apply("chi2.logcdf", _tails, x, df, loc, scale, output=2)


def sf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The survival function Q(df / 2, x / 2).

    >>> import numpy as np
    >>> sf(np.float32([3.841459]), 1.0)
    Array([0.05], dtype=float32)
    """
    return apply("chi2.sf", _tails, x, df, loc, scale, output=1)


def logsf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log of the survival function.

    >>> import numpy as np
    >>> logsf(np.float32([60.0]), 2.0)
    Array([-30.], dtype=float32)
    """
    return apply("chi2.logsf", _tails, x, df, loc, scale, output=3)
