"""Lowering: jaxprs to StableHLO modules, one rule per primitive.

A rule takes a `LoweringRuleContext` and the operands as MLIR values and
returns a sequence of MLIR values, one per output:

    rule(ctx, *operands, **params) -> Sequence[ir.Value]

`register_lowering(prim, rule, platform=None)` installs a rule (per platform
when backends differ); `lower_fun(fn)` makes a rule from a Python function of
existing primitives, traced and lowered inline. Sub-jaxprs of calls (`jit`)
become private functions, lowered once per module.

This module is lamella's `jax.interpreters.mlir`: besides its own names it has
JAX's helpers for writing rules (`ir_constant`, `aval_to_ir_type`,
`dtype_to_ir_type`, `i32_attr`, `dense_int_array`, `ir_attribute`,
`shape_tensor`, `jaxpr_subcomp`, `lower_jaxpr_to_fun`, `core_call_lowering`,
`merge_mlir_modules` ...), so a custom primitive written for JAX lowers here
unchanged. There is one device, and no effect tokens are threaded.

>>> import numpy as np
>>> import lamella.core as lc
>>> import lamella.lax as lax
>>> closed = lc.make_jaxpr(lax.sin)(np.ones(3, np.float32))
>>> print(lower_closed_jaxpr(closed, name="f").as_text(), end="")  # doctest: +ELLIPSIS
module @jit_f attributes {...} {
  func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32> {...}) {
    %0 = stablehlo.sine %arg0 : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, func
from jaxlib.mlir.dialects import stablehlo as hlo

from lamella.core import ShapedArray, dtypes
from lamella.core.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var
from lamella.core.shape_poly import DimExpr, is_symbolic_shape
from lamella.core.staging import trace_to_jaxpr
from lamella.lax import mlir_context
from lamella.lax.mlir_context import element_type, make_context

__all__ = ["aval_to_ir_type", "aval_to_ir_types", "chlo", "constant", "ConstantHandler",
           "core_call_lowering", "dense_int_array", "dense_int_elements", "dtype_to_ir_type",
           "flatten_ir_types", "flatten_ir_values", "hlo", "i32_attr", "i64_attr", "ir",
           "ir_attribute", "ir_constant", "ir_constants", "ir_tree_registry", "ir_type_handlers",
           "jaxpr_subcomp", "lower_closed_jaxpr", "lower_fun", "lower_jaxpr_to_fun",
           "lower_jaxpr_to_module", "LoweredModule", "LoweringParameters", "LoweringResult",
           "LoweringRule", "LoweringRuleContext", "make_ir_context", "merge_mlir_modules",
           "module_to_bytecode", "module_to_string", "ModuleContext", "register_constant_handler",
           "register_lowering", "shape_tensor", "Token", "token_type", "TokenSet",
           "unflatten_ir_values_like_types", "Value"]

LoweringRule = Callable[..., Sequence[ir.Value]]
"""A rule: `rule(ctx, *operands, **params) -> Sequence[ir.Value]`, one value per output."""
Value = ir.Value
_rules: dict[tuple[Any, str | None], LoweringRule] = {}


def register_lowering(prim, rule: LoweringRule, platform: str | None = None,
                      inline: bool = True, cacheable: bool = True) -> LoweringRule:
    """Installs `rule` as the lowering of `prim` (on `platform`, or on all).

    `inline` and `cacheable` are JAX's; rules here are always lowered inline."""
    _rules[(prim, platform)] = rule
    return rule


def _rule_for(primitive, platform: str, overrides: Sequence = ()) -> LoweringRule:
    for prim, rule in overrides:
        if prim is primitive:
            return rule
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


def _array_ir_type(aval: ShapedArray) -> ir.RankedTensorType:
    if any(type(d) is not int or d < 0 for d in aval.shape):
        return _unusual_ir_type(aval)
    return ir.RankedTensorType.get(list(aval.shape), element_type(_physical(aval)))


