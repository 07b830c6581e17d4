"""Tests of lamella.lax.indexing: gather and the scatter family against NumPy
fancy indexing and `np.<ufunc>.at`, out-of-bounds modes, derivatives, vmap
(operand, indices and both batched) and jit, through lamella.lax.test_util.

XLA compiles dominate the run time: shapes are few and small, and indices are
traced arguments, so trying many index values compiles nothing new.
"""

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
import lamella.lax as lax
from lamella.lax import indexing
from lamella.lax.arithmetic import square
from lamella.lax.indexing import (
    GatherDimensionNumbers,
    GatherScatterMode,
    ScatterDimensionNumbers,
    gather,
    scatter,
    scatter_add,
    scatter_apply,
    scatter_max,
    scatter_min,
    scatter_mul,
    scatter_sub,
)
from lamella.lax.reductions import reduce_sum
from lamella.lax.test_util import check, check_derivatives, check_vmap

ROWS = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
POINTS = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0, 1),
                                start_index_map=(0, 1))
WINDOWS = GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(),
                                 start_index_map=(0, 1))
# Scatter of scalars into a vector, and of rows into a matrix.
ENTRIES = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,))
ROW_UPDATES = ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                      scatter_dims_to_operand_dims=(0,))

rng = np.random.default_rng(0)
X = rng.standard_normal((4, 3)).astype(np.float32)


def test_doctests():
    assert doctest.testmod(indexing).failed == 0


# --- gather -------------------------------------------------------------------


def test_gather_rows():
    idx = np.int32([[2], [0], [1]])
    check(lambda x, i: gather(x, i, ROWS, (1, 3)), [X, idx], lambda x, i: x[i[:, 0]])


def test_gather_points():
    idx = np.int32([[1, 2], [0, 0], [1, 0], [0, 1]])
    check(lambda x, i: gather(x, i, POINTS, (1, 1)), [X, idx],
          lambda x, i: x[i[:, 0], i[:, 1]])


def test_gather_windows():
    x = rng.standard_normal((5, 6)).astype(np.float32)
    idx = np.int32([[0, 1], [2, 3]])

    def reference(x, i):
        return np.stack([x[a:a + 2, b:b + 3] for a, b in i])
    check(lambda x, i: gather(x, i, WINDOWS, (2, 3)), [x, idx], reference)


def test_gather_clip_clamps_windows_into_bounds():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    idx = np.int32([[3, 4], [-2, 1], [1, 9]])
    out = gather(x, idx, WINDOWS, (2, 2), mode="clip")
    expected = np.stack([x[a:a + 2, b:b + 2] for a, b in np.clip(idx, 0, [2, 3])])
    np.testing.assert_array_equal(out, expected)
    # Derivatives flow back to the clamped windows.
    check_derivatives(lambda x, i: gather(x, i, WINDOWS, (2, 2), mode="clip"), [x, idx])


@pytest.mark.parametrize("dtype,fill", [(np.float32, np.nan), (np.int32, -2 ** 31),
                                        (np.uint8, 255), (np.bool_, True)])
def test_gather_fill_defaults(dtype, fill):
    x = np.arange(4).astype(dtype)
    idx = np.int32([[1], [4], [-1], [3]])
    dnums = POINTS._replace(collapsed_slice_dims=(0,), start_index_map=(0,))
    out = np.asarray(gather(x, idx, dnums, (1,), mode="fill"))
    expected = np.array([x[1], fill, fill, x[3]], dtype)
    np.testing.assert_array_equal(out, expected)
    # Without a mode, gather promises in-bounds indices (JAX's default); XLA clamps.
    np.testing.assert_array_equal(gather(x, idx, dnums, (1,)), x[[1, 3, 0, 3]])


