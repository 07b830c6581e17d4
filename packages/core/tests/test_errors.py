"""Every user-facing error of core, with the message a user acts on.

Each test triggers one mistake and checks both the exception type and that the
message names what went wrong (the function, the argument, the primitive, the
rule, the transformation or the line of user code) and what to do about it.
"""

from __future__ import annotations

import re

import numpy as np
import numpy_prims as P
import pytest

import lamella.core as lc
from lamella.core import (
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    JaxprTypeError,
    Literal,
    Primitive,
    ShapedArray,
    Var,
    ad,
    batching,
)

F32 = np.float32
THIS_FILE = re.escape(__file__.rsplit("/", 1)[-1])


def _line_of(fn, offset: int) -> str:
    """`test_errors.py:<line>` for the line `offset` lines below `def fn`."""
    return f"{THIS_FILE}:{fn.__code__.co_firstlineno + offset}"


# ---------------------------------------------------------------------------
# Concrete values needed from traced ones.


def choose(x, y):
    if P.greater(y, 0.0):
        return x
    return P.neg(x)


def test_python_control_flow_on_a_traced_value_under_jit():
    with pytest.raises(lc.ConcretizationTypeError) as info:
        lc.jit(choose)(np.float32(1.0), np.float32(2.0))
    message = str(info.value)
    assert "a traced array of type bool[] was passed to `bool`" in message
    assert re.search(rf"while tracing the function choose at .*{THIS_FILE}:\d+ for jit",
                     message)
    assert "The value depends on `y`." in message  # not on `x`
    assert "static_argnums" in message and "cond" in message


def test_concretization_error_names_pytree_paths_and_keyword_arguments():
    def fn(params, x, *, scale):
        if P.greater(P.add(params["b"], scale), 0.0):
            return x
        return x
    with pytest.raises(lc.ConcretizationTypeError,
                       match=r"depends on `params\['b'\]`, `scale`\."):
        lc.jit(fn)({"a": 1.0, "b": 2.0}, 1.0, scale=np.float32(1.0))


def test_concretization_error_for_values_not_from_arguments():
    def constant_condition(x):
        if P.greater(P.sin(np.float32(1.0)), 0.0):
            return x
        return x
    with pytest.raises(lc.ConcretizationTypeError,
                       match="does not depend on the function's arguments"):
        lc.jit(constant_condition)(1.0)

    def outer(x):
        inner = lc.jit(lambda y: y if P.greater(x, 0.0) else P.neg(y))
        return inner(x)
    with pytest.raises(lc.ConcretizationTypeError,
                       match=r"function <lambda> .* depends on values closed over by the "
                             r"traced function"):
        lc.jit(outer)(1.0)


@pytest.mark.parametrize("convert, name", [(int, "int"), (float, "float"), (bool, "bool"),
                                           (complex, "complex")])
def test_scalar_conversions_of_tracers(convert, name):
    def to_python(x):
        return convert(x)
    with pytest.raises(lc.ConcretizationTypeError,
                       match=rf"type f32\[\] was passed to `{name}`.*function to_python.*"
                             r"depends on `x`"):
        lc.jit(to_python)(np.float32(1.0))


def test_tracer_used_as_a_python_integer():
    def count(n):
        return [P.sin(np.float32(i)) for i in range(n)]
    with pytest.raises(lc.TracerIntegerConversionError,
                       match=r"type i32\[\] was used as a Python integer \(an index, a size "
                             r"or a `range` bound\).*function count.*depends on `n`.*"
                             r"static_argnums"):
        lc.jit(count)(3)
    assert len(lc.jit(count, static_argnums=0)(3)) == 3

    def pick(table, i):
        return table[i]
    with pytest.raises(lc.TracerIntegerConversionError, match="depends on `i`"):
        lc.jit(pick, static_argnums=0)((1.0, 2.0), 1)


