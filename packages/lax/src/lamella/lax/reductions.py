"""Reductions: reduce_sum/prod/max/min/and/or/xor, argmax/argmin, the generic
`reduce` over a user computation, and the cumulative reductions cumsum,
cumprod, cummax, cummin and cumlogsumexp.

Each primitive comes with its shape rule, JVP (or linearity and transpose),
batching rule and lowering, in that order. Reductions lower to one
`stablehlo.reduce`; cumulative reductions to one `stablehlo.reduce_window`
whose window spans the whole axis, which XLA runs as a linear-time scan.

Several derivatives need "the neighbouring element" along an axis: the JVP of
reduce_prod multiplies the products before and after each element, the JVPs of
the cumulative reductions combine each element with the one k places back, and
the JVP of `reduce` halves the reduced axis. They all pad or crop one axis
with `lax.pad`, so they stay exact (no division by the operand) and
transposable to any order.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad, batching, dtypes
from lamella.core.config import config
from lamella.core.jaxpr import ClosedJaxpr, jaxpr_as_fun
from lamella.core.shape_poly import DimExpr
from lamella.core.staging import trace_to_jaxpr
from lamella.core.structural import broadcast_in_dim, reduce_sum_p, reshape, transpose
from lamella.core.trace import Tracer, aval_of, current_trace
from lamella.core.tree_util import tree_flatten, tree_unflatten
from lamella.core.vmap_api import vmap
from lamella.lax import symbolic_lowering
from lamella.lax.arithmetic import abs as lax_abs
from lamella.lax.arithmetic import add, add_p, div, max_p, min_p, mul, mul_p, neg, sub
from lamella.lax.arithmetic import max as lax_max
from lamella.lax.arithmetic import min as lax_min
from lamella.lax.conversion import convert_element_type
from lamella.lax.core_lowerings import reduce_with
from lamella.lax.fill import full_like
from lamella.lax.logical import and_p, complex_choose, eq, ne, or_p, select, xor_p
from lamella.lax.lowering import (
    aval_to_ir_type,
    closed_consts,
    constant,
    hlo,
    ir,
    lower_jaxpr,
    register_lowering,
)
from lamella.lax.shapes import pad
from lamella.lax.standard import (
    BOOL,
    COMPLEX,
    FLOAT,
    INT,
    NUMBER,
    SINT,
    UINT,
    category,
    check_dtypes,
    standard_primitive,
)
from lamella.lax.transcendental import exp, log1p, logistic

__all__ = ["argmax", "argmax_p", "argmin", "argmin_p", "cumlogsumexp", "cumlogsumexp_p", "cummax",
           "cummax_p", "cummin", "cummin_p", "cumprod", "cumprod_p", "cumsum", "cumsum_p",
           "reduce", "reduce_and", "reduce_and_p", "reduce_max", "reduce_max_p", "reduce_min",
           "reduce_min_p", "reduce_or", "reduce_or_p", "reduce_p", "reduce_prod",
           "reduce_prod_p", "reduce_sum", "reduce_sum_p", "reduce_xor", "reduce_xor_p"]

_ORDERED = (BOOL, SINT, UINT, FLOAT)


# --- axes ---------------------------------------------------------------------


def _canonical_axes(name: str, axes: Sequence[int], ndim: int) -> tuple[int, ...]:
    """Wrapper-side axes: negative ones count from the end, as in NumPy."""
    given = tuple(int(a) for a in axes)
    if any(not -ndim <= a < ndim for a in given):
        raise ValueError(f"{name}: axes {given} out of range for operand of rank {ndim}")
    canonical = tuple(a % ndim for a in given)
    if len(set(canonical)) != len(canonical):
        raise ValueError(f"{name}: duplicate axes {given}")
    return canonical


def _canonical_axis(name: str, axis: int, ndim: int) -> int:
    if not -ndim <= int(axis) < ndim:
        raise ValueError(f"{name}: axis {axis} out of range for operand of rank {ndim}")
    return int(axis) % ndim


def _check_axes(name: str, axes: tuple[int, ...], ndim: int) -> None:
    """Primitive-side axes: already canonical (non-negative, distinct)."""
    if any(not 0 <= a < ndim for a in axes):
        raise ValueError(f"{name}: axes {axes} out of range for operand of rank {ndim}")
    if len(set(axes)) != len(axes):
        raise ValueError(f"{name}: duplicate axes {axes}")


def _reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _kept_axes(ndim: int, axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(i for i in range(ndim) if i not in axes)


def _axes_to_front(x: Any, axes: tuple[int, ...]) -> Any:
    """`x` with the `axes` moved to the front and flattened into one axis."""
    shape = aval_of(x).shape
    kept = _kept_axes(len(shape), axes)
    if (*axes, *kept) != tuple(range(len(shape))):
        x = transpose(x, (*axes, *kept))
    size = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    return reshape(x, (size, *(shape[i] for i in kept)))


def _batch_axes(axes: tuple[int, ...], bdim: int) -> tuple[tuple[int, ...], int]:
    """The axes in the numbering of an operand batched at `bdim`, and the
    result's batch dim (the batch axis loses one position per reduced axis before it)."""
    return tuple(a + (a >= bdim) for a in axes), bdim - sum(a < bdim for a in axes)


