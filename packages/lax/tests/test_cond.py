"""lax.cond and lax.switch: values against Python branching, every transformation
(jvp/grad against numerical derivatives, vmap against loops with batched and
unbatched operands and predicates, jit) and their compositions, closures over
outer tracers, the printed jaxpr, the lowering, and the errors."""

import re

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
from lamella.core import partial_eval
from lamella.lax.control_flow.cond import cond, cond_p, switch
from lamella.lax.test_util import check

RNG = np.random.default_rng(0)
X = RNG.uniform(0.5, 1.5, (3,)).astype(np.float32)
Y = RNG.uniform(0.5, 1.5, (3,)).astype(np.float32)


def sin_times(x, y):
    return lax.mul(lax.sin(x), y)


def exp_plus(x, y):
    return lax.add(lax.exp(x), lax.mul(y, y))


def two_branches(p, x, y):
    return cond(p, sin_times, exp_plus, x, y)


def three_branches(i, x, y):
    return switch(i, [sin_times, exp_plus, lambda x, y: lax.mul(x, lax.cos(y))], x, y)


def reference_three(i, x, y):
    i = int(np.clip(i, 0, 2))
    return [np.sin(x) * y, np.exp(x) + y * y, x * np.cos(y)][i]


# --- values, jit, derivatives and vmap through lamella.lax.test_util -------------------


@pytest.mark.parametrize("p", [True, False])
def test_cond_harness(p):
    check(two_branches, [np.bool_(p), X, Y],
          lambda p, x, y: np.sin(x) * y if p else np.exp(x) + y * y, diff_argnums=(1, 2))


@pytest.mark.parametrize("i", [0, 1, 2])
def test_switch_harness(i):
    check(three_branches, [np.int32(i), X, Y], reference_three, diff_argnums=(1, 2))


# --- values -------------------------------------------------------------------------


def test_cond_on_pytrees_and_predicate_kinds():
    def true_fun(ops):
        return {"s": lax.add(ops["a"], ops["b"][0]), "n": ops["b"][1]}

    def false_fun(ops):
        return {"s": lax.sub(ops["a"], ops["b"][0]), "n": lax.neg(ops["b"][1])}

    ops = {"a": X, "b": (Y, np.int32(4))}
    for pred, taken in [(True, True), (np.bool_(False), False), (3, True), (0, False),
                        (np.int32(-2), True), (np.uint8(0), False), (lax.lt(1.0, 2.0), True)]:
        out = cond(pred, true_fun, false_fun, ops)
        assert set(out) == {"s", "n"}
        np.testing.assert_allclose(out["s"], X + Y if taken else X - Y, rtol=1e-6)
        assert int(out["n"]) == (4 if taken else -4)


def test_switch_clamps_the_index():
    branches = tuple(lambda x, i=i: lax.add(x, np.float32(i)) for i in range(3))
    for index, expected in [(-5, 0), (0, 0), (1, 1), (2, 2), (3, 2), (100, 2)]:
        np.testing.assert_allclose(switch(index, branches, X), X + expected)
        np.testing.assert_allclose(lc.jit(switch, static_argnums=1)(index, branches, X),
                                   X + expected)


def test_switch_with_one_branch_just_calls_it():
    assert lc.make_jaxpr(lambda i, x: switch(i, [lax.sin], x))(0, X).eqns[-1].primitive \
        is not cond_p
    np.testing.assert_allclose(switch(5, [lax.sin], X), np.sin(X), rtol=1e-6)


def test_branches_without_operands_and_with_consts():
    table = np.arange(3.0, dtype=np.float32)
    other = np.ones(3, np.float32)

    def f(p):
        return cond(p, lambda: lax.mul(table, 2.0), lambda: lax.add(other, table))
    np.testing.assert_allclose(f(True), table * 2)
    np.testing.assert_allclose(f(False), table + 1)
    closed = lc.make_jaxpr(f)(True)
    eqn = closed.eqns[-1]
    assert len(eqn.invars) == 3  # the index, then both arrays; each branch takes both
    assert all(len(b.in_avals) == 2 for b in eqn.params["branches"])


