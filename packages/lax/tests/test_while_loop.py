"""while_loop: values against Python loops, forward-mode derivatives against
numerical ones, vmap with unbatched and batched predicates, jit, closures over
outer tracers, the reverse-mode error, and the type errors.

Every eager call of a loop compiles it once, so tests prefer few calls."""

import re

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
from lamella.lax.control_flow.loops import while_loop
from lamella.lax.test_util import check_jit_matches_eager, check_values, check_vmap


def count_doublings(limit, x):
    """How many steps x -> 2x + 1 take to reach `limit` (a batched predicate
    under vmap: elements finish at different iterations), and where it ends."""
    def cond(c):
        return lax.lt(c[1], limit)

    def body(c):
        return lax.add(c[0], 1), lax.add(lax.mul(c[1], 2.0), 1.0)
    return while_loop(cond, body, (0, x))


def count_doublings_ref(limit, x):
    n = 0
    while x < limit:
        n, x = n + 1, 2 * x + 1
    return n, x


def newton_sqrt(a):
    """Newton's method for sqrt(a), iterating until every step is tiny."""
    def cond(c):
        x, step = c
        large = lax.gt(lax.abs(step), lax.mul(x, 1e-6))
        return lax.reduce_or(large, tuple(range(large.ndim)))

    def body(c):
        x, _ = c
        new = lax.mul(lax.add(x, lax.div(a, x)), 0.5)
        return new, lax.sub(new, x)
    return while_loop(cond, body, (lax.full_like(a, 1.0), lax.full_like(a, 1.0)))[0]


def power_loop(x, n=5):
    """y <- y * x + sin(y), n times: a fixed trip count, differentiable in x."""
    def body(c):
        i, y = c
        return lax.add(i, 1), lax.add(lax.mul(y, x), lax.sin(y))
    return while_loop(lambda c: lax.lt(c[0], n), body, (0, x))[1]


def power_loop_ref(x, n=5):
    y = x
    for _ in range(n):
        y = y * x + np.sin(y)
    return y


# --- values --------------------------------------------------------------------


def test_pytree_carry_matches_python_loop():
    def f(x):
        def body(c):
            return {"i": lax.add(c["i"], 1),
                    "acc": (lax.add(c["acc"][0], c["x"]), lax.mul(c["acc"][1], 1.5)),
                    "x": lax.mul(c["x"], 0.5)}
        init = {"i": np.int32(0), "acc": (lax.full_like(x, 0.0), np.float32(1.0)), "x": x}
        return while_loop(lambda c: lax.lt(c["i"], 4), body, init)

    x = np.arange(3, dtype=np.float32)
    out = f(x)
    acc, scale, y = np.zeros(3, np.float32), 1.0, x
    for _ in range(4):
        acc, scale, y = acc + y, scale * 1.5, y * 0.5
    assert set(out) == {"i", "acc", "x"} and int(out["i"]) == 4
    np.testing.assert_allclose(out["acc"][0], acc, rtol=1e-6)
    np.testing.assert_allclose(out["acc"][1], scale, rtol=1e-6)
    np.testing.assert_allclose(out["x"], y, rtol=1e-6)


def test_zero_iterations_return_the_init():
    out = while_loop(lambda x: lax.gt(x, 10.0), lambda x: lax.mul(x, 2.0), np.float32(3.0))
    assert float(out) == 3.0


def test_count_and_newton_match_python_and_numpy():
    check_values(count_doublings, [np.float32(100.0), np.float32(0.5)], count_doublings_ref)
    a = np.array([0.25, 2.0, 9.0, 1e4], np.float32)
    check_values(newton_sqrt, [a], np.sqrt)


def test_jit_matches_eager_and_lowers_to_one_while():
    x = np.float32(0.7)
    check_jit_matches_eager(power_loop, [x])
    text = lc.jit(power_loop).lower(x).as_text()
    assert text.count("stablehlo.while") == 1


def test_jaxpr_prints_sub_jaxprs_indented():
    text = str(lc.make_jaxpr(power_loop)(np.float32(0.7)))
    assert "while[" in text and "cond_nconsts=0" in text and "body_nconsts=1" in text
    assert re.search(r"\n {6}body_jaxpr=\{ lambda ; \w+:f32\[\] \w+:i32\[\] \w+:f32\[\]\. let\n",
                     text), text
    assert re.search(r"\n {6}cond_jaxpr=\{ lambda ; \w+:i32\[\] \w+:f32\[\]\. let\n", text), text


