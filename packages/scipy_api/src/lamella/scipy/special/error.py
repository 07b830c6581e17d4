"""The error function family: erf, erfc, erfinv and the scaled erfcx.

erf is lax's (XLA's expansion, a few ulps), and so is erfc below 1/2; above, erfc
is exp(-x**2) erfcx(x) with the exponential of the exact x**2, a few ulps where
XLA's float32 erfc is 33 off (past x = 5). erfinv is lax's for
|x| <= 1/2 and the normal quantile beyond, -ndtri((1 - |x|)/2)/sqrt(2): XLA's
erf_inv is hundreds of thousands of ulps off in float64 near +-1, where 1 - |x|
is exact and the quantile keeps full precision. erfcx is Weideman's series, so
it neither overflows for large x nor loses the
exp(x**2) erfc(x) product's precision.

>>> import numpy as np
>>> erfcx(np.float32([0.0, 30.0]))
Array([1.        , 0.01879589], dtype=float32)
"""

from __future__ import annotations

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp
from lamella.scipy.special._gaussian import (
    SQRT_HALF,
    SQRT_PI,
    erfcx_nonnegative,
    erfcx_real,
    exp_square,
    normal_quantile,
)
from lamella.scipy.special._numerics import Array, ArrayLike, apply

__all__ = ["erf", "erfc", "erfcx", "erfinv"]


def erf(x: ArrayLike) -> Array:
    """The error function, 2/sqrt(pi) times the integral of exp(-t**2) from 0 to x.

    >>> import numpy as np
    >>> erf(np.float32([0.0, 0.5, -3.0]))
    Array([ 0.        ,  0.5204999 , -0.99997795], dtype=float32)
    """
    return apply("erf", lax.erf, x)


@lc.custom_jvp
def _erfc(x: Array) -> Array:
    upper = x >= 0.5
    tail = exp_square(x, -1.0) * erfcx_nonnegative(lnp.where(upper, x, 0.5))
    return lnp.where(upper, tail, lax.erfc(x))


_erfc.defjvps(lambda t, y, x: t * (-2 / SQRT_PI) * exp_square(x, -1.0))


def erfc(x: ArrayLike) -> Array:
    """The complementary error function 1 - erf(x), accurate where erf(x) is near 1.

    >>> import numpy as np
    >>> erfc(np.float32([0.0, 3.0]))
    Array([1.0000000e+00, 2.2090499e-05], dtype=float32)
    """
    return apply("erfc", _erfc, x)


@lc.custom_jvp
def _erfinv(x: Array) -> Array:
    near_one = lnp.abs(x) > 0.5
    # (1 - |x|) / 2 is exact for |x| >= 1/2; beyond 1 it is negative and gives NaN.
    tail = -normal_quantile(0.5 * (1 - lnp.abs(x))) * SQRT_HALF
    return lnp.where(near_one, lnp.copysign(tail, x), lax.erf_inv(x))


_erfinv.defjvps(lambda t, y, x: t * (0.5 * SQRT_PI) * lnp.exp(y * y))


def erfinv(x: ArrayLike) -> Array:
    """The inverse of `erf` on [-1, 1]: +-inf at +-1 and NaN outside.

    >>> import numpy as np
    >>> erfinv(np.float32([0.5, -0.999999, 1.0]))
    Array([ 0.47693628, -3.4570746 ,         inf], dtype=float32)
    """
    return apply("erfinv", _erfinv, x)


@lc.custom_jvp
def _erfcx(x: Array) -> Array:
    return erfcx_real(x)


_erfcx.defjvps(lambda t, y, x: t * (2 * x * y - 2 / SQRT_PI))


def erfcx(x: ArrayLike) -> Array:
    """The scaled complementary error function exp(x**2) erfc(x).

    About 1 / (sqrt(pi) x) for large x, without overflow; it overflows to inf only
    where the function does, below -26.6 (float64) or -9.4 (float32).

    >>> import numpy as np
    >>> erfcx(np.float32([-1.0, 1.0, 1e20]))
    Array([5.0089798e+00, 4.2758363e-01, 5.6418960e-21], dtype=float32)
    """
    return apply("erfcx", _erfcx, x)

