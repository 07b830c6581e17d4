"""NumPy's shape manipulation, joining, splitting, selection and padding functions
(jax.numpy style), built from lamella.lax's structural primitives.

Everything here rearranges data with reshape, transpose, broadcast_in_dim,
slice, rev, pad and concatenate (gather only where an index pattern has no
short description in slices), so every function works under jit, grad and
vmap. Shapes, axes, split points, pad widths and other arguments that decide
the result's shape must be concrete, as in JAX; a traced one raises a
ConcretizationTypeError naming the argument.

>>> import numpy as np
>>> concatenate([np.int32([1, 2]), np.int32([3])])
Array([1, 2, 3], dtype=int32)
>>> pad(np.float32([1, 2, 3]), 2, mode="reflect")
Array([3., 2., 1., 2., 3., 2., 1.], dtype=float32)
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from lamella import lax
from lamella.core import vmap
from lamella.core.errors import ConcretizationTypeError
from lamella.core.shape_poly import DimExpr, dimension_as_value
from lamella.core.trace import aval_of
from lamella.lax.explicit_sharding import unshard_dims
from lamella.numpy import util
from lamella.numpy.dtypes import promote_dtypes
from lamella.numpy.placement import check_out_sharding, out_sharding_of, with_out_sharding
from lamella.numpy.ufuncs import _broadcast_shapes
from lamella.numpy.util import checked_array as _array
from lamella.numpy.util import default_float_dtype, dtype_of
from lamella.numpy.util import shape as _shape

__all__ = [
    "append", "array_split", "atleast_1d", "atleast_2d", "atleast_3d", "block",
    "broadcast_arrays", "broadcast_shapes", "broadcast_to", "choose", "column_stack", "concat",
    "concatenate", "delete", "dsplit", "dstack", "expand_dims", "flip", "fliplr", "flipud",
    "hsplit", "hstack", "insert", "matrix_transpose", "moveaxis", "pad", "permute_dims",
    "piecewise", "ravel", "repeat", "reshape", "resize", "roll", "rollaxis", "rot90", "select",
    "split", "squeeze", "stack", "swapaxes", "tile", "transpose", "trim_zeros", "unstack",
    "vsplit", "vstack",
]


# --- shared helpers ------------------------------------------------------------------------

def _ndim(x: Any) -> int:
    return len(aval_of(x).shape)


def _static_int(x: Any, context: str) -> int:
    if isinstance(x, (int, np.integer)):
        return int(x)
    return util.concrete_int(x, context)


def _static_ints(x: Any, context: str) -> tuple[int, ...]:
    """An int or a 1-D sequence/array of ints, concrete, as a tuple."""
    if isinstance(x, (int, np.integer)):
        return (int(x),)
    if isinstance(x, (list, tuple)):
        return tuple(_static_int(v, context) for v in x)
    value = util.concrete_value(x, context)
    if value.dtype.kind not in "iu" or value.ndim > 1:
        raise TypeError(f"{context} must be an integer or a 1-D sequence of integers, got {x!r}")
    return tuple(int(v) for v in value.ravel())


def _static_shape(x: Any, context: str) -> tuple[Any, ...]:
    """`_static_ints` for a shape, whose entries may also be symbolic dimensions
    (shape-polymorphic export)."""
    if type(x) is DimExpr:
        return (x,)
    if isinstance(x, (list, tuple)):
        return tuple(d if type(d) is DimExpr else _static_int(d, context) for d in x)
    return _static_ints(x, context)


def _axis_list(axis: Any, rank: int, name: str) -> list[int]:
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    axes = [util.canonicalize_axis(a, rank, name) for a in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axis in `{name}` argument: {axis}")
    return axes


def _broadcast_static(x: Any, shape: tuple[int, ...]) -> Any:
    old = _shape(x)
    if old == shape:
        return x
    return lax.broadcast_in_dim(x, shape, tuple(range(len(shape) - len(old), len(shape))))


def _stretch(x: Any, axis: int, length: int) -> Any:
    """`x`, of size 1 along `axis`, repeated `length` times along it."""
    shape = list(_shape(x))
    shape[axis] = length
    return lax.broadcast_in_dim(x, shape, tuple(range(len(shape))))


def _scalar_at(x: Any, index: tuple[int, ...]) -> Any:
    """Element `index` of a (possibly traced) small array, as a 0-d value."""
    piece = lax.slice(x, index, tuple(i + 1 for i in index))
    return lax.reshape(piece, ())


def _sequence_of_arrays(name: str, arrays: Any) -> list[Any]:
    if isinstance(arrays, (list, tuple)):
        util.check_arraylike(name, *arrays)
        return [util.asarray_internal(a) for a in arrays]
    if util.is_arraylike(arrays):
        # As in NumPy, an array stands for the sequence of its slices along axis 0.
        return list(unstack(util.asarray_internal(arrays)))
    raise TypeError(f"{name} expects a sequence of arrays, got {type(arrays).__name__}")


def _runs(idx: np.ndarray) -> list[tuple[int, int, int]]:
    """`idx` as maximal runs (start, length, step) with step -1, 0 or 1."""
    runs, i = [], 0
    while i < len(idx):
        j = i + 1
        step = int(idx[j] - idx[i]) if j < len(idx) and abs(int(idx[j] - idx[i])) <= 1 else 1
        while j < len(idx) and idx[j] - idx[j - 1] == step:
            j += 1
        runs.append((int(idx[i]), j - i, step))
        i = j
    return runs


_MAX_RUNS = 8


def _take_static(x: Any, idx: np.ndarray, axis: int) -> Any:
    """x[..., idx, ...] along `axis` for concrete in-range `idx`: slices, reversals and
    broadcasts when the pattern has a few runs (cheap, and exactly linear), else a gather."""
    idx = np.asarray(idx, np.int64).ravel()
    if idx.size == 0:
        return lax.slice_in_dim(x, 0, 0, axis=axis)
    runs = _runs(idx)
    if len(runs) > _MAX_RUNS:
        return _gather_axis(x, np.asarray(idx, np.int32), axis)
    pieces = []
    for start, length, step in runs:
        if step == 1:
            pieces.append(lax.slice_in_dim(x, start, start + length, axis=axis))
        elif step == -1:
            pieces.append(lax.rev(lax.slice_in_dim(x, start - length + 1, start + 1, axis=axis),
                                  (axis,)))
        else:
            pieces.append(_stretch(lax.slice_in_dim(x, start, start + 1, axis=axis), axis, length))
    return pieces[0] if len(pieces) == 1 else lax.concatenate(pieces, axis)


def _gather_axis(x: Any, idx: Any, axis: int) -> Any:
    """x[..., idx, ...] along `axis` for a 1-D (possibly traced) index array, clamped."""
    shape, m = _shape(x), _shape(idx)[0]
    dnums = lax.GatherDimensionNumbers(
        offset_dims=tuple(i for i in range(len(shape)) if i != axis),
        collapsed_slice_dims=(axis,), start_index_map=(axis,))
    sizes = tuple(1 if i == axis else d for i, d in enumerate(shape))
    return lax.gather(x, lax.reshape(idx, (m, 1)), dnums, sizes, mode="clip")


# --- reshaping ----------------------------------------------------------------------------
def _resolve_shape(old: tuple[int, ...], new: tuple[int, ...]) -> tuple[int, ...]:
    size = math.prod(old)
    unknown = [i for i, d in enumerate(new) if d == -1]
    if len(unknown) > 1:
        raise ValueError(f"can only specify one unknown dimension, got shape {new}")
    if any(d < -1 for d in new):
        raise ValueError(f"negative dimensions are not allowed in shape {new}")
    if unknown:
        known = math.prod(d for d in new if d != -1)
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of shape {old} (size {size}) into shape "
                             f"{new}: the unknown dimension cannot be inferred")
        new = tuple(size // known if d == -1 else d for d in new)
    if math.prod(new) != size:
        raise ValueError(f"cannot reshape array of shape {old} (size {size}) into shape {new} "
                         f"(size {math.prod(new)})")
    return new


def _reshape(a: Any, new_shape: tuple[int, ...], order: str = "C") -> Any:
    old = _shape(a)
    new_shape = _resolve_shape(old, new_shape)
    if order == "C":
        return lax.reshape(a, new_shape)
    if order == "F":
        # Column-major is row-major on the reversed axes.
        flipped = lax.transpose(a, tuple(reversed(range(len(old)))))
        out = lax.reshape(flipped, tuple(reversed(new_shape)))
        return lax.transpose(out, tuple(reversed(range(len(new_shape)))))
    if order in ("A", "K"):
        raise NotImplementedError(f"order={order!r} is not supported (as in JAX): use 'C' or "
                                  "'F'")
    raise ValueError(f"order must be 'C' or 'F', got {order!r}")


def reshape(a: Any, shape: Any, order: str = "C", *, copy: bool | None = None,
            out_sharding: Any = None) -> Any:
    """`a` with a new `shape` (one entry may be -1), read in `order` ('C' or 'F').

    `copy` is accepted and ignored (arrays are immutable); as in JAX 0.10 there is no
    `newshape` spelling.

    >>> reshape(np.arange(6, dtype=np.int32), (2, -1))
    Array([[0, 1, 2],
           [3, 4, 5]], dtype=int32)
    >>> reshape(np.arange(6, dtype=np.int32), (2, 3), order="F")
    Array([[0, 2, 4],
           [1, 3, 5]], dtype=int32)
    """
    sharding = out_sharding_of("reshape", out_sharding)
    a = _array("reshape", a)
    if sharding is not None:  # a layout the reshape might not keep: the one asked for
        a = unshard_dims(a)
    return with_out_sharding(
        _reshape(a, _static_shape(shape, "the `shape` argument of reshape"), order), sharding)


def ravel(a: Any, order: str = "C", *, out_sharding: Any = None) -> Any:
    """`a` flattened to one axis, read in `order` ('C' or 'F').

    >>> ravel(np.int32([[1, 2], [3, 4]]), order="F")
    Array([1, 3, 2, 4], dtype=int32)
    """
    sharding = out_sharding_of("ravel", out_sharding)
    a = _array("ravel", a)
    if sharding is not None:
        a = unshard_dims(a)
    return with_out_sharding(_reshape(a, (math.prod(_shape(a)),), order), sharding)


def moveaxis(a: Any, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
    """`a` with axes `source` moved to positions `destination`; the others keep their order.

    >>> moveaxis(np.zeros((2, 3, 4), np.float32), 0, -1).shape
    (3, 4, 2)
    """
    a = _array("moveaxis", a)
    rank = _ndim(a)
    src = _axis_list(source, rank, "source")
    dst = _axis_list(destination, rank, "destination")
    if len(src) != len(dst):
        raise ValueError(f"moveaxis: source {source} and destination {destination} must have "
                         "the same number of elements")
    perm = [i for i in range(rank) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return lax.transpose(a, perm)


def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
    """`a` with `axis` moved to just before position `start` (prefer `moveaxis`).

    >>> rollaxis(np.zeros((2, 3, 4), np.float32), 2).shape
    (4, 2, 3)
    """
    a = _array("rollaxis", a)
    rank = _ndim(a)
    axis = util.canonicalize_axis(axis, rank)
    start = operator.index(start)
    if not -rank <= start <= rank:
        raise util.AxisError(f"start {start} is out of bounds for array of dimension {rank}")
    start = start + rank if start < 0 else start
    if axis < start:
        start -= 1
    return a if axis == start else moveaxis(a, axis, start)


def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
    """`a` with axes `axis1` and `axis2` exchanged.

    >>> swapaxes(np.zeros((2, 3, 4), np.float32), 0, 2).shape
    (4, 3, 2)
    """
    a = _array("swapaxes", a)
    perm = list(range(_ndim(a)))
    i = util.canonicalize_axis(axis1, len(perm), "axis1")
    j = util.canonicalize_axis(axis2, len(perm), "axis2")
    perm[i], perm[j] = perm[j], perm[i]
    return lax.transpose(a, perm)


def transpose(a: Any, axes: Sequence[int] | None = None) -> Any:
    """`a` with its axes permuted by `axes` (reversed when None).

    >>> transpose(np.int32([[1, 2], [3, 4]]))
    Array([[1, 3],
           [2, 4]], dtype=int32)
    """
    a = _array("transpose", a)
    rank = _ndim(a)
    if axes is None:
        return lax.transpose(a, tuple(reversed(range(rank))))
    perm = [util.canonicalize_axis(ax, rank, "axes") for ax in axes]
    if sorted(perm) != list(range(rank)):
        raise ValueError(f"axes {tuple(axes)} are not a permutation of the {rank} axes of an "
                         f"array of shape {_shape(a)}")
    return lax.transpose(a, perm)


def permute_dims(a: Any, /, axes: Sequence[int]) -> Any:
    """`a` with its axes permuted by `axes` (the array API name of `transpose`).

    >>> permute_dims(np.zeros((2, 3), np.float32), (1, 0)).shape
    (3, 2)
    """
    return transpose(a, axes)


def matrix_transpose(x: Any, /) -> Any:
    """`x` with its last two axes exchanged (a stack of transposed matrices).

    >>> matrix_transpose(np.zeros((5, 2, 3), np.float32)).shape
    (5, 3, 2)
    """
    x = _array("matrix_transpose", x)
    rank = _ndim(x)
    if rank < 2:
        raise ValueError(f"matrix_transpose requires at least 2 dimensions, got shape {_shape(x)}")
    return lax.transpose(x, (*range(rank - 2), rank - 1, rank - 2))


def expand_dims(a: Any, axis: int | Sequence[int]) -> Any:
    """`a` with axes of size 1 inserted at positions `axis` of the result.

    >>> expand_dims(np.zeros((2, 3), np.float32), (0, -1)).shape
    (1, 2, 3, 1)
    """
    a = _array("expand_dims", a)
    count = 1 if isinstance(axis, (int, np.integer)) else len(axis)
    axes = _axis_list(axis, _ndim(a) + count, "axis")
    return lax.expand_dims(a, sorted(axes))


def squeeze(a: Any, axis: int | Sequence[int] | None = None) -> Any:
    """`a` without its axes of size 1 (only those in `axis`, which must have size 1).

    >>> squeeze(np.zeros((1, 3, 1), np.float32)).shape
    (3,)
    """
    a = _array("squeeze", a)
    shape = _shape(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    else:
        axes = util.canonicalize_axes(axis, len(shape))
        for ax in axes:
            if shape[ax] != 1:
                raise ValueError(f"cannot select an axis to squeeze out which has size not "
                                 f"equal to one: axis {ax} of shape {shape} has size {shape[ax]}")
    return lax.squeeze(a, axes) if axes else a


# --- broadcasting -------------------------------------------------------------------------
def broadcast_shapes(*shapes: int | Sequence[int]) -> tuple[int, ...]:
    """The shape NumPy's broadcasting gives arrays of `shapes`.

    >>> broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    if not shapes:
        return ()
    shapes = [(_static_int(s, "a shape"),) if isinstance(s, (int, np.integer)) else
              tuple(_static_int(d, "a shape") for d in s) for s in shapes]
    return _broadcast_shapes(shapes)


