"""Sharding: how an array is laid out over several devices (JAX's `jax.sharding`).

A `Mesh` arranges devices in an n-dimensional grid with named axes; a
`PartitionSpec` says, for each dimension of an array, which mesh axes split it
(None: not split); a `NamedSharding(mesh, spec)` is the pair. Axes of the mesh
that the spec does not name replicate the array. `SingleDeviceSharding(d)`
puts the whole array on one device.

Everything here is plain Python over device objects: the runtime (lamella.lax)
turns a sharding into XLA's tiling (`hlo_sharding_text`) and places the shards.

>>> import lamella.core as lc
>>> mesh = Mesh(np.array(lc.devices()), ("x",))
>>> sharding = NamedSharding(mesh, P("x"))
>>> sharding.shard_shape((4, 3)) == (4 // len(lc.devices()), 3)
True
"""

from __future__ import annotations

import abc
import contextlib
import enum
import functools
import itertools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from lamella.core.dispatch import current_executor
from lamella.core.primitive import Primitive

__all__ = ["AbstractMesh", "AxisType", "Mesh", "NamedSharding", "P", "PartitionSpec", "Sharding",
           "ShardingTypeError", "SingleDeviceSharding", "auto_axes", "explicit_axes",
           "get_abstract_mesh", "get_mesh", "make_mesh", "reshard", "set_mesh",
           "use_abstract_mesh", "use_mesh",
           "sharding_constraint_p", "with_sharding_constraint"]


class AxisType(enum.Enum):
    """How a mesh axis is partitioned: by XLA (Auto), as part of each array's type
    (Explicit), or by the user's per-device code (Manual, inside shard_map)."""

    Auto = enum.auto()
    Explicit = enum.auto()
    Manual = enum.auto()

    def __repr__(self) -> str:
        return self.name


class ShardingTypeError(Exception):
    """A layout that explicit sharding cannot decide, or an illegal one (JAX's class of
    the name): a contraction over a dimension split on both sides, mismatched operands."""


class _Unconstrained:
    def __repr__(self) -> str:
        return "UNCONSTRAINED"


class PartitionSpec(tuple):
    """For each array dimension: the mesh axis (or tuple of axes) that splits it, or None.

    Trailing dimensions not listed are not split.

    >>> P("x", None), P("x")
    (P('x', None), P('x',))
    >>> P(("x", "y"))[0]
    ('x', 'y')
    """

    UNCONSTRAINED = _Unconstrained()

    def __new__(cls, *partitions: Any) -> PartitionSpec:
        for entry in partitions:
            names = entry if isinstance(entry, tuple) else (entry,)
            if isinstance(entry, list) or any(
                    isinstance(n, (list, int)) and not isinstance(n, bool) for n in names):
                raise TypeError(f"PartitionSpec entries are mesh axis names, tuples of names or "
                                f"None, got {entry!r}")
        return super().__new__(cls, partitions)

    def __repr__(self) -> str:
        return "P" + tuple.__repr__(self)

    def __reduce__(self) -> Any:
        return (PartitionSpec, tuple(self))

    def _normalized(self, ndim: int) -> tuple[tuple[str, ...], ...]:
        """One tuple of axis names per dimension (empty: not split)."""
        entries = [() if e is None or e is PartitionSpec.UNCONSTRAINED
                   else tuple(e) if isinstance(e, tuple) else (e,) for e in self]
        return tuple(entries + [()] * (ndim - len(entries)))


P = PartitionSpec


