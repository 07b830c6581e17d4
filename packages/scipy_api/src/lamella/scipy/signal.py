"""Signal processing (`jax.scipy.signal`): N-d and 2-d convolution and correlation
(direct, or through FFTs), trend removal, and windowed spectral analysis — the
short-time Fourier transform and its inverse, and Welch's power and cross
spectral densities.

>>> import numpy as np
>>> convolve(np.float32([1, 2, 3]), np.float32([0, 1, 0.5]))
Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

import lamella.lax as lax
import lamella.numpy as jnp
from lamella.scipy._arguments import axis_index, inexact, static_int

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "csd", "detrend",
           "fftconvolve", "istft", "stft", "welch"]

ModeString = Literal["full", "same", "valid"]
_MODES = ("full", "same", "valid")


# --- which part of the full convolution each mode keeps --------------------------------
def _check_mode(name: str, mode: str) -> None:
    if mode not in _MODES:
        raise ValueError(f"{name}: mode must be one of {list(_MODES)}, got {mode!r}")


def _window_of_full(name: str, mode: str, shape1: Sequence[int], shape2: Sequence[int],
                    same_offset: Callable[[int], int]) -> tuple[list[int], list[int]]:
    """(starts, sizes): the slice of the full result a mode keeps, per dimension.

    'same' keeps `in1`'s size from `same_offset(len2)` on; 'valid' keeps the
    positions where the smaller input lies wholly inside the larger one.
    """
    if mode == "full":
        return [0] * len(shape1), [a + b - 1 for a, b in zip(shape1, shape2)]
    if mode == "same":
        return [same_offset(b) for b in shape2], list(shape1)
    if not (all(a >= b for a, b in zip(shape1, shape2))
            or all(a <= b for a, b in zip(shape1, shape2))):
        raise ValueError(f"{name}: in 'valid' mode one input must be at least as large as the "
                         f"other in every dimension, got shapes {tuple(shape1)} and "
                         f"{tuple(shape2)}")
    return ([min(a, b) - 1 for a, b in zip(shape1, shape2)],
            [abs(a - b) + 1 for a, b in zip(shape1, shape2)])


def _extend(x: Any, before: Sequence[int], after: Sequence[int], boundary: str,
            fillvalue: Any) -> Any:
    """`x` grown by `before`/`after` entries per dimension as `boundary` says (negative
    amounts crop)."""
    x = lax.pad(x, jnp.zeros((), x.dtype),
                [(min(b, 0), min(a, 0), 0) for b, a in zip(before, after)])
    widths = [(max(b, 0), max(a, 0)) for b, a in zip(before, after)]
    if not any(b or a for b, a in widths):
        return x
    if boundary == "fill":
        return jnp.pad(x, widths, constant_values=jnp.asarray(fillvalue, x.dtype))
    return jnp.pad(x, widths, mode=boundary)


def _direct(in1: Any, in2: Any, starts: Sequence[int], sizes: Sequence[int],
            precision: Any, boundary: str = "fill", fillvalue: Any = 0) -> Any:
    """Entries `starts + i` (`i < sizes`) of the full convolution of `in1` (extended past
    its edges by `boundary`) with `in2`, as one XLA convolution."""
    if in1.ndim == 0:
        return in1 * in2
    # The full result's entry n sums in1[n - m] * in2[m] for m < len2: in1 is needed
    # from start - len2 + 1 to start + size - 1.
    before = [b - 1 - s for b, s in zip(in2.shape, starts)]
    after = [s + n - a for s, n, a in zip(starts, sizes, in1.shape)]
    lhs = _extend(in1, before, after, boundary, fillvalue)
    # XLA's convolution does not flip its kernel: it correlates.
    rhs = jnp.flip(in2)
    out = lax.conv_general_dilated(lhs[None, None], rhs[None, None], (1,) * in1.ndim,
                                   [(0, 0)] * in1.ndim, precision=precision)
    return out[0, 0]


def _prepare(name: str, in1: Any, in2: Any) -> tuple[Any, Any]:
    in1, in2 = inexact(in1, in2)
    if in1.ndim != in2.ndim:
        raise ValueError(f"{name}: in1 and in2 must have the same number of dimensions, got "
                         f"shapes {in1.shape} and {in2.shape}")
    if in1.size == 0 or in2.size == 0:
        raise ValueError(f"{name}: zero-size inputs are not supported, got shapes {in1.shape} "
                         f"and {in2.shape}")
    return in1, in2


def _check_method(name: str, method: str) -> None:
    if method not in ("auto", "direct", "fft"):
        raise ValueError(f"{name}: method must be 'auto', 'direct' or 'fft', got {method!r}")


def convolve(in1: Any, in2: Any, mode: ModeString = "full", method: str = "auto",
             precision: Any = None) -> Any:
    """The N-dimensional convolution of `in1` with `in2` (of the same rank).

    `mode` keeps the 'full' result, the centred part of `in1`'s size ('same'), or the
    part that needs no zero padding ('valid'). `method` 'direct' (and 'auto') computes
    it as an XLA convolution, 'fft' as a product of FFTs (`fftconvolve`). Integer
    inputs give floating results.

    >>> import numpy as np
    >>> convolve(np.float32([1, 2, 3, 2, 1]), np.float32([1, 1, 1]), mode="same")
    Array([3., 6., 7., 6., 3.], dtype=float32)
    """
    _check_method("convolve", method)
    _check_mode("convolve", mode)
    if method == "fft":
        return fftconvolve(in1, in2, mode)
    in1, in2 = _prepare("convolve", in1, in2)
    starts, sizes = _window_of_full("convolve", mode, in1.shape, in2.shape,
                                    lambda n: (n - 1) // 2)
    return _direct(in1, in2, starts, sizes, precision)


def correlate(in1: Any, in2: Any, mode: ModeString = "full", method: str = "auto",
              precision: Any = None) -> Any:
    """The N-dimensional cross-correlation `z[k] = sum_n in1[n + k] * conj(in2[n])`.

    Modes and methods are `convolve`'s: it is the convolution of `in1` with `in2`
    reversed and conjugated.

    >>> import numpy as np
    >>> correlate(np.float32([1, 2, 3, 2, 1]), np.float32([1, 3, 2]), mode="valid")
    Array([13., 15., 11.], dtype=float32)
    """
    _check_method("correlate", method)
    in2 = jnp.asarray(in2)
    return convolve(in1, jnp.flip(jnp.conj(in2)), mode, method, precision)


def _boundary(name: str, boundary: str) -> str:
    """SciPy's boundary names as `jnp.pad` modes."""
    modes = {"fill": "fill", "pad": "fill", "wrap": "wrap", "circular": "wrap",
             "symm": "symmetric", "symmetric": "symmetric"}
    if boundary not in modes:
        raise ValueError(f"{name}: boundary must be 'fill', 'wrap' or 'symm' (or their "
                         f"aliases 'pad', 'circular', 'symmetric'), got {boundary!r}")
    return modes[boundary]


