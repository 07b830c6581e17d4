"""wofz, dawsn, fresnel and sici against SciPy's float64 answers in float32 and
float64 (hypothesis inputs, edge values), derivatives against central differences,
vmap against loops, jit against eager, dtypes.

SciPy's own float64 error is tens of ulps for dawsn near 0 and wofz near the real
axis, and grows like x ulps for the Fresnel integrals (it rounds pi x**2 / 2): the
float64 tolerances here allow for that, and test_special_known_answers.py holds
these functions to mpmath's values instead.
"""

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


def _spread(data, high):
    """Values in [0, 1] spread over [-high, high], every other one on a log scale."""
    linear = (2 * data - 1) * high
    logarithmic = np.sign(data - 0.5) * np.expm1(np.abs(2 * data - 1) * np.log1p(high))
    return np.where(np.arange(data.size) % 2 == 0, linear, logarithmic)


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None)
@given(data=floats(0, 1, np.float64))
def test_real_functions_against_scipy(dtype, data):
    f64 = dtype == np.float64
    with lc.enable_x64(f64):
        x = _spread(data, 1e4).astype(dtype)
        assert_ulps(special.dawsn(x), sp.dawsn(x.astype(np.float64)), dtype, 80 if f64 else 6)
        si, ci = special.sici(x)
        want_si, want_ci = sp.sici(x.astype(np.float64))
        assert_ulps(si, want_si, dtype, 4)
        # Ci is accurate to a few eps absolutely (in SciPy too), not next to its zeros.
        assert_ulps(ci, want_ci, dtype, 4, atol=16)
        x = _spread(data, 20.0 if f64 else 1e4).astype(dtype)
        s, c = special.fresnel(x)
        want_s, want_c = sp.fresnel(x.astype(np.float64))
        assert_ulps(s, want_s, dtype, 24 if f64 else 4)
        assert_ulps(c, want_c, dtype, 24 if f64 else 4)


def _assert_complex_ulps(got, want, dtype, ulps):
    got = np.asarray(got)
    assert got.dtype == np.dtype(np.complex128 if dtype == np.float64 else np.complex64)
    err = np.abs(got.astype(np.complex128) - want) / np.abs(want) / np.finfo(dtype).eps
    assert np.all(err <= ulps), (np.max(err), got, want)


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None)
@given(radius=floats(0, 1, np.float64), angle=floats(0, 1, np.float64))
def test_wofz_against_scipy(dtype, radius, angle):
    f64 = dtype == np.float64
    with lc.enable_x64(f64):
        r = np.exp(np.log(1e-4) + radius * np.log(1e6))  # 1e-4 ... 100
        z = r * np.exp(1j * np.pi * angle)
        complex_dtype = np.complex128 if f64 else np.complex64
        z = z.astype(complex_dtype)
        _assert_complex_ulps(special.wofz(z), sp.wofz(z.astype(np.complex128)), dtype,
                             160 if f64 else 8)
        # Below the real axis w(z) = 2 exp(-z**2) - w(-z) is as ill-conditioned as
        # exp(-z**2): a relative error of |z|**2 ulps is all that the inputs allow.
        z = (np.conj(z) * np.minimum(1.0, 5.0 / r)).astype(complex_dtype)
        bound = 8 + 4 * np.max(np.abs(z)) ** 2 + (160 if f64 else 0)
        _assert_complex_ulps(special.wofz(z), sp.wofz(z.astype(np.complex128)), dtype, bound)


def test_edge_values():
    x = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-10, -3.0, 1e30])
    with np.errstate(all="ignore"):
        want = sp.dawsn(x.astype(np.float64))
        assert_ulps(special.dawsn(x), want, np.float32, 4)
        for got, expected in zip(special.fresnel(x), sp.fresnel(x.astype(np.float64))):
            assert_ulps(got, expected, np.float32, 4)
        for got, expected in zip(special.sici(x), sp.sici(x.astype(np.float64))):
            assert_ulps(got, expected, np.float32, 4, atol=4)
    w = np.asarray(special.wofz(np.complex64([np.inf, -np.inf, 0.0, 3.0 + 0j])))
    np.testing.assert_array_equal(w[:3], [0, 0, 1])
    # On the real axis: exp(-x**2) exactly, and 2 D(x) / sqrt(pi).
    assert w[3].real == np.float32(np.exp(-9.0))
    np.testing.assert_allclose(w[3].imag, 2 / np.sqrt(np.pi) * sp.dawsn(3.0), rtol=3e-7)


def test_dtypes():
    def dtypes(fun, x):  # traced only: nothing compiles
        return [out.dtype for out in lc.tree_util.tree_leaves(lc.eval_shape(fun, x))]

    assert dtypes(special.wofz, np.float32(1.0)) == [np.complex64]
    assert dtypes(special.wofz, 1) == [np.complex64]
    assert dtypes(special.fresnel, np.int32(2)) == [np.float32, np.float32]
    assert dtypes(special.dawsn, np.float16(0.5)) == [np.float16]
    with lc.enable_x64():
        assert dtypes(special.wofz, np.float64(1.0)) == [np.complex128]
        assert dtypes(special.sici, np.float64(2.0)) == [np.float64, np.float64]


def _family(x):
    """Each function of this file at x in (0.2, 6), stacked: one check for all."""
    s, c = special.fresnel(x)
    si, ci = special.sici(x)
    w = special.wofz(x + 0.5j)
    return lnp.stack([special.dawsn(x), s, c, si, ci, w.real, w.imag])


X = np.array([0.25, 0.7, 0.99, 1.01, 1.8, 2.9, 3.1, 5.5], np.float32)


def test_derivatives_vmap_jit():
    family = lc.jit(_family)  # the functions compile together, once per check
    check_derivatives(family, [X], rtol=1e-6, atol=1e-6)
    check_vmap(family, [X])
    check_jit_matches_eager(_family, [X], rtol=1e-6)


@settings(max_examples=10, deadline=None)
@given(st.lists(st.floats(-30, 30), min_size=SIZE, max_size=SIZE))
def test_wofz_derivative_is_holomorphic(values):
    """The complex derivative -2 z w(z) + 2i/sqrt(pi), along the imaginary direction too."""
    with lc.enable_x64():
        z = np.array(values[:4]) + 1j * np.abs(np.array(values[4:])) / 10
        w, tangent = lc.jvp(special.wofz, (z,), (1j * np.ones_like(z),))
        np.testing.assert_allclose(tangent, 1j * (-2 * z * w + 2j / np.sqrt(np.pi)), rtol=1e-12)
