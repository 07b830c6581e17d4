"""scaled_matmul, scaled_dot_general and get_scaled_dot_general_config (which JAX runs
only through cuDNN) against NumPy references: block dequantization, JAX's mxfp8 and
nvfp4 quantization with ml_dtypes' own float8/float4 rounding, JAX's backward pass,
dimension numbers, dtypes and errors."""

import math

import ml_dtypes
import numpy as np
import pytest
from nn_testing import check

import lamella.core as lc
import lamella.numpy as lnp
from lamella import lax, nn

RNG = np.random.default_rng(0)


# --- scaled_matmul --------------------------------------------------------------------
def ref_scaled_matmul(a, b, a_scales, b_scales):
    a, b, a_scales, b_scales = (np.asarray(x).astype(np.float64)
                                for x in (a, b, a_scales, b_scales))
    a = a * np.repeat(a_scales, a.shape[-1] // a_scales.shape[-1], axis=-1)
    b = b * np.repeat(b_scales, b.shape[-1] // b_scales.shape[-1], axis=-1)
    return np.einsum("bmk,bnk->bmn", a, b)


A = RNG.standard_normal((2, 3, 64)).astype(np.float32)
B = RNG.standard_normal((2, 4, 64)).astype(np.float32)
A_SCALES = np.exp2(RNG.integers(-3, 4, (2, 3, 2))).astype(np.float32)
B_SCALES = np.exp2(RNG.integers(-3, 4, (2, 4, 2))).astype(np.float32)


def test_scaled_matmul_values_derivatives_vmap():
    # It computes in float32 even for float64 inputs (as JAX's does), so the central
    # differences take a larger step and the tolerance is float32's.
    check(nn.scaled_matmul, [A, B, A_SCALES, B_SCALES], ref_scaled_matmul, rtol=1e-5,
          atol=1e-5, diff_argnums=(0, 1, 2, 3), eps=1e-3, grad_rtol=1e-3, grad_atol=1e-2)


def test_scaled_matmul_takes_float8_data_and_e8m0_scales():
    a8 = lnp.asarray(A, lnp.float8_e4m3fn)
    b8 = lnp.asarray(B, lnp.float8_e4m3fn)
    # e8m0 scales cannot live in lamella arrays; NumPy ones are converted on the host.
    a_scales = A_SCALES.astype(ml_dtypes.float8_e8m0fnu)
    b_scales = B_SCALES.astype(ml_dtypes.float8_e8m0fnu)
    out = nn.scaled_matmul(a8, b8, a_scales, b_scales, preferred_element_type=lnp.bfloat16)
    assert out.dtype == lnp.bfloat16 and out.shape == (2, 3, 4)
    want = ref_scaled_matmul(np.asarray(a8, np.float32), np.asarray(b8, np.float32),
                             A_SCALES, B_SCALES)
    np.testing.assert_allclose(np.asarray(out, np.float64), want, rtol=1e-2, atol=1e-2)
    x = np.float32([1, 2, 3]).reshape(1, 1, 3)
    half = np.full((1, 1, 1), 0.5, np.float32)
    np.testing.assert_array_equal(nn.scaled_matmul(x, x * 0 + [4, 5, 6], half, half), [[[8]]])


def test_scaled_matmul_errors():
    with pytest.raises(ValueError, match="3-dimensional"):
        nn.scaled_matmul(A[0], B, A_SCALES, B_SCALES)
    with pytest.raises(ValueError, match="matching batch.*contract"):
        nn.scaled_matmul(A, B[:, :, :32], A_SCALES, B_SCALES)
    with pytest.raises(ValueError, match="scales to match non-contract"):
        nn.scaled_matmul(A, B, A_SCALES[:, :2], B_SCALES)
    with pytest.raises(ValueError, match="not a multiple of the scales' 3 blocks"):
        nn.scaled_matmul(A, B, np.ones((2, 3, 3), np.float32), np.ones((2, 4, 3), np.float32))


# --- quantization references (NumPy, with ml_dtypes' casts) ---------------------------
def ref_quantize(x, mode, global_scale=1.0):
    """JAX's quantize on the host: per-block scales, data rounded by ml_dtypes."""
    b, m, k = x.shape
    block = 32 if mode == "mxfp8" else 16
    data_type = ml_dtypes.float8_e4m3fn if mode == "mxfp8" else ml_dtypes.float4_e2m1fn
    top = np.float32(ml_dtypes.finfo(data_type).max)
    x = x.reshape(b, m, k // block, block).astype(np.float32)
    if mode == "mxfp8":
        amax = np.max(np.abs(x), axis=-1, keepdims=True) / top
        # Scales round up to a power of two (exact powers of two stay).
        scales = np.where(amax > 0, np.exp2(np.ceil(np.log2(np.maximum(amax, 1e-38)))),
                          2.0 ** -127).astype(np.float32)
    else:
        x = x / np.float32(global_scale)
        amax = np.max(np.abs(x), axis=-1, keepdims=True) / top
        scales = np.clip(amax, 0, 448).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    with np.errstate(all="ignore"):
        data = np.clip(x / scales, -top, top).astype(data_type).astype(np.float32)
    data = np.where(scales == 0, 0.0, data)  # an all-zero block stays zero
    return data.reshape(b, m, k), scales.reshape(b, m, k // block)


def ref_quantized_product(x, y, x_mode, y_mode, x_global=1.0, y_global=1.0):
    xq, xs = ref_quantize(x, x_mode, x_global)
    yq, ys = ref_quantize(y, y_mode, y_global)
    return ref_scaled_matmul(xq, yq, xs, ys)


@pytest.mark.parametrize("mode", ["mxfp8", "nvfp4"])
def test_quantized_forward_matches_numpy(mode):
    x = (RNG.standard_normal((2, 4, 64)) * np.exp2(RNG.integers(-4, 4, (2, 4, 1)))
         ).astype(np.float32)
    y = RNG.standard_normal((2, 3, 64)).astype(np.float32)
    x[0, 1, :32] = 0.0  # an all-zero block
    x[1, 2, 5] = 1e4    # a block dominated by one value
    global_scale = 0.5 if mode == "nvfp4" else None
    config = nn.get_scaled_dot_general_config(mode, None if global_scale is None
                                              else lnp.full((1,), global_scale, np.float32))
    out = nn.scaled_dot_general(x, y, (((2,), (2,)), ((0,), (0,))), configs=[config] * 3)
    want = ref_quantized_product(x, y, mode, mode, global_scale or 1.0, global_scale or 1.0)
    if mode == "nvfp4":
        want = want * global_scale * global_scale
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
    # Quantization loses little: float8 keeps 3 bits of mantissa, float4 one.
    exact = np.einsum("bmk,bnk->bmn", x.astype(np.float64), y)
    scale = np.abs(x).max() * np.abs(y).max() * 64
    assert np.max(np.abs(np.asarray(out) - exact)) < (0.02 if mode == "mxfp8" else 0.2) * scale


def test_dimension_numbers_layouts():
    config = nn.get_scaled_dot_general_config("mxfp8")
    x = RNG.standard_normal((32, 3, 2)).astype(np.float32)   # contract axis 0, batch axis 2
    y = RNG.standard_normal((2, 5, 32)).astype(np.float32)   # batch axis 0, contract axis 2
    dn = (((0,), (2,)), ((2,), (0,)))
    out = nn.scaled_dot_general(x, y, dn, configs=[config] * 3)
    assert out.shape == lax.dot_general(x, y, dn).shape == (2, 3, 5)
    want = ref_quantized_product(np.transpose(x, (2, 1, 0)), y, "mxfp8", "mxfp8")
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
    # Two contracting axes, no batch: (4, 8, 8) x (8, 8, 3), flattened in pairing order.
    x = RNG.standard_normal((4, 8, 8)).astype(np.float32)
    y = RNG.standard_normal((8, 8, 3)).astype(np.float32)
    dn = (((1, 2), (1, 0)), ((), ()))
    out = nn.scaled_dot_general(x, y, dn, configs=[config] * 3)
    want = ref_quantized_product(x.reshape(1, 4, 64),
                                 np.transpose(y, (2, 1, 0)).reshape(1, 3, 64), "mxfp8", "mxfp8")
    np.testing.assert_allclose(out, want[0], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("mode", ["mxfp8", "nvfp4"])
def test_backward_pass_as_jax(mode):
    x = RNG.standard_normal((1, 32, 64)).astype(np.float32)
    y = RNG.standard_normal((1, 32, 64)).astype(np.float32)
    g = RNG.standard_normal((1, 32, 32)).astype(np.float32)
    config = nn.get_scaled_dot_general_config(mode)
    dn = (((2,), (2,)), ((0,), (0,)))

    def f(x, y):
        return nn.scaled_dot_general(x, y, dn, configs=[config] * 3)

    grad_x, grad_y = lc.jit(lambda x, y, g: lc.vjp(f, x, y)[1](g))(x, y, g)
    if mode == "mxfp8":  # the cotangent is quantized too, along the backward contraction
        want_x = ref_quantized_product(g, np.transpose(y, (0, 2, 1)), mode, mode)
        want_y = ref_quantized_product(np.transpose(g, (0, 2, 1)), np.transpose(x, (0, 2, 1)),
                                       mode, mode)
    else:  # nvfp4 differentiates the plain product (straight through, inputs unclipped)
        want_x = g.astype(np.float64) @ y[0]
        want_y = np.transpose(g, (0, 2, 1)).astype(np.float64) @ x[0]
    np.testing.assert_allclose(grad_x, want_x, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(grad_y, want_y, rtol=1e-5, atol=1e-4)


def test_nvfp4_zeroes_gradients_of_clipped_inputs():
    config = nn.get_scaled_dot_general_config("nvfp4", lnp.full((1,), 1e-3, np.float32))
    limit = 1e-3 * 6 * 448
    x = np.full((1, 1, 16), 0.5, np.float32)
    x[0, 0, 3] = 2 * limit
    y = np.ones((1, 1, 16), np.float32)
    grad_x = lc.grad(lambda x: nn.scaled_dot_general(
        x, y, (((2,), (2,)), ((0,), (0,))), configs=[config] * 3).sum())(x)
    assert grad_x[0, 0, 3] == 0 and np.all(np.delete(np.asarray(grad_x)[0, 0], 3) == 1)


def test_configs_and_plain_path():
    mx = nn.get_scaled_dot_general_config("mxfp8")
    assert (mx.mode, mx.block_size, mx.data_type, mx.scale_type, mx.global_scale,
            mx.infer_only) == ("mxfp8", 32, ml_dtypes.float8_e4m3fn,
                               ml_dtypes.float8_e8m0fnu, None, False)
    nv = nn.get_scaled_dot_general_config("nvfp4")
    assert (nv.block_size, nv.data_type, nv.scale_type) == (
        16, ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e4m3fn)
    np.testing.assert_array_equal(nv.global_scale, np.ones(1, np.float32))
    with pytest.raises(ValueError, match="Unsupported mode: int8"):
        nn.get_scaled_dot_general_config("int8")
    x = lnp.asarray(RNG.standard_normal((3, 4)), lnp.bfloat16)
    out = nn.scaled_dot_general(x, x, (((1,), (1,)), ((), ())))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, lax.dot_general(x, x, (((1,), (1,)), ((), ())),
                                                       preferred_element_type=np.float32))


def test_scaled_dot_general_errors():
    config = nn.get_scaled_dot_general_config("mxfp8")
    x = np.ones((2, 48), np.float32)
    dn = (((1,), (1,)), ((), ()))
    with pytest.raises(ValueError, match="blocks of 32.*48 is not a multiple"):
        nn.scaled_dot_general(x, x, dn, configs=[config] * 3)
    with pytest.raises(TypeError, match="preferred_element_type"):
        nn.scaled_dot_general(x, x, dn, preferred_element_type=np.int32, configs=[config] * 3)
    with pytest.raises(ValueError, match="do not match"):
        nn.scaled_dot_general(x, np.ones((2, 64), np.float32), dn, configs=[config] * 3)
    with pytest.warns(DeprecationWarning, match="ignored"):
        nn.scaled_dot_general(x, x, dn, implementation="cudnn")
    assert math.isclose(float(nn.scaled_dot_general(x[:1, :32], x[:1, :32], dn,
                                                    configs=[config] * 3)[0, 0]), 32.0)
