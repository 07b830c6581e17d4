"""The rest of lamella.lax.linalg (jax.lax.linalg 0.10.2): hessenberg, tridiagonal,
householder_product, ormqr, tridiagonal_solve, pivoted qr, eigh/svd subsets and
algorithms, eig eigenvector derivatives, cholesky_update, symmetric_product,
qdwh and the *_p primitives.

Values are compared with SciPy's LAPACK wrappers and NumPy in every LAPACK
dtype (batched through a loop), with tolerances of a few ulps times the size
of the problem, never bit for bit; derivatives against central differences
(float64); vmap against loops; jit against eager.
"""

import inspect
import re
import warnings

import numpy as np
import pytest
import scipy.linalg
import scipy.linalg.lapack as lapack
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
import lamella.lax as lax
from lamella.lax import linalg
from lamella.lax.test_util import check_derivatives, check_jit_matches_eager, check_vmap

RNG = np.random.default_rng(1)
DTYPES = ["float32", "float64", "complex64", "complex128"]


def ulps(dtype, k=50):
    """k units in the last place of `dtype`'s real type: the tolerance of a small solve."""
    return k * np.finfo(np.dtype(dtype)).eps


def random(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def H(x):
    return np.conj(np.swapaxes(x, -1, -2))


def close(actual, expected, dtype, k=50):
    actual = np.asarray(actual)
    np.testing.assert_allclose(actual, expected, rtol=ulps(dtype, k), atol=ulps(dtype, k))


def lapack_routine(name, dtype):
    """SciPy's wrapper of LAPACK routine `name` (e.g. "gehrd") for `dtype`."""
    return lapack.get_lapack_funcs(name, dtype=np.dtype(dtype))


@pytest.fixture(params=DTYPES)
def dtype(request):
    if request.param in ("float64", "complex128"):
        with lc.enable_x64():
            yield request.param
    else:
        yield request.param


def as_real(x):
    """Real and imaginary parts of a complex result side by side (real derivative checks)."""
    return lax.concatenate([lax.real(x), lax.imag(x)], x.ndim - 1)


def matmul(a, b):
    return lax.dot_general(a, b, (((a.ndim - 1,), (b.ndim - 2,)), ((), ())),
                           precision="highest")


# --- the public names and signatures ----------------------------------------------------

# inspect.signature of jax.lax.linalg's functions in JAX 0.10.2: (name, default) in order.
JAX_SIGNATURES = {
    "cholesky": [("x", None), ("symmetrize_input", "True")],
    "cholesky_update": [("r_matrix", None), ("w_vector", None)],
    "eig": [("x", None), ("compute_left_eigenvectors", "True"),
            ("compute_right_eigenvectors", "True"), ("enable_eigvec_derivs", "False"),
            ("implementation", "None"), ("use_magma", "None")],
    "eigh": [("x", None), ("lower", "True"), ("symmetrize_input", "True"),
             ("sort_eigenvalues", "True"), ("subset_by_index", "None"),
             ("implementation", "None")],
    "hessenberg": [("a", None)],
    "householder_product": [("a", None), ("taus", None)],
    "lu": [("x", None)],
    "lu_pivots_to_permutation": [("pivots", None), ("permutation_size", None)],
    "ormqr": [("a", None), ("taus", None), ("c", None), ("left", "True"),
              ("transpose", "False")],
    "qdwh": [("x", None), ("is_hermitian", "False"), ("max_iterations", "None"),
             ("eps", "None"), ("dynamic_shape", "None")],
    "qr": [("x", None), ("pivoting", "False"), ("full_matrices", "True"), ("use_magma", "None")],
    "schur": [("x", None), ("compute_schur_vectors", "True"), ("sort_eig_vals", "False"),
              ("select_callable", "None")],
    "svd": [("x", None), ("full_matrices", "True"), ("compute_uv", "True"),
            ("subset_by_index", "None"), ("algorithm", "None")],
    "symmetric_product": [("a_matrix", None), ("c_matrix", None), ("alpha", "1.0"),
                          ("beta", "0.0"), ("symmetrize_output", "False")],
    "triangular_solve": [("a", None), ("b", None), ("left_side", "False"), ("lower", "False"),
                         ("transpose_a", "False"), ("conjugate_a", "False"),
                         ("unit_diagonal", "False")],
    "tridiagonal": [("a", None), ("lower", "True")],
    "tridiagonal_solve": [("dl", None), ("d", None), ("du", None), ("b", None),
                          ("perturb_singular", "False")],
}


@pytest.mark.parametrize("name", sorted(JAX_SIGNATURES))
def test_signature_matches_jax(name):
    params = inspect.signature(getattr(linalg, name)).parameters.values()
    got = [(p.name, None if p.default is inspect.Parameter.empty else repr(p.default))
           for p in params]
    assert got == JAX_SIGNATURES[name]
    primitive = getattr(linalg, f"{name}_p", None)
    if name != "qdwh":
        assert primitive.name == name


def test_enums_match_jax():
    assert [(m.name, m.value) for m in linalg.SvdAlgorithm] == [
        ("DEFAULT", "default"), ("QR", "QR"), ("JACOBI", "Jacobi"), ("POLAR", "polar"),
        ("DIVIDE_AND_CONQUER", "divide_and_conquer")]
    assert [(m.name, m.value) for m in linalg.EighImplementation] == [
        ("QR", "qr"), ("JACOBI", "jacobi"), ("QDWH", "qdwh")]
    assert [(m.name, m.value) for m in linalg.EigImplementation] == [
        ("CUSOLVER", "cusolver"), ("MAGMA", "magma"), ("LAPACK", "lapack")]


def test_linalg_is_an_attribute_of_lax():
    assert lax.linalg is linalg


# --- hessenberg and tridiagonal -----------------------------------------------------------


def test_hessenberg_matches_lapack_gehrd(dtype):
    x = random((2, 5, 5), dtype)
    a, taus = map(np.asarray, linalg.hessenberg(x))
    assert a.dtype == taus.dtype == np.dtype(dtype) and taus.shape == (2, 4)
    gehrd = lapack_routine("gehrd", dtype)
    for xi, ai, ti in zip(x, a, taus):
        expected_a, expected_tau, info = gehrd(xi)
        assert info == 0
        close(ai, expected_a, dtype)
        close(ti, expected_tau[:4], dtype)
    # Q = blockdiag(1, householder_product(a[1:, :-1], taus)) and H = Q^H x Q.
    q = np.asarray(linalg.householder_product(a[:, 1:, :-1], taus))
    q = np.concatenate([np.zeros((2, 4, 1), dtype), q], axis=2)
    q = np.concatenate([np.eye(1, 5, dtype=dtype)[None].repeat(2, 0), q], axis=1)
    hess = np.triu(a, -1)
    close(q @ hess @ H(q), x, dtype, 200)
    close(hess[0], scipy.linalg.hessenberg(x[0]), dtype)


def test_tridiagonal_matches_lapack_sytrd_hetrd(dtype):
    x = random((2, 4, 4), dtype)
    routine = lapack_routine("hetrd" if np.dtype(dtype).kind == "c" else "sytrd", dtype)
    real = np.zeros((), dtype).real.dtype
    for lower in (True, False):
        a, d, e, taus = map(np.asarray, linalg.tridiagonal(x, lower=lower))
        assert d.dtype == e.dtype == real and taus.dtype == np.dtype(dtype)
        assert (a.shape, d.shape, e.shape, taus.shape) == ((2, 4, 4), (2, 4), (2, 3), (2, 3))
        for xi, ai, di, ei, ti in zip(x, a, d, e, taus):
            expected = routine(xi, lower=int(lower))
            assert expected[-1] == 0
            for got, want in zip((ai, di, ei, ti), expected[:4]):
                close(got, want, dtype)
            # Only one triangle is read: T has the eigenvalues of the Hermitian matrix it
            # and its conjugate transpose make.
            hermitian = np.tril(xi) + H(np.tril(xi, -1)) if lower else \
                np.triu(xi) + H(np.triu(xi, 1))
            hermitian[np.diag_indices(4)] = np.diag(hermitian).real
            tri = np.diag(di) + np.diag(ei, 1) + np.diag(ei, -1)
            close(np.linalg.eigvalsh(tri), np.linalg.eigvalsh(hermitian), dtype, 200)


def test_condensed_forms_vmap_jit_and_errors():
    x = random((4, 4), np.float32)
    check_vmap(linalg.hessenberg, [x])
    check_vmap(lambda x: linalg.tridiagonal(x, lower=False), [x])
    check_jit_matches_eager(linalg.hessenberg, [x])
    check_jit_matches_eager(linalg.tridiagonal, [x])
    with pytest.raises(ValueError, match=re.escape("square matrices, shape (..., n, n); got "
                                                   "shape (3, 4)")):
        linalg.hessenberg(np.ones((3, 4), np.float32))
    with pytest.raises(ValueError, match="at least 1-by-1"):
        linalg.tridiagonal(np.ones((0, 0), np.float32))
    with pytest.raises(TypeError, match="int32"):
        linalg.hessenberg(np.ones((3, 3), np.int32))
    a, taus = linalg.hessenberg(np.full((1, 1), 2.0, np.float32))
    assert np.asarray(a) == 2.0 and taus.shape == (0,)


def test_hessenberg_non_finite_is_nan_per_batch_element():
    x = np.stack([np.eye(3), np.full((3, 3), np.nan)]).astype(np.float32)
    a, _ = map(np.asarray, linalg.hessenberg(x))
    np.testing.assert_array_equal(a[0], np.eye(3))
    assert np.isnan(a[1]).all()


# --- householder_product and ormqr --------------------------------------------------------


def test_householder_product_matches_orgqr(dtype):
    x = random((2, 5, 3), dtype)
    geqrf = lapack_routine("geqrf", dtype)
    orgqr = lapack_routine("ungqr" if np.dtype(dtype).kind == "c" else "orgqr", dtype)
    raw = [geqrf(xi)[:2] for xi in x]
    a = np.stack([r[0] for r in raw])
    taus = np.stack([r[1] for r in raw])
    q = np.asarray(linalg.householder_product(a, taus))
    for ai, ti, qi in zip(a, taus, q):
        close(qi, orgqr(ai, ti)[0], dtype)
    # Fewer reflectors than columns: the remaining columns come from the identity.
    q2 = np.asarray(linalg.householder_product(a, taus[:, :2]))
    close(q2, np.stack([orgqr(ai, ti[:2])[0] for ai, ti in zip(a, taus)]), dtype)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_ormqr_applies_q_on_either_side(shape, dtype):
    x = random((2, *shape), dtype)
    m = shape[0]
    geqrf = lapack_routine("geqrf", dtype)
    raw = [geqrf(xi)[:2] for xi in x]
    a = np.stack([r[0] for r in raw])
    taus = np.stack([r[1] for r in raw])
    q = np.stack([np.linalg.qr(xi, mode="complete")[0] for xi in x])
    # Q is fixed up to the signs numpy's own geqrf also picks: compare with its Q.
    c_left = random((2, m, 2), dtype)
    c_right = random((2, 2, m), dtype)
    for left in (True, False):
        for transpose in (False, True):
            c = c_left if left else c_right
            op = H(q) if transpose else q
            expected = op @ c if left else c @ op
            out = linalg.ormqr(a, taus, c, left=left, transpose=transpose)
            assert out.dtype == np.dtype(dtype) and out.shape == c.shape
            close(out, expected, dtype, 100)


def test_householder_ormqr_vmap_jit_and_errors():
    a, taus = lapack.sgeqrf(random((4, 3), np.float32))[:2]
    c = random((4, 2), np.float32)
    check_vmap(linalg.householder_product, [a, taus])
    check_vmap(lambda a, t, c: linalg.ormqr(a, t, c, transpose=True), [a, taus, c])
    check_jit_matches_eager(lambda a, t, c: linalg.ormqr(a, t, c, left=True), [a, taus, c])
    with pytest.raises(ValueError, match="at least as many rows as columns"):
        linalg.householder_product(np.ones((2, 3), np.float32), np.ones(2, np.float32))
    with pytest.raises(ValueError, match=re.escape("k <= 3")):
        linalg.householder_product(a, np.ones(4, np.float32))
    with pytest.raises(ValueError, match="as many rows as a has rows"):
        linalg.ormqr(a, taus, np.ones((3, 2), np.float32))
    with pytest.raises(ValueError, match="as many columns as a has rows"):
        linalg.ormqr(a, taus, np.ones((4, 2), np.float32), left=False)
    with pytest.raises(TypeError, match="one dtype"):
        linalg.ormqr(a, taus, np.ones((4, 2), np.complex64))
    with pytest.raises(ValueError, match="batch"):
        linalg.householder_product(np.stack([a, a]), np.stack([taus] * 3))


# --- qr with column pivoting --------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 5)])
def test_qr_pivoting_matches_scipy(shape, dtype):
    x = random(shape, dtype)
    for full_matrices in (True, False):
        q, r, p = map(np.asarray, linalg.qr(x, pivoting=True, full_matrices=full_matrices))
        m, n = shape[-2:]
        k = m if full_matrices else min(m, n)
        assert p.dtype == np.int32 and p.shape == (*shape[:-2], n)
        assert q.shape == (*shape[:-2], m, k) and r.shape == (*shape[:-2], k, n)
        permuted = np.take_along_axis(x, p[..., None, :].repeat(m, -2), axis=-1)
        close(q @ r, permuted, dtype, 100)
        np.testing.assert_array_equal(r, np.triu(r))
        mode = "full" if full_matrices else "economic"
        for xi, ri, pi in zip(x.reshape(-1, m, n), r.reshape(-1, k, n), p.reshape(-1, n)):
            _, expected_r, expected_p = scipy.linalg.qr(xi, pivoting=True, mode=mode)
            np.testing.assert_array_equal(pi, expected_p)
            close(np.abs(ri), np.abs(expected_r), dtype, 100)


def test_qr_pivoting_orders_columns_and_handles_empty():
    x = np.array([[1.0, 0.0, 5.0], [0.0, 2.0, 0.0]], np.float32)
    _, r, p = linalg.qr(x, pivoting=True)
    np.testing.assert_array_equal(p, [2, 1, 0])
    assert abs(np.asarray(r)[0, 0]) == 5.0
    q, r, p = linalg.qr(np.zeros((0, 3), np.float32), pivoting=True)
    assert q.shape == (0, 0) and r.shape == (0, 3)
    np.testing.assert_array_equal(p, [0, 1, 2])


@pytest.mark.parametrize("shape,full_matrices", [((3, 5), True), ((4, 3), True)])
def test_qr_pivoting_grad(shape, full_matrices):
    x = random(shape, np.float64)

    def stacked(x):
        q, r, _ = linalg.qr(x, pivoting=True, full_matrices=full_matrices)
        return lax.concatenate([lax.reshape(q, (q.size,)), lax.reshape(r, (r.size,))], 0)
    check_derivatives(stacked, [x])


def test_qr_pivoting_vmap_jit():
    x = random((4, 3), np.float32)
    check_vmap(lambda x: linalg.qr(x, pivoting=True), [x])
    check_jit_matches_eager(lambda x: linalg.qr(x, pivoting=True, full_matrices=False), [x])


def test_complex_qr_pivoting_jvp_against_differences():
    with lc.enable_x64():
        x, t = random((4, 3), np.complex128), random((4, 3), np.complex128)

        def fun(x):
            q, r, _ = linalg.qr(x, pivoting=True, full_matrices=False)
            return r
        _, tangent = lc.jvp(fun, (x,), (t,))
        eps = 1e-6
        numeric = (np.asarray(fun(x + eps * t)) - np.asarray(fun(x - eps * t))) / (2 * eps)
        np.testing.assert_allclose(np.asarray(tangent), numeric, rtol=1e-6, atol=1e-6)


# --- tridiagonal_solve --------------------------------------------------------------------


def tridiagonal_system(batch, m, k, dtype, dominance=4.0):
    dl, d, du = (random((*batch, m), dtype) for _ in range(3))
    d = d + dominance
    b = random((*batch, m, k), dtype)
    return dl, d, du, b


def dense(dl, d, du):
    return np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)


