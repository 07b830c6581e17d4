"""The runtime refuses misuse with clear errors: DLPack imports keep arrays immutable
and honour strides, allocations too large for the device raise MemoryError before
jaxlib sees them, devices are named as JAX names them, deleted arrays say so.

(Programs that could kill the interpreter if these regressed run in child
processes in tests/test_no_crashes.py; these tests check the values and messages.)
"""

import gc
import weakref

import numpy as np
import pytest

import lamella.core as jax
import lamella.lax as lax
import lamella.numpy as jnp
from lamella.core.dispatch import current_executor
from lamella.lax import executor as executor_module
from lamella.lax import runtime
from lamella.lax.runtime import DeletedArrayError

add_one = jax.jit(lambda a: a + 1)


def aligned(n: int) -> np.ndarray:
    """float32[n] in a buffer aligned to 64 bytes: XLA could use it in place."""
    raw = np.empty(4 * n + 64, np.uint8)
    start = (-raw.ctypes.data) % 64
    return raw[start:start + 4 * n].view(np.float32)


def column_major_aligned() -> np.ndarray:
    host = aligned(6).reshape(3, 2).T
    host[...] = np.arange(6, dtype=np.float32).reshape(2, 3)
    return host


IMPORTS = {
    "runtime.from_dlpack": runtime.from_dlpack,
    "lamella.core.dlpack.from_dlpack": jax.dlpack.from_dlpack,
    "lamella.numpy.from_dlpack": jnp.from_dlpack,
    "lamella.numpy.asarray": jnp.asarray,
}


@pytest.mark.parametrize("name", IMPORTS)
@pytest.mark.parametrize("make", [column_major_aligned,
                                  lambda: np.asfortranarray(np.arange(6, dtype=np.float32)
                                                            .reshape(2, 3)),
                                  lambda: np.arange(12, dtype=np.float32).reshape(2, 6)[:, ::2]],
                         ids=["transposed", "fortran", "strided"])
def test_strided_imports_compute_on_their_values(name, make):
    host = make()
    x = IMPORTS[name](host)
    np.testing.assert_array_equal(add_one(x), host + 1)
    np.testing.assert_array_equal(jnp.sum(x, axis=0), host.sum(axis=0))


@pytest.mark.parametrize("name", IMPORTS)
def test_imports_of_numpy_memory_stay_immutable(name):
    host = aligned(4)
    host[:] = 1
    x = IMPORTS[name](host)
    host[:] = 5
    np.testing.assert_array_equal(x, np.ones(4, np.float32))


def test_copy_false_shares_row_major_aligned_memory_only():
    host = aligned(4)
    host[:] = 1
    shared = jax.dlpack.from_dlpack(host, copy=False)
    host[0] = 5  # copy=False asked to alias: writes through the producer show
    assert float(shared[0]) == 5
    with pytest.raises(ValueError, match="column-major"):
        runtime.from_dlpack(column_major_aligned(), copy=False)
    with pytest.raises(ValueError, match="aligned"):
        runtime.from_dlpack(np.arange(5, dtype=np.float32)[1:], copy=False)


def test_imports_of_arrays_share_the_buffer_and_live_independently():
    x = jnp.arange(4, dtype=jnp.float32)
    y = jnp.from_dlpack(x)
    assert y.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
    copied = jax.dlpack.from_dlpack(x, copy=True)
    assert copied.unsafe_buffer_pointer() != x.unsafe_buffer_pointer()
    x.delete()
    np.testing.assert_array_equal(y + 1, [1, 2, 3, 4])
    with pytest.raises(DeletedArrayError):
        jnp.from_dlpack(x)


def test_numpy_views_outlive_their_array():
    x = jnp.arange(4, dtype=jnp.float32)
    view = np.from_dlpack(x)
    x.delete()
    np.testing.assert_array_equal(view, [0, 1, 2, 3])


@pytest.mark.parametrize("make", [
    lambda: jnp.zeros((1 << 32, 1 << 32), jnp.int8),
    lambda: jnp.full((1 << 40, 1 << 30), 2.0),
    lambda: jnp.broadcast_to(jnp.ones(3), (1 << 31, 1 << 31, 3)),
    lambda: jax.jit(lambda: jnp.zeros((1 << 32, 1 << 32), jnp.int8).sum())(),
    lambda: jax.device_put(np.broadcast_to(np.float32(0), (1 << 40,))),
], ids=["zeros", "full", "broadcast_to", "jit-intermediate", "device_put"])
def test_allocations_beyond_the_device_raise_memory_error(make):
    with pytest.raises(MemoryError, match=r"\[\d+(,\d+)*\] needs \d+ bytes"):
        make()


