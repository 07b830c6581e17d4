"""Explicit sharding for lax: the sharding rules of lax's primitives, the types of
runtime Arrays, and the layouts typed values get in the lowered program.

Under a mesh with Explicit axes a committed Array's type carries its NamedSharding
(`typeof(x)` is `f32[8@x,4@y]`); the rules here say how each lax primitive's
result is laid out (JAX 0.10.2's rules, its errors included), and every lowered
value whose type is sharded is pinned there with a sharding annotation, so XLA's
partitioner produces exactly the typed layout.

>>> from lamella.core.sharding_rules import sharding_rules
>>> import lamella.lax as lax
>>> lax.dot_general_p in sharding_rules and lax.sin_p in sharding_rules
True
"""

from __future__ import annotations

import functools
import sys
import types
from typing import Any

from lamella.core import batching
from lamella.core.avals import ShapedArray, explicit_sharding
from lamella.core.primitive import Primitive
from lamella.core.sharding import (
    AxisType,
    NamedSharding,
    PartitionSpec,
    as_named,
    reshard,
    with_sharding_constraint,
)
from lamella.core.sharding_rules import (
    ShardingTypeError,
    _axes_size,
    _entry,
    check_distinct,
    elementwise_rule,
    reduce_axes_rule,
    same_as_first,
    sharding_rules,
    spec_of,
    typed_aval,
)
from lamella.core.trace import aval_of
from lamella.lax import executor, lowering
from lamella.lax.lowering import hlo, ir
from lamella.lax.manual_regions import manual_region_sharding
from lamella.lax.standard import broadcast_batcher


def array_aval(x: Any) -> ShapedArray:
    """The type of a runtime Array: its aval, with its layout when that is explicit."""
    named = getattr(x._sharding, "named", None)  # only arrays over several devices have one
    return x.aval if named is None else typed_aval(x.aval, named)


def pin_typed_layouts(avals: Any, values: list, region: Any = None) -> list:
    """`values` (an equation's lowered results), each one whose type is sharded wrapped
    in a sharding annotation of that layout; inside a manual region (`region`: its mesh,
    manual axes typed Manual) the annotation is the region's manual-subgroup form."""
    out = []
    for aval, value in zip(avals, values):
        sharding = getattr(aval, "sharding", None)
        text = None if sharding is None else sharding.hlo_sharding_text(len(aval.shape)) \
            if region is None else manual_region_sharding(region, sharding, len(aval.shape))
        if text is not None:
            op = hlo.CustomCallOp([value.type], [value], call_target_name="Sharding")
            op.attributes["mhlo.sharding"] = ir.StringAttr.get(text)
            value = op.results[0]
        out.append(value)
    return out


def with_out_sharding(x: Any, sharding: NamedSharding | None) -> Any:
    """`x` resharded to what an `out_sharding=` argument asked for (None: as it is)."""
    return x if sharding is None else reshard(x, sharding)


def traced_device_put(x: Any, device: Any) -> Any:
    """`device_put(x, device)` while tracing: to a sharding (or a PartitionSpec over the
    current mesh) it is a reshard under Explicit axes and a sharding constraint under
    Auto ones, as JAX does under jit; to a device, or none, the identity."""
    from lamella.lax.identities import ArrayCopySemantics, device_put_p
    if isinstance(device, (NamedSharding, PartitionSpec)):
        named = as_named(device, "device_put")
        if AxisType.Explicit in named.mesh.axis_types:
            return reshard(x, named)
        return with_sharding_constraint(x, named)
    return device_put_p.bind(x, devices=(device,), srcs=(None,),
                             copy_semantics=(ArrayCopySemantics.REUSE_INPUT,))[0]


def unshard_dims(x: Any, dims: Any = None) -> Any:
    """`x` with the dimensions `dims` (default: all) no longer split in its type: what an
    operation given `out_sharding=` does first where its rule could not decide a layout
    (the compiler moves the data; the values are the same)."""
    try:
        aval = aval_of(x)
    except TypeError:  # a list or other array-like: not sharded
        return x
    if getattr(aval, "sharding", None) is None:
        return x
    spec = list(spec_of(aval))
    for d in range(len(spec)) if dims is None else dims:
        spec[d] = None
    return reshard(x, NamedSharding(aval.sharding.mesh, PartitionSpec(*spec)))