def test_tridiagonal_solve_matches_solve_banded(dtype):
    dl, d, du, b = tridiagonal_system((2,), 5, 3, dtype)
    x = np.asarray(linalg.tridiagonal_solve(dl, d, du, b))
    assert x.dtype == np.dtype(dtype) and x.shape == b.shape
    for i in range(2):
        banded = np.stack([np.r_[0, du[i, :-1]], d[i], np.r_[dl[i, 1:], 0]])
        close(x[i], scipy.linalg.solve_banded((1, 1), banded, b[i]), dtype, 100)
        # dl[0] and du[m - 1] are outside the matrix: they are ignored.
        gtsv = lapack_routine("gtsv", dtype)
        close(x[i], gtsv(dl[i, 1:], d[i], du[i, :-1], b[i])[3], dtype, 100)
    perturbed = linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=True)
    close(perturbed, x, dtype, 100)


def test_tridiagonal_solve_singular_is_nan_unless_perturbed():
    dl = np.zeros((2, 3), np.float32)
    d = np.array([[1.0, 1.0, 1.0], [1.0, 0.0, 1.0]], np.float32)
    b = np.ones((2, 3, 1), np.float32)
    x = np.asarray(linalg.tridiagonal_solve(dl, d, dl, b))
    np.testing.assert_array_equal(x[0], b[0])
    assert np.isnan(x[1]).all()
    perturbed = np.asarray(linalg.tridiagonal_solve(dl, d, dl, b, perturb_singular=True))
    assert np.isfinite(perturbed).all()
    np.testing.assert_array_equal(perturbed[0], b[0])


