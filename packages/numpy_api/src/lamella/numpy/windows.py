"""Window functions: bartlett, blackman, hamming, hanning, kaiser.

>>> hanning(3)
Array([0., 1., 0.], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from lamella import lax
from lamella.numpy.elementwise_extras import i0
from lamella.numpy.util import (
    asarray_internal,
    concrete_int,
    default_float_dtype,
)

__all__ = [
    "bartlett", "blackman", "hamming", "hanning", "kaiser",
]


def _window_length(M: Any, name: str) -> int:
    return concrete_int(M, f"the window length M of {name}")


def _symmetric_grid(M: int) -> Any:
    # n = 1-M, 3-M, ..., M-1, the NumPy window abscissae.
    dt = default_float_dtype()
    return lax.add(lax.mul(lax.iota(dt, M), lax.full((M,), 2, dt)), lax.full((M,), 1 - M, dt))


def _cosine_window(M: Any, name: str, coeffs: Sequence[float]) -> Any:
    M = _window_length(M, name)
    dt = default_float_dtype()
    if M < 1:
        return lax.full((0,), 0, dt)
    if M == 1:
        return lax.full((1,), 1, dt)
    phase = lax.mul(_symmetric_grid(M), lax.full((M,), np.pi / (M - 1), dt))
    out = lax.full((M,), coeffs[0], dt)
    for k, c in enumerate(coeffs[1:], start=1):
        term = lax.cos(lax.mul(phase, lax.full((M,), k, dt)))
        out = lax.add(out, lax.mul(lax.full((M,), c, dt), term))
    return out


def bartlett(M: int) -> Any:
    """The Bartlett (triangular) window of M points.

    >>> bartlett(5)
    Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)
    """
    M = _window_length(M, "bartlett")
    dt = default_float_dtype()
    if M < 1:
        return lax.full((0,), 0, dt)
    if M == 1:
        return lax.full((1,), 1, dt)
    n = lax.div(_symmetric_grid(M), lax.full((M,), M - 1, dt))
    return lax.sub(lax.full((M,), 1, dt), lax.abs(n))


def blackman(M: int) -> Any:
    """The Blackman window of M points.

    >>> blackman(3)
    Array([-1.4901161e-08,  9.9999994e-01, -1.4901161e-08], dtype=float32)
    """
    return _cosine_window(M, "blackman", (0.42, 0.5, 0.08))


def hamming(M: int) -> Any:
    """The Hamming window of M points.

    >>> hamming(3)
    Array([0.08000001, 1.        , 0.08000001], dtype=float32)
    """
    return _cosine_window(M, "hamming", (0.54, 0.46))


def hanning(M: int) -> Any:
    """The Hann window of M points.

    >>> hanning(3)
    Array([0., 1., 0.], dtype=float32)
    """
    return _cosine_window(M, "hanning", (0.5, 0.5))


def kaiser(M: int, beta: Any) -> Any:
    """The Kaiser window of M points with shape parameter beta (which may be traced).

    >>> kaiser(3, 2.0)
    Array([0.4386763, 1.       , 0.4386763], dtype=float32)
    """
    M = _window_length(M, "kaiser")
    dt = default_float_dtype()
    if M < 1:
        return lax.full((0,), 0, dt)
    if M == 1:
        return lax.full((1,), 1, dt)
    beta = lax.convert_element_type(asarray_internal(beta), dt)
    alpha = (M - 1) / 2.0
    t = lax.div(lax.sub(lax.iota(dt, M), lax.full((M,), alpha, dt)), lax.full((M,), alpha, dt))
    r = lax.sqrt(lax.max(lax.sub(lax.full((M,), 1, dt), lax.mul(t, t)), lax.full((M,), 0, dt)))
    b = lax.broadcast_in_dim(beta, (M,), ())
    return lax.div(i0(lax.mul(b, r)), i0(b))
