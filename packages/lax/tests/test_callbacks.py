"""Host callbacks and jax.debug in compiled programs: the custom call, results
checked before they reach XLA, exceptions, ordering, control flow, threads."""

from __future__ import annotations

import io
import sys
import threading

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as jnp
from lamella.core import ShapeDtypeStruct, debug
from lamella.core.errors import JaxRuntimeError

F32 = np.float32
scalar = ShapeDtypeStruct((), F32)
vector = ShapeDtypeStruct((3,), F32)

host_sin = lc.jit(lambda x: lc.pure_callback(np.sin, vector, x) * 2.0)


def test_pure_callback_lowers_to_the_python_custom_call():
    x = np.linspace(0, 1, 3, dtype=F32)
    np.testing.assert_allclose(host_sin(x), 2 * np.sin(x), rtol=1e-6)
    text = host_sin.lower(x).as_text()
    assert "stablehlo.custom_call @xla_ffi_python_cpu_callback" in text
    assert "backend_config = {index = 0 : ui64}" in text and "has_side_effect" not in text
    printed = lc.jit(lambda v: debug.print("{}", v)).lower(x).as_text()
    assert "has_side_effect = true" in printed


def test_callback_receives_numpy_copies_of_the_operands():
    kept = []

    def keep(x, n):
        kept.append((x, n))
        return x + n
    f = lc.jit(lambda x, n: lc.pure_callback(keep, vector, x, n))
    f(np.ones(3, F32), np.int32(2))
    f(np.zeros(3, F32), np.int32(5))
    (x0, n0), (x1, n1) = kept
    assert type(x0) is np.ndarray and n0.dtype == np.int32 and n0.shape == ()
    np.testing.assert_array_equal(x0, np.ones(3, F32))  # still intact after later calls
    np.testing.assert_array_equal(x1, np.zeros(3, F32))


@pytest.mark.parametrize("returned, message", [
    (np.ones(4, F32), r"returned f32\[4\] for result 0, but result_shape_dtypes declares"),
    (np.ones(3, np.int32), r"returned i32\[3\]"),
    (np.ones(2, F32), r"returned f32\[2\]"),
])
def test_wrong_results_are_a_clear_error_naming_the_callback(returned, message):
    def wrong_shape_callback(x):
        return returned
    f = lc.jit(lambda x: lc.pure_callback(wrong_shape_callback, vector, x))
    with pytest.raises(RuntimeError, match=message) as info:
        f(np.ones(3, F32))
    assert "wrong_shape_callback" in str(info.value)


def test_float64_results_canonicalize_to_the_declared_float32():
    f = lc.jit(lambda x: lc.pure_callback(lambda v: np.asarray(v, np.float64) + 0.5, vector, x))
    out = f(np.ones(3, F32))
    assert out.dtype == F32
    np.testing.assert_array_equal(out, np.full(3, 1.5, F32))


def test_exception_surfaces_with_the_callback_traceback():
    # As in JAX: XLA's runtime error, whose text holds the callback's traceback.
    def explode(x):
        raise ZeroDivisionError("inside the callback")
    f = lc.jit(lambda x: lc.pure_callback(explode, vector, x) + 1.0)
    for _ in range(2):  # the first run of an executable may be asynchronous
        with pytest.raises(JaxRuntimeError, match="ZeroDivisionError: inside the callback") \
                as info:
            f(np.ones(3, F32))
        assert 'in explode' in str(info.value)
    g = lc.jit(lambda x: debug.callback(explode, x))  # a program with no outputs
    with pytest.raises(JaxRuntimeError, match="ZeroDivisionError"):
        g(np.ones(3, F32))


def test_exception_surfaces_from_the_fast_path_after_calls_that_succeeded():
    def sometimes(x):
        if x[0] < 0:
            raise KeyError("negative")
        return x
    f = lc.jit(lambda x: lc.pure_callback(sometimes, vector, x) * 2.0)
    for _ in range(3):  # the later calls run from C++
        np.testing.assert_array_equal(f(np.ones(3, F32)), np.full(3, 2.0, F32))
    for _ in range(2):  # jaxlib's C++ dispatcher reports it as a ValueError (JAX too)
        with pytest.raises(ValueError, match="KeyError: 'negative'") as info:
            lc.block_until_ready(f(np.full(3, -1.0, F32)))
        assert "in sometimes" in str(info.value)
    np.testing.assert_array_equal(f(np.ones(3, F32)), np.full(3, 2.0, F32))
    # Traced through the same dispatchers: inlined in another jit, and under grad.
    np.testing.assert_array_equal(lc.jit(lambda x: f(x) + 1.0)(np.ones(3, F32)),
                                  np.full(3, 3.0, F32))
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        lc.grad(lambda x: f(x).sum())(np.ones(3, F32))


@pytest.mark.parametrize("method", ["sequential", "sequential_unrolled", "expand_dims",
                                    "broadcast_all", "legacy_vectorized"])
