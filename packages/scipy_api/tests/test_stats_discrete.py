"""The discrete distributions against SciPy on hypothesis inputs (float32 and
float64), JAX's values at non-integer k, SciPy's NaN for invalid parameters, edge
values, and Poisson's entropy.

SciPy's float64 log-probabilities of the binomial-type families come from
log-gammas that cancel for large counts, so float64 is compared with SciPy only
for moderate counts; test_stats_tails.py compares large ones with mpmath.
"""

import numpy as np
import pytest
import scipy.stats as ss
from hypothesis import given, settings
from stats_checks import DTYPES, KNOWN_ANSWERS, assert_ulps_of, log_spread, unit

import lamella.core as lc
from lamella.scipy import stats


def _counts(u, mean, spread, high=None):
    """Whole numbers about `mean`, three `spread`s either way (u in [0, 1])."""
    k = np.round(mean + 3 * spread * (2 * np.asarray(u) - 1))
    return np.clip(k, 0, high) if high is not None else np.maximum(k, 0)


def _binom(u, v, w, f64):
    n = np.floor(log_spread(u, 1, 200 if f64 else 1e6))
    p = 0.001 + 0.998 * v
    return [_counts(w, n * p, np.sqrt(n * p * (1 - p)) + 1, n), n, p]


def _poisson(u, v, w, f64):
    mu = log_spread(u, 1e-3, 100 if f64 else 1e6)
    return [_counts(w, mu, np.sqrt(mu) + 1), mu]


def _nbinom(u, v, w, f64):
    n, p = log_spread(u, 0.1, 100 if f64 else 1e4), 0.01 + 0.99 * v
    return [_counts(w, n * (1 - p) / p, np.sqrt(n * (1 - p)) / p + 1), n, p]


def _geom(u, v, w, f64):
    return [1 + np.floor(log_spread(w, 1e-3, 1e3)), 0.001 + 0.999 * u]


def _betabinom(u, v, w, f64):
    n = np.floor(log_spread(u, 1, 100))
    return [np.floor(w * (n + 1)), n, log_spread(v, 0.1, 10), log_spread(1 - v, 0.1, 10)]


def _bernoulli(u, v, w, f64):
    # p below 1e-30 is taken as 0: exp(log p) for p near float32's tiny underflows in
    # XLA (as in JAX), and p = 0 itself is an edge value tested below
    return [np.round(w), np.where(u < 1e-30, 0.0, u)]


# family: (arguments, {function: (float32 ulps, float64 ulps)}); logs in ulps of max(1, |v|),
# probabilities scaled by max(1, |log p|) (they are exp of the log).
FAMILIES = {
    "binom": (_binom, {"logpmf": (32, 64), "pmf": (32, 64)}),
    "poisson": (_poisson, {"logpmf": (32, 64), "pmf": (32, 64), "cdf": (512, 4096)}),
    "nbinom": (_nbinom, {"logpmf": (64, 128), "pmf": (64, 128)}),
    "geom": (_geom, {"logpmf": (8, 8), "pmf": (8, 8)}),
    "betabinom": (_betabinom, {"logpmf": (256, 256), "pmf": (256, 256)}),
    "bernoulli": (_bernoulli, {"logpmf": (2, 2), "pmf": (4, 4), "cdf": (1, 1)}),
}
WITHOUT_LOC = {("bernoulli", "cdf")}
# Exact references where SciPy's own is not (its bernoulli goes through the binomial's
# log-gammas: pmf(0, 5e-20) = 1 - 4e-15).
EXACT = {
    ("bernoulli", "pmf"): lambda k, p: np.where(k == 0, 1 - p, np.where(k == 1, p, 0.0)),
    ("bernoulli", "logpmf"): lambda k, p: np.where(
        k == 0, np.log1p(-p), np.where(k == 1, np.log(p), -np.inf)),
}


