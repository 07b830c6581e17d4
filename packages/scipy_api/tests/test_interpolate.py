"""RegularGridInterpolator against scipy.interpolate: linear and nearest, fill
values (NaN, a number, None to extrapolate), ascending and descending grids,
trailing value dimensions, points on nodes, edges and outside, float32 and
float64; bounds_error; derivatives, vmap, jit (as a pytree); errors."""

import numpy as np
import pytest
import scipy.interpolate as si
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lamella.core as lc
from lamella.lax.test_util import check_derivatives, check_jit_matches_eager, check_vmap
from lamella.scipy.interpolate import RegularGridInterpolator

GRID = (np.float32([-1.0, 0.0, 0.5, 2.0]), np.float32([3.0, 1.0, 0.0]))  # the second descends
# XLA flushes subnormal floats to zero on CPU: absolute tolerances start at the
# smallest normal float32.
TINY = np.finfo(np.float32).tiny
VALUES = hnp.arrays(np.float32, (4, 3, 2), elements=st.floats(-100, 100, width=32))
# On nodes and edges (the grid's coordinates), inside cells, and outside.
COORDS = st.sampled_from([-1.5, -1.0, -0.3, 0.0, 0.25, 0.5, 1.9, 2.0, 2.5, 1.0, 3.0, 3.2])
POINTS = hnp.arrays(np.float32, (6, 2), elements=COORDS)


@lc.jit
def _interpolate(f, xi):
    return f(xi)


@settings(max_examples=40, deadline=None)
@given(values=VALUES, xi=POINTS, method=st.sampled_from(["linear", "nearest"]),
       fill_value=st.sampled_from([np.nan, -7.0, None]))
def test_values(values, xi, method, fill_value):
    f = RegularGridInterpolator(GRID, values, method, fill_value=fill_value)
    want = si.RegularGridInterpolator(GRID, values.astype(np.float64), method,
                                      bounds_error=False, fill_value=fill_value)(xi)
    got = _interpolate(f, xi)  # the interpolator passes through jit as a pytree
    assert np.asarray(got).dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(values).max() + TINY)


def test_sample_point_layouts():
    values = np.arange(12, dtype=np.float32).reshape(4, 3)
    f = RegularGridInterpolator(GRID, values)
    g = si.RegularGridInterpolator(GRID, values)
    rows, cols = np.float32([[0.1, 1.5]]), np.float32([[0.5], [2.5]])  # broadcast to (2, 2)
    np.testing.assert_allclose(_interpolate(f, (rows, cols)), g((rows, cols)), rtol=1e-6)
    np.testing.assert_allclose(_interpolate(f, np.float32([0.1, 1.5])), g([0.1, 1.5]), rtol=1e-6)
    line = RegularGridInterpolator((GRID[0],), values[:, 0], method="nearest")
    np.testing.assert_allclose(_interpolate(line, np.float32([0.2, 0.3])), [3.0, 6.0])
    nearest = lc.jit(lambda xi: f(xi, method="nearest"))
    np.testing.assert_allclose(nearest(np.float32([[0.1, 1.5]])),
                               g([[0.1, 1.5]], method="nearest"))


def test_integer_values_and_float64():
    f = RegularGridInterpolator(GRID, np.arange(12).reshape(4, 3))
    assert np.asarray(_interpolate(f, np.float32([[0.1, 1.5]]))).dtype == np.float32
    rng = np.random.default_rng(0)
    values, xi = rng.standard_normal((4, 3)), rng.uniform(0, 2, (5, 2))
    with lc.enable_x64():
        grid = tuple(g.astype(np.float64) for g in GRID)
        got = _interpolate(RegularGridInterpolator(grid, values), xi)
        want = si.RegularGridInterpolator(grid, values)(xi)
        np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-14)
        assert got.dtype == np.float64


def test_bounds_error():
    f = RegularGridInterpolator(GRID, np.ones((4, 3), np.float32), bounds_error=True)
    np.testing.assert_allclose(f(np.float32([[0.0, 2.0]])), [1.0])
    with pytest.raises(ValueError, match="out of bounds in dimension 1"):
        f(np.float32([[0.0, 3.5]]))
    with pytest.raises(ValueError, match="concrete sample points"):
        lc.jit(f)(np.float32([[0.0, 2.0]]))


VALUES0 = np.random.default_rng(1).standard_normal((4, 3)).astype(np.float32)
XI0 = np.float32([[0.2, 0.4], [1.1, 2.2], [-0.6, 1.7]])  # inside cells: away from kinks


def test_derivatives():
    def linear(values, xi):
        return RegularGridInterpolator(GRID, values)(xi)
    check_derivatives(lc.jit(linear), [VALUES0, XI0], diff_argnums=(0, 1))


def test_vmap_and_jit():
    f = RegularGridInterpolator(GRID, VALUES0, fill_value=None)
    check_vmap(lc.jit(lambda xi: f(xi)), [XI0])
    check_jit_matches_eager(lambda values, xi: RegularGridInterpolator(GRID, values)(xi),
                            [VALUES0, XI0], rtol=1e-6)


@pytest.mark.parametrize("call, match", [
    (lambda: RegularGridInterpolator(GRID, VALUES0, method="cubic"), "method must be"),
    (lambda: RegularGridInterpolator(GRID, VALUES0)(XI0, method="spline"), "method must be"),
    (lambda: RegularGridInterpolator((*GRID, GRID[0]), VALUES0), "3 point arrays"),
    (lambda: RegularGridInterpolator((GRID[0], GRID[0]), VALUES0), "4 points and 3 values"),
    (lambda: RegularGridInterpolator((GRID[0][:1],), VALUES0[:1]), "at least 2 points"),
    (lambda: RegularGridInterpolator((np.float32([0, 2, 1, 3]), GRID[1]), VALUES0),
     "strictly ascending or descending"),
    (lambda: RegularGridInterpolator((VALUES0, GRID[1]), VALUES0), "1-dimensional"),
    (lambda: RegularGridInterpolator(GRID, VALUES0, fill_value=1j), "fill_value"),
    (lambda: RegularGridInterpolator(GRID, VALUES0)(np.ones((2, 3))), "dimension 3"),
])
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
