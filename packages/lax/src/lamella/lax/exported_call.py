"""The executor's half of `lamella.core.export`: StableHLO portable artifacts, and
`call_exported_p`, which runs an `Exported` eagerly or inside a traced program.

A shape-polymorphic Exported (JAX's `symbolic_shape` dimensions) is first
specialized to the argument shapes of the call by StableHLO's shape refinement.
An Exported's module is merged into the caller's module as private functions
and called (its unused arguments dropped, a platform index passed first when
it was exported for several platforms), so XLA optimizes across the boundary.
Under vmap each batch element is called in turn; differentiation goes
through the Exported's VJP (in lamella.core.export).
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib import _jax
from jaxlib import xla_client as xc

from lamella.core import ShapedArray, batching
from lamella.core.avals import get_aval
from lamella.core.effects import effect_rules, ordered_effects
from lamella.core.export import (
    DimExpr,
    DisabledSafetyCheck,
    ExportBackend,
    Exported,
    is_symbolic,
    maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version,
    register_backend,
)
from lamella.core.export.exported import _operations
from lamella.core.export.serialization import (
    AbstractNamedSharding,
    LegacyHloSharding,
    hlo_shardings,
)
from lamella.core.sharding import AxisType, Mesh, NamedSharding, PartitionSpec, get_mesh
from lamella.core.trace import Tracer
from lamella.core.tree_util import tree_leaves
from lamella.lax import runtime, spmd_executor
from lamella.lax.callbacks import callback_calls
from lamella.lax.lowering import (
    aval_to_ir_type,
    constant,
    func,
    hlo,
    make_ir_context,
    merge_mlir_modules,
    module_to_bytecode,
    module_to_string,
    register_lowering,
)
from lamella.lax.manual_regions import subgroup_sharding
from lamella.lax.mlir_context import ir
from lamella.lax.shapes import index_in_dim
from lamella.lax.stacking import stack
from lamella.lax.standard import standard_primitive

__all__ = ["call_exported_p"]

call_exported_p = standard_primitive("call_exported", multiple_results=True)


def _default_platform() -> str:
    platform = runtime.default_device().platform
    return "cuda" if platform == "gpu" else platform


def _target_version() -> str:
    from jaxlib.mlir.dialects import stablehlo

    # Readable by StableHLO consumers up to four weeks older (JAX's choice).
    return stablehlo.get_version_from_compatibility_requirement(
        stablehlo.StablehloCompatibilityRequirement.WEEK_4)


def _lower(fun_jit: Any, args: tuple, kwargs: dict, platform: str,
           disabled_checks: Sequence[Any] = ()) -> tuple:
    if platform != _default_platform():
        raise ValueError(f"lamella exports for the platform it runs on ({_default_platform()!r}); "
                         f"got platforms=({platform!r},)")
    lowered = fun_jit.lower(*args, **kwargs)
    module = lowered.compiler_ir("stablehlo")
    in_avals = tree_leaves(lowered.in_avals)
    effects = _callbacks_for_export(fun_jit, lowered, module, disabled_checks)
    main = ir.SymbolTable(module.operation)["main"]
    n_params = len(ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).inputs)
    if n_params != len(in_avals):
        raise ValueError(f"cannot export {getattr(fun_jit, '__name__', fun_jit)}: it closes over "
                         "values traced by an enclosing transformation")
    out_avals = tree_leaves(lowered.out_info)
    extras = _device_fields(lowered, in_avals, out_avals, platform)
    extras.update(effects)
    return module, lowered.in_tree, in_avals, lowered.out_tree, out_avals, extras


# ---------------------------------------------------------------------------
# Host callbacks in an Exported: callable in this process only.

_CALLBACK_CHECK = DisabledSafetyCheck.custom_call("xla_ffi_python_cpu_callback")
# Modules on their way from `_lower` to `_module_bytes` (by id): their callables and
# whether @main threads a token; then, by the module's bytes, the callables a call
# of the Exported hands to XLA with the caller's program.
_pending_callbacks: dict[int, tuple[list, bool]] = {}
_callbacks_of: dict[bytes, list] = {}


def _callbacks_for_export(fun_jit: Any, lowered: Any, module: ir.Module,
                          disabled_checks: Sequence[Any]) -> dict:
    """The effects of an export whose function calls back into Python. JAX 0.10.2
    refuses it whatever the checks; lamella exports it when the caller disables the
    check of the callback's custom call target (the callables stay in this process:
    such an Exported is called here, and not serialized)."""
    program = getattr(lowered, "_program", None)
    callbacks = list(getattr(getattr(program, "lowered", None), "host_callbacks", ()))
    if not callbacks:
        return {}
    if _CALLBACK_CHECK not in disabled_checks:
        raise NotImplementedError(
            "serialization of host_callbacks is not yet implemented (JAX 0.10.2's refusal: "
            f"{getattr(fun_jit, '__name__', fun_jit)} calls back into Python); lamella exports "
            "it for calls in this process with disabled_checks=[DisabledSafetyCheck."
            "custom_call('xla_ffi_python_cpu_callback')]")
    effects = lowered._sig.closed.effects
    ordered = tuple(ordered_effects.filter_in(effects))
    _pending_callbacks[id(module)] = (callbacks, bool(ordered))
    return dict(ordered_effects=ordered,
                unordered_effects=tuple(ordered_effects.filter_not_in(effects)))


def _thread_token(module: ir.Module) -> None:
    """JAX's calling convention for ordered effects: @main takes a token before the
    arrays and returns one before its results; the module's chain of ordered callbacks
    (in @main's body) starts from the first and ends in the second."""
    symbols = ir.SymbolTable(module.operation)
    inner = symbols["main"]
    token_type = hlo.TokenType.get()
    block = inner.regions[0].blocks[0]
    token = block.add_argument(token_type, ir.Location.unknown())
    last = token
    for op in block.operations:
        if op.name == "stablehlo.after_all" and len(op.operands) == 0:
            op.result.replace_all_uses_with(token)
        elif op.name == "stablehlo.custom_call" and len(op.results) and \
                op.results[0].type == token_type:
            last = op.results[0]
    ret = block.operations[len(block.operations) - 1]
    with ir.InsertionPoint(ret):
        func.ReturnOp([*ret.operands, last])
    ret.erase()
    signature = ir.FunctionType(ir.TypeAttr(inner.attributes["function_type"]).value)
    inputs, results = list(signature.inputs), list(signature.results)
    inner.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(
        [*inputs, token_type], [*results, token_type]))
    attrs = {}
    for name, count in (("arg_attrs", len(inputs)), ("res_attrs", len(results))):
        attrs[name] = list(ir.ArrayAttr(inner.attributes[name])) \
            if name in inner.attributes else [ir.DictAttr.get({})] * count
        inner.attributes[name] = ir.ArrayAttr.get([*attrs[name], ir.DictAttr.get({})])
    symbols.set_symbol_name(inner, "_lamella_main_with_token")
    inner.attributes["sym_visibility"] = ir.StringAttr.get("private")
    with ir.InsertionPoint(module.body):
        main = func.FuncOp("main", ([token_type, *inputs], [token_type, *results]))
        main.attributes["sym_visibility"] = ir.StringAttr.get("public")
        main.attributes["arg_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get({}),
                                                         *attrs["arg_attrs"]])
        main.attributes["res_attrs"] = ir.ArrayAttr.get([ir.DictAttr.get({}),
                                                         *attrs["res_attrs"]])
        with ir.InsertionPoint(main.add_entry_block()):
            args = list(main.arguments)
            call = func.CallOp([*results, token_type],
                               ir.FlatSymbolRefAttr.get("_lamella_main_with_token"),
                               [*args[1:], args[0]])
            outs = list(call.results)
            func.ReturnOp([outs[-1], *outs[:-1]])


