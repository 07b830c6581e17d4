"""Collectives lowered for devices: inside shard_map's (and pmap's) manual region, over
the mesh axes they name.

Each device runs partition `p` of the SPMD program, `p` being its position in
the mesh (row-major). A collective over axes `A` combines the partitions that
agree on every other mesh axis: those are its replica groups, each ordered by
the position along `A` (the first name most significant). `axis_index_groups`
splits each of them further: group `g` of the user's is the members at the
positions `g` lists. Ops carry channel handle 1 and `use_global_device_ids`, so
the group members are partition ids.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lamella.lax import lowering
from lamella.lax.lowering import hlo, ir, register_lowering
from lamella.lax.manual_regions import fully_manual, has_auto_axes, partition_position
from lamella.lax.parallel import (
    all_gather_p,
    all_to_all_p,
    axis_index_p,
    pmax_p,
    pmin_p,
    ppermute_p,
    psum_p,
    pvary_p,
    reduce_scatter_p,
)


def _mesh(ctx: Any, name: str) -> Any:
    mesh = ctx.module_context.axis_context
    if mesh is None:
        raise NotImplementedError(
            f"{name} over a named axis reached the compiler outside pmap and shard_map: bind "
            "the axis with vmap(..., axis_name=...), pmap(..., axis_name=...) or shard_map")
    return mesh


def _axes(axis_name: Any) -> tuple:
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


def replica_groups(mesh: Any, axes: tuple, axis_index_groups: Any = None) -> np.ndarray:
    """The partition ids of each group of devices a collective over `axes` combines,
    one row per group, ordered by position along `axes` (or as `axis_index_groups`
    orders them; groups shorter than the longest are padded with -1, as XLA takes
    them)."""
    for a in axes:
        if a not in mesh.axis_names:
            raise NameError(f"unbound axis name: {a!r} is not an axis of the mesh "
                            f"{mesh.axis_names}")
    positions = np.arange(mesh.size).reshape(mesh.axis_sizes)
    inner = [mesh.axis_names.index(a) for a in axes]
    outer = [i for i in range(len(mesh.axis_names)) if i not in inner]
    size = math.prod(mesh.axis_sizes[i] for i in inner)
    rows = positions.transpose(outer + inner).reshape(-1, size)
    if axis_index_groups is None:
        return rows
    width = max(len(g) for g in axis_index_groups)
    return np.array([list(row[list(g)]) + [-1] * (width - len(g))
                     for row in rows for g in axis_index_groups], np.int64)


def _groups_attr(groups: np.ndarray) -> ir.Attribute:
    return ir.DenseIntElementsAttr.get(np.ascontiguousarray(groups, np.int64))


def _channel() -> ir.Attribute:
    return hlo.ChannelHandle.get(handle=1, type=1)


def _reducer(op: ir.Operation, dtype_type: ir.Type, combine: Any) -> None:
    scalar = ir.RankedTensorType.get([], dtype_type)
    block = op.regions[0].blocks.append(scalar, scalar)
    with ir.InsertionPoint(block):
        hlo.return_([combine(*block.arguments)])


def _element_type(value: ir.Value) -> ir.Type:
    return ir.RankedTensorType(value.type).element_type


def _alone(groups: np.ndarray) -> bool:
    """Every group one device: the collective leaves values as they are (and XLA takes
    none where no axis is manual, as in a region manual over axes of size 1)."""
    return groups.shape[1] == 1


def _all_reduce(combine: Any, name: str):
    def rule(ctx, *args, axes, axis_index_groups):
        groups = replica_groups(_mesh(ctx, name), _axes(axes), axis_index_groups)
        if _alone(groups):
            return list(args)
        outs = []
        for x in args:
            op = hlo.AllReduceOp([x.type], [x], _groups_attr(groups), channel_handle=_channel(),
                                 use_global_device_ids=True)
            _reducer(op, _element_type(x), combine)
            outs.append(op.results[0])
        return outs
    return rule


def _max(a, b):
    return hlo.maximum(a, b)


def _min(a, b):
    return hlo.minimum(a, b)


def _or_for_bool(combine: Any, boolean: Any):
    def pick(a: ir.Value, b: ir.Value) -> ir.Value:
        element = ir.RankedTensorType(a.type).element_type
        is_bool = isinstance(element, ir.IntegerType) and element.width == 1
        return boolean(a, b) if is_bool else combine(a, b)
    return pick


register_lowering(psum_p, _all_reduce(_or_for_bool(hlo.add, hlo.or_), "psum"))
register_lowering(pmax_p, _all_reduce(_or_for_bool(_max, hlo.or_), "pmax"))
register_lowering(pmin_p, _all_reduce(_or_for_bool(_min, hlo.and_), "pmin"))


def _axis_index(ctx, *, axis_name):
    mesh = _mesh(ctx, "axis_index")
    if math.prod(mesh.shape[a] for a in _axes(axis_name)) == 1:
        return [lowering.ir_constant(np.int32(0))]
    annotate = "{manual}" if has_auto_axes(mesh) else None
    axes = _axes(axis_name)
    return [fully_manual(mesh, None, lambda _: partition_position(mesh, axes, annotate))]


register_lowering(axis_index_p, _axis_index)


def _all_gather(ctx, x, *, all_gather_dimension, axis_name, axis_index_groups, axis_size,
                tiled):
    groups = replica_groups(_mesh(ctx, "all_gather"), _axes(axis_name), axis_index_groups)
    aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
    if not tiled:
        shape = list(aval_in.shape)
        shape.insert(all_gather_dimension, 1)
        x = hlo.reshape(lowering.aval_to_ir_type(aval_in.update(shape=tuple(shape))), x)
    if _alone(groups):
        return [x]

    def gather(x):
        return hlo.AllGatherOp([lowering.aval_to_ir_type(aval_out)], [x], all_gather_dimension,
                               _groups_attr(groups), channel_handle=_channel(),
                               use_global_device_ids=True).results[0]
    return [fully_manual(ctx.module_context.axis_context, x, gather)]


register_lowering(all_gather_p, _all_gather)


def _reduce_scatter(ctx, x, *, scatter_dimension, axis_name, axis_index_groups, axis_size,
                    tiled):
    groups = replica_groups(_mesh(ctx, "psum_scatter"), _axes(axis_name), axis_index_groups)
    aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
    shape = list(aval_in.shape)
    shape[scatter_dimension] //= groups.shape[1]
    scattered = aval_in.update(shape=tuple(shape))
    if _alone(groups):
        return [hlo.reshape(lowering.aval_to_ir_type(aval_out), x)]
    op = hlo.ReduceScatterOp(lowering.aval_to_ir_type(scattered), x, scatter_dimension,
                             _groups_attr(groups), channel_handle=_channel(),
                             use_global_device_ids=True)
    _reducer(op, _element_type(x), hlo.add)
    out = op.results[0]
    if not tiled:
        out = hlo.reshape(lowering.aval_to_ir_type(aval_out), out)
    return [out]


register_lowering(reduce_scatter_p, _reduce_scatter)


def _all_to_all(ctx, x, *, split_axis, concat_axis, axis_name, axis_index_groups, tiled):
    groups = replica_groups(_mesh(ctx, "all_to_all"), _axes(axis_name), axis_index_groups)
    n = groups.shape[1]
    aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
    if _alone(groups):
        return [hlo.reshape(lowering.aval_to_ir_type(aval_out), x)]
    mesh = ctx.module_context.axis_context
    if tiled:
        return [fully_manual(mesh, x, lambda x: hlo.AllToAllOp(
            [x], split_axis, concat_axis, n, _groups_attr(groups),
            channel_handle=_channel()).results[0])]
    # One member per chunk: a size-1 axis where the gathered axis goes, exchanged
    # along the split axis, which then drops out.
    where = concat_axis if concat_axis <= split_axis else concat_axis + 1
    split = split_axis + (1 if where <= split_axis else 0)
    shape = list(aval_in.shape)
    shape.insert(where, 1)
    x = hlo.reshape(lowering.aval_to_ir_type(aval_in.update(shape=tuple(shape))), x)
    exchanged = fully_manual(mesh, x, lambda x: hlo.AllToAllOp(
        [x], split, where, n, _groups_attr(groups), channel_handle=_channel()).results[0])
    return [hlo.reshape(lowering.aval_to_ir_type(aval_out), exchanged)]


register_lowering(all_to_all_p, _all_to_all)


def _ppermute(ctx, x, *, axis_name, perm):
    groups = replica_groups(_mesh(ctx, "ppermute"), _axes(axis_name))
    if _alone(groups):  # the one member sends to itself, or nothing (zeros)
        aval = ctx.avals_in[0]
        return [x if perm else lowering.ir_constant(np.zeros(aval.shape, aval.dtype))]
    pairs = [(int(g[s]), int(g[d])) for g in groups for s, d in perm]
    attr = ir.DenseIntElementsAttr.get(np.array(pairs, np.int64).reshape(-1, 2))
    op = hlo.CollectivePermuteOp(x, attr, channel_handle=_channel())
    return [op.results[0]]


register_lowering(ppermute_p, _ppermute)
# pcast to varying changes only the type: the value is already on every member.
register_lowering(pvary_p, lambda ctx, x, *, axes: [x])
