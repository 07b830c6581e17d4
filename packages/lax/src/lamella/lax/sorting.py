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
from lamella.lax.lowering import aval_to_ir_type, chlo, constant, hlo, ir, register_lowering
from lamella.lax.shapes import broadcasted_iota, expand_dims
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

__all__ = ["sort", "sort_key_val", "sort_p", "top_k", "top_k_p"]

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


def top_k(operand: Any, k: int) -> tuple[Any, Any]:
    """The `k` largest entries along the last axis, in descending order, and their
    int32 indices (the lower index first among equal values; NaN counts as largest).

    >>> import numpy as np
    >>> top_k(np.array([1., 5., 3., 5.], np.float32), 2)
    (Array([5., 5.], dtype=float32), Array([1, 3], dtype=int32))
    """
    return tuple(top_k_p.bind(operand, k=int(k)))


@top_k_p.def_abstract_eval
def _top_k_abstract_eval(x: ShapedArray, *, k):
    check_dtypes("top_k", (BOOL, SINT, UINT, FLOAT), x)
    if x.ndim < 1:
        raise TypeError("top_k: operand must have at least one dimension, got a scalar")
    if not 0 <= k <= x.shape[-1]:
        raise ValueError(f"top_k: k={k} must be between 0 and the size of the last axis "
                         f"({x.shape[-1]}) of the operand of shape {x.shape}")
    shape = (*x.shape[:-1], k)
    return [ShapedArray(shape, x.dtype, x.weak_type), ShapedArray(shape, np.dtype(np.int32))]


def _top_k_jvp(primals, tangents, *, k):
    (x,), (t,) = primals, tangents
    values, indices = top_k_p.bind(x, k=k)
    if type(t) is ad.Zero:
        return [values, indices], [ad.Zero.from_primal_value(values),
                                   ad.Zero.from_primal_value(indices)]
    shape = aval_of(x).shape
    ndim = len(shape)
    # one_hot[..., j, i] = (indices[..., j] == i); contracting it with t over i picks
    # t[..., indices[..., j]], a linear map of t with an obvious transpose.
    one_hot = eq(expand_dims(indices, (ndim,)),
                 broadcasted_iota(np.int32, (*shape[:-1], k, shape[-1]), ndim))
    one_hot = convert_element_type(one_hot, aval_of(t).dtype)
    batch = tuple(range(ndim - 1))
    picked = dot_general(one_hot, t, (((ndim,), (ndim - 1,)), (batch, batch)),
                         precision="highest")
    return [values, indices], [picked, ad.Zero.from_primal_value(indices)]


def _top_k_batch(args, dims, *, k):
    (x,), (d,) = args, dims
    if d == aval_of(x).ndim - 1:
        x, d = batching.moveaxis(x, d, 0), 0
    return top_k_p.bind(x, k=k), [d, d]


def _top_k_lowering(ctx, x, *, k):
    return list(chlo.top_k(x, k, results=[aval_to_ir_type(a) for a in ctx.avals_out]))


ad.primitive_jvps[top_k_p] = _top_k_jvp
batching.primitive_batchers[top_k_p] = _top_k_batch
register_lowering(top_k_p, _top_k_lowering)
