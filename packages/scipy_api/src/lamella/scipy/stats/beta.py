"""The beta distribution, density z**(a - 1) (1 - z)**(b - 1) / (B(a, b) scale) on
z = (x - loc) / scale in [0, 1]: jax.scipy.stats.beta's functions (JAX's set: no
ppf or isf).

log(1 - z) is log1p(-z) and B(a, b) comes from lamella.scipy.special.betaln (one
Stirling difference for large parameters, no cancellation of log-gammas). cdf is
the regularized incomplete beta I_z(a, b) and sf is I_{1-z}(b, a) (1 - cdf where
z < 1/2 and cdf < 1/2, since 1 - z rounds there and the density near z = 0 can
be huge), so a small sf keeps its relative accuracy; both are differentiable in
a and b. logcdf is log I_z(a, b), or log1p(-sf) where sf < 1/2, and logsf the
other way round (a CDF near 1 keeps its small log). At the ends the density
follows SciPy: inf where the exponent is negative, 1 / B(a, b) where it is 0.
a, b <= 0 or scale <= 0 gives NaN.

>>> import numpy as np
>>> from lamella.scipy.stats import beta
>>> beta.logpdf(np.float32([0.0, 0.5, 1.0]), 2.0, 3.0)
Array([      -inf, 0.40546513,       -inf], dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy import special
from lamella.scipy.stats._common import (
    Array,
    ArrayLike,
    apply,
    log_of_either,
    nan_unless,
    safe,
    standardize,
)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]


def _standardized(x, a, b, loc, scale):
    z, valid = standardize(x, loc, scale)
    valid = valid & (a > 0) & (b > 0)
    return z, safe(valid, a, 1.0), safe(valid, b, 1.0), valid


def _logpdf(x, a, b, loc, scale):
    z, a, b, valid = _standardized(x, a, b, loc, scale)
    inside = (z >= 0) & (z <= 1)
    z_in = safe(inside, z, 0.5)
    value = (special.xlogy(a - 1, z_in) + special.xlog1py(b - 1, -z_in) - special.betaln(a, b)
             - lnp.log(safe(valid, scale, 1.0)))
    return nan_unless(valid, lnp.where(inside, value, -lnp.inf))


def _pdf(x, a, b, loc, scale):
    return lnp.exp(_logpdf(x, a, b, loc, scale))


def _tails(x, a, b, loc, scale):
    """(cdf, sf, logcdf, logsf) from one I_z(a, b) and one I_{1-z}(b, a)."""
    z, a, b, valid = _standardized(x, a, b, loc, scale)
    z = lnp.clip(z, 0.0, 1.0)
    p = special.betainc(a, b, z)
    # Below 1/2, 1 - z rounds, and I_{1-z}(b, a) moves by the density times that
    # rounding: where p < 1/2, 1 - p is the better sf.
    q = lnp.where((z < 0.5) & (p < 0.5), 1 - p, special.betainc(b, a, 1 - z))
    p, q = nan_unless(valid, p), nan_unless(valid, q)
    return p, q, log_of_either(p, q), log_of_either(q, p)


def logpdf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
           scale: ArrayLike = 1) -> Array:
    """log density (a - 1) log z + (b - 1) log(1 - z) - log B(a, b) - log(scale).

    >>> import numpy as np
    >>> logpdf(np.float32([0.0, 0.25]), 0.5, 0.5)
    Array([        inf, -0.30774164], dtype=float32)
    """
    return apply("beta.logpdf", _logpdf, x, a, b, loc, scale)


def pdf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
        scale: ArrayLike = 1) -> Array:
    """The beta density.

    >>> import numpy as np
    >>> pdf(np.float32([0.5]), 2.0, 2.0)
    Array([1.5], dtype=float32)
    """
    return apply("beta.pdf", _pdf, x, a, b, loc, scale)


def cdf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
        scale: ArrayLike = 1) -> Array:
    """The CDF I_z(a, b), 0 below the support and 1 above.

    >>> import numpy as np
    >>> cdf(np.float32([-1.0, 0.5, 2.0]), 2.0, 2.0)
    Array([0.        , 0.50000006, 1.        ], dtype=float32)
    """
    return apply("beta.cdf", _tails, x, a, b, loc, scale, output=0)


def logcdf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
           scale: ArrayLike = 1) -> Array:
    """log I_z(a, b).

    >>> import numpy as np
    >>> logcdf(np.float32([1e-10]), 2.0, 3.0)
    Array([-44.25994], dtype=float32)
    """
    return apply("beta.logcdf", _tails, x, a, b, loc, scale, output=2)


def sf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
       scale: ArrayLike = 1) -> Array:
    """The survival function I_{1-z}(b, a).

    >>> import numpy as np
    >>> sf(np.float32([0.5]), 2.0, 2.0)
    Array([0.50000006], dtype=float32)
    """
    return apply("beta.sf", _tails, x, a, b, loc, scale, output=1)


def logsf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
          scale: ArrayLike = 1) -> Array:
    """log of the survival function.

    >>> import numpy as np
    >>> logsf(np.float32([0.9999]), 2.0, 3.0)
    Array([-26.244303], dtype=float32)
    """
    return apply("beta.logsf", _tails, x, a, b, loc, scale, output=3)