def _cancelling_terms(name, args):
    """The magnitude of the log-gamma terms SciPy's float64 log-pmf sums (they cancel,
    so SciPy's own error grows with them: lamella's saddle-point forms do not cancel;
    checked against mpmath, SciPy is the one off in the cases this allows for)."""
    from scipy.special import gammaln
    with np.errstate(all="ignore"):
        if name == "binom":
            k, n, p = args
            terms = [gammaln(n + 1), gammaln(k + 1), gammaln(n - k + 1), k * np.log(p),
                     (n - k) * np.log1p(-p)]
        elif name == "poisson":
            k, mu = args
            terms = [k * np.log(mu), mu, gammaln(k + 1)]
        elif name == "nbinom":
            k, n, p = args
            terms = [gammaln(k + n), gammaln(n), gammaln(k + 1), n * np.log(p),
                     k * np.log1p(-p)]
        elif name == "geom":
            k, p = args
            terms = [k - 1]  # SciPy's (1 - p)**(k - 1) carries k - 1 roundings of 1 - p
        else:
            return 0.0
        return np.nan_to_num(sum(np.abs(t) for t in terms), posinf=0.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(FAMILIES))
@settings(max_examples=20, deadline=None)
@given(u=unit(), v=unit(), w=unit())
def test_values_against_scipy(name, dtype, u, v, w):
    f64 = dtype == np.float64
    make, functions = FAMILIES[name]
    args = [np.asarray(a, dtype) for a in make(u, v, w, f64)]
    wide = [a.astype(np.float64) for a in args]
    with lc.enable_x64(f64), np.errstate(all="ignore"):
        for function, (ulps32, ulps64) in functions.items():
            reference = EXACT.get((name, function), getattr(getattr(ss, name), function))
            want = reference(*wide)
            got = getattr(getattr(stats, name), function)(*args)
            ulps = ulps64 if f64 else ulps32
            if f64 and function != "cdf":
                # allow for SciPy's own rounding error, relative to the log's scale
                log_want = want if function == "logpmf" else np.log(want)
                own = 4 * _cancelling_terms(name, wide) / np.maximum(np.abs(log_want), 1.0)
                ulps = ulps + np.nan_to_num(own, nan=0.0)
            assert_ulps_of(got, want, dtype, ulps,
                           log=function.startswith("log"), exponential=function == "pmf")


def test_non_integer_k_follows_jax():
    """JAX's formulas are continuous in k for bernoulli (soft labels), binom, nbinom
    and geom, -inf for poisson, and floor k for betabinom (SciPy: -inf throughout)."""
    with lc.enable_x64():
        k = np.array([0.3, 1.5, 2.7])
        np.testing.assert_allclose(stats.bernoulli.logpmf(0.3, 0.2),
                                   0.3 * np.log(0.2) + 0.7 * np.log(0.8), rtol=1e-14)
        from scipy.special import gammaln
        n, p = 5.0, 0.3
        binom = (gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1) + k * np.log(p)
                 + (n - k) * np.log1p(-p))
        np.testing.assert_allclose(stats.binom.logpmf(k, n, p), binom, rtol=1e-13)
        r = 2.5
        nbinom = (gammaln(k + r) - gammaln(r) - gammaln(k + 1) + r * np.log(p)
                  + k * np.log1p(-p))
        np.testing.assert_allclose(stats.nbinom.logpmf(k, r, p), nbinom, rtol=1e-13)
        np.testing.assert_allclose(stats.geom.logpmf(k + 1, p), k * np.log1p(-p) + np.log(p),
                                   rtol=1e-13)
        assert np.all(np.isneginf(stats.poisson.logpmf(k, 2.0)))
        np.testing.assert_allclose(stats.betabinom.logpmf(k, 5.0, 2.0, 3.0),
                                   ss.betabinom.logpmf(np.floor(k), 5, 2, 3), rtol=1e-13)


