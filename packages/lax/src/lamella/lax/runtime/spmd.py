"""Arrays spread over several devices, and SPMD programs compiled for many devices.

A multi-device array is jaxlib's `ArrayImpl` over one buffer per device, with
a `MeshSharding`: jaxlib's `GSPMDSharding` (the device list plus XLA's tiling,
an `HloSharding`) that also remembers the user's sharding (`.named`, a
lamella.core `NamedSharding`) so `Array.sharding` gives back what was asked for.

Programs are compiled once for all the devices with XLA's SPMD partitioner
(`num_partitions` = number of devices); partition i runs on device i of the
list, and HloSharding device numbers are those positions. jaxlib kills the
process when a buffer sits on a device other than the one its partition runs
on, so every argument is checked (and placed) in Python first.

In a program of several processes (`lamella.core.distributed`) a sharding may
span other processes' devices: an array over it holds only this process's
(addressable) parts, every process runs the same program on its own parts,
and a value no local part covers can't be read here.

>>> import numpy as np
>>> from lamella.lax.runtime.backends import devices
>>> one = mesh_sharding(tuple(devices()[:1]), "{replicated}")
>>> x = put_sharded(np.arange(4, dtype=np.float32), one)
>>> gather(x)
array([0., 1., 2., 3.], dtype=float32)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from jaxlib import _jax
from jaxlib import xla_client as xc

from lamella.lax.runtime import arrays as _arrays
from lamella.lax.runtime.arrays import (
    Array,
    DeletedArrayError,
    _host_array,
    deleted_message,
    device_put,
    install_array_methods,
)
from lamella.lax.runtime.backends import (
    Device,
    XlaRuntimeError,
    check_fits,
    describe,
    make_aval,
    sharding_for,
)
from lamella.lax.runtime.executables import run_to_completion
from lamella.lax.runtime.fast_path import FastPathData, register_placement


class MeshSharding(_jax.GSPMDSharding):
    """jaxlib's GSPMDSharding, carrying the user-facing sharding in `named` (or None)."""

    named: Any = None

    def __repr__(self) -> str:
        return f"GSPMDSharding({self._hlo_sharding}, devices={list(self._devices)})"


# What jaxlib's C++ side calls on a sharding (as for single-device shardings).
for _name, _value in {
    "_to_xla_hlo_sharding": lambda self, num_dimensions: self._hlo_sharding,
    "_device_assignment": property(lambda self: tuple(self._devices)),
    "memory_kind": property(lambda self: self._memory_kind),
    "num_devices": property(lambda self: len(self._devices)),
    "device_set": property(lambda self: set(self._devices)),
    "is_fully_replicated": property(lambda self: self._hlo_sharding.is_replicated()),
    "is_fully_addressable": property(lambda self: self._internal_device_list.is_fully_addressable),
}.items():
    setattr(_jax.GSPMDSharding, _name, _value)


def _local_positions(sharding: Any) -> list[int]:
    """The positions (in the sharding's device list) of this process's devices."""
    devices = sharding._internal_device_list
    if devices.is_fully_addressable:
        return list(range(len(devices)))
    local = set(devices.addressable_device_list)
    return [i for i, d in enumerate(devices) if d in local]


def _index_key(index: tuple[slice, ...]) -> tuple:
    return tuple((s.start, s.stop) for s in index)


def _not_addressable(what: str) -> RuntimeError:
    return RuntimeError(
        f"{what} for an Array that spans non-addressable (non process local) devices is not "
        "possible: this process holds only some of its parts. Use "
        "lamella.core.multihost_utils.process_allgather to gather the global array, or "
        ".addressable_shards to inspect this process's parts.")

_shardings: dict[tuple, MeshSharding] = {}


def mesh_sharding(devices: tuple[Device, ...], hlo_text: str, named: Any = None
                  ) -> MeshSharding:
    """The sharding over `devices` tiled as `hlo_text` says (one object per pair and
    user sharding, so equal layouts share jaxlib's caches)."""
    # The spec's own entries too: equal NamedShardings may print differently (P('x') and
    # P('x', None)), and an array reports the one it was made with.
    key = (devices, hlo_text, named, tuple(getattr(named, "spec", ())))
    sharding = _shardings.get(key)
    if sharding is None:
        sharding = MeshSharding(xc.DeviceList(devices), xc.HloSharding.from_string(hlo_text))
        sharding.named = named
        _shardings[key] = sharding
    return sharding


