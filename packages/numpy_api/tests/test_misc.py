"""The remaining jax.numpy names (elementwise_extras, windows, index_tricks,
bit_packing, host_io, scalar_types) against NumPy: elementwise
functions (values, gradients, jit, vmap), windows, index helpers and their errors,
bit packing, host I/O, printing and the dtype/type names."""

import importlib

import hypothesis.extra.numpy as hnp
import ml_dtypes
import numpy as np
import pytest
from checks import assert_close, check
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella.core.errors import ConcretizationTypeError
from lamella.numpy import dtypes as ldt

m = importlib.import_module("lamella.numpy")

F32 = np.float32([-2.5, -1.25, -0.5, 0.3, 0.5, 1.5, 2.75, 3.7])
SMALL_INTS = hnp.arrays(np.int32, st.sampled_from([(), (0,), (5,)]),
                        elements=st.integers(-60, 60))


# --- elementwise ---------------------------------------------------------------------
def test_fabs_values_grads_and_dtypes():
    check(m.fabs, [F32], np.fabs)
    assert_close(m.fabs(np.int32([-3, 2])), [3.0, 2.0], np.float32)
    assert_close(m.fabs(np.float16([-1.5])), [1.5], np.float16)
    with pytest.raises(TypeError, match="fabs does not support complex"):
        m.fabs(np.complex64([1j]))


def test_modf_matches_numpy_with_gradients():
    frac, whole = m.modf(F32)
    want_frac, want_whole = np.modf(F32)
    assert_close(frac, want_frac, np.float32)
    assert_close(whole, want_whole, np.float32)
    check(lambda x: m.modf(x)[0], [F32], lambda x: np.modf(x)[0])
    grad = lc.grad(lambda x: m.modf(x)[0] * 3.0 + m.modf(x)[1])(np.float32(1.25))
    assert float(grad) == 3.0


def test_spacing_and_i0():
    x = np.float32([-3.0, -1.0, 0.5, 1.0, 1e4])
    assert_close(m.spacing(x), np.spacing(x), np.float32, tol=0)
    check(m.i0, [F32], np.i0, rtol=2e-6, atol=1e-6, grad_rtol=1e-5, grad_atol=1e-5)
    # d/dx I0 = I1; at x = 1 that is 0.565159...
    assert abs(float(lc.grad(m.i0)(np.float32(1.0))) - 0.5651591) < 1e-5


@settings(max_examples=15, deadline=None)
@given(SMALL_INTS, SMALL_INTS)
def test_gcd_lcm_match_numpy(a, b):
    if a.shape != b.shape and a.ndim and b.ndim:
        b = np.int32(b.flat[0] if b.size else 7)
    assert_close(m.gcd(a, b), np.gcd(a, b), np.int32, tol=0)
    assert_close(m.lcm(a, b), np.lcm(a, b), np.int32, tol=0)


def test_gcd_lcm_jit_vmap_dtypes_and_errors():
    a, b = np.int32([12, -18, 0, 7, 0]), np.int32([8, 12, 5, 0, 0])
    check(m.gcd, [a, b], np.gcd, diff_argnums=None)
    check(m.lcm, [a, b], np.lcm, diff_argnums=None)
    assert_close(m.gcd(np.uint8([12, 9]), np.uint8([18, 6])), [6, 3], np.uint8, tol=0)
    assert_close(m.gcd(np.int32([12]), 8), [4], np.int32, tol=0)  # weak scalar
    with pytest.raises(TypeError, match="gcd requires integer"):
        m.gcd(np.float32([1.0]), 2)
    with pytest.raises(TypeError, match="lcm requires integer"):
        m.lcm(np.int32([1]), 2.5)


def test_bitwise_count():
    x = np.int32([0, 1, 7, -1, -8, 2**31 - 1])
    assert_close(m.bitwise_count(x), np.bitwise_count(x), np.uint8, tol=0)
    u = np.uint16([0, 65535, 256])
    assert_close(m.bitwise_count(u), np.bitwise_count(u), np.uint8, tol=0)
    assert_close(lc.jit(m.bitwise_count)(x), np.bitwise_count(x), np.uint8, tol=0)
    with pytest.raises(TypeError, match="integer"):
        m.bitwise_count(np.float32([1.0]))


