"""shard_map's check_vma: the manual mesh axes a value varies over, in its type.

The type strings (`typeof` inside the body) and error messages were recorded from
JAX 0.10.2 with 8 CPU devices on the same (4, 2) mesh.
"""

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as jnp
from lamella.core.sharding import Mesh
from lamella.core.sharding import PartitionSpec as P
from lamella.core.test_util import numerical_grad
from lamella.lax.test_util import assert_close

MESH = Mesh(np.array(lc.devices()[:8]).reshape(4, 2), ("x", "y"))
A = np.arange(8, dtype=np.float32)
PERM = [(0, 1), (1, 2), (2, 3), (3, 0)]


def typeof(v) -> str:
    return str(lc.typeof(v))


SPLIT_X = P("x")


def types_in_body(body, **kw) -> list:
    """What `body(block)` returns (a list of type strings), the block split over "x"."""
    seen = []

    def wrapped(b):
        seen.extend(body(b))
        return b
    lc.shard_map(wrapped, mesh=MESH, in_specs=SPLIT_X, out_specs=SPLIT_X, **kw)(A)
    return seen


C = np.float32(2.0)

# expression -> JAX 0.10.2's `typeof` of it inside shard_map(in_specs=P("x")) on (4, 2)
RECORDED = [
    (lambda b: b, "float32[2]{V:x}"),
    (lambda b: jnp.float32(2.0), "float32[]"),
    (lambda b: b * jnp.float32(2.0), "float32[2]{V:x}"),
    (lambda b: b + 1, "float32[2]{V:x}"),
    (lambda b: jnp.zeros(3), "float32[3]"),
    (lambda b: jnp.arange(3), "int32[3]"),
    (lambda b: b.sum(), "float32[]{V:x}"),
    (lambda b: b[0], "float32[]{V:x}"),
    (lambda b: jnp.where(b > 0, 1.0, 0.0), "~float32[2]{V:x}"),
    (lambda b: lax.psum(b, "x"), "float32[2]"),
    (lambda b: lax.psum(b, "y"), "float32[2]{V:x}"),
    (lambda b: lax.psum(C, "x"), "float32[]"),
    (lambda b: lax.psum(C, ("x", "y")), "float32[]"),
    (lambda b: lax.pmean(b, "x"), "float32[2]"),
    (lambda b: lax.pmax(b, "x"), "float32[2]"),
    (lambda b: lax.pmax(C, "x"), "float32[]"),
    (lambda b: lax.all_gather(b, "x"), "float32[4,2]{V:x}"),
    (lambda b: lax.all_gather(b, "x", tiled=True), "float32[8]{V:x}"),
    (lambda b: lax.all_gather(C, "x"), "float32[4]{V:x}"),
    (lambda b: lax.ppermute(b, "x", PERM), "float32[2]{V:x}"),
    (lambda b: lax.ppermute(C, "x", [(0, 1), (1, 0), (2, 3), (3, 2)]), "float32[]{V:x}"),
    (lambda b: lax.axis_index("x"), "int32[]{V:x}"),
    (lambda b: lax.axis_index("y"), "int32[]{V:y}"),
    (lambda b: lax.psum_scatter(jnp.ones(2), "y"), "float32[]{V:y}"),
    (lambda b: lax.psum_scatter(jnp.ones(4), "y", tiled=True), "float32[2]{V:y}"),
    (lambda b: lax.psum_scatter(jnp.ones(4) * b[0], "x"), "float32[]{V:x}"),
    (lambda b: lax.all_to_all(jnp.ones((4, 2)), "x", 0, 0), "float32[4,2]{V:x}"),
    (lambda b: lax.pcast(C, ("x", "y"), to="varying"), "float32[]{V:(x,y)}"),
    (lambda b: lax.pcast(C, ("y", "x"), to="varying"), "float32[]{V:(x,y)}"),
    (lambda b: lax.pcast(C, "y", to="varying"), "float32[]{V:y}"),
    (lambda b: lax.pcast(b, (), to="varying"), "float32[2]{V:x}"),
    (lambda b: lax.cond(True, lambda u: u * C,
                        lambda u: lax.pcast(C * jnp.ones(2), "x", to="varying"), b),
     "float32[2]{V:x}"),
    (lambda b: lax.cond(b[0] > 0, lambda: C * 1, lambda: C * 2), "float32[]"),
    (lambda b: lax.fori_loop(0, 3, lambda i, c: c * b[0], lax.pcast(C, "x", to="varying")),
     "float32[]{V:x}"),
    (lambda b: lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2), (0, b))[1],
     "float32[2]{V:x}"),
    (lambda b: lc.jit(lambda u: u * 2)(b), "float32[2]{V:x}"),
    (lambda b: lc.jit(lambda: jnp.ones(2))(), "float32[2]"),
]


def test_types_inside_the_body_are_jaxs():
    got = types_in_body(lambda b: [typeof(f(b)) for f, _ in RECORDED])
    assert got == [want for _, want in RECORDED]


