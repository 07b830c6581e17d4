"""Pairwise (and deeper) compositions of jit, grad, vmap, jvp and linearize.

Each composition is checked against a reference that does not use the
transformation being tested: central differences in float64 for derivatives,
Python loops for vmap, eager evaluation for jit.
"""

from __future__ import annotations

import functools

import numpy as np
import numpy_prims as P
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella.core.structural import reduce_sum, reshape
from lamella.core.test_util import numerical_grad as num_grad
from lamella.core.test_util import numerical_jacobian as num_jacobian
from lamella.core.test_util import numerical_jvp

SETTINGS = settings(max_examples=25, deadline=None)
EPS = 1e-6
RTOL = 1e-6
ATOL = 1e-8


def x64(test):
    """Runs the test in 64-bit mode, so float64 inputs stay float64."""
    @functools.wraps(test)
    def wrapped(*args, **kwargs):
        with lc.enable_x64():
            return test(*args, **kwargs)
    return wrapped


# ---------------------------------------------------------------------------
# References.


def num_jvp(f, x, t, eps=EPS):
    """Central difference of f at x along t (f: array -> pytree of arrays)."""
    return numerical_jvp(f, [np.asarray(x, np.float64)], [np.asarray(t, np.float64)], eps)


def close(actual, expected, rtol=RTOL, atol=ATOL):
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            close(a, e, rtol, atol)
        return
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def loop(f, *args):
    """Python-loop reference for vmap(f) over axis 0 of every argument."""
    outs = [f(*(a[i] for a in args)) for i in range(len(args[0]))]
    if isinstance(outs[0], tuple):
        return tuple(np.stack(o) for o in zip(*outs))
    return np.stack([np.asarray(o) for o in outs])


# ---------------------------------------------------------------------------
# Test functions (all smooth on the inputs used).


def f_scalar(x):
    """R^n -> R."""
    return P.total(P.add(P.mul(P.sin(x), P.exp(P.tanh(x))),
                         P.div(P.square(x), P.add(1.0, P.exp(x)))))


def f_vec(x):
    """R^n -> R^n, elementwise."""
    return P.add(P.mul(P.tanh(x), P.cos(x)), P.square(P.sin(x)))


def f_mat(x):
    """R^(n,1) -> R^(n,1), with a matmul against a fixed matrix."""
    w = np.linspace(-1.0, 1.0, x.shape[0] ** 2).reshape(x.shape[0], x.shape[0])
    return P.tanh(P.matmul(w, P.sin(x)))


def f_select(x):
    """A piecewise function (smooth away from x = 0.3)."""
    return P.total(P.select(P.greater(x, 0.3), P.exp(x), P.mul(x, P.cos(x))))


SCALAR_FUNS = {"f_scalar": f_scalar, "f_select": f_select,
               "f_mat_sum": lambda x: P.total(f_mat(P.log(P.add(P.square(x), 1.0))))}


def points(shape=None):
    shapes = (st.just(shape) if shape is not None
              else st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple))
    return shapes.flatmap(lambda s: st.integers(0, 2**16).map(
        lambda seed: _away_from_kink(np.random.default_rng(seed).uniform(-1.5, 1.5, s))))


def _away_from_kink(x):
    return np.where(np.abs(x - 0.3) < 1e-3, x + 0.01, x)


def column_points():
    return st.tuples(st.integers(1, 3), st.integers(0, 2**16)).map(
        lambda a: np.random.default_rng(a[1]).uniform(-1.5, 1.5, (a[0], 1)))


def scalar_fun_and_point():
    return st.tuples(st.sampled_from(sorted(SCALAR_FUNS)), st.integers(0, 2**16)).map(
        lambda a: (SCALAR_FUNS[a[0]],
                   _point_for(a[0], np.random.default_rng(a[1]))))


def _point_for(name, rng):
    shape = (int(rng.integers(1, 4)), 1) if name == "f_mat_sum" else (int(rng.integers(1, 5)),)
    return _away_from_kink(rng.uniform(-1.5, 1.5, shape))


