"""Many processes as one program, on loopback: global arrays over every process's devices
(make_array_from_process_local_data / _callback, addressable shards, the error for reading
another process's data, device_put to another layout), a psum in shard_map over the
global mesh, data-parallel training steps by jit with in/out shardings, pmap, multihost_utils,
and failures (a killed process, an unreachable coordinator) ending in clear errors within
their timeouts.

Each process is a subprocess of the test (free port, bounded by a timeout) and does little:
XLA compiles dominate, and the machine may have 2 cores. Results are checked against NumPy
(the same values JAX 0.10.2 prints for this program: the losses and weights agree bit for bit).
"""

import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax  # noqa: F401  (the XLA runtime: arrays on devices)
from lamella.core import multihost_utils
from lamella.core.sharding import NamedSharding, P, make_mesh

# One process of the program: prints what it saw as JSON on its last line.
_CHILD = """
import json, sys
import numpy as np
import lamella.core as lc, lamella.lax as lax, lamella.numpy as jnp
from lamella.core import multihost_utils
from lamella.core.sharding import NamedSharding, P, make_mesh

address, count, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lc.distributed.initialize(address, count, pid, initialization_timeout=60,
                          heartbeat_timeout_seconds=10, shutdown_timeout_seconds=30)
report = {"devices": lc.device_count(), "local": lc.local_device_count()}
mesh = make_mesh((lc.device_count(),), ("x",))
batch, replicated = NamedSharding(mesh, P("x")), NamedSharding(mesh, P())
rows = 2 * lc.device_count()
rng = np.random.default_rng(0)  # the same global data everywhere; each passes its rows
x_all = rng.normal(size=(rows, 3)).astype(np.float32)
y_all = (x_all @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
mine = slice(pid * rows // count, (pid + 1) * rows // count)
x = lc.make_array_from_process_local_data(batch, x_all[mine])
y = lc.make_array_from_process_local_data(batch, y_all[mine])
report["shape"] = list(x.shape)
report["fully_addressable"] = x.is_fully_addressable
report["sharding"] = x.sharding == batch
report["shards"] = [[s.device.process_index, int(s.index[0].start), int(s.index[0].stop),
                     bool(np.array_equal(np.asarray(s.data), x_all[s.index]))]
                    for s in x.addressable_shards]
report["repr"] = repr(x)
for read in (np.asarray, str):
    try:
        read(x)
    except RuntimeError as err:
        report.setdefault("read_errors", []).append(str(err))
# device_put to another layout moves the parts between processes (a compiled program).
report["replicated"] = np.asarray(lc.device_put(x, replicated)).tolist()
try:  # ... but not onto other devices: those would need every process's parts
    lc.device_put(x, NamedSharding(make_mesh((1,), ("x",)), P()))
except ValueError as err:
    report["move_error"] = str(err)
try:
    lc.make_array_from_process_local_data(batch, x_all[:rows // count + 1], (rows, 3))
except ValueError as err:
    report["shape_error"] = str(err)

total = lc.jit(lc.shard_map(lambda v: lax.psum(jnp.sum(v, axis=0), "x"), mesh=mesh,
                            in_specs=P("x"), out_specs=P()))
report["psum"] = np.asarray(total(x)).tolist()

def loss_fn(w, b, xb, yb):
    return jnp.mean((xb @ w + b - yb) ** 2)

def sgd(w, b, xb, yb):
    loss, (gw, gb) = lc.value_and_grad(loss_fn, argnums=(0, 1))(w, b, xb, yb)
    return w - 0.1 * gw, b - 0.1 * gb, loss

step = lc.jit(sgd, in_shardings=(replicated, replicated, batch, batch),
              out_shardings=(replicated, replicated, replicated))
w = lc.make_array_from_process_local_data(replicated, np.zeros((3, 1), np.float32))
b = lc.make_array_from_process_local_data(replicated, np.zeros((1,), np.float32))
report["losses"] = []
for _ in range(3):
    w, b, loss = step(w, b, x, y)
    report["losses"].append(float(loss))
report["w"], report["b"] = np.asarray(w).ravel().tolist(), np.asarray(b).tolist()
try:
    step(w, b, x_all, y_all)
except ValueError as err:
    report["host_data_error"] = str(err)

from_callback = lc.make_array_from_callback(x_all.shape, batch, lambda index: x_all[index])
report["callback"] = multihost_utils.process_allgather(from_callback, tiled=True).tolist()
report["stacked"] = multihost_utils.process_allgather(np.float32(pid)).tolist()
report["tiled"] = multihost_utils.process_allgather(np.full(2, pid, np.int32), tiled=True).tolist()
report["broadcast"] = multihost_utils.broadcast_one_to_all(
    np.arange(2, dtype=np.int32) + pid).tolist()
try:
    multihost_utils.sync_global_devices(f"step {pid}")
except AssertionError as err:
    report["sync_error"] = str(err)
multihost_utils.sync_global_devices("done")
lc.distributed.shutdown()
print(json.dumps(report))
"""

