"""convolve, correlate, fftconvolve, convolve2d and correlate2d against scipy.signal:
values over modes, methods, boundaries and shapes (either input the larger) in
float32/complex64 and float64; derivatives, vmap, jit; errors."""

import numpy as np
import pytest
import scipy.signal as ss
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lamella.core as lc
from lamella.lax.test_util import check_derivatives, check_jit_matches_eager, check_vmap
from lamella.scipy import signal as ls

ELEMENTS = st.floats(-100, 100, width=32)
# Jitted once per shape and static arguments: a compile per case, not one per primitive.
JIT = {name: lc.jit(getattr(ls, name), static_argnums=(2, 3))
       for name in ("convolve", "correlate", "convolve2d", "correlate2d")}
JIT["fftconvolve"] = lc.jit(ls.fftconvolve, static_argnums=(2, 3))
MODES = ["full", "same", "valid"]
# (in1, in2): in1 larger, in2 larger, equal, 2-D, and 2-D with neither larger (an
# error in 'valid' mode only).
SHAPES_ND = [((6,), (3,)), ((3,), (6,)), ((5,), (5,)), ((4, 5), (2, 3)), ((3, 4), (4, 2))]
SHAPES_2D = [((5, 6), (3, 2)), ((2, 3), (4, 4)), ((3, 5), (4, 2))]


def _arrays(draw, shapes, complex_):
    out = []
    for shape in shapes:
        x = draw(hnp.arrays(np.float32, shape, elements=ELEMENTS))
        if complex_:
            x = x + 1j * draw(hnp.arrays(np.float32, shape, elements=ELEMENTS))
        out.append(x.astype(np.complex64 if complex_ else np.float32))
    return out