def test_weak_type_differences_make_the_output_strong():
    strong = lc.eval_shape(lambda p, x: cond(p, lambda x: x, lambda x: 1.0, x),
                           True, np.float32(2.0))
    assert strong.dtype == np.float32 and not strong.weak_type
    weak = lc.eval_shape(lambda p: cond(p, lambda: 1.0, lambda: 2.0), True)
    assert weak.weak_type
    assert float(cond(False, lambda x: x, lambda x: 1.0, np.float32(2.0))) == 1.0


def test_disable_jit_runs_only_the_taken_branch():
    calls = []

    def branch(name):
        def fun(x):
            calls.append(name)
            return x
        return fun
    with lc.disable_jit():
        cond(True, branch("t"), branch("f"), X)
        switch(7, [branch("0"), branch("1")], X)
    assert calls == ["t", "1"]


def test_eager_calls_reuse_the_traced_branches():
    traces = []

    def true_fun(x):
        traces.append(1)
        return lax.sin(x)
    for p in (True, False, True):
        np.testing.assert_allclose(cond(p, true_fun, lax.cos, X),
                                   np.sin(X) if p else np.cos(X), rtol=1e-6)
    assert len(traces) == 1


# --- transformations ----------------------------------------------------------------


def numerical_grad(f, x, eps=1e-6):
    return np.array([(np.asarray(f(x + eps * e)) - np.asarray(f(x - eps * e))) / (2 * eps)
                     for e in np.eye(x.size).reshape((x.size, *x.shape))]).reshape(x.shape)


def total(x):
    return lax.reduce_sum(x, (0,))


def test_grad_of_switch_against_numerical_derivatives():
    with lc.enable_x64():
        x, y = X.astype(np.float64), Y.astype(np.float64)
        for i in range(3):
            def f(x, i=i):
                return total(three_branches(i, x, y))
            np.testing.assert_allclose(lc.grad(f)(x), numerical_grad(f, x), rtol=1e-7)
            np.testing.assert_allclose(lc.jit(lc.grad(f))(x), numerical_grad(f, x), rtol=1e-7)


def test_grad_when_only_one_branch_uses_the_argument():
    def f(p, x, y):
        return total(cond(p, lambda x, y: lax.mul(x, y), lambda x, y: lax.sin(x), x, y))
    np.testing.assert_allclose(lc.grad(f, 2)(True, X, Y), X)
    np.testing.assert_allclose(lc.grad(f, 2)(False, X, Y), np.zeros(3))
    np.testing.assert_allclose(lc.grad(f, 1)(False, X, Y), np.cos(X), rtol=1e-6)


def test_grad_with_integer_and_unused_outputs():
    def f(p, x):
        out, n = cond(p, lambda x: (lax.sin(x), np.int32(1)),
                      lambda x: (lax.mul(x, x), np.int32(2)), x)
        return total(lax.mul(out, lax.convert_element_type(n, np.float32)))
    np.testing.assert_allclose(lc.grad(f, 1)(True, X), np.cos(X), rtol=1e-6)
    np.testing.assert_allclose(lc.grad(f, 1)(False, X), 4 * X, rtol=1e-6)

    def known_output(p, x):  # the derivative does not flow through the cond
        k = cond(p, lambda x: lax.sin(x), lambda x: lax.cos(x), lax.stop_gradient(x))
        return total(lax.mul(k, x))
    np.testing.assert_allclose(lc.grad(known_output, 1)(True, X), np.sin(X), rtol=1e-6)


def test_vmap_batched_predicate_selects_and_unbatched_keeps_cond():
    preds = np.array([True, False, True])
    xs = np.stack([X, Y, X + 1])
    out = lc.vmap(two_branches, in_axes=(0, 0, None))(preds, xs, Y)
    expected = [two_branches(p, x, Y) for p, x in zip(preds, xs)]
    np.testing.assert_allclose(out, np.stack(expected), rtol=1e-6)

    batched_pred = lc.make_jaxpr(lc.vmap(two_branches, in_axes=(0, None, None)))(preds, X, Y)
    assert "select_n" in str(batched_pred) and "cond[" not in str(batched_pred)
    unbatched_pred = lc.make_jaxpr(lc.vmap(two_branches, in_axes=(None, 0, None)))(True, xs, Y)
    assert "cond[" in str(unbatched_pred) and "select_n" not in str(unbatched_pred)
    # Only one branch depends on the batched operand: its output is batched in both.
    out = lc.vmap(lambda p, y: cond(p, lambda y: y, lambda y: X, y), in_axes=(None, 0))(
        False, xs)
    np.testing.assert_allclose(out, np.stack([X] * 3))


