"""Integrals of oscillating functions: the Fresnel integrals S(x), C(x) (of sin and
cos of pi t**2 / 2) and the sine and cosine integrals Si(x), Ci(x).

Both are power series near 0 and continued fractions of a complex function far
from it:

- C(x) + i S(x) = (1 + i)/2 (1 - exp(i pi x**2 / 2) w((1 + i) sqrt(pi) x / 2)),
  with w the Faddeeva function, for |x| > 1. The phase pi x**2 / 2 is reduced
  modulo 2 pi from x**2 split into an exact head**2 and a small rest, so it does
  not carry the rounding of x**2 (which at x = 1e4 is already a radian in float32);
- Si(x) = pi/2 + Im E1(ix), Ci(x) = -Re E1(ix), with the exponential integral's
  continued fraction E1(z) = exp(-z) / (z + 1 - 1/(z + 3 - 4/(z + 5 - ...))) for
  x >= 3 (64 levels in float64, 20 in float32). Below 3 the series' terms stay
  under 2, so Ci keeps its absolute accuracy next to its zero at 3.38 too.

>>> import numpy as np
>>> fresnel(np.float32([1.0, 10.0]))
(Array([0.43825915, 0.46817   ], dtype=float32), Array([0.7798934 , 0.49989867], dtype=float32))
>>> sici(np.float32([1.0, 10.0]))
(Array([0.94608307, 1.6583476 ], dtype=float32), Array([ 0.33740392, -0.04545643], dtype=float32))
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp
from lamella.scipy.special._gaussian import SQRT_PI
from lamella.scipy.special._numerics import Array, ArrayLike, horner, is_float64, promote_inexact
from lamella.scipy.special.faddeeva import faddeeva_upper

__all__ = ["fresnel", "sici"]


def _as_real_outputs(name: str, fun, x: ArrayLike) -> tuple[Array, Array]:
    """`fun` (returning a pair) on x promoted as JAX promotes it, in one compiled call."""
    (x,), dtype = promote_inexact(name, x)
    first, second = _compiled(fun)(x)
    return first.astype(dtype), second.astype(dtype)


@cache
def _compiled(fun):
    return lc.jit(fun)


# --- Fresnel integrals ----------------------------------------------------------------------
@cache
def _fresnel_series(terms: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Coefficients, highest order first, of C(x) / x and S(x) / x**3 in x**4:
    (-1)^n (pi/2)^(2n) / ((2n)! (4n+1)) and (-1)^n (pi/2)^(2n+1) / ((2n+1)! (4n+3))."""
    h = math.pi / 2
    c = [(-1) ** n * h ** (2 * n) / (math.factorial(2 * n) * (4 * n + 1)) for n in range(terms)]
    s = [(-1) ** n * h ** (2 * n + 1) / (math.factorial(2 * n + 1) * (4 * n + 3))
         for n in range(terms)]
    return tuple(c[::-1]), tuple(s[::-1])


def _head(x: Array) -> Array:
    """x with its low significand bits cleared, so that head * head is exact: 12
    significant bits are kept in float32, 26 in float64."""
    # Signed masks (-2**27, -2**12): the same bits, as constants lax can lower.
    if is_float64(x):
        bits, mask = np.int64, np.int64(-(1 << 27))
    else:
        bits, mask = np.int32, np.int32(-(1 << 12))
    as_bits = lax.bitcast_convert_type(lax.stop_gradient(x), bits)
    return lax.bitcast_convert_type(lnp.bitwise_and(as_bits, mask), x.dtype)


def _fresnel_phase(x: Array) -> Array:
    """pi x**2 / 2 modulo 2 pi, from x = a + b + c with a and b of half the
    significand each: a**2, 2ab and b**2 are exact and reduced modulo 4 exactly,
    and the rest 2(a + b)c + c**2 is small enough that its rounding does not show."""
    a = _head(x)
    b = _head(x - a)
    c = x - a - b
    parts = lnp.fmod(a * a, 4.0) + lnp.fmod(2 * a * b, 4.0) + lnp.fmod(b * b, 4.0)
    return (math.pi / 2) * lnp.fmod(parts + c * (2 * (a + b) + c), 4.0)


def _fresnel_kernel(x: Array) -> tuple[Array, Array]:
    a = lnp.abs(x)
    # Past 2/(pi eps) the oscillation 1/(pi x) around 1/2 is below rounding.
    flat = a > 2 / (math.pi * float(lnp.finfo(x.dtype).eps))
    small = a <= 1
    c_series, s_series = _fresnel_series(12 if is_float64(x) else 7)
    y = lnp.where(small, a, 0.0)
    y4 = (y * y) * (y * y)
    s_small, c_small = y * y * y * horner(y4, s_series), y * horner(y4, c_series)
    y = lnp.where(small | flat, 2.0, a)
    theta = _fresnel_phase(y)
    w = faddeeva_upper(lax.complex(y, y) * (0.5 * SQRT_PI))
    f = (0.5 + 0.5j) * (1 - lax.complex(lnp.cos(theta), lnp.sin(theta)) * w)
    s = lnp.where(small, s_small, lnp.where(flat, 0.5, f.imag))
    c = lnp.where(small, c_small, lnp.where(flat, 0.5, f.real))
    return lnp.copysign(s, x), lnp.copysign(c, x)


