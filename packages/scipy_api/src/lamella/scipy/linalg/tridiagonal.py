"""Eigenvalues and eigenvectors of symmetric (Hermitian) tridiagonal matrices:
``eigh_tridiagonal``.

Eigenvalues come from bisection on Sturm sequence counts (all wanted
eigenvalues in parallel, a ``scan`` over the diagonal inside a
``while_loop``): O(n) work per count, and an absolute accuracy of eps times
the norm, as LAPACK's ``stebz``.

Eigenvectors of up to a quarter of the spectrum come from inverse iteration, as
LAPACK's ``stein`` and JAX: each step solves ``(T - w_j I) x_j = v_j`` for all
wanted eigenvalues at once (``tridiagonal_solve`` with ``perturb_singular``,
O(n) per vector) from random starting vectors, and orthonormalizes the
solutions by a QR decomposition, in eigenvalue order. That is what keeps
eigenvectors of clustered eigenvalues orthogonal; for well-separated ones it
moves each vector by no more than its own error. Its derivatives need no dense
matrix: ``dw_j = v_j^T dT v_j`` and ``dv_j = -(T - w_j I)^+ dT v_j``, the
pseudo-inverse applied by one more perturbed solve and a projection.

The QR costs O(n k^2) for k vectors: beyond k = n/4 LAPACK's dense eigensolver
(O(n^3), with its own eigenvalues) is the faster (measured: equal at k = n/3 for
n = 256, k = 0.6 n for n = 1024), and computes them. Either way each eigenvector's
largest entry is positive (``stein``'s convention).

A Hermitian T (complex e) is ``D T_r D^H`` for the real T_r with off-diagonal
``|e|`` and the diagonal unitary D of e's running phases, so only real
matrices are ever solved.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

import lamella.lax as lax
import lamella.lax.linalg as lax_linalg
import lamella.numpy as lnp
import lamella.random as random
from lamella.core import ConcretizationTypeError, custom_jvp
from lamella.scipy.linalg.common import compiled, is_complex, real_dtype

__all__ = ["eigh_tridiagonal"]

# Inverse iteration steps. The first starts from random vectors, the second from the
# orthonormalized first solutions, whose own eigenvector's component is no longer small;
# more steps (LAPACK's stein takes up to five, JAX until norms stop growing, usually three)
# measured no smaller residuals.
_STEPS = 2


def _sturm_counts(d: Any, e2: Any, x: Any, pivmin: Any) -> Any:
    """For each shift in `x`, the number of eigenvalues below it: the count of
    negative pivots of the LDL^T factorization of T - x I."""
    def guard(q):
        return lnp.where(lnp.abs(q) < pivmin, -pivmin, q)

    def step(carry, diagonal_and_off):
        q, count = carry
        di, ei2 = diagonal_and_off
        q = guard(di - x - ei2 / q)
        return (q, count + (q < 0).astype(np.int32)), None

    q0 = guard(d[0] - x)
    (_, count), _ = lax.scan(step, (q0, (q0 < 0).astype(np.int32)), (d[1:], e2))
    return count


def _bisection(d: Any, e: Any, targets: Any, tol: Any) -> Any:
    """Eigenvalues number `targets` (0-based, increasing) of one real tridiagonal matrix."""
    dtype = d.dtype
    finfo = lnp.finfo(dtype)
    e_abs = lnp.abs(e)
    e2 = e_abs ** 2
    radius = lnp.concatenate([e_abs, lnp.zeros(1, dtype)]) + \
        lnp.concatenate([lnp.zeros(1, dtype), e_abs])
    low, high = lnp.min(d - radius), lnp.max(d + radius)
    norm = lnp.maximum(lnp.abs(low), lnp.abs(high))
    pivmin = finfo.tiny * lnp.maximum(1.0, lnp.max(e2, initial=0.0))
    abs_tol = finfo.eps * norm if tol is None else lnp.maximum(tol, finfo.eps * norm)
    # Widen Gershgorin's interval a little, so that its ends are strictly outside.
    slack = 2.1 * d.shape[0] * finfo.eps * norm + 4 * pivmin
    shape = targets.shape
    lower = lnp.full(shape, low - slack, dtype)
    upper = lnp.full(shape, high + slack, dtype)

    def keep_going(state):
        i, lower, upper = state
        return (i < finfo.nmant + 8) & (lnp.max(upper - lower) > abs_tol)

    def halve(state):
        i, lower, upper = state
        mid = (lower + upper) / 2
        below = _sturm_counts(d, e2, mid, pivmin) <= targets
        return i + 1, lnp.where(below, mid, lower), lnp.where(below, upper, mid)

    _, lower, upper = lax.while_loop(keep_going, halve, (0, lower, upper))
    return (lower + upper) / 2


def _shifted_solve(d: Any, e: Any, w: Any, rhs: Any) -> Any:
    """Row j of the result solves ``(T - w_j I) x = rhs[j]``, with LU's tiny pivots
    perturbed so that the solution stays finite where w_j is an eigenvalue."""
    k, n = rhs.shape
    below = lnp.broadcast_to(lnp.pad(e, (1, 0)), (k, n))
    above = lnp.broadcast_to(lnp.pad(e, (0, 1)), (k, n))
    x = lax_linalg.tridiagonal_solve(below, d[None, :] - w[:, None], above, rhs[:, :, None],
                                     perturb_singular=True)
    return x[:, :, 0]


def _inverse_iteration(d: Any, e: Any, w: Any, start: Any) -> Any:
    """Unit eigenvectors (columns) of the real tridiagonal (d, e) for its eigenvalues w
    (increasing), from the rows of `start`."""
    def step(_, v):
        x = _shifted_solve(d, e, w, v)
        # Rows scaled to a largest entry of one first: solutions of nearly singular
        # systems reach 1/tiny, and QR's norms would overflow.
        scale = lnp.max(lnp.abs(x), axis=1, keepdims=True)
        q, _ = lax_linalg.qr((x / lnp.where(scale == 0, 1, scale)).T, full_matrices=False)
        return q.T

    # Unit rows to start: an entry times 1/tiny (a perturbed zero pivot) must stay finite.
    v = start / lnp.linalg.norm(start, axis=1, keepdims=True)
    return _positive_largest(lax.fori_loop(0, _STEPS, step, v).T)


def _positive_largest(v: Any) -> Any:
    """v's columns, with the sign that makes each one's largest entry positive."""
    negative = -lnp.min(v, axis=0) > lnp.max(v, axis=0)
    return v * lnp.where(negative, -1, 1).astype(v.dtype)


def _by_inverse_iteration(n: int, k: int) -> bool:
    """Whether k eigenvectors of an n-by-n T are cheaper by inverse iteration than dense."""
    return 4 * k <= n


def _dense(d: Any, e: Any, targets: tuple[int, ...]) -> tuple[Any, Any]:
    """Eigenvalues and eigenvectors `targets` (a range) of the real tridiagonal (d, e),
    by LAPACK's dense eigensolver (differentiable through lax.linalg.eigh)."""
    below = lnp.diag(e, -1)
    v, w = lax_linalg.eigh(lnp.diag(d) + below + below.T, symmetrize_input=False,
                           subset_by_index=(targets[0], targets[-1] + 1))
    return w, v


