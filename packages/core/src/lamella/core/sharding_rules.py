"""Explicit sharding in types: how each primitive's result sharding follows from its inputs'.

Under a mesh whose axes are `AxisType.Explicit` (the default of `make_mesh`), an
array's aval carries its layout (`ShapedArray.sharding`, a NamedSharding) and
`typeof(x)` shows it: `f32[8@x,4@y]`. While tracing, every equation with a
sharded input asks `sharding_rules[primitive]` for its results' layouts, as
JAX 0.10 does; a layout that cannot be decided (a contraction over one mesh
axis on both sides, a reshape that splits a sharded dimension) is a
`ShardingTypeError` asking for `out_sharding=`.

A rule takes the input specs (one tuple per operand, an entry per dimension:
None, an axis name, or a tuple of names), the input and output avals and the
equation's params, and returns one spec per output.

>>> import numpy as np
>>> from lamella.core.avals import ShapedArray, explicit_sharding
>>> from lamella.core.sharding import P, make_mesh
>>> mesh = make_mesh((1,), ("x",))
>>> ShapedArray((8, 4), np.float32, sharding=typed_sharding(mesh, P("x"), 2)).str_short()
'f32[8@x,4]'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lamella.core import avals as _avals_module
from lamella.core import sharding as _sharding_module
from lamella.core.avals import ShapedArray, explicit_sharding
from lamella.core.primitive import Primitive
from lamella.core.sharding import AxisType, NamedSharding, PartitionSpec, ShardingTypeError

Spec = tuple  # one entry per dimension: None, an axis name, or a tuple of axis names

sharding_rules: dict[Primitive, Callable[..., list[Spec]] | None] = {}
"""`sharding_rules[p](in_specs, in_avals, out_avals, **params) -> out specs`; None for a
primitive whose abstract eval sets its results' shardings itself."""
_NO_RULE = object()


def is_explicit(sharding: Any) -> bool:
    """Whether `sharding` is a NamedSharding over a mesh with an Explicit axis."""
    return type(sharding) is NamedSharding and AxisType.Explicit in sharding.mesh.axis_types


def _entry(names: tuple[str, ...]) -> Any:
    return None if not names else names[0] if len(names) == 1 else names


def typed_sharding(mesh: Any, spec: Sequence[Any], ndim: int) -> NamedSharding | None:
    """The sharding an aval of rank `ndim` carries for `spec` over `mesh` (a spec with
    an entry per dimension); None when nothing is split or the axes are not Explicit."""
    entries = PartitionSpec(*spec)._normalized(ndim)
    explicit = {n for n, t in zip(mesh.axis_names, mesh.axis_types) if t is AxisType.Explicit}
    if not any(n in explicit for e in entries for n in e):
        return None
    if not explicit_sharding.on:
        explicit_sharding.enable()
    named = NamedSharding.__new__(NamedSharding)  # validated by the rule that made the spec
    named.mesh, named.spec, named._memory_kind = mesh, PartitionSpec(*map(_entry, entries)), None
    return named


def spec_of(aval: ShapedArray) -> Spec:
    """The aval's spec, one entry per dimension (all None when it has no sharding)."""
    s = aval.sharding
    if s is None:
        return (None,) * len(aval.shape)
    return tuple(map(_entry, s.spec._normalized(len(aval.shape))))


def typed_aval(aval: ShapedArray, sharding: Any) -> ShapedArray:
    """`aval` with the layout of a concrete array whose sharding is `sharding` when that
    is explicit (the type of a committed Array under an Explicit mesh)."""
    if not is_explicit(sharding):
        return aval
    typed = typed_sharding(sharding.mesh, sharding.spec, len(aval.shape))
    return aval if typed is None else ShapedArray(aval.shape, aval.dtype, aval.weak_type, typed)


def with_spec(aval: ShapedArray, mesh: Any, spec: Spec) -> ShapedArray:
    """`aval` laid out as `spec` over `mesh`, checking the split divides each dimension."""
    for dim, (size, entry) in enumerate(zip(aval.shape, spec)):
        names = () if entry is None else entry if isinstance(entry, tuple) else (entry,)
        parts = 1
        for n in names:
            parts *= mesh.shape[n]
        if parts > 1 and isinstance(size, int) and size % parts:
            raise ShardingTypeError(
                f"Sharding spec {entry!r} implies that array axis {dim} is partitioned {parts} "
                f"times, but does not evenly divide the dimension size {size}. Got shape: "
                f"{aval.shape} and sharding spec {PartitionSpec(*spec)!r}")
    sharding = typed_sharding(mesh, spec, len(aval.shape))
    if sharding is None and aval.sharding is None:
        return aval
    return ShapedArray(aval.shape, aval.dtype, aval.weak_type, sharding)


