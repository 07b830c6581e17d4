"""`pmap`: a function mapped over an axis of its arguments, one device per slice.

As in JAX 0.10, pmap is a `shard_map` over a one-axis mesh of the devices,
named `axis_name`: each mapped argument has its mapped axis moved to the
front and split over the devices, each device runs `fun` on its slice (the
axis squeezed out), and the results are stacked back along `out_axes`. The
whole call is one `jit`, so it differentiates and caches like one.

In a program of several processes (`lamella.core.distributed`) the mesh holds every
process's devices, as in JAX: each process passes and gets back its own slices
(the mapped axis as long as its devices), and collectives span all processes.

>>> import numpy as np, lamella.lax as lax
>>> pmap(lambda x: lax.sub(x, lax.pmean(x, "i")), "i")(np.ones((1, 3), np.float32))
Array([[0., 0., 0.]], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from lamella.core import jit
from lamella.core.devices import (
    device_put,
    local_devices,
    make_array_from_single_device_arrays,
    process_count,
    process_index,
)
from lamella.core.devices import devices as all_devices
from lamella.core.distributed import is_initialized
from lamella.core.multihost_utils import make_array_from_process_local_data
from lamella.core.sharding import Mesh, NamedSharding, PartitionSpec
from lamella.core.tree_util import tree_flatten, tree_unflatten
from lamella.lax.shapes import expand_dims, reshape, slice_in_dim, transpose
from lamella.lax.shard_map import shard_map

__all__ = ["pmap"]


def _move(x: Any, src: int, dst: int) -> Any:
    ndim = np.ndim(x)
    src, dst = src % ndim, dst % ndim
    if src == dst:
        return x
    order = [i for i in range(ndim) if i != src]
    order.insert(dst, src)
    return transpose(x, tuple(order))


def _leaf_axes(in_axes: Any, args: tuple, what: str) -> list:
    """One axis (int or None) per leaf of `args`; `in_axes` is an int/None or a prefix."""
    if in_axes is None or isinstance(in_axes, int):
        return [in_axes] * len(tree_flatten(args)[0])
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if not isinstance(in_axes, tuple) or len(in_axes) != len(args):
        raise ValueError(f"pmap {what} must be an int, None, or a tuple with one entry per "
                         f"positional argument ({len(args)}), got {in_axes!r}")
    out = []
    for axis, arg in zip(in_axes, args):
        leaves = tree_flatten(arg)[0]
        if axis is None or isinstance(axis, int):
            out += [axis] * len(leaves)
        else:
            sub = tree_flatten(axis, is_leaf=lambda a: a is None)[0]
            if len(sub) != len(leaves):
                raise ValueError(f"pmap {what}: {axis!r} does not match the argument {arg!r}")
            out += sub
    return out


def pmap(fun: Callable, axis_name: Any = None, *, in_axes: Any = 0, out_axes: Any = 0,
         static_broadcasted_argnums: int | Iterable[int] = (),
         devices: Sequence[Any] | None = None, backend: str | None = None,
         axis_size: int | None = None, donate_argnums: int | Iterable[int] = ()) -> Callable:
    """`fun` run on one device per slice of its arguments' `in_axes`, results stacked on
    `out_axes`; collectives in `fun` name `axis_name`.

    Args:
      fun: the function for one slice.
      axis_name: the name collectives use for the mapped axis.
      in_axes: the mapped axis of each argument (int, None for broadcast, or a
        tuple with one entry per positional argument).
      out_axes: where the mapped axis goes in each result (int or None for a
        result that is the same on every device).
      static_broadcasted_argnums: positional arguments passed as Python values.
      devices: the devices to use (default: the first devices of this process).
      backend: the platform of the default devices.
      axis_size: accepted for JAX's signature (the size comes from the arguments).
      donate_argnums: arguments whose buffers may be reused for results.

    >>> import numpy as np, lamella.lax as lax
    >>> pmap(lambda x: lax.add(lax.axis_index("i"), x), "i")(np.zeros(1, np.int32))
    Array([0], dtype=int32)
    """
    if not callable(fun):
        raise TypeError(f"pmap expects a callable, got {fun!r}")
    statics = (static_broadcasted_argnums,) if isinstance(static_broadcasted_argnums, int) \
        else tuple(static_broadcasted_argnums)
    donated = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
    name = axis_name if axis_name is not None else "_pmap_axis"
    compiled: dict = {}

    def plan(args: tuple) -> tuple:
        """What a call maps: its dynamic arguments, static values, their positions,
        each leaf's mapped axis and the mapped size (checked)."""
        dynamic = tuple(a for i, a in enumerate(args) if i not in statics)
        static_values = tuple((i, args[i]) for i in statics if i < len(args))
        positions = [i for i in range(len(args)) if i not in statics]
        axes_in = in_axes
        if isinstance(in_axes, (tuple, list)):
            axes_in = tuple(in_axes[i] for i in positions)
        leaf_axes = _leaf_axes(axes_in, dynamic, "in_axes")
        leaves = tree_flatten(dynamic)[0]
        sizes = {np.shape(x)[a] for x, a in zip(leaves, leaf_axes) if a is not None}
        if len(sizes) != 1:
            raise ValueError(f"pmap got inconsistent sizes for the mapped axes: {sorted(sizes)}"
                             if sizes else "pmap needs at least one mapped argument "
                             "(in_axes all None)")
        return dynamic, static_values, positions, leaf_axes, sizes.pop()

    def on_this_process(*args):
        # Traced once per signature (shapes and static values), so the device count
        # is checked then and every later call runs from jit's C++ dispatcher.
        dynamic, static_values, positions, leaf_axes, size = plan(args)
        available = list(devices) if devices is not None else local_devices(backend=backend)
        if size > len(available):
            raise ValueError(f"compiling computation that requires {size} logical devices, "
                             f"but only {len(available)} XLA devices are available "
                             f"(num_replicas={size})")
        return _whole(fun, name, static_values, positions, leaf_axes, available[:size],
                      out_axes)(*dynamic)

    local_call = jit(on_this_process, static_argnums=statics, donate_argnums=donated)

    def mapped(*args, **kwargs):
        if kwargs:
            raise TypeError("pmap: pass mapped values as positional arguments")
        if devices is not None or not _several_processes(backend):
            return local_call(*args)
        dynamic, static_values, positions, leaf_axes, size = plan(args)
        key = (static_values, tuple(leaf_axes), size)
        run = compiled.get(key)
        if run is None:
            spread = _every_process(size, backend)
            run = compiled[key] = _over_processes(
                jit(_whole(fun, name, static_values, positions, leaf_axes, spread, out_axes)),
                spread, name, leaf_axes, out_axes)
        return run(*dynamic)

    mapped.__name__ = getattr(fun, "__name__", "pmap")
    mapped.__wrapped__ = fun
    return mapped


