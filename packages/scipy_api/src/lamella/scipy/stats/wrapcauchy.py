"""The wrapped Cauchy distribution on [0, 2 pi], density
(1 - c**2) / (2 pi (1 + c**2 - 2 c cos x)): jax.scipy.stats.wrapcauchy's
functions (JAX's set and signatures: logpdf and pdf of (x, c)).

The denominator is written (1 - c)**2 + 4 c sin(x/2)**2 and the numerator
(1 - c)(1 + c), so c near 1 does not cancel. Outside [0, 2 pi] the density is 0;
c outside (0, 1) gives NaN, as SciPy and JAX.

>>> import numpy as np
>>> from lamella.scipy.stats import wrapcauchy
>>> wrapcauchy.logpdf(np.float32([0.0, 1.0, 7.0]), 0.5)
Array([-0.7392647, -1.782643 ,       -inf], dtype=float32)
"""

from __future__ import annotations

import math

import lamella.numpy as lnp
from lamella.scipy.stats._common import Array, ArrayLike, apply, log1p, nan_unless, safe

__all__ = ["logpdf", "pdf"]


def _logpdf(x, c):
    valid = (c > 0) & (c < 1) & ~lnp.isnan(x)
    c = safe(valid, c, 0.5)
    inside = (x >= 0) & (x <= 2 * math.pi)
    half_sine = lnp.sin(0.5 * x)
    gap = 1 - c
    value = (log1p(-c) + log1p(c) - math.log(2 * math.pi)
             - lnp.log(gap * gap + 4 * c * half_sine * half_sine))
    return nan_unless(valid, lnp.where(inside, value, -lnp.inf))


def _pdf(x, c):
    return lnp.exp(_logpdf(x, c))


def logpdf(x: ArrayLike, c: ArrayLike) -> Array:
    """log density log(1 - c**2) - log(2 pi) - log(1 + c**2 - 2 c cos x) on [0, 2 pi].

    >>> import numpy as np
    >>> logpdf(np.float32([3.0]), 0.9)
    Array([-4.777313], dtype=float32)
    """
    return apply("wrapcauchy.logpdf", _logpdf, x, c)


def pdf(x: ArrayLike, c: ArrayLike) -> Array:
    """The wrapped Cauchy density.

    >>> import numpy as np
    >>> pdf(np.float32([0.0]), 0.5)
    Array([0.47746485], dtype=float32)
    """
    return apply("wrapcauchy.pdf", _pdf, x, c)
