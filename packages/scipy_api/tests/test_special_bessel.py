"""i0, i0e, i1, i1e, bessel_jn and sph_harm_y against SciPy's float64 answers in
float32 and float64, derivatives against central differences, vmap against
loops, jit against eager, and bad input."""

import numpy as np
import pytest
import scipy.special as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from special_accuracy import SIZE, assert_ulps, floats

import lamella.core as lc
import lamella.numpy as lnp
from lamella.lax.test_util import check_derivatives, check_jit_matches_eager, check_vmap
from lamella.scipy import special

DTYPES = [np.float32, np.float64]


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None)
@given(data=floats(0, 1, np.float64))
def test_modified_bessel_against_scipy(dtype, data):
    f64 = dtype == np.float64
    with lc.enable_x64(f64):
        # Up to where I0 overflows (713 in float64, 91 in float32).
        x = ((2 * data - 1) * (700.0 if f64 else 90.0)).astype(dtype)
        for name, ulps in (("i0", 6), ("i1", 12), ("i0e", 6), ("i1e", 12)):
            assert_ulps(getattr(special, name)(x), getattr(sp, name)(x.astype(np.float64)),
                        dtype, ulps)


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None)
@given(data=floats(0, 1, np.float64))
def test_bessel_jn_against_scipy(dtype, data):
    """Miller's recurrence is accurate to a few eps absolutely (not relatively next to
    the zeros of J_k) for |z| up to about n_iter / 2, and also for small z, where
    JAX's gives NaN."""
    with lc.enable_x64(dtype == np.float64):
        z = np.where(np.arange(SIZE) % 2 == 0, (2 * data - 1) * 20.0,
                     np.sign(data - 0.5) * 10.0 ** (-12 + 13 * np.abs(2 * data - 1))).astype(dtype)
        got = np.asarray(special.bessel_jn(z, v=5))
        assert got.shape == (6, SIZE) and got.dtype == dtype
        want = np.stack([sp.jv(k, z.astype(np.float64)) for k in range(6)])
        np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps,
                                   atol=4 * np.finfo(dtype).eps)


def test_bessel_edges():
    z = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -2.5, 1e-3])
    got = np.asarray(special.bessel_jn(z, v=2, n_iter=30))
    want = np.stack([sp.jv(k, z.astype(np.float64)) for k in range(3)])
    want[:, 2:4] = 0.0  # the limit at +-inf (SciPy: NaN)
    np.testing.assert_allclose(got, want, rtol=4e-7, atol=4e-7)
    x = np.float32([0.0, np.inf, -np.inf, np.nan, 90.0, -90.0, 1e-30, 1.0])
    # lax's i0e(0) is one ulp below 1 in float32 (JAX's one above).
    np.testing.assert_allclose(special.i0(x)[:4], [1.0, np.inf, np.inf, np.nan], rtol=1.2e-7)
    np.testing.assert_array_equal(special.i1(x)[:4], [0.0, np.inf, -np.inf, np.nan])
    assert np.isfinite(special.i0(x)[4:6]).all()  # one exp(|x|) would overflow at 88.7


def test_bessel_jn_bad_input():
    with pytest.raises(ValueError, match="complex"):
        special.bessel_jn(np.complex64(1.0), v=1)
    with pytest.raises(ValueError, match="must be >= 0"):
        special.bessel_jn(np.float32(1.0), v=-1)
    with pytest.raises(ValueError, match="n_iter"):
        special.bessel_jn(np.float32(1.0), v=10, n_iter=5)
    with pytest.raises(TypeError):
        special.bessel_jn(np.float32(1.0), v=1.5)


def _sph_reference(n, m, theta, phi):
    return sp.sph_harm_y(n, m, theta.astype(np.float64), phi.astype(np.float64))


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None)
@given(degrees=st.lists(st.integers(0, 8), min_size=SIZE, max_size=SIZE),
       orders=st.lists(st.integers(-9, 9), min_size=SIZE, max_size=SIZE),
       angles=floats(0, 1, np.float64))
def test_sph_harm_y_against_scipy(dtype, degrees, orders, angles):
    with lc.enable_x64(dtype == np.float64):
        n, m = np.array(degrees), np.array(orders)
        theta = (np.pi * angles).astype(dtype)
        phi = (2 * np.pi * angles[::-1]).astype(dtype)
        got = np.asarray(special.sph_harm_y(n, m, theta, phi, n_max=8))
        assert got.dtype == (np.complex128 if dtype == np.float64 else np.complex64)
        eps = np.finfo(dtype).eps
        np.testing.assert_allclose(got, _sph_reference(n, m, theta, phi), rtol=16 * eps,
                                   atol=16 * eps)


def test_sph_harm_y_arguments():
    n, m = np.array([3, 2]), np.array([1, -2])
    theta, phi = np.float32([0.4, 2.0]), np.float32([1.0, 5.0])
    want = _sph_reference(n, m, theta, phi)
    # n_max from the concrete n; a scalar angle broadcasts (JAX takes 1-D arrays).
    np.testing.assert_allclose(special.sph_harm_y(n, m, theta, phi), want, rtol=1e-6)
    np.testing.assert_allclose(special.sph_harm_y(n, m, theta[0], phi),
                               _sph_reference(n, m, theta[:1], phi), rtol=1e-6)
    # Degrees above n_max are computed as n_max, as in JAX.
    np.testing.assert_allclose(special.sph_harm_y(np.array([5]), np.array([1]), theta[:1],
                                                  phi[:1], n_max=3),
                               _sph_reference(np.array([3]), np.array([1]), theta[:1], phi[:1]),
                               rtol=1e-6)
    with pytest.raises(NotImplementedError, match="diff_n"):
        special.sph_harm_y(n, m, theta, phi, diff_n=1)
    with pytest.raises(TypeError, match="integers"):
        special.sph_harm_y(n.astype(np.float32), m, theta, phi)
    with pytest.raises(lc.ConcretizationTypeError, match="n_max"):
        lc.jit(special.sph_harm_y)(n, m, theta, phi)
    out = lc.jit(special.sph_harm_y, static_argnames="n_max")(n, m, theta, phi, n_max=3)
    np.testing.assert_allclose(out, want, rtol=1e-6)


def _family(x):
    """The real functions of this file at x, stacked: one check for all of them."""
    y = special.sph_harm_y(np.array([0, 1, 2, 3, 3, 4, 2, 1]), np.array([0, 1, -1, 2, 0, -3, 2, 0]),
                           x, 2 * x, n_max=4)
    return lnp.concatenate([lnp.stack([special.i0(x), special.i1(x), special.i0e(x),
                                       special.i1e(x), y.real, y.imag]),
                            special.bessel_jn(3 * x, v=3, n_iter=30)])


X = np.array([-2.0, -0.7, -0.1, 0.05, 0.3, 0.9, 1.7, 2.8], np.float32)


def test_derivatives_vmap_jit():
    family = lc.jit(_family)  # the functions compile together, once per check
    check_derivatives(family, [X], rtol=1e-6, atol=1e-6)
    check_vmap(family, [X])
    check_jit_matches_eager(_family, [X], rtol=1e-6)