# A process of a program one of whose processes is killed after the first psum.
_KILLED = """
import os, signal, sys, time
import numpy as np
import lamella.core as lc, lamella.lax as lax
from lamella.core.sharding import NamedSharding, P, make_mesh

address, count, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lc.distributed.initialize(address, count, pid, initialization_timeout=60,
                          heartbeat_timeout_seconds=5, shutdown_timeout_seconds=5)
mesh = make_mesh((count,), ("x",))
total = lc.jit(lc.shard_map(lambda v: lax.psum(v, "x"), mesh=mesh, in_specs=P("x"),
                            out_specs=P()))
x = lc.make_array_from_process_local_data(NamedSharding(mesh, P("x")), np.ones(1, np.float32))
print("first", float(np.asarray(total(x))[0]), flush=True)
if pid == 1:
    os.kill(os.getpid(), signal.SIGKILL)
start = time.monotonic()
try:
    while time.monotonic() - start < 60:
        total(x).block_until_ready()
except Exception as err:
    print("error", type(err).__name__, str(err).replace(chr(10), " "), flush=True)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(script: str, count: int, devices_per_process: int) -> list[subprocess.Popen]:
    address = f"127.0.0.1:{_free_port()}"
    env = {k: v for k, v in os.environ.items()
           if k not in ("LAMELLA_NUM_CPU_DEVICES", "XLA_FLAGS")}
    env.update(TF_CPP_MIN_LOG_LEVEL="2", LAMELLA_NUM_CPU_DEVICES=str(devices_per_process))
    return [subprocess.Popen([sys.executable, "-c", script, address, str(count), str(pid)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env) for pid in range(count)]


def _finish(children: list[subprocess.Popen], timeout: float) -> list[tuple[int, str, str]]:
    """Each child's (return code, stdout, stderr); all are killed after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    results = []
    try:
        for child in children:
            out, err = child.communicate(timeout=max(deadline - time.monotonic(), 1))
            results.append((child.returncode, out, err))
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.communicate()
    return results


