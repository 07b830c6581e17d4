"""The public `vmap`: vectorize a function over an axis of its inputs (the
interpreter it drives is in `batching.py`).

>>> import numpy as np
>>> from lamella.core.structural import reduce_sum
>>> row_sums = vmap(lambda row: reduce_sum(row, (0,)))
>>> row_sums(np.arange(6.0, dtype=np.float32).reshape(2, 3))
array([ 3., 12.], dtype=float32)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from lamella.core.api_util import flatten_outputs, fun_name
from lamella.core.batching import BatchTrace
from lamella.core.rules import AxisData, matchaxis, not_mapped
from lamella.core.trace import TraceTag, aval_of, current_trace, set_current_trace
from lamella.core.trace_queries import extend_axis_env
from lamella.core.tree_util import (
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_structure,
    tree_unflatten,
)


def _is_axis_leaf(x: Any) -> bool:
    return x is None


def flatten_axes(what: str, values: Any, axes: Any) -> list[int | None]:
    """Broadcasts an axis spec, a pytree prefix of `values`, to one entry per leaf.

    The spec is matched against the values themselves, never against a tree rebuilt
    with placeholders: a custom node's unflatten only ever sees what the user gave it.
    """
    axis_leaves, axis_tree = tree_flatten(axes, is_leaf=_is_axis_leaf)
    for a in axis_leaves:
        if a is not None and (not isinstance(a, int) or isinstance(a, bool)):
            raise TypeError(f"{what} must be ints or None, got {a!r} of type "
                            f"{type(a).__name__} in {axes!r}")
    try:
        subtrees = axis_tree.flatten_up_to(values)
    except (ValueError, TypeError):
        raise ValueError(f"{what} specification must be a tree prefix of the corresponding "
                         f"value, got specification {axes!r} for value tree "
                         f"{tree_structure(values)}.") from None
    flat = []
    for axis, subtree in zip(axis_leaves, subtrees):
        flat += [axis] * tree_structure(subtree).num_leaves
    return flat


def _size_error(name: str, leaves, dims, arg_names) -> ValueError:
    lines = []
    for x, d, label in zip(leaves, dims, arg_names):
        if d is not None:
            aval = aval_of(x)
            lines.append(f"  axis {d} of {label} of type {aval.str_short()} has size "
                         f"{aval.shape[d]}")
    return ValueError(f"vmap of {name} got inconsistent sizes for the array axes to be "
                      "mapped:\n" + "\n".join(lines))


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_name: Any = None,
         axis_size: int | None = None, spmd_axis_name: Any = None,
         sum_match: bool = False) -> Callable:
    """Vectorizes `fun` over axis `in_axes` of its arguments, stacking outputs on `out_axes`.

    `in_axes` is an int, None (not mapped), or a tuple with one entry per
    positional argument, each a pytree prefix of that argument; keyword
    arguments are always mapped over axis 0. `axis_name` names the axis for
    collectives.

    Args:
      fun: the function to vectorize.
      in_axes: the mapped axis of each positional argument: an int, None, or a
        tuple (one entry per argument, each a pytree prefix of it).
      out_axes: where the mapped axis goes in each output (same forms).
      axis_name: a name for the mapped axis, for collectives inside `fun`.
      axis_size: the axis size, required when no argument is mapped.
      spmd_axis_name: accepted for JAX compatibility (single device here).
      sum_match: an output batched along the mapped axis whose out_axes entry is
        None is summed over the axis instead of being an error.

    Returns:
      The vectorized function: like `fun`, with one more axis on the mapped
      arguments and on the outputs.

    >>> import numpy as np
    >>> from lamella.core.structural import add_any_p
    >>> add = vmap(add_any_p.bind, in_axes=(0, None))
    >>> add(np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32))
    array([[1., 2., 3.],
           [1., 2., 3.]], dtype=float32)
    """
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)  # JAX accepts a list for the positional arguments
    if isinstance(in_axes, dict):
        raise TypeError(f"vmap in_axes must be an int, None, or a tuple of entries corresponding "
                        f"to the positional arguments passed to the function, but got "
                        f"{in_axes!r}.")
    name = fun_name(fun)

    @functools.wraps(fun)
    def vmapped(*args, **kwargs):
        if isinstance(in_axes, tuple) and len(in_axes) != len(args):
            raise ValueError(f"vmap in_axes must be an int, None, or a tuple with one entry per "
                             f"positional argument, but got len(in_axes)={len(in_axes)} for "
                             f"{len(args)} positional arguments to {name}.")
        flat, in_tree = tree_flatten((args, kwargs))
        arg_axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        dims = flatten_axes("vmap in_axes", (args, kwargs), (arg_axes, {k: 0 for k in kwargs}))
        labels = _leaf_labels(args, kwargs)
        for i, (x, d) in enumerate(zip(flat, dims)):
            if d is None:
                continue
            ndim = aval_of(x).ndim
            if not -ndim <= d < ndim:
                raise ValueError(
                    f"vmap was requested to map {labels[i]} of {name} along axis {d}, which "
                    f"implies that its rank should be at least {d + 1 if d >= 0 else -d}, but "
                    f"its type is {aval_of(x).str_short()}.")
            dims[i] = d % ndim
        sizes = {aval_of(x).shape[d] for x, d in zip(flat, dims) if d is not None}
        if axis_size is not None:
            sizes.add(axis_size)
        if not sizes:
            raise ValueError(f"vmap of {name} must have at least one non-None value in "
                             "in_axes, or an axis_size.")
        if len(sizes) > 1:
            if axis_size is not None and len(sizes - {axis_size}) == 1:
                raise ValueError(f"vmap of {name} got axis_size={axis_size}, but the mapped "
                                 f"axes have size {(sizes - {axis_size}).pop()}.")
            raise _size_error(name, flat, dims, labels)
        size = sizes.pop()
        trace = BatchTrace(current_trace(), TraceTag(), AxisData(axis_name, size, spmd_axis_name),
                           f"vmap of {name}")
        try:
            batched_args, batched_kwargs = tree_unflatten(in_tree, map(trace.wrap, flat, dims))
            # The name is also put in the axis environment, so that a jit traced inside
            # (which stages into a fresh trace) sees the axis its collectives name.
            named = [(axis_name, size)] if axis_name is not None else []
            with set_current_trace(trace), extend_axis_env(named):
                outs = fun(*batched_args, **batched_kwargs)
            flat_outs, out_tree = flatten_outputs(outs, f"vmapped {name}")
            out_dims = flatten_axes("vmap out_axes", outs, out_axes)
            results = []
            for out, target in zip(flat_outs, out_dims):
                val, dim = trace.to_batch_info(out)
                if target is None:
                    if dim is not not_mapped:
                        if not sum_match:
                            raise ValueError(f"vmap of {name} has an output batched along the "
                                             "mapped axis, but out_axes is None for it (pass "
                                             "sum_match=True to sum it over the axis).")
                        val = matchaxis(size, dim, not_mapped, val, sum_match=True)
                    results.append(val)
                    continue
                rank = aval_of(val).ndim + (dim is not_mapped)
                if not -rank <= target < rank:
                    raise ValueError(f"vmap out_axes={target} is out of range for an output of "
                                     f"rank {rank - 1} (plus the mapped axis).")
                results.append(matchaxis(size, dim, target % rank, val))
        finally:
            trace.invalidate()
        return tree_unflatten(out_tree, results)

    return vmapped


def _leaf_labels(args, kwargs) -> list[str]:
    labels = []
    for i, arg in enumerate(args):
        labels += [f"argument {i}{keystr(p)}" for p, _ in tree_flatten_with_path(arg)[0]]
    for key in sorted(kwargs):
        labels += [f"argument {key}{keystr(p)}" for p, _ in
                   tree_flatten_with_path(kwargs[key])[0]]
    return labels
