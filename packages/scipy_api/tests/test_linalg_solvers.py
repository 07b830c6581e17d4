"""lamella.scipy.linalg's solvers against SciPy (float32, complex64, and float64
under enable_x64): det, inv, solve (every assume_a), solve_triangular,
solve_sylvester; singular and ill-conditioned inputs, derivatives (float64
central differences), vmap against loops, jit against eager, and bad input."""

import functools

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings
from hypothesis import strategies as st
from linalg_checks import close, condition, matrix, x64

import lamella.core as lc
from lamella.lax.test_util import check_derivatives, check_vmap
from lamella.scipy import linalg as la

CASES = [(np.float32, (3, 3)), (np.complex64, (2, 3, 3)), (np.float64, (3, 3))]
seeds = st.integers(0, 2**16)


@settings(max_examples=10, deadline=None)
@given(seed=seeds, case=st.sampled_from(CASES), kind=st.sampled_from(["general", "well"]))
def test_det_inv_vs_scipy(seed, case, kind):
    dtype, shape = case
    a = matrix(seed, shape, dtype, kind)
    with x64(dtype):
        close(la.det(a), np.linalg.det(a), dtype, 4 * condition(a))
        close(la.inv(a), np.linalg.inv(a), dtype, 4 * condition(a) ** 2)


def test_det_inv_edge_cases():
    assert la.det(np.eye(2, dtype=np.int32)).dtype == np.float32
    close(la.det(np.zeros((0, 0), np.float32)), 1.0, np.float32)
    close(la.det(np.float32([[2.0, 4.0], [1.0, 2.0]])), 0.0, np.float32)
    assert not np.all(np.isfinite(la.inv(np.float32([[1.0, 2.0], [2.0, 4.0]]))))
    hilbert = sl.hilbert(6)
    with lc.enable_x64():
        # Ill-conditioned (cond ~ 1.5e7): the error grows with the condition, no more.
        close(la.inv(hilbert), sl.invhilbert(6), np.float64, condition(hilbert) ** 2)
    a = matrix(0, (3, 3), np.float64, "well")
    check_derivatives(lc.jit(la.det), [a])
    check_derivatives(lc.jit(la.inv), [a])
    check_vmap(la.det, [a.astype(np.float32)])
    check_vmap(la.inv, [a.astype(np.float32)])


ASSUME = ["gen", "sym", "her", "pos", "general", "symmetric", "hermitian", "positive definite",
          "diagonal", "tridiagonal", "banded", "upper triangular", "lower triangular"]


def structured(seed, shape, dtype, assume_a):
    a = matrix(seed, shape, dtype, "spd")
    if assume_a == "diagonal":
        return a * np.eye(shape[-1])
    if assume_a in ("upper triangular", "lower triangular"):
        return np.triu(a) if assume_a.startswith("upper") else np.tril(a)
    if assume_a in ("sym", "symmetric"):
        return ((a + np.swapaxes(a, -1, -2)) / 2).astype(dtype)
    return a


@settings(max_examples=15, deadline=None)
@given(seed=seeds, case=st.sampled_from(CASES), assume_a=st.sampled_from(ASSUME),
       lower=st.booleans(), vector=st.booleans())
def test_solve_vs_scipy(seed, case, assume_a, lower, vector):
    dtype, shape = case
    a = structured(seed, shape, dtype, assume_a)
    b = matrix(seed + 1, shape[:-1] + (2,), dtype)
    if vector:
        b = b[..., 0] if len(shape) == 2 else b[..., :1]
    # The triangle that solve must not read gets garbage.
    half = np.tril(a) if lower else np.triu(a)
    reads_half = assume_a in ("sym", "her", "pos", "symmetric", "hermitian",
                              "positive definite")
    given_a = half + 5 * (np.triu(a, 1) if lower else np.tril(a, -1)) if reads_half else a
    want = np.stack([sl.solve(m, r, assume_a=assume_a, lower=lower)
                     for m, r in zip(a.reshape(-1, 3, 3), b.reshape(-1, *b.shape[-2:])
                                     if b.ndim > 1 else [b])]).reshape(b.shape)
    with x64(dtype):
        close(la.solve(given_a, b, lower=lower, assume_a=assume_a), want, dtype,
              4 * condition(a))


