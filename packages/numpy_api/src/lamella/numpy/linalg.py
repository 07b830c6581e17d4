"""Linear algebra (``jax.numpy.linalg``): norms, determinants, solves, inverses and
decompositions over batches of matrices, built on the LAPACK-backed primitives
of ``lamella.lax.linalg``.

Inputs of integer or bool dtype become the default float; complex inputs are
supported wherever LAPACK is. Every function batches over leading dimensions,
and is differentiable where JAX's is (``det`` at singular matrices, ``pinv``
and ``solve`` by custom rules).

    >>> import numpy as np
    >>> det(np.array([[2.0, 0.0], [0.0, 3.0]], np.float32))
    Array(6., dtype=float32)
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from lamella import lax
from lamella.core import custom_jvp, jit, stop_gradient
from lamella.core import dtypes as core_dtypes
from lamella.lax import linalg as lax_linalg
from lamella.lax.explicit_sharding import like_sharding
from lamella.numpy import ufuncs
from lamella.numpy.dtypes import finfo, promote_dtypes, promote_dtypes_inexact
from lamella.numpy.placement import check_out_sharding
from lamella.numpy.products import matmul as _np_matmul
from lamella.numpy.util import (
    asarray_internal,
    canonicalize_axes,
    canonicalize_axis,
    check_arraylike,
    concrete_value,
    dtype_of,
)
from lamella.numpy.util import shape as _shape

__all__ = [
    "EighResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky", "cond", "cross",
    "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq", "matmul",
    "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "multi_dot", "norm",
    "outer", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "tensorinv",
    "tensorsolve", "trace", "vecdot", "vector_norm",
]


class EighResult(NamedTuple):
    eigenvalues: Any
    eigenvectors: Any


class QRResult(NamedTuple):
    Q: Any
    R: Any


class SlogdetResult(NamedTuple):
    sign: Any
    logabsdet: Any


class SVDResult(NamedTuple):
    U: Any
    S: Any
    Vh: Any


# --- shared helpers -------------------------------------------------------------------


def _inexact(name: str, *xs: Any) -> list[Any]:
    check_arraylike(name, *xs)
    return promote_dtypes_inexact(*xs)



def _is_complex(x: Any) -> bool:
    return dtype_of(x).kind == "c"


def _is_half(x: Any) -> bool:
    """float16 or bfloat16: dtypes LAPACK has no routines for."""
    return dtype_of(x).kind in "fV" and dtype_of(x).itemsize == 2


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32 if dtype == np.complex64 else
                    np.float64 if dtype == np.complex128 else dtype)


def _check_matrix(name: str, x: Any, square: bool = False) -> None:
    shape = _shape(x)
    if len(shape) < 2:
        raise ValueError(f"{name}: input must have at least 2 dimensions (a matrix or a "
                         f"batch of matrices), got shape {shape}")
    if square and shape[-1] != shape[-2]:
        raise ValueError(f"{name}: input must be a square matrix (or a batch of them), "
                         f"got shape {shape}")


def _const(x: Any, value: Any) -> Any:
    """`value` as a scalar of x's dtype."""
    return lax.full((), value, dtype_of(x))


def _mT(x: Any) -> Any:
    nd = len(_shape(x))
    return lax.transpose(x, (*range(nd - 2), nd - 1, nd - 2))


def _H(x: Any) -> Any:
    return lax.conj(_mT(x)) if _is_complex(x) else _mT(x)


def _mm(a: Any, b: Any) -> Any:
    return _np_matmul(a, b)


def _eye(n: int, dtype: Any) -> Any:
    return lax.convert_element_type(lax.eq(lax.broadcasted_iota(np.int32, (n, n), 0),
                                           lax.broadcasted_iota(np.int32, (n, n), 1)), dtype)


def _broadcast_to(x: Any, shape: Sequence[int]) -> Any:
    shape, old = tuple(shape), _shape(x)
    if old == shape:
        return x
    lead = len(shape) - len(old)
    keep = tuple(i for i, d in enumerate(old) if d == shape[lead + i])
    x = lax.reshape(x, tuple(old[i] for i in keep)) if len(keep) != len(old) else x
    return lax.broadcast_in_dim(x, shape, tuple(lead + i for i in keep))