def test_outputs_that_cannot_coexist_raise_memory_error():
    side = int((runtime.memory_limit(runtime.default_device()) // 4) ** 0.5) + 1
    with pytest.raises(MemoryError, match="storing its outputs"):
        jax.jit(lambda: (jnp.ones((side, side // 2 + 1)), jnp.ones((side, side // 2 + 1))))()


@pytest.mark.parametrize("spec", ["cpu", 0, 1.5])
def test_device_put_says_what_a_device_is(spec):
    x = jnp.arange(3.0)
    with pytest.raises(ValueError, match="takes a Device, a single-device sharding or None"):
        jax.device_put(x, spec)
    with pytest.raises(ValueError, match="lamella.core.devices"):
        jax.device_put(np.ones(2), spec)


def test_device_put_accepts_devices_and_shardings():
    x = jnp.arange(3.0)
    device = jax.devices()[0]
    assert jax.device_put(x, device).committed
    assert jax.device_put(1.0, x.sharding).devices() == {device}
    assert jax.device_put(x, None) is x


@pytest.mark.parametrize("how", ["delete", "donate"])
@pytest.mark.parametrize("method", ["is_ready", "platform", "clone", "block_until_ready",
                                    "unsafe_buffer_pointer", "on_device_size_in_bytes",
                                    "copy_to_host_async"])
def test_methods_of_deleted_arrays_raise_deleted_array_error(how, method):
    x = jnp.arange(4, dtype=jnp.float32)
    if how == "delete":
        x.delete()
    else:
        jax.jit(lambda a: a * 2, donate_argnums=0)(x)
    with pytest.raises(DeletedArrayError, match=r"float32\[4\] has been deleted"):
        getattr(x, method)()
    x.delete()  # deleting twice is allowed


# ----------------------------------------------------------------------------
# Memory: caches keyed by functions and jaxprs let go of them (counted, not RSS).


def _live_programs() -> int:
    gc.collect()
    return len(current_executor().programs)


def test_dropped_jit_functions_take_their_programs_with_them():
    x = jnp.ones(3)
    before = _live_programs()
    functions = []
    for _ in range(50):
        f = lambda a: a + 1  # noqa: E731 - a fresh function each time, as in a notebook
        functions.append(weakref.ref(f))
        jax.jit(f)(x)
    del f
    assert _live_programs() == before
    assert all(ref() is None for ref in functions)


def test_clear_cache_drops_the_functions_programs():
    x = jnp.ones(3)
    f = jax.jit(lambda a: a * 3)
    f(x)
    before = _live_programs()
    f.clear_cache()
    assert _live_programs() == before - 1
    np.testing.assert_array_equal(f(x), [3, 3, 3])  # and compiles again when called


def test_clear_caches_drops_every_program():
    jax.jit(lambda a: a - 1)(jnp.ones(3))
    jnp.sin(jnp.ones(2))
    jax.clear_caches()
    assert _live_programs() == 0 and len(executor_module._primitive_programs) == 0


def test_eager_control_flow_on_fresh_functions_keeps_a_bounded_cache(monkeypatch):
    x = jnp.ones(2)
    x + 1  # noqa: B018 - a hot elementwise dispatcher
    hot = dict(executor_module._eager_dispatchers)
    monkeypatch.setattr(executor_module, "_MAX_EAGER_DISPATCHERS", len(hot) + 2)
    dispatchers = executor_module._eager_dispatchers_with_jaxprs
    monkeypatch.setattr(dispatchers, "capacity", 3)
    for i in range(8):
        lax.cond(i % 2 == 0, lambda a: a + 1, lambda a: a - 1, x)
    gc.collect()
    assert len(dispatchers) <= 3 and len(executor_module._primitive_programs) <= 3 + len(
        executor_module._eager_dispatchers)
    # Branches traced anew each call never push the hot dispatchers out.
    assert hot.items() <= executor_module._eager_dispatchers.items()


def test_program_cache_is_bounded_by_entries_and_bytes_and_owners():
    cache = executor_module._ProgramCache(capacity=3, max_bytes=100)
    for i in range(4):
        cache.put(i, str(i))
    assert len(cache) == 3 and cache.get(0) is None
    cache.put("big", "b", nbytes=80)
    cache.put("bigger", "c", nbytes=30)  # 110 bytes: the least recently used go
    assert cache.get("big") is None and cache.get("bigger") == "c"
    owner = lc_jaxpr()
    cache.put(("program", id(owner)), "p", (owner,))
    assert cache.get(("program", id(owner)), (owner,)) == "p"
    assert cache.get(("program", id(owner)), (lc_jaxpr(),)) is None  # another object
    del owner
    gc.collect()
    assert len(cache) == 1  # only "bigger" is left


def lc_jaxpr():
    return jax.make_jaxpr(lambda a: a + 1)(1.0)
