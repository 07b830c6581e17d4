"""A traced Pallas kernel as a Triton module: `lower_kernel`.

The kernel jaxpr that `pallas_call` traced (program ids, then refs; the same
jaxpr the CPU path discharges) becomes one `tt.func` taking a `!tt.ptr<T>` per
input and output operand. The grid becomes Triton's launch grid: up to three
axes map to `tt.get_program_id x/y/z` (an axis of size 1 is the constant 0);
more axes, or y/z axes beyond CUDA's 65535, are folded into x and recovered by
division. Each operand's block start is an affine function of the program ids
read off the block spec's table (or, for index maps that are not affine, the
index map's own jaxpr lowered with the same rules). The body is lowered by the
rules of `rule_table.triton_rules`.

>>> import numpy as np
>>> import lamella.core as lc
>>> import lamella.pallas as pl
>>> def add_kernel(x_ref, y_ref, o_ref):
...     o_ref[...] = x_ref[...] + y_ref[...]
>>> x = np.ones(16, np.float32)
>>> f = lambda x, y: pl.pallas_call(add_kernel, out_shape=lc.ShapeDtypeStruct((16,), np.float32),
...     grid=(2,), in_specs=[pl.BlockSpec((8,), lambda i: (i,))] * 2,
...     out_specs=pl.BlockSpec((8,), lambda i: (i,)))(x, y)
>>> [kernel] = kernels_of(f, x, x)
>>> kernel.grid, kernel.verify()
((2, 1, 1), True)
>>> print(kernel.asm().count("tt.load"), kernel.asm().count("tt.store"))
2 1
"""

from __future__ import annotations

import dataclasses
import io
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import arith
from jaxlib.triton import dialect as tt

import lamella.core as lc
from lamella.core import ClosedJaxpr
from lamella.pallas.specs import BlockMapping
from lamella.pallas.triton import control_flow, elementwise, structural  # noqa: F401 (rules)
from lamella.pallas.triton.builder import cast, constant, element_type, new_context
from lamella.pallas.triton.memory import KernelRef, storage_dtype
from lamella.pallas.triton.rule_table import KernelContext, TritonLoweringError, lower_jaxpr

__all__ = ["TritonKernel", "kernels_of", "lower_kernel"]

CUDA_YZ_LIMIT = 65535


@dataclasses.dataclass
class TritonKernel:
    """A lowered kernel: its Triton module, entry point name and launch grid (x, y, z)."""

    name: str
    module: ir.Module
    grid: tuple[int, int, int]

    def asm(self) -> str:
        """The module as MLIR text."""
        with self.module.context:
            return str(self.module)

    def verify(self) -> bool:
        """Runs the MLIR verifier (Triton's op verifiers included); raises on failure."""
        with self.module.context:
            return self.module.operation.verify()

    def bytecode(self) -> bytes:
        """The module as MLIR bytecode (what the custom call carries)."""
        buf = io.BytesIO()
        with self.module.context:
            self.module.operation.write_bytecode(buf)
        return buf.getvalue()


def sanitize(name: str) -> str:
    """A kernel name usable as a PTX symbol."""
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name) or "kernel"
    return out if not out[0].isdigit() else "_" + out


# ---------------------------------------------------------------------------
# The launch grid.


def launch_grid(grid: Sequence[int]) -> tuple[tuple[int, int, int], int]:
    """Triton's (x, y, z) grid for a Pallas grid, and how many leading Pallas axes
    are folded into x."""
    grid = list(grid)
    if not grid:
        return (1, 1, 1), 0
    folded = max(1, len(grid) - 2)
    while folded < len(grid) and any(n > CUDA_YZ_LIMIT for n in grid[folded:]):
        folded += 1
    launch = [math.prod(grid[:folded]), *grid[folded:]]
    if launch[0] >= 2 ** 31:
        raise ValueError(f"The grid {tuple(grid)} has too many programs for a GPU launch")
    return tuple(launch + [1] * (3 - len(launch))), folded


def program_ids(grid: Sequence[int]) -> tuple[tuple[int, int, int], list[ir.Value]]:
    """The launch grid and an i32 program id per Pallas grid axis."""
    launch, folded = launch_grid(grid)

    def pid(axis: int) -> ir.Value:
        return constant(0, np.int32) if launch[axis] == 1 else tt.get_program_id(axis)
    if not grid:
        return launch, []
    ids: list[ir.Value] = []
    x = pid(0)
    for n in reversed(grid[:folded]):
        if folded == 1:
            ids.append(x)
            break
        n_value = constant(n, np.int32)
        ids.append(arith.remsi(x, n_value) if n > 1 else constant(0, np.int32))
        x = arith.divsi(x, n_value)
    ids.reverse()
    ids += [pid(1 + k) for k in range(len(grid) - folded)]
    return launch, ids


# ---------------------------------------------------------------------------
# Block starts.


def _affine(table: np.ndarray, grid: tuple[int, ...]) -> tuple[int, list[int]] | None:
    """(c0, [c_a]) with table == c0 + sum_a c_a * pid_a at every grid point, or None."""
    origin = (0,) * len(grid)
    c0 = int(table[origin])
    coeffs = []
    for a, n in enumerate(grid):
        step = tuple(1 if k == a else 0 for k in range(len(grid)))
        coeffs.append(int(table[step]) - c0 if n > 1 else 0)
    coords = np.meshgrid(*(np.arange(n) for n in grid), indexing="ij")
    fit = c0 + sum((c * x for c, x in zip(coeffs, coords)), np.zeros(grid, np.int64))
    return (c0, coeffs) if np.array_equal(fit, table) else None


