"""Running a jit call on several devices: where it runs, and the SPMD program for it.

A call runs on several devices when an argument is spread over a mesh, or when
its jaxpr holds a `shard_map` or a sharding constraint. All of those must use
one set of devices (XLA's device assignment); each argument keeps its layout
(host values and single-device arrays are replicated), and XLA's SPMD
partitioner lays out the rest. Programs are cached per jaxpr and per layout of
the arguments. A call of an Exported made for several devices runs on the
arguments' mesh, or on the current one, and must have as many devices.

Host callbacks in such a program run where JAX 0.10.2 runs them: once, with
whole values, on the first device (or the one their `sharding=` names), XLA
gathering their operands there; inside a manual region (shard_map, pmap) or when
partitioned, on every device with its part. A callback's exception is kept and
raised once the call is done (the other devices would otherwise wait for the
failed one at their next collective until XLA aborts the process).
"""

from __future__ import annotations

import threading
import traceback
import weakref
from typing import Any

import numpy as np

from lamella.core.jaxpr import ClosedJaxpr, Jaxpr
from lamella.core.jaxpr_builders import jaxprs_in_params
from lamella.core.sharding import (
    AxisType,
    Mesh,
    NamedSharding,
    PartitionSpec,
    get_mesh,
    sharding_constraint_p,
)
from lamella.lax import runtime
from lamella.lax.callbacks import callback_calls, each_result_sharding
from lamella.lax.lowering import LoweredModule, ir, lower_closed_jaxpr

_meshes_of: dict[int, tuple[Any, tuple]] = {}


def _walk(jaxpr: Jaxpr, found: list) -> None:
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "shard_map":  # lamella.lax.shard_map's primitive
            found.append(eqn.params["mesh"])
        elif eqn.primitive is sharding_constraint_p:
            found.append(eqn.params["sharding"].mesh)
        for sub in jaxprs_in_params(eqn.params):
            _walk(sub, found)


def _parameter_layouts(jaxpr: Jaxpr) -> dict[int, NamedSharding]:
    """Parameters whose first use is a sharding constraint on them (what jit's
    in_shardings make): that layout is where the parameter is put."""
    position = {id(v): i for i, v in enumerate(jaxpr.invars)}
    layouts: dict[int, NamedSharding] = {}
    seen: set[int] = set()
    for eqn in jaxpr.eqns:
        for v in eqn.invars:
            i = position.get(id(v))
            if i is None or i in seen:
                continue
            seen.add(i)
            if eqn.primitive is sharding_constraint_p:
                layouts[i] = eqn.params["sharding"]
    return layouts


def _result_layouts(jaxpr: Jaxpr) -> dict[int, NamedSharding]:
    """Results made by a sharding constraint (what jit's out_shardings make): that layout
    is the result's, not whatever propagation would give it."""
    made_by = {id(eqn.outvars[0]): eqn.params["sharding"] for eqn in jaxpr.eqns
               if eqn.primitive is sharding_constraint_p}
    return {i: made_by[id(v)] for i, v in enumerate(jaxpr.outvars) if id(v) in made_by}


def _exported_over_devices(jaxpr: Jaxpr, found: list) -> None:
    """The calls of Exported functions over several devices: (name, device count)."""
    for eqn in jaxpr.eqns:
        exported = eqn.params.get("exported") if eqn.primitive.name == "call_exported" \
            else None
        if exported is not None and exported.nr_devices > 1:
            found.append((exported.fun_name, exported.nr_devices))
        for sub in jaxprs_in_params(eqn.params):
            _exported_over_devices(sub, found)


def _analysis(closed: ClosedJaxpr
              ) -> tuple[tuple[Mesh, ...], dict[int, NamedSharding], dict[int, NamedSharding],
                         dict, tuple]:
    """What the jaxpr says about devices (meshes, parameter and result layouts, the
    device counts of Exported functions it calls), and a dict of the plans made for it
    so far; both live as long as `closed`."""
    entry = _meshes_of.get(id(closed))
    if entry is not None and entry[0]() is closed:
        return entry[1]
    found: list = []
    _walk(closed.jaxpr, found)
    exported: list = []
    _exported_over_devices(closed.jaxpr, exported)
    result = (tuple(dict.fromkeys(found)), _parameter_layouts(closed.jaxpr),
              _result_layouts(closed.jaxpr), {}, tuple(exported))

    key = id(closed)

    def drop(_):
        _meshes_of.pop(key, None)
    _meshes_of[key] = (weakref.ref(closed, drop), result)
    return result


