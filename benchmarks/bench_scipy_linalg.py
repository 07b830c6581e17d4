"""lamella.scipy.linalg: expm and its gradient, and the functions on lax.linalg's condensed-form
and tridiagonal kernels (hessenberg, pivoted qr, eigh subsets, eigh_tridiagonal, tridiagonal
solve, QDWH polar), jitted, vs SciPy and JAX."""

from __future__ import annotations

import numpy as np
import scipy.linalg
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
import lamella.numpy as lnp
from lamella.scipy import linalg as la

N = pick(256, 8)  # square matrices
N_SOLVE = pick(2000, 8)  # the tridiagonal system (dense, as solve takes it)
SUBSET = pick(10, 2)  # eigenpairs kept by eigh's eigvals=(0, SUBSET - 1)
N_TRIDIAGONAL = pick(1024, 8)  # eigh_tridiagonal's SUBSET eigenpairs: inverse iteration


def _sync(f):
    return lambda *a: lc.block_until_ready(f(*a))


def _row(name, ours, args, jax_fn, reference=None, unit="ms"):
    """Times `ours` (jitted) on `args` against `jax_fn` (jitted, when JAX is installed)
    and a SciPy `reference` thunk."""
    jax = jax_or_none()
    jitted = _sync(lc.jit(ours))
    dargs = lc.device_put(args)
    cands = {"lamella": lambda: jitted(*dargs)}
    if jax is not None and jax_fn is not None:
        jax_jitted = jax.jit(jax_fn)
        jargs = jax.device_put(args)
        cands["jax"] = lambda: jax.block_until_ready(jax_jitted(*jargs))
    if reference is not None:
        cands["scipy"] = reference
    t = compare(cands, rounds=3, repeat=5)
    return Row(name, t["lamella"], {k: t.get(k) for k in ("jax", "scipy")}, unit=unit)


def _expm_rows(jax, a):
    expm = lc.jit(la.expm)
    grad = lc.jit(lc.grad(lambda m: lnp.sum(la.expm(m) ** 2)))
    da = lc.device_put(a)
    values = {"lamella": lambda: lc.block_until_ready(expm(da)),
              "scipy": lambda: scipy.linalg.expm(a)}
    grads = {"lamella": lambda: lc.block_until_ready(grad(da))}
    if jax is not None:
        jexpm = jax.jit(jax.scipy.linalg.expm)
        jgrad = jax.jit(jax.grad(lambda m: jax.numpy.sum(jax.scipy.linalg.expm(m) ** 2)))
        ja = jax.device_put(a)
        values["jax"] = lambda: jax.block_until_ready(jexpm(ja))
        grads["jax"] = lambda: jax.block_until_ready(jgrad(ja))
    t = compare(values, rounds=3, repeat=5)
    rows = [Row(f"expm f32[{N},{N}]", t["lamella"],
                {"jax": t.get("jax"), "scipy": t.get("scipy")}, unit="ms")]
    t = compare(grads, rounds=3, repeat=5)
    rows.append(Row(f"grad of sum(expm(A)**2), f32[{N},{N}]", t["lamella"],
                    {"jax": t.get("jax")}, unit="ms"))
    return rows


