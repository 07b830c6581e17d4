"""The runtime's foundation: the jaxlib configuration its C++ side reads, the aval
every array carries, single-device shardings, and the PJRT clients and devices.

Clients are created lazily, once per process: CPU always, CUDA first when a
PJRT plugin is installed and works.

>>> devices("cpu")[0].platform
'cpu'
"""

from __future__ import annotations

import ctypes
import gc
import importlib.util
import os
import threading
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from jaxlib import _jax
from jaxlib import xla_client as xc

Device = _jax.Device
XlaRuntimeError = _jax.JaxRuntimeError

Shape = tuple[int, ...]


# ----------------------------------------------------------------------------
# Process-wide configuration read by jaxlib's C++ side.
#
# The C++ dispatch path and batched_device_put refuse to run until these three
# states are set. Two Configs join the jit cache key (each costs time on every
# call): x64, which changes how Python scalars and 64-bit NumPy inputs are typed,
# and the thread's trace context (whether it is tracing, and its `with` overrides
# of other flags), so that a call made while tracing, or under an override, never
# runs a program compiled outside one.

_X64 = _jax.config.Config("lamella_enable_x64", False, include_in_jit_key=True)
_TRACE_CONTEXT = _jax.config.Config("lamella_trace_context", None, include_in_jit_key=True)
_DISABLE_JIT = _jax.config.Config("lamella_disable_jit", False, include_in_jit_key=False)
_POST_HOOK = _jax.config.Config("lamella_post_hook", None, include_in_jit_key=False)
_jax.jax_jit.set_enable_x64_state(_X64)
_jax.jax_jit.set_disable_jit_state(_DISABLE_JIT)
_jax.jax_jit.set_post_hook_state(_POST_HOOK)


def _mirror(state: Any, value: bool | None, local: bool) -> None:
    """Sets jaxlib's copy of a flag: process-wide, or this thread's override (None: none)."""
    if not local:
        state.set_global(bool(value))
    else:
        state.set_local(_jax.config.unset if value is None else bool(value))


def set_x64_in_thread(enabled: bool | None) -> None:
    """Override 64-bit mode in this thread only (None: back to the process-wide value).

    >>> set_x64_in_thread(True); x64_enabled()
    True
    >>> set_x64_in_thread(None); x64_enabled()
    False
    """
    _mirror(_X64, enabled, local=True)


def set_disable_jit_in_thread(disabled: bool | None) -> None:
    """Like `set_disable_jit`, for this thread only (None: back to the process-wide value)."""
    _mirror(_DISABLE_JIT, disabled, local=True)


def set_trace_context_in_thread(context: Any) -> None:
    """This thread's trace context in the jit cache key: any hashable value, None when
    the thread is at the top level with no override.

    >>> set_trace_context_in_thread(("tracing",)); set_trace_context_in_thread(None)
    """
    _TRACE_CONTEXT.set_local(_jax.config.unset if context is None else context)


def set_x64(enabled: bool) -> None:
    """Turn 64-bit types on or off for the whole process (lamella's ``enable_x64``).

    With x64 off (the default), 64-bit inputs are stored as their 32-bit
    counterparts, as in JAX.

    >>> from lamella.lax.runtime import device_put
    >>> set_x64(False)
    >>> device_put(np.arange(2)).dtype
    dtype('int32')
    """
    _X64.set_global(bool(enabled))


def x64_enabled() -> bool:
    """Whether 64-bit types are on.

    >>> x64_enabled()
    False
    """
    return bool(_X64.value)


def set_disable_jit(disabled: bool) -> None:
    """Make fast functions built with ``fun=`` call ``fun`` directly (no compile).

    >>> set_disable_jit(False)
    """
    _DISABLE_JIT.set_global(bool(disabled))


# ----------------------------------------------------------------------------
# Avals: the abstract value attached to every array.


class _Aval:
    """The runtime's own aval, used until a caller installs a factory."""

    __slots__ = ("shape", "dtype", "weak_type", "ndim")

    def __init__(self, shape: Shape, dtype: np.dtype, weak_type: bool = False):
        self.shape = shape
        self.dtype = dtype
        self.weak_type = weak_type
        self.ndim = len(shape)

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({describe(self.shape, self.dtype)}{weak})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Aval) and (
            (self.shape, self.dtype, self.weak_type) == (other.shape, other.dtype, other.weak_type)
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))


