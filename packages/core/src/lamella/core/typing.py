"""Type annotations for lamella programs (JAX's `jax.typing`).

`ArrayLike` is what functions accept as an array: lamella Arrays and tracers,
NumPy arrays and scalars, Python numbers. `DTypeLike` is what they accept as a
dtype: a NumPy dtype, a scalar type, a name, or an object with a `dtype`.

>>> import numpy as np
>>> def scale(x: ArrayLike, dtype: DTypeLike = np.float32) -> ArrayLike:
...     return np.asarray(x, dtype) * 2
>>> scale(3)
np.float32(6.0)
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from lamella.core.array import Array

__all__ = ["ArrayLike", "DTypeLike"]


class _HasDType(Protocol):
    @property
    def dtype(self) -> Any: ...


ArrayLike = Array | np.ndarray | np.bool_ | np.number | bool | int | float | complex
DTypeLike = str | type | np.dtype | _HasDType
