"""The multivariate normal distribution N(mean, cov): jax.scipy.stats.
multivariate_normal's functions, with JAX's shapes:

- a scalar mean: one-dimensional normals with variance `cov`, elementwise;
- mean (..., n) with a scalar cov: the isotropic cov * I; with cov of shape (n,)
  (SciPy's diagonal covariance; JAX raises): diag(cov);
- mean (..., n) with cov (..., n, n): the general case, batch axes broadcast
  against x's and mean's.

The general case solves with the Cholesky factor L (one triangular solve for
all points when cov has no batch axes) and log det cov = 2 sum log diag L. A
covariance that is not positive definite gives NaN (SciPy raises; JAX gives
NaN too). `allow_singular=True` (JAX raises NotImplementedError) follows SciPy:
an eigendecomposition, eigenvalues below 1e3 eps max|eigenvalue| (float32;
1e6 eps in float64) dropped, the pseudo-determinant and pseudo-inverse, and -inf
off the support (a residual in the null space beyond 1e3 times that cutoff);
a matrix with an eigenvalue below minus the cutoff gives NaN. Mismatched shapes
raise ValueError.

>>> import numpy as np
>>> from lamella.scipy.stats import multivariate_normal
>>> multivariate_normal.logpdf(np.float32([1.0, 0.0]), np.float32([0.0, 0.0]),
...                            np.float32([[2.0, 0.5], [0.5, 1.0]]))
Array(-2.4033992, dtype=float32)
"""

from __future__ import annotations

import math

import lamella.lax as lax
import lamella.numpy as lnp
from lamella.scipy.stats._common import (
    LOG_SQRT_2PI,
    Array,
    ArrayLike,
    compiled,
    float_dtypes,
    nan_unless,
)

__all__ = ["logpdf", "pdf"]


def _scalar(x, mean, cov):
    d = x - mean
    return nan_unless(cov > 0, -0.5 * d * d / cov - 0.5 * lnp.log(cov) - LOG_SQRT_2PI)


def _diagonal(x, mean, cov):
    d = x - mean
    n = x.shape[-1]
    value = (-0.5 * lnp.sum(d * d / cov, axis=-1) - 0.5 * lnp.sum(lnp.log(cov), axis=-1)
             - n * LOG_SQRT_2PI)
    return nan_unless(lnp.all(cov > 0, axis=-1), value)


