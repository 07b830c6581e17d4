"""lamella.scipy.sparse.linalg (cg, bicgstab, gmres) on dense systems, against SciPy and JAX."""

from __future__ import annotations

import numpy as np
import scipy.sparse.linalg as ssl
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
from lamella.scipy.sparse import linalg as lsl

N = pick(2000, 16)
TOL = 1e-5


def systems():
    rng = np.random.default_rng(0)
    B = rng.standard_normal((N, N)).astype(np.float32)
    # Eigenvalues in about [0.1, 4.1]: a condition number near 40.
    spd = B @ B.T / N + 0.1 * np.eye(N, dtype=np.float32)
    nonsymmetric = B / np.sqrt(N) + 3 * np.eye(N, dtype=np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    return spd, nonsymmetric, b


def scipy_iterations(solver, A, b):
    count = [0]

    def callback(_):
        count[0] += 1

    solver(A, b, rtol=TOL, atol=0.0, callback=callback)
    return count[0]


def run() -> list[Row]:
    spd, nonsymmetric, b = systems()
    jax = jax_or_none()
    rows = []
    for name, A in [("cg", spd), ("bicgstab", nonsymmetric), ("gmres", nonsymmetric)]:
        solve = lc.jit(lambda A, b, name=name: getattr(lsl, name)(A, b, tol=TOL)[0])
        dA, db = lc.device_put((A, b))
        cands = {"lamella": lambda solve=solve, dA=dA, db=db: lc.block_until_ready(solve(dA, db)),
                 "scipy": lambda name=name, A=A: getattr(ssl, name)(A, b, rtol=TOL, atol=0.0)}
        residuals = {"lamella": cands["lamella"](), "scipy": cands["scipy"]()[0]}
        if jax is not None:
            from jax.scipy.sparse import linalg as jsl

            jsolve = jax.jit(lambda A, b, name=name: getattr(jsl, name)(A, b, tol=TOL)[0])
            jA, jb = jax.device_put((A, b))
            cands["jax"] = lambda jsolve=jsolve, jA=jA, jb=jb: jax.block_until_ready(jsolve(jA, jb))
            residuals["jax"] = cands["jax"]()
        times = compare(cands, rounds=5, repeat=5)
        worst = max(np.linalg.norm(A @ np.asarray(x, np.float64) - b) / np.linalg.norm(b)
                    for x in residuals.values())
        iterations = scipy_iterations(getattr(ssl, name), A, b)
        rows.append(Row(f"{name} {N}x{N} f32 dense, tol {TOL:g} (SciPy: {iterations} it; "
                        f"worst relative residual {worst:.1e})", times["lamella"],
                        {k: v for k, v in times.items() if k != "lamella"}, unit="ms"))
    rows.append(_cg_fixed_iterations(spd, b, jax))
    return rows


def _cg_fixed_iterations(A, b, jax) -> Row:
    """cg for exactly STEPS iterations (tol=0): the cost of an iteration, whatever the
    iteration counts of the three implementations."""
    steps = pick(50, 3)
    solve = lc.jit(lambda A, b: lsl.cg(A, b, tol=0.0, maxiter=steps)[0])
    dA, db = lc.device_put((A, b))
    cands = {"lamella": lambda: lc.block_until_ready(solve(dA, db)),
             "scipy": lambda: ssl.cg(A, b, rtol=0.0, atol=0.0, maxiter=steps)}
    if jax is not None:
        from jax.scipy.sparse import linalg as jsl

        jsolve = jax.jit(lambda A, b: jsl.cg(A, b, tol=0.0, maxiter=steps)[0])
        jA, jb = jax.device_put((A, b))
        cands["jax"] = lambda: jax.block_until_ready(jsolve(jA, jb))
    for fn in cands.values():  # compile outside the timing (quick mode times one call)
        fn()
    times = compare(cands, rounds=5, repeat=5)
    return Row(f"cg {N}x{N} f32 dense, exactly {steps} iterations (tol=0)", times["lamella"],
               {k: v for k, v in times.items() if k != "lamella"}, unit="ms")
