"""NumPy indexing and `.at` updates against NumPy: hypothesis-generated index
expressions (integers, slices, None, Ellipsis, integer arrays, boolean masks) on
0-d, empty and N-d arrays; jit against eager with static and traced indices;
gradients, vmap, out-of-bound modes, take/take_along_axis/put_along_axis/put,
and the errors."""

import ml_dtypes
import numpy as np
import pytest
from checks import check, check_jit_matches_eager
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella import lax
from lamella.core.trace import aval_of
from lamella.numpy import indexing as ix
from lamella.numpy import ufuncs as u
from lamella.numpy.util import asarray_internal
from lamella.numpy.util import asarray_internal as L  # NumPy arrays would index themselves

ix.install()

SHAPES = [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4)]
DTYPES = [np.float32, np.int32, np.bool_, np.float16, ml_dtypes.bfloat16]
A = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def data(shape, dtype=np.float32):
    values = np.arange(int(np.prod(shape))).reshape(shape)
    return np.asarray((values % 2 == 1) if dtype == np.bool_ else values.astype(dtype))


def assert_same(got, want):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    assert got.dtype == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_array_equal(got, want)


@st.composite
def index_for(draw, shape, masks=True, none=True):
    """A valid NumPy index for `shape`: basic and advanced items whose integer
    arrays all broadcast together."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    adv_shape = draw(st.sampled_from([(2,), (1,), (2, 1), (3,)]))
    items, axis, has_ellipsis, has_mask, has_array = [], 0, False, False, False
    count = draw(st.integers(0, len(shape) + 2))
    # After an Ellipsis, items must take every remaining axis (it stands for the rest).
    while len(items) < count or has_ellipsis and axis < len(shape):
        left = len(shape) - axis
        forced = len(items) >= count
        kinds = ["slice"] * (left > 0)
        if not forced:
            kinds += ["none"] * none + ["ellipsis"] * (not has_ellipsis)
        if left and shape[axis]:
            kinds += ["int", "array", "list"] if not has_mask else ["int"]
        if masks and left and not has_array and not has_mask:
            kinds += ["mask"] + ["bool"] * (not forced)
        if not kinds:
            break
        kind = draw(st.sampled_from(kinds))
        if kind == "slice":
            n = shape[axis]
            bound = st.one_of(st.none(), st.integers(-n - 2, n + 2))
            step = draw(st.one_of(st.none(), st.sampled_from([1, 2, 3, -1, -2])))
            items.append(slice(draw(bound), draw(bound), step))
            axis += 1
        elif kind == "none":
            items.append(None)
        elif kind == "ellipsis":
            items.append(Ellipsis)
            has_ellipsis = True
            axis += draw(st.integers(0, left))
        elif kind == "int":
            items.append(int(rng.integers(-shape[axis], shape[axis])))
            axis += 1
        elif kind in ("array", "list"):
            has_array = True
            values = rng.integers(-shape[axis], shape[axis], adv_shape)
            items.append(values.astype(np.int32) if kind == "array" else values.tolist())
            axis += 1
        elif kind == "mask":
            has_mask = True
            m = int(rng.integers(1, left + 1))
            items.append(rng.random(shape[axis:axis + m]) < 0.5)
            axis += m
        else:
            has_mask = True
            items.append(bool(rng.integers(2)))
    return tuple(items)


@st.composite
def array_and_index(draw, masks=True, none=True):
    shape = draw(st.sampled_from(SHAPES))
    dtype = draw(st.sampled_from(DTYPES))
    return data(shape, dtype), draw(index_for(shape, masks=masks, none=none))


@settings(max_examples=40, deadline=None)
@given(array_and_index())
def test_getitem_matches_numpy(case):
    a, index = case
    want = a[index]
    assert_same(asarray_internal(a)[index], want)
    assert_same(ix.getitem(a, index), want)


@settings(max_examples=15, deadline=None)
@given(array_and_index(masks=False))
def test_getitem_jit_matches_eager(case):
    a, index = case
    assert_same(lc.jit(lambda x: x[index])(a), a[index])


# Index expressions with their NumPy meaning spelled out, for the rest of the file.
BASIC = [0, -1, (1, slice(None, None, -1)), (slice(None), None, slice(3, 0, -2)),
         (Ellipsis, 2), (slice(None, None, 2), 1, slice(1, 3))]
ADVANCED = [np.int32([1, 0, 1]), (slice(None), [2, 0]), (0, slice(None), [3, -4]),
            ([0, 1], Ellipsis, [1, 2]), (slice(None), [[0], [2]], [1, 3]),
            ([1], None, [0], slice(None, None, -2)), (A > 10,), (slice(None), A[0] > 5),
            (True, 0), ([0], False)]


def test_shapes_and_axis_placement():
    # Advanced indices separated by a slice, None or Ellipsis lead the result.
    x = asarray_internal(A)
    for index in ADVANCED + BASIC:
        assert_same(x[index], A[index])
    assert x[[0], :, [1]].shape == (1, 3)
    assert x[:, [0], [1]].shape == (2, 1)
    assert x[:, [0], ..., [1]].shape == A[:, [0], ..., [1]].shape == (1, 2)


def test_basic_indexing_avoids_gather():
    for index in BASIC:
        jaxpr = str(lc.make_jaxpr(lambda x, index=index: x[index])(A))
        assert "gather" not in jaxpr, (index, jaxpr)
    jaxpr = str(lc.make_jaxpr(lambda x, i: x[i, ::-1])(A, np.int32(1)))
    assert "dynamic_slice" in jaxpr and "rev" in jaxpr and "gather" not in jaxpr
    # The gradient of a basic index is a pad, not a scatter.
    ct = np.ones(2, np.float32)
    vjp_jaxpr = str(lc.make_jaxpr(lambda x, ct: lc.vjp(lambda x: x[0, 1:3, 1], x)[1](ct))(A, ct))
    assert "pad" in vjp_jaxpr and "scatter" not in vjp_jaxpr


@pytest.mark.parametrize("index", [(np.int32(1),), (np.int32(-1), np.int32(2)),
                                   (np.int32([1, 0, -1]),), (np.int32([[0], [1]]), 0),
                                   (np.int32([[0], [1]]), np.int32([0, 2, -1]))],
                         ids=["int", "two-ints", "array", "array-int", "broadcast"])
def test_traced_indices(index):
    # Indices passed as jit arguments are traced: the same results as static ones.
    want = A[tuple(np.asarray(i) for i in index)]
    got = lc.jit(lambda x, *i: L(x)[i])(A, *index)
    assert_same(got, want)
    assert_same(lc.jit(lambda x, *i: L(x).at[i].get(mode="clip"))(A, *index), want)
    check_jit_matches_eager(lambda x, *i: L(x).at[i].add(1.0), [A, *index])
    added = A.copy()
    np.add.at(added, tuple(np.asarray(i) for i in index), 1.0)
    assert_same(lc.jit(lambda x, *i: L(x).at[i].add(1.0))(A, *index), added)


def test_traced_integers_clamp():
    # JAX: traced out-of-range reads clamp; negative ones count from the end.
    f = lc.jit(lambda x, i: x[i])
    v = np.float32([1, 2, 3])
    assert f(v, np.int32(7)) == 3 and f(v, np.int32(-1)) == 3 and f(v, np.int32(-9)) == 1
    assert_same(f(v, np.int32([5, -1, -7])), np.float32([3, 3, 1]))


@pytest.mark.parametrize("index", BASIC[:4] + ADVANCED[:6],
                         ids=[f"basic{i}" for i in range(4)] + [f"adv{i}" for i in range(6)])
def test_getitem_grads_and_vmap(index):
    check(lambda x: L(x)[index], [A], lambda a: a[index])


def test_vmap_with_batched_indices():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    # (check's vmap adds the example number to integer arguments: keep them in bounds)
    check(lambda x, i: L(x)[i], [x, np.int32(0)], lambda x, i: x[i])
    check(lambda x, i: L(x)[:, i], [x, np.int32([0, 1, -3])], lambda x, i: x[:, i])
    # Both indices batched, the array not.
    i, j = np.int32([2, -1]), np.int32([[0, 1], [-3, 2]])
    got = lc.vmap(lambda i, j: L(x)[i, 1:3] * L(x)[j, ::-2], in_axes=(0, 0))(i, j)
    assert_same(got, np.stack([x[i[k], 1:3] * x[j[k], ::-2] for k in range(2)]))
    # A list holding a traced integer is an advanced index.
    assert_same(lc.jit(lambda x, i: L(x)[[i, 0], 1])(x, np.int32(2)), x[[2, 0], 1])
    check(lambda x, i: L(x).at[i].set(0.5), [x, np.int32([-3, 0])],
          lambda x, i: _set(x, i, 0.5))


def _set(x, index, values):
    y = x.copy()
    y[index] = values
    return y


# --- .at updates ----------------------------------------------------------------------------
def _numpy_update(op, a, index, v):
    y = a.copy()
    if op == "set":
        y[index] = v
    else:
        {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "min": np.minimum,
         "max": np.maximum}[op].at(y, index, v)
    return y


@settings(max_examples=25, deadline=None)
@given(array_and_index(), st.sampled_from(["set", "add", "subtract", "multiply",
                                                     "min", "max"]), st.booleans())
def test_at_updates_match_numpy(case, op, scalar):
    a, index = case
    if a.dtype == np.bool_ and op not in ("set", "min", "max"):
        a = a.astype(np.int32)
    shape = np.shape(a[index])
    values = np.asarray(7, a.dtype) if scalar else (data(shape, np.int32) + 2).astype(a.dtype)
    if op == "set":
        # Repeated indices leave which update wins unspecified: set distinct locations.
        probe = np.zeros(a.shape, np.int32)
        np.add.at(probe, index, 1)
        if probe.max(initial=0) > 1:
            values = np.asarray(7, a.dtype)
    got = getattr(asarray_internal(a).at[index], op)(values)
    want = _numpy_update(op, a, index, values)
    tol = 1e-2 if a.dtype in (np.float16, ml_dtypes.bfloat16) else 0
    assert np.asarray(got).dtype == a.dtype
    np.testing.assert_allclose(np.asarray(got).astype(np.float64), want.astype(np.float64),
                               rtol=tol)


def test_at_add_accumulates_repeated_indices():
    idx = np.int32([0, 2, 0, 0, 4])
    got = asarray_internal(np.zeros(5, np.float32)).at[idx].add(np.float32([1, 2, 3, 4, 5]))
    want = np.zeros(5, np.float32)
    np.add.at(want, idx, np.float32([1, 2, 3, 4, 5]))
    assert_same(got, want)
    got = asarray_internal(np.ones((2, 3), np.int32)).at[:, [1, 1]].multiply(3)
    assert_same(got, np.int32([[1, 9, 1], [1, 9, 1]]))


def test_at_divide_power_apply_get():
    x = asarray_internal(np.float32([1, 2, 4, 8]))
    assert_same(x.at[1:3].divide(2.0), np.float32([1, 1, 2, 8]))
    assert_same(x.at[[0, 3]].power(2), np.float32([1, 2, 4, 64]))
    assert_same(x.at[::2].apply(u.negative), np.float32([-1, 2, -4, 8]))
    assert_same(x.at[-1].get(), np.float32(8))
    assert_same(x.at[0].mul(3.0), np.float32([3, 2, 4, 8]))
    # JAX's divide is a true division: integer arrays give floats.
    ints = asarray_internal(np.int32([2, 4]))
    assert_same(ints.at[0].divide(4), np.float32([0.5, 4]))


def test_at_values_broadcast_and_cast():
    x = asarray_internal(np.zeros((2, 3), np.int32))
    assert_same(x.at[:, 1:].set(np.float32([1.7, 2.2])), np.int32([[0, 1, 2], [0, 1, 2]]))
    assert_same(x.at[0].add(True), np.int32([[1, 1, 1], [0, 0, 0]]))
    with pytest.raises(ValueError, match=r"\(2,\).*\(3,\)"):
        x.at[0].set(np.int32([1, 2]))
    with pytest.raises(ValueError, match="cannot broadcast"):
        x.at[0].set(np.ones((1, 3), np.int32))
    # Empty selections leave the array as it is.
    assert_same(x.at[[]].set(5), np.zeros((2, 3), np.int32))
    assert_same(x.at[np.zeros((2, 3), bool)].set(5), np.zeros((2, 3), np.int32))


@pytest.mark.parametrize("op", ["set", "add", "subtract", "multiply", "min", "max"])
def test_at_update_grads(op):
    x = np.float32([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    v = np.float32([1.25, -0.5])
    unique = op == "multiply"

    def fun(x, v):
        return getattr(L(x).at[[1, 0], 2], op)(v, unique_indices=unique)

    check(fun, [x, v], lambda x, v: _numpy_update(op, x, ([1, 0], 2), v), diff_argnums=(0, 1))


def test_at_add_grad_with_repeated_indices():
    x = np.float32([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    check(lambda x, v: L(x).at[[0, 0, 1], 1:].add(v), [x, np.float32([[1, 2], [3, 4], [5, 6]])],
          None, diff_argnums=(0, 1), vmap=False)


def test_at_divide_power_grads():
    x = np.float32([0.5, 1.5, 2.0, 3.0])
    check(lambda x: L(x).at[1:3].divide(2.0), [x], lambda x: x / np.float32([1, 2, 2, 1]))
    check(lambda x, v: L(x).at[[0, 2]].power(v, unique_indices=True), [x, np.float32([2, 3])],
          lambda x, v: x ** np.float32([v[0], 1, v[1], 1]).astype(x.dtype),
          diff_argnums=(0, 1), vmap=False)
    check(lambda x: L(x).at[::2].apply(u.sin), [x], lambda x: np.where(np.arange(4) % 2 == 0,
                                                                     np.sin(x), x))


def test_at_set_gradient_with_traced_mask_outside_jit():
    # A concrete boolean mask works under grad outside jit.
    x = np.float32([1, -2, 3, -4])
    mask = x > 0
    g = lc.grad(lambda x: L(x).at[mask].set(0.0)[3] + L(x)[mask][1])(x)
    assert_same(g, np.float32([0, 0, 1, 1]))


# --- out-of-bound modes --------------------------------------------------------------------
def test_modes():
    x = asarray_internal(np.float32([1, 2, 3]))
    i = np.int32([0, 5, -1, -5])
    assert_same(x.at[i].get(), np.float32([1, 3, 3, 1]))                 # clamp
    assert_same(x.at[i].get(mode="clip"), np.float32([1, 3, 3, 1]))
    assert_same(x.at[i].get(mode="fill"), np.float32([1, np.nan, 3, np.nan]))
    assert_same(x.at[i].get(mode="fill", fill_value=-1), np.float32([1, -1, 3, -1]))
    assert_same(x.at[7].get(mode="fill", fill_value=0), np.float32(0))
    ints = asarray_internal(np.int32([1, 2]))
    assert_same(ints.at[np.int32([3])].get(mode="fill"), np.int32([np.iinfo(np.int32).min]))
    assert_same(x.at[i].set(9.0), np.float32([9, 2, 9]))                 # drop
    assert_same(x.at[i].set(9.0, mode="drop"), np.float32([9, 2, 9]))
    assert_same(x.at[i].add(1.0, mode="clip"), np.float32([3, 2, 5]))
    assert_same(x.at[i].add(1.0, mode="promise_in_bounds")[:2], np.float32([2, 2]))
    traced = lc.jit(lambda x, i: x.at[i].get(mode="fill", fill_value=-1.0))(x, np.int32(3))
    assert_same(traced, np.float32(-1))
    with pytest.raises(ValueError, match="mode"):
        x.at[0].get(mode="wrong")
    with pytest.raises(ValueError, match="mode"):
        x.at[0].set(1.0, mode="bogus")


# --- errors --------------------------------------------------------------------------------
def test_static_out_of_bounds_integers_clamp_or_raise_under_the_flag():
    x = asarray_internal(A)
    np.testing.assert_array_equal(np.asarray(x[2]), A[1])  # clamped, as JAX reads
    np.testing.assert_array_equal(np.asarray(x[0, 0, -5]), A[0, 0, 0])
    np.testing.assert_array_equal(np.asarray(x.at[2].get()), A[1])
    ten = asarray_internal(np.arange(10, dtype=np.int32))
    assert int(ten[11]) == 9 and int(ten[-11]) == 0 and int(ten[-12]) == 0
    assert int(lc.jit(lambda v: v[11])(ten)) == 9
    lc.config.update("static_index_errors", True)
    try:
        with pytest.raises(IndexError, match="index 2 is out of bounds for axis 0 with size 2"):
            x[2]
        with pytest.raises(IndexError, match="index -5 is out of bounds for axis 2 with size 4"):
            x[0, 0, -5]
        with pytest.raises(IndexError, match="index 11 is out of bounds"):
            ten.at[11].get()
    finally:
        lc.config.update("static_index_errors", False)
    assert int(ten[11]) == 9


def test_errors():
    x = asarray_internal(A)
    with pytest.raises(IndexError, match="Too many indices: 3-dimensional.*4"):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., 0, ...]
    with pytest.raises(TypeError, match="integer or boolean type.*float"):
        x[1.0]
    with pytest.raises(TypeError, match="integer or boolean type.*float32"):
        x[np.float32([0, 1])]
    with pytest.raises(TypeError, match="integer or boolean type"):
        lc.jit(lambda x, i: x[i])(x, np.float32(1))
    with pytest.raises(TypeError, match="slice indices must be integers"):
        x[0.5:]
    with pytest.raises(TypeError, match="non-tuple sequence"):
        x[[0, slice(None)]]
    with pytest.raises(TypeError, match="must be an integer, slice"):
        x["a"]
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[np.ones(3, bool)]
    with pytest.raises(IndexError, match="shape mismatch"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="static start/stop/step"):
        lc.jit(lambda x, i: x[i:])(x, np.int32(1))
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        x[::0]
    with pytest.raises(TypeError, match="immutable"):
        x[0] = 1
    # Iteration stops at the static bound.
    assert len(list(asarray_internal(np.float32([1, 2, 3])))) == 3


def test_traced_boolean_mask_errors():
    for fn in (lambda x: x[x > 0], lambda x: x.at[x > 0].set(0.0)):
        with pytest.raises(ix.NonConcreteBooleanIndexError,
                           match=r"(?s)concrete.*where\(mask, x, fill\).*nonzero") as info:
            lc.jit(fn)(np.float32([1, -1]))
        assert isinstance(info.value, IndexError)
    # Under vmap the mask is traced too.
    with pytest.raises(IndexError, match="concrete"):
        lc.vmap(lambda x: x[x > 0])(np.float32([[1, -1]]))


# --- take and friends ----------------------------------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_take(axis):
    a = A[0]
    i = np.int32([[2, -1], [0, 1]])
    check(lambda a, i: ix.take(a, i, axis=axis), [a, i],
          lambda a, i: np.take(a, i, axis=axis), vmap=axis == 1)
    big = np.int32([0, 7, -8, -1])
    want_wrap = np.take(a, big, axis=axis, mode="wrap")
    assert_same(ix.take(a, big, axis=axis, mode="wrap"), want_wrap)
    assert_same(ix.take(a, big, axis=axis, mode="clip"), np.take(a, big, axis=axis, mode="clip"))
    # Out-of-bound indices read the fill value: index a copy padded with it.
    flat, ax = (a.ravel(), 0) if axis is None else (a, axis)
    n = flat.shape[ax]
    padded = np.concatenate([flat, np.full_like(np.take(flat, [0], axis=ax), -3)], ax)
    far = big * 2
    want = np.take(padded, np.where((-n <= far) & (far < n), far % n, n), axis=ax)
    assert_same(ix.take(a, far, axis=axis, fill_value=-3), want)


def test_take_errors_and_edges():
    with pytest.raises(TypeError, match="integer"):
        ix.take(A, np.float32([0]))
    with pytest.raises(NotImplementedError, match="raise"):
        ix.take(A, np.int32([0]), mode="raise")
    with pytest.raises(ValueError, match="Invalid mode"):
        ix.take(A, np.int32([0]), mode="nope")
    with pytest.raises(TypeError, match="list"):
        ix.take([1, 2], np.int32([0]))
    assert_same(ix.take(np.float32([1]), np.int32([[]])), np.zeros((1, 0), np.float32))
    assert_same(ix.take(np.int32([4, 5]), np.int32(1)), np.int32(5))


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_take_along_axis(axis):
    a = np.float32([[0.5, 3.0, -1.0, 2.0], [4.0, -2.0, 1.5, 0.0], [1.0, 1.0, 9.0, -3.0]])
    order = (np.argsort(a, axis=axis) if axis is not None else np.argsort(a, axis=None)
             ).astype(np.int32)
    check(lambda a, i: ix.take_along_axis(a, i, axis=axis), [a, order],
          lambda a, i: np.take_along_axis(a, i, axis=axis), vmap=axis is not None)


def test_take_along_axis_broadcast_modes_errors():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    i = np.int32([[1], [-1], [9]])
    assert_same(ix.take_along_axis(a, i, 1), np.float32([[1], [7], [np.nan]]))
    assert_same(ix.take_along_axis(a, i, 1, mode="clip"), np.float32([[1], [7], [11]]))
    assert_same(ix.take_along_axis(a, i, 1, fill_value=0), np.float32([[1], [7], [0]]))
    row = np.int32([[0, 3]])  # broadcast over the rows of `a`
    assert_same(ix.take_along_axis(a, row, 1), np.take_along_axis(a, row, 1))
    col = a[:1]  # `a` broadcast over the rows of the indices
    assert_same(ix.take_along_axis(col, i[:2], 1), np.take_along_axis(col, i[:2], 1))
    with pytest.raises(ValueError, match="same number of dimensions"):
        ix.take_along_axis(a, np.int32([0]), 1)
    with pytest.raises(TypeError, match="integer"):
        ix.take_along_axis(a, np.float32([[0]]), 1)


def test_put_along_axis():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    i = np.int32([[1], [3], [0]])
    v = np.float32([[-1], [-2], [-3]])
    want = a.copy()
    np.put_along_axis(want, i, v, axis=1)
    check(lambda a, v: ix.put_along_axis(a, i, v, 1, inplace=False), [a, v],
          lambda a, v: np.where(want == a, a, np.broadcast_to(v, a.shape)),
          diff_argnums=(0, 1), vmap=False)
    flat = a.copy()
    np.put_along_axis(flat, np.int32([5, 0]), 7.0, axis=None)
    assert_same(ix.put_along_axis(a, np.int32([5, 0]), 7.0, None, inplace=False), flat)
    with pytest.raises(ValueError, match="inplace=False"):
        ix.put_along_axis(a, i, v, 1)


def test_put():
    a = np.zeros((2, 3), np.int32)
    assert_same(ix.put(a, np.int32([0, 4, 9]), np.int32([7, 8]), inplace=False),
                np.int32([[7, 0, 0], [0, 8, 7]]))
    want = a.copy()
    np.put(want, [1, 8], [5, 6], mode="wrap")
    assert_same(ix.put(a, np.int32([1, 8]), np.int32([5, 6]), mode="wrap", inplace=False), want)
    with pytest.raises(ValueError, match="inplace=False"):
        ix.put(a, np.int32([0]), 1)
    with pytest.raises(ValueError, match="mode"):
        ix.put(a, np.int32([0]), 1, mode="x", inplace=False)


def test_concrete_lamella_index_arrays():
    # lamella Arrays (not only NumPy ones) work as integer and boolean indices.
    x = asarray_internal(A)
    i = asarray_internal(np.int32([1, -1]))
    assert_same(x[:, i], A[:, [1, -1]])
    assert_same(x[asarray_internal(A > 20)], A[A > 20])
    assert_same(x[asarray_internal(np.int32(1)), 2], A[1, 2])
    assert_same(x[:, [asarray_internal(np.int32(0)), 2]], A[:, [0, 2]])


def test_weak_type_kept():
    weak = lax.full((3,), 2.0)
    assert aval_of(weak[1:]).weak_type and aval_of(weak[[0, 2]]).weak_type
    assert aval_of(weak.at[0].set(1)).weak_type


def test_at_update_of_a_leading_slice_from_zero():
    # A unit-step slice from 0 adds no scatter index, yet selects only part of the
    # array: it must scatter, not update the whole array.
    x = np.arange(5, dtype=np.float32)
    y = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(np.asarray(L(x).at[:1].set(np.float32([9]))),
                                  [9, 1, 2, 3, 4])
    got = lc.jit(lambda a: a.at[:2].add(1.0))(x)
    np.testing.assert_array_equal(np.asarray(got), [1, 2, 2, 3, 4])
    want = y.copy()
    want[:1, :2] *= 10
    np.testing.assert_array_equal(np.asarray(lc.jit(lambda a: a.at[:1, :2].multiply(10.0))(y)),
                                  want)
    grad = lc.grad(lambda a: a.at[:2].set(a[:2] ** 2).sum())(x)
    np.testing.assert_array_equal(np.asarray(grad), [0, 2, 1, 1, 1])
