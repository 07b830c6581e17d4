"""Convolution: conv_general_dilated and its wrappers conv and conv_with_general_padding.

`conv_general_dilated(lhs, rhs, ...)` slides the kernel `rhs` over the input
`lhs` (a correlation, as in XLA: the kernel is not flipped), with window
strides, explicit or named padding, input ("lhs", transposed-convolution) and
kernel ("rhs", atrous) dilation, and grouped convolutions. Layouts are given
by `ConvDimensionNumbers`: for each operand the positions of its batch (or
output-feature) dimension, its feature (or input-feature) dimension and its
spatial dimensions.

It is bilinear, so its JVP is two convolutions; its transposes are
convolutions too. The input gradient convolves the cotangent with the
spatially reversed kernel, input and output features swapped, strides turned
into input dilation; the kernel gradient convolves the input with the
cotangent, strides turned into kernel dilation. Feature groups become batch
groups in the kernel gradient and the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from lamella.core import ShapedArray, ad, batching, dtypes, structural
from lamella.core.sharding import out_sharding_of
from lamella.core.trace import aval_of
from lamella.lax.contraction import PrecisionLike, canonicalize_precision
from lamella.lax.conversion import convert_element_type
from lamella.lax.explicit_sharding import with_out_sharding
from lamella.lax.lowering import aval_to_ir_type, hlo, ir, register_lowering
from lamella.lax.shapes import rev
from lamella.lax.standard import (
    COMPLEX,
    FLOAT,
    INT,
    check_dtypes,
    standard_primitive,
)

__all__ = ["ConvDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "conv",
           "conv_dimension_numbers", "conv_general_dilated", "conv_general_dilated_p",
           "conv_general_permutations", "conv_with_general_padding", "padtype_to_pads"]


class ConvDimensionNumbers(NamedTuple):
    """Where each operand keeps its dimensions, as tuples of axis numbers.

    `lhs_spec` is (batch, feature, spatial...), `rhs_spec` is (output feature,
    input feature, spatial...), `out_spec` is (batch, feature, spatial...).
    The i-th spatial axis of each spec corresponds across the three.

    >>> ConvDimensionNumbers((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2)).lhs_spec
    (0, 3, 1, 2)
    """

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]


ConvGeneralDilatedDimensionNumbers = (None | ConvDimensionNumbers
                                      | tuple[str, str, str])


def conv_general_permutations(dimension_numbers: tuple[str, str, str]
                              ) -> tuple[tuple[int, ...], ...]:
    """The axis permutations for layout strings like ('NHWC', 'HWIO', 'NHWC').

    'N' and 'C' name the batch and feature axes of lhs and out, 'O' and 'I' the
    output and input features of rhs; the other letters are spatial axes, ordered
    as they appear in the rhs string.

    >>> conv_general_permutations(("NHWC", "HWIO", "NHWC"))
    ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for name, spec, pair in zip(("lhs", "rhs", "out"), dimension_numbers, pairs):
        if not isinstance(spec, str):
            raise TypeError(f"conv dimension_numbers: the {name} spec must be a string, got "
                            f"{spec!r}")
        if len(set(spec)) != len(spec):
            raise TypeError(f"conv dimension_numbers: the {name} spec {spec!r} repeats a "
                            "letter")
        for c in pair:
            if spec.count(c) != 1:
                raise TypeError(f"conv dimension_numbers: the {name} spec {spec!r} must "
                                f"contain {pair[0]!r} and {pair[1]!r} once each")
    if not len(lhs_spec) == len(rhs_spec) == len(out_spec):
        raise TypeError(f"conv dimension_numbers: specs {dimension_numbers} must have one "
                        "length")
    rhs_spatial = [c for c in rhs_spec if c not in "OI"]
    for name, spec in (("lhs", lhs_spec), ("out", out_spec)):
        if sorted(c for c in spec if c not in "NC") != sorted(rhs_spatial):
            raise TypeError(f"conv dimension_numbers: the spatial letters of the {name} spec "
                            f"{spec!r} must be those of the rhs spec {rhs_spec!r}")

    def perm(spec: str, pair: tuple[str, str]) -> tuple[int, ...]:
        return (spec.index(pair[0]), spec.index(pair[1]),
                *(spec.index(c) for c in rhs_spatial))

    return tuple(perm(spec, pair) for spec, pair in zip(dimension_numbers, pairs))


