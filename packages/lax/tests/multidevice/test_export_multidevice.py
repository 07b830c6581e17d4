"""Exported functions over 8 devices: `export(jit(f, in_shardings=..., out_shardings=...))`,
its shardings (as JAX 0.10.2 serializes them), and an artifact JAX exported over a
(4, 2) mesh (tests/data/jax_exports_multidevice, by benchmarks/record_jax_exports.py)."""

import os

import numpy as np
import pytest
from jaxlib import xla_client as xc

import lamella.core as lc
import lamella.numpy as jnp
from lamella.core import export, io_callback
from lamella.core.sharding import AxisType, Mesh, NamedSharding, make_mesh, use_mesh
from lamella.core.sharding import PartitionSpec as P

DATA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "tests", "data",
                    "jax_exports_multidevice")
MESH = make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
IN = (NamedSharding(MESH, P("x", None)), NamedSharding(MESH, P(None, "y")))
OUT = (NamedSharding(MESH, P("x", "y")), NamedSharding(MESH, P()))
A = np.arange(32, dtype=np.float32).reshape(8, 4) / 8
B = np.arange(8, dtype=np.float32).reshape(4, 2) - 3
# XLA's form of IN and OUT (JAX's in_shardings_hlo after deserialize, as text).
IN_HLO = ("{devices=[4,1,2]<=[8] last_tile_dim_replicate}",
          "{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}")
OUT_HLO = ("{devices=[4,2]<=[8]}", "{replicated}")
F = lc.jit(lambda a, b: (jnp.sin(a) @ b, jnp.sum(a)), in_shardings=IN, out_shardings=OUT)


def _hlo(texts):
    return tuple(xc.HloSharding.from_string(t) for t in texts)


def _placed():
    return lc.device_put(A, IN[0]), lc.device_put(B, IN[1])


