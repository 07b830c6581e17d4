"""A persistent compilation cache: compiled XLA programs kept on disk across processes.

An entry is jaxlib's serialized executable, stored under a key hashed from
everything that decides the compiled code: the module's text without locations,
the serialized compile options, the XLA flags of the environment, jaxlib's
version and the device's platform and kind. Entries are written to a temporary
file and renamed into place, so a reader sees a whole entry or none, whatever
other processes do. Each carries a SHA-256 of its payload: a truncated or
corrupted entry is detected, ignored (the program compiles again) and
rewritten. Past ``max_size`` bytes the least recently used entries (by
modification time, refreshed on every hit) are removed.

>>> import tempfile
>>> cache = PersistentCache(tempfile.mkdtemp(), min_compile_time_secs=0.0)
>>> cache.stats["hits"], cache.stats["writes"]
(0, 0)
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import struct
import tempfile
import threading
import time
from typing import Any

import jaxlib
from jaxlib import xla_client as xc

from lamella.lax.mlir_context import ir

_log = logging.getLogger("lamella")

_MAGIC = b"LMLCACHE1\n"
# magic, SHA-256 of the payload, compile time in seconds, payload length.
_HEADER = struct.Struct(f"<{len(_MAGIC)}s32sdQ")
_SUFFIX = ".lmlc"


def cache_key(module: ir.Module, options: xc.CompileOptions, device: Any,
              extra: str = "") -> str:
    """The hex key of ``module`` compiled with ``options`` for ``device``."""
    digest = hashlib.sha256()
    text = module.operation.get_asm(enable_debug_info=False, large_elements_limit=None)
    for part in (text.encode(), options.SerializeAsString(),
                 os.environ.get("XLA_FLAGS", "").encode(), jaxlib.__version__.encode(),
                 device.platform.encode(), device.device_kind.encode(),
                 device.client.platform_version.encode(), extra.encode()):
        digest.update(struct.pack("<Q", len(part)))
        digest.update(part)
    return digest.hexdigest()


class PersistentCache:
    """Compiled programs in directory ``path``, shared by every process that opens it.

    ``max_size`` bounds the bytes held (-1: no bound); programs that compiled in
    less than ``min_compile_time_secs`` or whose entry is smaller than
    ``min_entry_size_bytes`` are not written. ``stats`` counts hits, misses,
    compiles, writes, evictions and the damaged entries that were discarded.
    """

    def __init__(self, path: str | os.PathLike, max_size: int = -1,
                 min_compile_time_secs: float = 1.0, min_entry_size_bytes: int = 0):
        self.path = os.fspath(path)
        self.max_size = max_size
        self.min_compile_time_secs = min_compile_time_secs
        self.min_entry_size_bytes = min_entry_size_bytes
        self.stats = dict.fromkeys(
            ("hits", "misses", "compiles", "writes", "evictions", "corrupt"), 0)
        self._lock = threading.Lock()
        os.makedirs(self.path, exist_ok=True)

    def _file(self, key: str) -> str:
        return os.path.join(self.path, key + _SUFFIX)

    def _count(self, name: str) -> None:
        with self._lock:
            self.stats[name] += 1

    def read(self, key: str) -> bytes | None:
        """The payload stored under ``key``, or None (a damaged entry is removed)."""
        file = self._file(key)
        try:
            with open(file, "rb") as f:
                data = f.read()
        except OSError:
            return None
        problem = _damage(data)
        if problem:
            _log.warning("Discarding persistent compilation cache entry %s: %s", file, problem)
            self._count("corrupt")
            _remove(file)
            return None
        with _suppress_os_errors():
            os.utime(file)  # recently used: evicted last
        return data[_HEADER.size:]

    def write(self, key: str, payload: bytes, compile_time: float) -> None:
        """Stores ``payload`` under ``key`` atomically, then evicts past ``max_size``."""
        entry = _HEADER.pack(_MAGIC, hashlib.sha256(payload).digest(), compile_time,
                             len(payload)) + payload
        if len(entry) < self.min_entry_size_bytes:
            return
        if 0 <= self.max_size < len(entry):
            return
        try:
            fd, temp = tempfile.mkstemp(dir=self.path, prefix=".tmp-", suffix=_SUFFIX)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(entry)
                os.chmod(temp, 0o644)  # mkstemp's 0600 would hide entries from other users
                os.replace(temp, self._file(key))
            except BaseException:
                _remove(temp)
                raise
        except OSError as err:
            _log.warning("Could not write persistent compilation cache entry %s: %s", key, err)
            return
        self._count("writes")
        if self.max_size >= 0:
            self._evict(keep=self._file(key))

    def _evict(self, keep: str) -> None:
        """Removes least recently used entries until the directory holds ``max_size``."""
        entries = []
        with os.scandir(self.path) as it:
            for e in it:
                if e.name.endswith(_SUFFIX) and not e.name.startswith(".tmp-"):
                    with _suppress_os_errors():
                        st = e.stat()
                        entries.append((st.st_mtime, st.st_size, e.path))
        total = sum(size for _, size, _ in entries)
        for _, size, file in sorted(entries):
            if total <= self.max_size:
                break
            if file == keep:
                continue
            _remove(file)
            total -= size
            self._count("evictions")

    def compile_and_load(self, client: Any, module: ir.Module, devices: Any,
                         options: xc.CompileOptions, device: Any) -> Any:
        """jaxlib's loaded executable for ``module``: from the cache, or compiled and stored."""
        key = cache_key(module, options, device)
        payload = self.read(key)
        if payload is not None:
            try:
                loaded = client.deserialize_executable(payload, devices, options)
            except Exception as err:  # a payload XLA rejects is damage like a bad checksum
                _log.warning("Discarding unreadable persistent compilation cache entry %s: %s",
                             key, err)
                self._count("corrupt")
                _remove(self._file(key))
            else:
                self._count("hits")
                return loaded
        self._count("misses")
        start = time.perf_counter()
        loaded = client.compile_and_load(module, executable_devices=devices,
                                         compile_options=options)
        elapsed = time.perf_counter() - start
        self._count("compiles")
        if elapsed >= self.min_compile_time_secs:
            self.write(key, client.serialize_executable(loaded), elapsed)
        return loaded


def _damage(data: bytes) -> str | None:
    """What is wrong with an entry's bytes, or None if it is whole."""
    if len(data) < _HEADER.size:
        return "truncated header"
    magic, digest, _, length = _HEADER.unpack_from(data)
    if magic != _MAGIC:
        return "not a lamella cache entry"
    if len(data) - _HEADER.size != length:
        return f"payload of {len(data) - _HEADER.size} bytes, expected {length}"
    if hashlib.sha256(memoryview(data)[_HEADER.size:]).digest() != digest:
        return "checksum mismatch"
    return None


def _remove(file: str) -> None:
    with _suppress_os_errors():
        os.remove(file)


# Another process may remove or replace an entry at any moment: that is no error.
_suppress_os_errors = functools.partial(contextlib.suppress, OSError)
