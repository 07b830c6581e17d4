"""lamella.lax.lowering as jax.interpreters.mlir: a custom primitive written as JAX's
"How primitives work" tutorial writes it, and JAX's helpers for writing rules."""

import numpy as np
import pytest
from jaxlib.mlir.dialects import func

import lamella.core as lc
import lamella.lax as lax
from lamella.core import ShapedArray
from lamella.lax import lowering as mlir
from lamella.lax.lowering import hlo, ir
from lamella.lax.mlir_context import make_context

# --- the tutorial's multiply_add primitive ------------------------------------
multiply_add_p = lc.Primitive("multiply_add")


def multiply_add_prim(x, y, z):
    return multiply_add_p.bind(x, y, z)


multiply_add_p.def_impl(lambda x, y, z: np.add(np.multiply(x, y), z))
multiply_add_p.def_abstract_eval(lambda xs, ys, zs: ShapedArray(xs.shape, xs.dtype))


def _multiply_add_lowering(ctx, xc, yc, zc):
    return [hlo.AddOp(hlo.MulOp(xc, yc), zc).result]


mlir.register_lowering(multiply_add_p, _multiply_add_lowering, platform="cpu")


def test_tutorial_primitive_jits():
    f = lc.jit(lambda x, y: multiply_add_prim(x, y, x))
    x, y = np.float32(2.0), np.float32(3.0)
    assert float(f(x, y)) == 8.0
    assert "stablehlo.multiply" in f.lower(x, y).as_text()


# --- a rule built with ir_constant / aval_to_ir_type ---------------------------
scale_p = lc.Primitive("scale_by")
scale_p.def_abstract_eval(lambda x, *, factor: ShapedArray(x.shape, x.dtype))


def _scale_lowering(ctx, x, *, factor):
    aval_out, = ctx.avals_out
    out_type = mlir.aval_to_ir_type(aval_out)
    factor_ = mlir.ir_constant(np.array(factor, aval_out.dtype))
    shape = hlo.broadcast_in_dim(out_type, factor_, mlir.dense_int_array([]))
    return [hlo.multiply(x, shape)]


mlir.register_lowering(scale_p, _scale_lowering)


def test_rule_using_ir_constant_and_aval_to_ir_type():
    out = lc.jit(lambda x: scale_p.bind(x, factor=2.5))(np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(out), [0.0, 2.5, 5.0])


def test_lower_fun_rule_as_the_tutorial_registers_it():
    softplus_p = lc.Primitive("softplus_tutorial")
    softplus_p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(softplus_p, mlir.lower_fun(
        lambda x: lax.log1p(lax.exp(x)), multiple_results=False))
    x = np.linspace(-1, 1, 3, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(lc.jit(softplus_p.bind)(x)), np.log1p(np.exp(x)),
                               rtol=1e-6)


def test_override_lowering_rules_take_precedence():
    params = mlir.LoweringParameters(
        override_lowering_rules=((scale_p, lambda ctx, x, *, factor: [x]),))
    closed = lc.make_jaxpr(lambda x: scale_p.bind(x, factor=3.0))(np.float32(1.0))
    text = str(mlir.lower_closed_jaxpr(closed, name="f", lowering_parameters=params).module)
    assert "stablehlo.multiply" not in text


@pytest.mark.parametrize("value, text", [
    (2.0, "tensor<f32>"), (3, "tensor<i32>"), (True, "tensor<i1>"),
    (np.arange(4, dtype=np.int16), "tensor<4xi16>"),
])
def test_ir_constant_types(value, text):
    with make_context(), ir.Location.unknown():
        assert str(mlir.ir_constant(value).type) == text


def test_type_and_attribute_helpers():
    with make_context(), ir.Location.unknown():
        assert str(mlir.dtype_to_ir_type(np.float16)) == "f16"
        assert str(mlir.aval_to_ir_type(ShapedArray((2, 3), np.dtype(np.float32)))) \
            == "tensor<2x3xf32>"
        assert [str(t) for t in mlir.aval_to_ir_types(ShapedArray((), np.dtype(np.int8)))] \
            == ["tensor<i8>"]
        assert str(mlir.i32_attr(5)) == "5 : i32"
        assert str(mlir.i64_attr(5)) == "5 : i64"
        assert str(mlir.dense_int_array([1, 2])) == "array<i64: 1, 2>"
        assert str(mlir.dense_int_elements([1, 2])) == "dense<[1, 2]> : tensor<2xi64>"
        assert str(mlir.ir_attribute([1, "a", True])) == '[1, "a", true]'
        assert str(mlir.token_type()) == "!stablehlo.token"
        with pytest.raises(TypeError, match="No attribute handler"):
            mlir.ir_attribute(object())


