"""Lowering: jaxprs to StableHLO modules, one rule per primitive.

A rule takes a `LoweringRuleContext` and the operands as MLIR values and
returns a sequence of MLIR values, one per output:

    rule(ctx, *operands, **params) -> Sequence[ir.Value]

`register_lowering(prim, rule, platform=None)` installs a rule (per platform
when backends differ); `lower_fun(fn)` makes a rule from a Python function of
existing primitives, traced and lowered inline. Sub-jaxprs of calls (`jit`)
become private functions, lowered once per module.

>>> import numpy as np
>>> import lamella.core as lc
>>> import lamella.lax as lax
>>> closed = lc.make_jaxpr(lax.sin)(np.ones(3, np.float32))
>>> print(lower_jaxpr_to_module(closed, name="f").as_text(), end="")  # doctest: +ELLIPSIS
module @jit_f attributes {...} {
  func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32> {...}) {
    %0 = stablehlo.sine %arg0 : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, func
from jaxlib.mlir.dialects import stablehlo as hlo

from lamella.core import ShapedArray, dtypes
from lamella.core.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from lamella.core.staging import trace_to_jaxpr
from lamella.lax.mlir_context import element_type, make_context, module_to_string

__all__ = ["LoweringRuleContext", "ModuleContext", "LoweredModule", "chlo", "constant", "hlo", "ir",
           "lower_fun", "lower_jaxpr_to_module", "register_lowering", "aval_to_ir_type"]

Rule = Callable[..., Sequence[ir.Value]]
_rules: dict[tuple[Any, str | None], Rule] = {}


def register_lowering(primitive, rule: Rule, platform: str | None = None) -> Rule:
    """Installs `rule` as the lowering of `primitive` (on `platform`, or on all)."""
    _rules[(primitive, platform)] = rule
    return rule


def _rule_for(primitive, platform: str) -> Rule:
    rule = _rules.get((primitive, platform)) or _rules.get((primitive, None))
    if rule is None:
        raise NotImplementedError(
            f"MLIR lowering rule for primitive '{primitive.name}' not found for platform "
            f"{platform}: register one with lamella.lax.lowering.register_lowering.")
    return rule


# ---------------------------------------------------------------------------
# Types and constants.


def _physical(aval: ShapedArray) -> np.dtype:
    # float0 (the tangent type of integers) has no storage; XLA sees booleans.
    return np.dtype(bool) if aval.dtype == dtypes.float0 else aval.dtype


def aval_to_ir_type(aval: ShapedArray) -> ir.RankedTensorType:
    return ir.RankedTensorType.get(list(aval.shape), element_type(_physical(aval)))


def constant(value: Any, dtype: Any = None) -> ir.Value:
    """A `stablehlo.constant` holding a NumPy value (a splat when it is uniform)."""
    array = np.asarray(value, dtype=dtype)
    if array.dtype == dtypes.float0:
        array = np.zeros(array.shape, bool)
    ir_type = ir.RankedTensorType.get(list(array.shape), element_type(array.dtype))
    element = ir_type.element_type
    uniform = array.size > 0 and array.dtype.kind in "biuf" and bool(
        np.all(array == array.flat[0]))
    if uniform and array.dtype.kind in "biu":
        first = array.flat[0]
        if array.dtype.kind == "u":  # the attribute takes the bits as a signed integer
            first = np.asarray(first).view(f"int{8 * array.dtype.itemsize}")
        scalar = ir.IntegerAttr.get(element, int(first))
        attr = ir.DenseElementsAttr.get_splat(ir_type, scalar)
    elif uniform:
        scalar = ir.FloatAttr.get(element, float(array.flat[0]))
        attr = ir.DenseElementsAttr.get_splat(ir_type, scalar)
    elif array.dtype == np.dtype(bool):
        # Packed i1 buffers of one byte read as splats: build uint8 and convert.
        return hlo.convert(ir_type, constant(array.astype(np.uint8)))
    else:
        attr = ir.DenseElementsAttr.get(_storage(array), type=element, shape=list(array.shape))
    return hlo.constant(attr)


def _storage(array: np.ndarray) -> np.ndarray:
    if array.dtype.kind == "V" or array.dtype.name == "bfloat16":
        return array.view(np.dtype(f"uint{8 * array.dtype.itemsize}"))
    return np.ascontiguousarray(array)


# ---------------------------------------------------------------------------
# Contexts.


@dataclass
class ModuleContext:
    """State shared while lowering one module."""

    module: ir.Module
    platform: str
    functions: dict[int, tuple[str, ClosedJaxpr]] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)

    def unique_name(self, base: str) -> str:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "fn"
        name, i = base, 0
        while name in self.names:
            i += 1
            name = f"{base}_{i}"
        self.names.add(name)
        return name


class LoweringRuleContext:
    """What a rule knows besides its operands."""

    __slots__ = ("module_context", "primitive", "avals_in", "avals_out")

    def __init__(self, module_context: ModuleContext, primitive: Any,
                 avals_in: Sequence[ShapedArray], avals_out: Sequence[ShapedArray]):
        self.module_context = module_context
        self.primitive = primitive
        self.avals_in = avals_in
        self.avals_out = avals_out

    @property
    def platform(self) -> str:
        return self.module_context.platform


def _location(eqn) -> ir.Location:
    info = eqn.source_info
    if info is None:
        return ir.Location.name(eqn.primitive.name)
    name = f"{info.name_stack}/{eqn.primitive.name}" if info.name_stack else eqn.primitive.name
    return ir.Location.name(name, childLoc=ir.Location.file(info.filename, info.lineno, 0))


def lower_jaxpr(ctx: ModuleContext, jaxpr: Jaxpr, consts: Sequence[ir.Value],
                args: Sequence[ir.Value]) -> list[ir.Value]:
    """Emits the jaxpr's equations at the current insertion point."""
    env: dict[Var, ir.Value] = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(v):
        if type(v) is Literal:
            return constant(v.val, _physical(v.aval))
        return env[v]

    for eqn in jaxpr.eqns:
        rule = _rule_for(eqn.primitive, ctx.platform)
        rule_ctx = LoweringRuleContext(ctx, eqn.primitive, [v.aval for v in eqn.invars],
                                       [v.aval for v in eqn.outvars])
        with _location(eqn):
            outs = rule(rule_ctx, *map(read, eqn.invars), **eqn.params)
        outs = list(outs)
        if len(outs) != len(eqn.outvars):
            raise ValueError(f"lowering rule for '{eqn.primitive.name}' returned {len(outs)} "
                             f"values for {len(eqn.outvars)} outputs")
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]


