"""`jit`: trace a function once per argument signature, run it through an executor.

`jit(f)(*args)` flattens the arguments, looks up a jaxpr traced for their
abstract values (plus static arguments and config), and binds the `jit` call
primitive with it. Bound at the top level the primitive hands the jaxpr to the
registered *executor*; under a transformation its rules transform the jaxpr
(JVP, batching, partial evaluation, transposition), so `grad(jit(f))`,
`jit(grad(f))` and `vmap(jit(f))` all work.

Core's executor is an interpreter over NumPy `impl`s, so jit works with core
alone; lamella.lax registers the XLA executor.

>>> import numpy as np
>>> from lamella.core.structural import reduce_sum
>>> total = jit(lambda x: reduce_sum(x, (0,)))
>>> total(np.arange(4.0, dtype=np.float32))
np.float32(6.0)
"""

from __future__ import annotations

import functools
import gc
import logging
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from lamella.core import jit_shardings
from lamella.core.api_util import (
    abstractify_args,
    as_tuple,
    flatten_outputs,
    fun_name,
    fun_signature,
    fun_source,
    leaf_names,
    resolve_static,
)
from lamella.core.avals import ShapeDtypeStruct
from lamella.core.call_rules import register_call_rules
from lamella.core.config import config
from lamella.core.dispatch import current_executor, executor_generation
from lamella.core.errors import UnexpectedTracerError
from lamella.core.jaxpr import DebugInfo, check_jaxpr, eval_jaxpr
from lamella.core.primitive import Primitive
from lamella.core.sharding import NamedSharding, get_mesh
from lamella.core.stages import Lowered, Traced, _Signature
from lamella.core.staging import StagingTrace, hoist_tracer_consts, trace_to_jaxpr
from lamella.core.trace import Tracer, current_trace, eval_trace
from lamella.core.tree_util import PyTreeDef, tree_flatten, tree_unflatten
from lamella.core.util import register_cache

# ---------------------------------------------------------------------------
# The call primitive and its rules.


class JitPrimitive(Primitive):
    multiple_results = True

    def pp_params(self, params):
        shown = [("name", params["name"]), ("jaxpr", params["jaxpr"])]
        if any(params["donated_invars"]):
            shown.append(("donated_invars", params["donated_invars"]))
        if params["compiler_options"]:
            shown.append(("compiler_options", params["compiler_options"]))
        return shown


jit_p = JitPrimitive("jit")


@jit_p.def_impl
def _jit_impl(*args, jaxpr, name, donated_invars, compiler_options):
    return current_executor().execute(jaxpr, args, name=name, donated_invars=donated_invars,
                                      compiler_options=compiler_options)


@jit_p.def_abstract_eval
def _jit_abstract_eval(*avals, jaxpr, name, donated_invars, compiler_options):
    expected = jaxpr.in_avals
    if len(avals) != len(expected) or any(
            a.shape != e.shape or a.dtype != e.dtype for a, e in zip(avals, expected)):
        got = ", ".join(a.str_short() for a in avals)
        want = ", ".join(a.str_short() for a in expected)
        raise TypeError(f"jit-compiled {name} called with arguments ({got}) but its jaxpr "
                        f"expects ({want})")
    return jaxpr.out_avals


def _derived_params(kind: str, params: dict, num_args: int) -> dict:
    """Params of the jit calls that transformations derive: they donate nothing."""
    name = f"transpose({params['name']})" if kind == "transpose" else params["name"]
    return dict(params, name=name, donated_invars=(False,) * num_args)


register_call_rules(jit_p, _derived_params)


class CachedTrace:
    """What tracing for one argument signature gave: the closed jaxpr, the tracers it
    closes over (hoisted into leading arguments), the output tree, the donation mask."""

    __slots__ = ("closed", "hoisted", "out_tree", "donated", "out_avals")

    def __init__(self, closed, hoisted, out_tree, donated):
        self.closed = closed
        self.hoisted = hoisted
        self.out_tree = out_tree
        self.donated = donated


