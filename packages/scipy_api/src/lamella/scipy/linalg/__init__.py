"""lamella.scipy.linalg: ``jax.scipy.linalg`` on lamella.numpy and lamella.lax.linalg.

Factorizations go through the LAPACK-backed primitives of lamella.lax.linalg
(``hessenberg`` on gehrd, pivoted ``qr`` on geqp3, tridiagonal ``solve`` on gtsv,
``eigh_tridiagonal``'s inverse iteration on perturbed tridiagonal solves); what
has no kernel there (``rsf2csf``, the matrix functions, Sturm bisection) is a
composition of lax operations. Every function takes leading batch axes, and
works under jit, grad and vmap.

    >>> import lamella.numpy as lnp
    >>> a = lnp.array([[4.0, 2.0], [2.0, 3.0]])
    >>> c = cho_factor(a)
    >>> cho_solve(c, lnp.array([2.0, 1.0]))
    Array([0.5, 0. ], dtype=float32)
"""

from lamella.scipy.linalg.cholesky import cho_factor, cho_solve, cholesky
from lamella.scipy.linalg.decompositions import eigh, rsf2csf, schur, svd
from lamella.scipy.linalg.expm import expm, expm_frechet
from lamella.scipy.linalg.hessenberg import hessenberg
from lamella.scipy.linalg.lu import lu, lu_factor, lu_solve
from lamella.scipy.linalg.matrix_functions import funm, polar, sqrtm
from lamella.scipy.linalg.qr import qr, qr_multiply
from lamella.scipy.linalg.solvers import det, inv, solve, solve_sylvester, solve_triangular
from lamella.scipy.linalg.special_matrices import (
    block_diag,
    circulant,
    companion,
    convolution_matrix,
    dft,
    fiedler,
    fiedler_companion,
    hadamard,
    hankel,
    helmert,
    hilbert,
    invhilbert,
    invpascal,
    leslie,
    pascal,
    toeplitz,
)
from lamella.scipy.linalg.tridiagonal import eigh_tridiagonal

__all__ = [
    "block_diag", "cho_factor", "cho_solve", "cholesky", "circulant", "companion",
    "convolution_matrix", "det", "dft", "eigh", "eigh_tridiagonal", "expm", "expm_frechet",
    "fiedler", "fiedler_companion", "funm", "hadamard", "hankel", "helmert", "hessenberg",
    "hilbert", "inv", "invhilbert", "invpascal", "leslie", "lu", "lu_factor", "lu_solve",
    "pascal", "polar", "qr", "qr_multiply", "rsf2csf", "schur", "solve", "solve_sylvester",
    "solve_triangular", "sqrtm", "svd", "toeplitz",
]
