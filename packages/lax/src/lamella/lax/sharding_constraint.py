"""`with_sharding_constraint`: tells XLA's partitioner how a value inside `jit` is laid out.

The primitive (lamella.core's `sharding_constraint_p`, an identity) lowers to
the custom call `Sharding` carrying the layout as an `mhlo.sharding` attribute,
which the SPMD partitioner honours.

>>> import numpy as np, lamella.core as lc, lamella.lax as lax
>>> from lamella.core.sharding import AxisType, NamedSharding, P, make_mesh
>>> mesh = make_mesh((1,), ("x",), axis_types=(AxisType.Auto,))  # Explicit: an assertion
>>> f = lc.jit(lambda v: with_sharding_constraint(lax.mul(v, 2.0), NamedSharding(mesh, P("x"))))
>>> "custom_call @Sharding" in f.lower(np.ones(2, np.float32)).as_text()
True
"""

from __future__ import annotations

from lamella.core.sharding import reshard, sharding_constraint_p, with_sharding_constraint
from lamella.lax import lowering
from lamella.lax.lowering import hlo, ir, register_lowering
from lamella.lax.manual_regions import manual_region_sharding

__all__ = ["reshard", "sharding_constraint_p", "with_sharding_constraint"]


def _lowering(ctx, x, *, sharding):
    ndim = ctx.avals_out[0].ndim
    region = ctx.module_context.axis_context
    text = sharding.hlo_sharding_text(ndim) if region is None else \
        manual_region_sharding(region, sharding, ndim)
    if text is None:
        return [x]
    op = hlo.CustomCallOp([lowering.aval_to_ir_type(ctx.avals_out[0])], [x],
                          call_target_name="Sharding")
    op.attributes["mhlo.sharding"] = ir.StringAttr.get(text)
    return [op.results[0]]


register_lowering(sharding_constraint_p, _lowering)
