"""The Pallas docs' examples, each against a plain lamella.numpy reference, under jit,
vmap (a Python loop as reference) and jvp (the reference's jvp). Reverse mode is not
JAX's either: the last test shows it through custom_vjp at the call."""

import functools

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as jnp
import lamella.pallas as pl

S = lc.ShapeDtypeStruct
F32 = np.float32
rng = np.random.default_rng(0)


def close(a, b, tol=2e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def check(f, ref, *args, tol=2e-5, jvp=True):
    """jit matches the reference; vmap over a batch of 2 matches a loop; jvp matches."""
    close(lc.jit(f)(*args), ref(*args), tol)
    batch = [np.stack([a, a * 0.5 + 1]) for a in args]
    close(lc.jit(lc.vmap(f))(*batch), np.stack([ref(*[b[k] for b in batch]) for k in range(2)]),
          tol)
    if jvp:
        tangents = [rng.standard_normal(a.shape).astype(F32) for a in args]
        p, t = lc.jvp(f, args, tangents)
        pr, tr = lc.jvp(ref, args, tangents)
        close(p, pr, tol)
        close(t, tr, 10 * tol)


# --- elementwise add, whole arrays --------------------------------------------------


def add_vectors_kernel(x_ref, y_ref, o_ref):
    x, y = x_ref[...], y_ref[...]
    o_ref[...] = x + y


def add_vectors(x, y):
    return pl.pallas_call(add_vectors_kernel, out_shape=S(x.shape, x.dtype))(x, y)


def test_add_vectors():
    x, y = np.arange(8, dtype=F32), np.ones(8, F32)
    close(add_vectors(x, y), x + y)
    check(add_vectors, jnp.add, x, y)


# --- add with a grid and block specs -------------------------------------------------


def add_blocked(x, y):
    spec = pl.BlockSpec((4, 8), lambda i, j: (i, j))
    return pl.pallas_call(add_vectors_kernel, out_shape=S(x.shape, x.dtype), grid=(2, 2),
                          in_specs=[spec, spec], out_specs=spec)(x, y)


def test_add_blocked():
    x, y = (rng.standard_normal((8, 16)).astype(F32) for _ in range(2))
    check(add_blocked, jnp.add, x, y)


# --- blocked matmul with an accumulator over the K grid axis -----------------------------


def matmul_kernel(x_ref, y_ref, o_ref, *, activation=None, nk):
    @pl.when(pl.program_id(2) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)

    o_ref[...] += pl.dot(x_ref[...], y_ref[...])

    if activation is not None:
        @pl.when(pl.program_id(2) == nk - 1)
        def _():
            o_ref[...] = activation(o_ref[...])


def matmul(x, y, activation=None, bm=4, bk=4, bn=4):
    (m, k), n = x.shape, y.shape[1]
    grid = (m // bm, n // bn, k // bk)
    return pl.pallas_call(
        functools.partial(matmul_kernel, activation=activation, nk=grid[2]),
        out_shape=S((m, n), jnp.float32), grid=grid,
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)))(x, y)


def test_blocked_matmul():
    x = rng.standard_normal((8, 12)).astype(F32)
    y = rng.standard_normal((12, 8)).astype(F32)
    check(matmul, jnp.matmul, x, y, tol=1e-4)


def test_matmul_with_fused_activation():
    x = rng.standard_normal((8, 8)).astype(F32)
    y = rng.standard_normal((8, 4)).astype(F32)
    f = functools.partial(matmul, activation=jnp.tanh)
    check(f, lambda a, b: jnp.tanh(a @ b), x, y, tol=1e-4)


# --- row softmax ------------------------------------------------------------------


def softmax_kernel(x_ref, o_ref):
    x = x_ref[...]
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    o_ref[...] = e / jnp.sum(e, axis=-1, keepdims=True)


