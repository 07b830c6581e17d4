"""gamma, gammaln, loggamma, gammasgn, digamma, polygamma and multigammaln against
SciPy in float32 and float64 (hypothesis inputs and edge values), derivatives
against central differences, vmap against loops, jit against eager, bad input."""

import numpy as np
import pytest
import scipy.special as sp
from hypothesis import given, settings
from special_accuracy import assert_ulps, assert_vmap_matches_loop, floats

import lamella.core as lc
from lamella.lax.test_util import check
from lamella.scipy import special

DTYPES = [np.float32, np.float64]
EDGES = [0.0, -0.0, -1.0, -2.0, -0.5, -1.5, 1e-30, 0.3725, 1.4616321, 2.0, 171.7, 40.0,
         np.inf, -np.inf, np.nan]

# (function, domain, ulps in float32, ulps in float64, absolute tolerance in eps)
POSITIVE = {
    "gamma": ((1e-3, 30.0), 12, 16, 0),
    "gammaln": ((1e-3, 1e4), 8, 8, 2),  # SciPy itself is ~1 eps off next to the zeros
    "loggamma": ((1e-3, 1e4), 8, 8, 2),
    "digamma": ((1e-3, 1e4), 8, 8, 2),
    "gammasgn": ((1e-3, 1e4), 0, 0, 0),
}
# For x < 0 both XLA's lgamma/digamma and SciPy cancel next to the zeros, so the
# comparison there is absolute.
NEGATIVE = {
    "gamma": ((-30.0, -1e-3), 40, 40, 0),
    "gammaln": ((-30.0, -1e-3), 1e3, 1e3, 1e3),
    "digamma": ((-30.0, -1e-3), 1e3, 1e3, 1e3),
    "gammasgn": ((-30.0, -1e-3), 0, 0, 0),
}


def _against_scipy(name, x, dtype, ulps, atol):
    want = getattr(sp, name)(x.astype(np.float64))
    if name in ("gammaln", "digamma", "gamma"):
        want = np.where(np.isin(x, np.arange(-40.0, 1.0)), getattr(sp, name)(x), want)
    assert_ulps(getattr(special, name)(x), want, dtype, ulps, atol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("table", [POSITIVE, NEGATIVE], ids=["positive", "negative"])
@settings(max_examples=25, deadline=None)
@given(data=floats(0, 1, np.float64))
def test_values(table, dtype, data):
    with lc.enable_x64(dtype == np.float64):
        for name, ((low, high), ulps32, ulps64, atol) in table.items():
            x = np.asarray(low * (high / low) ** data if low > 0 else
                           -(-high * (low / high) ** data), dtype)
            # Within 1e-6 of a pole the rounding of x decides the answer; SciPy's
            # reflection loses it there, so those points say nothing.
            x = np.where(np.abs(x - np.round(x)) < 1e-6 * np.abs(x), x + 0.25, x)
            _against_scipy(name, x, dtype, ulps32 if dtype == np.float32 else ulps64, atol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_edge_values(dtype):
    x = np.array(EDGES, dtype)
    with lc.enable_x64(dtype == np.float64):
        for name in ("gamma", "gammasgn", "loggamma", "digamma"):
            ulps = 1e3 if name == "digamma" else 16  # digamma(-0.5) sits near a zero
            assert_ulps(getattr(special, name)(x), getattr(sp, name)(x.astype(np.float64)),
                        dtype, ulps, 16)
        # gammaln(-inf): JAX's inf rather than SciPy's -inf.
        want = sp.gammaln(x.astype(np.float64))
        assert_ulps(special.gammaln(x), np.where(np.isinf(want), np.inf, want), dtype, 16, 16)


def test_gamma_is_better_than_exp_of_gammaln():
    """exp(gammaln(x)) is ~100 ulps off near the top of float64's range."""
    with lc.enable_x64():
        x = np.linspace(150.0, 171.6, 64)
        assert_ulps(special.gamma(x), sp.gamma(x), np.float64, 24)


@pytest.mark.parametrize("dtype", DTYPES)
def test_polygamma(dtype):
    n = np.arange(5)[:, None]
    x = np.array([0.1, 0.5, 1.0, 1.5, 3.0, 10.0, 100.0, -1.5, -0.25], dtype)
    with lc.enable_x64(dtype == np.float64):
        assert_ulps(special.polygamma(n, x), sp.polygamma(n, x.astype(np.float64)), dtype,
                    64, 64)
        assert np.isnan(special.polygamma(-1, dtype(2.0)))


def test_multigammaln():
    a = np.array([1.6, 2.5, 7.0, 30.0], np.float32)
    for d in (1, 2, 3):
        assert_ulps(special.multigammaln(a, d), [sp.multigammaln(v, d) for v in a.astype(
            np.float64)], np.float32, 8)
    assert np.isnan(special.multigammaln(np.float32(0.5), 3))  # SciPy raises for a <= 1


@pytest.mark.parametrize("name", ["gamma", "gammaln", "digamma"])
def test_derivatives_vmap_jit(name):
    x = np.array([-1.5, -0.5, 0.3, 1.2, 2.5, 7.0, 12.5], np.float32)
    check(getattr(special, name), [x], getattr(sp, name), rtol=1e-5, atol=1e-6,
          grad_rtol=1e-5, grad_atol=1e-6, jit_rtol=1e-6)


def test_polygamma_multigammaln_loggamma_derivatives():
    x = np.array([0.7, 2.5, 9.0], np.float32)
    n = np.array([0, 1, 3], np.int32)
    check(lambda x: special.polygamma(n, x), [x], lambda x: sp.polygamma(n, x), rtol=1e-5,
          grad_rtol=1e-5, jit_rtol=1e-6, vmap=False)
    assert_vmap_matches_loop(lambda x: special.polygamma(n, x), [x])
    check(lambda a: special.multigammaln(a, 3), [x + 1], None, grad_rtol=1e-5, jit_rtol=1e-6,
          vmap=False)
    check(special.loggamma, [x], sp.loggamma, grad_rtol=1e-5, jit_rtol=1e-6, vmap=False)
    assert lc.grad(special.gammasgn)(np.float32(-0.5)) == 0


def test_dtypes():
    assert special.gamma(3).dtype == np.float32
    assert special.gammaln(np.int32(3)).dtype == np.float32
    assert special.digamma(np.float16(3)).dtype == np.float16
    with lc.enable_x64():
        assert special.gamma(3.0).dtype == np.float64
    assert special.polygamma(1, 2).dtype == np.float32


def test_bad_input():
    with pytest.raises(ValueError, match="integer dtype"):
        special.polygamma(1.5, 2.0)
    with pytest.raises(TypeError, match="real arguments"):
        special.gamma(np.complex64(1 + 1j))
    with pytest.raises(TypeError, match="concrete Python integer"):
        special.multigammaln(2.5, 3.5)
    with pytest.raises(ValueError, match="at least 1"):
        special.multigammaln(2.5, 0)