def broadcast_to(array: Any, shape: int | Sequence[int], *, out_sharding: Any = None) -> Any:
    """`array` broadcast to `shape` by NumPy's rules.

    >>> broadcast_to(np.int32([1, 2]), (2, 2))
    Array([[1, 2],
           [1, 2]], dtype=int32)
    """
    if out_sharding is not None:
        return with_out_sharding(broadcast_to(array, shape),
                                 out_sharding_of("broadcast_to", out_sharding))
    a = _array("broadcast_to", array)
    shape = _static_shape(shape, "the `shape` argument of broadcast_to")
    old = _shape(a)
    if (len(shape) < len(old) or any(d < 0 for d in shape)
            or any(o not in (1, n) for o, n in zip(reversed(old), reversed(shape)))):
        raise ValueError(f"Incompatible shapes for broadcasting: {old} and requested shape "
                         f"{shape}")
    return _broadcast_static(a, shape)


def broadcast_arrays(*args: Any) -> list[Any]:
    """`args` broadcast against each other (dtypes unchanged).

    >>> [x.shape for x in broadcast_arrays(np.zeros((2, 1)), np.zeros(3))]
    [(2, 3), (2, 3)]
    """
    arrays = [_array("broadcast_arrays", x) for x in args]
    if not arrays:
        return []
    shape = _broadcast_shapes([_shape(x) for x in arrays])
    return [_broadcast_static(x, shape) for x in arrays]


