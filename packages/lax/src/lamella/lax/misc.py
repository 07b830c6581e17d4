"""Array constructors and odds and ends: full, full_like, zeros_like_array,
optimization_barrier, stop_gradient."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core import ad, batching, dtypes
from lamella.core.structural import broadcast_in_dim, stop_gradient
from lamella.core.trace import aval_of
from lamella.lax.lowering import hlo, register_lowering
from lamella.lax.standard import standard_primitive

__all__ = ["full", "full_like", "optimization_barrier", "optimization_barrier_p",
           "stop_gradient", "zeros_like_array"]


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None) -> Any:
    """An array of `shape` filled with `fill_value` (a broadcast scalar).

    >>> full((2,), 3.0)                 # a Python scalar stays weakly typed
    Array([3., 3.], dtype=float32, weak_type=True)
    """
    from lamella.lax.conversion import _convert_element_type
    shape = tuple(int(d) for d in shape)
    if np.ndim(fill_value) != 0:
        raise TypeError(f"full requires a scalar fill_value, got shape {np.shape(fill_value)}")
    weak = dtype is None and dtypes.is_weakly_typed(fill_value)
    dtype = aval_of(fill_value).dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    scalar = _convert_element_type(fill_value, dtype, weak)
    return broadcast_in_dim(scalar, shape, ()) if shape else scalar


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> Any:
    """An array like `x` (its shape and dtype, unless given) filled with `fill_value`."""
    aval = aval_of(x)
    from lamella.lax.conversion import _convert_element_type
    dtype = aval.dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    shape = aval.shape if shape is None else tuple(shape)
    scalar = _convert_element_type(fill_value, dtype, aval.weak_type and dtype == aval.dtype)
    return broadcast_in_dim(scalar, shape, ()) if shape else scalar


def zeros_like_array(x: Any) -> Any:
    """Zeros with the shape and dtype of `x`."""
    return full_like(x, 0)


optimization_barrier_p = standard_primitive("optimization_barrier", multiple_results=True)


def optimization_barrier(operand: Any) -> Any:
    """Returns `operand` (a pytree) unchanged, preventing XLA from moving work across it."""
    from lamella.core.tree_util import tree_flatten, tree_unflatten
    leaves, tree = tree_flatten(operand)
    return tree_unflatten(tree, optimization_barrier_p.bind(*leaves))


optimization_barrier_p.def_abstract_eval(lambda *avals: list(avals))
register_lowering(optimization_barrier_p,
                  lambda ctx, *xs: list(hlo.optimization_barrier(list(xs))))
ad.primitive_jvps[optimization_barrier_p] = lambda primals, tangents: (
    optimization_barrier_p.bind(*primals), tangents)
batching.primitive_batchers[optimization_barrier_p] = lambda args, dims: (
    optimization_barrier_p.bind(*args), dims)
