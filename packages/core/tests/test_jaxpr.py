"""The IR: printed form, literals, sub-jaxprs, source info, the checker, the interpreter."""

import re

import numpy as np
import pytest
from numpy_prims import add, cos, exp, mul, sin, sin_p, tanh, total

import lamella.core as lc
from lamella.core import ClosedJaxpr, Jaxpr, JaxprEqn, JaxprTypeError, ShapedArray, Var


def test_printed_form_matches_jax():
    jaxpr = lc.make_jaxpr(lambda x: exp(tanh(x)))(np.ones(5, np.float32))
    assert str(jaxpr) == "{ lambda ; a:f32[5]. let b:f32[5] = tanh a; c:f32[5] = exp b in (c,) }"


def test_long_jaxprs_print_one_equation_per_line_with_literals_and_params():
    jaxpr = lc.make_jaxpr(lambda x, y: total(add(mul(x, 2.0), sin(y))))(
        np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))
    assert str(jaxpr) == (
        "{ lambda ; a:f32[2,3] b:f32[2,3]. let\n"
        "    c:f32[2,3] = mul a 2.0:f32[]\n"
        "    d:f32[2,3] = sin b\n"
        "    e:f32[2,3] = add c d\n"
        "    f:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] e\n"
        "  in (f,) }")


def test_constants_become_constvars_and_literals():
    big = np.arange(3, dtype=np.float32)
    jaxpr = lc.make_jaxpr(lambda x: add(mul(x, big), 1))(np.ones(3, np.float32))
    assert str(jaxpr).startswith("{ lambda a:f32[3]; b:f32[3]. let")
    assert "1:i32[]" in str(jaxpr)
    np.testing.assert_array_equal(jaxpr.consts[0], big)
    assert jaxpr.literals is jaxpr.consts
    out = lc.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, np.full(3, 2, np.float32))
    np.testing.assert_array_equal(out[0], big * 2 + 1)


