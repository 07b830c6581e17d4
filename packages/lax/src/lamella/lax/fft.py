"""Fast Fourier transforms: `fft` with `FftType` FFT, IFFT, RFFT or IRFFT over
the 1 to 3 trailing axes, lowered to one `stablehlo.fft`.

`fft` is linear. Cotangents pair with values bilinearly, real part taken
(`Re(sum(ct * dx))`, JAX's convention), so complex-linear maps transpose
without conjugation:
- FFT and IFFT: the DFT matrix and its inverse are symmetric, so each is its
  own transpose.
- RFFT (real -> half spectrum): the transpose of "FFT of a real input, keep
  the first n//2 + 1 frequencies" is "pad with zeros to n, FFT, real part".
- IRFFT (half spectrum -> real): each of the half spectrum's middle frequencies
  stands for itself and its mirror image, so the transpose is the RFFT of the
  cotangent weighted 2 there (1 at frequency 0 and at n/2), divided by the
  number of points and conjugated, as in JAX's `_irfft_transpose`.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad, batching, dtypes, jit
from lamella.core.trace import aval_of
from lamella.lax.arithmetic import conj, mul, real
from lamella.lax.conversion import convert_element_type
from lamella.lax.lowering import aval_to_ir_type, hlo, register_lowering
from lamella.lax.shapes import pad
from lamella.lax.standard import COMPLEX, FLOAT, check_dtypes, standard_primitive

__all__ = ["FftType", "fft", "fft_p"]


class FftType(enum.IntEnum):
    """The kind of transform: complex to complex forward (FFT) or inverse (IFFT),
    real to half spectrum (RFFT), half spectrum to real (IRFFT).

    >>> FftType("irfft")
    FftType.IRFFT
    """

    FFT = 0
    IFFT = 1
    RFFT = 2
    IRFFT = 3

    @classmethod
    def _missing_(cls, value: object) -> FftType:
        if isinstance(value, str) and value.upper() in cls.__members__:
            return cls[value.upper()]
        raise ValueError(f"Unknown FFT type {value!r}: use a lax.FftType or one of "
                         "'fft', 'ifft', 'rfft', 'irfft'")

    def __repr__(self) -> str:
        return f"FftType.{self.name}"


fft_p = standard_primitive("fft")


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64 if dtype in (np.float64, np.complex128) else np.float32)


def _complex_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.complex128 if dtype in (np.float64, np.complex128) else np.complex64)


def fft(x: Any, fft_type: FftType | str, fft_lengths: Sequence[int]) -> Any:
    """The unnormalized DFT (FFT, RFFT) or normalized inverse (IFFT, IRFFT) over the
    `len(fft_lengths)` (1 to 3) trailing axes, as `numpy.fft.fftn` and friends.

    FFT and IFFT take and return complex arrays (real input is converted). RFFT
    takes reals and returns the `n // 2 + 1` non-negative frequencies of the last
    axis; IRFFT inverts it, `fft_lengths[-1]` giving the real output's length.

    >>> import numpy as np
    >>> fft(np.array([1., 2., 3., 4.], np.float32), "rfft", (4,))
    Array([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex64)
    >>> fft(np.array([10., -2. + 2j, -2.], np.complex64), FftType.IRFFT, (4,))
    Array([1., 2., 3., 4.], dtype=float32)
    """
    return _jitted_fft(x, FftType(fft_type), tuple(int(n) for n in fft_lengths))


def _fft(x: Any, fft_type: FftType, fft_lengths: tuple[int, ...]) -> Any:
    dtype = aval_of(x).dtype
    if fft_type == FftType.RFFT:
        if dtype.kind == "c":
            raise TypeError(f"fft: RFFT takes real input, got {dtype.name}")
        x = convert_element_type(x, _real_dtype(dtypes.canonicalize_dtype(dtype)))
    else:
        x = convert_element_type(x, _complex_dtype(dtypes.canonicalize_dtype(dtype)))
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths)


# As JAX's, fft is a jitted function (its equation is `jit[name=fft ...]`); the
# public wrapper makes the static arguments hashable first (lists are accepted).
_fft.__name__ = _fft.__qualname__ = "fft"
_jitted_fft = jit(_fft, static_argnums=(1, 2))


@fft_p.def_abstract_eval
def _fft_abstract_eval(x: ShapedArray, *, fft_type, fft_lengths) -> ShapedArray:
    name = f"fft ({fft_type.name})"
    check_dtypes(name, (FLOAT,) if fft_type == FftType.RFFT else (COMPLEX,), x)
    if not 1 <= len(fft_lengths) <= 3:
        raise ValueError(f"{name}: transforms 1 to 3 trailing axes, got fft_lengths "
                         f"{fft_lengths}")
    if x.ndim < len(fft_lengths):
        raise ValueError(f"{name}: operand of shape {x.shape} has fewer axes than fft_lengths "
                         f"{fft_lengths}")
    lead, trailing = x.shape[:x.ndim - len(fft_lengths)], x.shape[x.ndim - len(fft_lengths):]
    expected = fft_lengths
    if fft_type == FftType.IRFFT:
        expected = (*fft_lengths[:-1], fft_lengths[-1] // 2 + 1)
    if trailing != expected:
        raise ValueError(f"{name}: the trailing axes of the operand, {trailing} (of shape "
                         f"{x.shape}), must be {expected} for fft_lengths {fft_lengths}")
    if fft_type == FftType.RFFT:
        return ShapedArray((*lead, *fft_lengths[:-1], fft_lengths[-1] // 2 + 1),
                           _complex_dtype(x.dtype))
    if fft_type == FftType.IRFFT:
        return ShapedArray((*lead, *fft_lengths), _real_dtype(x.dtype))
    return ShapedArray(x.shape, x.dtype)


def _rfft_transpose(ct: Any, fft_lengths: tuple[int, ...]) -> Any:
    # RFFT(x) = FFT(complex(x))[..., :n//2+1]; transposing each step in turn:
    # zero-pad the dropped frequencies, FFT (symmetric), real part.
    ndim = aval_of(ct).ndim
    n = fft_lengths[-1]
    config = [(0, 0, 0)] * (ndim - 1) + [(0, n - (n // 2 + 1), 0)]
    full = pad(ct, np.zeros((), aval_of(ct).dtype), config)
    return real(fft_p.bind(full, fft_type=FftType.FFT, fft_lengths=fft_lengths))


def _irfft_transpose(ct: Any, fft_lengths: tuple[int, ...]) -> Any:
    spectrum = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
    n = fft_lengths[-1]
    weights = np.full(n // 2 + 1, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:  # the Nyquist frequency n/2 has no mirror image either
        weights[-1] = 1.0
    dtype = aval_of(spectrum).dtype
    weights = (weights / np.prod(fft_lengths)).astype(dtype)
    return conj(mul(spectrum, weights.reshape((1,) * (aval_of(spectrum).ndim - 1) + (-1,))))


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    if fft_type == FftType.RFFT:
        return [_rfft_transpose(ct, fft_lengths)]
    if fft_type == FftType.IRFFT:
        return [_irfft_transpose(ct, fft_lengths)]
    return [fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)]


def _fft_batch(args, dims, *, fft_type, fft_lengths):
    (x,), (d,) = args, dims
    # Leading axes are transformed independently; a batch axis among the
    # transformed ones moves to the front.
    if d >= aval_of(x).ndim - len(fft_lengths):
        x, d = batching.moveaxis(x, d, 0), 0
    return fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths), d


def _fft_lowering(ctx, x, *, fft_type, fft_lengths):
    return [hlo.fft(x, hlo.FftTypeAttr.get(fft_type.name), list(fft_lengths),
                    results=[aval_to_ir_type(ctx.avals_out[0])])]


ad.deflinear2(fft_p, _fft_transpose)
batching.primitive_batchers[fft_p] = _fft_batch
register_lowering(fft_p, _fft_lowering)
