"""Dtypes and conversions: dtype, convert_element_type, bitcast_convert_type,
reduce_precision."""

from __future__ import annotations

from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad, batching, dtypes
from lamella.core.shape_poly import DimExpr, dimension_as_value
from lamella.core.staging import const_fold_rules
from lamella.core.trace import aval_of
from lamella.lax import symbolic_lowering
from lamella.lax.lowering import aval_to_ir_type, constant, hlo, register_lowering
from lamella.lax.standard import ANY, check_dtypes, standard_primitive


def dtype(x: Any) -> np.dtype:
    """The dtype `x` has as a lax operand: canonicalized (float64 is float32 without
    x64), Python scalars taking their default dtype. `x` may also be a dtype.

    >>> dtype(1.0), dtype(np.int8(1)), dtype("float64")
    (dtype('float32'), dtype('int8'), dtype('float32'))
    """
    if isinstance(x, (str, type, np.dtype)):
        return dtypes.canonicalize_dtype(x)
    return aval_of(x).dtype


# --- convert_element_type -----------------------------------------------------
convert_element_type_p = standard_primitive("convert_element_type")


def convert_element_type(operand: Any, new_dtype: Any, weak_type: bool = False) -> Any:
    """`operand` converted to `new_dtype` (canonicalized: float64 is float32 without x64).

    Complex to real keeps the real part; numbers to bool test for nonzero.
    `weak_type=True` marks the result weakly typed, as Python scalars are.

    >>> convert_element_type(2.5, "int32")
    Array(2, dtype=int32)
    """
    new_dtype = dtypes.canonicalize_dtype(new_dtype)
    if type(operand) is DimExpr:  # a symbolic dimension used as a number
        operand = dimension_as_value(operand)
    if type(operand) is int and not weak_type and not _fits_default_int(operand):
        # Python ints are unbounded: one beyond the default integer type (a valid uint32
        # above 2**31, or 2**70 for a float) converts on the host, wrapping as NumPy's
        # astype does (as JAX), instead of first overflowing int32. A weakly typed
        # operand (x + 2**40) still overflows, as JAX's does.
        return convert_element_type_p.bind(np.asarray(operand).astype(new_dtype),
                                           new_dtype=new_dtype, weak_type=weak_type)
    aval = aval_of(operand)
    # Python scalars always go through the primitive: eagerly it makes an Array,
    # while staging it folds into a literal.
    # NumPy values whose own dtype differs (float64 seen as float32 without x64)
    # must really be converted too.
    if aval.dtype == new_dtype and aval.weak_type == weak_type \
            and not dtypes.is_python_scalar(operand) \
            and getattr(operand, "dtype", new_dtype) == new_dtype:
        return operand
    return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=weak_type)


def _fits_default_int(value: int) -> bool:
    info = np.iinfo(dtypes.canonicalize_dtype(np.int64))
    return int(info.min) <= value <= int(info.max)


@convert_element_type_p.def_abstract_eval
def _convert_abstract_eval(x: ShapedArray, *, new_dtype, weak_type) -> ShapedArray:
    check_dtypes("convert_element_type", ANY, x)
    return x.update(dtype=new_dtype, weak_type=weak_type)


def _convert_lowering(ctx, x, *, new_dtype, weak_type):
    (aval_in,), (aval_out,) = ctx.avals_in, ctx.avals_out
    if aval_in.dtype == new_dtype:
        return [x]
    if aval_in.dtype.kind == "c" and new_dtype.kind != "c":
        x = hlo.real(x)
        aval_in = aval_in.update(dtype=np.finfo(aval_in.dtype).dtype)
    if new_dtype == np.dtype(bool):
        zero = symbolic_lowering.splat(x, constant(0, aval_in.dtype))
        return [hlo.compare(x, zero, hlo.ComparisonDirectionAttr.get("NE"),
                            compare_type=hlo.ComparisonTypeAttr.get(
                                _COMPARE_TYPES.get(aval_in.dtype.kind, "FLOAT")))]
    return [hlo.convert(aval_to_ir_type(aval_out), x)]


_COMPARE_TYPES = {"i": "SIGNED", "u": "UNSIGNED", "b": "UNSIGNED"}


def _convert_jvp(primals, tangents, *, new_dtype, weak_type):
    (x,), (t,) = primals, tangents
    out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if type(t) is ad.Zero or not dtypes.is_inexact(new_dtype):
        return out, ad.Zero.from_primal_value(out)
    return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


