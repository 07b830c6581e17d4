"""Pytrees: JAX's ``jax.tree_util`` API on top of optree.

Every transformation in lamella takes and returns pytrees (nested tuples,
lists, dicts, ``None``, namedtuples and registered classes), flattening them
to a list of leaves plus a hashable structure (:data:`PyTreeDef`) that serves
as a jit cache key. optree does the flattening in C++; this module only adapts
JAX's names, callback signatures and key-path classes onto it.

User registrations live in optree namespaces private to lamella, so they never
leak into (or pick up) other libraries' optree registrations. Built-in nodes
behave as in JAX: ``None`` is a node with no children; dict keys flatten in
sorted order and unflatten into dicts in that order (keys that can't be
compared are a ValueError); ``OrderedDict`` keeps insertion order. Unlike JAX,
``collections.deque`` and structseqs (``os.stat_result``, ...) are nodes, as
optree treats them.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import warnings
from collections.abc import Callable, Hashable, Iterable, Sequence, Sized
from typing import Any, TypeVar

import optree

__all__ = [
    "DictKey",
    "FlattenedIndexKey",
    "GetAttrKey",
    "KeyEntry",
    "KeyPath",
    "Partial",
    "PyTreeDef",
    "SequenceKey",
    "all_leaves",
    "default_registry",
    "flatten_one_level",
    "flatten_one_level_with_keys",
    "is_tree_node",
    "keystr",
    "register_dataclass",
    "register_pytree_node",
    "register_pytree_node_class",
    "register_pytree_with_keys",
    "register_pytree_with_keys_class",
    "register_static",
    "tree_all",
    "tree_broadcast",
    "tree_flatten",
    "tree_flatten_with_path",
    "tree_leaves",
    "tree_leaves_with_path",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_reduce_associative",
    "tree_structure",
    "tree_transpose",
    "tree_unflatten",
    "treedef_children",
    "treedef_is_leaf",
    "treedef_tuple",
]

PyTreeDef = optree.PyTreeSpec
"""The structure of a pytree: hashable, comparable, ``num_leaves``, ``unflatten``..."""

_T = TypeVar("_T")
KeyEntry = Hashable
KeyPath = tuple[KeyEntry, ...]

# Two namespaces because JAX lets a node have a fast flatten (for tree_flatten,
# on jit's hot path) and a separate keyed one (for the *_with_path functions);
# optree holds one flatten function per type and namespace.
_NAMESPACE = "lamella"
_KEYS_NAMESPACE = "lamella.keypaths"


# ----------------------------------------------------------------------------
# Key path entries


@dataclasses.dataclass(frozen=True, slots=True)
class SequenceKey:
    """Path entry of a tuple or list element: ``str(SequenceKey(0)) == '[0]'``."""

    idx: int

    def __str__(self) -> str:
        return f"[{self.idx}]"


@dataclasses.dataclass(frozen=True, slots=True)
class DictKey:
    """Path entry of a dict value: ``str(DictKey('a')) == "['a']"``."""

    key: Hashable

    def __str__(self) -> str:
        return f"[{self.key!r}]"


@dataclasses.dataclass(frozen=True, slots=True)
class GetAttrKey:
    """Path entry of an attribute (namedtuple, dataclass): ``str(GetAttrKey('w')) == '.w'``."""

    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclasses.dataclass(frozen=True, slots=True)
class FlattenedIndexKey:
    """Path entry of the i-th child of a custom node registered without keys."""

    key: int

    def __str__(self) -> str:
        return f"[<flat index {self.key}>]"


class _UserKeyEntry(optree.PyTreeEntry):
    """Marks accessor entries that already hold the key a user's flatten_with_keys gave."""

    __slots__ = ()


