"""vmap checked against Python loops: stack the per-example results and compare.

Every batched result here is compared with the function applied eagerly to
each slice of its inputs, stacked along the requested output axis.
"""

from __future__ import annotations

import numpy as np
import numpy_prims as P
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella.core import Primitive, batching
from lamella.core.structural import reduce_sum, transpose

SETTINGS = settings(max_examples=30, deadline=None)


# ---------------------------------------------------------------------------
# The reference: a Python loop over the mapped axis.


def _map_leaves(fn, tree):
    if isinstance(tree, (tuple, list)):
        return type(tree)(_map_leaves(fn, t) for t in tree)
    if isinstance(tree, dict):
        return {k: _map_leaves(fn, v) for k, v in tree.items()}
    return fn(tree)


def _slice(arg, spec, i):
    """Example i of `arg`, whose mapped axes are the prefix tree `spec`."""
    if spec is None:
        return arg
    if isinstance(spec, int):
        return _map_leaves(lambda x: np.take(np.asarray(x), i, axis=spec), arg)
    if isinstance(spec, dict):
        return {k: _slice(arg[k], spec[k], i) for k in arg}
    return type(arg)(_slice(a, s, i) for a, s in zip(arg, spec))


def _stack(outs, spec):
    """Stacks per-example output pytrees along the axes of the prefix tree `spec`."""
    first = outs[0]
    if isinstance(first, (tuple, list)):
        specs = spec if isinstance(spec, (tuple, list)) else [spec] * len(first)
        return type(first)(_stack([o[j] for o in outs], s) for j, s in enumerate(specs))
    if isinstance(first, dict):
        specs = spec if isinstance(spec, dict) else dict.fromkeys(first, spec)
        return {k: _stack([o[k] for o in outs], specs[k]) for k in first}
    if spec is None:
        for o in outs[1:]:
            np.testing.assert_array_equal(np.asarray(o), np.asarray(first))
        return np.asarray(first)
    return np.stack([np.asarray(o) for o in outs], axis=spec)


def _size(args, in_axes):
    sizes = set()

    def visit(arg, spec):
        if spec is None:
            return
        if isinstance(spec, int):
            _map_leaves(lambda x: sizes.add(np.shape(x)[spec]), arg)
        elif isinstance(spec, dict):
            for k in arg:
                visit(arg[k], spec[k])
        else:
            for a, s in zip(arg, spec):
                visit(a, s)
    for a, s in zip(args, in_axes):
        visit(a, s)
    assert len(sizes) == 1, sizes
    return sizes.pop()


def loop_vmap(f, in_axes=0, out_axes=0, axis_size=None):
    """What vmap(f, in_axes, out_axes) computes, by a Python loop."""
    def looped(*args, **kwargs):
        axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
        kw_axes = dict.fromkeys(kwargs, 0)
        size = axis_size if axis_size is not None else _size(
            (*args, *kwargs.values()), (*axes, *kw_axes.values()))
        outs = [f(*(_slice(a, s, i) for a, s in zip(args, axes)),
                  **{k: _slice(v, 0, i) for k, v in kwargs.items()}) for i in range(size)]
        return _stack(outs, out_axes)
    return looped


def assert_trees_close(actual, expected, rtol=1e-5, atol=1e-6):
    if isinstance(expected, (tuple, list)):
        assert type(actual) is type(expected) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_trees_close(a, e, rtol, atol)
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and actual.keys() == expected.keys()
        for k in expected:
            assert_trees_close(actual[k], expected[k], rtol, atol)
    else:
        actual, expected = np.asarray(actual), np.asarray(expected)
        assert actual.shape == expected.shape, (actual.shape, expected.shape)
        assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def check_vmap(f, args, in_axes=0, out_axes=0, axis_size=None, kwargs=None):
    kwargs = kwargs or {}
    actual = lc.vmap(f, in_axes=in_axes, out_axes=out_axes, axis_size=axis_size)(*args, **kwargs)
    expected = loop_vmap(f, in_axes, out_axes, axis_size)(*args, **kwargs)
    assert_trees_close(actual, expected)
    return actual


def rand(rng, shape, positive=False):
    x = rng.standard_normal(shape).astype(np.float32)
    return np.abs(x) + np.float32(0.5) if positive else x