def test_gather_fill_whole_window_and_custom_value():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    # A window of 2x2 starting at (3, 0) does not fit: all of it is filled.
    idx = np.int32([[3, 0], [2, 3]])
    out = gather(x, idx, WINDOWS, (2, 2), mode=GatherScatterMode.FILL_OR_DROP, fill_value=-1)
    np.testing.assert_array_equal(out, [np.full((2, 2), -1), x[2:4, 3:5]])
    # The derivative of a filled window is zero, and no cotangent reaches x from it.
    f = lambda x: gather(x, idx, WINDOWS, (2, 2), mode="fill", fill_value=0)  # noqa: E731
    grad = lc.grad(lambda x: reduce_sum(f(x), (0, 1, 2)))(x)
    expected = np.zeros_like(x)
    expected[2:4, 3:5] = 1
    np.testing.assert_array_equal(grad, expected)
    _, tangent = lc.jvp(f, (x,), (np.ones_like(x),))
    np.testing.assert_array_equal(tangent, [np.zeros((2, 2)), np.ones((2, 2))])


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(-6, 9), min_size=6, max_size=6))
def test_gather_modes_match_numpy(values):
    idx = np.int32(values).reshape(3, 2)
    clipped = np.clip(idx, 0, [3, 2])
    np.testing.assert_array_equal(gather(X, idx, POINTS, (1, 1), mode="clip"),
                                  X[clipped[:, 0], clipped[:, 1]])
    inside = np.all((idx >= 0) & (idx <= [3, 2]), axis=1)
    filled = np.where(inside, X[clipped[:, 0], clipped[:, 1]], np.nan)
    np.testing.assert_array_equal(gather(X, idx, POINTS, (1, 1), mode="fill"), filled)


def test_gather_batching_dims_directly():
    x = rng.standard_normal((3, 4)).astype(np.float32)
    idx = np.int32([[[1], [3]], [[0], [0]], [[2], [1]]])
    dn = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,),
                                operand_batching_dims=(0,), start_indices_batching_dims=(0,))
    check(lambda x, i: gather(x, i, dn, (1, 1)), [x, idx],
          lambda x, i: np.take_along_axis(x, i[..., 0], axis=1))


def _reference_gather(x, idx, dn, sizes, mode):
    """XLA's gather, one index vector at a time (no batching dims)."""
    windows = []
    for b in np.ndindex(idx.shape[:-1]):
        start = [0] * x.ndim
        for k, a in enumerate(dn.start_index_map):
            start[a] = int(idx[b][k])
        fits = all(0 <= s <= d - z for s, d, z in zip(start, x.shape, sizes))
        start = [min(max(s, 0), d - z) for s, d, z in zip(start, x.shape, sizes)]
        window = x[tuple(slice(s, s + z) for s, z in zip(start, sizes))]
        if mode == "fill" and not fits:
            window = np.full_like(window, np.nan)
        windows.append(np.squeeze(window, axis=dn.collapsed_slice_dims))
    out = np.array(windows).reshape(idx.shape[:-1] + windows[0].shape)
    rank = out.ndim
    batch_axes = [d for d in range(rank) if d not in dn.offset_dims]
    nbatch = len(batch_axes)
    perm = [batch_axes.index(d) if d in batch_axes else nbatch + dn.offset_dims.index(d)
            for d in range(rank)]
    return np.transpose(out, perm)


@st.composite
def gathers(draw):
    shape = (3, 4, 2)
    index_map = tuple(draw(st.permutations(range(3)))[:draw(st.integers(1, 3))])
    collapsed = tuple(sorted(draw(st.sets(st.sampled_from(range(3))))))
    sizes = tuple(1 if a in collapsed else draw(st.integers(0, d)) for a, d in enumerate(shape))
    batch = draw(st.sampled_from([(2,), (2, 1)]))
    rank = len(batch) + 3 - len(collapsed)
    offset = tuple(sorted(draw(st.permutations(range(rank)))[:3 - len(collapsed)]))
    idx = np.array(draw(st.lists(st.integers(-1, 4), min_size=len(index_map) * int(np.prod(batch)),
                                 max_size=len(index_map) * int(np.prod(batch)))), np.int32)
    dn = GatherDimensionNumbers(offset_dims=offset, collapsed_slice_dims=collapsed,
                                start_index_map=index_map)
    return shape, idx.reshape(batch + (len(index_map),)), dn, sizes, draw(
        st.sampled_from(["clip", "fill"]))