def test_vmap_of_switch_with_batched_index_out_of_range():
    index = np.array([-3, 0, 1, 2, 9], np.int32)
    out = lc.vmap(three_branches, in_axes=(0, None, None))(index, X, Y)
    np.testing.assert_allclose(out, np.stack([reference_three(i, X, Y) for i in index]),
                               rtol=1e-6)


def test_compositions():
    preds = np.array([True, False, True])
    xs = np.stack([X, Y, X + 1])

    def f(p, x):
        return total(two_branches(p, x, Y))

    per_example = np.stack([lc.grad(f, 1)(p, x) for p, x in zip(preds, xs)])
    vmap_of_grad = lc.vmap(lc.grad(f, 1))(preds, xs)
    np.testing.assert_allclose(vmap_of_grad, per_example, rtol=1e-6)
    grad_of_vmap = lc.grad(lambda xs: total(lc.vmap(f)(preds, xs)))(xs)
    np.testing.assert_allclose(grad_of_vmap, per_example, rtol=1e-6)
    np.testing.assert_allclose(lc.jit(lc.vmap(lc.grad(f, 1)))(preds, xs), per_example,
                               rtol=1e-6)
    np.testing.assert_allclose(lc.grad(lc.jit(f), 1)(True, X), per_example[0], rtol=1e-6)
    np.testing.assert_allclose(lc.vmap(lc.jit(lc.grad(f, 1)), in_axes=(None, 0))(True, xs),
                               np.stack([lc.grad(f, 1)(True, x) for x in xs]), rtol=1e-6)
    # Second order: the Hessian of sin(x)*y summed is diag(-sin(x)*y).
    hess = lc.jacfwd(lc.grad(f, 1), 1)(True, X)
    np.testing.assert_allclose(hess, np.diag(-np.sin(X) * Y), rtol=1e-5, atol=1e-6)
    # vmap of vmap, the inner predicate batched.
    grid = np.array([[True, False], [False, True]])
    out = lc.vmap(lc.vmap(lambda p, x: two_branches(p, x, Y), in_axes=(0, None)))(grid, xs[:2])
    expected = [[two_branches(p, x, Y) for p in row] for row, x in zip(grid, xs[:2])]
    np.testing.assert_allclose(out, np.array(expected), rtol=1e-6)


def test_jvp_of_vmap_with_batched_predicate():
    preds = np.array([True, False, True])
    xs = np.stack([X, Y, X + 1])
    tangent = np.ones_like(xs)
    _, out_dot = lc.jvp(lambda xs: lc.vmap(two_branches, in_axes=(0, 0, None))(preds, xs, Y),
                        (xs,), (tangent,))
    expected = np.where(preds[:, None], np.cos(xs) * Y, np.exp(xs))
    np.testing.assert_allclose(out_dot, expected, rtol=1e-6)


def test_closures_over_outer_tracers():
    def over_grad(y):  # the branch closes over the outer grad's tracer
        return total(cond(True, lambda x: lax.mul(x, y), lax.neg, X))
    np.testing.assert_allclose(lc.grad(over_grad)(Y), X)

    def nested(y):  # perturbation confusion: d/dy of (d/dx x*y) = 1
        inner = lc.grad(lambda x: cond(True, lambda x: lax.mul(x, y), lambda x: x, x))
        return inner(np.float32(2.0))
    assert float(lc.grad(nested)(np.float32(3.0))) == 1.0

    def over_vmap(y):  # the branch closes over the outer vmap's tracer
        return cond(True, lambda x: lax.add(x, y), lambda x: x, X)
    np.testing.assert_allclose(lc.vmap(over_vmap)(np.arange(2.0, dtype=np.float32)),
                               np.stack([X, X + 1]))
    preds = np.array([True, False])
    out = lc.vmap(lambda p, y: cond(p, lambda x: lax.add(x, y), lambda x: x, X))(
        preds, np.array([5.0, 7.0], np.float32))
    np.testing.assert_allclose(out, np.stack([X + 5, X]))
    # Values closed over under grad are not reused from an earlier trace.
    assert float(lc.grad(lambda y: cond(True, lambda: y, lambda: y))(np.float32(1.0))) == 1.0
    assert float(lc.grad(lambda y: cond(True, lambda: lax.mul(y, y), lambda: y))(
        np.float32(3.0))) == 6.0