def updates_like_gather(operand: Any, indices: Any, updates: Any,
                        dimension_numbers: Any) -> Any:
    """A scatter's `updates` laid out as the gather of `operand` at `indices` would be
    (JAX's `x.at[...]` broadcasts its values so): unsplit values then fit a split
    operand. Unchanged when `operand`'s type has no layout, or that gather has none."""
    op, up, idx = aval_of(operand), aval_of(updates), aval_of(indices)
    if getattr(op, "sharding", None) is None:
        return updates
    dn = dimension_numbers
    windows = iter(up.shape[d] for d in dn.update_window_dims)
    sizes = tuple(1 if d in dn.inserted_window_dims or d in dn.operand_batching_dims
                  else next(windows) for d in range(len(op.shape)))
    gather = types.SimpleNamespace(
        offset_dims=dn.update_window_dims, collapsed_slice_dims=dn.inserted_window_dims,
        start_index_map=dn.scatter_dims_to_operand_dims,
        operand_batching_dims=dn.operand_batching_dims,
        start_indices_batching_dims=dn.scatter_indices_batching_dims)
    try:
        (spec,) = _gather_rule([spec_of(op), spec_of(idx)], [op, idx], [up],
                               dimension_numbers=gather, slice_sizes=sizes)
    except ShardingTypeError:  # the scatter's own rule gives JAX's error
        return updates
    if spec == spec_of(up):
        return updates
    return reshard(updates, NamedSharding(op.sharding.mesh, PartitionSpec(*spec)))


def cotangent_layout(primal: ShapedArray, *others: Any) -> NamedSharding | None:
    """Where a contraction's transpose puts an operand's cotangent: the primal's layout
    (unsplit when the primal's type has none); None when nothing is explicitly sharded."""
    if primal.sharding is not None:
        return primal.sharding
    for x in others:
        sharding = getattr(aval_of(x), "sharding", None)
        if sharding is not None:
            return NamedSharding(sharding.mesh, PartitionSpec())
    return None


def cotangent_dims_to_unshard(ct: Any, other: Any, ct_contract: Any, other_kept: Any
                              ) -> list[int]:
    """The dimensions of a cotangent `ct` to unsplit before contracting it with `other`
    in a transpose: those contracted (a split on both sides has no typed result) and
    those split over a mesh axis that `other`'s kept dimensions use."""
    ct_spec, other_spec = spec_of(aval_of(ct)), spec_of(aval_of(other))
    used = {n for d in other_kept for n in _names(other_spec[d])}
    return [d for d, e in enumerate(ct_spec)
            if d in set(ct_contract) or used & set(_names(e))]


def like_sharding(x: Any, result: Any) -> Any:
    """`result` (of `x`'s shape) laid out as `x`'s type says: `zeros_like` and kin keep
    their argument's sharding (JAX)."""
    sharding = getattr(aval_of(x), "sharding", None)
    if sharding is None or aval_of(result).shape != aval_of(x).shape:
        return result
    return reshard(result, sharding)


# ---------------------------------------------------------------------------
# Rules.


def _names(entry: Any) -> tuple:
    return () if entry is None else entry if isinstance(entry, tuple) else (entry,)


def _dot_general_rule(specs, in_avals, outs, *, dimension_numbers, **params):
    (lc, rc), (lb, rb) = dimension_numbers
    ls, rs = specs
    for l, r in zip(lc, rc):
        if ls[l] is not None and ls[l] == rs[r]:
            raise ShardingTypeError(
                "Contracting dimensions are sharded and it is ambiguous how the output should "
                "be sharded. Please specify the output sharding via the `out_sharding` "
                f"parameter. Got lhs_contracting_spec={_names(ls[l])} and "
                f"rhs_contracting_spec={_names(rs[r])}")
    batch = []
    for l, r in zip(lb, rb):
        if ls[l] is not None and rs[r] is not None and ls[l] != rs[r]:
            raise ShardingTypeError(
                f"dot_general requires lhs batch dimensions and rhs batch dimensions to have "
                f"the consistent sharding, got {ls[l]!r} and {rs[r]!r}.")
        batch.append(ls[l] if ls[l] is not None else rs[r])
    lfree = [ls[d] for d in range(len(ls)) if d not in lc and d not in lb]
    rfree = [rs[d] for d in range(len(rs)) if d not in rc and d not in rb]
    spec = (*batch, *lfree, *rfree)
    return [check_distinct("dot_general", in_avals, outs[0], spec)]


