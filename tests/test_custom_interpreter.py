"""JAX's "Writing custom Jaxpr interpreters" tutorial: an `inverse`
transformation that runs a function's jaxpr backwards, and composes with jit,
vmap and grad."""

import functools

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax

inverse_registry = {lax.exp_p: lax.log, lax.tanh_p: lax.atanh}


def inverse_jaxpr(jaxpr, consts, *args):
    env = {}

    def read(v):
        return v.val if isinstance(v, lc.Literal) else env[v]

    env.update(zip(jaxpr.outvars, args))
    env.update(zip(jaxpr.constvars, consts))
    for eqn in reversed(jaxpr.eqns):
        if eqn.primitive not in inverse_registry:
            raise NotImplementedError(f"{eqn.primitive} has no inverse")
        (invar,) = eqn.invars
        env[invar] = inverse_registry[eqn.primitive](*map(read, eqn.outvars))
    return [read(v) for v in jaxpr.invars]


def inverse(fun):
    @functools.wraps(fun)
    def wrapped(*args):
        closed = lc.make_jaxpr(fun)(*args)
        return inverse_jaxpr(closed.jaxpr, closed.literals, *args)[0]
    return wrapped


def f(x):
    return lax.exp(lax.tanh(x))


def test_inverse_inverts():
    x = np.float32(0.3)
    assert float(inverse(f)(f(x))) == pytest.approx(0.3, rel=1e-6)


def test_inverse_composes_with_jit_vmap_and_grad():
    x = (np.arange(5, dtype=np.float32) + 1.0) / 5.0
    out = lc.jit(lc.vmap(lc.grad(inverse(f))))(x)
    np.testing.assert_allclose(out, [-3.1440797, 15.584931, 2.2551253, 1.3155028, 1.0],
                               rtol=1e-6)


def test_inverse_jaxpr_prints():
    text = str(lc.make_jaxpr(inverse(f))(np.float32(1.0)))
    assert "atanh" in text and "log" in text
