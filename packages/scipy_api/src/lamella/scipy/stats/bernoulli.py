"""The Bernoulli distribution, P(1) = p, P(0) = 1 - p: jax.scipy.stats.bernoulli's
functions (JAX's set and signatures: `loc` only in logpmf/pmf).

logpmf is k log p + (1 - k) log(1 - p) on 0 <= k - loc <= 1, as in JAX, so a
fractional k gives the cross-entropy of a soft label (SciPy: -inf) and the
gradient in p is the familiar (k - p) / (p (1 - p)). p outside [0, 1] gives NaN,
as SciPy (JAX returns numbers for p > 1). ppf(0) is -1, SciPy's convention
(JAX: 0).

>>> import numpy as np
>>> from lamella.scipy.stats import bernoulli
>>> bernoulli.logpmf(np.float32([0.0, 1.0, 2.0]), 0.25)
Array([-0.28768206, -1.3862944 ,        -inf], dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy import special
from lamella.scipy.stats._common import Array, ArrayLike, apply, nan_unless, safe

__all__ = ["cdf", "logpmf", "pmf", "ppf"]


def _valid(p: Array) -> Array:
    return (p >= 0) & (p <= 1)


def _logpmf(k, p, loc):
    valid = _valid(p)
    p = safe(valid, p, 0.5)
    x = k - loc
    undefined = lnp.isnan(x)  # NaN there, as SciPy and JAX
    inside = (x >= 0) & (x <= 1)
    x_in = safe(inside, x, 0.0)
    value = special.xlogy(x_in, p) + special.xlog1py(1 - x_in, -p)
    return nan_unless(valid & ~undefined, lnp.where(inside, value, -lnp.inf))


def _pmf(k, p, loc):
    return lnp.exp(_logpmf(k, p, loc))


def _cdf(k, p):
    value = lnp.where(k < 0, 0.0, lnp.where(k < 1, 1 - p, 1.0))
    return nan_unless(_valid(p) & ~lnp.isnan(k), value)


def _ppf(q, p):
    value = lnp.where(q == 0, -1.0, lnp.where(q <= 1 - p, 0.0, 1.0))
    return nan_unless(_valid(p) & (q >= 0) & (q <= 1), value)


def logpmf(k: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    """log P(k): log(1 - p) at k = loc, log p at loc + 1, -inf outside [loc, loc + 1].

    >>> import numpy as np
    >>> logpmf(np.float32([0.7]), 0.5)
    Array([-0.6931472], dtype=float32)
    """
    return apply("bernoulli.logpmf", _logpmf, k, p, loc)


def pmf(k: ArrayLike, p: ArrayLike, loc: ArrayLike = 0) -> Array:
    """P(k) = p^(k - loc) (1 - p)^(1 - k + loc) on [loc, loc + 1].

    >>> import numpy as np
    >>> pmf(np.float32([0.0, 1.0]), 0.25)
    Array([0.75, 0.25], dtype=float32)
    """
    return apply("bernoulli.pmf", _pmf, k, p, loc)


def cdf(k: ArrayLike, p: ArrayLike) -> Array:
    """P(K <= k): 0 below 0, 1 - p on [0, 1), 1 from 1.

    >>> import numpy as np
    >>> cdf(np.float32([-1.0, 0.5, 1.0]), 0.25)
    Array([0.  , 0.75, 1.  ], dtype=float32)
    """
    return apply("bernoulli.cdf", _cdf, k, p)


def ppf(q: ArrayLike, p: ArrayLike) -> Array:
    """The smallest k with cdf(k) >= q: -1 at q = 0 (SciPy), 0 up to 1 - p, then 1.

    >>> import numpy as np
    >>> ppf(np.float32([0.0, 0.5, 0.8, 1.5]), 0.25)
    Array([-1.,  0.,  1., nan], dtype=float32, weak_type=True)
    """
    return apply("bernoulli.ppf", _ppf, q, p)
