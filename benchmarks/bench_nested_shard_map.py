"""Eight CPU devices: nested and partially manual shard_map, and grouped collectives.

A shard_map manual over "x" of a (4, 2) mesh whose body runs a shard_map over "y"
(collectives over both axes), a shard_map manual over "x" only ("y" left to XLA's
partitioner), and a psum over `axis_index_groups` under pmap, for lamella and JAX.

As in bench_parallel, each library runs in a fresh process of its own with 8 devices
(the count is fixed when a backend starts); the same program drives both, lamella
under JAX's names.
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
ROWS, COLS = pick(2048, 8), pick(512, 4)  # the global array the shard_maps split

_PROGRAM = textwrap.dedent("""
    import json, os, sys
    lib, quick, devices, rows, cols = sys.argv[1], sys.argv[2] == "1", *map(int, sys.argv[3:6])
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"
    os.environ["LAMELLA_NUM_CPU_DEVICES"] = str(devices)
    import numpy as np
    if lib == "jax":
        import jax, jax.numpy as jnp
        from jax import lax
        from jax.sharding import AxisType, PartitionSpec as P
    else:
        import lamella.core as jax, lamella.numpy as jnp, lamella.lax as lax
        from lamella.core.sharding import AxisType, P
    import harness
    harness.QUICK = quick
    mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    x = np.linspace(-1, 1, rows * cols, dtype=np.float32).reshape(rows, cols)
    out = {}

    def inner(c):
        return jnp.tanh(c) * lax.psum(c, "y") + lax.pmax(c, "x")

    def outer(b):
        return jax.shard_map(inner, in_specs=P(None, "y"), out_specs=P(None, "y"),
                             axis_names={"y"})(b)

    nested = jax.jit(jax.shard_map(outer, mesh=mesh, in_specs=P("x"), out_specs=P("x"),
                                   axis_names={"x"}))
    y = nested(x)
    out["nested"] = harness.best_time(lambda: nested(y).block_until_ready())
    out["nested_sum"] = float(np.asarray(nested(x)).sum())

    partial = jax.jit(jax.shard_map(lambda b: jnp.tanh(b) @ jnp.tanh(b).T @ b
                                    + lax.psum(b, "x"), mesh=mesh, in_specs=P("x"),
                                    out_specs=P("x"), axis_names={"x"}))
    z = partial(x)
    out["partial"] = harness.best_time(lambda: partial(z).block_until_ready())
    out["partial_sum"] = float(np.asarray(partial(x)).sum())

    groups = [[0, 2, 4, 6], [1, 3, 5, 7]]
    grouped = jax.pmap(lambda v: lax.psum(v, "i", axis_index_groups=groups), axis_name="i")
    g = grouped(x[:devices])
    out["grouped_psum"] = harness.best_time(lambda: grouped(g).block_until_ready())
    print(json.dumps(out))
""")


def _child(lib: str) -> dict:
    here = pathlib.Path(__file__).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(here), *filter(None, [os.environ.get("PYTHONPATH")])]), TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, lib, "1" if harness.QUICK else "0", str(DEVICES),
         str(ROWS), str(COLS)], capture_output=True, text=True, env=env, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"{lib} child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run() -> list[Row]:
    lamella = _child("lamella")
    jax = _child("jax") if jax_or_none() is not None else None
    if jax is not None:
        for key in ("nested_sum", "partial_sum"):
            if abs(lamella[key] - jax[key]) > 1e-4 * abs(jax[key]) + 1e-3:
                raise AssertionError(f"{key} differs: lamella {lamella[key]}, jax {jax[key]}")
    get = lambda key: None if jax is None else jax[key]  # noqa: E731
    return [
        Row(f"nested shard_map x then y, ({ROWS}, {COLS})", lamella["nested"],
            {"jax": get("nested")}),
        Row(f"shard_map manual over x, y Auto, ({ROWS}, {COLS})", lamella["partial"],
            {"jax": get("partial")}),
        Row(f"pmap psum over 2 groups of 4, ({DEVICES}, {COLS})", lamella["grouped_psum"],
            {"jax": get("grouped_psum")}),
    ]
