"""lamella's XLA runtime: the one module that drives jaxlib's internals.

Everything lamella needs from jaxlib's compiled half lives behind this file, so
a jaxlib upgrade touches nothing else:

- the PJRT clients (CPU always, CUDA when a PJRT plugin is installed), created
  lazily once per process, and their devices;
- the jaxlib configuration the C++ side reads on every call (x64, disable-jit,
  post-hook);
- the concrete array type, which *is* jaxlib's ``ArrayImpl`` (so jaxlib's C++
  jit fast path accepts lamella arrays), with the methods the runtime owns;
- moving values between host and device;
- compiling a StableHLO module into an :class:`Executable`, with donation;
- the C++ dispatch fast path (``_jax.pjit``) and its pytree registry.

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

from __future__ import annotations

import importlib.util
import os
import threading
import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from jaxlib import _jax
from jaxlib import xla_client as xc

from lamella.lax import mlir_context
from lamella.lax.mlir_context import ir

__all__ = [
    "Array",
    "Device",
    "XlaRuntimeError",
    "DeletedArrayError",
    "set_x64",
    "x64_enabled",
    "set_disable_jit",
    "set_aval_factory",
    "devices",
    "device_count",
    "default_device",
    "sharding_for",
    "install_array_methods",
    "device_put",
    "device_get",
    "block_until_ready",
    "Executable",
    "compile",
    "pytree_registry",
    "register_pytree_node",
    "flatten_arguments",
    "FastPathData",
    "fast_path_data",
    "make_fast_function",
    "register_lapack_targets",
]

Array = _jax.ArrayImpl
"""lamella's concrete array: jaxlib's own ``ArrayImpl``, with methods patched on."""

Device = _jax.Device
XlaRuntimeError = _jax.JaxRuntimeError

Shape = tuple[int, ...]


class DeletedArrayError(RuntimeError):
    """An Array was used after ``.delete()`` or after being donated to a call."""


# ----------------------------------------------------------------------------
# Process-wide configuration read by jaxlib's C++ side.
#
# The C++ dispatch path and batched_device_put refuse to run until these three
# states are set. Only x64 joins the jit cache key: flipping it changes how
# Python scalars and 64-bit NumPy inputs are typed, so it must select other
# cache entries. Every key Config costs time on every call, so there is one.

_X64 = _jax.config.Config("lamella_enable_x64", False, include_in_jit_key=True)
_DISABLE_JIT = _jax.config.Config("lamella_disable_jit", False, include_in_jit_key=False)
_POST_HOOK = _jax.config.Config("lamella_post_hook", None, include_in_jit_key=False)
_jax.jax_jit.set_enable_x64_state(_X64)
_jax.jax_jit.set_disable_jit_state(_DISABLE_JIT)
_jax.jax_jit.set_post_hook_state(_POST_HOOK)


def set_x64(enabled: bool) -> None:
    """Turn 64-bit types on or off for the whole process (lamella's ``enable_x64``).

    With x64 off (the default), 64-bit inputs are stored as their 32-bit
    counterparts, as in JAX.

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
        return f"ShapedArray({_describe(self.shape, self.dtype)}{weak})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Aval) and (
            (self.shape, self.dtype, self.weak_type) == (other.shape, other.dtype, other.weak_type)
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))


AvalFactory = Callable[[Shape, np.dtype, bool], Any]
_make_aval: AvalFactory = _Aval


def set_aval_factory(factory: AvalFactory) -> AvalFactory:
    """Build every later array's ``.aval`` with ``factory(shape, dtype, weak_type)``.

    The result needs ``.shape``, ``.dtype``, ``.weak_type`` and ``.ndim``;
    lamella.core installs its ``ShapedArray`` here. Executables keep the avals
    made when they were compiled. Returns the factory it replaces.

    >>> class Tagged(_Aval):
    ...     pass
    >>> previous = set_aval_factory(Tagged)
    >>> type(device_put(1.0).aval).__name__
    'Tagged'
    >>> _ = set_aval_factory(previous)
    """
    global _make_aval
    previous, _make_aval = _make_aval, factory
    return previous


def _describe(shape: Shape, dtype: np.dtype) -> str:
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
            clients["cpu"] = xc.make_cpu_client()
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