class Mesh:
    """Devices arranged in a grid whose axes have names.

    A mesh is also a context manager (`with mesh:`) making it the current mesh,
    as `use_mesh(mesh)` does.

    >>> import lamella.core as lc
    >>> mesh = Mesh(np.array(lc.devices()).reshape(-1, 1), ("x", "y"))
    >>> mesh.axis_names, mesh.shape["y"]
    (('x', 'y'), 1)
    """

    def __init__(self, devices: Any, axis_names: str | Sequence[str],
                 axis_types: AxisType | Sequence[AxisType] | None = None):
        grid = np.asarray(devices, dtype=object)
        names = (axis_names,) if isinstance(axis_names, str) else tuple(axis_names)
        if grid.ndim != len(names):
            raise ValueError(f"Mesh: the device array has {grid.ndim} dimensions "
                             f"{grid.shape} but {len(names)} axis names {names} were given")
        if len(set(names)) != len(names):
            raise ValueError(f"Mesh: axis names must be distinct, got {names}")
        ids = [d.id for d in grid.flat]
        if len(set(ids)) != len(ids):
            raise ValueError(f"Mesh: a device appears twice in {grid}")
        if axis_types is None:
            axis_types = (AxisType.Auto,) * len(names)
        elif isinstance(axis_types, AxisType):
            axis_types = (axis_types,) * len(names)
        if len(tuple(axis_types)) != len(names):
            raise ValueError(f"Mesh: {len(tuple(axis_types))} axis types for {len(names)} axes")
        self.devices = grid
        self.axis_names = names
        self.axis_types = tuple(axis_types)

    @property
    def shape(self) -> OrderedDict[str, int]:
        return OrderedDict(zip(self.axis_names, self.devices.shape))

    @property
    def axis_sizes(self) -> tuple[int, ...]:
        return tuple(self.devices.shape)

    shape_tuple = property(lambda self: tuple(zip(self.axis_names, self.devices.shape)))
    size = property(lambda self: int(self.devices.size))
    empty = property(lambda self: self.devices.size == 0)
    device_ids = property(lambda self: np.vectorize(lambda d: d.id, otypes=[int])(self.devices))

    @property
    def local_devices(self) -> list[Any]:
        return [d for d in self.devices.flat if d.process_index == d.client.process_index()] \
            if self.devices.size and hasattr(self.devices.flat[0], "client") \
            else list(self.devices.flat)

    @property
    def local_mesh(self) -> Mesh:
        """The part of the mesh on this process's devices (a block of the grid), with the
        same axis names; the mesh itself with one process.

        >>> mesh = make_mesh((1,), ("x",))
        >>> mesh.local_mesh == mesh
        True
        """
        mine = set(self.local_devices)
        held = np.vectorize(lambda d: d in mine, otypes=[bool])(self.devices)
        if held.all():
            return self
        block = tuple(slice(int(ix.min()), int(ix.max()) + 1) for ix in np.nonzero(held))
        if not held[block].all():
            raise ValueError(f"the devices of this process do not form a block of the mesh "
                             f"{self._short()}, so it has no local mesh")
        return Mesh(self.devices[block], self.axis_names, self.axis_types)

    @property
    def _flat_devices(self) -> tuple[Any, ...]:
        return tuple(self.devices.flat)

    def _key(self) -> tuple:
        return (tuple(d.id for d in self.devices.flat), self.devices.shape, self.axis_names,
                self.axis_types)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mesh) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"Mesh(axis_sizes={self.axis_sizes}, axis_names={self.axis_names}, "
                f"axis_types={tuple(self.axis_types)})")

    def _short(self) -> str:
        axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape.items())
        return f"Mesh({axes}, axis_types={tuple(self.axis_types)})"

    def __enter__(self) -> Mesh:
        _mesh_state.stack.append(self)
        _mesh_changed(local=True)
        return self

    def __exit__(self, *exc: Any) -> None:
        _mesh_state.stack.pop()
        _mesh_changed(local=True)


class _MeshState(threading.local):
    def __init__(self) -> None:
        self.stack: list[Mesh] = []


_mesh_state = _MeshState()
_global_mesh: list[Mesh | None] = [None]
# Called with local=True when this thread's `with mesh:` changes the current mesh,
# local=False when `set_mesh` changes it for every thread: a program traced under
# one mesh is another program under the next (the executor's caches key on it).
_mesh_observers: list[Callable[..., None]] = []


def observe_mesh(observer: Callable[..., None]) -> None:
    """Calls `observer(local=...)` whenever the current mesh changes."""
    _mesh_observers.append(observer)


def _mesh_changed(local: bool) -> None:
    for observer in _mesh_observers:
        observer(local=local)


def thread_mesh() -> Mesh | None:
    """The mesh of this thread's innermost `with mesh:` block, if any."""
    return _mesh_state.stack[-1] if _mesh_state.stack else None


def get_mesh() -> Mesh | None:
    """The current mesh: the innermost `use_mesh`/`with mesh:`, else the one `set_mesh` set.

    >>> get_mesh() is None
    True
    """
    return _mesh_state.stack[-1] if _mesh_state.stack else _global_mesh[0]


class _MeshSetting:
    """What `set_mesh` returns: the mesh is set already; as a context manager, the
    previous one comes back at the end of the block."""

    def __init__(self, previous: Mesh | None):
        self._previous = previous

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        _global_mesh[0] = self._previous
        _mesh_changed(local=False)


