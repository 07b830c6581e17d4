"""``lu``: LU decomposition with partial pivoting (LAPACK getrf), and
``lu_pivots_to_permutation``, which turns its row swaps into a permutation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad
from lamella.core.trace import aval_of
from lamella.lax.arithmetic import add, sub
from lamella.lax.control_flow import fori_loop
from lamella.lax.conversion import convert_element_type
from lamella.lax.fill import full, full_like
from lamella.lax.linalg.kernels import check_matrix, front_batcher, lapack, nan_fill
from lamella.lax.linalg.matrices import (
    broadcast_to,
    eye,
    int32,
    matmul,
    permutation_matrix,
    tril,
    triu,
)
from lamella.lax.linalg.triangular import triangular_solve
from lamella.lax.logical import eq, ge, select
from lamella.lax.lowering import lower_fun, register_lowering
from lamella.lax.reductions import reduce_sum
from lamella.lax.shapes import broadcast_in_dim, broadcasted_iota, pad, slice
from lamella.lax.standard import standard_primitive

# --- lu_pivots_to_permutation -------------------------------------------------------

lu_pivots_to_permutation_p = standard_primitive("lu_pivots_to_permutation")


def lu_pivots_to_permutation(pivots: Any, permutation_size: int) -> Any:
    """The permutation that LAPACK-style (0-based, sequential-swap) `pivots` make.

    Row i was swapped with row pivots[..., i], in order, starting from the
    identity permutation of `permutation_size` (at least pivots' length).
    Batched over leading dimensions of `pivots`.

    >>> import numpy as np
    >>> lu_pivots_to_permutation(np.array([2, 2, 2], np.int32), 4)
    Array([2, 0, 1, 3], dtype=int32)
    """
    return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


@lu_pivots_to_permutation_p.def_abstract_eval
def _lu_pivots_to_permutation_abstract_eval(pivots, *, permutation_size):
    if pivots.dtype != np.int32:
        raise TypeError(f"lu_pivots_to_permutation takes int32 pivots, got {pivots.dtype.name}")
    if pivots.ndim < 1:
        raise ValueError("lu_pivots_to_permutation takes pivots of shape (..., k), got a scalar")
    if permutation_size < pivots.shape[-1]:
        raise ValueError(f"lu_pivots_to_permutation: permutation_size ({permutation_size}) must "
                         f"be at least the number of pivots ({pivots.shape[-1]})")
    return ShapedArray((*pivots.shape[:-1], permutation_size), np.dtype(np.int32))


def _lu_pivots_to_permutation_lower(pivots, *, permutation_size):
    aval = aval_of(pivots)
    batch, k = aval.shape[:-1], aval.shape[-1]
    shape = (*batch, permutation_size)
    axis = len(batch)
    positions = broadcasted_iota(np.int32, shape, axis)
    pivot_positions = broadcasted_iota(np.int32, aval.shape, axis)

    def pick(vector, mask):
        # vector[..., j] for the one j where mask holds; one-hot sums batch freely,
        # where a gather per batch element would not.
        return reduce_sum(select(mask, vector, full_like(vector, 0)), (axis,))

    def spread(scalar):
        return broadcast_in_dim(scalar, shape, tuple(range(axis)))

    def swap(i, perm):
        i = convert_element_type(i, np.int32)  # the loop counter is int64 under x64
        j = pick(pivots, eq(pivot_positions, i))
        at_i, at_j = eq(positions, i), eq(positions, spread(j))
        perm_i, perm_j = pick(perm, at_i), pick(perm, at_j)
        return select(at_i, spread(perm_j), select(at_j, spread(perm_i), perm))

    return fori_loop(0, k, swap, positions)


register_lowering(lu_pivots_to_permutation_p,
                  lower_fun(_lu_pivots_to_permutation_lower, multiple_results=False))
front_batcher(lu_pivots_to_permutation_p)


# --- lu -----------------------------------------------------------------------------

lu_p = standard_primitive("lu", multiple_results=True)


def lu(x: Any) -> tuple[Any, Any, Any]:
    """LU decomposition with partial pivoting: ``(lu, pivots, permutation)``.

    `lu` holds the unit-lower L below its diagonal and U on and above it;
    `pivots` (int32, length min(m, n)) says row i was swapped with row pivots[i],
    in order; `permutation` (int32, length m) is their result, so that
    ``x[permutation] = L @ U``. Singular matrices factor without NaNs (U has a
    zero on its diagonal), as in JAX.

    >>> import numpy as np
    >>> _, pivots, perm = lu(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    >>> pivots, perm
    (Array([1, 1], dtype=int32), Array([1, 0], dtype=int32))
    """
    out = lu_p.bind(x)
    return out[0], out[1], out[2]


@lu_p.def_abstract_eval
def _lu_abstract_eval(x):
    check_matrix("lu", x, square=False)
    batch, (m, n) = x.shape[:-2], x.shape[-2:]
    return [x, ShapedArray((*batch, min(m, n)), np.dtype(np.int32)),
            ShapedArray((*batch, m), np.dtype(np.int32))]


def _lu_lower(x):
    aval = aval_of(x)
    batch, (m, n) = aval.shape[:-2], aval.shape[-2:]
    factors, ipiv, info = lapack("getrf", [x], [(aval.shape, aval.dtype),
                                                ((*batch, min(m, n)), np.int32),
                                                (batch, np.int32)])
    # info > 0 flags an exactly singular U, which is still a valid factorization.
    pivots = sub(ipiv, int32(1))
    return [nan_fill(ge(info, int32(0)), factors), pivots, lu_pivots_to_permutation(pivots, m)]


def _lu_jvp(primals, tangents):
    # JAX's rule: with P A = L U, L^-1 P dA U^-1 = L^-1 dL + dU U^-1 splits into its
    # strictly lower part (dL) and upper part (dU).
    (a,), (a_dot,) = primals, tangents
    a_dot = ad.instantiate_zeros(a_dot)
    lu_, pivots, permutation = lu_p.bind(a)
    aval = aval_of(a)
    ndim, dtype = aval.ndim, aval.dtype
    m, n = aval.shape[-2:]
    k = min(m, n)
    # P dA as a product with a one-hot matrix: rows permuted per batch element.
    x = matmul(permutation_matrix(permutation, dtype), a_dot)
    zero = full((), 0, dtype)
    no_pad = [(0, 0, 0)] * (ndim - 2)
    l_part = tril(slice(lu_, (0,) * ndim, (*aval.shape[:-1], k)), -1)
    l_full = add(pad(l_part, zero, [*no_pad, (0, 0, 0), (0, m - k, 0)]),
                 broadcast_to(eye(m, dtype), (*aval.shape[:-2], m, m)))
    u_part = triu(slice(lu_, (0,) * ndim, (*aval.shape[:-2], k, n)))
    u_eye = pad(eye(n - k, dtype), zero, [(k, 0, 0), (k, 0, 0)])
    u_full = add(pad(u_part, zero, [*no_pad, (0, n - k, 0), (0, 0, 0)]),
                 broadcast_to(u_eye, (*aval.shape[:-2], n, n)))
    la = triangular_solve(l_full, x, left_side=True, lower=True, unit_diagonal=True)
    lau = triangular_solve(u_full, la, left_side=False, lower=False)
    lu_dot = add(matmul(l_full, tril(lau, -1)), matmul(triu(lau), u_full))
    return (lu_, pivots, permutation), (lu_dot, ad.Zero.from_primal_value(pivots),
                                        ad.Zero.from_primal_value(permutation))


register_lowering(lu_p, lower_fun(_lu_lower))
ad.primitive_jvps[lu_p] = _lu_jvp
front_batcher(lu_p)


def solve(a: Any, b: Any) -> Any:
    """a^-1 b for square a (batched), through its LU factors."""
    factors, _, permutation = lu(a)
    x = matmul(permutation_matrix(permutation, aval_of(a).dtype), b)
    x = triangular_solve(factors, x, left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(factors, x, left_side=True, lower=False)