# --- windows -------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_windows_match_numpy(name):
    for M in (0, 1, 6, 7):
        assert_close(getattr(m, name)(M), getattr(np, name)(M), np.float32, tol=2e-6)
    with pytest.raises(ConcretizationTypeError, match="window length"):
        lc.jit(getattr(m, name))(4)


def test_kaiser_matches_numpy_with_traced_beta():
    for M, beta in ((0, 1.0), (1, 3.0), (6, 0.0), (7, 8.6)):
        assert_close(m.kaiser(M, beta), np.kaiser(M, beta), np.float32, tol=2e-5)
    got = lc.jit(lambda b: m.kaiser(7, b))(np.float32(8.6))
    assert_close(got, np.kaiser(7, 8.6), np.float32, tol=2e-5)


# --- construction helpers ------------------------------------------------------------
def test_vander_values_grads_and_errors():
    x = np.float32([0.0, -1.5, 2.0, 0.5])
    check(m.vander, [x], np.vander, grad_rtol=1e-5, grad_atol=1e-5)
    check(lambda x: m.vander(x, 3, increasing=True), [x],
          lambda x: np.vander(x, 3, increasing=True))
    xi = np.int32([1, 2, -3])
    assert_close(m.vander(xi, 4), np.vander(xi, 4), np.int32, tol=0)
    assert m.vander(x, 0).shape == (4, 0)
    with pytest.raises(ValueError, match="one-dimensional"):
        m.vander(np.ones((2, 2), np.float32))


def test_fill_diagonal_matches_numpy():
    cases = [((3, 3), 5, False), ((5, 2), [1, 2, 3], True), ((5, 2), 7, False),
             ((2, 4), [8, 9], False), ((3, 3, 3), 4, False)]
    for shape, val, wrap in cases:
        a = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
        want = a.copy()
        np.fill_diagonal(want, val, wrap=wrap)
        got = m.fill_diagonal(a, np.int32(val), wrap=wrap, inplace=False)
        assert_close(got, want, np.int32, tol=0)
    a = np.zeros((3, 3), np.float32)
    got = lc.jit(lambda a, v: m.fill_diagonal(a, v, inplace=False))(a, np.float32(2.5))
    assert_close(got, np.eye(3) * 2.5, np.float32)
    with pytest.raises(ValueError, match="inplace=False"):
        m.fill_diagonal(a, 1.0)
    with pytest.raises(ValueError, match="at least 2-d"):
        m.fill_diagonal(np.zeros(3, np.float32), 1.0, inplace=False)
    with pytest.raises(ValueError, match="equal length"):
        m.fill_diagonal(np.zeros((2, 2, 3), np.float32), 1.0, inplace=False)


def test_place_matches_numpy_and_errors():
    arr = np.arange(6, dtype=np.int32).reshape(2, 3)
    mask = arr % 2 == 1
    want = arr.copy()
    np.place(want, mask, [40, 50])
    assert_close(m.place(arr, mask, np.int32([40, 50]), inplace=False), want, np.int32, tol=0)
    with pytest.raises(ValueError, match="inplace=False"):
        m.place(arr, mask, np.int32([1]))
    with pytest.raises(ValueError, match="empty"):
        m.place(arr, mask, np.int32([]), inplace=False)
    with pytest.raises(ConcretizationTypeError, match="mask"):
        lc.jit(lambda mk: m.place(arr, mk, np.int32([1]), inplace=False))(mask)


def test_ravel_multi_index_modes_orders_and_errors():
    rows, cols = np.int32([0, 1, 2, 1]), np.int32([3, 0, 2, 1])
    for order in ("C", "F"):
        assert_close(m.ravel_multi_index((rows, cols), (3, 4), order=order),
                     np.ravel_multi_index((rows, cols), (3, 4), order=order), np.int32, tol=0)
    bad = (np.int32([-1, 5]), np.int32([4, 1]))
    for mode in ("wrap", "clip"):
        want = np.ravel_multi_index(bad, (3, 4), mode=mode)
        got = lc.jit(lambda i, j, mode=mode: m.ravel_multi_index((i, j), (3, 4), mode=mode))(*bad)
        assert_close(got, want, np.int32, tol=0)
    with pytest.raises(ValueError, match="out of bounds"):
        m.ravel_multi_index(bad, (3, 4))
    with pytest.raises(ConcretizationTypeError, match="mode='raise'"):
        lc.jit(lambda i: m.ravel_multi_index((i, i), (3, 4)))(rows)
    with pytest.raises(ValueError, match="2 index arrays for 3"):
        m.ravel_multi_index((rows, cols), (3, 4, 5))
    with pytest.raises(TypeError, match="integers"):
        m.ravel_multi_index((np.float32([1.0]),), (3,))


