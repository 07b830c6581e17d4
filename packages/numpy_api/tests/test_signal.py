"""convolve, correlate, interp, diff, ediff1d, gradient, trapezoid, cross and
unwrap against NumPy: values over modes, dtypes and axes; derivatives, vmap and
jit through the shared checker; errors."""

import warnings

import numpy as np
import pytest
from checks import assert_close, check
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella.numpy import signal as sg
from lamella.numpy.util import AxisError

RNG = np.random.default_rng(0)


def _data(shape, dtype):
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(-5, 6, shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)



# --- convolve / correlate -------------------------------------------------------------
@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(["convolve", "correlate"]), la=st.sampled_from([1, 4, 5]),
       lv=st.sampled_from([1, 2, 5, 6]), mode=st.sampled_from(["full", "same", "valid"]),
       dtype=st.sampled_from([np.float32, np.complex64, np.int32]))
def test_convolutions(name, la, lv, mode, dtype):
    a, v = _data((la,), dtype), _data((lv,), dtype)
    got = getattr(sg, name)(a, v, mode)
    want = getattr(np, name)(a, v, mode)
    assert_close(got, want, np.complex64 if dtype == np.complex64 else np.float32, 1e-5)


def test_convolve_preferred_element_type_keeps_integers():
    a, v = np.int32([1, 2, 3]), np.int32([4, -5])
    got = sg.convolve(a, v, preferred_element_type=np.int32)
    np.testing.assert_array_equal(got, np.convolve(a, v))
    assert np.asarray(got).dtype == np.int32
    assert np.asarray(sg.convolve(a, v)).dtype == np.float32  # promoted, as in JAX


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolution_derivatives(name, mode):
    a, v = _data((5,), np.float32), _data((3,), np.float32)
    check(lambda a, v: getattr(sg, name)(a, v, mode), [a, v],
          lambda a, v: getattr(np, name)(a, v, mode), diff_argnums=(0, 1), rtol=1e-5,
          atol=1e-5)


# --- interp ---------------------------------------------------------------------------
XP = np.float32([-1.0, 0.0, 0.5, 2.0, 3.0])
FP = np.float32([2.0, -1.0, 0.5, 1.5, 0.0])


@settings(max_examples=10, deadline=None)
@given(x=st.lists(st.floats(-3, 5, width=32), min_size=6, max_size=6),
       left=st.sampled_from([None, -7.0]), right=st.sampled_from([None, 9.0]),
       period=st.sampled_from([None, 4.0]))
def test_interp(x, left, right, period):
    x = np.float32(x)
    got = sg.interp(x, XP, FP, left, right, period)
    want = np.interp(x, XP, FP, left, right, period)
    assert_close(got, want, np.float32, 1e-5)


def test_interp_variants():
    x = np.float32([[-2, 0.25], [2.5, 4]])
    assert_close(sg.interp(x, XP, FP), np.interp(x, XP, FP), np.float32)
    assert_close(sg.interp(x, XP, FP * 1j), np.interp(x, XP, FP * 1j), np.complex64)
    assert_close(sg.interp(x, np.float32([1]), np.float32([3])),
                 np.interp(x, [1], [3]), np.float32)
    # Repeated sample points take the left value, and the gradient stays finite.
    xp, fp = np.float32([0, 1, 1, 2]), np.float32([0, 1, 5, 6])
    assert_close(sg.interp(np.float32([1, 1.5]), xp, fp), np.interp([1, 1.5], xp, fp),
                 np.float32)
    assert np.all(np.isfinite(lc.grad(lambda f: sg.interp(np.float32(1.0), xp, f))(fp)))
    # 'extrapolate' continues the end segments.
    got = sg.interp(np.float32([-2, 4]), XP, FP, left="extrapolate", right="extrapolate")
    assert_close(got, [5.0, -1.5], np.float32)
    assert_close(sg.interp(3, np.int32([0, 10]), np.int32([0, 100])), 30.0, np.float32)


def test_interp_derivatives():
    x = np.float32([-2.3, -0.3, 0.7, 1.2, 2.6, 4.3])  # away from the kinks at XP
    check(lambda x, fp: sg.interp(x, XP, fp), [x, FP], lambda x, fp: np.interp(x, XP, fp),
          diff_argnums=(0, 1))
    check(lambda x: sg.interp(x, XP, FP, period=4.0), [x],
          lambda x: np.interp(x, XP, FP, period=4.0), vmap=False)