def _check_results(outs, want0, want1):
    assert [o.sharding for o in outs] == list(OUT)
    assert len(outs[0].addressable_shards) == 8
    np.testing.assert_allclose(np.asarray(outs[0]), want0, rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(float(outs[1]), want1, rtol=2e-6)


def test_an_export_over_a_mesh_has_its_devices_and_shardings():
    exp = export.export(F)(A, B)
    assert exp.nr_devices == 8
    assert exp.in_shardings_hlo == _hlo(IN_HLO)
    assert exp.out_shardings_hlo == _hlo(OUT_HLO)
    _check_results(exp.call(*_placed()), np.sin(A) @ B, A.sum())
    back = export.deserialize(exp.serialize())
    assert back.nr_devices == 8
    assert back.in_shardings_hlo == exp.in_shardings_hlo
    assert back.out_shardings_hlo == exp.out_shardings_hlo
    _check_results(back.call(*_placed()), np.sin(A) @ B, A.sum())


def test_an_argument_without_a_sharding_has_none():
    g = lc.jit(lambda a, b: a * b.sum(), in_shardings=(IN[0], None))
    exp = export.export(g)(A, B)
    assert exp.in_shardings_hlo == (_hlo(IN_HLO)[0], None)
    assert exp.out_shardings_hlo == (None,)  # XLA's choice, as JAX's
    back = export.deserialize(exp.serialize())
    assert back.in_shardings_hlo == exp.in_shardings_hlo
    out = back.call(lc.device_put(A, IN[0]), B)
    np.testing.assert_allclose(np.asarray(out), A * B.sum(), rtol=1e-6)


def test_jax_exported_artifact_over_8_devices_runs_in_lamella():
    with open(os.path.join(DATA, "sharded_matmul.exported"), "rb") as f:
        exp = export.deserialize(f.read())
    data = np.load(os.path.join(DATA, "sharded_matmul.npz"))
    assert exp.nr_devices == 8
    assert exp.in_shardings_hlo == _hlo(IN_HLO)
    assert exp.out_shardings_hlo == _hlo(OUT_HLO)
    a = lc.device_put(data["arg0"], IN[0])
    b = lc.device_put(data["arg1"], IN[1])
    _check_results(exp.call(a, b), data["out0"], data["out1"])
    assert exp.has_vjp()  # JAX serialized its VJP (over the same devices)
    _, pullback = lc.vjp(lambda *xs: tuple(exp.call(*xs)), a, b)
    cts = pullback((np.ones((8, 2), np.float32), np.float32(1)))
    for ct, want in zip(cts, (data["ct0"], data["ct1"])):
        np.testing.assert_allclose(np.asarray(ct), want, rtol=2e-6, atol=1e-5)
    with use_mesh(MESH):  # host values, laid out over the current mesh as exported
        _check_results(exp.call(data["arg0"], data["arg1"]), data["out0"], data["out1"])


def test_an_artifact_of_an_older_jax_with_hlo_sharding_protos():
    # JAX before its serialization version 9 (here 0.7.2) stored HloSharding protos, no
    # mesh; JAX 0.10.2 reads them, and so does lamella (positions of the devices only).
    with open(os.path.join(DATA, "sharded_matmul_legacy_jax_0.7.2.exported"), "rb") as f:
        exp = export.deserialize(f.read())
    data = np.load(os.path.join(DATA, "sharded_matmul_legacy_jax_0.7.2.npz"))
    assert exp.nr_devices == 8
    assert exp.in_shardings_hlo == _hlo(IN_HLO)
    assert exp.out_shardings_hlo == _hlo(OUT_HLO)
    a, b = _placed()
    for outs in (exp.call(a, b), lc.jit(exp.call)(a, b)):
        _check_results(outs, data["out0"], data["out1"])
    _, pullback = lc.vjp(lambda *xs: tuple(exp.call(*xs)), a, b)
    cts = pullback((np.ones((8, 2), np.float32), np.float32(1)))
    for ct, want in zip(cts, (data["ct0"], data["ct1"])):
        np.testing.assert_allclose(np.asarray(ct), want, rtol=2e-6, atol=1e-5)
    with pytest.raises(ValueError, match="must have named shardings"):  # JAX's refusal
        exp.serialize()


def test_jax_exported_shard_map_runs_in_lamella():
    # JAX's module holds a Shardy manual region; its Exported gives no shardings.
    with open(os.path.join(DATA, "shard_map_psum.exported"), "rb") as f:
        exp = export.deserialize(f.read())
    data = np.load(os.path.join(DATA, "shard_map_psum.npz"))
    assert exp.nr_devices == 8 and exp.in_shardings_hlo == (None,)
    x = lc.device_put(data["arg0"], NamedSharding(MESH, P(("x", "y"))))
    parts = data["arg0"].reshape(8, 2)  # each device's part; psum adds them elementwise
    want = (parts * np.sin(parts).sum(0)).ravel()
    np.testing.assert_allclose(data["out0"], want, rtol=1e-5)
    for out in (exp.call(x), lc.jit(lambda v: exp.call(v) * 2)(x) / 2):
        np.testing.assert_allclose(np.asarray(out), data["out0"], rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(exp.call(lc.device_put(data["arg0"], IN[0].with_spec(
        P())))), data["out0"], rtol=2e-6, atol=1e-6)  # replicated: laid out as XLA chose


def test_the_devices_must_be_there():
    exp = export.export(F)(A, B)
    with pytest.raises(ValueError, match="exported for 8 devices and is called in a context "
                                         "with 1 devices"):
        exp.call(A, B)  # as JAX: host values and no mesh
    # Over a mesh of other axes, as JAX: its devices arranged as the exported mesh.
    other = make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    with use_mesh(other):
        outs = exp.call(A, B)
    assert outs[0].sharding.mesh.axis_sizes == (4, 2)
    assert outs[0].sharding.mesh._flat_devices == other._flat_devices
    assert outs[0].sharding.spec == P("x", "y")
    np.testing.assert_allclose(np.asarray(outs[0]), np.sin(A) @ B, rtol=2e-6, atol=1e-6)
    in_jit = lc.jit(lambda a, b: exp.call(a, b)[0])
    with pytest.raises(ValueError, match="exported for 8 devices and is called in a context "
                                         "with 1 devices"):
        in_jit(A, B)


def test_an_export_over_8_devices_is_called_inside_jit():
    with open(os.path.join(DATA, "sharded_matmul.exported"), "rb") as f:
        jax_exp = export.deserialize(f.read())
    ours = export.deserialize(export.export(F)(A, B).serialize())
    for exp in (jax_exp, ours):
        _check_results(lc.jit(exp.call)(*_placed()), np.sin(A) @ B, A.sum())
        g = lc.jit(lambda a, b, e=exp: e.call(a * 2, b)[0] + 1)
        want = np.sin(A * 2) @ B + 1
        out = g(*_placed())
        assert out.sharding == OUT[0]  # the Exported's layout, carried on by propagation
        np.testing.assert_allclose(np.asarray(out), want, rtol=2e-6, atol=1e-5)
        with use_mesh(MESH):  # host values: the program runs on the current mesh
            np.testing.assert_allclose(np.asarray(g(A, B)), want, rtol=2e-6, atol=1e-5)


def test_an_export_over_8_devices_that_calls_back():
    seen = []
    spread = NamedSharding(MESH, P(("x", "y")))
    f = lc.jit(lambda x: (io_callback(lambda v: seen.append(v.tolist()), None, x, ordered=True),
                          x * 2)[1], in_shardings=spread, out_shardings=spread)
    allow = [export.DisabledSafetyCheck.custom_call("xla_ffi_python_cpu_callback")]
    exp = export.export(f, disabled_checks=allow)(np.arange(16, dtype=np.float32))
    assert exp.nr_devices == 8 and [str(e) for e in exp.ordered_effects] == ["OrderedIO"]
    x = lc.device_put(np.arange(16, dtype=np.float32), spread)
    out = exp.call(x)
    assert out.sharding == spread
    np.testing.assert_array_equal(np.asarray(out), np.arange(16) * 2)
    np.testing.assert_array_equal(np.asarray(lc.jit(lambda v: exp.call(v) + 1)(x)),
                                  np.arange(16) * 2 + 1)
    assert seen == [list(range(16))] * 2  # once per call, on one device, whole


def test_shardings_jax_lay_arguments_over_another_devices_order():
    # JAX's docstring example of Exported.in_shardings_jax: the devices reversed.
    exp_mesh = Mesh(np.array(lc.devices()[:8]), ("a",))
    exp = export.export(lc.jit(lambda x: jnp.add(x, x),
                               in_shardings=NamedSharding(exp_mesh, P("a"))))(np.arange(8))
    assert exp.in_shardings_jax(exp_mesh) == (NamedSharding(exp_mesh, P("a")),)
    run_mesh = Mesh(np.array(lc.devices()[:8][::-1]), ("a",))
    res = exp.call(lc.device_put(np.arange(8), exp.in_shardings_jax(run_mesh)[0]))
    assert [s.device.id for s in res.addressable_shards] == list(range(7, -1, -1))
    assert [int(np.asarray(s.data)[0]) for s in res.addressable_shards] == list(range(0, 16, 2))
    with open(os.path.join(DATA, "sharded_matmul_legacy_jax_0.7.2.exported"), "rb") as f:
        legacy = export.deserialize(f.read())  # HloShardings: the specs that fit the mesh
    assert legacy.in_shardings_jax(MESH) == (NamedSharding(MESH, P("x")),
                                             NamedSharding(MESH, P(None, "y")))
    assert legacy.out_shardings_jax(MESH) == OUT
