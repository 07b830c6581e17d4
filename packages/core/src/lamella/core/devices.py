"""Devices and moving values to and from them, forwarded to the registered executor.

With core alone the executor is the NumPy interpreter: its one device is the
host (`HostDevice`), arrays are NumPy arrays, and the names that only make
sense with a runtime (`live_arrays`) say what to install. lamella.lax
registers the XLA runtime, whose devices are jaxlib's.

>>> import numpy as np
>>> device_put(np.arange(3.0)).dtype
dtype('float32')
"""

from __future__ import annotations

import abc
import platform
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any

import numpy as np

from lamella.core.avals import ShapedArray
from lamella.core.config import config
from lamella.core.dispatch import HostDevice, current_executor
from lamella.core.sharding import NamedSharding
from lamella.core.trace import aval_of
from lamella.core.tree_util import tree_leaves, tree_map
from lamella.core.util import clear_registered_caches


class Device(abc.ABC):
    """The type of a device (`isinstance(d, Device)`); runtimes register theirs."""

    @property
    @abc.abstractmethod
    def id(self) -> int:
        """The device's number, unique in the process group."""

    @property
    @abc.abstractmethod
    def platform(self) -> str:
        """'cpu', 'gpu', ..."""

    @property
    @abc.abstractmethod
    def device_kind(self) -> str:
        """The hardware, e.g. 'cpu' or a GPU model's name."""

    @property
    @abc.abstractmethod
    def process_index(self) -> int:
        """The process that owns the device."""


Device.register(HostDevice)


def devices(backend: str | None = None) -> list[Any]:
    """The devices of `backend` ('cpu', 'gpu', ...; default: the default backend).

    >>> [d.platform for d in devices()]
    ['cpu']
    """
    return current_executor().devices(backend)


def local_devices(process_index: int | None = None, backend: str | None = None,
                  host_id: int | None = None) -> list[Any]:
    """The devices of this process (`process_index`, default this one)."""
    index = process_index if process_index is not None else host_id
    if index is None:
        index = current_executor().process_index()
    return [d for d in devices(backend) if d.process_index == index]


def device_count(backend: str | None = None) -> int:
    """How many devices `backend` has.

    >>> device_count() >= 1
    True
    """
    return len(devices(backend))


def local_device_count(backend: str | None = None) -> int:
    """How many devices this process addresses."""
    return len(local_devices(backend=backend))


def default_backend() -> str:
    """The platform programs run on by default: 'cpu', 'gpu', ...

    >>> default_backend()
    'cpu'
    """
    return current_executor().default_backend()


def _default_device_override() -> Any:
    return config.read("default_device")


def device_put(x: Any, device: Any = None, *, src: Any = None, donate: bool = False,
               may_alias: bool | None = None) -> Any:
    """Puts each leaf of `x` on a device (with core alone: a canonical NumPy array).

    Args:
      x: a pytree of arrays and scalars.
      device: the target device (or a sharding naming one); by default the
        default device, and uncommitted.
      src: accepted for JAX compatibility (the source is known from `x`).
      donate: whether `x`'s buffers may be reused for the result; a donated
        array must not be used afterwards.
      may_alias: whether the result may share `x`'s buffers (the default
        allows it when nothing is copied).

    Returns:
      `x` with every leaf an array of the executor.

    >>> import numpy as np
    >>> device_put(np.arange(3.0)).dtype
    dtype('float32')
    """
    executor = current_executor()
    if device is None:
        device = _default_device_override()
    return tree_map(lambda leaf: executor.device_put(leaf, device, donate=donate,
                                                     may_alias=may_alias), x)


def device_get(x: Any) -> Any:
    """Copies each array leaf of `x` to the host as a NumPy array.

    Args:
      x: a pytree of arrays.

    Returns:
      `x` with every array leaf a NumPy array on the host.
    """
    return tree_map(current_executor().device_get, x)


def block_until_ready(x: Any) -> Any:
    """Waits until every array leaf of `x` has been computed; returns `x`.

    Args:
      x: a pytree of arrays.

    Returns:
      `x`, once every array in it is computed.
    """
    wait = getattr(x, "block_until_ready", None)
    if wait is not None:  # one array, the common case: no tree walk
        wait()
        return x
    for leaf in tree_leaves(x):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
    return x