def test_axes_print_in_the_meshs_order():
    mesh = Mesh(np.array(lc.devices()[:8]).reshape(4, 2), ("b", "a"))
    seen = []

    def body(b):
        seen.extend([typeof(b), typeof(lax.pcast(C, ("a", "b"), to="varying"))])
        return b
    lc.shard_map(body, mesh=mesh, in_specs=P(("a", "b")), out_specs=P(("a", "b")))(A)
    assert seen == ["float32[1]{V:(b,a)}", "float32[]{V:(b,a)}"]


def test_custom_derivative_bodies_keep_the_axes():
    @lc.custom_jvp
    def double(u):
        return u * 2
    double.defjvp(lambda p, t: (p[0] * 2, t[0] * 2))

    @lc.custom_vjp
    def triple(u):
        return u * 3
    triple.defvjp(lambda u: (u * 3, None), lambda r, ct: (ct * 3,))
    assert types_in_body(lambda b: [typeof(double(b)), typeof(triple(b)),
                                    typeof(lc.checkpoint(jnp.sin)(b))]) == [
        "float32[2]{V:x}"] * 3


def test_a_scan_carry_that_becomes_varying_is_typed_varying():
    # JAX raises here (the carry's type changes); lamella types the carry as varying,
    # so the out_specs check still sees it.
    def body(b):
        return lax.scan(lambda c, u: (c + u, c), C, b)[0]
    with pytest.raises(ValueError, match="inferred to be possibly varying over {x}"):
        lc.shard_map(body, mesh=MESH, in_specs=P("x"), out_specs=P())(A)


def _message(spec: str, detail: str) -> str:
    return ("shard_map applied to the function '<lambda>' was given out_specs which require "
            "replication which can't be statically inferred given the mesh:\n\n"
            "The mesh given has shape (4, 2) with corresponding axis names ('x', 'y').\n\n"
            f"out_specs{spec}{detail}\n\n"
            "Check if these output values are meant to be replicated over those mesh axes. "
            "If not, consider revising the corresponding out_specs entries. If so, consider "
            "disabling the check by passing the check_vma=False argument to "
            "`lamella.core.shard_map`.")


NOT_X = (" which implies that the corresponding output value is only varying across mesh "
         "axes {} and not {x}, but it was inferred to be possibly varying over {x}")


@pytest.mark.parametrize("f, in_spec, out_specs, message", [
    (lambda b: b * 2, P("x"), P(), _message(" is P()", NOT_X)),
    (lambda b: (b, b * 2), P("x"), (P("x"), P()), _message("[1] is P()", NOT_X)),
    (lambda b: {"k": b}, P("x"), {"k": P()}, _message("['k'] is P()", NOT_X)),
    (lambda b: b, P(("x", "y")), P("x"), _message(
        " is P('x',)", " which implies that the corresponding output value is replicated "
        "across mesh axis 'y', but could not infer replication over any axes")),
    (lambda b: b, P(("x", "y")), P(), _message(
        " is P()", " which implies that the corresponding output value is only varying "
        "across mesh axes {} and not {x,y}, but it was inferred to be possibly varying "
        "over {x,y}")),
])
def test_an_output_replicated_by_its_spec_but_varying_is_an_error(f, in_spec, out_specs,
                                                                  message):
    with pytest.raises(ValueError) as info:
        lc.shard_map(f, mesh=MESH, in_specs=in_spec, out_specs=out_specs)(A)
    assert str(info.value) == message


def test_check_vma_false_neither_types_nor_checks():
    seen = types_in_body(lambda b: [typeof(b), typeof(lax.axis_index("x")),
                                    typeof(lax.pcast(C, "x", to="varying"))], check_vma=False)
    assert seen == ["float32[2]", "int32[]", "float32[]"]
    # As JAX: the first device's block.
    out = lc.shard_map(lambda b: b * 2, mesh=MESH, in_specs=P("x"), out_specs=P(),
                       check_vma=False)(A)
    assert_close(out, np.float32([0, 2]), np.float32)


def test_outputs_made_invariant_by_a_collective_pass_the_check():
    f = lc.jit(lc.shard_map(lambda b: (lax.psum(b, "x"), lax.pmean(b, "x"),
                                       lax.pmax(b, ("x", "y"))),
                            mesh=MESH, in_specs=P("x"), out_specs=(P(), P(), P())))
    total, mean, top = f(A)
    assert_close(total, A.reshape(4, 2).sum(0), np.float32)
    assert_close(mean, A.reshape(4, 2).mean(0), np.float32)
    assert_close(top, A.reshape(4, 2).max(0), np.float32)


