"""The beta-binomial distribution: binomial(n, p) with p drawn from beta(a, b),
P(k) = C(n, k) B(k + a, n - k + b) / B(a, b). jax.scipy.stats.betabinom's
functions (JAX's set: logpmf and pmf).

log C(n, k) is -log1p(n) - log B(n - k + 1, k + 1) and every B by
lamella.scipy.special.betaln (no cancellation of log-gammas for large
arguments). As in JAX, k is floored (k = 2.7 gives P(2); SciPy: 0); k - loc
outside [0, n] gives 0. n that is negative or not a whole number, or a, b <= 0,
gives NaN, as SciPy.

>>> import numpy as np
>>> from lamella.scipy.stats import betabinom
>>> betabinom.pmf(np.float32([0.0, 1.0, 2.0]), 2.0, 1.0, 1.0)
Array([0.3333333, 0.3333333, 0.3333333], dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy import special
from lamella.scipy.stats._common import Array, ArrayLike, apply, log1p, nan_unless, safe
from lamella.scipy.stats.binom import valid_count

__all__ = ["logpmf", "pmf"]


def _logpmf(k, n, a, b, loc):
    valid = valid_count(n) & (a > 0) & (b > 0)
    n, a, b = safe(valid, n, 1.0), safe(valid, a, 1.0), safe(valid, b, 1.0)
    y = lnp.floor(k) - loc
    undefined = lnp.isnan(y)  # NaN there, as SciPy and JAX
    inside = (y >= 0) & (y <= n)
    y = safe(inside, y, 0.0)
    value = (special.betaln(y + a, n - y + b) - special.betaln(a, b)
             - log1p(n) - special.betaln(n - y + 1, y + 1))
    return nan_unless(valid & ~undefined, lnp.where(inside, value, -lnp.inf))


def _pmf(k, n, a, b, loc):
    return lnp.exp(_logpmf(k, n, a, b, loc))


def logpmf(k: ArrayLike, n: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0) -> Array:
    """log P(k) = log C(n, y) + log B(y + a, n - y + b) - log B(a, b), y = floor(k) - loc.

    >>> import numpy as np
    >>> logpmf(np.float32([1.0]), 5.0, 2.0, 3.0)
    Array([-1.4350843], dtype=float32)
    """
    return apply("betabinom.logpmf", _logpmf, k, n, a, b, loc)


def pmf(k: ArrayLike, n: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0) -> Array:
    """P(k) = C(n, y) B(y + a, n - y + b) / B(a, b), y = floor(k) - loc.

    >>> import numpy as np
    >>> pmf(np.float32([5.0]), 5.0, 2.0, 3.0)
    Array([0.04761906], dtype=float32)
    """
    return apply("betabinom.pmf", _pmf, k, n, a, b, loc)
