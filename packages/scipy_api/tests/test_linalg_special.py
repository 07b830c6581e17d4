"""lamella.scipy.linalg's special matrices against SciPy: values and dtypes on
hypothesis inputs, batches, jit, gradients of the matrices built from arrays,
and errors."""

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings
from hypothesis import strategies as st
from linalg_checks import close

import lamella.core as lc
import lamella.numpy as lnp
from lamella.lax.test_util import check_derivatives, check_vmap
from lamella.scipy import linalg as la

VECTOR_DTYPES = [np.float32, np.complex64, np.int32]


def vector(seed, n, dtype):
    rng = np.random.default_rng(seed)
    v = rng.integers(-5, 6, n) if np.dtype(dtype).kind == "i" else rng.standard_normal(n)
    if np.dtype(dtype).kind == "c":
        v = v + 1j * rng.standard_normal(n)
    return v.astype(dtype)


def same(got, want, dtype):
    if np.dtype(dtype).kind in "iu":
        assert np.asarray(got).dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got, want)
    else:
        close(got, want, dtype, ulps=4)


# Few distinct shapes: each compiles its own gathers.
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), m=st.sampled_from([1, 4]), n=st.sampled_from([1, 3]),
       dtype=st.sampled_from(VECTOR_DTYPES))
def test_from_vectors_vs_scipy(seed, m, n, dtype):
    c, r = vector(seed, m, dtype), vector(seed + 1, n, dtype)
    same(la.toeplitz(c, r), sl.toeplitz(c, r), dtype)
    same(la.toeplitz(c), sl.toeplitz(c), dtype)
    same(la.hankel(c, r), sl.hankel(c, r), dtype)
    same(la.hankel(c), sl.hankel(c), dtype)
    same(la.circulant(c), sl.circulant(c), dtype)
    fiedler_dtype = np.float32 if np.dtype(dtype).kind == "c" else dtype  # |a_i - a_j|
    same(la.fiedler(c), sl.fiedler(c), fiedler_dtype)
    for mode in ("full", "same", "valid"):
        same(la.convolution_matrix(c, n, mode), sl.convolution_matrix(c, n, mode), dtype)
    if m >= 2:
        s = vector(seed + 2, m - 1, dtype)
        same(la.leslie(c, s), sl.leslie(c, s), dtype)
    lead = c.copy()
    lead[0] = 2 if lead[0] == 0 else lead[0]
    inexact = np.complex64 if np.dtype(dtype).kind == "c" else np.float32
    if m >= 2:
        close(la.companion(lead), sl.companion(lead), inexact, ulps=8)
    want = sl.fiedler_companion(lead).reshape(m - 1, m - 1)
    close(la.fiedler_companion(lead), want, inexact, ulps=8)


def test_batched_vectors_build_batches_of_matrices():
    c = vector(0, 6, np.float32).reshape(2, 3)
    r = vector(1, 4, np.float32)
    for got, ref in [(la.toeplitz(c, r), lambda i: sl.toeplitz(c[i], r)),
                     (la.hankel(c, r), lambda i: sl.hankel(c[i], r)),
                     (la.circulant(c), lambda i: sl.circulant(c[i])),
                     (la.fiedler(c), lambda i: sl.fiedler(c[i])),
                     (la.companion(c), lambda i: sl.companion(c[i])),
                     (la.convolution_matrix(c, 4), lambda i: sl.convolution_matrix(c[i], 4)),
                     (la.leslie(c, c[:, :2]), lambda i: sl.leslie(c[i], c[i, :2]))]:
        close(got, np.stack([ref(0), ref(1)]), np.float32, ulps=4)


def test_matrices_from_vectors_batch_jit_and_differentiate():
    # All gather from an index table: one of each kind of table builder is enough.
    c, r = np.float32([1.0, -2.0, 3.0]), np.float32([4.0, 0.5, -1.0, 2.0])
    for fn, args in [(la.toeplitz, [c, r]), (la.fiedler_companion, [r])]:
        check_vmap(fn, args)
        np.testing.assert_array_equal(lc.jit(fn)(*args), fn(*args))
        check_derivatives(fn, args, diff_argnums=tuple(range(len(args))))


