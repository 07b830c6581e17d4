"""Special functions: error functions, the gamma family, the regularized
incomplete gamma functions and exponentially scaled Bessel functions.

Most lower to the CHLO op of the same name, which XLA expands into polynomial
approximations. Two have no CHLO op and are built here:

- `igamma`/`igammac` (and the derivatives `igamma_grad_a`, `random_gamma_grad`)
  lower to a `stablehlo.while` loop: the power series of P(a, x) below the line
  x = a and Legendre's continued fraction for Q(a, x) above it, each running
  until every element has converged (or a cap on the steps is reached). The
  derivative with respect to `a` is the same loop differentiated term by term.
- `bessel_i0e` is Cephes' pair of Chebyshev expansions.

Loop bodies and formulas are written with lax primitives and traced into the
lowering, so they read as math rather than as MLIR.

>>> import numpy as np
>>> from lamella.lax.special import erf, igamma
>>> erf(np.float32(0.5))
Array(0.5204999, dtype=float32)
>>> igamma(np.float32(2.0), np.float32(1.0))
Array(0.26424113, dtype=float32)
"""

from __future__ import annotations

import math
from functools import cache, partial
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad, batching
from lamella.core.jaxpr import ClosedJaxpr
from lamella.core.staging import trace_to_jaxpr
from lamella.core.trace import aval_of
from lamella.lax.arithmetic import abs, add, div, mul, neg, sign, square, sub
from lamella.lax.control_flow.loops import while_loop
from lamella.lax.conversion import convert_element_type
from lamella.lax.fill import full_like
from lamella.lax.logical import bitwise_and, bitwise_not, bitwise_or, eq, ge, gt, le, lt, ne, select
from lamella.lax.lowering import (
    aval_to_ir_type,
    chlo,
    closed_consts,
    constant,
    hlo,
    ir,
    lower_fun,
    lower_jaxpr,
    register_lowering,
)
from lamella.lax.reductions import reduce_or
from lamella.lax.rounding import is_finite
from lamella.lax.standard import (
    FLOAT,
    broadcast_all,
    broadcast_batcher,
    broadcast_to_result,
    broadcasting_shape,
    check_dtypes,
    check_same_dtypes,
    const,
    defjvp,
    naryop,
    standard_primitive,
    unop,
)
from lamella.lax.transcendental import exp, expm1, log, log1p, sqrt

__all__ = ["bessel_i0e", "bessel_i0e_p", "bessel_i1e", "bessel_i1e_p", "digamma", "digamma_p",
           "erf", "erf_inv", "erf_inv_p", "erf_p", "erfc", "erfc_p", "igamma", "igamma_grad_a",
           "igamma_grad_a_p", "igamma_p", "igammac", "igammac_p", "lgamma", "lgamma_p",
           "polygamma", "polygamma_p", "random_gamma_grad", "random_gamma_grad_p",
           "betainc", "regularized_incomplete_beta_p", "zeta", "zeta_p"]


def _c(x: Any, value: float) -> Any:
    """The constant `value` in the shape and dtype of `x`."""
    return full_like(x, value)


def _not_differentiable(name: str, operand: str):
    def jvp(*args, **params):
        raise NotImplementedError(f"{name} is not differentiable with respect to `{operand}`; "
                                  "differentiate with respect to the other operand only.")
    return jvp


# --- erf, erfc, erf_inv -------------------------------------------------------
erf_p = unop("erf", FLOAT, chlo.erf)
erfc_p = unop("erfc", FLOAT, chlo.erfc)
erf_inv_p = unop("erf_inv", FLOAT, chlo.erf_inv)


def erf(x):
    """The error function, 2/sqrt(pi) * integral of exp(-t**2) from 0 to x.

    >>> erf(np.array([0.0, 1.0], np.float32))
    Array([0.        , 0.84270084], dtype=float32)
    """
    return erf_p.bind(x)


def erfc(x):
    """The complementary error function 1 - erf(x), accurate where erf(x) is near 1.

    >>> erfc(np.float32(3.0))
    Array(2.2090497e-05, dtype=float32)
    """
    return erfc_p.bind(x)


def erf_inv(x):
    """The inverse of `erf` on (-1, 1); +-inf at +-1.

    >>> erf_inv(np.float32(0.5))
    Array(0.47693628, dtype=float32)
    """
    return erf_inv_p.bind(x)


