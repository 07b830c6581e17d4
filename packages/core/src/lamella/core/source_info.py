"""Where in the user's code an operation came from.

Each staged equation records the first stack frame outside lamella, so that
errors and printed jaxprs can point at the user's line, and the name scopes
(`named_scope`, `named_call`) it was traced in, which name its operations in
the lowered program. When a jaxpr is re-traced by a transformation, the
original equation's location is carried over instead of pointing into
lamella's interpreter.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple


class SourceInfo(NamedTuple):
    filename: str
    lineno: int
    function: str
    name_stack: str = ""  # "outer/inner": the enclosing name scopes

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno} ({self.function})"


_internal_dirs: list[str] = []
_is_internal_cache: dict[str, bool] = {}
_is_internal_code: dict = {}  # code object -> internal?, the fast path of the frame walk
_interned: dict = {}  # (code, line) -> SourceInfo: one object per user source line
class _State(threading.local):
    def __init__(self) -> None:
        self.carried = None  # a SourceInfo, a frame to walk from, or None
        self.name_stack = ""


_state = _State()


def register_internal_path(directory: str) -> None:
    """Marks a package directory as lamella's own, skipped when finding user frames."""
    _internal_dirs.append(os.path.join(os.path.abspath(directory), ""))
    _is_internal_cache.clear()
    _is_internal_code.clear()


register_internal_path(os.path.dirname(__file__))


def _is_internal(filename: str) -> bool:
    internal = _is_internal_cache.get(filename)
    if internal is None:
        path = os.path.abspath(filename)
        internal = any(path.startswith(d) for d in _internal_dirs)
        _is_internal_cache[filename] = internal
    return internal


def user_stacklevel() -> int:
    """The `stacklevel` that makes a `warnings.warn` in the calling function point at the
    user's line (the innermost frame outside lamella).

    >>> import warnings
    >>> def check():
    ...     warnings.warn("careful", stacklevel=user_stacklevel())
    """
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and _is_internal(frame.f_code.co_filename):
        level, frame = level + 1, frame.f_back
    return level


def user_frame(skip: int = 1) -> SourceInfo | None:
    """The innermost frame outside lamella, or the carried-over location."""
    carried = _state.carried
    if isinstance(carried, SourceInfo):
        return carried
    frame = sys._getframe(skip) if carried is None else carried
    while frame is not None:
        code = frame.f_code
        internal = _is_internal_code.get(code)
        if internal is None:
            internal = _is_internal_code[code] = _is_internal(code.co_filename)
        if not internal:
            key = (code, frame.f_lineno, _state.name_stack)
            info = _interned.get(key)
            if info is None:
                info = _interned[key] = SourceInfo(code.co_filename, key[1], code.co_name,
                                                   key[2])
            return info
        frame = frame.f_back
    return None


class carry_source_info:
    """Within this block, new equations take `info` as their location."""

    __slots__ = ("info", "previous")

    def __init__(self, info: SourceInfo | None):
        self.info = info

    def __enter__(self) -> None:
        self.previous = _state.carried
        _state.carried = self.info if self.info is not None else self.previous

    def __exit__(self, *exc) -> None:
        _state.carried = self.previous


class call_site:
    """Within this block, equations that rules emit point at the user's call.

    Only the frame is remembered (cheap); it is walked to the user's line only
    if something is actually staged. An enclosing location takes precedence.
    """

    __slots__ = ("previous",)

    def __enter__(self) -> None:
        self.previous = _state.carried
        if self.previous is None:
            _state.carried = sys._getframe(1)

    def __exit__(self, *exc) -> None:
        _state.carried = self.previous


def describe(info: SourceInfo | None) -> str:
    return str(info) if info is not None else "<unknown location>"


@contextlib.contextmanager
def named_scope(name: str) -> Iterator[None]:
    """Operations traced inside the block are named `name/...` in the lowered program
    (locations of its StableHLO, profiles), as `jax.named_scope` does.

    >>> with named_scope("encoder"):
    ...     current_name_stack()
    'encoder'
    """
    if not isinstance(name, str):
        raise TypeError(f"named_scope takes a string, got {type(name).__name__}")
    previous = _state.name_stack
    _state.name_stack = f"{previous}/{name}" if previous else name
    try:
        yield
    finally:
        _state.name_stack = previous


def current_name_stack() -> str:
    """The name scopes this thread is tracing in, outermost first: `"a/b"`."""
    return _state.name_stack


def named_call(fun: Callable, *, name: str | None = None) -> Callable:
    """`fun`, with the operations it traces named `name/...` (default: its own name).

    >>> def layer(x):
    ...     return current_name_stack()
    >>> named_call(layer, name="dense")(1.0)
    'dense'
    """
    scope = name if name is not None else getattr(fun, "__name__", type(fun).__name__)

    @functools.wraps(fun)
    def named(*args: Any, **kwargs: Any) -> Any:
        with named_scope(scope):
            return fun(*args, **kwargs)
    return named