def _unusual_ir_type(aval: ShapedArray) -> ir.RankedTensorType:
    # Symbolic dimensions (shape-polymorphic export) are dynamic sizes.
    dynamic = ir.ShapedType.get_dynamic_size()
    shape = [dynamic if isinstance(d, DimExpr) else int(d) for d in aval.shape]
    if any(d < 0 and d != dynamic for d in shape):
        # A primitive whose abstract eval let a negative size through (each one should
        # catch it): say so instead of MLIR's bare "invalid tensor dimension size".
        raise TypeError(f"cannot lower a value of shape {aval.shape}: dimensions must be "
                        ">= 0")
    return ir.RankedTensorType.get(shape, element_type(_physical(aval)))


# The MLIR type of each kind of abstract value (a table other kinds register in).
ir_type_handlers: dict[type, Callable[[Any], ir.Type | tuple[ir.Type, ...]]] = {
    ShapedArray: _array_ir_type}


def _ir_types(aval: Any) -> ir.Type | tuple[ir.Type, ...]:
    handler = ir_type_handlers.get(type(aval))
    if handler is None:
        raise TypeError(f"No ir_type_handler for aval type: {type(aval).__name__}")
    return handler(aval)


def aval_to_ir_type(ctx: Any, aval: Any = None) -> ir.Type:
    """The MLIR type of `aval`: `aval_to_ir_type(aval)`, or JAX's
    `aval_to_ir_type(ctx, aval)` (the module context is not needed here)."""
    ir_type = _ir_types(ctx if aval is None else aval)
    if not isinstance(ir_type, ir.Type):
        raise TypeError(f"Expected a single IR type, got {ir_type}")
    return ir_type


def aval_to_ir_types(ctx: Any, aval: Any = None) -> tuple[ir.Type, ...]:
    """The MLIR types of `aval`, as a tuple (JAX's form for avals of several values)."""
    ir_type = _ir_types(ctx if aval is None else aval)
    return (ir_type,) if isinstance(ir_type, ir.Type) else tuple(ir_type)


def dtype_to_ir_type(dtype: Any) -> ir.Type:
    """The MLIR element type of a NumPy dtype (`f32` for float32 ...)."""
    return element_type(np.dtype(dtype))


def constant(value: Any, dtype: Any = None) -> ir.Value:
    """A `stablehlo.constant` holding a NumPy value (a splat when it is uniform)."""
    if type(value) is DimExpr:  # a symbolic dimension's value, from the variables
        return symbolic_hooks["dim_value"](value, np.dtype(dtype or np.int64))
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


@dataclass(frozen=True)
class LoweringParameters:
    """Options of one lowering (JAX's). `override_lowering_rules`, a sequence of
    (primitive, rule) pairs, takes precedence over the registered rules; the
    others concern export and sharding and have no effect here."""

    override_lowering_rules: tuple[tuple[Any, LoweringRule], ...] | None = None
    global_constant_computation: bool = False
    for_export: bool = False
    export_ignore_forward_compatibility: bool = False
    hoist_constants_as_args: bool = False


@dataclass
class ModuleContext:
    """State shared while lowering one module."""

    module: ir.Module
    platform: str
    functions: dict[int, tuple[str, ClosedJaxpr]] = field(default_factory=dict)
    names: set[str] = field(default_factory=set)
    # Python callables the program calls back (custom calls name them by index), and
    # the token each block's ordered effects are threaded through.
    host_callbacks: list[Callable[..., Any]] = field(default_factory=list)
    effect_tokens: dict[Any, ir.Value] = field(default_factory=dict)
    lowering_parameters: LoweringParameters = field(default_factory=lambda: LoweringParameters())
    # Inside shard_map's manual region: the Mesh whose axes collectives name.
    axis_context: Any = None
    # (source line, primitive name) -> its ir.Location: equations of one line share it.
    locations: dict[tuple[Any, str], ir.Location] = field(default_factory=dict)

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


def _location(ctx: ModuleContext, eqn) -> ir.Location:
    info, primitive = eqn.source_info, eqn.primitive.name
    location = ctx.locations.get((info, primitive))
    if location is None:
        if info is None:
            location = ir.Location.name(primitive)
        else:
            name = f"{info.name_stack}/{primitive}" if info.name_stack else primitive
            location = ir.Location.name(
                name, childLoc=ir.Location.file(info.filename, info.lineno, 0))
        ctx.locations[(info, primitive)] = location
    return location


