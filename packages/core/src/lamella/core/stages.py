"""The ahead-of-time stages of a jitted function, as JAX's `jax.stages`.

`jit(f).trace(*args)` gives a `Traced` (the jaxpr and output types),
`.lower()` a `Lowered` (the program in the executor's language: StableHLO
with lamella.lax), `.compile()` a `Compiled` (callable on arguments of the
traced types only). Arguments may be arrays or `ShapeDtypeStruct`s.

>>> import numpy as np
>>> from lamella.core import jit
>>> from lamella.core.structural import reduce_sum
>>> traced = jit(lambda x: reduce_sum(x, (0,))).trace(np.ones(3, np.float32))
>>> traced.out_info
ShapeDtypeStruct(shape=(), dtype=float32)
>>> traced.lower().compile()(np.ones(3, np.float32))
np.float32(3.0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from lamella.core.avals import ShapedArray, ShapeDtypeStruct
from lamella.core.jaxpr import ClosedJaxpr
from lamella.core.trace import aval_of
from lamella.core.tree_util import PyTreeDef, tree_flatten, tree_map, tree_unflatten

CompilerOptions = dict[str, str | bool]
"""Options passed to the compiler, e.g. XLA's `{"xla_cpu_enable_fast_math": True}`."""


class ArgInfo:
    """What a stage knows of one argument: its abstract value and whether it is donated."""

    __slots__ = ("_aval", "donated")

    def __init__(self, _aval: ShapedArray, donated: bool):
        self._aval = _aval
        self.donated = donated

    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)

    def __repr__(self) -> str:
        return f"ArgInfo(_aval={self._aval!r}, donated={self.donated})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ArgInfo) and self._aval == other._aval
                and self.donated == other.donated)

    def __hash__(self) -> int:
        return hash((self._aval, self.donated))


class Wrapped(Protocol):
    """What `jit` returns: callable, with the AOT entry points."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

    def trace(self, *args: Any, **kwargs: Any) -> Traced: ...

    def lower(self, *args: Any, **kwargs: Any) -> Lowered: ...


class _Signature:
    """The traced call's arguments and results, shared by the three stages."""

    def __init__(self, fun_name: str, closed: ClosedJaxpr, hoisted: list[Any], out_tree: PyTreeDef,
                 donated: tuple[bool, ...], dynamic: tuple[tuple, dict],
                 donate_argnums: tuple[int, ...]):
        self.fun_name = fun_name
        self.closed = closed
        self.hoisted = hoisted
        self.out_tree = out_tree
        self.donated = donated
        flat, self.in_tree = tree_flatten(dynamic)
        donated_args = donated[len(hoisted):]
        self.args_info = tree_unflatten(self.in_tree, [
            ArgInfo(aval_of(x), d)
            for x, d in zip(flat, donated_args)])
        self.in_avals = tree_map(lambda info: info._aval, self.args_info)
        self.donate_argnums = donate_argnums

    @property
    def out_avals(self) -> Any:
        return tree_unflatten(self.out_tree, self.closed.out_avals)

    @property
    def out_info(self) -> Any:
        return tree_unflatten(self.out_tree, [
            ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type,
                             sharding=getattr(a, "sharding", None))
            for a in self.closed.out_avals])


class _Stage:
    """Attributes every stage has: JAX's `args_info`, `in_avals`, `out_info`, ..."""

    _sig: _Signature

    args_info = property(lambda self: self._sig.args_info)
    in_avals = property(lambda self: self._sig.in_avals)
    in_tree = property(lambda self: self._sig.in_tree)
    out_info = property(lambda self: self._sig.out_info)
    out_tree = property(lambda self: self._sig.out_tree)
    donate_argnums = property(lambda self: self._sig.donate_argnums)
    fun_name = property(lambda self: self._sig.fun_name)


