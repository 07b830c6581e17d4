"""Spectral and orthogonal decompositions: ``svd``, ``eigh`` (also the generalized
problem with `b`, which JAX lacks), ``schur`` and ``rsf2csf``.

``rsf2csf`` has no LAPACK kernel: it is SciPy's sweep of Givens rotations,
one 2-by-2 block at a time from the bottom, written as a ``fori_loop`` that
updates two rows and two columns per step.
"""

from __future__ import annotations

from typing import Any

import lamella.lax as lax
import lamella.lax.linalg as lax_linalg
import lamella.numpy as lnp
from lamella.scipy.linalg.common import (
    check_matrix,
    compiled,
    complex_dtype,
    hermitian_from,
    inexact,
    mH,
    triangular_solve,
)

__all__ = ["eigh", "rsf2csf", "schur", "svd"]


def svd(a: Any, full_matrices: bool = True, compute_uv: bool = True, overwrite_a: bool = False,
        check_finite: bool = True, lapack_driver: str = "gesdd") -> Any:
    """Singular value decomposition ``a = u @ diag(s) @ vh``: ``(u, s, vh)``, or `s`
    alone without `compute_uv`. `s` is real and decreasing. `lapack_driver` is
    checked (``'gesdd'`` or ``'gesvd'``); both give the same factors here.

    >>> import lamella.numpy as lnp
    >>> svd(lnp.array([[3.0, 0.0], [0.0, -4.0]]), compute_uv=False)
    Array([4., 3.], dtype=float32)
    """
    del overwrite_a, check_finite
    if lapack_driver not in ("gesdd", "gesvd"):
        raise ValueError(f"svd: lapack_driver must be 'gesdd' or 'gesvd'; got {lapack_driver!r}")
    a, = inexact(a)
    check_matrix("svd", a, square=False)
    return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def schur(a: Any, output: str = "real") -> tuple[Any, Any]:
    """Schur decomposition ``a = z @ t @ z^H``: ``(t, z)``. With ``output='real'``, a
    real `a` gives a quasi-triangular `t` (2-by-2 blocks for complex pairs);
    ``'complex'`` gives a triangular complex `t`.

    >>> import lamella.numpy as lnp
    >>> t, z = schur(lnp.array([[1.0, 2.0], [0.0, 3.0]]))
    >>> t
    Array([[1., 2.],
           [0., 3.]], dtype=float32)
    """
    if output not in ("real", "complex"):
        raise ValueError(f"schur: output must be 'real' or 'complex'; got {output!r}")
    a, = inexact(a)
    check_matrix("schur", a)
    if output == "complex":
        a = a.astype(complex_dtype(a.dtype))
    t, z = lax_linalg.schur(a)
    return t, z


def _rsf2csf_2d(t: Any, z: Any) -> tuple[Any, Any]:
    n = t.shape[0]
    eps = lnp.finfo(t.dtype).eps

    def step(i, tz):
        t, z = tz
        m = n - 1 - i
        block = lax.dynamic_slice(t, (m - 1, m - 1), (2, 2))
        (p, q), (r, s) = block[0], block[1]
        split = lnp.abs(r) > eps * (lnp.abs(p) + lnp.abs(s))
        # The eigenvalue of the block with positive imaginary part, as LAPACK orders them.
        mu = (p + s) / 2 + lnp.sqrt(((p - s) / 2) ** 2 + q * r) - s
        norm = lnp.sqrt(lnp.abs(mu) ** 2 + lnp.abs(r) ** 2)
        norm = lnp.where(split, norm, 1)
        c, sn = lnp.where(split, mu / norm, 1), lnp.where(split, r / norm, 0)
        g = lnp.array([[lnp.conj(c), lnp.conj(sn)], [-sn, c]])
        rows = lax.dynamic_slice(t, (m - 1, 0), (2, n))
        t = lax.dynamic_update_slice(t, g @ rows, (m - 1, 0))
        cols = lax.dynamic_slice(t, (0, m - 1), (n, 2))
        t = lax.dynamic_update_slice(t, cols @ mH(g), (0, m - 1))
        zcols = lax.dynamic_slice(z, (0, m - 1), (n, 2))
        z = lax.dynamic_update_slice(z, zcols @ mH(g), (0, m - 1))
        t = t.at[m, m - 1].set(lnp.where(split, 0, t[m, m - 1]))
        return t, z

    return lax.fori_loop(0, max(n - 1, 0), step, (t, z))