# ---------------------------------------------------------------------------
# grad with jit.


@SETTINGS
@given(fx=scalar_fun_and_point())
@x64
def test_grad_of_jit(fx):
    f, x = fx
    close(lc.grad(lc.jit(f))(x), num_grad(f, x))


@SETTINGS
@given(fx=scalar_fun_and_point())
@x64
def test_jit_of_grad(fx):
    f, x = fx
    close(lc.jit(lc.grad(f))(x), num_grad(f, x))


@x64
def test_jit_of_grad_equals_eager_grad_bitwise():
    x = np.linspace(-1.0, 1.0, 5)
    for f in SCALAR_FUNS.values():
        x_in = x.reshape(5, 1) if f is SCALAR_FUNS["f_mat_sum"] else x
        np.testing.assert_array_equal(lc.jit(lc.grad(f))(x_in), lc.grad(f)(x_in))


# ---------------------------------------------------------------------------
# grad with vmap.


@SETTINGS
@given(xs=points((3, 4)))
@x64
def test_vmap_of_grad(xs):
    actual = lc.vmap(lc.grad(f_scalar))(xs)
    close(actual, np.stack([num_grad(f_scalar, x) for x in xs]))
    close(actual, loop(lc.grad(f_scalar), xs))


@SETTINGS
@given(xs=points((3, 2)))
@x64
def test_grad_of_vmap_sum(xs):
    def batch_loss(xs):
        return P.total(lc.vmap(f_scalar)(xs))
    close(lc.grad(batch_loss)(xs), num_grad(batch_loss, xs))
    close(lc.grad(batch_loss)(xs), np.stack([num_grad(f_scalar, x) for x in xs]))


@x64
def test_grad_of_vmap_with_matmul_rule_each_case():
    rng = np.random.default_rng(0)
    xs, w, ws = rng.normal(size=(3, 2, 2)), rng.normal(size=(2, 2)), rng.normal(size=(3, 2, 2))
    cases = {
        "x batched": lambda xs: P.total(P.tanh(lc.vmap(P.matmul, in_axes=(0, None))(xs, w))),
        "y batched": lambda xs: P.total(P.tanh(lc.vmap(P.matmul, in_axes=(None, 0))(w, xs))),
        "both": lambda xs: P.total(P.tanh(lc.vmap(P.matmul)(xs, ws))),
    }
    for name, loss in cases.items():
        assert np.allclose(lc.grad(loss)(xs), num_grad(loss, xs), rtol=1e-6, atol=1e-8), name


@SETTINGS
@given(xs=points((2, 3)), y=points((3,)))
@x64
def test_vmap_of_grad_in_axes_none_and_argnums(xs, y):
    def f(x, y):
        return P.total(P.mul(P.sin(x), P.exp(P.mul(x, y))))
    g = lc.vmap(lc.grad(f, argnums=(0, 1)), in_axes=(0, None))
    gx, gy = g(xs, y)
    close(gx, np.stack([num_grad(lambda x: f(x, y), x) for x in xs]))
    close(gy, np.stack([num_grad(lambda y, x=x: f(x, y), y) for x in xs]))


# ---------------------------------------------------------------------------
# grad with jvp.


@SETTINGS
@given(x=points((3,)), t=points((3,)))
@x64
def test_jvp_of_grad(x, t):
    """A Hessian-vector product, forward over reverse."""
    g, hvp = lc.jvp(lc.grad(f_scalar), (x,), (t,))
    close(g, num_grad(f_scalar, x))
    close(hvp, num_jvp(lambda x: num_grad(f_scalar, x, 1e-4), x, t, 1e-4), rtol=1e-5, atol=1e-7)
    close(hvp, lc.jacfwd(lc.grad(f_scalar))(x) @ t, rtol=1e-10, atol=1e-12)


