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
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from lamella.core import ad, batching, partial_eval
from lamella.core.avals import ShapedArray, ShapeDtypeStruct, get_aval
from lamella.core.config import config
from lamella.core.jaxpr import ClosedJaxpr, DebugInfo, eval_jaxpr
from lamella.core.primitive import Primitive
from lamella.core.staging import hoist_tracer_consts, trace_to_jaxpr
from lamella.core.trace import Tracer, aval_of, set_current_trace
from lamella.core.tree_util import (
    PyTreeDef,
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_map,
    tree_structure,
    tree_unflatten,
)
from lamella.core.util import merge_lists, partition_list

# ---------------------------------------------------------------------------
# Executors.


class Executor(Protocol):
    """Runs closed jaxprs: core's interpreter, or lamella.lax's XLA runtime."""

    name: str

    def execute(self, closed: ClosedJaxpr, args: Sequence[Any], *, name: str,
                donated_invars: tuple[bool, ...]) -> list[Any]: ...

    def lower(self, closed: ClosedJaxpr, *, name: str,
              donated_invars: tuple[bool, ...]) -> Any: ...


class InterpreterExecutor:
    """Evaluates jaxprs equation by equation with each primitive's NumPy `impl`.

    Donation is accepted and ignored: NumPy buffers are not reused.
    """

    name = "interpreter"

    def execute(self, closed, args, *, name, donated_invars):
        return _interpret(closed, args)

    def lower(self, closed, *, name, donated_invars):
        return InterpretedProgram(closed, name)


class InterpretedProgram:
    """The interpreter's "lowered" and "compiled" form: the jaxpr itself."""

    def __init__(self, closed: ClosedJaxpr, name: str):
        self.closed = closed
        self.name = name

    def as_text(self) -> str:
        return str(self.closed)

    def compile(self) -> InterpretedProgram:
        return self

    def cost_analysis(self) -> dict[str, float]:
        """Equation count and the bytes each equation reads and writes."""
        eqns = self.closed.jaxpr.eqns
        accessed = sum(v.aval.size * v.aval.dtype.itemsize
                       for e in eqns for v in [*e.invars, *e.outvars])
        return {"equations": float(len(eqns)), "bytes accessed": float(accessed)}

    def __call__(self, *flat_args):
        return _interpret(self.closed, flat_args)


def _interpret(closed: ClosedJaxpr, args: Sequence[Any]) -> list[Any]:
    """Evaluates `closed` on values of the types its jaxpr declares, returning those types.

    NumPy computes Python scalars and float64 scalars in 64 bits; the jaxpr says
    they are f32 (without x64), as a compiled executor would treat them.
    """
    args = [_as_declared(x, aval) for x, aval in zip(args, closed.in_avals)]
    outs = eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return [_as_declared(x, aval) for x, aval in zip(outs, closed.out_avals)]


def _as_declared(x: Any, aval: ShapedArray) -> Any:
    return x if getattr(x, "dtype", None) == aval.dtype else np.asarray(x, aval.dtype)


_executor: list[Executor] = [InterpreterExecutor()]
_executor_version = [0]  # bumped on registration, so jit functions re-pick their dispatcher


def register_executor(executor: Executor) -> Executor:
    """Makes `executor` run every top-level jit call; returns the previous one.

    An executor may also offer `fast_dispatch(jit_function) -> callable`, a
    faster way to call a jit function (lamella.lax serves cache hits from C++)
    that falls back on `jit_function.call_and_report`, and `wrap_jit(jit_function)`,
    the object `jit` returns in its place.
    """
    previous = _executor[0]
    _executor[0] = executor
    _executor_version[0] += 1
    return previous


def current_executor() -> Executor:
    return _executor[0]


# ---------------------------------------------------------------------------
# The call primitive and its rules.


class JitPrimitive(Primitive):
    multiple_results = True

    def pp_params(self, params):
        shown = [("name", params["name"]), ("jaxpr", params["jaxpr"])]
        if any(params["donated_invars"]):
            shown.append(("donated_invars", params["donated_invars"]))
        return shown


jit_p = JitPrimitive("jit")


@jit_p.def_impl
def _jit_impl(*args, jaxpr, name, donated_invars):
    return _executor[0].execute(jaxpr, args, name=name, donated_invars=donated_invars)


@jit_p.def_abstract_eval
def _jit_abstract_eval(*avals, jaxpr, name, donated_invars):
    expected = jaxpr.in_avals
    if len(avals) != len(expected) or any(
            a.shape != e.shape or a.dtype != e.dtype for a, e in zip(avals, expected)):
        got = ", ".join(a.str_short() for a in avals)
        want = ", ".join(a.str_short() for a in expected)
        raise TypeError(f"jit-compiled {name} called with arguments ({got}) but its jaxpr "
                        f"expects ({want})")
    return jaxpr.out_avals


