"""Moving values to and from the executor's devices.

With core alone the "device" is the host and arrays are NumPy arrays; an
executor that has devices (lamella.lax's XLA runtime) supplies `device_put`,
`device_get` and `devices`, and these functions defer to it.
"""

from __future__ import annotations

from typing import Any

from lamella.core.dispatch import current_executor
from lamella.core.tree_util import tree_map


def devices(backend: str | None = None) -> list[Any]:
    """The executor's devices (`["cpu"]` for core's NumPy interpreter)."""
    return current_executor().devices(backend)


def device_put(x: Any, device: Any = None) -> Any:
    """Puts each leaf of `x` on a device (with core alone: a canonical NumPy array).

    Args:
      x: a pytree of arrays or scalars.
      device: the target device (the default device when None).

    Returns:
      `x` with every leaf an array of the executor (a NumPy array with core alone).

    >>> import numpy as np
    >>> device_put(np.arange(3.0)).dtype
    dtype('float32')
    """
    executor = current_executor()
    return tree_map(lambda leaf: executor.device_put(leaf, device), x)


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
    def wait(leaf):
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
        return leaf
    tree_map(wait, x)
    return x
