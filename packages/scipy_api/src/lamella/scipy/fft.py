"""Discrete cosine transforms (`jax.scipy.fft`): `dct`, `idct` and their N-d forms
`dctn`, `idctn`, each computed with one FFT of twice the length.

JAX implements only type 2 and norms None/'backward'/'ortho'; here types 1-4
and `norm='forward'` follow SciPy, with SciPy's orthogonalized 'ortho' scaling.

>>> import numpy as np
>>> dct(np.float32([1, 2, 3, 4])).round(4)
Array([20.        , -6.3086    ,  0.        , -0.44829997], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import lamella.lax as lax
import lamella.numpy as jnp
from lamella.scipy._arguments import axis_index, inexact, static_int

__all__ = ["dct", "dctn", "idct", "idctn"]

# idct of type t is a dct of type _INVERSE_TYPE[t], divided by _period when norm is 'backward'.
_INVERSE_TYPE = {1: 1, 2: 3, 3: 2, 4: 4}


def _period(type: int, n: int) -> int:
    """The length of the periodic extension each DCT type is the FFT of."""
    return 2 * (n - 1) if type == 1 else 2 * n


def _twiddle(n: int, numerator: np.ndarray, dtype: Any) -> Any:
    """exp(-i pi numerator / (2 n)), as a constant of `dtype`."""
    return jnp.asarray(np.exp(-0.5j * np.pi * numerator / n), dtype)


def _dct_last_axis(x: Any, type: int) -> Any:
    """The unnormalized DCT of real `x` along its last axis (SciPy's definitions)."""
    n = x.shape[-1]
    cdtype = jnp.result_type(x, 1j)
    k = np.arange(n)
    if type == 1:
        # x read as the real spectrum of a signal of period 2(n - 1).
        return _period(1, n) * jnp.fft.irfft(x, n=_period(1, n), axis=-1)[..., :n]
    if type == 2:
        spectrum = jnp.fft.rfft(x, n=2 * n, axis=-1)[..., :n]
        return 2 * jnp.real(spectrum * _twiddle(n, k, cdtype))
    if type == 3:
        # sum_n c_n x_n cos(pi n (2k + 1) / 2n) is a length-2n inverse real FFT.
        half = x.astype(cdtype) * jnp.conj(_twiddle(n, k, cdtype))
        half = jnp.pad(half, [(0, 0)] * (x.ndim - 1) + [(0, 1)])
        return 2 * n * jnp.fft.irfft(half, n=2 * n, axis=-1)[..., :n]
    spectrum = jnp.fft.fft(x.astype(cdtype) * _twiddle(n, k, cdtype), n=2 * n, axis=-1)[..., :n]
    return 2 * jnp.real(spectrum * _twiddle(n, k + 0.5, cdtype))


def _ortho_factors(type: int, n: int) -> tuple[np.ndarray | None, np.ndarray]:
    """Input and output scale factors that make the DCT of `type` orthonormal."""
    pre = np.ones(n)
    post = np.full(n, np.sqrt(1.0 / _period(type, n)))
    if type == 1:
        pre[[0, -1]] *= np.sqrt(2.0)
        post[[0, -1]] /= np.sqrt(2.0)
    elif type == 2:
        post[0] /= np.sqrt(2.0)
    elif type == 3:
        pre[0] *= np.sqrt(2.0)
    return (pre if type in (1, 3) else None), post


def _check(name: str, type: Any, norm: Any) -> None:
    if type not in (1, 2, 3, 4):
        raise ValueError(f"{name}: type must be 1, 2, 3 or 4, got {type!r}")
    if norm not in (None, "backward", "ortho", "forward"):
        raise ValueError(f"{name}: norm must be None, 'backward', 'ortho' or 'forward', got "
                         f"{norm!r}")


def _resize(x: Any, n: int | None, axis: int) -> Any:
    """`x` zero-padded or truncated to `n` entries along `axis`."""
    if n is None:
        return x
    n = static_int(n, "the transform length n")
    if n < 1:
        raise ValueError(f"the transform length must be positive, got {n}")
    pads = [(0, 0, 0)] * x.ndim
    pads[axis] = (0, n - x.shape[axis], 0)
    return lax.pad(x, jnp.zeros((), x.dtype), pads)


def _transform(name: str, x: Any, type: int, n: int | None, axis: int, norm: str | None,
               inverse: bool) -> Any:
    if x.ndim == 0:
        raise ValueError(f"{name}: x must be at least 1-dimensional, got a 0-d array")
    axis = axis_index(axis, x.ndim, f"{name}: axis")
    x = _resize(x, n, axis)
    size = x.shape[axis]
    if size < (2 if type == 1 else 1):
        raise ValueError(f"{name}: the DCT of type {type} needs at least "
                         f"{2 if type == 1 else 1} points along axis {axis}, got {size}")
    if jnp.iscomplexobj(x):
        return lax.complex(_transform(name, jnp.real(x), type, None, axis, norm, inverse),
                           _transform(name, jnp.imag(x), type, None, axis, norm, inverse))
    x = jnp.moveaxis(x, axis, -1)
    kind = _INVERSE_TYPE[type] if inverse else type
    if norm == "ortho":
        pre, post = _ortho_factors(kind, size)
        if pre is not None:
            x = x * jnp.asarray(pre, x.dtype)
        out = _dct_last_axis(x, kind) * jnp.asarray(post, x.dtype)
    else:
        out = _dct_last_axis(x, kind)
        if (norm == "forward") != inverse:
            out = out / jnp.asarray(_period(type, size), x.dtype)
    return jnp.moveaxis(out, -1, axis)


def dct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,
        norm: str | None = None) -> Any:
    """The discrete cosine transform of `type` 1-4 along `axis` (SciPy's definitions).

    `n` zero-pads or truncates the input first. `norm`: None/'backward' (no
    scaling), 'ortho' (orthonormal), 'forward' (divided by the period, 2n or
    2(n - 1) for type 1). Complex inputs transform their real and imaginary parts.

    >>> import numpy as np
    >>> dct(np.float32([1, 2, 3, 4]), type=1)
    Array([15., -4.,  0., -1.], dtype=float32)
    """
    _check("dct", type, norm)
    return _transform("dct", inexact(x)[0], type, n, axis, norm, inverse=False)