def default_device() -> Device:
    """The device arrays and programs go to when none is named.

    >>> default_device() == devices()[0]
    True
    """
    return _client(None).devices()[0]


def sharding_for(device: Device) -> _jax.SingleDeviceSharding:
    """The one ``SingleDeviceSharding`` the runtime uses for ``device``.

    >>> sharding_for(default_device())._device == default_device()
    True
    """
    try:
        return _backends().shardings[device]
    except KeyError:
        raise ValueError(f"{device!r} is not a device of this process") from None


# ----------------------------------------------------------------------------
# The Array type's runtime methods.


def install_array_methods(methods: Mapping[str, Any]) -> None:
    """Set attributes (methods, properties, operators) on the Array type.

    The runtime installs what concerns storage and display; lamella.numpy
    installs operators and NumPy-style methods through this same function.

    >>> install_array_methods({"is_lamella_array": True})
    >>> device_put(1.0).is_lamella_array
    True
    >>> del Array.is_lamella_array
    """
    for name, value in methods.items():
        setattr(Array, name, value)


def _host_value(array: Array) -> np.ndarray:
    """A read-only NumPy view of the array's data (a copy only where needed)."""
    if array.is_deleted():
        raise DeletedArrayError(_deleted_message(array))
    if len(array._sharding._internal_device_list) != 1:
        raise ValueError(
            f"this Array is spread over {len(array._sharding._internal_device_list)} "
            "devices; the runtime reads single-device arrays only"
        )
    return array._single_device_array_to_np_array_did_copy()[0]


def _deleted_message(array: Array) -> str:
    return (
        f"Array {_describe(array.aval.shape, array.aval.dtype)} has been deleted, either "
        "by .delete() or by donating it to an earlier call; it cannot be used anymore"
    )


def _array_dunder_array(
    self: Array, dtype: np.typing.DTypeLike | None = None, copy: bool | None = None
) -> np.ndarray:
    return np.array(_host_value(self), dtype=dtype, copy=copy)


def _array_repr(self: Array) -> str:
    prefix = "Array("
    weak = ", weak_type=True" if self.aval.weak_type else ""
    dtype_str = f"dtype={self.dtype.name}{weak})"
    if self.is_deleted():
        return f"{prefix}<deleted>, shape={self.shape}, {dtype_str}"
    width = np.get_printoptions()["linewidth"]
    if self.size == 0:
        data = f"[], shape={self.shape}"
    else:
        data = np.array2string(
            _host_value(self), prefix=prefix, suffix=",", separator=", ", max_line_width=width
        )
    # Keep the dtype on the last line if it fits, else align it under the data.
    last_line = len(data) - data.rfind("\n") + 1
    sep = " " if last_line + len(dtype_str) + 1 <= width else "\n" + " " * len(prefix)
    return f"{prefix}{data},{sep}{dtype_str}"


def _host_scalar(self: Array, conversion: str) -> Any:
    # Python's scalar conversions apply to one-element arrays, as in NumPy.
    if self.aval.size != 1:
        raise TypeError(f"only arrays with one element can be converted to Python {conversion}, "
                        f"got shape {self.aval.shape}")
    return _host_value(self).reshape(())[()]


def _no_operators(self: Array, other: Any) -> Any:
    raise TypeError("Array comparisons and arithmetic operators are provided by lamella.numpy; "
                    "import lamella.numpy, or use lamella.lax.eq / lamella.lax.ne.")


def _array_index(self: Array) -> int:
    if self.aval.dtype.kind not in "iu" or self.aval.shape:
        raise TypeError(f"only integer scalar arrays can be converted to a scalar index, got "
                        f"{_describe(self.aval.shape, self.aval.dtype)}")
    return int(_host_value(self))


def _array_len(self: Array) -> int:
    if not self.aval.shape:
        raise TypeError("len() of unsized object")
    return self.aval.shape[0]


def _array_device(self: Array) -> Device:
    device_list = self._sharding._internal_device_list
    if len(device_list) != 1:
        raise ValueError(f"this Array is on {len(device_list)} devices; use .devices()")
    return device_list[0]