def set_mesh(mesh: Mesh | None) -> _MeshSetting:
    """Makes `mesh` the current mesh (for `P` specs given without a mesh); usable as
    `with set_mesh(mesh):`, after which the previous mesh is current again.

    >>> mesh = make_mesh((1,), ("x",))
    >>> with set_mesh(mesh):
    ...     get_mesh() == mesh
    True
    """
    if mesh is not None and not isinstance(mesh, Mesh):
        raise TypeError(f"set_mesh takes a Mesh or None, got {type(mesh).__name__}")
    previous, _global_mesh[0] = _global_mesh[0], mesh
    _mesh_changed(local=False)
    return _MeshSetting(previous)


@contextlib.contextmanager
def use_mesh(mesh: Mesh) -> Iterator[Mesh]:
    """Makes `mesh` the current mesh inside the block (this thread only).

    >>> with use_mesh(make_mesh((1,), ("x",))) as mesh:
    ...     get_mesh().axis_names
    ('x',)
    """
    with mesh:
        yield mesh


def make_mesh(axis_shapes: Sequence[int], axis_names: Sequence[str],
              axis_types: Sequence[AxisType] | None = None, *,
              devices: Sequence[Any] | None = None) -> Mesh:
    """A mesh of the first `prod(axis_shapes)` devices (or of `devices`), in order.

    As in JAX 0.10, axes are Explicit unless `axis_types` says otherwise.

    >>> make_mesh((1,), ("x",))
    Mesh(axis_sizes=(1,), axis_names=('x',), axis_types=(Explicit,))
    """
    shape = tuple(int(s) for s in axis_shapes)
    if len(shape) != len(tuple(axis_names)):
        raise ValueError(f"make_mesh: {len(shape)} axis sizes {shape} for "
                         f"{len(tuple(axis_names))} axis names {tuple(axis_names)}")
    available = list(devices) if devices is not None else current_executor().devices(None)
    needed = math.prod(shape)
    if needed > len(available) or (devices is not None and needed != len(available)):
        raise ValueError(f"make_mesh: a mesh of shape {shape} needs {needed} devices, but "
                         f"{len(available)} are available; more CPU devices come from the config "
                         "option num_cpu_devices (LAMELLA_NUM_CPU_DEVICES) set before first use")
    grid = np.empty(needed, dtype=object)
    grid[:] = available[:needed]
    types = (AxisType.Explicit,) * len(shape) if axis_types is None else tuple(axis_types)
    return Mesh(grid.reshape(shape), tuple(axis_names), types)


class Sharding(abc.ABC):
    """The type of every sharding: which devices hold which part of an array."""

    @property
    def device_set(self) -> set[Any]:
        return set(self._device_assignment)

    @property
    def num_devices(self) -> int:
        return len(self._device_assignment)

    @property
    def memory_kind(self) -> str:
        return "device"

    @property
    def is_fully_addressable(self) -> bool:
        """Whether every device is this process's (always, with one process)."""
        return len(self.addressable_devices) == len(self.device_set)

    @property
    def addressable_devices(self) -> set[Any]:
        """The devices of this process (another process of the program has the rest)."""
        here = current_executor().process_index()
        return {d for d in self.device_set if d.process_index == here}

    @property
    @abc.abstractmethod
    def _device_assignment(self) -> tuple[Any, ...]:
        """The devices, in the order of XLA's device assignment."""

    @abc.abstractmethod
    def devices_indices_map(self, global_shape: Sequence[int]) -> dict[Any, tuple[slice, ...]]:
        """The part of an array of `global_shape` each device holds."""

    def addressable_devices_indices_map(self, global_shape: Sequence[int]
                                        ) -> dict[Any, tuple[slice, ...]]:
        """`devices_indices_map` for this process's devices only."""
        here = current_executor().process_index()
        return {d: index for d, index in self.devices_indices_map(global_shape).items()
                if d.process_index == here}

    def shard_shape(self, global_shape: Sequence[int]) -> tuple[int, ...]:
        """The shape of the part one device holds."""
        index = next(iter(self.devices_indices_map(global_shape).values()))
        return tuple(len(range(*s.indices(n))) for s, n in zip(index, global_shape))


_single_device_factory: list[Any] = [None]