def meshes_in(closed: ClosedJaxpr) -> tuple[Mesh, ...]:
    """The meshes the jaxpr's shard_maps and sharding constraints name (cached)."""
    return _analysis(closed)[0]


class Plan:
    """Where a call runs: the devices (partition order), a mesh over them, and each
    argument's layout."""

    def __init__(self, devices: tuple, mesh: Mesh | None, in_shardings: list,
                 out_layouts: dict[int, NamedSharding] | None = None):
        self.devices = devices
        self.mesh = mesh
        self.in_shardings = in_shardings
        self.out_layouts = out_layouts or {}
        # The mesh names the results' axes: programs over other meshes aren't shared.
        self.key = (devices, mesh, tuple(str(s._hlo_sharding) for s in in_shardings))


def _describe(i: int, a: Any) -> str:
    ids = sorted(d.id for d in a._sharding._internal_device_list)
    return f"argument {i} with shape {a.aval.str_short()} and with device ids {ids}"


_MAX_PLANS = 64  # per jaxpr: one per combination of argument layouts seen


def plan(closed: ClosedJaxpr, args: list) -> Plan | None:
    """The devices a call runs on, or None for the default device alone (cached per
    jaxpr and argument layouts: the plan depends on nothing else)."""
    plans = _analysis(closed)[3]
    # Equal jaxlib shardings may carry different user shardings (meshes with other axis
    # names): those are told apart by identity (the key holds them alive).
    key = tuple((a._sharding, id(getattr(a._sharding, "named", None)), a._committed)
                if type(a) is runtime.Array else None for a in args)
    if _analysis(closed)[4]:  # an Exported over several devices may take the current mesh
        key += (get_mesh(),)
    try:
        return plans[key]
    except KeyError:
        pass
    made = _plan(closed, args)
    if len(plans) < _MAX_PLANS:
        plans[key] = made
    return made


def _plan(closed: ClosedJaxpr, args: list) -> Plan | None:
    made = _plan_devices(closed, args)
    for name, count in _analysis(closed)[4]:
        have = 1 if made is None else len(made.devices)
        if have != count:  # JAX's error
            raise ValueError(f"Function {name} was exported for {count} devices and is called "
                             f"in a context with {have} devices, which is not allowed.")
    return made


def _plan_devices(closed: ClosedJaxpr, args: list) -> Plan | None:
    meshes = list(meshes_in(closed))
    spread: list = []
    committed: list = []
    for i, a in enumerate(args):
        if type(a) is not runtime.Array:
            continue
        sharding = a._sharding
        if isinstance(sharding, runtime.MeshSharding):
            spread.append((i, a))
            if sharding.named is not None and isinstance(sharding.named, NamedSharding):
                meshes.append(sharding.named.mesh)
        elif a._committed:
            committed.append((i, a))
    if not meshes and not spread and _analysis(closed)[4]:
        current = get_mesh()  # an Exported over several devices runs on the current mesh
        if current is not None and not current.empty:
            meshes.append(current)
    if not meshes and not spread:
        default = runtime.default_device()
        if all(a._sharding._device == default for _, a in committed):
            return None
    device_sets = {m._flat_devices for m in meshes}
    device_sets |= {tuple(a._sharding._internal_device_list) for _, a in spread}
    device_sets |= {tuple(a._sharding._internal_device_list) for _, a in committed}
    if len(device_sets) > 1:
        shown = [_describe(i, a) for i, a in spread + committed]
        shown += [f"a mesh over device ids {[d.id for d in m._flat_devices]}" for m in meshes]
        raise ValueError("Received incompatible devices for jitted computation. Got "
                         + " and ".join(shown) + "; put every argument on the same devices "
                         "(device_put) first")
    devices = device_sets.pop()
    mesh = meshes[0] if meshes else None
    current = get_mesh()
    if mesh is not None and current is not None and current.axis_names == mesh.axis_names \
            and current.devices.shape == mesh.devices.shape \
            and current._flat_devices == mesh._flat_devices:
        # The same devices and axes, perhaps typed otherwise inside (auto_axes and
        # explicit_axes retype them): results are named over the mesh of the call (JAX).
        mesh = current
    if mesh is None:
        grid = np.empty(len(devices), dtype=object)
        grid[:] = devices
        mesh = Mesh(grid, ("_devices",))
    replicated = runtime.mesh_sharding(devices, "{replicated}",
                                       NamedSharding(mesh, PartitionSpec()))
    layouts = _analysis(closed)[1]
    in_shardings = []
    for i, (a, aval) in enumerate(zip(args, closed.in_avals)):
        if type(a) is runtime.Array and isinstance(a._sharding, runtime.MeshSharding):
            in_shardings.append(a._sharding)
        elif i in layouts:  # a host value or single-device array goes where jit asks
            named = layouts[i]
            in_shardings.append(runtime.mesh_sharding(
                devices, named.hlo_sharding_text(len(aval.shape)), named))
        else:
            in_shardings.append(replicated)
    return Plan(devices, mesh, in_shardings, _analysis(closed)[2])


