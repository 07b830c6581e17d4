"""lamella.scipy.linalg's decompositions against SciPy (float32, complex64, and
float64 under enable_x64) on hypothesis inputs: cholesky, cho_factor/cho_solve,
lu/lu_factor/lu_solve, qr (modes, pivoting)/qr_multiply, svd, schur, rsf2csf,
eigh (standard and generalized, eigenvalue subsets), hessenberg; their
derivatives (float64 central differences), vmap against loops, jit against
eager, and bad input."""

import warnings

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings
from hypothesis import strategies as st
from linalg_checks import close, condition, matrix, x64

import lamella.core as lc
import lamella.numpy as lnp
from lamella.core.test_util import numerical_jvp
from lamella.lax.test_util import check_derivatives, check_vmap
from lamella.scipy import linalg as la

DTYPES = [np.float32, np.complex64, np.float64]
# (dtype, shape) pairs rather than their product: each pair compiles anew.
CASES = [(np.float32, (3, 3)), (np.complex64, (2, 3, 3)), (np.float64, (3, 3))]
seeds = st.integers(0, 2**16)


def hermitian_input(a):
    """A function of `a` made Hermitian first: derivatives of functions that read one
    triangle are only defined along Hermitian directions."""
    return (a + lnp.conj(lnp.swapaxes(a, -1, -2))) / 2


@settings(max_examples=10, deadline=None)
@given(seed=seeds, case=st.sampled_from(CASES), lower=st.booleans())
def test_cholesky_family_vs_scipy(seed, case, lower):
    dtype, shape = case
    a = matrix(seed, shape, dtype, "spd")
    b = matrix(seed + 1, shape[:-1] + (2,), dtype)
    with x64(dtype):
        # Only the named triangle is read: garbage in the other one changes nothing.
        garbage = np.triu(a, 1) if lower else np.tril(a, -1)
        c = la.cholesky(a + 7 * garbage, lower=lower)
        want = np.stack([sl.cholesky(m, lower=lower) for m in a.reshape(-1, 3, 3)])
        close(c, want.reshape(a.shape), dtype, condition(a) ** 0.5)
        factors = la.cho_factor(a, lower=lower)
        assert factors[1] == lower
        want_x = np.stack([sl.cho_solve(sl.cho_factor(m, lower=lower), r)
                           for m, r in zip(a.reshape(-1, 3, 3), b.reshape(-1, 3, 2))])
        close(la.cho_solve(factors, b), want_x.reshape(b.shape), dtype, condition(a))
        close(la.cho_solve(factors, b[..., 0]) if len(shape) == 2 else
              la.cho_solve(factors, b[..., :1])[..., 0],
              want_x.reshape(b.shape)[..., 0], dtype, condition(a))


def test_cholesky_of_indefinite_matrix_is_nan_and_empty_is_empty():
    c = np.asarray(la.cholesky(np.float32([[1.0, 2.0], [2.0, 1.0]])))
    assert np.all(np.isnan(c[np.triu_indices(2)]))
    assert la.cholesky(np.zeros((0, 0), np.float32)).shape == (0, 0)
    assert la.cholesky(np.eye(2, dtype=np.int32)).dtype == np.float32


def test_cho_solve_batched_vectors_warn_as_in_jax():
    a, b = matrix(0, (2, 3, 3), np.float32, "spd"), matrix(1, (2, 3), np.float32)
    with pytest.warns(FutureWarning, match="batched 1D"):
        x = la.cho_solve(la.cho_factor(a), b)
    close(x, np.linalg.solve(a, b[..., None])[..., 0], np.float32, condition(a))


def test_cholesky_derivatives_vmap_jit():
    a, b = matrix(2, (3, 3), np.float64, "spd"), matrix(3, (3, 2), np.float64)
    check_derivatives(lc.jit(lambda a: la.cholesky(hermitian_input(a))), [a])
    solve = lc.jit(lambda c, b: la.cho_solve((c, True), b))
    c = np.linalg.cholesky(a)
    check_derivatives(solve, [c, b], diff_argnums=(0, 1))
    check_vmap(la.cholesky, [a.astype(np.float32)])
    check_vmap(lambda c, b: la.cho_solve((c, False), b), [c.T.astype(np.float32),
                                                          b.astype(np.float32)])
    np.testing.assert_allclose(lc.jit(la.cholesky)(a.astype(np.float32)),
                               la.cholesky(a.astype(np.float32)), rtol=1e-6)


