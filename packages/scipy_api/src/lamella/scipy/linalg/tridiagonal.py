"""Eigenvalues and eigenvectors of symmetric (Hermitian) tridiagonal matrices:
``eigh_tridiagonal``.

lamella.lax.linalg has no tridiagonal kernel yet. Eigenvalues alone come from
bisection on Sturm sequence counts (all wanted eigenvalues in parallel, a
``scan`` over the diagonal inside a ``while_loop``): O(n) work per count, and
an absolute accuracy of eps times the norm, as LAPACK's ``stebz``. Their JVP
is ``v^T dT v`` with eigenvectors of the dense matrix. Eigenvectors come from
``eigh`` of the dense tridiagonal matrix (LAPACK), which returns the
eigenvalues with them.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

import lamella.lax as lax
import lamella.lax.linalg as lax_linalg
import lamella.numpy as lnp
from lamella.core import ConcretizationTypeError, custom_jvp
from lamella.scipy.linalg.common import compiled, real_dtype

__all__ = ["eigh_tridiagonal"]


def _dense(d: Any, e: Any) -> Any:
    """The tridiagonal matrix: d on the diagonal, e below it, conj(e) above it."""
    n = d.shape[-1]
    dtype = lnp.result_type(d, e)
    below = lnp.zeros((n, n), dtype).at[lnp.arange(1, n), lnp.arange(n - 1)].set(e)
    return lnp.diag(d.astype(dtype)) + below + lnp.conj(below.T)


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


@functools.partial(custom_jvp, nondiff_argnums=(2, 3))
def _eigenvalues(d: Any, e: Any, targets: tuple[int, ...], tol: Any) -> Any:
    return _bisection(lnp.real(d), e, lnp.asarray(targets, np.int32), tol)


@_eigenvalues.defjvp
def _eigenvalues_jvp(targets, tol, primals, tangents):
    (d, e), (dd, de) = primals, tangents
    w = _eigenvalues(d, e, targets, tol)
    v, _ = lax_linalg.eigh(_dense(d, e))
    v = v[:, np.asarray(targets, np.int64)]
    # dλ = v^H dT v, with dT tridiagonal: the diagonal and twice the real off-diagonal part.
    dw = lnp.sum(lnp.abs(v) ** 2 * lnp.real(dd)[:, None], axis=0) + 2 * lnp.sum(
        lnp.real(lnp.conj(v[1:]) * de[:, None] * v[:-1]), axis=0)
    return w, dw.astype(w.dtype)


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
    depends on the values). `tol` is the absolute accuracy of the bisection
    (at least eps times the norm). `key` is accepted for JAX's signature and
    unused: eigenvectors come from a dense solver, not random starts. Leading
    axes of `d` and `e` are batch axes.

    >>> import lamella.numpy as lnp
    >>> eigh_tridiagonal(lnp.array([2.0, 2.0]), lnp.array([1.0]), eigvals_only=True).round(3)
    Array([1., 3.], dtype=float32)
    """
    del key
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
    n = d.shape[-1]
    if eigvals_only:
        if n == 0 or not targets:
            return lnp.zeros((*d.shape[:-1], len(targets)), real_dtype(d.dtype))
        return compiled(_eigenvalues_call, (1, 1), targets=targets, tol=tol)(d, e)
    return compiled(_eigenpairs, (1, 1), targets=targets)(d, e)


def _eigenvalues_call(d: Any, e: Any, targets: tuple[int, ...], tol: Any) -> Any:
    return _eigenvalues(d, e, targets, tol)


def _eigenpairs(d: Any, e: Any, targets: tuple[int, ...]) -> tuple[Any, Any]:
    v, w = lax_linalg.eigh(_dense(d, e))
    index = np.asarray(targets, np.int64)
    return w[index], v[:, index]
