"""lamella.core.shape_poly: symbolic dimensions, checked against integer arithmetic.

Random expressions over the variables a, b, c (built with +, -, *, max_dim, min_dim,
and // and % by constants) are evaluated symbolically and then at random points where every
variable is >= 1; the results must agree with the same arithmetic on ints.
Decided comparisons must hold at every point; printed expressions parse back.
"""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lamella.core import ShapeDtypeStruct
from lamella.core.shape_poly import (
    DimExpr,
    InconclusiveDimensionOperation,
    SymbolicScope,
    all_dim_vars,
    evaluate_shape,
    is_symbolic_dim,
    max_dim,
    min_dim,
    symbolic_args_specs,
    symbolic_shape,
)

VARS = ("a", "b", "c")
A, B, C = symbolic_shape(", ".join(VARS))

_leaf = st.one_of(st.sampled_from(VARS), st.integers(-5, 5))


def _extend(children):
    binary = st.tuples(st.sampled_from(["+", "-", "*", "max", "min"]), children, children)
    by_constant = st.tuples(st.sampled_from(["//", "%"]), children,
                            st.integers(-4, 4).filter(bool))
    return binary | by_constant


expressions = st.recursive(_leaf, _extend, max_leaves=6)
points = st.fixed_dictionaries({v: st.integers(1, 9) for v in VARS})

_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
        "%": operator.mod, "max": max_dim, "min": min_dim}


def build(tree, leaf):
    """The expression ``tree`` with variables given by ``leaf`` (symbolic or ints)."""
    if isinstance(tree, str):
        return leaf(tree)
    if isinstance(tree, int):
        return tree
    op, left, right = tree
    right = right if op in ("//", "%") else build(right, leaf)
    return _OPS[op](build(left, leaf), right)


def symbolic(tree):
    return build(tree, {"a": A, "b": B, "c": C}.__getitem__)


def value(e, point):
    return e.evaluate(point) if isinstance(e, DimExpr) else e


@settings(max_examples=50, deadline=None)
@given(expressions, points)
def test_arithmetic_agrees_with_integers(tree, point):
    assert value(symbolic(tree), point) == build(tree, point.__getitem__)


@settings(max_examples=50, deadline=None)
@given(expressions, expressions, points)
def test_sums_and_products_of_expressions(t1, t2, point):
    e1, e2 = symbolic(t1), symbolic(t2)
    v1, v2 = build(t1, point.__getitem__), build(t2, point.__getitem__)
    assert value(e1 + e2, point) == v1 + v2
    assert value(e1 - e2, point) == v1 - v2
    assert value(e1 * e2, point) == v1 * v2


@settings(max_examples=50, deadline=None)
@given(expressions, points)
def test_decided_comparisons_hold_at_every_point(tree, point):
    e = symbolic(tree)
    v = build(tree, point.__getitem__)
    for bound in (-3, 0, 1, 4):
        try:
            decided = e >= bound
        except InconclusiveDimensionOperation:
            continue
        assert decided == (v >= bound)
    if isinstance(e, DimExpr):
        assert (e == e) and not (e != e)
        assert e != 4  # never a constant: a constant normalizes to an int


@settings(max_examples=50, deadline=None)
@given(expressions, points)
def test_printed_expressions_parse_back(tree, point):
    e = symbolic(tree)
    parsed, = symbolic_shape(str(e))
    assert parsed == e
    assert value(parsed, point) == value(e, point)