def _start(key: Any, k: int, n: int, dtype: Any) -> Any:
    """Random starting vectors (rows) for inverse iteration; key 42 by default, as JAX."""
    return random.normal(random.key(42) if key is None else key, (k, n), dtype)


def _tridiagonal_times(dd: Any, de: Any, v: Any) -> Any:
    """dT v, for the symmetric tridiagonal dT with diagonal dd and off-diagonal de."""
    return (dd[:, None] * v + lnp.pad(de[:, None] * v[:-1], ((1, 0), (0, 0)))
            + lnp.pad(de[:, None] * v[1:], ((0, 1), (0, 0))))


def _eigenvalue_tangents(v: Any, dd: Any, de: Any) -> Any:
    return lnp.sum(v * _tridiagonal_times(dd, de, v), axis=0)


@functools.partial(custom_jvp, nondiff_argnums=(2, 3))
def _eigenvalues(d: Any, e: Any, targets: tuple[int, ...], tol: Any) -> Any:
    return _bisection(d, e, lnp.asarray(targets, np.int32), tol)


@_eigenvalues.defjvp
def _eigenvalues_jvp(targets, tol, primals, tangents):
    (d, e), (dd, de) = primals, tangents
    w = _eigenvalues(d, e, targets, tol)
    if _by_inverse_iteration(d.shape[0], len(targets)):
        v = _inverse_iteration(d, e, w, _start(None, len(targets), d.shape[0], d.dtype))
    else:
        v = _dense(d, e, targets)[1]
    return w, _eigenvalue_tangents(v, dd, de)


