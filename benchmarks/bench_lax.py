"""lamella.lax on XLA: per-call overheads, trace+lower time, a compiled MLP step."""

from __future__ import annotations

import numpy as np
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
import lamella.lax as lax

N_LINKS = pick(200, 4)  # 3 equations each: a 600-equation function
HIDDEN, BATCH = pick(512, 8), pick(256, 4)


def chain(L):
    def f(x, y):
        for _ in range(N_LINKS):
            x = L.add(L.mul(L.sin(x), y), y)
        return x
    return f


def mlp_loss(L, reduce_sum, reduce_max, dot):
    def loss(params, images, labels):
        (w1, b1), (w2, b2) = params
        batch = images.shape[0]
        hidden = L.tanh(L.add(dot(images, w1), L.broadcast_in_dim(b1, (batch, b1.shape[0]), (1,))))
        logits = L.add(dot(hidden, w2), L.broadcast_in_dim(b2, (batch, b2.shape[0]), (1,)))
        top = reduce_max(logits, (1,))
        shifted = L.sub(logits, L.broadcast_in_dim(top, logits.shape, (0,)))
        log_norm = L.log(reduce_sum(L.exp(shifted), (1,)))
        picked = reduce_sum(L.mul(shifted, labels), (1,))
        return L.div(reduce_sum(L.sub(log_norm, picked), (0,)), float(images.shape[0]))
    return loss


def mlp_data():
    rng = np.random.default_rng(0)
    params = ((rng.normal(0, 0.05, (784, HIDDEN)).astype(np.float32),
               np.zeros(HIDDEN, np.float32)),
              (rng.normal(0, 0.05, (HIDDEN, 10)).astype(np.float32), np.zeros(10, np.float32)))
    images = rng.uniform(0, 1, (BATCH, 784)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, BATCH)]
    return params, images, labels


def run() -> list[Row]:
    jax = jax_or_none()
    rows = []
    x = lax.device_put(np.ones(4, np.float32))
    y = lax.device_put(np.full(4, 2.0, np.float32))
    tiny = lc.jit(lambda a, b: lax.add(lax.mul(lax.sin(a), b), b))
    candidates = {"lamella": lambda: tiny(x, y)}
    eager = {"lamella": lambda: lax.sin(x)}
    if jax is not None:
        jx, jy = jax.device_put(np.ones(4, np.float32)), jax.device_put(np.full(4, 2.0, np.float32))
        jtiny = jax.jit(lambda a, b: jax.lax.add(jax.lax.mul(jax.lax.sin(a), b), b))
        candidates["jax"] = lambda: jtiny(jx, jy)
        eager["jax"] = lambda: jax.lax.sin(jx)
        eager["jax.numpy"] = lambda: jax.numpy.sin(jx)
    t = compare(candidates)
    rows.append(Row("jit call, cached, 3 ops on f32[4]", t["lamella"], {"jax": t.get("jax")}))
    t = compare(eager)
    rows.append(Row("eager lax.sin on f32[4]", t["lamella"],
                    {"jax": t.get("jax"), "jax.numpy": t.get("jax.numpy")}))

    xs, ys = np.ones(8, np.float32), np.full(8, 2.0, np.float32)
    tl = {"lamella": lambda: lc.jit(chain(lax)).lower(xs, ys).as_text()}
    tg = {"lamella": lambda: lc.jit(lc.grad(lambda a, b: lax.reduce_sum(chain(lax)(a, b),
                                                                        (0,)))).lower(
        xs, ys).as_text()}
    if jax is not None:
        tl["jax"] = lambda: jax.jit(chain(jax.lax)).lower(xs, ys).as_text()
        tg["jax"] = lambda: jax.jit(jax.grad(lambda a, b: jax.lax.reduce_sum(
            chain(jax.lax)(a, b), (0,)))).lower(xs, ys).as_text()
    t = compare(tl, rounds=2, repeat=3)
    rows.append(Row(f"trace+lower, {3 * N_LINKS}-eqn function", t["lamella"],
                    {"jax": t.get("jax")}, unit="ms"))
    t = compare(tg, rounds=2, repeat=3)
    rows.append(Row("trace+lower, its gradient", t["lamella"], {"jax": t.get("jax")},
                    unit="ms"))

    if hasattr(lax, "dot"):
        params, images, labels = mlp_data()
        loss = mlp_loss(lax, lax.reduce_sum, lax.reduce_max, lax.dot)
        step = lc.jit(lc.value_and_grad(loss))
        dev = lc.device_put((params, images, labels))
        steady = {"lamella": lambda: lc.block_until_ready(step(*dev))}
        if jax is not None:
            jloss = mlp_loss(jax.lax, jax.lax.reduce_sum, jax.lax.reduce_max, jax.lax.dot)
            jstep = jax.jit(jax.value_and_grad(jloss))
            jdev = jax.device_put((params, images, labels))
            steady["jax"] = lambda: jax.block_until_ready(jstep(*jdev))
        t = compare(steady, rounds=3, repeat=5)
        rows.append(Row(f"MLP 784-{HIDDEN}-10 value_and_grad step, batch {BATCH}", t["lamella"],
                        {"jax": t.get("jax")}, unit="ms"))
    return rows
