"""jit's `in_shardings` and `out_shardings`: arguments and results pinned to layouts.

Each is a sharding (NamedSharding, or a PartitionSpec under the current mesh), None
(the layout is left to the arguments and XLA's partitioner), or a pytree prefix of
them: of the tuple of non-static positional arguments for `in_shardings`, of the
result for `out_shardings`. Inside the trace they become sharding constraints on
the parameters and results, so the SPMD program carries them and its parameters
are placed there; before a call, an argument committed to another layout is an
error, as in JAX.

>>> import numpy as np
>>> from lamella.core.sharding import P, make_mesh
>>> mesh = make_mesh((1,), ("x",))
>>> rows = NamedSharding(mesh, P("x"))
>>> [s and s.spec for s in flat_shardings((rows, None), (np.ones(2), {"a": 1, "b": 2}),
...                                       "in_shardings")]
[P('x',), None, None]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lamella.core.sharding import NamedSharding, PartitionSpec, as_named, sharding_constraint_p
from lamella.core.tree_util import tree_flatten, tree_structure


def _is_leaf(s: Any) -> bool:
    return s is None or isinstance(s, (NamedSharding, PartitionSpec))


def flat_shardings(shardings: Any, values: Any, what: str) -> list[NamedSharding | None]:
    """One sharding (or None) per leaf of `values`, from `shardings`, a prefix of it."""
    leaves, prefix = tree_flatten(shardings, is_leaf=_is_leaf)
    for s in leaves:
        if not _is_leaf(s):
            raise TypeError(f"jit {what}: expected NamedSharding, PartitionSpec or None "
                            f"leaves, got {s!r}")
    try:
        subtrees = prefix.flatten_up_to(values)
    except (ValueError, TypeError) as e:
        raise ValueError(f"jit {what} specification must be a tree prefix of the "
                         f"corresponding value, got specification {shardings!r} for value "
                         f"tree {tree_structure(values)}: {e}") from None
    out: list[NamedSharding | None] = []
    for s, sub in zip(leaves, subtrees):
        named = None if s is None else as_named(s, f"jit {what}")
        out += [named] * len(tree_flatten(sub)[0])
    return out


def constrain(values: list[Any], shardings: list[NamedSharding | None],
              what: str) -> list[Any]:
    """Each traced value bound to its layout (a sharding constraint) where one is given."""
    out = []
    for x, s in zip(values, shardings):
        if s is not None:
            try:
                s.check_shape(np.shape(x))
            except ValueError as e:
                raise ValueError(f"jit {what}: {e}") from None
            x = sharding_constraint_p.bind(x, sharding=s)
        out.append(x)
    return out


def check_committed(args: list[Any], shardings: list[NamedSharding | None],
                    names: Any) -> None:
    """An argument already committed to another layout than `in_shardings` asks is an
    error (JAX never moves committed arrays silently)."""
    for i, (x, s) in enumerate(zip(args, shardings)):
        if s is None or not getattr(x, "committed", False):
            continue
        got = x.sharding
        ndim = np.ndim(x)
        if isinstance(got, NamedSharding) and got.mesh._flat_devices == s.mesh._flat_devices \
                and got.hlo_sharding_text(ndim) == s.hlo_sharding_text(ndim):
            continue
        if got.num_devices == 1 and s.num_devices == 1 and got.device_set == s.device_set:
            continue
        label = names()[i] if i < len(names()) else f"argument {i}"
        raise ValueError(
            f"Sharding passed to jit does not match the sharding on the respective arg. "
            f"Got jit sharding: {s} and arg sharding: {got} for {label} of shape "
            f"{np.shape(x)}; device_put the argument to the sharding first")
