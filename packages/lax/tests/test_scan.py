"""lax.scan, lax.map and lax.fori_loop: values against Python loops, every
transformation (jvp/grad against numerical derivatives and unrolled loops, vmap
against loops, jit) and their compositions, residuals saved rather than
recomputed, checkpoint, closures over outer tracers, the printed jaxpr, the
lowering (one loop), and the errors."""

import re
import time

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
from lamella.lax.control_flow.scan import fori_loop, scan, scan_p
from lamella.lax.control_flow.scan import map as lax_map
from lamella.lax.test_util import check_derivatives

RNG = np.random.default_rng(0)
W = (RNG.standard_normal((3, 3)) * 0.5).astype(np.float32)
H0 = RNG.standard_normal(3).astype(np.float32)
XS = RNG.standard_normal((5, 3)).astype(np.float32)


def rnn(w, h0, xs, **scan_kwargs):
    """A tanh RNN: final state and per-step outputs (a pytree carry and outputs)."""
    def step(carry, x):
        h, count = carry["h"], carry["count"]
        h = lax.tanh(lax.add(lax.dot(w, h), x))
        return {"h": h, "count": lax.add(count, np.int32(1))}, (lax.sin(h), lax.mul(h, x))
    return scan(step, {"h": h0, "count": np.int32(0)}, xs, **scan_kwargs)


def rnn_reference(w, h0, xs, reverse=False):
    h, ys_a, ys_b = h0, [None] * len(xs), [None] * len(xs)
    order = range(len(xs) - 1, -1, -1) if reverse else range(len(xs))
    for i in order:
        h = np.tanh(w @ h + xs[i])
        ys_a[i], ys_b[i] = np.sin(h), h * xs[i]
    return h, np.stack(ys_a), np.stack(ys_b)


def loss(w, h0, xs):
    carry, (a, b) = rnn(w, h0, xs)
    return lax.reduce_sum(lax.add(lax.add(carry["h"], lax.reduce_sum(a, (0,))),
                                  lax.reduce_sum(b, (0,))), (0,))


def loss_unrolled(w, h0, xs):
    """`loss` as a Python loop of the same lax operations."""
    h, total = h0, lax.full_like(h0, 0)
    for i in range(np.shape(xs)[0]):
        x = lax.index_in_dim(xs, i, keepdims=False)
        h = lax.tanh(lax.add(lax.dot(w, h), x))
        total = lax.add(total, lax.add(lax.sin(h), lax.mul(h, x)))
    return lax.reduce_sum(lax.add(h, total), (0,))


def assert_close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


def scans_in(jaxpr):
    """Every scan equation of a jaxpr, nested ones included, outermost first."""
    found = []
    for eqn in jaxpr.eqns:
        if eqn.primitive is scan_p:
            found.append(eqn)
        for sub in eqn.primitive.subjaxprs(eqn.params):
            found.extend(scans_in(sub.jaxpr if isinstance(sub, lc.ClosedJaxpr) else sub))
    return found


def primitive_names(jaxpr):
    return [e.primitive.name for e in jaxpr.eqns]


# ---------------------------------------------------------------------------
# Values.


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("unroll", [1, 2, 3, True])
def test_matches_python_loop(reverse, unroll):
    carry, (a, b) = rnn(W, H0, XS, reverse=reverse, unroll=unroll)
    h, ref_a, ref_b = rnn_reference(W, H0, XS, reverse)
    assert_close(carry["h"], h)
    assert int(carry["count"]) == 5
    assert_close(a, ref_a)
    assert_close(b, ref_b)


def test_no_xs_with_length_and_none_outputs():
    def step(c, _):
        return lax.mul(c, np.float32(2)), None
    carry, ys = scan(step, np.float32(1), None, length=6)
    assert float(carry) == 64.0 and ys is None
    carry, ys = scan(lambda c, x: (c, x), np.float32(1), np.zeros((0, 2), np.float32))
    assert float(carry) == 1.0 and np.shape(ys) == (0, 2)


def test_weakly_typed_init_is_strengthened():
    # A Python float carry updated with float32 values: the carry becomes float32.
    carry, ys = scan(lambda c, x: (lax.add(c, x), c), 0.0, XS[:, 0])
    assert np.asarray(carry).dtype == np.float32
    assert_close(carry, XS[:, 0].sum())
    assert_close(ys, np.concatenate([[0], np.cumsum(XS[:-1, 0])]))


