"""Running a kernel over its grid on CPU, as one XLA program or step by step.

The discharged kernel is a function from (program ids, block contents) to new
block contents. The compiled executor splits the grid axes in two:

- *lane* axes, along which every output block changes and every operand is
  tiled regularly (block index = grid index): they are independent kernel
  instances, so the kernel is `vmap`ped over them, and each operand is seen
  as a stack of blocks by a reshape and a transpose, which XLA fuses;
- *step* axes (the rest: reductions into the same output block, irregular
  index maps, an `"arbitrary"` dimension semantics): their points run in grid
  order, unrolled when there are few, else as a `fori_loop` that slices its
  blocks out with `dynamic_slice` and writes them back with
  `dynamic_update_slice`.

So a blocked add is one fused elementwise loop and a blocked matmul a handful
of batched dots. The step interpreter (`interpret=True`)
walks the grid in Python, running each kernel instance eagerly; a compiled kernel
that calls `debug_print` runs its grid points in one loop, in grid order.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

import lamella.lax as lax
import lamella.numpy as jnp
from lamella.core import ClosedJaxpr, ShapedArray, vmap
from lamella.core.state import eval_discharged
from lamella.pallas.language import poison
from lamella.pallas.specs import BlockMapping

__all__ = ["GridPlan", "plan_grid", "run_compiled", "run_stepwise"]

UNROLL_STEPS = 8
"""Step-axis points up to this many run unrolled (static slices XLA can fuse)."""


@dataclasses.dataclass(frozen=True)
class GridPlan:
    """Which grid axes are lanes (vmapped) and, per operand and dim, the lane axis
    that tiles it (or None for a dim sliced at each step)."""

    lanes: tuple[int, ...]
    steps: tuple[int, ...]
    lane_of: tuple[tuple[int | None, ...], ...]


def _lane_axis(m: BlockMapping, d: int, grid: tuple[int, ...], axis: int) -> bool:
    """Whether dim d of the operand is tiled by grid axis `axis`: block g starts at g*b."""
    if m.element[d] or m.padded_shape[d] != grid[axis] * m.block_shape[d]:
        return False
    coords = np.arange(grid[axis]).reshape([-1 if k == axis else 1 for k in range(len(grid))])
    return bool(np.all(m.starts[..., d] == coords * m.block_shape[d]))


def _constant_along(table: np.ndarray, axes: Sequence[int]) -> bool:
    return all(np.all(table == table.take([0], axis=a)) for a in axes)


def plan_grid(grid: tuple[int, ...], ins: Sequence[BlockMapping],
              outs: Sequence[BlockMapping], arbitrary: Sequence[bool]) -> GridPlan:
    """Chooses the lane axes: those along which every output is tiled (so every output
    block belongs to one lane) and every operand is either tiled or constant."""
    mappings = [*ins, *outs]
    lanes = []
    for a in range(len(grid)):
        if arbitrary[a] or grid[a] == 1 or not outs:
            continue
        if all(any(_lane_axis(m, d, grid, a) for d in range(len(m.array_shape))) for m in outs):
            lanes.append(a)
    lane_of = []
    for m in mappings:
        row = []
        for d in range(len(m.array_shape)):
            axis = next((a for a in lanes if _lane_axis(m, d, grid, a)), None)
            if axis is None and not _constant_along(m.starts[..., d], lanes):
                return GridPlan((), tuple(range(len(grid))),
                                tuple((None,) * len(m.array_shape) for m in mappings))
            row.append(axis)
        if len({a for a in row if a is not None}) != sum(a is not None for a in row):
            return GridPlan((), tuple(range(len(grid))),
                            tuple((None,) * len(m.array_shape) for m in mappings))
        lane_of.append(tuple(row))
    steps = tuple(a for a in range(len(grid)) if a not in lanes)
    return GridPlan(tuple(lanes), steps, tuple(lane_of))


# ---------------------------------------------------------------------------
# Views: an operand as the blocks its lanes see at one step. A lane dim of size
# g*b is split into (g, b) in place (a reshape), and the kernel is vmapped over
# the g axes where they lie, so no data moves for an elementwise kernel.


def _layout(m: BlockMapping, lane_of: tuple, grid: tuple[int, ...]
            ) -> tuple[list[int], dict[int, int]]:
    """The shape an operand is viewed with, and the position of each lane axis in it."""
    shape, lane_pos = [], {}
    for d, a in enumerate(lane_of):
        if a is not None:
            lane_pos[a] = len(shape)
            shape.append(grid[a])
        if not m.squeezed[d]:
            shape.append(m.block_shape[d])
    return shape, lane_pos


def _axis_at_level(lane_pos: dict[int, int], lanes: tuple[int, ...], level: int) -> int | None:
    """Where lane axis `lanes[level]` is once the outer levels' axes are mapped away."""
    a = lanes[level]
    if a not in lane_pos:
        return None
    p = lane_pos[a]
    return p - sum(1 for b in lanes[:level] if b in lane_pos and lane_pos[b] < p)


