"""Grouped and scaled contractions: ragged_dot, ragged_dot_general, scaled_dot.

A ragged dot splits one dimension of `lhs` into consecutive groups of the sizes
`group_sizes` and treats each group with its own slice of `rhs`
(`RaggedDotDimensionNumbers` says which dimension, JAX's three modes):

- ragged in a non-contracting dimension of lhs ([m, k] x [g, k, n] -> [m, n]):
  the rows of group i are multiplied by rhs[i];
- ragged in a contracting dimension ([m, k] x [k, n] -> [g, m, n]): group i
  contracts only its share of k;
- ragged in a batch dimension ([b, m, k] x [b, k, n] -> [b, m, n]): the groups
  split the batch, each entry with its own rhs: a batched product.

In the first two modes, rows (or contracting entries) past the last group
contribute zeros. Each is a composition of `dot_general`
with group masks, so it differentiates and batches.

>>> import numpy as np
>>> lhs = np.ones((3, 2), np.float32)
>>> rhs = np.stack([np.eye(2, dtype=np.float32), 2 * np.eye(2, dtype=np.float32)])
>>> ragged_dot(lhs, rhs, np.int32([1, 2]))
Array([[1., 1.],
       [2., 2.],
       [2., 2.]], dtype=float32)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core.trace import aval_of
from lamella.lax.arithmetic import mul
from lamella.lax.contraction import DotDimensionNumbers, PrecisionLike, dot_general
from lamella.lax.conversion import convert_element_type
from lamella.lax.logical import bitwise_not, eq, ge, lt
from lamella.lax.reductions import cumsum, reduce_sum
from lamella.lax.shapes import broadcast_in_dim, broadcasted_iota, reshape, transpose
from lamella.lax.standard import check_out_sharding

__all__ = ["RaggedDotDimensionNumbers", "ragged_dot", "ragged_dot_general", "scaled_dot"]


@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
    """The dot dimension numbers of a ragged dot, the (one) ragged dimension of lhs,
    and the group dimension of rhs (empty unless lhs is ragged in a non-contracting
    dimension)."""

    dot_dimension_numbers: DotDimensionNumbers
    lhs_ragged_dimensions: Sequence[int]
    rhs_group_dimensions: Sequence[int]


_BASIC = RaggedDotDimensionNumbers((((1,), (1,)), ((), ())), (0,), (0,))


def ragged_dot(lhs: Any, rhs: Any, group_sizes: Any, precision: PrecisionLike = None,
               preferred_element_type: Any = None, group_offset: Any = None,
               out_sharding: Any = None) -> Any:
    """lhs [m, k] times rhs [g, k, n], the rows of lhs taken in consecutive groups
    of `group_sizes` [g], group i multiplied by rhs[i]: [m, n].

    >>> ragged_dot(np.ones((2, 1), np.float32), np.float32([[[1]], [[5]]]), np.int32([1, 1]))
    Array([[1.],
           [5.]], dtype=float32)
    """
    return ragged_dot_general(lhs, rhs, group_sizes, _BASIC, precision=precision,
                              preferred_element_type=preferred_element_type,
                              group_offset=group_offset, out_sharding=out_sharding)


def _group_ids(group_sizes: Any, size: int, group_offset: Any) -> Any:
    """For each of `size` positions, the group it falls in (g past the last group):
    shape (*batch, size) for group_sizes of shape (*batch, g). Groups before
    `group_offset` are empty."""
    sizes_aval = aval_of(group_sizes)
    groups = sizes_aval.shape[-1]
    if group_offset is not None:
        skipped = lt(broadcasted_iota(sizes_aval.dtype, sizes_aval.shape, sizes_aval.ndim - 1),
                     broadcast_in_dim(group_offset, sizes_aval.shape, (sizes_aval.ndim - 1,)))
        group_sizes = mul(group_sizes, convert_element_type(bitwise_not(skipped),
                                                            sizes_aval.dtype))
    ends = cumsum(group_sizes, sizes_aval.ndim - 1)
    batch = sizes_aval.shape[:-1]
    nb = len(batch)
    positions = broadcasted_iota(sizes_aval.dtype, (*batch, size, groups), nb)
    passed = ge(positions, broadcast_in_dim(ends, (*batch, size, groups),
                                            (*range(nb), nb + 1)))
    return reduce_sum(convert_element_type(passed, np.int32), (nb + 1,))


def _one_hot(ids: Any, groups: int) -> Any:
    """(*batch, size, g): 1 where position p is in group i."""
    shape = (*aval_of(ids).shape, groups)
    return eq(broadcast_in_dim(ids, shape, tuple(range(len(shape) - 1))),
              broadcasted_iota(np.int32, shape, len(shape) - 1))


def _free(ndim: int, contracting: Sequence[int], batch: Sequence[int]) -> list[int]:
    return [d for d in range(ndim) if d not in contracting and d not in batch]


def ragged_dot_general(lhs: Any, rhs: Any, group_sizes: Any,
                       ragged_dot_dimension_numbers: RaggedDotDimensionNumbers,
                       precision: PrecisionLike = None, preferred_element_type: Any = None,
                       group_offset: Any = None, out_sharding: Any = None) -> Any:
    """A ragged dot with general dimension numbers (see the module docstring):
    `group_sizes` has shape (g,) or (*lhs batch dims, g).

    >>> dn = RaggedDotDimensionNumbers((((1,), (0,)), ((), ())), (1,), ())
    >>> np.asarray(ragged_dot_general(np.ones((1, 3), np.float32),
    ...                               np.ones((3, 1), np.float32), np.int32([1, 2]), dn))[:, 0, 0]
    array([1., 2.], dtype=float32)
    """
    check_out_sharding("ragged_dot_general", out_sharding)
    dn = ragged_dot_dimension_numbers
    (lc, rc), (lb, rb) = dn.dot_dimension_numbers
    lc, rc, lb, rb = (tuple(int(d) for d in ds) for ds in (lc, rc, lb, rb))
    if len(dn.lhs_ragged_dimensions) != 1:
        raise ValueError("ragged_dot_general: lhs_ragged_dimensions must name exactly one "
                         f"dimension, got {dn.lhs_ragged_dimensions}")
    ragged = int(dn.lhs_ragged_dimensions[0])
    lhs_shape = aval_of(lhs).shape
    groups = aval_of(group_sizes).shape[-1]
    nb = len(lb)
    batch_of_sizes = aval_of(group_sizes).ndim - 1

    def dot(x, y, numbers):
        return dot_general(x, y, numbers, precision=precision,
                           preferred_element_type=preferred_element_type)

    lhs_free = _free(len(lhs_shape), lc, lb)
    if ragged in lb:
        # The groups split the batch, and every batch entry uses its own rhs anyway:
        # a plain batched product (as in JAX, entries past the groups included).
        return dot(lhs, rhs, ((lc, rc), (lb, rb)))
    if ragged not in lhs_free and ragged not in lc:
        raise ValueError(f"ragged_dot_general: lhs_ragged_dimensions {ragged} is not a "
                         f"dimension of lhs of shape {lhs_shape}")
    ids = _group_ids(group_sizes, lhs_shape[ragged], group_offset)
    if ragged in lhs_free:
        # Every group's product at once (the group dimension of rhs is a free
        # dimension of the product), then each row keeps its own group's.
        if len(dn.rhs_group_dimensions) != 1:
            raise ValueError("ragged_dot_general: ragged in a non-contracting dimension "
                             "needs one rhs_group_dimensions entry")
        group_dim = int(dn.rhs_group_dimensions[0])
        rhs_free = _free(aval_of(rhs).ndim, rc, rb)
        product = dot(lhs, rhs, ((lc, rc), (lb, rb)))
        out_shape = aval_of(product).shape
        g_axis = nb + len(lhs_free) + rhs_free.index(group_dim)
        mask = broadcast_in_dim(_one_hot(ids, groups), out_shape,
                                (*range(batch_of_sizes), nb + lhs_free.index(ragged), g_axis))
        return reduce_sum(mul(product, convert_element_type(mask, aval_of(product).dtype)),
                          (g_axis,))
    else:
        # Group i contracts only its share of the dimension: one masked copy of lhs
        # per group (on a new last axis), the groups' axis moved to the front.
        lhs_ndim = len(lhs_shape)
        masked_shape = (*lhs_shape, groups)
        mask = broadcast_in_dim(_one_hot(ids, groups), masked_shape,
                                (*(lb[:batch_of_sizes]), ragged, lhs_ndim))
        spread = mul(broadcast_in_dim(lhs, masked_shape, tuple(range(lhs_ndim))),
                     convert_element_type(mask, aval_of(lhs).dtype))
        product = dot(spread, rhs, ((lc, rc), (lb, rb)))
        g_axis = nb + len(lhs_free)  # the last of lhs's free dimensions
        order = [g_axis] + [d for d in range(aval_of(product).ndim) if d != g_axis]
        return transpose(product, order)


def scaled_dot(lhs: Any, rhs: Any, *, lhs_scale: Any = None, rhs_scale: Any = None,
               dimension_numbers: DotDimensionNumbers | None = None,
               preferred_element_type: Any = None) -> Any:
    """(lhs * lhs_scale) @ (rhs * rhs_scale) in `preferred_element_type` (default
    bfloat16), each scale entry applying to a block of consecutive entries along the
    contracting dimension (its size divides the operand's). Without dimension
    numbers, operands are (batch..., m, k) and (batch..., k, n).

    >>> x = np.ones((2, 4), np.float32)
    >>> scaled_dot(x, np.ones((4, 2), np.float32), lhs_scale=np.float32([[1, 2], [1, 2]]),
    ...            preferred_element_type=np.float32)
    Array([[6., 6.],
           [6., 6.]], dtype=float32)
    """
    if dimension_numbers is None:
        n = aval_of(lhs).ndim
        if n < 2:
            raise TypeError("scaled_dot does not support 0-rank and 1-rank operands.")
        dimension_numbers = (((n - 1,), (n - 2,)), (tuple(range(n - 2)), tuple(range(n - 2))))
    (lc, rc), _ = dimension_numbers
    dtype = np.dtype(preferred_element_type) if preferred_element_type is not None \
        else np.dtype("bfloat16")
    lhs = _apply_scale(convert_element_type(lhs, dtype), lhs_scale, lc, dtype)
    rhs = _apply_scale(convert_element_type(rhs, dtype), rhs_scale, rc, dtype)
    return dot_general(lhs, rhs, dimension_numbers)


def _apply_scale(x: Any, scale: Any, contracting: Sequence[int], dtype: np.dtype) -> Any:
    if scale is None:
        return x
    shape = aval_of(x).shape
    scale_shape = aval_of(scale).shape
    axis = int(contracting[0])
    if len(scale_shape) != len(shape) or shape[axis] % scale_shape[axis]:
        raise TypeError(f"scaled_dot: scale of shape {scale_shape} must match the operand's "
                        f"shape {shape} except along the contracting dimension {axis}, whose "
                        "size it must divide")
    block = shape[axis] // scale_shape[axis]
    # Each scale entry repeated `block` times along the contracting axis.
    split = (*shape[:axis], scale_shape[axis], block, *shape[axis + 1:])
    dims = tuple(d if d <= axis else d + 1 for d in range(len(shape)))
    spread = broadcast_in_dim(convert_element_type(scale, dtype), split, dims)
    return mul(x, reshape(spread, shape))
