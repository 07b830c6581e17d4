"""lamella.numpy.linalg against NumPy: values in float32, complex64 and float64,
dtype rules, derivatives (float64 central differences), vmap against loops, jit
against eager, and errors. Matrices are small, random and well conditioned, and
reused so that each shape compiles once."""

import numpy as np
import pytest
from checks import check, check_derivatives, check_jit_matches_eager, check_vmap
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella import lax
from lamella.numpy import linalg as la
from lamella.numpy.util import AxisError

RNG = np.random.default_rng(0)


def well_conditioned(shape, dtype=np.float32):
    n = shape[-1]
    a = RNG.standard_normal(shape) + n * np.eye(n)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * RNG.standard_normal(shape)
    return a.astype(dtype)


def spd(shape, dtype=np.float32):
    a = well_conditioned(shape, dtype)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


A3 = well_conditioned((3, 3))
A23 = well_conditioned((2, 3, 3))
C3 = well_conditioned((3, 3), np.complex64)
S3, S23 = spd((3, 3)), spd((2, 3, 3))
RECT = RNG.standard_normal((4, 3)).astype(np.float32)
B3 = RNG.standard_normal(3).astype(np.float32)
B32 = RNG.standard_normal((3, 2)).astype(np.float32)


def close(got, want, rtol=2e-5, atol=2e-5, dtype=None):
    got = np.asarray(got)
    if dtype is not None:
        assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# --- values against NumPy -------------------------------------------------------------

VALUE_CASES = [
    ("det", la.det, np.linalg.det),
    ("inv", la.inv, np.linalg.inv),
    ("pinv", la.pinv, np.linalg.pinv),
    ("slogdet_sign", lambda a: la.slogdet(a)[0], lambda a: np.linalg.slogdet(a)[0]),
    ("slogdet_log", lambda a: la.slogdet(a)[1], lambda a: np.linalg.slogdet(a)[1]),
    ("slogdet_qr", lambda a: la.slogdet(a, method="qr")[1], lambda a: np.linalg.slogdet(a)[1]),
    ("svdvals", la.svdvals, lambda a: np.linalg.svd(a, compute_uv=False)),
    ("matrix_power3", lambda a: la.matrix_power(a, 3), lambda a: np.linalg.matrix_power(a, 3)),
    ("matrix_power-2", lambda a: la.matrix_power(a, -2),
     lambda a: np.linalg.matrix_power(a, -2)),
    ("matrix_power0", lambda a: la.matrix_power(a, 0), lambda a: np.linalg.matrix_power(a, 0)),
    ("cond", la.cond, np.linalg.cond),
    ("cond_fro", lambda a: la.cond(a, "fro"), lambda a: np.linalg.cond(a, "fro")),
    ("cond_inf", lambda a: la.cond(a, np.inf), lambda a: np.linalg.cond(a, np.inf)),
    ("matrix_rank", la.matrix_rank, np.linalg.matrix_rank),
    ("trace", la.trace, lambda a: np.trace(a, axis1=-2, axis2=-1)),
    ("diagonal-1", lambda a: la.diagonal(a, offset=-1),
     lambda a: np.diagonal(a, -1, axis1=-2, axis2=-1)),
    ("matrix_transpose", la.matrix_transpose, lambda a: np.swapaxes(a, -1, -2)),
]