def with_hlo(devices: tuple[Device, ...], hlo: Any, named: Any = None) -> MeshSharding:
    """`mesh_sharding` from an HloSharding object (what a compiled program reports)."""
    return mesh_sharding(devices, str(hlo), named)


def shard_indices(hlo: Any, shape: Sequence[int], num_devices: int) -> list[tuple[slice, ...]]:
    """For each device position, the part of an array of `shape` it holds under `hlo`."""
    full = tuple(slice(None) for _ in shape)
    if hlo.is_replicated() or not hlo.is_tiled():
        return [full] * num_devices
    dims = list(hlo.tile_assignment_dimensions())
    tiled = dims[:len(shape)]
    out: list[tuple[slice, ...]] = [full] * num_devices
    for flat, position in enumerate(hlo.tile_assignment_devices()):
        coords = [int(c) for c in np.unravel_index(flat, dims)[:len(shape)]]
        out[position] = tuple(
            slice(None) if t == 1 else slice(c * (n // t), (c + 1) * (n // t))
            for c, t, n in zip(coords, tiled, shape))
    return out


def replica_ids(hlo: Any, num_devices: int) -> list[int]:
    """For each device position, which copy of its part it holds (0 for the first)."""
    if hlo.is_replicated() or not hlo.is_tiled():
        return list(range(num_devices))
    if not hlo.replicate_on_last_tile_dim():
        return [0] * num_devices
    dims = list(hlo.tile_assignment_dimensions())
    out = [0] * num_devices
    for flat, position in enumerate(hlo.tile_assignment_devices()):
        out[position] = int(np.unravel_index(flat, dims)[-1])
    return out


def put_sharded(x: Any, sharding: MeshSharding, weak_type: bool = False) -> Array:
    """Host data (or an Array) laid out over `sharding`'s devices (a copy).

    The shape must split evenly; each device gets its part. Over a sharding that spans
    other processes, only this process's devices get theirs (every process passes the
    same value, as in JAX).
    """
    if isinstance(x, Array):
        if x.is_deleted():
            raise DeletedArrayError(deleted_message(x))
        if not x._sharding.is_fully_addressable:  # its value isn't all here: devices move it
            if not isinstance(x._sharding, _jax.GSPMDSharding) or (
                    tuple(x._sharding._devices) != tuple(sharding._devices)):
                raise ValueError(
                    "an Array spanning other processes' devices can only be laid out anew over "
                    f"the same devices: it is on {list(x._sharding._internal_device_list)}, "
                    f"the new layout on {list(sharding._devices)}")
            return reshard(x, sharding)
        weak_type = x.aval.weak_type
        x = gather(x)
    host, weak = _host_array(x, weak_type)
    devices = tuple(sharding._devices)
    indices = shard_indices(sharding._hlo_sharding, host.shape, len(devices))
    check_fits(host[indices[0]].shape, host.dtype, devices[0], "device_put")
    aval = make_aval(host.shape, host.dtype, weak)
    # Each part is copied onto its device now (one device_put each): jaxlib's multi-device
    # put would alias the caller's NumPy memory where it is aligned, so a later write
    # to it would show through, and such a buffer could never be donated.
    parts = [device_put(np.asarray(host[indices[i]], order="C"), devices[i])
             for i in _local_positions(sharding)]
    return Array(aval, sharding, parts, True, _skip_checks=True)


_reshard_programs: dict[tuple, Any] = {}


def reshard(x: Array, sharding: MeshSharding) -> Array:
    """`x` (an Array over `sharding`'s devices) laid out as `sharding` says, by a program
    XLA compiles for the move: every process runs it on its own parts, so this works for
    arrays spanning other processes' devices."""
    from lamella.lax import mlir_context
    devices = tuple(sharding._devices)
    aval = x.aval
    source = str(x._sharding._hlo_sharding)
    key = (aval.shape, aval.dtype, aval.weak_type, devices, source, str(sharding._hlo_sharding),
           sharding.named)
    program = _reshard_programs.get(key)
    if program is None:
        with mlir_context.make_context():
            t = str(mlir_context.tensor_type(aval.shape, aval.dtype))
        module = mlir_context.parse_module(
            f'func.func public @main(%x: {t} {{mhlo.sharding = "{source}"}}) -> '
            f'({t} {{mhlo.sharding = "{sharding._hlo_sharding}"}}) {{ return %x : {t} }}')
        program = SpmdExecutable(module, devices, [x._sharding], "reshard",
                                 [(aval.shape, aval.dtype)], [aval],
                                 lambda hlo, ndim: sharding.named)
        if len(_reshard_programs) >= 256:
            _reshard_programs.pop(next(iter(_reshard_programs)))
        _reshard_programs[key] = program
    return program(x)[0]


def gather(x: Array) -> np.ndarray:
    """The whole value of a (possibly multi-device) Array, on the host."""
    if x.is_deleted():
        raise DeletedArrayError(deleted_message(x))
    arrays = x._arrays
    sharding = x._sharding
    if len(arrays) == 1 and len(sharding._internal_device_list) == 1:
        return arrays[0]._single_device_array_to_np_array_did_copy()[0]
    shape = x.aval.shape
    if sharding.is_fully_replicated and arrays:
        return np.asarray(arrays[0])
    indices = shard_indices(sharding._hlo_sharding, shape, len(sharding._internal_device_list))
    local = [indices[i] for i in _local_positions(sharding)]
    if len(local) < len(indices) and (
            {_index_key(i) for i in local} != {_index_key(i) for i in indices}):
        raise _not_addressable("Fetching the value")
    out = np.empty(shape, x.aval.dtype)
    for array, index in zip(arrays, local):
        out[index] = np.asarray(array)
    out.flags.writeable = False
    return out


class Shard(NamedTuple):
    """One device's part of an Array: where it lives, which part, which copy, the data."""

    device: Device
    index: tuple[slice, ...]
    replica_id: int
    data: Array


def _shards(x: Array, everywhere: bool) -> list[Shard]:
    if x.is_deleted():
        raise DeletedArrayError(deleted_message(x))
    sharding = x._sharding
    devices = sharding._internal_device_list
    if isinstance(sharding, _jax.GSPMDSharding):
        hlo = sharding._hlo_sharding
        indices = shard_indices(hlo, x.aval.shape, len(devices))
        replicas = replica_ids(hlo, len(devices))
    else:
        indices = [tuple(slice(None) for _ in x.aval.shape)]
        replicas = [0]
    data: list[Any] = [None] * len(devices)
    for position, a in zip(_local_positions(sharding), x._arrays):
        shape = tuple(len(range(*s.indices(n))) for s, n in zip(indices[position],
                                                                x.aval.shape))
        aval = make_aval(shape, x.aval.dtype, x.aval.weak_type)  # jaxlib's pieces have none
        device = a._sharding._internal_device_list[0]
        data[position] = Array(aval, sharding_for(device), [a], True, _skip_checks=True)
    return [Shard(d, index, replica, part)
            for d, index, replica, part in zip(devices, indices, replicas, data)
            if everywhere or part is not None]


def addressable_shards(x: Array) -> list[Shard]:
    """Each of this process's devices' part of `x`, in the order of its sharding's devices."""
    return _shards(x, everywhere=False)


def global_shards(x: Array) -> list[Shard]:
    """Every device's part of `x`; another process's parts have `data` None."""
    return _shards(x, everywhere=True)


def assemble(shape: Sequence[int], sharding: MeshSharding, arrays: Sequence[Array]) -> Array:
    """One Array over `sharding` from one single-device Array per device of this process
    (every device, unless the sharding spans other processes' devices); no copy."""
    positions = _local_positions(sharding)
    devices = tuple(sharding._devices[i] for i in positions)
    if len(arrays) != len(devices):
        where = "" if len(positions) == len(sharding._devices) else " of this process"
        raise ValueError(f"make_array_from_single_device_arrays: {len(arrays)} arrays for a "
                         f"sharding over {len(devices)} devices{where}")
    by_device = {}
    for a in arrays:
        if not isinstance(a, Array) or len(a._arrays) != 1:
            raise TypeError("make_array_from_single_device_arrays takes single-device Arrays, "
                            f"got {type(a).__name__}")
        by_device[a._sharding._internal_device_list[0]] = a
    if set(by_device) != set(devices):
        raise ValueError("make_array_from_single_device_arrays: the arrays are on "
                         f"{sorted(map(str, by_device))}, the sharding's devices are "
                         f"{sorted(map(str, devices))}")
    every = shard_indices(sharding._hlo_sharding, shape, len(sharding._devices))
    indices = [every[i] for i in positions]
    ordered = [by_device[d] for d in devices]
    dtype = ordered[0].aval.dtype
    for d, a, index in zip(devices, ordered, indices):
        expected = tuple(len(range(*s.indices(n))) for s, n in zip(index, shape))
        if a.aval.shape != expected or a.aval.dtype != dtype:
            raise ValueError(f"make_array_from_single_device_arrays: the array on {d} is "
                             f"{describe(a.aval.shape, a.aval.dtype)}, the sharding needs "
                             f"{describe(expected, dtype)} there")
    aval = make_aval(tuple(shape), dtype, False)
    return Array(aval, sharding, ordered, True, _skip_checks=True)


def _propagated_results(module: Any) -> list[bool]:
    """For each result of `module`'s main: whether XLA chooses its layout (no
    `mhlo.sharding` of its own)."""
    from lamella.lax import mlir_context
    main = mlir_context.main_function(module)
    count = len(main.type.results)
    if "res_attrs" not in main.attributes or count == 0:
        return [True]
    return ["mhlo.sharding" not in {a.name for a in attrs} for attrs in main.res_attrs]


class SpmdExecutable:
    """A program compiled once for several devices by XLA's SPMD partitioner.

    Arguments are placed as `in_shardings` says (host values and uncommitted
    Arrays are copied there; a committed Array laid out otherwise is copied too);
    outputs come out laid out as XLA chose (`out_shardings`).
    """

    def __init__(self, module: Any, devices: tuple[Device, ...],
                 in_shardings: Sequence[MeshSharding], name: str,
                 in_specs: Sequence[tuple[tuple[int, ...], np.dtype]], out_avals: Sequence[Any],
                 out_named: Any, donated_args: Sequence[int] = (),
                 compiler_options: dict[str, Any] | None = None,
                 host_callbacks: Sequence[Any] = ()):
        from lamella.lax import mlir_context
        from lamella.lax.runtime.executables import _alias_donated_args
        _, out_specs = mlir_context.main_signature(module)
        self.donated_args = _alias_donated_args(module, donated_args, list(in_specs), out_specs)
        options = xc.CompileOptions()
        options.num_replicas = 1
        options.num_partitions = len(devices)
        options.executable_build_options.use_spmd_partitioning = True
        # Modules with Shardy meshes (JAX's exports) need XLA's Shardy partitioner.
        options.executable_build_options.use_shardy_partitioner = any(
            op.name == "sdy.mesh" for op in module.body.operations)
        # Unannotated outputs keep the layout propagation gives them (not replicated);
        # annotated ones (jit's out_shardings) keep their annotation.
        options.executable_build_options.allow_spmd_sharding_propagation_to_output = \
            _propagated_results(module)
        if compiler_options:
            options.env_option_overrides = [
                (str(k), v if isinstance(v, (bool, int, float)) else str(v))
                for k, v in compiler_options.items()]
        options.device_assignment = xc.DeviceAssignment.create(
            np.array([[d.id for d in devices]], np.int32))
        self.xla_executable = devices[0].client.compile_and_load(
            module, executable_devices=xc.DeviceList(devices), compile_options=options,
            host_callbacks=list(host_callbacks))  # the callables the program calls back
        self.calls_host = bool(host_callbacks)
        self.devices = devices
        self.name = name
        self.in_shardings = list(in_shardings)
        self.in_specs = list(in_specs)
        self.out_avals = list(out_avals)
        reported = self.xla_executable.get_output_shardings()  # None on one device
        hlos = [xc.HloSharding.from_proto(p) for p in reported] if reported is not None \
            else [xc.HloSharding.replicate()] * len(self.out_avals)
        self.out_shardings = [with_hlo(devices, h, out_named(h, a.ndim))
                              for h, a in zip(hlos, self.out_avals)]
        self._handlers = [
            _jax.array_result_handler(a, s, committed=True, _skip_checks=True)
            for a, s in zip(self.out_avals, self.out_shardings)]

    def __call__(self, *args: Any) -> list[Array]:
        if len(args) != len(self.in_specs):
            raise TypeError(f"{self.name} takes {len(self.in_specs)} arguments, got {len(args)}")
        arrays = [self._place(i, a) for i, a in enumerate(args)]
        try:
            if self.calls_host:
                return run_to_completion(self.xla_executable, arrays, self._handlers)
            return self.xla_executable.execute_sharded(arrays).consume_with_handlers(
                self._handlers)
        except XlaRuntimeError:
            for a in arrays:
                if a.is_deleted():
                    raise DeletedArrayError(deleted_message(a)) from None
            raise

    def _place(self, i: int, a: Any) -> Array:
        sharding = self.in_shardings[i]
        shape, dtype = self.in_specs[i]
        if isinstance(a, Array):
            if a.is_deleted():
                raise DeletedArrayError(deleted_message(a))
            if (a.aval.shape, a.aval.dtype) != (shape, dtype):
                raise TypeError(f"argument {i} of {self.name}: expected {describe(shape, dtype)}, "
                                f"got {describe(a.aval.shape, a.aval.dtype)}")
            current = a._sharding
            if current is sharding:
                return a
            if len(self.devices) == 1 and tuple(current._internal_device_list) == self.devices:
                return Array(a.aval, sharding, [a], True, _skip_checks=True)
            if _same_layout(current, sharding):
                return a
        elif not (sharding.is_fully_addressable or sharding.is_fully_replicated):
            # As in JAX: each process would pass its own host value, which can't be told
            # apart from the global value every process is meant to pass.
            raise ValueError(
                f"argument {i} of {self.name}: host data ({describe(*self.in_specs[i])}) can't "
                "be split over several processes' devices by jit: pass a replicated sharding, "
                "or make a global array first with make_array_from_process_local_data (each "
                "process's own data) or make_array_from_callback (the same data everywhere)")
        return put_sharded(a, sharding)

    def as_text(self) -> str:
        return self.xla_executable.hlo_modules()[0].to_string()

    def cost_analysis(self) -> dict[str, float]:
        return dict(self.xla_executable.cost_analysis())

    def fast_path_data(self, out_treedef: Any) -> Any:
        """What lets later calls of this signature run from C++ (None where they may
        not: programs over other processes' devices stay in Python). C++ passes an
        Array laid out as `in_shardings` says as it is, and gives anything else to the
        fast path's fallback, which lays it out (`put_sharded`)."""
        if self.calls_host or not all(
                s.is_fully_addressable for s in self.in_shardings + self.out_shardings):
            return None  # a callback's error is raised by Python after the call
        n_in, n_out = len(self.in_specs), len(self.out_avals)
        return FastPathData(
            xla_executable=self.xla_executable, out_pytree_def=out_treedef,
            in_shardings=list(self.in_shardings), out_shardings=list(self.out_shardings),
            out_avals=list(self.out_avals), out_committed=[True] * n_out,
            kept_var_bitvec=[True] * n_in, in_device_local_layouts=[None] * n_in,
            const_args=[])


def _same_layout(current: Any, sharding: MeshSharding) -> bool:
    """Whether an Array laid out by `current` is already laid out as `sharding` says
    (the same devices and tiling, whatever user-facing sharding either carries)."""
    return (isinstance(current, _jax.GSPMDSharding)
            and tuple(current._devices) == tuple(sharding._devices)
            and current._hlo_sharding == sharding._hlo_sharding)


def _place_for_cpp(x: Any, sharding: MeshSharding) -> Array:
    if isinstance(x, Array) and _same_layout(x._sharding, sharding):
        return x
    return put_sharded(x, sharding)


register_placement(_jax.GSPMDSharding, _place_for_cpp)


def named_candidates(axis_names: Sequence[str], ndim: int) -> list[tuple]:
    """Every way to give each mesh axis (in mesh order) to one array dimension or none:
    a spec as one tuple of axis names per dimension."""
    out = []
    for choice in itertools.product(range(-1, ndim), repeat=len(axis_names)):
        spec = [[] for _ in range(ndim)]
        for name, dim in zip(axis_names, choice):
            if dim >= 0:
                spec[dim].append(name)
        out.append(tuple(tuple(e) for e in spec))
    out.sort(key=lambda spec: sum(map(len, spec)))
    return out


install_array_methods({
    "sharding": property(lambda self: getattr(self._sharding, "named", None) or self._sharding),
    "addressable_shards": property(addressable_shards),
    "global_shards": property(global_shards),
    "is_fully_replicated": property(lambda self: self._sharding.is_fully_replicated),
    "is_fully_addressable": property(lambda self: self._sharding.is_fully_addressable),
    "addressable_data": lambda self, index: self
    if index == 0 and len(self._sharding._internal_device_list) == 1
    else addressable_shards(self)[index].data,
})


_arrays._gather_shards = gather  # see arrays._gather_shards
