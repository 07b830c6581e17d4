"""Collectives over a vmapped named axis: values against NumPy written per member,
derivatives numerically (through the vmap), nesting with outer axes, jit inside and
outside, errors.

Each collective is checked as `vmap(f, axis_name="i")` over a stacked input whose
first axis holds the members; `check` then also differentiates, jits and vmaps that
whole function once more (an outer, unnamed vmap).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
import lamella.lax as lax
from lamella.lax import parallel as P
from lamella.lax.test_util import check

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 3)).astype(np.float32)       # 4 members, a value of shape (3,)
Y = RNG.standard_normal((4, 4, 2)).astype(np.float32)    # 4 members, a value of shape (4, 2)


def members(f):
    """`f` applied by each member of the named axis 'i' (the first axis of its inputs)."""
    return lc.vmap(f, axis_name="i")


def per_member(f_of_all_and_index, xs):
    """The NumPy reference: member i's result computed from everyone's values."""
    return np.stack([f_of_all_and_index(xs, i) for i in range(len(xs))])


CASES = [
    ("psum", lambda v: P.psum(v, "i"), lambda xs, i: xs.sum(0)),
    ("pmean", lambda v: P.pmean(v, "i"), lambda xs, i: xs.mean(0)),
    ("pmax", lambda v: P.pmax(v, "i"), lambda xs, i: xs.max(0)),
    ("pmin", lambda v: P.pmin(v, "i"), lambda xs, i: xs.min(0)),
    ("all_gather", lambda v: P.all_gather(v, "i"), lambda xs, i: xs),
    ("all_gather_axis1", lambda v: P.all_gather(v, "i", axis=1), lambda xs, i: xs.T),
    ("all_gather_tiled", lambda v: P.all_gather(v, "i", tiled=True),
     lambda xs, i: xs.reshape(-1)),
    ("ppermute_cycle", lambda v: P.ppermute(v, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]),
     lambda xs, i: xs[(i - 1) % 4]),
    ("ppermute_partial", lambda v: P.ppermute(v, "i", [(0, 2), (3, 1)]),
     lambda xs, i: {2: xs[0], 1: xs[3]}.get(i, np.zeros_like(xs[0]))),
    ("pshuffle", lambda v: P.pshuffle(v, "i", [3, 0, 2, 1]), lambda xs, i: xs[[3, 0, 2, 1][i]]),
    ("psum_with_index", lambda v: P.psum(
        lax.mul(v, lax.convert_element_type(P.axis_index("i"), v.dtype)), "i"),
     lambda xs, i: (xs * np.arange(4)[:, None]).sum(0)),
]


@pytest.mark.parametrize("name, f, ref", CASES, ids=[c[0] for c in CASES])
def test_collectives_over_a_vmapped_axis(name, f, ref):
    # pmax/pmin are differentiable away from ties (X has none).
    check(members(f), [X], lambda xs: per_member(ref, xs.astype(np.float64)),
          grad_rtol=2e-3, grad_atol=2e-3, eps=1e-3, jit_rtol=1e-6)


SPLIT_CASES = [
    ("psum_scatter", lambda v: P.psum_scatter(v, "i"), lambda ys, i: ys.sum(0)[i]),
    ("psum_scatter_tiled", lambda v: P.psum_scatter(v, "i", tiled=True),
     lambda ys, i: ys.sum(0)[i:i + 1]),
    ("all_to_all", lambda v: P.all_to_all(v, "i", 0, 0), lambda ys, i: ys[:, i]),
    ("all_to_all_concat1", lambda v: P.all_to_all(v, "i", 0, 1), lambda ys, i: ys[:, i].T),
    ("pswapaxes", lambda v: P.pswapaxes(v, "i", 0), lambda ys, i: ys[:, i]),
]


@pytest.mark.parametrize("name, f, ref", SPLIT_CASES, ids=[c[0] for c in SPLIT_CASES])
def test_collectives_that_split_a_value(name, f, ref):
    check(members(f), [Y], lambda ys: per_member(ref, ys.astype(np.float64)),
          grad_rtol=2e-3, grad_atol=2e-3, eps=1e-3)


def test_all_to_all_tiled_matches_a_chunk_exchange():
    ys = np.arange(4 * 8 * 2, dtype=np.float32).reshape(4, 8, 2)
    got = members(lambda v: P.all_to_all(v, "i", 0, 1, tiled=True))(ys)
    # member i receives chunk i (rows 2i, 2i+1) of every member j, concatenated along axis 1
    want = np.stack([np.concatenate([ys[j, 2 * i:2 * i + 2] for j in range(4)], axis=1)
                     for i in range(4)])
    np.testing.assert_array_equal(np.asarray(got), want)


def test_unbatched_operands_follow_the_axis_size():
    x = np.zeros(4, np.float32)
    np.testing.assert_array_equal(np.asarray(members(lambda v: P.psum(2.0, "i"))(x)), [8.0] * 4)
    counted = members(lambda v: P.psum(True, "i"))(x)
    assert counted.dtype == np.int32 and list(np.asarray(counted)) == [4] * 4
    mean = members(lambda v: P.pmean(np.int32(3), "i"))(x)
    assert mean.dtype == np.float32
    assert list(np.asarray(members(lambda v: lax.full_like(v, P.axis_size("i")))(x))) == [4.0] * 4
    np.testing.assert_array_equal(np.asarray(members(lambda v: P.axis_index("i"))(x)),
                                  np.arange(4))


def test_gradient_of_a_psum_inside_the_vmap_is_the_axis_size():
    # JAX: psum's transpose is a psum, so each member's gradient counts every member.
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(members(lc.grad(lambda v: P.psum(v, "i")))(x)),
                                  [3.0] * 3)
    outer = lc.grad(lambda x: lax.reduce_sum(members(lambda v: P.psum(v, "i"))(x), (0,)))(x)
    np.testing.assert_array_equal(np.asarray(outer), [3.0] * 3)


def test_pmax_derivative_is_shared_by_ties():
    x = np.float32([1.0, 5.0, 2.0, 5.0])
    g = lc.grad(lambda x: lax.reduce_sum(members(lambda v: P.pmax(v, "i"))(x), (0,)))(x)
    # four members each get pmax = 5; its tangent is split between the two maxima
    np.testing.assert_allclose(np.asarray(g), [0.0, 2.0, 0.0, 2.0])


def test_nested_axes_and_tuples_of_names():
    xs = np.arange(6, dtype=np.float32).reshape(2, 3)
    inner_i = lc.vmap(lambda v: lc.vmap(lambda w: P.psum(w, "i"), axis_name="j")(v),
                      axis_name="i")(xs)
    np.testing.assert_array_equal(np.asarray(inner_i), np.broadcast_to(xs.sum(0), (2, 3)))
    both = lc.vmap(lambda v: lc.vmap(lambda w: P.psum(w, ("i", "j")), axis_name="j")(v),
                   axis_name="i")(xs)
    np.testing.assert_array_equal(np.asarray(both), np.full((2, 3), xs.sum()))
    index = lc.vmap(lambda v: lc.vmap(lambda w: P.axis_index(("i", "j")), axis_name="j")(v),
                    axis_name="i")(xs)
    np.testing.assert_array_equal(np.asarray(index), np.arange(6).reshape(2, 3))
    gathered = lc.vmap(lambda v: lc.vmap(lambda w: P.all_gather(w, "i"), axis_name="j")(v),
                       axis_name="i")(xs)
    # member (i, j) holds column j of every i
    np.testing.assert_array_equal(np.asarray(gathered),
                                  np.broadcast_to(xs.T, (2, 3, 2)))


def _nested(f, x):
    return np.asarray(lc.vmap(lc.vmap(f, axis_name="j"), axis_name="i")(x))


@pytest.mark.parametrize("names", [("i", "j"), ("j", "i")])
def test_gather_scatter_and_permute_over_several_vmapped_names(names):
    # Members are numbered row-major over `names` (JAX 0.10.2 fails an assertion here).
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    order = x if names == ("i", "j") else x.transpose(1, 0, 2)
    everyone = order.reshape(6, 4)
    number = np.arange(6).reshape(order.shape[:2])
    number = number if names == ("i", "j") else number.T  # member (i, j)'s position
    gathered = _nested(lambda v: P.all_gather(v, names), x)
    np.testing.assert_array_equal(gathered, np.broadcast_to(everyone, (2, 3, 6, 4)))
    tiled = _nested(lambda v: P.all_gather(v, names, tiled=True), x)
    np.testing.assert_array_equal(tiled, np.broadcast_to(everyone.reshape(-1), (2, 3, 24)))
    y = np.arange(2 * 3 * 6 * 2, dtype=np.float32).reshape(2, 3, 6, 2)
    scattered = _nested(lambda v: P.psum_scatter(v, names), y)
    np.testing.assert_array_equal(scattered, y.sum((0, 1))[number])
    chunks = _nested(lambda v: P.psum_scatter(v, names, tiled=True), y[..., 0])
    np.testing.assert_array_equal(chunks, y.sum((0, 1))[:, 0][number][..., None])
    shifted = _nested(lambda v: P.ppermute(v, names, [(k, k + 1) for k in range(5)]), x)
    want = np.concatenate([np.zeros((1, 4), np.float32), everyone[:-1]])[number]
    np.testing.assert_array_equal(shifted, want)
    swapped = _nested(lambda v: P.ppermute(lax.gt(v, np.float32(5)), names, [(0, 5), (5, 0)]),
                      x)
    assert swapped.dtype == np.bool_
    np.testing.assert_array_equal(swapped[..., 0], number == 0)  # only member 0 hears (True)
    # the gather's transpose (a scatter over the same names) gives each member its weight
    weights = np.arange(6, dtype=np.float32)[:, None]
    grad = lc.grad(lambda v: lax.reduce_sum(lc.vmap(lc.vmap(
        lambda w: lax.mul(P.all_gather(w, names), weights), axis_name="j"), axis_name="i")(v),
        (0, 1, 2, 3)))(x)
    np.testing.assert_array_equal(np.asarray(grad), np.broadcast_to(
        (6 * number)[..., None], x.shape).astype(np.float32))


def test_jit_inside_and_outside_the_vmap():
    x = np.arange(4, dtype=np.float32)
    inside = members(lc.jit(lambda v: P.psum(v, "i")))(x)
    outside = lc.jit(members(lambda v: P.psum(v, "i")))(x)
    np.testing.assert_array_equal(np.asarray(inside), [6.0] * 4)
    np.testing.assert_array_equal(np.asarray(outside), [6.0] * 4)


def test_collectives_stage_as_jax_prints_them():
    text = str(lc.make_jaxpr(lambda v: P.psum(v, "i"), axis_env=[("i", 3)])(1.0))
    assert "psum[axes=('i',) axis_index_groups=None] a" in text
    text = str(lc.make_jaxpr(lambda v: P.psum_scatter(v, "i"), axis_env=[("i", 3)])(
        np.ones((3, 2), np.float32)))
    assert "reduce_scatter[" in text and "f32[2]" in text


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 5), shift=st.integers(-6, 6))
def test_ppermute_shifts_match_numpy_roll(n, shift):
    xs = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
    perm = [(i, (i + shift) % n) for i in range(n)]
    got = members(lambda v: P.ppermute(v, "i", perm))(xs)
    np.testing.assert_array_equal(np.asarray(got), np.roll(xs, shift, axis=0))


def test_errors_name_the_mistake():
    with pytest.raises(NameError, match="unbound axis name: i"):
        P.psum(1.0, "i")
    with pytest.raises(NameError, match="unbound axis name: j"):
        members(lambda v: P.psum(v, "j"))(X)
    with pytest.raises(ValueError, match="must equal the axis size 4"):
        members(lambda v: P.psum_scatter(v, "i"))(X)
    with pytest.raises(ValueError, match="not a permutation"):
        members(lambda v: P.ppermute(v, "i", [(0, 1), (1, 1)]))(X)
    with pytest.raises(ValueError, match="outside the axis of size 4"):
        members(lambda v: P.ppermute(v, "i", [(0, 9)]))(X)
    with pytest.raises(TypeError, match="axis names, got the integer 0"):
        members(lambda v: P.psum(v, 0))(X)
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        members(lambda v: P.psum(v, "i", axis_index_groups=[[0, 1], [2, 3]]))(X)
