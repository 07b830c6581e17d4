"""Set operations, bincount and histograms against NumPy: values on generated data
(ties, NaNs, empty inputs), the `size=`/`length=` forms under jit and vmap,
gradients of histogram and bincount weights, and the errors."""

import numpy as np
import pytest
from checks import check
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lamella.core as lc
from lamella.core.errors import ConcretizationTypeError
from lamella.numpy import setops as so

SETTINGS = settings(max_examples=10, deadline=None)
FEW = settings(max_examples=5, deadline=None)
FLOATS = st.sampled_from([-1.5, 0.0, 2.0, 3.0, np.nan])


SHAPES = st.sampled_from([(0,), (1,), (6,), (2, 3)])


@st.composite
def arrays(draw, shapes=SHAPES):
    dtype = draw(st.sampled_from([np.int32, np.float32, np.bool_]))
    elements = {np.int32: st.integers(-2, 3), np.float32: FLOATS, np.bool_: st.booleans()}
    return draw(hnp.arrays(dtype, draw(shapes), elements=elements[dtype]))


def assert_same(got, want):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_array_equal(got, want)


# --- unique ------------------------------------------------------------------------------
@SETTINGS
@given(arrays())
def test_unique_matches_numpy(x):
    got = so.unique(x, return_index=True, return_inverse=True, return_counts=True)
    want = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    for g, w in zip(got, want):
        assert_same(g, w)
    # NumPy's unique_* may leave values unsorted; compare with its sorted unique.
    want = np.unique(x, True, True, True, equal_nan=False)
    for g, w in zip(so.unique_all(x), want):
        assert_same(g, w)
    assert_same(so.unique_values(x), want[0])
    assert_same(so.unique_counts(x).counts, want[3])
    assert_same(so.unique_inverse(x).inverse_indices, want[2])


@SETTINGS
@given(arrays(), st.sampled_from([1, 4, 8]))
def test_unique_size_pads(x, size):
    want_v, want_i, want_c = np.unique(x, return_index=True, return_counts=True)
    if x.size == 0:
        assert_same(so.unique(x, size=size, fill_value=5), np.full(size, 5, x.dtype))
        with pytest.raises(ValueError, match="fill_value"):
            so.unique(x, size=size)
        return
    k = len(want_v)
    pad = max(size - k, 0)
    v, i, c = so.unique(x, return_index=True, return_counts=True, size=size)
    assert_same(v, np.concatenate([want_v[:size], np.full(pad, want_v[0])]))
    assert_same(i, np.concatenate([want_i[:size], np.full(pad, want_i[0])]))
    assert_same(c, np.concatenate([want_c[:size], np.zeros(pad, int)]))
    assert_same(so.unique(x, size=size, fill_value=0),
                np.concatenate([want_v[:size], np.zeros(pad, x.dtype)]))


def test_unique_axis_matches_numpy():
    m = np.int32([[1, 2], [3, 4], [1, 2], [0, 9]])
    for axis in (0, 1, -1):
        for g, w in zip(so.unique(m, return_index=True, return_inverse=True,
                                  return_counts=True, axis=axis),
                        np.unique(m, return_index=True, return_inverse=True,
                                  return_counts=True, axis=axis)):
            assert_same(g, np.reshape(w, -1) if np.ndim(w) == 1 else w)
    empty_cols = np.zeros((3, 0), np.float32)
    for g, w in zip(so.unique(empty_cols, axis=0, return_counts=True),
                    np.unique(empty_cols, axis=0, return_counts=True)):
        assert_same(g, w)


def test_unique_complex_nan_and_size_under_jit_vmap():
    c = np.complex64([1 + 1j, complex(1, np.nan), 2, complex(np.nan, 0), 1 + 1j])
    assert_same(so.unique(c), np.unique(c))
    x = np.float32([3, 1, 3, np.nan, 1, np.nan])
    check(lambda a: so.unique(a, size=4, return_counts=True, return_inverse=True), [x],
          lambda a: [np.float32([1, 3, np.nan, 1]), np.int32([1, 0, 1, 2, 0, 2]),
                     np.int32([2, 2, 2, 0])], diff_argnums=None)
    rows = np.int32([[2, 2, 1], [0, 5, 5]])
    assert_same(lc.vmap(lambda r: so.unique(r, size=3, fill_value=-1))(rows),
                [[1, 2, -1], [0, 5, -1]])


def test_unique_errors():
    with pytest.raises(ConcretizationTypeError, match="size="):
        lc.jit(so.unique)(np.int32([1, 2]))
    with pytest.raises(np.exceptions.AxisError):
        so.unique(np.int32([1, 2]), axis=1)