def _unsharded_along(what: str, message: str):
    def rule(specs, in_avals, outs, **params):
        axis = params[what]
        if specs[0][axis] is not None:
            raise ShardingTypeError(message.format(aval=in_avals[0], axis=axis,
                                                   sharding=in_avals[0].sharding))
        return [specs[0]] * len(outs)
    return rule


def _sort_rule(specs, in_avals, outs, *, dimension, **params):
    for spec, aval in zip(specs, in_avals):
        if spec[dimension] is not None:
            raise ShardingTypeError(
                f"Arguments to sort must be unsharded over the sorting dimension. Got arg "
                f"sharding={aval.sharding} and sorting dimension={dimension}")
    # Operands split alike; one whose type has no layout (lamella.numpy's argsort builds
    # its positions so) takes the others' (JAX's error would need them resharded).
    sharded = [s for s, a in zip(specs, in_avals) if a.sharding is not None]
    if any(s != sharded[0] for s in sharded[1:]):
        shown = " ".join(str(_named(in_avals, s)) for s in sharded)
        raise ShardingTypeError(f"Arguments to sort must have equal shardings, got: {shown}")
    return [sharded[0]] * len(outs)


def _top_k_rule(specs, in_avals, outs, **params):
    axis = params.get("axis", len(specs[0]) - 1)
    if specs[0][axis] is not None:
        raise ShardingTypeError(
            "The input should be unsharded over the axis along which to compute the top_k "
            f"values. Got input type={in_avals[0]} and axis={axis}")
    return [specs[0]] * len(outs)


def _same_shardings(name: str):
    def rule(specs, in_avals, outs, **params):
        arrays = [(s, a) for s, a in zip(specs, in_avals) if a.shape]
        if any(s != arrays[0][0] for s, _ in arrays):
            shown = ", ".join(repr(NamedSharding(a.sharding.mesh if a.sharding else
                                                 _mesh(in_avals), PartitionSpec(*s)))
                              for s, a in arrays)
            raise ShardingTypeError(f"{name}: All operands should have the same sharding. "
                                    f"Got shardings {shown}")
        return [arrays[0][0]] * len(outs)
    return rule


def _mesh(avals):
    return next(a.sharding.mesh for a in avals if getattr(a, "sharding", None) is not None)


def _select_n_rule(specs, in_avals, outs, **params):
    # Cases with no sharding in their type (broadcast scalars) fit any layout; sharded
    # ones must agree, as must a non-scalar `which` that is sharded.
    sharded = [s for s, a in zip(specs[1:], in_avals[1:]) if a.sharding is not None]
    if any(s != sharded[0] for s in sharded):
        raise ShardingTypeError(
            f"select cases must have the same shardings, got "
            f"[{', '.join(str(a) for a in in_avals[1:])}].")
    case = sharded[0] if sharded else specs[0]
    if in_avals[0].shape and in_avals[0].sharding is not None and specs[0] != case:
        raise ShardingTypeError(
            f"select `which` must be scalar or have the same sharding as cases, got `which` "
            f"type {in_avals[0]} but case type {next(a for a in in_avals[1:] if a.sharding)}.")
    return [case]


def _resized_dims_rule(name: str):
    """slice, dynamic_slice, pad (`name` as JAX's messages word it): a sharded dimension
    may change size only to a multiple of its shards."""
    def rule(specs, in_avals, outs, **params):
        spec, mesh = specs[0], _mesh(in_avals)
        for d, (old, new) in enumerate(zip(in_avals[0].shape, outs[0].shape)):
            parts = _axes_size(mesh.shape, spec[d])
            if old != new and parts > 1 and new % parts:
                raise ShardingTypeError(
                    f"{name} on sharded dims where out dim ({new}) is not divisible by mesh "
                    f"axes ({parts}) with spec ({','.join(_names(spec[d]))}) is not "
                    f"implemented. Got input type={in_avals[0].str_short()} and output "
                    f"shape={outs[0].shape}")
        return [spec]
    return rule


def _dynamic_update_slice_rule(specs, in_avals, outs, **params):
    if specs[1] != specs[0]:
        mesh = _mesh(in_avals)
        axes = tuple(n for n, t in zip(mesh.axis_names, mesh.axis_types)
                     if t.name == "Explicit")
        raise ShardingTypeError(
            "dynamic_update_slice operand sharding must be equal to update sharding, got "
            f"operand sharding {in_avals[0]}({{Explicit: {axes}}}) and update sharding "
            f"{in_avals[1]}({{Explicit: {axes}}}).")
    return [specs[0]]