_KEY_OF_ENTRY: dict[type, Callable[[optree.PyTreeEntry], KeyEntry]] = {
    optree.SequenceEntry: lambda e: SequenceKey(e.entry),
    optree.MappingEntry: lambda e: DictKey(e.entry),
    optree.NamedTupleEntry: lambda e: GetAttrKey(e.field),
    optree.StructSequenceEntry: lambda e: GetAttrKey(e.field),
    optree.FlattenedEntry: lambda e: FlattenedIndexKey(e.entry),
    _UserKeyEntry: lambda e: e.entry,
}


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
    """Render a key path as a string.

    With ``simple=True`` each entry is shown bare (``0``, ``a``, ``w``) instead
    of in its indexing form (``[0]``, ``['a']``, ``.w``).

    >>> keystr((DictKey('a'), SequenceKey(0), GetAttrKey('w')))
    "['a'][0].w"
    >>> keystr((DictKey('a'), SequenceKey(0)), simple=True, separator='/')
    'a/0'
    """
    if not simple:
        return separator.join(map(str, keys))
    parts = []
    for key in keys:
        if isinstance(key, SequenceKey):
            parts.append(str(key.idx))
        elif isinstance(key, DictKey | FlattenedIndexKey):
            parts.append(str(key.key))
        elif isinstance(key, GetAttrKey):
            parts.append(key.name)
        else:
            parts.append(str(key))
    return separator.join(parts)


# ----------------------------------------------------------------------------
# Flattening

_SORTED_KINDS = (optree.PyTreeKind.DICT, optree.PyTreeKind.DEFAULTDICT)


def _sorted_dict_node(node: PyTreeDef) -> PyTreeDef:
    """A dict node rebuilt so that unflattening inserts its keys in sorted order."""
    if node.kind not in _SORTED_KINDS:
        return node
    keys = node.entries()
    try:
        keys = sorted(keys)
    except TypeError:
        raise ValueError("Comparator raised exception while sorting pytree dictionary keys: "
                         f"a dict in the tree has keys that can't be ordered ({keys!r}); "
                         "use keys of one comparable type.") from None
    children = dict.fromkeys(keys, optree.treespec_leaf(namespace=node.namespace))
    if node.kind == optree.PyTreeKind.DICT:
        return optree.treespec_dict(children, namespace=node.namespace)
    factory = node.one_level().unflatten([None] * node.num_children).default_factory
    return optree.treespec_defaultdict(factory, children, namespace=node.namespace)


@functools.lru_cache(maxsize=4096)
def _canonical(treedef: PyTreeDef) -> PyTreeDef:
    """`treedef` with every dict's keys in sorted order, as JAX unflattens them.

    optree flattens dict keys sorted but remembers the insertion order for
    unflattening. Treedefs that differ only in that order compare equal, so
    they share one cache entry, which is the sorted one.
    """
    return treedef.transform(f_node=_sorted_dict_node)


def tree_flatten(
    tree: Any, is_leaf: Callable[[Any], bool] | None = None
) -> tuple[list[Any], PyTreeDef]:
    """Flatten a pytree into its leaves and its structure.

    ``is_leaf(x)`` returning true stops the recursion at ``x``.

    >>> tree_flatten({'b': (1, 2), 'a': None})
    ([1, 2], PyTreeSpec({'a': None, 'b': (*, *)}))
    """
    leaves, treedef = optree.tree_flatten(tree, is_leaf, namespace=_NAMESPACE)
    return leaves, _canonical(treedef)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
    """Rebuild a pytree of structure ``treedef`` from its leaves.

    >>> leaves, treedef = tree_flatten([1, (2, 3)])
    >>> tree_unflatten(treedef, [4, 5, 6])
    [4, (5, 6)]
    """
    try:
        return _canonical(treedef).unflatten(leaves)
    except ValueError:
        # Only our own count check gets a new message; a user's unflatten_func
        # may raise ValueError too, and that must reach them unchanged.
        if not isinstance(leaves, Sized) or len(leaves) == treedef.num_leaves:
            raise
        raise ValueError(
            f"tree_unflatten: {treedef} expects {treedef.num_leaves} leaves, "
            f"but {len(leaves)} were given"
        ) from None


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[Any]:
    """The leaves of a pytree, in flattening order.

    >>> tree_leaves({'b': [3, None], 'a': 1})
    [1, 3]
    """
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> PyTreeDef:
    """The structure (treedef) of a pytree.

    >>> tree_structure((1, [2, 3])) == tree_structure(('a', ['b', 'c']))
    True
    """
    return tree_flatten(tree, is_leaf)[1]


