"""lamella.nn.dot_product_attention against jax.nn's: jitted forward and forward+backward.

Batch 8, 8 heads, length 512, head dimension 64, float32 (tiny sizes with --quick);
plain and causal, and grouped-query (2 kv heads) for the forward pass.
"""

from __future__ import annotations

import numpy as np
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
import lamella.numpy as lnp
from lamella import nn

BATCH, HEADS, LENGTH, HEAD_DIM = pick((8, 8, 512, 64), (1, 2, 8, 4))


def _inputs(kv_heads: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    q = rng.standard_normal((BATCH, LENGTH, HEADS, HEAD_DIM)).astype(np.float32)
    k, v = (rng.standard_normal((BATCH, LENGTH, kv_heads, HEAD_DIM)).astype(np.float32)
            for _ in range(2))
    cotangent = rng.standard_normal(q.shape).astype(np.float32)
    return [q, k, v, cotangent]


def _row(name: str, jax, *, causal: bool, kv_heads: int, backward: bool) -> Row:
    host = _inputs(kv_heads)

    def program(attention, m):
        def forward(q, k, v, ct):
            return attention(q, k, v, is_causal=causal)

        def loss(q, k, v, ct):
            return m.sum(forward(q, k, v, ct) * ct)

        return loss if backward else forward

    if backward:
        mine = lc.jit(lc.value_and_grad(program(nn.dot_product_attention, lnp), (0, 1, 2)))
    else:
        mine = lc.jit(program(nn.dot_product_attention, lnp))
    args = [lnp.asarray(x) for x in host]
    cands = {"lamella": lambda: lc.block_until_ready(mine(*args))}
    cands["lamella"]()  # compiled before timing (quick mode times a single call)
    if jax is not None:
        jnp = jax.numpy
        if backward:
            theirs = jax.jit(jax.value_and_grad(program(jax.nn.dot_product_attention, jnp),
                                                (0, 1, 2)))
        else:
            theirs = jax.jit(program(jax.nn.dot_product_attention, jnp))
        jargs = [jnp.asarray(x) for x in host]
        cands["jax"] = lambda: jax.block_until_ready(theirs(*jargs))
        # The same computation: the results agree to float32 rounding.
        for a, b in zip(lc.tree_util.tree_leaves(mine(*args)),
                        jax.tree_util.tree_leaves(theirs(*jargs))):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-3, atol=2e-3)
    t = compare(cands, repeat=5)
    return Row(name, t["lamella"], {"jax": t.get("jax")}, unit="ms")


def run() -> list[Row]:
    jax = jax_or_none()
    shape = f"B{BATCH} N{HEADS} T{LENGTH} H{HEAD_DIM}"
    return [
        _row(f"attention forward, {shape}, jit", jax, causal=False, kv_heads=HEADS,
             backward=False),
        _row(f"attention forward, causal, {shape}, jit", jax, causal=True, kv_heads=HEADS,
             backward=False),
        _row(f"attention forward, 2 kv heads, {shape}, jit", jax, causal=False,
             kv_heads=max(HEADS // 4, 1), backward=False),
        _row(f"attention forward+backward, {shape}, jit", jax, causal=False, kv_heads=HEADS,
             backward=True),
        _row(f"attention forward+backward, causal, {shape}, jit", jax, causal=True,
             kv_heads=HEADS, backward=True),
    ]
