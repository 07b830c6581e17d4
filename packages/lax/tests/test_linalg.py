"""lamella.lax.linalg: factorizations against numpy.linalg / scipy.linalg
(reconstructions and values), batched inputs, float32/float64/complex, JVPs and
VJPs against numerical differences (float64), vmap against loops, jit against
eager, NaN-filled failures, and the error messages.

Eigen- and singular vectors are only fixed up to sign (or phase), so their
derivatives are checked through functions that do not depend on that choice:
``v diag(c) v^H`` and ``u diag(c) vt`` for a fixed vector c.
"""

import re

import numpy as np
import pytest
import scipy.linalg

import lamella.core as lc
import lamella.lax as lax
from lamella.lax import linalg
from lamella.lax.test_util import check_derivatives, check_jit_matches_eager, check_vmap

RNG = np.random.default_rng(0)


def tol(dtype):
    return {"float32": 2e-5, "complex64": 2e-5}.get(np.dtype(dtype).name, 1e-12)


def random(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def hermitian_pd(shape, dtype):
    """Well-conditioned Hermitian positive-definite matrices."""
    a = random(shape, dtype)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)).astype(dtype)


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def assert_close(actual, expected, dtype, scale=1.0):
    np.testing.assert_allclose(np.asarray(actual), expected, rtol=tol(dtype) * scale,
                               atol=tol(dtype) * scale)


@pytest.fixture(params=["float32", "float64", "complex64", "complex128"])
def dtype(request):
    # 64-bit dtypes need x64 on while the test runs.
    if request.param in ("float64", "complex128"):
        with lc.enable_x64():
            yield request.param
    else:
        yield request.param


# --- values ---------------------------------------------------------------------------


def test_cholesky_values(dtype):
    x = hermitian_pd((2, 3, 4, 4), dtype)
    factor = np.asarray(linalg.cholesky(x))
    assert factor.dtype == np.dtype(dtype) and factor.shape == x.shape
    assert_close(factor, np.linalg.cholesky(x), dtype, 10)
    assert_close(factor @ H(factor), x, dtype, 50)


def test_cholesky_symmetrizes_or_reads_lower_triangle():
    x = hermitian_pd((3, 3), np.float32)
    skewed = x + np.triu(np.ones((3, 3), np.float32), 1)
    expected = np.linalg.cholesky((skewed + skewed.T) / 2)
    assert_close(linalg.cholesky(skewed), expected, np.float32, 10)
    lower_only = np.tril(x) + np.triu(np.full((3, 3), 7.0, np.float32), 1)
    assert_close(linalg.cholesky(lower_only, symmetrize_input=False), np.linalg.cholesky(x),
                 np.float32, 10)


def test_cholesky_not_positive_definite_is_nan_per_batch_element():
    x = np.stack([np.eye(2), np.diag([1.0, -1.0])]).astype(np.float32)
    out = np.asarray(linalg.cholesky(x))
    np.testing.assert_array_equal(out[0], np.eye(2))
    assert np.isnan(out[1][np.tril_indices(2)]).all() and out[1][0, 1] == 0


@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a", [True, False])
@pytest.mark.parametrize("unit_diagonal", [True, False])
def test_triangular_solve_values(left_side, lower, transpose_a, unit_diagonal):
    dtype = np.float32
    a = random((2, 3, 3), dtype) + 3 * np.eye(3, dtype=dtype)
    b = random((2, 3, 2) if left_side else (2, 2, 3), dtype)
    out = linalg.triangular_solve(a, b, left_side=left_side, lower=lower,
                                  transpose_a=transpose_a, unit_diagonal=unit_diagonal)
    t = np.tril(a) if lower else np.triu(a)
    if unit_diagonal:
        t = t - t * np.eye(3) + np.eye(3)
    op = np.swapaxes(t, -1, -2) if transpose_a else t
    expected = np.linalg.solve(op, b) if left_side else np.swapaxes(
        np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
    assert_close(out, expected, dtype, 10)


@pytest.mark.parametrize("transpose_a", [True, False])
def test_triangular_solve_complex_conjugate(transpose_a):
    a = random((3, 3), np.complex64) + 3 * np.eye(3, dtype=np.complex64)
    b = random((3, 2), np.complex64)
    out = linalg.triangular_solve(a, b, left_side=True, lower=True, transpose_a=transpose_a,
                                  conjugate_a=True)
    op = np.conj(np.tril(a))
    op = op.T if transpose_a else op
    assert_close(out, np.linalg.solve(op, b), np.complex64, 10)


def test_triangular_solve_vector_b_matches_scipy():
    a = np.triu(random((4, 4), np.float32)) + 4 * np.eye(4, dtype=np.float32)
    b = random(4, np.float32)
    out = linalg.triangular_solve(a, b, left_side=True)
    assert out.shape == (4,)
    assert_close(out, scipy.linalg.solve_triangular(a, b, lower=False), np.float32, 10)
    row = linalg.triangular_solve(a, b, left_side=False)
    assert_close(row, np.linalg.solve(a.T, b), np.float32, 10)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5, 3), (3, 5)])
