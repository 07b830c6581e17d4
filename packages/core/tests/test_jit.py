"""jit in core: results, the trace cache, static and donated arguments, AOT stages.

The cache tests count how often the Python body runs: a jitted function is
traced once per new signature (tree structure, avals, static arguments,
config) and replayed from its jaxpr otherwise. Core's executor is the NumPy
interpreter, so every result here can be compared with eager evaluation.
"""

from __future__ import annotations

import functools
from collections import namedtuple

import numpy as np
import numpy_prims as P
import pytest

import lamella.core as lc
from lamella.core import ShapeDtypeStruct as S
from lamella.core.dispatch import Executor, InterpretedProgram

F32 = np.float32


def _counting(fn):
    """`fn` with a `.calls` counter of how many times its Python body ran."""
    @functools.wraps(fn)
    def counted(*args, **kwargs):
        counted.calls += 1
        return fn(*args, **kwargs)
    counted.calls = 0
    return counted


def _assert_same(got, want):
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


# ---------------------------------------------------------------------------
# Results equal eager evaluation.


@pytest.mark.parametrize("fn, args", [
    (lambda x: P.sin(P.cos(x)), (np.linspace(-2, 2, 7, dtype=F32),)),
    (lambda x, y: P.add(P.mul(x, y), P.exp(y)),
     (np.arange(6, dtype=F32).reshape(2, 3), np.float32(0.5))),
    (lambda a, b: P.total(P.matmul(a, b)),
     (np.arange(6, dtype=F32).reshape(2, 3), np.arange(12, dtype=F32).reshape(3, 4))),
    (lambda x: P.select(P.greater(x, 0.0), x, P.neg(x)), (np.array([-1.5, 0.0, 2.5], F32),)),
    (lambda x: P.add(P.add(x, x), 3), (np.arange(4, dtype=np.int32),)),
])
def test_jit_equals_eager(fn, args):
    _assert_same(lc.jit(fn)(*args), fn(*args))


def test_jit_canonicalizes_64_bit_inputs_like_eager():
    x64 = np.linspace(0, 1, 5)  # float64 data: f32 without x64, both eagerly and under jit
    _assert_same(lc.jit(P.sin)(x64), P.sin(x64))
    assert lc.jit(P.sin)(x64).dtype == F32
    assert P.sin(np.float64(1.0)).dtype == F32  # NumPy scalars too, not only arrays
    assert lc.jit(P.sin)(np.float64(1.0)).dtype == F32


def test_python_scalar_arguments_compute_in_the_traced_dtype():
    f = lc.jit(lambda x: P.mul(x, 2.0))
    out = f(3.0)
    assert f.trace(3.0).out_info == S((), F32, weak_type=True)
    assert np.asarray(out).dtype == F32
    assert float(out) == 6.0
    compiled = f.lower(3.0).compile()
    assert np.asarray(compiled(4.0)).dtype == F32


def test_jit_of_jit_and_autodiff_compose():
    f = lc.jit(lambda x: P.mul(P.sin(x), x))
    x = np.float32(0.7)
    expected = np.cos(0.7) * 0.7 + np.sin(0.7)
    np.testing.assert_allclose(lc.grad(f)(x), expected, rtol=1e-6)
    np.testing.assert_allclose(lc.jit(lc.grad(f))(x), expected, rtol=1e-6)
    np.testing.assert_allclose(lc.jit(lambda y: f(f(y)))(x), np.sin(f(x)) * f(x), rtol=1e-6)
    xs = np.linspace(0, 1, 4, dtype=F32)
    np.testing.assert_allclose(lc.vmap(f)(xs), np.sin(xs) * xs, rtol=1e-6)


# ---------------------------------------------------------------------------
# The trace cache.


def test_traced_once_per_shape_and_dtype():
    body = _counting(lambda x: P.sin(x))
    f = lc.jit(body)
    f(np.ones(3, F32))
    f(np.zeros(3, F32))
    assert body.calls == 1
    f(np.ones(4, F32))
    assert body.calls == 2
    f(np.ones((3, 1), F32))
    assert body.calls == 3
    f(np.ones(3, np.int32))
    assert body.calls == 4
    f(np.ones(3, np.float64))  # canonicalized to f32 without x64: a cache hit
    assert body.calls == 4
    f(np.ones(4, F32))
    assert body.calls == 4


