"""checkpoint (remat): same derivatives, and the backward pass really recomputes.

Gradients are compared with the un-checkpointed function and with central
differences in float64. What runs is counted with `numpy_prims.impl_calls`:
without checkpoint the forward values are computed once and saved; with
checkpoint the backward pass recomputes what the policy did not save.
"""

from __future__ import annotations

import numpy as np
import numpy_prims as P
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella.core import Primitive, ShapedArray, ad
from lamella.core.structural import transpose
from lamella.core.test_util import numerical_grad

SETTINGS = settings(max_examples=10, deadline=None)
F32 = np.float32
policies = lc.checkpoint_policies


def f32(x):
    return np.asarray(x, np.float32)


def close(actual, expected, rtol=1e-6, atol=1e-6):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)


def count(fn, *args):
    """Runs fn(*args); returns (result, impl calls per primitive during the run)."""
    P.impl_calls.clear()
    out = fn(*args)
    calls = dict(P.impl_calls)
    P.impl_calls.clear()
    return out, calls


def sub_eqns(jaxpr, name="checkpoint"):
    """The `name` equations at the top level of a closed jaxpr."""
    return [e for e in jaxpr.jaxpr.eqns if e.primitive.name == name]


def names(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns]


# A dot_general primitive (2-D contraction of lhs axis 1 with rhs axis 0), so the
# policies that look for primitives named 'dot_general' have something to match.
DIMS = (((1,), (0,)), ((), ()))
dot_general_p = Primitive("dot_general")


@dot_general_p.def_impl
def _dot_impl(x, y, *, dimension_numbers, precision=None):
    P.impl_calls["dot_general"] = P.impl_calls.get("dot_general", 0) + 1
    return np.asarray(np.matmul(x, y))


@dot_general_p.def_abstract_eval
def _dot_abstract_eval(x, y, *, dimension_numbers, precision=None):
    assert dimension_numbers == DIMS and x.ndim == 2 and y.ndim == 2
    return ShapedArray((x.shape[0], y.shape[1]), np.result_type(x.dtype, y.dtype))


def dot(x, y):
    return dot_general_p.bind(x, y, dimension_numbers=DIMS, precision=None)


def _mT(x):
    return transpose(x, (1, 0))


ad.defjvp(dot_general_p, lambda t, x, y, **_: dot(t, y), lambda t, x, y, **_: dot(x, t))
ad.primitive_transposes[dot_general_p] = lambda ct, x, y, **_: (
    [dot(ct, _mT(y)), None] if ad.is_undefined_primal(x) else [None, dot(_mT(x), ct)])


def sin3(x):
    return P.sin(P.sin(P.sin(x)))


def sin3_named(x):
    y1 = P.sin(x)
    y2 = lc.checkpoint_name(P.sin(y1), "mid")
    return P.sin(y2)


def sin3_grad(x):
    """d/dx sin(sin(sin(x)))."""
    y1 = np.sin(x)
    y2 = np.sin(y1)
    return np.cos(y2) * np.cos(y1) * np.cos(x)


# ---------------------------------------------------------------------------
# Values and derivatives are unchanged.


def test_checkpoint_primal_and_gradient_match_the_plain_function():
    x = f32([0.3, -1.2, 2.0])
    f = lambda x: P.total(sin3(x))
    close(lc.checkpoint(sin3)(x), np.sin(np.sin(np.sin(x))))
    close(lc.grad(lc.checkpoint(f))(x), lc.grad(f)(x))
    close(lc.grad(lambda x: P.total(lc.checkpoint(sin3)(x)))(x), sin3_grad(x), rtol=1e-5)
    assert lc.remat is lc.checkpoint


@SETTINGS
@given(st.lists(st.floats(-3, 3), min_size=1, max_size=4),
       st.sampled_from(["none", "nothing", "everything", "names", "except_names"]))