@SETTINGS
@given(x=points((3,)), t=points((3,)))
@x64
def test_grad_of_jvp_output(x, t):
    """Reverse over forward: d/dx <grad f(x), t> = H t."""
    def directional(x):
        return lc.jvp(f_scalar, (x,), (t,))[1]
    close(directional(x), num_jvp(f_scalar, x, t))
    expected = num_grad(directional, x)
    close(lc.grad(directional)(x), expected)
    close(lc.grad(directional)(x), lc.jvp(lc.grad(f_scalar), (x,), (t,))[1], rtol=1e-10)


@x64
def test_grad_of_grad_scalar():
    f = lambda x: P.mul(P.sin(x), P.exp(x))
    x = np.float64(0.7)
    d2 = lc.grad(lc.grad(f))(x)
    close(d2, 2 * np.cos(x) * np.exp(x), rtol=1e-12)
    close(d2, num_jvp(lc.grad(f), x, 1.0), rtol=1e-7)


# ---------------------------------------------------------------------------
# linearize with vmap, jit, grad, jvp.


@SETTINGS
@given(xs=points((3, 2)), ts=points((3, 2)))
@x64
def test_linearize_of_vmap(xs, ts):
    y, f_jvp = lc.linearize(lc.vmap(f_vec), xs)
    close(y, loop(f_vec, xs))
    close(f_jvp(ts), num_jvp(lc.vmap(f_vec), xs, ts))
    close(f_jvp(ts), np.stack([num_jvp(f_vec, x, t) for x, t in zip(xs, ts)]))


@SETTINGS
@given(x=points((3,)), ts=points((4, 3)))
@x64
def test_vmap_of_linearized_jvp_function(x, ts):
    _, f_jvp = lc.linearize(f_vec, x)
    close(lc.vmap(f_jvp)(ts), np.stack([num_jvp(f_vec, x, t) for t in ts]))
    close(lc.vmap(f_jvp, out_axes=1)(ts), np.stack([f_jvp(t) for t in ts], axis=1), rtol=1e-12)


@SETTINGS
@given(x=column_points())
@x64
def test_linearize_of_jit(x):
    t = np.cos(np.arange(x.size)).reshape(x.shape)
    y, f_jvp = lc.linearize(lc.jit(f_mat), x)
    np.testing.assert_array_equal(y, f_mat(x))
    close(f_jvp(t), num_jvp(f_mat, x, t))


@SETTINGS
@given(x=points((3,)), t=points((3,)))
@x64
def test_jit_of_linearize(x, t):
    @lc.jit
    def lin(x, t):
        y, f_jvp = lc.linearize(f_vec, x)
        return y, f_jvp(t)
    y, jt = lin(x, t)
    np.testing.assert_array_equal(y, f_vec(x))
    close(jt, num_jvp(f_vec, x, t))


@SETTINGS
@given(x=points((3,)), t=points((3,)))
@x64
def test_jit_of_linearized_function(x, t):
    _, f_jvp = lc.linearize(f_vec, x)
    np.testing.assert_array_equal(lc.jit(f_jvp)(t), f_jvp(t))
    close(lc.jit(f_jvp)(t), num_jvp(f_vec, x, t))


@SETTINGS
@given(x=points((3,)), t=points((3,)))
@x64
def test_linearize_of_grad(x, t):
    g, hvp = lc.linearize(lc.grad(f_scalar), x)
    close(g, num_grad(f_scalar, x))
    close(hvp(t), lc.jvp(lc.grad(f_scalar), (x,), (t,))[1], rtol=1e-10, atol=1e-12)
    close(hvp(t), num_jvp(lambda x: num_grad(f_scalar, x, 1e-4), x, t, 1e-4), rtol=1e-5,
          atol=1e-7)


@SETTINGS
@given(x=points((3,)), t=points((3,)))
@x64
def test_grad_through_linearized_jvp(x, t):
    def directional(x):
        return P.total(lc.linearize(f_vec, x)[1](t))
    close(lc.grad(directional)(x), num_grad(directional, x))