def _affine_start(c0: int, coeffs: Sequence[int], pids: Sequence[ir.Value]) -> Any:
    start: Any = c0
    for c, p in zip(coeffs, pids):
        if c == 0:
            continue
        term = p if c == 1 else arith.muli(p, constant(c, np.int32))
        start = term if start == 0 else arith.addi(
            start if isinstance(start, ir.Value) else constant(start, np.int32), term)
    return start


def _traced_starts(m: BlockMapping, kernel: KernelContext) -> list[Any]:
    """Block starts from the index map's jaxpr (for maps that are not affine)."""
    pid = lc.ShapeDtypeStruct((), np.int32)
    closed = lc.make_jaxpr(m.index_map)(*[pid] * len(kernel.grid))
    outs = lower_jaxpr(kernel, closed.jaxpr, closed.consts, kernel.program_ids)
    starts = []
    for d, (value, aval) in enumerate(zip(outs, closed.out_avals)):
        value = cast(value, aval.dtype, np.int32)
        if not m.element[d] and m.block_shape[d] != 1:
            value = arith.muli(value, constant(m.block_shape[d], np.int32))
        starts.append(value)
    return starts


def block_starts(m: BlockMapping, kernel: KernelContext) -> list[Any]:
    """The element start of this program's block in each dimension of the operand
    (not the padded one), as ints or i32 values."""
    grid = kernel.grid
    fits = [_affine(m.starts[..., d], grid) for d in range(len(m.array_shape))]
    if all(f is not None for f in fits):
        raw = [_affine_start(c0, coeffs, kernel.program_ids) for c0, coeffs in fits]
    else:
        raw = _traced_starts(m, kernel)
    starts = []
    for value, (lo, _) in zip(raw, m.padding):
        if lo and isinstance(value, ir.Value):
            value = arith.subi(value, constant(lo, np.int32))
        elif lo:
            value -= lo
        starts.append(value)
    return starts


def _kernel_ref(ptr: ir.Value, m: BlockMapping, kernel: KernelContext) -> KernelRef:
    probe = KernelRef(ptr, m.dtype, m.array_shape, (), (), ())
    starts = tuple(cast(s, np.int32, probe.offset_dtype) if isinstance(s, ir.Value) else s
                   for s in block_starts(m, kernel))
    return KernelRef(ptr, np.dtype(m.dtype), tuple(m.array_shape), starts,
                     tuple(d for d, sq in enumerate(m.squeezed) if not sq),
                     tuple(p != (0, 0) for p in m.padding))


# ---------------------------------------------------------------------------
# The module.


def lower_kernel(*, kernel: ClosedJaxpr, grid: tuple[int, ...],
                 in_mappings: Sequence[BlockMapping], out_mappings: Sequence[BlockMapping],
                 scratch_avals: Sequence[Any] = (), name: str = "kernel",
                 **_: Any) -> TritonKernel:
    """The Triton module of a kernel, from `pallas_call_p`'s parameters."""
    name = sanitize(name)
    if scratch_avals:
        raise TritonLoweringError(
            f"Kernel {name!r}: scratch buffers (scratch_shapes) have no Triton lowering, as "
            "in JAX's Triton backend; keep the values in registers (loop carries) instead")
    mappings = [*in_mappings, *out_mappings]
    with new_context(), ir.Location.unknown():
        module = ir.Module.create()
        module.operation.attributes["sym_name"] = ir.StringAttr.get(name)
        arg_types = [tt.PointerType.get(element_type(storage_dtype(m.dtype)), 1)
                     for m in mappings]
        fn_type = ir.FunctionType.get(arg_types, [])
        with ir.InsertionPoint(module.body):
            fn = tt.FuncOp(name, ir.TypeAttr.get(fn_type), sym_visibility="public")
        i32 = ir.IntegerType.get_signless(32)
        fn.arg_attrs = ir.ArrayAttr.get(
            [ir.DictAttr.get({"tt.divisibility": ir.IntegerAttr.get(i32, 16)})] * len(arg_types))
        entry = fn.body.blocks.append(*arg_types)
        with ir.InsertionPoint(entry):
            launch, pids = program_ids(grid)
            context = KernelContext(name, pids, tuple(grid))
            refs = [_kernel_ref(p, m, context) for p, m in zip(entry.arguments, mappings)]
            lower_jaxpr(context, kernel.jaxpr, kernel.consts, [*pids, *refs])
            tt.return_([])
    return TritonKernel(name, module, launch)


def kernels_of(fun: Callable[..., Any], *args: Any) -> list[TritonKernel]:
    """The Triton kernels of every `pallas_call` that `fun(*args)` makes (traced, not
    run), in program order: to inspect what a GPU would run."""
    from lamella.pallas.pallas_call import pallas_call_p

    closed = lc.make_jaxpr(fun)(*args)
    found: list[TritonKernel] = []

    def walk(jaxpr) -> None:
        for eqn in jaxpr.eqns:
            if eqn.primitive is pallas_call_p:
                found.append(lower_kernel(**eqn.params))
                continue
            for value in eqn.params.values():
                for sub in value if isinstance(value, tuple) else (value,):
                    if isinstance(sub, ClosedJaxpr):
                        walk(sub.jaxpr)
    walk(closed.jaxpr)
    return found
