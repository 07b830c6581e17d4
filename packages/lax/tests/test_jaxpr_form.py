"""Jaxprs print as JAX 0.10.2 prints them: the expected strings below were printed by
`jax.make_jaxpr` in JAX 0.10.2 for the same programs (variable names, literals such as
`2.0:f32[]` left as scalar operands, hidden default parameters, `_` for unread
outputs, line breaking), and lamella must print them character for character.

Loops trace their bodies once per call: a counter in the body sees one trace.
"""

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as jnp

F32 = np.float32
X3 = np.ones(3, F32)
M23 = np.ones((2, 3), F32)
M34 = np.ones((3, 4), F32)

PROGRAMS = {
    "mul_scalar": (
        lambda x: x * 2.0,
        (X3,),
        '{ lambda ; a:f32[3]. let b:f32[3] = mul a 2.0:f32[] in (b,) }'),
    "sin_plus_cos": (
        lambda x: jnp.sin(x) + jnp.cos(x),
        (X3,),
        '{ lambda ; a:f32[3]. let\n'
        '    b:f32[3] = sin a\n'
        '    c:f32[3] = cos a\n'
        '    d:f32[3] = add b c\n'
        '  in (d,) }'),
    "lax_dot": (
        lambda a, b: lax.dot(a, b),
        (M23, M34),
        '{ lambda ; a:f32[2,3] b:f32[3,4]. let\n'
        '    c:f32[2,4] = dot_general[dimension_numbers=(([1], [0]), ([], []))] a b\n'
        '  in (c,) }'),
    "dot_general_batch": (
        lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))),
        (np.ones((2, 3, 4), F32), np.ones((2, 4, 5), F32)),
        '{ lambda ; a:f32[2,3,4] b:f32[2,4,5]. let\n'
        '    c:f32[2,3,5] = dot_general[dimension_numbers=(([2], [1]), ([0], [0]))] a b\n'
        '  in (c,) }'),
    "max_all": (
        lambda x: jnp.max(x),
        (M23,),
        '{ lambda ; a:f32[2,3]. let b:f32[] = reduce_max[axes=(0, 1)] a in (b,) }'),
    "cond": (
        lambda p, x: lax.cond(p, lambda x: x + 1.0, lambda x: x - 1.0, x),
        (True, F32(1)),
        '{ lambda ; a:bool[] b:f32[]. let\n'
        '    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a\n'
        '    d:f32[] = cond[\n'
        '      branches=(\n'
        '        { lambda ; e:f32[]. let f:f32[] = sub e 1.0:f32[] in (f,) }\n'
        '        { lambda ; g:f32[]. let h:f32[] = add g 1.0:f32[] in (h,) }\n'
        '      )\n'
        '    ] c b\n'
        '  in (d,) }'),
    "fori_loop": (
        lambda x: lax.fori_loop(0, 3, lambda i, c: c * 2.0, x),
        (F32(1),),
        '{ lambda ; a:f32[]. let\n'
        '    _:i32[] b:f32[] = scan[\n'
        '      jaxpr={ lambda ; c:i32[] d:f32[]. let\n'
        '          e:i32[] = add c 1:i32[]\n'
        '          f:f32[] = mul d 2.0:f32[]\n'
        '        in (e, f) }\n'
        '      length=3\n'
        '      num_carry=2\n'
        '      num_consts=0\n'
        '      reverse=False\n'
        '      unroll=1\n'
        '    ] 0:i32[] a\n'
        '  in (b,) }'),
    "scan": (
        lambda xs: lax.scan(lambda c, x: (c + x, c * x), F32(0), xs),
        (X3,),
        '{ lambda ; a:f32[3]. let\n'
        '    b:f32[] c:f32[3] = scan[\n'
        '      jaxpr={ lambda ; d:f32[] e:f32[]. let\n'
        '          f:f32[] = add d e\n'
        '          g:f32[] = mul d e\n'
        '        in (f, g) }\n'
        '      length=3\n'
        '      num_carry=1\n'
        '      num_consts=0\n'
        '      reverse=False\n'
        '      unroll=1\n'
        '    ] 0.0:f32[] a\n'
        '  in (b, c) }'),
    "while_loop": (
        lambda x: lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x),
        (F32(1),),
        '{ lambda ; a:f32[]. let\n'
        '    b:f32[] = while[\n'
        '      body_jaxpr={ lambda ; c:f32[]. let d:f32[] = mul c 2.0:f32[] in (d,) }\n'
        '      body_nconsts=0\n'
        '      cond_jaxpr={ lambda ; e:f32[]. let f:bool[] = lt e 10.0:f32[] in (f,) }\n'
        '      cond_nconsts=0\n'
        '    ] a\n'
        '  in (b,) }'),
    "conv": (
        lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "SAME"),
        (np.ones((1, 2, 4, 4), F32), np.ones((3, 2, 3, 3), F32)),
        '{ lambda ; a:f32[1,2,4,4] b:f32[3,2,3,3]. let\n'
        '    c:f32[1,3,4,4] = conv_general_dilated[\n'
        '      batch_group_count=1\n'
        '      dimension_numbers=ConvDimensionNumbers(lhs_spec=(0, 1, 2, 3), rhs_spec=(0, 1, 2, 3), out_spec=(0, 1, 2, 3))\n'  # noqa: E501
        '      feature_group_count=1\n'
        '      lhs_dilation=(1, 1)\n'
        '      out_sharding=None\n'
        '      padding=((1, 1), (1, 1))\n'
        '      precision=None\n'
        '      preferred_element_type=None\n'
        '      rhs_dilation=(1, 1)\n'
        '      window_strides=(1, 1)\n'
        '    ] a b\n'
        '  in (c,) }'),
    "grad_sin": (
        lc.grad(lambda x: jnp.sin(x) * x),
        (F32(1),),
        '{ lambda ; a:f32[]. let\n'
        '    b:f32[] = sin a\n'
        '    c:f32[] = cos a\n'
        '    _:f32[] = mul b a\n'
        '    d:f32[] = mul b 1.0:f32[]\n'
        '    e:f32[] = mul 1.0:f32[] a\n'
        '    f:f32[] = mul e c\n'
        '    g:f32[] = add_any d f\n'
        '  in (g,) }'),
    "jit_inside": (
        lambda x: lc.jit(lambda y: y * y)(x) + 1.0,
        (X3,),
        '{ lambda ; a:f32[3]. let\n'
        '    b:f32[3] = jit[\n'
        '      name=<lambda>\n'
        '      jaxpr={ lambda ; a:f32[3]. let b:f32[3] = mul a a in (b,) }\n'
        '    ] a\n'
        '    c:f32[3] = add b 1.0:f32[]\n'
        '  in (c,) }'),
    "top_k_values": (
        lambda x: lax.top_k(x, 2)[0],
        (X3,),
        '{ lambda ; a:f32[3]. let b:f32[2] _:i32[2] = top_k[axis=0 k=2] a in (b,) }'),
    "astype": (
        lambda x: x.astype(jnp.int32),
        (X3,),
        '{ lambda ; a:f32[3]. let\n'
        '    b:i32[3] = convert_element_type[new_dtype=int32 weak_type=False] a\n'
        '  in (b,) }'),
    "reduce_window_max": (
        lambda x: lax.reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1), "VALID"),
        (np.ones((3, 3), F32),),
        '{ lambda ; a:f32[3,3]. let\n'
        '    b:f32[2,2] = reduce_window_max[\n'
        '      base_dilation=(1, 1)\n'
        '      padding=((0, 0), (0, 0))\n'
        '      window_dilation=(1, 1)\n'
        '      window_dimensions=(2, 2)\n'
        '      window_strides=(1, 1)\n'
        '    ] a\n'
        '  in (b,) }'),
    "broadcast_add": (
        lambda a, b: a + b,
        (X3, M23),
        '{ lambda ; a:f32[3] b:f32[2,3]. let\n'
        '    c:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(1,)] a\n'
        '    d:f32[2,3] = add c b\n'
        '  in (d,) }'),
    "jvp_tanh": (
        lambda x, t: lc.jvp(jnp.tanh, (x,), (t,)),
        (X3, X3),
        '{ lambda ; a:f32[3] b:f32[3]. let\n'
        '    c:f32[3] = tanh a\n'
        '    d:f32[3] = mul b c\n'
        '    e:f32[3] = add b d\n'
        '    f:f32[3] = sub 1.0:f32[] c\n'
        '    g:f32[3] = mul e f\n'
        '  in (c, g) }'),
    "sort_two": (
        lambda x, y: lax.sort((x, y), num_keys=1)[1],
        (X3, X3),
        '{ lambda ; a:f32[3] b:f32[3]. let\n'
        '    _:f32[3] c:f32[3] = sort[dimension=0 is_stable=True num_keys=1] a b\n'
        '  in (c,) }'),
    "integer_pow": (
        lambda x: x ** 3,
        (X3,),
        '{ lambda ; a:f32[3]. let b:f32[3] = integer_pow[y=3] a in (b,) }'),
    "select_n": (
        lambda p, x: lax.select(p, x, -x),
        (np.array([True, False, True]), X3),
        '{ lambda ; a:bool[3] b:f32[3]. let\n'
        '    c:f32[3] = neg b\n'
        '    d:f32[3] = select_n a c b\n'
        '  in (d,) }'),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jaxpr_prints_as_jax(name):
    fun, args, expected = PROGRAMS[name]
    assert str(lc.make_jaxpr(fun)(*args)) == expected


@pytest.mark.parametrize("loop", ["fori_loop", "scan", "while_loop"])
def test_loop_bodies_are_traced_once(loop):
    traces = []

    def body(c):
        traces.append(1)
        return lax.mul(c, 2.0)
    run = {
        "fori_loop": lambda x: lax.fori_loop(0, 3, lambda i, c: body(c), x),
        "scan": lambda x: lax.scan(lambda c, _: (body(c), None), x, None, length=3)[0],
        "while_loop": lambda x: lax.while_loop(lambda c: lax.lt(c, 10.0), body, x),
    }[loop]
    assert float(run(F32(1))) == (8.0 if loop != "while_loop" else 16.0)
    assert len(traces) == 1
    lc.make_jaxpr(run)(F32(1))
    assert len(traces) == 2
