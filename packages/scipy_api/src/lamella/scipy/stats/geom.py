"""The geometric distribution, P(k) = (1 - p)^(k - 1) p for k = 1, 2, ...:
jax.scipy.stats.geom's functions (JAX's set: logpmf and pmf).

As in JAX the formula is used for every k - loc > 0, so non-integer k give the
continuous interpolation (SciPy: -inf); k - loc <= 0 gives -inf. p outside
(0, 1] gives NaN, as SciPy.

>>> import numpy as np
>>> from lamella.scipy.stats import geom
>>> geom.logpmf(np.float32([0.0, 1.0, 3.0]), 0.5)
Array([      -inf, -0.6931472, -2.0794415], dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy import special
from lamella.scipy.stats._common import Array, ArrayLike, apply, nan_unless, safe

__all__ = ["logpmf", "pmf"]


def _logpmf(k, p, loc):
    valid = (p > 0) & (p <= 1)
    p = safe(valid, p, 0.5)
    x = k - loc
    inside = x > 0
    x_in = safe(inside, x, 1.0)
    value = special.xlog1py(x_in - 1, -p) + lnp.log(p)
    return nan_unless(valid & ~lnp.isnan(x), lnp.where(inside, value, -lnp.inf))


def _pmf(k, p, loc):
    return lnp.exp(_logpmf(k, p, loc))


def logpmf(k: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    """log P(k) = (k - loc - 1) log(1 - p) + log p for k - loc > 0.

    >>> import numpy as np
    >>> logpmf(np.float32([1.0, 2.0]), 1.0)
    Array([  0., -inf], dtype=float32)
    """
    return apply("geom.logpmf", _logpmf, k, p, loc)


def pmf(k: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    """P(k) = (1 - p)^(k - loc - 1) p.

    >>> import numpy as np
    >>> pmf(np.float32([1.0, 2.0]), 0.25)
    Array([0.25  , 0.1875], dtype=float32)
    """
    return apply("geom.pmf", _pmf, k, p, loc)
