"""Segment reductions, `jax.ops.segment_sum` / `_prod` / `_max` / `_min`: data[i] is
combined into output row segment_ids[i], in one scatter.

As in JAX: ids outside [0, num_segments) are dropped (`mode="clip"` clamps them
instead), empty segments hold the operation's identity (0, 1, the dtype's lowest or
highest value), and `num_segments` must be given under jit (otherwise it is
max(segment_ids) + 1, read from concrete ids). With `bucket_size` the ids are
split into buckets of that many, each scattered on its own (independent work for
the compiler), and the buckets' results are combined.

>>> import numpy as np
>>> segment_sum(np.float32([1, 2, 3, 4]), np.int32([0, 0, 2, 2]), num_segments=3)
Array([3., 0., 7.], dtype=float32)
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

import lamella.numpy as lnp
from lamella import lax
from lamella.core.trace import aval_of
from lamella.lax.indexing import GatherScatterMode
from lamella.numpy.placement import check_out_sharding
from lamella.numpy.util import concrete_value

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]


def _lowest(dtype: np.dtype) -> Any:
    if dtype == np.bool_:
        return False
    return -np.inf if lnp.issubdtype(dtype, np.inexact) else lnp.iinfo(dtype).min


def _highest(dtype: np.dtype) -> Any:
    if dtype == np.bool_:
        return True
    return np.inf if lnp.issubdtype(dtype, np.inexact) else lnp.iinfo(dtype).max


# name: (the `.at[...]` update, the reduction over buckets, the empty segment's value)
_OPS: dict[str, tuple[str, Callable[..., Any], Callable[[np.dtype], Any]]] = {
    "segment_sum": ("add", lnp.sum, lambda dt: 0),
    "segment_prod": ("multiply", lnp.prod, lambda dt: 1),
    "segment_max": ("max", lnp.max, _lowest),
    "segment_min": ("min", lnp.min, _highest),
}


def _segment(name: str, data: Any, segment_ids: Any, num_segments: Any,
             indices_are_sorted: bool, unique_indices: bool, bucket_size: Any, mode: Any,
             out_sharding: Any) -> Any:
    check_out_sharding(name, out_sharding)
    update, combine, identity = _OPS[name]
    data, ids = lnp.asarray(data), lnp.asarray(segment_ids)
    d_shape, i_shape = aval_of(data).shape, aval_of(ids).shape
    if not lnp.issubdtype(aval_of(ids).dtype, np.integer):
        raise TypeError(f"{name}: segment_ids must be integers, got {aval_of(ids).dtype}")
    if d_shape[:len(i_shape)] != i_shape:
        raise ValueError(f"{name}: segment_ids of shape {i_shape} must match the leading "
                         f"axes of data, of shape {d_shape}")
    dtype = aval_of(data).dtype
    if dtype == np.bool_ and update in ("add", "multiply"):
        raise TypeError(f"{name} is not defined for booleans: convert data to a number "
                        "first (e.g. data.astype(int) to count)")
    if num_segments is None:
        values = concrete_value(ids, f"segment_ids, when the num_segments argument of {name} "
                                     "is not given,")
        num_segments = int(values.max()) + 1 if values.size else 0
    num_segments = operator.index(concrete_value(num_segments, f"the num_segments argument "
                                                               f"of {name}"))
    count = math.prod(i_shape)
    rows = d_shape[len(i_shape):]
    data = lax.reshape(data, (count, *rows))
    ids = lax.reshape(ids, (count,))
    mode = GatherScatterMode.FILL_OR_DROP if mode is None else GatherScatterMode.from_any(mode)
    # Segment ids are not NumPy indices: a negative one is out of range, not counted
    # from the end, so it is dropped (or clamped to 0), never wrapped.
    ids = lax.convert_element_type(ids, np.int32)
    if mode == GatherScatterMode.FILL_OR_DROP:
        ids = lax.select(lax.lt(ids, np.int32(0)), lax.full_like(ids, num_segments), ids)
    elif mode == GatherScatterMode.CLIP:
        ids = lax.clamp(np.int32(0), ids, np.int32(max(num_segments - 1, 0)))
    empty = lnp.full((num_segments, *rows), identity(dtype), dtype)
    if bucket_size is None or count <= bucket_size:
        return getattr(empty.at[ids], update)(data, indices_are_sorted=indices_are_sorted,
                                              unique_indices=unique_indices, mode=mode)
    # Bucket b holds elements [b * bucket_size, (b + 1) * bucket_size): one scatter into
    # a (buckets, num_segments, ...) array, then one reduction over the buckets.
    buckets = -(-count // operator.index(bucket_size))
    bucket_of = lax.div(lax.iota(np.int32, count), np.int32(bucket_size))
    stacked = lnp.full((buckets, num_segments, *rows), identity(dtype), dtype)
    stacked = getattr(stacked.at[bucket_of, ids], update)(
        data, indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)
    return lax.convert_element_type(combine(stacked, axis=0), dtype)


def segment_sum(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: Any = None,
                out_sharding: Any = None) -> Any:
    """Sums of `data` over segments: out[s] = sum of data[i] with segment_ids[i] == s.

    >>> import numpy as np
    >>> segment_sum(np.int32([1, 2, 3]), np.int32([1, 1, 0]))
    Array([3, 3], dtype=int32)
    """
    return _segment("segment_sum", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode, out_sharding)


def segment_prod(data: Any, segment_ids: Any, num_segments: int | None = None,
                 indices_are_sorted: bool = False, unique_indices: bool = False,
                 bucket_size: int | None = None, mode: Any = None,
                 out_sharding: Any = None) -> Any:
    """Products of `data` over segments (1 for an empty segment).

    >>> import numpy as np
    >>> segment_prod(np.float32([2, 3, 4]), np.int32([0, 0, 2]), num_segments=3)
    Array([6., 1., 4.], dtype=float32)
    """
    return _segment("segment_prod", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode, out_sharding)


def segment_max(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: Any = None,
                out_sharding: Any = None) -> Any:
    """Maxima of `data` over segments (-inf, or the dtype's minimum, for an empty one).

    >>> import numpy as np
    >>> segment_max(np.float32([2, 5, 4]), np.int32([0, 0, 2]), num_segments=3)
    Array([  5., -inf,   4.], dtype=float32)
    """
    return _segment("segment_max", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode, out_sharding)


def segment_min(data: Any, segment_ids: Any, num_segments: int | None = None,
                indices_are_sorted: bool = False, unique_indices: bool = False,
                bucket_size: int | None = None, mode: Any = None,
                out_sharding: Any = None) -> Any:
    """Minima of `data` over segments (inf, or the dtype's maximum, for an empty one).

    >>> import numpy as np
    >>> segment_min(np.int32([2, 5, 4]), np.int32([0, 0, 2]), num_segments=3)
    Array([         2, 2147483647,          4], dtype=int32)
    """
    return _segment("segment_min", data, segment_ids, num_segments, indices_are_sorted,
                    unique_indices, bucket_size, mode, out_sharding)
