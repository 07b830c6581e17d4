"""Host callbacks and jax.debug with core alone (the NumPy interpreter): eager calls,
every vmap_method, abstract evaluation, effects, differentiation rules, errors."""

from __future__ import annotations

import io
import sys

import numpy as np
import numpy_prims as P
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella.core import ShapeDtypeStruct, debug, errors
from lamella.core.callbacks import IOEffect, OrderedIOEffect
from lamella.core.effects import ordered_effects
from lamella.core.jaxpr import dce_jaxpr

F32 = np.float32
scalar = ShapeDtypeStruct((), F32)


def _recording(calls):
    def callback(*args):
        calls.append(tuple(np.shape(a) for a in args))
        return sum(np.sum(a, dtype=F32) for a in args) * np.ones(np.shape(args[0]), F32)
    return callback


# --- pure_callback ------------------------------------------------------------


def test_pure_callback_eager_and_jit_call_python():
    x = np.arange(3, dtype=F32)
    out_type = ShapeDtypeStruct((3,), F32)
    np.testing.assert_array_equal(lc.pure_callback(np.exp, out_type, x), np.exp(x))
    np.testing.assert_array_equal(lc.jit(lambda v: lc.pure_callback(np.exp, out_type, v))(x),
                                  np.exp(x))


def test_pure_callback_pytrees_and_keyword_arguments():
    def fn(pair, scale=None):
        return {"sum": pair[0] + pair[1], "scaled": pair[0] * scale}
    out_type = {"sum": scalar, "scaled": scalar}
    out = lc.jit(lambda a, b: lc.pure_callback(fn, out_type, (a, b), scale=F32(3)))(
        F32(1), F32(2))
    assert out == {"sum": 3.0, "scaled": 3.0}


def test_pure_callback_abstract_eval_and_printed_jaxpr():
    x = np.ones(3, F32)
    closed = lc.make_jaxpr(lambda v: lc.pure_callback(
        np.sin, ShapeDtypeStruct((2, 3), np.int32), v, vmap_method="sequential"))(x)
    eqn, = closed.jaxpr.eqns
    assert eqn.primitive.name == "pure_callback"
    assert [v.aval.str_short() for v in eqn.outvars] == ["i32[2,3]"]
    assert eqn.effects == frozenset()
    assert "vmap_method=sequential" in str(closed)


def test_pure_callback_rejects_unknown_vmap_method_and_x64_types():
    with pytest.raises(ValueError, match="vmap_method must be on of the allowed methods"):
        lc.pure_callback(np.sin, scalar, F32(1), vmap_method="loop")
    with pytest.raises(ValueError, match="cannot specify 64-bit types"):
        lc.pure_callback(np.sin, ShapeDtypeStruct((), np.float64), F32(1))


@pytest.mark.parametrize("returned, message", [
    (np.ones(4, F32), r"returned f32\[4\] for result 0, but result_shape_dtypes declares "
                      r"f32\[3\]"),
    (np.ones(3, np.int32), r"returned i32\[3\]"),
    ((np.ones(3, F32), np.ones(3, F32)), "returned 2 values, but result_shape_dtypes "
                                         "declares 1"),
])
def test_results_are_checked_against_the_declared_types(returned, message):
    def wrong(x):
        return returned
    with pytest.raises(RuntimeError, match=message) as info:
        lc.jit(lambda v: lc.pure_callback(wrong, ShapeDtypeStruct((3,), F32), v))(
            np.ones(3, F32))
    assert "wrong" in str(info.value)


def test_results_canonicalize_python_scalars_and_float64():
    assert lc.pure_callback(lambda x: 2.5, scalar, F32(1)) == 2.5
    out = lc.pure_callback(lambda x: np.ones(2), ShapeDtypeStruct((2,), F32), F32(1))
    assert out.dtype == F32


def test_pure_callback_is_not_differentiable():
    f = lambda x: lc.pure_callback(np.sin, scalar, x)  # noqa: E731
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        lc.grad(f)(F32(1))
    # Only the differentiated path matters: a callback on a constant is fine.
    assert lc.grad(lambda x: P.mul(x, lc.pure_callback(np.sin, scalar, F32(0))))(F32(1)) == 0


