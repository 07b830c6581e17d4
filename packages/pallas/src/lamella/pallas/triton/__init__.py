"""lamella.pallas.triton: the GPU-flavoured names of JAX's `jax.experimental.pallas.triton`
(masked `load`/`store`, `dot`, atomics, `max_contiguous`, `CompilerParams`), which run
on CPU like the rest of lamella.pallas, and the Triton lowering used when a
program is lowered for a CUDA GPU (`custom_call.py`, `lowering.py` and its rule
files). `kernels_of(f, *args)` shows the Triton modules of `f`'s kernels and
`gpu_stablehlo(f, *args)` its StableHLO for a GPU, without one.

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
from lamella.pallas.triton.custom_call import gpu_stablehlo

_LOWERING_NAMES = ("TritonKernel", "TritonLoweringError", "kernels_of", "lower_kernel")


def __getattr__(name: str):
    # The lowering imports jaxlib's Triton bindings: only when it is used.
    if name in _LOWERING_NAMES:
        from lamella.pallas.triton import lowering, rule_table
        return getattr(lowering if hasattr(lowering, name) else rule_table, name)
    raise AttributeError(f"module 'lamella.pallas.triton' has no attribute {name!r}")

__all__ = ["CompilerParams", "TritonKernel", "TritonLoweringError", "atomic_add", "atomic_and",
           "atomic_cas", "atomic_max", "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor",
           "dot", "gpu_stablehlo", "kernels_of", "load", "lower_kernel", "max_contiguous",
           "store"]
