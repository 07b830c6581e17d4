"""DLPack interchange (JAX's `jax.dlpack`): arrays from any DLPack producer.

The copy (or the shared buffer) is made by the registered executor: NumPy arrays
with core's interpreter, device buffers with lamella.lax's runtime.

>>> import numpy as np
>>> np.asarray(from_dlpack(np.arange(3, dtype=np.int32)))
array([0, 1, 2], dtype=int32)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lamella.core import dtypes
from lamella.core.dispatch import current_executor

__all__ = ["SUPPORTED_DTYPES", "from_dlpack", "is_supported_dtype"]

SUPPORTED_DTYPES: frozenset[np.dtype] = frozenset(
    np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                          np.uint32, np.uint64, np.float16, np.float32, np.float64,
                          np.complex64, np.complex128, np.bool_)
) | frozenset([np.dtype(dtypes.bfloat16)] if hasattr(dtypes, "bfloat16") else [])


def is_supported_dtype(dtype: Any) -> bool:
    """Whether arrays of `dtype` can cross DLPack.

    >>> is_supported_dtype(np.float32), is_supported_dtype(np.dtype("V4"))
    (True, False)
    """
    return np.dtype(dtype) in SUPPORTED_DTYPES


def from_dlpack(external_array: Any, device: Any = None, copy: bool | None = None) -> Any:
    """An array with the data of `external_array`, any object with `__dlpack__` (a NumPy
    array, a PyTorch CPU tensor, ...): shared where the runtime can, copied if `copy`.

    Args:
      external_array: the DLPack producer.
      device: the device to place the result on (default: the default device).
      copy: True to always copy, False to never copy, None to copy only when needed.
    """
    if not hasattr(external_array, "__dlpack__"):
        raise TypeError(f"from_dlpack: {type(external_array).__name__} does not support the "
                        f"DLPack protocol (it has no __dlpack__ method).")
    return current_executor().from_dlpack(external_array, device, copy)
