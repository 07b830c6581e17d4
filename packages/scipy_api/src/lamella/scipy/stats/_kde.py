"""gaussian_kde: a Gaussian kernel density estimate, jax.scipy.stats.gaussian_kde
as a pytree (its leaves: neff, dataset, weights, covariance, inv_cov), so it can
be passed through jit, vmap and grad.

The kernel covariance is the data's weighted covariance times factor**2, the
factor from `bw_method` ("scott": neff**(-1/(d+4)), "silverman":
(neff (d+2)/4)**(-1/(d+4)), a number, or a callable of the estimator).
Densities whiten points and data with the Cholesky factor of the covariance (no
inverse), `logpdf` is a log-sum-exp (finite far from the data, where `pdf`
underflows), `integrate_box_1d` takes each kernel's mass from the truncated
normal's log-mass (accurate in the tails, where a difference of CDFs cancels),
and `resample` draws exactly JAX's numbers for a given key. Beyond JAX:
`integrate_box` (exact for one dimension; Genz's method on a deterministic
lattice rule above) and `set_bandwidth` (SciPy's in-place update), which JAX
refuses.

>>> import numpy as np
>>> kde = gaussian_kde(np.float32([1.0, 2.0, 4.0, 7.0]))
>>> kde.evaluate(np.float32([1.0, 3.0]))
Array([0.11047135, 0.12489473], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp
import lamella.random as lr
from lamella.scipy import special
from lamella.scipy.stats._common import LOG_SQRT_2PI, Array, ArrayLike, float_dtypes
from lamella.scipy.stats.truncnorm import log_mass

__all__ = ["gaussian_kde"]

BandwidthMethod = None | str | float | ArrayLike | Callable[[Any], ArrayLike]


def _whiten(factor: Array, points: Array) -> Array:
    """L^-1 points for the lower Cholesky factor L and points as columns (d, m)."""
    return lax.linalg.triangular_solve(factor, points, left_side=True, lower=True)


def _log_kernel_terms(dataset: Array, weights: Array, covariance: Array,
                      points: Array) -> Array:
    """log(w_i N(x_j; data_i, covariance)) for every point j and datum i: (m, n)."""
    factor = lnp.linalg.cholesky(covariance)
    data, xs = _whiten(factor, dataset), _whiten(factor, points)
    squares = lnp.sum((xs.T[:, None, :] - data.T[None, :, :]) ** 2, axis=-1)
    log_norm = -lnp.sum(lnp.log(lnp.diagonal(factor))) - dataset.shape[0] * LOG_SQRT_2PI
    return lnp.log(weights) + log_norm - 0.5 * squares


def _evaluate(dataset, weights, covariance, points):
    return lnp.sum(lnp.exp(_log_kernel_terms(dataset, weights, covariance, points)), axis=1)


def _logpdf(dataset, weights, covariance, points):
    return special.logsumexp(_log_kernel_terms(dataset, weights, covariance, points), axis=1)


def _gaussian_overlap(dataset, weights, covariance, means):
    """sum_i w_i N(data_i; mean_j, covariance) for the means as columns (d, m)."""
    return _evaluate(dataset, weights, covariance, means)


def _box_1d(dataset, weights, covariance, low, high):
    sigma = lnp.sqrt(covariance[0, 0])
    a, b = (low - dataset[0]) / sigma, (high - dataset[0]) / sigma
    mass = log_mass(lnp.minimum(a, b), lnp.maximum(a, b))
    mass = lnp.exp(-0.5 * mass.t * mass.t - LOG_SQRT_2PI + mass.r)
    return lnp.sign(high - low) * lnp.sum(weights * mass)


def _lattice(points: int, d: int, dtype) -> Array:
    """A Richtmyer lattice: fractional parts of j sqrt(prime_k), j = 1..points,
    for d - 1 coordinates (the last variable of Genz's method is integrated exactly)."""
    primes = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53][:max(d - 1, 1)]
    if d - 1 > len(primes):
        raise ValueError(f"gaussian_kde.integrate_box handles up to {len(primes) + 1} "
                         f"dimensions here, got {d}.")
    j = np.arange(1, points + 1, dtype=np.float64)[:, None]
    u = np.modf(j * np.sqrt(np.asarray(primes, np.float64)))[0]
    # The baker's transformation periodizes the integrand (second-order convergence).
    return lnp.asarray(1 - np.abs(2 * u - 1), dtype)


