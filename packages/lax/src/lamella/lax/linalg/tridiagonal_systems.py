"""``tridiagonal_solve``: solving tridiagonal systems A X = B (LAPACK gtsv, or
jaxlib's perturbed-pivot kernel with ``perturb_singular``).

The solve is linear in B: its JVP solves again with the perturbed right-hand
side B_dot - A_dot X, and its transpose solves with A^T, whose diagonals are
the shifted ones of A.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad, batching
from lamella.core.trace import aval_of
from lamella.lax.arithmetic import add, neg
from lamella.lax.fill import full
from lamella.lax.linalg.kernels import (
    check_lapack_dtype,
    check_same_dtype,
    custom_call,
    lapack,
    nan_fill,
)
from lamella.lax.linalg.matrices import columns, int32, rows, scale_rows
from lamella.lax.logical import eq
from lamella.lax.lowering import lower_fun, register_lowering
from lamella.lax.shapes import concatenate, pad, reshape
from lamella.lax.standard import standard_primitive

tridiagonal_solve_p = standard_primitive("tridiagonal_solve")


def tridiagonal_solve(dl: Any, d: Any, du: Any, b: Any, *, perturb_singular: bool = False
                      ) -> Any:
    """Solves A X = b for X, with A tridiagonal given by its three diagonals.

    For A of size m: ``dl[..., i] = A[i, i-1]`` (dl[..., 0] is ignored),
    ``d[..., i] = A[i, i]`` and ``du[..., i] = A[i, i+1]`` (du[..., m-1] is
    ignored), each of shape (..., m); `b` has shape (..., m, k). Leading
    dimensions are batch dimensions. A singular A gives NaNs; with
    `perturb_singular`, tiny pivots of the LU factorization are perturbed
    instead (by about eps * max |U|), which keeps the solution finite (useful
    for inverse iteration).

    >>> import numpy as np
    >>> dl, d, du = (np.array(v, np.float32) for v in ([0, 1, 1], [2, 2, 2], [1, 1, 0]))
    >>> tridiagonal_solve(dl, d, du, np.array([[3.0], [4.0], [3.0]], np.float32))
    Array([[1.],
           [1.],
           [1.]], dtype=float32)
    """
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=bool(perturb_singular))


@tridiagonal_solve_p.def_abstract_eval
def _tridiagonal_solve_abstract_eval(dl, d, du, b, *, perturb_singular):
    for aval in (dl, d, du, b):
        check_lapack_dtype("tridiagonal_solve", aval)
    check_same_dtype("tridiagonal_solve", dl=dl, d=d, du=du, b=b)
    if not dl.shape == d.shape == du.shape or d.ndim < 1:
        raise TypeError("tridiagonal_solve requires diagonals dl, d and du of one shape "
                        f"(..., m), got {dl.shape}, {d.shape} and {du.shape}")
    if b.shape[:-1] != d.shape:
        raise TypeError(f"tridiagonal_solve requires b of shape (..., m, k) = {d.shape} + (k,) "
                        f"for diagonals of shape {d.shape}, got {b.shape}")
    return ShapedArray(b.shape, b.dtype)


def _tridiagonal_solve_lower(dl, d, du, b, *, perturb_singular):
    aval = aval_of(b)
    if aval.size == 0:
        return b
    if perturb_singular:
        return custom_call("tridiagonal_solve_perturbed_ffi", [dl, d, du, b],
                           [(aval.shape, aval.dtype)])[0]
    vector = aval_of(d).shape
    *_, x, info = lapack("gtsv", [dl, d, du, b], [(vector, aval.dtype)] * 3 +
                         [(aval.shape, aval.dtype), (aval.shape[:-2], np.int32)])
    return nan_fill(eq(info, int32(0)), x)


def _tridiagonal_product(dl: Any, d: Any, du: Any, x: Any) -> Any:
    """A x for the tridiagonal A with diagonals dl, d, du."""
    aval = aval_of(x)
    m = aval.shape[-2]
    if m == 0:
        return x
    zero = full((), 0, aval.dtype)
    no_pad = [(0, 0, 0)] * (aval.ndim - 2)
    above = pad(rows(x, 0, m - 1), zero, [*no_pad, (1, 0, 0), (0, 0, 0)])  # x[i - 1] at i
    below = pad(rows(x, 1, m), zero, [*no_pad, (0, 1, 0), (0, 0, 0)])  # x[i + 1] at i
    return add(add(scale_rows(x, d), scale_rows(above, dl)), scale_rows(below, du))


def _tridiagonal_solve_jvp(primals, tangents, *, perturb_singular):
    *diagonals, _ = primals
    *diagonal_dots, b_dot = tangents
    x = tridiagonal_solve_p.bind(*primals, perturb_singular=perturb_singular)
    rhs = b_dot
    if any(type(t) is not ad.Zero for t in diagonal_dots):
        a_dot_x = _tridiagonal_product(*map(ad.instantiate_zeros, diagonal_dots), x)
        rhs = ad.add_tangents(b_dot, neg(a_dot_x))
    return x, tridiagonal_solve_p.bind(*diagonals, rhs, perturb_singular=perturb_singular)


def _tridiagonal_solve_transpose(ct, dl, d, du, b, *, perturb_singular):
    if any(ad.is_undefined_primal(v) for v in (dl, d, du)):
        raise ValueError("tridiagonal_solve is linear in b only: it cannot be transposed in "
                         "its diagonals")
    if type(ct) is ad.Zero:
        return [None, None, None, ad.Zero(b.aval)]
    m = aval_of(d).shape[-1]
    if m == 0:
        return [None, None, None, ct]
    # A^T has subdiagonal du shifted down one place and superdiagonal dl shifted up.
    zero = full((*aval_of(d).shape[:-1], 1), 0, aval_of(d).dtype)
    last = aval_of(d).ndim - 1
    dl_t = concatenate([zero, columns(du, 0, m - 1)], last)
    du_t = concatenate([columns(dl, 1, m), zero], last)
    return [None, None, None, tridiagonal_solve_p.bind(dl_t, d, du_t, ct,
                                                       perturb_singular=perturb_singular)]


def _tridiagonal_solve_batch(args, dims, *, perturb_singular):
    dl, d, du, b = args
    size = next(aval_of(x).shape[i] for x, i in zip(args, dims) if i is not None)
    if dims[:3] == (None, None, None):
        # One matrix for the whole batch: the batch joins b's columns.
        b = batching.moveaxis(b, dims[3], aval_of(b).ndim - 2)  # (..., m, batch, k)
        shape = aval_of(b).shape
        x = tridiagonal_solve_p.bind(dl, d, du, reshape(b, (*shape[:-2], shape[-2] * shape[-1])),
                                     perturb_singular=perturb_singular)
        return reshape(x, shape), len(shape) - 2
    args = [batching.at_front(x, i, size) for x, i in zip(args, dims)]
    return tridiagonal_solve_p.bind(*args, perturb_singular=perturb_singular), 0


register_lowering(tridiagonal_solve_p, lower_fun(_tridiagonal_solve_lower, multiple_results=False))
ad.primitive_jvps[tridiagonal_solve_p] = _tridiagonal_solve_jvp
ad.primitive_transposes[tridiagonal_solve_p] = _tridiagonal_solve_transpose
batching.primitive_batchers[tridiagonal_solve_p] = _tridiagonal_solve_batch
