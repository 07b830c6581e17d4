"""lamella.random samplers: their laws (KS and chi-square tests at a fixed seed), moments,
bounds, dtypes, shapes, jit/eager/vmap agreement, reparameterisation gradients, errors."""

import numpy as np
import pytest
from scipy import special, stats

import lamella.core as lc
import lamella.random as random
from lamella import lax

N = 10_000
KEY = random.key(1234)
P_MIN = 1e-3


def draw(sampler, key=KEY):
    return np.asarray(lc.jit(sampler)(key))


def double_sided_maxwell_cdf(x, loc=1.0, scale=2.0):
    z = (x - loc) / scale
    return 0.5 + 0.5 * np.sign(z) * stats.maxwell.cdf(np.abs(z))


CONTINUOUS = {
    "uniform": (lambda k: random.uniform(k, (N,), minval=-1.0, maxval=2.0),
                stats.uniform(-1, 3).cdf),
    "normal": (lambda k: random.normal(k, (N,)), stats.norm.cdf),
    "lognormal": (lambda k: random.lognormal(k, 0.7, (N,)), stats.lognorm(0.7).cdf),
    "lognormal_sigma_array": (lambda k: random.lognormal(k, np.float32([[0.7], [0.7]]),
                                                         (2, N // 2)).reshape(-1),
                              stats.lognorm(0.7).cdf),
    "truncated_normal": (lambda k: random.truncated_normal(k, -0.5, 1.5, (N,)),
                         stats.truncnorm(-0.5, 1.5).cdf),
    "exponential": (lambda k: random.exponential(k, (N,)), stats.expon.cdf),
    "laplace": (lambda k: random.laplace(k, (N,)), stats.laplace.cdf),
    "logistic": (lambda k: random.logistic(k, (N,)), stats.logistic.cdf),
    "cauchy": (lambda k: random.cauchy(k, (N,)), stats.cauchy.cdf),
    "gumbel": (lambda k: random.gumbel(k, (N,)), stats.gumbel_r.cdf),
    "gumbel_high": (lambda k: random.gumbel(k, (N,), mode="high"), stats.gumbel_r.cdf),
    "pareto": (lambda k: random.pareto(k, 3.0, (N,)), stats.pareto(3.0).cdf),
    "weibull_min": (lambda k: random.weibull_min(k, 2.0, 1.5, (N,)),
                    stats.weibull_min(1.5, scale=2.0).cdf),
    "rayleigh": (lambda k: random.rayleigh(k, 2.0, (N,)), stats.rayleigh(scale=2.0).cdf),
    "wald": (lambda k: random.wald(k, 1.5, (N,)), stats.invgauss(1.5).cdf),
    "triangular": (lambda k: random.triangular(k, 0.0, 1.0, 3.0, (N,)),
                   stats.triang(1 / 3, loc=0, scale=3).cdf),
    "maxwell": (lambda k: random.maxwell(k, (N,)), stats.maxwell.cdf),
    "double_sided_maxwell": (lambda k: random.double_sided_maxwell(k, 1.0, 2.0, (N,)),
                             double_sided_maxwell_cdf),
    "gamma_small": (lambda k: random.gamma(k, 0.3, (N,)), stats.gamma(0.3).cdf),
    "gamma": (lambda k: random.gamma(k, 4.5, (N,)), stats.gamma(4.5).cdf),
    "loggamma": (lambda k: random.loggamma(k, 0.05, (N,)),
                 lambda y: stats.gamma(0.05).cdf(np.exp(y))),
    "beta": (lambda k: random.beta(k, 2.0, 0.7, (N,)), stats.beta(2.0, 0.7).cdf),
    "chisquare": (lambda k: random.chisquare(k, 3.0, (N,)), stats.chi2(3).cdf),
    "f": (lambda k: random.f(k, 3.0, 7.0, (N,)), stats.f(3, 7).cdf),
    "t": (lambda k: random.t(k, 4.0, (N,)), stats.t(4).cdf),
    "generalized_normal": (lambda k: random.generalized_normal(k, 1.5, (N,)),
                           stats.gennorm(1.5).cdf),
    "dirichlet_marginal": (lambda k: random.dirichlet(k, np.float32([1, 2, 3]), (N,))[:, 1],
                           stats.beta(2, 4).cdf),
    "ball_radius": (lambda k: lax.sqrt(lax.reduce_sum(
        lax.integer_pow(random.ball(k, 3, shape=(N,)), 2), (1,))), lambda r: r ** 3),
    "orthogonal_entry": (lambda k: random.orthogonal(k, 3, (N // 4,))[:, 0, 1],
                         stats.beta(1, 1, loc=-1, scale=2).cdf),  # (1 + q) / 2 ~ Beta(1, 1) in 3-D
}


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_law(name):
    sampler, cdf = CONTINUOUS[name]
    x = draw(sampler).astype(np.float64)
    assert np.all(np.isfinite(x))
    assert stats.kstest(x, cdf).pvalue > P_MIN


@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal(method):
    mean = np.float32([1.0, -2.0, 0.5])
    a = np.float32([[1.0, 0.0, 0.0], [0.5, 1.5, 0.0], [-0.3, 0.2, 0.8]])
    cov = a @ a.T
    x = draw(lambda k: random.multivariate_normal(k, mean, cov, (N,), method=method))
    assert x.shape == (N, 3) and x.dtype == np.float32
    w = np.array([0.3, -1.0, 2.0])
    projected = x.astype(np.float64) @ w
    law = stats.norm(w @ mean, np.sqrt(w @ cov @ w))
    assert stats.kstest(projected, law.cdf).pvalue > P_MIN
    np.testing.assert_allclose(np.cov(x.T), cov, atol=0.1)
    # Batched means and covariances broadcast into the default shape.
    batched = random.multivariate_normal(KEY, np.zeros((4, 3), np.float32),
                                         np.broadcast_to(cov, (2, 1, 3, 3)), method=method)
    assert batched.shape == (2, 4, 3)


def chisquare_pvalue(samples, support, probs):
    """Pearson's test of integer samples against probs on support (tail merged into the last)."""
    counts = np.array([np.sum(samples == v) for v in support[:-1]] + [0.0])
    counts[-1] = len(samples) - counts[:-1].sum()
    probs = np.asarray(probs, np.float64)
    probs = np.append(probs[:-1], 1 - probs[:-1].sum())
    assert np.all(probs * len(samples) >= 5)
    return stats.chisquare(counts, probs * len(samples)).pvalue


def binned(dist, upto):
    return np.arange(upto + 1), dist.pmf(np.arange(upto + 1))


DISCRETE = {
    "randint": (lambda k: random.randint(k, (N,), 0, 7), (np.arange(7), np.full(7, 1 / 7))),
    "randint_shifted": (lambda k: random.randint(k, (N,), -3, 2, np.int8),
                        (np.arange(-3, 2), np.full(5, 1 / 5))),
    "bernoulli": (lambda k: random.bernoulli(k, 0.3, (N,)), (np.arange(2), [0.7, 0.3])),
    "bernoulli_high": (lambda k: random.bernoulli(k, 0.3, (N,), mode="high"),
                       (np.arange(2), [0.7, 0.3])),
    "rademacher": (lambda k: random.rademacher(k, (N,)), (np.array([-1, 1]), [0.5, 0.5])),
    "poisson_knuth": (lambda k: random.poisson(k, 3.0, (N,)), binned(stats.poisson(3.0), 9)),
    "poisson_rejection": (lambda k: random.poisson(k, 25.0, (N,)),
                          (np.arange(14, 37), stats.poisson(25.0).pmf(np.arange(14, 37)))),
    "binomial_inversion": (lambda k: random.binomial(k, 10.0, 0.3, (N,)),
                           binned(stats.binom(10, 0.3), 6)),
    "binomial_btrs": (lambda k: random.binomial(k, 200.0, 0.4, (N,)),
                      (np.arange(65, 96), stats.binom(200, 0.4).pmf(np.arange(65, 96)))),
    "binomial_high_p": (lambda k: random.binomial(k, 50.0, 0.9, (N,)),
                        (np.arange(40, 51), stats.binom(50, 0.9).pmf(np.arange(40, 51)))),
    "geometric": (lambda k: random.geometric(k, 0.3, (N,)),
                  (np.arange(1, 12), stats.geom(0.3).pmf(np.arange(1, 12)))),
    "categorical": (lambda k: random.categorical(k, np.log(np.float32([0.1, 0.2, 0.3, 0.4])),
                                                 shape=(N,)),
                    (np.arange(4), [0.1, 0.2, 0.3, 0.4])),
    "choice_p": (lambda k: random.choice(k, 4, (N,), p=np.float32([0.4, 0.1, 0.2, 0.3])),
                 (np.arange(4), [0.4, 0.1, 0.2, 0.3])),
}


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_law(name):
    sampler, (support, probs) = DISCRETE[name]
    x = draw(sampler)
    if x.dtype == bool:
        x = x.astype(np.int32)
    if name.startswith(("poisson_rejection", "binomial_btrs", "binomial_high")):
        # Central bins plus the two tails folded into the end bins.
        lo, hi = support[0], support[-1]
        x = np.clip(x, lo, hi)
        probs = np.array(probs)
        dist = {"poisson_rejection": stats.poisson(25.0), "binomial_btrs": stats.binom(200, 0.4),
                "binomial_high_p": stats.binom(50, 0.9)}[name]
        probs[0] += dist.cdf(lo - 1)
        probs[-1] += dist.sf(hi)
    if np.isclose(np.sum(probs), 1):
        assert np.all(np.isin(x, support))
    else:  # a law with a right tail, counted in the last bin
        assert np.all(x >= support[0])
    assert chisquare_pvalue(x, support, probs) > P_MIN


def test_multinomial_law():
    n, p = 10, np.array([0.1, 0.2, 0.3, 0.4])
    counts = draw(lambda k: random.multinomial(k, float(n), np.float32(p), shape=(N // 2, 4)))
    assert counts.dtype == np.float32 and counts.shape == (N // 2, 4)
    assert np.all(counts == np.round(counts)) and np.all(counts >= 0)
    assert np.all(counts.sum(-1) == n)
    # Means n p and covariances n (diag(p) - p p^T), each within 6 standard errors
    # (normal approximation), and every marginal Binomial(n, p_i).
    m, cov = len(counts), n * (np.diag(p) - np.outer(p, p))
    assert np.all(np.abs(counts.mean(0) - n * p) < 6 * np.sqrt(np.diag(cov) / m))
    cov_se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / m)
    assert np.all(np.abs(np.cov(counts.T) - cov) < 6 * cov_se)
    for i, p_i in enumerate(p):
        marginal = stats.binom(n, p_i)
        upto = np.nonzero(marginal.pmf(np.arange(n + 1)) * m >= 5)[0].max()  # bins of >= 5
        support, probs = binned(marginal, upto)
        assert chisquare_pvalue(counts[:, i], support, probs) > P_MIN
    # Per-row trial counts, a zero-probability category, unnormalised weights.
    rows = draw(lambda k: random.multinomial(k, np.float32([[3.0], [500.0]]),
                                             np.float32([2.0, 0.0, 6.0]), shape=(2, 200, 3)))
    assert np.all(rows.sum(-1) == np.array([[3.0], [500.0]])) and np.all(rows[..., 1] == 0)
    np.testing.assert_allclose(rows[1].mean(0), [125.0, 0.0, 375.0], atol=3.0)


def test_moments_and_pathwise_gradients():
    # d/da E[Gamma(a)] = 1 and d/da E[Beta(a, b)] = b / (a + b)**2: the pathwise
    # (implicit reparameterisation) gradients are unbiased.
    def mean_gamma(a):
        return lax.div(lax.reduce_sum(random.gamma(KEY, a, (N,)), (0,)), np.float32(N))

    def mean_beta(a):
        return lax.div(lax.reduce_sum(random.beta(KEY, a, 3.0, (N,)), (0,)), np.float32(N))
    value, slope = lc.jit(lc.value_and_grad(mean_gamma))(np.float32(2.5))
    assert abs(value - 2.5) < 5 * np.sqrt(2.5 / N) and abs(slope - 1) < 0.05
    value, slope = lc.jit(lc.value_and_grad(mean_beta))(np.float32(2.0))
    assert abs(value - 0.4) < 5 * 0.2 / np.sqrt(N) and abs(slope - 3 / 25) < 0.01


@pytest.mark.parametrize("log_space", [False, True])
def test_gamma_gradient_matches_implicit_formula(log_space):
    alphas = np.float32([0.2, 0.8, 1.0, 2.5, 7.0, 30.0])
    sampler = random.loggamma if log_space else random.gamma
    x, dx = lc.jvp(lambda a: sampler(KEY, a), (alphas,), (np.ones_like(alphas),))
    x, dx = np.asarray(x, np.float64), np.asarray(dx, np.float64)
    values = np.exp(x) if log_space else x
    a64 = alphas.astype(np.float64)
    h = 1e-5 * a64
    dp_da = (special.gammainc(a64 + h, values) - special.gammainc(a64 - h, values)) / (2 * h)
    expected = -dp_da / stats.gamma(a64).pdf(values)
    if log_space:
        expected = expected / values
    np.testing.assert_allclose(dx, expected, rtol=2e-3)


def test_uniform_gradients_wrt_bounds():
    lo, hi = np.float32(-1.5), np.float32(2.0)
    x = np.asarray(random.uniform(KEY, (50,), minval=lo, maxval=hi))
    fraction = (x - lo) / (hi - lo)
    _, d_lo = lc.jvp(lambda m: random.uniform(KEY, (50,), minval=m, maxval=hi), (lo,),
                     (np.float32(1),))
    _, d_hi = lc.jvp(lambda m: random.uniform(KEY, (50,), minval=lo, maxval=m), (hi,),
                     (np.float32(1),))
    np.testing.assert_allclose(np.asarray(d_lo), 1 - fraction, atol=1e-6)
    np.testing.assert_allclose(np.asarray(d_hi), fraction, atol=1e-6)
    grad = lc.grad(lambda s: lax.reduce_sum(lax.mul(s, random.normal(KEY, (50,))), (0,)))
    np.testing.assert_allclose(grad(np.float32(2.0)), np.asarray(random.normal(KEY, (50,))).sum(),
                               rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float16, "bfloat16", np.float32])
def test_uniform_and_normal_dtypes(dtype):
    u = np.asarray(random.uniform(KEY, (2000,), dtype)).astype(np.float64)
    shifted = np.asarray(random.uniform(KEY, (2000,), dtype, 2.0, 3.0)).astype(np.float64)
    z = np.asarray(random.normal(KEY, (2000,), dtype)).astype(np.float64)
    assert random.uniform(KEY, (2,), dtype).dtype == random.normal(KEY, (2,), dtype).dtype
    assert u.min() >= 0.0 and u.max() < 1.0 and abs(u.mean() - 0.5) < 0.03
    # Scaling rounds in the dtype, so maxval itself can come out (as in JAX).
    assert shifted.min() >= 2.0 and shifted.max() <= 3.0 and abs(shifted.mean() - 2.5) < 0.03
    assert np.all(np.isfinite(z)) and abs(z.mean()) < 0.1 and abs(z.std() - 1) < 0.06


def test_float64_and_complex():
    with lc.enable_x64():
        x = random.uniform(KEY, (1000,), np.float64)
        assert x.dtype == np.float64 and 0 <= float(np.min(x)) and float(np.max(x)) < 1
        assert random.normal(KEY, (3,)).dtype == np.float64  # the default float under x64
    z = np.asarray(random.normal(KEY, (4000,), np.complex64))
    assert z.dtype == np.complex64
    assert abs(z.real.var() - 0.5) < 0.05 and abs(z.imag.var() - 0.5) < 0.05


def test_bounds_and_integer_ranges():
    u = np.asarray(random.uniform(KEY, (3, 400), minval=np.float32([[0], [5], [-2]]),
                                  maxval=np.float32([[1], [6], [-1]])))
    assert np.all((u >= [[0], [5], [-2]]) & (u < [[1], [6], [-1]]))
    full = np.asarray(random.randint(KEY, (3000,), 0, 256, np.uint8))
    assert full.dtype == np.uint8 and full.min() == 0 and full.max() == 255
    clipped = np.asarray(random.randint(KEY, (3000,), -300, 300, np.int8))
    assert clipped.min() == -128 and clipped.max() == 127
    assert np.all(np.asarray(random.randint(KEY, (10,), 5, 5)) == 5)
    assert np.all(np.asarray(random.randint(KEY, (10,), 5, 2)) == 5)
    per_row = np.asarray(random.randint(KEY, (2, 500), np.int32([[0], [100]]), 103))
    assert per_row[0].min() >= 0 and per_row[1].min() >= 100 and per_row.max() < 103
    t = np.asarray(random.truncated_normal(KEY, -0.01, 0.01, (1000,)))
    assert np.all((t > -0.01) & (t < 0.01))
    assert np.asarray(random.geometric(KEY, 0.999, (100,))).min() >= 1


def spec(sampler):
    """The result's (shape, dtype), traced without compiling."""
    out = lc.eval_shape(sampler, KEY)
    return out.shape, np.dtype(out.dtype)


@pytest.mark.parametrize("sampler,shape,dtype", [
    (lambda k: random.bernoulli(k, 0.5, (3,)), (3,), np.bool_),
    (lambda k: random.bernoulli(k, np.float32([0.1, 0.9])), (2,), np.bool_),
    (lambda k: random.rademacher(k, (3,)), (3,), np.int32),
    (lambda k: random.randint(k, (2,), 0, 3, None), (2,), np.int32),
    (lambda k: random.normal(k, (2,), None), (2,), np.float32),
    (lambda k: random.lognormal(k), (), np.float32),
    (lambda k: random.lognormal(k, np.float32([1.0, 2.0])), (2,), np.float32),
    (lambda k: random.lognormal(k, 0.5, (3, 2), np.float16), (3, 2), np.float16),
    (lambda k: random.lognormal(k, 0.5, (2,), np.complex64), (2,), np.complex64),
    (lambda k: random.multinomial(k, 4.0, np.float32([0.5, 0.5])), (2,), np.float32),
    (lambda k: random.multinomial(k, np.int32([4, 5]), np.float32([0.5, 0.5]), shape=(2, 2),
                                  dtype=np.int32), (2, 2), np.int32),
    (lambda k: random.multinomial(k, 4, np.full((3, 1, 5), 0.2, np.float32), shape=(3, 2, 5)),
     (3, 2, 5), np.float32),
    (lambda k: random.rademacher(k, (3,), np.float32), (3,), np.float32),
    (lambda k: random.poisson(k, np.float32([1.0, 20.0])), (2,), np.int32),
    (lambda k: random.poisson(k, 2.0, (2, 3)), (2, 3), np.int32),
    (lambda k: random.binomial(k, 5.0, 0.5, (3,)), (3,), np.float32),
    (lambda k: random.randint(k, (3,), 0, 4), (3,), np.int32),
    (lambda k: random.geometric(k, 0.5, (3,)), (3,), np.int32),
    (lambda k: random.gamma(k, np.float32([1.0, 2.0]), (3, 2)), (3, 2), np.float32),
    (lambda k: random.gamma(k, 2.0, (3,), np.float16), (3,), np.float16),
    (lambda k: random.beta(k, np.float32([1.0, 2.0]), 1.0), (2,), np.float32),
    (lambda k: random.categorical(k, np.zeros((2, 5), np.float32)), (2,), np.int32),
    (lambda k: random.categorical(k, np.zeros((5, 2), np.float32), axis=0), (2,), np.int32),
    (lambda k: random.categorical(k, np.zeros((2, 5), np.float32), shape=(7, 2)), (7, 2),
     np.int32),
    (lambda k: random.dirichlet(k, np.ones((2, 4), np.float32)), (2, 4), np.float32),
    (lambda k: random.ball(k, 4, p=1.0, shape=(2,)), (2, 4), np.float32),
    (lambda k: random.t(k, np.float32([[1.0], [2.0]]), (2, 3)), (2, 3), np.float32),
    (lambda k: random.orthogonal(k, 2, (3,), m=4), (3, 2, 4), np.float32),
    (lambda k: random.choice(k, np.zeros((2, 6), np.float32), (4,), axis=1), (2, 4),
     np.float32),
])
def test_result_shapes_and_dtypes(sampler, shape, dtype):
    assert spec(sampler) == (shape, np.dtype(dtype))


def test_orthogonal_and_binomial_special_values():
    q = np.asarray(random.orthogonal(KEY, 2, (3,), m=4))
    assert q.shape == (3, 2, 4)
    np.testing.assert_allclose(q @ q.transpose(0, 2, 1), np.broadcast_to(np.eye(2), (3, 2, 2)),
                               atol=1e-5)
    unitary = np.asarray(random.orthogonal(KEY, 3, dtype=np.complex64))
    np.testing.assert_allclose(unitary @ unitary.conj().T, np.eye(3), atol=1e-5)
    special_n = draw(lambda k: random.binomial(k, np.float32([np.nan, -1.0, np.inf]), 0.5))
    assert np.isnan(special_n[0]) and np.isnan(special_n[1]) and special_n[2] == np.inf


def test_permutations_and_choices():
    perm = np.asarray(random.permutation(KEY, 20))
    assert sorted(perm.tolist()) == list(range(20)) and perm.tolist() != list(range(20))
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    rows = np.asarray(random.permutation(KEY, x, axis=1))
    # Whole columns move together: every row holds the same permutation of its entries.
    assert rows.shape == (3, 4) and np.all(rows - x[:, :1] == rows[0] - x[0, 0])
    independent = np.asarray(random.permutation(KEY, np.tile(np.arange(50, dtype=np.int32),
                                                             (2, 1)), 1, independent=True))
    assert all(sorted(r) == list(range(50)) for r in independent.tolist())
    assert independent[0].tolist() != independent[1].tolist()
    picks = np.asarray(random.choice(KEY, 10, (6,), replace=False))
    assert len(set(picks.tolist())) == 6
    weighted = np.asarray(random.choice(KEY, 10, (6,), replace=False,
                                        p=np.full(10, 0.1, np.float32)))
    assert len(set(weighted.tolist())) == 6
    cols = np.asarray(random.choice(KEY, x, (2, 5), axis=1))
    assert cols.shape == (3, 2, 5) and np.all(np.isin(cols[0], x[0]))
    assert np.array_equal(cols[1] - cols[0], np.full((2, 5), 4))
    assert random.choice(KEY, 5, (0,)).shape == (0,)
    distinct = np.asarray(random.categorical(KEY, np.zeros(6, np.float32), shape=(6,),
                                             replace=False))
    assert sorted(distinct.tolist()) == list(range(6))
    # Each position of a permutation is uniform over the values.
    firsts = np.asarray(lc.vmap(lambda k: random.permutation(k, 5))(random.split(KEY, 5000)))[:, 0]
    assert chisquare_pvalue(firsts, np.arange(5), np.full(5, 0.2)) > P_MIN


@pytest.mark.parametrize("name,sampler", [
    ("uniform", lambda k: random.uniform(k, (3,))),
    ("normal", lambda k: random.normal(k, (2, 2))),
    ("lognormal", lambda k: random.lognormal(k, np.float32([0.5, 2.0]))),
    ("multinomial", lambda k: random.multinomial(k, np.float32([7.0, 60.0]),
                                                 np.float32([[0.3, 0.0, 0.2, 0.5]]),
                                                 shape=(2, 4))),
    ("randint", lambda k: random.randint(k, (4,), 0, 100)),
    ("gamma", lambda k: random.gamma(k, np.float32([0.5, 3.0]))),
    ("poisson", lambda k: random.poisson(k, np.float32([2.0, 40.0]))),
    ("choice", lambda k: random.choice(k, 7, (3,), replace=False)),
])
def test_jit_eager_vmap_agree(name, sampler):
    keys = random.split(KEY, 3)
    eager = np.stack([np.asarray(sampler(k)) for k in keys])
    jitted = np.stack([np.asarray(lc.jit(sampler)(k)) for k in keys])
    batched = np.asarray(lc.jit(lc.vmap(sampler))(keys))
    np.testing.assert_allclose(jitted, eager, rtol=1e-6)
    if name == "gamma":
        # The batched rejection loop fuses its arithmetic differently: last-bit differences.
        np.testing.assert_allclose(batched, jitted, rtol=1e-6)
    else:
        assert np.array_equal(batched, jitted)


def test_errors():
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        random.uniform(KEY, (3,), minval=np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=r"\(4,\).*\(2, 3\)"):
        random.gamma(KEY, np.ones(4, np.float32), (2, 3))
    with pytest.raises(ValueError, match="float or complex dtype.*int32"):
        random.normal(KEY, (2,), np.int32)
    with pytest.raises(ValueError, match="float dtype"):
        random.uniform(KEY, (2,), np.uint8)
    with pytest.raises(TypeError, match="integer dtype.*float32"):
        random.randint(KEY, (2,), 0, 3, np.float32)
    with pytest.raises(TypeError, match="floating dtype"):
        random.bernoulli(KEY, np.int32(1))
    with pytest.raises(ValueError, match=r"cov.shape.*\(3, 3\)"):
        random.multivariate_normal(KEY, np.zeros(2, np.float32), np.eye(3, dtype=np.float32))
    with pytest.raises(ValueError, match="method"):
        random.multivariate_normal(KEY, np.zeros(2), np.eye(2), method="qr")
    with pytest.raises(ValueError, match="larger sample"):
        random.choice(KEY, 3, (4,), replace=False)
    with pytest.raises(ValueError, match=r"p must.*\(3,\)"):
        random.choice(KEY, 3, (2,), p=np.ones(4, np.float32) / 4)
    with pytest.raises(ValueError, match="cannot exceed"):
        random.categorical(KEY, np.zeros(3, np.float32), shape=(4,), replace=False)
    with pytest.raises(ValueError, match="alpha.ndim"):
        random.dirichlet(KEY, 1.0)
    with pytest.raises(TypeError, match="PRNG key"):
        random.gamma(np.float32([1.0, 2.0]), 1.0)
    with pytest.raises(lc.ConcretizationTypeError):
        lc.jit(lambda n: random.orthogonal(KEY, n))(3)
    with pytest.raises(ValueError, match=r"\(3,\).*\(2,\)"):
        random.lognormal(KEY, np.ones(3, np.float32), (2,))
    with pytest.raises(ValueError, match="float or complex dtype.*int32"):
        random.lognormal(KEY, 1.0, (2,), np.int32)
    with pytest.raises(ValueError, match="cannot safely cast sigma.*complex64"):
        random.lognormal(KEY, np.complex64(1.0), (2,))
    p3 = np.full(3, 1 / 3, np.float32)
    with pytest.raises(ValueError, match="last axis of categories"):
        random.multinomial(KEY, 5.0, np.float32(1.0))
    with pytest.raises(ValueError, match=r"p of shape \(3,\) does not broadcast to \(2, 4\)"):
        random.multinomial(KEY, 5.0, p3, shape=(2, 4))
    with pytest.raises(ValueError, match=r"n of shape \(3,\) does not broadcast to \(2,\)"):
        random.multinomial(KEY, np.ones(3, np.float32), p3, shape=(2, 3))
    with pytest.raises(TypeError, match="PRNG key"):
        random.multinomial(np.float32([1.0, 2.0]), 5.0, p3)