@settings(max_examples=25, deadline=None)
@given(gathers())
def test_gather_dimension_numbers_and_scatter_add_adjoint(case):
    shape, idx, dn, sizes, mode = case
    x = rng.standard_normal(shape).astype(np.float32)
    out = np.asarray(gather(x, idx, dn, sizes, mode=mode))
    np.testing.assert_array_equal(out, _reference_gather(x, idx, dn, sizes, mode))
    # scatter_add with the matching dimension numbers is gather's adjoint.
    u = rng.standard_normal(out.shape).astype(np.float32)
    sdn = ScatterDimensionNumbers(update_window_dims=dn.offset_dims,
                                  inserted_window_dims=dn.collapsed_slice_dims,
                                  scatter_dims_to_operand_dims=dn.start_index_map)
    spread = np.asarray(scatter_add(np.zeros_like(x), idx, u, sdn, mode=mode))
    np.testing.assert_allclose(np.nansum(out * u), np.sum(x * spread), rtol=1e-5, atol=1e-5)


# --- scatter family -----------------------------------------------------------
# Repeated indices, and 5 and -1 which are out of bounds for 4 entries.
IDX = np.int32([[1], [3], [1], [5], [0], [-1]])


def _at(ufunc, x, i, u):
    x = x.copy()
    inside = (i[:, 0] >= 0) & (i[:, 0] < len(x))
    ufunc.at(x, i[inside, 0], u[inside])
    return x


def test_scatter_add_drops_out_of_bounds_and_accumulates():
    x = rng.standard_normal(4).astype(np.float32)
    u = rng.standard_normal(6).astype(np.float32)
    check(lambda x, i, u: scatter_add(x, i, u, ENTRIES), [x, IDX, u],
          lambda x, i, u: _at(np.add, x, i, u), diff_argnums=(0, 2))


def test_scatter_add_rows_clip():
    x = rng.standard_normal((4, 3)).astype(np.float32)
    u = rng.standard_normal((6, 3)).astype(np.float32)

    def reference(x, i, u):
        x = x.copy()
        np.add.at(x, np.clip(i[:, 0], 0, 3), u)
        return x
    check(lambda x, i, u: scatter_add(x, i, u, ROW_UPDATES, mode="clip"), [x, IDX, u],
          reference, diff_argnums=(0, 2))


def test_scatter_mul():
    x = rng.standard_normal(4).astype(np.float32)
    u = rng.uniform(0.5, 2, 6).astype(np.float32)
    check(lambda x, i, u: scatter_mul(x, i, u, ENTRIES), [x, IDX, u],
          lambda x, i, u: _at(np.multiply, x, i, u), diff_argnums=(0,))


def test_scatter_mul_unique_updates_derivative():
    x = rng.standard_normal(4).astype(np.float32)
    u = rng.standard_normal(3).astype(np.float32)
    idx = np.int32([[2], [0], [7]])
    check_derivatives(lambda x, u: scatter_mul(x, idx, u, ENTRIES, unique_indices=True), [x, u],
                diff_argnums=(0, 1))
    with pytest.raises(NotImplementedError, match="unique_indices=True"):
        lc.jvp(lambda u: scatter_mul(x, idx, u, ENTRIES), (u,), (u,))


@pytest.mark.parametrize("op,ufunc", [(scatter_min, np.minimum), (scatter_max, np.maximum)])
def test_scatter_min_max(op, ufunc):
    # Distinct values, so that finite differences see no ties.
    x = rng.permutation(10)[:4].astype(np.float32)
    u = (rng.permutation(12)[:6] - 1.5).astype(np.float32)
    check(lambda x, i, u: op(x, i, u, ENTRIES), [x, IDX, u],
          lambda x, i, u: _at(ufunc, x, i, u), diff_argnums=(0, 2))


def test_scatter_max_ties_share_the_derivative():
    x = np.float32([1, 5])
    u = np.float32([5, 5, 0])
    idx = np.int32([[1], [1], [0]])
    out, tangent = lc.jvp(lambda x, u: scatter_max(x, idx, u, ENTRIES), (x, u),
                          (np.float32([1, 3]), np.float32([6, 9, 100])))
    np.testing.assert_array_equal(out, [1, 5])
    np.testing.assert_allclose(tangent, [1, 6])


def test_scatter_unique():
    x = rng.standard_normal((4, 3)).astype(np.float32)
    u = rng.standard_normal((2, 3)).astype(np.float32)
    idx = np.int32([[3], [0]])

    def reference(x, i, u):
        x = x.copy()
        x[i[:, 0]] = u
        return x
    check(lambda x, u: scatter(x, idx, u, ROW_UPDATES, unique_indices=True), [x, u],
          lambda x, u: reference(x, idx, u), diff_argnums=(0, 1))


