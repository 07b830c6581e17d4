"""lamella.lax.linalg's LAPACK-backed reductions and solves, jitted, against JAX and SciPy."""

from __future__ import annotations

import numpy as np
import scipy.linalg
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
from lamella.lax import linalg

N = pick(256, 4)  # square matrices
M_TRIDIAGONAL, K_TRIDIAGONAL = pick(100_000, 8), pick(4, 1)
N_POLAR = pick(128, 4)


def _sync(f):
    return lambda *a: lc.block_until_ready(f(*a))


def _row(name, cands, jax_fn, jax_args, reference=None, unit="ms"):
    """Times lamella's candidate against JAX's (when installed) and a SciPy reference."""
    jax = jax_or_none()
    if jax is not None and jax_fn is not None:
        jitted = jax.jit(jax_fn)
        jargs = jax.device_put(jax_args)
        cands["jax"] = lambda: jax.block_until_ready(jitted(*jargs))
    if reference is not None:
        cands["scipy"] = reference
    t = compare(cands, rounds=2, repeat=3)
    refs = {k: t.get(k) for k in ("jax", "scipy")}
    return Row(name, t["lamella"], refs, unit=unit)


def run() -> list[Row]:
    jax = jax_or_none()
    jl = jax.lax.linalg if jax is not None else None
    rng = np.random.default_rng(0)
    a = rng.standard_normal((N, N)).astype(np.float32)
    sym = a + a.T
    da, dsym = lc.device_put((a, sym))
    rows = []

    hess = _sync(lc.jit(linalg.hessenberg))
    rows.append(_row(f"hessenberg {N}x{N} f32", {"lamella": lambda: hess(da)},
                     jl and jl.hessenberg, (a,), lambda: scipy.linalg.lapack.sgehrd(a)))

    tri = _sync(lc.jit(linalg.tridiagonal))
    rows.append(_row(f"tridiagonal {N}x{N} f32", {"lamella": lambda: tri(dsym)},
                     jl and jl.tridiagonal, (sym,), lambda: scipy.linalg.lapack.ssytrd(sym)))

    pivoted = _sync(lc.jit(lambda x: linalg.qr(x, pivoting=True, full_matrices=False)))
    rows.append(_row(f"qr(pivoting=True) {N}x{N} f32", {"lamella": lambda: pivoted(da)},
                     jl and (lambda x: jl.qr(x, pivoting=True, full_matrices=False)), (a,),
                     lambda: scipy.linalg.qr(a, pivoting=True, mode="economic")))

    geqrf = scipy.linalg.lapack.sgeqrf(a)
    reflectors, taus = lc.device_put((geqrf[0], geqrf[1]))
    c = rng.standard_normal((N, 8)).astype(np.float32)
    dc = lc.device_put(c)
    apply_q = _sync(lc.jit(lambda r, t, c: linalg.ormqr(r, t, c, transpose=True)))
    rows.append(_row(f"ormqr Q^T c, {N}x{N} reflectors, 8 columns",
                     {"lamella": lambda: apply_q(reflectors, taus, dc)},
                     jl and (lambda r, t, c: jl.ormqr(r, t, c, transpose=True)),
                     (geqrf[0], geqrf[1], c),
                     lambda: scipy.linalg.lapack.sormqr("L", "T", geqrf[0], geqrf[1], c,
                                                             32 * max(c.shape))))

    m, k = M_TRIDIAGONAL, K_TRIDIAGONAL
    dl, d, du = (rng.standard_normal(m).astype(np.float32) for _ in range(3))
    d = d + 4
    b = rng.standard_normal((m, k)).astype(np.float32)
    diagonals = lc.device_put((dl, d, du, b))
    solve = _sync(lc.jit(linalg.tridiagonal_solve))
    rows.append(_row(f"tridiagonal_solve m={m}, {k} right-hand sides",
                     {"lamella": lambda: solve(*diagonals)},
                     jl and jl.tridiagonal_solve, (dl, d, du, b),
                     lambda: scipy.linalg.lapack.sgtsv(dl[1:], d, du[:-1], b)))

    top = _sync(lc.jit(lambda x: linalg.eigh(x, subset_by_index=(N - 4, N))))
    rows.append(_row(f"eigh subset_by_index=(n-4, n) {N}x{N} f32 (JAX: no CPU subsets)",
                     {"lamella": lambda: top(dsym)}, None, (),
                     lambda: scipy.linalg.eigh(sym, subset_by_index=(N - 4, N - 1),
                                               driver="evr")))

    gesvd = _sync(lc.jit(lambda x: linalg.svd(x, algorithm=linalg.SvdAlgorithm.QR)))
    rows.append(_row(f"svd algorithm=QR (gesvd) {N}x{N} f32", {"lamella": lambda: gesvd(da)},
                     jl and (lambda x: jl.svd(x, algorithm=jl.SvdAlgorithm.QR)), (a,),
                     lambda: scipy.linalg.svd(a, lapack_driver="gesvd")))

    r = np.linalg.cholesky(a @ a.T + N * np.eye(N)).T.astype(np.float32)
    w = rng.standard_normal(N).astype(np.float32)
    dr, dw = lc.device_put((r, w))
    update = _sync(lc.jit(linalg.cholesky_update))
    rows.append(_row(f"cholesky_update {N}x{N} f32", {"lamella": lambda: update(dr, dw)},
                     jl and jl.cholesky_update, (r, w),
                     lambda: scipy.linalg.cholesky(r.T @ r + np.outer(w, w))))

    x = rng.standard_normal((N_POLAR, N_POLAR)).astype(np.float32)
    dx = lc.device_put(x)
    polar = _sync(lambda x: linalg.qdwh(x)[0])
    rows.append(_row(f"qdwh {N_POLAR}x{N_POLAR} f32", {"lamella": lambda: polar(dx)},
                     jl and (lambda x: jl.qdwh(x)[0]), (x,),
                     lambda: scipy.linalg.polar(x)))
    return rows
