"""The persistent compilation cache as configured: ``config.compilation_cache_dir`` and friends.

Set ``LAMELLA_COMPILATION_CACHE_DIR`` (or ``config.update("jax_compilation_cache_dir",
path)``, or `set_cache_dir`) and every program `jit` compiles is looked up on
disk first; ``compilation_cache_max_size`` bounds the directory (LRU),
``persistent_cache_min_compile_time_secs`` (1 s by default, as JAX) and
``persistent_cache_min_entry_size_bytes`` decide what is worth writing.

>>> import tempfile
>>> from lamella.core import config
>>> with config.override("compilation_cache_dir", tempfile.mkdtemp()):
...     persistent_cache() is not None
True
>>> persistent_cache() is None
True
"""

from __future__ import annotations

import os
import threading

from lamella.core.config import config
from lamella.lax.runtime.compilation_cache import PersistentCache

_caches: dict[tuple, PersistentCache] = {}
_lock = threading.Lock()


def persistent_cache() -> PersistentCache | None:
    """The cache the current configuration names, or None when no directory is set."""
    path = config.read("compilation_cache_dir")
    if not path:
        return None
    key = (os.fspath(path), config.read("compilation_cache_max_size"),
           config.read("persistent_cache_min_compile_time_secs"),
           config.read("persistent_cache_min_entry_size_bytes"))
    cache = _caches.get(key)
    if cache is None:
        with _lock:
            cache = _caches.get(key)
            if cache is None:
                cache = _caches[key] = PersistentCache(*key)
    return cache


def set_cache_dir(path: str | os.PathLike) -> None:
    """Use ``path`` as the persistent compilation cache of this process (JAX's name).

    >>> import tempfile
    >>> set_cache_dir(tempfile.mkdtemp()); is_initialized()
    True
    >>> reset_cache(); is_initialized()
    False
    """
    config.update("compilation_cache_dir", os.fspath(path))


def is_initialized() -> bool:
    """Whether a persistent compilation cache is in use."""
    return persistent_cache() is not None


def reset_cache() -> None:
    """Stop using the persistent compilation cache (the files stay on disk)."""
    config.update("compilation_cache_dir", None)
    with _lock:
        _caches.clear()
