"""Building blocks shared by the lax primitive definitions.

`standard_primitive` makes a primitive that the XLA executor applies eagerly
as a one-equation program; `unop` and `naryop` add the dtype checks, shape
rule, batching rule and lowering that elementwise operations share, so each
primitive's own file only states what is particular to it. Python-facing
wrappers (`binary_op`) broadcast rank-0 and size-1 operands (as JAX's lax
does) but never promote dtypes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from lamella.core import Primitive, ShapedArray, batching, dtypes
from lamella.core.structural import broadcast_in_dim, reshape
from lamella.core.trace import aval_of
from lamella.lax.executor import compiled_eagerly
from lamella.lax.lowering import register_lowering

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


def check_same_shapes(name: str, *avals: ShapedArray) -> None:
    first = avals[0].shape
    if any(a.shape != first for a in avals[1:]):
        got = ", ".join(str(a.shape) for a in avals)
        raise TypeError(f"{name} got incompatible shapes for broadcasting: {got}.")


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


def naryop(name: str, accepted, lower: Callable, result_dtype: Callable | None = None,
           same_dtypes: bool = True) -> Primitive:
    """An elementwise primitive of operands with equal shapes (and dtypes)."""
    prim = standard_primitive(name)
    accepted = frozenset(_flatten(accepted))

    @prim.def_abstract_eval
    def abstract_eval(*avals: ShapedArray, **params) -> ShapedArray:
        check_dtypes(name, accepted, *avals)
        if same_dtypes:
            check_same_dtypes(name, *avals)
        check_same_shapes(name, *avals)
        dtype = result_dtype(*(a.dtype for a in avals)) if result_dtype else avals[0].dtype
        return ShapedArray(avals[0].shape, dtype, all(a.weak_type for a in avals))

    batching.primitive_batchers[prim] = partial(elementwise_batcher, prim)
    register_lowering(prim, lambda ctx, *xs, **params: [lower(*xs, **params)])
    return prim


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
    """The Python function `op(x, y)` for a binary elementwise primitive: broadcasts
    rank-0 and size-1 operands (lax's implicit rule, no dtype promotion) and binds."""
    def op(x, y):
        return prim.bind(*broadcast_operands(prim.name, x, y))
    op.__name__ = op.__qualname__ = name or prim.name
    op.__doc__ = doc or (f"Elementwise `{name or prim.name}` of two arrays of one dtype "
                         "(lax does not promote dtypes).")
    return op


def _squeeze_to(x, shape: Sequence[int]):
    return x if aval_of(x).shape == tuple(shape) else reshape(x, shape)
