"""The negative binomial distribution, the number of failures before the n-th
success: P(k) = Gamma(k + n) / (Gamma(n) k!) p^n (1 - p)^k.
jax.scipy.stats.nbinom's functions (JAX's set: logpmf and pmf).

It is computed as n / (n + k) times the binomial probability of n successes in
n + k trials (R's dnbinom), with Loader's saddle-point form, so large n or k keep
their relative accuracy. As in JAX a non-integer k - loc >= 0 gets the continuous
interpolation (SciPy: -inf). n <= 0 or p outside (0, 1] gives NaN, as SciPy.

>>> import numpy as np
>>> from lamella.scipy.stats import nbinom
>>> nbinom.pmf(np.float32([0.0, 1.0, 2.0]), 2.0, 0.5)
Array([0.25      , 0.25000003, 0.1875    ], dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy.stats._common import Array, ArrayLike, apply, log1p, nan_unless, safe
from lamella.scipy.stats._saddle_point import binomial_logpmf

__all__ = ["logpmf", "pmf"]


def _logpmf(k, n, p, loc):
    valid = (n > 0) & (p > 0) & (p <= 1)
    n, p = safe(valid, n, 1.0), safe(valid, p, 0.5)
    x = k - loc
    undefined = lnp.isnan(x) | (x == lnp.inf)  # NaN there, as SciPy and JAX
    inside = x >= 0
    x = safe(inside & ~undefined, x, 0.0)
    # log(n / (n + x)) as -log1p(x / n).
    value = binomial_logpmf(n, n + x, p) - log1p(x / n)
    return nan_unless(valid & ~undefined, lnp.where(inside, value, -lnp.inf))


def _pmf(k, n, p, loc):
    return lnp.exp(_logpmf(k, n, p, loc))


def logpmf(k: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    """log P(k) = log Gamma(k + n) - log Gamma(n) - log k! + n log p + k log(1 - p).

    >>> import numpy as np
    >>> logpmf(np.float32([3.0]), 2.5, 0.3)
    Array([-2.198585], dtype=float32)
    """
    return apply("nbinom.logpmf", _logpmf, k, n, p, loc)


def pmf(k: ArrayLike, n: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    """P(k) = Gamma(k + n) / (Gamma(n) k!) p^n (1 - p)^k.

    >>> import numpy as np
    >>> pmf(np.float32([0.0]), 3.0, 0.5)
    Array([0.125], dtype=float32)
    """
    return apply("nbinom.pmf", _pmf, k, n, p, loc)