def test_flatten_and_unflatten_ir_values():
    with make_context(), ir.Location.unknown():
        a, b, c = (mlir.ir_constant(np.float32(i)) for i in range(3))
        assert mlir.flatten_ir_values([a, (b, c)]) == [a, b, c]
        t = a.type
        grouped = mlir.unflatten_ir_values_like_types([a, b, c], [t, (t, t)])
        assert grouped[0] == a and grouped[1] == (b, c)
        assert mlir.flatten_ir_types([t, (t,)]) == [t, t]


def test_register_constant_handler_is_used_by_ir_constants():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b
    mlir.register_constant_handler(
        Pair, lambda p: [mlir.ir_constant(np.float32(p.a)), mlir.ir_constant(np.float32(p.b))])
    with make_context(), ir.Location.unknown():
        assert len(mlir.ir_constants(Pair(1, 2))) == 2
        with pytest.raises(TypeError, match="lowers to 2 values"):
            mlir.ir_constant(Pair(1, 2))


def test_module_to_bytecode_and_merge_modules():
    closed = lc.make_jaxpr(lambda x: lax.sin(x))(np.float32(1.0))
    lowered = mlir.lower_closed_jaxpr(closed, name="a")
    with lowered.module.context:
        assert mlir.module_to_bytecode(lowered.module)[:4] == b"ML\xefR"
        cosine = lc.make_jaxpr(lambda x: lax.cos(x))(np.float32(1.0))
        other = mlir.lower_jaxpr_to_module(
            "b", cosine, num_const_args=0, in_avals=cosine.in_avals, ordered_effects=[],
            platforms=["cpu"], backend=None, axis_context=None, donated_args=[False],
            lowering_parameters=mlir.LoweringParameters())
    with lowered.module.context:
        name = mlir.merge_mlir_modules(lowered.module, "cosine", other.module)
    assert name == "cosine"
    text = str(lowered.module)
    assert "func.func private @cosine" in text and "func.func public @main" in text


def test_jaxpr_subcomp_and_core_call_lowering_in_a_rule():
    inner = lc.make_jaxpr(lambda x: lax.mul(x, x))(np.float32(1.0))
    square_call_p = lc.Primitive("square_call")
    square_call_p.def_abstract_eval(lambda x: x)

    def rule(ctx, x):
        outs, tokens = mlir.jaxpr_subcomp(ctx.module_context, inner.jaxpr, None,
                                          mlir.TokenSet(), [], x, dim_var_values=[],
                                          const_lowering=None, outer_traceback=None)
        assert len(tokens) == 0
        return mlir.core_call_lowering(ctx, *outs, name="sq", call_jaxpr=inner)

    mlir.register_lowering(square_call_p, rule)
    f = lc.jit(square_call_p.bind)
    assert float(f(np.float32(3.0))) == 81.0
    assert "func.func private @sq" in f.lower(np.float32(3.0)).as_text()


def test_lower_jaxpr_to_fun_defines_a_callable_function():
    inner = lc.make_jaxpr(lambda x: lax.neg(x))(np.float32(1.0))
    neg_call_p = lc.Primitive("neg_call")
    neg_call_p.def_abstract_eval(lambda x: x)

    def rule(ctx, x):
        fn = mlir.lower_jaxpr_to_fun(ctx.module_context, "negate", inner, [],
                                     num_const_args=0, in_avals=inner.in_avals)
        return func.CallOp([x.type], mlir.ir.FlatSymbolRefAttr.get(fn.name.value),
                                [x]).results

    mlir.register_lowering(neg_call_p, rule)
    assert float(lc.jit(neg_call_p.bind)(np.float32(3.0))) == -3.0
    with pytest.raises(ValueError, match="effects"):
        mlir.lower_jaxpr_to_fun(None, "f", inner, ["io"], num_const_args=0,
                                in_avals=inner.in_avals)


def test_ir_tree_registry_flattens_rule_outputs():
    with make_context(), ir.Location.unknown():
        a, b = mlir.ir_constant(np.float32(1)), mlir.ir_constant(np.float32(2))
        leaves, tree = mlir.ir_tree_registry.flatten([a, (b,)])
        assert leaves == [a, b]
        assert mlir.ir_tree_registry.unflatten(tree, [b, a]) == [b, (a,)]


def test_module_to_string_and_token_set():
    closed = lc.make_jaxpr(lambda x: lax.sin(x))(np.float32(1.0))
    module = mlir.lower_closed_jaxpr(closed, name="s").module
    assert "stablehlo.sine" in mlir.module_to_string(module)
    assert "loc(" in mlir.module_to_string(module, enable_debug_info=True)
    with make_context(), ir.Location.unknown():
        t = mlir.TokenSet.create(["io", "log"])
        assert len(t) == 2 and t.effects() == {"io", "log"}
        assert len(t.subset(["io"])) == 1
        assert str(t.get("io").type) == "!stablehlo.token"