def test_disable_jit_runs_a_python_loop():
    seen = []

    def body(x):
        seen.append(x)
        return lax.add(x, 1)
    with lc.disable_jit():
        out = while_loop(lambda x: lax.lt(x, 3), body, np.int32(0))
    assert int(out) == 3 and len(seen) == 3


def test_weakly_typed_init_is_strengthened():
    def f(x):
        return while_loop(lambda c: lax.lt(c, 10.0), lambda c: lax.add(c, x), 0.0)

    x = np.float32(3.0)
    out = f(x)
    assert out.dtype == np.float32 and not out.weak_type and float(out) == 12.0


# --- forward-mode derivatives ----------------------------------------------------


def _central_difference(f, x, t, eps=1e-6):
    return (np.asarray(f(x + eps * t)) - np.asarray(f(x - eps * t))) / (2 * eps)


def test_jvp_matches_numerical_derivatives():
    with lc.enable_x64():
        x, t = np.float64(0.7), np.float64(1.3)
        y, y_dot = lc.jvp(power_loop, (x,), (t,))
        np.testing.assert_allclose(y, power_loop_ref(x), rtol=1e-12)
        np.testing.assert_allclose(y_dot, _central_difference(power_loop, x, t), rtol=1e-7)
        # jacfwd over a vector (the loop's body batched by vmap inside jacfwd).
        xs = np.array([0.3, 0.6, 0.9])
        jac = lc.jacfwd(lambda v: power_loop(v, 3))(xs)
        numerical = [_central_difference(lambda v: power_loop(v, 3), xs, e) for e in np.eye(3)]
        np.testing.assert_allclose(jac, np.stack(numerical, 1), rtol=1e-7)


def test_jvp_tangent_reaches_a_carry_only_through_the_body():
    # b starts with a zero tangent but picks one up from a: the fixpoint finds it.
    def f(x):
        def body(c):
            i, a, b = c
            return lax.add(i, 1), lax.mul(a, x), lax.add(b, a)
        return while_loop(lambda c: lax.lt(c[0], 3), body, (0, x, 0.0))[2]

    with lc.enable_x64():
        x = np.float64(1.5)
        _, y_dot = lc.jvp(f, (x,), (np.float64(1.0),))
        np.testing.assert_allclose(y_dot, 1 + 2 * x + 3 * x * x, rtol=1e-12)


def test_jvp_and_linearize_of_newton():
    with lc.enable_x64():
        a = np.array([2.0, 9.0])
        y, y_dot = lc.jvp(newton_sqrt, (a,), (np.ones(2),))
        np.testing.assert_allclose(y, np.sqrt(a), rtol=1e-12)
        np.testing.assert_allclose(y_dot, 0.5 / np.sqrt(a), rtol=1e-6)
        y2, f_jvp = lc.linearize(newton_sqrt, a)
        np.testing.assert_allclose(y2, y, rtol=1e-15)
        np.testing.assert_allclose(f_jvp(np.ones(2)), y_dot, rtol=1e-12)


# --- vmap ------------------------------------------------------------------------


def test_vmap_with_unbatched_predicate_matches_loop():
    check_vmap(power_loop, [np.array([0.3, 0.6], np.float32)])


def test_vmap_with_batched_predicate_matches_loop():
    # Batched limits, starts, or both: elements finish at different iterations
    # while the counter (unbatched at first) becomes per element.
    check_vmap(count_doublings, [np.float32(100.0), np.float32(0.5)])
    limits = np.array([1.0, 10.0, 1000.0, 0.1], np.float32)
    n, x = lc.vmap(count_doublings, (0, None))(limits, np.float32(0.5))
    expected = [count_doublings_ref(lim, 0.5) for lim in limits]
    np.testing.assert_array_equal(n, [e[0] for e in expected])
    np.testing.assert_allclose(x, [e[1] for e in expected])


def test_vmap_of_newton_and_jit():
    a = np.array([[0.5, 4.0], [100.0, 7.0]], np.float32)
    out = lc.jit(lc.vmap(lc.vmap(newton_sqrt)))(a)
    np.testing.assert_allclose(out, np.sqrt(a), rtol=1e-6)