def _reference(rows: int) -> dict:
    """The child's numbers in NumPy: the column sums and three SGD steps on all rows."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype(np.float32)
    w, b = np.zeros((3, 1), np.float32), np.zeros((1,), np.float32)
    losses = []
    for _ in range(3):
        r = x @ w + b - y
        losses.append(float(np.mean(r ** 2)))
        w, b = w - 0.1 * (2 / rows) * (x.T @ r), b - 0.1 * (2 / rows) * r.sum(0)
    return {"x": x, "psum": x.sum(0), "losses": losses, "w": w.ravel(), "b": b}


def _check_program(count: int, devices_per_process: int, timeout: float) -> None:
    results = _finish(_start(_CHILD, count, devices_per_process), timeout)
    devices = count * devices_per_process
    ref = _reference(2 * devices)
    reports = []
    for code, out, err in results:
        assert code == 0, err[-3000:]
        reports.append(json.loads(out.strip().splitlines()[-1]))
    for pid, r in enumerate(reports):
        assert (r["devices"], r["local"]) == (devices, devices_per_process)
        assert r["shape"] == [2 * devices, 3] and not r["fully_addressable"] and r["sharding"]
        # This process's devices hold its rows: two per device, in order.
        starts = range(2 * devices_per_process * pid, 2 * devices_per_process * (pid + 1), 2)
        assert r["shards"] == [[pid, s, s + 2, True] for s in starts]
        assert r["repr"] == f"Array(shape=({2 * devices}, 3), dtype=float32)"
        assert len(r["read_errors"]) == 2
        assert all("non-addressable" in e and "process_allgather" in e for e in r["read_errors"])
        assert f"shape ({2 * devices // count + 1}, 3)" in r["shape_error"]
        assert f"global shape ({2 * devices}, 3)" in r["shape_error"]
        assert "host data" in r["host_data_error"]
        np.testing.assert_allclose(r["psum"], ref["psum"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r["losses"], ref["losses"], rtol=1e-5)
        np.testing.assert_allclose(r["w"], ref["w"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(r["b"], ref["b"], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(np.array(r["callback"], np.float32), ref["x"])
        np.testing.assert_array_equal(np.array(r["replicated"], np.float32), ref["x"])
        assert "only be laid out anew over the same devices" in r["move_error"]
        assert r["stacked"] == list(range(count))
        assert r["tiled"] == [p for p in range(count) for _ in range(2)]
        assert r["broadcast"] == [0, 1]
        assert "sync_global_devices name mismatch ('step" in r["sync_error"]
    # Every process computed the same numbers, bit for bit.
    for key in ("psum", "losses", "w", "b"):
        assert all(r[key] == reports[0][key] for r in reports)


def test_two_processes_with_two_devices_each():
    _check_program(count=2, devices_per_process=2, timeout=120)


@pytest.mark.parametrize("devices_per_process", [1, 2])
def test_four_processes(devices_per_process):
    # Four interpreters compile the same programs on what may be 2 cores: kept under a minute.
    _check_program(count=4, devices_per_process=devices_per_process, timeout=60)


def test_a_killed_process_fails_the_others_quickly():
    results = _finish(_start(_KILLED, 3, 1), timeout=90)
    assert results[1][0] == -9  # the one killed
    for code, out, err in (results[0], results[2]):
        assert code == 0, err[-3000:]
        lines = out.strip().splitlines()
        assert "first 3.0" in lines  # the psum ran before the kill
        assert lines[-1].startswith("error JaxRuntimeError") and "Gloo" in lines[-1], out


# A process killed before any collective: the others' first psum waits for its gloo
# connection, and the coordination service, missing its heartbeats, ends them.
_KILLED_EARLY = """
import os, signal, sys
import numpy as np
import lamella.core as lc, lamella.lax as lax
from lamella.core.sharding import NamedSharding, P, make_mesh

address, count, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lc.distributed.initialize(address, count, pid, initialization_timeout=60,
                          heartbeat_timeout_seconds=3, shutdown_timeout_seconds=3)
if pid == 1:
    os.kill(os.getpid(), signal.SIGKILL)
mesh = make_mesh((count,), ("x",))
total = lc.jit(lc.shard_map(lambda v: lax.psum(v, "x"), mesh=mesh, in_specs=P("x"),
                            out_specs=P()))
