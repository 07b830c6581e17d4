"""The concrete array type and moving values between host and device.

`Array` *is* jaxlib's `ArrayImpl` (so jaxlib's C++ jit fast path accepts
lamella arrays), with the methods the runtime owns patched on; lamella.numpy
adds operators and NumPy-style methods through `install_array_methods`.

>>> x = device_put(np.arange(3, dtype=np.float32))
>>> x
Array([0., 1., 2.], dtype=float32)
>>> device_get(x)
array([0., 1., 2.], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from jaxlib import _jax
from jaxlib import xla_client as xc

from lamella.lax import mlir_context
from lamella.lax.runtime.backends import (
    Device,
    XlaRuntimeError,
    as_device,
    check_fits,
    default_device,
    describe,
    make_aval,
    sharding_for,
    x64_enabled,
)

Array = _jax.ArrayImpl
"""lamella's concrete array: jaxlib's own ``ArrayImpl``, with methods patched on."""


class DeletedArrayError(RuntimeError):
    """An Array was used after ``.delete()`` or after being donated to a call."""


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


def _gather_shards(array: Array) -> np.ndarray:
    # spmd.py builds on this module and installs its gather here when it is imported
    # (lamella.lax.runtime imports it); until then no array spans several devices.
    raise RuntimeError("a multi-device array needs lamella.lax.runtime.spmd")


def host_value(array: Array) -> np.ndarray:
    """A read-only NumPy view of the array's data (a copy only where needed)."""
    if array.is_deleted():
        raise DeletedArrayError(deleted_message(array))
    if len(array._sharding._internal_device_list) != 1:
        return _gather_shards(array)
    return array._single_device_array_to_np_array_did_copy()[0]


def deleted_message(array: Array) -> str:
    """Why a deleted Array can't be used."""
    return (
        f"Array {describe(array.aval.shape, array.aval.dtype)} has been deleted, either "
        "by .delete() or by donating it to an earlier call; it cannot be used anymore"
    )


def _array_dunder_array(
    self: Array, dtype: np.typing.DTypeLike | None = None, copy: bool | None = None
) -> np.ndarray:
    return np.array(host_value(self), dtype=dtype, copy=copy)