_DLPACK_CPU, _DLPACK_CUDA = 1, 2


def _array_dlpack(self: Array, *, stream: int | None = None, max_version: Any = None,
                  dl_device: Any = None, copy: bool | None = None) -> Any:
    # The capsule shares the device buffer: the consumer sees the same memory.
    if self.is_deleted():
        raise DeletedArrayError(_deleted_message(self))
    return _jax.buffer_to_dlpack_managed_tensor(self, stream=stream)


def _array_dlpack_device(self: Array) -> tuple[int, int]:
    device = _array_device(self)
    kind = _DLPACK_CPU if device.platform == "cpu" else _DLPACK_CUDA
    return kind, device.local_hardware_id if kind == _DLPACK_CUDA else 0


def from_dlpack(x: Any, device: Device | None = None) -> Array:
    """An Array sharing (or copying) the memory of any DLPack producer on the CPU.

    >>> from_dlpack(np.arange(3, dtype=np.int32))
    Array([0, 1, 2], dtype=int32)
    """
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} does not support the DLPack protocol")
    device = device or default_device()
    kind, _ = x.__dlpack_device__()
    if kind != _DLPACK_CPU:
        raise ValueError(f"from_dlpack: only CPU DLPack tensors are supported, got device "
                         f"type {kind}")
    host = np.from_dlpack(x)  # a view: it reads the shape and dtype without a copy
    if _canonical_dtype(host.dtype) != host.dtype:
        return device_put(host, device)  # narrowed to 32 bits: a copy
    buffer = _jax.dlpack_managed_tensor_to_buffer(x.__dlpack__(), device, None)
    aval = _make_aval(host.shape, host.dtype, False)
    return Array(aval, sharding_for(device), [buffer], False, _skip_checks=True)


install_array_methods(
    {
        "shape": property(lambda self: self.aval.shape),
        "dtype": property(lambda self: self.aval.dtype),
        "ndim": property(lambda self: self.aval.ndim),
        "size": property(lambda self: int(np.prod(self.aval.shape, dtype=np.int64))),
        "weak_type": property(lambda self: self.aval.weak_type),
        "sharding": property(lambda self: self._sharding),
        "committed": property(lambda self: self._committed),
        "device": property(_array_device),
        "devices": lambda self: set(self._sharding._internal_device_list),
        "copy_to_host_async": lambda self: self._copy_single_device_array_to_host_async(),
        "__array__": _array_dunder_array,
        "__repr__": _array_repr,
        "__str__": lambda self: str(_host_value(self)),
        "__len__": _array_len,
        "__bool__": lambda self: bool(_host_scalar(self, "bool")),
        "__int__": lambda self: int(_host_scalar(self, "int")),
        "__float__": lambda self: float(_host_scalar(self, "float")),
        "__complex__": lambda self: complex(_host_scalar(self, "complex")),
        "__index__": _array_index,
        "item": lambda self, *args: _host_value(self).item(*args),
        # Elementwise operators come with lamella.numpy, which replaces these.
        # Until then, == must not silently compare identities.
        "__eq__": _no_operators,
        "__ne__": _no_operators,
        "__hash__": None,
        "tolist": lambda self: _host_value(self).tolist(),
        "__dlpack__": _array_dlpack,
        "__dlpack_device__": _array_dlpack_device,
    }
)


# ----------------------------------------------------------------------------
# Host <-> device.

# With x64 off, 64-bit host values are stored in 32 bits. jaxlib's
# batched_device_put narrows the data by itself but keeps the aval it is
# given, so the aval must be narrowed here to match.
_NARROW_64_BITS = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}
_PYTHON_SCALAR_DTYPES = {
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}


def _canonical_dtype(dtype: np.dtype) -> np.dtype:
    return dtype if _X64.value else _NARROW_64_BITS.get(dtype, dtype)


