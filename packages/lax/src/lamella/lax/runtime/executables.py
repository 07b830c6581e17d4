"""Compiling StableHLO for one device into an `Executable`, with donation.

>>> from lamella.lax.mlir_context import parse_module
>>> exe = compile(parse_module(
...     "func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {"
...     " %0 = stablehlo.add %x, %x : tensor<2xf32> return %0 : tensor<2xf32> }"))
>>> exe(np.array([1.0, 2.0], np.float32))
[Array([2., 4.], dtype=float32)]
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from jaxlib import _jax
from jaxlib import xla_client as xc

from lamella.lax import mlir_context
from lamella.lax.mlir_context import ir
from lamella.lax.runtime.arrays import (
    Array,
    DeletedArrayError,
    copy_to_device,
    deleted_message,
    device_put,
)
from lamella.lax.runtime.backends import (
    Device,
    Shape,
    XlaRuntimeError,
    check_bytes,
    check_fits,
    default_device,
    describe,
    make_aval,
    memory_limit,
    sharding_for,
)
from lamella.lax.runtime.compilation_cache import PersistentCache

# ----------------------------------------------------------------------------
# Compilation and execution.


class Executable:
    """A StableHLO program compiled and loaded on one device.

    Call it with one argument per parameter of ``@main`` (Arrays, NumPy values
    or scalars); it returns the list of output Arrays. Calls are asynchronous
    and may come from several threads at once.

    Attributes: ``xla_executable`` (jaxlib's LoadedExecutable), ``device``,
    ``in_avals``, ``out_avals``, ``donated_args`` (parameters whose buffers are
    reused for outputs), ``committed`` (whether outputs are committed).
    """

    __slots__ = (
        "xla_executable",
        "device",
        "name",
        "in_avals",
        "out_avals",
        "donated_args",
        "committed",
        "_sharding",
        "_in_specs",
        "_handlers",
        "calls_host",
    )

    def __init__(
        self,
        xla_executable: Any,
        device: Device,
        name: str,
        in_specs: list[tuple[Shape, np.dtype]],
        out_avals: list[Any],
        donated_args: tuple[int, ...],
        committed: bool,
        calls_host: bool = False,
    ):
        self.xla_executable = xla_executable
        self.calls_host = calls_host  # waited for to completion (see run_to_completion)
        self.device = device
        self.name = name
        self.in_avals = [make_aval(shape, dtype, False) for shape, dtype in in_specs]
        self.out_avals = out_avals
        self.donated_args = donated_args
        self.committed = committed
        self._sharding = sharding_for(device)
        self._in_specs = in_specs
        # Result handlers wrap raw output buffers into Arrays; built once here
        # so a call pays only for execute + consume.
        self._handlers = [
            _jax.array_result_handler(aval, self._sharding, committed=committed, _skip_checks=True)
            for aval in out_avals
        ]

    def __call__(self, *args: Any) -> list[Array]:
        specs = self._in_specs
        if len(args) != len(specs):
            raise TypeError(f"{self.name} takes {len(specs)} arguments, got {len(args)}")
        # The common case (Arrays made by this runtime for this device, of the
        # right type) is checked inline; anything else goes to _prepare. The
        # type check matters: XLA only checks byte sizes, so an int32[4]
        # passed for a float32[4] would be silently reinterpreted.
        sharding = self._sharding
        arrays = list(args)
        for i, a in enumerate(args):
            if type(a) is not Array or a._sharding is not sharding:
                arrays[i] = self._prepare(i, a)
            else:
                aval = a.aval
                if aval.shape != specs[i][0] or aval.dtype != specs[i][1]:
                    arrays[i] = self._prepare(i, a)
        try:
            if self.calls_host:
                return run_to_completion(self.xla_executable, arrays, self._handlers)
            return self.xla_executable.execute_sharded(arrays).consume_with_handlers(self._handlers)
        except XlaRuntimeError as err:
            # Checked only after a failure, so that healthy calls pay nothing.
            for a in arrays:
                if a.is_deleted():
                    raise DeletedArrayError(deleted_message(a)) from None
            if "RESOURCE_EXHAUSTED" in str(err):
                outs = ", ".join(describe(a.shape, a.dtype) for a in self.out_avals)
                raise MemoryError(f"{self.name} ran out of memory on {self.device} computing "
                                  f"({outs}): {err}") from None
            raise

    def _prepare(self, i: int, a: Any) -> Array:
        """Argument ``i`` as an Array on this executable's device, or a clear error."""
        shape, dtype = self._in_specs[i]
        if not isinstance(a, Array):
            a = device_put(a, self.device)
        elif a.is_deleted():
            raise DeletedArrayError(deleted_message(a))
        if (a.aval.shape, a.aval.dtype) != (shape, dtype):
            raise TypeError(
                f"argument {i} of {self.name}: expected {describe(shape, dtype)}, "
                f"got {describe(a.aval.shape, a.aval.dtype)}"
            )
        # jaxlib aborts the process when a buffer sits on the wrong device, so
        # this check must happen here.
        if a._sharding._internal_device_list != self._sharding._internal_device_list:
            if a._committed:
                raise ValueError(
                    f"argument {i} of {self.name} is committed to {sorted(a.devices(), key=str)}, "
                    f"but the program runs on {self.device}; device_put it there first"
                )
            a = copy_to_device(a, self.device)
        return a

    def as_text(self) -> str:
        """The optimized HLO of the program, as XLA compiled it."""
        return self.xla_executable.hlo_modules()[0].to_string()

    def cost_analysis(self) -> dict[str, float]:
        """XLA's cost estimate: 'flops', 'transcendentals', 'bytes accessed', ..."""
        return dict(self.xla_executable.cost_analysis())

    def __repr__(self) -> str:
        ins = ", ".join(describe(a.shape, a.dtype) for a in self.in_avals)
        outs = ", ".join(describe(a.shape, a.dtype) for a in self.out_avals)
        return f"Executable({self.name}: ({ins}) -> ({outs}) on {self.device})"


def _module_name(module: ir.Module) -> str:
    attributes = module.operation.attributes
    return ir.StringAttr(attributes["sym_name"]).value if "sym_name" in attributes else "main"


_ALIAS = "tf.aliasing_output"


def _alias_donated_args(
    module: ir.Module,
    donated_args: Iterable[int],
    in_specs: list[tuple[Shape, np.dtype]],
    out_specs: list[tuple[Shape, np.dtype]],
) -> tuple[int, ...]:
    """Mark each donated parameter of ``@main`` as aliasing an output of its type.

    XLA reuses a parameter's buffer for an output only when the two have the
    same shape and dtype. Each donated parameter is paired with the first free
    output of its type and marked ``tf.aliasing_output = <output index>``, the
    attribute XLA turns into input_output_alias. Donations without a match are
    dropped with a warning, as JAX does. Returns every aliased parameter,
    including those the module marked already.
    """
    main = mlir_context.main_function(module)
    with module.context, ir.Location.unknown():
        i32 = ir.IntegerType.get_signless(32)
        if "arg_attrs" in main.attributes:
            arg_attrs = [{a.name: a.attr for a in d} for d in map(ir.DictAttr, main.arg_attrs)]
        else:
            arg_attrs = [{} for _ in in_specs]
        taken = {ir.IntegerAttr(d[_ALIAS]).value for d in arg_attrs if _ALIAS in d}
        unusable = []
        for i in sorted(set(donated_args)):
            if not 0 <= i < len(in_specs):
                raise ValueError(f"donated argument {i} out of range: @main takes {len(in_specs)}")
            if _ALIAS in arg_attrs[i]:
                continue
            free = (j for j, spec in enumerate(out_specs) if spec == in_specs[i] and j not in taken)
            match = next(free, None)
            if match is None:
                unusable.append(describe(*in_specs[i]))
                continue
            taken.add(match)
            arg_attrs[i][_ALIAS] = ir.IntegerAttr.get(i32, match)
        if donated_args:
            main.arg_attrs = ir.ArrayAttr.get([ir.DictAttr.get(d) for d in arg_attrs])
    if unusable:
        message = f"Some donated buffers were not usable: {', '.join(unusable)}"
        warnings.warn(message, UserWarning, stacklevel=3)
    return tuple(i for i, d in enumerate(arg_attrs) if _ALIAS in d)


def _check_value_sizes(module: ir.Module, device: Device) -> None:
    """MemoryError if a value of the program can't fit in `device`'s memory.

    XLA aborts the process while compiling a program with a tensor of more than
    2**63 bytes, so every value's type is checked before compiling: each
    intermediate on its own, and the outputs, which must coexist, together.
    """
    name = _module_name(module)
    # 16 bytes bound every element type: only values that might not fit get a
    # precise check (reading each value's dtype would cost more than the walk).
    max_elements = memory_limit(device) // 16
    suspects: list[tuple[str, Any]] = []

    def visit(op: Any) -> Any:
        for result in op.results:
            tensor = result.type
            if isinstance(tensor, ir.RankedTensorType) and tensor.rank \
                    and tensor.has_static_shape and math.prod(tensor.shape) > max_elements:
                suspects.append((op.name, tensor))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op_name, tensor in suspects:
        check_fits(*mlir_context.shape_and_dtype(tensor), device, f"program {name!r}, {op_name}")
    _, out_specs = mlir_context.main_signature(module)
    total = sum(math.prod(shape) * dtype.itemsize for shape, dtype in out_specs)
    outs = ", ".join(describe(shape, dtype) for shape, dtype in out_specs)
    check_bytes(total, device, f"program {name!r}: storing its outputs ({outs})")


def compile(
    module: ir.Module,
    device: Device | None = None,
    *,
    donated_args: Sequence[int] = (),
    out_avals: Sequence[Any] | None = None,
    compiler_options: dict[str, Any] | None = None,
    host_callbacks: Sequence[Callable[..., Any]] = (),
    persistent_cache: PersistentCache | None = None,
) -> Executable:
    """Compile a StableHLO module (entry ``func.func public @main``) for one device.

    ``device=None`` runs it on the default device with uncommitted outputs; a
    named device commits them. ``donated_args`` lists parameters whose buffers
    may be reused for outputs of the same type: ``@main`` is annotated in place
    and, after a call, those input Arrays are deleted (a later use raises
    :class:`DeletedArrayError`). ``out_avals`` supplies the outputs' avals (for
    weak types); by default they are read from ``@main``'s result types.
    ``compiler_options`` are XLA options (``{"xla_cpu_enable_fast_math": True}``).
    ``host_callbacks`` are the Python callables the module's
    ``xla_ffi_python_cpu_callback`` custom calls name by index.
    ``persistent_cache`` loads the program from disk, or stores it there once
    compiled; programs that call Python back are never cached (their callables
    live only in this process).

    >>> from lamella.lax.mlir_context import parse_module
    >>> exe = compile(parse_module(
    ...     "func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {"
    ...     " %0 = stablehlo.add %x, %x : tensor<2xf32> return %0 : tensor<2xf32> }"))
    >>> exe(np.array([1.0, 2.0], np.float32))
    [Array([2., 4.], dtype=float32)]
    """
    target = default_device() if device is None else device
    in_specs, out_specs = mlir_context.main_signature(module)
    if out_avals is None:
        avals = [make_aval(shape, dtype, False) for shape, dtype in out_specs]
    else:
        avals = list(out_avals)
        given = [(tuple(a.shape), np.dtype(a.dtype)) for a in avals]
        if given != out_specs:
            raise ValueError(f"out_avals {given} do not match @main's results {out_specs}")
    _check_value_sizes(module, target)
    donated = _alias_donated_args(module, donated_args, in_specs, out_specs)
    # executable_devices alone does not place the program: without a device
    # assignment XLA assigns it to device 0 and rejects buffers from elsewhere.
    options = xc.CompileOptions()
    if compiler_options:
        options.env_option_overrides = [
            (str(k), v if isinstance(v, (bool, int, float)) else str(v))
            for k, v in compiler_options.items()]
    options.device_assignment = xc.DeviceAssignment.create(np.array([[target.id]], np.int32))
    devices = xc.DeviceList((target,))
    if persistent_cache is not None and not host_callbacks:
        loaded = persistent_cache.compile_and_load(target.client, module, devices, options,
                                                   target)
    else:
        loaded = target.client.compile_and_load(
            module, executable_devices=devices, compile_options=options,
            host_callbacks=list(host_callbacks),
        )
    return Executable(
        loaded, target, _module_name(module), in_specs, avals, donated, device is not None,
        calls_host=bool(host_callbacks),
    )


def run_to_completion(executable: Any, arrays: list, handlers: list) -> list:
    """Runs a program that calls Python back and waits until every device has finished
    it: its callbacks have all run when this returns, even where it has no results to
    wait for (a program of `io_callback`s only)."""
    results = executable.execute_sharded(arrays, with_tokens=True)
    done = results.consume_token()
    outs = results.consume_with_handlers(handlers)
    done.block_until_ready()
    return outs
