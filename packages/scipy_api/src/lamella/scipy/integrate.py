"""Numerical integration of sampled functions (`jax.scipy.integrate`): the
trapezoid rule.

>>> import numpy as np
>>> trapezoid(np.float32([1, 2, 3, 2, 3, 2, 1]), np.float32([0, 2, 5, 7, 10, 15, 20]))
Array(43., dtype=float32)
"""

from __future__ import annotations

from typing import Any

import lamella.numpy as jnp

__all__ = ["trapezoid"]


def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """The integral of samples `y` along `axis` by the trapezoid rule, at the points
    `x` (1-D, or of `y`'s shape) or, without `x`, spaced `dx` apart.

    >>> import numpy as np
    >>> trapezoid(np.float32([1, 2, 3]), dx=0.5)
    Array(2., dtype=float32)
    """
    return jnp.trapezoid(y, x, dx, axis)
