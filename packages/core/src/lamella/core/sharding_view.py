"""`visualize_array_sharding` / `visualize_sharding`: which device holds which block of a
1-D or 2-D array, drawn as a box table the way JAX prints it on a plain terminal.

Each cell is one block of the array, labelled with the platform and the ids of the
devices that hold it; cells are sized in proportion to their block (ten lines for
the whole height at `scale=1`, a width 2.5 times the height scaled by the array's
aspect ratio, at least `min_width` characters).

>>> import lamella.core as lc
>>> from lamella.core.sharding import NamedSharding, P, make_mesh
>>> visualize_sharding((8,), NamedSharding(make_mesh((1,), ("x",)), P("x")))
┌───────┐
│ CPU 0 │
└───────┘
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import IO, Any

_HEIGHT_TO_WIDTH = 2.5


def _blocks(shape: tuple[int, ...], sharding: Any) -> dict[tuple[int, int], tuple[set, int, int]]:
    """(row, column) of each block -> (device ids, height in elements, width in elements)."""
    blocks: dict[tuple[int, int], tuple[set, int, int]] = {}
    if hasattr(sharding, "devices_indices_map"):
        placed = sharding.devices_indices_map(shape)
    else:  # a single device's sharding (jaxlib's own): the whole array there
        placed = {d: (slice(None),) * len(shape) for d in sharding.device_set}
    for device, index in placed.items():
        spans = []
        for part, n in zip(index, shape):
            start, stop, _ = part.indices(n) if isinstance(part, slice) else (part, part + 1, 1)
            spans.append((start // max(stop - start, 1), stop - start))
        if len(shape) == 1:
            spans = [(0, None), *spans]
        (row, height), (col, width) = spans
        ids, _, _ = blocks.setdefault((row, col), (set(), height, width))
        ids.add(device.id)
    return blocks


def _pad(text: str, width: int, height: int, top: int, left: int) -> list[str]:
    lines = [" " * width] * height
    lines[top] = " " * left + text + " " * (width - left - len(text))
    return lines


def render_sharding(shape: Sequence[int], sharding: Any, *, scale: float = 1.0,
                    min_width: int = 9, max_width: int = 80) -> str:
    """The table `visualize_sharding` prints, as a string (no trailing newline)."""
    shape = tuple(int(n) for n in shape)
    if not 1 <= len(shape) <= 2:
        raise ValueError("`visualize_sharding` only works for shapes with 1 and 2 dimensions.")
    base_height = int(10 * scale)
    base_width = int(base_height * (shape[1] if len(shape) == 2 else 1) / shape[0])
    kind = next(iter(sharding.device_set)).platform.upper()
    blocks = _blocks(shape, sharding)
    rows = max(r for r, _ in blocks) + 1
    cols = max(c for _, c in blocks) + 1
    cells: dict[tuple[int, int], tuple[str, int, int, int, int]] = {}
    for (r, c), (ids, height, width) in blocks.items():
        label = f"{kind} " + ",".join(map(str, sorted(ids)))
        w = int(width / shape[-1] * base_width * _HEIGHT_TO_WIDTH)
        w = min(max(w, min_width), max_width)
        h = 1 if height is None else int(height / shape[0] * base_height)
        left, extra = divmod(w - len(label) - 2, 2)
        top, below = divmod(h - 2, 2)
        left, right = max(left, 0), max(left + extra, 0)
        top, bottom = max(top, 0), max(top + below, 0)
        cells[r, c] = (label, left, right, top, bottom)
    col_widths = [max(cells[r, c][1] + len(cells[r, c][0]) + cells[r, c][2]
                      for r in range(rows)) for c in range(cols)]
    row_heights = [max(cells[r, c][3] + 1 + cells[r, c][4] for c in range(cols))
                   for r in range(rows)]

    def rule(left: str, middle: str, right: str) -> str:
        return left + middle.join("─" * w for w in col_widths) + right

    out = [rule("┌", "┬", "┐")]
    for r in range(rows):
        drawn = []
        for c in range(cols):
            label, left, right, top, bottom = cells[r, c]
            inner = col_widths[c] - left - right  # the label is centred in what is left
            offset = left + (inner - len(label)) // 2
            first = top + (row_heights[r] - (top + 1 + bottom)) // 2
            drawn.append(_pad(label, col_widths[c], row_heights[r], first, offset))
        out += ["│" + "│".join(parts) + "│" for parts in zip(*drawn)]
        if r + 1 < rows:
            out.append(rule("├", "┼", "┤"))
    out.append(rule("└", "┴", "┘"))
    return "\n".join(out)


def visualize_sharding(shape: Sequence[int], sharding: Any, *, use_color: bool = True,
                       scale: float = 1.0, min_width: int = 9, max_width: int = 80,
                       color_map: Any = None, file: IO[str] | None = None) -> None:
    """Prints which device holds which block of an array of `shape` laid out by
    `sharding` (JAX's `jax.debug.visualize_sharding`; colours are not drawn)."""
    del use_color, color_map  # the uncoloured table, as JAX prints it off a terminal
    print(render_sharding(shape, sharding, scale=scale, min_width=min_width,
                          max_width=max_width), file=file or sys.stdout)


def visualize_array_sharding(arr: Any, **kwargs: Any) -> None:
    """Prints which device holds which block of the 1-D or 2-D array `arr`
    (JAX's `jax.debug.visualize_array_sharding`)."""
    sharding = getattr(arr, "sharding", None)
    if sharding is None:
        raise TypeError("visualize_array_sharding takes an Array placed on devices, got "
                        f"{type(arr).__name__}; inside jit the layout is not known yet")
    visualize_sharding(arr.shape, sharding, **kwargs)