def test_unravel_index_matches_numpy_and_clips():
    idx = np.int32([0, 5, 11, 7])
    got = lc.jit(lambda i: m.unravel_index(i, (3, 4)))(idx)
    for g, w in zip(got, np.unravel_index(idx, (3, 4))):
        assert_close(g, w, np.int32, tol=0)
    # JAX semantics: negative indices wrap, out-of-range ones clip.
    got = m.unravel_index(np.int32([-1, 12, -20]), (3, 4))
    assert [np.asarray(g).tolist() for g in got] == [[2, 2, 0], [3, 3, 0]]
    with pytest.raises(TypeError, match="integers"):
        m.unravel_index(np.float32([1.0]), (3, 4))


def test_mask_indices_and_ix():
    from lamella.numpy.creation import triu
    for k in (0, 1, -1):
        for g, w in zip(m.mask_indices(4, triu, k), np.mask_indices(4, np.triu, k)):
            assert_close(g, w, np.int32, tol=0)
    a, b = np.int32([0, 2]), np.int32([1, 0, 3])
    for g, w in zip(m.ix_(a, b), np.ix_(a, b)):
        assert_close(g, w, np.int32, tol=0)
    with pytest.raises(ValueError, match="1-dimensional"):
        m.ix_(np.zeros((2, 2), np.int32))
    with pytest.raises(NotImplementedError, match="boolean"):
        m.ix_(np.array([True, False]))
    assert m.s_[1:3] == np.s_[1:3] and m.index_exp[::2] == np.index_exp[::2]


def test_r_and_c():
    a, b = np.int32([1, 2]), np.int32([3, 4])
    cases = [
        (m.r_[1:4, 0, a], np.r_[1:4, 0, a]),
        (m.r_[0.0:1.0:5j], np.r_[0.0:1.0:5j]),
        (m.r_["0,2", a, b], np.r_["0,2", a, b]),
        (m.r_["1,2,0", a, b], np.r_["1,2,0", a, b]),
        (m.r_["-1", np.ones((2, 2), np.int32), np.zeros((2, 1), np.int32)],
         np.r_["-1", np.ones((2, 2), np.int32), np.zeros((2, 1), np.int32)]),
        (m.c_[a, b], np.c_[a, b]),
        (m.c_[np.ones((2, 2), np.int32), a], np.c_[np.ones((2, 2), np.int32), a]),
    ]
    for got, want in cases:
        np.testing.assert_array_equal(np.asarray(got), want)
        assert np.asarray(got).shape == want.shape
    with pytest.raises(ValueError, match="directive"):
        m.r_["x,y", a]
    with pytest.raises(ValueError, match="must come first"):
        m.r_[a, "0"]
    got = lc.jit(lambda x, y: m.r_[x, y])(a, b)
    np.testing.assert_array_equal(np.asarray(got), [1, 2, 3, 4])


# --- bits ----------------------------------------------------------------------------
@settings(max_examples=10, deadline=None)
@given(hnp.arrays(np.bool_, st.sampled_from([(0,), (11,), (3, 10)])),
       st.sampled_from([None, 0, -1]), st.sampled_from(["big", "little"]))
def test_packbits_unpackbits_roundtrip(bits, axis, bitorder):
    packed = m.packbits(bits, axis=axis, bitorder=bitorder)
    assert_close(packed, np.packbits(bits, axis=axis, bitorder=bitorder), np.uint8, tol=0)
    unpacked = m.unpackbits(packed, axis=axis, bitorder=bitorder)
    want = np.unpackbits(np.asarray(packed), axis=axis, bitorder=bitorder)
    assert_close(unpacked, want, np.uint8, tol=0)