def _sizes(m: BlockMapping, lane_of: tuple) -> list[int]:
    return [m.padded_shape[d] if a is not None else m.block_shape[d]
            for d, a in enumerate(lane_of)]


def _view(x: Any, m: BlockMapping, lane_of: tuple, starts: Sequence[Any],
          grid: tuple[int, ...]) -> Any:
    starts = [0 if a is not None else s for s, a in zip(starts, lane_of)]
    x = _slice(x, starts, _sizes(m, lane_of))
    shape, _ = _layout(m, lane_of, grid)
    return jnp.reshape(x, shape) if tuple(shape) != tuple(x.shape) else x


def _unview(x: Any, new: Any, m: BlockMapping, lane_of: tuple, starts: Sequence[Any]) -> Any:
    sizes = _sizes(m, lane_of)
    new = jnp.reshape(new, sizes) if tuple(new.shape) != tuple(sizes) else new
    if tuple(sizes) == tuple(x.shape):
        return new
    starts = [0 if a is not None else s for s, a in zip(starts, lane_of)]
    return lax.dynamic_update_slice(
        x, new, [np.int32(s) if isinstance(s, (int, np.integer)) else s for s in starts])


def _slice(x: Any, starts: Sequence[Any], sizes: Sequence[int]) -> Any:
    if tuple(sizes) == tuple(x.shape):
        return x
    if all(isinstance(s, (int, np.integer)) for s in starts):
        return lax.slice(x, [int(s) for s in starts], [int(s) + n for s, n in zip(starts, sizes)])
    return lax.dynamic_slice(x, starts, sizes)


# ---------------------------------------------------------------------------
# The compiled executor.


def _pad(x: Any, m: BlockMapping) -> Any:
    if all(p == (0, 0) for p in m.padding):
        return x
    return jnp.pad(x, m.padding)


def _unpad(x: Any, m: BlockMapping) -> Any:
    if all(p == (0, 0) for p in m.padding):
        return x
    return lax.slice(x, [lo for lo, _ in m.padding],
                     [lo + n for (lo, _), n in zip(m.padding, m.array_shape)])


def _kernel_fn(kernel: ClosedJaxpr, n_grid: int, n_in: int, n_out: int):
    """The discharged kernel: (program ids, block contents) -> new out and scratch blocks."""
    def run(*args):
        _, finals = eval_discharged(kernel.jaxpr, kernel.consts, args)
        return finals[n_in:]
    return run


