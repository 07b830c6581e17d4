"""`Array`: the abstract type of the array values transformations see.

`isinstance(x, Array)` holds for the runtime's concrete arrays (lamella.lax
registers its type) and for tracers inside `jit`, `grad` or `vmap`, as for
`jax.Array`; NumPy arrays are not Arrays. Use it in annotations too.

>>> import numpy as np
>>> isinstance(np.ones(2), Array)
False
"""

from __future__ import annotations

import abc

import numpy as np

from lamella.core.trace import Tracer


class Array(abc.ABC):
    """An array of a runtime, or a traced one: the type `jax.Array` is."""

    __slots__ = ()

    @property
    @abc.abstractmethod
    def shape(self) -> tuple[int, ...]:
        """The array's shape."""

    @property
    @abc.abstractmethod
    def dtype(self) -> np.dtype:
        """The array's dtype."""

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


Array.register(Tracer)
