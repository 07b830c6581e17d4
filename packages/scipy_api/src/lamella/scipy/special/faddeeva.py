"""The Faddeeva function w(z) = exp(-z**2) erfc(-iz) and Dawson's integral
D(x) = exp(-x**2) times the integral of exp(t**2) from 0 to x.

In the upper half plane w is Weideman's rational series (see `_gaussian`) for
|z| < 8 and Laplace's continued fraction w(z) = (i / sqrt(pi)) / (z - (1/2) /
(z - 1 / (z - (3/2) / ...))) beyond, where a dozen levels reach full precision;
below the real axis w(z) = 2 exp(-z**2) - w(-z). On the real axis the real part
is exp(-x**2) exactly and the imaginary part 2 D(x) / sqrt(pi).

Dawson's integral is its Taylor series sum_n (-2)**n x**(2n+1) / (2n+1)!! for
|x| < 1, where Weideman's series would lose the relative precision of D(x) ~ x,
and (sqrt(pi)/2) Im w(x) above.

>>> import numpy as np
>>> dawsn(np.float32([0.5, 1.0, 100.0]))
Array([0.4244364 , 0.5380795 , 0.00500025], dtype=float32)
"""

from __future__ import annotations

import numpy as np

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp
from lamella.scipy.special._gaussian import SQRT_PI, weideman
from lamella.scipy.special._numerics import Array, ArrayLike, apply, horner, is_float64

__all__ = ["dawsn", "wofz"]

# Past |z| = 8 the continued fraction converges to float64 precision in 12 levels
# (float32: 8); inside, Weideman's series is the better one.
_FAR = 8.0


def _levels(z: Array) -> int:
    return 12 if is_float64(z) else 8


def _continued_fraction(z: Array) -> Array:
    """Laplace's continued fraction for 1 / (sqrt(pi) w(z) / i), evaluated bottom up."""
    t = z
    for k in range(_levels(z), 0, -1):
        t = z - (0.5 * k) / t
    return t


def _horner_loop(z: Array, coefficients: tuple[float, ...]) -> Array:
    """The polynomial with real `coefficients` (highest order first) at complex z, as
    a loop: unrolled, Weideman's 40 complex terms make a program several times
    larger (and slower to compile) than all the rest."""
    table = lnp.asarray(np.array(coefficients), dtype=z.real.dtype)
    return lax.fori_loop(1, len(coefficients), lambda i, p: p * z + table[i],
                         lnp.zeros_like(z) + table[0])


def _weideman_series(z: Array) -> Array:
    # 20 terms in complex64: with 16 (enough for erfcx's real series) the truncation
    # still shows next to the rounding of the complex arithmetic.
    length, coefficients = weideman(40 if is_float64(z) else 20)
    d = length - 1j * z
    return 1 / (SQRT_PI * d) + 2 * _horner_loop((length + 1j * z) / d, coefficients) / (d * d)


def faddeeva_upper(z: Array) -> Array:
    """w(z) for Im z >= 0, 0 at infinity."""
    far = lnp.abs(z) >= _FAR
    near = _weideman_series(lnp.where(far, 0.0, z))
    fraction = 1j / (SQRT_PI * _continued_fraction(lnp.where(far, z, _FAR)))
    out = lnp.where(far, fraction, near)
    return lnp.where(lnp.isinf(z.real) | lnp.isinf(z.imag), 0.0, out)


# --- Dawson's integral --------------------------------------------------------------------
def _dawson_series(x: Array) -> Array:
    """sum_n (-2)**n x**(2n+1) / (2n+1)!! for |x| <= 1, highest order first."""
    terms = 20 if is_float64(x) else 10
    coefficients = []
    c = 1.0
    for n in range(terms):
        coefficients.append(c)
        c *= -2.0 / (2 * n + 3)
    return x * horner(x * x, coefficients[::-1])


def _dawson_far(x: Array) -> Array:
    """(sqrt(pi)/2) Im w(x) for real |x| >= 1: the continued fraction is real there."""
    far = lnp.abs(x) >= _FAR
    near = _weideman_series(lax.complex(lnp.where(far, 1.0, x), lnp.zeros_like(x))).imag
    fraction = 1 / (SQRT_PI * _continued_fraction(lnp.where(far, x, _FAR)))
    out = 0.5 * SQRT_PI * lnp.where(far, fraction, near)
    return lnp.where(lnp.isinf(x), lnp.copysign(0.0, x), out)


@lc.custom_jvp
def _dawsn(x: Array) -> Array:
    small = lnp.abs(x) < 1
    return lnp.where(small, _dawson_series(lnp.where(small, x, 0.0)),
                     _dawson_far(lnp.where(small, 1.0, x)))


_dawsn.defjvps(lambda t, y, x: t * (1 - 2 * x * y))


def dawsn(x: ArrayLike) -> Array:
    """Dawson's integral D(x) = exp(-x**2) * integral of exp(t**2) from 0 to x.

    Odd, about 1/(2x) for large |x|, 0 at +-inf.

    >>> import numpy as np
    >>> dawsn(np.float32([0.0, -1.0, 1e10]))
    Array([ 0.000000e+00, -5.380795e-01,  5.000000e-11], dtype=float32)
    """
    return apply("dawsn", _dawsn, x)


# --- the Faddeeva function -------------------------------------------------------------------
@lc.custom_jvp
def _wofz(z: Array) -> Array:
    x, y = z.real, z.imag
    lower = y < 0
    upper = faddeeva_upper(lnp.where(lower, -z, z))
    # exp(-z**2) with Re(-z**2) = (y - x)(y + x), which does not cancel as y*y - x*x does.
    phase = -2 * x * y
    reflected = 2 * lnp.exp((y - x) * (y + x)) * lax.complex(lnp.cos(phase), lnp.sin(phase))
    out = lnp.where(lower, reflected - upper, upper)
    # On the axis Weideman's series gives 2 D(x) / sqrt(pi) as Im w, except near 0
    # where D's own series keeps its relative precision.
    small = lnp.abs(x) < 1
    dawson = lnp.where(small, (2 / SQRT_PI) * _dawson_series(lnp.where(small, x, 0.0)),
                       upper.imag)
    on_axis = lax.complex(lnp.exp(-x * x), dawson)
    return lnp.where(y == 0, on_axis, out)


_wofz.defjvps(lambda t, w, z: t * (-2 * z * w + 2j / SQRT_PI))


def _as_complex(z: ArrayLike) -> Array:
    z = lnp.asarray(z)
    if lnp.issubdtype(z.dtype, lnp.complexfloating):
        return z
    if lnp.issubdtype(z.dtype, lnp.floating) and lnp.finfo(z.dtype).bits == 64:
        return z.astype(lnp.complex128)
    return z.astype(lnp.complex64)


_wofz_compiled = lc.jit(_wofz)


def wofz(z: ArrayLike) -> Array:
    """The Faddeeva function w(z) = exp(-z**2) erfc(-iz), complex (real z becomes
    complex64, or complex128 from float64).

    >>> import numpy as np
    >>> wofz(np.complex64([1.0 + 1.0j, 2.0]))
    Array([0.3047442 +0.20821898j, 0.01831564+0.3400262j ], dtype=complex64)
    """
    return _wofz_compiled(_as_complex(z))