def test_checkpoint_gradients_in_float64_match_central_differences(values, policy_name):
    policy = {"none": None, "nothing": policies.nothing_saveable,
              "everything": policies.everything_saveable,
              "names": policies.save_only_these_names("mid"),
              "except_names": policies.save_anything_except_these_names("mid")}[policy_name]

    def loss(x):
        return P.total(P.mul(sin3_named(x), P.exp(P.mul(x, 0.5))))

    with lc.enable_x64():
        x = np.asarray(values, np.float64)
        g = lc.grad(lc.checkpoint(loss, policy=policy))(x)
        assert np.asarray(g).dtype == np.float64
        close(g, lc.grad(loss)(x), rtol=1e-12, atol=1e-12)
        close(g, numerical_grad(loss, x), rtol=1e-6, atol=1e-8)
        inner = lambda x: P.total(P.mul(lc.checkpoint(sin3_named, policy=policy)(x),
                                        P.exp(P.mul(x, 0.5))))
        close(lc.grad(inner)(x), g, rtol=1e-12, atol=1e-12)


def test_checkpoint_vjp_with_pytrees_and_several_outputs():
    def f(params, x):
        h = P.tanh(P.mul(params["w"], x))
        return {"out": P.sin(P.add(h, params["b"])), "aux": P.exp(h)}

    params = {"w": f32([0.5, -1.0]), "b": f32([0.1, 0.2])}
    x = f32([1.0, 2.0])
    out, f_vjp = lc.vjp(lc.checkpoint(f), params, x)
    ref_out, ref_vjp = lc.vjp(f, params, x)
    close(out["out"], ref_out["out"])
    close(out["aux"], ref_out["aux"])
    ct = {"out": f32([1.0, -0.5]), "aux": f32([0.3, 0.7])}
    got, want = f_vjp(ct), ref_vjp(ct)
    close(got[0]["w"], want[0]["w"], rtol=1e-5)
    close(got[0]["b"], want[0]["b"], rtol=1e-5)
    close(got[1], want[1], rtol=1e-5)


def test_checkpoint_keyword_arguments():
    f = lc.checkpoint(lambda x, scale=1.0: P.mul(P.sin(x), scale))
    close(f(F32(0.5), scale=F32(2.0)), 2 * np.sin(0.5))
    close(lc.grad(lambda x: f(x, scale=F32(3.0)))(F32(0.5)), 3 * np.cos(0.5))
    close(lc.grad(lambda s: f(F32(0.5), scale=s))(F32(3.0)), np.sin(0.5))


def test_checkpoint_differentiates_closed_over_values():
    # Unlike custom rules, checkpoint must differentiate values it closes over.
    def outer(y):
        return lc.checkpoint(lambda x: P.sin(P.mul(x, y)))(F32(2.0))

    close(lc.grad(outer)(F32(0.3)), 2.0 * np.cos(0.6))
    close(lc.jit(lc.grad(outer))(F32(0.3)), 2.0 * np.cos(0.6))
    close(lc.grad(lambda y: lc.jit(lambda: outer(y))())(F32(0.3)), 2.0 * np.cos(0.6))


# ---------------------------------------------------------------------------
# Recomputation: count what runs.


def test_without_checkpoint_the_forward_runs_once():
    _, calls = count(lc.grad(sin3), F32(0.5))
    assert calls["sin"] == 3 and calls["cos"] == 3


@pytest.mark.parametrize("policy", [None, policies.nothing_saveable])
def test_nothing_saveable_recomputes_the_forward_in_the_backward_pass(policy):
    g, calls = count(lc.grad(lc.checkpoint(sin3, policy=policy)), F32(0.5))
    close(g, sin3_grad(0.5), rtol=1e-5)
    # Forward: 3 sins for the output. Backward: sin(x) and sin(sin(x)) again for the cosines.
    assert calls["sin"] == 3 + 2
    assert calls["cos"] == 3
    # The primal alone does no extra work.
    _, calls = count(lc.checkpoint(sin3, policy=policy), F32(0.5))
    assert calls == {"sin": 3}