x = lc.make_array_from_process_local_data(NamedSharding(mesh, P("x")), np.ones(1, np.float32))
print("sum", np.asarray(total(x)), flush=True)
"""


def test_a_process_killed_before_any_collective_ends_the_others_by_heartbeat():
    start = time.monotonic()
    results = _finish(_start(_KILLED_EARLY, 2, 1), timeout=90)
    assert time.monotonic() - start < 60  # heartbeat timeout 3 s, not a hang
    assert results[1][0] == -9
    code, out, err = results[0]
    assert code != 0 and "sum" not in out
    assert "stopped sending heartbeats" in err


def test_an_unreachable_coordinator_fails_within_the_timeout():
    script = ("import sys, lamella.core as lc, lamella.lax\n"
              "try:\n"
              "    lc.distributed.initialize(sys.argv[1], 2, 1, initialization_timeout=2)\n"
              "except TimeoutError as err:\n"
              "    print(err)\n"
              "print(lc.distributed.is_initialized(), lc.process_count())\n")
    address = f"127.0.0.1:{_free_port()}"
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script, address], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert time.monotonic() - start < 30
    message, state = done.stdout.strip().splitlines()
    assert f"no coordination service answered at {address}" in message
    assert "initialization_timeout=2" in message
    assert state == "False 1"  # still usable as a single process



def test_processes_that_never_join_end_the_waiting_one_within_the_timeout():
    # Process 0 starts the service and waits for process 1, which never comes: jaxlib ends
    # the process (as JAX's does) once initialization_timeout has passed, saying why.
    script = ("import sys, lamella.core as lc, lamella.lax\n"
              "lc.distributed.initialize(sys.argv[1], 2, 0, initialization_timeout=2)\n"
              "print('joined')\n")
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script, f"127.0.0.1:{_free_port()}"],
                          capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert time.monotonic() - start < 45
    assert done.returncode != 0 and "joined" not in done.stdout
    assert "DEADLINE_EXCEEDED" in done.stderr and "RegisterTask" in done.stderr

# make_array_from_process_local_data on 2 processes x 2 devices, a (2, 2) mesh of them
# ("grid": process p's devices are row p; "swapped": its transpose): the global shape and,
# per process, each shard's local device, index and first value, as JAX 0.10.2 gives them
# (None: JAX raises ValueError). Process p's local data is arange + 100 * p.
_LAYOUTS_FROM_JAX = {
    ("grid", ("a",), (2, 4), None): [
        ((4, 4), [(0, "0:2,:", 0.0), (1, "0:2,:", 0.0)]),
        ((4, 4), [(0, "2:4,:", 100.0), (1, "2:4,:", 100.0)])],
    ("grid", ("b",), (4, 4), None): [
        ((4, 4), [(0, "0:2,:", 0.0), (1, "2:4,:", 8.0)]),
        ((4, 4), [(0, "0:2,:", 100.0), (1, "2:4,:", 108.0)])],
    ("grid", (None, "a"), (4, 2), None): [
        ((4, 4), [(0, ":,0:2", 0.0), (1, ":,0:2", 0.0)]),
        ((4, 4), [(0, ":,2:4", 100.0), (1, ":,2:4", 100.0)])],
    ("swapped", ("a",), (2, 4), None): [
        ((2, 4), [(0, "0:1,:", 0.0), (1, "1:2,:", 4.0)]),
        ((2, 4), [(0, "0:1,:", 100.0), (1, "1:2,:", 104.0)])],
    ("swapped", (("b", "a"),), (2, 4), None): [
        ((4, 4), [(0, "0:1,:", 0.0), (1, "1:2,:", 4.0)]),
        ((4, 4), [(0, "2:3,:", 100.0), (1, "3:4,:", 104.0)])],
    ("grid", ("b", "a"), (2, 2), None): [
        ((2, 4), [(0, "0:1,0:2", 0.0), (1, "1:2,0:2", 2.0)]),
        ((2, 4), [(0, "0:1,2:4", 100.0), (1, "1:2,2:4", 102.0)])],
    ("grid", (("a", "b"),), (4, 4), (4, 4)): [
        ((4, 4), [(0, "0:1,:", 0.0), (1, "1:2,:", 4.0)]),
        ((4, 4), [(0, "2:3,:", 108.0), (1, "3:4,:", 112.0)])],
    ("swapped", ("b",), (2, 4), (4, 4)): [
        ((4, 4), [(0, "0:2,:", 0.0), (1, "0:2,:", 0.0)]),
        ((4, 4), [(0, "2:4,:", 100.0), (1, "2:4,:", 100.0)])],
    ("swapped", (), (2, 4), (4, 4)): [
        None,
        None],
}

_LAYOUTS = """
import ast, json, sys
import numpy as np
import lamella.core as lc, lamella.lax
from lamella.core.sharding import Mesh, NamedSharding, P

