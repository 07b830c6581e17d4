"""Array creation against NumPy: values and JAX's default dtypes, gradients of the
functions that take arrays, vmap, jit, and errors."""

import ml_dtypes
import numpy as np
import pytest
from checks import check
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella.core.errors import ConcretizationTypeError
from lamella.numpy import creation as c

SETTINGS = settings(max_examples=15, deadline=None)


def same(got, want, dtype=None, rtol=1e-6):
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.dtype == np.dtype(dtype or want.dtype), (got.dtype, dtype or want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64) if got.dtype.kind != "c" else got,
                               want, rtol=rtol, atol=1e-6)


# --- from data ---------------------------------------------------------------------------
@pytest.mark.parametrize("data, dtype", [
    ([1, 2, 3], np.int32), ([1, 2.5], np.float32), ([[True], [False]], np.bool_),
    ([1 + 2j], np.complex64), (np.float64([1.5]), np.float32), (np.uint8([3]), np.uint8),
    ([(1, 2), (3, 4)], np.int32),
])
def test_array_from_data_takes_jax_dtypes(data, dtype):
    same(c.array(data), np.asarray(data).astype(dtype), dtype)
    same(c.asarray(data), np.asarray(data).astype(dtype), dtype)


def test_array_of_python_scalar_is_weak_and_list_is_not():
    assert c.array(3.0).weak_type and not c.array([3.0]).weak_type
    # A list promotes its elements as JAX does: float16 with a Python float stays float16.
    assert c.array([np.float16(1), 2.0]).dtype == np.float16
    assert c.array([1, 2], dtype=np.int8, ndmin=3).shape == (1, 1, 2)


def test_array_of_tracers_stacks_them():
    f = lc.jit(lambda x: c.array([[x, 2 * x], [x, x]]))
    same(f(np.float32(1.5)), np.float32([[1.5, 3], [1.5, 1.5]]))
    value, pullback = lc.vjp(lambda y: c.array([y, y * y]), np.float32(3.0))
    assert float(pullback(np.float32([1, 1]))[0]) == pytest.approx(7.0)


def test_frombuffer_and_copy():
    same(c.frombuffer(np.float32([1, 2]).tobytes(), dtype=np.float32), np.float32([1, 2]))
    same(c.copy(np.int16([1])), np.int16([1]))


def test_array_rejects_strings_and_none():
    with pytest.raises(TypeError, match="str"):
        c.array("abc")
    with pytest.raises(TypeError, match="NoneType"):
        c.array([1, None])


# --- filled ------------------------------------------------------------------------------
@SETTINGS
@given(shape=st.lists(st.integers(0, 3), max_size=3).map(tuple),
       dtype=st.sampled_from([None, np.int32, np.bool_, np.float16, ml_dtypes.bfloat16]))
def test_filled(shape, dtype):
    ref_dtype = np.float32 if dtype is None else dtype
    same(c.zeros(shape, dtype), np.zeros(shape, ref_dtype), ref_dtype)
    same(c.ones(shape, dtype), np.ones(shape, ref_dtype), ref_dtype)
    same(c.empty(shape, dtype), np.zeros(shape, ref_dtype), ref_dtype)
    same(c.full(shape, 2, dtype), np.full(shape, 2, ref_dtype if dtype else np.int32),
         ref_dtype if dtype else np.int32)
    like = np.ones(shape, np.int8)
    same(c.zeros_like(like), np.zeros(shape, np.int8))
    same(c.ones_like(like, dtype=np.float32), np.ones(shape, np.float32))
    same(c.full_like(like, 3), np.full(shape, 3, np.int8))
    same(c.empty_like(like, shape=(2,)), np.zeros(2, np.int8))


def test_full_broadcasts_array_fill_values_and_keeps_weak_scalars():
    same(c.full((2, 3), np.float32([1, 2, 3])), np.tile(np.float32([1, 2, 3]), (2, 1)))
    assert c.full((2,), 1.5).weak_type
    with pytest.raises(ValueError, match=r"\(3,\) and requested shape \(2, 2\)"):
        c.full((2, 2), np.float32([1, 2, 3]))


def test_weak_types_of_full_and_the_likes_are_jaxs():
    weak = c.asarray(2.0)
    # JAX 0.10.2's weak_type flags, call by call.
    assert c.full((2,), weak).weak_type and not c.full((2,), weak, np.float32).weak_type
    assert c.full_like(weak, np.float32(3)).weak_type and c.full_like(weak, 3, shape=(2,)).weak_type
    assert not c.full_like(weak, 3, dtype=np.float32).weak_type
    assert not c.full_like(c.ones(2), weak).weak_type
    assert c.zeros_like(weak, shape=(3,)).weak_type and c.ones_like(weak).weak_type


