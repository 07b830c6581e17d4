"""jaxlib's CPU LAPACK kernels as typed-FFI custom-call targets (for lamella.lax.linalg)."""

from __future__ import annotations

import threading

from jaxlib import xla_client as xc

# ----------------------------------------------------------------------------
# jaxlib's LAPACK kernels, as typed-FFI custom-call targets (lamella.lax.linalg).

_lapack_registered = False
_lapack_lock = threading.Lock()


def register_lapack_targets() -> None:
    """Make jaxlib's CPU LAPACK kernels (``lapack_?potrf_ffi`` ...) callable.

    Idempotent; lamella.lax.linalg calls it before emitting a custom call.
    ``initialize()`` hands the kernels scipy's BLAS/LAPACK function pointers:
    without it, executing them crashes the process.

    >>> register_lapack_targets()
    """
    global _lapack_registered
    if _lapack_registered:
        return
    with _lapack_lock:
        if not _lapack_registered:
            from jaxlib import lapack
            lapack._lapack.initialize()
            for name, capsule, api_version in lapack.registrations()["cpu"]:
                xc.register_custom_call_target(name, capsule, platform="cpu",
                                               api_version=api_version)
            _lapack_registered = True
