"""``eigh``: eigendecomposition of Hermitian matrices (LAPACK syevd/heevd), all
eigenpairs or the index range ``subset_by_index``.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad
from lamella.core.trace import aval_of
from lamella.lax.arithmetic import add, integer_pow, mul, real, sub
from lamella.lax.conversion import convert_element_type
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
    symmetrize,
)
from lamella.lax.logical import eq
from lamella.lax.lowering import lower_fun, register_lowering
from lamella.lax.shapes import broadcast_in_dim
from lamella.lax.standard import standard_primitive


class EighImplementation(enum.Enum):
    """Algorithms for `eigh`. CPUs have LAPACK's (``QR``, the default); ``JACOBI``
    (GPU) and ``QDWH`` (TPU) raise NotImplementedError there, as in JAX."""

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


eigh_p = standard_primitive("eigh", multiple_results=True)


def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True, subset_by_index: tuple[int, int] | None = None,
         implementation: EighImplementation | None = None) -> tuple[Any, Any]:
    """Eigendecomposition of Hermitian matrices: ``(v, w)`` with x = v diag(w) v^H.

    `w` (real) is in ascending order, `v` holds the eigenvectors as columns. With
    `symmetrize_input`, decomposes ``(x + x^H) / 2``; otherwise only the `lower`
    (or upper) triangle is read. LAPACK always returns sorted eigenvalues, so
    `sort_eigenvalues` is accepted for JAX compatibility only.

    ``subset_by_index=(start, end)`` keeps eigenpairs start..end-1 (in ascending
    order): v is n-by-(end - start). JAX implements it on TPUs only; here it
    works on CPUs too, derivatives included. Eigenvector derivatives are
    ill-defined where eigenvalues repeat (see the package notes).

    >>> import numpy as np
    >>> v, w = eigh(np.array([[2.0, 1.0], [1.0, 2.0]], np.float32))
    >>> w
    Array([1., 3.], dtype=float32)
    >>> eigh(np.diag(np.arange(4.0, dtype=np.float32)), subset_by_index=(2, 4))[1]
    Array([2., 3.], dtype=float32)
    """
    if symmetrize_input:
        check_matrix("eigh", aval_of(x), square=True)
        x = symmetrize(x)
    if subset_by_index is not None:
        subset_by_index = tuple(int(i) for i in subset_by_index)
    v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues),
                       subset_by_index=subset_by_index,
                       algorithm=enum_option("eigh implementation", implementation,
                                             EighImplementation))
    return v, w


@eigh_p.def_abstract_eval
def _eigh_abstract_eval(x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    check_matrix("eigh", x, square=True)
    start, end = subset_range("eigh", subset_by_index, x.shape[-1])
    return [x.update(shape=(*x.shape[:-1], end - start)),
            ShapedArray((*x.shape[:-2], end - start), real_dtype(x.dtype))]


def _eigh_lower(x, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    if algorithm is EighImplementation.JACOBI:
        raise NotImplementedError("eigh: the Jacobi implementation is not supported on CPU "
                                  "(use implementation=None or EighImplementation.QR)")
    if algorithm is EighImplementation.QDWH:
        raise NotImplementedError("eigh: the QDWH implementation is only supported on TPU "
                                  "(use implementation=None or EighImplementation.QR)")
    aval = aval_of(x)
    v, w, info = lapack("syevd" if not is_complex(x) else "heevd", [x],
                        [(aval.shape, aval.dtype), (aval.shape[:-1], real_dtype(aval.dtype)),
                         (aval.shape[:-2], np.int32)], mode="V", uplo="L" if lower else "U")
    ok = eq(info, int32(0))
    # No kernel computes a subset: slice the full decomposition.
    start, end = subset_range("eigh", subset_by_index, aval.shape[-1])
    return [columns(nan_fill(ok, v), start, end), columns(nan_fill(ok, w), start, end)]


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index, algorithm):
    # dw = diag(V^H dA V); dV = V (F * V^H dA V) with F_ij = 1 / (w_j - w_i) off
    # the diagonal, 0 on it: infinite where eigenvalues repeat (the caveat above).
    # A subset's derivative needs the whole eigenbasis: it is sliced from the full one.
    (a,), (a_dot,) = primals, tangents
    a_dot = ad.instantiate_zeros(a_dot)
    v, w_real = eigh_p.bind(a, lower=lower, sort_eigenvalues=sort_eigenvalues,
                            subset_by_index=None, algorithm=algorithm)
    aval = aval_of(a)
    n, ndim = aval.shape[-1], aval.ndim
    w = convert_element_type(w_real, aval.dtype)
    w_cols = broadcast_in_dim(w, aval.shape, (*range(ndim - 2), ndim - 1))
    w_rows = broadcast_in_dim(w, aval.shape, tuple(range(ndim - 1)))
    eye = batched_eye(aval.shape, aval.dtype)
    f_mat = sub(integer_pow(add(eye, sub(w_cols, w_rows)), -1), eye)
    vdag_adot_v = matmul(matmul(H(v), a_dot), v)
    dv = matmul(v, mul(f_mat, vdag_adot_v))
    dw = diagonal(vdag_adot_v)
    dw = real(dw) if is_complex(a) else dw
    start, end = subset_range("eigh", subset_by_index, n)
    return ([columns(v, start, end), columns(w_real, start, end)],
            [columns(dv, start, end), columns(dw, start, end)])


register_lowering(eigh_p, lower_fun(_eigh_lower))
ad.primitive_jvps[eigh_p] = _eigh_jvp
front_batcher(eigh_p)