def _scalar_type(dtype: np.dtype) -> ir.RankedTensorType:
    return aval_to_ir_type(ShapedArray((), dtype))


def _compare(a, b, direction: str, dtype: np.dtype):
    compare_type = {BOOL: "UNSIGNED", UINT: "UNSIGNED", SINT: "SIGNED"}.get(category(dtype),
                                                                            "FLOAT")
    return hlo.compare(a, b, hlo.ComparisonDirectionAttr.get(direction),
                       compare_type=hlo.ComparisonTypeAttr.get(compare_type))


def _pad_axis(x: Any, padding_value: Any, axis: int, low: int, high: int) -> Any:
    """`lax.pad` of one axis (negative widths crop), for the derivative rules below."""
    if not isinstance(padding_value, Tracer):
        padding_value = np.asarray(padding_value, aval_of(x).dtype)
    config = [(low, high, 0) if d == axis else (0, 0, 0) for d in range(aval_of(x).ndim)]
    return pad(x, padding_value, config)


# --- reductions with a scalar monoid -------------------------------------------------


def _lowest(dtype: np.dtype) -> np.ndarray:
    if dtype == np.dtype(bool):
        return np.False_
    if dtype.kind in "iu":
        return np.array(np.iinfo(dtype).min, dtype)
    return np.array(-np.inf, dtype)


def _highest(dtype: np.dtype) -> np.ndarray:
    if dtype == np.dtype(bool):
        return np.True_
    if dtype.kind in "iu":
        return np.array(np.iinfo(dtype).max, dtype)
    return np.array(np.inf, dtype)


def _reduction_batch(prim, args, dims, *, axes):
    (x,), (d,) = args, dims
    axes, out_dim = _batch_axes(axes, d)
    return prim.bind(x, axes=axes), out_dim


def _reduction(name: str, accepted, identity: Callable[[np.dtype], Any],
               combine: Callable[[np.dtype], Callable]):
    """A reduction primitive over `axes` with a scalar `combine` and its identity,
    and its public wrapper (which also accepts negative axes)."""
    prim = standard_primitive(name)

    @prim.def_abstract_eval
    def abstract_eval(x: ShapedArray, *, axes) -> ShapedArray:
        check_dtypes(name, accepted, x)
        _check_axes(name, axes, x.ndim)
        return x.update(shape=_reduced_shape(x.shape, axes))

    batching.primitive_batchers[prim] = functools.partial(_reduction_batch, prim)
    register_lowering(prim, lambda ctx, x, *, axes: reduce_with(
        ctx, x, identity(ctx.avals_in[0].dtype), combine(ctx.avals_in[0].dtype), axes))

    def wrapper(operand: Any, axes: Sequence[int]) -> Any:
        return prim.bind(operand, axes=_canonical_axes(name, axes, aval_of(operand).ndim))
    wrapper.__name__ = name
    return prim, wrapper


def reduce_sum(operand: Any, axes: Sequence[int]) -> Any:
    """The sum of `operand` over `axes` (negative axes count from the end).

    >>> import numpy as np
    >>> reduce_sum(np.arange(6, dtype=np.float32).reshape(2, 3), (1,))
    Array([ 3., 12.], dtype=float32)
    """
    aval = aval_of(operand)
    check_dtypes("reduce_sum", NUMBER, aval)
    return reduce_sum_p.bind(operand, axes=_canonical_axes("reduce_sum", axes, aval.ndim),
                             out_sharding=None)


reduce_prod_p, reduce_prod = _reduction(
    "reduce_prod", NUMBER, lambda dtype: np.ones((), dtype), lambda dtype: hlo.multiply)
def _chooser(bool_op: Callable, real_op: Callable, direction: str) -> Callable:
    # Complex numbers are ordered lexicographically (real, imag), as in JAX.
    def combine(dtype: np.dtype) -> Callable:
        if dtype.kind == "c":
            return functools.partial(complex_choose, direction=direction)
        return bool_op if dtype == np.dtype(bool) else real_op
    return combine


