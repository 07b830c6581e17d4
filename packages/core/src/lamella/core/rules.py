"""The rule tables every transformation reads, and the helpers rules are written with.

A transformation interprets a primitive by looking its rule up in a table here:

    primitive_jvps[p](primals, tangents, **params) -> (primal_out, tangent_out)
    primitive_transposes[p](cotangent_out, *args, **params) -> one cotangent per arg
    primitive_batchers[p](args, dims, **params) -> (out, out_dim)
    fancy_primitive_batchers[p](axis_data, args, dims, **params) -> (out, out_dim)

Tangents known to be zero are the symbolic `Zero(aval)`; the linear inputs of
a transpose rule are `UndefinedPrimal`s; a value shared by a whole batch has
batch dim `not_mapped`. The interpreters that apply these rules are `ad.py`
(JVP and transposition) and `batching.py` (vmap); `ad` and `batching` also
re-export the names here, as JAX's `jax.interpreters` modules do.

Rules build results from a few structural operations: adding tangents, making
zeros, moving a batch axis. Their primitives are declared here and defined
(impls, shape rules and their own rules) in `structural.py`, so that
structural.py can write its rules with these helpers without an import cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from lamella.core import dtypes
from lamella.core.avals import ShapedArray
from lamella.core.primitive import Primitive
from lamella.core.trace import aval_of

primitive_jvps: dict[Primitive, Callable] = {}
primitive_transposes: dict[Primitive, Callable] = {}
primitive_batchers: dict[Primitive, Callable] = {}
fancy_primitive_batchers: dict[Primitive, Callable] = {}
"""Batching rules that need the axis itself (its size or name, for collectives)."""
collective_axis_names: dict[Primitive, Callable[[dict], tuple]] = {}
"""For a collective primitive, the named axes it acts over, read from its params. A
vmap over one of those axes applies the primitive's fancy batching rule even when no
operand is batched (`psum(1, 'i')` is the axis size; `axis_index('i')` has no operand)."""

# Declared here, defined in structural.py (see the module docstring).
add_any_p = Primitive("add_any")
broadcast_in_dim_p = Primitive("broadcast_in_dim")
reshape_p = Primitive("reshape")
transpose_p = Primitive("transpose")
reduce_sum_p = Primitive("reduce_sum")


# ---------------------------------------------------------------------------
# Symbolic zeros and undefined primals (autodiff).


class Zero:
    """A symbolic zero tangent or cotangent of the given aval."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    @staticmethod
    def from_primal_value(x: Any) -> Zero:
        return Zero(aval_of(x).to_tangent_aval())

    def __repr__(self) -> str:
        return f"Zero({self.aval.str_short()})"


class UndefinedPrimal:
    """Stands for a linear input of a transpose rule: only its aval is known."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined_primal(x: Any) -> bool:
    return type(x) is UndefinedPrimal


def scalar_like(value: complex, aval: ShapedArray) -> Any:
    """`value` as a scalar of `aval`'s dtype and weak type: a Python number for weakly
    typed avals of a Python scalar's dtype (so it stays weak, and stages as a literal),
    else a NumPy scalar."""
    if aval.weak_type:
        for python_type in (int, float, complex):
            if dtypes.python_scalar_dtype(python_type(0)) == aval.dtype:
                return python_type(value)
    return np.asarray(value, aval.dtype)[()]


def zeros_like_aval(aval: ShapedArray) -> Any:
    """An array of zeros, built on the current trace (a broadcast of a scalar)."""
    if aval.dtype == dtypes.float0:
        return np.zeros(aval.shape, dtypes.float0)
    zero = scalar_like(0, aval)
    if not aval.shape:
        return zero
    zeros = broadcast_in_dim_p.bind(zero, shape=aval.shape, broadcast_dimensions=())
    sharding = getattr(aval, "sharding", None)
    if sharding is None:
        return zeros
    # Zeros of an explicitly sharded type are laid out as it says (JAX): a transpose
    # that updates them with a sharded cotangent (dynamic_slice's) needs equal layouts.
    return constrain_layout(zeros, sharding)


def _no_layouts(value: Any, sharding: Any) -> Any:
    raise RuntimeError("a sharded type met before lamella.core.sharding was imported")


# Installed by lamella.core.sharding (which imports this module): (value, sharding) ->
# the value laid out as the sharding says, a sharding constraint.
constrain_layout: Callable[[Any, Any], Any] = _no_layouts


def instantiate_zeros(tangent: Any) -> Any:
    """`tangent`, with a symbolic Zero replaced by an array of zeros."""
    return zeros_like_aval(tangent.aval) if type(tangent) is Zero else tangent


def add_tangents(x: Any, y: Any) -> Any:
    """Adds two tangents, either of which may be a symbolic Zero."""
    if type(x) is Zero:
        return y
    if type(y) is Zero:
        return x
    return add_any_p.bind(x, y)


# ---------------------------------------------------------------------------
# JVP and transpose rule helpers.


def defjvp(primitive: Primitive, *jvp_fns: Callable | None) -> None:
    """JVP from one function per operand: `jvp_fns[i](tangent_i, *primals, **params)`
    gives operand i's contribution to the output tangent (None: not differentiable)."""
    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        tangent_out = Zero.from_primal_value(out)
        for fn, t in zip(jvp_fns, tangents):
            if fn is not None and type(t) is not Zero:
                tangent_out = add_tangents(tangent_out, fn(t, *primals, **params))
        return out, tangent_out
    primitive_jvps[primitive] = rule


