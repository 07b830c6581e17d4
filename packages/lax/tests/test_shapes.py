"""Tests of lamella.lax.shapes: values against NumPy, jit, derivatives and vmap
through lamella.lax.test_util, clamping of dynamic indices, and every error.

XLA compiles dominate the run time, so shapes are few and small; dynamic
indices are traced arguments, so trying many of their values compiles nothing
new.
"""

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella.core.structural import reduce_sum
from lamella.lax import shapes
from lamella.lax.arithmetic import mul
from lamella.lax.shapes import (
    broadcast,
    broadcast_in_dim,
    broadcasted_iota,
    concatenate,
    concatenate_p,
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_slice_in_dim,
    dynamic_slice_p,
    dynamic_update_index_in_dim,
    dynamic_update_slice,
    dynamic_update_slice_in_dim,
    dynamic_update_slice_p,
    expand_dims,
    index_in_dim,
    iota,
    iota_p,
    pad,
    reshape,
    rev,
    rev_p,
    slice,
    slice_in_dim,
    split,
    squeeze,
    squeeze_p,
    transpose,
)
from lamella.lax.test_util import check, check_derivatives, check_vmap

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3)).astype(np.float32)
X3 = RNG.standard_normal((2, 3, 4)).astype(np.float32)
Y = RNG.standard_normal((5, 6)).astype(np.float32)
FEW = settings(max_examples=12, deadline=None)


# --- NumPy references -----------------------------------------------------------


def pad_reference(x, value, config):
    """Every operand entry lands at low + k * (interior + 1); the rest is `value`."""
    x = np.asarray(x)
    shape = [lo + hi + d + max(d - 1, 0) * i for d, (lo, hi, i) in zip(x.shape, config)]
    out = np.full(shape, value, x.dtype)
    for index in np.ndindex(*x.shape):
        at = tuple(lo + k * (i + 1) for k, (lo, _, i) in zip(index, config))
        if all(0 <= a < n for a, n in zip(at, shape)):
            out[at] = x[index]
    return out


def clamped_starts(shape, starts, sizes):
    """Negative starts count from the end; then clamp so the window fits."""
    return [int(np.clip(s + d if s < 0 else s, 0, d - n)) for d, s, n in zip(shape, starts,
                                                                            sizes)]


def dynamic_slice_reference(x, starts, sizes):
    starts = clamped_starts(x.shape, starts, sizes)
    return x[tuple(np.s_[s:s + n] for s, n in zip(starts, sizes))]


def dynamic_update_slice_reference(x, update, starts):
    starts = clamped_starts(x.shape, starts, update.shape)
    out = np.array(x)
    out[tuple(np.s_[s:s + n] for s, n in zip(starts, update.shape))] = update
    return out


def test_doctests():
    assert doctest.testmod(shapes).failed == 0


# --- wrappers over core's primitives ---------------------------------------------


def test_broadcast_in_dim_and_broadcast():
    check(lambda x: broadcast_in_dim(x, (2, 4, 3), (0, 2)), [X],
          lambda x: np.broadcast_to(x[:, None, :], (2, 4, 3)))
    check(lambda x: broadcast(x, (4,)), [X], lambda x: np.broadcast_to(x, (4, 2, 3)))


def test_transpose_and_reshape_with_dimensions():
    check(lambda x: transpose(x, (2, 0, 1)), [X3], lambda x: np.transpose(x, (2, 0, 1)))
    check(lambda x: reshape(x, (4, 6), (2, 0, 1)), [X3],
          lambda x: np.transpose(x, (2, 0, 1)).reshape(4, 6))
    check(lambda x: reshape(x, (6,)), [X], lambda x: x.reshape(6))


def test_identity_wrappers_return_lamella_values_unchanged():
    a = rev(X, ())
    assert transpose(a, (0, 1)) is a
    assert reshape(a, (2, 3)) is a
    assert reshape(a, (2, 3), (0, 1)) is a


def test_expand_dims_and_squeeze():
    check(lambda x: expand_dims(x, (0, -1)), [X], lambda x: x[None, :, :, None])
    ones = X.reshape(2, 1, 3, 1)
    check(lambda x: squeeze(x, (1, -1)), [ones], lambda x: x[:, 0, :, 0])
    check(lambda x: squeeze(x, ()), [X], lambda x: x)


