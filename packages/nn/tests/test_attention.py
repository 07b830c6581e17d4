"""dot_product_attention against a written-out float64 softmax(QKᵀ·scale + bias, masked)V
for every combination of its options, against JAX 0.10.2's outputs and gradients
(recorded by benchmarks/record_jax_activations.py), with grouped-query heads, T ≠ S,
rank-3 inputs, residuals, low-precision dtypes, derivatives, vmap and errors."""

import itertools
import json
import pathlib

import numpy as np
import pytest
from nn_testing import check_derivatives, check_vmap

import lamella.core as lc
import lamella.numpy as lnp
from lamella import nn

DATA = json.loads((pathlib.Path(__file__).parent / "data" / "jax_activations.json").read_text())
LARGE_NEGATIVE = -0.7 * float(np.finfo(np.float32).max)


def inputs(kv_heads=2):
    """The recorder's seeded inputs: (B, T, S, N, H) = (2, 5, 7, 4, 8)."""
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 5, 4, 8)).astype(np.float32)
    k = rng.standard_normal((2, 7, 2, 8)).astype(np.float32)
    v = rng.standard_normal((2, 7, 2, 8)).astype(np.float32)
    ct = rng.standard_normal((2, 5, 4, 8)).astype(np.float32)
    bias = rng.standard_normal((1, 4, 5, 7)).astype(np.float32)
    mask = rng.random((2, 1, 5, 7)) > 0.3
    mask[0, 0, 1, :] = False  # a fully masked row
    k, v = (np.repeat(x, 2, axis=2)[:, :, :kv_heads] for x in (k, v))
    return q, k, v, ct, bias, mask


