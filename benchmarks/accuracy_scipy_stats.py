"""Measures the accuracy of lamella.scipy.stats (and of JAX's jax.scipy.stats,
when it is installed) against SciPy's float64 answers, for the README's table.

    python benchmarks/accuracy_scipy_stats.py [distribution ...]

For each function of each distribution, on 4000 seeded random points of a range
that includes both tails (shape parameters log-uniform over decades; loc 0 and
scale 1, since any other loc and scale only add the rounding of (x - loc) / scale,
which scales the error by the function's condition number), for float32 and
float64 inputs it prints the largest error and the 99th percentile in ulps of the
input dtype: |got - want| / (eps |want|), and for the log-functions (logpdf,
logcdf, ...) |got - want| / (eps max(1, |want|)), since a log-density crosses 0
and is only meaningful to absolute accuracy there. Points where the reference is
not a finite normal number of the dtype are left out; "NaN" marks a NaN where the
reference has a number, "inf" an infinity. The reference is SciPy's float64 for
the inputs rounded to the dtype under test, except where SciPy's float64 loses
digits: there mpmath (30 digits) when it is installed (norm's tails, where SciPy's
float64 ndtr is 250 ulps off, and pdf; cauchy's quantiles; truncnorm; t; the
binomial, Poisson, negative binomial and beta-binomial log-probabilities, which
SciPy computes from log-gammas that cancel for large counts),
log1p(-sf) for a log-CDF near 0 (SciPy takes
log(cdf)), and 80-bit formulas for pareto's CDF near its start (SciPy's 1 - z**-b
cancels).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.stats as ss
from harness import jax_or_none

import lamella.core as lc
from lamella.scipy import stats

RNG_SEED = 20250101
N = 4000


@dataclass
class Family:
    name: str
    functions: tuple[str, ...]
    sample: Callable[[np.random.Generator], list[np.ndarray]]  # float64 arguments after x
    x: Callable[[np.random.Generator, list[np.ndarray]], np.ndarray]
    quantiles: tuple[str, ...] = ()  # functions taking a probability first
    references: dict[str, Callable[..., np.ndarray]] | None = None  # better than SciPy's


def _logu(rng, lo, hi, n=N):
    return np.exp(rng.uniform(np.log(lo), np.log(hi), n))


def _signed(rng, lo, hi, n=N):
    return _logu(rng, lo, hi, n) * rng.choice([-1.0, 1.0], n)


def _probabilities(rng, n=N):
    tail = _logu(rng, 1e-30, 0.5, n)
    return np.where(rng.uniform(size=n) < 0.5, tail, 1 - tail * rng.uniform(size=n))


def _locscale(rng):
    return []


def _z(rng, args, spread=1.0, lo=1e-3, hi=40.0):
    return spread * _signed(rng, lo, hi)


def _truncnorm_bounds(rng):
    """Intervals of width 1e-6 ... 10 anywhere in [-30, 30]."""
    a = rng.uniform(-30, 30, N)
    return [a, a + _logu(rng, 1e-6, 10)]


def _mp(function, *arrays):
    """`function` of mpmath numbers (30 digits), elementwise, or None without mpmath."""
    try:
        import mpmath
    except ImportError:
        return None
    with mpmath.workdps(30):
        return np.array([float(function(mpmath, *[mpmath.mpf(float(v)) for v in values]))
                         for values in zip(*arrays)])


def _t_logpdf(mp, x, df):
    return (mp.loggamma((df + 1) / 2) - mp.loggamma(df / 2) - mp.log(mp.pi * df) / 2
            - (df + 1) / 2 * mp.log1p(x * x / df))


def _truncnorm(function):
    def value(mp, x, a, b):
        # Masses of far-tail intervals as differences of upper tails (ncdf of a large
        # argument is 1 minus the mass, which 30 digits would not hold).
        def mass(lo, hi):
            return mp.ncdf(-lo) - mp.ncdf(-hi) if lo > 0 else mp.ncdf(hi) - mp.ncdf(lo)
        m = mass(a, b)
        if m == 0:  # a == b after rounding to float32: not a distribution
            return mp.nan
        return {"logpdf": lambda: mp.log(mp.npdf(x) / m), "pdf": lambda: mp.npdf(x) / m,
                "cdf": lambda: mass(a, x) / m, "logcdf": lambda: mp.log(mass(a, x) / m),
                "sf": lambda: mass(x, b) / m, "logsf": lambda: mp.log(mass(x, b) / m)}[function]()
    return value


def _normal(function):
    return {"pdf": lambda mp, x: mp.npdf(x), "cdf": lambda mp, x: mp.ncdf(x),
            "sf": lambda mp, x: mp.ncdf(-x), "logcdf": lambda mp, x: mp.log(mp.ncdf(x)),
            "logsf": lambda mp, x: mp.log(mp.ncdf(-x))}[function]


def _cauchy_quantile(mp, q):
    # -cot(pi q), not tan(pi (q - 1/2)): q - 1/2 would need more than 30 digits for q ~ 1e-30.
    return mp.inf if q == 1 else -mp.inf if q == 0 else -mp.cot(mp.pi * q)


def _pareto(x, b, function):
    x, b = np.asarray(x, np.longdouble), np.asarray(b, np.longdouble)
    logsf = -b * np.log(x)
    return {"cdf": -np.expm1(logsf), "logcdf": np.log(-np.expm1(logsf)),
            "logsf": logsf}[function].astype(np.float64)


def _log_near_one(name):
    """SciPy's logcdf and logsf with log1p(-the other) where the other is below 1/2."""
    dist = getattr(ss, name)

    def pick(function, other):
        def reference(*args):
            with np.errstate(all="ignore"):
                small = getattr(dist, other)(*args)
                return np.where(small < 0.5, np.log1p(-small), getattr(dist, function)(*args))
        return reference

    return {"logcdf": pick("logcdf", "sf"), "logsf": pick("logsf", "cdf")}


