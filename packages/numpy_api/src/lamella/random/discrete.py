"""Discrete distributions and random selections (integers, choices, permutations).

`randint`, `bernoulli`, `rademacher`, `geometric`, `categorical`, `choice` and
`permutation` follow JAX's constructions (two words per integer reduced modulo
the span; comparisons of uniforms; the Gumbel-max trick; sorting by random
keys). `poisson` and `binomial` are JAX's rejection samplers, run as one
vectorised `while_loop` that redraws every position until all have accepted.

>>> from lamella.random.keys import PRNGKey
>>> randint(PRNGKey(42), (8,), 0, 10)
Array([4, 4, 1, 9, 9, 9, 7, 7], dtype=int32)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import lamella.numpy as lnp
from lamella import lax
from lamella.core import dtypes as core_dtypes
from lamella.core.trace import aval_of
from lamella.numpy.dtypes import promote_dtypes_inexact
from lamella.numpy.placement import places_result
from lamella.numpy.util import asarray_internal, canonicalize_axis, check_arraylike, concrete_int
from lamella.numpy.util import shape as _shape
from lamella.random._checks import (
    broadcast_shapes,
    broadcast_to,
    check_shape,
    const,
    int_dtype,
    param,
    prepare,
    sample_shape,
)
from lamella.random.continuous import _gumbel, _random_sign, _standard_uniform
from lamella.random.keys import (
    _canonical_shape,
    _random_bits,
    _single_key,
    _split_n,
    _split_words,
)

__all__ = ["bernoulli", "binomial", "categorical", "choice", "geometric", "multinomial",
           "permutation", "poisson", "rademacher", "randint"]

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _default_int() -> np.dtype:
    return core_dtypes.canonicalize_dtype(np.dtype(np.int64))


def _default_float() -> np.dtype:
    return core_dtypes.canonicalize_dtype(np.dtype(np.float64))


def _convert_and_clip(x: Any, dtype: np.dtype) -> Any:
    """Integer `x` clamped to the range of `dtype` it can represent, then converted."""
    xdtype = aval_of(x).dtype
    src, dst = lnp.iinfo(xdtype), lnp.iinfo(dtype)
    lo = np.array(max(dst.min, src.min), xdtype)
    hi = np.array(min(dst.max, src.max), xdtype)
    return lax.convert_element_type(lax.clamp(lo, x, hi), dtype)


def _as_int(name: str, x: Any) -> Any:
    check_arraylike(name, x)
    x = asarray_internal(x)
    if not lnp.issubdtype(x.dtype, np.integer):
        x = lax.convert_element_type(x, _default_int())
    return x


@places_result
def randint(key: Any, shape: Sequence[int], minval: Any, maxval: Any, dtype: Any = None,
            *, out_sharding: Any = None) -> Any:
    """Uniform integers in [minval, maxval), bounds clipped to `dtype`'s range.

    A `maxval` above the dtype's maximum still reaches it (e.g. `0, 256` for
    uint8); `maxval <= minval` gives `minval`.

    >>> from lamella.random.keys import key
    >>> randint(key(0), (4,), 0, 256, "uint8").dtype
    dtype('uint8')
    """
    words, _ = _single_key("randint", key)
    dtype = int_dtype("randint", dtype)
    shape = _canonical_shape("randint", shape)
    minval, maxval = _as_int("randint", minval), _as_int("randint", maxval)
    check_shape("randint", shape, _shape(minval), _shape(maxval))
    nbits = lnp.iinfo(dtype).bits
    top = _convert_and_clip(np.array(lnp.iinfo(dtype).max, dtype), maxval.dtype)
    maxval_out_of_range = broadcast_to(lax.gt(maxval, top), shape)
    minval = broadcast_to(_convert_and_clip(minval, dtype), shape)
    maxval = broadcast_to(_convert_and_clip(maxval, dtype), shape)
    k1, k2 = _split_n(words, 2)
    higher, lower = _random_bits(k1, nbits, shape), _random_bits(k2, nbits, shape)
    unsigned = np.dtype(_UINT[nbits])
    one = np.array(1, unsigned)
    span = lax.convert_element_type(lax.sub(maxval, minval), unsigned)
    span = lax.select(lax.le(maxval, minval), lax.full_like(span, 1), span)
    span = lax.select(lax.bitwise_and(maxval_out_of_range, lax.gt(maxval, minval)),
                      lax.add(span, one), span)
    # The full range 2**nbits wraps the span to 0, where JAX relies on XLA's
    # x % 0 == x (giving the lower word). XLA's constant folder crashes on a
    # constant x % 0 (SIGFPE, in jax too), so divide by 1 there and pick the
    # lower word explicitly: the same numbers.
    full_range = lax.eq(span, lax.full_like(span, 0))
    span = lax.select(full_range, lax.full_like(span, 1), span)
    # Two words per value halve the modulo bias: (hi * 2**nbits + lo) % span,
    # with 2**nbits % span computed as (2**(nbits/2) % span)**2 % span.
    multiplier = lax.rem(lax.full_like(span, 2 ** (nbits // 2)), span)
    multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
    offset = lax.add(lax.mul(lax.rem(higher, span), multiplier), lax.rem(lower, span))
    offset = lax.select(full_range, lower, lax.rem(offset, span))
    return lax.add(minval, lax.convert_element_type(offset, dtype))


@places_result
def bernoulli(key: Any, p: Any = 0.5, shape: Sequence[int] | None = None,
              mode: str = "low", *, out_sharding: Any = None) -> Any:
    """Booleans that are True with probability `p` (a float array or scalar).

    mode="low" compares one uniform with p; mode="high" uses two uniforms for
    a finer resolution of small probabilities.

    >>> from lamella.random.keys import PRNGKey
    >>> bernoulli(PRNGKey(0), 0.5, (4,))
    Array([False, False,  True,  True], dtype=bool)
    """
    words, _ = _single_key("bernoulli", key)
    p = asarray_internal(p)
    if not lnp.issubdtype(p.dtype, np.floating):
        raise TypeError(f"bernoulli probability `p` must have a floating dtype, got "
                        f"{p.dtype.name}")
    if mode not in ("low", "high"):
        raise ValueError(f"bernoulli: mode must be 'low' or 'high', got {mode!r}")
    shape = sample_shape("bernoulli", shape, p)
    dtype = p.dtype
    if mode == "low":
        return lnp.less(_standard_uniform(words, shape, dtype), p)
    u = _standard_uniform(words, (2, *shape), dtype)
    u1, u2 = (lax.index_in_dim(u, i, 0, keepdims=False) for i in (0, 1))
    u2 = lax.mul(u2, const(dtype, 2.0 ** -lnp.finfo(dtype).nmant))
    return lnp.less(u2, lnp.subtract(p, u1))


@places_result
def rademacher(key: Any, shape: Sequence[int] = (), dtype: Any = None,
               *, out_sharding: Any = None) -> Any:
    """Random signs: -1 or +1 with equal probability.

    >>> from lamella.random.keys import PRNGKey
    >>> rademacher(PRNGKey(0), (4,))
    Array([-1, -1,  1,  1], dtype=int32)
    """
    words, _ = _single_key("rademacher", key)
    dtype = core_dtypes.canonicalize_dtype(lnp.dtype(np.int64 if dtype is None else dtype))
    return _random_sign(words, _canonical_shape("rademacher", shape), dtype)


@places_result
def geometric(key: Any, p: Any, shape: Sequence[int] | None = None, dtype: Any = None,
              *, out_sharding: Any = None) -> Any:
    """Geometric samples (trials up to the first success, support 1, 2, ...).

    >>> from lamella.random.keys import key
    >>> bool((geometric(key(0), 0.3, (20,)) >= 1).all())
    True
    """
    words, _ = _single_key("geometric", key)
    dtype = int_dtype("geometric", dtype)
    check_arraylike("geometric", p)
    (p,) = promote_dtypes_inexact(asarray_internal(p))
    shape = sample_shape("geometric", shape, p)
    log_u = lax.log(_standard_uniform(words, shape, p.dtype))
    log_q = broadcast_to(lax.log1p(lax.neg(p)), shape)
    g = lax.add(lax.floor(lax.div(log_u, log_q)), const(p.dtype, 1.0))
    return lax.convert_element_type(g, dtype)


@places_result
def categorical(key: Any, logits: Any, axis: int = -1, shape: Sequence[int] | None = None,
                replace: bool = True, mode: str | None = None, *, out_sharding: Any = None) -> Any:
    """Category indices drawn with probabilities `softmax(logits)` along `axis`.

    `shape` (default: the logits' shape less `axis`) must end with that batch
    shape; leading dimensions draw more samples. Without replacement (the
    Gumbel-top-k trick) the samples along the leading dimensions are distinct.
    `mode` is passed to `gumbel`.

    >>> import numpy as np
    >>> from lamella.random.keys import key
    >>> categorical(key(0), np.log(np.float32([0.2, 0.8])), shape=(5,)).shape
    (5,)
    """
    words, _ = _single_key("categorical", key)
    check_arraylike("categorical", logits)
    (logits,) = promote_dtypes_inexact(asarray_internal(logits))
    lshape = _shape(logits)
    if not lshape:
        raise ValueError("categorical: logits must have at least one dimension")
    axis = canonicalize_axis(axis, len(lshape)) - len(lshape)
    batch_shape = lshape[:len(lshape) + axis] + lshape[len(lshape) + axis + 1:]
    if shape is None:
        shape = batch_shape
    else:
        shape = _canonical_shape("categorical", shape)
        check_shape("categorical", shape, batch_shape)
    prefix = shape[:len(shape) - len(batch_shape)]
    logits_shape = list(shape[len(shape) - len(batch_shape):])
    logits_shape.insert(axis % len(lshape), lshape[axis])
    index_dtype = _default_int()
    if replace:
        noisy = lnp.add(_gumbel(words, (*prefix, *logits_shape), logits.dtype, mode),
                        lax.expand_dims(logits, tuple(range(len(prefix)))))
        return lax.argmax(noisy, len(prefix) + len(lshape) + axis, index_dtype)
    noisy = lnp.add(logits, _gumbel(words, tuple(logits_shape), logits.dtype, mode))
    k = math.prod(prefix)
    if k > lshape[axis]:
        raise ValueError(f"categorical: number of samples without replacement ({k}) cannot "
                         f"exceed the number of categories ({lshape[axis]})")
    moved = _moveaxis_last(noisy, len(lshape) + axis)
    _, indices = lax.top_k(moved, k)
    rank = len(batch_shape) + 1
    indices = lax.transpose(indices, (rank - 1, *range(rank - 1)))
    return lax.convert_element_type(lax.reshape(indices, shape), index_dtype)


def _moveaxis_last(x: Any, axis: int) -> Any:
    rank = len(_shape(x))
    return lax.transpose(x, (*(a for a in range(rank) if a != axis), axis))


def _shuffle(words: Any, x: Any, axis: int) -> Any:
    """`x` shuffled along `axis` by sorting on random keys (JAX's rounds of sorts)."""
    size = math.prod(_shape(x))
    # Enough rounds that 32-bit sort keys collide with negligible probability.
    rounds = int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        words, sub = _split_n(words, 2)
        sort_keys = _random_bits(sub, 32, _shape(x))
        _, x = lax.sort_key_val(sort_keys, x, axis)
    return x


def _take(arr: Any, indices: Any, axis: int) -> Any:
    """`arr` indexed along `axis` by integer `indices` (NumPy's take, indices in range)."""
    shape = _shape(arr)
    ishape = _shape(indices)
    rest = len(shape) - axis - 1
    dnums = lax.GatherDimensionNumbers(
        offset_dims=(*range(axis), *range(axis + len(ishape), axis + len(ishape) + rest)),
        collapsed_slice_dims=(axis,), start_index_map=(axis,))
    slice_sizes = (*shape[:axis], 1, *shape[axis + 1:])
    return lax.gather(arr, lax.expand_dims(indices, (len(ishape),)), dnums, slice_sizes,
                      mode="promise_in_bounds")


@places_result
def permutation(key: Any, x: Any, axis: int = 0, independent: bool = False,
                *, out_sharding: Any = None) -> Any:
    """A random permutation of `range(x)` (x an int) or of `x`'s entries along `axis`.

    With `independent`, each slice along `axis` is permuted on its own;
    otherwise whole slices move together.

    >>> from lamella.random.keys import PRNGKey
    >>> permutation(PRNGKey(42), 5).shape
    (5,)
    """
    words, _ = _single_key("permutation", key)
    if isinstance(x, (int, np.integer)) or not _shape(x) and not isinstance(x, float):
        n = concrete_int(x, "permutation: an integer x")
        if n < 0:
            raise ValueError(f"permutation: x must be non-negative, got {n}")
        return _shuffle(words, lax.iota(_default_int(), n), 0)
    check_arraylike("permutation", x)
    x = asarray_internal(x)
    axis = canonicalize_axis(axis, len(_shape(x)))
    if independent or len(_shape(x)) == 1:
        return _shuffle(words, x, axis)
    order = _shuffle(words, lax.iota(_default_int(), _shape(x)[axis]), 0)
    return _take(x, order, axis)


def _searchsorted_left(sorted_1d: Any, values: Any) -> Any:
    """For each value, the number of entries of `sorted_1d` below it."""
    n = _shape(sorted_1d)[0]
    vshape = _shape(values)
    below = lax.lt(lax.broadcast_in_dim(sorted_1d, (*vshape, n), (len(vshape),)),
                   lax.expand_dims(values, (len(vshape),)))
    return lax.reduce_sum(lax.convert_element_type(below, np.int32), (len(vshape),))


def choice(key: Any, a: Any, shape: Sequence[int] = (), replace: bool = True,
           p: Any = None, axis: int = 0, mode: str | None = None) -> Any:
    """Random entries of `a` along `axis` (or of `range(a)` for an int `a`).

    With probabilities `p` (one per entry) the draws use inverse-CDF sampling
    (with replacement) or the Gumbel-top-k trick (without), whose Gumbel samples
    take `mode` ("low" or "high", as `gumbel`'s).

    >>> import numpy as np
    >>> from lamella.random.keys import key
    >>> choice(key(0), np.int32([10, 20, 30]), (4,)).shape
    (4,)
    """
    words, _ = _single_key("choice", key)
    shape = _canonical_shape("choice", shape)
    scalar = isinstance(a, (int, np.integer)) or not isinstance(a, (list, tuple)) and not \
        _shape(a)
    if scalar:
        n_inputs = concrete_int(a, "choice: an integer a")
        arr = None
    else:
        check_arraylike("choice", a)
        arr = asarray_internal(a)
        axis = canonicalize_axis(axis, len(_shape(arr)))
        n_inputs = _shape(arr)[axis]
    n_draws = math.prod(shape)
    out_dtype = _default_int() if arr is None else arr.dtype
    if n_draws == 0:
        out_shape = shape if arr is None else (*_shape(arr)[:axis], *shape,
                                              *_shape(arr)[axis + 1:])
        return lax.full(out_shape, 0, out_dtype)
    if n_inputs <= 0:
        raise ValueError("choice: a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(f"choice: cannot take a larger sample ({n_draws}) than the population "
                         f"({n_inputs}) when replace=False")
    if p is None:
        if replace:
            ind = randint(words, shape, 0, n_inputs)
        else:
            perm = permutation(words, n_inputs if arr is None else arr, axis)
            ind = None
            perm = lax.slice_in_dim(perm, 0, n_draws, 1, 0 if arr is None else axis)
            if arr is None:
                return lax.reshape(perm, shape)
            pshape = _shape(perm)
            return lax.reshape(perm, (*pshape[:axis], *shape, *pshape[axis + 1:]))
    else:
        check_arraylike("choice", p)
        (p,) = promote_dtypes_inexact(asarray_internal(p))
        if _shape(p) != (n_inputs,):
            raise ValueError(f"choice: p must be None or have shape ({n_inputs},) to match a, "
                             f"got shape {_shape(p)}")
        if replace:
            cdf = lax.cumsum(p, 0)
            total = lax.index_in_dim(cdf, n_inputs - 1, 0, keepdims=False)
            r = lax.mul(total, lax.sub(const(p.dtype, 1.0),
                                        _standard_uniform(words, shape, p.dtype)))
            ind = _searchsorted_left(cdf, r)
        else:
            g = lax.add(_gumbel(words, (n_inputs,), p.dtype, mode), lax.log(p))
            ind = lax.reshape(lax.top_k(g, n_draws)[1], shape)
        ind = lax.convert_element_type(ind, _default_int())
    return ind if arr is None else _take(arr, ind, axis)


def _poisson_knuth(words: Any, lam: Any, shape: tuple[int, ...], dtype: np.dtype,
                   max_iters: int) -> Any:
    """Knuth's product of uniforms: count draws until the product falls below exp(-lam)."""
    neg_lam = lax.neg(lam)

    def body(carry):
        i, k, words, log_prod = carry
        words, sub = _split_n(words, 2)
        k = lax.select(lax.gt(log_prod, neg_lam), lax.add(k, np.array(1, dtype)), k)
        u = _standard_uniform(sub, shape, np.dtype(np.float32))
        return lax.add(i, np.int32(1)), k, words, lax.add(log_prod, lax.log(u))

    def cond(carry):
        i, _, _, log_prod = carry
        return lax.bitwise_and(_any(lax.gt(log_prod, neg_lam)), lax.lt(i, max_iters))

    init = (np.int32(0), lax.full(shape, 0, dtype), words, lax.full(shape, 0, np.float32))
    k = lax.while_loop(cond, body, init)[1]
    return lax.sub(k, np.array(1, dtype))


def _poisson_rejection(words: Any, lam: Any, shape: tuple[int, ...], dtype: np.dtype,
                       max_iters: int) -> Any:
    """Hörmann's transformed rejection with squeeze (PTRS), for lam >= 10."""
    f32 = lam.dtype
    log_lam = lax.log(lam)
    b = 0.931 + 2.53 * lax.sqrt(lam)
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def propose(sub0, sub1):
        u = _standard_uniform(sub0, shape, f32) - 0.5
        v = _standard_uniform(sub1, shape, f32)
        u_shifted = 0.5 - lax.abs(u)
        k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
        s = lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = -lam + k * log_lam - lax.lgamma(k + 1)
        accept1 = (u_shifted >= 0.07) & (v <= v_r)
        reject = (k < 0) | ((u_shifted < 0.013) & (v > u_shifted))
        return k, accept1 | (~reject & (s <= t))

    return lax.convert_element_type(_accept_reject(words, shape, f32, max_iters, propose), dtype)


def _any(x: Any) -> Any:
    return lax.reduce_or(x, tuple(range(len(_shape(x)))))


def _accept_reject(words: Any, shape: tuple[int, ...], dtype: np.dtype, max_iters: Any,
                   propose: Any) -> Any:
    """The rejection loop of the PTRS/BTRS samplers.

    Each round splits `words` into three, calls `propose(sub0, sub1) -> (k,
    accept)` and keeps k where accepted, until every position has accepted
    once or `max_iters` rounds have run; positions never accepted stay -1.
    """
    def body(carry):
        i, k_out, accepted, words = carry
        words, sub0, sub1 = _split_n(words, 3)
        k, accept = propose(sub0, sub1)
        return (lax.add(i, np.int32(1)), lax.select(accept, k, k_out), accepted | accept,
                words)

    def cond(carry):
        i, _, accepted, _ = carry
        return lax.bitwise_and(_any(lax.bitwise_not(accepted)), lax.lt(i, max_iters))

    init = (np.int32(0), lax.full(shape, -1, dtype), lax.full(shape, False, np.bool_), words)
    return lax.while_loop(cond, body, init)[1]


def _iter_cap(dtype: np.dtype) -> np.int32:
    return np.int32(min(np.iinfo(np.int32).max, int(lnp.iinfo(dtype).max)))


@places_result
def poisson(key: Any, lam: Any, shape: Sequence[int] | None = None, dtype: Any = None,
            *, out_sharding: Any = None) -> Any:
    """Poisson samples of rate `lam` (Knuth's method below 10, transformed rejection above).

    >>> from lamella.random.keys import key
    >>> poisson(key(0), 3.0, (4,)).dtype
    dtype('int32')
    """
    words, _ = _single_key("poisson", key)
    dtype = int_dtype("poisson", dtype)
    lam = param(lam, np.dtype(np.float32))
    shape = sample_shape("poisson", shape, lam)
    lam = broadcast_to(lam, shape)
    use_knuth = lnp.isnan(lam) | (lam < 10)
    lam_knuth = lax.select(use_knuth, lam, lax.full_like(lam, 0.0))
    # Rejection's acceptance rate only grows with lam: park Knuth's positions high.
    lam_rejection = lax.select(use_knuth, lax.full_like(lam, 1e5), lam)
    cap = _iter_cap(dtype)
    result = lax.select(use_knuth, _poisson_knuth(words, lam_knuth, shape, dtype, cap),
                        _poisson_rejection(words, lam_rejection, shape, dtype, cap))
    return lax.select(lam == 0, lax.full_like(result, 0), result)


def _stirling_tail(k: Any) -> Any:
    """log(k!) - [(k + 1/2) log(k + 1) - (k + 1) + log(2 pi)/2]: a table below 10, else series."""
    dtype = k.dtype
    table = [math.lgamma(j + 1) - (j + 0.5) * math.log(j + 1) + (j + 1)
             - 0.5 * math.log(2 * math.pi) for j in range(10)]
    kp1sq = (k + 1) * (k + 1)
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
    out = approx
    for j in reversed(range(10)):
        out = lax.select(lax.eq(k, const(dtype, j)), lax.full_like(k, table[j]), out)
    return out


def _binomial_inversion(words: Any, count: Any, prob: Any, shape: tuple[int, ...],
                        max_iters: Any) -> Any:
    """Sums of geometric waiting times: the number of successes before passing `count`."""
    log1m = lax.log1p(lax.neg(prob))

    def body(carry):
        i, num_geom, geom_sum, words = carry
        sub, words = _split_n(words, 2)
        num_geom = lax.select(geom_sum <= count, num_geom + 1, num_geom)
        u = _standard_uniform(sub, shape, prob.dtype)
        geom_sum = geom_sum + lax.ceil(lax.log(u) / log1m)
        return lax.add(i, np.int32(1)), num_geom, geom_sum, words

    def cond(carry):
        i, _, geom_sum, _ = carry
        return lax.bitwise_and(_any(geom_sum <= count), lax.lt(i, max_iters))

    zeros = lax.full(shape, 0, prob.dtype)
    k = lax.while_loop(cond, body, (np.int32(0), zeros, zeros, words))[1]
    return k - 1


def _btrs(words: Any, count: Any, prob: Any, shape: tuple[int, ...], max_iters: Any) -> Any:
    """Hörmann's BTRS transformed rejection for binomials with count * prob > 10."""
    stddev = lax.sqrt(count * prob * (1 - prob))
    b = 1.15 + 2.53 * stddev
    a = -0.0873 + 0.0248 * b + 0.01 * prob
    c = count * prob + 0.5
    v_r = 0.92 - 4.2 / b
    r = prob / (1 - prob)
    alpha = (2.83 + 5.1 / b) * stddev
    m = lax.floor((count + 1) * prob)

    def propose(sub0, sub1):
        u = _standard_uniform(sub0, shape, prob.dtype) - 0.5
        v = _standard_uniform(sub1, shape, prob.dtype)
        us = 0.5 - lax.abs(u)
        accept1 = (us >= 0.07) & (v <= v_r)
        k = lax.floor((2 * a / us + b) * u + c)
        reject = (k < 0) | (k > count)
        v = lax.log(v * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * lax.log((m + 1) / (r * (count - m + 1)))
              + (count + 1) * lax.log((count - m + 1) / (count - k + 1))
              + (k + 0.5) * lax.log(r * (count - k + 1) / (k + 1))
              + _stirling_tail(m) + _stirling_tail(count - m)
              - _stirling_tail(k) - _stirling_tail(count - k))
        return k, accept1 | (~reject & (v <= ub))

    return _accept_reject(words, shape, prob.dtype, max_iters, propose)


def binomial(key: Any, n: Any, p: Any, shape: Sequence[int] | None = None,
             dtype: Any = None) -> Any:
    """Binomial samples of `n` trials with success probability `p` (as floats).

    Inversion (geometric waiting times) when n * min(p, 1 - p) <= 10, BTRS
    rejection otherwise. NaN or negative n, or p outside [0, 1], give NaN.

    >>> from lamella.random.keys import key
    >>> x = binomial(key(0), 10.0, 0.5, (5,))
    >>> bool(((x >= 0) & (x <= 10)).all())
    True
    """
    words, dtype, shape, (count, prob) = prepare("binomial", key, dtype, shape, n, p)
    count, prob = broadcast_to(count, shape), broadcast_to(prob, shape)
    p_lt_half = prob < 0.5
    q = lax.select(p_lt_half, prob, 1.0 - prob)
    count_nan_or_neg = lnp.isnan(count) | (count < 0.0)
    count_inf = lnp.isinf(count)
    q_is_nan = lnp.isnan(q)
    q_l_0 = q < 0.0
    q = lax.select(q_is_nan | q_l_0, lax.full_like(q, 0.01), q)
    use_inversion = count_nan_or_neg | (count * q <= 10.0)
    count_inv = lax.select(use_inversion, count, lax.full_like(count, 0.0))
    count_btrs = lax.select(use_inversion, lax.full_like(count, 1e4), count)
    q_btrs = lax.select(use_inversion, lax.full_like(q, 0.5), q)
    cap = np.int32(np.iinfo(np.int32).max)
    samples = lax.select(use_inversion, _binomial_inversion(words, count_inv, q, shape, cap),
                         _btrs(words, count_btrs, q_btrs, shape, cap))
    invalid = q_l_0 | q_is_nan | count_nan_or_neg
    samples = lax.select(invalid, lax.full_like(samples, np.nan), samples)
    samples = lax.select(count_inf & ~invalid, lax.full_like(samples, np.inf), samples)
    return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                      count - samples)


def multinomial(key: Any, n: Any, p: Any, *, shape: Sequence[int] | None = None,
                dtype: Any = None, unroll: int | bool = 1) -> Any:
    """Multinomial counts of `n` trials over the categories on `p`'s last axis.

    As JAX: one binomial draw per category in a `lax.scan`, each of the trials
    left with the probability of that category given the later ones. `shape`
    (default `p.shape`) is the full result shape, categories last; `n`
    broadcasts to `shape[:-1]` and `p` to `shape`.

    >>> import numpy as np
    >>> from lamella.random.keys import key
    >>> counts = multinomial(key(0), 10, np.float32([0.2, 0.3, 0.5]), shape=(4, 3))
    >>> counts.shape, np.asarray(counts).sum(-1).tolist()
    ((4, 3), [10.0, 10.0, 10.0, 10.0])
    """
    words, _ = _single_key("multinomial", key)
    check_arraylike("multinomial", n, p)
    n, p = promote_dtypes_inexact(asarray_internal(n), asarray_internal(p))
    out_dtype = core_dtypes.canonicalize_dtype(lnp.dtype(np.float64 if dtype is None else dtype))
    shape = _shape(p) if shape is None else _canonical_shape("multinomial", shape)
    if not shape:
        raise ValueError(f"multinomial: p (shape {_shape(p)}) and shape (here {shape}) need a "
                         "last axis of categories")
    for what, x, target in (("n", n, shape[:-1]), ("p", p, shape)):
        if broadcast_shapes(_shape(x), target) != target:
            raise ValueError(f"multinomial: {what} of shape {_shape(x)} does not broadcast to "
                             f"{target} (shape {shape} for p, shape[:-1] for n)")
    n, p = broadcast_to(n, shape[:-1]), broadcast_to(p, shape)
    p = lax.transpose(p, (len(shape) - 1, *range(len(shape) - 1)))
    remaining = lax.cumsum(p, 0, reverse=True)
    # A category with no probability left after it gets ratio 0 (JAX's 0/1, not 0/0).
    ratios = lax.div(p, lnp.where(remaining == 0, 1, remaining))

    def step(remainder, ratio_words):
        ratio, sub = ratio_words
        count = binomial(sub, remainder, lnp.clip(ratio, 0, 1), dtype=remainder.dtype)
        return lax.sub(remainder, count), count

    _, counts = lax.scan(step, n, (ratios, _split_words(words, (shape[-1],))), unroll=unroll)
    counts = lax.transpose(counts, (*range(1, len(shape)), 0))
    return lax.convert_element_type(counts, out_dtype)
