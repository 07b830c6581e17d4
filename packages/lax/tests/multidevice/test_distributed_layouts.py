"""What the multi-process helpers rely on, checked on 8 devices of one process: a result
jit's out_shardings names keeps that layout even where XLA's propagation would choose
another (an identity would otherwise hand back its argument's layout), and a global
array's shards each name their own device and part."""

import numpy as np

import lamella.core as lc
import lamella.numpy as jnp
from lamella.core.sharding import NamedSharding, P, make_mesh

MESH = make_mesh((8,), ("x",))
ROWS, REPLICATED = NamedSharding(MESH, P("x")), NamedSharding(MESH, P())


def _identity(x):
    return x, jnp.multiply(x, 2)


def test_out_shardings_are_kept_where_propagation_would_choose_another():
    x = lc.device_put(np.arange(16.0, dtype=np.float32), ROWS)
    same, doubled = lc.jit(_identity, out_shardings=(REPLICATED, None))(x)
    assert same.sharding == REPLICATED and same.is_fully_replicated
    np.testing.assert_array_equal(np.asarray(same.addressable_data(0)), np.arange(16.0))
    assert doubled.sharding == ROWS  # no layout asked: XLA's propagation keeps the rows
    np.testing.assert_array_equal(np.asarray(doubled), np.arange(16.0) * 2)


def test_shards_name_their_device_and_part():
    x = lc.device_put(np.arange(16.0, dtype=np.float32), ROWS)
    assert x.is_fully_addressable and ROWS.is_fully_addressable
    assert ROWS.addressable_devices == set(lc.devices())
    for i, shard in enumerate(x.addressable_shards):
        assert shard.device == lc.devices()[i] and shard.index == (slice(2 * i, 2 * i + 2),)
        np.testing.assert_array_equal(np.asarray(shard.data), [2 * i, 2 * i + 1])
    assert [s.index for s in x.global_shards] == [s.index for s in x.addressable_shards]


def test_a_call_keeps_the_mesh_of_its_arguments():
    # The same devices and tiling under two meshes: the plan (cached per argument layout)
    # must not hand one mesh's axis names to the other's results.
    other = NamedSharding(make_mesh((8,), ("y",)), P("y"))
    double = lc.jit(lambda v: jnp.multiply(v, 2))
    for sharding in (ROWS, other, ROWS):
        out = double(lc.device_put(np.arange(16.0, dtype=np.float32), sharding))
        assert out.sharding == sharding


def test_a_scalar_put_on_every_device_stays_a_scalar():
    y = lc.device_put(np.float32(3), REPLICATED)
    assert y.shape == () and all(s.data.shape == () for s in y.addressable_shards)
    assert repr(y) == "Array(3., dtype=float32)"
