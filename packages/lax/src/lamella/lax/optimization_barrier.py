"""`optimization_barrier`: values pass through unchanged, and XLA may not move work
across the barrier (checkpointing uses it to keep recomputation from merging)."""

from __future__ import annotations

from typing import Any

from lamella.core import ad, batching
from lamella.core.tree_util import tree_flatten, tree_unflatten
from lamella.lax.lowering import hlo, register_lowering
from lamella.lax.standard import standard_primitive

__all__ = ["optimization_barrier", "optimization_barrier_p"]

optimization_barrier_p = standard_primitive("optimization_barrier", multiple_results=True)


def optimization_barrier(operand: Any, /) -> Any:
    """Returns `operand` (an array or a pytree of them) unchanged, preventing XLA from
    moving work across it.

    >>> import numpy as np
    >>> optimization_barrier(np.float32(1.0))
    Array(1., dtype=float32)
    """
    leaves, tree = tree_flatten(operand)
    return tree_unflatten(tree, optimization_barrier_p.bind(*leaves))


optimization_barrier_p.def_abstract_eval(lambda *avals: list(avals))
register_lowering(optimization_barrier_p,
                  lambda ctx, *xs: list(hlo.OptimizationBarrierOp(list(xs)).results))
ad.primitive_jvps[optimization_barrier_p] = lambda primals, tangents: (
    optimization_barrier_p.bind(*primals), tangents)
batching.primitive_batchers[optimization_barrier_p] = lambda args, dims: (
    optimization_barrier_p.bind(*args), dims)
