"""The Triton lowering, without a GPU: every example kernel of test_examples.py
becomes a Triton module the MLIR verifier (Triton's op verifiers included)
accepts, with the op structure the Pallas/Triton docs describe; golden checks of
the ops each rule emits; the custom call in the StableHLO of a program lowered
for CUDA; errors naming what has no lowering. Shapes are powers of two, as
Triton requires."""

import functools
import re

import numpy as np
import pytest
import test_examples as ex

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as jnp
import lamella.pallas as pl
from lamella.lax.lowering import lower_closed_jaxpr
from lamella.pallas.triton import TritonLoweringError, gpu_stablehlo, kernels_of

S = lc.ShapeDtypeStruct
F32 = np.float32


def f32(*shape):
    return np.ones(shape, F32)


def asm_of(fun, *args):
    """The one kernel of fun(*args): verified, as MLIR text."""
    [kernel] = kernels_of(fun, *args)
    assert kernel.verify()
    return kernel.asm()


def count(text, op):
    return len(re.findall(rf"\b{re.escape(op)}\b", text))


# --- every example kernel ------------------------------------------------------------

EXAMPLES = {
    "add_vectors": (ex.add_vectors, (f32(16), f32(16)), (1, 1, 1)),
    "add_blocked": (ex.add_blocked, (f32(8, 16), f32(8, 16)), (2, 2, 1)),
    "blocked_matmul": (functools.partial(ex.matmul, bm=16, bk=16, bn=16),
                       (f32(32, 64), f32(64, 32)), (2, 2, 4)),
    "fused_activation": (functools.partial(ex.matmul, activation=jnp.tanh, bm=16, bk=16,
                                           bn=16), (f32(32, 32), f32(32, 16)), (2, 1, 2)),
    "row_softmax": (ex.softmax, (f32(8, 16),), (4, 1, 1)),
    "layer_norm": (ex.layer_norm, (f32(4, 16), f32(16), f32(16)), (4, 1, 1)),
    "flash_attention": (functools.partial(ex.flash_attention, block_q=16, block_k=16),
                        (f32(2, 32, 16),) * 3, (2, 2, 1)),
    "flash_attention_noncausal": (functools.partial(ex.flash_attention, causal=False,
                                                    block_q=16, block_k=16),
                                  (f32(2, 32, 16),) * 3, (2, 2, 1)),
    "atomic_reduction": (ex.column_sums, (f32(8, 8),), (4, 1, 1)),
    "masked_loads": (ex.ragged, (f32(10),), (3, 1, 1)),
}

