"""Arrays filled with one value: full, full_like, zeros_like_array (broadcast scalars)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core import dtypes
from lamella.core.structural import broadcast_in_dim
from lamella.core.trace import aval_of
from lamella.lax.conversion import convert_element_type

__all__ = ["full", "full_like", "zeros_like_array"]


def full(shape: Sequence[int], fill_value: Any, dtype: Any = None) -> Any:
    """An array of `shape` filled with `fill_value` (a broadcast scalar).

    >>> full((2,), 3.0)                 # a Python scalar stays weakly typed
    Array([3., 3.], dtype=float32, weak_type=True)
    """
    shape = tuple(int(d) for d in shape)
    if np.ndim(fill_value) != 0:
        raise TypeError(f"full requires a scalar fill_value, got shape {np.shape(fill_value)}")
    weak = dtype is None and dtypes.is_weakly_typed(fill_value)
    dtype = aval_of(fill_value).dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    scalar = convert_element_type(fill_value, dtype, weak)
    return broadcast_in_dim(scalar, shape, ()) if shape else scalar


def full_like(x: Any, fill_value: Any, dtype: Any = None, shape: Any = None) -> Any:
    """An array like `x` (its shape and dtype, unless given) filled with `fill_value`."""
    aval = aval_of(x)
    dtype = aval.dtype if dtype is None else dtypes.canonicalize_dtype(dtype)
    shape = aval.shape if shape is None else tuple(shape)
    scalar = convert_element_type(fill_value, dtype, aval.weak_type and dtype == aval.dtype)
    return broadcast_in_dim(scalar, shape, ()) if shape else scalar


def zeros_like_array(x: Any) -> Any:
    """Zeros with the shape and dtype of `x`."""
    return full_like(x, 0)