def _broadcast_batch(name: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    rank = max(len(s) for s in shapes)
    padded = [(1,) * (rank - len(s)) + tuple(s) for s in shapes]
    out = []
    for dims in zip(*padded):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise ValueError(f"{name}: batch dimensions {' and '.join(map(str, shapes))} "
                             "do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _reduce(fn: Any, x: Any, axes: Sequence[int], keepdims: bool) -> Any:
    out = fn(x, tuple(axes))
    if keepdims:
        out = lax.expand_dims(out, tuple(sorted(axes)))
    return out


def _abs_squared(x: Any) -> Any:
    return lax.real(x * lax.conj(x)) if _is_complex(x) else x * x


def _sort_desc(keys: Any, *matrices: Any) -> list[Any]:
    """`keys` (..., n) sorted descending, and the columns of each (..., m, n) matrix
    reordered to match."""
    last = len(_shape(keys)) - 1
    sorted_keys = lax.neg(lax.sort(lax.neg(keys), dimension=last))
    if not matrices:
        return [sorted_keys]
    # Sort the rows of each transposed matrix, keyed by -keys spread along the rows.
    rows = [_mT(v) for v in matrices]
    key = lax.broadcast_in_dim(lax.neg(keys), _shape(rows[0]), tuple(range(last + 1)))
    out = lax.sort([key, *rows], dimension=last, num_keys=1)
    return [sorted_keys, *[_mT(o) for o in out[1:]]]


# --- matrix products and array-API extras ------------------------------------------------


def matmul(x1: Any, x2: Any, /, *, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """Matrix product with NumPy semantics (1-D operands promoted, batches broadcast).

    >>> import numpy as np
    >>> matmul(np.eye(2, dtype=np.float32), np.float32([1, 2]))
    Array([1., 2.], dtype=float32)
    """
    check_arraylike("matmul", x1, x2)
    out = _np_matmul(x1, x2)
    if preferred_element_type is not None:
        out = lax.convert_element_type(out, preferred_element_type)
    return out


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2, precision: Any = None,
              preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """Contracts the last `axes` axes of x1 with the first of x2, or the axes paired
    in ``axes = (axes1, axes2)``.

    >>> tensordot(np.ones((2, 3), np.int32), np.ones((3, 4), np.int32), axes=1)
    Array([[3, 3, 3, 3],
           [3, 3, 3, 3]], dtype=int32)
    """
    check_out_sharding("linalg.tensordot", out_sharding)
    check_arraylike("tensordot", x1, x2)
    x1, x2 = promote_dtypes(x1, x2)
    s1, s2 = _shape(x1), _shape(x2)
    if isinstance(axes, (int, np.integer)):
        n = operator.index(axes)
        if not 0 <= n <= min(len(s1), len(s2)):
            raise ValueError(f"tensordot: axes={n} must be between 0 and the ranks of the "
                             f"operands, shapes {s1} and {s2}")
        a1, a2 = tuple(range(len(s1) - n, len(s1))), tuple(range(n))
    else:
        try:
            p1, p2 = axes
        except (TypeError, ValueError):
            raise TypeError("tensordot: axes must be an int or a pair of axis sequences, "
                            f"got {axes!r}") from None
        p1 = (p1,) if isinstance(p1, (int, np.integer)) else tuple(p1)
        p2 = (p2,) if isinstance(p2, (int, np.integer)) else tuple(p2)
        if len(p1) != len(p2):
            raise ValueError(f"tensordot: axes {p1} and {p2} have different lengths")
        a1 = tuple(canonicalize_axis(a, len(s1)) for a in p1)
        a2 = tuple(canonicalize_axis(a, len(s2)) for a in p2)
    for i, j in zip(a1, a2):
        if s1[i] != s2[j]:
            raise TypeError(f"tensordot: shape mismatch, axis {i} of shape {s1} has size "
                             f"{s1[i]} but axis {j} of shape {s2} has size {s2[j]}")
    return lax.dot_general(x1, x2, ((a1, a2), ((), ())), precision=precision,
                           preferred_element_type=preferred_element_type)


def outer(x1: Any, x2: Any, /) -> Any:
    """The outer product of two vectors.

    >>> outer(np.int32([1, 2]), np.int32([1, 10, 100]))
    Array([[  1,  10, 100],
           [  2,  20, 200]], dtype=int32)
    """
    check_arraylike("outer", x1, x2)
    x1, x2 = promote_dtypes(x1, x2)
    if len(_shape(x1)) != 1 or len(_shape(x2)) != 1:
        raise ValueError(f"outer: inputs must be 1-D, got shapes {_shape(x1)} and "
                         f"{_shape(x2)}")
    shape = (_shape(x1)[0], _shape(x2)[0])
    return lax.mul(lax.broadcast_in_dim(x1, shape, (0,)), lax.broadcast_in_dim(x2, shape, (1,)))


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1, precision: Any = None,
           preferred_element_type: Any = None) -> Any:
    """Vector dot product ``sum(conj(x1) * x2)`` along `axis`, batched by broadcasting.

    >>> vecdot(np.float32([[1, 2], [3, 4]]), np.float32([1, 1]))
    Array([3., 7.], dtype=float32)
    """
    check_arraylike("vecdot", x1, x2)
    x1, x2 = promote_dtypes(x1, x2)
    s1, s2 = _shape(x1), _shape(x2)
    n1 = s1[canonicalize_axis(axis, len(s1))]
    n2 = s2[canonicalize_axis(axis, len(s2))]
    if n1 != n2:
        raise ValueError(f"vecdot: x1 (shape {s1}) and x2 (shape {s2}) must have the same "
                         f"size along axis {axis}")
    prod = ufuncs.multiply(lax.conj(x1) if _is_complex(x1) else x1, x2)
    out = lax.reduce_sum(prod, (canonicalize_axis(axis, len(_shape(prod))),))
    if preferred_element_type is not None:
        out = lax.convert_element_type(out, preferred_element_type)
    return out


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Any:
    """The cross product of 3-vectors along `axis`, batched by broadcasting.

    >>> cross(np.float32([1, 0, 0]), np.float32([0, 1, 0]))
    Array([0., 0., 1.], dtype=float32)
    """
    check_arraylike("cross", x1, x2)
    x1, x2 = promote_dtypes(x1, x2)
    s1, s2 = _shape(x1), _shape(x2)
    ax1, ax2 = canonicalize_axis(axis, len(s1)), canonicalize_axis(axis, len(s2))
    if s1[ax1] != 3 or s2[ax2] != 3:
        raise ValueError(f"cross: both inputs must have size 3 along axis {axis}, got shapes "
                         f"{s1} and {s2}")
    x1 = _move_to_end(x1, ax1)
    x2 = _move_to_end(x2, ax2)

    def part(x, i):
        nd = len(_shape(x))
        return lax.squeeze(lax.slice_in_dim(x, i, i + 1, axis=nd - 1), (nd - 1,))

    a0, a1, a2 = (part(x1, i) for i in range(3))
    b0, b1, b2 = (part(x2, i) for i in range(3))
    parts = [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0]
    nd = len(_shape(parts[0]))
    out = lax.concatenate([lax.expand_dims(p, (nd,)) for p in parts], nd)
    return lax.transpose(out, (*range(axis % (nd + 1)), nd, *range(axis % (nd + 1), nd)))


def _move_to_end(x: Any, axis: int) -> Any:
    nd = len(_shape(x))
    return lax.transpose(x, (*[i for i in range(nd) if i != axis], axis))


def diagonal(x: Any, /, *, offset: int = 0) -> Any:
    """The `offset` diagonal of each matrix over the last two axes.

    >>> diagonal(np.arange(6, dtype=np.int32).reshape(2, 3), offset=1)
    Array([1, 5], dtype=int32)
    """
    check_arraylike("diagonal", x)
    x = promote_dtypes(x)[0]
    _check_matrix("diagonal", x)
    offset = operator.index(offset)
    shape = _shape(x)
    nd, (m, n) = len(shape), shape[-2:]
    rows0, cols0 = max(-offset, 0), max(offset, 0)
    d = max(0, min(m - rows0, n - cols0))
    if d == 0:
        return lax.full((*shape[:-2], 0), 0, dtype_of(x))
    x = lax.slice(x, (0,) * (nd - 2) + (rows0, cols0), (*shape[:-2], rows0 + d, cols0 + d))
    # The diagonal of a d-by-d block is every (d+1)-th element of it flattened.
    flat = lax.reshape(x, (*shape[:-2], d * d))
    return lax.slice(flat, (0,) * (nd - 1), (*shape[:-2], d * d), (1,) * (nd - 2) + (d + 1,))


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Any:
    """The sum of the `offset` diagonal of each matrix; small integers and bools sum
    in the default integer (as jax.numpy.sum does).

    >>> trace(np.eye(3, dtype=np.float32))
    Array(3., dtype=float32)
    """
    diag = diagonal(x, offset=offset)
    if dtype is None:
        dt = dtype_of(diag)
        if dt.kind == "b" or (dt.kind in "iu" and dt.itemsize < np.dtype(np.int32).itemsize):
            dtype = core_dtypes.canonicalize_dtype(np.dtype(np.uint64 if dt.kind == "u"
                                                            else np.int64))
    if dtype is not None:
        diag = lax.convert_element_type(diag, core_dtypes.canonicalize_dtype(np.dtype(dtype)))
    return lax.reduce_sum(diag, (len(_shape(diag)) - 1,))


def matrix_transpose(x: Any, /) -> Any:
    """Swaps the last two axes.

    >>> matrix_transpose(np.zeros((4, 2, 3), np.float32)).shape
    (4, 3, 2)
    """
    check_arraylike("matrix_transpose", x)
    x = promote_dtypes(x)[0]
    _check_matrix("matrix_transpose", x)
    return _mT(x)


def multi_dot(arrays: Sequence[Any], *, precision: Any = None) -> Any:
    """The product of a chain of matrices, multiplied in the cheapest order; the first
    and last may be vectors.

    >>> a, b, c = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), np.ones(4, np.float32)
    >>> multi_dot([a, b, c])
    Array([12., 12.], dtype=float32)
    """
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError(f"multi_dot: expected at least two arrays, got {len(arrays)}")
    check_arraylike("multi_dot", *arrays)
    arrays = promote_dtypes(*arrays)
    first_vector, last_vector = len(_shape(arrays[0])) == 1, len(_shape(arrays[-1])) == 1
    if first_vector:
        arrays[0] = lax.expand_dims(arrays[0], (0,))
    if last_vector:
        arrays[-1] = lax.expand_dims(arrays[-1], (1,))
    for i, a in enumerate(arrays):
        if len(_shape(a)) != 2:
            raise ValueError(f"multi_dot: argument {i} must be 2-D (the first and last may "
                             f"be 1-D), got shape {_shape(a)}")
    for i in range(len(arrays) - 1):
        if _shape(arrays[i])[1] != _shape(arrays[i + 1])[0]:
            raise ValueError(f"multi_dot: shapes {_shape(arrays[i])} (argument {i}) and "
                             f"{_shape(arrays[i + 1])} (argument {i + 1}) do not chain")
    dims = [_shape(arrays[0])[0], *(_shape(a)[1] for a in arrays)]
    split = _chain_order(dims)

    def product(i: int, j: int) -> Any:
        if i == j:
            return arrays[i]
        k = split[i][j]
        return lax.dot(product(i, k), product(k + 1, j), precision=precision)

    out = product(0, len(arrays) - 1)
    if first_vector:
        out = lax.squeeze(out, (0,))
    if last_vector:
        out = lax.squeeze(out, (len(_shape(out)) - 1,))
    return out


def _chain_order(dims: list[int]) -> list[list[int]]:
    """The textbook matrix-chain dynamic programme: split[i][j] is where the cheapest
    product of matrices i..j divides (matrix i is dims[i]-by-dims[i+1])."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j], split[i][j] = min(
                (cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                for k in range(i, j))
    return split


# --- norms -----------------------------------------------------------------------------


def _is_ord(ord: Any, value: Any) -> bool:
    return not isinstance(ord, str) and ord is not None and ord == value


def _norm_extreme(largest: bool, x: Any, axes: tuple[int, ...], ord: Any) -> Any:
    """The max (or min) of nonnegative `x` over `axes`, for a norm of order `ord`: a max
    over nothing is 0 (an empty matrix has norm 0, as in JAX and NumPy), and a min over
    nothing has no value, so it is JAX's ValueError rather than +inf."""
    if largest:
        return lax.max(lax.reduce_max(x, axes), _const(x, 0))
    shape = _shape(x)
    if any(shape[a] == 0 for a in axes):
        raise ValueError(f"norm: ord={ord} is a minimum over an empty axis of an array of "
                         f"shape {shape} (zero-size array to reduction operation min which "
                         "has no identity)")
    return lax.reduce_min(x, axes)


def _vector_norm(x: Any, ord: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    if isinstance(ord, str):
        raise ValueError(f"Invalid order '{ord}' for vector norm")
    if ord is None or _is_ord(ord, 2):
        return lax.sqrt(_reduce(lax.reduce_sum, _abs_squared(x), axes, keepdims))
    absx = lax.abs(x)
    if _is_ord(ord, np.inf) or _is_ord(ord, -np.inf):
        out = _norm_extreme(ord > 0, absx, axes, ord)
        return lax.expand_dims(out, tuple(sorted(axes))) if keepdims else out
    if _is_ord(ord, 0):
        nonzero = lax.convert_element_type(lax.ne(x, _const(x, 0)), dtype_of(absx))
        return _reduce(lax.reduce_sum, nonzero, axes, keepdims)
    if _is_ord(ord, 1):
        return _reduce(lax.reduce_sum, absx, axes, keepdims)
    p = _const(absx, ord)
    total = _reduce(lax.reduce_sum, lax.pow(absx, p), axes, keepdims)
    return lax.pow(total, lax.div(_const(absx, 1), p))


def _matrix_norm(x: Any, ord: Any, axes: tuple[int, int], keepdims: bool) -> Any:
    row, col = axes
    if row == col:
        raise ValueError(f"norm: the two matrix axes must differ, got {axes}")
    if ord is None or ord == "fro":
        return lax.sqrt(_reduce(lax.reduce_sum, _abs_squared(x), axes, keepdims))
    if not isinstance(ord, str) and ord in (1, -1, np.inf, -np.inf):
        # Sum over one axis, then take the extreme over the other.
        inner, outer_ = (row, col) if ord in (1, -1) else (col, row)
        sums = lax.reduce_sum(lax.abs(x), (inner,))
        out = _norm_extreme(ord > 0, sums, (outer_ - (outer_ > inner),), ord)
        return lax.expand_dims(out, tuple(sorted(axes))) if keepdims else out
    if ord in ("nuc", 2, -2):
        nd = len(_shape(x))
        rest = [i for i in range(nd) if i not in axes]
        s = lax_linalg.svd(lax.transpose(x, (*rest, row, col)), full_matrices=False,
                           compute_uv=False)
        last = len(_shape(s)) - 1
        out = (lax.reduce_sum(s, (last,)) if ord == "nuc" else
               _norm_extreme(ord == 2, s, (last,), ord))
        return lax.expand_dims(out, tuple(sorted(axes))) if keepdims else out
    raise ValueError(f"Invalid order '{ord}' for matrix norm")


def norm(x: Any, ord: Any = None, axis: Any = None, keepdims: bool = False) -> Any:
    """Vector or matrix norm, as numpy.linalg.norm.

    Without `axis`, 1-D inputs get vector norms and 2-D inputs matrix norms
    (`ord=None` flattens any input: the 2-norm of all its elements). An int axis
    asks for vector norms, a pair of axes for matrix norms. Vector `ord`: None/2,
    inf, -inf, 0 (count of nonzeros), 1 or any p; matrix `ord`: None/'fro', 'nuc',
    inf, -inf, 1, -1, 2, -2.

    >>> norm(np.float32([3, 4]))
    Array(5., dtype=float32)
    >>> norm(np.float32([[1, 2], [3, 4]]), ord=1)
    Array(6., dtype=float32)
    """
    x, = _inexact("norm", x)
    nd = len(_shape(x))
    if axis is None:
        if ord is None:
            return _vector_norm(x, None, tuple(range(nd)), keepdims)
        if nd not in (1, 2):
            raise ValueError(f"norm: an ord needs a 1-D or 2-D input (or an axis), got shape "
                             f"{_shape(x)}")
        axes: tuple[int, ...] = tuple(range(nd))
    elif isinstance(axis, (int, np.integer)):
        axes = (canonicalize_axis(axis, nd),)
    else:
        axes = tuple(canonicalize_axis(a, nd) for a in axis)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, (axes[0], axes[1]), keepdims)
    raise ValueError(f"norm: axis must be an int or a pair of ints, got {axis!r}")


def vector_norm(x: Any, /, *, axis: Any = None, keepdims: bool = False, ord: Any = 2) -> Any:
    """The vector norm over `axis` (all axes when None, or any tuple of axes).

    >>> vector_norm(np.float32([[3, 0], [0, 4]]))
    Array(5., dtype=float32)
    """
    x, = _inexact("vector_norm", x)
    return _vector_norm(x, ord, canonicalize_axes(axis, len(_shape(x))), keepdims)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Any:
    """The matrix norm of each matrix over the last two axes.

    >>> matrix_norm(np.float32([[3, 0], [0, 4]]), ord=2)
    Array(4., dtype=float32)
    """
    x, = _inexact("matrix_norm", x)
    _check_matrix("matrix_norm", x)
    nd = len(_shape(x))
    return _matrix_norm(x, ord, (nd - 2, nd - 1), keepdims)


# --- LU: determinants, solves, inverses ---------------------------------------------------


def _permutation_matrix(permutation: Any, dtype: Any) -> Any:
    """P with (P b)[i] = b[permutation[i]], batched over leading axes."""
    shape = _shape(permutation)
    full = (*shape, shape[-1])
    return lax.convert_element_type(
        lax.eq(lax.broadcast_in_dim(permutation, full, tuple(range(len(shape)))),
               lax.broadcasted_iota(np.int32, full, len(shape))), dtype)


def _lu_solve(lu: Any, permutation: Any, b: Any, transpose: bool) -> Any:
    """Solves a x = b (or a^T x = b) for (..., n, k) b, from p a = l u."""
    p = _permutation_matrix(permutation, dtype_of(lu))
    if not transpose:
        x = _mm(p, b)
        x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
        return lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
    x = lax_linalg.triangular_solve(lu, b, left_side=True, lower=False, transpose_a=True)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, transpose_a=True,
                                    unit_diagonal=True)
    return _mm(_mT(p), x)


# Compiled as a whole: op-by-op eager execution would compile each of its steps.
@jit
def _solve_matrices(a: Any, b: Any) -> Any:
    """a^-1 b for (..., n, n) a and (..., n, k) b of one batch shape, differentiated
    implicitly (one factorization serves the primal and its derivatives)."""
    lu, _, permutation = lax_linalg.lu(stop_gradient(a))
    return lax.custom_linear_solve(
        lambda x: _mm(a, x), b,
        solve=lambda _, x: _lu_solve(lu, permutation, x, False),
        transpose_solve=lambda _, x: _lu_solve(lu, permutation, x, True))


def solve(a: Any, b: Any) -> Any:
    """Solves a x = b. As in NumPy 2, a 1-D `b` is a vector, otherwise `b` is a
    (batch of) matrices whose batch dimensions broadcast against a's.

    >>> solve(np.float32([[2, 0], [0, 4]]), np.float32([2, 2]))
    Array([1. , 0.5], dtype=float32)
    """
    a, b = _inexact("solve", a, b)
    _check_matrix("solve", a, square=True)
    sa, sb = _shape(a), _shape(b)
    n = sa[-1]
    vector = len(sb) == 1
    if len(sb) == 0 or sb[-1 if vector else -2] != n:
        raise ValueError(f"solve: b must have shape ({n},) or (..., {n}, k) to match a of "
                         f"shape {sa}, got shape {sb}")
    if vector:
        b = lax.expand_dims(b, (1,))
    batch = _broadcast_batch("solve", sa[:-2], _shape(b)[:-2])
    a = _broadcast_to(a, (*batch, n, n))
    b = _broadcast_to(b, (*batch, *_shape(b)[-2:]))
    x = _solve_matrices(a, b)
    return lax.squeeze(x, (len(batch) + 1,)) if vector else x


def inv(a: Any) -> Any:
    """The inverse of each square matrix (NaNs or infinities where it is singular).

    >>> inv(np.float32([[2, 0], [0, 4]]))
    Array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float32)
    """
    a, = _inexact("inv", a)
    _check_matrix("inv", a, square=True)
    shape = _shape(a)
    # the identities laid out as `a` (its batch split under an Explicit mesh)
    return _solve_matrices(a, like_sharding(a, _broadcast_to(_eye(shape[-1], dtype_of(a)),
                                                             shape)))


@jit
def _lu_sign_and_diagonal(a: Any) -> tuple[Any, Any, Any, Any]:
    """(lu, permutation, parity sign of the pivots, diagonal of U) for square a."""
    lu, pivots, permutation = lax_linalg.lu(a)
    shape = _shape(pivots)
    swaps = lax.ne(pivots, lax.broadcasted_iota(np.int32, shape, len(shape) - 1))
    parity = lax.rem(lax.reduce_sum(lax.convert_element_type(swaps, np.int32),
                                    (len(shape) - 1,)), lax.full((), 2, np.int32))
    sign = lax.convert_element_type(1 - 2 * parity, dtype_of(a))
    return lu, permutation, sign, diagonal(lu)


@jit
def _cofactor_solve(a: Any, b: Any) -> tuple[Any, Any]:
    """(det a, adj(a) b) for (..., n, n) a and b, finite where a has rank >= n - 1.

    With p a = l u and u = [[u1, c], [0, u_nn]], adj(a) b = det(a) u^-1 l^-1 p b.
    Replacing u_nn by 1 / (sign det u1) gives the last row and, by back
    substitution, the rest, without ever dividing by u_nn (zero when a is
    singular). Where det u1 is zero the result is taken as 0: exact when the rank
    is below n - 1, and (as in JAX) wrong in the rare rank n - 1 case where
    partial pivoting leaves a zero pivot before the last row.
    """
    n = _shape(a)[-1]
    lu, permutation, sign, diag = _lu_sign_and_diagonal(a)
    nd = len(_shape(diag))
    partial = lax.cumprod(diag, axis=nd - 1) * lax.expand_dims(sign, (nd - 1,))
    det_ = lax.squeeze(lax.slice_in_dim(partial, n - 1, n, axis=nd - 1), (nd - 1,))
    if n == 1:
        minor = lax.full_like(det_, 1)
    else:
        minor = lax.squeeze(lax.slice_in_dim(partial, n - 2, n - 1, axis=nd - 1), (nd - 1,))
    index_sum = lax.add(lax.broadcasted_iota(np.int32, (n, n), 0),
                        lax.broadcasted_iota(np.int32, (n, n), 1))
    corner = lax.broadcast_in_dim(lax.eq(index_sum, lax.full((), 2 * n - 2, np.int32)),
                                  _shape(lu), (nd - 1, nd))
    safe_minor = lax.select(lax.eq(minor, _const(minor, 0)), lax.full_like(minor, 1), minor)
    spread = lax.broadcast_in_dim(lax.div(_const(minor, 1), safe_minor), _shape(lu),
                                  tuple(range(nd - 1)))
    lu = lax.select(corner, spread, lu)
    rank_deficient = lax.broadcast_in_dim(lax.eq(minor, _const(minor, 0)), _shape(b),
                                          tuple(range(nd - 1)))
    zeros = lax.full_like(b, 0)
    # Masking b before the solves (and not only their result) keeps the infinities
    # of a singular u out of the reverse pass, which runs the solves backwards.
    x = _mm(_permutation_matrix(permutation, dtype_of(a)), lax.select(rank_deficient, zeros, b))
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=True, unit_diagonal=True)
    rows = lax.broadcasted_iota(np.int32, _shape(x), nd - 1)
    scale = lax.broadcast_in_dim(det_, _shape(x), tuple(range(nd - 1)))
    x = lax.select(lax.lt(rows, lax.full((), n - 1, np.int32)), x * scale, x)
    x = lax_linalg.triangular_solve(lu, x, left_side=True, lower=False)
    return det_, lax.select(rank_deficient, zeros, x)