def test_shape_errors():
    with pytest.raises(ValueError, match="negative dimensions"):
        c.zeros((2, -1))
    with pytest.raises(TypeError, match="sequence of integers"):
        c.ones((2.5,))


# --- ranges ------------------------------------------------------------------------------
@SETTINGS
@given(start=st.integers(-5, 5), stop=st.integers(-5, 12), step=st.integers(1, 3),
       fstep=st.sampled_from([0.25, 0.5, -0.75]))
def test_arange(start, stop, step, fstep):
    same(c.arange(stop), np.arange(stop).astype(np.int32), np.int32)
    same(c.arange(start, stop, step), np.arange(start, stop, step).astype(np.int32), np.int32)
    same(c.arange(start, stop, fstep), np.arange(start, stop, fstep).astype(np.float32),
         np.float32)
    same(c.arange(start, stop, dtype=np.float16), np.arange(start, stop, dtype=np.float16))


def test_arange_needs_concrete_bounds():
    with pytest.raises(ConcretizationTypeError, match="stop argument of arange"):
        lc.jit(lambda n: c.arange(0, n))(5)


@SETTINGS
@given(num=st.integers(0, 7), endpoint=st.booleans(),
       start=st.floats(-3, 3, width=32), stop=st.floats(-3, 3, width=32))
def test_linspace_logspace_geomspace(num, endpoint, start, stop):
    same(c.linspace(start, stop, num, endpoint), np.linspace(start, stop, num, endpoint,
                                                             dtype=np.float32), rtol=1e-5)
    out, step = c.linspace(start, stop, num, endpoint, retstep=True)
    _, want_step = np.linspace(start, stop, num, endpoint, retstep=True)
    np.testing.assert_allclose(step, want_step, rtol=1e-5, atol=1e-6)
    same(c.logspace(start, stop, num, endpoint, base=2.0),
         np.logspace(start, stop, num, endpoint, base=2.0, dtype=np.float32), rtol=2e-5)
    lo, hi = 0.5 + abs(start), 0.5 + abs(stop)
    same(c.geomspace(lo, hi, num, endpoint), np.geomspace(lo, hi, num, endpoint,
                                                          dtype=np.float32), rtol=2e-5)
    same(c.geomspace(-lo, -hi, num, endpoint), np.geomspace(-lo, -hi, num, endpoint,
                                                            dtype=np.float32), rtol=2e-5)


def test_linspace_arrays_axis_int_dtype_and_gradient():
    start, stop = np.float32([0, 1]), np.float32([4, 3])
    same(c.linspace(start, stop, 5, axis=1), np.linspace(start, stop, 5, axis=1,
                                                         dtype=np.float32))
    same(c.linspace(0, 10, 4, dtype=np.int32), np.linspace(0, 10, 4, dtype=np.int32))
    check(lambda a, b: c.linspace(a, b, 4), [np.float32(0.5), np.float32(2.0)],
          lambda a, b: np.linspace(a, b, 4, dtype=np.float32), diff_argnums=(0, 1))
    check(lambda a: c.logspace(a, 1.0, 3), [np.float32(0.5)],
          lambda a: np.logspace(a, 1.0, 3, dtype=np.float32), rtol=1e-5, vmap=False)


# --- matrices ----------------------------------------------------------------------------
@SETTINGS
@given(n=st.integers(0, 4), m=st.integers(0, 4), k=st.integers(-4, 4),
       dtype=st.sampled_from([None, np.int32, np.bool_, np.float16]))
def test_eye_tri(n, m, k, dtype):
    ref = np.float32 if dtype is None else dtype
    same(c.eye(n, m, k, dtype), np.eye(n, m, k, dtype=ref), ref)
    same(c.tri(n, m, k, dtype), np.tri(n, m, k, dtype=ref), ref)
    same(c.identity(n, dtype), np.identity(n, dtype=ref), ref)


@SETTINGS
@given(shape=st.sampled_from([(3,), (2, 3), (3, 2), (2, 2, 3), (0, 2)]),
       k=st.integers(-3, 3), dtype=st.sampled_from([np.float32, np.int32, np.bool_]))
def test_tril_triu(shape, k, dtype):
    x = (np.arange(np.prod(shape)).reshape(shape) % 5).astype(dtype)
    same(c.tril(x, k), np.tril(x, k))
    same(c.triu(x, k), np.triu(x, k))