def test_invalid_parameters_give_nan():
    with np.errstate(all="ignore"):
        nan = np.float32(np.nan)
        for got in (stats.bernoulli.logpmf(1.0, np.float32([-0.1, 1.1, nan])),
                    stats.bernoulli.cdf(1.0, np.float32([-0.1, 1.1, nan])),
                    stats.bernoulli.ppf(0.5, np.float32([-0.1, 1.1, nan])),
                    stats.binom.logpmf(1.0, np.float32([-1.0, 2.5, 3.0]),
                                       np.float32([0.5, 0.5, 1.5])),
                    stats.poisson.logpmf(1.0, np.float32([-1.0, nan, -0.5])),
                    stats.poisson.cdf(1.0, np.float32([-1.0, nan, -0.5])),
                    stats.poisson.entropy(np.float32([-1.0, nan, -0.5])),
                    stats.nbinom.logpmf(1.0, np.float32([0.0, 1.0, 1.0]),
                                        np.float32([0.5, 0.0, 1.5])),
                    stats.geom.logpmf(1.0, np.float32([0.0, 1.5, nan])),
                    stats.betabinom.logpmf(1.0, np.float32([2.5, 2.0, 2.0]),
                                           np.float32([1.0, 0.0, 1.0]),
                                           np.float32([1.0, 1.0, -1.0]))):
            assert np.all(np.isnan(np.asarray(got))), got


def test_edge_values_match_scipy():
    """Support ends, k = +-inf and NaN, p at 0 and 1, mu = 0, n = 0."""
    k = np.array([-1.0, 0.0, 1.0, 2.0, 5.0, 6.0, np.inf, np.nan])
    cases = [("binom", (5.0, 0.0)), ("binom", (5.0, 1.0)), ("binom", (0.0, 0.3)),
             ("poisson", (0.0,)), ("poisson", (3.0,)), ("nbinom", (2.0, 1.0)),
             ("geom", (1.0,)), ("betabinom", (5.0, 1.0, 1.0)), ("bernoulli", (0.0,)),
             ("bernoulli", (1.0,))]
    with lc.enable_x64(), np.errstate(all="ignore"):
        for name, params in cases:
            for function in FAMILIES[name][1]:
                args = [k] + [np.full(k.shape, p) for p in params]
                want = getattr(getattr(ss, name), function)(*args)
                got = np.asarray(getattr(getattr(stats, name), function)(*args))
                # (poisson.cdf(inf, mu > 0) is 1 as SciPy's; JAX 0.10.2 gives NaN there)
                if name in ("binom", "poisson") and function != "cdf":
                    # JAX: k = NaN is outside the support (SciPy: NaN)
                    want = np.where(np.isnan(k), -np.inf if function == "logpmf" else 0.0,
                                    want)
                np.testing.assert_allclose(got, want, rtol=1e-13, err_msg=f"{name}.{function}")
        q = np.array([-0.1, 0.0, 0.3, 0.7, 0.71, 1.0, 1.1, np.nan])
        np.testing.assert_array_equal(stats.bernoulli.ppf(q, 0.3), ss.bernoulli.ppf(q, 0.3))


def test_loc_shifts_the_support():
    with lc.enable_x64():
        k = np.array([1.0, 2.0, 3.0, 4.0])
        np.testing.assert_allclose(stats.poisson.logpmf(k, 2.0, 1.0), ss.poisson.logpmf(k, 2.0, 1),
                                   rtol=1e-13)
        np.testing.assert_allclose(stats.binom.pmf(k, 3.0, 0.4, 1.0), ss.binom.pmf(k, 3, 0.4, 1),
                                   rtol=1e-13)
        np.testing.assert_allclose(stats.geom.pmf(k, 0.4, 1.0), ss.geom.pmf(k, 0.4, 1), rtol=1e-13)


def test_poisson_entropy():
    """Against SciPy below mu = 50 (above, SciPy's sum stops early: 6.0216 at mu = 1e4
    where the entropy is 6.0241) and mpmath's sums everywhere."""
    mu = np.array([1e-3, 0.1, 0.5, 1.0, 3.0, 7.5, 20.0, 49.0])
    np.testing.assert_allclose(stats.poisson.entropy(mu.astype(np.float32)),
                               ss.poisson.entropy(mu), rtol=4e-7)
    rows = KNOWN_ANSWERS["poisson.entropy"]
    mu, want = np.array([r[0][0] for r in rows]), np.array([r[1] for r in rows])
    with lc.enable_x64():
        assert_ulps_of(stats.poisson.entropy(mu), want, np.float64, 8)
        assert float(stats.poisson.entropy(0.0)) == 0.0
        assert stats.poisson.entropy(np.ones((2, 1)), np.zeros(3)).shape == (2, 3)


