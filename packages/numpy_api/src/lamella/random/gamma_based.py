"""The gamma distribution and the distributions built from gamma samples.

`gamma` is Marsaglia and Tsang's squeeze-rejection sampler ("A simple method
for generating gamma variables", 2000), one key per entry split from the
given key, with JAX's boost for alpha < 1: Gamma(alpha) ~ Gamma(alpha + 1) *
U**(1/alpha) (in log space for `loggamma`, where the product underflows).

Samples are differentiable with respect to alpha by implicit
reparameterisation: with F the gamma CDF, F(x; alpha) = u fixed gives
dx/dalpha = -(dF/dalpha) / (dF/dx), which `lax.random_gamma_grad` computes.
`beta`, `dirichlet`, `chisquare`, `f`, `t` and `generalized_normal` inherit
these gradients.

>>> from lamella.random.keys import key
>>> bool((gamma(key(0), 0.5, (100,)) > 0).all())
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import lamella.numpy as lnp
from lamella import lax
from lamella.core import ShapedArray, ad, batching
from lamella.core.batching import not_mapped
from lamella.lax.lowering import lower_fun, register_lowering
from lamella.lax.standard import standard_primitive
from lamella.numpy.placement import places_result
from lamella.numpy.util import concrete_int
from lamella.numpy.util import shape as _shape
from lamella.random._checks import (
    broadcast_to,
    check_shape,
    const,
    float_dtype,
    param,
    prepare,
)
from lamella.random.continuous import _normal_real, _random_sign, _standard_uniform
from lamella.random.keys import _canonical_shape, _single_key, _split_n, _split_words

__all__ = ["ball", "beta", "chisquare", "dirichlet", "f", "gamma", "generalized_normal",
           "loggamma", "random_gamma_p", "t"]


def _gamma_one(words: Any, alpha: Any, log_space: bool) -> Any:
    """One Gamma(alpha) sample (scalar alpha) from one key: Marsaglia-Tsang with a boost."""
    dtype = alpha.dtype
    zero, one = const(dtype, 0.0), const(dtype, 1.0)
    words, boost_key = _split_n(words, 2)
    boost_mask = lax.ge(alpha, one)
    alpha_orig = alpha
    alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
    d = lax.sub(alpha, const(dtype, 1 / 3))
    c = lax.div(const(dtype, 1 / 3), lax.sqrt(d))

    def rejected(carry):
        _, x, v, u = carry
        squeeze = lax.ge(u, lax.sub(one, lax.mul(const(dtype, 0.0331), lax.mul(x, x))))
        full = lax.ge(lax.log(u), lax.add(lax.mul(x, const(dtype, 0.5)),
                                          lax.mul(d, lax.add(lax.sub(one, v), lax.log(v)))))
        return lax.bitwise_and(squeeze, full)

    def next_xv(carry):
        words, _, _ = carry
        words, sub = _split_n(words, 2)
        x = _normal_real(sub, (), dtype)
        return words, x, lax.add(one, lax.mul(x, c))

    def propose(carry):
        words, x_key, u_key = _split_n(carry[0], 3)
        _, x, v = lax.while_loop(lambda kxv: lax.le(kxv[2], zero), next_xv,
                                 (x_key, zero, const(dtype, -1.0)))
        u = _standard_uniform(u_key, (), dtype)
        return words, lax.mul(x, x), lax.mul(lax.mul(v, v), v), u

    # The initial carry is rejected, so the loop always proposes at least once.
    _, _, v, _ = lax.while_loop(rejected, propose, (words, zero, one, const(dtype, 2.0)))
    if log_space:
        log_u = lax.log1p(lax.neg(_standard_uniform(boost_key, (), dtype)))  # -Exponential
        log_boost = lax.select(lax.bitwise_or(boost_mask, lax.eq(log_u, zero)), zero,
                               lax.mul(log_u, lax.div(one, alpha_orig)))
        return lax.add(lax.add(lax.log(d), lax.log(v)), log_boost)
    u = lax.sub(one, _standard_uniform(boost_key, (), dtype))
    boost = lax.select(boost_mask, one, lax.pow(u, lax.div(one, alpha_orig)))
    return lax.mul(lax.mul(d, v), boost)


# --- the random_gamma primitive ----------------------------------------------------------
# jax.random's `random_gamma_p`: one sample per (key, alpha) pair. lamella binds it on
# raw key words, `random_gamma_p.bind(words, alphas, log_space=False)` with words of
# shape `alphas.shape + (2,)`. It evaluates and lowers as a loop over the entries
# (each runs its own rejection loop; the unbatched loop compiles several times faster
# than a vmapped one, as in JAX), differentiates by implicit reparameterisation and
# batches by lining the batch axes up in front.
random_gamma_p = standard_primitive("random_gamma")


@random_gamma_p.def_abstract_eval
def _random_gamma_abstract_eval(keys: ShapedArray, alphas: ShapedArray, *,
                                log_space: bool) -> ShapedArray:
    if keys.dtype != np.uint32 or tuple(keys.shape) != (*alphas.shape, 2):
        raise TypeError(f"random_gamma: keys must be uint32 words of shape alphas.shape + (2,) "
                        f"= {(*alphas.shape, 2)}, got {keys.dtype.name}{list(keys.shape)}")
    if not lnp.issubdtype(alphas.dtype, np.floating):
        raise TypeError(f"random_gamma: alphas must be floating, got {alphas.dtype.name}")
    return ShapedArray(alphas.shape, alphas.dtype)


def _random_gamma_loop(keys: Any, alphas: Any, *, log_space: bool) -> Any:
    shape = _shape(alphas)
    size = int(np.prod(shape, dtype=np.int64))
    flat = lax.map(lambda ka: _gamma_one(ka[0], ka[1], log_space),
                   (lax.reshape(keys, (size, 2)), lax.reshape(alphas, (size,))))
    return lax.reshape(flat, shape)


def _random_gamma_jvp(tangent: Any, samples: Any, keys: Any, alphas: Any, *,
                      log_space: bool) -> Any:
    if log_space:
        # d log x = dx / x; exp(log x) may round to 0, so use the smallest normal.
        x = lax.exp(samples)
        x = lax.select(lax.eq(x, lax.full_like(x, 0)),
                       lax.full_like(x, float(lnp.finfo(x.dtype).tiny)), x)
        slope = lax.div(lax.random_gamma_grad(alphas, x), x)
    else:
        slope = lax.random_gamma_grad(alphas, samples)
    return lax.mul(slope, tangent)


def _random_gamma_batch(args: Sequence[Any], dims: Sequence[Any], *, log_space: bool
                        ) -> tuple[Any, int]:
    keys, alphas = args
    key_dim, alpha_dim = dims
    size = _shape(keys)[key_dim] if key_dim is not not_mapped else _shape(alphas)[alpha_dim]

    def leading(x: Any, dim: Any) -> Any:
        if dim is not_mapped:
            return lax.broadcast_in_dim(x, (size, *_shape(x)), tuple(range(1, len(_shape(x)) + 1)))
        return lnp.moveaxis(x, dim, 0)

    return random_gamma_p.bind(leading(keys, key_dim), leading(alphas, alpha_dim),
                               log_space=log_space), 0


register_lowering(random_gamma_p, lower_fun(_random_gamma_loop, multiple_results=False))
ad.defjvp2(random_gamma_p, None, _random_gamma_jvp)
batching.primitive_batchers[random_gamma_p] = _random_gamma_batch


def _gamma(words: Any, a: Any, shape: tuple[int, ...], dtype: np.dtype,
           log_space: bool = False) -> Any:
    """Gamma(a) samples of `shape` (a broadcast to it) from raw key words."""
    a = broadcast_to(a, shape)
    size = int(np.prod(shape, dtype=np.int64))
    keys = _split_words(words, (size,))
    samples = random_gamma_p.bind(keys, lax.reshape(a, (size,)), log_space=log_space)
    return lax.reshape(samples, shape)


def _gamma_entry(name: str, key: Any, a: Any, shape: Any, dtype: Any, log_space: bool) -> Any:
    words, dtype, shape, (a,) = prepare(name, key, dtype, shape, a)
    return _gamma(words, a, shape, dtype, log_space)


@places_result
def gamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None,
          *, out_sharding: Any = None) -> Any:
    """Gamma samples of shape parameter `a` (scale 1), differentiable in `a`.

    >>> from lamella.random.keys import key
    >>> gamma(key(0), 2.0, (3,)).shape
    (3,)
    """
    return _gamma_entry("gamma", key, a, shape, dtype, False)


@places_result
def loggamma(key: Any, a: Any, shape: Sequence[int] | None = None, dtype: Any = None,
             *, out_sharding: Any = None) -> Any:
    """Logarithms of gamma samples, computed in log space (accurate for tiny `a`).

    >>> from lamella.random.keys import key
    >>> bool(lax.is_finite(loggamma(key(0), 1e-3, (50,))).all())
    True
    """
    return _gamma_entry("loggamma", key, a, shape, dtype, True)


@places_result
def beta(key: Any, a: Any, b: Any, shape: Sequence[int] | None = None,
         dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Beta(a, b) samples: G_a / (G_a + G_b) computed from log-gamma samples.

    >>> from lamella.random.keys import key
    >>> x = beta(key(0), 2.0, 3.0, (50,))
    >>> bool(((x > 0) & (x < 1)).all())
    True
    """
    words, dtype, shape, (a, b) = prepare("beta", key, dtype, shape, a, b)
    key_a, key_b = _split_n(words, 2)
    log_a = _gamma(key_a, a, shape, dtype, True)
    log_b = _gamma(key_b, b, shape, dtype, True)
    # Shifting by the larger log keeps both exponentials in range.
    log_max = lax.max(log_a, log_b)
    ga, gb = lax.exp(lax.sub(log_a, log_max)), lax.exp(lax.sub(log_b, log_max))
    return lax.div(ga, lax.add(ga, gb))


