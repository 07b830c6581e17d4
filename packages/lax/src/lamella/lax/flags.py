"""lamella.core's configuration flags that jaxlib reads in C++, mirrored into jaxlib.

jaxlib's fast dispatch path and transfers consult its own copies of x64,
disable-jit and the transfer guards. Each is mirrored in the scope it was
set in: `config.update` sets jaxlib's process-wide value, a `with` override
sets the value of the overriding thread only, so one thread's
`enable_x64()` never changes what another thread computes.
"""

from __future__ import annotations

import threading
from typing import Any

from jaxlib import _jax

from lamella.core import sharding
from lamella.core import trace as core_trace
from lamella.core.config import NO_OVERRIDE, config
from lamella.lax import runtime

_GUARD_LEVELS = {
    "allow": _jax.guard_lib.TransferGuardLevel.ALLOW,
    "log": _jax.guard_lib.TransferGuardLevel.LOG,
    "disallow": _jax.guard_lib.TransferGuardLevel.DISALLOW,
    "log_explicit": _jax.guard_lib.TransferGuardLevel.LOG_EXPLICIT,
    "disallow_explicit": _jax.guard_lib.TransferGuardLevel.DISALLOW_EXPLICIT,
}


def _x64(value: Any, local: bool) -> None:
    if local:
        runtime.set_x64_in_thread(None if value is NO_OVERRIDE else value)
    else:
        runtime.set_x64(value)


def _disable_jit(value: Any, local: bool) -> None:
    if local:
        runtime.set_disable_jit_in_thread(None if value is NO_OVERRIDE else value)
    else:
        runtime.set_disable_jit(value)


def _transfer_guard(direction: str):
    def mirror(value: Any, local: bool) -> None:
        state = _jax.guard_lib.thread_local_state() if local else _jax.guard_lib.global_state()
        setattr(state, direction, None if value is NO_OVERRIDE else _GUARD_LEVELS[value])
    return mirror


_cpu_devices_set = [-1]


def _num_cpu_devices(value: Any, local: bool) -> None:
    if local:
        raise RuntimeError("num_cpu_devices is process-wide: set it with config.update (or "
                           "LAMELLA_NUM_CPU_DEVICES) before the first computation, not in a "
                           "`with` block")
    try:
        runtime.set_num_cpu_devices(value)
    except (RuntimeError, ValueError):
        config.update("num_cpu_devices", _cpu_devices_set[0])  # the flag keeps telling the truth
        raise
    _cpu_devices_set[0] = value


# Flags jaxlib keeps copies of itself (the observers above): their overrides are
# already in its cache key or checks.
_NATIVE = frozenset({"enable_x64", "disable_jit", "transfer_guard_host_to_device",
                     "transfer_guard_device_to_host", "transfer_guard_device_to_device"})


class _TraceContext(threading.local):
    """What this thread's jit cache key must tell apart besides x64: whether it is
    tracing (a jit call then stages into the trace instead of running a program), and
    its overrides of every other flag (a program traced under `numpy_rank_promotion`
    or `debug_nans` set in a `with` block is another program)."""

    def __init__(self) -> None:
        self.tracing = False
        self.overrides: tuple = ()
        self.mesh = None  # this thread's `with mesh:` (set_mesh clears the caches instead)

    def publish(self) -> None:
        runtime.set_trace_context_in_thread(
            (self.tracing, self.overrides, self.mesh)
            if self.tracing or self.overrides or self.mesh is not None else None)


_context = _TraceContext()


def _hashable(value: Any) -> Any:
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _top_level_changed(at_top_level: bool) -> None:
    _context.tracing = not at_top_level
    _context.publish()


def _overrides_changed(local: dict[str, Any]) -> None:
    _context.overrides = tuple(sorted((name, _hashable(value)) for name, value in local.items()
                                      if name not in _NATIVE))
    _context.publish()


def _mesh_changed(local: bool) -> None:
    if local:
        _context.mesh = sharding.thread_mesh()
        _context.publish()
    else:
        runtime.clear_fast_path_caches()


def _forget_compiled_calls(value: Any, local: bool) -> None:
    # A process-wide change of a flag that shapes tracing must retrace: the C++ cache
    # keys on this thread's overrides only, so its entries go (lamella's trace cache
    # keys on every value).
    if not local:
        runtime.clear_fast_path_caches()


def mirror_config_in_jaxlib() -> None:
    """Registers the observers (once, when lamella.lax loads)."""
    core_trace.observe_top_level(_top_level_changed)
    config.observe_overrides(_overrides_changed)
    sharding.observe_mesh(_mesh_changed)
    for name in config._traced:
        if name not in _NATIVE:
            config.observe(name, _forget_compiled_calls)
    config.observe("enable_x64", _x64)
    config.observe("disable_jit", _disable_jit)
    config.observe("num_cpu_devices", _num_cpu_devices)
    _num_cpu_devices(config.read("num_cpu_devices"), False)
    for direction in ("host_to_device", "device_to_host", "device_to_device"):
        name = f"transfer_guard_{direction}"
        config.observe(name, _transfer_guard(direction))
        _transfer_guard(direction)(config.read(name), False)
