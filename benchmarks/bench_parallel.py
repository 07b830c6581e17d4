"""Eight CPU devices: pmap and sharded-jit call overhead, data-parallel MLP step, psum.

Per-call overhead of a pmap'ed and of a sharded-jit tiny function, a data-parallel
MLP training step and a psum over all devices, for lamella and JAX.

The device count is fixed when a library starts its CPU backend, and `run.py` may
already have started lamella's with one device, so each library is measured in a
fresh process of its own with 8 devices (LAMELLA_NUM_CPU_DEVICES / XLA_FLAGS set
before the import). The same program drives both: lamella under JAX's names.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import harness
from harness import Row, jax_or_none, pick

DEVICES = 8
BATCH, WIDTH = pick(1024, 16), pick(512, 8)  # MLP: global batch and hidden width
PSUM_FLOATS = pick(1 << 20, 64)  # per device

_PROGRAM = textwrap.dedent("""
    import json, os, sys
    lib, quick, devices, batch, width, floats = sys.argv[1], sys.argv[2] == "1", *map(
        int, sys.argv[3:7])
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    os.environ["LAMELLA_NUM_CPU_DEVICES"] = str(devices)
    import numpy as np
    if lib == "jax":
        import jax, jax.numpy as jnp
        from jax import lax
        from jax.sharding import NamedSharding, PartitionSpec as P
    else:
        import lamella.core as jax, lamella.numpy as jnp, lamella.lax as lax
        from lamella.core.sharding import NamedSharding, P
    import harness
    harness.QUICK = quick
    assert jax.device_count() == devices, jax.device_count()
    mesh = jax.make_mesh((devices,), ("x",))
    rows, replicated = NamedSharding(mesh, P("x")), NamedSharding(mesh, P())
    out = {}

    tiny = np.ones((devices, 4), np.float32)
    bump = jax.pmap(lambda v: v + 1)
    x = bump(tiny)
    out["pmap"] = harness.best_time(lambda: bump(x).block_until_ready())
    add = jax.jit(lambda v: v + 1)
    xs = jax.device_put(tiny, rows)
    out["sharded_jit"] = harness.best_time(lambda: add(xs).block_until_ready())

    rng = np.random.default_rng(0)
    params = [jax.device_put(rng.normal(size=s).astype(np.float32) / 10, replicated)
              for s in [(width, width), (width, 10)]]
    data = jax.device_put(rng.normal(size=(batch, width)).astype(np.float32), rows)
    labels = jax.device_put(rng.normal(size=(batch, 10)).astype(np.float32), rows)

    def loss(p, x, y):
        return jnp.mean((jnp.tanh(x @ p[0]) @ p[1] - y) ** 2)

    @jax.jit
    def step(p, x, y):
        value, grads = jax.value_and_grad(loss)(p, x, y)
        return [w - 0.01 * g for w, g in zip(p, grads)], value

    out["mlp_step"] = harness.best_time(lambda: step(params, data, labels)[1].block_until_ready())
    out["mlp_loss"] = float(step(params, data, labels)[1])

    total = jax.pmap(lambda v: lax.psum(v, "i"), axis_name="i")
    big = total(np.ones((devices, floats), np.float32))
    out["psum"] = harness.best_time(lambda: total(big).block_until_ready())
    print(json.dumps(out))
""")


def _child(lib: str) -> dict:
    here = pathlib.Path(__file__).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(here), *filter(None, [os.environ.get("PYTHONPATH")])]), TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, lib, "1" if harness.QUICK else "0",
         str(DEVICES), str(BATCH), str(WIDTH), str(PSUM_FLOATS)],
        capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{lib} child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run() -> list[Row]:
    os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={DEVICES}")
    lamella = _child("lamella")
    jax = _child("jax") if jax_or_none() is not None else None
    if jax is not None and abs(lamella["mlp_loss"] - jax["mlp_loss"]) > 1e-4 * abs(
            jax["mlp_loss"]) + 1e-6:
        raise AssertionError(f"MLP losses differ: lamella {lamella['mlp_loss']}, "
                             f"jax {jax['mlp_loss']}")
    get = lambda key: None if jax is None else jax[key]  # noqa: E731
    return [
        Row(f"pmap call overhead, {DEVICES} devices, (8, 4) + 1", lamella["pmap"],
            {"jax": get("pmap")}),
        Row(f"sharded jit call overhead, {DEVICES} devices, (8, 4) + 1",
            lamella["sharded_jit"], {"jax": get("sharded_jit")}),
        Row(f"data-parallel MLP step, batch {BATCH}, width {WIDTH}", lamella["mlp_step"],
            {"jax": get("mlp_step")}),
        Row(f"pmap psum of {PSUM_FLOATS} floats per device", lamella["psum"],
            {"jax": get("psum")}),
    ]
