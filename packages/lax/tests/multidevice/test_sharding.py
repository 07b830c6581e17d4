"""Several devices: shardings, sharded jit, with_sharding_constraint, errors (8 CPU devices)."""

import subprocess
import sys

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as jnp
from lamella.core.sharding import AxisType, NamedSharding, P, SingleDeviceSharding, make_mesh

MESH = make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
X = np.arange(32, dtype=np.float32).reshape(8, 4)


def test_eight_devices_and_one_process():
    assert lc.device_count() == 8 and lc.local_device_count() == 8
    assert (lc.process_index(), lc.process_count()) == (0, 1)


def test_setting_the_device_count_late_is_an_error():
    with pytest.raises(RuntimeError, match="after the CPU backend started"):
        lc.config.update("num_cpu_devices", 4)
    assert lc.config.read("num_cpu_devices") == 8


def test_device_count_option_in_a_fresh_process():
    code = ("import lamella.core as lc; lc.config.update('jax_num_cpu_devices', 3); "
            "import lamella.numpy; print(lc.device_count())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, env={"PATH": "", "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert out.stdout.strip() == "3", out.stderr


@pytest.mark.parametrize("spec", [P("x"), P("x", "y"), P(None, "y"), P(("x", "y")), P()])
def test_device_put_places_each_block(spec):
    sharding = NamedSharding(MESH, spec)
    x = lc.device_put(X, sharding)
    assert x.sharding == sharding
    assert len(x.addressable_shards) == 8
    for shard in x.addressable_shards:
        np.testing.assert_array_equal(np.asarray(shard.data), X[shard.index])
        assert shard.data.shape == sharding.shard_shape(X.shape)
    np.testing.assert_array_equal(np.asarray(x), X)
    assert x.is_fully_replicated == (spec == P())


def test_single_device_sharding_is_the_arrays_own():
    x = lc.device_put(X, lc.devices()[3])
    assert x.sharding == SingleDeviceSharding(lc.devices()[3])
    assert isinstance(x.sharding, SingleDeviceSharding)


def test_make_array_from_callback_and_single_device_arrays():
    sharding = NamedSharding(MESH, P("x", "y"))
    x = lc.make_array_from_callback(X.shape, sharding, lambda index: X[index])
    np.testing.assert_array_equal(np.asarray(x), X)
    assert x.sharding == sharding
    parts = [lc.device_put(X[i], d) for d, i in sharding.devices_indices_map(X.shape).items()]
    y = lc.make_array_from_single_device_arrays(X.shape, sharding, parts)
    np.testing.assert_array_equal(np.asarray(y), X)


def test_errors_name_the_mistake():
    with pytest.raises(ValueError, match="axis 0 is partitioned 4 times"):
        lc.device_put(np.ones(5, np.float32), NamedSharding(MESH, P("x")))
    with pytest.raises(ValueError, match="Resource axis: z"):
        NamedSharding(MESH, P("z"))
    a = lc.device_put(np.ones(2, np.float32), lc.devices()[0])
    b = lc.device_put(np.ones(2, np.float32), lc.devices()[1])
    with pytest.raises(ValueError, match="incompatible devices"):
        lc.jit(lambda u, v: u + v)(a, b)


def test_committed_to_another_device_runs_there():
    x = lc.device_put(X, lc.devices()[5])
    y = lc.jit(lambda v: v * 2)(x)
    assert y.devices() == {lc.devices()[5]}
    np.testing.assert_array_equal(np.asarray(y), X * 2)


def test_sharded_jit_keeps_layouts():
    x = lc.device_put(X, NamedSharding(MESH, P("x", "y")))
    y = lc.jit(lambda v: jnp.sin(v) * 2)(x)
    assert y.sharding.spec == P("x", "y")
    np.testing.assert_allclose(np.asarray(y), np.sin(X) * 2, rtol=1e-6)
    total = lc.jit(lambda v: jnp.sum(v, axis=0))(x)
    np.testing.assert_allclose(np.asarray(total), X.sum(0))
    eager = jnp.sum(x * 3)  # eager ops on sharded arrays run over their devices
    np.testing.assert_allclose(float(eager), X.sum() * 3)


def test_with_sharding_constraint_reaches_the_compiler():
    sharding = NamedSharding(MESH, P("y", "x"))
    f = lc.jit(lambda v: lax.with_sharding_constraint(v * 2, sharding) + 1)
    text = f.lower(X).as_text()
    assert 'custom_call @Sharding' in text and 'mhlo.sharding = "{devices=[2,4]' in text
    y = f(X)
    assert y.sharding == sharding
    np.testing.assert_array_equal(np.asarray(y), X * 2 + 1)


def _mlp(params, x):
    w1, w2 = params
    return jnp.sum(jnp.tanh(x @ w1) @ w2)


def test_data_and_model_parallel_mlp_match_one_device():
    rng = np.random.default_rng(0)
    w1 = rng.normal(size=(4, 16)).astype(np.float32)
    w2 = rng.normal(size=(16, 2)).astype(np.float32)
    step = lc.jit(lc.value_and_grad(_mlp))
    want_loss, want_grads = step((w1, w2), X / 10)
    data = NamedSharding(MESH, P(("x", "y")))
    column, row = NamedSharding(MESH, P(None, "y")), NamedSharding(MESH, P("y", None))
    params = (lc.device_put(w1, column), lc.device_put(w2, row))  # megatron-style
    loss, grads = step(params, lc.device_put(X / 10, data))
    np.testing.assert_allclose(float(loss), float(want_loss), rtol=1e-5)
    for g, w in zip(grads, want_grads):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-4, atol=1e-5)
    assert grads[0].sharding.mesh == MESH and len(grads[0].addressable_shards) == 8


def test_jit_in_and_out_shardings_through_device_put_and_constraints():
    out = NamedSharding(MESH, P("x"))
    f = lc.jit(lambda v: lax.with_sharding_constraint(v + 1, out))
    y = f(lc.device_put(X, NamedSharding(MESH, P(None, "y"))))
    assert y.sharding == out
    np.testing.assert_array_equal(np.asarray(y), X + 1)


_add_one_donated = lc.jit(lambda v: v + 1, donate_argnums=0)


def test_device_put_copies_the_host_data():
    host = X.copy()  # parts of it are 64-byte aligned: jaxlib would alias those
    x = lc.device_put(host, NamedSharding(MESH, P("x")))
    host[:] = -1
    np.testing.assert_array_equal(np.asarray(x), X)


@pytest.mark.parametrize("spec", [P("x"), P(("x", "y")), P()])
def test_donation_reuses_the_buffers(spec):
    sharding = NamedSharding(MESH, spec)
    x = lc.device_put(X, sharding)
    pointers = [s.data.unsafe_buffer_pointer() for s in x.addressable_shards]
    y = _add_one_donated(x)
    assert x.is_deleted()
    assert [s.data.unsafe_buffer_pointer() for s in y.addressable_shards] == pointers
    np.testing.assert_array_equal(np.asarray(y), X + 1)
