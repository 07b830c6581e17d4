"""Programs over several processes (JAX's `jax.experimental.multihost_utils`): turning
each process's local data into one global array and back (a global array into this
process's block of it), gathering a global array (or every process's local values) to
each host, broadcasting process 0's values, and synchronising the processes.

With one process these reduce to local operations:

>>> import numpy as np
>>> process_allgather(np.arange(2))
array([[0, 1]])
>>> broadcast_one_to_all(np.float32(3.0))
array(3., dtype=float32)
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core.devices import (
    device_put,
    devices,
    local_device_count,
    make_array_from_single_device_arrays,
    process_count,
    process_index,
)
from lamella.core.jit import jit
from lamella.core.sharding import (
    Mesh,
    NamedSharding,
    PartitionSpec,
    Sharding,
    SingleDeviceSharding,
    as_named,
)
from lamella.core.tree_util import tree_broadcast, tree_flatten, tree_map, tree_unflatten

__all__ = ["assert_equal", "broadcast_one_to_all", "global_array_to_host_local_array",
           "host_count", "host_id", "host_ids", "host_local_array_to_global_array",
           "make_array_from_process_local_data", "process_allgather", "process_indices",
           "sync_global_devices"]


# ---------------------------------------------------------------------------
# The processes of the program.


def process_indices(backend: str | None = None) -> list[int]:
    """The numbers of the program's processes: `[0, ..., process_count() - 1]`.

    >>> process_indices()
    [0]
    """
    return list(range(process_count(backend)))


def _renamed(old: str, new: str) -> None:
    # A UserWarning, shown by default, as JAX's.
    warnings.warn(f"{old} is an old name of {new}; call {new} instead", stacklevel=3)


def host_id(backend: str | None = None) -> int:
    """JAX's old name of `process_index` (warns)."""
    _renamed("host_id", "process_index")
    return process_index(backend)


def host_count(backend: str | None = None) -> int:
    """JAX's old name of `process_count` (warns)."""
    _renamed("host_count", "process_count")
    return process_count(backend)


def host_ids(backend: str | None = None) -> list[int]:
    """JAX's old name of `process_indices` (warns)."""
    _renamed("host_ids", "process_indices")
    return process_indices(backend)


# ---------------------------------------------------------------------------
# Process-local data -> global arrays.


