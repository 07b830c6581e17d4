"""`program_id` and `num_programs`: where in the grid the running kernel instance is.

While `pallas_call` traces a kernel, the grid indices are the kernel's leading
(scalar, int32) inputs; these functions return them. Outside a kernel they raise.

>>> program_id(0)
Traceback (most recent call last):
...
RuntimeError: pl.program_id can only be called inside a kernel traced by pl.pallas_call
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["grid_env", "num_programs", "program_id"]


class _GridStack(threading.local):
    def __init__(self) -> None:
        self.frames: list[tuple[Sequence[Any], tuple[int, ...]]] = []


_stack = _GridStack()


@contextlib.contextmanager
def grid_env(indices: Sequence[Any], grid: tuple[int, ...]) -> Iterator[None]:
    """Makes `indices` the program ids of a grid of shape `grid` inside the block."""
    _stack.frames.append((indices, grid))
    try:
        yield
    finally:
        _stack.frames.pop()


def _frame(what: str):
    if not _stack.frames:
        raise RuntimeError(f"pl.{what} can only be called inside a kernel traced by "
                           "pl.pallas_call")
    return _stack.frames[-1]


def _axis(axis: int, grid: tuple[int, ...], what: str) -> int:
    if not -len(grid) <= axis < len(grid):
        raise ValueError(f"pl.{what}({axis}): the grid {grid} has {len(grid)} axes")
    return axis % len(grid)


def program_id(axis: int) -> Any:
    """The index of the running kernel instance along grid axis `axis` (an int32 scalar)."""
    indices, grid = _frame("program_id")
    return indices[_axis(axis, grid, "program_id")]


def num_programs(axis: int) -> int:
    """The size of grid axis `axis` (a Python int: grids are static)."""
    _, grid = _frame("num_programs")
    return grid[_axis(axis, grid, "num_programs")]