def _array_repr(self: Array) -> str:
    prefix = "Array("
    weak = ", weak_type=True" if self.aval.weak_type else ""
    dtype_str = f"dtype={self.dtype.name}{weak})"
    if self.is_deleted():
        return f"{prefix}<deleted>, shape={self.shape}, {dtype_str}"
    sharding = self._sharding
    if not (sharding.is_fully_addressable or sharding.is_fully_replicated):
        return f"{prefix}shape={self.shape}, {dtype_str}"  # other processes hold parts
    width = np.get_printoptions()["linewidth"]
    if self.size == 0:
        data = f"[], shape={self.shape}"
    else:
        data = np.array2string(
            host_value(self), prefix=prefix, suffix=",", separator=", ", max_line_width=width
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
    return host_value(self).reshape(())[()]


def _no_operators(self: Array, other: Any) -> Any:
    raise TypeError("Array comparisons and arithmetic operators are provided by lamella.numpy; "
                    "import lamella.numpy, or use lamella.lax.eq / lamella.lax.ne.")


def _array_index(self: Array) -> int:
    if self.aval.dtype.kind not in "iu" or self.aval.shape:
        raise TypeError(f"only integer scalar arrays can be converted to a scalar index, got "
                        f"{describe(self.aval.shape, self.aval.dtype)}")
    return int(host_value(self))


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


def _export_view(array: Array) -> Array:
    """A second Array over `array`'s buffer, for DLPack consumers to hold.

    jaxlib aborts the process when a buffer with an outstanding DLPack reference
    is deleted through the Array that exported it. Exporting another Array on the
    same buffer lets the user delete (or donate) theirs while a consumer still
    reads the memory: it is freed when the consumer lets go.
    """
    if array.is_deleted():
        raise DeletedArrayError(deleted_message(array))
    return array._fully_replicated_shard()


def _array_dlpack(self: Array, *, stream: int | None = None, max_version: Any = None,
                  dl_device: Any = None, copy: bool | None = None) -> Any:
    # The capsule shares the device buffer (a copy's, if copy=True): the consumer sees
    # the same memory, which stays alive until the consumer drops it.
    if dl_device is not None and tuple(dl_device) != _array_dlpack_device(self):
        raise BufferError(f"__dlpack__: this Array is on {tuple(_array_dlpack_device(self))}, "
                          f"not on the requested DLPack device {tuple(dl_device)}")
    source = copy_to_device(self, _array_device(self)) if copy else self
    return _jax.buffer_to_dlpack_managed_tensor(_export_view(source), stream=stream)


def _array_dlpack_device(self: Array) -> tuple[int, int]:
    device = _array_device(self)
    kind = _DLPACK_CPU if device.platform == "cpu" else _DLPACK_CUDA
    return kind, device.local_hardware_id if kind == _DLPACK_CUDA else 0


def from_dlpack(x: Any, device: Device | None = None, copy: bool | None = None) -> Array:
    """An Array with the data of a DLPack producer (an Array, or CPU data: NumPy, PyTorch...).

    When memory is shared: an Array producer on the same device is shared (both
    are immutable; deleting either one never frees memory the other reads). Any
    other producer is copied (``copy=None``, the default, or ``True``), because
    it could write its memory later and lamella arrays never change. Only
    ``copy=False`` shares a foreign producer's memory, and then writes through
    the producer show in the Array: it takes row-major data aligned to 64 bytes
    and raises ValueError otherwise. Strided and column-major data are copied
    in row-major order (their values, never their raw bytes).

    >>> host = np.arange(3, dtype=np.int32)
    >>> x = from_dlpack(host)
    >>> host[0] = 7
    >>> x
    Array([0, 1, 2], dtype=int32)
    >>> from_dlpack(np.arange(6, dtype=np.float32).reshape(3, 2).T)
    Array([[0., 2., 4.],
           [1., 3., 5.]], dtype=float32)
    """
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(x).__name__} does not support the DLPack protocol")
    if isinstance(x, Array):
        return _from_array(x, as_device(device, "from_dlpack"), copy)
    device = as_device(device, "from_dlpack")
    kind, _ = x.__dlpack_device__()
    if kind != _DLPACK_CPU:
        raise ValueError(f"from_dlpack: only CPU DLPack tensors and lamella Arrays are "
                         f"supported, got DLPack device type {kind}")
    target = device or default_device()
    host = np.from_dlpack(x)  # a view honouring the producer's strides; no copy yet
    if copy is not False:
        return device_put(np.ascontiguousarray(host), target)
    row_major = np.ascontiguousarray(host).strides == host.strides
    if canonical_dtype(host.dtype) != host.dtype or not row_major or target.platform != "cpu":
        raise ValueError(
            f"from_dlpack(copy=False): the {describe(host.shape, host.dtype)} data needs a copy "
            "(it is strided or column-major, 64-bit with x64 off, or on another device); "
            "pass copy=None or copy=True")
    try:
        buffer = _jax.dlpack_managed_tensor_to_buffer(x.__dlpack__(), target, None, False)
    except _jax.JaxRuntimeError as err:
        raise ValueError(f"from_dlpack(copy=False): the data cannot be used in place ({err}); "
                         "pass copy=None or copy=True") from None
    aval = make_aval(host.shape, host.dtype, False)
    return Array(aval, sharding_for(target), [buffer], device is not None, _skip_checks=True)


def _from_array(x: Array, device: Device | None, copy: bool | None) -> Array:
    """`from_dlpack` of an Array: a new Array sharing its buffer, or a copy."""
    if x.is_deleted():
        raise DeletedArrayError(deleted_message(x))
    source = _array_device(x)
    target = source if device is None else device
    if copy or target != source:
        if copy is False:
            raise ValueError(f"from_dlpack(copy=False): the Array is on {source}, not on "
                             f"{target}; moving it needs a copy")
        return copy_to_device(x, target)
    capsule = _jax.buffer_to_dlpack_managed_tensor(_export_view(x))
    buffer = _jax.dlpack_managed_tensor_to_buffer(capsule, target, None)
    aval = make_aval(x.aval.shape, x.aval.dtype, False)
    return Array(aval, sharding_for(target), [buffer], device is not None, _skip_checks=True)


