"""`with_sharding_constraint`: tells XLA's partitioner how a value inside `jit` is laid out.

The primitive (lamella.core's `sharding_constraint_p`, an identity) lowers to
the custom call `Sharding` carrying the layout as an `mhlo.sharding` attribute,
which the SPMD partitioner honours.

>>> import numpy as np, lamella.core as lc, lamella.lax as lax
>>> from lamella.core.sharding import NamedSharding, P, make_mesh
>>> mesh = make_mesh((1,), ("x",))
>>> f = lc.jit(lambda v: with_sharding_constraint(lax.mul(v, 2.0), NamedSharding(mesh, P("x"))))
>>> "custom_call @Sharding" in f.lower(np.ones(2, np.float32)).as_text()
True
"""

from __future__ import annotations

from lamella.core.sharding import (
    AxisType,
    Mesh,
    NamedSharding,
    reshard,
    sharding_constraint_p,
    with_sharding_constraint,
)
from lamella.lax import lowering
from lamella.lax.lowering import hlo, ir, register_lowering
from lamella.lax.shard_map import subgroup_sharding

__all__ = ["reshard", "sharding_constraint_p", "with_sharding_constraint"]


def _in_manual_region(region: Mesh, sharding: NamedSharding, ndim: int) -> str | None:
    """The annotation of a constraint inside shard_map's (or pmap's) manual region, whose
    mesh `region` types its manual axes Manual (None: nothing to say). There it can lay
    the block out only over the axes that stay Auto, as a manual-subgroup sharding: XLA
    aborts the process on any other annotation in a manual region. Where every axis is
    manual, a constraint naming no axis says nothing."""
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


def _lowering(ctx, x, *, sharding):
    ndim = ctx.avals_out[0].ndim
    region = ctx.module_context.axis_context
    text = sharding.hlo_sharding_text(ndim) if region is None else \
        _in_manual_region(region, sharding, ndim)
    if text is None:
        return [x]
    op = hlo.CustomCallOp([lowering.aval_to_ir_type(ctx.avals_out[0])], [x],
                          call_target_name="Sharding")
    op.attributes["mhlo.sharding"] = ir.StringAttr.get(text)
    return [op.results[0]]


register_lowering(sharding_constraint_p, _lowering)
