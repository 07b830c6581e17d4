"""JAX 0.10's explicit sharding (8 CPU devices): an array's type carries its layout over
a mesh with Explicit axes, each primitive's rule propagates it, and XLA's partitioner
produces exactly the typed layout. Expected types and messages were recorded from
JAX 0.10.2 with the same mesh; values are checked against NumPy on one device."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as jnp
from lamella.core.sharding import (
    AxisType,
    NamedSharding,
    P,
    ShardingTypeError,
    auto_axes,
    explicit_axes,
    get_abstract_mesh,
    make_mesh,
    set_mesh,
)

MESH = make_mesh((4, 2), ("x", "y"))  # Explicit axes: JAX 0.10's default
AUTO = make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
X = np.arange(32, dtype=np.float32).reshape(8, 4) / 7
W = np.arange(24, dtype=np.float32).reshape(4, 6) / 11


@pytest.fixture(autouse=True)
def _explicit_mesh():
    with set_mesh(MESH):
        yield


def put(value, *spec):
    return lc.device_put(value, NamedSharding(MESH, P(*spec)))


def spec(x):
    """The result's layout as a full-length spec (trailing Nones kept)."""
    return x.sharding.spec._normalized(np.ndim(x))


def full_spec(ndim, *entries):
    return P(*entries)._normalized(ndim)


# --- types ------------------------------------------------------------------------------


def test_types_show_the_sharding_as_jax_prints_it():
    x = put(X, "x", "y")
    assert repr(lc.typeof(x)) == "ShapedArray(float32[8@x,4@y])"
    assert str(lc.typeof(x)) == "float32[8@x,4@y]"
    assert lc.typeof(x).str_short() == "f32[8@x,4@y]"
    assert str(lc.typeof(put(np.ones((16, 3), np.float32), ("x", "y")))) == \
        "float32[16@(x,y),3]"
    assert str(lc.typeof(put(np.ones(8, np.int32), "x"))) == "int32[8@x]"
    assert str(lc.typeof(put(np.ones((2, 8, 4), bool), None, "x", "y"))) == "bool[2,8@x,4@y]"
    assert str(lc.typeof(put(X, "y", "x"))) == "float32[8@y,4@x]"
    assert str(lc.typeof(put(X))) == "float32[8,4]"  # replicated: nothing split
    assert lc.typeof(x) != lc.typeof(put(X, "x")) and lc.typeof(x) == lc.typeof(put(X, "x", "y"))


def test_types_under_an_auto_mesh_carry_no_sharding():
    x = lc.device_put(X, NamedSharding(AUTO, P("x", "y")))
    assert str(lc.typeof(x)) == "float32[8,4]"
    assert lc.typeof(x).sharding is None


def test_the_type_is_visible_while_tracing():
    seen = []

    @lc.jit
    def f(x, w):
        seen.append((str(lc.typeof(x)), str(lc.typeof(w))))
        return x @ w

    out = f(put(X, "x"), put(W, None, "y"))
    assert seen == [("float32[8@x,4]", "float32[4,6@y]")]
    assert str(lc.typeof(out)) == "float32[8@x,6@y]"
    assert spec(out) == full_spec(2, "x", "y")
    np.testing.assert_allclose(np.asarray(out), X @ W, rtol=1e-6)


def test_shape_dtype_structs_carry_the_type():
    struct = lc.ShapeDtypeStruct((8, 4), np.float32, sharding=NamedSharding(MESH, P("x", "y")))
    out = lc.eval_shape(lambda v: jnp.sum(v, axis=0), struct)
    assert (out.shape, out.sharding) == ((4,), NamedSharding(MESH, P("y")))
    assert "f32[8@x,4@y]" in str(lc.make_jaxpr(jnp.sin)(struct))


def test_abstract_mesh():
    assert repr(get_abstract_mesh()) == ("AbstractMesh('x': 4, 'y': 2, axis_types=(Explicit, "
                                         "Explicit), device_kind=cpu, num_cores=None, "
                                         "platform=cpu)")
    with set_mesh(None):
        assert get_abstract_mesh().empty
        assert repr(get_abstract_mesh()) == "AbstractMesh((), axis_types=())"


# --- propagation: one compiled program checks every rule ---------------------------------