class SingleDeviceSharding(Sharding):
    """The whole array on one device.

    With lamella.lax installed this is the runtime's own single-device sharding
    (the one arrays carry), so `x.sharding == SingleDeviceSharding(x.device)`.
    """

    def __new__(cls, device: Any, *, memory_kind: str | None = None) -> Any:
        if _single_device_factory[0] is not None:
            return _single_device_factory[0](device)
        self = super().__new__(cls)
        self._device = device
        return self

    _device_assignment = property(lambda self: (self._device,))
    is_fully_replicated = property(lambda self: True)

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict[Any, tuple[slice, ...]]:
        return {self._device: tuple(slice(None) for _ in global_shape)}

    def __repr__(self) -> str:
        return f"SingleDeviceSharding(device={self._device!r}, memory_kind=device)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SingleDeviceSharding) and self._device == other._device

    def __hash__(self) -> int:
        return hash(self._device)


def register_single_device_sharding(cls: type, factory: Any) -> None:
    """Makes the runtime's single-device sharding class `cls` count as a
    `SingleDeviceSharding`, which then builds its instances with `factory(device)`."""
    SingleDeviceSharding.register(cls)
    _single_device_factory[0] = factory


class NamedSharding(Sharding):
    """An array split over a mesh: dimension i by the mesh axes `spec[i]` names.

    >>> mesh = make_mesh((1,), ("x",))
    >>> NamedSharding(mesh, P("x"))
    NamedSharding(mesh=Mesh('x': 1, axis_types=(Explicit,)), spec=P('x',), memory_kind=device)
    """

    def __init__(self, mesh: Mesh, spec: PartitionSpec | Sequence[Any] | None = None, *,
                 memory_kind: str | None = None):
        if not isinstance(mesh, Mesh):
            raise TypeError(f"NamedSharding takes a Mesh, got {type(mesh).__name__}")
        if not isinstance(spec, PartitionSpec):
            if spec is None:
                spec = PartitionSpec()
            elif isinstance(spec, (tuple, list)):
                spec = PartitionSpec(*spec)
            else:
                raise TypeError(f"NamedSharding takes a PartitionSpec, got {spec!r}")
        used: list[str] = []
        for entry in spec._normalized(len(spec)):
            for name in entry:
                if name not in mesh.axis_names:
                    raise ValueError(f"Resource axis: {name} of {spec!r} is not found in mesh: "
                                     f"{mesh.axis_names}.")
                if name in used:
                    raise ValueError(f"A single NamedSharding spec specification can map every "
                                     f"mesh axis to at most one positional dimension, but "
                                     f"{spec!r} has duplicate entries for `{name}`")
                used.append(name)
        self.mesh = mesh
        self.spec = spec
        self._memory_kind = memory_kind

    _device_assignment = property(lambda self: self.mesh._flat_devices)

    @property
    def is_fully_replicated(self) -> bool:
        return all(self.mesh.shape[n] == 1 for e in self.spec._normalized(len(self.spec))
                   for n in e)

    def with_spec(self, spec: PartitionSpec | Sequence[Any]) -> NamedSharding:
        return NamedSharding(self.mesh, spec)

    def __repr__(self) -> str:
        return f"NamedSharding(mesh={self.mesh._short()}, spec={self.spec!r}, memory_kind=device)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NamedSharding) and self.mesh == other.mesh and (
            self.spec._normalized(max(len(self.spec), len(other.spec)))
            == other.spec._normalized(max(len(self.spec), len(other.spec))))

    def __hash__(self) -> int:
        spec = self.spec._normalized(len(self.spec))
        while spec and not spec[-1]:
            spec = spec[:-1]
        return hash((self.mesh, spec))

    def check_shape(self, global_shape: Sequence[int]) -> None:
        """Raises ValueError unless an array of `global_shape` can be split this way."""
        shape = tuple(global_shape)
        if len(self.spec) > len(shape):
            raise ValueError(f"Sharding {self!r} is only valid for values of rank at least "
                             f"{len(self.spec)}, but was applied to a value of rank {len(shape)}")
        for dim, (size, names) in enumerate(zip(shape, self.spec._normalized(len(shape)))):
            parts = math.prod(self.mesh.shape[n] for n in names)
            if size % parts:
                factors = [math.prod(self.mesh.shape[n] for n in e)
                           for e in self.spec._normalized(len(shape))]
                raise ValueError(
                    f"Sharding {self!r} implies that array axis {dim} is partitioned {parts} "
                    f"times, but the dimension size is {size} (full shape: {shape}, "
                    f"per-dimension tiling factors: {factors} should evenly divide the shape)")

    def tile_assignment(self, ndim: int) -> tuple[list[int], np.ndarray, int]:
        """XLA's view: tiles per dimension, the mesh positions of the tiles in order
        (shape: tiles per dimension + [replicas]), and the number of replicas."""
        spec = self.spec._normalized(ndim)
        names = list(self.mesh.axis_names)
        split = [n for entry in spec for n in entry]
        rest = [n for n in names if n not in split]
        positions = np.arange(self.mesh.size).reshape(self.mesh.axis_sizes)
        order = [names.index(n) for n in split + rest]
        tiles = [math.prod(self.mesh.shape[n] for n in entry) for entry in spec]
        replicas = math.prod(self.mesh.shape[n] for n in rest)
        return tiles, positions.transpose(order).reshape(tiles + [replicas]), replicas

    def hlo_sharding_text(self, ndim: int) -> str:
        """This sharding in XLA's HloSharding syntax, device numbers being positions in
        the mesh (`{devices=[4,1,2]0,1,... last_tile_dim_replicate}`)."""
        tiles, assignment, replicas = self.tile_assignment(ndim)
        if math.prod(tiles) == 1:
            return "{replicated}"
        dims = tiles + [replicas] if replicas > 1 else tiles
        ids = ",".join(map(str, assignment.flat))
        suffix = " last_tile_dim_replicate" if replicas > 1 else ""
        return "{devices=[" + ",".join(map(str, dims)) + "]" + ids + suffix + "}"

    def devices_indices_map(self, global_shape: Sequence[int]) -> dict[Any, tuple[slice, ...]]:
        shape = tuple(global_shape)
        self.check_shape(shape)
        spec = self.spec._normalized(len(shape))
        sizes = self.mesh.shape
        flat = self.mesh._flat_devices
        out = {}
        for position, coords in enumerate(itertools.product(*map(range, self.mesh.axis_sizes))):
            at = dict(zip(self.mesh.axis_names, coords))
            index = []
            for size, names in zip(shape, spec):
                if not names:
                    index.append(slice(None))
                    continue
                block = 0
                for n in names:
                    block = block * sizes[n] + at[n]
                step = size // math.prod(sizes[n] for n in names)
                index.append(slice(block * step, (block + 1) * step))
            out[flat[position]] = tuple(index)
        return out


