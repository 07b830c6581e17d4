"""matmul against NumPy: vectors, matrices, broadcast batches, promotion, errors,
gradients and vmap."""

import numpy as np
import pytest

import lamella.core as lc
from lamella.numpy.products import matmul

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("a_shape, b_shape", [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
    ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)),
])
def test_matches_numpy(a_shape, b_shape):
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    np.testing.assert_allclose(np.asarray(matmul(a, b)), a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(lc.jit(matmul)(a, b)), np.asarray(matmul(a, b)))


def test_promotes_like_jax():
    out = matmul(np.ones((2, 2), np.int32), np.ones((2, 2), np.float16))
    assert out.dtype == np.float16


def test_gradient_and_vmap():
    a = RNG.standard_normal((2, 3)).astype(np.float32)
    b = RNG.standard_normal((3, 4)).astype(np.float32)
    from lamella.lax import reduce_sum
    ga = lc.grad(lambda x: reduce_sum(matmul(x, b), (0, 1)))(a)
    np.testing.assert_allclose(np.asarray(ga), np.ones((2, 4)) @ b.T, rtol=1e-5)
    batched = lc.vmap(matmul, in_axes=(0, None))(np.stack([a, a + 1]), b)
    np.testing.assert_allclose(np.asarray(batched)[1], (a + 1) @ b, rtol=1e-5)


def test_errors():
    with pytest.raises(TypeError, match="contracted dimensions differ"):  # as JAX's class
        matmul(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="do not broadcast"):
        matmul(np.ones((2, 2, 3)), np.ones((3, 3, 4)))
    with pytest.raises(ValueError, match="at least one dimension"):
        matmul(np.float32(1), np.ones(2))