# --- two-set operations ------------------------------------------------------------------
@st.composite
def pairs(draw):
    dtype = draw(st.sampled_from([np.int32, np.float32]))
    elements = st.integers(-2, 4) if dtype == np.int32 else FLOATS
    shapes = st.sampled_from([(0,), (1,), (5,), (2, 2)])
    return (draw(hnp.arrays(dtype, draw(shapes), elements=elements)),
            draw(hnp.arrays(dtype, draw(shapes), elements=elements)))


@FEW
@given(pairs())
def test_set_operations_match_numpy(ab):
    a, b = ab
    assert_same(so.union1d(a, b), np.union1d(a, b))
    assert_same(so.setdiff1d(a, b), np.setdiff1d(a, b))
    assert_same(so.setxor1d(a, b), np.setxor1d(a, b))
    for g, w in zip(so.intersect1d(a, b, return_indices=True),
                    np.intersect1d(a, b, return_indices=True)):
        assert_same(g, w)
    assert_same(so.isin(a, b), np.isin(a, b))
    assert_same(so.isin(a, b, invert=True), np.isin(a, b, invert=True))
    assert_same(so.isin(a, b, method="compare_all"), np.isin(a, b))
    ua, ub = np.unique(a), np.unique(b)
    assert_same(so.setdiff1d(ua, ub, assume_unique=True), np.setdiff1d(ua, ub, True))
    assert_same(so.setxor1d(ua, ub, assume_unique=True), np.setxor1d(ua, ub, True))
    assert_same(so.intersect1d(ua, ub, assume_unique=True), np.intersect1d(ua, ub, True))


@FEW
@given(pairs(), st.sampled_from([0, 2, 7]))
def test_set_operations_with_size_pad(ab, size):
    a, b = ab

    def padded(want, fill):
        return np.concatenate([want[:size], np.full(max(size - len(want), 0), fill, a.dtype)])

    for fn, ref in ((so.union1d, np.union1d), (so.setdiff1d, np.setdiff1d),
                    (so.setxor1d, np.setxor1d), (so.intersect1d, np.intersect1d)):
        want = ref(a, b)
        assert_same(fn(a, b, size=size, fill_value=9), padded(want, 9))
    for fn, ref in ((so.setxor1d, np.setxor1d), (so.intersect1d, np.intersect1d)):
        want = ref(a, b)
        assert_same(fn(a, b, size=size), padded(want, want[0] if len(want) else 0))
    assert_same(so.setdiff1d(a, b, size=size), padded(np.setdiff1d(a, b), 0))
    if a.size and b.size:
        _, i1, i2 = so.intersect1d(a, b, return_indices=True, size=size)
        _, w1, w2 = np.intersect1d(a, b, return_indices=True)
        assert_same(i1, np.concatenate([w1[:size], np.full(max(size - len(w1), 0), a.size)]))
        assert_same(i2, np.concatenate([w2[:size], np.full(max(size - len(w2), 0), b.size)]))


def test_set_operations_under_jit_and_vmap():
    a, b = np.int32([4, 1, 1, 3, 7]), np.int32([3, 7, 7, 0])
    check(lambda a, b: so.setdiff1d(a, b, size=4, fill_value=-1), [a, b],
          lambda a, b: np.int32([1, 4, -1, -1]), diff_argnums=None, vmap=False)
    check(lambda a, b: so.intersect1d(a, b, size=3, return_indices=True), [a, b],
          lambda a, b: [np.int32([3, 7, 3]), np.int32([3, 4, 5]), np.int32([0, 1, 4])],
          diff_argnums=None, vmap=False)
    check(lambda a: so.isin(a, b), [a], lambda a: np.isin(a, b), diff_argnums=None)
    jitted = lc.jit(lambda a, b: (so.union1d(a, b, size=6), so.setxor1d(a, b, size=4)))
    for got, want in zip(jitted(a, b), (np.int32([0, 1, 3, 4, 7, 0]), np.int32([0, 1, 4, 0]))):
        assert_same(got, want)
    with pytest.raises(ConcretizationTypeError, match="size="):
        lc.jit(so.union1d)(a, b)
    with pytest.raises(ValueError, match="method"):
        so.isin(a, b, method="magic")


# --- bincount ----------------------------------------------------------------------------
@SETTINGS
@given(hnp.arrays(np.int32, st.sampled_from([(0,), (1,), (7,)]), elements=st.integers(0, 5)),
       st.sampled_from([0, 3, 9]))
def test_bincount_matches_numpy(x, minlength):
    assert_same(so.bincount(x, minlength=minlength), np.bincount(x, minlength=minlength))
    w = np.linspace(-1, 2, x.size).astype(np.float32)
    np.testing.assert_allclose(so.bincount(x, w, minlength=minlength),
                               np.bincount(x, w, minlength=minlength), rtol=1e-6)
    want = np.bincount(x, minlength=4)[:4]
    assert_same(so.bincount(x, length=4), np.pad(want, (0, 4 - len(want))))


