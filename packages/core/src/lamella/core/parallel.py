"""`shard_map` and `pmap`: the same function on many devices at once.

Both need collectives and a compiler, which live in lamella.lax; lax registers
its implementations here when it loads, and these names forward to them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_implementations: dict[str, Callable[..., Any]] = {}


def register_parallel(name: str, implementation: Callable[..., Any]) -> None:
    """Installs the runtime's `shard_map` or `pmap` (lamella.lax does on import)."""
    _implementations[name] = implementation


def _implementation(name: str) -> Callable[..., Any]:
    try:
        return _implementations[name]
    except KeyError:
        raise RuntimeError(f"{name} runs on devices: import lamella.lax (or lamella.numpy) "
                           "first") from None


def shard_map(f: Callable | None = None, /, **kwargs: Any) -> Any:
    """`f`, written for one device's block of each argument, run on every device of a mesh
    (`mesh=`, `in_specs=`, `out_specs=`, `check_vma=`, `axis_names=`, as in JAX); see
    lamella.lax.shard_map.

    (needs lamella.lax; packages/lax/tests/multidevice runs it)

    >>> import numpy as np, lamella.lax as lax  # doctest: +SKIP
    >>> from lamella.core.sharding import P, make_mesh  # doctest: +SKIP
    >>> mesh = make_mesh((1,), ("x",))  # doctest: +SKIP
    >>> double = lambda b: lax.mul(b, 2.0)  # doctest: +SKIP
    >>> shard_map(double, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(  # doctest: +SKIP
    ...     np.ones(2, np.float32))
    Array([2., 2.], dtype=float32)
    """
    return _implementation("shard_map")(f, **kwargs)


def pmap(fun: Callable, axis_name: Any = None, **kwargs: Any) -> Any:
    """`fun` mapped over the leading axis of its arguments, one device per slice
    (`in_axes=`, `out_axes=`, `static_broadcasted_argnums=`, `devices=`,
    `donate_argnums=`, as in JAX); see lamella.lax.pmap.

    (needs lamella.lax; packages/lax/tests/multidevice runs it)

    >>> import numpy as np, lamella.lax as lax  # doctest: +SKIP
    >>> total = pmap(lambda x: lax.psum(x, "i"), axis_name="i")  # doctest: +SKIP
    >>> total(np.ones((1, 2), np.float32))  # doctest: +SKIP
    Array([[1., 1.]], dtype=float32)
    """
    return _implementation("pmap")(fun, axis_name, **kwargs)