def conv_dimension_numbers(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                           dimension_numbers: ConvGeneralDilatedDimensionNumbers
                           ) -> ConvDimensionNumbers:
    """Canonical `ConvDimensionNumbers` from None (NCHW, OIHW, NCHW), layout strings
    or a `ConvDimensionNumbers`, checked against the operands' ranks.

    >>> conv_dimension_numbers((1, 5, 5, 2), (3, 3, 2, 4), ("NHWC", "HWIO", "NHWC"))
    ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """
    ndim = len(lhs_shape)
    if len(rhs_shape) != ndim:
        raise TypeError(f"conv_general_dilated: lhs and rhs must have one rank, got shapes "
                        f"{tuple(lhs_shape)} and {tuple(rhs_shape)}")
    if ndim < 2:
        raise TypeError(f"conv_general_dilated: operands need rank >= 2 (batch and feature "
                        f"dimensions), got shape {tuple(lhs_shape)}")
    if dimension_numbers is None:
        spec = tuple(range(ndim))
        return ConvDimensionNumbers(spec, spec, spec)
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        specs = tuple(tuple(int(d) for d in s) for s in dimension_numbers)
    elif (isinstance(dimension_numbers, (tuple, list)) and len(dimension_numbers) == 3
          and all(isinstance(s, str) for s in dimension_numbers)):
        specs = conv_general_permutations(tuple(dimension_numbers))
    else:
        raise TypeError("conv_general_dilated: dimension_numbers must be None, a "
                        "ConvDimensionNumbers or a triple of layout strings such as "
                        f"('NHWC', 'HWIO', 'NHWC'), got {dimension_numbers!r}")
    for name, spec in zip(("lhs", "rhs", "out"), specs):
        if sorted(spec) != list(range(ndim)):
            raise TypeError(f"conv_general_dilated: the {name} spec {spec} must be a "
                            f"permutation of the {ndim} axes of the operands (shapes "
                            f"{tuple(lhs_shape)} and {tuple(rhs_shape)})")
    return ConvDimensionNumbers(*specs)


def padding_pairs(name: str, padding: Any, count: int, per: str) -> tuple[tuple[int, int], ...]:
    """Explicit padding as `count` (low, high) int pairs, with errors naming `name`;
    `per` says what each pair belongs to, for the message."""
    try:
        pairs = tuple((int(lo), int(hi)) for lo, hi in padding)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: padding must be a string or (low, high) pairs, got "
                        f"{padding!r}") from None
    if len(pairs) != count:
        raise TypeError(f"{name}: padding {pairs} must have one pair per {per}")
    return pairs


