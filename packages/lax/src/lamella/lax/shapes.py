"""Shape primitives: rearranging, cutting and joining arrays without arithmetic.

Public wrappers over the structural primitives core defines (broadcast_in_dim,
reshape, transpose) and lax's own shape primitives, each with every rule in one
place, in the order abstract eval, JVP (each is linear in its array operands,
so linearity and a transpose), batching, lowering: squeeze, rev, pad,
concatenate, slice, dynamic_slice, dynamic_update_slice, iota and split.
Names, parameters and semantics follow `jax.lax`: dynamic start indices are
clamped so the slice fits, negative ones count from the end. Under vmap with
batched start indices, dynamic slices become per-example windows built from
static slices and selects (see `_take_window`), as there is no gather yet.

>>> import numpy as np
>>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
>>> pad(x, 0.0, [(0, 0, 0), (1, 0, 1)])
Array([[0., 0., 0., 1., 0., 2.],
       [0., 3., 0., 4., 0., 5.]], dtype=float32)
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad, batching, dtypes, jit, structural
from lamella.core.shape_poly import (
    DimExpr,
    dimension_as_value,
    is_symbolic_shape,
    max_dim,
    min_dim,
)
from lamella.core.sharding import out_sharding_of
from lamella.core.trace import Tracer, aval_of
from lamella.lax import symbolic_lowering
from lamella.lax.arithmetic import add, sub
from lamella.lax.conversion import convert_element_type
from lamella.lax.explicit_sharding import unshard_dims, with_out_sharding
from lamella.lax.fill import full
from lamella.lax.logical import bitwise_and, clamp, lt, ne, select, shift_right_logical
from lamella.lax.lowering import aval_to_ir_type, hlo, register_lowering
from lamella.lax.runtime import Array
from lamella.lax.standard import (
    BOOL,
    COMPLEX,
    INEXACT,
    NUMBER,
    canonicalize_shape,
    category,
    check_dtypes,
    standard_primitive,
)

__all__ = [
    "broadcast", "broadcast_in_dim", "broadcasted_iota", "concatenate", "concatenate_p",
    "dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim", "dynamic_slice_p",
    "dynamic_update_index_in_dim", "dynamic_update_slice", "dynamic_update_slice_in_dim",
    "dynamic_update_slice_p", "expand_dims", "index_in_dim", "iota", "iota_p", "pad", "pad_p",
    "reshape", "rev", "rev_p", "slice", "slice_in_dim", "slice_p", "split", "split_p",
    "squeeze", "squeeze_p", "transpose",
]


def _canonicalize_axis(axis: int, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim if ndim else axis


def _is_lamella_value(x: Any) -> bool:
    # As in JAX, an identity reshape/transpose of a lamella value returns it
    # unchanged; NumPy inputs still come back as device arrays.
    return isinstance(x, (Array, Tracer))


def _zero_scalar(dtype: np.dtype) -> np.ndarray:
    return np.zeros((), dtype)


def _moved_axis(axis: int, bdim: int) -> int:
    """Where unbatched axis `axis` sits in a value batched at `bdim`."""
    return axis + (axis >= bdim)


# --- wrappers over core's structural primitives -------------------------------


def broadcast_in_dim(operand: Any, shape: Sequence[int],
                     broadcast_dimensions: Sequence[int], *, out_sharding: Any = None) -> Any:
    """Broadcasts `operand` to `shape`; operand axis i becomes axis broadcast_dimensions[i].

    >>> broadcast_in_dim(np.float32([1, 2]), (3, 2), (1,)).shape
    (3, 2)
    """
    out_sharding = out_sharding_of("broadcast_in_dim", out_sharding)
    out = structural.broadcast_in_dim(operand, canonicalize_shape("broadcast_in_dim", shape),
                                      tuple(int(d) for d in broadcast_dimensions))
    return with_out_sharding(out, out_sharding)


def broadcast(operand: Any, sizes: Sequence[int], *, out_sharding: Any = None) -> Any:
    """Adds leading axes of the given `sizes`, repeating `operand` along them.

    >>> broadcast(np.float32([1, 2]), (3,)).shape
    (3, 2)
    """
    ndim = aval_of(operand).ndim
    sizes = canonicalize_shape("broadcast", sizes)
    return broadcast_in_dim(operand, sizes + aval_of(operand).shape,
                            range(len(sizes), len(sizes) + ndim), out_sharding=out_sharding)


def transpose(operand: Any, permutation: Sequence[int]) -> Any:
    """Permutes the axes of `operand`: output axis i is operand axis permutation[i].

    >>> transpose(np.zeros((2, 3), np.float32), (1, 0)).shape
    (3, 2)
    """
    permutation = tuple(int(p) for p in permutation)
    if permutation == tuple(range(aval_of(operand).ndim)) and _is_lamella_value(operand):
        return operand
    return structural.transpose(operand, permutation)


def reshape(operand: Any, new_sizes: Sequence[int],
            dimensions: Sequence[int] | None = None, *, out_sharding: Any = None) -> Any:
    """Reshapes `operand` (row-major) to `new_sizes`, after transposing it by
    `dimensions` when given.

    >>> reshape(np.arange(6, dtype=np.float32).reshape(2, 3), (3, 2), (1, 0))
    Array([[0., 3.],
           [1., 4.],
           [2., 5.]], dtype=float32)
    """
    out_sharding = out_sharding_of("reshape", out_sharding)
    if out_sharding is not None:  # a layout the reshape could not keep: the one asked for
        return with_out_sharding(reshape(unshard_dims(operand), new_sizes, dimensions),
                                 out_sharding)
    new_sizes = canonicalize_shape("reshape", new_sizes)
    if dimensions is not None:
        operand = transpose(operand, dimensions)
    if aval_of(operand).shape == new_sizes and _is_lamella_value(operand):
        return operand
    return structural.reshape(operand, new_sizes)


def expand_dims(array: Any, dimensions: Sequence[int]) -> Any:
    """Inserts axes of size 1 at `dimensions` (positions in the result).

    >>> expand_dims(np.zeros((2, 3), np.float32), (0, -1)).shape
    (1, 2, 3, 1)
    """
    shape = aval_of(array).shape
    ndim_out = len(shape) + len(dimensions)
    dims = [_canonicalize_axis(d, ndim_out) for d in dimensions]
    if len(set(dims)) != len(dims):
        raise ValueError(f"expand_dims got repeated dimensions {tuple(dimensions)}")
    kept = [i for i in range(ndim_out) if i not in dims]
    result_shape = [1] * ndim_out
    for i, d in zip(kept, shape):
        result_shape[i] = d
    return broadcast_in_dim(array, result_shape, kept)


# --- squeeze ------------------------------------------------------------------
squeeze_p = standard_primitive("squeeze")


def squeeze(array: Any, dimensions: Sequence[int]) -> Any:
    """Removes the axes `dimensions`, which must have size 1.

    >>> squeeze(np.zeros((1, 2, 1), np.float32), (0, 2)).shape
    (2,)
    """
    ndim = aval_of(array).ndim
    dims = tuple(sorted(_canonicalize_axis(d, ndim) for d in dimensions))
    return squeeze_p.bind(array, dimensions=dims)


@squeeze_p.def_abstract_eval
def _squeeze_abstract_eval(x: ShapedArray, *, dimensions) -> ShapedArray:
    if any(not 0 <= d < x.ndim for d in dimensions) or len(set(dimensions)) != len(dimensions):
        raise TypeError(f"squeeze dimensions {dimensions} must be distinct axes of the "
                        f"operand of shape {x.shape}")
    if any(x.shape[d] != 1 for d in dimensions):
        raise TypeError(f"squeeze can only remove axes of size 1, got dimensions "
                        f"{dimensions} for operand shape {x.shape}")
    return x.update(shape=tuple(d for i, d in enumerate(x.shape) if i not in dimensions))


def _squeeze_batch(args, dims, *, dimensions):
    (x,), (d,) = args, dims
    return squeeze_p.bind(x, dimensions=tuple(_moved_axis(a, d) for a in dimensions)), \
        d - sum(a < d for a in dimensions)


ad.deflinear2(squeeze_p, lambda ct, x, *, dimensions: [structural.reshape(ct, x.aval.shape)])
batching.primitive_batchers[squeeze_p] = _squeeze_batch
register_lowering(squeeze_p, lambda ctx, x, *, dimensions: [
    symbolic_lowering.reshape(ctx.avals_out[0], x)])

# --- rev ----------------------------------------------------------------------
rev_p = standard_primitive("rev")


def rev(operand: Any, dimensions: Sequence[int]) -> Any:
    """Reverses `operand` along each axis in `dimensions`.

    >>> rev(np.float32([1, 2, 3]), (0,))
    Array([3., 2., 1.], dtype=float32)
    """
    return rev_p.bind(operand, dimensions=tuple(int(d) for d in dimensions))


@rev_p.def_abstract_eval
def _rev_abstract_eval(x: ShapedArray, *, dimensions) -> ShapedArray:
    if any(not 0 <= d < x.ndim for d in dimensions) or len(set(dimensions)) != len(dimensions):
        raise TypeError(f"rev dimensions {dimensions} must be distinct axes of the operand "
                        f"of shape {x.shape}")
    return x


def _rev_batch(args, dims, *, dimensions):
    (x,), (d,) = args, dims
    return rev(x, [_moved_axis(a, d) for a in dimensions]), d


ad.deflinear2(rev_p, lambda ct, x, *, dimensions: [rev(ct, dimensions)])
batching.primitive_batchers[rev_p] = _rev_batch
register_lowering(rev_p, lambda ctx, x, *, dimensions: [hlo.reverse(x, list(dimensions))])

# --- pad ----------------------------------------------------------------------
pad_p = standard_primitive("pad")
_PYTHON_SCALAR_FITS = {bool: (BOOL,), int: NUMBER, float: INEXACT, complex: (COMPLEX,)}


def pad(operand: Any, padding_value: Any,
        padding_config: Sequence[tuple[int, int, int]]) -> Any:
    """Pads `operand` with `padding_value`: (low, high, interior) per axis.

    `low` and `high` add that many entries before and after (negative values
    crop), `interior` adds that many between neighbouring entries. A Python
    scalar `padding_value` takes the operand's dtype (if it fits the kind: an
    int pads floats, a float does not pad ints).

    >>> pad(np.float32([1, 2]), 0.0, [(1, -1, 2)])
    Array([0., 1., 0., 0.], dtype=float32)
    """
    dtype = aval_of(operand).dtype
    if dtypes.is_python_scalar(padding_value) and \
            category(dtype) in _PYTHON_SCALAR_FITS[type(padding_value)]:
        padding_value = convert_element_type(padding_value, dtype,
                                              dtypes.is_weakly_typed(padding_value))
    config = tuple((_bound(lo), _bound(hi), int(interior))
                   for lo, hi, interior in padding_config)
    return pad_p.bind(operand, padding_value, padding_config=config)


def _dilated(size: int, interior: int) -> int:
    if type(size) is not int:  # symbolic (shape-polymorphic export)
        return size + max_dim(size - 1, 0) * interior if interior else size
    return size + max(size - 1, 0) * interior


@pad_p.def_abstract_eval
def _pad_abstract_eval(x: ShapedArray, padding_value: ShapedArray, *,
                       padding_config) -> ShapedArray:
    if padding_value.ndim:
        raise TypeError(f"pad padding_value must be a scalar, got shape {padding_value.shape}")
    if x.dtype != padding_value.dtype:
        raise TypeError(f"pad operand and padding_value must have the same dtype, got "
                        f"{x.dtype.name} and {padding_value.dtype.name}")
    if len(padding_config) != x.ndim:
        raise TypeError(f"pad padding_config has {len(padding_config)} entries for an operand "
                        f"of shape {x.shape}: give one (low, high, interior) per axis")
    if any(interior < 0 for _, _, interior in padding_config):
        raise TypeError(f"pad interior padding must be >= 0, got padding_config "
                        f"{padding_config}")
    shape = tuple(lo + hi + _dilated(d, interior)
                  for d, (lo, hi, interior) in zip(x.shape, padding_config))
    if any(d < 0 for d in shape):
        raise TypeError(f"pad padding_config {padding_config} crops operand of shape {x.shape} "
                        f"to a negative size {shape}")
    return x.update(shape=shape, weak_type=x.weak_type and padding_value.weak_type)


def _pad_transpose(ct, x, padding_value, *, padding_config):
    def ct_operand():
        # Undo low/high (cropping what padding added, re-adding what it cropped),
        # then step over the interior padding.
        unpadded = pad(ct, _zero_scalar(aval_of(ct).dtype),
                       [(-lo, -hi, 0) for lo, hi, _ in padding_config])
        return slice(unpadded, (0,) * len(padding_config), aval_of(unpadded).shape,
                     tuple(interior + 1 for _, _, interior in padding_config))

    def total(v):
        return structural.reduce_sum(v, tuple(range(aval_of(v).ndim)))

    t_operand = ct_operand() if ad.is_undefined_primal(x) else None
    t_padding_value = None
    if ad.is_undefined_primal(padding_value):
        # The padding value's cotangent is the sum over the padded positions.
        in_operand = t_operand if t_operand is not None else ct_operand()
        t_padding_value = sub(total(ct), total(in_operand))
    return [t_operand, t_padding_value]


def _pad_batch(args, dims, *, padding_config):
    (x, padding_value), (dx, dv) = args, dims
    if dv is None:
        config = list(padding_config)
        config.insert(dx, (0, 0, 0))
        return pad(x, padding_value, config), dx
    # A padding value per example: pad with zeros, then select the padded
    # positions (a padded mask of the operand's shape) from the broadcast values.
    size = aval_of(padding_value).shape[dv]
    x = batching.at_front(x, dx, size)
    dtype = aval_of(x).dtype
    padded = pad(x, _zero_scalar(dtype), ((0, 0, 0), *padding_config))
    out_shape = aval_of(padded).shape
    mask = pad(full(aval_of(x).shape[1:], True), np.False_, padding_config)
    mask = broadcast_in_dim(mask, out_shape, range(1, len(out_shape)))
    values = broadcast_in_dim(batching.moveaxis(padding_value, dv, 0), out_shape, (0,))
    return select(mask, padded, values), 0


def _pad_lowering(ctx, x, padding_value, *, padding_config):
    lo, hi, interior = ([c[k] for c in padding_config] for k in range(3))
    if is_symbolic_shape((*lo, *hi)):
        return [hlo.dynamic_pad(aval_to_ir_type(ctx.avals_out[0]), x, padding_value,
                                symbolic_lowering.shape_value(lo),
                                symbolic_lowering.shape_value(hi),
                                symbolic_lowering.shape_value(interior))]
    return [hlo.pad(x, padding_value, lo, hi, interior)]


ad.deflinear2(pad_p, _pad_transpose)
batching.primitive_batchers[pad_p] = _pad_batch
register_lowering(pad_p, _pad_lowering)

# --- concatenate --------------------------------------------------------------
concatenate_p = standard_primitive("concatenate")


def concatenate(operands: Sequence[Any], dimension: int) -> Any:
    """Joins `operands` (equal shapes but for `dimension`) along `dimension`.

    >>> concatenate([np.float32([1]), np.float32([2, 3])], 0)
    Array([1., 2., 3.], dtype=float32)
    """
    return concatenate_p.bind(*operands, dimension=int(dimension))


@concatenate_p.def_abstract_eval
def _concatenate_abstract_eval(*avals: ShapedArray, dimension) -> ShapedArray:
    if not avals:
        raise TypeError("concatenate needs at least one operand")
    first = avals[0]
    if not 0 <= dimension < first.ndim:
        raise TypeError(f"concatenate dimension {dimension} is out of range for operands of "
                        f"shape {first.shape}")
    if len({a.dtype for a in avals}) > 1:
        raise TypeError("concatenate operands must have the same dtype, got "
                        f"{', '.join(a.dtype.name for a in avals)}")
    unjoined = {a.shape[:dimension] + a.shape[dimension + 1:] if a.ndim == first.ndim else None
                for a in avals}
    if len(unjoined) > 1:
        raise TypeError(f"concatenate operands must have equal shapes except along dimension "
                        f"{dimension}, got {', '.join(str(a.shape) for a in avals)}")
    size = sum(a.shape[dimension] for a in avals)
    return ShapedArray(first.shape[:dimension] + (size,) + first.shape[dimension + 1:],
                       first.dtype, all(a.weak_type for a in avals))


def _concatenate_transpose(ct, *operands, dimension):
    cts, start = [], 0
    for x in operands:
        size = (x.aval if ad.is_undefined_primal(x) else aval_of(x)).shape[dimension]
        cts.append(slice_in_dim(ct, start, start + size, axis=dimension)
                   if ad.is_undefined_primal(x) else None)
        start += size
    return cts


def _concatenate_batch(args, dims, *, dimension):
    size = next(aval_of(x).shape[d] for x, d in zip(args, dims) if d is not None)
    return concatenate([batching.at_front(x, d, size) for x, d in zip(args, dims)],
                       dimension + 1), 0


ad.deflinear2(concatenate_p, _concatenate_transpose)
batching.primitive_batchers[concatenate_p] = _concatenate_batch
register_lowering(concatenate_p, lambda ctx, *xs, dimension: [
    hlo.concatenate(list(xs), dimension)])

# --- slice --------------------------------------------------------------------
slice_p = standard_primitive("slice")


def slice(operand: Any, start_indices: Sequence[int], limit_indices: Sequence[int],
          strides: Sequence[int] | None = None) -> Any:
    """`operand[start:limit:stride]` on every axis, with static bounds.

    >>> slice(np.arange(6, dtype=np.float32), (1,), (6,), (2,))
    Array([1., 3., 5.], dtype=float32)
    """
    return slice_p.bind(operand, start_indices=tuple(_bound(i) for i in start_indices),
                        limit_indices=tuple(_bound(i) for i in limit_indices),
                        strides=None if strides is None else tuple(int(s) for s in strides))


def _bound(i: Any) -> Any:
    # A symbolic dimension (shape-polymorphic export) is a bound as it is.
    return i if type(i) is DimExpr else int(i)


@slice_p.def_abstract_eval
def _slice_abstract_eval(x: ShapedArray, *, start_indices, limit_indices,
                         strides) -> ShapedArray:
    for name, indices in (("start_indices", start_indices), ("limit_indices", limit_indices),
                          ("strides", strides or (1,) * x.ndim)):
        if len(indices) != x.ndim:
            raise TypeError(f"slice {name} {indices} must have one entry per axis of the "
                            f"operand of shape {x.shape}")
    if any(i < 0 for i in start_indices):
        raise TypeError(f"slice start_indices {start_indices} must be >= 0")
    if any(limit > d for limit, d in zip(limit_indices, x.shape)):
        raise TypeError(f"slice limit_indices {limit_indices} must be <= the operand shape "
                        f"{x.shape}")
    if any(start > limit for start, limit in zip(start_indices, limit_indices)):
        raise TypeError(f"slice start_indices {start_indices} must be <= limit_indices "
                        f"{limit_indices} (operand shape {x.shape})")
    strides = strides or (1,) * x.ndim
    if any(s <= 0 for s in strides):
        raise TypeError(f"slice strides {strides} must be positive")
    return x.update(shape=tuple(_slice_size(start, limit, s) for start, limit, s
                                in zip(start_indices, limit_indices, strides)))


def _slice_size(start: Any, limit: Any, stride: int) -> Any:
    if type(start) is int and type(limit) is int:
        return (limit - start + stride - 1) // stride
    # JAX's expression for a symbolic size (lax.slice_in_dim(x, 0, b, 2) has
    # floordiv(b - 1, 2) + 1 entries)
    return max_dim((limit - start - 1) // stride + 1, 0) if stride != 1 else limit - start


def _slice_span(n: Any, stride: int) -> Any:
    """How far from its start the last of ``n`` entries taken every ``stride`` lies, plus
    one (0 when there are none)."""
    if type(n) is int:
        return max(n - 1, 0) * stride + (n > 0)
    return n if stride == 1 else max_dim(n - 1, 0) * stride + min_dim(n, 1)


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
    # The slice's entries go back where they came from, zeros in between.
    strides = strides or (1,) * len(start_indices)
    ct_shape = aval_of(ct).shape
    config = [(start, d - (start + _slice_span(n, s)), s - 1)
              for start, d, n, s in zip(start_indices, x.aval.shape, ct_shape, strides)]
    return [pad(ct, _zero_scalar(aval_of(ct).dtype), config)]


def _slice_batch(args, dims, *, start_indices, limit_indices, strides):
    (x,), (d,) = args, dims
    start, limit = list(start_indices), list(limit_indices)
    start.insert(d, 0)
    limit.insert(d, aval_of(x).shape[d])
    if strides is not None:
        strides = list(strides)
        strides.insert(d, 1)
    return slice(x, start, limit, strides), d


def _slice_lowering(ctx, x, *, start_indices, limit_indices, strides):
    strides = strides or (1,) * len(start_indices)
    return [symbolic_lowering.slice(ctx.avals_out[0], x, start_indices, limit_indices, strides)]


ad.deflinear2(slice_p, _slice_transpose)
batching.primitive_batchers[slice_p] = _slice_batch
register_lowering(slice_p, _slice_lowering)


def slice_in_dim(operand: Any, start_index: int | None, limit_index: int | None,
                 stride: int = 1, axis: int = 0) -> Any:
    """`slice` along one axis; None and negative bounds count as in Python slicing.

    >>> slice_in_dim(np.arange(5, dtype=np.float32), -2, None)
    Array([3., 4.], dtype=float32)
    """
    shape = aval_of(operand).shape
    axis = _canonicalize_axis(axis, len(shape))
    size = shape[axis]
    start = 0 if start_index is None else _bound(start_index)
    limit = size if limit_index is None else _bound(limit_index)
    start, limit = (i + size if i < 0 else i for i in (start, limit))
    starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis], limits[axis], strides[axis] = start, limit, int(stride)
    return slice(operand, starts, limits, strides)


def index_in_dim(operand: Any, index: int, axis: int = 0, keepdims: bool = True) -> Any:
    """The entry `index` (negative counts from the end) along `axis`.

    >>> index_in_dim(np.arange(6, dtype=np.float32).reshape(2, 3), -1, keepdims=False)
    Array([3., 4., 5.], dtype=float32)
    """
    shape = aval_of(operand).shape
    axis = _canonicalize_axis(axis, len(shape))
    index = int(index)
    if not -shape[axis] <= index < shape[axis]:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size "
                         f"{shape[axis]}")
    index %= shape[axis]
    out = slice_in_dim(operand, index, index + 1, axis=axis)
    return out if keepdims else squeeze(out, (axis,))


# --- dynamic start indices ----------------------------------------------------


def _check_index_count(name: str, count: int, shape: tuple[int, ...]) -> None:
    if count != len(shape):
        raise TypeError(f"{name} got {count} start indices for an operand of shape {shape}: "
                        "give one per axis")


def _index_dtype(name: str, indices: Sequence[Any]) -> np.dtype:
    """One integer dtype for all the start indices (XLA wants them alike).

    The indices' own dtype when they share one of at least 32 bits; otherwise
    the default integer, so that narrow types don't overflow when a negative
    index is offset by the axis size.
    """
    for dtype in {aval_of(i).dtype for i in indices}:
        if dtype.kind not in "iu":
            raise TypeError(f"{name} start indices must be integers, got dtype {dtype.name}")
    arrays = {aval_of(i).dtype for i in indices if not dtypes.is_python_scalar(i)}
    if len(arrays) == 1 and (dtype := arrays.pop()).itemsize >= 4:
        return dtype
    return dtypes.canonicalize_dtype(np.int64)


def _start_indices(name: str, operand: Any, start_indices: Any,
                   allow_negative_indices: bool) -> list[Any]:
    """The start indices as scalars of one dtype, negative ones counted from the end."""
    shape = aval_of(operand).shape
    if isinstance(start_indices, np.ndarray):
        start_indices = list(start_indices)
    elif not isinstance(start_indices, (list, tuple)):
        # An array of indices: split it into scalars.
        start_indices = [index_in_dim(start_indices, i, keepdims=False)
                         for i in range(aval_of(start_indices).shape[0])]
    _check_index_count(name, len(start_indices), shape)
    dtype = _index_dtype(name, start_indices)
    out = []
    for i, size in zip(start_indices, shape):
        if isinstance(i, (int, np.integer)) or isinstance(i, np.ndarray) and i.ndim == 0:
            # Known indices are offset in Python integers; clipping to the dtype's
            # range changes nothing after clamping to the axis.
            i = int(i)
            if allow_negative_indices and i < 0 and type(size) is DimExpr:
                out.append(convert_element_type(dimension_as_value(size + i), dtype))
                continue
            if allow_negative_indices and i < 0:
                i += size
            info = np.iinfo(dtype)
            out.append(np.asarray(min(max(i, info.min), info.max), dtype))
            continue
        if aval_of(i).dtype != dtype:
            i = convert_element_type(i, dtype)
        if allow_negative_indices and dtype.kind == "i":
            offset = np.asarray(size, dtype) if type(size) is not DimExpr \
                else convert_element_type(dimension_as_value(size), dtype)
            i = select(lt(i, _zero_scalar(dtype)), add(i, offset), i)
        out.append(i)
    return out


def _check_start_indices(name: str, x: ShapedArray, indices: Sequence[ShapedArray]) -> None:
    _check_index_count(name, len(indices), x.shape)
    for i in indices:
        if i.ndim:
            raise TypeError(f"{name} start indices must be scalars, got shape {i.shape}")
        check_dtypes(f"{name} start index", ("signed integer", "unsigned integer"), i)
    if len({i.dtype for i in indices}) > 1:
        raise TypeError(f"{name} start indices must share one integer dtype, got "
                        f"{', '.join(i.dtype.name for i in indices)}")


def _index_zero(indices: Sequence[Any]) -> np.ndarray:
    """A zero start index of the same dtype as `indices`."""
    dtype = aval_of(indices[0]).dtype if indices else dtypes.canonicalize_dtype(np.int64)
    return _zero_scalar(dtype)


def _bit(starts: Any, k: int) -> Any:
    """Whether bit k of each (non-negative) start is set."""
    dtype = aval_of(starts).dtype
    return ne(bitwise_and(shift_right_logical(starts, np.asarray(k, dtype)),
                          np.asarray(1, dtype)), _zero_scalar(dtype))


def _clamped(starts: Any, limit: int) -> Any:
    dtype = aval_of(starts).dtype
    limit = min(limit, int(np.iinfo(dtype).max))
    return clamp(_zero_scalar(dtype), starts, np.asarray(limit, dtype))


def _select_along(pred: Any, on_true: Any, on_false: Any) -> Any:
    """Per example (axis 0) choice between two arrays."""
    shape = aval_of(on_true).shape
    return select(broadcast_in_dim(pred, shape, (0,)), on_true, on_false)


# Per-example windows (vmap of dynamic_slice or dynamic_update_slice with batched
# start indices) without gather, scatter or loops: a barrel shifter. A start s
# is the sum of its bits; the shift by 2**k is applied, to the examples whose
# bit k is set, as a static slice (or pad) chosen with `select`. The array only
# grows or shrinks by the shift still to come, so for an axis of size n, a
# window of size w and b = bit_length(n - w) steps, each example costs about
# b * w + 2 * n entries along that axis (times the other axes), against w for
# a gather.


def _take_window(x: Any, axis: int, starts: Any, window: int) -> Any:
    """x[b, ..., starts[b] : starts[b] + window, ...] for each b of axis 0,
    with starts clamped so the window fits."""
    n = aval_of(x).shape[axis]
    bits = (n - window).bit_length()
    if not bits:
        return x
    starts = _clamped(starts, n - window)
    # After the shifts by the bits above k, a window of w + 2**(k+1) - 1 covers
    # every remaining start; pad so the first step has that much.
    missing = window + 2 ** bits - 1 - n
    if missing:
        config = [(0, 0, 0)] * aval_of(x).ndim
        config[axis] = (0, missing, 0)
        x = pad(x, _zero_scalar(aval_of(x).dtype), config)
    for k in reversed(range(bits)):
        length = window + 2 ** k - 1
        x = _select_along(_bit(starts, k), slice_in_dim(x, 2 ** k, 2 ** k + length, axis=axis),
                          slice_in_dim(x, 0, length, axis=axis))
    return x


def _put_window(u: Any, axis: int, starts: Any, n: int) -> Any:
    """Zeros of size n along `axis` holding u[b] at starts[b] for each b of axis
    0, with starts clamped so u fits."""
    window = aval_of(u).shape[axis]
    bits = (n - window).bit_length()
    starts = _clamped(starts, n - window)
    zero = _zero_scalar(aval_of(u).dtype)
    config = [(0, 0, 0)] * aval_of(u).ndim
    for k in range(bits):
        config[axis] = (0, 2 ** k, 0)
        unshifted = pad(u, zero, config)
        config[axis] = (2 ** k, 0, 0)
        u = _select_along(_bit(starts, k), pad(u, zero, config), unshifted)
    return slice_in_dim(u, 0, n, axis=axis) if bits else u


# --- dynamic_slice ------------------------------------------------------------
dynamic_slice_p = standard_primitive("dynamic_slice")


def dynamic_slice(operand: Any, start_indices: Any, slice_sizes: Sequence[int], *,
                  allow_negative_indices: bool = True) -> Any:
    """The window of `slice_sizes` at traced `start_indices`.

    Indices are clamped so the window fits in `operand` (as in XLA); negative
    indices count from the end unless `allow_negative_indices` is False.

    >>> dynamic_slice(np.arange(5, dtype=np.float32), [np.int32(4)], (2,))
    Array([3., 4.], dtype=float32)
    """
    indices = _start_indices("dynamic_slice", operand, start_indices, allow_negative_indices)
    return dynamic_slice_p.bind(operand, *indices,
                                slice_sizes=tuple(_bound(s) for s in slice_sizes))


@dynamic_slice_p.def_abstract_eval
def _dynamic_slice_abstract_eval(x: ShapedArray, *indices: ShapedArray,
                                 slice_sizes) -> ShapedArray:
    _check_start_indices("dynamic_slice", x, indices)
    if len(slice_sizes) != x.ndim or any(not 0 <= s <= d for s, d in zip(slice_sizes, x.shape)):
        raise TypeError(f"dynamic_slice slice_sizes {slice_sizes} must be between 0 and the "
                        f"operand shape {x.shape}, one per axis")
    return x.update(shape=tuple(slice_sizes))


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
    x, *indices = primals
    out = dynamic_slice_p.bind(x, *indices, slice_sizes=slice_sizes)
    if type(tangents[0]) is ad.Zero:
        return out, ad.Zero.from_primal_value(out)
    return out, dynamic_slice_p.bind(tangents[0], *indices, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct, x, *indices, slice_sizes):
    zeros = ad.zeros_like_aval(x.aval)
    return [dynamic_update_slice_p.bind(zeros, ct, *indices), *[None] * len(indices)]


def _dynamic_slice_batch(args, dims, *, slice_sizes):
    (x, *indices), (dx, *dims_i) = args, dims
    if all(d is None for d in dims_i):
        # The batch axis is taken whole.
        indices.insert(dx, _index_zero(indices))
        sizes = list(slice_sizes)
        sizes.insert(dx, aval_of(x).shape[dx])
        return dynamic_slice_p.bind(x, *indices, slice_sizes=tuple(sizes)), dx
    size = next(aval_of(i).shape[d] for i, d in zip(indices, dims_i) if d is not None)
    x = batching.at_front(x, dx, size)
    shape = aval_of(x).shape
    # Shared starts with one dynamic_slice (batched-start axes kept whole),
    # then one window per example along each axis with batched starts.
    zero = _index_zero(indices)
    sizes = [shape[a + 1] if d is not None else s
             for a, (s, d) in enumerate(zip(slice_sizes, dims_i))]
    shared = [zero if d is not None else i for i, d in zip(indices, dims_i)]
    if tuple(sizes) != shape[1:]:
        x = dynamic_slice_p.bind(x, zero, *shared, slice_sizes=(size, *sizes))
    for a, (i, d) in enumerate(zip(indices, dims_i)):
        if d is not None:
            x = _take_window(x, a + 1, batching.moveaxis(i, d, 0), slice_sizes[a])
    return x, 0


ad.primitive_jvps[dynamic_slice_p] = _dynamic_slice_jvp
ad.primitive_transposes[dynamic_slice_p] = _dynamic_slice_transpose
batching.primitive_batchers[dynamic_slice_p] = _dynamic_slice_batch
def _dynamic_slice_lowering(ctx, x, *indices, slice_sizes):
    if any(type(s) is DimExpr for s in slice_sizes):
        return [symbolic_lowering.dynamic_slice(ctx.avals_in[0], ctx.avals_out[0], x,
                                                indices, slice_sizes)]
    return [hlo.dynamic_slice(x, list(indices), list(slice_sizes))]


register_lowering(dynamic_slice_p, _dynamic_slice_lowering)


def dynamic_slice_in_dim(operand: Any, start_index: Any, slice_size: int, axis: int = 0, *,
                         allow_negative_indices: bool = True) -> Any:
    """`dynamic_slice` along one axis.

    >>> dynamic_slice_in_dim(np.arange(5, dtype=np.float32), 1, 2)
    Array([1., 2.], dtype=float32)
    """
    shape = aval_of(operand).shape
    axis = _canonicalize_axis(axis, len(shape))
    starts: list[Any] = [0] * len(shape)
    sizes = list(shape)
    starts[axis], sizes[axis] = start_index, _bound(slice_size)
    return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow_negative_indices)


# As in JAX, the two index functions are jitted (equations `jit[name=...]`).
@partial(jit, static_argnames=("axis", "keepdims", "allow_negative_indices"))
def dynamic_index_in_dim(operand: Any, index: Any, axis: int = 0, keepdims: bool = True, *,
                         allow_negative_indices: bool = True) -> Any:
    """The entry at traced `index` along `axis` (clamped into range).

    >>> dynamic_index_in_dim(np.arange(5, dtype=np.float32), -1, keepdims=False)
    Array(4., dtype=float32)
    """
    out = dynamic_slice_in_dim(operand, index, 1, axis,
                               allow_negative_indices=allow_negative_indices)
    return out if keepdims else squeeze(out, (axis,))


# --- dynamic_update_slice -----------------------------------------------------
dynamic_update_slice_p = standard_primitive("dynamic_update_slice")


def dynamic_update_slice(operand: Any, update: Any, start_indices: Any, *,
                         allow_negative_indices: bool = True) -> Any:
    """`operand` with `update` written at traced `start_indices`.

    Indices are clamped so `update` fits (as in XLA); negative indices count
    from the end unless `allow_negative_indices` is False.

    >>> dynamic_update_slice(np.zeros(4, np.float32), np.float32([1, 2]), [3])
    Array([0., 0., 1., 2.], dtype=float32)
    """
    indices = _start_indices("dynamic_update_slice", operand, start_indices,
                             allow_negative_indices)
    return dynamic_update_slice_p.bind(operand, update, *indices)


@dynamic_update_slice_p.def_abstract_eval
def _dynamic_update_slice_abstract_eval(x: ShapedArray, update: ShapedArray,
                                        *indices: ShapedArray) -> ShapedArray:
    if x.dtype != update.dtype:
        raise TypeError(f"dynamic_update_slice operand and update must have the same dtype, "
                        f"got {x.dtype.name} and {update.dtype.name}")
    if update.ndim != x.ndim or any(u > d for u, d in zip(update.shape, x.shape)):
        raise TypeError(f"dynamic_update_slice update of shape {update.shape} must have the "
                        f"operand's rank and fit in its shape {x.shape}")
    _check_start_indices("dynamic_update_slice", x, indices)
    return x


def _dynamic_update_slice_jvp(primals, tangents):
    x, update, *indices = primals
    out = dynamic_update_slice_p.bind(x, update, *indices)
    tx, tu = tangents[:2]
    if type(tx) is ad.Zero and type(tu) is ad.Zero:
        return out, ad.Zero.from_primal_value(out)
    return out, dynamic_update_slice_p.bind(ad.instantiate_zeros(tx), ad.instantiate_zeros(tu),
                                            *indices)


def _dynamic_update_slice_transpose(ct, x, update, *indices):
    update_aval = update.aval if ad.is_undefined_primal(update) else aval_of(update)
    ct_x = ct_update = None
    if ad.is_undefined_primal(x):
        ct_x = dynamic_update_slice_p.bind(ct, ad.zeros_like_aval(update_aval), *indices)
    if ad.is_undefined_primal(update):
        ct_update = dynamic_slice_p.bind(ct, *indices, slice_sizes=update_aval.shape)
    return [ct_x, ct_update, *[None] * len(indices)]


def _dynamic_update_slice_batch(args, dims):
    (x, update, *indices), (dx, du, *dims_i) = args, dims
    size = next(aval_of(v).shape[d] for v, d in zip(args, dims) if d is not None)
    x = batching.at_front(x, dx, size)
    update = batching.at_front(update, du, size)
    zero = _index_zero(indices)
    if all(d is None for d in dims_i):
        return dynamic_update_slice_p.bind(x, update, zero, *indices), 0
    # Widen the update (and a mask of where it lands) to the whole axis along
    # each axis with batched starts, one placement per example; write both at
    # the shared starts; take the update where the mask is set.
    shape = aval_of(x).shape
    mask = full(aval_of(update).shape, True)
    for a, (i, d) in enumerate(zip(indices, dims_i)):
        if d is not None:
            starts = batching.moveaxis(i, d, 0)
            update = _put_window(update, a + 1, starts, shape[a + 1])
            mask = _put_window(mask, a + 1, starts, shape[a + 1])
    shared = [zero if d is not None else i for i, d in zip(indices, dims_i)]
    update = dynamic_update_slice_p.bind(full(shape, 0, aval_of(x).dtype), update, zero,
                                         *shared)
    mask = dynamic_update_slice_p.bind(full(shape, False), mask, zero, *shared)
    return select(mask, update, x), 0


ad.primitive_jvps[dynamic_update_slice_p] = _dynamic_update_slice_jvp
ad.primitive_transposes[dynamic_update_slice_p] = _dynamic_update_slice_transpose
batching.primitive_batchers[dynamic_update_slice_p] = _dynamic_update_slice_batch
register_lowering(dynamic_update_slice_p, lambda ctx, x, update, *indices: [
    hlo.dynamic_update_slice(x, update, list(indices))])


def dynamic_update_slice_in_dim(operand: Any, update: Any, start_index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    """`dynamic_update_slice` along one axis (the update spans the others).

    >>> dynamic_update_slice_in_dim(np.zeros(3, np.float32), np.float32([5]), 1, 0)
    Array([0., 5., 0.], dtype=float32)
    """
    ndim = aval_of(operand).ndim
    axis = _canonicalize_axis(axis, ndim)
    starts: list[Any] = [0] * ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts,
                                allow_negative_indices=allow_negative_indices)


@partial(jit, static_argnames=("axis", "allow_negative_indices"))
def dynamic_update_index_in_dim(operand: Any, update: Any, index: Any, axis: int, *,
                                allow_negative_indices: bool = True) -> Any:
    """Writes `update` as entry `index` along `axis`; `update` may lack that axis.

    >>> dynamic_update_index_in_dim(np.zeros((2, 2), np.float32), np.float32([1, 2]), 1, 0)
    Array([[0., 0.],
           [1., 2.]], dtype=float32)
    """
    ndim = aval_of(operand).ndim
    axis = _canonicalize_axis(axis, ndim)
    if aval_of(update).ndim == ndim - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis,
                                       allow_negative_indices=allow_negative_indices)


# --- iota ---------------------------------------------------------------------
iota_p = standard_primitive("iota")


def iota(dtype: Any, size: int) -> Any:
    """0, 1, ..., size - 1.

    >>> iota(np.int32, 3)
    Array([0, 1, 2], dtype=int32)
    """
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype: Any, shape: Sequence[int], dimension: int, *,
                     out_sharding: Any = None) -> Any:
    """An array of `shape` counting 0, 1, ... along `dimension`.

    >>> broadcasted_iota(np.int32, (2, 3), 1)
    Array([[0, 1, 2],
           [0, 1, 2]], dtype=int32)
    """
    out_sharding = out_sharding_of("broadcasted_iota", out_sharding)
    shape = canonicalize_shape("broadcasted_iota", shape)
    return with_out_sharding(iota_p.bind(
        dtype=dtypes.canonicalize_dtype(dtype), shape=shape,
        dimension=_canonicalize_axis(int(dimension), len(shape)), sharding=None), out_sharding)


@iota_p.def_abstract_eval
def _iota_abstract_eval(*, dtype, shape, dimension, sharding) -> ShapedArray:
    aval = ShapedArray(canonicalize_shape("iota", shape), dtype)
    check_dtypes("iota", NUMBER, aval)
    if not 0 <= dimension < len(shape) or any(d < 0 for d in shape):
        raise TypeError(f"iota dimension {dimension} must be an axis of the non-negative "
                        f"shape {shape}")
    return aval


register_lowering(iota_p, lambda ctx, *, dtype, shape, dimension, sharding: [
    symbolic_lowering.iota(ctx.avals_out[0], dimension)])

# --- split --------------------------------------------------------------------
split_p = standard_primitive("split", multiple_results=True)


def split(operand: Any, sizes: Sequence[int], axis: int = 0) -> list[Any]:
    """Cuts `operand` along `axis` into pieces of the given `sizes`.

    >>> [p.shape for p in split(np.zeros((5, 2), np.float32), (2, 3))]
    [(2, 2), (3, 2)]
    """
    axis = _canonicalize_axis(axis, aval_of(operand).ndim)
    return split_p.bind(operand, sizes=tuple(_bound(s) for s in sizes), axis=axis)


@split_p.def_abstract_eval
def _split_abstract_eval(x: ShapedArray, *, sizes, axis) -> list[ShapedArray]:
    if not 0 <= axis < x.ndim:
        raise TypeError(f"split axis {axis} is out of range for operand shape {x.shape}")
    if any(s < 0 for s in sizes) or sum(sizes) != x.shape[axis]:
        raise TypeError(f"split sizes {sizes} must be non-negative and sum to "
                        f"{x.shape[axis]}, the size of axis {axis} of operand shape {x.shape}")
    return [x.update(shape=x.shape[:axis] + (s,) + x.shape[axis + 1:]) for s in sizes]


def _split_batch(args, dims, *, sizes, axis):
    (x,), (d,) = args, dims
    return split_p.bind(x, sizes=sizes, axis=_moved_axis(axis, d)), [d] * len(sizes)


def _split_lowering(ctx, x, *, sizes, axis):
    shape = ctx.avals_in[0].shape
    outs, start = [], 0
    for s, aval in zip(sizes, ctx.avals_out):
        starts, limits = [0] * len(shape), list(shape)
        starts[axis], limits[axis] = start, start + s
        outs.append(symbolic_lowering.slice(aval, x, starts, limits, [1] * len(shape)))
        start += s
    return outs


ad.deflinear2(split_p, lambda cts, x, *, sizes, axis: [
    concatenate([ad.instantiate_zeros(ct) for ct in cts], axis)])
batching.primitive_batchers[split_p] = _split_batch
register_lowering(split_p, _split_lowering)


# --- shape arithmetic and conveniences ------------------------------------------


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The NumPy broadcast of `shapes` (trailing axes aligned, sizes 1 stretch).

    >>> broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    shapes = [tuple(int(d) for d in s) for s in shapes]
    if not shapes:
        return ()
    rank = max(len(s) for s in shapes)
    out = []
    for sizes in zip(*[(1,) * (rank - len(s)) + s for s in shapes]):
        bigger = {d for d in sizes if d != 1}
        if len(bigger) > 1:
            raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}")
        out.append(bigger.pop() if bigger else 1)
    return tuple(out)


def broadcast_to_rank(x: Any, rank: int) -> Any:
    """`x` with leading axes of size 1 added up to rank `rank`.

    >>> broadcast_to_rank(np.float32([1, 2]), 3).shape
    (1, 1, 2)
    """
    ndim = aval_of(x).ndim
    if ndim == rank:
        return x if _is_lamella_value(x) else convert_element_type(x, aval_of(x).dtype,
                                                                    aval_of(x).weak_type)
    return broadcast(x, (1,) * (rank - ndim))


def broadcast_like(arr: Any, like_arr: Any) -> Any:
    """`arr` broadcast (NumPy style, trailing axes aligned) to the shape of `like_arr`.

    >>> broadcast_like(np.float32([1, 2]), np.zeros((3, 2), np.float32)).shape
    (3, 2)
    """
    shape, target = aval_of(arr).shape, aval_of(like_arr).shape
    if len(shape) > len(target):
        raise ValueError(f"Cannot broadcast to shape with fewer dimensions: "
                         f"arr_shape={shape} shape={target}")
    if broadcast_shapes(shape, target) != target:
        raise ValueError(f"Incompatible shapes for broadcasting: {shape} to {target}")
    lead = len(target) - len(shape)
    kept = tuple(i for i, d in enumerate(shape) if d == target[lead + i])
    squeezed = reshape(arr, tuple(shape[i] for i in kept)) if len(kept) < len(shape) else arr
    return broadcast_in_dim(squeezed, target, tuple(lead + i for i in kept))


def collapse(operand: Any, start_dimension: int, stop_dimension: int | None = None) -> Any:
    """`operand` with axes `start_dimension` up to (not including) `stop_dimension`
    (default: the last) merged into one.

    >>> collapse(np.zeros((2, 3, 4), np.float32), 1).shape
    (2, 12)
    """
    shape = aval_of(operand).shape
    lo = _canonicalize_axis(start_dimension, len(shape))
    hi = len(shape) if stop_dimension is None else (
        stop_dimension + len(shape) if stop_dimension < 0 else stop_dimension)
    if not lo <= hi <= len(shape):
        raise ValueError(f"collapse: dimensions [{start_dimension}, {stop_dimension}) are "
                         f"not a range of the axes of shape {shape}")
    size = 1
    for d in shape[lo:hi]:
        size *= d
    return reshape(operand, shape[:lo] + (size,) + shape[hi:])


def shape_as_value(shape: Sequence[int]) -> Any:
    """The sizes of `shape` as an int32 array (a constant).

    >>> shape_as_value((2, 3))
    Array([2, 3], dtype=int32)
    """
    if not shape:
        return full((0,), 0, np.int32)
    return concatenate([broadcast_in_dim(convert_element_type(int(d), np.int32), (1,), ())
                        for d in shape], 0)
