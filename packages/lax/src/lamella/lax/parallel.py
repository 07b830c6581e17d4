"""Collectives over named axes: psum, pmean, pmax, pmin, all_gather, all_to_all,
ppermute, psum_scatter, axis_index, axis_size (and pshuffle, pswapaxes), and
pcast, which marks a value as varying over manual axes inside shard_map.

A collective combines the values that the members of a named axis hold. The
axis is named by `vmap(..., axis_name=)` (and, with several devices, by pmap
and shard_map). Under vmap every member is one slice of a batched value, so
each collective's batching rule *is* its meaning: `psum` over the vmapped axis
sums the batch, `axis_index` is an iota, `all_gather` moves the batch axis
into the value, `ppermute` permutes the batch. Those rules are registered as
fancy batchers together with `collective_axis_names`, so that vmap applies
them even when no operand is batched (`psum(1.0, 'i')` is the axis size).

A collective over an axis some *outer* transformation names passes through an
inner vmap unchanged, with the inner batch axis kept out of its way. Over a
pmap or shard_map axis it lowers to XLA's collectives (`spmd_collectives`).

The linear collectives are their own JVPs; their transposes are collectives
too (psum ↔ psum, all_gather ↔ psum_scatter, ppermute ↔ its inverse,
all_to_all ↔ all_to_all with the axes swapped). `pmax`/`pmin` differentiate
as the mean of the tangents of the members that attain the extreme.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad, batching, dtypes
from lamella.core.structural import reduce_sum, reshape
from lamella.core.trace import aval_of
from lamella.core.trace_queries import axis_size as _bound_axis_size
from lamella.core.tree_util import tree_flatten, tree_map, tree_unflatten
from lamella.lax.arithmetic import add, div, mul
from lamella.lax.conversion import convert_element_type
from lamella.lax.fill import zeros_like_array
from lamella.lax.logical import eq
from lamella.lax.reductions import reduce_max, reduce_min
from lamella.lax.shapes import (
    broadcast_in_dim,
    concatenate,
    dynamic_index_in_dim,
    iota,
    slice_in_dim,
)
from lamella.lax.standard import standard_primitive
from lamella.lax.varying_axes import invariant_over, typing_on, varying_over, vma_rules

__all__ = ["all_gather", "all_gather_p", "all_to_all", "all_to_all_p", "axis_index",
           "axis_index_p", "axis_size", "pcast", "pmax", "pmax_p", "pmean", "pmin", "pmin_p",
           "ppermute", "ppermute_p", "pshuffle", "psum", "psum_p", "psum_scatter",
           "pswapaxes", "pvary_p", "reduce_scatter_p"]


# --- axis names -----------------------------------------------------------------------


def _names(axis_name: Any) -> tuple:
    """`axis_name` as a tuple of names (JAX accepts one name or a tuple/list of them)."""
    names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    for name in names:
        if isinstance(name, (int, np.integer)) and not isinstance(name, bool):
            raise TypeError(f"collectives take axis names, got the integer {name}: name the "
                            "axis with vmap(..., axis_name=...) and pass that name")
    return names


def _size_of(names: tuple) -> int:
    """The number of members of the named axes together (NameError if one is unbound)."""
    return int(np.prod([_bound_axis_size(n) for n in names], dtype=np.int64))


def _groups(axis_index_groups: Any, names: tuple, equal: bool) -> tuple | None:
    """`axis_index_groups` checked against the named axes (every member once) as a tuple of
    tuples; `equal`: the groups must be one size (gathers, scatters, exchanges, means)."""
    if axis_index_groups is None:
        return None
    groups = tuple(tuple(int(i) for i in g) for g in axis_index_groups)
    members = [i for g in groups for i in g]
    if sorted(members) != list(range(_size_of(names))):
        raise ValueError("axis_index_groups must cover all indices exactly once (each of "
                         f"0..{_size_of(names) - 1} for the axes {names}), got {list(groups)}")
    if equal and len({len(g) for g in groups}) > 1:
        raise ValueError(f"axis_index_groups must all be the same size, got {list(groups)}")
    return groups


def _no_groups(name: str, axis_index_groups: Any) -> None:
    if axis_index_groups is not None:
        raise NotImplementedError(
            f"{name}: axis_index_groups is not supported over a vmapped axis (as in JAX); "
            "split the axis with a reshape and vmap twice instead")


def axis_size(axis_name: Any) -> int:
    """The number of members of the named axis (or the product for a tuple of names).

    >>> import lamella.core as lc, lamella.numpy as jnp, numpy as np
    >>> lc.vmap(lambda x: axis_size("i") * x, axis_name="i")(jnp.ones(3, np.float32))
    Array([3., 3., 3.], dtype=float32)
    """
    return _size_of(_names(axis_name))


def _ours(axis_data, names: tuple) -> bool:
    return axis_data.name is not None and axis_data.name in names


def _rest(axis_data, names: tuple) -> tuple:
    return tuple(n for n in names if n != axis_data.name)


def _member_aval(x, d) -> ShapedArray:
    """The abstract value one member holds of `x` batched at `d`."""
    aval = aval_of(x)
    return aval if d is batching.not_mapped else aval.update(
        shape=aval.shape[:d] + aval.shape[d + 1:])


def _front(x, d, size):
    """`x` with its batch axis first (broadcast when it has none)."""
    return batching.at_front(x, d, size)


# --- psum, pmax, pmin -----------------------------------------------------------------


def _reducing_collective(name: str, reduce_batch, repeat_unbatched):
    """A collective that combines the members elementwise (psum, pmax, pmin): one
    primitive over any number of operands, with `axes` (names) and axis_index_groups."""
    prim = standard_primitive(name, multiple_results=True)

    @prim.def_abstract_eval
    def abstract_eval(*avals: ShapedArray, axes, axis_index_groups):
        _size_of(axes)  # an unbound name is the user's mistake: say so at trace time
        return list(avals)

    def batch(axis_data, vals, dims, *, axes, axis_index_groups):
        if not _ours(axis_data, axes):  # an outer axis: elementwise over our batch
            return prim.bind(*vals, axes=axes, axis_index_groups=axis_index_groups), dims
        _no_groups(name, axis_index_groups)
        outs = [repeat_unbatched(v, axis_data.size) if d is batching.not_mapped
                else reduce_batch(v, d) for v, d in zip(vals, dims)]
        rest = _rest(axis_data, axes)
        if rest:
            outs = prim.bind(*outs, axes=rest, axis_index_groups=None)
        return list(outs), [batching.not_mapped] * len(outs)

    batching.fancy_primitive_batchers[prim] = batch
    batching.collective_axis_names[prim] = lambda params: params["axes"]
    return prim


psum_p = _reducing_collective("psum", lambda v, d: reduce_sum(v, (d,)),
                              lambda v, n: mul(v, np.array(n, aval_of(v).dtype)))
pmax_p = _reducing_collective("pmax", lambda v, d: reduce_max(v, (d,)), lambda v, n: v)
pmin_p = _reducing_collective("pmin", lambda v, d: reduce_min(v, (d,)), lambda v, n: v)

ad.deflinear2(psum_p, lambda cts, *args, axes, axis_index_groups: psum_p.bind(
    *[ad.instantiate_zeros(c) for c in cts], axes=axes, axis_index_groups=axis_index_groups))


def _extreme_jvp(prim):
    """The tangent of the members that attain the extreme, averaged over them (ties
    share it), so the derivative of pmax is a subgradient whatever the ties."""
    def jvp(primals, tangents, *, axes, axis_index_groups):
        outs = prim.bind(*primals, axes=axes, axis_index_groups=axis_index_groups)
        tangents_out = []
        for x, t, m in zip(primals, tangents, outs):
            if type(t) is ad.Zero:
                tangents_out.append(t)
                continue
            hit = convert_element_type(eq(x, m), aval_of(t).dtype)
            # Two binds: the count is a primal value, and partial evaluation would
            # take it for a tangent if it shared the tangent's psum.
            (total,) = psum_p.bind(mul(t, hit), axes=axes, axis_index_groups=axis_index_groups)
            (count,) = psum_p.bind(hit, axes=axes, axis_index_groups=axis_index_groups)
            tangents_out.append(div(total, count))
        return outs, tangents_out
    ad.primitive_jvps[prim] = jvp


_extreme_jvp(pmax_p)
_extreme_jvp(pmin_p)


def _one_state(what: str, leaves: list, names: tuple) -> None:
    """Inside a shard_map body typed with vma, a sum is over axes that each operand
    varies over, or over axes it varies over none of (JAX's rule: a sum over a mix
    is ambiguous)."""
    if not typing_on():
        return
    for v in leaves:
        aval = aval_of(v)
        # As JAX, a vmap's axis name counts too (as an axis nothing varies over).
        states = {"varying" if n in aval.vma else "invarying" for n in names}
        if len(states) > 1:
            raise ValueError(
                f"lamella.lax.{what} can only accept axis_name which corresponds to one of "
                "varying, unreduced, reduced or invarying state of the input. Got input "
                f"type: {aval}, axes: {names} and input state: "
                "{" + ", ".join(repr(t) for t in sorted(states)) + "}")


def _reduce_tree(prim, x: Any, axis_name: Any, axis_index_groups: Any) -> Any:
    leaves, tree = tree_flatten(x)
    leaves = [convert_element_type(v, np.int32) if aval_of(v).dtype == np.dtype(bool) else v
              for v in leaves]
    names = _names(axis_name)
    if prim is psum_p:
        _one_state("psum", leaves, names)
    outs = prim.bind(*leaves, axes=names,
                     axis_index_groups=_groups(axis_index_groups, names, equal=False))
    return tree_unflatten(tree, outs)


def psum(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The sum over the members of the named axis, of every leaf of `x` (booleans count
    as int32, as in JAX).

    >>> import lamella.core as lc, numpy as np
    >>> lc.vmap(lambda v: psum(v, "i"), axis_name="i")(np.float32([1, 2, 3]))
    Array([6., 6., 6.], dtype=float32)
    """
    return _reduce_tree(psum_p, x, axis_name, axis_index_groups)