# Installed by lamella.lax.explicit_sharding once an Explicit layout is first used:
# (avals, values, region) -> values pinned to their typed layouts.
_pin_typed_layouts: Callable[..., list] | None = None


def install_layout_pinning(pin: Callable[..., list]) -> None:
    """Makes every lowered equation pin its results to their typed layouts."""
    global _pin_typed_layouts
    _pin_typed_layouts = pin


def lower_jaxpr(ctx: ModuleContext, jaxpr: Jaxpr, consts: Sequence[ir.Value],
                args: Sequence[ir.Value]) -> list[ir.Value]:
    """Emits the jaxpr's equations at the current insertion point."""
    env: dict[Var, ir.Value] = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))

    def read(v):
        if type(v) is Literal:
            return constant(v.val, _physical(v.aval))
        return env[v]

    overrides = ctx.lowering_parameters.override_lowering_rules or ()
    platform, rules = ctx.platform, {}
    check_symbolic = symbolic_hooks["check"] if _symbolic_lowering.depth else None
    for eqn in jaxpr.eqns:
        primitive = eqn.primitive
        if check_symbolic is not None:
            check_symbolic(primitive, [v.aval for v in (*eqn.invars, *eqn.outvars)])
        rule = rules.get(primitive)
        if rule is None:
            rule = rules[primitive] = _rule_for(primitive, platform, overrides)
        rule_ctx = LoweringRuleContext(ctx, primitive, [v.aval for v in eqn.invars],
                                       [v.aval for v in eqn.outvars])
        with _location(ctx, eqn):
            outs = rule(rule_ctx, *map(read, eqn.invars), **eqn.params)
        outs = ir_tree_registry.leaves(outs)
        if _pin_typed_layouts is not None:  # explicit sharding: values keep typed layouts
            outs = _pin_typed_layouts(rule_ctx.avals_out, outs, ctx.axis_context)
        if len(outs) != len(eqn.outvars):
            raise ValueError(f"lowering rule for '{eqn.primitive.name}' returned {len(outs)} "
                             f"values for {len(eqn.outvars)} outputs")
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]


# How symbolic dimensions lower, installed by lamella.lax.symbolic_lowering: "function"
# (a context manager for a function body), "dim_value" (a dimension's value) and
# "check" (refuses primitives that cannot lower symbolic shapes).
symbolic_hooks: dict[str, Callable[..., Any]] = {}


class _SymbolicLowering(threading.local):
    """How many functions with symbolic argument shapes are being lowered."""

    depth = 0


_symbolic_lowering = _SymbolicLowering()


@contextlib.contextmanager
def _symbolic_function(avals: Sequence[Any], args: Sequence[ir.Value], main: bool = False):
    """Lowers a function body whose arguments may have symbolic shapes: its dimension
    variables are read from the arguments (lamella.lax.symbolic_lowering). Inside a
    symbolic lowering, every function has its own (maybe none): values of another
    function cannot be used in it."""
    if not _symbolic_lowering.depth and not any(
            is_symbolic_shape(getattr(a, "shape", ())) for a in avals):
        yield
        return
    _symbolic_lowering.depth += 1
    try:
        with symbolic_hooks["function"](avals, args, main=main):
            yield
    finally:
        _symbolic_lowering.depth -= 1


def closed_consts(closed: ClosedJaxpr) -> list[ir.Value]:
    return [constant(np.asarray(c), _physical(v.aval))
            for c, v in zip(closed.consts, closed.jaxpr.constvars)]


def _define_function(ctx: ModuleContext, closed: ClosedJaxpr, name: str,
                     public: bool = False) -> func.FuncOp:
    """`closed` as a function of the module (private unless `public`)."""
    symbol = ctx.unique_name(name)
    in_types = [aval_to_ir_type(a) for a in closed.in_avals]
    out_types = [aval_to_ir_type(a) for a in closed.out_avals]
    with ir.InsertionPoint(ctx.module.body), ir.Location.unknown():
        fn = func.FuncOp(symbol, (in_types, out_types))
        fn.attributes["sym_visibility"] = ir.StringAttr.get("public" if public else "private")
        entry = fn.add_entry_block()
        with ir.InsertionPoint(entry), _symbolic_function(closed.in_avals, entry.arguments):
            outs = lower_jaxpr(ctx, closed.jaxpr, closed_consts(closed), entry.arguments)
            func.ReturnOp(outs)
    return fn