def _wide(x):
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def _assert_matches(got, want, a, b, dtype, eps=2e-6):
    """Shape and dtype exact; values within `eps` of the largest possible entry."""
    got = np.asarray(got)
    assert got.dtype == dtype, (got.dtype, dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = np.abs(a).sum() * np.abs(b).max() + 1e-30
    np.testing.assert_allclose(got, want, rtol=0, atol=eps * scale)


def _both(fun, reference):
    """fun's result and reference's, or the two ValueErrors."""
    try:
        want = reference()
    except ValueError:
        with pytest.raises(ValueError):
            fun()
        return None, None
    return fun(), want


@settings(max_examples=25, deadline=None)
@given(data=st.data(), name=st.sampled_from(["convolve", "correlate"]),
       method=st.sampled_from(["direct", "fft"]), mode=st.sampled_from(MODES),
       shapes=st.sampled_from(SHAPES_ND), complex_=st.booleans())
def test_convolve_and_correlate(data, name, method, mode, shapes, complex_):
    a, b = _arrays(data.draw, shapes, complex_)
    got, want = _both(lambda: JIT[name](a, b, mode, method),
                      lambda: getattr(ss, name)(_wide(a), _wide(b), mode, "direct"))
    if got is not None:
        _assert_matches(got, want, a, b, a.dtype)


@settings(max_examples=25, deadline=None)
@given(data=st.data(), name=st.sampled_from(["convolve2d", "correlate2d"]),
       mode=st.sampled_from(MODES), boundary=st.sampled_from(["fill", "wrap", "symm"]),
       fillvalue=st.sampled_from([0.0, -1.5]), shapes=st.sampled_from(SHAPES_2D),
       complex_=st.booleans())
def test_convolve2d_and_correlate2d(data, name, mode, boundary, fillvalue, shapes, complex_):
    a, b = _arrays(data.draw, shapes, complex_)
    got, want = _both(lambda: JIT[name](a, b, mode, boundary, fillvalue),
                      lambda: getattr(ss, name)(_wide(a), _wide(b), mode, boundary, fillvalue))
    if got is not None:
        scale_a = np.abs(a).sum() + abs(fillvalue) * b.size
        _assert_matches(got, want, np.array([scale_a]), b, a.dtype)


@pytest.mark.parametrize("shapes, axes", [(((3, 8), (1, 4)), (1,)), (((2, 5, 3), (2, 2, 3)), (1,)),
                                          (((4, 5), (3, 2)), None)])
@pytest.mark.parametrize("mode", MODES)
def test_fftconvolve_axes_broadcast(shapes, axes, mode):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    want = ss.fftconvolve(_wide(a), _wide(b), mode, axes)
    _assert_matches(JIT["fftconvolve"](a, b, mode, axes), want, a, b, np.float32)


def test_dtypes():
    a, b = np.int32([1, 2, 3, 2, 1]), np.int32([1, -1])
    # Integers convolve in floating point, as in JAX (SciPy keeps integers).
    got = JIT["convolve"](a, b, "full", "auto")
    np.testing.assert_array_equal(got, ss.convolve(a, b))
    assert np.asarray(got).dtype == np.float32
    assert np.asarray(JIT["fftconvolve"](a, b.astype(np.float16), "full", None)).dtype == np.float16
    assert np.asarray(ls.convolve(np.float32(2), np.float32(3))) == 6  # 0-d inputs


@pytest.mark.parametrize("mode", MODES)
def test_float64(mode):
    rng = np.random.default_rng(1)
    x, k = rng.standard_normal((6, 5)), rng.standard_normal((3, 2)) + 1j
    with lc.enable_x64():
        _assert_matches(JIT["correlate2d"](x, k, mode, "symm"), ss.correlate2d(x, k, mode, "symm"),
                        x, k, np.complex128, 1e-14)
        _assert_matches(JIT["fftconvolve"](x, k, mode, None), ss.fftconvolve(x, k, mode), x, k,
                        np.complex128, 1e-14)


RNG = np.random.default_rng(2)
A = RNG.standard_normal((5, 4)).astype(np.float32)
B = RNG.standard_normal((3, 2)).astype(np.float32)


@pytest.mark.parametrize("fun", [
    lambda a, b: ls.convolve(a, b, "same"),
    lambda a, b: ls.correlate(a, b, "full", method="fft"),
    lambda a, b: ls.correlate2d(a, b, "full", boundary="symm", fillvalue=0),
], ids=["convolve", "correlate-fft", "correlate2d-symm"])
def test_derivatives(fun):
    check_derivatives(lc.jit(fun), [A, B], diff_argnums=(0, 1))


@pytest.mark.parametrize("fun", [
    lambda a, b: ls.fftconvolve(a, b, "valid"),
    lambda a, b: ls.convolve2d(a, b, "same", boundary="wrap"),
], ids=["fftconvolve", "convolve2d-wrap"])
def test_vmap_and_jit(fun):
    check_vmap(lc.jit(fun), [A, B])
    check_jit_matches_eager(fun, [A, B], rtol=1e-5)


def test_fillvalue_may_be_traced():
    f = lc.jit(lambda v: ls.convolve2d(A, B, boundary="fill", fillvalue=v))
    np.testing.assert_allclose(f(np.float32(2.0)), ss.convolve2d(A, B, fillvalue=2.0),
                               rtol=1e-5, atol=1e-5)


V = np.float32([1, 2, 3])


@pytest.mark.parametrize("call, error, match", [
    (lambda: ls.convolve(V, V, mode="middle"), ValueError, "mode must be one of"),
    (lambda: ls.correlate(V, V, method="fast"), ValueError, "method must be"),
    (lambda: ls.convolve(V, np.ones((2, 2))), ValueError, "same number of dimensions"),
    (lambda: ls.convolve(V, np.float32([])), ValueError, "zero-size"),
    (lambda: ls.convolve(np.ones((2, 3)), np.ones((3, 2)), "valid"), ValueError,
     "at least as large"),
    (lambda: ls.fftconvolve(np.ones((2, 3)), np.ones((3, 3)), axes=1), ValueError,
     "equal or 1"),
    (lambda: ls.fftconvolve(V, V, axes=(0, 0)), ValueError, "unique"),
    (lambda: ls.fftconvolve(V, V, axes=()), ValueError, "not empty"),
    (lambda: ls.fftconvolve(V, V, axes=1), ValueError, "out of bounds"),
    (lambda: ls.convolve2d(V, V), ValueError, "2-dimensional"),
    (lambda: ls.correlate2d(A, B, boundary="circle"), ValueError, "boundary must be"),
    (lambda: ls.convolve2d(A, B, fillvalue=[1, 2]), ValueError, "fillvalue must be a scalar"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