def test_scatter_repeated_indices_derivative():
    x = rng.standard_normal(4).astype(np.float32)
    u = rng.standard_normal(6).astype(np.float32)
    f = lambda x, i, u: scatter(x, i, u, ENTRIES)  # noqa: E731
    out = np.asarray(f(x, IDX, u))
    # Entries 0 and 3 get their only update, 2 is untouched, 1 gets one of two.
    np.testing.assert_array_equal(out[[0, 2, 3]], [u[4], x[2], u[1]])
    assert out[1] in (u[0], u[2])
    check(f, [x, IDX, u], diff_argnums=(0, 2))
    # The id-tagging JVP under vmap, indices batched too.
    g = lc.grad(lambda x, i, u: reduce_sum(square(f(x, i, u)), (0,)), argnums=(0, 2))
    check_vmap(g, [x, IDX, u])


def test_scatter_batching_dims_directly():
    x = np.zeros((2, 3), np.float32)
    idx = np.int32([[[2], [0]], [[1], [5]]])
    u = np.float32([[1, 2], [3, 4]])
    dn = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(1,),
                                 scatter_dims_to_operand_dims=(1,), operand_batching_dims=(0,),
                                 scatter_indices_batching_dims=(0,))
    np.testing.assert_array_equal(scatter_add(x, idx, u, dn), [[2, 0, 1], [0, 3, 0]])


def test_vmap_of_gradient_of_gather():
    # Batched cotangents through the transpose: scatter_add under vmap.
    idx = np.int32([[2], [0], [2]])
    g = lc.grad(lambda x, i: reduce_sum(square(gather(x, i, ROWS, (1, 3))), (0, 1)))
    check_vmap(g, [X, idx])


def test_gather_scatter_mode_parsing():
    assert GatherScatterMode.from_any(None) is GatherScatterMode.FILL_OR_DROP
    assert GatherScatterMode.from_any("fill") is GatherScatterMode.FILL_OR_DROP
    assert GatherScatterMode.from_any("clip") is GatherScatterMode.CLIP
    assert GatherScatterMode.from_any("promise_in_bounds") is \
        GatherScatterMode.PROMISE_IN_BOUNDS
    with pytest.raises(ValueError, match="Unknown gather/scatter mode 'wrap'"):
        GatherScatterMode.from_any("wrap")


# --- errors -------------------------------------------------------------------


@pytest.mark.parametrize("dn,sizes,message", [
    (ROWS, (1, 3, 1), r"slice_sizes \(1, 3, 1\) must have one entry per axis"),
    (ROWS, (2, 3), r"slice_sizes \(2, 3\) must be 0 or 1 at the collapsed_slice_dims"),
    (ROWS, (1, 5), r"slice_sizes \(1, 5\) must be between 0 and the operand shape"),
    (ROWS._replace(offset_dims=(0, 1)), (1, 3), r"offset_dims \(0, 1\) must have one entry"),
    (ROWS._replace(start_index_map=(0, 1)), (1, 3),
     r"start_index_map \(0, 1\) must have one entry per index vector entry"),
    (ROWS._replace(collapsed_slice_dims=(2,)), (1, 3),
     r"collapsed_slice_dims \(2,\) must be distinct axes of the operand"),
])
def test_gather_errors(dn, sizes, message):
    with pytest.raises(TypeError, match=message):
        gather(X, np.int32([[0]]), dn, sizes)


@pytest.mark.parametrize("dn,updates_shape,message", [
    (ENTRIES, (2, 3), r"update_window_dims \(\) must have one entry per operand axis"),
    (ROW_UPDATES, (3, 3), r"updates shape \(3, 3\) must have the indices' shape"),
    (ROW_UPDATES, (2, 5), r"update window axis 1 of updates shape \(2, 5\) is larger"),
    (ROW_UPDATES._replace(scatter_dims_to_operand_dims=(0, 1)), (2, 3),
     r"scatter_dims_to_operand_dims \(0, 1\) must have one entry per index vector"),
])
def test_scatter_errors(dn, updates_shape, message):
    with pytest.raises(TypeError, match=message):
        scatter_add(X, np.int32([[0], [1]]), np.zeros(updates_shape, np.float32), dn)


