"""conv_general_dilated against a direct NumPy reference (sliding windows and a
tensordot per group) across strides, paddings, dilations, layouts and groups,
through lamella.lax.test_util (values, jit, input and kernel gradients, vmap of
each operand and both), plus the wrappers, dimension-number parsing and errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import sliding_window_view

import lamella.core as lc
from lamella.lax import convolution as C
from lamella.lax.test_util import check, check_values

RNG = np.random.default_rng(0)


def _dilate_pad(x, dilation, padding):
    """Zeros between entries of the trailing axes, then (low, high) edge padding
    (negative crops), as XLA does to a conv input."""
    lead = x.ndim - len(dilation)
    shape = x.shape[:lead] + tuple((s - 1) * d + 1 if s else 0
                                   for s, d in zip(x.shape[lead:], dilation))
    out = np.zeros(shape, x.dtype)
    out[(slice(None),) * lead + tuple(slice(None, None, d) for d in dilation)] = x
    for i, (lo, hi) in enumerate(padding):
        axis = lead + i
        widths = [(0, 0)] * out.ndim
        widths[axis] = (max(lo, 0), max(hi, 0))
        out = np.pad(out, widths)
        out = np.take(out, np.arange(max(-lo, 0), out.shape[axis] - max(-hi, 0)), axis=axis)
    return out


def conv_reference(lhs, rhs, strides, padding, lhs_dilation=None, rhs_dilation=None,
                   dimension_numbers=None, feature_group_count=1, batch_group_count=1):
    """The definition: windows of the dilated, padded input against the dilated kernel."""
    dnums = C.conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
    n = lhs.ndim - 2
    x = np.transpose(lhs, dnums.lhs_spec)
    k = np.transpose(rhs, dnums.rhs_spec)
    if isinstance(padding, str):
        window = [(s - 1) * d + 1 for s, d in zip(k.shape[2:], rhs_dilation or (1,) * n)]
        padding = C.padtype_to_pads(x.shape[2:], window, strides, padding)
    x = _dilate_pad(x, lhs_dilation or (1,) * n, padding)
    k = _dilate_pad(k, rhs_dilation or (1,) * n, [(0, 0)] * n)
    windows = sliding_window_view(x, k.shape[2:], axis=tuple(range(2, 2 + n)))
    windows = windows[(slice(None), slice(None), *(slice(None, None, s) for s in strides))]
    in_features = k.shape[1]
    groups = max(feature_group_count, batch_group_count)
    group_out = k.shape[0] // groups
    outs = []
    for g in range(groups):
        if feature_group_count > 1:
            xw = windows[:, g * in_features:(g + 1) * in_features]
        elif batch_group_count > 1:
            per = x.shape[0] // batch_group_count
            xw = windows[g * per:(g + 1) * per]
        else:
            xw = windows
        kw = k[g * group_out:(g + 1) * group_out]
        out = np.tensordot(xw, kw, axes=([1, *range(2 + n, 2 + 2 * n)], [1, *range(2, 2 + n)]))
        outs.append(np.moveaxis(out, -1, 1))
    out = np.concatenate(outs, axis=1).astype(lhs.dtype)
    return np.transpose(out, np.argsort(dnums.out_spec))


def _normal(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


# (lhs shape, rhs shape, keyword arguments of conv_general_dilated)
CASES = [
    ((1, 2, 4, 5), (3, 2, 2, 3), dict(window_strides=(1, 1), padding="VALID")),
    ((2, 1, 5, 4), (2, 1, 3, 2), dict(window_strides=(2, 1), padding=((1, 2), (0, -1)))),
    ((1, 2, 4, 4), (2, 2, 2, 2), dict(window_strides=(1, 2), padding="SAME",
                                      lhs_dilation=(2, 1), rhs_dilation=(1, 2))),
    ((1, 5, 4, 2), (3, 2, 2, 3), dict(window_strides=(2, 2), padding="SAME_LOWER",
                                      dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    ((1, 4, 5, 3), (2, 2, 2, 4), dict(window_strides=(1, 2), padding="SAME",
                                      dimension_numbers=("NCHW", "HWIO", "NHWC"),
                                      feature_group_count=2)),
    ((2, 4, 5), (4, 2, 2), dict(window_strides=(2,), padding=((1, 1),),
                                feature_group_count=2, rhs_dilation=(2,))),
    ((4, 2, 5), (4, 2, 3), dict(window_strides=(1,), padding="SAME", batch_group_count=2)),
    ((2, 5, 3), (2, 3, 2), dict(window_strides=(1,), padding=((1, 0),),
                                dimension_numbers=C.ConvDimensionNumbers((2, 0, 1),
                                                                         (1, 2, 0),
                                                                         (1, 2, 0)))),
    ((1, 1, 3, 3, 3), (2, 1, 2, 2, 2), dict(window_strides=(1, 2, 1), padding="VALID",
                                            lhs_dilation=(1, 1, 2))),
]


@pytest.mark.parametrize("lhs_shape,rhs_shape,kwargs", CASES)
def test_conv_general_dilated(lhs_shape, rhs_shape, kwargs):
    def fun(lhs, rhs):
        return C.conv_general_dilated(lhs, rhs, **kwargs)

    def reference(lhs, rhs):
        dnums = kwargs.get("dimension_numbers")
        return conv_reference(lhs, rhs, kwargs["window_strides"], kwargs["padding"],
                              kwargs.get("lhs_dilation"), kwargs.get("rhs_dilation"), dnums,
                              kwargs.get("feature_group_count", 1),
                              kwargs.get("batch_group_count", 1))

    check(fun, [_normal(lhs_shape), _normal(rhs_shape)], reference, diff_argnums=(0, 1),
          rtol=1e-5, atol=1e-5)


@settings(max_examples=12, deadline=None)
@given(size=st.integers(1, 6), window=st.integers(1, 3), stride=st.integers(1, 3),
       lhs_dil=st.integers(1, 2), rhs_dil=st.integers(1, 2), lo=st.integers(-1, 2),
       hi=st.integers(-1, 2), groups=st.sampled_from([1, 2]),
       layout=st.sampled_from([None, ("NWC", "WIO", "NWC"), ("NCW", "OIW", "NWC")]))
def test_conv_hypothesis(size, window, stride, lhs_dil, rhs_dil, lo, hi, groups, layout):
    lhs = _normal((2, 2 * groups, size))
    rhs = _normal((2 * groups, 2, window))
    if layout is not None and layout[0] == "NWC":
        lhs = np.moveaxis(lhs, 1, 2).copy()
    if layout is not None and layout[1] == "WIO":
        rhs = np.transpose(rhs, (2, 1, 0)).copy()
    dilated = (size - 1) * lhs_dil + 1 + lo + hi
    if dilated < (window - 1) * rhs_dil + 1:
        return
    kwargs = dict(window_strides=(stride,), padding=((lo, hi),), lhs_dilation=(lhs_dil,),
                  rhs_dilation=(rhs_dil,), dimension_numbers=layout,
                  feature_group_count=groups)
    check_values(lambda x, k: C.conv_general_dilated(x, k, **kwargs), [lhs, rhs],
                 lambda x, k: conv_reference(x, k, (stride,), ((lo, hi),), (lhs_dil,),
                                             (rhs_dil,), layout, groups),
                 rtol=1e-5, atol=1e-5)


def test_conv_and_conv_with_general_padding():
    lhs, rhs = _normal((1, 2, 5, 4)), _normal((3, 2, 2, 2))
    check_values(lambda x, k: C.conv(x, k, (1, 2), "SAME"), [lhs, rhs],
                 lambda x, k: conv_reference(x, k, (1, 2), "SAME"), rtol=1e-5, atol=1e-5)
    pads = ((1, 0), (2, 1))
    check_values(lambda x, k: C.conv_with_general_padding(x, k, (2, 1), pads, (1, 2), None),
                 [lhs, rhs], lambda x, k: conv_reference(x, k, (2, 1), pads, (1, 2)),
                 rtol=1e-5, atol=1e-5)


def test_preferred_element_type_and_integers():
    lhs = RNG.integers(-3, 4, (1, 2, 4)).astype(np.int32)
    rhs = RNG.integers(-3, 4, (2, 2, 2)).astype(np.int32)
    out = C.conv_general_dilated(lhs, rhs, (1,), "VALID")
    np.testing.assert_array_equal(out, conv_reference(lhs, rhs, (1,), "VALID"))
    as_float = C.conv_general_dilated(lhs, rhs, (1,), "VALID",
                                      preferred_element_type=np.float32)
    assert np.asarray(as_float).dtype == np.float32
    np.testing.assert_array_equal(as_float, np.asarray(out, np.float32))


def test_precision_is_lowered():
    lhs, rhs = _normal((1, 2, 5)), _normal((3, 2, 2))
    fun = lc.jit(lambda x, k: C.conv_general_dilated(x, k, (1,), "VALID",
                                                    precision=("highest", "default")))
    check_values(fun, [lhs, rhs], lambda x, k: conv_reference(x, k, (1,), "VALID"),
                 rtol=1e-5, atol=1e-5)


def test_dimension_numbers():
    assert C.conv_dimension_numbers((1, 2, 3, 4), (1, 2, 3, 4), None) == \
        C.ConvDimensionNumbers((0, 1, 2, 3), (0, 1, 2, 3), (0, 1, 2, 3))
    # Spatial axes follow the order of the rhs string.
    assert C.conv_general_permutations(("NCHW", "OIWH", "NHWC")) == \
        ((0, 1, 3, 2), (0, 1, 2, 3), (0, 3, 2, 1))
    assert C.padtype_to_pads((5, 4), (3, 2), (2, 1), "SAME_LOWER") == [(1, 1), (1, 0)]


@pytest.mark.parametrize("call,match", [
    (lambda: C.conv(_normal((1, 3, 4)), _normal((2, 2, 2)), (1,), "VALID"),
     r"lhs feature dimension \(size 3\) must equal the rhs input feature dimension "
     r"\(size 2\) times feature_group_count \(1\)"),
    (lambda: C.conv_general_dilated(_normal((1, 4, 4)), _normal((3, 2, 2)), (1,), "VALID",
                                    feature_group_count=2),
     r"rhs output feature dimension \(size 3\) must be a multiple of feature_group_count"),
    (lambda: C.conv_general_dilated(_normal((1, 4, 4)), _normal((2, 4, 2)), (1,), "VALID",
                                    dimension_numbers=("NCW", "OIX", "NCW")),
     "spatial letters of the lhs spec 'NCW' must be those of the rhs spec 'OIX'"),
    (lambda: C.conv_general_dilated(_normal((1, 4, 4)), _normal((2, 4, 2)), (1,), "VALID",
                                    dimension_numbers=("NCW", "OW", "NCW")),
     "must contain 'O' and 'I' once each"),
    (lambda: C.conv_general_dilated(_normal((1, 4, 4)), _normal((2, 4, 2)), (1,), "VALID",
                                    dimension_numbers=C.ConvDimensionNumbers(
                                        (0, 1, 1), (0, 1, 2), (0, 1, 2))),
     r"the lhs spec \(0, 1, 1\) must be a permutation"),
    (lambda: C.conv(_normal((1, 2, 4)), _normal((2, 2, 2, 2)), (1,), "VALID"),
     "lhs and rhs must have one rank"),
    (lambda: C.conv(_normal((1, 2, 4)), _normal((2, 2, 2)), (1, 1), "VALID"),
     r"window_strides \(1, 1\) must have one entry per spatial dimension \(1\)"),
    (lambda: C.conv(_normal((1, 2, 4)), _normal((2, 2, 2)), (1,), "FULL"),
     "Unknown padding 'FULL'"),
    (lambda: C.conv(_normal((1, 2, 4)), _normal((2, 2, 2), np.int32), (1,), "VALID"),
     "requires lhs and rhs of one dtype"),
])
def test_errors(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()