# --- diff and ediff1d -----------------------------------------------------------------
@settings(max_examples=12, deadline=None)
@given(shape=st.sampled_from([(5,), (3, 4), (2, 0, 3)]), n=st.sampled_from([0, 1, 2]),
       axis=st.sampled_from([0, -1]), dtype=st.sampled_from([np.float32, np.int32, np.bool_]),
       edges=st.sampled_from(["none", "scalar", "array"]))
def test_diff(shape, n, axis, dtype, edges):
    x = _data(shape, dtype)
    kwargs = {}
    if edges == "scalar":
        kwargs = dict(prepend=1, append=0)
    elif edges == "array":
        edge = list(shape)
        edge[axis] = 2
        kwargs = dict(prepend=_data(tuple(edge), dtype))
    got = sg.diff(x, n, axis, **kwargs)
    want = np.diff(x, n, axis, **kwargs)  # float64 with scalar edges: NumPy promotes
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    # Python scalar edges are weak: they keep x's dtype (promoting booleans to int32).
    expected = np.int32 if dtype == np.bool_ and edges == "scalar" and n else dtype
    assert np.asarray(got).dtype == expected


@pytest.mark.parametrize("to_begin, to_end", [(None, None), (-1, None), (None, np.int8([7, 8])),
                                              (np.int32([[1]]), 2.5)])
def test_ediff1d(to_begin, to_end):
    x = np.int32([[1, 4], [9, 16], [25, 36]])
    got = sg.ediff1d(x, to_end=to_end, to_begin=to_begin)
    want = np.ediff1d(x, to_end=np.asarray(to_end, np.int32) if to_end is not None else None,
                      to_begin=to_begin)
    np.testing.assert_array_equal(got, want)
    assert np.asarray(got).dtype == np.int32


def test_diff_derivatives():
    check(lambda x: sg.diff(x, 2, 0, append=0.5), [_data((4, 3), np.float32)],
          lambda x: np.diff(x, 2, 0, append=0.5))
    check(lambda x: sg.ediff1d(x, to_begin=1.0), [_data((5,), np.float32)],
          lambda x: np.ediff1d(x, to_begin=1.0))


# --- gradient -------------------------------------------------------------------------
COORDS = np.float32([0.0, 0.5, 1.5, 1.75, 3.0])


@pytest.mark.parametrize("edge_order", [None, 1, 2])
@pytest.mark.parametrize("spacing, axis", [
    ((), None), ((0.5,), None), ((2.0, COORDS), None), ((COORDS,), 1), ((0.25,), 0),
    ((COORDS, 3.0), (1, 0))], ids=["none", "scalar", "mixed", "coords", "axis0", "axes"])
def test_gradient(spacing, axis, edge_order):
    f = _data((3, 5), np.float32)
    got = sg.gradient(f, *spacing, axis=axis, edge_order=edge_order)
    want = np.gradient(f, *spacing, axis=axis, edge_order=edge_order or 1)
    if isinstance(want, tuple):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_close(g, w, np.float32, 1e-4)
    else:
        assert_close(got, want, np.float32, 1e-4)


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_dtypes_and_derivatives(edge_order):
    assert_close(sg.gradient(np.int32([1, 4, 9]), edge_order=edge_order),
                 np.gradient([1, 4, 9], edge_order=edge_order), np.float32)
    check(lambda f, x: sg.gradient(f, x, edge_order=edge_order), [_data((5,), np.float32), COORDS],
          lambda f, x: np.gradient(f, x, edge_order=edge_order), diff_argnums=(0, 1),
          rtol=1e-4, atol=1e-4, vmap=edge_order == 1)


# --- trapezoid, cross, unwrap ---------------------------------------------------------
@pytest.mark.parametrize("x, dx, axis", [(None, 1.0, -1), (None, 0.5, 0), (COORDS, 1.0, -1),
                                         ("full", 1.0, 0)], ids=["dx1", "dx", "x1d", "xnd"])
def test_trapezoid(x, dx, axis):
    y = _data((5, 5), np.float32)
    if isinstance(x, str):
        x = np.cumsum(np.abs(_data((5, 5), np.float32)), axis=0)
    assert_close(sg.trapezoid(y, x, dx, axis), np.trapezoid(y, x, dx, axis), np.float32, 1e-5)
    args = [y] if x is None else [y, x]
    check(lambda *a: sg.trapezoid(*a, dx=dx, axis=axis), args,
          lambda *a: np.trapezoid(*a, dx=dx, axis=axis), diff_argnums=tuple(range(len(args))))


