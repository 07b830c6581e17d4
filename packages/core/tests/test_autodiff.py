"""jvp, linearize, vjp, grad, value_and_grad, jacfwd, jacrev, hessian against
numerical derivatives (float64), plus what reverse mode must not do: recompute."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy_prims import (
    add,
    cos,
    div,
    exp,
    greater,
    impl_calls,
    log,
    matmul,
    mul,
    neg,
    select,
    sin,
    square,
    sub,
    tanh,
    total,
)

import lamella.core as lc
from lamella.core.test_util import numerical_grad, numerical_jvp


@pytest.fixture(autouse=True)
def x64():
    with lc.enable_x64():
        yield


def f_mix(x):
    return total(mul(sin(x), exp(tanh(x))))


def f_vec(x):
    return add(mul(cos(x), x), div(square(x), add(exp(x), 1.0)))


shapes = hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)
values = st.floats(-2, 2, allow_nan=False, width=64)


@settings(max_examples=30, deadline=None)
@given(hnp.arrays(np.float64, shapes, elements=values),
       hnp.arrays(np.float64, shapes, elements=values))
def test_jvp_matches_numerical(x, t):
    if x.shape != t.shape:
        t = np.ones_like(x)
    y, y_dot = lc.jvp(f_vec, (x,), (t,))
    np.testing.assert_allclose(y, f_vec(x), rtol=1e-12)
    np.testing.assert_allclose(y_dot, numerical_jvp(f_vec, [x], [t]), rtol=1e-6, atol=1e-8)


@settings(max_examples=30, deadline=None)
@given(hnp.arrays(np.float64, shapes, elements=values))
def test_grad_matches_numerical(x):
    np.testing.assert_allclose(lc.grad(f_mix)(x), numerical_grad(f_mix, x), rtol=1e-6,
                               atol=1e-8)


@settings(max_examples=20, deadline=None)
@given(hnp.arrays(np.float64, (3,), elements=values), hnp.arrays(np.float64, (3,), elements=values),
       hnp.arrays(np.float64, (3,), elements=values))
def test_vjp_is_the_transpose_of_jvp(x, t, ct):
    y, f_vjp = lc.vjp(f_vec, x)
    (x_bar,) = f_vjp(ct)
    _, y_dot = lc.jvp(f_vec, (x,), (t,))
    np.testing.assert_allclose(np.dot(ct, y_dot), np.dot(x_bar, t), rtol=1e-10, atol=1e-12)


def test_linearize_equals_jvp_and_runs_forward_once():
    x = np.linspace(0.1, 1, 5)
    impl_calls.clear()
    y, f_jvp = lc.linearize(f_vec, x)
    forward_sins = dict(impl_calls)
    for t in (np.ones(5), np.arange(5.0)):
        np.testing.assert_allclose(f_jvp(t), lc.jvp(f_vec, (x,), (t,))[1], rtol=1e-12)
    np.testing.assert_allclose(y, f_vec(x))
    # Evaluating the linear function never re-runs the nonlinear primal work.
    impl_calls.clear()
    f_jvp(np.ones(5))
    assert "exp" not in impl_calls and "cos" not in impl_calls
    assert forward_sins["exp"] == 1


def test_reverse_mode_saves_residuals_instead_of_recomputing():
    x = np.linspace(0.1, 1, 4)
    impl_calls.clear()
    lc.grad(lambda x: total(sin(sin(sin(x)))))(x)
    assert impl_calls["sin"] == 3  # each forward sin once, none in the backward pass
    assert impl_calls["cos"] == 3


def test_grad_of_pytrees_argnums_and_aux():
    def loss(params, x, scale):
        w, b = params["w"], params["b"]
        pred = add(mul(w, x), b)
        return mul(total(square(pred)), scale), {"pred": pred}

    params = {"w": np.array([1.0, 2.0]), "b": np.array([0.5, -0.5])}
    x = np.array([3.0, 4.0])
    (value, aux), grads = lc.value_and_grad(loss, has_aux=True)(params, x, 2.0)
    pred = params["w"] * x + params["b"]
    assert value == pytest.approx(2 * np.sum(pred ** 2))
    np.testing.assert_allclose(aux["pred"], pred)
    np.testing.assert_allclose(grads["w"], 4 * pred * x)
    np.testing.assert_allclose(grads["b"], 4 * pred)
    g_params, g_x = lc.grad(lambda p, x: loss(p, x, 1.0)[0], argnums=(0, 1))(params, x)
    np.testing.assert_allclose(g_x, 2 * pred * params["w"])
    np.testing.assert_allclose(g_params["b"], 2 * pred)


def test_python_control_flow_on_primal_values_under_grad():
    def relu_ish(x):
        return square(x) if greater(x, 0.0) else neg(x)
    assert lc.grad(relu_ish)(3.0) == 6.0
    assert lc.grad(relu_ish)(-3.0) == -1.0


def test_select_and_comparisons_have_zero_derivative_through_the_predicate():
    f = lambda x: total(select(greater(x, 0.0), square(x), neg(x)))
    x = np.array([-1.5, 0.5, 2.0])
    np.testing.assert_allclose(lc.grad(f)(x), np.where(x > 0, 2 * x, -1.0))


def test_integer_inputs_get_float0_tangents():
    f = lambda x, n: mul(x, n)
    y, f_vjp = lc.vjp(f, 2.0, np.int64(3))
    g_x, g_n = f_vjp(1.0)
    assert g_x == 3.0 and g_n.dtype == lc.float0
    assert lc.grad(f, allow_int=True, argnums=(0, 1))(2.0, np.int64(3))[1].dtype == lc.float0
    _, t = lc.jvp(f, (2.0, np.int64(3)), (1.0, np.zeros((), lc.float0)))
    assert t == 3.0


def test_holomorphic_grad():
    f = lambda z: mul(z, z)
    assert lc.grad(f, holomorphic=True)(np.complex128(1 + 2j)) == pytest.approx(2 + 4j)


def test_jacobians_and_hessian():
    def f(x, y):
        return {"a": mul(sin(x), y), "b": total(mul(x, y))}

    x, y = np.array([0.3, 0.7]), np.array([1.5, -2.0])
    for jac in (lc.jacfwd, lc.jacrev):
        j = jac(f, argnums=(0, 1))(x, y)
        np.testing.assert_allclose(j["a"][0], np.diag(np.cos(x) * y), atol=1e-12)
        np.testing.assert_allclose(j["a"][1], np.diag(np.sin(x)), atol=1e-12)
        np.testing.assert_allclose(j["b"][0], y)
        assert j["a"][0].shape == (2, 2) and j["b"][1].shape == (2,)
    h = lc.hessian(lambda v: total(mul(sin(v), v)))(x)
    np.testing.assert_allclose(h, np.diag(2 * np.cos(x) - x * np.sin(x)), atol=1e-12)
    np.testing.assert_allclose(lc.jacrev(lc.jacfwd(lambda v: total(mul(sin(v), v))))(x), h,
                               atol=1e-12)


def test_matrix_jacobian_layout():
    w = np.arange(6.0).reshape(2, 3)
    j = lc.jacfwd(lambda m: matmul(m, np.ones((3, 1))))(w)
    assert j.shape == (2, 1, 2, 3)
    np.testing.assert_allclose(j, lc.jacrev(lambda m: matmul(m, np.ones((3, 1))))(w))
    np.testing.assert_allclose(j[1, 0], [[0, 0, 0], [1, 1, 1]])


def test_log_jvp_and_grad_of_grad():
    f = lambda x: mul(log(x), x)
    d2 = lc.grad(lc.grad(f))(2.0)
    assert d2 == pytest.approx(0.5)
    d3 = lc.grad(lc.grad(lc.grad(f)))(2.0)
    assert d3 == pytest.approx(-0.25)


def test_stop_gradient():
    f = lambda x: mul(lc.stop_gradient(square(x)), x)
    assert lc.grad(f)(3.0) == 9.0
    assert lc.stop_gradient(np.int64(3)) == 3


def test_sub_and_div_transposes():
    f = lambda x, y: total(div(sub(x, y), 4.0))
    gx, gy = lc.grad(f, argnums=(0, 1))(np.ones(3), np.ones(3))
    np.testing.assert_allclose(gx, 0.25)
    np.testing.assert_allclose(gy, -0.25)
