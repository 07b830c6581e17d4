"""lamella.scipy.special: elementwise special functions on 10^6 float32 values, jitted,
against scipy.special and jax.scipy.special."""

from __future__ import annotations

import numpy as np
import scipy.special as sp
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
from lamella.scipy import special


def _inputs(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Each function's arguments over its working range."""
    return {
        "erf": rng.normal(0.0, 2.0, n),
        "gammaln": rng.uniform(0.1, 30.0, n),
        "digamma": rng.uniform(0.1, 30.0, n),
        "ndtri": rng.uniform(0.0, 1.0, n),
        "log_ndtr": rng.normal(0.0, 8.0, n),
        "i0e": rng.normal(0.0, 10.0, n),
    }


def _row(name: str, x: np.ndarray, jax) -> Row:
    ours = lc.jit(getattr(special, name))
    dx = lc.device_put(x)
    reference = getattr(sp, name)
    candidates = {"lamella": lambda: lc.block_until_ready(ours(dx)), "scipy": lambda: reference(x)}
    if jax is not None:
        theirs = jax.jit(getattr(jax.scipy.special, name))
        jx = jax.device_put(x)
        candidates["jax"] = lambda: jax.block_until_ready(theirs(jx))
    t = compare(candidates, rounds=2, repeat=5)
    return Row(f"{name} 10^6 f32", t["lamella"], {"scipy": t["scipy"], "jax": t.get("jax")},
               unit="ms")


def run() -> list[Row]:
    jax = jax_or_none()
    rng = np.random.default_rng(0)
    n = pick(1_000_000, 64)
    return [_row(name, x.astype(np.float32), jax) for name, x in _inputs(rng, n).items()]