def _reindex_callbacks(sub: ir.Module, exported: Exported, module_context: Any) -> None:
    """Hands the Exported's callables to the caller's program: its callback custom calls
    name them by their index in the caller's list."""
    callbacks = _callbacks_of.get(exported.mlir_module_serialized)
    if callbacks is None:
        raise ValueError(f"the exported function {exported.fun_name} calls back into Python, "
                         "and its callables are not in this process")
    offset = len(module_context.host_callbacks)
    module_context.host_callbacks.extend(callbacks)
    index_type = ir.IntegerType.get_unsigned(64)
    for op in callback_calls(sub.operation):
        index = ir.IntegerAttr(ir.DictAttr(op.attributes["backend_config"])["index"]).value
        op.attributes["backend_config"] = ir.DictAttr.get(
            {"index": ir.IntegerAttr.get(index_type, offset + index)})


def _device_fields(lowered: Any, in_avals: Sequence[Any], out_avals: Sequence[Any],
                   platform: str) -> dict:
    """For a function over several devices: the number of devices and each argument's
    and result's sharding (JAX's: None where jit was given none)."""
    program = getattr(lowered, "_program", None)
    if not isinstance(program, spmd_executor.LoweredSpmd):
        return {}
    plan = program._key[-1]
    layouts = spmd_executor._analysis(program._key[1])[1]
    in_named = []
    for i, s in enumerate(plan.in_shardings):
        if i not in layouts and isinstance(getattr(s, "named", None), NamedSharding) \
                and not s._hlo_sharding.is_replicated():  # an argument laid out already
            in_named.append(AbstractNamedSharding.of(s.named, platform))
        else:  # jit's in_shardings, or None where it gave none
            in_named.append(AbstractNamedSharding.of(layouts[i], platform)
                            if i in layouts else None)
    in_named = tuple(in_named)
    out_named = tuple(AbstractNamedSharding.of(plan.out_layouts[i], platform)
                      if i in plan.out_layouts else None for i in range(len(out_avals)))
    return dict(nr_devices=len(plan.devices), _in_named_shardings=in_named,
                _out_named_shardings=out_named,
                in_shardings_hlo=hlo_shardings(in_named, in_avals),
                out_shardings_hlo=hlo_shardings(out_named, out_avals))


