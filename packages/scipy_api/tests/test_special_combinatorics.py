"""factorial (also exact), comb, poch and bernoulli against SciPy: values, poles,
derivatives, vmap, jit, and the errors for arguments that must be concrete."""

import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.special as sp
from hypothesis import given, settings
from special_accuracy import assert_ulps, assert_vmap_matches_loop, floats

import lamella.core as lc
from lamella.lax.test_util import check
from lamella.scipy import special

DTYPES = [np.float32, np.float64]


@pytest.mark.parametrize("dtype", DTYPES)
@settings(max_examples=25, deadline=None)
@given(n=floats(0, 30, np.float64), k=floats(0, 30, np.float64), z=floats(0.1, 20, np.float64),
       m=floats(-4, 8, np.float64))
def test_values(dtype, n, k, z, m):
    n, k, z, m = (v.astype(dtype) for v in (n, k, z, m))
    wide = [v.astype(np.float64) for v in (n, k, z, m)]
    with lc.enable_x64(dtype == np.float64):
        assert_ulps(special.comb(n, k), sp.comb(wide[0], wide[1]), dtype, 64)
        assert_ulps(special.factorial(n), sp.factorial(wide[0]), dtype, 32)
        # z + m rounds (in SciPy's float64 it need not): poch is conditioned by z + m.
        tol = 64 * (1 + 1 / np.abs(np.sin(np.pi * (wide[2] + wide[3]))))
        assert_ulps(special.poch(z, m), sp.poch(wide[2], wide[3]), dtype, tol.max())


def test_integers_are_exact():
    n = np.arange(0, 40, dtype=np.float32)[:, None]
    k = np.arange(0, 12, dtype=np.float32)
    want = sp.comb(n.astype(np.float64), k.astype(np.float64))
    got = np.asarray(special.comb(n, k))
    representable = want * np.minimum(k, n - k) < 2 ** 23  # no rounding on the way
    np.testing.assert_array_equal(got[representable], want[representable])
    np.testing.assert_array_equal(special.comb(np.float32(5), np.float32(2), repetition=True),
                                  15.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_edges(dtype):
    with lc.enable_x64(dtype == np.float64):
        z = np.array([-2., -3, -2, -0.5, 0, 2, -2, 3, np.nan], dtype)
        m = np.array([3., 2, 1.5, -0.5, 0, -3, -0.5, 0, 1], dtype)
        assert_ulps(special.poch(z, m), sp.poch(z.astype(np.float64), m.astype(np.float64)),
                    dtype, 4)
        n = np.array([-1, 0, 3.5, 171, 172, 20, np.nan], dtype)
        assert_ulps(special.factorial(n), sp.factorial(n.astype(np.float64)), dtype, 16)
        n = np.array([5, 2, -1, 5, 0, 5.5, 7], dtype)
        k = np.array([7, 3, 1, -1, 0, 2, 7], dtype)
        assert_ulps(special.comb(n, k), sp.comb(n, k), dtype, 4)


def test_exact_factorial():
    assert special.factorial(25, exact=True) == math.factorial(25)
    got = special.factorial(np.array([3, 25, -1]), exact=True)
    assert got.dtype == object and list(got) == [6, math.factorial(25), 0]
    np.testing.assert_array_equal(special.factorial(np.array([[0, 5]]), exact=True), [[1, 120]])
    with pytest.raises(ValueError, match="needs integers"):
        special.factorial(2.5, exact=True)
    with pytest.raises(TypeError, match="concrete"):
        lc.jit(lambda n: special.factorial(n, exact=True))(3)


def _exact_bernoulli(n):
    """B_0 ... B_n as Fractions (Akiyama-Tanigawa), with B_1 = -1/2 as SciPy."""
    table, out = [], []
    for m in range(n + 1):
        table.append(Fraction(1, m + 1))
        for j in range(m, 0, -1):
            table[j - 1] = j * (table[j - 1] - table[j])
        out.append(table[0])
    return [float(b) for b in out[:1]] + [-0.5] * (n >= 1) + [float(b) for b in out[2:]]


def test_bernoulli():
    """Against exact fractions (SciPy's own float64 table is off by up to ~1e-12)."""
    for n in (0, 1, 5, 30):
        got = np.asarray(special.bernoulli(n))
        assert got.dtype == np.float32
        assert_ulps(got, np.float32(_exact_bernoulli(n)), np.float32, 1)
    with lc.enable_x64():
        assert_ulps(special.bernoulli(60), _exact_bernoulli(60), np.float64, 64)
    big = np.asarray(special.bernoulli(300))
    assert big.shape == (301,) and np.isinf(big[-1]) and big[-2] == 0
    with pytest.raises(ValueError, match="non-negative"):
        special.bernoulli(-1)
    with pytest.raises(TypeError, match="concrete integer"):
        special.bernoulli(2.5)


def test_derivatives_vmap_jit():
    n = np.array([4.0, 7.5, 12.0], np.float32)
    k = np.array([1.5, 3.0, 5.0], np.float32)
    check(special.comb, [n, k], sp.comb, diff_argnums=(0, 1), rtol=1e-5, grad_rtol=1e-5,
          jit_rtol=1e-6, vmap=False)
    assert_vmap_matches_loop(special.comb, [n, k])
    check(special.poch, [n - 6, k], sp.poch, diff_argnums=(0, 1), rtol=1e-5, grad_rtol=1e-5,
          jit_rtol=1e-6, vmap=False)
    assert_vmap_matches_loop(special.poch, [n - 6, k])
    check(special.factorial, [k], sp.factorial, rtol=1e-5, grad_rtol=1e-5, jit_rtol=1e-6,
          vmap=False)