@custom_jvp
def _det(a: Any) -> Any:
    _, _, sign, diag = _lu_sign_and_diagonal(a)
    return sign * lax.reduce_prod(diag, (len(_shape(diag)) - 1,))


@_det.defjvp
def _det_jvp(primals, tangents):
    # d det(a) = tr(adj(a) da), which stays finite for singular a.
    (a,), (da,) = primals, tangents
    det_, adj_da = _cofactor_solve(a, da)
    return det_, trace(adj_da)


def det(a: Any) -> Any:
    """The determinant of each square matrix, via LU; its gradient is the adjugate,
    finite at singular matrices too.

    >>> det(np.float32([[2, 1], [1, 3]]))
    Array(5., dtype=float32)
    """
    a, = _inexact("det", a)
    _check_matrix("det", a, square=True)
    shape = _shape(a)
    if shape[-1] == 0:
        return lax.full(shape[:-2], 1, dtype_of(a))
    if _is_half(a):
        # LAPACK has no 16-bit LU: computed in float32 and rounded back, as JAX does.
        return lax.convert_element_type(_det(lax.convert_element_type(a, np.float32)),
                                        dtype_of(a))
    return _det(a)


def _slogdet_from(diag: Any, sign: Any) -> tuple[Any, Any]:
    last = len(_shape(diag)) - 1
    absdiag = lax.abs(diag)
    logdet = lax.reduce_sum(lax.log(absdiag), (last,))
    if _is_complex(diag):
        unit = diag / lax.convert_element_type(absdiag, dtype_of(diag))
        sign = sign * lax.reduce_prod(unit, (last,))
    else:
        sign = sign * lax.reduce_prod(lax.sign(diag), (last,))
    singular = lax.reduce_or(lax.eq(diag, _const(diag, 0)), (last,))
    sign = lax.select(singular, lax.full_like(sign, 0), sign)
    logdet = lax.select(singular, lax.full_like(logdet, -np.inf), logdet)
    return sign, logdet