# --- joining ------------------------------------------------------------------------------
@util.eager_fast("axis", "dtype")
def concatenate(arrays: Any, axis: int | None = 0, dtype: Any = None) -> Any:
    """`arrays` joined along an existing `axis` (flattened first when None), promoted to
    a common dtype (or `dtype`).

    >>> concatenate([np.int32([[1, 2]]), np.float32([[3, 4]])], axis=0)
    Array([[1., 2.],
           [3., 4.]], dtype=float32)
    """
    arrays = _sequence_of_arrays("concatenate", arrays)
    if not arrays:
        raise ValueError("Need at least one array to concatenate.")
    if axis is None:
        arrays = [_reshape(a, (-1,)) for a in arrays]
        axis = 0
    if dtype is not None:
        arrays = [util.asarray_internal(a, dtype) for a in arrays]
    elif len(arrays) > 1:
        arrays = promote_dtypes(*arrays)
    shapes = [_shape(a) for a in arrays]
    rank = len(shapes[0])
    if rank == 0:
        raise ValueError("Zero-dimensional arrays cannot be concatenated.")
    axis = util.canonicalize_axis(axis, rank)
    if any(len(s) != rank for s in shapes):
        raise ValueError(f"concatenate: all input arrays must have the same number of "
                         f"dimensions, got shapes {shapes}")
    if any(s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:] for s in shapes):
        raise ValueError(f"concatenate: all input array dimensions other than the "
                         f"concatenation axis ({axis}) must match, got shapes {shapes}")
    return arrays[0] if len(arrays) == 1 else lax.concatenate(arrays, axis)


def concat(arrays: Any, /, *, axis: int | None = 0) -> Any:
    """`concatenate` under its array API name.

    >>> concat([np.int32([1]), np.int32([2])])
    Array([1, 2], dtype=int32)
    """
    return concatenate(arrays, axis)


