"""Seeing values inside traced code (JAX's `jax.debug`): `callback`, `print`, `log`,
`breakpoint`.

Each stages a `debug_callback` (or `debug_print`) equation with no outputs
and a `DebugEffect` (`OrderedDebugEffect` with `ordered=True`), so it is never
dropped as dead code and a compiling backend calls it back from the running
program. The values are those the program computes: under `vmap` the callback
runs once per batch element, under `grad` it sees primal values (it is never
differentiated), inside `scan` it runs once per iteration. In a program over
several devices (as JAX's) it runs once, on the first device, with whole values;
inside `shard_map` or `pmap`, or with `partitioned=True`, once per device with
that device's part (in no particular order across devices). Unlike JAX 0.10.2,
`ordered=True` is accepted there (it runs on one device, so its order holds).

>>> import numpy as np
>>> from lamella.core import jit, vmap
>>> f = jit(lambda x: (print("x = {x}", x=x), x)[1])
>>> _ = f(np.float32(2.0))
x = 2.0
>>> _ = vmap(lambda v: print("{}", v))(np.arange(2, dtype=np.int32))
0
1
"""

from __future__ import annotations

import cmd
import dataclasses
import inspect
import logging
import pprint
import string
import sys
import threading
import traceback
from collections.abc import Callable, Sequence
from typing import IO, Any

import numpy as np

from lamella.core.avals import valid_jaxtype
from lamella.core.callbacks import pure_callback
from lamella.core.effects import Effect, effect_rules, ordered_effects
from lamella.core.primitive import Primitive
from lamella.core.rules import (
    moveaxis,
    not_mapped,
    primitive_batchers,
    primitive_jvps,
    primitive_transposes,
)
from lamella.core.sharding_view import visualize_array_sharding, visualize_sharding  # noqa: F401
from lamella.core.source_info import _is_internal, user_frame
from lamella.core.structural import stop_gradient
from lamella.core.trace import Tracer, aval_of
from lamella.core.tree_util import PyTreeDef, tree_flatten, tree_unflatten

__all__ = ["DebugEffect", "OrderedDebugEffect", "breakpoint", "callback", "debug_callback_p",
           "debug_effect", "debug_print_p", "log", "ordered_debug_effect", "print",
           "visualize_array_sharding", "visualize_sharding"]

_builtin_print = print


class DebugEffect(Effect):
    """The effect of debugging callbacks: kept, not ordered."""

    def __str__(self) -> str:
        return "Debug"


class OrderedDebugEffect(Effect):
    """The effect of debugging callbacks with `ordered=True`: kept, in program order."""

    def __str__(self) -> str:
        return "OrderedDebug"


debug_effect = DebugEffect()
ordered_debug_effect = OrderedDebugEffect()
ordered_effects.add_type(OrderedDebugEffect)


def _split_args(args: tuple, kwargs: dict) -> tuple[PyTreeDef, list[Any], dict[int, Any]]:
    """The leaves of (args, kwargs) that are arrays (traced or not) are staged; the
    others (strings, functions ...) stay Python values, kept by position."""
    leaves, tree = tree_flatten((args, kwargs))
    dynamic, static = [], {}
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, Tracer) or valid_jaxtype(leaf):
            dynamic.append(leaf)
        else:
            static[i] = leaf
    return tree, dynamic, static


def _merge_args(tree: PyTreeDef, dynamic: Sequence[Any], static: dict[int, Any]) -> Any:
    dynamic = iter(dynamic)
    leaves = [static[i] if i in static else next(dynamic)
              for i in range(tree.num_leaves)]
    return tree_unflatten(tree, leaves)


@dataclasses.dataclass(frozen=True)
class _FlatDebugCallback:
    """The user's callback on the staged leaves merged with the static ones."""

    callback_func: Callable[..., Any]
    in_tree: PyTreeDef
    static_args: tuple[tuple[int, Any], ...]

    def __call__(self, *dynamic: Any) -> None:
        args, kwargs = _merge_args(self.in_tree, dynamic, dict(self.static_args))
        self.callback_func(*args, **kwargs)