@pytest.mark.parametrize("name, fn, ref", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
@pytest.mark.parametrize("a", [A3, A23, C3], ids=["3x3", "2x3x3", "c64"])
def test_square_functions_vs_numpy(name, fn, ref, a):
    want = ref(a)
    out = fn(a)
    expected_dtype = (np.int32 if name == "matrix_rank" else
                      np.float32 if name in ("svdvals", "slogdet_log", "slogdet_qr", "cond",
                                             "cond_fro", "cond_inf") else a.dtype)
    close(out, want, rtol=5e-5, atol=5e-5, dtype=expected_dtype)


NORM_ORDS_MATRIX = [None, "fro", "nuc", np.inf, -np.inf, 1, -1, 2, -2]
NORM_ORDS_VECTOR = [None, np.inf, -np.inf, 0, 1, -1, 2, -2, 3, 0.5]


@pytest.mark.parametrize("ord", NORM_ORDS_MATRIX)
@pytest.mark.parametrize("a", [RECT, C3], ids=["f32", "c64"])
def test_matrix_norms(ord, a):
    close(la.norm(a, ord), np.linalg.norm(a, ord), dtype=np.float32)


@pytest.mark.parametrize("ord", NORM_ORDS_VECTOR)
def test_vector_norms(ord):
    x = np.float32([3.0, -4.0, 0.0, 1.5])
    with np.errstate(divide="ignore"):  # negative orders meet the zero
        want = np.linalg.norm(x, ord)
    close(la.norm(x, ord), want, rtol=1e-5, dtype=np.float32)
    close(la.vector_norm(A23, ord=ord if ord is not None else 2, axis=(0, 2), keepdims=True),
          np.linalg.vector_norm(A23, ord=ord if ord is not None else 2, axis=(0, 2),
                                keepdims=True), rtol=1e-5)


@settings(max_examples=15, deadline=None)
@given(shape=st.sampled_from([(), (0,), (5,), (2, 3), (2, 3, 4)]),
       ord=st.sampled_from([None, 1, 2, np.inf, "fro", "nuc", -1]),
       axis=st.sampled_from([None, 0, -1, (0, 1), (1, 0), (-1, 0)]),
       keepdims=st.booleans())
def test_norm_hypothesis(shape, ord, axis, keepdims):
    x = RNG.standard_normal(shape).astype(np.float32)
    try:
        with np.errstate(divide="ignore"):  # ord=-1 on empty or zero vectors
            want = np.linalg.norm(x, ord, axis, keepdims)
    except (ValueError, TypeError, IndexError):
        with pytest.raises((ValueError, TypeError, IndexError, AxisError)):
            la.norm(x, ord, axis, keepdims)
        return
    close(la.norm(x, ord, axis, keepdims), want, rtol=1e-5, dtype=np.float32)


def test_norm_axes_keepdims_and_ints():
    close(la.norm(A23, 2, axis=(2, 0), keepdims=True),
          np.linalg.norm(A23, 2, axis=(2, 0), keepdims=True))
    close(la.matrix_norm(A23, ord="nuc"), np.linalg.matrix_norm(A23, ord="nuc"))
    close(la.norm(np.int32([[3, 4]])), 5.0, dtype=np.float32)
    close(la.norm(A23), np.linalg.norm(A23))
    close(la.norm(np.zeros(0, np.float32), np.inf), 0.0)  # the max starts from 0
    with lc.enable_x64():
        close(la.norm(A3.astype(np.float64), 1), np.linalg.norm(A3, 1), dtype=np.float64)


@pytest.mark.parametrize("b", [B3, B32, np.stack([B32] * 2)], ids=["vec", "mat", "batched"])
@pytest.mark.parametrize("a", [A3, A23], ids=["3x3", "2x3x3"])
def test_solve_broadcasting(a, b):
    close(la.solve(a, b), np.linalg.solve(a, b), rtol=1e-4, atol=1e-5)


def test_solve_complex_and_float64():
    b = (B32 + 1j).astype(np.complex64)
    close(la.solve(C3, b), np.linalg.solve(C3, b), rtol=1e-4, atol=1e-5, dtype=np.complex64)
    with lc.enable_x64():
        a, b = A23.astype(np.float64), B32.astype(np.float64)
        close(la.solve(a, b), np.linalg.solve(a, b), rtol=1e-12, atol=1e-12, dtype=np.float64)
        close(la.det(a), np.linalg.det(a), rtol=1e-12, dtype=np.float64)
        close(la.inv(a), np.linalg.inv(a), rtol=1e-12, atol=1e-13, dtype=np.float64)


def test_integer_inputs_promote():
    a = np.int32([[2, 1], [1, 3]])
    close(la.det(a), 5.0, dtype=np.float32)
    close(la.inv(a), np.linalg.inv(a), dtype=np.float32)
    close(la.matrix_power(a, 2), a @ a, dtype=np.int32)
    close(la.trace(np.int8([[1, 2], [3, 4]])), 5, dtype=np.int32)
    close(la.trace(A3, dtype=np.float16), np.trace(A3), rtol=1e-3, dtype=np.float16)


def test_decompositions_reconstruct():
    for a in (A23, C3):
        q, r = la.qr(a)
        close(q @ r, a, rtol=1e-4, atol=1e-5)
        u, s, vh = la.svd(a)
        close((np.asarray(u) * np.asarray(s)[..., None, :]) @ vh, a, rtol=1e-4, atol=1e-5)
        w, v = la.eig(a)
        close(a @ v, v * np.asarray(w)[..., None, :], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(np.sort_complex(np.asarray(la.eigvals(a)).ravel()),
                                   np.sort_complex(np.linalg.eigvals(a).ravel()), rtol=1e-4)
    q, r = la.qr(RECT, mode="complete")
    assert q.shape == (4, 4) and r.shape == (4, 3)
    close(q @ r, RECT, rtol=1e-4, atol=1e-5)
    close(np.abs(la.qr(RECT, mode="r")), np.abs(np.linalg.qr(RECT, mode="r")), rtol=1e-4)
    u, s, vh = la.svd(RECT, full_matrices=False)
    assert u.shape == (4, 3) and vh.shape == (3, 3)


@pytest.mark.parametrize("a", [RECT, RECT.T.copy(), C3], ids=["tall", "wide", "c64"])
def test_qr_raw_matches_numpy(a):
    h, tau = la.qr(a, mode="raw")
    want_h, want_tau = np.linalg.qr(a, mode="raw")
    close(h, want_h, rtol=1e-4, atol=1e-5, dtype=a.dtype)
    close(tau, want_tau, rtol=1e-4, atol=1e-5, dtype=a.dtype)


def test_hermitian_eigh_and_svd():
    for a in (S23, (C3 + np.conj(C3.T)).astype(np.complex64)):
        w, v = map(np.asarray, la.eigh(a))
        close(w, np.linalg.eigvalsh(a), rtol=1e-4, atol=1e-4)
        close(v @ (w[..., None] * np.conj(np.swapaxes(v, -1, -2))), a,
              rtol=1e-4, atol=1e-4)
        close(la.eigvalsh(a, "U"), np.linalg.eigvalsh(a, "U"), rtol=1e-4, atol=1e-4)
    indefinite = np.float32([[1, 2, 0], [2, -3, 1], [0, 1, 2]])
    u, s, vh = la.svd(indefinite, hermitian=True)
    close(s, np.linalg.svd(indefinite, compute_uv=False), rtol=1e-5)
    close((np.asarray(u) * np.asarray(s)) @ vh, indefinite, rtol=1e-5, atol=1e-5)
    close(la.pinv(indefinite, hermitian=True), np.linalg.pinv(indefinite), rtol=1e-4, atol=1e-5)
    # Without symmetrization only the lower triangle is read.
    lower_only = np.tril(S3)
    close(la.eigvalsh(lower_only, symmetrize_input=False), np.linalg.eigvalsh(S3), rtol=1e-4)


def test_cholesky():
    close(la.cholesky(S23), np.linalg.cholesky(S23), rtol=1e-5, atol=1e-5)
    close(la.cholesky(S3, upper=True), np.linalg.cholesky(S3, upper=True), rtol=1e-5, atol=1e-5)
    assert np.isnan(np.asarray(la.cholesky(np.float32([[1, 2], [2, 1]])))).any()


def test_lstsq_and_matrix_rank():
    b = RNG.standard_normal(4).astype(np.float32)
    x, resid, rank, s = la.lstsq(RECT, b)
    wx, wresid, wrank, ws = np.linalg.lstsq(RECT, b)
    close(x, wx, rtol=1e-4, atol=1e-5)
    close(resid, wresid, rtol=1e-3, atol=1e-5)
    assert int(rank) == wrank and np.asarray(rank).dtype == np.int32
    close(s, ws, rtol=1e-5)
    x, resid, rank, s = la.lstsq(RECT, np.stack([b, 2 * b], 1), numpy_resid=True)
    close(resid, np.linalg.lstsq(RECT, np.stack([b, 2 * b], 1))[1], rtol=1e-3, atol=1e-5)
    wide = RECT.T.copy()
    _, resid, rank, _ = la.lstsq(wide, B3, numpy_resid=True)
    assert resid.shape == (0,) and int(rank) == 3
    singular = np.float32([[1, 2, 3], [2, 4, 6], [1, 0, 1]])
    assert int(la.matrix_rank(singular)) == 2
    assert int(la.matrix_rank(singular, tol=100.0)) == 0
    close(la.matrix_rank(A23, rtol=0.3), np.linalg.matrix_rank(A23, rtol=0.3))
    assert int(la.matrix_rank(np.float32([0, 0]))) == 0
    assert int(la.matrix_rank(np.float32([0, 1]))) == 1


def test_det_singular_and_empty():
    singular = np.float32([[1, 2], [2, 4]])
    close(la.det(singular), 0.0, atol=1e-6)
    sign, logdet = la.slogdet(singular)
    assert float(sign) == 0 and float(logdet) == -np.inf
    close(la.det(np.zeros((2, 0, 0), np.float32)), np.ones(2), dtype=np.float32)
    close(la.slogdet(np.zeros((0, 0), np.float32))[1], 0.0)


def test_extras_vs_numpy():
    x, y = RNG.standard_normal((2, 3)).astype(np.float32), np.float32([1, 2, 3])
    close(la.matmul(x, y), x @ y)
    close(la.matmul(x, y, preferred_element_type=np.float64), x @ y, dtype=np.float32)
    close(la.tensordot(A23, A3, axes=1), np.tensordot(A23, A3, axes=1), rtol=1e-5)
    close(la.tensordot(A23, A3, axes=([1, 2], [1, 0])),
          np.tensordot(A23, A3, axes=([1, 2], [1, 0])), rtol=1e-5)
    close(la.tensordot(x, y, axes=0), np.tensordot(x, y, axes=0))
    close(la.outer(y, B3), np.outer(y, B3))
    close(la.vecdot(x, y), np.vecdot(x, y), rtol=1e-5)
    c = C3[0]
    close(la.vecdot(c, c), np.vecdot(c, c), rtol=1e-5, dtype=np.complex64)
    close(la.vecdot(A23, A3, axis=-2), np.vecdot(A23, A3, axis=-2), rtol=1e-5)
    close(la.cross(x, y), np.cross(x, y))
    close(la.cross(x.T, y[:, None], axis=0), np.cross(x.T, y[:, None], axis=0))
    close(la.diagonal(RECT, offset=1), np.diagonal(RECT, 1))
    close(la.diagonal(RECT, offset=5), np.diagonal(RECT, 5))
    close(la.trace(RECT, offset=-1), np.trace(RECT, -1))


def test_multi_dot_order_and_values():
    a = RNG.standard_normal((10, 2)).astype(np.float32)
    b = RNG.standard_normal((2, 8)).astype(np.float32)
    c = RNG.standard_normal((8, 3)).astype(np.float32)
    v = RNG.standard_normal(10).astype(np.float32)
    close(la.multi_dot([a, b, c]), np.linalg.multi_dot([a, b, c]), rtol=1e-4, atol=1e-5)
    close(la.multi_dot([v, a, b, c]), np.linalg.multi_dot([v, a, b, c]), rtol=1e-4, atol=1e-4)
    close(la.multi_dot([A3, B3]), A3 @ B3, rtol=1e-5)
    # (a b) c costs 10*2*8 + 10*8*3 = 400 flops, a (b c) 2*8*3 + 10*2*3 = 108.
    jaxpr = str(lc.make_jaxpr(lambda a, b, c: la.multi_dot([a, b, c]))(a, b, c))
    assert "f32[2,3] = dot_general" in jaxpr and "f32[10,8]" not in jaxpr, jaxpr


def test_tensorsolve_and_tensorinv():
    a = well_conditioned((6, 6)).reshape(6, 2, 3)
    b = RNG.standard_normal(6).astype(np.float32)
    close(la.tensorsolve(a, b), np.linalg.tensorsolve(a, b), rtol=1e-4, atol=1e-5)
    a2 = well_conditioned((6, 6)).reshape(2, 3, 6)
    b2 = RNG.standard_normal((2, 3)).astype(np.float32)
    close(la.tensorsolve(a2, b2), np.linalg.tensorsolve(a2, b2), rtol=1e-4, atol=1e-5)
    a3 = np.moveaxis(a2, 2, 0)
    close(la.tensorsolve(a3, b2, axes=(0,)), np.linalg.tensorsolve(a3, b2, axes=(0,)),
          rtol=1e-4, atol=1e-5)
    close(la.tensorinv(a2, ind=2), np.linalg.tensorinv(a2, ind=2), rtol=1e-4, atol=1e-5)


# --- derivatives (float64, central differences) -----------------------------------------

GRAD_CASES = [
    ("det", la.det, [A3]),
    ("det_batched", la.det, [A23]),
    ("slogdet", lambda a: la.slogdet(a)[1], [A23]),
    ("slogdet_qr", lambda a: la.slogdet(a, method="qr")[1], [A3]),
    ("inv", la.inv, [A3]),
    ("solve", la.solve, [A23, B32]),
    ("pinv", la.pinv, [RECT]),
    ("norm_fro", la.norm, [A3]),
    ("norm_1", lambda a: la.norm(a, 1), [A3]),
    ("norm_nuc", lambda a: la.norm(a, "nuc"), [A3]),
    ("norm_2", lambda a: la.norm(a, 2), [A3]),
    ("norm_vec3", lambda a: la.norm(a, 3, axis=0), [A3]),
    ("norm_vecinf", lambda a: la.norm(a, np.inf, axis=1), [A3]),
    ("cholesky", la.cholesky, [S3]),
    ("qr", lambda a: la.qr(a)[1], [RECT]),
    ("qr_q", lambda a: la.qr(a)[0], [A3]),
    ("eigvalsh", la.eigvalsh, [S23]),
    # Projectors onto eigenvectors do not depend on their signs.
    ("eigh_vectors", lambda a: la.eigh(a)[1] * lax.slice_in_dim(la.eigh(a)[1], 0, 1, axis=0),
     [S3]),
    ("svdvals", la.svdvals, [RECT]),
    ("lstsq", lambda a, b: la.lstsq(a, b)[0], [RECT, RNG.standard_normal(4)]),
    ("matrix_power", lambda a: la.matrix_power(a, 5), [A3]),
    ("matrix_power_neg", lambda a: la.matrix_power(a, -1), [A3]),
    ("multi_dot", lambda a, b, c: la.multi_dot([a, b, c]), [RECT.T.copy(), RECT, B3]),
]


@pytest.mark.parametrize("name, fn, args", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients(name, fn, args):
    diff = tuple(range(len(args)))
    check_derivatives(fn, args, diff_argnums=diff, rtol=1e-5, atol=1e-6)


def test_det_gradient_at_singular_matrices():
    # The gradient of det is the adjugate transposed, finite even when det = 0.
    with lc.enable_x64():
        rank2 = np.float64([[1, 2, 3], [2, 4, 6], [1, 0, 1]])
        want = np.float64([[4, 4, -4], [-2, -2, 2], [0, 0, 0]])  # the cofactors
        got = np.asarray(lc.grad(la.det)(rank2))
        np.testing.assert_allclose(got, want, atol=1e-12)
        np.testing.assert_array_equal(np.asarray(lc.grad(la.det)(np.zeros((3, 3)))), 0.0)
        check_derivatives(la.det, [rank2], rtol=1e-5, atol=1e-6)


def test_slogdet_complex_sign_derivative():
    with lc.enable_x64():
        a = C3.astype(np.complex128)
        t = RNG.standard_normal(a.shape) + 1j * RNG.standard_normal(a.shape)
        (sign, logdet), (dsign, dlog) = lc.jvp(la.slogdet, (a,), (t,))
        eps = 1e-6
        plus, minus = np.linalg.slogdet(a + eps * t), np.linalg.slogdet(a - eps * t)
        np.testing.assert_allclose(dsign, (plus[0] - minus[0]) / (2 * eps), atol=1e-6)
        np.testing.assert_allclose(dlog, (plus[1] - minus[1]) / (2 * eps), atol=1e-6)


# --- vmap, jit ---------------------------------------------------------------------------


@pytest.mark.parametrize("name, fn, args", [
    ("solve", la.solve, [A3, B3]),
    ("inv", la.inv, [A3]),
    ("det", la.det, [A3]),
    ("eigh", lambda a: la.eigh(a)[0], [S3]),
], ids=lambda c: c if isinstance(c, str) else "")
def test_vmap_matches_loop(name, fn, args):
    check_vmap(fn, args)


def test_jit_matches_eager():
    for fn, args in [(la.det, [A23]), (la.solve, [A3, B32]), (lambda a: la.norm(a, 2), [A3]),
                     (la.svdvals, [A23])]:
        check_jit_matches_eager(fn, args)
    # Eager runs op by op where jit fuses: these agree up to rounding.
    close(lc.jit(la.pinv)(RECT), la.pinv(RECT), rtol=1e-6, atol=1e-6)
    for got, want in zip(lc.jit(lambda a: la.qr(a, mode="raw"))(RECT), la.qr(RECT, mode="raw")):
        close(got, want, rtol=1e-6, atol=1e-6)


def test_check_harness_on_solve_batched():
    check(la.solve, [A23, B32], np.linalg.solve, diff_argnums=None, vmap=False,
          rtol=1e-4, atol=1e-5)


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [la.det, la.inv, la.slogdet, la.cholesky, la.eigh, la.eig,
                                lambda a: la.matrix_power(a, 2)])
def test_non_square_errors(fn):
    with pytest.raises(ValueError, match=r"square.*\(4, 3\)"):
        fn(RECT)
    with pytest.raises(ValueError, match=r"at least 2 dimensions.*\(3,\)"):
        fn(B3)


def test_other_errors():
    with pytest.raises(TypeError, match="exponent must be an integer"):
        la.matrix_power(A3, 1.5)
    with pytest.raises(ValueError, match=r"\(4,\).*\(3, 3\)|\(3, 3\).*\(4,\)"):
        la.solve(A3, np.ones(4, np.float32))
    with pytest.raises(ValueError, match="batch dimensions"):
        la.solve(A23, np.ones((3, 3, 2), np.float32))
    with pytest.raises(ValueError, match="Invalid order 'nuc' for vector norm"):
        la.norm(B3, "nuc")
    with pytest.raises(ValueError, match="Invalid order 3 for matrix norm|Invalid order '3'"):
        la.norm(A3, 3)
    with pytest.raises(AxisError):
        la.norm(A3, axis=2)
    with pytest.raises(ValueError, match="mode"):
        la.qr(A3, mode="economic")
    with pytest.raises(ValueError, match="UPLO"):
        la.eigh(S3, UPLO="X")
    with pytest.raises(ValueError, match="method"):
        la.slogdet(A3, method="svd")
    with pytest.raises(ValueError, match="size 3"):
        la.cross(np.ones(2), np.ones(3))
    with pytest.raises(ValueError, match="do not chain"):
        la.multi_dot([A3, RECT])
    with pytest.raises(ValueError, match="at least two"):
        la.multi_dot([A3])
    with pytest.raises(TypeError, match="tensordot: shape mismatch"):
        la.tensordot(A3, RECT, axes=1)
    with pytest.raises(ValueError, match="1-D"):
        la.outer(A3, B3)
    with pytest.raises(TypeError, match="must be an array"):
        la.det([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(lc.ConcretizationTypeError):
        lc.jit(lambda a, b: la.lstsq(a, b, numpy_resid=True))(RECT, np.ones(4, np.float32))
