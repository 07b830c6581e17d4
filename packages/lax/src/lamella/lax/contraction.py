"""Tensor contraction: dot_general, its wrappers dot and batch_matmul, Precision
and the dot algorithms (DotAlgorithm, DotAlgorithmPreset) that `precision=` accepts.

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
from typing import Any, NamedTuple

import numpy as np

from lamella.core import ShapedArray, ad, batching, dtypes
from lamella.core.config import config
from lamella.core.jaxpr import pp_eqn, pp_eqn_rules
from lamella.core.sharding import out_sharding_of
from lamella.core.structural import transpose
from lamella.core.trace import aval_of
from lamella.lax.conversion import convert_element_type
from lamella.lax.explicit_sharding import (
    cotangent_dims_to_unshard,
    cotangent_layout,
    unshard_dims,
    with_out_sharding,
)
from lamella.lax.lowering import aval_to_ir_type, hlo, ir, register_lowering
from lamella.lax.mlir_context import element_type
from lamella.lax.standard import (
    BOOL,
    COMPLEX,
    FLOAT,
    INT,
    check_dtypes,
    standard_primitive,
)

__all__ = ["DotAlgorithm", "DotAlgorithmPreset", "DotDimensionNumbers", "Precision",
           "PrecisionLike", "batch_matmul", "canonicalize_precision", "dot", "dot_general",
           "dot_general_p"]


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


class DotAlgorithm(NamedTuple):
    """A dot product algorithm, for `precision=`: operands are rounded to the precision
    types and products accumulate in `accumulation_type` (the result's dtype unless
    `preferred_element_type` says otherwise).

    On CPU the algorithms with one type throughout and no decomposition (f16, f32 or
    f64) are computed exactly so; others raise a ValueError.

    >>> DotAlgorithm(np.float16, np.float16, np.float32).accumulation_type
    <class 'numpy.float32'>
    """

    lhs_precision_type: Any
    rhs_precision_type: Any
    accumulation_type: Any
    lhs_component_count: int = 1
    rhs_component_count: int = 1
    num_primitive_operations: int = 1
    allow_imprecise_accumulation: bool = False


class DotAlgorithmPreset(enum.Enum):
    """Named dot algorithms (`LHS_RHS_ACCUMULATOR`, `_X3` etc. for emulation by several
    products), for `precision=`; also accepted by name, `precision="F32_F32_F32"`.

    >>> DotAlgorithmPreset.BF16_BF16_F32.accumulation_type
    <class 'numpy.float32'>
    """

    DEFAULT = enum.auto()
    ANY_F8_ANY_F8_F32 = enum.auto()
    ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
    ANY_F8_ANY_F8_ANY = enum.auto()
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
    F16_F16_F16 = enum.auto()
    F16_F16_F32 = enum.auto()
    BF16_BF16_BF16 = enum.auto()
    BF16_BF16_F32 = enum.auto()
    BF16_BF16_F32_X3 = enum.auto()
    BF16_BF16_F32_X6 = enum.auto()
    BF16_BF16_F32_X9 = enum.auto()
    TF32_TF32_F32 = enum.auto()
    TF32_TF32_F32_X3 = enum.auto()
    F32_F32_F32 = enum.auto()
    F64_F64_F64 = enum.auto()

    def __repr__(self) -> str:
        return f"DotAlgorithmPreset.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def supported_lhs_types(self) -> tuple[Any, ...] | None:
        """The operand dtypes the algorithm computes in (operands of other dtypes are
        converted to the first); None: any."""
        name = self.name
        if name == "DEFAULT" or name.startswith("ANY_F8"):
            return None
        if name.startswith("F16"):
            return (np.float16,)
        if name in ("BF16_BF16_BF16", "BF16_BF16_F32"):
            return (dtypes.bfloat16, np.float32)
        if name == "F64_F64_F64":
            return (np.float64,)
        return (np.float32,)

    @property
    def supported_rhs_types(self) -> tuple[Any, ...] | None:
        return self.supported_lhs_types

    @property
    def accumulation_type(self) -> Any:
        """The dtype products accumulate in; None: the result's."""
        name = self.name
        if name in ("DEFAULT", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM"):
            return None
        return {"F16_F16_F16": np.float16, "BF16_BF16_BF16": dtypes.bfloat16,
                "F64_F64_F64": np.float64}.get(name, np.float32)


PrecisionLike = (None | str | Precision | tuple[str | Precision, str | Precision]
                 | DotAlgorithm | DotAlgorithmPreset)
DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]


