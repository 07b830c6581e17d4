"""Matrix functions: ``funm`` (any scalar function, by the Schur-Parlett recurrence),
``sqrtm`` (the Schur method) and ``polar`` (QDWH or SVD).

``funm`` and ``sqrtm`` work on the complex Schur form ``a = z t z^H`` and fill
the upper triangle of f(t) one superdiagonal at a time (each diagonal in
parallel, O(n^2) work per diagonal), so their results are complex, as in JAX.
``sqrtm``'s JVP solves ``X dX + dX X = dA`` in the same Schur basis (the
Schur decomposition itself has no derivative). ``polar``'s unitary factor has
its own JVP (from ``u^H da = Ω p + dp``), shared by both methods.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

import lamella.lax as lax
import lamella.lax.linalg as lax_linalg
import lamella.numpy as lnp
from lamella.core import custom_jvp
from lamella.scipy.linalg.common import (
    check_matrix,
    compiled,
    complex_dtype,
    inexact,
    mH,
    real_dtype,
)
from lamella.scipy.linalg.solvers import triangular_sylvester

__all__ = ["funm", "polar", "sqrtm"]


def _fill_by_superdiagonals(t: Any, diagonal: Any, entry: Callable) -> Any:
    """The upper triangular f with diagonal `diagonal` whose entries (i, i + p), for
    p = 1, 2, ..., are ``entry(f, t, i, j, inner)``, where `inner` holds the sums
    over i < k < j of ``f[i, k] t[k, j]`` and ``t[i, k] f[k, j]``, and ``f[i, k] f[k, j]``."""
    n = t.shape[0]
    rows = lnp.arange(n)

    def superdiagonal(p, f):
        j = lnp.minimum(rows + p, n - 1)
        between = (rows[None, :] > rows[:, None]) & (rows[None, :] < j[:, None])
        f_cols, t_cols = f[:, j].T, t[:, j].T  # row i holds column j(i)
        inner = {name: lnp.sum(lnp.where(between, left * right, 0), axis=1)
                 for name, left, right in (("ft", f, t_cols), ("tf", t, f_cols),
                                           ("ff", f, f_cols))}
        values = entry(f, t, rows, j, inner)
        return f.at[rows, j].set(lnp.where(rows + p < n, values, f[rows, j]))

    return lax.fori_loop(1, n, superdiagonal, lnp.diag(diagonal))


def _funm_2d(a: Any, func: Callable) -> tuple[Any, Any]:
    t, z = lax_linalg.schur(a)
    f_diag = func(lnp.diagonal(t)).astype(t.dtype)

    def entry(f, t, i, j, inner):
        # Parlett, from f t = t f:
        # f_ij (t_jj - t_ii) = t_ij (f_jj - f_ii) + sum_k (t_ik f_kj - f_ik t_kj).
        numerator = t[i, j] * (f[j, j] - f[i, i]) + inner["tf"] - inner["ft"]
        return numerator / (t[j, j] - t[i, i])

    f = _fill_by_superdiagonals(t, f_diag, entry)
    tol = lnp.finfo(a.dtype).eps
    gaps = lnp.abs(lnp.diagonal(t)[:, None] - lnp.diagonal(t)[None, :])
    min_gap = lnp.min(lnp.where(lnp.triu(lnp.ones(gaps.shape, bool), 1), gaps, lnp.inf),
                      initial=lnp.inf)
    min_gap = lnp.where(min_gap == 0, tol, min_gap)
    strict = lnp.sum(lnp.abs(lnp.triu(t, 1)), axis=0)
    err = lnp.minimum(1.0, lnp.maximum(tol, tol / min_gap * lnp.max(strict, initial=0.0)))
    result = z @ f @ mH(z)
    err = lnp.where(lnp.all(lnp.isfinite(result)), err, lnp.inf)
    return result, err.astype(real_dtype(a.dtype))


def funm(A: Any, func: Callable[[Any], Any], disp: bool = True) -> Any:
    """The matrix function f(A) for a scalar function `func` applied elementwise to
    a vector (of eigenvalues), by the Schur-Parlett recurrence; complex result.
    With ``disp=False``, returns ``(f(A), errest)``, SciPy's error estimate.
    Repeated eigenvalues make the recurrence divide by zero (NaN or infinity),
    as in SciPy. Leading axes are batch axes.

    >>> import lamella.numpy as lnp
    >>> funm(lnp.array([[1.0, 1.0], [0.0, 2.0]]), lnp.exp).real.round(3)
    Array([[2.7180002, 4.671    ],
           [0.       , 7.3890004]], dtype=float32)
    """
    A, = inexact(A)
    check_matrix("funm", A, "A")
    A = A.astype(complex_dtype(A.dtype))
    if A.shape[-1] == 0:
        return A if disp else (A, lnp.zeros(A.shape[:-2], real_dtype(A.dtype)))
    result, err = compiled(_funm_2d, (2,), func=func)(A)
    return result if disp else (result, err)


def _sqrtm_triangular(t: Any) -> Any:
    """The principal square root of an upper triangular matrix:
    u_ij (u_ii + u_jj) = t_ij - sum_{i<k<j} u_ik u_kj."""
    def entry(u, t, i, j, inner):
        return (t[i, j] - inner["ff"]) / (u[i, i] + u[j, j])

    return _fill_by_superdiagonals(t, lnp.sqrt(lnp.diagonal(t)), entry)


@custom_jvp
def _sqrtm_2d(a: Any) -> Any:
    t, z = lax_linalg.schur(a)
    return z @ _sqrtm_triangular(t) @ mH(z)


@_sqrtm_2d.defjvp
def _sqrtm_2d_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    t, z = lax_linalg.schur(lax.stop_gradient(a))
    u = _sqrtm_triangular(t)
    # X dX + dX X = dA becomes u Y + Y u = z^H dA z, triangular in the Schur basis.
    dy = triangular_sylvester(u, u, mH(z) @ da @ z)
    return z @ u @ mH(z), z @ dy @ mH(z)


def sqrtm(A: Any, blocksize: int = 1) -> Any:
    """The principal square root X of each square matrix (X @ X = A), by the
    Schur method; complex result. `blocksize` (SciPy's blocking of the
    recurrence) must be at least 1 and does not change the result. Leading
    axes are batch axes; differentiable where A has no eigenvalue on the
    closed negative real axis.

    >>> import lamella.numpy as lnp
    >>> sqrtm(lnp.array([[4.0, 0.0], [0.0, 9.0]])).real
    Array([[2., 0.],
           [0., 3.]], dtype=float32)
    """
    if not isinstance(blocksize, (int, np.integer)) or blocksize < 1:
        raise ValueError(f"sqrtm: blocksize must be a positive integer; got {blocksize!r}")
    A, = inexact(A)
    check_matrix("sqrtm", A, "A")
    A = A.astype(complex_dtype(A.dtype))
    if A.shape[-1] == 0:
        return A
    return compiled(_sqrtm_call, (2,))(A)


def _sqrtm_call(a: Any) -> Any:
    return _sqrtm_2d(a)


# --- polar -------------------------------------------------------------------------


def _qdwh_2d(a: Any, eps: Any, max_iterations: int) -> Any:
    """The unitary polar factor of a tall or square matrix by the QR-based dynamically
    weighted Halley iteration (Nakatsukasa, Bai & Gygi 2010)."""
    m, n = a.shape
    dtype = real_dtype(a.dtype)
    eye = lnp.eye(n, dtype=a.dtype)
    machine_eps = lnp.finfo(dtype).eps
    eps = machine_eps if eps is None else eps
    # sqrt(||a||_1 ||a||_inf) bounds the 2-norm, so the scaled singular values are <= 1.
    alpha = lnp.sqrt(lnp.max(lnp.sum(lnp.abs(a), axis=0)) * lnp.max(lnp.sum(lnp.abs(a), axis=1)))
    x = a / lnp.where(alpha == 0, 1, alpha).astype(a.dtype)
    tol_l = 10 * machine_eps / 2
    tol_x = (5 * eps) ** (1 / 3)

    def weights(l):
        l2 = l * l
        d = (4 * (1 - l2) / (l2 * l2)) ** (1 / 3)
        a_ = lnp.sqrt(1 + d) + 0.5 * lnp.sqrt(8 - 4 * d + 8 * (2 - l2) / (l2 * lnp.sqrt(1 + d)))
        b = (a_ - 1) ** 2 / 4
        return a_, b, a_ + b - 1

    def qr_step(x, a_, b, c):
        q, _ = lax_linalg.qr(lnp.concatenate([lnp.sqrt(c).astype(x.dtype) * x, eye]),
                             full_matrices=False)
        return (b / c) * x + ((a_ - b / c) / lnp.sqrt(c)) * (q[:m] @ mH(q[m:]))

    def cholesky_step(x, a_, b, c):
        w = lax_linalg.cholesky(eye + c * (mH(x) @ x))
        y = lax_linalg.triangular_solve(w, x, left_side=False, lower=True, transpose_a=True,
                                        conjugate_a=True)
        y = lax_linalg.triangular_solve(w, y, left_side=False, lower=True)
        return (b / c) * x + (a_ - b / c) * y

    def keep_going(state):
        k, _, l, change = state
        return (k < max_iterations) & ((lnp.abs(1 - l) > tol_l) | (change > tol_x))

    def step(state):
        k, x, l, _ = state
        a_, b, c = weights(l)
        # The Cholesky step is cheaper and stable once c is moderate.
        new = lax.cond(c > 100, qr_step, cholesky_step, x, a_.astype(x.dtype),
                       b.astype(x.dtype), c.astype(x.dtype))
        l = lnp.minimum(1.0, l * (a_ + b * l * l) / (1 + c * l * l))
        change = lnp.linalg.norm(new - x) / lnp.maximum(lnp.linalg.norm(new), machine_eps)
        return k + 1, new, l, change

    start = (0, x, lnp.asarray(machine_eps, dtype), lnp.asarray(np.inf, dtype))
    return lax.while_loop(keep_going, step, start)[1]


def _svd_unitary_2d(a: Any) -> Any:
    w, _, vh = lax_linalg.svd(a, full_matrices=False)
    return w @ vh


@functools.partial(custom_jvp, nondiff_argnums=(1, 2, 3))
def _unitary_factor(a: Any, method: str, eps: Any, max_iterations: int) -> Any:
    """u of a = u p, for a tall or square matrix."""
    if method == "svd":
        return _svd_unitary_2d(a)
    return _qdwh_2d(a, eps, max_iterations)


@_unitary_factor.defjvp
def _unitary_factor_jvp(method, eps, max_iterations, primals, tangents):
    (a,), (da,) = primals, tangents
    u = _unitary_factor(a, method, eps, max_iterations)
    p = mH(u) @ a
    p = (p + mH(p)) / 2
    # u^H da = Ω p + dp with Ω skew-Hermitian and dp Hermitian, so
    # p Ω + Ω p = M - M^H for M = u^H da: a Sylvester equation, diagonal in p's eigenbasis.
    s_vecs, s = lax_linalg.eigh(p)
    m = mH(u) @ da
    skew = mH(s_vecs) @ (m - mH(m)) @ s_vecs
    omega = s_vecs @ (skew / (s[:, None] + s[None, :]).astype(skew.dtype)) @ mH(s_vecs)
    # The part of da outside u's column space moves u there: (I - u u^H) da p^-1.
    outside = da - u @ m
    p_inv = s_vecs @ (mH(s_vecs) / s[:, None].astype(s_vecs.dtype))
    return u, u @ omega + outside @ p_inv


def polar(a: Any, side: str = "right", *, method: str = "qdwh", eps: float | None = None,
          max_iterations: int | None = None) -> tuple[Any, Any]:
    """The polar decomposition ``a = u @ p`` (`side` ``'right'``) or ``a = p @ u``
    (``'left'``): `u` has orthonormal columns (rows, for wide `a`), `p` is Hermitian
    positive semidefinite. `method` ``'qdwh'`` (the QR-based dynamically
    weighted Halley iteration; `eps` its tolerance, at most `max_iterations`
    iterations, 10 by default) or ``'svd'``. Any shape (JAX's QDWH takes only
    tall matrices for ``'right'``). Leading axes are batch axes.

    >>> import lamella.numpy as lnp
    >>> u, p = polar(lnp.array([[0.0, -2.0], [3.0, 0.0]]))
    >>> p.round(3)
    Array([[ 3.0000002, -0.       ],
           [-0.       ,  2.       ]], dtype=float32)
    """
    if side not in ("right", "left"):
        raise ValueError(f"polar: side must be 'right' or 'left'; got {side!r}")
    if method not in ("qdwh", "svd"):
        raise ValueError(f"polar: method must be 'qdwh' or 'svd'; got {method!r}")
    a, = inexact(a)
    check_matrix("polar", a, square=False)
    iterations = 10 if max_iterations is None else int(max_iterations)
    return compiled(_polar, (2,), side=side, method=method, eps=eps,
                    max_iterations=iterations)(a)


def _polar(a: Any, side: str, method: str, eps: Any, max_iterations: int) -> tuple[Any, Any]:
    m, n = a.shape
    # Wide matrices: the unitary factor of a^H is u^H.
    if m >= n:
        u = _unitary_factor(a, method, eps, max_iterations)
    else:
        u = mH(_unitary_factor(mH(a), method, eps, max_iterations))
    p = mH(u) @ a if side == "right" else a @ mH(u)
    return u, (p + mH(p)) / 2
