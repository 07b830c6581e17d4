"""`serialize` / `deserialize`: an `Exported` as bytes in JAX 0.10.2's FlatBuffers layout.

The layout (schema ``jax/_src/export/serialization.fbs``, serialization
version 11) is followed field by field, so bytes written here deserialize in
JAX and JAX's deserialize here. Avals are stored once each (``unique_avals``)
and referenced by index, as JAX does, and also in the older per-argument
fields that earlier readers use. Custom pytree nodes need
`register_pytree_node_serialization`. A function over several devices stores
each argument's and result's sharding as JAX 0.10.2 writes it: a NamedSharding
over an abstract mesh (axis sizes, names, types; no devices) and a
PartitionSpec, stored once each and referenced by index; bytes written by JAX
before its version 9 hold XLA's HloSharding protos instead, which are read (and,
as in JAX, cannot be written again). Effects are stored by
type name, as JAX does; host callbacks (which only this process can call) are
not stored.

(needs lamella.lax to lower; tests/test_export.py runs it)

>>> import numpy as np  # doctest: +SKIP
>>> import lamella.core as lc  # doctest: +SKIP
>>> import lamella.lax as lax  # doctest: +SKIP
>>> from lamella.core.export import export  # doctest: +SKIP
>>> exp = export(lc.jit(lax.neg))(np.float32(1.0))  # doctest: +SKIP
>>> again = deserialize(serialize(exp))  # doctest: +SKIP
>>> again.in_avals, again.call(np.float32(2.0))  # doctest: +SKIP
((ShapedArray(float32[]),), Array(-2., dtype=float32))
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from lamella.core import dtypes
from lamella.core.avals import ShapedArray
from lamella.core.export.exported import (
    DisabledSafetyCheck,
    Exported,
    _operations,
    symbolic_shape,
)
from lamella.core.export.flatbuffer import Builder, Table, root_table
from lamella.core.tree_util import (
    PyTreeDef,
    flatten_one_level,
    on_register,
    tree_structure,
    tree_unflatten,
)

# Slots of the schema's tables.
_EXP_VERSION, _EXP_NAME, _EXP_IN_TREE, _EXP_IN_AVALS, _EXP_OUT_TREE, _EXP_OUT_AVALS = range(6)
(_EXP_NR_DEVICES_SHORT, _EXP_IN_SHARDINGS, _EXP_OUT_SHARDINGS, _EXP_PLATFORMS,
 _EXP_ORDERED, _EXP_UNORDERED, _EXP_DISABLED, _EXP_MODULE, _EXP_CC_VERSION, _EXP_KEPT,
 _EXP_GLOBAL_CONSTS, _EXP_VJP, _EXP_NR_DEVICES, _EXP_UNIQUE_AVALS, _EXP_UNIQUE_MESHES,
 _EXP_UNIQUE_SHARDINGS, _EXP_IN_AVAL_IDX, _EXP_OUT_AVAL_IDX, _EXP_IN_SHARDING_IDX,
 _EXP_OUT_SHARDING_IDX) = range(6, 26)
_TREE_KIND, _TREE_CHILDREN, _TREE_NAMES, _TREE_CUSTOM_NAME, _TREE_CUSTOM_AUX = range(5)
_AVAL_KIND, _AVAL_SHAPE, _AVAL_DTYPE, _AVAL_MEMORY = range(4)
_LEAF, _NONE, _TUPLE, _LIST, _DICT, _CUSTOM = range(6)
_SHAPED_ARRAY = 0
_MEMORY_DEVICE = 1
_CHECK_KIND, _CHECK_TARGET = range(2)
_SHARDING_KIND, _SHARDING_HLO_PROTO, _SHARDING_NAMED = range(3)
_NAMED_MESH, _NAMED_SPEC, _NAMED_MEMORY, _NAMED_MESH_IDX = range(4)
_MESH_SIZES, _MESH_NAMES, _MESH_TYPES, _MESH_DEVICE = range(4)
_DEVICE_KIND, _DEVICE_CORES, _DEVICE_PLATFORM = range(3)
_AXIS_TYPE_CODE = {"Auto": 1, "Explicit": 2, "Manual": 3}
_CODE_AXIS_TYPE = {code: name for name, code in _AXIS_TYPE_CODE.items()}
# JAX writes 3 here so that readers from before its version 4 still accept the bytes.
_SERIALIZATION_VERSION = 3


def _dtype_codes() -> dict[np.dtype, int]:
    codes = {np.dtype(name): code for code, name in enumerate(
        ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float16", "float32", "float64", "complex64", "complex128"))}
    codes[dtypes.float0] = 22
    try:
        import ml_dtypes
    except ImportError:  # without ml_dtypes there are no such arrays to export
        return codes
    for name, code in (("bfloat16", 14), ("int4", 15), ("uint4", 16),
                       ("float8_e4m3b11fnuz", 17), ("float8_e4m3fn", 18),
                       ("float8_e4m3fnuz", 19), ("float8_e5m2", 20), ("float8_e5m2fnuz", 21),
                       ("float8_e4m3", 23), ("float8_e3m4", 24), ("float8_e8m0fnu", 25),
                       ("float4_e2m1fn", 26)):
        if hasattr(ml_dtypes, name):
            codes[np.dtype(getattr(ml_dtypes, name))] = code
    return codes


_DTYPE_CODE = _dtype_codes()
_CODE_DTYPE = {code: dtype for dtype, code in _DTYPE_CODE.items()}

# Custom pytree nodes: type -> (name, serialize_auxdata); name -> (deserialize, from_children).
_serializers: dict[type, tuple[str, Callable[[Any], bytes]]] = {}
_deserializers: dict[str, tuple[Callable[[bytes], Any], Callable[[Any, list], Any]]] = {}
_unflatteners: dict[type, Callable[[Any, Any], Any]] = {}
on_register(lambda nodetype, flatten, unflatten: _unflatteners.__setitem__(nodetype, unflatten))


def register_pytree_node_serialization(
    nodetype: type, *, serialized_name: str, serialize_auxdata: Callable[[Any], bytes],
    deserialize_auxdata: Callable[[bytes], Any],
    from_children: Callable[[Any, list], Any] | None = None) -> type:
    """Lets Exported trees hold ``nodetype`` (a registered pytree node): its auxiliary
    data is stored as the bytes ``serialize_auxdata`` returns, under ``serialized_name``.

    >>> import collections
    >>> from lamella.core import tree_util
    >>> Pair = collections.namedtuple("Pair", "a b")
    >>> _ = register_namedtuple_serialization(Pair, serialized_name="doc.Pair")
    """
    if serialized_name in _deserializers:
        raise ValueError(f"a pytree node is already serialized as {serialized_name!r}")
    if from_children is None:
        unflatten = _unflatteners.get(nodetype)
        if unflatten is None:
            raise ValueError(f"{nodetype} is not a registered pytree node: register it "
                             "with tree_util.register_pytree_node first, or pass from_children")
        from_children = unflatten
    _serializers[nodetype] = (serialized_name, serialize_auxdata)
    _deserializers[serialized_name] = (deserialize_auxdata, from_children)
    return nodetype


def register_namedtuple_serialization(nodetype: type, *, serialized_name: str) -> type:
    """Lets Exported trees hold the namedtuple class ``nodetype`` (JAX's name)."""
    if serialized_name in _deserializers:
        raise ValueError(f"a pytree node is already serialized as {serialized_name!r}")
    _serializers[nodetype] = (serialized_name, lambda aux: b"")
    _deserializers[serialized_name] = (lambda data: None,
                                       lambda aux, children: nodetype(*children))
    return nodetype


register_pytree_node_serialization(
    collections.OrderedDict, serialized_name="collections.OrderedDict",
    serialize_auxdata=lambda keys: _string_keys(keys),
    deserialize_auxdata=lambda data: json.loads(data.decode()),
    from_children=lambda keys, children: collections.OrderedDict(zip(keys, children)))


def _string_keys(keys: Any) -> bytes:
    keys = list(keys)
    if not all(isinstance(k, str) for k in keys):
        raise ValueError(f"an OrderedDict is serialized only with string keys; found {keys}")
    return json.dumps(keys).encode()


@dataclasses.dataclass(frozen=True)
class AbstractNamedSharding:
    """An Exported's sharding of one argument or result, as JAX serializes it: a
    PartitionSpec over a mesh known by its axes only (JAX's NamedSharding over an
    `AbstractMesh`); a call lays it over the devices of a mesh of that shape.

    >>> s = AbstractNamedSharding((4, 2), ("x", "y"), ("Auto", "Auto"), (("x",), ()))
    >>> s.hlo_sharding_text(2)
    '{devices=[4,1,2]0,1,2,3,4,5,6,7 last_tile_dim_replicate}'
    """

    axis_sizes: tuple[int, ...]
    axis_names: tuple[str, ...]
    axis_types: tuple[str, ...]
    spec: tuple[tuple[str, ...], ...]  # per dimension, the mesh axes splitting it
    memory_kind: str | None = None
    device_kind: str = "cpu"
    platform: str = "cpu"

    @classmethod
    def of(cls, named: Any, platform: str = "cpu") -> AbstractNamedSharding:
        """The abstract form of a lamella.core NamedSharding."""
        mesh = named.mesh
        spec = tuple(named.spec._normalized(len(named.spec)))
        while spec and not spec[-1]:
            spec = spec[:-1]
        return cls(tuple(mesh.axis_sizes), tuple(mesh.axis_names),
                   tuple(t.name for t in mesh.axis_types), spec,
                   device_kind=platform, platform=platform)

    def partition_spec(self) -> Any:
        from lamella.core.sharding import PartitionSpec
        return PartitionSpec(*[None if not e else e[0] if len(e) == 1 else e
                               for e in self.spec])

    def on(self, mesh: Any) -> Any:
        """This sharding over ``mesh``'s devices: over ``mesh`` itself when its axes are
        the exported ones, else over a mesh of the exported axes made of its devices in
        order (as JAX lays out a call over other devices)."""
        from lamella.core.sharding import AxisType, Mesh, NamedSharding
        if (tuple(mesh.axis_names), tuple(mesh.axis_sizes)) != (self.axis_names,
                                                                self.axis_sizes):
            grid = np.empty(self.axis_sizes, dtype=object)
            grid.flat[:] = list(mesh._flat_devices)
            mesh = Mesh(grid, self.axis_names, tuple(AxisType[t] for t in self.axis_types))
        return NamedSharding(mesh, self.partition_spec())

    def hlo_sharding_text(self, ndim: int) -> str:
        """XLA's HloSharding of an array of rank ``ndim`` laid out this way, devices
        numbered by their position in the mesh."""
        import types

        from lamella.core.sharding import Mesh
        grid = np.empty(self.axis_sizes, dtype=object)
        for i, index in enumerate(np.ndindex(*self.axis_sizes)):
            grid[index] = types.SimpleNamespace(id=i)
        return self.on(Mesh(grid, self.axis_names)).hlo_sharding_text(ndim)


@dataclasses.dataclass(frozen=True)
class LegacyHloSharding:
    """A sharding stored as XLA's HloSharding (JAX wrote these before its serialization
    version 9, with no mesh): only its device positions are known."""

    text: str

    def hlo_sharding_text(self, ndim: int) -> str:
        return self.text


def shardings_on(named: Sequence[Any], avals: Sequence[Any], mesh: Any) -> tuple[Any, ...]:
    """Each of an Exported's shardings (``named``; empty: a single-device export) as a
    NamedSharding over ``mesh``'s devices (`Exported.in_shardings_jax`)."""
    out = []
    for s, aval in zip(named or (None,) * len(avals), avals):
        if isinstance(s, LegacyHloSharding):  # positions only: the spec over mesh that fits
            out.append(_operations["named_from_hlo"](mesh, s.text, len(aval.shape)))
        else:
            out.append(None if s is None else s.on(mesh))
    return tuple(out)


_operations["shardings_jax"] = shardings_on


def hlo_shardings(named: Sequence[Any], avals: Sequence[Any]) -> tuple[Any, ...]:
    """XLA's HloSharding for each of ``named`` (None stays None), made by the executor
    (`_operations["hlo_sharding"]`, from XLA's text)."""
    make = _operations.get("hlo_sharding", str)
    return tuple(None if s is None else make(s.hlo_sharding_text(len(a.shape)))
                 for s, a in zip(named, avals))


# ---------------------------------------------------------------------------
# Writing.


def serialize(exported: Exported, vjp_order: int = 0) -> bytearray:
    """The bytes of ``exported`` in `jax.export`'s format; ``vjp_order`` VJPs
    (of VJPs) are included, so the deserialized function can be differentiated
    that many times in reverse mode."""
    builder = Builder()
    return builder.finish(_write_exported(builder, exported, vjp_order))


def _vector(builder: Builder, write: Callable[[Builder, Any], int], items: Any) -> int:
    return builder.reference_vector([write(builder, x) for x in items])


def _write_exported(b: Builder, exp: Exported, vjp_order: int) -> int:
    if exp.ordered_effects or exp.unordered_effects:
        # JAX 0.10.2 refuses at export ("serialization of host_callbacks is not yet
        # implemented"); lamella exports them for calls in this process only.
        raise NotImplementedError(
            f"cannot serialize {exp.fun_name}: it calls back into Python (effects "
            f"{[*exp.ordered_effects, *exp.unordered_effects]}), and the callbacks live only "
            "in this process (serialization of host_callbacks is not yet implemented)")
    unique_avals: dict[tuple, int] = {}
    for aval in itertools.chain(exp.in_avals, exp.out_avals):
        unique_avals.setdefault(_aval_key(aval), len(unique_avals))
    name = b.string(exp.fun_name)
    in_tree = _write_tree(b, exp.in_tree)
    in_avals = _vector(b, _write_aval, exp.in_avals)
    out_tree = _write_tree(b, exp.out_tree)
    out_avals = _vector(b, _write_aval, exp.out_avals)
    in_named = exp._in_named_shardings or (None,) * len(exp.in_avals)
    out_named = exp._out_named_shardings or (None,) * len(exp.out_avals)
    if any(isinstance(s, LegacyHloSharding) for s in (*in_named, *out_named)):
        raise ValueError("Exported being serialized must have named shardings after "
                         "3/17/2026.")  # JAX's refusal: its format stores no HloSharding now
    meshes: dict[tuple, int] = {}
    shardings: dict[AbstractNamedSharding, int] = {}
    for s in itertools.chain(in_named, out_named):
        if s is not None:
            meshes.setdefault(_mesh_key(s), len(meshes))
            shardings.setdefault(s, len(shardings))
    in_shardings = _vector(b, lambda b, s: _write_sharding(b, s, meshes), in_named)
    out_shardings = _vector(b, lambda b, s: _write_sharding(b, s, meshes), out_named)
    ordered = _vector(b, _write_effect, exp.ordered_effects)
    unordered = _vector(b, _write_effect, exp.unordered_effects)
    disabled = _vector(b, _write_disabled_check, exp.disabled_safety_checks)
    platforms = _vector(b, Builder.string, exp.platforms)
    module = b.bytes_vector(exp.mlir_module_serialized)
    kept = b.scalar_vector("H", exp.module_kept_var_idx)
    vjp = None
    if vjp_order > 0:
        if not exp.has_vjp():
            raise ValueError(f"cannot serialize {vjp_order} VJP orders of {exp.fun_name}: "
                             "it has no VJP")
        vjp = _write_exported(b, exp.vjp(), vjp_order - 1)
    uniques = _vector(b, _write_aval, [ShapedArray(*k) for k in unique_avals])
    no_meshes = _vector(b, _write_mesh, [_mesh_of(k) for k in meshes])
    no_named = _vector(b, lambda b, s: _write_named(b, s, meshes), list(shardings))
    in_idx = b.scalar_vector("I", [unique_avals[_aval_key(a)] for a in exp.in_avals])
    out_idx = b.scalar_vector("I", [unique_avals[_aval_key(a)] for a in exp.out_avals])
    # Index 0 means "no sharding"; 1 + i names the i-th unique named sharding.
    in_sh_idx = b.scalar_vector("I", [0 if s is None else 1 + shardings[s] for s in in_named])
    out_sh_idx = b.scalar_vector("I", [0 if s is None else 1 + shardings[s]
                                       for s in out_named])
    return b.table([
        (_EXP_VERSION, "H", _SERIALIZATION_VERSION), (_EXP_NAME, "offset", name),
        (_EXP_IN_TREE, "offset", in_tree), (_EXP_IN_AVALS, "offset", in_avals),
        (_EXP_OUT_TREE, "offset", out_tree), (_EXP_OUT_AVALS, "offset", out_avals),
        (_EXP_NR_DEVICES, "I", exp.nr_devices),
        (_EXP_IN_SHARDINGS, "offset", in_shardings),
        (_EXP_OUT_SHARDINGS, "offset", out_shardings),
        (_EXP_PLATFORMS, "offset", platforms), (_EXP_ORDERED, "offset", ordered),
        (_EXP_UNORDERED, "offset", unordered), (_EXP_DISABLED, "offset", disabled),
        (_EXP_MODULE, "offset", module), (_EXP_CC_VERSION, "H", exp.calling_convention_version),
        (_EXP_KEPT, "offset", kept), (_EXP_GLOBAL_CONSTS, "?", exp.uses_global_constants),
        (_EXP_VJP, "offset", vjp), (_EXP_UNIQUE_AVALS, "offset", uniques),
        (_EXP_UNIQUE_MESHES, "offset", no_meshes), (_EXP_UNIQUE_SHARDINGS, "offset", no_named),
        (_EXP_IN_AVAL_IDX, "offset", in_idx), (_EXP_OUT_AVAL_IDX, "offset", out_idx),
        (_EXP_IN_SHARDING_IDX, "offset", in_sh_idx),
        (_EXP_OUT_SHARDING_IDX, "offset", out_sh_idx),
    ])


def _aval_key(aval: Any) -> tuple:
    return (tuple(aval.shape), np.dtype(aval.dtype))


def _write_aval(b: Builder, aval: Any) -> int:
    dtype = np.dtype(aval.dtype)
    if dtype not in _DTYPE_CODE:
        raise ValueError(f"cannot serialize an array of dtype {dtype}")
    shape = _vector(b, Builder.string, [str(d) for d in aval.shape])
    return b.table([(_AVAL_KIND, "b", _SHAPED_ARRAY), (_AVAL_SHAPE, "offset", shape),
                    (_AVAL_DTYPE, "b", _DTYPE_CODE[dtype]), (_AVAL_MEMORY, "b", _MEMORY_DEVICE)])


def _mesh_key(s: AbstractNamedSharding) -> tuple:
    return (s.axis_sizes, s.axis_names, s.axis_types, s.device_kind, s.platform)


def _mesh_of(key: tuple) -> AbstractNamedSharding:
    sizes, names, types, kind, platform = key
    return AbstractNamedSharding(sizes, names, types, (), device_kind=kind, platform=platform)


def _write_mesh(b: Builder, s: AbstractNamedSharding) -> int:
    sizes = b.scalar_vector("I", list(s.axis_sizes))
    names = _vector(b, Builder.string, s.axis_names)
    types = b.scalar_vector("b", [_AXIS_TYPE_CODE[t] for t in s.axis_types])
    device = b.table([(_DEVICE_KIND, "offset", b.string(s.device_kind)),
                      (_DEVICE_PLATFORM, "offset", b.string(s.platform))])
    return b.table([(_MESH_SIZES, "offset", sizes), (_MESH_NAMES, "offset", names),
                    (_MESH_TYPES, "offset", types), (_MESH_DEVICE, "offset", device)])


def _write_named(b: Builder, s: AbstractNamedSharding, meshes: dict[tuple, int]) -> int:
    mesh = _write_mesh(b, s)
    partitions = _vector(b, lambda b, axes: b.table([(0, "offset", _vector(
        b, Builder.string, axes))]), s.spec)
    spec = b.table([(0, "offset", partitions), (1, "offset", b.reference_vector([])),
                    (2, "offset", b.reference_vector([]))])
    memory = None if s.memory_kind is None else b.string(s.memory_kind)
    return b.table([(_NAMED_MESH, "offset", mesh), (_NAMED_SPEC, "offset", spec),
                    (_NAMED_MEMORY, "offset", memory),
                    (_NAMED_MESH_IDX, "I", meshes[_mesh_key(s)])])


def _write_sharding(b: Builder, s: AbstractNamedSharding | None,
                    meshes: dict[tuple, int]) -> int:
    if s is None:
        return b.table([])
    return b.table([(_SHARDING_NAMED, "offset", _write_named(b, s, meshes))])


def _write_effect(b: Builder, effect: Any) -> int:
    return b.table([(0, "offset", b.string(str(effect)))])


def _write_disabled_check(b: Builder, check: DisabledSafetyCheck) -> int:
    target = None if check.target is None else b.string(check.target)
    return b.table([(_CHECK_KIND, "b", check.kind), (_CHECK_TARGET, "offset", target)])


def _write_tree(b: Builder, treedef: PyTreeDef) -> int:
    placeholder = tree_unflatten(treedef, [_Leaf()] * treedef.num_leaves)
    return _write_node(b, placeholder)


class _Leaf:
    """Stands for a leaf while a tree's structure is walked."""


def _write_node(b: Builder, node: Any) -> int:
    if isinstance(node, _Leaf):
        return b.table([(_TREE_KIND, "b", _LEAF)])
    if node is None:
        return b.table([(_TREE_KIND, "b", _NONE)])
    kind = type(node)
    names = custom_name = custom_aux = None
    if kind is tuple:
        tag, children = _TUPLE, list(node)
    elif kind is list:
        tag, children = _LIST, list(node)
    elif kind is dict:
        keys = sorted(node)
        if not all(isinstance(k, str) for k in keys):
            raise TypeError("Serialization is supported only for dictionaries with string "
                            f"keys; found keys {keys}")
        tag, children = _DICT, [node[k] for k in keys]
        names = _vector(b, Builder.string, keys)
    elif kind in _serializers:
        serialized_name, serialize_aux = _serializers[kind]
        tag = _CUSTOM
        children_iter, aux = flatten_one_level(node)
        children = list(children_iter)
        data = serialize_aux(aux)
        if not isinstance(data, (bytes, bytearray)):
            raise ValueError(f"serialize_auxdata for {kind} must return bytes, "
                             f"got {type(data)}")
        custom_name = b.string(serialized_name)
        custom_aux = b.bytes_vector(bytes(data))
    else:
        raise ValueError(f"Cannot serialize a pytree containing the unregistered type {kind}: "
                         "use export.register_pytree_node_serialization or "
                         "export.register_namedtuple_serialization.")
    child_vector = _vector(b, _write_node, children) if children else None
    return b.table([(_TREE_KIND, "b", tag), (_TREE_CHILDREN, "offset", child_vector),
                    (_TREE_NAMES, "offset", names), (_TREE_CUSTOM_NAME, "offset", custom_name),
                    (_TREE_CUSTOM_AUX, "offset", custom_aux)])


# ---------------------------------------------------------------------------
# Reading.


def deserialize(blob: bytes | bytearray | memoryview) -> Exported:
    """The `Exported` stored in ``blob`` (by `serialize`, or by JAX's
    `jax.export.serialize`). The bytes must be trusted: the module they hold runs."""
    data = bytes(blob)
    try:
        return _read_exported(root_table(data))
    except (ValueError, KeyError, UnicodeDecodeError, IndexError) as err:
        raise ValueError(f"not a serialized Exported, or a damaged one: {err}") from None


def _read_exported(t: Table) -> Exported:
    uniques = [_read_aval(a) for a in t.tables(_EXP_UNIQUE_AVALS)]
    meshes = [_read_mesh(m) for m in t.tables(_EXP_UNIQUE_MESHES)]
    named = [_read_named(n, meshes) for n in t.tables(_EXP_UNIQUE_SHARDINGS)]
    in_idx = t.scalars(_EXP_IN_AVAL_IDX, "I")
    out_idx = t.scalars(_EXP_OUT_AVAL_IDX, "I")
    in_avals = tuple(uniques[i] for i in in_idx) if in_idx else tuple(
        _read_aval(a) for a in t.tables(_EXP_IN_AVALS))
    out_avals = tuple(uniques[i] for i in out_idx) if out_idx else tuple(
        _read_aval(a) for a in t.tables(_EXP_OUT_AVALS))
    in_named = _read_shardings(t, _EXP_IN_SHARDING_IDX, _EXP_IN_SHARDINGS, named, meshes,
                               len(in_avals))
    out_named = _read_shardings(t, _EXP_OUT_SHARDING_IDX, _EXP_OUT_SHARDINGS, named, meshes,
                                len(out_avals))
    vjp_table = t.table(_EXP_VJP)
    get_vjp = None if vjp_table is None else (lambda _: _read_exported(vjp_table))
    nr_devices = t.scalar(_EXP_NR_DEVICES, "I", 0) or t.scalar(_EXP_NR_DEVICES_SHORT, "h", 0)
    return Exported(
        fun_name=t.string(_EXP_NAME) or "",
        in_tree=_read_tree(t.table(_EXP_IN_TREE)), in_avals=in_avals,
        out_tree=_read_tree(t.table(_EXP_OUT_TREE)), out_avals=out_avals,
        in_shardings_hlo=hlo_shardings(in_named, in_avals),
        out_shardings_hlo=hlo_shardings(out_named, out_avals),
        _in_named_shardings=in_named, _out_named_shardings=out_named,
        nr_devices=nr_devices, platforms=tuple(t.strings(_EXP_PLATFORMS)),
        ordered_effects=tuple(_read_effect(e) for e in t.tables(_EXP_ORDERED)),
        unordered_effects=tuple(_read_effect(e) for e in t.tables(_EXP_UNORDERED)),
        disabled_safety_checks=tuple(
            DisabledSafetyCheck(c.scalar(_CHECK_KIND, "b", 0), c.string(_CHECK_TARGET))
            for c in t.tables(_EXP_DISABLED)),
        mlir_module_serialized=t.bytes(_EXP_MODULE),
        calling_convention_version=t.scalar(_EXP_CC_VERSION, "H", 0),
        module_kept_var_idx=tuple(t.scalars(_EXP_KEPT, "H")),
        uses_global_constants=bool(t.scalar(_EXP_GLOBAL_CONSTS, "?", False)),
        _get_vjp=get_vjp)


def _read_mesh(t: Table) -> AbstractNamedSharding:
    device = t.table(_MESH_DEVICE)
    kind = (device.string(_DEVICE_KIND) if device is not None else None) or "cpu"
    platform = (device.string(_DEVICE_PLATFORM) if device is not None else None) or kind
    return AbstractNamedSharding(
        tuple(t.scalars(_MESH_SIZES, "I")), tuple(t.strings(_MESH_NAMES)),
        tuple(_CODE_AXIS_TYPE.get(c, "Auto") for c in t.scalars(_MESH_TYPES, "b")), (),
        device_kind=kind, platform=platform)


def _read_named(t: Table, meshes: list[AbstractNamedSharding]) -> AbstractNamedSharding:
    mesh = meshes[t.scalar(_NAMED_MESH_IDX, "I", 0)] if meshes else _read_mesh(t.table(
        _NAMED_MESH))
    spec_table = t.table(_NAMED_SPEC)
    if spec_table is not None and (spec_table.strings(1) or spec_table.strings(2)):
        raise ValueError("the function's shardings have reduced or unreduced axes, which "
                         "lamella does not support")
    spec = tuple(tuple(p.strings(0)) for p in spec_table.tables(0)) if spec_table else ()
    return dataclasses.replace(mesh, spec=spec, memory_kind=t.string(_NAMED_MEMORY))


def _read_shardings(t: Table, idx_slot: int, old_slot: int, named: list, meshes: list,
                    count: int) -> tuple:
    indices = t.scalars(idx_slot, "I")
    if indices:
        return tuple(None if i == 0 else named[i - 1] for i in indices)
    out = []
    for s in t.tables(old_slot):  # written before JAX's version 10: each one in full
        n = s.table(_SHARDING_NAMED)
        if n is not None:
            out.append(_read_named(n, meshes))
        elif s._field(_SHARDING_HLO_PROTO):  # before version 9: XLA's OpSharding proto,
            # read by the executor (a replicated one is empty, but present)
            out.append(LegacyHloSharding(_operations["hlo_sharding_text_from_proto"](
                s.bytes(_SHARDING_HLO_PROTO))))
        else:
            out.append(None)
    return tuple(out) if out else (None,) * count


def _read_effect(t: Table) -> Any:
    # JAX stores an effect as its class's name; the effects JAX can export are its own
    # (lamella's effects all come from host callbacks, which are never stored).
    raise ValueError(f"the function has the effect {t.string(0)!r}, which lamella cannot "
                     "reproduce")


def _read_aval(t: Table) -> ShapedArray:
    if t.scalar(_AVAL_KIND, "b", _SHAPED_ARRAY) != _SHAPED_ARRAY:
        raise ValueError("the function takes or returns tokens, which lamella cannot call")
    code = t.scalar(_AVAL_DTYPE, "b", 0)
    if code not in _CODE_DTYPE:
        raise ValueError(f"unknown dtype code {code} (typed PRNG keys are not supported)")
    return ShapedArray(symbolic_shape(",".join(t.strings(_AVAL_SHAPE))), _CODE_DTYPE[code])


def _read_tree(t: Table | None) -> PyTreeDef:
    if t is None:
        raise ValueError("missing pytree definition")
    return tree_structure(_read_node(t, itertools.repeat(0.0)))


def _read_node(t: Table, leaves: Iterator[Any]) -> Any:
    kind = t.scalar(_TREE_KIND, "b", _LEAF)
    children = [_read_node(c, leaves) for c in t.tables(_TREE_CHILDREN)]
    if kind == _LEAF:
        return next(leaves)
    if kind == _NONE:
        return None
    if kind == _TUPLE:
        return tuple(children)
    if kind == _LIST:
        return children
    if kind == _DICT:
        return dict(zip(t.strings(_TREE_NAMES), children))
    if kind == _CUSTOM:
        name = t.string(_TREE_CUSTOM_NAME)
        if name not in _deserializers:
            raise ValueError(f"Cannot deserialize a pytree containing the unregistered type "
                             f"{name!r}: use export.register_pytree_node_serialization.")
        deserialize_aux, from_children = _deserializers[name]
        return from_children(deserialize_aux(t.bytes(_TREE_CUSTOM_AUX)), children)
    raise ValueError(f"unknown pytree node kind {kind}")


_operations["serialize"] = serialize