def _squeeze_rule(specs, in_avals, outs, *, dimensions):
    gone = {d % len(specs[0]) for d in dimensions}
    return [tuple(e for d, e in enumerate(specs[0]) if d not in gone)]


def _concatenate_rule(specs, in_avals, outs, *, dimension):
    return _same_shardings("concatenate")(specs, in_avals, outs)


def _each_as_its_operand(specs, in_avals, outs, **params):
    return list(specs[:len(outs)])


def _scan_rule(specs, in_avals, outs, *, jaxpr, num_consts, num_carry, **params):
    for spec in specs[num_consts + num_carry:]:
        if spec and spec[0] is not None:
            raise ValueError("0th dimension of all xs should be replicated. Got "
                             f"{PartitionSpec(*spec)!r}")
    body = [spec_of(a) for a in jaxpr.out_avals]
    return body[:num_carry] + [(None, *s) for s in body[num_carry:]]


def _shard_map_rule(specs, in_avals, outs, *, mesh, out_specs, **params):
    return [tuple(map(_entry, PartitionSpec(*s)._normalized(len(o.shape))))
            for s, o in zip(out_specs, outs)]


def _gather_rule(specs, in_avals, outs, *, dimension_numbers, slice_sizes, **params):
    """A gather's result takes the operand's layout on its unsliced (window) dimensions
    and the indices' on the query dimensions; a sliced-in dimension that is split, a
    split query dimension (unless batched with the operand) or a batch pair split two
    ways has no typed result (JAX: give `out_sharding=`)."""
    dn = dimension_numbers
    operand, indices = specs
    if all(e is None for e in operand) and all(e is None for e in indices):
        return [(None,) * len(outs[0].shape)]
    batch = dict(zip(dn.operand_batching_dims, dn.start_indices_batching_dims))
    decidable = (
        all(slice_sizes[d] == in_avals[0].shape[d] or operand[d] is None
            for d in dn.start_index_map)
        and all(operand[o] is None or indices[i] is None or operand[o] == indices[i]
                for o, i in batch.items())
        and all(e is None for d, e in enumerate(indices)
                if d not in dn.start_indices_batching_dims))
    if not decidable:
        raise ShardingTypeError(
            "Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
            "indexing as out sharding could not be resolved unambiguously (or would require "
            f"collectives on inputs). Got operand={in_avals[0]!r}, indices={in_avals[1]!r}")
    queries = list(indices[:-1])  # the last dimension holds the index vectors
    for o, i in batch.items():
        queries[i] = queries[i] if queries[i] is not None else operand[o]
    windows = iter(operand[d] for d in range(len(operand))
                   if d not in dn.collapsed_slice_dims and d not in dn.operand_batching_dims)
    query_iter = iter(queries)
    spec = tuple(next(windows) if d in dn.offset_dims else next(query_iter)
                 for d in range(len(outs[0].shape)))
    return [check_distinct("gather", in_avals, outs[0], spec)]


def _scatter_rule(specs, in_avals, outs, *, dimension_numbers, **params):
    """A scatter keeps the operand's layout; its windows must match the updates' (full
    windows) or be unsplit (partial ones), and the query dimensions of the indices and
    updates unsplit unless batched with the operand (JAX's rule, as the gather's inverse)."""
    dn = dimension_numbers
    operand, indices, updates = specs
    if all(e is None for s in specs for e in s):
        return [operand]
    update_queries = [d for d in range(len(updates)) if d not in dn.update_window_dims]
    update_batch = [update_queries[i] for i in dn.scatter_indices_batching_dims]
    batches = list(zip(dn.operand_batching_dims, dn.scatter_indices_batching_dims,
                       update_batch))
    operand_windows = [d for d in range(len(operand)) if d not in dn.inserted_window_dims
                       and d not in dn.operand_batching_dims]
    windows = list(zip(dn.update_window_dims, operand_windows))
    op_shape, up_shape = in_avals[0].shape, in_avals[2].shape
    decidable = (
        all(len({e for e in (operand[o], indices[i], updates[u]) if e is not None}) <= 1
            for o, i, u in batches)
        and all((up_shape[u] == op_shape[o] and updates[u] == operand[o])
                or (updates[u] is None and operand[o] is None) for u, o in windows)
        and all(operand[d] is None for d in dn.inserted_window_dims)
        and all(e is None for d, e in enumerate(updates)
                if d not in update_batch and d not in dn.update_window_dims)
        and all(e is None for d, e in enumerate(indices[:-1])
                if d not in dn.scatter_indices_batching_dims)
        and indices[-1] is None)
    if not decidable:
        raise ShardingTypeError(
            "Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec "
            "for the scatter update as out sharding could not be resolved unambiguously (or "
            f"would require collectives on inputs). Got operand={in_avals[0]!r}, "
            f"indices={in_avals[1]!r}, updates={in_avals[2]!r}")
    out = list(operand)
    for o, i, u in batches:
        out[o] = out[o] if out[o] is not None else indices[i] or updates[u]
    for u, o in windows:
        out[o] = out[o] if out[o] is not None else updates[u]
    return [tuple(out)]


