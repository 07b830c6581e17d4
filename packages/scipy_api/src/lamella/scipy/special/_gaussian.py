"""Kernels the error-function and normal-distribution families share: exp(c x**2)
without the rounding of x**2, the scaled complementary error function erfcx as
Weideman's rational series, the normal tail Phi(-t), and Wichura's normal quantile.

Each takes and returns arrays of one float dtype (float32 or float64) and is
written with lamella.numpy operations only.

>>> import numpy as np
>>> erfcx_nonnegative(lnp.asarray(np.float32([0.0, 1.0, 1e10])))
Array([1.0000001e+00, 4.2758363e-01, 5.6418963e-11], dtype=float32)
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

import lamella.numpy as lnp
from lamella.scipy.special._numerics import Array, horner, is_float64

__all__ = ["erfcx_nonnegative", "erfcx_real", "exp_square", "normal_quantile", "normal_tail",
           "weideman", "weideman_terms"]

SQRT_HALF = math.sqrt(0.5)
SQRT_PI = math.sqrt(math.pi)


# --- exp(c x**2) -------------------------------------------------------------------------------
def _split_for_square(x: Array, bound: float) -> tuple[Array, Array]:
    """x (clamped to [-bound, bound]) as head + tail, where head keeps so few bits
    that head * head is exact and tail = x - head is exact too.

    With |x| <= bound < 2**6 the head has at most 6 + 20 bits in float64 (4 + 8 in
    float32, where bound < 2**4), so its square fits the 53-bit (24-bit) significand.
    """
    scale = 2.0 ** 20 if is_float64(x) else 2.0 ** 8
    x = lnp.clip(x, -bound, bound)
    head = lnp.round(x * scale) * (1 / scale)
    return head, x - head


def _expm1_small(c: Array) -> Array:
    """expm1(c) for |c| <= 0.03 by its Taylor series: the fifth-order term, c**5/120,
    is below float32's rounding there (and float64's for the |c| <= 1e-4 it gets)."""
    return c * (1 + c * (1 / 2 + c * (1 / 6 + c * (1 / 24 + c * (1 / 120)))))


def exp_square(x: Array, factor: float) -> Array:
    """exp(factor * x**2) for factor = -1/2, -1 or 1, to about one ulp: rounding x**2
    first would cost a relative error of x**2 ulps.

    exp(c x**2) = e + e expm1(c tail (2 head + tail)) with e = exp(c head**2): the
    first argument is exact, the second small (|tail| <= 2**-9, or 2**-21 in
    float64). (Written as a product of two exponentials, XLA would fold it back
    into the exponential of a rounded sum.) The clamp is past where the result
    under- or overflows (at |x| = 38.6 / 14 for c = -1/2 in float64 / float32).
    """
    bound = (27.0 if is_float64(x) else 10.0) / math.sqrt(abs(factor)) + 1
    head, tail = _split_for_square(x, bound)
    e = lnp.exp(factor * (head * head))
    corrected = e + e * _expm1_small(factor * (tail * (2 * head + tail)))
    return lnp.where(e == lnp.inf, e, corrected) if factor > 0 else corrected


# --- erfcx ----------------------------------------------------------------------------------
@cache
def weideman(n: int) -> tuple[float, tuple[float, ...]]:
    """L and the coefficients (highest order first) of Weideman's series for the
    Faddeeva function in the upper half plane (SIAM J. Numer. Anal. 31, 1994):

        w(z) ~ 1 / (sqrt(pi) (L - iz)) + 2 / (L - iz)**2 * sum_k a_k Z**k,
        Z = (L + iz) / (L - iz),

    the a_k being the Fourier coefficients of exp(-t**2) (L**2 + t**2) under
    t = L tan(theta / 2), computed here by an FFT of 4n samples. With n = 16 the
    series is good to 4e-7, with n = 40 to 2e-15 (relative).
    """
    m = 2 * n
    length = math.sqrt(n / math.sqrt(2.0))
    theta = np.arange(-m + 1, m) * np.pi / m
    t = length * np.tan(theta / 2)
    samples = np.concatenate([[0.0], np.exp(-t * t) * (length ** 2 + t * t)])
    a = np.real(np.fft.fft(np.fft.fftshift(samples))) / (2 * m)
    return length, tuple(float(c) for c in a[n:0:-1])


def weideman_terms(x: Array) -> int:
    """The number of terms that takes Weideman's series to `x`'s precision."""
    return 40 if is_float64(x) else 16


def erfcx_nonnegative(x: Array) -> Array:
    """exp(x**2) erfc(x) for x >= 0, which is w(ix): Weideman's series on the
    imaginary axis, where Z = (L - x) / (L + x) is real. A few ulps for every x up
    to inf (where it is 0); it never forms exp(x**2), so nothing overflows.
    """
    length, coefficients = weideman(weideman_terms(x))
    s = 1 / (length + x)
    z = 2 * length * s - 1
    return s * (2 * horner(z, coefficients) * s + 1 / SQRT_PI)


def erfcx_real(x: Array) -> Array:
    """exp(x**2) erfc(x) for all real x: erfcx(x) = 2 exp(x**2) - erfcx(-x) below
    zero, which overflows (to inf, as the function does) below -26.6 (float64) or
    -9.4 (float32)."""
    positive = erfcx_nonnegative(lnp.abs(x))
    return lnp.where(x < 0, 2 * exp_square(x, 1.0) - positive, positive)


# --- the normal distribution ----------------------------------------------------------------
def normal_tail(t: Array) -> Array:
    """Phi(-t) = erfc(t / sqrt(2)) / 2 for t >= 0, to a few ulps even deep in the
    tail, as exp(-t**2/2) erfcx(t / sqrt(2)) / 2: erfcx is well conditioned, and
    the exponential is formed from the exact t."""
    return 0.5 * exp_square(t, -0.5) * erfcx_nonnegative(t * SQRT_HALF)


# Wichura's AS 241 (Applied Statistics 37, 1988), PPND16: rational approximations of
# the normal quantile good to about 1e-16, highest order first. Central: q * A(r) / B(r)
# in r = 0.180625 - q**2 for |q| = |p - 1/2| <= 0.425. Tails: C / D in s - 1.6 and
# E / F in s - 5 for s = sqrt(-log(min(p, 1 - p))) below and above 5.
_A = (2.5090809287301226727e3, 3.3430575583588128105e4, 6.7265770927008700853e4,
      4.5921953931549871457e4, 1.3731693765509461125e4, 1.9715909503065514427e3,
      1.3314166789178437745e2, 3.3871328727963666080e0)
_B = (5.2264952788528545610e3, 2.8729085735721942674e4, 3.9307895800092710610e4,
      2.1213794301586595867e4, 5.3941960214247511077e3, 6.8718700749205790830e2,
      4.2313330701600911252e1, 1.0)
_C = (7.74545014278341407640e-4, 2.27238449892691845833e-2, 2.41780725177450611770e-1,
      1.27045825245236838258e0, 3.64784832476320460504e0, 5.76949722146069140550e0,
      4.63033784615654529590e0, 1.42343711074968357734e0)
_D = (1.05075007164441684324e-9, 5.47593808499534494600e-4, 1.51986665636164571966e-2,
      1.48103976427480074590e-1, 6.89767334985100004550e-1, 1.67638483018380384940e0,
      2.05319162663775882187e0, 1.0)
_E = (2.01033439929228813265e-7, 2.71155556874348757815e-5, 1.24266094738807843860e-3,
      2.65321895265761230930e-2, 2.96560571828504891230e-1, 1.78482653991729133580e0,
      5.46378491116411436990e0, 6.65790464350110377720e0)
_F = (2.04426310338993978564e-15, 1.42151175831644588870e-7, 1.84631831751005468180e-5,
      7.86869131145613259100e-4, 1.48753612908506148525e-2, 1.36929880922735805310e-1,
      5.99832206555887937690e-1, 1.0)


def normal_quantile(p: Array) -> Array:
    """Phi^-1(p): -inf at 0, inf at 1, NaN outside [0, 1]. min(p, 1 - p) is exact
    for p >= 1/2, so the upper tail is as accurate as the lower one."""
    q = p - 0.5
    r = 0.180625 - q * q
    central = q * horner(r, _A) / horner(r, _B)
    tail_p = lnp.minimum(p, 1 - p)
    s = lnp.sqrt(-lnp.log(lnp.where(tail_p > 0, tail_p, 0.5)))
    near = horner(s - 1.6, _C) / horner(s - 1.6, _D)
    far = horner(s - 5.0, _E) / horner(s - 5.0, _F)
    tail = lnp.where(s <= 5.0, near, far)
    out = lnp.where(lnp.abs(q) <= 0.425, central, lnp.where(q < 0, -tail, tail))
    out = lnp.where(p == 0, -lnp.inf, lnp.where(p == 1, lnp.inf, out))
    return lnp.where((p >= 0) & (p <= 1), out, lnp.nan)
