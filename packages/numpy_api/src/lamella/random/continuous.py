"""Continuous distributions built by transforming uniform (and normal) samples.

`uniform` and `normal` follow JAX's algorithms step for step, so they give
JAX's float values bit for bit:

- uniform: take `nmant` random bits as the mantissa of a float in [1, 2)
  (exponent bits of 1.0 or'ed in, then a bitcast), subtract 1, scale to
  [minval, maxval), and clamp below at minval;
- normal: `sqrt(2) * erf_inv(u)` for u uniform on (-1, 1).

The other samplers here are JAX's transformations of those (inverse CDFs and
simple constructions), drawing the same bits in the same order.

>>> from lamella.random.keys import PRNGKey
>>> uniform(PRNGKey(42), (3,))
Array([0.48870957, 0.6797972 , 0.6162715 ], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import lamella.numpy as lnp
from lamella import lax
from lamella.core import dtypes as core_dtypes
from lamella.lax import linalg
from lamella.numpy.placement import places_result
from lamella.numpy.util import check_arraylike, concrete_int
from lamella.numpy.util import shape as _shape
from lamella.random._checks import (
    broadcast_shapes,
    broadcast_to,
    check_shape,
    const,
    float_dtype,
    param,
    prepare,
    sample_shape,
)
from lamella.random.keys import _canonical_shape, _random_bits, _single_key, _split_n

__all__ = ["cauchy", "double_sided_maxwell", "exponential", "gumbel", "laplace", "logistic",
           "lognormal", "maxwell", "multivariate_normal", "normal", "orthogonal", "pareto",
           "rayleigh", "triangular", "truncated_normal", "uniform", "wald", "weibull_min"]

_UINT = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: np.dtype(np.uint32),
         64: np.dtype(np.uint64)}


def _uniform(words: Any, shape: tuple[int, ...], dtype: np.dtype, minval: Any,
             maxval: Any) -> Any:
    """Uniform floats of `shape` in [minval, maxval) from raw key words (JAX's bits)."""
    finfo = lnp.finfo(dtype)
    nbits, nmant = finfo.bits, finfo.nmant
    # bfloat16's 7 mantissa bits are drawn as a byte (JAX draws 8 bits at least).
    rng_bits = nbits if nmant >= 8 else 8
    uint = _UINT[nbits]
    bits = _random_bits(words, rng_bits, shape)
    if rng_bits != nbits:
        bits = lax.convert_element_type(bits, uint)
    one_bits = np.array(1.0, dtype).view(uint)
    mantissa = lax.shift_right_logical(bits, np.array(rng_bits - nmant, uint))
    floats = lax.sub(lax.bitcast_convert_type(lax.bitwise_or(mantissa, one_bits), dtype),
                     const(dtype, 1.0))
    minval, maxval = broadcast_to(minval, shape), broadcast_to(maxval, shape)
    return lax.max(minval, lax.add(lax.mul(floats, lax.sub(maxval, minval)), minval))


@places_result
def uniform(key: Any, shape: Sequence[int] = (), dtype: Any = None, minval: Any = 0.0,
            maxval: Any = 1.0, *, out_sharding: Any = None) -> Any:
    """Uniform samples on [minval, maxval) (bounds broadcast against `shape`).

    >>> from lamella.random.keys import key
    >>> uniform(key(0), (3,))
    Array([0.947667  , 0.9785799 , 0.33229148], dtype=float32)
    >>> uniform(key(0), (2, 3), minval=-1.0, maxval=1.0).shape
    (2, 3)
    """
    words, dtype, shape, (minval, maxval) = prepare("uniform", key, dtype, shape, minval, maxval,
                                                    shape_optional=False)
    return _uniform(words, shape, dtype, minval, maxval)


def _standard_uniform(words: Any, shape: tuple[int, ...], dtype: np.dtype,
                      minval: float = 0.0) -> Any:
    return _uniform(words, shape, dtype, const(dtype, minval), const(dtype, 1.0))


def _normal_real(words: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    # The open interval (-1, 1) keeps erf_inv finite.
    lo = const(dtype, -1.0 + float(lnp.finfo(dtype).epsneg))  # nextafter(-1, 0)
    u = _uniform(words, shape, dtype, lo, const(dtype, 1.0))
    return lax.mul(const(dtype, np.sqrt(2)), lax.erf_inv(u))


def _normal(words: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    if not lnp.issubdtype(dtype, np.complexfloating):
        return _normal_real(words, shape, dtype)
    real = np.dtype(np.float32 if dtype == np.complex64 else np.float64)
    k_re, k_im = _split_n(words, 2)
    re, im = (lax.convert_element_type(_normal_real(k, shape, real), dtype) for k in (k_re, k_im))
    return lax.div(lax.add(re, lax.mul(np.array(1j, dtype), im)), np.array(np.sqrt(2), dtype))


@places_result
def normal(key: Any, shape: Sequence[int] = (), dtype: Any = None,
           *, out_sharding: Any = None) -> Any:
    """Standard normal samples (complex dtypes: real and imaginary parts of variance 1/2).

    >>> from lamella.random.keys import PRNGKey
    >>> normal(PRNGKey(42), (3,))
    Array([-0.02830462,  0.46713185,  0.29570296], dtype=float32)
    """
    words, _ = _single_key("normal", key)
    dtype = float_dtype("normal", dtype, complex_ok=True)
    return _normal(words, _canonical_shape("normal", shape), dtype)


@places_result
def lognormal(key: Any, sigma: Any = np.float32(1.0), shape: Sequence[int] | None = None,  # noqa: B008 (JAX's strongly typed default)
              dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Lognormal samples: `exp(sigma * normal)` (shape defaults to sigma's shape).

    >>> from lamella.random.keys import PRNGKey
    >>> lognormal(PRNGKey(42), 0.5, (2,)).shape
    (2,)
    """
    words, _ = _single_key("lognormal", key)
    dtype = float_dtype("lognormal", dtype, complex_ok=True)
    check_arraylike("lognormal", sigma)
    # As JAX, refuse a sigma that `dtype` cannot hold (e.g. complex sigma, float dtype).
    if lnp.result_type(sigma, dtype) != dtype:
        raise lnp.TypePromotionError(
            f"lognormal: cannot safely cast sigma of dtype {lnp.result_type(sigma).name} "
            f"to {dtype.name}")
    sigma = param(sigma, dtype)
    shape = sample_shape("lognormal", shape, sigma)
    return lax.exp(lax.mul(_normal(words, shape, dtype), broadcast_to(sigma, shape)))


@places_result
def truncated_normal(key: Any, lower: Any, upper: Any, shape: Sequence[int] | None = None,
                     dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Standard normal samples truncated to the open interval (lower, upper).

    >>> from lamella.random.keys import key
    >>> x = truncated_normal(key(0), -1.0, 1.0, (100,))
    >>> bool((abs(x) < 1).all())
    True
    """
    words, dtype, shape, (lower, upper) = prepare("truncated_normal", key, dtype, shape, lower,
                                                  upper)
    sqrt2 = const(dtype, np.sqrt(2))
    a, b = (lax.erf(lax.div(bound, sqrt2)) for bound in (lower, upper))
    out = lax.mul(sqrt2, lax.erf_inv(_uniform(words, shape, dtype, a, b)))
    # Rounding (or u landing on a) can leave the open interval: clamp into it.
    lo = lax.nextafter(lax.stop_gradient(lower), lax.full_like(lower, np.inf))
    hi = lax.nextafter(lax.stop_gradient(upper), lax.full_like(upper, -np.inf))
    return lnp.clip(out, lo, hi)


@places_result
def exponential(key: Any, shape: Sequence[int] = (), dtype: Any = None,
                *, out_sharding: Any = None) -> Any:
    """Exponential samples of rate 1: `-log1p(-u)`.

    >>> from lamella.random.keys import key
    >>> bool((exponential(key(0), (50,)) >= 0).all())
    True
    """
    words, _ = _single_key("exponential", key)
    dtype = float_dtype("exponential", dtype)
    u = _standard_uniform(words, _canonical_shape("exponential", shape), dtype)
    return lax.neg(lax.log1p(lax.neg(u)))


@places_result
def laplace(key: Any, shape: Sequence[int] = (), dtype: Any = None,
            *, out_sharding: Any = None) -> Any:
    """Laplace samples (location 0, scale 1).

    >>> from lamella.random.keys import key
    >>> laplace(key(0), (2, 2)).shape
    (2, 2)
    """
    words, _ = _single_key("laplace", key)
    dtype = float_dtype("laplace", dtype)
    lo = const(dtype, -1.0 + float(lnp.finfo(dtype).epsneg))
    u = _uniform(words, _canonical_shape("laplace", shape), dtype, lo, const(dtype, 1.0))
    return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


@places_result
def logistic(key: Any, shape: Sequence[int] = (), dtype: Any = None,
             *, out_sharding: Any = None) -> Any:
    """Standard logistic samples: `log(u) - log1p(-u)`.

    >>> from lamella.random.keys import key
    >>> logistic(key(0), (3,)).dtype
    dtype('float32')
    """
    words, _ = _single_key("logistic", key)
    dtype = float_dtype("logistic", dtype)
    u = _standard_uniform(words, _canonical_shape("logistic", shape), dtype,
                          float(lnp.finfo(dtype).tiny))
    return lax.sub(lax.log(u), lax.log1p(lax.neg(u)))


@places_result
def cauchy(key: Any, shape: Sequence[int] = (), dtype: Any = None,
           *, out_sharding: Any = None) -> Any:
    """Standard Cauchy samples: `tan(pi * (u - 1/2))`.

    >>> from lamella.random.keys import key
    >>> cauchy(key(0), (3,)).shape
    (3,)
    """
    words, _ = _single_key("cauchy", key)
    dtype = float_dtype("cauchy", dtype)
    u = _standard_uniform(words, _canonical_shape("cauchy", shape), dtype,
                          float(lnp.finfo(dtype).eps))
    return lax.tan(lax.mul(const(dtype, np.pi), lax.sub(u, const(dtype, 0.5))))


def _bernoulli_half(words: Any, shape: tuple[int, ...]) -> Any:
    """Fair coin flips: `uniform < 0.5` in the default float dtype, as JAX's `bernoulli(key)`."""
    dtype = core_dtypes.canonicalize_dtype(np.dtype(np.float64))
    return lax.lt(_standard_uniform(words, shape, dtype), const(dtype, 0.5))


def _random_sign(words: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """-1 or +1 of `dtype` with equal probability: `2 * _bernoulli_half - 1`."""
    b = lax.convert_element_type(_bernoulli_half(words, shape), dtype)
    return lax.sub(lax.mul(const(dtype, 2.0), b), const(dtype, 1.0))


def _gumbel(words: Any, shape: tuple[int, ...], dtype: np.dtype, mode: str | None = None) -> Any:
    if mode not in (None, "low", "high"):
        raise ValueError(f"gumbel: mode must be None, 'low' or 'high', got {mode!r}")
    tiny = float(lnp.finfo(dtype).tiny)
    if mode == "high":
        # Below 1/2 a second uniform refines the first, resolving the far left tail.
        u = _standard_uniform(words, (2, *shape), dtype)
        high, low = (lax.index_in_dim(u, i, 0, keepdims=False) for i in (0, 1))
        fine = high + const(dtype, 2.0 ** -lnp.finfo(dtype).nmant) * low + const(dtype, tiny)
        x = lnp.where(high >= const(dtype, 0.5), high, fine)
        return lax.neg(lax.log(lax.neg(lax.log1p(lax.neg(x)))))
    u = _standard_uniform(words, shape, dtype, tiny)
    return lax.neg(lax.log(lax.neg(lax.log(u))))


@places_result
def gumbel(key: Any, shape: Sequence[int] = (), dtype: Any = None, mode: str | None = None,
           *, out_sharding: Any = None) -> Any:
    """Standard Gumbel samples: `-log(-log(u))` (mode="high": finer in the left tail).

    >>> from lamella.random.keys import key
    >>> gumbel(key(0), (3,)).shape
    (3,)
    """
    words, _ = _single_key("gumbel", key)
    return _gumbel(words, _canonical_shape("gumbel", shape), float_dtype("gumbel", dtype), mode)


@places_result
def pareto(key: Any, b: Any, shape: Sequence[int] | None = None, dtype: Any = None,
           *, out_sharding: Any = None) -> Any:
    """Pareto samples of shape parameter `b` (support [1, inf)): `exp(E / b)`.

    >>> from lamella.random.keys import key
    >>> bool((pareto(key(0), 2.0, (20,)) >= 1).all())
    True
    """
    words, dtype, shape, (b,) = prepare("pareto", key, dtype, shape, b)
    e = lax.neg(lax.log1p(lax.neg(_standard_uniform(words, shape, dtype))))
    return lax.exp(lax.div(e, broadcast_to(b, shape)))


def weibull_min(key: Any, scale: Any, concentration: Any, shape: Sequence[int] = (),
                dtype: Any = None) -> Any:
    """Weibull samples: `scale * (-log1p(-u)) ** (1 / concentration)`.

    >>> from lamella.random.keys import key
    >>> weibull_min(key(0), 1.0, 2.0, (3,)).shape
    (3,)
    """
    words, dtype, shape, (scale, concentration) = prepare(
        "weibull_min", key, dtype, shape, scale, concentration, shape_optional=False)
    u = _standard_uniform(words, shape, dtype)
    return lnp.multiply(lnp.power(lax.neg(lax.log1p(lax.neg(u))),
                                  lnp.divide(const(dtype, 1.0), concentration)), scale)


@places_result
def rayleigh(key: Any, scale: Any, shape: Sequence[int] | None = None,
             dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Rayleigh samples: `scale * sqrt(-2 log u)`.

    >>> from lamella.random.keys import key
    >>> rayleigh(key(0), 1.0, (3,)).shape
    (3,)
    """
    words, dtype, shape, (scale,) = prepare("rayleigh", key, dtype, shape, scale)
    log_u = lax.log(_standard_uniform(words, shape, dtype))
    return lax.mul(broadcast_to(scale, shape), lax.sqrt(lax.mul(log_u, const(dtype, -2.0))))


@places_result
def wald(key: Any, mean: Any, shape: Sequence[int] | None = None, dtype: Any = None,
         *, out_sharding: Any = None) -> Any:
    """Wald (inverse Gaussian) samples of `mean` and scale 1.

    >>> from lamella.random.keys import key
    >>> bool((wald(key(0), 1.0, (20,)) > 0).all())
    True
    """
    words, dtype, shape, (mean,) = prepare("wald", key, dtype, shape, mean)
    k1, k2 = _split_n(words, 2)
    mean = broadcast_to(mean, shape)
    y = lax.integer_pow(_normal_real(k1, shape, dtype), 2)
    z = _standard_uniform(k2, shape, dtype)
    mean_sq = lax.integer_pow(mean, 2)
    root = lax.sqrt(lax.add(lax.mul(lax.mul(const(dtype, 4.0), mean), y),
                            lax.mul(mean_sq, lax.integer_pow(y, 2))))
    x = lax.sub(lax.add(mean, lax.div(lax.mul(mean_sq, y), const(dtype, 2.0))),
                lax.mul(lax.div(mean, const(dtype, 2.0)), root))
    return lnp.where(z <= mean / (mean + x), x, mean_sq / x)


@places_result
def triangular(key: Any, left: Any, mode: Any, right: Any,
               shape: Sequence[int] | None = None, dtype: Any = None,
               *, out_sharding: Any = None) -> Any:
    """Triangular samples on [left, right] peaking at `mode` (inverse CDF).

    >>> from lamella.random.keys import key
    >>> x = triangular(key(0), 0.0, 1.0, 3.0, (50,))
    >>> bool(((x >= 0) & (x <= 3)).all())
    True
    """
    words, dtype, shape, params = prepare("triangular", key, dtype, shape, left, mode, right)
    left, mode, right = (broadcast_to(v, shape) for v in params)
    u = _standard_uniform(words, shape, dtype)
    width = right - left
    below = left + lax.sqrt(u * width * (mode - left))
    above = right - lax.sqrt((const(dtype, 1.0) - u) * width * (right - mode))
    return lnp.where(u < (mode - left) / width, below, above)


def _maxwell(words: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    z = _normal_real(words, (*shape, 3), dtype)
    return lax.sqrt(lax.reduce_sum(lax.mul(z, z), (len(shape),)))


@places_result
def maxwell(key: Any, shape: Sequence[int] = (), dtype: Any = None,
            *, out_sharding: Any = None) -> Any:
    """Maxwell samples: the length of a standard normal 3-vector.

    >>> from lamella.random.keys import key
    >>> maxwell(key(0), (2,)).shape
    (2,)
    """
    words, _ = _single_key("maxwell", key)
    return _maxwell(words, _canonical_shape("maxwell", shape), float_dtype("maxwell", dtype))


def double_sided_maxwell(key: Any, loc: Any, scale: Any, shape: Sequence[int] = (),
                         dtype: Any = None) -> Any:
    """Double-sided Maxwell samples: a Maxwell sample with a random sign, scaled and shifted.

    >>> from lamella.random.keys import key
    >>> double_sided_maxwell(key(0), 0.0, 1.0, (2,)).shape
    (2,)
    """
    words, dtype, shape, (loc, scale) = prepare("double_sided_maxwell", key, dtype, shape, loc,
                                                scale, shape_optional=False)
    k1, k2 = _split_n(words, 2)
    sign = _random_sign(k2, shape, dtype)
    return lnp.add(lnp.multiply(lax.mul(sign, _maxwell(k1, shape, dtype)), scale), loc)


@places_result
def multivariate_normal(key: Any, mean: Any, cov: Any, shape: Sequence[int] | None = None,
                        dtype: Any = None, method: str = "cholesky",
                        *, out_sharding: Any = None) -> Any:
    """Multivariate normal samples: `mean + factor @ z` with `factor factor^T = cov`.

    `method` picks the factorisation: "cholesky", "eigh" or "svd". The
    result has shape `(*shape, n)`; `shape` defaults to the broadcast batch
    shape of `mean` (`(..., n)`) and `cov` (`(..., n, n)`).

    >>> import numpy as np
    >>> from lamella.random.keys import key
    >>> multivariate_normal(key(0), np.zeros(2), np.eye(2), (5,)).shape
    (5, 2)
    """
    words, _ = _single_key("multivariate_normal", key)
    dtype = float_dtype("multivariate_normal", dtype)
    if method not in ("cholesky", "eigh", "svd"):
        raise ValueError(f"multivariate_normal: method must be 'cholesky', 'eigh' or 'svd', "
                         f"got {method!r}")
    mean, cov = param(mean, dtype), param(cov, dtype)
    mshape, cshape = _shape(mean), _shape(cov)
    if len(mshape) < 1:
        raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got shape {mshape}")
    n = mshape[-1]
    if len(cshape) < 2 or cshape[-2:] != (n, n):
        raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n} "
                         f"(from mean.shape {mshape}), got cov.shape {cshape}")
    if shape is None:
        batch = broadcast_shapes(mshape[:-1], cshape[:-2])
        if batch is None:
            raise ValueError(f"multivariate_normal: the batch shapes of mean {mshape} and cov "
                             f"{cshape} do not broadcast")
    else:
        batch = _canonical_shape("multivariate_normal", shape)
        check_shape("multivariate_normal", batch, mshape[:-1], cshape[:-2])
    if method == "svd":
        u, s, _ = linalg.svd(cov)
        factor = lnp.multiply(u, lax.expand_dims(lax.sqrt(s), (len(cshape) - 2,)))
    elif method == "eigh":
        v, w = linalg.eigh(cov)
        factor = lnp.multiply(v, lax.expand_dims(lax.sqrt(w), (len(cshape) - 2,)))
    else:
        factor = linalg.cholesky(cov)
    z = _normal_real(words, (*batch, n), dtype)
    product = lnp.matmul(factor, lax.expand_dims(z, (len(batch) + 1,)))
    return lnp.add(mean, lax.squeeze(product, (len(_shape(product)) - 1,)))


@places_result
def orthogonal(key: Any, n: int, shape: Sequence[int] = (), dtype: Any = None,
               m: int | None = None, *, out_sharding: Any = None) -> Any:
    """Haar-distributed orthogonal (or unitary) n-by-m matrices (m defaults to n).

    Built as the Q of a normal matrix's QR decomposition with each column's
    sign fixed by R's diagonal.

    >>> import numpy as np
    >>> from lamella.random.keys import key
    >>> q = np.asarray(orthogonal(key(0), 3))
    >>> bool(np.allclose(q @ q.T, np.eye(3), atol=1e-5))
    True
    """
    words, _ = _single_key("orthogonal", key)
    dtype = float_dtype("orthogonal", dtype, complex_ok=True)
    shape = _canonical_shape("orthogonal", shape)
    n = concrete_int(n, "orthogonal: n")
    m = n if m is None else concrete_int(m, "orthogonal: m")
    z = _normal(words, (*shape, max(n, m), min(n, m)), dtype)
    q, r = linalg.qr(z, full_matrices=False)
    rank = len(shape) + 2
    diag = _diagonal(r)
    q = lax.mul(q, broadcast_to(lax.expand_dims(lax.sign(diag), (rank - 2,)), _shape(q)))
    if n < m:
        q = lax.transpose(q, (*range(rank - 2), rank - 1, rank - 2))
    return q


def _diagonal(x: Any) -> Any:
    """The main diagonals of a batch of k-by-k matrices."""
    shape = _shape(x)
    k = shape[-1]
    flat = lax.reshape(x, (*shape[:-2], k * k))
    return lax.slice_in_dim(flat, 0, k * k, k + 1, len(shape) - 2)
