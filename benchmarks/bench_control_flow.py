"""Structured control flow on XLA: a scan-based RNN training step and a fori_loop."""

from __future__ import annotations

import numpy as np
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
import lamella.lax as lax

T, D, H = pick(100, 3), pick(32, 2), pick(128, 4)
ITERATIONS = pick(1000, 3)


def rnn_loss(L, params, xs, target):
    w_x, w_h, b, w_o = params

    def step(h, x):
        h = L.tanh(L.add(L.add(L.dot(x, w_x), L.dot(h, w_h)), b))
        return h, L.dot(h, w_o)
    _, outputs = L.scan(step, L.full((H,), 0.0, np.float32), xs)
    err = L.sub(outputs, target)
    return L.reduce_sum(L.mul(err, err), (0, 1))


def relax(L, x):
    return L.fori_loop(0, ITERATIONS, lambda i, v: L.add(L.mul(v, 0.999), 1.0), x)


def run() -> list[Row]:
    rng = np.random.default_rng(0)
    params = [rng.normal(0, 0.1, s).astype(np.float32) for s in [(D, H), (H, H), (H,), (H, 1)]]
    xs = rng.normal(0, 1, (T, D)).astype(np.float32)
    target = rng.normal(0, 1, (T, 1)).astype(np.float32)
    x = np.ones(pick(1000, 4), np.float32)
    jax = jax_or_none()

    step = lc.jit(lc.value_and_grad(lambda p, a, b: rnn_loss(lax, p, a, b)))
    loop = lc.jit(lambda v: relax(lax, v))
    dev = lc.device_put((params, xs, target))
    rnn = {"lamella": lambda: lc.block_until_ready(step(*dev))}
    fori = {"lamella": lambda: lc.block_until_ready(loop(x))}
    if jax is not None:
        jstep = jax.jit(jax.value_and_grad(lambda p, a, b: rnn_loss(jax.lax, p, a, b)))
        jloop = jax.jit(lambda v: relax(jax.lax, v))
        jdev = jax.device_put((params, xs, target))
        rnn["jax"] = lambda: jax.block_until_ready(jstep(*jdev))
        fori["jax"] = lambda: jax.block_until_ready(jloop(x))
    t_rnn = compare(rnn, rounds=3, repeat=5)
    t_fori = compare(fori, rounds=3, repeat=5)
    return [
        Row(f"RNN value_and_grad over scan, T={T}, H={H}", t_rnn["lamella"],
            {"jax": t_rnn.get("jax")}, unit="ms"),
        Row(f"fori_loop, {ITERATIONS} iterations on f32[{x.size}]", t_fori["lamella"],
            {"jax": t_fori.get("jax")}, unit="ms"),
    ]
