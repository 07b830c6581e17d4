"""XLA's manual regions in lowered programs (shard_map's, pmap's): the sharding
annotations a value may carry inside one, and the small regions manual over every
mesh axis that some operations need where other axes stay Auto.

Inside a manual region XLA's partitioner aborts the process on any annotation that
is not a manual or manual-subgroup sharding, so every annotation written there comes
from `manual_region_sharding` or `subgroup_sharding`. Meshes here type the region's
manual axes Manual (as `manual_mesh` makes them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lamella.core.sharding import AxisType, Mesh, NamedSharding
from lamella.lax import lowering
from lamella.lax.lowering import hlo, ir

Spec = tuple  # a normalized PartitionSpec: one tuple of axis names per dimension


def mesh_parts(mesh: Mesh, names: tuple) -> int:
    """How many parts the mesh axes `names` split a dimension into."""
    return math.prod(mesh.shape[n] for n in names)


def subgroup_sharding(mesh: Mesh, spec: Spec, manual: frozenset) -> str:
    """XLA's sharding (HloSharding text, devices as mesh positions) of a value split over
    the axes `spec` names and manual over the axes `manual` (the devices that differ
    only along those hold independent values): a subgroup per manual device set, the
    devices left over holding copies."""
    names = list(mesh.axis_names)
    split = [n for entry in spec for n in entry]
    manual_names = [n for n in names if n in manual]
    copies = [n for n in names if n not in split and n not in manual]
    tiles = [mesh_parts(mesh, entry) for entry in spec]
    n_manual, n_copies = mesh_parts(mesh, tuple(manual_names)), mesh_parts(mesh, tuple(copies))
    if n_manual == 1 and math.prod(tiles) == 1:
        return "{replicated}"
    if n_manual == mesh.size:
        return "{manual}"
    order = [names.index(n) for n in split + manual_names + copies]
    positions = np.arange(mesh.size).reshape(mesh.axis_sizes).transpose(order)
    dims, kinds = list(tiles), []
    for size, kind in ((n_manual, "manual"), (n_copies, "replicated")):
        if size > 1:
            dims.append(size)
            kinds.append(kind)
    ids = ",".join(map(str, positions.flat))
    text = "{devices=[" + ",".join(map(str, dims)) + "]" + ids
    if kinds == ["replicated"]:
        return text + " last_tile_dim_replicate}"
    return text + (" last_tile_dims={" + ", ".join(kinds) + "}" if kinds else "") + "}"


def manual_region_sharding(region: Mesh, sharding: NamedSharding, ndim: int) -> str | None:
    """The annotation (HloSharding text) that lays a value out as `sharding` says inside a
    manual region (shard_map's, pmap's) whose mesh `region` types its manual axes Manual;
    None: nothing to say. Every annotation written there must be one of these: XLA aborts
    the process on any other. It can split the block only over the axes that stay Auto
    (a manual-subgroup sharding); where every axis is manual, a layout naming no axis
    says nothing, and naming a manual axis is an error.

    >>> import lamella.core as lc
    >>> from lamella.core.sharding import P
    >>> region = Mesh(np.array(lc.devices()[:1]).reshape(1, 1), ("x", "y"),
    ...               (AxisType.Manual, AxisType.Auto))
    >>> manual_region_sharding(region, NamedSharding(region, P(None, "y")), 2)
    '{replicated}'
    >>> manual_region_sharding(region, NamedSharding(region, P("x")), 2)
    Traceback (most recent call last):
    ValueError: The spec of NamedSharding passed to with_sharding_constraint can only refer ...
    """
    manual = frozenset(n for n, t in zip(region.axis_names, region.axis_types)
                       if t == AxisType.Manual)
    spec = sharding.spec._normalized(ndim)
    named = [n for names in spec for n in names]
    if any(n in manual or n not in region.axis_names for n in named):
        raise ValueError(
            "The spec of NamedSharding passed to with_sharding_constraint can only refer to "
            f"Auto axes of the mesh. Got spec={sharding.spec!r} and mesh="
            f"{region.abstract_mesh!r}. You probably meant to use `reshard` API? (Inside "
            f"shard_map the axes {sorted(manual, key=region.axis_names.index)} are manual: "
            "each device already holds its own block along them.)")
    if named and (sharding.mesh.shape != region.shape or any(
            a.id != b.id for a, b in zip(sharding.mesh.devices.flat, region.devices.flat))):
        raise ValueError(
            f"with_sharding_constraint inside shard_map: the sharding's mesh "
            f"{sharding.mesh._short()} is not the mesh of the enclosing shard_map "
            f"{region._short()}")
    if len(manual) == len(region.axis_names):
        return None
    return subgroup_sharding(region, spec, manual)


def manual_mesh(mesh: Mesh, manual: frozenset) -> Mesh:
    return Mesh(mesh.devices, mesh.axis_names,
                [AxisType.Manual if n in manual else t
                 for n, t in zip(mesh.axis_names, mesh.axis_types)])


def partition_position(mesh: Any, axes: tuple, annotate: str | None = None) -> ir.Value:
    """This partition's position along `axes` (an i32 scalar); `annotate`: the
    partition id's sharding."""
    i32 = ir.IntegerType.get_signless(32)
    scalar = ir.RankedTensorType.get([], i32)
    partition = hlo.PartitionIdOp()
    if annotate is not None:
        partition.operation.attributes["mhlo.sharding"] = ir.StringAttr.get(annotate)
    pid = hlo.convert(scalar, partition.result)
    sizes = dict(zip(mesh.axis_names, mesh.axis_sizes))
    names = list(mesh.axis_names)
    total = None
    for a in axes:
        stride = math.prod(mesh.axis_sizes[names.index(a) + 1:])
        coord = hlo.remainder(hlo.divide(pid, lowering.ir_constant(np.int32(stride))),
                              lowering.ir_constant(np.int32(sizes[a])))
        total = coord if total is None else hlo.add(
            hlo.multiply(total, lowering.ir_constant(np.int32(sizes[a]))), coord)
    return total