def annotate(lowered: LoweredModule, plan: Plan) -> None:
    """Marks `lowered`'s module as `plan`'s SPMD program: each parameter's layout
    (`mhlo.sharding`) and the number of partitions."""
    from lamella.lax import mlir_context
    module = lowered.module
    main = mlir_context.main_function(module)
    with module.context, ir.Location.unknown():
        if "arg_attrs" in main.attributes:
            attrs = [{a.name: a.attr for a in d} for d in map(ir.DictAttr, main.arg_attrs)]
        else:
            attrs = [{} for _ in plan.in_shardings]
        for d, s in zip(attrs, plan.in_shardings):
            d["mhlo.sharding"] = ir.StringAttr.get(str(s._hlo_sharding))
        main.arg_attrs = ir.ArrayAttr.get([ir.DictAttr.get(d) for d in attrs])
        if plan.out_layouts and len(main.type.results) == len(lowered.out_avals):
            _set_result_shardings(main, {
                i: named.hlo_sharding_text(len(lowered.out_avals[i].shape))
                for i, named in plan.out_layouts.items()})
        module.operation.attributes["mhlo.num_partitions"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(32), len(plan.devices))
        if lowered.host_callbacks:
            _place_callbacks(module, plan.devices)


def _place_callbacks(module: Any, devices: tuple) -> None:
    """Host callbacks outside a manual region run once with whole values (as JAX's): on
    the device their `sharding=` names, else on the first; XLA gathers their operands
    there and spreads their results."""
    from lamella.lax.callbacks import DEVICE_ATTRIBUTE
    positions = {d.id: i for i, d in enumerate(devices)}
    for op in callback_calls(module.operation):
        position = 0
        if DEVICE_ATTRIBUTE in op.attributes:
            device = ir.IntegerAttr(op.attributes[DEVICE_ATTRIBUTE]).value
            if device not in positions:
                raise ValueError(f"a callback was asked to run on device {device}, which is "
                                 f"not among the program's devices {sorted(positions)}")
            position = positions[device]
        if "mhlo.sharding" not in op.attributes:
            op.attributes["mhlo.sharding"] = ir.StringAttr.get(
                each_result_sharding(f"{{maximal device={position}}}", len(op.results)))


def _replicate_results(module: Any, positions: list[int]) -> None:
    """Marks those results of `module`'s main replicated."""
    from lamella.lax import mlir_context
    with module.context:
        _set_result_shardings(mlir_context.main_function(module),
                              dict.fromkeys(positions, "{replicated}"))


def _set_result_shardings(main: Any, texts: dict[int, str]) -> None:
    """Sets the `mhlo.sharding` of `main`'s results `texts` names (HloSharding texts),
    keeping their other attributes."""
    attrs = [{a.name: a.attr for a in d} for d in map(ir.DictAttr, main.res_attrs)] \
        if "res_attrs" in main.attributes else [{} for _ in main.type.results]
    for i, text in texts.items():
        attrs[i]["mhlo.sharding"] = ir.StringAttr.get(text)
    main.res_attrs = ir.ArrayAttr.get([ir.DictAttr.get(d) for d in attrs])