def test_recomputation_happens_when_the_pullback_runs():
    _, f_vjp = lc.vjp(lc.checkpoint(sin3), F32(0.5))
    P.impl_calls.clear()
    _, calls = count(f_vjp, F32(1.0))
    assert calls["sin"] == 2 and calls["cos"] == 3
    _, calls = count(f_vjp, F32(1.0))  # every pullback call recomputes
    assert calls["sin"] == 2
    _, f_vjp = lc.vjp(sin3, F32(0.5))
    _, calls = count(f_vjp, F32(1.0))
    assert "sin" not in calls and "cos" not in calls  # plain vjp saved the cosines


def test_everything_saveable_recomputes_nothing():
    g, calls = count(lc.grad(lc.checkpoint(sin3, policy=policies.everything_saveable)),
                     F32(0.5))
    close(g, sin3_grad(0.5), rtol=1e-5)
    assert calls["sin"] == 3 and calls["cos"] == 3
    _, f_vjp = lc.vjp(lc.checkpoint(sin3, policy=policies.everything_saveable), F32(0.5))
    _, calls = count(f_vjp, F32(1.0))
    assert "sin" not in calls and "cos" not in calls


def test_save_only_these_names_saves_exactly_the_named_value():
    f = lc.checkpoint(sin3_named, policy=policies.save_only_these_names("mid"))
    g, calls = count(lc.grad(f), F32(0.5))
    close(g, sin3_grad(0.5), rtol=1e-5)
    # Backward recomputes sin(x) (needed for cos(sin(x))) but not the saved sin(sin(x)).
    assert calls["sin"] == 3 + 1
    # The forward checkpoint returns the output and exactly one saved value, the named one.
    jaxpr = lc.make_jaxpr(lc.grad(f))(F32(0.5))
    forward, backward = sub_eqns(jaxpr)
    assert len(forward.outvars) == 2
    assert forward.params["differentiated"] is False
    assert backward.params["differentiated"] is True
    fwd_jaxpr = forward.params["jaxpr"].jaxpr
    saved = fwd_jaxpr.outvars[1]
    producer = next(e for e in fwd_jaxpr.eqns if saved in e.outvars)
    assert producer.primitive.name == "name" and producer.params["name"] == "mid"
    assert names(backward.params["jaxpr"].jaxpr).count("sin") == 1
    # An unknown name saves nothing: like nothing_saveable.
    f = lc.checkpoint(sin3_named, policy=policies.save_only_these_names("other"))
    _, calls = count(lc.grad(f), F32(0.5))
    assert calls["sin"] == 3 + 2


def squared_named(x):
    """sin(sin(x))^2 with the inner result named: the square's JVP uses it directly."""
    a = P.sin(x)
    b = lc.checkpoint_name(P.sin(a), "mid")
    return P.mul(b, b)


def squared_named_grad(x):
    return 2 * np.sin(np.sin(x)) * np.cos(np.sin(x)) * np.cos(x)


def test_save_anything_except_these_names():
    f = lc.checkpoint(squared_named,
                      policy=policies.save_anything_except_these_names("mid"))
    g, calls = count(lc.grad(f), F32(0.5))
    close(g, squared_named_grad(0.5), rtol=1e-5)
    # Everything but the named value is saved, including the unnamed sin(a) it names:
    # the backward pass re-applies only the `name` equation, no sin.
    assert calls["sin"] == 2
    backward = sub_eqns(lc.make_jaxpr(lc.grad(f))(F32(0.5)))[1]
    assert "name" in names(backward.params["jaxpr"].jaxpr)
    assert "sin" not in names(backward.params["jaxpr"].jaxpr)
    # Saving only the named value: cos(sin(x)) needs sin(x), recomputed.
    f = lc.checkpoint(squared_named, policy=policies.save_only_these_names("mid"))
    g, calls = count(lc.grad(f), F32(0.5))
    close(g, squared_named_grad(0.5), rtol=1e-5)
    assert calls["sin"] == 2 + 1
    f = lc.checkpoint(squared_named, policy=policies.nothing_saveable)
    g, calls = count(lc.grad(f), F32(0.5))
    assert calls["sin"] == 2 + 2
    f = lc.checkpoint(sin3_named, policy=policies.save_anything_except_these_names("other"))
    _, calls = count(lc.grad(f), F32(0.5))
    assert calls["sin"] == 3