def call_function(ctx: ModuleContext, closed: ClosedJaxpr, name: str,
                  args: Sequence[ir.Value]) -> list[ir.Value]:
    """Calls `closed` as a private function of the module, defined on first use."""
    known = ctx.functions.get(id(closed))
    if known is None or known[1] is not closed:
        fn = _define_function(ctx, closed, name)
        ctx.functions[id(closed)] = known = (fn.name.value, closed)
    out_types = [aval_to_ir_type(a) for a in closed.out_avals]
    return list(func.CallOp(out_types, ir.FlatSymbolRefAttr.get(known[0]), list(args)).results)


def lower_fun(fun: Callable, multiple_results: bool = True) -> LoweringRule:
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
    """A StableHLO module with the avals of its entry point, and the Python
    callables its host callbacks call (to pass when compiling it)."""

    def __init__(self, module: ir.Module, in_avals, out_avals, donated_invars, name: str = "main",
                 host_callbacks: Sequence[Callable[..., Any]] = ()):
        self.module = module
        self.name = name
        self.in_avals = list(in_avals)
        self.out_avals = list(out_avals)
        self.donated_invars = tuple(donated_invars)
        self.host_callbacks = list(host_callbacks)

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """The module as StableHLO text (the default) or as XLA's HLO text."""
        if dialect in (None, "stablehlo"):
            return mlir_context.module_to_string(self.module, debug_info=debug_info)
        return self.compiler_ir(dialect).as_hlo_text()

    def compiler_ir(self, dialect: str | None = None) -> Any:
        """The module itself (StableHLO), or XLA's computation of it (`dialect="hlo"`)."""
        if dialect in (None, "stablehlo"):
            return self.module
        if dialect == "hlo":
            return _jax.mlir.mlir_module_to_xla_computation(self.as_text())
        raise ValueError(f"Unknown dialect {dialect!r}: 'stablehlo' or 'hlo'")


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


def lower_closed_jaxpr(closed: ClosedJaxpr, *, name: str,
                          donated_invars: Sequence[bool] | None = None,
                          platform: str = "cpu",
                          lowering_parameters: LoweringParameters | None = None
                          ) -> LoweredModule:
    """The module `@jit_<name>` whose public `@main` computes `closed`."""
    context = _contexts.get()
    donated_invars = tuple(donated_invars or (False,) * len(closed.in_avals))
    with context, ir.Location.unknown():
        module = ir.Module.create()
        ctx = ModuleContext(module, platform,
                            lowering_parameters=lowering_parameters or LoweringParameters())
        ctx.names.add("main")
        module_name = ctx.unique_name(f"jit_{name}")
        module.operation.attributes["sym_name"] = ir.StringAttr.get(module_name)
        module.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(32), 1)
        module.operation.attributes["mhlo.num_replicas"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(32), 1)
        in_types = [aval_to_ir_type(a) for a in closed.in_avals]
        out_types = [aval_to_ir_type(a) for a in closed.out_avals]
        # Tokens cross the entry point as empty arrays (the executor's view of them):
        # made afresh inside, returned as an empty constant.
        token = token_type()
        empty = ir.RankedTensorType.get([0], ir.IntegerType.get_signless(1))
        with ir.InsertionPoint(module.body):
            main = func.FuncOp("main", ([empty if t == token else t for t in in_types],
                                        [empty if t == token else t for t in out_types]))
            main.attributes["sym_visibility"] = ir.StringAttr.get("public")
            main.result_attrs = ir.ArrayAttr.get([
                ir.DictAttr.get({"jax.result_info": ir.StringAttr.get(f"result[{i}]")})
                for i in range(len(out_types))])
            entry = main.add_entry_block()
            with ir.InsertionPoint(entry), _symbolic_function(closed.in_avals, entry.arguments,
                                                              main=True):
                args = [hlo.after_all([]) if t == token else a
                        for t, a in zip(in_types, entry.arguments)]
                outs = lower_jaxpr(ctx, closed.jaxpr, closed_consts(closed), args)
                func.ReturnOp([constant(np.zeros(0, bool)) if t == token else o
                               for t, o in zip(out_types, outs)])
    return LoweredModule(module, closed.in_avals, closed.out_avals, donated_invars,
                         name=module_name, host_callbacks=ctx.host_callbacks)


