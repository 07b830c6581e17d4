"""The primitives that the transformations themselves emit.

Autodiff adds tangents (`add_any`) and makes zeros (`broadcast_in_dim` of a
scalar); vmap moves and creates batch axes (`transpose`, `broadcast_in_dim`,
`reshape`) and sums them away (`reduce_sum`); `stop_gradient` cuts a
derivative. Core defines them, with NumPy impls and every rule, so the
transformations work with no compiler; lamella.lax re-exports them under
`lamella.lax` and adds their lowerings. The first five are declared in
`rules.py`, whose helpers emit them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core import dtypes
from lamella.core.avals import ShapedArray
from lamella.core.config import config
from lamella.core.jaxpr import pp_eqn, pp_eqn_rules
from lamella.core.primitive import Primitive
from lamella.core.rules import (
    add_any_p,
    add_tangents,
    at_front,
    broadcast_in_dim_p,
    defjvp_zero,
    deflinear2,
    defvectorized,
    moveaxis,
    primitive_batchers,
    primitive_jvps,
    primitive_transposes,
    reduce_sum_p,
    reshape_p,
    transpose_p,
)
from lamella.core.trace import aval_of
from lamella.core.tree_util import tree_map


def _shape_error(name: str, message: str) -> TypeError:
    return TypeError(f"{name}: {message}")


# --- add_any: tangent accumulation -----------------------------------------

add_any_p.def_impl(lambda x, y: np.add(x, y, dtype=np.result_type(x, y)))


@add_any_p.def_abstract_eval
def _add_any_abstract_eval(x: ShapedArray, y: ShapedArray) -> ShapedArray:
    if x.shape != y.shape or x.dtype != y.dtype:
        raise _shape_error("add_any", f"operands must have equal types, got {x.str_short()} "
                                      f"and {y.str_short()}")
    return x.update(weak_type=x.weak_type and y.weak_type)


def _add_any_jvp(primals, tangents):
    return add_any_p.bind(*primals), add_tangents(*tangents)


def _add_any_batch(args, dims):
    (x, y), (dx, dy) = args, dims
    size = aval_of(x).shape[dx] if dx is not None else aval_of(y).shape[dy]
    return add_any_p.bind(at_front(x, dx, size), at_front(y, dy, size)), 0


primitive_jvps[add_any_p] = _add_any_jvp
primitive_transposes[add_any_p] = lambda ct, x, y: [ct, ct]
primitive_batchers[add_any_p] = _add_any_batch


# --- broadcast_in_dim --------------------------------------------------------


def broadcast_in_dim(x: Any, shape: Sequence[int], broadcast_dimensions: Sequence[int]) -> Any:
    """Broadcasts `x` to `shape`, operand axis i becoming axis broadcast_dimensions[i]."""
    return broadcast_in_dim_p.bind(x, shape=tuple(shape),
                                   broadcast_dimensions=tuple(broadcast_dimensions))


@broadcast_in_dim_p.def_impl
def _broadcast_in_dim_impl(x, *, shape, broadcast_dimensions):
    x = np.asarray(x)
    expanded = [1] * len(shape)
    for src, dst in enumerate(broadcast_dimensions):
        expanded[dst] = x.shape[src]
    return np.broadcast_to(x.reshape(expanded), shape)


@broadcast_in_dim_p.def_abstract_eval
def _broadcast_in_dim_abstract_eval(x: ShapedArray, *, shape, broadcast_dimensions):
    if any(d < 0 for d in shape):
        raise _shape_error("broadcast_in_dim", f"shape {shape} has a negative dimension")
    if len(broadcast_dimensions) != x.ndim:
        raise _shape_error("broadcast_in_dim", f"broadcast_dimensions {broadcast_dimensions} "
                                               f"must have one entry per operand axis "
                                               f"(operand {x.str_short()})")
    for src, dst in enumerate(broadcast_dimensions):
        if not 0 <= dst < len(shape) or x.shape[src] not in (1, shape[dst]):
            raise _shape_error("broadcast_in_dim", f"can't broadcast {x.str_short()} to shape "
                                                   f"{shape} with broadcast_dimensions "
                                                   f"{broadcast_dimensions}")
    if list(broadcast_dimensions) != sorted(set(broadcast_dimensions)):
        raise _shape_error("broadcast_in_dim", "broadcast_dimensions must be strictly "
                                               f"increasing, got {broadcast_dimensions}")
    return x.update(shape=shape)


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions):
    in_shape = x.aval.shape
    summed = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    expanded = tuple(d for src, d in enumerate(broadcast_dimensions)
                     if in_shape[src] == 1 and shape[d] != 1)
    out = reduce_sum(ct, tuple(sorted(summed + expanded))) if summed or expanded else ct
    if aval_of(out).shape != in_shape:
        out = reshape(out, in_shape)
    return [out]


def _broadcast_in_dim_batch(args, dims, *, shape, broadcast_dimensions):
    (x,), (d,) = args, dims
    x = moveaxis(x, d, 0)
    size = aval_of(x).shape[0]
    return broadcast_in_dim(x, (size, *shape), (0, *(b + 1 for b in broadcast_dimensions))), 0


deflinear2(broadcast_in_dim_p, _broadcast_in_dim_transpose)


def _pp_broadcast_in_dim(eqn, context):
    # The shape is the binder's type; trivial broadcast dimensions are not shown.
    dims = eqn.params["broadcast_dimensions"]
    return pp_eqn(eqn, context, [("broadcast_dimensions", dims)] if dims else [])


pp_eqn_rules[broadcast_in_dim_p] = _pp_broadcast_in_dim
primitive_batchers[broadcast_in_dim_p] = _broadcast_in_dim_batch


# --- reshape -----------------------------------------------------------------


def reshape(x: Any, new_sizes: Sequence[int]) -> Any:
    """Reshapes `x` (row-major) to `new_sizes`."""
    return reshape_p.bind(x, new_sizes=tuple(new_sizes), dimensions=None)


reshape_p.def_impl(lambda x, *, new_sizes, dimensions: np.reshape(x, new_sizes))


@reshape_p.def_abstract_eval
def _reshape_abstract_eval(x: ShapedArray, *, new_sizes, dimensions):
    if dimensions is not None:
        raise _shape_error("reshape", "core's reshape takes dimensions=None")
    if math.prod(new_sizes) != x.size or any(d < 0 for d in new_sizes):
        raise _shape_error("reshape", f"can't reshape {x.str_short()} ({x.size} elements) "
                                      f"to shape {new_sizes}")
    return x.update(shape=new_sizes)


def _reshape_batch(args, dims, *, new_sizes, dimensions):
    (x,), (d,) = args, dims
    x = moveaxis(x, d, 0)
    return reshape(x, (aval_of(x).shape[0], *new_sizes)), 0


deflinear2(reshape_p, lambda ct, x, **_: [reshape(ct, x.aval.shape)])
primitive_batchers[reshape_p] = _reshape_batch


# --- transpose ---------------------------------------------------------------


def transpose(x: Any, permutation: Sequence[int]) -> Any:
    """Permutes the axes of `x`: output axis i is input axis permutation[i]."""
    return transpose_p.bind(x, permutation=tuple(permutation))


transpose_p.def_impl(lambda x, *, permutation: np.transpose(x, permutation))


@transpose_p.def_abstract_eval
def _transpose_abstract_eval(x: ShapedArray, *, permutation):
    if sorted(permutation) != list(range(x.ndim)):
        raise _shape_error("transpose", f"permutation {permutation} is not a permutation of "
                                        f"the axes of {x.str_short()}")
    return x.update(shape=tuple(x.shape[p] for p in permutation))


def _transpose_batch(args, dims, *, permutation):
    (x,), (d,) = args, dims
    x = moveaxis(x, d, 0)
    return transpose(x, (0, *(p + 1 for p in permutation))), 0


deflinear2(transpose_p,
              lambda ct, x, *, permutation: [transpose(ct, tuple(np.argsort(permutation)))])
primitive_batchers[transpose_p] = _transpose_batch


# --- reduce_sum --------------------------------------------------------------


def reduce_sum(x: Any, axes: Sequence[int]) -> Any:
    """Sums `x` over `axes`."""
    return reduce_sum_p.bind(x, axes=tuple(axes), out_sharding=None)


# `out_sharding` is JAX's parameter (the result's sharding under explicit sharding);
# lamella's results live on one device, so it is always None.
reduce_sum_p.def_impl(lambda x, *, axes, out_sharding=None: np.sum(
    x, axis=axes, dtype=np.asarray(x).dtype))


@reduce_sum_p.def_abstract_eval
def _reduce_sum_abstract_eval(x: ShapedArray, *, axes, out_sharding=None):
    if any(not 0 <= a < x.ndim for a in axes) or len(set(axes)) != len(axes):
        raise _shape_error("reduce_sum", f"invalid axes {axes} for {x.str_short()}")
    if x.dtype.itemsize == 2 and dtypes.is_float(x.dtype) \
            and not config.read("allow_f16_reductions"):
        raise ValueError(f"reduce_sum on operand {x.str_short()} is not allowed when "
                         f"jax_allow_f16_reductions=False.")
    return x.update(shape=tuple(d for i, d in enumerate(x.shape) if i not in axes))


def _reduce_sum_transpose(ct, x, *, axes, out_sharding=None):
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in axes)
    out = broadcast_in_dim(ct, shape, kept)
    sharding = getattr(x.aval, "sharding", None)
    if sharding is None or getattr(aval_of(out), "sharding", None) == sharding:
        return [out]
    # The cotangent is laid out as the operand's type (JAX broadcasts into it).
    from lamella.core.sharding import sharding_constraint_p  # sharding imports rules
    return [sharding_constraint_p.bind(out, sharding=sharding)]


def _reduce_sum_batch(args, dims, *, axes, out_sharding=None):
    (x,), (d,) = args, dims
    x = moveaxis(x, d, 0)
    return reduce_sum(x, tuple(a + 1 for a in axes)), 0


deflinear2(reduce_sum_p, _reduce_sum_transpose)
primitive_batchers[reduce_sum_p] = _reduce_sum_batch


# --- stop_gradient -----------------------------------------------------------

stop_gradient_p = Primitive("stop_gradient")
stop_gradient_p.def_impl(lambda x: x)
stop_gradient_p.def_abstract_eval(lambda x: x)
defjvp_zero(stop_gradient_p)
defvectorized(stop_gradient_p)


def stop_gradient(x: Any) -> Any:
    """Returns `x` (a pytree), with zero derivative: gradients don't flow through it.

    Args:
      x: a pytree of arrays; integer leaves pass through.

    Returns:
      `x`, with zero derivative.

    >>> import numpy as np
    >>> stop_gradient(np.float32(3.0))
    np.float32(3.0)
    """
    def stop(leaf):
        if not dtypes.is_inexact(aval_of(leaf).dtype):
            return leaf
        return stop_gradient_p.bind(leaf)
    return tree_map(stop, x)