def test_unpackbits_count_jit_and_errors():
    x = np.uint8([[176, 3], [1, 255]])
    for count in (None, 3, -2, 20):
        assert_close(m.unpackbits(x, axis=1, count=count),
                     np.unpackbits(x, axis=1, count=count), np.uint8, tol=0)
    assert_close(lc.jit(m.packbits)(np.int32([2, 0, -1])), np.packbits([1, 0, 1]), np.uint8,
                 tol=0)
    with pytest.raises(TypeError, match="uint8"):
        m.unpackbits(np.int32([1]))
    with pytest.raises(TypeError, match="integer or boolean"):
        m.packbits(np.float32([1.0]))
    with pytest.raises(ValueError, match="bitorder"):
        m.packbits(np.int32([1]), bitorder="middle")


# --- host I/O and printing -----------------------------------------------------------
def test_fromiter_fromstring_iterable_and_printing():
    assert_close(m.fromiter(iter(range(4)), np.int16), [0, 1, 2, 3], np.int16, tol=0)
    assert_close(m.fromstring("1.5, 2", sep=","), [1.5, 2.0], np.float32)
    with pytest.raises(TypeError):
        m.fromstring("1 2")  # sep is required
    x = m.fabs(np.float32([1.5, -2.0]))
    assert m.iterable(x) and m.iterable([1]) and not m.iterable(m.fabs(1.0))
    assert m.array_str(x) == np.array_str(np.float32([1.5, 2.0]))
    assert m.array_repr(x) == np.array_repr(np.float32([1.5, 2.0]))
    with m.printoptions(precision=2):
        assert m.get_printoptions()["precision"] == 2
    old = np.get_printoptions()["precision"]
    m.set_printoptions(precision=3)  # NumPy's options, which Arrays' reprs use
    try:
        assert np.get_printoptions()["precision"] == 3
    finally:
        m.set_printoptions(precision=old)


def test_fromfile_reads_on_the_host(tmp_path):
    np.int16([5, -1, 7]).tofile(tmp_path / "x.bin")
    assert_close(m.fromfile(tmp_path / "x.bin", dtype=np.int16), [5, -1, 7], np.int16, tol=0)
    assert_close(m.fromfile(tmp_path / "x.bin", dtype=np.int16, count=2), [5, -1], np.int16,
                 tol=0)


def test_save_load_roundtrip(tmp_path):
    from lamella.lax import Array
    x = m.fabs(np.float32([[1.5, -2.0]]))
    m.save(tmp_path / "x.npy", x)
    loaded = m.load(tmp_path / "x.npy")
    assert isinstance(loaded, Array)
    assert_close(loaded, [[1.5, 2.0]], np.float32)
    m.savez(tmp_path / "xs.npz", x, y=np.int32([3]))
    with m.load(tmp_path / "xs.npz") as z:
        np.testing.assert_array_equal(z["arr_0"], [[1.5, 2.0]])
        np.testing.assert_array_equal(z["y"], [3])


# --- types ---------------------------------------------------------------------------
def test_categories_and_scalar_types():
    assert ldt.issubdtype(np.float32, m.floating) and ldt.issubdtype(np.int8, m.integer)
    assert ldt.issubdtype(ldt.bfloat16, m.floating) and ldt.issubdtype(ldt.bfloat16, m.inexact)
    assert ldt.issubdtype(m.float8_e4m3fn, m.floating)
    assert not ldt.issubdtype(np.uint8, m.signedinteger)
    assert ldt.issubdtype(np.complex64, m.complexfloating)
    assert m.generic is np.generic and m.object_ is np.object_
    assert issubclass(m.ComplexWarning, Warning)
    assert np.dtype(m.double) == np.float64 and np.dtype(m.csingle) == np.complex64
    assert m.single(np.int32([1])).dtype == np.float32
    assert m.uint(np.int32([1])).dtype == np.uint32  # uint64 canonicalised without x64
    with lc.enable_x64():
        assert m.double(1.5).dtype == np.float64
    for name in ("float8_e4m3fn", "float8_e5m2", "int4", "uint4", "float4_e2m1fn"):
        assert np.dtype(getattr(m, name)) == np.dtype(getattr(ml_dtypes, name))
        assert name in m.__all__
    assert_close(np.asarray(m.float8_e4m3fn(np.float32([1.5]))).astype(np.float32), [1.5],
                 np.float32)


def test_ndarray_isinstance_includes_tracers():
    x = m.fabs(np.float32([1.0]))
    assert isinstance(x, m.ndarray) and not isinstance(np.float32([1.0]), m.ndarray)
    seen = []
    lc.jit(lambda t: seen.append(isinstance(t, m.ndarray)) or t)(x)
    assert seen == [True]
