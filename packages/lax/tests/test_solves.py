"""custom_linear_solve and custom_root: values, implicit derivatives against
closed forms and numerical derivatives (forward and reverse), vmap, jit,
transposition with transpose_solve or symmetry, and the error messages."""

import re

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
from lamella.core.tree_util import tree_map
from lamella.lax.control_flow.loops import while_loop
from lamella.lax.control_flow.solves import custom_linear_solve, custom_root
from lamella.lax.test_util import check_derivatives, check_jit_matches_eager, check_vmap

SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], np.float32)
B = np.array([1.0, 2.0, -1.0], np.float32)
NONSYM = np.array([[3.0, 1.0], [-0.5, 2.0]], np.float32)


def vdot(a, b):
    return lax.dot(a, b)


def conjugate_gradient(matvec, b):
    """CG until the residual is tiny or 20 steps are done (elements of a batch
    stop at different iterations: a batched predicate under vmap)."""
    def cond(c):
        i, _, _, _, rs = c
        return lax.bitwise_and(lax.lt(i, 20), lax.gt(rs, lax.mul(vdot(b, b), 1e-28)))

    def body(c):
        i, x, r, p, rs = c
        ap = matvec(p)
        alpha = lax.div(rs, vdot(p, ap))
        x = lax.add(x, lax.mul(alpha, p))
        r = lax.sub(r, lax.mul(alpha, ap))
        rs_new = vdot(r, r)
        return lax.add(i, 1), x, r, lax.add(r, lax.mul(lax.div(rs_new, rs), p)), rs_new
    zero = lax.full_like(b, 0.0)
    return while_loop(cond, body, (0, zero, b, b, vdot(b, b)))[1]


def cramer(matvec, b):
    """A direct 2x2 solve from the operator's columns."""
    def entry(v, i):
        return lax.index_in_dim(v, i, keepdims=False)

    c0, c1 = matvec(_unit(b, 0)), matvec(_unit(b, 1))
    a, c, bb, d = entry(c0, 0), entry(c0, 1), entry(c1, 0), entry(c1, 1)
    b0, b1 = entry(b, 0), entry(b, 1)
    det = lax.sub(lax.mul(a, d), lax.mul(bb, c))
    x0 = lax.div(lax.sub(lax.mul(b0, d), lax.mul(bb, b1)), det)
    x1 = lax.div(lax.sub(lax.mul(a, b1), lax.mul(c, b0)), det)
    return lax.concatenate([lax.reshape(x0, (1,)), lax.reshape(x1, (1,))], 0)


def _unit(like, i):
    return np.eye(2, dtype=like.dtype)[i]


def spd_solve(a, b):
    return custom_linear_solve(lambda x: lax.dot(a, x), b, conjugate_gradient, symmetric=True)


def nonsym_solve(a, b):
    return custom_linear_solve(lambda x: lax.dot(a, x), b, cramer, transpose_solve=cramer)


# --- custom_linear_solve ----------------------------------------------------------------


def test_linear_solve_values_and_jit():
    np.testing.assert_allclose(spd_solve(SPD, B), np.linalg.solve(SPD, B), rtol=1e-5)
    np.testing.assert_allclose(nonsym_solve(NONSYM, B[:2]), np.linalg.solve(NONSYM, B[:2]),
                               rtol=1e-6)
    check_jit_matches_eager(spd_solve, [SPD, B])


def test_linear_solve_derivatives_match_closed_form():
    with lc.enable_x64():
        a, b = SPD.astype(np.float64), B.astype(np.float64)
        x = np.linalg.solve(a, b)
        db, da = np.array([0.3, -1.0, 0.5]), np.outer([1.0, 0.5, -0.2], [0.1, 0.7, 0.4])
        _, x_dot = lc.jvp(spd_solve, (a, b), (da, db))
        np.testing.assert_allclose(x_dot, np.linalg.solve(a, db - da @ x), rtol=1e-10)
        g = np.array([1.0, -2.0, 0.5])
        ga, gb = lc.grad(lambda a, b: lax.dot(g, spd_solve(a, b)), (0, 1))(a, b)
        lam = np.linalg.solve(a.T, g)
        np.testing.assert_allclose(gb, lam, rtol=1e-10)
        np.testing.assert_allclose(ga, -np.outer(lam, x), rtol=1e-10)


def test_linear_solve_jacobians_match_closed_form():
    # jacrev transposes the solve under vmap; jacfwd batches its tangent solve.
    with lc.enable_x64():
        a, b = SPD.astype(np.float64), B.astype(np.float64)
        a_inv, x = np.linalg.inv(a), np.linalg.solve(a, b)
        for jacobian in (lc.jacrev, lc.jacfwd):
            ja, jb = jacobian(spd_solve, (0, 1))(a, b)
            np.testing.assert_allclose(ja, -np.einsum("ki,j->kij", a_inv, x), atol=1e-14)
            np.testing.assert_allclose(jb, a_inv, atol=1e-14)


