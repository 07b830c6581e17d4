"""Loader's saddle-point form of the binomial and Poisson probabilities ("Fast
and accurate computation of binomial probabilities", 2000), which SciPy (through
Boost) and R use: log C(n, x) p^x q^(n-x) written as

    stirlerr(n) - stirlerr(x) - stirlerr(n - x) - bd0(x, n p) - bd0(n - x, n q)
        - log(2 pi x (n - x) / n) / 2

where stirlerr(n) = log Gamma(n + 1) - (n + 1/2) log n + n - log sqrt(2 pi) is the
small error of Stirling's formula and bd0(x, m) = x log(x / m) + m - x >= 0 the
deviance. Every term is small or of the result's own size, so the log
probability keeps its relative accuracy for huge n; the textbook
log-gamma form loses eps * n log n (in float32 at n = 1000 that is 7e-4
absolute, a pmf off by 6000 ulps). Both pieces are differentiable in all their
arguments, and continuous in x, as JAX's formulas for non-integer k are.

>>> import numpy as np
>>> import lamella.numpy as lnp
>>> binomial_logpmf(lnp.float32(500.0), lnp.float32(1000.0), lnp.float32(0.5))
Array(-3.6799192, dtype=float32)
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import lamella.lax as lax
import lamella.numpy as lnp
from lamella.scipy import special
from lamella.scipy.stats._common import LOG_SQRT_2PI, Array, log1p, safe

__all__ = ["bd0", "binomial_logpmf", "poisson_logpmf", "stirlerr", "two_product"]

_PI = Decimal("3.14159265358979323846264338327950288419716939937510")


def _stirlerr_exact(twice_n: int) -> float:
    """stirlerr(n) for n = twice_n / 2, from exact factorials in 50 digits."""
    with localcontext() as context:
        context.prec = 50
        n = Decimal(twice_n) / 2
        if twice_n % 2 == 0:
            log_gamma = Decimal(math.factorial(twice_n // 2)).ln()
        else:  # Gamma(m + 3/2) = (2m + 2)! sqrt(pi) / (4^(m+1) (m + 1)!)
            m = twice_n // 2
            ratio = Decimal(math.factorial(2 * m + 2)) / (Decimal(4) ** (m + 1)
                                                          * math.factorial(m + 1))
            log_gamma = ratio.ln() + _PI.ln() / 2
        return float(log_gamma - (n + Decimal("0.5")) * n.ln() + n - (2 * _PI).ln() / 2)


# stirlerr at 0.5, 1, ..., 15: below 15 the direct formula cancels (38 ulps of 1).
_TABLE = [0.0] + [_stirlerr_exact(k) for k in range(1, 31)]
# Stirling's series B_2k / (2k (2k - 1) n^(2k - 1)), k = 1..7: 4e-16 relative at n = 15.
_SERIES = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)


def stirlerr(n: Array) -> Array:
    """log Gamma(n + 1) - (n + 1/2) log n + n - log sqrt(2 pi), for n > 0.

    Above 15 Stirling's series; below, at integers and half-integers a table
    (exact to the last bit), elsewhere the direct formula. The table's values
    carry the direct formula's derivative.
    """
    large = n > 15
    big = safe(large, n, 16.0)
    inverse_square = 1 / (big * big)
    series = lnp.zeros_like(n)
    for c in reversed(_SERIES):
        series = series * inverse_square + c
    series = series / big
    small = safe(~large, n, 1.0)
    direct = special.gammaln(small + 1) - (small + 0.5) * lnp.log(small) + small - LOG_SQRT_2PI
    twice = 2 * small
    on_grid = twice == lnp.round(twice)
    table = lnp.asarray(_TABLE, n.dtype)[lnp.clip(lnp.round(twice), 0, 30).astype(lnp.int32)]
    tabled = table + (direct - lax.stop_gradient(direct))
    return lnp.where(large, series, lnp.where(on_grid, tabled, direct))


def two_product(a: Array, b: Array) -> tuple[Array, Array]:
    """(p, e) with p + e = a * b exactly: Dekker's product by Veltkamp halves."""
    split = 2.0 ** (27 if lnp.finfo(a.dtype).bits == 64 else 12) + 1

    def halves(v):
        c = split * v
        high = c - (c - v)
        return high, v - high

    (a1, a2), (b1, b2) = halves(a), halves(b)
    p = a * b
    return p, ((a1 * b1 - p) + a1 * b2 + a2 * b1) + a2 * b2


