"""lamella.scipy.linalg: expm (Padé, scaling and squaring) and its gradient, vs SciPy and JAX."""

from __future__ import annotations

import numpy as np
import scipy.linalg
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
import lamella.numpy as lnp
from lamella.scipy import linalg as la

N = pick(256, 8)


def run() -> list[Row]:
    jax = jax_or_none()
    rng = np.random.default_rng(0)
    # A 1-norm of about 20: Padé order 7 in float32 after a few squarings.
    a = (rng.standard_normal((N, N)) * 2.5 / np.sqrt(N)).astype(np.float32)
    rows = []
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
    rows.append(Row(f"expm f32[{N},{N}]", t["lamella"],
                    {"jax": t.get("jax"), "scipy": t.get("scipy")}, unit="ms"))
    t = compare(grads, rounds=3, repeat=5)
    rows.append(Row(f"grad of sum(expm(A)**2), f32[{N},{N}]", t["lamella"],
                    {"jax": t.get("jax")}, unit="ms"))
    return rows
