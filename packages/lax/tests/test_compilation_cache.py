"""The persistent compilation cache: hits across processes, damaged entries, races, eviction."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from jaxlib import xla_client as xc

import lamella.core as lc
import lamella.lax as lax
from lamella.core import config
from lamella.lax import compilation_cache
from lamella.lax.mlir_context import parse_module
from lamella.lax.runtime import compile as runtime_compile
from lamella.lax.runtime import default_device
from lamella.lax.runtime.compilation_cache import PersistentCache, cache_key

# A child process: jit one function, print its result and the cache's counters.
_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import lamella.core as lc
    import lamella.lax as lax
    from lamella.lax import compilation_cache
    f = lc.jit(lambda x, y: lax.add(lax.mul(lax.sin(x), y), lax.cos(y)))
    out = f(np.arange(4, dtype=np.float32), np.full(4, 2.0, np.float32))
    stats = compilation_cache.persistent_cache().stats
    print(json.dumps({"out": np.asarray(out).tolist(), "stats": stats}))
""")

_EXPECTED = (np.sin(np.arange(4, dtype=np.float32)) * 2 + np.cos(np.float32(2))).tolist()


def _env(cache_dir, **extra):
    env = dict(os.environ, LAMELLA_COMPILATION_CACHE_DIR=str(cache_dir), **extra)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    return env


def _child_command():
    # The threshold of 1 s would skip these small programs: every one is written.
    return [sys.executable, "-c",
            "from lamella.core import config; "
            "config.update('persistent_cache_min_compile_time_secs', 0.0)\n" + _CHILD]


