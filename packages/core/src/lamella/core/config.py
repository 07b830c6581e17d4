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

NO_OVERRIDE = object()
"""What a flag's local observers receive when a thread's override ends without an outer one."""


def _env_bool(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


class Config:
    """The table of flags. Use the module-level `config` instance."""

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}
        self._help: dict[str, str] = {}
        self._choices: dict[str, tuple | None] = {}
        self._traced: list[str] = []
        self._observers: dict[str, list[Callable[[Any, bool], None]]] = {}
        self._override_observers: list[Callable[[dict[str, Any]], None]] = []
        self._local = threading.local()

    def define(self, name: str, default: Any, help: str, affects_tracing: bool = False,
               choices: tuple | None = None) -> Callable[..., Any]:
        """Declares a flag; `affects_tracing` flags join every trace-cache key.

        Returns the flag's context manager factory, as JAX exposes one per flag
        (`lamella.core.log_compiles(True)`)."""
        self._values[name] = default
        self._help[name] = help
        self._choices[name] = choices
        if affects_tracing:
            self._traced.append(name)
        return self._context_manager(name)

    def _check(self, name: str) -> str:
        for prefix in ("jax_", "lamella_"):
            if name.startswith(prefix) and name[len(prefix):] in self._values:
                return name[len(prefix):]
        if name not in self._values:
            known = ", ".join(sorted(self._values))
            raise AttributeError(f"Unrecognized config option: {name!r}. Known options: {known}.")
        return name

    def _validate(self, name: str, value: Any) -> Any:
        choices = self._choices[name]
        if choices is not None and value not in choices:
            raise ValueError(f"Invalid value {value!r} for config option {name!r}: expected one "
                             f"of {', '.join(map(repr, choices))}.")
        return value

    def read(self, name: str) -> Any:
        """Returns the flag's value in this thread (the `jax_` prefix is optional)."""
        value = self._local.__dict__.get(name, _UNSET)
        if value is _UNSET:
            value = self._values.get(name, _UNSET)
            if value is _UNSET:
                return self.read(self._check(name))
        return value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.read(self._check(name))

    @property
    def x64_enabled(self) -> bool:
        """Whether 64-bit types are on in this thread."""
        return bool(self.read("enable_x64"))

    @property
    def values(self) -> dict[str, Any]:
        """Every flag's value in this thread, keyed by its `jax_` name as in JAX."""
        return {f"jax_{name}": self.read(name) for name in self._values}

    def update(self, name: str, value: Any) -> None:
        """Sets a flag for the whole process, e.g. `config.update("jax_enable_x64", True)`."""
        name = self._check(name)
        self._values[name] = self._validate(name, value)
        self._notify(name, value, local=False)

    @contextlib.contextmanager
    def override(self, name: str, value: Any) -> Iterator[None]:
        """Sets a flag for the current thread inside a `with` block."""
        name = self._check(name)
        self._validate(name, value)
        local = self._local.__dict__
        previous = local.get(name, _UNSET)
        local[name] = value
        self._notify(name, value, local=True)
        self._notify_overrides(local)
        try:
            yield
        finally:
            if previous is _UNSET:
                del local[name]
                self._notify(name, NO_OVERRIDE, local=True)
            else:
                local[name] = previous
                self._notify(name, previous, local=True)
            self._notify_overrides(local)

    def _context_manager(self, name: str) -> Callable[..., Any]:
        default = True if isinstance(self._values[name], bool) else _UNSET

        def set_in_this_thread(new_val: Any = default) -> contextlib.AbstractContextManager:
            if new_val is _UNSET:
                raise TypeError(f"{name}() needs the value to set, e.g. {name}(...)")
            return self.override(name, new_val)
        set_in_this_thread.__name__ = name
        set_in_this_thread.__doc__ = (f"Context manager: `{name}` set to `new_val` in this "
                                      f"thread inside the block. {self._help[name]}")
        return set_in_this_thread

    def observe(self, name: str, callback: Callable[[Any, bool], None]) -> None:
        """Calls `callback(value, local)` on every change of the flag: `local=False` for
        the process-wide value (`update`), `local=True` for this thread's override (its
        value, or `NO_OVERRIDE` when the thread's last override ends). A runtime that
        keeps its own copy of a flag mirrors both, so overrides stay per thread."""
        self._observers.setdefault(self._check(name), []).append(callback)

    def observe_overrides(self, callback: Callable[[dict[str, Any]], None]) -> None:
        """Calls `callback(overrides)` whenever this thread's set of `with` overrides
        changes; `overrides` maps each overridden flag to its value here (read it, do not
        keep it)."""
        self._override_observers.append(callback)

    def _notify_overrides(self, local: dict[str, Any]) -> None:
        for callback in self._override_observers:
            callback(local)

    def _notify(self, name: str, value: Any, local: bool) -> None:
        for callback in self._observers.get(name, ()):
            callback(value, local)

    def trace_key(self) -> tuple:
        """The values of every flag that changes what tracing produces."""
        local = self._local.__dict__
        if not local:
            return tuple(self._values[n] for n in self._traced)
        return tuple(local.get(n, self._values[n]) for n in self._traced)