address, count, pid, cases = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
lc.distributed.initialize(address, count, pid, initialization_timeout=60)
grid = np.array(lc.devices(), dtype=object).reshape(2, 2)
out = []
for kind, spec, local_shape, global_shape in ast.literal_eval(cases):
    mesh = Mesh(grid if kind == "grid" else grid.T, ("a", "b"))
    data = np.arange(np.prod(local_shape), dtype=np.float32).reshape(local_shape) + 100 * pid
    try:
        x = lc.make_array_from_process_local_data(NamedSharding(mesh, P(*spec)), data,
                                                  global_shape)
    except ValueError:
        out.append(None)
        continue
    shards = []
    for s in x.addressable_shards:
        index = ",".join(":" if i.start is None else f"{i.start}:{i.stop}" for i in s.index)
        part = np.asarray(s.data)
        assert part.shape == np.empty(x.shape)[s.index].shape
        shards.append([lc.local_devices().index(s.device), index, float(part.flat[0])])
    out.append([list(x.shape), shards])
lc.distributed.shutdown()
print(json.dumps(out))
"""


def test_process_local_data_layouts_agree_with_jax():
    cases = list(_LAYOUTS_FROM_JAX)
    address = f"127.0.0.1:{_free_port()}"
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(TF_CPP_MIN_LOG_LEVEL="2", LAMELLA_NUM_CPU_DEVICES="2")
    children = [subprocess.Popen([sys.executable, "-c", _LAYOUTS, address, "2", str(pid),
                                  repr(cases)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env=env) for pid in range(2)]
    for pid, (code, out, err) in enumerate(_finish(children, timeout=120)):
        assert code == 0, err[-3000:]
        seen = json.loads(out.strip().splitlines()[-1])
        for case, got in zip(cases, seen):
            want = _LAYOUTS_FROM_JAX[case][pid]
            if want is not None:
                want = [list(want[0]), [list(shard) for shard in want[1]]]
            assert got == want, (case, pid)


# multihost_utils.host_local_array_to_global_array and back, 2 processes x 2 devices on a
# (2, 2) mesh and its transpose: each mesh's local_mesh (shape, local device order), and
# per spec the global shape, each shard's local device, index and first value, the local
# shape back, whether the round trip returns the data, and whether it is local — as JAX
# 0.10.2 gives them. Process p's local data is arange(16).reshape(4, 4) + 100 * p.
_HOST_LOCAL_FROM_JAX = {
    "grid local mesh": [
        ((1, 2), [0, 1]),
        ((1, 2), [0, 1])],
    "grid P('a',)": [
        ((8, 4), [(0, "0:4,:", 0.0), (1, "0:4,:", 0.0)], (4, 4), True, True),
        ((8, 4), [(0, "4:8,:", 100.0), (1, "4:8,:", 100.0)], (4, 4), True, True)],
    "grid P('b',)": [
        ((4, 4), [(0, "0:2,:", 0.0), (1, "2:4,:", 8.0)], (4, 4), True, True),
        ((4, 4), [(0, "0:2,:", 100.0), (1, "2:4,:", 108.0)], (4, 4), True, True)],
    "grid P(('a', 'b'),)": [
        ((8, 4), [(0, "0:2,:", 0.0), (1, "2:4,:", 8.0)], (4, 4), True, True),
        ((8, 4), [(0, "4:6,:", 100.0), (1, "6:8,:", 108.0)], (4, 4), True, True)],
    "grid P(None, 'b')": [
        ((4, 4), [(0, ":,0:2", 0.0), (1, ":,2:4", 2.0)], (4, 4), True, True),
        ((4, 4), [(0, ":,0:2", 100.0), (1, ":,2:4", 102.0)], (4, 4), True, True)],
    "grid P()": [
        ((4, 4), [(0, ":,:", 0.0), (1, ":,:", 0.0)], (4, 4), True, True),
        ((4, 4), [(0, ":,:", 100.0), (1, ":,:", 100.0)], (4, 4), True, True)],
    "grid P('b', 'a')": [
        ((4, 8), [(0, "0:2,0:4", 0.0), (1, "2:4,0:4", 8.0)], (4, 4), True, True),
        ((4, 8), [(0, "0:2,4:8", 100.0), (1, "2:4,4:8", 108.0)], (4, 4), True, True)],
    "swapped local mesh": [
        ((2, 1), [0, 1]),
        ((2, 1), [0, 1])],
    "swapped P('a',)": [
        ((4, 4), [(0, "0:2,:", 0.0), (1, "2:4,:", 8.0)], (4, 4), True, True),
        ((4, 4), [(0, "0:2,:", 100.0), (1, "2:4,:", 108.0)], (4, 4), True, True)],
    "swapped P('b',)": [
        ((8, 4), [(0, "0:4,:", 0.0), (1, "0:4,:", 0.0)], (4, 4), True, True),
        ((8, 4), [(0, "4:8,:", 100.0), (1, "4:8,:", 100.0)], (4, 4), True, True)],
    "swapped P(('a', 'b'),)": [
        ((8, 4), [(0, "0:2,:", 0.0), (1, "4:6,:", 8.0)], (4, 4), True, True),
        ((8, 4), [(0, "2:4,:", 100.0), (1, "6:8,:", 108.0)], (4, 4), True, True)],
    "swapped P(None, 'b')": [
        ((4, 8), [(0, ":,0:4", 0.0), (1, ":,0:4", 0.0)], (4, 4), True, True),
        ((4, 8), [(0, ":,4:8", 100.0), (1, ":,4:8", 100.0)], (4, 4), True, True)],
    "swapped P()": [
        ((4, 4), [(0, ":,:", 0.0), (1, ":,:", 0.0)], (4, 4), True, True),
        ((4, 4), [(0, ":,:", 100.0), (1, ":,:", 100.0)], (4, 4), True, True)],
    "swapped P('b', 'a')": [
        ((8, 4), [(0, "0:4,0:2", 0.0), (1, "0:4,2:4", 2.0)], (4, 4), True, True),
        ((8, 4), [(0, "4:8,0:2", 100.0), (1, "4:8,2:4", 102.0)], (4, 4), True, True)],
}

_HOST_LOCAL = """
import json, sys
import numpy as np
import lamella.core as lc, lamella.lax
from lamella.core import multihost_utils as mh
from lamella.core.sharding import Mesh, P