def test_tracer_converted_to_numpy():
    def to_numpy(x):
        return np.asarray(x)
    with pytest.raises(lc.TracerArrayConversionError,
                       match=r"type f32\[3\] was converted to a NumPy array \(np\.asarray.*"
                             r"function to_numpy.*depends on `x`.*lamella\.numpy"):
        lc.jit(to_numpy)(np.ones(3, F32))
    with pytest.raises(lc.TracerArrayConversionError, match="converted to a NumPy array"):
        lc.grad(lambda x: np.sum(P.mul(x, x)))(np.ones(3, F32))


def test_concretization_error_classes_are_type_errors():
    for cls in (lc.ConcretizationTypeError, lc.TracerArrayConversionError,
                lc.TracerIntegerConversionError, lc.JaxprTypeError):
        assert issubclass(cls, TypeError)


# ---------------------------------------------------------------------------
# Python control flow: fine on concrete primals (grad, jvp), not under vmap.


def absolute(x):
    if P.greater(x, 0.0):
        return P.mul(x, x)
    return P.neg(x)


def test_control_flow_on_primals_works_under_grad_and_jvp():
    np.testing.assert_allclose(lc.grad(absolute)(np.float32(3.0)), 6.0)
    np.testing.assert_allclose(lc.grad(absolute)(np.float32(-3.0)), -1.0)
    primal, tangent = lc.jvp(absolute, (np.float32(2.0),), (np.float32(1.0),))
    assert (primal, tangent) == (4.0, 4.0)
    assert lc.grad(lc.grad(absolute))(np.float32(2.0)) == 2.0


def test_control_flow_under_vmap_says_batched():
    with pytest.raises(lc.ConcretizationTypeError,
                       match=r"passed to `bool`\. The value is batched by vmap of absolute, "
                             r"so it differs across the batch"):
        lc.vmap(absolute)(np.ones(3, F32))


def test_control_flow_under_jit_of_grad_fails():
    with pytest.raises(lc.ConcretizationTypeError,
                       match=r"function absolute .* for jit.*depends on `x`"):
        lc.jit(lc.grad(absolute))(np.float32(1.0))


# ---------------------------------------------------------------------------
# Escaped tracers.


@pytest.mark.parametrize("transform, args, kind, made_by", [
    (lc.jit, (np.float32(1.0),), "JaxprTracer", "jit of leaky"),
    (lc.grad, (np.float32(1.0),), "JVPTracer", "grad of leaky"),
    (lc.vmap, (np.ones(3, F32),), "BatchTracer", "vmap of leaky"),
])
def test_escaped_tracer(transform, args, kind, made_by):
    leaked = []

    def leaky(x):
        y = P.sin(x)
        leaked.append(y)
        return y

    transform(leaky)(*args)
    # Staged values also name the line that made them.
    site = r" at .*numpy_prims.py:\d+ \(sin\)" if kind == "JaxprTracer" else ""
    pattern = (rf"unexpected tracer: a {kind} of type f32\[\] created{site} by {made_by}, which "
               r"has already finished.*leaked an intermediate value.*Return values")
    with pytest.raises(lc.UnexpectedTracerError, match=pattern):
        P.cos(leaked[0])
    with pytest.raises(lc.UnexpectedTracerError, match=pattern):
        lc.jit(lambda z: P.add(z, leaked[0]))(np.float32(1.0))
    with pytest.raises(lc.UnexpectedTracerError, match=pattern):
        lc.jit(P.cos)(leaked[0])


def test_escaped_tracer_under_jvp_and_vjp():
    leaked = []

    def leaky(x):
        leaked.append(P.exp(x))
        return x

    lc.jvp(leaky, (np.float32(1.0),), (np.float32(1.0),))
    with pytest.raises(lc.UnexpectedTracerError, match="created by jvp of leaky"):
        P.sin(leaked[-1])
    lc.vjp(leaky, np.float32(1.0))
    with pytest.raises(lc.UnexpectedTracerError, match="created by vjp of leaky"):
        lc.grad(lambda y: P.mul(y, leaked[-1]))(np.float32(1.0))