def test_solve_derivatives_vmap_and_singular():
    a, b = matrix(1, (3, 3), np.float64, "spd"), matrix(2, (3, 2), np.float64)
    for assume_a in ("gen", "upper triangular", "tridiagonal"):
        check_derivatives(lc.jit(functools.partial(la.solve, assume_a=assume_a)), [a, b],
                          diff_argnums=(0, 1))
    # 'pos' reads one triangle: differentiate along symmetric directions.
    check_derivatives(lc.jit(lambda a, b: la.solve((a + a.T) / 2, b, assume_a="pos")), [a, b],
                      diff_argnums=(0, 1))
    check_vmap(lambda a, b: la.solve(a, b, assume_a="pos"),
               [a.astype(np.float32), b.astype(np.float32)])
    x = la.solve(np.float32([[1.0, 2.0], [2.0, 4.0]]), np.float32([1.0, 1.0]))
    assert not np.all(np.isfinite(x))
    a32 = a.astype(np.float32)
    np.testing.assert_allclose(lc.jit(la.solve)(a32, b[:, 0].astype(np.float32)),
                               la.solve(a32, b[:, 0].astype(np.float32)), rtol=1e-6)


def test_solve_tridiagonal_is_linear_time_batched_and_singular():
    # gtsv: O(n) work, so n = 3000 is quick; only the three diagonals are read.
    rng = np.random.default_rng(0)
    n = 3000
    a = (np.diag(rng.standard_normal(n) + 4) + np.diag(rng.standard_normal(n - 1), 1)
         + np.diag(rng.standard_normal(n - 1), -1)).astype(np.float32)
    a[0, -1] = 7.0  # outside the band: ignored, as SciPy ignores it
    b = rng.standard_normal(n).astype(np.float32)
    close(la.solve(a, b, assume_a="tridiagonal"), sl.solve(a, b, assume_a="tridiagonal"),
          np.float32, 8)
    small = np.triu(np.tril(matrix(3, (2, 3, 3), np.float32, "spd"), 1), -1)
    rhs = matrix(4, (3, 2), np.float32)  # one right-hand side for the whole batch
    want = np.stack([sl.solve(m, rhs, assume_a="tridiagonal") for m in small])
    close(la.solve(small, rhs, assume_a="tridiagonal"), want, np.float32, 4 * condition(small))
    check_vmap(lambda a, b: la.solve(a, b, assume_a="tridiagonal"), [small[0], rhs])
    singular = la.solve(np.float32([[1.0, 2.0], [2.0, 4.0]]), np.float32([1.0, 1.0]),
                        assume_a="tridiagonal")
    assert not np.all(np.isfinite(singular))
    assert la.solve(np.zeros((0, 0), np.float32), np.zeros(0, np.float32),
                    assume_a="tridiagonal").shape == (0,)


@settings(max_examples=15, deadline=None)
@given(seed=seeds, case=st.sampled_from(CASES), trans=st.sampled_from([0, 1, 2, "N", "T", "C"]),
       lower=st.booleans(), unit=st.booleans())
def test_solve_triangular_vs_scipy(seed, case, trans, lower, unit):
    dtype, shape = case
    a = matrix(seed, shape, dtype, "upper")
    a = np.swapaxes(a, -1, -2) if lower else a
    b = matrix(seed + 1, shape[:-1] + (2,), dtype)
    want = np.stack([sl.solve_triangular(m, r, trans=trans, lower=lower, unit_diagonal=unit)
                     for m, r in zip(a.reshape(-1, 3, 3), b.reshape(-1, 3, 2))]).reshape(b.shape)
    with x64(dtype):
        close(la.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit), want,
              dtype, 8 * condition(a))
        close(la.solve_triangular(a, b[..., :1], trans=trans, lower=lower,
                                  unit_diagonal=unit)[..., 0], want[..., 0], dtype,
              8 * condition(a))


