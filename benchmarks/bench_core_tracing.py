"""lamella.core: tracing speed and the interpreter's jit call overhead."""

from __future__ import annotations

import numpy as np
from harness import Row, jax_or_none, median_time

import lamella.core as lc
from lamella.core import ShapedArray

N_EQNS = 1000

sin_p = lc.Primitive("sin")
sin_p.def_impl(np.sin)
sin_p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))


def chain(bind):
    def f(x):
        for _ in range(N_EQNS):
            x = bind(x)
        return x
    return f


def run() -> list[Row]:
    x = np.ones(8, np.float32)
    lamella_trace = median_time(lambda: lc.make_jaxpr(chain(sin_p.bind))(x), repeat=5)
    assert len(lc.make_jaxpr(chain(sin_p.bind))(x).eqns) == N_EQNS

    tiny = lc.jit(sin_p.bind)
    lamella_call = median_time(lambda: tiny(x))
    direct_impl = median_time(lambda: np.sin(x))

    jax = jax_or_none()
    jax_trace = jax_call = None
    if jax is not None:
        jax_trace = median_time(lambda: jax.make_jaxpr(chain(jax.lax.sin))(x), repeat=5)
        jitted = jax.jit(jax.lax.sin)
        xj = jax.device_put(x)
        jax_call = median_time(lambda: jitted(xj))
    per_eqn = 1 / N_EQNS
    return [
        Row(f"make_jaxpr, per equation ({N_EQNS}-eqn chain)", lamella_trace * per_eqn,
            {"jax": jax_trace and jax_trace * per_eqn}),
        Row("jit cache-hit call, 1 eqn (interpreter vs XLA)", lamella_call,
            {"jax": jax_call, "numpy": direct_impl}),
    ]
