"""Student's t distribution with df degrees of freedom: jax.scipy.stats.t's
functions (JAX's set: logpdf and pdf).

The normalizing constant log Gamma((df + 1) / 2) - log Gamma(df / 2) - log(pi) / 2
is -log B(df / 2, 1/2) by lamella.scipy.special.betaln, which has no
cancellation for large df (the difference of two log-gammas loses digits from df
~ 1e4 in float32). log(1 + z**2 / df) does not overflow for huge z (SciPy's
logpdf(1e200, 3) is -inf; here it is -1842.3), and df = inf is the normal
distribution, as in SciPy. df <= 0 or scale <= 0 gives NaN.

>>> import numpy as np
>>> from lamella.scipy.stats import t
>>> t.logpdf(np.float32([0.0, 2.0]), 3.0)
Array([-1.0008888, -2.6954844], dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy import special
from lamella.scipy.stats._common import Array, ArrayLike, apply, nan_unless, safe, standardize
from lamella.scipy.stats.cauchy import log1p_square
from lamella.scipy.stats.norm import log_density

__all__ = ["logpdf", "pdf"]


def _logpdf(x, df, loc, scale):
    z, valid = standardize(x, loc, scale)
    valid = valid & (df > 0)
    finite = lnp.isfinite(df)
    nu = safe(valid & finite, df, 1.0)
    value = (-special.betaln(0.5 * nu, 0.5) - 0.5 * lnp.log(nu)
             - (0.5 * nu + 0.5) * log1p_square(z / lnp.sqrt(nu)))
    value = lnp.where(finite, value, log_density(z))
    return nan_unless(valid, value - lnp.log(safe(valid, scale, 1.0)))


def _pdf(x, df, loc, scale):
    return lnp.exp(_logpdf(x, df, loc, scale))


def logpdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """log density of Student's t.

    >>> import numpy as np
    >>> logpdf(np.float32([1e30, 1.0]), np.float32([3.0, np.inf]))
    Array([-275.11386  ,   -1.4189385], dtype=float32)
    """
    return apply("t.logpdf", _logpdf, x, df, loc, scale)


def pdf(x: ArrayLike, df: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """The density Gamma((df+1)/2) / (Gamma(df/2) sqrt(pi df) scale) (1 + z**2/df)**(-(df+1)/2).

    >>> import numpy as np
    >>> pdf(np.float32([0.0]), 1.0)
    Array([0.3183099], dtype=float32)
    """
    return apply("t.pdf", _pdf, x, df, loc, scale)
