"""Collectives under shard_map and pmap against NumPy, and against vmap(axis_name);
derivatives through both (8 CPU devices)."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as jnp
from lamella.core.sharding import AxisType, NamedSharding, P, make_mesh

MESH = make_mesh((8,), ("i",), axis_types=(AxisType.Auto,))
MESH2 = make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
X = np.arange(8 * 6, dtype=np.float32).reshape(8, 6) / 7


def _per_device(body):
    """`body` on each row of X: under pmap, under shard_map, under vmap(axis_name)."""
    pmapped = lc.pmap(body, "i")(X)
    sharded = lc.shard_map(lambda b: lax.expand_dims(body(b[0]), (0,)), mesh=MESH,
                           in_specs=P("i"), out_specs=P("i"))(X)
    vmapped = lc.vmap(body, axis_name="i")(X)
    return np.asarray(pmapped), np.asarray(sharded), np.asarray(vmapped)


COLLECTIVES = {
    "psum": (lambda v: lax.psum(v, "i"), lambda x: np.broadcast_to(x.sum(0), x.shape)),
    "pmean": (lambda v: lax.pmean(v, "i"), lambda x: np.broadcast_to(x.mean(0), x.shape)),
    "pmax": (lambda v: lax.pmax(v, "i"), lambda x: np.broadcast_to(x.max(0), x.shape)),
    "pmin": (lambda v: lax.pmin(v, "i"), lambda x: np.broadcast_to(x.min(0), x.shape)),
    "axis_index": (lambda v: v * 0 + lax.axis_index("i"),
                   lambda x: np.broadcast_to(np.arange(8.0)[:, None], x.shape)),
    "ppermute": (lambda v: lax.ppermute(v, "i", [(j, (j + 1) % 8) for j in range(8)]),
                 lambda x: np.roll(x, 1, axis=0)),
    "all_gather": (lambda v: lax.all_gather(v, "i")[::2].reshape(-1)[:6],
                   lambda x: np.broadcast_to(x[::2].reshape(-1)[:6], x.shape)),
    "psum_scatter": (lambda v: lax.psum_scatter(lax.broadcast(v, (8,)), "i")[:6],
                     lambda x: np.broadcast_to(x.sum(0), x.shape)),
    "all_to_all": (lambda v: lax.all_to_all(lax.broadcast(v[:1], (8,)), "i", 0, 0)[:, 0][:6],
                   lambda x: np.broadcast_to(x[:6, 0], x.shape)),
}


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
def test_collective_matches_numpy_and_vmap(name):
    body, reference = COLLECTIVES[name]
    want = reference(X.astype(np.float64))
    for got in _per_device(body):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_collectives_over_one_of_two_mesh_axes():
    x = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)

    def body(b):
        return lax.psum(b, "x") + 100 * lax.axis_index("y")
    got = lc.shard_map(body, mesh=MESH2, in_specs=P(("x", "y")), out_specs=P(("x", "y")))(x)
    blocks = x.reshape(4, 2, 3)  # device (x, y) holds row 2x + y
    want = np.broadcast_to(blocks.sum(0), blocks.shape) + 100 * np.arange(2)[None, :, None]
    np.testing.assert_allclose(np.asarray(got), want.reshape(8, 3))


def _loss_pmap(w, x):
    per = lc.pmap(lambda wb, xb: lax.psum(jnp.sum(jnp.tanh(xb @ wb)), "i"), "i",
                  in_axes=(None, 0))
    return per(w, x)[0]


def _loss_shard_map(w, x):
    per = lc.shard_map(lambda wb, xb: lax.psum(jnp.sum(jnp.tanh(xb @ wb)), "i"), mesh=MESH,
                       in_specs=(P(), P("i")), out_specs=P())
    return per(w, x)


def _loss_one_device(w, x):
    return jnp.sum(jnp.tanh(x @ w))


W = np.linspace(-1, 1, 6 * 3, dtype=np.float32).reshape(6, 3)


@pytest.mark.parametrize("loss", [_loss_pmap, _loss_shard_map])
def test_grad_matches_one_device(loss):
    want = [np.asarray(g) for g in lc.grad(_loss_one_device, argnums=(0, 1))(W, X)]
    xs = X.reshape(8, 1, 6) if loss is _loss_pmap else X
    got_w, got_x = lc.grad(loss, argnums=(0, 1))(W, xs)
    np.testing.assert_allclose(np.asarray(got_w), want[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got_x).reshape(X.shape), want[1], rtol=1e-5,
                               atol=1e-6)
    jitted = lc.jit(lc.grad(loss))(W, xs)
    np.testing.assert_allclose(np.asarray(jitted), want[0], rtol=1e-5, atol=1e-6)


def test_grad_of_each_linear_collective_in_shard_map():
    def f(x):
        def body(b):
            gathered = lax.all_gather(b, "i", tiled=True)
            moved = lax.ppermute(b, "i", [(j, (j + 3) % 8) for j in range(8)])
            return lax.psum(jnp.sum(gathered ** 2) + jnp.sum(moved * b), "i")
        return lc.shard_map(body, mesh=MESH, in_specs=P("i"), out_specs=P())(x)
    x = np.linspace(-1, 1, 16, dtype=np.float32)
    rolled = np.roll(x.reshape(8, 2), 3, axis=0).reshape(-1)
    unrolled = np.roll(x.reshape(8, 2), -3, axis=0).reshape(-1)
    np.testing.assert_allclose(float(f(x)), 8 * np.sum(x ** 2) + np.sum(rolled * x), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(lc.grad(f)(x)), 16 * x + rolled + unrolled,
                               rtol=1e-5, atol=1e-6)


def test_shard_map_nested_in_jit_and_vmapped():
    f = lc.shard_map(lambda b: lax.psum(b, "i"), mesh=MESH, in_specs=P("i"), out_specs=P())
    x = np.ones((3, 16), np.float32)
    np.testing.assert_allclose(np.asarray(lc.jit(lc.vmap(f))(x)), np.full((3, 2), 8.0))


def test_pmap_options_and_output_sharding():
    out = lc.pmap(lambda a, k: a * k, "i", in_axes=(1, None), out_axes=1,
                  static_broadcasted_argnums=1)(X.T, 3.0)
    np.testing.assert_allclose(np.asarray(out), X.T * 3, rtol=1e-6)
    y = lc.pmap(lambda a: lax.psum(a, "i"), "i")(X)
    assert isinstance(y.sharding, NamedSharding) and y.sharding.spec == P("i")
    with pytest.raises(ValueError, match="requires 9 logical devices"):
        lc.pmap(lambda a: a)(np.ones((9, 2), np.float32))
    replicated = lc.pmap(lambda a: lax.psum(a, "i"), "i", out_axes=None)(X)
    np.testing.assert_allclose(np.asarray(replicated), X.sum(0), rtol=1e-5)


def test_shard_map_errors():
    with pytest.raises(ValueError, match="not divisible"):
        lc.shard_map(lambda b: b, mesh=MESH, in_specs=P("i"), out_specs=P("i"))(np.ones(9))
    with pytest.raises(ValueError, match="lacks"):
        lc.shard_map(lambda b: b, mesh=MESH, in_specs=P("z"), out_specs=P("i"))(np.ones(8))


def test_pmap_is_traced_once_per_signature(monkeypatch):
    # The mapping (in_axes, sizes, devices) is worked out when jit traces the call; later
    # calls with the same shapes and static values run the compiled program directly.
    from lamella.lax import pmap as pmap_module
    scale = lc.pmap(lambda v, k: v * k, "i", static_broadcasted_argnums=1)
    x = np.arange(8, dtype=np.float32).reshape(8, 1)
    np.testing.assert_array_equal(np.asarray(scale(x, 2.0)), x * 2)

    def no_retrace(*args, **kwargs):
        raise AssertionError("traced again")
    monkeypatch.setattr(pmap_module, "_whole", no_retrace)
    np.testing.assert_array_equal(np.asarray(scale(x + 1, 2.0)), (x + 1) * 2)
    with pytest.raises(AssertionError, match="traced again"):
        scale(x, 3.0)  # another static value: another program
