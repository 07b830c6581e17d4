"""Vector quantization (`jax.scipy.cluster.vq`): assigning each observation to its
nearest code.

>>> import numpy as np
>>> vq(np.float32([[0, 0], [3, 4.5]]), np.float32([[3, 4], [0, 1]]))
(Array([1, 0], dtype=int32), Array([1. , 0.5], dtype=float32))
"""

from __future__ import annotations

from typing import Any

import lamella.numpy as jnp
from lamella.scipy._arguments import inexact

__all__ = ["vq"]


def vq(obs: Any, code_book: Any, check_finite: bool = True) -> tuple[Any, Any]:
    """The index of the nearest code in `code_book` (K, N) for each observation in
    `obs` (M, N), and the Euclidean distance to it; 1-D inputs hold scalar
    observations and codes. Ties go to the lowest index.

    `check_finite` is accepted and ignored, as in JAX: the inputs may be traced.

    >>> import numpy as np
    >>> vq(np.float32([0.2, 2.9]), np.float32([0, 1, 3]))[0]
    Array([0, 2], dtype=int32)
    """
    del check_finite
    obs, code_book = inexact(obs, code_book)
    if obs.ndim != code_book.ndim:
        raise ValueError(f"vq: obs and code_book must have the same rank, got shapes "
                         f"{obs.shape} and {code_book.shape}")
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if obs.ndim != 2:
        raise ValueError(f"vq: obs and code_book must be 1- or 2-dimensional, got shapes "
                         f"{obs.shape} and {code_book.shape}")
    if obs.shape[1] != code_book.shape[1]:
        raise ValueError(f"vq: observations have {obs.shape[1]} features but codes have "
                         f"{code_book.shape[1]}")
    if code_book.shape[0] == 0:
        raise ValueError("vq: code_book must hold at least one code")
    squared = jnp.sum(jnp.square(obs[:, None, :] - code_book[None, :, :]), axis=-1)
    code, nearest = jnp.argmin(squared, axis=-1), jnp.min(squared, axis=-1)
    # The square root's derivative is infinite at 0: an observation equal to its code
    # gets a zero gradient instead of NaN.
    positive = nearest > 0
    return code, jnp.where(positive, jnp.sqrt(jnp.where(positive, nearest, 1)), 0)
