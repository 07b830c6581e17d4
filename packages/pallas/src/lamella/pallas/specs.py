"""How a kernel sees its operands: block specs, grid specs, scratch shapes, params.

A `BlockSpec(block_shape, index_map)` cuts an operand into blocks; at grid point
`(i, j, ...)` the kernel gets a ref to the block whose index `index_map(i, j, ...)`
returns (`pl.Blocked` dimensions, the default: the block index, so the block
starts at index * size) or whose element offset it returns (`pl.Element`). A
`None` or `pl.squeezed` dimension is a block of size 1 that the kernel does not
see. `BlockMapping` is the resolved form: the static table of every grid point's
block start, which the CPU executor turns into slices.

>>> spec = BlockSpec((2, None), lambda i: (i, 0))
>>> mapping = block_mapping(spec, (4, 3), np.float32, grid=(2,), what="input 0", kernel="k")
>>> mapping.block_shape, mapping.kernel_shape, mapping.starts.tolist()
((2, 1), (2,), [[0, 0], [2, 0]])
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lamella.core import ShapeDtypeStruct, ensure_compile_time_eval

__all__ = ["ANY", "HOST", "BlockSpec", "Blocked", "CompilerParams", "CostEstimate", "Element",
           "GridSpec", "MemoryRef", "MemorySpace", "Squeezed", "block_mapping", "no_block_spec",
           "squeezed"]


@dataclasses.dataclass(frozen=True)
class Blocked:
    """A block dimension indexed by block number (the default for an int size)."""

    block_size: int


@dataclasses.dataclass(frozen=True)
class Element:
    """A block dimension whose index map returns an element offset, not a block number;
    the operand is padded with `padding = (low, high)` elements first."""

    block_size: int
    padding: tuple[int, int] = (0, 0)


class Squeezed:
    """A block dimension of size 1 that the kernel does not see (also spelled `None`)."""

    def __repr__(self) -> str:
        return "Squeezed()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Squeezed)

    def __hash__(self) -> int:
        return hash(Squeezed)


squeezed = Squeezed()


class _NoBlockSpec:
    def __repr__(self) -> str:
        return "NoBlockSpec"


no_block_spec = _NoBlockSpec()


@dataclasses.dataclass(frozen=True)
class BlockSpec:
    """The block of an operand each kernel instance sees.

    `block_shape` entries are ints (`Blocked`), `pl.Blocked`, `pl.Element`, or
    `None`/`pl.squeezed`; `None` for the whole spec means the whole operand.
    `index_map(*grid_indices)` returns one index per dimension.
    """

    block_shape: Sequence[Any] | None = None
    index_map: Callable[..., Any] | None = None
    pipeline_mode: Any = None
    memory_space: Any = None


@dataclasses.dataclass(frozen=True)
class GridSpec:
    """The grid and the specs of a `pallas_call`, in one object."""

    grid: Any = ()
    in_specs: Any = no_block_spec
    out_specs: Any = no_block_spec
    scratch_shapes: Any = ()


@dataclasses.dataclass(frozen=True)
class CostEstimate:
    """What a kernel costs, for XLA's scheduler: flops, transcendentals, bytes moved."""

    flops: int
    transcendentals: int
    bytes_accessed: int
    remote_bytes_transferred: int = 0


@dataclasses.dataclass(frozen=True)
class CompilerParams:
    """Triton's compilation parameters (`jax.experimental.pallas.triton.CompilerParams`)."""

    num_warps: int | None = None
    num_stages: int | None = None


@dataclasses.dataclass(frozen=True)
class MemoryRef:
    """A scratch buffer's shape, dtype and memory space (`pl.ANY((8,), jnp.float32)`)."""

    shape: tuple[int, ...]
    dtype: Any
    memory_space: Any = None

    def get_array_aval(self) -> ShapeDtypeStruct:
        return ShapeDtypeStruct(self.shape, self.dtype)


