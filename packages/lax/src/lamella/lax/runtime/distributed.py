"""Several processes as one program: jaxlib's distributed runtime (a coordination
service in process 0, a client in every process) and a CPU backend built on it.

`initialize` must run before the first computation: the CPU client is then made
with the distributed client, so every process sees all processes' devices (each
device's `process_index` says whose it is) and cross-process collectives go
through gloo over TCP.

jaxlib ends the whole process (a fatal log line, no Python exception) when its
client can't reach the coordination service, so a process that doesn't start the
service first checks, in Python, that something listens at the coordinator's
address, and raises TimeoutError if nothing does within `initialization_timeout`.
A process whose peer dies gets a Python error from the next collective (gloo sees
the connection close); jaxlib's heartbeat ends processes the service has lost.
"""

from __future__ import annotations

import atexit
import socket
import time
from typing import Any

from jaxlib import _jax

from lamella.lax.runtime import backends

_service: Any = None
_client: Any = None


def initialize(coordinator_address: str, num_processes: int, process_id: int, *,
               initialization_timeout: int = 300, heartbeat_timeout_seconds: int = 100,
               shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None) -> None:
    """Joins the program's processes: process 0 also starts the coordination service
    at `coordinator_address` ("host:port"). Blocks until all `num_processes` joined
    (or `initialization_timeout` seconds passed)."""
    global _service, _client
    if _client is not None:
        raise RuntimeError("distributed.initialize should only be called once.")
    if backends._backends_state is not None:
        raise RuntimeError("distributed.initialize() must be called before any computation "
                           "is executed (the backend already started for one process)")
    if not 0 <= process_id < num_processes:
        raise ValueError(f"process_id {process_id} is not in [0, {num_processes})")
    if process_id != 0:
        _wait_for_coordinator(coordinator_address, initialization_timeout, process_id,
                              num_processes)
    if process_id == 0:
        port = coordinator_address.rsplit(":", 1)[1]
        _service = _jax.get_distributed_runtime_service(
            coordinator_bind_address or f"[::]:{port}", num_processes,
            heartbeat_timeout=heartbeat_timeout_seconds,
            shutdown_timeout=shutdown_timeout_seconds)
    client = _jax.get_distributed_runtime_client(
        coordinator_address, process_id, init_timeout=initialization_timeout,
        heartbeat_timeout=heartbeat_timeout_seconds, shutdown_timeout=shutdown_timeout_seconds,
        shutdown_on_destruction=False)
    try:
        client.connect()
    except Exception:
        if _service is not None:
            _service.shutdown()
            _service = None
        raise
    _client = client
    backends.set_cpu_cluster(client, process_id, num_processes)
    # Leaving in order at exit (client, then service): a service stopped under a live
    # client makes jaxlib end the process with a fatal error.
    atexit.register(_leave_at_exit)


def _wait_for_coordinator(address: str, timeout: float, process_id: int,
                          num_processes: int) -> None:
    """Returns once something accepts TCP connections at `address` ("host:port")."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, int(port)), timeout=1.0).close()
            return
        except OSError as err:
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    f"distributed.initialize: no coordination service answered at {address} "
                    f"within initialization_timeout={timeout} s (this is process {process_id} "
                    f"of {num_processes}; process 0 starts the service there): {err}") from None
            time.sleep(0.1)


def _leave_at_exit() -> None:
    try:
        shutdown()
    except Exception as err:  # another process is gone: nobody to leave with
        print(f"lamella.core.distributed: shutdown at exit failed: {err}", flush=True)


def is_initialized() -> bool:
    """Whether `initialize` ran (and `shutdown` did not since)."""
    return _client is not None


def shutdown() -> None:
    """Leaves the program: waits for the other processes at the client's shutdown
    barrier, then stops the coordination service (process 0). Nothing if not joined."""
    global _service, _client
    client, service, _client, _service = _client, _service, None, None
    try:
        if client is not None:
            client.shutdown()
    finally:
        if service is not None:
            service.shutdown()
