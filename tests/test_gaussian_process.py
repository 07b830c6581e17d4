"""A real program on lamella.scipy.linalg: the log marginal likelihood of a
Gaussian process with a squared-exponential kernel, through cho_factor and
cho_solve, differentiated with respect to the kernel's length scale (and fitted
by gradient ascent on it). The likelihood is checked against the same formula
in NumPy/SciPy, the gradient against a float64 central difference."""

import numpy as np
import scipy.linalg as sl

import lamella.core as lc
import lamella.numpy as lnp
from lamella.scipy.linalg import cho_factor, cho_solve

N, NOISE = 30, 0.1


def data(seed=0):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-3, 3, N))
    y = np.sin(2 * x) + NOISE * rng.standard_normal(N)
    return x, y


def kernel(x1, x2, length_scale, amplitude=1.0):
    d2 = (x1[:, None] - x2[None, :]) ** 2
    return amplitude ** 2 * lnp.exp(-0.5 * d2 / length_scale ** 2)


def log_marginal_likelihood(log_length_scale, x, y):
    """log p(y | x) = -y^T K^-1 y / 2 - log|K| / 2 - n log(2 pi) / 2, K = k(x, x) + s^2 I."""
    k = kernel(x, x, lnp.exp(log_length_scale)) + NOISE ** 2 * lnp.eye(x.shape[0])
    c, lower = cho_factor(k, lower=True)
    alpha = cho_solve((c, lower), y)
    log_det = 2 * lnp.sum(lnp.log(lnp.diagonal(c)))
    return -0.5 * y @ alpha - 0.5 * log_det - 0.5 * x.shape[0] * lnp.log(2 * lnp.pi)


def reference_likelihood(log_length_scale, x, y):
    k = np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / np.exp(log_length_scale) ** 2)
    k = k + NOISE ** 2 * np.eye(len(x))
    factor = sl.cho_factor(k, lower=True)
    return (-0.5 * y @ sl.cho_solve(factor, y) - np.sum(np.log(np.diag(factor[0])))
            - 0.5 * len(x) * np.log(2 * np.pi))


def test_likelihood_matches_scipy_in_float32_and_float64():
    x, y = data()
    for log_ell in (-1.0, 0.0, 0.7):
        want = reference_likelihood(log_ell, x, y)
        got32 = lc.jit(log_marginal_likelihood)(np.float32(log_ell), x.astype(np.float32),
                                                y.astype(np.float32))
        assert got32.dtype == np.float32
        np.testing.assert_allclose(float(got32), want, rtol=1e-4)
        with lc.enable_x64():
            got64 = lc.jit(log_marginal_likelihood)(log_ell, x, y)
            np.testing.assert_allclose(float(got64), want, rtol=1e-11)


def test_length_scale_gradient_matches_a_float64_central_difference():
    x, y = data()
    with lc.enable_x64():
        grad = lc.jit(lc.grad(log_marginal_likelihood))
        for log_ell in (-1.0, 0.0, 0.7):
            h = 1e-5
            numeric = (reference_likelihood(log_ell + h, x, y)
                       - reference_likelihood(log_ell - h, x, y)) / (2 * h)
            np.testing.assert_allclose(float(grad(log_ell, x, y)), numeric, rtol=1e-6)


def test_gradient_ascent_fits_the_length_scale():
    x, y = data()
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    step = lc.jit(lc.value_and_grad(log_marginal_likelihood))
    log_ell, history = np.float32(1.5), []
    for _ in range(60):
        value, g = step(log_ell, x32, y32)
        history.append(float(value))
        log_ell = np.float32(log_ell + 0.02 * float(g))
    # The likelihood rises to its maximum, where the gradient vanishes.
    assert history[-1] > history[0] + 5
    grid = np.linspace(-2.0, 1.5, 351)
    best = grid[np.argmax([reference_likelihood(g, x, y) for g in grid])]
    assert abs(float(log_ell) - best) < 0.02
