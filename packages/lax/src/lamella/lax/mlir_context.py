"""MLIR plumbing for StableHLO: contexts with the right dialects, types, parse/print.

jaxlib ships MLIR's Python bindings together with the StableHLO, CHLO and
Shardy dialects. A usable context needs more than ``ir.Context()``: jaxlib's
dialect registry must be appended, and StableHLO and CHLO must be registered by
hand (the registry alone does not load them). This module does that once per
context and maps NumPy dtypes to MLIR element types and back, so the lowering
and the runtime agree on one table.

    >>> from lamella.lax.mlir_context import make_context, parse_module, main_signature
    >>> ctx = make_context()
    >>> m = parse_module(
    ...     "func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {"
    ...     " %0 = stablehlo.sine %x : tensor<2xf32> return %0 : tensor<2xf32> }", ctx)
    >>> main_signature(m)
    ([((2,), dtype('float32'))], [((2,), dtype('float32'))])
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir._mlir_libs import _jax_mlir_ext
from jaxlib.mlir.dialects import chlo, func, sdy, stablehlo

__all__ = [
    "ir",
    "chlo",
    "func",
    "sdy",
    "stablehlo",
    "SUPPORTED_DTYPES",
    "make_context",
    "parse_module",
    "module_to_string",
    "element_type",
    "tensor_type",
    "shape_and_dtype",
    "dtype_of",
    "main_function",
    "main_signature",
]

# One table, both directions: NumPy dtype <-> MLIR element type spelling.
# Signless MLIR integers are signed in StableHLO; i1 is bool.
_DTYPE_TO_MLIR: dict[np.dtype, str] = {
    np.dtype(np.bool_): "i1",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "ui8",
    np.dtype(np.uint16): "ui16",
    np.dtype(np.uint32): "ui32",
    np.dtype(np.uint64): "ui64",
    np.dtype(ml_dtypes.float8_e4m3fn): "f8E4M3FN",
    np.dtype(ml_dtypes.float8_e5m2): "f8E5M2",
    np.dtype(ml_dtypes.bfloat16): "bf16",
    np.dtype(np.float16): "f16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.complex64): "complex<f32>",
    np.dtype(np.complex128): "complex<f64>",
}
_MLIR_TO_DTYPE: dict[str, np.dtype] = {name: dt for dt, name in _DTYPE_TO_MLIR.items()}

SUPPORTED_DTYPES: frozenset[np.dtype] = frozenset(_DTYPE_TO_MLIR)
"""The dtypes an array may have: those with a StableHLO element type here."""

Shape = tuple[int, ...]


def make_context() -> ir.Context:
    """A fresh MLIR context with the StableHLO, CHLO, func and Shardy dialects loaded.

    MLIR contexts are not safe to share between threads that build IR, so each
    lowering makes its own (about 2 ms). Multithreading is off: lowering is
    single-threaded, and a per-context LLVM thread pool only costs time.

    >>> ctx = make_context()
    >>> with ctx:
    ...     str(tensor_type((2, 3), np.float32))
    'tensor<2x3xf32>'
    """
    ctx = ir.Context()
    ctx.enable_multithreading(False)
    registry = ir.DialectRegistry()
    _jax_mlir_ext.register_dialects(registry)
    ctx.append_dialect_registry(registry)
    ctx.load_all_available_dialects()
    stablehlo.register_dialect(ctx)
    chlo.register_dialect(ctx)
    sdy.register_dialect(ctx)
    return ctx


def parse_module(text: str, context: ir.Context | None = None) -> ir.Module:
    """Parse MLIR text (pretty or generic form) into a module.

    With no ``context``, a fresh one from :func:`make_context` is used.

    >>> m = parse_module("func.func public @main() { return }")
    >>> main_function(m).sym_name.value
    'main'
    """
    with context or make_context():
        return ir.Module.parse(text)


def module_to_string(module: ir.Module, *, generic: bool = False, debug_info: bool = False) -> str:
    """The module's text; ``generic`` prints the generic op form, ``debug_info`` locations.

    >>> m = parse_module("func.func public @main() { return }")
    >>> "func.func public @main()" in module_to_string(m)
    True
    """
    return module.operation.get_asm(enable_debug_info=debug_info, print_generic_op_form=generic)


def element_type(dtype: np.typing.DTypeLike) -> ir.Type:
    """The MLIR element type of a NumPy dtype (needs an active context).

    >>> with make_context():
    ...     str(element_type(np.uint8))
    'ui8'
    """
    dt = np.dtype(dtype)
    try:
        spelling = _DTYPE_TO_MLIR[dt]
    except KeyError:
        raise TypeError(f"dtype {dt} has no StableHLO element type") from None
    return ir.Type.parse(spelling)


def tensor_type(shape: Shape, dtype: np.typing.DTypeLike) -> ir.RankedTensorType:
    """The ranked tensor type ``tensor<shape x dtype>`` (needs an active context).

    >>> with make_context():
    ...     str(tensor_type((), np.bool_))
    'tensor<i1>'
    """
    return ir.RankedTensorType.get(list(shape), element_type(dtype), loc=ir.Location.unknown())


def shape_and_dtype(type_: ir.Type) -> tuple[Shape, np.dtype]:
    """Shape and NumPy dtype of a static ranked tensor type.

    >>> with make_context():
    ...     shape_and_dtype(ir.Type.parse("tensor<3x2xcomplex<f32>>"))
    ((3, 2), dtype('complex64'))
    """
    tensor = type_
    if not isinstance(tensor, ir.RankedTensorType):
        raise TypeError(f"expected a ranked tensor type, got {type_}")
    if not tensor.has_static_shape:
        raise TypeError(f"dynamic shapes are not supported: {type_}")
    return tuple(tensor.shape), _element_dtype(tensor)


def _element_dtype(tensor: ir.RankedTensorType) -> np.dtype:
    spelling = str(tensor.element_type)
    try:
        return _MLIR_TO_DTYPE[spelling]
    except KeyError:
        raise TypeError(f"element type {spelling} has no NumPy dtype") from None


def dtype_of(value: ir.Value) -> np.dtype:
    """The NumPy dtype of an MLIR tensor value (what lowerings branch on).

    >>> with make_context(), ir.Location.unknown():
    ...     dtype_of(stablehlo.constant(ir.DenseElementsAttr.get(np.zeros(2, np.int8))))
    dtype('int8')
    """
    if not isinstance(value.type, ir.RankedTensorType):
        raise TypeError(f"expected a ranked tensor type, got {value.type}")
    return _element_dtype(value.type)  # of dynamic shapes too (shape-polymorphic export)


def main_function(module: ir.Module) -> func.FuncOp:
    """The module's entry point, ``func.func public @main``.

    >>> m = parse_module("func.func public @main() { return }")
    >>> main_function(m).type.results
    []
    """
    for op in module.body.operations:
        if isinstance(op, func.FuncOp) and op.sym_name.value == "main":
            return op
    raise ValueError("the module has no `func.func public @main` entry function")


def main_signature(
    module: ir.Module,
) -> tuple[list[tuple[Shape, np.dtype]], list[tuple[Shape, np.dtype]]]:
    """(shape, dtype) of each parameter and each result of ``@main``, in order.

    >>> m = parse_module(
    ...     "func.func public @main(%a: tensor<i32>) -> tensor<i32> {"
    ...     " return %a : tensor<i32> }")
    >>> main_signature(m)
    ([((), dtype('int32'))], [((), dtype('int32'))])
    """
    fn_type = main_function(module).type
    inputs = [shape_and_dtype(t) for t in fn_type.inputs]
    return inputs, [shape_and_dtype(t) for t in fn_type.results]
