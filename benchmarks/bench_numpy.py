"""lamella.numpy against NumPy (and jax.numpy): eager overhead, fusion, matmul, einsum."""

from __future__ import annotations

import numpy as np
from harness import Row, best_time, compare, jax_or_none, pick

import lamella.core as lc
import lamella.numpy as lnp

N_CHAIN = pick(10_000_000, 64)
N_MATMUL = pick(1024, 8)
EINSUM_SIZES = pick((256, 512, 32), (4, 8, 2))


def chain(m):
    """Ten elementwise operations; NumPy makes ten passes over memory, XLA fuses them."""
    def f(x):
        y = x * 1.5 + 2.0
        y = m.maximum(y, 0.5)
        y = m.sqrt(y) - 1.0
        y = m.abs(y) * y
        y = m.minimum(y, 3.0)
        return y / 2.0
    return f


def copy_bandwidth_gbs(x: np.ndarray) -> float:
    """The machine's memory bandwidth as NumPy's copy sees it (bytes read + written)."""
    out = np.empty_like(x)
    t = best_time(lambda: np.copyto(out, x), repeat=5)
    return 2 * x.nbytes / t / 1e9


def run() -> list[Row]:
    jax = jax_or_none()
    jnp = jax.numpy if jax is not None else None
    rows = []

    # Eager overhead: one small op, dispatched from Python.
    small = np.arange(4, dtype=np.float32)
    a, b = lnp.asarray(small), lnp.asarray(small + 1)
    cands = {"lamella": lambda: lnp.add(a, b), "numpy": lambda: np.add(small, small)}
    sums = {"lamella": lambda: a.sum(), "numpy": lambda: small.sum()}
    if jnp is not None:
        ja, jb = jnp.asarray(small), jnp.asarray(small + 1)
        cands["jax"] = lambda: jnp.add(ja, jb)
        sums["jax"] = lambda: jnp.sum(ja)
    t = compare(cands)
    rows.append(Row("eager add, f32[4]", t["lamella"], {"numpy": t["numpy"], "jax": t.get("jax")}))
    t = compare(sums)
    rows.append(Row("eager x.sum() (jnp.sum), f32[4]", t["lamella"],
                    {"numpy": t["numpy"], "jax": t.get("jax")}))

    # A fused chain of ten elementwise ops over 10M float32 elements.
    host = np.random.default_rng(0).uniform(-1, 1, N_CHAIN).astype(np.float32)
    x = lnp.asarray(host)
    fused = lc.jit(chain(lnp))
    cands = {"lamella": lambda: fused(x).block_until_ready(), "numpy": lambda: chain(np)(host)}
    if jnp is not None:
        jx, jfused = jnp.asarray(host), jax.jit(chain(jnp))
        cands["jax"] = lambda: jfused(jx).block_until_ready()
    np.testing.assert_allclose(np.asarray(fused(x)), chain(np)(host), rtol=1e-5, atol=1e-6)
    t = compare(cands, rounds=2, repeat=5)
    rows.append(Row(f"jit 10-op elementwise chain, f32[{N_CHAIN}]", t["lamella"],
                    {"numpy": t["numpy"], "jax": t.get("jax")}, unit="ms"))
    achieved = 2 * host.nbytes / t["lamella"] / 1e9
    print(f"  fused chain: {achieved:.1f} GB/s (read + write) vs copy bandwidth "
          f"{copy_bandwidth_gbs(host):.1f} GB/s")

    # matmul through @.
    m = np.random.default_rng(1).normal(size=(N_MATMUL, N_MATMUL)).astype(np.float32)
    lm = lnp.asarray(m)
    cands = {"lamella": lambda: (lm @ lm).block_until_ready(), "numpy": lambda: m @ m}
    if jnp is not None:
        jm = jnp.asarray(m)
        cands["jax"] = lambda: jnp.matmul(jm, jm).block_until_ready()
    t = compare(cands, rounds=2, repeat=5)
    rows.append(Row(f"matmul {N_MATMUL}x{N_MATMUL} f32 via @ (eager; jnp.matmul)", t["lamella"],
                    {"numpy": t["numpy"], "jax": t.get("jax")}, unit="ms"))

    # A 3-operand contraction whose order matters (opt_einsum picks it).
    rng = np.random.default_rng(2)
    n1, n2, n3 = EINSUM_SIZES
    ops = [rng.normal(size=s).astype(np.float32) for s in [(n1, n2), (n2, n3), (n3, n1)]]
    spec = "ab,bc,cd->ad"
    lops = [lnp.asarray(o) for o in ops]
    ein = lc.jit(lambda *o: lnp.einsum(spec, *o))
    cands = {"lamella": lambda: ein(*lops).block_until_ready(),
             "numpy": lambda: np.einsum(spec, *ops, optimize=True)}
    if jnp is not None:
        jops = [jnp.asarray(o) for o in ops]
        jein = jax.jit(lambda *o: jnp.einsum(spec, *o))
        cands["jax"] = lambda: jein(*jops).block_until_ready()
    np.testing.assert_allclose(np.asarray(ein(*lops)), np.einsum(spec, *ops, optimize=True),
                               rtol=1e-3, atol=1e-3)
    t = compare(cands, rounds=2, repeat=5)
    rows.append(Row(f"einsum {spec} ({n1}x{n2}, {n2}x{n3}, {n3}x{n1}), jit", t["lamella"],
                    {"numpy": t["numpy"], "jax": t.get("jax")}, unit="ms"))
    return rows