@places_result
def dirichlet(key: Any, alpha: Any, shape: Sequence[int] | None = None,
              dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """Dirichlet samples over the last axis of `alpha` (shape `(*shape, k)`).

    >>> import numpy as np
    >>> from lamella.random.keys import key
    >>> x = np.asarray(dirichlet(key(0), np.float32([1, 2, 3]), (4,)))
    >>> x.shape, bool(np.allclose(x.sum(-1), 1, atol=1e-5))
    ((4, 3), True)
    """
    words, _ = _single_key("dirichlet", key)
    dtype = float_dtype("dirichlet", dtype)
    alpha = param(alpha, dtype)
    ashape = _shape(alpha)
    if len(ashape) < 1:
        raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.shape {ashape}")
    if shape is None:
        shape = ashape[:-1]
    else:
        shape = _canonical_shape("dirichlet", shape)
        check_shape("dirichlet", shape, ashape[:-1])
    log_g = _gamma(words, alpha, (*shape, ashape[-1]), dtype, True)
    last = len(shape)
    top = lax.stop_gradient(lax.reduce_max(log_g, (last,)))
    e = lax.exp(lax.sub(log_g, lax.broadcast_in_dim(top, _shape(log_g),
                                                   tuple(range(last)))))
    total = lax.reduce_sum(e, (last,))
    return lax.div(e, lax.broadcast_in_dim(total, _shape(e), tuple(range(last))))


@places_result
def chisquare(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None,
              *, out_sharding: Any = None) -> Any:
    """Chi-square samples with `df` degrees of freedom: 2 * Gamma(df / 2).

    >>> from lamella.random.keys import key
    >>> bool((chisquare(key(0), 3.0, (20,)) > 0).all())
    True
    """
    words, dtype, shape, (df,) = prepare("chisquare", key, dtype, shape, df)
    return _chisquare(words, df, shape, dtype)


def _chisquare(words: Any, df: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    log_g = _gamma(words, lax.div(df, const(dtype, 2.0)), shape, dtype, True)
    return lax.mul(lax.exp(log_g), const(dtype, 2.0))


@places_result
def f(key: Any, dfnum: Any, dfden: Any, shape: Sequence[int] | None = None,
      dtype: Any = None, *, out_sharding: Any = None) -> Any:
    """F-distribution samples: (X_num / dfnum) / (X_den / dfden) for chi-square X.

    >>> from lamella.random.keys import key
    >>> f(key(0), 3.0, 5.0, (3,)).shape
    (3,)
    """
    words, dtype, shape, (dfnum, dfden) = prepare("f", key, dtype, shape, dfnum, dfden)
    dfnum, dfden = broadcast_to(dfnum, shape), broadcast_to(dfden, shape)
    key_den, key_num = _split_n(words, 2)
    num = lax.div(_chisquare(key_num, dfnum, shape, dtype), dfnum)
    den = lax.div(_chisquare(key_den, dfden, shape, dtype), dfden)
    return lax.div(num, den)


@places_result
def t(key: Any, df: Any, shape: Sequence[int] | None = None, dtype: Any = None,
      *, out_sharding: Any = None) -> Any:
    """Student's t samples: Z * sqrt((df / 2) / Gamma(df / 2)).

    >>> from lamella.random.keys import key
    >>> t(key(0), 4.0, (3,)).shape
    (3,)
    """
    words, dtype, shape, (df,) = prepare("t", key, dtype, shape, df)
    key_n, key_g = _split_n(words, 2)
    z = _normal_real(key_n, shape, dtype)
    half_df = broadcast_to(lax.div(df, const(dtype, 2.0)), shape)
    g = _gamma(key_g, half_df, shape, dtype)
    return lax.mul(z, lax.sqrt(lax.div(half_df, g)))


def _generalized_normal(words: Any, p: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    k_gamma, k_sign = _split_n(words, 2)
    inv_p = lax.div(const(dtype, 1.0), broadcast_to(p, shape))
    g = _gamma(k_gamma, inv_p, shape, dtype)
    return lax.mul(_random_sign(k_sign, shape, dtype), lax.pow(g, inv_p))


@places_result
def generalized_normal(key: Any, p: Any, shape: Sequence[int] = (), dtype: Any = None,
                       *, out_sharding: Any = None) -> Any:
    """Generalized normal samples, density proportional to exp(-|x|**p).

    >>> from lamella.random.keys import key
    >>> generalized_normal(key(0), 1.5, (3,)).shape
    (3,)
    """
    words, dtype, shape, (p,) = prepare("generalized_normal", key, dtype, shape, p,
                                        shape_optional=False)
    return _generalized_normal(words, p, shape, dtype)


@places_result
def ball(key: Any, d: int, p: float = 2, shape: Sequence[int] = (), dtype: Any = None,
         *, out_sharding: Any = None) -> Any:
    """Uniform samples from the unit p-norm ball in d dimensions (shape `(*shape, d)`).

    >>> import numpy as np
    >>> from lamella.random.keys import key
    >>> x = np.asarray(ball(key(0), 3, shape=(10,)))
    >>> x.shape, bool((np.linalg.norm(x, axis=-1) <= 1).all())
    ((10, 3), True)
    """
    words, _ = _single_key("ball", key)
    dtype = float_dtype("ball", dtype)
    d = concrete_int(d, "ball: d")
    shape = _canonical_shape("ball", shape)
    p = param(p, dtype)
    k1, k2 = _split_n(words, 2)
    g = _generalized_normal(k1, p, (*shape, d), dtype)
    e = lax.neg(lax.log1p(lax.neg(_standard_uniform(k2, shape, dtype))))
    norm = lax.reduce_sum(lnp.power(lax.abs(g), p), (len(shape),))
    scale = lnp.power(lax.add(norm, e), lax.div(const(dtype, 1.0), p))
    return lax.div(g, lax.broadcast_in_dim(scale, (*shape, d), tuple(range(len(shape)))))