CanonicalPrecision = tuple[Precision, Precision] | DotAlgorithm | DotAlgorithmPreset | None


def canonicalize_precision(precision: PrecisionLike) -> CanonicalPrecision:
    """None, one Precision per operand, or a dot algorithm; None takes
    `default_matmul_precision` from config. Strings name a Precision or a preset.

    >>> canonicalize_precision("highest")
    (Precision.HIGHEST, Precision.HIGHEST)
    >>> canonicalize_precision("F32_F32_F32")
    DotAlgorithmPreset.F32_F32_F32
    """
    if precision is None:
        default = config.read("default_matmul_precision")
        return None if default is None else canonicalize_precision(default)
    if isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
        return precision
    if isinstance(precision, str) and precision in DotAlgorithmPreset.__members__:
        return DotAlgorithmPreset[precision]
    if isinstance(precision, (str, Precision)):
        return (Precision(precision),) * 2
    if isinstance(precision, (tuple, list)) and len(precision) == 2:
        return Precision(precision[0]), Precision(precision[1])
    raise ValueError(f"precision must be None, a lax.Precision, a string, a pair of them "
                     f"(one per operand), a DotAlgorithm or a DotAlgorithmPreset, got "
                     f"{precision!r}")


# Presets XLA's CPU backend computes. The algorithm attribute (operand types,
# accumulator, products) goes to XLA for those it implements, on float32 operands;
# the others are plain products in the algorithm's types.
_CPU_PRESETS = {"DEFAULT", "F16_F16_F16", "F32_F32_F32", "F64_F64_F64", "BF16_BF16_F32",
                "BF16_BF16_F32_X3", "BF16_BF16_F32_X6"}
_CPU_ALGORITHM_ATTRIBUTES = {
    "F32_F32_F32": (np.float32, 1), "BF16_BF16_F32": (dtypes.bfloat16, 1),
    "BF16_BF16_F32_X3": (dtypes.bfloat16, 3), "BF16_BF16_F32_X6": (dtypes.bfloat16, 6)}


def _algorithm_types(algorithm, lhs_dtype: np.dtype, out_dtype: np.dtype
                     ) -> tuple[np.dtype, np.dtype]:
    """(operand compute dtype, accumulation dtype) of a dot algorithm."""
    if isinstance(algorithm, DotAlgorithm):
        return (np.dtype(algorithm.lhs_precision_type), np.dtype(algorithm.accumulation_type))
    supported = algorithm.supported_lhs_types
    compute = lhs_dtype if supported is None or lhs_dtype in map(np.dtype, supported) \
        else np.dtype(supported[0])
    accumulation = algorithm.accumulation_type
    return compute, out_dtype if accumulation is None else np.dtype(accumulation)