def _host_array(x: Any, weak_type: bool) -> tuple[np.ndarray, bool]:
    """x as a NumPy array of its canonical dtype, and whether it is weakly typed."""
    if type(x) in _PYTHON_SCALAR_DTYPES:  # bool is not weak in JAX, so exact types
        dtype = _canonical_dtype(_PYTHON_SCALAR_DTYPES[type(x)])
        return np.asarray(x, dtype), True
    if isinstance(x, (np.ndarray, np.generic, bool)):
        host = np.asarray(x)
        if host.dtype not in mlir_context.SUPPORTED_DTYPES:
            raise TypeError(f"arrays of dtype {host.dtype} are not supported")
        return np.asarray(host, _canonical_dtype(host.dtype)), weak_type
    raise TypeError(
        f"device_put takes NumPy arrays, NumPy or Python scalars and Arrays, got {type(x).__name__}"
    )


def _copy_to_device(x: Array, device: Device) -> Array:
    if x.platform() != device.platform:  # another client: go through the host
        return device_put(_host_value(x), device, weak_type=x.aval.weak_type)
    return _jax.batched_copy_array_to_devices_with_sharding(
        [x], [xc.DeviceList((device,))], [sharding_for(device)], [xc.ArrayCopySemantics.ALWAYS_COPY]
    )[0]


def device_put(x: Any, device: Device | None = None, *, weak_type: bool = False) -> Array:
    """Put a NumPy array, NumPy or Python scalar, or Array on a device.

    Python ``int``/``float``/``complex`` become weakly typed arrays; ``weak_type``
    marks other host values weak too. With ``device`` named the result is
    committed to it; an Array already there is returned without a copy. An
    Array and ``device=None`` is returned unchanged. Host data is always
    copied, so mutating the NumPy input later cannot change the Array.

    >>> device_put(2.0)
    Array(2., dtype=float32, weak_type=True)
    >>> device_put(np.ones((2,), np.int8), default_device()).committed
    True
    """
    if isinstance(x, Array):
        if device is None:
            return x
        if x.is_deleted():
            raise DeletedArrayError(_deleted_message(x))
        if tuple(x._sharding._internal_device_list) != (device,):
            return _copy_to_device(x, device)
        if x._committed:
            return x
        return Array(x.aval, sharding_for(device), [x], True, _skip_checks=True)
    host, weak = _host_array(x, weak_type)
    target = default_device() if device is None else device
    aval = _make_aval(host.shape, host.dtype, weak)
    return _jax.batched_device_put(
        aval,
        sharding_for(target),
        [host],
        [target],
        device is not None,
        host_buffer_semantics=xc.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
    )


def device_get(x: Any) -> Any:
    """NumPy values of an Array, or of a list/tuple of leaves; other leaves pass through.

    The arrays returned are read-only views of the device data (no copy on CPU).

    >>> device_get([device_put(1), 2.5])
    [array(1, dtype=int32), 2.5]
    """
    if isinstance(x, (list, tuple)):
        arrays = [leaf for leaf in x if isinstance(leaf, Array)]
        for array in arrays:  # start every transfer before waiting on any
            array._copy_single_device_array_to_host_async()
        return type(x)(_host_value(leaf) if isinstance(leaf, Array) else leaf for leaf in x)
    return _host_value(x) if isinstance(x, Array) else x


def block_until_ready(x: Any) -> Any:
    """Wait until an Array, or every Array in a list/tuple, is computed; return x.

    >>> y = block_until_ready(device_put(np.zeros(3)))
    >>> y.is_ready()
    True
    """
    if isinstance(x, Array):
        x.block_until_ready()
    elif isinstance(x, (list, tuple)):
        _jax.batched_block_until_ready([leaf for leaf in x if isinstance(leaf, Array)])
    return x


# ----------------------------------------------------------------------------
# Compilation and execution.


