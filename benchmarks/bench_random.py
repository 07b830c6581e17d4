"""lamella.random against NumPy's Generator (and jax.random): bulk sampling, and the
demo's MLP training step against the same step in plain NumPy."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
from harness import Row, compare, jax_or_none

import lamella.core as lc
import lamella.random as lr

N = 10_000_000


def _demo_module():
    path = pathlib.Path(__file__).resolve().parents[1] / "demo" / "demo.py"
    spec = importlib.util.spec_from_file_location("lamella_demo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run() -> list[Row]:
    jax = jax_or_none()
    rows = []
    key = lr.key(0)
    generator = np.random.default_rng(0)
    for name in ("uniform", "normal"):
        sample = lc.jit(lambda k, name=name: getattr(lr, name)(k, (N,)))
        cands = {"lamella": lambda: sample(key).block_until_ready(),
                 "numpy": lambda: getattr(generator,
                                          "random" if name == "uniform" else "standard_normal")(
                     N, dtype=np.float32)}
        if jax is not None:
            jkey = jax.random.key(0)
            jsample = jax.jit(lambda k, name=name: getattr(jax.random, name)(k, (N,)))
            cands["jax"] = lambda: jsample(jkey).block_until_ready()
        t = compare(cands, rounds=2, repeat=3)
        rows.append(Row(f"{name} 1e7 float32, jit", t["lamella"],
                        {"numpy": t["numpy"], "jax": t.get("jax")}, unit="ms"))

    # The demo's training step (64-128-10 MLP, batch 64) against the NumPy step.
    demo = _demo_module()
    params, data, _ = demo.train(epochs=1)
    x, y = data.x_train[:demo.BATCH], data.y_train[:demo.BATCH]
    velocity = lc.tree_util.tree_map(lambda p: p * 0, params)
    np_params = [(np.array(w), np.array(b)) for w, b in params]
    np_velocity = [(np.zeros_like(w), np.zeros_like(b)) for w, b in np_params]
    nx, ny = np.asarray(x), np.asarray(y)

    def lamella_step():
        out = demo.train_step(params, velocity, x, y)
        out[2].block_until_ready()

    t = compare({"lamella": lamella_step,
                 "numpy": lambda: demo.numpy_step(np_params, np_velocity, nx, ny)})
    rows.append(Row("demo MLP training step (batch 64)", t["lamella"], {"numpy": t["numpy"]}))
    return rows
