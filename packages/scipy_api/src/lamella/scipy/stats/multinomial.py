"""The multinomial distribution of n draws over the categories of the last axis:
jax.scipy.stats.multinomial's functions (logpmf and pmf of (x, n, p)).

The probability n! prod p_i^x_i / x_i! is evaluated as a chain of binomials,
x_1 of n with p_1 / S_1, x_2 of the n - x_1 left with p_2 / S_2, ... (S_i the sum
of p_i and the probabilities after it), each by Loader's saddle-point form, so it
keeps its relative accuracy for large n where log n! - sum log x_i! cancels. A p
that does not sum to one is used as given, as in JAX (the chain's normalization
is put back as n log S_1), and the derivative in p is JAX's x / p.

x and n are counts: integer arrays as in JAX, or whole-valued floats (which JAX
refuses); the probability is 0 where x is negative or fractional or sum(x) != n.
p outside [0, 1], or n negative or fractional, gives NaN. The result has p's
floating dtype.

>>> import numpy as np
>>> from lamella.scipy.stats import multinomial
>>> multinomial.pmf(np.array([1, 2, 3]), 6, np.float32([0.2, 0.3, 0.5]))
Array(0.135, dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy import special
from lamella.scipy.stats._common import Array, ArrayLike, compiled, float_dtypes, nan_unless, safe
from lamella.scipy.stats._saddle_point import binomial_logpmf

__all__ = ["logpmf", "pmf"]


def _logpmf(x, n, p):
    whole = lnp.all((x >= 0) & (x == lnp.floor(x)), axis=-1) & (lnp.sum(x, axis=-1) == n)
    valid = lnp.all((p >= 0) & (p <= 1), axis=-1) & (n >= 0) & (n == lnp.floor(n))
    # Counts and probability mass from category i to the last.
    left = lnp.flip(lnp.cumsum(lnp.flip(x, -1), axis=-1), -1)
    mass = lnp.flip(lnp.cumsum(lnp.flip(p, -1), axis=-1), -1)
    share = lnp.where(mass > 0, p / safe(mass > 0, mass, 1.0), 0.0)
    chain = binomial_logpmf(x, left, share)
    value = lnp.sum(chain, axis=-1) + special.xlogy(n, mass[..., 0])
    return nan_unless(valid, lnp.where(whole, value, -lnp.inf))


def _arguments(x: ArrayLike, n: ArrayLike, p: ArrayLike) -> tuple[Array, Array, Array, object]:
    x, n, p = lnp.asarray(x), lnp.asarray(n), lnp.asarray(p)
    work, dtype = float_dtypes("multinomial", p)
    if p.ndim == 0 or x.ndim == 0:
        raise ValueError(f"multinomial: x and p need a last axis of categories, got x.shape="
                         f"{x.shape} and p.shape={p.shape}.")
    if x.shape[-1] != p.shape[-1]:
        raise ValueError(f"multinomial: x has {x.shape[-1]} categories but p has "
                         f"{p.shape[-1]} (x.shape={x.shape}, p.shape={p.shape}).")
    batch = lnp.broadcast_shapes(x.shape[:-1], p.shape[:-1], n.shape)
    k = p.shape[-1]
    return (lnp.broadcast_to(x.astype(work), batch + (k,)), lnp.broadcast_to(n.astype(work), batch),
            lnp.broadcast_to(p.astype(work), batch + (k,)), dtype)


def logpmf(x: ArrayLike, n: ArrayLike, p: ArrayLike) -> Array:
    """log P(x) = log n! + sum(x_i log p_i - log x_i!) over the last axis.

    >>> import numpy as np
    >>> logpmf(np.array([[1, 2, 3], [0, 0, 6]]), 6, np.float32([0.2, 0.3, 0.5]))
    Array([-2.0024805, -4.158883 ], dtype=float32)
    """
    x, n, p, dtype = _arguments(x, n, p)
    return compiled(_logpmf)(x, n, p).astype(dtype)


def pmf(x: ArrayLike, n: ArrayLike, p: ArrayLike) -> Array:
    """P(x) = n! prod p_i^x_i / x_i! over the last axis.

    >>> import numpy as np
    >>> pmf(np.array([2, 0]), 2, np.float32([0.5, 0.5]))
    Array(0.25, dtype=float32)
    """
    x, n, p, dtype = _arguments(x, n, p)
    return lnp.exp(compiled(_logpmf)(x, n, p)).astype(dtype)
