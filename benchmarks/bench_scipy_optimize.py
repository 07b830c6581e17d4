"""lamella.scipy.optimize.minimize (BFGS, L-BFGS) on Rosenbrock, against SciPy and JAX."""

from __future__ import annotations

import numpy as np
import scipy.optimize as so
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
import lamella.numpy as lnp
from lamella.scipy.optimize import minimize

N = pick(100, 4)
# Iterations for the equal-work rows: JAX's L-BFGS fails (status 5) after 14 here.
STEPS = {"BFGS": pick(30, 3), "L-BFGS": pick(12, 3)}
LBFGS = "l-bfgs-experimental-do-not-rely-on-this"


def rosen(np_like, x):
    return np_like.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def run() -> list[Row]:
    # float32, the default of both lamella and JAX; SciPy works in float64.
    x0 = np.array([-1.2 if i % 2 == 0 else 1.0 for i in range(N)], np.float32)
    jax = jax_or_none()

    def lamella_solver(method, options=None):
        f = lc.jit(lambda x: minimize(lambda y: rosen(lnp, y), x, method=method, options=options))
        return lambda: lc.block_until_ready(f(x0))

    def jax_solver(method, options=None):
        import jax.scipy.optimize  # noqa: F401  (loaded lazily by JAX)

        f = jax.jit(lambda x: jax.scipy.optimize.minimize(
            lambda y: rosen(jax.numpy, y), x, method=method, options=options))
        return lambda: jax.block_until_ready(f(x0))

    def scipy_solver(method, options=None):
        x = x0.astype(np.float64)
        return lambda: so.minimize(so.rosen, x, jac=so.rosen_der, method=method, options=options)

    rows = []
    # Equal work: each method runs exactly `steps` iterations (JAX's L-BFGS runs
    # maxiter + 1, so it is asked for one fewer).
    for method, label, extra in [("BFGS", "BFGS", 0), (LBFGS, "L-BFGS", 1)]:
        steps = STEPS[label]
        jax_cap = steps - extra
        cands = {"lamella": lamella_solver(method, {"maxiter": steps}),
                 "scipy": scipy_solver("BFGS" if label == "BFGS" else "L-BFGS-B",
                                       {"maxiter": steps})}
        iterations = {"lamella": int(cands["lamella"]().nit), "scipy": cands["scipy"]().nit}
        if jax is not None:
            cands["jax"] = jax_solver(method, {"maxiter": jax_cap})
            iterations["jax"] = int(cands["jax"]().nit)
        times = compare(cands, rounds=3, repeat=5)
        counts = ", ".join(f"{k} {v}" for k, v in iterations.items())
        rows.append(Row(f"{label} Rosenbrock n={N}, maxiter {steps} (iterations: {counts})",
                        times["lamella"], {k: v for k, v in times.items() if k != "lamella"},
                        unit="ms"))

    # To the end: lamella and SciPy converge; JAX 0.10.2's line search gives up early.
    cands = {"lamella": lamella_solver("BFGS"), "scipy": scipy_solver("BFGS")}
    ends = {"lamella": cands["lamella"](), "scipy": cands["scipy"]()}
    if jax is not None:
        cands["jax"] = jax_solver("BFGS")
        ends["jax"] = cands["jax"]()
    times = compare(cands, rounds=2, repeat=3)
    summary = ", ".join(f"{k} {int(r.nit)} it status {int(r.status)}" for k, r in ends.items())
    rows.append(Row(f"BFGS Rosenbrock n={N} until it stops ({summary})", times["lamella"],
                    {k: v for k, v in times.items() if k != "lamella"}, unit="ms"))
    per_iteration = {k: times[k] / max(int(ends[k].nit), 1) for k in times}
    rows.append(Row(f"  the same, per iteration (n={N})", per_iteration["lamella"],
                    {k: v for k, v in per_iteration.items() if k != "lamella"}, unit="us"))
    return rows