@custom_jvp
def _slogdet_lu(a: Any) -> tuple[Any, Any]:
    _, _, sign, diag = _lu_sign_and_diagonal(a)
    return _slogdet_from(diag, sign)


@custom_jvp
def _slogdet_qr(a: Any) -> tuple[Any, Any]:
    q, r = lax_linalg.qr(a, full_matrices=False)
    # det(q) has modulus one; its phase comes from q's own LU.
    _, _, q_sign, q_diag = _lu_sign_and_diagonal(q)
    q_phase, _ = _slogdet_from(q_diag, q_sign)
    return _slogdet_from(diagonal(r), q_phase)


def _slogdet_jvp(fn: Any, primals, tangents):
    # d log det(a) = tr(a^-1 da); its real part moves log|det|, its imaginary part
    # rotates the sign.
    (a,), (da,) = primals, tangents
    sign, logdet = fn(a)
    shape = _shape(a)
    dlog = trace(_solve_matrices(a, _broadcast_to(da, shape)))
    if _is_complex(a):
        dsign = sign * lax.complex(lax.full_like(logdet, 0), lax.imag(dlog))
        dlog = lax.real(dlog)
    else:
        dsign = lax.full_like(sign, 0)
    return (sign, logdet), (dsign, dlog)


_slogdet_lu.defjvp(functools.partial(_slogdet_jvp, _slogdet_lu))
_slogdet_qr.defjvp(functools.partial(_slogdet_jvp, _slogdet_qr))


