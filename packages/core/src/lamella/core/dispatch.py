"""Executors: what runs primitives and jaxprs on concrete values.

Core's one seam to a backend. Eager evaluation of a primitive (`apply`), a
top-level `jit` call (`execute`), the AOT stages (`lower`) and devices all go
through the registered executor. Core registers `InterpreterExecutor`, which
evaluates jaxprs with each primitive's NumPy `impl`, so everything works with
no compiler; lamella.lax registers its XLA executor on import.

>>> current_executor().name in ("interpreter", "xla")
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lamella.core.avals import ShapedArray, get_aval
from lamella.core.jaxpr import ClosedJaxpr, eval_jaxpr


class HostDevice:
    """The NumPy interpreter's one device: the host's memory and CPU."""

    id = 0
    platform = "cpu"
    device_kind = "host (NumPy interpreter)"
    process_index = 0
    host_id = 0

    def __repr__(self) -> str:
        return "HostDevice(id=0)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HostDevice)

    def __hash__(self) -> int:
        return hash(HostDevice)


class Executor:
    """The interface core uses to run things; subclass it to plug in a backend.

    `execute` and `lower` must be implemented; the other methods default to an
    executor whose arrays are NumPy arrays on the host.
    """

    name = "executor"

    def apply(self, primitive: Any, args: Sequence[Any], params: dict[str, Any]) -> Any:
        """Evaluates one primitive on concrete values (eager mode): by default, its impl."""
        impl = primitive.impl
        if impl is None:
            raise NotImplementedError(
                f"Evaluation rule (impl) for primitive '{primitive.name}' not implemented "
                f"for the {self.name} executor: define it with "
                f"{primitive.name}_p.def_impl(...).")
        return impl(*args, **params)

    def execute(self, closed: ClosedJaxpr, args: Sequence[Any], *, name: str,
                donated_invars: tuple[bool, ...],
                compiler_options: tuple[tuple[str, Any], ...] | None = None) -> list[Any]:
        """Runs a closed jaxpr on concrete arguments (a top-level `jit` call)."""
        raise NotImplementedError(f"{type(self).__name__} must implement execute")

    def lower(self, closed: ClosedJaxpr, *, name: str, donated_invars: tuple[bool, ...],
              compiler_options: tuple[tuple[str, Any], ...] | None = None) -> Any:
        """The program for `jit(f).lower(...)`: it has `as_text()`, `compile()` and
        `cost_analysis()`; what `compile()` returns is callable on flat arguments."""
        raise NotImplementedError(f"{type(self).__name__} must implement lower")

    def fast_dispatch(self, jit_function: Any,
                      inline_when: Callable[[tuple, dict], bool] | None = None
                      ) -> Callable[..., Any]:
        """The callable a jit function calls through; by default its Python path.

        A backend may return something faster (lamella.lax serves repeated calls
        from C++) that falls back on `jit_function.call_and_report`. With
        `inline_when(args, kwargs)` given, a call it accepts runs the function
        itself instead, uncompiled."""
        if inline_when is None:
            return jit_function.call_python

        def call(*args, **kwargs):
            if inline_when(args, kwargs):
                return jit_function.fun(*args, **kwargs)
            return jit_function.call_python(*args, **kwargs)
        return call

    def wrap_jit(self, jit_function: Any) -> Any:
        """The object `jit` returns for `jit_function` (by default, itself)."""
        return jit_function

    def devices(self, backend: str | None = None) -> list[Any]:
        """The devices of `backend` (default: the default backend)."""
        if backend not in (None, "cpu"):
            raise RuntimeError(f"Backend {backend!r} is not available: the {self.name} "
                               "executor runs on the host's CPU only.")
        return [HostDevice()]

    def default_backend(self) -> str:
        return "cpu"

    def process_index(self) -> int:
        """This process's number among the program's processes (0: there is one)."""
        return 0

    def assemble(self, shape: tuple[int, ...], sharding: Any, arrays: list[Any]) -> Any:
        """One array of `shape` from each device's part, laid out as `sharding` says (on
        the host's one device: the parts put together)."""
        out = None
        for index, part in zip(sharding.devices_indices_map(shape).values(), arrays):
            part = np.asarray(part)
            if out is None:
                out = np.empty(shape, part.dtype)
            out[index] = part
        return out

    def device_put(self, x: Any, device: Any = None, *, donate: bool = False,
                   may_alias: bool | None = None) -> Any:
        dtype = get_aval(x).dtype
        if isinstance(x, (np.ndarray, np.generic)) and x.dtype == dtype:
            return x
        return np.asarray(x, dtype)

    def device_get(self, x: Any) -> Any:
        return np.asarray(x)

    def from_dlpack(self, x: Any, device: Any = None, copy: bool | None = None) -> Any:
        """An array of this executor holding the DLPack producer `x`'s data (shared
        unless `copy` is True or a copy is needed)."""
        host = np.from_dlpack(x, copy=copy)
        return self.device_put(host, device)

    def copy_to_host_async(self, x: Any) -> None:
        """Starts a device-to-host copy of array `x` (NumPy arrays are on the host)."""

    def live_arrays(self, platform: str | None = None) -> list[Any]:
        raise RuntimeError(
            f"live_arrays needs a runtime that owns device memory; the {self.name} executor "
            "computes with NumPy arrays that Python's garbage collector owns. Install and "
            "import lamella-lax (`import lamella.lax`) for XLA's runtime.")

    def clear_caches(self) -> None:
        """Forgets every compiled program the executor holds."""