def _every_rule(a, b, c, x, w):
    return {
        "add_ab": a + b,                           # f32[8@x,4] + f32[8,4@y]
        "add_ac": a + c,                           # with a replicated operand
        "add_scalar": a + 1.0,
        "sin": jnp.sin(x),
        "broadcast": jnp.broadcast_to(x, (3, 8, 4)),
        "expand": x[None],
        "reshape_split": x.reshape(8, 2, 2),
        "reshape_merge": x.reshape(32),
        "reshape_rows": a.reshape(4, 2, 4),
        "transpose": x.T,
        "sum0": x.sum(0),
        "sum1": x.sum(1),
        "max": jnp.max(x),
        "argmax": jnp.argmax(a, 1),
        "mean0": jnp.mean(x, axis=0),
        "dot": a @ lc.reshard(w, P(None, "y")),   # free dims keep their axes
        "dot_one_contracting": x @ jnp.ones((4, 6), np.float32),
        "dot_batch": lc.reshard(jnp.ones((8, 4, 2)), P("x")) @ lc.reshard(
            jnp.ones((8, 2, 6)), P("x", None, "y")),   # batch dims keep theirs too
        "shard_map": lc.shard_map(lambda v: lax.psum(v, "y"), mesh=MESH, in_specs=P("x", "y"),
                                  out_specs=P("x", None))(x),
        "astype": a.astype(np.int32),
        "slice_cols": a[:, 1:3],
        "concat0": jnp.concatenate([a, a], 0),
        "concat1": jnp.concatenate([a, a], 1),
        "pad": jnp.pad(a, ((0, 0), (1, 1))),
        "where": jnp.where(a > 0.5, a, 0.0),
        "cumsum1": jnp.cumsum(a, 1),
        "rev": jnp.flip(a, 0),
        "cond": lax.cond(True, lambda v: v * 2, lambda v: v, a),
        "fori": lax.fori_loop(0, 3, lambda i, v: v * 2, a),
        "scan_carry": lax.scan(lambda carry, v: (carry + v, v), c, jnp.ones((3, 8, 4)))[0],
        "nested_jit": lc.jit(lambda v: jnp.tanh(v) * 2)(x),
        "reshard": lc.reshard(a, P(None, "x")),
    }


EVERY_RULE = lc.jit(_every_rule)


def _reference(a, b, c, x, w):
    return {
        "add_ab": a + b, "add_ac": a + c, "add_scalar": a + 1, "sin": np.sin(x),
        "broadcast": np.broadcast_to(x, (3, 8, 4)), "expand": x[None],
        "reshape_split": x.reshape(8, 2, 2), "reshape_merge": x.reshape(32),
        "reshape_rows": a.reshape(4, 2, 4), "transpose": x.T, "sum0": x.sum(0),
        "sum1": x.sum(1), "max": x.max(), "argmax": a.argmax(1), "mean0": x.mean(0),
        "dot": a @ w, "dot_one_contracting": x @ np.ones((4, 6), np.float32),
        "dot_batch": np.full((8, 4, 6), 2.0), "shard_map": x[:, :2] + x[:, 2:],
        "astype": a.astype(np.int32), "slice_cols": a[:, 1:3],
        "concat0": np.concatenate([a, a], 0), "concat1": np.concatenate([a, a], 1),
        "pad": np.pad(a, ((0, 0), (1, 1))), "where": np.where(a > 0.5, a, 0),
        "cumsum1": np.cumsum(a, 1), "rev": a[::-1], "cond": a * 2, "fori": a * 8,
        "scan_carry": c + 3, "nested_jit": np.tanh(x) * 2, "reshard": a,
    }


# The types JAX 0.10.2 gives each result (recorded with the same mesh and inputs).
JAX_TYPES = {
    "add_ab": "float32[8@x,4@y]", "add_ac": "float32[8@x,4]", "add_scalar": "float32[8@x,4]",
    "sin": "float32[8@x,4@y]", "broadcast": "float32[3,8@x,4@y]",
    "expand": "float32[1,8@x,4@y]", "reshape_split": "float32[8@x,2@y,2]",
    "reshape_merge": "float32[32@(x,y)]", "reshape_rows": "float32[4@x,2,4]",
    "transpose": "float32[4@y,8@x]", "sum0": "float32[4@y]", "sum1": "float32[8@x]",
    "max": "float32[]", "argmax": "int32[8@x]", "mean0": "float32[4@y]",
    "dot": "float32[8@x,6@y]", "dot_one_contracting": "float32[8@x,6]",
    "dot_batch": "float32[8@x,4,6@y]", "shard_map": "float32[8@x,2]",
    "astype": "int32[8@x,4]", "slice_cols": "float32[8@x,2]", "concat0": "float32[16@x,4]",
    "concat1": "float32[8@x,8]", "pad": "float32[8@x,6]", "where": "float32[8@x,4]",
    "cumsum1": "float32[8@x,4]", "rev": "float32[8@x,4]", "cond": "float32[8@x,4]",
    "fori": "float32[8@x,4]", "scan_carry": "float32[8,4]", "nested_jit": "float32[8@x,4@y]",
    "reshard": "float32[8,4@x]",
}