def padtype_to_pads(in_shape: Sequence[int], window_shape: Sequence[int],
                    window_strides: Sequence[int], padding: str) -> list[tuple[int, int]]:
    """(low, high) pairs for 'VALID', 'SAME' or 'SAME_LOWER' padding.

    'SAME' pads so that the output has ceil(size / stride) entries, the odd
    entry of padding going at the end; 'SAME_LOWER' puts it at the start.

    >>> padtype_to_pads((5,), (2,), (1,), "SAME")
    [(0, 1)]
    """
    kind = padding.upper() if isinstance(padding, str) else padding
    if kind == "VALID":
        return [(0, 0)] * len(in_shape)
    if kind not in ("SAME", "SAME_LOWER"):
        raise ValueError(f"Unknown padding {padding!r}: use 'SAME', 'SAME_LOWER', 'VALID' or "
                         "a sequence of (low, high) pairs")
    pads = []
    for size, window, stride in zip(in_shape, window_shape, window_strides):
        out = -(-size // stride)
        total = max(0, (out - 1) * stride + window - size)
        small, large = total // 2, total - total // 2
        pads.append((small, large) if kind == "SAME" else (large, small))
    return pads


def _dilate(sizes: Sequence[int], dilation: Sequence[int]) -> tuple[int, ...]:
    return tuple(0 if s == 0 else 1 + d * (s - 1) for s, d in zip(sizes, dilation))


def _ints(name: str, values: Sequence[int] | None, n: int, default: int = 1
          ) -> tuple[int, ...]:
    if values is None:
        return (default,) * n
    values = tuple(int(v) for v in values)
    if len(values) != n:
        raise TypeError(f"conv_general_dilated: {name} {values} must have one entry per "
                        f"spatial dimension ({n})")
    if any(v < 1 for v in values):
        raise TypeError(f"conv_general_dilated: {name} {values} must be positive")
    return values


# --- conv_general_dilated -------------------------------------------------------------

conv_general_dilated_p = standard_primitive("conv_general_dilated")


def conv_general_dilated(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: Any,
                         lhs_dilation: Sequence[int] | None = None,
                         rhs_dilation: Sequence[int] | None = None,
                         dimension_numbers: ConvGeneralDilatedDimensionNumbers = None,
                         feature_group_count: int = 1, batch_group_count: int = 1,
                         precision: PrecisionLike = None,
                         preferred_element_type: Any = None, out_sharding: Any = None) -> Any:
    """A general n-dimensional convolution (XLA's ConvGeneralDilated).

    `padding` is 'VALID', 'SAME', 'SAME_LOWER' or one (low, high) pair per
    spatial dimension (negative values crop). `lhs_dilation` inserts zeros
    between input entries (a transposed convolution), `rhs_dilation` between
    kernel entries (atrous). With `feature_group_count` g the input features
    split into g groups, each convolved with its share of the kernel's output
    features; with `batch_group_count` the batch splits instead.

    >>> import numpy as np
    >>> x = np.ones((1, 1, 4, 4), np.float32)      # NCHW
    >>> k = np.ones((2, 1, 3, 3), np.float32)      # OIHW
    >>> conv_general_dilated(x, k, (1, 1), "VALID").shape
    (1, 2, 2, 2)
    >>> np.asarray(conv_general_dilated(x, k, (2, 2), "SAME"))[0, 0]
    array([[9., 6.],
           [6., 4.]], dtype=float32)
    """
    out_sharding = out_sharding_of("conv_general_dilated", out_sharding)
    lhs_shape, rhs_shape = aval_of(lhs).shape, aval_of(rhs).shape
    dnums = conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers)
    n = len(lhs_shape) - 2
    window_strides = _ints("window_strides", window_strides, n)
    lhs_dilation = _ints("lhs_dilation", lhs_dilation, n)
    rhs_dilation = _ints("rhs_dilation", rhs_dilation, n)
    if isinstance(padding, str):
        window = _dilate([rhs_shape[d] for d in dnums.rhs_spec[2:]], rhs_dilation)
        padding = padtype_to_pads([lhs_shape[d] for d in dnums.lhs_spec[2:]], window,
                                  window_strides, padding)
    padding = padding_pairs("conv_general_dilated", padding, n, f"spatial dimension ({n})")
    preferred = None if preferred_element_type is None \
        else dtypes.canonicalize_dtype(preferred_element_type)
    # The sharding rule types the result as `out_sharding` asks (explicit axes); the
    # reshard lays it out so where nothing is typed (an Auto mesh).
    return with_out_sharding(conv_general_dilated_p.bind(
        lhs, rhs, window_strides=window_strides, padding=padding, lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation, dimension_numbers=dnums,
        feature_group_count=int(feature_group_count), batch_group_count=int(batch_group_count),
        precision=canonicalize_precision(precision), preferred_element_type=preferred,
        out_sharding=out_sharding), out_sharding)