@functools.partial(custom_jvp, nondiff_argnums=(3, 4))
def _eigenpairs(d: Any, e: Any, start: Any, targets: tuple[int, ...],
                tol: Any) -> tuple[Any, Any]:
    w = _bisection(d, e, lnp.asarray(targets, np.int32), tol)
    return w, _inverse_iteration(d, e, w, start)


@_eigenpairs.defjvp
def _eigenpairs_jvp(targets, tol, primals, tangents):
    (d, e, start), (dd, de, _) = primals, tangents
    w, v = _eigenpairs(d, e, start, targets, tol)
    dtv = _tridiagonal_times(dd, de, v)
    dw = lnp.sum(v * dtv, axis=0)
    # dv_j = -(T - w_j I)^+ dT v_j: solve with v_j projected out of the right-hand side
    # and of the solution, where the (perturbed) singular direction lives.
    rhs = dtv - v * dw[None, :]
    x = _shifted_solve(d, e, w, rhs.T).T
    dv = -(x - v * lnp.sum(v * x, axis=0)[None, :])
    return (w, v), (dw, dv)


def _real_form(d: Any, e: Any) -> tuple[Any, Any, Any]:
    """(d, e, phases) of the real symmetric tridiagonal D^H T D, with D = diag(phases):
    ``|e|`` below and above the diagonal; phases None for real e."""
    d = lnp.real(d)
    if not is_complex(e):
        return d, e, None
    # Where e is 0 its phase is 1; the double where keeps the derivative finite there.
    nonzero = e != 0
    safe = lnp.where(nonzero, e, 1)
    magnitude = lnp.where(nonzero, lnp.abs(safe), 0)
    phases = lnp.cumprod(lnp.concatenate([lnp.ones(1, e.dtype), safe / lnp.abs(safe)]))
    return d, magnitude, phases


def _eigenvalues_call(d: Any, e: Any, targets: tuple[int, ...], tol: Any) -> Any:
    d, e, _ = _real_form(d, e)
    return _eigenvalues(d, e, targets, tol)


def _rephased(v: Any, phases: Any) -> Any:
    """The eigenvectors D v of T = D T_r D^H, from those of T_r."""
    return v if phases is None else phases[:, None] * v.astype(phases.dtype)


def _inverse_iteration_call(d: Any, e: Any, start: Any, targets: tuple[int, ...],
                            tol: Any) -> tuple[Any, Any]:
    d, e, phases = _real_form(d, e)
    w, v = _eigenpairs(d, e, start, targets, tol)
    return w, _rephased(v, phases)


def _dense_call(d: Any, e: Any, targets: tuple[int, ...]) -> tuple[Any, Any]:
    d, e, phases = _real_form(d, e)
    w, v = _dense(d, e, targets)
    return w, _rephased(_positive_largest(v), phases)


def _count_below(d: Any, e: Any, x: float) -> int:
    """The number of eigenvalues below x, as a Python int (needs concrete d and e)."""
    finfo = lnp.finfo(real_dtype(d.dtype))
    e2 = lnp.abs(e) ** 2
    pivmin = finfo.tiny * lnp.maximum(1.0, lnp.max(e2, initial=0.0))
    counts = _sturm_counts(lnp.real(d), e2, lnp.full((1,), x, real_dtype(d.dtype)), pivmin)
    try:
        return int(counts[0])
    except ConcretizationTypeError:
        raise ValueError("eigh_tridiagonal: select='v' returns as many eigenvalues as lie in "
                         "select_range, so it needs concrete d and e (not traced under jit or "
                         "vmap); use select='i' with index bounds there") from None


