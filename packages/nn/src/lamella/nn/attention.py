"""`dot_product_attention`: softmax(Q Kᵀ · scale + bias, masked) V over heads, with
JAX 0.10.2's signature, shapes, masking and dtype rules.

Shapes use JAX's letters: B batch, T query length, S key/value length, N query heads,
K key/value heads (N a multiple of K: grouped-query attention, query head n reads
kv head n // (N/K)), H head dimension. Masked logits become a large finite negative
(-0.7 × the largest float32), so a row masked out entirely averages V rather than
producing NaN; query rows past `query_seq_lengths` are zeros; a causal mask with
T ≠ S is aligned top-left (query t sees keys 0..t). The softmax runs in float32
whatever the input dtype, as in JAX.

The query heads are grouped by the kv head they read, so each product is one
`dot_general` batched over (B, K): the keys and values are never repeated.

>>> import numpy as np
>>> q = np.ones((1, 2, 1, 4), np.float32)
>>> v = np.arange(8, dtype=np.float32).reshape(1, 2, 1, 4)
>>> dot_product_attention(q, q, v, is_causal=True)[0, :, 0]
Array([[0., 1., 2., 3.],
       [2., 3., 4., 5.]], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

import lamella.core as lc
import lamella.numpy as lnp
from lamella import lax
from lamella.nn._checks import arraylike
from lamella.ops.special import logsumexp, softmax

__all__ = ["dot_product_attention"]


def _large_negative(dtype: np.dtype) -> np.ndarray:
    # Capped at float32's range: the logits are cast to float32 for the softmax, and a
    # float64 -0.7 * max would become -inf there.
    largest = min(float(lnp.finfo(dtype).max), float(np.finfo(np.float32).max))
    return np.asarray(-0.7 * largest, dtype=dtype)


def _before(size: int, lengths: Any) -> Any:
    """(B, size): position < length, per batch element."""
    return lnp.arange(size, dtype=np.int32)[None, :] < lengths[:, None]


def _combined_mask(mask: Any, is_causal: bool, q_lengths: Any, kv_lengths: Any,
                   window: tuple[int, int] | None, t: int, s: int) -> Any:
    """The (B|1, N|1, T, S) mask of the logits that take part, or None for all of them."""
    pieces = [] if mask is None else [mask]
    query_pos = lax.broadcasted_iota(np.int32, (t, s), 0)
    key_pos = lax.broadcasted_iota(np.int32, (t, s), 1)
    if is_causal:
        pieces.append((key_pos <= query_pos)[None, None])
    if window is not None:
        left, right = window
        in_window = (query_pos - left <= key_pos) & (key_pos <= query_pos + right)
        pieces.append(in_window[None, None])
    if q_lengths is not None:
        pieces.append(_before(t, q_lengths)[:, None, :, None])
    if kv_lengths is not None:
        pieces.append(_before(s, kv_lengths)[:, None, None, :])
    if not pieces:
        return None
    combined = pieces[0]
    for piece in pieces[1:]:
        combined = combined & piece
    return combined


@lc.jit(static_argnames=("is_causal", "window", "return_residual"))
def _attention(query: Any, key: Any, value: Any, bias: Any, mask: Any, scale: Any,
               q_lengths: Any, kv_lengths: Any, is_causal: bool,
               window: tuple[int, int] | None, return_residual: bool) -> Any:
    b, t, n, h = query.shape
    s, k = key.shape[1], key.shape[2]
    g = n // k
    logits_dtype = lnp.promote_types(query.dtype, np.float32)
    # (B, T, K, G, H) -> (B, K, G, T, H): the query heads of kv head k side by side.
    grouped_q = lnp.transpose(lnp.reshape(query, (b, t, k, g, h)), (0, 2, 3, 1, 4))
    logits = lax.dot_general(grouped_q, key, (((4,), (3,)), ((0, 1), (0, 2))),
                             preferred_element_type=logits_dtype)  # (B, K, G, T, S)
    logits = lnp.reshape(logits, (b, n, t, s)) * scale
    if bias is not None:
        logits = (logits + bias).astype(logits_dtype)
    combined = _combined_mask(mask, is_causal, q_lengths, kv_lengths, window, t, s)
    if combined is not None:
        logits = lnp.where(combined, logits, _large_negative(logits_dtype))
    logits = logits.astype(np.float32)
    probs = softmax(logits, axis=-1).astype(key.dtype)
    encoded = lax.dot_general(lnp.reshape(probs, (b, k, g, t, s)), value,
                              (((4,), (1,)), ((0, 1), (0, 2))))  # (B, K, G, T, H)
    encoded = lnp.reshape(lnp.transpose(encoded, (0, 3, 1, 2, 4)), (b, t, n, h))
    if q_lengths is not None:
        encoded = encoded * _before(t, q_lengths)[:, :, None, None].astype(encoded.dtype)
    if not return_residual:
        return encoded
    residual = logsumexp(logits, axis=-1).astype(key.dtype)  # (B, N, T)
    return encoded, lax.stop_gradient(lnp.transpose(residual, (0, 2, 1)))


def _as_4d(name: str, x: Any) -> Any:
    x = arraylike(f"dot_product_attention's {name}", x)
    if x.ndim > 4:
        raise ValueError(f"dot_product_attention: {name} has {x.ndim} dimensions; at most 4 "
                         "(BTNH for query, BSKH for key/value, BNTS for bias/mask)")
    return lnp.reshape(x, (1,) * (4 - x.ndim) + x.shape)


def _check(t: Any, shape: Sequence[int], dtype: Any, name: str) -> None:
    if t is None:
        return
    if t.ndim != len(shape):
        raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
    if dtype is not None and t.dtype != dtype:
        raise ValueError(f"{name} dtype should be {np.dtype(dtype)}, but got {t.dtype}")
    if any(want != -1 and got != want for got, want in zip(t.shape, shape)):
        raise ValueError(f"{name} shape should be {tuple(shape)}: but got {t.shape}")


def _check_broadcastable(t: Any, target: tuple[int, ...], name: str) -> None:
    if t is not None and any(d not in (1, want) for d, want in zip(t.shape, target)):
        raise ValueError(f"{name} of shape {t.shape} does not broadcast to the logits' "
                         f"(B, N, T, S) = {target}")


def dot_product_attention(query: Any, key: Any, value: Any, bias: Any = None,
                          mask: Any = None, *, scale: float | None = None,
                          is_causal: bool = False, query_seq_lengths: Any = None,
                          key_value_seq_lengths: Any = None,
                          local_window_size: int | tuple[int, int] | None = None,
                          implementation: Literal["xla", "cudnn"] | None = None,
                          return_residual: bool = False) -> Any:
    """Scaled dot-product attention: softmax(Q Kᵀ · scale + bias, masked) V, per head.

    Args:
      query: (B, T, N, H) or (T, N, H).
      key, value: (B, S, K, H) or (S, K, H), with N a multiple of K (K == N: multi-head;
        K == 1: multi-query; otherwise grouped-query attention).
      bias: added to the logits; broadcastable to (B, N, T, S) (fewer dimensions get
        leading ones).
      mask: boolean, True where a logit takes part; broadcastable to (B, N, T, S).
      scale: the logits' factor (default 1 / sqrt(H)).
      is_causal: query t attends to keys 0..t only.
      query_seq_lengths, key_value_seq_lengths: int32 (B,) valid lengths; padded keys
        are masked out and padded query rows of the output are zeros.
      local_window_size: (left, right) (or one int for both): query t attends to keys
        t - left .. t + right.
      implementation: None or "xla" (the same computation here); "cudnn" needs an
        NVIDIA GPU with cuDNN, which lamella does not drive.
      return_residual: also return the softmax's log-sum-exp, (B, T, N) or (T, N).

    Returns:
      The output, shaped as `query` (and the residual when asked for).
    """
    output_shape = arraylike("dot_product_attention's query", query).shape
    query, key, value = (_as_4d(n, x) for n, x in
                         (("query", query), ("key", key), ("value", value)))
    bias = None if bias is None else _as_4d("bias", bias)
    mask = None if mask is None else _as_4d("mask", mask)
    q_lengths = None if query_seq_lengths is None else lnp.asarray(query_seq_lengths)
    kv_lengths = None if key_value_seq_lengths is None else lnp.asarray(key_value_seq_lengths)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)
    elif local_window_size is not None:
        local_window_size = tuple(int(w) for w in local_window_size)

    b, s, k, h = key.shape
    _check(value, [b, s, k, h], key.dtype, "value")
    _check(query, [b, -1, -1, h], key.dtype, "query")
    _check(mask, [-1] * 4, np.dtype(bool), "mask")
    _check(bias, [-1] * 4, None, "bias")
    _check(q_lengths, [b], np.dtype("int32"), "query_seq_lengths")
    _check(kv_lengths, [b], np.dtype("int32"), "key_value_seq_lengths")
    t, n = query.shape[1], query.shape[2]
    if n % k:
        raise ValueError(f"The number of query heads must be a multiple of key/value heads, "
                         f"but got {n} vs {k}")
    _check_broadcastable(bias, (b, n, t, s), "bias")
    _check_broadcastable(mask, (b, n, t, s), "mask")

    if implementation == "cudnn":
        raise RuntimeError("dot_product_attention(implementation='cudnn') needs an NVIDIA GPU "
                           "with cuDNN, which lamella does not drive; use implementation=None "
                           "or 'xla'")
    if implementation not in (None, "xla"):
        raise ValueError(f"Unsupported implementation option: {implementation}")

    logits_dtype = lnp.promote_types(query.dtype, np.float32)
    scale = 1.0 / np.sqrt(h) if scale is None else scale
    scale = lnp.asarray(scale, dtype=logits_dtype)
    out = _attention(query, key, value, bias, mask, scale, q_lengths, kv_lengths,
                     is_causal=bool(is_causal), window=local_window_size,
                     return_residual=bool(return_residual))
    if return_residual:
        encoded, residual = out
        return lnp.reshape(encoded, output_shape), lnp.reshape(residual, output_shape[:-1])
    return lnp.reshape(out, output_shape)
