"""logsumexp, softmax and log_softmax: the log-domain reductions `lamella.nn` and
`lamella.scipy.special` share, with JAX 0.10.2's names, signatures and numerics.

All three shift by the maximum before exponentiating, so nothing overflows; rows
that are all -inf (or entirely masked out by `where`) give -inf / zeros rather
than NaN in the forward pass, as in JAX. `softmax` has JAX's two derivative
rules: by default the maximum is a `stop_gradient` constant; with the
`softmax_custom_jvp` flag on (`lamella.core.config.update("jax_softmax_custom_jvp",
True)`) a custom JVP `y * (t - sum(y * t))` is used instead, which keeps fewer
residuals for reverse mode.

>>> import numpy as np
>>> logsumexp(np.float32([0.0, 0.0]))
Array(0.6931472, dtype=float32)
>>> softmax(np.float32([0.0, 0.0, np.log(2.0)]))
Array([0.25, 0.25, 0.5 ], dtype=float32)
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

import lamella.core as lc
import lamella.numpy as lnp
from lamella import lax

__all__ = ["log_softmax", "logsumexp", "softmax"]

Axis = int | Sequence[int] | None

def _as_inexact(name: str, *args: Any) -> list[Any]:
    """The arguments as arrays of one inexact dtype (integers and bools become the
    default float), as JAX's `promote_args_inexact` gives them."""
    for i, a in enumerate(args):
        if isinstance(a, (list, tuple)) or a is None:
            raise TypeError(f"{name}: argument {i} must be an array, got {type(a).__name__}"
                            " (wrap lists with lamella.numpy.asarray)")
    arrays = [lnp.asarray(a) for a in args]
    dtype = lnp.result_type(*arrays)
    if not lnp.issubdtype(dtype, lnp.inexact):
        dtype = lnp.result_type(dtype, 1.0)
    return [a if a.dtype == dtype else a.astype(dtype) for a in arrays]


