"""lamella.scipy.linalg's matrix functions and tridiagonal eigensolver against
SciPy (float32, complex64, and float64 under enable_x64): expm (every Padé
order, scaling, max_squarings), expm_frechet (both methods; expm's JVP),
funm, sqrtm, polar (QDWH and SVD, both sides, any shape), eigh_tridiagonal
(select 'a', 'i', 'v'); derivatives, vmap, jit, edge cases and bad input."""

import functools

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings
from hypothesis import strategies as st
from linalg_checks import close, condition, matrix, x64

import lamella.core as lc
import lamella.numpy as lnp
import lamella.random as random
from lamella.core.test_util import numerical_jvp
from lamella.lax.test_util import check_derivatives, check_vmap
from lamella.scipy import linalg as la

DTYPES = [np.float32, np.complex64, np.float64]
seeds = st.integers(0, 2**16)


def expm_condition(a):
    """A bound for the relative condition of expm at `a`: e^(2 ||a||) in the worst case is
    far too pessimistic; ||a|| (Higham's relative condition of exp, normal matrices)
    times a safety factor is what the algorithm achieves in practice."""
    return 8 * max(1.0, float(np.linalg.norm(a, 1)))


@settings(max_examples=20, deadline=None)
@given(seed=seeds, dtype=st.sampled_from(DTYPES),
       scale=st.sampled_from([0.0, 1e-3, 0.1, 0.5, 1.5, 4.0, 20.0]))
def test_expm_vs_scipy(seed, dtype, scale):
    # The scales visit every Padé order of both precisions and several squarings.
    a = (matrix(seed, (4, 4), dtype) * scale).astype(dtype)
    with x64(dtype):
        close(la.expm(a), sl.expm(a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)),
              dtype, expm_condition(a))
        e = matrix(seed + 1, (4, 4), dtype)
        got_expm, got_frechet = la.expm_frechet(a, e)
        want_expm, want_frechet = sl.expm_frechet(a.astype(np.complex128), e)
        close(got_expm, want_expm, dtype, expm_condition(a))
        close(got_frechet, want_frechet, dtype, 4 * expm_condition(a))
        if dtype == np.float64:
            close(la.expm_frechet(a, e, method="blockEnlarge", compute_expm=False),
                  want_frechet, dtype, 4 * expm_condition(a))