# ---------------------------------------------------------------------------
# JAX's helpers for writing rules (jax.interpreters.mlir).

ConstantHandler = Callable[[Any], Sequence[ir.Value]]
"""Lowers a Python value of one type to constants: `handler(value) -> [ir.Value]`."""
_constant_handlers: dict[type, ConstantHandler] = {}


def register_constant_handler(type_: type, handler_fun: ConstantHandler) -> None:
    """Makes `ir_constants` lower values of `type_` (and subclasses) with `handler_fun`."""
    _constant_handlers[type_] = handler_fun


def ir_constants(val: Any, *, const_lowering: Any = None, aval: Any = None
                 ) -> tuple[ir.Value, ...]:
    """`val` as MLIR constants: through a registered handler for its type, else as
    a NumPy value (of `aval`'s dtype when given; Python scalars canonicalized, so
    1.0 is float32 without x64). `const_lowering` is JAX's and unused here."""
    for cls in type(val).__mro__:
        handler = _constant_handlers.get(cls)
        if handler is not None:
            return tuple(handler(val))
    array = np.asarray(val)
    dtype = aval.dtype if aval is not None else dtypes.canonicalize_dtype(array.dtype)
    return (constant(array, _physical(ShapedArray(array.shape, np.dtype(dtype)))),)


def ir_constant(val: Any, *, const_lowering: Any = None, aval: Any = None) -> ir.Value:
    """`val` as one MLIR constant (see `ir_constants`).

    >>> from lamella.lax.mlir_context import make_context
    >>> with make_context(), ir.Location.unknown():
    ...     print(ir_constant(2.0).type)
    tensor<f32>
    """
    values = ir_constants(val, const_lowering=const_lowering, aval=aval)
    if len(values) != 1:
        raise TypeError(f"ir_constant: {type(val).__name__} lowers to {len(values)} values")
    return values[0]


def i32_attr(i: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), int(i))


def i64_attr(i: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(i))


def dense_int_array(xs: Sequence[int]) -> ir.Attribute:
    """`array<i64: ...>`, the form StableHLO's dimension lists take."""
    return ir.DenseI64ArrayAttr.get([int(x) for x in xs])


def dense_int_elements(xs: Sequence[int]) -> ir.DenseElementsAttr:
    """`dense<[...]> : tensor<nxi64>`."""
    return ir.DenseIntElementsAttr.get(np.asarray(xs, np.int64))


def _array_attribute(val: Any) -> ir.Attribute:
    array = np.asarray(val)
    if array.dtype == np.dtype(bool):
        return ir.DenseElementsAttr.get(np.packbits(array, bitorder="little"),
                                        type=ir.IntegerType.get_signless(1),
                                        shape=list(array.shape))
    return ir.DenseElementsAttr.get(_storage(array), type=element_type(array.dtype),
                                    shape=list(array.shape))


_attribute_handlers: dict[type, Callable[[Any], ir.Attribute]] = {
    bool: ir.BoolAttr.get,
    int: i64_attr,
    float: lambda v: ir.FloatAttr.get(ir.F64Type.get(), v),
    str: ir.StringAttr.get,
    np.ndarray: _array_attribute,
    np.generic: _array_attribute,
    list: lambda v: ir.ArrayAttr.get([ir_attribute(x) for x in v]),
    tuple: lambda v: ir.ArrayAttr.get([ir_attribute(x) for x in v]),
    ir.Attribute: lambda v: v,
}


def ir_attribute(val: Any) -> ir.Attribute:
    """A Python value (bool, int, float, str, NumPy array, or a list or tuple of
    them) as an MLIR attribute."""
    for cls in type(val).__mro__:
        handler = _attribute_handlers.get(cls)
        if handler is not None:
            return handler(val)
    raise TypeError(f"No attribute handler defined for type: {type(val)}")


