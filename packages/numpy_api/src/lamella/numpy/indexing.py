"""NumPy indexing (`x[idx]`), functional updates (`x.at[idx].set(v)` and friends),
`take`, `take_along_axis`, `put_along_axis` and `put`, as in jax.numpy.

An index is first parsed into one entry per axis of the operand (with new
size-1 axes inserted for `None` and scalar booleans). Indices made only of
static integers, slices and traced integer scalars lower to `slice`, `rev`,
`dynamic_slice` and `reshape`; everything else (integer arrays, concrete
boolean masks) becomes a single `gather`, and updates a single scatter.

Out-of-bounds indices follow JAX: reading clamps them (unless `mode="fill"`),
updating drops them (unless `mode="clip"`). Static integers too: `x[11]` of ten
elements is `x[9]`, as in JAX; with `config.update("static_index_errors", True)`
such a read is an IndexError naming the index, axis and size instead.

>>> import numpy as np
>>> x = np.arange(6, dtype=np.int32).reshape(2, 3)
>>> getitem(x, (1, slice(None, None, -1)))
Array([5, 4, 3], dtype=int32)
>>> install()
>>> asarray_internal(x).at[0, [0, 2]].add(10)
Array([[10,  1, 12],
       [ 3,  4,  5]], dtype=int32)
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from lamella import lax
from lamella.core import config
from lamella.core import dtypes as core_dtypes
from lamella.core.errors import ConcretizationTypeError, NonConcreteBooleanIndexError
from lamella.core.jit import jit
from lamella.core.shape_poly import DimExpr, dimension_as_value
from lamella.core.trace import Tracer, aval_of
from lamella.lax import runtime
from lamella.lax.conversion import convert_element_type
from lamella.lax.explicit_sharding import updates_like_gather
from lamella.lax.indexing import GatherScatterMode
from lamella.numpy import ufuncs
from lamella.numpy.util import (
    asarray_internal,
    canonicalize_axis,
    check_arraylike,
    concrete_value,
    dim_max,
    dim_min,
    eager_operands_ok,
)

__all__ = ["NonConcreteBooleanIndexError", "getitem", "install", "put", "put_along_axis",
           "take", "take_along_axis"]


# --- parsing an index into one entry per axis -------------------------------------------


class _Entry(NamedTuple):
    """How one axis of the (expanded) operand is indexed.

    kind "slice": `start`, `count` and `step` static (from `slice.indices`).
    kind "int": `value` a static Python int (normalised) or a traced scalar.
    kind "array": `value` an integer array (static NumPy or traced), part of the
    advanced index whose broadcast shape gives result axes.
    """

    kind: str
    value: Any = None
    static: bool = True
    start: int = 0
    count: int = 0
    step: int = 1
    stop: Any = None  # the clamped stop of a slice on an axis of symbolic size


class _Parsed(NamedTuple):
    x: Any                  # the operand with size-1 axes for None and scalar booleans
    entries: list[_Entry]   # one per axis of x
    advanced_first: bool    # whether the advanced result axes lead (NumPy's rule)


def _is_traced_or_array(item: Any) -> bool:
    return isinstance(item, (Tracer, lax.Array))


def _sequence_index(item: Sequence, position: int) -> Any:
    """A list (or nested tuple) in an index: an integer or boolean array."""
    def has(seq, test):
        return any(test(e) or isinstance(e, (list, tuple)) and has(e, test) for e in seq)
    if has(item, lambda e: e is None or e is Ellipsis or isinstance(e, slice)):
        raise TypeError("Using a non-tuple sequence for multidimensional indexing is not "
                        f"allowed (found {item!r} at position {position}); use "
                        "`arr[tuple(seq)]` instead of `arr[seq]`.")
    if len(item) == 0:
        return np.zeros(0, np.int32)  # NumPy reads `x[[]]` as an empty integer index
    if has(item, lambda e: isinstance(e, Tracer)):
        return asarray_internal(item)
    return np.asarray(item)


def _check_integer(dtype: np.dtype, item: Any, position: int) -> None:
    if dtype.kind not in "iu":
        raise TypeError(f"Indexer must have integer or boolean type, got indexer with type "
                        f"{dtype.name} at position {position}, indexer value {item!r}")


def _concrete_mask(mask: Any, position: int) -> np.ndarray:
    try:
        return concrete_value(mask, "a boolean index")
    except ConcretizationTypeError:
        aval = aval_of(mask)
        raise NonConcreteBooleanIndexError(
            f"Array boolean indices must be concrete; got a traced bool{list(aval.shape)} "
            f"mask at position {position}. The shape of x[mask] depends on the mask's "
            "values, which are unknown under jit. Use lamella.numpy.where(mask, x, fill) to "
            "keep the shape, nonzero(mask, size=..., fill_value=...) for a static number "
            "of indices, or apply the mask outside the jitted function.") from None


def _classify(item: Any, position: int) -> tuple:
    """(kind, payload) for one element of an index tuple."""
    if item is None:
        return ("newaxis", None)
    if item is Ellipsis:
        return ("ellipsis", None)
    if isinstance(item, slice):
        return ("slice", item)
    if isinstance(item, (bool, np.bool_)):
        return ("bool", bool(item))
    if isinstance(item, (int, np.integer)):
        return ("int", int(item))
    if isinstance(item, (list, tuple)):
        item = _sequence_index(item, position)
    if isinstance(item, np.ndarray) or _is_traced_or_array(item):
        static = isinstance(item, np.ndarray)
        aval = item if static else aval_of(item)
        if aval.dtype == np.bool_:
            mask = _concrete_mask(item, position)
            return ("bool", bool(mask)) if mask.ndim == 0 else ("mask", mask)
        _check_integer(aval.dtype, item, position)
        if aval.ndim == 0:
            return ("int", int(item)) if static else ("dint", item)
        return ("array", item) if static else ("darray", item)
    if isinstance(item, (float, complex)):
        _check_integer(np.asarray(item).dtype, item, position)
    raise TypeError(f"Indexer at position {position} must be an integer, slice, None, "
                    f"Ellipsis, or an integer or boolean array; got {type(item).__name__} "
                    f"{item!r}")


def _consumed(kind: str, payload: Any) -> int:
    if kind in ("newaxis", "ellipsis", "bool"):
        return 0
    return payload.ndim if kind == "mask" else 1


def _slice_component(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, Tracer):
        raise IndexError(
            "Array slice indices must have static start/stop/step to be used with NumPy "
            "indexing syntax; found a traced value in a slice. To index a statically sized "
            "array at a dynamic position, use lax.dynamic_slice or "
            "lax.dynamic_update_slice.")
    if type(value) is DimExpr:
        return value
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"slice indices must be integers or None, got {value!r}") from None


def _parse(x: Any, index: Any, strict: bool) -> _Parsed:
    """One entry per axis of `x` (after new axes); `strict` makes static integers
    out of range an IndexError."""
    shape = aval_of(x).shape
    items = index if isinstance(index, tuple) else (index,)
    classified = [_classify(item, i) for i, item in enumerate(items)]
    kinds = [k for k, _ in classified]
    if kinds.count("ellipsis") > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_consumed(k, p) for k, p in classified)
    if used > len(shape):
        raise IndexError(f"Too many indices: {len(shape)}-dimensional array indexed with "
                         f"{used} regular indices.")
    has_arrays = any(k in ("array", "darray", "mask", "bool") for k in kinds)
    advanced = [i for i, k in enumerate(kinds)
                if k in ("array", "darray", "mask", "bool")
                or has_arrays and k in ("int", "dint")]
    # NumPy: advanced indices separated by a slice, None or Ellipsis send their
    # result axes to the front.
    advanced_first = bool(advanced) and advanced != list(range(advanced[0], advanced[-1] + 1))

    entries: list[_Entry] = []
    new_axes: list[int] = []
    axis = 0  # the next axis of the original operand
    for kind, payload in classified:
        if kind == "newaxis":
            new_axes.append(len(entries))
            entries.append(_Entry("slice", start=0, count=1, step=1))
        elif kind == "bool":
            new_axes.append(len(entries))
            entries.append(_Entry("array", np.zeros(int(payload), np.int32)))
        elif kind == "ellipsis":
            for _ in range(len(shape) - used):
                entries.append(_Entry("slice", start=0, count=shape[axis], step=1))
                axis += 1
        elif kind == "slice":
            size = shape[axis]
            parts = [_slice_component(v) for v in (payload.start, payload.stop, payload.step)]
            if parts[2] == 0:
                raise ValueError("slice step cannot be zero")
            if type(size) is int and DimExpr not in map(type, parts):
                start, stop, step = slice(*parts).indices(size)
                entries.append(_Entry("slice", start=start,
                                      count=len(range(start, stop, step)), step=step))
            else:
                entries.append(_symbolic_slice(*parts, size))
            axis += 1
        elif kind == "int":
            size = shape[axis]
            if strict and type(size) is int and not -size <= payload < size:
                raise IndexError(f"index {payload} is out of bounds for axis {axis} with "
                                 f"size {size}")
            if type(size) is not int:
                # On a symbolic axis the index is clamped when the program runs (a
                # dynamic_slice, or gather's clamping with arrays), as JAX does.
                entries.append(_Entry("array" if has_arrays else "int",
                                      payload + size if payload < 0 else payload))
                axis += 1
                continue
            value = _normalize_static(np.asarray(payload), size)
            entries.append(_Entry("array" if has_arrays else "int", int(value)))
            axis += 1
        elif kind == "dint":
            entries.append(_Entry("array" if has_arrays else "int", payload, static=False))
            axis += 1
        elif kind == "array" and type(shape[axis]) is not int:
            # Negative indices on a symbolic axis are counted from the end at run time.
            entries.append(_Entry("array", lax.convert_element_type(payload, np.int32),
                                  static=False) if (payload < 0).any()
                           else _Entry("array", payload))
            axis += 1
        elif kind == "array":
            entries.append(_Entry("array", _normalize_static(payload, shape[axis])))
            axis += 1
        elif kind == "darray":
            entries.append(_Entry("array", payload, static=False))
            axis += 1
        else:  # a boolean mask: the integer indices of its True entries
            expected = shape[axis:axis + payload.ndim]
            if payload.shape != expected:
                raise IndexError(f"boolean index did not match shape of indexed array in "
                                 f"index {axis}: got {payload.shape}, expected {expected}")
            entries.extend(_Entry("array", nz.astype(np.int32)) for nz in np.nonzero(payload))
            axis += payload.ndim
    entries.extend(_Entry("slice", start=0, count=d, step=1) for d in shape[axis:])
    if new_axes:
        x = lax.expand_dims(x, new_axes)
    return _Parsed(x, entries, advanced_first)


def _symbolic_slice(start: int | None, stop: int | None, step: int | None,
                    size: Any) -> _Entry:
    """The entry of a slice on an axis of symbolic size, with `slice.indices`'s clamping
    written with `min_dim` / `max_dim` in JAX's order, so that the count is the
    expression JAX gives (``x[:2]`` has ``min(b, 2)`` rows, ``x[1:-1]``
    ``max(0, b - 2)``). Whether a symbolic bound is negative must be decided."""
    step = 1 if step is None else step
    if type(step) is DimExpr:
        raise TypeError(f"A slice's step must be a constant integer, got the symbolic "
                        f"dimension '{step}'")

    def clamp(bound: int | None, default: Any) -> Any:
        if bound is None:
            return default
        if bound >= 0:
            return dim_min(size if step > 0 else size - 1, bound)
        return dim_max(0 if step > 0 else -1, size + bound)

    start = clamp(start, 0 if step > 0 else size - 1)
    stop = clamp(stop, size if step > 0 else -1)
    distance = stop - start if step > 0 else start - stop
    count = dim_max(0, distance + abs(step) - 1) // abs(step)
    return _Entry("slice", start=start, count=count, step=step, stop=stop)


def _normalize_static(index: np.ndarray, size: int) -> np.ndarray:
    """Negative indices counted from the end, then clipped to [-1, size] so that
    out-of-range ones stay out of range in int32."""
    index = np.where(index < 0, index + size, index)
    return np.clip(index, -1, size).astype(np.int32)


def _normalize_traced(index: Any, size: int, dtype: np.dtype) -> Any:
    index = lax.convert_element_type(index, dtype)
    if dtype.kind == "u":
        return index
    offset = np.asarray(size, dtype) if type(size) is not DimExpr \
        else lax.convert_element_type(dimension_as_value(size), dtype)
    return lax.select(lax.lt(index, np.zeros((), dtype)), lax.add(index, offset), index)


# --- basic indexing: slice, rev, dynamic_slice, reshape --------------------------------


def _basic_take(parsed: _Parsed) -> Any:
    x, entries, _ = parsed
    shape = aval_of(x).shape
    bounds, reverse, dynamic, out_shape = [], [], {}, []  # bounds: (start, limit, stride)
    reverse_first = []  # axes of symbolic size sliced with a negative step
    strided = []  # axes of symbolic size sliced with a step other than 1 or -1
    for axis, e in enumerate(entries):
        if e.kind == "slice" and e.stop is not None:
            bounds.append(_symbolic_bounds(e, shape[axis]))
            if e.step < 0:
                reverse_first.append(axis)
            if abs(e.step) != 1:
                strided.append((axis, e))
            out_shape.append(e.count)
        elif e.kind == "slice":
            first = e.start if e.step > 0 else e.start + (e.count - 1) * e.step
            bounds.append((first, first + (e.count - 1) * abs(e.step) + 1, abs(e.step))
                          if e.count else (0, 0, 1))
            if e.step < 0 and e.count > 1:
                reverse.append(axis)
            out_shape.append(e.count)
        elif e.static and type(shape[axis]) is not int:
            bounds.append((0, shape[axis], 1))
            dynamic[axis] = dimension_as_value(e.value) if type(e.value) is DimExpr \
                else np.asarray(e.value, np.int32)
        elif e.static:
            if shape[axis] == 0:
                raise IndexError(f"index {e.value} is out of bounds for axis {axis} with size 0")
            i = min(max(e.value, 0), shape[axis] - 1)  # out-of-range ones clamp (mode="clip")
            bounds.append((i, i + 1, 1))
        else:
            bounds.append((0, shape[axis], 1))
            dynamic[axis] = e.value
    if reverse_first:
        x = lax.rev(x, reverse_first)
    if bounds != [(0, d, 1) for d in shape]:
        starts, limits, strides = zip(*bounds)
        x = lax.slice(x, starts, limits, strides)
    for axis, e in strided:
        x = _every(x, axis, e.count, abs(e.step))
    if reverse:
        x = lax.rev(x, reverse)
    if dynamic:
        sliced = aval_of(x).shape
        sizes = [1 if a in dynamic else d for a, d in enumerate(sliced)]
        x = lax.dynamic_slice(x, [dynamic.get(a, 0) for a in range(len(sliced))], sizes)
    if tuple(out_shape) != aval_of(x).shape:
        x = lax.reshape(x, out_shape)
    return x


def _symbolic_bounds(e: _Entry, size: Any) -> tuple[Any, Any, int]:
    """(start, limit, stride) of `lax.slice` for a slice entry on a symbolic axis, taken
    after reversing the axis when the step is negative (then the bounds are counted
    from the end). The slice takes every element from start to stop; `_every` then
    keeps one in ``|step|``."""
    start, stop = (e.start, e.stop) if e.step > 0 else (size - 1 - e.start, size - 1 - e.stop)
    return start, start + dim_max(0, stop - start), 1


def _every(x: Any, axis: int, count: Any, step: int) -> Any:
    """Every ``step``-th element along the symbolic ``axis`` of ``x``, ``count`` of them:
    padded to ``count * step``, split into rows of ``step``, the first column kept. (A
    strided `lax.slice` would give its own expression for the size, not ``count``.)"""
    shape, dtype = aval_of(x).shape, aval_of(x).dtype
    filler = lax.full((*shape[:axis], count * step - shape[axis], *shape[axis + 1:]), 0, dtype)
    x = lax.concatenate([x, filler], axis)
    x = lax.reshape(x, (*shape[:axis], count, step, *shape[axis + 1:]))
    x = lax.slice_in_dim(x, 0, 1, axis=axis + 1)
    return lax.reshape(x, (*shape[:axis], count, *shape[axis + 1:]))


# --- everything else: one gather (or scatter) -------------------------------------------


class _GatherPlan(NamedTuple):
    indices: Any                 # batch shape + (number of indexed axes,)
    offset_dims: tuple[int, ...]
    collapsed: tuple[int, ...]
    index_map: tuple[int, ...]
    slice_sizes: tuple[int, ...]
    out_shape: tuple[int, ...]


def _broadcast_index_shapes(arrays: list[Any]) -> tuple[int, ...]:
    shapes = [tuple(np.shape(a)) if isinstance(a, np.ndarray) else aval_of(a).shape
              for a in arrays]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        listed = " ".join(str(s) for s in shapes)
        raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together "
                         f"with shapes {listed}") from None


def _plan(parsed: _Parsed) -> _GatherPlan:
    """The gather (indices, dimension numbers, output shape) equivalent to the index."""
    x, entries, advanced_first = parsed
    shape = aval_of(x).shape
    arrays = [e.value for e in entries if e.kind == "array"]
    adv_shape = _broadcast_index_shapes(arrays) if arrays else ()
    out: list[tuple[str, int]] = []      # ("window" | "batch", size) per output axis
    adv_dims: list[int] = []             # batch-axis numbers of the advanced shape
    # (operand axis, value, static, batch axes it spans)
    components: list[tuple[int, Any, bool, tuple[int, ...]]] = []
    n_batch = 0

    def place_advanced():
        nonlocal n_batch
        for d in adv_shape:
            adv_dims.append(n_batch)
            out.append(("batch", d))
            n_batch += 1

    if advanced_first:
        place_advanced()
    collapsed, slice_sizes = [], []
    for axis, e in enumerate(entries):
        if e.kind == "slice" and (e.step == 1 or e.count <= 1):
            out.append(("window", e.count))
            slice_sizes.append(e.count)
            if e.start != 0 and e.count:
                components.append((axis, np.int32(e.start), True, ()))
            continue
        collapsed.append(axis)
        slice_sizes.append(1)
        if e.kind == "slice":  # strided: an index array of its own result axis
            values = (e.start + e.step * np.arange(e.count)).astype(np.int32)
            components.append((axis, values, True, (n_batch,)))
            out.append(("batch", e.count))
            n_batch += 1
        elif e.kind == "int":
            components.append((axis, e.value, e.static, ()))
        else:
            if not adv_dims and not advanced_first:
                place_advanced()
            rank = np.ndim(e.value) if e.static else aval_of(e.value).ndim
            components.append((axis, e.value, e.static,
                               tuple(adv_dims[len(adv_dims) - rank:])))
    batch_shape = tuple(s for k, s in out if k == "batch")
    indices = _index_array(components, shape, batch_shape)
    return _GatherPlan(
        indices, tuple(i for i, (k, _) in enumerate(out) if k == "window"),
        tuple(collapsed), tuple(c[0] for c in components), tuple(slice_sizes),
        tuple(s for _, s in out))


def _index_array(components: list, shape: tuple[int, ...],
                 batch_shape: tuple[int, ...]) -> Any:
    """The components broadcast to `batch_shape` and stacked on a last axis."""
    def spread(value, dims):
        # `dims` are the batch axes the value's axes map to (right-aligned).
        full = [1] * len(batch_shape)
        for d, n in zip(dims, np.shape(value)):
            full[d] = n
        return np.broadcast_to(np.reshape(value, full), batch_shape)

    if all(static for _, _, static, _ in components):
        parts = [spread(v, dims) for _, v, _, dims in components]
        return np.stack(parts, -1).astype(np.int32) if parts else np.zeros(
            (*batch_shape, 0), np.int32)
    wide = any(aval_of(v).dtype.itemsize > 4 for _, v, static, _ in components if not static)
    dtype = core_dtypes.canonicalize_dtype(np.int64 if wide else np.int32)
    parts = []
    for axis, value, static, dims in components:
        if static:
            part = spread(value, dims).astype(dtype)[..., None]
        else:
            value = _normalize_traced(value, shape[axis], dtype)
            part = lax.broadcast_in_dim(value, (*batch_shape, 1), dims)
        parts.append(part)
    return lax.concatenate(parts, len(batch_shape))


def _gather_mode(mode: Any) -> GatherScatterMode:
    # NumPy-style reads clamp out-of-bound indices; CLIP (rather than a promise)
    # keeps the gradient's scatter consistent with that.
    return GatherScatterMode.CLIP if mode is None else GatherScatterMode.from_any(mode)


def _take(arr: Any, index: Any, *, mode: Any = None, fill_value: Any = None,
          indices_are_sorted: bool = False, unique_indices: bool = False) -> Any:
    gather_mode = _gather_mode(mode)
    if fill_value is not None and np.ndim(fill_value) != 0:
        raise ValueError(f"fill_value of an indexed get must be a scalar, got shape "
                         f"{np.shape(fill_value)}")
    x = arr if _is_traced_or_array(arr) else asarray_internal(arr)
    parsed = _parse(x, index, strict=mode is None and config.read("static_index_errors"))
    fills = gather_mode == GatherScatterMode.FILL_OR_DROP
    if not any(e.kind == "array" or fills and e.kind == "int" for e in parsed.entries):
        return _basic_take(parsed)
    plan = _plan(parsed)
    x = parsed.x
    if 0 in plan.out_shape:
        return lax.full_like(x, 0, shape=plan.out_shape)
    shape = aval_of(x).shape
    empty = [a for a in plan.collapsed if shape[a] == 0]
    if empty:
        raise IndexError(f"index is out of bounds for axis {empty[0]} with size 0")
    dnums = lax.GatherDimensionNumbers(offset_dims=plan.offset_dims,
                                       collapsed_slice_dims=plan.collapsed,
                                       start_index_map=plan.index_map)
    return lax.gather(x, plan.indices, dnums, plan.slice_sizes, mode=gather_mode,
                      fill_value=fill_value, indices_are_sorted=indices_are_sorted,
                      unique_indices=unique_indices)


def getitem(arr: Any, index: Any) -> Any:
    """`arr[index]` with NumPy's indexing rules (what `Array.__getitem__` calls).

    Integers, slices, None, Ellipsis, integer arrays (also traced) and concrete
    boolean masks are accepted. Integers out of range are clamped, as in JAX
    (static ones raise an IndexError under the `static_index_errors` flag).

    >>> import numpy as np
    >>> x = np.arange(12, dtype=np.int32).reshape(3, 4)
    >>> getitem(x, (slice(None), [0, 3]))
    Array([[ 0,  3],
           [ 4,  7],
           [ 8, 11]], dtype=int32)
    >>> getitem(x, x > 9)
    Array([10, 11], dtype=int32)
    """
    return _take(arr, index)


# --- updates -----------------------------------------------------------------------------


def _broadcast_values(values: Any, shape: tuple[int, ...]) -> Any:
    v_shape = aval_of(values).shape
    ok = len(v_shape) <= len(shape) and all(
        a in (1, b) for a, b in zip(v_shape[::-1], shape[::-1]))
    if not ok:
        raise ValueError(f"cannot broadcast update values of shape {v_shape} to the indexed "
                         f"shape {shape}")
    if v_shape == shape:
        return values
    return lax.broadcast_in_dim(values, shape, tuple(range(len(shape) - len(v_shape),
                                                           len(shape))))


_SCATTERS: dict[str, tuple[Callable, Callable]] = {
    # name: (scatter primitive wrapper, elementwise equivalent for whole-array indices)
    "set": (lax.scatter, lambda x, v: v),
    "add": (lax.scatter_add, lax.add),
    "mul": (lax.scatter_mul, lax.mul),
    "min": (lax.scatter_min, lax.min),
    "max": (lax.scatter_max, lax.max),
}


def _scatter(arr: Any, index: Any, values: Any, op: str, *, mode: Any,
             indices_are_sorted: bool, unique_indices: bool) -> Any:
    scatter_mode = GatherScatterMode.from_any(mode)
    x = arr if _is_traced_or_array(arr) else asarray_internal(arr)
    aval = aval_of(x)
    # A Python int converts straight to the array's dtype (2**31 + 5 is a valid uint32).
    values = convert_element_type(values if type(values) is int else asarray_internal(values),
                                  aval.dtype, aval.weak_type)
    parsed = _parse(x, index, strict=False)
    plan = _plan(parsed)
    values = _broadcast_values(values, plan.out_shape)
    x_exp = parsed.x
    if 0 in plan.out_shape or any(aval_of(x_exp).shape[a] == 0 for a in plan.collapsed):
        return x
    scatter, elementwise = _SCATTERS[op]
    if not plan.index_map and plan.slice_sizes == aval_of(x_exp).shape:  # the whole array
        out = elementwise(x_exp, lax.reshape(values, aval_of(x_exp).shape))
    else:
        dnums = lax.ScatterDimensionNumbers(update_window_dims=plan.offset_dims,
                                            inserted_window_dims=plan.collapsed,
                                            scatter_dims_to_operand_dims=plan.index_map)
        values = updates_like_gather(x_exp, plan.indices, values, dnums)
        out = scatter(x_exp, plan.indices, values, dnums, mode=scatter_mode,
                      indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)
    return lax.reshape(out, aval.shape) if aval_of(out).shape != aval.shape else out


# --- the eager fast path of x.at[index] updates --------------------------------------------
# An eager update runs as one cached jit (as JAX's does): the index's Arrays are its
# operands, and the rest of the index (ints, slices, None, Ellipsis) is static, so
# it is handled exactly as the op-by-op path handles it.
_INDEX_ARRAY = object()


def _eager_update_ok(values: Any, mode: Any) -> bool:
    if not eager_operands_ok(values):
        return False
    try:
        hash(mode)
    except TypeError:
        return False
    return True


def _split_index(index: Any) -> tuple[tuple, list] | None:
    """(static structure, index Arrays) of an index, or None for other indices."""
    items = index if type(index) is tuple else (index,)
    static, arrays = [], []
    for item in items:
        kind = type(item)
        if kind is runtime.Array and item.dtype != np.bool_:  # masks need their values
            static.append(_INDEX_ARRAY)
            arrays.append(item)
        elif kind is int or item is None or item is Ellipsis:
            static.append(item)
        elif kind is slice and all(type(b) is int or b is None
                                   for b in (item.start, item.stop, item.step)):
            static.append((slice, item.start, item.stop, item.step))
        else:
            return None
    return (type(index) is tuple, tuple(static)), arrays


def _join_index(structure: tuple, arrays: list) -> Any:
    is_tuple, static = structure
    arrays = iter(arrays)
    items = [next(arrays) if item is _INDEX_ARRAY
             else slice(*item[1:]) if type(item) is tuple else item for item in static]
    return tuple(items) if is_tuple else items[0]


def _scatter_joined(arr: Any, arrays: list, values: Any, structure: tuple, op: str, mode: Any,
                    indices_are_sorted: bool, unique_indices: bool) -> Any:
    return _scatter(arr, _join_index(structure, arrays), values, op, mode=mode,
                    indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)


_eager_scatter = jit(_scatter_joined, static_argnums=(3, 4, 5, 6, 7))


class _IndexUpdateRef:
    """`x.at[index]`: reads and functional updates at one index (see `Array.at`)."""

    __slots__ = ("array", "index")

    def __init__(self, array: Any, index: Any):
        self.array, self.index = array, index

    def __repr__(self) -> str:
        return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

    def get(self, *, indices_are_sorted: bool = False, unique_indices: bool = False,
            mode: str | GatherScatterMode | None = None, fill_value: Any = None) -> Any:
        """`x[index]`; `mode="fill"` returns `fill_value` (NaN, or the extreme
        integer, by default) for out-of-bound indices, `"clip"` clamps them."""
        return _take(self.array, self.index, mode=mode, fill_value=fill_value,
                     indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)

    def _update(self, op: str, values: Any, indices_are_sorted: bool, unique_indices: bool,
                mode: Any) -> Any:
        if type(self.array) is runtime.Array and _eager_update_ok(values, mode):
            split = _split_index(self.index)
            if split is not None:
                return _eager_scatter(self.array, split[1], values, split[0], op, mode,
                                      indices_are_sorted, unique_indices)
        return _scatter(self.array, self.index, values, op, mode=mode,
                        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)

    def set(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
        """A copy with `x[index] = values` (out-of-bound updates dropped unless
        `mode="clip"`)."""
        return self._update("set", values, indices_are_sorted, unique_indices, mode)

    def add(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
        """A copy with `x[index] += values`; repeated indices accumulate."""
        return self._update("add", values, indices_are_sorted, unique_indices, mode)

    def subtract(self, values: Any, *, indices_are_sorted: bool = False,
                 unique_indices: bool = False,
                 mode: str | GatherScatterMode | None = None) -> Any:
        """A copy with `x[index] -= values`; repeated indices accumulate."""
        return self._update("add", ufuncs.negative(asarray_internal(values)),
                            indices_are_sorted, unique_indices, mode)

    def multiply(self, values: Any, *, indices_are_sorted: bool = False,
                 unique_indices: bool = False,
                 mode: str | GatherScatterMode | None = None) -> Any:
        """A copy with `x[index] *= values`; repeated indices accumulate."""
        return self._update("mul", values, indices_are_sorted, unique_indices, mode)

    mul = multiply

    def _factors(self, values: Any, indices_are_sorted: bool, unique_indices: bool,
                 mode: Any) -> Any:
        ones = lax.full_like(self.array, 1)
        return _scatter(ones, self.index, values, "mul", mode=mode,
                        indices_are_sorted=indices_are_sorted, unique_indices=unique_indices)

    def divide(self, values: Any, *, indices_are_sorted: bool = False,
               unique_indices: bool = False,
               mode: str | GatherScatterMode | None = None) -> Any:
        """`x / (ones.at[index].multiply(values))`: true division, as in JAX (so
        integer arrays give floats)."""
        return ufuncs.divide(self.array, self._factors(values, indices_are_sorted,
                                                       unique_indices, mode))

    def power(self, values: Any, *, indices_are_sorted: bool = False,
              unique_indices: bool = False,
              mode: str | GatherScatterMode | None = None) -> Any:
        """A copy with `x[index] **= values` (repeated exponents multiply)."""
        return ufuncs.power(self.array, self._factors(values, indices_are_sorted,
                                                      unique_indices, mode))

    def min(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
        """A copy with `x[index] = minimum(x[index], values)`."""
        return self._update("min", values, indices_are_sorted, unique_indices, mode)

    def max(self, values: Any, *, indices_are_sorted: bool = False,
            unique_indices: bool = False, mode: str | GatherScatterMode | None = None) -> Any:
        """A copy with `x[index] = maximum(x[index], values)`."""
        return self._update("max", values, indices_are_sorted, unique_indices, mode)

    def apply(self, func: Callable[[Any], Any], *, indices_are_sorted: bool = False,
              unique_indices: bool = False,
              mode: str | GatherScatterMode | None = None) -> Any:
        """A copy with the elementwise `func` applied at the indexed entries (once
        per entry, even where indices repeat)."""
        x = self.array if _is_traced_or_array(self.array) else asarray_internal(self.array)
        hit = _scatter(lax.full_like(x, False, dtype=np.bool_), self.index, True, "set",
                       mode=mode, indices_are_sorted=indices_are_sorted,
                       unique_indices=unique_indices)
        applied = asarray_internal(func(x))
        if aval_of(applied).shape != aval_of(x).shape:
            raise ValueError(f"at[].apply needs an elementwise function: it returned shape "
                             f"{aval_of(applied).shape} for an input of shape "
                             f"{aval_of(x).shape}")
        return lax.select(hit, lax.convert_element_type(applied, aval_of(x).dtype), x)


class _IndexUpdateHelper:
    """The `at` property of arrays: `x.at[index]` gives an `_IndexUpdateRef`."""

    __slots__ = ("array",)

    def __init__(self, array: Any):
        self.array = array

    def __getitem__(self, index: Any) -> _IndexUpdateRef:
        return _IndexUpdateRef(self.array, index)

    def __repr__(self) -> str:
        return f"_IndexUpdateHelper({self.array!r})"


# --- take and friends --------------------------------------------------------------------


def _integer_indices(name: str, indices: Any) -> Any:
    indices = asarray_internal(indices)
    if aval_of(indices).dtype.kind not in "iu":
        raise TypeError(f"{name} indices must be of integer type, got "
                        f"{aval_of(indices).dtype.name}")
    return indices


def take(a: Any, indices: Any, axis: int | None = None, out: None = None,
         mode: str | None = None, unique_indices: bool = False,
         indices_are_sorted: bool = False, fill_value: Any = None) -> Any:
    """Elements of `a` at `indices` along `axis` (of the flattened `a` when None).

    `mode`: "fill" (default; out-of-bound indices give `fill_value`, NaN for
    inexact dtypes), "clip", "wrap" or "promise_in_bounds"; negative indices
    count from the end except in "clip" mode.

    >>> import numpy as np
    >>> take(np.float32([1, 2, 3]), np.int32([2, -1, 5]))
    Array([ 3.,  3., nan], dtype=float32)
    >>> take(np.float32([1, 2, 3]), np.int32([5, -1]), mode="clip")
    Array([3., 1.], dtype=float32)
    """
    check_arraylike("take", a, indices)
    if out is not None:
        raise NotImplementedError("The 'out' argument to take is not supported.")
    a = asarray_internal(a)
    indices = _integer_indices("take", indices)
    if axis is None:
        a = lax.reshape(a, (int(np.prod(aval_of(a).shape)),))
        axis = 0
    shape = aval_of(a).shape
    axis = canonicalize_axis(axis, len(shape))
    size = shape[axis]
    if mode is None or mode == "fill":
        gather_mode = GatherScatterMode.FILL_OR_DROP
        indices = _normalize_traced(indices, size, _wide(indices))
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to take is not supported.")
    elif mode == "wrap":
        gather_mode = GatherScatterMode.PROMISE_IN_BOUNDS
        indices = lax.convert_element_type(indices, _wide(indices))
        indices = ufuncs.remainder(indices, np.asarray(max(size, 1), aval_of(indices).dtype))
    elif mode == "clip":
        gather_mode = GatherScatterMode.CLIP
    elif mode == "promise_in_bounds":
        gather_mode = GatherScatterMode.PROMISE_IN_BOUNDS
    else:
        raise ValueError(f"Invalid mode {mode!r} for take: use 'fill', 'clip', 'wrap' or "
                         "'promise_in_bounds'")
    idx_shape = aval_of(indices).shape
    out_shape = (*shape[:axis], *idx_shape, *shape[axis + 1:])
    if size == 0 and 0 not in idx_shape:
        raise IndexError("Cannot do a non-empty take() from an empty axis.")
    if 0 in out_shape:
        return lax.full_like(a, 0, shape=out_shape)
    k = len(idx_shape)
    dnums = lax.GatherDimensionNumbers(
        offset_dims=(*range(axis), *range(axis + k, len(out_shape))),
        collapsed_slice_dims=(axis,), start_index_map=(axis,))
    sizes = tuple(1 if d == axis else n for d, n in enumerate(shape))
    return lax.gather(a, lax.expand_dims(indices, (k,)), dnums, sizes, mode=gather_mode,
                      fill_value=fill_value, unique_indices=unique_indices,
                      indices_are_sorted=indices_are_sorted)


def _wide(indices: Any) -> np.dtype:
    """A signed index dtype at least as wide as int32 that holds `indices`."""
    wide = aval_of(indices).dtype.itemsize > 4 or aval_of(indices).dtype == np.uint32
    return core_dtypes.canonicalize_dtype(np.int64 if wide else np.int32)


def _along_axis_args(name: str, arr: Any, indices: Any, axis: int | None
                     ) -> tuple[Any, Any, int]:
    check_arraylike(name, arr, indices)
    arr = asarray_internal(arr)
    indices = _integer_indices(name, indices)
    if axis is None:
        if aval_of(indices).ndim != 1:
            raise ValueError(f"{name} with axis=None needs 1-d indices, got shape "
                             f"{aval_of(indices).shape}")
        arr = lax.reshape(arr, (int(np.prod(aval_of(arr).shape)),))
        axis = 0
    a_shape, i_shape = aval_of(arr).shape, aval_of(indices).shape
    if len(a_shape) != len(i_shape):
        raise ValueError(f"indices and arr must have the same number of dimensions; "
                         f"indices shape {i_shape}, arr shape {a_shape}")
    return arr, indices, canonicalize_axis(axis, len(a_shape))


def take_along_axis(arr: Any, indices: Any, axis: int | None = -1, mode: str | None = None,
                    fill_value: Any = None, *, wrap_negative_indices: bool | None = None) -> Any:
    """`arr` at `indices` along `axis` (the last by default, as in JAX), the other axes
    matched (broadcasting `arr` and `indices` against each other).

    `mode` is "fill" by default (out-of-bound indices give `fill_value`, NaN for
    inexact dtypes) or "clip"; negative indices count from the end unless
    `wrap_negative_indices=False`, which treats them as out of bounds.

    >>> import numpy as np
    >>> x = np.float32([[10, 30, 20], [60, 40, 50]])
    >>> take_along_axis(x, np.int32([[0], [1]]), axis=1)
    Array([[10.],
           [40.]], dtype=float32)
    """
    arr, indices, axis = _along_axis_args("take_along_axis", arr, indices, axis)
    a_shape, i_shape = aval_of(arr).shape, aval_of(indices).shape
    try:
        batch = np.broadcast_shapes(a_shape[:axis] + a_shape[axis + 1:],
                                    i_shape[:axis] + i_shape[axis + 1:])
    except ValueError:
        raise ValueError(f"take_along_axis: indices shape {i_shape} and arr shape {a_shape} "
                         f"do not broadcast outside axis {axis}") from None
    batch = tuple(batch)
    full_a = (*batch[:axis], a_shape[axis], *batch[axis:])
    full_i = (*batch[:axis], i_shape[axis], *batch[axis:])
    arr = _broadcast_values(arr, full_a) if a_shape != full_a else arr
    indices = _broadcast_values(indices, full_i) if i_shape != full_i else indices
    if 0 in full_i:
        return lax.full_like(arr, 0, shape=full_i)
    if a_shape[axis] == 0:
        raise IndexError("Cannot do a non-empty take_along_axis() from an empty axis.")
    mode = "fill" if mode is None else mode
    if wrap_negative_indices is False:
        indices = lax.convert_element_type(indices, _wide(indices))
    else:
        indices = _normalize_traced(indices, a_shape[axis], _wide(indices))
    others = tuple(d for d in range(len(full_a)) if d != axis)
    dnums = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(axis,),
                                       start_index_map=(axis,), operand_batching_dims=others,
                                       start_indices_batching_dims=others)
    return lax.gather(arr, lax.expand_dims(indices, (len(full_i),)), dnums,
                      (1,) * len(full_a), mode=mode, fill_value=fill_value)


def _inplace_error(name: str) -> ValueError:
    return ValueError(f"lamella.numpy.{name} cannot modify arrays in-place, because lamella "
                      "arrays are immutable. Pass inplace=False to instead return an updated "
                      "array.")


def put_along_axis(arr: Any, indices: Any, values: Any, axis: int | None,
                   inplace: bool = True, *, mode: str | None = None) -> Any:
    """A copy of `arr` with `values` written at `indices` along `axis` (the
    functional `numpy.put_along_axis`; `inplace=False` is required).

    >>> import numpy as np
    >>> put_along_axis(np.zeros((2, 3), np.float32), np.int32([[2], [0]]), 5.0, axis=1,
    ...                inplace=False)
    Array([[0., 0., 5.],
           [5., 0., 0.]], dtype=float32)
    """
    if inplace:
        raise _inplace_error("put_along_axis")
    check_arraylike("put_along_axis", values)
    original = aval_of(asarray_internal(arr)).shape
    arr, indices, axis = _along_axis_args("put_along_axis", arr, indices, axis)
    i_shape = aval_of(indices).shape
    index = tuple(indices if d == axis else
                  lax.broadcasted_iota(np.int32, (*[1] * d, n, *[1] * (len(i_shape) - d - 1)), d)
                  for d, n in enumerate(i_shape))
    result = _scatter(arr, index, values, "set", mode=mode, indices_are_sorted=False,
                      unique_indices=False)
    return lax.reshape(result, original) if aval_of(result).shape != original else result


def put(a: Any, ind: Any, v: Any, mode: str | None = None, *, inplace: bool = True) -> Any:
    """A copy of `a` with the flattened entries at `ind` set to `v` (repeated as
    needed); `mode` is "clip" (default) or "wrap", and `inplace=False` is required.

    >>> import numpy as np
    >>> put(np.zeros(5, np.int32), np.int32([0, 2, 9]), np.int32([1, 2]), inplace=False)
    Array([1, 0, 2, 0, 1], dtype=int32)
    """
    if inplace:
        raise _inplace_error("put")
    check_arraylike("put", a, ind, v)
    a, ind, v = asarray_internal(a), _integer_indices("put", ind), asarray_internal(v)
    shape = aval_of(a).shape
    size, n_ind, n_v = (int(np.prod(aval_of(t).shape)) for t in (a, ind, v))
    if not size or not n_ind or not n_v:
        return a
    ind = lax.convert_element_type(lax.reshape(ind, (n_ind,)), _wide(ind))
    if mode is None or mode == "clip":
        ind = lax.clamp(np.asarray(0, aval_of(ind).dtype), ind,
                        np.asarray(size - 1, aval_of(ind).dtype))
    elif mode == "wrap":
        ind = ufuncs.remainder(ind, np.asarray(size, aval_of(ind).dtype))
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to put is not supported.")
    else:
        raise ValueError(f"put mode should be one of 'wrap' or 'clip'; got {mode!r}")
    v = lax.reshape(v, (n_v,))
    if n_v != n_ind:  # NumPy repeats the values cyclically
        reps = -(-n_ind // n_v)
        v = lax.slice(lax.reshape(lax.broadcast_in_dim(v, (reps, n_v), (1,)), (reps * n_v,)),
                      (0,), (n_ind,))
    flat = _scatter(lax.reshape(a, (size,)), ind, v, "set", mode="promise_in_bounds",
                    indices_are_sorted=False, unique_indices=False)
    return lax.reshape(flat, shape)


# --- installation ------------------------------------------------------------------------


def _getitem_method(self, index):
    return _take(self, index)


def install() -> None:
    """Gives Arrays and tracers `__getitem__` and the `at` property.

    >>> install()
    >>> asarray_internal(np.float32([1, 2, 3])).at[1].set(0.5)[:2]
    Array([1. , 0.5], dtype=float32)
    """
    methods = {"__getitem__": _getitem_method,
               "at": property(_IndexUpdateHelper, doc=_IndexUpdateHelper.__doc__)}
    runtime.install_array_methods(methods)
    for name, method in methods.items():
        setattr(Tracer, name, method)
