"""Exporting functions that call back into Python (host callbacks, with their effects).

JAX 0.10.2 refuses to export them at all ("serialization of host_callbacks is not yet
implemented"), whatever `disabled_checks` says. lamella refuses the same way unless
the check of the callback's custom call target is disabled; then the Exported has the
function's effects, is callable in this process (eagerly and inside another jit), an
ordered one takes and returns a token in @main (JAX's calling convention from version
9) so its callbacks keep their place among the caller's, and serializing it is
refused (the callables cannot travel).
"""

from __future__ import annotations

import numpy as np
import pytest

import lamella.core as lc
import lamella.numpy as jnp
from lamella.core import export, io_callback

ALLOW = [export.DisabledSafetyCheck.custom_call("xla_ffi_python_cpu_callback")]
SEEN: list = []
F32 = lc.ShapeDtypeStruct((), np.float32)


def _logged(tag):
    return lambda v: SEEN.append((tag, float(v)))


def _ordered(x):
    io_callback(_logged("inside"), None, x, ordered=True)
    return x * 2


ORDERED = export.export(lc.jit(_ordered), disabled_checks=ALLOW)(np.float32(1))


@pytest.fixture(autouse=True)
def _clear():
    SEEN.clear()


def test_without_the_check_disabled_it_is_jaxs_refusal():
    for f in (_ordered, lambda x: lc.pure_callback(np.cos, F32, x),
              lambda x: (lc.debug.print("{}", x), x)[1]):
        with pytest.raises(NotImplementedError, match="serialization of host_callbacks is "
                                                      "not yet implemented"):
            export.export(lc.jit(f))(np.float32(1))


def test_an_ordered_export_threads_a_token_through_main():
    assert [str(e) for e in ORDERED.ordered_effects] == ["OrderedIO"]
    assert ORDERED.unordered_effects == ()
    main = [line for line in ORDERED.mlir_module().splitlines() if "func public @main" in line]
    assert len(main) == 1
    assert "@main(%arg0: !stablehlo.token, %arg1: tensor<f32>) -> (!stablehlo.token, " in main[0]
    assert float(ORDERED.call(np.float32(3))) == 6.0
    assert SEEN == [("inside", 3.0)]


def test_an_ordered_export_keeps_its_place_inside_another_jit():
    def caller(x):
        io_callback(_logged("before"), None, x, ordered=True)
        y = ORDERED.call(x)
        io_callback(_logged("after"), None, y, ordered=True)
        return y

    jitted = lc.jit(caller)
    for x in (5.0, 6.0):
        assert float(jitted(np.float32(x))) == 2 * x
    assert SEEN == [("before", 5.0), ("inside", 5.0), ("after", 10.0),
                    ("before", 6.0), ("inside", 6.0), ("after", 12.0)]
    # The caller's token goes through the Exported's call.
    text = jitted.lower(np.float32(1)).as_text()
    calls = [line for line in text.splitlines() if "call @call_exported" in line]
    assert calls and all("!stablehlo.token" in line for line in calls)


def test_unordered_effects_and_pure_callbacks(capsys):
    def f(x):
        y = lc.pure_callback(lambda v: (v + 1).astype(np.float32), F32, x)
        io_callback(_logged("io"), None, y)
        lc.debug.print("y={}", y)
        return jnp.sin(y)

    exp = export.export(lc.jit(f), disabled_checks=ALLOW)(np.float32(1))
    assert exp.ordered_effects == ()
    assert sorted(map(str, exp.unordered_effects)) == ["Debug", "IO"]
    np.testing.assert_allclose(float(exp.call(np.float32(2))), np.sin(3.0), rtol=1e-6)
    np.testing.assert_allclose(float(lc.jit(lambda x: exp.call(x) * 2)(np.float32(3))),
                               2 * np.sin(4.0), rtol=1e-6)
    assert SEEN == [("io", 3.0), ("io", 4.0)]
    assert capsys.readouterr().out == "y=3.0\ny=4.0\n"


def test_serializing_an_export_that_calls_back_is_refused():
    with pytest.raises(NotImplementedError, match="calls back into Python"):
        ORDERED.serialize()