def run() -> list[Row]:
    jax = jax_or_none()
    jsl = jax.scipy.linalg if jax is not None else None
    rng = np.random.default_rng(0)
    # A 1-norm of about 20: Padé order 7 in float32 after a few squarings.
    a = (rng.standard_normal((N, N)) * 2.5 / np.sqrt(N)).astype(np.float32)
    rows = _expm_rows(jax, a)

    g = rng.standard_normal((N, N)).astype(np.float32)
    rows.append(_row(f"hessenberg(calc_q=True) f32[{N},{N}]",
                     lambda x: la.hessenberg(x, calc_q=True), (g,),
                     jsl and (lambda x: jsl.hessenberg(x, calc_q=True)),
                     lambda: scipy.linalg.hessenberg(g, calc_q=True)))
    rows.append(_row(f"grad of sum(hessenberg(A)**2), f32[{N},{N}]",
                     lc.grad(lambda x: lnp.sum(la.hessenberg(x) ** 2)), (g,), None))
    rows.append(_row(f"qr(mode='economic', pivoting=True) f32[{N},{N}]",
                     lambda x: la.qr(x, mode="economic", pivoting=True), (g,),
                     jsl and (lambda x: jsl.qr(x, mode="economic", pivoting=True)),
                     lambda: scipy.linalg.qr(g, mode="economic", pivoting=True)))
    rows.append(_row(f"qr_multiply(pivoting=True) f32[{N},{N}], 8 columns",
                     lambda x, c: la.qr_multiply(x, c, mode="left", pivoting=True),
                     (g, g[:, :8]), None,
                     lambda: scipy.linalg.qr_multiply(g, g[:, :8], mode="left", pivoting=True)))

    sym = g + g.T
    rows.append(_row(f"eigh(eigvals=(0, {SUBSET - 1})) f32[{N},{N}] (JAX: all, then sliced)",
                     lambda x: la.eigh(x, eigvals=(0, SUBSET - 1)), (sym,),
                     jsl and (lambda x: [y[..., :SUBSET] for y in jsl.eigh(x)]),
                     lambda: scipy.linalg.eigh(sym, subset_by_index=(0, SUBSET - 1))))

    d, e = (rng.standard_normal(N).astype(np.float32),
            rng.standard_normal(N - 1).astype(np.float32))
    rows.append(_row(f"eigh_tridiagonal (values and vectors) n={N} f32",
                     la.eigh_tridiagonal, (d, e), jsl and jsl.eigh_tridiagonal,
                     lambda: scipy.linalg.eigh_tridiagonal(d, e)))
    n = N_TRIDIAGONAL
    dt, et = (rng.standard_normal(n).astype(np.float32),
              rng.standard_normal(n - 1).astype(np.float32))
    window = {"select": "i", "select_range": (0, SUBSET - 1)}
    rows.append(_row(f"eigh_tridiagonal {SUBSET} eigenpairs of n={n} f32",
                     lambda d, e: la.eigh_tridiagonal(d, e, **window), (dt, et),
                     jsl and (lambda d, e: jsl.eigh_tridiagonal(d, e, **window)),
                     lambda: scipy.linalg.eigh_tridiagonal(dt, et, **window)))
    weights = np.linspace(-1.0, 1.0, N).astype(np.float32)
    rows.append(_row(f"grad of eigh_tridiagonal eigenvalues . w, n={N} f32",
                     lc.grad(lambda d, e: la.eigh_tridiagonal(d, e, eigvals_only=True) @ weights,
                             argnums=(0, 1)), (d, e), None))

    n = N_SOLVE
    t = (np.diag(rng.standard_normal(n) + 4) + np.diag(rng.standard_normal(n - 1), 1)
         + np.diag(rng.standard_normal(n - 1), -1)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)

    def jax_tridiagonal(t, b):
        jnp = jax.numpy
        dl = jnp.pad(jnp.diagonal(t, -1), (1, 0))
        du = jnp.pad(jnp.diagonal(t, 1), (0, 1))
        return jax.lax.linalg.tridiagonal_solve(dl, jnp.diagonal(t), du, b[:, None])[:, 0]

    rows.append(_row(f"solve(assume_a='tridiagonal') f32[{n},{n}] (JAX: lax tridiagonal_solve)",
                     lambda t, b: la.solve(t, b, assume_a="tridiagonal"), (t, b),
                     jax and jax_tridiagonal,
                     lambda: scipy.linalg.solve(t, b, assume_a="tridiagonal")))

    rows.append(_row(f"polar(method='qdwh') f32[{N},{N}]",
                     lambda x: la.polar(x, method="qdwh"), (g,),
                     jsl and (lambda x: jsl.polar(x, method="qdwh")),
                     lambda: scipy.linalg.polar(g)))
    return rows