def _process_blocks(sharding: Sharding, ndim: int) -> tuple[list[int], list[dict[Any, int]]]:
    """For each dimension: how many blocks the sharding splits it into, and for each
    device the number of the block it holds (found on a probe shape every split divides)."""
    n = len(sharding._device_assignment)
    probe = sharding.devices_indices_map((n,) * ndim)
    counts, blocks = [], []
    for dim in range(ndim):
        sizes = {len(range(*index[dim].indices(n))) for index in probe.values()}
        step = sizes.pop()
        counts.append(n // step)
        blocks.append({d: (index[dim].indices(n)[0]) // step for d, index in probe.items()})
    return counts, blocks


def _local_blocks(blocks: dict[Any, int], here: int) -> tuple[list[int], bool]:
    """This process's blocks of one dimension (sorted), and whether every process holds as
    many blocks, each process's set being equal to or disjoint from every other's."""
    by_process: dict[int, set[int]] = {}
    for d, b in blocks.items():
        by_process.setdefault(d.process_index, set()).add(b)
    sets = list(by_process.values())
    uniform = len({len(s) for s in sets}) == 1 and all(
        a == b or not (a & b) for a in sets for b in sets)
    return sorted(by_process.get(here, set())), uniform


def _from_process_local(sharding: Sharding, data: np.ndarray,
                        global_shape: Sequence[int] | None) -> Any:
    local_shape = data.shape
    if sharding.is_fully_addressable:
        if global_shape is not None and tuple(global_shape) != local_shape:
            raise ValueError(f"make_array_from_process_local_data: the sharding {sharding!r} is "
                             f"this process's alone, so global_shape {tuple(global_shape)} must "
                             f"be None or the local data's shape {local_shape}")
        return device_put(data, sharding)
    here = process_index()
    counts, blocks = _process_blocks(sharding, data.ndim)
    local = [_local_blocks(b, here) for b in blocks]
    if global_shape is None:
        inferred = []
        for dim, (size, count, (mine, uniform)) in enumerate(zip(local_shape, counts, local)):
            if not uniform:
                raise ValueError(
                    "make_array_from_process_local_data: unable to compute the global shape: "
                    f"the sharding {sharding!r} gives processes unequal or overlapping parts of "
                    f"dimension {dim}; pass global_shape")
            if size % len(mine):
                raise ValueError(
                    f"make_array_from_process_local_data: dimension {dim} of the local data "
                    f"{local_shape} has {size} entries for {len(mine)} blocks of this process")
            inferred.append(size // len(mine) * count)
        global_shape = tuple(inferred)
    global_shape = tuple(int(s) for s in global_shape)
    if len(global_shape) != len(local_shape):
        raise ValueError(f"make_array_from_process_local_data: global_shape {global_shape} "
                         f"and the local data's shape {local_shape} have different ranks")
    whole = []  # per dimension: does the local data hold all of it?
    for dim, (size, total, count, (mine, _)) in enumerate(
            zip(local_shape, global_shape, counts, local)):
        part = total // count * len(mine) if total % count == 0 else None
        if size != total and size != part:
            expected = f"{total} (the global size)"
            if part is not None:
                expected += f" or {part} (this process's part)"
            raise ValueError(
                f"make_array_from_process_local_data: the local data of shape {local_shape} "
                f"does not fit the global shape {global_shape} under {sharding!r}: dimension "
                f"{dim} has {size} entries here, expected {expected}")
        whole.append(size == total)
    pieces = []
    for device, index in sharding.addressable_devices_indices_map(global_shape).items():
        local_index = []
        for dim, (s, full) in enumerate(zip(index, whole)):
            if full:
                local_index.append(s)
                continue
            step = global_shape[dim] // counts[dim]
            position = local[dim][0].index(blocks[dim][device])
            local_index.append(slice(position * step, (position + 1) * step))
        pieces.append(device_put(np.asarray(data[tuple(local_index)], order="C"), device))
    return make_array_from_single_device_arrays(global_shape, sharding, pieces)


def make_array_from_process_local_data(sharding: Any, local_data: Any,
                                       global_shape: Any = None) -> Any:
    """A global array laid out as `sharding` says, made from the data this process holds.

    Each dimension of `local_data` is either the whole global dimension (every
    process passes the same values there) or this process's part of it: the
    blocks its devices hold, in order. `global_shape` (default: inferred, each
    process holding only its own blocks) fixes which. `local_data` may be a
    pytree, with one sharding for all leaves or a matching tree of them.

    >>> import lamella.core as lc
    >>> from lamella.core.sharding import P, make_mesh
    >>> s = NamedSharding(make_mesh((1,), ("x",)), P("x"))
    >>> make_array_from_process_local_data(s, np.arange(4.0)).shape
    (4,)
    """
    leaves, tree = tree_flatten(local_data)
    if isinstance(sharding, (Sharding, PartitionSpec)) or not isinstance(
            sharding, (list, tuple, dict)):
        shardings = [sharding] * len(leaves)
    else:
        shardings, _ = tree_flatten(sharding, is_leaf=lambda s: isinstance(
            s, (Sharding, PartitionSpec)))
    if global_shape is None or (isinstance(global_shape, tuple) and all(
            isinstance(n, (int, np.integer)) for n in global_shape)):
        shapes = [global_shape] * len(leaves)
    else:
        shapes, _ = tree_flatten(global_shape, is_leaf=lambda s: s is None or (
            isinstance(s, tuple) and all(isinstance(n, (int, np.integer)) for n in s)))
    if not len(shardings) == len(shapes) == len(leaves):
        raise ValueError(f"make_array_from_process_local_data: {len(leaves)} arrays, "
                         f"{len(shardings)} shardings and {len(shapes)} global shapes")
    out = []
    for data, s, shape in zip(leaves, shardings, shapes):
        if isinstance(s, PartitionSpec):
            s = as_named(s, "make_array_from_process_local_data")
        if not isinstance(s, Sharding):  # a device
            s = SingleDeviceSharding(s)
        if process_count() == 1 and shape is not None and tuple(shape) != np.shape(data):
            raise ValueError(
                "make_array_from_process_local_data: on a single process, global_shape "
                f"should be None or equal to local_data.shape; got global_shape={tuple(shape)} "
                f"and local_data.shape={np.shape(data)}")
        out.append(_from_process_local(s, np.asarray(data), shape))
    return tree_unflatten(tree, out)


def _per_leaf_specs(pspecs: Any, tree: Any, what: str) -> list[PartitionSpec]:
    """One PartitionSpec per leaf of `tree`: `pspecs` is one spec or a prefix of `tree`."""
    def is_spec(s: Any) -> bool:
        return s is None or isinstance(s, PartitionSpec)
    specs = tree_flatten(tree_broadcast(pspecs, tree, is_leaf=is_spec), is_leaf=is_spec)[0]
    if any(s is None for s in specs):
        raise ValueError(f"{what}: None is not a valid input to the pspecs argument; use "
                         "PartitionSpec() for a value every device holds whole")
    return specs


def _scaled(shape: Sequence[int], spec: PartitionSpec, frm: Mesh, to: Mesh) -> tuple[int, ...]:
    """`shape` split by `spec` over mesh `frm`, as the same split over mesh `to` sees it."""
    out = []
    for size, names in zip(shape, spec._normalized(len(shape))):
        parts_from = math.prod(frm.shape[n] for n in names)
        parts_to = math.prod(to.shape[n] for n in names)
        out.append(size * parts_to // parts_from)
    return tuple(out)


def host_local_array_to_global_array(local_inputs: Any, global_mesh: Mesh,
                                     pspecs: Any) -> Any:
    """Each leaf of `local_inputs` (this process's block of the value, laid out as `pspecs`
    says over this process's part of `global_mesh`) as one global array over
    `global_mesh`. Global arrays pass through.

    >>> from lamella.core.sharding import make_mesh
    >>> mesh = make_mesh((1,), ("x",))
    >>> host_local_array_to_global_array(np.arange(4.0), mesh, PartitionSpec("x")).shape
    (4,)
    """
    leaves, tree = tree_flatten(local_inputs)
    specs = _per_leaf_specs(pspecs, local_inputs, "host_local_array_to_global_array")
    local_mesh = global_mesh.local_mesh
    out = []
    for x, spec in zip(leaves, specs):
        if getattr(x, "is_fully_addressable", True) is False:
            out.append(x)
            continue
        data = np.asarray(x)
        parts = NamedSharding(local_mesh, spec).devices_indices_map(data.shape)
        pieces = [device_put(np.asarray(data[index], order="C"), device)
                  for device, index in parts.items()]
        out.append(make_array_from_single_device_arrays(
            _scaled(data.shape, spec, local_mesh, global_mesh),
            NamedSharding(global_mesh, spec), pieces))
    return tree_unflatten(tree, out)


def global_array_to_host_local_array(global_inputs: Any, global_mesh: Mesh,
                                     pspecs: Any) -> Any:
    """Each global array leaf of `global_inputs` (laid out as `pspecs` says over
    `global_mesh`) as this process's block of it, an array over this process's part of
    the mesh. Values already local to this process (host data included) pass through.

    >>> from lamella.core.sharding import make_mesh
    >>> mesh = make_mesh((1,), ("x",))
    >>> x = host_local_array_to_global_array(np.arange(4.0), mesh, PartitionSpec("x"))
    >>> global_array_to_host_local_array(x, mesh, PartitionSpec("x")).shape
    (4,)
    """
    leaves, tree = tree_flatten(global_inputs)
    specs = _per_leaf_specs(pspecs, global_inputs, "global_array_to_host_local_array")
    local_mesh = global_mesh.local_mesh
    out = []
    for x, spec in zip(leaves, specs):
        if getattr(x, "is_fully_addressable", True) is not False:
            out.append(x)
            continue
        whole = NamedSharding(global_mesh, spec)
        if x.sharding != whole:
            x = device_put(x, whole)
        out.append(make_array_from_single_device_arrays(
            _scaled(x.shape, spec, global_mesh, local_mesh), NamedSharding(local_mesh, spec),
            [shard.data for shard in x.addressable_shards]))
    return tree_unflatten(tree, out)


# ---------------------------------------------------------------------------
# Global arrays and every process's values, back on each host.


def _process_mesh() -> Mesh:
    """All devices in a (processes, local_devices) grid: row p holds process p's devices."""
    count, per_process = process_count(), local_device_count()
    grid = np.empty((count, per_process), dtype=object)
    for p in range(count):
        owned = [d for d in devices() if d.process_index == p]
        if len(owned) != per_process:
            raise ValueError(f"multihost_utils needs as many devices in every process: process "
                             f"{p} has {len(owned)}, this one {per_process}")
        grid[p, :] = owned
    return Mesh(grid, ("processes", "local_devices"))


def _identity(x: Any) -> Any:
    return x


def _replicated(x: Any) -> np.ndarray:
    """A global array's whole value, on this host: XLA gathers it onto every device."""
    sharding = x.sharding
    mesh = sharding.mesh if isinstance(sharding, NamedSharding) else Mesh(
        np.array(sharding._device_assignment, dtype=object), ("devices",))
    out = jit(_identity, out_shardings=NamedSharding(mesh, PartitionSpec()))(x)
    return np.asarray(out.addressable_data(0))


def _stacked(local: np.ndarray, mesh: Mesh) -> Any:
    """The global array whose row p is process p's `local` value."""
    pieces = [device_put(local[None], d) for d in mesh.local_devices]
    shape = (mesh.shape["processes"],) + local.shape
    return make_array_from_single_device_arrays(
        shape, NamedSharding(mesh, PartitionSpec("processes")), pieces)


def _gathered(x: Any, tiled: bool) -> np.ndarray:
    if hasattr(x, "is_fully_addressable") and not x.is_fully_addressable:
        if not tiled:
            raise ValueError("process_allgather: a global array (spanning other processes' "
                             "devices) is gathered whole, which needs tiled=True")
        return _replicated(x)
    local = np.asarray(x)
    if process_count() == 1:
        return local if tiled and local.ndim else local[None]
    out = _replicated(_stacked(local, _process_mesh()))
    if tiled and local.ndim:
        return out.reshape((out.shape[0] * out.shape[1],) + out.shape[2:])
    return out


def process_allgather(in_tree: Any, tiled: bool = False) -> Any:
    """Every process's values of each leaf of `in_tree`, as NumPy arrays on every host.

    A leaf local to this process (NumPy data or an array on its own devices) is
    stacked with the other processes' on a new leading axis (`tiled=False`) or
    concatenated along axis 0 (`tiled=True`; scalars are always stacked); every
    process must pass the same shapes. A global array (over several processes'
    devices) comes back whole, which needs `tiled=True`.

    >>> process_allgather(np.arange(3), tiled=True)
    array([0, 1, 2])
    """
    return tree_map(lambda x: _gathered(x, tiled), in_tree)


def broadcast_one_to_all(in_tree: Any, is_source: bool | None = None) -> Any:
    """Process 0's values of each leaf of `in_tree` (or the sum of those of the processes
    passing `is_source=True`), as NumPy arrays on every host; every process passes leaves
    of the same shapes.

    >>> broadcast_one_to_all({"step": np.int32(7)})
    {'step': array(7, dtype=int32)}
    """
    if process_count() == 1:
        return tree_map(np.asarray, in_tree)
    if is_source is None:
        is_source = process_index() == 0
    mesh = _process_mesh()

    def one(x: Any) -> np.ndarray:
        local = np.asarray(x)
        rows = _replicated(_stacked(local if is_source else np.zeros_like(local), mesh))
        return np.asarray(np.sum(rows, axis=0, dtype=rows.dtype))
    return tree_map(one, in_tree)


def assert_equal(in_tree: Any, fail_message: str = "") -> None:
    """Raises AssertionError unless every process passed the same values in `in_tree`.

    >>> assert_equal([np.arange(2), 1.5])
    """
    # A global array is compared by this process's first part.
    ours = [x.addressable_data(0) if getattr(x, "is_fully_addressable", True) is False else x
            for x in tree_flatten(in_tree)[0]]
    for mine in ours:
        rows = _gathered(mine, tiled=False)
        if not all(np.array_equal(np.asarray(mine), row) for row in rows):
            raise AssertionError(f"{fail_message}. Expected every process to pass {mine!r}; "
                                 f"the processes passed {list(rows)!r}")


def sync_global_devices(name: str) -> None:
    """A barrier: returns once every process has called it, each with the same `name`
    (an AssertionError names a mismatch). It goes through the devices, so work queued
    on them before it has run everywhere.

    >>> sync_global_devices("start")
    """
    digest = np.uint32(zlib.crc32(name.encode()))
    assert_equal(digest, f"sync_global_devices name mismatch ('{name}')")