def _conv_rule(specs, in_avals, outs, *, dimension_numbers, out_sharding=None, **params):
    """A convolution keeps the input's layout dimension by dimension (the batch, and
    spatial dimensions whose size the split divides) when the kernel is replicated and
    the input's feature dimension unsplit; otherwise `out_sharding=` must say."""
    if out_sharding is not None:
        return [tuple(map(_entry, out_sharding.spec._normalized(len(outs[0].shape))))]
    lhs, rhs = specs
    if any(e is not None for e in rhs) or lhs[dimension_numbers.lhs_spec[1]] is not None:
        raise ShardingTypeError("Please specify the output sharding via `out_sharding` "
                                "parameter of `conv_general_dilated`")
    return _resized_dims_rule("conv_general_dilated")(specs[:1], in_avals[:1], outs)


def _select_and_gather_add_rule(specs, in_avals, outs, **params):
    if specs[0] != specs[1]:
        raise ShardingTypeError(
            "select_and_gather_add tangents and operand shardings must match, got "
            f"{_named(in_avals, specs[0])} and {_named(in_avals, specs[1])}.")
    return _resized_dims_rule("reduce_window")(specs[1:], in_avals[1:], outs)


def _named(avals, spec):
    return NamedSharding(_mesh(avals), PartitionSpec(*spec))


def _as_operand(index: int):
    """The result is laid out as operand `index` (select_and_scatter's gradient takes
    the pooled input's layout, not the cotangent's)."""
    def rule(specs, in_avals, outs, **params):
        return [specs[index]] * len(outs)
    return rule


def _linalg_rule(name: str, ranks: tuple[int, ...]):
    """A batched matrix primitive: every operand's matrix dimensions (its last `rank`)
    unsplit, the batch dimensions split alike; each result keeps the batch layout."""
    def rule(specs, in_avals, outs, **params):
        batches = []
        for i, (spec, rank) in enumerate(zip(specs, ranks)):
            if any(e is not None for e in spec[len(spec) - rank:]):
                raise ShardingTypeError(
                    f"Input {i} to {name} must be unsharded on non-batch dimensions, but got "
                    f"{PartitionSpec(*spec)!r}.")
            batches.append(spec[:len(spec) - rank])
        if any(b != batches[0] for b in batches[1:]):
            shown = ", ".join(repr(b) for b in batches)
            raise ShardingTypeError(
                f"All inputs to {name} must have the same batch sharding, but got [{shown}].")
        return [(*batches[0], *(None,) * (len(o.shape) - len(batches[0]))) for o in outs]
    return rule


def _lapack_call_rule(specs, in_avals, outs, **params):
    """The CPU kernels behind the linalg primitives (traced by their lowerings): the
    matrices are the operands of largest rank, their leading dimensions the batch; each
    result keeps the batch layout."""
    rank = max(len(s) for s in specs)
    batch = next(s for s in specs if len(s) == rank)[:rank - 2]
    return [(*batch, *(None,) * (len(o.shape) - len(batch))) for o in outs]