@SETTINGS
@given(x=points((3,)), t=points((3,)), s=points((3,)))
@x64
def test_jvp_of_linearize_and_linearize_of_jvp(x, t, s):
    """Second directional derivative d2f[t, s] both ways."""
    def lin_t(x):
        return lc.linearize(f_vec, x)[1](t)
    def jvp_t(x):
        return lc.jvp(f_vec, (x,), (t,))[1]
    expected = num_jvp(jvp_t, x, s)
    close(lc.jvp(lin_t, (x,), (s,))[1], expected)
    close(lc.linearize(jvp_t, x)[1](s), expected)


# ---------------------------------------------------------------------------
# jit with vmap and jvp.


@SETTINGS
@given(xs=points((3, 2)))
@x64
def test_jit_of_vmap(xs):
    actual = lc.jit(lc.vmap(f_vec))(xs)
    np.testing.assert_array_equal(actual, lc.vmap(f_vec)(xs))
    close(actual, loop(f_vec, xs), rtol=1e-14)


@SETTINGS
@given(xs=points((3, 2)))
@x64
def test_vmap_of_jit(xs):
    close(lc.vmap(lc.jit(f_vec))(xs), loop(f_vec, xs), rtol=1e-14)
    close(lc.vmap(lc.jit(f_scalar), in_axes=1)(xs), loop(f_scalar, xs.T), rtol=1e-14)


@SETTINGS
@given(x=points((3,)), t=points((3,)))
@x64
def test_jvp_of_jit(x, t):
    y, yt = lc.jvp(lc.jit(f_vec), (x,), (t,))
    np.testing.assert_array_equal(y, f_vec(x))
    close(yt, num_jvp(f_vec, x, t))


@SETTINGS
@given(x=points((3,)), t=points((3,)))
@x64
def test_jit_of_jvp(x, t):
    y, yt = lc.jit(lambda x, t: lc.jvp(f_vec, (x,), (t,)))(x, t)
    np.testing.assert_array_equal(y, f_vec(x))
    close(yt, num_jvp(f_vec, x, t))


@SETTINGS
@given(xs=points((3, 2)), ts=points((3, 2)))
@x64
def test_vmap_of_jvp(xs, ts):
    ys, yts = lc.vmap(lambda x, t: lc.jvp(f_vec, (x,), (t,)))(xs, ts)
    close(ys, loop(f_vec, xs), rtol=1e-14)
    close(yts, np.stack([num_jvp(f_vec, x, t) for x, t in zip(xs, ts)]))


@SETTINGS
@given(xs=points((3, 2)), ts=points((3, 2)))
@x64
def test_jvp_of_vmap(xs, ts):
    ys, yts = lc.jvp(lc.vmap(f_vec), (xs,), (ts,))
    close(ys, loop(f_vec, xs), rtol=1e-14)
    close(yts, np.stack([num_jvp(f_vec, x, t) for x, t in zip(xs, ts)]))


@x64
def test_jvp_of_vmap_with_unbatched_tangent_input():
    rng = np.random.default_rng(1)
    xs, w, tw = rng.normal(size=(4, 3)), rng.normal(size=(3,)), rng.normal(size=(3,))
    f = lambda x, w: P.total(P.mul(P.sin(x), w))
    g = lc.vmap(f, in_axes=(0, None))
    _, out_t = lc.jvp(lambda w: g(xs, w), (w,), (tw,))
    close(out_t, num_jvp(lambda w: g(xs, w), w, tw))


@x64
def test_jit_of_jit_and_jvp_of_jvp():
    x = np.linspace(-1, 1, 4)
    inner = lc.jit(f_vec)
    np.testing.assert_array_equal(lc.jit(lambda x: P.mul(inner(x), 2.0))(x), f_vec(x) * 2.0)
    t, s = np.ones(4), np.linspace(0.5, 1.5, 4)
    jt = lambda x: lc.jvp(f_vec, (x,), (t,))[1]
    close(lc.jvp(jt, (x,), (s,))[1], num_jvp(jt, x, s))


# ---------------------------------------------------------------------------
# Perturbation confusion.


