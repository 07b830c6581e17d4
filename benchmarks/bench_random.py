"""lamella.random against NumPy's Generator (and jax.random): bulk sampling, and the
demo's MLP training step against the same step in plain NumPy."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
import lamella.random as lr

N = pick(10_000_000, 64)


def _demo_module():
    path = pathlib.Path(__file__).resolve().parents[1] / "demo" / "demo.py"
    spec = importlib.util.spec_from_file_location("lamella_demo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sampling_row(name: str, jax) -> Row:
    """Jitted `name` sampling of N float32 numbers against NumPy's Generator and JAX."""
    key = lr.key(0)
    sample = lc.jit(lambda k: getattr(lr, name)(k, (N,)))
    generator = np.random.default_rng(0)
    method = getattr(generator, "random" if name == "uniform" else "standard_normal")
    cands = {"lamella": lambda: sample(key).block_until_ready(),
             "numpy": lambda: method(N, dtype=np.float32)}
    if jax is not None:
        jkey = jax.random.key(0)
        jsample = jax.jit(lambda k: getattr(jax.random, name)(k, (N,)))
        cands["jax"] = lambda: jsample(jkey).block_until_ready()
        # Same key, same derivation: the two compute the very same numbers.
        np.testing.assert_array_equal(np.asarray(sample(key)), np.asarray(jsample(jkey)))
    t = compare(cands, rounds=2, repeat=3)
    return Row(f"{name} {N} float32, jit", t["lamella"], {"numpy": t["numpy"],
                                                          "jax": t.get("jax")}, unit="ms")


def run() -> list[Row]:
    jax = jax_or_none()
    rows = [sampling_row("uniform", jax), sampling_row("normal", jax)]

    # The demo's training step (64-128-10 MLP, batch 64) against the NumPy step.
    demo = _demo_module()
    params, data, _ = demo.train(epochs=1)
    x, y = data.x_train[:demo.BATCH], data.y_train[:demo.BATCH]
    velocity = lc.tree_util.tree_map(lambda p: p * 0, params)
    np_params = [(np.array(w), np.array(b)) for w, b in params]
    np_velocity = [(np.zeros_like(w), np.zeros_like(b)) for w, b in np_params]
    nx, ny = np.asarray(x), np.asarray(y)

    # Timed as the demo times it: many steps, then wait for the last, so
    # asynchronous dispatch overlaps as it does in the training loop.
    t_lamella, t_numpy = float("inf"), float("inf")
    timing = dict(repeat=1, number=1) if pick(False, True) else {}
    for _ in range(pick(3, 1)):
        t_lamella = min(t_lamella, demo.best_step_time(demo.train_step, (params, velocity, x, y),
                                                       **timing))
        t_numpy = min(t_numpy, demo.best_step_time(demo.numpy_step,
                                                   (np_params, np_velocity, nx, ny), **timing))
    rows.append(Row("demo MLP training step (batch 64)", t_lamella, {"numpy": t_numpy}))
    return rows
