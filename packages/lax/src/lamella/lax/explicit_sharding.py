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
from typing import Any

from lamella.core import batching
from lamella.core.avals import ShapedArray, explicit_sharding
from lamella.core.primitive import Primitive
from lamella.core.sharding import NamedSharding, PartitionSpec, reshard
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
from lamella.lax import lowering
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
    return [specs[0]] * len(outs)


def _top_k_rule(specs, in_avals, outs, **params):
    axis = params.get("axis", len(specs[0]) - 1)
    if specs[0][axis] is not None:
        raise ShardingTypeError(f"top_k: the operand must be unsharded along axis {axis}, "
                                f"got {in_avals[0]}")
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
    if specs[1] != specs[0] and in_avals[1].sharding is not None:
        raise ShardingTypeError(
            f"dynamic_update_slice operand sharding must be equal to update sharding, got "
            f"operand type {in_avals[0]} and update type {in_avals[1]}.")
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


def _fft_rule(specs, in_avals, outs, *, fft_lengths, **params):
    n = len(fft_lengths)
    if any(e is not None for e in specs[0][len(specs[0]) - n:]):
        raise ShardingTypeError(f"fft: the transformed dimensions must be unsharded, got "
                                f"{in_avals[0]}")
    return [specs[0]]


def _keep_abstract(specs, in_avals, outs, **params):
    """Results whose types the primitive states itself (callbacks, debugging)."""
    return [spec_of(o) if type(o) is ShapedArray else () for o in outs]


_ELEMENTWISE = ("convert_element_type", "integer_pow", "reduce_precision", "real", "imag",
                "conj", "is_finite", "copy", "logistic", "erf_inv", "round", "population_count",
                "clz", "clamp", "complex", "nextafter", "random_gamma_grad", "igamma",
                "igammac", "igamma_grad_a", "lgamma", "digamma", "polygamma", "zeta",
                "bessel_i0e", "bessel_i1e", "regularized_incomplete_beta", "threefry2x32",
                "erfc", "erf", "cbrt", "square", "rsqrt", "tan", "exp2", "mulhi")
_REDUCTIONS = ("reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
               "reduce_xor", "argmax", "argmin")
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
    put("fft", _fft_rule)
    for name in ("debug_callback", "debug_print", "pure_callback", "io_callback"):
        put(name, _keep_abstract)

