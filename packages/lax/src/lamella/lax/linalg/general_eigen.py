"""General (non-Hermitian) matrices: ``eig`` (LAPACK geev), eigenvalues with left
and right eigenvectors, and ``schur`` (LAPACK gees), the Schur decomposition.
"""

from __future__ import annotations

import enum
import warnings
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad
from lamella.core.trace import aval_of
from lamella.lax.arithmetic import abs as abs_op
from lamella.lax.arithmetic import add, conj, div, imag, integer_pow, mul, neg, real, sub
from lamella.lax.arithmetic import complex as complex_op
from lamella.lax.conversion import convert_element_type
from lamella.lax.linalg.kernels import (
    check_matrix,
    enum_option,
    front_batcher,
    lapack,
    nan_fill,
)
from lamella.lax.linalg.lu_decomposition import solve
from lamella.lax.linalg.matrices import (
    H,
    batched_eye,
    complex_dtype,
    diagonal,
    int32,
    is_complex,
    matmul,
    scale_columns,
)
from lamella.lax.logical import eq
from lamella.lax.lowering import lower_fun, register_lowering
from lamella.lax.reductions import argmax, reduce_sum
from lamella.lax.shapes import broadcast_in_dim, broadcasted_iota
from lamella.lax.standard import standard_primitive


class EigImplementation(enum.Enum):
    """Implementations of `eig`. CPUs have ``LAPACK`` (the default); ``CUSOLVER``
    and ``MAGMA`` are GPU libraries, refused on CPU with a ValueError as in JAX."""

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


# --- eig ----------------------------------------------------------------------------

eig_p = standard_primitive("eig", multiple_results=True)


def eig(x: Any, *, compute_left_eigenvectors: bool = True,
        compute_right_eigenvectors: bool = True, enable_eigvec_derivs: bool = False,
        implementation: EigImplementation | None = None,
        use_magma: bool | None = None) -> list[Any]:
    """Eigendecomposition of general square matrices: ``[w, vl, vr]``.

    `w` holds the (complex, unordered) eigenvalues; `vr` the right eigenvectors
    as columns (x vr = vr diag(w)) and `vl` the left ones (vl^H x = diag(w) vl^H),
    each column of unit norm with its largest component real (LAPACK's
    normalization). Vectors not asked for are left out of the list.

    Eigenvalues are differentiable. Eigenvectors are too with
    `enable_eigvec_derivs`, under LAPACK's normalization and only where the
    eigenvalues are distinct and no vector has two components of equal largest
    magnitude (conditions that cannot be checked, hence the opt-in, as in JAX).
    `use_magma` is deprecated in favour of `implementation`.

    >>> import numpy as np
    >>> w, = eig(np.array([[0.0, -1.0], [1.0, 0.0]], np.float32),
    ...          compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    >>> w
    Array([0.+1.j, 0.-1.j], dtype=complex64)
    """
    if use_magma is not None:
        warnings.warn("use_magma is deprecated, please use "
                      "implementation=EigImplementation.MAGMA instead.", DeprecationWarning,
                      stacklevel=2)
        implementation = EigImplementation.MAGMA if use_magma else EigImplementation.LAPACK
    return list(eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                           compute_right_eigenvectors=bool(compute_right_eigenvectors),
                           enable_eigvec_derivs=bool(enable_eigvec_derivs),
                           implementation=enum_option("eig implementation", implementation,
                                                      EigImplementation)))


@eig_p.def_abstract_eval
def _eig_abstract_eval(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
                       enable_eigvec_derivs, implementation):
    check_matrix("eig", x, square=True)
    dtype = complex_dtype(x.dtype)
    vectors = ShapedArray(x.shape, dtype)
    return [ShapedArray(x.shape[:-1], dtype),
            *([vectors] if compute_left_eigenvectors else []),
            *([vectors] if compute_right_eigenvectors else [])]


def _eig_lower(x, *, compute_left_eigenvectors, compute_right_eigenvectors,
               enable_eigvec_derivs, implementation):
    if implementation not in (None, EigImplementation.LAPACK):
        raise ValueError(f"eig: only the LAPACK implementation is supported on CPU, got "
                         f"{implementation}")
    aval = aval_of(x)
    batch, vector = aval.shape[:-2], aval.shape[:-1]
    cdtype = complex_dtype(aval.dtype)
    # Vectors not computed must still be declared full size: the kernel writes
    # nothing there, but reads their leading dimensions.
    vector_results = [(aval.shape, cdtype), (aval.shape, cdtype), (batch, np.int32)]
    flags = {"compute_left": "V" if compute_left_eigenvectors else "N",
             "compute_right": "V" if compute_right_eigenvectors else "N"}
    if is_complex(x):
        w, vl, vr, info = lapack("geev", [x], [(vector, cdtype), *vector_results], **flags)
    else:
        wr, wi, vl, vr, info = lapack("geev", [x], [(vector, aval.dtype), (vector, aval.dtype),
                                                    *vector_results], **flags)
        w = complex_op(wr, wi)
    ok = eq(info, int32(0))
    return [nan_fill(ok, w), *([nan_fill(ok, vl)] if compute_left_eigenvectors else []),
            *([nan_fill(ok, vr)] if compute_right_eigenvectors else [])]