address, count, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lc.distributed.initialize(address, count, pid, initialization_timeout=60)
grid = np.array(lc.devices(), dtype=object).reshape(2, 2)
local = lc.local_devices()
out = {}
for kind, devices in (("grid", grid), ("swapped", grid.T)):
    mesh = Mesh(devices, ("a", "b"))
    out[kind + " local mesh"] = [list(mesh.local_mesh.devices.shape),
                                 [local.index(d) for d in mesh.local_mesh.devices.flat]]
    for spec in (P("a"), P("b"), P(("a", "b")), P(None, "b"), P(), P("b", "a")):
        data = np.arange(16, dtype=np.float32).reshape(4, 4) + 100 * pid
        x = mh.host_local_array_to_global_array({"d": data}, mesh, {"d": spec})["d"]
        back = mh.global_array_to_host_local_array(x, mesh, spec)
        out[f"{kind} {spec}"] = [
            list(x.shape),
            [[local.index(s.device),
              ",".join(":" if i.start is None else f"{i.start}:{i.stop}" for i in s.index),
              float(np.asarray(s.data).flat[0])] for s in x.addressable_shards],
            list(back.shape), bool(np.array_equal(np.asarray(back), data)),
            back.is_fully_addressable]
lc.distributed.shutdown()
print(json.dumps(out))
"""


def test_host_local_and_global_arrays_agree_with_jax():
    for pid, (code, out, err) in enumerate(_finish(_start(_HOST_LOCAL, 2, 2), timeout=120)):
        assert code == 0, err[-3000:]
        seen = json.loads(out.strip().splitlines()[-1])
        assert seen.keys() == _HOST_LOCAL_FROM_JAX.keys()
        for key, want in _HOST_LOCAL_FROM_JAX.items():
            # tuples (as recorded) against JSON's lists
            assert seen[key] == json.loads(json.dumps(want[pid])), (key, pid)

# pmap in a program of 2 processes x 2 devices: each process passes and gets its own
# slices, collectives and axis_index span all 4 devices (JAX 0.10.2's numbers).
_PMAP = """
import json, sys
import numpy as np
import lamella.core as lc, lamella.lax as lax, lamella.numpy as jnp

