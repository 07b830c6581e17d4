"""lamella's XLA runtime: the one package that drives jaxlib's internals.

Everything lamella needs from jaxlib's compiled half lives behind this
package, so a jaxlib upgrade touches nothing else. One module per concern:

- `backends`: the jaxlib configuration the C++ side reads on every call (x64,
  disable-jit), the avals arrays carry, single-device shardings, and the PJRT
  clients (CPU always, CUDA when a PJRT plugin is installed) and devices;
- `arrays`: the concrete array type, which *is* jaxlib's ``ArrayImpl`` (so
  jaxlib's C++ jit fast path accepts lamella arrays), and host <-> device;
- `executables`: compiling a StableHLO module into an `Executable`, donation;
- `fast_path`: the C++ dispatch fast path (``_jax.pjit``) and its pytree registry;
- `lapack`: jaxlib's LAPACK kernels as custom-call targets;
- `spmd`: arrays over several devices, and programs compiled for several devices.

    >>> import numpy as np
    >>> from lamella.lax import runtime
    >>> x = runtime.device_put(np.arange(3, dtype=np.float32))
    >>> x
    Array([0., 1., 2.], dtype=float32)
    >>> runtime.device_get(x)
    array([0., 1., 2.], dtype=float32)

Patching jaxlib's classes (``ArrayImpl``, ``SingleDeviceSharding``) is global to
the process: lamella and the ``jax`` package cannot share one process.
"""

from lamella.lax.runtime.arrays import (
    Array,
    DeletedArrayError,
    block_until_ready,
    device_get,
    device_put,
    from_dlpack,
    install_array_methods,
)
from lamella.lax.runtime.backends import (
    Device,
    XlaRuntimeError,
    approx_top_k_output_size,
    default_device,
    device_count,
    devices,
    live_arrays,
    memory_limit,
    process_index,
    release_free_memory,
    set_aval_factory,
    set_disable_jit,
    set_disable_jit_in_thread,
    set_num_cpu_devices,
    set_trace_context_in_thread,
    set_x64,
    set_x64_in_thread,
    sharding_for,
    x64_enabled,
)
from lamella.lax.runtime.executables import Executable, compile
from lamella.lax.runtime.fast_path import (
    FastPathData,
    clear_fast_path_caches,
    fast_path_data,
    flatten_arguments,
    make_fast_function,
    pytree_registry,
    register_pytree_node,
)
from lamella.lax.runtime.lapack import register_lapack_targets
from lamella.lax.runtime.spmd import (
    MeshSharding,
    Shard,
    SpmdExecutable,
    assemble,
    gather,
    mesh_sharding,
    put_sharded,
)

__all__ = [
    "Array",
    "Device",
    "XlaRuntimeError",
    "DeletedArrayError",
    "set_x64",
    "x64_enabled",
    "set_disable_jit",
    "set_disable_jit_in_thread",
    "set_trace_context_in_thread",
    "set_x64_in_thread",
    "set_aval_factory",
    "devices",
    "device_count",
    "default_device",
    "live_arrays",
    "memory_limit",
    "process_index",
    "set_num_cpu_devices",
    "release_free_memory",
    "sharding_for",
    "install_array_methods",
    "device_put",
    "device_get",
    "block_until_ready",
    "from_dlpack",
    "Executable",
    "compile",
    "pytree_registry",
    "register_pytree_node",
    "flatten_arguments",
    "FastPathData",
    "clear_fast_path_caches",
    "fast_path_data",
    "make_fast_function",
    "register_lapack_targets",
    "MeshSharding",
    "Shard",
    "SpmdExecutable",
    "assemble",
    "gather",
    "mesh_sharding",
    "put_sharded",
]
