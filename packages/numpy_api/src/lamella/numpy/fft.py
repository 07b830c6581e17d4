"""Discrete Fourier transforms (`jax.numpy.fft`), each one `lax.fft` over the
trailing axes.

The transformed axes are moved last (XLA transforms only trailing axes), the
input is cropped or zero-padded to the requested lengths `n` / `s`, and the
result is scaled for `norm` and moved back. Real input becomes complex64
(complex128 with x64); `lax.fft` is linear with a transpose rule, so every
function here is differentiable.

>>> import numpy as np
>>> fft(np.float32([1, 2, 3, 4]))
Array([10.+0.j, -2.+2.j, -2.+0.j, -2.-2.j], dtype=complex64)
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
from lamella import lax
from lamella.core import dtypes as core_dtypes
from lamella.core.trace import aval_of
from lamella.lax.fft import FftType
from lamella.numpy.util import asarray_internal, canonicalize_axis, check_arraylike

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn",
           "ifftshift", "ihfft", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq",
           "rfftn"]

_NORMS = (None, "backward", "ortho", "forward")
_INVERSE = (FftType.IFFT, FftType.IRFFT)


def _check_norm(name: str, norm: str | None) -> None:
    if norm not in _NORMS:
        raise ValueError(f"{name}: invalid norm {norm!r}; use None, 'backward', 'ortho' or "
                         "'forward'")


def _scale(x: Any, fft_type: FftType, lengths: Sequence[int], norm: str | None) -> Any:
    # lax.fft leaves forward transforms unscaled and divides inverse ones by N;
    # 'ortho' wants 1/sqrt(N) both ways and 'forward' moves the 1/N to the forward.
    if norm in (None, "backward"):
        return x
    count = float(np.prod(lengths))
    inverse = fft_type in _INVERSE
    if norm == "ortho":
        factor = np.sqrt(count) if inverse else 1 / np.sqrt(count)
    else:
        factor = count if inverse else 1 / count
    return lax.mul(x, np.array(factor, aval_of(x).dtype))


def _permute(x: Any, perm: Sequence[int]) -> Any:
    return x if tuple(perm) == tuple(range(len(perm))) else lax.transpose(x, perm)


def _resize(x: Any, axis: int, length: int) -> Any:
    """`x` cropped or zero-padded at the end of `axis` to `length`."""
    shape = aval_of(x).shape
    if shape[axis] > length:
        return lax.slice_in_dim(x, 0, length, axis=axis)
    if shape[axis] < length:
        config = [(0, 0, 0)] * len(shape)
        config[axis] = (0, length - shape[axis], 0)
        return lax.pad(x, np.zeros((), aval_of(x).dtype), config)
    return x


def _fft_core(name: str, fft_type: FftType, a: Any, s: Sequence[int] | None,
              axes: Sequence[int] | None, norm: str | None) -> Any:
    check_arraylike(name, a)
    _check_norm(name, norm)
    arr = asarray_internal(a)
    in_shape = aval_of(arr).shape
    ndim = len(in_shape)
    if fft_type == FftType.RFFT and aval_of(arr).dtype.kind == "c":
        raise TypeError(f"{name} takes real input, got {aval_of(arr).dtype}")
    if s is not None:
        try:
            s = tuple(operator.index(n) for n in s)
        except TypeError:
            raise TypeError(f"{name}: the lengths must be integers, got {s!r}") from None
        if axes is not None and len(s) != len(axes):
            raise ValueError(f"{name}: s {s} and axes {tuple(axes)} have different lengths")
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
        if len(axes) > ndim:
            raise ValueError(f"{name}: s {s} has more entries than the input of shape "
                             f"{aval_of(arr).shape} has axes")
    axes = tuple(canonicalize_axis(ax, ndim, "axes") for ax in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name} does not support repeated axes, got {axes}")
    if not 1 <= len(axes) <= 3:
        raise ValueError(f"{name} transforms 1 to 3 axes at once, got axes {axes} for an "
                         f"input of shape {aval_of(arr).shape}")

    rest = [d for d in range(ndim) if d not in axes]
    perm = (*rest, *axes)
    arr = _permute(arr, perm)
    last = range(ndim - len(axes), ndim)
    shape = aval_of(arr).shape
    if s is None:
        s = tuple(shape[d] for d in last)
        if fft_type == FftType.IRFFT:
            s = (*s[:-1], 2 * (s[-1] - 1))
    if any(n < 1 for n in s):
        raise ValueError(f"{name}: invalid number of data points {s} for an input of "
                         f"shape {in_shape}; each transform length must be at least 1")
    in_lengths = (*s[:-1], s[-1] // 2 + 1) if fft_type == FftType.IRFFT else s
    for d, n in zip(last, in_lengths):
        arr = _resize(arr, d, n)
    out = _scale(lax.fft(arr, fft_type, s), fft_type, s, norm)
    return _permute(out, np.argsort(perm))


def _one_axis(axis: Any) -> list[int]:
    try:
        return [operator.index(axis)]
    except TypeError:
        raise TypeError(f"axis must be an integer, got {axis!r}") from None


def _one_length(n: Any) -> list[int] | None:
    return None if n is None else [n]


def fft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The one-dimensional discrete Fourier transform along `axis`, the input cropped
    or zero-padded to `n` points first when given.

    >>> import numpy as np
    >>> fft(np.float32([1, 0, 0, 0]), n=2)
    Array([1.+0.j, 1.+0.j], dtype=complex64)
    """
    return _fft_core("fft", FftType.FFT, a, _one_length(n), _one_axis(axis), norm)


