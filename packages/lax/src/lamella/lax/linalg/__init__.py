"""Linear algebra primitives (``jax.lax.linalg``): factorizations through LAPACK.

Every name of ``jax.lax.linalg`` 0.10.2, with JAX's parameters and outputs:

- ``cholesky``, ``cholesky_update``, ``symmetric_product`` (positive_definite.py)
- ``triangular_solve`` (triangular.py), ``tridiagonal_solve`` (tridiagonal_systems.py)
- ``lu``, ``lu_pivots_to_permutation`` (lu_decomposition.py)
- ``qr`` (with column ``pivoting``), ``householder_product``, ``ormqr`` (qr_decomposition.py)
- ``eigh`` (with ``subset_by_index``), ``EighImplementation`` (hermitian_eigen.py)
- ``svd`` (with ``subset_by_index`` and ``algorithm``), ``SvdAlgorithm`` (singular_values.py)
- ``eig`` (with ``enable_eigvec_derivs``), ``EigImplementation``, ``schur`` (general_eigen.py)
- ``hessenberg``, ``tridiagonal`` (condensed_forms.py)
- ``qdwh``, the QDWH polar decomposition (polar.py, a composition)

and their ``*_p`` primitives. All take batches of matrices (leading
dimensions) in float32, float64, complex64 and complex128, batch under vmap at
any axis, and lower to jaxlib's CPU LAPACK kernels (kernels.py): a StableHLO
``custom_call`` to ``lapack_?potrf_ffi`` and friends, wrapped in lax operations
that read the kernel's ``info`` output, so failed factorizations come back
filled with NaN, as in JAX. JVPs (hence VJPs) follow JAX's rules where JAX has
them; ``subset_by_index`` (JAX: TPU only) works here on CPU, derivatives
included, and ``cholesky_update`` and ``symmetric_product`` batch and
differentiate, which JAX's do not.

    >>> import numpy as np
    >>> a = np.array([[4.0, 2.0], [2.0, 3.0]], np.float32)
    >>> cholesky(a)
    Array([[2.       , 0.       ],
           [1.       , 1.4142135]], dtype=float32)

Caveat, as in JAX: derivatives of eigenvectors (``eigh``, ``eig``) and of
singular vectors (``svd``) are ill-defined where eigenvalues (singular values)
repeat; their JVPs divide by differences of eigenvalues and return infinities
or NaNs there. Derivatives of the eigenvalues and singular values themselves,
and of functions invariant to the choice of basis, are fine.
"""

from lamella.lax.linalg.condensed_forms import hessenberg, hessenberg_p, tridiagonal, tridiagonal_p
from lamella.lax.linalg.general_eigen import EigImplementation, eig, eig_p, schur, schur_p
from lamella.lax.linalg.hermitian_eigen import EighImplementation, eigh, eigh_p
from lamella.lax.linalg.lu_decomposition import (
    lu,
    lu_p,
    lu_pivots_to_permutation,
    lu_pivots_to_permutation_p,
)
from lamella.lax.linalg.matrices import symmetrize
from lamella.lax.linalg.polar import qdwh
from lamella.lax.linalg.positive_definite import (
    cholesky,
    cholesky_p,
    cholesky_update,
    cholesky_update_p,
    symmetric_product,
    symmetric_product_p,
)
from lamella.lax.linalg.qr_decomposition import (
    householder_product,
    householder_product_p,
    ormqr,
    ormqr_p,
    qr,
    qr_p,
)
from lamella.lax.linalg.singular_values import SvdAlgorithm, svd, svd_p
from lamella.lax.linalg.triangular import triangular_solve, triangular_solve_p
from lamella.lax.linalg.tridiagonal_systems import tridiagonal_solve, tridiagonal_solve_p

__all__ = [
    "EigImplementation", "EighImplementation", "SvdAlgorithm", "cholesky", "cholesky_p",
    "cholesky_update", "cholesky_update_p", "eig", "eig_p", "eigh", "eigh_p", "hessenberg",
    "hessenberg_p", "householder_product", "householder_product_p", "lu", "lu_p",
    "lu_pivots_to_permutation", "lu_pivots_to_permutation_p", "ormqr", "ormqr_p", "qdwh", "qr",
    "qr_p", "schur", "schur_p", "svd", "svd_p", "symmetric_product", "symmetric_product_p",
    "symmetrize", "triangular_solve", "triangular_solve_p", "tridiagonal", "tridiagonal_p",
    "tridiagonal_solve", "tridiagonal_solve_p",
]
