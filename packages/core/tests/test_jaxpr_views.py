"""Readable programs: jaxprs printed with the user's source line per equation (JAX's
layout: one aligned column of `# file:line (function)` comments), and jaxprs drawn
as graphviz graphs."""

import inspect
import shutil

import numpy as np
import pytest
from numpy_prims import cos_p, mul_p, sin_p

import lamella.core as lc

HERE = __file__


# Primitives bound here, so that the user's frame is this file's (numpy_prims' wrappers
# would be user frames themselves).
def inner(x):
    y = sin_p.bind(x)
    return mul_p.bind(cos_p.bind(y), 2.0)


def outer(x):
    return lc.jit(inner)(x)


def _line_of(fun, text: str) -> int:
    lines, start = inspect.getsourcelines(fun)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_source_info_annotates_each_equation_in_one_column():
    closed = lc.make_jaxpr(outer)(np.float32(1.0))
    printed = closed.pretty_print(source_info=True)
    sin_line, mul_line = _line_of(inner, "sin_p"), _line_of(inner, "mul_p")
    jit_line = _line_of(outer, "lc.jit")
    assert printed == "\n".join([
        "{ lambda ; a:f32[]. let",
        f"    b:f32[] = jit[                  # {HERE}:{jit_line} (outer)",
        "      name=inner",
        "      jaxpr={ lambda ; a:f32[]. let",
        f"          c:f32[] = sin a           # {HERE}:{sin_line} (inner)",
        f"          d:f32[] = cos c           # {HERE}:{mul_line} (inner)",
        f"          b:f32[] = mul d 2.0:f32[] # {HERE}:{mul_line} (inner)",
        "        in (b,) }",
        "    ] a",
        "  in (b,) }"])
    assert closed.jaxpr.pretty_print(source_info=True) == printed
    assert closed.pretty_print() == str(closed)


def test_one_line_jaxprs_and_options():
    closed = lc.make_jaxpr(lambda x: sin_p.bind(x))(np.float32(1.0))
    line = _line_of(test_one_line_jaxprs_and_options, "lambda x: sin_p")
    assert closed.pretty_print(source_info=True) == (
        f"{{ lambda ; a:f32[]. let b:f32[] = sin a in (b,) }} # {HERE}:{line} (<lambda>)")
    assert closed.pretty_print(print_shapes=False) == "{ lambda ; a. let b = sin a in (b,) }"
    assert closed.pretty_print(width=20) == (
        "{ lambda ; a:f32[]. let\n    b:f32[] = sin a\n  in (b,) }")


def test_graph_text_shows_dataflow_literals_and_nested_jaxprs():
    dot = lc.jaxpr_graph(lc.make_jaxpr(outer)(np.float32(1.0)))
    assert dot.startswith("digraph jaxpr {") and dot.endswith("}")
    assert 'n0 [label="in0: f32[]", shape=ellipse];' in dot
    assert '[label="jit\\nname=inner", shape=box];' in dot
    assert "subgraph cluster_" in dot and 'label="jit"; style=rounded' in dot
    assert '[label="2.0:f32[]", shape=plaintext];' in dot  # the literal operand of mul
    assert "style=dashed, lhead=cluster_" in dot
    assert dot.count("shape=doubleoctagon") == 2  # the jit body's output and the program's
    assert dot.count(" -> ") == 8  # 1 in, 1 out, 1 dashed; inside: 3 values, 1 literal, 1 out
    located = lc.jaxpr_graph(lc.make_jaxpr(inner)(np.float32(1.0)), source_info=True)
    assert f"sin\\n{HERE}:{_line_of(inner, 'sin_p')} (inner)" in located


def test_svg_needs_the_dot_program():
    closed = lc.make_jaxpr(inner)(np.float32(1.0))
    if shutil.which("dot") is None:
        with pytest.raises(RuntimeError, match="needs graphviz's `dot` program"):
            lc.jaxpr_svg(closed)
    else:
        assert "<svg" in lc.jaxpr_svg(closed)