def test_squeeze_vmap_keeps_track_of_the_batch_axis():
    x = RNG.standard_normal((1, 3, 1)).astype(np.float32)
    out = lc.vmap(lambda x: squeeze(x, (0, 1)), in_axes=1)(x)
    np.testing.assert_array_equal(out, x[0, :, 0])


# --- rev, concatenate, split -------------------------------------------------------


def test_rev():
    check(lambda x: rev(x, (0, 2)), [X3], lambda x: x[::-1, :, ::-1])
    check(lambda x: rev(x, (1,)), [np.arange(6, dtype=np.int32).reshape(2, 3)],
          lambda x: x[:, ::-1], diff_argnums=None)


def test_concatenate():
    b = RNG.standard_normal((2, 1)).astype(np.float32)
    c = RNG.standard_normal((2, 4)).astype(np.float32)
    check(lambda a, b, c: concatenate([a, b, c], 1), [X, b, c],
          lambda a, b, c: np.concatenate([a, b, c], 1), diff_argnums=(0, 1, 2))
    check(lambda a, b: concatenate([a, b], 0), [X, X[:1]],
          lambda a, b: np.concatenate([a, b], 0), diff_argnums=(1,))


def test_concatenate_booleans_under_vmap():
    a, b = np.array([True, False]), np.array([False])
    check(lambda a, b: concatenate([a, b], 0), [a, b],
          lambda a, b: np.concatenate([a, b]), diff_argnums=None)


def test_split():
    pieces = lambda x: split(x, (1, 0, 3), axis=-1)
    check(pieces, [X3], lambda x: np.split(x, [1, 1], axis=-1), diff_argnums=None)
    # Transposes: reorder the pieces, or use one and drop the others.
    check(lambda x: concatenate(pieces(x)[::-1], 2), [X3],
          lambda x: np.concatenate([x[..., 1:], x[..., :1]], 2))
    check(lambda x: split(x, (2, 1), axis=1)[1], [X], lambda x: x[:, 2:])


# --- pad ----------------------------------------------------------------------------

PAD_AXIS = st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(0, 2))


@FEW
@given(st.tuples(PAD_AXIS, PAD_AXIS).filter(lambda c: all(
    lo + hi + d + max(d - 1, 0) * i >= 0 for d, (lo, hi, i) in zip(X.shape, c))))
def test_pad(config):
    value = np.float32(0.5)
    check(lambda x, v: pad(x, v, config), [X, value],
          lambda x, v: pad_reference(x, v, config), diff_argnums=(0, 1))


def test_pad_scalar_operand_and_integers():
    check(lambda x: pad(x, 0.0, ()), [np.float32(3.0)], lambda x: x)
    ints = np.arange(6, dtype=np.int32).reshape(2, 3)
    config = [(1, -1, 1), (0, 2, 0)]
    check(lambda x, v: pad(x, v, config), [ints, np.int32(-7)],
          lambda x, v: pad_reference(x, v, config), diff_argnums=None)


def test_pad_python_scalar_keeps_weak_type():
    weak = lc.make_jaxpr(lambda x: pad(x, 0.0, ()))(2.0)
    assert weak.out_avals[0].weak_type
    strong = lc.make_jaxpr(lambda x: pad(x, 0.0, [(1, 1, 0)]))(np.ones(1, np.float32))
    assert not strong.out_avals[0].weak_type


def test_pad_gradient_of_padding_value_counts_padded_positions():
    config = [(2, -1, 1)]
    grad = lc.grad(lambda v: reduce_sum(
        pad(np.ones(3, np.float32), v, config), (0,)))(np.float32(0.0))
    # [v, v, 1, v, 1, v, 1] with the last entry (an operand's) cropped: 4 v's.
    assert float(grad) == 4.0


# --- slice --------------------------------------------------------------------------


@st.composite
def slices(draw):
    starts, limits, strides = [], [], []
    for d in Y.shape:
        start = draw(st.integers(0, d))
        starts.append(start)
        limits.append(draw(st.integers(start, d)))
        strides.append(draw(st.integers(1, 3)))
    return starts, limits, strides


