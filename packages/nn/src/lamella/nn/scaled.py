"""Block-scaled matrix products: `scaled_matmul`, `scaled_dot_general` and
`get_scaled_dot_general_config`, with JAX 0.10.2's names, signatures and semantics.

A block-scaled operand is low-precision data plus one scale per block of `block`
consecutive elements along the contracting (last) axis; its value is
`data * repeat(scales, block, axis=-1)`. JAX computes these products only through
cuDNN on recent NVIDIA GPUs (on CPU it raises NotImplementedError); here they run
anywhere, as what they mean: dequantize exactly in float32, multiply with float32
accumulation. `scaled_dot_general` quantizes its float inputs as JAX does (mxfp8:
blocks of 32, float8_e4m3fn data, power-of-two scales rounded up; nvfp4: blocks of
16, float4_e2m1fn data, float8_e4m3fn scales and a global scale) and has JAX's
backward pass (the cotangent quantized too; nvfp4 passes gradients straight through
except where the forward clipped).

lamella arrays cannot hold float8_e8m0fnu or float4_e2m1fn (its XLA lowering lacks
those types), so quantized values are carried in float32, which represents them
exactly, and `scaled_matmul` takes NumPy arrays of those types by converting them on
the host.

>>> import numpy as np
>>> a = np.float32([1, 2, 3]).reshape(1, 1, 3)
>>> b = np.float32([4, 5, 6]).reshape(1, 1, 3)
>>> half = np.full((1, 1, 1), 0.5, np.float32)
>>> scaled_matmul(a, b, half, half)
Array([[[8.]]], dtype=float32)
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence
from typing import Any, Literal

import ml_dtypes
import numpy as np

import lamella.core as lc
import lamella.numpy as lnp
from lamella import lax
from lamella.nn._checks import arraylike

__all__ = ["BlockScaleConfig", "get_scaled_dot_general_config", "scaled_dot_general",
           "scaled_matmul"]

_HOST_ONLY = (np.dtype(ml_dtypes.float8_e8m0fnu), np.dtype(ml_dtypes.float4_e2m1fn))
_OUTPUT_DTYPES = (np.dtype(np.float32), np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16))


@dataclasses.dataclass(slots=True)
class BlockScaleConfig:
    """How `scaled_dot_general` quantizes one operand (JAX's fields)."""

    mode: str
    block_size: int
    data_type: Any
    scale_type: Any
    global_scale: Any
    infer_only: bool


def get_scaled_dot_general_config(mode: Literal["nvfp4", "mxfp8"],
                                  global_scale: Any = None) -> BlockScaleConfig:
    """The quantization config of `mode` for `scaled_dot_general`.

    >>> get_scaled_dot_general_config("mxfp8").block_size
    32
    """
    if mode == "nvfp4":
        return BlockScaleConfig(
            mode="nvfp4", block_size=16, data_type=ml_dtypes.float4_e2m1fn,
            scale_type=ml_dtypes.float8_e4m3fn,
            global_scale=lnp.ones((1,), np.float32) if global_scale is None else global_scale,
            infer_only=False)
    if mode == "mxfp8":
        return BlockScaleConfig(mode="mxfp8", block_size=32, data_type=ml_dtypes.float8_e4m3fn,
                                scale_type=ml_dtypes.float8_e8m0fnu, global_scale=None,
                                infer_only=False)
    raise ValueError(f"Unsupported mode: {mode} (expected 'nvfp4' or 'mxfp8')")


# --- scaled_matmul --------------------------------------------------------------------
def _operand(name: str, x: Any) -> Any:
    # NumPy arrays of the two types lamella cannot hold become their exact float32 values.
    if isinstance(x, np.ndarray) and x.dtype in _HOST_ONLY:
        return lnp.asarray(x.astype(np.float32))
    return arraylike(f"scaled_matmul's {name}", x)


def _dequantize(x: Any, scales: Any) -> Any:
    b, m, k = x.shape
    blocks = scales.shape[-1]
    x = lnp.reshape(x.astype(np.float32), (b, m, blocks, k // blocks))
    return lnp.reshape(x * scales.astype(np.float32)[..., None], (b, m, k))


@lc.jit(static_argnames=("preferred_element_type",))
def _scaled_matmul(lhs: Any, rhs: Any, lhs_scales: Any, rhs_scales: Any,
                   preferred_element_type: np.dtype) -> Any:
    out = lax.dot_general(_dequantize(lhs, lhs_scales), _dequantize(rhs, rhs_scales),
                          (((2,), (2,)), ((0,), (0,))), preferred_element_type=np.float32)
    return out.astype(preferred_element_type)


def scaled_matmul(lhs: Any, rhs: Any, lhs_scales: Any, rhs_scales: Any,
                  preferred_element_type: Any = np.float32) -> Any:
    """Block-scaled batched matmul: einsum('BMK,BNK->BMN', lhs * lhs_scales repeated
    over blocks, rhs * rhs_scales repeated), accumulated in float32.

    Args:
      lhs: (B, M, K) data (any float dtype, e.g. float8_e4m3fn).
      rhs: (B, N, K) data.
      lhs_scales: (B, M, K_a) with K % K_a == 0: one scale per block of K // K_a.
      rhs_scales: (B, N, K_b) with K % K_b == 0.
      preferred_element_type: the result dtype (float32 by default).

    Returns:
      (B, M, N) in `preferred_element_type`. Unlike JAX's, it runs on CPU, and it is
      differentiable.
    """
    a, b = _operand("lhs", lhs), _operand("rhs", rhs)
    a_scales, b_scales = _operand("lhs_scales", lhs_scales), _operand("rhs_scales", rhs_scales)
    if not all(x.ndim == 3 for x in (a, b, a_scales, b_scales)):
        raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
    if a.shape[2] != b.shape[2] or a.shape[0] != b.shape[0]:
        raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) "
                         f"and contract (K) dimensions, but got shapes {a.shape} and "
                         f"{b.shape}")
    if a_scales.shape[2] != b_scales.shape[2] or a_scales.shape[0] != b_scales.shape[0]:
        raise ValueError("scaled_matmul requires scales to have matching batch (B) and "
                         f"contract (K) dimensions, but got shapes {a_scales.shape} and "
                         f"{b_scales.shape}")
    if a_scales.shape[1] != a.shape[1] or b_scales.shape[1] != b.shape[1]:
        raise ValueError("scaled_matmul requires scales to match non-contract dimensions of "
                         f"inputs, but got shapes a: {a.shape}, b: {b.shape}, a_scales: "
                         f"{a_scales.shape}, b_scales: {b_scales.shape}")
    if a.shape[2] % a_scales.shape[2]:
        raise ValueError(f"scaled_matmul: the contract dimension {a.shape[2]} is not a "
                         f"multiple of the scales' {a_scales.shape[2]} blocks")
    dtype = lc.canonicalize_dtype(np.dtype(preferred_element_type))
    return _scaled_matmul(a, b, a_scales, b_scales, preferred_element_type=dtype)


# --- quantization ---------------------------------------------------------------------
def _round_to_e2m1(x: Any) -> Any:
    """float4_e2m1fn's rounding (to nearest, ties to even) of values in [-6, 6], in x's
    dtype: the grid 0, 0.5, 1, 1.5, 2, 3, 4, 6 has steps 0.5, 1 and 2."""
    magnitude = lnp.abs(x)
    step = lnp.where(magnitude < 2, 0.5, lnp.where(magnitude < 4, 1.0, 2.0)).astype(x.dtype)
    return lnp.sign(x) * lnp.round(magnitude / step) * step


def _power_of_two_at_least(x: Any) -> tuple[Any, Any]:
    """The e8m0 scale of float32 `x` >= 0, rounded up to a power of two, as its biased
    exponent e (the scale is 2**(e - 127)). As in JAX, exact powers of two stay, and
    subnormal values up to 2**-127 become e = 0."""
    bits = lax.bitcast_convert_type(x.astype(np.float32), np.uint32)
    exponent = lax.shift_right_logical(bits, np.uint32(23))
    mantissa = bits & np.uint32(0x7FFFFF)
    round_up = ((mantissa > 0) & (exponent != 0xFE)
                & ~((exponent == 0) & (mantissa <= 0x400000)))
    return lnp.where(round_up, exponent + 1, exponent)


def _power_of_two(exponent: Any) -> Any:
    """2**(exponent - 127) as float32, for biased exponents 1..254 (0 would give 0.0)."""
    return lax.bitcast_convert_type(lax.shift_left(exponent, np.uint32(23)), np.float32)


def _quantize(x: Any, config: BlockScaleConfig) -> tuple[Any, Any]:
    """x (B, M, K) as (data, scales): float32 arrays holding the values of `config`'s
    data type and scale type, with scales per block of the last axis."""
    b, m, k = x.shape
    block = config.block_size
    if k < block or k % block:
        raise ValueError(f"scaled_dot_general ({config.mode}) quantizes blocks of {block} "
                         f"along the contracting dimensions, whose size {k} is not a multiple")
    x = lnp.reshape(x, (b, m, k // block, block))
    data_max = np.asarray(ml_dtypes.finfo(config.data_type).max, np.float32).astype(x.dtype)

    def block_scales(x: Any) -> Any:
        return lnp.max(lnp.abs(x), axis=-1, keepdims=True) / data_max

    if config.mode == "mxfp8":
        exponent = _power_of_two_at_least(block_scales(x))
        # Dividing by 2**(e - 127) is multiplying by 2**(127 - e), a normal float32 for
        # every e <= 254 (the scale itself is subnormal for e = 0).
        inverse = _power_of_two(np.uint32(254) - lnp.minimum(exponent, np.uint32(254)))
        scaled = x * inverse.astype(x.dtype)
        near_zero = 2.0 ** -15 if x.dtype == np.float16 else 2.0 ** -127
        scales = lnp.where(exponent == 0, np.float32(near_zero), _power_of_two(exponent))
    elif config.mode == "nvfp4":
        x = x / config.global_scale
        scale_max = np.asarray(ml_dtypes.finfo(config.scale_type).max, np.float32)
        scales = lnp.clip(block_scales(x), 0, scale_max.astype(x.dtype))
        scales = scales.astype(config.scale_type).astype(np.float32)  # rounded to float8
        # An all-zero block has scale 0: its data is 0 (JAX divides, making NaNs).
        scaled = lnp.where(scales == 0, 0, x / lnp.where(scales == 0, 1, scales))
    else:
        raise ValueError(f"Unrecognized mode: {config.mode}.")
    clipped = lnp.clip(scaled, -data_max, data_max)
    if np.dtype(config.data_type) == np.dtype(ml_dtypes.float4_e2m1fn):
        data = _round_to_e2m1(clipped).astype(np.float32)
    else:
        data = clipped.astype(config.data_type).astype(np.float32)
    return lnp.reshape(data, (b, m, k)), lnp.reshape(scales, (b, m, k // block))


def _quantized_product(g: Any, y: Any, g_config: BlockScaleConfig,
                       y_config: BlockScaleConfig, dtype: np.dtype) -> Any:
    g_data, g_scales = _quantize(g, g_config)
    y_data, y_scales = _quantize(y, y_config)
    return _scaled_matmul(g_data, y_data, g_scales, y_scales, preferred_element_type=dtype)


# --- scaled_dot_general ---------------------------------------------------------------
def _as_3d(x: Any, batch: Sequence[int], contract: Sequence[int]) -> Any:
    """x transposed to (batch, kept, contract) and flattened to (B, M, K)."""
    kept = [d for d in range(x.ndim) if d not in batch and d not in contract]
    sizes = [math.prod(x.shape[d] for d in axes) for axes in (batch, kept, contract)]
    return lnp.reshape(lnp.transpose(x, (*batch, *kept, *contract)), sizes)


@lc.jit(static_argnames=("dtype", "specs"))
def _scaled_dot_3d(x: Any, y: Any, global_scales: tuple, dtype: np.dtype, specs: tuple
                   ) -> Any:
    """(B, M, K) x (B, N, K) -> (B, M, N), both operands quantized, JAX's backward.

    The configs come apart into hashable `specs` (static) and their global scales
    (arrays, or None), so that one compiled program serves each shape and config; the
    scales are explicit arguments of the custom VJP, which may not close over them.
    """
    def configs_of(scales: tuple) -> list[BlockScaleConfig]:
        return [BlockScaleConfig(mode, block, data_type, scale_type, scale, False)
                for (mode, block, data_type, scale_type), scale in zip(specs, scales)]

    def forward(x: Any, y: Any, scales: tuple) -> Any:
        lhs, rhs, _ = configs_of(scales)
        if lhs.mode != "nvfp4":
            return _quantized_product(x, y, lhs, rhs, dtype)
        out = _quantized_product(x, y, lhs, rhs, np.dtype(np.float32))
        return (out * (lhs.global_scale * rhs.global_scale)).astype(dtype)

    def backward_of(g: Any, other: Any, g_config: BlockScaleConfig,
                    other_config: BlockScaleConfig) -> Any:
        # g (B, M, N) and other (B, K, N): the cotangent's product contracts N.
        if g_config.mode == "nvfp4":
            return lax.dot_general(g, other, (((2,), (2,)), ((0,), (0,))),
                                   preferred_element_type=dtype)
        return _quantized_product(g, other, g_config, other_config, dtype)

    def straight_through(grad: Any, operand: Any, config: BlockScaleConfig) -> Any:
        # nvfp4 zeroes the gradient of inputs the forward pass clipped.
        limit = (config.global_scale * float(ml_dtypes.finfo(config.data_type).max)
                 * float(ml_dtypes.finfo(config.scale_type).max))
        return lnp.where(lnp.abs(operand) <= limit.astype(operand.dtype), grad, 0)

    def fwd(x: Any, y: Any, scales: tuple) -> tuple[Any, tuple]:
        return forward(x, y, scales), (x, y, scales)

    def bwd(residuals: tuple, g: Any) -> tuple:
        x, y, scales = residuals
        lhs, rhs, cotangent = configs_of(scales)
        grad_x = backward_of(g, lnp.transpose(y, (0, 2, 1)), cotangent, rhs)
        grad_y = backward_of(lnp.transpose(g, (0, 2, 1)), lnp.transpose(x, (0, 2, 1)),
                             cotangent, lhs)
        if cotangent.mode == "nvfp4":
            grad_x = straight_through(grad_x, x, lhs)
            grad_y = straight_through(grad_y, y, rhs)
        no_scale_gradients = tuple(None if s is None else lnp.zeros_like(s) for s in scales)
        return grad_x.astype(x.dtype), grad_y.astype(y.dtype), no_scale_gradients

    product = lc.custom_vjp(forward)
    product.defvjp(fwd, bwd)
    return product(x, y, global_scales)


def scaled_dot_general(lhs: Any, rhs: Any, dimension_numbers: Any,
                       preferred_element_type: Any = np.float32,
                       configs: list[BlockScaleConfig] | None = None,
                       implementation: Literal["cudnn"] | None = None) -> Any:
    """`lax.dot_general` with both operands block-quantized first (per `configs`).

    Args:
      lhs, rhs: float arrays.
      dimension_numbers: ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch)).
      preferred_element_type: the result dtype: float32 (default), bfloat16 or float16.
      configs: [lhs, rhs, cotangent] configs from `get_scaled_dot_general_config`; with
        None this is `lax.dot_general(..., preferred_element_type=...)`.
      implementation: deprecated and ignored, as in JAX.

    Returns:
      The product, laid out as `lax.dot_general`'s: batch, lhs free, rhs free axes.

    >>> import numpy as np
    >>> x = np.ones((2, 64), np.float32)
    >>> config = get_scaled_dot_general_config("mxfp8")
    >>> scaled_dot_general(x, x, (((1,), (1,)), ((), ())), configs=[config] * 3)
    Array([[64., 64.],
           [64., 64.]], dtype=float32)
    """
    if implementation is not None:
        warnings.warn("Backend selector, now ignored. The system chooses the backend "
                      "automatically.", DeprecationWarning, stacklevel=2)
    if configs is None:
        return lax.dot_general(lhs, rhs, dimension_numbers,
                               preferred_element_type=preferred_element_type)
    dtype = np.dtype(preferred_element_type)
    if dtype not in _OUTPUT_DTYPES:
        raise TypeError("Only support preferred_element_type in (f32, bf16, f16), but got "
                        f"{dtype}")
    if len(configs) != 3:
        raise ValueError("scaled_dot_general needs three configs (lhs, rhs, cotangent), got "
                         f"{len(configs)}")
    x, y = arraylike("scaled_dot_general", lhs), arraylike("scaled_dot_general", rhs)
    (x_contract, y_contract), (x_batch, y_batch) = (
        tuple(tuple(int(d) for d in axes) for axes in pair) for pair in dimension_numbers)
    if ([x.shape[d] for d in x_contract] != [y.shape[d] for d in y_contract]
            or [x.shape[d] for d in x_batch] != [y.shape[d] for d in y_batch]):
        raise ValueError(f"scaled_dot_general: contracting or batch dimensions of shapes "
                         f"{x.shape} and {y.shape} do not match: {dimension_numbers}")
    specs = tuple((c.mode, c.block_size, np.dtype(c.data_type), np.dtype(c.scale_type))
                  for c in configs)
    out = _scaled_dot_3d(_as_3d(x, x_batch, x_contract), _as_3d(y, y_batch, y_contract),
                         tuple(c.global_scale for c in configs), dtype=dtype, specs=specs)
    x_kept = [x.shape[d] for d in range(x.ndim) if d not in x_batch and d not in x_contract]
    y_kept = [y.shape[d] for d in range(y.ndim) if d not in y_batch and d not in y_contract]
    return lnp.reshape(out, (*[x.shape[d] for d in x_batch], *x_kept, *y_kept))