def as_named(sharding: Any, what: str) -> NamedSharding:
    """`sharding` as a NamedSharding: a bare PartitionSpec takes the current mesh."""
    if isinstance(sharding, NamedSharding):
        return sharding
    if isinstance(sharding, PartitionSpec):
        mesh = get_mesh()
        if mesh is None:
            raise ValueError(f"{what}: a PartitionSpec {sharding!r} needs a mesh: pass "
                             "NamedSharding(mesh, spec), or set one with set_mesh/use_mesh")
        return NamedSharding(mesh, sharding)
    raise TypeError(f"{what} takes a NamedSharding or a PartitionSpec, got {sharding!r}")


def out_sharding_of(name: str, out_sharding: Any) -> NamedSharding | None:
    """The layout an `out_sharding=` argument asks for: None, a NamedSharding, or a
    PartitionSpec over the current mesh.

    >>> out_sharding_of("zeros", None) is None
    True
    """
    if out_sharding is None:
        return None
    if not isinstance(out_sharding, (NamedSharding, PartitionSpec)):
        raise TypeError(f"`out_sharding` argument of {name} only supports instances of "
                        f"`NamedSharding` or `PartitionSpec`. Got {out_sharding} of type: "
                        f"{type(out_sharding)}")
    if isinstance(out_sharding, PartitionSpec) and get_mesh() is None:
        raise ValueError(f"{name}: out_sharding={out_sharding!r} is a PartitionSpec, which "
                         "needs a mesh: set one with set_mesh, or pass a NamedSharding")
    return as_named(out_sharding, f"{name}'s out_sharding")


# ---------------------------------------------------------------------------
# Sharding constraints: an identity that tells the partitioner a value's layout.

sharding_constraint_p = Primitive("sharding_constraint")


@sharding_constraint_p.def_impl
def _constraint_impl(x: Any, *, sharding: NamedSharding) -> Any:
    return current_executor().device_put(x, sharding)