def has_auto_axes(mesh: Any) -> bool:
    """Whether some mesh axes stay Auto where the op is (the context mesh types the
    manual ones Manual)."""
    return any(t != AxisType.Manual for t in mesh.axis_types)


def marked(value: ir.Value, target: str, sharding: str) -> ir.Value:
    op = hlo.CustomCallOp([value.type], [value], call_target_name=target)
    op.attributes["mhlo.sharding"] = ir.StringAttr.get(sharding)
    return op.results[0]


def whole_in_subgroup(mesh: Any, value: ir.Value) -> str:
    """The sharding of a value every device of a manual subgroup holds whole."""
    manual = frozenset(n for n, t in zip(mesh.axis_names, mesh.axis_types)
                       if t == AxisType.Manual)
    return subgroup_sharding(mesh, ((),) * ir.RankedTensorType(value.type).rank, manual)


def fully_manual(mesh: Any, x: ir.Value | None, build: Any) -> ir.Value:
    """`build(x)` where every mesh axis is manual: where some stay Auto, XLA's
    partitioner takes partition_id, all_gather and all_to_all only there (else it
    aborts), so `x` enters a region manual over those axes too, whole on each device
    of them, and the result leaves it the same way."""
    if not has_auto_axes(mesh):
        return build(x)
    if x is not None:
        x = marked(marked(x, "Sharding", whole_in_subgroup(mesh, x)), "SPMDFullToShardShape",
                    "{manual}")
    y = marked(build(x), "Sharding", "{manual}")
    return marked(y, "SPMDShardToFullShape", whole_in_subgroup(mesh, y))


def once_per_subgroup(module: Any, operands: Sequence[ir.Value], ordered: bool,
                      emit: Callable[[list[ir.Value]], None]) -> None:
    """Emits a host callback without results, `emit(values)`, so that it runs once for
    each manual subgroup of a region whose other mesh axes are not manual (as JAX runs
    debug callbacks there): on the subgroup's first device, in a region manual over
    every axis (XLA's partitioner places no callback itself in a manual subgroup),
    with the operands whole there. An ordered callback's token goes through."""
    mesh = module.axis_context
    values = [marked(marked(x, "Sharding", whole_in_subgroup(mesh, x)), "SPMDFullToShardShape",
                      "{manual}") for x in operands]
    others = tuple(n for n, t in zip(mesh.axis_names, mesh.axis_types)
                   if t != AxisType.Manual)
    first = hlo.compare(partition_position(mesh, others, "{manual}"),
                        lowering.ir_constant(np.int32(0)),
                        hlo.ComparisonDirectionAttr.get("EQ"))
    outer = ir.InsertionPoint.current.block
    token = (module.effect_tokens.get(outer) or hlo.after_all([])) if ordered else None
    branch = hlo.IfOp([token.type] if ordered else [], first)
    module.axis_context = manual_mesh(mesh, frozenset(mesh.axis_names))
    try:
        then = branch.true_branch.blocks.append()
        with ir.InsertionPoint(then):
            if ordered:
                module.effect_tokens[then] = token
            emit(values)
            hlo.return_([module.effect_tokens[then]] if ordered else [])
        with ir.InsertionPoint(branch.false_branch.blocks.append()):
            hlo.return_([token] if ordered else [])
    finally:
        module.axis_context = mesh
    if ordered:
        module.effect_tokens[outer] = branch.results[0]