reduce_max_p, reduce_max = _reduction(
    "reduce_max", (*_ORDERED, COMPLEX), _lowest, _chooser(hlo.or_, hlo.maximum, "GT"))
reduce_min_p, reduce_min = _reduction(
    "reduce_min", (*_ORDERED, COMPLEX), _highest, _chooser(hlo.and_, hlo.minimum, "LT"))
# All bits set is the identity of `and`: True for booleans, -1 (or the maximum) for integers.
reduce_and_p, reduce_and = _reduction(
    "reduce_and", (BOOL,) + INT, lambda dtype: ~np.zeros((), dtype), lambda dtype: hlo.and_)
reduce_or_p, reduce_or = _reduction(
    "reduce_or", (BOOL,) + INT, lambda dtype: np.zeros((), dtype), lambda dtype: hlo.or_)
reduce_xor_p, reduce_xor = _reduction(
    "reduce_xor", (BOOL,) + INT, lambda dtype: np.zeros((), dtype), lambda dtype: hlo.xor)

reduce_prod.__doc__ = """The product of `operand` over `axes`.

    >>> import numpy as np
    >>> reduce_prod(np.array([[1., 2.], [3., 4.]], np.float32), (0,))
    Array([3., 8.], dtype=float32)
    """
reduce_max.__doc__ = """The maximum of `operand` over `axes` (NaN if any element is NaN;
    -inf, or the dtype's minimum, over an empty axis).

    >>> import numpy as np
    >>> reduce_max(np.array([[1., 5.], [3., 4.]], np.float32), (1,))
    Array([5., 4.], dtype=float32)
    """
reduce_min.__doc__ = """The minimum of `operand` over `axes` (NaN if any element is NaN).

    >>> import numpy as np
    >>> reduce_min(np.array([[1., 5.], [3., 4.]], np.float32), (0, 1))
    Array(1., dtype=float32)
    """
reduce_and.__doc__ = """Logical (booleans) or bitwise (integers) and over `axes`.

    >>> import numpy as np
    >>> reduce_and(np.array([True, False]), (0,))
    Array(False, dtype=bool)
    """
reduce_or.__doc__ = """Logical (booleans) or bitwise (integers) or over `axes`.

    >>> import numpy as np
    >>> reduce_or(np.array([True, False]), (0,))
    Array(True, dtype=bool)
    """
reduce_xor.__doc__ = """Logical (booleans) or bitwise (integers) exclusive or over `axes`.

    >>> import numpy as np
    >>> reduce_xor(np.array([True, True]), (0,))
    Array(False, dtype=bool)
    """


def _reduce_prod_jvp(primals, tangents, *, axes):
    # d(prod x) = sum_j t_j * prod_{k != j} x_k, with the product of the others
    # written as (product before j) * (product after j): exact, and right at zeros.
    (x,), (t,) = primals, tangents
    out = reduce_prod_p.bind(x, axes=axes)
    x, t = _axes_to_front(x, axes), _axes_to_front(t, axes)
    before = _pad_axis(cumprod(x, 0), 1, 0, 1, -1)
    after = _pad_axis(cumprod(x, 0, reverse=True), 1, 0, -1, 1)
    return out, reduce_sum_p.bind(mul(t, mul(before, after)), axes=(0,), out_sharding=None)


def _chooser_jvp(prim):
    # The tangent of a max (min) is the mean tangent of the elements attaining it.
    def jvp(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axes=axes)
        shape = aval_of(x).shape
        chosen = eq(x, broadcast_in_dim(out, shape, _kept_axes(len(shape), axes)))
        weight = convert_element_type(chosen, aval_of(t).dtype)
        count = reduce_sum_p.bind(weight, axes=axes, out_sharding=None)
        return out, div(reduce_sum_p.bind(mul(t, weight), axes=axes, out_sharding=None), count)
    return jvp


ad.primitive_jvps[reduce_prod_p] = _reduce_prod_jvp
ad.primitive_jvps[reduce_max_p] = _chooser_jvp(reduce_max_p)
ad.primitive_jvps[reduce_min_p] = _chooser_jvp(reduce_min_p)
for _prim in (reduce_and_p, reduce_or_p, reduce_xor_p):
    ad.defjvp_zero(_prim)


# --- argmax, argmin -----------------------------------------------------------------


