"""Host callbacks in compiled programs: the lowering of lamella.core's callback
primitives (`pure_callback`, `io_callback`, `debug_callback`, `debug_print`), and
running programs that call back.

Each callback lowers to one custom call, `xla_ffi_python_cpu_callback`, whose
`index` attribute names a Python callable in the module's `host_callbacks`
list; the executor hands that list to XLA with the module. The callable gets
NumPy views of the operands and returns a tuple with one array per result,
checked in Python against the declared types first (XLA would read a wrong
dtype or a short array as garbage). Callbacks with effects are marked
`has_side_effect` so XLA keeps them; ordered ones take and return a
`!stablehlo.token`, threaded through each function body in program order.

An exception in a callback stops the program, and the caller gets XLA's runtime
error (`lamella.core.errors.JaxRuntimeError`) with the callback's traceback in its
text, as in JAX. A program that calls back is waited for when it runs from Python
(the runtime's executables wait for its execution to finish), and one whose
callbacks have effects also when it runs from C++ (`waiting_for_callbacks` around
the dispatcher), so the callbacks of one call have all run when it returns and
successive calls call back in order; `pure_callback` has no effects, and its
programs run from C++ like any other.

>>> import numpy as np
>>> import lamella.core as lc
>>> f = lc.jit(lambda x: lc.pure_callback(np.cos, lc.ShapeDtypeStruct((), np.float32), x))
>>> f(np.float32(0.0))
Array(1., dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib import _jax

from lamella.core import debug
from lamella.core.callbacks import host_function, io_callback_p, pure_callback_p
from lamella.core.effects import ordered_effects
from lamella.core.sharding import AxisType, SingleDeviceSharding
from lamella.lax.lowering import LoweringRuleContext, aval_to_ir_type, hlo, ir, register_lowering
from lamella.lax.manual_regions import once_per_subgroup
from lamella.lax.runtime import Array, pytree_registry

__all__ = ["CALLBACK_TARGETS", "DEVICE_ATTRIBUTE", "callback_calls", "callback_target",
           "called_by_xla", "each_result_sharding", "emit_python_callback", "mark_device",
           "mark_manual", "waiting_for_callbacks"]

_TARGETS = {"cpu": "xla_ffi_python_cpu_callback", "cuda": "xla_ffi_python_gpu_callback"}


def called_by_xla(function: Callable[..., tuple], takes_token: bool) -> Callable[..., tuple]:
    """`function` as XLA calls it: without the token argument, and with a token slot
    first among the results when ordered. What it raises, jaxlib turns into the
    program's error, with the traceback in its text."""
    if not takes_token:
        return function

    def call(_token: Any, *args: Any) -> tuple:
        return (None, *function(*args))
    call.function = function
    return call


def emit_python_callback(ctx: LoweringRuleContext, function: Callable[..., Sequence[Any]],
                         operands: Sequence[ir.Value], *, has_side_effect: bool,
                         ordered: bool, partitioned: bool = False,
                         sharding: Any = None) -> list[ir.Value]:
    """The custom call that calls `function(*operands)` on the host, for the rule
    context's result types; ordered calls are chained by the token of their block.
    A `partitioned` call runs on every device with its part of the operands; one with
    a `sharding` (a SingleDeviceSharding) on that device."""
    module = ctx.module_context
    region = module.axis_context
    if region is not None and not ctx.avals_out and AxisType.Manual in region.axis_types \
            and any(t != AxisType.Manual for t in region.axis_types):
        # A debug callback in a partly manual region runs once per manual subgroup.
        once_per_subgroup(module, operands, ordered, lambda values: emit_python_callback(
            ctx, function, values, has_side_effect=has_side_effect, ordered=ordered,
            partitioned=partitioned, sharding=sharding))
        return []
    target = callback_target(ctx.platform, partitioned)
    result_types = [aval_to_ir_type(a) for a in ctx.avals_out]
    operands = list(operands)
    block = ir.InsertionPoint.current.block
    if ordered:
        token = module.effect_tokens.get(block)
        if token is None:
            token = hlo.after_all([])
        operands.insert(0, token)
        result_types.insert(0, hlo.TokenType.get())
    index = len(module.host_callbacks)
    module.host_callbacks.append(called_by_xla(function, ordered))
    call = hlo.CustomCallOp(
        result_types, operands, call_target_name=target, has_side_effect=has_side_effect,
        api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4),
        backend_config=ir.DictAttr.get(
            {"index": ir.IntegerAttr.get(ir.IntegerType.get_unsigned(64), index)}))
    if partitioned:
        constrain_layouts(call)
    mark_manual(module, call)
    mark_device(call, sharding, ctx.primitive.name)
    results = list(call.results)
    if ordered:
        module.effect_tokens[block] = results.pop(0)
    return results


def callback_target(platform: str, partitioned: bool) -> str:
    """The custom call target of a host callback on `platform`: jaxlib's partitioned
    form (run per device, on each device's part) or the whole-value one."""
    target = _TARGETS.get(platform)
    if target is None:
        raise NotImplementedError(f"host callbacks are not supported on {platform}")
    return target.replace("xla_ffi_", "xla_ffi_partitioned_") if partitioned else target


CALLBACK_TARGETS = frozenset(_TARGETS.values()) | {
    t.replace("xla_ffi_", "xla_ffi_partitioned_") for t in _TARGETS.values()}
"""Every custom call target a host callback lowers to."""