def idct(x: Any, type: int = 2, n: int | None = None, axis: int = -1,
         norm: str | None = None) -> Any:
    """The inverse of `dct` with the same `type` and `norm`.

    >>> import numpy as np
    >>> idct(dct(np.float32([1, 2, 3, 4]), type=3), type=3).round(4)
    Array([1., 2., 3., 4.], dtype=float32)
    """
    _check("idct", type, norm)
    return _transform("idct", inexact(x)[0], type, n, axis, norm, inverse=True)


def _axes_and_sizes(name: str, x: Any, s: Any, axes: Any) -> tuple[list[int], list[Any]]:
    if s is not None:
        s = [static_int(v, f"{name}: s") for v in np.atleast_1d(s)]
        if len(s) > x.ndim:
            raise ValueError(f"{name}: s must have at most x.ndim ({x.ndim}) entries, got {s}")
    if axes is None:
        axes = list(range(x.ndim - len(s), x.ndim)) if s is not None else list(range(x.ndim))
    else:
        axes = [axis_index(a, x.ndim, f"{name}: axis") for a in np.atleast_1d(axes)]
        if len(set(axes)) != len(axes):
            raise ValueError(f"{name}: axes must be unique, got {axes}")
    if s is not None and len(s) != len(axes):
        raise ValueError(f"{name}: s and axes must have the same length, got {s} and {axes}")
    return axes, (s if s is not None else [None] * len(axes))


def dctn(x: Any, type: int = 2, s: Sequence[int] | None = None,
         axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    """The N-d DCT: `dct` along each of `axes` (default: all, or the last `len(s)`),
    each resized to its entry of `s`.

    >>> import numpy as np
    >>> dctn(np.float32([[1, 2], [3, 4]]), norm="ortho").round(4)
    Array([[ 5., -1.],
           [-2.,  0.]], dtype=float32)
    """
    _check("dctn", type, norm)
    x = inexact(x)[0]
    for axis, n in zip(*_axes_and_sizes("dctn", x, s, axes)):
        x = _transform("dctn", x, type, n, axis, norm, inverse=False)
    return x


def idctn(x: Any, type: int = 2, s: Sequence[int] | None = None,
          axes: Sequence[int] | None = None, norm: str | None = None) -> Any:
    """The inverse of `dctn` with the same `type`, `axes` and `norm`.

    >>> import numpy as np
    >>> idctn(dctn(np.float32([[1, 2], [3, 4]]), type=1), type=1)
    Array([[1., 2.],
           [3., 4.]], dtype=float32)
    """
    _check("idctn", type, norm)
    x = inexact(x)[0]
    for axis, n in zip(*_axes_and_sizes("idctn", x, s, axes)):
        x = _transform("idctn", x, type, n, axis, norm, inverse=True)
    return x
