"""`jax.nn.initializers`: functions `init(key, shape, dtype)` that make parameter arrays.

lamella.random reproduces jax.random's streams bit for bit, and each initializer
here draws and scales its samples in the same order as JAX 0.10.2, so the same key
gives JAX's numbers (to the last bit for plain sampling; orthogonal matrices go
through a QR decomposition, whose last bits depend on the CPU's LAPACK).

`variance_scaling` is the general form: samples with variance `scale / n`, where n
is the fan-in, fan-out, or their arithmetic or geometric mean, computed from the
shape with `in_axis`, `out_axis` and `batch_axis` (every other axis is a receptive
field: a dense kernel (in, out) has fan-in `in`; a 2-D convolution kernel
(h, w, in, out) has fan-in `h * w * in`). Complex dtypes sample a disk (uniform) or
a modulus-truncated complex normal. A bad `mode` or `distribution` raises a
ValueError when the initializer is called, as in JAX.

>>> import lamella.random as lr
>>> init = glorot_normal()
>>> init(lr.key(0), (64, 32)).shape
(64, 32)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

import lamella.core as lc
import lamella.numpy as lnp
import lamella.random as lr

__all__ = ["Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
           "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
           "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
           "variance_scaling", "xavier_normal", "xavier_uniform", "zeros"]

Axes = int | Sequence[int]

# The standard deviation of a unit normal truncated to [-2, 2], and of a unit complex
# normal with its modulus truncated at 2: dividing by them makes the truncated samples'
# standard deviation the one asked for.
_TRUNCATED_STDDEV = .87962566103423978
_COMPLEX_TRUNCATED_STDDEV = .95311164380491208


@runtime_checkable
class Initializer(Protocol):
    """What every initializer here is: `init(key, shape, dtype=None, out_sharding=None)`."""

    def __call__(self, key: Any, shape: Sequence[int], dtype: Any = None,
                 out_sharding: Any = None) -> Any: ...


def _dtype(dtype: Any) -> np.dtype:
    """`dtype`, or the default float dtype (float32, float64 with x64), canonicalised."""
    return lc.canonicalize_dtype(np.dtype(np.float64 if dtype is None else dtype))


def _shape(shape: Any) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"an initializer's shape must be a sequence of ints, got "
                        f"{shape!r}") from None


def _placed(x: Any, out_sharding: Any) -> Any:
    return x if out_sharding is None else lc.device_put(x, out_sharding)


def _initializer(sample: Any, default_dtype: Any) -> Initializer:
    """`init(key, shape, dtype=default_dtype, out_sharding=None)` returning
    `sample(key, shape, dtype)` with the shape and dtype made canonical."""
    def init(key: Any, shape: Sequence[int], dtype: Any = default_dtype,
             out_sharding: Any = None) -> Any:
        return _placed(sample(key, _shape(shape), _dtype(dtype)), out_sharding)
    return init


# Each draw is one compiled program (per shape and dtype), and the arithmetic around it
# runs step by step, as in JAX, whose jax.random functions are jitted and whose
# initializers are not: compiling the scaling together with the draw would let XLA
# fuse (and round) them differently, and the same key would no longer give JAX's bits.
_uniform = lc.jit(lr.uniform, static_argnames=("shape", "dtype"))
_normal = lc.jit(lr.normal, static_argnames=("shape", "dtype"))
_truncated_normal = lc.jit(lr.truncated_normal, static_argnames=("shape", "dtype"))
_orthogonal = lc.jit(lr.orthogonal, static_argnames=("n", "shape", "dtype", "m"))


def zeros(key: Any, shape: Sequence[int], dtype: Any = None, out_sharding: Any = None) -> Any:
    """An array of zeros (the key is ignored).

    >>> import lamella.random as lr
    >>> zeros(lr.key(42), (2, 3))
    Array([[0., 0., 0.],
           [0., 0., 0.]], dtype=float32)
    """
    return _placed(lnp.zeros(_shape(shape), _dtype(dtype)), out_sharding)


def ones(key: Any, shape: Sequence[int], dtype: Any = None, out_sharding: Any = None) -> Any:
    """An array of ones (the key is ignored).

    >>> import lamella.random as lr
    >>> ones(lr.key(42), (3,), lnp.int32)
    Array([1, 1, 1], dtype=int32)
    """
    return _placed(lnp.ones(_shape(shape), _dtype(dtype)), out_sharding)


def constant(value: Any, dtype: Any = None) -> Initializer:
    """An initializer of arrays full of `value`; `dtype` is its default dtype.

    >>> import lamella.random as lr
    >>> constant(-7)(lr.key(42), (2,))
    Array([-7., -7.], dtype=float32)
    """
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        return _placed(lnp.full(_shape(shape), value, dtype=_dtype(dtype)), out_sharding)
    return init


def uniform(scale: Any = 1e-2, dtype: Any = None) -> Initializer:
    """An initializer of samples uniform on [0, scale).

    >>> import lamella.random as lr
    >>> float(uniform(10.0)(lr.key(0), (1000,)).max()) < 10.0
    True
    """
    def sample(key: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return _uniform(key, shape=shape, dtype=dtype) * lnp.array(scale, dtype)
    return _initializer(sample, dtype)


def normal(stddev: Any = 1e-2, dtype: Any = None) -> Initializer:
    """An initializer of normal samples with mean 0 and standard deviation `stddev`.

    >>> import lamella.random as lr
    >>> normal(5.0)(lr.key(0), (2, 3)).dtype
    dtype('float32')
    """
    def sample(key: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        return _normal(key, shape=shape, dtype=dtype) * lnp.array(stddev, dtype)
    return _initializer(sample, dtype)


def truncated_normal(stddev: Any = 1e-2, dtype: Any = None, lower: Any = -2.0,
                     upper: Any = 2.0) -> Initializer:
    """An initializer of unit normal samples truncated to (lower, upper), times `stddev`.

    No variance correction is applied: the samples' standard deviation is a little
    below `stddev` (variance_scaling's "truncated_normal" corrects for it).

    >>> import lamella.random as lr
    >>> x = truncated_normal(1.0)(lr.key(0), (1000,))
    >>> bool((abs(x) < 2.0).all())
    True
    """
    def sample(key: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        out = _truncated_normal(key, lower, upper, shape=shape, dtype=dtype)
        return out * lnp.array(stddev, dtype)
    return _initializer(sample, dtype)


# --- fans and variance scaling --------------------------------------------------------
def _size(shape: tuple[int, ...], axes: Axes) -> int:
    if isinstance(axes, int):
        return shape[axes]
    return math.prod(shape[a] for a in axes)


def _compute_fans(shape: tuple[int, ...], in_axis: Axes = -2, out_axis: Axes = -1,
                  batch_axis: Axes = ()) -> tuple[float, float]:
    """(fan_in, fan_out): the in and out sizes times the receptive field, the product of
    every axis not named in `in_axis`, `out_axis` or `batch_axis`.

    >>> _compute_fans((3, 3, 16, 32))
    (144.0, 288.0)
    """
    if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
        raise ValueError(
            f"Can't compute input and output sizes of a {len(shape)}-dimensional weights "
            "tensor with default in_axis. Must be at least 2D or specify in_axis explicitly.")
    try:
        in_size = _size(shape, in_axis)
        out_size = _size(shape, out_axis)
        batch_size = _size(shape, batch_axis)
    except IndexError:
        raise ValueError(f"in_axis={in_axis}, out_axis={out_axis} or batch_axis={batch_axis} "
                         f"is out of range for a weights shape {shape}") from None
    receptive_field_size = math.prod(shape) / in_size / out_size / batch_size
    return in_size * receptive_field_size, out_size * receptive_field_size


def _real_and_complex(dtype: np.dtype) -> tuple[np.dtype, np.dtype]:
    real = np.array(0, dtype).real.dtype
    return real, np.result_type(real, np.complex64)


def _complex_uniform(key: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """Uniform samples on the disk of radius sqrt(2): mean 0, variance 1."""
    key_r, key_theta = lr.split(key)
    real_dtype, dtype = _real_and_complex(dtype)
    r = lnp.sqrt(2 * _uniform(key_r, shape=shape, dtype=real_dtype)).astype(dtype)
    theta = 2 * np.pi * _uniform(key_theta, shape=shape, dtype=real_dtype).astype(dtype)
    return r * lnp.exp(1j * theta)


def _complex_truncated_normal(key: Any, upper: float, shape: tuple[int, ...],
                              dtype: np.dtype) -> Any:
    """Complex normal samples (variance 1 before truncation) with modulus below `upper`,
    drawn by inverting the modulus' CDF 1 - exp(-r²) on [0, upper]."""
    key_r, key_theta = lr.split(key)
    real_dtype, dtype = _real_and_complex(dtype)
    t = ((1 - lnp.exp(lnp.array(-(upper ** 2), dtype)))
         * _uniform(key_r, shape=shape, dtype=real_dtype).astype(dtype))
    r = lnp.sqrt(-lnp.log(1 - t))
    theta = 2 * np.pi * _uniform(key_theta, shape=shape, dtype=real_dtype).astype(dtype)
    return r * lnp.exp(1j * theta)


def variance_scaling(
        scale: Any,
        mode: Literal["fan_in", "fan_out", "fan_avg", "fan_geo_avg"],
        distribution: Literal["truncated_normal", "normal", "uniform"],
        in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
        dtype: Any = None) -> Initializer:
    """An initializer of samples with mean 0 and variance `scale / n`.

    Args:
      scale: the variance's numerator (a positive float).
      mode: n is "fan_in", "fan_out", "fan_avg" ((in + out) / 2) or "fan_geo_avg"
        (sqrt(in * out)).
      distribution: "truncated_normal" (at ±2 standard deviations, rescaled so the
        variance is right), "normal", or "uniform" (an interval; a disk for complex).
      in_axis, out_axis: the axis or axes of the inputs and outputs in the shape.
      batch_axis: axes that are neither (left out of the fans).
      dtype: the default dtype.

    >>> import lamella.random as lr
    >>> w = variance_scaling(2.0, "fan_in", "normal")(lr.key(0), (100, 100))
    >>> round(float(w.var()) * 100, 1)
    2.0
    """
    def sample(key: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
        if mode == "fan_in":
            denominator = fan_in
        elif mode == "fan_out":
            denominator = fan_out
        elif mode == "fan_avg":
            denominator = (fan_in + fan_out) / 2
        elif mode == "fan_geo_avg":
            denominator = (fan_in * fan_out) ** 0.5
        else:
            raise ValueError(f"invalid mode for variance scaling initializer: {mode} (expected "
                             "'fan_in', 'fan_out', 'fan_avg' or 'fan_geo_avg')")
        variance = lnp.array(scale / denominator, dtype=dtype)
        is_real = lnp.issubdtype(dtype, lnp.floating)
        if distribution == "truncated_normal":
            if is_real:
                stddev = lnp.sqrt(variance) / lnp.array(_TRUNCATED_STDDEV, dtype)
                return _truncated_normal(key, -2, 2, shape=shape, dtype=dtype) * stddev
            stddev = lnp.sqrt(variance) / lnp.array(_COMPLEX_TRUNCATED_STDDEV, dtype)
            return _complex_truncated_normal(key, 2, shape, dtype) * stddev
        if distribution == "normal":
            return _normal(key, shape=shape, dtype=dtype) * lnp.sqrt(variance)
        if distribution == "uniform":
            if is_real:
                return _uniform(key, shape=shape, dtype=dtype, minval=-1) * lnp.sqrt(3 * variance)
            return _complex_uniform(key, shape, dtype) * lnp.sqrt(variance)
        raise ValueError(f"invalid distribution for variance scaling initializer: "
                         f"{distribution} (expected 'truncated_normal', 'normal' or "
                         "'uniform')")
    return _initializer(sample, dtype)


def _named(name: str, scale: float, mode: str, distribution: str, doc: str) -> Any:
    def builder(in_axis: Axes = -2, out_axis: Axes = -1, batch_axis: Axes = (),
                dtype: Any = None) -> Initializer:
        return variance_scaling(scale, mode, distribution, in_axis=in_axis,
                                out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)
    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = doc
    return builder


glorot_uniform = _named(
    "glorot_uniform", 1.0, "fan_avg", "uniform", """A Glorot (Xavier) uniform initializer:
    variance_scaling(1.0, "fan_avg", "uniform").

    >>> import lamella.random as lr
    >>> glorot_uniform()(lr.key(0), (3, 5)).shape
    (3, 5)
    """)
glorot_normal = _named(
    "glorot_normal", 1.0, "fan_avg", "truncated_normal", """A Glorot (Xavier) normal initializer:
    variance_scaling(1.0, "fan_avg", "truncated_normal").

    >>> import lamella.random as lr
    >>> glorot_normal()(lr.key(0), (3, 5)).shape
    (3, 5)
    """)
lecun_uniform = _named(
    "lecun_uniform", 1.0, "fan_in", "uniform", """A LeCun uniform initializer:
    variance_scaling(1.0, "fan_in", "uniform").

    >>> import lamella.random as lr
    >>> lecun_uniform()(lr.key(0), (3, 5)).shape
    (3, 5)
    """)
lecun_normal = _named(
    "lecun_normal", 1.0, "fan_in", "truncated_normal", """A LeCun normal initializer:
    variance_scaling(1.0, "fan_in", "truncated_normal").

    >>> import lamella.random as lr
    >>> lecun_normal()(lr.key(0), (3, 5)).shape
    (3, 5)
    """)
he_uniform = _named(
    "he_uniform", 2.0, "fan_in", "uniform", """A He (Kaiming) uniform initializer:
    variance_scaling(2.0, "fan_in", "uniform").

    >>> import lamella.random as lr
    >>> he_uniform()(lr.key(0), (3, 5)).shape
    (3, 5)
    """)
he_normal = _named(
    "he_normal", 2.0, "fan_in", "truncated_normal", """A He (Kaiming) normal initializer:
    variance_scaling(2.0, "fan_in", "truncated_normal").

    >>> import lamella.random as lr
    >>> he_normal()(lr.key(0), (3, 5)).shape
    (3, 5)
    """)
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


# --- orthogonal -----------------------------------------------------------------------
def orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None) -> Initializer:
    """An initializer of (scaled) uniformly distributed orthogonal matrices.

    The shape is read as a matrix whose columns run along `column_axis` and whose rows
    are every other axis flattened; a non-square one has orthonormal rows or columns,
    whichever are fewer.

    >>> import lamella.random as lr
    >>> q = orthogonal()(lr.key(0), (3, 3))
    >>> bool(lnp.allclose(q @ q.T, lnp.eye(3), atol=1e-5))
    True
    """
    def sample(key: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
        if len(shape) < 2:
            raise ValueError("orthogonal initializer requires at least a 2D shape, got "
                             f"{shape}")
        if any(dim == 0 for dim in shape):
            return lnp.zeros(shape, dtype)
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        q = _orthogonal(key, n=n_rows, shape=(), dtype=dtype, m=n_cols)
        q = lnp.reshape(q, tuple(np.delete(shape, column_axis)) + (n_cols,))
        q = lnp.moveaxis(q, -1, column_axis)
        return lnp.array(scale, dtype) * q
    return _initializer(sample, dtype)


def delta_orthogonal(scale: Any = 1.0, column_axis: int = -1, dtype: Any = None
                     ) -> Initializer:
    """An initializer of delta-orthogonal convolution kernels (Xiao et al., 2018): zero
    except for an orthogonal (in, out) matrix at the spatial centre.

    The shape must be 3-D, 4-D or 5-D (1-, 2- or 3-D convolutions, channels last) with
    in <= out.

    >>> import lamella.random as lr
    >>> w = delta_orthogonal()(lr.key(0), (3, 2, 2))
    >>> float(abs(w[0]).sum()), float(abs(w[2]).sum())
    (0.0, 0.0)
    """
    def init(key: Any, shape: Sequence[int], dtype: Any = dtype,
             out_sharding: Any = None) -> Any:
        shape, dtype = _shape(shape), _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise ValueError(f"Delta orthogonal initializer requires a 3D, 4D or 5D shape, "
                             f"got {shape}.")
        if shape[-1] < shape[-2]:
            raise ValueError(f"`fan_in` must be less or equal than `fan_out`, got shape "
                             f"{shape}.")
        matrix = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
        centre = tuple((k - 1) // 2 for k in shape[:-2])
        return _placed(lnp.zeros(shape, dtype=dtype).at[centre].set(matrix), out_sharding)
    return init