ad.defjvp(erf_p, lambda t, x: mul(const(x, 2 / math.sqrt(math.pi)), mul(t, exp(neg(square(x))))))
ad.defjvp(erfc_p, lambda t, x: mul(const(x, -2 / math.sqrt(math.pi)),
                                   mul(t, exp(neg(square(x))))))
ad.defjvp2(erf_inv_p, lambda t, ans, x: mul(const(x, math.sqrt(math.pi) / 2),
                                            mul(t, exp(square(ans)))))

# --- lgamma, digamma, polygamma, zeta -----------------------------------------
lgamma_p = unop("lgamma", FLOAT, chlo.lgamma)
digamma_p = unop("digamma", FLOAT, chlo.digamma)
polygamma_p = naryop("polygamma", FLOAT, chlo.polygamma)
zeta_p = naryop("zeta", FLOAT, chlo.zeta)


def lgamma(x):
    """log|Gamma(x)|.

    >>> lgamma(np.float32(5.0))
    Array(3.1780548, dtype=float32)
    """
    return lgamma_p.bind(x)


def digamma(x):
    """The logarithmic derivative of Gamma, Gamma'(x) / Gamma(x).

    >>> digamma(np.float32(1.0))
    Array(-0.5772154, dtype=float32)
    """
    return digamma_p.bind(x)


def polygamma(m, x):
    """The m-th derivative of `digamma` at x (m a whole number, of x's dtype).

    >>> polygamma(np.float32(1.0), np.float32(1.0))
    Array(1.644934, dtype=float32)
    """
    return polygamma_p.bind(m, x)


def zeta(x, q):
    """The Hurwitz zeta function, the sum over n >= 0 of (n + q)**-x.

    >>> zeta(np.float32(2.0), np.float32(1.0))
    Array(1.644934, dtype=float32)
    """
    return zeta_p.bind(x, q)


ad.defjvp(lgamma_p, lambda t, x: mul(t, digamma(x)))
ad.defjvp(digamma_p, lambda t, x: mul(t, polygamma(const(x, 1), x)))
defjvp(polygamma_p, _not_differentiable("polygamma", "m"),
       lambda t, m, x: mul(t, polygamma(add(m, _c(m, 1)), x)))
defjvp(zeta_p, _not_differentiable("zeta", "x"),
       lambda t, x, q: mul(t, neg(mul(x, zeta(add(x, _c(x, 1)), q)))))

# --- bessel_i0e, bessel_i1e -----------------------------------------------------
# Cephes' Chebyshev coefficients for exp(-x) I0(x) on [0, 8] (in x/2 - 2) and for
# exp(-x) sqrt(x) I0(x) on (8, inf) (in 32/x - 2), highest order first.
_I0E_A = (
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
    1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
    -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
    1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
    1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1)
_I0E_B = (
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
    2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1)


def _chebyshev(y, coefficients):
    """Clenshaw's recurrence for a Chebyshev series in y (Cephes' chbevl)."""
    b0, b1, b2 = _c(y, coefficients[0]), _c(y, 0), _c(y, 0)
    for coefficient in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = add(sub(mul(y, b1), b2), _c(y, coefficient))
    return mul(_c(y, 0.5), sub(b0, b2))


def _upcast(fun):
    """Runs `fun` in float32 for 16-bit floats (which cannot even hold the small
    coefficients of the series)."""
    def wrapped(*xs):
        dtype = aval_of(xs[0]).dtype
        if dtype.itemsize >= 4:
            return fun(*xs)
        return convert_element_type(fun(*[convert_element_type(x, np.float32) for x in xs]),
                                    dtype)
    return wrapped


@_upcast
def _i0e(x):
    z = abs(x)
    near = _chebyshev(sub(mul(z, _c(z, 0.5)), _c(z, 2)), _I0E_A)
    far = div(_chebyshev(sub(div(_c(z, 32), z), _c(z, 2)), _I0E_B), sqrt(z))
    return select(le(z, _c(z, 8)), near, far)


bessel_i0e_p = unop("bessel_i0e", FLOAT, None)  # lowered by tracing `_i0e` instead:
register_lowering(bessel_i0e_p, lower_fun(_i0e, multiple_results=False))
bessel_i1e_p = unop("bessel_i1e", FLOAT, chlo.bessel_i1e)


def bessel_i0e(x):
    """exp(-|x|) I0(x), the exponentially scaled modified Bessel function of order 0.

    >>> bessel_i0e(np.array([0.0, 1.0], np.float32))
    Array([0.99999994, 0.46575963], dtype=float32)
    """
    return bessel_i0e_p.bind(x)


