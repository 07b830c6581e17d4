"""Collectives over groups of an axis's members (`axis_index_groups`) under pmap and
shard_map (8 CPU devices): values against NumPy, gradients against numerical ones, and
JAX's errors for groups that are not a partition of the axis."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as jnp
from lamella.core.sharding import AxisType, P, make_mesh
from lamella.core.test_util import numerical_grad

MESH2 = make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
X = np.arange(8 * 4, dtype=np.float32).reshape(8, 4) / 5
EVEN_ODD = [[0, 2, 4, 6], [1, 3, 5, 7]]
PAIRS = [[1, 0], [2, 3], [5, 4], [6, 7]]  # a member's place in its group is its order here
UNEVEN = [[0, 1, 2], [3, 4, 5, 6, 7]]


def _group_rows(groups, n=8):
    """For each member: the members of its group, in the group's order."""
    of = {}
    for g in groups:
        for i in g:
            of[i] = list(g)
    return [of[i] for i in range(n)]


def _place(groups, i):
    return next(g.index(i) for g in groups if i in g)


def _ref(name, x, groups):
    """What member i gets, from NumPy, for each collective (x: one row per member)."""
    rows = _group_rows(groups, len(x))
    out = []
    for i, members in enumerate(rows):
        block = x[members]
        k, n = _place(groups, i), len(members)
        if name == "psum":
            out.append(block.sum(0))
        elif name == "pmean":
            out.append(block.mean(0))
        elif name == "pmax":
            out.append(block.max(0))
        elif name == "pmin":
            out.append(block.min(0))
        elif name == "all_gather":
            out.append(block)
        elif name == "all_gather_tiled":
            out.append(block.reshape(-1))
        elif name == "psum_scatter":  # rows of x are the member's length-n value
            out.append(block.sum(0)[k])
        elif name == "psum_scatter_tiled":
            out.append(block.sum(0).reshape(n, -1)[k])
        elif name == "all_to_all":
            out.append(block[:, k])
        elif name == "all_to_all_tiled":
            out.append(block.reshape(n, n, -1)[:, k].reshape(-1))
    return np.stack(out)


def _bodies(groups):
    g = dict(axis_index_groups=groups)
    return {
        "psum": lambda v: lax.psum(v, "i", **g),
        "pmean": lambda v: lax.pmean(v, "i", **g),
        "pmax": lambda v: lax.pmax(v, "i", **g),
        "pmin": lambda v: lax.pmin(v, "i", **g),
        "all_gather": lambda v: lax.all_gather(v, "i", **g),
        "all_gather_tiled": lambda v: lax.all_gather(v, "i", tiled=True, **g),
        "psum_scatter": lambda v: lax.psum_scatter(v, "i", **g),
        "psum_scatter_tiled": lambda v: lax.psum_scatter(v, "i", tiled=True, **g),
        "all_to_all": lambda v: lax.all_to_all(v, "i", 0, 0, **g),
        "all_to_all_tiled": lambda v: lax.all_to_all(v, "i", 0, 0, tiled=True, **g),
    }


CASES = [(name, groups) for groups in (EVEN_ODD, PAIRS) for name in _bodies(groups)]


@pytest.mark.parametrize("name,groups", CASES,
                         ids=[f"{n}-{len(g[0])}" for n, g in CASES])
def test_pmap_collective_with_groups_matches_numpy(name, groups):
    x = X[:, :len(groups[0])] if name in ("psum_scatter", "all_to_all") else X
    got = lc.pmap(_bodies(groups)[name], "i")(x)
    np.testing.assert_allclose(np.asarray(got), _ref(name, x.astype(np.float64), groups),
                               rtol=1e-6)


@pytest.mark.parametrize("name", ["psum", "pmin", "pmean"])
def test_groups_of_several_sizes_reduce(name):
    # JAX accepts uneven groups for reductions; lamella's pmean divides each member by
    # its own group's size (JAX divides by the first group's).
    got = lc.pmap(_bodies(UNEVEN)[name], "i")(X)
    np.testing.assert_allclose(np.asarray(got), _ref(name, X.astype(np.float64), UNEVEN),
                               rtol=1e-6)


def test_shard_map_groups_within_each_row_of_the_mesh():
    # Over "x" of a (4, 2) mesh: groups of x positions, separately for each y.
    def body(b):
        return jnp.concatenate([lax.psum(b, "x", axis_index_groups=[[0, 3], [1, 2]]),
                                lax.all_gather(b, "x", axis_index_groups=[[2, 0], [1, 3]],
                                               tiled=True)], axis=0)
    f = lc.jit(lc.shard_map(body, mesh=MESH2, in_specs=P(("x", "y")),
                            out_specs=P(("x", "y"))))
    x = np.arange(8 * 3, dtype=np.float32).reshape(8, 3)
    got = np.asarray(f(x)).reshape(4, 2, 3, 3)
    blocks = x.reshape(4, 2, 3)  # device (x, y) holds row 2x + y
    for i in range(4):
        for j in range(2):
            partner = {0: 3, 3: 0, 1: 2, 2: 1}[i]
            np.testing.assert_allclose(got[i, j, 0], blocks[i, j] + blocks[partner, j])
            first, second = ([2, 0] if i in (0, 2) else [1, 3])
            np.testing.assert_allclose(got[i, j, 1:], blocks[[first, second], j])


