"""What the control-flow operators share: tracing user functions of pytrees into
closed jaxprs, and clear errors when types don't line up.

A body or branch is traced with `trace_fun`: the result is a closed jaxpr whose
leading inputs are the values it closes over (`consts`), so the enclosing
transformation sees them as ordinary operands of the control-flow primitive.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from lamella.core import ShapedArray, ShapeDtypeStruct, dtypes
from lamella.core.api_util import flatten_outputs, fun_name
from lamella.core.config import config
from lamella.core.jaxpr import ClosedJaxpr
from lamella.core.staging import trace_subjaxpr
from lamella.core.trace import Tracer, aval_of
from lamella.core.tree_util import PyTreeDef, tree_unflatten
from lamella.core.util import register_cache
from lamella.lax.conversion import convert_element_type


class TracedFunction:
    """A traced function: `closed` takes (consts..., flat args...)."""

    __slots__ = ("closed", "consts", "out_tree")

    def __init__(self, closed: ClosedJaxpr, consts: list[Any], out_tree: PyTreeDef):
        self.closed = closed
        self.consts = consts
        self.out_tree = out_tree

    @property
    def out_avals(self) -> list[ShapedArray]:
        return self.closed.out_avals


def trace_fun(fun: Callable, in_tree: PyTreeDef, in_avals: Sequence[ShapedArray],
              what: str) -> TracedFunction:
    """Traces `fun(*tree_unflatten(in_tree, leaves))` on abstract leaves."""
    out_trees: list[PyTreeDef] = []

    def flat(*leaves):
        out = fun(*tree_unflatten(in_tree, leaves))
        out_flat, tree = flatten_outputs(out, f"{what} ({fun_name(fun)})")
        out_trees.append(tree)
        return out_flat

    closed, consts = trace_subjaxpr(flat, list(in_avals))
    return TracedFunction(closed, consts, out_trees[0])


def avals_of(leaves: Sequence[Any]) -> list[ShapedArray]:
    return [aval_of(x) for x in leaves]


def describe_types(tree: PyTreeDef, avals: Sequence[ShapedArray]) -> str:
    """A pytree of type strings, e.g. `(f32[3], {'b': i32[]})`."""
    return str(tree_unflatten(tree, [_TypeStr(a) for a in avals]))


class _TypeStr:
    def __init__(self, aval: ShapedArray):
        self.text = ("weak " if aval.weak_type else "") + aval.str_short()

    def __repr__(self) -> str:
        return self.text


def same_types(avals_a: Sequence[ShapedArray], avals_b: Sequence[ShapedArray]) -> bool:
    """Equal shapes and dtypes (weak types may differ)."""
    return len(avals_a) == len(avals_b) and all(
        a.shape == b.shape and a.dtype == b.dtype for a, b in zip(avals_a, avals_b))


def check_carry(what: str, in_tree: PyTreeDef, in_avals: Sequence[ShapedArray],
                out_tree: PyTreeDef, out_avals: Sequence[ShapedArray]) -> None:
    """The loop carry must keep its structure, shapes and dtypes across iterations."""
    if in_tree != out_tree or not same_types(in_avals, out_avals):
        raise TypeError(
            f"{what} must return a carry with the same structure and types as its input "
            f"carry.\n  input carry:  {describe_types(in_tree, in_avals)}\n"
            f"  output carry: {describe_types(out_tree, out_avals)}")


def promote_weak_carry(leaves: Sequence[Any], in_avals: Sequence[ShapedArray],
                       out_avals: Sequence[ShapedArray]) -> tuple[list[Any], bool]:
    """JAX's rule for weakly typed loop carries (Python scalars): one whose dtype the
    body changes (an init of 0 updated with float32 values) becomes the promoted
    dtype, and the body is traced again; one whose dtype stays is kept as it is
    (weak types are not part of a carry's type), so the body is traced once."""
    promoted, changed = [], False
    for x, a, b in zip(leaves, in_avals, out_avals):
        if a.weak_type and (a.dtype != b.dtype or a.shape != b.shape):
            target = ShapeDtypeStruct(b.shape, b.dtype, weak_type=b.weak_type)
            x, changed = convert_element_type(x, dtypes.result_type(x, target)), True
        promoted.append(x)
    return promoted, changed


class TraceCache:
    """Reuses traces while the traced functions live, so calling a control-flow
    operator eagerly in a loop traces (and compiles) once.

    Entries are keyed by the functions (weakly) and the caller's key (argument
    structure and avals) plus the traced config. A trace that closes over
    tracers is valid for one call only and is never stored. As in JAX, a
    function that reads a global which later changes gets the old trace.
    """

    def __init__(self, per_function: int = 8):
        self._entries: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._per_function = per_function
        register_cache(self._entries.clear)

    def __call__(self, funs: Sequence[Callable], key: Any, trace: Callable[[], tuple]) -> tuple:
        """`trace()` returns a tuple whose second item is the list of consts."""
        try:
            entries = self._entries.setdefault(funs[0], OrderedDict())
            full_key = (tuple(map(weakref.ref, funs[1:])), key, config.trace_key())
        except TypeError:  # a callable that can't be weakly referenced: no reuse
            return trace()
        hit = entries.get(full_key)
        if hit is not None:
            entries.move_to_end(full_key)
            return hit
        result = trace()
        if not any(isinstance(c, Tracer) for c in result[1]):
            entries[full_key] = result
            if len(entries) > self._per_function:
                entries.popitem(last=False)
        return result
