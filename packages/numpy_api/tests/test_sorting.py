"""Sorting, searching and masked selection against NumPy: values on generated data
(ties, NaNs, several dtypes, empty and 0-d), the `size=` forms under jit and
vmap, derivatives of sort and partition, and the errors."""

import numpy as np
import pytest
from checks import check
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lamella.core as lc
from lamella.core.errors import ConcretizationTypeError
from lamella.numpy import sorting as s
from lamella.numpy.util import AxisError

SHAPES = st.sampled_from([(0,), (1,), (5,), (2, 3), (3, 0), (2, 2, 2)])
DTYPES = st.sampled_from([np.float32, np.int32, np.bool_, np.float16])
SETTINGS = settings(max_examples=8, deadline=None)


def _elements(dtype):
    if dtype == np.bool_:
        return st.booleans()
    if np.dtype(dtype).kind == "i":
        return st.integers(-3, 3)  # few values: many ties
    return st.sampled_from([-2.0, -0.0, 0.0, 1.5, 3.0, np.nan, np.inf])


@st.composite
def arrays(draw, shapes=SHAPES, dtypes=DTYPES):
    dtype = draw(dtypes)
    return draw(hnp.arrays(dtype, draw(shapes), elements=_elements(dtype)))


def assert_same(got, want):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_array_equal(got, want)


# --- sort, argsort, lexsort, partition ---------------------------------------------------
@SETTINGS
@given(arrays(), st.sampled_from([-1, 0, None]))
def test_sort_and_argsort_match_numpy(x, axis):
    if x.ndim == 0:
        return
    assert_same(s.sort(x, axis), np.sort(x, axis))
    assert_same(s.argsort(x, axis), np.argsort(x, axis, kind="stable"))
    flat = x.ravel() if axis is None else x
    ax = 0 if axis is None else axis
    # Descending keeps ties in their original order: a stable sort of the negated keys.
    want = np.flip(np.sort(flat, ax), ax)
    assert_same(s.sort(x, axis, descending=True), want)
    order = s.argsort(x, axis, descending=True)
    assert_same(np.take_along_axis(flat, np.asarray(order), ax), want)
    if x.dtype != np.bool_ and flat.size and not np.isnan(flat.astype(np.float32)).any():
        assert_same(order, np.argsort(-flat.astype(np.float64), ax, kind="stable"))


def test_sort_orders_nans_zeros_and_complex_like_numpy():
    x = np.float32([np.nan, 1, -0.0, -np.inf, 0.0, -np.nan, 2])
    assert_same(s.sort(x), np.sort(x))
    assert_same(s.argsort(x), np.argsort(x, kind="stable"))
    c = np.complex64([1 + 2j, 1 + 1j, complex(np.nan, 0), -1 + 5j, 1 + 1j])
    assert_same(s.sort(c), np.sort(c))
    assert_same(s.sort_complex(np.int32([[3, 1], [0, -2]])),
                np.sort_complex(np.int32([[3, 1], [0, -2]])).astype(np.complex64))
    assert s.sort_complex(np.float32([2, 1])).dtype == np.complex64


def test_sort_dtypes_and_scalars():
    assert s.sort(np.float16([2, 1])).dtype == np.float16
    assert s.argsort(np.float32([2, 1])).dtype == np.int32
    with lc.enable_x64():
        assert s.argsort(np.float32([2, 1])).dtype == np.int64
    with pytest.raises(AxisError):
        s.sort(np.float32(1.0))
    with pytest.raises(AxisError):
        s.argsort(np.zeros((2, 2), np.float32), axis=2)
    with pytest.raises(ValueError, match="order"):
        s.sort(np.float32([1]), order="x")


@SETTINGS
@given(st.integers(1, 3), st.sampled_from([(4,), (2, 3)]), st.data())
def test_lexsort_matches_numpy(nkeys, shape, data):
    keys = [data.draw(hnp.arrays(np.int32, shape, elements=st.integers(0, 2)))
            for _ in range(nkeys)]
    for axis in (-1, 0):
        assert_same(s.lexsort(keys, axis), np.lexsort(keys, axis))
    assert_same(s.lexsort(np.stack(keys)), np.lexsort(np.stack(keys)))


def test_lexsort_errors_and_scalars():
    assert_same(s.lexsort([np.int32(3)]), 0)
    with pytest.raises(ValueError, match="same shape"):
        s.lexsort([np.int32([1, 2]), np.int32([1, 2, 3])])
    with pytest.raises(TypeError, match="len > 0"):
        s.lexsort([])


@SETTINGS
@given(arrays(st.sampled_from([(5,), (2, 4)]), st.sampled_from([np.float32, np.int32])),
       st.data())
