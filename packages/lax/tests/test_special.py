"""lamella.lax.special against SciPy: values over dtypes and wide argument ranges,
edge cases, derivatives (including d/da of the incomplete gamma functions),
vmap against loops and jit against eager.

The incomplete gamma functions compile a while loop each (about a second), so
their full checks are few and share shapes.
"""

import ml_dtypes
import numpy as np
import pytest
import scipy.special as sps

import lamella.core as lc
from lamella.lax import special
from lamella.lax.test_util import check, check_derivatives, check_jit_matches_eager, check_vmap

F16, BF16 = np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)
X = np.array([[-3.0, -0.5, 0.2], [0.7, 1.5, 9.0]])
POS = np.array([[0.3, 1.2, 2.5], [0.7, 4.5, 11.0]])
# (a, x) pairs on both sides of x = a, where the series and the continued fraction apply.
A = np.array([[0.5, 2.0, 7.0], [1.5, 30.0, 0.3]])
AX = np.array([[0.3, 3.0, 6.0], [4.0, 25.0, 0.9]])

UNARY = [
    # name, reference, arguments, float32 tolerance
    ("erf", sps.erf, X, {}),
    ("erfc", sps.erfc, X, {"rtol": 1e-5}),
    ("erf_inv", sps.erfinv, X / 10, {}),
    ("lgamma", sps.gammaln, POS, {"rtol": 1e-5}),
    ("digamma", sps.digamma, POS, {"rtol": 1e-5}),
    ("bessel_i0e", sps.i0e, X, {}),
    ("bessel_i1e", sps.i1e, X, {}),
]
NAMES = [u[0] for u in UNARY]


@pytest.mark.parametrize("name, reference, x, tolerance", UNARY, ids=NAMES)
def test_unary_float32_full_check(name, reference, x, tolerance):
    check(getattr(special, name), [x.astype(np.float32)], reference, **tolerance)


@pytest.mark.parametrize("name, reference, x, tolerance", UNARY, ids=NAMES)
def test_unary_float64(name, reference, x, tolerance):
    with lc.enable_x64():
        out = getattr(special, name)(x)
        assert np.asarray(out).dtype == np.float64
        np.testing.assert_allclose(out, reference(x), rtol=1e-13, atol=1e-15)
        check_jit_matches_eager(getattr(special, name), [x])