def _box_genz(dataset, weights, covariance, low, high, lattice):
    """sum_i w_i P(low <= data_i + L z <= high), z standard normal, by Genz's
    sequential conditioning: z_k is drawn inside its conditional interval by
    the inverse CDF, and the product of the interval masses is averaged over the
    lattice points."""
    d = dataset.shape[0]
    factor = lnp.linalg.cholesky(covariance)
    lo = (low[:, None] - dataset)[None]  # (1, d, n): per lattice point below
    hi = (high[:, None] - dataset)[None]
    m = lattice.shape[0]
    zs = []
    product = lnp.ones((m, dataset.shape[1]), dataset.dtype)
    for k in range(d):
        shift = sum(factor[k, j] * zs[j] for j in range(k)) if k else 0.0
        a = special.ndtr((lo[:, k] - shift) / factor[k, k])
        b = special.ndtr((hi[:, k] - shift) / factor[k, k])
        product = product * (b - a)
        if k < d - 1:
            u = lattice[:, k][:, None]
            tiny, eps = lnp.finfo(dataset.dtype).tiny, lnp.finfo(dataset.dtype).eps
            zs.append(special.ndtri(lnp.clip(a + u * (b - a), tiny, 1 - eps)))
    return lnp.sum(lnp.mean(product, axis=0) * weights)


_compiled_box_genz = lc.jit(_box_genz)
_compiled = {f: lc.jit(f) for f in (_evaluate, _logpdf, _gaussian_overlap, _box_1d)}