AvalFactory = Callable[[Shape, np.dtype, bool], Any]
_aval_factory: AvalFactory = _Aval


def set_aval_factory(factory: AvalFactory) -> AvalFactory:
    """Build every later array's ``.aval`` with ``factory(shape, dtype, weak_type)``.

    The result needs ``.shape``, ``.dtype``, ``.weak_type`` and ``.ndim``;
    lamella.core installs its ``ShapedArray`` here. Executables keep the avals
    made when they were compiled. Returns the factory it replaces.

    >>> from lamella.lax.runtime import device_put
    >>> class Tagged(_Aval):
    ...     pass
    >>> previous = set_aval_factory(Tagged)
    >>> type(device_put(1.0).aval).__name__
    'Tagged'
    >>> _ = set_aval_factory(previous)
    """
    global _aval_factory
    previous, _aval_factory = _aval_factory, factory
    return previous


def make_aval(shape: Shape, dtype: np.dtype, weak_type: bool = False) -> Any:
    """An aval made by the installed factory (lamella.core's ShapedArray once lax loads)."""
    return _aval_factory(shape, dtype, weak_type)


def describe(shape: Shape, dtype: np.dtype) -> str:
    """`float32[2,3]`: a type for error messages."""
    return f"{np.dtype(dtype).name}[{','.join(map(str, shape))}]"


# ----------------------------------------------------------------------------
# Shardings. The C++ side calls these Python attributes on an array's sharding
# (device_put, result handlers, the jit fast path). They are patched onto the
# exact C++ class rather than a subclass: equal instances of the C++ class
# compare equal in C++, so arrays made with different instances share cache
# entries. Python's == and hash are patched to agree with C++.


def _replicated_hlo_sharding(self: _jax.SingleDeviceSharding, num_dimensions: int) -> Any:
    return xc.HloSharding.replicate()


def _sharding_repr(self: _jax.SingleDeviceSharding) -> str:
    return f"SingleDeviceSharding(device={self._device!r})"


def _sharding_eq(self: _jax.SingleDeviceSharding, other: object) -> bool:
    return (
        isinstance(other, _jax.SingleDeviceSharding)
        and self._device == other._device
        and self._memory_kind == other._memory_kind
    )


def _sharding_hash(self: _jax.SingleDeviceSharding) -> int:
    return hash((self._device, self._memory_kind))


for _name, _value in {
    "_to_xla_hlo_sharding": _replicated_hlo_sharding,
    "_device_assignment": property(lambda self: (self._device,)),
    "memory_kind": property(lambda self: self._memory_kind),
    "num_devices": property(lambda self: 1),
    "device_set": property(lambda self: {self._device}),
    "is_fully_replicated": property(lambda self: True),
    "is_fully_addressable": property(
        lambda self: self._device.process_index == self._device.client.process_index()
    ),
    "__repr__": _sharding_repr,
    "__eq__": _sharding_eq,
    "__hash__": _sharding_hash,
}.items():
    setattr(_jax.SingleDeviceSharding, _name, _value)


# ----------------------------------------------------------------------------
# Backends: created on first use, once per process.

_CUDA_PLUGIN_PACKAGES = ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12")


class _Backends(NamedTuple):
    clients: dict[str, Any]  # platform name -> client; the first is the default
    shardings: dict[Any, _jax.SingleDeviceSharding]  # one per device


_backends_state: _Backends | None = None
_backends_lock = threading.Lock()
_num_cpu_devices = -1  # -1: XLA's choice (one, or what XLA_FLAGS forces)


def set_num_cpu_devices(count: int) -> None:
    """How many devices the CPU client gets (-1: XLA's choice); only before it starts.

    Raises RuntimeError once the backend runs with another count: PJRT fixes a
    client's devices when it is made.

    >>> set_num_cpu_devices(device_count("cpu"))
    """
    global _num_cpu_devices
    count = int(count)
    if count == 0 or count < -1:
        raise ValueError(f"num_cpu_devices must be -1 or a positive count, got {count}")
    if _backends_state is not None:
        current = len(_backends_state.clients["cpu"].devices())
        if count not in (-1, current):
            raise RuntimeError(
                f"num_cpu_devices={count} was set after the CPU backend started with {current} "
                "device(s); set it before the first array or computation (or set "
                "LAMELLA_NUM_CPU_DEVICES in the environment)")
    _num_cpu_devices = count


