"""Joining and repeating arrays along new or existing axes: stack, unstack, tile.

Each is a primitive (as in JAX), linear in its operands, with its rules in the
order abstract eval, JVP (linearity) and transpose, batching, lowering:

- `stack(operands, axis)` joins arrays of one shape along a new axis, and
  transposes to `unstack` of the cotangent;
- `unstack(x, axis)` splits `x` into the slices along `axis`, and transposes
  to `stack`;
- `tile(x, reps)` repeats `x` `reps[i]` times along each axis i, and
  transposes to a sum over the repeats.

>>> import numpy as np
>>> stack([np.float32([1, 2]), np.float32([3, 4])], axis=1)
Array([[1., 3.],
       [2., 4.]], dtype=float32)
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from lamella.core import ShapedArray, ad, batching
from lamella.core.structural import reduce_sum, reshape
from lamella.core.trace import aval_of
from lamella.lax.lowering import aval_to_ir_type, hlo, register_lowering
from lamella.lax.standard import check_same_dtypes, standard_primitive

__all__ = ["stack", "stack_p", "tile", "tile_p", "unstack", "unstack_p"]


def _axis(axis: int, ndim: int, name: str) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}: axis {axis} is out of bounds for rank {ndim}")
    return axis % ndim


# --- stack --------------------------------------------------------------------
stack_p = standard_primitive("stack")


def stack(operands: Sequence[Any], axis: int = 0) -> Any:
    """Joins arrays of one shape and dtype along a new axis `axis`.

    >>> import numpy as np
    >>> stack([np.zeros(3, np.float32)] * 2).shape
    (2, 3)
    """
    operands = list(operands)
    if not operands:
        raise ValueError("stack expects at least one operand, got 0.")
    ndim = aval_of(operands[0]).ndim
    return stack_p.bind(*operands, axis=_axis(int(axis), ndim + 1, "stack"))


@stack_p.def_abstract_eval
def _stack_abstract_eval(*avals: ShapedArray, axis: int) -> ShapedArray:
    if len({a.ndim for a in avals}) != 1:
        raise ValueError("Cannot stack arrays with different numbers of dimensions: got "
                         f"{', '.join(str(a.shape) for a in avals)}.")
    if len({a.shape for a in avals}) != 1:
        raise ValueError("All input arrays must have the same shape. Got "
                         f"{', '.join(str(a.shape) for a in avals)}.")
    check_same_dtypes("stack", *avals)
    shape = list(avals[0].shape)
    shape.insert(axis, len(avals))
    return ShapedArray(tuple(shape), avals[0].dtype, all(a.weak_type for a in avals))


def _stack_transpose(ct, *operands, axis):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval) if ad.is_undefined_primal(x) else None for x in operands]
    parts = unstack_p.bind(ct, axis=axis)
    return [p if ad.is_undefined_primal(x) else None for p, x in zip(parts, operands)]


def _stack_batch(args, dims, *, axis):
    size = next(aval_of(x).shape[d] for x, d in zip(args, dims) if d is not None)
    args = [batching.at_front(x, d, size) for x, d in zip(args, dims)]
    return stack_p.bind(*args, axis=axis + 1), 0


def _stack_lowering(ctx, *xs, axis):
    out = ctx.avals_out[0]
    piece = aval_to_ir_type(out.update(shape=out.shape[:axis] + (1,) + out.shape[axis + 1:]))
    kept = [d for d in range(out.ndim) if d != axis]
    return [hlo.concatenate([hlo.broadcast_in_dim(piece, x, kept) for x in xs], axis)]


ad.primitive_jvps[stack_p] = lambda primals, tangents, **params: ad.linear_jvp(
    stack_p, primals, tangents, **params)
ad.primitive_transposes[stack_p] = _stack_transpose
batching.primitive_batchers[stack_p] = _stack_batch
register_lowering(stack_p, _stack_lowering)

# --- unstack ------------------------------------------------------------------
unstack_p = standard_primitive("unstack", multiple_results=True)


def unstack(x: Any, axis: int = 0) -> tuple[Any, ...]:
    """The slices of `x` along `axis`, as a tuple of arrays without that axis.

    >>> import numpy as np
    >>> unstack(np.float32([[1, 2], [3, 4]]), axis=1)
    (Array([1., 3.], dtype=float32), Array([2., 4.], dtype=float32))
    """
    ndim = aval_of(x).ndim
    return tuple(unstack_p.bind(x, axis=_axis(int(axis), ndim, "unstack")))


@unstack_p.def_abstract_eval
def _unstack_abstract_eval(x: ShapedArray, *, axis: int) -> list[ShapedArray]:
    part = x.update(shape=x.shape[:axis] + x.shape[axis + 1:])
    return [part] * x.shape[axis]


def _unstack_transpose(cts, x, *, axis):
    aval = x.aval
    part = aval.update(shape=aval.shape[:axis] + aval.shape[axis + 1:])
    if all(type(ct) is ad.Zero for ct in cts):
        return [ad.Zero(aval)]
    cts = [ad.zeros_like_aval(part) if type(ct) is ad.Zero else ct for ct in cts]
    return [stack_p.bind(*cts, axis=axis)]


def _unstack_batch(args, dims, *, axis):
    (x,), (d,) = args, dims
    x = batching.moveaxis(x, d, 0)
    return unstack_p.bind(x, axis=axis + 1), [0] * aval_of(x).shape[axis + 1]


def _unstack_lowering(ctx, x, *, axis):
    aval = ctx.avals_in[0]
    limits = list(aval.shape)
    outs = []
    for i, out in enumerate(ctx.avals_out):
        start = [0] * aval.ndim
        start[axis], limits[axis] = i, i + 1
        piece = hlo.slice(x, start, list(limits), [1] * aval.ndim)
        outs.append(hlo.reshape(aval_to_ir_type(out), piece))
    return outs


ad.primitive_jvps[unstack_p] = lambda primals, tangents, **params: ad.linear_jvp(
    unstack_p, primals, tangents, **params)
ad.primitive_transposes[unstack_p] = _unstack_transpose
batching.primitive_batchers[unstack_p] = _unstack_batch
register_lowering(unstack_p, _unstack_lowering)

# --- tile ---------------------------------------------------------------------
tile_p = standard_primitive("tile")


def tile(operand: Any, reps: Sequence[int]) -> Any:
    """`operand` repeated `reps[i]` times along each axis i (one rep per axis).

    >>> import numpy as np
    >>> tile(np.float32([[1, 2]]), (2, 2))
    Array([[1., 2., 1., 2.],
           [1., 2., 1., 2.]], dtype=float32)
    """
    try:
        reps = tuple(operator.index(r) for r in reps)
    except TypeError:
        raise TypeError(f"tile: reps must be a sequence of integers, got {reps!r}") from None
    return tile_p.bind(operand, reps=reps)


@tile_p.def_abstract_eval
def _tile_abstract_eval(x: ShapedArray, *, reps) -> ShapedArray:
    if len(reps) != x.ndim:
        raise ValueError(f"tile: reps {reps} must have one entry per axis of the operand "
                         f"of shape {x.shape}")
    if any(r < 0 for r in reps):
        raise ValueError(f"tile: reps {reps} must be non-negative")
    return x.update(shape=tuple(d * r for d, r in zip(x.shape, reps)))


def _interleaved(shape: Sequence[int], reps: Sequence[int]) -> tuple[int, ...]:
    """(r0, d0, r1, d1, ...): the tiled array with each repeat count on its own axis."""
    return tuple(n for r, d in zip(reps, shape) for n in (r, d))


def _tile_transpose(ct, x, *, reps):
    if type(ct) is ad.Zero:
        return [ad.Zero(x.aval)]
    summed = reduce_sum(reshape(ct, _interleaved(x.aval.shape, reps)),
                        tuple(range(0, 2 * len(reps), 2)))
    return [summed]


def _tile_batch(args, dims, *, reps):
    (x,), (d,) = args, dims
    return tile_p.bind(batching.moveaxis(x, d, 0), reps=(1, *reps)), 0


def _tile_lowering(ctx, x, *, reps):
    aval = ctx.avals_in[0]
    wide = aval_to_ir_type(aval.update(shape=_interleaved(aval.shape, reps)))
    spread = hlo.broadcast_in_dim(wide, x, list(range(1, 2 * aval.ndim, 2)))
    return [hlo.reshape(aval_to_ir_type(ctx.avals_out[0]), spread)]


ad.primitive_jvps[tile_p] = lambda primals, tangents, **params: ad.linear_jvp(
    tile_p, primals, tangents, **params)
ad.primitive_transposes[tile_p] = _tile_transpose
batching.primitive_batchers[tile_p] = _tile_batch
register_lowering(tile_p, _tile_lowering)
