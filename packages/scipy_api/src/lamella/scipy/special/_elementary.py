"""log1p to about an ulp in float64, where XLA's is off by up to ~120 ulps (near
x = -0.41) and by ~8 ulps on 1% of [-0.99, 3]; float32's is accurate and used as is.

>>> import numpy as np
>>> import lamella.numpy as lnp
>>> log1p(lnp.asarray(np.float32([0.0, 1e-10, 1.0])))
Array([0.000000e+00, 1.000000e-10, 6.931472e-01], dtype=float32)
"""

from __future__ import annotations

import lamella.lax as lax
import lamella.numpy as lnp
from lamella.scipy.special._numerics import Array, is_float64

__all__ = ["log1p"]


def log1p(x: Array) -> Array:
    """log(1 + x), accurate also for small |x|.

    In float64 it is log(u) - ((u - 1) - x) / u with u = 1 + x rounded: u - 1 is
    exact, so the second term corrects log(u) for the rounding of 1 + x (and is
    all of it when u rounds to 1). The optimization barrier keeps XLA from
    simplifying (1 + x) - 1 to x; it is given a pair because lax cannot lower a
    barrier around a single array.
    """
    if not is_float64(x):
        return lnp.log1p(x)
    u, _ = lax.optimization_barrier((1 + x, x))
    log_u = lnp.log(u)
    corrected = log_u - ((u - 1) - x) / lnp.where(u == 0, 1.0, u)
    # At u = 0 (x = -1) and u = inf the plain logarithm is already right.
    return lnp.where((u == 0) | lnp.isinf(u), log_u, corrected)