# ---------------------------------------------------------------------------
# Arguments and results that are not arrays.


def test_non_array_argument_to_jit():
    def fn(x, options):
        return x
    with pytest.raises(TypeError, match=r"argument to jit-compiled fn as an abstract array\. "
                                        r"The problematic value is of type str and was passed "
                                        r"at `options\['mode'\]`.*static_argnums"):
        lc.jit(fn)(np.float32(1.0), {"mode": "fast"})
    with pytest.raises(TypeError, match=r"of type object and was passed at `args\[1\]`"):
        lc.jit(lambda *args: args[0])(1.0, object())


def test_function_returning_a_non_array():
    with pytest.raises(TypeError, match=r"jit-compiled <lambda> returned a value of type str at "
                                        r"output\['b'\]; a transformed function can only "
                                        r"return arrays"):
        lc.jit(lambda x: {"a": x, "b": "text"})(np.float32(1.0))
    with pytest.raises(TypeError, match=r"grad returned a value of type str at output\[1\]"):
        lc.grad(lambda x: (x, "text"))(np.float32(1.0))
    with pytest.raises(TypeError, match=r"vmapped <lambda> returned a value of type object"):
        lc.vmap(lambda x: object())(np.ones(2, F32))


# ---------------------------------------------------------------------------
# Autodiff API misuse.


def test_grad_of_non_scalar_output():
    with pytest.raises(TypeError, match=r"Gradient only defined for scalar-output functions\. "
                                        r"Output had shape: \(3,\)"):
        lc.grad(P.sin)(np.ones(3, F32))

    def pair(x):
        return P.sin(x), P.cos(x)
    with pytest.raises(TypeError, match=r"scalar-output functions: pair returned a value with "
                                        r"structure PyTreeSpec\(\(\*, \*\)\)"):
        lc.grad(pair)(np.float32(1.0))
    with pytest.raises(TypeError, match="grad requires real-valued outputs.*got int32"):
        lc.grad(lambda x: np.int32(1), allow_int=True)(np.int32(2))


def test_grad_with_respect_to_integers():
    with pytest.raises(TypeError, match=r"grad requires real- or complex-valued inputs .* but "
                                        r"got int32\. .*allow_int"):
        lc.grad(lambda x: P.mul(x, 2.0))(np.int32(3))
    g = lc.grad(lambda x, y: P.mul(y, y), argnums=(0, 1), allow_int=True)(np.int32(3),
                                                                          np.float32(2.0))
    assert g[0].dtype == lc.float0 and g[0].shape == ()
    assert g[1] == 4.0


def test_grad_of_complex_output_needs_holomorphic():
    square = lambda z: P.mul(z, z)  # noqa: E731
    with pytest.raises(TypeError, match=r"grad requires real-valued outputs .* got complex64\. "
                                        r"For holomorphic differentiation, pass "
                                        r"holomorphic=True"):
        lc.grad(square)(np.complex64(1 + 1j))
    assert lc.grad(square, holomorphic=True)(np.complex64(1 + 1j)) == np.complex64(2 + 2j)
    with pytest.raises(TypeError, match="holomorphic=True requires inputs with complex dtype, "
                                        "but got float32"):
        lc.grad(square, holomorphic=True)(np.float32(1.0))


@pytest.mark.parametrize("argnums, needed", [(2, 3), ((0, 3), 4), (-3, 3)])
def test_grad_argnums_out_of_range(argnums, needed):
    with pytest.raises(TypeError, match=rf"argnums=\(.*\) requires at least {needed} positional "
                                        r"arguments to be passed by the caller, but got only 2"):
        lc.grad(lambda x, y: P.mul(x, y), argnums=argnums)(np.float32(1.0), np.float32(2.0))


