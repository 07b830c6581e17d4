"""welch, csd, stft, istft and detrend against scipy.signal: values over segment
lengths, overlaps, FFT lengths, windows, boundaries, detrending, scalings and
averages (float32 and float64); derivatives, vmap, jit; errors."""

import functools
import warnings

import numpy as np
import pytest
import scipy.signal as ss
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as jnp
from lamella.lax.test_util import check_derivatives, check_jit_matches_eager, check_vmap
from lamella.scipy import signal as ls

N = 48
# XLA flushes subnormal floats to zero on CPU: absolute tolerances start at the
# smallest normal float32.
TINY = np.finfo(np.float32).tiny
SIGNAL = hnp.arrays(np.float32, (2, N), elements=st.floats(-10, 10, width=32))

WELCH_CONFIGS = [
    dict(nperseg=16),
    dict(nperseg=16, noverlap=4, nfft=20, scaling="spectrum"),
    dict(nperseg=15, detrend="linear", average="median"),
    dict(nperseg=12, window=("tukey", 0.25), return_onesided=False),
    dict(window=np.hanning(10).astype(np.float32), detrend=False, fs=3.0),
    dict(nperseg=16, nfft=17, axis=0),
]
STFT_CONFIGS = [
    dict(nperseg=16),
    dict(nperseg=16, noverlap=4, nfft=20),
    dict(nperseg=15, boundary="even"),
    dict(nperseg=16, boundary="odd", padded=False),
    dict(nperseg=16, boundary=None, return_onesided=False, fs=2.0),
    dict(nperseg=12, boundary="constant", detrend="constant", axis=0),
]


def _arrays_of(config):
    return {k: v for k, v in config.items() if isinstance(v, np.ndarray)}


@functools.cache
def _jitted(name, index):
    """`name` with config `index`, jitted once: its arrays are traced, the rest static."""
    config = (WELCH_CONFIGS if name in ("welch", "csd") else STFT_CONFIGS)[index]
    static = {k: v for k, v in config.items() if k not in _arrays_of(config)}
    return lc.jit(lambda *args, **arrays: getattr(ls, name)(*args, **arrays, **static))


def _close(got, want, dtype, tol, scale=1.0):
    """Each result within `tol` of the reference, relative to its largest entry or to
    `scale` (the size of the input's contribution, where the reference is 0)."""
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == np.shape(w), (g.shape, np.shape(w))
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(np.abs(w).max(), scale) + TINY)
    assert np.asarray(got[-1]).dtype == dtype


def _oriented(x, config):
    return x.T if config.get("axis") == 0 else x


@settings(max_examples=20, deadline=None)
@given(x=SIGNAL, y=SIGNAL, index=st.sampled_from(range(len(WELCH_CONFIGS))))
def test_welch_and_csd(x, y, index):
    config = WELCH_CONFIGS[index]
    x, y = _oriented(x, config), _oriented(y[:1], config)
    arrays = _arrays_of(config)
    scale = np.abs(x).max() * max(np.abs(x).max(), np.abs(y).max())
    _close(_jitted("welch", index)(x, **arrays), ss.welch(x.astype(np.float64), **config),
           np.float32, 2e-5, scale)
    _close(_jitted("csd", index)(x, y, **arrays), ss.csd(x.astype(np.float64), y, **config),
           np.complex64, 2e-5, scale)


@settings(max_examples=20, deadline=None)
@given(x=SIGNAL, index=st.sampled_from(range(len(STFT_CONFIGS))))
def test_stft_and_istft(x, index):
    config = STFT_CONFIGS[index]
    x = _oriented(x, config)
    _close(_jitted("stft", index)(x, **_arrays_of(config)), ss.stft(x.astype(np.float64), **config),
           np.complex64, 2e-5, np.abs(x).max())
    if config.get("axis") == 0 or config.get("boundary") == "odd":
        return
    inverse = {k: v for k, v in config.items() if k in ("nperseg", "noverlap", "nfft", "fs")}
    inverse.update(input_onesided=config.get("return_onesided", True),
                   boundary=config.get("boundary", "zeros") is not None)
    _, _, z = ss.stft(x.astype(np.float64), **config)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SciPy's NOLA warning without boundary
        want = ss.istft(z, **inverse)
    dtype = np.float32 if inverse["input_onesided"] else np.complex64
    _close(_istft(z.astype(np.complex64), **inverse), want, dtype, 2e-5, np.abs(x).max())


@settings(max_examples=12, deadline=None)
@given(x=SIGNAL, kind=st.sampled_from(["linear", "constant"]),
       bp=st.sampled_from([0, (10,), (5, 30, 47)]), axis=st.sampled_from([0, -1]))
def test_detrend(x, kind, bp, axis):
    x = x.T if axis == 0 else x
    got = _detrend(x, axis, kind, bp)
    want = ss.detrend(x.astype(np.float64), axis, kind, bp)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(x).max() + TINY)
    assert np.asarray(got).dtype == np.float32


_detrend = lc.jit(ls.detrend, static_argnums=(1, 2, 3))
_istft = lc.jit(ls.istft, static_argnames=("nperseg", "noverlap", "nfft", "input_onesided",
                                           "boundary"))


def test_default_segment_is_the_whole_signal():
    # JAX's nperseg default (SciPy's is 256, cut to the signal's length).
    x = np.random.default_rng(0).standard_normal(300).astype(np.float32)
    _close(lc.jit(ls.welch)(x), ss.welch(x.astype(np.float64), nperseg=300), np.float32, 2e-5)