@dataclasses.dataclass(frozen=True)
class _PerElement:
    """`inner` once per element of the batched arguments (leading axis), in order."""

    inner: Callable[..., Any]
    batched: tuple[bool, ...]

    def __call__(self, *args: Any) -> None:
        size = next(np.shape(a)[0] for a, b in zip(args, self.batched) if b)
        for i in range(size):
            self.inner(*[a[i] if b else a for a, b in zip(args, self.batched)])


def _on_host(callback: Callable[..., Any], args: Sequence[Any]) -> list:
    callback(*[np.array(a) for a in args])
    return []


# ---------------------------------------------------------------------------
# debug_callback

debug_callback_p = Primitive("debug_callback")
debug_callback_p.multiple_results = True


def callback(callback: Callable[..., None] | None = None, *args: Any, ordered: bool = False,
             partitioned: bool = False, **kwargs: Any) -> Callable[..., None] | None:
    """Calls `callback(*args, **kwargs)` with the values the program computes.

    Array leaves of the arguments arrive as NumPy arrays, other leaves as given.
    The two-call form `callback(ordered=True)(fn, *args)` is JAX's too.

    >>> import numpy as np
    >>> from lamella.core import jit
    >>> seen = []
    >>> _ = jit(lambda x: callback(seen.append, x))(np.float32(1.5)); seen
    [array(1.5, dtype=float32)]
    """
    def staged(fn: Callable[..., None], *c_args: Any, **c_kwargs: Any) -> None:
        if not callable(fn):
            raise TypeError("first argument to jax.debug.callback must be callable, but got "
                            f"an object of type {type(fn)}")
        tree, dynamic, static = _split_args(c_args, c_kwargs)
        debug_callback_p.bind(*dynamic,
                              callback=_FlatDebugCallback(fn, tree, tuple(static.items())),
                              effect=ordered_debug_effect if ordered else debug_effect,
                              partitioned=partitioned)

    if callback is not None:
        staged(callback, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError("debug_callback received unexpected arguments in the two-call form: "
                        f"args={args} kwargs={kwargs}")
    return staged


@debug_callback_p.def_impl
def _debug_callback_impl(*args, callback, effect, partitioned):
    return _on_host(callback, args)


debug_callback_p.def_abstract_eval(lambda *avals, **params: [])


def _debug_callback_batch(args, dims, *, callback, effect, partitioned):
    args = [a if d is not_mapped else moveaxis(a, d, 0) for a, d in zip(args, dims)]
    per_element = _PerElement(callback, tuple(d is not not_mapped for d in dims))
    return debug_callback_p.bind(*args, callback=per_element, effect=effect,
                                 partitioned=partitioned), []


def _debug_jvp(primitive: Primitive) -> Callable:
    """Debugging callbacks see primal values and have no tangents."""
    def jvp(primals, tangents, **params):
        return primitive.bind(*primals, **params), []
    return jvp


primitive_jvps[debug_callback_p] = _debug_jvp(debug_callback_p)
primitive_transposes[debug_callback_p] = lambda cts, *args, **params: [None] * len(args)
primitive_batchers[debug_callback_p] = _debug_callback_batch
effect_rules[debug_callback_p] = lambda *, effect, **_: frozenset({effect})


# ---------------------------------------------------------------------------
# debug_print (and debug.log)

debug_print_p = Primitive("debug_print")
debug_print_p.multiple_results = True
_logger = logging.getLogger("lamella.core.debug")


class _FormatChecker(string.Formatter):
    """Formats nothing; checks that every argument is used (an f-string passed by
    mistake would print trace-time tracers)."""

    def format_field(self, value: Any, format_spec: str) -> str:
        return ""

    def check_unused_args(self, used_args, args, kwargs) -> None:
        unused = [a for i, a in enumerate(args) if i not in used_args]
        if unused:
            raise ValueError(f"Unused positional arguments to `jax.debug.print`: {unused}")
        unused_kwargs = [k for k in kwargs if k not in used_args]
        if unused_kwargs:
            raise ValueError(
                f"Unused keyword arguments to `jax.debug.print`: {unused_kwargs}. You may be "
                "passing an f-string (i.e, `f\"{x}\"`) into `jax.debug.print` and instead "
                "should pass in a regular string.")


@dataclasses.dataclass(frozen=True)
class _PrintCallback:
    """Formats and writes one message: `fmt.format(...)` under the NumPy print options
    of trace time, or `fmt` and the values joined by spaces when it has no fields."""

    fmt: str
    np_printoptions: tuple
    has_placeholders: bool
    logging_record: logging.LogRecord | None

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        if self.has_placeholders:
            with np.printoptions(**dict(self.np_printoptions)):
                message = self.fmt.format(*args, **kwargs)
        else:
            message = " ".join((self.fmt, *(str(a) for a in args)))
        if self.logging_record is not None:
            record = logging.makeLogRecord(self.logging_record.__dict__)
            record.msg = message
            _logger.handle(record)
        else:
            sys.stdout.write(message + "\n")


def _print_callback(fmt, in_tree, static_args, np_printoptions, has_placeholders,
                    logging_record) -> _FlatDebugCallback:
    return _FlatDebugCallback(
        _PrintCallback(fmt, np_printoptions, has_placeholders, logging_record),
        in_tree, static_args)


def print(fmt: str | None = None, *args: Any, ordered: bool = False, partitioned: bool = False,
          skip_format_check: bool = False, _use_logging: bool = False,
          **kwargs: Any) -> Callable[..., None] | None:
    """Prints `fmt.format(*args, **kwargs)` with the values the program computes.

    Not an f-string: `print("x = {x}", x=x)`. With `ordered=True` the prints of
    one program (and of successive programs) come out in program order.

    >>> import numpy as np
    >>> from lamella.core import grad
    >>> from lamella.core.structural import reduce_sum
    >>> g = grad(lambda x: (print("primal {}", x), reduce_sum(x, (0,)))[1])(np.ones(2, np.float32))
    primal [1. 1.]
    """
    def staged(fmt: str, *c_args: Any, **c_kwargs: Any) -> None:
        if not skip_format_check:
            _FormatChecker().format(fmt, *c_args, **c_kwargs)
        has_placeholders = bool(fmt) and next(iter(string.Formatter().parse(fmt)))[1] \
            is not None
        tree, dynamic, static = _split_args(c_args, c_kwargs)
        record = _logging_record(logging.INFO) if _use_logging else None
        debug_print_p.bind(*dynamic, fmt=fmt, ordered=ordered, partitioned=partitioned,
                           in_tree=tree, static_args=tuple(static.items()),
                           np_printoptions=tuple(np.get_printoptions().items()),
                           has_placeholders=has_placeholders, logging_record=record)

    if fmt is not None:
        staged(fmt, *args, **kwargs)
        return None
    if args or kwargs:
        raise TypeError("debug_print received unexpected arguments in the two-call form: "
                        f"args={args} kwargs={kwargs}")
    return staged


def log(fmt: str | None = None, *args: Any, **kwargs: Any) -> Callable[..., None] | None:
    """As `print`, but through the logger "lamella.core.debug" at level INFO, the
    record naming the user's line.

    >>> import numpy as np
    >>> log("value {}", np.float32(1.0))
    """
    return print(fmt, *args, _use_logging=True, **kwargs)


def _logging_record(level: int) -> logging.LogRecord:
    frame = user_frame()
    filename, lineno = (frame.filename, frame.lineno) if frame else ("(unknown file)", 0)
    return _logger.makeRecord(_logger.name, level, filename, lineno, "", (), None)


@debug_print_p.def_impl
def _debug_print_impl(*args, ordered, partitioned, **print_params):
    return _on_host(_print_callback(**print_params), args)


debug_print_p.def_abstract_eval(lambda *avals, **params: [])


def _debug_print_batch(args, dims, *, ordered, partitioned, **print_params):
    return _debug_callback_batch(args, dims, callback=_print_callback(**print_params),
                                 effect=ordered_debug_effect if ordered else debug_effect,
                                 partitioned=partitioned)


primitive_jvps[debug_print_p] = _debug_jvp(debug_print_p)
primitive_transposes[debug_print_p] = lambda cts, *args, **params: [None] * len(args)
primitive_batchers[debug_print_p] = _debug_print_batch
effect_rules[debug_print_p] = lambda *, ordered, **_: frozenset(
    {ordered_debug_effect if ordered else debug_effect})


def debug_print_callback(params: dict) -> Callable[..., None]:
    """The flat host function of a `debug_print` equation's params (for lowerings)."""
    print_params = {k: v for k, v in params.items() if k not in ("ordered", "partitioned")}
    return _print_callback(**print_params)


# ---------------------------------------------------------------------------
# breakpoint: a small pdb on the values in scope


@dataclasses.dataclass(frozen=True)
class DebuggerFrame:
    """A Python frame seen from the debugger: where it is, and its variables (the
    traced ones replaced by their computed values)."""

    filename: str
    locals: dict[str, Any]
    globals: dict[str, Any]
    source: list[str]
    lineno: int
    offset: int | None

    @classmethod
    def capture(cls, info: inspect.FrameInfo) -> DebuggerFrame:
        try:
            source, start = inspect.getsourcelines(info.frame)
            offset = max(info.lineno - max(start, 1), 0)
        except (OSError, TypeError):
            source, offset = [], None
        return cls(info.filename, dict(info.frame.f_locals), info.frame.f_globals,
                   [line.rstrip("\n") for line in source], info.lineno, offset)


class CliDebugger(cmd.Cmd):
    """A text debugger over captured frames: `p expr`, `pp expr`, a bare expression,
    `u`/`d` (up, down), `l` (list), `w`/`bt` (where), `c` (continue), `q` (quit)."""

    prompt = "(jdb) "

    def __init__(self, frames: list[DebuggerFrame], thread_id: int | None,
                 stdin: IO[str] | None = None, stdout: IO[str] | None = None):
        super().__init__(stdin=stdin or sys.stdin, stdout=stdout or sys.stdout)
        self.use_rawinput = False
        self.frames = frames
        self.frame_index = 0
        self.thread_id = thread_id
        self.intro = "Entering jdb:"

    def _evaluate(self, expr: str) -> Any:
        frame = self.frames[self.frame_index]
        return eval(expr, {}, {**frame.globals, **frame.locals})

    def _show(self, expr: str, fmt: Callable[[Any], str]) -> None:
        try:
            _builtin_print(fmt(self._evaluate(expr)), file=self.stdout)
        except Exception:
            message = traceback.format_exception_only(*sys.exc_info()[:2])[-1].strip()
            _builtin_print("***", message, file=self.stdout)

    def default(self, line: str) -> None:
        self._show(line, repr)

    def emptyline(self) -> bool:
        return False

    def do_p(self, arg: str) -> None:
        """p expression: evaluates and prints the value of an expression."""
        self._show(arg, repr)

    def do_pp(self, arg: str) -> None:
        """pp expression: evaluates and pretty-prints the value of an expression."""
        self._show(arg, pprint.pformat)

    def _context(self, num_lines: int = 2) -> None:
        frame = self.frames[self.frame_index]
        lines = [f"> {frame.filename}({frame.lineno})"]
        if frame.offset is not None:
            for i, line in enumerate(frame.source):
                if frame.offset - 1 - num_lines <= i <= frame.offset + num_lines:
                    lines.append(("->  " if i == frame.offset else "    ") + line)
        _builtin_print("\n".join(lines), file=self.stdout)

    def do_up(self, arg: str) -> None:
        """u(p): moves up a stack frame."""
        if self.frame_index == len(self.frames) - 1:
            _builtin_print("At topmost frame.", file=self.stdout)
        else:
            self.frame_index += 1
        self._context()
    do_u = do_up

    def do_down(self, arg: str) -> None:
        """d(own): moves down a stack frame."""
        if self.frame_index == 0:
            _builtin_print("At bottommost frame.", file=self.stdout)
        else:
            self.frame_index -= 1
        self._context()
    do_d = do_down

    def do_list(self, arg: str) -> None:
        """l(ist): lists the source around the current line."""
        self._context(num_lines=5)
    do_l = do_list

    def do_where(self, arg: str) -> None:
        """w(here): prints the stack, most recent frame last ('bt' too)."""
        lines = ["Traceback:"]
        for frame in reversed(self.frames):
            lines.append(f'  File "{frame.filename}", line {frame.lineno}')
            lines.append("    " + (frame.source[frame.offset].strip() if frame.offset is not None
                                   and frame.offset < len(frame.source) else "<no source>"))
        _builtin_print("\n".join(lines), file=self.stdout)
    do_w = do_bt = do_where

    def do_continue(self, arg: str) -> bool:
        """c(ont(inue)): continues the program."""
        return True
    do_c = do_cont = do_continue

    def do_quit(self, arg: str) -> None:
        """q(uit): exits the program."""
        sys.exit(0)
    do_q = do_EOF = do_exit = do_quit

    def run(self) -> None:
        while True:
            try:
                self.cmdloop()
                return
            except KeyboardInterrupt:
                _builtin_print("--KeyboardInterrupt--", file=self.stdout)


_debug_lock = threading.Lock()


@dataclasses.dataclass(frozen=True)
class _BreakpointCallback:
    frames: tuple[DebuggerFrame, ...]
    frames_tree: PyTreeDef
    static: tuple[tuple[int, Any], ...]

    def __call__(self, *dynamic: Any) -> None:
        locals_, _ = _merge_args(self.frames_tree, dynamic, dict(self.static))
        frames = [dataclasses.replace(f, locals=loc) for f, loc in zip(self.frames, locals_)]
        thread = None if threading.current_thread() is threading.main_thread() \
            else threading.get_ident()
        with _debug_lock:
            CliDebugger(frames, thread).run()


def breakpoint(*, backend: str | None = None, filter_frames: bool = True,
               num_frames: int | None = None, ordered: bool = False, token: Any = None,
               **kwargs: Any) -> Any:
    """Stops the program here and opens a debugger prompt `(jdb)` on stdin/stdout,
    with the variables of the enclosing frames (traced ones as computed values).

    Commands: `p expr`, `pp expr`, an expression, `u`/`d`, `l`, `w`, `c`, `q`.
    `token` (an array or pytree) makes it run once `token` is computed and
    returns it; `ordered=True` orders it with other ordered callbacks.

    >>> import io, sys
    >>> import numpy as np
    >>> from lamella.core import jit, stop_gradient
    >>> def f(x):
    ...     y = stop_gradient(x)
    ...     breakpoint()
    ...     return y
    >>> sys.stdin, stdin = io.StringIO("p y\\nc\\n"), sys.stdin
    >>> _ = jit(f)(np.float32(1.0))  # doctest: +NORMALIZE_WHITESPACE
    Entering jdb:
    (jdb) array(1., dtype=float32)
    (jdb)
    >>> sys.stdin = stdin
    """
    if token is not None and ordered:
        raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
    infos = inspect.stack(0)[1:]
    if filter_frames:
        infos = [i for i in infos if not _is_internal(i.filename)]
    if num_frames is not None:
        infos = infos[:num_frames]
    frames = tuple(DebuggerFrame.capture(i) for i in infos)
    frames_tree, dynamic, static = _split_locals([f.locals for f in frames])
    debugger = _BreakpointCallback(frames, frames_tree, tuple(static.items()))
    if token is None:
        callback(debugger, *dynamic, ordered=ordered)
        return None
    token_leaves, token_tree = tree_flatten(token)

    def run_then_return(*values):
        debugger(*values[len(token_leaves):])
        return values[:len(token_leaves)]
    shapes = [aval_of(t) for t in token_leaves]
    out = pure_callback(run_then_return, shapes,
                        *[stop_gradient(x) for x in (*token_leaves, *dynamic)])
    return tree_unflatten(token_tree, out)


def _split_locals(frame_locals: list[dict[str, Any]]
                  ) -> tuple[PyTreeDef, list[Any], dict[int, Any]]:
    """Array leaves of the frames' variables are staged; a variable that cannot be
    flattened stays as it is."""
    safe = []
    for variables in frame_locals:
        kept = {}
        for name, value in variables.items():
            try:
                tree_flatten(value)
                kept[name] = value
            except Exception:
                kept[name] = _Unflattenable(value)
        safe.append(kept)
    return _split_args(tuple(safe), {})


@dataclasses.dataclass(frozen=True)
class _Unflattenable:
    value: Any

    def __repr__(self) -> str:
        return repr(self.value)