def test_scatter_dtype_errors():
    with pytest.raises(TypeError, match="operand and updates must have the same dtype"):
        scatter(X, np.int32([[0]]), np.zeros((1, 3), np.int32), ROW_UPDATES)
    with pytest.raises(TypeError, match="indices does not accept dtype float32"):
        gather(X, np.float32([[0]]), ROWS, (1, 3))


# --- scatter_sub, scatter_apply, and scatters inside linear functions ----------


def test_scatter_sub_matches_numpy_subtract_at():
    x = np.arange(4, dtype=np.float32)
    idx, upd = np.int32([[0], [3], [0], [9]]), np.float32([1, 2, 3, 4])

    def ref(x, idx, upd):
        out = x.copy()
        keep = idx[:, 0] < 4
        np.subtract.at(out, idx[keep, 0], upd[keep])
        return out
    check(lambda x, u: scatter_sub(x, idx, u, ENTRIES), [x, upd], lambda x, u: ref(x, idx, u),
          diff_argnums=(0, 1))


def test_scatter_apply_applies_the_function_once_per_index():
    x = np.arange(1, 5, dtype=np.float32)
    idx = np.int32([[0], [2], [2]])
    out = check(lambda x: scatter_apply(x, idx, square, ENTRIES, update_shape=(3,)), [x],
                lambda x: x * np.float32([x[0], 1, x[2] ** 3, 1]), diff_argnums=None)
    assert out.dtype == np.float32
    text = str(lc.make_jaxpr(lambda x: scatter_apply(x, idx, square, ENTRIES,
                                                     update_shape=(3,)))(x))
    assert "update_jaxpr={ lambda ; " in text and "square" in text
    with pytest.raises(TypeError, match="not differentiable"):
        lc.grad(lambda x: reduce_sum(scatter_apply(x, idx, square, ENTRIES,
                                                   update_shape=(3,)), (0,)))(x)


def test_scatters_print_as_jax_with_their_update_computation():
    text = str(lc.make_jaxpr(lambda x, u: scatter_add(x, np.int32([[1]]), u, ENTRIES))(
        np.ones(3, np.float32), np.ones(1, np.float32)))
    assert "scatter-add[" in text
    assert "update_jaxpr={ lambda ; e:f32[] f:f32[]. let g:f32[] = add e f in (g,) }" in text


@pytest.mark.parametrize("unique", [False, True])
def test_scatter_transposes_in_a_linear_function(unique):
    # A scatter inside the tangent computation (a custom JVP's, in a scan) has to
    # be transposed for reverse mode; with repeated indices only the update that
    # landed gets a cotangent.
    idx = np.int32([[1], [0]]) if unique else np.int32([[1], [1]])

    def linear(t):
        return scatter(t, idx, lax.mul(lax.slice(t, (0,), (2,)), 2.0), ENTRIES,
                       unique_indices=unique)
    t = np.arange(1, 4, dtype=np.float32)
    ct = np.float32([1, 10, 100])
    (ct_t,) = lc.linear_transpose(linear, t)(ct)
    _, pullback = lc.vjp(linear, t)
    np.testing.assert_allclose(ct_t, pullback(ct)[0])
    np.testing.assert_allclose(np.sum(ct * linear(t)), np.sum(ct_t * t), rtol=1e-6)

    @lc.custom_jvp
    def double(x):
        return lax.mul(x, 2.0)

    @double.defjvp
    def _(primals, tangents):
        (x,), (dx,) = primals, tangents

        def body(y, j):  # y.at[j].set(2 dx[j])
            value = lax.mul(lax.dynamic_index_in_dim(dx, j, keepdims=False), 2.0)
            return scatter(y, lax.reshape(j, (1, 1)), lax.reshape(value, (1,)), ENTRIES), None
        y, _ = lax.scan(body, lax.full_like(dx, 0.0), np.arange(3, dtype=np.int32))
        return double(x), y

    grad = lc.grad(lambda x: reduce_sum(lax.mul(double(x), double(x)), (0,)))(t)
    np.testing.assert_allclose(grad, 8 * t)