def test_weak_types_are_separate_cache_entries():
    body = _counting(lambda x: P.mul(x, 3.0))
    f = lc.jit(body)
    f(2.0)
    f(5.0)
    assert body.calls == 1
    f(np.float32(2.0))  # strong f32[]: a different signature from the weak Python float
    assert body.calls == 2
    f(np.float32(7.0))
    assert body.calls == 2
    assert f.trace(2.0).out_info.weak_type
    assert not f.trace(np.float32(2.0)).out_info.weak_type


def test_pytree_structure_changes_retrace():
    body = _counting(lambda t: P.total(t[0]))
    f = lc.jit(body)
    x = np.ones(3, F32)
    f((x, x))
    f((x, x))
    assert body.calls == 1
    f([x, x])
    assert body.calls == 2
    f((x, None))
    assert body.calls == 3
    f((x, x, x))
    assert body.calls == 4
    f({0: x})
    assert body.calls == 5
    f((x, None))
    assert body.calls == 5


def test_config_change_retraces():
    body = _counting(lambda x: P.mul(x, 2.0))
    f = lc.jit(body)
    f(1.5)
    with lc.enable_x64():
        out = f(1.5)
        assert np.asarray(out).dtype == np.float64
        f(2.5)
    assert body.calls == 2
    assert np.asarray(f(1.5)).dtype == F32
    assert body.calls == 2


def test_static_argnums_values_are_cache_keys():
    def power(x, n):
        out = x
        for _ in range(n - 1):  # Python control flow on a static value
            out = P.mul(out, x)
        return out
    body = _counting(power)
    f = lc.jit(body, static_argnums=1)
    x = np.array([1.0, 2.0, 3.0], F32)
    np.testing.assert_array_equal(f(x, 3), x ** 3)
    np.testing.assert_array_equal(f(x + 1, 3), (x + 1) ** 3)
    assert body.calls == 1
    np.testing.assert_array_equal(f(x, 2), x ** 2)
    assert body.calls == 2
    np.testing.assert_array_equal(f(x, 3), x ** 3)
    assert body.calls == 2


def test_negative_static_argnums_count_from_the_last_positional_argument():
    body = _counting(lambda x, mode: P.sin(x) if mode == "sin" else P.cos(x))
    f = lc.jit(body, static_argnums=-1)
    x = np.float32(0.3)
    np.testing.assert_allclose(f(x, "sin"), np.sin(x), rtol=1e-6)
    np.testing.assert_allclose(f(x, "cos"), np.cos(x), rtol=1e-6)
    f(np.float32(1.0), "cos")
    assert body.calls == 2


def test_static_argnames_including_keyword_only():
    def scale(x, *, factor, op="mul"):
        return P.mul(x, factor) if op == "mul" else P.add(x, factor)
    body = _counting(scale)
    f = lc.jit(body, static_argnames=("factor", "op"))
    x = np.arange(3, dtype=F32)
    np.testing.assert_array_equal(f(x, factor=2.0), x * 2)
    np.testing.assert_array_equal(f(x, factor=2.0), x * 2)
    assert body.calls == 1
    np.testing.assert_array_equal(f(x, factor=3.0), x * 3)
    np.testing.assert_array_equal(f(x, factor=3.0, op="add"), x + 3)
    assert body.calls == 3
    # A static float is baked into the jaxpr as a literal, not an input.
    assert str(f.trace(x, factor=2.0).jaxpr) == \
        "{ lambda ; a:f32[3]. let b:f32[3] = mul a 2.0:f32[] in (b,) }"