config = Config()
enable_x64 = config.define(
    "enable_x64", _env_bool("LAMELLA_ENABLE_X64") or _env_bool("JAX_ENABLE_X64"),
    "Use 64-bit types by default (otherwise 64-bit requests become 32-bit).",
    affects_tracing=True)
_disable_jit = config.define(
    "disable_jit", _env_bool("LAMELLA_DISABLE_JIT"),
    "Run jit-decorated functions op by op, in Python, for debugging.")
default_matmul_precision = config.define(
    "default_matmul_precision", None,
    "Default precision for matrix products: None, 'default', 'high', 'highest', 'bfloat16', "
    "'tensorfloat32' or 'float32'.", affects_tracing=True,
    choices=(None, "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
             "bfloat16_3x", "fastest"))
numpy_rank_promotion = config.define(
    "numpy_rank_promotion", "allow",
    "Implicit rank promotion in lamella.numpy: 'allow', 'warn' or 'raise'.",
    affects_tracing=True, choices=("allow", "warn", "raise"))
numpy_dtype_promotion = config.define(
    "numpy_dtype_promotion", "standard",
    "Type promotion in lamella.numpy: 'standard' (JAX's lattice) or 'strict' (only weakly "
    "typed Python scalars promote; mixing dtypes is a TypePromotionError).",
    affects_tracing=True, choices=("standard", "strict"))
static_index_errors = config.define(
    "static_index_errors", False,
    "Raise IndexError for a static integer index out of bounds (JAX clamps it, and so does "
    "lamella by default).", affects_tracing=True)
default_prng_impl = config.define(
    "default_prng_impl", "threefry2x32", "The PRNG implementation for new keys.",
    affects_tracing=True, choices=("threefry2x32",))
default_device = config.define(
    "default_device", None,
    "The device arrays and computations go to when none is named (None: the default "
    "backend's first device).", affects_tracing=True)
num_cpu_devices = config.define(
    "num_cpu_devices", int(os.environ.get("LAMELLA_NUM_CPU_DEVICES")
                           or os.environ.get("JAX_NUM_CPU_DEVICES") or -1),
    "How many CPU devices the CPU backend has (-1: one, or what XLA_FLAGS' "
    "--xla_force_host_platform_device_count says). Read when the backend starts: set it "
    "(or LAMELLA_NUM_CPU_DEVICES) before the first array or computation.")
log_compiles = config.define(
    "log_compiles", _env_bool("LAMELLA_LOG_COMPILES"),
    "Log (logger 'lamella', level WARNING) every compilation of a jitted function.")
explain_cache_misses = config.define(
    "explain_cache_misses", False,
    "Log why a jitted function traces again: which part of its signature changed.")
check_tracer_leaks = config.define(
    "check_tracer_leaks", False,
    "After tracing a jitted function, raise if one of its tracers is still referenced "
    "(a global, an attribute, a closure kept alive).")
enable_checks = config.define(
    "enable_checks", False, "Type-check every jaxpr a transformation produces.")
debug_nans = config.define(
    "debug_nans", False, "Raise an error when an operation produces a NaN.")
debug_infs = config.define(
    "debug_infs", False, "Raise an error when an operation produces an infinity.")
softmax_custom_jvp = config.define(
    "softmax_custom_jvp", False,
    "softmax differentiates through a custom JVP rule instead of treating its shift by the "
    "maximum as a stop_gradient constant.", affects_tracing=True)