def _triangular_solve_rule(specs, in_avals, outs, *, left_side, transpose_a, **params):
    a, b = specs
    if a[:-2] != b[:-2]:
        raise ShardingTypeError(
            "All inputs to triangular_solve must have the same batch sharding, but got "
            f"{a[:-2]} and {b[:-2]}.")
    a_mat, b_mat = a[-2:], b[-2:]
    if a_mat[left_side ^ transpose_a] is not None:
        raise ShardingTypeError(
            "triangular solve input `a` must be unsharded on the contracting axis, but got "
            f"{PartitionSpec(*a)!r} with left_side={left_side} and transpose_a={transpose_a}.")
    if b_mat[not left_side] is not None:
        raise ShardingTypeError(
            "triangular solve input `b` must be unsharded on the contracting axis, but got "
            f"{PartitionSpec(*b)!r} with left_side={left_side} and transpose_a={transpose_a}.")
    mat = (a_mat[transpose_a], b_mat[1]) if left_side else (b_mat[0], a_mat[not transpose_a])
    return [check_distinct("triangular_solve", in_avals, outs[0], (*a[:-2], *mat))]


def _stack_rule(specs, in_avals, outs, *, axis, **params):
    sharded = [s for s, a in zip(specs, in_avals) if a.sharding is not None]
    if any(s != sharded[0] for s in sharded):
        shown = ", ".join(repr(_named(in_avals, s)) for s in specs)
        raise ShardingTypeError(f"All operands should have the same sharding. Got shardings "
                                f"{shown}")
    spec = list(sharded[0])
    spec.insert(axis, None)
    return [tuple(spec)]


def _unstack_rule(specs, in_avals, outs, *, axis, **params):
    if specs[0][axis] is not None:
        raise ShardingTypeError(f"unstack operand cannot be sharded on the unstacking axis "
                                f"{axis}. Got operand type={in_avals[0].str_short()}")
    return [specs[0][:axis] + specs[0][axis + 1:]] * len(outs)


def _tile_rule(specs, in_avals, outs, *, reps, **params):
    for d, (r, e) in enumerate(zip(reps, specs[0])):
        if r != 1 and e is not None:
            raise ShardingTypeError(
                f"Operand cannot be sharded on dimension {d} when the tiling is non-trivial. "
                f"Got input type: {in_avals[0]} with reps: {tuple(reps)}")
    return [specs[0]]


def _reduce_rule(specs, in_avals, outs, *, dimensions, **params):
    gone = set(dimensions)
    return [tuple(e for d, e in enumerate(s) if d not in gone) for s in specs[:len(outs)]]


def _reduce_window_rule(specs, in_avals, outs, **params):
    """Generic reduce_window: each result as its operand (sizes checked per operand)."""
    n = len(outs)
    return [_resized_dims_rule("reduce_window")([s], [a], [o])[0]
            for s, a, o in zip(specs[:n], in_avals[:n], outs)]


def _rng_bit_generator_rule(specs, in_avals, outs, *, out_sharding=None, **params):
    bits = (None,) * len(outs[1].shape) if out_sharding is None else \
        tuple(map(_entry, out_sharding.spec._normalized(len(outs[1].shape))))
    return [specs[0], bits]


def _bitcast_convert_type_rule(specs, in_avals, outs, **params):
    extra = len(outs[0].shape) - len(specs[0])
    return [specs[0] + (None,) * extra if extra >= 0 else specs[0][:extra]]


def _keep_abstract(specs, in_avals, outs, **params):
    """Results whose types the primitive states itself (callbacks, debugging)."""
    return [spec_of(o) if type(o) is ShapedArray else () for o in outs]


_ELEMENTWISE = ("convert_element_type", "integer_pow", "reduce_precision", "real", "imag",
                "conj", "is_finite", "copy", "logistic", "erf_inv", "round", "population_count",
                "clz", "complex", "nextafter", "random_gamma_grad", "igamma",
                "igammac", "igamma_grad_a", "lgamma", "digamma", "polygamma", "zeta",
                "bessel_i0e", "bessel_i1e", "regularized_incomplete_beta", "threefry2x32",
                "erfc", "erf", "cbrt", "square", "rsqrt", "tan", "exp2", "mulhi")
_REDUCTIONS = ("reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
               "reduce_xor", "argmax", "argmin")
# The matrix rank of each operand of the batched linear-algebra primitives.
_LINALG_RANKS = {"cholesky": (2,), "lu": (2,), "qr": (2,), "eigh": (2,), "svd": (2,),
                 "eig": (2,), "schur": (2,), "hessenberg": (2,), "tridiagonal": (2,),
                 "householder_product": (2, 1), "ormqr": (2, 1, 2),
                 "lu_pivots_to_permutation": (1,), "cholesky_update": (2, 1),
                 "symmetric_product": (2, 2), "tridiagonal_solve": (1, 1, 1, 2)}
