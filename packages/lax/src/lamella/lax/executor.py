"""The XLA executor: compiles jaxprs with XLA and runs them; eager primitives too.

Registered with lamella.core on import, it serves every top-level `jit` call
and every eagerly applied primitive. A primitive in `compiled_eagerly` (lax's,
and core's structural ones) is applied as `jit` of one primitive, cached by
(primitive, avals, params), so eager and jitted results are bit-identical;
any other primitive runs its `impl` (a user's NumPy primitive still works
eagerly). Executables are cached per jaxpr and donation mask, while the jaxpr
lives (a dropped function takes its programs along), least recently used out
first past a count and a byte budget.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import numpy as np
from jaxlib import _jax

from lamella.core import Primitive, ShapedArray, dtypes
from lamella.core.config import config
from lamella.core.dispatch import Executor
from lamella.core.jaxpr import ClosedJaxpr, Jaxpr
from lamella.core.sharding import NamedSharding, PartitionSpec, as_named
from lamella.core.staging import trace_to_jaxpr
from lamella.core.trace import Tracer, aval_of, current_trace, eval_trace
from lamella.lax import compilation_cache, debug_nans, runtime, spmd_executor
from lamella.lax.callbacks import waiting_for_callbacks
from lamella.lax.lowering import LoweredModule, lower_closed_jaxpr
from lamella.lax.tokens import AbstractToken, Token


class _ProgramCache:
    """Compiled programs (or dispatchers), thread-safe, each alive only while the
    objects it was made from live, and bounded by entries and by estimated bytes.

    A key names its owners (jaxprs) by id, and the entry keeps a weak reference to
    each, checked on every hit: the owners are held by whoever made them (the
    per-function trace cache for `jit`, an eager call's params), so a program goes
    when its function goes, or when `f.clear_cache()` drops f's traces, and ids
    reused by later objects never match a dead entry. Past `capacity` entries or
    `max_bytes`, the least recently used entries are dropped too.
    """

    def __init__(self, capacity: int, max_bytes: int = 2 << 30):
        self.capacity = capacity
        self.max_bytes = max_bytes
        self.nbytes = 0
        self._entries: OrderedDict = OrderedDict()  # key -> (owner refs, value, nbytes)
        self._dead: list = []  # keys whose owner died: dropped under the lock, later
        self._lock = threading.Lock()

    def get(self, key, owners: tuple = ()):
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            refs, value, _ = entry
            if len(refs) != len(owners) or any(r() is not o for r, o in zip(refs, owners)):
                return None  # an owner died and its id was reused: a stale entry
            self._entries.move_to_end(key)
            return value

    def put(self, key, value, owners: tuple = (), nbytes: int = 0) -> None:
        def forget(_ref, key=key):
            self._dead.append(key)  # no lock here: this runs wherever the owner dies
        refs = tuple(weakref.ref(o, forget) for o in owners)
        with self._lock:
            self._purge()
            previous = self._entries.pop(key, None)
            if previous is not None:
                self.nbytes -= previous[2]
            self._entries[key] = (refs, value, nbytes)
            self.nbytes += nbytes
            while len(self._entries) > self.capacity or (
                    self.nbytes > self.max_bytes and len(self._entries) > 1):
                self.nbytes -= self._entries.popitem(last=False)[1][2]

    def _purge(self) -> None:
        while self._dead:
            key = self._dead.pop()
            entry = self._entries.get(key)
            if entry is not None and any(r() is None for r in entry[0]):
                del self._entries[key]
                self.nbytes -= entry[2]

    def __len__(self) -> int:
        with self._lock:
            self._purge()
            return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._dead.clear()
            self.nbytes = 0


# XLA's CPU runtime reports no code size; a program measured ~190 KB of host memory
# at the least, growing with its HLO.
_PROGRAM_OVERHEAD_BYTES = 192 << 10


def _estimated_bytes(program: CompiledProgram) -> int:
    modules = program.executable.xla_executable.hlo_modules()
    return _PROGRAM_OVERHEAD_BYTES + 4 * sum(
        len(m.as_serialized_hlo_module_proto()) for m in modules)


def _jaxprs_in(values) -> tuple:
    """The jaxprs among `values` (and inside tuples and lists of them)."""
    found = []
    for value in values:
        if isinstance(value, (ClosedJaxpr, Jaxpr)):
            found.append(value)
        elif isinstance(value, (tuple, list)):
            found.extend(_jaxprs_in(value))
    return tuple(found)


def _without_jaxprs(value):
    """`value` with each jaxpr replaced by its id (for keys that must not hold them)."""
    if isinstance(value, (ClosedJaxpr, Jaxpr)):
        return (_JAXPR_ID, id(value))
    if isinstance(value, (tuple, list)):
        return tuple(map(_without_jaxprs, value))
    return value


_JAXPR_ID = object()


def _physical_aval(aval: ShapedArray) -> ShapedArray:
    if isinstance(aval, AbstractToken):  # tokens cross the boundary as empty arrays
        return ShapedArray((0,), np.dtype(bool))
    return aval.update(dtype=np.dtype(bool)) if aval.dtype == dtypes.float0 else aval


def _is_float0(aval: Any) -> bool:
    return getattr(aval, "dtype", None) == dtypes.float0


class CompiledProgram:
    """An executable for one closed jaxpr; translates float0 values and tokens (which
    have no data) at the boundary."""

    def __init__(self, lowered: LoweredModule, compiler_options: tuple | None = None):
        self.lowered = lowered
        donated = [i for i, d in enumerate(lowered.donated_invars) if d]
        if config.read("log_compiles"):
            types = [a.str_short() for a in lowered.in_avals]
            _log.warning("Compiling %s with global shapes and types %s.", lowered.name, types)
        self.executable = runtime.compile(
            lowered.module, donated_args=donated,
            out_avals=[_physical_aval(a) for a in lowered.out_avals],
            compiler_options=dict(compiler_options or ()),
            host_callbacks=lowered.host_callbacks,
            persistent_cache=compilation_cache.persistent_cache())
        # Programs that call Python back are waited for on their first runs, so their
        # callbacks have run when a call returns (see `XlaExecutor.fast_dispatch`).
        self.calls_host = bool(lowered.host_callbacks)
        self._float0_in = [i for i, a in enumerate(lowered.in_avals) if _is_float0(a)]
        self._float0_out = [i for i, a in enumerate(lowered.out_avals) if _is_float0(a)]
        self._token_in = [i for i, a in enumerate(lowered.in_avals)
                          if isinstance(a, AbstractToken)]
        self._token_out = [i for i, a in enumerate(lowered.out_avals)
                           if isinstance(a, AbstractToken)]
        self.translates_float0 = bool(self._float0_in or self._float0_out or self._token_in
                                      or self._token_out)

    def __call__(self, *args):
        if self._float0_in or self._token_in:
            args = list(args)
            for i in self._float0_in:
                args[i] = np.zeros(np.shape(args[i]), bool)
            for i in self._token_in:
                args[i] = np.zeros(0, bool)
        outs = self.executable(*args)
        for i in self._float0_out:
            outs[i] = np.zeros(outs[i].shape, dtypes.float0)
        for i in self._token_out:
            outs[i] = Token()
        return outs

    def as_text(self) -> str:
        return self.executable.as_text()

    def cost_analysis(self) -> dict[str, float]:
        return self.executable.cost_analysis()

    def memory_analysis(self) -> Any:
        return self.executable.xla_executable.get_compiled_memory_stats()

    def runtime_executable(self) -> Any:
        return self.executable.xla_executable

    @property
    def sharding(self) -> Any:
        return runtime.sharding_for(self.executable.device)


class LoweredProgram:
    """`jit(f).lower(...)`'s backend half: StableHLO (or HLO) text, then compilation."""

    def __init__(self, lowered: LoweredModule, compiled_cache_key, executor: XlaExecutor):
        self.lowered = lowered
        self._key = compiled_cache_key
        self._executor = executor

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        return self.lowered.as_text(dialect, debug_info=debug_info)

    def compiler_ir(self, dialect: str | None = None) -> Any:
        return self.lowered.compiler_ir(dialect)

    def compile(self, compiler_options: tuple | None = None) -> CompiledProgram:
        closed, name, donated, options = self._key
        return self._executor._compiled(closed, name, donated, compiler_options or options,
                                        lowered=self.lowered)

    def cost_analysis(self) -> dict[str, float]:
        return self.compile().cost_analysis()


_log = logging.getLogger("lamella")


def _no_traced_put(x: Any, device: Any) -> Any:
    raise RuntimeError("device_put under jit needs lamella.lax fully imported")


# Installed by lamella.lax.explicit_sharding (which imports this module through
# lax's primitives): `device_put(x, device)` while tracing.
traced_device_put: Any = _no_traced_put


def install_traced_device_put(put: Any) -> None:
    """Sets what `device_put` does to a tracer (a reshard, or the identity)."""
    global traced_device_put
    traced_device_put = put


@contextlib.contextmanager
def _explicit(kind: str) -> Iterator[None]:
    """Marks this thread's transfers in the block as explicit, for jaxlib's transfer guards."""
    state = _jax.guard_lib.thread_local_state()
    previous = getattr(state, kind)
    setattr(state, kind, True)
    try:
        yield
    finally:
        setattr(state, kind, previous)

compiled_eagerly: set[Primitive] = set()
"""The primitives the XLA executor applies eagerly as one-equation XLA programs."""


class XlaExecutor(Executor):
    """lamella.core's executor, backed by XLA on the default device."""

    name = "xla"

    def __init__(self, capacity: int = 1024, max_bytes: int = 2 << 30):
        self.programs = _ProgramCache(capacity, max_bytes)

    def apply(self, primitive, args, params):
        if primitive in compiled_eagerly:
            if spmd_executor.placed_elsewhere(args):
                out = spmd_executor.apply_placed(self, primitive, args, params)
            else:
                out = apply_primitive(primitive, *args, **params)
        else:
            out = super().apply(primitive, args, params)
        if debug_nans.maybe_active and debug_nans.active():
            debug_nans.check_primitive_outputs(primitive, out)
        return out

    def clear_caches(self) -> None:
        self.programs.clear()
        runtime.clear_fast_path_caches()
        _primitive_programs.clear()
        _eager_dispatchers.clear()
        _eager_dispatchers_with_jaxprs.clear()
        runtime.release_free_memory()

    def _compiled(self, closed: ClosedJaxpr, name: str, donated_invars: tuple[bool, ...],
                  compiler_options: tuple | None = None,
                  lowered: LoweredModule | None = None) -> CompiledProgram:
        # Keyed on the jaxpr's identity but not holding it: the program lives while
        # the jaxpr does (the function's trace cache owns it).
        key = (id(closed), donated_invars, compiler_options, runtime.x64_enabled())
        program = self.programs.get(key, (closed,))
        if program is None:
            lowered = lowered or lower_closed_jaxpr(closed, name=name,
                                                    donated_invars=donated_invars,
                                                    platform=_lowering_platform())
            program = CompiledProgram(lowered, compiler_options)
            self.programs.put(key, program, (closed,), _estimated_bytes(program))
        return program

    def execute(self, closed, args, *, name, donated_invars, compiler_options=None):
        where = spmd_executor.plan(closed, args)
        if where is not None:
            return spmd_executor.compiled(self.programs, closed, name, tuple(donated_invars),
                                          compiler_options, where)(*args)
        outs = self._compiled(closed, name, tuple(donated_invars), compiler_options)(*args)
        if debug_nans.maybe_active and debug_nans.active():
            debug_nans.check_jit_outputs(closed, args, outs, name)
        return outs

    def lower(self, closed, *, name, donated_invars, compiler_options=None, args=None):
        donated_invars = tuple(donated_invars)
        # Over several devices (a mesh in the program, or `args` spread over one):
        # the SPMD program, its parameters laid out as those arguments are.
        where = spmd_executor.plan(closed, list(args) if args is not None
                                   else [None] * len(closed.in_avals))
        if where is not None:
            return spmd_executor.LoweredSpmd(self.programs, closed, name, donated_invars,
                                             compiler_options, where)
        lowered = lower_closed_jaxpr(closed, name=name, donated_invars=donated_invars,
                                     platform=_lowering_platform())
        return LoweredProgram(lowered, (closed, name, donated_invars, compiler_options), self)

    def fast_dispatch(self, jitted, inline_when=None):
        """A C++ dispatcher for a jit function: a call whose argument signature was
        seen before runs without Python; the first one traces and compiles.

        With `inline_when(args, kwargs)` given, a call it accepts runs `jitted.fun`
        itself (op by op, or into the current trace) and its signature is never
        served from C++: lamella.numpy's eager functions run inline while tracing.

        A program whose callbacks have no effects (`pure_callback`) runs from C++ like
        any other; a callback's exception reaches the caller as XLA's runtime error
        with the callback's traceback in its text, as in JAX. Once a program with
        effectful callbacks (`io_callback`, `debug.print`) runs, every call goes through
        a second C++ dispatcher, wrapped in Python to wait for the program, so that the
        callbacks of one call have run, in order, when it returns.
        """
        calling_host: list = []  # that second dispatcher, once needed

        def dispatcher(cache_miss, cache_key):
            # Keyed on the function and the jit options, so `jit(f)` made anew shares
            # the compiled calls of an earlier `jit(f)`, as in JAX.
            return runtime.make_fast_function(
                jitted.name, cache_miss, jitted.static_argnums, jitted.static_argnames,
                fun=jitted.fun, cache_key=cache_key, donates=jitted.donates)

        def cache_miss_calling_host(*args, **kwargs):
            out, entry, flat = jitted.call_and_report(args, kwargs)
            program = self._fast_program(entry, flat)
            return out, None if program is None else self._fast_path_data(program, out)

        def cache_miss(*args, **kwargs):
            if inline_when is not None and inline_when(args, kwargs):
                return jitted.fun(*args, **kwargs), None
            if calling_host:
                return calling_host[0](*args, **kwargs), None
            out, entry, flat = jitted.call_and_report(args, kwargs)
            program = self._fast_program(entry, flat)
            if program is None:
                return out, None
            if program.calls_host and entry.closed.effects:
                calling_host.append(waiting_for_callbacks(dispatcher(
                    cache_miss_calling_host, ("calls host", jitted.options))))
                return out, None
            return out, self._fast_path_data(program, out)

        # An inlining dispatcher's entries mean something else: it shares none of them.
        fast = dispatcher(cache_miss, jitted.options if inline_when is None
                          else ("inline when tracing", jitted.options))
        fast._calling_host = calling_host
        return fast

    def wrap_jit(self, jitted):
        """What `jit` returns: the C++ dispatcher itself, with the AOT methods."""
        fast = self.fast_dispatch(jitted)

        def clear_cache():
            jitted.clear_cache()
            fast._clear_cache()
            for calling_host in fast._calling_host:
                calling_host._clear_cache()
        for name in ("__module__", "__name__", "__qualname__", "__doc__"):
            if hasattr(jitted.fun, name):
                setattr(fast, name, getattr(jitted.fun, name))
        fast.__wrapped__ = jitted.fun
        fast.trace, fast.lower, fast.eval_shape = jitted.trace, jitted.lower, jitted.eval_shape
        fast.clear_cache = clear_cache
        fast.jit_function = jitted
        return fast

    def _fast_program(self, entry, flat) -> CompiledProgram | None:
        """The program a call ran, if later calls like it may run from C++: only
        top-level calls on concrete values whose program is plain XLA qualify."""
        if entry is None or entry.hoisted or current_trace() is not eval_trace \
                or any(isinstance(x, Tracer) for x in flat):
            return None
        default = runtime.sharding_for(runtime.default_device())
        if spmd_executor.meshes_in(entry.closed) or any(
                type(x) is runtime.Array and x._sharding is not default for x in flat):
            # A program placed by its arguments: the one the call ran, over its devices.
            where = spmd_executor.plan(entry.closed, flat)
            if where is None:
                return None
            program = spmd_executor.cached(self.programs, entry.closed, entry.donated, None,
                                           where)
        else:
            program = self.programs.get((id(entry.closed), entry.donated, None,
                                         runtime.x64_enabled()), (entry.closed,))
        if program is None or program.translates_float0 or debug_nans.active():
            return None
        return program

    def _fast_path_data(self, program, out):
        out_leaves, out_treedef = runtime.pytree_registry().flatten(out)
        if len(out_leaves) != len(program.executable.out_avals):
            return None
        if isinstance(program, spmd_executor.SpmdProgram):
            return program.executable.fast_path_data(out_treedef)
        return runtime.fast_path_data(program.executable, out_treedef)

    def devices(self, backend=None):
        return runtime.devices(backend)

    def default_backend(self) -> str:
        platform = runtime.default_device().platform
        return "gpu" if platform == "cuda" else platform

    def device_put(self, x, device=None, *, donate=False, may_alias=None):
        if device is None and isinstance(x, runtime.Array):
            return x
        if isinstance(x, Tracer):  # under jit: a reshard, or an identity to a device
            return traced_device_put(x, device)
        if isinstance(device, (NamedSharding, PartitionSpec)):
            return self._put_sharded(x, as_named(device, "device_put"), donate)
        device = getattr(device, "_device", device)  # a SingleDeviceSharding names one
        moved = (isinstance(x, runtime.Array) and device is not None
                 and set(x.devices()) != {device})
        with _explicit("explicit_device_put"):  # transfer guards allow explicit transfers
            out = runtime.device_put(x, device)
        if donate and moved:  # the data was copied: the source's memory can go (as in JAX)
            x.delete()
        return out

    def _put_sharded(self, x, sharding: NamedSharding, donate: bool):
        sharding.check_shape(np.shape(x))
        devices = sharding.mesh._flat_devices
        target = runtime.mesh_sharding(devices, sharding.hlo_sharding_text(np.ndim(x)), sharding)
        if isinstance(x, runtime.Array) and x._sharding is target:
            return x
        with _explicit("explicit_device_put"):
            out = runtime.put_sharded(x, target)
        if donate and isinstance(x, runtime.Array):
            x.delete()
        return out

    def process_index(self) -> int:
        return runtime.process_index()

    def distributed_runtime(self):
        """The multi-process runtime (lamella.core.distributed drives it)."""
        from lamella.lax.runtime import distributed
        return distributed

    def assemble(self, shape, sharding, arrays):
        if not isinstance(sharding, NamedSharding):
            raise TypeError(f"make_array_from_single_device_arrays takes a NamedSharding, got "
                            f"{sharding!r}")
        sharding.check_shape(shape)
        target = runtime.mesh_sharding(sharding.mesh._flat_devices,
                                       sharding.hlo_sharding_text(len(shape)), sharding)
        return runtime.assemble(shape, target, arrays)

    def device_get(self, x):
        if not isinstance(x, runtime.Array):
            return x
        with _explicit("explicit_device_get"):
            return np.asarray(x)

    def from_dlpack(self, x, device=None, copy=None):
        return runtime.from_dlpack(x, device, copy)

    def copy_to_host_async(self, x) -> None:
        if isinstance(x, runtime.Array):
            x.copy_to_host_async()

    def live_arrays(self, platform=None):
        return runtime.live_arrays(platform)


# ---------------------------------------------------------------------------
# Eager primitives: one C++ dispatcher per (primitive, params); each new
# signature of avals compiles a one-equation program once.

# Programs of primitives whose params carry jaxprs (cond, while, scan...) live while
# those jaxprs do: a loop calling cond on fresh lambdas leaves nothing behind.
_primitive_programs = _ProgramCache(4096)
# Dispatchers of jaxpr-free params: a plain dict keeps the lookup on this hot path as
# cheap as possible (bounded, oldest out first; such params are few in practice).
_eager_dispatchers: dict = {}
_MAX_EAGER_DISPATCHERS = 4096
# Dispatchers of params with jaxprs hold those jaxprs (and their programs): kept few,
# least recently used out first, so the ones a loop calls stay and dead ones go.
_eager_dispatchers_with_jaxprs = _ProgramCache(64)


def _params_key(params: dict) -> Any:
    try:
        key = tuple(sorted(params.items()))
        hash(key)
        return key
    except TypeError:
        return None


def _lowering_platform() -> str:
    """The platform programs are lowered for: the default device's, so platform-specific
    rules apply (pallas kernels become Triton calls on CUDA GPUs, whose jaxlib name is
    "gpu")."""
    platform = runtime.default_device().platform
    return {"gpu": "cuda"}.get(platform, platform)


def _primitive_program(primitive, avals: tuple, params: dict, params_key) -> CompiledProgram:
    owners = _jaxprs_in(params.values())
    key = (primitive, avals, _without_jaxprs(params_key) if owners else params_key,
           runtime.x64_enabled())
    program = _primitive_programs.get(key, owners) if params_key is not None else None
    if program is None:
        def one_equation(*xs):
            out = primitive.bind(*xs, **params)
            return list(out) if primitive.multiple_results else [out]
        jaxpr, consts = trace_to_jaxpr(one_equation, avals)
        lowered = lower_closed_jaxpr(ClosedJaxpr(jaxpr, consts), name=primitive.name,
                                     platform=_lowering_platform())
        program = CompiledProgram(lowered)
        if params_key is not None:
            _primitive_programs.put(key, program, owners, _estimated_bytes(program))
    return program


def _run(primitive, program: CompiledProgram, args):
    outs = program(*args)
    return outs if primitive.multiple_results else outs[0]


def apply_primitive(primitive, *args, **params):
    """Runs one primitive eagerly, as a jit-compiled program of one equation."""
    params_key = _params_key(params)
    dispatch = _eager_dispatchers.get((primitive, params_key)) if params_key is not None \
        else None
    with_jaxprs = dispatch is None and bool(_jaxprs_in(params.values()))
    if with_jaxprs and params_key is not None:
        dispatch = _eager_dispatchers_with_jaxprs.get((primitive, params_key))
    if dispatch is None:
        if params_key is None:
            program = _primitive_program(primitive, tuple(map(aval_of, args)), params, None)
            return _run(primitive, program, args)

        def cache_miss(*xs):
            program = _primitive_program(primitive, tuple(map(aval_of, xs)), params,
                                         params_key)
            out = _run(primitive, program, xs)
            if program.translates_float0:
                return out, None
            return out, runtime.fast_path_data(program.executable,
                                               runtime.pytree_registry().flatten(out)[1])
        def without_cache(*xs):  # what C++ calls while jit is disabled
            return _run(primitive, _primitive_program(primitive, tuple(map(aval_of, xs)),
                                                      params, params_key), xs)

        dispatch = runtime.make_fast_function(primitive.name, cache_miss, fun=without_cache)
        if with_jaxprs:
            _eager_dispatchers_with_jaxprs.put((primitive, params_key), dispatch)
        else:
            if len(_eager_dispatchers) >= _MAX_EAGER_DISPATCHERS:
                _eager_dispatchers.pop(next(iter(_eager_dispatchers)))
            _eager_dispatchers[(primitive, params_key)] = dispatch
    return dispatch(*args)