class Executable:
    """A StableHLO program compiled and loaded on one device.

    Call it with one argument per parameter of ``@main`` (Arrays, NumPy values
    or scalars); it returns the list of output Arrays. Calls are asynchronous
    and may come from several threads at once.

    Attributes: ``xla_executable`` (jaxlib's LoadedExecutable), ``device``,
    ``in_avals``, ``out_avals``, ``donated_args`` (parameters whose buffers are
    reused for outputs), ``committed`` (whether outputs are committed).
    """

    __slots__ = (
        "xla_executable",
        "device",
        "name",
        "in_avals",
        "out_avals",
        "donated_args",
        "committed",
        "_sharding",
        "_in_specs",
        "_handlers",
    )

    def __init__(
        self,
        xla_executable: Any,
        device: Device,
        name: str,
        in_specs: list[tuple[Shape, np.dtype]],
        out_avals: list[Any],
        donated_args: tuple[int, ...],
        committed: bool,
    ):
        self.xla_executable = xla_executable
        self.device = device
        self.name = name
        self.in_avals = [_make_aval(shape, dtype, False) for shape, dtype in in_specs]
        self.out_avals = out_avals
        self.donated_args = donated_args
        self.committed = committed
        self._sharding = sharding_for(device)
        self._in_specs = in_specs
        # Result handlers wrap raw output buffers into Arrays; built once here
        # so a call pays only for execute + consume.
        self._handlers = [
            _jax.array_result_handler(aval, self._sharding, committed=committed, _skip_checks=True)
            for aval in out_avals
        ]

    def __call__(self, *args: Any) -> list[Array]:
        specs = self._in_specs
        if len(args) != len(specs):
            raise TypeError(f"{self.name} takes {len(specs)} arguments, got {len(args)}")
        # The common case (Arrays made by this runtime for this device, of the
        # right type) is checked inline; anything else goes to _prepare. The
        # type check matters: XLA only checks byte sizes, so an int32[4]
        # passed for a float32[4] would be silently reinterpreted.
        sharding = self._sharding
        arrays = list(args)
        for i, a in enumerate(args):
            if type(a) is not Array or a._sharding is not sharding:
                arrays[i] = self._prepare(i, a)
            else:
                aval = a.aval
                if aval.shape != specs[i][0] or aval.dtype != specs[i][1]:
                    arrays[i] = self._prepare(i, a)
        try:
            return self.xla_executable.execute_sharded(arrays).consume_with_handlers(self._handlers)
        except XlaRuntimeError:
            # Checked only after a failure, so that healthy calls pay nothing.
            for a in arrays:
                if a.is_deleted():
                    raise DeletedArrayError(_deleted_message(a)) from None
            raise

    def _prepare(self, i: int, a: Any) -> Array:
        """Argument ``i`` as an Array on this executable's device, or a clear error."""
        shape, dtype = self._in_specs[i]
        if not isinstance(a, Array):
            a = device_put(a, self.device)
        elif a.is_deleted():
            raise DeletedArrayError(_deleted_message(a))
        if (a.aval.shape, a.aval.dtype) != (shape, dtype):
            raise TypeError(
                f"argument {i} of {self.name}: expected {_describe(shape, dtype)}, "
                f"got {_describe(a.aval.shape, a.aval.dtype)}"
            )
        # jaxlib aborts the process when a buffer sits on the wrong device, so
        # this check must happen here.
        if a._sharding._internal_device_list != self._sharding._internal_device_list:
            if a._committed:
                raise ValueError(
                    f"argument {i} of {self.name} is committed to {sorted(a.devices(), key=str)}, "
                    f"but the program runs on {self.device}; device_put it there first"
                )
            a = _copy_to_device(a, self.device)
        return a

    def as_text(self) -> str:
        """The optimized HLO of the program, as XLA compiled it."""
        return self.xla_executable.hlo_modules()[0].to_string()

    def cost_analysis(self) -> dict[str, float]:
        """XLA's cost estimate: 'flops', 'transcendentals', 'bytes accessed', ..."""
        return dict(self.xla_executable.cost_analysis())

    def __repr__(self) -> str:
        ins = ", ".join(_describe(a.shape, a.dtype) for a in self.in_avals)
        outs = ", ".join(_describe(a.shape, a.dtype) for a in self.out_avals)
        return f"Executable({self.name}: ({ins}) -> ({outs}) on {self.device})"


def _module_name(module: ir.Module) -> str:
    attributes = module.operation.attributes
    return ir.StringAttr(attributes["sym_name"]).value if "sym_name" in attributes else "main"


_ALIAS = "tf.aliasing_output"


