"""visualize_array_sharding prints the tables JAX 0.10.2 prints (recorded with its
rich-based visualize_array_sharding, use_color=False) (8 CPU devices)."""

import numpy as np
import pytest

import lamella.core as lc
from lamella.core.sharding import NamedSharding, P, make_mesh

MESH = make_mesh((4, 2), ("x", "y"))
X = np.arange(32, dtype=np.float32).reshape(8, 4)

RECORDED = {
    P("x", "y"): """\
┌───────┬───────┐
│ CPU 0 │ CPU 1 │
├───────┼───────┤
│ CPU 2 │ CPU 3 │
├───────┼───────┤
│ CPU 4 │ CPU 5 │
├───────┼───────┤
│ CPU 6 │ CPU 7 │
└───────┴───────┘""",
    P(None, "y"): """\
┌───────────┬───────────┐
│           │           │
│           │           │
│           │           │
│           │           │
│CPU 0,2,4,6│CPU 1,3,5,7│
│           │           │
│           │           │
│           │           │
│           │           │
└───────────┴───────────┘""",
    P(): """\
┌───────────────────┐
│                   │
│                   │
│                   │
│                   │
│CPU 0,1,2,3,4,5,6,7│
│                   │
│                   │
│                   │
│                   │
└───────────────────┘""",
    P(("x", "y")): """\
┌──────────┐
│  CPU 0   │
├──────────┤
│  CPU 1   │
├──────────┤
│  CPU 2   │
├──────────┤
│  CPU 3   │
├──────────┤
│  CPU 4   │
├──────────┤
│  CPU 5   │
├──────────┤
│  CPU 6   │
├──────────┤
│  CPU 7   │
└──────────┘""",
}
ONE_DIMENSION = """\
┌───────┬───────┬───────┬───────┐
│CPU 0,1│CPU 2,3│CPU 4,5│CPU 6,7│
└───────┴───────┴───────┴───────┘"""


@pytest.mark.parametrize("spec", list(RECORDED), ids=str)
def test_two_dimensional_tables_match_jax(spec, capsys):
    lc.debug.visualize_array_sharding(lc.device_put(X, NamedSharding(MESH, spec)),
                                      use_color=False)
    assert capsys.readouterr().out == RECORDED[spec] + "\n"


def test_one_dimension_and_one_device(capsys):
    lc.debug.visualize_array_sharding(
        lc.device_put(np.arange(8, dtype=np.float32), NamedSharding(MESH, P("x"))))
    lc.debug.visualize_array_sharding(lc.device_put(np.arange(8, dtype=np.float32)))
    assert capsys.readouterr().out == ONE_DIMENSION + "\n┌───────┐\n│ CPU 0 │\n└───────┘\n"


def test_more_than_two_dimensions_is_an_error():
    with pytest.raises(ValueError, match="1 and 2 dimensions"):
        lc.debug.visualize_array_sharding(lc.device_put(np.ones((8, 2, 2), np.float32),
                                                        NamedSharding(MESH, P("x"))))