def _module_bytes(module: ir.Module) -> bytes:
    callbacks, threads_token = _pending_callbacks.pop(id(module), ([], False))
    with module.context:
        copy = ir.Module.parse(module.operation.get_asm(enable_debug_info=True))
        if threads_token:
            with ir.Location.unknown():
                _thread_token(copy)
        main = ir.SymbolTable(copy.operation)["main"]
        inputs = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).inputs
        # JAX refines the shapes of a module that says it is polymorphic before compiling.
        polymorphic = any(isinstance(t, ir.RankedTensorType) and not t.has_static_shape
                          for t in inputs)
        copy.operation.attributes["jax.uses_shape_polymorphism"] = ir.BoolAttr.get(polymorphic)
    data = _jax.mlir.serialize_portable_artifact(copy, _target_version(), False)
    if callbacks:
        _callbacks_of[data] = callbacks
    return data


def _module_text(serialized: bytes) -> str:
    context = make_ir_context()
    with context:
        return module_to_string(_jax.mlir.deserialize_portable_artifact(serialized, context))


def _check_callable(exported: Exported, platform: str) -> None:
    who = f"the exported function {exported.fun_name}"
    if platform not in exported.platforms \
            and DisabledSafetyCheck.platform() not in exported.disabled_safety_checks:
        raise ValueError(f"{who} was exported for {exported.platforms}, not for {platform!r}")
    version = exported.calling_convention_version
    if not (minimum_supported_calling_convention_version <= version
            <= maximum_supported_calling_convention_version):
        raise ValueError(f"{who} uses calling convention {version}; lamella calls versions "
                         f"{minimum_supported_calling_convention_version} to "
                         f"{maximum_supported_calling_convention_version}")
    if (exported.ordered_effects or exported.unordered_effects) \
            and exported.mlir_module_serialized not in _callbacks_of:
        raise ValueError(f"{who} has effects {exported.ordered_effects} "
                         f"{exported.unordered_effects} whose callbacks are not in this process")