def bessel_i1e(x):
    """exp(-|x|) I1(x), the exponentially scaled modified Bessel function of order 1.

    >>> bessel_i1e(np.float32(1.0))
    Array(0.20791042, dtype=float32)
    """
    return bessel_i1e_p.bind(x)


def _i1e_slope(ans, x):
    # i1e' = i0e - i1e (sign(x) + 1/x); as x -> 0, i1e/x -> 1/2 and the slope -> 1/2.
    is_zero = eq(x, _c(x, 0))
    safe_x = select(is_zero, _c(x, 1), x)
    slope = sub(bessel_i0e(x), mul(ans, add(sign(x), div(_c(x, 1), safe_x))))
    return select(is_zero, _c(x, 0.5), slope)


ad.defjvp2(bessel_i0e_p, lambda t, ans, x: mul(t, sub(bessel_i1e(x), mul(sign(x), ans))))
ad.defjvp2(bessel_i1e_p, lambda t, ans, x: mul(t, _i1e_slope(ans, x)))

# --- igamma, igammac, igamma_grad_a, random_gamma_grad ------------------------
# One lowering computes all four: the regularized lower and upper incomplete
# gamma functions P(a, x) and Q(a, x) = 1 - P(a, x), dP/da, and dx/da for
# x ~ Gamma(a) sampled by inverting P (-(dP/da) / (dP/dx), which the loop
# gets without forming the density, so it neither underflows nor overflows).
# Near x = a both expansions need about sqrt(70 a) steps in float64, so the cap
# keeps full accuracy up to a ~ 1e6 (an asymptotic expansion would go further).
_MAX_STEPS = 10_000
# The continued fraction's numerators and denominators grow geometrically;
# they are rescaled together (the ratio is unchanged) once above _BIG.
_BIG = 2.0 ** 52


def _log1pmx(x, a):
    """log(1 + t) - t for t = (x - a)/a, without cancellation for small t."""
    t = div(sub(x, a), a)
    # log(1+t) = 2 atanh(v) with v = t/(2+t), and 2v - t = -t^2/(2+t) exactly;
    # for |t| < 1/2, |v| <= 1/3 and 18 odd terms of atanh reach float64 precision.
    v = div(t, add(_c(t, 2), t))
    v2 = mul(v, v)
    tail = _c(t, 1 / 37)
    for k in range(17, 0, -1):
        tail = add(_c(t, 1 / (2 * k + 1)), mul(v2, tail))
    near = add(neg(div(mul(t, t), add(_c(t, 2), t))), mul(_c(t, 2), mul(mul(v, v2), tail)))
    # Further out there is little cancellation, but 1 + t would lose x/a as t -> -1.
    return select(lt(abs(t), _c(t, 0.5)), near, sub(log(div(x, a)), t))


def _log_prefactor(a, x):
    """log(x**a exp(-x) / Gamma(a)), accurate also for large a with x near a.

    Summed naively, a log(x), x and lgamma(a) are each much larger than their sum
    and their rounding errors swamp it. With Stirling's series for lgamma(a),
    log Gamma(a) = (a - 1/2) log(a) - a + log(2 pi)/2 + s(a), the large terms
    cancel analytically: the sum is a (log1p(t) - t) + log(a)/2 - log(2 pi)/2 - s(a)
    with t = (x - a)/a.
    """
    inv = div(_c(a, 1), a)
    inv2 = mul(inv, inv)
    # s(a) as its asymptotic series (B_2k / (2k (2k-1) a^(2k-1))): its error is below
    # float64's rounding for a >= 10 and float32's for a >= 3.
    series = _c(a, -3617 / 122400)
    for coefficient in (1 / 156, -691 / 360360, 1 / 1188, -1 / 1680, 1 / 1260, -1 / 360,
                        1 / 12):
        series = add(_c(a, coefficient), mul(inv2, series))
    stirling = sub(add(mul(a, _log1pmx(x, a)), mul(_c(a, 0.5), log(a))),
                   add(_c(a, 0.5 * math.log(2 * math.pi)), mul(inv, series)))
    direct = sub(sub(mul(a, log(x)), x), lgamma(a))
    threshold = 10 if a.aval.dtype == np.float64 else 3
    return select(ge(a, _c(a, threshold)), stirling, direct)