FAMILIES = [
    Family("norm", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), _locscale, _z,
           ("ppf", "isf"), references={f: (lambda x, f=f: _mp(_normal(f), x))
                                       for f in ("pdf", "cdf", "sf", "logcdf", "logsf")}),
    Family("cauchy", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), _locscale,
           lambda r, a: _z(r, a, 1.0, 1e-3, 1e12), ("ppf", "isf"),
           references={"ppf": lambda q: _mp(_cauchy_quantile, q),
                       "isf": lambda q: -_mp(_cauchy_quantile, q)}),
    Family("logistic", ("logpdf", "pdf", "cdf", "sf"), _locscale,
           lambda r, a: _z(r, a, 1.0, 1e-3, 80.0), ("ppf", "isf")),
    Family("laplace", ("logpdf", "pdf", "cdf"), _locscale,
           lambda r, a: _z(r, a, 1.0, 1e-3, 80.0)),
    Family("expon", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), _locscale,
           lambda r, a: _logu(r, 1e-6, 80.0), ("ppf",)),
    Family("gumbel_r", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), _locscale,
           lambda r, a: _z(r, a, 1.0, 1e-3, 30.0), ("ppf",)),
    Family("gumbel_l", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"), _locscale,
           lambda r, a: _z(r, a, 1.0, 1e-3, 30.0), ("ppf",)),
    Family("uniform", ("logpdf", "pdf", "cdf"), _locscale,
           lambda r, a: r.uniform(-0.5, 1.5, N), ("ppf",)),
    Family("pareto", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"),
           lambda r: [_logu(r, 0.1, 10)] + _locscale(r),
           lambda r, a: 1 + _logu(r, 1e-6, 1e6), ("ppf",),
           references={f: (lambda x, b, f=f: _pareto(x, b, f))
                       for f in ("cdf", "logcdf", "logsf")}),
    Family("t", ("logpdf", "pdf"), lambda r: [_logu(r, 0.1, 1e6)] + _locscale(r),
           lambda r, a: _z(r, a, 1.0, 1e-3, 1e4),
           references={"logpdf": lambda x, df: _mp(_t_logpdf, x, df),
                       "pdf": lambda x, df: np.exp(_mp(_t_logpdf, x, df))}),
    Family("gamma", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"),
           lambda r: [_logu(r, 0.1, 100)] + _locscale(r),
           lambda r, a: a[0] * _logu(r, 1e-3, 10.0), references=_log_near_one("gamma")),
    Family("chi2", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"),
           lambda r: [_logu(r, 0.1, 100)] + _locscale(r),
           lambda r, a: a[0] * _logu(r, 1e-3, 10.0), references=_log_near_one("chi2")),
    Family("beta", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"),
           lambda r: [_logu(r, 0.1, 50), _logu(r, 0.1, 50)] + _locscale(r),
           lambda r, a: r.uniform(0, 1, N), references=_log_near_one("beta")),
    Family("truncnorm", ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"),
           lambda r: _truncnorm_bounds(r) + _locscale(r),
           lambda r, a: a[0] + (a[1] - a[0]) * r.uniform(0, 1, N),
           references={f: (lambda x, a, b, f=f: _mp(_truncnorm(f), x, a, b))
                       for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")}),
    Family("gennorm", ("logpdf", "pdf", "cdf"), lambda r: [_logu(r, 0.2, 10)],
           lambda r, a: _signed(r, 1e-3, 20.0)),
    Family("vonmises", ("logpdf", "pdf"), lambda r: [_logu(r, 1e-3, 1e4)],
           lambda r, a: r.uniform(-np.pi, np.pi, N)),
    Family("wrapcauchy", ("logpdf", "pdf"), lambda r: [r.uniform(0.001, 0.999, N)],
           lambda r, a: r.uniform(0, 2 * np.pi, N)),
]


def _binom_mp(mp, k, n, p):
    return (mp.loggamma(n + 1) - mp.loggamma(k + 1) - mp.loggamma(n - k + 1)
            + k * mp.log(p) + (n - k) * mp.log1p(-p))


def _poisson_mp(mp, k, mu):
    return k * mp.log(mu) - mu - mp.loggamma(k + 1)


def _nbinom_mp(mp, k, n, p):
    return (mp.loggamma(k + n) - mp.loggamma(n) - mp.loggamma(k + 1) + n * mp.log(p)
            + k * mp.log1p(-p))


def _betabinom_mp(mp, k, n, a, b):
    return (mp.loggamma(n + 1) - mp.loggamma(k + 1) - mp.loggamma(n - k + 1)
            + mp.log(mp.beta(k + a, n - k + b)) - mp.log(mp.beta(a, b)))


def _log_and_exp(function):
    return {"logpmf": lambda *args: _mp(function, *args),
            "pmf": lambda *args: np.exp(_mp(function, *args))}


def _counts(rng, mean, spread, high=None):
    k = np.round(mean + 3 * spread * rng.standard_normal(N))
    return np.clip(k, 0, high) if high is not None else np.maximum(k, 0)


def _binom_params(rng):
    return [np.floor(_logu(rng, 1, 1e6)), rng.uniform(0.001, 0.999, N)]


def _nbinom_params(rng):
    return [_logu(rng, 0.1, 1e4), rng.uniform(0.01, 1, N)]


def _betabinom_params(rng):
    return [np.floor(_logu(rng, 1, 1e4)), _logu(rng, 0.1, 100), _logu(rng, 0.1, 100)]


DISCRETE = [
    Family("binom", ("logpmf", "pmf"), _binom_params,
           lambda r, a: _counts(r, a[0] * a[1], np.sqrt(a[0] * a[1] * (1 - a[1])), a[0]),
           references=_log_and_exp(_binom_mp)),
    Family("poisson", ("logpmf", "pmf", "cdf"), lambda r: [_logu(r, 1e-3, 1e6)],
           lambda r, a: _counts(r, a[0], np.sqrt(a[0])), references=_log_and_exp(_poisson_mp)),
    Family("nbinom", ("logpmf", "pmf"), _nbinom_params,
           lambda r, a: _counts(r, a[0] * (1 - a[1]) / a[1], np.sqrt(a[0] * (1 - a[1])) / a[1]),
           references=_log_and_exp(_nbinom_mp)),
    Family("geom", ("logpmf", "pmf"), lambda r: [r.uniform(0.001, 1, N)],
           lambda r, a: 1 + np.floor(_logu(r, 1e-3, 1e3))),
    Family("betabinom", ("logpmf", "pmf"), _betabinom_params,
           lambda r, a: np.floor(r.uniform(0, 1, N) * (a[0] + 1)),
           references=_log_and_exp(_betabinom_mp)),
    Family("bernoulli", ("logpmf", "pmf", "cdf"), lambda r: [r.uniform(0, 1, N)],
           lambda r, a: r.integers(0, 2, N).astype(np.float64)),
]


def _error(got, want, dtype, log: bool) -> tuple[float, float]:
    got = np.asarray(got, np.float64)
    tiny, huge = np.finfo(dtype).tiny, np.finfo(dtype).max
    ok = np.isfinite(want) & (np.abs(want) >= tiny) & (np.abs(want) <= huge)
    if np.any(np.isnan(got[ok])):
        return float("nan"), float("nan")
    if np.any(np.isinf(got[ok])):
        return float("inf"), float("inf")
    scale = np.maximum(np.abs(want[ok]), 1.0) if log else np.abs(want[ok])
    err = np.abs(got[ok] - want[ok]) / (np.finfo(dtype).eps * scale)
    return float(err.max(initial=0.0)), float(np.percentile(err, 99)) if err.size else 0.0


def measure(family: Family, jax) -> list[tuple[str, dict]]:
    rows = []
    rng = np.random.default_rng(RNG_SEED)
    params = family.sample(rng)
    xs = family.x(rng, params)
    qs = _probabilities(rng)
    for function in family.functions + family.quantiles:
        first = qs if function in family.quantiles else xs
        cells = {}
        for dtype in (np.float32, np.float64):
            args = [np.asarray(a, dtype) for a in [first] + params]
            wide = [a.astype(np.float64) for a in args]
            reference = (family.references or {}).get(function)
            want = reference(*wide) if reference is not None else None
            if want is None:
                with np.errstate(all="ignore"):
                    want = getattr(getattr(ss, family.name), function)(*wide)
            log = function.startswith("log")  # logpdf, logpmf, logcdf, logsf
            if jax is not None:  # jaxlib reads JAX's x64 flag for lamella's scalars too
                jax.config.update("jax_enable_x64", dtype == np.float64)
            with lc.enable_x64(dtype == np.float64):
                got = np.asarray(getattr(getattr(stats, family.name), function)(*args))
            cells[("lamella", dtype)] = _error(got, want, dtype, log)
            if jax is not None:
                jfun = getattr(getattr(jax.scipy.stats, family.name), function, None)
                cells[("jax", dtype)] = (_error(np.asarray(jax.jit(jfun)(*args)), want, dtype, log)
                                         if jfun is not None else None)
        rows.append((function, cells))
    return rows


def _cell(v) -> str:
    if v is None:
        return "-"
    big, p99 = v
    return "/".join(f"{x:.3g}" if np.isfinite(x) else str(x) for x in (big, p99))


def main(names: list[str]) -> None:
    jax = jax_or_none()
    if jax is not None:
        import jax.scipy.stats  # noqa: F401
    header = "| function | f32 | f64 |" + (" JAX f32 | JAX f64 |" if jax else "")
    print(header)
    print("|---" * (header.count("|") - 1) + "|")
    for family in FAMILIES + DISCRETE:
        if names and family.name not in names:
            continue
        for function, cells in measure(family, jax):
            line = (f"| {family.name}.{function} | {_cell(cells[('lamella', np.float32)])} | "
                    f"{_cell(cells[('lamella', np.float64)])} |")
            if jax:
                line += (f" {_cell(cells.get(('jax', np.float32)))} |"
                         f" {_cell(cells.get(('jax', np.float64)))} |")
            print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