class _DeferredErrors:
    """A callback that raises on one device must not stop that device's program: the
    others would wait for it at their next collective until XLA aborts the process (as
    JAX 0.10.2 does, after 40 s). Each callback of a program over several devices keeps
    its exception instead and gives XLA zeros of its result types; later callbacks of
    the call are skipped, and the call raises XLA's error for the first exception once
    every device is done."""

    def __init__(self, module: Any, callbacks: list):
        from lamella.lax import mlir_context
        zeros: dict[int, list] = {}
        for op in callback_calls(module.operation):
            index = ir.IntegerAttr(ir.DictAttr(op.attributes["backend_config"])["index"]).value
            zeros[index] = [None if str(r.type) == "!stablehlo.token"
                            else mlir_context.shape_and_dtype(r.type) for r in op.results]
        self.errors: list[BaseException] = []
        self.lock = threading.Lock()
        self.callbacks = [self._keeping(c, zeros.get(i, [])) for i, c in enumerate(callbacks)]

    def _keeping(self, callback: Any, results: list) -> Any:
        def call(*args: Any) -> tuple:
            if not self.errors:
                try:
                    return callback(*args)
                except BaseException as error:
                    self.errors.append(error)
            return tuple(None if r is None else np.zeros(*r) for r in results)
        return call

    def raise_first(self) -> None:
        if not self.errors:
            return
        first = self.errors[0]
        self.errors.clear()
        text = "".join(traceback.format_exception(first))
        raise runtime.XlaRuntimeError(
            f"INTERNAL: CpuCallback error calling callback: {text}") from first


class SpmdProgram:
    """A closed jaxpr compiled for the devices of a `Plan`."""

    translates_float0 = False

    def __init__(self, lowered: LoweredModule, plan: Plan, compiler_options: tuple | None):
        self.lowered = lowered
        self.plan = plan
        # Programs that call Python back are waited for, and a callback's exception is
        # raised as XLA's error once every device is done (see `_DeferredErrors`).
        self.calls_host = bool(lowered.host_callbacks)
        annotate(lowered, plan)
        self._deferred = _DeferredErrors(lowered.module, lowered.host_callbacks)
        self.executable = self._compile(compiler_options)
        maximal = [i for i, s in enumerate(self.executable.out_shardings)
                   if s._hlo_sharding.is_maximal()]
        if maximal:
            # A callback's result returned as it is would stay on the callback's device
            # alone (JAX 0.10.2 fails on it: "Cannot convert GSPMDSharding {maximal
            # device=0} into SdyArray"): such results are replicated instead.
            _replicate_results(lowered.module, maximal)
            self.executable = self._compile(compiler_options)

    def _compile(self, compiler_options: tuple | None) -> Any:
        lowered = self.lowered
        module = lowered.module
        from lamella.lax import mlir_context
        in_specs, _ = mlir_context.main_signature(module)
        donated = [i for i, d in enumerate(lowered.donated_invars) if d]
        self._named: dict = {}
        plan = self.plan
        return runtime.SpmdExecutable(
            module, plan.devices, plan.in_shardings, lowered.name, in_specs,
            [a for a in lowered.out_avals], self._named_for, donated,
            dict(compiler_options or ()), self._deferred.callbacks)

    def _named_for(self, hlo: Any, ndim: int) -> Any:
        """The NamedSharding over the plan's mesh that XLA's output layout `hlo` is."""
        if len(self.plan.devices) == 1:
            return runtime.sharding_for(self.plan.devices[0])
        key = (str(hlo), ndim)
        if key not in self._named:
            self._named[key] = _match(self.plan.mesh, hlo, ndim)
        return self._named[key]

    def __call__(self, *args):
        if self.calls_host:
            # One call at a time: a callback's kept exception belongs to the call running.
            with self._deferred.lock:
                outs = self.executable(*args)
                self._deferred.raise_first()
            return outs
        return self.executable(*args)

    def as_text(self) -> str:
        return self.executable.as_text()

    def cost_analysis(self) -> dict[str, float]:
        return self.executable.cost_analysis()

    def memory_analysis(self) -> Any:
        return self.executable.xla_executable.get_compiled_memory_stats()

    def runtime_executable(self) -> Any:
        return self.executable.xla_executable

    @property
    def sharding(self) -> NamedSharding:
        return NamedSharding(self.plan.mesh, PartitionSpec())