@x64
def test_perturbation_confusion_grad():
    """d/dx [x * d/dy (x*y)] = d/dx [x * x] = 2x; confusing the tracers gives x (or 3x)."""
    def f(x):
        inner = lc.grad(lambda y: P.mul(x, y))(np.float64(5.0))
        return P.mul(x, inner)
    for x in (0.5, 1.0, 3.0):
        np.testing.assert_allclose(lc.grad(f)(np.float64(x)), 2 * x, rtol=1e-14)


@x64
def test_perturbation_confusion_siskind_pearlmutter():
    """d/dx [x * (d/dy (x + y) at y=1)] at x=1 is 1 (confusion gives 2)."""
    def f(x):
        return P.mul(x, lc.grad(lambda y: P.add(x, y))(np.float64(1.0)))
    np.testing.assert_allclose(lc.grad(f)(np.float64(1.0)), 1.0)
    np.testing.assert_allclose(lc.jvp(f, (np.float64(1.0),), (np.float64(1.0),))[1], 1.0)


@x64
def test_perturbation_confusion_jvp():
    def f(x):
        inner = lc.jvp(lambda y: P.mul(x, y), (np.float64(5.0),), (np.float64(1.0),))[1]
        return P.mul(x, inner)
    for x in (0.5, 2.0):
        _, dx = lc.jvp(f, (np.float64(x),), (np.float64(1.0),))
        np.testing.assert_allclose(dx, 2 * x, rtol=1e-14)
        np.testing.assert_allclose(lc.grad(f)(np.float64(x)), 2 * x, rtol=1e-14)


@x64
def test_perturbation_confusion_under_jit_and_vmap():
    def f(x):
        inner = lc.jit(lc.grad(lambda y: P.mul(P.sin(x), y)))(np.float64(2.0))
        return P.mul(x, inner)          # x sin x
    xs = np.linspace(0.1, 2.0, 4)
    expected = np.sin(xs) + xs * np.cos(xs)
    close(lc.vmap(lc.grad(f))(xs), expected, rtol=1e-12)
    close(lc.jit(lc.vmap(lc.grad(f)))(xs), expected, rtol=1e-12)


@x64
def test_closure_over_outer_grad_tracer_in_linearize():
    def f(x):
        _, f_jvp = lc.linearize(lambda y: P.mul(P.square(x), y), np.float64(3.0))
        return f_jvp(np.float64(1.0))      # x^2
    close(lc.grad(f)(np.float64(1.5)), 3.0, rtol=1e-14)


# ---------------------------------------------------------------------------
# vmap inside grad inside vmap, and triple nesting.


@SETTINGS
@given(xs=points((3, 2)), w=points((4, 2)))
@x64
def test_vmap_inside_grad_inside_vmap(xs, w):
    def loss(x, w):
        return P.total(lc.vmap(lambda row: P.tanh(P.total(P.mul(row, x))))(w))
    actual = lc.vmap(lc.grad(loss), in_axes=(0, None))(xs, w)
    expected = np.stack([num_grad(lambda x: loss(x, w), x) for x in xs])
    close(actual, expected)
    # Analytic: sum_r (1 - tanh^2(w_r . x)) w_r
    analytic = np.stack([((1 - np.tanh(w @ x) ** 2)[:, None] * w).sum(0) for x in xs])
    close(actual, analytic, rtol=1e-12)


@x64
def test_grad_grad_grad():
    f = lambda x: P.mul(P.exp(P.mul(x, 2.0)), P.sin(x))
    x = np.float64(0.4)
    d3 = lc.grad(lc.grad(lc.grad(f)))(x)
    # (e^{2x} sin x)''' = e^{2x} (2 sin x + 11 cos x)
    close(d3, np.exp(2 * x) * (2 * np.sin(x) + 11 * np.cos(x)), rtol=1e-12)
    close(lc.jit(lc.grad(lc.jit(lc.grad(lc.grad(f)))))(x), d3, rtol=1e-14)