def test_jit_matches_eager_and_prints_indented():
    eager = rnn(W, H0, XS, reverse=True)
    jitted = lc.jit(lambda w, h, xs: rnn(w, h, xs, reverse=True))(W, H0, XS)
    for e, j in zip(lc.tree_util.tree_leaves(eager), lc.tree_util.tree_leaves(jitted)):
        np.testing.assert_array_equal(np.asarray(e), np.asarray(j))
    text = str(lc.make_jaxpr(lambda xs: scan(lambda c, x: (lax.add(c, lax.sin(x)), c),
                                             np.float32(0), xs))(XS[:, 0]))
    assert re.search(r"= scan\[\n\s+jaxpr=\{ lambda ; \w+:f32\[\] \w+:f32\[\]\. let\n"
                     r"\s+\w+:f32\[\] = sin", text), text
    for param in ("length=5", "num_carry=1", "num_consts=0", "reverse=False", "unroll=1"):
        assert param in text
    assert "linear=" not in text  # lamella's bookkeeping; JAX's scan has no such param


def test_bodies_are_traced_once_per_call():
    # A Python side effect in a body is seen once (fori_loop used to trace three times).
    calls = []

    def counted(f):
        def body(*args):
            calls.append(1)
            return f(*args)
        return body
    x = np.float32(1.5)
    for run in (lambda: fori_loop(0, 3, counted(lambda i, c: lax.mul(c, 2.0)), x),
                lambda: fori_loop(0, 3, counted(lambda i, c: lax.add(c, 1.0)), 0.0),
                lambda: scan(counted(lambda c, y: (lax.add(c, y), c)), 0.0, XS[:, 0]),
                lambda: lax.while_loop(lambda c: lax.lt(c, 5.0),
                                       counted(lambda c: lax.add(c, x)), 0.0)):
        calls.clear()
        lc.make_jaxpr(run)()
        assert len(calls) == 1


def test_a_weak_init_whose_dtype_the_body_changes_is_promoted():
    # As JAX: an int init updated with float32 values becomes float32 (traced again).
    carry, _ = scan(lambda c, x: (lax.add(lax.convert_element_type(c, np.float32), x), None),
                    0, XS[:, 0])
    assert np.asarray(carry).dtype == np.float32
    assert_close(carry, XS[:, 0].sum())


def test_eager_calls_reuse_the_traced_body():
    # One trace per body function and signature, so eager calls compile once.
    def body(c, x):
        return lax.add(c, x), c
    first, second = (lc.make_jaxpr(lambda xs: scan(body, np.float32(0), xs))(XS[:, 0])
                     .eqns[0].params["jaxpr"] for _ in range(2))
    assert first is second


def test_nested_scans():
    def outer(c, row):
        inner, ys = scan(lambda s, x: (lax.add(s, lax.mul(x, c)), s), np.float32(0), row)
        return lax.add(c, inner), ys
    carry, ys = lc.jit(lambda m: scan(outer, np.float32(1), m))(np.asarray(W))
    c, ref_ys = np.float32(1), []
    for row in W:
        partial = np.concatenate([[0], np.cumsum(row * c)])
        ref_ys.append(partial[:-1])
        c = c + partial[-1]
    assert_close(carry, c)
    assert_close(ys, np.stack(ref_ys))


def test_disable_jit_runs_python_loop():
    seen = []

    def step(c, x):
        seen.append(type(c).__name__)
        return lax.add(c, x), lax.mul(c, x)
    with lc.disable_jit():
        carry, ys = scan(step, np.float32(0), XS[:, 0], reverse=True)
    assert len(seen) == 5 and "Tracer" not in "".join(seen)
    ref = np.cumsum(XS[::-1, 0])
    assert_close(carry, ref[-1])
    assert_close(ys, (np.concatenate([[0], ref[:-1]]) * XS[::-1, 0])[::-1])


# ---------------------------------------------------------------------------
# Differentiation.


def test_jvp_and_vjp_against_numerical_derivatives():
    def f(w, h0, xs):
        return loss(w, h0, xs)
    check_derivatives(f, [W, H0, XS], diff_argnums=(0, 1, 2), rtol=1e-6, atol=1e-6)

    def reversed_unrolled(w, xs):
        carry, (a, _) = rnn(w, H0.astype(np.float64), xs, reverse=True, unroll=2)
        return lax.add(carry["h"], lax.reduce_sum(a, (0,)))
    check_derivatives(reversed_unrolled, [W, XS], diff_argnums=(0, 1))