def test_complex_input_is_two_sided():
    x = (np.random.default_rng(1).standard_normal((2, N)) * (1 + 0.5j)).astype(np.complex64)
    with pytest.warns(UserWarning, match="return_onesided=False"):
        got = lc.jit(lambda x: ls.welch(x, nperseg=16))(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _close(got, ss.welch(x.astype(np.complex128), nperseg=16), np.float32, 2e-5)


def test_float64():
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((2, N)), rng.standard_normal(N)  # y broadcasts against x
    _, _, z = ss.stft(x, nperseg=15)
    with lc.enable_x64():
        _close(lc.jit(lambda x, y: ls.csd(x, y, nperseg=16, average="median"))(x, y),
               ss.csd(x, y, nperseg=16, average="median"), np.complex128, 1e-12)
        _close(lc.jit(lambda x: ls.stft(x, nperseg=15))(x), ss.stft(x, nperseg=15),
               np.complex128, 1e-12)
        _close(lc.jit(lambda z: ls.istft(z, nperseg=15))(z), ss.istft(z, nperseg=15),
               np.float64, 1e-12)
        np.testing.assert_allclose(_detrend(x, -1, "linear", (20,)), ss.detrend(x, bp=[20]),
                                   atol=1e-12)


def _real_and_imaginary(fun):
    """`fun` with its complex result split into a real (2, ...) array: VJPs of
    real-to-complex functions keep only the real part of the cotangent product."""
    def split(*args):
        z = fun(*args)
        return jnp.stack([jnp.real(z), jnp.imag(z)])
    return split


X = np.random.default_rng(3).standard_normal((2, 40)).astype(np.float32)
Z = ss.stft(X[0], nperseg=8)[2].astype(np.complex64)


@pytest.mark.parametrize("fun, args", [
    (_real_and_imaginary(lambda x, y: ls.csd(x, y, nperseg=16, average="median")[1]),
     [X, X[::-1]]),
    (_real_and_imaginary(lambda x: ls.stft(x, nperseg=8, boundary="odd")[2]), [X]),
    (lambda re, im: ls.istft(lax.complex(re, im), nperseg=8)[1], [Z.real, Z.imag]),
    (lambda x: ls.detrend(x, bp=[7, 25]), [X]),
], ids=["csd", "stft", "istft", "detrend"])
def test_derivatives(fun, args):
    check_derivatives(lc.jit(fun), args, diff_argnums=tuple(range(len(args))), rtol=1e-5,
                      atol=1e-5)


@pytest.mark.parametrize("fun, arg", [
    (lambda x: ls.welch(x, nperseg=16, detrend="linear")[1], X[0]),
    (lambda z: ls.istft(z, nperseg=8)[1], Z),
], ids=["welch", "istft"])
def test_vmap(fun, arg):
    check_vmap(lc.jit(fun), [arg])


def test_jit_matches_eager():
    check_jit_matches_eager(lambda x: ls.stft(x, nperseg=8)[2], [X], rtol=1e-5)
    check_jit_matches_eager(lambda x: ls.detrend(x, bp=[9]), [X], rtol=1e-5)


@pytest.mark.parametrize("call, error, match", [
    (lambda: ls.welch(X, nperseg=0), ValueError, "positive"),
    (lambda: ls.welch(X, nperseg=8, noverlap=8), ValueError, "noverlap"),
    (lambda: ls.welch(X, nperseg=8, nfft=4), ValueError, "nfft"),
    (lambda: ls.welch(X, scaling="power"), ValueError, "scaling"),
    (lambda: ls.welch(X, nperseg=8, average="mode"), ValueError, "average"),
    (lambda: ls.welch(X, detrend="quadratic"), ValueError, "detrend"),
    (lambda: ls.welch(X, window=np.ones((2, 2))), ValueError, "1-D"),
    (lambda: ls.welch(X, window=np.ones(50)), ValueError, "longer than the input"),
    (lambda: ls.welch(X, window=np.ones(8), nperseg=9), ValueError, "differs"),
    (lambda: ls.welch(X, nperseg=8.5), TypeError, "integer"),
    (lambda: ls.welch(np.float32(1)), ValueError, "1-dimensional"),
    (lambda: ls.csd(X, np.ones((3, 40))), ValueError, "broadcast"),
    (lambda: ls.stft(X, boundary="periodic"), ValueError, "boundary"),
    (lambda: ls.stft(X, axis=2), ValueError, "out of bounds"),
    (lambda: ls.istft(Z[0]), ValueError, "at least 2-D"),
    (lambda: ls.istft(Z, time_axis=0, freq_axis=0), ValueError, "differ"),
    (lambda: ls.istft(Z, nperseg=8, window=np.ones(7)), ValueError, "length nperseg"),
    (lambda: ls.istft(Z, nperseg=8, nfft=6), ValueError, "nfft"),
    (lambda: ls.detrend(X, type="quadratic"), ValueError, "'linear' or 'constant'"),
    (lambda: ls.detrend(X, bp=[50]), ValueError, "breakpoints"),
    (lambda: ls.detrend(X, overwrite_data=True), ValueError, "overwrite_data"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_long_segments_warn():
    with pytest.warns(UserWarning, match="greater than the input length"):
        f, _ = ls.welch(X[0, :10], nperseg=16)
    assert f.shape == (6,)