@SETTINGS
@given(xs=points((3, 2)), ts=points((3, 2)))
@x64
def test_vmap_of_jvp_of_grad(xs, ts):
    hvps = lc.vmap(lambda x, t: lc.jvp(lc.grad(f_scalar), (x,), (t,))[1])(xs, ts)
    expected = np.stack([num_jvp(lambda x: num_grad(f_scalar, x, 1e-4), x, t, 1e-4)
                         for x, t in zip(xs, ts)])
    close(hvps, expected, rtol=1e-5, atol=1e-7)


@SETTINGS
@given(xs=points((3, 2)))
@x64
def test_jit_of_vmap_of_grad_and_grad_of_jit_of_vmap(xs):
    expected = np.stack([num_grad(f_scalar, x) for x in xs])
    close(lc.jit(lc.vmap(lc.grad(f_scalar)))(xs), expected)
    loss = lambda xs: P.total(lc.jit(lc.vmap(f_scalar))(xs))
    close(lc.grad(loss)(xs), expected)
    close(lc.grad(lc.jit(lambda xs: P.total(lc.vmap(lc.jit(f_scalar))(xs))))(xs), expected)


@x64
def test_vmap_vmap_grad_nested_axes():
    xs = np.random.default_rng(2).normal(size=(2, 3, 4))
    g = lc.vmap(lc.vmap(lc.grad(f_scalar), in_axes=1), in_axes=0)(np.swapaxes(xs, 1, 2))
    expected = np.stack([[num_grad(f_scalar, xs[i, j]) for j in range(3)] for i in range(2)])
    close(g, expected)


# ---------------------------------------------------------------------------
# Hessians and Jacobians.


@SETTINGS
@given(fx=scalar_fun_and_point())
@x64
def test_hessian_fwd_over_rev_equals_rev_over_fwd(fx):
    f, x = fx
    h1 = lc.jacfwd(lc.jacrev(f))(x)
    h2 = lc.jacrev(lc.jacfwd(f))(x)
    h3 = lc.hessian(f)(x)
    assert h1.shape == x.shape * 2
    close(h1, h2, rtol=1e-10, atol=1e-12)
    close(h3, h1, rtol=1e-10, atol=1e-12)
    close(h1, num_jacobian(lc.grad(f), x), rtol=1e-6, atol=1e-8)
    close(h1, np.swapaxes(h1.reshape(x.size, x.size), 0, 1).reshape(h1.shape),
          rtol=1e-10, atol=1e-12)


@SETTINGS
@given(x=column_points())
@x64
def test_jacfwd_jacrev_agree_with_numerical(x):
    jf, jr = lc.jacfwd(f_mat)(x), lc.jacrev(f_mat)(x)
    assert jf.shape == x.shape * 2
    close(jf, jr, rtol=1e-12, atol=1e-14)
    close(jf, num_jacobian(f_mat, x))


@x64
def test_jit_of_hessian_and_vmap_of_hessian():
    xs = np.random.default_rng(3).uniform(-1, 1, (3, 2))
    hs = lc.vmap(lc.hessian(f_scalar))(xs)
    close(hs, np.stack([num_jacobian(lc.grad(f_scalar), x) for x in xs]))
    np.testing.assert_array_equal(lc.jit(lc.hessian(f_scalar))(xs[0]),
                                  lc.hessian(f_scalar)(xs[0]))


# ---------------------------------------------------------------------------
# jit vs eager: the same NumPy interpreter, so bit-identical results.


PROGRAMS = {
    "f_scalar": (f_scalar, (5,)),
    "f_vec": (f_vec, (2, 3)),
    "f_mat": (f_mat, (3, 1)),
    "f_select": (f_select, (4,)),
}


@SETTINGS
@given(name=st.sampled_from(sorted(PROGRAMS)), seed=st.integers(0, 2**16),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_jit_vs_eager_bitwise(name, seed, dtype):
    f, shape = PROGRAMS[name]
    with lc.enable_x64(dtype == np.float64):
        x = np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)
        eager, jitted = f(x), lc.jit(f)(x)
        assert np.asarray(jitted).dtype == np.asarray(eager).dtype == dtype
        np.testing.assert_array_equal(jitted, eager)
        if name != "f_vec" and name != "f_mat":
            np.testing.assert_array_equal(lc.jit(lc.grad(f))(x), lc.grad(f)(x))
        t = np.ones(shape, dtype)
        np.testing.assert_array_equal(lc.jit(lambda x: lc.jvp(f, (x,), (t,)))(x)[1],
                                      lc.jvp(f, (x,), (t,))[1])


