"""The binomial distribution, P(k) = C(n, k) p^k (1 - p)^(n - k):
jax.scipy.stats.binom's functions (JAX's set: logpmf and pmf).

The log probability is Loader's saddle-point form (see `_saddle_point`), which
keeps its relative accuracy for any n: at n = 1e6 in float32 the textbook
log-gamma form (JAX's) is off by ~1e-2, this by a few ulps. As in JAX, a
non-integer k in [loc, loc + n] gets the continuous interpolation (SciPy: -inf);
outside it the probability is 0. n that is negative or not a whole number, or p
outside [0, 1], gives NaN, as SciPy.

>>> import numpy as np
>>> from lamella.scipy.stats import binom
>>> binom.pmf(np.float32([0.0, 1.0, 2.0, 3.0]), 2.0, 0.5)
Array([0.25, 0.5 , 0.25, 0.  ], dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy.stats._common import Array, ArrayLike, apply, nan_unless, safe
from lamella.scipy.stats._saddle_point import binomial_logpmf

__all__ = ["logpmf", "pmf"]


def valid_count(n: Array) -> Array:
    """Whether n is a possible number of trials: a whole number >= 0."""
    return (n >= 0) & (n == lnp.floor(n))


def _logpmf(k, n, p, loc):
    valid = valid_count(n) & (p >= 0) & (p <= 1)
    n, p = safe(valid, n, 1.0), safe(valid, p, 0.5)
    x = k - loc
    inside = (x >= 0) & (x <= n)
    value = binomial_logpmf(safe(inside, x, 0.0), n, p)
    return nan_unless(valid, lnp.where(inside, value, -lnp.inf))


def _pmf(k, n, p, loc):
    return lnp.exp(_logpmf(k, n, p, loc))


def logpmf(k: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    """log P(k) = log C(n, k - loc) + (k - loc) log p + (n - k + loc) log(1 - p).

    >>> import numpy as np
    >>> logpmf(np.float32([500.0]), 1000.0, 0.5)
    Array([-3.6799192], dtype=float32)
    """
    return apply("binom.logpmf", _logpmf, k, n, p, loc)


def pmf(k: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    """P(k) = C(n, k - loc) p^(k - loc) (1 - p)^(n - k + loc).

    >>> import numpy as np
    >>> pmf(np.float32([1.0]), 3.0, 0.5)
    Array([0.37500003], dtype=float32)
    """
    return apply("binom.pmf", _pmf, k, n, p, loc)