def _alias_donated_args(
    module: ir.Module,
    donated_args: Iterable[int],
    in_specs: list[tuple[Shape, np.dtype]],
    out_specs: list[tuple[Shape, np.dtype]],
) -> tuple[int, ...]:
    """Mark each donated parameter of ``@main`` as aliasing an output of its type.

    XLA reuses a parameter's buffer for an output only when the two have the
    same shape and dtype. Each donated parameter is paired with the first free
    output of its type and marked ``tf.aliasing_output = <output index>``, the
    attribute XLA turns into input_output_alias. Donations without a match are
    dropped with a warning, as JAX does. Returns every aliased parameter,
    including those the module marked already.
    """
    main = mlir_context.main_function(module)
    with module.context, ir.Location.unknown():
        i32 = ir.IntegerType.get_signless(32)
        if "arg_attrs" in main.attributes:
            arg_attrs = [{a.name: a.attr for a in d} for d in map(ir.DictAttr, main.arg_attrs)]
        else:
            arg_attrs = [{} for _ in in_specs]
        taken = {ir.IntegerAttr(d[_ALIAS]).value for d in arg_attrs if _ALIAS in d}
        unusable = []
        for i in sorted(set(donated_args)):
            if not 0 <= i < len(in_specs):
                raise ValueError(f"donated argument {i} out of range: @main takes {len(in_specs)}")
            if _ALIAS in arg_attrs[i]:
                continue
            free = (j for j, spec in enumerate(out_specs) if spec == in_specs[i] and j not in taken)
            match = next(free, None)
            if match is None:
                unusable.append(_describe(*in_specs[i]))
                continue
            taken.add(match)
            arg_attrs[i][_ALIAS] = ir.IntegerAttr.get(i32, match)
        if donated_args:
            main.arg_attrs = ir.ArrayAttr.get([ir.DictAttr.get(d) for d in arg_attrs])
    if unusable:
        message = f"Some donated buffers were not usable: {', '.join(unusable)}"
        warnings.warn(message, UserWarning, stacklevel=3)
    return tuple(i for i, d in enumerate(arg_attrs) if _ALIAS in d)


def compile(
    module: ir.Module,
    device: Device | None = None,
    *,
    donated_args: Sequence[int] = (),
    out_avals: Sequence[Any] | None = None,
) -> Executable:
    """Compile a StableHLO module (entry ``func.func public @main``) for one device.

    ``device=None`` runs it on the default device with uncommitted outputs; a
    named device commits them. ``donated_args`` lists parameters whose buffers
    may be reused for outputs of the same type: ``@main`` is annotated in place
    and, after a call, those input Arrays are deleted (a later use raises
    :class:`DeletedArrayError`). ``out_avals`` supplies the outputs' avals (for
    weak types); by default they are read from ``@main``'s result types.

    >>> from lamella.lax.mlir_context import parse_module
    >>> exe = compile(parse_module(
    ...     "func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {"
    ...     " %0 = stablehlo.add %x, %x : tensor<2xf32> return %0 : tensor<2xf32> }"))
    >>> exe(np.array([1.0, 2.0], np.float32))
    [Array([2., 4.], dtype=float32)]
    """
    target = default_device() if device is None else device
    in_specs, out_specs = mlir_context.main_signature(module)
    if out_avals is None:
        avals = [_make_aval(shape, dtype, False) for shape, dtype in out_specs]
    else:
        avals = list(out_avals)
        given = [(tuple(a.shape), np.dtype(a.dtype)) for a in avals]
        if given != out_specs:
            raise ValueError(f"out_avals {given} do not match @main's results {out_specs}")
    donated = _alias_donated_args(module, donated_args, in_specs, out_specs)
    # executable_devices alone does not place the program: without a device
    # assignment XLA assigns it to device 0 and rejects buffers from elsewhere.
    options = xc.CompileOptions()
    options.device_assignment = xc.DeviceAssignment.create(np.array([[target.id]], np.int32))
    loaded = target.client.compile_and_load(
        module, executable_devices=xc.DeviceList((target,)), compile_options=options
    )
    return Executable(
        loaded, target, _module_name(module), in_specs, avals, donated, device is not None
    )


# ----------------------------------------------------------------------------
# The C++ dispatch fast path.
#
# jaxlib's PjitFunction keeps a signature cache in C++: on a hit it flattens
# the arguments with the registry below, puts host values on the device,
# executes and unflattens the outputs without running any Python.

