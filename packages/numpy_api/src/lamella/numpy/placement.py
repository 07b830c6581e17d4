"""Where results go: JAX's `device=` and `out_sharding=` arguments, and real copies.

jax.numpy's creation functions, products and samplers take `out_sharding`, a
`NamedSharding` or `PartitionSpec` for the result. lamella.core has no named
shardings yet, so only `None` (the default placement) is accepted; anything
else is a TypeError, as JAX's for a kind of sharding it does not take.

>>> import numpy as np
>>> from lamella.lax import device_put
>>> x = device_put(np.float32([1, 2]))
>>> copy_array(x) is x, bool((copy_array(x) == x).all())
(False, True)
"""

from __future__ import annotations

from typing import Any

from lamella import lax
from lamella.core.trace import Tracer
from lamella.lax.runtime import arrays

__all__ = ["check_out_sharding", "copy_array", "place"]


def check_out_sharding(name: str, out_sharding: Any) -> None:
    """A TypeError unless `out_sharding` is None (the only placement lamella has)."""
    if out_sharding is not None:
        raise TypeError(
            f"`out_sharding` argument of lamella.numpy.{name} only supports None: lamella "
            f"has no NamedSharding or PartitionSpec to place results by (got "
            f"{out_sharding!r} of type {type(out_sharding).__name__}). Use `device=` or "
            "lamella.core.device_put to choose a device.")


def place(x: Any, device: Any = None, out_sharding: Any = None, name: str = "") -> Any:
    """`x` committed to `device` when given (a no-op while tracing, where placement
    is the caller's), after checking `out_sharding`."""
    check_out_sharding(name, out_sharding)
    if device is None or isinstance(x, Tracer):
        return x
    return lax.device_put(x, device)


def copy_array(x: Any) -> Any:
    """A new Array with `x`'s value and its own buffer (so donating one leaves the
    other usable); traced values are returned as they are (they have no buffer)."""
    if isinstance(x, lax.Array):
        return arrays.copy_to_device(x, x.device)
    return x