def _argminmax(name: str, direction: str, identity: Callable[[np.dtype], Any]):
    prim = standard_primitive(name)

    @prim.def_abstract_eval
    def abstract_eval(x: ShapedArray, *, axes, index_dtype) -> ShapedArray:
        check_dtypes(name, _ORDERED, x)
        _check_axes(name, axes, x.ndim)
        if len(axes) != 1:
            raise ValueError(f"{name}: takes exactly one axis, got axes {axes}")
        if x.shape[axes[0]] == 0:
            raise ValueError(f"{name}: the reduced axis {axes[0]} of an operand of shape "
                             f"{x.shape} is empty")
        if np.dtype(index_dtype).kind not in "iu":
            raise TypeError(f"{name}: index_dtype must be an integer type, got "
                            f"{np.dtype(index_dtype).name}")
        return ShapedArray(_reduced_shape(x.shape, axes), index_dtype)

    def pick_first(v1, i1, v2, i2, dtype, index_dtype):
        # (v1, i1) wins if v1 is strictly better, or v1 == v2 and i1 < i2. NaN beats
        # every number and ties with NaN, so the first NaN wins, as in NumPy.
        better = _compare(v1, v2, direction, dtype)
        same = _compare(v1, v2, "EQ", dtype)
        if category(dtype) == FLOAT:
            nan1, nan2 = _compare(v1, v1, "NE", dtype), _compare(v2, v2, "NE", dtype)
            better = hlo.or_(better, hlo.and_(nan1, hlo.not_(nan2)))
            same = hlo.or_(same, hlo.and_(nan1, nan2))
        earlier = _compare(i1, i2, "LT", index_dtype)
        first = hlo.or_(better, hlo.and_(same, earlier))
        return [hlo.select(first, v1, v2), hlo.select(first, i1, i2)]

    def lowering(ctx, x, *, axes, index_dtype):
        (aval_in,), (aval_out,) = ctx.avals_in, ctx.avals_out
        indices = symbolic_lowering.iota(aval_in.update(dtype=index_dtype), axes[0])
        # The init (identity, 0) never beats a real element: it loses to anything
        # better and, on a tie, element 0 (which it then equals) has index 0 too.
        op = hlo.ReduceOp([aval_to_ir_type(aval_out.update(dtype=aval_in.dtype)),
                           aval_to_ir_type(aval_out)],
                          [x, indices],
                          [constant(identity(aval_in.dtype)), constant(0, index_dtype)],
                          list(axes))
        value_type, index_type = _scalar_type(aval_in.dtype), _scalar_type(index_dtype)
        block = op.regions[0].blocks.append(value_type, index_type, value_type, index_type)
        with ir.InsertionPoint(block):
            hlo.return_(pick_first(*block.arguments, aval_in.dtype, index_dtype))
        return [op.results[1]]

    def batch(args, dims, *, axes, index_dtype):
        (x,), (d,) = args, dims
        axes, out_dim = _batch_axes(axes, d)
        return prim.bind(x, axes=axes, index_dtype=index_dtype), out_dim

    ad.defjvp_zero(prim)
    batching.primitive_batchers[prim] = batch
    register_lowering(prim, lowering)
    return prim


argmax_p = _argminmax("argmax", "GT", _lowest)
argmin_p = _argminmax("argmin", "LT", _highest)


def argmax(operand: Any, axis: int, index_dtype: Any) -> Any:
    """The index of the maximum along `axis`: the first one on ties, the first NaN if any.

    >>> import numpy as np
    >>> argmax(np.array([[1., 7., 7.], [9., 2., 3.]], np.float32), 1, np.int32)
    Array([1, 0], dtype=int32)
    """
    axis = _canonical_axis("argmax", axis, aval_of(operand).ndim)
    return argmax_p.bind(operand, axes=(axis,),
                         index_dtype=dtypes.canonicalize_dtype(index_dtype))


def argmin(operand: Any, axis: int, index_dtype: Any) -> Any:
    """The index of the minimum along `axis`: the first one on ties, the first NaN if any.

    >>> import numpy as np
    >>> argmin(np.array([3., 1., 1.], np.float32), 0, np.int32)
    Array(1, dtype=int32)
    """
    axis = _canonical_axis("argmin", axis, aval_of(operand).ndim)
    return argmin_p.bind(operand, axes=(axis,),
                         index_dtype=dtypes.canonicalize_dtype(index_dtype))


# --- reduce: a reduction with a user's computation ---------------------------------------
# The computation is traced once on scalars into a jaxpr (cached per function and
# types) and lowered as the body of one variadic stablehlo.reduce.

reduce_p = standard_primitive("reduce", multiple_results=True)