def test_grad_equals_grad_of_unrolled_loop():
    with lc.enable_x64():
        args = [np.asarray(a, np.float64) for a in (W, H0, XS)]
        got = lc.grad(loss, argnums=(0, 1, 2))(*args)
        want = lc.grad(loss_unrolled, argnums=(0, 1, 2))(*args)
        for g, w in zip(got, want):
            assert_close(g, w, rtol=1e-12, atol=1e-12)


def test_residuals_are_saved_per_iteration_not_recomputed():
    jaxpr = lc.make_jaxpr(lc.grad(loss))(W, H0, XS)
    lc.check_jaxpr(jaxpr)  # the derived bodies are well typed
    forward, backward = scans_in(jaxpr.jaxpr)
    assert not forward.params["reverse"] and backward.params["reverse"]
    # The primal body runs once per iteration, in the forward scan, which also
    # computes the derivatives' nonlinear factors (1 - tanh², cos) there ...
    names = primitive_names(forward.params["jaxpr"].jaxpr)
    assert names.count("tanh") == 1 and names.count("sin") == 1 and names.count("cos") == 1
    # ... and stacks them as extra outputs: the backward scan only multiplies.
    back = primitive_names(backward.params["jaxpr"].jaxpr)
    assert not {"tanh", "sin", "cos"} & set(back), back
    assert len(forward.outvars) > 1 + 1 + 2  # carry, count, two ys, plus residuals
    # The weights are loop-invariant: passed to the backward scan once, not stacked.
    assert backward.params["num_consts"] >= 1
    w_var = jaxpr.jaxpr.invars[0]
    assert backward.invars[0] is w_var


def test_checkpointed_body_recomputes_instead_of_saving():
    def step(h, x):
        return lax.sin(lax.mul(lax.sin(h), x)), None

    def f(h, xs, body):
        h, _ = scan(body, h, xs)
        return lax.reduce_sum(h, (0,))
    xs = XS[:, :2]
    plain = lc.make_jaxpr(lc.grad(lambda h: f(h, xs, step)))(H0[:2])
    remat = lc.make_jaxpr(lc.grad(lambda h: f(h, xs, lc.checkpoint(step))))(H0[:2])
    stacked = [len(s.outvars) for s in scans_in(plain.jaxpr)[:1]]
    stacked_remat = [len(s.outvars) for s in scans_in(remat.jaxpr)[:1]]
    assert stacked_remat[0] < stacked[0]
    backward = scans_in(remat.jaxpr)[-1].params["jaxpr"]
    assert "sin" in str(backward)  # recomputed in the backward pass
    assert "sin" not in str(scans_in(plain.jaxpr)[-1].params["jaxpr"])
    assert_close(lc.grad(lambda h: f(h, xs, lc.checkpoint(step)))(H0[:2]),
                 lc.grad(lambda h: f(h, xs, step))(H0[:2]))


def test_checkpoint_around_scan():
    g = lc.grad(lc.checkpoint(loss))(W, H0, XS)
    assert_close(g, lc.grad(loss)(W, H0, XS))


def test_grad_through_int_carry_and_xs_none():
    def power(x):
        def step(c, _):
            i, acc = c
            return (lax.add(i, np.int32(1)), lax.mul(acc, x)), i
        (i, acc), ys = scan(step, (np.int32(0), np.float32(1)), None, length=4)
        return acc
    assert_close(lc.grad(power)(np.float32(1.5)), 4 * 1.5 ** 3)
    assert_close(lc.jvp(power, (np.float32(2.0),), (np.float32(1.0),))[1], 32.0)


def test_linearize_of_reverse_scan():
    f = lambda xs: rnn(W, H0, xs, reverse=True)[1][0]  # noqa: E731
    y, f_jvp = lc.linearize(f, XS)
    t = np.ones_like(XS)
    assert_close(f_jvp(t), lc.jvp(f, (XS,), (t,))[1])


# ---------------------------------------------------------------------------
# Batching.


def batched_reference(fun, args, in_axes):
    n = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    outs = [fun(*[a if ax is None else np.take(a, k, axis=ax) for a, ax in zip(args, in_axes)])
            for k in range(n)]
    return [np.stack([np.asarray(o[i]) for o in outs]) for i in range(len(outs[0]))]


def rnn_flat(w, h0, xs):
    carry, (a, b) = rnn(w, h0, xs, reverse=True)
    return carry["h"], carry["count"], a, b


@pytest.mark.parametrize("in_axes", [(None, None, 0), (None, 0, None), (0, None, None),
                                     (None, None, 2), (1, 0, 1)])
