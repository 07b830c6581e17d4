"""Records high-precision known answers for lamella.scipy.stats's float64 tests.

SciPy's float64 answers lose digits where lamella's do not: truncnorm far in the
tails (SciPy subtracts log_ndtr values) and on narrow intervals, the binomial,
Poisson and negative binomial log-probabilities for large counts (log-gamma
differences), Student's t for large df, and Poisson's entropy for large mu (its
sum stops early). The tests compare with these values, computed with mpmath at
40 digits. Run with any Python that has mpmath and NumPy:

    python benchmarks/record_stats_mpmath.py

It writes packages/scipy_api/tests/data/stats_mpmath_known_answers.json: per
function, the float64 arguments and the correctly rounded float64 results.
"""

from __future__ import annotations

import json
import pathlib

import mpmath as mp

OUT = (pathlib.Path(__file__).resolve().parents[1] / "packages" / "scipy_api" / "tests"
       / "data" / "stats_mpmath_known_answers.json")
mp.mp.dps = 40


def _mass(lo, hi):
    """Phi(hi) - Phi(lo), as a difference of upper tails right of 0."""
    return mp.ncdf(-lo) - mp.ncdf(-hi) if lo > 0 else mp.ncdf(hi) - mp.ncdf(lo)


def _truncnorm(function, x, a, b):
    x, a, b = mp.mpf(x), mp.mpf(a), mp.mpf(b)
    m = _mass(a, b)
    return {"logpdf": lambda: mp.log(mp.npdf(x) / m),
            "logcdf": lambda: mp.log(_mass(a, x) / m),
            "logsf": lambda: mp.log(_mass(x, b) / m)}[function]()


def _poisson_entropy(mu):
    mu = mp.mpf(mu)
    lo = max(0, int(mu - 40 * mp.sqrt(mu)))
    hi = int(mu + 40 * mp.sqrt(mu)) + 60
    total = mp.mpf(0)
    for k in range(lo, hi):
        log_p = k * mp.log(mu) - mu - mp.loggamma(k + 1)
        total -= mp.exp(log_p) * log_p
    return total


TRUNCNORM_POINTS = [  # (x, a, b): far tails, narrow intervals, both sides
    (30.5, 30.0, 31.0), (30.0001, 30.0, 31.0), (30.999, 30.0, 31.0), (-30.5, -31.0, -30.0),
    (-35.2, -36.0, -35.0), (100.25, 100.0, 100.5), (1e3 + 1e-4, 1e3, 1e3 + 1e-3),
    (0.0, -1e-8, 1e-8), (5e-9, -1e-8, 1e-8), (2.0, 1.9, 2.1), (12.0, 11.0, 40.0),
    (-5.5, -6.0, -5.0), (7.5, 7.0, 9.0), (0.3, -0.5, 0.5), (8.00001, 8.0, 8.00002),
    (-20.0, -20.5, 3.0), (25.0, -1.0, 25.5),
]
LOGPMF_POINTS = {
    "binom": [(500.0, 1000.0, 0.5), (300989.0, 729486.0, 0.4112735761724646),
              (3.0, 1e6, 1e-6), (999990.0, 1e6, 0.99999), (7.0, 9.0, 0.9991), (0.0, 50.0, 0.3),
              (1234.0, 5000.0, 0.25), (40.0, 1e5, 3e-4)],
    "poisson": [(1e6, 1e6), (999000.0, 1e6), (3.0, 2.5), (0.0, 7.0), (70.0, 100.0),
                (123456.0, 123000.5), (1.0, 1e-8), (5e4, 4.9e4)],
    "nbinom": [(3.0, 2.5, 0.3), (1e5, 1e5, 0.5), (10.0, 1e4, 0.999), (2000.0, 0.5, 0.001),
               (0.0, 7.0, 0.2), (500.0, 300.0, 0.4)],
}
T_POINTS = [(0.5, 1e6), (3.0, 1e8), (-2.0, 1e4), (1e3, 2.5), (0.0, 1e12), (40.0, 0.5)]
ENTROPY_POINTS = [1e-3, 0.5, 5.0, 37.0, 150.0, 199.0, 201.0, 1e3, 1e4, 1e5]


def _logpmf(name, k, *params):
    k, params = mp.mpf(k), [mp.mpf(p) for p in params]
    if name == "binom":
        n, p = params
        return (mp.loggamma(n + 1) - mp.loggamma(k + 1) - mp.loggamma(n - k + 1)
                + k * mp.log(p) + (n - k) * mp.log1p(-p))
    if name == "poisson":
        (mu,) = params
        return k * mp.log(mu) - mu - mp.loggamma(k + 1)
    n, p = params
    return (mp.loggamma(k + n) - mp.loggamma(n) - mp.loggamma(k + 1) + n * mp.log(p)
            + k * mp.log1p(-p))


def _t_logpdf(x, df):
    x, df = mp.mpf(x), mp.mpf(df)
    return (mp.loggamma((df + 1) / 2) - mp.loggamma(df / 2) - mp.log(mp.pi * df) / 2
            - (df + 1) / 2 * mp.log1p(x * x / df))


def main() -> None:
    answers = {}
    for function in ("logpdf", "logcdf", "logsf"):
        answers[f"truncnorm.{function}"] = [
            [list(point), float(_truncnorm(function, *point))] for point in TRUNCNORM_POINTS]
    for name, points in LOGPMF_POINTS.items():
        answers[f"{name}.logpmf"] = [[list(point), float(_logpmf(name, *point))]
                                     for point in points]
    answers["t.logpdf"] = [[list(point), float(_t_logpdf(*point))] for point in T_POINTS]
    answers["poisson.entropy"] = [[[mu], float(_poisson_entropy(mu))] for mu in ENTROPY_POINTS]
    OUT.write_text(json.dumps(answers, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
