"""Argument checks lamella.nn's public functions share: array-likes (no lists, as in
JAX), and the dtype categories some activations require, with errors that name the
function and say what to do.

>>> arraylike("relu", 1.5).dtype
dtype('float32')
"""

from __future__ import annotations

from typing import Any

import numpy as np

import lamella.numpy as lnp


def arraylike(name: str, x: Any) -> Any:
    """`x` as an array; lists, tuples, strings and None raise a TypeError naming `name`."""
    if isinstance(x, (list, tuple)):
        raise TypeError(f"{name} requires an array, got a {type(x).__name__}: "
                        "convert it with lamella.numpy.asarray first")
    if x is None or isinstance(x, (str, bytes, dict)):
        raise TypeError(f"{name} requires an array, got {type(x).__name__}")
    return lnp.asarray(x)


def inexact(name: str, x: Any) -> Any:
    """`x` as an array, refusing integers and bools (JAX's activations built on
    `lax.logistic` accept only floating-point and complex inputs)."""
    x = arraylike(name, x)
    if not lnp.issubdtype(x.dtype, lnp.inexact):
        raise TypeError(f"{name} requires a floating-point or complex input, got {x.dtype}; "
                        f"cast it first, e.g. x.astype(lamella.numpy.float32)")
    return x


def real(name: str, x: Any, error: type[Exception] = TypeError) -> Any:
    """`x` as an array, refusing complex values: the functions that compare their input
    with thresholds (rectifiers, clipping, log1mexp's switch) need an order."""
    x = arraylike(name, x)
    if lnp.issubdtype(x.dtype, lnp.complexfloating):
        raise error(f"{name} compares its input with thresholds, which complex numbers "
                    f"have no order for (got {x.dtype}); apply it to the real and imaginary "
                    "parts separately if that is what you mean")
    return x


def promote_inexact(name: str, x: Any) -> Any:
    """`x` as an array of an inexact dtype: integers and bools become the default float."""
    x = arraylike(name, x)
    if lnp.issubdtype(x.dtype, lnp.inexact):
        return x
    return x.astype(lnp.result_type(x.dtype, 1.0))


def float_constant(value: float, dtype: Any) -> np.ndarray:
    """A NumPy constant of `dtype`, rounded once from `value` (as JAX rounds its constants)."""
    return np.asarray(value, dtype=np.float64).astype(np.dtype(dtype))