def _call(exported: Exported, flat: Sequence[Any]) -> list[Any]:
    if exported.nr_devices > 1 and not (exported.ordered_effects or exported.unordered_effects
                                        or any(isinstance(x, Tracer) for x in flat)):
        return _call_over_devices(exported, flat)  # (callbacks go with a caller's program)
    _check_callable(exported, _default_platform())
    if len(flat) != len(exported.in_avals):
        raise TypeError(f"{exported.fun_name} takes {len(exported.in_avals)} arrays, "
                        f"got {len(flat)}")
    given = [get_aval(x) for x in flat]
    for i, (g, aval) in enumerate(zip(given, exported.in_avals)):
        if g.dtype != aval.dtype or len(g.shape) != len(aval.shape) or any(
                not isinstance(d, DimExpr) and d != n for d, n in zip(aval.shape, g.shape)):
            raise TypeError(f"argument {i} of the exported function {exported.fun_name}: "
                            f"expected {aval.str_short()}, got {g.str_short()}")
    shapes = tuple(tuple(g.shape) for g in given)
    if any(is_symbolic(a) for a in exported.in_avals):
        values = _check_dimensions(exported, shapes)
        if any(is_symbolic(g) for g in given):
            # Called while exporting another polymorphic function: the module stays
            # polymorphic, its result shapes in terms of the caller's dimensions.
            exported = dataclasses.replace(
                exported, in_avals=tuple(ShapedArray(g.shape, g.dtype) for g in given),
                out_avals=tuple(ShapedArray(_substitute(a.shape, values), a.dtype)
                                for a in exported.out_avals))
        else:
            exported = _specialized(exported, shapes)
    return call_exported_p.bind(*flat, exported=exported)


def _substitute(shape: tuple, values: dict[str, Any]) -> tuple:
    return tuple(d.evaluate(values) if isinstance(d, DimExpr) else d for d in shape)


def _mesh_for(exported: Exported, flat: Sequence[Any]) -> Mesh:
    """The mesh a call over several devices runs on: that of the arguments laid out
    over one (JAX's rule), else the current mesh."""
    for x in flat:
        named = getattr(getattr(x, "_sharding", None), "named", None)
        if isinstance(named, NamedSharding) and named.mesh.size == exported.nr_devices:
            return named.mesh
    mesh = get_mesh()
    if mesh is not None and not mesh.empty and mesh.size == exported.nr_devices:
        return mesh
    count = max((len(getattr(x, "_arrays", ())) for x in flat), default=1) or 1
    raise ValueError(f"Function {exported.fun_name} was exported for {exported.nr_devices} "
                     f"devices and is called in a context with {count} devices, which is not "
                     "allowed: pass arguments laid out over a mesh of "
                     f"{exported.nr_devices} devices, or call it inside use_mesh(mesh)")


_programs_over_devices: dict[tuple, Any] = {}


def _call_over_devices(exported: Exported, flat: Sequence[Any]) -> list[Any]:
    """Runs an Exported of several devices on a mesh of that many: arguments laid out as
    it was exported, results as its out shardings say (XLA's choice where None)."""
    _check_callable(exported, _default_platform())
    if len(flat) != len(exported.in_avals):
        raise TypeError(f"{exported.fun_name} takes {len(exported.in_avals)} arrays, "
                        f"got {len(flat)}")
    mesh = _mesh_for(exported, flat)
    exported_mesh = next((s for s in (*exported._in_named_shardings,
                                      *exported._out_named_shardings)
                          if isinstance(s, AbstractNamedSharding)), None)
    if exported_mesh is not None:  # the same devices, arranged as the exported mesh
        mesh = exported_mesh.on(mesh).mesh
    devices = mesh._flat_devices
    kept = exported.module_kept_var_idx
    in_named = exported._in_named_shardings or (None,) * len(flat)
    out_named = exported._out_named_shardings or (None,) * len(exported.out_avals)
    replicated = NamedSharding(mesh, PartitionSpec())
    in_shardings = []
    for i in kept:
        ndim = len(exported.in_avals[i].shape)
        if isinstance(in_named[i], LegacyHloSharding):  # device positions only
            in_shardings.append(runtime.mesh_sharding(devices, in_named[i].text))
            continue
        named = replicated if in_named[i] is None else in_named[i].on(mesh)
        in_shardings.append(runtime.mesh_sharding(devices, named.hlo_sharding_text(ndim),
                                                  named))
    key = (exported.mlir_module_serialized, devices, mesh.axis_names)
    program = _programs_over_devices.get(key)
    if program is None:
        program = _program_over_devices(exported, mesh, in_shardings, out_named)
        if len(_programs_over_devices) > 64:
            _programs_over_devices.pop(next(iter(_programs_over_devices)))
        _programs_over_devices[key] = program
    given = [get_aval(x) for x in flat]
    for i, (g, aval) in enumerate(zip(given, exported.in_avals)):
        if (g.dtype, tuple(g.shape)) != (aval.dtype, tuple(aval.shape)):
            raise TypeError(f"argument {i} of the exported function {exported.fun_name}: "
                            f"expected {aval.str_short()}, got {g.str_short()}")
    return program(*[flat[i] for i in kept])


