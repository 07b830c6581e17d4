"""Positive-definite matrices: ``cholesky`` (LAPACK potrf), its rank-1 update
``cholesky_update`` (Givens rotations), and ``symmetric_product`` (alpha A A^T + beta C).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad
from lamella.core.trace import aval_of
from lamella.lax.arithmetic import abs as abs_op
from lamella.lax.arithmetic import add, div, mul, neg, sub
from lamella.lax.arithmetic import max as max_op
from lamella.lax.control_flow import fori_loop
from lamella.lax.conversion import convert_element_type
from lamella.lax.linalg.kernels import (
    check_batch_dims,
    check_matrix,
    check_same_dtype,
    front_batcher,
    lapack,
    nan_fill,
)
from lamella.lax.linalg.matrices import (
    T,
    batched_eye,
    int32,
    matmul,
    scalar,
    symmetrize,
    tril,
    triu,
)
from lamella.lax.linalg.triangular import triangular_solve
from lamella.lax.logical import eq, select
from lamella.lax.lowering import lower_fun, register_lowering
from lamella.lax.shapes import (
    broadcast_in_dim,
    dynamic_slice_in_dim,
    dynamic_update_slice_in_dim,
    expand_dims,
    squeeze,
)
from lamella.lax.standard import FLOAT, check_dtypes, standard_primitive
from lamella.lax.transcendental import rsqrt

# --- cholesky -----------------------------------------------------------------------

cholesky_p = standard_primitive("cholesky")


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """The lower Cholesky factor L of each Hermitian positive-definite matrix: x = L L^H.

    With `symmetrize_input`, factors ``(x + x^H) / 2`` (only the lower triangle is
    read otherwise). Matrices that are not positive definite give NaNs, as in JAX.

    >>> cholesky(np.array([[1.0, 0.0], [0.0, -1.0]], np.float32))
    Array([[nan,  0.],
           [nan, nan]], dtype=float32)
    """
    if symmetrize_input:
        check_matrix("cholesky", aval_of(x), square=True)
        x = symmetrize(x)
    return cholesky_p.bind(x)


@cholesky_p.def_abstract_eval
def _cholesky_abstract_eval(x):
    check_matrix("cholesky", x, square=True)
    return x


def _cholesky_lower(x):
    aval = aval_of(x)
    factor, info = lapack("potrf", [x], [(aval.shape, aval.dtype), (aval.shape[:-2], np.int32)],
                          uplo="L")
    # The upper triangle still holds the input: zero it, after the NaN fill.
    return tril(nan_fill(eq(info, int32(0)), factor))


def _phi_lower(x: Any) -> Any:
    """The lower triangle of x with its diagonal halved."""
    aval = aval_of(x)
    return div(tril(x), add(batched_eye(aval.shape, aval.dtype), scalar(1, aval.dtype)))


def _cholesky_jvp(primals, tangents):
    # Forward-mode rule from https://arxiv.org/pdf/1602.07527.pdf (as JAX):
    # L_dot = L phi(L^-1 sigma_dot L^-H), phi taking the lower triangle with a halved diagonal.
    (x,), (sigma_dot,) = primals, tangents
    factor = cholesky_p.bind(x)
    sigma_dot = ad.instantiate_zeros(sigma_dot)
    tmp = triangular_solve(factor, sigma_dot, left_side=False, transpose_a=True,
                           conjugate_a=True, lower=True)
    inner = triangular_solve(factor, tmp, left_side=True, transpose_a=False, lower=True)
    return factor, matmul(factor, _phi_lower(inner))


register_lowering(cholesky_p, lower_fun(_cholesky_lower, multiple_results=False))
ad.primitive_jvps[cholesky_p] = _cholesky_jvp
front_batcher(cholesky_p)


# --- cholesky_update ----------------------------------------------------------------

cholesky_update_p = standard_primitive("cholesky_update")


def cholesky_update(r_matrix: Any, w_vector: Any) -> Any:
    """The upper Cholesky factor of ``R^T R + w w^T``, given the upper factor R of R^T R.

    O(n^2) work per matrix (n Givens rotations) instead of refactoring. Real
    floating-point inputs, as in JAX; the strictly lower triangle of `r_matrix`
    is not read. Unlike JAX, leading batch dimensions, vmap and derivatives
    are supported.

    >>> r = np.array([[2.0, 1.0], [0.0, 1.0]], np.float32)
    >>> cholesky_update(r, np.array([0.0, 1.0], np.float32))
    Array([[2.       , 1.       ],
           [0.       , 1.4142135]], dtype=float32)
    """
    return cholesky_update_p.bind(r_matrix, w_vector)


@cholesky_update_p.def_abstract_eval
def _cholesky_update_abstract_eval(r, w):
    check_dtypes("cholesky_update", FLOAT, r, w)
    check_same_dtype("cholesky_update", r_matrix=r, w_vector=w)
    if r.ndim < 2 or r.shape[-1] != r.shape[-2] or w.ndim < 1 or w.shape[-1] != r.shape[-1]:
        raise ValueError("cholesky_update takes an n-by-n upper-triangular r_matrix and a "
                         f"vector w_vector of length n, got shapes {r.shape} and {w.shape}")
    check_batch_dims("cholesky_update", r_matrix=(r, 2), w_vector=(w, 1))
    return r


def _givens(x: Any, y: Any) -> tuple[Any, Any]:
    """(c, s) with c x - s y = hypot(x, y) and s x + c y = 0; (1, 0) where y is 0."""
    one, zero = _full_scalar(x, 1), _full_scalar(x, 0)
    y_zero = eq(y, zero)
    scale = select(y_zero, one, max_op(abs_op(x), abs_op(y)))  # scaled: no overflow
    xs, ys = div(x, scale), div(y, scale)
    inv_norm = rsqrt(add(mul(xs, xs), mul(ys, ys)))
    return select(y_zero, one, mul(xs, inv_norm)), select(y_zero, zero, neg(mul(ys, inv_norm)))


def _full_scalar(x: Any, value: float) -> Any:
    """`value` broadcast to x's shape and dtype."""
    aval = aval_of(x)
    return broadcast_in_dim(scalar(value, aval.dtype), aval.shape, ())