@pytest.fixture(scope="module")
def every_rule():
    with set_mesh(MESH):
        args = (put(X, "x"), put(X * 2, None, "y"), put(X - 1), put(X, "x", "y"),
                put(W, "y"))
        return EVERY_RULE(*args), _reference(X, X * 2, X - 1, X, W)


@pytest.mark.parametrize("name", sorted(JAX_TYPES))
def test_each_rule_gives_jax_type_layout_and_values(every_rule, name):
    outs, expected = every_rule
    out = outs[name]
    assert str(lc.typeof(out)) == JAX_TYPES[name]
    typed = lc.typeof(out).sharding
    want = typed.spec._normalized(np.ndim(out)) if typed else full_spec(np.ndim(out))
    if np.ndim(out):
        assert spec(out) == want  # the runtime layout is the type's
    np.testing.assert_allclose(np.asarray(out), expected[name], rtol=2e-6, atol=1e-6)


def test_eager_operations_keep_the_typed_layout():
    a = put(X, "x")
    out = a * 2
    assert str(lc.typeof(out)) == "float32[8@x,4]" and spec(out) == full_spec(2, "x")
    np.testing.assert_allclose(np.asarray(out), X * 2)


def test_typed_layouts_are_sharding_annotations_in_the_program():
    text = lc.jit(lambda v, w: jnp.sin(v) @ w).lower(put(X, "x"), put(W, None, "y")).as_text()
    assert '@Sharding' in text and "mhlo.sharding" in text
    assert "{devices=[4,2]0,1,2,3,4,5,6,7}" in text  # the f32[8@x,6@y] product


# --- errors: JAX's classes and messages ------------------------------------------------


def _trace(f, *args):
    return lc.make_jaxpr(f)(*args)


@pytest.mark.parametrize("f, args, error, message", [
    (lambda u, v: u + v, (("x", None), ("y", None)), ShardingTypeError,
     r"add got incompatible shardings for broadcasting: \('x', None\), \('y', None\)\."),
    (lambda u, v: u @ v.T, (("x", "y"), (None, "y")), ShardingTypeError,
     r"Contracting dimensions are sharded and it is ambiguous how the output should be "
     r"sharded\. Please specify the output sharding via the `out_sharding` parameter\. Got "
     r"lhs_contracting_spec=\('y',\) and rhs_contracting_spec=\('y',\)"),
    (lambda u, v: u.reshape(2, 4, 4), (("x", "y"), ()), ShardingTypeError,
     r"This reshape is not supported\. Please specify the sharding of the output via the "
     r"`out_sharding` argument of jax\.lax\.reshape\. Got operand type: float32\[8@x,4@y\], "
     r"new sizes: \(2, 4, 4\)"),
    (lambda u, v: jnp.cumsum(u, 0), (("x",), ()), ShardingTypeError,
     r"Input should be unsharded over the axis being reduced\. Got input "
     r"type=float32\[8@x,4\] and axis=0"),
    (lambda u, v: jnp.sort(u, 0), (("x",), ()), ShardingTypeError,
     r"Arguments to sort must be unsharded over the sorting dimension"),
    (lambda u, v: jnp.pad(u, ((1, 1), (0, 0))), (("x",), ()), ShardingTypeError,
     r"padding on sharded dims where out dim \(10\) is not divisible by mesh axes \(4\) with "
     r"spec \(x\) is not implemented"),
    (lambda u, v: jnp.concatenate([u, v], 1), (("x",), (None, "y")), ShardingTypeError,
     r"All operands should have the same sharding"),
    (lambda u, v: lax.scan(lambda c, r: (c + r, r), jnp.zeros(4), u), (("x",), ()),
     ValueError, r"0th dimension of all xs should be replicated\. Got P\('x', None\)"),
    (lambda u, v: lax.with_sharding_constraint(u, P(None, "x")), (("x",), ()), AssertionError,
     r"`with_sharding_constraint` acts as an assert when all axes of mesh are of type "
     r"`Explicit`\. The array sharding: P\('x', None\) did not match the sharding provided: "
     r"P\(None, 'x'\)\. Please use `jax\.sharding\.reshard`"),
    (lambda u, v: lax.linalg.qr(u), (("x",), ()), ShardingTypeError,
     r"Input 0 to qr must be unsharded on non-batch dimensions, but got P\('x', None\)\."),
])
def test_undecidable_layouts_are_errors(f, args, error, message):
    operands = [put(X, *a) for a in args]
    with pytest.raises(error, match=message):
        _trace(f, *operands)


