"""Matrix products with NumPy semantics on lax.dot_general: matmul (the `@` operator)."""

from __future__ import annotations

from typing import Any

from lamella.core.trace import aval_of
from lamella.lax import broadcast_in_dim, reshape
from lamella.lax.explicit_sharding import unshard_dims
from lamella.numpy.contractions import _Product
from lamella.numpy.placement import out_sharding_of, with_out_sharding
from lamella.numpy.util import eager_fast


@eager_fast("precision", "preferred_element_type", "out_sharding")
def matmul(a: Any, b: Any, *, precision: Any = None, preferred_element_type: Any = None,
           out_sharding: Any = None) -> Any:
    """NumPy's matmul: 1-D operands are promoted to matrices (and the added axis
    removed afterwards); leading batch dimensions broadcast. `precision` and
    `preferred_element_type` (the result and accumulation dtype) go to
    `lax.dot_general`.

    >>> import numpy as np
    >>> matmul(np.ones((2, 3), np.float32), np.ones(3, np.float32))
    Array([3., 3.], dtype=float32)
    >>> matmul(np.ones((1, 2), np.int8), np.ones((2, 1), np.int8),
    ...        preferred_element_type=np.int32)
    Array([[2]], dtype=int32)
    """
    sharding = out_sharding_of("matmul", out_sharding)
    if sharding is not None:
        return with_out_sharding(matmul(unshard_dims(a, (-1,)), b, precision=precision,
                                        preferred_element_type=preferred_element_type),
                                 sharding)
    p = _Product("matmul", a, b, preferred_element_type)
    a, b = p.a, p.b
    a_shape, b_shape = aval_of(a).shape, aval_of(b).shape
    if not a_shape or not b_shape:
        raise ValueError("matmul: operands must have at least one dimension, got shapes "
                         f"{a_shape} and {b_shape} (use multiply for scalars)")
    vector_a, vector_b = len(a_shape) == 1, len(b_shape) == 1
    if vector_a:
        a, a_shape = reshape(a, (1, *a_shape)), (1, *a_shape)
    if vector_b:
        b, b_shape = reshape(b, (*b_shape, 1)), (*b_shape, 1)
    if a_shape[-1] != b_shape[-2]:
        # A TypeError, as JAX's dot_general raises for contracted sizes that differ.
        raise TypeError(f"matmul: contracted dimensions differ: shape {a_shape} has "
                         f"{a_shape[-1]} columns but shape {b_shape} has {b_shape[-2]} rows")
    batch = _broadcast_batch(a_shape[:-2], b_shape[:-2])
    a = _with_batch(a, a_shape, batch)
    b = _with_batch(b, b_shape, batch)
    n = len(batch)
    out = p.contract(a, b, (((n + 1,), (n,)), (tuple(range(n)), tuple(range(n)))), precision)
    shape = aval_of(out).shape
    if vector_a and vector_b:
        return reshape(out, shape[:-2])
    if vector_a:
        return reshape(out, (*shape[:-2], shape[-1]))
    if vector_b:
        return reshape(out, shape[:-1])
    return out


def _broadcast_batch(x: tuple, y: tuple) -> tuple:
    rank = max(len(x), len(y))
    x, y = (1,) * (rank - len(x)) + x, (1,) * (rank - len(y)) + y
    out = []
    for i, (p, q) in enumerate(zip(x, y)):
        if p != q and 1 not in (p, q):
            raise ValueError(f"matmul: batch dimensions {x} and {y} do not broadcast "
                             f"(axis {i}: {p} vs {q})")
        out.append(max(p, q))
    return tuple(out)


def _with_batch(x: Any, shape: tuple, batch: tuple) -> Any:
    target = (*batch, *shape[-2:])
    if shape == target:
        return x
    lead = len(target) - len(shape)
    return broadcast_in_dim(x, target, tuple(range(lead, len(target))))