class Traced(_Stage):
    """A traced jit function: `.jaxpr`, `.out_info`, then `.lower()`."""

    def __init__(self, sig: _Signature, lower_with: Callable[..., Any]):
        self._sig = sig
        self._lower_with = lower_with

    jaxpr = property(lambda self: self._sig.closed)
    out_avals = property(lambda self: self._sig.out_avals)

    def lower(self, *, lowering_platforms: tuple[str, ...] | None = None) -> Lowered:
        """The program in the executor's language (StableHLO with lamella.lax)."""
        sig = self._sig
        program = self._lower_with(sig.closed, name=sig.fun_name, donated_invars=sig.donated)
        return Lowered(sig, program)


class Lowered(_Stage):
    """A lowered jit function: `.as_text()`, `.compiler_ir()`, `.compile()`."""

    def __init__(self, sig: _Signature, program: Any):
        self._sig = sig
        self._program = program

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """The program as text: 'stablehlo' (the default) or 'hlo'; `debug_info` adds
        source locations."""
        return self._program.as_text(dialect, debug_info=debug_info)

    def compiler_ir(self, dialect: str | None = None) -> Any:
        """The program as an object: an MLIR module ('stablehlo') or an XLA computation."""
        return self._program.compiler_ir(dialect)

    def compile(self, compiler_options: CompilerOptions | None = None, *,
                device_assignment: tuple[Any, ...] | None = None) -> Compiled:
        """Compiles the program; `compiler_options` go to the compiler (XLA flags)."""
        options = None if not compiler_options else tuple(sorted(compiler_options.items()))
        return Compiled(self._sig, self._program.compile(options))

    def cost_analysis(self) -> dict[str, float]:
        """The compiler's estimate of the program's cost ('flops', 'bytes accessed', ...)."""
        return self._program.cost_analysis()


class Compiled(_Stage):
    """A compiled jit function, callable on arguments of the traced types only.

    Static arguments were fixed when tracing: pass only the dynamic ones.
    """

    def __init__(self, sig: _Signature, executable: Any):
        self._sig = sig
        self._executable = executable

    def as_text(self) -> str:
        """The program as the compiler optimized it."""
        return self._executable.as_text()

    def cost_analysis(self) -> dict[str, float]:
        return self._executable.cost_analysis()

    def memory_analysis(self) -> Any:
        """Sizes of the program's arguments, outputs, temporaries and code."""
        return self._executable.memory_analysis()

    def runtime_executable(self) -> Any:
        """The executor's own executable object (jaxlib's LoadedExecutable with lax)."""
        return self._executable.runtime_executable()

    input_shardings = property(lambda self: tree_map(lambda _: self._executable.sharding,
                                                      self._sig.args_info))
    output_shardings = property(lambda self: tree_map(lambda _: self._executable.sharding,
                                                       self._sig.out_info))
    input_formats = property(lambda self: tree_map(lambda _: None, self._sig.args_info))
    output_formats = property(lambda self: tree_map(lambda _: None, self._sig.out_info))

    def call(self, *args: Any, **kwargs: Any) -> Any:
        return self(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        sig = self._sig
        flat, in_tree = tree_flatten((args, kwargs))
        expected = sig.closed.in_avals[len(sig.hoisted):]
        problems = []
        if in_tree != sig.in_tree:
            problems.append(f"expected {len(expected)} array arguments with structure "
                            f"{sig.in_tree}, got {len(flat)} with structure {in_tree}")
        else:
            for i, (x, want) in enumerate(zip(flat, expected)):
                got = aval_of(x)
                if got.shape != want.shape or got.dtype != want.dtype:
                    problems.append(f"argument {i}: expected {want.str_short()}, "
                                    f"got {got.str_short()}")
        if problems:
            raise TypeError(f"Compiled {sig.fun_name} called with arguments that differ from "
                            "those it was compiled for:\n  " + "\n  ".join(problems))
        outs = self._executable(*sig.hoisted, *flat)
        return tree_unflatten(sig.out_tree, outs)