def test_sub_jaxprs_are_indented_and_jit_shares_the_callers_names():
    # Strings printed by JAX 0.10.2 for the same programs.
    inner = lc.jit(lambda x: cos(sin(x)))
    text = str(lc.make_jaxpr(lambda x: mul(inner(x), x))(np.ones(3, np.float32)))
    assert text == (
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = jit[\n"
        "      name=<lambda>\n"
        "      jaxpr={ lambda ; a:f32[3]. let\n"
        "          c:f32[3] = sin a\n"
        "          b:f32[3] = cos c\n"
        "        in (b,) }\n"
        "    ] a\n"
        "    d:f32[3] = mul b a\n"
        "  in (d,) }")
    swap = lc.make_jaxpr(lc.jit(lambda x, y: (y, x)))(1.0, 2.0)
    assert str(swap) == (
        "{ lambda ; a:f32[] b:f32[]. let\n"
        "    c:f32[] d:f32[] = jit[\n"
        "      name=<lambda>\n"
        "      jaxpr={ lambda ; a:f32[] b:f32[]. let  in (b, a) }\n"
        "    ] a b\n"
        "  in (c, d) }")


def test_unread_outputs_print_as_underscores():
    jaxpr = lc.make_jaxpr(lambda x: (sin(x), cos(x))[0])(np.ones(3, np.float32))
    assert str(jaxpr) == "{ lambda ; a:f32[3]. let b:f32[3] = sin a; _:f32[3] = cos a in (b,) }"


def test_jaxprs_used_twice_print_once_up_front():
    g = lc.jit(lambda y: sin(y))
    jaxpr = lc.make_jaxpr(lambda x: mul(g(x), g(x)))(np.ones(3, np.float32))
    assert str(jaxpr) == (
        "let lambda = { lambda ; a:f32[3]. let b:f32[3] = sin a in (b,) } in\n"
        "{ lambda ; c:f32[3]. let\n"
        "    d:f32[3] = jit[name=<lambda> jaxpr=lambda] c\n"
        "    e:f32[3] = jit[name=<lambda> jaxpr=lambda] c\n"
        "    f:f32[3] = mul d e\n"
        "  in (f,) }")


def test_long_binder_lists_fill_lines_and_empty_bodies_print_as_jax():
    jaxpr = lc.make_jaxpr(lambda *xs: xs[0])(*[np.ones((100, 200), np.float32)] * 11)
    assert str(jaxpr) == (
        "{ lambda ; a:f32[100,200] b:f32[100,200] c:f32[100,200] d:f32[100,200] "
        "e:f32[100,200]\n"
        "    f:f32[100,200] g:f32[100,200] h:f32[100,200] i:f32[100,200] j:f32[100,200] "
        "k:f32[100,200]. let\n"
        "    \n"
        "  in (a,) }")
    assert str(lc.make_jaxpr(lambda x: x)(1.0)) == "{ lambda ; a:f32[]. let  in (a,) }"


def test_variable_names_continue_alphabetically():
    def many(x):
        for _ in range(30):
            x = sin(x)
        return x
    text = str(lc.make_jaxpr(many)(1.0))
    assert " ba:f32[] = sin z" in text and "in (be,) }" in text


def test_equations_record_the_users_source_line():
    jaxpr = lc.make_jaxpr(lambda x: sin_p.bind(x))(1.0)
    info = jaxpr.eqns[0].source_info
    assert info.filename == __file__
    assert info.function == "<lambda>"
    # Re-tracing through a transformation keeps the original location.
    jvp_jaxpr = lc.make_jaxpr(lambda x: lc.jvp(lambda y: sin_p.bind(y), (x,), (1.0,)))(1.0)
    assert {e.source_info.lineno for e in jvp_jaxpr.eqns} == {jvp_jaxpr.eqns[0].source_info.lineno}
    assert all(e.source_info.filename == __file__ for e in jvp_jaxpr.eqns)


def test_weak_types_are_tracked():
    jaxpr = lc.make_jaxpr(lambda x: mul(x, 2.0))(3.0)
    assert jaxpr.in_avals[0] == ShapedArray((), np.float32, weak_type=True)
    assert jaxpr.out_avals[0].weak_type
    strong = lc.make_jaxpr(lambda x: mul(x, 2.0))(np.float32(3.0))
    assert not strong.out_avals[0].weak_type


def test_check_jaxpr_accepts_traced_jaxprs_and_rejects_ill_typed_ones():
    traced = lc.make_jaxpr(lc.grad(lambda x: total(mul(sin(x), x))))(np.ones(3, np.float32))
    lc.check_jaxpr(traced)
    a = Var(ShapedArray((3,), np.float32))
    b = Var(ShapedArray((4,), np.float32))
    bad = Jaxpr([], [a], [b], [JaxprEqn([a], [b], sin_p, {})])
    with pytest.raises(JaxprTypeError, match=r"binds a variable of type f32\[4\] to a value of "
                                             r"type f32\[3\]"):
        lc.check_jaxpr(bad)
    unbound = Var(ShapedArray((3,), np.float32))
    with pytest.raises(JaxprTypeError, match="used before it is defined"):
        lc.check_jaxpr(Jaxpr([], [a], [b], [JaxprEqn([unbound], [b], sin_p, {})]))
    with pytest.raises(JaxprTypeError, match="defined twice"):
        lc.check_jaxpr(Jaxpr([], [a], [a], [JaxprEqn([a], [a], sin_p, {})]))


def test_eval_jaxpr_and_jaxpr_as_fun():
    closed = lc.make_jaxpr(lambda x, y: (add(x, y), mul(x, y)))(1.0, 2.0)
    assert isinstance(closed, ClosedJaxpr)
    s, p = lc.jaxpr_as_fun(closed)(3.0, 4.0)
    assert (s, p) == (7.0, 12.0)
    with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
        lc.eval_jaxpr(closed.jaxpr, closed.consts, 1.0)


def test_make_jaxpr_return_shape_and_statics():
    closed, shape = lc.make_jaxpr(lambda x, n: mul(x, float(n)), static_argnums=1,
                                  return_shape=True)(np.ones((2, 2), np.float32), 3)
    assert shape == lc.ShapeDtypeStruct((2, 2), np.float32)
    assert "3.0:f32[]" in str(closed)


def test_higher_order_jaxprs_print_and_check():
    f = lc.checkpoint(lambda x: sin(sin(x)))
    jaxpr = lc.make_jaxpr(lc.grad(lambda x: total(f(x))))(np.ones(2, np.float32))
    lc.check_jaxpr(jaxpr)
    text = str(jaxpr)
    assert re.search(r"checkpoint\[\n\s+jaxpr=\{ lambda", text)
    assert "differentiated=True" in text