def test_bincount_length_jit_vmap_grad_and_errors():
    x = np.int32([0, 2, 2, 5, 1])
    w = np.float32([0.5, 1.0, 2.0, -1.0, 3.0])
    check(lambda w: so.bincount(x, w, length=4), [w],
          lambda w: np.bincount(x, w)[:4].astype(np.float32))
    check(lambda x: so.bincount(x, length=6), [x], lambda x: np.bincount(x, minlength=6),
          diff_argnums=None)
    assert_same(so.bincount(np.int32([-3, 1])), [1, 1])  # negatives count as 0, as in JAX
    with pytest.raises(ConcretizationTypeError, match="length="):
        lc.jit(so.bincount)(x)
    with pytest.raises(TypeError, match="integer"):
        so.bincount(np.float32([1.0]))
    with pytest.raises(ValueError, match="1-dimensional"):
        so.bincount(np.zeros((2, 2), np.int32))
    with pytest.raises(ValueError, match=r"\(3,\).*\(5,\)"):
        so.bincount(x, np.float32([1, 2, 3]))


# --- histograms --------------------------------------------------------------------------
@given(hnp.arrays(np.float32, st.sampled_from([(1,), (8,), (2, 3)]),
                  elements=st.sampled_from([-1.0, 0.0, 0.5, 2.0, 3.0])),
       st.sampled_from([1, 3, np.float32([-1, 0.5, 2, 2.5])]),
       st.sampled_from([None, (0.0, 2.0), (1.0, 1.0)]), st.booleans())
@FEW
def test_histogram_matches_numpy(a, bins, range_, density):
    w = np.linspace(0.5, 2, a.size).astype(np.float32).reshape(a.shape)
    for weights in (None, w):
        got_h, got_e = so.histogram(a, bins, range_, weights, density)
        want_h, want_e = np.histogram(a, bins, range_, weights=weights, density=density)
        np.testing.assert_allclose(got_e, want_e, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got_h, want_h, rtol=1e-5, atol=1e-6)
        assert got_h.dtype == np.float32
    np.testing.assert_allclose(so.histogram_bin_edges(a, bins, range_),
                               np.histogram_bin_edges(a, bins, range_), rtol=1e-6, atol=1e-6)


def test_histogram_jit_vmap_and_weight_gradients():
    a = np.float32([0.1, 0.4, 0.4, 0.9, 0.6, 0.25])
    w = np.float32([1.0, 2.0, 0.5, 1.5, 3.0, 1.0])
    edges = np.float32([0, 0.3, 0.5, 1])
    check(lambda w: so.histogram(a, edges, weights=w)[0], [w],
          lambda w: np.histogram(a, edges, weights=w)[0].astype(np.float32))
    check(lambda w: so.histogram(a, edges, weights=w, density=True)[0], [w],
          lambda w: np.histogram(a, edges, weights=w, density=True)[0].astype(np.float32),
          vmap=False)
    check(lambda a: so.histogram(a, 3, (0.0, 1.0)), [a],
          lambda a: [np.histogram(a, 3, (0, 1))[0].astype(np.float32),
                     np.histogram(a, 3, (0, 1))[1]], diff_argnums=None, vmap=False)
    with pytest.raises(ValueError, match="shape"):
        so.histogram(a, 3, weights=w[:2])
    with pytest.raises(ValueError, match="range"):
        so.histogram(a, 3, range=(1.0,))
    with pytest.raises(NotImplementedError):
        so.histogram(a, "auto")


def test_histogram2d_and_dd_match_numpy():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0, 1, 20).astype(np.float32), rng.uniform(-1, 1, 20).astype(np.float32)
    w = rng.uniform(0, 1, 20).astype(np.float32)
    for bins, weights, density in ((3, None, False), ([2, 4], w, False),
                                   (np.float32([0, 0.25, 0.5, 1.0]), w, True)):
        got = so.histogram2d(x, y, bins, weights=weights, density=density)
        want = np.histogram2d(x, y, bins, weights=weights, density=density)
        for g, e in zip(got, want):
            np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    sample = np.stack([x, y, w], 1)
    got_h, got_e = so.histogramdd(sample, (2, 3, 2), [(0, 1), None, (0, 0.5)])
    want_h, want_e = np.histogramdd(sample, (2, 3, 2), [(0, 1), None, (0, 0.5)])
    assert_same(got_h, want_h.astype(np.int32))
    for g, e in zip(got_e, want_e):
        np.testing.assert_allclose(g, e, rtol=1e-6)
    with pytest.raises(ValueError, match="one entry per dimension"):
        so.histogramdd(sample, (2, 3))
    with pytest.raises(ValueError, match=r"\(N, D\)"):
        so.histogramdd(x)