def test_multinomial_against_scipy():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4), size=8)
    n = rng.integers(0, 40, size=8)
    x = np.stack([rng.multinomial(m, q) for m, q in zip(n, p)])
    x[5] = [1, 2, 3, 3]  # sum(x) != n: probability 0
    want = ss.multinomial.logpmf(x, n, p)
    with lc.enable_x64():
        np.testing.assert_allclose(stats.multinomial.logpmf(x, n, p), want, rtol=1e-12)
        np.testing.assert_allclose(stats.multinomial.pmf(x.astype(float), n, p), np.exp(want),
                                   rtol=1e-12)
    got32 = stats.multinomial.logpmf(x, n, p.astype(np.float32))
    assert got32.dtype == np.float32
    assert_ulps_of(got32, want, np.float32, 16, log=True)
    # Large counts: the chain of binomials keeps what log n! - sum log x_i! loses.
    big = np.array([300000, 500000, 200000])
    with lc.enable_x64():
        exact = float(stats.multinomial.logpmf(big, 1000000, np.array([0.3, 0.5, 0.2])))
    got = float(stats.multinomial.logpmf(big, 1000000, np.float32([0.3, 0.5, 0.2])))
    np.testing.assert_allclose(got, exact, rtol=1e-5)


def test_multinomial_edges_and_errors():
    with lc.enable_x64():
        p = np.array([0.5, 0.5, 0.0])
        np.testing.assert_allclose(stats.multinomial.logpmf(np.array([1, 1, 0]), 2, p),
                                   np.log(0.5))
        assert stats.multinomial.logpmf(np.array([1, 0, 1]), 2, p) == -np.inf
        assert stats.multinomial.logpmf(np.array([-1, 2, 1]), 2, np.ones(3) / 3) == -np.inf
        assert stats.multinomial.logpmf(np.array([0.5, 1.5, 0.0]), 2, np.ones(3) / 3) == -np.inf
        assert np.isnan(stats.multinomial.logpmf(np.array([1, 1]), 2, np.array([1.5, -0.5])))
        assert np.isnan(stats.multinomial.logpmf(np.array([1.0, 1.5]), 2.5, np.array([0.5, 0.5])))
    with pytest.raises(ValueError, match="categories"):
        stats.multinomial.logpmf(np.array([1, 1, 1]), 3, np.float32([0.5, 0.5]))


def test_dirichlet_against_scipy():
    rng = np.random.default_rng(1)
    alpha = np.array([0.7, 2.0, 3.5])
    x = rng.dirichlet(alpha, size=6).T  # components along the first axis
    with lc.enable_x64():
        np.testing.assert_allclose(stats.dirichlet.logpdf(x, alpha),
                                   ss.dirichlet.logpdf(x, alpha), rtol=1e-12)
        # The last component left out is 1 minus the others.
        np.testing.assert_allclose(stats.dirichlet.pdf(x[:-1], alpha),
                                   ss.dirichlet.pdf(x, alpha), rtol=1e-12)
        assert stats.dirichlet.logpdf(np.array([0.5, 0.6, -0.1]), alpha) == -np.inf
        assert stats.dirichlet.logpdf(np.array([0.2, 0.2, 0.2]), alpha) == -np.inf
        np.testing.assert_allclose(stats.dirichlet.logpdf(np.array([0.0, 0.5, 0.5]),
                                                          np.array([1.0, 2.0, 2.0])),
                                   ss.dirichlet.logpdf(np.array([0.0, 0.5, 0.5]), [1.0, 2, 2]))
        assert np.isnan(stats.dirichlet.logpdf(np.array([0.2, 0.3, 0.5]), np.array([1, 0, 2.0])))
    assert stats.dirichlet.logpdf(x.astype(np.float32), alpha.astype(np.float32)).dtype == \
        np.float32
    with pytest.raises(ValueError, match="one-dimensional"):
        stats.dirichlet.logpdf(x, alpha[None])
    with pytest.raises(ValueError, match="first axis"):
        stats.dirichlet.logpdf(x.T, alpha)