def _short(avals: Sequence[Any]) -> str:
    return ", ".join(a.str_short() for a in avals)


def check_distinct(name: str, in_avals: Sequence[Any], out_aval: ShapedArray,
                   spec: Spec) -> Spec:
    """A mesh axis may split one dimension only: else JAX's "illegally sharded" error."""
    used = [n for e in spec if e is not None for n in (e if isinstance(e, tuple) else (e,))]
    if len(used) != len(set(used)):
        shown = ShapedArray(out_aval.shape, out_aval.dtype, out_aval.weak_type)
        dims = ",".join(f"{d}@{e if not isinstance(e, tuple) else '(' + ','.join(e) + ')'}"
                        if e is not None else str(d) for d, e in zip(shown.shape, spec))
        raise ShardingTypeError(
            f"{name} operation with inputs: {_short(in_avals)} produces an illegally sharded "
            f"result: {shown.str_short().split('[')[0]}[{dims}]")
    return spec


def _mesh_of(primitive: Primitive, avals: Sequence[Any]) -> Any:
    mesh = None
    for a in avals:
        s = getattr(a, "sharding", None)
        if s is None:
            continue
        if mesh is None:
            mesh = s.mesh
        elif s.mesh != mesh:
            raise ShardingTypeError(
                f"{primitive.name}: operands are sharded over different meshes: "
                f"{mesh._short()} and {s.mesh._short()}")
    return mesh


def _from_subjaxpr(primitive: Primitive, params: dict, outs: Sequence[Any]) -> list | None:
    """The result layouts of a call or control-flow primitive: its jaxpr's result types
    (its body was traced with the sharded operands' types)."""
    for sub in primitive.subjaxprs(params):
        avals = getattr(sub, "out_avals", None)
        if avals is None:
            avals = [v.aval for v in sub.outvars]
        if len(avals) == len(outs) and all(
                getattr(a, "shape", None) == getattr(o, "shape", None)
                for a, o in zip(avals, outs)):
            return [getattr(a, "sharding", None) for a in avals]
    return None


def propagate(primitive: Primitive, in_avals: Sequence[Any], out: Any, params: dict) -> Any:
    """The abstract-eval result `out` with each output's sharding set by the primitive's
    rule, when an input carries an explicit sharding (else `out` unchanged)."""
    mesh = _mesh_of(primitive, in_avals)
    if mesh is None:
        return out
    rule = sharding_rules.get(primitive, _NO_RULE)
    if rule is None:
        return out
    outs = out if primitive.multiple_results else [out]
    if rule is _NO_RULE:
        shardings = _from_subjaxpr(primitive, params, outs)
        if shardings is None:
            raise ShardingTypeError(
                f"sharding rule for {primitive.name} is not implemented (its inputs are "
                f"{_short(in_avals)}). Please file an issue. You can work around this error "
                "by dropping that operation into full auto sharding mode via: "
                "`lamella.core.sharding.auto_axes(fun, out_sharding=...)`")
        new = [o.update(sharding=s) if type(o) is ShapedArray else o
               for o, s in zip(outs, shardings)]
        return new if primitive.multiple_results else new[0]
    specs = [spec_of(a) if type(a) is ShapedArray else () for a in in_avals]
    out_specs = rule(specs, in_avals, outs, **params)
    new = [with_spec(o, mesh, s) if type(o) is ShapedArray else o
           for o, s in zip(outs, out_specs)]
    return new if primitive.multiple_results else new[0]


# ---------------------------------------------------------------------------
# Rules shared by many primitives.


def elementwise_rule(name: str) -> Callable[..., list[Spec]]:
    """n-ary elementwise: each dimension takes the one mesh axis its sharded operands
    agree on (unsharded operands and scalars fit any)."""
    def rule(specs, in_avals, outs, **params):
        ndim = len(outs[0].shape)
        merged: list[Any] = [None] * ndim
        for spec in specs:
            if len(spec) != ndim:
                continue  # a scalar operand
            for d, e in enumerate(spec):
                if e is None:
                    continue
                if merged[d] is None:
                    merged[d] = e
                elif merged[d] != e:
                    shown = ", ".join(str(tuple(s)) for s in specs if len(s) == ndim)
                    raise ShardingTypeError(
                        f"{name} got incompatible shardings for broadcasting: {shown}.")
        return [check_distinct(name, in_avals, outs[0], tuple(merged))] * len(outs)
    return rule


def same_as_first(specs, in_avals, outs, **params):
    """The result is laid out as the first operand (identity-like primitives)."""
    return [specs[0]] * len(outs)


