"""Resampling on a grid of half-centred pixels: output pixel `o` of a dimension maps to
the input coordinate `(o + 0.5 - translation) / scale`, and every input pixel `i`
(centred at `i + 0.5`) weighs in by a kernel of its distance. Each resampled
dimension is one matrix product with an (input × output) weight matrix.

The weights follow `jax.image`: they are normalised to sum to 1 over the input
pixels an output sees (or are all 0 when that sum is negligible), and an output
whose centre maps outside the input is 0. With `antialias`, downsampling widens
the kernel by 1 / scale, so it averages the input rather than sampling it.
`AREA` weighs input pixels by their overlap with the output pixel's footprint;
`CUBIC_PYTORCH` without antialiasing is PyTorch's bicubic (a = -0.75, border
pixels repeated twice) and, as in JAX, keeps the border value for outputs up to
two pixels past the edge. `NEAREST` is a gather, available in `resize` only.

>>> import numpy as np
>>> scale_and_translate(np.float32([0, 1, 2, 3]), (2,), (0,), np.float32([0.5]),
...                     np.float32([0.0]), "linear", antialias=False)
Array([0.5, 2.5], dtype=float32)
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import lamella.numpy as lnp
from lamella import lax
from lamella.core.trace import aval_of

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]

# Weight sums below this (1000 float32 epsilons) count as no coverage at all.
_NEGLIGIBLE = 1000 * float(np.finfo(np.float32).eps)


class ResizeMethod(enum.Enum):
    """The resampling methods of `resize` and `scale_and_translate`.

    >>> ResizeMethod.from_string("bilinear")
    <ResizeMethod.LINEAR: 1>
    """

    NEAREST = 0
    LINEAR = 1
    LANCZOS3 = 2
    LANCZOS5 = 3
    CUBIC = 4
    CUBIC_PYTORCH = 5
    AREA = 6

    @staticmethod
    def from_string(s: str) -> ResizeMethod:
        """The method a name denotes (JAX's names: "linear", "bicubic", "lanczos3", ...)."""
        try:
            return _NAMES[s]
        except (KeyError, TypeError):
            raise ValueError(f'Unknown resize method "{s}"; expected one of '
                             f"{sorted(_NAMES)}") from None


_NAMES = {
    "nearest": ResizeMethod.NEAREST, "linear": ResizeMethod.LINEAR,
    "bilinear": ResizeMethod.LINEAR, "trilinear": ResizeMethod.LINEAR,
    "triangle": ResizeMethod.LINEAR, "lanczos3": ResizeMethod.LANCZOS3,
    "lanczos5": ResizeMethod.LANCZOS5, "cubic": ResizeMethod.CUBIC,
    "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC,
    "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH, "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
    "area": ResizeMethod.AREA,
}


def _as_method(method: Any) -> ResizeMethod:
    return method if isinstance(method, ResizeMethod) else ResizeMethod.from_string(method)


# --- kernels of the distance x (in input pixels, already divided by the kernel scale) ---
def _triangle(x: Any) -> Any:
    return lnp.maximum(0.0, 1.0 - lnp.abs(x))


def _keys_cubic(a: float) -> Callable[[Any], Any]:
    """Keys' cubic convolution kernel with parameter `a` (-0.5: Keys; -0.75: PyTorch)."""
    def kernel(x: Any) -> Any:
        x = lnp.abs(x)
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return lnp.where(x < 1, near, lnp.where(x < 2, far, 0.0))
    return kernel


def _lanczos(radius: int) -> Callable[[Any], Any]:
    def kernel(x: Any) -> Any:
        # sinc(x) sinc(x / r) = r sin(pi x) sin(pi x / r) / (pi x)**2, with 1 at 0.
        small = lnp.abs(x) < 1e-7
        safe = lnp.where(small, 1.0, x)
        value = radius * lnp.sin(np.pi * safe) * lnp.sin(np.pi * safe / radius) / (
            np.pi * np.pi * safe * safe)
        return lnp.where(lnp.abs(x) < radius, lnp.where(small, 1.0, value), 0.0)
    return kernel


_KERNELS: dict[ResizeMethod, Callable[[Any], Any]] = {
    ResizeMethod.LINEAR: _triangle, ResizeMethod.CUBIC: _keys_cubic(-0.5),
    ResizeMethod.CUBIC_PYTORCH: _keys_cubic(-0.5), ResizeMethod.LANCZOS3: _lanczos(3),
    ResizeMethod.LANCZOS5: _lanczos(5),
}


# --- weight matrices ------------------------------------------------------------------
def _sample_positions(out_size: int, scale: Any, translation: Any, dtype: np.dtype) -> Any:
    """Where output pixel centres fall, in input index units (pixel i centred at i)."""
    inv_scale = 1.0 / scale
    centres = lax.add(lax.iota(dtype, out_size), np.asarray(0.5, dtype))
    return centres * inv_scale - translation * inv_scale - 0.5


def _normalised(weights: Any) -> Any:
    total = lnp.sum(weights, axis=0, keepdims=True)
    safe = lnp.where(total != 0, total, 1.0)
    return lnp.where(lnp.abs(total) > _NEGLIGIBLE, weights / safe, 0.0)


def _kernel_weights(in_size: int, positions: Any, scale: Any, method: ResizeMethod,
                    antialias: bool, dtype: np.dtype) -> Any:
    """(in_size, out_size) weights of a distance kernel, normalised per output."""
    kernel_scale = lnp.maximum(1.0 / scale, 1.0) if antialias else 1.0
    distance = positions[None, :] - lax.iota(dtype, in_size)[:, None]
    return _normalised(_KERNELS[method](lnp.abs(distance) / kernel_scale))


def _area_weights(in_size: int, positions: Any, scale: Any, dtype: np.dtype) -> Any:
    """(in_size, out_size) overlaps of each output footprint (1 / scale input pixels
    wide, centred at its sample position) with the input pixels, normalised."""
    half = 0.5 / scale
    pixel = lax.iota(dtype, in_size)[:, None]
    low = lnp.maximum(positions[None, :] - half, pixel - 0.5)
    high = lnp.minimum(positions[None, :] + half, pixel + 0.5)
    return _normalised(lnp.maximum(high - low, 0.0))


def _edge_padded_cubic_weights(in_size: int, positions: Any, dtype: np.dtype) -> Any:
    """PyTorch's bicubic as `jax.image` computes it: Keys' kernel with a = -0.75 over the
    input extended by two border copies on each side (their weights folded onto the
    border pixel), normalised per output. No output is zeroed for falling outside the
    input; an output is 0 only where every weight is (two pixels past the copies)."""
    kernel = _keys_cubic(-0.75)
    pixel = lax.iota(dtype, in_size)[:, None]
    weights = kernel(positions[None, :] - pixel)
    before = kernel(positions + 1.0) + kernel(positions + 2.0)  # pixels -1 and -2
    after = kernel(positions - in_size) + kernel(positions - (in_size + 1.0))
    weights = weights + lnp.where(pixel == 0, before[None, :], 0.0)
    weights = weights + lnp.where(pixel == in_size - 1, after[None, :], 0.0)
    return _normalised(weights)


def _weights(in_size: int, out_size: int, scale: Any, translation: Any,
             method: ResizeMethod, antialias: bool, dtype: np.dtype) -> Any:
    positions = _sample_positions(out_size, scale, translation, dtype)
    if method == ResizeMethod.CUBIC_PYTORCH and not antialias:
        return _edge_padded_cubic_weights(in_size, positions, dtype)
    if method == ResizeMethod.AREA:
        weights = _area_weights(in_size, positions, scale, dtype)
    else:
        weights = _kernel_weights(in_size, positions, scale, method, antialias, dtype)
    inside = (positions >= -0.5) & (positions <= in_size - 0.5)
    return lnp.where(inside[None, :], weights, 0.0)


# --- the public functions -------------------------------------------------------------
def _check_shape(image: Any, shape: Sequence[int]) -> tuple[int, ...]:
    shape = tuple(int(d) for d in shape)
    if len(shape) != len(aval_of(image).shape):
        raise ValueError("shape must have length equal to the number of dimensions of x; "
                         f" {shape} vs {aval_of(image).shape}")
    if any(d < 0 for d in shape):
        raise ValueError(f"shape must not have negative sizes, got {shape}")
    return shape


def _float_dtype(dtype: np.dtype) -> np.dtype:
    return dtype if lnp.issubdtype(dtype, np.inexact) else lnp.zeros(0).dtype


def scale_and_translate(image: Any, shape: Sequence[int], spatial_dims: Sequence[int],
                        scale: Any, translation: Any, method: str | ResizeMethod,
                        antialias: bool = True, precision: Any = lax.Precision.HIGHEST) -> Any:
    """`image` resampled to `shape` along `spatial_dims`: input location x maps to
    `x * scale + translation` in the output (pixel centres at index + 0.5). Outputs
    mapping outside the input are 0. `scale` and `translation` (one entry per spatial
    dimension) may be traced and are differentiable; integer images give floats.

    >>> import numpy as np
    >>> scale_and_translate(np.float32([[0, 1, 2, 3]]), (1, 4), (1,), np.float32([1.0]),
    ...                     np.float32([1.0]), "linear")
    Array([[0., 0., 1., 2.]], dtype=float32)
    """
    method = _as_method(method)
    if method == ResizeMethod.NEAREST:
        raise ValueError("Nearest neighbor resampling is not currently supported for "
                         "scale_and_translate (use resize, or method='linear')")
    image = lnp.asarray(image)
    shape = _check_shape(image, shape)
    spatial_dims = tuple(int(d) for d in spatial_dims)
    in_shape = aval_of(image).shape
    for d in range(len(in_shape)):
        if d not in spatial_dims and shape[d] != in_shape[d]:
            raise ValueError(f"scale_and_translate: dimension {d} is not spatial, so its "
                             f"size must stay {in_shape[d]}, got {shape[d]}")
    dtype = _float_dtype(aval_of(image).dtype)
    real = lnp.real(lnp.zeros((), dtype)).dtype  # weights are real even for complex images
    weight_dtype = np.dtype(np.float64) if real == np.float64 else np.dtype(np.float32)
    scale = lnp.asarray(scale, weight_dtype)
    translation = lnp.asarray(translation, weight_dtype)
    if aval_of(scale).shape != (len(spatial_dims),) or \
            aval_of(translation).shape != (len(spatial_dims),):
        raise ValueError(f"scale and translation need one entry per spatial dimension "
                         f"({len(spatial_dims)}), got shapes {aval_of(scale).shape} and "
                         f"{aval_of(translation).shape}")
    out = lax.convert_element_type(image, dtype)
    for k, d in enumerate(spatial_dims):
        weights = _weights(in_shape[d], shape[d], scale[k], translation[k], method,
                           antialias, weight_dtype)
        out = _contract(out, lax.convert_element_type(weights, dtype), d, precision)
    return out


def _contract(x: Any, weights: Any, dim: int, precision: Any) -> Any:
    """x with axis `dim` (size n) replaced by weights' output axis: x · W over n."""
    rank = len(aval_of(x).shape)
    out = lax.dot_general(x, weights, (((dim,), (0,)), ((), ())), precision=precision)
    return lnp.moveaxis(out, rank - 1, dim) if dim != rank - 1 else out


def _resize_nearest(image: Any, shape: tuple[int, ...]) -> Any:
    out = image
    for d, (n, m) in enumerate(zip(aval_of(image).shape, shape)):
        if n == m:
            continue
        if n == 0 or m == 0:
            out = lax.slice_in_dim(out, 0, 0, axis=d) if m == 0 else lnp.zeros(
                (*aval_of(out).shape[:d], m, *aval_of(out).shape[d + 1:]), aval_of(out).dtype)
            continue
        # Output pixel o takes the input pixel under its centre, (o + 0.5) * n / m.
        centres = (lax.iota(np.float32, m) + np.float32(0.5)) * np.float32(n) / np.float32(m)
        index = lnp.minimum(lax.convert_element_type(lnp.floor(centres), np.int32), n - 1)
        out = lnp.take(out, index, axis=d)
    return out


def resize(image: Any, shape: Sequence[int], method: str | ResizeMethod,
           antialias: bool = True, precision: Any = lax.Precision.HIGHEST) -> Any:
    """`image` resampled to `shape` (every dimension may change, as for volumes or
    batches of images: give the same size to dimensions to keep).

    Methods (`ResizeMethod` or its names): "nearest" (keeps the dtype; `antialias` and
    `precision` are ignored), "linear"/"bilinear"/"trilinear"/"triangle",
    "cubic"/"bicubic"/"tricubic" (Keys, a = -0.5), "cubic-pytorch" (PyTorch's bicubic
    without antialiasing), "lanczos3", "lanczos5" and "area". Other methods give a
    floating result, antialiased when downsampling unless `antialias=False`.

    >>> import numpy as np
    >>> resize(np.arange(4, dtype=np.float32), (2,), "linear", antialias=False)
    Array([0.5, 2.5], dtype=float32)
    >>> resize(np.float32([0, 0, 0, 8, 8, 8]), (2,), "linear")  # antialiased: averages
    Array([1., 7.], dtype=float32)
    >>> resize(np.int32([[1, 2], [3, 4]]), (2, 4), "nearest")
    Array([[1, 1, 2, 2],
           [3, 3, 4, 4]], dtype=int32)
    """
    method = _as_method(method)
    image = lnp.asarray(image)
    shape = _check_shape(image, shape)
    if method == ResizeMethod.NEAREST:
        return _resize_nearest(image, shape)
    in_shape = aval_of(image).shape
    dims = tuple(d for d in range(len(shape)) if shape[d] != in_shape[d])
    if any(in_shape[d] == 0 or shape[d] == 0 for d in dims):
        return lnp.zeros(shape, _float_dtype(aval_of(image).dtype))
    scale = np.float32([shape[d] / in_shape[d] for d in dims]).reshape(len(dims))
    return scale_and_translate(image, shape, dims, scale, np.zeros(len(dims), np.float32),
                               method, antialias, precision)