# --- out_sharding settles what the rules cannot -----------------------------------------

DOT_INTO = lc.jit(lambda u, v: lax.dot_general(u, v, (((1,), (0,)), ((), ())),
                                               out_sharding=P("x", None)))
RESHAPE_INTO = lc.jit(lambda u: lax.reshape(u, (2, 4, 4), out_sharding=P(None, "x")))


def test_out_sharding_decides_a_contraction_over_a_split_dimension():
    out = DOT_INTO(put(X, "x", "y"), put(W, "y"))
    assert str(lc.typeof(out)) == "float32[8@x,6]" and spec(out) == full_spec(2, "x")
    np.testing.assert_allclose(np.asarray(out), X @ W, rtol=1e-6)


def test_out_sharding_decides_a_reshape():
    out = RESHAPE_INTO(put(X, "x", "y"))
    assert str(lc.typeof(out)) == "float32[2,4@x,4]" and spec(out) == full_spec(3, None, "x")
    np.testing.assert_array_equal(np.asarray(out), X.reshape(2, 4, 4))


def test_out_sharding_of_creation_and_broadcasting():
    iota = lax.broadcasted_iota(np.int32, (8, 4), 0, out_sharding=P("x"))
    assert str(lc.typeof(iota)) == "int32[8@x,4]"
    np.testing.assert_array_equal(np.asarray(iota), np.broadcast_to(np.arange(8)[:, None],
                                                                     (8, 4)))
    b = lax.broadcast_in_dim(np.ones(4, np.float32), (8, 4), (1,), out_sharding=P("x"))
    assert str(lc.typeof(b)) == "float32[8@x,4]" and spec(b) == full_spec(2, "x")
    assert str(lc.typeof(lax.full((8, 4), 2.0, sharding=P(None, "y")))) == "~float32[8,4@y]"


def test_out_sharding_needs_a_mesh_for_a_bare_spec():
    with set_mesh(None), pytest.raises(ValueError, match="needs a mesh"):
        lax.broadcasted_iota(np.int32, (8,), 0, out_sharding=P("x"))


# --- an MLP forward and backward, data- and model-parallel ---------------------------------

RNG = np.random.default_rng(0)
XB = RNG.standard_normal((16, 8)).astype(np.float32)
YB = RNG.standard_normal((16, 4)).astype(np.float32)
W1 = (RNG.standard_normal((8, 12)) / 3).astype(np.float32)
B1 = RNG.standard_normal(12).astype(np.float32)
W2 = (RNG.standard_normal((12, 4)) / 3).astype(np.float32)


def _loss(params, x, y):
    w1, b1, w2 = params
    h = jnp.tanh(x @ w1 + b1)
    return jnp.mean((jnp.matmul(h, w2, out_sharding=P("x")) - y) ** 2)


FORWARD = lc.jit(lambda p, x: jnp.matmul(jnp.tanh(x @ p[0] + p[1]), p[2], out_sharding=P("x")))
GRAD = lc.jit(lc.grad(_loss))


def _reference_mlp():
    x, y, w1, b1, w2 = (v.astype(np.float64) for v in (XB, YB, W1, B1, W2))
    h = np.tanh(x @ w1 + b1)
    pred = h @ w2
    d_pred = 2 * (pred - y) / pred.size
    d_pre = (d_pred @ w2.T) * (1 - h ** 2)
    return pred, (x.T @ d_pre, d_pre.sum(0), h.T @ d_pred)


