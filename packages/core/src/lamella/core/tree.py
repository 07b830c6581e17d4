"""JAX's ``jax.tree`` short names for the pytree functions of :mod:`lamella.core.tree_util`.

``tree.map`` is ``tree_util.tree_map`` and so on: the same function objects,
so there is no extra call on the way.

>>> from lamella.core import tree
>>> tree.map(lambda x: x * 2, {'a': 1, 'b': (2, 3)})
{'a': 2, 'b': (4, 6)}
"""

import dataclasses
from typing import Any

from lamella.core.tree_util import tree_all as all
from lamella.core.tree_util import tree_broadcast as broadcast
from lamella.core.tree_util import tree_flatten as flatten
from lamella.core.tree_util import tree_flatten_with_path as flatten_with_path
from lamella.core.tree_util import tree_leaves as leaves
from lamella.core.tree_util import tree_leaves_with_path as leaves_with_path
from lamella.core.tree_util import tree_map as map
from lamella.core.tree_util import tree_map_with_path as map_with_path
from lamella.core.tree_util import tree_reduce as reduce
from lamella.core.tree_util import tree_reduce_associative as reduce_associative
from lamella.core.tree_util import tree_structure as structure
from lamella.core.tree_util import tree_transpose as transpose
from lamella.core.tree_util import tree_unflatten as unflatten

__all__ = [
    "all",
    "broadcast",
    "flatten",
    "flatten_with_path",
    "leaves",
    "leaves_with_path",
    "map",
    "map_with_path",
    "reduce",
    "reduce_associative",
    "static",
    "structure",
    "transpose",
    "unflatten",
]


def static(**kwargs: Any) -> Any:
    """A dataclass field that `register_dataclass` treats as static (part of the treedef).

    Takes `dataclasses.field`'s arguments.

    >>> import dataclasses
    >>> from lamella.core.tree_util import register_dataclass
    >>> @register_dataclass
    ... @dataclasses.dataclass
    ... class Op:
    ...     x: float
    ...     kind: str = static(default="add")
    >>> leaves(Op(1.0))
    [1.0]
    """
    metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
    return dataclasses.field(metadata=metadata, **kwargs)