@FEW
@given(slices())
def test_slice(bounds):
    starts, limits, strides = bounds
    check(lambda x: slice(x, starts, limits, strides), [Y],
          lambda x: x[tuple(np.s_[a:b:s] for a, b, s in zip(starts, limits, strides))])


def test_slice_without_strides_and_in_dim_helpers():
    check(lambda x: slice(x, (1, 0), (2, 2)), [X], lambda x: x[1:2, 0:2])
    check(lambda x: slice_in_dim(x, -3, None, 2, axis=-1), [Y], lambda x: x[:, -3::2])
    check(lambda x: index_in_dim(x, -1, axis=1, keepdims=False), [Y], lambda x: x[:, -1])
    check(lambda x: index_in_dim(x, 0), [Y], lambda x: x[:1])


# --- dynamic_slice, dynamic_update_slice ----------------------------------------------

STARTS = st.tuples(st.integers(-8, 8), st.integers(-8, 8))
SIZES = (2, 4)


def _ds(x, i, j):
    return dynamic_slice(x, [i, j], SIZES)


_ds_jit = lc.jit(_ds)


@FEW
@given(STARTS)
def test_dynamic_slice(starts):
    i, j = (np.int32(s) for s in starts)
    check(_ds, [Y, i, j], lambda x, i, j: dynamic_slice_reference(x, [i, j], SIZES))


@FEW
@given(STARTS)
def test_dynamic_slice_clamps_out_of_range_starts(starts):
    expected = dynamic_slice_reference(Y, starts, SIZES)
    args = [Y, *(np.int32(s) for s in starts)]
    np.testing.assert_array_equal(_ds_jit(*args), expected)
    # Batched starts take the per-example path; it clamps the same way.
    batch = np.array([starts, (starts[0] + 5, starts[1] - 9), (0, 0)], np.int32)
    out = lc.vmap(_ds_jit, in_axes=(None, 0, 0))(Y, batch[:, 0], batch[:, 1])
    for o, s in zip(np.asarray(out), batch):
        np.testing.assert_array_equal(o, dynamic_slice_reference(Y, s, SIZES))


def test_dynamic_slice_start_forms():
    ref = dynamic_slice_reference(Y, [1, -2], (3, 2))
    for starts in ([1, -2], (np.int32(1), np.int64(-2)), np.array([1, -2], np.int32),
                   [np.uint32(1), np.uint32(4)], [np.int8(1), -2], [1, 2**40]):
        np.testing.assert_array_equal(dynamic_slice(Y, starts, (3, 2)), ref)
    traced = lc.jit(lambda s: dynamic_slice(Y, s, (3, 2)))(np.array([1, -2], np.int32))
    np.testing.assert_array_equal(traced, ref)
    # Without negative indices, -2 clamps to 0.
    np.testing.assert_array_equal(
        dynamic_slice(Y, [1, -2], (3, 2), allow_negative_indices=False), Y[1:4, 0:2])


def test_dynamic_slice_booleans_and_whole_axes():
    mask = Y > 0
    check(lambda x, i: dynamic_slice(x, [i, np.int32(1)], (3, 5)), [mask, np.int32(2)],
          lambda x, i: dynamic_slice_reference(x, [i, 1], (3, 5)), diff_argnums=None)
    check(lambda x, i: dynamic_slice(x, [i, 0], (5, 0)), [Y, np.int32(1)],
          lambda x, i: x[:, :0])


def _dus(x, u, i, j):
    return dynamic_update_slice(x, u, [i, j])


U = RNG.standard_normal((2, 4)).astype(np.float32)


@FEW
@given(STARTS)
def test_dynamic_update_slice(starts):
    i, j = (np.int32(s) for s in starts)
    check(_dus, [Y, U, i, j],
          lambda x, u, i, j: dynamic_update_slice_reference(x, u, [i, j]), diff_argnums=(0, 1))


def test_dynamic_update_slice_of_integers_and_partial_batching():
    x = np.arange(30, dtype=np.int32).reshape(5, 6)
    u = -np.arange(8, dtype=np.int32).reshape(2, 4)
    check(lambda x, u, j: dynamic_update_slice(x, u, [np.int32(2), j]), [x, u, np.int32(5)],
          lambda x, u, j: dynamic_update_slice_reference(x, u, [2, j]), diff_argnums=None)


