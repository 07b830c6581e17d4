"""The gamma function and its logarithm, sign and logarithmic derivatives:
gamma, gammaln, loggamma, gammasgn, digamma, polygamma, multigammaln.

XLA's lgamma and digamma are loose below 12 (an absolute error of ~15 ulps, so a
large relative one near their zeros) and exp(lgamma(x)) multiplies that by
|lgamma(x)|. Here lgamma and digamma on (0, 12) are Taylor series about 1 or 2
(coefficients from zeta(k)) after exact whole steps, digamma near its root has
its own series, and Gamma(x) for x > 0 is Gamma(y), y in [1, 2), times the exact
factors y, y + 1, ..., x - 1 — a few ulps up to the overflow at x = 171.6 (35.0
in float32), where exp(lgamma(x)) is hundreds of ulps off. Negative x goes
through the reflection formulas with exact sin(pi x) and cos(pi x).

>>> import numpy as np
>>> gamma(np.float32([0.5, 5.0, -1.5]))
Array([ 1.7724539, 24.       ,  2.3632717], dtype=float32)
"""

from __future__ import annotations

import math
import operator
from decimal import Decimal
from functools import cache

import numpy as np

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp
from lamella.scipy.special._numerics import (
    Array,
    ArrayLike,
    apply,
    cospi,
    horner,
    hurwitz_zeta_float,
    is_float64,
    sinpi,
    zeta_minus_one,
)

__all__ = ["digamma", "gamma", "gammaln", "gammasgn", "loggamma", "multigammaln", "polygamma"]


# --- lgamma near its zeros ------------------------------------------------------------
@cache
def _lgamma_taylor() -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Taylor coefficients, highest order first, of lgamma(1 + a) and lgamma(2 + b):

        lgamma(1 + a) = -euler_gamma a + sum_k>=2 (-1)^k zeta(k) / k a^k
        lgamma(2 + b) = (1 - euler_gamma) b + sum_k>=2 (-1)^k (zeta(k) - 1) / k b^k

    For |a| <= 0.3 and |b| <= 0.7 the terms shrink like 0.3^k and 0.35^k, so 34
    reach float64 precision.
    """
    ks = range(34, 1, -1)
    near_one = tuple((-1) ** k * (1 + zeta_minus_one(k)) / k for k in ks)
    near_two = tuple((-1) ** k * zeta_minus_one(k) / k for k in ks)
    euler = float(np.euler_gamma)
    return near_one + (-euler, 0.0), near_two + (1 - euler, 0.0)


def _two_series(first: Array, t: Array, series: tuple[tuple[float, ...], ...]) -> Array:
    """Per element, the first or the second of two polynomials of one degree at t:
    one Horner loop whose coefficients are selected per element (half the program
    of evaluating both)."""
    one, two = series
    out = lnp.zeros_like(t)
    for c1, c2 in zip(one, two):
        out = out * t + lnp.where(first, c1, c2)
    return out


def _lgamma_near_zeros(x: Array) -> Array:
    """lgamma(x) for 0.7 <= x <= 2.7, to a few ulps of the (small) result."""
    out = _two_series(x < 1.3, lnp.where(x < 1.3, x - 1, x - 2), _lgamma_taylor())
    return lnp.where(out == 0, 0.0, out)  # +0 at 1 and 2, as SciPy


# Below this XLA's lgamma and digamma are a few ulps off; the Taylor series after
# at most _SMALL_STEPS whole steps replace them.
_SMALL = 12.0
_SMALL_STEPS = 10


def _lgamma_small(x: Array) -> Array:
    """lgamma(x) for 0 < x < _SMALL from the Taylor series in a = x - 1 or b = x - 2,
    or in x itself (lgamma(1 + x) = lgamma(x) + log(x)) below 0.7, or in x - 2 - m
    for m = 1 ... _SMALL_STEPS whole steps down from above 2.7 — each argument exact."""
    steps = lnp.maximum(lnp.ceil(x - 2.7), 0.0)
    about_one = (x < 0.3) | ((x >= 0.7) & (x < 1.3))
    t = lnp.where(about_one, lnp.where(x < 0.3, x, x - 1),
                  lnp.where(x < 0.7, x, x - 2 - steps))
    out = _two_series(about_one, t, _lgamma_taylor())
    product = lnp.ones_like(x)
    for j in range(1, _SMALL_STEPS + 1):
        product = product * lnp.where(j <= steps, x - j, 1.0)
    out = out + lnp.where(x >= 2.7, lnp.log(product), 0.0)
    out = out - lnp.where(x < 0.3, lnp.log(x), lnp.where(x < 0.7, lnp.log(x * (x + 1)), 0.0))
    return lnp.where(out == 0, 0.0, out)  # +0 at 1 and 2, as SciPy


# Stirling's series for lgamma(z) - ((z - 1/2) log z - z + log(2 pi) / 2), highest
# order first: B_2k / (2k (2k - 1) z^(2k - 1)) for k = 7 ... 1, in powers of 1/z^2.
_STIRLING = (1 / 156, -691 / 360360, 1 / 1188, -1 / 1680, 1 / 1260, -1 / 360, 1 / 12)
# digamma(z) - (log z - 1/(2z)), the same way: -B_2k / (2k z^2k), k = 7 ... 1.
_DIGAMMA_ASYMPTOTIC = (-1 / 12, 691 / 32760, -1 / 132, 1 / 240, -1 / 252, 1 / 120, -1 / 12)


def stirling_correction(z: Array) -> Array:
    """lgamma's remainder after Stirling's formula, to float64 precision for z >= 8."""
    inv = 1 / z
    return horner(inv * inv, _STIRLING) * inv


def _gammaln_large(x: Array) -> Array:
    """lgamma(x) for x >= _SMALL by Stirling's series (inf stays inf)."""
    safe = lnp.where(lnp.isinf(x), _SMALL, x)
    out = (safe - 0.5) * lnp.log(safe) - safe + 0.5 * math.log(2 * math.pi)
    return lnp.where(lnp.isinf(x), lnp.inf, out + stirling_correction(safe))


