"""`lamella.core.distributed` (JAX's `jax.distributed`): one program over several
processes, each with its own devices, joined through a coordination service.

Call `initialize` in every process before the first computation; afterwards
`devices()` lists every process's devices, `local_devices()` this one's, and
`process_index()` / `process_count()` say where this process stands. Global arrays
come from `make_array_from_process_local_data` (or `make_array_from_callback`);
`lamella.core.multihost_utils` gathers, broadcasts and synchronises.

>>> is_initialized()
False
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lamella.core.dispatch import current_executor


def _runtime(required: bool = True) -> Any:
    runtime = getattr(current_executor(), "distributed_runtime", None)
    if runtime is None:
        if not required:
            return None
        raise RuntimeError("distributed.initialize needs an executor with a distributed "
                           "runtime: import lamella.lax (or lamella.numpy) first")
    return runtime()


def initialize(coordinator_address: str | None = None, num_processes: int | None = None,
               process_id: int | None = None,
               local_device_ids: int | Sequence[int] | None = None,
               cluster_detection_method: str | None = None, initialization_timeout: int = 300,
               heartbeat_timeout_seconds: int = 100, shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None, slice_index: int | None = None,
               partition_index: int | None = None) -> None:
    """Joins this process to the program: process 0 starts the coordination service at
    `coordinator_address` ("host:port"), every process connects to it and waits until
    all `num_processes` have (at most `initialization_timeout` seconds).

    lamella detects no cluster (SLURM, MPI, cloud TPU): the address, the number of
    processes and this process's id must be given.

    Failures: a process other than 0 that finds nothing listening at the address raises
    TimeoutError after `initialization_timeout` seconds. If the service is there but not
    every process joins in time, jaxlib ends the waiting processes with a fatal
    DEADLINE_EXCEEDED log line, as in JAX. Once joined, a process that dies makes the
    others' next cross-process collective raise (gloo's connection error); a process
    that loses the service for `heartbeat_timeout_seconds` is ended by jaxlib.
    """
    if cluster_detection_method is not None or None in (coordinator_address, num_processes,
                                                         process_id):
        raise ValueError("distributed.initialize: pass coordinator_address, num_processes "
                         "and process_id (lamella does not detect clusters)")
    if local_device_ids is not None or slice_index is not None or partition_index is not None:
        raise ValueError("distributed.initialize: local_device_ids, slice_index and "
                         "partition_index are not supported (every local device is used)")
    _runtime().initialize(coordinator_address, int(num_processes), int(process_id),
                          initialization_timeout=initialization_timeout,
                          heartbeat_timeout_seconds=heartbeat_timeout_seconds,
                          shutdown_timeout_seconds=shutdown_timeout_seconds,
                          coordinator_bind_address=coordinator_bind_address)


def is_initialized() -> bool:
    """Whether `initialize` ran in this process (and `shutdown` did not since)."""
    runtime = _runtime(required=False)
    return runtime is not None and runtime.is_initialized()


def shutdown() -> None:
    """Leaves the program (a barrier with the other processes); nothing if not joined."""
    runtime = _runtime(required=False)
    if runtime is not None:
        runtime.shutdown()