def test_normal_form_and_printing():
    # JAX's order: larger terms first, then by name, descending
    assert str(2 * B + A * 3 - B) == "b + 3*a"
    assert str(B * B - 1) == "b^2 - 1"
    assert str(A * B + 2 - A) == "a*b - a + 2"
    assert (A + B) * 2 - 2 * B == 2 * A
    assert A - A == 0 and type(A - A) is int
    assert (B * 4) // 4 == B and (B * 4) % 4 == 0 and (A * B) // B == A
    assert str(B // 2) == "floordiv(b, 2)" and str(B % 3) == "mod(b, 3)"
    assert 2 * (B // 2) + B % 2 != B  # not simplified, but equal in value:
    assert all(value(2 * (B // 2) + B % 2, {"b": n}) == n for n in range(1, 8))
    assert hash(symbolic_shape("b")[0]) == hash(B) and symbolic_shape("b")[0] == B
    assert str(B - B // 2) == "- floordiv(b, 2) + b"
    assert str(B % 3 + B // 3 + B) == "mod(b, 3) + floordiv(b, 3) + b"


def test_max_min_terms_print_and_simplify_as_jax():
    assert str(min_dim(B, 2)) == "min(b, 2)" and str(min_dim(5, B)) == "min(5, b)"
    assert str(max_dim(0, B - 2)) == "max(0, b - 2)" and str(max_dim(B - 2, 0)) == "max(b - 2, 0)"
    assert str(B - min_dim(B, 5)) == "- min(b, 5) + b"
    assert str(max_dim(0, 10 - B)) == "max(0, - b + 10)"
    assert str(min_dim(B, A) + A + B) == "min(b, a) + b + a"
    assert str(min_dim(max_dim(A - 5, -3), -2 * A)) == "min(max(a - 5, - 3), - 2*a)"
    # decided ones are one of the operands
    assert min_dim(B, 1) == 1 and max_dim(B, 1) == B and max_dim(B, B + 1) == B + 1
    assert min_dim(B, B) == B and max_dim(3, 4) == 4 and type(min_dim(3, 4)) is int
    # == is syntactic, as JAX's
    assert min_dim(B, 2) == min_dim(B, 2) and min_dim(B, 2) != min_dim(2, B)
    assert symbolic_shape("max(b, 2), min(b, 3) + 1") == (max_dim(B, 2), min_dim(B, 3) + 1)
    with pytest.raises(TypeError, match="max_dim takes dimensions"):
        max_dim(B, 2.5)


def test_max_min_floordiv_comparisons_decided_as_jax():
    m, big = min_dim(B, 2), max_dim(B, 3)
    assert m <= 2 and m >= 1 and m <= B and big >= 3 and big >= B
    assert B - min_dim(B, 5) >= 0 and max_dim(0, B - 2) >= 0
    assert B // 2 <= B and B - B // 3 >= 0 and 2 * (B // 2) <= B
    assert min_dim(A, B) <= A + B and max_dim(A, B) <= A + B
    for undecided in (lambda: m >= 2, lambda: big <= B, lambda: min_dim(A, B) >= 2):
        with pytest.raises(InconclusiveDimensionOperation):
            undecided()


def test_comparisons_decide_or_raise_jax_style():
    assert B >= 1 and B > 0 and not B < 1 and 2 * B >= B + 1 and B * B >= B
    assert not (B == 4) and B != 4  # == never raises (JAX): not provably equal
    with pytest.raises(InconclusiveDimensionOperation,
                       match="Symbolic dimension comparison 'b' >= '4' is inconclusive"):
        _ = B >= 4
    with pytest.raises(InconclusiveDimensionOperation, match="'a' < 'b'"):
        _ = A < B
    with pytest.raises(InconclusiveDimensionOperation, match="requires a constant"):
        int(B)
    assert B % 3 <= 2 and B % 3 >= 0 and B // 2 >= 0


def test_constraints_decide_more_comparisons():
    b, = symbolic_shape("b", constraints=("b >= 16", "b <= 64"))
    assert b >= 16 and b > 15 and b <= 64 and b - 10 >= 6
    with pytest.raises(InconclusiveDimensionOperation, match="b >= 16"):
        _ = b >= 32  # the message lists the scope's constraints
    scope = SymbolicScope(["a + 2 >= b"])
    a, b = symbolic_shape("a, b", scope=scope)
    assert a + 2 >= b
    with pytest.raises(ValueError, match="Unsatisfiable"):
        SymbolicScope(["3 >= 4"])
    with pytest.raises(ValueError, match="must contain one of"):
        SymbolicScope(["b > 4"])
    with pytest.raises(ValueError, match="both a `scope` and `constraints`"):
        symbolic_shape("b", constraints=["b >= 2"], scope=scope)


def test_symbolic_shape_forms():
    assert symbolic_shape("b, 4") == symbolic_shape("(b, 4)") == (B, 4)
    assert symbolic_shape("") == () and symbolic_shape("4,") == (4,)
    assert symbolic_shape("2*b + 1, floordiv(a, 2), mod(c, 3)") == (2 * B + 1, A // 2, C % 3)
    assert symbolic_shape("(b, _, ...)", like=(None, 3, 5, 6)) == (B, 3, 5, 6)
    assert symbolic_shape(None, like=(2, 3)) == (2, 3)
    with pytest.raises(ValueError, match="invalid dimension expression"):
        symbolic_shape("b, abs(b)")
    with pytest.raises(ValueError, match="syntax error"):
        symbolic_shape("b +")
    with pytest.raises(ValueError, match="has 4 in dimension 0 where the actual shape has 3"):
        symbolic_shape("4, b", like=(3, None))
    assert is_symbolic_dim(B) and not is_symbolic_dim(4)
    assert all_dim_vars([(A, 4), (2 * B + C // 2,)]) == ["a", "b", "c"]
    assert evaluate_shape((2 * B, 3, A), {"a": 1, "b": 5}) == (10, 3, 1)


def test_symbolic_args_specs():
    args = (np.zeros((3, 4), np.float32), {"y": np.zeros((3,), np.int32)})
    x_spec, y_spec = symbolic_args_specs(args, ("b, _", {"y": "b"}), constraints=["b >= 2"])
    scope = x_spec.shape[0].scope
    b, = symbolic_shape("b", scope=scope)  # one scope for all, holding the constraints
    assert isinstance(x_spec, ShapeDtypeStruct) and x_spec.shape == (b, 4)
    assert y_spec["y"].shape == (b,) and y_spec["y"].dtype == np.int32
    assert x_spec.shape[0] >= 2
    assert b != B  # the same name under other constraints is another dimension
    same, = symbolic_args_specs((np.zeros((2,), np.float32),), None)
    assert same.shape == (2,)