class IrTreeRegistry:
    """How nestings of IR values (or types) flatten: lists, tuples and `OpResultList`s
    are nodes, anything else a leaf. Other container types may be registered."""

    def __init__(self) -> None:
        self._nodes: dict[type, tuple[Callable, Callable]] = {}

    def register_node(self, type_: type, to_iterable: Callable, from_iterable: Callable
                      ) -> None:
        """`to_iterable(x) -> (children, aux)`, `from_iterable(aux, children) -> x`."""
        self._nodes[type_] = (to_iterable, from_iterable)

    def flatten(self, xs: Any) -> tuple[list, Any]:
        """(the leaves of `xs`, its structure for `unflatten`)."""
        leaves: list = []

        def walk(x):
            node = self._nodes.get(type(x))
            if node is None:
                leaves.append(x)
                return None
            children, aux = node[0](x)
            return (type(x), aux, [walk(c) for c in children])
        return leaves, walk(xs)

    def leaves(self, xs: Any) -> list:
        """The leaves of `xs` alone; a flat list or tuple of values (what nearly every
        rule returns) is taken as it is."""
        if type(xs) is list or type(xs) is tuple:
            nodes = self._nodes
            for x in xs:
                if type(x) in nodes:
                    return self.flatten(xs)[0]
            return list(xs)
        return self.flatten(xs)[0]

    def unflatten(self, structure: Any, leaves: Sequence[Any]) -> Any:
        """The nesting `structure` with its leaves taken from `leaves` in order."""
        leaves = iter(leaves)

        def build(node):
            if node is None:
                return next(leaves)
            type_, aux, children = node
            return self._nodes[type_][1](aux, [build(c) for c in children])
        return build(structure)


ir_tree_registry = IrTreeRegistry()
ir_tree_registry.register_node(list, lambda xs: (xs, None), lambda _, xs: list(xs))
ir_tree_registry.register_node(tuple, lambda xs: (xs, None), lambda _, xs: tuple(xs))
ir_tree_registry.register_node(ir.OpResultList, lambda xs: (list(xs), None),
                               lambda _, xs: list(xs))


def flatten_ir_values(xs: Any) -> list[ir.Value]:
    """The values of a nesting of sequences of values (what rules may return)."""
    return ir_tree_registry.flatten(xs)[0]


def flatten_ir_types(xs: Any) -> list[ir.Type]:
    """The types of a nesting of sequences of types."""
    return ir_tree_registry.flatten(xs)[0]


def unflatten_ir_values_like_types(xs: Sequence[ir.Value], ys: Sequence[Any]) -> list[Any]:
    """`xs` grouped like `ys`: a value per type, a tuple of values per tuple of types."""
    xs = iter(xs)
    return [next(xs) if isinstance(y, ir.Type) else tuple(next(xs) for _ in flatten_ir_types(y))
            for y in ys]


def shape_tensor(ctx: Any, sizes: Sequence[int | ir.Value]) -> ir.Value:
    """A 1-D int32 tensor of `sizes` (ints or scalar values)."""
    one = ir.RankedTensorType.get([1], ir.IntegerType.get_signless(32))
    scalar_i32 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))

    def piece(d):
        if isinstance(d, (int, np.integer)):
            return constant(np.array([d], np.int32))
        if d.type != scalar_i32:
            d = hlo.convert(scalar_i32, d)
        return hlo.reshape(one, d)
    pieces = [piece(d) for d in sizes]
    if not pieces:
        return constant(np.zeros(0, np.int32))
    return pieces[0] if len(pieces) == 1 else hlo.concatenate(pieces, 0)


def token_type() -> ir.Type:
    """StableHLO's `!stablehlo.token`."""
    return hlo.TokenType.get()


Token = ir.Value
"""An IR value of token type."""