def defjvp2(primitive: Primitive, *jvp_fns: Callable | None) -> None:
    """Like `defjvp`, but each function also gets the primal output first:
    `jvp_fns[i](tangent_i, out, *primals, **params)`."""
    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        tangent_out = Zero.from_primal_value(out)
        for fn, t in zip(jvp_fns, tangents):
            if fn is not None and type(t) is not Zero:
                tangent_out = add_tangents(tangent_out, fn(t, out, *primals, **params))
        return out, tangent_out
    primitive_jvps[primitive] = rule


def defjvp_zero(primitive: Primitive) -> None:
    """The primitive's output has a zero derivative (comparisons, rounding ...)."""
    def rule(primals, tangents, **params):
        out = primitive.bind(*primals, **params)
        if primitive.multiple_results:
            return out, [Zero.from_primal_value(o) for o in out]
        return out, Zero.from_primal_value(out)
    primitive_jvps[primitive] = rule


def linear_jvp(primitive: Primitive, primals, tangents, **params):
    """The JVP of a primitive linear in all its operands: the primitive itself."""
    out = primitive.bind(*primals, **params)
    tangent_out = primitive.bind(*map(instantiate_zeros, tangents), **params)
    return out, tangent_out


def defbilinear(prim: Primitive, lhs_rule: Callable, rhs_rule: Callable) -> None:
    """A primitive linear in each of its two operands separately (a product): the JVP is
    `prim(dx, y) + prim(x, dy)`; `lhs_rule(ct, x, y, **params)` is the cotangent of x
    when x is the linear input, `rhs_rule(ct, x, y, **params)` that of y."""
    def jvp(primals, tangents, **params):
        x, y = primals
        dx, dy = tangents
        out = prim.bind(x, y, **params)
        t = Zero.from_primal_value(out)
        if type(dx) is not Zero:
            t = add_tangents(t, prim.bind(dx, y, **params))
        if type(dy) is not Zero:
            t = add_tangents(t, prim.bind(x, dy, **params))
        return out, t

    def transpose(ct, x, y, **params):
        if type(ct) is Zero:
            return [None, None]
        if is_undefined_primal(x) and is_undefined_primal(y):
            raise TypeError(f"{prim.name} is bilinear: transposing it needs one operand known")
        if is_undefined_primal(x):
            return [lhs_rule(ct, x, y, **params), None]
        return [None, rhs_rule(ct, x, y, **params)]
    primitive_jvps[prim] = jvp
    primitive_transposes[prim] = transpose


def get_primitive_transpose(p: Primitive) -> Callable:
    """`p`'s transpose rule; NotImplementedError naming `p` if it has none."""
    try:
        return primitive_transposes[p]
    except KeyError:
        raise NotImplementedError(f"Transpose rule (for reverse-mode differentiation) for "
                                  f"'{p}' not implemented") from None