def _no_donation(n: int) -> tuple[bool, ...]:
    return (False,) * n


def _jit_jvp(primals, tangents, *, jaxpr, name, donated_invars):
    nonzeros = [type(t) is not ad.Zero for t in tangents]
    jvp_closed, out_nonzeros = ad.jvp_jaxpr(jaxpr, nonzeros)
    nonzero_tangents = [t for t in tangents if type(t) is not ad.Zero]
    outs = jit_p.bind(*primals, *nonzero_tangents, jaxpr=jvp_closed, name=name,
                      donated_invars=_no_donation(len(primals) + len(nonzero_tangents)))
    n = len(jaxpr.out_avals)
    tangents_out = iter(outs[n:])
    return outs[:n], [next(tangents_out) if nz else ad.Zero(a.to_tangent_aval())
                      for a, nz in zip(jaxpr.out_avals, out_nonzeros)]


def _jit_transpose(cts, *args, jaxpr, name, donated_invars):
    linear = [ad.is_undefined_primal(x) for x in args]
    transposed = ad.transpose_jaxpr(jaxpr, linear)
    nonlinear = [x for x, lin in zip(args, linear) if not lin]
    cts = [ad.instantiate_zeros(ct) for ct in cts]
    outs = iter(jit_p.bind(*nonlinear, *cts, jaxpr=transposed, name=f"transpose({name})",
                           donated_invars=_no_donation(len(nonlinear) + len(cts))))
    return [next(outs) if lin else None for lin in linear]


def _jit_batch(axis_data, args, dims, *, jaxpr, name, donated_invars):
    batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims)
    outs = jit_p.bind(*args, jaxpr=batched, name=name, donated_invars=donated_invars)
    return outs, out_dims


def _jit_partial_eval(trace, args, *, jaxpr, name, donated_invars):
    unknowns = [trace.is_unknown(x) for x in args]
    known, unknown, out_unknowns, num_res = partial_eval.partial_eval_jaxpr(jaxpr, unknowns)
    known_args, unknown_args = partition_list(unknowns, args)
    with set_current_trace(trace.known):
        known_outs = jit_p.bind(*known_args, jaxpr=known, name=name,
                                donated_invars=_no_donation(len(known_args)))
    split = len(known_outs) - num_res
    known_outs, residuals = known_outs[:split], known_outs[split:]
    with set_current_trace(trace.unknown):
        unknown_outs = jit_p.bind(*residuals, *unknown_args, jaxpr=unknown, name=name,
                                  donated_invars=_no_donation(num_res + len(unknown_args)))
    return merge_lists(out_unknowns, known_outs, unknown_outs)


ad.primitive_jvps[jit_p] = _jit_jvp
ad.primitive_transposes[jit_p] = _jit_transpose
batching.fancy_primitive_batchers[jit_p] = _jit_batch
partial_eval.partial_eval_rules[jit_p] = _jit_partial_eval


# ---------------------------------------------------------------------------
# Turning Python calls into flat arrays and back.


def fun_signature(fun: Callable) -> inspect.Signature | None:
    try:
        return inspect.signature(fun)
    except (TypeError, ValueError):
        return None


def fun_name(fun: Callable) -> str:
    return getattr(fun, "__name__", None) or type(fun).__name__


