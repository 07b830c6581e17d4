"""lamella.core.export: Exported functions, their bytes in JAX's format, and JAX's own artifacts.

The artifacts in tests/data/jax_exports were exported and serialized by JAX 0.10.2
(benchmarks/record_jax_exports.py), with JAX's outputs and cotangents next to them.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lamella.core as lc
import lamella.numpy as jnp
from lamella.core import config, export, tree_util
from lamella.lax.test_util import assert_close

DATA = os.path.join(os.path.dirname(__file__), "data", "jax_exports")


def _close(got, want):
    """Same dtype and shape, values within a few float32 ulps (XLA may fuse differently)."""
    assert_close(got, want, np.asarray(want).dtype)


def _f(x, y):
    return {"a": jnp.sin(x) * y, "b": (x + 1.0, [y])}


_f_jit = lc.jit(_f)
_X = np.array([0.5, -1.0, 2.0], np.float32)
_Y = np.float32(1.5)


@pytest.fixture(scope="module")
def exported():
    return export.export(_f_jit)(lc.ShapeDtypeStruct((3,), np.float32),
                                 lc.ShapeDtypeStruct((), np.float32))


def test_exported_describes_the_function(exported):
    assert exported.fun_name == "_f"
    assert exported.in_avals == (lc.ShapedArray((3,), np.float32), lc.ShapedArray((), np.float32))
    assert exported.out_avals == (lc.ShapedArray((3,), np.float32),) * 2 + (
        lc.ShapedArray((), np.float32),)
    assert exported.in_tree == tree_util.tree_structure(((0, 0), {}))
    assert exported.out_tree == tree_util.tree_structure({"a": 0, "b": (0, [0])})
    assert exported.platforms == (export.default_export_platform(),) == ("cpu",)
    assert exported.nr_devices == 1
    assert exported.in_shardings_hlo == (None, None)
    assert exported.ordered_effects == exported.unordered_effects == ()
    assert (exported.calling_convention_version
            == export.maximum_supported_calling_convention_version)
    assert exported.module_kept_var_idx == (0, 1)
    assert not exported.uses_global_constants
    text = exported.mlir_module()
    assert "func.func public @main" in text and "stablehlo.sine" in text
    assert "jax.uses_shape_polymorphism = false" in text


def test_call_eager_jit_and_vmap(exported):
    expected = _f(_X, _Y)
    for out, want in zip(tree_util.tree_leaves(exported.call(_X, _Y)),
                         tree_util.tree_leaves(expected)):
        _close(out, want)
    _close(exported.call(_X, 1.5)["a"], np.sin(_X) * np.float32(1.5))  # a weak Python float
    inside = lc.jit(lambda x, y: exported.call(x, y)["a"] * 2.0)(_X, _Y)
    _close(inside, 2 * jnp.sin(_X) * _Y)
    xs = np.stack([_X, 2 * _X, -_X])
    batched = lc.vmap(lambda x: exported.call(x, _Y)["a"])(xs)
    _close(batched, np.stack([np.asarray(exported.call(x, _Y)["a"]) for x in xs]))
    ys = np.array([1.0, 2.0], np.float32)
    by_y = lc.vmap(lambda y: exported.call(_X, y)["b"][1][0], in_axes=0)(ys)
    _close(by_y, ys)


def _loss(call):
    return lambda x, y: jnp.sum(call(x, y)["a"]) + call(x, y)["b"][1][0] ** 2


def test_grad_through_the_vjp(exported):
    want = lc.grad(_loss(_f), argnums=(0, 1))(_X, _Y)
    got = lc.grad(_loss(exported.call), argnums=(0, 1))(_X, _Y)
    for g, w in zip(got, want):
        _close(g, w)
    inside_jit = lc.jit(lc.grad(_loss(exported.call)))(_X, _Y)
    _close(inside_jit, want[0])
    vjp_exp = exported.vjp()
    assert vjp_exp.in_avals == exported.in_avals + exported.out_avals
    assert vjp_exp.out_avals == exported.in_avals


def test_vjp_order_decides_differentiability_after_bytes(exported):
    with_vjp = export.deserialize(export.serialize(exported, vjp_order=1))
    got = lc.grad(_loss(with_vjp.call), argnums=(0, 1))(_X, _Y)
    want = lc.grad(_loss(_f), argnums=(0, 1))(_X, _Y)
    for g, w in zip(got, want):
        _close(g, w)
    without = export.deserialize(export.serialize(exported))
    assert not without.has_vjp()
    with pytest.raises(ValueError, match="vjp_order"):
        without.vjp()
    with pytest.raises(ValueError, match="no VJP"):
        export.serialize(without, vjp_order=1)


def test_bytes_round_trip_keeps_every_field(exported):
    again = export.deserialize(exported.serialize())
    for field in ("fun_name", "in_tree", "in_avals", "out_tree", "out_avals", "nr_devices",
                  "platforms", "ordered_effects", "unordered_effects", "mlir_module_serialized",
                  "calling_convention_version", "module_kept_var_idx", "uses_global_constants",
                  "in_shardings_hlo", "out_shardings_hlo"):
        assert getattr(again, field) == getattr(exported, field), field
    assert export.serialize(again) == export.serialize(exported)


_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import lamella.lax
    from lamella.core import export, tree_util
    exp = export.deserialize(open(sys.argv[1], "rb").read())
    out = exp.call(np.array([0.5, -1.0, 2.0], np.float32), np.float32(1.5))
    np.save(sys.argv[2], np.concatenate([np.ravel(v) for v in tree_util.tree_leaves(out)]))
""")