def test_static_positional_passed_by_keyword_and_vice_versa():
    def fn(x, mode):
        return P.sin(x) if mode == "sin" else P.exp(x)
    x = np.float32(0.25)
    # static_argnums=1 also makes the parameter name `mode` static ...
    by_num = lc.jit(fn, static_argnums=1)
    np.testing.assert_allclose(by_num(x, mode="exp"), np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(by_num(x, "sin"), np.sin(x), rtol=1e-6)
    # ... and static_argnames="mode" makes position 1 static.
    by_name = lc.jit(fn, static_argnames="mode")
    np.testing.assert_allclose(by_name(x, "exp"), np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(by_name(x, mode="sin"), np.sin(x), rtol=1e-6)
    body = _counting(fn)
    f = lc.jit(body, static_argnames="mode")
    f(x, "exp")
    f(np.float32(1.0), "exp")
    assert body.calls == 1


def test_non_hashable_static_arguments_error():
    f = lc.jit(lambda x, opts: P.mul(x, opts[0]), static_argnums=1)
    assert f(np.float32(2.0), (3.0,)) == 6.0
    with pytest.raises(TypeError, match=r"Non-hashable static arguments are not supported.*"
                                        r"\[3\.0\].*unhashable type: 'list'.*a tuple"):
        f(np.float32(2.0), [3.0])
    g = lc.jit(lambda x, *, opts: x, static_argnames="opts")
    with pytest.raises(TypeError, match=r"Non-hashable static.*'opts', \{'a': 1\}"):
        g(np.float32(1.0), opts={"a": 1})


# ---------------------------------------------------------------------------
# Ways to apply jit.


def test_decorator_forms():
    @lc.jit
    def plain(x):
        return P.neg(x)

    @functools.partial(lc.jit, static_argnums=(1,))
    def partial_form(x, k):
        return P.mul(x, float(k))

    @lc.jit(static_argnames="k")
    def call_form(x, k):
        return P.mul(x, float(k))

    x = np.arange(3, dtype=F32)
    np.testing.assert_array_equal(plain(x), -x)
    np.testing.assert_array_equal(partial_form(x, 4), 4 * x)
    np.testing.assert_array_equal(call_form(x, k=5), 5 * x)
    assert isinstance(plain, lc.JitFunction)
    assert plain.__name__ == "plain"
    assert plain.__wrapped__ is not None
    assert repr(plain) == "<jit-compiled plain>"
    with pytest.raises(TypeError, match="jit expects a callable, got 3"):
        lc.jit(3)


def test_jit_on_methods():
    class Scaler:
        def __init__(self, factor):
            self.factor = factor
            self.traces = 0

        def __hash__(self):
            return hash(self.factor)

        def __eq__(self, other):
            return isinstance(other, Scaler) and self.factor == other.factor

        @functools.partial(lc.jit, static_argnums=0)
        def scale(self, x):
            self.traces += 1
            return P.mul(x, self.factor)

    x = np.arange(3, dtype=F32)
    a = Scaler(2.0)
    np.testing.assert_array_equal(a.scale(x), 2 * x)
    np.testing.assert_array_equal(a.scale(x + 1), 2 * (x + 1))
    assert a.traces == 1
    np.testing.assert_array_equal(Scaler(3.0).scale(x), 3 * x)
    assert isinstance(Scaler.scale, lc.JitFunction)  # through the class: the function itself
    np.testing.assert_array_equal(Scaler.scale(a, x), 2 * x)


def test_pytree_arguments_and_outputs():
    Pair = namedtuple("Pair", "left right")
    body = _counting(lambda params, batch, extra=None: {
        "sum": P.add(params["w"], batch.left),
        "prod": (P.mul(params["b"], batch.right), None),
        "pair": Pair(batch.right, params["w"]),
        "extra": extra,
    })
    f = lc.jit(body)
    w, b = np.arange(3, dtype=F32), np.float32(2.0)
    batch = Pair(np.ones(3, F32), np.full(3, 4.0, F32))
    out = f({"w": w, "b": b}, batch)
    assert set(out) == {"sum", "prod", "pair", "extra"}
    np.testing.assert_array_equal(out["sum"], w + 1)
    np.testing.assert_array_equal(out["prod"][0], 8 * np.ones(3))
    assert out["prod"][1] is None and out["extra"] is None
    assert type(out["pair"]) is Pair
    np.testing.assert_array_equal(out["pair"].left, batch.right)
    f({"w": w + 1, "b": b}, batch)
    assert body.calls == 1
    out = f({"w": w, "b": b}, batch, np.float32(1.5))
    assert out["extra"] == np.float32(1.5)
    assert body.calls == 2


def test_keyword_arguments():
    body = _counting(lambda x, y=None, *, z: P.add(P.mul(x, y), z))
    f = lc.jit(body)
    x, y, z = np.float32(2.0), np.float32(3.0), np.arange(2, dtype=F32)
    np.testing.assert_array_equal(f(x, y=y, z=z), x * y + z)
    np.testing.assert_array_equal(f(x, z=z, y=y), x * y + z)  # kwargs order doesn't matter
    assert body.calls == 1
    np.testing.assert_array_equal(f(x, y, z=z), x * y + z)  # positional: a new signature
    assert body.calls == 2
    info = f.trace(x, y=y, z=z).args_info  # JAX's ArgInfo: an aval and a donation flag
    assert lc.tree_util.tree_map(lambda a: (a.shape, a.dtype, a.donated), info) == (
        (((), F32, False),), {"y": ((), F32, False), "z": ((2,), F32, False)})


def test_donate_argnums_is_accepted_and_ignored_by_the_interpreter():
    f = lc.jit(lambda x, y: P.add(x, y), donate_argnums=0)
    x, y = np.arange(3, dtype=F32), np.ones(3, F32)
    np.testing.assert_array_equal(f(x, y), np.arange(1, 4, dtype=F32))
    np.testing.assert_array_equal(x, np.arange(3, dtype=F32))  # NumPy buffers not reused
    text = str(lc.make_jaxpr(f)(x, y))
    assert "donated_invars=(True, False)" in text
    g = lc.jit(lambda a, b: P.sub(a, b), donate_argnames="b")
    np.testing.assert_array_equal(g(x, b=y), x - 1)
    assert "donated_invars=(False, True)" in str(lc.make_jaxpr(g)(x, b=y))
    assert "donated_invars" not in str(lc.make_jaxpr(lc.jit(P.sin))(x))


def test_disable_jit_runs_python_eagerly():
    seen = []

    def absolute(x):
        seen.append(type(x))
        if P.greater(x, 0.0):  # concrete under disable_jit: Python control flow works
            return x
        return P.neg(x)

    f = lc.jit(absolute)
    with lc.disable_jit():
        assert f(np.float32(-2.0)) == 2.0
        assert f(np.float32(3.0)) == 3.0
        assert lc.config.read("disable_jit")
    assert seen == [np.float32, np.float32]  # concrete NumPy values, body ran each call
    assert not lc.config.read("disable_jit")
    with pytest.raises(lc.ConcretizationTypeError):
        f(np.float32(1.0))


# ---------------------------------------------------------------------------
# Ahead-of-time: trace, lower, compile.


def _sin_times(x, y):
    return P.mul(P.sin(x), y)


def test_aot_trace_lower_compile():
    calls_before = dict(P.impl_calls)
    traced = lc.jit(_sin_times).trace(S((3,), F32), S((), F32))
    assert P.impl_calls == calls_before  # tracing runs no impls
    expected = "{ lambda ; a:f32[3] b:f32[]. let c:f32[3] = sin a; d:f32[3] = mul c b in (d,) }"
    assert isinstance(traced.jaxpr, lc.ClosedJaxpr)
    assert str(traced.jaxpr) == expected
    assert traced.out_info == S((3,), F32)
    assert traced.in_avals == ((lc.ShapedArray((3,), F32), lc.ShapedArray((), F32)), {})
    assert traced.fun_name == "_sin_times"
    lowered = traced.lower()
    assert lowered.as_text() == expected
    compiled = lowered.compile()
    x = np.array([0.0, 0.5, 1.0], F32)
    np.testing.assert_allclose(compiled(x, np.float32(2.0)), 2 * np.sin(x), rtol=1e-6)
    assert compiled.out_info == S((3,), F32)
    assert compiled.cost_analysis()["equations"] == 2.0
    assert lowered.cost_analysis()["equations"] == 2.0
    # f32[3] sin -> f32[3]; f32[3] * f32[] -> f32[3]: 12+12+12+4+12 bytes.
    assert compiled.cost_analysis()["bytes accessed"] == 52.0
    assert lc.jit(_sin_times).lower(x, np.float32(1.0)).as_text() == expected


def test_compiled_rejects_other_argument_types_listing_each_mismatch():
    compiled = lc.jit(_sin_times).lower(S((3,), F32), S((), F32)).compile()
    with pytest.raises(TypeError, match=r"(?s)Compiled _sin_times called with arguments that "
                                        r"differ.*argument 0: expected f32\[3\], got f32\[4\]"
                                        r".*argument 1: expected f32\[\], got i32\[\]"):
        compiled(np.ones(4, F32), np.int32(1))
    with pytest.raises(TypeError, match=r"expected 2 array arguments .* got 3"):
        compiled(np.ones(3, F32), np.float32(1.0), np.float32(1.0))


def test_compiled_checks_the_argument_tree_structure():
    fn = lambda d: P.sub(d["a"], d["b"])  # noqa: E731
    compiled = lc.jit(fn).lower({"a": S((2,), F32), "b": S((), F32)}).compile()
    x = np.ones(2, F32)
    np.testing.assert_array_equal(compiled({"a": x, "b": np.float32(3.0)}), x - 3)
    # Same number of leaves, different structure: not silently accepted.
    with pytest.raises(TypeError, match=r"with structure .*'a': \*, 'b': \*.* got 2 with "
                                        r"structure"):
        compiled(x, np.float32(3.0))


def test_aot_with_static_arguments_takes_only_dynamic_ones():
    f = lc.jit(lambda x, n, y: P.mul(x, P.mul(y, float(n))), static_argnums=1)
    x = np.arange(2, dtype=F32)
    compiled = f.lower(x, 3, x).compile()
    np.testing.assert_array_equal(compiled(x, x), 3 * x * x)
    assert "3.0:f32[]" in compiled.as_text()


def test_eval_shape():
    def fn(x, y):
        return {"prod": P.matmul(x, y), "pair": (P.sin(x), P.greater(x, 0.0)), "none": None}
    calls_before = dict(P.impl_calls)
    out = lc.eval_shape(fn, S((2, 3), F32), S((3, 5), F32))
    assert P.impl_calls == calls_before
    assert out == {"prod": S((2, 5), F32), "pair": (S((2, 3), F32), S((2, 3), np.bool_)),
                   "none": None}
    assert lc.eval_shape(lambda x: P.mul(x, 2.0), 1.0) == S((), F32, weak_type=True)
    assert lc.eval_shape(P.sin, np.ones(4)) == S((4,), F32)  # f64 data -> f32 without x64
    assert lc.jit(fn).eval_shape(S((2, 3), F32), S((3, 5), F32))["prod"] == S((2, 5), F32)


def test_make_jaxpr_with_static_argnums_and_return_shape():
    def fn(x, n):
        for _ in range(n):
            x = P.sin(x)
        return x, P.total(x)
    jaxpr, shape = lc.make_jaxpr(fn, static_argnums=1, return_shape=True)(S((3,), F32), 2)
    assert str(jaxpr) == ("{ lambda ; a:f32[3]. let\n"
                          "    b:f32[3] = sin a\n"
                          "    c:f32[3] = sin b\n"
                          "    d:f32[] = reduce_sum[axes=(0,) out_sharding=None] c\n"
                          "  in (c, d) }")
    assert shape == (S((3,), F32), S((), F32))
    jaxpr3 = lc.make_jaxpr(fn, static_argnums=(1,))(np.ones(3, F32), 3)
    assert [e.primitive.name for e in jaxpr3.eqns] == ["sin", "sin", "sin", "reduce_sum"]


def test_closed_over_constants_become_constvars():
    table = np.arange(3, dtype=F32)
    jaxpr = lc.make_jaxpr(lambda x: P.add(x, table))(np.ones(3, F32))
    assert str(jaxpr) == "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = add b a in (c,) }"
    # Scalars are inlined as literals rather than becoming constvars.
    jaxpr2 = lc.make_jaxpr(lambda x: P.mul(x, np.float32(2.5)))(np.ones(3, F32))
    assert str(jaxpr2) == "{ lambda ; a:f32[3]. let b:f32[3] = mul a 2.5:f32[] in (b,) }"
    assert len(jaxpr.consts) == 1 and jaxpr.consts[0] is table
    assert jaxpr.literals is jaxpr.consts
    f = lc.jit(lambda x: P.add(x, table))
    np.testing.assert_array_equal(f(np.ones(3, F32)), table + 1)


def test_jit_closing_over_an_outer_grad_tracer():
    def outer(x):
        inner = lc.jit(lambda y: P.mul(P.sin(x), y))  # closes over grad's tracer x
        return inner(x)

    def expected(x):  # d/dx sin(x) * x
        return np.cos(x) * x + np.sin(x)

    for x in (0.5, 1.3):
        np.testing.assert_allclose(lc.grad(outer)(np.float32(x)), expected(x), rtol=1e-6)
    _, tangent = lc.jvp(outer, (np.float32(0.5),), (np.float32(1.0),))
    np.testing.assert_allclose(tangent, expected(0.5), rtol=1e-6)


def test_jitted_function_closing_over_tracers_is_not_served_stale_from_cache():
    holder = {}
    body = _counting(lambda y: P.mul(P.sin(holder["x"]), y))
    inner = lc.jit(body)

    def outer(x):
        holder["x"] = x
        return inner(x)

    g1 = lc.grad(outer)(np.float32(0.5))
    g2 = lc.grad(outer)(np.float32(1.3))
    np.testing.assert_allclose(g1, np.cos(0.5) * 0.5 + np.sin(0.5), rtol=1e-6)
    np.testing.assert_allclose(g2, np.cos(1.3) * 1.3 + np.sin(1.3), rtol=1e-6)
    assert body.calls == 2  # a closure over a tracer is valid for one call only


# ---------------------------------------------------------------------------
# Executors and devices.


class _RecordingExecutor(Executor):
    name = "recording"

    def __init__(self):
        self.executed = []

    def execute(self, closed, args, *, name, donated_invars, compiler_options=None):
        self.executed.append((name, len(args), donated_invars))
        return lc.eval_jaxpr(closed.jaxpr, closed.consts, *args)

    def lower(self, closed, *, name, donated_invars, compiler_options=None):
        return InterpretedProgram(closed, name)


def test_register_executor_runs_top_level_jit_calls():
    recorder = _RecordingExecutor()
    x = np.arange(2, dtype=F32)
    previous = lc.register_executor(recorder)
    try:
        def my_fun(x, y):
            return P.add(x, y)
        f = lc.jit(my_fun, donate_argnums=1)
        np.testing.assert_array_equal(f(x, x), 2 * x)
        assert recorder.executed == [("my_fun", 2, (False, True))]
        P.sin(x)  # eager primitives do not go through the executor
        assert len(recorder.executed) == 1
        lc.make_jaxpr(f)(x, x)  # tracing executes nothing
        assert len(recorder.executed) == 1
    finally:
        restored = lc.register_executor(previous)
    assert restored is recorder
    np.testing.assert_allclose(lc.jit(P.sin)(x), np.sin(x), rtol=1e-6)
    assert len(recorder.executed) == 1  # the previous executor is back


def test_devices_and_transfers():
    assert [d.platform for d in lc.devices()] == ["cpu"] and isinstance(lc.devices()[0], lc.Device)
    put = lc.device_put(np.arange(3.0))
    assert put.dtype == F32
    np.testing.assert_array_equal(put, [0.0, 1.0, 2.0])
    tree = lc.device_put({"a": np.ones(2), "b": (np.int64(3), 1.5)})
    assert tree["a"].dtype == F32 and tree["b"][0].dtype == np.int32
    assert tree["b"][1].dtype == F32
    with lc.enable_x64():
        assert lc.device_put(np.arange(3.0)).dtype == np.float64
    got = lc.device_get({"x": put, "y": [np.float32(2.0)]})
    assert type(got["x"]) is np.ndarray
    np.testing.assert_array_equal(got["x"], put)
    assert got["y"][0] == 2.0
    value = {"a": put}
    assert lc.block_until_ready(value) is value