@pytest.mark.parametrize("n", [0, 1, 2, 5, 12])
def test_sized_matrices_vs_scipy(n):
    # numpy's FFT of the identity is accurate to an ulp (SciPy's dft loses a few for n >= 6).
    exact = np.fft.fft(np.eye(n), axis=0) if n else np.zeros((0, 0))
    for scale, divisor in ((None, 1), ("sqrtn", np.sqrt(max(n, 1))), ("n", max(n, 1))):
        close(la.dft(n, scale), exact / divisor, np.complex64, ulps=2)
    close(la.hilbert(n), sl.hilbert(n), np.float32, ulps=1)
    close(la.invhilbert(n), sl.invhilbert(n) if n else np.zeros((0, 0)), np.float32, ulps=1)
    for kind in ("symmetric", "lower", "upper"):
        close(la.pascal(n, kind), sl.pascal(n, kind), np.float32, ulps=1)
        close(la.invpascal(n, kind), sl.invpascal(n, kind), np.float32, ulps=1)
    if n:
        close(la.helmert(n), sl.helmert(n), np.float32, ulps=1)
        close(la.helmert(n, full=True), sl.helmert(n, full=True), np.float32, ulps=1)


def test_sized_matrices_are_exact_and_follow_x64():
    # JAX computes pascal through exp(gammaln): lamella's entries are exact binomials.
    np.testing.assert_array_equal(la.pascal(10), sl.pascal(10).astype(np.float32))
    np.testing.assert_array_equal(la.hadamard(8), sl.hadamard(8))
    assert la.hadamard(4).dtype == np.int32 and la.hadamard(4, np.float32).dtype == np.float32
    with lc.enable_x64():
        close(la.invhilbert(8), sl.invhilbert(8), np.float64, ulps=1)
        close(la.dft(6), np.fft.fft(np.eye(6), axis=0), np.complex128, ulps=2)
        assert la.hilbert(3).dtype == np.float64
    assert la.dft(4, dtype=np.complex64).dtype == np.complex64


def test_block_diag_vs_scipy():
    blocks = [np.ones((2, 2), np.int32), np.float32(3.0), np.float32([1.0, 2.0]),
              np.zeros((1, 0), np.float32), np.ones((0, 2), np.float32)]
    close(la.block_diag(*blocks), sl.block_diag(*blocks), np.float32, ulps=0)
    assert la.block_diag(np.ones((2, 2), np.int32)).dtype == np.int32
    assert la.block_diag().shape == (1, 0)
    check_derivatives(la.block_diag, [np.ones((2, 2)), np.ones(3)], diff_argnums=(0, 1))


def test_special_matrix_errors():
    with pytest.raises(ValueError, match="power of 2"):
        la.hadamard(3)
    with pytest.raises(ValueError, match="scale"):
        la.dft(3, "x")
    with pytest.raises(ValueError, match="kind"):
        la.pascal(3, "diagonal")
    with pytest.raises(ValueError, match="kind"):
        la.invpascal(3, "x")
    with pytest.raises(ValueError, match="non-negative integer"):
        la.hilbert(-1)
    with pytest.raises(ValueError, match="at least 2"):
        la.companion(np.ones(1))
    with pytest.raises(ValueError, match="one less"):
        la.leslie(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="scalar"):
        la.toeplitz(np.float32(1.0))
    with pytest.raises(ValueError, match="positive integer"):
        la.convolution_matrix(np.ones(3), 0)
    with pytest.raises(ValueError, match="mode"):
        la.convolution_matrix(np.ones(3), 2, "other")
    with pytest.raises(ValueError, match="at most 2 dimensions"):
        la.block_diag(np.ones((2, 2, 2)))
    assert lnp.all(lnp.isinf(la.companion(np.float32([0.0, 1.0, 2.0]))[0]))
