"""Host callbacks: a pure_callback per call inside a jitted function, and
debug.print inside a long scan (printing to /dev/null on both sides)."""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
import lamella.lax as lax

STEPS = pick(1000, 3)


@contextlib.contextmanager
def _stdout_to_devnull():
    with open(os.devnull, "w") as devnull:
        previous, sys.stdout = sys.stdout, devnull
        try:
            yield
        finally:
            sys.stdout = previous


def _callback_program(L, core, x):
    out_type = core.ShapeDtypeStruct(x.shape, x.dtype)
    # NumPy inside the callback: JAX passes its arrays, whose operators are lamella's here.
    return L.add(core.pure_callback(lambda v: np.multiply(v, 2), out_type, x), 1.0)


def _printing_scan(L, debug, x):
    def step(c, _):
        debug.print("c={}", c)
        return L.add(c, 1.0), None
    return L.scan(step, x, None, length=STEPS)[0]


def run() -> list[Row]:
    x = np.ones(3, np.float32)
    jax = jax_or_none()
    callback = lc.jit(lambda v: _callback_program(lax, lc, v))
    printing = lc.jit(lambda v: _printing_scan(lax, lc.debug, v))
    calls = {"lamella": lambda: lc.block_until_ready(callback(x))}
    prints = {"lamella": lambda: lc.block_until_ready(printing(np.float32(0)))}
    if jax is not None:
        jcallback = jax.jit(lambda v: _callback_program(jax.lax, jax, v))
        jprinting = jax.jit(lambda v: _printing_scan(jax.lax, jax.debug, v))
        calls["jax"] = lambda: jax.block_until_ready(jcallback(x))
        prints["jax"] = lambda: jax.block_until_ready(jprinting(np.float32(0)))
    t_calls = compare(calls, rounds=3, repeat=5)
    with _stdout_to_devnull():
        t_prints = compare(prints, rounds=3, repeat=3)
    return [
        Row("jit(pure_callback) per call, f32[3]", t_calls["lamella"],
            {"jax": t_calls.get("jax")}, unit="us"),
        Row(f"debug.print in a {STEPS}-step scan (to /dev/null)", t_prints["lamella"],
            {"jax": t_prints.get("jax")}, unit="ms"),
    ]
