"""Function plumbing shared by the transformations: names, signatures, and
turning Python calls into flat lists of arrays and back.

>>> fun_name(len)
'len'
>>> as_tuple(0), as_tuple("x"), as_tuple(None)
((0,), ('x',), ())
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from lamella.core.avals import ShapedArray, get_aval
from lamella.core.trace import Tracer, aval_of
from lamella.core.tree_util import PyTreeDef, keystr, tree_flatten, tree_flatten_with_path


def fun_signature(fun: Callable) -> inspect.Signature | None:
    """`fun`'s signature, or None for callables that have none (some builtins)."""
    try:
        return inspect.signature(fun)
    except (TypeError, ValueError):
        return None


def fun_name(fun: Callable) -> str:
    """The name errors and jaxprs use for `fun`."""
    return getattr(fun, "__name__", None) or type(fun).__name__


def fun_source(fun: Callable) -> str | None:
    """`file:line` where `fun` is defined, when it is Python code."""
    code = getattr(inspect.unwrap(fun), "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else None


def abstractify_args(flat_args: Sequence[Any], leaf_names: Callable[[], list[str]],
                     what: str) -> list[ShapedArray]:
    """The avals of flattened arguments, with an error naming a non-array argument."""
    avals = []
    for i, x in enumerate(flat_args):
        try:
            avals.append(aval_of(x))
        except TypeError:
            raise TypeError(
                f"Error interpreting argument to {what} as an abstract array. The problematic "
                f"value is of type {type(x).__name__} and was passed at `{leaf_names()[i]}`. "
                f"Only arrays, NumPy scalars and Python numbers can be traced: mark this "
                f"argument static with static_argnums/static_argnames, or convert it to an "
                f"array.") from None
    return avals


def leaf_names(signature: inspect.Signature | None, dyn_positions: Sequence[int],
               dyn_args: Sequence[Any], dyn_kwargs: dict[str, Any]) -> list[str]:
    """A name per flattened argument leaf, as the user wrote it: `params['w'][0]`."""
    params = list(signature.parameters) if signature is not None else []
    names = []
    for pos, arg in zip(dyn_positions, dyn_args):
        base = params[pos] if pos < len(params) and signature.parameters[
            params[pos]].kind is not inspect.Parameter.VAR_POSITIONAL else f"args[{pos}]"
        names.extend(base + keystr(path) for path, _ in tree_flatten_with_path(arg)[0])
    for key in sorted(dyn_kwargs):
        names.extend(key + keystr(path) for path, _ in
                     tree_flatten_with_path(dyn_kwargs[key])[0])
    return names


def flatten_outputs(outs: Any, what: str) -> tuple[list[Any], PyTreeDef]:
    """Flattens a transformed function's outputs, with an error naming a non-array leaf."""
    flat, tree = tree_flatten(outs)
    for path, leaf in tree_flatten_with_path(outs)[0]:
        if not isinstance(leaf, Tracer):
            try:
                get_aval(leaf)
            except TypeError:
                raise TypeError(f"{what} returned a value of type {type(leaf).__name__} at "
                                f"output{keystr(path)}; a transformed function can only return "
                                "arrays, numbers and pytrees of them.") from None
    return flat, tree


def resolve_static(signature: inspect.Signature | None, static_argnums: Sequence[int],
                   static_argnames: Sequence[str]) -> tuple[frozenset, frozenset]:
    """Completes static argnums from argnames and back, through the signature, so a
    static argument is static whether passed by position or by keyword."""
    nums = set(static_argnums)
    names = set(static_argnames)
    if signature is not None:
        params = list(signature.parameters.values())
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        for i, p in enumerate(positional):
            if p.name in names and p.kind is p.POSITIONAL_OR_KEYWORD:
                nums.add(i)
            if i in nums and p.kind is p.POSITIONAL_OR_KEYWORD:
                names.add(p.name)
    return frozenset(nums), frozenset(names)


def as_tuple(x: int | str | Sequence | None) -> tuple:
    """An argnums/argnames spec as a tuple."""
    if x is None:
        return ()
    return (x,) if isinstance(x, (int, str)) else tuple(x)