class TraceCache(OrderedDict):
    """The traces of one function under one set of jit options, most recent last."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()


class _TraceCaches:
    """A `TraceCache` per (function, jit options), shared by every `jit` wrapper of the
    function (as JAX's cache is, so `jit(f)` made anew hits the same traces). Functions
    are held weakly: a function's traces die with it."""

    def __init__(self) -> None:
        self._by_function: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._all: weakref.WeakValueDictionary[int, TraceCache] = weakref.WeakValueDictionary()
        self._lock = threading.Lock()

    def get(self, fun: Callable, options: tuple) -> TraceCache:
        with self._lock:
            try:
                per_function = self._by_function.setdefault(fun, {})
            except TypeError:  # neither weakly referenceable nor hashable: a private cache
                per_function = {}
            cache = per_function.get(options)
            if cache is None:
                cache = per_function[options] = TraceCache()
                self._all[id(cache)] = cache
            return cache

    def clear(self) -> None:
        with self._lock:
            caches = list(self._all.values())
        for cache in caches:
            with cache.lock:
                cache.clear()


trace_caches = _TraceCaches()
register_cache(trace_caches.clear)
_log = logging.getLogger("lamella")


class JitFunction:
    """A function compiled on its first call with each new argument signature."""

    _CACHE_SIZE = 4096

    def __init__(self, fun: Callable, static_argnums=None, static_argnames=None,
                 donate_argnums=None, donate_argnames=None, traced_for: str = "jit",
                 keep_unused: bool = False, inline: bool = False,
                 compiler_options: dict[str, Any] | None = None,
                 in_shardings: Any = None, out_shardings: Any = None):
        if not callable(fun):
            raise TypeError(f"jit expects a callable, got {fun!r} of type {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._signature = fun_signature(fun)
        self._static_nums, self._static_names = resolve_static(
            self._signature, as_tuple(static_argnums), as_tuple(static_argnames))
        self._donate_nums, self._donate_names = resolve_static(
            self._signature, as_tuple(donate_argnums), as_tuple(donate_argnames))
        self._keep_unused = bool(keep_unused)
        self._inline = bool(inline)
        self._compiler_options = (None if not compiler_options
                                  else tuple(sorted(compiler_options.items())))
        self._in_shardings, self._out_shardings = in_shardings, out_shardings
        self.options = (self._static_nums, self._static_names, self._donate_nums,
                        self._donate_names, traced_for, self._keep_unused, self._inline,
                        self._compiler_options, _hashable(in_shardings),
                        _hashable(out_shardings))
        self._cache = trace_caches.get(fun, self.options)
        self._lock = self._cache.lock
        self._name = fun_name(fun)
        self._traced_for = traced_for
        self._dispatch: Callable | None = None
        self._dispatch_version = -1

    def __repr__(self) -> str:
        return f"<jit-compiled {self._name}>"

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        generation = executor_generation()
        if self._dispatch_version != generation:
            self._dispatch = current_executor().fast_dispatch(self)
            self._dispatch_version = generation
        return self._dispatch(*args, **kwargs)

    static_argnums = property(lambda self: tuple(sorted(self._static_nums)))
    static_argnames = property(lambda self: tuple(sorted(self._static_names)))
    donates = property(lambda self: bool(self._donate_nums or self._donate_names))
    fun = property(lambda self: self._fun)
    name = property(lambda self: self._name)

    def call_python(self, *args, **kwargs) -> Any:
        """Calls the function through Python (tracing on a new signature)."""
        return self.call_and_report(args, kwargs)[0]

    def call_and_report(self, args: tuple, kwargs: dict) -> tuple[Any, CachedTrace | None, list]:
        """Calls the function; also returns the traced entry and flat arguments used
        (None and [] when jit is disabled), for dispatchers that cache calls."""
        if config.read("disable_jit"):
            return self._fun(*args, **kwargs), None, []
        entry, flat = self._prepare(args, kwargs)
        if self._in_shardings is not None and current_trace() is eval_trace:
            self._check_committed(args, kwargs, flat)
        if self._inline and current_trace() is not eval_trace:
            # Inlined: the body's equations go straight into the enclosing trace.
            outs = eval_jaxpr(entry.closed.jaxpr, entry.closed.consts, *entry.hoisted, *flat)
        else:
            outs = jit_p.bind(*entry.hoisted, *flat, jaxpr=entry.closed, name=self._name,
                              donated_invars=entry.donated,
                              compiler_options=self._compiler_options)
        return tree_unflatten(entry.out_tree, outs), entry, flat

    def _split_args(self, args, kwargs):
        n = len(args)
        statics = {i for i in self._static_nums if -n <= i < n}
        statics = {i % n for i in statics}
        dyn_positions = [i for i in range(n) if i not in statics]
        dyn_args = tuple(args[i] for i in dyn_positions)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._static_names}
        static_key = (tuple((i, args[i]) for i in sorted(statics)),
                      tuple(sorted((k, v) for k, v in kwargs.items()
                                   if k in self._static_names)))
        return dyn_positions, dyn_args, dyn_kwargs, static_key

    def _prepare(self, args, kwargs, flat_avals=None):
        dyn_positions, dyn_args, dyn_kwargs, static_key = self._split_args(args, kwargs)
        flat, in_tree = tree_flatten((dyn_args, dyn_kwargs))

        def names():
            return leaf_names(self._signature, dyn_positions, dyn_args, dyn_kwargs)

        avals = flat_avals or abstractify_args(flat, names, f"jit-compiled {self._name}")
        key = (in_tree, tuple(avals), static_key, config.trace_key(), get_mesh())
        try:
            with self._lock:
                entry = self._cache.get(key)
                if entry is not None:
                    self._cache.move_to_end(key)
                    return entry, flat
        except TypeError as e:
            raise TypeError(
                f"Non-hashable static arguments are not supported: calling {self._name} with "
                f"static arguments {static_key} failed to hash them ({e}). Make static "
                "arguments hashable (a tuple instead of a list, a frozen dataclass) or pass "
                "them as traced arrays.") from None
        if config.read("explain_cache_misses"):
            _log.warning(self._explain_miss(key, names))
        # Traced without the lock held (tracing may call other jit functions);
        # racing threads may both trace, and the first stored entry wins.
        entry = self._trace(args, kwargs, dyn_positions, dyn_args, dyn_kwargs, in_tree, avals,
                            names)
        if not entry.hoisted:  # closures over tracers are valid for this call only
            with self._lock:
                entry = self._cache.setdefault(key, entry)
                if len(self._cache) > self._CACHE_SIZE:
                    self._cache.popitem(last=False)
        return entry, flat

    def _check_committed(self, args, kwargs, flat) -> None:
        dyn_positions, dyn_args, dyn_kwargs, _ = self._split_args(args, kwargs)
        wanted = jit_shardings.flat_shardings(self._in_shardings, dyn_args, "in_shardings")
        jit_shardings.check_committed(
            flat, wanted, lambda: leaf_names(self._signature, dyn_positions, dyn_args,
                                             dyn_kwargs))

    def _trace(self, args, kwargs, dyn_positions, dyn_args, dyn_kwargs, in_tree, avals, names):
        out_tree: list[PyTreeDef] = []
        in_layouts = [] if self._in_shardings is None else jit_shardings.flat_shardings(
            self._in_shardings, dyn_args, "in_shardings")

        def flat_fun(*flat_tracers):
            if in_layouts:
                flat_tracers = jit_shardings.constrain(list(flat_tracers), in_layouts,
                                                       "in_shardings") \
                    + list(flat_tracers[len(in_layouts):])
            traced_args, traced_kwargs = tree_unflatten(in_tree, flat_tracers)
            full_args = list(args)
            for pos, value in zip(dyn_positions, traced_args):
                full_args[pos] = value
            full_kwargs = {**kwargs, **traced_kwargs}
            outs = self._fun(*full_args, **full_kwargs)
            flat_outs, tree = flatten_outputs(outs, f"jit-compiled {self._name}")
            out_tree.append(tree)
            if self._out_shardings is not None:
                flat_outs = jit_shardings.constrain(
                    flat_outs, jit_shardings.flat_shardings(
                        self._out_shardings, tree_unflatten(tree, flat_outs), "out_shardings"),
                    "out_shardings")
            return flat_outs

        debug = DebugInfo(self._traced_for, self._name, fun_source(self._fun), tuple(names()))
        trace = StagingTrace(debug)
        jaxpr, consts = trace_to_jaxpr(flat_fun, avals, trace=trace)
        if config.read("check_tracer_leaks"):
            _check_for_leaked_tracers(self._name, trace)
        closed, hoisted = hoist_tracer_consts(jaxpr, consts)
        if config.read("enable_checks"):
            check_jaxpr(closed)
        donated = self._donation_mask(dyn_positions, dyn_args, dyn_kwargs)
        return CachedTrace(closed, hoisted, out_tree[0], (False,) * len(hoisted) + donated)

    def _explain_miss(self, key: tuple, names: Callable[[], list[str]]) -> str:
        """Why `key` is not in the cache: compared with the most recently traced key."""
        where = f"TRACING CACHE MISS at {fun_source(self._fun) or self._name}: "
        with self._lock:
            previous = next(reversed(self._cache), None)
        if previous is None:
            return where + f"never seen function {self._name}, or its cache was cleared."
        (tree, avals, statics, flags, mesh), (old_tree, old_avals, old_statics, old_flags,
                                              old_mesh) = key, previous
        reasons = []
        if tree != old_tree:
            reasons.append(f"different input pytree structure: {old_tree} before, {tree} now")
        elif avals != old_avals:
            labels = names()
            for i, (a, b) in enumerate(zip(old_avals, avals)):
                if a != b:
                    label = labels[i] if i < len(labels) else f"argument {i}"
                    reasons.append(f"for {label} the type was {a.str_short()}"
                                   f"{' (weak)' if a.weak_type else ''}, now {b.str_short()}"
                                   f"{' (weak)' if b.weak_type else ''}")
        if statics != old_statics:
            reasons.append(f"static arguments were {old_statics}, now {statics}")
        if flags != old_flags:
            reasons.append("configuration that affects tracing changed (x64, default "
                           "precision, promotion rules...)")
        if mesh != old_mesh:
            reasons.append(f"the current mesh was {old_mesh}, now {mesh}")
        return where + "; ".join(reasons or ["the cache evicted the previous trace"])

    def _donation_mask(self, dyn_positions, dyn_args, dyn_kwargs) -> tuple[bool, ...]:
        mask = []
        for pos, arg in zip(dyn_positions, dyn_args):
            mask += [pos in self._donate_nums] * len(tree_flatten(arg)[0])
        for key in sorted(dyn_kwargs):
            mask += [key in self._donate_names] * len(tree_flatten(dyn_kwargs[key])[0])
        return tuple(mask)

    # Ahead-of-time stages.

    def trace(self, *args, **kwargs) -> Traced:
        """Traces for these arguments (arrays or ShapeDtypeStructs) without running."""
        entry, flat = self._prepare(args, kwargs)
        dynamic = self._split_args(args, kwargs)[1:3]
        sig = _Signature(self._name, entry.closed, entry.hoisted, entry.out_tree, entry.donated,
                         dynamic, tuple(sorted(self._donate_nums)))
        executor = current_executor()
        options = self._compiler_options

        # Arguments spread over devices lay the program's parameters out as they are.
        placed = {"args": [*entry.hoisted, *flat]} if any(
            isinstance(getattr(x, "sharding", None), NamedSharding) for x in flat) else {}

        def lower_with(closed, *, name, donated_invars):
            return executor.lower(closed, name=name, donated_invars=donated_invars,
                                  compiler_options=options, **placed)
        return Traced(sig, lower_with)

    def lower(self, *args, **kwargs) -> Lowered:
        """Traces and lowers for these arguments: `jit(f).lower(x).as_text()`."""
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs) -> Any:
        """The output shapes and dtypes, as a pytree of ShapeDtypeStruct."""
        return self.trace(*args, **kwargs).out_info

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()


