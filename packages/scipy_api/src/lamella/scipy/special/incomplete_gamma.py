"""The regularized incomplete gamma functions gammainc = P(a, x) and
gammaincc = Q(a, x), on lax's igamma/igammac (series and continued fraction in a
while loop), which carry derivatives in both a and x.

>>> import numpy as np
>>> gammainc(np.float32(2.0), np.float32([1.0, 3.0]))
Array([0.26424113, 0.8008517 ], dtype=float32)
"""

from __future__ import annotations

import lamella.lax as lax
from lamella.scipy.special._numerics import Array, ArrayLike, apply

__all__ = ["gammainc", "gammaincc"]


def gammainc(a: ArrayLike, x: ArrayLike) -> Array:
    """The regularized lower incomplete gamma function
    P(a, x) = integral of t^(a-1) exp(-t) from 0 to x, over Gamma(a).

    Differentiable in both a and x; NaN for a < 0 or x < 0 (and at a = x = 0).

    >>> import numpy as np
    >>> gammainc(np.float32(1.0), np.float32(2.0))  # 1 - exp(-2)
    Array(0.8646648, dtype=float32)
    """
    return apply("gammainc", lax.igamma, a, x)


def gammaincc(a: ArrayLike, x: ArrayLike) -> Array:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x),
    accurate where P(a, x) is close to 1.

    Differentiable in both a and x.

    >>> import numpy as np
    >>> gammaincc(np.float32(1.0), np.float32(2.0))  # exp(-2)
    Array(0.13533522, dtype=float32)
    """
    return apply("gammaincc", lax.igammac, a, x)