def reduce_axes_rule(specs, in_avals, outs, *, axes, **params):
    """A reduction: the reduced dimensions go, the others keep their axes."""
    kept = tuple(e for d, e in enumerate(specs[0]) if d not in set(axes))
    return [kept] * len(outs)


def transpose_rule(specs, in_avals, outs, *, permutation, **params):
    return [tuple(specs[0][p] for p in permutation)]


def broadcast_in_dim_rule(specs, in_avals, outs, *, shape, broadcast_dimensions,
                          **params):
    """New dimensions are unsharded; a size-1 dimension that grows loses its axes."""
    out: list[Any] = [None] * len(shape)
    for src, dst in enumerate(broadcast_dimensions):
        if in_avals[0].shape[src] == shape[dst]:
            out[dst] = specs[0][src]
    return [tuple(out)]


def _axes_size(mesh_shape: dict, entry: Any) -> int:
    names = () if entry is None else entry if isinstance(entry, tuple) else (entry,)
    size = 1
    for n in names:
        size *= mesh_shape[n]
    return size


def reshape_spec(in_aval: ShapedArray, spec: Spec, new_sizes: Sequence[int]) -> Spec | None:
    """The layout a reshape keeps, or None where the split of a sharded dimension cannot
    be kept: dimensions are matched in groups of equal products; a group's sharding goes
    to its first output dimension when that one is a multiple of the shards; merged
    dimensions take the axes of all, major to minor, when the major one is split (JAX)."""
    old, new = list(in_aval.shape), list(new_sizes)
    mesh_shape = dict(in_aval.sharding.mesh.shape) if in_aval.sharding is not None else {}
    out: list[Any] = [None] * len(new)
    i = j = 0
    while i < len(old) or j < len(new):
        i0, j0 = i, j
        if i < len(old) and j < len(new) and old[i] == new[j]:
            out[j] = spec[i]
            i, j = i + 1, j + 1
            continue
        if j < len(new) and new[j] == 1:  # an inserted unit dimension: unsplit
            j += 1
            continue
        if i < len(old) and old[i] == 1 and spec[i] is None:  # a removed unit dimension
            i += 1
            continue
        a = old[i] if i < len(old) else 1
        b = new[j] if j < len(new) else 1
        i, j = i + 1, j + 1
        while a != b:
            if a < b:
                if i >= len(old):
                    return None
                a *= old[i]
                i += 1
            else:
                if j >= len(new):
                    return None
                b *= new[j]
                j += 1
        group = [e for e in spec[i0:i] if e is not None]
        if not group:
            continue
        if j - j0 == 1:  # merged dimensions take the axes of all, when the major is split
            if spec[i0] is None:
                return None
            names: list[str] = []
            for e in spec[i0:i]:
                if e is not None:
                    names += list(e) if isinstance(e, tuple) else [e]
            out[j0] = names[0] if len(names) == 1 else tuple(names)
            continue
        if i - i0 != 1:
            return None
        if new[j0] % _axes_size(mesh_shape, spec[i0]):
            return None
        out[j0] = spec[i0]
    return tuple(out)


def reshape_rule(specs, in_avals, outs, *, new_sizes, dimensions, **params):
    spec = reshape_spec(in_avals[0], specs[0], new_sizes) if dimensions is None else None
    if spec is None:
        raise ShardingTypeError(
            "This reshape is not supported. Please specify the sharding of the output via "
            "the `out_sharding` argument of jax.lax.reshape. Got operand type: "
            f"{in_avals[0]}, new sizes: {tuple(new_sizes)}")
    return [spec]


def _register_core_rules() -> None:
    from lamella.core.rules import (
        add_any_p,
        broadcast_in_dim_p,
        reduce_sum_p,
        reshape_p,
        transpose_p,
    )
    from lamella.core.sharding import sharding_constraint_p
    from lamella.core.structural import stop_gradient_p
    sharding_rules[add_any_p] = elementwise_rule("add_any")
    sharding_rules[broadcast_in_dim_p] = broadcast_in_dim_rule
    sharding_rules[reshape_p] = reshape_rule
    sharding_rules[transpose_p] = transpose_rule
    sharding_rules[reduce_sum_p] = reduce_axes_rule
    sharding_rules[stop_gradient_p] = same_as_first
    sharding_rules[sharding_constraint_p] = None  # its abstract eval types the result


_register_core_rules()
explicit_sharding.propagate = propagate
# The hooks through which avals and sharding (which this module imports) type layouts.
_avals_module.typed_aval = typed_aval
_sharding_module.typed_sharding = typed_sharding
