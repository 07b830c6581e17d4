"""Where results go: JAX's `device=` and `out_sharding=` arguments, and real copies.

jax.numpy's creation functions, products and samplers take `out_sharding`, a
`NamedSharding` or `PartitionSpec` (over the current mesh) for the result: the
result is resharded there, and under an Explicit mesh its type says so. The
functions that do not place results yet accept only `None` (`check_out_sharding`).

>>> import numpy as np
>>> from lamella.lax import device_put
>>> x = device_put(np.float32([1, 2]))
>>> copy_array(x) is x, bool((copy_array(x) == x).all())
(False, True)
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from lamella import lax
from lamella.core.sharding import out_sharding_of
from lamella.core.trace import Tracer
from lamella.lax.explicit_sharding import with_out_sharding
from lamella.lax.runtime import arrays

__all__ = ["check_out_sharding", "copy_array", "out_sharding_of", "place", "places_result",
           "with_out_sharding"]


def check_out_sharding(name: str, out_sharding: Any) -> None:
    """A TypeError unless `out_sharding` is None (for the functions that do not place
    their results by a sharding yet)."""
    if out_sharding is not None:
        raise TypeError(
            f"`out_sharding` argument of lamella.numpy.{name} only supports None (got "
            f"{out_sharding!r} of type {type(out_sharding).__name__}); reshard the result "
            "with lamella.core.reshard instead.")


def places_result(fun: Callable[..., Any]) -> Callable[..., Any]:
    """`fun`, whose `out_sharding=` keyword lays its result out (a NamedSharding, or a
    PartitionSpec over the current mesh) and, under an Explicit mesh, types it so: what
    JAX's samplers do with theirs. `fun` itself is called without it.

    >>> import numpy as np
    >>> @places_result
    ... def twice(x, *, out_sharding=None):
    ...     return lax.mul(x, 2.0)
    >>> twice(np.float32(1.5))
    Array(3., dtype=float32)
    """
    @functools.wraps(fun)
    def placed(*args: Any, out_sharding: Any = None, **kwargs: Any) -> Any:
        sharding = out_sharding_of(fun.__name__, out_sharding)
        return with_out_sharding(fun(*args, **kwargs), sharding)
    return placed


def place(x: Any, device: Any = None, out_sharding: Any = None, name: str = "") -> Any:
    """`x` laid out as `out_sharding` asks (a NamedSharding, or a PartitionSpec over the
    current mesh), or committed to `device` when given (a no-op while tracing, where
    placement is the caller's)."""
    if device is not None and out_sharding is not None:
        raise ValueError(f"Only one of `device` or `out_sharding` can be set. Got "
                         f"device={device} and out_sharding={out_sharding}")
    sharding = out_sharding_of(name, out_sharding)
    if sharding is not None:
        return with_out_sharding(x, sharding)
    if device is None or isinstance(x, Tracer):
        return x
    return lax.device_put(x, device)


def copy_array(x: Any) -> Any:
    """A new Array with `x`'s value and its own buffer (so donating one leaves the
    other usable); traced values are returned as they are (they have no buffer)."""
    if isinstance(x, lax.Array):
        return arrays.copy_to_device(x, x.device)
    return x