def _convert_transpose(ct, x, *, new_dtype, weak_type):
    old = x.aval
    return [convert_element_type_p.bind(ct, new_dtype=old.dtype, weak_type=old.weak_type)]


def _convert_fold(x, *, new_dtype, weak_type):
    # A concrete scalar converted while staging becomes a typed literal.
    if np.ndim(x) != 0 or not isinstance(x, (bool, int, float, complex, np.generic)):
        return None
    return np.asarray(x).astype(new_dtype)[()], ShapedArray((), new_dtype, weak_type)


register_lowering(convert_element_type_p, _convert_lowering)
ad.primitive_jvps[convert_element_type_p] = _convert_jvp
ad.primitive_transposes[convert_element_type_p] = _convert_transpose
batching.defvectorized(convert_element_type_p)
const_fold_rules[convert_element_type_p] = _convert_fold

# --- bitcast_convert_type -----------------------------------------------------
bitcast_convert_type_p = standard_primitive("bitcast_convert_type")


def bitcast_convert_type(operand: Any, new_dtype: Any) -> Any:
    """Reinterprets the bits of `operand` as `new_dtype`.

    A narrower type adds a trailing axis; a wider one consumes the trailing axis.
    """
    return bitcast_convert_type_p.bind(operand, new_dtype=dtypes.canonicalize_dtype(new_dtype))


@bitcast_convert_type_p.def_abstract_eval
def _bitcast_abstract_eval(x: ShapedArray, *, new_dtype) -> ShapedArray:
    if x.dtype != new_dtype and (x.dtype.kind in "bc" or new_dtype.kind in "bc"):
        # XLA stores bools as i1 (not a byte) and has no bit layout for complex numbers.
        raise TypeError(f"bitcast_convert_type cannot reinterpret {x.dtype.name} as "
                        f"{new_dtype.name}: booleans and complex numbers have no bitcast.")
    old, new = x.dtype.itemsize, new_dtype.itemsize
    if old == new:
        return ShapedArray(x.shape, new_dtype)
    if old > new:
        return ShapedArray((*x.shape, old // new), new_dtype)
    if not x.shape or x.shape[-1] != new // old:
        raise TypeError(f"bitcast_convert_type from {x.dtype.name} to {new_dtype.name} needs a "
                        f"trailing axis of size {new // old}, got shape {x.shape}")
    return ShapedArray(x.shape[:-1], new_dtype)


def _bitcast_batch(args, dims, *, new_dtype):
    (x,), (d,) = args, dims
    return bitcast_convert_type(batching.moveaxis(x, d, 0), new_dtype), 0


register_lowering(bitcast_convert_type_p, lambda ctx, x, *, new_dtype: [
    hlo.bitcast_convert(aval_to_ir_type(ctx.avals_out[0]), x)])
ad.defjvp_zero(bitcast_convert_type_p)
batching.primitive_batchers[bitcast_convert_type_p] = _bitcast_batch

# --- reduce_precision ---------------------------------------------------------
reduce_precision_p = standard_primitive("reduce_precision")


def reduce_precision(operand: Any, exponent_bits: int, mantissa_bits: int) -> Any:
    """Rounds floats to a narrower format (e.g. bfloat16's 8/7 bits), keeping the dtype."""
    return reduce_precision_p.bind(operand, exponent_bits=int(exponent_bits),
                                   mantissa_bits=int(mantissa_bits))


@reduce_precision_p.def_abstract_eval
def _reduce_precision_abstract_eval(x: ShapedArray, *, exponent_bits, mantissa_bits):
    check_dtypes("reduce_precision", ("floating",), x)
    if exponent_bits < 1 or mantissa_bits < 0:
        raise ValueError(f"reduce_precision needs exponent_bits >= 1 and mantissa_bits >= 0, "
                         f"got {exponent_bits} and {mantissa_bits}")
    return x


register_lowering(reduce_precision_p, lambda ctx, x, *, exponent_bits, mantissa_bits: [
    hlo.reduce_precision(x, exponent_bits, mantissa_bits)])
ad.deflinear(reduce_precision_p, lambda ct, **params: [reduce_precision_p.bind(ct, **params)])
batching.defvectorized(reduce_precision_p)