def test_grad_of_batched_dynamic_slice_places_cotangents_per_example():
    def f(x, i):
        return reduce_sum(dynamic_slice(x, [i, np.int32(1)], (2, 3)), (0, 1))
    starts = np.array([0, 2, 7], np.int32)
    grads = lc.vmap(lc.grad(f), in_axes=(None, 0))(Y, starts)
    for g, s in zip(np.asarray(grads), starts):
        expected = np.zeros_like(Y)
        r = min(s, 3)
        expected[r:r + 2, 1:4] = 1
        np.testing.assert_array_equal(g, expected)


def test_dynamic_in_dim_helpers():
    check(lambda x, i: dynamic_slice_in_dim(x, i, 2, axis=1), [Y, np.int32(-1)],
          lambda x, i: x[:, 4:6])
    check(lambda x, i: dynamic_index_in_dim(x, i, axis=0, keepdims=False), [Y, np.int32(3)],
          lambda x, i: x[3])
    row = RNG.standard_normal(6).astype(np.float32)
    check(lambda x, u, i: dynamic_update_index_in_dim(x, u, i, 0), [Y, row, np.int32(9)],
          lambda x, u, i: np.concatenate([x[:4], u[None]]), diff_argnums=(0, 1))
    check(lambda x, u, i: dynamic_update_slice_in_dim(x, u, i, -1), [Y, Y[:, :2], np.int32(2)],
          lambda x, u, i: dynamic_update_slice_reference(x, u, [0, 2]), diff_argnums=(0, 1))


# --- iota --------------------------------------------------------------------------


def test_iota():
    np.testing.assert_array_equal(iota(np.int32, 4), np.arange(4, dtype=np.int32))
    out = broadcasted_iota(np.float32, (2, 3), -2)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, np.broadcast_to(np.arange(2.0)[:, None], (2, 3)))
    np.testing.assert_array_equal(lc.jit(lambda: iota(np.uint8, 3))(), np.arange(3))
    # iota has no operands: under vmap and grad it is a constant.
    check(lambda x: mul(x, broadcasted_iota(x.dtype, (2, 3), 1)), [X],
          lambda x: x * np.arange(3, dtype=np.float32))


# --- errors -------------------------------------------------------------------------

