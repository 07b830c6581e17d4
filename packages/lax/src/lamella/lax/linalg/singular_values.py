"""``svd``: singular value decomposition (LAPACK gesdd, or gesvd with
``SvdAlgorithm.QR``), all singular triplets or the index range ``subset_by_index``.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad
from lamella.core.trace import aval_of
from lamella.lax.arithmetic import add, div, mul, real, sub
from lamella.lax.conversion import convert_element_type
from lamella.lax.fill import full
from lamella.lax.linalg.kernels import (
    check_matrix,
    enum_option,
    front_batcher,
    lapack,
    nan_fill,
    subset_range,
)
from lamella.lax.linalg.matrices import (
    H,
    batched_eye,
    columns,
    diagonal,
    int32,
    is_complex,
    matmul,
    real_dtype,
    rows,
    scale_columns,
)
from lamella.lax.logical import eq
from lamella.lax.lowering import lower_fun, register_lowering
from lamella.lax.shapes import broadcast_in_dim
from lamella.lax.standard import standard_primitive


class SvdAlgorithm(enum.Enum):
    """Algorithms for `svd`. On CPUs: ``DEFAULT`` and ``DIVIDE_AND_CONQUER`` use
    LAPACK gesdd, ``QR`` gesvd; ``JACOBI`` and ``POLAR`` (GPU) raise
    NotImplementedError, as in JAX."""

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


svd_p = standard_primitive("svd", multiple_results=True)


def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True,
        subset_by_index: tuple[int, int] | None = None,
        algorithm: SvdAlgorithm | None = None) -> Any:
    """Singular value decomposition: ``(u, s, vt)`` with x = u diag(s) vt, or just `s`.

    `s` (real, descending) has length k = min(m, n); with `full_matrices` u is
    m-by-m and vt n-by-n, otherwise m-by-k and k-by-n. ``subset_by_index=(start,
    end)`` keeps singular triplets start..end-1 (needs ``full_matrices=False``
    unless it selects them all); JAX implements it on TPUs only, here it works
    on CPUs too, derivatives included. Singular-vector derivatives are
    ill-defined where singular values repeat (see the package notes), and, as
    in JAX, not implemented for `full_matrices` of non-square matrices.

    >>> import numpy as np
    >>> svd(np.array([[3.0, 0.0], [0.0, -2.0]], np.float32), compute_uv=False)
    Array([3., 2.], dtype=float32)
    >>> svd(np.diag([1.0, 4.0, 2.0]).astype(np.float32), compute_uv=False,
    ...     full_matrices=False, subset_by_index=(1, 3))
    Array([2., 1.], dtype=float32)
    """
    if subset_by_index is not None:
        subset_by_index = tuple(int(i) for i in subset_by_index)
    out = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv),
                     subset_by_index=subset_by_index,
                     algorithm=enum_option("svd algorithm", algorithm, SvdAlgorithm))
    if not compute_uv:
        return out[0]
    s, u, vt = out
    return u, s, vt


def _is_partial(subset_by_index: tuple[int, int] | None, k: int) -> bool:
    return subset_by_index is not None and tuple(subset_by_index) != (0, k)


@svd_p.def_abstract_eval
def _svd_abstract_eval(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
    check_matrix("svd", x, square=False)
    batch, (m, n) = x.shape[:-2], x.shape[-2:]
    k = min(m, n)
    start, end = subset_range("svd", subset_by_index, k)
    if full_matrices and compute_uv and _is_partial(subset_by_index, k):
        raise ValueError("svd: full_matrices and subset_by_index cannot both be set (pass "
                         "full_matrices=False)")
    s = ShapedArray((*batch, end - start), real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    ku, kv = (m, n) if full_matrices else (end - start, end - start)
    return [s, x.update(shape=(*batch, m, ku)), x.update(shape=(*batch, kv, n))]


def _svd_lower(x, *, full_matrices, compute_uv, subset_by_index, algorithm):
    if algorithm in (SvdAlgorithm.JACOBI, SvdAlgorithm.POLAR):
        raise NotImplementedError("svd: the Jacobi and Polar algorithms are not implemented on "
                                  "CPU (use algorithm=None, SvdAlgorithm.QR or "
                                  "SvdAlgorithm.DIVIDE_AND_CONQUER)")
    aval = aval_of(x)
    batch, (m, n) = aval.shape[:-2], aval.shape[-2:]
    k = min(m, n)
    if k == 0:
        # Nothing to factor (LAPACK would be asked for empty workspaces): identities.
        s = full((*batch, 0), 0, real_dtype(aval.dtype))
        if not compute_uv:
            return [s]
        ku, kv = (m, n) if full_matrices else (0, 0)
        return [s, batched_eye((*batch, m, ku), aval.dtype), batched_eye((*batch, kv, n),
                                                                        aval.dtype)]
    partial = _is_partial(subset_by_index, k)
    # No kernel computes a subset: slice the thin decomposition.
    full_matrices = full_matrices and not partial
    # Mode N still wants full-size u and vt buffers declared (the kernel reads their
    # leading dimensions), as JAX emits it.
    mode = "A" if full_matrices or not compute_uv else "S"
    ku, kv = (m, n) if mode == "A" else (k, k)
    _, s, u, vt, info = lapack(
        "gesvd" if algorithm is SvdAlgorithm.QR else "gesdd", [x],
        [(aval.shape, aval.dtype), ((*batch, k), real_dtype(aval.dtype)),
         ((*batch, m, ku), aval.dtype), ((*batch, kv, n), aval.dtype), (batch, np.int32)],
        mode=mode if compute_uv else "N")
    ok = eq(info, int32(0))
    start, end = subset_range("svd", subset_by_index, k)
    s = columns(nan_fill(ok, s), start, end) if partial else nan_fill(ok, s)
    if not compute_uv:
        return [s]
    u, vt = nan_fill(ok, u), nan_fill(ok, vt)
    if partial:
        u, vt = columns(u, start, end), rows(vt, start, end)
    return [s, u, vt]


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index, algorithm):
    # JAX's rule: with dS = U^H dA V, ds = re diag(dS); the singular vectors'
    # derivatives divide by s_i^2 - s_j^2 (the caveat above). A subset's
    # derivative needs every triplet: it is sliced from the thin decomposition's.
    (a,), (da,) = primals, tangents
    da = ad.instantiate_zeros(da)
    aval = aval_of(a)
    m, n = aval.shape[-2:]
    ndim, dtype = aval.ndim, aval.dtype
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("Singular value decomposition JVP not implemented for "
                                  f"full_matrices=True with non-square input (shape "
                                  f"{aval.shape}): use full_matrices=False")
    s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True, subset_by_index=None,
                          algorithm=algorithm)
    ut, v = H(u), H(vt)
    ds_mat = matmul(matmul(ut, da), v)
    ds = diagonal(ds_mat)
    ds = real(ds) if is_complex(a) else ds
    k = min(m, n)
    start, end = subset_range("svd", subset_by_index, k)
    if not compute_uv:
        return [columns(s, start, end)], [columns(ds, start, end)]
    rdtype = aval_of(s).dtype
    matrix = (*aval.shape[:-2], k, k)
    s_cols = broadcast_in_dim(s, matrix, (*range(ndim - 2), ndim - 1))  # s_j at [i, j]
    s_rows = broadcast_in_dim(s, matrix, tuple(range(ndim - 1)))  # s_i at [i, j]
    s_diffs = mul(add(s_cols, s_rows), sub(s_cols, s_rows))
    eye = batched_eye(matrix, rdtype)
    f_mat = convert_element_type(sub(div(full((), 1, rdtype), add(s_diffs, eye)), eye), dtype)
    dss = scale_columns(ds_mat, s)  # dS diag(s)
    sds = mul(convert_element_type(s_rows, dtype), ds_mat)  # diag(s) dS
    s_zeros = convert_element_type(eq(s, full((), 0, rdtype)), rdtype)
    s_inv = sub(div(full((), 1, rdtype), add(s, s_zeros)), s_zeros)
    dudv_diag = mul(mul(sub(ds_mat, H(ds_mat)), convert_element_type(
        mul(eye, broadcast_in_dim(s_inv, matrix, tuple(range(ndim - 1)))), dtype)),
        full((), 0.5, dtype))
    du = matmul(u, add(mul(f_mat, add(dss, H(dss))), dudv_diag))
    dv = matmul(v, mul(f_mat, add(sds, H(sds))))

    def divide_columns(x, s):
        shape = aval_of(x).shape
        return div(x, broadcast_in_dim(convert_element_type(s, dtype), shape,
                                       (*range(ndim - 2), ndim - 1)))
    if m > n:
        dav = matmul(da, v)
        du = add(du, divide_columns(sub(dav, matmul(u, matmul(ut, dav))), s))
    if n > m:
        dahu = matmul(H(da), u)
        dv = add(dv, divide_columns(sub(dahu, matmul(v, matmul(vt, dahu))), s))
    primal = [columns(s, start, end), columns(u, start, end), rows(vt, start, end)]
    return primal, [columns(ds, start, end), columns(du, start, end), rows(H(dv), start, end)]


register_lowering(svd_p, lower_fun(_svd_lower))
ad.primitive_jvps[svd_p] = _svd_jvp
front_batcher(svd_p)
