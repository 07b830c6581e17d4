"""lamella.flatten_util: `jax.flatten_util`'s `ravel_pytree`, a pytree of arrays as one
flat vector and the function that rebuilds the pytree from such a vector (for
optimizers and solvers written for vectors).

>>> import lamella.numpy as lnp
>>> flat, unravel = ravel_pytree({"w": lnp.ones((2, 2)), "b": lnp.zeros(1)})
>>> flat
Array([0., 1., 1., 1., 1.], dtype=float32)
>>> unravel(flat)["w"].shape
(2, 2)
"""

from __future__ import annotations

import math
import os as _os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import lamella.numpy as lnp
from lamella import lax
from lamella.core.source_info import register_internal_path as _register_internal_path
from lamella.core.trace import aval_of
from lamella.core.tree_util import tree_flatten, tree_unflatten

__all__ = ["ravel_pytree"]


def ravel_pytree(pytree: Any) -> tuple[Any, Callable[[Any], Any]]:
    """`(flat, unravel)`: every leaf of `pytree` raveled and concatenated into the 1-D
    array `flat` (of the leaves' promoted dtype), and `unravel`, which splits a vector
    like `flat` back into the pytree, each leaf with its own shape and dtype.

    Works under jit, grad and vmap. As in JAX, `unravel` refuses a vector of another
    length (ValueError); when the leaves' dtypes differ it also refuses another dtype
    (TypeError), and when they all share one dtype its leaves take the vector's dtype
    (and weak type: Python-scalar leaves stay weakly typed).

    >>> import lamella.numpy as lnp
    >>> flat, unravel = ravel_pytree((lnp.arange(2), 0.5))
    >>> flat, unravel(flat * 4)
    (Array([0. , 1. , 0.5], dtype=float32), (Array([0, 4], dtype=int32), Array(2., dtype=float32)))
    """
    leaves, treedef = tree_flatten(pytree)
    flat, unravel_leaves = _ravel_leaves(leaves)
    return flat, _Unravel(treedef, unravel_leaves)


class _Unravel:
    """The inverse of one `ravel_pytree` call (a class, so that it hashes and compares by
    what it rebuilds, and jit caches on it when passed as a static argument)."""

    def __init__(self, treedef: Any, unravel_leaves: _UnravelLeaves):
        self.treedef, self.unravel_leaves = treedef, unravel_leaves

    def __call__(self, flat: Any) -> Any:
        return tree_unflatten(self.treedef, self.unravel_leaves(flat))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, _Unravel) and self.treedef == other.treedef
                and self.unravel_leaves == other.unravel_leaves)

    def __hash__(self) -> int:
        return hash((self.treedef, self.unravel_leaves))

    def __repr__(self) -> str:
        return f"unravel_pytree({self.treedef})"


class _UnravelLeaves:
    """Splits a flat vector into leaves of the recorded shapes and dtypes."""

    def __init__(self, dtype: np.dtype, shapes: Sequence[tuple[int, ...]],
                 dtypes: Sequence[np.dtype]):
        self.dtype, self.shapes, self.dtypes = dtype, tuple(shapes), tuple(dtypes)
        self.sizes = tuple(math.prod(s) for s in self.shapes)

    def _key(self) -> tuple:
        return self.dtype, self.shapes, self.dtypes

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _UnravelLeaves) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __call__(self, flat: Any) -> list[Any]:
        flat = lnp.asarray(flat)
        total = sum(self.sizes)
        if aval_of(flat).shape != (total,):
            raise ValueError(f"unravel: the vector must have shape ({total},), the total size "
                             f"of the pytree's leaves; got shape {aval_of(flat).shape}")
        # One dtype among the leaves: nothing to convert back, so any dtype is taken.
        mixed = len(set(self.dtypes)) > 1
        if mixed and aval_of(flat).dtype != self.dtype:
            raise TypeError(f"unravel function given array of dtype {aval_of(flat).dtype}, "
                            f"but expected dtype {self.dtype}")
        leaves, start = [], 0
        for shape, dtype, size in zip(self.shapes, self.dtypes, self.sizes):
            leaf = lax.reshape(lax.slice_in_dim(flat, start, start + size), shape)
            leaves.append(lax.convert_element_type(leaf, dtype) if mixed else leaf)
            start += size
        return leaves


def _ravel_leaves(leaves: list[Any]) -> tuple[Any, _UnravelLeaves]:
    arrays = [lnp.asarray(leaf) for leaf in leaves]
    dtypes = [aval_of(a).dtype for a in arrays]
    # The dtypes (not the values) promote: a Python scalar leaf counts as its default type.
    dtype = lnp.result_type(*dtypes) if dtypes else lnp.zeros(0).dtype
    shapes = [aval_of(a).shape for a in arrays]
    # Leaves of one dtype keep their weak type (all weak: a weak vector), as in JAX.
    pieces = [lax.reshape(a if len(set(dtypes)) == 1 else lax.convert_element_type(a, dtype),
                          (math.prod(s),))
              for a, s in zip(arrays, shapes)]
    flat = lax.concatenate(pieces, 0) if pieces else lax.full((0,), 0, dtype)
    return flat, _UnravelLeaves(dtype, shapes, dtypes)


_register_internal_path(_os.path.dirname(__file__))  # user lines, not ours, in errors
