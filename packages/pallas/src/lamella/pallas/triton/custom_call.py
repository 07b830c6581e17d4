"""`pallas_call` on a CUDA GPU: the kernel's Triton module inside a custom call.

When a program is lowered for the `cuda` (or `gpu`) platform, `pallas_call_p`
lowers here instead of to the CPU executor: the kernel becomes a Triton module
(`lowering.lower_kernel`), and the call a `stablehlo.custom_call` to
`__gpu$xla.gpu.triton`, which XLA's GPU compiler compiles with its own Triton
and launches. As JAX 0.10.2 does with jaxlib 0.10.2, the backend config is a
dictionary: `name`, `ir` (the module's MLIR bytecode), `num_warps` (4 unless
`CompilerParams(num_warps=)` says), `num_stages` (3 unless given), `grid_x`,
`grid_y`, `grid_z` and `debug`. Operands and results are row-major; aliased
inputs become `output_operand_aliases`. `interpret=True` keeps the CPU
executor's lowering on every platform. Nothing changes on CPU.

>>> import numpy as np
>>> import lamella.core as lc
>>> import lamella.pallas as pl
>>> def double_kernel(x_ref, o_ref):
...     o_ref[...] = 2 * x_ref[...]
>>> f = lambda x: pl.pallas_call(double_kernel, out_shape=lc.ShapeDtypeStruct((8,), np.float32),
...                              compiler_params=pl.triton.CompilerParams(num_warps=2))(x)
>>> text = gpu_stablehlo(f, np.ones(8, np.float32))
>>> 'stablehlo.custom_call @__gpu$xla.gpu.triton(' in text, "num_warps = 2 : i32" in text
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import lamella.core as lc
from lamella.lax.lowering import (
    aval_to_ir_type,
    hlo,
    ir,
    lower_closed_jaxpr,
    lower_fun,
    register_lowering,
)
from lamella.pallas.pallas_call import _lowered, pallas_call_p

__all__ = ["GPU_PLATFORMS", "TRITON_CALL_TARGET", "gpu_stablehlo"]

TRITON_CALL_TARGET = "__gpu$xla.gpu.triton"
GPU_PLATFORMS = ("cuda", "gpu")
_interpreted = lower_fun(_lowered, multiple_results=True)


def _i32(value: int) -> ir.Attribute:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(value))


def _row_major(ndim: int) -> ir.Attribute:
    return ir.DenseIntElementsAttr.get(np.arange(ndim - 1, -1, -1, dtype=np.int64),
                                       type=ir.IndexType.get())


def _triton_call(ctx, *operands, **params):
    if params["interpret"]:
        return _interpreted(ctx, *operands, **params)
    from lamella.pallas.triton.lowering import lower_kernel

    kernel = lower_kernel(**params)
    compiler_params = params.get("compiler_params")
    num_warps = getattr(compiler_params, "num_warps", None) or 4
    num_stages = getattr(compiler_params, "num_stages", None) or 3
    config = {
        "name": ir.StringAttr.get(kernel.name),
        "ir": ir.StringAttr.get(kernel.bytecode()),
        "num_stages": _i32(num_stages),
        "num_warps": _i32(num_warps),
        "grid_x": _i32(kernel.grid[0]),
        "grid_y": _i32(kernel.grid[1]),
        "grid_z": _i32(kernel.grid[2]),
        "debug": ir.BoolAttr.get(bool(params.get("debug", False))),
    }
    n_out = len(ctx.avals_out)
    aliases = [hlo.OutputOperandAlias.get([o] if n_out > 1 else [], i, [])
               for i, o in params.get("aliases", ())]
    op = hlo.CustomCallOp(
        [aval_to_ir_type(a) for a in ctx.avals_out], list(operands), TRITON_CALL_TARGET,
        api_version=_i32(4), backend_config=ir.DictAttr.get(config),
        operand_layouts=ir.ArrayAttr.get([_row_major(a.ndim) for a in ctx.avals_in]),
        result_layouts=ir.ArrayAttr.get([_row_major(a.ndim) for a in ctx.avals_out]),
        output_operand_aliases=ir.ArrayAttr.get(aliases) if aliases else None)
    return list(op.results)


for _platform in GPU_PLATFORMS:
    register_lowering(pallas_call_p, _triton_call, platform=_platform)


def gpu_stablehlo(fun: Callable[..., Any], *args: Any) -> str:
    """The StableHLO text of `fun(*args)` lowered for a CUDA GPU (no GPU needed):
    each `pallas_call` appears as its Triton custom call."""
    closed = lc.make_jaxpr(fun)(*args)
    return lower_closed_jaxpr(closed, name=getattr(fun, "__name__", "fun"),
                              platform="cuda").as_text()
