"""jit's in_shardings / out_shardings and the AOT stages of sharded programs (8 CPU devices)."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.numpy as jnp
from lamella.core.sharding import AxisType, NamedSharding, P, make_mesh, use_mesh

MESH = make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
ROWS = NamedSharding(MESH, P("x"))
COLS = NamedSharding(MESH, P(None, "y"))
X = np.arange(32, dtype=np.float32).reshape(8, 4)
W = np.arange(8, dtype=np.float32).reshape(4, 2) / 8


def _layer(x, w):
    return {"h": jnp.tanh(x @ w), "total": jnp.sum(x)}


LAYER = lc.jit(_layer, in_shardings=(ROWS, None),
               out_shardings={"h": NamedSharding(MESH, P("x", "y")), "total": None})


def test_arguments_and_results_take_the_given_layouts():
    out = LAYER(X, W)  # host values: placed as in_shardings says
    assert out["h"].sharding == NamedSharding(MESH, P("x", "y"))
    assert len(out["h"].addressable_shards) == 8
    np.testing.assert_allclose(np.asarray(out["h"]), np.tanh(X @ W), rtol=1e-6)
    np.testing.assert_allclose(float(out["total"]), X.sum())
    again = LAYER(lc.device_put(X, ROWS), W)  # already laid out: no error, same result
    np.testing.assert_array_equal(np.asarray(again["h"]), np.asarray(out["h"]))


def test_partition_specs_take_the_current_mesh():
    with use_mesh(MESH):
        f = lc.jit(lambda v: v * 2, in_shardings=P("x"), out_shardings=P(None, "y"))
        y = f(X)
    assert y.sharding == COLS
    np.testing.assert_array_equal(np.asarray(y), X * 2)


def test_a_committed_argument_laid_out_otherwise_is_an_error():
    with pytest.raises(ValueError, match="does not match the sharding on the respective arg"):
        LAYER(lc.device_put(X, COLS), W)


def test_specifications_must_match_the_arguments():
    with pytest.raises(ValueError, match="tree prefix"):
        lc.jit(lambda a, b: a + b, in_shardings=(ROWS,))(X, X)
    with pytest.raises(ValueError, match="PartitionSpec .* needs a mesh"):
        lc.jit(lambda a: a, in_shardings=P("x"))(X)
    with pytest.raises(ValueError, match="in_shardings"):
        lc.jit(lambda a: a, in_shardings=ROWS)(np.ones(6, np.float32))


def test_lowered_and_compiled_text_show_the_sharded_program():
    lowered = LAYER.lower(X, W)
    text = lowered.as_text()
    assert "mhlo.num_partitions = 8" in text
    rows = '"{devices=[4,1,2]0,1,2,3,4,5,6,7 last_tile_dim_replicate}"'
    assert f"%arg0: tensor<8x4xf32> {{mhlo.sharding = {rows}}}" in text
    compiled = lowered.compile()
    hlo = compiled.as_text()
    assert "f32[2,4]" in hlo  # each partition holds a quarter of x's rows
    out = compiled(X, W)
    np.testing.assert_allclose(np.asarray(out["h"]), np.tanh(X @ W), rtol=1e-6)
    assert out["h"].sharding == NamedSharding(MESH, P("x", "y"))


def test_lowering_a_sharded_argument_keeps_its_layout():
    f = lc.jit(lambda v: v + 1)
    text = f.lower(lc.device_put(X, COLS)).as_text()
    assert "mhlo.num_partitions = 8" in text and "{devices=[1,2,4]" in text
    assert "f32[8,2]" in f.lower(lc.device_put(X, COLS)).compile().as_text()


def test_grad_through_in_and_out_shardings_matches_one_device():
    loss = lc.jit(lambda w, x: jnp.sum(jnp.tanh(x @ w) ** 2), in_shardings=(None, ROWS),
                  out_shardings=None)
    got = lc.jit(lc.grad(loss))(W, X / 10)
    want = lc.grad(lambda w, x: jnp.sum(jnp.tanh(x @ w) ** 2))(W, X / 10)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)


def test_repeated_sharded_calls_run_from_cpp(monkeypatch):
    # After a call of each signature, C++ runs the program: no plan, no placement in
    # Python. Host values and Arrays laid out otherwise are placed by the fast path's
    # fallback; a layout it has not seen is a new signature (Python once, then C++).
    from lamella.lax import spmd_executor
    f = lc.jit(lambda a, b, c: a * 2 + b + c, out_shardings=ROWS)
    spread, replicated = lc.device_put(X, ROWS), lc.device_put(X, NamedSharding(MESH, P()))
    f(spread, X, 1.5)
    f(replicated, X, 1.5)
    planned = []
    real_plan = spmd_executor.plan
    monkeypatch.setattr(spmd_executor, "plan", lambda *a: planned.append(1) or real_plan(*a))
    for a, c in [(spread, 2.5), (replicated, -1.0), (spread, 0.0)]:
        out = f(a, X, c)
        assert out.sharding == ROWS
        np.testing.assert_array_equal(np.asarray(out), X * 2 + X + np.float32(c))
    assert planned == []
    columns = lc.device_put(X, COLS)
    np.testing.assert_array_equal(np.asarray(f(columns, X, 1.0)), X * 3 + 1)
    assert planned  # a new layout: planned in Python once ...
    seen = len(planned)
    f(columns, X, 1.0)
    assert len(planned) == seen  # ... then run from C++


def test_a_cached_call_keys_on_the_current_mesh():
    # A program traced under one mesh is another program under the next (JAX keys its
    # caches on the context mesh): set_mesh for every thread, `with mesh:` for this one.
    from lamella.core.sharding import reshard, set_mesh
    flat, grid = make_mesh((8,), ("x",)), make_mesh((4, 2), ("x", "y"))
    f = lc.jit(lambda v: reshard(v * 2, P("x")))
    x = np.arange(16, dtype=np.float32)
    for mesh in (flat, grid, flat):
        for enter in (set_mesh, lambda m: m):
            with enter(mesh):
                for _ in range(3):  # the later calls run from C++
                    out = f(x)
                    assert out.sharding.mesh == mesh
                    np.testing.assert_array_equal(np.asarray(out), x * 2)
    with pytest.raises(ValueError, match="needs a mesh"):
        f(x)
