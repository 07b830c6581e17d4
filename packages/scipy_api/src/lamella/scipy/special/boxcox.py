"""The Box-Cox power transformations boxcox(x, lmbda) = (x**lmbda - 1) / lmbda
(log(x) at lmbda = 0) and boxcox1p(x, lmbda), the same of 1 + x.

Both are L * exprel(lmbda L) with L = log(x) or log1p(x) and exprel(z) =
expm1(z) / z: a short Taylor series of exprel for |lmbda L| near 0, so the value
is continuous across lmbda = 0 and its derivative in lmbda there is L**2 / 2
(JAX's is 0, from its branch on lmbda == 0).

>>> import numpy as np
>>> boxcox(np.float32([1.0, 2.0, 2.0]), np.float32([0.5, 0.0, 2.0]))
Array([0.       , 0.6931472, 1.5      ], dtype=float32)
"""

from __future__ import annotations

import lamella.numpy as lnp
from lamella.scipy.special._elementary import log1p
from lamella.scipy.special._numerics import Array, ArrayLike, apply, horner, is_float64

__all__ = ["boxcox", "boxcox1p"]


def _power_transform(log_x: Array, lmbda: Array) -> Array:
    """(exp(lmbda L) - 1) / lmbda for L = log_x; L itself at lmbda = 0."""
    z = lmbda * log_x
    # exprel(z) = 1 + z/2 + z**2/6 + z**3/24 + z**4/120 is exact to rounding below this.
    near = lnp.abs(z) < (1e-3 if is_float64(z) else 1e-2)
    exprel = horner(z, (1 / 120, 1 / 24, 1 / 6, 1 / 2, 1.0))
    safe = lnp.where(near | (lmbda == 0), 1.0, lmbda)
    far = lnp.where(lmbda == 0, log_x, lnp.expm1(z) / safe)
    return lnp.where(near, log_x * exprel, far)


def _boxcox(x: Array, lmbda: Array) -> Array:
    return _power_transform(lnp.log(x), lmbda)


def _boxcox1p(x: Array, lmbda: Array) -> Array:
    return _power_transform(log1p(x), lmbda)


def boxcox(x: ArrayLike, lmbda: ArrayLike) -> Array:
    """The Box-Cox transformation (x**lmbda - 1) / lmbda, or log(x) for lmbda = 0.

    NaN for x < 0; at x = 0 it is -1/lmbda for lmbda > 0 and -inf otherwise.

    >>> import numpy as np
    >>> boxcox(np.float32([0.0, 0.0, 4.0]), np.float32([2.0, -1.0, 0.5]))
    Array([-0.5, -inf,  2. ], dtype=float32)
    """
    return apply("boxcox", _boxcox, x, lmbda)


def boxcox1p(x: ArrayLike, lmbda: ArrayLike) -> Array:
    """The Box-Cox transformation of 1 + x, ((1 + x)**lmbda - 1) / lmbda, accurate
    for small x; log1p(x) for lmbda = 0 and NaN for x < -1.

    >>> import numpy as np
    >>> boxcox1p(np.float32([1e-8, 1.0]), np.float32([2.0, 0.0]))
    Array([1.000000e-08, 6.931472e-01], dtype=float32)
    """
    return apply("boxcox1p", _boxcox1p, x, lmbda)