@pytest.mark.parametrize("solve", [spd_solve, nonsym_solve], ids=["cg", "cramer"])
def test_linear_solve_derivatives_match_numerical(solve):
    a, b = (SPD, B) if solve is spd_solve else (NONSYM, B[:2])
    check_derivatives(solve, [a, b], diff_argnums=(0, 1), rtol=1e-6, atol=1e-8)


def test_linear_solve_nonsymmetric_transposes_with_transpose_solve():
    with lc.enable_x64():
        a, b, g = NONSYM.astype(np.float64), np.array([1.0, 2.0]), np.array([0.5, -1.0])
        gb = lc.grad(lambda b: lax.dot(g, nonsym_solve(a, b)))(b)
        np.testing.assert_allclose(gb, np.linalg.solve(a.T, g), rtol=1e-12)


def test_linear_solve_vmap():
    check_vmap(spd_solve, [SPD, B])
    check_vmap(nonsym_solve, [NONSYM, B[:2]])


def test_linear_solve_has_aux():
    def solve_counting(matvec, b):
        return conjugate_gradient(matvec, b), lax.full((), 7, np.int32)

    def f(b):
        return custom_linear_solve(lambda x: lax.dot(SPD, x), b, solve_counting,
                                   symmetric=True, has_aux=True)

    x, aux = f(B)
    np.testing.assert_allclose(x, np.linalg.solve(SPD, B), rtol=1e-5)
    assert int(aux) == 7
    (x, aux), (x_dot, aux_dot) = lc.jvp(f, (B,), (np.ones(3, np.float32),))
    np.testing.assert_allclose(x_dot, np.linalg.solve(SPD, np.ones(3)), rtol=1e-5)
    g = lc.grad(lambda b: lax.reduce_sum(f(b)[0], (0,)))(B)
    np.testing.assert_allclose(g, np.linalg.solve(SPD, np.ones(3)), rtol=1e-5)


def test_linear_solve_jaxpr_and_lowering():
    text = str(lc.make_jaxpr(spd_solve)(SPD, B))
    # As JAX prints it: the matvec jaxpr (used twice) and the solve jaxpr up front.
    assert text.startswith("let jaxpr = { lambda ; a:f32[3,3] b:f32[3]. let\n")
    assert "\nlet jaxpr1 = { lambda ; d:f32[3,3] e:i32[] f:f32[3]" in text
    assert "custom_linear_solve[" in text and "jaxprs=_LinearSolveTuple(matvec={ lambda" in text
    assert re.search(r"\n {6}const_lengths=_LinearSolveTuple\(matvec=1, vecmat=1, solve=1, "
                     r"transpose_solve=1\)", text)
    hlo = lc.jit(spd_solve).lower(SPD, B).as_text()
    assert hlo.count("stablehlo.while") == 1  # the solve, inlined


def test_linear_solve_without_transpose_solve():
    def f(b):
        return custom_linear_solve(lambda x: lax.dot(NONSYM, x), b, cramer)

    b = B[:2]
    _, x_dot = lc.jvp(f, (b,), (np.ones(2, np.float32),))  # forward mode needs no transpose
    np.testing.assert_allclose(x_dot, np.linalg.solve(NONSYM, np.ones(2)), rtol=1e-6)
    with pytest.raises(TypeError, match="custom_linear_solve needs transpose_solve for "
                                        "reverse-mode differentiation.*symmetric=True"):
        lc.grad(lambda b: lax.reduce_sum(f(b), (0,)))(b)


def test_linear_solve_shape_errors():
    with pytest.raises(TypeError, match=re.escape(
            "custom_linear_solve: matvec must return a value with the structure and types of "
            "b.\n  b:      f32[2]\n  matvec: f32[3]")):
        custom_linear_solve(lambda x: lax.dot(SPD[:, :2], x), B[:2], cramer)
    with pytest.raises(TypeError, match=re.escape("solve:  (f32[2], f32[2])")):
        custom_linear_solve(lambda x: x, B[:2], lambda mv, b: (b, b))
    with pytest.raises(TypeError, match="must return a pair \\(solution, aux\\) because "
                                        "has_aux=True"):
        custom_linear_solve(lambda x: x, B[:2], lambda mv, b: b, has_aux=True)


# --- custom_root ---------------------------------------------------------------------------


def newton(f, x0):
    """Newton's method with the derivative by jvp, until f is tiny (or 50 steps)."""
    def cond(c):
        i, x, fx = c
        return lax.bitwise_and(lax.lt(i, 50), lax.gt(lax.abs(fx), lax.mul(lax.abs(x), 1e-13)))

    def body(c):
        i, x, _ = c
        fx, dfx = lc.jvp(f, (x,), (lax.full_like(x, 1.0),))
        new = lax.sub(x, lax.div(fx, dfx))
        return lax.add(i, 1), new, f(new)
    return while_loop(cond, body, (0, x0, f(x0)))[1]