def ifft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The inverse of `fft` along `axis`.

    >>> import numpy as np
    >>> ifft(np.complex64([4, 0, 0, 0]))
    Array([1.+0.j, 1.+0.j, 1.+0.j, 1.+0.j], dtype=complex64)
    """
    return _fft_core("ifft", FftType.IFFT, a, _one_length(n), _one_axis(axis), norm)


def rfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The DFT of real input along `axis`: the `n // 2 + 1` non-negative frequencies.

    >>> import numpy as np
    >>> rfft(np.float32([1, 2, 3, 4]))
    Array([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex64)
    """
    return _fft_core("rfft", FftType.RFFT, a, _one_length(n), _one_axis(axis), norm)


def irfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The inverse of `rfft`: `n` (default `2 * (m - 1)` for `m` input points) real
    values along `axis`.

    >>> import numpy as np
    >>> irfft(np.complex64([10, -2 + 2j, -2]))
    Array([1., 2., 3., 4.], dtype=float32)
    """
    return _fft_core("irfft", FftType.IRFFT, a, _one_length(n), _one_axis(axis), norm)


_SWAPPED_NORM = {None: "forward", "backward": "forward", "ortho": "ortho",
                 "forward": "backward"}


def hfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The DFT of a signal with Hermitian symmetry given by its first half: a real
    spectrum of `n` points (default `2 * (m - 1)`).

    >>> import numpy as np
    >>> hfft(np.complex64([1, 2, 3]))
    Array([ 8., -2.,  0., -2.], dtype=float32)
    """
    check_arraylike("hfft", a)
    _check_norm("hfft", norm)
    a = asarray_internal(a)
    if aval_of(a).dtype.kind == "c":
        a = lax.conj(a)
    return _fft_core("hfft", FftType.IRFFT, a, _one_length(n), _one_axis(axis),
                     _SWAPPED_NORM[norm])


def ihfft(a: Any, n: int | None = None, axis: int = -1, norm: str | None = None) -> Any:
    """The inverse of `hfft`: the half spectrum of a real signal, conjugated and
    normalized.

    >>> import numpy as np
    >>> ihfft(np.float32([8, -2, 0, -2]))
    Array([1.-0.j, 2.-0.j, 3.-0.j], dtype=complex64)
    """
    _check_norm("ihfft", norm)
    out = _fft_core("ihfft", FftType.RFFT, a, _one_length(n), _one_axis(axis),
                    _SWAPPED_NORM[norm])
    return lax.conj(out)


def fftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: str | None = None) -> Any:
    """The DFT over `axes` (default: the last `len(s)` axes, or all), 1 to 3 of them.

    >>> import numpy as np
    >>> fftn(np.ones((2, 2), np.float32))
    Array([[4.+0.j, 0.+0.j],
           [0.+0.j, 0.+0.j]], dtype=complex64)
    """
    return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Any:
    """The inverse of `fftn`.

    >>> import numpy as np
    >>> ifftn(np.complex64([[4, 0], [0, 0]]))
    Array([[1.+0.j, 1.+0.j],
           [1.+0.j, 1.+0.j]], dtype=complex64)
    """
    return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None) -> Any:
    """The DFT of real input over `axes`, halved along the last of them.

    >>> import numpy as np
    >>> rfftn(np.ones((2, 2), np.float32))
    Array([[4.+0.j, 0.+0.j],
           [0.+0.j, 0.+0.j]], dtype=complex64)
    """
    return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None) -> Any:
    """The inverse of `rfftn`; the last axis grows to `s[-1]` (default `2 * (m - 1)`).

    >>> import numpy as np
    >>> irfftn(np.complex64([[4, 0], [0, 0]]))
    Array([[1., 1.],
           [1., 1.]], dtype=float32)
    """
    return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


def fft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
         norm: str | None = None) -> Any:
    """`fftn` over two axes, the last two by default.

    >>> import numpy as np
    >>> fft2(np.float32([[1, 0], [0, 0]]))
    Array([[1.+0.j, 1.+0.j],
           [1.+0.j, 1.+0.j]], dtype=complex64)
    """
    return _fft_core("fft2", FftType.FFT, a, s, _two_axes("fft2", axes), norm)


