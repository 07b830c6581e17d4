"""The strong-Wolfe line search (lamella.scipy.optimize.line_search) on Moré and
Thuente's scalar test functions and on multi-dimensional problems: the step it returns
satisfies both Wolfe conditions, checked in NumPy float64 with central differences;
it runs under jit and vmap; uphill directions and unbounded functions fail with their
status. Searches are jitted once per function, with the problem's numbers traced."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
import lamella.numpy as jnp
from lamella.scipy.optimize.line_search import line_search

C1, C2 = 1e-4, 0.9


# Moré & Thuente's (1994) first three test functions, for lamella and NumPy, with
# their derivatives written out (for the checks).
def phi1(a, beta, xp):
    return -a / (a * a + beta)


def dphi1(a, beta):
    return (a * a - beta) / (a * a + beta) ** 2


def phi2(a, beta, xp):
    return (a + beta) ** 5 - 2 * (a + beta) ** 4


def dphi2(a, beta):
    return 5 * (a + beta) ** 4 - 8 * (a + beta) ** 3


WIGGLE = 39 * np.pi


def phi3(a, beta, xp):
    base = xp.where(a <= 1 - beta, 1 - a,
                    xp.where(a >= 1 + beta, a - 1, (a - 1) ** 2 / (2 * beta) + beta / 2))
    return base + 2 * (1 - beta) / WIGGLE * xp.sin(WIGGLE * a / 2)


def dphi3(a, beta):
    base = np.where(a <= 1 - beta, -1.0, np.where(a >= 1 + beta, 1.0, (a - 1) / beta))
    return base + (1 - beta) * np.cos(WIGGLE * a / 2)


SCALAR = {"phi1": (phi1, dphi1, 2.0), "phi2": (phi2, dphi2, 0.004),
          "phi3": (phi3, dphi3, 0.01)}
SEARCH_SCALAR = {name: lc.jit(lambda scale, beta, phi=phi: line_search(
    lambda x: phi(x[0], beta, jnp), jnp.zeros(1, scale.dtype), scale[None]))
    for name, (phi, _, _) in SCALAR.items()}


def central_difference(f, x, p):
    def slope(t, h=1e-7):
        return (f(x + (t + h) * p) - f(x + (t - h) * p)) / (2 * h)

    return slope


def assert_strong_wolfe(f, slope, x, p, a):
    """Both Wolfe conditions at step a along p, in float64 NumPy."""
    f0, d0 = f(x), slope(0.0)
    assert d0 < 0
    assert f(x + a * p) <= f0 + C1 * a * d0 + 1e-12 * abs(f0), "sufficient decrease"
    assert abs(slope(a)) <= C2 * abs(d0) * (1 + 1e-6), "curvature"


@pytest.mark.parametrize("name", list(SCALAR))
@settings(max_examples=20, deadline=None)
@given(log_scale=st.floats(-3, 3))
def test_scalar_functions_satisfy_strong_wolfe(name, log_scale):
    # The first trial is a = 1, i.e. x = scale: Moré and Thuente start from 1e-3 to 1e3.
    phi, dphi, beta = SCALAR[name]
    scale = 10.0 ** log_scale
    with lc.enable_x64():
        res = SEARCH_SCALAR[name](np.float64(scale), np.float64(beta))
    assert not bool(res.failed) and int(res.status) == 0
    a = float(res.a_k)

    def f(x):
        return phi(x, beta, np)

    # Steps of 1e-3 scale slopes down 1000-fold: the derivative is exact, not differenced.
    assert_strong_wolfe(f, lambda t: scale * dphi(t * scale, beta), 0.0, scale, a)
    np.testing.assert_allclose(float(res.f_k), f(a * scale), rtol=1e-12, atol=1e-15)
    assert int(res.nfev) == int(res.ngev) == int(res.nit) + 1


def objective(x, weights):
    """A Rosenbrock valley, a linear tilt and a quadratic bowl, weighted."""
    valley = jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    return weights[0] * valley + weights[1] * jnp.sum(x) + weights[2] * jnp.sum(x * x)


def objective_np(x, weights):
    valley = np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    return weights[0] * valley + weights[1] * np.sum(x) + weights[2] * np.sum(x * x)


SEARCH = lc.jit(lambda x, p, weights: line_search(lambda y: objective(y, weights), x, p))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), log_scale=st.floats(-3, 2))
def test_multidimensional_steps_satisfy_strong_wolfe(seed, log_scale):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, 5)
    weights = np.array([1.0, rng.uniform(-1, 1), rng.uniform(0, 1)])
    gradient = lc.grad(objective)
    with lc.enable_x64():
        g = np.asarray(gradient(x, weights))
        # A descent direction: the negative gradient, rotated a little and scaled.
        p = -(g + 0.3 * np.abs(g).max() * rng.standard_normal(5) * (rng.random(5) < 0.5))
        if p @ g >= 0:
            p = -g
        p = p * 10.0 ** log_scale / np.linalg.norm(p)
        res = SEARCH(x, p, weights)
        assert not bool(res.failed), int(res.status)
        a = float(res.a_k)
        np.testing.assert_allclose(res.g_k, gradient(x + a * p, weights), rtol=1e-10)
    f = lambda y: objective_np(y, weights)
    assert_strong_wolfe(f, central_difference(f, x, p), x, p, a)


def test_vmap_over_directions_matches_loop():
    weights = np.array([1.0, 0.0, 0.0])
    x = np.array([-1.2, 1.0, -1.2])
    directions = np.random.default_rng(1).standard_normal((4, 3))
    directions *= -np.sign(np.sum(directions * lc.grad(objective)(x, weights), axis=1))[:, None]
    batched = lc.vmap(SEARCH, in_axes=(None, 0, None))(x, directions, weights)
    for i, p in enumerate(directions):
        one = SEARCH(x, p, weights)
        np.testing.assert_allclose(batched.a_k[i], one.a_k, rtol=1e-6)
        assert int(batched.nfev[i]) == int(one.nfev) and not bool(batched.failed[i])


def test_uphill_and_unbounded_fail_with_their_status():
    x = np.array([0.5, -0.3, 0.2])
    bowl = np.array([0.0, 0.0, 1.0])
    tilt = np.array([0.0, 1.0, 0.0])  # f = sum(x) decreases without bound along -1
    with lc.enable_x64():  # float64: the zero-weighted valley term stays finite
        uphill = SEARCH(x, x, bowl)  # the gradient 2x points uphill
        unbounded = SEARCH(x, -np.ones(3), tilt)
    assert bool(uphill.failed) and int(uphill.status) == 2 and float(uphill.a_k) == 0.0
    assert int(uphill.nfev) == 1  # the value and gradient at x
    assert bool(unbounded.failed) and int(unbounded.status) == 3
    assert float(unbounded.a_k) > 1.0 and float(unbounded.f_k) < float(np.sum(x))


def test_known_values_and_bad_arguments():
    res = line_search(lambda x: jnp.sum((x - 3.0) ** 2), jnp.zeros(2), jnp.full(2, 10.0))
    # Overshoots to 10, then the cubic through both ends lands on the minimum 0.3.
    assert int(res.nfev) == 3 and float(res.f_k) == 0.0
    np.testing.assert_allclose(res.a_k, 0.3, rtol=1e-6)
    with pytest.raises(ValueError, match="0 < c1 < c2 < 1"):
        line_search(jnp.sum, jnp.zeros(2), jnp.ones(2), c1=0.5, c2=0.1)
    with pytest.raises(ValueError, match=r"pk has shape \(3,\) but xk has shape \(2,\)"):
        line_search(jnp.sum, jnp.zeros(2), jnp.ones(3))
