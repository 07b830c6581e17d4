"""lamella.pallas: kernels written on refs over a grid of blocks (JAX's
`jax.experimental.pallas`), run on CPU as one XLA program.

>>> import numpy as np
>>> import lamella.core as lc
>>> import lamella.numpy as jnp
>>> import lamella.pallas as pl
>>> def add_kernel(x_ref, y_ref, o_ref):
...     o_ref[...] = x_ref[...] + y_ref[...]
>>> @lc.jit
... def add(x, y):
...     return pl.pallas_call(add_kernel, out_shape=lc.ShapeDtypeStruct(x.shape, x.dtype),
...                           grid=(2,), in_specs=[pl.BlockSpec((4,), lambda i: (i,))] * 2,
...                           out_specs=pl.BlockSpec((4,), lambda i: (i,)))(x, y)
>>> add(jnp.arange(8.0), jnp.ones(8))
Array([1., 2., 3., 4., 5., 6., 7., 8.], dtype=float32)
"""

from lamella.core.state import Slice, ds, dslice, run_state
from lamella.pallas import triton
from lamella.pallas.cost import estimate_cost
from lamella.pallas.grid_context import num_programs, program_id
from lamella.pallas.language import (
    atomic_add,
    atomic_and,
    atomic_cas,
    atomic_max,
    atomic_min,
    atomic_or,
    atomic_xchg,
    atomic_xor,
    cdiv,
    debug_print,
    dot,
    load,
    loop,
    max_contiguous,
    multiple_of,
    next_power_of_2,
    run_scoped,
    store,
    when,
)
from lamella.pallas.pallas_call import pallas_call, pallas_call_p
from lamella.pallas.specs import (
    ANY,
    HOST,
    Blocked,
    BlockSpec,
    CompilerParams,
    CostEstimate,
    Element,
    GridSpec,
    MemoryRef,
    MemorySpace,
    Squeezed,
    no_block_spec,
    squeezed,
)

__version__ = "0.1.0"

__all__ = [
    "ANY", "HOST", "BlockSpec", "Blocked", "CompilerParams", "CostEstimate", "Element",
    "GridSpec", "MemoryRef", "MemorySpace", "Slice", "Squeezed", "atomic_add", "atomic_and",
    "atomic_cas", "atomic_max", "atomic_min", "atomic_or", "atomic_xchg", "atomic_xor", "cdiv",
    "debug_print", "dot", "ds", "dslice", "estimate_cost", "load", "loop", "max_contiguous",
    "multiple_of", "next_power_of_2", "no_block_spec", "num_programs", "pallas_call",
    "pallas_call_p", "program_id", "run_scoped", "run_state", "squeezed", "store", "triton",
    "when",
]