def test_round_trip_through_bytes_in_a_fresh_process(exported, tmp_path):
    path = tmp_path / "f.exported"
    path.write_bytes(export.serialize(exported))
    done = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(tmp_path / "out.npy")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    here = np.concatenate([np.ravel(v) for v in tree_util.tree_leaves(exported.call(_X, _Y))])
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), here)


Point = collections.namedtuple("Point", "x y")
export.register_namedtuple_serialization(Point, serialized_name="tests.test_export.Point")


class Scaled:
    """A custom pytree node whose auxiliary data (a scale) travels in the bytes."""

    def __init__(self, value, scale):
        self.value, self.scale = value, scale


tree_util.register_pytree_node(Scaled, lambda s: ((s.value,), s.scale),
                               lambda scale, children: Scaled(children[0], scale))
export.register_pytree_node_serialization(
    Scaled, serialized_name="tests.test_export.Scaled",
    serialize_auxdata=lambda scale: str(scale).encode(),
    deserialize_auxdata=lambda data: float(data.decode()))


def test_custom_pytree_nodes_travel_in_the_bytes():
    f = lc.jit(lambda p, od: Scaled(p.x * p.y + od["k"], 3.0))
    od = collections.OrderedDict([("k", np.float32(1.0))])
    exp = export.export(f)(Point(_X, _X), od)
    again = export.deserialize(exp.serialize())
    out = again.call(Point(_X, _X), od)
    assert isinstance(out, Scaled) and out.scale == 3.0
    _close(out.value, _X * _X + 1)

    class Unregistered(tuple):
        pass

    tree_util.register_pytree_node(Unregistered, lambda u: (tuple(u), None),
                                   lambda _, c: Unregistered(c))
    exp = export.export(lc.jit(lambda u: u[0]))(Unregistered((_X,)))
    with pytest.raises(ValueError, match="register_pytree_node_serialization"):
        exp.serialize()


