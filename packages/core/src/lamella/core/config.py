"""Global configuration flags, with thread-local overrides.

Flags are read on hot paths (dtype canonicalization, trace-cache keys), so a
read is one dict lookup. Context managers override a flag for the current
thread only, the way JAX's do.

>>> from lamella.core import config
>>> config.read("enable_x64")
False
>>> with config.override("enable_x64", True):
...     config.read("enable_x64")
True
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

_UNSET = object()


def _env_bool(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


class Config:
    """The table of flags. Use the module-level `config` instance."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._help: dict[str, str] = {}
        self._traced: list[str] = []
        self._observers: dict[str, list[Callable[[Any], None]]] = {}
        self._local = threading.local()

    def define(self, name: str, default: Any, help: str, affects_tracing: bool = False) -> None:
        """Declares a flag; `affects_tracing` flags join every trace-cache key."""
        self._values[name] = default
        self._help[name] = help
        if affects_tracing:
            self._traced.append(name)

    def _check(self, name: str) -> str:
        for prefix in ("jax_", "lamella_"):
            if name.startswith(prefix) and name[len(prefix):] in self._values:
                return name[len(prefix):]
        if name not in self._values:
            known = ", ".join(sorted(self._values))
            raise AttributeError(f"Unrecognized config option: {name!r}. Known options: {known}.")
        return name

    def read(self, name: str) -> Any:
        """Returns the flag's value in this thread."""
        value = self._local.__dict__.get(name, _UNSET)
        if value is _UNSET:
            return self._values[name]
        return value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.read(self._check(name))

    def update(self, name: str, value: Any) -> None:
        """Sets a flag for the whole process, e.g. `config.update("enable_x64", True)`."""
        name = self._check(name)
        self._values[name] = value
        self._notify(name)

    @contextlib.contextmanager
    def override(self, name: str, value: Any) -> Iterator[None]:
        """Sets a flag for the current thread inside a `with` block."""
        name = self._check(name)
        local = self._local.__dict__
        previous = local.get(name, _UNSET)
        local[name] = value
        self._notify(name)
        try:
            yield
        finally:
            if previous is _UNSET:
                del local[name]
            else:
                local[name] = previous
            self._notify(name)

    def observe(self, name: str, callback: Callable[[Any], None]) -> None:
        """Calls `callback(value)` whenever the flag's value may have changed."""
        self._observers.setdefault(self._check(name), []).append(callback)

    def _notify(self, name: str) -> None:
        for callback in self._observers.get(name, ()):
            callback(self.read(name))

    def trace_key(self) -> tuple:
        """The values of every flag that changes what tracing produces."""
        local = self._local.__dict__
        if not local:
            return tuple(self._values[n] for n in self._traced)
        return tuple(local.get(n, self._values[n]) for n in self._traced)

    def values(self) -> dict[str, Any]:
        """A snapshot of every flag in this thread."""
        return {name: self.read(name) for name in self._values}


config = Config()
config.define("enable_x64", _env_bool("LAMELLA_ENABLE_X64") or _env_bool("JAX_ENABLE_X64"),
              "Use 64-bit types by default (otherwise 64-bit requests become 32-bit).",
              affects_tracing=True)
config.define("disable_jit", _env_bool("LAMELLA_DISABLE_JIT"),
              "Run jit-decorated functions op by op, in Python, for debugging.")
config.define("default_matmul_precision", None,
              "Default precision for matrix products: None, 'bfloat16', 'tensorfloat32' or "
              "'float32'.",
              affects_tracing=True)
config.define("numpy_rank_promotion", "allow",
              "Implicit rank promotion in lamella.numpy: 'allow', 'warn' or 'raise'.",
              affects_tracing=True)
config.define("numpy_dtype_promotion", "standard",
              "Type promotion in lamella.numpy: 'standard' (JAX's lattice) or 'strict' (only "
              "weakly typed Python scalars promote; mixing dtypes is a TypePromotionError).",
              affects_tracing=True)
config.define("static_index_errors", False,
              "Raise IndexError for a static integer index out of bounds (JAX clamps it, "
              "and so does lamella by default).",
              affects_tracing=True)
config.define("default_prng_impl", "threefry2x32", "The PRNG implementation for new keys.",
              affects_tracing=True)
config.define("debug_nans", False, "Raise an error when an operation produces a NaN.")


def enable_x64(new_value: bool = True) -> contextlib.AbstractContextManager[None]:
    """Context manager that turns 64-bit mode on (or off) in this thread.

    >>> with enable_x64():
    ...     config.read("enable_x64")
    True
    """
    return config.override("enable_x64", new_value)


def disable_jit(disable: bool = True) -> contextlib.AbstractContextManager[None]:
    """Context manager that makes `jit` run functions eagerly, op by op.

    >>> with disable_jit():
    ...     config.read("disable_jit")
    True
    """
    return config.override("disable_jit", disable)