def slogdet(a: Any, *, method: str | None = None) -> SlogdetResult:
    """``(sign, logabsdet)`` of each square matrix: det = sign * exp(logabsdet), with
    sign 0 and logabsdet -inf for singular matrices. `method` is 'lu' (default) or 'qr'.

    >>> slogdet(np.float32([[2, 0], [0, -3]]))
    SlogdetResult(sign=Array(-1., dtype=float32), logabsdet=Array(1.7917595, dtype=float32))
    """
    a, = _inexact("slogdet", a)
    _check_matrix("slogdet", a, square=True)
    if method not in (None, "lu", "qr"):
        raise ValueError(f"slogdet: unknown method {method!r}; expected 'lu' or 'qr'")
    shape = _shape(a)
    if shape[-1] == 0:
        return SlogdetResult(lax.full(shape[:-2], 1, dtype_of(a)),
                             lax.full(shape[:-2], 0, _real_dtype(dtype_of(a))))
    if _is_half(a):  # in float32, as det
        sign, logdet = slogdet(lax.convert_element_type(a, np.float32), method=method)
        return SlogdetResult(*(lax.convert_element_type(v, dtype_of(a))
                               for v in (sign, logdet)))
    sign, logdet = (_slogdet_qr if method == "qr" else _slogdet_lu)(a)
    return SlogdetResult(sign, logdet)


