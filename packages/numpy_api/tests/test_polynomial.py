"""Polynomial functions against NumPy: evaluation, fitting (full and cov outputs),
roots (leading zeros, traced), construction from roots, arithmetic and calculus;
derivatives, vmap and jit; errors."""

import numpy as np
import pytest
from checks import assert_close, check
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella import lax
from lamella.numpy import polynomial as pl

RNG = np.random.default_rng(0)



@settings(max_examples=15, deadline=None)
@given(p=st.lists(st.integers(-4, 4), min_size=0, max_size=5),
       x_shape=st.sampled_from([(), (3,), (2, 3)]))
def test_polyval(p, x_shape):
    p = np.int32(p)
    x = RNG.uniform(-2, 2, x_shape).astype(np.float32)
    assert_close(pl.polyval(p, x), np.polyval(p, x), np.float32, 1e-4)
    assert_close(pl.polyval(p, np.int32(2), unroll=2), np.polyval(p, 2), np.float32)


def test_polyval_derivatives():
    p, x = np.float32([0.5, -1.0, 2.0, 0.25]), np.float32([-1.5, 0.2, 1.1])
    check(pl.polyval, [p, x], np.polyval, diff_argnums=(0, 1))


X = np.float32([-2.0, -1.2, -0.5, 0.0, 0.7, 1.3, 2.1, 3.0])
Y = (0.5 * X**2 - X + 1 + 0.1 * RNG.standard_normal(8)).astype(np.float32)
Y2 = np.stack([Y, np.sin(X)], 1).astype(np.float32)


@pytest.mark.parametrize("deg", [0, 1, 2, 3])
@pytest.mark.parametrize("y", [Y, Y2], ids=["1d", "2d"])
def test_polyfit(deg, y):
    assert_close(pl.polyfit(X, y, deg), np.polyfit(X, y, deg), np.float32, 2e-4)
    w = np.linspace(0.5, 2, 8).astype(np.float32)
    assert_close(pl.polyfit(X, y, deg, w=w), np.polyfit(X, y, deg, w=w), np.float32, 2e-4)


def test_polyfit_full_and_cov():
    c, resids, rank, s, rcond = pl.polyfit(X, Y, 2, full=True)
    wc, wresids, wrank, ws, wrcond = np.polyfit(X, Y, 2, full=True)
    assert_close(c, wc, np.float32, 2e-4)
    assert_close(resids, wresids, np.float32, 2e-4)
    assert int(rank) == wrank
    assert_close(s, ws, np.float32, 2e-4)
    np.testing.assert_allclose(float(rcond), 8 * np.finfo(np.float32).eps)
    for y in (Y, Y2):
        for cov in (True, "unscaled"):
            c, v = pl.polyfit(X, y, 2, cov=cov)
            wc, wv = np.polyfit(X, y, 2, cov=cov)
            assert_close(v, wv, np.float32, 2e-4)


def test_polyfit_derivatives():
    check(lambda y: pl.polyfit(X, y, 2), [Y], lambda y: np.polyfit(X, y, 2), rtol=2e-4,
          atol=2e-4)
    x64 = X.astype(np.float64)
    with lc.enable_x64():
        got = lc.jit(lambda x, y: pl.polyfit(x, y, 1))(x64, 2 * x64 + 1.0)
    assert_close(got, [2, 1], np.float64, 1e-10)


@pytest.mark.parametrize("p", [[1, -3, 2], [2, 0, 0, 1], [0, 0, 1, -1, -6], [1, 2, 3, 4, 5],
                               [3], [0, 4, 0]], ids=str)
def test_roots(p):
    got = np.sort_complex(np.asarray(pl.roots(np.float32(p))))
    want = np.sort_complex(np.roots(p).astype(np.complex64))
    assert got.dtype == np.complex64
    # NumPy also strips trailing zeros, handing back fewer zero roots: compare the rest.
    nonzero = got[np.abs(got) > 1e-6]
    np.testing.assert_allclose(nonzero, want[np.abs(want) > 1e-6], rtol=1e-4, atol=1e-4)


def test_roots_traced():
    p = np.float32([0, 0, 1, -3, 2])
    got = np.asarray(lc.jit(lambda p: pl.roots(p, strip_zeros=False))(p))
    assert np.isnan(got[2:]).all()
    np.testing.assert_allclose(np.sort_complex(got[:2]), [1, 2], rtol=1e-5)
    with pytest.raises(lc.ConcretizationTypeError, match="strip_zeros=False"):
        lc.jit(pl.roots)(p)
    # Roots follow the coefficients differentiably: d(root)/d(constant term).
    with lc.enable_x64():
        grad = lc.grad(lambda c: lax.reduce_max(lax.real(pl.roots(c)), (0,)))(
            np.float64([1, -3, 2]))
    # The root 2 of c0 x^2 + c1 x + c2 moves by -(2^2, 2, 1) / p'(2) with p'(2) = 1.
    np.testing.assert_allclose(grad, [-4, -2, -1], rtol=1e-6)


@pytest.mark.parametrize("zeros", [[1, 2, 3], [], [2.5], [1 + 2j, 1 - 2j, 2]], ids=str)
def test_poly(zeros):
    z = np.asarray(zeros, np.complex64 if np.iscomplexobj(zeros) else np.float32)
    want = np.poly(z)
    got = pl.poly(z)
    assert_close(got, want, np.complex64 if np.iscomplexobj(zeros) else np.float32)


