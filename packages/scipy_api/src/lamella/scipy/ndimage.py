"""Multidimensional image processing (`jax.scipy.ndimage`): `map_coordinates`,
sampling an array at fractional coordinates by nearest-neighbour (order 0) or
linear (order 1) interpolation.

Boundary modes follow JAX, which fixed SciPy's old behaviour: 'constant' and
'wrap' here are SciPy's 'grid-constant' and 'grid-wrap' (those names are
accepted too, as is 'grid-mirror', SciPy's name for 'reflect').

>>> import numpy as np
>>> map_coordinates(np.arange(12.0, dtype=np.float32).reshape(3, 4),
...                 [np.float32([0.5, 1.5]), np.float32([1.5, 2.5])], order=1)
Array([3.5, 8.5], dtype=float32)
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import lamella.lax as lax
import lamella.numpy as jnp
from lamella.scipy._arguments import inexact, static_int

__all__ = ["map_coordinates"]


def _mirror(index: Any, size: int) -> Any:
    """Reflection about the first and last samples: period 2 (size - 1)."""
    if size == 1:
        return jnp.zeros_like(index)
    period = 2 * (size - 1)
    return (size - 1) - jnp.abs(jnp.remainder(index, period) - (size - 1))


def _reflect(index: Any, size: int) -> Any:
    """Reflection about the outer edges of the end samples: period 2 size."""
    index = jnp.remainder(index, 2 * size)
    return jnp.where(index < size, index, 2 * size - 1 - index)


_INDEX_FIXERS: dict[str, Callable[[Any, int], Any]] = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: jnp.clip(index, 0, size - 1),
    "wrap": lambda index, size: jnp.remainder(index, size),
    "mirror": _mirror,
    "reflect": _reflect,
}
_SCIPY_NAMES = {"grid-constant": "constant", "grid-wrap": "wrap", "grid-mirror": "reflect"}


def _nearest(coordinate: Any) -> list[tuple[Any, Any]]:
    """The one node of nearest-neighbour interpolation, of weight 1 (None)."""
    # Halves round away from zero, as in JAX (SciPy rounds them up).
    return [(lax.round(coordinate).astype(jnp.int32), None)]


def _linear(coordinate: Any) -> list[tuple[Any, Any]]:
    """The two nodes of linear interpolation and their weights."""
    lower = jnp.floor(coordinate)
    upper_weight = coordinate - lower
    index = lower.astype(jnp.int32)
    return [(index, 1 - upper_weight), (index + 1, upper_weight)]


def map_coordinates(input: Any, coordinates: Sequence[Any], order: int, mode: str = "constant",
                    cval: Any = 0.0) -> Any:
    """`input` sampled at `coordinates` (one array per dimension of `input`, all of
    one shape) by interpolation of `order` 0 (nearest) or 1 (linear).

    `mode` says what lies outside `input`: 'constant' (`cval`), 'nearest' (the
    edge value), 'wrap' (periodic), 'mirror' (reflected about the edge samples)
    or 'reflect' (reflected about the outer edges). Integer inputs give rounded
    results of their own dtype.

    >>> import numpy as np
    >>> map_coordinates(np.float32([1, 2, 3]), [np.float32([-1, 0.25, 3])], order=1,
    ...                 mode="wrap")
    Array([3.  , 1.25, 1.  ], dtype=float32)
    """
    input = jnp.asarray(input)
    if isinstance(coordinates, Sequence):
        coordinates = [jnp.asarray(c) for c in coordinates]
    else:
        coordinates = list(jnp.asarray(coordinates))
    if len(coordinates) != input.ndim:
        raise ValueError(f"map_coordinates: coordinates must be a sequence of input.ndim "
                         f"({input.ndim}) arrays, got {len(coordinates)}")
    if input.ndim == 0:
        raise ValueError("map_coordinates: input must be at least 1-dimensional")
    if any(size == 0 for size in input.shape):
        raise ValueError(f"map_coordinates: input must not be empty, got shape {input.shape}")
    fixer = _SCIPY_NAMES.get(mode, mode)
    if fixer not in _INDEX_FIXERS:
        raise ValueError(f"map_coordinates: mode must be one of {sorted(_INDEX_FIXERS)} (or "
                         f"SciPy's {sorted(_SCIPY_NAMES)}), got {mode!r}")
    order = static_int(order, "map_coordinates: order")
    if order not in (0, 1):
        raise NotImplementedError(f"map_coordinates supports order 0 (nearest) and 1 "
                                  f"(linear), as JAX does; got order={order}")
    coordinates = [inexact(c)[0] for c in coordinates]
    constant = fixer == "constant"
    cval = jnp.asarray(cval).astype(input.dtype)
    nodes_per_axis = []
    for coordinate, size in zip(coordinates, input.shape):
        nodes = _nearest(coordinate) if order == 0 else _linear(coordinate)
        # (index inside input, whether the node lies inside it (for 'constant'), weight)
        nodes_per_axis.append([(_INDEX_FIXERS[fixer](index, size),
                                (index >= 0) & (index < size) if constant else None, weight)
                               for index, weight in nodes])
    terms = []
    for corner in itertools.product(*nodes_per_axis):
        indices, valid, weights = zip(*corner)
        value = input[tuple(indices)]
        if constant:
            value = jnp.where(functools.reduce(operator.and_, valid), value, cval)
        terms.append(functools.reduce(operator.mul, [w for w in weights if w is not None], value))
    result = functools.reduce(operator.add, terms)
    if jnp.issubdtype(input.dtype, jnp.integer) and order == 1:
        result = lax.round(result)
    return result.astype(input.dtype)