@settings(max_examples=10, deadline=None)
@given(seed=seeds, case=st.sampled_from(CASES + [(np.float32, (4, 3)), (np.float64, (3, 4))]))
def test_lu_vs_scipy(seed, case):
    dtype, shape = case
    a = matrix(seed, shape, dtype)
    with x64(dtype):
        p, l_, u = la.lu(a)
        pl, u2 = la.lu(a, permute_l=True)
        for i, m in enumerate(a.reshape(-1, *shape[-2:])):
            index = np.unravel_index(i, shape[:-2])
            wp, wl, wu = sl.lu(m)
            np.testing.assert_array_equal(np.asarray(p)[index], wp)
            close(np.asarray(l_)[index], wl, dtype, 4)
            close(np.asarray(u)[index], wu, dtype, 4)
        close(pl @ u2, a, dtype, 8)
        if shape[-1] == shape[-2]:
            lu_, piv = la.lu_factor(a)
            assert piv.dtype == np.int32
            b = matrix(seed + 1, shape[:-1] + (2,), dtype)
            for trans in (0, 1, 2):
                want = np.stack([sl.lu_solve(sl.lu_factor(m), r, trans=trans)
                                 for m, r in zip(a.reshape(-1, 3, 3), b.reshape(-1, 3, 2))])
                close(la.lu_solve((lu_, piv), b, trans=trans), want.reshape(b.shape), dtype,
                      condition(a))
            if len(shape) == 2:
                w_lu, w_piv = sl.lu_factor(a)
                np.testing.assert_array_equal(piv, w_piv)
                close(lu_, w_lu, dtype, 4)


def test_lu_solve_vector_singular_and_derivatives():
    a, b = matrix(4, (3, 3), np.float64, "well"), matrix(5, (3,), np.float64)
    close(la.lu_solve(la.lu_factor(a.astype(np.float32)), b.astype(np.float32)),
          np.linalg.solve(a, b), np.float32, condition(a))
    assert not np.all(np.isfinite(la.lu_solve(la.lu_factor(np.zeros((2, 2), np.float32)),
                                              np.ones(2, np.float32))))
    packed, piv = sl.lu_factor(a)
    check_derivatives(lc.jit(lambda lu_, b: la.lu_solve((lu_, piv), b, trans=1)),
                      [packed, b], diff_argnums=(0, 1))
    check_derivatives(lc.jit(lambda a: la.lu(a)[2]), [a])
    check_vmap(lambda m: la.lu(m)[1], [a.astype(np.float32)])


@settings(max_examples=10, deadline=None)
@given(seed=seeds, case=st.sampled_from([(np.float32, (4, 3)), (np.complex64, (2, 3, 4)),
                                         (np.float64, (4, 3))]),
       mode=st.sampled_from(["full", "economic", "r"]))
def test_qr_vs_scipy(seed, case, mode):
    dtype, shape = case
    a = matrix(seed, shape, dtype)
    with x64(dtype):
        for pivoting in (False, True):
            out = la.qr(a, mode=mode, pivoting=pivoting)
            for i, m in enumerate(a.reshape(-1, *shape[-2:])):
                index = np.unravel_index(i, shape[:-2])
                want = sl.qr(m, mode=mode, pivoting=pivoting)
                if pivoting:
                    np.testing.assert_array_equal(np.asarray(out[-1])[index], want[-1])
                for got, w in zip(out[:len(out) - pivoting], want[:len(want) - pivoting]):
                    close(np.asarray(got)[index], w, dtype, condition(m))


@settings(max_examples=10, deadline=None)
@given(seed=seeds, dtype=st.sampled_from(DTYPES), mode=st.sampled_from(["left", "right"]),
       conjugate=st.booleans(), pivoting=st.booleans(), vector=st.booleans())