def _refusing_deleted(method: Any) -> Any:
    """jaxlib's `method`, raising DeletedArrayError for a deleted Array first: some of
    jaxlib's methods dereference the missing buffer of a deleted Array (a segfault)."""
    def call(self: Array, *args: Any, **kwargs: Any) -> Any:
        if self.is_deleted():
            raise DeletedArrayError(deleted_message(self))
        return method(self, *args, **kwargs)

    call.__name__ = call.__qualname__ = method.__name__
    call.__doc__ = method.__doc__
    return call


_jaxlib_delete = Array.delete


def _array_delete(self: Array) -> None:
    # jaxlib aborts the process when it deletes a buffer that another thread is
    # exporting at that moment (np.asarray's buffer protocol, DLPack), and NumPy's
    # export bypasses Python. With the Array's single-device view made first (jaxlib
    # caches it on the Array), deleting leaves the memory to the last holder instead.
    if not self.is_deleted():
        try:
            self._fully_replicated_shard()
        except XlaRuntimeError:  # another thread deleted it meanwhile
            pass
    _jaxlib_delete(self)


_GUARDED_METHODS = ("is_ready", "platform", "clone", "block_until_ready",
                    "unsafe_buffer_pointer", "on_device_size_in_bytes",
                    "_copy_single_device_array_to_host_async")
install_array_methods({name: _refusing_deleted(getattr(Array, name))
                       for name in _GUARDED_METHODS})
install_array_methods({"delete": _array_delete})

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
        "__str__": lambda self: str(host_value(self)),
        "__len__": _array_len,
        "__bool__": lambda self: bool(_host_scalar(self, "bool")),
        "__int__": lambda self: int(_host_scalar(self, "int")),
        "__float__": lambda self: float(_host_scalar(self, "float")),
        "__complex__": lambda self: complex(_host_scalar(self, "complex")),
        "__index__": _array_index,
        "item": lambda self, *args: host_value(self).item(*args),
        # Elementwise operators come with lamella.numpy, which replaces these.
        # Until then, == must not silently compare identities.
        "__eq__": _no_operators,
        "__ne__": _no_operators,
        "__hash__": None,
        "tolist": lambda self: host_value(self).tolist(),
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


def canonical_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype a host value of `dtype` is stored with (64 bits narrowed without x64)."""
    return dtype if x64_enabled() else _NARROW_64_BITS.get(dtype, dtype)


def _host_array(x: Any, weak_type: bool) -> tuple[np.ndarray, bool]:
    """x as a NumPy array of its canonical dtype, and whether it is weakly typed."""
    if type(x) in _PYTHON_SCALAR_DTYPES:  # bool is not weak in JAX, so exact types
        dtype = canonical_dtype(_PYTHON_SCALAR_DTYPES[type(x)])
        return np.asarray(x, dtype), True
    if isinstance(x, (np.ndarray, np.generic, bool)):
        host = np.asarray(x)
        if host.dtype not in mlir_context.SUPPORTED_DTYPES:
            raise TypeError(f"arrays of dtype {host.dtype} are not supported")
        return np.asarray(host, canonical_dtype(host.dtype)), weak_type
    raise TypeError(
        f"device_put takes NumPy arrays, NumPy or Python scalars and Arrays, got {type(x).__name__}"
    )


def copy_to_device(x: Array, device: Device) -> Array:
    """A copy of `x` on `device`, which may be its own (through the host when the
    platforms differ)."""
    if x.platform() != device.platform:  # another client: go through the host
        return device_put(host_value(x), device, weak_type=x.aval.weak_type)
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
    device = as_device(device)
    if isinstance(x, Array):
        if device is None:
            return x
        if x.is_deleted():
            raise DeletedArrayError(deleted_message(x))
        if tuple(x._sharding._internal_device_list) != (device,):
            x = copy_to_device(x, device)  # the copy is uncommitted: commit it, as named
        if x._committed:
            return x
        return Array(x.aval, sharding_for(device), [x], True, _skip_checks=True)
    host, weak = _host_array(x, weak_type)
    target = default_device() if device is None else device
    check_fits(host.shape, host.dtype, target, "device_put")
    aval = make_aval(host.shape, host.dtype, weak)
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
        return type(x)(host_value(leaf) if isinstance(leaf, Array) else leaf for leaf in x)
    return host_value(x) if isinstance(x, Array) else x


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