# ---------------------------------------------------------------------------
# Hypothesis strategies.

small_shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)
batch_sizes = st.integers(1, 4)


@st.composite
def mapped_array(draw, positive=False):
    """(array, in_axis, per-example shape, batch size) with a possibly negative axis."""
    shape = draw(small_shapes)
    size = draw(batch_sizes)
    rank = len(shape) + 1
    axis = draw(st.integers(-rank, rank - 1))
    full = list(shape)
    full.insert(axis % rank, size)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    return rand(rng, full, positive), axis, shape, size


def out_axis_for(rank):
    """An out_axes value valid for outputs of per-example rank `rank`."""
    return st.integers(-(rank + 1), rank)


UNARY = {
    "sin": (P.sin, False), "cos": (P.cos, False), "exp": (P.exp, False),
    "log": (P.log, True), "tanh": (P.tanh, False), "neg": (P.neg, False),
    "square": (P.square, False), "total": (P.total, False),
}


@SETTINGS
@given(name=st.sampled_from(sorted(UNARY)), data=st.data())
def test_unary_prims_random_axes(name, data):
    fn, positive = UNARY[name]
    x, axis, shape, _ = data.draw(mapped_array(positive))
    out_rank = 0 if name == "total" else len(shape)
    out_axes = data.draw(out_axis_for(out_rank))
    check_vmap(fn, (x,), in_axes=axis, out_axes=out_axes)


@st.composite
def broadcastable_pair(draw):
    """Per-example shapes of two operands that NumPy-broadcast together."""
    out = draw(st.lists(st.integers(1, 3), min_size=0, max_size=3))
    shapes = []
    for _ in range(2):
        rank = draw(st.integers(0, len(out)))
        suffix = out[len(out) - rank:]
        shapes.append(tuple(d if draw(st.booleans()) else 1 for d in suffix))
    return shapes


BINARY = {"add": P.add, "sub": P.sub, "mul": P.mul, "div": P.div, "greater": P.greater}


@SETTINGS
@given(name=st.sampled_from(sorted(BINARY)), shapes=broadcastable_pair(), size=batch_sizes,
       data=st.data())