def test_qr_multiply_vs_scipy(seed, dtype, mode, conjugate, pivoting, vector):
    a = matrix(seed, (4, 3), dtype)
    c = matrix(seed + 1, (3,) if mode == "left" else (4,), dtype)
    c = c if vector else np.stack([c, 2 * c], axis=-1 if mode == "left" else 0)
    with x64(dtype):
        got = la.qr_multiply(a, c, mode=mode, conjugate=conjugate, pivoting=pivoting)
        want = sl.qr_multiply(a, c, mode=mode, conjugate=conjugate, pivoting=pivoting)
        for g, w in zip(got, want):
            if np.asarray(g).dtype.kind == "i":
                np.testing.assert_array_equal(g, w)
            else:
                close(g, w, dtype, condition(a))


def test_qr_derivatives_and_vmap():
    a = matrix(6, (4, 3), np.float64)
    check_derivatives(lc.jit(lambda a: la.qr(a, mode="economic")[0]), [a])
    check_derivatives(lc.jit(lambda a: la.qr(a, mode="r")[0]), [a])
    # Pivoted: the column order is locally constant, so q and r differentiate as QR of a[:, p].
    for i in (0, 1):
        check_derivatives(lc.jit(lambda a, i=i: la.qr(a, mode="economic", pivoting=True)[i]),
                          [a])
    check_derivatives(lc.jit(lambda a, c: la.qr_multiply(a, c, pivoting=True)[0]),
                      [a, a[:, :2].T], (0, 1))
    check_vmap(lambda m: la.qr(m, pivoting=True)[1], [a.astype(np.float32)])
    check_vmap(lambda m: la.qr(m, pivoting=True)[2], [a.astype(np.float32)])


@settings(max_examples=10, deadline=None)
@given(seed=seeds, case=st.sampled_from([(np.float32, (4, 3)), (np.complex64, (2, 3, 3)),
                                         (np.float64, (4, 3))]), full=st.booleans())
def test_svd_vs_scipy(seed, case, full):
    dtype, shape = case
    a = matrix(seed, shape, dtype)
    with x64(dtype):
        u, s, vh = la.svd(a, full_matrices=full)
        want = np.linalg.svd(a, compute_uv=False)
        close(s, want, np.finfo(dtype).dtype, 8)
        close(la.svd(a, compute_uv=False, lapack_driver="gesvd"), want,
              np.finfo(dtype).dtype, 8)
        k = min(shape[-2:])
        close((u[..., :, :k] * s[..., None, :].astype(u.dtype)) @ vh[..., :k, :], a, dtype, 8)


def test_svd_derivatives_and_vmap():
    a = matrix(7, (4, 3), np.float64)
    check_derivatives(lc.jit(lambda a: la.svd(a, compute_uv=False)), [a])
    check_vmap(lambda m: la.svd(m, compute_uv=False), [a.astype(np.float32)])


@settings(max_examples=10, deadline=None)
@given(seed=seeds, dtype=st.sampled_from(DTYPES), output=st.sampled_from(["real", "complex"]))
def test_schur_and_rsf2csf_vs_scipy(seed, dtype, output):
    a = matrix(seed, (4, 4), dtype)
    with x64(dtype):
        t, z = la.schur(a, output=output)
        wt, wz = sl.schur(a, output=output)
        out_dtype = dtype if output == "real" else np.result_type(dtype, np.complex64)
        close(z @ t @ np.conj(z.T), a, out_dtype, 16)
        close(t, wt, out_dtype, 4 * condition(a))
        if np.dtype(dtype).kind == "f" and output == "real":
            ct, cz = la.rsf2csf(wt.astype(dtype), wz.astype(dtype))
            want_t, want_z = sl.rsf2csf(wt, wz)
            c_dtype = np.result_type(dtype, np.complex64)
            close(ct, want_t, c_dtype, 16)
            close(cz, want_z, c_dtype, 16)
            close(np.tril(np.asarray(ct), -1), np.zeros((4, 4)), c_dtype)


