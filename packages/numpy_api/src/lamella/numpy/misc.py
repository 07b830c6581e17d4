"""The remaining jax.numpy names: a few elementwise functions (gcd, i0, modf, ...),
window functions, index helpers (r_, c_, ix_, ravel_multi_index, ...), bit packing,
host I/O through NumPy, printing, and dtype category and scalar-type names.

>>> gcd(np.int32([12, 18]), 8)
Array([4, 2], dtype=int32)
>>> r_[1:3, 7]
Array([1, 2, 7], dtype=int32)
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import ml_dtypes

import numpy as np
from lamella import lax
from lamella.core import dtypes as core_dtypes
from lamella.core.trace import Tracer, aval_of
from lamella.numpy import ufuncs
from lamella.numpy.dtypes import _ScalarType
from lamella.numpy.util import (
    asarray_internal,
    canonicalize_axis,
    check_arraylike,
    concrete_int,
    concrete_value,
)
from lamella.numpy.util import shape as _shape

try:
    from numpy.exceptions import ComplexWarning
except ImportError:  # NumPy < 1.25
    from numpy import ComplexWarning  # type: ignore[attr-defined,no-redef]

__all__ = [
    "ComplexWarning", "array_repr", "array_str", "bartlett", "bitwise_count", "blackman",
    "c_", "cdouble", "character", "complexfloating", "csingle", "double", "fabs",
    "fill_diagonal", "flexible", "floating", "fromiter", "fromstring", "gcd", "generic",
    "get_printoptions", "hamming", "hanning", "i0", "index_exp", "inexact", "integer",
    "iterable", "ix_", "kaiser", "lcm", "load", "mask_indices", "modf", "ndarray", "number",
    "object_", "packbits", "place", "printoptions", "r_", "ravel_multi_index", "s_", "save",
    "savez", "set_printoptions", "signedinteger", "single", "spacing", "uint", "unpackbits",
    "unravel_index", "unsignedinteger", "vander",
]


def _dt(x: Any) -> np.dtype:
    return aval_of(x).dtype



def _const(x: Any, value: Any) -> Any:
    return lax.full_like(x, value)


def _default_float() -> np.dtype:
    return core_dtypes.canonicalize_dtype(np.dtype("float64"))


def _default_int() -> np.dtype:
    return core_dtypes.canonicalize_dtype(np.dtype("int64"))


def _ravel(x: Any) -> Any:
    return lax.reshape(x, (int(np.prod(_shape(x), dtype=np.int64)),))


# --- elementwise ---------------------------------------------------------------------
def _unary_real_inexact(name: str, x: Any) -> Any:
    (x,) = ufuncs._promote_and_broadcast(name, x, kind="inexact")
    if _dt(x).kind == "c":
        raise TypeError(f"{name} does not support complex-valued inputs")
    return x


def fabs(x: Any, /) -> Any:
    """Elementwise |x| as a float; complex inputs are refused, as in NumPy.

    >>> fabs(np.int32([-2, 3]))
    Array([2., 3.], dtype=float32)
    """
    return lax.abs(_unary_real_inexact("fabs", x))


def modf(x: Any, /) -> tuple[Any, Any]:
    """(fractional part, integral part) of x, both carrying x's sign.

    >>> modf(np.float32([2.5, -1.25]))
    (Array([ 0.5 , -0.25], dtype=float32), Array([ 2., -1.], dtype=float32))
    """
    x = _unary_real_inexact("modf", x)
    whole = lax.select(lax.ge(x, _const(x, 0)), lax.floor(x), lax.ceil(x))
    return lax.sub(x, whole), whole


def spacing(x: Any, /) -> Any:
    """Distance from x to its next representable neighbour away from zero (negative for
    negative x, as in NumPy).

    >>> spacing(np.float32([1.0, -1.0]))
    Array([ 1.1920929e-07, -1.1920929e-07], dtype=float32)
    """
    x = _unary_real_inexact("spacing", x)
    inf = _const(x, np.inf)
    away = lax.select(lax.lt(x, _const(x, 0)), lax.neg(inf), inf)
    return lax.sub(lax.nextafter(x, away), x)


def i0(x: Any, /) -> Any:
    """The modified Bessel function of the first kind, order zero (differentiable).

    >>> i0(np.float32([1.0, 2.0]))
    Array([1.266066 , 2.2795851], dtype=float32)
    """
    x = _unary_real_inexact("i0", x)
    # bessel_i0e is exp(-|x|) * I0(x); its derivative rule gives i0's gradient.
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i0e(x))


def _integer_args(name: str, x1: Any, x2: Any) -> list[Any]:
    args = ufuncs._promote_and_broadcast(name, x1, x2, kind="numeric")
    if _dt(args[0]).kind not in "iu":
        raise TypeError(f"{name} requires integer arguments, got dtype {_dt(args[0])}")
    return args


def _abs_int(x: Any) -> Any:
    return x if _dt(x).kind == "u" else lax.abs(x)


def gcd(x1: Any, x2: Any, /) -> Any:
    """Elementwise greatest common divisor of integers (non-negative).

    >>> gcd(np.int32([12, -18, 0]), np.int32([8, 12, 5]))
    Array([4, 6, 5], dtype=int32)
    """
    x1, x2 = _integer_args("gcd", x1, x2)
    zero, one = _const(x1, 0), _const(x1, 1)

    def cond(state: tuple[Any, Any]) -> Any:
        return lax.reduce_or(lax.ne(state[1], zero), tuple(range(len(_shape(x1)))))

    def body(state: tuple[Any, Any]) -> tuple[Any, Any]:
        a, b = state
        active = lax.ne(b, zero)
        # Euclid's step where b != 0; finished elements keep their pair.
        safe_b = lax.select(active, b, one)
        return lax.select(active, b, a), lax.select(active, lax.rem(a, safe_b), b)

    return lax.while_loop(cond, body, (_abs_int(x1), _abs_int(x2)))[0]


def lcm(x1: Any, x2: Any, /) -> Any:
    """Elementwise least common multiple of integers (non-negative; 0 if either is 0).

    >>> lcm(np.int32([4, 6, 0]), np.int32([6, -4, 3]))
    Array([12, 12,  0], dtype=int32)
    """
    x1, x2 = _integer_args("lcm", x1, x2)
    d = gcd(x1, x2)
    zero = _const(d, 0)
    is_zero = lax.eq(d, zero)
    quotient = lax.div(_abs_int(x2), lax.select(is_zero, _const(d, 1), d))
    return lax.select(is_zero, zero, lax.mul(_abs_int(x1), quotient))


def bitwise_count(x: Any, /) -> Any:
    """Number of 1 bits in |x| as uint8, as NumPy counts them.

    >>> bitwise_count(np.int32([7, -8, 0]))
    Array([3, 1, 0], dtype=uint8)
    """
    (x,) = ufuncs._promote_and_broadcast("bitwise_count", x, kind="numeric")
    if _dt(x).kind not in "iu":
        raise TypeError(f"bitwise_count requires integer arguments, got dtype {_dt(x)}")
    return lax.convert_element_type(lax.population_count(_abs_int(x)), np.uint8)


# --- windows -------------------------------------------------------------------------
def _window_length(M: Any, name: str) -> int:
    return concrete_int(M, f"the window length M of {name}")


def _symmetric_grid(M: int) -> Any:
    # n = 1-M, 3-M, ..., M-1, the NumPy window abscissae.
    dt = _default_float()
    return lax.add(lax.mul(lax.iota(dt, M), lax.full((M,), 2, dt)), lax.full((M,), 1 - M, dt))


def _cosine_window(M: Any, name: str, coeffs: Sequence[float]) -> Any:
    M = _window_length(M, name)
    dt = _default_float()
    if M < 1:
        return lax.full((0,), 0, dt)
    if M == 1:
        return lax.full((1,), 1, dt)
    phase = lax.mul(_symmetric_grid(M), lax.full((M,), np.pi / (M - 1), dt))
    out = lax.full((M,), coeffs[0], dt)
    for k, c in enumerate(coeffs[1:], start=1):
        term = lax.cos(lax.mul(phase, lax.full((M,), k, dt)))
        out = lax.add(out, lax.mul(lax.full((M,), c, dt), term))
    return out


def bartlett(M: int) -> Any:
    """The Bartlett (triangular) window of M points.

    >>> bartlett(5)
    Array([0. , 0.5, 1. , 0.5, 0. ], dtype=float32)
    """
    M = _window_length(M, "bartlett")
    dt = _default_float()
    if M < 1:
        return lax.full((0,), 0, dt)
    if M == 1:
        return lax.full((1,), 1, dt)
    n = lax.div(_symmetric_grid(M), lax.full((M,), M - 1, dt))
    return lax.sub(lax.full((M,), 1, dt), lax.abs(n))


def blackman(M: int) -> Any:
    """The Blackman window of M points.

    >>> blackman(3)
    Array([-1.4901161e-08,  9.9999994e-01, -1.4901161e-08], dtype=float32)
    """
    return _cosine_window(M, "blackman", (0.42, 0.5, 0.08))


def hamming(M: int) -> Any:
    """The Hamming window of M points.

    >>> hamming(3)
    Array([0.08000001, 1.        , 0.08000001], dtype=float32)
    """
    return _cosine_window(M, "hamming", (0.54, 0.46))


def hanning(M: int) -> Any:
    """The Hann window of M points.

    >>> hanning(3)
    Array([0., 1., 0.], dtype=float32)
    """
    return _cosine_window(M, "hanning", (0.5, 0.5))


def kaiser(M: int, beta: Any) -> Any:
    """The Kaiser window of M points with shape parameter beta (which may be traced).

    >>> kaiser(3, 2.0)
    Array([0.4386763, 1.       , 0.4386763], dtype=float32)
    """
    M = _window_length(M, "kaiser")
    dt = _default_float()
    if M < 1:
        return lax.full((0,), 0, dt)
    if M == 1:
        return lax.full((1,), 1, dt)
    beta = lax.convert_element_type(asarray_internal(beta), dt)
    alpha = (M - 1) / 2.0
    t = lax.div(lax.sub(lax.iota(dt, M), lax.full((M,), alpha, dt)), lax.full((M,), alpha, dt))
    r = lax.sqrt(lax.max(lax.sub(lax.full((M,), 1, dt), lax.mul(t, t)), lax.full((M,), 0, dt)))
    b = lax.broadcast_in_dim(beta, (M,), ())
    return lax.div(i0(lax.mul(b, r)), i0(b))


# --- array construction helpers ------------------------------------------------------
def vander(x: Any, N: int | None = None, increasing: bool = False) -> Any:
    """The Vandermonde matrix of a 1-D x: columns are powers x**(N-1), ..., x**0
    (ascending with increasing=True).

    >>> vander(np.int32([1, 2, 3]), 3)
    Array([[1, 1, 1],
           [4, 2, 1],
           [9, 3, 1]], dtype=int32)
    """
    check_arraylike("vander", x)
    (x,) = ufuncs._promote_and_broadcast("vander", x, kind="numeric")
    if len(_shape(x)) != 1:
        raise ValueError(f"vander: x must be one-dimensional, got shape {_shape(x)}")
    (n,) = _shape(x)
    N = n if N is None else concrete_int(N, "the N argument of vander")
    if N < 0:
        raise ValueError(f"vander: N must be non-negative, got {N}")
    if N == 0:
        return lax.full((n, 0), 0, _dt(x))
    # Running products give exact integer powers and gradients that stay finite at 0.
    ones = lax.full((n, 1), 1, _dt(x))
    reps = lax.broadcast_in_dim(x, (n, N - 1), (0,))
    powers = lax.cumprod(lax.concatenate([ones, reps], 1), axis=1)
    return powers if increasing else lax.rev(powers, (1,))


def _immutable(name: str, inplace: bool) -> None:
    if inplace:
        raise ValueError(f"lamella arrays are immutable: {name} cannot modify its argument "
                         f"in place; pass inplace=False and use the returned array.")


def _cyclic(vals: Any, n: int, dtype: np.dtype, name: str) -> Any:
    # NumPy repeats (or truncates) the supplied values over the n target positions.
    vals = _ravel(lax.convert_element_type(asarray_internal(vals), dtype))
    size = _shape(vals)[0]
    if size == 0:
        if n:
            raise ValueError(f"{name}: cannot insert from an empty array of values")
        return vals
    return vals[np.arange(n) % size]


def fill_diagonal(a: Any, val: Any, wrap: bool = False, *, inplace: bool = True) -> Any:
    """A copy of `a` with its main diagonal set to `val` (repeated as needed). JAX arrays
    are immutable, so inplace=False is required.

    >>> fill_diagonal(np.zeros((2, 3), np.int32), 5, inplace=False)
    Array([[5, 0, 0],
           [0, 5, 0]], dtype=int32)
    """
    _immutable("fill_diagonal", inplace)
    check_arraylike("fill_diagonal", a, val)
    a = asarray_internal(a)
    shape = _shape(a)
    if len(shape) < 2:
        raise ValueError(f"fill_diagonal: array must be at least 2-d, got shape {shape}")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise ValueError(f"fill_diagonal: all dimensions of input must be of equal length, "
                         f"got shape {shape}")
    total = int(np.prod(shape, dtype=np.int64))
    if len(shape) == 2:
        step = shape[1] + 1
        end = total if wrap else min(total, shape[1] * shape[1])
    else:
        step = 1 + int(np.sum(np.cumprod(shape[:-1])))
        end = total
    idx = np.arange(0, end, step)
    flat = _ravel(a).at[idx].set(_cyclic(val, len(idx), _dt(a), "fill_diagonal"))
    return lax.reshape(flat, shape)


def place(arr: Any, mask: Any, vals: Any, *, inplace: bool = True) -> Any:
    """A copy of `arr` with the positions where (concrete) `mask` is true filled from
    `vals`, repeated as needed. inplace=False is required.

    >>> place(np.int32([1, 2, 3, 4]), np.array([True, False, True, True]), np.int32([9, 8]),
    ...       inplace=False)
    Array([9, 2, 8, 9], dtype=int32)
    """
    _immutable("place", inplace)
    check_arraylike("place", arr, mask, vals)
    arr = asarray_internal(arr)
    mask_np = concrete_value(mask, "the mask argument of place")
    if mask_np.shape != _shape(arr):
        raise ValueError(f"place: mask shape {mask_np.shape} does not match array shape "
                         f"{_shape(arr)}")
    idx = np.flatnonzero(mask_np)
    flat = _ravel(arr).at[idx].set(_cyclic(vals, len(idx), _dt(arr), "place"))
    return lax.reshape(flat, _shape(arr))


def _dims(dims: Any, name: str) -> tuple[int, ...]:
    dims = (dims,) if isinstance(dims, (int, np.integer)) else dims
    out = tuple(operator.index(d) for d in dims)
    if any(d < 0 for d in out):
        raise ValueError(f"{name}: dimensions must be non-negative, got {out}")
    return out


def ravel_multi_index(multi_index: Sequence[Any], dims: Sequence[int], mode: str = "raise",
                      order: str = "C") -> Any:
    """Flat indices of the index tuples in `multi_index` into an array of shape `dims`.
    mode='raise' needs concrete indices; 'wrap' and 'clip' work under jit.

    >>> ravel_multi_index((np.int32([0, 1]), np.int32([2, 0])), (2, 3))
    Array([2, 3], dtype=int32)
    """
    dims = _dims(dims, "ravel_multi_index")
    if len(multi_index) != len(dims):
        raise ValueError(f"ravel_multi_index: got {len(multi_index)} index arrays for "
                         f"{len(dims)} dimensions {dims}")
    if order not in ("C", "F"):
        raise ValueError(f"ravel_multi_index: order must be 'C' or 'F', got {order!r}")
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"ravel_multi_index: mode must be 'raise', 'wrap' or 'clip', "
                         f"got {mode!r}")
    check_arraylike("ravel_multi_index", *multi_index)
    idx = ufuncs._promote_and_broadcast("ravel_multi_index", *multi_index)
    for i in idx:
        if _dt(i).kind not in "iu":
            raise TypeError(f"ravel_multi_index: indices must be integers, got dtype {_dt(i)}")
    if mode == "raise":
        for i, d in zip(idx, dims):
            v = concrete_value(i, "the indices of ravel_multi_index with mode='raise'")
            if np.any((v < 0) | (v >= d)):
                raise ValueError(f"ravel_multi_index: invalid entry in coordinates array "
                                 f"(index out of bounds for dimension of size {d})")
    elif mode == "wrap":
        idx = [ufuncs.remainder(i, d) for i, d in zip(idx, dims)]
    else:
        idx = [ufuncs.clip(i, 0, d - 1) for i, d in zip(idx, dims)]
    scan = dims[::-1] if order == "C" else dims
    strides = np.concatenate([[1], np.cumprod(scan[:-1], dtype=np.int64)]).astype(int)
    strides = strides[::-1] if order == "C" else strides
    out = None
    for i, s in zip(idx, strides):
        term = lax.mul(i, _const(i, int(s)))
        out = term if out is None else lax.add(out, term)
    return out


def unravel_index(indices: Any, shape: Sequence[int]) -> tuple[Any, ...]:
    """The index tuples of flat `indices` into an array of `shape`. As in JAX, negative
    indices count from the end and out-of-range ones are clipped rather than raising.

    >>> unravel_index(np.int32([5, 1]), (2, 3))
    (Array([1, 0], dtype=int32), Array([2, 1], dtype=int32))
    """
    check_arraylike("unravel_index", indices)
    shape = _dims(shape, "unravel_index")
    (flat,) = ufuncs._promote_and_broadcast("unravel_index", indices)
    if _dt(flat).kind not in "iu":
        raise TypeError(f"unravel_index: indices must be integers, got dtype {_dt(flat)}")
    total = int(np.prod(shape, dtype=np.int64))
    if total == 0:
        raise ValueError("unravel_index: cannot unravel into an empty shape")
    if _dt(flat).kind == "i":
        flat = ufuncs.clip(flat, -total, total - 1)
        flat = lax.select(lax.lt(flat, _const(flat, 0)), lax.add(flat, _const(flat, total)),
                          flat)
    else:
        flat = ufuncs.clip(flat, 0, total - 1)
    out = []
    for d in reversed(shape):
        out.append(lax.rem(flat, _const(flat, d)))
        flat = lax.div(flat, _const(flat, d))
    return tuple(reversed(out))


def mask_indices(n: int, mask_func: Callable[[Any, int], Any], k: int = 0) -> tuple[Any, Any]:
    """Indices where mask_func(ones((n, n)), k) is nonzero, e.g. mask_func=triu.

    >>> from lamella.numpy.creation import triu
    >>> mask_indices(2, triu)
    (Array([0, 0, 1], dtype=int32), Array([0, 1, 1], dtype=int32))
    """
    n = concrete_int(n, "the n argument of mask_indices")
    mask = concrete_value(mask_func(lax.full((n, n), 1, _default_int()), k),
                          "the result of mask_func in mask_indices")
    rows, cols = np.nonzero(mask)
    return asarray_internal(rows, _default_int()), asarray_internal(cols, _default_int())


def ix_(*args: Any) -> tuple[Any, ...]:
    """Open-mesh index arrays from 1-D integer sequences, for cross-product indexing.

    >>> [a.shape for a in ix_(np.int32([0, 1]), np.int32([2, 0, 1]))]
    [(2, 1), (1, 3)]
    """
    check_arraylike("ix_", *args)
    n = len(args)
    out = []
    for i, a in enumerate(args):
        a = asarray_internal(a)
        if len(_shape(a)) != 1:
            raise ValueError(f"ix_: arguments must be 1-dimensional, got shape {_shape(a)}")
        if _dt(a) == np.bool_:
            raise NotImplementedError("ix_: boolean arguments are not supported (as in JAX); "
                                      "convert them with nonzero first")
        shape = [1] * n
        shape[i] = _shape(a)[0]
        out.append(lax.reshape(a, tuple(shape)))
    return tuple(out)


index_exp = np.index_exp
s_ = np.s_


class _AxisConcat:
    """NumPy's r_/c_: slices become ranges (a complex step means a point count, as in
    linspace), scalars and arrays are raised to `ndmin` dimensions and concatenated
    along `axis`. A leading string 'axis[,ndmin[,trans1d]]' overrides the defaults."""

    def __init__(self, name: str, axis: int, ndmin: int, trans1d: int):
        self.name, self.axis, self.ndmin, self.trans1d = name, axis, ndmin, trans1d

    def __getitem__(self, key: Any) -> Any:
        from lamella.numpy.creation import arange, array, linspace
        from lamella.numpy.manipulation import concatenate, transpose

        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive in ("r", "c"):
                raise NotImplementedError(f"{self.name}: the matrix directive {directive!r} "
                                          "is not supported")
            try:
                params = [int(p) for p in directive.split(",")]
            except ValueError:
                raise ValueError(f"{self.name}: could not understand directive "
                                 f"{directive!r}") from None
            if len(params) > 3:
                raise ValueError(f"{self.name}: directive {directive!r} has more than 3 fields")
            axis, ndmin, trans1d = (params + [axis, ndmin, trans1d][len(params):])
        parts = []
        for item in items:
            if isinstance(item, slice):
                start = 0 if item.start is None else item.start
                step = 1 if item.step is None else item.step
                if isinstance(step, complex):
                    part = linspace(start, item.stop, int(abs(step)))
                else:
                    part = arange(start, item.stop, step)
                item_ndim = 0
            elif isinstance(item, str):
                raise ValueError(f"{self.name}: a string directive must come first")
            else:
                part = asarray_internal(item)
                item_ndim = len(_shape(part))
            part = array(part, ndmin=ndmin)
            if trans1d != -1 and ndmin - item_ndim > 0:
                # Move the original dimensions to position trans1d, as NumPy does.
                shifts = ndmin - abs(ndmin + trans1d + 1) % ndmin
                order = list(range(ndmin))
                part = transpose(part, tuple(order[shifts:] + order[:shifts]))
            parts.append(part)
        if not parts:
            return lax.full((0,), 0, _default_float())
        return concatenate(parts, axis=axis)

    def __len__(self) -> int:
        return 0


r_ = _AxisConcat("r_", 0, 1, -1)
c_ = _AxisConcat("c_", -1, 2, 0)


# --- bit packing ---------------------------------------------------------------------
def _bit_weights(bitorder: str, name: str) -> np.ndarray:
    if bitorder not in ("big", "little"):
        raise ValueError(f"{name}: bitorder must be 'big' or 'little', got {bitorder!r}")
    shifts = np.arange(8, dtype=np.uint8)
    return shifts[::-1].copy() if bitorder == "big" else shifts


def _axis_last(a: Any, axis: int | None) -> tuple[Any, int]:
    if axis is None:
        return _ravel(a), 0
    rank = len(_shape(a))
    axis = canonicalize_axis(axis, rank, "axis")
    perm = [d for d in range(rank) if d != axis] + [axis]
    return lax.transpose(a, tuple(perm)), axis


def _axis_back(a: Any, axis: int) -> Any:
    rank = len(_shape(a))
    perm = list(range(rank - 1))
    perm.insert(axis, rank - 1)
    return lax.transpose(a, tuple(perm))


def packbits(a: Any, axis: int | None = None, bitorder: str = "big") -> Any:
    """Packs the truth values of an integer or boolean array into uint8 bytes along
    `axis` (the flattened array by default), zero-padding to a multiple of 8.

    >>> packbits(np.array([1, 0, 1, 1, 0, 0, 0, 0, 1], np.int32))
    Array([176, 128], dtype=uint8)
    """
    check_arraylike("packbits", a)
    a = asarray_internal(a)
    if _dt(a).kind not in "biu":
        raise TypeError(f"packbits: expected an integer or boolean array, got dtype {_dt(a)}")
    shifts = _bit_weights(bitorder, "packbits")
    bits = lax.convert_element_type(lax.ne(a, _const(a, 0)), np.uint8)
    moved, axis = _axis_last(bits, axis)
    *lead, n = _shape(moved)
    nbytes = -(-n // 8)
    padded = lax.pad(moved, np.uint8(0), [(0, 0, 0)] * len(lead) + [(0, nbytes * 8 - n, 0)])
    grouped = lax.reshape(padded, (*lead, nbytes, 8))
    weights = lax.broadcast_in_dim(asarray_internal(shifts), _shape(grouped), (len(lead) + 1,))
    packed = lax.reduce_sum(lax.shift_left(grouped, weights), (len(lead) + 1,))
    return packed if not lead and axis == 0 else _axis_back(packed, axis)


def unpackbits(a: Any, axis: int | None = None, count: int | None = None,
               bitorder: str = "big") -> Any:
    """Unpacks uint8 bytes into bits along `axis` (the flattened array by default);
    `count` keeps that many bits (negative drops from the end; padding with 0s past it).

    >>> unpackbits(np.uint8([176, 1]), count=10)
    Array([1, 0, 1, 1, 0, 0, 0, 0, 0, 0], dtype=uint8)
    """
    check_arraylike("unpackbits", a)
    a = asarray_internal(a)
    if _dt(a) != np.uint8:
        raise TypeError(f"unpackbits: expected an input array of unsigned byte data type "
                        f"(uint8), got dtype {_dt(a)}")
    shifts = _bit_weights(bitorder, "unpackbits")
    moved, axis = _axis_last(a, axis)
    *lead, n = _shape(moved)
    spread = lax.broadcast_in_dim(moved, (*lead, n, 8), tuple(range(len(lead) + 1)))
    weights = lax.broadcast_in_dim(asarray_internal(shifts), _shape(spread), (len(lead) + 1,))
    bits = lax.bitwise_and(lax.shift_right_logical(spread, weights), _const(spread, 1))
    bits = lax.reshape(bits, (*lead, n * 8))
    if count is not None:
        count = operator.index(count)
        keep = n * 8 + count if count < 0 else count
        keep = max(keep, 0)
        if keep <= n * 8:
            bits = lax.slice_in_dim(bits, 0, keep, axis=len(lead))
        else:
            bits = lax.pad(bits, np.uint8(0), [(0, 0, 0)] * len(lead) + [(0, keep - n * 8, 0)])
    return bits if not lead and axis == 0 else _axis_back(bits, axis)


# --- host-side construction, I/O and printing ----------------------------------------
def _from_host(x: np.ndarray) -> Any:
    return asarray_internal(x, core_dtypes.canonicalize_dtype(x.dtype))


def fromiter(iter: Iterable[Any], dtype: Any, count: int = -1) -> Any:
    """An Array from a Python iterable, read on the host (outside any transformation:
    consuming an iterator is a side effect).

    >>> fromiter((i * i for i in range(4)), np.int32)
    Array([0, 1, 4, 9], dtype=int32)
    """
    return _from_host(np.fromiter(iter, dtype=dtype, count=count))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Any:
    """An Array parsed from text with separator `sep` (required: NumPy's binary mode is
    deprecated).

    >>> fromstring("1 2 3", dtype=np.int32, sep=" ")
    Array([1, 2, 3], dtype=int32)
    """
    return _from_host(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def iterable(y: Any) -> bool:
    """Whether `y` can be iterated over (0-d arrays cannot).

    >>> iterable(np.int32([1, 2])), iterable(fabs(3.0))
    (True, False)
    """
    if isinstance(y, (lax.Array, Tracer, np.ndarray)) and not _shape(y):
        return False  # Array's __iter__ only raises for 0-d once iteration starts
    try:
        iter(y)
    except TypeError:
        return False
    return True


def array_str(a: Any, max_line_width: int | None = None, precision: int | None = None,
              suppress_small: bool | None = None) -> str:
    """NumPy's string form of the (concrete) data of `a`.

    >>> array_str(np.float32([1.5, 2]))
    '[1.5 2. ]'
    """
    return np.array_str(concrete_value(a, "the argument of array_str"), max_line_width,
                        precision, suppress_small)


def array_repr(arr: Any, max_line_width: int | None = None, precision: int | None = None,
               suppress_small: bool | None = None) -> str:
    """NumPy's repr of the (concrete) data of `arr`.

    >>> array_repr(np.int32([1, 2]))
    'array([1, 2], dtype=int32)'
    """
    return np.array_repr(concrete_value(arr, "the argument of array_repr"), max_line_width,
                         precision, suppress_small)


printoptions = np.printoptions
get_printoptions = np.get_printoptions
set_printoptions = np.set_printoptions


def save(file: Any, arr: Any, allow_pickle: bool = True) -> None:
    """Writes `arr` to a .npy file through NumPy."""
    np.save(file, concrete_value(arr, "the array passed to save"), allow_pickle=allow_pickle)


def savez(file: Any, *args: Any, **kwds: Any) -> None:
    """Writes several arrays to an uncompressed .npz file through NumPy."""
    np.savez(file, *(concrete_value(a, "an array passed to savez") for a in args),
             **{k: concrete_value(v, "an array passed to savez") for k, v in kwds.items()})


def load(file: Any, *args: Any, **kwargs: Any) -> Any:
    """Reads a .npy file as an Array (a .npz file gives NumPy's lazy NpzFile mapping)."""
    out = np.load(file, *args, **kwargs)
    return _from_host(out) if isinstance(out, np.ndarray) else out


# --- types ---------------------------------------------------------------------------
generic = np.generic
number = np.number
inexact = np.inexact
floating = np.floating
complexfloating = np.complexfloating
integer = np.integer
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger
character = np.character
flexible = np.flexible
object_ = np.object_

double = _ScalarType(np.float64)
single = _ScalarType(np.float32)
cdouble = _ScalarType(np.complex128)
csingle = _ScalarType(np.complex64)
uint = _ScalarType(np.uint64)

_ML_DTYPE_NAMES = (
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3b11fnuz", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e3m4", "float8_e4m3", "float8_e8m0fnu", "float4_e2m1fn", "float6_e2m3fn",
    "float6_e3m2fn", "int2", "int4", "uint2", "uint4",
)
for _name in _ML_DTYPE_NAMES:
    if hasattr(ml_dtypes, _name):
        globals()[_name] = _ScalarType(getattr(ml_dtypes, _name))
        __all__.append(_name)
__all__.sort()


class _ArrayMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, (lax.Array, Tracer))

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, (lax.Array, Tracer))


class ndarray(metaclass=_ArrayMeta):
    """The array type: `isinstance(x, ndarray)` holds for Arrays and for traced values
    inside jit/grad/vmap, as for `jax.numpy.ndarray`.

    >>> isinstance(fabs(1.0), ndarray)
    True
    """