def add_jaxvals(x: Any, y: Any) -> Any:
    """`x + y` for tangents and cotangents (the `add_any` primitive)."""
    return add_any_p.bind(x, y)


add_jaxvals_p = add_any_p


def deflinear(primitive: Primitive, transpose_rule: Callable) -> None:
    """A primitive linear in all its operands; `transpose_rule(ct, **params)`
    returns the cotangents of the operands."""
    primitive_jvps[primitive] = lambda p, t, **params: linear_jvp(primitive, p, t, **params)
    primitive_transposes[primitive] = (
        lambda ct, *args, **params: transpose_rule(ct, **params))


def deflinear2(primitive: Primitive, transpose_rule: Callable) -> None:
    """Like `deflinear`, but `transpose_rule(ct, *args, **params)` also sees the
    operands (as `UndefinedPrimal`s, which carry their avals)."""
    primitive_jvps[primitive] = lambda p, t, **params: linear_jvp(primitive, p, t, **params)
    primitive_transposes[primitive] = transpose_rule


# ---------------------------------------------------------------------------
# Batching: axes and rule helpers.

not_mapped = None
"""The batch dim of a value that is the same for every batch element."""


class AxisData(NamedTuple):
    """The axis being vmapped over: its name (for collectives) and size."""

    name: Any
    size: int
    spmd_name: Any = None


def moveaxis(x: Any, src: int, dst: int) -> Any:
    """`x` with axis `src` moved to position `dst`."""
    if src == dst:
        return x
    ndim = aval_of(x).ndim
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return transpose_p.bind(x, permutation=tuple(perm))


def broadcast(x: Any, sz: int, axis: int, mesh_axis: Any = None) -> Any:
    """Adds an axis of length `sz` at `axis`, repeating `x` along it (`mesh_axis`, for a
    batch axis sharded over devices, must be None: one device)."""
    if mesh_axis is not None:
        raise ValueError("broadcast: mesh_axis needs a sharded batch axis; lamella runs "
                         "on one device, so it must be None.")
    aval = aval_of(x)
    shape = aval.shape[:axis] + (sz,) + aval.shape[axis:]
    dims = tuple(i if i < axis else i + 1 for i in range(aval.ndim))
    return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=dims)


def matchaxis(size: int, src: int | None, dst: int | None, x: Any,
              sum_match: bool = False) -> Any:
    """Moves (or creates, or sums away with `sum_match`) a batch axis from src to dst."""
    if src == dst:
        return x
    if src is not_mapped:
        return broadcast(x, size, dst)
    if dst is not_mapped:
        if sum_match:
            return reduce_sum_p.bind(x, axes=(src,), out_sharding=None)
        raise ValueError(f"can't match a batched axis {src} to an unbatched value")
    return moveaxis(x, src, dst)


def at_front(x: Any, dim: int | None, size: int) -> Any:
    """`x` with its batch axis at 0, broadcasting unbatched values."""
    return matchaxis(size, dim, 0, x)


def defvectorized(prim: Primitive) -> None:
    """Batching for primitives that act elementwise on one operand."""
    def rule(args, dims, **params):
        (x,), (d,) = args, dims
        return prim.bind(x, **params), d
    primitive_batchers[prim] = rule


def defbroadcasting(prim: Primitive) -> None:
    """Batching for n-ary primitives with NumPy broadcasting semantics.

    Batched operands get their batch axis at the front, padded with size-1 axes
    to a common rank; unbatched operands are left for broadcasting to align.
    """
    def rule(args, dims, **params):
        ranks = [aval_of(x).ndim - (d is not not_mapped) for x, d in zip(args, dims)]
        rank = max(ranks)
        aligned = []
        for x, d, r in zip(args, dims, ranks):
            if d is not_mapped:
                aligned.append(x)
                continue
            x = moveaxis(x, d, 0)
            if r < rank:
                shape = aval_of(x).shape
                x = reshape_p.bind(x, new_sizes=(shape[0],) + (1,) * (rank - r) + shape[1:],
                                   dimensions=None)
            aligned.append(x)
        out = prim.bind(*aligned, **params)
        if prim.multiple_results:
            return out, [0] * len(out)
        return out, 0
    primitive_batchers[prim] = rule