@cache
def _lgamma1p_taylor() -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Taylor coefficients, highest order first, of lgamma(1 + a) about a = 0 and of
    lgamma(2 + b) about b = 0:

        lgamma(1 + a) = -euler_gamma a + sum_k>=2 (-1)^k zeta(k)/k a^k
        lgamma(2 + b) = (1 - euler_gamma) b + sum_k>=2 (-1)^k (zeta(k) - 1)/k b^k

    Their terms shrink like 0.3^k for |a| < 0.3 and 0.35^k for |b| < 0.7, so 34
    reach float64 precision.
    """
    from scipy.special import zetac  # zeta(k) - 1, exact for large k
    ks = range(34, 1, -1)
    near_one = tuple(float((-1) ** k * (1 + zetac(k)) / k) for k in ks)
    near_two = tuple(float((-1) ** k * zetac(k) / k) for k in ks)
    gamma = float(np.euler_gamma)
    return near_one + (-gamma, 0.0), near_two + (1 - gamma, 0.0)


def _lgamma1p(a):
    """lgamma(1 + a) for 0 <= a <= 1 by Taylor series, accurate to a few ulps of the
    result (1 + a would round a away, and XLA's lgamma is loose near its zeros)."""
    near_one, near_two = _lgamma1p_taylor()
    b = sub(a, _c(a, 1))
    by_a, by_b = _c(a, 0), _c(a, 0)
    for ca, cb in zip(near_one, near_two):
        by_a, by_b = add(mul(by_a, a), _c(a, ca)), add(mul(by_b, b), _c(a, cb))
    return select(lt(a, _c(a, 0.3)), by_a, by_b)


def _small_a_upper(a, x):
    """Q(a, x) for a < 1 and x <= 1, where 1 - P(a, x) would cancel (Q is O(a) there).

    With u = log(x^a / Gamma(1 + a)), and x^a / Gamma(a) = a e^u,
    Q = -expm1(u) - a e^u sum_n>=1 (-x)^n / (n! (a + n)),
    and for x <= 1 the sum is exact to float64 in 18 terms.
    """
    term, total = _c(x, 1), _c(x, 0)
    for n in range(1, 19):
        term = div(mul(term, neg(x)), _c(x, n))
        total = add(total, div(term, add(a, _c(a, n))))
    u = sub(mul(a, log(x)), _lgamma1p(a))
    return sub(neg(expm1(u)), mul(mul(a, exp(u)), total))


def _regular(a, x):
    """Where the loops apply: finite, positive a and x."""
    return bitwise_and(bitwise_and(gt(a, _c(a, 0)), gt(x, _c(x, 0))),
                       bitwise_and(is_finite(a), is_finite(x)))


def _use_fraction(a, x):
    """The continued fraction for Q converges fast above x = a; the series for P below."""
    return bitwise_and(gt(x, _c(x, 1)), gt(x, a))


def _freeze(enabled, new, old):
    return [select(enabled, n, o) for n, o in zip(new, old)]


def _series_init(a, x):
    zero, one = _c(a, 0), _c(a, 1)
    enabled = bitwise_and(_regular(a, x), bitwise_not(_use_fraction(a, x)))
    return [enabled, a, x, a, one, one, zero, zero, zero]


def _series_step(derivative, enabled, a, x, *state):
    """One term of P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a+1) ... (a+n)).

    `c` is the term and `ans` the sum, `dc` and `dans` their derivatives in a.
    Near x = a the sum takes ~sqrt(a) terms, so it is compensated (Kahan):
    `lost` holds the low-order part that adding each term to `ans` dropped.
    """
    r, c, ans, lost, dc, dans = state
    r = add(r, _c(r, 1))
    dc = div(sub(mul(dc, x), mul(c, div(x, r))), r)
    c = mul(c, div(x, r))
    term = sub(c, lost)
    total = add(ans, term)
    lost = sub(sub(total, ans), term)
    ans = total
    dans = add(dans, dc)
    eps = _c(ans, float(np.finfo(ans.aval.dtype).eps))
    going = gt(c, mul(eps, ans))
    if derivative:
        going = bitwise_or(going, gt(abs(dc), mul(eps, abs(dans))))
    return [bitwise_and(enabled, going), a, x,
            *_freeze(enabled, (r, c, ans, lost, dc, dans), state)]


def _fraction_init(a, x):
    zero, one = _c(a, 0), _c(a, 1)
    y = sub(one, a)
    z = add(add(x, y), one)
    pkm2, qkm2, pkm1, qkm1 = one, x, add(x, one), mul(z, x)
    dpkm2, dqkm2, dpkm1, dqkm1 = zero, zero, zero, neg(x)
    ans = div(pkm1, qkm1)
    dans = div(sub(dpkm1, mul(ans, dqkm1)), qkm1)
    enabled = bitwise_and(_regular(a, x), _use_fraction(a, x))
    return [enabled, a, x, y, z, zero, pkm1, qkm1, pkm2, qkm2, ans,
            dpkm1, dqkm1, dpkm2, dqkm2, dans]


def _fraction_step(derivative, enabled, a, x, *state):
    """One convergent of Legendre's continued fraction for Q(a, x) (as in Cephes' igamc).

    The convergent is pk/qk; the d-prefixed values are derivatives in a, where
    y = c + 1 - a and z = x + 2c + 2 - a give dy/da = dz/da = -1.
    """
    y, z, c, pkm1, qkm1, pkm2, qkm2, ans, dpkm1, dqkm1, dpkm2, dqkm2, dans = state
    one = _c(a, 1)
    c, y, z = add(c, one), add(y, one), add(z, _c(a, 2))
    yc = mul(y, c)
    pk = sub(mul(pkm1, z), mul(pkm2, yc))
    qk = sub(mul(qkm1, z), mul(qkm2, yc))
    dpk = add(sub(sub(mul(dpkm1, z), pkm1), mul(dpkm2, yc)), mul(pkm2, c))
    dqk = add(sub(sub(mul(dqkm1, z), qkm1), mul(dqkm2, yc)), mul(qkm2, c))
    defined = ne(qk, _c(qk, 0))
    safe_qk = select(defined, qk, one)
    ratio = div(pk, safe_qk)
    dratio = div(sub(dpk, mul(ratio, dqk)), safe_qk)
    eps = _c(a, float(np.finfo(a.aval.dtype).eps))
    going = bitwise_or(bitwise_not(defined), gt(abs(sub(ans, ratio)), mul(eps, abs(ratio))))
    if derivative:
        going = bitwise_or(going, gt(abs(sub(dans, dratio)), mul(eps, abs(dratio))))
    ans, dans = select(defined, ratio, ans), select(defined, dratio, dans)
    scale = select(gt(abs(pk), _c(pk, _BIG)), _c(pk, 1 / _BIG), one)
    pkm2, pkm1, qkm2, qkm1, dpkm2, dpkm1, dqkm2, dqkm1 = (
        mul(v, scale) for v in (pkm1, pk, qkm1, qk, dpkm1, dpk, dqkm1, dqk))
    new = (y, z, c, pkm1, qkm1, pkm2, qkm2, ans, dpkm1, dqkm1, dpkm2, dqkm2, dans)
    return [bitwise_and(enabled, going), a, x, *_freeze(enabled, new, state)]


def _finish(kind, a, x, series_ans, series_dans, fraction_ans, fraction_dans):
    """The requested quantity from the loops' sums, with the edge cases filled in."""
    use_fraction = _use_fraction(a, x)
    log_prefactor = _log_prefactor(a, x)  # Q = fraction_ans * exp(log_prefactor)
    series_prefactor = exp(sub(log_prefactor, log(a)))  # P = series_ans * series_prefactor
    zero, one, nan = _c(a, 0), _c(a, 1), _c(a, np.nan)
    if kind in ("igamma", "igammac"):
        p = select(use_fraction, sub(one, mul(fraction_ans, exp(log_prefactor))),
                   mul(series_ans, series_prefactor))
        # Limits: P(a, 0) = 0, P(0, x) = 1, P(a, inf) = 1, P(inf, x) = 0.
        p = select(eq(x, _c(x, np.inf)), one, p)
        p = select(eq(a, _c(a, np.inf)), zero, p)
        p = select(eq(a, zero), one, p)
        p = select(eq(x, zero), zero, p)
        undefined = bitwise_and(eq(a, _c(a, np.inf)), eq(x, _c(x, np.inf)))
        undefined = bitwise_or(undefined, bitwise_and(eq(a, zero), eq(x, zero)))
        if kind == "igammac":
            q = select(use_fraction, mul(fraction_ans, exp(log_prefactor)),
                       sub(one, mul(series_ans, series_prefactor)))
            small_a = bitwise_and(lt(a, one), le(x, one))
            q = select(small_a, _small_a_upper(a, x), q)
            q = select(_regular(a, x), q, sub(one, p))
            p = q
        outside = bitwise_or(bitwise_or(lt(a, zero), lt(x, zero)),
                             bitwise_or(ne(a, a), ne(x, x)))  # or NaN
        return select(bitwise_or(undefined, outside), nan, p)
    # d/da of log(prefactor): log(x) - digamma(a), and the series' prefactor has a + 1.
    log_x = log(x)
    series_slope = add(series_dans, mul(series_ans, sub(log_x, digamma(add(a, one)))))
    fraction_slope = add(fraction_dans, mul(fraction_ans, sub(log_x, digamma(a))))
    if kind == "igamma_grad_a":
        out = select(use_fraction, neg(mul(fraction_slope, exp(log_prefactor))),
                     mul(series_slope, series_prefactor))
        out = select(_regular(a, x), out, nan)
        # P is flat in a at x = 0 and x = inf, and as a -> inf.
        finite_a = bitwise_and(gt(a, zero), is_finite(a))
        flat = bitwise_and(finite_a, bitwise_or(eq(x, zero), eq(x, _c(x, np.inf))))
        flat = bitwise_or(flat, bitwise_and(eq(a, _c(a, np.inf)), is_finite(x)))
        return select(bitwise_and(flat, ge(x, zero)), zero, out)
    # dx/da = -(dP/da) / (dP/dx), and dP/dx is the prefactor times a/x (series) or
    # 1/x (fraction), so the prefactors cancel.
    out = select(use_fraction, mul(fraction_slope, x), neg(div(mul(series_slope, x), a)))
    out = select(_regular(a, x), out, nan)
    return select(bitwise_and(gt(a, zero), eq(x, zero)), zero, out)


def _emit(ctx, fun, avals, args) -> list[ir.Value]:
    """Traces `fun` (lax primitives on arrays of `avals`) and lowers it in place."""
    jaxpr, consts = trace_to_jaxpr(lambda *xs: list(fun(*xs)), avals)
    return lower_jaxpr(ctx.module_context, jaxpr, closed_consts(ClosedJaxpr(jaxpr, consts)),
                       args)


def _any(mask: ir.Value) -> ir.Value:
    """The or of all elements of a boolean tensor, a scalar."""
    scalar = ir.RankedTensorType.get([], mask.type.element_type)
    rank = len(mask.type.shape)
    if rank == 0:
        return mask
    op = hlo.ReduceOp([scalar], [mask], [constant(False)], list(range(rank)))
    block = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        hlo.return_([hlo.or_(*block.arguments)])
    return op.result


def _while(ctx, step, init: list[ir.Value], avals: list[ShapedArray]) -> list[ir.Value]:
    """A stablehlo.while applying `step` (lax primitives) to the state `init` until its
    first element, the boolean mask of unconverged elements, is all false, or until
    _MAX_STEPS steps."""
    counter = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
    types = [counter, *map(aval_to_ir_type, avals)]
    op = hlo.WhileOp(types, [constant(np.int32(0)), *init])
    cond = op.cond.blocks.append(*types)
    with ir.InsertionPoint(cond):
        below_cap = hlo.compare(cond.arguments[0], constant(np.int32(_MAX_STEPS)),
                                hlo.ComparisonDirectionAttr.get("LT"),
                                compare_type=hlo.ComparisonTypeAttr.get("SIGNED"))
        hlo.return_([hlo.and_(below_cap, _any(cond.arguments[1]))])
    body = op.body.blocks.append(*types)
    with ir.InsertionPoint(body):
        state = _emit(ctx, step, avals, list(body.arguments)[1:])
        hlo.return_([hlo.add(body.arguments[0], constant(np.int32(1))), *state])
    return list(op.results)[1:]


def _igamma_lowering(ctx, a, x, *, kind: str):
    a, x = broadcast_to_result(ctx, [a, x])
    aval = ctx.avals_out[0]
    dtype = np.dtype(np.float32) if aval.dtype.itemsize < 4 else aval.dtype
    work = ShapedArray(aval.shape, dtype)
    mask = ShapedArray(aval.shape, np.dtype(bool))
    a, x = _emit(ctx, lambda a, x: [convert_element_type(a, dtype),
                                    convert_element_type(x, dtype)], ctx.avals_in, [a, x])
    derivative = kind in ("igamma_grad_a", "random_gamma_grad")
    series = _while(ctx, partial(_series_step, derivative),
                    _emit(ctx, _series_init, [work, work], [a, x]), [mask] + [work] * 8)
    fraction = _while(ctx, partial(_fraction_step, derivative),
                      _emit(ctx, _fraction_init, [work, work], [a, x]), [mask] + [work] * 15)
    sums = [series[5], series[8], fraction[10], fraction[15]]
    out, = _emit(ctx, lambda *xs: [convert_element_type(_finish(kind, *xs), aval.dtype)],
                 [work] * 6, [a, x, *sums])
    return [out]


def _incomplete_gamma(kind: str):
    prim = naryop(kind, FLOAT, None)  # lowered with loops, which need the rule context:
    register_lowering(prim, partial(_igamma_lowering, kind=kind))
    return prim


igamma_p = _incomplete_gamma("igamma")
igammac_p = _incomplete_gamma("igammac")
igamma_grad_a_p = _incomplete_gamma("igamma_grad_a")
random_gamma_grad_p = _incomplete_gamma("random_gamma_grad")


def igamma(a, x):
    """The regularized lower incomplete gamma function P(a, x), the integral of
    t**(a-1) exp(-t) from 0 to x over Gamma(a).

    >>> igamma(np.float32(1.0), np.float32(2.0))  # 1 - exp(-2)
    Array(0.8646648, dtype=float32)
    """
    return igamma_p.bind(a, x)


def igammac(a, x):
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), accurate
    where P(a, x) is near 1.

    >>> igammac(np.float32(1.0), np.float32(2.0))  # exp(-2)
    Array(0.13533522, dtype=float32)
    """
    return igammac_p.bind(a, x)


def igamma_grad_a(a, x):
    """The derivative of `igamma(a, x)` with respect to a.

    >>> igamma_grad_a(np.float32(1.0), np.float32(2.0))
    Array(-0.22082525, dtype=float32)
    """
    return igamma_grad_a_p.bind(a, x)


def random_gamma_grad(a, x):
    """The derivative with respect to a of a sample x of Gamma(a, 1) drawn by inverting
    its CDF: -(dP/da) / (dP/dx) with P = igamma(a, x) (implicit reparameterization).

    >>> random_gamma_grad(np.float32(1.0), np.float32(2.0))
    Array(1.631691, dtype=float32)
    """
    return random_gamma_grad_p.bind(a, x)


def _gamma_density(a, x):
    """x**(a-1) exp(-x) / Gamma(a), the x-derivative of P(a, x)."""
    a, x = broadcast_all(a, x)
    a_minus_one = sub(a, _c(a, 1))
    # (a - 1) log(x) is 0 at a = 1 also for x = 0 (where the density is 1).
    power = select(eq(a_minus_one, _c(a, 0)), _c(a, 0), mul(a_minus_one, log(x)))
    return exp(sub(sub(power, x), lgamma(a)))


defjvp(igamma_p, lambda t, a, x: mul(t, igamma_grad_a(a, x)),
       lambda t, a, x: mul(t, _gamma_density(a, x)))
defjvp(igammac_p, lambda t, a, x: neg(mul(t, igamma_grad_a(a, x))),
       lambda t, a, x: neg(mul(t, _gamma_density(a, x))))
defjvp(igamma_grad_a_p, _not_differentiable("igamma_grad_a", "a"),
       lambda t, a, x: mul(t, mul(_gamma_density(a, x), sub(log(x), digamma(a)))))


# --- betainc: the regularized incomplete beta function ----------------------------
regularized_incomplete_beta_p = standard_primitive("regularized_incomplete_beta")


def betainc(a, b, x):
    """The regularized incomplete beta function I(x; a, b), the integral of
    t**(a-1) (1-t)**(b-1) from 0 to x over B(a, b). Differentiable in x. NaN for
    negative a or b, or x outside [0, 1].

    >>> betainc(np.float32(2.0), np.float32(3.0), np.float32(0.4))
    Array(0.5248004, dtype=float32)
    """
    return regularized_incomplete_beta_p.bind(a, b, x)


@regularized_incomplete_beta_p.def_abstract_eval
def _betainc_abstract_eval(a: ShapedArray, b: ShapedArray, x: ShapedArray) -> ShapedArray:
    check_dtypes("regularized_incomplete_beta", FLOAT, a, b, x)
    check_same_dtypes("regularized_incomplete_beta", a, b, x)
    return ShapedArray(broadcasting_shape("regularized_incomplete_beta", a, b, x), a.dtype,
                       a.weak_type and b.weak_type and x.weak_type)


def _log_beta(a, b):
    return sub(add(lgamma(a), lgamma(b)), lgamma(add(a, b)))


def _beta_fraction(a, b, x):
    """The continued fraction of I(x; a, b) x^-a (1-x)^-b a B(a, b), by the modified
    Lentz method, run until every element has converged (or 300 steps)."""
    dtype = aval_of(x).dtype
    tiny, tol = np.finfo(dtype).tiny * 16, np.finfo(dtype).eps

    def nonzero(v):
        return select(lt(abs(v), full_like(v, tiny)), full_like(v, tiny), v)

    def term(m, d, c, f):
        # Two steps per iteration: the even term m (m (b - m) x / ...), then the odd one.
        two_m = add(m, m)
        even = div(mul(mul(m, sub(b, m)), x), mul(sub(add(a, two_m), const(a, 1)),
                                                    add(a, two_m)))
        odd = neg(div(mul(mul(add(a, m), add(add(a, b), m)), x),
                      mul(add(a, two_m), add(add(a, two_m), const(a, 1)))))
        for coefficient in (even, odd):
            d = div(const(d, 1), nonzero(add(const(d, 1), mul(coefficient, d))))
            c = nonzero(add(const(c, 1), div(coefficient, c)))
            f = mul(f, mul(c, d))
        return d, c, f, mul(c, d)

    def cond(state):
        step, _, _, _, _, delta = state
        unfinished = gt(abs(sub(delta, const(delta, 1))), const(delta, tol))
        return bitwise_and(lt(step, np.int32(300)), reduce_or(unfinished, tuple(range(
            aval_of(delta).ndim))))

    def body(state):
        step, m, d, c, f, _ = state
        d, c, f, delta = term(m, d, c, f)
        return add(step, np.int32(1)), add(m, const(m, 1)), d, c, f, delta

    one = full_like(x, 1)
    d = div(one, nonzero(sub(one, div(mul(add(a, b), x), add(a, one)))))
    start = (np.int32(0), one, d, one, d, full_like(x, 2))
    return while_loop(cond, body, start)[4]


def _betainc_impl(a, b, x):
    a, b, x = broadcast_all(a, b, x)
    one, zero = full_like(x, 1), full_like(x, 0)
    # The fraction converges fast below the mean (a + 1) / (a + b + 2); above it,
    # use I(x; a, b) = 1 - I(1 - x; b, a).
    flip = gt(x, div(add(a, one), add(add(a, b), full_like(x, 2))))
    regular = bitwise_and(bitwise_and(gt(a, zero), gt(b, zero)),
                          bitwise_and(gt(x, zero), lt(x, one)))
    p = select(regular, select(flip, b, a), one)
    q = select(regular, select(flip, a, b), one)
    y = select(regular, select(flip, sub(one, x), x), full_like(x, 0.5))
    prefactor = exp(sub(add(mul(p, log(y)), mul(q, log1p(neg(y)))),
                        add(log(p), _log_beta(p, q))))
    part = mul(prefactor, _beta_fraction(p, q, y))
    value = select(flip, sub(one, part), part)
    value = select(eq(x, zero), zero, select(eq(x, one), one, value))
    value = select(bitwise_and(eq(b, zero), bitwise_and(gt(a, zero), lt(x, one))), zero, value)
    value = select(bitwise_and(eq(a, zero), bitwise_and(gt(b, zero), gt(x, zero))), one, value)
    undefined = bitwise_or(bitwise_or(lt(a, zero), lt(b, zero)),
                           bitwise_or(lt(x, zero), gt(x, one)))
    undefined = bitwise_or(undefined, bitwise_and(eq(a, zero), eq(b, zero)))
    return select(undefined, full_like(x, np.nan), value)


def _betainc_jvp_x(t, a, b, x):
    a, b, x = broadcast_all(a, b, x)
    zero, one = full_like(x, 0), full_like(x, 1)
    inside = bitwise_and(gt(x, zero), lt(x, one))
    safe = select(inside, x, full_like(x, 0.5))
    density = exp(sub(add(mul(sub(a, one), log(safe)), mul(sub(b, one), log1p(neg(safe)))),
                      _log_beta(a, b)))
    return mul(t, select(inside, density, zero))


def _betainc_not_in_ab(*args):
    raise TypeError("betainc is differentiable with respect to x only (as in JAX); "
                    "lamella.scipy.special.betainc also differentiates in a and b.")


register_lowering(regularized_incomplete_beta_p,
                  lower_fun(_betainc_impl, multiple_results=False))
defjvp(regularized_incomplete_beta_p, _betainc_not_in_ab, _betainc_not_in_ab, _betainc_jvp_x)
batching.primitive_batchers[regularized_incomplete_beta_p] = partial(
    broadcast_batcher, regularized_incomplete_beta_p)