_REGISTRY = _jax.pytree.PyTreeRegistry()
_PJIT_CACHE = _jax.PjitFunctionCache()


def pytree_registry() -> Any:
    """The ``PyTreeRegistry`` the fast path flattens arguments with.

    Flatten outputs with it too (``pytree_registry().flatten(out)``), so the
    treedef given to :func:`fast_path_data` matches what C++ unflattens.

    >>> leaves, treedef = pytree_registry().flatten({"b": 1, "a": 2})
    >>> leaves
    [2, 1]
    """
    return _REGISTRY


def register_pytree_node(
    nodetype: type,
    flatten: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten: Callable[[Hashable, Iterable[Any]], Any],
) -> None:
    """Teach the fast path's registry a container type (mirror of tree_util's).

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    >>> pytree_registry().flatten(Pair(1, 2))[0]
    [1, 2]
    """
    _REGISTRY.register_node(nodetype, flatten, unflatten)


def flatten_arguments(
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    static_argnums: Sequence[int] = (),
    static_argnames: Sequence[str] = (),
) -> tuple[Any, list[Any]]:
    """Flatten call arguments exactly as the fast path does: (signature, dynamic leaves).

    Leaves come positional arguments first, then keyword arguments sorted by
    name; the executable's parameters must follow this order.

    >>> flatten_arguments((1, [2, 3]), {"z": 5, "y": 4})[1]
    [1, 2, 3, 4, 5]
    """
    return _jax.jax_jit.parse_arguments(
        tuple(args),
        tuple(kwargs.values()),
        tuple(kwargs),
        list(static_argnums),
        list(static_argnames),
        _REGISTRY,
    )


class FastPathData(NamedTuple):
    """What a ``cache_miss`` returns so that later calls stay in C++ (fields read by name)."""

    xla_executable: Any
    out_pytree_def: Any
    in_shardings: list[Any]
    out_shardings: list[Any]
    out_avals: list[Any]
    out_committed: list[bool]
    kept_var_bitvec: list[bool]
    in_device_local_layouts: list[None]
    const_args: list[Array]


def fast_path_data(
    executable: Executable,
    out_treedef: Any,
    *,
    kept_var_bitvec: Sequence[bool] | None = None,
    const_args: Sequence[Array] = (),
) -> FastPathData:
    """Fast-path data for ``executable``, whose outputs unflatten with ``out_treedef``.

    The executable's outputs must be in the treedef's leaf order (C++
    unflattens them positionally; a dict flattens by sorted key). Its
    parameters are ``const_args`` followed by the kept flat arguments;
    ``kept_var_bitvec`` (one bool per const arg + flat argument, default all
    True) marks which flat arguments are passed.

    >>> exe = compile(mlir_context.parse_module(
    ...     "func.func public @main(%x: tensor<f32>) -> tensor<f32> {"
    ...     " return %x : tensor<f32> }"))
    >>> fast_path_data(exe, pytree_registry().flatten(0)[1]).out_committed
    [False]
    """
    n_in, n_out = len(executable.in_avals), len(executable.out_avals)
    if out_treedef.num_leaves != n_out:
        leaves = out_treedef.num_leaves
        raise ValueError(f"the treedef has {leaves} leaves but the program {n_out} outputs")
    kept = [True] * n_in if kept_var_bitvec is None else [bool(k) for k in kept_var_bitvec]
    if sum(kept) != n_in or not all(kept[: len(const_args)]):
        raise ValueError(f"kept_var_bitvec must keep the const args and {n_in} parameters in all")
    sharding = executable._sharding
    return FastPathData(
        xla_executable=executable.xla_executable,
        out_pytree_def=out_treedef,
        in_shardings=[sharding] * n_in,
        out_shardings=[sharding] * n_out,
        out_avals=list(executable.out_avals),
        out_committed=[executable.committed] * n_out,
        kept_var_bitvec=kept,
        in_device_local_layouts=[None] * n_in,
        const_args=list(const_args),
    )


def _shard_arg_fallback(x: Any, sharding: Any, layout: Any) -> Array:
    # C++ calls this for inputs it cannot place by itself; with single-device
    # programs that is an Array living on a different number of devices.
    if not isinstance(sharding, _jax.SingleDeviceSharding):
        raise TypeError(f"the runtime runs single-device programs only, got {sharding!r}")
    return device_put(x, sharding._device)


