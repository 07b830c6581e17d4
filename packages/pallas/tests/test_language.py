"""The kernel language on CPU: every feature through the compiled executor (under jit)
and the step interpreter (`interpret=True`), against NumPy."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.numpy as jnp
import lamella.pallas as pl
from lamella.pallas import triton as plgpu

S = lc.ShapeDtypeStruct
F32 = np.float32


def both(f, *args):
    """f compiled (jit) and step-interpreted must agree; returns the compiled result."""
    compiled = lc.jit(f(False))(*args)
    stepped = f(True)(*args)
    np.testing.assert_allclose(compiled, stepped, rtol=1e-6, atol=1e-6)
    return np.asarray(compiled)


def test_program_id_and_num_programs():
    def kernel(o_ref):
        o_ref[...] = jnp.full(o_ref.shape, pl.program_id(0) * 10 + pl.program_id(1)
                              + 100 * pl.num_programs(1), jnp.int32)
    call = lambda interpret: pl.pallas_call(  # noqa: E731
        kernel, out_shape=S((4, 6), jnp.int32), grid=(2, 3),
        out_specs=pl.BlockSpec((2, 2), lambda i, j: (i, j)), interpret=interpret)
    got = both(call)
    want = np.repeat(np.repeat(np.add.outer(np.arange(2) * 10, np.arange(3)), 2, 0), 2, 1)
    np.testing.assert_array_equal(got, want + 300)
    with pytest.raises(RuntimeError, match="inside a kernel"):
        pl.program_id(0)


def test_ds_indexing_and_views():
    def kernel(x_ref, o_ref):
        i = pl.program_id(0)
        o_ref[pl.ds(0, 2)] = x_ref[pl.ds(i * 2, 2), 0]
        o_ref.at[pl.ds(2, 2)][...] = x_ref.at[1][pl.ds(0, 2, stride=2)]
    x = np.arange(12, dtype=F32).reshape(4, 3)
    call = lambda interpret: pl.pallas_call(  # noqa: E731
        kernel, out_shape=S((2, 4), F32), grid=(2,),
        in_specs=[pl.BlockSpec((4, 3), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((None, 4), lambda i: (i, 0)), interpret=interpret)
    got = both(call, x)
    np.testing.assert_array_equal(got, [[0, 3, 3, 5], [6, 9, 3, 5]])


def test_masked_load_store_at_ragged_edges():
    def kernel(x_ref, o_ref):
        i = pl.program_id(0)
        idx = i * 4 + jnp.arange(4)
        mask = idx < 10
        v = pl.load(x_ref, pl.ds(i * 4, 4), mask=mask, other=-1.0)
        plgpu.store(o_ref.at[pl.ds(i * 4, 4)], v * 2, mask=mask)
    x = np.arange(10, dtype=F32)
    call = lambda interpret: pl.pallas_call(  # noqa: E731
        kernel, out_shape=S((10,), F32), grid=(3,), interpret=interpret)
    np.testing.assert_array_equal(both(call, x), 2 * x)

    def other_kernel(x_ref, o_ref):
        o_ref[...] = plgpu.load(x_ref.at[pl.ds(6, 8)], mask=jnp.arange(8) < 4, other=-1.0)
    got = pl.pallas_call(other_kernel, out_shape=S((8,), F32))(x)
    np.testing.assert_array_equal(got, [6, 7, 8, 9, -1, -1, -1, -1])


@pytest.mark.parametrize("op, ref", [
    ("add", lambda a, b: a + b), ("max", np.maximum), ("min", np.minimum),
    ("xchg", lambda a, b: b), ("and", np.bitwise_and), ("or", np.bitwise_or),
    ("xor", np.bitwise_xor)])
def test_atomics(op, ref):
    atomic = getattr(plgpu, f"atomic_{op}")
    start = np.array([5, 9, 12, 3], np.int32)
    vals = np.array([6, 1, 12, 7], np.int32)

    def kernel(x_ref, v_ref, o_ref, old_ref):
        o_ref[...] = x_ref[...]
        old_ref[...] = atomic(o_ref, pl.ds(0, 4), v_ref[...], mask=jnp.arange(4) != 2)
    out, old = pl.pallas_call(kernel, out_shape=(S((4,), jnp.int32), S((4,), jnp.int32)))(
        start, vals)
    want = ref(start, vals)
    want[2] = start[2]
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(old, start)


def test_atomic_cas():
    def kernel(x_ref, o_ref, old_ref):
        o_ref[...] = x_ref[...]
        old_ref[...] = plgpu.atomic_cas(o_ref, jnp.int32(3), jnp.int32(8))
    for start, want in [(3, 8), (4, 4)]:
        out, old = pl.pallas_call(kernel, out_shape=(S((), jnp.int32), S((), jnp.int32)))(
            np.int32(start))
        assert (int(out), int(old)) == (want, start)


def test_atomic_add_reduction_over_grid():
    def kernel(x_ref, o_ref):
        @pl.when(pl.program_id(0) == 0)
        def _():
            o_ref[...] = jnp.zeros_like(o_ref)
        pl.atomic_add(o_ref, (), jnp.sum(x_ref[...]))
    x = np.arange(16, dtype=F32)
    call = lambda interpret: pl.pallas_call(  # noqa: E731
        kernel, out_shape=S((), F32), grid=(4,),
        in_specs=[pl.BlockSpec((4,), lambda i: (i,))], out_specs=pl.BlockSpec((), lambda i: ()),
        interpret=interpret)
    assert both(call, x) == x.sum()


def test_loop_when_and_fori_over_refs():
    def kernel(x_ref, o_ref):
        o_ref[...] = jnp.zeros_like(o_ref)

        @pl.loop(0, 8, step=2)
        def _(i):
            o_ref[pl.ds(i, 2)] = x_ref[pl.ds(i, 2)] * i

        total = pl.loop(0, 4, init_carry=jnp.float32(0))(lambda i, c: c + x_ref[i])

        @pl.when(total > 5)
        def _():
            o_ref[0] = total
    x = np.arange(8, dtype=F32)
    call = lambda interpret: pl.pallas_call(  # noqa: E731
        kernel, out_shape=S((8,), F32), interpret=interpret)
    want = x * (x // 2 * 2)
    want[0] = 6.0
    np.testing.assert_array_equal(both(call, x), want)


def test_scratch_and_run_scoped():
    def kernel(x_ref, o_ref, acc_ref):
        @pl.when(pl.program_id(1) == 0)
        def _():
            acc_ref[...] = jnp.zeros_like(acc_ref)
        acc_ref[...] += x_ref[...]

        @pl.when(pl.program_id(1) == pl.num_programs(1) - 1)
        def _():
            def body(tmp_ref):
                tmp_ref[...] = acc_ref[...] * 2
                o_ref[...] = tmp_ref[...] + 1
            pl.run_scoped(body, pl.ANY((4,), F32))
    x = np.arange(24, dtype=F32).reshape(8, 3)
    call = lambda interpret: pl.pallas_call(  # noqa: E731
        kernel, out_shape=S((8,), F32), grid=(2, 3),
        in_specs=[pl.BlockSpec((4, pl.squeezed), lambda i, k: (i, k))],
        out_specs=pl.BlockSpec((4,), lambda i, k: (i,)),
        scratch_shapes=[pl.ANY((4,), F32)], interpret=interpret)
    np.testing.assert_array_equal(both(call, x), 2 * x.sum(1) + 1)


def test_dot_accumulates_in_float32():
    a = np.arange(6, dtype=np.float16).reshape(2, 3)

    def kernel(a_ref, o_ref, t_ref):
        o_ref[...] = pl.dot(a_ref[...], a_ref[...], trans_b=True)
        t_ref[...] = plgpu.dot(a_ref[...], a_ref[...], trans_a=True)
    o, t = pl.pallas_call(kernel, out_shape=(S((2, 2), F32), S((3, 3), F32)))(a)
    a32 = a.astype(F32)
    np.testing.assert_array_equal(o, a32 @ a32.T)
    np.testing.assert_array_equal(t, a32.T @ a32)


def test_hints_and_helpers():
    assert pl.cdiv(7, 2) == 4 and int(pl.cdiv(jnp.int32(7), 2)) == 4
    assert pl.next_power_of_2(5) == 8 and pl.next_power_of_2(8) == 8
    x = jnp.arange(4)
    assert pl.multiple_of(x, 4) is x and plgpu.max_contiguous(x, 4) is x


def test_uninitialized_outputs_are_poisoned_and_aliases_keep_inputs():
    f = pl.pallas_call(lambda x_ref, o_ref, p_ref: None,
                       out_shape=(S((3,), F32), S((3,), jnp.int32)),
                       input_output_aliases={0: 0})
    kept, poisoned = f(np.arange(3, dtype=F32))
    np.testing.assert_array_equal(kept, [0, 1, 2])
    np.testing.assert_array_equal(poisoned, [np.iinfo(np.int32).min] * 3)


def test_debug_print_in_grid_order(capsys):
    def kernel(x_ref, o_ref):
        pl.debug_print("i={} x0={}", pl.program_id(0), x_ref[0])
        o_ref[...] = x_ref[...] * 2
    f = pl.pallas_call(kernel, out_shape=S((8,), F32), grid=(2,),
                       in_specs=[pl.BlockSpec((4,), lambda i: (i,))],
                       out_specs=pl.BlockSpec((4,), lambda i: (i,)), interpret=True)
    np.testing.assert_array_equal(f(np.arange(8, dtype=F32)), np.arange(8) * 2)
    assert capsys.readouterr().out == "i=0 x0=0.0\ni=1 x0=4.0\n"
    compiled = pl.pallas_call(kernel, out_shape=S((8,), F32), grid=(2,),
                              in_specs=[pl.BlockSpec((4,), lambda i: (i,))],
                              out_specs=pl.BlockSpec((4,), lambda i: (i,)))
    lc.block_until_ready(lc.jit(compiled)(np.arange(8, dtype=F32)))
    assert capsys.readouterr().out == "i=0 x0=0.0\ni=1 x0=4.0\n"


def test_estimate_cost():
    cost = pl.estimate_cost(lambda a, b: a @ b, np.ones((8, 8), F32), np.ones((8, 8), F32))
    assert cost == pl.CostEstimate(flops=1024, transcendentals=0, bytes_accessed=768)


def test_grid_spec_and_cost_estimate_params():
    spec = pl.GridSpec(grid=(2,), in_specs=[pl.BlockSpec((2,), lambda i: (i,))],
                       out_specs=pl.BlockSpec((2,), lambda i: (i,)))
    f = pl.pallas_call(lambda x_ref, o_ref: o_ref.__setitem__(..., -x_ref[...]),
                       out_shape=S((4,), F32), grid_spec=spec, name="neg",
                       compiler_params=plgpu.CompilerParams(num_warps=4),
                       cost_estimate=pl.CostEstimate(4, 0, 32))
    np.testing.assert_array_equal(f(np.arange(4, dtype=F32)), -np.arange(4))
    assert "name=neg" in str(lc.make_jaxpr(f)(np.arange(4, dtype=F32)))