@sharding_constraint_p.def_abstract_eval
def _constraint_abstract_eval(aval: Any, *, sharding: NamedSharding) -> Any:
    # Under an Explicit mesh the constraint is a reshard: the result's type says so.
    if AxisType.Explicit not in sharding.mesh.axis_types:
        return aval if aval.sharding is None else aval.update(sharding=None)
    return aval.update(sharding=typed_sharding(sharding.mesh, sharding.spec, aval.ndim))


# Installed by lamella.core.sharding_rules: (mesh, spec, ndim) -> the sharding an aval of
# rank `ndim` carries for `spec` over `mesh` (None when nothing is split explicitly).
typed_sharding: Any = None


def _register_constraint_rules() -> None:
    from lamella.core import rules

    def transpose(ct, x, *, sharding):
        # A reshard's cotangent goes back to the layout its operand's type had.
        source = getattr(x.aval, "sharding", None)
        back = source if source is not None else sharding if not _is_explicit(sharding) \
            else NamedSharding(sharding.mesh, PartitionSpec())
        return [sharding_constraint_p.bind(rules.instantiate_zeros(ct), sharding=back)]
    rules.deflinear2(sharding_constraint_p, transpose)
    rules.constrain_layout = lambda x, sharding: sharding_constraint_p.bind(x, sharding=sharding)

    def batch(args, dims, *, sharding):
        (x,), (d,) = args, dims
        spec = list(sharding.spec._normalized(np.ndim(x) - 1))
        spec.insert(d, None)
        return sharding_constraint_p.bind(
            x, sharding=NamedSharding(sharding.mesh, PartitionSpec(*[e or None for e in spec]))
        ), d
    rules.primitive_batchers[sharding_constraint_p] = batch


def _is_explicit(sharding: NamedSharding) -> bool:
    return AxisType.Explicit in sharding.mesh.axis_types


_register_constraint_rules()


def _constrain(x: Any, shardings: Any, what: str, check_explicit: bool) -> Any:
    from lamella.core.trace import aval_of
    from lamella.core.tree_util import tree_flatten, tree_unflatten
    leaves, tree = tree_flatten(x)
    if isinstance(shardings, (NamedSharding, PartitionSpec)):
        targets = [shardings] * len(leaves)
    else:
        targets, _ = tree_flatten(shardings, is_leaf=lambda s: isinstance(
            s, (NamedSharding, PartitionSpec)))
        if len(targets) != len(leaves):
            raise ValueError(f"{what}: {len(targets)} shardings for {len(leaves)} values")
    outs = []
    for leaf, target in zip(leaves, targets):
        named = as_named(target, what)
        named.check_shape(np.shape(leaf))
        if check_explicit and all(t is AxisType.Explicit for t in named.mesh.axis_types):
            _assert_same_layout(aval_of(leaf), named)
        outs.append(sharding_constraint_p.bind(leaf, sharding=named))
    return tree_unflatten(tree, outs)


def _assert_same_layout(aval: Any, named: NamedSharding) -> None:
    """Under an all-Explicit mesh a constraint asserts the type's layout (JAX)."""
    have = aval.sharding.spec if aval.sharding is not None else PartitionSpec()
    ndim = len(aval.shape)
    if have._normalized(ndim) != named.spec._normalized(ndim):
        raise AssertionError(
            "`with_sharding_constraint` acts as an assert when all axes of mesh are of type "
            f"`Explicit`. The array sharding: {have!r} did not match the sharding provided: "
            f"{named.spec!r}. Please use `jax.sharding.reshard` to shard your input to the "
            "sharding you want.")


def with_sharding_constraint(x: Any, shardings: Any) -> Any:
    """`x` (a pytree), with each leaf laid out as the matching sharding says: inside
    `jit` a hint to XLA's partitioner, outside it a `device_put`. Over a mesh whose
    axes are all Explicit, the layout is already the type's: the constraint asserts
    it (`reshard` changes it).

    >>> import lamella.core as lc
    >>> mesh = make_mesh((1,), ("x",), axis_types=(AxisType.Auto,))
    >>> lc.jit(lambda v: with_sharding_constraint(v, NamedSharding(mesh, P("x"))))(
    ...     np.ones(2, np.float32)).shape
    (2,)
    """
    return _constrain(x, shardings, "with_sharding_constraint", True)


