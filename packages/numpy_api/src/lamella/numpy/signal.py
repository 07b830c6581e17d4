"""Sequences and sampled signals: convolution and correlation, linear
interpolation, finite differences, numerical gradients, the trapezoid rule,
cross products and phase unwrapping (`jax.numpy` semantics).

>>> import numpy as np
>>> convolve(np.float32([1, 2, 3]), np.float32([0, 1, 0.5]))
Array([0. , 1. , 2.5, 4. , 1.5], dtype=float32)
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
from lamella import lax
from lamella.core.trace import aval_of
from lamella.lax.contraction import PrecisionLike
from lamella.numpy import ufuncs
from lamella.numpy.dtypes import promote_dtypes, promote_dtypes_inexact
from lamella.numpy.util import (
    asarray_internal,
    canonicalize_axis,
    check_arraylike,
    concrete_int,
    flatten_1d,
)
from lamella.numpy.util import shape as _shape

__all__ = ["convolve", "correlate", "cross", "diff", "ediff1d", "gradient", "interp",
           "trapezoid", "unwrap"]


# --- small shape helpers --------------------------------------------------------------

def _moveaxis(x: Any, source: int, destination: int) -> Any:
    ndim = len(_shape(x))
    source, destination = source % ndim, destination % ndim
    if source == destination:
        return x
    perm = [d for d in range(ndim) if d != source]
    perm.insert(destination, source)
    return lax.transpose(x, perm)


def _slice(x: Any, start: int | None, stop: int | None, axis: int) -> Any:
    return lax.slice_in_dim(x, *slice(start, stop).indices(_shape(x)[axis])[:2], axis=axis)


def _at(x: Any, index: int) -> Any:
    """The entry `index` of a 1-D array, as a 0-d array."""
    return lax.reshape(lax.slice_in_dim(x, index, index + 1), ())


def _take(table: Any, indices: Any) -> Any:
    """`table[indices]` for a 1-D `table` and in-range integer `indices` of any shape."""
    dnums = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                       start_index_map=(0,))
    return lax.gather(table, lax.expand_dims(indices, (len(_shape(indices)),)), dnums, (1,),
                      mode="promise_in_bounds")


# --- convolution ----------------------------------------------------------------------
def _conv(name: str, a: Any, v: Any, mode: str, precision: PrecisionLike,
          preferred_element_type: Any) -> Any:
    check_arraylike(name, a, v)
    if preferred_element_type is None:
        # NumPy convolves integers exactly; JAX, like this, promotes to inexact unless
        # an element type is asked for.
        a, v = promote_dtypes_inexact(a, v)
    else:
        a, v = promote_dtypes(a, v)
    if len(_shape(a)) != 1 or len(_shape(v)) != 1:
        raise ValueError(f"{name}() only supports 1-dimensional inputs, got shapes "
                         f"{_shape(a)} and {_shape(v)}")
    if not _shape(a)[0] or not _shape(v)[0]:
        raise ValueError(f"{name}: inputs cannot be empty, got shapes {_shape(a)} and "
                         f"{_shape(v)}")
    reverse_output = False
    if name == "correlate":
        if aval_of(v).dtype.kind == "c":
            v = lax.conj(v)
        if _shape(a)[0] < _shape(v)[0]:
            a, v, reverse_output = v, a, True
    else:
        if _shape(a)[0] < _shape(v)[0]:
            a, v = v, a
        v = lax.rev(v, (0,))  # XLA's convolution is a correlation
    k = _shape(v)[0]
    pads = {"valid": (0, 0), "same": (k // 2, k - k // 2 - 1), "full": (k - 1, k - 1)}
    if mode not in pads:
        raise ValueError(f"{name}: mode must be one of 'full', 'same', 'valid', got {mode!r}")
    out = lax.conv_general_dilated(lax.reshape(a, (1, 1, _shape(a)[0])), lax.reshape(v, (1, 1, k)),
                                   (1,), [pads[mode]], precision=precision,
                                   preferred_element_type=preferred_element_type)
    out = lax.reshape(out, (_shape(out)[-1],))
    return lax.rev(out, (0,)) if reverse_output else out


def convolve(a: Any, v: Any, mode: str = "full", *, precision: PrecisionLike = None,
             preferred_element_type: Any = None) -> Any:
    """The discrete linear convolution of two 1-D arrays; `mode` 'full' (every
    overlap), 'same' (the length of the longer input) or 'valid' (complete overlaps).

    >>> import numpy as np
    >>> convolve(np.float32([1, 2, 3]), np.float32([1, 1]), mode="valid")
    Array([3., 5.], dtype=float32)
    """
    return _conv("convolve", a, v, mode, precision, preferred_element_type)


def correlate(a: Any, v: Any, mode: str = "valid", *, precision: PrecisionLike = None,
              preferred_element_type: Any = None) -> Any:
    """The cross-correlation `c[k] = sum_n a[n + k] * conj(v[n])` of two 1-D arrays.

    >>> import numpy as np
    >>> correlate(np.float32([1, 2, 3]), np.float32([0, 1, 0.5]), mode="full")
    Array([0.5, 2. , 3.5, 3. , 0. ], dtype=float32)
    """
    return _conv("correlate", a, v, mode, precision, preferred_element_type)


# --- interpolation --------------------------------------------------------------------
def _extrapolates(name: str, value: Any) -> bool:
    if isinstance(value, str):
        if value != "extrapolate":
            raise ValueError(f"interp: the only valid string value of `{name}` is "
                             f"'extrapolate', got {value!r}")
        return True
    return False


def interp(x: Any, xp: Any, fp: Any, left: Any = None, right: Any = None,
           period: Any = None) -> Any:
    """Piecewise-linear interpolation of the points (`xp`, `fp`) at `x`; `xp` must
    increase. Outside `xp` the result is `left` / `right` (default the end values of
    `fp`; 'extrapolate' continues the end segments); with `period` the x coordinates
    wrap around.

    >>> import numpy as np
    >>> interp(np.float32([0.5, 1.5, 5]), np.float32([0, 1, 2]), np.float32([0, 10, 0]))
    Array([5., 5., 0.], dtype=float32)
    """
    check_arraylike("interp", x, xp, fp)
    if _shape(asarray_internal(xp)) != _shape(asarray_internal(fp)) or \
            len(_shape(asarray_internal(xp))) != 1:
        raise ValueError("interp: xp and fp must be one-dimensional arrays of equal size, got "
                         f"shapes {_shape(asarray_internal(xp))} and "
                         f"{_shape(asarray_internal(fp))}")
    x, xp = promote_dtypes_inexact(x, xp)
    (fp,) = promote_dtypes_inexact(fp)
    if aval_of(x).dtype.kind == "c" or aval_of(xp).dtype.kind == "c":
        raise ValueError("interp: complex x and xp values are not supported")
    if _shape(xp)[0] == 0:
        raise ValueError("interp: the array of sample points xp is empty")
    extrapolate_left = _extrapolates("left", left)
    extrapolate_right = _extrapolates("right", right)

    if period is not None:
        if len(_shape(asarray_internal(period))) != 0:
            raise ValueError(f"interp: period must be a scalar, got {period!r}")
        period = ufuncs.abs(period)
        x, xp = ufuncs.remainder(x, period), ufuncs.remainder(xp, period)
        xp, fp = lax.sort_key_val(xp, fp)
        # One wrapped-around point on each side makes every x fall inside.
        xp = lax.concatenate([ufuncs.subtract(_slice(xp, -1, None, 0), period), xp,
                              ufuncs.add(_slice(xp, 0, 1, 0), period)], 0)
        fp = lax.concatenate([_slice(fp, -1, None, 0), fp, _slice(fp, 0, 1, 0)], 0)

    n = _shape(xp)[0]
    if n == 1:
        f = lax.broadcast_in_dim(_at(fp, 0), _shape(x), ())
    else:
        # i: the index of the first sample point right of x, kept within 1..n-1 so
        # that points outside xp use (and may extrapolate) the end segments.
        rank = len(_shape(x))
        above = lax.le(lax.broadcast_in_dim(xp, (*_shape(x), n), (rank,)),
                       lax.expand_dims(x, (rank,)))
        count = lax.reduce_sum(lax.convert_element_type(above, np.int32), (rank,))
        i = lax.clamp(np.int32(1), count, np.int32(n - 1))
        below = lax.sub(i, np.int32(1))
        f_lo, f_hi = _take(fp, below), _take(fp, i)
        x_lo = _take(xp, below)
        dx = lax.sub(_take(xp, i), x_lo)
        # A zero-width segment (repeated xp) takes its left value; the safe divisor
        # keeps its gradient finite.
        flat = ufuncs.less_equal(ufuncs.abs(dx), np.spacing(np.finfo(aval_of(xp).dtype).eps))
        slope = ufuncs.divide(lax.sub(x, x_lo), ufuncs.where(flat, 1, dx))
        f = ufuncs.where(flat, f_lo,
                         ufuncs.add(f_lo, ufuncs.multiply(slope, lax.sub(f_hi, f_lo))))
    if period is None and not extrapolate_left:
        f = ufuncs.where(ufuncs.less(x, _at(xp, 0)), _at(fp, 0) if left is None else left, f)
    if period is None and not extrapolate_right:
        f = ufuncs.where(ufuncs.greater(x, _at(xp, n - 1)),
                         _at(fp, n - 1) if right is None else right, f)
    return f


# --- differences ----------------------------------------------------------------------
def _static_int(value: Any, what: str) -> int:
    if hasattr(value, "shape") or isinstance(value, np.generic):
        return concrete_int(value, what)
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {value!r}") from None


def _edge(name: str, which: str, value: Any, arr: Any, axis: int) -> Any:
    """`prepend` / `append` for `diff`: a scalar broadcasts to one slice along `axis`."""
    check_arraylike(name, value)
    value = asarray_internal(value)
    shape = list(_shape(arr))
    if not _shape(value):
        shape[axis] = 1
        return lax.broadcast_in_dim(value, tuple(shape), ())
    rest = [d for i, d in enumerate(_shape(value)) if i != axis]
    if len(_shape(value)) != len(shape) or rest != [d for i, d in enumerate(shape) if i != axis]:
        raise ValueError(f"{name}: {which} of shape {_shape(value)} does not match the input "
                         f"of shape {tuple(shape)} outside axis {axis}")
    return value


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """The `n`-th discrete difference `a[i + 1] - a[i]` along `axis`, after joining
    `prepend` and `append` to `a` there (booleans give `a[i + 1] != a[i]`).

    >>> import numpy as np
    >>> diff(np.int32([1, 4, 9, 16]))
    Array([3, 5, 7], dtype=int32)
    >>> diff(np.int32([1, 4, 9, 16]), n=2, prepend=0)
    Array([2, 2, 2], dtype=int32)
    """
    check_arraylike("diff", a)
    arr = asarray_internal(a)
    n = _static_int(n, "the order n of diff")
    if n < 0:
        raise ValueError(f"diff: order must be non-negative, got {n}")
    if n == 0:
        return arr
    if not _shape(arr):
        raise ValueError("diff requires input that is at least one dimensional, got a 0-d "
                         "array")
    axis = canonicalize_axis(_static_int(axis, "the axis of diff"), len(_shape(arr)))
    parts = [arr]
    if prepend is not None:
        parts.insert(0, _edge("diff", "prepend", prepend, arr, axis))
    if append is not None:
        parts.append(_edge("diff", "append", append, arr, axis))
    if len(parts) > 1:
        arr = lax.concatenate(promote_dtypes(*parts), axis)
    op = lax.ne if aval_of(arr).dtype == np.bool_ else lax.sub
    for _ in range(n):
        arr = op(_slice(arr, 1, None, axis), _slice(arr, None, -1, axis))
    return arr


def ediff1d(ary: Any, to_end: Any = None, to_begin: Any = None) -> Any:
    """The differences of consecutive entries of the flattened `ary`, with `to_begin`
    and `to_end` (flattened, cast to `ary`'s dtype) joined on.

    >>> import numpy as np
    >>> ediff1d(np.int32([[1, 2], [4, 8]]), to_begin=-1)
    Array([-1,  1,  2,  4], dtype=int32)
    """
    check_arraylike("ediff1d", ary)
    arr = flatten_1d(asarray_internal(ary))
    dtype = aval_of(arr).dtype
    if dtype == np.bool_:
        raise TypeError("ediff1d: boolean subtraction is not supported; convert the input "
                        "to an integer type")
    parts = [lax.sub(_slice(arr, 1, None, 0), _slice(arr, None, -1, 0))]
    for name, extra in (("to_begin", to_begin), ("to_end", to_end)):
        if extra is not None:
            check_arraylike("ediff1d", extra)
            extra = flatten_1d(asarray_internal(extra, dtype))
            parts = [extra, *parts] if name == "to_begin" else [*parts, extra]
    return parts[0] if len(parts) == 1 else lax.concatenate(parts, 0)


# --- numerical gradients --------------------------------------------------------------
def _spacing_along(name: str, h: Any, f: Any, axis: int) -> Any:
    """Coordinates `h` reshaped to broadcast along `axis` of `f` (scalars stay)."""
    h = asarray_internal(h, aval_of(f).dtype if aval_of(f).dtype.kind == "c" else None)
    (h,) = promote_dtypes_inexact(h)
    if not _shape(h):
        return h
    if len(_shape(h)) != 1:
        raise ValueError(f"{name}: spacing arrays must be 1-D or scalars, got shape "
                         f"{_shape(h)}")
    if _shape(h)[0] != _shape(f)[axis]:
        raise ValueError(f"{name}: the spacing array of length {_shape(h)[0]} must have the "
                         f"length of axis {axis} of the input of shape {_shape(f)}")
    shape = [1] * len(_shape(f))
    shape[axis] = _shape(h)[0]
    return lax.reshape(h, tuple(shape))


def _gradient_along(f: Any, h: Any, axis: int, edge_order: int) -> Any:
    u, d = ufuncs.subtract, ufuncs.divide
    add, mul = ufuncs.add, ufuncs.multiply

    def part(start, stop, x=f):
        return _slice(x, start, stop, axis)

    if not _shape(h):
        inner = d(u(part(2, None), part(None, -2)), mul(h, 2))
        if edge_order == 1:
            first = d(u(part(1, 2), part(0, 1)), h)
            last = d(u(part(-1, None), part(-2, -1)), h)
        else:
            first = d(add(add(mul(part(0, 1), -1.5), mul(part(1, 2), 2)),
                          mul(part(2, 3), -0.5)), h)
            last = d(add(add(mul(part(-3, -2), 0.5), mul(part(-2, -1), -2)),
                         mul(part(-1, None), 1.5)), h)
        return lax.concatenate(promote_dtypes(first, inner, last), axis)

    dx = diff(h, axis=axis)
    dx1, dx2 = part(None, -1, dx), part(1, None, dx)
    s = add(dx1, dx2)
    inner = add(add(mul(d(ufuncs.negative(dx2), mul(dx1, s)), part(None, -2)),
                    mul(d(u(dx2, dx1), mul(dx1, dx2)), part(1, -1))),
                mul(d(dx1, mul(dx2, s)), part(2, None)))
    if edge_order == 1:
        first = d(u(part(1, 2), part(0, 1)), part(0, 1, dx))
        last = d(u(part(-1, None), part(-2, -1)), part(-1, None, dx))
    else:
        a1, a2 = part(0, 1, dx), part(1, 2, dx)
        s1 = add(a1, a2)
        first = add(add(mul(d(ufuncs.negative(add(mul(a1, 2), a2)), mul(a1, s1)), part(0, 1)),
                        mul(d(s1, mul(a1, a2)), part(1, 2))),
                    mul(d(ufuncs.negative(a1), mul(a2, s1)), part(2, 3)))
        b1, b2 = part(-2, -1, dx), part(-1, None, dx)
        s2 = add(b1, b2)
        last = add(add(mul(d(b2, mul(b1, s2)), part(-3, -2)),
                       mul(d(ufuncs.negative(s2), mul(b1, b2)), part(-2, -1))),
                   mul(d(add(mul(b2, 2), b1), mul(b2, s2)), part(-1, None)))
    return lax.concatenate(promote_dtypes(first, inner, last), axis)


def gradient(f: Any, *varargs: Any, axis: int | Sequence[int] | None = None,
             edge_order: int | None = None) -> Any:
    """The gradient of sampled `f` by second-order central differences inside and
    one-sided differences (first order, or second with `edge_order=2`) at the edges.

    `varargs` gives the spacing: none (1), one scalar for every axis, or one scalar
    or 1-D coordinate array per axis. One array comes back for a single axis, a
    list otherwise.

    >>> import numpy as np
    >>> gradient(np.float32([1, 2, 4, 7, 11]))
    Array([1. , 1.5, 2.5, 3.5, 4. ], dtype=float32)
    >>> gradient(np.float32([1, 2, 4, 7, 11]), 2.0, edge_order=2)
    Array([0.25, 0.75, 1.25, 1.75, 2.25], dtype=float32)
    """
    check_arraylike("gradient", f)
    (f,) = promote_dtypes_inexact(f)
    ndim = len(_shape(f))
    edge_order = 1 if edge_order is None else edge_order
    if edge_order not in (1, 2):
        raise ValueError(f"gradient: edge_order must be 1 or 2, got {edge_order!r}")
    if axis is None:
        axes = tuple(range(ndim))
    elif isinstance(axis, (int, np.integer)):
        axes = (canonicalize_axis(axis, ndim),)
    else:
        axes = tuple(canonicalize_axis(ax, ndim) for ax in axis)
    if not axes:
        raise ValueError("gradient: a 0-d input has no axis to differentiate along")
    for ax in axes:
        if _shape(f)[ax] < edge_order + 1:
            raise ValueError(f"gradient: axis {ax} of the input of shape {_shape(f)} is too "
                             "short to calculate a numerical gradient; at least "
                             f"edge_order + 1 = {edge_order + 1} elements are required")
    if not varargs:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and not _shape(asarray_internal(varargs[0])):
        spacing = list(varargs) * len(axes)
    elif len(varargs) == len(axes):
        spacing = list(varargs)
    else:
        raise TypeError(f"gradient: invalid number of spacing arguments {len(varargs)} for "
                        f"{len(axes)} axes")
    grads = [_gradient_along(f, _spacing_along("gradient", h, f, ax), ax, edge_order)
             for ax, h in zip(axes, spacing)]
    return grads[0] if len(grads) == 1 else grads


# --- integration and products ---------------------------------------------------------
def trapezoid(y: Any, x: Any = None, dx: Any = 1.0, axis: int = -1) -> Any:
    """The integral of sampled `y` along `axis` by the trapezoid rule, at points `x`
    (1-D, or shaped like `y`) or evenly spaced `dx` apart.

    >>> import numpy as np
    >>> trapezoid(np.float32([1, 2, 3]), x=np.float32([0, 1, 3]))
    Array(6.5, dtype=float32)
    """
    if x is None:
        check_arraylike("trapezoid", y)
        (y,) = promote_dtypes_inexact(y)
    else:
        check_arraylike("trapezoid", y, x)
        y, x = promote_dtypes_inexact(y, x)
    axis = canonicalize_axis(axis, len(_shape(y)))
    y = _moveaxis(y, axis, -1)
    if x is not None:
        if len(_shape(x)) == 1:
            dx = diff(x)
        else:
            if len(_shape(x)) != len(_shape(y)):
                raise ValueError(f"trapezoid: x of shape {_shape(x)} must be 1-D or have the "
                                 f"rank of y (shape {_shape(y)})")
            dx = _moveaxis(diff(x, axis=axis), axis, -1)
    total = ufuncs.multiply(dx, ufuncs.add(_slice(y, 1, None, -1), _slice(y, None, -1, -1)))
    total = lax.reduce_sum(total, (len(_shape(total)) - 1,))
    return ufuncs.multiply(total, 0.5)


def _component(v: Any, i: int) -> Any:
    return lax.squeeze(lax.slice_in_dim(v, i, i + 1, axis=len(_shape(v)) - 1),
                       (len(_shape(v)) - 1,))


def cross(a: Any, b: Any, axisa: int = -1, axisb: int = -1, axisc: int = -1,
          axis: int | None = None) -> Any:
    """The cross product of 2- or 3-vectors along `axisa` of `a` and `axisb` of `b`
    (both `axis` when given), batch axes broadcast. Two 2-vectors give the scalar z
    component; otherwise the 3-vectors lie along `axisc` of the result.

    >>> import numpy as np
    >>> cross(np.int32([1, 0, 0]), np.int32([0, 1, 0]))
    Array([0, 0, 1], dtype=int32)
    """
    check_arraylike("cross", a, b)
    a, b = promote_dtypes(a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    for name, v in (("a", a), ("b", b)):
        if not _shape(v):
            raise ValueError(f"cross: {name} must have at least one axis, got a 0-d array")
    a = _moveaxis(a, canonicalize_axis(axisa, len(_shape(a)), "axisa"), -1)
    b = _moveaxis(b, canonicalize_axis(axisb, len(_shape(b)), "axisb"), -1)
    if _shape(a)[-1] not in (2, 3) or _shape(b)[-1] not in (2, 3):
        raise ValueError("cross: incompatible dimensions for cross product (dimension must "
                         f"be 2 or 3), got vectors of length {_shape(a)[-1]} and "
                         f"{_shape(b)[-1]}")
    mul, sub = ufuncs.multiply, ufuncs.subtract
    a0, a1, b0, b1 = _component(a, 0), _component(a, 1), _component(b, 0), _component(b, 1)
    if _shape(a)[-1] == 2 and _shape(b)[-1] == 2:
        return sub(mul(a0, b1), mul(a1, b0))
    a2 = _component(a, 2) if _shape(a)[-1] == 3 else lax.full_like(a0, 0)
    b2 = _component(b, 2) if _shape(b)[-1] == 3 else lax.full_like(b0, 0)
    parts = ufuncs._broadcast("cross", sub(mul(a1, b2), mul(a2, b1)),
                              sub(mul(a2, b0), mul(a0, b2)), sub(mul(a0, b1), mul(a1, b0)))
    rank = len(_shape(parts[0]))
    c = lax.concatenate([lax.expand_dims(p, (rank,)) for p in parts], rank)
    return _moveaxis(c, -1, canonicalize_axis(axisc, rank + 1, "axisc"))


def unwrap(p: Any, discont: Any = None, axis: int = -1, period: Any = 2 * np.pi) -> Any:
    """`p` with jumps between neighbours along `axis` larger than `discont` (default
    `period / 2`) replaced by their complements modulo `period`.

    >>> import numpy as np
    >>> unwrap(np.float32([0, 3, 6.5]), period=4)
    Array([ 0. , -1. , -1.5], dtype=float32)
    """
    check_arraylike("unwrap", p)
    (p,) = promote_dtypes_inexact(p)
    if aval_of(p).dtype.kind == "c":
        raise ValueError("unwrap does not support complex inputs")
    axis = canonicalize_axis(axis, len(_shape(p)))
    if _shape(p)[axis] == 0:
        return p
    half = ufuncs.divide(period, 2)
    discont = half if discont is None else discont
    dd = diff(p, axis=axis)
    ddmod = ufuncs.subtract(ufuncs.remainder(ufuncs.add(dd, half), period), half)
    # Jumps of exactly half a period keep their sign, as in NumPy.
    ddmod = ufuncs.where(ufuncs.logical_and(ufuncs.equal(ddmod, ufuncs.negative(half)),
                                            ufuncs.greater(dd, 0)), half, ddmod)
    correction = ufuncs.where(ufuncs.less(ufuncs.abs(dd), discont), 0,
                              ufuncs.subtract(ddmod, dd))
    rest = ufuncs.add(_slice(p, 1, None, axis), lax.cumsum(correction, axis))
    return lax.concatenate(promote_dtypes(_slice(p, 0, 1, axis), rest), axis)