def _conv_shape(lhs_shape, rhs_shape, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count) -> tuple[int, ...]:
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    batch, features = lhs_shape[lhs_spec[0]], lhs_shape[lhs_spec[1]]
    out_features, in_features = rhs_shape[rhs_spec[0]], rhs_shape[rhs_spec[1]]
    if feature_group_count < 1 or batch_group_count < 1:
        raise TypeError(f"conv_general_dilated: feature_group_count ({feature_group_count}) "
                        f"and batch_group_count ({batch_group_count}) must be positive")
    if feature_group_count > 1 and batch_group_count > 1:
        raise TypeError("conv_general_dilated: at most one of feature_group_count and "
                        "batch_group_count may exceed 1")
    if features != in_features * feature_group_count:
        raise TypeError(f"conv_general_dilated: lhs feature dimension (size {features}) must "
                        f"equal the rhs input feature dimension (size {in_features}) times "
                        f"feature_group_count ({feature_group_count}), for lhs shape "
                        f"{lhs_shape} and rhs shape {rhs_shape}")
    for count, name in ((feature_group_count, "feature_group_count"),
                        (batch_group_count, "batch_group_count")):
        if out_features % count:
            raise TypeError(f"conv_general_dilated: the rhs output feature dimension (size "
                            f"{out_features}) must be a multiple of {name} ({count})")
    if batch % batch_group_count:
        raise TypeError(f"conv_general_dilated: the lhs batch dimension (size {batch}) must "
                        f"be a multiple of batch_group_count ({batch_group_count})")
    in_spatial = _dilate([lhs_shape[d] for d in lhs_spec[2:]], lhs_dilation)
    window = _dilate([rhs_shape[d] for d in rhs_spec[2:]], rhs_dilation)
    spatial = []
    for size, k, (lo, hi), stride in zip(in_spatial, window, padding, window_strides):
        padded = size + lo + hi
        spatial.append(0 if padded < k or k == 0 else (padded - k) // stride + 1)
    ordered = (batch // batch_group_count, out_features, *spatial)
    shape = [0] * len(ordered)
    for d, size in zip(out_spec, ordered):
        shape[d] = size
    return tuple(shape)


@conv_general_dilated_p.def_abstract_eval
def _conv_abstract_eval(lhs: ShapedArray, rhs: ShapedArray, *, precision,
                        preferred_element_type, out_sharding, **params) -> ShapedArray:
    check_dtypes("conv_general_dilated", (*INT, FLOAT, COMPLEX), lhs, rhs)
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"conv_general_dilated requires lhs and rhs of one dtype, got "
                        f"{lhs.dtype.name} and {rhs.dtype.name} (lax does not promote)")
    shape = _conv_shape(lhs.shape, rhs.shape, **params)
    dtype = lhs.dtype if preferred_element_type is None else preferred_element_type
    if preferred_element_type is not None and dtypes.is_float(lhs.dtype) \
            and not dtypes.is_float(preferred_element_type):
        raise TypeError(f"conv_general_dilated: preferred_element_type "
                        f"{np.dtype(preferred_element_type).name} is incompatible with "
                        f"floating inputs of dtype {lhs.dtype.name}")
    return ShapedArray(shape, dtype, lhs.weak_type and rhs.weak_type)


def _conv_jvp_lhs(t, lhs, rhs, **params):
    return conv_general_dilated_p.bind(t, rhs, **params)


def _conv_jvp_rhs(t, lhs, rhs, **params):
    return conv_general_dilated_p.bind(lhs, t, **params)


def _spec_transpose(spec: tuple[int, ...]) -> tuple[int, ...]:
    return (spec[1], spec[0], *spec[2:])


def _reshape_axis_into(src: int, dst: int, x: Any) -> Any:
    """Merges axis `src` into axis `dst` (numbered after removing `src`), as its major part."""
    shape = aval_of(x).shape
    perm = [i for i in range(len(shape)) if i != src]
    perm.insert(dst, src)
    x = structural.transpose(x, tuple(perm)) if perm != list(range(len(shape))) else x
    new_shape = [shape[i] for i in range(len(shape)) if i != src]
    new_shape[dst] *= shape[src]
    return structural.reshape(x, tuple(new_shape))


def _reshape_axis_out_of(src: int, major: int, x: Any) -> Any:
    """Splits axis `src` into (major, rest)."""
    shape = list(aval_of(x).shape)
    shape[src:src + 1] = [major, shape[src] // major]
    return structural.reshape(x, tuple(shape))


def _vjp_lhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                     rhs_dilation) -> tuple[tuple[int, int], ...]:
    # The cotangent, dilated by the strides, padded so that a full correlation
    # with the reversed kernel lands on every (dilated) input position.
    lhs_dilated = _dilate(in_shape, lhs_dilation)
    rhs_dilated = _dilate(window, rhs_dilation)
    out_dilated = _dilate(out_shape, strides)
    before = [k - lo - 1 for k, (lo, _) in zip(rhs_dilated, padding)]
    after = [i + k - 1 - o - b for i, k, o, b in zip(lhs_dilated, rhs_dilated, out_dilated,
                                                      before)]
    return tuple(zip(before, after))


def _vjp_rhs_padding(in_shape, window, strides, out_shape, padding, lhs_dilation,
                     rhs_dilation) -> tuple[tuple[int, int], ...]:
    # The input correlated with the stride-dilated cotangent as the window: the
    # low padding stays, the high padding makes the output the kernel's size.
    lhs_dilated = _dilate(in_shape, lhs_dilation)
    rhs_dilated = _dilate(window, rhs_dilation)
    out_dilated = _dilate(out_shape, strides)
    return tuple((lo, o - i + k - lo - 1) for i, k, o, (lo, _) in
                 zip(lhs_dilated, rhs_dilated, out_dilated, padding))


def _cast(x: Any, dtype: np.dtype) -> Any:
    return x if aval_of(x).dtype == dtype else convert_element_type(x, dtype)


def _conv_transpose_lhs(ct, rhs, lhs_aval, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, precision):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    rhs = _cast(rhs, aval_of(ct).dtype)
    group_count = feature_group_count
    if feature_group_count > 1 or batch_group_count > 1:
        # The transposed kernel swaps its feature dimensions; the groups must stay
        # the major part of its (new) output feature dimension.
        count = max(feature_group_count, batch_group_count)
        rhs = _reshape_axis_out_of(rhs_spec[0], count, rhs)
        rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
        group_count = count
    rhs_shape = aval_of(rhs).shape
    ct_shape = aval_of(ct).shape
    pads = _vjp_lhs_padding([lhs_aval.shape[d] for d in lhs_spec[2:]],
                            [rhs_shape[d] for d in rhs_spec[2:]], window_strides,
                            [ct_shape[d] for d in out_spec[2:]], padding, lhs_dilation,
                            rhs_dilation)
    out = conv_general_dilated_p.bind(
        ct, rev(rhs, rhs_spec[2:]), window_strides=lhs_dilation, padding=pads,
        lhs_dilation=window_strides, rhs_dilation=rhs_dilation,
        dimension_numbers=ConvDimensionNumbers(out_spec, _spec_transpose(rhs_spec), lhs_spec),
        feature_group_count=group_count, batch_group_count=1, precision=precision,
        preferred_element_type=None, out_sharding=None)
    if batch_group_count > 1:
        # The groups came out in the feature dimension; they belong to the batch.
        out = _reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
        out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
    return _cast(out, lhs_aval.dtype)


def _conv_transpose_rhs(ct, lhs, rhs_aval, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count,
                        batch_group_count, precision):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    lhs = _cast(lhs, aval_of(ct).dtype)
    # Feature groups of the forward conv pair input features with output features,
    # which the kernel gradient sees as batch groups, and the other way round.
    feature_groups, batch_groups = batch_group_count, feature_group_count
    lhs_shape, ct_shape = aval_of(lhs).shape, aval_of(ct).shape
    pads = _vjp_rhs_padding([lhs_shape[d] for d in lhs_spec[2:]],
                            [rhs_aval.shape[d] for d in rhs_spec[2:]], window_strides,
                            [ct_shape[d] for d in out_spec[2:]], padding, lhs_dilation,
                            rhs_dilation)
    out = conv_general_dilated_p.bind(
        lhs, ct, window_strides=rhs_dilation, padding=pads, lhs_dilation=lhs_dilation,
        rhs_dilation=window_strides,
        dimension_numbers=ConvDimensionNumbers(_spec_transpose(lhs_spec),
                                               _spec_transpose(out_spec),
                                               _spec_transpose(rhs_spec)),
        feature_group_count=feature_groups, batch_group_count=batch_groups,
        precision=precision, preferred_element_type=None, out_sharding=None)
    return _cast(out, rhs_aval.dtype)


def _conv_transpose(ct, lhs, rhs, *, preferred_element_type, out_sharding, **params):
    if type(ct) is ad.Zero:
        return [None, None]
    if ad.is_undefined_primal(lhs):
        return [_conv_transpose_lhs(ct, rhs, lhs.aval, **params), None]
    return [None, _conv_transpose_rhs(ct, lhs, rhs.aval, **params)]


def _conv_batch(args, dims, *, dimension_numbers, feature_group_count, batch_group_count,
                **params):
    # The vmapped axis folds into a dimension the conv already maps over: the
    # lhs batch for a batched input, the output features (as extra feature
    # groups when both are batched) for a batched kernel.
    (lhs, rhs), (ld, rd) = args, dims
    lhs_spec, rhs_spec, out_spec = dimension_numbers

    def bind(x, y, fgc=feature_group_count, bgc=batch_group_count):
        return conv_general_dilated_p.bind(x, y, dimension_numbers=dimension_numbers,
                                           feature_group_count=fgc, batch_group_count=bgc,
                                           **params)

    if ld is not None and rd is not None:
        size = aval_of(lhs).shape[ld]
        if batch_group_count > 1:
            new_lhs = _reshape_axis_into(ld, lhs_spec[0], lhs)
            fgc, bgc = feature_group_count, batch_group_count * size
        else:
            new_lhs = _reshape_axis_into(ld, lhs_spec[1], lhs)
            fgc, bgc = feature_group_count * size, batch_group_count
        out = bind(new_lhs, _reshape_axis_into(rd, rhs_spec[0], rhs), fgc, bgc)
        return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    if ld is not None:
        size = aval_of(lhs).shape[ld]
        if batch_group_count == 1:
            out = bind(_reshape_axis_into(ld, lhs_spec[0], lhs), rhs)
        else:
            # Batch groups are the major part of the batch dimension: keep them
            # outermost, with the vmapped axis inside them.
            new_lhs = _reshape_axis_out_of(lhs_spec[0] + int(ld <= lhs_spec[0]),
                                           batch_group_count, lhs)
            new_lhs = _reshape_axis_into(ld + int(lhs_spec[0] < ld), lhs_spec[0] + 1, new_lhs)
            new_lhs = _reshape_axis_into(lhs_spec[0], lhs_spec[0], new_lhs)
            out = bind(new_lhs, rhs)
        return _reshape_axis_out_of(out_spec[0], size, out), out_spec[0]
    size = aval_of(rhs).shape[rd]
    if feature_group_count == 1 and batch_group_count == 1:
        out = bind(lhs, _reshape_axis_into(rd, rhs_spec[0], rhs))
        return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
    # Groups are the major part of the output features: factor them out, put the
    # vmapped axis inside them, and undo that on the output.
    groups = max(feature_group_count, batch_group_count)
    new_rhs = _reshape_axis_out_of(rhs_spec[0] + int(rd <= rhs_spec[0]), groups, rhs)
    new_rhs = _reshape_axis_into(rd + int(rhs_spec[0] < rd), rhs_spec[0] + 1, new_rhs)
    new_rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[0], new_rhs)
    out = bind(lhs, new_rhs)
    out = _reshape_axis_out_of(out_spec[1], groups, out)
    out = _reshape_axis_out_of(out_spec[1] + 1, size, out)
    return _reshape_axis_into(out_spec[1], out_spec[1] + 1, out), out_spec[1]


