"""Two processes on loopback, one CPU device each: the latency of a psum across processes.

A jitted shard_map psum over a global mesh of both processes' devices, on a tiny and on a
larger block per device, for lamella and JAX. Every process of a program must make the
same calls, so each process times a fixed number of calls (no adaptive count); process 0
reports; the best of 3 rounds counts. Each library runs in fresh processes of its own
(distributed.initialize must come before the first computation). The same program drives
both: lamella under JAX's names.
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import textwrap

import harness
from harness import Row, jax_or_none, pick

PROCESSES = 2
FLOATS = pick(1 << 18, 64)  # per device, for the bulk psum

_PROGRAM = textwrap.dedent("""
    import json, sys
    lib, quick, address, count, pid, floats = sys.argv[1], sys.argv[2] == "1", sys.argv[3], \\
        *map(int, sys.argv[4:7])
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
    jax.distributed.initialize(address, count, pid, initialization_timeout=120)
    mesh = jax.make_mesh((jax.device_count(),), ("x",))
    rows = NamedSharding(mesh, P("x"))
    total = jax.jit(jax.shard_map(lambda v: lax.psum(v, "x"), mesh=mesh, in_specs=P("x"),
                                  out_specs=P("x")))
    out = {}
    for name, size in (("tiny", 4), ("bulk", floats)):
        x = jax.make_array_from_process_local_data(rows, np.ones(size, np.float32))
        y = total(x)
        out[name + "_value"] = float(np.asarray(y.addressable_data(0))[0])
        # The same number of calls in every process: a psum waits for all of them.
        out[name] = harness.best_time(lambda: total(x).block_until_ready(), repeat=5,
                                      number=50 if name == "tiny" else 10)
    jax.distributed.shutdown()
    print(json.dumps(out))
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _program(lib: str) -> dict:
    here = pathlib.Path(__file__).parent
    env = {k: v for k, v in os.environ.items()
           if k not in ("XLA_FLAGS", "LAMELLA_NUM_CPU_DEVICES")}
    env.update(PYTHONPATH=os.pathsep.join([str(here), *filter(None, [env.get("PYTHONPATH")])]),
               TF_CPP_MIN_LOG_LEVEL="2", JAX_PLATFORMS="cpu")
    address = f"127.0.0.1:{_free_port()}"
    children = [subprocess.Popen(
        [sys.executable, "-c", _PROGRAM, lib, "1" if harness.QUICK else "0", address,
         str(PROCESSES), str(pid), str(FLOATS)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for pid in range(PROCESSES)]
    try:
        results = [child.communicate(timeout=600) for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
    for child, (_, err) in zip(children, results):
        if child.returncode != 0:
            raise RuntimeError(f"{lib} process failed:\n{err[-3000:]}")
    report = json.loads(results[0][0].strip().splitlines()[-1])
    for name in ("tiny", "bulk"):
        if report[name + "_value"] != PROCESSES:
            raise AssertionError(f"{lib}: the {name} psum gave {report[name + '_value']}")
    return report


def _best(reports: list[dict]) -> dict:
    return {key: min(r[key] for r in reports) for key in ("tiny", "bulk")}


def run() -> list[Row]:
    # Rounds alternate the libraries, so load drifts on a shared machine hit both alike.
    with_jax = jax_or_none() is not None
    rounds = [(_program("lamella"), _program("jax") if with_jax else None)
              for _ in range(pick(3, 1))]
    lamella = _best([r[0] for r in rounds])
    jax = _best([r[1] for r in rounds]) if with_jax else None
    get = lambda key: None if jax is None else jax[key]  # noqa: E731
    return [
        Row(f"psum across {PROCESSES} processes (loopback), 4 floats each",
            lamella["tiny"], {"jax": get("tiny")}),
        Row(f"psum across {PROCESSES} processes (loopback), {FLOATS} floats each",
            lamella["bulk"], {"jax": get("bulk")}),
    ]