def test_vmap_matches_loop(in_axes):
    rng = np.random.default_rng(1)
    args = [W, H0, XS]
    batched = [a if ax is None else np.moveaxis(
        a[None] * rng.uniform(0.5, 1.5, (4, *np.shape(a))).astype(np.float32), 0, ax)
        for a, ax in zip(args, in_axes)]
    got = lc.vmap(rnn_flat, in_axes=in_axes)(*batched)
    for g, w in zip(got, batched_reference(rnn_flat, batched, in_axes)):
        assert_close(g, w)


def test_vmap_carry_fixpoint_makes_unbatched_carry_batched():
    # Only xs are batched; the carry starts unbatched and becomes batched.
    def f(xs):
        return scan(lambda c, x: (lax.add(lax.mul(c, np.float32(0.5)), x), c),
                    np.float32(0), xs)
    xs = RNG.standard_normal((4, 5)).astype(np.float32)
    jaxpr = lc.make_jaxpr(lc.vmap(f))(xs)
    (eqn,) = scans_in(jaxpr.jaxpr)
    assert eqn.invars[0].aval.shape == (4,)  # the init was broadcast to the batch
    got = lc.vmap(f)(xs)
    for g, w in zip(got, batched_reference(f, [xs], [0])):
        assert_close(g, w)


# ---------------------------------------------------------------------------
# Compositions and closures.


def test_compositions():
    xs_b = np.stack([XS, XS * 0.5, XS * 1.5])

    def batch_loss(w):
        return lax.reduce_sum(lc.vmap(loss, in_axes=(None, None, 0))(w, H0, xs_b), (0,))
    ref = sum(np.asarray(lc.grad(loss)(W, H0, x)) for x in xs_b)
    assert_close(lc.grad(batch_loss)(W), ref, rtol=1e-4)                      # grad of vmap
    per_example = lc.vmap(lc.grad(loss), in_axes=(None, None, 0))(W, H0, xs_b)  # vmap of grad
    assert_close(per_example, np.stack([lc.grad(loss)(W, H0, x) for x in xs_b]), rtol=1e-4)
    assert_close(lc.jit(lc.grad(loss))(W, H0, XS), lc.grad(loss)(W, H0, XS))  # jit of grad
    with lc.enable_x64():                                                     # jvp of grad
        w64, h64, xs64 = (np.asarray(a, np.float64) for a in (W, H0, XS))
        t = np.ones_like(w64)
        _, hvp = lc.jvp(lambda w: lc.grad(loss)(w, h64, xs64), (w64,), (t,))
        g = lambda w: np.asarray(lc.grad(loss)(w, h64, xs64))  # noqa: E731
        assert_close(hvp, (g(w64 + 1e-6 * t) - g(w64 - 1e-6 * t)) / 2e-6, rtol=1e-5,
                     atol=1e-6)


def test_closures_over_outer_tracers():
    def f(scale):
        # The body closes over `scale`, a tracer of the enclosing grad / vmap.
        carry, _ = scan(lambda c, x: (lax.add(c, lax.mul(scale, lax.sin(x))), None),
                        np.float32(0), XS[:, 0])
        return carry
    assert_close(lc.grad(f)(np.float32(2.0)), np.sin(XS[:, 0]).sum())
    scales = np.float32([1, 2, 3])
    assert_close(lc.vmap(f)(scales), scales * np.sin(XS[:, 0]).sum())
    # grad inside, closing over the outer grad's tracer (perturbation confusion).
    outer = lc.grad(lambda a: lc.grad(lambda b: f(lax.mul(a, b)))(np.float32(1.0)))
    assert_close(outer(np.float32(3.0)), np.sin(XS[:, 0]).sum())


# ---------------------------------------------------------------------------
# map and fori_loop.


@pytest.mark.parametrize("batch_size", [None, 2, 5, 8])
def test_map(batch_size):
    def f(x):
        return {"s": lax.sin(x), "sum": lax.reduce_sum(x, (0,))}
    out = lax_map(f, XS, batch_size=batch_size)
    assert_close(out["s"], np.sin(XS))
    assert_close(out["sum"], XS.sum(1))


