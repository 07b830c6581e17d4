"""Tensor contraction: dot_general, its wrappers dot and batch_matmul, and Precision.

`dot_general(lhs, rhs, ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)))`
multiplies over the batch dimensions, sums over the contracting ones, and lays
the result out as XLA does: batch dimensions, then the lhs's free dimensions,
then the rhs's, each in operand order. It is bilinear, so its JVP is two
dot_generals and its transposes are dot_generals of the cotangent with the
other operand followed by a transpose back to the operand's axis order.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad, batching, dtypes
from lamella.core.config import config
from lamella.core.structural import transpose
from lamella.core.trace import aval_of
from lamella.lax.conversion import convert_element_type
from lamella.lax.lowering import aval_to_ir_type, hlo, ir, register_lowering
from lamella.lax.standard import BOOL, COMPLEX, FLOAT, INT, check_dtypes, standard_primitive

__all__ = ["DotDimensionNumbers", "Precision", "PrecisionLike", "batch_matmul",
           "canonicalize_precision", "dot", "dot_general", "dot_general_p"]


class Precision(enum.Enum):
    """How precisely a backend may compute a matrix product (CPUs always use full precision).

    Accepts JAX's spellings: `Precision("highest")` or "float32" is HIGHEST,
    "high", "bfloat16_3x" or "tensorfloat32" is HIGH, "default", "bfloat16" or
    "fastest" is DEFAULT.

    >>> Precision("float32")
    Precision.HIGHEST
    """

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value: object) -> Precision:
        spellings = {"highest": cls.HIGHEST, "float32": cls.HIGHEST, "high": cls.HIGH,
                     "bfloat16_3x": cls.HIGH, "tensorfloat32": cls.HIGH,
                     "default": cls.DEFAULT, "bfloat16": cls.DEFAULT, "fastest": cls.DEFAULT}
        if isinstance(value, str) and value.lower() in spellings:
            return spellings[value.lower()]
        raise ValueError(f"Unrecognized precision value {value!r}: use a lax.Precision or one "
                         f"of {', '.join(repr(s) for s in spellings)}")

    def __repr__(self) -> str:
        return f"Precision.{self.name}"

    def __str__(self) -> str:
        return self.name


PrecisionLike = None | str | Precision | tuple[str | Precision, str | Precision]
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]


def canonicalize_precision(precision: PrecisionLike) -> tuple[Precision, Precision] | None:
    """None, or one Precision per operand; None takes `default_matmul_precision` from config.

    >>> canonicalize_precision("highest")
    (Precision.HIGHEST, Precision.HIGHEST)
    """
    if precision is None:
        default = config.read("default_matmul_precision")
        return None if default is None else (Precision(default),) * 2
    if isinstance(precision, (str, Precision)):
        return (Precision(precision),) * 2
    if isinstance(precision, (tuple, list)) and len(precision) == 2:
        return Precision(precision[0]), Precision(precision[1])
    raise ValueError(f"precision must be None, a lax.Precision, a string, or a pair of them "
                     f"(one per operand), got {precision!r}")


def _canonical_dimension_numbers(dimension_numbers: Any):
    try:
        (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
        return ((tuple(int(d) for d in lhs_contract), tuple(int(d) for d in rhs_contract)),
                (tuple(int(d) for d in lhs_batch), tuple(int(d) for d in rhs_batch)))
    except (TypeError, ValueError):
        raise TypeError("dot_general: dimension_numbers must be ((lhs_contracting, "
                        "rhs_contracting), (lhs_batch, rhs_batch)), tuples of ints, got "
                        f"{dimension_numbers!r}") from None


def _free_dims(ndim: int, contracting: Sequence[int], batch: Sequence[int]) -> list[int]:
    return [d for d in range(ndim) if d not in contracting and d not in batch]


# --- dot_general --------------------------------------------------------------------

dot_general_p = standard_primitive("dot_general")


def dot_general(lhs: Any, rhs: Any, dimension_numbers: DotDimensionNumbers,
                precision: PrecisionLike = None, preferred_element_type: Any = None) -> Any:
    """Contracts `lhs` with `rhs` over the contracting dimensions, elementwise over
    the batch dimensions: the result has the batch dimensions, then the free
    dimensions of lhs, then those of rhs.

    Operands have one dtype (lax does not promote). `preferred_element_type`
    sets the result dtype: integers may accumulate in wider integers or in
    floats, floats in wider floats.

    >>> import numpy as np
    >>> x = np.ones((2, 3, 4), np.float32)
    >>> y = np.ones((2, 4, 5), np.float32)
    >>> dot_general(x, y, (((2,), (1,)), ((0,), (0,)))).shape
    (2, 3, 5)
    """
    preferred = None if preferred_element_type is None \
        else dtypes.canonicalize_dtype(preferred_element_type)
    return dot_general_p.bind(lhs, rhs,
                              dimension_numbers=_canonical_dimension_numbers(dimension_numbers),
                              precision=canonicalize_precision(precision),
                              preferred_element_type=preferred)


def _check_side(side: str, aval: ShapedArray, contracting, batch) -> None:
    dims = (*contracting, *batch)
    if any(not 0 <= d < aval.ndim for d in dims):
        raise TypeError(f"dot_general: {side} contracting dimensions {contracting} and batch "
                        f"dimensions {batch} must be in range for {side} of rank {aval.ndim} "
                        f"(shape {aval.shape})")
    if len(set(dims)) != len(dims):
        raise TypeError(f"dot_general: {side} contracting dimensions {contracting} and batch "
                        f"dimensions {batch} must be distinct")


def _check_sizes(kind: str, lhs: ShapedArray, rhs: ShapedArray, lhs_dims, rhs_dims) -> None:
    for l, r in zip(lhs_dims, rhs_dims):
        if lhs.shape[l] != rhs.shape[r]:
            raise TypeError(f"dot_general: {kind} dimension {l} of lhs (size {lhs.shape[l]}) "
                            f"does not match {kind} dimension {r} of rhs (size {rhs.shape[r]}), "
                            f"for shapes {lhs.shape} and {rhs.shape}")


def _result_dtype(input_dtype: np.dtype, preferred: np.dtype | None) -> np.dtype:
    if preferred is None:
        return input_dtype
    kinds = {"b": "biu", "i": "iuf", "u": "iuf", "f": "f", "c": "c"}
    input_kind = "f" if dtypes.is_float(input_dtype) else input_dtype.kind
    preferred_kind = "f" if dtypes.is_float(preferred) else preferred.kind
    if preferred_kind not in kinds[input_kind]:
        raise TypeError(f"dot_general: preferred_element_type {preferred.name} is incompatible "
                        f"with inputs of dtype {input_dtype.name}: integers may accumulate in "
                        "integers or floats, floats in floats, complexes in complexes")
    if preferred_kind == input_kind and preferred.itemsize < input_dtype.itemsize:
        raise TypeError(f"dot_general: preferred_element_type {preferred.name} is narrower "
                        f"than the inputs' dtype {input_dtype.name}")
    return preferred


@dot_general_p.def_abstract_eval
def _dot_general_abstract_eval(lhs: ShapedArray, rhs: ShapedArray, *, dimension_numbers,
                               precision, preferred_element_type) -> ShapedArray:
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    check_dtypes("dot_general", (BOOL, *INT, FLOAT, COMPLEX), lhs, rhs)
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"dot_general requires lhs and rhs of one dtype, got "
                        f"{lhs.dtype.name} and {rhs.dtype.name} (lax does not promote; "
                        "lamella.numpy does)")
    if len(lhs_contract) != len(rhs_contract) or len(lhs_batch) != len(rhs_batch):
        raise TypeError(f"dot_general: lhs and rhs need as many contracting dimensions "
                        f"({lhs_contract} vs {rhs_contract}) and batch dimensions "
                        f"({lhs_batch} vs {rhs_batch})")
    _check_side("lhs", lhs, lhs_contract, lhs_batch)
    _check_side("rhs", rhs, rhs_contract, rhs_batch)
    _check_sizes("batch", lhs, rhs, lhs_batch, rhs_batch)
    _check_sizes("contracting", lhs, rhs, lhs_contract, rhs_contract)
    shape = (*(lhs.shape[d] for d in lhs_batch),
             *(lhs.shape[d] for d in _free_dims(lhs.ndim, lhs_contract, lhs_batch)),
             *(rhs.shape[d] for d in _free_dims(rhs.ndim, rhs_contract, rhs_batch)))
    dtype = _result_dtype(lhs.dtype, preferred_element_type)
    return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


def _dot_general_jvp_lhs(t, lhs, rhs, **params):
    return dot_general_p.bind(t, rhs, **params)


def _dot_general_jvp_rhs(t, lhs, rhs, **params):
    return dot_general_p.bind(lhs, t, **params)


def _transpose_operand(ct, other, ndim: int, contract, batch, other_contract, other_batch,
                       ct_free_of_other: list[int], ct_batch: list[int], precision,
                       dtype: np.dtype):
    """The cotangent of one operand (rank `ndim`, dims `contract`/`batch`) given the
    output cotangent and the `other` operand.

    Contracting ct with `other` over other's free dimensions leaves (batch, this
    operand's free dims, other's contracting dims in other's order); a transpose
    puts them back in this operand's order.
    """
    other_free = _free_dims(aval_of(other).ndim, other_contract, other_batch)
    if aval_of(other).dtype != aval_of(ct).dtype:
        other = convert_element_type(other, aval_of(ct).dtype)
    product = dot_general_p.bind(
        ct, other, dimension_numbers=((tuple(ct_free_of_other), tuple(other_free)),
                                      (tuple(ct_batch), tuple(other_batch))),
        precision=precision, preferred_element_type=None)
    # Axis j of `product` holds this operand's dimension source[j].
    source = [*batch, *_free_dims(ndim, contract, batch),
              *(contract[i] for i in np.argsort(other_contract))]
    permutation = tuple(int(i) for i in np.argsort(source))
    if permutation != tuple(range(ndim)):
        product = transpose(product, permutation)
    return product if aval_of(product).dtype == dtype else convert_element_type(product, dtype)


def _dot_general_transpose(ct, lhs, rhs, *, dimension_numbers, precision,
                           preferred_element_type):
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    n_batch = len(lhs_batch)
    if ad.is_undefined_primal(lhs):
        lhs_ndim, rhs_ndim = lhs.aval.ndim, aval_of(rhs).ndim
    else:
        lhs_ndim, rhs_ndim = aval_of(lhs).ndim, rhs.aval.ndim
    n_lhs_free = len(_free_dims(lhs_ndim, lhs_contract, lhs_batch))
    n_rhs_free = len(_free_dims(rhs_ndim, rhs_contract, rhs_batch))
    ct_batch = list(range(n_batch))
    ct_lhs_free = list(range(n_batch, n_batch + n_lhs_free))
    ct_rhs_free = list(range(n_batch + n_lhs_free, n_batch + n_lhs_free + n_rhs_free))
    if ad.is_undefined_primal(lhs):
        return [_transpose_operand(ct, rhs, lhs_ndim, lhs_contract, lhs_batch, rhs_contract,
                                   rhs_batch, ct_rhs_free, ct_batch, precision,
                                   lhs.aval.dtype), None]
    # For rhs the roles swap, and ct's free dims of the other operand are lhs's.
    return [None, _transpose_operand(ct, lhs, rhs_ndim, rhs_contract, rhs_batch, lhs_contract,
                                     lhs_batch, ct_lhs_free, ct_batch, precision,
                                     rhs.aval.dtype)]


def _dot_general_batch(args, dims, *, dimension_numbers, precision, preferred_element_type):
    # No data moves: a batch axis of both operands becomes a new leading batch
    # dimension; a batch axis of one operand is one more free dimension of it.
    (lhs, rhs), (ld, rd) = args, dims
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers

    def shifted(ds, bdim):
        return tuple(d + (d >= bdim) for d in ds) if bdim is not None else tuple(ds)

    lc, lb = shifted(lhs_contract, ld), shifted(lhs_batch, ld)
    rc, rb = shifted(rhs_contract, rd), shifted(rhs_batch, rd)
    if ld is not None and rd is not None:
        lb, rb, out_dim = (ld, *lb), (rd, *rb), 0
    elif ld is not None:
        out_dim = len(lb) + sum(1 for d in _free_dims(aval_of(lhs).ndim, lc, lb) if d < ld)
    else:
        lhs_free = _free_dims(aval_of(lhs).ndim, lc, lb)
        out_dim = len(lb) + len(lhs_free) + sum(
            1 for d in _free_dims(aval_of(rhs).ndim, rc, rb) if d < rd)
    out = dot_general_p.bind(lhs, rhs, dimension_numbers=((lc, rc), (lb, rb)),
                             precision=precision, preferred_element_type=preferred_element_type)
    return out, out_dim


def _dot_general_lowering(ctx, lhs, rhs, *, dimension_numbers, precision,
                          preferred_element_type):
    (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
    aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
    if aval_in.dtype.kind in "biu" and aval_out.dtype.kind not in "biu":
        # Integers accumulating in floats: convert first (exact for the products),
        # since XLA's dot takes operands and result of one kind.
        lhs, rhs = (hlo.convert(aval_to_ir_type(a.update(dtype=aval_out.dtype)), x)
                    for a, x in zip(ctx.avals_in, (lhs, rhs)))
    numbers = hlo.DotDimensionNumbers.get(
        lhs_batching_dimensions=list(lhs_batch), rhs_batching_dimensions=list(rhs_batch),
        lhs_contracting_dimensions=list(lhs_contract),
        rhs_contracting_dimensions=list(rhs_contract))
    config = None if precision is None else ir.ArrayAttr.get(
        [hlo.PrecisionAttr.get(p.name) for p in precision])
    return [hlo.dot_general(aval_to_ir_type(aval_out), lhs, rhs, numbers,
                            precision_config=config)]


ad.defjvp(dot_general_p, _dot_general_jvp_lhs, _dot_general_jvp_rhs)
ad.primitive_transposes[dot_general_p] = _dot_general_transpose
batching.primitive_batchers[dot_general_p] = _dot_general_batch
register_lowering(dot_general_p, _dot_general_lowering)


# --- wrappers ---------------------------------------------------------------------------


def dot(lhs: Any, rhs: Any, precision: PrecisionLike = None,
        preferred_element_type: Any = None) -> Any:
    """Vector-vector, matrix-vector, vector-matrix or matrix-matrix product: the last
    axis of `lhs` contracts with the first of `rhs`, each of rank 1 or 2.

    >>> import numpy as np
    >>> dot(np.ones((2, 3), np.float32), np.ones(3, np.float32))
    Array([3., 3.], dtype=float32)
    """
    lhs_shape, rhs_shape = aval_of(lhs).shape, aval_of(rhs).shape
    if not (1 <= len(lhs_shape) <= 2 and 1 <= len(rhs_shape) <= 2
            and lhs_shape[-1] == rhs_shape[0]):
        raise TypeError(f"Incompatible shapes for dot: got {lhs_shape} and {rhs_shape} (dot "
                        "takes vectors or matrices whose inner sizes agree; use dot_general "
                        "for other ranks)")
    return dot_general(lhs, rhs, (((len(lhs_shape) - 1,), (0,)), ((), ())),
                       precision=precision, preferred_element_type=preferred_element_type)


def batch_matmul(lhs: Any, rhs: Any, precision: PrecisionLike = None) -> Any:
    """Matrix products over the last two axes, batched over the leading ones.

    >>> import numpy as np
    >>> batch_matmul(np.ones((4, 2, 3), np.float32), np.ones((4, 3, 5), np.float32)).shape
    (4, 2, 5)
    """
    lhs_ndim, rhs_ndim = aval_of(lhs).ndim, aval_of(rhs).ndim
    if min(lhs_ndim, rhs_ndim) < 2:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {lhs_ndim}, "
                         f"{rhs_ndim}")
    if lhs_ndim != rhs_ndim:
        raise ValueError(f"Arguments to batch_matmul must have same ndim, got {lhs_ndim}, "
                         f"{rhs_ndim}")
    batch = tuple(range(lhs_ndim - 2))
    return dot_general(lhs, rhs, (((lhs_ndim - 1,), (rhs_ndim - 2,)), (batch, batch)),
                       precision=precision)