_cpu_cluster: tuple[Any, int, int] | None = None  # distributed client, node id, node count


def set_cpu_cluster(client: Any, node_id: int, num_nodes: int) -> None:
    """Makes the CPU client (not started yet) one node of a multi-process program."""
    global _cpu_cluster
    if _backends_state is not None:
        raise RuntimeError("the CPU backend already started for one process")
    _cpu_cluster = (client, node_id, num_nodes)


def _backends() -> _Backends:
    if _backends_state is not None:
        return _backends_state
    return _create_backends()


def _create_backends() -> _Backends:
    global _backends_state
    with _backends_lock:
        if _backends_state is None:
            clients = {}
            cuda = _make_cuda_client()
            if cuda is not None:
                clients["cuda"] = cuda  # an accelerator, when present, is the default
            # The CPU client reads XLA_FLAGS (--xla_force_host_platform_device_count)
            # from the environment when it is created.
            options: dict[str, Any] = {}
            if _num_cpu_devices > 0:
                options["num_devices"] = _num_cpu_devices
            if _cpu_cluster is not None:
                client, node_id, num_nodes = _cpu_cluster
                options.update(distributed_client=client, node_id=node_id, num_nodes=num_nodes,
                               collectives=_jax.make_gloo_tcp_collectives(client))
            clients["cpu"] = xc.make_cpu_client(**options)
            shardings = {
                d: _jax.SingleDeviceSharding(d) for c in clients.values() for d in c.devices()
            }
            _backends_state = _Backends(clients, shardings)
    return _backends_state


def _find_cuda_plugin() -> str | None:
    # The PJRT plugin ships as jax_plugins/xla_cudaNN/xla_cuda_plugin.so. Its
    # __init__ imports jax, so locate the file without importing the package.
    for package in _CUDA_PLUGIN_PACKAGES:
        try:
            spec = importlib.util.find_spec(package)
        except ImportError:
            continue
        for folder in (spec.submodule_search_locations or []) if spec else []:
            path = os.path.join(folder, "xla_cuda_plugin.so")
            if os.path.exists(path):
                return path
    return None


def _make_cuda_client() -> Any | None:
    path = _find_cuda_plugin()
    if path is None:
        return None
    try:
        if not xc.pjrt_plugin_loaded("cuda"):
            xc.load_pjrt_plugin_dynamically("cuda", path)
        if not xc.pjrt_plugin_initialized("cuda"):
            xc.initialize_pjrt_plugin("cuda")
        return xc.make_c_api_client("cuda", xc.generate_pjrt_gpu_plugin_options())
    except Exception as err:  # no GPU, driver mismatch, ...: CPU still works
        warnings.warn(f"CUDA PJRT plugin at {path} not used: {err}", RuntimeWarning, stacklevel=3)
        return None


def _client(backend: str | None) -> Any:
    clients = _backends().clients
    if backend is None:
        return next(iter(clients.values()))
    name = "cuda" if backend == "gpu" else backend
    if name not in clients:
        raise RuntimeError(f"backend {backend!r} is not available; available: {', '.join(clients)}")
    return clients[name]


def devices(backend: str | None = None) -> list[Device]:
    """The devices of ``backend`` ('cpu', 'cuda' or 'gpu'); default: the default backend.

    >>> devices("cpu")[0].platform
    'cpu'
    """
    return list(_client(backend).devices())


def device_count(backend: str | None = None) -> int:
    """How many devices ``backend`` has.

    >>> device_count("cpu") >= 1
    True
    """
    return len(_client(backend).devices())


def process_index() -> int:
    """This process's number among the processes of the program (0 without a cluster).

    >>> process_index()
    0
    """
    return int(_client(None).process_index())


def default_device() -> Device:
    """The device arrays and programs go to when none is named: this process's first.

    >>> default_device() == devices()[0]
    True
    """
    return _client(None).local_devices()[0]


def live_arrays(backend: str | None = None) -> list[Any]:
    """Every array alive on the devices of ``backend`` (default: the default backend).

    >>> isinstance(live_arrays(), list)
    True
    """
    return list(_client(backend).live_arrays())