def _gammaln_nonnegative(x: Array) -> Array:
    small = x < _SMALL
    out = lnp.where(small, _lgamma_small(lnp.where(small & (x > 0), x, 1.0)),
                    _gammaln_large(lnp.where(small, _SMALL, x)))
    return lnp.where((x == 0) | lnp.isinf(x), lnp.inf, out)


@lc.custom_jvp
def _gammaln(x: Array) -> Array:
    # Reflection, with an exact sin(pi x): log|Gamma(x)| = log(pi / |sin(pi x)|) - lgamma(1 - x).
    negative = (x < 0) & lnp.isfinite(x)
    out = _gammaln_nonnegative(lnp.where(negative, 1 - x, x))
    return lnp.where(negative, math.log(math.pi) - lnp.log(lnp.abs(sinpi(x))) - out, out)


@_gammaln.defjvp
def _gammaln_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return _gammaln(x), t * _digamma(x)


def gammaln(x: ArrayLike) -> Array:
    """log|Gamma(x)|, the natural logarithm of the absolute value of the gamma function.

    inf at the poles 0, -1, -2, ...

    >>> import numpy as np
    >>> gammaln(np.float32([1.0, 2.0, 10.0]))
    Array([ 0.      ,  0.      , 12.801827], dtype=float32)
    """
    return apply("gammaln", _gammaln, x)


# --- Gamma ------------------------------------------------------------------------------
def _largest_argument(x: Array) -> float:
    """The x above which Gamma(x) overflows."""
    return 171.62437695630272 if is_float64(x) else 35.040096


def _gamma_positive(x: Array) -> Array:
    """Gamma(x) for x > 0: Gamma(y) with y = frac(x) + 1 in [1, 2), times y (y + 1) ...
    (x - 1) — each factor exact, since it keeps x's fraction bits — or over x below 1."""
    whole = lnp.floor(x)
    below_one = x < 1
    y = lnp.where(below_one, x + 1, x - whole + 1)
    factors = lnp.where(below_one, 0.0, lnp.minimum(whole - 1, _largest_argument(x)))
    steps = math.ceil(_largest_argument(x))

    def multiply(j, product):
        return product * lnp.where(j < factors, y + j, 1.0)

    product = lax.fori_loop(0, steps, multiply, lnp.exp(_lgamma_near_zeros(y)))
    return lnp.where(below_one, product / x, product)


@lc.custom_jvp
def _gamma(x: Array) -> Array:
    positive = _gamma_positive(lnp.where(x > 0, x, 1 - x))
    # Reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x); sinpi(+-0) = +-0 gives +-inf.
    reflected = np.pi / (sinpi(x) * positive)
    out = lnp.where(x > 0, positive, reflected)
    out = lnp.where(x > _largest_argument(x), lnp.inf, out)
    return lnp.where((x < 0) & (x == lnp.floor(x)), lnp.nan, out)  # the poles and -inf


@_gamma.defjvp
def _gamma_jvp(primals, tangents):
    x, = primals
    t, = tangents
    out = _gamma(x)
    return out, t * out * _digamma(x)