def all_leaves(iterable: Iterable[Any], is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every element of ``iterable`` is a leaf.

    >>> all_leaves([1, 'x']), all_leaves([1, (2,)]), all_leaves([None])
    (True, False, False)
    """
    return optree.all_leaves(iterable, is_leaf, namespace=_NAMESPACE)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
    """Whether ``treedef`` has a single node (a leaf, or a node without children).

    >>> treedef_is_leaf(tree_structure(1)), treedef_is_leaf(tree_structure((1,)))
    (True, False)
    """
    return treedef.num_nodes == 1


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
    """The structures of the root node's children.

    >>> treedef_children(tree_structure((1, [2, 3])))
    [PyTreeSpec(*), PyTreeSpec([*, *])]
    """
    return treedef.children()


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
    """The structure of a tuple whose elements have the given structures.

    >>> treedef_tuple([tree_structure(1), tree_structure((1, 2))])
    PyTreeSpec((*, (*, *)))
    """
    return optree.treespec_tuple(list(treedefs), namespace=_NAMESPACE)


def is_tree_node(typ: type) -> bool:
    """Whether values of type `typ` are pytree nodes (containers), not leaves.

    >>> is_tree_node(dict), is_tree_node(int), is_tree_node(type(None))
    (True, False, True)
    """
    if typ is type(None):
        return True
    return optree.register_pytree_node.get(typ, namespace=_NAMESPACE) is not None


_TUPLE_CHILDREN = (optree.PyTreeKind.DICT, optree.PyTreeKind.DEFAULTDICT,
                   optree.PyTreeKind.TUPLE, optree.PyTreeKind.NONE)


def _one_level(tree: Any, keyed: bool) -> tuple[Any, Any]:
    if not is_tree_node(type(tree)):
        raise ValueError(f"can't tree-flatten type: {type(tree)}")
    children, metadata, entries, _ = optree.tree_flatten_one_level(tree, namespace=_NAMESPACE)
    kind = tree_structure(tree).kind
    if kind in _TUPLE_CHILDREN:
        children = tuple(children)
    if isinstance(tree, dict):
        metadata = tuple(metadata)
    if keyed:
        paths = tree_flatten_with_path(tree, is_leaf=lambda x: x is not tree)[0]
        children = type(children)((path[0], child) for (path, _), child in zip(paths, children))
    return children, metadata


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
    """The children of the root node and its static data (dict keys, a node's aux data).

    >>> flatten_one_level({'b': 1, 'a': (2, 3)})
    (((2, 3), 1), ('a', 'b'))
    """
    return _one_level(tree, keyed=False)


def flatten_one_level_with_keys(tree: Any) -> tuple[Iterable[tuple[KeyEntry, Any]], Hashable]:
    """Like `flatten_one_level`, each child paired with its key-path entry.

    >>> flatten_one_level_with_keys({'b': 1, 'a': 2})
    (((DictKey(key='a'), 2), (DictKey(key='b'), 1)), ('a', 'b'))
    """
    return _one_level(tree, keyed=True)


# ----------------------------------------------------------------------------
# Mapping and reducing


def _raise_if_structures_differ(
    fn_name: str, tree: Any, rest: Sequence[Any], is_leaf: Callable[[Any], bool] | None
) -> None:
    """Raise a ValueError naming both structures if a tree in ``rest`` doesn't match ``tree``.

    Called only once optree has already failed, so the hot path stays a
    single call into optree.
    """
    treedef = tree_structure(tree, is_leaf)
    for i, other in enumerate(rest, start=1):
        try:
            treedef.flatten_up_to(other)
        except ValueError as e:
            raise ValueError(
                f"{fn_name}: tree {i} does not match the structure of tree 0 "
                f"(each tree must have tree 0's structure, or a deeper one).\n"
                f"  tree 0 structure: {treedef}\n"
                f"  tree {i} structure: {tree_structure(other)}\n"
                f"  {e}"
            ) from None


def tree_map(
    f: Callable[..., Any],
    tree: Any,
    *rest: Any,
    is_leaf: Callable[[Any], bool] | None = None,
) -> Any:
    """Apply ``f`` leafwise, returning a pytree with ``tree``'s structure.

    Each tree in ``rest`` must have ``tree``'s structure, or one where
    ``tree``'s leaves are replaced by subtrees (passed whole to ``f``).

    >>> tree_map(lambda x, y: x + y, {'a': 1, 'b': (2, 3)}, {'a': 10, 'b': (20, 30)})
    {'a': 11, 'b': (22, 33)}
    """
    leaves, treedef = tree_flatten(tree, is_leaf)
    try:
        rest_leaves = [treedef.flatten_up_to(other) for other in rest]
    except ValueError:
        _raise_if_structures_differ("tree_map", tree, rest, is_leaf)
        raise
    return treedef.unflatten(map(f, leaves, *rest_leaves))


_NO_INITIALIZER = object()


def tree_reduce(
    function: Callable[[_T, Any], _T],
    tree: Any,
    initializer: Any = _NO_INITIALIZER,
    is_leaf: Callable[[Any], bool] | None = None,
) -> _T:
    """Fold ``function`` over the leaves, like :func:`functools.reduce`.

    >>> tree_reduce(lambda acc, x: acc + x, {'a': 1, 'b': [2, 3]})
    6
    >>> tree_reduce(max, [], initializer=0)
    0
    """
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _NO_INITIALIZER:
        return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether every leaf is truthy (true for a tree without leaves).

    >>> tree_all([True, (1, 'x')]), tree_all({'a': 0}), tree_all(())
    (True, False, True)
    """
    return all(tree_leaves(tree, is_leaf))


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """`prefix_tree`'s leaves repeated over the subtrees of `full_tree` they cover.

    >>> tree_broadcast((1, 2), ((3, 4), {'a': 5}))
    ((1, 1), {'a': 2})
    """
    leaves, treedef = tree_flatten(prefix_tree, is_leaf)
    subtrees = treedef.flatten_up_to(full_tree)
    return treedef.unflatten([tree_map(lambda _, v=value: v, sub, is_leaf=is_leaf)
                              for value, sub in zip(leaves, subtrees)])


def tree_reduce_associative(operation: Callable[[_T, _T], _T], tree: Any,
                            identity: Any = _NO_INITIALIZER,
                            is_leaf: Callable[[Any], bool] | None = None) -> _T:
    """Reduces the leaves with an associative `operation`, pairwise in a balanced tree
    (depth log n), so each step's operations are independent.

    >>> tree_reduce_associative(lambda a, b: a + b, [1, 2, 3, 4])
    10
    """
    values = tree_leaves(tree, is_leaf)
    if not values:
        if identity is _NO_INITIALIZER:
            raise TypeError("Must specify identity for parallel reduction of empty sequence.")
        return identity
    while len(values) > 1:
        paired = [operation(a, b) for a, b in zip(values[::2], values[1::2])]
        values = paired + values[len(paired) * 2:]
    return values[0]


def tree_transpose(
    outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None, pytree_to_transpose: Any
) -> Any:
    """Turn an outer-of-inner pytree into an inner-of-outer one.

    ``inner_treedef=None`` takes the inner structure from the first outer leaf.

    >>> outer = tree_structure([0, 0])
    >>> inner = tree_structure({'x': 0, 'y': 0})
    >>> tree_transpose(outer, inner, [{'x': 1, 'y': 2}, {'x': 3, 'y': 4}])
    {'x': [1, 3], 'y': [2, 4]}
    """
    if inner_treedef is None:
        subtrees = outer_treedef.flatten_up_to(pytree_to_transpose)
        if not subtrees:
            raise ValueError(
                f"tree_transpose: outer structure {outer_treedef} has no leaves, "
                "so inner_treedef cannot be inferred; pass it explicitly"
            )
        inner_treedef = tree_structure(subtrees[0])
    leaves, treedef = tree_flatten(pytree_to_transpose)
    expected = outer_treedef.compose(inner_treedef)
    if treedef != expected:
        raise TypeError(
            f"tree_transpose: the tree has structure {treedef}, but outer structure "
            f"{outer_treedef} of inner structure {inner_treedef} is {expected}"
        )
    n = inner_treedef.num_leaves
    outer, inner = _canonical(outer_treedef), _canonical(inner_treedef)
    # Outer-major order: the leaves at inner position j are every n-th from j.
    return inner.unflatten([outer.unflatten(leaves[j::n]) for j in range(n)])


# ----------------------------------------------------------------------------
# Key paths


def _flatten_with_keys(
    tree: Any, is_leaf: Callable[..., bool] | None, is_leaf_takes_path: bool = False
) -> tuple[list[KeyPath], list[Any], PyTreeDef]:
    """Flatten in the key-path namespace, translating optree's entries into JAX key objects."""
    if is_leaf_takes_path and is_leaf is not None:
        return _flatten_with_path_predicate(tree, is_leaf)
    accessors, leaves, treedef = optree.tree_flatten_with_accessor(
        tree, is_leaf, namespace=_KEYS_NAMESPACE
    )
    paths = [tuple(_KEY_OF_ENTRY[type(e)](e) for e in accessor) for accessor in accessors]
    return paths, leaves, treedef


def _flatten_with_path_predicate(
    tree: Any, is_leaf: Callable[[KeyPath, Any], bool]
) -> tuple[list[KeyPath], list[Any], PyTreeDef]:
    """Flattening where `is_leaf(path, x)` sees each node's key path (one level at a time)."""
    paths: list[KeyPath] = []
    leaves: list[Any] = []
    stopped: set[int] = set()

    def visit(path: KeyPath, x: Any) -> None:
        if x is not None and (is_leaf(path, x) or not is_tree_node(type(x))):
            stopped.add(id(x))
            paths.append(path)
            leaves.append(x)
            return
        if x is None:
            return
        for key, child in flatten_one_level_with_keys(x)[0]:
            visit(path + (key,), child)

    visit((), tree)
    treedef = optree.tree_structure(tree, lambda x: id(x) in stopped, namespace=_KEYS_NAMESPACE)
    return paths, leaves, treedef


def tree_flatten_with_path(
    tree: Any, is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False
) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
    """Like :func:`tree_flatten`, pairing each leaf with its key path.

    With ``is_leaf_takes_path=True``, ``is_leaf(path, x)`` also sees the key path.

    >>> pairs, treedef = tree_flatten_with_path({'a': [1, 2]})
    >>> pairs
    [((DictKey(key='a'), SequenceKey(idx=0)), 1), ((DictKey(key='a'), SequenceKey(idx=1)), 2)]
    """
    paths, leaves, _ = _flatten_with_keys(tree, is_leaf, is_leaf_takes_path)
    # The key-path namespace's treedef would compare unequal to tree_structure's.
    if is_leaf_takes_path and is_leaf is not None:
        leaf_ids = {id(x) for x in leaves}
        return list(zip(paths, leaves)), tree_structure(tree, lambda x: id(x) in leaf_ids)
    return list(zip(paths, leaves)), tree_structure(tree, is_leaf)


def tree_leaves_with_path(
    tree: Any, is_leaf: Callable[..., bool] | None = None, is_leaf_takes_path: bool = False
) -> list[tuple[KeyPath, Any]]:
    """The leaves of a pytree, each paired with its key path.

    >>> [(keystr(p), x) for p, x in tree_leaves_with_path({'a': (1, {'b': 2})})]
    [("['a'][0]", 1), ("['a'][1]['b']", 2)]
    """
    paths, leaves, _ = _flatten_with_keys(tree, is_leaf, is_leaf_takes_path)
    return list(zip(paths, leaves))


def tree_map_with_path(
    f: Callable[..., Any],
    tree: Any,
    *rest: Any,
    is_leaf: Callable[..., bool] | None = None,
    is_leaf_takes_path: bool = False,
) -> Any:
    """Like :func:`tree_map`, but calls ``f(path, leaf, *rest_leaves)``.

    >>> tree_map_with_path(lambda p, x: f'{keystr(p)}={x}', {'a': [1, 2]})
    {'a': ["['a'][0]=1", "['a'][1]=2"]}
    """
    paths, leaves, treedef = _flatten_with_keys(tree, is_leaf, is_leaf_takes_path)
    try:
        rest_leaves = [treedef.flatten_up_to(other) for other in rest]
    except ValueError:
        _raise_if_structures_differ("tree_map_with_path", tree, rest, is_leaf)
        raise
    return _canonical(treedef).unflatten(map(f, paths, leaves, *rest_leaves))


# ----------------------------------------------------------------------------
# Registration


registered_nodes: list[tuple[type, Callable, Callable]] = []
_registration_listeners: list[Callable[[type, Callable, Callable], None]] = []


def on_register(listener: Callable[[type, Callable, Callable], None]) -> None:
    """Calls `listener(nodetype, flatten, unflatten)` for every custom node type,
    those registered so far and later ones (an executor mirrors them into its
    own flattener, e.g. jaxlib's C++ registry)."""
    for node in registered_nodes:
        listener(*node)
    _registration_listeners.append(listener)


def _register(
    nodetype: type,
    flatten: Callable[[Any], tuple],
    unflatten: Callable[[Any, Iterable[Any]], Any],
    flatten_with_keys: Callable[[Any], tuple] | None,
) -> None:
    """Register in both namespaces; ``flatten_with_keys`` returns optree's (children, aux, keys)."""
    with warnings.catch_warnings():
        # optree warns that a namedtuple subclass overrides its built-in handling; that
        # override is what the caller asked for (JAX registers such classes silently).
        warnings.filterwarnings("ignore", message=r".*subclass of `collections\.namedtuple`",
                                category=UserWarning)
        _register_in_optree(nodetype, flatten, unflatten, flatten_with_keys)
    registered_nodes.append((nodetype, flatten, unflatten))
    for listener in _registration_listeners:
        listener(nodetype, flatten, unflatten)


def _register_in_optree(nodetype, flatten, unflatten, flatten_with_keys) -> None:
    optree.register_pytree_node(nodetype, flatten, unflatten, namespace=_NAMESPACE)
    if flatten_with_keys is None:
        optree.register_pytree_node(
            nodetype,
            flatten,
            unflatten,
            path_entry_type=optree.FlattenedEntry,
            namespace=_KEYS_NAMESPACE,
        )
    else:
        optree.register_pytree_node(
            nodetype,
            flatten_with_keys,
            unflatten,
            path_entry_type=_UserKeyEntry,
            namespace=_KEYS_NAMESPACE,
        )


def _keys_children_aux(
    flatten_with_keys: Callable[[Any], tuple[Iterable[tuple[KeyEntry, Any]], Hashable]],
) -> Callable[[Any], tuple[list[Any], Hashable, list[KeyEntry]]]:
    """Adapt JAX's ``x -> (((key, child), ...), aux)`` to optree's ``(children, aux, keys)``."""

    def flatten(x: Any) -> tuple[list[Any], Hashable, list[KeyEntry]]:
        pairs, aux = flatten_with_keys(x)
        pairs = list(pairs)
        return [child for _, child in pairs], aux, [key for key, _ in pairs]

    return flatten


def register_pytree_node(
    nodetype: type[_T],
    flatten_func: Callable[[_T], tuple[Iterable[Any], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], _T],
    flatten_with_keys_func: Callable[[_T], tuple[Iterable[tuple[KeyEntry, Any]], Hashable]]
    | None = None,
) -> None:
    """Make ``nodetype`` a pytree node.

    ``flatten_func(x) -> (children, aux_data)``; ``aux_data`` is hashable
    static data stored in the treedef. ``unflatten_func(aux_data, children)``
    rebuilds the node. The optional ``flatten_with_keys_func(x) ->
    (((key, child), ...), aux_data)`` names children in key paths; without
    it they are :class:`FlattenedIndexKey`.

    >>> class Pair:
    ...     def __init__(self, a, b):
    ...         self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    >>> tree_leaves([Pair(1, 2), 3])
    [1, 2, 3]
    """
    keyed = None if flatten_with_keys_func is None else _keys_children_aux(flatten_with_keys_func)
    _register(nodetype, flatten_func, unflatten_func, keyed)


def register_pytree_with_keys(
    nodetype: type[_T],
    flatten_with_keys: Callable[[_T], tuple[Iterable[tuple[KeyEntry, Any]], Hashable]],
    unflatten_func: Callable[[Hashable, Iterable[Any]], _T],
    flatten_func: Callable[[_T], tuple[Iterable[Any], Hashable]] | None = None,
) -> None:
    """Make ``nodetype`` a pytree node whose children are named in key paths.

    ``flatten_with_keys(x) -> (((key, child), ...), aux_data)``. The optional
    ``flatten_func(x) -> (children, aux_data)`` must agree with it; when given
    it is used by the path-less functions (tree_flatten, tree_map) for speed.

    >>> class Point:
    ...     def __init__(self, x, y):
    ...         self.x, self.y = x, y
    >>> register_pytree_with_keys(
    ...     Point,
    ...     lambda p: (((GetAttrKey('x'), p.x), (GetAttrKey('y'), p.y)), None),
    ...     lambda _, c: Point(*c))
    >>> [keystr(path) for path, _ in tree_leaves_with_path(Point(1, 2))]
    ['.x', '.y']
    """
    keyed = _keys_children_aux(flatten_with_keys)
    _register(nodetype, keyed if flatten_func is None else flatten_func, unflatten_func, keyed)


def register_pytree_node_class(cls: type[_T]) -> type[_T]:
    """Class decorator: register ``cls`` through its ``tree_flatten`` and ``tree_unflatten``.

    ``x.tree_flatten() -> (children, aux_data)``; the classmethod
    ``cls.tree_unflatten(aux_data, children)`` rebuilds an instance.

    >>> @register_pytree_node_class
    ... class Box:
    ...     def __init__(self, value):
    ...         self.value = value
    ...     def tree_flatten(self):
    ...         return (self.value,), None
    ...     @classmethod
    ...     def tree_unflatten(cls, aux_data, children):
    ...         return cls(*children)
    >>> tree_map(lambda v: v + 1, Box(1)).value
    2
    """
    register_pytree_node(cls, operator.methodcaller("tree_flatten"), cls.tree_unflatten)
    return cls


def register_pytree_with_keys_class(cls: type[_T]) -> type[_T]:
    """Class decorator: register ``cls`` through ``tree_flatten_with_keys`` and ``tree_unflatten``.

    A ``tree_flatten`` method, if the class has one, serves the path-less functions.

    >>> @register_pytree_with_keys_class
    ... class Named:
    ...     def __init__(self, w):
    ...         self.w = w
    ...     def tree_flatten_with_keys(self):
    ...         return ((GetAttrKey('w'), self.w),), None
    ...     @classmethod
    ...     def tree_unflatten(cls, aux_data, children):
    ...         return cls(*children)
    >>> [keystr(path) for path, _ in tree_leaves_with_path(Named(1))]
    ['.w']
    """
    flatten_func = operator.methodcaller("tree_flatten") if hasattr(cls, "tree_flatten") else None
    register_pytree_with_keys(
        cls, operator.methodcaller("tree_flatten_with_keys"), cls.tree_unflatten, flatten_func
    )
    return cls


def _attribute_tuple(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """A fast ``x -> tuple(getattr(x, n) for n in names)``."""
    if len(names) >= 2:
        return operator.attrgetter(*names)
    if len(names) == 1:
        (name,) = names
        return lambda x: (getattr(x, name),)
    return lambda x: ()


def register_dataclass(
    nodetype: type[_T],
    data_fields: Sequence[str] | None = None,
    meta_fields: Sequence[str] | None = None,
    drop_fields: Sequence[str] = (),
) -> type[_T]:
    """Make a dataclass-like type a pytree node: data fields are children, meta fields are static.

    With neither field list given, ``nodetype`` must be a dataclass: its
    ``init=True`` fields are data, except those declared with
    ``field(metadata=dict(static=True))``, which are meta. ``drop_fields`` are
    left out of the pytree (and of the constructor call on unflattening).
    Unflattening calls ``nodetype(**fields)``. Also usable as a decorator.

    >>> @register_dataclass
    ... @dataclasses.dataclass
    ... class Layer:
    ...     w: float
    ...     name: str = dataclasses.field(default='dense', metadata=dict(static=True))
    >>> tree_flatten(Layer(1.0))
    ([1.0], PyTreeSpec(CustomTreeNode(Layer[('dense',)], [*]), namespace='lamella'))
    """
    if (data_fields is None) != (meta_fields is None):
        raise TypeError(
            "register_dataclass: give both data_fields and meta_fields, or neither; "
            f"got data_fields={data_fields!r}, meta_fields={meta_fields!r}"
        )
    is_dataclass = dataclasses.is_dataclass(nodetype)
    if data_fields is None or meta_fields is None:
        if not is_dataclass:
            raise TypeError(
                f"register_dataclass: {nodetype!r} is not a dataclass, so data_fields "
                "and meta_fields are required"
            )
        fields = [f for f in dataclasses.fields(nodetype) if f.init and f.name not in drop_fields]
        data_fields = [f.name for f in fields if not f.metadata.get("static", False)]
        meta_fields = [f.name for f in fields if f.metadata.get("static", False)]
    # Tuples, so later mutation of the caller's lists can't change the registration.
    data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)
    if is_dataclass:
        init_fields = {f.name for f in dataclasses.fields(nodetype) if f.init}
        init_fields.difference_update(drop_fields)
        given = {*data_fields, *meta_fields}
        if given != init_fields:
            message = (
                f"register_dataclass: data_fields and meta_fields of {nodetype.__name__} must "
                "list exactly its init=True fields that are not in drop_fields."
            )
            if missing := init_fields - given:
                message += f" Missing: {sorted(missing)}."
            if unexpected := given - init_fields:
                message += f" Unexpected: {sorted(unexpected)}."
            raise ValueError(message)

    get_data = _attribute_tuple(data_fields)
    get_meta = _attribute_tuple(meta_fields)
    keys = tuple(GetAttrKey(name) for name in data_fields)

    def unflatten(meta: tuple[Any, ...], data: Iterable[Any]) -> _T:
        return nodetype(**dict(zip(meta_fields, meta)), **dict(zip(data_fields, data)))

    _register(
        nodetype,
        lambda x: (get_data(x), get_meta(x)),
        unflatten,
        lambda x: (get_data(x), get_meta(x), keys),
    )
    return nodetype


def register_static(cls: type[_T]) -> type[_T]:
    """Make instances of ``cls`` pytree nodes with no children, kept whole as static data.

    Instances must be hashable; they take part in treedef equality and jit
    cache keys. Also usable as a decorator.

    >>> @register_static
    ... class Mode(str):
    ...     pass
    >>> tree_leaves([1, Mode('train')])
    [1]
    """
    register_pytree_node(cls, lambda x: ((), x), lambda x, _: x)
    return cls


class PyTreeRegistry:
    """The registry of pytree node types that lamella's tree functions use.

    `default_registry.flatten(tree)` is `tree_flatten`; `register_node` is
    `register_pytree_node`.
    """

    def flatten(self, tree: Any, leaf_predicate: Callable[[Any], bool] | None = None
                ) -> tuple[list[Any], PyTreeDef]:
        return tree_flatten(tree, leaf_predicate)

    def flatten_one_level(self, tree: Any) -> tuple[Iterable[Any], Hashable]:
        return flatten_one_level(tree)

    def register_node(self, nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                      flatten_with_keys_func: Callable | None = None) -> None:
        register_pytree_node(nodetype, flatten_func, unflatten_func, flatten_with_keys_func)

    def __repr__(self) -> str:
        return f"<lamella PyTreeRegistry: optree namespace {_NAMESPACE!r}>"


default_registry = PyTreeRegistry()


# ----------------------------------------------------------------------------
# Partial


class _FunctionShim:
    """Wraps a functools.partial passed as a Partial's function.

    CPython merges ``partial(partial(f, a), b)`` into ``partial(f, a, b)``,
    which would turn ``a`` from static data into a pytree child.
    """

    __slots__ = ("wrapped",)

    def __init__(self, wrapped: Callable[..., Any]) -> None:
        self.wrapped = wrapped

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.wrapped(*args, **kwargs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _FunctionShim) and self.wrapped == other.wrapped

    def __hash__(self) -> int:
        return hash(self.wrapped)

    def __repr__(self) -> str:
        return repr(self.wrapped)


class Partial(functools.partial):
    """A :func:`functools.partial` that is a pytree.

    The function is static (part of the treedef, so it must be hashable) and
    the bound positional and keyword arguments are children, so a Partial can
    be passed through and returned from transformed functions.

    >>> add = Partial(lambda x, y: x + y, 1)
    >>> tree_leaves(add), add(2)
    ([1], 3)
    >>> tree_map(lambda v: v * 10, add)(2)
    12
    """

    def __new__(cls, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Partial:
        if isinstance(func, functools.partial):
            func = _FunctionShim(func)
        return super().__new__(cls, func, *args, **kwargs)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]),
)