def test_vmap_methods_compiled(method):
    def fn(x, y):
        return np.broadcast_to(x * 2 + y, np.broadcast_shapes(x.shape, y.shape)).astype(F32)
    f = lc.jit(lc.vmap(lambda x, y: lc.pure_callback(fn, ShapeDtypeStruct((3,), F32), x, y,
                                                     vmap_method=method),
                       in_axes=(0, None)))
    xs, y = np.arange(6, dtype=F32).reshape(2, 3), np.ones(3, F32)
    np.testing.assert_array_equal(f(xs, y), xs * 2 + y)


def test_io_callback_in_scan_runs_in_order():
    seen = []

    def body(carry, x):
        lc.io_callback(lambda c, v: seen.append((int(c), int(v))), None, carry, x, ordered=True)
        return carry + x, carry
    total, prefix = lc.jit(lambda xs: lax.scan(body, 0, xs))(np.arange(1, 6, dtype=np.int32))
    assert seen == [(0, 1), (1, 2), (3, 3), (6, 4), (10, 5)]
    assert int(total) == 15 and list(map(int, prefix)) == [0, 1, 3, 6, 10]


def test_ordered_effects_within_and_across_programs():
    seen = []
    log = lambda tag: lambda v: seen.append((tag, int(v)))  # noqa: E731

    def body(carry, x):
        lc.io_callback(log("body"), None, x, ordered=True)
        return carry, None

    @lc.jit
    def program(xs):
        debug.callback(log("first"), xs[0], ordered=True)
        lax.scan(body, 0, xs)
        debug.print("{}", xs[-1], ordered=True)
        lc.io_callback(log("last"), None, xs[-1], ordered=True)
        return xs

    second = lc.jit(lambda x: lc.io_callback(log("second"), None, x, ordered=True))
    out = io.StringIO()
    stdout, sys.stdout = sys.stdout, out
    try:
        for i in range(3):
            program(np.arange(2, dtype=np.int32) + i)
            second(np.int32(i))
    finally:
        sys.stdout = stdout
    expected = []
    for i in range(3):
        expected += [("first", i), ("body", i), ("body", i + 1), ("last", i + 1), ("second", i)]
    assert seen == expected
    assert out.getvalue() == "1\n2\n3\n"


def test_callbacks_in_while_and_cond():
    seen = []

    def body(c):
        debug.callback(lambda v: seen.append(int(v)), c)
        return c + 1
    assert int(lc.jit(lambda n: lax.while_loop(lambda c: c < n, body, 0))(np.int32(3))) == 3
    branch = lc.jit(lambda p, x: lax.cond(
        p, lambda x: lc.io_callback(lambda v: (seen.append("io"), v)[1], scalar, x),
        lambda x: x * 2.0, x))
    assert float(branch(True, F32(5))) == 5.0 and float(branch(False, F32(5))) == 10.0
    assert seen == [0, 1, 2, "io"]


def test_debug_print_under_grad_vmap_and_scan(capsys):
    def body(c, x):
        debug.print("c={c}", c=c)
        return c * x, None
    loss = lambda c: lax.scan(body, c, jnp.arange(1.0, 4.0))[0]  # noqa: E731
    assert float(lc.jit(lc.grad(loss))(F32(1.0))) == 6.0
    lc.jit(lc.vmap(lambda v: debug.print("v={}", v)))(np.arange(2, dtype=np.int32))
    assert capsys.readouterr().out == "c=1.0\nc=1.0\nc=2.0\nv=0\nv=1\n"


def test_pure_callback_under_grad_needs_custom_jvp():
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        lc.jit(lc.grad(lambda x: lc.pure_callback(np.sin, scalar, x)))(F32(1))

    @lc.custom_jvp
    def f(x):
        return lc.pure_callback(np.sin, scalar, x)
    f.defjvp(lambda p, t: (f(p[0]), lc.pure_callback(np.cos, scalar, p[0]) * t[0]))
    np.testing.assert_allclose(lc.jit(lc.grad(f))(F32(0.3)), np.cos(F32(0.3)), rtol=1e-6)


def test_callbacks_from_four_threads_at_once():
    f = lc.jit(lambda x: lc.pure_callback(lambda v: v + 1, scalar, x) * 2.0)
    results, errors = {}, []

    def worker(t):
        try:
            results[t] = [float(f(F32(100 * t + i))) for i in range(40)]
        except Exception as e:  # reported below: a failure in a thread must fail the test
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for t in range(4):
        assert results[t] == [2.0 * (100 * t + i + 1) for i in range(40)]


def test_breakpoint_prompt_fed_from_stdin(monkeypatch, capsys):
    def f(x):
        y = jnp.sin(x) + 1.0
        debug.breakpoint()
        return y
    monkeypatch.setattr(sys, "stdin", io.StringIO("p y\nl\nu\nc\n"))
    lc.jit(f)(F32(0.0))
    out = capsys.readouterr().out
    assert out.startswith("Entering jdb:\n(jdb) array(1., dtype=float32)\n")
    assert "->          debug.breakpoint()" in out