class InterpreterExecutor(Executor):
    """Evaluates jaxprs equation by equation with each primitive's NumPy `impl`.

    Donation is accepted and ignored: NumPy buffers are not reused.
    """

    name = "interpreter"

    def execute(self, closed, args, *, name, donated_invars, compiler_options=None):
        return interpret(closed, args)

    def lower(self, closed, *, name, donated_invars, compiler_options=None):
        return InterpretedProgram(closed, name)


class InterpretedProgram:
    """The interpreter's "lowered" and "compiled" form: the jaxpr itself."""

    sharding = HostDevice()

    def __init__(self, closed: ClosedJaxpr, name: str):
        self.closed = closed
        self.name = name

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        if dialect not in (None, "jaxpr"):
            raise ValueError(f"The interpreter executor runs jaxprs and has no {dialect!r} form: "
                             "install and import lamella-lax for StableHLO and HLO.")
        return str(self.closed)

    def compiler_ir(self, dialect: str | None = None) -> ClosedJaxpr:
        self.as_text(dialect)
        return self.closed

    def compile(self, compiler_options: Any = None) -> InterpretedProgram:
        return self

    def cost_analysis(self) -> dict[str, float]:
        """Equation count and the bytes each equation reads and writes."""
        eqns = self.closed.jaxpr.eqns
        accessed = sum(v.aval.size * v.aval.dtype.itemsize
                       for e in eqns for v in [*e.invars, *e.outvars])
        return {"equations": float(len(eqns)), "bytes accessed": float(accessed)}

    def memory_analysis(self) -> dict[str, int]:
        """Bytes of the arguments and outputs (the interpreter keeps no other buffers)."""
        def size(avals):
            return sum(a.size * a.dtype.itemsize for a in avals)
        return {"argument_size_in_bytes": size(self.closed.in_avals),
                "output_size_in_bytes": size(self.closed.out_avals)}

    def runtime_executable(self) -> ClosedJaxpr:
        return self.closed

    def __call__(self, *flat_args):
        return interpret(self.closed, flat_args)


def interpret(closed: ClosedJaxpr, args: Sequence[Any]) -> list[Any]:
    """Evaluates `closed` on values of the types its jaxpr declares, returning those types.

    NumPy computes Python scalars and float64 scalars in 64 bits; the jaxpr says
    they are f32 (without x64), as a compiled executor would treat them.
    """
    args = [_as_declared(x, aval) for x, aval in zip(args, closed.in_avals)]
    outs = eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return [_as_declared(x, aval) for x, aval in zip(outs, closed.out_avals)]


def _as_declared(x: Any, aval: ShapedArray) -> Any:
    return x if getattr(x, "dtype", None) == aval.dtype else np.asarray(x, aval.dtype)


class _Registry:
    """The executor in use, and how many times one was registered (jit functions
    re-pick their dispatcher when the count moves)."""

    def __init__(self) -> None:
        self.executor: Executor = InterpreterExecutor()
        self.generation = 0


_registry = _Registry()


def register_executor(executor: Executor) -> Executor:
    """Makes `executor` run every eager primitive and top-level jit call; returns the
    previous one (register it again to restore it).

    >>> previous = register_executor(InterpreterExecutor())
    >>> _ = register_executor(previous)
    """
    if not isinstance(executor, Executor):
        raise TypeError(f"register_executor takes an Executor (lamella.core.dispatch."
                        f"Executor subclass), got {type(executor).__name__}")
    previous = _registry.executor
    _registry.executor = executor
    _registry.generation += 1
    return previous


def current_executor() -> Executor:
    """The executor that runs eager primitives and top-level jit calls now."""
    return _registry.executor


def executor_generation() -> int:
    """Counts executor registrations; a change means dispatchers must be re-picked."""
    return _registry.generation