def reduce(operands: Any, init_values: Any, computation: Callable, dimensions: Sequence[int]
           ) -> Any:
    """Reduces `operands` over `dimensions` with `computation(accumulated, element)`.

    `operands` and `init_values` are pytrees of one structure (arrays of one shape,
    and scalars); `computation` takes and returns two such trees of scalars. It
    must be associative and commutative, with `init_values` its identity: XLA
    combines elements in any order. Python scalars in `init_values` take the
    dtype of their operand. A single-operand add, mul, max, min, and, or or xor
    with its identity becomes reduce_sum, reduce_prod, ... as in JAX.

    >>> import numpy as np
    >>> import lamella.lax as lax
    >>> x = np.array([[1., 5.], [3., 4.]], np.float32)
    >>> reduce(x, -np.inf, lax.max, (0,))
    Array([3., 5.], dtype=float32)
    >>> best = lambda a, b: (lax.select(lax.ge(a[0], b[0]), a[0], b[0]),
    ...                      lax.select(lax.ge(a[0], b[0]), a[1], b[1]))
    >>> reduce((x, np.array([[0, 1], [2, 3]], np.int32)), (-np.inf, 0), best, (0, 1))
    (Array(5., dtype=float32), Array(1, dtype=int32))
    """
    flat_operands, tree = tree_flatten(operands)
    flat_inits, init_tree = tree_flatten(init_values)
    if tree != init_tree:
        raise TypeError(f"reduce: operands and init_values must have the same structure, "
                        f"got {tree} and {init_tree}")
    if not flat_operands:
        raise TypeError("reduce: needs at least one operand")
    avals = [aval_of(x) for x in flat_operands]
    flat_inits = [np.asarray(i, a.dtype) if dtypes.is_python_scalar(i) else i
                  for i, a in zip(flat_inits, avals)]
    dimensions = _canonical_axes("reduce", dimensions, avals[0].ndim)
    scalar_avals = tuple(ShapedArray((), aval_of(i).dtype) for i in flat_inits)
    jaxpr = _reduction_jaxpr(computation, tree, scalar_avals)
    if len(flat_operands) == 1:
        monoid = _monoid_reduction(jaxpr, flat_inits[0])
        if monoid is not None:
            extra = {"out_sharding": None} if monoid is reduce_sum_p else {}
            return tree_unflatten(tree, [monoid.bind(flat_operands[0], axes=dimensions, **extra)])
    outs = reduce_p.bind(*flat_operands, *flat_inits, computation=computation, jaxpr=jaxpr,
                         dimensions=dimensions)
    return tree_unflatten(tree, outs)


def _reduction_jaxpr(computation: Callable, tree, avals: tuple[ShapedArray, ...]) -> ClosedJaxpr:
    # Cached, so that reducing again with the same function reuses the jaxpr, and
    # with it the compiled eager program.
    try:
        hash(computation)
    except TypeError:
        return _trace_reduction(computation, tree, avals)
    return _cached_reduction_jaxpr(computation, tree, avals, config.trace_key())


@functools.lru_cache(maxsize=256)
def _cached_reduction_jaxpr(computation, tree, avals, trace_key) -> ClosedJaxpr:
    return _trace_reduction(computation, tree, avals)


def _trace_reduction(computation: Callable, tree, avals) -> ClosedJaxpr:
    n = len(avals)
    out_trees = []

    def flat(*scalars):
        out = computation(tree_unflatten(tree, scalars[:n]), tree_unflatten(tree, scalars[n:]))
        leaves, out_tree = tree_flatten(out)
        out_trees.append(out_tree)
        return leaves

    jaxpr, consts = trace_to_jaxpr(flat, [*avals, *avals])
    if out_trees[0] != tree:
        raise TypeError(f"reduce: computation must return the structure of the operands "
                        f"{tree}, got {out_trees[0]}")
    got = [v.aval for v in jaxpr.outvars]
    if any(g.shape != () or g.dtype != a.dtype for g, a in zip(got, avals)):
        raise TypeError(f"reduce: computation must return scalars of dtypes "
                        f"{[a.dtype.name for a in avals]}, got "
                        f"{[g.str_short() for g in got]}")
    if any(isinstance(c, Tracer) for c in consts):
        raise TypeError("reduce: computation closes over traced values; a reduction body "
                        "can't capture them (pass them as operands instead)")
    return ClosedJaxpr(jaxpr, consts)


# The monoids that have their own reduction primitive, with their identities.
_MONOIDS = {
    add_p: (reduce_sum_p, lambda dtype: np.zeros((), dtype)),
    mul_p: (reduce_prod_p, lambda dtype: np.ones((), dtype)),
    max_p: (reduce_max_p, _lowest),
    min_p: (reduce_min_p, _highest),
    and_p: (reduce_and_p, lambda dtype: ~np.zeros((), dtype)),
    or_p: (reduce_or_p, lambda dtype: np.zeros((), dtype)),
    xor_p: (reduce_xor_p, lambda dtype: np.zeros((), dtype)),
}


