"""`associative_scan`: an inclusive prefix scan in O(log n) depth.

The parallel-prefix recursion: combine adjacent pairs, scan the half-length
result recursively (those are the prefixes ending at odd positions), combine
each with the next even element to get the rest, and interleave. Everything is
strided slices, interior padding and the user's combine function, so it works
under every transformation and XLA sees log2(n) levels of wide operations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from lamella.core.trace import aval_of
from lamella.core.tree_util import tree_flatten, tree_unflatten
from lamella.lax.arithmetic import add
from lamella.lax.logical import bitwise_or
from lamella.lax.shapes import concatenate, pad, rev, slice_in_dim


def associative_scan(fn: Callable[[Any, Any], Any], elems: Any, reverse: bool = False,
                     axis: int = 0) -> Any:
    """Scans `elems` (a pytree of arrays) along `axis` with an associative `fn`.

    `fn(a, b)` combines two pytrees like `elems` elementwise along the scanned
    axis (it is called on slices of several elements at once).

    Args:
      fn: an associative binary function of two pytrees like `elems`.
      elems: a pytree of arrays with a common length along `axis`.
      reverse: scan from the end.
      axis: the axis to scan along.

    Returns:
      The inclusive scan, like `elems`.

    >>> import numpy as np
    >>> import lamella.lax as lax
    >>> associative_scan(lax.add, np.arange(1, 6, dtype=np.int32))
    Array([ 1,  3,  6, 10, 15], dtype=int32)
    """
    leaves, tree = tree_flatten(elems)
    if not leaves:
        return elems
    ranks = {aval_of(x).ndim for x in leaves}
    if len(ranks) != 1:
        raise ValueError(f"associative_scan needs elements of one rank, got ranks {sorted(ranks)}")
    rank = ranks.pop()
    if not -rank <= axis < rank:
        raise ValueError(f"associative_scan axis {axis} is out of range for rank {rank}")
    axis %= rank
    sizes = {aval_of(x).shape[axis] for x in leaves}
    if len(sizes) != 1:
        raise ValueError("associative_scan needs every element to have the same length along "
                         f"axis {axis}, got {sorted(sizes)}")

    def combine(a, b):
        out, out_tree = tree_flatten(fn(tree_unflatten(tree, a), tree_unflatten(tree, b)))
        if out_tree != tree:
            raise TypeError(f"associative_scan's fn must return the structure of its inputs "
                            f"{tree}, got {out_tree}")
        return out

    if reverse:
        leaves = [rev(x, (axis,)) for x in leaves]
    scanned = _scan(combine, leaves, axis)
    if reverse:
        scanned = [rev(x, (axis,)) for x in scanned]
    return tree_unflatten(tree, scanned)


def _scan(combine, elems: list, axis: int) -> list:
    n = aval_of(elems[0]).shape[axis]
    if n < 2:
        return elems
    pairs = combine([slice_in_dim(e, 0, n - 1, 2, axis) for e in elems],
                    [slice_in_dim(e, 1, None, 2, axis) for e in elems])
    odd = _scan(combine, pairs, axis)  # prefixes ending at positions 1, 3, 5, ...
    evens_after_first = [slice_in_dim(e, 2, None, 2, axis) for e in elems]
    previous_odd = odd if n % 2 else [slice_in_dim(o, 0, -1, 1, axis) for o in odd]
    even = combine(previous_odd, evens_after_first)  # prefixes ending at 2, 4, ...
    even = [concatenate([slice_in_dim(e, 0, 1, 1, axis), x], axis) for e, x in zip(elems, even)]
    return [_interleave(a, b, axis) for a, b in zip(even, odd)]


def _interleave(even: Any, odd: Any, axis: int) -> Any:
    """Merges `even` (positions 0, 2, ...) and `odd` (1, 3, ...) along `axis`."""
    n_even, n_odd = aval_of(even).shape[axis], aval_of(odd).shape[axis]
    ndim = aval_of(even).ndim
    zero = np.zeros((), aval_of(even).dtype)

    def config(low, high):
        return [(low, high, 1) if d == axis else (0, 0, 0) for d in range(ndim)]
    spread_even = pad(even, zero, config(0, n_odd - n_even + 1))
    spread_odd = pad(odd, zero, config(1, n_even - n_odd))
    join = bitwise_or if aval_of(even).dtype == np.dtype(bool) else add
    return join(spread_even, spread_odd)