def ifft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Any:
    """`ifftn` over two axes, the last two by default.

    >>> import numpy as np
    >>> ifft2(np.complex64([[4, 0], [0, 0]]))
    Array([[1.+0.j, 1.+0.j],
           [1.+0.j, 1.+0.j]], dtype=complex64)
    """
    return _fft_core("ifft2", FftType.IFFT, a, s, _two_axes("ifft2", axes), norm)


def rfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: str | None = None) -> Any:
    """`rfftn` over two axes, the last two by default.

    >>> import numpy as np
    >>> rfft2(np.float32([[1, 0], [0, 0]]))
    Array([[1.+0.j, 1.+0.j],
           [1.+0.j, 1.+0.j]], dtype=complex64)
    """
    return _fft_core("rfft2", FftType.RFFT, a, s, _two_axes("rfft2", axes), norm)


def irfft2(a: Any, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
           norm: str | None = None) -> Any:
    """`irfftn` over two axes, the last two by default.

    >>> import numpy as np
    >>> irfft2(np.complex64([[4, 0], [0, 0]]))
    Array([[1., 1.],
           [1., 1.]], dtype=float32)
    """
    return _fft_core("irfft2", FftType.IRFFT, a, s, _two_axes("irfft2", axes), norm)


def _two_axes(name: str, axes: Sequence[int]) -> tuple[int, ...]:
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError(f"{name} transforms exactly two axes, got axes {axes}")
    return axes


def _frequencies(name: str, k: np.ndarray, n: Any, d: Any, dtype: Any) -> Any:
    dtype = core_dtypes.canonicalize_dtype(np.dtype(np.float64 if dtype is None else dtype))
    d = asarray_internal(d, dtype)
    if aval_of(d).shape != ():
        raise ValueError(f"{name}: the sample spacing d must be a scalar, got shape "
                         f"{aval_of(d).shape}")
    return lax.div(asarray_internal(k, dtype), lax.mul(d, np.array(n, dtype)))


def _length(name: str, n: Any) -> int:
    try:
        n = operator.index(n)
    except TypeError:
        raise ValueError(f"{name}: n must be an integer, got {n!r}") from None
    if n < 1:
        raise ValueError(f"{name}: n must be at least 1, got {n}")
    return n


def fftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of an `n`-point `fft` with sample spacing `d`:
    `[0, 1, ..., -(n // 2), ..., -1] / (d * n)`.

    >>> fftfreq(4)
    Array([ 0.  ,  0.25, -0.5 , -0.25], dtype=float32)
    """
    del device
    n = _length("fftfreq", n)
    k = np.arange(n)
    k = np.where(k < (n + 1) // 2, k, k - n)
    return _frequencies("fftfreq", k, n, d, dtype)


def rfftfreq(n: int, d: Any = 1.0, *, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of an `n`-point `rfft`: `[0, 1, ..., n // 2] / (d * n)`.

    >>> rfftfreq(4)
    Array([0.  , 0.25, 0.5 ], dtype=float32)
    """
    del device
    n = _length("rfftfreq", n)
    return _frequencies("rfftfreq", np.arange(n // 2 + 1), n, d, dtype)


def _roll(name: str, x: Any, axes: int | Sequence[int] | None, inverse: bool) -> Any:
    check_arraylike(name, x)
    x = asarray_internal(x)
    shape = aval_of(x).shape
    if axes is None:
        axes = range(len(shape))
    elif isinstance(axes, (int, np.integer)):
        axes = (axes,)
    for axis in (canonicalize_axis(ax, len(shape), "axes") for ax in axes):
        size = shape[axis]
        shift = (size - size // 2) if inverse else size // 2
        if size and shift % size:
            # A roll by `shift` moves the last `shift` entries to the front.
            cut = size - shift
            x = lax.concatenate([lax.slice_in_dim(x, cut, size, axis=axis),
                                 lax.slice_in_dim(x, 0, cut, axis=axis)], axis)
    return x


def fftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any:
    """`x` with the zero frequency moved to the middle of each of `axes` (all by default).

    >>> fftshift(fftfreq(5))
    Array([-0.4, -0.2,  0. ,  0.2,  0.4], dtype=float32)
    """
    return _roll("fftshift", x, axes, inverse=False)


def ifftshift(x: Any, axes: int | Sequence[int] | None = None) -> Any:
    """The inverse of `fftshift`.

    >>> ifftshift(fftshift(fftfreq(5)))
    Array([ 0. ,  0.2,  0.4, -0.4, -0.2], dtype=float32)
    """
    return _roll("ifftshift", x, axes, inverse=True)
