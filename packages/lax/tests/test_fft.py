"""fft (FFT, IFFT, RFFT, IRFFT over 1 to 3 trailing axes) against numpy.fft in
both precisions, with jit, vmap and derivatives: the complex-linear FFT and
IFFT through the harness's bilinear check, RFFT and IRFFT through real-valued
functions of them, and a real loss through its known gradient."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
from lamella.lax.fft import FftType, fft
from lamella.lax.test_util import check, check_derivatives, check_values

RNG = np.random.default_rng(0)
SHAPE = (2, 3, 4, 6)
LENGTHS = [(6,), (4, 6), (3, 4, 6)]


def _axes(lengths):
    return tuple(range(-len(lengths), 0))


def _complex(shape, dtype):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


@pytest.mark.parametrize("lengths", LENGTHS)
@pytest.mark.parametrize("kind", ["fft", "ifft"])
def test_complex_transforms(kind, lengths):
    ref = {"fft": np.fft.fftn, "ifft": np.fft.ifftn}[kind]
    x = _complex(SHAPE, np.complex64)
    check(lambda x: fft(x, kind, lengths), [x], lambda x: ref(x, axes=_axes(lengths)),
          rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("lengths", LENGTHS)
def test_rfft(lengths):
    x = RNG.standard_normal(SHAPE).astype(np.float32)
    check(lambda x: fft(x, FftType.RFFT, lengths), [x],
          lambda x: np.fft.rfftn(x, axes=_axes(lengths)), rtol=1e-5, atol=1e-5,
          diff_argnums=None)
    check_derivatives(lambda x: lax.add(lax.real(fft(x, "rfft", lengths)),
                                  lax.mul(lax.imag(fft(x, "rfft", lengths)), 3.0)), [x])


@pytest.mark.parametrize("n", [6, 7])
@pytest.mark.parametrize("lengths_head", [(), (4,), (3, 4)])
def test_irfft(lengths_head, n):
    lengths = (*lengths_head, n)
    spectrum = np.fft.rfftn(RNG.standard_normal((2, *lengths)), axes=_axes(lengths))
    spectrum = spectrum.astype(np.complex64)
    check(lambda z: fft(z, "irfft", lengths), [spectrum],
          lambda z: np.fft.irfftn(z, s=lengths, axes=_axes(lengths)), rtol=1e-5, atol=1e-5,
          diff_argnums=None)
    # Any complex input, not only a Hermitian half spectrum: the imaginary parts
    # that irfft ignores must get zero cotangents too.
    re, im = (RNG.standard_normal(spectrum.shape) for _ in range(2))
    check_derivatives(lambda a, b: fft(lax.complex(a, b), "irfft", lengths), [re, im],
                diff_argnums=(0, 1))


def test_float64_precision():
    with lc.enable_x64():
        x = RNG.standard_normal((3, 8))
        z = _complex((3, 8), np.complex128)
        check_values(lambda x: fft(x, "rfft", (8,)), [x], lambda x: np.fft.rfft(x))
        check_values(lambda z: fft(z, "fft", (3, 8)), [z], lambda z: np.fft.fft2(z),
                     rtol=1e-12, atol=1e-12)
        out = fft(np.fft.rfft(x), "irfft", (8,))
        assert np.asarray(out).dtype == np.float64
        np.testing.assert_allclose(out, x, rtol=1e-12, atol=1e-12)


def test_real_input_to_fft_becomes_complex():
    x = np.arange(4, dtype=np.float32)
    out = fft(x, "fft", (4,))
    assert np.asarray(out).dtype == np.complex64
    np.testing.assert_allclose(out, np.fft.fft(x), atol=1e-6)


def test_gradient_of_power_spectrum():
    # Parseval: sum |FFT x|^2 = N sum |x|^2, so its gradient for real x is 2 N x.
    def power(x):
        y = fft(x, "fft", (3, 4))
        return lax.reduce_sum(lax.add(lax.mul(lax.real(y), lax.real(y)),
                                      lax.mul(lax.imag(y), lax.imag(y))), (0, 1))

    def half_power(x):
        y = fft(x, "rfft", (3, 4))
        return lax.reduce_sum(lax.add(lax.mul(lax.real(y), lax.real(y)),
                                      lax.mul(lax.imag(y), lax.imag(y))), (0, 1))

    with lc.enable_x64():
        x = RNG.standard_normal((3, 4))
        np.testing.assert_allclose(lc.grad(power)(x), 24 * x, rtol=1e-12)
        # Numerical check of a loss through RFFT's transpose.
        g = np.asarray(lc.grad(half_power)(x))
        eps = 1e-6
        numerical = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            dx = np.zeros_like(x)
            dx[i] = eps
            numerical[i] = (float(half_power(x + dx)) - float(half_power(x - dx))) / (2 * eps)
        np.testing.assert_allclose(g, numerical, rtol=1e-6, atol=1e-6)


def test_vmap_over_transformed_axis():
    x = _complex((3, 4, 6), np.complex64)
    out = lc.vmap(lambda x: fft(x, "fft", (3, 6)), in_axes=1)(x)
    expected = np.stack([np.fft.fft2(x[:, i]) for i in range(4)])
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_errors():
    x = np.zeros((4, 6), np.complex64)
    with pytest.raises(ValueError, match=r"must be \(4, 5\)"):
        fft(x, "fft", (4, 5))
    with pytest.raises(ValueError, match=r"must be \(4, 4\) for fft_lengths \(4, 6\)"):
        fft(x, "irfft", (4, 6))
    with pytest.raises(TypeError, match="RFFT takes real input"):
        fft(x, "rfft", (6,))
    with pytest.raises(ValueError, match="1 to 3 trailing axes"):
        fft(np.zeros((1, 1, 1, 1), np.complex64), "fft", (1, 1, 1, 1))
    with pytest.raises(ValueError, match="Unknown FFT type"):
        fft(x, "dct", (6,))