def test_expm_special_cases():
    upper = np.triu(matrix(0, (4, 4), np.float32)) * 3
    close(la.expm(upper, upper_triangular=True), sl.expm(upper), np.float32,
          expm_condition(upper))
    close(la.expm(np.zeros((3, 3), np.float32)), np.eye(3), np.float32, 1)
    assert la.expm(np.zeros((0, 0), np.float32)).shape == (0, 0)
    assert la.expm(np.eye(2, dtype=np.int32)).dtype == np.float32
    nilpotent = np.float32([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    close(la.expm(nilpotent), [[1.0, 1.0, 0.5], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]],
          np.float32, 2)
    # 2-norm 1e6 needs ~18 squarings: more than max_squarings gives NaN, as in JAX.
    big = np.float32([[0.0, 1e6], [-1e6, 0.0]])
    assert np.all(np.isnan(la.expm(big, max_squarings=4)))
    batch = matrix(1, (2, 3, 3), np.float32)
    close(la.expm(batch), np.stack([sl.expm(m) for m in batch]), np.float32,
          expm_condition(batch[0]))


def test_expm_jvp_is_the_frechet_derivative_and_grads_check():
    a, e = matrix(2, (3, 3), np.float64), matrix(3, (3, 3), np.float64)
    with lc.enable_x64():
        _, tangent = lc.jvp(la.expm, (a,), (e,))
        close(tangent, sl.expm_frechet(a, e)[1], np.float64, 4 * expm_condition(a))
        # One Padé evaluation serves the primal and its derivative: no expm in the JVP jaxpr.
        assert "custom_jvp" in str(lc.make_jaxpr(la.expm)(a))
    # JVP against central differences, and VJP (the transposed Fréchet derivative).
    check_derivatives(lc.jit(la.expm), [a * 3], rtol=1e-5, atol=1e-5)
    check_vmap(la.expm, [a.astype(np.float32)])


@settings(max_examples=10, deadline=None)
@given(seed=seeds, dtype=st.sampled_from(DTYPES),
       func=st.sampled_from(["exp", "sin", "square"]))
def test_funm_vs_scipy(seed, dtype, func):
    a = matrix(seed, (4, 4), dtype)
    fns = {"exp": (lnp.exp, np.exp), "sin": (lnp.sin, np.sin), "square": (lnp.square, np.square)}
    ours, theirs = fns[func]
    complex_dtype = np.result_type(dtype, np.complex64)
    with x64(dtype):
        got, err = la.funm(a, ours, disp=False)
        want = sl.funm(a.astype(np.complex128), theirs)
        # Schur-Parlett's error grows with 1 / (eigenvalue separation): SciPy's estimate.
        gaps = np.abs(np.subtract.outer(*[np.linalg.eigvals(a)] * 2))
        separation = np.min(gaps[~np.eye(4, dtype=bool)])
        close(got, want, complex_dtype, 64 * condition(a) / min(1.0, separation))
        assert err.dtype == np.finfo(dtype).dtype and 0 < float(err) <= 1


def test_funm_batches_and_jits():
    a = matrix(4, (2, 3, 3), np.float32)
    got = la.funm(a, lnp.exp)
    close(got, np.stack([sl.expm(m) for m in a]), np.complex64, 64 * condition(a))
    np.testing.assert_allclose(lc.jit(lambda a: la.funm(a, lnp.exp))(a), got, rtol=1e-5,
                               atol=1e-5)


@settings(max_examples=10, deadline=None)
@given(seed=seeds, dtype=st.sampled_from(DTYPES), kind=st.sampled_from(["spd", "well"]))
def test_sqrtm_vs_scipy(seed, dtype, kind):
    # No eigenvalue on the negative real axis, where the principal root is not defined.
    a = matrix(seed, (4, 4), dtype, kind)
    complex_dtype = np.result_type(dtype, np.complex64)
    with x64(dtype):
        x = la.sqrtm(a)
        close(x @ x, a, complex_dtype, 16 * condition(a))
        close(x, sl.sqrtm(a.astype(np.complex128)), complex_dtype, 16 * condition(a))


def test_sqrtm_edge_cases_derivatives_vmap():
    close(la.sqrtm(np.diag(np.float32([4.0, 9.0]))), np.diag([2.0, 3.0]), np.complex64, 1)
    close(la.sqrtm(np.float32([[-4.0]])), [[2j]], np.complex64, 1)
    assert la.sqrtm(np.zeros((0, 0), np.float32)).shape == (0, 0)
    a = matrix(5, (3, 3), np.float64, "well")  # eigenvalues off the negative real axis
    check_derivatives(lc.jit(lambda a: lnp.stack([la.sqrtm(a).real, la.sqrtm(a).imag])), [a])
    check_vmap(lambda a: la.sqrtm(a).real, [a.astype(np.float32)])


@settings(max_examples=15, deadline=None)
@given(seed=seeds, case=st.sampled_from([(np.float32, (3, 3)), (np.complex64, (4, 2)),
                                         (np.float64, (2, 4))]),
       side=st.sampled_from(["right", "left"]), method=st.sampled_from(["qdwh", "svd"]))
def test_polar_vs_scipy(seed, case, side, method):
    dtype, shape = case
    a = matrix(seed, shape, dtype)
    with x64(dtype):
        u, p = la.polar(a, side, method=method)
        want_u, want_p = sl.polar(a, side)
        close(u, want_u, dtype, 16 * condition(a))
        close(p, want_p, dtype, 16 * condition(a))
        close(u @ p if side == "right" else p @ u, a, dtype, 16)


def test_polar_ill_conditioned_batched_derivatives():
    # QDWH converges for condition numbers up to 1/eps in a handful of iterations.
    a = (matrix(6, (4, 4), np.float64) @ np.diag([1.0, 1e-3, 1e-6, 1e-8])).astype(np.float64)
    with lc.enable_x64():
        u, p = la.polar(a)
        close(u @ p, a, np.float64, 16)
        close(np.conj(u.T) @ u, np.eye(4), np.float64, 64)
    batch = matrix(7, (2, 3, 3), np.float32)
    u, p = la.polar(batch)
    close(u @ p, batch, np.float32, 16)
    b = matrix(8, (4, 3), np.float64)
    # Both methods share the unitary factor's JVP; p = u^H a (a u^H) follows by the chain
    # rule, on either side of tall and wide matrices.
    for m, side, method in ((b, "left", "qdwh"), (b, "right", "qdwh"), (b.T, "left", "qdwh"),
                            (b, "right", "svd")):
        check_derivatives(lc.jit(lambda m, side=side, method=method: lnp.concatenate(
            [x.ravel() for x in la.polar(m, side, method=method)])), [m], rtol=1e-5, atol=1e-5)
    check_vmap(lambda b: la.polar(b)[0], [b.astype(np.float32)])


@settings(max_examples=20, deadline=None)
@given(seed=seeds, dtype=st.sampled_from([np.float32, np.float64]),
       n=st.sampled_from([1, 6, 16]), select=st.sampled_from(["a", "i", "v"]),
       vectors=st.booleans())
def test_eigh_tridiagonal_vs_scipy(seed, dtype, n, select, vectors):
    # n = 16 with select 'i' (3 of 16) or 'v' takes inverse iteration; the rest LAPACK's eigh.
    rng = np.random.default_rng(seed)
    d, e = rng.standard_normal(n).astype(dtype), rng.standard_normal(n - 1).astype(dtype)
    select_range = {"a": None, "i": (0, n - 1) if n == 1 else (1, 3), "v": (-1.0, 1.0)}[select]
    want = sl.eigh_tridiagonal(d, e, eigvals_only=True, select=select,
                               select_range=select_range)
    norm = 1 + np.abs(d).max() + 2 * np.abs(e).max(initial=0)
    with x64(dtype):
        if not vectors:
            w = la.eigh_tridiagonal(d, e, eigvals_only=True, select=select,
                                    select_range=select_range)
            close(w, want, dtype, 8 * n * norm)
            return
        w, v = la.eigh_tridiagonal(d, e, select=select, select_range=select_range)
        close(w, want, dtype, 8 * n * norm)
        t = np.diag(d) + np.diag(e, -1) + np.diag(e, 1)
        close(t @ v, v * w, dtype, 8 * n * norm)
        close(v.T @ v, np.eye(len(want)), dtype, 4)
        # Signs: each eigenvector's largest entry is positive.
        v = np.asarray(v)
        assert np.all(v[np.argmax(np.abs(v), axis=0), np.arange(v.shape[1])] > 0)


def clustered_tridiagonals(n):
    """(name, d, e) of tridiagonals with clusters of eigenvalues: Wilkinson's W+ (pairs
    equal to 1e-14), W+ glued by tiny couplings (triples and more), an identity with
    tiny off-diagonal noise, and one with zero off-diagonals (exactly repeated)."""
    rng = np.random.default_rng(n)
    m = n // 2
    wilkinson = np.abs(np.arange(-m, n - m)).astype(float)
    glued = np.resize(np.abs(np.arange(-3, 4)).astype(float), n)
    couplings = np.ones(n - 1)
    couplings[6::7] = 1e-9
    return [("wilkinson", wilkinson, np.ones(n - 1)), ("glued", glued, couplings),
            ("near identity", np.ones(n), 1e-7 * rng.standard_normal(n - 1)),
            ("repeated", np.resize([1.0, 2.0], n), np.zeros(n - 1))]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_eigh_tridiagonal_inverse_iteration_keeps_clusters_orthogonal(dtype):
    # Windows of n/4 eigenpairs across the spectrum take inverse iteration: its QR keeps
    # eigenvectors of (nearly) equal eigenvalues orthogonal, and their residuals small.
    n = 28
    eps = np.finfo(dtype).eps
    with x64(dtype):
        for name, d, e in clustered_tridiagonals(n):
            t = np.diag(d) + np.diag(e, -1) + np.diag(e, 1)
            norm = np.abs(t).sum(axis=0).max()
            ref = np.linalg.eigvalsh(t)
            for lo in range(0, n, n // 4):
                w, v = eigh_tridiagonal_window(lo, n // 4)(d.astype(dtype), e.astype(dtype))
                v = np.asarray(v, np.float64)
                assert np.abs(v.T @ v - np.eye(n // 4)).max() <= 8 * eps, name
                assert np.abs(t @ v - v * np.asarray(w)).max() <= 100 * eps * norm, name
                assert np.abs(np.asarray(w) - ref[lo:lo + n // 4]).max() <= 16 * eps * norm


@functools.cache
def eigh_tridiagonal_window(lo, size):
    """eigh_tridiagonal of eigenpairs lo..lo + size - 1, jitted once per window."""
    return lc.jit(lambda d, e: la.eigh_tridiagonal(d, e, select="i",
                                                   select_range=(lo, lo + size - 1)))


def test_eigh_tridiagonal_key_picks_the_basis_of_repeated_eigenvalues_only():
    # Eigenvalue 1 six times (coordinates 0-5), then a coupled pair of 3 and 5.
    d, e = np.float32([1, 1, 1, 1, 1, 1, 3, 5]), np.float32([0, 0, 0, 0, 0, 0, 0.5])
    pick = {"select": "i", "select_range": (0, 1)}
    v0 = np.asarray(la.eigh_tridiagonal(d, e, **pick)[1])
    v1 = np.asarray(la.eigh_tridiagonal(d, e, key=random.key(1), **pick)[1])
    # Both are orthonormal bases of a plane in that eigenspace; the key chooses which.
    for v in (v0, v1):
        close(v.T @ v, np.eye(2), np.float32, 4)
        close(v[6:], np.zeros((2, 2)), np.float32, 4)
    assert np.abs(v0 - v1).max() > 0.1
    # A simple eigenvalue's eigenvector does not depend on the key.
    top = {"select": "i", "select_range": (7, 7)}
    close(la.eigh_tridiagonal(d, e, **top)[1],
          la.eigh_tridiagonal(d, e, key=random.key(7), **top)[1], np.float32, 4)


def test_eigh_tridiagonal_clusters_batches_derivatives():
    # A cluster of equal eigenvalues (the Wilkinson-like matrix) and a batch.
    d, e = np.float32([2.0, 2.0, 2.0, 2.0]), np.float32([0.0, 1e-8, 0.0])
    close(la.eigh_tridiagonal(d, e, eigvals_only=True), np.linalg.eigvalsh(
        np.diag(d) + np.diag(e, 1) + np.diag(e, -1)), np.float32, 8)
    rng = np.random.default_rng(0)
    db, eb = rng.standard_normal((2, 5)).astype(np.float32), rng.standard_normal((2, 4)).astype(
        np.float32)
    w = la.eigh_tridiagonal(db, eb, eigvals_only=True)
    close(w, np.stack([sl.eigh_tridiagonal(x, y, eigvals_only=True) for x, y in zip(db, eb)]),
          np.float32, 64)
    np.testing.assert_allclose(lc.jit(lambda d, e: la.eigh_tridiagonal(
        d, e, eigvals_only=True))(db, eb), w, rtol=1e-6, atol=1e-6)
    check_derivatives(lc.jit(lambda d, e: la.eigh_tridiagonal(d, e, eigvals_only=True)),
                      [db[0], eb[0]], diff_argnums=(0, 1))
    cz = la.eigh_tridiagonal(np.complex64([1.0, 2.0]), np.complex64([1j]), eigvals_only=True)
    close(cz, np.linalg.eigvalsh([[1.0, -1j], [1j, 2.0]]), np.float32, 8)


def test_eigh_tridiagonal_vectors_derivatives_vmap_complex():
    rng = np.random.default_rng(3)
    d, e = rng.standard_normal(8), rng.standard_normal(7)
    # Two of eight (inverse iteration, whose JVP solves with T - w I) and all (LAPACK's eigh).
    for select_range in ((2, 3), (0, 7)):
        pairs = lc.jit(lambda d, e, r=select_range: lnp.concatenate(la.eigh_tridiagonal(
            d, e, select="i", select_range=r), axis=None))
        check_derivatives(pairs, [d, e], diff_argnums=(0, 1))
        check_derivatives(lc.jit(lambda d, e, r=select_range: la.eigh_tridiagonal(
            d, e, eigvals_only=True, select="i", select_range=r)), [d, e], diff_argnums=(0, 1))
    d32, e32 = d.astype(np.float32), e.astype(np.float32)
    check_vmap(lambda d, e: la.eigh_tridiagonal(d, e, select="i", select_range=(2, 3))[1],
               [d32, e32])
    w, v = la.eigh_tridiagonal(np.stack([d32, 2 * d32]), np.stack([e32, e32]), select="i",
                               select_range=(2, 3))
    jitted = lc.jit(lambda d, e: la.eigh_tridiagonal(d, e, select="i", select_range=(2, 3)))
    for got, want in zip(jitted(np.stack([d32, 2 * d32]), np.stack([e32, e32])), (w, v)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # Hermitian (complex e): T = D T_r D^H, so the vectors are D's phases times real ones;
    # their JVP (through the phases) against central differences.
    ec = e + 1j * rng.standard_normal(7)
    t = np.diag(d) + np.diag(ec, -1) + np.diag(np.conj(ec), 1)
    tangent = rng.standard_normal(7) + 1j * rng.standard_normal(7)
    with lc.enable_x64():
        for r in ((2, 3), (0, 7)):
            w, v = la.eigh_tridiagonal(d.astype(complex), ec, select="i", select_range=r)
            close(t @ v, v * np.asarray(w), np.complex128, 64)
            close(np.conj(v.T) @ v, np.eye(r[1] - r[0] + 1), np.complex128, 4)

            def vectors(e, r=r):
                return la.eigh_tridiagonal(d.astype(complex), e, select="i", select_range=r)[1]
            np.testing.assert_allclose(lc.jvp(vectors, (ec,), (tangent,))[1],
                                       numerical_jvp(vectors, (ec,), (tangent,)), rtol=1e-6,
                                       atol=1e-6)


def test_matrix_function_errors():
    with pytest.raises(ValueError, match="square matrix"):
        la.expm(np.ones((2, 3)))
    with pytest.raises(ValueError, match="same shape"):
        la.expm_frechet(np.eye(2), np.eye(3))
    with pytest.raises(ValueError, match="method"):
        la.expm_frechet(np.eye(2), np.eye(2), method="pade")
    with pytest.raises(ValueError, match="square matrix"):
        la.sqrtm(np.ones(3))
    with pytest.raises(ValueError, match="blocksize"):
        la.sqrtm(np.eye(2), blocksize=0)
    with pytest.raises(ValueError, match="square matrix"):
        la.funm(np.ones((2, 3)), lnp.exp)
    with pytest.raises(ValueError, match="side"):
        la.polar(np.eye(2), "up")
    with pytest.raises(ValueError, match="method"):
        la.polar(np.eye(2), method="newton")
    with pytest.raises(ValueError, match="select"):
        la.eigh_tridiagonal(np.ones(3), np.ones(2), select="x")
    with pytest.raises(ValueError, match="select_range"):
        la.eigh_tridiagonal(np.ones(3), np.ones(2), select="i")
    with pytest.raises(ValueError, match="0 <= lo <= hi < 3"):
        la.eigh_tridiagonal(np.ones(3), np.ones(2), select="i", select_range=(2, 5))
    with pytest.raises(ValueError, match="one entry fewer"):
        la.eigh_tridiagonal(np.ones(3), np.ones(3))
    with pytest.raises(TypeError, match="one dtype"), lc.enable_x64():
        la.eigh_tridiagonal(np.ones(3, np.float32), np.ones(2, np.float64))
    with pytest.raises(ValueError, match="concrete"):
        lc.jit(lambda d, e: la.eigh_tridiagonal(d, e, select="v", select_range=(0.0, 1.0)))(
            np.ones(3, np.float32), np.ones(2, np.float32))