def test_lu_reconstructs(shape, dtype):
    x = random(shape, dtype)
    lu, pivots, perm = linalg.lu(x)
    lu, pivots, perm = map(np.asarray, (lu, pivots, perm))
    m, n = shape[-2:]
    k = min(m, n)
    assert pivots.dtype == perm.dtype == np.int32
    assert pivots.shape == (*shape[:-2], k) and perm.shape == (*shape[:-2], m)
    lower = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    upper = np.triu(lu[..., :k, :])
    permuted = np.take_along_axis(x, perm[..., None], axis=-2)
    assert_close(lower @ upper, permuted, dtype, 50)
    if len(shape) == 2 and m == n:
        _, scipy_pivots = scipy.linalg.lu_factor(x)
        np.testing.assert_array_equal(pivots, scipy_pivots)


def test_lu_singular_matrix_is_not_nan():
    lu, _, _ = linalg.lu(np.array([[1.0, 2.0], [2.0, 4.0]], np.float32))
    assert np.isfinite(np.asarray(lu)).all() and np.asarray(lu)[1, 1] == 0


def test_lu_pivots_to_permutation():
    pivots = np.array([[2, 2, 3], [0, 1, 2]], np.int32)
    perm = np.asarray(linalg.lu_pivots_to_permutation(pivots, 4))
    for p, row in zip(pivots, perm):
        expected = list(range(4))
        for i, j in enumerate(p):
            expected[i], expected[j] = expected[j], expected[i]
        np.testing.assert_array_equal(row, expected)


@pytest.mark.parametrize("shape,full_matrices", [((2, 5, 3), True), ((2, 5, 3), False),
                                                 ((3, 5), True), ((4, 4), False)])
def test_qr_reconstructs(shape, full_matrices, dtype):
    x = random(shape, dtype)
    q, r = map(np.asarray, linalg.qr(x, full_matrices=full_matrices))
    m, n = shape[-2:]
    k = m if full_matrices else min(m, n)
    assert q.shape == (*shape[:-2], m, k) and r.shape == (*shape[:-2], k, n)
    assert_close(q @ r, x, dtype, 50)
    assert_close(H(q) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)), dtype, 50)
    np.testing.assert_array_equal(r, np.triu(r))
    expected_r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")[1]
    assert_close(np.abs(r), np.abs(expected_r), dtype, 50)


def test_eigh_values(dtype):
    x = hermitian_pd((2, 3, 4, 4), dtype)
    v, w = map(np.asarray, linalg.eigh(x))
    assert w.dtype == np.zeros((), dtype).real.dtype and v.dtype == np.dtype(dtype)
    assert_close(w, np.linalg.eigvalsh(x), dtype, 100)
    assert_close((v * w[..., None, :]) @ H(v), x, dtype, 100)
    assert_close(H(v) @ v, np.broadcast_to(np.eye(4), x.shape), dtype, 50)


def test_eigh_reads_one_triangle_without_symmetrize():
    x = hermitian_pd((4, 4), np.float32)
    upper_only = np.triu(x) + np.tril(np.full((4, 4), 9.0, np.float32), -1)
    _, w = linalg.eigh(upper_only, lower=False, symmetrize_input=False)
    assert_close(w, np.linalg.eigvalsh(x), np.float32, 100)