# ---------------------------------------------------------------------------
# Random stacks of semantics-preserving wrappers, differentiated at the top.


def _w_jit(g):
    return lc.jit(g)


def _w_vmap_rows(g):
    """g on (n,) through vmap over a batch of one row."""
    return lambda x: reshape(lc.vmap(g)(reshape(x, (1, *x.shape))), x.shape)


def _w_vmap_axis_size(g):
    """g through vmap with in_axes None: two equal copies, averaged (exact)."""
    return lambda x: P.mul(reduce_sum(lc.vmap(g, in_axes=None, axis_size=2)(x), (0,)), 0.5)


def _w_vmap_out_axis(g):
    """g through vmap with an unmapped closure and out_axes=-1 on a batch of one."""
    return lambda x: reshape(lc.vmap(lambda z, x: g(P.add(x, z)), in_axes=(0, None),
                                     out_axes=-1)(np.zeros((1,)), x), x.shape)


def _w_linearize_primal(g):
    return lambda x: lc.linearize(g, x)[0]


def _w_jvp_primal(g):
    return lambda x: lc.jvp(g, (x,), (P.sin(x),))[0]


def _w_vjp_primal(g):
    return lambda x: lc.vjp(g, x)[0]


def _w_jit_closure(g):
    """jit of a closure over the (possibly traced) input."""
    return lambda x: lc.jit(lambda s: P.mul(g(x), s))(np.float64(1.0))


WRAPPERS = {"jit": _w_jit, "vmap_rows": _w_vmap_rows, "vmap_axis_size": _w_vmap_axis_size,
            "vmap_out_axis": _w_vmap_out_axis, "linearize": _w_linearize_primal,
            "jvp": _w_jvp_primal, "vjp": _w_vjp_primal, "jit_closure": _w_jit_closure}


def _outer_checks(name, G, x, t):
    """The top-level derivative `name` of the wrapped function G, and its reference."""
    total_g = lambda x: P.total(P.mul(G(x), t))
    ref_total = lambda x: P.total(P.mul(f_vec(x), t))
    if name == "grad":
        return lc.grad(total_g)(x), num_grad(ref_total, x)
    if name == "jvp":
        return lc.jvp(G, (x,), (t,))[1], num_jvp(f_vec, x, t)
    if name == "linearize":
        return lc.linearize(G, x)[1](t), num_jvp(f_vec, x, t)
    if name == "vjp":
        return lc.vjp(G, x)[1](t)[0], num_grad(ref_total, x)
    if name == "jacfwd":
        return lc.jacfwd(G)(x), num_jacobian(f_vec, x)
    if name == "jacrev":
        return lc.jacrev(G)(x), num_jacobian(f_vec, x)
    if name == "vmap_grad":
        xs = np.stack([x, x[::-1]])
        return (lc.vmap(lc.grad(total_g))(xs),
                np.stack([num_grad(ref_total, x) for x in xs]))
    assert name == "jit_grad"
    return lc.jit(lc.grad(total_g))(x), num_grad(ref_total, x)


@settings(max_examples=50, deadline=None)
@given(stack=st.lists(st.sampled_from(sorted(WRAPPERS)), min_size=1, max_size=3),
       outer=st.sampled_from(["grad", "jvp", "linearize", "vjp", "jacfwd", "jacrev",
                              "vmap_grad", "jit_grad"]),
       x=points((3,)), t=points((3,)))
@x64
def test_random_wrapper_stacks(stack, outer, x, t):
    G = f_vec
    for name in stack:
        G = WRAPPERS[name](G)
    close(G(x), f_vec(x), rtol=1e-14, atol=1e-15)
    actual, expected = _outer_checks(outer, G, x, t)
    close(actual, expected)