_tridiagonal_solve_jit = lc.jit(linalg.tridiagonal_solve)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, width=32), min_size=12, max_size=12),
       st.sampled_from([1.0, 1e-3, 1e3]))
def test_tridiagonal_solve_hypothesis(values, scale):
    # Diagonally dominant systems (well conditioned) with wide-ranging entries.
    v = np.asarray(values, np.float64).reshape(4, 3) * scale
    dl, du, b = v[0], v[1], v[2:].T.copy()
    d = np.abs(dl) + np.abs(du) + np.abs(v[3]) + scale
    args = [a.astype(np.float32) for a in (dl, d, du, b)]
    x = np.asarray(_tridiagonal_solve_jit(*args))
    a64 = dense(*[a.astype(np.float64) for a in args[:3]])
    # Normwise backward error of a pivoted LU solve: a few ulps of |A| |x| + |b|.
    residual = np.abs(a64 @ x - args[3]).max(axis=0)
    # XLA flushes subnormal intermediates to zero: a b near float32's smallest normal
    # may lose itself entirely.
    bound = ulps(np.float32, 30) * (np.abs(a64).sum(1).max() * np.abs(x).max(axis=0)
                                    + np.abs(args[3]).max(axis=0)) + 4 * np.finfo(np.float32).tiny
    assert np.all(residual <= bound)


