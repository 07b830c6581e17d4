"""Bessel functions: the modified I0, I1 (plain and scaled by exp(-|x|)) and J_n of
integer order by Miller's backward recurrence.

i0e and i1e are lax's; i0 and i1 multiply them by exp(|x|/2) twice, so they
overflow only where the function does (at 713 in float64, 91 in float32; a
single exp(|x|) would already at 709.8 and 88.7). At +-inf they are inf (SciPy
and JAX give NaN, from inf * 0).

`bessel_jn` runs the recurrence J_(k-1) = (2k / z) J_k - J_(k+1) down from order
`n_iter`, normalised by J_0 + 2 (J_2 + J_4 + ...) = 1, as JAX does, but rescales
by a power of two at every step: JAX's overflows to NaN for |z| below about 3,
where the recurrence grows like (2k/z)**k. Below sqrt(eps) it is the leading
term (z/2)**k / k! of the series, exact there (J_0(0) = 1).

>>> import numpy as np
>>> bessel_jn(np.float32([0.0, 0.5, 5.0]), v=2)
Array([[ 1.        ,  0.93846977, -0.1775968 ],
       [ 0.        ,  0.24226844, -0.32757914],
       [ 0.        ,  0.03060402,  0.04656514]], dtype=float32)
"""

from __future__ import annotations

import operator

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp
from lamella.scipy.special._numerics import (
    Array,
    ArrayLike,
    apply,
    eps,
    is_float64,
    promote_inexact,
)

__all__ = ["bessel_jn", "i0", "i0e", "i1", "i1e"]


# Cephes' Chebyshev coefficients (highest order first) for exp(-x) I0(x) on [0, 8], in
# x/2 - 2, and for exp(-x) sqrt(x) I0(x) above 8, in 32/x - 2: the 18 and 7 that
# matter in float32, where lax's full 30 + 25 (for float64) cost 2.8x JAX's time.
_I0E_NEAR = (-1.300025009986248e-08, 6.046995022541919e-08, -2.670793853940612e-07,
             1.1173875391201037e-06, -4.4167383584587505e-06, 1.6448448070728896e-05,
             -5.754195010082104e-05, 0.00018850288509584165, -0.0005763755745385824,
             0.0016394756169413357, -0.004324309995050576, 0.010546460394594998,
             -0.02373741480589947, 0.04930528423967071, -0.09490109704804764,
             0.17162090152220877, -0.3046826723431984, 0.6767952744094761)
_I0E_FAR = (3.3962320257083865e-09, 2.266668990498178e-08, 2.0489185894690638e-07,
            2.8913705208347567e-06, 6.889758346916825e-05, 0.0033691164782556943,
            0.8044904110141088)


def _chebyshev(y: Array, coefficients: tuple[float, ...]) -> Array:
    """Clenshaw's recurrence for sum_k c_k T_k(y / 2), Cephes' convention."""
    b0, b1, b2 = lnp.full_like(y, coefficients[0]), lnp.zeros_like(y), lnp.zeros_like(y)
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = y * b1 - b2 + c
    return 0.5 * (b0 - b2)


@lc.custom_jvp
def _i0e(x: Array) -> Array:
    if is_float64(x):
        return lax.bessel_i0e(x)
    z = lnp.abs(x)
    far_z = lnp.maximum(z, 8.0)
    near = _chebyshev(0.5 * z - 2, _I0E_NEAR)
    far = _chebyshev(32 / far_z - 2, _I0E_FAR) / lnp.sqrt(far_z)
    return lnp.where(z <= 8, near, far)


_i0e.defjvps(lambda t, y, x: t * (lax.bessel_i1e(x) - lnp.sign(x) * y))


def i0e(x: ArrayLike) -> Array:
    """exp(-|x|) I0(x), the exponentially scaled modified Bessel function of order 0.

    >>> import numpy as np
    >>> i0e(np.float32([0.0, 1.0, 100.0]))
    Array([1.0000001 , 0.46575963, 0.03994438], dtype=float32)
    """
    return apply("i0e", _i0e, x)


def i1e(x: ArrayLike) -> Array:
    """exp(-|x|) I1(x), the exponentially scaled modified Bessel function of order 1.

    >>> import numpy as np
    >>> i1e(np.float32([0.0, 1.0, -100.0]))
    Array([ 0.        ,  0.20791042, -0.03974415], dtype=float32)
    """
    return apply("i1e", lax.bessel_i1e, x)


def _unscaled(scaled: Array, x: Array) -> Array:
    """exp(|x|) * scaled, as two half-steps so it overflows only if the product does."""
    half = lnp.exp(0.5 * lnp.abs(x))
    return lnp.where(lnp.isinf(x), lnp.copysign(lnp.inf, scaled), half * (scaled * half))