@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 5), (4, 4)])
def test_svd_values(shape, dtype):
    x = random(shape, dtype)
    expected_s = np.linalg.svd(x, compute_uv=False)
    for full_matrices in (True, False):
        u, s, vt = map(np.asarray, linalg.svd(x, full_matrices=full_matrices))
        m, n = shape[-2:]
        k = min(m, n)
        ku, kv = (m, n) if full_matrices else (k, k)
        assert u.shape == (*shape[:-2], m, ku) and vt.shape == (*shape[:-2], kv, n)
        assert_close(s, expected_s, dtype, 50)
        assert_close((u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :], x, dtype, 50)
        assert_close(H(u) @ u, np.broadcast_to(np.eye(ku), u.shape[:-2] + (ku, ku)), dtype, 50)
    s_only = np.asarray(linalg.svd(x, compute_uv=False))
    assert s_only.dtype == np.zeros((), dtype).real.dtype
    assert_close(s_only, expected_s, dtype, 50)


# --- errors ---------------------------------------------------------------------------


def test_cholesky_non_square_names_the_shape():
    with pytest.raises(ValueError, match=re.escape("(2, 3, 4)")):
        linalg.cholesky(np.ones((2, 3, 4), np.float32))
    with pytest.raises(ValueError, match="square"):
        linalg.cholesky(np.ones((3, 4), np.float32), symmetrize_input=False)


def test_errors_for_bad_operands():
    with pytest.raises(ValueError, match="batch dimensions"):
        linalg.triangular_solve(np.eye(3, dtype=np.float32)[None].repeat(2, 0),
                                np.ones((3, 3, 2), np.float32), left_side=True)
    with pytest.raises(ValueError, match="must match"):
        linalg.triangular_solve(np.eye(3, dtype=np.float32), np.ones((2, 3), np.float32),
                                left_side=True)
    with pytest.raises(TypeError, match="int32"):
        linalg.lu(np.ones((3, 3), np.int32))
    with pytest.raises(ValueError, match="square"):
        linalg.eigh(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match=re.escape("(3,)")):
        linalg.svd(np.ones(3, np.float32))


def test_unimplemented_derivatives_raise():
    with lc.enable_x64():
        x = random((5, 3), np.float64)
        with pytest.raises(NotImplementedError, match="full_matrices"):
            lc.jvp(lambda x: linalg.svd(x)[0], (x,), (x,))


# --- derivatives, vmap, jit -----------------------------------------------------------


def _mul_columns(a, c):
    """a * c[None, :] for a matrix a (lax does not broadcast)."""
    return lax.mul(a, lax.broadcast_in_dim(lax.convert_element_type(c, a.dtype), a.shape,
                                           (a.ndim - 1,)))


def _matmul(a, b):
    return lax.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 2,)), ((), ())),
                           precision="highest")


def eigh_projector_sum(x):
    """v diag(1..n) v^T: smooth in x wherever eigenvalues are distinct."""
    v, _ = linalg.eigh(x)
    return _matmul(_mul_columns(v, np.arange(1.0, x.shape[-1] + 1)), lax.transpose(v, (1, 0)))


def svd_weighted(x):
    """u diag(1..k) vt: independent of the singular vectors' signs."""
    u, s, vt = linalg.svd(x, full_matrices=False)
    return _matmul(_mul_columns(u, np.arange(1.0, s.shape[-1] + 1)), vt)


def test_cholesky_grad_vmap_jit():
    x = hermitian_pd((4, 4), np.float64)
    check_derivatives(linalg.cholesky, [x])
    check_vmap(linalg.cholesky, [x.astype(np.float32)])
    check_jit_matches_eager(linalg.cholesky, [hermitian_pd((2, 3, 3), np.float32)])


@pytest.mark.parametrize("left_side,lower,transpose_a,unit_diagonal", [
    (True, True, False, False), (False, False, True, True), (True, False, True, False),
    (False, True, False, False)])
def test_triangular_solve_grad_vmap_jit(left_side, lower, transpose_a, unit_diagonal):
    a = random((4, 4), np.float64) + 4 * np.eye(4)
    b = random((4, 2) if left_side else (2, 4), np.float64)

    def solve(a, b):
        return linalg.triangular_solve(a, b, left_side=left_side, lower=lower,
                                       transpose_a=transpose_a, unit_diagonal=unit_diagonal)
    check_derivatives(solve, [a, b], diff_argnums=(0, 1))
    if left_side and lower:
        args32 = [a.astype(np.float32), b.astype(np.float32)]
        check_vmap(solve, args32)
        check_jit_matches_eager(solve, args32)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_lu_grad(shape):
    check_derivatives(lambda x: linalg.lu(x)[0], [random(shape, np.float64)])