def matrix_power(a: Any, n: int) -> Any:
    """a raised to the integer power n by repeated squaring (n < 0 inverts first,
    n = 0 gives identities).

    >>> matrix_power(np.int32([[1, 1], [0, 1]]), 3)
    Array([[1, 3],
           [0, 1]], dtype=int32)
    """
    check_arraylike("matrix_power", a)
    a = promote_dtypes(a)[0]
    _check_matrix("matrix_power", a, square=True)
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"matrix_power: exponent must be an integer, got {n!r}") from None
    shape = _shape(a)
    if n == 0:
        return _broadcast_to(_eye(shape[-1], dtype_of(a)), shape)
    if n < 0:
        a, n = inv(a), -n
    result = None
    while True:
        if n & 1:
            result = a if result is None else _mm(result, a)
        n >>= 1
        if not n:
            return result
        a = _mm(a, a)


# --- decompositions ----------------------------------------------------------------------


def cholesky(a: Any, *, upper: bool = False, symmetrize_input: bool = True) -> Any:
    """The Cholesky factor of each Hermitian positive-definite matrix: lower L with
    a = L L^H, or (`upper`) U = L^H with a = U^H U. NaNs where a is not positive
    definite.

    >>> cholesky(np.float32([[4, 2], [2, 5]]))
    Array([[2., 0.],
           [1., 2.]], dtype=float32)
    """
    a, = _inexact("cholesky", a)
    _check_matrix("cholesky", a, square=True)
    lower = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _H(lower) if upper else lower


def qr(a: Any, mode: str = "reduced") -> Any:
    """QR decomposition. `mode` 'reduced' gives ``(Q, R)`` with Q m-by-k (k = min(m, n)),
    'complete' Q m-by-m, 'r' only R, and 'raw' the Householder form ``(h, tau)``
    of LAPACK's geqrf (h transposed, as NumPy).

    >>> qr(np.float32([[3, 0], [4, 5]]), mode="r")
    Array([[-5., -4.],
           [ 0.,  3.]], dtype=float32)
    """
    a, = _inexact("qr", a)
    _check_matrix("qr", a)
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"qr: unsupported mode {mode!r}; expected 'reduced', 'complete', "
                         "'r' or 'raw'")
    if mode == "raw":
        h, tau = _householder_qr(a)
        return QRResult(_mT(h), tau)
    q, r = lax_linalg.qr(a, full_matrices=mode == "complete")
    return r if mode == "r" else QRResult(q, r)


@jit
def _householder_qr(a: Any) -> tuple[Any, Any]:
    """LAPACK geqrf's output computed with lax operations: R on and above the
    diagonal of h, the Householder vectors (with implicit leading 1) below it, and
    their scales tau, following xLARFG's conventions."""
    shape = _shape(a)
    nd, (m, n) = len(shape), shape[-2:]
    k = min(m, n)
    rdtype = _real_dtype(dtype_of(a))
    rows = lax.broadcasted_iota(np.int32, shape, nd - 2)
    cols = lax.broadcasted_iota(np.int32, shape, nd - 1)
    taus = []
    for j in range(k):
        col = lax.squeeze(lax.slice_in_dim(a, j, j + 1, axis=nd - 1), (nd - 1,))
        alpha = lax.squeeze(lax.slice_in_dim(col, j, j + 1, axis=nd - 2), (nd - 2,))
        below = lax.slice_in_dim(col, j + 1, m, axis=nd - 2)
        xnorm2 = lax.reduce_sum(_abs_squared(below), (nd - 2,))
        abs_alpha2 = _abs_squared(alpha)
        re_alpha = lax.real(alpha) if _is_complex(a) else alpha
        # xLARFG leaves the column alone (tau = 0) when it is already a multiple of e_1.
        trivial = lax.eq(xnorm2 + abs_alpha2 - re_alpha * re_alpha, lax.full((), 0, rdtype))
        norm_ = lax.sqrt(abs_alpha2 + xnorm2)
        beta = lax.select(lax.ge(re_alpha, lax.full((), 0, rdtype)), lax.neg(norm_), norm_)
        beta_c = lax.convert_element_type(beta, dtype_of(a))
        safe_beta = lax.select(trivial, lax.full_like(beta_c, 1), beta_c)
        safe_denom = lax.select(trivial, lax.full_like(alpha, 1), alpha - beta_c)
        tau = lax.select(trivial, lax.full_like(alpha, 0), (beta_c - alpha) / safe_beta)
        scale = lax.div(_const(alpha, 1), safe_denom)
        v = col * lax.broadcast_in_dim(scale, _shape(col), tuple(range(nd - 2)))
        jj, position = lax.full((), j, np.int32), lax.broadcasted_iota(np.int32, _shape(col),
                                                                        nd - 2)
        # v is 0 above row j, 1 at it and the scaled column below it.
        v = lax.select(lax.gt(position, jj), v,
                       lax.convert_element_type(lax.eq(position, jj), dtype_of(a)))
        # Apply H^H = I - conj(tau) v v^H to the trailing columns.
        vc = lax.expand_dims(v, (nd - 1,))
        w = _mm(_H(vc), a)
        tau_b = lax.broadcast_in_dim(lax.conj(tau) if _is_complex(a) else tau, shape,
                                     tuple(range(nd - 2)))
        updated = a - tau_b * _mm(vc, w)
        new_col = lax.select(trivial, alpha, beta_c)
        vfull = lax.broadcast_in_dim(v, shape, (*range(nd - 2), nd - 2))
        newfull = lax.broadcast_in_dim(new_col, shape, tuple(range(nd - 2)))
        at_col = lax.eq(cols, jj)
        a = lax.select(lax.gt(cols, jj), updated,
                       lax.select(at_col & lax.gt(rows, jj), vfull,
                                  lax.select(at_col & lax.eq(rows, jj), newfull, a)))
        taus.append(lax.expand_dims(tau, (nd - 2,)))
    tau = lax.concatenate(taus, nd - 2) if taus else lax.full((*shape[:-2], 0), 0, dtype_of(a))
    return a, tau


def _svd_hermitian(a: Any, compute_uv: bool) -> Any:
    w, v = _eigh(a)
    s = lax.abs(w)
    if not compute_uv:
        return _sort_desc(s)[0]
    signs = lax.convert_element_type(lax.sign(w), dtype_of(a))
    vh_rows = v * lax.expand_dims(signs, (len(_shape(signs)) - 1,))
    s, u, vs = _sort_desc(s, v, vh_rows)
    return SVDResult(u, s, _H(vs))


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True,
        hermitian: bool = False, subset_by_index: Any = None) -> Any:
    """Singular value decomposition ``(U, S, Vh)`` with a = U diag(S) Vh (S descending),
    or just S without `compute_uv`. `hermitian` inputs are decomposed through eigh.

    >>> svd(np.float32([[0, 2], [1, 0]]), compute_uv=False)
    Array([2., 1.], dtype=float32)
    """
    a, = _inexact("svd", a)
    _check_matrix("svd", a, square=hermitian)
    if subset_by_index is not None:
        raise NotImplementedError("svd: subset_by_index is not supported")
    if hermitian:
        return _svd_hermitian(a, compute_uv)
    out = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)
    return SVDResult(*out) if compute_uv else out