def bd0(x: Array, m: Array, d: Array) -> Array:
    """The deviance x log(x / m) + m - x for x >= 0, m > 0, given d = x - m to full
    accuracy: with v = d / (x + m), d v + 2 x (v^3/3 + v^5/5 + ...) when
    |v| < 0.1, where the direct form cancels (and where d, the difference of two
    close numbers, is all that matters: m = n p rounded would cost 1e-4 in
    float32 at n = 4e5)."""
    close = lnp.abs(d) < 0.1 * (x + m)
    x_c, m_c, d_c = safe(close, x, 1.0), safe(close, m, 1.0), safe(close, d, 0.0)
    v = d_c / (x_c + m_c)
    v2 = v * v
    terms = 9 if lnp.finfo(x.dtype).bits == 64 else 4
    odd = lnp.zeros_like(v)
    for j in range(terms, 0, -1):
        odd = odd * v2 + 1 / (2 * j + 1)
    series = d_c * v + 2 * x_c * v * v2 * odd
    x_f, m_f = safe(~close, x, 1.0), safe(~close, m, 2.0)
    direct = special.xlogy(x_f, x_f / m_f) + m_f - x_f
    return lnp.where(close, series, direct)


def _log_harmonic_spread(x: Array, n: Array) -> Array:
    """log(x (n - x) / n) as log(s) + log1p(-s / n) with s the smaller of x and
    n - x (exact): log1p(-x / n) would round x / n near 1."""
    s = lnp.minimum(x, n - x)
    return lnp.log(s) + log1p(-s / n)


def binomial_logpmf(x: Array, n: Array, p: Array) -> Array:
    """log C(n, x) p^x (1 - p)^(n - x) for 0 <= x <= n and 0 <= p <= 1 (x real)."""
    interior = (x > 0) & (x < n) & (p > 0) & (p < 1)
    x_i, n_i, p_i = safe(interior, x, 1.0), safe(interior, n, 2.0), safe(interior, p, 0.5)
    # n p as an exact sum, so x - n p and (n - x) - n q = -(x - n p) are exact.
    mean, mean_error = two_product(n_i, p_i)
    d = (x_i - mean) - mean_error
    value = (stirlerr(n_i) - stirlerr(x_i) - stirlerr(n_i - x_i)
             - bd0(x_i, mean, d) - bd0(n_i - x_i, (n_i - mean) - mean_error, -d)
             - 0.5 * _log_harmonic_spread(x_i, n_i) - LOG_SQRT_2PI)
    at_zero = special.xlog1py(n, -safe(x == 0, p, 0.5))
    at_n = special.xlogy(n, safe(x == n, p, 0.5))
    # With p = 0 or 1 and 0 < x < n the probability is 0.
    edge = lnp.where(x == 0, at_zero, lnp.where(x == n, at_n, -lnp.inf))
    return lnp.where(interior, value, edge)


def poisson_logpmf(x: Array, mu: Array) -> Array:
    """log(mu^x e^-mu / x!) for x >= 0, mu >= 0 (x real)."""
    interior = (x > 0) & (mu > 0)
    x_i, mu_i = safe(interior, x, 1.0), safe(interior, mu, 1.0)
    value = -stirlerr(x_i) - bd0(x_i, mu_i, x_i - mu_i) - LOG_SQRT_2PI - 0.5 * lnp.log(x_i)
    edge = lnp.where(x == 0, -mu, -lnp.inf)  # x = 0, or mu = 0 < x
    return lnp.where(interior, value, edge)
