"""lamella.numpy's `out_sharding=` under an Explicit mesh (8 CPU devices): results are laid
out, and typed, as asked; the `*_like` functions keep their argument's sharding. Expected
types were recorded from JAX 0.10.2 with the same mesh."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.numpy as jnp
import lamella.random as jr
from lamella.core.sharding import NamedSharding, P, make_mesh, set_mesh

MESH = make_mesh((4, 2), ("x", "y"))
X = np.arange(32, dtype=np.float32).reshape(8, 4) / 5
W = np.arange(24, dtype=np.float32).reshape(4, 6) / 7


@pytest.fixture(autouse=True)
def _explicit_mesh():
    with set_mesh(MESH):
        yield


def put(value, *spec):
    return lc.device_put(value, NamedSharding(MESH, P(*spec)))


def _products(x, w):
    # each contraction is over a dimension split on both sides: out_sharding decides
    return {
        "dot": jnp.dot(x, w, out_sharding=P("x")),
        "tensordot": jnp.tensordot(x, w, 1, out_sharding=P(None, "y")),
        "einsum": jnp.einsum("ij,jk->ik", x, w, out_sharding=P("x", "y")),
        "matmul": jnp.matmul(x, w, out_sharding=P("x")),
        "reshape": jnp.reshape(x, (32,), out_sharding=P("x")),
        "ravel": jnp.ravel(x, out_sharding=P("x")),
        "broadcast_to": jnp.broadcast_to(jnp.ones(4), (8, 4), out_sharding=P("x", "y")),
    }


PRODUCTS = lc.jit(_products)
JAX_TYPES = {"dot": "float32[8@x,6]", "tensordot": "float32[8,6@y]",
             "einsum": "float32[8@x,6@y]", "matmul": "float32[8@x,6]",
             "reshape": "float32[32@x]", "ravel": "float32[32@x]",
             "broadcast_to": "float32[8@x,4@y]"}


@pytest.fixture(scope="module")
def products():
    with set_mesh(MESH):
        return PRODUCTS(put(X, "x", "y"), put(W, "y"))


@pytest.mark.parametrize("name", sorted(JAX_TYPES))
def test_products_and_shapes_with_out_sharding(products, name):
    out = products[name]
    expected = {"dot": X @ W, "tensordot": X @ W, "einsum": X @ W, "matmul": X @ W,
                "reshape": X.reshape(32), "ravel": X.reshape(32),
                "broadcast_to": np.ones((8, 4))}[name]
    assert str(lc.typeof(out)) == JAX_TYPES[name]
    assert out.sharding == lc.typeof(out).sharding  # laid out as typed
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6)


@pytest.mark.parametrize("make, jax_type, value", [
    (lambda: jnp.zeros((8, 4), out_sharding=P("x")), "float32[8@x,4]", np.zeros((8, 4))),
    (lambda: jnp.ones((8, 4), jnp.int32, out_sharding=P(None, "y")), "int32[8,4@y]",
     np.ones((8, 4))),
    (lambda: jnp.full((8, 4), 2.0, out_sharding=P("x")), "~float32[8@x,4]",
     np.full((8, 4), 2.0)),
    (lambda: jnp.full((8, 4), np.float32(2.0), out_sharding=P("x")), "float32[8@x,4]",
     np.full((8, 4), 2.0)),
    (lambda: jnp.empty((8, 4), out_sharding=P("x")), "float32[8@x,4]", None),
    (lambda: jnp.arange(8, out_sharding=P("x")), "int32[8@x]", np.arange(8)),
    (lambda: jnp.array(X, out_sharding=P("x")), "float32[8@x,4]", X),
    (lambda: jnp.zeros_like(put(X, "x", "y")), "float32[8@x,4@y]", np.zeros((8, 4))),
    (lambda: jnp.ones_like(put(X, "x", "y"), dtype=jnp.int32), "int32[8@x,4@y]",
     np.ones((8, 4))),
    (lambda: jnp.full_like(put(X, "x", "y"), 3.0), "float32[8@x,4@y]", np.full((8, 4), 3.0)),
    (lambda: jnp.zeros_like(put(X, "x", "y"), out_sharding=P("y")), "float32[8@y,4]",
     np.zeros((8, 4))),
])
def test_creation_with_out_sharding(make, jax_type, value):
    out = make()
    assert str(lc.typeof(out)) == jax_type
    assert out.sharding == lc.typeof(out).sharding
    if value is not None:
        np.testing.assert_array_equal(np.asarray(out), value)


def test_device_and_out_sharding_together_are_an_error():
    with pytest.raises(ValueError, match="Only one of `device` or `out_sharding` can be set"):
        jnp.zeros((8,), device=lc.devices()[0], out_sharding=P("x"))


def test_a_contraction_over_split_dimensions_needs_out_sharding():
    with pytest.raises(Exception, match="Contracting dimensions are sharded"):
        lc.make_jaxpr(jnp.dot)(put(X, "x", "y"), put(W, "y"))


@pytest.mark.parametrize("sample, args", [
    ("normal", ((8, 4),)), ("uniform", ((8, 4),)), ("randint", ((8, 4), 0, 10)),
    ("bits", ((8, 4),)),
])
def test_samplers_with_out_sharding(sample, args):
    key = jr.key(0)
    out = getattr(jr, sample)(key, *args, out_sharding=P("x", "y"))
    dtype = {"randint": "int32", "bits": "uint32"}.get(sample, "float32")
    assert str(lc.typeof(out)) == f"{dtype}[8@x,4@y]"  # as JAX 0.10.2
    assert out.sharding == lc.typeof(out).sharding
    # the same numbers as unsharded (JAX's too: its threefry is partitionable)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(getattr(jr, sample)(key, *args)))
