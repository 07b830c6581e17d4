"""lamella.flatten_util (ravel_pytree) and lamella.ops (segment reductions) against
JAX's behaviour and NumPy references: dtypes, dropped and clamped segment ids,
buckets, errors, and jit, grad and vmap."""

import numpy as np
import pytest
from checks import check

import lamella.core as lc
import lamella.numpy as lnp
from lamella import ops
from lamella.flatten_util import ravel_pytree


# --- ravel_pytree --------------------------------------------------------------------
def test_ravel_pytree_round_trips_with_dtypes_and_shapes():
    tree = {"a": np.ones((2, 2), np.float32), "b": (np.arange(3, dtype=np.int32), 2.0),
            "c": None}
    flat, unravel = ravel_pytree(tree)
    np.testing.assert_array_equal(np.asarray(flat), [1, 1, 1, 1, 0, 1, 2, 2])
    assert flat.dtype == np.float32
    back = unravel(flat * 1.5)
    assert back["c"] is None and back["b"][0].dtype == np.int32
    np.testing.assert_array_equal(np.asarray(back["b"][0]), [0, 1, 3])  # 2 * 1.5, truncated
    np.testing.assert_array_equal(np.asarray(back["a"]), np.full((2, 2), 1.5))
    assert ravel_pytree([np.int8(1), np.uint8(2)])[0].dtype == np.int16  # dtypes promote
    empty, unravel_empty = ravel_pytree([])
    assert empty.shape == (0,) and empty.dtype == np.float32 and unravel_empty(empty) == []
    with pytest.raises(ValueError, match=r"shape \(8,\)"):
        unravel(lnp.ones(3))
    with pytest.raises(TypeError, match="expected dtype float32"):
        unravel(lnp.ones(8, lnp.int32))


def test_ravel_pytree_of_one_dtype_as_jax():
    # JAX 0.10.2: one dtype among the leaves, so unravel takes any dtype and keeps it;
    # Python scalars of one kind stay weakly typed.
    _, unravel = ravel_pytree([np.ones(2, np.float32)])
    assert unravel(np.ones(2, np.float16))[0].dtype == np.float16
    flat, unravel = ravel_pytree([1.0, 2.0])
    assert flat.weak_type and all(leaf.weak_type for leaf in unravel(flat))
    flat, unravel = ravel_pytree([1, 2.0])
    assert [(v.dtype, v.weak_type) for v in unravel(flat)] == [(np.int32, False),
                                                                (np.float32, False)]


def test_ravel_pytree_under_transformations():
    tree = {"w": np.float32([[1, 2], [3, 4]]), "b": np.float32([0.5])}
    grads = lc.grad(lambda t: (ravel_pytree(t)[0] ** 2).sum())(tree)
    np.testing.assert_allclose(np.asarray(grads["w"]), 2 * tree["w"])
    flat, unravel = ravel_pytree(tree)
    batched = lc.vmap(unravel)(lnp.stack([flat, 2 * flat]))
    np.testing.assert_allclose(np.asarray(batched["w"][1]), 2 * tree["w"])
    assert lc.jit(lambda f: unravel(f)["b"])(flat).shape == (1,)
    assert unravel == ravel_pytree(tree)[1] and hash(unravel) == hash(ravel_pytree(tree)[1])


# --- segment reductions -----------------------------------------------------------------
def _reference(name, data, ids, n, clip=False):
    identity = {"segment_sum": 0.0, "segment_prod": 1.0, "segment_max": -np.inf,
                "segment_min": np.inf}[name]
    combine = {"segment_sum": np.add, "segment_prod": np.multiply, "segment_max": np.maximum,
               "segment_min": np.minimum}[name]
    out = np.full((n, *data.shape[1:]), identity)
    for row, s in zip(data, ids):
        s = min(max(s, 0), n - 1) if clip else s
        if 0 <= s < n:
            out[s] = combine(out[s], row)
    return out


SEGMENT_NAMES = ["segment_sum", "segment_prod", "segment_max", "segment_min"]


@pytest.mark.parametrize("name", SEGMENT_NAMES)
def test_segments_match_a_loop(name):
    rng = np.random.default_rng(0)
    data = rng.uniform(-2, 2, (9, 2)).astype(np.float32)
    ids = np.int32([0, 3, 3, -1, 2, 7, 0, 2, 2])  # -1 and 7 are out of range for 4
    fn = getattr(ops, name)
    np.testing.assert_allclose(np.asarray(fn(data, ids, 4)), _reference(name, data, ids, 4),
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(fn(data, ids, 4, mode="clip")),
                               _reference(name, data, ids, 4, clip=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(fn(data, ids, 4, bucket_size=4)),
                               _reference(name, data, ids, 4), rtol=1e-5, atol=1e-6)
    sorted_ids = np.sort(np.clip(ids, 0, 3))
    np.testing.assert_allclose(np.asarray(fn(data, sorted_ids, indices_are_sorted=True)),
                               _reference(name, data, sorted_ids, 4), rtol=1e-5, atol=1e-6)


def test_segment_dtypes_identities_and_errors():
    ids = np.int32([0, 0, 2])
    assert ops.segment_max(np.int32([1, 5, 2]), ids, 4).tolist() == [5, -2 ** 31, 2, -2 ** 31]
    assert ops.segment_min(np.int8([1, 5, 2]), ids, 3).tolist() == [1, 127, 2]
    assert ops.segment_max(np.array([True, False, True]), ids, 3).tolist() == [True, False, True]
    assert ops.segment_sum(np.ones(3, np.float32), ids, 0).shape == (0,)
    with pytest.raises(TypeError, match="segment_ids must be integers"):
        ops.segment_sum(np.ones(3), np.float32([0, 1, 1]), 2)
    with pytest.raises(ValueError, match="leading axes of data"):
        ops.segment_sum(np.ones(4), ids, 3)
    with pytest.raises(TypeError, match="not defined for booleans"):
        ops.segment_sum(np.array([True, False, True]), ids, 3)
    with pytest.raises(lc.ConcretizationTypeError, match="num_segments"):
        lc.jit(lambda d, i: ops.segment_sum(d, i))(np.ones(3), ids)


def test_segments_under_transformations():
    data = np.float32([1.0, 3.0, 3.0, 2.0, 5.0])
    ids = np.int32([0, 0, 1, 1, 1])
    check(lambda d: ops.segment_sum(d, ids, 2), [data], None, jit_rtol=1e-6)
    check(lambda d: ops.segment_min(d, ids, 2), [data], None, jit_rtol=1e-6)
    # Ties share the slope of a maximum, as in JAX.
    np.testing.assert_allclose(np.asarray(lc.grad(lambda d: ops.segment_max(
        d, ids, 2).sum())(np.float32([1, 3, 3, 2, 3]))), [0, 1, 0.5, 0, 0.5])
