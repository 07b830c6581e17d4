"""The normal distribution truncated to [a, b] (in standard deviations about loc):
jax.scipy.stats.truncnorm's functions (JAX's set: no ppf or isf).

Everything rests on the log of the mass M = Phi(b) - Phi(a) of an interval,
carried as an anchor t and r with log M = log phi(t) + r, so that the huge
-t**2/2 of a far-tail interval cancels exactly between the density or the CDF
and M (t - a and t - b are kept as exact differences):

- one-sided tails (0 <= a < b, and its mirror): M = phi(a) (R(a) - e^(-(b-a)(b+a)/2) R(b))
  with the Mills ratio R(t) = Q(t) / phi(t) = sqrt(pi/2) erfcx(t/sqrt(2)); past
  the narrow case below the bracket never cancels by more than 1 - 1/e;
- intervals about 0: log1p(-Phi(a) - Phi(-b)), once they are wide enough that
  M > 0.38;
- narrow intervals (half-width h about m with h (|m| + h) <= 1, where both forms
  above would cancel): M = phi(m) h * integral of exp(-m h u - (h u)**2 / 2) over
  u in [-1, 1], by Gauss-Legendre (8 nodes in float32, 12 in float64; all
  terms positive).

Hence logpdf(x) = -(z - t)(z + t)/2 - r - log(scale) and logcdf(x) =
log M(a, z) - log M(a, b), with the quadratic terms cancelled before they are
rounded: truncnorm.logpdf(30.5, 30, 31) is -11.72269 in float32 as in SciPy's
float64, and the CDF of an interval far in the tail keeps its relative accuracy
(JAX's truncnorm loses all digits there; SciPy subtracts log_ndtr values, with an
absolute error of eps a**2 / 2, and loses narrow intervals). Where the CDF is
near 1 its log is log(1 - sf), and the other way round. Derivatives in x, a, b,
loc and scale are the closed forms (-z, and phi(u) / M for u = a, b, z against the
masses involved), carried by the same anchors. a >= b or
scale <= 0 gives NaN; a = -inf and b = inf are allowed.

>>> import numpy as np
>>> from lamella.scipy.stats import truncnorm
>>> truncnorm.logpdf(np.float32([30.5, 29.0]), 30.0, 31.0)
Array([-11.722694,       -inf], dtype=float32)
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

import lamella.core as lc
import lamella.numpy as lnp
from lamella.scipy import special
from lamella.scipy.stats._common import (
    LOG_SQRT_2PI,
    Array,
    ArrayLike,
    apply,
    log1mexp,
    log1p,
    nan_unless,
    safe,
    standardize,
)

__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]

_SQRT_HALF_PI = math.sqrt(math.pi / 2)
_LEGENDRE = {bits: np.polynomial.legendre.leggauss(n) for bits, n in ((32, 8), (64, 12))}


def _mills(t: Array) -> Array:
    """R(t) = Q(t) / phi(t) for t >= 0, finite t."""
    return _SQRT_HALF_PI * special.erfcx(t * math.sqrt(0.5))


def _tail(a: Array, b: Array) -> Array:
    """log((Q(a) - Q(b)) / phi(a)) for 0 <= a < b <= inf, not narrow."""
    far = lnp.isinf(b)
    b = lnp.where(far, a + 1, b)
    upper = lnp.exp(-0.5 * (b - a) * (b + a)) * _mills(b)
    return lnp.log(_mills(a) - lnp.where(far, 0.0, upper))


def _narrow(a: Array, b: Array) -> Array:
    """log((Phi(b) - Phi(a)) / phi(m)), m = (a + b) / 2, by Gauss-Legendre on [a, b]."""
    nodes, weights = _LEGENDRE[lnp.finfo(a.dtype).bits]
    m, h = 0.5 * (a + b), 0.5 * (b - a)
    s = h[..., None] * lnp.asarray(nodes, a.dtype)
    integrand = lnp.exp(-m[..., None] * s - 0.5 * s * s)
    return lnp.log(h * lnp.sum(lnp.asarray(weights, a.dtype) * integrand, axis=-1))


class Mass(NamedTuple):
    """The log-mass of [lo, hi]: log(Phi(hi) - Phi(lo)) = log phi(t) + r. The anchor t
    is also given as t - lo and t - hi, computed from exact differences, so that
    t1**2 - t2**2 of two intervals sharing an endpoint e is (d1 - d2)(2e + d1 + d2)
    with no rounding of e itself (which would cost eps e**2 in the far tail)."""
    t: Array
    from_low: Array
    from_high: Array
    r: Array


def log_mass(a: Array, b: Array) -> Mass:
    """The `Mass` of [a, b], a <= b."""
    h, m = 0.5 * (b - a), 0.5 * (a + b)
    narrow = h * (lnp.abs(m) + h) <= 1
    right = ~narrow & (a >= 0)
    left = ~narrow & (b <= 0)
    central = ~(narrow | right | left)
    r_narrow = _narrow(safe(narrow, a, 0.0), safe(narrow, b, 0.5))
    r_right = _tail(safe(right, a, 1.0), safe(right, b, 2.0))
    r_left = _tail(safe(left, -b, 1.0), safe(left, -a, 2.0))
    a_c, b_c = safe(central, a, -1.0), safe(central, b, 1.0)
    r_central = log1p(-special.ndtr(a_c) - special.ndtr(-b_c)) + LOG_SQRT_2PI
    # Anchors: the midpoint, the endpoint nearer 0 (only t**2 matters, so the left
    # tail's is b rather than -b), or 0.
    width = safe(narrow | right | left, b - a, 0.0)
    t = lnp.where(narrow, safe(narrow, m, 0.0), lnp.where(right, a, lnp.where(left, b, 0.0)))
    from_low = lnp.where(narrow, 0.5 * width, lnp.where(right, 0.0, lnp.where(left, width, -a)))
    from_high = lnp.where(narrow, -0.5 * width,
                          lnp.where(right, -width, lnp.where(left, 0.0, -b)))
    r = lnp.where(narrow, r_narrow, lnp.where(right, r_right,
                                             lnp.where(left, r_left, r_central)))
    return Mass(t, from_low, from_high, r)


def _setup(x, a, b, loc, scale, closed=False):
    """z, z where a < z < b (a <= z <= b if `closed`) and an interior point
    elsewhere (an empty interval's log(0) would put NaN into gradients), (a, b)
    made harmless where invalid, and validity."""
    z, valid = standardize(x, loc, scale)
    valid = valid & (a < b)
    a, b = safe(valid, a, -1.0), safe(valid, b, 1.0)
    finite_a, finite_b = lnp.isfinite(a), lnp.isfinite(b)
    middle = 0.5 * (safe(finite_a, a, 0.0) + safe(finite_b, b, 0.0))
    interior = lnp.where(finite_a & finite_b, middle,
                         lnp.where(finite_a, a + 1, lnp.where(finite_b, b - 1, 0.0)))
    inside = (z >= a) & (z <= b) if closed else (z > a) & (z < b)
    return z, lnp.where(inside, z, interior), a, b, valid


def _log_ratio(part: Mass, whole: Mass, shared: Array, low_shared: bool) -> Array:
    """log of the mass of `part` over that of `whole`, intervals sharing the
    endpoint `shared` (their low ends if `low_shared`, else their high ends)."""
    d1, d2 = (part.from_low, whole.from_low) if low_shared else (part.from_high, whole.from_high)
    finite = lnp.isfinite(shared)
    difference = lnp.where(finite, safe(finite, d1 - d2, 0.0), part.t - whole.t)
    return -0.5 * difference * (part.t + whole.t) + part.r - whole.r


def _log_density_over_mass(point: Array, mass: Mass, end: Array, low: bool) -> Array:
    """log(phi(point) / M) for `point` near `end`, the low (or high) end of M's
    interval: -(point - t)(point + t)/2 - r with point - t from exact differences."""
    offset = mass.from_low if low else mass.from_high
    finite = lnp.isfinite(end)
    gap = lnp.where(finite, (point - safe(finite, end, 0.0)) - safe(finite, offset, 0.0),
                    point - mass.t)
    return -0.5 * gap * (point + mass.t) - mass.r


def _standard_tangent(tangents, z, scale, valid):
    """The tangent of z = (x - loc) / scale, and of a and b."""
    dx, da, db, dloc, dscale = tangents
    s = safe(valid, scale, 1.0)
    return (dx - dloc - z * dscale) / s, da, db, dscale / s


def _density_parts(x, a, b, loc, scale):
    z, zc, a, b, valid = _setup(x, a, b, loc, scale, closed=True)
    mass = log_mass(a, b)
    inside = (z >= a) & (z <= b)
    value = _log_density_over_mass(zc, mass, a, low=True) - lnp.log(safe(valid, scale, 1.0))
    logpdf = nan_unless(valid, lnp.where(inside, value, -lnp.inf))
    # d/dz = -z, d/da = phi(a) / M, d/db = -phi(b) / M; outside the support 0.
    partials = (-zc, lnp.exp(_log_density_over_mass(a, mass, a, low=True)),
                -lnp.exp(_log_density_over_mass(b, mass, b, low=False)))
    return (logpdf, lnp.exp(logpdf)), (partials, inside, z, valid)


@lc.custom_jvp
def _density(x, a, b, loc, scale):
    """(logpdf, pdf), differentiated by their closed forms."""
    return _density_parts(x, a, b, loc, scale)[0]


@_density.defjvp
def _density_jvp(primals, tangents):
    (logpdf, pdf), ((d_z, d_a, d_b), inside, z, valid) = _density_parts(*primals)
    dz, da, db, d_log_scale = _standard_tangent(tangents, z, primals[4], valid)
    dlog = lnp.where(inside, d_z * dz + d_a * da + d_b * db, 0.0) - d_log_scale
    return (logpdf, pdf), (dlog, pdf * dlog)


def _tails_parts(x, a, b, loc, scale):
    z, zc, a, b, valid = _setup(x, a, b, loc, scale)
    whole, below, above = log_mass(a, b), log_mass(a, zc), log_mass(zc, b)
    lower = _log_ratio(below, whole, a, low_shared=True)
    upper = _log_ratio(above, whole, b, low_shared=False)
    half = -math.log(2)
    lower, upper = (lnp.where(upper < half, log1mexp(lnp.minimum(upper, half)), lower),
                    lnp.where(lower < half, log1mexp(lnp.minimum(lower, half)), upper))
    inside = (z > a) & (z < b)
    lower = nan_unless(valid, lnp.where(z <= a, -lnp.inf, lnp.where(z >= b, 0.0, lower)))
    upper = nan_unless(valid, lnp.where(z <= a, 0.0, lnp.where(z >= b, -lnp.inf, upper)))
    # phi(u) / M for the points and intervals that the partials of the logs need.
    a_whole = lnp.exp(_log_density_over_mass(a, whole, a, low=True))
    b_whole = lnp.exp(_log_density_over_mass(b, whole, b, low=False))
    lower_partials = (lnp.exp(_log_density_over_mass(zc, below, zc, low=False)),
                      a_whole - lnp.exp(_log_density_over_mass(a, below, a, low=True)),
                      -b_whole)
    upper_partials = (-lnp.exp(_log_density_over_mass(zc, above, zc, low=True)), a_whole,
                      lnp.exp(_log_density_over_mass(b, above, b, low=False)) - b_whole)
    values = (lnp.exp(lower), lnp.exp(upper), lower, upper)
    return values, (lower_partials, upper_partials, inside, z, valid)


@lc.custom_jvp
def _tails(x, a, b, loc, scale):
    """(cdf, sf, logcdf, logsf): logcdf and logsf each as the log of its own mass
    ratio, or as log(1 - the other) where the other is below 1/2 (a ratio near 1 is
    not its own log's best source: log M(a, z) - log M(a, b) keeps only absolute
    accuracy). Differentiated by closed forms (phi(u) / M terms)."""
    return _tails_parts(x, a, b, loc, scale)[0]


@_tails.defjvp
def _tails_jvp(primals, tangents):
    values, (lower_partials, upper_partials, inside, z, valid) = _tails_parts(*primals)
    dz, da, db, _ = _standard_tangent(tangents, z, primals[4], valid)

    def along(partials):
        d_z, d_a, d_b = partials
        return lnp.where(inside, d_z * dz + d_a * da + d_b * db, 0.0)

    cdf, sf, logcdf, logsf = values
    dlower, dupper = along(lower_partials), along(upper_partials)
    return values, (cdf * dlower, sf * dupper, dlower, dupper)


def logpdf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
           scale: ArrayLike = 1) -> Array:
    """log density log phi(z) - log(Phi(b) - Phi(a)) - log(scale) on a <= z <= b.

    >>> import numpy as np
    >>> logpdf(np.float32([0.0, 2.0]), -1.0, 1.0)
    Array([-0.53722334,        -inf], dtype=float32)
    """
    return apply("truncnorm.logpdf", _density, x, a, b, loc, scale, output=0)


def pdf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
        scale: ArrayLike = 1) -> Array:
    """The truncated normal density.

    >>> import numpy as np
    >>> pdf(np.float32([0.0]), -1.0, 1.0)
    Array([0.5843686], dtype=float32)
    """
    return apply("truncnorm.pdf", _density, x, a, b, loc, scale, output=1)


def cdf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
        scale: ArrayLike = 1) -> Array:
    """The CDF (Phi(z) - Phi(a)) / (Phi(b) - Phi(a)), 0 below a and 1 above b.

    >>> import numpy as np
    >>> cdf(np.float32([30.0001, 30.5]), 30.0, 31.0)
    Array([0.00297434, 0.99999976], dtype=float32)
    """
    return apply("truncnorm.cdf", _tails, x, a, b, loc, scale, output=0)


def logcdf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
           scale: ArrayLike = 1) -> Array:
    """log of the CDF.

    >>> import numpy as np
    >>> logcdf(np.float32([0.0]), -1.0, 1.0)
    Array([-0.6931472], dtype=float32)
    """
    return apply("truncnorm.logcdf", _tails, x, a, b, loc, scale, output=2)


def sf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
       scale: ArrayLike = 1) -> Array:
    """The survival function (Phi(b) - Phi(z)) / (Phi(b) - Phi(a)).

    >>> import numpy as np
    >>> sf(np.float32([30.5]), 30.0, 31.0)
    Array([2.6554198e-07], dtype=float32)
    """
    return apply("truncnorm.sf", _tails, x, a, b, loc, scale, output=1)


def logsf(x: ArrayLike, a: ArrayLike, b: ArrayLike, loc: ArrayLike = 0,
          scale: ArrayLike = 1) -> Array:
    """log of the survival function.

    >>> import numpy as np
    >>> logsf(np.float32([30.5]), 30.0, 31.0)
    Array([-15.141493], dtype=float32)
    """
    return apply("truncnorm.logsf", _tails, x, a, b, loc, scale, output=3)