@lc.custom_jvp
def _fresnel(x: Array) -> tuple[Array, Array]:
    return _fresnel_kernel(x)


@_fresnel.defjvp
def _fresnel_jvp(primals, tangents):
    x, = primals
    t, = tangents
    theta = _fresnel_phase(lnp.where(lnp.isfinite(x), x, 0.0))
    return _fresnel(x), (t * lnp.sin(theta), t * lnp.cos(theta))


def fresnel(x: ArrayLike) -> tuple[Array, Array]:
    """The Fresnel integrals (S(x), C(x)): the integrals of sin(pi t**2 / 2) and
    cos(pi t**2 / 2) from 0 to x. Odd, tending to +-1/2.

    >>> import numpy as np
    >>> fresnel(np.float32([0.5, np.inf]))
    (Array([0.06473243, 0.5       ], dtype=float32), Array([0.49234423, 0.5       ], dtype=float32))
    """
    return _as_real_outputs("fresnel", _fresnel, x)


# --- sine and cosine integrals ----------------------------------------------------------------
@cache
def _sici_series(terms: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Coefficients, highest order first, of Si(x) / x in x**2, (-1)^n / ((2n+1) (2n+1)!),
    and of (Ci(x) - gamma - log x) / x**2, (-1)^n / (2n (2n)!) from n = 1."""
    si = [(-1) ** n / ((2 * n + 1) * math.factorial(2 * n + 1)) for n in range(terms)]
    ci = [(-1) ** n / (2 * n * math.factorial(2 * n)) for n in range(1, terms + 1)]
    return tuple(si[::-1]), tuple(ci[::-1])


def _exponential_integral_imaginary(x: Array) -> Array:
    """E1(ix) for real x >= 3 by the even contraction of its continued fraction."""
    z = lax.complex(lnp.zeros_like(x), x)
    levels = 64 if is_float64(x) else 20

    def level(i, t):  # the level n = levels - i, from the bottom up
        n = (levels - i).astype(x.dtype)
        return z + (2 * n - 1) - (n * n) / t

    t = lax.fori_loop(0, levels, level, z + (2 * levels + 1))
    return lax.complex(lnp.cos(x), -lnp.sin(x)) / t


def _sici_kernel(x: Array) -> tuple[Array, Array]:
    a = lnp.abs(x)
    small = a < 3
    si_series, ci_series = _sici_series(17 if is_float64(x) else 11)
    y = lnp.where(small, a, 1.0)
    si_small = y * horner(y * y, si_series)
    ci_small = np.euler_gamma + lnp.log(y) + (y * y) * horner(y * y, ci_series)
    e1 = _exponential_integral_imaginary(lnp.where(small, 3.0, a))
    si = lnp.where(small, si_small, math.pi / 2 + e1.imag)
    ci = lnp.where(small, ci_small, -e1.real)
    si = lnp.where(a == lnp.inf, math.pi / 2, si)
    ci = lnp.where(a == lnp.inf, 0.0, lnp.where(a == 0, -lnp.inf, ci))
    # Ci(-x) is Ci(x) + i pi; SciPy and JAX return its real part, and NaN at -inf.
    return lnp.copysign(si, x), lnp.where(x == -lnp.inf, lnp.nan, ci)


@lc.custom_jvp
def _sici(x: Array) -> tuple[Array, Array]:
    return _sici_kernel(x)


@_sici.defjvp
def _sici_jvp(primals, tangents):
    x, = primals
    t, = tangents
    is_zero = x == 0
    safe = lnp.where(is_zero, 1.0, x)
    sinc = lnp.where(is_zero, 1.0, lnp.sin(safe) / safe)
    return _sici(x), (t * sinc, t * lnp.cos(x) / x)


def sici(x: ArrayLike) -> tuple[Array, Array]:
    """The sine and cosine integrals (Si(x), Ci(x)): the integral of sin(t)/t from 0
    to x, and euler_gamma + log|x| + the integral of (cos(t) - 1)/t from 0 to x.

    Si is odd; Ci(-x) is given as Ci(x), the real part (as SciPy and JAX do);
    Ci(0) = -inf.

    >>> import numpy as np
    >>> si, ci = sici(np.float32([0.0, -2.0, np.inf]))
    >>> si
    Array([ 0.       , -1.605413 ,  1.5707964], dtype=float32)
    >>> ci
    Array([      -inf, 0.42298084, 0.        ], dtype=float32)
    """
    return _as_real_outputs("sici", _sici, x)