def _eigenvector_jvp(w: Any, v: Any, da: Any) -> tuple[Any, Any]:
    """(dw, dv) for A v = v diag(w), each v_j of unit norm with its largest component real.

    Nondegenerate perturbation theory (Giles, NA-08-01, sec. 3.1): with
    P = V^-1 dA V, dw = diag(P) and dv_j = (V (F * P))_j + c_j v_j, where
    F_ij = 1 / (w_j - w_i) off the diagonal. The free c_j is fixed by the two real
    constraints of LAPACK's normalization: Re(v_j^H dv_j) = 0 (unit norm) and
    Im(dv_kj) = 0 at k = argmax_i |v_ij| (that component stays real).
    """
    aval = aval_of(v)
    ndim = aval.ndim
    w_cols = broadcast_in_dim(w, aval.shape, (*range(ndim - 2), ndim - 1))  # w_j at [i, j]
    w_rows = broadcast_in_dim(w, aval.shape, tuple(range(ndim - 1)))  # w_i at [i, j]
    eye = batched_eye(aval.shape, aval.dtype)
    f_mat = sub(integer_pow(add(eye, sub(w_cols, w_rows)), -1), eye)
    p = matmul(solve(v, da), v)
    u = matmul(v, mul(f_mat, p))
    largest = argmax(abs_op(v), ndim - 2, np.int32)
    at_largest = convert_element_type(
        eq(broadcasted_iota(np.int32, aval.shape, ndim - 2),
           broadcast_in_dim(largest, aval.shape, (*range(ndim - 2), ndim - 1))), aval.dtype)
    norm_part = neg(real(reduce_sum(mul(conj(v), u), (ndim - 2,))))
    phase_part = neg(div(imag(reduce_sum(mul(at_largest, u), (ndim - 2,))),
                         real(reduce_sum(mul(at_largest, v), (ndim - 2,)))))
    return diagonal(p), add(u, scale_columns(v, complex_op(norm_part, phase_part)))


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors,
             enable_eigvec_derivs, implementation):
    # dw = diag(V^-1 dA V) (eq. 4.60 of arXiv:1701.00392), as JAX; the left
    # eigenvectors are the right ones of A^H, with eigenvalues conj(w).
    vectors = compute_left_eigenvectors or compute_right_eigenvectors
    if vectors and not enable_eigvec_derivs:
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on "
            "the input that cannot be checked: pass enable_eigvec_derivs=True to eig to opt "
            "in (see its docstring and jax-ml/jax#2748), or differentiate the eigenvalues "
            "only (compute_left_eigenvectors=False, compute_right_eigenvectors=False)")
    (a,), (da,) = primals, tangents
    outs = eig_p.bind(a, compute_left_eigenvectors=compute_left_eigenvectors,
                      compute_right_eigenvectors=True, enable_eigvec_derivs=enable_eigvec_derivs,
                      implementation=implementation)
    w, vr = outs[0], outs[-1]
    da = convert_element_type(ad.instantiate_zeros(da), aval_of(vr).dtype)
    if not vectors:
        return [w], [diagonal(matmul(solve(vr, da), vr))]
    dw, dvr = _eigenvector_jvp(w, vr, da)
    primal_out, tangent_out = [w], [dw]
    if compute_left_eigenvectors:
        primal_out.append(outs[1])
        tangent_out.append(_eigenvector_jvp(conj(w), outs[1], H(da))[1])
    if compute_right_eigenvectors:
        primal_out.append(vr)
        tangent_out.append(dvr)
    return primal_out, tangent_out


register_lowering(eig_p, lower_fun(_eig_lower))
ad.primitive_jvps[eig_p] = _eig_jvp
front_batcher(eig_p)


# --- schur --------------------------------------------------------------------------

schur_p = standard_primitive("schur", multiple_results=True)


def schur(x: Any, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable: Any = None) -> Any:
    """Schur decomposition x = vs t vs^H: ``(t, vs)``, or ``(t,)`` without vectors.

    `t` is upper triangular for complex inputs and quasi-upper-triangular (2-by-2
    blocks for complex-conjugate eigenvalue pairs) for real ones; `vs` is
    orthogonal (unitary). Eigenvalue sorting is not supported, as in JAX on
    CPU; there is no derivative.

    >>> import numpy as np
    >>> t, vs = schur(np.array([[1.0, 2.0], [0.0, 3.0]], np.float32))
    >>> t
    Array([[1., 2.],
           [0., 3.]], dtype=float32)
    """
    if sort_eig_vals or select_callable is not None:
        raise NotImplementedError("schur: sorting eigenvalues (sort_eig_vals, "
                                  "select_callable) is not supported")
    return tuple(schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors)))


@schur_p.def_abstract_eval
def _schur_abstract_eval(x, *, compute_schur_vectors):
    check_matrix("schur", x, square=True)
    return [x, x] if compute_schur_vectors else [x]


def _schur_lower(x, *, compute_schur_vectors):
    aval = aval_of(x)
    batch, vector = aval.shape[:-2], aval.shape[:-1]
    eigenvalues = [(vector, aval.dtype)] * (1 if is_complex(x) else 2)
    t, vs, *_, info = lapack("gees", [x], [(aval.shape, aval.dtype), (aval.shape, aval.dtype),
                                            *eigenvalues, (batch, np.int32), (batch, np.int32)],
                             mode="V" if compute_schur_vectors else "N", sort="N")
    ok = eq(info, int32(0))
    return [nan_fill(ok, t), nan_fill(ok, vs)] if compute_schur_vectors else [nan_fill(ok, t)]


register_lowering(schur_p, lower_fun(_schur_lower))
front_batcher(schur_p)