def _program_over_devices(exported: Exported, mesh: Mesh, in_shardings: list,
                          out_named: Sequence[Any]) -> Any:
    """The Exported's module compiled for ``mesh``'s devices; an argument exported with
    no sharding is laid out as XLA chose for it (what the module's own annotations,
    e.g. a shard_map's, imply)."""
    devices = mesh._flat_devices
    by_text = {s.hlo_sharding_text(len(a.shape)): s.on(mesh)
               for s, a in zip(out_named, exported.out_avals)
               if isinstance(s, AbstractNamedSharding)}

    def named_for(hlo: Any, ndim: int) -> Any:
        for text, named in by_text.items():
            if xc.HloSharding.from_string(text) == hlo:
                return named
        return spmd_executor._match(mesh, hlo, ndim)

    context = make_ir_context()
    with context:
        module = _jax.mlir.deserialize_portable_artifact(exported.mlir_module_serialized,
                                                         context)
    if b"lapack_" in exported.mlir_module_serialized:
        runtime.register_lapack_targets()
    kept = exported.module_kept_var_idx
    specs = [(tuple(exported.in_avals[i].shape), np.dtype(exported.in_avals[i].dtype))
             for i in kept]
    program = runtime.SpmdExecutable(module, devices, in_shardings, exported.fun_name,
                                     specs, list(exported.out_avals), named_for)
    chosen = program.xla_executable.get_parameter_shardings()
    named_in = exported._in_named_shardings or (None,) * len(exported.in_avals)
    for position, (i, proto) in enumerate(zip(kept, chosen or ())):
        if named_in[i] is None:
            hlo = xc.HloSharding.from_proto(proto)
            program.in_shardings[position] = runtime.spmd.with_hlo(
                devices, hlo, named_for(hlo, len(exported.in_avals[i].shape)))
    return program


def _check_dimensions(exported: Exported, shapes: tuple[tuple[Any, ...], ...]
                      ) -> dict[str, Any]:
    """Solves the dimension variables from the argument sizes (ints, or the caller's
    symbolic dimensions) and checks that every symbolic dimension and constraint
    holds, naming the one that does not. Returns the variables' values."""
    values: dict[str, int] = {}
    origin: dict[str, str] = {}
    for i, (aval, shape) in enumerate(zip(exported.in_avals, shapes)):
        for axis, (d, n) in enumerate(zip(aval.shape, shape)):
            name = d.variable_name if isinstance(d, DimExpr) else None
            if name is not None and name not in values:
                values[name], origin[name] = n, f"args[{i}].shape[{axis}]"
    for i, (aval, shape) in enumerate(zip(exported.in_avals, shapes)):
        for axis, (d, n) in enumerate(zip(aval.shape, shape)):  # k*v + c: solve for v
            linear = d.as_linear() if isinstance(d, DimExpr) else None
            if linear is not None and linear[0] not in values:
                v, k, c = linear
                values[v], origin[v] = (n - c) // k, f"args[{i}].shape[{axis}] (= {d})"
    who = f"the exported function {exported.fun_name}"
    found = ", ".join(f"'{v}' = {n} from {origin[v]}" for v, n in values.items())
    assertions = DisabledSafetyCheck.shape_assertions() not in exported.disabled_safety_checks
    for name, n in values.items():
        if assertions and n < 1:
            raise ValueError(f"{who}: expected value >= 1 for dimension variable '{name}', "
                             f"got {name} = {n} from {origin[name]}")
    scopes = {}
    for i, (aval, shape) in enumerate(zip(exported.in_avals, shapes)):
        for axis, (d, n) in enumerate(zip(aval.shape, shape)):
            if not isinstance(d, DimExpr):
                continue
            scopes[id(d.scope)] = d.scope
            missing = d.variables() - values.keys()
            if missing:
                raise ValueError(f"{who}: dimension variables {sorted(missing)} of '{d}' are "
                                 "not the size of any argument dimension")
            if d.evaluate(values) != n:
                raise ValueError(f"{who}: args[{i}].shape[{axis}] is {n}, but the "
                                 f"specification '{d}' is {d.evaluate(values)} (with {found})")
    for scope in scopes.values() if assertions else ():
        for kind, diff, text in scope.constraints:
            value = diff.evaluate(values)
            if (value != 0) if kind == "==" else (value < 0):
                raise ValueError(f"{who}: the arguments violate the symbolic shape "
                                 f"constraint {text} (with {found})")
    return values


