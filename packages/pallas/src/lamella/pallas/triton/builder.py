"""Building blocks of the Triton lowering: the MLIR context, types, constants,
broadcasting and casts.

A kernel value is an `ir.Value`: a scalar of an element type (`i32`, `f32`,
`i1` for bool) for a 0-d array, else a `tensor<...>` of it; Triton has no 0-d
tensors. Elementwise rules bring every operand to the result's shape with
`broadcast_to` (a scalar is `tt.splat`ted, a tensor gains leading dims with
`tt.expand_dims` and grows with `tt.broadcast`).

>>> import numpy as np
>>> with new_context(), ir.Location.unknown():
...     str(ir_type((4, 8), np.float32)), str(element_type(np.bool_))
('tensor<4x8xf32>', 'i1')
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import arith
from jaxlib.triton import dialect as tt

__all__ = ["broadcast_to", "cast", "constant", "element_type", "full", "ir_type", "is_float",
           "is_signed", "make_range", "new_context", "shape_of", "splat"]

_ELEMENT_TYPES = {
    "float16": ir.F16Type.get, "bfloat16": ir.BF16Type.get, "float32": ir.F32Type.get,
    "float64": ir.F64Type.get, "float8_e4m3fn": ir.Float8E4M3FNType.get,
    "float8_e5m2": ir.Float8E5M2Type.get,
}


def new_context() -> ir.Context:
    """A fresh MLIR context with the Triton dialect (and arith, math, scf) loaded."""
    context = ir.Context()
    tt.register_dialect(context)
    context.load_all_available_dialects()
    return context


def element_type(dtype: Any) -> ir.Type:
    """The MLIR element type of a NumPy dtype (signless integers, i1 for bool)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return ir.IntegerType.get_signless(1)
    if dtype.kind in "iu":
        return ir.IntegerType.get_signless(dtype.itemsize * 8)
    if dtype.name in _ELEMENT_TYPES:
        return _ELEMENT_TYPES[dtype.name]()
    raise TypeError(f"The Triton lowering does not support the dtype {dtype}")


def ir_type(shape: Sequence[int], dtype: Any) -> ir.Type:
    """A scalar type for shape (), else a ranked tensor type."""
    et = element_type(dtype)
    return ir.RankedTensorType.get(list(shape), et) if len(shape) else et


def is_float(dtype: Any) -> bool:
    return np.dtype(dtype).kind == "f" or np.dtype(dtype).name == "bfloat16"


def is_signed(dtype: Any) -> bool:
    return np.dtype(dtype).kind == "i"


def shape_of(x: ir.Value) -> tuple[int, ...]:
    t = x.type
    return tuple(ir.RankedTensorType(t).shape) if isinstance(t, ir.RankedTensorType) else ()


def _scalar_type(t: ir.Type) -> ir.Type:
    return ir.RankedTensorType(t).element_type if isinstance(t, ir.RankedTensorType) else t


def constant(value: Any, dtype: Any) -> ir.Value:
    """A scalar constant of `dtype`."""
    et = element_type(dtype)
    if is_float(dtype):
        return arith.constant(et, float(value))
    if np.dtype(dtype) == np.bool_:
        return arith.constant(et, int(bool(value)))
    value = int(value)
    bits = np.dtype(dtype).itemsize * 8
    if np.dtype(dtype).kind == "u" and value >= 2 ** (bits - 1):
        value -= 2 ** bits  # MLIR stores integers signless: the same bits, signed
    return arith.constant(et, value)


def splat(x: ir.Value, shape: Sequence[int]) -> ir.Value:
    """A scalar repeated over `shape` (the scalar itself for shape ())."""
    if not len(shape):
        return x
    return tt.splat(ir.RankedTensorType.get(list(shape), x.type), x)


def full(shape: Sequence[int], value: Any, dtype: Any) -> ir.Value:
    return splat(constant(value, dtype), shape)


def make_range(n: int) -> ir.Value:
    """`tt.make_range`: the int32 tensor 0, 1, ..., n - 1."""
    return tt.make_range(ir.RankedTensorType.get([n], ir.IntegerType.get_signless(32)), 0, n)


def broadcast_to(x: ir.Value, shape: Sequence[int]) -> ir.Value:
    """`x` broadcast NumPy-style (trailing dims aligned) to `shape`."""
    shape = tuple(shape)
    have = shape_of(x)
    if have == shape:
        return x
    if not have:
        return splat(x, shape)
    if len(have) > len(shape):
        raise ValueError(f"can't broadcast a value of shape {have} to {shape}")
    for _ in range(len(shape) - len(have)):
        x = tt.expand_dims(x, 0)
    et = _scalar_type(x.type)
    return tt.broadcast(ir.RankedTensorType.get(list(shape), et), x)


def _with_element(x: ir.Value, et: ir.Type) -> ir.Type:
    shape = shape_of(x)
    return ir.RankedTensorType.get(list(shape), et) if shape else et


def cast(x: ir.Value, src: Any, dst: Any) -> ir.Value:
    """`x` of dtype `src` converted to dtype `dst` with `lax.convert_element_type`'s
    semantics (a bool is true where nonzero; float to int truncates)."""
    src, dst = np.dtype(src), np.dtype(dst)
    if src == dst:
        return x
    to = _with_element(x, element_type(dst))
    if dst == np.bool_:
        zero = broadcast_to(constant(0, src), shape_of(x))
        if is_float(src):
            return arith.cmpf(arith.CmpFPredicate.UNE, x, zero)
        return arith.cmpi(arith.CmpIPredicate.ne, x, zero)
    if is_float(src) and is_float(dst):
        wider = src.itemsize < dst.itemsize
        return arith.extf(to, x) if wider else arith.truncf(to, x)
    if is_float(src):
        return arith.fptosi(to, x) if is_signed(dst) else arith.fptoui(to, x)
    if is_float(dst):
        return arith.sitofp(to, x) if is_signed(src) else arith.uitofp(to, x)
    if _bits(src) == _bits(dst):
        return x
    if _bits(src) > _bits(dst):
        return arith.trunci(to, x)
    return arith.extsi(to, x) if is_signed(src) else arith.extui(to, x)


def _bits(dtype: np.dtype) -> int:
    return 1 if dtype == np.bool_ else dtype.itemsize * 8
