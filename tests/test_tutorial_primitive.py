"""JAX's "How primitives work" tutorial, end to end on XLA: a user-defined
`multiply_add` primitive with a NumPy impl, an abstract eval, a StableHLO
lowering, and JVP, transpose and batching rules."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
from lamella.core import ShapedArray, ad, batching
from lamella.lax.lowering import hlo, register_lowering

multiply_add_p = lc.Primitive("multiply_add")


def multiply_add(x, y, z):
    return multiply_add_p.bind(x, y, z)


@multiply_add_p.def_impl
def _impl(x, y, z):
    return np.add(np.multiply(x, y), z)


@multiply_add_p.def_abstract_eval
def _abstract_eval(x, y, z):
    if not x.shape == y.shape == z.shape:
        raise TypeError(f"multiply_add needs equal shapes, got {x.shape}, {y.shape}, {z.shape}")
    return ShapedArray(x.shape, x.dtype)


def _lowering(ctx, x, y, z):
    return [hlo.add(hlo.multiply(x, y), z)]


register_lowering(multiply_add_p, _lowering)


def _jvp(primals, tangents):
    x, y, z = primals
    xt, yt, zt = map(ad.instantiate_zeros, tangents)
    return multiply_add(x, y, z), multiply_add(xt, y, multiply_add(x, yt, zt))


def _transpose(ct, x, y, z):
    zeros = lax.zeros_like_array(ct)
    ct_x = multiply_add(ct, y, zeros) if ad.is_undefined_primal(x) else None
    ct_y = multiply_add(x, ct, zeros) if ad.is_undefined_primal(y) else None
    return [ct_x, ct_y, ct if ad.is_undefined_primal(z) else None]


def _batch(args, dims):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    return multiply_add(*[batching.at_front(a, d, size) for a, d in zip(args, dims)]), 0


ad.primitive_jvps[multiply_add_p] = _jvp
ad.primitive_transposes[multiply_add_p] = _transpose
batching.primitive_batchers[multiply_add_p] = _batch


def square_add(a, b):
    return multiply_add(a, a, b)


def test_eager_uses_the_numpy_impl():
    assert square_add(2.0, 10.0) == 14.0


def test_make_jaxpr_and_jit_through_the_lowering():
    x = np.float32(2.0)
    assert str(lc.make_jaxpr(square_add)(x, x)) == (
        "{ lambda ; a:f32[] b:f32[]. let c:f32[] = multiply_add a a b in (c,) }")
    out = lc.jit(square_add)(np.float32(2.0), np.float32(10.0))
    assert isinstance(out, lax.Array) and float(out) == 14.0
    text = lc.jit(square_add).lower(x, x).as_text()
    assert "stablehlo.multiply" in text and "stablehlo.add" in text


def test_jit_with_static_argnums():
    f = lc.jit(lambda a, b, twice: square_add(a, b) if not twice else square_add(
        square_add(a, b), b), static_argnums=2)
    assert float(f(np.float32(2.0), np.float32(1.0), False)) == 5.0
    assert float(f(np.float32(2.0), np.float32(1.0), True)) == 26.0


def test_jvp():
    y, y_dot = lc.jvp(square_add, (np.float32(2.0), np.float32(10.0)),
                      (np.float32(1.0), np.float32(1.0)))
    assert (y, y_dot) == (14.0, 5.0)


@pytest.mark.parametrize("wrap", ["plain", "jit_of_grad", "grad_of_jit"])
def test_grad(wrap):
    g = lc.grad(square_add)
    if wrap == "jit_of_grad":
        g = lc.jit(g)
    elif wrap == "grad_of_jit":
        g = lc.grad(lc.jit(square_add))
    assert float(g(np.float32(2.0), np.float32(10.0))) == 4.0


def test_vmap_and_vmap_of_grad():
    xs = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(lc.vmap(square_add, in_axes=(0, None))(xs, np.float32(1)),
                                  xs * xs + 1)
    np.testing.assert_array_equal(lc.vmap(lc.grad(square_add), in_axes=(0, None))(
        xs, np.float32(1)), 2 * xs)
    np.testing.assert_array_equal(lc.jit(lc.vmap(lc.grad(square_add), in_axes=(0, None)))(
        xs, np.float32(1)), 2 * xs)
