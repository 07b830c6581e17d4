"""lamella.core.distributed: two processes on this machine join one program through the
coordination service, see each other's devices, and leave (bounded by a timeout)."""

import json
import os
import socket
import subprocess
import sys

import pytest

import lamella.core as lc

_CHILD = """
import json, sys
import lamella.core as lc, lamella.numpy as jnp
address, pid = sys.argv[1], int(sys.argv[2])
assert not lc.distributed.is_initialized()
lc.distributed.initialize(address, 2, pid, initialization_timeout=60,
                          shutdown_timeout_seconds=60)
report = {"initialized": lc.distributed.is_initialized(), "index": lc.process_index(),
          "count": lc.process_count(), "devices": lc.device_count(),
          "local": [d.process_index for d in lc.local_devices()],
          "owners": sorted(d.process_index for d in lc.devices()),
          "sum": float(jnp.sum(jnp.arange(4.0) * (pid + 1)))}
try:
    lc.distributed.initialize(address, 2, pid)
except RuntimeError as e:
    report["again"] = str(e)
lc.distributed.shutdown()
report["after"] = lc.distributed.is_initialized()
print(json.dumps(report))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_two_processes_join_one_program():
    address = f"127.0.0.1:{_free_port()}"
    env = {k: v for k, v in os.environ.items()
           if k not in ("LAMELLA_NUM_CPU_DEVICES", "XLA_FLAGS")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    children = [subprocess.Popen([sys.executable, "-c", _CHILD, address, str(pid)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=env) for pid in (0, 1)]
    reports = []
    try:
        for child in children:
            out, err = child.communicate(timeout=180)
            assert child.returncode == 0, err[-3000:]
            reports.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
    for pid, report in enumerate(reports):
        assert report["initialized"] and not report["after"]
        assert (report["index"], report["count"], report["devices"]) == (pid, 2, 2)
        assert report["local"] == [pid] and report["owners"] == [0, 1]
        assert report["sum"] == 6.0 * (pid + 1)
        assert "only be called once" in report["again"]


def test_initialize_needs_the_cluster_and_comes_first():
    with pytest.raises(ValueError, match="coordinator_address, num_processes and process_id"):
        lc.distributed.initialize()
    import lamella.numpy as jnp
    jnp.zeros(2).block_until_ready()  # the backend runs for one process now
    with pytest.raises(RuntimeError, match="before any computation"):
        lc.distributed.initialize("127.0.0.1:1", 2, 1)
    assert not lc.distributed.is_initialized()
    lc.distributed.shutdown()  # nothing to leave: no error