def closed_consts(closed: ClosedJaxpr) -> list[ir.Value]:
    return [constant(np.asarray(c), _physical(v.aval))
            for c, v in zip(closed.consts, closed.jaxpr.constvars)]


def call_function(ctx: ModuleContext, closed: ClosedJaxpr, name: str,
                  args: Sequence[ir.Value]) -> list[ir.Value]:
    """Calls `closed` as a private function of the module, defined on first use."""
    known = ctx.functions.get(id(closed))
    if known is None or known[1] is not closed:
        symbol = ctx.unique_name(name)
        in_types = [aval_to_ir_type(a) for a in closed.in_avals]
        out_types = [aval_to_ir_type(a) for a in closed.out_avals]
        with ir.InsertionPoint(ctx.module.body), ir.Location.unknown():
            fn = func.FuncOp(symbol, (in_types, out_types))
            fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
            entry = fn.add_entry_block()
            with ir.InsertionPoint(entry):
                outs = lower_jaxpr(ctx, closed.jaxpr, closed_consts(closed), entry.arguments)
                func.ReturnOp(outs)
        ctx.functions[id(closed)] = known = (symbol, closed)
    out_types = [aval_to_ir_type(a) for a in closed.out_avals]
    return list(func.CallOp(out_types, ir.FlatSymbolRefAttr.get(known[0]), list(args)).results)


def lower_fun(fun: Callable, multiple_results: bool = True) -> Rule:
    """A lowering rule from a Python function of existing primitives.

    `fun(*operands, **params)` is traced with the operands' avals and its jaxpr
    lowered in place.
    """
    def rule(ctx: LoweringRuleContext, *args, **params):
        def flat(*xs):
            out = fun(*xs, **params)
            return list(out) if multiple_results else [out]
        jaxpr, consts = trace_to_jaxpr(flat, ctx.avals_in)
        closed = ClosedJaxpr(jaxpr, consts)
        return lower_jaxpr(ctx.module_context, jaxpr, closed_consts(closed), args)
    return rule


# ---------------------------------------------------------------------------
# Whole modules.


class LoweredModule:
    """A StableHLO module with the avals of its entry point."""

    def __init__(self, module: ir.Module, in_avals, out_avals, donated_invars, name: str = "main"):
        self.module = module
        self.name = name
        self.in_avals = list(in_avals)
        self.out_avals = list(out_avals)
        self.donated_invars = tuple(donated_invars)

    def as_text(self, debug_info: bool = False) -> str:
        return module_to_string(self.module, debug_info=debug_info)


class _Contexts(threading.local):
    """One MLIR context per thread, renewed every so often.

    Making a context costs more than lowering a small function; reusing one
    forever would keep every uniqued attribute (constants!) alive, so it is
    replaced after a fixed number of modules.
    """

    RENEW_AFTER = 64

    def __init__(self) -> None:
        self.context = None
        self.uses = 0

    def get(self) -> ir.Context:
        if self.context is None or self.uses >= self.RENEW_AFTER:
            self.context, self.uses = make_context(), 0
        self.uses += 1
        return self.context


_contexts = _Contexts()


def lower_jaxpr_to_module(closed: ClosedJaxpr, *, name: str,
                          donated_invars: Sequence[bool] | None = None,
                          platform: str = "cpu") -> LoweredModule:
    """The module `@jit_<name>` whose public `@main` computes `closed`."""
    context = _contexts.get()
    donated_invars = tuple(donated_invars or (False,) * len(closed.in_avals))
    with context, ir.Location.unknown():
        module = ir.Module.create()
        ctx = ModuleContext(module, platform)
        ctx.names.add("main")
        module_name = ctx.unique_name(f"jit_{name}")
        module.operation.attributes["sym_name"] = ir.StringAttr.get(module_name)
        module.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(32), 1)
        module.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(32), 1)
        in_types = [aval_to_ir_type(a) for a in closed.in_avals]
        out_types = [aval_to_ir_type(a) for a in closed.out_avals]
        with ir.InsertionPoint(module.body):
            main = func.FuncOp("main", (in_types, out_types))
            main.attributes["sym_visibility"] = ir.StringAttr.get("public")
            main.result_attrs = ir.ArrayAttr.get([
                ir.DictAttr.get({"jax.result_info": ir.StringAttr.get(f"result[{i}]")})
                for i in range(len(out_types))])
            entry = main.add_entry_block()
            with ir.InsertionPoint(entry):
                outs = lower_jaxpr(ctx, closed.jaxpr, closed_consts(closed), entry.arguments)
                func.ReturnOp(outs)
    return LoweredModule(module, closed.in_avals, closed.out_avals, donated_invars,
                         name=module_name)