@lc.tree_util.register_pytree_node_class
class gaussian_kde:  # noqa: N801 (JAX's and SciPy's name)
    """A Gaussian kernel density estimate of `dataset`.

    Args:
      dataset: the data, shape (n,) or (d, n) (d dimensions, n points).
      bw_method: "scott" (the default), "silverman", a number (the factor itself)
        or a callable taking the estimator and returning the factor.
      weights: optional weights of the n points (normalized to sum to 1).

    >>> import numpy as np
    >>> kde = gaussian_kde(np.float32([[0.0, 1.0, 2.0], [1.0, 0.0, 2.0]]), bw_method=0.5)
    >>> kde.d, kde.n
    (2, 3)
    >>> kde.logpdf(np.float32([[0.0], [0.0]]))
    Array([-3.379706], dtype=float32)
    """

    __slots__ = ("neff", "dataset", "weights", "covariance", "inv_cov")

    def __init__(self, dataset: ArrayLike, bw_method: BandwidthMethod = None,
                 weights: ArrayLike | None = None):
        dataset = lnp.atleast_2d(lnp.asarray(dataset))
        if lnp.issubdtype(dataset.dtype, lnp.complexfloating):
            raise TypeError("gaussian_kde: dataset must be real; complex data has no Gaussian "
                            "kernel density here (nor in JAX or SciPy).")
        if dataset.ndim != 2:
            raise ValueError(f"gaussian_kde: dataset must have shape (n,) or (d, n), got "
                             f"{dataset.shape}.")
        if not dataset.size > 1:
            raise ValueError("gaussian_kde: dataset needs more than one element.")
        n = dataset.shape[1]
        if weights is None:
            work, _ = float_dtypes("gaussian_kde", dataset)
            dataset = dataset.astype(work)
            weights = lnp.full((n,), 1.0 / n, dtype=work)
        else:
            weights = lnp.atleast_1d(lnp.asarray(weights))
            work, _ = float_dtypes("gaussian_kde", dataset, weights)
            if weights.ndim != 1:
                raise ValueError(f"gaussian_kde: weights must be one-dimensional, got shape "
                                 f"{weights.shape}.")
            if weights.shape[0] != n:
                raise ValueError(f"gaussian_kde: {weights.shape[0]} weights for {n} data "
                                 f"points.")
            dataset, weights = dataset.astype(work), weights.astype(work)
            weights = weights / lnp.sum(weights)
        self._set("dataset", dataset)
        self._set("weights", weights)
        self._set("neff", 1 / lnp.sum(weights ** 2))
        self.set_bandwidth("scott" if bw_method is None else bw_method)

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"gaussian_kde is immutable (as JAX's); cannot set {name!r}. "
                             "Use set_bandwidth to change the bandwidth.")

    def tree_flatten(self) -> tuple[tuple, None]:
        return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux_data: None, children: tuple) -> gaussian_kde:
        kde = object.__new__(cls)
        for name, value in zip(cls.__slots__, children):
            kde._set(name, value)
        return kde

    @property
    def d(self) -> int:
        """The number of dimensions."""
        return self.dataset.shape[0]

    @property
    def n(self) -> int:
        """The number of data points."""
        return self.dataset.shape[1]

    def set_bandwidth(self, bw_method: BandwidthMethod = None) -> None:
        """Recomputes the kernel covariance for `bw_method` (SciPy's in-place update;
        JAX raises NotImplementedError). None keeps the current bandwidth.

        >>> import numpy as np
        >>> kde = gaussian_kde(np.float32([1.0, 2.0, 4.0, 7.0]))
        >>> kde.set_bandwidth(0.5)
        >>> kde.covariance
        Array([[1.75]], dtype=float32)
        """
        if bw_method is None:
            return
        d = self.d
        if isinstance(bw_method, str):
            if bw_method == "scott":
                factor = self.neff ** (-1.0 / (d + 4))
            elif bw_method == "silverman":
                factor = (self.neff * (d + 2) / 4.0) ** (-1.0 / (d + 4))
            else:
                raise ValueError(f"gaussian_kde: bw_method must be 'scott', 'silverman', a "
                                 f"number or a callable, got {bw_method!r}.")
        elif callable(bw_method):
            factor = bw_method(self)
        elif lnp.ndim(bw_method) == 0:
            factor = bw_method
        else:
            raise ValueError(f"gaussian_kde: bw_method must be 'scott', 'silverman', a number or "
                             f"a callable, got an array of shape {lnp.shape(bw_method)}.")
        data_covariance = lnp.atleast_2d(lnp.cov(self.dataset, rowvar=True, bias=False,
                                                 aweights=self.weights))
        factor = lnp.asarray(factor, self.dataset.dtype)
        self._set("covariance", data_covariance * factor ** 2)
        self._set("inv_cov", lnp.linalg.inv(data_covariance) / factor ** 2)

    def _points(self, points: ArrayLike) -> Array:
        """Points as columns (d, m); a flat array of d values is one point."""
        points = lnp.atleast_2d(lnp.asarray(points))
        if lnp.issubdtype(points.dtype, lnp.complexfloating):
            raise TypeError("gaussian_kde: points must be real.")
        if points.ndim != 2:
            raise ValueError(f"gaussian_kde: points must have shape (m,) or (d, m), got "
                             f"{points.shape}.")
        d, m = points.shape
        if d != self.d:
            if d == 1 and m == self.d:
                points = points.reshape(self.d, 1)
            else:
                raise ValueError(f"gaussian_kde: points have dimension {d}, the dataset has "
                                 f"dimension {self.d}.")
        return points.astype(lnp.result_type(points, self.dataset, float))

    def _data(self, dtype) -> tuple[Array, Array, Array]:
        return (self.dataset.astype(dtype), self.weights.astype(dtype),
                self.covariance.astype(dtype))

    def evaluate(self, points: ArrayLike) -> Array:
        """The density at each point (points of shape (d, m), or (m,) when d = 1).

        >>> import numpy as np
        >>> gaussian_kde(np.float32([0.0, 1.0]), bw_method=1.0).evaluate(np.float32([0.5]))
        Array([0.4393913], dtype=float32)
        """
        points = self._points(points)
        return _compiled[_evaluate](*self._data(points.dtype), points)

    def __call__(self, points: ArrayLike) -> Array:
        """`evaluate`."""
        return self.evaluate(points)

    def pdf(self, x: ArrayLike) -> Array:
        """`evaluate`.

        >>> import numpy as np
        >>> gaussian_kde(np.float32([0.0, 1.0]), bw_method=1.0).pdf(np.float32([0.5]))
        Array([0.4393913], dtype=float32)
        """
        return self.evaluate(x)

    def logpdf(self, x: ArrayLike) -> Array:
        """log of the density, by log-sum-exp (finite where the density underflows).

        >>> import numpy as np
        >>> gaussian_kde(np.float32([0.0, 1.0]), bw_method=1.0).logpdf(np.float32([100.0]))
        Array([-9802.266], dtype=float32)
        """
        points = self._points(x)
        return _compiled[_logpdf](*self._data(points.dtype), points)

    def integrate_gaussian(self, mean: ArrayLike, cov: ArrayLike) -> Array:
        """The integral of the density times the normal density N(mean, cov).

        >>> import numpy as np
        >>> gaussian_kde(np.float32([0.0, 1.0]), bw_method=1.0).integrate_gaussian(0.0, 1.0)
        Array(0.27956718, dtype=float32)
        """
        mean = lnp.atleast_1d(lnp.squeeze(lnp.asarray(mean)))
        cov = lnp.atleast_2d(lnp.asarray(cov))
        if mean.shape != (self.d,):
            raise ValueError(f"gaussian_kde.integrate_gaussian: mean must have shape "
                             f"({self.d},), got {mean.shape}.")
        if cov.shape != (self.d, self.d):
            raise ValueError(f"gaussian_kde.integrate_gaussian: cov must have shape "
                             f"({self.d}, {self.d}), got {cov.shape}.")
        dtype = lnp.result_type(mean, cov, self.dataset, float)
        dataset, weights, covariance = self._data(dtype)
        return _compiled[_gaussian_overlap](dataset, weights, covariance + cov.astype(dtype),
                                            mean.astype(dtype)[:, None])[0]

    def integrate_box_1d(self, low: ArrayLike, high: ArrayLike) -> Array:
        """The mass of the (one-dimensional) density between low and high.

        >>> import numpy as np
        >>> gaussian_kde(np.float32([1.0, 2.0, 4.0, 7.0])).integrate_box_1d(0.0, 3.0)
        Array(0.3430574, dtype=float32)
        """
        if self.d != 1:
            raise ValueError(f"gaussian_kde.integrate_box_1d needs a one-dimensional density, "
                             f"this one has d = {self.d}; use integrate_box.")
        if lnp.ndim(low) != 0 or lnp.ndim(high) != 0:
            raise ValueError("gaussian_kde.integrate_box_1d: the limits must be scalars.")
        dtype = lnp.result_type(low, high, self.dataset, float)
        return _compiled[_box_1d](*self._data(dtype), lnp.asarray(low, dtype),
                                  lnp.asarray(high, dtype))

    def integrate_box(self, low_bounds: ArrayLike, high_bounds: ArrayLike,
                      maxpts: int | None = None) -> Array:
        """The mass of the density in the box low_bounds <= x <= high_bounds (JAX
        raises NotImplementedError). One dimension is exact (`integrate_box_1d`);
        above, Genz's method with `maxpts` lattice points (default 10000 d), about
        1e-6 absolute where SciPy's randomized rule has a similar error.

        >>> import numpy as np
        >>> kde = gaussian_kde(np.float32([[0.0, 1.0, 2.0], [1.0, 0.0, 2.0]]), bw_method=0.5)
        >>> kde.integrate_box(np.float32([-10.0, -10.0]), np.float32([10.0, 10.0]))
        Array(1., dtype=float32)
        """
        low = lnp.atleast_1d(lnp.asarray(low_bounds))
        high = lnp.atleast_1d(lnp.asarray(high_bounds))
        if low.shape != (self.d,) or high.shape != (self.d,):
            raise ValueError(f"gaussian_kde.integrate_box: the bounds must have shape "
                             f"({self.d},), got {low.shape} and {high.shape}.")
        if self.d == 1:
            return self.integrate_box_1d(low[0], high[0])
        if maxpts is not None and (not isinstance(maxpts, int) or maxpts < 1):
            raise ValueError(f"gaussian_kde.integrate_box: maxpts must be a positive int, got "
                             f"{maxpts!r}.")
        dtype = lnp.result_type(low, high, self.dataset, float)
        lattice = _lattice(maxpts or 10000 * self.d, self.d, dtype)
        return _compiled_box_genz(*self._data(dtype), low.astype(dtype), high.astype(dtype),
                                  lattice)

    def integrate_kde(self, other: gaussian_kde) -> Array:
        """The integral of the product of this density and `other`.

        >>> import numpy as np
        >>> kde = gaussian_kde(np.float32([0.0, 1.0]), bw_method=1.0)
        >>> kde.integrate_kde(kde)
        Array(0.3204565, dtype=float32)
        """
        if other.d != self.d:
            raise ValueError(f"gaussian_kde.integrate_kde: the densities have dimensions "
                             f"{self.d} and {other.d}.")
        dtype = lnp.result_type(self.dataset, other.dataset)
        dataset, weights, covariance = self._data(dtype)
        values = _compiled[_gaussian_overlap](dataset, weights,
                                              covariance + other.covariance.astype(dtype),
                                              other.dataset.astype(dtype))
        return lnp.sum(values * other.weights.astype(dtype))

    def resample(self, key: Array, shape: tuple[int, ...] = ()) -> Array:
        """Draws from the density: shape (d,) + shape. For a given key these are
        JAX's numbers (a data point chosen by `weights`, plus kernel noise).

        >>> import lamella.random as lr
        >>> import numpy as np
        >>> kde = gaussian_kde(np.float32([1.0, 2.0, 4.0, 7.0]))
        >>> kde.resample(lr.key(0), (3,)).shape
        (1, 3)
        """
        shape = tuple(shape)
        index_key, noise_key = lr.split(key)
        index = lr.choice(index_key, self.n, shape=shape, p=self.weights)
        noise = lr.multivariate_normal(noise_key, lnp.zeros(self.d, self.covariance.dtype),
                                       self.covariance, shape=shape, dtype=self.dataset.dtype)
        return self.dataset[:, index] + lnp.moveaxis(noise, -1, 0)

