"""`jax.nn`'s non-activation helpers: the softmax family (shared with
lamella.scipy.special through `lamella.ops.special`), `logmeanexp`, `standardize`
and `one_hot`, with JAX 0.10.2's signatures, defaults and dtypes.

>>> import numpy as np
>>> one_hot(np.int32([0, 2]), 3)
Array([[1., 0., 0.],
       [0., 0., 1.]], dtype=float32)
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

import lamella.core as lc
import lamella.numpy as lnp
from lamella import lax
from lamella.nn._checks import arraylike
from lamella.ops import special
from lamella.ops.special import log_softmax, logsumexp

__all__ = ["log_softmax", "logmeanexp", "logsumexp", "one_hot", "softmax", "standardize"]

Axis = int | Sequence[int] | None


def _static_axis(axis: Axis) -> Axis:
    return tuple(axis) if isinstance(axis, list) else axis


def softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
    """exp(x) / sum(exp(x)) along `axis` (an int, a tuple, or None for all axes).

    Masked-out elements (`where` False) are 0; any +inf in a row makes it NaN, as in
    JAX. Differentiated with a stop_gradient on the maximum, or with JAX's custom JVP
    when `lamella.core.config.update("jax_softmax_custom_jvp", True)`.

    >>> import numpy as np
    >>> softmax(np.float32([0.0, 0.0, np.inf]))
    Array([nan, nan, nan], dtype=float32)
    >>> softmax(np.float32([1.0, 1.0]))
    Array([0.5, 0.5], dtype=float32)
    """
    return special.softmax(x, axis, where)


@lc.jit(static_argnames=("axis", "keepdims"))
def _logmeanexp(x: Any, axis: Axis, where: Any, keepdims: bool) -> Any:
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    included = lnp.ones(x.shape, bool) if where is None else lnp.broadcast_to(where, x.shape)
    count = lnp.sum(included, axis=axis, keepdims=keepdims, dtype=lse.dtype)
    return lse - lnp.log(count)


def logmeanexp(x: Any, axis: Axis = None, where: Any = None, keepdims: bool = False) -> Any:
    """log(mean(exp(x))) = logsumexp(x) - log(n) over `axis`, where n counts the
    elements `where` includes.

    >>> import numpy as np
    >>> logmeanexp(np.float32([0.0, 0.0, 0.0]))
    Array(0., dtype=float32)
    """
    return _logmeanexp(arraylike("logmeanexp", x), _static_axis(axis), where, bool(keepdims))


@lc.jit(static_argnames=("axis", "algorithm"))
def _standardize(x: Any, axis: Axis, mean: Any, variance: Any, epsilon: Any, where: Any,
                 algorithm: str) -> Any:
    if mean is None:
        mean = lnp.mean(x, axis, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = lnp.mean(lnp.square(x - mean), axis, keepdims=True, where=where)
        else:
            # E[x^2] - E[x]^2 can come out slightly negative from rounding: clip it so
            # rsqrt sees a variance (JAX's "fast" algorithm, its default).
            variance = lnp.mean(lnp.square(x), axis, keepdims=True, where=where)
            variance = lnp.clip(variance - lnp.square(mean), 0)
    return (x - mean) * lax.rsqrt(variance + epsilon)


def standardize(x: Any, axis: Axis = -1, mean: Any = None, variance: Any = None,
                epsilon: Any = 1e-5, where: Any = None, *, algorithm: str = "fast") -> Any:
    """(x - mean) / sqrt(variance + epsilon) along `axis`.

    Args:
      x: the input.
      axis: the axis or axes to standardise over (None: all).
      mean, variance: use these instead of the (masked) mean and variance of `x`.
      epsilon: added to the variance.
      where: a boolean mask of the elements the statistics are taken over.
      algorithm: "fast" (JAX's default) computes the variance as E[x²] - E[x]² clipped
        at 0; "stable" as E[(x - E[x])²], which does not cancel for large means.

    >>> import numpy as np
    >>> standardize(np.float32([1.0, 3.0]), epsilon=0.0)
    Array([-1.,  1.], dtype=float32)
    """
    x = arraylike("standardize", x)
    if lnp.issubdtype(x.dtype, lnp.complexfloating):
        raise ValueError(f"standardize is not defined for complex input (got {x.dtype})")
    if variance is None and algorithm not in ("fast", "stable"):
        raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
    if not lnp.issubdtype(x.dtype, lnp.inexact):
        x = x.astype(lnp.result_type(x.dtype, 1.0))
    return _standardize(x, _static_axis(axis), mean, variance, epsilon, where, algorithm)


@lc.jit(static_argnames=("num_classes", "dtype", "axis"))
def _one_hot(x: Any, num_classes: int, dtype: np.dtype, axis: int) -> Any:
    classes_shape = [1] * (x.ndim + 1)
    classes_shape[axis] = num_classes
    classes = lax.broadcasted_iota(x.dtype, tuple(classes_shape), axis)
    return (lnp.expand_dims(x, axis) == classes).astype(dtype)


def one_hot(x: Any, num_classes: int, *, dtype: Any = None, axis: int = -1) -> Any:
    """One-hot encodes integer indices: a new axis of length `num_classes` at `axis`,
    1 at each index and 0 elsewhere (indices outside [0, num_classes) give all zeros).

    Args:
      x: integer indices (other dtypes work but are deprecated, as in JAX).
      num_classes: the length of the new axis (a concrete int).
      dtype: the result dtype (default: the default float dtype).
      axis: where the new axis goes.

    >>> import numpy as np
    >>> one_hot(np.int32([1, 5]), 3, dtype=np.int32, axis=0)
    Array([[0, 0],
           [1, 0],
           [0, 0]], dtype=int32)
    """
    try:
        num_classes = operator.index(num_classes)
    except TypeError:
        raise TypeError("one_hot: num_classes must be a concrete integer (a Python int or a "
                        f"non-traced 0-d integer array), got {type(num_classes).__name__}; "
                        "under jit, mark it static") from None
    x = arraylike("one_hot", x)
    if isinstance(axis, str):
        raise ValueError(f"one_hot: axis {axis!r} is a named (vmap) axis, which lamella does "
                         "not support; pass an integer axis")
    axis = operator.index(axis)
    if not -(x.ndim + 1) <= axis <= x.ndim:
        raise ValueError(f"one_hot: axis {axis} is out of bounds for the result's "
                         f"{x.ndim + 1} dimensions")
    if not lnp.issubdtype(x.dtype, lnp.integer):
        warnings.warn(f"lamella.nn.one_hot input should be integer-typed; got dtype={x.dtype}",
                      DeprecationWarning, stacklevel=2)
    dtype = lc.canonicalize_dtype(np.dtype(np.float64 if dtype is None else dtype))
    return _one_hot(x, num_classes, dtype, axis % (x.ndim + 1))
