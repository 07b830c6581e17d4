"""Descriptive statistics: mode, rankdata and sem, with JAX's signatures.

mode and rankdata sort each slice once and read runs of equal values off the
sorted order (cumulative max/min of run boundaries), so both are jittable with
static shapes. Beyond JAX, which raises NotImplementedError: nan_policy='omit'
(SciPy's: NaNs ignored; rankdata gives them NaN ranks) and nan_policy='raise'
(a ValueError if a concrete input holds NaN; under a transformation the values
are unknown, and the error says so).

>>> import numpy as np
>>> rankdata(np.float32([3.0, 1.0, 3.0, 2.0]))
Array([3.5, 1. , 3.5, 2. ], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, partial
from typing import Any, NamedTuple

import numpy as np

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp
from lamella.scipy.stats._common import Array, ArrayLike, float_dtypes

__all__ = ["ModeResult", "mode", "rankdata", "sem"]

_POLICIES = ("propagate", "omit", "raise")


class ModeResult(NamedTuple):
    """The most frequent value of each slice and how often it occurs."""
    mode: Array
    count: Array


def _check_policy(name: str, a: Any, nan_policy: str) -> None:
    if nan_policy not in _POLICIES:
        raise ValueError(f"{name}: nan_policy must be one of {_POLICIES}, got {nan_policy!r}.")
    if nan_policy == "raise":
        if isinstance(a, lc.Tracer):
            raise ValueError(f"{name}: nan_policy='raise' must look at the values, which are "
                             "not known under jit, vmap or grad; check for NaN outside the "
                             "transformation, or use 'propagate' or 'omit'.")
        if np.isnan(np.asarray(a)).any():
            raise ValueError(f"{name}: the input contains NaN (nan_policy='raise').")


def _same(a: Array, b: Array) -> Array:
    """Equality with NaN equal to NaN (SciPy's and JAX's mode count NaNs as a value)."""
    return (a == b) | (lnp.isnan(a) & lnp.isnan(b)) if lnp.issubdtype(a.dtype, lnp.inexact) \
        else a == b


def _run_starts(s: Array) -> Array:
    """Positions along the last axis where a run of equal sorted values begins."""
    first = lnp.ones(s.shape[:-1] + (1,), bool)
    return lnp.concatenate([first, ~_same(s[..., 1:], s[..., :-1])], axis=-1)


def _mode_kernel(x: Array, omit: bool) -> tuple[Array, Array]:
    """(mode, count) over the last axis of x."""
    s = lnp.sort(x, axis=-1)
    i = lnp.arange(s.shape[-1])
    start = lax.cummax(lnp.where(_run_starts(s), i, 0), axis=s.ndim - 1)
    length = i - start + 1
    if omit:
        length = lnp.where(lnp.isnan(s), 0, length)
    best = lnp.argmax(length, axis=-1)
    count = lnp.take_along_axis(length, best[..., None], axis=-1)[..., 0]
    value = lnp.take_along_axis(s, best[..., None], axis=-1)[..., 0]
    if omit:
        value = lnp.where(count == 0, lnp.nan, value)
    return value, count.astype(lnp.int32)


@cache
def _compiled(kernel: Callable, **options: Any) -> Callable:
    """One jitted kernel per kernel and options."""
    return lc.jit(partial(kernel, **options))


def mode(a: ArrayLike, axis: int | None = 0, nan_policy: str = "propagate",
         keepdims: bool = False) -> ModeResult:
    """The most frequent value along `axis` (the smallest of equally frequent ones)
    and its count. NaNs count as one value ('propagate', as SciPy and JAX) or are
    ignored ('omit').

    >>> import numpy as np
    >>> mode(np.array([[3, 1, 2, 1], [2, 2, 5, 5]]), axis=1)
    ModeResult(mode=Array([1, 2], dtype=int32), count=Array([2, 2], dtype=int32))
    """
    _check_policy("mode", a, nan_policy)
    x = lnp.atleast_1d(lnp.asarray(a))
    if axis is None:
        x, axis = x.ravel(), 0
        kept_shape = (1,) * lnp.ndim(a) if keepdims else ()
    else:
        axis = int(axis)
        if not -x.ndim <= axis < x.ndim:
            raise ValueError(f"mode: axis {axis} is out of bounds for an array of dimension "
                             f"{x.ndim}.")
        axis %= x.ndim
        kept_shape = tuple(1 if i == axis else n for i, n in enumerate(x.shape)) if keepdims \
            else tuple(n for i, n in enumerate(x.shape) if i != axis)
    if x.shape[axis] == 0:
        default = lnp.result_type(float)
        return ModeResult(lnp.full(kept_shape, lnp.nan, default), lnp.zeros(kept_shape, default))
    omit = nan_policy == "omit" and lnp.issubdtype(x.dtype, lnp.inexact)
    value, count = _compiled(_mode_kernel, omit=omit)(lnp.moveaxis(x, axis, -1))
    return ModeResult(value.reshape(kept_shape), count.reshape(kept_shape))


def _rank_kernel(x: Array, method: str, nan_policy: str) -> Array:
    """Ranks over the last axis of x, in the default float dtype."""
    out = lnp.result_type(float)
    n = x.shape[-1]
    order = lnp.argsort(x, axis=-1, stable=True)
    inverse = lnp.argsort(order, axis=-1, stable=True)
    if method == "ordinal":
        ranks = (inverse + 1).astype(out)
    else:
        s = lnp.take_along_axis(x, order, axis=-1)
        starts = _run_starts(s)
        i = lnp.arange(n)
        last = s.ndim - 1
        if method == "dense":
            sorted_ranks = lnp.cumsum(starts, axis=-1).astype(out)
        else:
            ends = lnp.concatenate([starts[..., 1:], lnp.ones(s.shape[:-1] + (1,), bool)],
                                   axis=-1)
            low = lax.cummax(lnp.where(starts, i, 0), axis=last) + 1
            high = lax.cummin(lnp.where(ends, i, n), axis=last, reverse=True) + 1
            sorted_ranks = {"min": low, "max": high}.get(method, 0.5 * (low + high)).astype(out)
        ranks = lnp.take_along_axis(sorted_ranks, inverse, axis=-1)
    if lnp.issubdtype(x.dtype, lnp.inexact):
        nans = lnp.isnan(x)
        if nan_policy == "omit":
            ranks = lnp.where(nans, lnp.nan, ranks)
        else:
            ranks = lnp.where(lnp.any(nans, axis=-1, keepdims=True), lnp.nan, ranks)
    return ranks


def rankdata(a: ArrayLike, method: str = "average", *, axis: int | None = None,
             nan_policy: str = "propagate") -> Array:
    """Ranks 1..n of the values (of the flattened array, or along `axis`), ties
    resolved by `method`: 'average', 'min', 'max', 'dense' or 'ordinal'. A NaN
    makes its whole slice NaN ('propagate') or gets rank NaN itself ('omit').

    >>> import numpy as np
    >>> rankdata(np.array([[3, 1], [3, 2]]), "min", axis=0)
    Array([[1., 1.],
           [1., 2.]], dtype=float32)
    """
    if method not in ("average", "min", "max", "dense", "ordinal"):
        raise ValueError(f"rankdata: unknown method {method!r}; use 'average', 'min', 'max', "
                         "'dense' or 'ordinal'.")
    _check_policy("rankdata", a, nan_policy)
    x = lnp.asarray(a)
    if axis is None:
        x, axis = x.ravel(), -1
    elif not -max(x.ndim, 1) <= axis < max(x.ndim, 1):
        raise ValueError(f"rankdata: axis {axis} is out of bounds for an array of dimension "
                         f"{x.ndim}.")
    x = lnp.moveaxis(lnp.atleast_1d(x), axis, -1)
    ranks = _compiled(_rank_kernel, method=method, nan_policy=nan_policy)(x)
    return lnp.moveaxis(ranks, -1, axis)


def sem(a: ArrayLike, axis: int | None = 0, ddof: int = 1, nan_policy: str = "propagate", *,
        keepdims: bool = False) -> Array:
    """The standard error of the mean, std(a, ddof) / sqrt(n), along `axis` (None:
    all values); 'omit' leaves NaNs out of both.

    >>> import numpy as np
    >>> sem(np.float32([1.0, 2.0, 3.0, 4.0]))
    Array(0.64549726, dtype=float32)
    """
    _check_policy("sem", a, nan_policy)
    b = lnp.asarray(a)
    work, dtype = float_dtypes("sem", b)
    b = b.astype(work)
    if nan_policy == "omit":
        count = lnp.sum(~lnp.isnan(b), axis=axis, keepdims=keepdims)
        spread = lnp.nanstd(b, axis=axis, ddof=ddof, keepdims=keepdims)
    else:
        count = b.size if axis is None else b.shape[axis]
        spread = lnp.std(b, axis=axis, ddof=ddof, keepdims=keepdims)
    return (spread / lnp.sqrt(lnp.asarray(count, work))).astype(dtype)