def _conv_lowering(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                   dimension_numbers, feature_group_count, batch_group_count, precision,
                   preferred_element_type, out_sharding):
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
    if aval_in.dtype != aval_out.dtype and aval_in.dtype.kind in "biu" \
            and aval_out.dtype.kind not in "biu":
        # XLA's convolution takes operands and result of one kind.
        lhs, rhs = (hlo.convert(aval_to_ir_type(a.update(dtype=aval_out.dtype)), x)
                    for a, x in zip(ctx.avals_in, (lhs, rhs)))
    numbers = hlo.ConvDimensionNumbers.get(
        input_batch_dimension=lhs_spec[0], input_feature_dimension=lhs_spec[1],
        input_spatial_dimensions=list(lhs_spec[2:]),
        kernel_output_feature_dimension=rhs_spec[0],
        kernel_input_feature_dimension=rhs_spec[1],
        kernel_spatial_dimensions=list(rhs_spec[2:]),
        output_batch_dimension=out_spec[0], output_feature_dimension=out_spec[1],
        output_spatial_dimensions=list(out_spec[2:]))
    config = None if precision is None else ir.ArrayAttr.get(
        [hlo.PrecisionAttr.get(p.name) for p in precision])
    n = len(window_strides)
    pads = ir.DenseIntElementsAttr.get(np.asarray(padding, np.int64).reshape(n, 2))
    op = hlo.ConvolutionOp(aval_to_ir_type(aval_out), lhs, rhs, numbers, feature_group_count,
                           batch_group_count, window_strides=list(window_strides),
                           padding=pads, lhs_dilation=list(lhs_dilation),
                           rhs_dilation=list(rhs_dilation), precision_config=config)
    return [op.result]