def test_poly_of_matrix_and_derivatives():
    a = np.float32([[2, 1, 5], [3, 4, 7], [1, 3, 5]])
    assert_close(pl.poly(a), np.poly(a).astype(np.complex64), np.complex64, 1e-3)
    check(pl.poly, [np.float32([0.5, -1.0, 2.0])], np.poly)


@pytest.mark.parametrize("a1, a2", [([2, 3], [5, 4, 1]), ([1, 2, 3], [4]), ([0.5], [1.5, 2])])
def test_add_sub_mul_div(a1, a2):
    dtype = np.float32 if any(isinstance(v, float) for v in a1 + a2) else np.int32
    a1, a2 = np.asarray(a1, dtype), np.asarray(a2, dtype)
    for ours, ref in ((pl.polyadd, np.polyadd), (pl.polysub, np.polysub)):
        got = ours(a1, a2)
        np.testing.assert_array_equal(got, ref(a1, a2))
        assert np.asarray(got).dtype == dtype
    assert_close(pl.polymul(a1, a2), np.polymul(a1, a2), np.float32)
    q, r = pl.polydiv(a1, a2)
    wq, wr = np.polydiv(a1.astype(np.float32), a2.astype(np.float32))
    assert_close(q, wq, np.float32)
    np.testing.assert_allclose(np.asarray(r)[-len(wr):], wr, atol=1e-5)
    _, r = pl.polydiv(a1, a2, trim_leading_zeros=True)
    np.testing.assert_allclose(np.asarray(r), np.trim_zeros(wr, "f"), atol=1e-5)


def test_polyadd_broadcasts_along_rows():
    got = pl.polyadd(np.int32([[1, 3, 5], [8, 6, 4]]), np.int32([2]))
    np.testing.assert_array_equal(got, [[1, 3, 5], [10, 8, 6]])
    np.testing.assert_array_equal(pl.polymul(np.float32([0, 0, 1, 2]), np.float32([0, 3]),
                                             trim_leading_zeros=True), [3, 6])


def test_arithmetic_derivatives():
    a, b = np.float32([1.0, -2.0, 0.5]), np.float32([2.0, 0.25])
    check(pl.polymul, [a, b], np.polymul, diff_argnums=(0, 1))
    check(lambda a, b: pl.polydiv(a, b)[0], [a, b], lambda a, b: np.polydiv(a, b)[0],
          diff_argnums=(0, 1))
    check(pl.polysub, [a, b], np.polysub, diff_argnums=(0, 1))


@pytest.mark.parametrize("m", [0, 1, 2, 3])
def test_polyder_polyint(m):
    p = np.float32([1, -2, 3, 0.5])
    assert_close(pl.polyder(p, m), np.polyder(p, m), np.float32)
    assert_close(pl.polyint(p, m), np.polyint(p, m), np.float32)
    k = np.float32([1, -1, 2])[:m]
    if m:
        assert_close(pl.polyint(p, m, k), np.polyint(p, m, k), np.float32)
        assert_close(pl.polyint(p, m, 3.0), np.polyint(p, m, 3.0), np.float32)
    assert np.asarray(pl.polyder(np.int32([1, 2, 3]))).dtype == np.float32


def test_calculus_derivatives():
    p = np.float32([1, -2, 3, 0.5])
    check(lambda p: pl.polyder(p, 2), [p], lambda p: np.polyder(p, 2))
    check(lambda p, k: pl.polyint(p, 2, k), [p, np.float32([1, 2])],
          lambda p, k: np.polyint(p, 2, k), diff_argnums=(0, 1), vmap=False)


V = np.float32([1, 2, 3])


@pytest.mark.parametrize("call, error, match", [
    (lambda: pl.polyval([1, 2], V), TypeError, "lists and tuples"),
    (lambda: pl.polyfit(X, Y, -1), ValueError, "deg >= 0"),
    (lambda: pl.polyfit(X, Y[:5], 1), TypeError, "same length"),
    (lambda: pl.polyfit(np.ones((2, 2)), Y, 1), TypeError, "1-D vector"),
    (lambda: pl.polyfit(X, np.ones((8, 2, 2)), 1), TypeError, "1-D or 2-D"),
    (lambda: pl.polyfit(X, Y, 1, w=V), TypeError, "weights"),
    (lambda: pl.polyfit(V, V, 2, cov=True), ValueError, "exceed order"),
    (lambda: pl.roots(np.ones((2, 2))), ValueError, "1-D"),
    (lambda: pl.poly(np.ones((2, 3))), ValueError, "square"),
    (lambda: pl.polyder(V, -1), ValueError, "non-negative"),
    (lambda: pl.polyint(V, -1), ValueError, "non-negative"),
    (lambda: pl.polyint(V, 2, np.float32([1, 2, 3])), ValueError, "length 1 or m"),
    (lambda: pl.polyadd(np.ones((2, 3)), np.ones((1, 2))), ValueError, "broadcast"),
    (lambda: pl.polydiv(V, np.float32([])), ValueError, "at least one"),
    (lambda: pl.polyder(V, 1.5), TypeError, "integer"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