def test_jvp_with_mismatched_primals_and_tangents():
    one = np.float32(1.0)
    with pytest.raises(TypeError, match=r"same tree structure; primals have tree structure "
                                        r"PyTreeSpec\(\(\*,\)\) whereas tangents have tree "
                                        r"structure PyTreeSpec\(\(\*, \*\)\)"):
        lc.jvp(P.sin, (one,), (one, one))
    with pytest.raises(TypeError, match=r"Got primal dtype float32 and so expected tangent "
                                        r"dtype f32, but got tangent dtype i32"):
        lc.jvp(P.sin, (one,), (np.int32(1),))
    with pytest.raises(ValueError, match=r"different primal and tangent shapes; got primal "
                                         r"shape \(3,\) and tangent shape \(2,\)"):
        lc.jvp(P.sin, (np.ones(3, F32),), (np.ones(2, F32),))
    with pytest.raises(TypeError, match="primal arguments to jvp must be a tuple or a list, "
                                        "found float32"):
        lc.jvp(P.sin, one, one)


def test_vjp_cotangent_with_wrong_structure_or_shape():
    _, pullback = lc.vjp(lambda x: (P.sin(x), x), np.ones(3, F32))
    with pytest.raises(TypeError, match=r"Tree structure of cotangent input PyTreeSpec\(\*\) "
                                        r"does not match structure of primal output "
                                        r"PyTreeSpec\(\(\*, \*\)\)"):
        pullback(np.ones(3, F32))
    with pytest.raises(ValueError, match=r"Shape of cotangent input to vjp pullback function "
                                         r"\(2,\) must be the same as the shape of the "
                                         r"corresponding primal output \(3,\)"):
        pullback((np.ones(2, F32), np.ones(3, F32)))
    (ct,) = pullback((np.ones(3, F32), np.ones(3, F32)))
    np.testing.assert_allclose(ct, np.cos(1.0) + 1.0, rtol=1e-6)


# ---------------------------------------------------------------------------
# Primitives with missing or wrong rules.


def _primitive(name, impl=True, abstract=True):
    p = Primitive(name)
    if impl:
        p.def_impl(lambda x: np.asarray(x) * 2)
    if abstract:
        p.def_abstract_eval(lambda x: x)
    return p


def test_missing_impl():
    p = _primitive("no_impl", impl=False)
    pattern = r"Evaluation rule \(impl\) for primitive 'no_impl' not implemented.*def_impl"
    with pytest.raises(NotImplementedError, match=pattern):
        p.bind(np.float32(1.0))
    with pytest.raises(NotImplementedError, match=pattern):
        lc.jit(p.bind)(np.float32(1.0))
    # Tracing needs only the abstract eval rule.
    assert str(lc.make_jaxpr(p.bind)(np.float32(1.0))) == \
        "{ lambda ; a:f32[]. let b:f32[] = no_impl a in (b,) }"


def test_missing_abstract_eval():
    p = _primitive("no_abstract", abstract=False)
    assert p.bind(np.float32(2.0)) == 4.0  # eager evaluation does not need it
    pattern = (r"Abstract evaluation rule for primitive 'no_abstract' not implemented.*"
               r"def_abstract_eval")
    with pytest.raises(NotImplementedError, match=pattern):
        lc.jit(p.bind)(np.float32(1.0))
    with pytest.raises(NotImplementedError, match=pattern):
        lc.eval_shape(p.bind, lc.ShapeDtypeStruct((2,), F32))


def test_missing_jvp_rule():
    p = _primitive("no_jvp")
    pattern = (r"Differentiation rule \(JVP\) for primitive 'no_jvp' not implemented: "
               r"register one in ad\.primitive_jvps\[no_jvp_p\]")
    with pytest.raises(NotImplementedError, match=pattern):
        lc.jvp(p.bind, (np.float32(1.0),), (np.float32(1.0),))
    with pytest.raises(NotImplementedError, match=pattern):
        lc.grad(p.bind)(np.float32(1.0))
    with pytest.raises(NotImplementedError, match=pattern):
        lc.grad(lc.jit(p.bind))(np.float32(1.0))


