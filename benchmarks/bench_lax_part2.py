"""lamella.lax on XLA, part 2: matmul, a conv layer, sort, cholesky and solve."""

from __future__ import annotations

import numpy as np
import scipy.linalg
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
import lamella.lax as lax

N_MATMUL = pick(1024, 8)
CONV_BATCH, CONV_CHANNELS, CONV_SIZE = pick(32, 1), pick(64, 2), pick(56, 4)
N_SORT = pick(1_000_000, 16)
N_CHOL = pick(512, 4)


def _sync(f):
    return lambda *a: lc.block_until_ready(f(*a))


def run() -> list[Row]:
    jax = jax_or_none()
    rng = np.random.default_rng(0)
    rows = []

    a = rng.standard_normal((N_MATMUL, N_MATMUL)).astype(np.float32)
    b = rng.standard_normal((N_MATMUL, N_MATMUL)).astype(np.float32)
    mm = _sync(lc.jit(lax.dot))
    da, db = lc.device_put((a, b))
    cands = {"lamella": lambda: mm(da, db), "numpy": lambda: a @ b}
    if jax is not None:
        jmm = jax.jit(jax.lax.dot)
        ja, jb = jax.device_put((a, b))
        cands["jax"] = lambda: jax.block_until_ready(jmm(ja, jb))
    t = compare(cands, rounds=2, repeat=3)
    rows.append(Row(f"matmul {N_MATMUL}x{N_MATMUL} f32", t["lamella"],
                    {"numpy": t["numpy"], "jax": t.get("jax")}, unit="ms"))

    if hasattr(lax, "conv_general_dilated"):
        n, c, hw = CONV_BATCH, CONV_CHANNELS, CONV_SIZE
        x = rng.standard_normal((n, c, hw, hw)).astype(np.float32)
        w = rng.standard_normal((c, c, 3, 3)).astype(np.float32)
        conv = _sync(lc.jit(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME")))
        dx, dw = lc.device_put((x, w))
        cands = {"lamella": lambda: conv(dx, dw)}
        if jax is not None:
            jconv = jax.jit(lambda x, w: jax.lax.conv_general_dilated(x, w, (1, 1), "SAME"))
            jx, jw = jax.device_put((x, w))
            cands["jax"] = lambda: jax.block_until_ready(jconv(jx, jw))
        t = compare(cands, rounds=2, repeat=3)
        rows.append(Row(f"conv 3x3, {c}->{c} channels, {n}x{hw}x{hw} (NCHW)", t["lamella"],
                        {"jax": t.get("jax")}, unit="ms"))

    v = rng.standard_normal(N_SORT).astype(np.float32)
    srt = _sync(lc.jit(lax.sort))
    dv = lc.device_put(v)
    cands = {"lamella": lambda: srt(dv), "numpy": lambda: np.sort(v)}
    if jax is not None:
        jsrt = jax.jit(jax.lax.sort)
        jv = jax.device_put(v)
        cands["jax"] = lambda: jax.block_until_ready(jsrt(jv))
    t = compare(cands, rounds=2, repeat=3)
    rows.append(Row(f"sort {N_SORT} f32", t["lamella"], {"numpy": t["numpy"], "jax": t.get("jax")},
                    unit="ms"))

    try:
        from lamella.lax import linalg
    except ImportError:
        return rows
    m = rng.standard_normal((N_CHOL, N_CHOL)).astype(np.float32)
    spd = (m @ m.T + N_CHOL * np.eye(N_CHOL)).astype(np.float32)
    rhs = rng.standard_normal((N_CHOL, 1)).astype(np.float32)
    chol = _sync(lc.jit(linalg.cholesky))

    def cho_solve(a, b):
        low = linalg.cholesky(a)
        y = linalg.triangular_solve(low, b, left_side=True, lower=True)
        return linalg.triangular_solve(low, y, left_side=True, lower=True, transpose_a=True)
    solve = _sync(lc.jit(cho_solve))
    ds, dr = lc.device_put((spd, rhs))
    c1 = {"lamella": lambda: chol(ds), "scipy": lambda: scipy.linalg.cholesky(spd, lower=True)}
    c2 = {"lamella": lambda: solve(ds, dr),
          "scipy": lambda: scipy.linalg.cho_solve(scipy.linalg.cho_factor(spd), rhs)}
    if jax is not None:
        jchol = jax.jit(lambda a: jax.lax.linalg.cholesky(a))
        jsolve = jax.jit(lambda a, b: jax.scipy.linalg.cho_solve(
            (jax.lax.linalg.cholesky(a), True), b))
        js, jr = jax.device_put((spd, rhs))
        c1["jax"] = lambda: jax.block_until_ready(jchol(js))
        c2["jax"] = lambda: jax.block_until_ready(jsolve(js, jr))
    t1 = compare(c1, rounds=2, repeat=3)
    t2 = compare(c2, rounds=2, repeat=3)
    rows.append(Row(f"cholesky {N_CHOL}x{N_CHOL} f32", t1["lamella"],
                    {"scipy": t1["scipy"], "jax": t1.get("jax")}, unit="ms"))
    rows.append(Row(f"cholesky solve {N_CHOL}x{N_CHOL}, one rhs", t2["lamella"],
                    {"scipy": t2["scipy"], "jax": t2.get("jax")}, unit="ms"))
    return rows