def as_device(spec: Any, what: str = "device_put") -> Device | None:
    """The device `spec` names: None, a Device, or a single-device sharding.

    Anything else (a platform name, a device index) is refused as JAX refuses
    it, with a message that says how to name a device.

    >>> as_device(sharding_for(default_device())) == default_device()
    True
    """
    if spec is None or isinstance(spec, Device):
        return spec
    if isinstance(spec, _jax.SingleDeviceSharding):
        return spec._device
    hint = "lamella.core.devices()[0]"
    if isinstance(spec, str):
        hint = f"lamella.core.devices({spec!r})[0]"
    elif isinstance(spec, int) and not isinstance(spec, bool):
        hint = f"lamella.core.devices()[{spec}]"
    raise ValueError(f"{what} takes a Device, a single-device sharding or None, got {spec!r} "
                     f"({type(spec).__name__}); to name a device, pass e.g. {hint}")


def memory_limit(device: Device) -> int:
    """The bytes of memory `device` can hold at most: its allocator's limit on an
    accelerator, the machine's physical memory for the CPU.

    >>> memory_limit(default_device()) > 2**20
    True
    """
    limit = _memory_limits.get(device)
    if limit is None:
        limit = _memory_limits[device] = _query_memory_limit(device)
    return limit


_memory_limits: dict[Device, int] = {}


def _query_memory_limit(device: Device) -> int:
    stats = device.memory_stats() if device.platform != "cpu" else None
    if stats and stats.get("bytes_limit"):
        return int(stats["bytes_limit"])
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):  # no sysconf (Windows): only the 64-bit limit holds
        return 2**63 - 1


def check_fits(shape: Shape, dtype: np.dtype, device: Device, what: str) -> None:
    """Raise MemoryError, naming the shape and bytes, if one array of `shape` and
    `dtype` can't fit in `device`'s memory.

    jaxlib aborts the whole process on some allocations too large to represent
    (an uncaught C++ error), so sizes are checked in Python first, with Python's
    unbounded integers.

    >>> try:
    ...     check_fits((2**32, 2**32), np.dtype(np.int8), devices("cpu")[0], "zeros")
    ... except MemoryError as err:
    ...     print(str(err).split(", more")[0])
    zeros: int8[4294967296,4294967296] needs 18446744073709551616 bytes (16 EiB)
    """
    nbytes = np.dtype(dtype).itemsize
    for size in shape:
        nbytes *= int(size)
    check_bytes(nbytes, device, f"{what}: {describe(shape, dtype)}")


def check_bytes(nbytes: int, device: Device, what: str) -> None:
    """Raise MemoryError if `what` (which needs `nbytes`) can't fit in `device`'s memory.

    >>> check_bytes(2**10, default_device(), "a kilobyte")
    """
    limit = memory_limit(device)
    if nbytes > limit:
        raise MemoryError(f"{what} needs {nbytes} bytes ({_human(nbytes)}), more than the "
                          f"{limit} bytes ({_human(limit)}) of memory of {device}")


def _human(nbytes: int) -> str:
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")
    value, unit = float(nbytes), 0
    while value >= 1024 and unit < len(units) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.3g} {units[unit]}"


def _find_malloc_trim() -> Callable[[int], int] | None:
    try:
        return ctypes.CDLL(None).malloc_trim  # glibc only
    except (AttributeError, OSError):
        return None


_malloc_trim = _find_malloc_trim()


def release_free_memory() -> None:
    """Collect garbage, then hand the memory freed by dropped programs and arrays back
    to the operating system (glibc keeps freed memory for reuse otherwise, so the
    process's RSS would not shrink); elsewhere only the collection happens.

    >>> release_free_memory()
    """
    gc.collect()
    if _malloc_trim is not None:
        _malloc_trim(0)


def sharding_for(device: Device) -> _jax.SingleDeviceSharding:
    """The one ``SingleDeviceSharding`` the runtime uses for ``device``.

    >>> sharding_for(default_device())._device == default_device()
    True
    """
    try:
        return _backends().shardings[device]
    except KeyError:
        raise ValueError(f"{device!r} is not a device of this process") from None


def approx_top_k_output_size(input_size: int, rank: int, k: int, recall_target: float,
                             aggregate_to_topk: bool, input_size_override: int) -> int:
    """The size XLA's approximate top-k reduces an axis of `input_size` to (`k` when
    aggregating to the top k), as computed by XLA itself."""
    size, _ = _jax.approx_top_k_reduction_output_size(
        input_size, rank, k, recall_target, aggregate_to_topk, input_size_override)
    return int(size)