def _cholesky_update_rotations(r, w):
    # Row k of R and the remaining w are rotated so that w[k] becomes 0; after n
    # rotations R^T R has absorbed w w^T.
    ndim = aval_of(r).ndim
    row_axis = ndim - 2

    def rotate(k, state):
        r, w = state
        k = convert_element_type(k, np.int32)
        row = squeeze(dynamic_slice_in_dim(r, k, 1, axis=row_axis), (row_axis,))
        x = squeeze(dynamic_slice_in_dim(row, k, 1, axis=ndim - 2), (ndim - 2,))
        y = squeeze(dynamic_slice_in_dim(w, k, 1, axis=ndim - 2), (ndim - 2,))
        c, s = (broadcast_in_dim(v, aval_of(w).shape, tuple(range(ndim - 2)))
                for v in _givens(x, y))
        new_row = sub(mul(c, row), mul(s, w))
        w = add(mul(c, w), mul(s, row))
        r = dynamic_update_slice_in_dim(r, expand_dims(new_row, (row_axis,)), k, axis=row_axis)
        return r, w

    r, _ = fori_loop(0, aval_of(r).shape[-1], rotate, (triu(r), w))
    # Below the diagonal the rotations leave rounding residue (w's zeroed entries are
    # only zero to rounding): the result is upper triangular by definition.
    return triu(r)