def test_lu_vmap_jit():
    x = random((4, 4), np.float32)
    check_vmap(linalg.lu, [x])
    check_jit_matches_eager(linalg.lu, [random((2, 5, 3), np.float32)])


@pytest.mark.parametrize("shape,full_matrices", [((5, 3), False), ((4, 4), False),
                                                 ((5, 3), True), ((3, 5), True)])
def test_qr_grad(shape, full_matrices):
    # JAX 0.10.2 differentiates all shapes: wide, and full q of tall matrices.
    def stacked(x):
        q, r = linalg.qr(x, full_matrices=full_matrices)
        return lax.concatenate([lax.reshape(q, (q.size,)), lax.reshape(r, (r.size,))], 0)
    check_derivatives(stacked, [random(shape, np.float64)])


def test_qr_vmap_jit():
    x = random((5, 3), np.float32)
    check_vmap(lambda x: linalg.qr(x, full_matrices=True), [x])
    check_jit_matches_eager(lambda x: linalg.qr(x, full_matrices=False), [x])


def test_eigh_grad_vmap_jit():
    x = hermitian_pd((4, 4), np.float64)
    check_derivatives(lambda x: linalg.eigh(x)[1], [x])
    check_derivatives(eigh_projector_sum, [x])
    check_vmap(lambda x: linalg.eigh(x)[1], [x.astype(np.float32)])
    check_jit_matches_eager(linalg.eigh, [x.astype(np.float32)])


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_svd_grad(shape):
    x = random(shape, np.float64)
    check_derivatives(lambda x: linalg.svd(x, compute_uv=False), [x])
    check_derivatives(svd_weighted, [x])


def test_svd_vmap_jit():
    x = random((5, 3), np.float32)
    check_vmap(lambda x: linalg.svd(x, compute_uv=False), [x])
    check_vmap(svd_weighted, [x])
    check_jit_matches_eager(lambda x: linalg.svd(x, full_matrices=False), [x])


def test_complex_jvps_against_differences():
    # Holomorphic-free checks: real-valued outputs of complex inputs (eigenvalues,
    # singular values) and the factors themselves, against central differences.
    with lc.enable_x64():
        x = hermitian_pd((3, 3), np.complex128)
        t = random((3, 3), np.complex128)
        t = t + H(t)
        eps = 1e-6
        for fun in (lambda x: linalg.eigh(x)[1], linalg.cholesky,
                    lambda x: linalg.svd(x, compute_uv=False),
                    lambda x: linalg.qr(x, full_matrices=False)[1]):
            _, tangent = lc.jvp(fun, (x,), (t,))
            numeric = (np.asarray(fun(x + eps * t)) - np.asarray(fun(x - eps * t))) / (2 * eps)
            np.testing.assert_allclose(np.asarray(tangent), numeric, rtol=1e-6, atol=1e-6)


def test_vmap_over_batched_inputs_and_middle_axis():
    x = hermitian_pd((2, 3, 3), np.float32)
    stacked = np.stack([x, x + np.eye(3, dtype=np.float32)], axis=1)  # (2, 2, 3, 3)
    out = lc.vmap(linalg.cholesky, in_axes=1)(stacked)
    expected = np.stack([np.linalg.cholesky(stacked[:, i]) for i in range(2)])
    assert_close(out, expected, np.float32, 10)


# --- eig and schur ------------------------------------------------------------------