def test_save_any_names_but_these():
    def two_names(x):
        a = lc.checkpoint_name(P.sin(x), "a")
        b = lc.checkpoint_name(P.sin(a), "b")
        return P.sin(b)

    # The backward pass needs a (for cos a) and b (for cos b); only names can be saved.
    for policy, recomputed in [(policies.save_any_names_but_these("b"), 1),
                               (policies.save_any_names_but_these("a"), 1),
                               (policies.save_any_names_but_these(), 0),
                               (policies.save_any_names_but_these("a", "b"), 2)]:
        g, calls = count(lc.grad(lc.checkpoint(two_names, policy=policy)), F32(0.5))
        close(g, sin3_grad(0.5), rtol=1e-5)
        assert calls["sin"] == 3 + recomputed, policy


def test_checkpoint_name_is_the_identity_with_identity_derivative():
    x = f32([1.0, 2.0])
    close(lc.checkpoint_name(x, "x"), x)
    tree = lc.checkpoint_name({"a": x, "b": (F32(3.0),)}, "t")
    close(tree["a"], x)
    close(tree["b"][0], 3.0)
    close(lc.grad(lambda x: P.total(P.sin(lc.checkpoint_name(x, "n"))))(x), np.cos(x))
    close(lc.vmap(lambda x: lc.checkpoint_name(P.sin(x), "n"))(x), np.sin(x))
    jaxpr = lc.make_jaxpr(lambda x: lc.checkpoint_name(x, "n"))(x)
    assert names(jaxpr) == ["name"] and jaxpr.eqns[0].params == {"name": "n"}


def mlp(w1, w2, x):
    h = P.tanh(dot(w1, x))
    return P.total(P.sin(dot(w2, h)))


MLP_ARGS = (f32([[0.5, -0.3], [0.2, 0.8], [-0.6, 0.1]]), f32([[0.3, -0.2, 0.9]]),
            f32([[1.0], [-2.0]]))


def test_dots_saveable_saves_dot_general_outputs():
    g_ref = lc.grad(mlp, (0, 1))(*MLP_ARGS)
    _, plain = count(lc.grad(mlp, (0, 1)), *MLP_ARGS)
    # Forward: 2 dots. Backward: for each weight, its cotangent; for h, one more.
    assert plain["dot_general"] == 2 + 3
    results = {}
    for label, policy in [("dots", policies.dots_saveable),
                          ("dots_alias", policies.checkpoint_dots),
                          ("no_batch", policies.dots_with_no_batch_dims_saveable),
                          ("nothing", policies.nothing_saveable),
                          ("everything", policies.everything_saveable)]:
        g, calls = count(lc.grad(lc.checkpoint(mlp, policy=policy), (0, 1)), *MLP_ARGS)
        close(g[0], g_ref[0], rtol=1e-5)
        close(g[1], g_ref[1], rtol=1e-5)
        results[label] = calls
    # Saving the dots: no dot is recomputed, but tanh (not a dot) is.
    assert results["dots"]["dot_general"] == 5
    assert results["dots"]["tanh"] == 2
    assert results["dots_alias"] == results["dots"]
    assert results["no_batch"] == results["dots"]
    # Saving nothing: both forward dots run again in the backward pass.
    assert results["nothing"]["dot_general"] == 5 + 2
    assert results["nothing"]["tanh"] == 2
    assert results["everything"]["dot_general"] == 5
    assert results["everything"]["tanh"] == 1