def _axes(name: str, axis: Axis, ndim: int) -> tuple[int, ...]:
    """`axis` as a sorted tuple of non-negative axes of an `ndim`-dimensional array."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"{name}: axis {a} is out of bounds for an array of "
                             f"dimension {ndim}")
        out.append(a % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {axis}")
    return tuple(sorted(out))


def _hashable_axis(axis: Axis) -> Axis:
    return tuple(axis) if isinstance(axis, list) else axis


# --- logsumexp ------------------------------------------------------------------------
def logsumexp(a: Any, axis: Axis = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False, where: Any = None) -> Any:
    """log(sum(b * exp(a))) over `axis`, without overflow (`scipy.special.logsumexp`).

    Args:
      a: the input array (real or complex).
      axis: the axis or axes to reduce; None reduces all.
      b: scaling factors for `exp(a)`, broadcastable with `a`; entries with `b == 0`
        contribute nothing even where `a` is inf.
      keepdims: keep the reduced axes as size-1 dimensions.
      return_sign: return `(log|sum|, sign(sum))` instead of NaN for negative sums.
      where: a boolean mask of the elements to include.

    Returns:
      The reduction, or a `(result, sign)` pair when `return_sign` is true.

    >>> import numpy as np
    >>> logsumexp(np.float32([1000.0, 1000.0]))
    Array(1000.6932, dtype=float32)
    >>> logsumexp(np.float32([0.0, 0.0]), b=np.float32([1.0, -2.0]), return_sign=True)
    (Array(0., dtype=float32), Array(-1., dtype=float32))
    """
    return _logsumexp(a, _hashable_axis(axis), b, bool(keepdims), bool(return_sign), where)


# Not compiled as a whole, as in JAX: XLA would fuse the scaling by b into the sum (one
# rounding fewer), and the result would no longer be JAX's, bit for bit.
def _logsumexp(a: Any, axis: Axis, b: Any, keepdims: bool, return_sign: bool,
               where: Any) -> Any:
    if where is not None:
        a = lnp.where(where, a, 0)
    if b is None:
        (a,) = _as_inexact("logsumexp", a)
    else:
        a, b = _as_inexact("logsumexp", a, b)
        a = lnp.where(b != 0, a, -np.inf)
    axes = _axes("logsumexp", axis, a.ndim)
    is_complex = lnp.issubdtype(a.dtype, lnp.complexfloating)
    amax = lnp.max(lnp.real(a), axis=axes, keepdims=keepdims, where=where, initial=-np.inf)
    # An infinite maximum cannot be subtracted (inf - inf); shifting by zero is exact
    # there, and the shift is a constant for differentiation in every case.
    amax = lax.stop_gradient(lnp.where(lnp.isfinite(amax), amax, lnp.zeros_like(amax)))
    amax_kept = amax if keepdims else lnp.expand_dims(amax, axes)
    exp_a = lnp.exp(a - amax_kept.astype(a.dtype))
    if b is not None:
        exp_a = exp_a * b
    sumexp = lnp.sum(exp_a, axis=axes, keepdims=keepdims, where=where)
    sign = lax.sign(sumexp)
    if return_sign or not is_complex:
        sumexp = lnp.abs(sumexp)
    out = lnp.log(sumexp) + amax.astype(sumexp.dtype)
    if return_sign:
        return out, sign
    if b is not None and not is_complex:
        out = lnp.where(sign < 0, lnp.full_like(out, np.nan), out)
    return out


# --- softmax --------------------------------------------------------------------------
def _softmax_terms(x: Any, axis: Axis, where: Any, initial: Any, shift_is_constant: bool
                   ) -> Any:
    x_max = lnp.max(x, axis, where=where, initial=initial, keepdims=True)
    if shift_is_constant:
        x_max = lax.stop_gradient(x_max)
    x_safe = x if where is None else lnp.where(where, x, initial)
    unnormalized = lnp.exp(x_safe - x_max)
    result = unnormalized / lnp.sum(unnormalized, axis, where=where, keepdims=True)
    if where is not None:
        result = lnp.where(where, result, 0)
    return result


def _softmax_with_jvp_rule(x: Any, axis: Axis, where: Any, initial: Any) -> Any:
    return _softmax_terms(x, axis, where, initial, shift_is_constant=False)


_softmax_with_jvp_rule = lc.custom_jvp(_softmax_with_jvp_rule, nondiff_argnums=(1,))


@_softmax_with_jvp_rule.defjvp
def _softmax_jvp(axis: Axis, primals: tuple, tangents: tuple) -> tuple[Any, Any]:
    x, where, initial = primals
    x_dot = tangents[0]
    y = _softmax_terms(x, axis, where, initial, shift_is_constant=False)
    return y, y * (x_dot - lnp.sum(y * x_dot, axis, where=where, keepdims=True))


# Compiled as a whole, unlike JAX's softmax, whose steps are each compiled with their
# broadcasts (jax.numpy's functions are jitted): XLA turns x / broadcast(sum) into
# x * (1 / sum) there, and only a compiled softmax does the same here. lamella.numpy's
# eager division by a broadcast is correctly rounded, which is not JAX's number.
@lc.jit(static_argnames=("axis", "custom_jvp"))
def _softmax(x: Any, axis: Axis, where: Any, initial: Any, custom_jvp: bool) -> Any:
    (x,) = _as_inexact("softmax", x)
    _axes("softmax", axis, x.ndim)
    if custom_jvp:
        return _softmax_with_jvp_rule(x, axis, where, initial)
    return _softmax_terms(x, axis, where, initial, shift_is_constant=True)


def softmax(x: Any, axis: Axis = -1, where: Any = None, initial: Any = -np.inf) -> Any:
    """exp(x) / sum(exp(x)) along `axis`: values in [0, 1] that sum to 1.

    Args:
      x: the input array.
      axis: the axis or axes to normalise over; None means all.
      where: a boolean mask of the elements to include; masked-out outputs are 0
        (a row masked out entirely is all zeros).
      initial: the smallest value the maximum may take (JAX's internal argument).

    Any +inf input makes its row NaN (inf / inf), as in JAX.

    >>> import numpy as np
    >>> softmax(np.float32([1.0, 1.0, 1.0]), where=np.array([True, True, False]))
    Array([0.5, 0.5, 0. ], dtype=float32)
    """
    custom = bool(lc.config.read("softmax_custom_jvp"))
    return _softmax(x, _hashable_axis(axis), where, initial, custom)


# --- log_softmax ----------------------------------------------------------------------
@lc.jit(static_argnames=("axis",))
def _log_softmax(x: Any, axis: Axis, where: Any) -> Any:
    (x,) = _as_inexact("log_softmax", x)
    _axes("log_softmax", axis, x.ndim)
    x_max = lnp.max(x, axis, where=where, initial=-np.inf, keepdims=True)
    x_safe = x if where is None else lnp.where(where, x, -np.inf)
    shifted = x_safe - lax.stop_gradient(x_max)
    shifted_logsumexp = lnp.log(lnp.sum(lnp.exp(shifted), axis, where=where, keepdims=True))
    result = shifted - shifted_logsumexp
    if where is not None:
        return lnp.where(where, result, -np.inf)
    return result


def log_softmax(x: Any, axis: Axis = -1, where: Any = None) -> Any:
    """log(softmax(x)) along `axis`, computed as x - max - log(sum(exp(x - max))).

    Args:
      x: the input array.
      axis: the axis or axes to normalise over; None means all.
      where: a boolean mask of the elements to include; masked-out outputs are -inf.

    >>> import numpy as np
    >>> log_softmax(np.float32([0.0, 0.0]))
    Array([-0.6931472, -0.6931472], dtype=float32)
    """
    return _log_softmax(x, _hashable_axis(axis), where)