F = np.float32
I = np.int32
errors = [
    (lambda: squeeze(X, (0,)), TypeError, r"squeeze can only remove axes of size 1, got "
                                          r"dimensions \(0,\) for operand shape \(2, 3\)"),
    (lambda: squeeze(X[:1], (0, -2)), TypeError, r"squeeze dimensions \(0, 0\) must be distinct"),
    (lambda: squeeze_p.bind(X, dimensions=(3,)), TypeError,
     r"squeeze dimensions \(3,\) must be distinct axes"),
    (lambda: expand_dims(X, (0, -4)), ValueError, r"expand_dims got repeated dimensions"),
    (lambda: squeeze(X, (2,)), ValueError, r"axis 2 is out of bounds for an array of rank 2"),
    (lambda: rev_p.bind(X, dimensions=(0, 0)), TypeError,
     r"rev dimensions \(0, 0\) must be distinct axes"),
    (lambda: pad(X, X, [(0, 0, 0)] * 2), TypeError,
     r"pad padding_value must be a scalar, got shape \(2, 3\)"),
    (lambda: pad(X, I(0), [(0, 0, 0)] * 2), TypeError,
     r"pad operand and padding_value must have the same dtype, got float32 and int32"),
    (lambda: pad(X.astype(I), 0.5, [(0, 0, 0)] * 2), TypeError,
     r"pad operand and padding_value must have the same dtype, got int32 and float32"),
    (lambda: pad(X, F(0), [(0, 0, 0)]), TypeError,
     r"pad padding_config has 1 entries for an operand of shape \(2, 3\)"),
    (lambda: pad(X, F(0), [(0, 0, -1), (0, 0, 0)]), TypeError,
     r"pad interior padding must be >= 0"),
    (lambda: pad(X, F(0), [(-2, -1, 0), (0, 0, 0)]), TypeError,
     r"crops operand of shape \(2, 3\) to a negative size \(-1, 3\)"),
    (lambda: concatenate([], 0), TypeError, r"concatenate needs at least one operand"),
    (lambda: concatenate([X, X], 2), TypeError, r"concatenate dimension 2 is out of range"),
    (lambda: concatenate([X, X.astype(I)], 0), TypeError,
     r"concatenate operands must have the same dtype, got float32, int32"),
    (lambda: concatenate([X, Y], 0), TypeError,
     r"equal shapes except along dimension 0, got \(2, 3\), \(5, 6\)"),
    (lambda: slice(X, (0,), (1, 1)), TypeError,
     r"slice start_indices \(0,\) must have one entry per axis"),
    (lambda: slice(X, (-1, 0), (1, 1)), TypeError, r"slice start_indices \(-1, 0\) must be >= 0"),
    (lambda: slice(X, (0, 0), (1, 5)), TypeError,
     r"slice limit_indices \(1, 5\) must be <= the operand shape \(2, 3\)"),
    (lambda: slice(X, (2, 0), (1, 3)), TypeError,
     r"slice start_indices \(2, 0\) must be <= limit_indices \(1, 3\)"),
    (lambda: slice(X, (0, 0), (1, 3), (1, 0)), TypeError,
     r"slice strides \(1, 0\) must be positive"),
    (lambda: index_in_dim(X, 2), IndexError, r"index 2 is out of bounds for axis 0 with size 2"),
    (lambda: dynamic_slice(X, [0], (1, 1)), TypeError,
     r"dynamic_slice got 1 start indices for an operand of shape \(2, 3\)"),
    (lambda: dynamic_slice(X, [0, F(0)], (1, 1)), TypeError,
     r"dynamic_slice start indices must be integers, got dtype float32"),
    (lambda: dynamic_slice(X, [0, np.zeros(1, I)], (1, 1)), TypeError,
     r"dynamic_slice start indices must be scalars, got shape \(1,\)"),
    (lambda: dynamic_slice_p.bind(X, I(0), np.int8(0), slice_sizes=(1, 1)), TypeError,
     r"start indices must share one integer dtype, got int32, int8"),
    (lambda: dynamic_slice(X, [0, 0], (1, 4)), TypeError,
     r"dynamic_slice slice_sizes \(1, 4\) must be between 0 and the operand shape \(2, 3\)"),
    (lambda: dynamic_update_slice(X, X.astype(I), [0, 0]), TypeError,
     r"operand and update must have the same dtype, got float32 and int32"),
    (lambda: dynamic_update_slice(X, Y, [0, 0]), TypeError,
     r"update of shape \(5, 6\) must have the operand's rank and fit in its shape \(2, 3\)"),
    (lambda: dynamic_update_slice_p.bind(X, X, I(0)), TypeError,
     r"dynamic_update_slice got 1 start indices for an operand of shape \(2, 3\)"),
    (lambda: iota(bool, 3), TypeError, r"iota does not accept dtype bool"),
    (lambda: iota_p.bind(dtype=np.dtype(I), shape=(2,), dimension=1, sharding=None), TypeError,
     r"iota dimension 1 must be an axis of the non-negative shape \(2,\)"),
    (lambda: split(X, (1, 1), axis=1), TypeError,
     r"split sizes \(1, 1\) must be non-negative and sum to 3, the size of axis 1"),
    (lambda: concatenate_p.bind(X, X[:, :, None], dimension=0), TypeError,
     r"equal shapes except along dimension 0"),
]


@pytest.mark.parametrize("make, error, message", errors)
def test_errors(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_errors_name_the_users_line_under_jit():
    with pytest.raises(TypeError, match=r"slice limit_indices.*test_shapes.py"):
        lc.jit(lambda x: slice(x, (0, 0), (1, 5)))(X)


def test_grads_and_vmap_of_the_window_helpers_directly():
    # The per-example window code paths with windows filling the axis (no shifts).
    check_vmap(lambda x, i: dynamic_slice(x, [i, 0], (5, 6)), [Y, np.int32(1)])
    check_derivatives(lambda x, u, i: dynamic_update_slice(x, u, [i, 0]), [Y, Y, np.int32(1)],
                diff_argnums=(0, 1))
    check_vmap(lambda x, u, i: dynamic_update_slice(x, u, [i, 0]), [Y, Y, np.int32(1)])
