"""The beta function, its logarithm and the regularized incomplete beta function:
beta, betaln, betainc.

betainc is the continued fraction of the incomplete beta function (the form in
Numerical Recipes, section 6.4) summed by its three-term recurrence in a
`while_loop` until every element has converged, on the side of
x = (a + 1) / (a + b + 2) where it converges fast (the other side by the symmetry
I(x; a, b) = 1 - I(1 - x; b, a)). Its derivatives in a and b are the same
recurrence differentiated term by term and run to convergence with it, so they
are as accurate as the value; lax has no betainc primitive to lean on.

>>> import numpy as np
>>> betainc(np.float32(2.0), np.float32(3.0), np.float32(0.4))
Array(0.5248003, dtype=float32)
"""

from __future__ import annotations

import math

import lamella.core as lc
import lamella.numpy as lnp
from lamella.scipy.special._numerics import Array, ArrayLike, apply, eps, iterate, log1p
from lamella.scipy.special.gamma import (
    _digamma,
    _gamma,
    _gammaln,
    _gammasgn,
    _largest_argument,
    stirling_correction,
)

__all__ = ["beta", "betainc", "betaln"]


def _lgamma_difference(x: Array, y: Array) -> Array:
    """lgamma(y) - lgamma(x + y) for y >= 8 and x >= 0 without subtracting two large
    numbers: Stirling's formula for both, with the large terms cancelled by hand,
    -x log(y) - (x + y - 1/2) log1p(x / y) + x + c(y) - c(x + y)."""
    return (-x * lnp.log(y) - (x + y - 0.5) * log1p(x / y) + x
            + stirling_correction(y) - stirling_correction(x + y))


# --- beta and betaln ----------------------------------------------------------------
@lc.custom_jvp
def _betaln(a: Array, b: Array) -> Array:
    small, large = lnp.minimum(a, b), lnp.maximum(a, b)
    # Above 8 one Stirling difference keeps lgamma(large) - lgamma(small + large)
    # from cancelling; below, the lgammas are small and accurate.
    lg_small, lg_large, lg_sum = _gammaln(lnp.stack([small, large, a + b]))
    by_stirling = lg_small + _lgamma_difference(small, lnp.where(large >= 8, large, 8.0))
    return lnp.where((large >= 8) & (small > 0), by_stirling, lg_small + lg_large - lg_sum)


def _beta_slopes(a: Array, b: Array) -> tuple[Array, Array]:
    both = _digamma(a + b)
    return _digamma(a) - both, _digamma(b) - both


@_betaln.defjvp
def _betaln_jvp(primals, tangents):
    a, b = primals
    ta, tb = tangents
    da, db = _beta_slopes(a, b)
    return _betaln(a, b), ta * da + tb * db


def betaln(a: ArrayLike, b: ArrayLike) -> Array:
    """log|B(a, b)|, the natural logarithm of the absolute value of the beta function,
    accurate also for large a and b (where lgamma(a) + lgamma(b) - lgamma(a + b)
    would cancel).

    >>> import numpy as np
    >>> betaln(np.float32([1.0, 200.0]), np.float32([2.0, 200.0]))
    Array([  -0.6931472, -278.64197  ], dtype=float32)
    """
    return apply("betaln", _betaln, a, b)


def _beta_by_gamma(a: Array, b: Array) -> Array:
    """Gamma(a) Gamma(b) / Gamma(a + b), in an order that keeps the intermediate
    results normal when a + b is below Gamma's overflow (one product loop for all
    three gammas)."""
    larger = lnp.abs(a) >= lnp.abs(b)
    big, small = lnp.where(larger, a, b), lnp.where(larger, b, a)
    gamma_big, gamma_sum, gamma_small = _gamma(lnp.stack([big, a + b, small]))
    return gamma_big / gamma_sum * gamma_small


@lc.custom_jvp
def _beta(a: Array, b: Array) -> Array:
    top = _largest_argument(a)
    in_range = lnp.maximum(lnp.maximum(lnp.abs(a), lnp.abs(b)), lnp.abs(a + b)) < top
    by_gamma = _beta_by_gamma(lnp.where(in_range, a, 1.0), lnp.where(in_range, b, 1.0))
    sign = _gammasgn(a) * _gammasgn(b) * _gammasgn(a + b)
    return lnp.where(in_range, by_gamma, sign * lnp.exp(_betaln(a, b)))


@_beta.defjvp
def _beta_jvp(primals, tangents):
    a, b = primals
    ta, tb = tangents
    out = _beta(a, b)
    da, db = _beta_slopes(a, b)
    return out, out * (ta * da + tb * db)


