"""Refs on the GPU: pointers with a block layout, and the rules that read and
write through them (`get`, `swap`, `addupdate`, masked `load`/`store`, atomics).

A kernel's ref is a `KernelRef`: the operand's base pointer (`!tt.ptr<T>`),
its row-major array shape, and the element start of this program's block in
every array dimension. An access `ref[specs]` becomes a tensor of pointers:
`base + sum_d (start_d + index_d) * stride_d`, the scalar part added with one
`tt.addptr`, the per-lane part built from `tt.make_range` along each sliced
dimension, `tt.expand_dims`/`tt.broadcast` to the window's shape and a second
`tt.addptr`. Blocks that can overhang the array (ragged edges, `pl.Element`
padding) get a bounds mask, so their lanes outside the array are neither read
(they read 0, the CPU executor's padding) nor written.

>>> from lamella.core.state import get_p, swap_p
>>> from lamella.pallas.triton.rule_table import triton_rules
>>> get_p in triton_rules and swap_p in triton_rules
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import arith
from jaxlib.triton import dialect as tt

from lamella.core.state import addupdate_p, get_p, swap_p
from lamella.pallas.language import atomic_cas_p, atomic_rmw_p, masked_load_p, masked_store_p
from lamella.pallas.triton.builder import (
    broadcast_to,
    cast,
    constant,
    element_type,
    full,
    is_float,
    is_signed,
    make_range,
    shape_of,
)
from lamella.pallas.triton.rule_table import RuleContext, register

__all__ = ["KernelRef", "storage_dtype"]


def storage_dtype(dtype: Any) -> np.dtype:
    """How a dtype is stored in GPU memory: bools as bytes."""
    dtype = np.dtype(dtype)
    return np.dtype(np.int8) if dtype == np.bool_ else dtype


@dataclasses.dataclass(frozen=True)
class KernelRef:
    """A kernel's view of an operand: `ptr` to element 0 of the array of
    `array_shape`, the block's element `starts` (ints or i32 values) per array
    dimension, which dimensions the kernel sees (`visible`), and which may
    overhang the array (`may_overhang`)."""

    ptr: ir.Value
    dtype: np.dtype
    array_shape: tuple[int, ...]
    starts: tuple[Any, ...]
    visible: tuple[int, ...]
    may_overhang: tuple[bool, ...]

    @property
    def offset_dtype(self) -> np.dtype:
        size = int(np.prod(self.array_shape, dtype=np.int64))
        return np.dtype(np.int64 if size >= 2 ** 31 else np.int32)


def _as_value(x: Any, dtype: np.dtype, src: Any = None) -> ir.Value:
    if isinstance(x, ir.Value):
        return cast(x, src if src is not None else dtype, dtype)
    return constant(int(x), dtype)


def _add(x: Any, y: Any, dtype: np.dtype) -> Any:
    if not isinstance(x, ir.Value) and not isinstance(y, ir.Value):
        return int(x) + int(y)
    if not isinstance(y, ir.Value) and int(y) == 0:
        return x
    if not isinstance(x, ir.Value) and int(x) == 0:
        return y
    return arith.addi(_as_value(x, dtype), _as_value(y, dtype))


def _mul(x: Any, k: int, dtype: np.dtype) -> Any:
    if not isinstance(x, ir.Value):
        return int(x) * k
    return x if k == 1 else arith.muli(x, constant(k, dtype))


@dataclasses.dataclass
class _Window:
    """Per visible dimension of a ref, after an index chain: the element offset
    (within the block), the stride between lanes, the size, whether it remains."""

    offsets: list[Any]
    strides: list[int]
    sizes: list[int]
    live: list[int]


def _window(ref: KernelRef, specs: Sequence[Any], dyn: Sequence[ir.Value],
            dyn_avals: Sequence[Any]) -> _Window:
    dtype = ref.offset_dtype
    n = len(ref.visible)
    w = _Window([0] * n, [1] * n, [ref.array_shape[a] for a in ref.visible], list(range(n)))
    operands = iter(zip(dyn, dyn_avals))
    for spec in specs:
        live = []
        for d, k in zip(spec.dims, w.live):
            if d.start is None:
                value, aval = next(operands)
                start = cast(value, aval.dtype, dtype)
            else:
                start = d.start
            w.offsets[k] = _add(w.offsets[k], _mul(start, w.strides[k], dtype), dtype)
            if not d.is_int:
                w.strides[k] *= d.stride
                w.sizes[k] = d.size
                live.append(k)
        w.live = live
    return w


def _strides(shape: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return out[::-1]


def _lane_part(w: _Window, k: int, position: int, shape: tuple[int, ...], scale: int,
               dtype: np.dtype) -> ir.Value:
    """`(0..size-1) * stride * scale` along window axis `position`, broadcast to `shape`."""
    lanes = cast(make_range(w.sizes[k]), np.int32, dtype)
    step = w.strides[k] * scale
    if step != 1:
        lanes = arith.muli(lanes, full((w.sizes[k],), step, dtype))
    for axis in range(len(shape)):
        if axis != position:
            lanes = tt.expand_dims(lanes, axis)
    return broadcast_to(lanes, shape)


def pointers(ref: KernelRef, specs: Sequence[Any], dyn: Sequence[ir.Value],
             dyn_avals: Sequence[Any]) -> tuple[ir.Value, ir.Value | None]:
    """The pointers of the window `ref[specs]` and its bounds mask (None when every
    lane is inside the array)."""
    dtype = ref.offset_dtype
    w = _window(ref, specs, dyn, dyn_avals)
    shape = tuple(w.sizes[k] for k in w.live)
    strides = _strides(ref.array_shape)
    visible_of = {a: k for k, a in enumerate(ref.visible)}
    scalar: Any = 0
    lanes: ir.Value | None = None
    mask: ir.Value | None = None
    for a, (start, stride) in enumerate(zip(ref.starts, strides)):
        k = visible_of.get(a)
        index = _add(start, w.offsets[k] if k is not None else 0, dtype)
        scalar = _add(scalar, _mul(index, stride, dtype), dtype)
        part = None
        if k is not None and k in w.live:
            part = _lane_part(w, k, w.live.index(k), shape, stride, dtype)
            lanes = part if lanes is None else arith.addi(lanes, part)
        if ref.may_overhang[a]:
            where = broadcast_to(_as_value(index, dtype), shape)
            if part is not None:
                where = arith.addi(where, _lane_part(w, k, w.live.index(k), shape, 1, dtype))
            inside = arith.andi(
                arith.cmpi(arith.CmpIPredicate.sge, where, full(shape, 0, dtype)),
                arith.cmpi(arith.CmpIPredicate.slt, where,
                           full(shape, ref.array_shape[a], dtype)))
            mask = inside if mask is None else arith.andi(mask, inside)
    base = ref.ptr
    if isinstance(scalar, ir.Value) or scalar != 0:
        base = tt.addptr(base.type, base, _as_value(scalar, dtype))
    if not shape:
        return base, mask
    ptrs = broadcast_to(base, shape)
    if lanes is not None:
        ptrs = tt.addptr(ptrs.type, ptrs, lanes)
    return ptrs, mask


def _access(ctx: RuleContext, ref: KernelRef, specs, dyn, dyn_avals):
    ptrs, mask = pointers(ref, specs, dyn, dyn_avals)
    shape = shape_of(ptrs)
    size = int(np.prod(shape, dtype=np.int64))
    if size & (size - 1):
        raise ValueError(
            f"Kernel {ctx.kernel.name!r}: Triton needs blocks and windows whose size is a power "
            f"of 2, but the kernel accesses a window of shape {shape} of an operand of shape "
            f"{ref.array_shape}; pad the block (a masked pl.load/pl.store handles the edge)")
    return ptrs, mask


def _and(a: ir.Value | None, b: ir.Value | None) -> ir.Value | None:
    if a is None or b is None:
        return a if b is None else b
    return arith.andi(a, b)


def _load(ref: KernelRef, ptrs, mask, other=None) -> ir.Value:
    if mask is not None and other is None:
        other = full(shape_of(ptrs), 0, storage_dtype(ref.dtype))
    value = tt.load(ptrs, mask=mask, other=other)
    return cast(value, storage_dtype(ref.dtype), ref.dtype)


def _store(ref: KernelRef, ptrs, value, mask) -> None:
    tt.store(ptrs, cast(value, ref.dtype, storage_dtype(ref.dtype)), mask=mask)


def _check_ref(ctx: RuleContext, ref: Any, what: str) -> KernelRef:
    if not isinstance(ref, KernelRef):
        raise TypeError(f"{ctx.kernel.name}: {what} of a value that is not a kernel operand "
                        "(scratch buffers and run_scoped have no Triton lowering, as in JAX)")
    return ref


@register(get_p)
def _get(ctx: RuleContext, ref, *dyn, specs):
    ref = _check_ref(ctx, ref, "a read")
    ptrs, mask = _access(ctx, ref, specs, dyn, ctx.avals_in[1:])
    return _load(ref, ptrs, mask)


@register(swap_p)
def _swap(ctx: RuleContext, ref, value, *dyn, specs):
    ref = _check_ref(ctx, ref, "a write")
    ptrs, mask = _access(ctx, ref, specs, dyn, ctx.avals_in[2:])
    value = broadcast_to(value, shape_of(ptrs))
    # The old contents are read only when the kernel uses them (`x = ref.swap(v)`).
    old = _load(ref, ptrs, mask) if ctx.used_outputs[0] else None
    _store(ref, ptrs, value, mask)
    return old


@register(addupdate_p)
def _addupdate(ctx: RuleContext, ref, value, *dyn, specs):
    ref = _check_ref(ctx, ref, "an accumulation")
    ptrs, mask = _access(ctx, ref, specs, dyn, ctx.avals_in[2:])
    old = _load(ref, ptrs, mask)
    add = arith.addf if is_float(ref.dtype) else arith.addi
    _store(ref, ptrs, add(old, broadcast_to(value, shape_of(old))), mask)
    return []


@register(masked_load_p)
def _masked_load(ctx: RuleContext, ref, mask, *rest, specs, has_other):
    ref = _check_ref(ctx, ref, "pl.load")
    other, dyn = (rest[0], rest[1:]) if has_other else (None, rest)
    n_skip = 2 + int(has_other)
    ptrs, bounds = _access(ctx, ref, specs, dyn, ctx.avals_in[n_skip:])
    shape = shape_of(ptrs)
    if other is not None:
        other = broadcast_to(cast(other, ctx.avals_in[2].dtype, storage_dtype(ref.dtype)),
                             shape)
    return _load(ref, ptrs, _and(broadcast_to(mask, shape), bounds), other)


@register(masked_store_p)
def _masked_store(ctx: RuleContext, ref, value, mask, *dyn, specs):
    ref = _check_ref(ctx, ref, "pl.store")
    ptrs, bounds = _access(ctx, ref, specs, dyn, ctx.avals_in[3:])
    shape = shape_of(ptrs)
    _store(ref, ptrs, broadcast_to(value, shape), _and(broadcast_to(mask, shape), bounds))
    return []


_SEM = tt.MemSemantic.ACQUIRE_RELEASE
_SCOPE = tt.MemSyncScope.GPU


def _rmw(op, ptrs, value, mask, dtype) -> ir.Value:
    t = value.type
    return tt.atomic_rmw(t, op, ptrs, value, _SEM, _SCOPE, mask=mask) if mask is not None \
        else tt.atomic_rmw(t, op, ptrs, value, _SEM, _SCOPE)


def _float_min_max(op: str, ptrs, value, mask, dtype: np.dtype) -> ir.Value:
    # Floats ordered as their bits: non-negative ones as signed integers (max for
    # max), negative ones in reverse as unsigned integers (umin for max).
    bits = np.dtype(f"int{dtype.itemsize * 8}")
    shape = shape_of(value)
    int_t = element_type(bits)
    int_ptr = tt.PointerType.get(int_t, 1)
    ptr_t = ir.RankedTensorType.get(list(shape), int_ptr) if shape else int_ptr
    ptrs = tt.bitcast(ptr_t, ptrs)
    as_int = tt.bitcast(ir.RankedTensorType.get(list(shape), int_t) if shape else int_t, value)
    zero = full(shape, 0, bits)
    non_negative = arith.cmpi(arith.CmpIPredicate.sge, as_int, zero)
    negative = arith.cmpi(arith.CmpIPredicate.slt, as_int, zero)
    pos_op, neg_op = ((tt.RMWOp.MAX, tt.RMWOp.UMIN) if op == "max"
                      else (tt.RMWOp.MIN, tt.RMWOp.UMAX))
    pos = _rmw(pos_op, ptrs, as_int, _and(mask, non_negative), bits)
    neg = _rmw(neg_op, ptrs, as_int, _and(mask, negative), bits)
    return tt.bitcast(value.type, arith.select(non_negative, pos, neg))


@register(atomic_rmw_p)
def _atomic_rmw(ctx: RuleContext, ref, value, mask, *dyn, specs, op):
    ref = _check_ref(ctx, ref, f"atomic_{op}")
    ptrs, bounds = _access(ctx, ref, specs, dyn, ctx.avals_in[3:])
    shape = shape_of(ptrs)
    value = broadcast_to(value, shape)
    mask = _and(broadcast_to(mask, shape), bounds)
    dtype = np.dtype(ref.dtype)
    if op in ("max", "min") and is_float(dtype):
        return _float_min_max(op, ptrs, value, mask, dtype)
    if op == "add":
        kind = tt.RMWOp.FADD if is_float(dtype) else tt.RMWOp.ADD
    elif op in ("max", "min"):
        kind = getattr(tt.RMWOp, op.upper() if is_signed(dtype) else "U" + op.upper())
    else:
        kind = {"xchg": tt.RMWOp.XCHG, "and": tt.RMWOp.AND, "or": tt.RMWOp.OR,
                "xor": tt.RMWOp.XOR}[op]
    return _rmw(kind, ptrs, value, mask, dtype)


@register(atomic_cas_p)
def _atomic_cas(ctx: RuleContext, ref, cmp, value, *dyn, specs):
    ref = _check_ref(ctx, ref, "atomic_cas")
    ptrs, _ = _access(ctx, ref, specs, dyn, ctx.avals_in[3:])
    shape = shape_of(ptrs)
    cmp, value = broadcast_to(cmp, shape), broadcast_to(value, shape)
    return tt.atomic_cas(value.type, ptrs, cmp, value, _SEM, _SCOPE)