def callback_calls(operation: Any) -> list[Any]:
    """The host callbacks' custom calls under `operation` (a module's, say), in every
    function and region."""
    found: list = []

    def visit(op: Any) -> None:
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    visit(inner)
        if op.name == "stablehlo.custom_call" and ir.StringAttr(
                op.attributes["call_target_name"]).value in CALLBACK_TARGETS:
            found.append(op)

    visit(operation)
    return found


def constrain_layouts(call: Any) -> None:
    """Gives `call`'s operands and results row-major layouts: XLA's partitioner of
    partitioned callbacks requires them."""
    def layouts(types: Sequence[ir.Type]) -> ir.ArrayAttr:
        out = []
        for t in types:
            rank = ir.RankedTensorType(t).rank if isinstance(t, ir.RankedTensorType) else 0
            out.append(ir.DenseElementsAttr.get(
                np.arange(rank - 1, -1, -1, dtype=np.int64), type=ir.IndexType.get()))
        return ir.ArrayAttr.get(out)
    call.attributes["operand_layouts"] = layouts([o.type for o in call.operands])
    call.attributes["result_layouts"] = layouts([r.type for r in call.results])


DEVICE_ATTRIBUTE = "lamella.callback_device"
"""The id of the device a callback was asked to run on (placed by the SPMD executor)."""


def mark_device(call: Any, sharding: Any, name: str) -> None:
    """Records on `call` the device `sharding` names (JAX's `sharding=` of a callback,
    a SingleDeviceSharding: the callback runs there in a program over several devices)."""
    if sharding is None:
        return
    if not isinstance(sharding, SingleDeviceSharding):
        raise NotImplementedError(f"{name} only supports SingleDeviceSharding, but got "
                                  f"{type(sharding)}")
    device = next(iter(sharding.device_set))
    call.attributes[DEVICE_ATTRIBUTE] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                           device.id)


def mark_manual(module: Any, call: Any) -> None:
    """Inside shard_map's manual region a callback runs on every device with its own
    part (as JAX's): XLA must not place it itself."""
    if module.axis_context is None:
        return
    call.attributes["mhlo.sharding"] = ir.StringAttr.get(
        each_result_sharding("{manual}", len(call.results)))


def each_result_sharding(one: str, count: int) -> str:
    """The sharding (HloSharding text) of an op whose `count` results each have `one`."""
    return one if count <= 1 else "{" + ", ".join([one] * count) + "}"


_wait_all = _jax.batched_block_until_ready


def waiting_for_callbacks(dispatcher: Callable[..., Any]) -> Callable[..., Any]:
    """`dispatcher` (a C++ fast function whose programs call back with effects),
    waiting for each call's program so its callbacks have run when it returns."""
    flatten = pytree_registry().flatten

    def call(*args: Any, **kwargs: Any) -> Any:
        out = dispatcher(*args, **kwargs)
        if type(out) is Array:  # one result, the usual case: no flattening
            _wait_all([out])
        else:
            leaves = flatten(out)[0]
            if leaves and type(leaves[0]) is Array:  # else tracers: nothing ran
                _wait_all(leaves)
        return out

    call._clear_cache = dispatcher._clear_cache
    return call


def _only_fully_manual(ctx: LoweringRuleContext) -> None:
    """pure_callback and io_callback run inside shard_map only where every mesh axis is
    manual (as in JAX): where some are not (Auto, Explicit), XLA's partitioner would
    have to place the call inside a manual subgroup itself, and it aborts the process
    instead."""
    region = ctx.module_context.axis_context
    if region is None:
        return
    others = [n for n, t in zip(region.axis_names, region.axis_types) if t != AxisType.Manual]
    if others:
        raise NotImplementedError(
            "callbacks are only supported in spmd computations when all mesh axes are "
            "partitioned manually (no partial automatic sharding). Here the mesh axes "
            f"{others} are not manual: leave axis_names= out of shard_map, or name them in it.")


# ---------------------------------------------------------------------------
# The lowerings.


def _pure_callback_lowering(ctx, *args, callback, result_avals, sharding, vmap_method):
    _only_fully_manual(ctx)
    return emit_python_callback(ctx, host_function(callback, result_avals, "pure_callback"),
                                args, has_side_effect=False, ordered=False, sharding=sharding)


def _io_callback_lowering(ctx, *args, callback, result_avals, sharding, ordered):
    _only_fully_manual(ctx)
    return emit_python_callback(ctx, host_function(callback, result_avals, "io_callback"),
                                args, has_side_effect=True, ordered=ordered, sharding=sharding)


def _no_results(callback: Callable[..., Any]) -> Callable[..., tuple]:
    def call(*args: Any) -> tuple:
        callback(*[np.array(a) for a in args])
        return ()
    return call


def _debug_callback_lowering(ctx, *args, callback, effect, partitioned):
    return emit_python_callback(ctx, _no_results(callback), args, has_side_effect=True,
                                ordered=ordered_effects.contains(effect),
                                partitioned=partitioned)


def _debug_print_lowering(ctx, *args, **params):
    return emit_python_callback(ctx, _no_results(debug.debug_print_callback(params)), args,
                                has_side_effect=True, ordered=params["ordered"],
                                partitioned=params["partitioned"])


register_lowering(pure_callback_p, _pure_callback_lowering)
register_lowering(io_callback_p, _io_callback_lowering)
register_lowering(debug.debug_callback_p, _debug_callback_lowering)
register_lowering(debug.debug_print_p, _debug_print_lowering)
