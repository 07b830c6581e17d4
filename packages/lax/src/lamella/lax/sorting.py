"""Sorting: `sort` (several operands ordered by the first `num_keys`),
`sort_key_val` and `top_k`.

Each primitive comes with its shape rule, JVP, batching rule and lowering.
`sort` lowers to one `stablehlo.sort` whose comparator orders floats like
NumPy: -0.0 ties with 0.0 and NaNs (of either sign) come last, because the
comparator canonicalizes zeros and NaNs before a total-order comparison, as
JAX's does. `top_k` lowers to `chlo.top_k`.

Derivatives only ever permute tangents. The JVP of `sort` sorts an iota along
with the operands to learn the permutation, inverts it (one more sort), and
moves each tangent to its destination by sorting it with the destination
indices as keys. That is `sort` again, linear in its non-key operands, and its
transpose is a sort by the forward permutation: the permutation's inverse.
The JVP of `top_k` picks the tangents at the returned indices with a one-hot
`dot_general`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad, batching, dtypes
from lamella.core.trace import aval_of
from lamella.lax.contraction import dot_general
from lamella.lax.conversion import convert_element_type
from lamella.lax.logical import eq
from lamella.lax.lowering import (
    aval_to_ir_type,
    chlo,
    constant,
    hlo,
    ir,
    lower_fun,
    register_lowering,
)
from lamella.lax.runtime import approx_top_k_output_size
from lamella.lax.shapes import broadcasted_iota, expand_dims, slice_in_dim, transpose
from lamella.lax.standard import (
    BOOL,
    COMPLEX,
    FLOAT,
    SINT,
    UINT,
    category,
    check_dtypes,
    standard_primitive,
)

__all__ = ["approx_max_k", "approx_min_k", "approx_top_k_p", "sort", "sort_key_val", "sort_p",
           "top_k", "top_k_p"]

_SORTABLE = (BOOL, SINT, UINT, FLOAT, COMPLEX)


# --- sort ---------------------------------------------------------------------------

sort_p = standard_primitive("sort", multiple_results=True)


def sort(operand: Any, dimension: int = -1, is_stable: bool = True, num_keys: int = 1) -> Any:
    """Sorts along `dimension`.

    `operand` is an array, or a sequence of arrays of one shape that are
    permuted together, ordered lexicographically by the first `num_keys` of
    them. Floats order like NumPy: NaNs last, -0.0 equal to 0.0 (ties keep
    their order when `is_stable`). Complex numbers order by real, then
    imaginary part.

    >>> import numpy as np
    >>> sort(np.array([3., np.nan, -1., 2.], np.float32))
    Array([-1.,  2.,  3., nan], dtype=float32)
    >>> sort((np.array([2, 1, 2], np.int32), np.array([0., 1., 2.], np.float32)))
    (Array([1, 2, 2], dtype=int32), Array([1., 0., 2.], dtype=float32))
    """
    if isinstance(operand, Sequence) and not isinstance(operand, (str, bytes)):
        operands = tuple(operand)
        if not operands:
            raise TypeError("sort: needs at least one operand")
        ndim = aval_of(operands[0]).ndim
        return tuple(sort_p.bind(*operands, dimension=_canonical_dimension(dimension, ndim),
                                 is_stable=bool(is_stable), num_keys=int(num_keys)))
    ndim = aval_of(operand).ndim
    if int(num_keys) != 1:
        raise ValueError(f"sort: num_keys={num_keys} needs that many operands, got one array")
    (out,) = sort_p.bind(operand, dimension=_canonical_dimension(dimension, ndim),
                         is_stable=bool(is_stable), num_keys=1)
    return out


def sort_key_val(keys: Any, values: Any, dimension: int = -1, is_stable: bool = True
                 ) -> tuple[Any, Any]:
    """Sorts `keys` along `dimension` and permutes `values` the same way.

    >>> import numpy as np
    >>> sort_key_val(np.array([3, 1, 2], np.int32), np.array([10., 20., 30.], np.float32))
    (Array([1, 2, 3], dtype=int32), Array([20., 30., 10.], dtype=float32))
    """
    return sort((keys, values), dimension=dimension, is_stable=is_stable, num_keys=1)


def _canonical_dimension(dimension: int, ndim: int) -> int:
    if not -ndim <= int(dimension) < ndim:
        raise ValueError(f"sort: dimension {dimension} out of range for operands of rank {ndim}")
    return int(dimension) % ndim


@sort_p.def_abstract_eval
def _sort_abstract_eval(*avals: ShapedArray, dimension, is_stable, num_keys):
    check_dtypes("sort", _SORTABLE, *avals)
    if len({a.shape for a in avals}) > 1:
        raise TypeError(f"sort: operands must have one shape, got "
                        f"{', '.join(str(a.shape) for a in avals)}")
    if not 1 <= num_keys <= len(avals):
        raise ValueError(f"sort: num_keys={num_keys} must be between 1 and the number of "
                         f"operands ({len(avals)})")
    if not 0 <= dimension < avals[0].ndim:
        raise ValueError(f"sort: dimension {dimension} out of range for operands of rank "
                         f"{avals[0].ndim}")
    return [ShapedArray(a.shape, a.dtype, a.weak_type) for a in avals]


def _index_dtype(size: int) -> np.dtype:
    return np.dtype(np.int32) if size < 2 ** 31 else dtypes.canonicalize_dtype(np.int64)


def _positions(shape: tuple[int, ...], dimension: int) -> Any:
    return broadcasted_iota(_index_dtype(shape[dimension]), shape, dimension)


def _move(dest: Any, tangents: Sequence[Any], dimension: int) -> list[Any]:
    """Each tangent with its element i moved to position dest[i] along `dimension`;
    `dest` is a permutation along it, so the order of ties never matters."""
    return sort_p.bind(dest, *tangents, dimension=dimension, is_stable=True, num_keys=1)[1:]


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    shape = aval_of(primals[0]).shape
    positions = _positions(shape, dimension)
    *outs, perm = sort_p.bind(*primals, positions, dimension=dimension, is_stable=is_stable,
                              num_keys=num_keys)
    # out[j] = x[perm[j]], so element i goes to dest[i], the inverse permutation.
    _, dest = sort_p.bind(perm, positions, dimension=dimension, is_stable=True, num_keys=1)
    live = [i for i, t in enumerate(tangents)
            if type(t) is not ad.Zero and aval_of(t).dtype != dtypes.float0]
    moved = dict(zip(live, _move(dest, [tangents[i] for i in live], dimension)))
    return outs, [moved[i] if i in moved else ad.Zero.from_primal_value(o)
                  for i, o in enumerate(outs)]


def _sort_transpose(cts, *operands, dimension, is_stable, num_keys):
    keys = operands[:num_keys]
    if any(ad.is_undefined_primal(k) for k in keys):
        raise NotImplementedError("sort: can't transpose with respect to the sort keys; sort is "
                                  "linear only in its non-key operands")
    linear = [i for i in range(num_keys, len(operands)) if ad.is_undefined_primal(operands[i])]
    shape = aval_of(keys[0]).shape
    perm = sort_p.bind(*keys, _positions(shape, dimension), dimension=dimension,
                       is_stable=True, num_keys=num_keys)[-1]
    # Forward, out[j] = x[perm[j]]; backward, ct_x[perm[j]] = ct[j]: ct moved to perm.
    back = _move(perm, [ad.instantiate_zeros(cts[i]) for i in linear], dimension)
    result: list[Any] = [None] * len(operands)
    for i, ct in zip(linear, back):
        result[i] = ct
    return result


def _sort_batch(args, dims, *, dimension, is_stable, num_keys):
    size = next(aval_of(x).shape[d] for x, d in zip(args, dims) if d is not None)
    args = [batching.at_front(x, d, size) for x, d in zip(args, dims)]
    outs = sort_p.bind(*args, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return outs, [0] * len(outs)


def _scalar_type(dtype: np.dtype) -> ir.RankedTensorType:
    return aval_to_ir_type(ShapedArray((), dtype))


def _compare(a, b, direction: str, compare_type: str):
    return hlo.compare(a, b, hlo.ComparisonDirectionAttr.get(direction),
                       compare_type=hlo.ComparisonTypeAttr.get(compare_type))


def _canonical_float(x, dtype: np.dtype):
    # -0.0 -> 0.0 and every NaN -> +NaN, so that the total order below ties the
    # zeros (keeping a stable sort stable) and puts all NaNs last.
    zero, nan = constant(0, dtype), constant(np.nan, dtype)
    x = hlo.select(_compare(x, zero, "EQ", "FLOAT"), zero, x)
    return hlo.select(_compare(x, x, "NE", "FLOAT"), nan, x)


def _less_and_equal(a, b, dtype: np.dtype):
    """(a < b, a == b) in sort order, for scalars of `dtype`."""
    kind = category(dtype)
    if kind == COMPLEX:
        part = np.dtype(np.float64 if dtype == np.complex128 else np.float32)
        re_lt, re_eq = _less_and_equal(hlo.real(a), hlo.real(b), part)
        im_lt, im_eq = _less_and_equal(hlo.imag(a), hlo.imag(b), part)
        return hlo.or_(re_lt, hlo.and_(re_eq, im_lt)), hlo.and_(re_eq, im_eq)
    if kind == FLOAT:
        a, b = _canonical_float(a, dtype), _canonical_float(b, dtype)
        compare_type = "TOTALORDER"
    else:
        compare_type = "SIGNED" if kind == SINT else "UNSIGNED"
    return _compare(a, b, "LT", compare_type), _compare(a, b, "EQ", compare_type)


def _sort_lowering(ctx, *operands, dimension, is_stable, num_keys):
    op = hlo.SortOp([aval_to_ir_type(a) for a in ctx.avals_out], list(operands),
                    dimension=dimension, is_stable=is_stable)
    scalar_types = [_scalar_type(a.dtype) for a in ctx.avals_in]
    # The comparator takes (lhs, rhs) per operand, interleaved.
    block = op.regions[0].blocks.append(*(t for s in scalar_types for t in (s, s)))
    with ir.InsertionPoint(block):
        args = block.arguments
        less = None
        # Lexicographic: less_k or (equal_k and less on the later keys).
        for k in reversed(range(num_keys)):
            lt, equal = _less_and_equal(args[2 * k], args[2 * k + 1], ctx.avals_in[k].dtype)
            less = lt if less is None else hlo.or_(lt, hlo.and_(equal, less))
        hlo.return_([less])
    return list(op.results)


ad.primitive_jvps[sort_p] = _sort_jvp
ad.primitive_transposes[sort_p] = _sort_transpose
batching.primitive_batchers[sort_p] = _sort_batch
register_lowering(sort_p, _sort_lowering)


# --- top_k ----------------------------------------------------------------------------

top_k_p = standard_primitive("top_k", multiple_results=True)


def top_k(operand: Any, k: int, *, axis: int = -1) -> tuple[Any, Any]:
    """The `k` largest entries along `axis` (default the last), in descending order,
    and their int32 indices (the lower index first among equal values; NaN counts
    as largest).

    >>> import numpy as np
    >>> top_k(np.array([1., 5., 3., 5.], np.float32), 2)
    (Array([5., 5.], dtype=float32), Array([1, 3], dtype=int32))
    >>> top_k(np.array([[1., 5.], [3., 2.]], np.float32), 1, axis=0)[1]
    Array([[1, 0]], dtype=int32)
    """
    ndim = aval_of(operand).ndim
    if ndim < 1:
        raise TypeError("top_k: operand must have at least one dimension, got a scalar")
    if not -ndim <= axis < ndim:
        raise ValueError(f"top_k: axis {axis} is out of bounds for an operand of rank {ndim}")
    return tuple(top_k_p.bind(operand, k=int(k), axis=axis % ndim))


@top_k_p.def_abstract_eval
def _top_k_abstract_eval(x: ShapedArray, *, k, axis):
    check_dtypes("top_k", (BOOL, SINT, UINT, FLOAT), x)
    if not 0 <= k <= x.shape[axis]:
        raise ValueError(f"top_k: k={k} must be between 0 and the size of axis {axis} "
                         f"({x.shape[axis]}) of the operand of shape {x.shape}")
    shape = x.shape[:axis] + (k,) + x.shape[axis + 1:]
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, np.dtype(np.int32))]


def _pick(t, indices, axis: int):
    """`t` at `indices` along `axis` (a linear map of t with an obvious transpose):
    contracting one_hot[..., j, i] = (indices[..., j] == i) with t over i."""
    ndim = aval_of(t).ndim
    last = ndim - 1
    if axis != last:
        swap = tuple(range(axis)) + tuple(range(axis + 1, ndim)) + (axis,)
        back = tuple(np.argsort(swap))
        return transpose(_pick(transpose(t, swap), transpose(indices, swap), last), back)
    shape, k = aval_of(t).shape, aval_of(indices).shape[-1]
    one_hot = eq(expand_dims(indices, (ndim,)),
                 broadcasted_iota(np.int32, (*shape[:-1], k, shape[-1]), ndim))
    one_hot = convert_element_type(one_hot, aval_of(t).dtype)
    batch = tuple(range(ndim - 1))
    return dot_general(one_hot, t, (((ndim,), (ndim - 1,)), (batch, batch)),
                       precision="highest")


def _top_k_jvp(primals, tangents, *, k, axis):
    (x,), (t,) = primals, tangents
    values, indices = top_k_p.bind(x, k=k, axis=axis)
    if type(t) is ad.Zero:
        return [values, indices], [ad.Zero.from_primal_value(values),
                                   ad.Zero.from_primal_value(indices)]
    return [values, indices], [_pick(t, indices, axis), ad.Zero.from_primal_value(indices)]


def _top_k_batch(args, dims, *, k, axis):
    (x,), (d,) = args, dims
    return top_k_p.bind(x, k=k, axis=axis + (d <= axis)), [d, d]


def _top_k_lowering(ctx, x, *, k, axis):
    aval = ctx.avals_in[0]
    last = aval.ndim - 1
    if axis == last:
        return list(chlo.top_k(x, k, results=[aval_to_ir_type(a) for a in ctx.avals_out]))
    swap = [*range(axis), *range(axis + 1, aval.ndim), axis]
    back = [int(i) for i in np.argsort(swap)]
    moved = [a.update(shape=tuple(a.shape[i] for i in swap)) for a in ctx.avals_out]
    outs = chlo.top_k(hlo.transpose(x, swap), k, results=[aval_to_ir_type(a) for a in moved])
    return [hlo.transpose(o, back) for o in outs]


ad.primitive_jvps[top_k_p] = _top_k_jvp
batching.primitive_batchers[top_k_p] = _top_k_batch
register_lowering(top_k_p, _top_k_lowering)


# --- approx_max_k, approx_min_k -------------------------------------------------------

approx_top_k_p = standard_primitive("approx_top_k", multiple_results=True)


def approx_max_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> tuple[Any, Any]:
    """The `k` largest entries along `reduction_dimension` and their indices, as XLA's
    approximate top-k. On CPU it is exact (sort and slice), so `recall_target` is met
    with recall 1. With `aggregate_to_topk=False` the result keeps the longer prefix
    of the sorted entries that an approximate pass would have produced.

    >>> import numpy as np
    >>> approx_max_k(np.float32([3, 1, 4, 1, 5]), 2)
    (Array([5., 4.], dtype=float32), Array([4, 2], dtype=int32))
    """
    return _approx_top_k(operand, k, reduction_dimension, recall_target, True,
                         reduction_input_size_override, aggregate_to_topk)


def approx_min_k(operand: Any, k: int, reduction_dimension: int = -1,
                 recall_target: float = 0.95, reduction_input_size_override: int = -1,
                 aggregate_to_topk: bool = True) -> tuple[Any, Any]:
    """The `k` smallest entries along `reduction_dimension` and their indices (see
    `approx_max_k`; NaN counts as largest, so it comes last).

    >>> import numpy as np
    >>> approx_min_k(np.float32([3, 1, 4, 1, 5]), 2)
    (Array([1., 1.], dtype=float32), Array([1, 3], dtype=int32))
    """
    return _approx_top_k(operand, k, reduction_dimension, recall_target, False,
                         reduction_input_size_override, aggregate_to_topk)


def _approx_top_k(operand, k, reduction_dimension, recall_target, is_max_k,
                  reduction_input_size_override, aggregate_to_topk):
    return tuple(approx_top_k_p.bind(
        operand, k=int(k), reduction_dimension=int(reduction_dimension),
        recall_target=float(recall_target), is_max_k=bool(is_max_k),
        reduction_input_size_override=int(reduction_input_size_override),
        aggregate_to_topk=bool(aggregate_to_topk)))


def _approx_size(x: ShapedArray, k, reduction_dimension, recall_target,
                 reduction_input_size_override, aggregate_to_topk) -> int:
    if aggregate_to_topk:
        return k
    return approx_top_k_output_size(x.shape[reduction_dimension], x.ndim, k, recall_target,
                                    False, reduction_input_size_override)


@approx_top_k_p.def_abstract_eval
def _approx_top_k_abstract_eval(x: ShapedArray, *, k, reduction_dimension, recall_target,
                                is_max_k, reduction_input_size_override, aggregate_to_topk):
    if k <= 0:
        raise ValueError(f"k must be positive, got {k}")
    if x.ndim == 0:
        raise TypeError(f"approx_top_k operand must have >= 1 dimension, got {x.shape}")
    if not -x.ndim <= reduction_dimension < x.ndim:
        raise ValueError(f"reduction_dimension {reduction_dimension} is out of bounds for "
                         f"an operand of rank {x.ndim}")
    if x.shape[reduction_dimension] < k:
        raise ValueError(f"k must be smaller than the size of reduction_dim "
                         f"{x.shape[reduction_dimension]}, got {k}")
    if category(x.dtype) != FLOAT:
        raise ValueError(f"operand must be a floating type, got {x.dtype.name}")
    shape = list(x.shape)
    shape[reduction_dimension] = _approx_size(x, k, reduction_dimension, recall_target,
                                              reduction_input_size_override, aggregate_to_topk)
    return [x.update(shape=tuple(shape)), ShapedArray(tuple(shape), np.dtype(np.int32))]


def _approx_top_k_exact(x, *, k, reduction_dimension, recall_target, is_max_k,
                        reduction_input_size_override, aggregate_to_topk):
    aval = aval_of(x)
    axis = reduction_dimension % aval.ndim
    size = _approx_size(aval, k, reduction_dimension, recall_target,
                        reduction_input_size_override, aggregate_to_topk)
    if is_max_k:
        return list(top_k(x, size, axis=axis))
    positions = broadcasted_iota(np.int32, aval.shape, axis)
    values, indices = sort((x, positions), dimension=axis, is_stable=True, num_keys=1)
    return [slice_in_dim(values, 0, size, axis=axis), slice_in_dim(indices, 0, size, axis=axis)]


def _approx_top_k_jvp(primals, tangents, **params):
    (x,), (t,) = primals, tangents
    values, indices = approx_top_k_p.bind(x, **params)
    if type(t) is ad.Zero:
        return [values, indices], [ad.Zero.from_primal_value(values),
                                   ad.Zero.from_primal_value(indices)]
    axis = params["reduction_dimension"] % aval_of(x).ndim
    return [values, indices], [_pick(t, indices, axis), ad.Zero.from_primal_value(indices)]


def _approx_top_k_batch(args, dims, *, reduction_dimension, **params):
    (x,), (d,) = args, dims
    axis = reduction_dimension % (aval_of(x).ndim - 1)
    return approx_top_k_p.bind(x, reduction_dimension=axis + (d <= axis), **params), [d, d]


ad.primitive_jvps[approx_top_k_p] = _approx_top_k_jvp
batching.primitive_batchers[approx_top_k_p] = _approx_top_k_batch
register_lowering(approx_top_k_p, lower_fun(_approx_top_k_exact))