@pytest.mark.parametrize("f, what, axes", [
    (lambda b: lax.psum(b, ("x", "y")), "psum", "('x', 'y')"),
    (lambda b: lax.pmean(b, ("y", "x")), "psum", "('y', 'x')"),
    (lambda b: lax.psum((b, C), ("x", "y")), "psum", "('x', 'y')"),
    # A vmap's axis name counts as an axis the value does not vary over.
    (lambda b: lc.vmap(lambda u: lax.psum(u, ("x", "i")), axis_name="i")(b), "psum",
     "('x', 'i')"),
    (lambda b: lax.psum_scatter(jnp.ones(8) * b[0], ("x", "y"), tiled=True), "psum_scatter",
     "('x', 'y')"),
])
def test_a_sum_over_varying_and_invariant_axes_is_an_error(f, what, axes):
    # As JAX 0.10.2 (pmax, pmin, all_gather, ppermute accept the mix).
    def body(b):
        with pytest.raises(ValueError) as info:
            f(b)
        assert str(info.value).startswith(
            f"lamella.lax.{what} can only accept axis_name which corresponds to one of "
            "varying, unreduced, reduced or invarying state of the input. Got input type: ")
        assert str(info.value).endswith(
            f", axes: {axes} and input state: {{'invarying', 'varying'}}")
        return []
    types_in_body(body)


def test_pcast_errors_are_jaxs():
    def body(b):
        for args, error, text in [
                ((b, "x"), ValueError, "Unsupported pcast from=varying, to='varying'"),
                ((C, {"x"}), TypeError, "must be a tuple or a str")]:
            with pytest.raises(error, match=text):
                lax.pcast(*args, to="varying")
        with pytest.raises(ValueError, match="Allowed `to` values"):
            lax.pcast(C, "x", to="sideways")
        return []
    types_in_body(body)


def _loss(v, body, in_spec):
    out = lc.shard_map(body, mesh=MESH, in_specs=in_spec, out_specs=P())(v)
    return jnp.sum(out)


@pytest.mark.parametrize("body, in_spec", [
    (lambda b: lax.psum(jnp.sum(b ** 2), "x"), P("x")),
    (lambda b: lax.psum(jnp.sum(jnp.sin(b) * lax.pcast(C, "x", to="varying")), ("x",)),
     P("x")),
    # A replicated input used by varying values: its cotangent is summed over "x".
    (lambda b: lax.psum(jnp.sum(b * lax.axis_index("x").astype(np.float32)), "x"), P()),
    (lambda b: lax.pmean(lax.cond(b[0] > 3, jnp.sin, jnp.cos, b), "x"), P("x")),
])
def test_grad_through_a_checked_shard_map_matches_numerical(body, in_spec):
    x = A / 4
    got = lc.grad(lambda v: _loss(v, body, in_spec))(x)
    want = numerical_grad(lambda v: _loss(v, body, in_spec), x, eps=1e-3)
    assert_close(got, want, np.float32, tol=1e-2)


def test_grad_of_psum_is_as_in_jax():
    g = lc.grad(lambda v: _loss(v, lambda b: lax.psum(jnp.sum(b ** 2), "x"), P("x")))(A)
    assert_close(g, 2 * A, np.float32)


def test_vmap_of_a_checked_shard_map():
    seen = []

    def body(b):
        seen.append(typeof(b))
        return lax.psum(b * lax.pcast(C, "x", to="varying"), "x")
    f = lc.shard_map(body, mesh=MESH, in_specs=P("x"), out_specs=P())
    xs = np.arange(24, dtype=np.float32).reshape(3, 8)
    got = lc.vmap(f)(xs)
    assert_close(got, np.stack([2 * x.reshape(4, 2).sum(0) for x in xs]), np.float32)
    assert seen[0] == "float32[2]{V:x}"


def test_nested_and_partial_regions():
    seen = []

    def outer(b):
        seen.append(typeof(b))

        def inner(c):
            seen.append(typeof(c))
            return lax.psum(c, ("y",))
        r = lc.shard_map(inner, in_specs=P("y"), out_specs=P(), axis_names={"y"})(b)
        seen.append(typeof(r))
        return r
    out = lc.jit(lc.shard_map(outer, mesh=MESH, in_specs=P("x"), out_specs=P("x"),
                              axis_names={"x"}))(A)
    assert seen == ["float32[2]{V:x}", "float32[1]{V:(x,y)}", "float32[1]{V:x}"]
    assert_close(out, np.float32([1, 5, 9, 13]), np.float32)

    def partial(b):
        seen.append((typeof(b), typeof(lax.axis_index("x"))))
        return b
    lc.jit(lc.shard_map(partial, mesh=MESH, in_specs=P("x"), out_specs=P("x"),
                        axis_names={"x"}))(A)
    assert seen[-1] == ("float32[2]{V:x}", "int32[]{V:x}")


def test_nested_output_varying_over_the_inner_axis_is_an_error():
    def outer(b):
        return lc.shard_map(lambda c: c, in_specs=P("y"), out_specs=P(), axis_names={"y"})(b)
    with pytest.raises(ValueError, match="replicated across mesh axis 'y'"):
        lc.shard_map(outer, mesh=MESH, in_specs=P("x"), out_specs=P("x"),
                     axis_names={"x"})(A)


def test_pmap_values_are_not_typed():
    # JAX's pmap is a shard_map without the check: no {V:...} in its body's types.
    seen = []

    def body(b):
        seen.extend([typeof(b), typeof(lax.psum(b, "i"))])
        return b * 2
    out = lc.pmap(body, axis_name="i")(np.ones((8, 2), np.float32))
    assert seen == ["float32[2]", "float32[2]"]
    assert_close(out, np.full((8, 2), 2, np.float32), np.float32)
