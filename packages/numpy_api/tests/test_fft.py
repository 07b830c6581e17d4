"""lamella.numpy.fft against numpy.fft: values for odd and even lengths, cropping
and padding, every norm and several dtypes; axes handling; frequencies and
shifts; derivatives, vmap and jit; errors."""

import numpy as np
import pytest
from checks import check
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella import lax
from lamella.numpy import fft as lfft
from lamella.numpy.util import AxisError

RNG = np.random.default_rng(0)
NORMS = [None, "backward", "ortho", "forward"]


def _data(shape, dtype):
    x = RNG.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * RNG.standard_normal(shape)
    return x.astype(dtype)


def assert_close(got, want, dtype):
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    tol = 1e-10 if np.dtype(dtype) in (np.float64, np.complex128) else 2e-5
    scale = max(1.0, float(np.max(np.abs(want), initial=0)))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


ONE_D = [("fft", "c"), ("ifft", "c"), ("rfft", "c"), ("irfft", "f"), ("hfft", "f"),
         ("ihfft", "c")]


@settings(max_examples=20, deadline=None)
@given(which=st.sampled_from(ONE_D), length=st.sampled_from([1, 4, 5]),
       n=st.sampled_from([None, 3, 6]), norm=st.sampled_from(NORMS),
       dtype=st.sampled_from([np.float32, np.complex64, np.int32]),
       axis=st.sampled_from([0, -1]))
def test_one_dimensional(which, length, n, norm, dtype, axis):
    name, kind = which
    if name in ("rfft", "ihfft") and np.dtype(dtype).kind == "c":
        dtype = np.float32
    if name in ("irfft", "hfft") and n is None and length == 1:
        n = 2  # the default length 2 * (1 - 1) is empty
    x = _data((length, 3) if axis == 0 else (2, length), dtype)
    got = getattr(lfft, name)(x, n=n, axis=axis, norm=norm)
    want = getattr(np.fft, name)(x, n=n, axis=axis, norm=norm)
    assert_close(got, want, np.complex64 if kind == "c" else np.float32)


def test_x64_dtypes():
    x = _data((5,), np.float64)
    with lc.enable_x64():
        assert_close(lfft.fft(x), np.fft.fft(x), np.complex128)
        assert_close(lfft.irfft(lfft.rfft(x), 5), x, np.float64)
        assert_close(lfft.fftfreq(5), np.fft.fftfreq(5), np.float64)
    assert_close(lfft.fft(x), np.fft.fft(x), np.complex64)


N_D = ["fftn", "ifftn", "rfftn", "irfftn"]


@pytest.mark.filterwarnings("ignore:`axes` should not be `None`:DeprecationWarning")
@settings(max_examples=20, deadline=None)
@given(name=st.sampled_from(N_D),
       s_axes=st.sampled_from([(None, None), ((3, 4), None), (None, (0, 2)), ((2, 5), (2, 0)),
                               ((4,), (1,)), ((3, 2, 4), None), (None, (-1, 0, 1))]),
       norm=st.sampled_from(NORMS))
def test_n_dimensional(name, s_axes, norm):
    s, axes = s_axes
    x = _data((2, 3, 4), np.float32 if name == "rfftn" else np.complex64)
    got = getattr(lfft, name)(x, s=s, axes=axes, norm=norm)
    want = getattr(np.fft, name)(x, s=s, axes=axes, norm=norm)
    assert_close(got, want, np.float32 if name == "irfftn" else np.complex64)


@pytest.mark.parametrize("name", ["fft2", "ifft2", "rfft2", "irfft2"])
def test_two_dimensional(name):
    x = _data((3, 4, 5), np.float32 if name == "rfft2" else np.complex64)
    kind = np.float32 if name == "irfft2" else np.complex64
    fn, ref = getattr(lfft, name), getattr(np.fft, name)
    assert_close(fn(x), ref(x), kind)
    assert_close(fn(x, s=(2, 6), axes=(0, 2), norm="ortho"),
                 ref(x, s=(2, 6), axes=(0, 2), norm="ortho"), kind)


@pytest.mark.parametrize("n", [1, 4, 7])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_frequencies(n, d):
    assert_close(lfft.fftfreq(n, d), np.fft.fftfreq(n, d), np.float32)
    assert_close(lfft.rfftfreq(n, d), np.fft.rfftfreq(n, d), np.float32)
    assert np.asarray(lfft.fftfreq(n, dtype=np.float16)).dtype == np.float16


def test_frequency_spacing_traced():
    got = lc.jit(lambda d: lfft.fftfreq(4, d))(np.float32(0.5))
    assert_close(got, np.fft.fftfreq(4, 0.5), np.float32)
    pick = np.float32([0, 1, 0, 0])
    got = lc.grad(lambda d: lax.reduce_sum(lfft.fftfreq(4, d) * pick, (0,)))(np.float32(0.5))
    assert_close(got, -1.0, np.float32)  # d/dd (1 / (4 d)) at d = 1/2