def test_partition_property(x, data):
    n = x.shape[-1]
    kth = data.draw(st.integers(-n, n - 1))
    out = np.asarray(s.partition(x, kth))
    idx = np.asarray(s.argpartition(x, kth))
    np.testing.assert_array_equal(np.take_along_axis(x, idx, -1), out)
    k = kth % n
    want = np.sort(x, -1)
    np.testing.assert_array_equal(out[..., k], want[..., k])
    pivot = out[..., k:k + 1]
    # Before kth nothing compares greater, after kth nothing compares smaller (NaN last).
    assert not (np.sort(out[..., :k], -1) > pivot).any()
    assert not (out[..., k + 1:] < pivot).any()
    with pytest.raises(AxisError):
        s.partition(x, n)


def test_sort_and_partition_gradients_vmap_jit():
    x = np.float32([3.0, -1.0, 2.0, 0.5, 4.0])
    check(lambda a: s.sort(a), [x], np.sort)
    check(lambda a: s.sort(a, descending=True), [x], lambda a: np.sort(a)[::-1])
    check(lambda a: s.partition(a, 2), [x], lambda a: np.sort(a))
    check(lambda a: s.argsort(a), [x], np.argsort, diff_argnums=None)
    m = np.float32([[3, 1, 2], [0, 5, -1]])
    check(lambda a: s.sort(a, 0), [m], lambda a: np.sort(a, 0), vmap=False)


# --- searchsorted and digitize -----------------------------------------------------------
METHODS = ["scan", "scan_unrolled", "sort", "compare_all"]


@SETTINGS
@given(arrays(st.sampled_from([(0,), (1,), (6,)]), st.sampled_from([np.float32, np.int32])),
       arrays(st.sampled_from([(), (4,), (2, 3)]), st.sampled_from([np.float32, np.int32])),
       st.sampled_from(["left", "right"]), st.sampled_from(METHODS))
def test_searchsorted_matches_numpy(a, v, side, method):
    a = np.sort(a)
    want = np.searchsorted(a, v, side=side)
    got = s.searchsorted(a, v, side=side, method=method)
    assert got.dtype == np.int32
    assert_same(got, want)


def test_searchsorted_sorter_bool_and_complex():
    a = np.float32([3, 1, np.nan, 2])
    sorter = np.argsort(a)
    v = np.float32([2, np.nan, 0, 5])
    for side in ("left", "right"):
        assert_same(s.searchsorted(a, v, side, sorter=sorter),
                    np.searchsorted(a, v, side, sorter=sorter))
    assert_same(s.searchsorted(np.bool_([False, True, True]), True),
                np.searchsorted([False, True, True], True))
    c = np.sort(np.complex64([1 + 1j, 1 + 2j, 0 + 5j, 2]))
    w = np.complex64([1 + 1.5j, 2, -1])
    for method in METHODS:
        assert_same(s.searchsorted(c, w, method=method), np.searchsorted(c, w))


def test_searchsorted_jit_vmap():
    a = np.float32([0.0, 1.0, 1.0, 2.5, 4.0])
    v = np.float32([1.0, -2.0, 3.0, 1.0, 9.0, 2.5])
    for method in ("scan", "sort"):
        check(lambda v, method=method: s.searchsorted(a, v, method=method), [v],
              lambda v: np.searchsorted(a, v), diff_argnums=None)
    rows = np.float32([[0, 1, 2], [1, 1, 3]])
    for side in ("left", "right"):
        got = lc.vmap(lambda r, q, side=side: s.searchsorted(r, q, side))(rows, v[:2])
        assert_same(got, [np.searchsorted(r, q, side) for r, q in zip(rows, v[:2])])


def test_searchsorted_errors():
    with pytest.raises(ValueError, match="side"):
        s.searchsorted(np.float32([1, 2]), 1.0, side="middle")
    with pytest.raises(ValueError, match="1-dimensional"):
        s.searchsorted(np.zeros((2, 2), np.float32), 1.0)
    with pytest.raises(ValueError, match="method"):
        s.searchsorted(np.float32([1, 2]), 1.0, method="magic")


@SETTINGS
@given(arrays(st.sampled_from([(5,), (2, 3)]), st.sampled_from([np.float32])),
       st.booleans(), st.booleans())
def test_digitize_matches_numpy(x, right, decreasing):
    bins = np.float32([-1, 0, 1.5, 3])
    bins = bins[::-1].copy() if decreasing else bins
    assert_same(s.digitize(x, bins, right), np.digitize(x, bins, right))
    assert_same(s.digitize(x, bins, right, method="compare_all"), np.digitize(x, bins, right))


def test_digitize_errors_and_empty_bins():
    assert_same(s.digitize(np.float32([1, 2]), np.float32([])), [0, 0])
    with pytest.raises(ValueError, match="1-dimensional"):
        s.digitize(np.float32([1]), np.zeros((2, 2), np.float32))


