"""beta, betaln, betainc (with its derivatives in a, b and x), gammainc and
gammaincc against SciPy in float32 and float64, edge values, derivatives against
central differences, vmap against loops, jit against eager."""

import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as stats
from hypothesis import given, settings
from special_accuracy import assert_ulps, assert_vmap_matches_loop, floats

import lamella.core as lc
from lamella.lax.test_util import check, check_derivatives
from lamella.scipy import special

DTYPES = [np.float32, np.float64]


def _log_uniform(data, low, high):
    return low * (high / low) ** data


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None)
@given(u=floats(0, 1, np.float64), v=floats(0, 1, np.float64), w=floats(0, 1, np.float64))
def test_values(dtype, u, v, w):
    a, b = (_log_uniform(t, 0.05, 50.0).astype(dtype) for t in (u, v))
    # (no float32 subnormals: XLA flushes them to zero, as JAX does)
    x = np.where(w < np.finfo(dtype).tiny, 0.0, w).astype(dtype)
    wide = [t.astype(np.float64) for t in (a, b, x)]
    with lc.enable_x64(dtype == np.float64):
        # Past Gamma's overflow B is exp(betaln): ~|betaln| ulps.
        log_beta = sp.betaln(*wide[:2])
        assert_ulps(special.beta(a, b), sp.beta(*wide[:2]), dtype,
                    48 + 4 * np.abs(log_beta).max())
        # betaln is near 0 where B is near 1: there its error is absolute.
        assert_ulps(special.betaln(a, b), log_beta, dtype, 16, 64)
        # The continued fraction loses ~(a + b) ulps, and what it loses is magnified by
        # the condition number x I'(x) / I (6.5 at a = 3.6, b = 0.05, x = 0.84, where
        # float64 is 114 ulps off; 7.3 at a = 3.75, b = 0.05, x = 0.875, where float32 is
        # 128 ulps off and JAX's 113).
        got, want = np.asarray(special.betainc(a, b, x)), sp.betainc(*wide)
        x_wide = wide[2]
        with np.errstate(divide="ignore", invalid="ignore"):
            # (exp(logpdf): Boost's pdf raises OverflowError at x = 2e-308, a = b = 50)
            density = np.exp(stats.beta.logpdf(x_wide, *wide[:2]))
            condition = np.where(want > 0, x_wide * density / want, 0)
            condition = np.nan_to_num(condition, posinf=0)  # I underflowing to 0 is exact
        tol = (64 + 16 * (wide[0] + wide[1])) * (1 + condition) * np.finfo(dtype).eps
        assert np.all(np.abs(got - want) <= tol * np.abs(want) + 1e-30), (got, want)
        assert_ulps(special.gammainc(a, x * 60), sp.gammainc(wide[0], wide[2] * 60), dtype,
                    64, 64)
        assert_ulps(special.gammaincc(a, x * 60), sp.gammaincc(wide[0], wide[2] * 60), dtype,
                    64, 64)


def test_large_parameters():
    """Where the direct log(x^a (1-x)^b / B(a, b)) loses ~(a + b) ulps."""
    with lc.enable_x64():
        a = np.array([300.0, 1e4, 2e3, 50.0])
        b = np.array([400.0, 1.2e4, 30.0, 5e3])
        x = np.array([0.4, 0.45, 0.98, 0.01])
        assert_ulps(special.betainc(a, b, x), sp.betainc(a, b, x), np.float64, 1e3)
        # SciPy's own betaln subtracts lgammas here (mpmath agrees with ours to 2 ulps).
        assert_ulps(special.betaln(a, b), sp.betaln(a, b), np.float64, 64)


@pytest.mark.parametrize("dtype", DTYPES)
def test_edge_values(dtype):
    inf, nan = np.inf, np.nan
    a = np.array([0, 1, 0, inf, 1, 2, 1, 1, -1, 1, 2, 2], dtype)
    b = np.array([1, 0, 0, 1, inf, 2, 1, 1, 1, -1, 2, 2], dtype)
    x = np.array([.5, .5, .5, .5, .5, 0, 1, nan, .5, .5, -0.1, 1.1], dtype)
    with lc.enable_x64(dtype == np.float64):
        assert_ulps(special.betainc(a, b, x), sp.betainc(*[v.astype(np.float64) for v in
                                                           (a, b, x)]), dtype, 4)
        p, q = np.array([0, 0, 1, inf, 1, inf, -1, 1], dtype), np.array([0, 1, 0, 1, inf, inf,
                                                                          1, -1], dtype)
        wide = p.astype(np.float64), q.astype(np.float64)
        assert_ulps(special.gammainc(p, q), sp.gammainc(*wide), dtype, 4)
        assert_ulps(special.gammaincc(p, q), sp.gammaincc(*wide), dtype, 4)
        p, q = np.array([0, 1e-30, -0.5], dtype), np.array([1, 1e-30, 1.5], dtype)
        assert_ulps(special.beta(p, q), sp.beta(p.astype(np.float64), q.astype(np.float64)),
                    dtype, 8)


def test_betainc_derivatives_in_all_arguments():
    """JAX has the x-derivative only; here a and b too, to float64 accuracy."""
    a = np.array([0.7, 2.0, 30.0, 5.0], np.float32)
    b = np.array([1.5, 3.0, 20.0, 0.4], np.float32)
    x = np.array([0.2, 0.4, 0.65, 0.9], np.float32)
    check(special.betainc, [a, b, x], sp.betainc, diff_argnums=(0, 1, 2), rtol=1e-4,
          atol=1e-6, grad_rtol=1e-6, grad_atol=1e-8, jit_rtol=1e-5, vmap=False)
    assert_vmap_matches_loop(special.betainc, [a, b, x])


def test_beta_betaln_derivatives():
    a = np.array([0.7, 2.0, 30.0], np.float32)
    b = np.array([1.5, 9.0, 0.4], np.float32)
    check(special.beta, [a, b], sp.beta, diff_argnums=(0, 1), rtol=1e-5, grad_rtol=1e-6,
          jit_rtol=1e-6, vmap=False)
    assert_vmap_matches_loop(special.beta, [a, b])
    check(special.betaln, [a, b], sp.betaln, diff_argnums=(0, 1), rtol=1e-5, grad_rtol=1e-6,
          jit_rtol=1e-6, vmap=False)


def test_gammainc_derivatives_in_both_arguments():
    a = np.array([0.5, 2.0, 9.0], np.float32)
    x = np.array([0.3, 3.0, 7.0], np.float32)
    for name in ("gammainc", "gammaincc"):
        check_derivatives(getattr(special, name), [a, x], diff_argnums=(0, 1), rtol=1e-6,
                          atol=1e-8)
    check(special.gammaincc, [a, x], sp.gammaincc, diff_argnums=None, rtol=1e-5, vmap=False)
    assert_vmap_matches_loop(special.gammainc, [a, x])


def test_dtypes():
    assert special.betainc(2, 3, 0.5).dtype == np.float32
    assert special.beta(np.float16(2), np.float16(3)).dtype == np.float16
    assert special.gammainc(np.int32(2), np.int32(3)).dtype == np.float32
    with pytest.raises(TypeError, match="real arguments"):
        special.betainc(1.0, 1.0, np.complex64(0.5))