def reference(q, k, v, bias=None, mask=None, *, scale=None, is_causal=False,
              query_seq_lengths=None, key_value_seq_lengths=None, local_window_size=None):
    """softmax(Q Kᵀ · scale + bias, masked) V in float64, written out head by head."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    b, t, n, h = q.shape
    s, kv_heads = k.shape[1], k.shape[2]
    scale = 1 / np.sqrt(h) if scale is None else scale
    out = np.zeros_like(q)
    for bi, head, ti in itertools.product(range(b), range(n), range(t)):
        kv = head // (n // kv_heads)
        logits = k[bi, :, kv] @ q[bi, ti, head] * scale
        if bias is not None:
            logits = logits + np.broadcast_to(bias, (b, n, t, s))[bi, head, ti]
        keep = np.ones(s, bool)
        if mask is not None:
            keep &= np.broadcast_to(mask, (b, n, t, s))[bi, head, ti]
        if is_causal:
            keep &= np.arange(s) <= ti
        if local_window_size is not None:
            left, right = ((local_window_size,) * 2 if isinstance(local_window_size, int)
                           else local_window_size)
            keep &= (np.arange(s) >= ti - left) & (np.arange(s) <= ti + right)
        if key_value_seq_lengths is not None:
            keep &= np.arange(s) < key_value_seq_lengths[bi]
        if query_seq_lengths is not None and ti >= query_seq_lengths[bi]:
            continue  # padded query rows are zeros
        logits = np.where(keep, logits, LARGE_NEGATIVE)
        weights = np.exp(logits - logits.max())
        out[bi, ti, head] = weights / weights.sum() @ v[bi, :, kv]
    return out


# --- every combination of the options, against the float64 reference -----------------
OPTIONS = ["bias", "mask", "is_causal", "seq_lengths", "local_window_size"]


def options(flags, bias, mask):
    kwargs = {}
    if "bias" in flags:
        kwargs["bias"] = bias
    if "mask" in flags:
        kwargs["mask"] = mask
    if "is_causal" in flags:
        kwargs["is_causal"] = True
    if "seq_lengths" in flags:
        kwargs["query_seq_lengths"] = np.int32([3, 5])
        kwargs["key_value_seq_lengths"] = np.int32([7, 4])
    if "local_window_size" in flags:
        kwargs["local_window_size"] = (1, 2)
    return kwargs


COMBINATIONS = [c for r in range(len(OPTIONS) + 1) for c in itertools.combinations(OPTIONS, r)]


@pytest.mark.parametrize("flags", COMBINATIONS, ids=["+".join(c) or "plain" for c in COMBINATIONS])
def test_every_option_combination_matches_reference(flags):
    q, k, v, _, bias, mask = inputs()
    kwargs = options(flags, bias, mask)
    np.testing.assert_allclose(nn.dot_product_attention(q, k, v, **kwargs),
                               reference(q, k, v, **kwargs), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("kv_heads", [1, 2, 4], ids=["multi-query", "grouped", "multi-head"])
def test_grouped_heads_and_scale(kv_heads):
    q, k, v, _, bias, _ = inputs(kv_heads)
    np.testing.assert_allclose(nn.dot_product_attention(q, k, v, bias, scale=0.3),
                               reference(q, k, v, bias, scale=0.3), rtol=2e-5, atol=2e-6)


def test_rank_3_inputs_longer_queries_and_residual():
    q, k, v, _, _, _ = inputs()
    q = np.concatenate([q, q], axis=1)  # T = 10 > S = 7: causal stays aligned top-left
    out = nn.dot_product_attention(q[0], k[0], v[0], is_causal=True)
    assert out.shape == q[0].shape
    np.testing.assert_allclose(out, reference(q[:1], k[:1], v[:1], is_causal=True)[0],
                               rtol=2e-5, atol=2e-6)
    out, residual = nn.dot_product_attention(q, k, v, is_causal=True, return_residual=True)
    assert residual.shape == (2, 10, 4)
    logits = np.einsum("btnh,bsnh->bnts", q.astype(np.float64),
                       np.repeat(k, 2, axis=2).astype(np.float64)) / np.sqrt(8)
    logits = np.where(np.tril(np.ones((10, 7), bool)), logits, LARGE_NEGATIVE)
    lse = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
    np.testing.assert_allclose(residual, lse.transpose(0, 2, 1), rtol=2e-6, atol=2e-6)


def test_masked_rows_average_values_and_padded_queries_are_zero():
    q, k, v, _, _, mask = inputs()
    out = np.asarray(nn.dot_product_attention(q, k, v, mask=mask,
                                              query_seq_lengths=np.int32([5, 2])))
    np.testing.assert_allclose(out[0, 1], np.repeat(v[0], 2, axis=1).mean(0), rtol=1e-5)
    assert np.all(out[1, 2:] == 0) and np.all(np.isfinite(out))


# --- JAX's numbers --------------------------------------------------------------------
def jax_kwargs(spec, bias, mask):
    kwargs = {}
    for name, value in spec.items():
        if name in ("bias", "mask"):
            kwargs[name] = {"bias": bias, "mask": mask}[name]
        elif name.endswith("seq_lengths"):
            kwargs[name] = np.int32(value)
        elif name == "local_window_size":
            kwargs[name] = tuple(value) if isinstance(value, list) else value
        elif name != "kv_heads":
            kwargs[name] = value
    return kwargs


@pytest.mark.parametrize("case", DATA["attention"], ids=[str(c["spec"]) for c in DATA["attention"]])
def test_outputs_and_gradients_match_jax(case):
    q, k, v, ct, bias, mask = inputs(case["spec"].get("kv_heads", 2))
    kwargs = jax_kwargs(case["spec"], bias, mask)

    def loss(q, k, v):
        return lnp.sum(nn.dot_product_attention(q, k, v, **kwargs) * ct)

    np.testing.assert_allclose(nn.dot_product_attention(q, k, v, **kwargs), case["out"],
                               rtol=1e-5, atol=1e-6)
    grads = lc.jit(lc.grad(loss, argnums=(0, 1, 2)))(q, k, v)  # one compile, not one per step
    for got, want in zip(grads, case["grads"]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# --- derivatives, vmap, dtypes ----------------------------------------------------------
def reference_in_lamella(q, k, v, bias, mask):
    """The same reference as lamella.numpy code (float64 under x64), to differentiate."""
    g = q.shape[2] // k.shape[2]
    k, v = lnp.repeat(k, g, axis=2), lnp.repeat(v, g, axis=2)
    logits = lnp.einsum("btnh,bsnh->bnts", q, k) / np.sqrt(q.shape[-1]) + bias
    logits = lnp.where(mask & np.tril(np.ones(logits.shape[-2:], bool)), logits,
                       LARGE_NEGATIVE)
    weights = lnp.exp(logits - lc.stop_gradient(logits.max(-1, keepdims=True)))
    return lnp.einsum("bnts,bsnh->btnh", weights / weights.sum(-1, keepdims=True), v)


def test_gradients_against_the_differentiated_reference():
    q, k, v, ct, bias, mask = inputs()
    args = (q, k, v, bias)

    def attention(q, k, v, bias):
        return nn.dot_product_attention(q, k, v, bias, mask, is_causal=True)

    def pullback(fn, args, ct):
        return lc.vjp(fn, *args)[1](ct)

    grads = lc.jit(pullback, static_argnums=0)(attention, args, ct)
    with lc.enable_x64():
        wide = [a.astype(np.float64) for a in args]
        want = lc.jit(pullback, static_argnums=0)(lambda *a: reference_in_lamella(*a, mask),
                                                  wide, ct.astype(np.float64))
    for got, expected in zip(grads, want):
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=2e-5)
    # Central differences too; the softmax runs in float32 even for float64 inputs (as in
    # JAX), so the step is large and the tolerance loose.
    check_derivatives(lc.jit(attention), list(args), diff_argnums=(0, 1, 2, 3), eps=1e-3,
                      rtol=2e-3, atol=2e-3)


def test_vmap_and_jit():
    q, k, v, _, _, _ = inputs()
    check_vmap(lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True),
               [q[0], k[0], v[0]])
    jitted = lc.jit(lambda q, k, v: nn.dot_product_attention(q, k, v, is_causal=True))
    np.testing.assert_allclose(jitted(q, k, v),
                               nn.dot_product_attention(q, k, v, is_causal=True), rtol=1e-6)


def test_low_precision_inputs():
    q, k, v, _, _, _ = inputs()
    half = [lnp.asarray(x, lnp.bfloat16) for x in (q, k, v)]
    out, residual = nn.dot_product_attention(*half, return_residual=True)
    assert out.dtype == lnp.bfloat16 and residual.dtype == lnp.bfloat16
    exact = reference(*[np.asarray(x, np.float64) for x in half])
    np.testing.assert_allclose(np.asarray(out, np.float64), exact, rtol=2e-2, atol=2e-2)


def test_errors():
    q, k, v, _, bias, mask = inputs()
    attend = nn.dot_product_attention
    with pytest.raises(ValueError, match="multiple of key/value heads, but got 4 vs 3"):
        attend(q, np.ones((2, 7, 3, 8), np.float32), np.ones((2, 7, 3, 8), np.float32))
    with pytest.raises(ValueError, match="mask dtype should be bool"):
        attend(q, k, v, mask=mask.astype(np.float32))
    with pytest.raises(ValueError, match=r"bias of shape \(2, 3, 5, 7\) does not broadcast"):
        attend(q, k, v, bias=np.ones((2, 3, 5, 7), np.float32))
    with pytest.raises(ValueError, match="value dtype should be float32"):
        attend(q, k, v.astype(np.float16))
    with pytest.raises(ValueError, match="query_seq_lengths shape should be"):
        attend(q, k, v, query_seq_lengths=np.int32([1, 2, 3]))
    with pytest.raises(RuntimeError, match="cuDNN"):
        attend(q, k, v, implementation="cudnn")
    with pytest.raises(ValueError, match="Unsupported implementation option: flash"):
        attend(q, k, v, implementation="flash")
    np.testing.assert_array_equal(attend(q, k, v, implementation="xla"), attend(q, k, v))