def test_pure_callback_inside_custom_jvp_is_differentiable():
    @lc.custom_jvp
    def host_sin(x):
        return lc.pure_callback(np.sin, scalar, x)

    @host_sin.defjvp
    def host_sin_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return host_sin(x), P.mul(lc.pure_callback(np.cos, scalar, x), t)

    np.testing.assert_allclose(lc.grad(host_sin)(F32(0.5)), np.cos(F32(0.5)), rtol=1e-6)


# --- vmap methods ---------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3))
def test_sequential_calls_once_per_element(batch, n):
    xs = np.arange(batch * n, dtype=F32).reshape(batch, n)
    y = np.full(n, 10, F32)
    for method in ("sequential", "sequential_unrolled"):
        calls = []

        def f(x, y, method=method, calls=calls):
            return lc.pure_callback(_recording(calls), ShapeDtypeStruct((n,), F32), x, y,
                                    vmap_method=method)
        out = lc.vmap(f, in_axes=(0, None))(xs, y)
        assert calls == [((n,), (n,))] * batch
        np.testing.assert_allclose(out, [_recording([])(x, y) for x in xs])


def test_sequential_over_batch_axis_one_and_nested_vmap():
    xs = np.arange(6, dtype=F32).reshape(2, 3)
    calls = []
    f = lambda x: lc.pure_callback(_recording(calls), scalar, x,  # noqa: E731
                                   vmap_method="sequential")
    out = lc.vmap(lc.vmap(f), in_axes=1)(xs)
    assert out.shape == (3, 2) and len(calls) == 6
    np.testing.assert_array_equal(out, xs.T)


@pytest.mark.parametrize("method, unbatched_shape", [
    ("expand_dims", (1, 2)), ("broadcast_all", (4, 2)), ("legacy_vectorized", (2,))])
def test_vectorized_methods_call_once(method, unbatched_shape):
    calls = []

    def fn(x, y):
        calls.append((x.shape, y.shape))
        return x + y
    xs, y = np.ones((4, 2), F32), np.arange(2, dtype=F32)
    out = lc.vmap(lambda x, y: lc.pure_callback(fn, ShapeDtypeStruct((2,), F32), x, y,
                                                vmap_method=method),
                  in_axes=(0, None))(xs, y)
    assert calls == [((4, 2), unbatched_shape)]
    np.testing.assert_array_equal(out, xs + y)


def test_vmap_without_a_method_is_refused():
    with pytest.raises(NotImplementedError, match="Got vmap_method=None"):
        lc.vmap(lambda x: lc.pure_callback(np.sin, scalar, x))(np.ones(2, F32))


def test_sequential_over_an_empty_batch_calls_nothing():
    out = lc.vmap(lambda x: lc.pure_callback(np.sin, ShapeDtypeStruct((3,), F32), x,
                                             vmap_method="sequential"))(np.ones((0, 3), F32))
    assert out.shape == (0, 3)


# --- io_callback ----------------------------------------------------------------


def test_io_callback_effects_are_staged_and_survive_dce():
    f = lambda x: (lc.io_callback(print, None, x, ordered=True), x)[1]  # noqa: E731
    closed = lc.make_jaxpr(f)(F32(1))
    eqn, = closed.jaxpr.eqns
    assert eqn.effects == {OrderedIOEffect()} and closed.effects == {OrderedIOEffect()}
    assert ordered_effects.contains(OrderedIOEffect()) and not ordered_effects.contains(
        IOEffect())
    assert len(dce_jaxpr(closed.jaxpr).eqns) == 1
    outer = lc.make_jaxpr(lc.jit(f))(F32(1))
    assert outer.jaxpr.eqns[0].effects == {OrderedIOEffect()}


def test_io_callback_runs_in_order_eagerly_and_jitted():
    seen = []
    f = lc.jit(lambda x: lc.io_callback(lambda v: seen.append(float(v)) or np.float32(v), scalar,
                                        x, ordered=True))
    for i in range(3):
        f(F32(i))
    assert seen == [0.0, 1.0, 2.0]


def test_io_callback_vmap_is_sequential_and_ordered_refuses():
    seen = []
    lc.vmap(lambda x: lc.io_callback(seen.append, None, x))(np.arange(3, dtype=F32))
    assert [float(s) for s in seen] == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
        lc.vmap(lambda x: lc.io_callback(seen.append, None, x, ordered=True))(np.ones(2, F32))


