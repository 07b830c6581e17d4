"""packbits and unpackbits: booleans to and from the bits of uint8 arrays.

>>> packbits(np.array([1, 0, 1], bool))
Array([160], dtype=uint8)
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from lamella import lax
from lamella.numpy.util import (
    asarray_internal,
    canonicalize_axis,
    check_arraylike,
    dtype_of,
    flatten_1d,
)
from lamella.numpy.util import shape as _shape

__all__ = [
    "packbits", "unpackbits",
]


def _bit_weights(bitorder: str, name: str) -> np.ndarray:
    if bitorder not in ("big", "little"):
        raise ValueError(f"{name}: bitorder must be 'big' or 'little', got {bitorder!r}")
    shifts = np.arange(8, dtype=np.uint8)
    return shifts[::-1].copy() if bitorder == "big" else shifts


def _axis_last(a: Any, axis: int | None) -> tuple[Any, int]:
    if axis is None:
        return flatten_1d(a), 0
    rank = len(_shape(a))
    axis = canonicalize_axis(axis, rank, "axis")
    perm = [d for d in range(rank) if d != axis] + [axis]
    return lax.transpose(a, tuple(perm)), axis


def _axis_back(a: Any, axis: int) -> Any:
    rank = len(_shape(a))
    perm = list(range(rank - 1))
    perm.insert(axis, rank - 1)
    return lax.transpose(a, tuple(perm))


def packbits(a: Any, axis: int | None = None, bitorder: str = "big") -> Any:
    """Packs the truth values of an integer or boolean array into uint8 bytes along
    `axis` (the flattened array by default), zero-padding to a multiple of 8.

    >>> packbits(np.array([1, 0, 1, 1, 0, 0, 0, 0, 1], np.int32))
    Array([176, 128], dtype=uint8)
    """
    check_arraylike("packbits", a)
    a = asarray_internal(a)
    if dtype_of(a).kind not in "biu":
        raise TypeError(f"packbits: expected an integer or boolean array, got dtype {dtype_of(a)}")
    shifts = _bit_weights(bitorder, "packbits")
    bits = lax.convert_element_type(lax.ne(a, lax.full_like(a, 0)), np.uint8)
    moved, axis = _axis_last(bits, axis)
    *lead, n = _shape(moved)
    nbytes = -(-n // 8)
    padded = lax.pad(moved, np.uint8(0), [(0, 0, 0)] * len(lead) + [(0, nbytes * 8 - n, 0)])
    grouped = lax.reshape(padded, (*lead, nbytes, 8))
    weights = lax.broadcast_in_dim(asarray_internal(shifts), _shape(grouped), (len(lead) + 1,))
    packed = lax.reduce_sum(lax.shift_left(grouped, weights), (len(lead) + 1,))
    return packed if not lead and axis == 0 else _axis_back(packed, axis)


def unpackbits(a: Any, axis: int | None = None, count: int | None = None,
               bitorder: str = "big") -> Any:
    """Unpacks uint8 bytes into bits along `axis` (the flattened array by default);
    `count` keeps that many bits (negative drops from the end; padding with 0s past it).

    >>> unpackbits(np.uint8([176, 1]), count=10)
    Array([1, 0, 1, 1, 0, 0, 0, 0, 0, 0], dtype=uint8)
    """
    check_arraylike("unpackbits", a)
    a = asarray_internal(a)
    if dtype_of(a) != np.uint8:
        raise TypeError(f"unpackbits: expected an input array of unsigned byte data type "
                        f"(uint8), got dtype {dtype_of(a)}")
    shifts = _bit_weights(bitorder, "unpackbits")
    moved, axis = _axis_last(a, axis)
    *lead, n = _shape(moved)
    spread = lax.broadcast_in_dim(moved, (*lead, n, 8), tuple(range(len(lead) + 1)))
    weights = lax.broadcast_in_dim(asarray_internal(shifts), _shape(spread), (len(lead) + 1,))
    bits = lax.bitwise_and(lax.shift_right_logical(spread, weights), lax.full_like(spread, 1))
    bits = lax.reshape(bits, (*lead, n * 8))
    if count is not None:
        count = operator.index(count)
        keep = n * 8 + count if count < 0 else count
        keep = max(keep, 0)
        if keep <= n * 8:
            bits = lax.slice_in_dim(bits, 0, keep, axis=len(lead))
        else:
            bits = lax.pad(bits, np.uint8(0), [(0, 0, 0)] * len(lead) + [(0, keep - n * 8, 0)])
    return bits if not lead and axis == 0 else _axis_back(bits, axis)