def test_tridiagonal_solve_derivatives_vmap_jit():
    dl, d, du, b = tridiagonal_system((), 4, 2, np.float64)
    check_derivatives(linalg.tridiagonal_solve, [dl, d, du, b], diff_argnums=(0, 1, 2, 3))
    check_derivatives(lambda d, b: linalg.tridiagonal_solve(dl, d, du, b), [d, b],
                      diff_argnums=(1,))
    args32 = [a.astype(np.float32) for a in (dl, d, du, b)]
    check_vmap(linalg.tridiagonal_solve, args32)
    check_jit_matches_eager(linalg.tridiagonal_solve, args32)


def test_vmap_at_a_middle_axis():
    dl, d, du, b = tridiagonal_system((), 4, 2, np.float32)
    bs = np.stack([b, 2 * b, -b], axis=1)  # (4, 3, 2): batched at axis 1
    out = lc.vmap(linalg.tridiagonal_solve, in_axes=(None, None, None, 1), out_axes=1)(
        dl, d, du, bs)
    expected = np.stack([np.linalg.solve(dense(dl, d, du), bs[:, i]) for i in range(3)], 1)
    close(out, expected, np.float32, 100)
    xs = random((4, 2, 4), np.float32)
    a, _ = lc.vmap(linalg.hessenberg, in_axes=1)(xs)
    close(a, np.stack([lapack.sgehrd(xs[:, i])[0] for i in range(2)]), np.float32)