def pmax(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The maximum over the members of the named axis, of every leaf of `x`.

    >>> import lamella.core as lc, numpy as np
    >>> lc.vmap(lambda v: pmax(v, "i"), axis_name="i")(np.float32([1, 5, 3]))
    Array([5., 5., 5.], dtype=float32)
    """
    return _reduce_tree(pmax_p, x, axis_name, axis_index_groups)


def pmin(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The minimum over the members of the named axis, of every leaf of `x`.

    >>> import lamella.core as lc, numpy as np
    >>> lc.vmap(lambda v: pmin(v, "i"), axis_name="i")(np.float32([4, 5, 3]))
    Array([3., 3., 3.], dtype=float32)
    """
    return _reduce_tree(pmin_p, x, axis_name, axis_index_groups)


def pmean(x: Any, axis_name: Any, *, axis_index_groups: Any = None) -> Any:
    """The mean over the members of the named axis (integers give floats, as in JAX).

    >>> import lamella.core as lc, numpy as np
    >>> lc.vmap(lambda v: pmean(v, "i"), axis_name="i")(np.float32([1, 2, 6]))
    Array([3., 3., 3.], dtype=float32)
    """
    names = _names(axis_name)
    groups = _groups(axis_index_groups, names, equal=False)
    total = psum(x, names, axis_index_groups=groups)
    # Groups of several sizes: each member divides by its own group's size (JAX divides
    # every member by the first group's).
    uneven = groups is not None and len({len(g) for g in groups}) > 1
    count = psum(np.int32(1), names, axis_index_groups=groups) if uneven else \
        (len(groups[0]) if groups is not None else _size_of(names))

    def mean(v):
        dtype = aval_of(v).dtype
        if not dtypes.is_inexact(dtype):
            v = convert_element_type(v, dtypes.canonicalize_dtype(np.float64))
        dtype = aval_of(v).dtype
        return div(v, convert_element_type(count, dtype) if uneven else np.array(count, dtype))
    return tree_map(mean, total)


# --- axis_index -----------------------------------------------------------------------

axis_index_p = standard_primitive("axis_index")


@axis_index_p.def_abstract_eval
def _axis_index_abstract_eval(*, axis_name):
    _bound_axis_size(axis_name)
    return ShapedArray((), np.dtype(np.int32))


def _axis_index_batch(axis_data, vals, dims, *, axis_name):
    if axis_data.name != axis_name:
        return axis_index_p.bind(axis_name=axis_name), batching.not_mapped
    return iota(np.int32, axis_data.size), 0


batching.fancy_primitive_batchers[axis_index_p] = _axis_index_batch
batching.collective_axis_names[axis_index_p] = lambda params: (params["axis_name"],)


def axis_index(axis_name: Any) -> Any:
    """This member's position along the named axis (int32).

    >>> import lamella.core as lc, numpy as np
    >>> lc.vmap(lambda v: axis_index("i"), axis_name="i")(np.zeros(3))
    Array([0, 1, 2], dtype=int32)
    """
    names = _names(axis_name)
    # Over several names the index is row-major, the last name varying fastest.
    index, stride = None, 1
    for name in reversed(names):
        term = axis_index_p.bind(axis_name=name)
        term = term if stride == 1 else mul(term, np.int32(stride))
        index = term if index is None else add(index, term)
        stride *= _bound_axis_size(name)
    return index


# --- all_gather and psum_scatter ------------------------------------------------------

all_gather_p = standard_primitive("all_gather")
reduce_scatter_p = standard_primitive("reduce_scatter")


@all_gather_p.def_abstract_eval
def _all_gather_abstract_eval(x, *, all_gather_dimension, axis_name, axis_index_groups,
                              axis_size, tiled):
    _size_of(axis_name)
    shape = list(x.shape)
    if tiled:
        shape[all_gather_dimension] *= axis_size
    else:
        shape.insert(all_gather_dimension, axis_size)
    return x.update(shape=tuple(shape))


@reduce_scatter_p.def_abstract_eval
def _reduce_scatter_abstract_eval(x, *, scatter_dimension, axis_name, axis_index_groups,
                                  axis_size, tiled):
    _size_of(axis_name)
    shape = list(x.shape)
    if tiled:
        if shape[scatter_dimension] % axis_size:
            raise ValueError(f"psum_scatter: dimension {scatter_dimension} of size "
                             f"{shape[scatter_dimension]} does not split into {axis_size} "
                             "equal tiles")
        shape[scatter_dimension] //= axis_size
    else:
        if shape[scatter_dimension] != axis_size:
            raise ValueError(f"psum_scatter: dimension {scatter_dimension} has size "
                             f"{shape[scatter_dimension]}, but must equal the axis size "
                             f"{axis_size} (or pass tiled=True)")
        del shape[scatter_dimension]
    return x.update(shape=tuple(shape))


def _merge_axes(x, axis: int):
    """`x` with axes `axis` and `axis + 1` merged into one (row-major)."""
    shape = aval_of(x).shape
    return reshape(x, shape[:axis] + (shape[axis] * shape[axis + 1],) + shape[axis + 2:])


def _split_axis(x, axis: int, parts: int):
    """`x` with axis `axis` split into (parts, size // parts)."""
    shape = aval_of(x).shape
    return reshape(x, shape[:axis] + (parts, shape[axis] // parts) + shape[axis + 1:])


def _move(x, src: int, dst: int):
    return batching.moveaxis(x, src, dst)


def _all_gather_batch(axis_data, vals, dims, *, all_gather_dimension, axis_name,
                      axis_index_groups, axis_size, tiled):
    (x,), (d,) = vals, dims
    if not _ours(axis_data, axis_name):
        x = _front(x, d, axis_data.size)
        return all_gather_p.bind(x, all_gather_dimension=all_gather_dimension + 1,
                                 axis_name=axis_name, axis_index_groups=axis_index_groups,
                                 axis_size=axis_size, tiled=tiled), 0
    _no_groups("all_gather", axis_index_groups)
    x = _move(_gather_members(axis_data, x, d, axis_name), 0, all_gather_dimension)
    return (_merge_axes(x, all_gather_dimension) if tiled else x), batching.not_mapped


def _around(axis_data, names: tuple) -> tuple[tuple, tuple]:
    """The names before ours (more major) and after it (more minor) in `names`."""
    k = names.index(axis_data.name)
    return names[:k], names[k + 1:]


def _gather_members(axis_data, x, d, names: tuple):
    """Every member's `x` stacked along a new first axis, in the row-major order of
    `names` (ours among them): our members are the batch, the others' are gathered by
    the outer transformations, the more minor names first."""
    before, after = _around(axis_data, names)
    x = _front(x, d, axis_data.size)
    member_shape = aval_of(x).shape[1:]
    if after:
        x = all_gather_p.bind(x, all_gather_dimension=1, axis_name=after,
                              axis_index_groups=None, axis_size=_size_of(after), tiled=False)
    if before:
        x = all_gather_p.bind(x, all_gather_dimension=0, axis_name=before,
                              axis_index_groups=None, axis_size=_size_of(before), tiled=False)
    return reshape(x, (_size_of(names),) + member_shape)


def _pick_ours(axis_data, x, names: tuple):
    """From `x` whose first axis runs over every member of `names` (row-major), the
    part each of our members owns: batched along a first axis of our size."""
    before, after = _around(axis_data, names)
    rest = aval_of(x).shape[1:]
    n_before, n_after = _size_of(before), _size_of(after)
    x = reshape(x, (n_before, axis_data.size, n_after) + rest)
    x = dynamic_index_in_dim(x, axis_index(before) if before else np.int32(0), 0,
                             keepdims=False)
    return dynamic_index_in_dim(x, axis_index(after) if after else np.int32(0), 1,
                                keepdims=False)


def _reduce_scatter_batch(axis_data, vals, dims, *, scatter_dimension, axis_name,
                          axis_index_groups, axis_size, tiled):
    (x,), (d,) = vals, dims
    if not _ours(axis_data, axis_name):
        x = _front(x, d, axis_data.size)
        return reduce_scatter_p.bind(x, scatter_dimension=scatter_dimension + 1,
                                     axis_name=axis_name, axis_index_groups=axis_index_groups,
                                     axis_size=axis_size, tiled=tiled), 0
    _no_groups("psum_scatter", axis_index_groups)
    _reduce_scatter_abstract_eval(_member_aval(x, d), scatter_dimension=scatter_dimension,
                                  axis_name=axis_name, axis_index_groups=None,
                                  axis_size=axis_size, tiled=tiled)
    total = (mul(x, np.array(axis_data.size, aval_of(x).dtype)) if d is batching.not_mapped
             else reduce_sum(x, (d,)))
    rest = _rest(axis_data, axis_name)
    if rest:
        (total,) = psum_p.bind(total, axes=rest, axis_index_groups=None)
    if tiled:
        total = _split_axis(total, scatter_dimension, _size_of(axis_name))
    total = _move(total, scatter_dimension, 0)
    if rest:  # each member's part is at its row-major position over all the names
        return _pick_ours(axis_data, total, axis_name), 0
    return total, 0


batching.fancy_primitive_batchers[all_gather_p] = _all_gather_batch
batching.fancy_primitive_batchers[reduce_scatter_p] = _reduce_scatter_batch
batching.collective_axis_names[all_gather_p] = lambda params: params["axis_name"]
batching.collective_axis_names[reduce_scatter_p] = lambda params: params["axis_name"]


def _all_gather_transpose(ct, x, *, all_gather_dimension, axis_name, axis_index_groups,
                          axis_size, tiled):
    return [reduce_scatter_p.bind(ad.instantiate_zeros(ct),
                                  scatter_dimension=all_gather_dimension, axis_name=axis_name,
                                  axis_index_groups=axis_index_groups, axis_size=axis_size,
                                  tiled=tiled)]


def _reduce_scatter_transpose(ct, x, *, scatter_dimension, axis_name, axis_index_groups,
                              axis_size, tiled):
    return [all_gather_p.bind(ad.instantiate_zeros(ct), all_gather_dimension=scatter_dimension,
                              axis_name=axis_name, axis_index_groups=axis_index_groups,
                              axis_size=axis_size, tiled=tiled)]


ad.deflinear2(all_gather_p, _all_gather_transpose)
ad.deflinear2(reduce_scatter_p, _reduce_scatter_transpose)


def _canonical_axis(name: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for an operand of rank {ndim}")
    return axis % ndim


def all_gather(x: Any, axis_name: Any, *, axis_index_groups: Any = None, axis: int = 0,
               tiled: bool = False, to: str = "varying") -> Any:
    """Every member's value, stacked along a new axis `axis` (concatenated along the
    existing axis `axis` with `tiled=True`), for every leaf of `x`.

    >>> import lamella.core as lc, numpy as np
    >>> lc.vmap(lambda v: all_gather(v, "i"), axis_name="i")(np.float32([1, 2]))
    Array([[1., 2.],
           [1., 2.]], dtype=float32)
    """
    names = _names(axis_name)
    groups = _groups(axis_index_groups, names, equal=True)
    n = len(groups[0]) if groups is not None else _size_of(names)

    def gather(v):
        ndim = aval_of(v).ndim
        dim = _canonical_axis("all_gather", int(axis), ndim if tiled else ndim + 1)
        return all_gather_p.bind(v, all_gather_dimension=dim, axis_name=names,
                                 axis_index_groups=groups, axis_size=n, tiled=tiled)
    return tree_map(gather, x)


def psum_scatter(x: Any, axis_name: Any, *, scatter_dimension: int = 0,
                 axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """The psum of `x`, of which member i keeps the i-th slice along `scatter_dimension`
    (the i-th of equal tiles with `tiled=True`).

    >>> import lamella.core as lc, numpy as np
    >>> lc.vmap(lambda v: psum_scatter(v, "i"), axis_name="i")(np.float32([[1, 2], [3, 4]]))
    Array([4., 6.], dtype=float32)
    """
    names = _names(axis_name)
    groups = _groups(axis_index_groups, names, equal=True)
    n = len(groups[0]) if groups is not None else _size_of(names)
    _one_state("psum_scatter", tree_flatten(x)[0], names)

    def scatter(v):
        dim = _canonical_axis("psum_scatter", int(scatter_dimension), aval_of(v).ndim)
        return reduce_scatter_p.bind(v, scatter_dimension=dim, axis_name=names,
                                     axis_index_groups=groups, axis_size=n, tiled=tiled)
    return tree_map(scatter, x)


# --- all_to_all -----------------------------------------------------------------------

all_to_all_p = standard_primitive("all_to_all")


@all_to_all_p.def_abstract_eval
def _all_to_all_abstract_eval(x, *, split_axis, concat_axis, axis_name, axis_index_groups,
                              tiled):
    n = len(axis_index_groups[0]) if axis_index_groups is not None else \
        _size_of(_names(axis_name))
    shape = list(x.shape)
    if tiled:
        if shape[split_axis] % n:
            raise ValueError(f"all_to_all: split axis {split_axis} of size {shape[split_axis]}"
                             f" does not split into {n} equal chunks")
        shape[split_axis] //= n
        shape[concat_axis] *= n
    else:
        if shape[split_axis] != n:
            raise ValueError(f"all_to_all: split axis {split_axis} has size "
                             f"{shape[split_axis]}, but must equal the axis size {n} "
                             "(or pass tiled=True)")
        del shape[split_axis]
        shape.insert(concat_axis, n)
    return x.update(shape=tuple(shape))


def _all_to_all_batch(axis_data, vals, dims, *, split_axis, concat_axis, axis_name,
                      axis_index_groups, tiled):
    (x,), (d,) = vals, dims
    if axis_data.name in _names(axis_name):
        _all_to_all_abstract_eval(_member_aval(x, d), split_axis=split_axis,
                                  concat_axis=concat_axis, axis_name=axis_name,
                                  axis_index_groups=None, tiled=tiled)
    x = _front(x, d, axis_data.size)
    if axis_data.name not in _names(axis_name):
        return all_to_all_p.bind(x, split_axis=split_axis + 1, concat_axis=concat_axis + 1,
                                 axis_name=axis_name, axis_index_groups=axis_index_groups,
                                 tiled=tiled), 0
    _no_groups("all_to_all", axis_index_groups)
    n = axis_data.size
    # x is (source member, *value): the chunk index along the split axis is the
    # destination member; the source member becomes the concatenated position.
    if tiled:
        x = _split_axis(x, 1 + split_axis, n)      # (src, ..., dst, chunk, ...)
        x = _move(x, 1 + split_axis, 0)            # (dst, src, ..., chunk, ...)
        x = _move(x, 1, 1 + concat_axis)           # src just before the concat axis
        return _merge_axes(x, 1 + concat_axis), 0
    x = _move(x, 1 + split_axis, 0)                # (dst, src, rest without the split axis)
    return _move(x, 1, 1 + concat_axis), 0


def _all_to_all_transpose(ct, x, *, split_axis, concat_axis, axis_name, axis_index_groups,
                          tiled):
    return [all_to_all_p.bind(ad.instantiate_zeros(ct), split_axis=concat_axis,
                              concat_axis=split_axis, axis_name=axis_name,
                              axis_index_groups=axis_index_groups, tiled=tiled)]


batching.fancy_primitive_batchers[all_to_all_p] = _all_to_all_batch
batching.collective_axis_names[all_to_all_p] = lambda params: _names(params["axis_name"])
ad.deflinear2(all_to_all_p, _all_to_all_transpose)


def all_to_all(x: Any, axis_name: Any, split_axis: int, concat_axis: int, *,
               axis_index_groups: Any = None, tiled: bool = False) -> Any:
    """Member i sends the j-th chunk of `x` along `split_axis` to member j, and receives
    the chunks of all members along `concat_axis` (a new axis unless `tiled`).

    >>> import lamella.core as lc, numpy as np
    >>> lc.vmap(lambda v: all_to_all(v, "i", 0, 0), axis_name="i")(
    ...     np.float32([[1, 2], [3, 4]]))
    Array([[1., 3.],
           [2., 4.]], dtype=float32)
    """
    names = _names(axis_name)
    groups = _groups(axis_index_groups, names, equal=True)

    def exchange(v):
        ndim = aval_of(v).ndim
        split = _canonical_axis("all_to_all", int(split_axis), ndim)
        concat = _canonical_axis("all_to_all", int(concat_axis), ndim)
        return all_to_all_p.bind(v, split_axis=split, concat_axis=concat,
                                 axis_name=names if len(names) > 1 else names[0],
                                 axis_index_groups=groups, tiled=tiled)
    return tree_map(exchange, x)


# --- ppermute -------------------------------------------------------------------------

ppermute_p = standard_primitive("ppermute")


@ppermute_p.def_abstract_eval
def _ppermute_abstract_eval(x, *, axis_name, perm):
    n = _size_of(axis_name)
    sources, dests = [s for s, _ in perm], [d for _, d in perm]
    if any(not 0 <= i < n for i in sources + dests):
        raise ValueError(f"ppermute: the permutation {list(perm)} names members outside the "
                         f"axis of size {n}")
    if len(set(sources)) != len(sources) or len(set(dests)) != len(dests):
        raise ValueError(f"ppermute: {list(perm)} is not a permutation: each member may send "
                         "once and receive once")
    return x


def _ppermute_batch(axis_data, vals, dims, *, axis_name, perm):
    (x,), (d,) = vals, dims
    if not _ours(axis_data, axis_name):
        return ppermute_p.bind(x, axis_name=axis_name, perm=perm), d
    _ppermute_abstract_eval(_member_aval(x, d), axis_name=axis_name, perm=perm)
    if len(axis_name) > 1:
        return _ppermute_several(axis_data, x, d, axis_name, perm), 0
    x = _front(x, d, axis_data.size)
    source_of = {dst: src for src, dst in perm}
    # Members that receive nothing get zeros, as with pmap.
    zero = zeros_like_array(slice_in_dim(x, 0, 1, axis=0))
    pieces = [slice_in_dim(x, source_of[i], source_of[i] + 1, axis=0) if i in source_of
              else zero for i in range(axis_data.size)]
    return concatenate(pieces, 0), 0


def _ppermute_several(axis_data, x, d, names: tuple, perm):
    # Over several names a member's source depends on its position along the outer
    # names too: every member's value is gathered, and each of ours picks its source's
    # with a one-hot row (all zeros where nothing is sent to it).
    everyone = _gather_members(axis_data, x, d, names)
    n = _size_of(names)
    source_of = np.full(n, -1, np.int32)
    for src, dst in perm:
        source_of[dst] = src
    sources = _pick_ours(axis_data, source_of, names)  # [our size] int32
    dtype = aval_of(everyone).dtype
    work = np.dtype(np.int32) if dtype == np.dtype(bool) else dtype
    one_hot = convert_element_type(
        eq(broadcast_in_dim(sources, (axis_data.size, n), (0,)),
           broadcast_in_dim(iota(np.int32, n), (axis_data.size, n), (1,))), work)
    member_shape = aval_of(everyone).shape[1:]
    full = (axis_data.size, n) + member_shape
    picked = reduce_sum(mul(
        broadcast_in_dim(one_hot, full, (0, 1)),
        broadcast_in_dim(convert_element_type(everyone, work), full,
                         tuple(range(1, len(full))))), (1,))
    return convert_element_type(picked, dtype)


batching.fancy_primitive_batchers[ppermute_p] = _ppermute_batch
batching.collective_axis_names[ppermute_p] = lambda params: params["axis_name"]
ad.deflinear2(ppermute_p, lambda ct, x, *, axis_name, perm: [ppermute_p.bind(
    ad.instantiate_zeros(ct), axis_name=axis_name, perm=tuple((d, s) for s, d in perm))])


def ppermute(x: Any, axis_name: Any, perm: Sequence[tuple[int, int]]) -> Any:
    """Sends each member's `x` to another: `(source, destination)` pairs; a member no
    pair sends to receives zeros.

    >>> import lamella.core as lc, numpy as np
    >>> lc.vmap(lambda v: ppermute(v, "i", [(0, 1), (1, 2), (2, 0)]), axis_name="i")(
    ...     np.float32([1, 2, 3]))
    Array([3., 1., 2.], dtype=float32)
    """
    names = _names(axis_name)
    pairs = tuple((int(s), int(d)) for s, d in perm)
    return tree_map(lambda v: ppermute_p.bind(v, axis_name=names, perm=pairs), x)


def pshuffle(x: Any, axis_name: Any, perm: Sequence[int]) -> Any:
    """Member i receives the value of member `perm[i]` (`perm` a permutation of the axis).

    >>> import lamella.core as lc, numpy as np
    >>> lc.vmap(lambda v: pshuffle(v, "i", [2, 0, 1]), axis_name="i")(np.float32([1, 2, 3]))
    Array([3., 1., 2.], dtype=float32)
    """
    perm = [int(p) for p in perm]
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"pshuffle: {perm} is not a permutation of 0..{len(perm) - 1}")
    return ppermute(x, axis_name, [(src, dst) for dst, src in enumerate(perm)])


def pswapaxes(x: Any, axis_name: Any, axis: int, *, axis_index_groups: Any = None) -> Any:
    """Swaps the named axis with the positional axis `axis` of `x` (an all_to_all), whose
    size must equal the named axis's.

    >>> import lamella.core as lc, numpy as np
    >>> lc.vmap(lambda v: pswapaxes(v, "i", 0), axis_name="i")(np.float32([[1, 2], [3, 4]]))
    Array([[1., 3.],
           [2., 4.]], dtype=float32)
    """
    return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)


# --- varying manual axes --------------------------------------------------------------
# Inside a shard_map body typed with vma (see `varying_axes`): a reduction is the same
# on every member of its axes; a value gathered, scattered, exchanged or permuted over
# axes differs between their members, as does a member's index.

vma_rules[psum_p] = invariant_over("axes")
vma_rules[pmax_p] = invariant_over("axes")
vma_rules[pmin_p] = invariant_over("axes")
for _prim in (all_gather_p, reduce_scatter_p, all_to_all_p, ppermute_p):
    vma_rules[_prim] = varying_over("axis_name")
vma_rules[axis_index_p] = lambda *, axis_name: frozenset((axis_name,))

pvary_p = standard_primitive("pvary")


@pvary_p.def_abstract_eval
def _pvary_abstract_eval(x, *, axes):
    _size_of(axes)
    return x


vma_rules[pvary_p] = varying_over("axes")
batching.primitive_batchers[pvary_p] = lambda vals, dims, *, axes: (
    pvary_p.bind(vals[0], axes=axes), dims[0])
# The same value on every member: a replicated shard_map input's cotangents are summed
# over its axes where the region ends, so here each member keeps its own.
ad.deflinear2(pvary_p, lambda ct, x, *, axes: [ad.instantiate_zeros(ct)])

_PCAST_TO = ("varying", "reduced", "unreduced")


def pcast(x: Any, axis_name: Any, *, to: str) -> Any:
    """Changes how each leaf of `x` is typed over the manual axes `axis_name` (a name or
    a tuple of names) inside shard_map: `to="varying"` marks a value that is the same
    on every member (invariant) as varying over them, without moving data; its type
    shows them (`float32[]{V:x}`). Outside a body typed with vma it is the identity.

    >>> import lamella.core as lc, numpy as np
    >>> from lamella.core.sharding import P, make_mesh
    >>> body = lambda b: (print(lc.typeof(pcast(np.float32(1), "x", to="varying"))), b)[1]
    >>> _ = lc.shard_map(body, mesh=make_mesh((1,), ("x",)), in_specs=P("x"),
    ...                  out_specs=P("x"))(np.zeros(2, np.float32))
    float32[]{V:x}
    """
    if isinstance(axis_name, (set, frozenset)):
        raise TypeError(f"axis_name={axis_name!r} must be a tuple or a str. Got {axis_name}")
    axes = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
    if not axes:
        return x
    if to not in _PCAST_TO:
        raise ValueError(f"Got unexpected `to` value. Allowed `to` values are: "
                         f"{set(_PCAST_TO)}")
    def cast(leaf):
        _size_of(axes)
        vma = aval_of(leaf).vma
        state = ("varying" if all(a in vma for a in axes)
                 else "invarying" if not any(a in vma for a in axes) else "mixed")
        if state != "invarying" or to != "varying":
            # Reduced and unreduced values belong to Explicit meshes' shard_maps.
            raise ValueError(f"Unsupported pcast from={state}, to={to!r}")
        return pvary_p.bind(leaf, axes=axes) if typing_on() else leaf
    return tree_map(cast, x)