def make_fast_function(
    name: str,
    cache_miss: Callable[..., tuple[Any, FastPathData | None]],
    static_argnums: Sequence[int] = (),
    static_argnames: Sequence[str] = (),
    *,
    fun: Callable[..., Any] | None = None,
    cache_key: Hashable | None = None,
    donates: bool = False,
) -> Callable[..., Any]:
    """A C++ dispatcher: calls whose argument signature was seen run without Python.

    On a new signature (dtypes, shapes, weak types, shardings, treedefs, static
    values, the x64 flag) C++ calls ``cache_miss(*args, **kwargs)``, which must
    return ``(outputs, fast_path_data_or_None)``; with fast-path data, later
    calls of that signature execute in C++. ``cache_miss`` must also handle
    arguments C++ cannot sign (tracers); those always miss. If ``cache_miss``
    raises on a signature's first call, that signature keeps going to Python.

    With ``fun`` given, :func:`set_disable_jit` routes calls to ``fun``, and
    fast functions with the same ``fun`` and ``cache_key`` share cache entries;
    the default ``cache_key`` (None) shares with nobody.

    Pass ``donates=True`` when the executables donate inputs: C++ runs a
    donated (deleted) Array without checking it, and XLA's complaint is then
    turned into a :class:`DeletedArrayError` by a thin Python wrapper (which
    costs a fraction of a microsecond per call, so only donating functions
    get it).

    >>> exe = compile(mlir_context.parse_module(
    ...     "func.func public @main(%x: tensor<f32>) -> tensor<f32> {"
    ...     " %0 = stablehlo.negate %x : tensor<f32> return %0 : tensor<f32> }"))
    >>> def miss(x):
    ...     (out,) = exe(x)
    ...     return out, fast_path_data(exe, pytree_registry().flatten(out)[1])
    >>> neg = make_fast_function("neg", miss)
    >>> neg(np.float32(2.0)), neg(np.float32(3.0))
    (Array(-2., dtype=float32), Array(-3., dtype=float32))
    """
    fast = _jax.pjit(
        name,
        fun,
        cache_miss,
        list(static_argnums),
        list(static_argnames),
        object() if cache_key is None else cache_key,
        _REGISTRY,
        _shard_arg_fallback,
        _PJIT_CACHE,
    )
    return _explain_deleted_inputs(fast) if donates else fast


def _explain_deleted_inputs(fast: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``fast`` so that a call with a deleted Array raises DeletedArrayError.

    C++ sends Arrays deleted with ``.delete()`` to ``cache_miss``, but runs
    donated ones, and XLA answers with a ValueError "Buffer has been deleted
    or donated" that does not say which argument.
    """

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fast(*args, **kwargs)
        except ValueError:
            for leaf in _REGISTRY.flatten((args, kwargs))[0]:
                if isinstance(leaf, Array) and leaf.is_deleted():
                    raise DeletedArrayError(_deleted_message(leaf)) from None
            raise

    call._cache_size = fast._cache_size
    call._clear_cache = fast._clear_cache
    call.__wrapped__ = fast
    return call


# ----------------------------------------------------------------------------
# jaxlib's LAPACK kernels, as typed-FFI custom-call targets (lamella.lax.linalg).

_lapack_registered = False
_lapack_lock = threading.Lock()


def register_lapack_targets() -> None:
    """Make jaxlib's CPU LAPACK kernels (``lapack_?potrf_ffi`` ...) callable.

    Idempotent; lamella.lax.linalg calls it before emitting a custom call.
    ``initialize()`` hands the kernels scipy's BLAS/LAPACK function pointers:
    without it, executing them crashes the process.

    >>> register_lapack_targets()
    """
    global _lapack_registered
    if _lapack_registered:
        return
    with _lapack_lock:
        if not _lapack_registered:
            from jaxlib import lapack
            lapack._lapack.initialize()
            for name, capsule, api_version in lapack.registrations()["cpu"]:
                xc.register_custom_call_target(name, capsule, platform="cpu",
                                               api_version=api_version)
            _lapack_registered = True