def _i0(x: Array) -> Array:
    return _unscaled(_i0e(x), x)


def _i1(x: Array) -> Array:
    return _unscaled(lax.bessel_i1e(x), x)


def i0(x: ArrayLike) -> Array:
    """The modified Bessel function of the first kind of order 0, I0(x).

    >>> import numpy as np
    >>> i0(np.float32([0.0, 1.0, 90.0]))
    Array([1.0000001e+00, 1.2660658e+00, 5.1392376e+37], dtype=float32)
    """
    return apply("i0", _i0, x)


def i1(x: ArrayLike) -> Array:
    """The modified Bessel function of the first kind of order 1, I1(x).

    >>> import numpy as np
    >>> i1(np.float32([0.0, 1.0, -2.0]))
    Array([ 0.       ,  0.5651591, -1.5906367], dtype=float32)
    """
    return apply("i1", _i1, x)


# --- J_n -------------------------------------------------------------------------------------
def _leading_terms(z: Array, v: int) -> list[Array]:
    """(z/2)**k / k! for k = 0 ... v: J_k(z) to rounding for |z| < sqrt(eps)."""
    terms = [lnp.ones_like(z)]
    for k in range(1, v + 1):
        terms.append(terms[-1] * (0.5 * z) / k)
    return terms


def _miller(z: Array, v: int, n_iter: int) -> Array:
    """J_0 ... J_v at z (nonzero, finite) from the normalised backward recurrence."""

    def step(carry, k):
        above, two_above, norm, exponent = carry  # f_(k+1), f_(k+2) and the running sum
        f = 2 * (k + 1) / z * above - two_above
        norm = norm + lnp.where(lnp.fmod(k, 2.0) == 0, 2 * f, 0.0)
        # Keep |f| < 1 with exact power-of-two scalings, and count them.
        _, e = lnp.frexp(lax.stop_gradient(f))
        scale = lnp.ldexp(lnp.ones_like(f), -e)
        exponent = exponent + e
        return (f * scale, above * scale, norm * scale, exponent), (f * scale, exponent)

    zero = lnp.zeros_like(z)
    init = (lnp.ones_like(z), zero, zero, lnp.zeros(z.shape, lnp.int32))
    orders = lnp.arange(n_iter + 1, dtype=z.dtype)
    (f0, _, norm, final), (values, exponents) = lax.scan(step, init, orders, reverse=True)
    # Frame changes: f_k was stored 2**(exponent_k - final) times larger than f_0.
    return lnp.ldexp(values[: v + 1] / (norm - f0), exponents[: v + 1] - final)


def _bessel_jn(z: Array, v: int, n_iter: int) -> Array:
    tiny = lnp.abs(z) < eps(z) ** 0.5
    special = tiny | lnp.isinf(z)
    recurrence = _miller(lnp.where(special, 1.0, z), v, n_iter)
    series = lnp.stack(_leading_terms(lnp.where(tiny, z, 0.0), v))
    out = lnp.where(tiny, series, recurrence)
    return lnp.where(lnp.isinf(z), 0.0, out)


_bessel_jn_compiled = lc.jit(_bessel_jn, static_argnums=(1, 2))


def bessel_jn(z: ArrayLike, *, v: int, n_iter: int = 50) -> Array:
    """Bessel functions of the first kind J_0(z) ... J_v(z), integer orders, real z.

    Args:
      z: the points, real.
      v: the highest order, a non-negative int.
      n_iter: the order the backward recurrence starts from. It must exceed both v
        and |z| comfortably: 50 gives float64 accuracy for |z| up to about 25 (the
        rule of thumb is 0.5 log10(6.28 + n) - n log10(1.36 + |z| / n) > 20).

    Returns:
      An array of shape `(v + 1, *z.shape)`: row k holds J_k(z).

    >>> import numpy as np
    >>> bessel_jn(np.float32(1.0), v=1)
    Array([0.76519763, 0.44005057], dtype=float32)
    """
    if lnp.issubdtype(lnp.asarray(z).dtype, lnp.complexfloating):
        raise ValueError("bessel_jn: complex z is not supported; pass real values.")
    v = operator.index(v)
    n_iter = operator.index(n_iter)
    if v < 0:
        raise ValueError(f"bessel_jn: the order v must be >= 0, got {v}.")
    if n_iter < v:
        raise ValueError(f"bessel_jn: n_iter ({n_iter}) must be at least the order v ({v}).")
    (z,), dtype = promote_inexact("bessel_jn", z)
    return _bessel_jn_compiled(z, v, n_iter).astype(dtype)