def _full(x, mean, cov):
    n = x.shape[-1]
    factor = lnp.linalg.cholesky(cov)
    d = x - mean
    if cov.ndim == 2:
        columns = d.reshape(-1, n).T
        y = lax.linalg.triangular_solve(factor, columns, left_side=True, lower=True)
        squares = lnp.sum(y * y, axis=0).reshape(d.shape[:-1])
    else:
        batch = lnp.broadcast_shapes(d.shape[:-1], cov.shape[:-2])
        factor = lnp.broadcast_to(factor, batch + (n, n))
        d = lnp.broadcast_to(d, batch + (n,))[..., None]
        y = lax.linalg.triangular_solve(factor, d, left_side=True, lower=True)
        squares = lnp.sum(y[..., 0] * y[..., 0], axis=-1)
    half_log_det = lnp.sum(lnp.log(lnp.diagonal(factor, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * squares - half_log_det - n * LOG_SQRT_2PI


def _singular(x, mean, cov):
    values, vectors = lnp.linalg.eigh(cov)
    factor = 1e6 if lnp.finfo(cov.dtype).bits == 64 else 1e3
    cutoff = factor * lnp.finfo(cov.dtype).eps * lnp.max(lnp.abs(values), axis=-1, keepdims=True)
    kept = values > cutoff
    positive = lnp.all(values >= -cutoff, axis=-1)
    d = x - mean
    coordinates = lnp.einsum("...ji,...j->...i", vectors, d)
    inverse = lnp.where(kept, 1 / lnp.where(kept, values, 1.0), 0.0)
    squares = lnp.sum(coordinates * coordinates * inverse, axis=-1)
    residual = lnp.sqrt(lnp.sum(lnp.where(kept, 0.0, coordinates * coordinates), axis=-1))
    rank = lnp.sum(kept, axis=-1)
    log_pdet = lnp.sum(lnp.where(kept, lnp.log(lnp.where(kept, values, 1.0)), 0.0), axis=-1)
    value = -0.5 * (rank * math.log(2 * math.pi) + log_pdet + squares)
    in_support = residual < 1e3 * cutoff[..., 0]
    return nan_unless(positive, lnp.where(in_support, value, -lnp.inf))


def _arguments(x: ArrayLike, mean: ArrayLike, cov: ArrayLike):
    """The arrays in one float dtype, the kernel for their shapes, the dtype to return."""
    x, mean, cov = lnp.asarray(x), lnp.asarray(mean), lnp.asarray(cov)
    work, dtype = float_dtypes("multivariate_normal", x, mean, cov)
    x, mean, cov = x.astype(work), mean.astype(work), cov.astype(work)
    if mean.ndim == 0:
        if cov.ndim != 0:
            raise ValueError(f"multivariate_normal: a scalar mean needs a scalar variance cov, "
                             f"got cov.shape={cov.shape}.")
        return (x, mean, cov), _scalar, dtype
    n = mean.shape[-1]
    if x.ndim == 0 or x.shape[-1] != n:
        raise ValueError(f"multivariate_normal: x's last axis must have the mean's length {n}, "
                         f"got x.shape={x.shape}.")
    if cov.ndim == 0:
        return (x, mean, lnp.full((n,), cov)), _diagonal, dtype
    if cov.ndim == 1:
        if cov.shape != (n,):
            raise ValueError(f"multivariate_normal: a one-dimensional cov is a diagonal and "
                             f"needs {n} entries like the mean, got cov.shape={cov.shape}.")
        return (x, mean, cov), _diagonal, dtype
    if cov.shape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal: cov must be square with the mean's length, "
                         f"shape (..., {n}, {n}), got cov.shape={cov.shape} for "
                         f"mean.shape={mean.shape}.")
    return (x, mean, cov), _full, dtype


def logpdf(x: ArrayLike, mean: ArrayLike, cov: ArrayLike,
           allow_singular: bool | None = None) -> Array:
    """log density -(x - mean)^T cov^-1 (x - mean) / 2 - log det(2 pi cov) / 2.

    Args:
      x: points, shape (..., n) (or any shape for a scalar mean).
      mean: the mean, shape (..., n), or a scalar.
      cov: the covariance, shape (..., n, n), (n,) for a diagonal, or a scalar.
      allow_singular: True allows a singular covariance (SciPy's pseudo-inverse
        treatment); None or False requires a positive definite one.

    >>> import numpy as np
    >>> logpdf(np.float32([[0.0, 0.0], [1.0, 1.0]]), np.float32([0.0, 0.0]), 1.0)
    Array([-1.837877, -2.837877], dtype=float32)
    >>> logpdf(np.float32([1.0, 1.0]), np.float32([0.0, 0.0]), np.float32([[1.0, 1.0], [1.0, 1.0]]),
    ...        allow_singular=True)
    Array(-1.7655121, dtype=float32)
    """
    if allow_singular not in (None, False, True):
        raise TypeError(f"multivariate_normal.logpdf: allow_singular must be None, False or "
                        f"True, got {allow_singular!r}.")
    arrays, kernel, dtype = _arguments(x, mean, cov)
    if allow_singular and kernel is _full:
        kernel = _singular
    return compiled(kernel)(*arrays).astype(dtype)


def pdf(x: ArrayLike, mean: ArrayLike, cov: ArrayLike) -> Array:
    """The multivariate normal density.

    >>> import numpy as np
    >>> pdf(np.float32([0.0, 0.0]), np.float32([0.0, 0.0]), np.float32([[1.0, 0.0], [0.0, 1.0]]))
    Array(0.15915495, dtype=float32)
    """
    arrays, kernel, dtype = _arguments(x, mean, cov)
    return lnp.exp(compiled(kernel)(*arrays)).astype(dtype)