def test_partial_eval_with_an_unknown_index_stages_the_whole_cond():
    closed = lc.make_jaxpr(two_branches)(True, X, Y)
    known, unknown, out_unknowns, _ = partial_eval.partial_eval_jaxpr(
        closed, [True, False, False])
    assert out_unknowns == (True,)
    assert not any(e.primitive is cond_p for e in known.eqns)
    assert any(e.primitive is cond_p for e in unknown.eqns)


def test_linearized_jaxprs_typecheck():
    closed = lc.make_jaxpr(lc.grad(lambda i, x: total(three_branches(i, x, Y)), 1))(1, X)
    lc.check_jaxpr(closed)
    branches = next(e for e in closed.eqns if e.primitive is cond_p).params["branches"]
    assert len({tuple(b.out_avals) for b in branches}) == 1


# --- printing and lowering ------------------------------------------------------


def test_printed_jaxpr_indents_the_branches():
    # Branch 0 is taken for a false predicate, as in JAX.
    # The string JAX 0.10.2 prints for the same program.
    assert str(lc.make_jaxpr(two_branches)(True, X, Y)) == """\
{ lambda ; a:bool[] b:f32[3] c:f32[3]. let
    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a
    e:f32[3] = cond[
      branches=(
        { lambda ; f:f32[3] g:f32[3]. let
            h:f32[3] = exp f
            i:f32[3] = mul g g
            j:f32[3] = add h i
          in (j,) }
        { lambda ; k:f32[3] l:f32[3]. let
            m:f32[3] = sin k
            n:f32[3] = mul m l
          in (n,) }
      )
    ] d b c
  in (e,) }"""


def test_lowering_is_one_case_not_unrolled():
    text = lc.jit(three_branches).lower(np.int32(0), X, Y).as_text()
    assert text.count("stablehlo.case") == 1 and "stablehlo.select" not in text
    assert text.count("stablehlo.return") == 3
    batched = lc.jit(lc.vmap(two_branches)).lower(np.array([True, False]), X[:2], Y[:2])
    assert "stablehlo.case" not in batched.as_text()


# --- errors ---------------------------------------------------------------------


def test_predicate_errors():
    with pytest.raises(TypeError, match=r"predicate must be a scalar, got a value of shape \(3,\)"):
        cond(np.array([True, False, True]), lax.sin, lax.cos, X)
    with pytest.raises(TypeError, match="predicate must be a boolean or integer scalar, got "
                                        "dtype float32"):
        cond(np.float32(1.0), lax.sin, lax.cos, X)
    with pytest.raises(TypeError, match="predicate is None"):
        cond(None, lax.sin, lax.cos, X)
    with pytest.raises(TypeError, match="should be callable"):
        cond(True, X, lax.cos, X)
    with pytest.raises(TypeError, match="index must be an integer scalar, got dtype float32"):
        switch(1.0, [lax.sin, lax.cos], X)
    with pytest.raises(TypeError, match="index must be a scalar"):
        switch(np.zeros(2, np.int32), [lax.sin, lax.cos], X)
    with pytest.raises(ValueError, match="empty branch sequence"):
        switch(0, [], X)
    with pytest.raises(TypeError, match=r"operands\[0\]"):
        cond(True, lambda s: s, lambda s: s, "text")


def test_mismatched_branch_outputs_show_both_types():
    with pytest.raises(TypeError, match=re.escape(
            "true_fun output:  (f32[3], f32[3])\n  false_fun output: f32[3]")):
        cond(True, lambda x: (x, x), lambda x: x, X)
    with pytest.raises(TypeError, match=re.escape(
            "true_fun output:  i32[3]\n  false_fun output: f32[3]")):
        cond(True, lambda x: lax.convert_element_type(x, np.int32), lambda x: x, X)
    with pytest.raises(TypeError, match=re.escape(
            "branch 0 output: {'a': f32[3]}\n  branch 2 output: {'a': f32[1]}")):
        switch(0, [lambda x: {"a": x}, lambda x: {"a": x},
                   lambda x: {"a": lax.slice(x, (0,), (1,))}], X)