def test_vmap_and_jvp_compose_with_a_batched_predicate():
    with lc.enable_x64():
        a = np.array([2.0, 9.0, 100.0])
        _, tangents = lc.vmap(lambda x: lc.jvp(newton_sqrt, (x,), (1.0,)))(a)
        np.testing.assert_allclose(tangents, 0.5 / np.sqrt(a), rtol=1e-6)
        _, tangents = lc.jvp(lc.vmap(newton_sqrt), (a,), (np.ones(3),))
        np.testing.assert_allclose(tangents, 0.5 / np.sqrt(a), rtol=1e-6)


# --- closures over outer tracers ---------------------------------------------------


def test_body_closes_over_outer_jvp_and_vmap_tracers():
    def f(s):
        def body(c):
            return lax.add(c[0], 1), lax.mul(c[1], s)
        return while_loop(lambda c: lax.lt(c[0], 3), body, (0, 1.0))[1]

    with lc.enable_x64():
        _, y_dot = lc.jvp(f, (np.float64(2.0),), (np.float64(1.0),))
        assert float(y_dot) == 12.0
    np.testing.assert_allclose(lc.vmap(f)(np.array([1.0, 2.0, 3.0], np.float32)), [1, 8, 27])


def test_grad_flows_around_a_loop_that_only_reads_the_differentiated_value():
    # The condition reads s (an outer grad tracer) but no carry depends on s, so
    # reverse mode works: d/ds [s * ceil(s)] = ceil(s) away from integers.
    def f(s):
        steps = while_loop(lambda c: lax.lt(c, s), lambda c: lax.add(c, 1.0), 0.0)
        return lax.mul(s, steps)

    assert float(lc.grad(f)(np.float32(2.5))) == 3.0
    assert float(lc.grad(lambda x, y: lax.mul(x, power_loop(y)))(np.float32(2.0),
                                                                 np.float32(0.7))) == \
        pytest.approx(power_loop_ref(0.7), rel=1e-5)


# --- errors --------------------------------------------------------------------------


def test_reverse_mode_raises_a_clear_error():
    x = np.float32(0.7)
    for fun in (power_loop, lc.jit(power_loop)):
        with pytest.raises(ValueError, match=r"Reverse-mode differentiation does not work for "
                                             r"lax\.while_loop.*lax\.scan.*lax\.fori_loop "
                                             r"with static"):
            lc.grad(fun)(x)


def test_predicate_must_be_a_boolean_scalar():
    with pytest.raises(TypeError, match=r"cond_fun must return a boolean scalar, but it "
                                        r"returned f32\[\]"):
        while_loop(lambda x: x, lambda x: x, np.float32(1.0))
    with pytest.raises(TypeError, match=r"boolean scalar, but it returned bool\[2\]"):
        while_loop(lambda x: lax.lt(x, 1.0), lambda x: x, np.zeros(2, np.float32))
    with pytest.raises(TypeError, match=r"boolean scalar, but it returned \(bool\[\], bool"):
        while_loop(lambda x: (lax.lt(x, 1.0), lax.lt(x, 2.0)), lambda x: x, np.float32(0))


def test_carry_type_change_shows_both_carries():
    with pytest.raises(TypeError, match=re.escape(
            "body_fun must return a carry with the same structure and types as its input "
            "carry.\n  input carry:  (i32[], f32[3])\n  output carry: (f32[], f32[3])")):
        while_loop(lambda c: lax.lt(c[0], 3), lambda c: (lax.convert_element_type(
            c[0], np.float32), c[1]), (np.int32(0), np.zeros(3, np.float32)))
    with pytest.raises(TypeError, match=r"input carry:  \(i32\[\], f32\[3\]\)\n  output carry: "
                                        r"\[i32\[\], f32\[3\]\]"):
        while_loop(lambda c: lax.lt(c[0], 3), lambda c: [c[0], c[1]],
                   (np.int32(0), np.zeros(3, np.float32)))


def test_eager_calls_reuse_the_trace_while_the_functions_live():
    traced = []

    def cond(x):
        return lax.lt(x, 5)

    def body(x):
        traced.append(1)
        return lax.add(x, 1)
    for _ in range(3):
        assert int(lax.while_loop(cond, body, np.int32(0))) == 5
    assert len(traced) == 1
