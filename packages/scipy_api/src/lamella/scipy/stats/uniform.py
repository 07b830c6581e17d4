"""The continuous uniform distribution on [loc, loc + scale]:
jax.scipy.stats.uniform's functions. A scale <= 0 gives NaN, as SciPy.

>>> import numpy as np
>>> from lamella.scipy.stats import uniform
>>> uniform.cdf(np.float32([-1.0, 0.25, 2.0]))
Array([0.  , 0.25, 1.  ], dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy.stats._common import Array, ArrayLike, apply, nan_unless, safe, standardize

__all__ = ["cdf", "logpdf", "pdf", "ppf"]


def _logpdf(x, loc, scale):
    valid = (scale > 0) & ~lnp.isnan(x - loc)
    inside = (x >= loc) & (x <= loc + scale)
    return nan_unless(valid, lnp.where(inside, -lnp.log(safe(valid, scale, 1.0)), -lnp.inf))


def _pdf(x, loc, scale):
    return lnp.exp(_logpdf(x, loc, scale))


def _cdf(x, loc, scale):
    z, valid = standardize(x, loc, scale)
    return nan_unless(valid, lnp.clip(z, 0.0, 1.0))


def _ppf(q, loc, scale):
    return nan_unless((scale > 0) & (q >= 0) & (q <= 1), loc + q * scale)


def logpdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """-log(scale) on [loc, loc + scale], -inf outside.

    >>> import numpy as np
    >>> logpdf(np.float32([0.5, 3.0]), 0.0, 2.0)
    Array([-0.6931472,       -inf], dtype=float32)
    """
    return apply("uniform.logpdf", _logpdf, x, loc, scale)


def pdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """1 / scale on [loc, loc + scale], 0 outside.

    >>> import numpy as np
    >>> pdf(np.float32([0.5, 3.0]), 0.0, 2.0)
    Array([0.5, 0. ], dtype=float32)
    """
    return apply("uniform.pdf", _pdf, x, loc, scale)


def cdf(x: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """(x - loc) / scale clipped to [0, 1].

    >>> import numpy as np
    >>> cdf(np.float32([1.0]), 0.0, 4.0)
    Array([0.25], dtype=float32)
    """
    return apply("uniform.cdf", _cdf, x, loc, scale)


def ppf(q: ArrayLike, loc: ArrayLike = 0, scale: ArrayLike = 1) -> Array:
    """loc + q scale, NaN outside [0, 1].

    >>> import numpy as np
    >>> ppf(np.float32([0.25, 1.5]), 1.0, 4.0)
    Array([ 2., nan], dtype=float32)
    """
    return apply("uniform.ppf", _ppf, q, loc, scale)