def test_tridiagonal_solve_complex_vjp_is_the_transpose():
    with lc.enable_x64():
        dl, d, du, b = tridiagonal_system((), 4, 2, np.complex128)
        ct = random((4, 2), np.complex128)
        _, f_vjp = lc.vjp(lambda b: linalg.tridiagonal_solve(dl, d, du, b), b)
        (got,) = f_vjp(ct)
        np.testing.assert_allclose(np.asarray(got), np.linalg.solve(dense(dl, d, du).T, ct),
                                   rtol=1e-12, atol=1e-12)


def test_tridiagonal_solve_errors():
    v = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="one shape"):
        linalg.tridiagonal_solve(v, v, np.ones(4, np.float32), np.ones((3, 1), np.float32))
    with pytest.raises(TypeError, match=re.escape("(..., m, k) = (3,) + (k,)")):
        linalg.tridiagonal_solve(v, v, v, np.ones(3, np.float32))
    with pytest.raises(TypeError, match="one dtype"):
        linalg.tridiagonal_solve(v, v, v, np.ones((3, 1), np.complex64))


# --- eigh subsets and implementations ----------------------------------------------------


def hermitian(shape, dtype):
    a = random(shape, dtype)
    return (a + H(a)) / 2


def test_eigh_subset_matches_scipy(dtype):
    x = hermitian((2, 5, 5), dtype)
    v, w = map(np.asarray, linalg.eigh(x, subset_by_index=(1, 4)))
    assert v.shape == (2, 5, 3) and w.shape == (2, 3)
    for xi, vi, wi in zip(x, v, w):
        close(wi, scipy.linalg.eigh(xi, eigvals_only=True, subset_by_index=(1, 3)), dtype, 200)
        close(xi @ vi, vi * wi, dtype, 200)
    everything = linalg.eigh(x, subset_by_index=(0, 5))[1]
    close(everything, np.linalg.eigvalsh(x), dtype, 200)