def test_fori_loop_with_concrete_bounds_is_a_differentiable_scan():
    def f(x):
        return fori_loop(1, 4, lambda i, v: lax.mul(v, lax.add(x, lax.convert_element_type(
            i, np.float32))), np.float32(1))
    x = np.float32(0.5)
    assert_close(f(x), 1.5 * 2.5 * 3.5)
    assert scans_in(lc.make_jaxpr(f)(x).jaxpr)
    assert_close(lc.grad(f)(x), 2.5 * 3.5 + 1.5 * 3.5 + 1.5 * 2.5)
    assert_close(fori_loop(np.int32(2), np.int32(5), lambda i, v: lax.add(v, i), np.int32(0)),
                 9)
    assert_close(fori_loop(3, 1, lambda i, v: lax.add(v, i), np.int32(7)), 7)
    assert_close(fori_loop(0, 7, lambda i, v: lax.add(v, i), np.int32(0), unroll=3), 21)


def test_fori_loop_with_traced_bounds_is_a_while_loop():
    def f(n, x):
        return fori_loop(0, n, lambda i, v: lax.mul(v, x), np.float32(1))
    jf = lc.jit(f)
    assert_close(jf(np.int32(3), np.float32(2)), 8.0)
    assert "while" in primitive_names(lc.make_jaxpr(f)(np.int32(3), np.float32(2)).jaxpr)
    assert_close(lc.jvp(lambda x: jf(np.int32(3), x), (np.float32(2),), (np.float32(1),))[1],
                 12.0)
    with pytest.raises(ValueError, match="bounds are concrete"):
        lc.jit(lambda n: fori_loop(0, n, lambda i, v: v, np.float32(1), unroll=2))(np.int32(3))


def test_long_fori_loop_lowers_to_one_loop_and_traces_fast():
    def f(x):
        return fori_loop(0, 10_000, lambda i, v: lax.add(lax.mul(v, np.float32(0.999)),
                                                         np.float32(1)), x)
    start = time.perf_counter()
    text = lc.jit(f).lower(np.float32(0)).as_text()
    elapsed = time.perf_counter() - start
    assert text.count("stablehlo.while") == 1
    assert text.count("stablehlo.multiply") == 1
    assert elapsed < 1.0, elapsed
    assert_close(lc.jit(f)(np.float32(0)), (1 - 0.999 ** 10_000) / 0.001, rtol=1e-3)


@pytest.mark.parametrize("unroll,whiles,copies", [(1, 1, 1), (3, 1, 3 + 1), (True, 0, 10)])
def test_unroll_puts_copies_of_the_body_in_one_loop(unroll, whiles, copies):
    def f(xs):
        return scan(lambda c, x: (lax.add(c, lax.sin(x)), c), np.float32(0), xs,
                    unroll=unroll)
    xs = np.linspace(0, 1, 10, dtype=np.float32)
    text = lc.jit(f).lower(xs).as_text()
    assert text.count("stablehlo.while") == whiles
    assert text.count("stablehlo.sine") == copies
    assert_close(lc.jit(f)(xs)[0], np.sin(xs).sum())


# ---------------------------------------------------------------------------
# Errors.


def test_errors():
    step = lambda c, x: (c, x)  # noqa: E731
    with pytest.raises(ValueError, match=r"different leading axis sizes: xs\[0\] of shape "
                                         r"\(3,\), xs\[1\]\['b'\] of shape \(4, 2\)"):
        scan(step, np.float32(0), (np.ones(3), {"b": np.ones((4, 2))}))
    with pytest.raises(ValueError, match="no values to scan over and `length` not provided"):
        scan(step, np.float32(0), None)
    with pytest.raises(ValueError, match="`length` argument of 4 which disagrees"):
        scan(step, np.float32(0), np.ones(3), length=4)
    with pytest.raises(ValueError, match="no leading axis"):
        scan(step, np.float32(0), np.float32(1))
    with pytest.raises(ValueError, match="unroll must be a bool or a positive int"):
        scan(step, np.float32(0), np.ones(3), unroll=0)
    with pytest.raises(TypeError, match="must return a pair"):
        scan(lambda c, x: c, np.float32(0), np.ones(3))
    with pytest.raises(TypeError) as info:
        scan(lambda c, x: ((c[0], c[0]), x), (np.float32(0), np.int32(0)),
             np.ones(3, np.float32))
    assert "input carry:  (f32[], i32[])" in str(info.value)
    assert "output carry: (f32[], f32[])" in str(info.value)
    with pytest.raises(TypeError, match=r"input carry:  f32\[\]\n  output carry: f32\[2\]"):
        scan(lambda c, x: (lax.broadcast(c, (2,)), x), np.float32(0), np.ones(3, np.float32))
    with pytest.raises(TypeError, match="fori_loop bounds must be integers"):
        fori_loop(0.0, 3, lambda i, v: v, np.float32(0))