def test_clear_errors(exported):
    with pytest.raises(TypeError, match="expected f32\\[3\\]"):
        exported.call(np.zeros(4, np.float32), _Y)
    with pytest.raises(TypeError, match="structure"):
        exported.call(_X)
    with pytest.raises(TypeError, match="jit"):
        export.export(_f)
    with pytest.raises(ValueError, match="not a serialized Exported"):
        export.deserialize(b"\x04\x00\x00\x00garbage")
    blob = export.serialize(exported)
    with pytest.raises(ValueError, match="not a serialized Exported"):
        export.deserialize(blob[: len(blob) // 3])
    with pytest.raises(NotImplementedError, match="serialization of host_callbacks is not "
                                                  "yet implemented"):  # JAX's refusal
        export.export(lc.jit(lambda x: lc.pure_callback(np.sin, x, x)))(_X)


# ---------------------------------------------------------------------------
# Artifacts exported by JAX 0.10.2.

_JAX_CASES = sorted(f[: -len(".exported")] for f in os.listdir(DATA) if f.endswith(".exported"))


@pytest.mark.parametrize("name", _JAX_CASES)
def test_jax_exported_artifacts_run_in_lamella(name):
    with open(os.path.join(DATA, f"{name}.exported"), "rb") as f:
        exp = export.deserialize(f.read())
    data = np.load(os.path.join(DATA, f"{name}.npz"))
    with config.override("enable_x64", True):
        flat = [data[f"arg{i}"] for i in range(len(exp.in_avals))]
        args = tree_util.tree_unflatten(exp.in_tree, flat)[0]
        outs = tree_util.tree_leaves(exp.call(*args))
        assert len(outs) == len(exp.out_avals)
        for i, out in enumerate(outs):
            assert out.dtype == data[f"out{i}"].dtype
            _close(out, data[f"out{i}"])
        jitted = tree_util.tree_leaves(lc.jit(exp.call)(*args))
        for i, out in enumerate(jitted):
            _close(out, data[f"out{i}"])
        if exp.has_vjp():
            _, pullback = lc.vjp(lambda *a: tree_util.tree_leaves(exp.call(*a)), *flat)
            cts = pullback([np.ones(o.shape, o.dtype) for o in outs])
            for i, ct in enumerate(cts):
                _close(ct, data[f"ct{i}"])


def test_jax_artifacts_keep_jax_signature_details():
    with open(os.path.join(DATA, "unused_argument.exported"), "rb") as f:
        exp = export.deserialize(f.read())
    assert exp.module_kept_var_idx == (0, 2)  # JAX dropped the unused argument
    with open(os.path.join(DATA, "two_platforms.exported"), "rb") as f:
        exp = export.deserialize(f.read())
    assert exp.platforms == ("cpu", "cuda")
    assert exp.in_tree == tree_util.tree_structure(((0,), {}))


def test_jax_batch_polymorphic_export_runs_at_any_batch_size():
    with open(os.path.join(DATA, "batch_polymorphic.exported"), "rb") as f:
        exp = export.deserialize(f.read())
    b = export.symbolic_shape("b, 4")[0]
    assert export.is_symbolic_dim(b) and exp.in_avals[0].shape == (b, 4)
    assert exp.in_avals[0].str_short() == "f32[b,4]" and exp.out_avals[0].shape == (b,)
    data = np.load(os.path.join(DATA, "batch_polymorphic.npz"))
    y = data["arg1"]
    for size in (3, 5):
        x = data[f"arg0_b{size}"]
        _close(exp.call(x, y), data[f"out0_b{size}"])
        _close(lc.jit(exp.call)(x, y), data[f"out0_b{size}"])
    with pytest.raises(TypeError, match="expected f32\\[4\\], got f32\\[3\\]"):
        exp.call(data["arg0_b5"], y[:3])
    assert export.deserialize(exp.serialize()).in_avals == exp.in_avals


def test_disabled_safety_checks_travel_and_apply():
    checks = (export.DisabledSafetyCheck.platform(),
              export.DisabledSafetyCheck.custom_call("my_target"))
    exp = export.export(lc.jit(jnp.cos), disabled_checks=checks)(_X)
    again = export.deserialize(exp.serialize())
    assert again.disabled_safety_checks == checks
    # The platform check is off: an export for another platform is called anyway.
    elsewhere = dataclasses.replace(again, platforms=("tpu",))
    _close(elsewhere.call(_X), np.cos(_X))
    with pytest.raises(ValueError, match="exported for \\('tpu',\\)"):
        dataclasses.replace(again, platforms=("tpu",), disabled_safety_checks=()).call(_X)
    with pytest.raises(TypeError, match="DisabledSafetyCheck"):
        export.export(lc.jit(jnp.cos), disabled_checks=["platform"])