def test_rsf2csf_batches_and_jits():
    t, z = sl.schur(matrix(8, (4, 4), np.float64))
    tz = [np.stack([t, t]).astype(np.float32), np.stack([z, z]).astype(np.float32)]
    got = la.rsf2csf(*tz)
    want = sl.rsf2csf(t, z)
    for g, w in zip(got, want):
        close(g, np.stack([w, w]), np.complex64, 16)
    jitted = lc.jit(la.rsf2csf)(*tz)
    for g, j in zip(got, jitted):
        np.testing.assert_allclose(g, j, rtol=1e-6, atol=1e-6)


@settings(max_examples=15, deadline=None)
@given(seed=seeds, case=st.sampled_from(CASES), lower=st.booleans(),
       generalized=st.sampled_from([None, 1, 2, 3]))
def test_eigh_vs_scipy(seed, case, lower, generalized):
    dtype, shape = case
    a = matrix(seed, shape, dtype, "hermitian")
    b = matrix(seed + 1, shape, dtype, "spd")
    half = (lambda m: np.tril(m)) if lower else (lambda m: np.triu(m))
    real = np.finfo(dtype).dtype
    with x64(dtype):
        if generalized is None:
            w, v = la.eigh(half(a), lower=lower)
            want = np.linalg.eigvalsh(a)
            close(w, want, real, 8)
            close(v @ (w[..., None] * np.conj(np.swapaxes(v, -1, -2))), a, dtype, 16)
        else:
            w, v = la.eigh(half(a), half(b), lower=lower, type=generalized)
            for i, (m, n) in enumerate(zip(a.reshape(-1, 3, 3), b.reshape(-1, 3, 3))):
                index = np.unravel_index(i, shape[:-2])
                ww, wv = sl.eigh(m, n, type=generalized)
                close(np.asarray(w)[index], ww, real, 8 * condition(n) ** 2)
                # Eigenvectors are unique up to a unit factor per column: compare |v^H b v_ref|.
                got_v = np.asarray(v)[index].astype(np.complex128)
                gram = np.conj(got_v.T) @ (n if generalized < 3 else np.linalg.inv(n)) @ wv
                close(np.abs(gram).astype(real), np.eye(3), real, 64 * condition(n) ** 2)
        close(la.eigh(a, eigvals_only=True, eigvals=(1, 2)), np.linalg.eigvalsh(a)[..., 1:],
              real, 8)
        # SciPy's newer name for eigvals; the vectors are those of the whole problem.
        w_all, v_all = la.eigh(a, b if generalized else None, type=generalized or 1)
        w_sub, v_sub = la.eigh(a, b if generalized else None, type=generalized or 1,
                               subset_by_index=(0, 1))
        close(w_sub, np.asarray(w_all)[..., :2], real, 1)
        close(v_sub, np.asarray(v_all)[..., :2], dtype, 1)


def test_eigh_derivatives_and_vmap():
    a = matrix(9, (3, 3), np.float64, "hermitian")
    check_derivatives(lc.jit(lambda a: la.eigh(hermitian_input(a), eigvals_only=True)), [a])
    check_derivatives(lc.jit(lambda a: la.eigh(hermitian_input(a), eigvals=(1, 2))[1]), [a])
    b = matrix(10, (3, 3), np.float64, "spd")
    check_derivatives(lc.jit(lambda a, b: la.eigh(hermitian_input(a), hermitian_input(b),
                                                  eigvals_only=True)), [a, b], (0, 1))
    check_vmap(lambda m: la.eigh(m, eigvals_only=True), [a.astype(np.float32)])


@settings(max_examples=10, deadline=None)
@given(seed=seeds, dtype=st.sampled_from(DTYPES), n=st.sampled_from([1, 4]))
def test_hessenberg_vs_scipy(seed, dtype, n):
    a = matrix(seed, (n, n), dtype)
    with x64(dtype):
        h, q = la.hessenberg(a, calc_q=True)
        wh, wq = sl.hessenberg(a, calc_q=True)
        close(h, wh, dtype, 16 * condition(a))
        close(q, wq, dtype, 16 * condition(a))
        close(q @ h @ np.conj(q.T), a, dtype, 16)
        close(la.hessenberg(a), wh, dtype, 16 * condition(a))


