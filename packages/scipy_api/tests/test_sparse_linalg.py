"""lamella.scipy.sparse.linalg (cg, gmres, bicgstab) against numpy.linalg.solve: SPD and
nonsymmetric systems in float64 to the tolerance asked, with and without
preconditioners, matrices, functions and `@`-objects as operators, pytree right-hand
sides; gradients with respect to b and the matrix equal the dense solve's; vmap against
a loop; jit; bad input. Solvers are jitted once per configuration at module level, so
each compiles once for all hypothesis examples."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
import lamella.numpy as jnp
from lamella.scipy.sparse.linalg import bicgstab, cg, gmres

N = 8
TOL = 1e-10


def spd(seed):
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((N, N))
    return B @ B.T / N + 0.5 * np.eye(N)


def nonsymmetric(seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((N, N)) / np.sqrt(N) + 2 * np.eye(N)


def rhs(seed, shape=(N,)):
    return np.random.default_rng(seed + 1000).standard_normal(shape)


def gmres_incremental(A, b, x0=None, **kwargs):
    return gmres(A, b, x0, solve_method="incremental", **kwargs)


def gmres_short(A, b, x0=None, **kwargs):
    return gmres(A, b, x0, restart=3, **kwargs)


SOLVERS = {"cg": (cg, spd), "bicgstab": (bicgstab, nonsymmetric), "gmres": (gmres, nonsymmetric),
           "gmres_incremental": (gmres_incremental, nonsymmetric),
           "gmres_restart3": (gmres_short, nonsymmetric)}


def _jitted(solver):
    # A as a function closing over a traced matrix, M as a traced matrix.
    return lc.jit(lambda A, b, M, x0: solver(lambda x: A @ x, b, x0, tol=TOL, M=M)[0])


JITTED = {name: _jitted(solver) for name, (solver, _) in SOLVERS.items()}


# Plain "gmres" (batched, one cycle here) is covered by the pytree and vmap tests.
@pytest.mark.parametrize("name", ["cg", "bicgstab", "gmres_incremental", "gmres_restart3"])
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), precondition=st.booleans(), guess=st.booleans())
def test_solution_matches_dense_solve(name, seed, precondition, guess):
    with lc.enable_x64():
        _, make = SOLVERS[name]
        A, b = make(seed), rhs(seed)
        # Jacobi, or the identity matrix (a preconditioner that changes nothing).
        M = np.diag(1 / np.diag(A)) if precondition else np.eye(N)
        x0 = rhs(seed + 1) if guess else np.zeros(N)
        x = np.asarray(JITTED[name](A, b, M, x0))
        assert x.dtype == np.float64
        assert np.linalg.norm(A @ x - b) <= 1.01 * TOL * np.linalg.norm(b)
        np.testing.assert_allclose(x, np.linalg.solve(A, b),
                                   atol=10 * TOL * np.linalg.cond(A) * np.linalg.norm(b))


def test_float32_default_tolerance():
    A, b = spd(1).astype(np.float32), rhs(1).astype(np.float32)
    x, info = cg(A, b)
    assert info is None
    assert np.asarray(x).dtype == np.float32
    assert np.linalg.norm(A @ np.asarray(x, np.float64) - b) <= 2e-5 * np.linalg.norm(b)


def test_atol_and_maxiter():
    A, b = spd(2), rhs(2)
    with lc.enable_x64():
        loose, _ = cg(A, b, tol=0.0, atol=1e-2)
        assert 1e-5 < np.linalg.norm(A @ np.asarray(loose) - b) <= 1e-2
        two_steps, _ = cg(A, b, tol=0.0, maxiter=2)
        # Two CG steps from 0 minimise the A-norm error over span(b, A b).
        K = np.stack([b, A @ b], axis=1)
        best = K @ np.linalg.solve(K.T @ A @ K, K.T @ b)
        np.testing.assert_allclose(two_steps, best, rtol=1e-8)


class MatmulOnly:
    """An operator known only through `@` and `shape`, like a sparse matrix class."""

    def __init__(self, a):
        self.a = jnp.asarray(a)
        self.shape = self.a.shape

    def __matmul__(self, x):
        return self.a @ x


def test_operator_forms():
    A, b = spd(3), rhs(3)
    want = np.linalg.solve(A, b)
    with lc.enable_x64():
        for operator in (A, jnp.asarray(A), MatmulOnly(A), lambda x: jnp.asarray(A) @ x):
            x, _ = cg(operator, b, tol=TOL)
            np.testing.assert_allclose(x, want, rtol=1e-8)
        x, _ = cg(A, b, x0=want, maxiter=0)
        np.testing.assert_allclose(x, want, rtol=1e-12)


def _block_operator(t):
    # The symmetric positive-definite map [[3 I, E], [E^T, 4 I]] on (u, v) with
    # u of shape (2,), v of shape (3,) and E = [I 0].
    return {"u": 3 * t["u"] + t["v"][:2], "v": jnp.concatenate([t["u"], jnp.zeros(1)]) + 4 * t["v"]}


BLOCK = np.block([[3 * np.eye(2), np.eye(2, 3)], [np.eye(3, 2), 4 * np.eye(3)]])


@pytest.mark.parametrize("name", ["cg", "bicgstab", "gmres"])
def test_pytree_right_hand_side(name):
    solver, _ = SOLVERS[name]
    b = {"u": np.array([1.0, 2.0]), "v": np.array([3.0, 4.0, 5.0])}
    with lc.enable_x64():
        x, info = lc.jit(lambda b: solver(_block_operator, b, tol=TOL))(b)
    # gmres reports 0 (or -1 for a NaN solution) as JAX does; cg and bicgstab None.
    assert (int(info) == 0) if name == "gmres" else (info is None)
    want = np.linalg.solve(BLOCK, np.concatenate([b["u"], b["v"]]))
    assert set(x) == {"u", "v"}
    np.testing.assert_allclose(np.concatenate([x["u"], x["v"]]), want, rtol=1e-9)


def test_complex_hermitian_cg():
    rng = np.random.default_rng(4)
    B = rng.standard_normal((N, N)) + 1j * rng.standard_normal((N, N))
    A = (B @ B.conj().T / N + np.eye(N)).astype(np.complex64)
    b = (rng.standard_normal(N) + 1j * rng.standard_normal(N)).astype(np.complex64)
    x, _ = cg(A, b)
    assert np.asarray(x).dtype == np.complex64
    np.testing.assert_allclose(x, np.linalg.solve(A, b), rtol=1e-4, atol=1e-4)


def _dense_loss(A, b):
    return jnp.sum(jnp.sin(jnp.linalg.solve(A, b)))


# gmres differentiates through the same custom_linear_solve as bicgstab (a general
# operator, transposed); its compile is the slowest, so it is left out here.
@pytest.mark.parametrize("name", ["cg", "bicgstab"])
def test_gradients_equal_dense_solve(name):
    solver, make = SOLVERS[name]
    A, b = make(5), rhs(5)

    def loss(A, b):
        # A enters as the parameters of a function operator.
        return jnp.sum(jnp.sin(solver(lambda x: A @ x, b, tol=1e-12)[0]))

    with lc.enable_x64():
        grads = lc.grad(loss, argnums=(0, 1))(A, b)
        want = lc.grad(_dense_loss, argnums=(0, 1))(A, b)
    np.testing.assert_allclose(grads[0], want[0], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(grads[1], want[1], rtol=1e-8, atol=1e-10)


def test_forward_derivative_equals_dense_solve():
    A, b = spd(6), rhs(6)
    dA, db = rhs(7, (N, N)), rhs(8)
    with lc.enable_x64():
        _, tangent = lc.jvp(lambda A, b: cg(A, b, tol=1e-12)[0], (A, b), (dA, db))
        _, want = lc.jvp(jnp.linalg.solve, (A, b), (dA, db))
    np.testing.assert_allclose(tangent, want, rtol=1e-8)


@pytest.mark.parametrize("name", ["cg", "bicgstab", "gmres"])
def test_vmap_matches_loop(name):
    solver, make = SOLVERS[name]
    As = np.stack([make(s) for s in range(3)])
    bs = np.stack([rhs(s) for s in range(3)])
    identity, zeros = np.eye(N), np.zeros(N)
    with lc.enable_x64():
        batched = lc.vmap(JITTED[name], in_axes=(0, 0, None, None))(As, bs, identity, zeros)
        looped = np.stack([JITTED[name](A, b, identity, zeros) for A, b in zip(As, bs)])
    np.testing.assert_allclose(batched, looped, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(batched, np.linalg.solve(As, bs[..., None])[..., 0], rtol=1e-8)


def test_errors_name_the_mistake():
    A, b = spd(9), rhs(9)
    with pytest.raises(ValueError, match=r"\(8, 8\) matrix, so b must be one array of shape"):
        cg(A, np.ones(5))
    with pytest.raises(ValueError, match="square matrix"):
        gmres(np.ones((3, 4)), np.ones(4))
    with pytest.raises(ValueError, match="x0 and b must have the same tree structure"):
        cg(lambda x: x, {"a": np.ones(2)}, x0=np.ones(2))
    with pytest.raises(ValueError, match="same shapes"):
        bicgstab(A, b, x0=np.ones(3))
    with pytest.raises(ValueError, match=r"A\(x\) must return arrays with the structure"):
        cg(lambda x: x[:2], np.ones(3))
    with pytest.raises(ValueError, match=r"M\(x\) must return"):
        gmres(A, b, M=lambda x: jnp.sum(x))
    with pytest.raises(ValueError, match="solve_method"):
        gmres(A, b, solve_method="qr")
    with pytest.raises(TypeError, match="must be a function, a matrix"):
        bicgstab("A", b)