def test_dots_saveable_in_the_staged_backward_pass():
    f = lc.checkpoint(mlp, policy=policies.dots_saveable)
    jaxpr = lc.make_jaxpr(lc.grad(f, (0, 1)))(*MLP_ARGS)
    forward, backward = sub_eqns(jaxpr)
    saved = forward.outvars[1:]
    assert len(saved) == 2 and all(v.aval.shape in {(3, 1), (1, 1)} for v in saved)
    recompute = names(backward.params["jaxpr"].jaxpr)
    assert "tanh" in recompute
    # dot_general appears in the backward jaxpr only as part of the tangent computation.
    nothing = lc.make_jaxpr(lc.grad(lc.checkpoint(mlp), (0, 1)))(*MLP_ARGS)
    assert (names(sub_eqns(nothing)[1].params["jaxpr"].jaxpr).count("dot_general")
            == recompute.count("dot_general") + 2)


# ---------------------------------------------------------------------------
# static_argnums.


def test_static_argnums():
    def repeat(x, n):
        for _ in range(n):  # n must be a Python int: a tracer would fail here
            x = P.sin(x)
        return x

    f = lc.checkpoint(repeat, static_argnums=(1,))
    close(f(F32(0.5), 3), np.sin(np.sin(np.sin(0.5))))
    close(lc.grad(f)(F32(0.5), 3), sin3_grad(0.5), rtol=1e-5)
    g, calls = count(lc.grad(f), F32(0.5), 3)
    assert calls["sin"] == 5
    close(lc.grad(f)(F32(0.5), 1), np.cos(0.5))
    close(lc.jit(lc.grad(f), static_argnums=1)(F32(0.5), 2),
          np.cos(np.sin(0.5)) * np.cos(0.5), rtol=1e-5)
    f_int = lc.checkpoint(repeat, static_argnums=1)
    close(lc.grad(f_int)(F32(0.5), 2), np.cos(np.sin(0.5)) * np.cos(0.5), rtol=1e-5)
    f_neg = lc.checkpoint(repeat, static_argnums=-1)
    close(f_neg(F32(0.5), 1), np.sin(0.5))
    with pytest.raises(lc.TracerIntegerConversionError):
        lc.checkpoint(repeat)(F32(0.5), np.int32(2))


def test_static_callable_argument():
    def apply(fn, x):
        return fn(fn(x))

    f = lc.checkpoint(apply, static_argnums=(0,))
    close(f(P.sin, F32(0.5)), np.sin(np.sin(0.5)))
    close(lc.grad(lambda x: f(P.exp, x))(F32(0.5)), np.exp(np.exp(0.5)) * np.exp(0.5),
          rtol=1e-5)


# ---------------------------------------------------------------------------
# Composition with jit, vmap, jvp.


def test_checkpoint_inside_jit():
    f = lc.checkpoint(sin3)
    x = F32(0.5)
    close(lc.jit(f)(x), np.sin(np.sin(np.sin(0.5))))
    close(lc.jit(lc.grad(f))(x), sin3_grad(0.5), rtol=1e-5)
    close(lc.grad(lc.jit(f))(x), sin3_grad(0.5), rtol=1e-5)
    _, calls = count(lc.jit(lc.grad(f)), x)
    assert calls["sin"] == 5
    _, calls = count(lc.grad(lc.jit(f)), x)
    assert calls["sin"] == 5
    _, calls = count(lc.jit(lc.grad(sin3)), x)
    assert calls["sin"] == 3


def test_jit_inside_checkpoint():
    inner = lc.jit(lambda x: P.sin(P.sin(x)))
    f = lc.checkpoint(lambda x: P.sin(inner(x)))
    g, calls = count(lc.grad(f), F32(0.5))
    close(g, sin3_grad(0.5), rtol=1e-5)
    assert calls["sin"] == 5
    jaxpr = lc.make_jaxpr(f)(F32(0.5))
    (eqn,) = sub_eqns(jaxpr)
    assert names(eqn.params["jaxpr"].jaxpr) == ["jit", "sin"]
    close(lc.jit(lc.grad(f))(F32(0.5)), sin3_grad(0.5), rtol=1e-5)