def rsf2csf(T: Any, Z: Any, check_finite: bool = True) -> tuple[Any, Any]:
    """Converts a real Schur form ``(T, Z)`` (from ``schur(a)``) to the complex Schur
    form of the same matrix: triangular complex `T`, unitary `Z`. Leading axes
    are batch axes.

    >>> import lamella.numpy as lnp
    >>> t, z = rsf2csf(lnp.array([[0.0, 1.0], [-1.0, 0.0]]), lnp.eye(2))
    >>> t.dtype, float(abs(t[1, 0]))
    (dtype('complex64'), 0.0)
    """
    del check_finite
    T, Z = inexact(T, Z)
    check_matrix("rsf2csf", T, "T")
    check_matrix("rsf2csf", Z, "Z")
    if T.shape != Z.shape:
        raise ValueError(f"rsf2csf: T and Z must have the same shape; got T.shape={T.shape} "
                         f"and Z.shape={Z.shape}")
    dtype = complex_dtype(T.dtype)
    return compiled(_rsf2csf_2d, (2, 2))(T.astype(dtype), Z.astype(dtype))


def eigh(a: Any, b: Any = None, lower: bool = True, eigvals_only: bool = False,
         overwrite_a: bool = False, overwrite_b: bool = False, turbo: bool = True,
         eigvals: Any = None, type: int = 1, check_finite: bool = True, *,
         subset_by_index: Any = None) -> Any:
    """Eigenvalues `w` (increasing) and eigenvectors `v` (columns) of Hermitian `a`:
    ``(w, v)``, or `w` with `eigvals_only`. Only the triangle named by `lower` is read.

    With `b` (Hermitian positive definite), the generalized problem of `type` 1
    (``a v = w b v``), 2 (``a b v = w v``) or 3 (``b a v = w v``), with v normalized
    as SciPy does (``v^H b v = I`` for types 1 and 2, ``v^H b^-1 v = I`` for 3).
    `eigvals` = ``(lo, hi)``, or SciPy's newer spelling ``subset_by_index``, keeps
    eigenpairs lo..hi (inclusive, by index; JAX has neither). Their derivatives
    are those of the whole decomposition's columns lo..hi.

    >>> import lamella.numpy as lnp
    >>> eigh(lnp.array([[2.0, 1.0], [1.0, 2.0]]), eigvals_only=True)
    Array([1., 3.], dtype=float32)
    """
    del overwrite_a, overwrite_b, turbo, check_finite
    if type not in (1, 2, 3):
        raise ValueError(f"eigh: type must be 1, 2 or 3; got {type!r}")
    a, = inexact(a)
    check_matrix("eigh", a)
    subset = _subset("eigh", a.shape[-1], eigvals, subset_by_index)
    if b is None:
        v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=False, subset_by_index=subset)
    else:
        a, b = inexact(a, b)
        check_matrix("eigh", b, "b")
        if b.shape[-1] != a.shape[-1]:
            raise ValueError(f"eigh: a and b must be matrices of one size; got a.shape="
                             f"{a.shape} and b.shape={b.shape}")
        v, w = compiled(_generalized_eigh, lower=bool(lower), type=type, subset=subset)(a, b)
    return w if eigvals_only else (w, v)


def _subset(name: str, n: int, eigvals: Any, subset_by_index: Any) -> tuple[int, int] | None:
    """lax.linalg.eigh's half-open ``subset_by_index`` for SciPy's inclusive (lo, hi)."""
    if eigvals is not None and subset_by_index is not None:
        raise ValueError(f"{name}: give eigvals or subset_by_index, not both (they are one "
                         "option, under its old and new SciPy names)")
    chosen = eigvals if eigvals is not None else subset_by_index
    if chosen is None:
        return None
    arg = "eigvals" if eigvals is not None else "subset_by_index"
    lo, hi = chosen
    if not 0 <= lo <= hi < n:
        raise ValueError(f"{name}: {arg} must be (lo, hi) with 0 <= lo <= hi < {n}; "
                         f"got {chosen!r}")
    return int(lo), int(hi) + 1


def _generalized_eigh(a: Any, b: Any, lower: bool, type: int,
                      subset: tuple[int, int] | None) -> tuple[Any, Any]:
    # With b = L L^H, every type becomes a standard problem for a matrix congruent to a.
    a = hermitian_from(a, lower)
    l_factor = lax_linalg.cholesky(b if lower else mH(b), symmetrize_input=False)
    if type == 1:
        c = triangular_solve(l_factor, mH(triangular_solve(l_factor, a, lower=True)),
                             lower=True)
    else:
        c = mH(l_factor) @ a @ l_factor
    v, w = lax_linalg.eigh(c, symmetrize_input=True, subset_by_index=subset)
    if type == 3:
        return l_factor @ v, w
    return triangular_solve(l_factor, v, lower=True, transpose_a=True, conjugate_a=True), w
