"""`composite`: a named operation with a decomposition, for compilers that know it.

`composite(decomposition, name, version)` makes a function whose calls bind
`composite_p` with the traced decomposition (a closed jaxpr), the name, the
version and the keyword arguments as static attributes. It lowers to a
`stablehlo.composite` op naming a private function that holds the
decomposition: a backend that implements the named operation may use its own
kernel, any other (XLA's CPU backend) inlines the decomposition.

Unlike JAX, composites are differentiable (through the decomposition, which
the derivative inlines) and batch by batching the decomposition (the batched
call stays a composite).

>>> import numpy as np
>>> from functools import partial
>>> import lamella.lax as lax
>>> @partial(composite, name="my.tangent")
... def tangent(x):
...     return lax.div(lax.sin(x), lax.cos(x))
>>> tangent(np.float32(0.5))
Array(0.5463025, dtype=float32)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad, batching, jvp, tree_util
from lamella.core.jaxpr import ClosedJaxpr, eval_jaxpr
from lamella.core.staging import trace_to_jaxpr
from lamella.core.trace import Tracer, aval_of
from lamella.lax.lowering import (
    _define_function,
    aval_to_ir_type,
    hlo,
    i32_attr,
    ir,
    ir_attribute,
    register_lowering,
)
from lamella.lax.standard import standard_primitive

__all__ = ["composite", "composite_p"]

composite_p = standard_primitive("composite", multiple_results=True)


def composite(decomposition: Callable, name: str, version: int = 0) -> Callable:
    """Wraps `decomposition` as the composite operation `name` (see the module
    docstring). Keyword arguments of the call are the composite's attributes:
    static values (numbers, strings, NumPy arrays, tuples of them), passed on to
    the decomposition."""
    @functools.wraps(decomposition)
    def call(*args: Any, **kwargs: Any) -> Any:
        if any(isinstance(v, Tracer) for v in tree_util.tree_leaves(kwargs)):
            raise TypeError(f"composite '{name}': attributes (keyword arguments) must be "
                            "static values, not traced arrays; pass arrays as positional "
                            "arguments (NumPy arrays are fine as attributes).")
        flat_args, in_tree = tree_util.tree_flatten(args)
        out_trees = []

        def flat(*leaves):
            out = decomposition(*tree_util.tree_unflatten(in_tree, leaves), **kwargs)
            leaves_out, tree = tree_util.tree_flatten(out)
            out_trees.append(tree)
            return leaves_out
        avals = [ShapedArray(aval_of(x).shape, aval_of(x).dtype, aval_of(x).weak_type)
                 for x in flat_args]
        jaxpr, consts = trace_to_jaxpr(flat, avals)
        closed = ClosedJaxpr(jaxpr, consts)
        attributes = tuple((k, _hashable(v)) for k, v in kwargs.items())
        outs = composite_p.bind(*flat_args, name=name, attributes=attributes,
                                version=int(version), jaxpr=closed)
        return tree_util.tree_unflatten(out_trees[0], outs)
    return call


class _HashableArray:
    """A NumPy attribute value, compared and hashed by contents (params must hash)."""

    __slots__ = ("array",)

    def __init__(self, array: Any):
        self.array = array

    def __eq__(self, other: object) -> bool:
        return (type(other) is _HashableArray and self.array.dtype == other.array.dtype
                and self.array.shape == other.array.shape
                and bool((self.array == other.array).all()))

    def __hash__(self) -> int:
        return hash((self.array.dtype, self.array.shape, self.array.tobytes()))

    def __repr__(self) -> str:
        return repr(self.array)


def _hashable(value: Any) -> Any:
    if isinstance(value, (np.ndarray, np.generic)):
        return _HashableArray(np.asarray(value))
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, _HashableArray):
        return value.array
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


@composite_p.def_abstract_eval
def _composite_abstract_eval(*avals, jaxpr, **_):
    return jaxpr.out_avals


def _composite_lowering(ctx, *args, name, attributes, version, jaxpr):
    fn = _define_function(ctx.module_context, jaxpr, name)
    attrs = {k: ir_attribute(_plain(v)) for k, v in attributes if v is not None}
    return list(hlo.CompositeOp([aval_to_ir_type(a) for a in ctx.avals_out], list(args),
                                name=ir.StringAttr.get(name),
                                decomposition=ir.FlatSymbolRefAttr.get(fn.name.value),
                                composite_attributes=ir.DictAttr.get(attrs),
                                version=i32_attr(version)).results)


def _composite_jvp(primals, tangents, *, jaxpr, **_):
    # The derivative of the decomposition, inlined.
    return jvp(lambda *xs: eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *xs), list(primals),
               [ad.instantiate_zeros(t) for t in tangents])


def _composite_batch(args, dims, *, jaxpr, **params):
    size = next(aval_of(x).shape[d] for x, d in zip(args, dims) if d is not None)
    batched, out_dims = batching.batch_jaxpr(jaxpr, batching.AxisData(None, size),
                                             tuple(dims), instantiate=True)
    return composite_p.bind(*args, jaxpr=batched, **params), list(out_dims)


register_lowering(composite_p, _composite_lowering)
ad.primitive_jvps[composite_p] = _composite_jvp
batching.primitive_batchers[composite_p] = _composite_batch