def scalar_tangent_solve(g, y):
    return lax.div(y, g(lax.full_like(y, 1.0)))


def root_sqrt(a):
    """sqrt(a) as the root of x^2 - a, with a closed over by f."""
    return custom_root(lambda x: lax.sub(lax.mul(x, x), a), lax.full_like(a, 1.0), newton,
                       scalar_tangent_solve)


def test_root_value_and_implicit_derivative():
    a = np.float32(2.0)
    np.testing.assert_allclose(root_sqrt(a), np.sqrt(2.0), rtol=1e-6)
    with lc.enable_x64():
        a = np.float64(2.0)
        # The implicit function theorem: dx/da = 1 / (2 sqrt(a)).
        np.testing.assert_allclose(lc.grad(root_sqrt)(a), 1 / (2 * np.sqrt(a)), rtol=1e-12)
        _, x_dot = lc.jvp(root_sqrt, (a,), (np.float64(3.0),))
        np.testing.assert_allclose(x_dot, 3 / (2 * np.sqrt(a)), rtol=1e-12)
        np.testing.assert_allclose(lc.grad(lc.grad(root_sqrt))(a), -0.25 * a ** -1.5,
                                   rtol=1e-10)
    check_derivatives(root_sqrt, [np.float32(3.0)], rtol=1e-6)


def test_root_vmap_and_jit():
    a = np.array([0.5, 4.0, 9.0, 1e3], np.float32)
    np.testing.assert_allclose(lc.vmap(root_sqrt)(a), np.sqrt(a), rtol=1e-6)
    np.testing.assert_allclose(lc.jit(lc.vmap(lc.grad(root_sqrt)))(a), 0.5 / np.sqrt(a),
                               rtol=1e-5)
    check_vmap(root_sqrt, [np.float32(3.0)])


def test_root_of_a_pytree_system():
    # {u^2 - a, v^3 - b} = 0, with a diagonal Jacobian: tangent_solve divides leafwise.
    def f_for(a, b):
        return lambda x: {"u": lax.sub(lax.mul(x["u"], x["u"]), a),
                          "v": lax.sub(lax.mul(lax.mul(x["v"], x["v"]), x["v"]), b)}

    def leafwise_newton(f, x):
        for _ in range(30):
            fx = f(x)
            dfx = lc.jvp(f, (x,), (tree_map(lambda l: lax.full_like(l, 1.0), x),))[1]
            x = tree_map(lambda x, y, d: lax.sub(x, lax.div(y, d)), x, fx, dfx)
        return x

    def tangent_solve(g, y):
        return tree_map(lax.div, y, g(tree_map(lambda l: lax.full_like(l, 1.0), y)))

    def solve(a, b):
        guess = {"u": lax.full_like(a, 1.0), "v": lax.full_like(b, 1.0)}
        return custom_root(f_for(a, b), guess, leafwise_newton, tangent_solve)

    with lc.enable_x64():
        a, b = np.array([2.0, 5.0]), np.float64(8.0)
        out = solve(a, b)
        np.testing.assert_allclose(out["u"], np.sqrt(a), rtol=1e-12)
        np.testing.assert_allclose(out["v"], 2.0, rtol=1e-12)
        ga, gb = lc.grad(lambda a, b: lax.add(lax.reduce_sum(solve(a, b)["u"], (0,)),
                                              solve(a, b)["v"]), (0, 1))(a, b)
        np.testing.assert_allclose(ga, 0.5 / np.sqrt(a), rtol=1e-10)
        np.testing.assert_allclose(gb, 1 / (3 * 4.0), rtol=1e-10)


def test_root_has_aux():
    def solve_with_aux(f, x):
        return newton(f, x), lax.full((), 3, np.int32)

    def f(a):
        return custom_root(lambda x: lax.sub(lax.mul(x, x), a), lax.full_like(a, 1.0),
                           solve_with_aux, scalar_tangent_solve, has_aux=True)

    x, aux = f(np.float32(4.0))
    assert float(x) == pytest.approx(2.0) and int(aux) == 3
    assert float(lc.grad(lambda a: f(a)[0])(np.float32(4.0))) == pytest.approx(0.25)


def test_root_errors():
    with pytest.raises(TypeError, match=re.escape(
            "custom_root: f must return a value with the structure and types of "
            "initial_guess.\n  initial_guess: f32[]\n  f returned:    f32[2]")):
        custom_root(lambda x: lax.broadcast(x, (2,)), np.float32(1.0), newton,
                    scalar_tangent_solve)
    with pytest.raises(TypeError, match=re.escape("solve returned: (f32[], f32[])")):
        custom_root(lambda x: x, np.float32(1.0), lambda f, x: (x, x), scalar_tangent_solve)
