"""The Dirichlet distribution on the probability simplex, density
prod x_i^(alpha_i - 1) / B(alpha): jax.scipy.stats.dirichlet's functions.

As in SciPy and JAX the components run along x's FIRST axis (x of shape (k,) or
(k, ...) for a one-dimensional alpha of length k); x may also leave out the last
component (k - 1 rows), which is then 1 minus the others. Off the simplex
(a negative component, or components not summing to 1 within 1e-6, JAX's
tolerance) the density is 0. A zero component is allowed as in SciPy (density
0 where alpha_i > 1, finite where alpha_i = 1; JAX gives 0 for every zero
component). alpha <= 0 gives NaN (SciPy raises).

>>> import numpy as np
>>> from lamella.scipy.stats import dirichlet
>>> dirichlet.logpdf(np.float32([0.2, 0.3, 0.5]), np.float32([1.0, 2.0, 3.0]))
Array(1.5040774, dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy import special
from lamella.scipy.stats._common import Array, ArrayLike, compiled, float_dtypes, nan_unless

__all__ = ["logpdf", "pdf"]


def _logpdf(x, alpha):
    k = alpha.shape[0]
    if x.shape[0] == k - 1:
        x = lnp.concatenate([x, 1 - lnp.sum(x, axis=0, keepdims=True)], axis=0)
    alpha = alpha.reshape((k,) + (1,) * (x.ndim - 1))
    on_simplex = lnp.all(x >= 0, axis=0) & (lnp.abs(lnp.sum(x, axis=0) - 1) < 1e-6)
    normalizer = lnp.sum(special.gammaln(alpha), axis=0) - special.gammaln(lnp.sum(alpha, axis=0))
    value = lnp.sum(special.xlogy(alpha - 1, lnp.maximum(x, 0.0)), axis=0) - normalizer
    valid = lnp.all(alpha > 0, axis=0)
    return nan_unless(valid, lnp.where(on_simplex, value, -lnp.inf))


def _arguments(x: ArrayLike, alpha: ArrayLike) -> tuple[Array, Array, object]:
    x, alpha = lnp.asarray(x), lnp.asarray(alpha)
    work, dtype = float_dtypes("dirichlet", x, alpha)
    if alpha.ndim != 1:
        raise ValueError(f"dirichlet: alpha must be one-dimensional, got alpha.shape="
                         f"{alpha.shape}.")
    if x.ndim == 0 or x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
        raise ValueError(f"dirichlet: x's first axis holds the components and must have "
                         f"{alpha.shape[0]} (or {alpha.shape[0] - 1}) entries like alpha, got "
                         f"x.shape={x.shape}.")
    return x.astype(work), alpha.astype(work), dtype


def logpdf(x: ArrayLike, alpha: ArrayLike) -> Array:
    """log density sum (alpha_i - 1) log x_i - log B(alpha), over x's first axis.

    >>> import numpy as np
    >>> logpdf(np.float32([[0.5, 0.1], [0.5, 0.9]]), np.float32([2.0, 2.0]))
    Array([ 0.40546513, -0.61618614], dtype=float32)
    """
    x, alpha, dtype = _arguments(x, alpha)
    return compiled(_logpdf)(x, alpha).astype(dtype)


def pdf(x: ArrayLike, alpha: ArrayLike) -> Array:
    """The Dirichlet density.

    >>> import numpy as np
    >>> pdf(np.float32([0.25]), np.float32([1.0, 1.0]))
    Array(1., dtype=float32)
    """
    x, alpha, dtype = _arguments(x, alpha)
    return lnp.exp(compiled(_logpdf)(x, alpha)).astype(dtype)