def fun_source(fun: Callable) -> str | None:
    code = getattr(inspect.unwrap(fun), "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else None


def abstractify_args(flat_args: Sequence[Any], leaf_names: Callable[[], list[str]],
                     what: str) -> list[ShapedArray]:
    """The avals of flattened arguments, with an error naming a non-array argument."""
    avals = []
    for i, x in enumerate(flat_args):
        try:
            avals.append(aval_of(x))
        except TypeError:
            raise TypeError(
                f"Error interpreting argument to {what} as an abstract array. The problematic "
                f"value is of type {type(x).__name__} and was passed at `{leaf_names()[i]}`. "
                f"Only arrays, NumPy scalars and Python numbers can be traced: mark this "
                f"argument static with static_argnums/static_argnames, or convert it to an "
                f"array.") from None
    return avals


def _leaf_names(signature, dyn_positions, dyn_args, dyn_kwargs) -> list[str]:
    params = list(signature.parameters) if signature is not None else []
    names = []
    for pos, arg in zip(dyn_positions, dyn_args):
        base = params[pos] if pos < len(params) and signature.parameters[
            params[pos]].kind is not inspect.Parameter.VAR_POSITIONAL else f"args[{pos}]"
        names.extend(base + keystr(path) for path, _ in tree_flatten_with_path(arg)[0])
    for key in sorted(dyn_kwargs):
        names.extend(key + keystr(path) for path, _ in
                     tree_flatten_with_path(dyn_kwargs[key])[0])
    return names


def flatten_outputs(outs: Any, what: str) -> tuple[list[Any], PyTreeDef]:
    flat, tree = tree_flatten(outs)
    for path, leaf in tree_flatten_with_path(outs)[0]:
        if not isinstance(leaf, Tracer):
            try:
                get_aval(leaf)
            except TypeError:
                raise TypeError(f"{what} returned a value of type {type(leaf).__name__} at "
                                f"output{keystr(path)}; a transformed function can only return "
                                "arrays, numbers and pytrees of them.") from None
    return flat, tree


def _resolve_static(signature, static_argnums, static_argnames):
    nums = set(static_argnums)
    names = set(static_argnames)
    if signature is not None:
        params = list(signature.parameters.values())
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        for i, p in enumerate(positional):
            if p.name in names and p.kind is p.POSITIONAL_OR_KEYWORD:
                nums.add(i)
            if i in nums and p.kind is p.POSITIONAL_OR_KEYWORD:
                names.add(p.name)
    return frozenset(nums), frozenset(names)


def _as_tuple(x: int | str | Sequence | None) -> tuple:
    if x is None:
        return ()
    return (x,) if isinstance(x, (int, str)) else tuple(x)


class _Entry:
    """A traced signature: the closed jaxpr, output tree and donation mask."""

    __slots__ = ("closed", "hoisted", "out_tree", "donated", "out_avals")

    def __init__(self, closed, hoisted, out_tree, donated):
        self.closed = closed
        self.hoisted = hoisted
        self.out_tree = out_tree
        self.donated = donated


class JitFunction:
    """A function compiled on its first call with each new argument signature."""

    _CACHE_SIZE = 4096

    def __init__(self, fun: Callable, static_argnums=None, static_argnames=None,
                 donate_argnums=None, donate_argnames=None, traced_for: str = "jit"):
        if not callable(fun):
            raise TypeError(f"jit expects a callable, got {fun!r} of type {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._signature = fun_signature(fun)
        self._static_nums, self._static_names = _resolve_static(
            self._signature, _as_tuple(static_argnums), _as_tuple(static_argnames))
        self._donate_nums, self._donate_names = _resolve_static(
            self._signature, _as_tuple(donate_argnums), _as_tuple(donate_argnames))
        self._cache: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._name = fun_name(fun)
        self._traced_for = traced_for
        self._dispatch: Callable | None = None
        self._dispatch_version = -1

    def __repr__(self) -> str:
        return f"<jit-compiled {self._name}>"

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        if self._dispatch_version != _executor_version[0]:
            executor = _executor[0]
            fast = getattr(executor, "fast_dispatch", None)
            self._dispatch = fast(self) if fast is not None else self._call_python
            self._dispatch_version = _executor_version[0]
        return self._dispatch(*args, **kwargs)

    static_argnums = property(lambda self: tuple(sorted(self._static_nums)))
    static_argnames = property(lambda self: tuple(sorted(self._static_names)))
    donates = property(lambda self: bool(self._donate_nums or self._donate_names))
    fun = property(lambda self: self._fun)
    name = property(lambda self: self._name)

    def _call_python(self, *args, **kwargs):
        return self.call_and_report(args, kwargs)[0]

    def call_and_report(self, args: tuple, kwargs: dict) -> tuple[Any, _Entry | None, list]:
        """Calls the function; also returns the traced entry and flat arguments used
        (None and [] when jit is disabled), for dispatchers that cache calls."""
        if config.read("disable_jit"):
            return self._fun(*args, **kwargs), None, []
        entry, flat = self._prepare(args, kwargs)
        outs = jit_p.bind(*entry.hoisted, *flat, jaxpr=entry.closed, name=self._name,
                          donated_invars=entry.donated)
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
            return _leaf_names(self._signature, dyn_positions, dyn_args, dyn_kwargs)

        avals = flat_avals or abstractify_args(flat, names, f"jit-compiled {self._name}")
        key = (in_tree, tuple(avals), static_key, config.trace_key())
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

    def _trace(self, args, kwargs, dyn_positions, dyn_args, dyn_kwargs, in_tree, avals, names):
        out_tree: list[PyTreeDef] = []

        def flat_fun(*flat_tracers):
            traced_args, traced_kwargs = tree_unflatten(in_tree, flat_tracers)
            full_args = list(args)
            for pos, value in zip(dyn_positions, traced_args):
                full_args[pos] = value
            full_kwargs = {**kwargs, **traced_kwargs}
            outs = self._fun(*full_args, **full_kwargs)
            flat_outs, tree = flatten_outputs(outs, f"jit-compiled {self._name}")
            out_tree.append(tree)
            return flat_outs

        debug = DebugInfo(self._traced_for, self._name, fun_source(self._fun), tuple(names()))
        jaxpr, consts = trace_to_jaxpr(flat_fun, avals, debug)
        closed, hoisted = hoist_tracer_consts(jaxpr, consts)
        donated = self._donation_mask(dyn_positions, dyn_args, dyn_kwargs)
        return _Entry(closed, hoisted, out_tree[0], (False,) * len(hoisted) + donated)

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
        return Traced(self, entry, args, kwargs)

    def lower(self, *args, **kwargs) -> Lowered:
        """Traces and lowers for these arguments: `jit(f).lower(x).as_text()`."""
        return self.trace(*args, **kwargs).lower()

    def eval_shape(self, *args, **kwargs) -> Any:
        """The output shapes and dtypes, as a pytree of ShapeDtypeStruct."""
        return self.trace(*args, **kwargs).out_info

    def clear_cache(self) -> None:
        with self._lock:
            self._cache.clear()


def _out_info(entry: _Entry) -> Any:
    return tree_unflatten(entry.out_tree, [ShapeDtypeStruct(a.shape, a.dtype,
                                                            weak_type=a.weak_type)
                                           for a in entry.closed.out_avals])


class Traced:
    """A traced jit function: `.jaxpr`, `.out_info`, then `.lower()`."""

    def __init__(self, jitted: JitFunction, entry: _Entry, args, kwargs):
        self._jitted = jitted
        self._entry = entry
        self.args_info = tree_map(lambda x: ShapeDtypeStruct(aval_of(x).shape,
                                                             aval_of(x).dtype,
                                                             weak_type=aval_of(x).weak_type),
                                  self._jitted._split_args(args, kwargs)[1:3])
        self.fun_name = jitted._name

    jaxpr = property(lambda self: self._entry.closed)
    out_info = property(lambda self: _out_info(self._entry))
    in_avals = property(lambda self: self._entry.closed.in_avals)

    def lower(self) -> Lowered:
        program = current_executor().lower(self._entry.closed, name=self.fun_name,
                                           donated_invars=self._entry.donated)
        return Lowered(self, program)


class Lowered:
    """A lowered jit function: `.as_text()`, `.compile()`."""

    def __init__(self, traced: Traced, program: Any):
        self._traced = traced
        self._program = program

    def as_text(self) -> str:
        return self._program.as_text()

    def compile(self) -> Compiled:
        return Compiled(self._traced, self._program.compile())

    def cost_analysis(self) -> dict[str, float]:
        return self._program.cost_analysis()


class Compiled:
    """A compiled jit function, callable on arguments of the traced types only.

    Static arguments were fixed when tracing: pass only the dynamic ones.
    """

    def __init__(self, traced: Traced, executable: Any):
        self._traced = traced
        self._executable = executable

    def as_text(self) -> str:
        return self._executable.as_text()

    def cost_analysis(self) -> dict[str, float]:
        return self._executable.cost_analysis()

    @property
    def out_info(self) -> Any:
        return self._traced.out_info

    def __call__(self, *args, **kwargs):
        entry = self._traced._entry
        flat, in_tree = tree_flatten((args, kwargs))
        expected = entry.closed.in_avals[len(entry.hoisted):]
        problems = []
        traced_tree = tree_structure(self._traced.args_info)
        if in_tree != traced_tree:
            problems.append(f"expected {len(expected)} array arguments with structure "
                            f"{traced_tree}, got {len(flat)} with structure {in_tree}")
        else:
            for i, (x, want) in enumerate(zip(flat, expected)):
                got = aval_of(x)
                if got.shape != want.shape or got.dtype != want.dtype:
                    problems.append(f"argument {i}: expected {want.str_short()}, "
                                    f"got {got.str_short()}")
        if problems:
            raise TypeError(f"Compiled {self._traced.fun_name} called with arguments that "
                            "differ from those it was compiled for:\n  " + "\n  ".join(problems))
        outs = self._executable(*entry.hoisted, *flat)
        return tree_unflatten(entry.out_tree, outs)


def jit(fun: Callable | None = None, *, static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Sequence[str] | None = None) -> Any:
    """Compiles `fun`: traced once per argument signature, then run by the executor.

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
                                 donate_argnums=donate_argnums, donate_argnames=donate_argnames)
    jitted = JitFunction(fun, static_argnums, static_argnames, donate_argnums, donate_argnames)
    # An executor may hand back its own callable (lamella.lax: jaxlib's C++
    # dispatcher, carrying trace/lower/eval_shape), so cached calls run no Python.
    wrap = getattr(_executor[0], "wrap_jit", None)
    if wrap is None:
        return jitted
    wrapped = wrap(jitted)
    jitted._dispatch, jitted._dispatch_version = wrapped, _executor_version[0]
    return wrapped