def test_binary_prims_broadcasting_random_axes(name, shapes, size, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    mapped = data.draw(st.sampled_from([(True, True), (True, False), (False, True)]))
    args, axes = [], []
    for shape, is_mapped in zip(shapes, mapped):
        if not is_mapped:
            args.append(rand(rng, shape, positive=name == "div"))
            axes.append(None)
            continue
        rank = len(shape) + 1
        axis = data.draw(st.integers(-rank, rank - 1))
        full = list(shape)
        full.insert(axis % rank, size)
        args.append(rand(rng, full, positive=name == "div"))
        axes.append(axis)
    out_rank = len(np.broadcast_shapes(*shapes))
    out_axes = data.draw(out_axis_for(out_rank))
    check_vmap(BINARY[name], tuple(args), in_axes=tuple(axes), out_axes=out_axes)


@SETTINGS
@given(size=batch_sizes, n=st.integers(1, 3), data=st.data())
def test_select_batched_predicate_and_branches(size, n, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    axes = data.draw(st.sampled_from([(0, 0), (1, 0), (-1, None), (None, 1), (0, -2)]))
    x, y = (rand(rng, (n,)) if ax is None else np.moveaxis(rand(rng, (size, n)), 0, ax)
            for ax in axes)

    def f(a, b):
        return P.select(P.greater(a, b), P.sin(a), P.mul(b, 2.0))
    check_vmap(f, (x, y), in_axes=axes)


# ---------------------------------------------------------------------------
# in_axes: ints, None, negative, tuples, pytree prefixes; kwargs.


def test_in_axes_none_broadcasts_unmapped_argument():
    rng = np.random.default_rng(0)
    x, w = rand(rng, (5, 3)), rand(rng, (3,))
    out = check_vmap(lambda a, b: P.mul(a, b), (x, w), in_axes=(0, None))
    np.testing.assert_allclose(out, x * w, rtol=1e-6)


def test_in_axes_negative():
    rng = np.random.default_rng(1)
    x = rand(rng, (2, 3, 4))
    out = check_vmap(P.total, (x,), in_axes=-1)
    np.testing.assert_allclose(out, x.sum(axis=(0, 1)), rtol=1e-5)
    out = check_vmap(P.total, (x,), in_axes=-2)
    np.testing.assert_allclose(out, x.sum(axis=(0, 2)), rtol=1e-5)


def test_in_axes_dict_prefix():
    rng = np.random.default_rng(2)
    params = {"w": rand(rng, (2, 3)), "b": rand(rng, (4, 3))}
    x = rand(rng, (4, 3))

    def f(p, x):
        return P.add(P.mul(p["w"], x), p["b"])
    out = check_vmap(f, (params, x), in_axes=({"w": None, "b": 0}, 0))
    np.testing.assert_allclose(out, params["w"][None] * x[:, None] + params["b"][:, None],
                               rtol=1e-6)


def test_in_axes_nested_tuple_prefix():
    rng = np.random.default_rng(3)
    a, b, c = rand(rng, (3, 2)), rand(rng, (2, 3)), rand(rng, (2,))

    def f(pair, c):
        (a, b) = pair
        return P.sub(P.mul(a, b), c)
    check_vmap(f, ((a, b), c), in_axes=((0, 1), None))
    # A whole-argument int applies to every leaf of that argument.
    a2 = rand(rng, (3, 2))
    check_vmap(f, ((a, a2), c), in_axes=(0, None))


def test_in_axes_prefix_with_list_and_dict_leaves():
    rng = np.random.default_rng(4)
    tree = {"xs": [rand(rng, (3,)), rand(rng, (2, 3))], "y": rand(rng, (2, 3))}

    def f(t):
        return P.add(P.total(t["xs"][0]), P.total(P.mul(t["xs"][1], t["y"])))
    check_vmap(f, (tree,), in_axes=({"xs": [0, 1], "y": 1},))


def _shape_tree(depth):
    leaf = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)
    if depth == 0:
        return leaf
    child = _shape_tree(depth - 1)
    return st.one_of(
        leaf,
        st.lists(child, min_size=1, max_size=3).map(tuple),
        st.dictionaries(st.sampled_from("abc"), child, min_size=1, max_size=3))


def _min_rank(node):
    if isinstance(node, tuple) and all(isinstance(d, int) for d in node):
        return len(node)
    children = node.values() if isinstance(node, dict) else node
    return min(_min_rank(c) for c in children)


def _is_shape(node):
    return isinstance(node, tuple) and all(isinstance(d, int) for d in node)


def _draw_spec(draw, node):
    """A random in_axes prefix for the shape tree `node`."""
    kinds = ["none", "int"] if _is_shape(node) else ["none", "int", "recurse"]
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return None
    if kind == "int":
        r = _min_rank(node)
        return draw(st.integers(-(r + 1), r))
    if isinstance(node, dict):
        return {k: _draw_spec(draw, v) for k, v in node.items()}
    return tuple(_draw_spec(draw, c) for c in node)


def _build(node, spec, size, rng):
    if _is_shape(node):
        if spec is None:
            return rand(rng, node)
        full = list(node)
        full.insert(spec % (len(node) + 1), size)
        return rand(rng, full)
    specs = spec if isinstance(spec, (tuple, dict)) else (
        dict.fromkeys(node, spec) if isinstance(node, dict) else (spec,) * len(node))
    if isinstance(node, dict):
        return {k: _build(v, specs[k], size, rng) for k, v in node.items()}
    return tuple(_build(c, s, size, rng) for c, s in zip(node, specs))


def _has_mapped(spec):
    if spec is None:
        return False
    if isinstance(spec, int):
        return True
    return any(_has_mapped(s) for s in (spec.values() if isinstance(spec, dict) else spec))


@SETTINGS
@given(shapes=st.lists(_shape_tree(2), min_size=1, max_size=3), size=batch_sizes,
       data=st.data())
def test_random_pytree_in_axes_prefixes(shapes, size, data):
    specs = tuple(_draw_spec(data.draw, node) for node in shapes)
    if not _has_mapped(specs):
        specs = (0,) + specs[1:]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    args = tuple(_build(node, spec, size, rng) for node, spec in zip(shapes, specs))

    def f(*trees):
        leaves = lc.tree_util.tree_leaves(trees)
        acc = P.total(P.sin(leaves[0]))
        for leaf in leaves[1:]:
            acc = P.add(acc, P.total(P.tanh(leaf)))
        return acc, lc.tree_util.tree_map(P.cos, trees)
    check_vmap(f, args, in_axes=specs)


def test_kwargs_are_mapped_on_axis_zero():
    rng = np.random.default_rng(5)
    x, scale, bias = rand(rng, (3, 4)), rand(rng, ()), rand(rng, (4, 3))

    def f(x, scale, *, bias):
        return P.add(P.mul(x, scale), bias)
    out = check_vmap(f, (x, scale), in_axes=(1, None), kwargs={"bias": bias})
    np.testing.assert_allclose(out, x.T * scale + bias, rtol=1e-6)


def test_kwargs_mapped_even_when_in_axes_is_none_for_positionals():
    rng = np.random.default_rng(6)
    w = rand(rng, (3,))
    bias = rand(rng, (4, 3))

    def f(w, bias):
        return P.add(P.sin(w), bias)
    out = lc.vmap(f, in_axes=None)(w, bias=bias)
    expected = loop_vmap(f, in_axes=None)(w, bias=bias)
    assert_trees_close(out, expected)
    np.testing.assert_allclose(out, np.sin(w)[None] + bias, rtol=1e-6)


def test_kwargs_pytree_mapped_with_positional_axes():
    rng = np.random.default_rng(7)
    x = rand(rng, (3, 5))
    extra = {"a": rand(rng, (5,)), "b": rand(rng, (5, 2))}

    def f(x, *, extra):
        return P.add(P.total(P.mul(x, extra["a"])), P.total(extra["b"]))
    check_vmap(f, (x,), in_axes=(1,), kwargs={"extra": extra})


# ---------------------------------------------------------------------------
# out_axes.


def test_out_axes_int_and_negative():
    rng = np.random.default_rng(8)
    x = rand(rng, (4, 2, 3))
    for out_axes in (0, 1, 2, -1, -2, -3):
        out = check_vmap(P.sin, (x,), in_axes=0, out_axes=out_axes)
        np.testing.assert_allclose(out, np.moveaxis(np.sin(x), 0, out_axes), rtol=1e-6)


def test_out_axes_none_for_unbatched_output():
    rng = np.random.default_rng(9)
    x, w = rand(rng, (4, 3)), rand(rng, (3,))

    def f(x, w):
        return P.mul(x, w), P.exp(w)
    batched, shared = check_vmap(f, (x, w), in_axes=(0, None), out_axes=(0, None))
    assert batched.shape == (4, 3) and shared.shape == (3,)
    np.testing.assert_allclose(shared, np.exp(w), rtol=1e-6)


def test_out_axes_pytree_prefix():
    rng = np.random.default_rng(10)
    x, w = rand(rng, (3, 4, 2)), rand(rng, (2,))

    def f(x, w):
        return {"a": P.sin(x), "b": (P.mul(x, w), P.cos(w))}
    out = check_vmap(f, (x, w), in_axes=(1, None),
                     out_axes={"a": -1, "b": (0, None)})
    assert out["a"].shape == (3, 2, 4)
    assert out["b"][0].shape == (4, 3, 2)
    assert out["b"][1].shape == (2,)


def test_out_axes_int_broadcasts_unbatched_output():
    rng = np.random.default_rng(11)
    x, w = rand(rng, (4,)), rand(rng, (2, 3))

    def f(x, w):
        return P.sin(w)
    out = check_vmap(f, (x, w), in_axes=(0, None), out_axes=1)
    assert out.shape == (2, 4, 3)
    np.testing.assert_allclose(out, np.broadcast_to(np.sin(w)[:, None], (2, 4, 3)), rtol=1e-6)


def test_output_that_is_a_python_constant():
    out = lc.vmap(lambda x: 2.0)(np.ones(3, np.float32))
    np.testing.assert_array_equal(np.asarray(out), [2.0, 2.0, 2.0])


@SETTINGS
@given(data=st.data())
def test_random_in_and_out_axes_on_a_program(data):
    """A small program with a batched matrix argument and a shared vector."""
    size = data.draw(batch_sizes)
    m, n = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3))
    in_ax = data.draw(st.integers(-3, 2))
    out_ax = data.draw(st.integers(-1, 0))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    full = [m, n]
    full.insert(in_ax % 3, size)
    x = rand(rng, full)
    v = rand(rng, (n, 1))

    def prog(x, v):
        h = P.tanh(P.matmul(x, v))  # (m, 1)
        return P.add(P.total(P.square(h)), P.mul(h, P.sin(P.total(x))))
    out_ax2 = data.draw(st.integers(-3, 2))
    check_vmap(prog, (x, v), in_axes=(in_ax, None), out_axes=out_ax2)
    check_vmap(lambda x, v: P.total(prog(x, v)), (x, v), in_axes=(in_ax, None), out_axes=out_ax)


