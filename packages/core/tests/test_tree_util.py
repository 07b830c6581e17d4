"""Tests for lamella.core.tree_util and lamella.core.tree."""

import collections
import dataclasses
import doctest
import functools
import os

import optree
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lamella.core import tree, tree_util
from lamella.core.tree_util import (
    DictKey,
    FlattenedIndexKey,
    GetAttrKey,
    Partial,
    PyTreeDef,
    SequenceKey,
    all_leaves,
    keystr,
    register_dataclass,
    register_pytree_node,
    register_pytree_node_class,
    register_pytree_with_keys,
    register_pytree_with_keys_class,
    register_static,
    tree_all,
    tree_flatten,
    tree_flatten_with_path,
    tree_leaves,
    tree_leaves_with_path,
    tree_map,
    tree_map_with_path,
    tree_reduce,
    tree_structure,
    tree_transpose,
    tree_unflatten,
    treedef_children,
    treedef_is_leaf,
)

Point = collections.namedtuple("Point", ["x", "y"])


class Pair:
    """A custom node used by several tests; registered below without keys."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __eq__(self, other):
        return type(other) is Pair and (self.a, self.b) == (other.a, other.b)

    __hash__ = None


register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))


def paths(tree, **kwargs):
    return [keystr(path) for path, _ in tree_leaves_with_path(tree, **kwargs)]


# ----------------------------------------------------------------------------
# Built-in nodes


def test_flatten_builtins():
    leaves, treedef = tree_flatten((1, [2, {"b": 3, "a": 4}], Point(5, 6)))
    assert leaves == [1, 2, 4, 3, 5, 6]
    assert isinstance(treedef, PyTreeDef)
    assert treedef.num_leaves == 6


def test_none_is_a_node_without_children():
    leaves, treedef = tree_flatten([None, 1, (None,)])
    assert leaves == [1]
    assert tree_unflatten(treedef, [2]) == [None, 2, (None,)]
    assert tree_leaves(None) == []
    assert tree_structure(None).num_nodes == 1


def test_is_leaf_stops_recursion_and_can_make_none_a_leaf():
    tree_ = [(1, 2), (3, (4,))]
    assert tree_leaves(tree_, is_leaf=lambda x: isinstance(x, tuple)) == [(1, 2), (3, (4,))]
    assert tree_leaves([None, 1], is_leaf=lambda x: x is None) == [None, 1]
    treedef = tree_structure(tree_, is_leaf=lambda x: isinstance(x, tuple))
    assert treedef == tree_structure([0, 0])


def test_dict_keys_flatten_sorted():
    leaves, treedef = tree_flatten({"b": 1, "a": 2, "c": 3})
    assert leaves == [2, 1, 3]
    assert tree_structure({"a": 0, "b": 0, "c": 0}) == treedef


def test_ordered_dict_keeps_insertion_order():
    od = collections.OrderedDict([("b", 1), ("a", 2)])
    leaves, treedef = tree_flatten(od)
    assert leaves == [1, 2]
    out = tree_unflatten(treedef, [10, 20])
    assert type(out) is collections.OrderedDict
    assert list(out.items()) == [("b", 10), ("a", 20)]
    assert treedef != tree_structure(collections.OrderedDict([("a", 1), ("b", 2)]))


def test_defaultdict_keeps_factory():
    dd = collections.defaultdict(list, {"b": 1, "a": 2})
    leaves, treedef = tree_flatten(dd)
    assert leaves == [2, 1]
    out = tree_unflatten(treedef, [3, 4])
    assert type(out) is collections.defaultdict
    assert out.default_factory is list
    assert dict(out) == {"a": 3, "b": 4}


def test_namedtuple_round_trip():
    leaves, treedef = tree_flatten(Point(1, (2, 3)))
    assert leaves == [1, 2, 3]
    assert tree_unflatten(treedef, [4, 5, 6]) == Point(4, (5, 6))
    assert treedef != tree_structure((1, (2, 3)))


# ----------------------------------------------------------------------------
# Treedefs


def test_treedef_equality_and_hashing():
    a = tree_structure({"x": [1, 2], "y": None})
    b = tree_structure({"x": ["p", "q"], "y": None})
    c = tree_structure({"x": (1, 2), "y": None})
    assert a == b and hash(a) == hash(b)
    assert a != c
    cache = {a: "hit"}
    assert cache[b] == "hit"
    assert c not in cache


def test_treedef_with_custom_nodes_is_hashable():
    a = tree_structure([Pair(1, 2), Partial(max, 1)])
    b = tree_structure([Pair(3, 4), Partial(max, 2)])
    assert a == b and hash(a) == hash(b)
    assert a != tree_structure([Pair(1, 2), Partial(min, 1)])


def test_treedef_methods():
    treedef = tree_structure((1, [2, 3], None))
    assert treedef.num_leaves == 3
    assert treedef.num_nodes == 6
    assert treedef.unflatten("abc") == ("a", ["b", "c"], None)
    assert treedef.flatten_up_to(((1, 2), [3, 4], None)) == [(1, 2), 3, 4]


def test_treedef_is_leaf():
    assert treedef_is_leaf(tree_structure(1))
    assert treedef_is_leaf(tree_structure(None))  # as JAX: a childless node counts
    assert not treedef_is_leaf(tree_structure((1,)))
    assert not treedef_is_leaf(tree_structure([1, 2]))


def test_treedef_children():
    children = treedef_children(tree_structure((1, [2, 3], {"a": 4})))
    assert children == [tree_structure(0), tree_structure([0, 0]), tree_structure({"a": 0})]
    assert treedef_children(tree_structure(1)) == []


def test_all_leaves():
    assert all_leaves([1, "a", 2.0])
    assert not all_leaves([1, (2,)])
    assert not all_leaves([None])
    assert all_leaves([(1, 2)], is_leaf=lambda x: isinstance(x, tuple))


# ----------------------------------------------------------------------------
# tree_unflatten


def test_unflatten_accepts_iterators():
    treedef = tree_structure([0, (0, 0)])
    assert tree_unflatten(treedef, iter([1, 2, 3])) == [1, (2, 3)]


@pytest.mark.parametrize("leaves", [[1], [1, 2, 3]])
def test_unflatten_wrong_leaf_count_says_expected_and_given(leaves):
    treedef = tree_structure((0, 0))
    with pytest.raises(ValueError, match=rf"expects 2 leaves, but {len(leaves)} were given"):
        tree_unflatten(treedef, leaves)


def test_unflatten_passes_user_errors_through():
    class Checked:
        def __init__(self, v):
            self.v = v

    def unflatten(_, children):
        raise ValueError("bad child")

    register_pytree_node(Checked, lambda c: ((c.v,), None), unflatten)
    treedef = tree_structure(Checked(1))
    with pytest.raises(ValueError, match="^bad child$"):
        tree_unflatten(treedef, [1])


# ----------------------------------------------------------------------------
# tree_map, tree_reduce, tree_all


def test_tree_map_single_and_multiple_trees():
    assert tree_map(lambda x: x * 2, {"a": 1, "b": (2, None)}) == {"a": 2, "b": (4, None)}
    assert tree_map(lambda x, y, z: x + y + z, [1, 2], [10, 20], [100, 200]) == [111, 222]


def test_tree_map_rest_may_be_deeper():
    assert tree_map(lambda x, y: (x, y), (1, 2), ([3, 4], {"k": 5})) == (
        (1, [3, 4]),
        (2, {"k": 5}),
    )


def test_tree_map_is_leaf():
    out = tree_map(len, [(1, 2), (3,)], is_leaf=lambda x: isinstance(x, tuple))
    assert out == [2, 1]


def test_tree_map_structure_mismatch_names_both_structures():
    with pytest.raises(ValueError) as info:
        tree_map(lambda x, y: x, (1, 2), (1, 2, 3))
    message = str(info.value)
    assert "tree_map" in message
    assert "PyTreeSpec((*, *))" in message
    assert "PyTreeSpec((*, *, *))" in message


def test_tree_map_mismatch_reports_which_tree():
    with pytest.raises(ValueError, match=r"tree 2 does not match") as info:
        tree_map(lambda *xs: 0, {"a": 1}, {"a": 2}, {"b": 3})
    assert "{'a': *}" in str(info.value) and "{'b': *}" in str(info.value)


def test_tree_map_none_mismatch():
    with pytest.raises(ValueError, match=r"PyTreeSpec\(\(\*, None\)\)"):
        tree_map(lambda x, y: x, (1, None), (1, 2))


def test_tree_map_passes_user_value_errors_through():
    def f(x):
        raise ValueError("from f")

    with pytest.raises(ValueError, match="^from f$"):
        tree_map(f, [1])
    with pytest.raises(ValueError, match="^from f$"):
        tree_map(lambda x, y: f(x), [1], [2])


def test_tree_reduce():
    assert tree_reduce(lambda a, b: a + b, [1, (2, {"x": 3})]) == 6
    assert tree_reduce(lambda a, b: a + b, [1, 2], 10) == 13
    assert tree_reduce(lambda a, b: a + b, [], initializer=0) == 0
    assert tree_reduce(max, [(1, 5), (2,)], is_leaf=lambda x: isinstance(x, tuple)) == (2,)
    with pytest.raises(TypeError):
        tree_reduce(max, [None])


def test_tree_all():
    assert tree_all([True, (1, "x")])
    assert not tree_all({"a": True, "b": 0})
    assert tree_all([None, ()])
    assert tree_all(([], [1]), is_leaf=lambda x: isinstance(x, list)) is False


# ----------------------------------------------------------------------------
# tree_transpose


def test_tree_transpose():
    outer = tree_structure([0, 0, 0])
    inner = tree_structure({"a": 0, "b": 0})
    tree_ = [{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6}]
    assert tree_transpose(outer, inner, tree_) == {"a": [1, 3, 5], "b": [2, 4, 6]}


def test_tree_transpose_infers_inner():
    outer = tree_structure((0, 0))
    assert tree_transpose(outer, None, ([1, 2], [3, 4])) == [(1, 3), (2, 4)]


def test_tree_transpose_empty_outer():
    inner = tree_structure((0, 0))
    assert tree_transpose(tree_structure([]), inner, []) == ([], [])
    with pytest.raises(ValueError, match="cannot be inferred"):
        tree_transpose(tree_structure([]), None, [])


def test_tree_transpose_mismatch():
    outer = tree_structure([0, 0])
    inner = tree_structure((0, 0))
    with pytest.raises(TypeError, match=r"PyTreeSpec\(\[\(\*, \*\), \[\*, \*\]\]\)"):
        tree_transpose(outer, inner, [(1, 2), [3, 4]])


# ----------------------------------------------------------------------------
# Key paths


def test_key_strings_and_reprs():
    assert str(SequenceKey(0)) == "[0]"
    assert str(DictKey("a")) == "['a']"
    assert str(DictKey(1)) == "[1]"
    assert str(GetAttrKey("w")) == ".w"
    assert str(FlattenedIndexKey(2)) == "[<flat index 2>]"
    assert repr(SequenceKey(0)) == "SequenceKey(idx=0)"
    assert repr(DictKey("a")) == "DictKey(key='a')"
    assert repr(GetAttrKey("w")) == "GetAttrKey(name='w')"
    assert repr(FlattenedIndexKey(2)) == "FlattenedIndexKey(key=2)"


def test_keys_are_hashable_values():
    assert SequenceKey(1) == SequenceKey(1) and hash(SequenceKey(1)) == hash(SequenceKey(1))
    assert SequenceKey(1) != FlattenedIndexKey(1)
    assert len({DictKey("a"), DictKey("a"), GetAttrKey("a")}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        SequenceKey(0).idx = 1


def test_keystr():
    path = (DictKey("a"), SequenceKey(0), GetAttrKey("w"), FlattenedIndexKey(1))
    assert keystr(path) == "['a'][0].w[<flat index 1>]"
    assert keystr(path, simple=True) == "a0w1"
    assert keystr(path, simple=True, separator="/") == "a/0/w/1"
    assert keystr(path, separator=" ") == "['a'] [0] .w [<flat index 1>]"
    assert keystr(()) == ""
    assert keystr(("custom", 3), simple=True, separator=".") == "custom.3"


def test_paths_of_builtins():
    tree_ = {
        "t": (1, [2]),
        "n": Point(3, 4),
        "o": collections.OrderedDict([("z", 5)]),
        "d": collections.defaultdict(int, {0: 6}),
        "none": None,
    }
    pairs = tree_leaves_with_path(tree_)
    assert pairs == [
        ((DictKey("d"), DictKey(0)), 6),
        ((DictKey("n"), GetAttrKey("x")), 3),
        ((DictKey("n"), GetAttrKey("y")), 4),
        ((DictKey("o"), DictKey("z")), 5),
        ((DictKey("t"), SequenceKey(0)), 1),
        ((DictKey("t"), SequenceKey(1), SequenceKey(0)), 2),
    ]
    assert all(type(path) is tuple for path, _ in pairs)


def test_path_of_root_leaf_is_empty():
    assert tree_leaves_with_path(7) == [((), 7)]
    assert tree_leaves_with_path(None) == []


def test_paths_of_custom_node_without_keys():
    assert paths({"p": Pair(1, 2)}) == ["['p'][<flat index 0>]", "['p'][<flat index 1>]"]


def test_tree_flatten_with_path():
    tree_ = {"p": Pair(1, [2]), "q": 3}
    pairs, treedef = tree_flatten_with_path(tree_)
    assert [leaf for _, leaf in pairs] == [1, 2, 3]
    assert pairs[1][0] == (DictKey("p"), FlattenedIndexKey(1), SequenceKey(0))
    # The treedef is the ordinary one: equal to tree_structure's, usable to unflatten.
    assert treedef == tree_structure(tree_)
    assert tree_unflatten(treedef, [4, 5, 6]) == {"p": Pair(4, [5]), "q": 6}


def test_with_path_is_leaf():
    pairs, treedef = tree_flatten_with_path([(1, 2), 3], is_leaf=lambda x: isinstance(x, tuple))
    assert pairs == [((SequenceKey(0),), (1, 2)), ((SequenceKey(1),), 3)]
    assert treedef == tree_structure([0, 0])
    assert paths([(1, 2)], is_leaf=lambda x: isinstance(x, tuple)) == ["[0]"]


def test_tree_map_with_path():
    out = tree_map_with_path(lambda p, x, y: (keystr(p), x + y), {"a": [1, 2]}, {"a": [10, 20]})
    assert out == {"a": [("['a'][0]", 11), ("['a'][1]", 22)]}
    out = tree_map_with_path(lambda p, x: keystr(p), Pair(1, None))
    assert out == Pair("[<flat index 0>]", None)


def test_tree_map_with_path_rest_may_be_deeper():
    out = tree_map_with_path(lambda p, x, y: y, [1, 2], [(3, 4), {"k": 5}])
    assert out == [(3, 4), {"k": 5}]


def test_tree_map_with_path_mismatch_names_both_structures():
    with pytest.raises(ValueError, match="tree_map_with_path") as info:
        tree_map_with_path(lambda p, x, y: x, [1, Pair(2, 3)], [1, (2, 3)])
    message = str(info.value)
    assert "PyTreeSpec([*, (*, *)])" in message
    assert "CustomTreeNode(Pair[None], [*, *])" in message


# ----------------------------------------------------------------------------
# Registration


def test_registration_is_private_to_lamella():
    class Private:
        def __init__(self, v):
            self.v = v

    register_pytree_node(Private, lambda p: ((p.v,), None), lambda _, c: Private(*c))
    x = Private(1)
    assert tree_leaves(x) == [1]
    assert optree.tree_leaves(x) == [x]
    assert optree.tree_leaves(x, namespace="someone-else") == [x]


def test_register_pytree_node_duplicate_raises():
    with pytest.raises(ValueError, match="already registered"):
        register_pytree_node(Pair, lambda p: ((), None), lambda _, c: Pair(1, 2))


def test_register_pytree_node_round_trip():
    leaves, treedef = tree_flatten([Pair(1, (2, 3)), 4])
    assert leaves == [1, 2, 3, 4]
    assert tree_unflatten(treedef, [5, 6, 7, 8]) == [Pair(5, (6, 7)), 8]


def test_register_pytree_node_aux_data_in_treedef():
    class Scaled:
        def __init__(self, v, scale):
            self.v, self.scale = v, scale

    register_pytree_node(Scaled, lambda s: ((s.v,), s.scale), lambda scale, c: Scaled(c[0], scale))
    assert tree_structure(Scaled(1, 2)) == tree_structure(Scaled(9, 2))
    assert tree_structure(Scaled(1, 2)) != tree_structure(Scaled(1, 3))
    out = tree_map(lambda x: x + 1, Scaled(1, 2))
    assert (out.v, out.scale) == (2, 2)


def test_register_pytree_node_with_keys_func_uses_fast_flatten_without_paths():
    calls = collections.Counter()

    class Both:
        def __init__(self, a, b):
            self.a, self.b = a, b

    def flatten(x):
        calls["fast"] += 1
        return (x.a, x.b), None

    def flatten_with_keys(x):
        calls["keyed"] += 1
        return ((GetAttrKey("a"), x.a), (GetAttrKey("b"), x.b)), None

    register_pytree_node(Both, flatten, lambda _, c: Both(*c), flatten_with_keys)
    assert tree_leaves(Both(1, 2)) == [1, 2]
    assert calls == {"fast": 1}
    assert paths(Both(1, 2)) == [".a", ".b"]
    assert calls["keyed"] == 1


def test_register_pytree_with_keys():
    class Node:
        def __init__(self, left, right):
            self.left, self.right = left, right

    register_pytree_with_keys(
        Node,
        lambda n: ((("L", n.left), ("R", n.right)), None),
        lambda _, c: Node(*c),
    )
    x = Node(1, Node(2, 3))
    assert tree_leaves(x) == [1, 2, 3]
    # Arbitrary hashable keys from the user pass through unchanged.
    assert [path for path, _ in tree_leaves_with_path(x)] == [("L",), ("R", "L"), ("R", "R")]
    assert keystr(("R", "L"), simple=True, separator="/") == "R/L"
    out = tree_map(lambda v: v * 10, x)
    assert (out.left, out.right.left, out.right.right) == (10, 20, 30)


def test_register_pytree_with_keys_and_fast_flatten():
    calls = collections.Counter()

    class Node:
        def __init__(self, v):
            self.v = v

    def flatten(n):
        calls["fast"] += 1
        return (n.v,), None

    register_pytree_with_keys(
        Node, lambda n: (((GetAttrKey("v"), n.v),), None), lambda _, c: Node(*c), flatten
    )
    assert tree_leaves(Node(1)) == [1]
    assert calls["fast"] == 1
    assert paths(Node(1)) == [".v"]
    assert calls["fast"] == 1


def test_register_pytree_with_keys_empty_children():
    class Empty:
        pass

    register_pytree_with_keys(Empty, lambda e: ((), None), lambda _, c: Empty())
    assert tree_leaves_with_path([Empty(), 1]) == [((SequenceKey(1),), 1)]


def test_register_pytree_node_class():
    @register_pytree_node_class
    class Box:
        def __init__(self, value, label):
            self.value, self.label = value, label

        def tree_flatten(self):
            return (self.value,), self.label

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            return cls(children[0], aux_data)

    assert Box.__name__ == "Box"
    out = tree_map(lambda v: v + 1, [Box(1, "a")])
    assert (out[0].value, out[0].label) == (2, "a")
    assert paths(Box(1, "a")) == ["[<flat index 0>]"]


def test_register_pytree_with_keys_class():
    @register_pytree_with_keys_class
    class Named:
        def __init__(self, w, b):
            self.w, self.b = w, b

        def tree_flatten_with_keys(self):
            return ((GetAttrKey("w"), self.w), (GetAttrKey("b"), self.b)), None

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            return cls(*children)

    assert paths(Named(1, (2,))) == [".w", ".b[0]"]
    assert tree_leaves(Named(1, (2,))) == [1, 2]


def test_register_dataclass_decorator_infers_fields():
    @register_dataclass
    @dataclasses.dataclass
    class Layer:
        w: object
        b: object
        name: str = dataclasses.field(default="dense", metadata=dict(static=True))

    layer = Layer(1, 2, "out")
    leaves, treedef = tree_flatten(layer)
    assert leaves == [1, 2]
    assert tree_unflatten(treedef, [3, 4]) == Layer(3, 4, "out")
    assert treedef != tree_structure(Layer(1, 2, "in"))
    assert paths(layer) == [".w", ".b"]


def test_register_dataclass_explicit_fields():
    @dataclasses.dataclass
    class Opt:
        lr: float
        momentum: float
        steps: int

    assert register_dataclass(Opt, ["lr", "momentum"], ["steps"]) is Opt
    leaves, treedef = tree_flatten(Opt(0.1, 0.9, 3))
    assert leaves == [0.1, 0.9]
    assert tree_unflatten(treedef, [1, 2]) == Opt(1, 2, 3)


def test_register_dataclass_one_and_zero_fields():
    @dataclasses.dataclass
    class One:
        x: int

    @dataclasses.dataclass
    class Static:
        tag: str = dataclasses.field(metadata=dict(static=True))

    register_dataclass(One)
    register_dataclass(Static)
    assert tree_flatten_with_path(One(5))[0] == [((GetAttrKey("x"),), 5)]
    assert tree_leaves([One(1), Static("t")]) == [1]
    assert tree_map(lambda v: v, Static("t")) == Static("t")


def test_register_dataclass_non_dataclass_with_fields():
    class Plain:
        def __init__(self, x, mode):
            self.x, self.mode = x, mode

    register_dataclass(Plain, data_fields=["x"], meta_fields=["mode"])
    out = tree_map(lambda v: v * 2, Plain(3, "m"))
    assert (out.x, out.mode) == (6, "m")


def test_register_dataclass_drop_and_init_false_fields():
    @dataclasses.dataclass
    class Cached:
        x: int
        cache: object = None
        derived: int = dataclasses.field(init=False)

        def __post_init__(self):
            self.derived = self.x * 2

    register_dataclass(Cached, drop_fields=["cache"])
    leaves, treedef = tree_flatten(Cached(1, cache="big"))
    assert leaves == [1]
    out = tree_unflatten(treedef, [5])
    assert (out.x, out.cache, out.derived) == (5, None, 10)


def test_register_dataclass_errors():
    @dataclasses.dataclass
    class D:
        a: int
        b: int

    with pytest.raises(TypeError, match="both data_fields and meta_fields, or neither"):
        register_dataclass(D, data_fields=["a", "b"])
    with pytest.raises(ValueError, match=r"Missing: \['b'\]"):
        register_dataclass(D, ["a"], [])
    with pytest.raises(ValueError, match=r"Unexpected: \['c'\]"):
        register_dataclass(D, ["a", "b", "c"], [])

    class NotDataclass:
        pass

    with pytest.raises(TypeError, match="not a dataclass"):
        register_dataclass(NotDataclass)


def test_register_static():
    @register_static
    @dataclasses.dataclass(frozen=True)
    class Config:
        depth: int

    leaves, treedef = tree_flatten({"cfg": Config(2), "x": 1})
    assert leaves == [1]
    assert tree_unflatten(treedef, [5]) == {"cfg": Config(2), "x": 5}
    assert treedef == tree_structure({"cfg": Config(2), "x": 0})
    assert treedef != tree_structure({"cfg": Config(3), "x": 0})
    assert tree_leaves_with_path({"cfg": Config(2)}) == []


# ----------------------------------------------------------------------------
# Partial


def test_partial_is_a_pytree():
    p = Partial(lambda x, y, *, z: x + y + z, 1, z=100)
    assert isinstance(p, functools.partial)
    assert tree_leaves(p) == [1, 100]
    assert p(2) == 103
    doubled = tree_map(lambda v: v * 2, p)
    assert isinstance(doubled, Partial)
    assert doubled(2) == 204


def test_partial_function_is_static():
    assert tree_structure(Partial(max, 1)) == tree_structure(Partial(max, 2))
    assert hash(tree_structure(Partial(max, 1))) == hash(tree_structure(Partial(max, 2)))
    assert tree_structure(Partial(max, 1)) != tree_structure(Partial(min, 1))
    assert tree_structure(Partial(max, 1)) != tree_structure(Partial(max, 1, 2))


def test_partial_paths():
    assert paths(Partial(max, 1, key=None, default=2)) == [
        "[<flat index 0>][0]",
        "[<flat index 1>]['default']",
    ]


def test_partial_of_partial_keeps_inner_arguments_static():
    inner = functools.partial(lambda a, b, c: (a, b, c), "static")
    p = Partial(inner, 1)
    assert tree_leaves(p) == [1]
    assert p(2) == ("static", 1, 2)
    nested = Partial(Partial(lambda a, b: a - b, 10), 3)
    assert tree_leaves(nested) == [3]
    assert nested() == 7
    assert tree_map(lambda v: v + 1, nested)() == 6


def test_partial_round_trip():
    p = Partial(divmod, 7)
    leaves, treedef = tree_flatten(p)
    q = tree_unflatten(treedef, [9])
    assert q(2) == (4, 1)
    assert q.func is divmod


# ----------------------------------------------------------------------------
# Property tests


leaves_st = st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=3))
keys_st = st.text(max_size=3)


def containers(children):
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(keys_st, children, max_size=4),
        st.dictionaries(keys_st, children, max_size=4).map(collections.OrderedDict),
        st.builds(Point, children, children),
        st.builds(Pair, children, children),
        st.just(None),
    )


trees_st = st.recursive(leaves_st, containers, max_leaves=20)


def follow(tree_, path):
    """Index into a tree by a key path (containers used in trees_st only)."""
    for key in path:
        if isinstance(key, SequenceKey):
            tree_ = tree_[key.idx]
        elif isinstance(key, DictKey):
            tree_ = tree_[key.key]
        elif isinstance(key, GetAttrKey):
            tree_ = getattr(tree_, key.name)
        else:
            tree_ = (tree_.a, tree_.b)[key.key]
    return tree_


@given(trees_st)
def test_flatten_unflatten_round_trip(tree_):
    leaves, treedef = tree_flatten(tree_)
    assert treedef.num_leaves == len(leaves)
    assert tree_unflatten(treedef, leaves) == tree_
    assert tree_structure(tree_unflatten(treedef, leaves)) == treedef
    assert tree_leaves(tree_) == leaves


@given(trees_st)
def test_structure_ignores_leaf_values(tree_):
    replaced = tree_map(lambda _: object(), tree_)
    assert tree_structure(replaced) == tree_structure(tree_)
    assert hash(tree_structure(replaced)) == hash(tree_structure(tree_))


@given(trees_st)
def test_paths_index_their_leaves(tree_):
    pairs, treedef = tree_flatten_with_path(tree_)
    assert [leaf for _, leaf in pairs] == tree_leaves(tree_)
    assert treedef == tree_structure(tree_)
    for path, leaf in pairs:
        assert follow(tree_, path) is leaf
    assert tree_map_with_path(lambda p, x: p, tree_) == tree_unflatten(
        treedef, [path for path, _ in pairs]
    )


# ----------------------------------------------------------------------------
# Differences from JAX that come from optree


def test_deque_and_structseq_are_nodes():
    assert tree_leaves(collections.deque([1, 2])) == [1, 2]
    stat = os.stat(".")
    pairs = tree_leaves_with_path(stat)
    assert pairs[0] == ((GetAttrKey("st_mode"),), stat.st_mode)


# ----------------------------------------------------------------------------
# lamella.core.tree and docstring examples


def test_tree_module_names():
    assert tree.map is tree_map
    assert tree.leaves([1, (2,)]) == [1, 2]
    assert tree.structure((1, 2)) == tree_structure((0, 0))
    leaves, treedef = tree.flatten({"a": 1})
    assert tree.unflatten(treedef, leaves) == {"a": 1}
    assert tree.reduce(lambda a, b: a + b, [1, 2, 3]) == 6
    assert tree.all([1, True])
    assert tree.transpose(tree_structure([0, 0]), None, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
    assert tree.map_with_path(lambda p, x: keystr(p), [0]) == ["[0]"]
    assert tree.flatten_with_path([5])[0] == [((SequenceKey(0),), 5)]
    assert tree.leaves_with_path((5,)) == [((SequenceKey(0),), 5)]
    assert set(tree.__all__) == {
        "all",
        "broadcast",
        "reduce_associative",
        "static",
        "flatten",
        "flatten_with_path",
        "leaves",
        "leaves_with_path",
        "map",
        "map_with_path",
        "reduce",
        "structure",
        "transpose",
        "unflatten",
    }


@pytest.mark.parametrize("module", [tree_util, tree])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


# ----------------------------------------------------------------------------
# JAX's dict order, and the rest of jax.tree_util's names


def test_dicts_unflatten_with_sorted_keys_as_in_jax():
    assert list(tree_map(lambda x: x, {"b": 1, "a": 2})) == ["a", "b"]
    assert list(tree_map(lambda x: x, {"z": {"y": 1, "x": 2}})["z"]) == ["x", "y"]
    leaves, treedef = tree_flatten({"b": 1, "a": 2})
    assert leaves == [2, 1] and list(tree_unflatten(treedef, leaves)) == ["a", "b"]
    assert treedef == tree_structure({"a": 0, "b": 0})
    counts = collections.defaultdict(int, b=1, a=2)
    mapped = tree_map(lambda x: x * 10, counts)
    assert isinstance(mapped, collections.defaultdict) and mapped.default_factory is int
    assert list(mapped.items()) == [("a", 20), ("b", 10)]
    ordered = collections.OrderedDict(b=1, a=2)  # insertion order is its meaning
    assert list(tree_map(lambda x: x, ordered)) == ["b", "a"]
    assert list(tree_map_with_path(lambda p, x: x, {"b": 1, "a": 2})) == ["a", "b"]


def test_dict_keys_that_cannot_be_sorted_raise_value_error_as_in_jax():
    for fn in (tree_leaves, tree_flatten, tree_structure, lambda t: tree_map(abs, t)):
        with pytest.raises(ValueError, match="sorting pytree dictionary keys"):
            fn({1: 1, "a": 2})


def test_flatten_one_level():
    assert tree_util.flatten_one_level({"b": 1, "a": (2, 3)}) == (((2, 3), 1), ("a", "b"))
    assert tree_util.flatten_one_level((1, 2)) == ((1, 2), None)
    assert tree_util.flatten_one_level(None) == ((), None)
    assert tree_util.flatten_one_level_with_keys([5, 6])[0] == [(SequenceKey(0), 5),
                                                                (SequenceKey(1), 6)]
    with pytest.raises(ValueError, match="can't tree-flatten type"):
        tree_util.flatten_one_level(3)


def test_is_tree_node_and_treedef_tuple():
    assert tree_util.is_tree_node(dict) and tree_util.is_tree_node(type(None))
    assert not tree_util.is_tree_node(int) and not tree_util.is_tree_node(str)
    treedef = tree_util.treedef_tuple([tree_structure(1), tree_structure([1, 2])])
    assert treedef == tree_structure((0, [0, 0]))


def test_tree_broadcast_and_reduce_associative():
    assert tree_util.tree_broadcast((1, 2), ((3, 4), {"a": 5})) == ((1, 1), {"a": 2})
    assert tree.broadcast([7], [[0, (0, 0)]]) == [[7, (7, 7)]]
    calls = []

    def concat(a, b):
        calls.append((a, b))
        return a + b
    assert tree_util.tree_reduce_associative(concat, ["a", "b", "c", "d", "e"]) == "abcde"
    assert len(calls) == 4  # pairwise: ab, cd; abcd; abcde
    with pytest.raises(TypeError, match="identity"):
        tree.reduce_associative(concat, [])
    assert tree.reduce_associative(concat, [], identity="") == ""


def test_is_leaf_takes_path():
    pairs, treedef = tree_flatten_with_path(
        {"a": [1, 2], "b": 3}, is_leaf=lambda path, x: len(path) == 1 and isinstance(x, list),
        is_leaf_takes_path=True)
    assert pairs == [((DictKey("a"),), [1, 2]), ((DictKey("b"),), 3)]
    assert treedef.num_leaves == 2
    out = tree_map_with_path(lambda p, x: len(x), {"a": [1, 2]},
                             is_leaf=lambda p, x: isinstance(x, list), is_leaf_takes_path=True)
    assert out == {"a": 2}


def test_default_registry_and_static_fields():
    leaves, treedef = tree_util.default_registry.flatten({"b": 1, "a": 2})
    assert leaves == [2, 1]

    @register_dataclass
    @dataclasses.dataclass
    class Op:
        x: float
        kind: str = tree.static(default="add")
    leaves, treedef = tree_flatten(Op(1.5))
    assert leaves == [1.5] and tree_unflatten(treedef, [2.5]) == Op(2.5, "add")


def test_registering_a_namedtuple_subclass_is_silent():
    import collections
    import warnings

    Base = collections.namedtuple("Base", "a b")

    class Pair(Base):
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tree_util.register_pytree_node(Pair, lambda p: ((p.b, p.a), None),
                                       lambda _, c: Pair(c[1], c[0]))
    assert tree_util.tree_leaves(Pair(1, 2)) == [2, 1]
