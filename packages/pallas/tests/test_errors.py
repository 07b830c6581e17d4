"""Errors a kernel author can act on: each names the kernel, the operand or ref, and
the shapes involved."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.numpy as jnp
import lamella.pallas as pl

S = lc.ShapeDtypeStruct
F32 = np.float32
x8 = np.arange(8, dtype=F32)


def copy_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def call(kernel=copy_kernel, block=(4,), in_map=lambda i: (i,), grid=(2,), **kw):
    return pl.pallas_call(kernel, out_shape=S((8,), F32), grid=grid,
                          in_specs=[pl.BlockSpec(block, in_map)],
                          out_specs=pl.BlockSpec((4,), lambda i: (i,)), **kw)


def test_index_map_arity():
    with pytest.raises(ValueError, match=r"'copy_kernel'.*input 0 must return 1 values"):
        call(in_map=lambda i: (i, 0))(x8)
    with pytest.raises(ValueError, match=r"takes 2 grid indices, but the grid \(2,\)"):
        call(in_map=lambda i, j: (i,))(x8)


def test_block_rank_and_size():
    with pytest.raises(ValueError, match=r"block shape \(4, 4\) of input 0 has 2 dimensions "
                                         r"but the operand has shape \(8,\)"):
        call(block=(4, 4), in_map=lambda i: (i, 0))(x8)
    with pytest.raises(ValueError, match="invalid block dimension 0"):
        call(block=(0,))(x8)


def test_store_of_wrong_shape_or_dtype_names_the_ref():
    def bad_shape(x_ref, o_ref):
        o_ref[...] = x_ref[pl.ds(0, 2)]
    with pytest.raises(TypeError, match=r"ref 'o_ref'.*shape \(2,\).*window has shape \(4,\)"):
        call(bad_shape)(x8)

    def bad_dtype(x_ref, o_ref):
        o_ref[...] = x_ref[...].astype(jnp.int32)
    with pytest.raises(TypeError, match="ref 'o_ref' of dtype float32 a value of type i32"):
        call(bad_dtype)(x8)


def test_reading_outside_a_block_names_the_ref():
    def outside(x_ref, o_ref):
        o_ref[...] = x_ref[pl.ds(2, 4)]
    with pytest.raises(IndexError, match=r"ref 'x_ref' of shape \(4,\).*out of bounds"):
        call(outside)(x8)


def test_kernel_capturing_a_tracer():
    @lc.jit
    def f(x, y):
        def kernel(x_ref, o_ref):
            o_ref[...] = x_ref[...] + y
        return call(kernel)(x)
    with pytest.raises(TypeError, match="closes over a traced value"):
        f(x8, x8[:4])


def test_bad_grid_and_aliases():
    with pytest.raises(TypeError, match="grid sizes must be static"):
        call(grid=(2.5,))
    with pytest.raises(ValueError, match="can't alias output 0"):
        pl.pallas_call(copy_kernel, out_shape=S((8,), F32),
                       input_output_aliases={0: 0})(np.zeros(4, F32))


def test_grad_points_to_custom_vjp():
    with pytest.raises(TypeError, match="custom_vjp"):
        lc.grad(lambda x: call()(x).sum())(x8)