def _run_child(cache_dir):
    done = subprocess.run(_child_command(), env=_env(cache_dir), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _entries(cache_dir):
    return sorted(p for p in cache_dir.iterdir() if p.suffix == ".lmlc")


def test_second_process_loads_instead_of_compiling(tmp_path):
    first = _run_child(tmp_path)
    assert first["stats"]["compiles"] >= 1 and first["stats"]["hits"] == 0
    assert first["stats"]["writes"] == first["stats"]["compiles"]
    second = _run_child(tmp_path)
    assert second["stats"]["compiles"] == 0
    assert second["stats"]["hits"] == first["stats"]["compiles"]
    np.testing.assert_allclose(second["out"], _EXPECTED, rtol=1e-6)
    assert second["out"] == first["out"]


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "header_only"])
def test_damaged_entries_are_recompiled_and_rewritten(tmp_path, damage):
    first = _run_child(tmp_path)
    originals = {p: p.read_bytes() for p in _entries(tmp_path)}
    for path, data in originals.items():
        if damage == "flip":
            mid = len(data) // 2
            path.write_bytes(data[:mid] + bytes([data[mid] ^ 0xFF]) + data[mid + 1:])
        elif damage == "truncate":
            path.write_bytes(data[: len(data) * 2 // 3])
        elif damage == "empty":
            path.write_bytes(b"")
        else:
            path.write_bytes(data[:30])
    second = _run_child(tmp_path)
    n = first["stats"]["compiles"]
    assert second["stats"]["corrupt"] == n and second["stats"]["compiles"] == n
    np.testing.assert_allclose(second["out"], _EXPECTED, rtol=1e-6)
    # Rewritten whole: a third process hits every entry.
    third = _run_child(tmp_path)
    assert third["stats"]["hits"] == n and third["stats"]["corrupt"] == 0


def test_concurrent_writers_leave_whole_entries(tmp_path):
    children = [subprocess.Popen(_child_command(), env=_env(tmp_path), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        np.testing.assert_allclose(json.loads(out.strip().splitlines()[-1])["out"], _EXPECTED,
                                   rtol=1e-6)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]
    after = _run_child(tmp_path)
    assert after["stats"]["compiles"] == 0 and after["stats"]["corrupt"] == 0


def _program(n):
    """A small distinct module per n: x + (n + 1), each compiling to code of one size."""
    return parse_module(
        "func.func public @main(%x: tensor<8xf32>) -> tensor<8xf32> {"
        f" %c = stablehlo.constant dense<{n + 1}.0> : tensor<8xf32>"
        " %0 = stablehlo.add %x, %c : tensor<8xf32> return %0 : tensor<8xf32> }")


def test_least_recently_used_entries_are_evicted(tmp_path):
    probe = PersistentCache(tmp_path / "probe", min_compile_time_secs=0.0)
    runtime_compile(_program(0), persistent_cache=probe)
    entry_size = _entries(tmp_path / "probe")[0].stat().st_size
    cache = PersistentCache(tmp_path / "lru", max_size=int(entry_size * 3.5),
                            min_compile_time_secs=0.0)
    keys = [_key_of(_program(n), default_device()) for n in range(5)]
    for n in range(3):
        runtime_compile(_program(n), persistent_cache=cache)
        os.utime(tmp_path / "lru" / f"{keys[n]}.lmlc", (0, 1000 + n))
    # A hit makes program 0, the oldest, the most recently used.
    exe = runtime_compile(_program(0), persistent_cache=cache)
    assert cache.stats["hits"] == 1
    np.testing.assert_array_equal(np.asarray(exe(np.ones(8, np.float32))[0]), 2 * np.ones(8))
    runtime_compile(_program(3), persistent_cache=cache)
    runtime_compile(_program(4), persistent_cache=cache)
    assert {p.stem for p in _entries(tmp_path / "lru")} == {keys[0], keys[3], keys[4]}
    assert cache.stats["evictions"] == 2
    assert sum(p.stat().st_size for p in _entries(tmp_path / "lru")) <= cache.max_size


def _key_of(module, device):
    options = xc.CompileOptions()
    options.device_assignment = xc.DeviceAssignment.create(np.array([[device.id]], np.int32))
    return cache_key(module, options, device)


def test_min_compile_time_and_entry_size_skip_writes(tmp_path):
    slow_only = PersistentCache(tmp_path / "a", min_compile_time_secs=60.0)
    runtime_compile(_program(0), persistent_cache=slow_only)
    big_only = PersistentCache(tmp_path / "b", min_compile_time_secs=0.0,
                               min_entry_size_bytes=1 << 30)
    runtime_compile(_program(0), persistent_cache=big_only)
    assert slow_only.stats["compiles"] == big_only.stats["compiles"] == 1
    assert slow_only.stats["writes"] == big_only.stats["writes"] == 0
    assert not _entries(tmp_path / "a") and not _entries(tmp_path / "b")


def test_a_payload_xla_rejects_is_recompiled(tmp_path):
    cache = PersistentCache(tmp_path, min_compile_time_secs=0.0)
    runtime_compile(_program(0), persistent_cache=cache)
    (path,) = _entries(tmp_path)
    # A well-formed entry (right checksum) whose payload is not an executable.
    cache.write(path.stem, b"not an executable", 0.5)
    exe = runtime_compile(_program(0), persistent_cache=cache)
    assert cache.stats["corrupt"] == 1 and cache.stats["compiles"] == 2
    np.testing.assert_array_equal(np.asarray(exe(np.ones(8, np.float32))[0]), 2 * np.ones(8))


def test_key_depends_on_program_options_and_flags(tmp_path, monkeypatch):
    device = default_device()
    base = _key_of(_program(0), device)
    assert base == _key_of(_program(0), device)
    assert base != _key_of(_program(1), device)
    options = xc.CompileOptions()
    options.device_assignment = xc.DeviceAssignment.create(np.array([[device.id]], np.int32))
    options.env_option_overrides = [("xla_cpu_enable_fast_math", True)]
    assert base != cache_key(_program(0), options, device)
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=true")
    assert base != _key_of(_program(0), device)


def test_config_flags_reach_jit(tmp_path):
    f = lc.jit(lambda x: lax.mul(lax.exp(x), 3.0))
    with config.override("compilation_cache_dir", str(tmp_path)), \
            config.override("persistent_cache_min_compile_time_secs", 0.0):
        np.testing.assert_allclose(np.asarray(f(np.ones(3, np.float32))), 3 * np.e, rtol=1e-6)
        assert compilation_cache.persistent_cache().stats["writes"] >= 1
    assert _entries(tmp_path)
    assert compilation_cache.persistent_cache() is None