def test_io_callback_is_not_differentiable():
    with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
        lc.grad(lambda x: lc.io_callback(np.sin, scalar, x))(F32(1))


def test_exception_in_callback_propagates_with_its_traceback():
    def broken(x):
        raise KeyError("from the callback")
    # As in JAX: the runtime's error, with the callback's traceback in its text.
    with pytest.raises(errors.JaxRuntimeError, match="KeyError: 'from the callback'") as info:
        lc.jit(lambda x: lc.io_callback(broken, scalar, x))(F32(1))
    assert 'in broken' in str(info.value)
    assert type(info.value.__cause__) is KeyError


# --- jax.debug ------------------------------------------------------------------


def test_debug_print_formats_like_str_format(capsys):
    x = np.arange(3, dtype=F32)
    lc.jit(lambda v: debug.print("v={v} first={} n={n:d}", v, v=v, n=7))(x)
    debug.print("no fields", x, skip_format_check=True)
    assert capsys.readouterr().out == "v=[0. 1. 2.] first=[0. 1. 2.] n=7\nno fields [0. 1. 2.]\n"


def test_debug_print_staged_with_its_effect():
    closed = lc.make_jaxpr(lambda x: debug.print("{}", x, ordered=True))(F32(1))
    eqn, = closed.jaxpr.eqns
    assert eqn.primitive.name == "debug_print" and eqn.effects == {debug.ordered_debug_effect}
    assert str(debug.debug_effect) == "Debug"


def test_debug_print_rejects_unused_arguments():
    with pytest.raises(ValueError, match="Unused keyword arguments"):
        debug.print("x", x=F32(1))
    with pytest.raises(ValueError, match="Unused positional arguments"):
        debug.print("{}", F32(1), F32(2))
    with pytest.raises(TypeError, match="unexpected arguments in the two-call form"):
        debug.print(None, F32(1))


def test_debug_print_two_call_form_and_vmap_prints_each_element(capsys):
    lc.vmap(lambda v: debug.print(ordered=True)("e {}", v))(np.arange(3, dtype=np.int32))
    assert capsys.readouterr().out == "e 0\ne 1\ne 2\n"


def test_debug_print_under_grad_prints_primal_values(capsys):
    def f(x):
        debug.print("x={}", x)
        return P.mul(x, x)
    assert lc.grad(f)(F32(3)) == 6
    assert lc.jit(lc.grad(f))(F32(4)) == 8
    assert capsys.readouterr().out == "x=3.0\nx=4.0\n"


def test_debug_callback_static_and_dynamic_arguments():
    seen = []
    lc.jit(lambda x: debug.callback(lambda tag, v, *, k: seen.append((tag, float(v), k)),
                                    "tag", x, k="kw"))(F32(2))
    assert seen == [("tag", 2.0, "kw")]
    with pytest.raises(TypeError, match="must be callable"):
        debug.callback(3, F32(1))


def test_debug_log_goes_to_the_logger(caplog):
    with caplog.at_level("INFO", logger="lamella.core.debug"):
        lc.jit(lambda x: debug.log("logged {}", x))(F32(5))
    record, = caplog.records
    assert record.getMessage() == "logged 5.0"
    assert record.pathname == __file__


def test_breakpoint_reads_commands_from_stdin(monkeypatch, capsys):
    def f(x):
        y = P.mul(x, F32(2))
        debug.breakpoint()
        return y
    monkeypatch.setattr(sys, "stdin", io.StringIO("p y\npp {'y': y}\nw\nbad_name\nc\n"))
    lc.jit(f)(F32(3))
    out = capsys.readouterr().out
    assert out.startswith("Entering jdb:\n(jdb) array(6., dtype=float32)\n")
    assert "{'y': array(6., dtype=float32)}" in out
    assert "Traceback:" in out and "debug.breakpoint()" in out
    assert "*** NameError: name 'bad_name' is not defined" in out


def test_breakpoint_with_token_returns_it(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("c\n"))
    out = lc.jit(lambda x: debug.breakpoint(token=x))(F32(3))
    assert out == 3.0
