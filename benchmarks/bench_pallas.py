"""lamella.pallas kernels on CPU against the plain XLA op and JAX's interpreter.

Blocked add (2048², 256² blocks), blocked matmul (512², 128² blocks, K-axis
accumulator) and causal flash-attention forward (8 heads, length 512, head
dimension 64, 128-row blocks), each jitted. References: the same computation
as one plain lamella op (`plain`), and JAX's `pallas_call(interpret=True)` on
the same kernel (`jax_interpret`). Tiny sizes with --quick.
"""

from __future__ import annotations

import functools

import numpy as np
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
import lamella.lax as llax
import lamella.numpy as lnp
import lamella.pallas as lpl

ADD_N, ADD_B = pick((2048, 256), (64, 16))
MM_N, MM_B = pick((512, 128), (64, 16))
HEADS, LENGTH, HEAD_DIM, BLOCK = pick((8, 512, 64, 128), (2, 32, 8, 8))


def add_kernel(x_ref, y_ref, o_ref):
    o_ref[...] = x_ref[...] + y_ref[...]


def blocked_add(pl, jax, interpret=False):
    spec = pl.BlockSpec((ADD_B, ADD_B), lambda i, j: (i, j))
    call = pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct((ADD_N, ADD_N), np.float32),
                          grid=(ADD_N // ADD_B, ADD_N // ADD_B), in_specs=[spec, spec],
                          out_specs=spec, interpret=interpret)
    return jax.jit(call)


def matmul_kernel(x_ref, y_ref, o_ref, *, pl, jnp):
    @pl.when(pl.program_id(2) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)
    o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)


def blocked_matmul(pl, jax, interpret=False):
    g = MM_N // MM_B
    call = pl.pallas_call(
        functools.partial(matmul_kernel, pl=pl, jnp=jax.numpy),
        out_shape=jax.ShapeDtypeStruct((MM_N, MM_N), np.float32), grid=(g, g, g),
        in_specs=[pl.BlockSpec((MM_B, MM_B), lambda i, j, k: (i, k)),
                  pl.BlockSpec((MM_B, MM_B), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((MM_B, MM_B), lambda i, j, k: (i, j)), interpret=interpret)
    return jax.jit(call)


def flash_kernel(q_ref, k_ref, v_ref, o_ref, *, pl, jnp, lax):
    block_q, d = q_ref.shape
    q = q_ref[...] * (1.0 / np.sqrt(d))
    start_q = pl.program_id(1) * block_q

    def body(kb, carry):
        acc, m_prev, l_prev = carry
        start_k = kb * BLOCK
        s = jnp.dot(q, k_ref[pl.ds(start_k, BLOCK), :].T)
        q_idx = start_q + lax.broadcasted_iota(jnp.int32, (block_q, BLOCK), 0)
        k_idx = start_k + lax.broadcasted_iota(jnp.int32, (block_q, BLOCK), 1)
        s = jnp.where(q_idx >= k_idx, s, -jnp.inf)
        m = jnp.maximum(m_prev, s.max(axis=1))
        p = jnp.exp(s - m[:, None])
        corr = jnp.exp(m_prev - m)
        return (acc * corr[:, None] + jnp.dot(p, v_ref[pl.ds(start_k, BLOCK), :]), m,
                l_prev * corr + p.sum(axis=1))

    init = (jnp.zeros((block_q, d), jnp.float32), jnp.full((block_q,), -jnp.inf, jnp.float32),
            jnp.zeros((block_q,), jnp.float32))
    acc, _, l = lax.fori_loop(0, pl.cdiv(start_q + block_q, BLOCK), body, init)
    o_ref[...] = acc / l[:, None]


def flash_attention(pl, jax, interpret=False):
    q_spec = pl.BlockSpec((None, BLOCK, HEAD_DIM), lambda h, i: (h, i, 0))
    kv_spec = pl.BlockSpec((None, LENGTH, HEAD_DIM), lambda h, i: (h, 0, 0))
    call = pl.pallas_call(
        functools.partial(flash_kernel, pl=pl, jnp=jax.numpy, lax=jax.lax),
        out_shape=jax.ShapeDtypeStruct((HEADS, LENGTH, HEAD_DIM), np.float32),
        grid=(HEADS, LENGTH // BLOCK), in_specs=[q_spec, kv_spec, kv_spec], out_specs=q_spec,
        interpret=interpret)
    return jax.jit(call)


def plain_attention(q, k, v):
    s = lnp.einsum("hqd,hkd->hqk", q, k) / np.sqrt(q.shape[-1])
    s = lnp.where(lnp.tril(lnp.ones((LENGTH, LENGTH), bool)), s, -lnp.inf)
    p = lnp.exp(s - s.max(-1, keepdims=True))
    return lnp.einsum("hqk,hkd->hqd", p / p.sum(-1, keepdims=True), v)


class _Lamella:
    ShapeDtypeStruct = lc.ShapeDtypeStruct
    jit = staticmethod(lc.jit)
    numpy = lnp
    lax = llax


def _row(name, make, plain, host, jax) -> Row:
    mine = make(lpl, _Lamella)
    args = [lnp.asarray(x) for x in host]
    plain_fn = lc.jit(plain)
    np.testing.assert_allclose(np.asarray(mine(*args)), np.asarray(plain_fn(*args)),
                               rtol=2e-3, atol=2e-3)
    cands = {"lamella": lambda: lc.block_until_ready(mine(*args)),
             "plain": lambda: lc.block_until_ready(plain_fn(*args))}
    if jax is not None and make is not flash_attention:
        from jax.experimental import pallas as jpl
        theirs = make(jpl, jax, interpret=True)
        jargs = [jax.numpy.asarray(x) for x in host]
        cands["jax_interpret"] = lambda: jax.block_until_ready(theirs(*jargs))
        np.testing.assert_allclose(np.asarray(theirs(*jargs)), np.asarray(mine(*args)),
                                   rtol=2e-3, atol=2e-3)
    t = compare(cands, repeat=5)
    return Row(name, t["lamella"], {k: t.get(k) for k in ("plain", "jax_interpret")}, unit="ms")


def run() -> list[Row]:
    jax = jax_or_none()
    rng = np.random.default_rng(0)
    x = [rng.standard_normal((ADD_N, ADD_N)).astype(np.float32) for _ in range(2)]
    m = [rng.standard_normal((MM_N, MM_N)).astype(np.float32) for _ in range(2)]
    qkv = [rng.standard_normal((HEADS, LENGTH, HEAD_DIM)).astype(np.float32) for _ in range(3)]
    return [
        _row(f"pallas blocked add {ADD_N}² ({ADD_B}² blocks)", blocked_add, lnp.add, x, jax),
        _row(f"pallas blocked matmul {MM_N}² ({MM_B}² blocks)", blocked_matmul, lnp.dot, m,
             jax),
        _row(f"pallas causal flash attention H{HEADS} T{LENGTH} D{HEAD_DIM}", flash_attention,
             plain_attention, qkv, jax),
    ]