def _several_processes(backend: str | None) -> bool:
    # Asked only once distributed.initialize ran: before, the backend may not be
    # started (and must not be, for initialize to work).
    return is_initialized() and process_count(backend) > 1


def _whole(fun, name, static_values, positions, leaf_axes, devices, out_axes):
    """The mapped computation over `devices` as one function of the dynamic arguments
    (shard_map over a one-axis mesh), for jit to trace."""
    grid = np.empty(len(devices), dtype=object)
    grid[:] = devices
    mesh = Mesh(grid, (name,))
    in_specs = tuple(PartitionSpec(name) if a is not None else PartitionSpec()
                     for a in leaf_axes)
    out_tree_box: list = []

    def per_device(*blocks):
        vals = [reshape(b, np.shape(b)[1:]) if a is not None else b
                for b, a in zip(blocks, leaf_axes)]
        dyn = tree_unflatten(in_tree_box[0], vals)
        full = {i: v for i, v in static_values}
        for i, v in zip(positions, dyn):
            full[i] = v
        outs = fun(*[full[i] for i in range(len(full))])
        flat, tree = tree_flatten(outs)
        out_tree_box.append(tree)
        return [expand_dims(o, (0,)) for o in flat]

    in_tree_box: list = []

    def whole(*dynamic):
        flat, tree = tree_flatten(dynamic)
        in_tree_box[:] = [tree]
        moved = [_move(x, a, 0) if a is not None else x for x, a in zip(flat, leaf_axes)]
        outs = shard_map(per_device, mesh=mesh, in_specs=in_specs,
                         out_specs=PartitionSpec(name), check_vma=False)(*moved)
        tree_out = out_tree_box[-1]
        axes = _leaf_axes_out(out_axes, tree_out, len(outs))
        return tree_unflatten(tree_out, [
            reshape(slice_in_dim(o, 0, 1, axis=0), np.shape(o)[1:]) if a is None
            else _move(o, 0, a) for o, a in zip(outs, axes)])

    return whole


def _every_process(size: int, backend: str | None) -> list:
    """The first `size` devices of each process, process by process."""
    out = []
    for p in range(process_count(backend)):
        owned = [d for d in all_devices(backend) if d.process_index == p][:size]
        if len(owned) < size:
            raise ValueError(f"pmap over {size} devices per process: process {p} has only "
                             f"{len(owned)}")
        out += owned
    return out


def _mapped_spec(axis: int | None, ndim: int, name: str) -> PartitionSpec:
    if axis is None:
        return PartitionSpec()
    return PartitionSpec(*[None] * (axis % ndim), name)


def _over_processes(run: Callable, spread: list, name: str, leaf_axes: list,
                    out_axes: Any) -> Callable:
    """`run` (compiled over every process's devices) taking and giving this process's
    slices: mapped arguments become global arrays of all processes' slices, and each
    result is cut back to this process's devices (broadcast results: one copy)."""
    grid = np.empty(len(spread), dtype=object)
    grid[:] = spread
    mesh = Mesh(grid, (name,))
    here = [d for d in spread if d.process_index == process_index()]
    local_grid = np.empty(len(here), dtype=object)
    local_grid[:] = here
    local_mesh = Mesh(local_grid, (name,))

    def call(*dynamic: Any) -> Any:
        flat, tree = tree_flatten(dynamic)
        whole = [make_array_from_process_local_data(
            NamedSharding(mesh, _mapped_spec(a, np.ndim(x), name)), np.asarray(x))
            for x, a in zip(flat, leaf_axes)]
        outs, out_tree = tree_flatten(run(*tree_unflatten(tree, whole)))
        axes = _leaf_axes_out(out_axes, out_tree, len(outs))
        mine = []
        for o, a in zip(outs, axes):
            if a is None:
                mine.append(o.addressable_data(0))
                continue
            spec = _mapped_spec(a, o.ndim, name)
            o = device_put(o, NamedSharding(mesh, spec))  # a no-op unless XLA chose otherwise
            shape = list(o.shape)
            shape[a % o.ndim] = len(here)
            mine.append(make_array_from_single_device_arrays(
                tuple(shape), NamedSharding(local_mesh, spec),
                [s.data for s in o.addressable_shards]))
        return tree_unflatten(out_tree, mine)
    return call


def _leaf_axes_out(out_axes: Any, tree: Any, count: int) -> list:
    if out_axes is None or isinstance(out_axes, int):
        return [out_axes] * count
    leaves = tree_flatten(out_axes, is_leaf=lambda a: a is None)[0]
    if len(leaves) != count:
        raise ValueError(f"pmap out_axes {out_axes!r} does not match the {count} results")
    return leaves