def copy_to_host_async(x: Any) -> Any:
    """Starts copying each array leaf of `x` to the host without waiting; returns `x`."""
    executor = current_executor()
    tree_map(executor.copy_to_host_async, x)
    return x


def clear_caches() -> None:
    """Forgets every cached trace, derived jaxpr and compiled program, in core and in the
    runtime; the next call of each jitted function traces and compiles again.

    >>> import lamella.core as lc
    >>> f = lc.jit(lambda x: x)
    >>> _ = f(1.0)
    >>> lc.clear_caches()
    >>> float(f(1.0))
    1.0
    """
    clear_registered_caches()
    current_executor().clear_caches()


def live_arrays(platform: str | None = None) -> list[Any]:
    """Every array alive on the devices of `platform` (default: the default backend)."""
    return current_executor().live_arrays(platform)


def make_array_from_callback(shape: Sequence[int], sharding: Any,
                             data_callback: Callable[[Any], Any],
                             dtype: Any = None) -> Any:
    """An array of `shape` laid out as `sharding` says, each device's part being
    `data_callback(index)` for the index (a tuple of slices) of that part; with several
    processes, the callback is called for this process's devices only.

    >>> import numpy as np
    >>> make_array_from_callback((2,), devices()[0], lambda index: np.ones(2)[index]).shape
    (2,)
    """
    shape = tuple(shape)
    if not isinstance(sharding, NamedSharding):
        index = tuple(slice(None) for _ in shape)
        data = np.asarray(data_callback(index), dtype=dtype)
        if data.shape != shape:
            raise ValueError(f"make_array_from_callback: the callback returned shape "
                             f"{data.shape} for the index {index} of an array of shape {shape}")
        device = getattr(sharding, "_device", sharding)
        return current_executor().device_put(data, device)
    # Over several processes' devices each process builds only its own parts.
    parts = sharding.addressable_devices_indices_map(shape)
    pieces = [device_put(np.asarray(data_callback(index), dtype=dtype), device)
              for device, index in parts.items()]
    return make_array_from_single_device_arrays(shape, sharding, pieces)


def make_array_from_single_device_arrays(shape: Sequence[int], sharding: Any,
                                         arrays: Sequence[Any], *,
                                         dtype: Any = None) -> Any:
    """One array of `shape` over `sharding` from each device's part (no copy).

    (needs lamella.lax's runtime; run in packages/lax/tests/multidevice)

    >>> import numpy as np  # doctest: +SKIP
    >>> from lamella.core.sharding import NamedSharding, P, make_mesh  # doctest: +SKIP
    >>> s = NamedSharding(make_mesh((1,), ("x",)), P("x"))  # doctest: +SKIP
    >>> parts = [device_put(np.ones(2), devices()[0])]  # doctest: +SKIP
    >>> make_array_from_single_device_arrays((2,), s, parts)  # doctest: +SKIP
    Array([1., 1.], dtype=float32)
    """
    return current_executor().assemble(tuple(shape), sharding, list(arrays))


def process_index(backend: str | None = None) -> int:
    """This process's number among the processes of the program (0 with one process).

    >>> process_index()
    0
    """
    return current_executor().process_index()


def process_count(backend: str | None = None) -> int:
    """How many processes the program runs in.

    >>> process_count()
    1
    """
    return max(d.process_index for d in devices(backend)) + 1


def typeof(x: Any) -> ShapedArray:
    """The abstract type of `x` (its aval): `typeof(x).shape`, `.dtype`, `.weak_type`.

    >>> typeof(1.0)
    ShapedArray(float32[], weak_type=True)
    """
    return aval_of(x)


def print_environment_info(return_string: bool = False) -> str | None:
    """Versions of lamella's packages and their dependencies, and the devices.

    Returns the text instead of printing it with `return_string=True`.
    """
    lines = []
    for package in ("lamella-core", "lamella-lax", "lamella-numpy", "lamella-scipy",
                    "lamella-nn", "jaxlib", "numpy", "scipy", "ml_dtypes", "optree"):
        try:
            lines.append(f"{package}: {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            continue
    lines.append(f"python: {sys.version.split()[0]}")
    lines.append(f"executor: {current_executor().name}")
    lines.append(f"devices: {devices()}")
    lines.append(f"platform: {platform.platform()}")
    text = "\n".join(lines)
    if return_string:
        return text
    print(text)
    return None