# --- nonzero, argwhere, flatnonzero, where ----------------------------------------------
@SETTINGS
@given(arrays(st.sampled_from([(0,), (1,), (5,), (2, 3), (3, 0), (2, 2, 2)])))
def test_nonzero_family_matches_numpy(x):
    for got, want in zip(s.nonzero(x), np.nonzero(x)):
        assert_same(got, want)
        assert got.dtype == np.int32
    for got, want in zip(s.where(x), np.where(x)):
        assert_same(got, want)
    assert_same(s.argwhere(x), np.argwhere(x))
    assert_same(s.flatnonzero(x), np.flatnonzero(x))
    count = np.count_nonzero(x)
    for size in (0, 3):
        want = [np.concatenate([i[:size], np.full(max(size - count, 0), -1)])
                for i in np.nonzero(x)]
        for got, w in zip(s.nonzero(x, size=size, fill_value=-1), want):
            assert_same(got, w)
        padded = [np.concatenate([i[:size], np.zeros(max(size - count, 0), int)])
                  for i in np.nonzero(x)]
        assert_same(s.argwhere(x, size=size), np.stack(padded, -1).reshape(size, x.ndim))
        assert_same(s.flatnonzero(x, size=size, fill_value=7),
                    np.concatenate([np.flatnonzero(x)[:size],
                                    np.full(max(size - count, 0), 7)]))


def test_nonzero_scalar_fill_tuple_and_argwhere_scalar():
    x = np.int32([[0, 2], [3, 0]])
    got = s.nonzero(x, size=3, fill_value=(8, 9))
    assert_same(got[0], [0, 1, 8])
    assert_same(got[1], [1, 0, 9])
    assert_same(s.argwhere(np.float32(2.0)), np.argwhere(np.float32(2.0)))
    assert_same(s.argwhere(np.float32(0.0)), np.argwhere(np.float32(0.0)))
    with pytest.raises(ValueError, match="0d"):
        s.nonzero(np.int32(1))
    with pytest.raises(ValueError, match="fill_value"):
        s.nonzero(x, size=2, fill_value=(1, 2, 3))


def test_nonzero_size_under_jit_and_vmap():
    x = np.float32([[0, 1.5, 0, 2], [3, 0, 0, 0]])
    check(lambda a: s.nonzero(a, size=5, fill_value=-1), [x],
          lambda a: [np.int32([0, 0, 1, -1, -1]), np.int32([1, 3, 0, -1, -1])],
          diff_argnums=None)
    check(lambda a: s.argwhere(a, size=2), [x], lambda a: np.argwhere(a)[:2],
          diff_argnums=None, vmap=False)
    rows = np.int32([[0, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]])
    got = lc.vmap(lambda r: s.flatnonzero(r, size=2, fill_value=-1))(rows)
    assert_same(got, [[1, 2], [0, -1], [-1, -1]])


def test_data_dependent_shapes_need_size_under_jit():
    x = np.float32([0, 1, 2])
    for fn in (s.nonzero, s.argwhere, s.flatnonzero, s.where,
               lambda a: s.extract(a > 0, a), lambda a: s.compress(a > 0, a)):
        with pytest.raises(ConcretizationTypeError, match="size="):
            lc.jit(fn)(x)


def test_where_forms_and_errors():
    cond = np.bool_([True, False, True])
    assert_same(s.where(cond, np.int32([1, 2, 3]), np.int32(0)), [1, 0, 3])
    with pytest.raises(ValueError, match="both or neither"):
        s.where(cond, np.int32([1, 2, 3]))
    with pytest.raises(ValueError, match="both or neither"):
        s.where(cond, None, np.int32([1, 2, 3]))
    with pytest.raises(ValueError, match="size"):
        s.where(cond, 1, 2, size=2)


# --- compress and extract ----------------------------------------------------------------
@SETTINGS
@given(hnp.arrays(np.int32, (3, 4), elements=st.integers(-5, 5)),
       hnp.arrays(np.bool_, st.sampled_from([(2,), (3,), (4,)])),
       st.sampled_from([None, 0, 1]))
def test_compress_matches_numpy(a, cond, axis):
    n = a.size if axis is None else a.shape[axis]
    if cond[n:].any():
        with pytest.raises(ValueError):
            s.compress(cond, a, axis)
        return
    want = np.compress(cond, a, axis)
    assert_same(s.compress(cond, a, axis), want)
    size = min(len(cond), n)
    got = s.compress(cond, a, axis, size=size, fill_value=-9)
    k = want.shape[0 if axis is None else axis]
    pad_shape = list(want.shape)
    pad_shape[0 if axis is None else axis] = size - k
    padded = np.concatenate([want, np.full(pad_shape, -9, np.int32)], 0 if axis is None else axis)
    assert_same(got, padded)


def test_extract_and_compress_size_jit_vmap():
    a = np.float32([[1, -2], [3, -4]])
    assert_same(s.extract(a > 0, a), np.extract(a > 0, a))
    check(lambda x: s.extract(x > 0, x, size=3, fill_value=-1), [a],
          lambda x: np.float32([1, 3, -1]))
    with pytest.raises(ValueError, match="size"):
        s.compress(np.bool_([True]), np.float32([1, 2]), size=2)
    with pytest.raises(ValueError, match="1-D"):
        s.compress(np.bool_([[True]]), np.float32([1, 2]))
