"""Indexing primitives: gather and the scatter family, with XLA's dimension numbers.

`gather` reads windows of an operand at traced start indices; `scatter`,
`scatter_add`, `scatter_mul`, `scatter_min` and `scatter_max` write (or
combine) windows of updates into an operand. Each primitive has all its rules
here, in the order abstract eval, JVP (or linearity and a transpose),
batching, lowering. Names, parameters and semantics follow `jax.lax`:

- The index vector is always the last axis of the indices.
- `mode` (a `GatherScatterMode` or "clip", "fill", "drop",
  "promise_in_bounds"; None means PROMISE_IN_BOUNDS for gather and FILL_OR_DROP
  for the scatters, as in JAX): CLIP clamps start
  indices so the whole window fits; FILL_OR_DROP makes a gather return
  `fill_value` for windows that do not fit (NaN for inexact dtypes, the
  minimum of signed integers, the maximum of unsigned ones, True for bool) and
  makes a scatter drop updates whose window does not fit.
- Gather is linear in its operand and transposes to `scatter_add`;
  `scatter_add` transposes to gather. Indices are never differentiated.
- Under vmap, batched operands and indices become `operand_batching_dims` and
  `start_indices_batching_dims` (`scatter_indices_batching_dims`), which XLA
  supports directly, so no index arithmetic is needed.

>>> import numpy as np
>>> x = np.arange(6, dtype=np.float32).reshape(3, 2)
>>> rows = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
...                               start_index_map=(0,))
>>> gather(x, np.int32([[2], [0]]), rows, (1, 2))
Array([[4., 5.],
       [0., 1.]], dtype=float32)
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from lamella.core import ShapedArray, ad, batching, dtypes
from lamella.core.jaxpr import Jaxpr
from lamella.core.shape_poly import DimExpr, dimension_as_value, is_symbolic_shape
from lamella.core.staging import trace_to_jaxpr
from lamella.core.trace import aval_of
from lamella.lax import symbolic_lowering
from lamella.lax.arithmetic import add, div, max, min, mul, neg, rem, sub
from lamella.lax.conversion import convert_element_type
from lamella.lax.fill import full
from lamella.lax.logical import bitwise_and, clamp, eq, ge, le, lt, select
from lamella.lax.lowering import (
    aval_to_ir_type,
    constant,
    hlo,
    ir,
    lower_fun,
    lower_jaxpr,
    register_lowering,
)
from lamella.lax.mlir_context import element_type
from lamella.lax.reductions import reduce_and
from lamella.lax.shapes import broadcast_in_dim, concatenate, iota, reshape
from lamella.lax.standard import ANY, BOOL, FLOAT, INT, NUMBER, check_dtypes, standard_primitive

__all__ = [
    "GatherDimensionNumbers", "GatherScatterMode", "ScatterDimensionNumbers", "gather",
    "gather_p", "index_take", "scatter", "scatter_add", "scatter_add_p", "scatter_apply",
    "scatter_max", "scatter_max_p", "scatter_min", "scatter_min_p", "scatter_mul",
    "scatter_mul_p", "scatter_p", "scatter_sub", "scatter_sub_p",
]


class GatherDimensionNumbers(NamedTuple):
    """How a gather maps indices and windows to the output (as XLA's Gather).

    offset_dims: output axes that hold the window axes (sorted).
    collapsed_slice_dims: operand axes whose window size is 1 and which are
        dropped from the output.
    start_index_map: for each entry of an index vector, the operand axis it
        starts.
    operand_batching_dims / start_indices_batching_dims: paired axes of the
        operand and the indices that are indexed together, example by example.
    """

    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
    """How a scatter maps indices and update windows to the operand (as XLA's Scatter).

    update_window_dims: axes of the updates that are window axes (sorted).
    inserted_window_dims: operand axes of window size 1 that the updates lack.
    scatter_dims_to_operand_dims: for each entry of an index vector, the
        operand axis it starts.
    operand_batching_dims / scatter_indices_batching_dims: paired axes of the
        operand and the indices that are indexed together, example by example.
    """

    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()


class GatherScatterMode(enum.Enum):
    """What out-of-bounds indices do.

    >>> GatherScatterMode.from_any("drop")
    <GatherScatterMode.FILL_OR_DROP: 1>
    """

    CLIP = 0
    FILL_OR_DROP = 1
    PROMISE_IN_BOUNDS = 2

    @staticmethod
    def from_any(mode: str | GatherScatterMode | None) -> GatherScatterMode:
        if isinstance(mode, GatherScatterMode):
            return mode
        if mode is None or mode in ("fill", "drop"):
            return GatherScatterMode.FILL_OR_DROP
        if mode == "clip":
            return GatherScatterMode.CLIP
        if mode == "promise_in_bounds":
            return GatherScatterMode.PROMISE_IN_BOUNDS
        raise ValueError(f"Unknown gather/scatter mode {mode!r}: use 'clip', 'fill', 'drop', "
                         "'promise_in_bounds' or a GatherScatterMode")


def _tuples(dnums: NamedTuple) -> Any:
    return type(dnums)(*(tuple(int(d) for d in field) for field in dnums))


def _check_axes(prim: str, name: str, axes: Sequence[int], rank: int, what: str) -> None:
    if any(not 0 <= a < rank for a in axes) or len(set(axes)) != len(axes):
        raise TypeError(f"{prim} {name} {tuple(axes)} must be distinct axes of the {what} "
                        f"(rank {rank})")


def _check_sorted(prim: str, name: str, axes: Sequence[int]) -> None:
    if list(axes) != sorted(axes):
        raise TypeError(f"{prim} {name} {tuple(axes)} must be sorted")


def _check_indices(prim: str, indices: ShapedArray, index_map: Sequence[int],
                   map_name: str) -> None:
    check_dtypes(f"{prim} indices", INT, indices)
    if indices.ndim == 0:
        raise TypeError(f"{prim} indices must have at least one axis (the index vector is the "
                        "last), got a scalar")
    if indices.shape[-1] != len(index_map):
        raise TypeError(f"{prim} {map_name} {tuple(index_map)} must have one entry per index "
                        f"vector entry: the last axis of the indices has size "
                        f"{indices.shape[-1]}")


def _check_batching(prim: str, operand: ShapedArray, indices: ShapedArray,
                    operand_dims: Sequence[int], indices_dims: Sequence[int],
                    indices_name: str) -> None:
    _check_axes(prim, "operand_batching_dims", operand_dims, operand.ndim, "operand")
    _check_axes(prim, indices_name, indices_dims, indices.ndim - 1,
                "indices without their index vector axis")
    if len(operand_dims) != len(indices_dims):
        raise TypeError(f"{prim} operand_batching_dims {tuple(operand_dims)} and "
                        f"{indices_name} {tuple(indices_dims)} must have the same length")
    for o, i in zip(operand_dims, indices_dims):
        if operand.shape[o] != indices.shape[i]:
            raise TypeError(f"{prim} operand_batching_dims {tuple(operand_dims)} and "
                            f"{indices_name} {tuple(indices_dims)} pair axes of different "
                            f"sizes: operand shape {operand.shape}, indices shape "
                            f"{indices.shape}")


def _fill_value(dtype: np.dtype, fill_value: Any) -> Any:
    """The value a FILL_OR_DROP gather returns for windows out of bounds."""
    if fill_value is not None:
        return fill_value
    if dtypes.is_float(dtype) or dtype.kind == "c":
        return np.nan
    if dtype.kind == "i":
        return int(np.iinfo(dtype).min)
    if dtype.kind == "u":
        return int(np.iinfo(dtype).max)
    return True


# --- gather -------------------------------------------------------------------
gather_p = standard_primitive("gather")


def gather(operand: Any, start_indices: Any, dimension_numbers: GatherDimensionNumbers,
           slice_sizes: Sequence[int], *, indices_are_sorted: bool = False,
           unique_indices: bool = False, mode: str | GatherScatterMode | None = None,
           fill_value: Any = None) -> Any:
    """Windows of `slice_sizes` from `operand`, one per index vector of `start_indices`.

    The output has the indices' axes (less the index vector axis) at the axes
    not in `offset_dims`, and the window axes (less the collapsed and batching
    ones) at `offset_dims`.

    >>> x = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> points = GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0, 1),
    ...                                 start_index_map=(0, 1))
    >>> gather(x, np.int32([[1, 2], [0, 1]]), points, (1, 1))
    Array([5., 1.], dtype=float32)
    >>> gather(x, np.int32([[5, 0]]), points, (1, 1), mode="clip")
    Array([3.], dtype=float32)
    """
    mode = GatherScatterMode.from_any(GatherScatterMode.PROMISE_IN_BOUNDS if mode is None
                                      else mode)
    if fill_value is not None:
        fill_value = np.asarray(fill_value, aval_of(operand).dtype).item()
    return gather_p.bind(operand, start_indices, dimension_numbers=_tuples(dimension_numbers),
                         slice_sizes=tuple(_window_size(s) for s in slice_sizes),
                         indices_are_sorted=bool(indices_are_sorted),
                         unique_indices=bool(unique_indices), mode=mode,
                         fill_value=fill_value)


def _window_size(s: Any) -> Any:
    # A symbolic dimension (shape-polymorphic export) is a window size as it is.
    return s if type(s) is DimExpr else int(s)


@gather_p.def_abstract_eval
def _gather_abstract_eval(operand: ShapedArray, indices: ShapedArray, *, dimension_numbers,
                          slice_sizes, mode, **_) -> ShapedArray:
    dn = dimension_numbers
    _check_indices("gather", indices, dn.start_index_map, "start_index_map")
    if len(slice_sizes) != operand.ndim:
        raise TypeError(f"gather slice_sizes {slice_sizes} must have one entry per axis of the "
                        f"operand of shape {operand.shape}")
    if any(not 0 <= s <= d for s, d in zip(slice_sizes, operand.shape)):
        raise TypeError(f"gather slice_sizes {slice_sizes} must be between 0 and the operand "
                        f"shape {operand.shape}")
    _check_axes("gather", "collapsed_slice_dims", dn.collapsed_slice_dims, operand.ndim,
                "operand")
    _check_axes("gather", "start_index_map", dn.start_index_map, operand.ndim, "operand")
    _check_batching("gather", operand, indices, dn.operand_batching_dims,
                    dn.start_indices_batching_dims, "start_indices_batching_dims")
    _check_sorted("gather", "offset_dims", dn.offset_dims)
    _check_sorted("gather", "collapsed_slice_dims", dn.collapsed_slice_dims)
    _check_sorted("gather", "operand_batching_dims", dn.operand_batching_dims)
    dropped = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    if len(dropped) != len(dn.collapsed_slice_dims) + len(dn.operand_batching_dims):
        raise TypeError(f"gather collapsed_slice_dims {dn.collapsed_slice_dims} and "
                        f"operand_batching_dims {dn.operand_batching_dims} must be disjoint")
    if set(dn.start_index_map) & set(dn.operand_batching_dims):
        raise TypeError(f"gather start_index_map {dn.start_index_map} must not contain "
                        f"operand_batching_dims {dn.operand_batching_dims}")
    if any(slice_sizes[d] > 1 for d in dropped):
        raise TypeError(f"gather slice_sizes {slice_sizes} must be 0 or 1 at the "
                        f"collapsed_slice_dims {dn.collapsed_slice_dims} and "
                        f"operand_batching_dims {dn.operand_batching_dims}")
    window = [s for d, s in enumerate(slice_sizes) if d not in dropped]
    batch = list(indices.shape[:-1])
    rank = len(batch) + len(window)
    if len(window) != len(dn.offset_dims):
        raise TypeError(f"gather offset_dims {dn.offset_dims} must have one entry per window "
                        f"axis that is not collapsed or batching: {len(window)} of them for "
                        f"slice_sizes {slice_sizes}")
    _check_axes("gather", "offset_dims", dn.offset_dims, rank, "output")
    shape = [window.pop(0) if d in dn.offset_dims else batch.pop(0) for d in range(rank)]
    return ShapedArray(tuple(shape), operand.dtype, operand.weak_type)


def _gather_jvp(primals, tangents, **params):
    operand, indices = primals
    out = gather_p.bind(operand, indices, **params)
    if type(tangents[0]) is ad.Zero:
        return out, ad.Zero.from_primal_value(out)
    # Windows out of bounds hold a constant: their tangent is zero.
    return out, gather_p.bind(tangents[0], indices, **{**params, "fill_value": 0})


def _gather_to_scatter_dnums(dn: GatherDimensionNumbers) -> ScatterDimensionNumbers:
    return ScatterDimensionNumbers(
        update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
        scatter_dims_to_operand_dims=dn.start_index_map,
        operand_batching_dims=dn.operand_batching_dims,
        scatter_indices_batching_dims=dn.start_indices_batching_dims)


def _gather_transpose(ct, operand, indices, *, dimension_numbers, indices_are_sorted,
                      unique_indices, mode, **_):
    zeros = ad.zeros_like_aval(operand.aval)
    ct = ad.instantiate_zeros(ct)
    return [_rebind(scatter_add_p, zeros, indices, ct,
                    dimension_numbers=_gather_to_scatter_dnums(dimension_numbers),
                    indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                    mode=mode), None]


def _shift(axes: Sequence[int]) -> tuple[int, ...]:
    return tuple(a + 1 for a in axes)


def _gather_batch(args, dims, *, dimension_numbers, slice_sizes, **params):
    (operand, indices), (d_op, d_idx) = args, dims
    dn = dimension_numbers
    if d_idx is None:
        # The batch axis of the operand is taken whole by every window.
        operand = batching.moveaxis(operand, d_op, 0)
        dn = GatherDimensionNumbers(
            offset_dims=(0, *_shift(dn.offset_dims)),
            collapsed_slice_dims=_shift(dn.collapsed_slice_dims),
            start_index_map=_shift(dn.start_index_map),
            operand_batching_dims=_shift(dn.operand_batching_dims),
            start_indices_batching_dims=dn.start_indices_batching_dims)
        sizes = (aval_of(operand).shape[0], *slice_sizes)
    elif d_op is None:
        # More index vectors: the new leading indices axis leads the output.
        indices = batching.moveaxis(indices, d_idx, 0)
        dn = dn._replace(offset_dims=_shift(dn.offset_dims),
                         start_indices_batching_dims=_shift(dn.start_indices_batching_dims))
        sizes = slice_sizes
    else:
        # Example b's indices read example b's operand: a batching axis pair.
        operand = batching.moveaxis(operand, d_op, 0)
        indices = batching.moveaxis(indices, d_idx, 0)
        dn = GatherDimensionNumbers(
            offset_dims=_shift(dn.offset_dims),
            collapsed_slice_dims=_shift(dn.collapsed_slice_dims),
            start_index_map=_shift(dn.start_index_map),
            operand_batching_dims=(0, *_shift(dn.operand_batching_dims)),
            start_indices_batching_dims=(0, *_shift(dn.start_indices_batching_dims)))
        sizes = (1, *slice_sizes)
    return gather_p.bind(operand, indices, dimension_numbers=dn, slice_sizes=tuple(sizes),
                         **params), 0


def _limits(values: Sequence[Any], dtype: np.dtype) -> Any:
    """The largest start of each window, a vector; symbolic ones (shape-polymorphic
    export) are computed from the dimension variables when the program runs."""
    if not is_symbolic_shape(values):
        return np.array(values, dtype)
    return concatenate([reshape(convert_element_type(dimension_as_value(v), dtype), (1,))
                        for v in values], 0)


def _in_bounds(operand_shape: Sequence[int], indices: Any, index_map: Sequence[int],
               window: Sequence[int]) -> Any:
    """Whether each index vector starts a window that fits (axis -1 reduced away)."""
    dtype = aval_of(indices).dtype
    shape = aval_of(indices).shape
    upper = _limits([operand_shape[a] - w for a, w in zip(index_map, window)], dtype)
    upper = broadcast_in_dim(upper, shape, (len(shape) - 1,))
    fits = bitwise_and(ge(indices, full(shape, 0, dtype)), le(indices, upper))
    return reduce_and(fits, (len(shape) - 1,))


def _gather_fill(operand, indices, *, dimension_numbers, slice_sizes, fill_value, **params):
    # As JAX does: gather clamped, then replace the windows that did not fit.
    dn = dimension_numbers
    out = gather_p.bind(operand, indices, dimension_numbers=dn, slice_sizes=slice_sizes,
                        fill_value=None, **{**params, "mode": GatherScatterMode.CLIP})
    out_shape = aval_of(out).shape
    mask = _in_bounds(aval_of(operand).shape, indices, dn.start_index_map,
                      [slice_sizes[a] for a in dn.start_index_map])
    batch_axes = [d for d in range(len(out_shape)) if d not in dn.offset_dims]
    mask = broadcast_in_dim(mask, out_shape, batch_axes)
    dtype = aval_of(operand).dtype
    return select(mask, out, full(out_shape, _fill_value(dtype, fill_value), dtype))


def _gather_lowering(ctx, operand, indices, *, dimension_numbers, slice_sizes,
                     indices_are_sorted, mode, **params):
    if mode == GatherScatterMode.FILL_OR_DROP:
        return lower_fun(_gather_fill, multiple_results=False)(
            ctx, operand, indices, dimension_numbers=dimension_numbers,
            slice_sizes=slice_sizes, indices_are_sorted=indices_are_sorted, mode=mode,
            **params)
    # XLA's gather clamps start indices so windows fit: that is CLIP (and a
    # fine way to keep a broken promise of in-bounds indices safe).
    dn = dimension_numbers
    attr = hlo.GatherDimensionNumbers.get(
        offset_dims=list(dn.offset_dims), collapsed_slice_dims=list(dn.collapsed_slice_dims),
        operand_batching_dims=list(dn.operand_batching_dims),
        start_indices_batching_dims=list(dn.start_indices_batching_dims),
        start_index_map=list(dn.start_index_map),
        index_vector_dim=ctx.avals_in[1].ndim - 1)
    if is_symbolic_shape(slice_sizes):
        return [symbolic_lowering.dynamic_gather(ctx.avals_out[0], operand, indices, attr,
                                                 slice_sizes, indices_are_sorted)]
    op = hlo.GatherOp(operand, indices, attr, list(slice_sizes),
                      indices_are_sorted=indices_are_sorted,
                      results=[aval_to_ir_type(ctx.avals_out[0])])
    return [op.result]


ad.primitive_jvps[gather_p] = _gather_jvp
ad.primitive_transposes[gather_p] = _gather_transpose
batching.primitive_batchers[gather_p] = _gather_batch
register_lowering(gather_p, _gather_lowering)


# --- scatter family: shared rules ---------------------------------------------


def _scatter_to_gather(dn: ScatterDimensionNumbers, operand_shape: Sequence[int],
                       updates_shape: Sequence[int]) -> tuple[GatherDimensionNumbers,
                                                              tuple[int, ...]]:
    """The gather that reads back what a scatter wrote: dimension numbers and
    slice sizes."""
    gather_dn = GatherDimensionNumbers(
        offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims)
    windows = iter(updates_shape[d] for d in dn.update_window_dims)
    dropped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
    sizes = tuple(1 if a in dropped else next(windows) for a in range(len(operand_shape)))
    return gather_dn, sizes


def _gather_back(x: Any, indices: Any, dimension_numbers: ScatterDimensionNumbers,
                 updates_shape: Sequence[int], params: dict, fill_value: Any = 0) -> Any:
    """Reads the updates' windows of `x` back (zero for dropped updates)."""
    dn, sizes = _scatter_to_gather(dimension_numbers, aval_of(x).shape, updates_shape)
    return gather_p.bind(x, indices, dimension_numbers=dn, slice_sizes=sizes,
                         indices_are_sorted=params["indices_are_sorted"],
                         unique_indices=params["unique_indices"], mode=params["mode"],
                         fill_value=fill_value)


