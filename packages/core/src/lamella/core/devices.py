"""Moving values to and from the executor's devices.

With core alone the "device" is the host and arrays are NumPy arrays; an
executor that has devices (lamella.lax's XLA runtime) supplies `device_put`,
`device_get` and `devices`, and these functions defer to it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lamella.core.avals import get_aval
from lamella.core.jit import current_executor
from lamella.core.tree_util import tree_map


def devices(backend: str | None = None) -> list[Any]:
    """The executor's devices (`["cpu"]` for core's NumPy interpreter)."""
    executor = current_executor()
    if hasattr(executor, "devices"):
        return executor.devices(backend)
    return ["cpu"]


def device_put(x: Any, device: Any = None) -> Any:
    """Puts each leaf of `x` on a device (with core alone: a canonical NumPy array).

    >>> device_put(np.arange(3.0)).dtype
    dtype('float32')
    """
    executor = current_executor()
    if hasattr(executor, "device_put"):
        return tree_map(lambda leaf: executor.device_put(leaf, device), x)
    return tree_map(lambda leaf: np.asarray(leaf, get_aval(leaf).dtype), x)


def device_get(x: Any) -> Any:
    """Copies each array leaf of `x` to the host as a NumPy array."""
    executor = current_executor()
    if hasattr(executor, "device_get"):
        return tree_map(executor.device_get, x)
    return tree_map(np.asarray, x)


def block_until_ready(x: Any) -> Any:
    """Waits until every array leaf of `x` has been computed; returns `x`."""
    def wait(leaf):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
        return leaf
    tree_map(wait, x)
    return x
