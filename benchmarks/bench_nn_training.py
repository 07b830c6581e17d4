"""Jitted training steps of lamella.nn programs against the same programs in JAX.

The transformer demo's step (its own model functions run once with lamella.nn and
once with jax.nn: attention, standardize, example_libraries.optimizers.adam) and
the classic stax MLP step (lamella.nn.stax / jax.example_libraries.stax, adam).
"""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
import lamella.random as lr
from lamella.nn import optimizers, stax

MLP = "serial(Dense(256), Relu, Dense(256), Relu, Dense(10), LogSoftmax)"


def _transformer_demo(name: str):
    path = pathlib.Path(__file__).resolve().parents[1] / "demo" / "transformer.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _adam_step(lib, loss, adam):
    """A jitted step of `loss`'s value_and_grad and Adam, written against library `lib`."""
    opt_init, opt_update, get_params = adam(1e-3)

    def step(i, state, *batch):
        value, grads = lib.value_and_grad(loss)(get_params(state), *batch)
        return value, opt_update(i, grads, state)

    return opt_init, lib.jit(step)


def transformer_row(jax) -> Row:
    demo = _transformer_demo("lamella_transformer_bench")
    corpus = demo.load_corpus()
    batch = pick(demo.BATCH, 2)
    rng = np.random.default_rng(0)
    inputs, targets = demo.get_batch(rng, corpus.train, batch)
    params = demo.init_params(lr.PRNGKey(0), len(corpus.chars))
    opt_init, step = _adam_step(lc, demo.loss, optimizers.adam)
    state = opt_init(params)
    cands = {"lamella": lambda: step(0, state, inputs, targets)[0].block_until_ready()}
    if jax is not None:
        # The demo's own model functions, with their library names pointed at JAX.
        from jax.example_libraries import optimizers as jax_optimizers
        twin = _transformer_demo("jax_transformer_bench")
        twin.lc, twin.nn, twin.lnp = jax, jax.nn, jax.numpy
        jax_init, jax_step = _adam_step(jax, twin.loss, jax_optimizers.adam)
        host_params = lc.tree_util.tree_map(np.asarray, params)
        jax_state = jax_init(jax.tree.map(jax.numpy.asarray, host_params))
        cands["jax"] = lambda: jax_step(0, jax_state, inputs, targets)[0].block_until_ready()
        np.testing.assert_allclose(float(step(0, state, inputs, targets)[0]),
                                   float(jax_step(0, jax_state, inputs, targets)[0]), rtol=1e-4)
    t = compare(cands, rounds=2, repeat=5)
    return Row(f"transformer demo train step (batch {batch}x{demo.CONTEXT})", t["lamella"],
               {"jax": t.get("jax")}, unit="ms")


def mlp_row(jax) -> Row:
    batch = pick(128, 8)
    rng = np.random.default_rng(0)
    images = rng.uniform(0, 1, (batch, 64)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]

    def loss_for(predict, m):
        return lambda params, x, y: -m.mean(m.sum(predict(params, x) * y, axis=1))

    init_fun, predict = eval(MLP, vars(stax))
    _, params = init_fun(lr.PRNGKey(0), (-1, 64))
    import lamella.numpy as lnp
    opt_init, step = _adam_step(lc, loss_for(predict, lnp), optimizers.adam)
    state = opt_init(params)
    cands = {"lamella": lambda: step(0, state, images, labels)[0].block_until_ready()}
    if jax is not None:
        from jax.example_libraries import optimizers as jax_optimizers
        from jax.example_libraries import stax as jax_stax
        jax_init_fun, jax_predict = eval(MLP, vars(jax_stax))
        _, jax_params = jax.jit(jax_init_fun, static_argnums=1)(jax.random.PRNGKey(0), (-1, 64))
        jax_opt_init, jax_step = _adam_step(jax, loss_for(jax_predict, jax.numpy),
                                            jax_optimizers.adam)
        jax_state = jax_opt_init(jax_params)
        cands["jax"] = lambda: jax_step(0, jax_state, images, labels)[0].block_until_ready()
        # The same key gives the same initial parameters, so the same loss.
        np.testing.assert_allclose(float(step(0, state, images, labels)[0]),
                                   float(jax_step(0, jax_state, images, labels)[0]), rtol=1e-5)
    t = compare(cands)
    return Row(f"stax MLP 64-256-256-10 adam step (batch {batch})", t["lamella"],
               {"jax": t.get("jax")})


def run() -> list[Row]:
    jax = jax_or_none()
    return [transformer_row(jax), mlp_row(jax)]
