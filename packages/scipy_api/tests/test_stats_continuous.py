"""The continuous distributions against SciPy on hypothesis inputs, float32 and float64:
every function of each, over ranges that reach both tails, within the ulps of
the README's table (log-functions in ulps of max(1, |value|)). Where SciPy's
float64 loses digits the reference is a better formula in 80-bit floats or the
float64 range stays where SciPy is good (mpmath known answers cover the rest,
in test_stats_tails.py). Edge values, invalid parameters and loc/scale
broadcasting are checked exactly.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as ss
from hypothesis import given, settings
from stats_checks import (
    DTYPES,
    assert_ulps_of,
    flush_subnormals,
    log_spread,
    probabilities,
    signed,
    unit,
)

import lamella.core as lc
from lamella.scipy import stats

LD = np.longdouble


@dataclass
class Spec:
    name: str
    params: Callable  # (u, v, f64) -> list of float64 shape parameters
    x: Callable  # (w, params, f64) -> float64 points
    ulps: dict  # function -> (float32 ulps, float64 ulps)
    references: dict = field(default_factory=dict)  # function -> float64 reference
    mask: Callable | None = None  # (args, f64) -> where the comparison is meaningful
    exponential: tuple = ("pdf",)  # exp of a log-value: see assert_ulps_of
    # Functions whose values cross 0 where no float formula is relatively accurate:
    # measured, as log-values are, in ulps of max(1, |value|). Gumbel's quantile
    # -log(-log q) near q = 1/e cancels the float32 rounding of log q (42 ulps at
    # q = 0.3692541, lamella and JAX alike).
    absolute_near_zero: tuple = ()


def _no_params(u, v, f64):
    return []


def _cauchy_quantile(q):
    """tan(pi (q - 1/2)) in 80-bit floats, as -cot(pi q) in the lower tail (SciPy's
    float64 q - 1/2 loses small q)."""
    q = np.asarray(q, LD)
    with np.errstate(divide="ignore"):
        value = np.where(q < 0.25, -1 / np.tan(np.pi * q),
                         np.where(q > 0.75, 1 / np.tan(np.pi * (1 - q)), np.tan(np.pi * (q - 0.5))))
    return value.astype(np.float64)


def _pareto(function):
    def reference(x, b):
        logsf = -np.asarray(b, LD) * np.log(np.asarray(x, LD))
        with np.errstate(divide="ignore"):
            return {"cdf": -np.expm1(logsf), "logcdf": np.log(-np.expm1(logsf)),
                    "logsf": logsf}[function].astype(np.float64)
    return reference


def _log_near_one(name, function, other):
    """SciPy's log-CDF (log-SF) with log1p(-sf) (log1p(-cdf)) where that is below 1/2:
    SciPy takes the log of a CDF rounded near 1."""
    dist = getattr(ss, name)

    def reference(*args):
        with np.errstate(all="ignore"):
            small = getattr(dist, other)(*args)
            return np.where(small < 0.5, np.log1p(-small), getattr(dist, function)(*args))
    return reference


def _wrapcauchy_logpdf(x, c):
    x, c = np.asarray(x, LD), np.asarray(c, LD)
    s = np.sin(x / 2)
    value = np.log1p(-c * c) - np.log(2 * np.pi * ((1 - c) ** 2 + 4 * c * s * s))
    return np.where((x >= 0) & (x <= 2 * np.pi), value, -np.inf).astype(np.float64)


def _truncnorm_bounds(u, v, f64):
    """Intervals anywhere in [-30, 30] of width 1e-3 ... 10 (float32), or in [-5, 5] of
    width 0.5 ... 10, x not within 5% of an end (float64: SciPy's own error grows as
    eps a**2 and as the inverse width of [a, x] or [x, b]; far tails and narrow
    intervals are checked against mpmath)."""
    reach, narrowest = (5.0, 0.5) if f64 else (30.0, 1e-3)
    a = reach * (2 * np.asarray(u) - 1)
    return [a, a + log_spread(v, narrowest, 10.0)]


def _gamma_like(name, a_index=0):
    refs = {"logcdf": _log_near_one(name, "logcdf", "sf"),
            "logsf": _log_near_one(name, "logsf", "cdf")}
    return refs


def _beta_pdf(x, a, b):
    """SciPy's beta.pdf, except where Boost's ibeta_derivative raises OverflowError
    rather than underflow (x = 2.2e-308, a = b = 50): there exp(logpdf), which is 0."""
    try:
        return ss.beta.pdf(x, a, b)
    except OverflowError:
        pass
    out = np.empty(np.broadcast_shapes(np.shape(x), np.shape(a), np.shape(b)))
    for i, args in enumerate(zip(*np.broadcast_arrays(x, a, b))):
        try:
            out.flat[i] = ss.beta.pdf(*args)
        except OverflowError:
            out.flat[i] = np.exp(ss.beta.logpdf(*args))
    return out


def _not_underflowing(name, f64_floor=None):
    """float32 holds P and Q (and their logs stay finite) only above 1e-37. For
    beta, float64 is held to 1e-100: below, lamella.scipy.special.betainc's
    Stirling prefactor (a, b >= 8) is off by up to 100x (betainc(10.6, 50, 6e-17)
    is 8e-159, not 3.3e-161), a gap of the special module."""
    def mask(args, f64):
        floor = f64_floor if f64 else 1e-37
        if floor is None:
            return None
        dist = getattr(ss, name)
        with np.errstate(all="ignore"):
            return (dist.cdf(*args) > floor) & (dist.sf(*args) > floor)
    return mask


SPECS = [
    # SciPy's float64 ndtr loses z**2 / 3 ulps in the tails (special's tests check ours).
    Spec("norm", _no_params, lambda w, p, f64: signed(w, 1e-3, 6.0 if f64 else 38.0),
         {"logpdf": (4, 4), "pdf": (8, 8), "cdf": (16, 32), "logcdf": (16, 32),
          "sf": (16, 32), "logsf": (16, 32), "ppf": (8, 8), "isf": (8, 8)},
         {"pdf": lambda x: (np.exp(-np.asarray(x, LD) ** 2 / 2)
                            / np.sqrt(2 * np.pi, dtype=LD)).astype(np.float64)}),
    Spec("cauchy", _no_params, lambda w, p, f64: signed(w, 1e-3, 1e12),
         {"logpdf": (4, 4), "pdf": (4, 4), "cdf": (4, 4), "logcdf": (4, 4), "sf": (4, 4),
          "logsf": (4, 4), "ppf": (4, 8), "isf": (4, 8)},
         {"ppf": _cauchy_quantile, "isf": lambda q: -_cauchy_quantile(q)}),
    Spec("logistic", _no_params, lambda w, p, f64: signed(w, 1e-3, 80.0),
         {"logpdf": (4, 4), "pdf": (8, 8), "cdf": (4, 4), "sf": (4, 4), "ppf": (4, 8),
          "isf": (4, 8)}),
    Spec("laplace", _no_params, lambda w, p, f64: signed(w, 1e-3, 80.0),
         {"logpdf": (2, 2), "pdf": (2, 2), "cdf": (2, 2)}),
    Spec("expon", _no_params, lambda w, p, f64: signed(w, 1e-6, 80.0),
         {"logpdf": (2, 2), "pdf": (2, 2), "cdf": (8, 8), "logcdf": (8, 8), "sf": (2, 2),
          "logsf": (2, 2), "ppf": (4, 4)}),
    Spec("gumbel_r", _no_params, lambda w, p, f64: -3 + log_spread(w, 1e-3, 33.0),
         {"logpdf": (4, 4), "pdf": (8, 8), "cdf": (8, 8), "logcdf": (4, 4), "sf": (8, 8),
          "logsf": (8, 8), "ppf": (8, 8)}, exponential=("pdf", "cdf"),
         absolute_near_zero=("ppf",)),
    Spec("gumbel_l", _no_params, lambda w, p, f64: 3 - log_spread(w, 1e-3, 33.0),
         {"logpdf": (4, 4), "pdf": (8, 8), "cdf": (8, 8), "logcdf": (8, 8), "sf": (8, 8),
          "logsf": (4, 4), "ppf": (16, 8)}, exponential=("pdf", "sf"),
         absolute_near_zero=("ppf",)),
    Spec("uniform", _no_params, lambda w, p, f64: -0.5 + 2 * w,
         {"logpdf": (1, 1), "pdf": (1, 1), "cdf": (1, 1), "ppf": (1, 1)}),
    Spec("pareto", lambda u, v, f64: [log_spread(u, 0.1, 10.0)],
         lambda w, p, f64: 1 + log_spread(w, 1e-6, 1e6),
         {"logpdf": (8, 8), "pdf": (128, 8), "cdf": (8, 8), "logcdf": (8, 8), "sf": (4, 4),
          "logsf": (4, 4), "ppf": (128, 4)},
         {f: _pareto(f) for f in ("cdf", "logcdf", "logsf")}),
    Spec("t", lambda u, v, f64: [log_spread(u, 0.1, 30.0 if f64 else 1e4)],
         lambda w, p, f64: signed(w, 1e-3, 1e4),
         {"logpdf": (32, 128), "pdf": (32, 128)}),
    Spec("gamma", lambda u, v, f64: [log_spread(u, 0.1, 100.0)],
         lambda w, p, f64: p[0] * log_spread(w, 1e-3, 10.0),
         {"logpdf": (256, 256), "pdf": (256, 256), "cdf": (512, 2048), "sf": (512, 2048),
          "logcdf": (256, 512), "logsf": (256, 512)},
         _gamma_like("gamma"), _not_underflowing("gamma")),
    Spec("chi2", lambda u, v, f64: [log_spread(u, 0.1, 100.0)],
         lambda w, p, f64: p[0] * log_spread(w, 1e-3, 10.0),
         {"logpdf": (128, 256), "pdf": (128, 256), "cdf": (512, 2048), "sf": (512, 2048),
          "logcdf": (256, 512), "logsf": (256, 512)},
         _gamma_like("chi2"), _not_underflowing("chi2")),
    Spec("beta", lambda u, v, f64: [log_spread(u, 0.1, 50.0), log_spread(v, 0.1, 50.0)],
         lambda w, p, f64: w,
         {"logpdf": (512, 512), "pdf": (512, 512), "cdf": (2048, 16384),
          "sf": (2048, 16384), "logcdf": (256, 256), "logsf": (256, 256)},
         {**_gamma_like("beta"), "pdf": _beta_pdf}, _not_underflowing("beta", f64_floor=1e-100)),
    # In float64 the allowance is SciPy's own error, which grows as eps a**2 and as the
    # inverse width of [a, z] or [z, b] (66 ulps at logsf(-4.508, -5, -4.5), where
    # lamella is within 1 ulp of mpmath); test_stats_tails.py holds lamella to mpmath.
    Spec("truncnorm", lambda u, v, f64: _truncnorm_bounds(u, v, f64),
         lambda w, p, f64: p[0] + (p[1] - p[0]) * (w if not f64 else 0.05 + 0.9 * w),
         {"logpdf": (16, 128), "pdf": (16, 128), "cdf": (16, 4096), "logcdf": (32, 4096),
          "sf": (16, 4096), "logsf": (32, 4096)}, exponential=("pdf", "cdf", "sf")),
    Spec("gennorm", lambda u, v, f64: [log_spread(u, 0.2, 10.0)],
         lambda w, p, f64: signed(w, 1e-3, 1.0) * 100.0 ** (1 / p[0]),
         {"logpdf": (32, 32), "pdf": (32, 32), "cdf": (512, 2048)}),
    Spec("vonmises", lambda u, v, f64: [log_spread(u, 1e-3, 100.0)],
         lambda w, p, f64: np.pi * (2 * w - 1),
         {"logpdf": (16, 16), "pdf": (16, 16)}),
    Spec("wrapcauchy", lambda u, v, f64: [0.01 + 0.98 * u],
         lambda w, p, f64: 2 * np.pi * (0.001 + 0.998 * w),
         {"logpdf": (16, 16), "pdf": (16, 16)},
         {"logpdf": _wrapcauchy_logpdf, "pdf": lambda x, c: np.exp(_wrapcauchy_logpdf(x, c))}),
]
QUANTILES = ("ppf", "isf")


def _t_scipy_error(args):
    """SciPy's float64 t.logpdf subtracts log-gammas: its own absolute error."""
    df = args[1]
    return 4 * (np.abs(sp.gammaln((df + 1) / 2)) + np.abs(sp.gammaln(df / 2)) + 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
@settings(max_examples=20, deadline=None)
@given(u=unit(), v=unit(), w=unit())
def test_values_against_scipy(spec, dtype, u, v, w):
    f64 = dtype == np.float64
    params = spec.params(u, v, f64)
    # XLA on CPU flushes subnormal inputs to 0, as in JAX.
    xs = flush_subnormals(np.asarray(spec.x(w, params, f64), dtype))
    qs = flush_subnormals(np.asarray(probabilities(w), dtype))
    params = [np.asarray(p, dtype) for p in params]
    module, scipy_dist = getattr(stats, spec.name), getattr(ss, spec.name)
    with lc.enable_x64(f64), np.errstate(all="ignore"):
        for function, (ulps32, ulps64) in spec.ulps.items():
            first = qs if function in QUANTILES else xs
            args = [first] + params
            wide = [a.astype(np.float64) for a in args]
            reference = spec.references.get(function, getattr(scipy_dist, function))
            want = reference(*wide)
            ulps = ulps64 if f64 else ulps32
            if spec.name == "t" and f64:
                ulps = max(ulps, np.max(_t_scipy_error(wide)))
            where = spec.mask(wide, f64) if spec.mask else None
            got = getattr(module, function)(*args)
            assert_ulps_of(got, want, dtype, ulps, where=where,
                           log=function.startswith("log") or function in spec.absolute_near_zero,
                           exponential=function in spec.exponential)


# Two batches of SIZE: the kernels compiled for the hypothesis tests serve these too.
SPECIAL_POINTS = np.array([-np.inf, -1e30, -2.0, -1.0, -1e-30, 0.0, 1e-30, 0.5,
                           1.0, 2.0, 6.0, 1e30, np.inf, np.nan, 0.25, -0.25])
SPECIAL_PROBABILITIES = np.array([-0.5, 0.0, 1e-30, 0.5, 1.0, 1.5, np.nan, 0.75])
# Shape parameters at and beyond their limits (the last of each list is invalid).
EDGE_PARAMETERS = {
    "pareto": [(2.0,), (0.0,)], "t": [(3.0,), (np.inf,), (0.0,)],
    "gamma": [(0.5,), (1.0,), (2.0,), (0.0,)], "chi2": [(1.0,), (2.0,), (3.0,), (-1.0,)],
    "beta": [(0.5, 0.5), (1.0, 1.0), (2.0, 3.0), (0.0, 1.0)],
    "truncnorm": [(-1.0, 2.0), (-np.inf, 0.0), (1.0, np.inf), (2.0, 1.0)],
    "gennorm": [(1.5,), (0.0,)], "vonmises": [(2.0,), (0.0,), (-1.0,)],
    "wrapcauchy": [(0.5,), (0.0,), (1.0,)],
}
WITHOUT_LOC_SCALE = ("gennorm", "vonmises", "wrapcauchy")
# Where SciPy's float64 is -inf (or 0) but the value is a representable number,
# lamella gives the number: x = +-1e30 for these log-functions (checked in
# test_log_functions_far_out), and truncnorm at |x| = 1e-30 (SciPy's logsf on
# (-inf, 0] there is -36.6, the true value -69.3).
BEYOND_SCIPY = {("laplace", "logpdf"), ("gumbel_r", "logsf"), ("gumbel_l", "logcdf"),
                ("gumbel_r", "logpdf"), ("gumbel_l", "logpdf")}


def _edge_cases():
    for spec in SPECS:
        for params in EDGE_PARAMETERS.get(spec.name, [()]):
            for loc_scale in ([()] if spec.name in WITHOUT_LOC_SCALE
                              else [(0.0, 1.0), (1.0, 2.0), (0.0, 0.0), (1.0, -1.0)]):
                yield spec, params, loc_scale


@pytest.mark.parametrize("spec,params,loc_scale", list(_edge_cases()),
                         ids=lambda v: v.name if isinstance(v, Spec) else str(v))
def test_edge_values_match_scipy(spec, params, loc_scale):
    """Infinities, NaN, the support's ends, zero and invalid scales, limiting shape
    parameters: NaN and the infinities where SciPy has them, the rest within 1e-12."""
    with lc.enable_x64(), np.errstate(all="ignore"):
        for function in spec.ulps:
            points = SPECIAL_PROBABILITIES if function in QUANTILES else SPECIAL_POINTS
            for batch in points.reshape(-1, 8):
                args = [batch] + [np.full(8, p) for p in params + loc_scale]
                want = getattr(getattr(ss, spec.name), function)(*args)
                got = np.asarray(getattr(getattr(stats, spec.name), function)(*args))
                keep = np.ones(8, bool)
                if (spec.name, function) in BEYOND_SCIPY:
                    keep = np.abs(batch) != 1e30
                if spec.name == "truncnorm":
                    keep = np.abs(batch) != 1e-30
                np.testing.assert_allclose(got[keep], want[keep], rtol=1e-12, atol=0,
                                           err_msg=f"{spec.name}.{function}{params}{loc_scale}")


def test_log_functions_far_out():
    """Where SciPy's float64 overflows to -inf, the log-functions keep the number."""
    x = np.float32([1e30, -1e30])
    np.testing.assert_allclose(stats.laplace.logpdf(x), -1e30 - np.log(2), rtol=1e-7)
    np.testing.assert_allclose(stats.gumbel_r.logsf(x[:1]), -1e30, rtol=1e-7)
    np.testing.assert_allclose(stats.gumbel_l.logcdf(x[1:]), -1e30, rtol=1e-7)
    np.testing.assert_allclose(stats.cauchy.logpdf(x), -np.log(np.pi) - 2 * np.log(1e30),
                               rtol=1e-6)
    np.testing.assert_allclose(stats.t.logpdf(np.float32([1e30]), 3.0), -275.11386, rtol=1e-6)
    assert float(stats.gumbel_r.logpdf(np.float32(-1e30))) == -np.inf


def test_loc_and_scale_broadcast():
    """Parameters of different shapes broadcast like NumPy's (and SciPy's)."""
    x = np.linspace(-3, 3, 7, dtype=np.float32)[:, None]
    loc = np.float32([[-1.0, 0.0, 2.0]])
    scale = np.float32([0.5, 1.0, 3.0])
    got = stats.norm.logpdf(x, loc, scale)
    assert got.shape == (7, 3) and got.dtype == np.float32
    want = ss.norm.logpdf(x.astype(np.float64), loc, scale)
    assert_ulps_of(got, want, np.float32, 16, log=True)
    got = stats.gamma.cdf(x, np.float32([[0.5], [1.0], [2.0], [3.0], [4.0], [5.0], [6.0]]), loc,
                          scale)
    want = ss.gamma.cdf(x.astype(np.float64), np.arange(7)[:, None] + np.where(
        np.arange(7)[:, None] == 0, 0.5, 0.0), loc, scale)
    assert_ulps_of(got, want, np.float32, 512)


def test_dtypes_follow_jax_promotion():
    """Python scalars are weak, integers become the default float, 16-bit floats
    are computed in float32 and returned in their own dtype."""
    assert stats.norm.logpdf(np.float32(1.0), 0, 1).dtype == np.float32
    assert stats.norm.cdf(1).dtype == np.float32
    half = stats.gamma.logpdf(np.float16(1.5), 2.0)
    assert half.dtype == np.float16
    np.testing.assert_allclose(float(half), ss.gamma.logpdf(1.5, 2.0), rtol=1e-3)
    with lc.enable_x64():
        assert stats.t.logpdf(1.0, 3).dtype == np.float64
        assert stats.cauchy.sf(np.float32(2.0)).dtype == np.float32
    with pytest.raises(TypeError, match="real"):
        stats.norm.logpdf(np.complex64(1.0))
