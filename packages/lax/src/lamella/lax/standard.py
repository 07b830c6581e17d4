"""Building blocks shared by the lax primitive definitions.

`standard_primitive` makes a primitive that the XLA executor applies eagerly
as a one-equation program; `unop` and `naryop` add the dtype checks, shape
rule, batching rule and lowering that elementwise operations share, so each
primitive's own file only states what is particular to it.

As in JAX, n-ary elementwise primitives broadcast implicitly: an operand may
be rank 0, or have size 1 where the others have size n (ranks otherwise
equal). The broadcast happens in the lowering, so `x * 2.0` stages as
`mul a 2.0:f32[]` with no `broadcast_in_dim`; JVPs broadcast a lone tangent to
the output (`defjvp`) and transposes sum cotangents back (`unbroadcast`).
Dtypes are never promoted.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from lamella.core import Primitive, ShapedArray, ad, batching, dtypes
from lamella.core.jaxpr import pp_eqn, pp_eqn_rules
from lamella.core.shape_poly import DimExpr
from lamella.core.structural import broadcast_in_dim, reduce_sum, reshape
from lamella.core.trace import aval_of
from lamella.lax import symbolic_lowering
from lamella.lax.executor import compiled_eagerly
from lamella.lax.lowering import ir, register_lowering

# Dtype categories that primitives accept.
BOOL, SINT, UINT, FLOAT, COMPLEX = "bool", "signed integer", "unsigned integer", "floating", \
    "complex floating"
INT = (SINT, UINT)
NUMBER = (SINT, UINT, FLOAT, COMPLEX)
INEXACT = (FLOAT, COMPLEX)
ANY = (BOOL, SINT, UINT, FLOAT, COMPLEX)


_categories: dict[np.dtype, str] = {}


def category(dtype: np.dtype) -> str:
    kind = _categories.get(dtype)
    if kind is None:
        if dtype == np.dtype(bool):
            kind = BOOL
        elif dtypes.is_float(dtype):
            kind = FLOAT
        else:
            kind = {"i": SINT, "u": UINT, "c": COMPLEX}.get(dtype.kind, str(dtype))
        _categories[dtype] = kind
    return kind


def _flatten(accepted) -> tuple[str, ...]:
    out: list[str] = []
    for a in (accepted if isinstance(accepted, tuple) else (accepted,)):
        out.extend(a if isinstance(a, tuple) else (a,))
    return tuple(out)


def check_dtypes(name: str, accepted, *avals: ShapedArray) -> None:
    if not isinstance(accepted, frozenset):
        accepted = frozenset(_flatten(accepted))
    for aval in avals:
        if category(aval.dtype) not in accepted:
            raise TypeError(f"{name} does not accept dtype {aval.dtype.name}. Accepted dtypes "
                            f"are subtypes of {', '.join(sorted(accepted))}.")


def check_same_dtypes(name: str, *avals: ShapedArray) -> None:
    first = avals[0].dtype
    if any(a.dtype != first for a in avals[1:]):
        got = ", ".join(a.dtype.name for a in avals)
        raise TypeError(f"{name} requires arguments to have the same dtypes, got {got}. "
                        "(lamella.numpy functions promote types; lax does not.)")


def broadcasting_shape(name: str, *avals: ShapedArray) -> tuple[int, ...]:
    """The result shape of an implicitly broadcasting elementwise primitive: rank-0
    operands go with anything; the others have one rank and sizes equal or 1."""
    shapes = [a.shape for a in avals if a.ndim]
    if not shapes:
        return ()
    first = shapes[0]
    if all(s == first for s in shapes[1:]):
        return first
    if len({len(s) for s in shapes}) > 1:
        ranks = ", ".join(str(r) for r in sorted({len(s) for s in shapes}))
        raise TypeError(f"{name}: arrays must have the same number of dimensions, "
                        f"got {{{ranks}}}")
    out = []
    for sizes in zip(*shapes):
        bigger = {d for d in sizes if d != 1}
        if len(bigger) > 1:
            raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                            f"{', '.join(str(a.shape) for a in avals)}.")
        out.append(bigger.pop() if bigger else 1)
    return tuple(out)


def const(example: Any, value: Any) -> Any:
    """`value` as a rank-0 constant of `example`'s dtype, for derivative rules: a
    Python scalar when `example` is weakly typed (so results stay weak), else a
    NumPy scalar. Binary primitives broadcast it, so it stages as a literal."""
    aval = aval_of(example)
    if aval.weak_type:
        kind = aval.dtype.kind
        return complex(value) if kind == "c" else int(value) if kind in "iu" else float(value)
    return np.array(value, aval.dtype)


def canonicalize_shape(name: str, shape: Any) -> tuple[int, ...]:
    """`shape` (a sequence of concrete integers, or one integer) as a tuple of Python
    ints; a TypeError naming `name` otherwise. Every shape-taking primitive checks its
    shape here, so a fractional, traced or negative dimension is the user's error and
    never reaches the compiler (MLIR's bare "invalid tensor dimension size").

    >>> canonicalize_shape("full", (2, np.int64(3)))
    (2, 3)
    >>> canonicalize_shape("full", (2, -1))
    Traceback (most recent call last):
    ...
    TypeError: full: shape (2, -1) has a negative dimension; every dimension must be >= 0
    """
    if isinstance(shape, (int, np.integer)) or getattr(shape, "ndim", None) == 0:
        shape = (shape,)  # one integer (or a 0-d integer array) is a rank-1 shape
    try:
        dims = tuple(operator.index(d) for d in shape)
    except TypeError:
        dims = _symbolic_shape(name, shape)
    if builtins.any(d < 0 for d in dims):
        raise TypeError(f"{name}: shape {dims} has a negative dimension; every dimension "
                        "must be >= 0")
    return dims


def _symbolic_shape(name: str, shape: Any) -> tuple:
    # Shapes traced for a shape-polymorphic export hold symbolic dimensions too.
    try:
        return tuple(d if type(d) is DimExpr else operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{name}: shapes must be sequences of concrete integers, got "
                        f"{shape!r}") from None


def check_out_sharding(name: str, out_sharding: Any) -> None:
    """`out_sharding=` (and `sharding=`) of JAX's signatures: results live on one
    device here, so only None (the compiler's choice) is meaningful."""
    if out_sharding is not None:
        raise ValueError(f"{name}: out_sharding={out_sharding!r} asks for a sharded result, "
                         "but lamella.lax places results on one device; pass None.")


def hide_none_params(prim: Primitive, *names: str) -> None:
    """Prints `prim`'s equations without the named params when they are None (as
    JAX prints its defaults)."""
    def rule(eqn, context):
        shown = [(k, v) for k, v in eqn.primitive.pp_params(eqn.params)
                 if not (k in names and v is None)]
        return pp_eqn(eqn, context, shown)
    pp_eqn_rules[prim] = rule


def standard_primitive(name: str, multiple_results: bool = False) -> Primitive:
    """A primitive whose eager evaluation is a one-equation XLA program."""
    prim = Primitive(name)
    prim.multiple_results = multiple_results
    compiled_eagerly.add(prim)
    return prim


def unop(name: str, accepted, lower: Callable, result_dtype: Callable | None = None
         ) -> Primitive:
    """An elementwise unary primitive: `lower(x) -> ir.Value` builds its StableHLO."""
    prim = standard_primitive(name)
    accepted = frozenset(_flatten(accepted))

    @prim.def_abstract_eval
    def abstract_eval(x: ShapedArray, **params) -> ShapedArray:
        check_dtypes(name, accepted, x)
        return x.update(dtype=result_dtype(x.dtype)) if result_dtype else x

    batching.defvectorized(prim)
    register_lowering(prim, lambda ctx, x, **params: [lower(x, **params)])
    return prim


def naryop(name: str, accepted, lower: Callable | None,
           result_dtype: Callable | None = None, same_dtypes: bool = True) -> Primitive:
    """An elementwise primitive of operands of one dtype that broadcast implicitly
    (rank 0, or size 1 along an axis). `lower(*xs)` gets operands already broadcast
    to the result shape; with `lower=None` the caller registers its own rule."""
    prim = standard_primitive(name)
    accepted = frozenset(_flatten(accepted))

    @prim.def_abstract_eval
    def abstract_eval(*avals: ShapedArray, **params) -> ShapedArray:
        check_dtypes(name, accepted, *avals)
        if same_dtypes:
            check_same_dtypes(name, *avals)
        shape = broadcasting_shape(name, *avals)
        dtype = result_dtype(*(a.dtype for a in avals)) if result_dtype else avals[0].dtype
        return ShapedArray(shape, dtype, all(a.weak_type for a in avals))

    batching.primitive_batchers[prim] = partial(broadcast_batcher, prim)
    if lower is not None:
        register_lowering(prim, lambda ctx, *xs, **params: [
            lower(*broadcast_to_result(ctx, xs), **params)])
    return prim


def broadcast_to_result(ctx, values: Sequence[ir.Value]) -> list[ir.Value]:
    """Lowering: operands broadcast to the (single) result's shape."""
    shape = ctx.avals_out[0].shape
    out = []
    for value, aval in zip(values, ctx.avals_in):
        if aval.shape != shape:
            value = symbolic_lowering.broadcast_in_dim(ctx.avals_out[0].update(dtype=aval.dtype),
                                                       value, range(aval.ndim))
        out.append(value)
    return out


def broadcast_batcher(prim: Primitive, args, dims, **params):
    """Batching for implicitly broadcasting primitives: if every operand of nonzero
    rank has one shape and batch axis, bind as is (rank-0 operands broadcast);
    otherwise batch axes go to the front, unbatched operands get a size-1 axis
    there, and batched operands of lower rank get trailing size-1 axes."""
    shape, dim = next((aval_of(x).shape, d) for x, d in zip(args, dims) if d is not None)
    if all(aval_of(x).shape == shape and d == dim for x, d in zip(args, dims)
           if aval_of(x).ndim):
        return prim.bind(*args, **params), dim
    moved = [_batch_at_front(x, d) if aval_of(x).ndim else x for x, d in zip(args, dims)]
    rank = builtins.max(aval_of(x).ndim for x in moved)
    moved = [x if d is None or aval_of(x).ndim == rank else _trailing_ones(x, rank)
             for x, d in zip(moved, dims)]
    return prim.bind(*moved, **params), 0


def _batch_at_front(x, d: int | None):
    if d is None:
        aval = aval_of(x)
        return broadcast_in_dim(x, (1,) + aval.shape, tuple(range(1, aval.ndim + 1)))
    return batching.moveaxis(x, d, 0)


def _trailing_ones(x, rank: int):
    aval = aval_of(x)
    return broadcast_in_dim(x, aval.shape + (1,) * (rank - aval.ndim), tuple(range(aval.ndim)))


def maybe_broadcast(shape: tuple[int, ...], x):
    """`x` broadcast to `shape` (numpy-style, trailing axes aligned) if it is smaller."""
    aval = aval_of(x)
    if aval.shape == shape:
        return x
    if aval.ndim == 0:
        return broadcast_in_dim(x, shape, ())
    return broadcast_in_dim(x, shape, tuple(range(len(shape) - aval.ndim, len(shape))))


def broadcast_all(*xs) -> list:
    """The operands broadcast to their common shape: for derivative rules that
    `select` between expressions of different operands."""
    shape = broadcasting_shape("broadcast", *(aval_of(x) for x in xs))
    return [maybe_broadcast(shape, x) for x in xs]


def unbroadcast(aval: ShapedArray, ct):
    """Cotangent `ct` of a broadcast result summed back to the operand's shape `aval`."""
    ct_shape = aval_of(ct).shape
    if ct_shape == aval.shape:
        return ct
    if not aval.shape:
        return reduce_sum(ct, tuple(range(len(ct_shape))))
    axes = tuple(i for i, (a, b) in enumerate(zip(aval.shape, ct_shape)) if a != b)
    return reshape(reduce_sum(ct, axes), aval.shape)


def defjvp(prim: Primitive, *rules: Callable | None) -> None:
    """`ad.defjvp` for broadcasting primitives: each operand's contribution to the
    output tangent is broadcast to the output shape when it is smaller."""
    def rule(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        shape = aval_of(out).shape
        tangent_out = ad.Zero.from_primal_value(out)
        for fn, t in zip(rules, tangents):
            if fn is not None and type(t) is not ad.Zero:
                tangent_out = ad.add_tangents(tangent_out,
                                              maybe_broadcast(shape, fn(t, *primals, **params)))
        return out, tangent_out
    ad.primitive_jvps[prim] = rule


def elementwise_batcher(prim: Primitive, args, dims, **params):
    """Batching for equal-shape elementwise primitives: align every batch axis."""
    batched = {d for d in dims if d is not None}
    if len(batched) == 1 and all(d is not None for d in dims):
        return prim.bind(*args, **params), batched.pop()
    size = next(aval_of(x).shape[d] for x, d in zip(args, dims) if d is not None)
    return prim.bind(*[batching.at_front(x, d, size) for x, d in zip(args, dims)],
                     **params), 0


def broadcast_operands(name: str, *args: Any) -> list[Any]:
    """Broadcasts rank-0 and size-1 operands to the common shape (lax's implicit rule)."""
    avals = [aval_of(x) for x in args]
    first = avals[0].shape
    if all(a.shape == first for a in avals[1:]):
        return args
    ranks = {a.ndim for a in avals if a.ndim}
    if len(ranks) > 1:
        raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                        f"{', '.join(str(a.shape) for a in avals)}.")
    rank = ranks.pop()
    target = []
    for i in range(rank):
        sizes = {a.shape[i] for a in avals if a.ndim} - {1}
        if len(sizes) > 1:
            raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                            f"{', '.join(str(a.shape) for a in avals)}.")
        target.append(sizes.pop() if sizes else 1)
    target = tuple(target)
    out = []
    for x, a in zip(args, avals):
        if a.shape == target:
            out.append(x)
        elif a.ndim == 0:
            out.append(broadcast_in_dim(x, target, ()))
        else:
            kept = tuple(i for i in range(rank) if a.shape[i] == target[i])
            squeezed = _squeeze_to(x, tuple(a.shape[i] for i in kept))
            out.append(broadcast_in_dim(squeezed, target, kept))
    return out


def binary_op(prim: Primitive, name: str | None = None, doc: str | None = None) -> Callable:
    """The Python function `op(x, y)` of a binary elementwise primitive (implicit
    broadcasting of rank-0 and size-1 operands, no dtype promotion)."""
    def op(x, y):
        return prim.bind(x, y)
    op.__name__ = op.__qualname__ = name or prim.name
    op.__doc__ = doc or (f"Elementwise `{name or prim.name}` of two arrays of one dtype "
                         "(lax does not promote dtypes).")
    return op


def _squeeze_to(x, shape: Sequence[int]):
    return x if aval_of(x).shape == tuple(shape) else reshape(x, shape)