@util.eager_fast("axis", "out", "dtype")
def stack(arrays: Any, axis: int = 0, out: None = None, dtype: Any = None) -> Any:
    """`arrays` (all of one shape) joined along a new `axis`.

    >>> stack([np.int32([1, 2]), np.int32([3, 4])], axis=1)
    Array([[1, 3],
           [2, 4]], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("stack does not support `out` (lamella arrays are immutable)")
    arrays = _sequence_of_arrays("stack", arrays)
    if not arrays:
        raise ValueError("Need at least one array to stack.")
    shapes = [_shape(a) for a in arrays]
    if len(set(shapes)) > 1:
        raise ValueError(f"stack: all input arrays must have the same shape, got shapes {shapes}")
    axis = util.canonicalize_axis(axis, len(shapes[0]) + 1)
    return concatenate([lax.expand_dims(a, (axis,)) for a in arrays], axis, dtype)


@util.eager_fast("dtype")
def vstack(tup: Any, dtype: Any = None) -> Any:
    """Arrays (at least 2-D) joined along axis 0.

    >>> vstack([np.int32([1, 2]), np.int32([3, 4])])
    Array([[1, 2],
           [3, 4]], dtype=int32)
    """
    return concatenate([_atleast_2d(a) for a in _sequence_of_arrays("vstack", tup)], 0, dtype)


@util.eager_fast("dtype")
def hstack(tup: Any, dtype: Any = None) -> Any:
    """Arrays joined along axis 1 (axis 0 for 1-D arrays).

    >>> hstack([np.int32([1, 2]), np.int32([3])])
    Array([1, 2, 3], dtype=int32)
    """
    arrays = [_atleast_1d(a) for a in _sequence_of_arrays("hstack", tup)]
    axis = 0 if arrays and _ndim(arrays[0]) == 1 else 1
    return concatenate(arrays, axis, dtype)


def dstack(tup: Any, dtype: Any = None) -> Any:
    """Arrays (at least 3-D) joined along axis 2.

    >>> dstack([np.int32([1, 2]), np.int32([3, 4])]).shape
    (1, 2, 2)
    """
    return concatenate([_atleast_3d(a) for a in _sequence_of_arrays("dstack", tup)], 2, dtype)


def column_stack(tup: Any) -> Any:
    """1-D arrays as columns (higher ones as they are) joined along axis 1.

    >>> column_stack([np.int32([1, 2]), np.int32([3, 4])])
    Array([[1, 3],
           [2, 4]], dtype=int32)
    """
    arrays = [a if _ndim(a) >= 2 else _reshape(a, (-1, 1))
              for a in _sequence_of_arrays("column_stack", tup)]
    return concatenate(arrays, 1)


def block(arrays: Any) -> Any:
    """An array assembled from nested lists of blocks: the innermost lists are joined
    along the last axis, the next ones along the one before, and so on.

    >>> block([[np.int32([[1]]), np.int32([[2, 3]])], [np.int32([[4, 5, 6]])]])
    Array([[1, 2, 3],
           [4, 5, 6]], dtype=int32)
    """
    leaves: list[Any] = []
    depth = _block_depth(arrays, (), leaves)
    leaves = promote_dtypes(*leaves) if len(leaves) > 1 else leaves
    rank = max([depth] + [_ndim(x) for x in leaves])
    it = iter(leaves)

    def assemble(item: Any, level: int) -> Any:
        if isinstance(item, list):
            parts = [assemble(x, level + 1) for x in item]
            return concatenate(parts, axis=level - depth)
        leaf = next(it)
        return lax.reshape(leaf, (1,) * (rank - _ndim(leaf)) + _shape(leaf))

    return assemble(arrays, 0)


def _block_depth(item: Any, index: tuple[int, ...], leaves: list[Any]) -> int:
    where = "arrays" + "".join(f"[{i}]" for i in index)
    if isinstance(item, tuple):
        raise TypeError(f"{where} is a tuple: only lists can be used to arrange blocks")
    if not isinstance(item, list):
        util.check_arraylike("block", item)
        leaves.append(util.asarray_internal(item))
        return 0
    if not item:
        raise ValueError(f"List at {where} cannot be empty")
    depths = [_block_depth(x, index + (i,), leaves) for i, x in enumerate(item)]
    if len(set(depths)) > 1:
        raise ValueError(f"List depths are mismatched in {where}: its elements have depths "
                         f"{depths}")
    return depths[0] + 1


def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    """`values` appended to `arr` along `axis` (both flattened when None).

    >>> append(np.int32([1, 2]), np.int32([[3], [4]]))
    Array([1, 2, 3, 4], dtype=int32)
    """
    arr, values = _array("append", arr), _array("append", values)
    if axis is None:
        return concatenate([_reshape(arr, (-1,)), _reshape(values, (-1,))], 0)
    return concatenate([arr, values], axis)


# --- splitting ----------------------------------------------------------------------------
def _split(name: str, a: Any, indices_or_sections: Any, axis: int, even: bool) -> list[Any]:
    axis = util.canonicalize_axis(axis, _ndim(a))
    n = _shape(a)[axis]
    if not isinstance(indices_or_sections, (list, tuple)) and util.ndim(indices_or_sections) == 0:
        sections = _static_int(indices_or_sections, f"the number of sections of {name}")
        if sections <= 0:
            raise ValueError(f"{name}: the number of sections must be larger than 0, "
                             f"got {sections}")
        if even and n % sections:
            raise ValueError(f"array split does not result in an equal division: axis {axis} "
                             f"of size {n} into {sections} sections")
        q, r = divmod(n, sections)
        if type(n) is DimExpr:
            if r != 0:  # sections whose sizes differ between sizes of the axis
                raise ValueError(f"{name}: axis {axis} of symbolic size {n} does not split "
                                 f"into {sections} sections of one symbolic size: the rest "
                                 f"is {r}")
            bounds = [(i * q, (i + 1) * q) for i in range(sections)]
        else:
            stops = np.cumsum([q + 1] * r + [q] * (sections - r)).tolist()
            bounds = list(zip([0] + stops[:-1], stops))
    else:
        points = _static_ints(indices_or_sections, f"the split indices of {name}")
        edges = [0, *points, n]
        bounds = []
        for lo, hi in zip(edges[:-1], edges[1:]):
            if type(n) is DimExpr:
                start, stop = (_clamp_symbolic(v, n) for v in (lo, hi))
            else:
                start, stop, _ = slice(lo, hi).indices(n)
            bounds.append((start, util.dim_max(start, stop)))
    # lax.split's lowering takes static sizes: symbolic shapes are sliced.
    if bounds and bounds[0][0] == 0 and bounds[-1][1] == n and all(
            b[1] == c[0] for b, c in zip(bounds[:-1], bounds[1:])) and not any(
            type(d) is DimExpr for d in _shape(a)):
        return list(lax.split(a, [hi - lo for lo, hi in bounds], axis))
    if type(n) is DimExpr:  # slice_in_dim takes int bounds
        starts, limits = [0] * _ndim(a), list(_shape(a))
        return [lax.slice(a, starts[:axis] + [lo] + starts[axis + 1:],
                          limits[:axis] + [hi] + limits[axis + 1:]) for lo, hi in bounds]
    return [lax.slice_in_dim(a, lo, hi, axis=axis) for lo, hi in bounds]


def _clamp_symbolic(index: Any, size: DimExpr) -> Any:
    """A split index on an axis of symbolic size, clamped to [0, size] as a slice bound;
    a clamp that differs between sizes is an InconclusiveDimensionOperation."""
    if index < 0:
        return util.dim_max(index + size, 0)
    return util.dim_min(index, size)


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """`ary` cut along `axis` into equal sections (an int, which must divide the axis)
    or at the given indices.

    >>> split(np.arange(5, dtype=np.int32), [2, 3])
    [Array([0, 1], dtype=int32), Array([2], dtype=int32), Array([3, 4], dtype=int32)]
    """
    return _split("split", _array("split", ary), indices_or_sections, axis, even=True)


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list[Any]:
    """`split`, but an int number of sections need not divide the axis: the first
    sections get one extra element.

    >>> array_split(np.arange(5, dtype=np.int32), 2)
    [Array([0, 1, 2], dtype=int32), Array([3, 4], dtype=int32)]
    """
    return _split("array_split", _array("array_split", ary), indices_or_sections, axis,
                  even=False)


def _split_rank(name: str, ary: Any, min_rank: int) -> Any:
    a = _array(name, ary)
    if _ndim(a) < min_rank:
        raise ValueError(f"{name} only works on arrays of {min_rank} or more dimensions, "
                         f"got shape {_shape(a)}")
    return a


def hsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    """`split` along axis 1 (axis 0 for 1-D arrays).

    >>> hsplit(np.int32([[1, 2], [3, 4]]), 2)[1]
    Array([[2],
           [4]], dtype=int32)
    """
    a = _split_rank("hsplit", ary, 1)
    return _split("hsplit", a, indices_or_sections, 1 if _ndim(a) > 1 else 0, even=True)


def vsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    """`split` along axis 0 of an array of 2 or more dimensions.

    >>> vsplit(np.int32([[1, 2], [3, 4]]), 2)[1]
    Array([[3, 4]], dtype=int32)
    """
    return _split("vsplit", _split_rank("vsplit", ary, 2), indices_or_sections, 0, even=True)


def dsplit(ary: Any, indices_or_sections: Any) -> list[Any]:
    """`split` along axis 2 of an array of 3 or more dimensions.

    >>> [p.shape for p in dsplit(np.zeros((1, 2, 4)), [1])]
    [(1, 2, 1), (1, 2, 3)]
    """
    return _split("dsplit", _split_rank("dsplit", ary, 3), indices_or_sections, 2, even=True)


def unstack(x: Any, /, *, axis: int = 0) -> tuple[Any, ...]:
    """The slices of `x` along `axis`, as a tuple.

    >>> unstack(np.int32([[1, 2], [3, 4]]), axis=1)
    (Array([1, 3], dtype=int32), Array([2, 4], dtype=int32))
    """
    x = _array("unstack", x)
    if _ndim(x) == 0:
        raise ValueError("unstack requires an array of rank > 0, but a scalar was passed")
    axis = util.canonicalize_axis(axis, _ndim(x))
    return tuple(lax.index_in_dim(x, i, axis, keepdims=False) for i in range(_shape(x)[axis]))


# --- repeating and resizing -----------------------------------------------------------------
def tile(A: Any, reps: int | Sequence[int]) -> Any:  # noqa: N803 (NumPy's name)
    """`A` repeated `reps` times along each axis (rank promoted by leading ones).

    >>> tile(np.int32([1, 2]), (2, 2))
    Array([[1, 2, 1, 2],
           [1, 2, 1, 2]], dtype=int32)
    """
    a = _array("tile", A)
    reps = _static_ints(reps, "the `reps` argument of tile")
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: reps must be non-negative, got {reps}")
    rank = max(len(reps), _ndim(a))
    reps = (1,) * (rank - len(reps)) + reps
    shape = (1,) * (rank - _ndim(a)) + _shape(a)
    # One broadcast to (r0, s0, r1, s1, ...) and one reshape merging each pair.
    pairs = tuple(d for r, s in zip(reps, shape) for d in (r, s))
    spread = lax.broadcast_in_dim(lax.reshape(a, shape), pairs, tuple(range(1, 2 * rank, 2)))
    return lax.reshape(spread, tuple(r * s for r, s in zip(reps, shape)))


def repeat(a: Any, repeats: Any, axis: int | None = None, *,
           total_repeat_length: int | None = None, out_sharding: Any = None) -> Any:
    """Each element of `a` repeated `repeats` times (an int, or one count per element)
    along `axis` (of the flattened array when None).

    `repeats` must be concrete unless `total_repeat_length` gives the result's length;
    then longer results are cut and shorter ones end with copies of the last element.

    >>> repeat(np.int32([1, 2]), 2)
    Array([1, 1, 2, 2], dtype=int32)
    >>> repeat(np.int32([[1, 2], [3, 4]]), np.int32([1, 2]), axis=0)
    Array([[1, 2],
           [3, 4],
           [3, 4]], dtype=int32)
    """
    check_out_sharding("repeat", out_sharding)
    a = _array("repeat", a)
    if axis is None:
        a, axis = _reshape(a, (-1,)), 0
    axis = util.canonicalize_axis(axis, _ndim(a))
    n = _shape(a)[axis]
    total = None if total_repeat_length is None else _static_int(
        total_repeat_length, "the `total_repeat_length` argument of repeat")
    if total is not None and total < 0:
        raise ValueError(f"repeat: total_repeat_length must be non-negative, got {total}")
    try:
        counts = util.concrete_value(repeats, "the `repeats` argument of repeat (pass "
                                     "`total_repeat_length` to repeat a traced number of times)")
    except ConcretizationTypeError:
        if total is None:
            raise
        return _repeat_traced(a, util.asarray_internal(repeats), axis, total)
    if counts.dtype.kind not in "iu" or counts.ndim > 1:
        raise TypeError(f"repeat: repeats must be an integer or a 1-D array of integers, "
                        f"got {repeats!r}")
    if np.any(counts < 0):
        raise ValueError(f"repeat: repeats may not contain negative values, got {counts}")
    if counts.size == 1 and total is None:
        count = int(counts.ravel()[0])
        shape = list(_shape(a))
        spread = lax.broadcast_in_dim(a, shape[:axis + 1] + [count] + shape[axis + 1:],
                                      tuple(i for i in range(len(shape) + 1) if i != axis + 1))
        shape[axis] *= count
        return lax.reshape(spread, shape)
    if counts.size != 1 and counts.shape != (n,):
        raise ValueError(f"repeat: repeats of shape {counts.shape} do not match axis {axis} "
                         f"of size {n}")
    idx = np.repeat(np.arange(n), np.broadcast_to(counts, (n,)))
    if total is not None:
        if total > idx.size and n == 0:
            raise ValueError("repeat: cannot extend an empty axis to total_repeat_length")
        idx = np.concatenate([idx, np.full(max(total - idx.size, 0), n - 1)])[:total]
    return _take_static(a, idx, axis)


def _repeat_traced(a: Any, repeats: Any, axis: int, total: int) -> Any:
    n = _shape(a)[axis]
    if dtype_of(repeats).kind not in "iu" or _ndim(repeats) > 1:
        raise TypeError(f"repeat: repeats must be integers, got {aval_of(repeats)}")
    repeats = _broadcast_static(lax.convert_element_type(repeats, np.int32), (n,))
    ends = lax.cumsum(repeats, 0)
    # Output j takes element i = #{k : ends[k] <= j}, clamped to the last element.
    j = lax.broadcasted_iota(np.int32, (total, n), 0)
    passed = lax.convert_element_type(lax.le(lax.broadcast_in_dim(ends, (total, n), (1,)), j),
                                      np.int32)
    idx = lax.clamp(np.int32(0), lax.reduce_sum(passed, (1,)), np.int32(max(n - 1, 0)))
    return _gather_axis(a, idx, axis)


def resize(a: Any, new_shape: int | Sequence[int]) -> Any:
    """`a` flattened, repeated as needed, and cut to `new_shape`.

    >>> resize(np.int32([1, 2, 3]), (2, 2))
    Array([[1, 2],
           [3, 1]], dtype=int32)
    """
    a = _array("resize", a)
    new_shape = _static_ints(new_shape, "the `new_shape` argument of resize")
    if any(d < 0 for d in new_shape):
        raise ValueError(f"resize: all elements of new_shape must be non-negative, "
                         f"got {new_shape}")
    flat = _reshape(a, (-1,))
    size, new_size = _shape(flat)[0], math.prod(new_shape)
    if size == 0 or new_size == 0:
        return lax.full(new_shape, 0, dtype_of(a))
    flat = tile(flat, -(-new_size // size))
    return lax.reshape(lax.slice_in_dim(flat, 0, new_size), new_shape)


# --- reversing and rotating ---------------------------------------------------------------
def flip(m: Any, axis: int | Sequence[int] | None = None) -> Any:
    """`m` reversed along `axis` (all axes when None).

    >>> flip(np.int32([[1, 2], [3, 4]]), 1)
    Array([[2, 1],
           [4, 3]], dtype=int32)
    """
    m = _array("flip", m)
    axes = util.canonicalize_axes(axis, _ndim(m))
    return lax.rev(m, axes) if axes else m


def fliplr(m: Any) -> Any:
    """`m` reversed along axis 1.

    >>> fliplr(np.int32([[1, 2]]))
    Array([[2, 1]], dtype=int32)
    """
    m = _array("fliplr", m)
    if _ndim(m) < 2:
        raise ValueError(f"fliplr requires an array of at least 2 dimensions, got shape "
                         f"{_shape(m)}")
    return lax.rev(m, (1,))


def flipud(m: Any) -> Any:
    """`m` reversed along axis 0.

    >>> flipud(np.int32([1, 2]))
    Array([2, 1], dtype=int32)
    """
    m = _array("flipud", m)
    if _ndim(m) < 1:
        raise ValueError("flipud requires an array of at least 1 dimension, got a scalar")
    return lax.rev(m, (0,))


def roll(a: Any, shift: Any, axis: int | Sequence[int] | None = None) -> Any:
    """`a` rotated by `shift` places along `axis` (of the flattened array when None);
    several shifts and axes broadcast together. `shift` may be traced.

    >>> roll(np.int32([1, 2, 3, 4]), 1)
    Array([4, 1, 2, 3], dtype=int32)
    """
    a = _array("roll", a)
    if axis is None:
        return lax.reshape(roll(_reshape(a, (-1,)), shift, 0), _shape(a))
    axes = [util.canonicalize_axis(ax, _ndim(a))
            for ax in ((axis,) if isinstance(axis, (int, np.integer)) else axis)]
    try:
        shifts = util.concrete_value(shift, "the `shift` argument of roll")
    except ConcretizationTypeError:
        shifts = None
    shift_shape = np.shape(shifts) if shifts is not None else _shape(shift)
    if len(shift_shape) > 1:
        raise ValueError(f"roll: shift must be an integer or a 1-D sequence of integers, "
                         f"got shape {shift_shape}")
    shift_count = shift_shape[0] if shift_shape else 1
    if len(axes) != shift_count and 1 not in (len(axes), shift_count):
        raise ValueError(f"roll: shift and axis must have matching lengths, got {shift_count} "
                         f"shifts for axes {tuple(axes)}")
    count = max(len(axes), shift_count)
    axes = axes * count if len(axes) == 1 else axes
    if shifts is not None and shifts.dtype.kind not in "biu":
        raise TypeError(f"roll: shift must be an integer, got {shift!r}")
    if shifts is not None and any(type(_shape(a)[ax]) is DimExpr for ax in axes):
        # A shift modulo a symbolic size is known only when the program runs.
        shift, shifts = shifts, None
    if shifts is not None:
        shifts = np.broadcast_to(shifts, (count,))
        for ax, s in zip(axes, shifts):
            n = _shape(a)[ax]
            s = int(s) % n if n else 0
            if s:
                a = lax.concatenate([lax.slice_in_dim(a, n - s, n, axis=ax),
                                     lax.slice_in_dim(a, 0, n - s, axis=ax)], ax)
        return a
    shift = util.asarray_internal(shift)
    if dtype_of(shift).kind not in "iu":
        raise TypeError(f"roll: shift must be an integer, got dtype {dtype_of(shift)}")
    shift = _broadcast_static(shift, (count,))
    for k, ax in enumerate(axes):
        n = _shape(a)[ax]
        if n == 0:
            continue
        s = _scalar_at(shift, (k,))
        size = lax.full_like(s, n) if type(n) is not DimExpr else \
            lax.convert_element_type(dimension_as_value(n), dtype_of(s))
        m = lax.rem(s, size)
        m = lax.select(lax.lt(m, lax.full_like(m, 0)), lax.add(m, size), m)
        # out[i] = a[(i - m) mod n]: a window of [a, a] starting at n - m.
        doubled = lax.concatenate([a, a], ax)
        a = lax.dynamic_slice_in_dim(doubled, lax.sub(size, m), n, ax)
    return a


def rot90(m: Any, k: int = 1, axes: tuple[int, int] = (0, 1)) -> Any:
    """`m` rotated by 90 degrees `k` times, from the first of `axes` towards the second.

    >>> rot90(np.int32([[1, 2], [3, 4]]))
    Array([[2, 4],
           [1, 3]], dtype=int32)
    """
    m = _array("rot90", m)
    k = _static_int(k, "the `k` argument of rot90")
    if len(axes) != 2:
        raise ValueError(f"rot90: len(axes) must be 2, got axes {axes}")
    rank = _ndim(m)
    if rank < 2:
        raise ValueError(f"rot90 requires an array of at least 2 dimensions, got shape "
                         f"{_shape(m)}")
    ax0, ax1 = (util.canonicalize_axis(ax, rank, "axes") for ax in axes)
    if ax0 == ax1:
        raise ValueError(f"rot90: axes must be different, got {axes}")
    k %= 4
    if k == 0:
        return m
    if k == 2:
        return lax.rev(m, sorted((ax0, ax1)))
    perm = list(range(rank))
    perm[ax0], perm[ax1] = ax1, ax0
    if k == 1:
        return lax.transpose(lax.rev(m, (ax1,)), perm)
    return lax.rev(lax.transpose(m, perm), (ax1,))


# --- rank promotion -----------------------------------------------------------------------
def _atleast_1d(x: Any) -> Any:
    return lax.reshape(x, (1,)) if _ndim(x) == 0 else x


def _atleast_2d(x: Any) -> Any:
    return lax.reshape(x, (1,) * (2 - _ndim(x)) + _shape(x)) if _ndim(x) < 2 else x


def _atleast_3d(x: Any) -> Any:
    shape = _shape(x)
    if len(shape) == 0:
        return lax.reshape(x, (1, 1, 1))
    if len(shape) == 1:
        return lax.reshape(x, (1, shape[0], 1))
    return lax.reshape(x, shape + (1,)) if len(shape) == 2 else x


def _atleast(name: str, promote: Callable[[Any], Any], arys: tuple[Any, ...]) -> Any:
    results = [promote(_array(name, x)) for x in arys]
    return results[0] if len(results) == 1 else results


def atleast_1d(*arys: Any) -> Any:
    """Each argument with at least one axis (a list when there are several).

    >>> atleast_1d(np.int32(3))
    Array([3], dtype=int32)
    """
    return _atleast("atleast_1d", _atleast_1d, arys)


def atleast_2d(*arys: Any) -> Any:
    """Each argument with at least two axes (leading ones added).

    >>> atleast_2d(np.int32([1, 2])).shape
    (1, 2)
    """
    return _atleast("atleast_2d", _atleast_2d, arys)


def atleast_3d(*arys: Any) -> Any:
    """Each argument with at least three axes: (n,) becomes (1, n, 1), (m, n) (m, n, 1).

    >>> atleast_3d(np.int32([1, 2])).shape
    (1, 2, 1)
    """
    return _atleast("atleast_3d", _atleast_3d, arys)


# --- inserting and deleting -----------------------------------------------------------------
def _check_bounds(idx: np.ndarray, n: int, axis: int, high: int) -> None:
    bad = idx[(idx < -n) | (idx > high)]
    if bad.size:
        raise IndexError(f"index {int(bad[0])} is out of bounds for axis {axis} with size {n}")


def insert(arr: Any, obj: Any, values: Any, axis: int | None = None) -> Any:
    """`values` inserted into `arr` before the indices `obj` (an int, a slice, or a
    sequence of ints, concrete) along `axis` (of the flattened array when None).

    >>> insert(np.int32([1, 2, 3]), 1, 9)
    Array([1, 9, 2, 3], dtype=int32)
    >>> insert(np.int32([1, 2, 3]), [0, 3], np.int32([7, 8]))
    Array([7, 1, 2, 3, 8], dtype=int32)
    """
    a = _array("insert", arr)
    util.check_arraylike("insert", values)
    if axis is None:
        a, axis = _reshape(a, (-1,)), 0
    axis = util.canonicalize_axis(axis, _ndim(a))
    n = _shape(a)[axis]
    if isinstance(obj, slice):
        indices = np.arange(*obj.indices(n))
    else:
        indices = util.concrete_value(obj, "the `obj` argument of insert")
        if indices.dtype.kind not in "iu" or indices.ndim > 1:
            raise TypeError(f"insert: obj must be an integer, a slice or a 1-D sequence of "
                            f"integers, got {obj!r}")
    _check_bounds(indices, n, axis, n)
    v = util.asarray_internal(values, dtype_of(a))
    v = lax.reshape(v, (1,) * (_ndim(a) - _ndim(v)) + _shape(v))
    if indices.size == 1:
        if indices.ndim == 0:
            # A scalar obj inserts a block of values: their first axis runs along `axis`.
            v = lax.transpose(v, [*range(1, axis + 1), 0, *range(axis + 1, _ndim(v))])
        count = _shape(v)[axis]
        start = int(indices.ravel()[0])
        start = start + n if start < 0 else start
        positions = np.arange(start, start + count)
    else:
        count = indices.size
        indices = np.where(indices < 0, indices + n, indices)
        order = np.argsort(indices, kind="stable")
        positions = np.empty(count, np.int64)
        positions[order] = indices[order] + np.arange(count)
    target = tuple(count if i == axis else d for i, d in enumerate(_shape(a)))
    v = broadcast_to(v, target)
    # Output positions read from [arr, values]: values at `positions`, arr elsewhere.
    source = np.empty(n + count, np.int64)
    is_value = np.zeros(n + count, bool)
    is_value[positions] = True
    source[positions] = n + np.arange(count)
    source[~is_value] = np.arange(n)
    return _take_static(lax.concatenate([a, v], axis), source, axis)


def delete(arr: Any, obj: Any, axis: int | None = None, *,
           assume_unique_indices: bool = False) -> Any:
    """`arr` without the entries `obj` (an int, a slice, ints or a boolean mask) along
    `axis` (of the flattened array when None).

    `obj` must be concrete, unless it holds unique integer indices and
    `assume_unique_indices=True`.

    >>> delete(np.int32([1, 2, 3, 4]), [0, 2])
    Array([2, 4], dtype=int32)
    """
    a = _array("delete", arr)
    if axis is None:
        a, axis = _reshape(a, (-1,)), 0
    axis = util.canonicalize_axis(axis, _ndim(a))
    n = _shape(a)[axis]
    keep = np.ones(n, bool)
    if isinstance(obj, slice):
        keep[obj] = False
        return _take_static(a, np.flatnonzero(keep), axis)
    try:
        indices = util.concrete_value(obj, "the `obj` argument of delete (or pass unique "
                                      "integer indices with assume_unique_indices=True)")
    except ConcretizationTypeError:
        if not assume_unique_indices:
            raise
        return _delete_traced(a, util.asarray_internal(obj), axis)
    if indices.dtype.kind == "b":
        if indices.shape != (n,):
            raise ValueError(f"delete: a boolean mask must have shape ({n},), got "
                             f"{indices.shape}")
        keep = ~indices
    elif indices.dtype.kind in "iu":
        indices = indices.ravel()
        _check_bounds(indices, n, axis, n - 1)
        keep[indices] = False
    else:
        raise TypeError(f"delete: obj must hold integers or booleans, got {indices.dtype}")
    return _take_static(a, np.flatnonzero(keep), axis)


def _delete_traced(a: Any, obj: Any, axis: int) -> Any:
    n = _shape(a)[axis]
    if dtype_of(obj).kind not in "iu":
        raise TypeError(f"delete: traced obj must hold integers, got {aval_of(obj)}")
    obj = lax.convert_element_type(_reshape(obj, (-1,)), np.int32)
    m = _shape(obj)[0]
    obj = lax.select(lax.lt(obj, lax.full_like(obj, 0)), lax.add(obj, lax.full_like(obj, n)), obj)
    obj = lax.clamp(np.int32(0), obj, np.int32(n))
    # With the sorted deleted indices shifted down by their rank, output i reads
    # input i + #{k : shifted[k] <= i}.
    shifted = lax.sub(lax.sort(obj, 0), lax.iota(np.int32, m))
    i = lax.broadcasted_iota(np.int32, (m, n - m), 1)
    passed = lax.convert_element_type(lax.le(lax.broadcast_in_dim(shifted, (m, n - m), (0,)), i),
                                      np.int32)
    idx = lax.add(lax.iota(np.int32, n - m), lax.reduce_sum(passed, (0,)))
    return _gather_axis(a, idx, axis)


def trim_zeros(filt: Any, trim: str = "fb", axis: int | Sequence[int] | None = None) -> Any:
    """The concrete `filt` without its leading ('f') and/or trailing ('b') all-zero
    slices along `axis` (every axis when None).

    >>> trim_zeros(np.int32([0, 1, 0, 2, 0]))
    Array([1, 0, 2], dtype=int32)
    >>> trim_zeros(np.int32([[0, 0, 0], [0, 1, 0]]))
    Array([[1]], dtype=int32)
    """
    a = _array("trim_zeros", filt)
    value = util.concrete_value(a, "the `filt` argument of trim_zeros")
    trim = trim.lower()
    if not trim or set(trim) - set("fb"):
        raise ValueError(f"trim_zeros: trim must be 'f', 'b' or 'fb', got {trim!r}")
    if value.ndim == 0:
        raise ValueError("trim_zeros requires an array of at least one dimension")
    axes = util.canonicalize_axes(axis, value.ndim)
    nonzero = value != 0
    for ax in axes:
        along = np.flatnonzero(nonzero.any(axis=tuple(d for d in range(value.ndim) if d != ax)))
        if along.size == 0:  # all zeros: empty along the trimmed axes, as NumPy
            return lax.slice_in_dim(a, 0, 0, axis=ax)
        start = int(along[0]) if "f" in trim else 0
        stop = int(along[-1]) + 1 if "b" in trim else value.shape[ax]
        a = lax.slice_in_dim(a, start, stop, axis=ax)
    return a


# --- selecting ------------------------------------------------------------------------------
def _conditions(name: str, condlist: Any) -> list[Any]:
    conds = _sequence_of_arrays(name, condlist)
    for i, c in enumerate(conds):
        if dtype_of(c) != np.bool_:
            raise TypeError(f"{name}: invalid entry {i} in condlist: should be a boolean array, "
                            f"got dtype {dtype_of(c)}")
    return conds


def select(condlist: Sequence[Any], choicelist: Sequence[Any], default: Any = 0) -> Any:
    """Elementwise, the entry of `choicelist` for the first true condition in
    `condlist`, else `default` (all broadcast; choices promoted together).

    >>> select([np.array([True, False, False]), np.array([True, True, False])],
    ...        [np.int32([1, 1, 1]), np.int32([2, 2, 2])], default=-1)
    Array([ 1,  2, -1], dtype=int32)
    """
    if len(condlist) != len(choicelist):
        raise ValueError(f"select: list of cases must be same length as list of conditions, "
                         f"got {len(choicelist)} cases for {len(condlist)} conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    conds = _conditions("select", condlist)
    util.check_arraylike("select", default)
    choices = promote_dtypes(*_sequence_of_arrays("select", choicelist), default)
    shape = _broadcast_shapes([_shape(x) for x in [*conds, *choices]])
    result = _broadcast_static(choices[-1], shape)
    for c, choice in zip(reversed(conds), reversed(choices[:-1])):
        result = lax.select(_broadcast_static(c, shape), _broadcast_static(choice, shape), result)
    return result


def choose(a: Any, choices: Any, out: None = None, mode: str = "raise") -> Any:
    """Elementwise, `choices[a]` (all broadcast). `mode` handles indices out of range:
    'raise' (needs a concrete `a`, as in JAX), 'wrap' or 'clip'.

    >>> choose(np.int32([0, 1, 0]), [np.int32([1, 2, 3]), np.int32([10, 20, 30])])
    Array([ 1, 20,  3], dtype=int32)
    """
    if out is not None:
        raise NotImplementedError("choose does not support `out` (lamella arrays are immutable)")
    a = _array("choose", a)
    if dtype_of(a).kind not in "biu":
        raise TypeError(f"choose: the index array must hold integers, got {dtype_of(a)}")
    choices = _sequence_of_arrays("choose", choices)
    if not choices:
        raise ValueError("choose: choices must not be empty")
    choices = promote_dtypes(*choices) if len(choices) > 1 else choices
    n = len(choices)
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"choose: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    if mode == "raise":
        value = util.concrete_value(a, "the index array of choose with mode='raise' (use "
                                    "mode='wrap' or mode='clip' under a transformation)")
        if np.any((value < 0) | (value >= n)):
            raise ValueError(f"choose: invalid entry in choice array (indices must be in "
                             f"[0, {n}))")
    if dtype_of(a) == np.bool_:
        a = lax.convert_element_type(a, np.int32)
    low, high = np.array(0, dtype_of(a)), np.array(n - 1, dtype_of(a))
    if mode == "wrap":
        size = lax.full_like(a, n)
        a = lax.rem(a, size)
        a = lax.select(lax.lt(a, lax.full_like(a, 0)), lax.add(a, size), a)
    elif mode == "clip":
        a = lax.clamp(low, a, high)
    a = lax.convert_element_type(a, np.int32)
    shape = _broadcast_shapes([_shape(x) for x in [a, *choices]])
    return lax.select_n(_broadcast_static(a, shape),
                        *(_broadcast_static(c, shape) for c in choices))


def piecewise(x: Any, condlist: Any, funclist: Sequence[Any], *args: Any, **kw: Any) -> Any:
    """Elementwise, `funclist[i](x)` for the last true `condlist[i]`; an extra last
    entry of `funclist` applies where no condition holds (else 0). Entries of
    `funclist` are callables or constants; as in JAX every callable is evaluated
    on all of `x`, and results take `x`'s dtype.

    >>> x = np.float32([-2, 0, 3])
    >>> piecewise(x, [x < 0, x > 0], [lambda v: -v, lambda v: v * 10, 7])
    Array([ 2.,  7., 30.], dtype=float32)
    """
    x = _array("piecewise", x)
    shape, dtype = _shape(x), dtype_of(x)
    if isinstance(condlist, (list, tuple)):
        conds = _sequence_of_arrays("piecewise", condlist)
    else:
        c = _array("piecewise", condlist)
        conds = [c] if _ndim(c) == len(shape) else list(unstack(c))
    conds = [c if dtype_of(c) == np.bool_ else lax.ne(c, lax.full_like(c, 0)) for c in conds]
    nc, nf = len(conds), len(funclist)
    if nf == nc + 1:
        funclist = [funclist[-1], *funclist[:-1]]
    elif nf == nc:
        funclist = [0, *funclist]
    else:
        raise ValueError(f"piecewise: with {nc} condition(s), either {nc} or {nc + 1} "
                         f"functions are expected, got {nf}")
    pieces = []
    for f in funclist:
        y = f(x, *args, **kw) if callable(f) else f
        util.check_arraylike("piecewise", y)
        y = util.asarray_internal(y, dtype)
        if _shape(y) != shape:
            try:
                y = broadcast_to(y, shape)
            except ValueError:
                raise ValueError(f"piecewise: a function returned shape {_shape(y)}, which does "
                                 f"not broadcast to x's shape {shape}") from None
        pieces.append(y)
    which = lax.full(shape, 0, np.int32)
    for k, c in enumerate(conds, start=1):
        which = lax.select(broadcast_to(c, shape), lax.full(shape, k, np.int32), which)
    return lax.select_n(which, *pieces)


# --- padding ------------------------------------------------------------------------------
_PAD_KWARGS = {
    "constant": {"constant_values"}, "empty": set(), "edge": set(), "wrap": set(),
    "linear_ramp": {"end_values"}, "reflect": {"reflect_type"}, "symmetric": {"reflect_type"},
    "maximum": {"stat_length"}, "minimum": {"stat_length"}, "mean": {"stat_length"},
    "median": {"stat_length"},
}


def _int_pairs(value: Any, rank: int, name: str) -> list[tuple[int, int]]:
    v = util.concrete_value(value, f"the `{name}` argument of pad")
    if v.dtype.kind not in "iu":
        raise TypeError(f"pad: `{name}` must be of integral type, got {value!r}")
    try:
        v = np.broadcast_to(v, (rank, 2))
    except ValueError:
        raise ValueError(f"pad: `{name}` of shape {v.shape} cannot be broadcast to ({rank}, 2) "
                         f"for an array of rank {rank}") from None
    if np.any(v < 0):
        raise ValueError(f"pad: `{name}` can't contain negative values, got {value!r}")
    return [(int(lo), int(hi)) for lo, hi in v]


def _value_pairs(value: Any, rank: int, dtype: np.dtype, name: str) -> list[tuple[Any, Any]]:
    """Per-axis (before, after) scalars of a possibly traced value broadcast to (rank, 2)."""
    v = lax.convert_element_type(util.asarray_internal(value), dtype)
    if _ndim(v) == 0:
        return [(v, v)] * rank
    try:
        v = broadcast_to(v, (rank, 2))
    except ValueError:
        raise ValueError(f"pad: `{name}` of shape {_shape(v)} cannot be broadcast to "
                         f"({rank}, 2) for an array of rank {rank}") from None
    return [(_scalar_at(v, (i, 0)), _scalar_at(v, (i, 1))) for i in range(rank)]


def _join(left: Any, x: Any, right: Any, axis: int) -> Any:
    return lax.concatenate([p for p in (left, x, right) if p is not None], axis)


def _edge(x: Any, axis: int, last: bool) -> Any:
    n = _shape(x)[axis]
    return lax.slice_in_dim(x, n - 1, n, axis=axis) if last else \
        lax.slice_in_dim(x, 0, 1, axis=axis)


def _pad_edge(x: Any, axis: int, before: int, after: int) -> Any:
    left = _stretch(_edge(x, axis, False), axis, before) if before else None
    right = _stretch(_edge(x, axis, True), axis, after) if after else None
    return _join(left, x, right, axis)


def _odd_reflection(edge: Any, chunk: Any) -> Any:
    """2 * edge - chunk, the point reflection through the edge (bools as NumPy casts)."""
    dtype = dtype_of(chunk)
    work = np.dtype(np.int32) if dtype == np.bool_ else dtype
    e = lax.convert_element_type(_broadcast_static(edge, _shape(chunk)), work)
    c = lax.convert_element_type(chunk, work)
    out = lax.sub(lax.add(e, e), c)
    return lax.ne(out, lax.full_like(out, 0)) if dtype == np.bool_ else out


def _pad_reflect(x: Any, axis: int, before: int, after: int, include_edge: bool,
                 odd: bool) -> Any:
    period = _shape(x)[axis]
    if period == 1:
        return _pad_edge(x, axis, before, after)
    # NumPy pads in rounds, each reflecting the area padded so far (a whole number of
    # periods), so long pads keep extending odd reflections; follow it round by round.
    skip = 0 if include_edge else 1
    while before or after:
        length = _shape(x)[axis]
        if include_edge:
            usable = length // period * period
        else:
            usable = (length - 1) // (period - 1) * (period - 1)
        left = right = None
        if before:
            chunk = min(usable, before)
            left = lax.rev(lax.slice_in_dim(x, skip, skip + chunk, axis=axis), (axis,))
            if odd:
                left = _odd_reflection(_edge(x, axis, False), left)
            before -= chunk
        if after:
            chunk = min(usable, after)
            stop = length - skip
            right = lax.rev(lax.slice_in_dim(x, stop - chunk, stop, axis=axis), (axis,))
            if odd:
                right = _odd_reflection(_edge(x, axis, True), right)
            after -= chunk
        x = _join(left, x, right, axis)
    return x


def _pad_wrap(x: Any, axis: int, before: int, after: int) -> Any:
    period = _shape(x)[axis]
    while before or after:
        length = _shape(x)[axis]
        usable = length // period * period
        left = right = None
        if before:
            chunk = min(usable, before)
            left = lax.slice_in_dim(x, usable - chunk, usable, axis=axis)
            before -= chunk
        if after:
            chunk = min(usable, after)
            right = lax.slice_in_dim(x, length - usable, length - usable + chunk, axis=axis)
            after -= chunk
        x = _join(left, x, right, axis)
    return x


def _ramp_dtype(dtype: np.dtype) -> np.dtype:
    return dtype if dtype.kind in "fc" else default_float_dtype()


def _ramp(edge: Any, end: Any, width: int, axis: int, reverse: bool) -> Any:
    """NumPy's linspace(end, edge, width, endpoint=False) along `axis` (reversed for the
    right side), computed like NumPy and cast back (integers rounded down)."""
    dtype = dtype_of(edge)
    edge = lax.convert_element_type(edge, _ramp_dtype(dtype))
    shape = list(_shape(edge))
    shape[axis] = width
    step = lax.div(lax.sub(edge, lax.broadcast_in_dim(end, _shape(edge), ())),
                   lax.full_like(edge, width))
    steps = lax.broadcasted_iota(_ramp_dtype(dtype), shape, axis)
    if reverse:
        steps = lax.rev(steps, (axis,))
    ramp = lax.add(lax.mul(steps, _stretch(step, axis, width)),
                   lax.broadcast_in_dim(end, shape, ()))
    if dtype.kind in "iu":
        ramp = lax.floor(ramp)
    return lax.convert_element_type(ramp, dtype)


def _pad_linear_ramp(x: Any, axis: int, before: int, after: int, ends: tuple[Any, Any]) -> Any:
    left = _ramp(_edge(x, axis, False), ends[0], before, axis, False) if before else None
    right = _ramp(_edge(x, axis, True), ends[1], after, axis, True) if after else None
    return _join(left, x, right, axis)


def _stat_dtype(dtype: np.dtype) -> np.dtype:
    if dtype.kind in "biu":
        return default_float_dtype()
    return np.dtype(np.float32) if dtype.itemsize < 4 and dtype.kind == "f" else dtype


def _from_stat(stat: Any, dtype: np.dtype) -> Any:
    if dtype.kind in "biu":
        # NumPy rounds (half to even) a mean or median before storing it in an int array.
        stat = lax.round(stat, lax.RoundingMethod.TO_NEAREST_EVEN)
    return lax.convert_element_type(stat, dtype)


def _stat_max(x: Any, axis: int) -> Any:
    return lax.reduce_max(x, (axis,))


def _stat_min(x: Any, axis: int) -> Any:
    return lax.reduce_min(x, (axis,))


def _stat_mean(x: Any, axis: int) -> Any:
    dtype = dtype_of(x)
    work = lax.convert_element_type(x, _stat_dtype(dtype))
    total = lax.reduce_sum(work, (axis,))
    return _from_stat(lax.div(total, lax.full_like(total, _shape(x)[axis])), dtype)


def _stat_median(x: Any, axis: int) -> Any:
    dtype, n = dtype_of(x), _shape(x)[axis]
    ordered = lax.convert_element_type(lax.sort(x, axis), _stat_dtype(dtype))
    low = lax.index_in_dim(ordered, (n - 1) // 2, axis, keepdims=False)
    high = lax.index_in_dim(ordered, n // 2, axis, keepdims=False)
    middle = lax.mul(lax.add(low, high), lax.full_like(low, 0.5))
    return _from_stat(middle, dtype)


_STATS = {"maximum": _stat_max, "minimum": _stat_min, "mean": _stat_mean,
          "median": _stat_median}


def _pad_stat(x: Any, axis: int, before: int, after: int, lengths: tuple[int | None, ...],
              stat: Callable[[Any, int], Any]) -> Any:
    n = _shape(x)[axis]
    lengths = tuple(n if s is None else min(s, n) for s in lengths)
    pieces = []
    for width, length, last in ((before, lengths[0], False), (after, lengths[1], True)):
        if not width:
            pieces.append(None)
            continue
        region = lax.slice_in_dim(x, n - length, n, axis=axis) if last else \
            lax.slice_in_dim(x, 0, length, axis=axis)
        value = lax.expand_dims(stat(region, axis), (axis,))
        pieces.append(_stretch(value, axis, width))
    return _join(pieces[0], x, pieces[1], axis)


def _padded_row(out: Any, row: Any) -> Any:
    if out is None:
        raise TypeError("pad: a callable mode must return the padded vector (lamella arrays "
                        "are immutable, so in-place updates are lost)")
    out = util.asarray_internal(out, dtype_of(row))
    if _shape(out) != _shape(row):
        raise ValueError(f"pad: the callable mode returned shape {_shape(out)}, expected "
                         f"{_shape(row)}")
    return out


def _pad_callable(x: Any, widths: list[tuple[int, int]], func: Callable, kwargs: dict) -> Any:
    # As in JAX: zero padding, then `func` on every 1-D line along each axis in turn.
    x = lax.pad(x, lax.full((), 0, dtype_of(x)), [(lo, hi, 0) for lo, hi in widths])
    if math.prod(_shape(x)) == 0:
        return x
    for axis, width in enumerate(widths):
        moved = moveaxis(x, axis, -1)
        n = _shape(moved)[-1]
        rows = lax.reshape(moved, (math.prod(_shape(moved)) // n, n))
        out = vmap(lambda row, width=width, axis=axis: _padded_row(
            func(row, width, axis, kwargs), row))(rows)
        x = moveaxis(lax.reshape(out, _shape(moved)), -1, axis)
    return x


def pad(array: Any, pad_width: Any, mode: str | Callable = "constant", **kwargs: Any) -> Any:
    """`array` padded by `pad_width` ((before, after) per axis, broadcast as in NumPy)
    with values chosen by `mode`, as `numpy.pad`: 'constant' (`constant_values`),
    'edge', 'reflect' and 'symmetric' (`reflect_type` 'even' or 'odd'), 'wrap',
    'linear_ramp' (`end_values`), 'maximum', 'minimum', 'mean' and 'median'
    (`stat_length`), 'empty' (zeros here), or a callable
    `mode(vector, (before, after), axis, kwargs)` returning each padded 1-D vector.

    >>> pad(np.int32([[1, 2]]), ((0, 1), (1, 0)), constant_values=9)
    Array([[9, 1, 2],
           [9, 9, 9]], dtype=int32)
    >>> pad(np.float32([1, 2, 3]), 2, mode="wrap")
    Array([2., 3., 1., 2., 3., 1., 2.], dtype=float32)
    """
    x = _array("pad", array)
    rank, dtype = _ndim(x), dtype_of(x)
    widths = _int_pairs(pad_width, rank, "pad_width")
    if callable(mode):
        return _pad_callable(x, widths, mode, kwargs)
    if mode not in _PAD_KWARGS:
        raise ValueError(f"pad: unimplemented padding mode {mode!r}; expected one of "
                         f"{sorted(_PAD_KWARGS)} or a callable")
    unexpected = set(kwargs) - _PAD_KWARGS[mode]
    if unexpected:
        raise ValueError(f"pad: unsupported keyword arguments for mode {mode!r}: "
                         f"{sorted(unexpected)}")
    if mode in ("constant", "empty"):
        values = _value_pairs(kwargs.get("constant_values", 0), rank, dtype, "constant_values")
        if rank and all(v is values[0][0] for pair in values for v in pair):
            return lax.pad(x, values[0][0], [(lo, hi, 0) for lo, hi in widths])
        # NumPy pads axis after axis, so later axes' values fill the corners.
        for axis, ((lo, hi), (v_lo, v_hi)) in enumerate(zip(widths, values)):
            config = [(0, 0, 0)] * rank
            config[axis] = (lo, 0, 0)
            x = lax.pad(x, v_lo, config)
            config[axis] = (0, hi, 0)
            x = lax.pad(x, v_hi, config)
        return x
    for axis, (lo, hi) in enumerate(widths):
        if (lo or hi) and _shape(x)[axis] == 0:
            raise ValueError(f"pad: can't extend empty axis {axis} of shape {_shape(x)} using "
                             f"mode {mode!r} (only 'constant' and 'empty' can)")
    if mode in ("reflect", "symmetric"):
        reflect_type = kwargs.get("reflect_type", "even")
        if reflect_type not in ("even", "odd"):
            raise ValueError(f"pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
        odd = reflect_type == "odd"
    if mode == "linear_ramp":
        ends = _value_pairs(kwargs.get("end_values", 0), rank, _ramp_dtype(dtype), "end_values")
    if mode in _STATS:
        lengths = kwargs.get("stat_length")
        lengths = [(None, None)] * rank if lengths is None else _int_pairs(
            lengths, rank, "stat_length")
        if any(0 in pair for pair in lengths):
            raise ValueError(f"pad: stat_length of 0 yields no value for padding, got "
                             f"{kwargs['stat_length']!r}")
    for axis, (lo, hi) in enumerate(widths):
        if not (lo or hi):
            continue
        if mode == "edge":
            x = _pad_edge(x, axis, lo, hi)
        elif mode == "wrap":
            x = _pad_wrap(x, axis, lo, hi)
        elif mode in ("reflect", "symmetric"):
            x = _pad_reflect(x, axis, lo, hi, mode == "symmetric", odd)
        elif mode == "linear_ramp":
            x = _pad_linear_ramp(x, axis, lo, hi, ends[axis])
        else:
            x = _pad_stat(x, axis, lo, hi, lengths[axis], _STATS[mode])
    return x
