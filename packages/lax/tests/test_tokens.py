"""Tokens: create_token / after_all eagerly, staged, jitted (tokens cross the
executable's boundary as empty arrays and come back as Token objects)."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
from lamella.lax.tokens import Token


def test_eager_tokens_are_token_objects():
    assert repr(lax.create_token()) == "Token()"
    assert isinstance(lax.create_token(1.0), Token)  # JAX's ignored argument
    assert isinstance(lax.after_all(lax.create_token(), lax.create_token()), Token)


def test_tokens_stage_as_jax_prints_them():
    jaxpr = lc.make_jaxpr(lambda: lax.after_all(lax.create_token(), lax.create_token()))()
    assert str(jaxpr) == (
        "{ lambda ; . let\n"
        "    a:Tok = create_token \n"
        "    b:Tok = create_token \n"
        "    c:Tok = after_all a b\n"
        "  in (c,) }")


def test_tokens_pass_through_jit_boundaries():
    f = lc.jit(lambda t, x: (lax.after_all(t), lax.add(x, 1.0)))
    token, y = f(lax.create_token(), np.float32(1.0))
    assert isinstance(token, Token) and float(y) == 2.0
    text = f.lower(lax.create_token(), np.float32(1.0)).as_text()
    assert "stablehlo.after_all" in text and "tensor<0xi1>" in text  # empty-array boundary


def test_after_all_rejects_arrays():
    with pytest.raises(TypeError, match="after_all takes tokens only"):
        lc.jit(lambda x: lax.after_all(x))(np.float32(1.0))


def test_a_token_inside_a_program_does_not_change_its_values():
    def f(x):
        lax.after_all(lax.create_token())
        return lax.mul(x, 2.0)
    np.testing.assert_array_equal(np.asarray(lc.jit(f)(np.arange(3, dtype=np.float32))),
                                  [0.0, 2.0, 4.0])
    assert float(lc.grad(f)(np.float32(3.0))) == 2.0