def test_solve_triangular_vectors_derivatives_vmap():
    a, b = matrix(3, (3, 3), np.float64, "upper"), matrix(4, (3,), np.float64)
    close(la.solve_triangular(a.astype(np.float32), b.astype(np.float32)),
          sl.solve_triangular(a, b), np.float32, condition(a))
    with pytest.warns(FutureWarning, match="batched 1D"):
        x = la.solve_triangular(np.stack([a, a]).astype(np.float32),
                                np.stack([b, 2 * b]).astype(np.float32))
    close(x[1], sl.solve_triangular(a, 2 * b), np.float32, condition(a))
    check_derivatives(lc.jit(lambda a, b: la.solve_triangular(a, b, trans=1)), [a, b],
                      diff_argnums=(0, 1))
    check_vmap(lambda a, b: la.solve_triangular(a, b, lower=False),
               [a.astype(np.float32), b.astype(np.float32)])


@settings(max_examples=10, deadline=None)
@given(seed=seeds, dtype=st.sampled_from([np.float32, np.complex64, np.float64]),
       method=st.sampled_from(["schur", "eigen"]))
def test_solve_sylvester_vs_scipy(seed, dtype, method):
    a, b = matrix(seed, (3, 3), dtype, "well"), matrix(seed + 1, (2, 2), dtype, "well")
    c = matrix(seed + 2, (3, 2), dtype)
    with x64(dtype):
        x = la.solve_sylvester(a, b, c, method=method)
        close(x, sl.solve_sylvester(a, b, c), dtype, 16 * condition(a) * condition(b))


def test_solve_sylvester_batches_singular_derivatives():
    a, b = matrix(5, (2, 3, 3), np.float32, "well"), matrix(6, (2, 2), np.float32, "well")
    c = matrix(7, (2, 3, 2), np.float32)
    x = la.solve_sylvester(a, b, c)
    close(x, np.stack([sl.solve_sylvester(a[i], b, c[i]) for i in range(2)]), np.float32,
          16 * condition(a) * condition(b))
    # eig(A) = {1, 2}, eig(B) = {-1}: A X + X B = C is singular.
    singular = la.solve_sylvester(np.diag(np.float32([1.0, 2.0])), np.float32([[-1.0]]),
                                  np.ones((2, 1), np.float32))
    assert np.all(np.isnan(singular))
    with lc.enable_x64():
        a64, b64, c64 = (np.asarray(m, np.float64) for m in (a[0], b, c[0]))
        check_derivatives(lc.jit(lambda c: la.solve_sylvester(a64, b64, c)), [c64])


def test_solver_errors():
    with pytest.raises(ValueError, match="assume_a"):
        la.solve(np.eye(2), np.ones(2), assume_a="unitary")
    with pytest.raises(ValueError, match="square matrix"):
        la.solve(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="b must have shape"):
        la.solve(np.eye(2), np.ones(3))
    with pytest.raises(ValueError, match="do not broadcast"):
        la.solve(np.ones((2, 3, 3)), np.ones((4, 3, 1)))
    with pytest.raises(ValueError, match="square matrix"):
        la.inv(np.ones((2, 3)))
    with pytest.raises(ValueError, match="square matrix"):
        la.det(np.ones(3))
    with pytest.raises(ValueError, match="trans"):
        la.solve_triangular(np.eye(2), np.ones(2), trans=3)
    with pytest.raises(ValueError, match="b must have shape"):
        la.solve_triangular(np.eye(2), np.ones((3, 1)))
    with pytest.raises(ValueError, match="method"):
        la.solve_sylvester(np.eye(2), np.eye(2), np.eye(2), method="kron")
    with pytest.raises(ValueError, match=r"A must be \(2, 2\)"):
        la.solve_sylvester(np.eye(3), np.eye(2), np.ones((2, 2)))
