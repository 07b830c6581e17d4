"""Operators on Arrays and on tracers follow jax.numpy's promotion and broadcasting."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp


def test_operators_on_arrays():
    x = lax.full((2, 3), 2.0, "float32")
    y = np.arange(3, dtype=np.int32)
    np.testing.assert_array_equal(np.asarray(x + y), np.full((2, 3), 2.0) + y)
    np.testing.assert_array_equal(np.asarray(y - x), y - np.full((2, 3), 2.0))
    np.testing.assert_array_equal(np.asarray(x * 3), np.full((2, 3), 6.0))
    np.testing.assert_array_equal(np.asarray(x / 4), np.full((2, 3), 0.5))
    np.testing.assert_array_equal(np.asarray(-x), np.full((2, 3), -2.0))
    np.testing.assert_array_equal(np.asarray(x ** 2), np.full((2, 3), 4.0))
    np.testing.assert_array_equal(np.asarray(x @ np.ones((3, 1), np.float32)),
                                  np.full((2, 1), 6.0))
    np.testing.assert_array_equal(np.asarray(x > y), np.full((2, 3), 2.0) > y)
    assert (x * 2.0).dtype == np.float32 and (lnp.float16(1) + 2.0).dtype == np.float16
    with pytest.raises(TypeError, match="immutable.*at\\[index\\]"):
        x[0] = 1.0


def test_operators_on_tracers_under_transformations():
    def f(v):
        return lax.reduce_sum((v * v + 1.0) / 2.0 - v, (0,))
    x = np.linspace(-1, 1, 5, dtype=np.float32)
    np.testing.assert_allclose(np.asarray(lc.grad(f)(x)), x - 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(lc.jit(lc.vmap(lambda v: v * 2 + 1))(x)), x * 2 + 1)
    assert bool(lc.jit(lambda a: a > 0)(np.float32(1.0)))