def softmax(x, rows=2):
    return pl.pallas_call(softmax_kernel, out_shape=S(x.shape, x.dtype),
                          grid=(pl.cdiv(x.shape[0], rows),),
                          in_specs=[pl.BlockSpec((rows, x.shape[1]), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((rows, x.shape[1]), lambda i: (i, 0)))(x)


def test_row_softmax():
    x = rng.standard_normal((6, 10)).astype(F32)
    def ref(x):
        e = jnp.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)
    check(softmax, ref, x, tol=1e-5)


# --- layer norm forward (one row per program, Triton style) ---------------------------


def layer_norm_kernel(x_ref, w_ref, b_ref, o_ref, *, eps):
    x = x_ref[...]
    mean = jnp.mean(x)
    var = jnp.mean((x - mean) ** 2)
    o_ref[...] = (x - mean) * lax.rsqrt(var + eps) * w_ref[...] + b_ref[...]


def layer_norm(x, w, b, eps=1e-5):
    n = x.shape[1]
    row = pl.BlockSpec((None, n), lambda i: (i, 0))
    vec = pl.BlockSpec((n,), lambda i: (0,))
    return pl.pallas_call(functools.partial(layer_norm_kernel, eps=eps),
                          out_shape=S(x.shape, x.dtype), grid=(x.shape[0],),
                          in_specs=[row, vec, vec], out_specs=row)(x, w, b)


def layer_norm_ref(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * w + b


def test_layer_norm_forward():
    x = rng.standard_normal((4, 16)).astype(F32)
    w = rng.standard_normal(16).astype(F32)
    b = rng.standard_normal(16).astype(F32)
    check(layer_norm, layer_norm_ref, x, w, b, tol=1e-4)


# --- flash attention forward, causal, online softmax over key blocks -----------------------


def flash_attention_kernel(q_ref, k_ref, v_ref, o_ref, *, block_k, causal, scale):
    block_q, d = q_ref.shape
    q = q_ref[...] * scale
    start_q = pl.program_id(1) * block_q
    seq_len = k_ref.shape[0]

    def body(kb, carry):
        acc, m_prev, l_prev = carry
        start_k = kb * block_k
        k = k_ref[pl.ds(start_k, block_k), :]
        v = v_ref[pl.ds(start_k, block_k), :]
        s = pl.dot(q, k, trans_b=True)
        if causal:
            q_idx = start_q + lax.broadcasted_iota(jnp.int32, (block_q, block_k), 0)
            k_idx = start_k + lax.broadcasted_iota(jnp.int32, (block_q, block_k), 1)
            s = jnp.where(q_idx >= k_idx, s, -jnp.inf)
        m = jnp.maximum(m_prev, s.max(axis=1))
        p = jnp.exp(s - m[:, None])
        correction = jnp.exp(m_prev - m)
        l = l_prev * correction + p.sum(axis=1)
        acc = acc * correction[:, None] + pl.dot(p, v)
        return acc, m, l

    n_blocks = pl.cdiv(start_q + block_q, block_k) if causal else seq_len // block_k
    init = (jnp.zeros((block_q, d), jnp.float32), jnp.full((block_q,), -jnp.inf, jnp.float32),
            jnp.zeros((block_q,), jnp.float32))
    acc, _, l = lax.fori_loop(0, n_blocks, body, init)
    o_ref[...] = (acc / l[:, None]).astype(o_ref.dtype)


def flash_attention(q, k, v, causal=True, block_q=4, block_k=4):
    bh, seq, d = q.shape
    kernel = functools.partial(flash_attention_kernel, block_k=block_k, causal=causal,
                               scale=1.0 / np.sqrt(d))
    q_spec = pl.BlockSpec((None, block_q, d), lambda b, i: (b, i, 0))
    kv_spec = pl.BlockSpec((None, seq, d), lambda b, i: (b, 0, 0))
    return pl.pallas_call(kernel, out_shape=S(q.shape, q.dtype), grid=(bh, seq // block_q),
                          in_specs=[q_spec, kv_spec, kv_spec], out_specs=q_spec)(q, k, v)


def attention_ref(q, k, v, causal=True):
    s = jnp.einsum("bqd,bkd->bqk", q, k) / np.sqrt(q.shape[-1])
    if causal:
        seq = q.shape[1]
        s = jnp.where(jnp.tril(jnp.ones((seq, seq), bool)), s, -jnp.inf)
    p = jnp.exp(s - s.max(-1, keepdims=True))
    return jnp.einsum("bqk,bkd->bqd", p / p.sum(-1, keepdims=True), v)


@pytest.mark.parametrize("causal", [True, False])
def test_flash_attention_forward(causal):
    q, k, v = (rng.standard_normal((2, 8, 4)).astype(F32) for _ in range(3))
    f = functools.partial(flash_attention, causal=causal)
    check(f, functools.partial(attention_ref, causal=causal), q, k, v, tol=1e-4,
          jvp=causal)


# --- a reduction with atomics ----------------------------------------------------


def row_sum_kernel(x_ref, o_ref):
    @pl.when(pl.program_id(0) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)
    pl.atomic_add(o_ref, pl.ds(0, o_ref.shape[0]), x_ref[...].sum(axis=0))


def column_sums(x, rows=2):
    return pl.pallas_call(row_sum_kernel, out_shape=S((x.shape[1],), x.dtype),
                          grid=(x.shape[0] // rows,),
                          in_specs=[pl.BlockSpec((rows, x.shape[1]), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((x.shape[1],), lambda i: (0,)))(x)


def test_reduction_with_atomics():
    x = rng.standard_normal((8, 5)).astype(F32)
    check(column_sums, lambda x: x.sum(0), x, tol=1e-5)


# --- masked loads at ragged edges -----------------------------------------------------


def ragged_kernel(x_ref, o_ref, *, n, block):
    start = pl.program_id(0) * block
    offsets = start + jnp.arange(block)
    mask = offsets < n
    x = pl.load(x_ref, pl.ds(start, block), mask=mask, other=0.0)
    pl.store(o_ref, jnp.sin(x) * 2, pl.ds(start, block), mask=mask)


def ragged(x, block=4):
    n = x.shape[0]
    return pl.pallas_call(functools.partial(ragged_kernel, n=n, block=block),
                          out_shape=S(x.shape, x.dtype), grid=(pl.cdiv(n, block),))(x)


def test_masked_loads_at_ragged_edges():
    x = rng.standard_normal(10).astype(F32)
    check(ragged, lambda x: jnp.sin(x) * 2, x, tol=1e-6)


# --- reverse mode through custom_vjp at the call ------------------------------------


@lc.custom_vjp
def pallas_mul(x, y):
    return pl.pallas_call(lambda a, b, o: o.__setitem__(..., a[...] * b[...]),
                          out_shape=S(x.shape, x.dtype))(x, y)


pallas_mul.defvjp(lambda x, y: (pallas_mul(x, y), (x, y)),
                  lambda res, g: (pallas_mul(g, res[1]), pallas_mul(g, res[0])))


def test_grad_through_custom_vjp():
    x, y = np.arange(4, dtype=F32), np.full(4, 3.0, F32)
    gx, gy = lc.grad(lambda x, y: pallas_mul(x, y).sum(), argnums=(0, 1))(x, y)
    close(gx, y)
    close(gy, x)
