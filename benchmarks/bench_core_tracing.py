"""lamella.core: tracing speed and the interpreter's jit call overhead."""

from __future__ import annotations

import numpy as np
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
from lamella.core import ShapedArray
from lamella.core.dispatch import InterpreterExecutor, register_executor

N_EQNS = pick(1000, 10)

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
    assert len(lc.make_jaxpr(chain(sin_p.bind))(x).eqns) == N_EQNS
    jax = jax_or_none()
    trace = compare({
        "lamella": lambda: lc.make_jaxpr(chain(sin_p.bind))(x),
        "jax": jax and (lambda: jax.make_jaxpr(chain(jax.lax.sin))(x)),
    }, repeat=3)
    # Core's own executor, even when lamella.lax (which registers XLA) is loaded.
    previous = register_executor(InterpreterExecutor())
    try:
        interpreter = lc.jit(sin_p.bind)
        calls = compare({"lamella": lambda: interpreter(x), "numpy": lambda: np.sin(x)})
    finally:
        register_executor(previous)
    per_eqn = 1 / N_EQNS
    return [
        Row(f"make_jaxpr, per equation ({N_EQNS}-eqn chain)", trace["lamella"] * per_eqn,
            {"jax": trace["jax"] and trace["jax"] * per_eqn}),
        Row("interpreter jit cache-hit call, 1 eqn (core alone)", calls["lamella"],
            {"numpy": calls["numpy"]}),
    ]