def _scatter_abstract_eval(name: str, accepted):
    def rule(operand: ShapedArray, indices: ShapedArray, updates: ShapedArray, *,
             dimension_numbers, **_) -> ShapedArray:
        dn = dimension_numbers
        check_dtypes(name, accepted, operand)
        if operand.dtype != updates.dtype:
            raise TypeError(f"{name} operand and updates must have the same dtype, got "
                            f"{operand.dtype.name} and {updates.dtype.name}")
        _check_indices(name, indices, dn.scatter_dims_to_operand_dims,
                       "scatter_dims_to_operand_dims")
        _check_axes(name, "update_window_dims", dn.update_window_dims, updates.ndim, "updates")
        _check_axes(name, "inserted_window_dims", dn.inserted_window_dims, operand.ndim,
                    "operand")
        _check_axes(name, "scatter_dims_to_operand_dims", dn.scatter_dims_to_operand_dims,
                    operand.ndim, "operand")
        _check_batching(name, operand, indices, dn.operand_batching_dims,
                        dn.scatter_indices_batching_dims, "scatter_indices_batching_dims")
        for field in ("update_window_dims", "inserted_window_dims", "operand_batching_dims"):
            _check_sorted(name, field, getattr(dn, field))
        dropped = set(dn.inserted_window_dims) | set(dn.operand_batching_dims)
        if len(dropped) != len(dn.inserted_window_dims) + len(dn.operand_batching_dims):
            raise TypeError(f"{name} inserted_window_dims {dn.inserted_window_dims} and "
                            f"operand_batching_dims {dn.operand_batching_dims} must be disjoint")
        if set(dn.scatter_dims_to_operand_dims) & set(dn.operand_batching_dims):
            raise TypeError(f"{name} scatter_dims_to_operand_dims "
                            f"{dn.scatter_dims_to_operand_dims} must not contain "
                            f"operand_batching_dims {dn.operand_batching_dims}")
        window_axes = [a for a in range(operand.ndim) if a not in dropped]
        if len(window_axes) != len(dn.update_window_dims):
            raise TypeError(f"{name} update_window_dims {dn.update_window_dims} must have one "
                            f"entry per operand axis not in inserted_window_dims or "
                            f"operand_batching_dims: {len(window_axes)} for operand shape "
                            f"{operand.shape}")
        for a, u in zip(window_axes, dn.update_window_dims):
            if updates.shape[u] > operand.shape[a]:
                raise TypeError(f"{name} update window axis {u} of updates shape "
                                f"{updates.shape} is larger than operand axis {a} of shape "
                                f"{operand.shape}")
        scatter_shape = tuple(d for i, d in enumerate(updates.shape)
                              if i not in dn.update_window_dims)
        if scatter_shape != indices.shape[:-1]:
            raise TypeError(f"{name} updates shape {updates.shape} must have the indices' "
                            f"shape less its index vector, {indices.shape[:-1]}, at the axes "
                            f"not in update_window_dims {dn.update_window_dims}")
        return operand
    return rule