class TokenSet:
    """The effect tokens threaded through a lowering, one per effect, in order (JAX's
    container). Lowerings here thread none, so rules receive and return empty sets;
    the class is what rules that call `jaxpr_subcomp` pass.

    >>> len(TokenSet())
    0
    """

    __slots__ = ("_tokens",)

    def __init__(self, tokens: dict[Any, Token] | None = None):
        self._tokens = dict(tokens) if tokens is not None else {}

    def __len__(self) -> int:
        return len(self._tokens)

    def get(self, effect: Any) -> Token:
        return self._tokens[effect]

    @classmethod
    def create(cls, effects: Sequence[Any]) -> TokenSet:
        """A fresh token for each of `effects`."""
        return cls({effect: hlo.create_token() for effect in effects})

    def items(self) -> tuple[tuple[Any, Token], ...]:
        return tuple(self._tokens.items())

    def effects(self) -> set[Any]:
        return set(self._tokens)

    def subset(self, effects: Sequence[Any]) -> TokenSet:
        return TokenSet({effect: self._tokens[effect] for effect in effects})

    def update_tokens(self, tokens: TokenSet) -> TokenSet:
        """These effects, with the tokens of `tokens` where it has them."""
        return TokenSet({e: tokens._tokens.get(e, t) for e, t in self._tokens.items()})


def module_to_string(module: ir.Module, enable_debug_info: bool | None = None) -> str:
    """The module as MLIR text (with source locations if `enable_debug_info`)."""
    return mlir_context.module_to_string(module, debug_info=bool(enable_debug_info))


def make_ir_context() -> ir.Context:
    """An MLIR context with the StableHLO and CHLO dialects loaded."""
    return make_context()


def module_to_bytecode(module: ir.Module) -> bytes:
    """The module as MLIR bytecode."""
    output = io.BytesIO()
    module.operation.write_bytecode(file=output)
    return output.getvalue()


def jaxpr_subcomp(ctx: ModuleContext, jaxpr: Jaxpr, name_stack: Any, tokens: Any,
                  consts_for_constvars: Sequence[ir.Value], *args: ir.Value,
                  dim_var_values: Sequence[ir.Value], const_lowering: Any,
                  outer_traceback: Any) -> tuple[list[ir.Value], Any]:
    """Lowers `jaxpr` inline at the insertion point: (its outputs, `tokens`).

    JAX's signature; `name_stack`, `dim_var_values`, `const_lowering` and
    `outer_traceback` are not used, and `tokens` comes back unchanged (no effect
    tokens are threaded here)."""
    return lower_jaxpr(ctx, jaxpr, consts_for_constvars, args), tokens


def lower_jaxpr_to_fun(ctx: ModuleContext, name: str, jaxpr: ClosedJaxpr | Jaxpr,
                       effects: Sequence[Any], *, num_const_args: int,
                       main_function: bool = False, replicated_args: Any = None,
                       in_avals: Sequence[Any], arg_shardings: Any = None,
                       result_shardings: Any = None, use_sharding_annotations: bool = True,
                       input_output_aliases: Any = None, xla_donated_args: Any = None,
                       arg_names: Any = None, result_names: Any = None,
                       arg_memory_kinds: Any = None, result_memory_kinds: Any = None,
                       arg_layouts: Any = None, result_layouts: Any = None,
                       propagated_out_mem_kinds: Any = None) -> func.FuncOp:
    """Defines `jaxpr` as a function `name` of the module (public if
    `main_function`) and returns it. Its constants are baked in, so
    `num_const_args` must be 0 and `in_avals` are the jaxpr's; `effects` must be
    empty (no effect tokens are threaded). The sharding, layout, memory-kind and
    naming options of JAX's signature have no effect on one device."""
    closed = jaxpr if isinstance(jaxpr, ClosedJaxpr) else ClosedJaxpr(jaxpr, [])
    _check_plain_function("lower_jaxpr_to_fun", closed, effects, num_const_args, in_avals)
    return _define_function(ctx, closed, name, public=main_function)


def _check_plain_function(who: str, closed: ClosedJaxpr, effects: Sequence[Any],
                          num_const_args: int, in_avals: Sequence[Any]) -> None:
    if effects:
        raise ValueError(f"{who}: effects {list(effects)} cannot be lowered here (no effect "
                         "tokens are threaded on lamella's single-device runtime)")
    if num_const_args:
        raise ValueError(f"{who}: num_const_args={num_const_args}, but constants are "
                         "part of the closed jaxpr here; pass 0")
    if list(in_avals) != list(closed.in_avals):
        raise ValueError(f"{who}: in_avals {list(in_avals)} are not the jaxpr's "
                         f"{list(closed.in_avals)}")