def gamma(x: ArrayLike) -> Array:
    """The gamma function, the integral of t**(x-1) exp(-t) for t from 0 to inf,
    continued to negative x.

    +-inf at +-0 and NaN at the negative integers and -inf (as in SciPy).

    >>> import numpy as np
    >>> gamma(np.float32([1.0, 4.0, 0.5]))
    Array([1.       , 6.       , 1.7724539], dtype=float32)
    """
    return apply("gamma", _gamma, x)


def _gammasgn(x: Array) -> Array:
    x = lax.stop_gradient(x)
    whole = lnp.floor(x)
    odd = (whole - 2 * lnp.floor(whole / 2)) == 1
    out = lnp.where(x > 0, 1.0, lnp.where(odd, -1.0, 1.0))
    out = lnp.where(x == 0, lnp.copysign(1.0, x), out)
    return lnp.where(((x < 0) & (x == whole)) | lnp.isnan(x), lnp.nan, out)


def gammasgn(x: ArrayLike) -> Array:
    """The sign of the gamma function: 1 or -1, NaN at the poles -1, -2, ... and -inf.

    Gamma(+0) = +inf and Gamma(-0) = -inf, so their signs are 1 and -1. Its
    derivative is zero.

    >>> import numpy as np
    >>> gammasgn(np.float32([2.0, -0.5, -1.5]))
    Array([ 1., -1.,  1.], dtype=float32)
    """
    return apply("gammasgn", _gammasgn, x)


def _loggamma(x: Array) -> Array:
    return lnp.where(x < 0, lnp.nan, _gammaln(x))


def loggamma(x: ArrayLike) -> Array:
    """The principal branch of log(Gamma(x)) for real x: gammaln(x) for x >= 0
    (inf at 0) and NaN for x < 0, where Gamma is negative or undefined.

    >>> import numpy as np
    >>> loggamma(np.float32([3.0, 0.5]))
    Array([0.6931472, 0.5723649], dtype=float32)
    """
    return apply("loggamma", _loggamma, x)


# --- digamma and polygamma --------------------------------------------------------------
# The positive zero of digamma, to 36 digits: XLA's digamma has an absolute error of
# a few ulps there, so a relative error in the thousands of ulps next to it.
_DIGAMMA_ROOT = Decimal("1.46163214496836234126265954232572132847")


@cache
def _digamma_root_taylor() -> tuple[float, ...]:
    """Taylor coefficients of digamma about its root x0, highest order first:
    psi^(k)(x0) / k! = (-1)^(k+1) zeta(k + 1, x0), shrinking like x0^-k (25 terms
    for |x - x0| <= 0.3 in float64)."""
    x0 = float(_DIGAMMA_ROOT)
    return tuple((-1) ** (k + 1) * hurwitz_zeta_float(k + 1, x0) for k in range(25, 0, -1)) + (0.0,)


def _digamma_near_root(x: Array) -> Array:
    # x - x0 without rounding x0 first: x0 = hi + lo, and x - hi is exact near x0.
    hi = np.asarray(float(_DIGAMMA_ROOT), x.dtype)
    lo = float(_DIGAMMA_ROOT - Decimal(float(hi)))
    # XLA folds (x - hi) - lo into x - (hi + lo) when both are constants, which
    # rounds lo away; lo as a value it cannot fold keeps the subtraction apart.
    lo = lnp.where(lnp.isnan(x), 0.0, lo)
    return horner((x - hi) - lo, _digamma_root_taylor())


@cache
def _digamma_taylor() -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The derivatives of `_lgamma_taylor`'s polynomials: digamma(1 + a) and
    digamma(2 + b), highest order first."""
    return tuple(tuple((len(c) - 1 - i) * c_i for i, c_i in enumerate(c[:-1]))
                 for c in _lgamma_taylor())


def _digamma_positive(x: Array) -> Array:
    """digamma(x) for x > 0: below _SMALL the Taylor series of `_lgamma_small` differentiated,
    after the same exact steps (psi(x + 1) = psi(x) + 1/x), and the root's own series."""
    steps = lnp.maximum(lnp.ceil(x - 2.7), 0.0)
    about_one = (x < 0.3) | ((x >= 0.7) & (x < 1.3))
    t = lnp.where(about_one, lnp.where(x < 0.3, x, x - 1),
                  lnp.where(x < 0.7, x, x - 2 - steps))
    out = _two_series(about_one, t, _digamma_taylor())
    for j in range(1, _SMALL_STEPS + 1):
        out = out + lnp.where(j <= steps, 1 / (x - j), 0.0)
    out = out - lnp.where(x < 0.3, 1 / x, lnp.where(x < 0.7, 1 / x + 1 / (x + 1), 0.0))
    near_root = lnp.abs(x - float(_DIGAMMA_ROOT)) <= 0.3
    out = lnp.where(near_root, _digamma_near_root(lnp.where(near_root, x, 1.5)), out)
    large = lnp.where(x < _SMALL, _SMALL, x)
    inv2 = 1 / (large * large)
    asymptotic = lnp.log(large) - 0.5 / large + horner(inv2, _DIGAMMA_ASYMPTOTIC) * inv2
    return lnp.where(x < _SMALL, out, asymptotic)