# Shape-polymorphic Exporteds specialized to the argument shapes they were called with.
_specializations: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _specialized(exported: Exported, shapes: tuple[tuple[int, ...], ...]) -> Exported:
    """``exported`` with its dimension variables fixed by ``shapes``: the module's @main
    given those static argument types, then refined by StableHLO's shape refinement
    (which also checks the export's shape assertions)."""
    cache = _specializations.setdefault(exported, {})
    if shapes in cache:
        return cache[shapes]
    context = make_ir_context()
    with context, ir.Location.unknown():
        module = _jax.mlir.deserialize_portable_artifact(exported.mlir_module_serialized,
                                                         context)
        symbols = ir.SymbolTable(module.operation)
        polymorphic = symbols["main"]
        signature = ir.FunctionType(ir.TypeAttr(polymorphic.attributes["function_type"]).value)
        inputs = list(signature.inputs)
        first = 1 if len(exported.platforms) > 1 else 0
        for position, i in enumerate(exported.module_kept_var_idx, start=first):
            element = ir.RankedTensorType(inputs[position]).element_type
            inputs[position] = ir.RankedTensorType.get(shapes[i], element)
        # A new @main of static argument types converts them to the dynamic ones and
        # calls the old one; shape refinement then makes every shape inside static.
        symbols.set_symbol_name(polymorphic, "_lamella_polymorphic_main")
        polymorphic.attributes["sym_visibility"] = ir.StringAttr.get("private")
        with ir.InsertionPoint(module.body):
            main = func.FuncOp("main", (inputs, list(signature.results)))
            main.attributes["sym_visibility"] = ir.StringAttr.get("public")
            with ir.InsertionPoint(main.add_entry_block()):
                operands = [a if a.type == t else hlo.ConvertOp(t, a).result
                            for a, t in zip(main.arguments, signature.inputs)]
                call = func.CallOp(list(signature.results),
                                   ir.FlatSymbolRefAttr.get("_lamella_polymorphic_main"),
                                   operands)
                func.ReturnOp(list(call.results))
        try:
            refined = ir.Module.parse(_jax.mlir.refine_polymorphic_shapes(
                module_to_bytecode(module), enable_shape_assertions=DisabledSafetyCheck
                .shape_assertions() not in exported.disabled_safety_checks,
                validate_static_shapes=True, enable_shardy=True))
        except Exception as err:
            raise ValueError(f"the exported function {exported.fun_name} cannot take "
                             f"arguments of shapes {list(shapes)}: {err}") from None
        main = ir.SymbolTable(refined.operation)["main"]
        results = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).results
        out_avals = tuple(ShapedArray(tuple(ir.RankedTensorType(t).shape), a.dtype)
                          for t, a in zip(results, exported.out_avals))
        data = _jax.mlir.serialize_portable_artifact(refined, _target_version(), False)
    in_avals = tuple(ShapedArray(shape, a.dtype) for shape, a in zip(shapes, exported.in_avals))
    special = dataclasses.replace(exported, in_avals=in_avals, out_avals=out_avals,
                                  mlir_module_serialized=data, _get_vjp=None)
    cache[shapes] = special
    return special


def _abstract_eval(*avals: ShapedArray, exported: Exported) -> list[ShapedArray]:
    return [ShapedArray(a.shape, a.dtype) for a in exported.out_avals]


call_exported_p.def_abstract_eval(_abstract_eval)


