"""expit, logit, xlogy, xlog1py, entr, rel_entr, kl_div, boxcox, boxcox1p, owens_t
and logsumexp/softmax/log_softmax against SciPy (and, where SciPy's float64 formula
cancels, the same formula in 80-bit floats or a series), edge values, derivatives
against central differences and closed forms, vmap against loops, jit against eager.
"""

import numpy as np
import pytest
import scipy.special as sp
from hypothesis import given, settings
from special_accuracy import assert_ulps, floats

import lamella.core as lc
import lamella.numpy as lnp
from lamella.lax.test_util import check_derivatives, check_jit_matches_eager, check_vmap
from lamella.scipy import special

LD = np.longdouble
DTYPES = [np.float32, np.float64]


def _logit(x):
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(x, LD) / (1 - np.asarray(x, LD))).astype(np.float64)


def _divergence(p, q, kl):
    """rel_entr / kl_div in 80-bit floats; kl_div near p = q from its series in
    t = (p - q)/q (SciPy's float64 p log(p/q) - p + q cancels there)."""
    p, q = np.asarray(p, LD), np.asarray(q, LD)
    t = (p - q) / q
    if not kl:
        return (p * np.log1p(t)).astype(np.float64)
    series = sum((-t) ** n / (n * (n - 1)) for n in range(2, 80))
    return np.where(np.abs(t) < 0.5, q * series, p * np.log(p / q) - p + q).astype(np.float64)


def _boxcox1p(x, lmbda):
    log1p, lmbda = np.log1p(np.asarray(x, LD)), np.asarray(lmbda, LD)
    return np.where(lmbda == 0, log1p, np.expm1(lmbda * log1p) / np.where(lmbda == 0, 1, lmbda)
                    ).astype(np.float64)


def _flush_subnormals(x):
    """x with subnormal values set to zero, as XLA on CPU reads them."""
    return np.where(np.abs(x) < np.finfo(x.dtype).tiny, np.zeros_like(x), x)


def _log_spread(data, low, high):
    return np.exp(np.log(low) + data * (np.log(high) - np.log(low)))


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None)
@given(u=floats(0, 1, np.float64), v=floats(0, 1, np.float64))
def test_values(dtype, u, v):
    f64 = dtype == np.float64
    with lc.enable_x64(f64), np.errstate(all="ignore"):
        x = ((2 * u - 1) * 80).astype(dtype)
        assert_ulps(special.expit(x), sp.expit(x.astype(np.float64)), dtype, 2)
        p = _flush_subnormals(np.where(np.arange(u.size) % 2 == 0, u,
                                       _log_spread(u, 1e-30, 1)).astype(dtype))
        assert_ulps(special.logit(p), _logit(p), dtype, 4)
        a, b = _log_spread(u, 1e-3, 1e3).astype(dtype), _log_spread(v, 1e-3, 1e3).astype(dtype)
        # Half the pairs close together, where the divergences are small.
        b = np.where(np.arange(u.size) % 2 == 0, b, a * (1 + (v - 0.5) / 8)).astype(dtype)
        wa, wb = a.astype(np.float64), b.astype(np.float64)
        assert_ulps(special.xlogy(a, b), sp.xlogy(wa, wb), dtype, 2, atol=2)
        assert_ulps(special.entr(a), sp.entr(wa), dtype, 2, atol=2)
        assert_ulps(special.rel_entr(a, b), _divergence(wa, wb, kl=False), dtype, 8 if f64 else 4)
        assert_ulps(special.kl_div(a, b), _divergence(wa, wb, kl=True), dtype, 8)
        y = np.where(np.arange(u.size) % 2 == 0, (v - 0.9), v * 1e3).astype(dtype)
        assert_ulps(special.xlog1py(a, y), (wa * np.log1p(np.asarray(y, LD))).astype(np.float64),
                    dtype, 4, atol=2)
        lmbda = ((2 * v - 1) * 3).astype(dtype)
        assert_ulps(special.boxcox(a, lmbda), sp.boxcox(wa, lmbda.astype(np.float64)), dtype,
                    16, atol=2)
        assert_ulps(special.boxcox1p(y, lmbda), _boxcox1p(y, lmbda), dtype, 16, atol=2)


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None)
@given(u=floats(0, 1, np.float64), v=floats(0, 1, np.float64))
def test_owens_t(dtype, u, v):
    f64 = dtype == np.float64
    with lc.enable_x64(f64):
        h = ((2 * u - 1) * (30 if f64 else 11)).astype(dtype)
        a = (np.sign(v - 0.5) * _log_spread(np.abs(2 * v - 1), 1e-2, 1e3)).astype(dtype)
        want = sp.owens_t(h.astype(np.float64), a.astype(np.float64))
        # SciPy's float64 owens_t is itself ~1e-13 off for some (h, a) (see the mpmath
        # known answers); float32 has to be within a few ulps.
        assert_ulps(special.owens_t(h, a), want, dtype, 2048 if f64 else 6)


