"""Small list and caching helpers shared by the transformations."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from functools import wraps
from typing import Any, TypeVar

from lamella.core.config import config

T = TypeVar("T")


def split_list(xs: Sequence[T], sizes: Sequence[int]) -> list[list[T]]:
    """Splits `xs` into consecutive pieces of the given sizes plus the remainder."""
    pieces, start = [], 0
    for size in sizes:
        pieces.append(list(xs[start:start + size]))
        start += size
    pieces.append(list(xs[start:]))
    return pieces


def partition_list(mask: Sequence[bool], xs: Sequence[T]) -> tuple[list[T], list[T]]:
    """(items where mask is False, items where mask is True)."""
    falses = [x for m, x in zip(mask, xs) if not m]
    trues = [x for m, x in zip(mask, xs) if m]
    return falses, trues


def merge_lists(mask: Sequence[bool], falses: Iterable[T], trues: Iterable[T]) -> list[T]:
    """Inverse of `partition_list`."""
    falses, trues = iter(falses), iter(trues)
    return [next(trues) if m else next(falses) for m in mask]


def unzip2(pairs: Iterable[tuple[Any, Any]]) -> tuple[list, list]:
    firsts, seconds = [], []
    for a, b in pairs:
        firsts.append(a)
        seconds.append(b)
    return firsts, seconds


_cache_clearers: list[Callable[[], None]] = []


def register_cache(clear: Callable[[], None]) -> Callable[[], None]:
    """Enrolls a cache's `clear` in `lamella.core.clear_caches()`: every cache of traces,
    derived jaxprs or compiled programs registers here, in core and in the layers above."""
    _cache_clearers.append(clear)
    return clear


def clear_registered_caches() -> None:
    """Empties every cache enrolled with `register_cache`."""
    for clear in list(_cache_clearers):
        clear()


def weakref_lru_cache(maxsize: int = 64) -> Callable:
    """Caches `fn(obj, *key)` with `obj` held weakly, so entries die with it.

    Used for jaxprs derived from other jaxprs (JVP, batching, partial
    evaluation): deriving once per source jaxpr keeps downstream compile
    caches keyed on stable objects.
    """
    def decorator(fn):
        cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        # Guards the dicts only: `fn` runs unlocked, since it may recurse into this
        # or other caches. Racing threads may both derive; the first stored wins.
        lock = threading.Lock()

        @wraps(fn)
        def cached(obj, *key):
            full_key = (key, config.trace_key())
            with lock:
                entries = cache.get(obj)
                if entries is None:
                    entries = cache[obj] = OrderedDict()
                result = entries.get(full_key)
                if result is not None:
                    entries.move_to_end(full_key)
                    return result
            result = fn(obj, *key)
            with lock:
                stored = entries.setdefault(full_key, result)
                if len(entries) > maxsize:
                    entries.popitem(last=False)
            return stored

        def cache_clear() -> None:
            with lock:
                cache.clear()
        cached.cache_clear = register_cache(cache_clear)
        return cached
    return decorator