def _match(mesh: Mesh, hlo: Any, ndim: int) -> NamedSharding | None:
    from jaxlib import xla_client as xc
    for spec in runtime.spmd.named_candidates(mesh.axis_names, ndim):
        candidate = NamedSharding(mesh, PartitionSpec(
            *[(e if len(e) > 1 else e[0]) if e else None for e in spec]))
        if xc.HloSharding.from_string(candidate.hlo_sharding_text(ndim)) == hlo:
            # Under Explicit axes a result's layout is its type's, one entry per dimension
            # (JAX prints P('x', None)); under Auto ones XLA's choice, trailing Nones dropped.
            while spec and not spec[-1] and AxisType.Explicit not in mesh.axis_types:
                spec = spec[:-1]
            return NamedSharding(mesh, PartitionSpec(
                *[(e if len(e) > 1 else e[0]) if e else None for e in spec]))
    return None


def _key(closed: ClosedJaxpr, donated: tuple, options: Any, the_plan: Plan) -> tuple:
    return ("spmd", id(closed), donated, options, runtime.x64_enabled(), the_plan.key)


def cached(cache: Any, closed: ClosedJaxpr, donated: tuple, options: Any,
           the_plan: Plan) -> SpmdProgram | None:
    """The SPMD program `compiled` made for this call, if `cache` still holds it."""
    return cache.get(_key(closed, donated, options, the_plan), (closed,))


def compiled(cache: Any, closed: ClosedJaxpr, name: str, donated: tuple, options: Any,
             the_plan: Plan) -> SpmdProgram:
    """The SPMD program for `closed` laid out as `the_plan` says, from `cache` or new."""
    key = _key(closed, donated, options, the_plan)
    program = cache.get(key, (closed,))
    if program is None:
        lowered = lower_closed_jaxpr(closed, name=name, donated_invars=donated)
        program = SpmdProgram(lowered, the_plan, options)
        cache.put(key, program, (closed,), 1 << 20)
    return program


class LoweredSpmd:
    """`jit(f).lower(...)` of a program over several devices: the annotated StableHLO,
    compiled by XLA's SPMD partitioner on `.compile()`."""

    def __init__(self, cache: Any, closed: ClosedJaxpr, name: str, donated: tuple,
                 options: Any, the_plan: Plan):
        self.lowered = lower_closed_jaxpr(closed, name=name, donated_invars=donated)
        annotate(self.lowered, the_plan)
        self._key = (cache, closed, name, donated, options, the_plan)

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        return self.lowered.as_text(dialect, debug_info=debug_info)

    def compiler_ir(self, dialect: str | None = None) -> Any:
        return self.lowered.compiler_ir(dialect)

    def compile(self, compiler_options: tuple | None = None) -> SpmdProgram:
        cache, closed, name, donated, options, the_plan = self._key
        return compiled(cache, closed, name, donated, compiler_options or options, the_plan)

    def cost_analysis(self) -> dict[str, float]:
        return self.compile().cost_analysis()


def placed_elsewhere(args: Any) -> bool:
    """Whether an argument is spread over devices or committed off the default device."""
    default = None
    for a in args:
        if type(a) is runtime.Array:
            if default is None:
                default = runtime.sharding_for(runtime.default_device())
            if a._sharding is not default and (a._committed or len(a._arrays) != 1):
                return True
    return False


_one_equation: dict = {}


def apply_placed(executor: Any, primitive: Any, args: Any, params: dict) -> Any:
    """One primitive applied eagerly where its arguments are (a program of one equation)."""
    from lamella.core.staging import trace_to_jaxpr
    from lamella.core.trace import aval_of
    avals = tuple(map(aval_of, args))
    try:
        key = (primitive, avals, tuple(sorted(params.items())))
        closed = _one_equation.get(key)
    except TypeError:  # unhashable params: traced for this call
        key, closed = None, None
    if closed is None:
        def one_equation(*xs):
            out = primitive.bind(*xs, **params)
            return list(out) if primitive.multiple_results else [out]
        closed = ClosedJaxpr(*trace_to_jaxpr(one_equation, list(avals)))
        if key is not None:
            if len(_one_equation) > 1024:
                _one_equation.pop(next(iter(_one_equation)))
            _one_equation[key] = closed
    outs = executor.execute(closed, list(args), name=primitive.name,
                            donated_invars=(False,) * len(args))
    return outs if primitive.multiple_results else outs[0]