@pytest.mark.parametrize("layout, grad_specs", [
    # data parallel: batch split over x, parameters replicated (JAX: grads replicated)
    (((), (), ()), [(None, None), (None,), (None, None)]),
    # megatron: the hidden dimension split over y (JAX: grads keep the parameters' layouts)
    (((None, "y"), ("y",), ("y", None)), [(None, "y"), ("y",), ("y", None)]),
])
def test_mlp_forward_and_backward(layout, grad_specs):
    params = tuple(put(v, *s) for v, s in zip((W1, B1, W2), layout))
    x, y = put(XB, "x"), put(YB, "x")
    pred_ref, grads_ref = _reference_mlp()
    pred = FORWARD(params, x)
    assert str(lc.typeof(pred)) == "float32[16@x,4]" and spec(pred) == full_spec(2, "x")
    np.testing.assert_allclose(np.asarray(pred), pred_ref, rtol=1e-5, atol=1e-5)
    grads = GRAD(params, x, y)
    for g, want, s, p in zip(grads, grads_ref, grad_specs, params):
        assert lc.typeof(g) == lc.typeof(p).update(weak_type=False)
        assert spec(g) == full_spec(len(s), *s)
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-4, atol=1e-5)


def test_model_parallel_without_out_sharding_is_ambiguous():
    params = (put(W1, None, "y"), put(B1, "y"), put(W2, "y", None))
    with pytest.raises(ShardingTypeError, match="Contracting dimensions are sharded"):
        _trace(lambda p, x: jnp.tanh(x @ p[0] + p[1]) @ p[2], params, put(XB, "x"))


# --- transformations -------------------------------------------------------------------


def test_gradients_carry_their_primals_sharding():
    x = put(X, "x", "y")
    g = lc.grad(lambda v: jnp.sum(jnp.sin(v) ** 2))(x)
    assert str(lc.typeof(g)) == "float32[8@x,4@y]" and spec(g) == full_spec(2, "x", "y")
    np.testing.assert_allclose(np.asarray(g), 2 * np.sin(X) * np.cos(X), rtol=1e-5, atol=1e-6)
    g = lc.grad(lambda v: lc.reshard(v, P(None, "y")).sum())(put(X, "x"))
    assert str(lc.typeof(g)) == "float32[8@x,4]"  # back to the primal's layout
    ga, gb = lc.grad(lambda a, b: jnp.dot(a, b, out_sharding=P("x")).sum(), argnums=(0, 1))(
        x, put(W, "y"))
    assert (str(lc.typeof(ga)), str(lc.typeof(gb))) == ("float32[8@x,4@y]", "float32[4@y,6]")
    np.testing.assert_allclose(np.asarray(ga), np.broadcast_to(W.sum(1), (8, 4)), rtol=1e-5)


def test_vmap_sees_the_unbatched_dimensions_sharding():
    seen = []

    def f(v):
        seen.append(str(lc.typeof(v)))
        return jnp.sin(v) * 2
    out = lc.vmap(f)(put(X, "x", "y"))
    assert seen == ["float32[4@y]"]
    assert str(lc.typeof(out)) == "float32[8@x,4@y]"
    np.testing.assert_allclose(np.asarray(out), np.sin(X) * 2, rtol=1e-6)
    assert str(lc.typeof(lc.vmap(lambda v: v.sum(), in_axes=1)(put(X, "x", "y")))) == \
        "float32[4@y]"
    # JAX 0.10.2 leaves the batch dimension's type as it was with spmd_axis_name too
    spmd = lc.vmap(lambda v: v * 2, spmd_axis_name="x")
    assert str(lc.typeof(spmd(X))) == "float32[8,4]"
    assert str(lc.typeof(spmd(put(X, None, "y")))) == "float32[8,4@y]"


def test_auto_axes_and_explicit_axes():
    seen = []

    @auto_axes
    def matmul(a, b):
        seen.append((str(lc.typeof(a)), get_abstract_mesh().axis_types))
        return a @ b  # XLA decides: no type to be ambiguous about
    out = lc.jit(lambda a, b: matmul(a, b, out_sharding=P("x")))(put(X, "x", "y"), put(W, "y"))
    assert seen == [("float32[8,4]", (AxisType.Auto, AxisType.Auto))]
    assert str(lc.typeof(out)) == "float32[8@x,6]"
    np.testing.assert_allclose(np.asarray(out), X @ W, rtol=1e-6)

    @explicit_axes
    def double(a):
        seen.append(str(lc.typeof(a)))
        return a * 2
    with set_mesh(AUTO):
        out = lc.jit(lambda a: double(a, in_sharding=P("x")))(X)
    assert seen[-1] == "float32[8@x,4]"
    np.testing.assert_allclose(np.asarray(out), X * 2)
