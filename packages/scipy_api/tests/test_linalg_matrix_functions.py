"""lamella.scipy.linalg's matrix functions and tridiagonal eigensolver against
SciPy (float32, complex64, and float64 under enable_x64): expm (every Padé
order, scaling, max_squarings), expm_frechet (both methods; expm's JVP),
funm, sqrtm, polar (QDWH and SVD, both sides, any shape), eigh_tridiagonal
(select 'a', 'i', 'v'); derivatives, vmap, jit, edge cases and bad input."""

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings
from hypothesis import strategies as st
from linalg_checks import close, condition, matrix, x64

import lamella.core as lc
import lamella.numpy as lnp
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
    # Both methods share the unitary factor's JVP; p = u^H a follows by the chain rule.
    check_derivatives(lc.jit(lambda b: lnp.concatenate(la.polar(b, "left"), axis=1)), [b],
                      rtol=1e-5, atol=1e-5)
    check_vmap(lambda b: la.polar(b)[0], [b.astype(np.float32)])


@settings(max_examples=15, deadline=None)
@given(seed=seeds, dtype=st.sampled_from([np.float32, np.float64]), n=st.sampled_from([1, 6]),
       select=st.sampled_from(["a", "i", "v"]), vectors=st.booleans())
def test_eigh_tridiagonal_vs_scipy(seed, dtype, n, select, vectors):
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