# Ops each example must contain (at least once), per the Pallas/Triton docs.
STRUCTURE = {
    "add_vectors": ["tt.load", "arith.addf", "tt.store"],
    "add_blocked": ["tt.get_program_id", "tt.make_range", "tt.expand_dims", "tt.broadcast",
                    "tt.addptr", "tt.load", "tt.store"],
    "blocked_matmul": ["tt.get_program_id", "scf.if", "tt.dot", "arith.addf", "tt.store"],
    "fused_activation": ["tt.dot", "scf.if", "__nv_tanhf"],
    "row_softmax": ["tt.reduce", "arith.maximumf", "__nv_expf", "arith.divf"],
    "layer_norm": ["tt.reduce", "__nv_rsqrtf", "arith.mulf"],
    "flash_attention": ["scf.for", "tt.dot", "tt.trans", "tt.reduce", "__nv_expf",
                        "arith.select", "arith.cmpi"],
    "flash_attention_noncausal": ["scf.for", "tt.dot", "tt.trans"],
    "atomic_reduction": ["tt.atomic_rmw", "tt.reduce", "scf.if"],
    "masked_loads": ["tt.load", "tt.store", "arith.cmpi", "__nv_sinf"],
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_kernel_verifies(name):
    fun, args, grid = EXAMPLES[name]
    [kernel] = kernels_of(fun, *args)
    assert kernel.verify()
    assert kernel.grid == grid
    text = kernel.asm()
    assert count(text, "tt.func") == 1 and count(text, "tt.return") == 1
    for op in STRUCTURE[name]:
        assert op in text, f"{name}: no {op} in\n{text}"
    # Every operand is a pointer argument, 16-byte aligned.
    n_operands = len(args) + 1
    assert text.count("!tt.ptr<f32> {tt.divisibility = 16 : i32}") == n_operands


def test_example_kernels_under_vmap_get_a_grid_axis():
    [kernel] = kernels_of(lc.vmap(ex.add_blocked), f32(3, 8, 16), f32(3, 8, 16))
    assert kernel.verify() and kernel.grid == (3, 2, 2)


def test_matmul_structure():
    [kernel] = kernels_of(EXAMPLES["blocked_matmul"][0], f32(32, 64), f32(64, 32))
    text = kernel.asm()
    # The K-axis accumulation: read o, dot of the two blocks into zeros, add, store.
    assert count(text, "tt.dot") == 1
    with kernel.module.context:
        generic = kernel.module.operation.get_asm(print_generic_op_form=True)
    assert "inputPrecision = 2 : i32" in generic  # IEEE float32, as JAX's default
    assert count(text, "scf.if") == 1  # pl.when(k == 0): zero the accumulator
    assert count(text, "tt.store") == 2


def test_masked_loads_use_mask_and_other():
    text = asm_of(ex.ragged, f32(10))
    load = next(line for line in text.splitlines() if "tt.load" in line)
    store = next(line for line in text.splitlines() if "tt.store" in line)
    assert re.search(r"tt\.load %\w+, %\w+, %\w+ :", load)  # pointers, mask, other
    assert re.search(r"tt\.store %\w+, %\w+, %\w+ :", store)  # pointers, value, mask
    assert "arith.cmpi slt" in text


def test_flash_attention_loop_is_a_for_with_carries():
    text = asm_of(EXAMPLES["flash_attention"][0], *EXAMPLES["flash_attention"][1])
    loop = next(line for line in text.splitlines() if "scf.for" in line)
    assert "-> (tensor<16x16xf32>, tensor<16xf32>, tensor<16xf32>)" in loop
    assert count(text, "scf.while") == 0


# --- golden checks per rule ------------------------------------------------------------


def whole(kernel, out, *args, **kw):
    return lambda *a: pl.pallas_call(kernel, out_shape=out, **kw)(*a)


def test_plain_store_does_not_read_the_output():
    def k(x_ref, o_ref):
        o_ref[...] = x_ref[...]
    text = asm_of(whole(k, S((8,), F32)), f32(8))
    assert count(text, "tt.load") == 1 and count(text, "tt.store") == 1


def test_addupdate_reads_adds_and_writes():
    def k(x_ref, o_ref):
        o_ref[...] = x_ref[...]
        o_ref[...] += x_ref[...]
    text = asm_of(whole(k, S((8,), F32)), f32(8))
    assert count(text, "tt.load") == 3 and count(text, "arith.addf") == 1


@pytest.mark.parametrize("dtype, ops", [
    (np.float32, ["arith.cmpf olt", "arith.cmpf une", "arith.maximumf", "arith.divf",
                  "arith.negf"]),
    (np.int32, ["arith.cmpi slt", "arith.cmpi ne", "arith.maxsi", "arith.divsi",
                "arith.subi"]),
    (np.uint32, ["arith.cmpi ult", "arith.cmpi ne", "arith.maxui", "arith.divui"]),
])
def test_arith_rules_follow_the_dtype(dtype, ops):
    def k(x_ref, y_ref, o_ref):
        x, y = x_ref[...], y_ref[...]
        big = jnp.maximum(x, y) // y if dtype != np.float32 else jnp.maximum(x, y) / y
        if dtype != np.uint32:
            big = -big
        o_ref[...] = jnp.where((x < y) | (x != y), big, x)
    x = np.ones(8, dtype)
    text = asm_of(whole(k, S((8,), dtype)), x, x)
    for op in ops:
        assert op in text, op


def test_transcendentals_call_libdevice():
    def k(x_ref, o_ref):
        x = x_ref[...]
        o_ref[...] = jnp.log1p(x) + jnp.tanh(x) + lax.erf(x) + jnp.sqrt(x)
    text = asm_of(whole(k, S((8,), F32)), f32(8))
    for fn in ("__nv_log1pf", "__nv_tanhf", "__nv_erff", "__nv_sqrtf"):
        assert f'symbol = "{fn}"' in text


def test_half_precision_math_goes_through_float32():
    def k(x_ref, o_ref):
        o_ref[...] = jnp.exp(x_ref[...])
    x = np.ones(8, np.float16)
    text = asm_of(whole(k, S((8,), np.float16)), x)
    assert "arith.extf" in text and "__nv_expf" in text and "arith.truncf" in text


def test_casts_iota_select_and_integer_pow():
    def k(x_ref, o_ref):
        i = lax.broadcasted_iota(jnp.int32, (4, 8), 1)
        x = x_ref[...]
        o_ref[...] = jnp.where(i > 2, x ** 3, i.astype(jnp.float32))
    text = asm_of(whole(k, S((4, 8), F32)), f32(4, 8))
    assert "tt.make_range {end = 8 : i32, start = 0 : i32}" in text
    assert "arith.sitofp" in text and "arith.select" in text
    assert count(text, "arith.mulf") == 2  # x**3 = x * x**2


def test_bool_operands_are_bytes_in_memory():
    def k(m_ref, o_ref):
        o_ref[...] = jnp.logical_not(m_ref[...])
    m = np.zeros(8, bool)
    text = asm_of(whole(k, S((8,), np.bool_)), m)
    assert text.count("!tt.ptr<i8>") >= 2
    assert "arith.cmpi ne" in text and "arith.extui" in text


def test_integer_reductions_and_multi_axis_reduce():
    def k(x_ref, o_ref):
        o_ref[...] = jnp.max(x_ref[...], axis=(0, 1)) + jnp.sum(x_ref[...])
    x = np.ones((4, 8), np.int32)
    text = asm_of(whole(k, S((), np.int32)), x)
    assert text.count('"tt.reduce"(') == 4 and "arith.maxsi" in text and "arith.addi" in text


def test_atomics():
    def k(x_ref, o_ref, i_ref, c_ref):
        pl.atomic_max(o_ref, pl.ds(0, 8), x_ref[...])
        pl.atomic_xor(i_ref, pl.ds(0, 8), jnp.ones(8, jnp.int32))
        pl.atomic_min(i_ref, pl.ds(0, 8), jnp.ones(8, jnp.int32))
        pl.atomic_cas(c_ref.at[0], jnp.int32(0), jnp.int32(1))
    out = [S((8,), F32), S((8,), np.int32), S((1,), np.int32)]
    text = asm_of(whole(k, out), f32(8))
    # Float max: signed max on the bits of non-negative values, unsigned min on negative.
    assert "tt.atomic_rmw max" in text and "tt.atomic_rmw umin" in text
    assert "tt.atomic_rmw xor" in text and "tt.atomic_rmw min" in text
    assert count(text, "tt.atomic_cas") == 1 and "tt.bitcast" in text


def test_general_while_is_scf_while():
    def k(x_ref, o_ref):
        def cond(c):
            return c[1] < 100.0
        def body(c):
            return c[0] + 1, c[1] * 2.0
        n, v = lax.while_loop(cond, body, (jnp.int32(0), x_ref[0]))
        o_ref[0] = v + n.astype(jnp.float32)
    text = asm_of(whole(k, S((1,), F32)), f32(1))
    assert count(text, "scf.while") == 1 and "scf.condition" in text


def test_static_fori_loop_and_pl_loop_are_scf_for():
    def k(x_ref, o_ref):
        acc = lax.fori_loop(0, 4, lambda i, c: c + x_ref[pl.ds(i * 8, 8)], jnp.zeros(8))

        @pl.loop(0, 2)
        def _(i):
            o_ref[pl.ds(i * 8, 8)] = acc
    text = asm_of(whole(k, S((16,), F32)), f32(32))
    assert count(text, "scf.for") == 2


def test_cond_with_results_and_switch():
    def k(x_ref, o_ref):
        i = pl.program_id(0)
        o_ref[...] = lax.switch(i, [lambda: x_ref[...], lambda: -x_ref[...],
                                    lambda: 2 * x_ref[...]])
    f = lambda x: pl.pallas_call(k, out_shape=S((24,), F32), grid=(3,),  # noqa: E731
                                 in_specs=[pl.BlockSpec((8,), lambda i: (i,))],
                                 out_specs=pl.BlockSpec((8,), lambda i: (i,)))(x)
    text = asm_of(f, f32(24))
    assert count(text, "scf.if") == 2 and "-> (tensor<8xf32>)" in text


def test_ragged_blocks_get_bounds_masks():
    def k(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2
    spec = pl.BlockSpec((8,), lambda i: (i,))
    f = lambda x: pl.pallas_call(k, out_shape=S((20,), F32), grid=(3,),  # noqa: E731
                                 in_specs=[spec], out_specs=spec)(x)
    text = asm_of(f, f32(20))
    assert text.count("arith.cmpi sge") == 2 and text.count("arith.cmpi slt") == 2
    assert re.search(r"tt\.store %\w+, %\w+, %\w+ :", text)


def test_squeezed_dims_and_element_offsets():
    def k(x_ref, o_ref):
        o_ref[...] = x_ref[...]
    f = lambda x: pl.pallas_call(  # noqa: E731
        k, out_shape=S((4, 8), F32), grid=(4,),
        in_specs=[pl.BlockSpec((None, pl.Element(8, (2, 2))), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((None, 8), lambda i: (i, 0)))(x)
    text = asm_of(f, f32(4, 8))
    # Element padding: the start is 2 elements back, masked on both sides.
    assert "arith.cmpi sge" in text and "arith.constant -2" in text


def test_index_maps_that_are_not_affine_are_lowered():
    def k(x_ref, o_ref):
        o_ref[...] = x_ref[...]
    f = lambda x: pl.pallas_call(  # noqa: E731
        k, out_shape=S((32,), F32), grid=(4,),
        in_specs=[pl.BlockSpec((8,), lambda i: (jnp.minimum(i, 2),))],
        out_specs=pl.BlockSpec((8,), lambda i: (i,)))(x)
    text = asm_of(f, f32(32))
    assert "arith.minsi" in text


def test_grids_with_more_than_three_axes_fold_into_x():
    def k(x_ref, o_ref):
        o_ref[...] = x_ref[...] + pl.program_id(0) + pl.program_id(1)
    spec = pl.BlockSpec((None, None, None, 8), lambda a, b, c, d: (a, b, c, d))
    f = lambda x: pl.pallas_call(k, out_shape=S((2, 3, 4, 16), F32),  # noqa: E731
                                 grid=(2, 3, 4, 2), in_specs=[spec], out_specs=spec)(x)
    [kernel] = kernels_of(f, f32(2, 3, 4, 16))
    assert kernel.verify() and kernel.grid == (6, 4, 2)
    text = kernel.asm()
    assert "arith.remsi" in text and "arith.divsi" in text
    assert "tt.get_program_id z" in text


# --- errors ---------------------------------------------------------------------------


def test_a_primitive_without_a_rule_is_named():
    def k(x_ref, o_ref):
        o_ref[...] = jnp.sort(x_ref[...])
    with pytest.raises(TritonLoweringError, match="no rule for the primitive 'sort'"):
        kernels_of(whole(k, S((8,), F32)), f32(8))


def test_shapes_must_be_powers_of_two():
    with pytest.raises(ValueError, match=r"power of 2.*window of shape \(2, 10\)"):
        kernels_of(ex.softmax, f32(6, 10))


def test_scratch_buffers_have_no_triton_lowering():
    def k(x_ref, o_ref, s_ref):
        s_ref[...] = x_ref[...]
        o_ref[...] = s_ref[...]
    f = lambda x: pl.pallas_call(k, out_shape=S((8,), F32),  # noqa: E731
                                 scratch_shapes=[pl.ANY((8,), F32)])(x)
    with pytest.raises(TritonLoweringError, match="scratch buffers"):
        kernels_of(f, f32(8))


def test_batched_dot_is_rejected():
    def k(x_ref, o_ref):
        o_ref[...] = jnp.einsum("bij,bjk->bik", x_ref[...], x_ref[...])
    with pytest.raises(TypeError, match="2-D matrix product"):
        kernels_of(whole(k, S((2, 16, 16), F32)), f32(2, 16, 16))


# --- the custom call --------------------------------------------------------------------


def test_custom_call_for_cuda():
    f = functools.partial(ex.matmul, bm=16, bk=16, bn=16)
    x = f32(32, 32)
    text = gpu_stablehlo(f, x, x)
    call = next(line for line in text.splitlines() if "stablehlo.custom_call" in line)
    assert "@__gpu$xla.gpu.triton(" in call and "api_version = 4" in call
    for field in ("grid_x = 2 : i32", "grid_y = 2 : i32", "grid_z = 2 : i32",
                  "num_warps = 4 : i32", "num_stages = 3 : i32", 'name = "kernel"',
                  "debug = false", 'ir = "ML\\EFR'):
        assert field in call, field
    assert "-> tensor<32x32xf32>" in call


def test_custom_call_takes_compiler_params_and_aliases():
    def k(x_ref, o_ref):
        o_ref[...] += x_ref[...]
    f = lambda x: pl.pallas_call(  # noqa: E731
        k, out_shape=S((16,), F32), input_output_aliases={0: 0},
        compiler_params=pl.triton.CompilerParams(num_warps=8, num_stages=2))(x)
    text = gpu_stablehlo(f, f32(16))
    assert "num_warps = 8 : i32" in text and "num_stages = 2 : i32" in text
    assert "output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = " \
           "[], operand_index = 0" in text


def test_cpu_lowering_and_interpret_mode_have_no_custom_call():
    x = f32(16)
    cpu = lower_closed_jaxpr(lc.make_jaxpr(ex.add_vectors)(x, x), name="f").as_text()
    assert "custom_call" not in cpu and "stablehlo.add" in cpu
    interpreted = lambda x: pl.pallas_call(ex.add_vectors_kernel, out_shape=S((16,), F32),  # noqa
                                           interpret=True)(x, x)
    assert "triton" not in gpu_stablehlo(interpreted, x)


def test_calls_inline_and_debug_print_is_tt_print():
    inner = lc.jit(lambda v: jnp.logaddexp(v, 0.0))  # a jit with a custom_jvp inside

    def k(x_ref, o_ref):
        pl.debug_print("x0 {}", x_ref[0])
        o_ref[...] = inner(x_ref[...])
    text = asm_of(whole(k, S((8,), F32)), f32(8))
    assert 'tt.print "x0 "' in text and "__nv_log1pf" in text and "func.call" not in text