def _monoid_reduction(closed: ClosedJaxpr, init: Any):
    """The specific reduction primitive for a computation that is one monoid
    operation on its two arguments with a concrete identity init, else None."""
    jaxpr = closed.jaxpr
    if len(jaxpr.eqns) != 1 or isinstance(init, Tracer):
        return None
    (eqn,) = jaxpr.eqns
    if eqn.primitive not in _MONOIDS or list(jaxpr.outvars) != list(eqn.outvars) \
            or sorted(map(id, eqn.invars)) != sorted(map(id, jaxpr.invars)):
        return None
    prim, identity = _MONOIDS[eqn.primitive]
    value = np.asarray(init)
    return prim if bool(np.all(value == identity(value.dtype))) else None


@reduce_p.def_abstract_eval
def _reduce_abstract_eval(*avals: ShapedArray, computation, jaxpr, dimensions):
    n = len(avals) // 2
    operands, inits = avals[:n], avals[n:]
    if len({a.shape for a in operands}) > 1:
        raise TypeError(f"reduce: operands must have one shape, got "
                        f"{', '.join(str(a.shape) for a in operands)}")
    _check_axes("reduce", dimensions, operands[0].ndim)
    for x, init, out in zip(operands, inits, jaxpr.out_avals):
        if init.shape != ():
            raise TypeError(f"reduce: init_values must be scalars, got shape {init.shape}")
        if init.dtype != x.dtype or out.dtype != x.dtype:
            raise TypeError(f"reduce: operand dtype {x.dtype.name} must match its init value "
                            f"({init.dtype.name}) and computation result ({out.dtype.name})")
    shape = _reduced_shape(operands[0].shape, dimensions)
    return [ShapedArray(shape, x.dtype) for x in operands]


def _reduce_jvp(primals, tangents, *, computation, jaxpr, dimensions):
    # JAX's formulation: reduce the operands as a tree, halving the reduced axis
    # with the computation applied elementwise, and take the JVP of that. The
    # primal result still comes from the single stablehlo.reduce.
    n = len(primals) // 2
    operands, inits = primals[:n], primals[n:]
    if any(type(t) is not ad.Zero for t in tangents[n:]):
        raise NotImplementedError("reduce: differentiation with respect to init_values is not "
                                  "supported; they should be constants (the identity)")
    outs = reduce_p.bind(*primals, computation=computation, jaxpr=jaxpr, dimensions=dimensions)
    if aval_of(operands[0]).size == 0:
        return outs, [ad.Zero.from_primal_value(o) for o in outs]
    fronts = [_axes_to_front(x, dimensions) for x in operands]
    front_tangents = [ad.Zero.from_primal_value(f) if type(t) is ad.Zero
                      else _axes_to_front(t, dimensions) for f, t in zip(fronts, tangents)]
    combine = vmap(jaxpr_as_fun(jaxpr))

    def tree(*xs):
        size = aval_of(xs[0]).shape[0]
        while size > 1:
            half = (size + 1) // 2
            # The first half, and the second padded with the identity to the same length.
            firsts = [_pad_axis(x, i, 0, 0, half - size) for x, i in zip(xs, inits)]
            seconds = [_pad_axis(x, i, 0, -half, 2 * half - size) for x, i in zip(xs, inits)]
            shape = aval_of(firsts[0]).shape
            flat = [reshape(x, (int(np.prod(shape)),)) for x in firsts + seconds]
            xs = [reshape(x, shape) for x in combine(*flat)]
            size = half
        return [reshape(x, aval_of(x).shape[1:]) for x in xs]

    _, tangents_out = ad.jvp_flat(tree, fronts, front_tangents, current_trace())
    return outs, tangents_out


def _reduce_batch(args, dims, *, computation, jaxpr, dimensions):
    n = len(args) // 2
    if any(d is not None for d in dims[n:]):
        raise NotImplementedError("reduce: vmap over init_values is not supported; batch the "
                                  "operands and keep the init values (the identity) shared")
    size = next(aval_of(x).shape[d] for x, d in zip(args, dims) if d is not None)
    operands = [batching.at_front(x, d, size) for x, d in zip(args[:n], dims[:n])]
    outs = reduce_p.bind(*operands, *args[n:], computation=computation, jaxpr=jaxpr,
                         dimensions=tuple(a + 1 for a in dimensions))
    return outs, [0] * n


def _reduce_lowering(ctx, *args, computation, jaxpr, dimensions):
    n = len(args) // 2
    op = hlo.ReduceOp([aval_to_ir_type(a) for a in ctx.avals_out], list(args[:n]),
                      list(args[n:]), list(dimensions))
    scalar_types = [_scalar_type(a.dtype) for a in ctx.avals_out]
    block = op.regions[0].blocks.append(*scalar_types, *scalar_types)
    with ir.InsertionPoint(block):
        hlo.return_(lower_jaxpr(ctx.module_context, jaxpr.jaxpr, closed_consts(jaxpr),
                                block.arguments))
    return list(op.results)


