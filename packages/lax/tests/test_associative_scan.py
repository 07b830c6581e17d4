"""associative_scan against NumPy's cumulative functions, with the shared checker."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
from lamella.lax.control_flow.associative_scan import associative_scan
from lamella.lax.test_util import check


@pytest.mark.parametrize("n", [1, 2, 5, 8, 13])
def test_cumsum_forwards_and_reversed(n):
    x = np.linspace(-1, 1, n, dtype=np.float32)
    check(lambda v: associative_scan(lax.add, v), [x], lambda v: np.cumsum(v))
    check(lambda v: associative_scan(lax.add, v, reverse=True), [x],
          lambda v: np.cumsum(v[::-1])[::-1], vmap=False)


def test_cumprod_along_an_inner_axis():
    x = np.random.default_rng(0).uniform(0.5, 1.5, (3, 6)).astype(np.float32)
    check(lambda v: associative_scan(lax.mul, v, axis=1), [x], lambda v: np.cumprod(v, 1),
          rtol=1e-5)
    check(lambda v: associative_scan(lax.max, v, axis=-1), [x],
          lambda v: np.maximum.accumulate(v, 1), diff_argnums=None)


def test_pytree_elements_and_a_non_commutative_combiner():
    # Composition of affine maps x -> a x + b is associative but not commutative.
    rng = np.random.default_rng(1)
    a, b = rng.uniform(0.5, 1.5, (2, 7)).astype(np.float32)

    def compose(f, g):
        return (lax.mul(g[0], f[0]), lax.add(lax.mul(g[0], f[1]), g[1]))
    out_a, out_b = associative_scan(compose, (a, b))
    ref_a, ref_b = [a[0]], [b[0]]
    for i in range(1, 7):
        ref_a.append(a[i] * ref_a[-1])
        ref_b.append(a[i] * ref_b[-1] + b[i])
    np.testing.assert_allclose(np.asarray(out_a), ref_a, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(out_b), ref_b, rtol=1e-5)


def test_equals_cumsum_and_is_log_depth():
    x = np.arange(1024, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(lc.jit(lambda v: associative_scan(lax.add, v))(x)),
                                  np.asarray(lax.cumsum(x, 0)))
    jaxpr = lc.make_jaxpr(lambda v: associative_scan(lax.add, v))(x)
    adds = sum(e.primitive is lax.add_p for e in jaxpr.eqns)
    assert adds <= 2 * 10 + 10  # two combines per level, one interleave add: O(log n)


def test_errors():
    with pytest.raises(ValueError, match="same length along axis 0"):
        associative_scan(lambda a, b: a, (np.ones(3), np.ones(4)))
    with pytest.raises(TypeError, match="must return the structure of its inputs"):
        associative_scan(lambda a, b: (a[0],), (np.ones(3), np.ones(3)))
