"""lamella.pallas.triton: the GPU-flavoured names of JAX's `jax.experimental.pallas.triton`
(masked `load`/`store`, `dot`, atomics, `max_contiguous`, `CompilerParams`), which run
on CPU like the rest of lamella.pallas.

>>> from lamella.pallas import triton as plgpu
>>> plgpu.CompilerParams(num_warps=4)
CompilerParams(num_warps=4, num_stages=None)
"""

from lamella.pallas.language import (
    atomic_add,
    atomic_and,
    atomic_cas,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_xchg,
    atomic_xor,
    dot,
    load,
    max_contiguous,
    store,
)
from lamella.pallas.specs import CompilerParams

__all__ = ["CompilerParams", "atomic_add", "atomic_and", "atomic_cas", "atomic_max",
           "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor", "dot", "load",
           "max_contiguous", "store"]
