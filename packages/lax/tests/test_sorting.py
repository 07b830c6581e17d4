"""sort, sort_key_val and top_k through lamella.lax.test_util (values, jit,
derivatives, vmap), plus NaN and signed-zero ordering, stability, several keys,
integer and boolean operands, and the error messages."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
from lamella.lax import sorting as S
from lamella.lax.test_util import check, check_derivatives, check_values

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 5)).astype(np.float32)


@pytest.mark.parametrize("dimension", [0, 1, -1])
def test_sort_values_grads_vmap(dimension):
    check(lambda x: S.sort(x, dimension=dimension), [X],
          lambda x: np.sort(x, axis=dimension, kind="stable"))


def test_sort_nans_and_signed_zeros_like_numpy():
    x = np.array([3., np.nan, -1., -0.0, 0.0, 2., -np.nan, -np.inf, np.inf, -0.0, 0.0],
                 np.float32)
    out = np.asarray(S.sort(x))
    expected = np.sort(x, kind="stable")
    np.testing.assert_array_equal(out, expected)
    # Zeros tie, so a stable sort keeps their signs in input order, as NumPy does.
    np.testing.assert_array_equal(np.signbit(out), np.signbit(expected))
    positions = np.arange(x.size, dtype=np.int32)
    _, perm = S.sort_key_val(x, positions)
    np.testing.assert_array_equal(perm, np.argsort(x, kind="stable"))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.float64])
def test_sort_other_dtypes(dtype):
    x = RNG.integers(0, 5, (4, 6)).astype(dtype)
    with lc.enable_x64():
        check(lambda x: S.sort(x, dimension=0), [x], lambda x: np.sort(x, axis=0),
              diff_argnums=None)


def test_sort_complex_orders_lexicographically():
    x = np.array([1 + 2j, 1 + 1j, 0 + 5j, -1 - 1j, 1 + 1j], np.complex64)
    np.testing.assert_array_equal(S.sort(x), np.sort(x))


def test_sort_is_stable_with_several_operands():
    keys = RNG.integers(0, 3, (2, 12)).astype(np.int32)
    values = RNG.standard_normal((2, 12)).astype(np.float32)

    def reference(k, v):
        order = np.argsort(k, axis=1, kind="stable")
        return np.take_along_axis(k, order, 1), np.take_along_axis(v, order, 1)

    check(lambda k, v: S.sort_key_val(k, v), [keys, values], reference, diff_argnums=None)
    check_derivatives(lambda k, v: S.sort_key_val(k, v)[1], [keys, values], diff_argnums=(1,))


def test_sort_two_keys_lexicographic():
    a = RNG.integers(0, 3, 20).astype(np.int32)
    b = np.round(RNG.standard_normal(20), 1).astype(np.float32)
    b[3] = np.nan
    c = np.arange(20, dtype=np.float32)

    def reference(a, b, c):
        order = np.lexsort((b, a))  # last key is primary; NaNs sort last, as in sort
        return a[order], b[order], c[order]

    check(lambda a, b, c: S.sort((a, b, c), num_keys=2), [a, b, c], reference,
          diff_argnums=None)


def test_sort_gradients_of_values_and_keys():
    # Distinct keys: the derivative of sorting is a fixed permutation.
    keys = RNG.permutation(12).reshape(3, 4).astype(np.float32)
    values = RNG.standard_normal((3, 4)).astype(np.float32)
    check_derivatives(lambda k, v: S.sort((k, v), dimension=0)[1], [keys, values],
                diff_argnums=(1,))
    check_derivatives(lambda k, v: S.sort((k, v), dimension=1)[0], [keys, values],
                diff_argnums=(0,))
    check_derivatives(lambda k: S.sort(lax.mul(k, k), dimension=1), [keys])
    weights = np.arange(4.0, dtype=np.float32)
    grad = lc.grad(lambda x: lax.reduce_sum(lax.mul(S.sort(x), weights), (0,)))(keys[0])
    np.testing.assert_array_equal(grad, np.argsort(np.argsort(keys[0])).astype(np.float32))


def test_sort_vmap_of_sort_key_val_along_batched_axes():
    # Batched keys with shared (unbatched) values, the batch axis before, at and
    # after the sorted one in the batched array.
    keys = RNG.standard_normal((4, 3, 5)).astype(np.float32)
    for in_axis in (0, 1, 2):
        k_shape = np.delete(keys.shape, in_axis)
        values = RNG.standard_normal(k_shape).astype(np.float32)
        out_k, out_v = lc.vmap(lambda k, v: S.sort_key_val(k, v, dimension=0),
                               in_axes=(in_axis, None))(keys, values)
        for i in range(keys.shape[in_axis]):
            k = np.take(keys, i, axis=in_axis)
            order = np.argsort(k, axis=0, kind="stable")
            np.testing.assert_array_equal(np.asarray(out_k)[i], np.take_along_axis(k, order, 0))
            np.testing.assert_array_equal(np.asarray(out_v)[i],
                                          np.take_along_axis(values, order, 0))


def _top_k_reference(k):
    def reference(x):
        order = np.argsort(-x, axis=-1, kind="stable")[..., :k]
        return np.take_along_axis(x, order, -1), order.astype(np.int32)
    return reference


@pytest.mark.parametrize("k", [1, 3])
def test_top_k(k):
    check(lambda x: S.top_k(x, k), [X], _top_k_reference(k), diff_argnums=None)
    check_derivatives(lambda x: S.top_k(x, k)[0], [X])


def test_top_k_ties_integers_and_nans():
    x = np.array([[1, 5, 3, 5, 2], [0, 0, 0, 1, 0]], np.int32)
    check_values(lambda x: S.top_k(x, 3), [x], _top_k_reference(3))
    values, indices = S.top_k(np.array([1., np.nan, 3.], np.float32), 2)
    np.testing.assert_array_equal(indices, [1, 2])  # NaN counts as the largest
    np.testing.assert_array_equal(values, [np.nan, 3.])


def test_top_k_gradient():
    x = RNG.permutation(12).reshape(3, 4).astype(np.float32)
    check_derivatives(lambda x: S.top_k(lax.mul(x, x), 2)[0], [x])
    grad = lc.grad(lambda x: lax.reduce_sum(S.top_k(x, 2)[0], (0,)))(x[0])
    expected = np.zeros(4, np.float32)
    expected[np.argsort(-x[0])[:2]] = 1
    np.testing.assert_array_equal(grad, expected)


def test_errors():
    with pytest.raises(ValueError, match="num_keys=2"):
        S.sort(X, num_keys=2)
    with pytest.raises(ValueError, match="num_keys=3 must be between 1"):
        S.sort((X, X), num_keys=3)
    with pytest.raises(TypeError, match="one shape"):
        S.sort((X, X[0]))
    with pytest.raises(ValueError, match="dimension 3 out of range"):
        S.sort(X, dimension=3)
    with pytest.raises(ValueError, match="k=6 must be between 0"):
        S.top_k(X, 6)
    with pytest.raises(TypeError, match="top_k does not accept dtype complex64"):
        S.top_k(X.astype(np.complex64), 1)