def _targets(d: Any, e: Any, select: str, select_range: Any) -> tuple[int, ...]:
    n = d.shape[-1]
    if select == "a":
        return tuple(range(n))
    if select_range is None:
        raise ValueError(f"eigh_tridiagonal: select={select!r} needs select_range")
    lo, hi = select_range
    if select == "i":
        if not 0 <= lo <= hi < n:
            raise ValueError(f"eigh_tridiagonal: select_range must be (lo, hi) with "
                             f"0 <= lo <= hi < {n} for select='i'; got {select_range!r}")
        return tuple(range(int(lo), int(hi) + 1))
    if d.ndim != 1:
        raise ValueError("eigh_tridiagonal: select='v' takes one matrix (1-D d and e)")
    if lo >= hi:
        raise ValueError(f"eigh_tridiagonal: select_range must be (low, high) with low < high "
                         f"for select='v'; got {select_range!r}")
    # SciPy's interval is half-open: eigenvalues in (low, high].
    return tuple(range(_count_below(d, e, float(np.nextafter(lo, np.inf))),
                       _count_below(d, e, float(np.nextafter(hi, np.inf)))))


def eigh_tridiagonal(d: Any, e: Any, *, eigvals_only: bool = False, select: str = "a",
                     select_range: tuple[float, float] | None = None, tol: float | None = None,
                     key: Any = None) -> Any:
    """Eigenvalues (increasing) of the symmetric tridiagonal matrix with diagonal `d`
    (n,) and off-diagonal `e` (n-1,), and eigenvectors as columns unless
    `eigvals_only`. Complex `e` makes it Hermitian (e below the diagonal).

    `select`: ``'a'`` all; ``'i'`` those of index ``select_range[0]..select_range[1]``;
    ``'v'`` those in ``(select_range[0], select_range[1]]`` (eager only: the count
    depends on the values). Eigenvalues come from bisection, `tol` its absolute
    accuracy (at least eps times the norm), and up to n/4 eigenvectors from inverse
    iteration; more eigenvectors come with their eigenvalues from LAPACK's dense
    solver, which is then the faster. `key` is the PRNG key of inverse iteration's
    random starting vectors (``random.key(42)`` when None, as in JAX): it only
    chooses the basis of a cluster of equal eigenvalues. Each eigenvector's
    largest entry is positive (real e). Differentiable (eigenvectors where the
    eigenvalues are distinct); leading axes of `d` and `e` are batch axes.

    >>> import lamella.numpy as lnp
    >>> d, e = lnp.array([1.0, 2.0, 3.0, 4.0]), lnp.array([1.0, 1.0, 1.0])
    >>> eigh_tridiagonal(d, e, eigvals_only=True)
    Array([0.2547188, 1.8227171, 3.1772828, 4.745281 ], dtype=float32)
    >>> w, v = eigh_tridiagonal(d, e, select="i", select_range=(0, 0))
    >>> v.round(3).T
    Array([[ 0.77800006, -0.58000004,  0.23400001, -0.062     ]], dtype=float32)
    """
    if select not in ("a", "i", "v"):
        raise ValueError(f"eigh_tridiagonal: select must be 'a', 'i' or 'v'; got {select!r}")
    d, e = lnp.asarray(d), lnp.asarray(e)
    if d.dtype != e.dtype:
        raise TypeError(f"eigh_tridiagonal: d and e must have one dtype; got {d.dtype} and "
                        f"{e.dtype}")
    if not lnp.issubdtype(d.dtype, lnp.inexact):
        raise TypeError(f"eigh_tridiagonal: d and e must be floating or complex; got {d.dtype}")
    if d.ndim < 1 or e.ndim < 1 or e.shape[-1] != max(d.shape[-1] - 1, 0):
        raise ValueError(f"eigh_tridiagonal: e must have one entry fewer than d (along the last "
                         f"axis); got d.shape={d.shape} and e.shape={e.shape}")
    targets = _targets(d, e, select, select_range)
    n, k = d.shape[-1], len(targets)
    real = real_dtype(d.dtype)
    if n == 0 or k == 0:
        w = lnp.zeros((*d.shape[:-1], k), real)
        return w if eigvals_only else (w, lnp.zeros((*d.shape[:-1], n, k), d.dtype))
    if eigvals_only:
        return compiled(_eigenvalues_call, (1, 1), targets=targets, tol=tol)(d, e)
    if not _by_inverse_iteration(n, k):
        return compiled(_dense_call, (1, 1), targets=targets)(d, e)
    start = _start(key, k, n, real)
    return compiled(_inverse_iteration_call, (1, 1, 2), targets=targets, tol=tol)(d, e, start)