def test_missing_transpose_rule():
    p = _primitive("no_transpose")
    ad.primitive_jvps[p] = lambda primals, tangents: (p.bind(*primals), p.bind(*tangents))
    primal, tangent = lc.jvp(p.bind, (np.float32(1.0),), (np.float32(1.0),))
    assert (float(primal), float(tangent)) == (2.0, 2.0)  # forward mode needs no transpose

    def uses_it(x):
        return p.bind(x)
    line = _line_of(uses_it, 1)
    pattern = (r"Transpose rule \(for reverse-mode differentiation\) for primitive "
               rf"'no_transpose' not implemented: register one in "
               rf"ad\.primitive_transposes\[no_transpose_p\]\. The primitive was applied at "
               rf".*{line} \(uses_it\)")
    with pytest.raises(NotImplementedError, match=pattern):
        lc.grad(uses_it)(np.float32(1.0))
    with pytest.raises(NotImplementedError, match="for primitive 'no_transpose' not implemented"):
        lc.grad(lc.jit(uses_it))(np.float32(1.0))


def test_missing_batching_rule():
    p = _primitive("no_batching")
    pattern = (r"Batching rule for primitive 'no_batching' not implemented: register one in "
               r"batching\.primitive_batchers\[no_batching_p\] to use it under vmap")
    with pytest.raises(NotImplementedError, match=pattern):
        lc.vmap(p.bind)(np.ones(3, F32))
    with pytest.raises(NotImplementedError, match=pattern):
        lc.vmap(lc.jit(p.bind))(np.ones(3, F32))
    # Unbatched operands never need the rule.
    np.testing.assert_array_equal(lc.vmap(lambda x, y: P.add(x, p.bind(y)), in_axes=(0, None))(
        np.ones(2, F32), np.float32(1.0)), [3.0, 3.0])
    assert p not in batching.primitive_batchers


def bad_matmul(a, b):
    return P.matmul_p.bind(a, b)


def _grad_of_jit(f):
    return lambda a, b: lc.grad(lambda a: P.total(lc.jit(f)(a, b)))(a)


@pytest.mark.parametrize("transform, batch", [
    (lc.jit, ()),
    (lc.make_jaxpr, ()),
    (lambda f: lc.vmap(lc.jit(f)), (4,)),
    (_grad_of_jit, ()),
], ids=["jit", "make_jaxpr", "vmap_of_jit", "grad_of_jit"])
def test_shape_error_in_abstract_eval_names_the_user_line(transform, batch):
    a = np.ones((*batch, 2, 3), F32)
    pattern = (r"matmul needs matrices with matching inner dimensions, got f32\[2,3\] and "
               rf"f32\[2,3\] \(in primitive 'matmul' applied at .*{_line_of(bad_matmul, 1)} "
               r"\(bad_matmul\)\)")
    with pytest.raises(TypeError, match=pattern):
        transform(bad_matmul)(a, a)


def test_bad_jvp_rule_returning_a_wrong_shaped_tangent():
    p = _primitive("bad_jvp")
    ad.primitive_jvps[p] = lambda primals, tangents: (p.bind(*primals), np.ones(2, F32))
    pattern = (r"The JVP rule of bad_jvp produced a tangent of type f32\[2\] for a primal "
               r"output of type f32\[3\]: a tangent must have its primal's shape and dtype")
    with pytest.raises(TypeError, match=pattern):
        lc.jvp(p.bind, (np.ones(3, F32),), (np.ones(3, F32),))
    with pytest.raises(TypeError, match=pattern):
        lc.grad(lambda x: P.total(p.bind(x)))(np.ones(3, F32))