def _hashable(shardings: Any) -> Any:
    """A shardings pytree as a key for the jit caches."""
    if shardings is None:
        return None
    leaves, tree = tree_flatten(shardings, is_leaf=jit_shardings._is_leaf)
    return tuple(leaves), tree


def _check_for_leaked_tracers(name: str, trace: StagingTrace) -> None:
    """Raises if a tracer of `trace`, now finished, is still referenced somewhere."""
    gc.collect()
    leaked = [obj for obj in gc.get_objects()
              if isinstance(obj, Tracer) and obj._trace is trace]
    if leaked:
        tracer = leaked[0]
        site = tracer._creation_site()
        referrers = [type(r).__name__ for r in gc.get_referrers(tracer)
                     if r is not leaked][:5]
        raise UnexpectedTracerError(
            f"Found {len(leaked)} leaked tracer(s) after tracing {name}: "
            f"{tracer!r}{f' created at {site}' if site else ''}, referenced by "
            f"{', '.join(referrers) or 'an unknown object'}. A traced value was stored "
            "outside the function (a global, an attribute, a list); return it instead.")


def out_info(entry: CachedTrace) -> Any:
    """The output shapes and dtypes of a traced signature, as a pytree of ShapeDtypeStruct."""
    return tree_unflatten(entry.out_tree, [ShapeDtypeStruct(a.shape, a.dtype,
                                                            weak_type=a.weak_type)
                                           for a in entry.closed.out_avals])