def test_groups_over_two_axes_number_members_row_major():
    # Over ("x", "y") member k is device (k // 2, k % 2); groups of those numbers.
    f = lc.jit(lc.shard_map(lambda b: lax.psum(b, ("x", "y"), axis_index_groups=EVEN_ODD),
                            mesh=MESH2, in_specs=P(("x", "y")), out_specs=P(("x", "y"))))
    np.testing.assert_allclose(np.asarray(f(X)), _ref("psum", X.astype(np.float64), EVEN_ODD),
                               rtol=1e-6)


def test_groups_where_other_axes_stay_auto():
    def body(b):
        return (lax.psum(b, "x", axis_index_groups=[[0, 3], [1, 2]])
                + lax.all_gather(b, "x", axis_index_groups=[[2, 0], [1, 3]])[1])

    def run(**axis_names):
        return np.asarray(lc.jit(lc.shard_map(body, mesh=MESH2, in_specs=P("x"),
                                              out_specs=P("x"), **axis_names))(X))
    partial = run(axis_names={"x"})
    blocks = X.reshape(4, 2, 4)
    partner, second = {0: 3, 3: 0, 1: 2, 2: 1}, {0: 0, 2: 0, 1: 3, 3: 3}
    want = np.stack([blocks[i] + blocks[partner[i]] + blocks[second[i]] for i in range(4)])
    np.testing.assert_allclose(partial, want.reshape(8, 4), rtol=1e-6)
    np.testing.assert_allclose(partial, run(), rtol=1e-6)


GRAD_CASES = {
    "psum": lambda v: jnp.sum(jnp.sin(lax.psum(v * v, "i", axis_index_groups=EVEN_ODD))),
    "pmax": lambda v: jnp.sum(lax.pmax(v * v, "i", axis_index_groups=PAIRS)),
    "all_gather": lambda v: jnp.sum(
        jnp.sin(lax.all_gather(v, "i", axis_index_groups=EVEN_ODD)) * jnp.arange(4.0)[:, None]),
    "psum_scatter": lambda v: jnp.sum(
        jnp.sin(lax.psum_scatter(v, "i", axis_index_groups=EVEN_ODD)) ** 2),
    "all_to_all": lambda v: jnp.sum(
        jnp.sin(lax.all_to_all(v, "i", 0, 0, axis_index_groups=EVEN_ODD)) * jnp.arange(4.0)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_grad_through_grouped_collective_matches_numerical(name):
    # The total over members of a per-member loss, whose gradient flows back through the
    # collective's transpose (psum's with the same groups) to every member's input.
    per_member = GRAD_CASES[name]
    total = lc.jit(lambda x: jnp.sum(lc.pmap(per_member, "i")(x)))
    x = np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4) + 0.05
    got = np.asarray(lc.jit(lc.grad(total))(x))
    want = numerical_grad(lambda z: np.float64(total(z.astype(np.float32))),
                          x.astype(np.float64), eps=1e-3)
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-3)


def test_grad_of_psum_with_groups_inside_pmap_counts_the_group():
    # Differentiated inside pmap, psum's transpose is a psum over the same groups: each
    # member's gradient is the group size times its own (as JAX: 8·v for groups of 4).
    g = lc.pmap(lc.grad(lambda v: jnp.sum(lax.psum(v ** 2, "i", axis_index_groups=EVEN_ODD))),
                "i")(X)
    np.testing.assert_allclose(np.asarray(g), 8 * X, rtol=1e-6)


@pytest.mark.parametrize("groups", [[[0, 0, 1, 2], [3, 4, 5, 6]], [[0, 1, 2], [3, 4, 5]],
                                    [[0, 1, 2, 3], [4, 5, 6, 8]]],
                         ids=["twice", "missing", "out-of-range"])
def test_groups_must_cover_every_member_once(groups):
    with pytest.raises(ValueError, match="axis_index_groups must cover all indices exactly once"):
        lc.pmap(lambda v: lax.psum(v, "i", axis_index_groups=groups), "i")(X)


@pytest.mark.parametrize("call", [
    lambda v: lax.all_gather(v, "i", axis_index_groups=UNEVEN),
    lambda v: lax.psum_scatter(v, "i", axis_index_groups=UNEVEN, tiled=True),
    lambda v: lax.all_to_all(v, "i", 0, 0, axis_index_groups=UNEVEN, tiled=True),
], ids=["all_gather", "psum_scatter", "all_to_all"])
def test_exchanging_collectives_need_groups_of_one_size(call):
    with pytest.raises(ValueError, match="axis_index_groups must all be the same size"):
        lc.pmap(call, "i")(X)


def test_groups_over_a_vmapped_axis_are_refused_as_in_jax():
    with pytest.raises(NotImplementedError, match="axis_index_groups"):
        lc.vmap(lambda v: lax.psum(v, "i", axis_index_groups=EVEN_ODD), axis_name="i")(X)