def test_nested_checkpoints():
    f = lc.checkpoint(lambda x: P.sin(lc.checkpoint(lambda y: P.sin(P.sin(y)))(x)))
    g, calls = count(lc.grad(f), F32(0.5))
    close(g, sin3_grad(0.5), rtol=1e-5)
    assert calls["sin"] >= 5
    close(lc.jit(lc.grad(f))(F32(0.5)), sin3_grad(0.5), rtol=1e-5)


def test_vmap_of_checkpoint():
    xs = f32([0.1, 0.5, -1.0, 2.0])
    f = lc.checkpoint(sin3)
    close(lc.vmap(f)(xs), np.sin(np.sin(np.sin(xs))))
    per_example = np.stack([lc.grad(f)(x) for x in xs])
    close(lc.vmap(lc.grad(f))(xs), per_example)
    close(per_example, sin3_grad(xs), rtol=1e-5)
    close(lc.grad(lambda xs: P.total(lc.vmap(f)(xs)))(xs), per_example, rtol=1e-6)
    g, calls = count(lc.vmap(lc.grad(f)), xs)
    assert calls["sin"] == 5  # batched: one call per primitive application
    close(lc.jit(lc.vmap(lc.grad(f)))(xs), per_example, rtol=1e-6)


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (0, 0)])
def test_vmap_of_checkpoint_with_unbatched_arguments(in_axes):
    def h(x, y):
        return P.sin(P.mul(P.sin(x), y))

    f = lc.checkpoint(h)
    xs = f32([0.1, 0.5, -1.0]) if in_axes[0] == 0 else F32(0.7)
    ys = f32([2.0, 3.0, -1.0]) if in_axes[1] == 0 else F32(1.5)
    pick = lambda a, ax, i: a[i] if ax == 0 else a
    loop = np.stack([np.stack(lc.grad(h, (0, 1))(pick(xs, in_axes[0], i),
                                                 pick(ys, in_axes[1], i)))
                     for i in range(3)])
    gx, gy = lc.vmap(lc.grad(f, (0, 1)), in_axes)(xs, ys)
    close(np.stack([gx, gy], 1), loop, rtol=1e-6)
    gx, gy = lc.grad(lambda x, y: P.total(lc.vmap(f, in_axes)(x, y)), (0, 1))(xs, ys)
    close(gx, loop[:, 0] if in_axes[0] == 0 else loop[:, 0].sum(), rtol=1e-5)
    close(gy, loop[:, 1] if in_axes[1] == 0 else loop[:, 1].sum(), rtol=1e-5)


def test_jvp_and_linearize_of_checkpoint():
    f = lc.checkpoint(sin3)
    x = f32([0.5, -0.3])
    y, t = lc.jvp(f, (x,), (f32([1.0, 2.0]),))
    close(y, np.sin(np.sin(np.sin(x))))
    close(t, sin3_grad(x) * f32([1.0, 2.0]), rtol=1e-5)
    y, f_jvp = lc.linearize(f, x)
    close(f_jvp(f32([2.0, 0.0])), sin3_grad(x) * f32([2.0, 0.0]), rtol=1e-5)
    jaxpr = lc.make_jaxpr(lambda x, t: lc.jvp(f, (x,), (t,)))(x, x)
    (eqn,) = sub_eqns(jaxpr)  # the JVP stays inside one checkpoint
    assert len(eqn.outvars) == 2
    close(lc.jacfwd(f)(x), np.diag(sin3_grad(x)), rtol=1e-5)
    close(lc.jacrev(f)(x), np.diag(sin3_grad(x)), rtol=1e-5)


def test_higher_order_derivatives_of_checkpoint():
    f = lc.checkpoint(lambda x: P.mul(P.sin(x), P.sin(x)))  # sin^2: f'' = 2 cos(2x)
    x = F32(0.4)
    close(lc.grad(f)(x), np.sin(0.8), rtol=1e-5)
    close(lc.grad(lc.grad(f))(x), 2 * np.cos(0.8), rtol=1e-5)
    close(lc.jit(lc.grad(lc.grad(f)))(x), 2 * np.cos(0.8), rtol=1e-5)
    close(lc.hessian(lambda x: P.total(f(x)))(f32([0.4, 0.1])),
          np.diag(2 * np.cos(f32([0.8, 0.2]))), rtol=1e-5)


