"""Argument handling shared by lamella.scipy's signal, fft, ndimage, interpolate,
cluster and spatial modules: promotion to an inexact dtype, static integers and
axes, and concrete values of possibly traced arrays.

>>> import numpy as np
>>> [x.dtype for x in inexact(np.int32([1]), np.int8([2]))]
[dtype('float32'), dtype('float32')]
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

import lamella.core as lc
import lamella.numpy as jnp


def inexact(*arrays: Any) -> list[Any]:
    """The arrays in their common floating or complex dtype (integers become floats)."""
    arrays = [jnp.asarray(a) for a in arrays]
    dtype = jnp.result_type(*arrays, 1.0)
    return [a.astype(dtype) for a in arrays]


def static_int(value: Any, what: str) -> int:
    """`value` as a Python int; a float or a traced array is the caller's mistake."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be a concrete integer, got {value!r}") from None


def axis_index(axis: Any, ndim: int, what: str = "axis") -> int:
    """`axis` of an array of rank `ndim`, counted from 0."""
    axis = static_int(axis, what)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what} {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim


def concrete(x: Any) -> np.ndarray | None:
    """`x` as a NumPy array, or None when it is traced (under jit, vmap or grad)."""
    return None if isinstance(x, lc.Tracer) else np.asarray(x)
