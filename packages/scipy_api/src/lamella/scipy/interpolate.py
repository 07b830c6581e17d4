"""Interpolation on rectilinear grids (`jax.scipy.interpolate`):
`RegularGridInterpolator`, linear or nearest-neighbour, a pytree that can be
passed through `jit` and `vmap`.

>>> import numpy as np
>>> f = RegularGridInterpolator((np.float32([1, 2, 3]), np.float32([4, 5, 6])),
...                             np.float32([[10, 20, 30], [40, 50, 60], [70, 80, 90]]))
>>> f(np.float32([[1.5, 4.5], [2.2, 5.8]]))
Array([30., 64.], dtype=float32)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

import lamella.core as lc
import lamella.numpy as jnp
from lamella.scipy._arguments import concrete, inexact

__all__ = ["RegularGridInterpolator"]

_METHODS = ("linear", "nearest")


def _check_method(method: str) -> None:
    if method not in _METHODS:
        raise ValueError(f"RegularGridInterpolator: method must be one of {list(_METHODS)}, "
                         f"got {method!r}")


class RegularGridInterpolator:
    """Interpolation of `values` given on the grid `points` (one 1-D array of
    strictly monotonic coordinates per leading dimension of `values`).

    Calling it at sample points `xi` (an array of shape (..., ndim), or a tuple
    of ndim broadcastable coordinate arrays) interpolates by `method` 'linear'
    or 'nearest'. Outside the grid the result is `fill_value` (default NaN;
    None extrapolates). With `bounds_error=True` sample points outside the grid
    raise a ValueError; that needs concrete points (not under `jit` or `vmap`).

    Unlike JAX, which needs ascending coordinates and silently gives wrong
    values otherwise, descending grids work (as in SciPy) and unordered ones
    are an error, when the grid is concrete.

    >>> import numpy as np
    >>> f = RegularGridInterpolator([np.float32([0, 1, 2])], np.float32([0, 10, 0]),
    ...                             method="nearest", fill_value=None)
    >>> f(np.float32([0.4, 1.4, 5]))
    Array([ 0., 10.,  0.], dtype=float32)
    """

    def __init__(self, points: Sequence[Any], values: Any, method: str = "linear",
                 bounds_error: bool = False, fill_value: Any = np.nan) -> None:
        _check_method(method)
        (values,) = inexact(values)
        if len(points) > values.ndim:
            raise ValueError(f"RegularGridInterpolator: there are {len(points)} point arrays, "
                             f"but values has {values.ndim} dimensions")
        grid = []
        for d, p in enumerate(points):
            p = jnp.asarray(p)
            if p.ndim != 1:
                raise ValueError(f"RegularGridInterpolator: the points in dimension {d} must "
                                 f"be 1-dimensional, got shape {p.shape}")
            if p.shape[0] != values.shape[d]:
                raise ValueError(f"RegularGridInterpolator: there are {p.shape[0]} points "
                                 f"and {values.shape[d]} values in dimension {d}")
            if p.shape[0] < 2:
                raise ValueError(f"RegularGridInterpolator: dimension {d} needs at least 2 "
                                 f"points, got {p.shape[0]}")
            known = concrete(p)
            if known is not None:
                steps = np.diff(known)
                if np.all(steps < 0):
                    p, values = jnp.flip(p), jnp.flip(values, d)
                elif not np.all(steps > 0):
                    raise ValueError(f"RegularGridInterpolator: the points in dimension {d} "
                                     "must be strictly ascending or descending")
            grid.append(inexact(p)[0])
        if fill_value is not None:
            fill_value = jnp.asarray(fill_value)
            if not jnp.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise ValueError(f"RegularGridInterpolator: fill_value of dtype "
                                 f"{fill_value.dtype} cannot be cast to the values' dtype "
                                 f"{values.dtype}; pass None or a compatible value")
        self.grid = tuple(grid)
        self.values = values
        self.method = method
        self.bounds_error = bounds_error
        self.fill_value = fill_value

    def __call__(self, xi: Any, method: str | None = None) -> Any:
        """The interpolated values at the sample points `xi`: an array of shape
        `xi.shape[:-1] + values.shape[ndim:]`."""
        method = self.method if method is None else method
        _check_method(method)
        ndim = len(self.grid)
        xi = self._sample_points(xi)
        if xi.shape[-1] != ndim:
            raise ValueError(f"RegularGridInterpolator: the sample points have dimension "
                             f"{xi.shape[-1]}, but the grid has dimension {ndim}")
        batch = xi.shape[:-1]
        xi = xi.reshape(-1, ndim)
        indices, distances, outside = [], [], jnp.zeros(xi.shape[0], bool)
        for d, g in enumerate(self.grid):
            x = xi[:, d]
            # The cell [g[i], g[i + 1]] holding x, the end cells for points outside.
            i = jnp.clip(jnp.searchsorted(g, x) - 1, 0, g.shape[0] - 2)
            indices.append(i)
            distances.append((x - g[i]) / (g[i + 1] - g[i]))
            outside = outside | (x < g[0]) | (x > g[-1])
        if self.bounds_error:
            self._raise_if_outside(outside, xi)
        trailing = (slice(None),) + (None,) * (self.values.ndim - ndim)
        if method == "linear":
            result = 0
            for corner in itertools.product((0, 1), repeat=ndim):
                weight = 1
                for upper, y in zip(corner, distances):
                    weight = weight * (y if upper else 1 - y)
                at = tuple(i + upper for i, upper in zip(indices, corner))
                result = result + self.values[at] * weight[trailing]
        else:
            result = self.values[tuple(jnp.where(y <= 0.5, i, i + 1)
                                       for i, y in zip(indices, distances))]
        if self.fill_value is not None:
            result = jnp.where(outside[trailing], self.fill_value.astype(result.dtype), result)
        return result.reshape(batch + self.values.shape[ndim:])

    def _sample_points(self, xi: Any) -> Any:
        """`xi` as an array of points (..., ndim), as SciPy reads it."""
        if isinstance(xi, tuple) and len(xi) == 1:
            xi = xi[0]
        if isinstance(xi, tuple):
            return jnp.stack(jnp.broadcast_arrays(*inexact(*xi)), axis=-1)
        (xi,) = inexact(xi)
        return xi.reshape(-1, len(self.grid)) if xi.ndim == 1 else xi

    def _raise_if_outside(self, outside: Any, xi: Any) -> None:
        known = concrete(outside)
        if known is None:
            raise ValueError("RegularGridInterpolator: bounds_error=True needs concrete sample "
                             "points, but they are traced (under jit, vmap or grad); use "
                             "fill_value to mark points outside the grid instead")
        if known.any():
            points = np.asarray(xi)
            for d, g in enumerate(self.grid):
                g = np.asarray(g)
                if np.any((points[:, d] < g[0]) | (points[:, d] > g[-1])):
                    raise ValueError(f"RegularGridInterpolator: one of the requested xi is "
                                     f"out of bounds in dimension {d}")


def _flatten(f: RegularGridInterpolator) -> tuple[tuple, tuple]:
    return (f.grid, f.values, f.fill_value), (f.method, f.bounds_error)


def _unflatten(aux: tuple, children: tuple) -> RegularGridInterpolator:
    # Rebuilt without __init__: the leaves may be tracers, already checked.
    f = object.__new__(RegularGridInterpolator)
    f.grid, f.values, f.fill_value = children
    f.method, f.bounds_error = aux
    return f


lc.tree_util.register_pytree_node(RegularGridInterpolator, _flatten, _unflatten)
