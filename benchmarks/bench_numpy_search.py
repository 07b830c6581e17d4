"""lamella.numpy's searchsorted against jax.numpy and NumPy: the default binary-search
scan and the sort method, eager and jitted, on a sorted table of 100k float32 values."""

from __future__ import annotations

import numpy as np
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
import lamella.numpy as lnp

N_TABLE = pick(100_000, 64)
N_QUERIES = pick(100_000, 16)


def run() -> list[Row]:
    jax = jax_or_none()
    jnp = jax.numpy if jax is not None else None
    rng = np.random.default_rng(0)
    table = np.sort(rng.uniform(-1, 1, N_TABLE).astype(np.float32))
    queries = rng.uniform(-1.2, 1.2, N_QUERIES).astype(np.float32)
    a, v = lnp.asarray(table), lnp.asarray(queries)
    want = np.searchsorted(table, queries)
    rows = []
    for method in ("scan", "sort"):
        jitted = lc.jit(lambda t, q, m=method: lnp.searchsorted(t, q, method=m))
        np.testing.assert_array_equal(np.asarray(jitted(a, v)), want)
        for mode, fn in (("eager", lambda m=method: lnp.searchsorted(a, v, method=m)),
                         ("jit", lambda j=jitted: j(a, v))):
            cands = {"lamella": lambda fn=fn: fn().block_until_ready(),
                     "numpy": lambda: np.searchsorted(table, queries)}
            if jnp is not None:
                ja, jv = jnp.asarray(table), jnp.asarray(queries)
                jfn = (jax.jit(lambda t, q, m=method: jnp.searchsorted(t, q, method=m))
                       if mode == "jit" else lambda t, q, m=method: jnp.searchsorted(
                           t, q, method=m))
                cands["jax"] = lambda jfn=jfn, ja=ja, jv=jv: jfn(ja, jv).block_until_ready()
            t = compare(cands, rounds=2, repeat=5)
            rows.append(Row(f"searchsorted method={method} ({mode}), f32[{N_TABLE}] table, "
                            f"{N_QUERIES} queries", t["lamella"],
                            {"numpy": t["numpy"], "jax": t.get("jax")}, unit="ms"))
    return rows