def test_eig_values(dtype):
    x = random((2, 3, 4, 4), dtype)
    w, vl, vr = map(np.asarray, linalg.eig(x))
    complex_dtype = np.result_type(dtype, np.complex64)
    assert w.dtype == vl.dtype == vr.dtype == complex_dtype
    assert_close(x @ vr, vr * w[..., None, :], dtype, 100)
    assert_close(H(vl) @ x, w[..., :, None] * H(vl), dtype, 100)
    assert_close(np.linalg.norm(vr, axis=-2), np.ones(w.shape), dtype, 10)
    expected = np.linalg.eigvals(x)
    assert_close(np.sort_complex(w.reshape(-1, 4)), np.sort_complex(expected.reshape(-1, 4)),
                 dtype, 100)
    right_only = linalg.eig(x, compute_left_eigenvectors=False)
    assert len(right_only) == 2
    assert_close(right_only[1], vr, dtype, 10)
    (values,) = linalg.eig(x, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    assert_close(values, w, dtype, 10)


def test_eig_non_finite_input_is_nan():
    x = np.array([[1.0, np.inf], [0.0, 1.0]], np.float32)
    assert np.isnan(np.asarray(linalg.eig(x)[0])).all()


def test_eig_eigenvalue_jvp_and_vjp():
    with lc.enable_x64():
        x = random((4, 4), np.float64)
        t = random((4, 4), np.float64)

        def values(x):
            return linalg.eig(x, compute_left_eigenvectors=False,
                              compute_right_eigenvectors=False)[0]
        w, dw = map(np.asarray, lc.jvp(values, (x,), (t,)))
        eps = 1e-6
        # Eigenvalues move continuously: match each to the nearest perturbed one.
        plus, minus = (np.asarray(values(x + s * eps * t)) for s in (1, -1))
        nearest = [(plus[np.argmin(abs(plus - v))] - minus[np.argmin(abs(minus - v))]) / (2 * eps)
                   for v in w]
        np.testing.assert_allclose(dw, nearest, rtol=1e-6, atol=1e-6)

        def power_sum(x):
            # real(sum w^3) = trace(x^3): order-free, so its gradient is 3 (x^2)^T.
            w = values(x)
            return lax.real(lax.reduce_sum(lax.mul(lax.mul(w, w), w), (0,)))
        np.testing.assert_allclose(np.asarray(lc.grad(power_sum)(x)), 3 * (x @ x).T,
                                   rtol=1e-9, atol=1e-9)
        with pytest.raises(NotImplementedError, match="eigenvectors"):
            lc.jvp(lambda x: linalg.eig(x)[0], (x,), (t,))


def test_eig_vmap_jit():
    x = random((3, 3), np.float32)
    check_vmap(lambda x: linalg.eig(x, compute_left_eigenvectors=False), [x])
    check_jit_matches_eager(linalg.eig, [x])


def test_schur_values(dtype):
    x = random((2, 4, 4), dtype)
    t, vs = map(np.asarray, linalg.schur(x))
    assert_close(vs @ t @ H(vs), x, dtype, 100)
    assert_close(H(vs) @ vs, np.broadcast_to(np.eye(4), x.shape), dtype, 50)
    for xi, ti in zip(x, t):
        expected = scipy.linalg.schur(xi, output="complex" if np.iscomplexobj(xi) else "real")[0]
        assert_close(np.abs(ti), np.abs(expected), dtype, 100)
    (t_only,) = linalg.schur(x, compute_schur_vectors=False)
    assert_close(t_only, t, dtype, 10)


def test_schur_vmap_jit_and_limits():
    x = random((3, 3), np.float32)
    check_vmap(linalg.schur, [x])
    check_jit_matches_eager(linalg.schur, [x])
    with pytest.raises(NotImplementedError, match="sort"):
        linalg.schur(x, sort_eig_vals=True)


@pytest.mark.parametrize("shape", [(3, 0), (0, 3), (2, 0, 0)])
def test_zero_size_matrices(shape):
    x = np.zeros(shape, np.float32)
    m, n = shape[-2:]
    batch = shape[:-2]
    u, s, vt = map(np.asarray, linalg.svd(x))
    assert s.shape == (*batch, 0)
    np.testing.assert_array_equal(u, np.broadcast_to(np.eye(m), (*batch, m, m)))
    np.testing.assert_array_equal(vt, np.broadcast_to(np.eye(n), (*batch, n, n)))
    q, r = map(np.asarray, linalg.qr(x))
    np.testing.assert_array_equal(q, np.broadcast_to(np.eye(m), (*batch, m, m)))
    assert r.shape == (*batch, m, n)
    assert [a.shape for a in linalg.lu(x)] == [shape, (*batch, 0), (*batch, m)]
    if m == n:
        assert linalg.cholesky(x).shape == linalg.eigh(x)[0].shape == linalg.schur(x)[0].shape \
            == shape
