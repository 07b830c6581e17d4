"""Every valid tiling of a copy and of a blocked add gives the input (the sum); invalid
tilings give the documented errors. Tilings: block shapes that divide or not (ragged
edges are padded), squeezed dims, grid axes in either order, reversed index maps."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
import lamella.pallas as pl

S = lc.ShapeDtypeStruct


def copy_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...]


def add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


@st.composite
def tilings(draw):
    shape = (draw(st.integers(1, 9)), draw(st.integers(1, 9)))
    block = tuple(draw(st.one_of(st.none(), st.integers(1, n + 2))) for n in shape)
    counts = [n if b is None else pl.cdiv(n, b) for n, b in zip(shape, block)]
    reverse = draw(st.tuples(st.booleans(), st.booleans()))
    swap = draw(st.booleans())  # grid axes in the other order
    grid = tuple(counts[::-1]) if swap else tuple(counts)

    def index_map(*g):
        g = g[::-1] if swap else g
        return tuple(c - 1 - i if r else i for i, c, r in zip(g, counts, reverse))
    return shape, pl.BlockSpec(block, index_map), grid


@settings(max_examples=20, deadline=None)
@given(tilings(), st.booleans())
def test_copy_any_tiling(tiling, interpret):
    shape, spec, grid = tiling
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    f = pl.pallas_call(copy_kernel, out_shape=S(shape, np.float32), grid=grid, in_specs=[spec],
                       out_specs=spec, interpret=interpret)
    np.testing.assert_array_equal(f(x), x)


@settings(max_examples=15, deadline=None)
@given(tilings())
def test_blocked_add_any_tiling(tiling):
    shape, spec, grid = tiling
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    f = pl.pallas_call(add_kernel, out_shape=S(shape, np.float32), grid=grid,
                       in_specs=[spec, spec], out_specs=spec)
    np.testing.assert_array_equal(lc.jit(f)(x, 2 * x), 3 * x)


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3))
def test_invalid_tilings_are_errors(rank_extra, arity_extra):
    x = np.zeros((4, 4), np.float32)
    block = (2,) * (2 + rank_extra)
    with pytest.raises(ValueError, match=r"operand has shape \(4, 4\) \(2 dimensions\)"):
        pl.pallas_call(copy_kernel, out_shape=S((4, 4), np.float32), grid=(2, 2),
                       in_specs=[pl.BlockSpec(block, lambda i, j: (i, j) + (0,) * rank_extra)],
                       out_specs=pl.BlockSpec((2, 2), lambda i, j: (i, j)))(x)
    with pytest.raises(ValueError, match="must return 2 values"):
        pl.pallas_call(copy_kernel, out_shape=S((4, 4), np.float32), grid=(2, 2),
                       in_specs=[pl.BlockSpec((2, 2), lambda i, j: (i,) * (2 + arity_extra))],
                       out_specs=pl.BlockSpec((2, 2), lambda i, j: (i, j)))(x)