def _lowering(ctx: Any, *args: ir.Value, exported: Exported) -> list[ir.Value]:
    module_context = ctx.module_context
    _check_callable(exported, ctx.platform if ctx.platform != "gpu" else "cuda")
    module = module_context.module
    sub = _jax.mlir.deserialize_portable_artifact(exported.mlir_module_serialized,
                                                  module.context)
    if exported.ordered_effects or exported.unordered_effects:
        _reindex_callbacks(sub, exported, module_context)
    region = module_context.axis_context
    if exported.nr_devices > 1:
        _plain_boundary(sub)
        if region is not None:
            _into_manual_region(sub, region, exported.fun_name)
    symbols = ir.SymbolTable(module.operation)
    base = "".join(c if c.isalnum() else "_" for c in f"call_exported_{exported.fun_name}")
    callee = merge_mlir_modules(module, base, sub, symbols)
    for op in module.body.operations:  # later private functions must not reuse these names
        module_context.names.add(ir.StringAttr(op.attributes["sym_name"]).value)
    function_type = ir.FunctionType(ir.TypeAttr(symbols[callee].attributes["function_type"]).value)
    if b"lapack_" in exported.mlir_module_serialized:
        runtime.register_lapack_targets()  # JAX's CPU linear algebra calls jaxlib's kernels
    operands = [args[i] for i in exported.module_kept_var_idx]
    if exported.nr_devices > 1:
        operands = _laid_out(operands, [exported._in_named_shardings[i] if
                                        exported._in_named_shardings else None
                                        for i in exported.module_kept_var_idx],
                             region, exported.fun_name)
    if len(exported.platforms) > 1:
        # The platform index comes first, as i32 or i64 (JAX's x64 mode decides).
        platform = ctx.platform if ctx.platform != "gpu" else "cuda"
        index = exported.platforms.index(platform) if platform in exported.platforms else 0
        index_type = ir.RankedTensorType(function_type.inputs[0])
        width = ir.IntegerType(index_type.element_type).width
        operands.insert(0, constant(np.array(index, np.int64 if width == 64 else np.int32)))
    block = ir.InsertionPoint.current.block
    if exported.ordered_effects:  # the caller's chain of ordered effects goes through it
        token = module_context.effect_tokens.get(block)
        operands.insert(1 if len(exported.platforms) > 1 else 0,
                        hlo.after_all([]) if token is None else token)
    # A polymorphic callee takes (and gives) dynamic sizes where the caller's are known,
    # or symbolic in the caller's own terms: convert to its types and back.
    operands = [a if a.type == t else hlo.ConvertOp(t, a).result
                for a, t in zip(operands, function_type.inputs)]
    call = func.CallOp(list(function_type.results), ir.FlatSymbolRefAttr.get(callee), operands)
    results = list(call.results)
    if exported.ordered_effects:
        module_context.effect_tokens[block] = results.pop(0)
    if exported.nr_devices > 1:
        results = _laid_out(results, exported._out_named_shardings or [None] * len(results),
                            region, exported.fun_name)
    wanted = [aval_to_ir_type(a) for a in ctx.avals_out]
    return [r if r.type == t else hlo.ConvertOp(t, r).result for r, t in zip(results, wanted)]


def _laid_out(values: Sequence[ir.Value], shardings: Sequence[Any],
              region: Mesh | None = None, name: str = "") -> list[ir.Value]:
    """``values`` constrained to the Exported's layouts (None: as XLA chooses), as JAX
    does around the call; inside a manual region (`region`), in the region's form."""
    out = []
    for value, sharding in zip(values, shardings):
        if sharding is not None:
            ndim = ir.RankedTensorType(value.type).rank
            text = sharding.hlo_sharding_text(ndim)
            if region is not None:
                text = _in_region(text, ndim, region, name)
            op = hlo.CustomCallOp([value.type], [value], call_target_name="Sharding")
            op.attributes["mhlo.sharding"] = ir.StringAttr.get(text)
            value = op.results[0]
        out.append(value)
    return out