def test_eigh_subset_grad_vmap_jit():
    x = hermitian((4, 4), np.float64) + np.diag([0.0, 1.0, 2.0, 3.0])

    def top_two(x):
        v, w = linalg.eigh(x, subset_by_index=(2, 4))
        # v diag(w) v^T is independent of the eigenvectors' signs.
        projected = matmul(lax.mul(v, lax.broadcast_in_dim(w, v.shape, (1,))),
                           lax.transpose(v, (1, 0)))
        return lax.concatenate([lax.reshape(projected, (16,)), w], 0)
    check_derivatives(top_two, [x])
    check_vmap(lambda x: linalg.eigh(x, subset_by_index=(1, 3))[1], [x.astype(np.float32)])
    check_jit_matches_eager(lambda x: linalg.eigh(x, subset_by_index=(0, 2)),
                            [x.astype(np.float32)])


def test_eigh_implementations_and_bad_subsets():
    x = hermitian((3, 3), np.float32)
    w = np.asarray(linalg.eigh(x)[1])
    np.testing.assert_array_equal(linalg.eigh(x, implementation=linalg.EighImplementation.QR)[1], w)
    np.testing.assert_array_equal(linalg.eigh(x, implementation="qr")[1], w)
    with pytest.raises(NotImplementedError, match="Jacobi"):
        linalg.eigh(x, implementation=linalg.EighImplementation.JACOBI)
    with pytest.raises(NotImplementedError, match="QDWH"):
        linalg.eigh(x, implementation=linalg.EighImplementation.QDWH)
    with pytest.raises(TypeError, match="EighImplementation.QR"):
        linalg.eigh(x, implementation="lapack")
    with pytest.raises(ValueError, match=re.escape("0 <= start <= end <= 3, got (2, 4)")):
        linalg.eigh(x, subset_by_index=(2, 4))


# --- svd subsets and algorithms -----------------------------------------------------------


@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 4)])
def test_svd_subset_and_qr_algorithm(shape, dtype):
    x = random(shape, dtype)
    expected = np.linalg.svd(x, compute_uv=False)
    u, s, vt = map(np.asarray, linalg.svd(x, full_matrices=False, subset_by_index=(1, 3)))
    m, n = shape[-2:]
    assert s.shape == (*shape[:-2], 2) and u.shape == (*shape[:-2], m, 2)
    assert vt.shape == (*shape[:-2], 2, n)
    close(s, expected[..., 1:3], dtype, 100)
    close(x @ H(vt), u * s[..., None, :], dtype, 100)
    close(linalg.svd(x, compute_uv=False, subset_by_index=(0, 1)), expected[..., :1], dtype, 100)
    for full_matrices in (True, False):
        u, s, vt = map(np.asarray, linalg.svd(x, full_matrices=full_matrices,
                                              algorithm=linalg.SvdAlgorithm.QR))
        k = min(m, n)
        close(s, expected, dtype, 100)
        close((u[..., :, :k] * s[..., None, :]) @ vt[..., :k, :], x, dtype, 100)
    for algorithm in (linalg.SvdAlgorithm.DEFAULT, linalg.SvdAlgorithm.DIVIDE_AND_CONQUER):
        close(linalg.svd(x, compute_uv=False, algorithm=algorithm), expected, dtype, 100)


def test_svd_subset_grad_vmap_jit():
    x = random((5, 3), np.float64)

    def weighted(x):
        # u diag(s) vt of the two largest triplets: independent of the vectors' signs.
        u, s, vt = linalg.svd(x, full_matrices=False, subset_by_index=(0, 2))
        product = matmul(lax.mul(u, lax.broadcast_in_dim(s, u.shape, (1,))), vt)
        return lax.concatenate([lax.reshape(product, (15,)), s], 0)
    check_derivatives(weighted, [x])
    check_derivatives(weighted, [x.T.copy()])
    check_vmap(lambda x: linalg.svd(x, compute_uv=False, subset_by_index=(1, 3)),
               [x.astype(np.float32)])
    check_jit_matches_eager(lambda x: linalg.svd(x, full_matrices=False, subset_by_index=(1, 2),
                                                 algorithm=linalg.SvdAlgorithm.QR),
                            [x.astype(np.float32)])


def test_svd_errors():
    x = random((4, 3), np.float32)
    with pytest.raises(ValueError, match="full_matrices and subset_by_index"):
        linalg.svd(x, subset_by_index=(0, 2))
    assert linalg.svd(x, subset_by_index=(0, 3))[0].shape == (4, 4)
    with pytest.raises(ValueError, match=re.escape("0 <= start <= end <= 3")):
        linalg.svd(x, full_matrices=False, subset_by_index=(1, 5))
    for algorithm in (linalg.SvdAlgorithm.JACOBI, linalg.SvdAlgorithm.POLAR):
        with pytest.raises(NotImplementedError, match="Jacobi and Polar"):
            linalg.svd(x, algorithm=algorithm)