def _prepare_2d(name: str, in1: Any, in2: Any, mode: str, boundary: str,
                fillvalue: Any) -> tuple[Any, Any, str, Any]:
    _check_mode(name, mode)
    boundary = _boundary(name, boundary)
    if np.ndim(fillvalue) != 0:
        raise ValueError(f"{name}: fillvalue must be a scalar, got shape {np.shape(fillvalue)}")
    in1, in2 = _prepare(name, in1, in2)
    if in1.ndim != 2:
        raise ValueError(f"{name}: in1 and in2 must be 2-dimensional, got shapes {in1.shape} "
                         f"and {in2.shape}")
    # In 'valid' mode nothing outside in1 is read, except when in2 is the larger input:
    # then the roles swap and in1's surroundings must count as zeros.
    if mode == "valid":
        return in1, in2, "fill", 0
    return in1, in2, boundary, fillvalue


def convolve2d(in1: Any, in2: Any, mode: ModeString = "full", boundary: str = "fill",
               fillvalue: Any = 0, precision: Any = None) -> Any:
    """The 2-D convolution of `in1` with `in2`, `in1` extended past its edges by
    `boundary`: 'fill' (with `fillvalue`), 'wrap' (periodic) or 'symm' (mirrored).

    JAX supports only `boundary='fill', fillvalue=0`; the others follow SciPy.

    >>> import numpy as np
    >>> convolve2d(np.float32([[1, 2], [3, 4]]), np.float32([[1, 1]]), boundary="wrap",
    ...            mode="same")
    Array([[3., 3.],
           [7., 7.]], dtype=float32)
    """
    in1, in2, boundary, fillvalue = _prepare_2d("convolve2d", in1, in2, mode, boundary,
                                                fillvalue)
    starts, sizes = _window_of_full("convolve2d", mode, in1.shape, in2.shape,
                                    lambda n: (n - 1) // 2)
    return _direct(in1, in2, starts, sizes, precision, boundary, fillvalue)


def correlate2d(in1: Any, in2: Any, mode: ModeString = "full", boundary: str = "fill",
                fillvalue: Any = 0, precision: Any = None) -> Any:
    """The 2-D cross-correlation of `in1` with `in2`, with `convolve2d`'s boundaries.

    As in SciPy (and JAX), 'same' centres the result differently from `correlate`
    when a dimension of `in2` is even, and in 'valid' mode with `in2` the larger
    input the result is conjugated.

    >>> import numpy as np
    >>> correlate2d(np.float32([[1, 2, 3], [4, 5, 6]]), np.float32([[1, -1]]), mode="valid")
    Array([[-1., -1.],
           [-1., -1.]], dtype=float32)
    """
    in2 = jnp.asarray(in2)
    in1, kernel, boundary, fillvalue = _prepare_2d("correlate2d", in1, jnp.flip(jnp.conj(in2)),
                                                   mode, boundary, fillvalue)
    starts, sizes = _window_of_full("correlate2d", mode, in1.shape, kernel.shape,
                                    lambda n: n // 2)
    out = _direct(in1, kernel, starts, sizes, precision, boundary, fillvalue)
    swapped = mode == "valid" and any(a < b for a, b in zip(in1.shape, kernel.shape))
    return jnp.conj(out) if swapped else out


def fftconvolve(in1: Any, in2: Any, mode: ModeString = "full",
                axes: Sequence[int] | None = None) -> Any:
    """The convolution of `in1` with `in2` computed with FFTs over `axes` (default all).

    Along the other axes the inputs broadcast against each other (each size equal
    or 1). Results differ from `convolve`'s in the last bits.

    >>> import numpy as np
    >>> fftconvolve(np.float32([1, 2, 3, 2, 1]), np.float32([1, 1, 1]), mode="valid").round(4)
    Array([6., 7., 6.], dtype=float32)
    """
    _check_mode("fftconvolve", mode)
    in1, in2 = _prepare("fftconvolve", in1, in2)
    ndim = in1.ndim
    if axes is None:
        axes = tuple(range(ndim))
    else:
        axes = tuple(axis_index(a, ndim, "fftconvolve: axis") for a in
                     ((axes,) if isinstance(axes, int) else axes))
        if not axes or len(set(axes)) != len(axes):
            raise ValueError(f"fftconvolve: axes must be unique and not empty, got {axes}")
    for d in set(range(ndim)) - set(axes):
        if in1.shape[d] != in2.shape[d] and 1 not in (in1.shape[d], in2.shape[d]):
            raise ValueError(f"fftconvolve: axis {d} is not convolved, so its sizes must be "
                             f"equal or 1, got shapes {in1.shape} and {in2.shape}")
    shape1 = [in1.shape[a] for a in axes]
    shape2 = [in2.shape[a] for a in axes]
    starts, sizes = _window_of_full("fftconvolve", mode, shape1, shape2, lambda n: (n - 1) // 2)
    full = [a + b - 1 for a, b in zip(shape1, shape2)]
    if jnp.iscomplexobj(in1):
        out = jnp.fft.ifftn(jnp.fft.fftn(in1, full, axes) * jnp.fft.fftn(in2, full, axes),
                            full, axes)
    else:
        out = jnp.fft.irfftn(jnp.fft.rfftn(in1, full, axes) * jnp.fft.rfftn(in2, full, axes),
                             full, axes)
    for axis, start, size in zip(axes, starts, sizes):
        out = lax.slice_in_dim(out, start, start + size, axis=axis)
    return out.astype(in1.dtype)


# --- detrending -----------------------------------------------------------------------
def detrend(data: Any, axis: int = -1, type: str = "linear",
            bp: int | Sequence[int] | np.ndarray = 0, overwrite_data: None = None) -> Any:
    """`data` less its least-squares trend along `axis`: the mean (`type='constant'`)
    or a line (`'linear'`), piecewise between the breakpoints `bp`.

    >>> import numpy as np
    >>> detrend(np.float32([1, 4, 8, 8, 9]), type="constant")
    Array([-5., -2.,  2.,  2.,  3.], dtype=float32)
    """
    if overwrite_data is not None:
        raise ValueError("detrend: overwrite_data is not supported (arrays are immutable)")
    if type not in ("linear", "l", "constant", "c"):
        raise ValueError(f"detrend: type must be 'linear' or 'constant', got {type!r}")
    (data,) = inexact(data)
    if data.ndim == 0:
        raise ValueError("detrend: data must be at least 1-dimensional, got a 0-d array")
    axis = axis_index(axis, data.ndim)
    if type in ("constant", "c"):
        return data - jnp.mean(data, axis, keepdims=True)
    n = data.shape[axis]
    breaks = np.unique(np.concatenate([[0], np.ravel(np.asarray(bp, dtype=np.int64)), [n]]))
    if breaks[0] < 0 or breaks[-1] > n:
        raise ValueError(f"detrend: breakpoints must lie between 0 and {n}, the length of "
                         f"axis {axis}, got {bp!r}")
    pieces = []
    for start, stop in zip(breaks[:-1], breaks[1:]):
        piece = lax.slice_in_dim(data, int(start), int(stop), axis=axis)
        # Least squares on a centred abscissa: the residual of the best line needs no
        # solver, and stays accurate in float32.
        t = np.arange(stop - start, dtype=np.float64)
        t = (t - t.mean()).reshape([-1 if d == axis else 1 for d in range(data.ndim)])
        spread = max(float(np.sum(t * t)), 1.0)  # 0 for one point: its residual is 0 anyway
        t = jnp.asarray(t, jnp.finfo(data.dtype).dtype)
        centred = piece - jnp.mean(piece, axis, keepdims=True)
        slope = jnp.sum(t * centred, axis, keepdims=True) / spread
        pieces.append(centred - slope * t)
    return jnp.concatenate(pieces, axis)


# --- windowed spectral analysis -------------------------------------------------------
def _hann(n: int) -> np.ndarray:
    """The periodic Hann window (SciPy's `get_window('hann', n)`)."""
    return np.ones(1) if n == 1 else 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)


def _named_window(window: str | tuple, n: int) -> np.ndarray:
    if isinstance(window, str) and window in ("hann", "hanning"):
        return _hann(n)
    try:
        from scipy.signal import get_window
    except ImportError as err:
        raise ImportError(f"the window {window!r} needs SciPy (scipy.signal.get_window); "
                          "only 'hann' or an array window works without it") from err
    return get_window(window, n)


def _segment_window(name: str, window: Any, nperseg: int | None, length: int,
                    dtype: Any) -> tuple[Any, int]:
    """The window array and the segment length, from a window name (whose default
    length is the whole signal, as in JAX) or a window array."""
    if isinstance(window, (str, tuple)):
        size = length if nperseg is None else nperseg
        if size > length:
            warnings.warn(f"{name}: nperseg={size} is greater than the input length {length}, "
                          f"using nperseg={length}", stacklevel=3)
            size = length
        return jnp.asarray(_named_window(window, size), dtype), size
    win = jnp.asarray(window).astype(dtype)
    if win.ndim != 1:
        raise ValueError(f"{name}: window must be 1-D, got shape {win.shape}")
    if win.shape[0] > length:
        raise ValueError(f"{name}: the window (length {win.shape[0]}) is longer than the "
                         f"input signal ({length})")
    if nperseg is not None and nperseg != win.shape[0]:
        raise ValueError(f"{name}: nperseg={nperseg} differs from the window's length "
                         f"{win.shape[0]}")
    return win, win.shape[0]


def _frames(x: Any, nperseg: int, step: int) -> Any:
    """The segments `x[..., s*step : s*step + nperseg]`, stacked on axis -2.

    Built from `ceil(nperseg / step)` shifted views of `x` cut into blocks of `step`:
    slices and one concatenation, no gather.
    """
    count = (x.shape[-1] - nperseg) // step + 1
    chunks = -(-nperseg // step)
    total = (count + chunks - 1) * step
    x = lax.pad(x, jnp.zeros((), x.dtype),
                [(0, 0, 0)] * (x.ndim - 1) + [(0, total - x.shape[-1], 0)])
    blocks = x.reshape(*x.shape[:-1], count + chunks - 1, step)
    frames = jnp.concatenate([blocks[..., c:c + count, :] for c in range(chunks)], axis=-1)
    return frames[..., :nperseg]


def _overlap_add(frames: Any, step: int) -> Any:
    """The sum of segments (..., count, n) placed `step` apart: `_frames`' adjoint."""
    count, n = frames.shape[-2:]
    chunks = -(-n // step)
    batch = frames.shape[:-2]
    frames = jnp.pad(frames, [(0, 0)] * (frames.ndim - 1) + [(0, chunks * step - n)])
    frames = frames.reshape(*batch, count, chunks, step)
    total = sum(jnp.pad(frames[..., c, :], [(0, 0)] * len(batch) + [(c, chunks - 1 - c), (0, 0)])
                for c in range(chunks))
    return total.reshape(*batch, (count + chunks - 1) * step)[..., :step * (count - 1) + n]


def _odd_extension(x: Any, n: int) -> Any:
    """`x` extended by `n` points at each end, point-symmetric about its end points."""
    left = 2 * x[..., :1] - jnp.flip(x[..., 1:n + 1], -1)
    right = 2 * x[..., -1:] - jnp.flip(x[..., -n - 1:-1], -1)
    return jnp.concatenate([left, x, right], -1)


def _extend_ends(x: Any, n: int, boundary: str | None) -> Any:
    # n = nperseg // 2 < the signal's length: reflections never run out of samples.
    if boundary is None or n == 0:
        return x
    if boundary == "odd":
        return _odd_extension(x, n)
    pad_mode = {"even": "reflect", "constant": "edge", "zeros": "constant"}[boundary]
    return jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(n, n)], mode=pad_mode)


def _detrender(name: str, detrend_type: Any, axis: int, ndim: int) -> Callable[[Any], Any]:
    if detrend_type is False or detrend_type is None:
        return lambda d: d
    if isinstance(detrend_type, str):
        if detrend_type not in ("linear", "l", "constant", "c"):
            raise ValueError(f"{name}: detrend must be 'constant', 'linear', False or a "
                             f"function, got {detrend_type!r}")
        return lambda d: detrend(d, axis=-1, type=detrend_type)
    if not callable(detrend_type):
        raise ValueError(f"{name}: detrend must be 'constant', 'linear', False or a function, "
                         f"got {detrend_type!r}")
    if axis == ndim - 1:
        return detrend_type
    # As in SciPy, a detrending function sees segments laid out like the input.
    return lambda d: jnp.moveaxis(detrend_type(jnp.moveaxis(d, -1, axis)), axis, -1)


def _spectral(name: str, x: Any, y: Any, fs: Any, window: Any, nperseg: Any, noverlap: Any,
              nfft: Any, detrend_type: Any, return_onesided: bool, scaling: str, axis: int,
              mode: str, boundary: str | None = None,
              padded: bool = False) -> tuple[Any, Any, Any]:
    """(frequencies, segment times, spectra) of windowed segments of `x` (and `y`).

    `mode` 'psd' gives per-segment (cross) power spectra, 'stft' the segments'
    scaled Fourier transforms; frequencies replace `axis`, segments come last.
    """
    if boundary not in (None, "even", "odd", "constant", "zeros"):
        raise ValueError(f"{name}: boundary must be one of 'even', 'odd', 'constant', "
                         f"'zeros' or None, got {boundary!r}")
    if scaling not in ("density", "spectrum"):
        raise ValueError(f"{name}: scaling must be 'density' or 'spectrum', got {scaling!r}")
    signals = inexact(x) if y is None else inexact(x, y)
    if any(s.ndim == 0 for s in signals):
        raise ValueError(f"{name}: the input must be at least 1-dimensional, got shapes "
                         f"{[s.shape for s in signals]}")
    # A 1-D signal is all time axis; the others have it at `axis`.
    time_axes = [0 if s.ndim == 1 else axis_index(axis, s.ndim) for s in signals]
    outers = [s.shape[:a] + s.shape[a + 1:] for s, a in zip(signals, time_axes)]
    try:
        outer = np.broadcast_shapes(*outers)
    except ValueError:
        raise ValueError(f"{name}: x of shape {signals[0].shape} and y of shape "
                         f"{signals[1].shape} do not broadcast outside axis {axis}") from None
    axis = axis_index(axis, len(outer) + 1)
    lengths = [s.shape[a] for s, a in zip(signals, time_axes)]
    x = signals[0]
    result_dtype = jnp.result_type(x, 1j)
    real_dtype = jnp.finfo(result_dtype).dtype
    length = max(lengths)
    if nperseg is not None:
        nperseg = static_int(nperseg, f"{name}: nperseg")
        if nperseg < 1:
            raise ValueError(f"{name}: nperseg must be a positive integer, got {nperseg}")
    if any(s.size == 0 for s in signals):
        shape = (*outer[:axis], min(lengths), *outer[axis:])
        return (jnp.zeros(shape, real_dtype), jnp.zeros(shape, real_dtype),
                jnp.zeros(shape, result_dtype))
    win, nperseg = _segment_window(name, window, nperseg, length, x.dtype)
    noverlap = nperseg // 2 if noverlap is None else static_int(noverlap, f"{name}: noverlap")
    nfft = nperseg if nfft is None else static_int(nfft, f"{name}: nfft")
    if nfft < nperseg:
        raise ValueError(f"{name}: nfft={nfft} must be at least nperseg={nperseg}")
    if not 0 <= noverlap < nperseg:
        raise ValueError(f"{name}: noverlap={noverlap} must be at least 0 and less than "
                         f"nperseg={nperseg}")
    step = nperseg - noverlap
    onesided = bool(return_onesided)
    if onesided and jnp.iscomplexobj(x):
        warnings.warn(f"{name}: input data is complex, switching to return_onesided=False",
                      stacklevel=3)
        onesided = False
    detrend_func = _detrender(name, detrend_type, axis, len(outer) + 1)

    def transform(signal: Any, time_axis: int) -> Any:
        signal = jnp.moveaxis(signal, time_axis, -1)
        if signal.shape[-1] < length:  # the shorter of x and y gets zeros
            signal = jnp.pad(signal, [(0, 0)] * (signal.ndim - 1)
                             + [(0, length - signal.shape[-1])])
        signal = _extend_ends(signal, nperseg // 2, boundary)
        if padded:
            extra = (-(signal.shape[-1] - nperseg) % step) % nperseg
            signal = jnp.pad(signal, [(0, 0)] * (signal.ndim - 1) + [(0, extra)])
        segments = detrend_func(_frames(signal, nperseg, step)) * win
        return (jnp.fft.rfft if onesided else jnp.fft.fft)(segments, n=nfft)

    spectra = transform(x, time_axes[0])
    if scaling == "density":
        scale = 1.0 / (fs * jnp.sum(win * win))
    else:
        scale = 1.0 / jnp.sum(win) ** 2
    if mode == "stft":
        spectra = spectra * jnp.sqrt(scale)
    else:
        other = spectra if y is None else transform(signals[1], time_axes[1])
        spectra = jnp.conj(spectra) * other * scale
        if onesided:
            # Each positive frequency stands for its negative twin too (not 0 or Nyquist).
            double = np.full(spectra.shape[-1], 2.0)
            double[0] = 1.0
            if nfft % 2 == 0:
                double[-1] = 1.0
            spectra = spectra * jnp.asarray(double, real_dtype)
    spectra = spectra.astype(result_dtype)
    if y is None and mode == "psd":
        spectra = jnp.real(spectra)

    bins = np.arange(nfft // 2 + 1) if onesided else np.fft.fftfreq(nfft, 1.0 / nfft)
    freqs = jnp.asarray(bins / nfft, real_dtype) * fs
    padded_length = spectra.shape[-2] * step + noverlap  # the length the segments span
    centres = np.arange(nperseg / 2, padded_length - nperseg / 2 + 1, step)
    if boundary is not None:
        centres = centres - nperseg / 2
    times = jnp.asarray(centres, real_dtype) / fs
    return freqs, times, jnp.moveaxis(spectra, -1, axis)


def stft(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int = 256,
         noverlap: int | None = None, nfft: int | None = None, detrend: Any = False,
         return_onesided: bool = True, boundary: str | None = "zeros", padded: bool = True,
         axis: int = -1) -> tuple[Any, Any, Any]:
    """The short-time Fourier transform of `x` along `axis`: `(f, t, Zxx)`, with `Zxx`'s
    frequencies at `axis` and its segments on a new last axis.

    Segments of `nperseg` samples overlap by `noverlap` (default half), are
    detrended as `detrend` says, multiplied by `window` and transformed with
    `nfft` points; `boundary` extends the signal by half a segment at both ends
    ('zeros', 'even', 'odd', 'constant' or None) and `padded` completes the last
    segment with zeros.

    >>> import numpy as np
    >>> f, t, Z = stft(np.float32([1, 2, 3, 2, 1, 0, 1, 2]), nperseg=4)
    >>> Z.shape, t
    ((3, 5), Array([0., 2., 4., 6., 8.], dtype=float32))
    """
    return _spectral("stft", x, None, fs, window, nperseg, noverlap, nfft, detrend,
                     return_onesided, "spectrum", axis, "stft", boundary, padded)


def _average(spectra: Any, average: str) -> Any:
    """The mean or (bias-corrected) median of per-segment spectra over the last axis."""
    if spectra.ndim < 2 or spectra.size == 0:
        return spectra
    count = spectra.shape[-1]
    if count == 1:
        return spectra[..., 0]
    if average == "mean":
        return jnp.mean(spectra, axis=-1)
    # The median of chi-square distributed periodograms underestimates their mean.
    bias = 1.0 + sum(1.0 / (k + 1) - 1.0 / k for k in range(2, count, 2))
    if jnp.iscomplexobj(spectra):
        median = lax.complex(jnp.median(jnp.real(spectra), axis=-1),
                             jnp.median(jnp.imag(spectra), axis=-1))
    else:
        median = jnp.median(spectra, axis=-1)
    return median / jnp.asarray(bias, jnp.finfo(spectra.dtype).dtype)


def csd(x: Any, y: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
        noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
        return_onesided: bool = True, scaling: str = "density", axis: int = -1,
        average: str = "mean") -> tuple[Any, Any]:
    """The cross power spectral density of `x` and `y` by Welch's method: `(f, Pxy)`,
    the average of the segments' `conj(X) * Y` (complex; with `y=None`, the real
    power spectral density of `x`, as `welch`).

    Segments are as in `welch`: `nperseg` defaults to the whole signal (JAX's
    default; SciPy's is 256).

    >>> import numpy as np
    >>> x = np.float32([0, 1, 0, -1, 0, 1, 0, -1])
    >>> f, p = csd(x, x, nperseg=4)
    >>> f
    Array([0.  , 0.25, 0.5 ], dtype=float32)
    >>> p.round(4)
    Array([0.    +0.j, 1.3333+0.j, 0.    +0.j], dtype=complex64)
    """
    if average not in ("mean", "median"):
        raise ValueError(f"csd: average must be 'mean' or 'median', got {average!r}")
    freqs, _, spectra = _spectral("csd", x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                  return_onesided, scaling, axis, "psd")
    return freqs, _average(spectra, average)


def welch(x: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, detrend: Any = "constant",
          return_onesided: bool = True, scaling: str = "density", axis: int = -1,
          average: str = "mean") -> tuple[Any, Any]:
    """The power spectral density of `x` by Welch's method: `(f, Pxx)`, the average
    periodogram of overlapping windowed segments.

    `scaling` 'density' gives power per unit frequency, 'spectrum' power;
    `average` is 'mean' or 'median'. `nperseg` defaults to the whole signal
    (JAX's default; SciPy's is 256).

    >>> import numpy as np
    >>> f, p = welch(np.float32([0, 1, 0, -1, 0, 1, 0, -1]), nperseg=4)
    >>> p.round(4)
    Array([0.    , 1.3333, 0.    ], dtype=float32)
    """
    return csd(x, None, fs, window, nperseg, noverlap, nfft, detrend, return_onesided, scaling,
               axis, average)


def istft(Zxx: Any, fs: Any = 1.0, window: Any = "hann", nperseg: int | None = None,
          noverlap: int | None = None, nfft: int | None = None, input_onesided: bool = True,
          boundary: bool = True, time_axis: int = -1,
          freq_axis: int = -2) -> tuple[Any, Any]:
    """The inverse short-time Fourier transform: `(t, x)` from `stft`'s `Zxx`, by
    windowed overlap-add.

    `nperseg` and `nfft` default to what `Zxx`'s frequency axis implies; with
    `boundary` the half segments `stft` added at the ends are removed.

    >>> import numpy as np
    >>> x = np.float32([1, 2, 3, 2, 1, 0, 1, 2])
    >>> t, y = istft(stft(x, nperseg=4)[2], nperseg=4)
    >>> y.round(5)
    Array([1., 2., 3., 2., 1., 0., 1., 2.], dtype=float32)
    """
    Zxx = jnp.asarray(Zxx)
    if Zxx.ndim < 2:
        raise ValueError(f"istft: Zxx must be at least 2-D, got shape {Zxx.shape}")
    freq_axis = axis_index(freq_axis, Zxx.ndim, "istft: freq_axis")
    time_axis = axis_index(time_axis, Zxx.ndim, "istft: time_axis")
    if freq_axis == time_axis:
        raise ValueError("istft: time_axis and freq_axis must differ")
    Zxx = Zxx.astype(jnp.result_type(Zxx, 1j))
    bins = Zxx.shape[freq_axis]
    n_default = 2 * (bins - 1) if input_onesided else bins
    nperseg = n_default if nperseg is None else static_int(nperseg, "istft: nperseg")
    if nperseg < 1:
        raise ValueError(f"istft: nperseg must be a positive integer, got {nperseg}")
    if nfft is None:
        # An odd nperseg with a one-sided input was transformed without padding.
        nfft = nperseg if input_onesided and nperseg == n_default + 1 else n_default
    nfft = static_int(nfft, "istft: nfft")
    if nfft < nperseg:
        raise ValueError(f"istft: nfft={nfft} must be at least nperseg={nperseg}")
    noverlap = nperseg // 2 if noverlap is None else static_int(noverlap, "istft: noverlap")
    if not 0 <= noverlap < nperseg:
        raise ValueError(f"istft: noverlap={noverlap} must be at least 0 and less than "
                         f"nperseg={nperseg}")
    step = nperseg - noverlap

    outer = [d for d in range(Zxx.ndim) if d not in (freq_axis, time_axis)]
    Zxx = jnp.transpose(Zxx, [*outer, freq_axis, time_axis])
    if input_onesided:
        segments = jnp.fft.irfft(Zxx, n=nfft, axis=-2)
    else:
        segments = jnp.fft.ifft(Zxx, n=nfft, axis=-2)
    segments = jnp.swapaxes(segments[..., :nperseg, :], -1, -2)  # (..., count, nperseg)
    real_dtype = jnp.finfo(segments.dtype).dtype
    if isinstance(window, (str, tuple)):
        win = jnp.asarray(_named_window(window, nperseg), real_dtype)
    else:
        win = jnp.asarray(window).astype(real_dtype)
        if win.shape != (nperseg,):
            raise ValueError(f"istft: window must be 1-D of length nperseg={nperseg}, got "
                             f"shape {win.shape}")
    # stft scaled each segment by 1 / sum(win) ('spectrum' scaling).
    x = _overlap_add(segments * (win * jnp.sum(win)), step)
    norm = _overlap_add(jnp.broadcast_to(win * win, (segments.shape[-2], nperseg)), step)
    if boundary:
        x = x[..., nperseg // 2:-(nperseg // 2)]
        norm = norm[..., nperseg // 2:-(nperseg // 2)]
    x = x / jnp.where(norm > 1e-10, norm, 1.0).astype(real_dtype)
    if x.ndim > 1 and time_axis != Zxx.ndim - 1:
        x = jnp.moveaxis(x, -1, time_axis - 1 if freq_axis < time_axis else time_axis)
    # As in SciPy, the times count along x's first axis.
    times = jnp.arange(x.shape[0], dtype=real_dtype) / fs
    return times, x