def test_hessenberg_batches_jits_and_differentiates():
    a = matrix(11, (2, 5, 5), np.float32)
    h = la.hessenberg(a)
    close(h, np.stack([sl.hessenberg(m) for m in a]), np.float32, 16 * condition(a))
    np.testing.assert_allclose(lc.jit(la.hessenberg)(a), h, rtol=1e-5, atol=1e-5)
    check_vmap(lambda m: la.hessenberg(m, calc_q=True)[1], [a])
    # The kernels have no derivative: h's and q's come from the implicit Q theorem.
    check_derivatives(lc.jit(la.hessenberg), [a[0]])
    check_derivatives(lc.jit(lambda m: la.hessenberg(m, calc_q=True)[1]), [a[0]])
    # Complex: JVP against central differences (h keeps a real subdiagonal).
    c = matrix(12, (4, 4), np.complex128)
    tangent = matrix(13, (4, 4), np.complex128)
    with lc.enable_x64():
        for i in (0, 1):
            def fun(m, i=i):
                return la.hessenberg(m, calc_q=True)[i]
            _, got = lc.jvp(fun, (c,), (tangent,))
            np.testing.assert_allclose(got, numerical_jvp(fun, (c,), (tangent,)), rtol=1e-6,
                                       atol=1e-6)
    assert la.hessenberg(np.zeros((0, 0), np.float32)).shape == (0, 0)
    # Two-by-two matrices are Hessenberg already: returned as they are, as SciPy.
    two = matrix(14, (2, 2), np.complex64)
    h2, q2 = la.hessenberg(two, calc_q=True)
    np.testing.assert_array_equal(h2, two)
    np.testing.assert_array_equal(q2, np.eye(2))


def test_decomposition_errors():
    with pytest.raises(ValueError, match="square matrix"):
        la.cholesky(np.ones((2, 3)))
    with pytest.raises(ValueError, match="square matrix"):
        la.hessenberg(np.ones(3))
    with pytest.raises(ValueError, match="square matrix"):
        la.eigh(np.ones((2, 3)))
    with pytest.raises(ValueError, match="type"):
        la.eigh(np.eye(2), np.eye(2), type=4)
    with pytest.raises(ValueError, match="one size"):
        la.eigh(np.eye(2), np.eye(3))
    with pytest.raises(ValueError, match="eigvals"):
        la.eigh(np.eye(2), eigvals=(1, 2))
    with pytest.raises(ValueError, match="subset_by_index"):
        la.eigh(np.eye(2), subset_by_index=(1, 0))
    with pytest.raises(ValueError, match="not both"):
        la.eigh(np.eye(2), eigvals=(0, 1), subset_by_index=(0, 1))
    with pytest.raises(ValueError, match="mode"):
        la.qr(np.eye(2), mode="raw")
    with pytest.raises(ValueError, match="rows for q @ c"):
        la.qr_multiply(np.ones((4, 3)), np.ones((4, 2)), mode="left")
    with pytest.raises(ValueError, match="columns for c @ q"):
        la.qr_multiply(np.ones((4, 3)), np.ones(3))
    with pytest.raises(ValueError, match="mode"):
        la.qr_multiply(np.ones((4, 3)), np.ones(4), mode="up")
    with pytest.raises(ValueError, match="lapack_driver"):
        la.svd(np.eye(2), lapack_driver="gejsv")
    with pytest.raises(ValueError, match="output"):
        la.schur(np.eye(2), output="x")
    with pytest.raises(ValueError, match="same shape"):
        la.rsf2csf(np.eye(2), np.eye(3))
    with pytest.raises(ValueError, match="trans"):
        la.lu_solve(la.lu_factor(np.eye(2)), np.ones(2), trans=3)
    with pytest.raises(ValueError, match="b must have shape"):
        la.lu_solve(la.lu_factor(np.eye(2)), np.ones(3))
    with pytest.raises(TypeError, match="pair"):
        la.cho_solve(np.eye(3), np.ones(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        la.cho_solve(la.cho_factor(np.eye(2)), np.ones((2, 1)))