@pytest.mark.parametrize("dtype", [F16, BF16], ids=str)
@pytest.mark.parametrize("name, reference, x, tolerance", UNARY, ids=NAMES)
def test_unary_16_bit(name, reference, x, tolerance, dtype):
    xs = x.astype(dtype)
    out = getattr(special, name)(xs)
    assert np.asarray(out).dtype == dtype
    np.testing.assert_allclose(np.asarray(out).astype(np.float64),
                               reference(xs.astype(np.float64)), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("name, reference, low, high", [
    ("erf", sps.erf, -6, 6), ("erfc", sps.erfc, -4, 9), ("erf_inv", sps.erfinv, -0.999, 0.999),
    ("bessel_i0e", sps.i0e, -60, 60), ("bessel_i1e", sps.i1e, -60, 60),
])
def test_unary_accuracy_over_wide_ranges(name, reference, low, high):
    x = np.random.default_rng(0).uniform(low, high, 4000)
    fun = getattr(special, name)
    np.testing.assert_allclose(fun(x.astype(np.float32)), reference(x.astype(np.float32)),
                               rtol=5e-6, atol=1e-30)
    with lc.enable_x64():
        np.testing.assert_allclose(fun(x), reference(x), rtol=5e-15, atol=1e-300)


def test_gamma_family_accuracy_over_wide_ranges():
    # lgamma and digamma are relatively inaccurate only near their zeros (XLA's
    # approximations): compare with an absolute floor there.
    rng = np.random.default_rng(1)
    x = np.concatenate([np.exp(rng.uniform(-6, 6, 2000)), rng.uniform(-9.9, -0.1, 2000)])
    with lc.enable_x64():
        np.testing.assert_allclose(special.lgamma(x), sps.gammaln(x), rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(special.digamma(x), sps.digamma(x), rtol=1e-11,
                                   atol=1e-13)
    x32 = x.astype(np.float32)
    np.testing.assert_allclose(special.lgamma(x32), sps.gammaln(x32), rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(special.digamma(x32), sps.digamma(x32), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("m", [1, 2, 4])
def test_polygamma(m):
    ms = np.full_like(POS, m)
    check(special.polygamma, [ms.astype(np.float32), POS.astype(np.float32)],
          lambda m, x: sps.polygamma(m.astype(int), x), diff_argnums=(1,), rtol=2e-6)
    with lc.enable_x64():
        np.testing.assert_allclose(special.polygamma(ms, POS), sps.polygamma(m, POS),
                                   rtol=1e-14)


def test_polygamma_zero_is_digamma_and_rejects_m_derivatives():
    np.testing.assert_allclose(special.polygamma(np.float32(0), POS.astype(np.float32)),
                               sps.digamma(POS.astype(np.float32)), rtol=1e-5)
    with pytest.raises(NotImplementedError, match="polygamma is not differentiable"):
        lc.grad(special.polygamma)(np.float32(1), np.float32(2))


@pytest.mark.parametrize("s", [1.5, 2.0, 4.0])
def test_zeta(s):
    ss = np.full_like(POS, s)
    check(special.zeta, [ss.astype(np.float32), POS.astype(np.float32)], sps.zeta,
          diff_argnums=(1,))
    with lc.enable_x64():
        np.testing.assert_allclose(special.zeta(ss, POS), sps.zeta(ss, POS), rtol=1e-14)
    with pytest.raises(NotImplementedError, match="zeta is not differentiable"):
        lc.grad(special.zeta)(np.float32(s), np.float32(2))


def test_broadcasting_and_weak_scalars():
    x = POS.astype(np.float32)
    np.testing.assert_allclose(special.zeta(2.0, x), sps.zeta(2.0, x), rtol=2e-6)
    np.testing.assert_allclose(special.igamma(2.0, x), sps.gammainc(2.0, x), rtol=2e-6)
    np.testing.assert_allclose(special.polygamma(1.0, x), sps.polygamma(1, x), rtol=2e-6)
    assert lc.make_jaxpr(lambda: special.erf(0.5))().out_avals[0].weak_type


@pytest.mark.parametrize("name", ["erf", "lgamma", "bessel_i0e", "igamma", "zeta"])
def test_integer_arguments_are_rejected(name):
    fun = getattr(special, name)
    args = [np.array([1], np.int32)] * (2 if name in ("igamma", "zeta") else 1)
    with pytest.raises(TypeError, match=f"{name} does not accept dtype int32"):
        fun(*args)


def test_mismatched_dtypes_are_rejected():
    with pytest.raises(TypeError, match="igamma requires arguments to have the same dtypes"):
        special.igamma(np.float32(1), np.float16(1))


# ---------------------------------------------------------------------------
# Bessel function derivatives.


def test_bessel_derivatives_at_zero():
    # i0e' = i1e - sign(x) i0e is 0 at 0; i1e' -> 1/2 as x -> 0 (i1e(x)/x -> 1/2).
    assert float(lc.grad(special.bessel_i0e)(np.float32(0))) == 0
    assert float(lc.grad(special.bessel_i1e)(np.float32(0))) == 0.5
    with lc.enable_x64():
        h = 1e-7
        slope = (sps.i1e(h) - sps.i1e(-h)) / (2 * h)
        np.testing.assert_allclose(lc.grad(special.bessel_i1e)(np.float64(0)), slope, rtol=1e-6)
    check_derivatives(special.bessel_i1e, [np.array([1e-3, -1e-3, 30.0, -30.0])])


# ---------------------------------------------------------------------------
# The incomplete gamma functions.


def test_igamma_full_check():
    check(special.igamma, [A.astype(np.float32), AX.astype(np.float32)], sps.gammainc,
          diff_argnums=(0, 1))


def test_igammac_full_check():
    check(special.igammac, [A.astype(np.float32), AX.astype(np.float32)], sps.gammaincc,
          diff_argnums=(0, 1))


def test_igamma_grad_a_against_finite_differences():
    h = 1e-6
    expected = (sps.gammainc(A + h, AX) - sps.gammainc(A - h, AX)) / (2 * h)
    with lc.enable_x64():
        np.testing.assert_allclose(special.igamma_grad_a(A, AX), expected, rtol=1e-8)
    np.testing.assert_allclose(special.igamma_grad_a(A.astype(np.float32),
                                                     AX.astype(np.float32)),
                               expected, rtol=2e-5)
    # Its derivative in x is closed-form; in a it is not offered.
    check(special.igamma_grad_a, [A.astype(np.float32), AX.astype(np.float32)],
          diff_argnums=(1,), vmap=False)
    with pytest.raises(NotImplementedError, match="igamma_grad_a is not differentiable"):
        lc.grad(lambda a: special.igamma_grad_a(a, np.float32(2)))(np.float32(1))


def test_random_gamma_grad_is_the_implicit_derivative():
    # x(a) with P(a, x(a)) = u fixed: dx/da = -(dP/da) / (dP/dx).
    with lc.enable_x64():
        out = special.random_gamma_grad(A, AX)
        density = np.exp((A - 1) * np.log(AX) - AX - sps.gammaln(A))
        np.testing.assert_allclose(out, -np.asarray(special.igamma_grad_a(A, AX)) / density,
                                   rtol=1e-12)
        # Against SciPy's inverse: x(a) = gammaincinv(a, u).
        u = sps.gammainc(A, AX)
        h = 1e-6
        slope = (sps.gammaincinv(A + h, u) - sps.gammaincinv(A - h, u)) / (2 * h)
        np.testing.assert_allclose(out, slope, rtol=1e-6)
        # Far tails where the density underflows still give finite answers.
        tail = special.random_gamma_grad(np.array([0.01, 1e3]), np.array([1e-300, 1.2e3]))
        assert np.all(np.isfinite(tail))
    check_vmap(special.random_gamma_grad, [A.astype(np.float32), AX.astype(np.float32)])


def test_igamma_second_derivative_in_x():
    # d2P/dx2 = density * ((a - 1)/x - 1), through igamma's x-JVP twice.
    a, x = np.float64(2.5), np.float64(1.7)
    with lc.enable_x64():
        second = lc.grad(lc.grad(special.igamma, argnums=1), argnums=1)(a, x)
        density = np.exp((a - 1) * np.log(x) - x - sps.gammaln(a))
        np.testing.assert_allclose(second, density * ((a - 1) / x - 1), rtol=1e-12)
        mixed = lc.grad(lc.grad(special.igamma, argnums=0), argnums=1)(a, x)
        np.testing.assert_allclose(mixed, density * (np.log(x) - sps.digamma(a)), rtol=1e-12)


EDGES_A = np.array([0, 0, 1, 1, np.inf, np.inf, -1, 1, np.nan, 1, 2, 0.5, np.nan, 3, 1e-30])
EDGES_X = np.array([0, 1, 0, np.inf, 1, np.inf, 1, -1, 1, np.nan, np.inf, 0, 0, 1e-30, 1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_igamma_edge_cases_match_scipy(dtype):
    a, x = EDGES_A.astype(dtype), EDGES_X.astype(dtype)
    with lc.enable_x64(dtype == np.float64):
        for fun, reference in ((special.igamma, sps.gammainc),
                               (special.igammac, sps.gammaincc)):
            np.testing.assert_allclose(fun(a, x), reference(a, x), rtol=1e-6, atol=0)
        grad_a = np.asarray(special.igamma_grad_a(a, x))
    # P is flat in a at x = 0 and x = inf, and for a = inf; undefined points are NaN.
    np.testing.assert_array_equal(grad_a[[2, 3, 4, 10, 11]], 0)
    assert np.all(np.isnan(grad_a[[0, 5, 6, 7, 8, 9, 12]]))


def relative_error_scale(values, dtype):
    """What an accurate implementation can promise: a few ulps of the value, times the
    size of its logarithm, since x^a e^-x is evaluated through its exponent."""
    eps = np.finfo(dtype).eps
    return eps * np.maximum(1, np.abs(np.log(np.abs(values))))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_igamma_accuracy_over_wide_ranges(dtype):
    rng = np.random.default_rng(2)
    a = np.exp(rng.uniform(np.log(1e-3), np.log(200), 2000))
    x = np.concatenate([a[:1000] * np.exp(rng.uniform(-2, 2, 1000)),
                        np.exp(rng.uniform(np.log(1e-4), np.log(300), 1000))])
    a, x = a.astype(dtype), x.astype(dtype)
    wide_a, wide_x = a.astype(np.float64), x.astype(np.float64)
    with lc.enable_x64(dtype == np.float64):
        for fun, reference in ((special.igamma, sps.gammainc),
                               (special.igammac, sps.gammaincc)):
            expected = reference(wide_a, wide_x)
            keep = expected > 1e3 * np.finfo(dtype).tiny  # not underflowing
            error = np.abs(np.asarray(fun(a, x), np.float64) - expected)[keep] / expected[keep]
            assert np.all(error < 50 * relative_error_scale(expected[keep], dtype)), \
                (fun.__name__, error.max())
            assert np.median(error) < 4 * np.finfo(dtype).eps


def test_igammac_is_accurate_where_igamma_is_near_one():
    # For small a and x <= 1, Q = 1 - P is O(a): it is not computed as 1 - P.
    a = np.array([1e-3, 1e-2, 0.1, 0.5, 0.9])
    x = np.array([0.8, 0.05, 1.0, 0.3, 1e-3])
    np.testing.assert_allclose(special.igammac(a.astype(np.float32), x.astype(np.float32)),
                               sps.gammaincc(a.astype(np.float32), x.astype(np.float32)),
                               rtol=2e-6)
    with lc.enable_x64():
        np.testing.assert_allclose(special.igammac(a, x), sps.gammaincc(a, x), rtol=1e-14)


def test_igamma_large_a():
    # Near x = a both expansions need ~sqrt(a) steps, and the prefactor is evaluated
    # through Stirling's series so that a log(x) - x - lgamma(a) does not cancel.
    a = np.repeat([1e3, 1e4, 1e5], 5)
    x = a + np.sqrt(a) * np.tile([-3.0, -0.5, 0.0, 0.5, 3.0], 3)
    with lc.enable_x64():
        np.testing.assert_allclose(special.igamma(a, x), sps.gammainc(a, x), rtol=1e-13)
        np.testing.assert_allclose(special.igammac(a, x), sps.gammaincc(a, x), rtol=1e-13)
    np.testing.assert_allclose(special.igamma(a.astype(np.float32), x.astype(np.float32)),
                               sps.gammainc(a.astype(np.float32), x.astype(np.float32)),
                               rtol=2e-5)


@pytest.mark.parametrize("dtype", [F16, BF16], ids=str)
def test_igamma_16_bit(dtype):
    a, x = A.astype(dtype), AX.astype(dtype)
    out = special.igamma(a, x)
    assert np.asarray(out).dtype == dtype
    np.testing.assert_allclose(np.asarray(out).astype(np.float64),
                               sps.gammainc(a.astype(np.float64), x.astype(np.float64)),
                               rtol=1e-2, atol=1e-3)


def test_igamma_jit_composes():
    # A loop inside a larger jitted, vmapped, differentiated program.
    def f(a, x):
        return special.igammac(a, lc.jit(special.erfc)(x))
    a, x = A.astype(np.float32), (AX / 30).astype(np.float32)
    expected = sps.gammaincc(a, sps.erfc(x))
    np.testing.assert_allclose(lc.jit(lc.vmap(f))(a, x), expected, rtol=5e-6)
    check_derivatives(f, [A, AX / 30], diff_argnums=(0, 1))
