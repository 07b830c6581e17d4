"""Convolutions built from `conv_general_dilated`, and convolution shape arithmetic.

- `conv_transpose`: the fractionally strided convolution (Keras/TF layout by
  default), padding as for the forward convolution it undoes.
- `conv_general_dilated_patches`: each output position's receptive field,
  flattened into the feature dimension (a convolution with an identity kernel).
- `conv_general_dilated_local`: an unshared (locally connected) convolution, a
  different kernel per output position: patches contracted with the kernel.
- `conv_shape_tuple`, `conv_general_shape_tuple`, `conv_transpose_shape_tuple`:
  the output shapes, computed without tracing.

Each is a composition of lax primitives, so it differentiates and batches.

>>> import numpy as np
>>> conv_shape_tuple((1, 3, 8, 8), (4, 3, 3, 3), (2, 2), "SAME")
(1, 4, 4, 4)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core.trace import aval_of
from lamella.lax.contraction import Precision, PrecisionLike, canonicalize_precision, dot_general
from lamella.lax.conversion import convert_element_type
from lamella.lax.convolution import (
    ConvGeneralDilatedDimensionNumbers,
    conv_dimension_numbers,
    conv_general_dilated,
    conv_general_permutations,
    padtype_to_pads,
)
from lamella.lax.logical import eq
from lamella.lax.shapes import broadcast_in_dim, broadcasted_iota, reshape, rev, transpose

__all__ = ["conv_general_dilated_local", "conv_general_dilated_patches",
           "conv_general_shape_tuple", "conv_shape_tuple", "conv_transpose",
           "conv_transpose_shape_tuple"]


# --- shapes -------------------------------------------------------------------


def conv_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                     strides: Sequence[int], pads: Any, batch_group_count: int = 1
                     ) -> tuple[int, ...]:
    """The output shape of a convolution in NCHW/OIHW layout; `pads` is a padding
    string or one (low, high) pair per spatial dimension.

    >>> conv_shape_tuple((2, 1, 5, 5), (3, 1, 2, 2), (1, 1), [(0, 0), (1, 1)])
    (2, 3, 4, 6)
    """
    if isinstance(pads, str):
        pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                        f"{len(lhs_shape) - 2}, got {len(pads)}.")
    padded = [d + lo + hi for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise ValueError(f"Negative padding is larger than the size of the corresponding "
                         f"dimension: got padding={pads} for lhs_shape[2:]={lhs_shape[2:]}")
    spatial = tuple(0 if p < k else (p - k) // s + 1
                    for p, k, s in zip(padded, rhs_shape[2:], strides))
    return (lhs_shape[0] // batch_group_count, rhs_shape[0], *spatial)


def conv_general_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                             window_strides: Sequence[int], padding: Any,
                             dimension_numbers: Any) -> tuple[int, ...]:
    """The output shape of `conv_general_dilated` (no dilation) with layouts given by
    `dimension_numbers` (strings such as ("NHWC", "HWIO", "NHWC")).

    >>> conv_general_shape_tuple((1, 8, 8, 3), (3, 3, 3, 4), (1, 1), "VALID",
    ...                          ("NHWC", "HWIO", "NHWC"))
    (1, 6, 6, 4)
    """
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    out = conv_shape_tuple([lhs_shape[i] for i in lhs_perm], [rhs_shape[i] for i in rhs_perm],
                           window_strides, padding)
    return tuple(out[i] for i in np.argsort(out_perm))


def _transpose_padding(k: int, s: int, padding: Any) -> tuple[int, int]:
    """The padding of a transposed convolution that undoes a forward one padded
    `padding` ('SAME', 'VALID' or a (low, high) pair), for kernel size k, stride s."""
    if padding == "SAME":
        total = k + s - 2
        low = k - 1 if s > k - 1 else int(np.ceil(total / 2))
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        low = k - 1
    elif isinstance(padding, tuple):
        low, high = (k - p - 1 for p in padding)
        total = low + high
    else:
        raise ValueError(f"Invalid padding mode: {padding}")
    return low, total - low


def conv_transpose_shape_tuple(lhs_shape: Sequence[int], rhs_shape: Sequence[int],
                               window_strides: Sequence[int], padding: Any,
                               dimension_numbers: Any) -> tuple[int, ...]:
    """The output shape of `conv_transpose` (no dilation).

    >>> conv_transpose_shape_tuple((1, 4, 4, 3), (3, 3, 3, 2), (2, 2), "SAME",
    ...                            ("NHWC", "HWIO", "NHWC"))
    (1, 8, 8, 2)
    """
    lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
    lhs = [lhs_shape[i] for i in lhs_perm]
    rhs = [rhs_shape[i] for i in rhs_perm]
    if isinstance(padding, str):
        padding = [_transpose_padding(k, s, padding) for k, s in zip(rhs[2:], window_strides)]
    spatial = [(i - 1) * s - k + 2 + sum(p)
               for i, k, s, p in zip(lhs[2:], rhs[2:], window_strides, padding)]
    out = (lhs[0], rhs[0], *spatial)
    return tuple(out[i] for i in np.argsort(out_perm))


# --- conv_transpose -------------------------------------------------------------

_TRANSPOSE_LAYOUTS = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"),
                      4: ("NHWC", "HWIO", "NHWC"), 5: ("NHWDC", "HWDIO", "NHWDC")}


def conv_transpose(lhs: Any, rhs: Any, strides: Sequence[int], padding: Any,
                   rhs_dilation: Sequence[int] | None = None,
                   dimension_numbers: ConvGeneralDilatedDimensionNumbers = None,
                   transpose_kernel: bool = False, precision: PrecisionLike = None,
                   preferred_element_type: Any = None,
                   use_consistent_padding: bool = False) -> Any:
    """A transposed ("fractionally strided") convolution: the input dilated by
    `strides`, convolved with `rhs` (not flipped, unless `transpose_kernel`, which
    also swaps its feature axes, as Keras' Conv2DTranspose).

    'SAME' and 'VALID' give the padding of the forward convolution this one undoes;
    explicit (low, high) pairs are the transposed convolution's own padding, unless
    `use_consistent_padding` (then they too are the forward convolution's, as in
    PyTorch). Layouts default to TensorFlow's ("NHWC", "HWIO", "NHWC").

    >>> x = np.ones((1, 2, 2, 1), np.float32)
    >>> conv_transpose(x, np.ones((3, 3, 1, 1), np.float32), (2, 2), "SAME").shape
    (1, 4, 4, 1)
    """
    ndim = aval_of(lhs).ndim
    if ndim != aval_of(rhs).ndim or ndim < 2:
        raise ValueError(f"conv_transpose: lhs and rhs must have one rank of at least 2, got "
                         f"{aval_of(lhs).shape} and {aval_of(rhs).shape}")
    if dimension_numbers is None:
        if ndim not in _TRANSPOSE_LAYOUTS:
            raise ValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = _TRANSPOSE_LAYOUTS[ndim]
    rhs_shape = aval_of(rhs).shape
    dn = conv_dimension_numbers(aval_of(lhs).shape, rhs_shape, dimension_numbers)
    kernel = [rhs_shape[d] for d in dn.rhs_spec[2:]]
    rhs_dilation = (1,) * (ndim - 2) if rhs_dilation is None else tuple(rhs_dilation)
    if use_consistent_padding or padding in ("SAME", "VALID"):
        effective = [0 if k == 0 else 1 + r * (k - 1) for k, r in zip(kernel, rhs_dilation)]
        per_dim = [padding] * len(strides) if isinstance(padding, str) else padding
        pads = [_transpose_padding(k, s, tuple(p) if not isinstance(p, str) else p)
                for k, s, p in zip(effective, strides, per_dim)]
    else:
        pads = padding
    if transpose_kernel:
        rhs = rev(rhs, dn.rhs_spec[2:])
        perm = list(range(ndim))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        rhs = transpose(rhs, perm)
    return conv_general_dilated(lhs, rhs, (1,) * (ndim - 2), pads, strides, rhs_dilation, dn,
                                precision=precision,
                                preferred_element_type=preferred_element_type)


# --- patches and local (unshared) convolutions ------------------------------------


def conv_general_dilated_patches(lhs: Any, filter_shape: Sequence[int],
                                 window_strides: Sequence[int], padding: Any,
                                 lhs_dilation: Sequence[int] | None = None,
                                 rhs_dilation: Sequence[int] | None = None,
                                 dimension_numbers: ConvGeneralDilatedDimensionNumbers = None,
                                 precision: Precision | None = None,
                                 preferred_element_type: Any = None) -> Any:
    """The receptive field of each output position of `conv_general_dilated`,
    flattened into the output's feature dimension, ordered (input feature,
    then the window's spatial positions in the order of the kernel layout).

    >>> x = np.arange(9, dtype=np.float32).reshape(1, 1, 3, 3)
    >>> np.asarray(conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID"))[0, :, 0, 0]
    array([0., 1., 3., 4.], dtype=float32)
    """
    filter_shape = tuple(int(d) for d in filter_shape)
    lhs_shape = aval_of(lhs).shape
    dn = conv_dimension_numbers(lhs_shape, (1, 1) + filter_shape, dimension_numbers)
    window = math.prod(filter_shape)
    channels = lhs_shape[dn.lhs_spec[1]]
    dtype = aval_of(lhs).dtype
    eye = convert_element_type(eq(broadcasted_iota(np.int32, (window, window), 0),
                                  broadcasted_iota(np.int32, (window, window), 1)), dtype)
    kernel = broadcast_in_dim(eye, (channels, window, window), (1, 2))
    kernel = reshape(kernel, (channels * window, 1, *filter_shape))
    # Put the (out feature, in feature) axes where the kernel layout wants them.
    order = [d for d in range(len(filter_shape) + 2) if d not in dn.rhs_spec[:2]]
    source = {dn.rhs_spec[0]: 0, dn.rhs_spec[1]: 1}
    source.update({d: 2 + i for i, d in enumerate(order)})
    kernel = transpose(kernel, [source[d] for d in range(len(filter_shape) + 2)])
    return conv_general_dilated(
        lhs, kernel, window_strides, padding, lhs_dilation, rhs_dilation, dn,
        feature_group_count=channels,
        precision=None if precision is None else (Precision(precision), Precision.DEFAULT),
        preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs: Any, rhs: Any, window_strides: Sequence[int],
                               padding: Any, filter_shape: Sequence[int],
                               lhs_dilation: Sequence[int] | None = None,
                               rhs_dilation: Sequence[int] | None = None,
                               dimension_numbers: ConvGeneralDilatedDimensionNumbers = None,
                               precision: PrecisionLike = None) -> Any:
    """An unshared convolution (a locally connected layer): output position p uses
    its own kernel `rhs[..., p]`. `rhs`'s spatial axes are the output's; its input
    feature axis holds the flattened receptive field as
    `conv_general_dilated_patches` lays it out.

    >>> x = np.ones((1, 1, 3, 3), np.float32)
    >>> w = np.ones((1, 4, 2, 2), np.float32)      # O, I * window, H, W
    >>> conv_general_dilated_local(x, w, (1, 1), "VALID", (2, 2)).shape
    (1, 1, 2, 2)
    """
    canonical = canonicalize_precision(precision)
    if canonical is not None and not (isinstance(canonical, tuple) and len(canonical) == 2):
        raise ValueError(f"Unsupported precision for conv_general_dilated_local: {precision}")
    patches = conv_general_dilated_patches(
        lhs, filter_shape, window_strides, padding, lhs_dilation, rhs_dilation,
        dimension_numbers, precision=None if canonical is None else canonical[0])
    lhs_spec, rhs_spec, out_spec = conv_dimension_numbers(
        aval_of(lhs).shape, (1, 1) + tuple(filter_shape), dimension_numbers)
    spatial_out, spatial_rhs = list(out_spec[2:]), list(rhs_spec[2:])
    order = sorted(range(len(spatial_out)), key=lambda k: spatial_out[k])
    dn = (((out_spec[1],), (rhs_spec[1],)),
          (tuple(sorted(spatial_out)), tuple(spatial_rhs[k] for k in order)))
    out = dot_general(patches, rhs, dn, precision=precision)
    # dot_general leaves (spatial..., batch, out feature): move the last two home.
    ndim = aval_of(out).ndim
    rest = [d for d in range(ndim) if d not in (out_spec[0], out_spec[1])]
    source = {out_spec[0]: ndim - 2, out_spec[1]: ndim - 1}
    source.update({d: i for i, d in enumerate(rest)})
    return transpose(out, [source[d] for d in range(ndim)])