class MemorySpace:
    """Where a buffer lives; calling one gives a scratch shape in it."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, shape: Sequence[int], dtype: Any) -> MemoryRef:
        return MemoryRef(tuple(shape), np.dtype(dtype), self)

    def __repr__(self) -> str:
        return self.name


ANY = MemorySpace("ANY")
HOST = MemorySpace("HOST")


# ---------------------------------------------------------------------------
# Resolving a spec against an operand and a grid.


@dataclasses.dataclass(frozen=True, eq=False)
class BlockMapping:
    """A block spec resolved for one operand: `block_shape` (squeezed dims are 1),
    `kernel_shape` (what the kernel's ref has), `padding` (low, high) per dim, and
    `starts[g..., d]`, the element start of the block at every grid point in the
    padded operand."""

    array_shape: tuple[int, ...]
    dtype: np.dtype
    block_shape: tuple[int, ...]
    kernel_shape: tuple[int, ...]
    squeezed: tuple[bool, ...]
    element: tuple[bool, ...]
    padding: tuple[tuple[int, int], ...]
    starts: np.ndarray
    index_map: Callable[..., Any] | None
    spec_block_shape: tuple[Any, ...] | None

    @property
    def padded_shape(self) -> tuple[int, ...]:
        return tuple(n + lo + hi for n, (lo, hi) in zip(self.array_shape, self.padding))


def _dims(block_shape, array_shape, what, kernel):
    if block_shape is None:
        return [Blocked(n) for n in array_shape]
    block_shape = tuple(block_shape)
    if len(block_shape) != len(array_shape):
        raise ValueError(
            f"Kernel {kernel!r}: the block shape {block_shape} of {what} has {len(block_shape)} "
            f"dimensions but the operand has shape {array_shape} ({len(array_shape)} "
            "dimensions).")
    dims = []
    for b in block_shape:
        if b is None or isinstance(b, Squeezed):
            dims.append(squeezed)
        elif isinstance(b, (Blocked, Element)):
            dims.append(b)
        elif isinstance(b, (int, np.integer)) and b > 0:
            dims.append(Blocked(int(b)))
        else:
            raise ValueError(f"Kernel {kernel!r}: invalid block dimension {b!r} in the block "
                             f"shape {block_shape} of {what}: use positive ints, None, "
                             "pl.squeezed, pl.Blocked or pl.Element.")
    return dims


def _check_arity(index_map, grid, what, kernel, name) -> None:
    try:
        params = inspect.signature(index_map).parameters.values()
    except (TypeError, ValueError):
        return
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if not len(required) <= len(grid) <= len(positional):
        raise ValueError(
            f"Kernel {kernel!r}: the index map {name} of {what} takes {len(required)} grid "
            f"indices, but the grid {tuple(grid)} has {len(grid)} dimensions.")


def _index_table(index_map, grid, ndim, what, kernel) -> np.ndarray:
    """index_map at every grid point: an int array of shape (*grid, ndim)."""
    name = getattr(index_map, "__name__", repr(index_map))
    _check_arity(index_map, grid, what, kernel, name)
    coords = np.meshgrid(*(np.arange(g, dtype=np.int32) for g in grid), indexing="ij")
    with ensure_compile_time_eval():
        try:
            out = index_map(*coords)
        except Exception:  # a map that only takes scalars: evaluate it point by point
            out = None
        if out is None or not _broadcastable(out, grid):
            points = list(np.ndindex(*grid)) if grid else [()]
            rows = [_as_tuple(index_map(*map(np.int32, p))) for p in points]
            arity = {len(r) for r in rows}
            table = None if arity != {ndim} else np.array(
                [[int(np.asarray(v)) for v in r] for r in rows], np.int64)
            out = rows[0]
        else:
            out = _as_tuple(out)
            table = None if len(out) != ndim else np.stack(
                [np.broadcast_to(np.asarray(v, np.int64), grid) for v in out]
                or [np.zeros(grid, np.int64)], axis=-1)[..., :ndim]
    if table is None:
        raise ValueError(
            f"Kernel {kernel!r}: the index map {name} of {what} must return {ndim} values to "
            f"match the block shape, but it returned {len(_as_tuple(out))}.")
    return table.reshape(*grid, ndim)


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _broadcastable(out, grid) -> bool:
    try:
        for v in _as_tuple(out):
            np.broadcast_to(np.asarray(v), grid)
    except (ValueError, TypeError):
        return False
    return True


def block_mapping(spec: Any, shape: Sequence[int], dtype: Any, *, grid: tuple[int, ...],
                  what: str, kernel: str) -> BlockMapping:
    """Resolves `spec` (a BlockSpec or `no_block_spec`) for an operand of `shape`."""
    shape = tuple(shape)
    if spec is no_block_spec or spec is None:
        spec = BlockSpec()
    if not isinstance(spec, BlockSpec):
        raise TypeError(f"Kernel {kernel!r}: the spec of {what} must be a pl.BlockSpec, got "
                        f"{spec!r}")
    dims = _dims(spec.block_shape, shape, what, kernel)
    block = tuple(1 if isinstance(d, Squeezed) else d.block_size for d in dims)
    index_map = spec.index_map
    if index_map is None:
        index_map = lambda *_: (0,) * len(shape)  # noqa: E731
    table = _index_table(index_map, grid, len(shape), what, kernel)
    element = tuple(isinstance(d, Element) for d in dims)
    padding = []
    starts = np.empty_like(table)
    for k, (d, n, b) in enumerate(zip(dims, shape, block)):
        if isinstance(d, Element):
            lo, hi = d.padding
            starts[..., k] = table[..., k]
        else:
            lo, hi = 0, 0
            starts[..., k] = table[..., k] * b
        if table.size and (starts[..., k].min() < 0):
            raise ValueError(f"Kernel {kernel!r}: the index map of {what} gives a negative "
                             f"block index in dimension {k}.")
        end = int(starts[..., k].max()) + b if table.size else b
        # Blocks that overhang the padded operand read padding (JAX pads ragged edges).
        hi += max(0, end - (n + lo + hi))
        padding.append((lo, hi))
    return BlockMapping(shape, np.dtype(dtype), block,
                        tuple(b for b, d in zip(block, dims) if not isinstance(d, Squeezed)),
                        tuple(isinstance(d, Squeezed) for d in dims), element, tuple(padding),
                        starts, spec.index_map, None if spec.block_shape is None
                        else tuple(spec.block_shape))