def _in_region(text: str, ndim: int, region: Mesh, name: str) -> str:
    """The layout `text` (HloSharding) of an Exported's value inside a manual region,
    whose mesh `region` types its manual axes Manual: replicated there is each device
    (or manual subgroup) holding its block whole; a layout splitting the value over
    devices cannot be had there (JAX fails too)."""
    if not xc.HloSharding.from_string(text).is_replicated():
        raise ValueError(
            f"{name}, exported over several devices, cannot be called inside shard_map: it "
            f"splits a value over the devices ({text}), and inside shard_map each device "
            "holds its own block")
    manual = frozenset(n for n, t in zip(region.axis_names, region.axis_types)
                       if t == AxisType.Manual)
    return subgroup_sharding(region, ((),) * ndim, manual)


def _into_manual_region(sub: ir.Module, region: Mesh, name: str) -> None:
    """The annotations of an Exported over several devices called inside a manual region
    (shard_map's, pmap's), in the region's form: XLA aborts the process on any other
    annotation there."""
    def visit(op: Any) -> None:
        for inner in op.regions:
            for block in inner.blocks:
                for child in block.operations:
                    visit(child.operation)
        if op.name.startswith("sdy."):
            raise ValueError(f"{name}, exported over several devices, lays values out with "
                             f"Shardy ({op.name}), which cannot be called inside shard_map")
        if "mhlo.sharding" not in op.attributes:
            return
        if len(op.results) != 1:
            raise ValueError(f"{name}, exported over several devices, cannot be called "
                             "inside shard_map: it places values on devices itself")
        text = ir.StringAttr(op.attributes["mhlo.sharding"]).value
        rank = ir.RankedTensorType(op.results[0].type).rank
        op.attributes["mhlo.sharding"] = ir.StringAttr.get(_in_region(text, rank, region, name))

    visit(sub.operation)


def _plain_boundary(sub: ir.Module) -> None:
    """An Exported's @main without layouts on its boundary (the call constrains its
    operands and results instead), and without Shardy's mesh when nothing else uses it:
    JAX's exports (Shardy) then merge into lamella's programs (XLA's sharding form)."""
    main = ir.SymbolTable(sub.operation)["main"]
    for name in ("arg_attrs", "res_attrs"):
        if name in main.attributes:
            main.attributes[name] = ir.ArrayAttr.get([
                ir.DictAttr.get({a.name: a.attr for a in ir.DictAttr(d)
                                 if a.name not in ("sdy.sharding", "mhlo.sharding")})
                for d in ir.ArrayAttr(main.attributes[name])])
    meshes = [op for op in sub.body.operations if op.name == "sdy.mesh"]
    rest = "\n".join(str(op) for op in sub.body.operations if op.name != "sdy.mesh")
    if meshes and "sdy." not in rest:
        for op in meshes:
            op.erase()


register_lowering(call_exported_p, _lowering)
# A call of an Exported that calls back has its effects (kept, ordered, waited for).
effect_rules[call_exported_p] = lambda *, exported: frozenset(
    (*exported.ordered_effects, *exported.unordered_effects))


def _batching_rule(args: Sequence[Any], dims: Sequence[Any], *, exported: Exported) -> tuple:
    size = next(x.shape[d] for x, d in zip(args, dims) if d is not batching.not_mapped)
    rows = []
    for i in range(size):
        sliced = [x if d is batching.not_mapped else index_in_dim(x, i, d, keepdims=False)
                  for x, d in zip(args, dims)]
        rows.append(call_exported_p.bind(*sliced, exported=exported))
    outs = [stack([row[j] for row in rows]) for j in range(len(exported.out_avals))]
    return outs, [0] * len(outs)


batching.primitive_batchers[call_exported_p] = _batching_rule

_operations["hlo_sharding"] = xc.HloSharding.from_string  # Exported's in/out_shardings_hlo


def _hlo_sharding_text_from_proto(data: bytes) -> str:
    proto = xc.OpSharding()
    proto.ParseFromString(data)
    return str(xc.HloSharding.from_proto(proto))


_operations["hlo_sharding_text_from_proto"] = _hlo_sharding_text_from_proto
_operations["named_from_hlo"] = lambda mesh, text, ndim: spmd_executor._match(
    mesh, xc.HloSharding.from_string(text), ndim)

register_backend(ExportBackend(lower=_lower, module_bytes=_module_bytes, module_text=_module_text,
                               call=_call, default_platform=_default_platform))