def run_compiled(args: Sequence[Any], *, kernel: ClosedJaxpr, grid: tuple[int, ...],
                 in_mappings: Sequence[BlockMapping], out_mappings: Sequence[BlockMapping],
                 scratch_avals: Sequence[ShapedArray], aliases: dict[int, int],
                 plan: GridPlan, unroll: bool = True) -> list[Any]:
    """The grid as one traced computation (called while lowering `pallas_call`); with
    `unroll=False` the step points always run as a loop, strictly in order."""
    n_in, n_out = len(in_mappings), len(out_mappings)
    mappings = [*in_mappings, *out_mappings]
    ins = [_pad(x, m) for x, m in zip(args, in_mappings)]
    inverse = {o: i for i, o in aliases.items()}
    outs = [ins[inverse[k]] if k in inverse else poison(ShapedArray(m.padded_shape, m.dtype))
            for k, m in enumerate(out_mappings)]
    lane_sizes = [grid[a] for a in plan.lanes]
    scratch = [poison(ShapedArray((*lane_sizes, *a.shape), a.dtype)) for a in scratch_avals]
    body = _kernel_fn(kernel, len(grid), n_in, n_out)
    positions = [_layout(m, row, grid)[1] for m, row in zip(mappings, plan.lane_of)]
    pid_pos = [{a: 0} if a in plan.lanes else {} for a in range(len(grid))]
    scratch_pos = [{a: k for k, a in enumerate(plan.lanes)}] * len(scratch_avals)
    in_pos = [*pid_pos, *positions, *scratch_pos]
    out_pos = [*positions[n_in:], *scratch_pos]
    fn = body
    for level in reversed(range(len(plan.lanes))):
        fn = vmap(fn, in_axes=tuple(_axis_at_level(p, plan.lanes, level) for p in in_pos),
                  out_axes=[_axis_at_level(p, plan.lanes, level) for p in out_pos])

    step_points = list(itertools.product(*(range(grid[a]) for a in plan.steps)))

    def step(point_starts, pids_steps, outs, scratch):
        pids = []
        for a in range(len(grid)):
            if a in plan.lanes:
                pids.append(jnp.arange(grid[a], dtype=jnp.int32))
            else:
                pids.append(pids_steps[plan.steps.index(a)])
        views = [_view(x, m, plan.lane_of[k], point_starts[k], grid)
                 for k, (x, m) in enumerate(zip([*ins, *outs], mappings))]
        new = fn(*pids, *views, *scratch)
        new_outs = [_unview(o, v, m, plan.lane_of[n_in + k], point_starts[n_in + k])
                    for k, (o, v, m) in enumerate(zip(outs, new[:n_out], out_mappings))]
        return new_outs, list(new[n_out:])

    def starts_at(point):
        index = [0] * len(grid)
        for a, p in zip(plan.steps, point):
            index[a] = p
        return [m.starts[tuple(index)].tolist() for m in mappings]

    if unroll and len(step_points) <= UNROLL_STEPS:
        for point in step_points:
            outs, scratch = step(starts_at(point), [np.int32(p) for p in point], outs, scratch)
    else:
        tables = [jnp.asarray(np.array([starts_at(p)[k] for p in step_points], np.int32))
                  for k in range(len(mappings))]
        points = jnp.asarray(np.array(step_points, np.int32))

        def loop_body(t, carry):
            outs, scratch = carry
            starts = [[row[d] for d in range(len(m.array_shape))]
                      for row, m in zip((tb[t] for tb in tables), mappings)]
            return step(starts, [points[t, k] for k in range(len(plan.steps))], outs, scratch)
        outs, scratch = lax.fori_loop(0, len(step_points), loop_body, (outs, scratch))
    return [_unpad(o, m) for o, m in zip(outs, out_mappings)]


# ---------------------------------------------------------------------------
# The step interpreter.


def run_stepwise(args: Sequence[Any], *, kernel: ClosedJaxpr, grid: tuple[int, ...],
                 in_mappings: Sequence[BlockMapping], out_mappings: Sequence[BlockMapping],
                 scratch_avals: Sequence[ShapedArray], aliases: dict[int, int]) -> list[Any]:
    """Runs each kernel instance in grid order, eagerly, one operation at a time."""
    n_in = len(in_mappings)
    mappings = [*in_mappings, *out_mappings]
    ins = [_pad(jnp.asarray(x), m) for x, m in zip(args, in_mappings)]
    inverse = {o: i for i, o in aliases.items()}
    outs = [ins[inverse[k]] if k in inverse else poison(ShapedArray(m.padded_shape, m.dtype))
            for k, m in enumerate(out_mappings)]
    scratch = [poison(a) for a in scratch_avals]
    for point in itertools.product(*map(range, grid)):
        starts = [m.starts[point].tolist() for m in mappings]
        blocks = [jnp.reshape(_slice(x, s, m.block_shape), m.kernel_shape)
                  for x, s, m in zip([*ins, *outs], starts, mappings)]
        pids = [np.int32(p) for p in point]
        _, finals = eval_discharged(kernel.jaxpr, kernel.consts, [*pids, *blocks, *scratch])
        for k, (m, new) in enumerate(zip(out_mappings, finals[n_in:n_in + len(outs)])):
            block = jnp.reshape(new, m.block_shape)
            outs[k] = lax.dynamic_update_slice(outs[k], block,
                                               [np.int32(s) for s in starts[n_in + k]])
        scratch = list(finals[n_in + len(outs):])
    return [_unpad(o, m) for o, m in zip(outs, out_mappings)]