threefry_partitionable = config.define(
    "threefry_partitionable", True,
    "Random bits from threefry are generated so that any slice of them can be computed on "
    "its own (JAX's default since 0.5); False gives the older stream.", affects_tracing=True)
enable_custom_prng = config.define(
    "enable_custom_prng", False,
    "random.PRNGKey returns typed key arrays (as random.key does) instead of raw uint32 "
    "arrays.", affects_tracing=True)
legacy_prng_key = config.define(
    "legacy_prng_key", "allow",
    "What random functions do with a raw uint32 key: 'allow' it, 'warn', or 'error'.",
    affects_tracing=True, choices=("allow", "warn", "error"))
allow_f16_reductions = config.define(
    "allow_f16_reductions", True,
    "If False, summing float16 or bfloat16 values (reduce_sum) raises instead of "
    "accumulating in 16 bits.", affects_tracing=True)
jax2tf_associative_scan_reductions = config.define(
    "jax2tf_associative_scan_reductions", False,
    "How jax2tf lowers cumulative reductions in JAX. Only a TensorFlow export reads it, and "
    "lamella has none: accepted so configurations written for JAX load, changes nothing.")
compilation_cache_dir = config.define(
    "compilation_cache_dir",
    os.environ.get("LAMELLA_COMPILATION_CACHE_DIR") or os.environ.get("JAX_COMPILATION_CACHE_DIR"),
    "Directory of the persistent compilation cache (None: no cache). Compiled programs are "
    "kept there across processes, keyed by program, compile options, jaxlib and device.")
compilation_cache_max_size = config.define(
    "compilation_cache_max_size", -1,
    "Most bytes the persistent compilation cache may hold (-1: no bound); past it the least "
    "recently used entries are removed.")
persistent_cache_min_compile_time_secs = config.define(
    "persistent_cache_min_compile_time_secs", 1.0,
    "Only programs that took at least this long to compile are written to the persistent "
    "compilation cache.")
persistent_cache_min_entry_size_bytes = config.define(
    "persistent_cache_min_entry_size_bytes", 0,
    "Only compiled programs of at least this many bytes are written to the persistent "
    "compilation cache.")
_GUARDS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
transfer_guard_host_to_device = config.define(
    "transfer_guard_host_to_device", "allow",
    "What to do on a host-to-device transfer: 'allow', 'log' or 'disallow' implicit ones "
    "('_explicit' variants: every one).", choices=_GUARDS)
transfer_guard_device_to_host = config.define(
    "transfer_guard_device_to_host", "allow",
    "What to do on a device-to-host transfer (see transfer_guard_host_to_device).",
    choices=_GUARDS)
transfer_guard_device_to_device = config.define(
    "transfer_guard_device_to_device", "allow",
    "What to do on a device-to-device transfer (see transfer_guard_host_to_device).",
    choices=_GUARDS)


_user_contexts = 0


def make_user_context(default_value: Any = None) -> Callable[..., Any]:
    """A context whose value joins every jit cache key: entering it with a new value makes
    jitted functions trace and compile again (as JAX's `jax.make_user_context`).

    >>> mode = make_user_context(default_value="train")
    >>> with mode("eval"):
    ...     pass
    """
    global _user_contexts
    _user_contexts += 1
    return config.define(f"user_context_{_user_contexts}", default_value,
                         "A user context (make_user_context).", affects_tracing=True)


def checking_leaks() -> contextlib.AbstractContextManager[None]:
    """Context manager: `check_tracer_leaks` on in this thread inside the block."""
    return check_tracer_leaks(True)


@contextlib.contextmanager
def transfer_guard(new_val: str) -> Iterator[None]:
    """Context manager: all three transfer guards set to `new_val` in this thread.

    >>> with transfer_guard("log"):
    ...     config.read("transfer_guard_device_to_host")
    'log'
    """
    with transfer_guard_host_to_device(new_val), transfer_guard_device_to_host(new_val), \
            transfer_guard_device_to_device(new_val):
        yield


def disable_jit(disable: bool = True) -> contextlib.AbstractContextManager[None]:
    """Context manager that makes `jit` run functions eagerly, op by op.

    >>> with disable_jit():
    ...     config.read("disable_jit")
    True
    """
    return _disable_jit(disable)