def _scatter_batch(prim):
    def rule(args, dims, *, dimension_numbers, **params):
        (operand, indices, updates), (d_op, d_idx, d_up) = args, dims
        size = next(aval_of(x).shape[d] for x, d in zip(args, dims) if d is not None)
        # The output has the operand's shape, so the operand is always batched.
        operand = batching.at_front(operand, d_op, size)
        updates = batching.at_front(updates, d_up, size)
        dn = dimension_numbers
        if d_idx is None:
            # The batch axis is one more window axis, written whole.
            dn = ScatterDimensionNumbers(
                update_window_dims=(0, *_shift(dn.update_window_dims)),
                inserted_window_dims=_shift(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=_shift(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=_shift(dn.operand_batching_dims),
                scatter_indices_batching_dims=dn.scatter_indices_batching_dims)
        else:
            # Example b's indices write example b's operand: a batching axis pair.
            indices = batching.moveaxis(indices, d_idx, 0)
            dn = ScatterDimensionNumbers(
                update_window_dims=_shift(dn.update_window_dims),
                inserted_window_dims=_shift(dn.inserted_window_dims),
                scatter_dims_to_operand_dims=_shift(dn.scatter_dims_to_operand_dims),
                operand_batching_dims=(0, *_shift(dn.operand_batching_dims)),
                scatter_indices_batching_dims=(0, *_shift(dn.scatter_indices_batching_dims)))
        return prim.bind(operand, indices, updates, dimension_numbers=dn, **params), 0
    return rule


def _clamp_scatter_indices(operand, indices, updates, dn: ScatterDimensionNumbers):
    """Indices clamped so every update window fits (CLIP mode)."""
    _, sizes = _scatter_to_gather(dn, aval_of(operand).shape, aval_of(updates).shape)
    dtype, shape = aval_of(indices).dtype, aval_of(indices).shape
    upper = _limits([aval_of(operand).shape[a] - sizes[a]
                     for a in dn.scatter_dims_to_operand_dims], dtype)
    return clamp(full(shape, 0, dtype), indices,
                 broadcast_in_dim(upper, shape, (len(shape) - 1,)))


def _scalar_type(dtype: np.dtype) -> ir.RankedTensorType:
    return ir.RankedTensorType.get([], element_type(dtype))


@functools.cache
def _combiner(op, dtype: np.dtype) -> Jaxpr:
    """The jaxpr `{ lambda ; a b. let c = op a b in (c,) }` on scalars of `dtype` (one
    object per op and dtype, so equations compare equal and print it once)."""
    aval = ShapedArray((), dtype)
    jaxpr, consts = trace_to_jaxpr(lambda x, y: [op(x, y)], [aval, aval])
    assert not consts
    return jaxpr


def _scatter_lowering(prim):
    def clipped(operand, indices, updates, *, dimension_numbers, **params):
        indices = _clamp_scatter_indices(operand, indices, updates, dimension_numbers)
        return prim.bind(operand, indices, updates, dimension_numbers=dimension_numbers,
                         **{**params, "mode": GatherScatterMode.PROMISE_IN_BOUNDS})

    def rule(ctx, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
             unique_indices, mode, update_jaxpr, update_consts):
        if mode == GatherScatterMode.CLIP:
            return lower_fun(clipped, multiple_results=False)(
                ctx, operand, indices, updates, dimension_numbers=dimension_numbers,
                indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                mode=mode, update_jaxpr=update_jaxpr, update_consts=update_consts)
        # XLA skips updates whose window does not fit: FILL_OR_DROP as it is.
        dn = dimension_numbers
        attr = hlo.ScatterDimensionNumbers.get(
            update_window_dims=list(dn.update_window_dims),
            inserted_window_dims=list(dn.inserted_window_dims),
            input_batching_dims=list(dn.operand_batching_dims),
            scatter_indices_batching_dims=list(dn.scatter_indices_batching_dims),
            scattered_dims_to_operand_dims=list(dn.scatter_dims_to_operand_dims),
            index_vector_dim=ctx.avals_in[1].ndim - 1)
        op = hlo.ScatterOp([aval_to_ir_type(ctx.avals_out[0])], [operand], indices, [updates],
                           attr, indices_are_sorted=indices_are_sorted,
                           unique_indices=unique_indices)
        scalar = _scalar_type(ctx.avals_in[0].dtype)
        block = op.regions[0].blocks.append(scalar, scalar)
        with ir.InsertionPoint(block):
            if update_jaxpr is None:  # plain scatter: the update replaces the entry
                hlo.return_([block.arguments[1]])
            else:
                consts = [constant(np.asarray(c)) for c in update_consts]
                hlo.return_(lower_jaxpr(ctx.module_context, update_jaxpr, consts,
                                        list(block.arguments)))
        return list(op.results)
    return rule


def _scatter_primitive(name: str, accepted):
    prim = standard_primitive(name)
    prim.def_abstract_eval(_scatter_abstract_eval(name, accepted))
    batching.primitive_batchers[prim] = _scatter_batch(prim)
    register_lowering(prim, _scatter_lowering(prim))
    return prim


# How each scatter combines an entry with an update: the `update_jaxpr` it carries
# (None for `scatter`, which replaces; `scatter_apply` brings its own function).
_COMBINE: dict[Any, Any] = {}


def _scatter_params(prim, dtype: np.dtype, params: dict) -> dict:
    """`params` with the update computation of `prim` for operands of `dtype`."""
    op = _COMBINE.get(prim)
    return {**params, "update_jaxpr": None if op is None else _combiner(op, dtype),
            "update_consts": ()}


def _rebind(prim, operand, indices, updates, **params):
    """Binds another scatter with the params of this one (update computation swapped)."""
    return prim.bind(operand, indices, updates,
                     **_scatter_params(prim, aval_of(operand).dtype, params))


def _bind_scatter(prim, operand, scatter_indices, updates, dimension_numbers,
                  indices_are_sorted, unique_indices, mode):
    return _rebind(prim, operand, scatter_indices, updates,
                   dimension_numbers=_tuples(dimension_numbers),
                   indices_are_sorted=bool(indices_are_sorted),
                   unique_indices=bool(unique_indices), mode=GatherScatterMode.from_any(mode))


def _zeros_like(x: Any) -> Any:
    return ad.zeros_like_aval(aval_of(x))


def _linear_scatter_jvp(prim):
    """JVP of a scatter linear in operand and updates together (add, sub)."""
    def rule(primals, tangents, **params):
        operand, indices, updates = primals
        out = prim.bind(operand, indices, updates, **params)
        t_op, _, t_up = tangents
        if type(t_op) is ad.Zero and type(t_up) is ad.Zero:
            return out, ad.Zero.from_primal_value(out)
        return out, prim.bind(ad.instantiate_zeros(t_op), indices, ad.instantiate_zeros(t_up),
                              **params)
    return rule


# --- scatter_add, scatter_sub --------------------------------------------------
scatter_add_p = _scatter_primitive("scatter-add", NUMBER)
scatter_sub_p = _scatter_primitive("scatter-sub", NUMBER)
_COMBINE[scatter_add_p] = add
_COMBINE[scatter_sub_p] = sub


def scatter_add(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: str | GatherScatterMode | None = None
                ) -> Any:
    """`operand` with each window of `updates` added at its index (repeats accumulate).

    >>> rows = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                scatter_dims_to_operand_dims=(0,))
    >>> scatter_add(np.zeros(3, np.float32), np.int32([[0], [2], [0], [7]]),
    ...             np.float32([1, 2, 3, 4]), rows)
    Array([4., 0., 2.], dtype=float32)
    """
    return _bind_scatter(scatter_add_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


def scatter_sub(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: str | GatherScatterMode | None = None
                ) -> Any:
    """`operand` with each window of `updates` subtracted at its index (repeats
    accumulate).

    >>> rows = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                scatter_dims_to_operand_dims=(0,))
    >>> scatter_sub(np.zeros(3, np.float32), np.int32([[0], [2], [0]]),
    ...             np.float32([1, 2, 3]), rows)
    Array([-4.,  0., -2.], dtype=float32)
    """
    return _bind_scatter(scatter_sub_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


def _scatter_add_transpose(ct, operand, indices, updates, *, dimension_numbers, **params):
    ct = ad.instantiate_zeros(ct)
    ct_op = ct if ad.is_undefined_primal(operand) else None
    ct_up = None
    if ad.is_undefined_primal(updates):
        ct_up = _gather_back(ct, indices, dimension_numbers, updates.aval.shape, params)
    return [ct_op, None, ct_up]


def _scatter_sub_transpose(ct, operand, indices, updates, **params):
    ct_op, _, ct_up = _scatter_add_transpose(ct, operand, indices, updates, **params)
    return [ct_op, None, None if ct_up is None else neg(ct_up)]


ad.primitive_jvps[scatter_add_p] = _linear_scatter_jvp(scatter_add_p)
ad.primitive_transposes[scatter_add_p] = _scatter_add_transpose
ad.primitive_jvps[scatter_sub_p] = _linear_scatter_jvp(scatter_sub_p)
ad.primitive_transposes[scatter_sub_p] = _scatter_sub_transpose

# --- scatter_mul --------------------------------------------------------------
scatter_mul_p = _scatter_primitive("scatter-mul", NUMBER)
_COMBINE[scatter_mul_p] = mul


def scatter_mul(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: str | GatherScatterMode | None = None
                ) -> Any:
    """`operand` with each entry multiplied by the updates scattered onto it.

    Differentiating with respect to `updates` needs `unique_indices=True`.

    >>> rows = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                scatter_dims_to_operand_dims=(0,))
    >>> scatter_mul(np.ones(3, np.float32), np.int32([[0], [2], [0]]),
    ...             np.float32([2, 3, 4]), rows)
    Array([8., 1., 3.], dtype=float32)
    """
    return _bind_scatter(scatter_mul_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


def _scatter_mul_jvp(primals, tangents, **params):
    operand, indices, updates = primals
    out = scatter_mul_p.bind(operand, indices, updates, **params)
    t_op, _, t_up = tangents
    t_out = ad.Zero.from_primal_value(out)
    if type(t_op) is not ad.Zero:
        # Linear in the operand: each entry is scaled by the product of its updates.
        t_out = scatter_mul_p.bind(t_op, indices, updates, **params)
    if type(t_up) is not ad.Zero:
        if not params["unique_indices"]:
            raise NotImplementedError(
                "scatter_mul is only differentiable with respect to its updates when "
                "unique_indices=True (with repeated indices the derivative of a product of "
                "updates is not computed); differentiate with respect to the operand only, "
                "or pass unique_indices=True if the indices are unique.")
        # With one update per entry, d(x * u) = x * du where an update lands.
        spread = _rebind(scatter_add_p, _zeros_like(operand), indices, t_up, **params)
        t_out = ad.add_tangents(t_out, mul(operand, spread))
    return out, t_out


def _scatter_mul_transpose(ct, operand, indices, updates, **params):
    if ad.is_undefined_primal(updates):
        raise NotImplementedError("scatter_mul is not linear in its updates: it cannot be "
                                  "transposed with respect to them.")
    return [scatter_mul_p.bind(ad.instantiate_zeros(ct), indices, updates, **params),
            None, None]


ad.primitive_jvps[scatter_mul_p] = _scatter_mul_jvp
ad.primitive_transposes[scatter_mul_p] = _scatter_mul_transpose

# --- scatter_min and scatter_max ----------------------------------------------
_ORDERED = (BOOL, *INT, FLOAT)
scatter_min_p = _scatter_primitive("scatter-min", _ORDERED)
scatter_max_p = _scatter_primitive("scatter-max", _ORDERED)
_COMBINE[scatter_min_p] = min
_COMBINE[scatter_max_p] = max


def scatter_min(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: str | GatherScatterMode | None = None
                ) -> Any:
    """`operand` with each entry the minimum of itself and the updates scattered onto it.

    >>> rows = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                scatter_dims_to_operand_dims=(0,))
    >>> scatter_min(np.float32([1, 5, 5]), np.int32([[0], [1], [1]]),
    ...             np.float32([2, 4, 3]), rows)
    Array([1., 3., 5.], dtype=float32)
    """
    return _bind_scatter(scatter_min_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


def scatter_max(operand: Any, scatter_indices: Any, updates: Any,
                dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
                unique_indices: bool = False, mode: str | GatherScatterMode | None = None
                ) -> Any:
    """`operand` with each entry the maximum of itself and the updates scattered onto it.

    >>> rows = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                scatter_dims_to_operand_dims=(0,))
    >>> scatter_max(np.float32([1, 5, 5]), np.int32([[0], [1], [1]]),
    ...             np.float32([2, 4, 7]), rows)
    Array([2., 7., 5.], dtype=float32)
    """
    return _bind_scatter(scatter_max_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


def _scatter_extremal_jvp(prim):
    def rule(primals, tangents, *, dimension_numbers, **params):
        operand, indices, updates = primals
        out = prim.bind(operand, indices, updates, dimension_numbers=dimension_numbers,
                        **params)
        t_op, _, t_up = tangents
        if type(t_op) is ad.Zero and type(t_up) is ad.Zero:
            return out, ad.Zero.from_primal_value(out)
        # As for max of two values, ties share the derivative: every value equal
        # to the result (the operand entry, the updates that reached it) gets an
        # equal part. Dropped updates read back NaN, so they never win.
        dtype = aval_of(operand).dtype
        won = eq(updates, _gather_back(out, indices, dimension_numbers,
                                       aval_of(updates).shape, params, fill_value=np.nan))
        kept = eq(operand, out)
        one, zero = full(aval_of(updates).shape, 1, dtype), _zeros_like(updates)
        count = _rebind(scatter_add_p, convert_element_type(kept, dtype), indices,
                        select(won, one, zero), dimension_numbers=dimension_numbers, **params)
        t_kept = select(kept, ad.instantiate_zeros(t_op), _zeros_like(operand))
        t_won = _rebind(scatter_add_p, t_kept, indices,
                        select(won, ad.instantiate_zeros(t_up), zero),
                        dimension_numbers=dimension_numbers, **params)
        return out, div(t_won, count)
    return rule


ad.primitive_jvps[scatter_min_p] = _scatter_extremal_jvp(scatter_min_p)
ad.primitive_jvps[scatter_max_p] = _scatter_extremal_jvp(scatter_max_p)

# --- scatter, scatter_apply ----------------------------------------------------
scatter_p = _scatter_primitive("scatter", ANY)


def scatter(operand: Any, scatter_indices: Any, updates: Any,
            dimension_numbers: ScatterDimensionNumbers, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
    """`operand` with windows of `updates` written at their indices.

    When indices repeat, which update lands is unspecified (as in XLA); the
    derivative follows whichever did.

    >>> rows = ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
    ...                                scatter_dims_to_operand_dims=(0,))
    >>> scatter(np.zeros((3, 2), np.float32), np.int32([[2], [-1]]),
    ...         np.float32([[1, 2], [3, 4]]), rows)
    Array([[0., 0.],
           [0., 0.],
           [1., 2.]], dtype=float32)
    """
    return _bind_scatter(scatter_p, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)


def scatter_apply(operand: Any, scatter_indices: Any, func: Callable[[Any], Any],
                  dimension_numbers: ScatterDimensionNumbers, *,
                  update_shape: Sequence[int] = (), indices_are_sorted: bool = False,
                  unique_indices: bool = False, mode: str | GatherScatterMode | None = None
                  ) -> Any:
    """`operand` with `func` applied to the entries at the indices (once per index, so
    repeated indices apply it repeatedly). `update_shape` is the shape the updates of
    the equivalent `scatter` would have. Not differentiable (as in JAX).

    >>> rows = ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
    ...                                scatter_dims_to_operand_dims=(0,))
    >>> scatter_apply(np.ones(3, np.float32), np.int32([[0], [2], [2]]),
    ...               lambda v: mul(v, np.float32(3)), rows, update_shape=(3,))
    Array([3., 1., 9.], dtype=float32)
    """
    dtype = aval_of(operand).dtype
    unused = full(tuple(update_shape), 0, dtype)
    jaxpr, consts = trace_to_jaxpr(lambda x, _: [func(x)], [ShapedArray((), dtype)] * 2)
    return scatter_p.bind(operand, scatter_indices, unused,
                          dimension_numbers=_tuples(dimension_numbers),
                          indices_are_sorted=bool(indices_are_sorted),
                          unique_indices=bool(unique_indices),
                          mode=GatherScatterMode.from_any(mode), update_jaxpr=jaxpr,
                          update_consts=tuple(consts))


def _winners(operand_shape, indices, updates_shape, dn: ScatterDimensionNumbers, params):
    """Which updates a scatter keeps where indices repeat (XLA decides), and which
    operand entries no update reaches: scatter a positive id per update, read the
    ids back (JAX's trick)."""
    ids_shape = tuple(1 if d in dn.update_window_dims else n
                      for d, n in enumerate(updates_shape))
    count = int(np.prod(ids_shape))
    if count >= np.iinfo(np.int32).max:
        raise ValueError(f"scatter's derivative with repeated indices tags updates with "
                         f"int32 ids: {count} updates are too many")
    ids = add(reshape(iota(np.int32, count), ids_shape), np.int32(1))
    ids = broadcast_in_dim(ids, updates_shape, tuple(range(len(updates_shape))))
    zeros = full(operand_shape, 0, np.int32)
    scattered = _rebind(scatter_p, zeros, indices, ids, dimension_numbers=dn, **params)
    landed = eq(ids, _gather_back(scattered, indices, dn, updates_shape, params))
    return landed, eq(scattered, zeros)


def _check_plain(params, what: str) -> None:
    if params["update_jaxpr"] is not None:
        raise TypeError(f"scatter_apply (a scatter with an update function) has no {what}; "
                        "as in JAX, it is not differentiable.")


def _scatter_jvp(primals, tangents, *, dimension_numbers, **params):
    _check_plain(params, "derivative")
    operand, indices, updates = primals
    t_op, _, t_up = tangents
    if type(t_op) is ad.Zero and type(t_up) is ad.Zero:
        out = scatter_p.bind(operand, indices, updates, dimension_numbers=dimension_numbers,
                             **params)
        return out, ad.Zero.from_primal_value(out)
    t_op, t_up = ad.instantiate_zeros(t_op), ad.instantiate_zeros(t_up)
    if params["unique_indices"]:
        out = scatter_p.bind(operand, indices, updates, dimension_numbers=dimension_numbers,
                             **params)
        return out, scatter_p.bind(t_op, indices, t_up, dimension_numbers=dimension_numbers,
                                   **params)
    # Repeated indices: with the winners known, primal and tangent are scatter_adds
    # of the masked values, which keeps the tangent transposable.
    dn = dimension_numbers
    landed, untouched = _winners(aval_of(operand).shape, indices, aval_of(updates).shape, dn,
                                 params)

    def combine(x, u):
        return _rebind(scatter_add_p, select(untouched, x, _zeros_like(x)), indices,
                       select(landed, u, _zeros_like(u)), dimension_numbers=dn, **params)
    return combine(operand, updates), combine(t_op, t_up)


def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers, **params):
    # A scatter is linear in (operand, updates) together: entries that an update
    # overwrote send nothing back to the operand, and each update that landed gets
    # the cotangent of its window (with repeated indices, only the winner does).
    _check_plain(params, "transpose")
    ct = ad.instantiate_zeros(ct)
    dn = dimension_numbers
    updates_aval = updates.aval if ad.is_undefined_primal(updates) else aval_of(updates)
    operand_aval = operand.aval if ad.is_undefined_primal(operand) else aval_of(operand)
    if params["unique_indices"]:
        ct_op = scatter_p.bind(ct, indices, ad.zeros_like_aval(updates_aval),
                               dimension_numbers=dn, **params)
        ct_up = _gather_back(ct, indices, dn, updates_aval.shape, params)
    else:
        landed, untouched = _winners(operand_aval.shape, indices, updates_aval.shape, dn,
                                     params)
        ct_op = select(untouched, ct, _zeros_like(ct))
        back = _gather_back(ct, indices, dn, updates_aval.shape, params)
        ct_up = select(landed, back, _zeros_like(back))
    return [ct_op if ad.is_undefined_primal(operand) else None, None,
            ct_up if ad.is_undefined_primal(updates) else None]


ad.primitive_jvps[scatter_p] = _scatter_jvp
ad.primitive_transposes[scatter_p] = _scatter_transpose


# --- index_take -----------------------------------------------------------------


def index_take(src: Any, idxs: Sequence[Any], axes: Sequence[int]) -> Any:
    """Entries of `src` at the index arrays `idxs` (one 1-D array per axis in `axes`,
    taken modulo that axis's size), with the other axes whole: shape
    `(len(idxs[0]), *other axes)`.

    >>> index_take(np.arange(6, dtype=np.float32).reshape(2, 3),
    ...            (np.int32([1, -1]), np.int32([0, 5])), (0, 1))
    Array([3., 5.], dtype=float32)
    """
    shape = aval_of(src).shape
    axes = tuple(int(a) for a in axes)
    if len(idxs) != len(axes):
        raise ValueError(f"index_take needs one index array per axis: got {len(idxs)} for "
                         f"axes {axes}")
    columns = []
    for i, axis in zip(idxs, axes):
        size = np.array(shape[axis], aval_of(i).dtype)
        wrapped = rem(i, size)  # NumPy's modulo: the sign of the divisor
        wrapped = select(lt(wrapped, _zeros_like(wrapped)), add(wrapped, size), wrapped)
        columns.append(reshape(wrapped, (*aval_of(i).shape, 1)))
    indices = concatenate(columns, 1)
    sizes = tuple(1 if a in axes else d for a, d in enumerate(shape))
    dnums = GatherDimensionNumbers(offset_dims=tuple(range(1, len(shape) - len(axes) + 1)),
                                   collapsed_slice_dims=axes, start_index_map=axes)
    return gather(src, indices, dnums, sizes)
