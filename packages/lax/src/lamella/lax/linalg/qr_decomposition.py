"""QR decomposition and Householder reflectors: ``qr`` (LAPACK geqrf, or geqp3 with
column pivoting, then orgqr), ``householder_product`` (orgqr/ungqr: Q from the
reflectors) and ``ormqr`` (ormqr/unmqr: Q applied to a matrix without forming it).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad
from lamella.core.trace import aval_of
from lamella.lax.arithmetic import add, mul, real, sub
from lamella.lax.conversion import convert_element_type
from lamella.lax.fill import full
from lamella.lax.linalg.kernels import (
    check_batch_dims,
    check_lapack_dtype,
    check_matrix,
    check_same_dtype,
    front_batcher,
    lapack,
)
from lamella.lax.linalg.lu_decomposition import solve
from lamella.lax.linalg.matrices import (
    H,
    T,
    batched_eye,
    columns,
    eye,
    int32,
    is_complex,
    matmul,
    permutation_matrix,
    rows,
    tril,
    triu,
)
from lamella.lax.linalg.triangular import triangular_solve
from lamella.lax.lowering import lower_fun, register_lowering
from lamella.lax.shapes import broadcast_in_dim, broadcasted_iota, concatenate, pad
from lamella.lax.standard import standard_primitive


def _orgqr(a: Any, taus: Any) -> Any:
    """The first n columns of H(1) ... H(k) for m-by-n reflectors `a` (m >= n >= k)."""
    aval = aval_of(a)
    if 0 in aval.shape[-2:]:
        return a
    kernel = "ungqr" if is_complex(a) else "orgqr"
    return lapack(kernel, [a, taus], [(aval.shape, aval.dtype)])[0]


# --- householder_product ------------------------------------------------------------

householder_product_p = standard_primitive("householder_product")


def householder_product(a: Any, taus: Any) -> Any:
    """The m-by-n matrix of orthonormal columns ``H(1) ... H(k)`` (first n columns).

    Reflector i is ``H(i) = I - taus[i] v v^H`` with v zero above row i, one at
    row i and ``a[i+1:, i]`` below, the layout LAPACK's geqrf and gehrd leave;
    `a` is m-by-n with m >= n and `taus` has k <= n entries.

    >>> import numpy as np
    >>> a = np.array([[0.0], [1.0]], np.float32)
    >>> householder_product(a, np.array([1.0], np.float32))  # I - v v^T, v = (1, 1)
    Array([[ 0.],
           [-1.]], dtype=float32)
    """
    return householder_product_p.bind(a, taus)


@householder_product_p.def_abstract_eval
def _householder_product_abstract_eval(a, taus):
    check_matrix("householder_product", a, square=False)
    check_lapack_dtype("householder_product", taus)
    check_same_dtype("householder_product", a=a, taus=taus)
    m, n = a.shape[-2:]
    if m < n:
        raise ValueError("householder_product: a must have at least as many rows as columns, "
                         f"got shape {a.shape}")
    if taus.ndim < 1 or taus.shape[-1] > n:
        raise ValueError(f"householder_product: taus must have shape (..., k) with k <= {n} "
                         f"(a's columns), got shape {taus.shape}")
    check_batch_dims("householder_product", a=(a, 2), taus=(taus, 1))
    return ShapedArray(a.shape, a.dtype)


register_lowering(householder_product_p, lower_fun(_orgqr, multiple_results=False))
front_batcher(householder_product_p)


# --- ormqr --------------------------------------------------------------------------

ormqr_p = standard_primitive("ormqr")


def ormqr(a: Any, taus: Any, c: Any, *, left: bool = True, transpose: bool = False) -> Any:
    """Q c, Q^H c (`transpose`), c Q or c Q^H (not `left`), with Q = H(1) ... H(k).

    `a` (m-by-n) and `taus` (k <= min(m, n)) hold the reflectors as geqrf leaves
    them (see `householder_product`); Q is m-by-m and never formed. For complex
    dtypes `transpose` means the conjugate transpose.

    >>> import numpy as np
    >>> a = np.array([[0.0], [1.0]], np.float32)
    >>> ormqr(a, np.array([1.0], np.float32), np.array([[1.0], [2.0]], np.float32))
    Array([[-2.],
           [-1.]], dtype=float32)
    """
    return ormqr_p.bind(a, taus, c, left=bool(left), transpose=bool(transpose))


@ormqr_p.def_abstract_eval
def _ormqr_abstract_eval(a, taus, c, *, left, transpose):
    check_matrix("ormqr", a, square=False)
    check_matrix("ormqr", c, square=False)
    check_lapack_dtype("ormqr", taus)
    check_same_dtype("ormqr", a=a, taus=taus, c=c)
    m, n = a.shape[-2:]
    if taus.ndim < 1 or taus.shape[-1] > min(m, n):
        raise ValueError(f"ormqr: taus must have shape (..., k) with k <= {min(m, n)} "
                         f"(a's rows and columns), got shape {taus.shape}")
    side = c.shape[-2] if left else c.shape[-1]
    if side != m:
        which = "rows" if left else "columns"
        raise ValueError(f"ormqr with left={left} needs c with as many {which} as a has rows "
                         f"({m}), got shapes a {a.shape} and c {c.shape}")
    check_batch_dims("ormqr", a=(a, 2), taus=(taus, 1), c=(c, 2))
    return ShapedArray(c.shape, c.dtype)


def _ormqr_lower(a, taus, c, *, left, transpose):
    c_aval = aval_of(c)
    if c_aval.size == 0 or aval_of(taus).shape[-1] == 0:
        return c
    kernel = "unmqr" if is_complex(a) else "ormqr"
    return lapack(kernel, [a, taus, c], [(c_aval.shape, c_aval.dtype)], left=left,
                  transpose=transpose)[0]


register_lowering(ormqr_p, lower_fun(_ormqr_lower, multiple_results=False))
front_batcher(ormqr_p)


# --- qr -----------------------------------------------------------------------------

qr_p = standard_primitive("qr", multiple_results=True)


def qr(x: Any, *, pivoting: bool = False, full_matrices: bool = True,
       use_magma: bool | None = None) -> tuple[Any, ...]:
    """QR decomposition ``(q, r)``: x = q r, q with orthonormal columns, r upper triangular.

    For an m-by-n x and k = min(m, n): with `full_matrices`, q is m-by-m and r
    m-by-n; otherwise q is m-by-k and r k-by-n. With `pivoting`, returns
    ``(q, r, p)`` with int32 column indices p such that ``x[..., :, p] = q r``
    and r's diagonal does not increase in magnitude (LAPACK geqp3).
    `use_magma` only matters on GPUs, as in JAX.

    >>> import numpy as np
    >>> q, r = qr(np.ones((3, 2), np.float32), full_matrices=False)
    >>> q.shape, r.shape
    ((3, 2), (2, 2))
    >>> _, _, p = qr(np.array([[1.0, 3.0], [0.0, 4.0]], np.float32), pivoting=True)
    >>> p
    Array([1, 0], dtype=int32)
    """
    out = qr_p.bind(x, pivoting=bool(pivoting), full_matrices=bool(full_matrices),
                    use_magma=use_magma)
    return tuple(out)


@qr_p.def_abstract_eval
def _qr_abstract_eval(x, *, pivoting, full_matrices, use_magma):
    check_matrix("qr", x, square=False)
    batch, (m, n) = x.shape[:-2], x.shape[-2:]
    k = m if full_matrices else min(m, n)
    q_r = [x.update(shape=(*batch, m, k)), x.update(shape=(*batch, k, n))]
    return [*q_r, ShapedArray((*batch, n), np.dtype(np.int32))] if pivoting else q_r


def _qr_lower(x, *, pivoting, full_matrices, use_magma):
    aval = aval_of(x)
    batch, (m, n) = aval.shape[:-2], aval.shape[-2:]
    ndim, k = aval.ndim, min(m, n)
    identity = broadcasted_iota(np.int32, (*batch, n), ndim - 2)
    if k == 0:
        # Nothing to factor: q is (the first columns of) the identity, r is empty.
        kq = m if full_matrices else k
        q_r = [batched_eye((*batch, m, kq), aval.dtype), full((*batch, kq, n), 0, aval.dtype)]
        return [*q_r, identity] if pivoting else q_r
    if pivoting:
        # geqp3 pivots only among columns marked 0 in jpvt: all of them.
        reflectors, jpvt, taus = lapack("geqp3", [x, full((*batch, n), 0, np.int32)],
                                        [(aval.shape, aval.dtype), ((*batch, n), np.int32),
                                         ((*batch, k), aval.dtype)])
        permutation = [sub(jpvt, int32(1))]
    else:
        reflectors, taus = lapack("geqrf", [x], [(aval.shape, aval.dtype),
                                                 ((*batch, k), aval.dtype)])
        permutation = []
    if m < n:
        q = _orgqr(columns(reflectors, 0, m), taus)
        r = triu(reflectors)
    elif full_matrices and m > n:
        # orgqr makes as many columns as it gets: pad to m with zero reflectors.
        padded = pad(reflectors, full((), 0, aval.dtype),
                     [(0, 0, 0)] * (ndim - 1) + [(0, m - n, 0)])
        q, r = _orgqr(padded, taus), triu(reflectors)
    else:
        q = _orgqr(reflectors, taus)
        r = triu(rows(reflectors, 0, n))
    return [q, r, *permutation]


def _thin_qr_jvp(q: Any, r: Any, dx: Any) -> tuple[Any, Any]:
    """(dq, dr) of x = q r for m-by-n x, m >= n (j-towns.github.io/papers/qr-derivative.pdf)."""
    dtype = aval_of(q).dtype
    n = aval_of(r).shape[-1]
    dx_rinv = triangular_solve(r, dx)  # right side, upper: dx r^-1
    qt_dx_rinv = matmul(H(q), dx_rinv)
    lower_part = tril(qt_dx_rinv, -1)
    do = sub(lower_part, H(lower_part))  # skew-Hermitian
    if is_complex(q):
        # The diagonal's imaginary part is left for the rotation (complex inputs).
        imag_diag = sub(qt_dx_rinv, convert_element_type(real(qt_dx_rinv), dtype))
        do = add(do, mul(batched_eye((*aval_of(do).shape[:-2], n, n), dtype), imag_diag))
    dq = add(matmul(q, sub(do, qt_dx_rinv)), dx_rinv)
    dr = matmul(sub(qt_dx_rinv, do), r)
    return dq, dr


def _qr_jvp(primals, tangents, *, pivoting, full_matrices, use_magma):
    # JAX 0.10.2's cases: thin (m >= n), wide (m < n: the square block's rule, then
    # R2 = Q^H X2), and full Q for m > n (arXiv:2409.13374, eqs. 32-33).
    (x,), (dx,) = primals, tangents
    dx = ad.instantiate_zeros(dx)
    out = qr_p.bind(x, pivoting=pivoting, full_matrices=full_matrices, use_magma=use_magma)
    q, r = out[0], out[1]
    aval = aval_of(x)
    m, n = aval.shape[-2:]
    if pivoting:
        # The pivots are locally constant: differentiate x[..., :, p] = q r.
        column_order = T(permutation_matrix(out[2], aval.dtype))
        x, dx = matmul(x, column_order), matmul(dx, column_order)
    last = aval.ndim - 1
    if m < n:
        dq, dr1 = _thin_qr_jvp(q, columns(r, 0, m), columns(dx, 0, m))
        dr2 = add(matmul(H(dq), columns(x, m, n)), matmul(H(q), columns(dx, m, n)))
        dr = concatenate([dr1, dr2], last)
    elif not full_matrices or m == n:
        dq, dr = _thin_qr_jvp(q, r, dx)
    else:
        q_mn, q_mp = columns(q, 0, n), columns(q, n, m)
        dq_mn, dr_nn = _thin_qr_jvp(q_mn, rows(r, 0, n), dx)
        q_nn, q_pn = rows(q_mn, 0, n), rows(q_mn, n, m)
        dq_nn, dq_pn = rows(dq_mn, 0, n), rows(dq_mn, n, m)
        shifted = sub(q_nn, broadcast_in_dim(eye(n, aval.dtype), aval_of(q_nn).shape,
                                             (aval.ndim - 2, last)))
        z_h = solve(H(shifted), H(q_pn))  # Z = Q_pn (Q_nn - I)^-1, as Z^H
        z = H(z_h)
        dq_mp = sub(matmul(dq_mn, z_h),
                    matmul(add(q_mn, matmul(q_mp, z)), H(sub(dq_pn, matmul(z, dq_nn)))))
        dq = concatenate([dq_mn, dq_mp], last)
        dr = concatenate([dr_nn, full((*aval.shape[:-2], m - n, n), 0, aval.dtype)], last - 1)
    tangents_out = [dq, dr]
    if pivoting:
        tangents_out.append(ad.Zero.from_primal_value(out[2]))
    return out, tangents_out


register_lowering(qr_p, lower_fun(_qr_lower))
ad.primitive_jvps[qr_p] = _qr_jvp
front_batcher(qr_p)