def reshard(xs: Any, out_shardings: Any) -> Any:
    """`xs` laid out as `out_shardings` says (a sharding, a spec under the current mesh,
    or a pytree of them): `device_put` on concrete values, a resharding inside `jit`.
    Under an Explicit mesh the result's type carries the new layout.

    (needs lamella.lax's runtime; run in packages/lax/tests/multidevice)

    >>> mesh = make_mesh((1,), ("x",))  # doctest: +SKIP
    >>> reshard(np.ones(2, np.float32), NamedSharding(mesh, P())).sharding.spec  # doctest: +SKIP
    P()
    """
    return _constrain(xs, out_shardings, "reshard", False)


# ---------------------------------------------------------------------------
# The abstract mesh, and switching axes between Auto and Explicit.


class AbstractMesh:
    """A mesh's axis names, sizes and types without its devices: what tracing sees.

    >>> get_abstract_mesh().empty
    True
    """

    def __init__(self, axis_sizes: Sequence[int], axis_names: Sequence[str],
                 axis_types: Sequence[AxisType], device_kind: str | None = None,
                 platform: str | None = None):
        self.axis_sizes = tuple(axis_sizes)
        self.axis_names = tuple(axis_names)
        self.axis_types = tuple(axis_types)
        self._kind = (device_kind, platform)

    shape = property(lambda self: OrderedDict(zip(self.axis_names, self.axis_sizes)))
    shape_tuple = property(lambda self: tuple(zip(self.axis_names, self.axis_sizes)))
    size = property(lambda self: math.prod(self.axis_sizes))
    empty = property(lambda self: not self.axis_names)

    def _key(self) -> tuple:
        return (self.axis_sizes, self.axis_names, self.axis_types, self._kind)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AbstractMesh) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        if self.empty:
            return "AbstractMesh((), axis_types=())"
        axes = ", ".join(f"{n!r}: {s}" for n, s in self.shape.items())
        kind, platform = self._kind
        extra = f", device_kind={kind}, num_cores=None, platform={platform}" if kind else ""
        return f"AbstractMesh({axes}, axis_types={self.axis_types}{extra})"


def _abstract(mesh: Mesh) -> AbstractMesh:
    first = mesh.devices.flat[0] if mesh.devices.size else None
    return AbstractMesh(mesh.axis_sizes, mesh.axis_names, mesh.axis_types,
                        getattr(first, "device_kind", None), getattr(first, "platform", None))


Mesh.abstract_mesh = property(_abstract)


class _AbstractMeshState(threading.local):
    def __init__(self) -> None:
        self.stack: list[AbstractMesh] = []


_abstract_mesh_state = _AbstractMeshState()


def get_abstract_mesh() -> AbstractMesh:
    """The innermost `use_abstract_mesh`'s mesh, else the current mesh's `AbstractMesh`
    (an empty one when no mesh is set).

    >>> with set_mesh(make_mesh((1,), ("x",))):
    ...     get_abstract_mesh().axis_types
    (Explicit,)
    """
    if _abstract_mesh_state.stack:
        return _abstract_mesh_state.stack[-1]
    mesh = get_mesh()
    return AbstractMesh((), (), ()) if mesh is None else _abstract(mesh)


class use_abstract_mesh:  # noqa: N801 (JAX's name: a class used as a context manager)
    """Makes `mesh` (an `AbstractMesh`: axis names, sizes and types, no devices) what
    `get_abstract_mesh()` reports in this thread inside the block; it may not change the
    size of a non-empty abstract mesh already in use.

    >>> with use_abstract_mesh(AbstractMesh((2,), ("x",), (AxisType.Explicit,))):
    ...     get_abstract_mesh().shape_tuple
    (('x', 2),)
    """

    __slots__ = ("mesh",)

    def __init__(self, mesh: AbstractMesh):
        if not isinstance(mesh, AbstractMesh):
            raise ValueError("Expected mesh of type `jax.sharding.AbstractMesh`. Got type: "
                             f"{type(mesh)}")
        self.mesh = mesh

    def __enter__(self) -> None:
        previous = get_abstract_mesh()
        if not previous.empty and not self.mesh.empty and previous.size != self.mesh.size:
            raise ValueError(
                f"use_abstract_mesh cannot change the size of the mesh. Got new mesh: "
                f"{self.mesh!r} with size={self.mesh.size} and prev mesh: {previous!r} with "
                f"size={previous.size}")
        _abstract_mesh_state.stack.append(self.mesh)

    def __exit__(self, *exc: Any) -> None:
        _abstract_mesh_state.stack.pop()