# --- eig: eigenvector derivatives and implementations -------------------------------------


def test_eig_eigenvector_derivatives():
    a = random((4, 4), np.float64)

    def vectors(a):
        _, vl, vr = linalg.eig(a, enable_eigvec_derivs=True)
        return as_real(lax.concatenate([vl, vr], 1))
    check_derivatives(vectors, [a])
    ac = random((3, 3), np.complex128)
    with lc.enable_x64():
        t = random((3, 3), np.complex128)
        eps = 1e-6
        fun = lambda a: linalg.eig(a, enable_eigvec_derivs=True)  # noqa: E731
        _, tangents = lc.jvp(fun, (ac,), (t,))
        plus, minus = fun(ac + eps * t), fun(ac - eps * t)
        for got, p, m in zip(tangents, plus, minus):
            numeric = (np.asarray(p) - np.asarray(m)) / (2 * eps)
            np.testing.assert_allclose(np.asarray(got), numeric, rtol=1e-6, atol=1e-6)


def test_eig_opt_in_implementations_and_vmap():
    x = random((3, 3), np.float32)
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs=True"):
        lc.jvp(lambda x: linalg.eig(x)[2], (x,), (x,))
    w = np.asarray(linalg.eig(x)[0])
    out = linalg.eig(x, implementation=linalg.EigImplementation.LAPACK)[0]
    np.testing.assert_array_equal(out, w)
    with pytest.raises(ValueError, match="only the LAPACK implementation"):
        linalg.eig(x, implementation=linalg.EigImplementation.MAGMA)
    with pytest.warns(DeprecationWarning, match="use_magma"):
        np.testing.assert_array_equal(linalg.eig(x, use_magma=False)[0], w)
    check_vmap(lambda x: as_real(linalg.eig(x, compute_left_eigenvectors=False,
                                            enable_eigvec_derivs=True)[1]), [x])


# --- cholesky_update and symmetric_product ------------------------------------------------


def upper_factor(shape, dtype):
    a = random(shape, dtype)
    n = shape[-1]
    return np.swapaxes(np.linalg.cholesky(a @ np.swapaxes(a, -1, -2) + n * np.eye(n)), -1, -2
                       ).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cholesky_update_values(dtype):
    with lc.enable_x64():
        r = upper_factor((2, 4, 4), dtype)
        w = random((2, 4), dtype)
        out = np.asarray(linalg.cholesky_update(r, w))
        assert out.dtype == np.dtype(dtype)
        expected = np.swapaxes(np.linalg.cholesky(
            np.swapaxes(r, -1, -2) @ r + w[..., :, None] * w[..., None, :]), -1, -2)
        close(out, expected, dtype, 100)
        np.testing.assert_array_equal(out, np.triu(out))
        # Zero updates and zero entries of w rotate nothing.
        np.testing.assert_array_equal(linalg.cholesky_update(r, np.zeros_like(w)), r)


_cholesky_update_jit = lc.jit(linalg.cholesky_update)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1e2, 1e2, width=32), min_size=3, max_size=3))
def test_cholesky_update_hypothesis(w):
    r = np.array([[2.0, 1.0, 0.0], [0.0, 1.0, -1.0], [0.0, 0.0, 0.5]], np.float32)
    w = np.asarray(w, np.float32)
    out = np.asarray(_cholesky_update_jit(r, w)).astype(np.float64)
    target = r.T.astype(np.float64) @ r + np.outer(w, w)
    np.testing.assert_allclose(out.T @ out, target, rtol=1e-5, atol=1e-5 * np.abs(target).max())
    assert (np.diag(out) > 0).all()


def test_cholesky_update_derivatives_vmap_and_errors():
    r, w = upper_factor((3, 3), np.float64), random(3, np.float64)
    check_derivatives(linalg.cholesky_update, [r, w], diff_argnums=(0, 1))
    check_vmap(linalg.cholesky_update, [r.astype(np.float32), w.astype(np.float32)])
    with pytest.raises(TypeError, match="complex64"):
        linalg.cholesky_update(r.astype(np.complex64), w.astype(np.complex64))
    with pytest.raises(ValueError, match="vector w_vector of length n"):
        linalg.cholesky_update(np.eye(3, dtype=np.float32), np.ones(2, np.float32))


