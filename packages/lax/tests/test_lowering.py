"""The lowering API: register_lowering (per platform), lower_fun, constants,
sub-jaxprs as private functions lowered once, and errors for missing rules."""

import ml_dtypes
import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
from lamella.core import ShapedArray
from lamella.lax.lowering import hlo, lower_closed_jaxpr, lower_fun, register_lowering


def _unary_primitive(name):
    prim = lc.Primitive(name)
    prim.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
    return prim


def test_missing_lowering_names_primitive_and_platform():
    prim = _unary_primitive("unlowerable")
    with pytest.raises(NotImplementedError, match="'unlowerable' not found for platform cpu"):
        lc.jit(prim.bind)(np.ones(2, np.float32))


def test_lower_fun_builds_a_rule_from_existing_primitives():
    softplus_p = _unary_primitive("softplus")
    register_lowering(softplus_p, lower_fun(
        lambda x: lax.log1p(lax.exp(x)), multiple_results=False))
    x = np.linspace(-2, 2, 5, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(lc.jit(softplus_p.bind)(x)), np.log1p(np.exp(x)),
                               rtol=1e-6)
    text = lc.jit(softplus_p.bind).lower(x).as_text()
    assert "stablehlo.exponential" in text and "stablehlo.log_plus_one" in text


def test_platform_specific_rules_take_precedence():
    prim = _unary_primitive("platformed")
    register_lowering(prim, lambda ctx, x: [hlo.negate(x)])
    register_lowering(prim, lambda ctx, x: [x], platform="cpu")
    assert float(lc.jit(prim.bind)(np.float32(3.0))) == 3.0


@pytest.mark.parametrize("value", [
    np.float32(1.5), np.arange(4, dtype=np.int32), np.array([True, False, True]),
    np.array([1 + 2j, -3j], np.complex64), np.array([0.5, 1.5], ml_dtypes.bfloat16),
    np.array([np.nan, np.inf, -0.0], np.float32), np.uint8(200), np.zeros((2, 0), np.float32),
])
def test_constants_of_every_dtype_round_trip(value):
    out = lc.jit(lambda: value)()
    np.testing.assert_array_equal(np.asarray(out), value)
    assert np.asarray(out).dtype == value.dtype


def test_unsigned_constants_above_the_signed_range_lower():
    # The integer attribute takes the bits as a signed integer (2**63 + 5 failed).
    with lc.enable_x64():
        for value in (np.uint64(2 ** 63 + 5), np.full(3, 2 ** 64 - 1, np.uint64)):
            out = lc.jit(lambda x, v=value: lax.add(x, v))(np.uint64(1))
            np.testing.assert_array_equal(np.asarray(out), value + np.uint64(1))


def test_optimization_barrier_of_one_array_lowers():
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(lc.jit(lax.optimization_barrier)(x), x)
    out = lc.jit(lambda x: lax.optimization_barrier((x, lax.neg(x))))(x)
    np.testing.assert_array_equal(out[1], -x)


def test_sub_jaxprs_become_functions_lowered_once():
    inner = lc.jit(lambda x: lax.sin(x))
    outer = lc.jit(lambda x: lax.add(inner(x), inner(lax.cos(x))))
    text = outer.lower(np.ones(3, np.float32)).as_text()
    assert text.count("func.func private") == 1
    assert text.count("call @") == 2


def test_lowered_module_has_a_public_main_and_locations():
    closed = lc.make_jaxpr(lax.sin)(np.ones(2, np.float32))
    lowered = lower_closed_jaxpr(closed, name="f")
    assert "func.func public @main" in lowered.as_text()
    assert "test_lowering.py" in lowered.as_text(debug_info=True)