@SETTINGS
@given(n=st.integers(0, 4), m=st.integers(1, 4), k=st.integers(-4, 4))
def test_diag_diagflat(n, m, k):
    v = np.arange(1, n + 1, dtype=np.float32)
    same(c.diag(v, k), np.diag(v, k))
    same(c.diagflat(v.reshape(-1, 1), k), np.diagflat(v.reshape(-1, 1), k))
    x = np.arange(n * m, dtype=np.int32).reshape(n, m)
    same(c.diag(x, k), np.diag(x, k))


def test_matrix_functions_gradients_vmap_and_jit():
    x = np.arange(9, dtype=np.float32).reshape(3, 3) / 4
    check(lambda a: c.tril(a, -1), [x], lambda a: np.tril(a, -1))
    check(lambda a: c.triu(a, 1), [x], lambda a: np.triu(a, 1))
    check(lambda a: c.diag(a, 1), [x], lambda a: np.diag(a, 1), vmap=False)
    check(lambda v: c.diag(v, -1), [x[0]], lambda v: np.diag(v, -1), vmap=False)
    batched = lc.vmap(lambda a: c.diag(a))(x.reshape(1, 3, 3).repeat(2, 0))
    same(batched, np.stack([np.diag(x)] * 2))


def test_index_helpers():
    for got, want in [(c.tril_indices(3, 1), np.tril_indices(3, 1)),
                      (c.triu_indices(3, 0, 4), np.triu_indices(3, 0, 4)),
                      (c.diag_indices(3, 3), np.diag_indices(3, 3)),
                      (c.tril_indices_from(np.ones((2, 3))),
                       np.tril_indices_from(np.ones((2, 3)))),
                      (c.triu_indices_from(np.ones((3, 3)), 1),
                       np.triu_indices_from(np.ones((3, 3)), 1)),
                      (c.diag_indices_from(np.ones((2, 2))),
                       np.diag_indices_from(np.ones((2, 2))))]:
        for g, w in zip(got, want):
            same(g, w.astype(np.int32), np.int32)
    with pytest.raises(ValueError, match="square"):
        c.diag_indices_from(np.ones((2, 3)))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        c.diag(np.ones((2, 2, 2)))


# --- grids -------------------------------------------------------------------------------
@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(indexing, sparse):
    xs = [np.arange(3, dtype=np.float32), np.arange(2, dtype=np.float32),
          np.arange(4, dtype=np.float32)]
    for n in (1, 2, 3):
        got = c.meshgrid(*xs[:n], indexing=indexing, sparse=sparse)
        want = np.meshgrid(*xs[:n], indexing=indexing, sparse=sparse)
        for g, w in zip(got, want):
            same(g, w)


def test_indices_mgrid_ogrid_fromfunction():
    same(c.indices((2, 3)), np.indices((2, 3)).astype(np.int32), np.int32)
    for g, w in zip(c.indices((2, 3), sparse=True), np.indices((2, 3), sparse=True)):
        same(g, w.astype(np.int32), np.int32)
    same(c.mgrid[0:3, 0:2], np.mgrid[0:3, 0:2].astype(np.int32), np.int32)
    same(c.mgrid[0:1:5j], np.mgrid[0:1:5j].astype(np.float32), np.float32)
    for g, w in zip(c.ogrid[0:2, 1:4], np.ogrid[0:2, 1:4]):
        same(g, w.astype(np.int32), np.int32)
    same(c.fromfunction(lambda i, j: i * 10 + j, (2, 3)),
         np.fromfunction(lambda i, j: i * 10 + j, (2, 3), dtype=np.float32))
    # Scalar-only code works: fromfunction vmaps it.
    same(c.fromfunction(lambda i: i * i, (3,),
                        dtype=np.int32), np.int32([0, 1, 4]))
    with pytest.raises(ValueError, match="indexing"):
        c.meshgrid(np.arange(2), indexing="yx")
    with pytest.raises(TypeError, match="slices"):
        c.mgrid[3]


def test_array_equal_and_equiv():
    a = np.float32([1, np.nan])
    assert not bool(c.array_equal(a, a))
    assert bool(c.array_equal(a, a, equal_nan=True))
    assert not bool(c.array_equal(np.ones(2), np.ones(3)))
    assert bool(c.array_equiv(np.ones((2, 2)), np.ones(2)))
    assert not bool(c.array_equiv(np.ones((2, 2)), np.ones(3)))
    assert bool(lc.jit(c.array_equal)(np.int32([1, 2]), np.int32([1, 2])))


def test_arange_with_only_step_counts_from_zero_and_rejects_zero_step():
    same(c.arange(0, step=2), np.arange(0, step=2).astype(np.int32), np.int32)
    same(c.arange(5, step=2), np.arange(5, step=2).astype(np.int32), np.int32)
    with pytest.raises(ValueError, match="step must not be zero"):
        c.arange(0, 5, 0)