def svdvals(x: Any, /) -> Any:
    """The singular values of each matrix, descending.

    >>> svdvals(np.float32([[3, 0], [0, 4]]))
    Array([4., 3.], dtype=float32)
    """
    return svd(x, compute_uv=False)


def _eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> tuple[Any, Any]:
    if UPLO not in (None, "L", "U"):
        raise ValueError(f"eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    return lax_linalg.eigh(a, lower=UPLO != "U", symmetrize_input=symmetrize_input)[::-1]


def eigh(a: Any, UPLO: str | None = None, symmetrize_input: bool = True) -> EighResult:
    """Eigenvalues (ascending, real) and eigenvectors (columns) of each Hermitian
    matrix. Without `symmetrize_input` only the `UPLO` triangle is read.

    >>> eigh(np.float32([[2, 1], [1, 2]])).eigenvalues
    Array([1., 3.], dtype=float32)
    """
    a, = _inexact("eigh", a)
    _check_matrix("eigh", a, square=True)
    return EighResult(*_eigh(a, UPLO, symmetrize_input))


def eigvalsh(a: Any, UPLO: str | None = "L", *, symmetrize_input: bool = True) -> Any:
    """The eigenvalues of each Hermitian matrix, ascending.

    >>> eigvalsh(np.float32([[2, 0], [0, 1]]))
    Array([1., 2.], dtype=float32)
    """
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def eig(a: Any) -> tuple[Any, Any]:
    """Eigenvalues and right eigenvectors (unit-norm columns) of general square
    matrices, complex and unordered. CPU only, as in JAX; only the eigenvalues are
    differentiable.

    >>> eig(np.float32([[2, 0], [0, 3]]))[0]
    Array([2.+0.j, 3.+0.j], dtype=complex64)
    """
    a, = _inexact("eig", a)
    _check_matrix("eig", a, square=True)
    w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
    return w, v


def eigvals(a: Any) -> Any:
    """The (complex, unordered) eigenvalues of each square matrix.

    >>> eigvals(np.float32([[0, -1], [1, 0]]))
    Array([0.+1.j, 0.-1.j], dtype=complex64)
    """
    a, = _inexact("eigvals", a)
    _check_matrix("eigvals", a, square=True)
    return lax_linalg.eig(a, compute_left_eigenvectors=False,
                          compute_right_eigenvectors=False)[0]


# --- pseudo-inverses, least squares, rank, conditioning ---------------------------------


def _default_rtol(a: Any) -> float:
    m, n = _shape(a)[-2:]
    return 10.0 * max(m, n) * float(finfo(_real_dtype(dtype_of(a))).eps)


@functools.partial(custom_jvp, nondiff_argnums=(1, 2))
def _pinv(a: Any, rtol: Any, hermitian: bool) -> Any:
    u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
    last = len(_shape(s)) - 1
    cutoff = lax.expand_dims(lax.reduce_max(s, (last,)), (last,)) * \
        lax.convert_element_type(rtol, dtype_of(s))
    keep = lax.gt(s, cutoff)
    s_inv = lax.select(keep, lax.div(_const(s, 1), lax.select(keep, s, lax.full_like(s, 1))),
                       lax.full_like(s, 0))
    s_inv = lax.convert_element_type(s_inv, dtype_of(a))
    return _mm(_H(vh) * lax.expand_dims(s_inv, (last,)), _H(u))


@_pinv.defjvp
def _pinv_jvp(rtol, hermitian, primals, tangents):
    # The derivative of the pseudo-inverse where its rank is locally constant
    # (Golub & Pereyra, 1973).
    (a,), (da,) = primals, tangents
    p = _pinv(a, rtol, hermitian)
    m, n = _shape(a)[-2:]
    dp = -_mm(_mm(p, da), p)
    dp = dp + _mm(_mm(_mm(p, _H(p)), _H(da)), _eye(m, dtype_of(a)) - _mm(a, p))
    dp = dp + _mm(_mm(_eye(n, dtype_of(a)) - _mm(p, a), _H(da)), _mm(_H(p), p))
    return p, dp


def pinv(a: Any, rtol: Any = None, hermitian: bool = False, *, rcond: Any = None) -> Any:
    """The Moore-Penrose pseudo-inverse of each matrix, through its SVD: singular
    values at most ``rtol * max(S)`` count as zero (default ``10 * max(m, n) * eps``;
    `rcond` is NumPy's older name for rtol).

    >>> pinv(np.float32([[2, 0], [0, 0]]))
    Array([[0.5, 0. ],
           [0. , 0. ]], dtype=float32)
    """
    a, = _inexact("pinv", a)
    _check_matrix("pinv", a)
    if rcond is not None:
        if rtol is not None:
            raise ValueError("pinv: pass rtol or rcond, not both")
        rtol = rcond
    m, n = _shape(a)[-2:]
    if m == 0 or n == 0:
        return lax.full((*_shape(a)[:-2], n, m), 0, dtype_of(a))
    if rtol is None:
        rtol = _default_rtol(a)
    rtol = lax.convert_element_type(asarray_internal(rtol), _real_dtype(dtype_of(a)))
    return _pinv(a, rtol, bool(hermitian))


def lstsq(a: Any, b: Any, rcond: Any = None, *, numpy_resid: bool = False) -> tuple:
    """Least-squares solution of a x = b for 2-D a: ``(x, residuals, rank, s)``.

    Singular values below ``rcond * max(s)`` count as zero (default ``eps *
    max(m, n)``). As in JAX, residuals (squared 2-norms of b - a x per column) are
    always returned; with `numpy_resid` they are empty where NumPy's would be
    (rank-deficient or m <= n), which needs a concrete rank.

    >>> x, resid, rank, s = lstsq(np.float32([[1, 0], [0, 2], [0, 0]]), np.float32([1, 2, 3]))
    >>> x, rank
    (Array([1., 1.], dtype=float32), Array(2, dtype=int32))
    """
    a, b = _inexact("lstsq", a, b)
    sa, sb = _shape(a), _shape(b)
    if len(sa) != 2:
        raise ValueError(f"lstsq: a must be 2-D, got shape {sa}")
    if len(sb) not in (1, 2):
        raise ValueError(f"lstsq: b must be 1-D or 2-D, got shape {sb}")
    if sb[0] != sa[0]:
        raise ValueError(f"lstsq: leading dimensions of a (shape {sa}) and b (shape {sb}) "
                         "must match")
    vector = len(sb) == 1
    if vector:
        b = lax.expand_dims(b, (1,))
    m, n = sa
    rdtype = _real_dtype(dtype_of(a))
    int_dtype = core_dtypes.canonicalize_dtype(np.dtype(np.int64))
    if m == 0 or n == 0:
        s = lax.full((0,), 0, rdtype)
        rank = lax.full((), 0, int_dtype)
        x = lax.full((n, _shape(b)[1]), 0, dtype_of(a))
    else:
        eps = float(finfo(rdtype).eps)
        if rcond is None:
            rcond = lax.full((), eps * max(m, n), rdtype)
        else:
            rcond = lax.convert_element_type(asarray_internal(rcond), rdtype)
            rcond = lax.select(lax.lt(rcond, lax.full((), 0, rdtype)),
                               lax.full((), eps, rdtype), rcond)
        u, s, vt = lax_linalg.svd(a, full_matrices=False)
        keep = lax.ge(s, rcond * lax.slice(s, (0,), (1,)))
        rank = lax.reduce_sum(lax.convert_element_type(keep, int_dtype), (0,))
        safe = lax.select(keep, s, lax.full_like(s, 1))
        s_inv = lax.select(keep, lax.div(lax.full_like(s, 1), safe), lax.full_like(s, 0))
        s_inv = lax.expand_dims(lax.convert_element_type(s_inv, dtype_of(a)), (1,))
        x = _mm(_H(vt), s_inv * _mm(_H(u), b))
    if numpy_resid and (int(concrete_value(rank, "lstsq's rank with numpy_resid=True")) < n
                        or m <= n):
        resid = lax.full((0,), 0, rdtype)
    else:
        resid = lax.reduce_sum(_abs_squared(b - _mm(a, x)), (0,))
    if vector:
        x = lax.squeeze(x, (1,))
    return x, resid, rank, s


def matrix_rank(M: Any, rtol: Any = None, *, hermitian: bool = False, tol: Any = None) -> Any:
    """The number of singular values above the threshold: `tol` (absolute), else
    ``rtol * max(S)``, by default ``max(S) * max(m, n) * eps``. Arrays of fewer than
    two dimensions have rank 1 unless all zero. With `hermitian`, M's singular values
    are its eigenvalues' magnitudes (`eigvalsh`, cheaper than an SVD).

    >>> matrix_rank(np.float32([[1, 2], [2, 4]]))
    Array(1, dtype=int32)
    """
    M, = _inexact("matrix_rank", M)
    nd = len(_shape(M))
    if nd < 2:
        nonzero = lax.ne(M, _const(M, 0))
        return lax.convert_element_type(lax.reduce_or(nonzero, tuple(range(nd))), np.int32)
    s = lax.abs(eigvalsh(M)) if hermitian else svd(M, full_matrices=False, compute_uv=False)
    last = len(_shape(s)) - 1
    smax = lax.reduce_max(s, (last,)) if _shape(s)[-1] else lax.full(_shape(s)[:-1], 0,
                                                                       dtype_of(s))
    if tol is not None:
        threshold = lax.convert_element_type(asarray_internal(tol), dtype_of(s))
        threshold = _broadcast_to(threshold, _shape(smax)) if _shape(threshold) else \
            lax.broadcast_in_dim(threshold, _shape(smax), ())
    else:
        if rtol is None:
            rtol = max(_shape(M)[-2:]) * float(finfo(dtype_of(s)).eps)
        threshold = smax * lax.convert_element_type(asarray_internal(rtol), dtype_of(s))
    above = lax.gt(s, lax.expand_dims(threshold, (last,)))
    int_dtype = core_dtypes.canonicalize_dtype(np.dtype(np.int64))
    return lax.reduce_sum(lax.convert_element_type(above, int_dtype), (last,))


def cond(x: Any, p: Any = None) -> Any:
    """The condition number of each matrix in the norm `p` (None/2 and -2 through the
    singular values, any other matrix norm as ``norm(x) * norm(inv(x))``).

    >>> cond(np.float32([[1, 0], [0, 4]]))
    Array(4., dtype=float32)
    """
    x, = _inexact("cond", x)
    _check_matrix("cond", x)
    if 0 in _shape(x)[-2:]:
        raise ValueError(f"cond: the matrix must not be empty, got shape {_shape(x)}")
    if p is None or _is_ord(p, 2) or _is_ord(p, -2):
        s = svd(x, compute_uv=False)
        last = len(_shape(s)) - 1
        big, small = lax.reduce_max(s, (last,)), lax.reduce_min(s, (last,))
        return big / small if p != -2 else small / big
    _check_matrix("cond", x, square=True)
    nd = len(_shape(x))
    r = norm(x, ord=p, axis=(nd - 2, nd - 1)) * norm(inv(x), ord=p, axis=(nd - 2, nd - 1))
    # A singular x (with no NaNs of its own) has infinite condition number.
    x_nan = lax.reduce_or(lax.ne(x, x), (nd - 2, nd - 1))
    return lax.select(lax.ne(r, r) & ufuncs.logical_not(x_nan), lax.full_like(r, np.inf), r)


# --- tensor equations ----------------------------------------------------------------


def tensorinv(a: Any, ind: int = 2) -> Any:
    """The inverse of `a` as a linear map from its last axes to its first `ind` axes,
    so that ``tensordot(tensorinv(a, ind), a, ind)`` is the identity.

    >>> tensorinv(np.eye(4, dtype=np.float32).reshape(4, 2, 2), ind=1).shape
    (2, 2, 4)
    """
    a, = _inexact("tensorinv", a)
    ind = operator.index(ind)
    shape = _shape(a)
    if ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive integer, got {ind}")
    rows, cols = int(np.prod(shape[:ind])), int(np.prod(shape[ind:]))
    if rows != cols:
        raise ValueError(f"tensorinv: the product of the first {ind} axes of shape {shape} "
                         f"({rows}) must equal the product of the rest ({cols})")
    return lax.reshape(inv(lax.reshape(a, (rows, cols))), (*shape[ind:], *shape[:ind]))


def tensorsolve(a: Any, b: Any, axes: Sequence[int] | None = None) -> Any:
    """Solves ``tensordot(a, x, x.ndim) = b`` for x, whose shape is a's trailing axes
    (after moving `axes` of a to the end).

    >>> tensorsolve(np.eye(4, dtype=np.float32).reshape(2, 2, 4), np.float32([[1, 2], [3, 4]]))
    Array([1., 2., 3., 4.], dtype=float32)
    """
    a, b = _inexact("tensorsolve", a, b)
    nd = len(_shape(a))
    if axes is not None:
        moved = [canonicalize_axis(ax, nd) for ax in axes]
        a = lax.transpose(a, (*[i for i in range(nd) if i not in moved], *moved))
    sa, sb = _shape(a), _shape(b)
    x_shape = sa[len(sb):]
    size = int(np.prod(x_shape))
    if sa[:len(sb)] != sb or int(np.prod(sb)) != size:
        raise ValueError(f"tensorsolve: a of shape {sa} must start with b's shape {sb} and "
                         f"the product of its remaining axes must equal b's size")
    x = solve(lax.reshape(a, (size, size)), lax.reshape(b, (size,)))
    return lax.reshape(x, x_shape)