ad.primitive_jvps[reduce_p] = _reduce_jvp
batching.primitive_batchers[reduce_p] = _reduce_batch
register_lowering(reduce_p, _reduce_lowering)


# --- cumulative reductions ------------------------------------------------------------


def _logaddexp(a, b):
    # log(e^a + e^b) without overflow; a - b is NaN exactly when both are the same
    # infinity (or a NaN is involved), and then a + b is the answer.
    delta = sub(a, b)
    return select(ne(delta, delta), add(a, b), add(lax_max(a, b), log1p(exp(neg(lax_abs(delta))))))


def _logaddexp_lowering(a, b):
    delta = hlo.subtract(a, b)
    stable = hlo.add(hlo.maximum(a, b),
                     hlo.log_plus_one(hlo.exponential(hlo.negate(hlo.abs(delta)))))
    is_nan = hlo.compare(delta, delta, hlo.ComparisonDirectionAttr.get("NE"),
                         compare_type=hlo.ComparisonTypeAttr.get("FLOAT"))
    return hlo.select(is_nan, hlo.add(a, b), stable)


def _tie_weights(a, b, chosen):
    """Weights of a and b in max/min(a, b) = chosen: 1 for the one chosen, 1/2 each on ties."""
    one, half, zero = (full_like(a, v) for v in (1, 0.5, 0))
    a_chosen, b_chosen = eq(a, chosen), eq(b, chosen)
    return (select(a_chosen, select(b_chosen, half, one), zero),
            select(b_chosen, select(a_chosen, half, one), zero))


def _prod_step(s, y):
    return mul(s, y), y, s


def _max_step(s, y):
    out = lax_max(s, y)
    return (out, *_tie_weights(s, y, out))


def _min_step(s, y):
    out = lax_min(s, y)
    return (out, *_tie_weights(s, y, out))


def _logaddexp_step(s, y):
    # d/ds logaddexp(s, y) = e^s / (e^s + e^y) = logistic(s - y), finite everywhere.
    tie = eq(s, y)
    half = full_like(s, 0.5)
    return (_logaddexp(s, y), select(tie, half, logistic(sub(s, y))),
            select(tie, half, logistic(sub(y, s))))


def _scan_jvp(prim, step: Callable, identity: Callable[[np.dtype], Any]):
    """The JVP of a cumulative reduction by recursive doubling (Hillis-Steele).

    After the round with offset k, y[i] combines x[i-2k+1 .. i]: each round
    combines y with itself shifted by k. `step(s, y)` returns the combination
    and its partial derivatives in s and y, so the tangent update is linear.
    """
    def jvp(primals, tangents, *, axis, reverse):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, axis=axis, reverse=reverse)
        shape = aval_of(x).shape
        size = shape[axis]
        y, ty = x, t
        offset = 1
        while offset < size:
            low, high = (-offset, offset) if reverse else (offset, -offset)
            positions = np.arange(size)
            has_partner = broadcast_in_dim(
                positions < size - offset if reverse else positions >= offset, shape, (axis,))
            # The identity fills the shifted-in positions so their partials stay finite.
            s = _pad_axis(y, identity(aval_of(x).dtype), axis, low, high)
            ts = _pad_axis(ty, 0, axis, low, high)
            combined, ds, dy = step(s, y)
            ty = select(has_partner, add(mul(ds, ts), mul(dy, ty)), ty)
            y = select(has_partner, combined, y)
            offset *= 2
        return out, ty
    return jvp


def _symbolic_cumulative(ctx, x, axis: int, reverse: bool, identity, combine):
    # A window as long as the axis (symbolic, shape-polymorphic export), padded before
    # (or after, reversed) by the axis less one: one dynamic reduce_window.
    (aval,) = ctx.avals_in
    size = aval.shape[axis]
    window = [1] * aval.ndim
    window[axis] = size
    padding = [(0, 0)] * aval.ndim
    padding[axis] = (0, size - 1) if reverse else (size - 1, 0)
    return symbolic_lowering.reduce_window(ctx, x, constant(identity(aval.dtype)), window,
                                           padding, combine(aval.dtype))


