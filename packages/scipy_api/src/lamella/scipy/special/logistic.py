"""The logistic function and its inverse: expit(x) = 1 / (1 + exp(-x)) and
logit(p) = log(p / (1 - p)).

logit is computed as log1p((2p - 1) / (1 - p)) for 1/4 <= p <= 3/4, where both
2p - 1 and 1 - p are exact: log(p / (1 - p)) would round the ratio to within an
ulp of 1 and lose the relative accuracy of the small result near p = 1/2 (SciPy's
and JAX's are off by up to 100% of the result there).

>>> import numpy as np
>>> logit(np.float32([0.5000001, 0.9]))
Array([4.7683716e-07, 2.1972244e+00], dtype=float32)
"""

from __future__ import annotations

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp
from lamella.scipy.special._elementary import log1p
from lamella.scipy.special._numerics import Array, ArrayLike, apply

__all__ = ["expit", "logit"]


def expit(x: ArrayLike) -> Array:
    """The logistic sigmoid 1 / (1 + exp(-x)), in [0, 1].

    >>> import numpy as np
    >>> expit(np.float32([-1000.0, 0.0, 2.0]))
    Array([0.      , 0.5     , 0.880797], dtype=float32)
    """
    return apply("expit", lax.logistic, x)


@lc.custom_jvp
def _logit(p: Array) -> Array:
    central = (p >= 0.25) & (p <= 0.75)
    near_half = log1p((2 * p - 1) / (1 - lnp.where(central, p, 0.5)))
    return lnp.where(central, near_half, lnp.log(p / (1 - p)))


_logit.defjvps(lambda t, y, p: t / (p * (1 - p)))


def logit(x: ArrayLike) -> Array:
    """The log-odds log(x / (1 - x)), the inverse of `expit`: -inf at 0, inf at 1 and
    NaN outside [0, 1].

    >>> import numpy as np
    >>> logit(np.float32([0.0, 0.25, 0.5, 1.0]))
    Array([      -inf, -1.0986123,  0.       ,        inf], dtype=float32)
    """
    return apply("logit", _logit, x)