def beta(a: ArrayLike, b: ArrayLike) -> Array:
    """The beta function B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b).

    >>> import numpy as np
    >>> beta(np.float32([2.0, 0.5]), np.float32([3.0, 0.5]))
    Array([0.08333334, 3.1415927 ], dtype=float32)
    """
    return apply("beta", _beta, a, b)


# --- betainc ------------------------------------------------------------------------
_MAX_STEPS = 10_000
_BIG = 2.0 ** 60


def _fraction(a: Array, b: Array, x: Array, active: Array, derivatives: bool):
    """The continued fraction K with I(x; a, b) = x^a (1 - x)^b / (a B(a, b)) K, and
    (if `derivatives`) its derivatives in a and b.

    K = 1 / (1 + d1 / (1 + d2 / (1 + ...))) with
    d(2m+1) = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)) and
    d(2m) = m (b - m) x / ((a + 2m - 1)(a + 2m)); its convergents A/B follow
    A(n+1) = A(n) + d(n) A(n-1) (and the same for B), which differentiates term by
    term. Each state entry is (value, d/da, d/db).
    """
    zero, one = lnp.zeros_like(x), lnp.ones_like(x)

    def odd(m):
        d = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        da = d * (1 / (a + m) + 1 / (a + b + m) - 1 / (a + 2 * m) - 1 / (a + 2 * m + 1))
        return d, da, d / (a + b + m)

    def even(m):
        denominator = (a + 2 * m - 1) * (a + 2 * m)
        d = m * (b - m) * x / denominator
        return d, -d * (1 / (a + 2 * m - 1) + 1 / (a + 2 * m)), m * x / denominator

    def apply_term(term, state):
        d, dd_a, dd_b = term
        (a0, a1), (b0, b1) = state[0], state[1]  # (previous, current) numerators, denominators
        new_a = tuple(c + d * p for c, p in zip(a1, a0))
        new_b = tuple(c + d * p for c, p in zip(b1, b0))
        # The term's own derivatives multiply the previous convergent.
        new_a = (new_a[0], new_a[1] + dd_a * a0[0], new_a[2] + dd_b * a0[0])
        new_b = (new_b[0], new_b[1] + dd_a * b0[0], new_b[2] + dd_b * b0[0])
        return (a1, new_a), (b1, new_b)

    def ratio(state):
        (_, (num, num_a, num_b)), (_, (den, den_a, den_b)) = state
        k = num / den
        return k, (num_a - k * den_a) / den, (num_b - k * den_b) / den

    def rescale(state):
        den = state[1][1][0]
        scale = lnp.where((lnp.abs(den) > _BIG) | (lnp.abs(den) < 1 / _BIG), 1 / lnp.abs(den), 1.0)
        return tuple(tuple(tuple(v * scale for v in triple) for triple in pair) for pair in state)

    numerators = ((zero, zero, zero), (one, zero, zero))
    denominators = ((one, zero, zero), (one, zero, zero))
    state = apply_term(odd(zero), (numerators, denominators))
    tolerance = eps(x)

    def step(carry):
        m, state, k = carry
        m = m + 1
        state = rescale(apply_term(odd(m), apply_term(even(m), state)))
        new_k = ratio(state)
        changing = lnp.abs(new_k[0] - k[0]) > tolerance * lnp.abs(new_k[0])
        if derivatives:
            for new, old in zip(new_k[1:], k[1:]):
                changing = changing | (lnp.abs(new - old) > tolerance * lnp.abs(new))
        return (m, state, new_k), changing

    _, _, k = iterate(step, (zero, state, ratio(state)), active, _MAX_STEPS)
    return k


def _log1pmx(t: Array) -> Array:
    """log(1 + t) - t, without cancellation for small t: with v = t / (2 + t),
    log(1 + t) = 2 atanh(v) and 2v - t = -t^2 / (2 + t) exactly; for |t| < 1/2,
    |v| <= 1/3 and 17 odd terms of atanh reach float64 precision."""
    v = t / (2 + t)
    v2 = v * v
    tail = lnp.zeros_like(t) + 1 / 37
    for k in range(17, 0, -1):
        tail = 1 / (2 * k + 1) + v2 * tail
    near = -t * t / (2 + t) + 2 * v * v2 * tail
    return lnp.where(lnp.abs(t) < 0.5, near, log1p(t) - t)