def _cholesky_update_jvp(primals, tangents):
    # With R'^T R' = R^T R + w w^T =: M, dM = R'^T dR' + dR'^T R', so
    # dR' R'^-1 = phi(R'^-T dM R'^-1), phi taking the upper triangle with a halved
    # diagonal (the transpose of cholesky's rule).
    (r, w), (dr, dw) = primals, tangents
    new_r = cholesky_update_p.bind(r, w)
    r = triu(r)
    dr = triu(ad.instantiate_zeros(dr))
    dw = ad.instantiate_zeros(dw)
    ndim = aval_of(r).ndim
    w_col, dw_col = expand_dims(w, (ndim - 1,)), expand_dims(dw, (ndim - 1,))
    r_dr = matmul(T(r), dr)
    w_dw = matmul(w_col, T(dw_col))
    dm = add(add(r_dr, T(r_dr)), add(w_dw, T(w_dw)))
    inner = triangular_solve(new_r, dm, left_side=False, lower=False)  # dM R'^-1
    inner = triangular_solve(new_r, inner, left_side=True, lower=False, transpose_a=True)
    return new_r, matmul(T(_phi_lower(T(inner))), new_r)


register_lowering(cholesky_update_p, lower_fun(_cholesky_update_rotations,
                                               multiple_results=False))
ad.primitive_jvps[cholesky_update_p] = _cholesky_update_jvp
front_batcher(cholesky_update_p)


# --- symmetric_product --------------------------------------------------------------

symmetric_product_p = standard_primitive("symmetric_product")


def symmetric_product(a_matrix: Any, c_matrix: Any, *, alpha: float = 1.0, beta: float = 0.0,
                      symmetrize_output: bool = False) -> Any:
    """``alpha * A @ A^T + beta * C`` for m-by-n matrices A and symmetric m-by-m C.

    Real floating-point inputs, as in JAX. JAX only promises the lower triangle
    on every platform; here the whole result is computed, and
    `symmetrize_output` mirrors the lower triangle into the upper one as JAX
    does.

    >>> a = np.array([[1.0, 2.0], [0.0, 1.0]], np.float32)
    >>> symmetric_product(a, np.eye(2, dtype=np.float32), alpha=1.0, beta=2.0)
    Array([[7., 2.],
           [2., 3.]], dtype=float32)
    """
    result = symmetric_product_p.bind(a_matrix, c_matrix, alpha=alpha, beta=beta)
    if symmetrize_output:
        result = add(tril(result), T(tril(result, -1)))
    return result


@symmetric_product_p.def_abstract_eval
def _symmetric_product_abstract_eval(a, c, *, alpha, beta):
    check_dtypes("symmetric_product", FLOAT, a, c)
    check_same_dtype("symmetric_product", a_matrix=a, c_matrix=c)
    if a.ndim < 2 or c.ndim < 2 or c.shape[-1] != c.shape[-2] or a.shape[-2] != c.shape[-1]:
        raise ValueError("symmetric_product takes an m-by-n a_matrix and an m-by-m c_matrix, "
                         f"got shapes {a.shape} and {c.shape}")
    check_batch_dims("symmetric_product", a_matrix=(a, 2), c_matrix=(c, 2))
    return ShapedArray(c.shape, c.dtype)


def _symmetric_product_lower(a, c, *, alpha, beta):
    dtype = aval_of(a).dtype
    return add(mul(scalar(alpha, dtype), matmul(a, T(a))), mul(scalar(beta, dtype), c))


def _symmetric_product_jvp_a(da, a, c, *, alpha, beta):
    da_at = matmul(da, T(a))
    return mul(scalar(alpha, aval_of(a).dtype), add(da_at, T(da_at)))


def _symmetric_product_jvp_c(dc, a, c, *, alpha, beta):
    return mul(scalar(beta, aval_of(c).dtype), dc)


register_lowering(symmetric_product_p, lower_fun(_symmetric_product_lower,
                                                 multiple_results=False))
ad.defjvp(symmetric_product_p, _symmetric_product_jvp_a, _symmetric_product_jvp_c)
front_batcher(symmetric_product_p)