_CUMULATIVE = ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp")


def _lax_primitives() -> dict[str, Primitive]:
    found: dict[str, Primitive] = {}
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(("lamella.lax", "lamella.core")):
            continue
        for value in vars(module).values():
            if isinstance(value, Primitive):
                found.setdefault(value.name, value)
    return found


def register_rules() -> None:
    """Registers lax's sharding rules, and the layout pinning of lowered programs
    once explicit sharding is first used."""
    explicit_sharding.when_enabled(lambda: lowering.install_layout_pinning(pin_typed_layouts))
    executor.install_traced_device_put(traced_device_put)
    _register_sharding_rules()


def _register_sharding_rules() -> None:
    """Fills `sharding_rules` for lax's primitives (called once lax is imported)."""
    prims = _lax_primitives()

    def put(name: str, rule: Any) -> None:
        if name in prims:
            sharding_rules.setdefault(prims[name], rule)

    for prim in prims.values():
        # lax's unop/naryop factories make the elementwise primitives.
        made_by = getattr(prim._abstract_eval, "__qualname__", "")
        batcher = batching.primitive_batchers.get(prim)
        if made_by in ("unop.<locals>.abstract_eval", "naryop.<locals>.abstract_eval") or (
                isinstance(batcher, functools.partial) and batcher.func is broadcast_batcher):
            sharding_rules.setdefault(prim, elementwise_rule(prim.name))
    for name in _ELEMENTWISE:
        put(name, elementwise_rule(name))
    for name in _REDUCTIONS:
        put(name, reduce_axes_rule)
    cumulative = _unsharded_along(
        "axis", "Input should be unsharded over the axis being reduced. Got input "
                "type={aval} and axis={axis}")
    for name in _CUMULATIVE:
        put(name, cumulative)
    put("dot_general", _dot_general_rule)
    put("select_n", _select_n_rule)
    put("sort", _sort_rule)
    put("top_k", _top_k_rule)
    put("rev", same_as_first)
    put("squeeze", _squeeze_rule)
    put("split", _unsharded_along("axis", "split: the operand must be unsharded along the "
                                          "split axis {axis}, got {aval}"))
    put("concatenate", _concatenate_rule)
    put("pad", _resized_dims_rule("padding"))
    put("slice", _resized_dims_rule("slicing"))
    put("dynamic_slice", _resized_dims_rule("dynamic_slice"))
    put("dynamic_update_slice", _dynamic_update_slice_rule)
    put("optimization_barrier", _each_as_its_operand)
    put("device_put", _each_as_its_operand)
    put("name", same_as_first)
    put("scan", _scan_rule)
    put("shard_map", _shard_map_rule)
    put("fft", same_as_first)  # JAX keeps the layout, transformed dimensions included
    put("clamp", _as_operand(1))  # JAX: the operand's layout, whatever the bounds'
    put("gather", _gather_rule)
    for name in ("scatter", "scatter-add", "scatter-sub", "scatter-mul", "scatter-min",
                 "scatter-max"):
        put(name, _scatter_rule)
    put("conv_general_dilated", _conv_rule)
    for name in ("reduce_window_sum", "reduce_window_max", "reduce_window_min"):
        put(name, _resized_dims_rule("reduce_window"))
    put("reduce_window", _reduce_window_rule)
    put("select_and_scatter_add", _as_operand(1))
    put("select_and_scatter", _as_operand(0))
    put("select_and_gather_add", _select_and_gather_add_rule)
    put("approx_top_k", _top_k_rule)
    put("stack", _stack_rule)
    put("unstack", _unstack_rule)
    put("tile", _tile_rule)
    put("reduce", _reduce_rule)
    put("rng_bit_generator", _rng_bit_generator_rule)
    put("bitcast_convert_type", _bitcast_convert_type_rule)
    put("triangular_solve", _triangular_solve_rule)
    put("lapack_call", _lapack_call_rule)
    for name, ranks in _LINALG_RANKS.items():
        put(name, _linalg_rule(name, ranks))
    for name in ("debug_callback", "debug_print", "pure_callback", "io_callback", "check",
                 "error_merge", "dce_sink", "after_all"):
        put(name, _keep_abstract)

