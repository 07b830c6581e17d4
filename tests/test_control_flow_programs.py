"""Real programs with structured control flow, end to end on XLA: an RNN over a
sequence with `scan` trained by `grad`, Newton's method with `while_loop`, a
root by `custom_root` whose derivative is the implicit-function value, and a
cumulative sum by `associative_scan`."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax

T, D, H = 12, 3, 8


def rnn_loss(params, xs, target):
    w_x, w_h, b, w_o = params

    def step(h, x):
        pre = lax.add(lax.add(lax.dot(x, w_x), lax.dot(h, w_h)), b)
        h = lax.tanh(pre)
        return h, lax.dot(h, w_o)

    h0 = lax.full((H,), 0.0, np.float32)
    _, outputs = lax.scan(step, h0, xs)
    err = lax.sub(outputs, target)
    return lax.div(lax.reduce_sum(lax.mul(err, err), (0, 1)), float(T))


def test_rnn_with_scan_trains():
    rng = np.random.default_rng(0)
    params = [rng.normal(0, 0.3, (D, H)).astype(np.float32),
              rng.normal(0, 0.3, (H, H)).astype(np.float32),
              np.zeros(H, np.float32), rng.normal(0, 0.3, (H, 1)).astype(np.float32)]
    xs = rng.normal(0, 1, (T, D)).astype(np.float32)
    target = np.cumsum(xs[:, :1], 0).astype(np.float32) * 0.3
    step = lc.jit(lc.value_and_grad(rnn_loss))
    losses = []
    for _ in range(30):
        loss, grads = step(params, xs, target)
        params = [p - 0.1 * np.asarray(g) for p, g in zip(params, grads)]
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]
    text = lc.jit(rnn_loss).lower(params, xs, target).as_text()
    assert text.count("stablehlo.while") == 1  # one loop, not T copies of the body


def test_rnn_gradient_matches_the_unrolled_python_loop():
    rng = np.random.default_rng(1)
    params = [rng.normal(0, 0.3, s).astype(np.float32) for s in [(D, H), (H, H), (H,), (H, 1)]]
    xs = rng.normal(0, 1, (T, D)).astype(np.float32)
    target = rng.normal(0, 1, (T, 1)).astype(np.float32)

    def unrolled(params, xs, target):
        w_x, w_h, b, w_o = params
        h = lax.full((H,), 0.0, np.float32)
        total = 0.0
        for t in range(T):
            h = lax.tanh(lax.add(lax.add(lax.dot(xs[t], w_x), lax.dot(h, w_h)), b))
            e = lax.sub(lax.dot(h, w_o), target[t])
            total = lax.add(total, lax.reduce_sum(lax.mul(e, e), (0,)))
        return lax.div(total, float(T))
    for g, ref in zip(lc.grad(rnn_loss)(params, xs, target), lc.grad(unrolled)(params, xs, target)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(ref), rtol=2e-4, atol=1e-6)


def newton_sqrt(a):
    def cond(state):
        x, _ = state
        return lax.gt(lax.abs(lax.sub(lax.mul(x, x), a)), lax.mul(1e-5, a))

    def body(state):
        x, steps = state
        return lax.sub(x, lax.div(lax.sub(lax.mul(x, x), a), lax.mul(2.0, x))), lax.add(steps, 1)
    return lax.while_loop(cond, body, (a, 0))


def test_newtons_method_with_while_loop():
    x, steps = lc.jit(newton_sqrt)(np.float32(10.0))
    assert float(x) == pytest.approx(np.sqrt(10.0), rel=1e-5) and 2 < int(steps) < 20
    roots, _ = lc.vmap(newton_sqrt)(np.float32([1.0, 4.0, 100.0, 1e4]))
    np.testing.assert_allclose(np.asarray(roots), [1.0, 2.0, 10.0, 100.0], rtol=1e-5)


def test_custom_root_derivative_is_the_implicit_function_value():
    def sqrt_via_root(a):
        def f(x):
            return lax.sub(lax.mul(x, x), a)

        def solve(f, x0):
            return lax.fori_loop(0, 30, lambda i, x: lax.sub(x, lax.div(f(x), lax.mul(2.0, x))), x0)

        def tangent_solve(g, y):
            return lax.div(y, g(1.0))
        return lax.custom_root(f, a, solve, tangent_solve)

    a = np.float32(9.0)
    assert float(sqrt_via_root(a)) == pytest.approx(3.0, rel=1e-6)
    assert float(lc.grad(sqrt_via_root)(a)) == pytest.approx(1 / (2 * 3.0), rel=1e-5)
    assert float(lc.jit(lc.grad(sqrt_via_root))(a)) == pytest.approx(1 / 6.0, rel=1e-5)


def test_cumulative_sum_by_associative_scan_equals_cumsum():
    x = np.random.default_rng(2).integers(-5, 5, 37).astype(np.int32)
    np.testing.assert_array_equal(np.asarray(lax.associative_scan(lax.add, x)),
                                  np.asarray(lax.cumsum(x, 0)))