def test_bad_transpose_rule_returning_a_wrong_shaped_cotangent():
    p = _primitive("bad_transpose")
    ad.deflinear(p, lambda ct: [np.ones(5, F32)])
    with pytest.raises(TypeError, match=r"The transpose rule of 'bad_transpose' produced a "
                                        r"cotangent of type f32\[5\] for a value of type "
                                        r"f32\[3\]"):
        lc.grad(lambda x: P.total(p.bind(x)))(np.ones(3, F32))


# ---------------------------------------------------------------------------
# The jaxpr type checker.


def _var(shape):
    return Var(ShapedArray(shape, F32))


def test_check_jaxpr_accepts_traced_jaxprs():
    closed = lc.make_jaxpr(lambda x, y: P.total(P.matmul(P.sin(x), y)))(
        np.ones((2, 3), F32), np.ones((3, 4), F32))
    lc.check_jaxpr(closed)
    lc.check_jaxpr(lc.make_jaxpr(lc.grad(lc.jit(lambda x: P.total(P.exp(x)))))(np.ones(3, F32)))


def test_check_jaxpr_catches_a_wrong_output_type():
    a, b = _var((3,)), _var((4,))
    jaxpr = Jaxpr([], [a], [b], [JaxprEqn([a], [b], P.sin_p, {})])
    with pytest.raises(JaxprTypeError, match=r"equation `b:f32\[4\] = sin a` from <unknown "
                                             r"location> binds a variable of type f32\[4\] to a "
                                             r"value of type f32\[3\]"):
        lc.check_jaxpr(jaxpr)


def test_check_jaxpr_catches_undefined_and_redefined_variables():
    a, b, c = _var((3,)), _var((3,)), _var((3,))
    undefined = Jaxpr([], [a], [c], [JaxprEqn([a, b], [c], P.add_p, {})])
    with pytest.raises(JaxprTypeError, match=r"Variable c:f32\[3\] used before it is defined "
                                             r"\(equation `b:f32\[3\] = add a c`.*\n"
                                             r"\{ lambda ; a:f32\[3\]\. let b:f32\[3\] = add a c"):
        lc.check_jaxpr(undefined)
    one = Literal(1.0, ShapedArray((), F32))
    twice = Jaxpr([], [a], [c], [JaxprEqn([a, one], [c], P.add_p, {}),
                                 JaxprEqn([a], [c], P.sin_p, {})])
    with pytest.raises(JaxprTypeError, match=r"Variable b:f32\[3\] defined twice \(equation "
                                             r"`b:f32\[3\] = sin a`"):
        lc.check_jaxpr(twice)
    with pytest.raises(JaxprTypeError, match=r"Variable b:f32\[3\] used before it is defined "
                                             r"\(jaxpr outputs\)"):
        lc.check_jaxpr(Jaxpr([], [a], [b], []))


def test_check_jaxpr_catches_failing_abstract_eval_and_bad_consts():
    a, b = _var((3,)), _var((3,))
    jaxpr = Jaxpr([], [a], [b], [JaxprEqn([a, a], [b], P.matmul_p, {})])
    with pytest.raises(JaxprTypeError, match=r"`b:f32\[3\] = matmul a a` from <unknown "
                                             r"location> fails abstract evaluation: matmul needs "
                                             r"matrices"):
        lc.check_jaxpr(jaxpr)
    with pytest.raises(JaxprTypeError, match=r"constvar of type f32\[3\] bound to a value of "
                                             r"type f32\[2\]"):
        lc.check_jaxpr(ClosedJaxpr(Jaxpr([a], [], [a], []), [np.ones(2, F32)]))
    c = _var((2, 2))
    wrong_count = Jaxpr([], [c], [c], [JaxprEqn([c, c], [c, _var((2, 2))], P.matmul_p, {})])
    with pytest.raises(JaxprTypeError, match="has 2 outputs, but its primitive produces 1"):
        lc.check_jaxpr(wrong_count)
