"""Varying manual axes (JAX's "vma"): which manual mesh axes a value inside a
shard_map body differs over, carried in its type (`ShapedArray.vma`).

A shard_map input varies over the axes its in_spec splits it over; constants and
closed-over values vary over none. While a body with `check_vma=True` is traced,
each traced equation's results get their vma from `vma_rules` (keyed by primitive:
psum removes its axes, axis_index adds its axis, ...), and by default the union of
the operands' (an invariant operand of a varying one is implicitly made varying,
as JAX's inserted `pvary`). Primitives that carry a sub-jaxpr (jit, cond, scan,
custom_jvp, ...) keep what their abstract evaluation found from that jaxpr's
outputs. At the body's end shard_map checks each output against its out_spec.

Nothing here runs outside such a body: the core tracing hook
(`manual_axes_typing.propagate`) is installed only while one is being traced.

>>> from lamella.core import ShapedArray
>>> str(ShapedArray((4,), "float32", vma=frozenset({"x"})))
'float32[4]{V:x}'
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from lamella.core.avals import ShapedArray, manual_axes_typing
from lamella.core.jaxpr import ClosedJaxpr, Jaxpr

VmaRule = Callable[..., Any]
vma_rules: dict[Any, VmaRule] = {}
"""Per primitive: `rule(*in_vmas, **params)` -> the result's vma (a frozenset), or one
per result for a primitive with several results."""

_EMPTY: frozenset = frozenset()


class _Typing(threading.local):
    """Per thread: for each shard_map body being traced, innermost last, whether its
    values are typed with their varying axes (its check_vma)."""

    def __init__(self) -> None:
        self.stack: list[bool] = []


_typing = _Typing()
_lock = threading.Lock()
_typed_bodies = 0  # over all threads: while nonzero, tracing calls `propagate`


def typing_on() -> bool:
    """Whether the innermost shard_map body now traced (if any) types vma."""
    return bool(_typing.stack) and _typing.stack[-1]


_mesh_order: tuple = ()  # the axis names of the mesh of the last body entered


def _order(vma: frozenset) -> list:
    """`vma` in the order JAX prints it: that of the mesh's axes."""
    known = [n for n in _mesh_order if n in vma]
    return known + sorted((n for n in vma if n not in _mesh_order), key=str)


manual_axes_typing.order = _order


class typed_body:
    """Inside a shard_map body over a mesh with axes `axis_names`, traced with (`on`)
    or without vma typing."""

    def __init__(self, on: bool, axis_names: tuple):
        self.on = on
        self.axis_names = axis_names

    def __enter__(self) -> None:
        global _typed_bodies, _mesh_order
        _mesh_order = self.axis_names
        _typing.stack.append(self.on)
        with _lock:
            _typed_bodies += 1
            manual_axes_typing.propagate = propagate

    def __exit__(self, *exc: Any) -> None:
        global _typed_bodies
        _typing.stack.pop()
        with _lock:
            _typed_bodies -= 1
            if not _typed_bodies:
                manual_axes_typing.propagate = None


def _has_subjaxpr(params: dict) -> bool:
    for v in params.values():
        if isinstance(v, (ClosedJaxpr, Jaxpr)):
            return True
        if isinstance(v, (tuple, list)) and v and isinstance(v[0], (ClosedJaxpr, Jaxpr)):
            return True
    return False


def with_vma(aval: ShapedArray, vma: frozenset) -> ShapedArray:
    """`aval` varying over exactly `vma`."""
    if aval.vma == vma:
        return aval
    return ShapedArray(aval.shape, aval.dtype, aval.weak_type, aval.sharding, vma)


def propagate(primitive: Any, in_avals: list, out: Any, params: dict) -> Any:
    """The results `out` of `primitive` applied to values of types `in_avals`, with
    their varying manual axes set (the core staging trace calls this)."""
    if not typing_on():
        return out
    rule = vma_rules.get(primitive)
    if rule is not None:
        vma = rule(*(a.vma for a in in_avals), **params)
    elif _has_subjaxpr(params):
        return out
    elif len(in_avals) == 1:
        vma = in_avals[0].vma
    else:
        vma = _EMPTY.union(*(a.vma for a in in_avals))
    if primitive.multiple_results:
        if isinstance(vma, frozenset):
            return [with_vma(a, vma) for a in out]
        return [with_vma(a, v) for a, v in zip(out, vma)]
    return with_vma(out, vma)


def varying_over(names: str) -> VmaRule:
    """The rule of a collective whose results vary over its axes `names` (a parameter
    name) on top of its operand's: all_gather, ppermute, axis_index, ..."""
    def rule(*vmas, **params):
        return _EMPTY.union(*vmas, params[names]) if vmas else frozenset(params[names])
    return rule


def invariant_over(names: str) -> VmaRule:
    """The rule of a reduction over its axes `names` (psum, pmax, pmin): each result
    varies over its operand's axes less those."""
    def rule(*vmas, **params):
        return [v - frozenset(params[names]) for v in vmas]
    return rule