ad.defjvp(conv_general_dilated_p, _conv_jvp_lhs, _conv_jvp_rhs)
ad.primitive_transposes[conv_general_dilated_p] = _conv_transpose
batching.primitive_batchers[conv_general_dilated_p] = _conv_batch
register_lowering(conv_general_dilated_p, _conv_lowering)


# --- wrappers ---------------------------------------------------------------------------


def conv(lhs: Any, rhs: Any, window_strides: Sequence[int], padding: str,
         precision: PrecisionLike = None, preferred_element_type: Any = None) -> Any:
    """A convolution in NCHW/OIHW layout with named padding, no dilation.

    >>> import numpy as np
    >>> out = conv(np.ones((1, 1, 3, 3), np.float32), np.ones((1, 1, 2, 2), np.float32),
    ...            (1, 1), "VALID")
    >>> np.asarray(out)[0, 0]
    array([[4., 4.],
           [4., 4.]], dtype=float32)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                                preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs: Any, rhs: Any, window_strides: Sequence[int],
                              padding: Any, lhs_dilation: Sequence[int] | None,
                              rhs_dilation: Sequence[int] | None,
                              precision: PrecisionLike = None,
                              preferred_element_type: Any = None) -> Any:
    """A convolution in NCHW/OIHW layout with explicit padding and dilations.

    >>> import numpy as np
    >>> conv_with_general_padding(np.ones((1, 1, 3, 3), np.float32),
    ...                           np.ones((1, 1, 2, 2), np.float32), (1, 1),
    ...                           [(1, 0), (0, 0)], None, None).shape
    (1, 1, 3, 2)
    """
    return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                                rhs_dilation=rhs_dilation, precision=precision,
                                preferred_element_type=preferred_element_type)