def _cumulative(name: str, accepted, identity: Callable[[np.dtype], Any],
                combine: Callable[[np.dtype], Callable]):
    prim = standard_primitive(name)

    @prim.def_abstract_eval
    def abstract_eval(x: ShapedArray, *, axis, reverse) -> ShapedArray:
        check_dtypes(name, accepted, x)
        if not 0 <= axis < x.ndim:
            raise ValueError(f"{name}: axis {axis} out of range for operand of rank {x.ndim}")
        return x

    def lowering(ctx, x, *, axis, reverse):
        (aval,) = ctx.avals_in
        if aval.size == 0:
            return [x]
        size = aval.shape[axis]
        window = [1] * aval.ndim
        window[axis] = size
        if type(size) is DimExpr:
            return [_symbolic_cumulative(ctx, x, axis, reverse, identity, combine)]
        padding = np.zeros((aval.ndim, 2), np.int64)
        padding[axis] = (0, size - 1) if reverse else (size - 1, 0)
        op = hlo.ReduceWindowOp([x.type], [x], [constant(identity(aval.dtype))], window,
                                padding=ir.DenseIntElementsAttr.get(padding))
        scalar = _scalar_type(aval.dtype)
        block = op.regions[0].blocks.append(scalar, scalar)
        with ir.InsertionPoint(block):
            hlo.return_([combine(aval.dtype)(*block.arguments)])
        return list(op.results)

    def batch(args, dims, *, axis, reverse):
        (x,), (d,) = args, dims
        return prim.bind(x, axis=axis + (axis >= d), reverse=reverse), d

    batching.primitive_batchers[prim] = batch
    register_lowering(prim, lowering)

    def wrapper(operand: Any, axis: int = 0, reverse: bool = False) -> Any:
        axis = _canonical_axis(name, axis, aval_of(operand).ndim)
        return prim.bind(operand, axis=axis, reverse=bool(reverse))
    wrapper.__name__ = name
    return prim, wrapper


cumsum_p, cumsum = _cumulative("cumsum", NUMBER, lambda dtype: np.zeros((), dtype),
                               lambda dtype: hlo.add)
cumprod_p, cumprod = _cumulative("cumprod", NUMBER, lambda dtype: np.ones((), dtype),
                                 lambda dtype: hlo.multiply)
cummax_p, cummax = _cumulative("cummax", (SINT, UINT, FLOAT, COMPLEX), _lowest,
                               _chooser(hlo.or_, hlo.maximum, "GT"))
cummin_p, cummin = _cumulative("cummin", (SINT, UINT, FLOAT, COMPLEX), _highest,
                               _chooser(hlo.and_, hlo.minimum, "LT"))
cumlogsumexp_p, cumlogsumexp = _cumulative("cumlogsumexp", (FLOAT,), _lowest,
                                           lambda dtype: _logaddexp_lowering)

cumsum.__doc__ = """Running sums along `axis` (from the end if `reverse`).

    >>> import numpy as np
    >>> cumsum(np.array([1., 2., 3.], np.float32))
    Array([1., 3., 6.], dtype=float32)
    >>> cumsum(np.array([1., 2., 3.], np.float32), reverse=True)
    Array([6., 5., 3.], dtype=float32)
    """
cumprod.__doc__ = """Running products along `axis` (from the end if `reverse`).

    >>> import numpy as np
    >>> cumprod(np.array([1., 2., 3.], np.float32))
    Array([1., 2., 6.], dtype=float32)
    """
cummax.__doc__ = """Running maxima along `axis` (from the end if `reverse`).

    >>> import numpy as np
    >>> cummax(np.array([1., 3., 2.], np.float32))
    Array([1., 3., 3.], dtype=float32)
    """
cummin.__doc__ = """Running minima along `axis` (from the end if `reverse`).

    >>> import numpy as np
    >>> cummin(np.array([3., 1., 2.], np.float32))
    Array([3., 1., 1.], dtype=float32)
    """
cumlogsumexp.__doc__ = """Running log(sum(exp(x))) along `axis`, computed without overflow.

    >>> import numpy as np
    >>> cumlogsumexp(np.array([0., 0.], np.float32))
    Array([0.       , 0.6931472], dtype=float32)
    """

ad.deflinear2(cumsum_p, lambda ct, x, *, axis, reverse: [cumsum_p.bind(
    ct, axis=axis, reverse=not reverse)])
ad.primitive_jvps[cumprod_p] = _scan_jvp(cumprod_p, _prod_step,
                                         lambda dtype: np.ones((), dtype))
ad.primitive_jvps[cummax_p] = _scan_jvp(cummax_p, _max_step, _lowest)
ad.primitive_jvps[cummin_p] = _scan_jvp(cummin_p, _min_step, _highest)
ad.primitive_jvps[cumlogsumexp_p] = _scan_jvp(cumlogsumexp_p, _logaddexp_step, _lowest)
