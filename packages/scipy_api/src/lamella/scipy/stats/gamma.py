"""The gamma distribution with shape a, density z**(a - 1) exp(-z) / (Gamma(a) scale)
on z = (x - loc) / scale >= 0: jax.scipy.stats.gamma's functions (JAX's set: no
ppf or isf).

cdf and sf are the regularized incomplete gamma functions P(a, z) and Q(a, z) of
lamella.scipy.special (differentiable in a and x); logcdf is log P, or log1p(-Q)
where Q < 1/2 (so a CDF near 1 keeps its small log; SciPy's log(P) does not), and
logsf the other way round. Like SciPy's they reach -inf where P or Q underflows
(1e-38 in float32). At z = 0 the
density is inf for a < 1, 1 / scale for a = 1 and 0 above, as SciPy. a <= 0 or
scale <= 0 gives NaN. `chi2` is this distribution with a = df / 2, scale 2.

>>> import numpy as np
>>> from lamella.scipy.stats import gamma
>>> gamma.logpdf(np.float32([0.0, 1.0, 2.0]), 2.0)
Array([      -inf, -1.       , -1.3068528], dtype=float32)
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


def standard_logpdf(z: Array, a: Array) -> Array:
    """log density of the standard gamma(a) at z, for valid a (-inf below 0)."""
    inside = z >= 0
    z_in = safe(inside, z, 1.0)
    value = special.xlogy(a - 1, z_in) - z_in - special.gammaln(a)
    return lnp.where(inside, value, -lnp.inf)


def standard_cdf(z: Array, a: Array) -> Array:
    return special.gammainc(a, lnp.maximum(z, 0.0))


def standard_sf(z: Array, a: Array) -> Array:
    return special.gammaincc(a, lnp.maximum(z, 0.0))


def _standardized(x, a, loc, scale):
    z, valid = standardize(x, loc, scale)
    valid = valid & (a > 0)
    return z, safe(valid, a, 1.0), valid


def _logpdf(x, a, loc, scale):
    z, a_ok, valid = _standardized(x, a, loc, scale)
    return nan_unless(valid, standard_logpdf(z, a_ok) - lnp.log(safe(valid, scale, 1.0)))


def _pdf(x, a, loc, scale):
    return lnp.exp(_logpdf(x, a, loc, scale))


def tails(x, a, loc, scale):
    """(cdf, sf, logcdf, logsf): P and Q are computed once for all four."""
    z, a_ok, valid = _standardized(x, a, loc, scale)
    p = nan_unless(valid, standard_cdf(z, a_ok))
    q = nan_unless(valid, standard_sf(z, a_ok))
    return p, q, log_of_either(p, q), log_of_either(q, p)


def logpdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log density (a - 1) log z - z - log Gamma(a) - log(scale).

    >>> import numpy as np
    >>> logpdf(np.float32([0.0, 1.0]), 0.5)
    Array([       inf, -1.5723649], dtype=float32)
    """
    return apply("gamma.logpdf", _logpdf, x, a, loc, scale)


def pdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The density z**(a - 1) exp(-z) / (Gamma(a) scale).

    >>> import numpy as np
    >>> pdf(np.float32([1.0]), 2.0, 0.0, 2.0)
    Array([0.15163267], dtype=float32)
    """
    return apply("gamma.pdf", _pdf, x, a, loc, scale)


def cdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The CDF P(a, z), the regularized lower incomplete gamma function.

    >>> import numpy as np
    >>> cdf(np.float32([-1.0, 1.0]), 1.0)
    Array([0.        , 0.63212025], dtype=float32)
    """
    return apply("gamma.cdf", tails, x, a, loc, scale, output=0)


def logcdf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log P(a, z).

    >>> import numpy as np
    >>> logcdf(np.float32([1.0]), 1.0)
    Array([-0.45867562], dtype=float32)
    """
    return apply("gamma.logcdf", tails, x, a, loc, scale, output=2)


def sf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The survival function Q(a, z) = 1 - P(a, z), computed directly.

    >>> import numpy as np
    >>> sf(np.float32([30.0]), 1.0)
    Array([9.3576236e-14], dtype=float32)
    """
    return apply("gamma.sf", tails, x, a, loc, scale, output=1)


def logsf(x: ArrayLike, a: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log Q(a, z).

    >>> import numpy as np
    >>> logsf(np.float32([30.0]), 1.0)
    Array([-30.], dtype=float32)
    """
    return apply("gamma.logsf", tails, x, a, loc, scale, output=3)