class LoweringResult(NamedTuple):
    """What `lower_jaxpr_to_module` returns (JAX's fields: there are no host
    callbacks or shape-polymorphism state here)."""

    module: ir.Module
    keepalive: Any
    host_callbacks: list[Any]
    shape_poly_state: Any


def lower_jaxpr_to_module(module_name: str, jaxpr: ClosedJaxpr, *, num_const_args: int,
                          in_avals: Sequence[Any], ordered_effects: Sequence[Any],
                          platforms: Sequence[str], backend: Any, axis_context: Any,
                          donated_args: Sequence[bool], replicated_args: Any = None,
                          arg_shardings: Any = None, result_shardings: Any = None,
                          in_layouts: Any = None, out_layouts: Any = None,
                          arg_names: Any = None, result_names: Any = None,
                          num_partitions: int = 1, all_default_mem_kind: bool = True,
                          input_output_aliases: Any = None,
                          propagated_out_mem_kinds: Any = None,
                          lowering_parameters: LoweringParameters) -> LoweringResult:
    """JAX's entry point: the module `jit_<module_name>` whose public `main` computes
    `jaxpr`, for one platform. `num_const_args` must be 0, `in_avals` the jaxpr's
    and `ordered_effects` empty; the sharding, layout and naming options have no
    effect on one device (`lower_closed_jaxpr` is lamella's own form).

    >>> import numpy as np, lamella.core as lc, lamella.lax as lax
    >>> closed = lc.make_jaxpr(lax.sin)(np.float32(1))
    >>> result = lower_jaxpr_to_module(
    ...     "f", closed, num_const_args=0, in_avals=closed.in_avals, ordered_effects=[],
    ...     platforms=["cpu"], backend=None, axis_context=None, donated_args=[False],
    ...     lowering_parameters=LoweringParameters())
    >>> "stablehlo.sine" in str(result.module)
    True
    """
    _check_plain_function("lower_jaxpr_to_module", jaxpr, ordered_effects, num_const_args,
                          in_avals)
    if len(platforms) != 1:
        raise ValueError(f"lower_jaxpr_to_module lowers for one platform, got {platforms}")
    lowered = lower_closed_jaxpr(jaxpr, name=module_name, donated_invars=donated_args,
                                 platform=platforms[0], lowering_parameters=lowering_parameters)
    return LoweringResult(lowered.module, None, [], None)


def core_call_lowering(ctx: LoweringRuleContext, *args: ir.Value, name: str,
                       backend: Any = None, call_jaxpr: ClosedJaxpr | Jaxpr) -> list[ir.Value]:
    """The lowering of a call primitive: `call_jaxpr` as a private function, called."""
    closed = call_jaxpr if isinstance(call_jaxpr, ClosedJaxpr) else ClosedJaxpr(call_jaxpr, [])
    return call_function(ctx.module_context, closed, name, args)


def merge_mlir_modules(dst_module: ir.Module, sym_name: str, src_module: ir.Module,
                       dst_symtab: ir.SymbolTable | None = None) -> str:
    """Moves the functions of `src_module` into `dst_module`, all made private: its
    `main` renamed to `sym_name` (made unique), others renamed where they clash.
    Returns the name `main` got; `src_module` is left empty."""
    src_symtab = ir.SymbolTable(src_module.operation)
    dst_symtab = dst_symtab or ir.SymbolTable(dst_module.operation)
    renamings: dict[str, str] = {}
    for op in src_module.body.operations:
        name = op.attributes["sym_name"].value
        if name == "main" or name in dst_symtab:
            base = new = sym_name if name == "main" else name
            i = 0
            while new in src_symtab or new in dst_symtab or new in renamings.values():
                new, i = f"{base}_{i}", i + 1
            renamings[name] = new
    for op in src_module.body.operations:
        name = op.attributes["sym_name"].value
        if name in renamings:
            src_symtab.set_symbol_name(op, renamings[name])
        op.attributes["sym_visibility"] = ir.StringAttr.get("private")
    for old, new in renamings.items():
        for op in src_module.body.operations:
            src_symtab.replace_all_symbol_uses(old, new, op)
    for op in list(src_module.body.operations):
        dst_module.body.append(op)
        dst_symtab.insert(op)
    return renamings["main"]