@lc.custom_jvp
def _digamma(x: Array) -> Array:
    # Reflection, with exact sin(pi x) and cos(pi x): psi(x) = psi(1 - x) - pi cot(pi x).
    negative = (x < 0) & (x != lnp.floor(x))
    out = _digamma_positive(lnp.where(negative, 1 - x, x))
    out = lnp.where(negative, out - np.pi * cospi(x) / sinpi(x), out)
    out = lnp.where((x < 0) & (x == lnp.floor(x)), lnp.nan, out)  # the poles and -inf
    # As SciPy: -inf at +0 and +inf at -0 (the limits from the right and left).
    return lnp.where(x == 0, lnp.copysign(lnp.inf, -x), out)


@_digamma.defjvp
def _digamma_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return _digamma(x), t * _polygamma(lnp.ones_like(x), x)


def digamma(x: ArrayLike) -> Array:
    """The digamma function psi(x) = Gamma'(x) / Gamma(x), the derivative of gammaln.

    NaN at the negative integers; -inf at +0 and +inf at -0.

    >>> import numpy as np
    >>> digamma(np.float32([1.0, 2.0]))
    Array([-0.5772157 ,  0.42278433], dtype=float32)
    """
    return apply("digamma", _digamma, x)


@lc.custom_jvp
def _polygamma(n: Array, x: Array) -> Array:
    # psi^(n)(x) = (-1)^(n+1) n! zeta(n + 1, x): XLA's zeta is accurate to a few ulps,
    # its polygamma is not.
    order = lnp.where(n < 1, 1.0, n)
    sign = 1 - 2 * (order - 2 * lnp.floor(order / 2))
    out = -sign * _gamma(order + 1) * lax.zeta(order + 1, x)
    out = lnp.where(n == 0, _digamma(x), out)
    return lnp.where((n < 0) | (n != lnp.floor(n)), lnp.nan, out)


@_polygamma.defjvp
def _polygamma_jvp(primals, tangents):
    n, x = primals
    _, t = tangents
    return _polygamma(n, x), t * _polygamma(n + 1, x)


def polygamma(n: ArrayLike, x: ArrayLike) -> Array:
    """The n-th derivative of the digamma function at x (`n` of an integer dtype).

    polygamma(0, x) is digamma(x); negative n gives NaN. Differentiable in x.

    >>> import numpy as np
    >>> polygamma(np.array([1, 2]), np.float32(1.0))
    Array([ 1.644934, -2.404114], dtype=float32)
    """
    n_dtype = lnp.result_type(n)
    if not lnp.issubdtype(n_dtype, lnp.integer):
        raise ValueError(f"polygamma: the order n must have an integer dtype, got {n_dtype} "
                         "(pass n as an int or integer array).")
    return apply("polygamma", _polygamma, n, x)


def multigammaln(a: ArrayLike, d: int) -> Array:
    """The log of the multivariate gamma function of dimension d,
    d (d - 1) / 4 log(pi) + sum over j < d of gammaln(a - j / 2).

    `d` is a positive Python integer (it sets the number of terms). Where
    a <= (d - 1) / 2, outside the domain, the result is NaN (SciPy raises).

    >>> import numpy as np
    >>> multigammaln(np.float32(2.5), 3)
    Array(1.8809954, dtype=float32)
    """
    try:
        d = operator.index(d)
    except TypeError:
        raise TypeError(f"multigammaln: d must be a concrete Python integer (the dimension), "
                        f"got {d!r}") from None
    if d < 1:
        raise ValueError(f"multigammaln: d must be at least 1, got {d}")
    return apply("multigammaln", _multigammaln(d), a)


@cache
def _multigammaln(d: int):
    def of_a(a: Array) -> Array:
        # One gammaln over a stacked axis of the d arguments keeps the program small.
        terms = _gammaln(a[..., None] - lnp.arange(d, dtype=a.dtype) / 2).sum(-1)
        out = d * (d - 1) / 4 * math.log(math.pi) + terms
        return lnp.where(a <= (d - 1) / 2, lnp.nan, out)
    return of_a