# ---------------------------------------------------------------------------
# axis_size.


def test_axis_size_with_all_in_axes_none():
    rng = np.random.default_rng(12)
    x = rand(rng, (2, 3))
    out = check_vmap(P.sin, (x,), in_axes=None, axis_size=5)
    assert out.shape == (5, 2, 3)
    np.testing.assert_allclose(out, np.broadcast_to(np.sin(x), (5, 2, 3)), rtol=1e-6)
    out = check_vmap(P.sin, (x,), in_axes=None, axis_size=5, out_axes=-1)
    assert out.shape == (2, 3, 5)


def test_axis_size_with_no_arguments():
    out = lc.vmap(lambda: np.float32(3.0), axis_size=4)()
    np.testing.assert_array_equal(np.asarray(out), np.full(4, 3.0, np.float32))


def test_axis_size_consistent_with_mapped_axes():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = lc.vmap(P.total, axis_size=3)(x)
    np.testing.assert_allclose(out, x.sum(1))


# ---------------------------------------------------------------------------
# Nested vmap.


def test_vmap_of_vmap_same_axes():
    rng = np.random.default_rng(13)
    x = rand(rng, (3, 4, 2))
    f = lambda v: P.total(P.exp(v))
    out = lc.vmap(lc.vmap(f))(x)
    expected = np.array([[f(x[i, j]) for j in range(4)] for i in range(3)])
    np.testing.assert_allclose(out, expected, rtol=1e-5)


