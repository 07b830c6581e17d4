"""Arrays filled with one value: full, full_like, zeros_like_array (broadcast
scalars), and `empty` (an array whose contents are unspecified: zeros here)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad, dtypes
from lamella.core.sharding import out_sharding_of
from lamella.core.structural import broadcast_in_dim
from lamella.core.trace import aval_of
from lamella.lax import symbolic_lowering
from lamella.lax.conversion import convert_element_type
from lamella.lax.explicit_sharding import like_sharding, with_out_sharding
from lamella.lax.lowering import constant, register_lowering
from lamella.lax.standard import canonicalize_shape, standard_primitive

__all__ = ["empty", "empty_p", "full", "full_like", "zeros_like_array"]


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None, *,
         sharding: Any = None) -> Any:
    """An array of `shape` filled with `fill_value` (a broadcast scalar).

    >>> full((2,), 3.0)                 # a Python scalar stays weakly typed
    Array([3., 3.], dtype=float32, weak_type=True)
    """
    sharding = out_sharding_of("full", sharding)
    shape = canonicalize_shape("full", shape)
    if np.ndim(fill_value) != 0:
        raise TypeError(f"full requires a scalar fill_value, got shape {np.shape(fill_value)}")
    weak = dtype is None and dtypes.is_weakly_typed(fill_value)
    dtype = aval_of(fill_value).dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    scalar = convert_element_type(fill_value, dtype, weak)
    return with_out_sharding(broadcast_in_dim(scalar, shape, ()) if shape else scalar, sharding)


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Any = None,
              sharding: Any = None) -> Any:
    """An array like `x` (its shape and dtype, unless given) filled with `fill_value`.

    >>> full_like(np.zeros(2, np.int8), 7)
    Array([7, 7], dtype=int8)
    """
    sharding = out_sharding_of("full_like", sharding)
    aval = aval_of(x)
    dtype = aval.dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    shape = aval.shape if shape is None else canonicalize_shape("full_like", shape)
    scalar = convert_element_type(fill_value, dtype, aval.weak_type and dtype == aval.dtype)
    out = broadcast_in_dim(scalar, shape, ()) if shape else scalar
    return with_out_sharding(out, sharding) if sharding is not None else like_sharding(x, out)


def zeros_like_array(x: Any) -> Any:
    """Zeros with the shape and dtype of `x`."""
    return full_like(x, 0)


# --- empty: an array whose contents do not matter -------------------------------
empty_p = standard_primitive("empty")


def empty(shape: Sequence[int], dtype: Any, *, out_sharding: Any = None) -> Any:
    """An array of `shape` and `dtype` whose contents are unspecified (XLA is free to
    leave them uninitialized; here they are zeros). Nothing flows through it, so
    its derivative is zero.

    >>> empty((2,), np.float32).shape
    (2,)
    """
    out_sharding = out_sharding_of("empty", out_sharding)
    return with_out_sharding(empty_p.bind(shape=canonicalize_shape("empty", shape), dtype=dtype,
                                          out_sharding=None), out_sharding)


@empty_p.def_abstract_eval
def _empty_abstract_eval(*, shape, dtype, out_sharding) -> ShapedArray:
    return ShapedArray(canonicalize_shape("empty", shape), dtypes.canonicalize_dtype(dtype))


register_lowering(empty_p, lambda ctx, *, shape, dtype, out_sharding: [
    symbolic_lowering.broadcast_in_dim(ctx.avals_out[0], constant(0, ctx.avals_out[0].dtype),
                                       [])])
ad.defjvp_zero(empty_p)