def _check_cpu_algorithm(algorithm) -> None:
    if isinstance(algorithm, DotAlgorithmPreset):
        supported = algorithm.name in _CPU_PRESETS
    else:
        types = {np.dtype(t) for t in algorithm[:3]}
        supported = (len(types) == 1 and types <= {np.dtype(np.float16), np.dtype(np.float32),
                                                   np.dtype(np.float64)}
                     and algorithm[3:] == (1, 1, 1, False))
    if not supported:
        raise ValueError(f"The precision '{algorithm}' is not supported by dot_general on CPU")


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
                precision: PrecisionLike = None, preferred_element_type: Any = None, *,
                out_sharding: Any = None) -> Any:
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
    out_sharding = out_sharding_of("dot_general", out_sharding)
    preferred = None if preferred_element_type is None \
        else dtypes.canonicalize_dtype(preferred_element_type)
    dimension_numbers = _canonical_dimension_numbers(dimension_numbers)
    if out_sharding is not None:  # a contraction over a split dimension: the result's
        lhs = unshard_dims(lhs, dimension_numbers[0][0])  # layout is the one asked for
    out = dot_general_p.bind(lhs, rhs, dimension_numbers=dimension_numbers,
                             precision=canonicalize_precision(precision),
                             preferred_element_type=preferred)
    return with_out_sharding(out, out_sharding)


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
                       dtype: np.dtype, layout: Any):
    """The cotangent of one operand (rank `ndim`, dims `contract`/`batch`) given the
    output cotangent and the `other` operand.

    Contracting ct with `other` over other's free dimensions leaves (batch, this
    operand's free dims, other's contracting dims in other's order); a transpose
    puts them back in this operand's order.
    """
    other_free = _free_dims(aval_of(other).ndim, other_contract, other_batch)
    if aval_of(other).dtype != aval_of(ct).dtype:
        other = convert_element_type(other, aval_of(ct).dtype)
    if layout is not None:  # explicit sharding: the cotangent takes its primal's layout
        ct = unshard_dims(ct, cotangent_dims_to_unshard(ct, other, ct_free_of_other,
                                                        other_contract))
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
    if layout is not None:
        product = with_out_sharding(product, layout)
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
                                   lhs.aval.dtype, cotangent_layout(lhs.aval, ct, rhs)), None]
    # For rhs the roles swap, and ct's free dims of the other operand are lhs's.
    return [None, _transpose_operand(ct, lhs, rhs_ndim, rhs_contract, rhs_batch, lhs_contract,
                                     lhs_batch, ct_lhs_free, ct_batch, precision,
                                     rhs.aval.dtype, cotangent_layout(rhs.aval, ct, lhs))]


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
    accumulation, algorithm = aval_out.dtype, {}
    if isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
        _check_cpu_algorithm(precision)
        compute, accumulation = _algorithm_types(precision, aval_in.dtype, aval_out.dtype)
        lhs, rhs = (x if a.dtype == compute else hlo.convert(
            aval_to_ir_type(a.update(dtype=compute)), x) for a, x in zip(ctx.avals_in, (lhs, rhs)))
        attribute = _CPU_ALGORITHM_ATTRIBUTES.get(str(precision))
        if attribute is not None and aval_in.dtype == np.float32:
            operand_type, products = element_type(np.dtype(attribute[0])), attribute[1]
            algorithm["algorithm"] = hlo.DotAlgorithm.get(
                operand_type, operand_type, element_type(accumulation), 1, 1, products, False)
        precision = None
    elif aval_in.dtype.kind in "biu" and aval_out.dtype.kind not in "biu":
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
    out = hlo.dot_general(aval_to_ir_type(aval_out.update(dtype=accumulation)), lhs, rhs,
                          numbers, precision_config=config, **algorithm)
    if accumulation != aval_out.dtype:
        out = hlo.convert(aval_to_ir_type(aval_out), out)
    return [out]


def _pp_dot_general(eqn, context):
    # Nones hidden, dimension numbers as lists (shorter), as JAX prints them.
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    shown = [("dimension_numbers", ((list(lc), list(rc)), (list(lb), list(rb))))]
    shown += [(k, v) for k, v in sorted(eqn.params.items())
              if k != "dimension_numbers" and v is not None]
    return pp_eqn(eqn, context, shown)


ad.defjvp(dot_general_p, _dot_general_jvp_lhs, _dot_general_jvp_rhs)
ad.primitive_transposes[dot_general_p] = _dot_general_transpose
batching.primitive_batchers[dot_general_p] = _dot_general_batch
register_lowering(dot_general_p, _dot_general_lowering)
pp_eqn_rules[dot_general_p] = _pp_dot_general


# --- wrappers ---------------------------------------------------------------------------


def dot(lhs: Any, rhs: Any, *, dimension_numbers: DotDimensionNumbers | None = None,
        precision: PrecisionLike = None, preferred_element_type: Any = None,
        out_sharding: Any = None) -> Any:
    """A contraction: without `dimension_numbers`, the vector-vector, matrix-vector,
    vector-matrix or matrix-matrix product (the last axis of `lhs` with the first of
    `rhs`, each of rank 1 or 2); with them, `dot_general`.

    >>> import numpy as np
    >>> dot(np.ones((2, 3), np.float32), np.ones(3, np.float32))
    Array([3., 3.], dtype=float32)
    """
    if dimension_numbers is None:
        lhs_shape, rhs_shape = aval_of(lhs).shape, aval_of(rhs).shape
        if not (1 <= len(lhs_shape) <= 2 and 1 <= len(rhs_shape) <= 2
                and lhs_shape[-1] == rhs_shape[0]):
            raise ValueError("lax.dot: dimension_numbers must be specified when not "
                             "performing simple un-batched matrix-matrix, matrix-vector, or "
                             f"vector-vector products; got lhs_shape={lhs_shape} "
                             f"rhs_shape={rhs_shape}")
        dimension_numbers = (((len(lhs_shape) - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers, precision=precision,
                       preferred_element_type=preferred_element_type, out_sharding=out_sharding)


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