@SETTINGS
@given(data=st.data())
def test_vmap_of_vmap_random_axes(data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    a, b, n = (data.draw(st.integers(1, 3)) for _ in range(3))
    outer_ax = data.draw(st.integers(0, 2))
    inner_ax = data.draw(st.integers(0, 1))
    inner_out = data.draw(st.integers(-2, 1))
    outer_out = data.draw(st.integers(-3, 2))
    # Inner batch (size b) at inner_ax of each outer example, outer batch (size a) at outer_ax.
    x = np.moveaxis(np.moveaxis(rand(rng, (a, b, n)), 1, 1 + inner_ax), 0, outer_ax)
    y = rand(rng, (n,))

    def f(v, w):
        return P.mul(P.sin(v), w)
    inner = lc.vmap(f, in_axes=(inner_ax, None), out_axes=inner_out)
    outer = lc.vmap(inner, in_axes=(outer_ax, None), out_axes=outer_out)
    actual = outer(x, y)
    ref_inner = loop_vmap(f, in_axes=(inner_ax, None), out_axes=inner_out)
    expected = loop_vmap(ref_inner, in_axes=(outer_ax, None), out_axes=outer_out)(x, y)
    assert_trees_close(actual, expected)


def test_nested_vmap_inner_closes_over_outer_tracer():
    rng = np.random.default_rng(14)
    xs, ys = rand(rng, (3, 2)), rand(rng, (4, 2))

    def outer(x):
        return lc.vmap(lambda y: P.total(P.mul(x, y)))(ys)
    out = lc.vmap(outer)(xs)
    np.testing.assert_allclose(out, xs @ ys.T, rtol=1e-5)


def test_nested_vmap_of_pairwise_distance_both_orders():
    rng = np.random.default_rng(15)
    xs, ys = rand(rng, (3, 2)), rand(rng, (4, 2))
    dist = lambda x, y: P.total(P.square(P.sub(x, y)))
    ref = ((xs[:, None] - ys[None]) ** 2).sum(-1)
    out = lc.vmap(lc.vmap(dist, in_axes=(None, 0)), in_axes=(0, None))(xs, ys)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    out = lc.vmap(lc.vmap(dist, in_axes=(0, None)), in_axes=(None, 0), out_axes=1)(xs, ys)
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_triple_vmap():
    rng = np.random.default_rng(16)
    x = rand(rng, (2, 3, 4, 5))
    out = lc.vmap(lc.vmap(lc.vmap(P.total, in_axes=1), in_axes=2), in_axes=0)(x)
    # out[i, j, k] = sum_l x[i, l, k, j]
    np.testing.assert_allclose(out, np.transpose(x.sum(axis=1), (0, 2, 1)), rtol=1e-5)


# ---------------------------------------------------------------------------
# The user-defined matmul batching rule in all three cases.


@SETTINGS
@given(m=st.integers(1, 3), k=st.integers(1, 3), n=st.integers(1, 3), size=batch_sizes,
       case=st.sampled_from(["x", "y", "both"]), data=st.data())
def test_matmul_batching_rule(m, k, n, size, case, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    x_ax = None if case == "y" else data.draw(st.integers(-3, 2))
    y_ax = None if case == "x" else data.draw(st.integers(-3, 2))
    out_ax = data.draw(st.integers(-3, 2))
    x, y = rand(rng, (m, k)), rand(rng, (k, n))
    if x_ax is not None:
        x = np.stack([rand(rng, (m, k)) for _ in range(size)], axis=x_ax)
    if y_ax is not None:
        y = np.stack([rand(rng, (k, n)) for _ in range(size)], axis=y_ax)
    out = check_vmap(P.matmul, (x, y), in_axes=(x_ax, y_ax), out_axes=out_ax)
    xs = np.moveaxis(x, x_ax, 0) if x_ax is not None else x[None]
    ys = np.moveaxis(y, y_ax, 0) if y_ax is not None else y[None]
    np.testing.assert_allclose(out, np.moveaxis(xs @ ys, 0, out_ax), rtol=1e-5, atol=1e-6)


def test_matmul_batching_rule_calls_one_matmul_when_one_side_is_shared():
    rng = np.random.default_rng(17)
    x, y = rand(rng, (5, 2, 3)), rand(rng, (3, 4))
    before = P.impl_calls.get("matmul", 0)
    lc.vmap(P.matmul, in_axes=(0, None))(x, y)
    assert P.impl_calls["matmul"] - before == 1
    before = P.impl_calls["matmul"]
    lc.vmap(P.matmul, in_axes=(None, 1))(rand(rng, (2, 3)), rand(rng, (3, 5, 4)))
    assert P.impl_calls["matmul"] - before == 1


def test_matmul_in_nested_vmap():
    rng = np.random.default_rng(18)
    x, y = rand(rng, (2, 3, 4, 5)), rand(rng, (3, 5, 2))
    out = lc.vmap(lc.vmap(P.matmul, in_axes=(0, 0)), in_axes=(0, None))(x, y)
    np.testing.assert_allclose(out, x @ y[None], rtol=1e-5, atol=1e-6)
    out = lc.vmap(lc.vmap(P.matmul, in_axes=(0, None)), in_axes=(1, 0))(x, y)
    expected = np.stack([x[:, i] @ y[i] for i in range(3)])
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------
# Pytree outputs, closures, jit.


def test_function_returning_pytree():
    rng = np.random.default_rng(19)
    x = rand(rng, (3, 2))

    def f(x):
        return {"s": P.sin(x), "pair": (P.total(x), [P.exp(x)])}
    out = check_vmap(f, (x,))
    assert out["pair"][0].shape == (3,)
    assert isinstance(out["pair"][1], list)


def test_closure_over_outer_array():
    rng = np.random.default_rng(20)
    w, x = rand(rng, (2, 3)), rand(rng, (4, 3, 1))
    f = lambda x: P.tanh(P.matmul(w, x))
    out = check_vmap(f, (x,))
    np.testing.assert_allclose(out, np.tanh(w @ x), rtol=1e-5)


def test_vmap_over_jit():
    rng = np.random.default_rng(21)
    x, y = rand(rng, (4, 2, 3)), rand(rng, (3, 2))

    @lc.jit
    def f(x, y):
        return P.total(P.tanh(P.matmul(x, y))), P.sin(x)
    out = check_vmap(f, (x, y), in_axes=(0, None), out_axes=(0, 2))
    assert out[1].shape == (2, 3, 4)
    out2 = check_vmap(f, (np.moveaxis(x, 0, 2), np.stack([y] * 4)), in_axes=(2, 0))
    assert_trees_close(out2, lc.vmap(f, in_axes=(2, 0))(np.moveaxis(x, 0, 2), np.stack([y] * 4)))


def test_vmap_over_jit_with_closure_over_vmap_tracer():
    rng = np.random.default_rng(22)
    xs, y = rand(rng, (4, 3)), rand(rng, (3,))

    def f(x):
        return lc.jit(lambda y: P.mul(x, P.sin(y)))(y)
    check_vmap(f, (xs,))


def test_jit_of_vmap_matches_vmap():
    rng = np.random.default_rng(23)
    x = rand(rng, (3, 2, 2))
    g = lc.vmap(lambda m: P.total(P.matmul(m, m)))
    np.testing.assert_array_equal(lc.jit(g)(x), g(x))


# ---------------------------------------------------------------------------
# Errors.


def test_error_inconsistent_sizes_lists_them():
    with pytest.raises(ValueError, match=r"inconsistent sizes") as info:
        lc.vmap(P.add)(np.ones((2, 3), np.float32), np.ones((3, 3), np.float32))
    msg = str(info.value)
    assert "size 2" in msg and "size 3" in msg
    assert "argument 0" in msg and "argument 1" in msg


def test_error_inconsistent_sizes_names_pytree_leaf():
    with pytest.raises(ValueError, match=r"inconsistent sizes") as info:
        lc.vmap(lambda t: P.add(t["a"], t["b"]))(
            {"a": np.ones(2, np.float32), "b": np.ones(4, np.float32)})
    assert "['a']" in str(info.value) and "['b']" in str(info.value)
    assert "size 4" in str(info.value)


def test_error_axis_size_disagrees():
    with pytest.raises(ValueError, match=r"axis_size=3.*size 2"):
        lc.vmap(P.sin, axis_size=3)(np.ones(2, np.float32))


def test_in_axes_list_is_a_tuple_and_dict_is_an_error():
    out = lc.vmap(P.add, in_axes=[0, None])(np.ones((2, 3), np.float32), np.ones(3, np.float32))
    np.testing.assert_array_equal(out, np.full((2, 3), 2.0, np.float32))
    with pytest.raises(TypeError, match=r"in_axes must be an int, None, or a tuple"):
        lc.vmap(P.add, in_axes={"a": 0})


def test_error_in_axes_tuple_wrong_length():
    f = lc.vmap(P.add, in_axes=(0,))
    with pytest.raises(ValueError, match=r"len\(in_axes\)=1 for 2 positional arguments"):
        f(np.ones(2, np.float32), np.ones(2, np.float32))


def test_error_in_axes_out_of_range():
    with pytest.raises(ValueError, match=r"along axis 2.*rank should be at least 3.*f32\[2,3\]"):
        lc.vmap(P.sin, in_axes=2)(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"along axis -3.*rank should be at least 3"):
        lc.vmap(P.sin, in_axes=-3)(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"along axis 0"):
        lc.vmap(P.sin)(np.float32(1.0))


def test_error_no_mapped_axis_and_no_axis_size():
    with pytest.raises(ValueError, match=r"at least one non-None value in in_axes"):
        lc.vmap(P.sin, in_axes=None)(np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"at least one non-None value in in_axes"):
        lc.vmap(lambda: 1.0)()


def test_error_out_axes_none_for_batched_output():
    with pytest.raises(ValueError, match=r"out_axes is None"):
        lc.vmap(P.sin, out_axes=None)(np.ones(2, np.float32))
    with pytest.raises(ValueError, match=r"out_axes is None"):
        lc.vmap(lambda x: (x, P.sin(x)), out_axes=(0, None))(np.ones(2, np.float32))


def test_error_out_axes_out_of_range():
    with pytest.raises(ValueError, match=r"out_axes=3 is out of range"):
        lc.vmap(P.sin, out_axes=3)(np.ones((2, 3), np.float32))


def test_error_non_prefix_in_axes():
    x = {"a": np.ones(2, np.float32)}
    with pytest.raises(ValueError, match=r"tree prefix"):
        lc.vmap(lambda t: t["a"], in_axes=({"b": 0},))(x)
    with pytest.raises(ValueError, match=r"tree prefix"):
        lc.vmap(lambda t: t[0], in_axes=((0, 0, 0),))((np.ones(2), np.ones(2)))


def test_error_non_prefix_out_axes():
    with pytest.raises(ValueError, match=r"out_axes specification must be a tree prefix"):
        lc.vmap(lambda x: (x, x), out_axes=(0, 0, 0))(np.ones(2, np.float32))


def test_error_non_int_in_axes_entry():
    with pytest.raises(TypeError, match=r"must be ints or None.*'a'"):
        lc.vmap(P.sin, in_axes="a")(np.ones(2, np.float32))


nobatch_p = Primitive("nobatch_for_test")
nobatch_p.def_impl(lambda x: np.asarray(x) * 2)
nobatch_p.def_abstract_eval(lambda x: x)


def test_error_primitive_without_batching_rule():
    assert nobatch_p not in batching.primitive_batchers
    np.testing.assert_array_equal(nobatch_p.bind(np.ones(2, np.float32)), [2, 2])
    with pytest.raises(NotImplementedError, match=r"Batching rule for primitive "
                                                  r"'nobatch_for_test' not implemented"):
        lc.vmap(nobatch_p.bind)(np.ones((3, 2), np.float32))
    # Unbatched inputs don't need the rule.
    out = lc.vmap(lambda x: P.add(x, nobatch_p.bind(np.ones(2, np.float32))))(
        np.zeros((3, 2), np.float32))
    np.testing.assert_array_equal(out, np.full((3, 2), 2.0, np.float32))


def test_structural_prims_under_vmap():
    rng = np.random.default_rng(24)
    x = rand(rng, (3, 2, 4))
    check_vmap(lambda v: transpose(v, (1, 0)), (x,), in_axes=1)
    check_vmap(lambda v: reduce_sum(v, (1,)), (x,), in_axes=2, out_axes=1)


def test_error_primitive_without_batching_rule_inside_jit():
    f = lc.jit(lambda x: P.sin(nobatch_p.bind(x)))
    with pytest.raises(NotImplementedError, match=r"'nobatch_for_test'"):
        lc.vmap(f)(np.ones((3, 2), np.float32))


def test_negative_out_axes_per_leaf_rank():
    rng = np.random.default_rng(25)
    x = rand(rng, (4, 2, 3))
    out = check_vmap(lambda m: (P.total(m), P.sin(m)), (x,), out_axes=-1)
    assert out[0].shape == (4,) and out[1].shape == (2, 3, 4)


def test_vmap_of_vjp_and_of_linearize_at_batched_points():
    rng = np.random.default_rng(26)
    xs, cts = rand(rng, (4, 3)), rand(rng, (4, 3))
    pull = lambda x, ct: lc.vjp(P.tanh, x)[1](ct)[0]
    out = check_vmap(pull, (xs, cts))
    np.testing.assert_allclose(out, (1 - np.tanh(xs) ** 2) * cts, rtol=1e-5)
    push = lambda x, t: lc.linearize(P.sin, x)[1](t)
    out = check_vmap(push, (xs, cts), in_axes=(0, 0), out_axes=1)
    np.testing.assert_allclose(out, (np.cos(xs) * cts).T, rtol=1e-5)


def test_vmap_over_scale_closed_into_grad():
    rng = np.random.default_rng(27)
    x, scales = rand(rng, (3,)), rand(rng, (5,))
    g = lambda s: lc.grad(lambda a: P.total(P.mul(s, P.sin(a))))(x)
    out = check_vmap(g, (scales,))
    np.testing.assert_allclose(out, scales[:, None] * np.cos(x)[None], rtol=1e-5)


def test_custom_node_unflatten_sees_only_real_children():
    # A class that validates its children: vmap must not rebuild it with placeholders
    # to match in_axes/out_axes (JAX never does).
    seen = []

    class Box:
        def __init__(self, x):
            seen.append(type(x))
            if not hasattr(x, "shape"):
                raise TypeError(f"Box holds arrays, got {x!r}")
            self.x = x

    lc.tree_util.register_pytree_node(Box, lambda b: ((b.x,), None), lambda _, c: Box(c[0]))
    b = Box(np.arange(3, dtype=np.float32))
    out = lc.vmap(lambda b, y: Box(P.mul(b.x, y)), in_axes=(0, None), out_axes=0)(b, np.float32(2))
    np.testing.assert_allclose(out.x, [0, 2, 4])
    assert object not in seen