def test_symmetric_product_values_derivatives_vmap():
    a, c = random((3, 2), np.float32), random((3, 3), np.float32)
    c = c + c.T
    out = linalg.symmetric_product(a, c, alpha=2.0, beta=-0.5)
    close(out, 2 * a @ a.T - 0.5 * c, np.float32)
    asymmetric = random((3, 3), np.float32)
    mirrored = np.asarray(linalg.symmetric_product(a, asymmetric, symmetrize_output=True,
                                                   beta=1.0))
    expected = a @ a.T + asymmetric
    close(mirrored, np.tril(expected) + np.tril(expected, -1).T, np.float32)
    check_derivatives(lambda a, c: linalg.symmetric_product(a, c, alpha=1.5, beta=2.0),
                      [a, c], diff_argnums=(0, 1))
    check_vmap(lambda a, c: linalg.symmetric_product(a, c, beta=1.0), [a, c])
    check_jit_matches_eager(linalg.symmetric_product, [a, c])
    with pytest.raises(ValueError, match="m-by-m c_matrix"):
        linalg.symmetric_product(a, np.ones((2, 2), np.float32))


# --- qdwh ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_qdwh_polar_decomposition(dtype):
    with lc.enable_x64():
        x = random((5, 3), dtype)
        u, h, iterations, converged = linalg.qdwh(x)
        u, h = np.asarray(u), np.asarray(h)
        assert bool(converged) and 0 < int(iterations) <= 10
        expected_u, expected_h = scipy.linalg.polar(x.astype(np.complex128 if np.dtype(
            dtype).kind == "c" else np.float64))
        close(u, expected_u, dtype, 1000)
        close(h, expected_h, dtype, 1000)
        close(h, H(h), dtype, 10)
        close(H(u) @ u, np.eye(3), dtype, 100)


def test_qdwh_types_padding_vmap_and_errors():
    x = random((4, 3), np.float32)
    u, h, iterations, converged = linalg.qdwh(x)
    assert lc.eval_shape(linalg.qdwh, x)[2].weak_type and iterations.dtype == np.int32
    padded = np.pad(x, ((0, 2), (0, 1)))
    u2, h2, _, converged2 = map(np.asarray, linalg.qdwh(padded, dynamic_shape=(4, 3)))
    close(u2[:4, :3], u, np.float32, 200)
    close(h2[:3, :3], h, np.float32, 200)
    assert not u2[4:].any() and not u2[:, 3:].any() and bool(converged2)
    few = linalg.qdwh(random((4, 3), np.float32) @ np.diag([1.0, 1e-3, 1e-6]).astype(np.float32),
                      max_iterations=1)
    assert int(few[2]) == 1 and not bool(few[3])
    out = lc.vmap(linalg.qdwh)(np.stack([x, 2 * x]))
    close(np.asarray(out[0])[1], u, np.float32, 200)
    with pytest.raises(ValueError, match="M >= N"):
        linalg.qdwh(x.T)
    with pytest.raises(ValueError, match="vmap it"):
        linalg.qdwh(np.stack([x, x]))


# --- lu_pivots_to_permutation_p -----------------------------------------------------------


def test_lu_pivots_to_permutation_primitive():
    pivots = np.array([[2, 2, 2], [1, 1, 2]], np.int32)
    perm = linalg.lu_pivots_to_permutation_p.bind(pivots, permutation_size=4)
    np.testing.assert_array_equal(perm, [[2, 0, 1, 3], [1, 0, 2, 3]])
    out = lc.vmap(lambda p: linalg.lu_pivots_to_permutation(p, 4), in_axes=1)(pivots.T)
    np.testing.assert_array_equal(out, perm)
    jaxpr = str(lc.make_jaxpr(lambda p: linalg.lu_pivots_to_permutation(p, 4))(pivots))
    assert "lu_pivots_to_permutation" in jaxpr
    with pytest.raises(ValueError, match="at least the number of pivots"):
        linalg.lu_pivots_to_permutation(pivots, 2)
    with pytest.raises(TypeError, match="int32 pivots"):
        linalg.lu_pivots_to_permutation(pivots.astype(np.uint32), 4)


def row(x):
    return lax.index_in_dim(x, 0, keepdims=False)


def test_new_primitives_appear_in_jaxprs():
    x = random((3, 3), np.float32)
    for fun, name in [(linalg.hessenberg, "hessenberg"), (linalg.tridiagonal, "tridiagonal"),
                      (lambda x: linalg.householder_product(x, row(x)), "householder_product"),
                      (lambda x: linalg.ormqr(x, row(x), x), "ormqr"),
                      (lambda x: linalg.cholesky_update(x, row(x)), "cholesky_update"),
                      (lambda x: linalg.symmetric_product(x, x), "symmetric_product")]:
        assert re.search(rf"= {name}[\[ ]", str(lc.make_jaxpr(fun)(x)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        text = lc.jit(linalg.hessenberg).lower(x).as_text()
    assert "lapack_sgehrd_ffi" in text
