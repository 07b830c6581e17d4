"""Products and contractions with NumPy semantics, each one lax.dot_general:
dot, vdot, vecdot, inner, outer, kron, tensordot, matvec, vecmat; the diagonal
and trace; and the covariance and correlation matrices built on them.

Results take `result_type` of the operands (weak when all are weak), or
`preferred_element_type` when given, which is also the accumulation dtype.

>>> import numpy as np
>>> tensordot(np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), axes=1).shape
(2, 4)
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
from lamella import lax
from lamella.core import dtypes as core_dtypes
from lamella.core.trace import aval_of
from lamella.lax.conversion import convert_element_type
from lamella.lax.explicit_sharding import unshard_dims
from lamella.numpy import ufuncs
from lamella.numpy.dtypes import (
    canonicalize_user_dtype,
    promote_dtypes,
    promote_dtypes_inexact,
    result_type,
)
from lamella.numpy.placement import out_sharding_of, with_out_sharding
from lamella.numpy.util import asarray_internal, canonicalize_axis, check_arraylike, flatten_1d
from lamella.numpy.util import shape as _shape

__all__ = ["corrcoef", "cov", "diagonal", "dot", "inner", "kron", "matvec", "outer",
           "tensordot", "trace", "vdot", "vecdot", "vecmat"]


# --- shared plumbing ------------------------------------------------------------------

class _Product:
    """Two operands promoted together, with the dtype (and weak flag) of the result
    and the dtype dot_general should accumulate in."""

    def __init__(self, name: str, a: Any, b: Any, preferred_element_type: Any = None):
        check_arraylike(name, a, b)
        a, b = asarray_internal(a), asarray_internal(b)
        if preferred_element_type is None:
            self.dtype, self.weak = result_type(a, b, return_weak_type_flag=True)
            self.accumulate = None
        else:
            self.dtype = canonicalize_user_dtype(preferred_element_type, name)
            self.weak, self.accumulate = False, self.dtype
        self.name = name
        self.a, self.b = promote_dtypes(a, b)

    def contract(self, a: Any, b: Any, dimension_numbers: Any, precision: Any) -> Any:
        return self.finish(lax.dot_general(a, b, dimension_numbers, precision=precision,
                                           preferred_element_type=self.accumulate))

    def scale(self) -> Any:
        """The product with a scalar operand: an elementwise multiply."""
        return self.finish(ufuncs.multiply(self.a, self.b))

    def finish(self, result: Any) -> Any:
        return convert_element_type(result, self.dtype, self.weak)



def _conj_if_complex(x: Any) -> Any:
    return lax.conj(x) if aval_of(x).dtype.kind == "c" else x


def _move_to_end(x: Any, axis: int) -> Any:
    rank = len(_shape(x))
    if axis == rank - 1:
        return x
    return lax.transpose(x, (*(i for i in range(rank) if i != axis), axis))


def _check_size(name: str, a: Any, a_axis: int, b: Any, b_axis: int) -> None:
    a_shape, b_shape = _shape(a), _shape(b)
    if a_shape[a_axis] != b_shape[b_axis]:
        # A TypeError, as JAX's dot_general raises for contracted sizes that differ.
        raise TypeError(f"{name}: shapes {a_shape} and {b_shape} are not aligned: axis "
                         f"{a_axis} of the first has size {a_shape[a_axis]} but axis {b_axis} "
                         f"of the second has size {b_shape[b_axis]}")


def _batched_contract(p: _Product, x_core: int, y_core: int, x_axis: int, y_axis: int,
                      precision: Any = None) -> Any:
    """Contracts core axis `x_axis` of p.a with core axis `y_axis` of p.b (core axes
    are the last `x_core` / `y_core`), broadcasting the leading (batch) axes."""
    x, y = p.a, p.b
    for which, arr, core in (("first", x, x_core), ("second", y, y_core)):
        if len(_shape(arr)) < core:
            raise ValueError(f"{p.name}: the {which} operand needs at least {core} "
                             f"dimension(s), got shape {_shape(arr)}")
    x_batch, y_batch = _shape(x)[:len(_shape(x)) - x_core], _shape(y)[:len(_shape(y)) - y_core]
    _check_size(p.name, x, len(x_batch) + x_axis, y, len(y_batch) + y_axis)
    try:
        batch = ufuncs._broadcast_shapes([x_batch, y_batch])
    except ValueError:
        raise ValueError(f"{p.name}: batch dimensions {x_batch} and {y_batch} do not broadcast "
                         f"(shapes {_shape(x)} and {_shape(y)})") from None
    x, y = _broadcast_batch(x, batch, x_core), _broadcast_batch(y, batch, y_core)
    n = len(batch)
    return p.contract(x, y, (((n + x_axis,), (n + y_axis,)), (tuple(range(n)),) * 2),
                      precision)


def _broadcast_batch(x: Any, batch: tuple[int, ...], core: int) -> Any:
    shape = _shape(x)
    target = (*batch, *shape[len(shape) - core:])
    if shape == target:
        return x
    return lax.broadcast_in_dim(x, target, tuple(range(len(target) - len(shape), len(target))))


# --- products ---------------------------------------------------------------------------

def dot(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None,
        out_sharding: Any = None) -> Any:
    """NumPy's dot: a scalar scales the other operand; otherwise the last axis of
    `a` is contracted with the second-to-last axis of `b` (its only axis when 1-D).

    >>> import numpy as np
    >>> dot(np.float32([[1, 2], [3, 4]]), np.float32([1, 1]))
    Array([3., 7.], dtype=float32)
    """
    sharding = out_sharding_of("dot", out_sharding)
    p = _Product("dot", a, b, preferred_element_type)
    a_rank, b_rank = len(_shape(p.a)), len(_shape(p.b))
    if a_rank == 0 or b_rank == 0:
        return with_out_sharding(p.scale(), sharding)
    a_axis, b_axis = a_rank - 1, max(b_rank - 2, 0)
    _check_size("dot", p.a, a_axis, p.b, b_axis)
    lhs = p.a if sharding is None else unshard_dims(p.a, (a_axis,))
    return with_out_sharding(p.contract(lhs, p.b, (((a_axis,), (b_axis,)), ((), ())),
                                        precision), sharding)


def vdot(a: Any, b: Any, *, precision: Any = None,
         preferred_element_type: Any = None) -> Any:
    """The dot product of the flattened arrays, conjugating `a` first.

    >>> import numpy as np
    >>> vdot(np.complex64([1j, 2]), np.complex64([1j, 1]))
    Array(3.+0.j, dtype=complex64)
    """
    p = _Product("vdot", a, b, preferred_element_type)
    x, y = _conj_if_complex(flatten_1d(p.a)), flatten_1d(p.b)
    if _shape(x) != _shape(y):
        raise TypeError(f"vdot: the operands have {_shape(x)[0]} and {_shape(y)[0]} elements "
                         f"(shapes {_shape(p.a)} and {_shape(p.b)}); they must match")
    return p.contract(x, y, (((0,), (0,)), ((), ())), precision)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """The conjugated dot product of vectors along `axis`, broadcasting the other axes.

    >>> import numpy as np
    >>> vecdot(np.float32([[1, 2], [3, 4]]), np.float32([1, 1]))
    Array([3., 7.], dtype=float32)
    """
    p = _Product("vecdot", x1, x2, preferred_element_type)
    p.a = _move_to_end(_conj_if_complex(p.a),
                       canonicalize_axis(axis, len(_shape(p.a)), "vecdot axis"))
    p.b = _move_to_end(p.b, canonicalize_axis(axis, len(_shape(p.b)), "vecdot axis"))
    return _batched_contract(p, 1, 1, 0, 0, precision)


def matvec(x1: Any, x2: Any, /) -> Any:
    """Matrix-vector products over broadcast batch axes: (..., m, n), (..., n) -> (..., m).

    >>> import numpy as np
    >>> matvec(np.float32([[1, 2], [3, 4]]), np.float32([1, -1]))
    Array([-1., -1.], dtype=float32)
    """
    return _batched_contract(_Product("matvec", x1, x2), 2, 1, 1, 0)


def vecmat(x1: Any, x2: Any, /) -> Any:
    """Conjugated vector-matrix products over broadcast batch axes:
    (..., m), (..., m, n) -> (..., n).

    >>> import numpy as np
    >>> vecmat(np.float32([1, -1]), np.float32([[1, 2], [3, 4]]))
    Array([-2., -2.], dtype=float32)
    """
    p = _Product("vecmat", x1, x2)
    p.a = _conj_if_complex(p.a)
    return _batched_contract(p, 1, 2, 0, 0)


def inner(a: Any, b: Any, *, precision: Any = None,
          preferred_element_type: Any = None) -> Any:
    """Contracts the last axes of `a` and `b` (a scalar scales the other operand).

    >>> import numpy as np
    >>> inner(np.float32([[1, 2], [3, 4]]), np.float32([[1, 1]]))
    Array([[3.],
           [7.]], dtype=float32)
    """
    p = _Product("inner", a, b, preferred_element_type)
    a_rank, b_rank = len(_shape(p.a)), len(_shape(p.b))
    if a_rank == 0 or b_rank == 0:
        return p.scale()
    _check_size("inner", p.a, a_rank - 1, p.b, b_rank - 1)
    return p.contract(p.a, p.b, (((a_rank - 1,), (b_rank - 1,)), ((), ())), precision)


def outer(a: Any, b: Any, out: None = None) -> Any:
    """The outer product of the flattened arrays: result[i, j] = a.flat[i] * b.flat[j].

    >>> import numpy as np
    >>> outer(np.int32([1, 2]), np.int32([1, 10, 100]))
    Array([[  1,  10, 100],
           [  2,  20, 200]], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("outer: the `out` argument is not supported "
                                  "(lamella arrays are immutable)")
    p = _Product("outer", a, b)
    return p.contract(flatten_1d(p.a), flatten_1d(p.b), (((), ()), ((), ())), None)


def kron(a: Any, b: Any) -> Any:
    """The Kronecker product: blocks a[i, j] * b, after padding the lower-rank
    operand's shape with leading ones.

    >>> import numpy as np
    >>> kron(np.int32([1, 10]), np.int32([1, 2, 3]))
    Array([ 1,  2,  3, 10, 20, 30], dtype=int32)
    """
    p = _Product("kron", a, b)
    rank = max(len(_shape(p.a)), len(_shape(p.b)))
    x = lax.reshape(p.a, (1,) * (rank - len(_shape(p.a))) + _shape(p.a))
    y = lax.reshape(p.b, (1,) * (rank - len(_shape(p.b))) + _shape(p.b))
    product = lax.dot_general(x, y, (((), ()), ((), ())))
    # Axes come out as (a0..an, b0..bn); interleaving them makes each a-axis the
    # slow half of the corresponding merged axis.
    interleaved = tuple(i for pair in zip(range(rank), range(rank, 2 * rank)) for i in pair)
    merged = tuple(m * n for m, n in zip(_shape(x), _shape(y)))
    return p.finish(lax.reshape(product, merged, dimensions=interleaved))


def tensordot(a: Any, b: Any, axes: int | Sequence[Any] = 2, *, precision: Any = None,
              preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """Contracts the last `axes` axes of `a` with the first `axes` axes of `b`, or
    the axes listed in the pair `axes = (a_axes, b_axes)`; the result has the
    remaining axes of `a`, then those of `b`.

    >>> import numpy as np
    >>> tensordot(np.ones((2, 3, 4), np.float32), np.ones((4, 3), np.float32),
    ...           axes=([1, 2], [1, 0])).shape
    (2,)
    """
    sharding = out_sharding_of("tensordot", out_sharding)
    p = _Product("tensordot", a, b, preferred_element_type)
    a_rank, b_rank = len(_shape(p.a)), len(_shape(p.b))
    a_axes, b_axes = _tensordot_axes(axes, a_rank, b_rank)
    for a_axis, b_axis in zip(a_axes, b_axes):
        if _shape(p.a)[a_axis] != _shape(p.b)[b_axis]:
            raise TypeError(f"tensordot: shape mismatch: a.shape[{a_axis}] = "
                             f"{_shape(p.a)[a_axis]} but b.shape[{b_axis}] = "
                             f"{_shape(p.b)[b_axis]} (shapes {_shape(p.a)} and {_shape(p.b)})")
    lhs = p.a if sharding is None else unshard_dims(p.a, a_axes)
    return with_out_sharding(p.contract(lhs, p.b, ((a_axes, b_axes), ((), ())), precision),
                             sharding)


def _tensordot_axes(axes: Any, a_rank: int, b_rank: int) -> tuple[tuple, tuple]:
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if not 0 <= n <= min(a_rank, b_rank):
            raise ValueError(f"tensordot: axes={n} must be between 0 and the smaller rank "
                             f"of the operands ({a_rank} and {b_rank})")
        return tuple(range(a_rank - n, a_rank)), tuple(range(n))
    if isinstance(axes, Sequence) and not isinstance(axes, str) and len(axes) == 2:
        a_axes, b_axes = (tuple(x) if isinstance(x, Sequence) else (x,) for x in axes)
        if len(a_axes) != len(b_axes):
            raise ValueError(f"tensordot: the axes lists {list(a_axes)} and {list(b_axes)} "
                             "must have the same length")
        a_axes = tuple(canonicalize_axis(x, a_rank, "tensordot axis") for x in a_axes)
        b_axes = tuple(canonicalize_axis(x, b_rank, "tensordot axis") for x in b_axes)
        for name, listed in (("a", a_axes), ("b", b_axes)):
            if len(set(listed)) != len(listed):
                raise ValueError(f"tensordot: repeated axis for {name} in {list(listed)}")
        return a_axes, b_axes
    raise TypeError("tensordot: axes must be an int or a pair of axis sequences (or of "
                    f"ints), got {axes!r}")


# --- diagonals ----------------------------------------------------------------------------

def diagonal(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
    """The diagonal a[..., i, i + offset] over `axis1` and `axis2`, as a new last axis.

    >>> import numpy as np
    >>> diagonal(np.arange(9, dtype=np.int32).reshape(3, 3), offset=1)
    Array([1, 5], dtype=int32)
    """
    check_arraylike("diagonal", a)
    a = asarray_internal(a)
    shape = _shape(a)
    if len(shape) < 2:
        raise ValueError(f"diagonal requires an array of at least two dimensions, got shape "
                         f"{shape}")
    axis1 = canonicalize_axis(axis1, len(shape), "axis1")
    axis2 = canonicalize_axis(axis2, len(shape), "axis2")
    if axis1 == axis2:
        raise ValueError(f"diagonal: axis1 and axis2 must differ, both are {axis1}")
    offset = operator.index(offset)
    rest = [i for i in range(len(shape)) if i not in (axis1, axis2)]
    lead = tuple(shape[i] for i in rest)
    rows, cols = shape[axis1], shape[axis2]
    # Flattened row-major, a[i, i + offset] sits at i * (cols + 1) + offset (for
    # negative offsets, starting -offset rows down): one strided slice.
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    start = offset if offset >= 0 else -offset * cols
    flat = lax.reshape(a, (*lead, rows * cols), dimensions=(*rest, axis1, axis2))
    if length == 0:
        start = 0
    limit = start + (length - 1) * (cols + 1) + 1 if length else 0
    return lax.slice(flat, (0,) * len(lead) + (start,), (*lead, limit),
                     (1,) * len(lead) + (cols + 1,))


def trace(a: Any, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
          out: None = None) -> Any:
    """The sum of `diagonal(a, offset, axis1, axis2)`. Like `sum`, bools and narrow
    integers add up in the default integer type unless `dtype` is given.

    >>> import numpy as np
    >>> trace(np.arange(9, dtype=np.int8).reshape(3, 3))
    Array(12, dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("trace: the `out` argument is not supported "
                                  "(lamella arrays are immutable)")
    d = diagonal(a, offset, axis1, axis2)
    to = _sum_dtype(aval_of(d).dtype) if dtype is None else \
        core_dtypes.canonicalize_dtype(np.dtype(dtype))
    if to != aval_of(d).dtype:
        d = lax.convert_element_type(d, to)
    reduce = lax.reduce_or if to == np.bool_ else lax.reduce_sum
    return reduce(d, (len(_shape(d)) - 1,))


def _sum_dtype(dtype: np.dtype) -> np.dtype:
    # jax.numpy's sum promotes bools and integers narrower than the default integer.
    default_int = core_dtypes.canonicalize_dtype(np.dtype(np.int64))
    default_uint = core_dtypes.canonicalize_dtype(np.dtype(np.uint64))
    if dtype.kind == "b" or dtype.kind == "i" and dtype.itemsize < default_int.itemsize:
        return default_int
    if dtype.kind == "u" and dtype.itemsize < default_uint.itemsize:
        return default_uint
    return dtype


# --- statistics -------------------------------------------------------------------------

def cov(m: Any, y: Any = None, rowvar: bool = True, bias: bool = False, ddof: int | None = None,
        fweights: Any = None, aweights: Any = None, dtype: Any = None) -> Any:
    """The covariance matrix of the variables in the rows of `m` (columns when
    `rowvar` is False), and of `y`'s when given; normalised by N - ddof (ddof is 1,
    or 0 with `bias`), with optional integer frequency and real observation weights;
    computed in `dtype` when given.

    >>> import numpy as np
    >>> cov(np.float32([[0, 1, 2], [2, 1, 0]]))
    Array([[ 1., -1.],
           [-1.,  1.]], dtype=float32)
    """
    check_arraylike("cov", m, *(() if y is None else (y,)))
    m, *rest = promote_dtypes_inexact(m, *(() if y is None else (y,)))
    if dtype is not None:
        dtype = canonicalize_user_dtype(dtype, "cov")
        m, *rest = (lax.convert_element_type(v, dtype) for v in (m, *rest))
    x = _variables_as_rows("m", m, rowvar)
    if _shape(x)[0] == 0:
        return lax.full((0, 0), 0, aval_of(x).dtype)
    if rest:
        other = _variables_as_rows("y", rest[0], rowvar)
        if _shape(other)[1] != _shape(x)[1]:
            raise ValueError(f"cov: m and y must have the same number of observations, got "
                             f"{_shape(x)[1]} and {_shape(other)[1]}")
        x = lax.concatenate([x, other], 0)
    n = _shape(x)[1]
    ddof = (0 if bias else 1) if ddof is None else operator.index(ddof)
    w = None
    if fweights is not None:
        w = _observation_weights("fweights", fweights, n)
        if aval_of(w).dtype.kind not in "iu":
            raise TypeError(f"cov: fweights must be integers, got dtype {aval_of(w).dtype}")
    if aweights is not None:
        aw = _observation_weights("aweights", aweights, n)
        w = aw if w is None else ufuncs.multiply(w, aw)
    if w is None:
        mean, f = ufuncs.true_divide(lax.reduce_sum(x, (1,)), n), n - ddof
    else:
        w_sum = lax.reduce_sum(w, (0,))
        mean = ufuncs.true_divide(lax.reduce_sum(ufuncs.multiply(x, w), (1,)), w_sum)
        if ddof == 0:
            f = w_sum
        elif aweights is None:
            f = ufuncs.subtract(w_sum, ddof)
        else:
            correction = ufuncs.true_divide(lax.reduce_sum(ufuncs.multiply(w, aw), (0,)), w_sum)
            f = ufuncs.subtract(w_sum, ufuncs.multiply(ddof, correction))
    centered = ufuncs.subtract(x, lax.expand_dims(mean, (1,)))
    weighted = centered if w is None else ufuncs.multiply(centered, w)
    c = lax.dot_general(centered, _conj_if_complex(weighted), (((1,), (1,)), ((), ())))
    c = ufuncs.true_divide(c, f)
    return lax.reshape(c, tuple(d for d in _shape(c) if d != 1))


def _variables_as_rows(name: str, m: Any, rowvar: bool) -> Any:
    shape = _shape(m)
    if len(shape) > 2:
        raise ValueError(f"cov: {name} has more than 2 dimensions (shape {shape})")
    x = lax.reshape(m, (1,) * (2 - len(shape)) + shape)
    if not rowvar and _shape(x)[0] != 1:
        x = lax.transpose(x, (1, 0))
    return x


def _observation_weights(name: str, w: Any, n: int) -> Any:
    check_arraylike(f"cov {name}", w)
    w = asarray_internal(w)
    if len(_shape(w)) != 1 or _shape(w)[0] != n:
        raise ValueError(f"cov: {name} must be 1-D with one weight per observation ({n}), "
                         f"got shape {_shape(w)}")
    return w


def corrcoef(x: Any, y: Any = None, rowvar: bool = True, dtype: Any = None) -> Any:
    """Pearson correlation coefficients: `cov(x, y, rowvar)` scaled by the standard
    deviations, clipped to [-1, 1].

    >>> import numpy as np
    >>> corrcoef(np.float32([[0, 1, 2], [2, 1, 0]]))
    Array([[ 1., -1.],
           [-1.,  1.]], dtype=float32)
    """
    c = cov(x, y, rowvar, dtype=dtype)
    if not _shape(c):
        return ufuncs.true_divide(c, c)
    stddev = ufuncs.sqrt(ufuncs.real(diagonal(c)))
    c = ufuncs.true_divide(ufuncs.true_divide(c, lax.expand_dims(stddev, (1,))),
                           lax.expand_dims(stddev, (0,)))
    real = ufuncs.clip(ufuncs.real(c), -1, 1)
    if aval_of(c).dtype.kind != "c":
        return real
    return lax.complex(real, ufuncs.clip(ufuncs.imag(c), -1, 1))