def _retyped_mesh(axes: str | Sequence[str] | None, to: AxisType, what: str) -> tuple[Mesh, Mesh]:
    mesh = get_mesh()
    if mesh is None:
        raise ValueError(f"{what} needs a mesh: set one with set_mesh")
    names = mesh.axis_names if axes is None else (axes,) if isinstance(axes, str) \
        else tuple(axes)
    unknown = [n for n in names if n not in mesh.axis_names]
    if unknown:
        raise ValueError(f"{what}: axes {unknown} are not axes of the mesh {mesh._short()}")
    types = tuple(to if n in names else t for n, t in zip(mesh.axis_names, mesh.axis_types))
    return mesh, Mesh(mesh.devices, mesh.axis_names, types)


def _onto(mesh: Mesh, x: Any, spec: PartitionSpec | None = None) -> Any:
    """`x` laid out over `mesh` (another typing of the same devices), keeping its spec
    unless one is given."""
    from lamella.core.trace import aval_of
    if spec is None:
        sharding = getattr(aval_of(x), "sharding", None)
        entries = list(sharding.spec) if sharding is not None else []
        while entries and entries[-1] is None and AxisType.Explicit not in mesh.axis_types:
            entries.pop()  # onto Auto axes the layout is XLA's: JAX prints P('x',)
        spec = PartitionSpec(*entries)
    return sharding_constraint_p.bind(x, sharding=NamedSharding(mesh, spec))


def auto_axes(f: Any = None, /, *, axes: str | Sequence[str] | None = None,
              out_sharding: Any = None) -> Any:
    """`f` run with the mesh's `axes` (default: all) Auto: inside, arrays' types do not
    carry those axes and XLA lays values out; the results are resharded to
    `out_sharding` (given here or when calling, as `f(..., out_sharding=)`).

    (needs lamella.lax's runtime; run in packages/lax/tests/multidevice)

    >>> with set_mesh(make_mesh((1,), ("x",))):  # doctest: +SKIP
    ...     auto_axes(lambda v: v * 2, out_sharding=P("x"))(np.ones(2, np.float32)).shape
    (2,)
    """
    if f is None:
        return lambda g: auto_axes(g, axes=axes, out_sharding=out_sharding)
    from lamella.core.tree_util import tree_map

    @functools.wraps(f)
    def wrapped(*args: Any, out_sharding: Any = out_sharding, **kwargs: Any) -> Any:
        if out_sharding is None:
            raise ValueError("auto_axes: pass out_sharding (where the results go once the "
                             "axes are Explicit again)")
        mesh, inner = _retyped_mesh(axes, AxisType.Auto, "auto_axes")
        args, kwargs = tree_map(lambda x: _onto(inner, x), (args, kwargs))
        with inner:
            out = f(*args, **kwargs)
        with mesh:
            return reshard(out, out_sharding)
    return wrapped


def explicit_axes(f: Any = None, /, *, axes: str | Sequence[str] | None = None,
                  in_sharding: Any = None) -> Any:
    """`f` run with the mesh's `axes` (default: all) Explicit: its arguments are laid out
    as `in_sharding` says (given here or as `f(..., in_sharding=)`) and their types say
    so inside; the results go back to the surrounding mesh's typing.

    (needs lamella.lax's runtime; run in packages/lax/tests/multidevice)

    >>> mesh = make_mesh((1,), ("x",), axis_types=(AxisType.Auto,))  # doctest: +SKIP
    >>> with set_mesh(mesh):  # doctest: +SKIP
    ...     explicit_axes(lambda v: v * 2, in_sharding=P("x"))(np.ones(2, np.float32)).shape
    (2,)
    """
    if f is None:
        return lambda g: explicit_axes(g, axes=axes, in_sharding=in_sharding)
    from lamella.core.tree_util import tree_flatten, tree_unflatten

    @functools.wraps(f)
    def wrapped(*args: Any, in_sharding: Any = in_sharding, **kwargs: Any) -> Any:
        if in_sharding is None:
            raise ValueError("explicit_axes: pass in_sharding (how the arguments are laid "
                             "out once the axes are Explicit)")
        mesh, inner = _retyped_mesh(axes, AxisType.Explicit, "explicit_axes")
        with inner:
            args = reshard(args, in_sharding)
            out = f(*args, **kwargs)
        leaves, tree = tree_flatten(out)
        return tree_unflatten(tree, [_onto(mesh, x) for x in leaves])
    return wrapped