@settings(max_examples=15, deadline=None)
@given(shape=st.sampled_from([(0,), (5,), (4,), (3, 4), (2, 5, 1)]),
       axes=st.sampled_from([None, 0, -1, (0,), (-1, 0)]))
def test_shifts(shape, axes):
    x = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    if len(shape) == 1 and axes == (-1, 0):
        axes = (0,)
    np.testing.assert_array_equal(lfft.fftshift(x, axes), np.fft.fftshift(x, axes))
    np.testing.assert_array_equal(lfft.ifftshift(x, axes), np.fft.ifftshift(x, axes))
    assert np.asarray(lfft.fftshift(x, axes)).dtype == np.int32


X5 = _data((5,), np.float32)
C4 = _data((4,), np.complex64)
X23 = _data((2, 3), np.float32)


def _real_view(fun, complex_input):
    """`fun` as a map between real arrays (the derivative checks pair values
    bilinearly, which holds for complex maps only when they are complex-linear):
    complex input from two real arguments, complex output as [real, imag] stacked."""
    def wrapped(*args):
        y = fun(lax.complex(*args) if complex_input else args[0])
        if y.dtype.kind != "c":
            return y
        return lax.concatenate([lax.expand_dims(p, (0,)) for p in (lax.real(y), lax.imag(y))],
                               0)
    return wrapped


def _reference(ref, complex_input):
    def split(y):
        return np.stack([y.real, y.imag]) if np.iscomplexobj(y) else y
    if complex_input:
        return lambda re, im: split(ref(re + 1j * im))
    return lambda x: split(ref(x))


@pytest.mark.parametrize("name, kwargs, arg", [
    ("fft", dict(n=7), X5), ("ifft", dict(n=3, norm="ortho"), C4),
    ("rfft", dict(n=4, norm="forward"), X5), ("irfft", dict(n=5), C4),
    ("hfft", dict(norm="ortho"), C4), ("ihfft", {}, X5),
    ("fftn", dict(s=(3, 2), axes=(0, 1)), X23),
    ("irfftn", dict(axes=(0,)), C4)],
    ids=["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "irfftn"])
def test_derivatives_vmap_jit(name, kwargs, arg):
    # Values, jit == eager, float64 JVP/VJP against central differences, vmap vs loop.
    complex_input = arg.dtype.kind == "c"
    args = [arg.real.copy(), arg.imag.copy()] if complex_input else [arg]

    def ours(x):
        return getattr(lfft, name)(x, **kwargs)

    def ref(x):
        return getattr(np.fft, name)(x, **kwargs)

    fun = _real_view(ours, complex_input)
    check(fun, args, _reference(ref, complex_input), diff_argnums=tuple(range(len(args))),
          rtol=2e-5, atol=2e-5)



def test_grad_of_real_part():
    x = _data((6,), np.float32)
    # d/dx sum(Re(fft(x)) * w) = Re(fft(w)) for real w (the DFT matrix is symmetric).
    w = _data((6,), np.float32)
    got = lc.grad(lambda x: lax.reduce_sum(lax.real(lfft.fft(x)) * w, (0,)))(x)
    assert_close(got, np.fft.fft(w).real, np.float32)
    got = lc.grad(lambda x: lax.reduce_sum(lfft.irfft(lfft.rfft(x) * 2), (0,)))(x)
    assert_close(got, np.full(6, 2.0), np.float32)


@pytest.mark.parametrize("call, error, match", [
    (lambda: lfft.fft(X5, norm="bad"), ValueError, "invalid norm"),
    (lambda: lfft.fft2(X23, norm="Ortho"), ValueError, "invalid norm"),
    (lambda: lfft.fft(X5, n=0), ValueError, "at least 1"),
    (lambda: lfft.rfft(X5, n=-2), ValueError, "at least 1"),
    (lambda: lfft.irfft(np.complex64([1])), ValueError, "at least 1"),
    (lambda: lfft.fft(X5, axis=1), AxisError, "out of bounds"),
    (lambda: lfft.fft(np.float32(1.0)), AxisError, "out of bounds"),
    (lambda: lfft.fft(X5, axis=0.5), TypeError, "integer"),
    (lambda: lfft.fftn(X23, s=(2,), axes=(0, 1)), ValueError, "different lengths"),
    (lambda: lfft.fftn(X23, axes=(0, 0)), ValueError, "repeated axes"),
    (lambda: lfft.fftn(np.zeros((1, 1, 1, 1)), axes=None), ValueError, "1 to 3 axes"),
    (lambda: lfft.fft2(X23, axes=(0,)), ValueError, "exactly two axes"),
    (lambda: lfft.rfft(C4), TypeError, "real input"),
    (lambda: lfft.fft([1.0, 2.0]), TypeError, "lists and tuples"),
    (lambda: lfft.fftfreq(0), ValueError, "at least 1"),
    (lambda: lfft.fftfreq((4,)), ValueError, "integer"),
    (lambda: lfft.fftfreq(4, np.ones(2)), ValueError, "scalar"),
    (lambda: lfft.fftshift(X5, axes=2), AxisError, "out of bounds"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
