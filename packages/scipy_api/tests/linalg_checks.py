"""What the lamella.scipy.linalg tests share: random matrices of a given structure
from a seed, and a normwise comparison with a float64 SciPy reference whose
tolerance is a number of ulps of the result dtype times a condition number."""

import numpy as np

import lamella.core as lc

X64_DTYPES = (np.float64, np.complex128)


def matrix(seed, shape, dtype=np.float32, kind="general"):
    """A random matrix (batch) of `shape`: 'general' (Gaussian), 'well' (diagonally
    dominant), 'spd' (Hermitian positive definite), 'hermitian' or 'upper'."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    n = shape[-1]
    if kind == "well":
        a = a + 2 * n * np.eye(n)
    elif kind == "spd":
        a = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    elif kind == "hermitian":
        a = a + np.conj(np.swapaxes(a, -1, -2))
    elif kind == "upper":
        a = np.triu(a) + 2 * n * np.eye(n)
    return a.astype(dtype)


def close(got, want, dtype, cond=1.0, ulps=32):
    """`got` has `dtype`, `want`'s shape, and ``max|got - want| <= ulps * eps * cond *
    max(1, max|want|)``: a normwise error of a few ulps times the condition."""
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    want = np.asarray(want)
    if want.size == 0:
        return
    eps = np.finfo(dtype).eps
    scale = max(1.0, float(np.max(np.abs(want))))
    err = float(np.max(np.abs(got.astype(np.complex128) - want)))
    assert err <= ulps * eps * cond * scale, (err, ulps * eps * cond * scale)


def x64(dtype):
    """A context that enables 64-bit types when `dtype` needs them."""
    return lc.enable_x64(np.dtype(dtype) in (np.dtype(d) for d in X64_DTYPES))


def condition(a):
    """The 2-norm condition number of each matrix, the largest over a batch."""
    return float(np.max(np.linalg.cond(np.asarray(a, np.complex128))))