def test_higher_order_derivatives_with_policies():
    ref = lc.grad(lc.grad(sin3))(F32(0.5))
    for policy in [None, policies.everything_saveable, policies.save_only_these_names("mid"),
                   policies.save_anything_except_these_names("mid")]:
        f = lc.checkpoint(sin3_named, policy=policy)
        close(lc.grad(lc.grad(f))(F32(0.5)), ref, rtol=1e-5)
        close(lc.jvp(lc.grad(f), (F32(0.5),), (F32(1.0),))[1], ref, rtol=1e-5)
        xs = f32([0.5, 1.0])
        close(lc.vmap(lc.grad(lc.grad(f)))(xs), [ref, lc.grad(lc.grad(sin3))(F32(1.0))],
              rtol=1e-5)


def test_checkpoint_closing_over_an_outer_grad_tracer():
    def inner_grad(y, policy):
        return lc.grad(lc.checkpoint(lambda x: P.sin(P.mul(x, y)), policy=policy))(F32(0.5))

    # d/dy [y cos(x y)] at x = 0.5 = cos(x y) - x y sin(x y).
    y = 2.0
    expected = np.cos(0.5 * y) - 0.5 * y * np.sin(0.5 * y)
    for policy in [None, policies.everything_saveable]:
        close(lc.grad(inner_grad)(F32(y), policy), expected, rtol=1e-5)


def test_checkpoint_of_custom_derivative_functions():
    @lc.custom_jvp
    def triple(x):
        return P.sin(x)

    triple.defjvp(lambda p, t: (triple(p[0]), P.mul(t[0], 3.0)))

    @lc.custom_vjp
    def tripled_vjp(x):
        return P.sin(x)

    tripled_vjp.defvjp(lambda x: (tripled_vjp(x), x), lambda x, ct: (P.mul(ct, 3.0),))
    x = F32(0.5)
    # The custom JVP needs no primal residual: nothing to recompute, even saving nothing.
    g, calls = count(lc.grad(lc.checkpoint(lambda x: triple(triple(x)))), x)
    close(g, 9.0)
    assert calls["sin"] == 2
    # The custom VJP's residual is its input: the inner call is recomputed.
    g, calls = count(lc.grad(lc.checkpoint(lambda x: tripled_vjp(tripled_vjp(x)))), x)
    close(g, 9.0)
    assert calls["sin"] == 3
    g, calls = count(lc.grad(lc.checkpoint(lambda x: tripled_vjp(tripled_vjp(x)),
                                           policy=policies.everything_saveable)), x)
    close(g, 9.0)
    assert calls["sin"] == 2
    close(lc.jit(lc.grad(lc.checkpoint(lambda x: tripled_vjp(tripled_vjp(x)))))(x), 9.0)
    close(lc.vmap(lc.grad(lc.checkpoint(lambda x: tripled_vjp(triple(x)))))(f32([0.5, 1.0])),
          [9.0, 9.0])


def test_checkpoint_outputs_that_do_not_depend_on_the_input():
    def f(x, y):
        return P.sin(y), P.sin(x), F32(2.0), x

    g = lc.checkpoint(f)
    close(lc.grad(lambda x: g(x, F32(1.0))[1])(F32(0.5)), np.cos(0.5))
    close(lc.grad(lambda x: g(x, F32(1.0))[0])(F32(0.5)), 0.0)
    close(lc.grad(lambda x: P.add(g(x, F32(1.0))[2], g(x, F32(1.0))[3]))(F32(0.5)), 1.0)
    close(lc.grad(lc.checkpoint(lambda x: x))(F32(0.5)), 1.0)
    _, t = lc.jvp(lambda x: g(x, F32(1.0)), (F32(0.5),), (F32(2.0),))
    close(t[0], 0.0)
    close(t[1], 2 * np.cos(0.5))
    close(t[3], 2.0)