def _log_prefactor(a: Array, b: Array, x: Array) -> Array:
    """log(x^a (1 - x)^b / (a B(a, b))).

    For a, b >= 8 the direct sum cancels: its terms are each ~(a + b) times the
    result. With x0 = a / (a + b), Stirling's formula for B(a, b) turns it into
    a (log1p(u) - u) + b (log1p(v) - v) + log(b / (a (a + b))) / 2 - log(2 pi) / 2
    - c(a) - c(b) + c(a + b), with u = (x - x0) / x0 = w / a and v = -w / b for
    w = x b - (1 - x) a, so that a u + b v = 0 holds to rounding (x0 itself would
    round, and a (1 + v) - b (1 + u) is large).
    """
    direct = a * lnp.log(x) + b * log1p(-x) - lnp.log(a) - _betaln(a, b)
    large = (a >= 8) & (b >= 8)
    p, q = lnp.where(large, a, 8.0), lnp.where(large, b, 8.0)
    w = x * q - (1 - x) * p
    stirling = (p * _log1pmx(w / p) + q * _log1pmx(-w / q)
                + 0.5 * lnp.log(q / (p * (p + q))) - 0.5 * math.log(2 * math.pi)
                - stirling_correction(p) - stirling_correction(q)
                + stirling_correction(p + q))
    return lnp.where(large, stirling, direct)


def _incomplete_beta(a: Array, b: Array, x: Array, derivatives: bool):
    """I(x; a, b) and, if asked, its derivatives in a and b, for the regular cases."""
    regular = (a > 0) & (b > 0) & (x > 0) & (x < 1) & lnp.isfinite(a) & lnp.isfinite(b)
    flip = x > (a + 1) / (a + b + 2)
    # Evaluate the fraction for (p, q, y), on the side where it converges fast.
    p = lnp.where(regular, lnp.where(flip, b, a), 1.0)
    q = lnp.where(regular, lnp.where(flip, a, b), 1.0)
    y = lnp.where(regular, lnp.where(flip, 1 - x, x), 0.5)
    k, k_p, k_q = _fraction(p, q, y, regular, derivatives)
    log_prefactor = _log_prefactor(p, q, y)
    prefactor = lnp.exp(log_prefactor)
    part = prefactor * k
    value = lnp.where(flip, 1 - part, part)
    # Limits, as SciPy: the ends of [0, 1], then a or b zero or infinite.
    value = lnp.where(x == 0, 0.0, lnp.where(x == 1, 1.0, value))
    value = lnp.where((a == 0) & (b > 0) & (x > 0), 1.0, value)
    value = lnp.where((b == 0) & (a > 0) & (x < 1), 0.0, value)
    value = lnp.where((a == lnp.inf) & lnp.isfinite(b) & (x < 1), 0.0, value)
    value = lnp.where((b == lnp.inf) & lnp.isfinite(a) & (x > 0), 1.0, value)
    undefined = (a < 0) | (b < 0) | (x < 0) | (x > 1) | ((a == 0) & (b == 0))
    undefined = undefined | ((a == lnp.inf) & (b == lnp.inf)) | lnp.isnan(a + b + x)
    value = lnp.where(undefined, lnp.nan, value)
    if not derivatives:
        return value, None, None
    both = _digamma(p + q)
    slope_p = prefactor * (k_p + k * (lnp.log(y) - 1 / p - _digamma(p) + both))
    slope_q = prefactor * (k_q + k * (log1p(-y) - _digamma(q) + both))
    slope_a = lnp.where(flip, -slope_q, slope_p)
    slope_b = lnp.where(flip, -slope_p, slope_q)
    return value, lnp.where(regular, slope_a, 0.0), lnp.where(regular, slope_b, 0.0)


@lc.custom_jvp
def _betainc(a: Array, b: Array, x: Array) -> Array:
    return _incomplete_beta(a, b, x, derivatives=False)[0]


@_betainc.defjvp
def _betainc_jvp(primals, tangents):
    a, b, x = primals
    ta, tb, tx = tangents
    value, slope_a, slope_b = _incomplete_beta(a, b, x, derivatives=True)
    inside = (x > 0) & (x < 1)
    safe_x = lnp.where(inside, x, 0.5)
    density = lnp.exp((a - 1) * lnp.log(safe_x) + (b - 1) * log1p(-safe_x) - _betaln(a, b))
    return value, ta * slope_a + tb * slope_b + tx * lnp.where(inside, density, 0.0)


def betainc(a: ArrayLike, b: ArrayLike, x: ArrayLike) -> Array:
    """The regularized incomplete beta function
    I(x; a, b) = integral of t^(a-1) (1-t)^(b-1) from 0 to x, over B(a, b).

    Differentiable in x and — unlike JAX — in a and b. NaN outside a, b >= 0 and
    0 <= x <= 1.

    >>> import numpy as np
    >>> betainc(np.float32(1.0), np.float32(1.0), np.float32([0.25, 0.75]))
    Array([0.25, 0.75], dtype=float32)
    """
    return apply("betainc", _betainc, a, b, x)