@pytest.mark.parametrize("sa, sb, kwargs", [
    ((3,), (3,), {}), ((4, 3), (3,), {}), ((2, 3), (4, 1, 2), {}), ((2,), (2,), {}),
    ((3, 4), (4, 3), dict(axisa=0, axisc=0)), ((3, 2), (2, 3), dict(axisb=0)),
    ((3, 3), (3, 3), dict(axis=0))])
def test_cross(sa, sb, kwargs):
    a, b = _data(sa, np.float32), _data(sb, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # NumPy 2 deprecates 2-vectors
        want = np.cross(a, b, **kwargs)
        assert_close(sg.cross(a, b, **kwargs), want, np.float32)
        ai, bi = _data(sa, np.int32), _data(sb, np.int32)
        np.testing.assert_array_equal(sg.cross(ai, bi, **kwargs), np.cross(ai, bi, **kwargs))


def test_cross_derivatives():
    a, b = _data((2, 3), np.float32), _data((3,), np.float32)
    check(sg.cross, [a, b], np.cross, diff_argnums=(0, 1))


def test_unwrap():
    p = np.float32([0.0, 3.0, 6.5, 0.2, -3.5, 2.9])
    assert_close(sg.unwrap(p), np.unwrap(p), np.float32, 1e-5)
    assert_close(sg.unwrap(p, period=4), np.unwrap(p, period=4), np.float32, 1e-5)
    q = np.stack([p, p[::-1]], 1)
    assert_close(sg.unwrap(q, discont=4.0, axis=0), np.unwrap(q, discont=4.0, axis=0),
                 np.float32, 1e-5)
    check(sg.unwrap, [p], np.unwrap)


def test_jit_matches_eager_for_interp_with_period():
    x = np.float32([-1.5, 0.3, 7.2])
    fun = lambda x: sg.interp(x, XP, FP, period=3.0)  # noqa: E731
    np.testing.assert_array_equal(lc.jit(fun)(x), fun(x))


# --- errors ---------------------------------------------------------------------------
V3 = np.float32([1, 2, 3])


@pytest.mark.parametrize("call, error, match", [
    (lambda: sg.convolve(V3, V3, mode="middle"), ValueError, "mode must be one of"),
    (lambda: sg.correlate(np.ones((2, 2)), V3), ValueError, "1-dimensional"),
    (lambda: sg.convolve(np.float32([]), V3), ValueError, "cannot be empty"),
    (lambda: sg.convolve([1, 2], V3), TypeError, "lists and tuples"),
    (lambda: sg.interp(V3, XP, FP[:3]), ValueError, "equal size"),
    (lambda: sg.interp(V3, np.float32([]), np.float32([])), ValueError, "empty"),
    (lambda: sg.interp(V3, XP, FP, left="bad"), ValueError, "'extrapolate'"),
    (lambda: sg.interp(V3 * 1j, XP, FP), ValueError, "complex"),
    (lambda: sg.interp(V3, XP, FP, period=V3), ValueError, "scalar"),
    (lambda: sg.diff(V3, -1), ValueError, "non-negative"),
    (lambda: sg.diff(np.float32(1)), ValueError, "at least one dimensional"),
    (lambda: sg.diff(V3, axis=1), AxisError, "out of bounds"),
    (lambda: sg.diff(np.ones((2, 3)), prepend=np.ones((2, 2)), axis=0), ValueError,
     "does not match"),
    (lambda: sg.ediff1d(np.bool_([True, False])), TypeError, "boolean"),
    (lambda: sg.gradient(np.float32([1])), ValueError, "too short"),
    (lambda: sg.gradient(np.float32([1, 2]), edge_order=2), ValueError, "too short"),
    (lambda: sg.gradient(V3, edge_order=3), ValueError, "edge_order"),
    (lambda: sg.gradient(V3, np.float32([1, 2])), ValueError, "length"),
    (lambda: sg.gradient(V3, 1.0, 2.0), TypeError, "number of spacing"),
    (lambda: sg.gradient(V3, axis=2), AxisError, "out of bounds"),
    (lambda: sg.trapezoid(V3, np.ones((2, 3))), ValueError, "rank"),
    (lambda: sg.cross(np.ones(4), V3), ValueError, "2 or 3"),
    (lambda: sg.cross(V3, V3, axisc=2), AxisError, "out of bounds"),
    (lambda: sg.unwrap(V3 * 1j), ValueError, "complex"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_diff_order_must_be_concrete():
    with pytest.raises(lc.ConcretizationTypeError if hasattr(lc, "ConcretizationTypeError")
                       else Exception, match="concrete"):
        lc.jit(lambda n: sg.diff(V3, n))(np.int32(1))