def test_checkpoint_with_integer_inputs():
    def f(x, n):
        return P.select(P.greater(n, 0), P.sin(x), P.cos(x))

    close(lc.grad(lc.checkpoint(f))(F32(0.5), np.int32(3)), np.cos(0.5))
    close(lc.grad(lc.checkpoint(f))(F32(0.5), np.int32(-3)), -np.sin(0.5))
    g = lc.grad(lc.checkpoint(f), (0, 1), allow_int=True)(F32(0.5), np.int32(3))
    assert g[1].dtype == lc.float0


# ---------------------------------------------------------------------------
# Printing.


def test_make_jaxpr_shows_the_checkpoint_equation_with_its_sub_jaxpr():
    jaxpr = lc.make_jaxpr(lc.checkpoint(lambda x: P.sin(P.sin(x))))(F32(1.0))
    assert str(jaxpr) == (
        "{ lambda ; a:f32[]. let\n"
        "    b:f32[] = checkpoint[\n"
        "      jaxpr={ lambda ; c:f32[]. let d:f32[] = sin c; e:f32[] = sin d in (e,) }\n"
        "      prevent_cse=True\n"
        "      differentiated=False\n"
        "      policy=None\n"
        "    ] a\n"
        "  in (b,) }")
    lc.check_jaxpr(jaxpr)


def test_make_jaxpr_prints_a_long_sub_jaxpr_indented_and_names_the_policy():
    f = lc.checkpoint(sin3, policy=policies.dots_saveable, prevent_cse=False)
    text = str(lc.make_jaxpr(f)(np.ones(3, np.float32)))
    lines = text.splitlines()
    assert lines[1] == "    b:f32[3] = checkpoint["
    assert lines[2] == "      jaxpr={ lambda ; c:f32[3]. let"
    assert lines[3] == "          d:f32[3] = sin c"  # JAX's indentation: 4 past the param
    assert "      prevent_cse=False" in lines
    assert "      policy=dots_saveable" in lines


def test_make_jaxpr_of_grad_shows_the_recomputation():
    jaxpr = lc.make_jaxpr(lc.grad(lc.checkpoint(lambda x: P.sin(P.sin(x)))))(F32(1.0))
    lc.check_jaxpr(jaxpr)
    forward, backward = sub_eqns(jaxpr)
    assert names(forward.params["jaxpr"].jaxpr) == ["sin", "sin"]
    assert forward.params["differentiated"] is False
    assert len(forward.outvars) == 1  # nothing saved besides the output
    back = names(backward.params["jaxpr"].jaxpr)
    assert backward.params["differentiated"] is True
    assert back.count("sin") == 1 and back.count("cos") == 2  # sin(x) recomputed
    text = str(jaxpr)
    assert "differentiated=True" in text
    # Without checkpoint the cosines are computed in the forward pass, no sin recomputed.
    plain = lc.make_jaxpr(lc.grad(lambda x: P.sin(P.sin(x))))(F32(1.0))
    assert names(plain.jaxpr).count("sin") == 2
    assert "checkpoint" not in names(plain.jaxpr)
    # Evaluating the staged gradient gives the right value.
    close(lc.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, F32(1.0))[0],
          np.cos(np.sin(1.0)) * np.cos(1.0), rtol=1e-6)


def test_everything_saveable_leaves_no_recomputation_in_the_jaxpr():
    jaxpr = lc.make_jaxpr(lc.grad(lc.checkpoint(lambda x: P.sin(P.sin(x)),
                                                policy=policies.everything_saveable)))(F32(1.0))
    forward, backward = sub_eqns(jaxpr)
    assert names(backward.params["jaxpr"].jaxpr).count("sin") == 0
    assert "cos" not in names(backward.params["jaxpr"].jaxpr)
    assert names(forward.params["jaxpr"].jaxpr).count("cos") == 2