def test_edge_values():
    with np.errstate(all="ignore"):
        x = np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, 0.5, 1.0])
        for name in ("expit", "logit", "entr"):
            assert_ulps(getattr(special, name)(x), getattr(sp, name)(x.astype(np.float64)),
                        np.float32, 2)
        p = np.float32([0, 0, 1, 1, -1, np.inf, np.nan, 1])
        q = np.float32([0, 1, 0, -1, 1, 1, 1, np.inf])
        for name in ("rel_entr", "kl_div", "xlogy", "xlog1py"):
            want = getattr(sp, name)(p.astype(np.float64), q.astype(np.float64))
            assert_ulps(getattr(special, name)(p, q), want, np.float32, 2)
        x = np.float32([0.0, 0.0, 0.0, -1.0, np.inf, np.inf, 1.0, 2.0])
        lmbda = np.float32([1.0, 0.0, -1.0, 1.0, 1.0, -1.0, 0.0, 1e-30])
        assert_ulps(special.boxcox(x, lmbda), sp.boxcox(x.astype(np.float64), lmbda), np.float32, 2)
        assert_ulps(special.boxcox1p(x - 1, lmbda), sp.boxcox1p(x.astype(np.float64) - 1, lmbda),
                    np.float32, 2)
        h = np.float32([1.0, np.inf, -np.inf, 1.0, 1.0, np.nan, 0.0, 0.0])
        a = np.float32([np.inf, 1.0, 1.0, -np.inf, 0.0, 1.0, -2.0, np.inf])
        assert_ulps(special.owens_t(h, a), sp.owens_t(h.astype(np.float64), a), np.float32, 2)


def test_derivatives_where_the_formulas_have_holes():
    """xlogy's y-derivative vanishes with x (JAX gives NaN at 0/0); boxcox's
    lambda-derivative at 0 is log(x)**2 / 2 (JAX's is 0); owens_t's closed forms."""
    with lc.enable_x64():
        assert lc.grad(special.xlogy, argnums=1)(0.0, 0.0) == 0.0
        assert lc.grad(special.xlogy, argnums=0)(0.0, 2.0) == np.log(2.0)
        assert lc.grad(special.xlog1py, argnums=1)(0.0, -1.0) == 0.0
        x = np.array([0.5, 2.0, 10.0])
        np.testing.assert_allclose(lc.vmap(lc.grad(special.boxcox, argnums=1), (0, None))(x, 0.0),
                                   np.log(x) ** 2 / 2, rtol=1e-14)
        np.testing.assert_allclose(
            lc.vmap(lc.grad(special.boxcox1p, argnums=1), (0, None))(x, 0.0),
            np.log1p(x) ** 2 / 2, rtol=1e-14)
        h, a = np.array([0.3, -2.0, 5.0]), np.array([0.5, 3.0, -0.2])
        d_h = lc.vmap(lc.grad(special.owens_t, argnums=0))(h, a)
        d_a = lc.vmap(lc.grad(special.owens_t, argnums=1))(h, a)
        pdf = np.exp(-h * h / 2) / np.sqrt(2 * np.pi)
        np.testing.assert_allclose(d_h, -0.5 * pdf * sp.erf(a * h / np.sqrt(2)), rtol=1e-13)
        want = np.exp(-h * h * (1 + a * a) / 2) / (2 * np.pi * (1 + a * a))
        np.testing.assert_allclose(d_a, want, rtol=1e-13)


def _unary(x):
    p = 0.5 * (x + 1)
    return lnp.stack([special.expit(4 * x), special.logit(p), special.entr(p)])


def _binary(x, y):
    p, q = 0.5 * (x + 1.5), 0.5 * (y + 1.5)
    return lnp.stack([special.xlogy(x, q), special.xlog1py(x, y), special.rel_entr(p, q),
                      special.kl_div(p, q), special.boxcox(p, y), special.boxcox1p(y, x),
                      special.owens_t(3 * x, 2 * y)])


X = np.array([-0.9, -0.6, -0.3, -0.05, 0.1, 0.4, 0.7, 0.95], np.float32)
Y = np.array([0.8, -0.4, 0.02, -0.7, 0.5, 0.11, -0.2, 0.6], np.float32)


def test_derivatives_vmap_jit():
    for fun, args in ((_unary, [X]), (_binary, [X, Y])):
        family = lc.jit(fun)  # the functions compile together, once per check
        check_derivatives(family, args, diff_argnums=tuple(range(len(args))), rtol=1e-6,
                          atol=1e-6)
        check_vmap(family, args)
        check_jit_matches_eager(fun, args, rtol=1e-6)


# --- logsumexp, softmax, log_softmax (shared with lamella.nn) --------------------------------
A = np.array([[0.5, -1.0, 3.0], [-np.inf, 2.0, 1.0]], np.float32)
B = np.array([[1.0, -2.0, 0.5], [1.0, 0.0, 3.0]], np.float32)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_logsumexp_against_scipy(axis, keepdims):
    np.testing.assert_allclose(special.logsumexp(A, axis=axis, keepdims=keepdims),
                               sp.logsumexp(A, axis=axis, keepdims=keepdims), rtol=1e-6)
    got, sign = special.logsumexp(A, axis=axis, b=B, keepdims=keepdims, return_sign=True)
    want, want_sign = sp.logsumexp(A, axis=axis, b=B, keepdims=keepdims, return_sign=True)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_array_equal(sign, want_sign)


def test_logsumexp_where_and_softmax():
    where = np.array([[True, False, True], [False, True, True]])
    np.testing.assert_allclose(special.logsumexp(A, axis=1, where=where),
                               [sp.logsumexp([0.5, 3.0]), sp.logsumexp([2.0, 1.0])], rtol=1e-6)
    for axis in (None, 0, 1):
        np.testing.assert_allclose(special.softmax(A, axis=axis), sp.softmax(A, axis=axis),
                                   rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(special.log_softmax(B, axis=axis),
                                   sp.log_softmax(B, axis=axis), rtol=1e-6)
    # scipy.special's axis default is all axes (jax.nn's is the last one).
    np.testing.assert_allclose(special.softmax(B), sp.softmax(B), rtol=1e-6)
    with pytest.raises(TypeError):
        special.softmax(B, 1)  # axis is keyword-only, as in JAX
    check_derivatives(lambda x: special.logsumexp(x, axis=1, b=B), [B], rtol=1e-6, atol=1e-6)
    check_vmap(lambda x: special.log_softmax(x, axis=0), [B])