address, count, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lc.distributed.initialize(address, count, pid, initialization_timeout=60)

def f(v, w):
    return (lax.psum(v, "i") + lax.axis_index("i"), lax.pmean(w * v[0], "i"),
            jnp.stack([v, v * 2], 1))

x = np.arange(4, dtype=np.float32).reshape(2, 2) + 10 * pid
a, b, c = lc.pmap(f, "i", in_axes=(0, None), out_axes=(0, None, 1))(x, np.float32(3))
grad = lc.pmap(lc.grad(lambda v: lax.psum(jnp.sum(v * v), "i")), "i")(x)
lc.distributed.shutdown()
print(json.dumps({"a": np.asarray(a).tolist(), "b": float(b), "c": np.asarray(c).tolist(),
                  "grad": np.asarray(grad).tolist(), "local": a.is_fully_addressable}))
"""

_PMAP_FROM_JAX = [
    {"a": [[24.0, 28.0], [25.0, 29.0]], "b": 18.0,
     "c": [[[0.0, 0.0], [2.0, 4.0]], [[1.0, 2.0], [3.0, 6.0]]],
     "grad": [[0.0, 8.0], [16.0, 24.0]], "local": True},
    {"a": [[26.0, 30.0], [27.0, 31.0]], "b": 18.0,
     "c": [[[10.0, 20.0], [12.0, 24.0]], [[11.0, 22.0], [13.0, 26.0]]],
     "grad": [[80.0, 88.0], [96.0, 104.0]], "local": True},
]


def test_pmap_spans_every_process():
    results = _finish(_start(_PMAP, 2, 2), timeout=120)
    for pid, (code, out, err) in enumerate(results):
        assert code == 0, err[-3000:]
        assert json.loads(out.strip().splitlines()[-1]) == _PMAP_FROM_JAX[pid]

# With one process the same names work on this process's data alone.

def test_process_local_data_of_one_process():
    mesh = make_mesh((1,), ("x",))
    s = NamedSharding(mesh, P("x"))
    a = lc.make_array_from_process_local_data(s, np.arange(4.0, dtype=np.float32))
    assert a.is_fully_addressable and a.sharding.is_fully_addressable
    np.testing.assert_array_equal(np.asarray(a), np.arange(4.0))
    tree = lc.make_array_from_process_local_data(s, {"a": np.ones(2), "b": np.zeros(3)})
    assert tree["a"].shape == (2,) and tree["b"].shape == (3,)
    with pytest.raises(ValueError, match=r"global_shape=\(8,\).*local_data.shape=\(4,\)"):
        lc.make_array_from_process_local_data(s, np.arange(4.0), (8,))
    assert s.addressable_devices == {lc.devices()[0]}
    assert s.addressable_devices_indices_map((4,)) == s.devices_indices_map((4,))


def test_multihost_utils_of_one_process():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    np.testing.assert_array_equal(multihost_utils.process_allgather(x), x[None])
    np.testing.assert_array_equal(multihost_utils.process_allgather(x, tiled=True), x)
    assert multihost_utils.process_allgather(np.float32(2), tiled=True).shape == (1,)
    out = multihost_utils.broadcast_one_to_all({"x": x, "s": 1.5})
    assert isinstance(out["x"], np.ndarray) and out["s"] == 1.5
    multihost_utils.assert_equal(x)
    multihost_utils.sync_global_devices("one")


def test_process_numbers_of_one_process():
    assert lc.process_indices() == [0]
    with pytest.warns(UserWarning, match="old name of process_index"):
        assert lc.host_id() == 0
    with pytest.warns(UserWarning, match="old name of process_count"):
        assert lc.host_count() == 1
    with pytest.warns(UserWarning, match="old name of process_indices"):
        assert lc.host_ids() == [0]