def _check_device_and_backend(device: Any, backend: str | None) -> None:
    warnings.warn("backend and device argument on jit is deprecated. You can use "
                  "`lamella.core.device_put(..., lamella.core.local_devices(backend=\"cpu\")[0])` "
                  "on the inputs to the jitted function to get the same behavior.",
                  DeprecationWarning, stacklevel=3)
    available = current_executor().devices(backend)  # raises for an unknown backend
    if device is not None and device not in available:
        raise ValueError(f"jit: device {device} is not one of the devices of backend "
                         f"{backend or current_executor().default_backend()!r}: {available}")


def jit(fun: Callable | None = None, /, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Sequence[str] | None = None, keep_unused: bool = False,
        device: Any = None, backend: str | None = None, inline: bool = False,
        compiler_options: dict[str, Any] | None = None, in_shardings: Any = None,
        out_shardings: Any = None) -> Any:
    """Compiles `fun`: traced once per argument signature, then run by the executor.

    Args:
      fun: the function to compile; its arguments and results are arrays, scalars or
        pytrees of them (static arguments may be any hashable value).
      static_argnums, static_argnames: arguments passed to `fun` as Python values:
        each new value traces anew (they must be hashable).
      donate_argnums, donate_argnames: arguments whose buffers the executor may
        reuse for outputs; donated arrays are deleted after the call.
      keep_unused: keep arguments the function does not use as program parameters
        (lamella always does; accepted for JAX compatibility).
      device, backend: deprecated in JAX (put the inputs on a device instead); checked
        here against the executor's devices, with JAX's DeprecationWarning.
      inline: inside another trace, put the function's equations into the
        enclosing jaxpr instead of a `jit` equation.
      compiler_options: options for the compiler (XLA flags such as
        `{"xla_cpu_enable_fast_math": True}`).
      in_shardings, out_shardings: layouts of the arguments and results over several
        devices: a NamedSharding, a PartitionSpec (under the current mesh) or None
        (unspecified), or a pytree prefix of them over the non-static positional
        arguments / the result (see `lamella.core.jit_shardings`).

    Returns:
      A function with `fun`'s signature that traces once per argument signature
      (shapes, dtypes, weak types, static values, pytree structure) and runs the
      compiled program; it also offers the AOT stages `.trace`, `.lower`,
      `.eval_shape`.

    >>> import numpy as np
    >>> from lamella.core.structural import reduce_sum
    >>> @jit
    ... def total(x):
    ...     return reduce_sum(x, (0,))
    >>> total(np.ones(3, np.float32))
    np.float32(3.0)
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames,
                                 donate_argnums=donate_argnums, donate_argnames=donate_argnames,
                                 keep_unused=keep_unused, device=device, backend=backend,
                                 inline=inline, compiler_options=compiler_options,
                                 in_shardings=in_shardings, out_shardings=out_shardings)
    if device is not None or backend is not None:
        _check_device_and_backend(device, backend)
    jitted = JitFunction(fun, static_argnums, static_argnames, donate_argnums, donate_argnames,
                         keep_unused=keep_unused, inline=inline,
                         compiler_options=compiler_options, in_shardings=in_shardings,
                         out_shardings=out_shardings)
    # An executor may hand back its own callable (lamella.lax: jaxlib's C++
    # dispatcher, carrying trace/lower/eval_shape), so cached calls run no Python.
    wrapped = current_executor().wrap_jit(jitted)
    if wrapped is not jitted:
        jitted._dispatch, jitted._dispatch_version = wrapped, executor_generation()
    return wrapped
