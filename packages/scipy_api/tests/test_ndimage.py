"""map_coordinates against scipy.ndimage: orders 0 and 1, every boundary mode
(JAX's names and SciPy's grid-* names), float, integer and float64 inputs,
coordinates inside and far outside; derivatives, vmap, jit; errors."""

import numpy as np
import pytest
import scipy.ndimage as nd
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lamella.core as lc
from lamella.lax.test_util import check_derivatives, check_jit_matches_eager, check_vmap
from lamella.scipy.ndimage import map_coordinates

# JAX's modes and the SciPy modes that mean the same.
MODES = {"constant": "grid-constant", "nearest": "nearest", "wrap": "grid-wrap",
         "mirror": "mirror", "reflect": "reflect", "grid-constant": "grid-constant",
         "grid-wrap": "grid-wrap", "grid-mirror": "grid-mirror"}
# XLA flushes subnormal floats to zero on CPU: absolute tolerances start at the
# smallest normal float32.
TINY = np.finfo(np.float32).tiny
IMAGE = hnp.arrays(np.float32, (4, 5), elements=st.floats(-100, 100, width=32))
# Quarter steps hit grid points, cell middles and halves exactly.
COORDS = hnp.arrays(np.float32, (2, 9), elements=st.integers(-40, 48).map(lambda i: i / 4))
_map = lc.jit(map_coordinates, static_argnums=(2, 3))


def _reference(image, coords, order, mode, cval):
    if order == 0:
        # JAX rounds halves away from zero; SciPy rounds them up.
        coords = np.where(coords % 1 == 0.5, coords + np.sign(coords) * 0.25, coords)
    return nd.map_coordinates(image.astype(np.float64), coords.astype(np.float64), order=order,
                              mode=MODES[mode], cval=cval, prefilter=False)


@settings(max_examples=40, deadline=None)
@given(image=IMAGE, coords=COORDS, order=st.sampled_from([0, 1]),
       mode=st.sampled_from(sorted(MODES)), cval=st.sampled_from([0.0, -2.5]))
def test_values(image, coords, order, mode, cval):
    got = _map(image, list(coords), order, mode, cval)
    want = _reference(image, coords, order, mode, cval)
    assert np.asarray(got).dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5 * np.abs(image).max() + TINY)


@pytest.mark.parametrize("order", [0, 1])
def test_integers_round_half_away_from_zero(order):
    image = np.int32([[0, 3, -5], [7, -2, 1]])
    coords = np.float32([[0.5, 0.25, 1.0, 0.7], [0.5, 1.5, 1.25, 2.6]])
    got = map_coordinates(image, coords, order, "nearest")
    want = _reference(image, coords, order, "nearest", 0.0)
    np.testing.assert_array_equal(got, np.sign(want) * np.floor(np.abs(want) + 0.5))
    assert np.asarray(got).dtype == np.int32


def test_float64_and_shapes():
    rng = np.random.default_rng(0)
    image = rng.standard_normal((3, 4, 2))
    coords = rng.uniform(-2, 5, (3, 2, 5))
    with lc.enable_x64():
        got = _map(image, list(coords), 1, "mirror", 0.0)
        np.testing.assert_allclose(got, _reference(image, coords, 1, "mirror", 0.0), atol=1e-14)
        assert got.shape == (2, 5) and got.dtype == np.float64
    # One sample along an axis: every mode keeps to it.
    got = map_coordinates(np.float32([[2.0, 4.0]]), [np.float32([-1.3, 0.2]),
                                                    np.float32([0.5, 0.5])], 1, "mirror")
    np.testing.assert_allclose(got, [3.0, 3.0])


IMAGE0 = np.random.default_rng(1).standard_normal((4, 5)).astype(np.float32)
# Away from the kinks at integer coordinates.
COORDS0 = [np.float32([0.3, 2.6, -1.4, 4.2]), np.float32([1.7, 3.1, 0.6, 5.5])]


@pytest.mark.parametrize("mode", ["constant", "reflect"])
def test_derivatives(mode):
    check_derivatives(lc.jit(lambda im, r, c: map_coordinates(im, [r, c], 1, mode, cval=1.0)),
                      [IMAGE0, *COORDS0], diff_argnums=(0, 1, 2))


def test_vmap_and_jit():
    check_vmap(lc.jit(lambda im, r: map_coordinates(im, [r, COORDS0[1]], 1, "wrap")),
               [IMAGE0, COORDS0[0]])
    check_jit_matches_eager(lambda im: map_coordinates(im, COORDS0, 0, "nearest"), [IMAGE0])


@pytest.mark.parametrize("call, error, match", [
    (lambda: map_coordinates(IMAGE0, COORDS0[:1], 1), ValueError, "input.ndim"),
    (lambda: map_coordinates(IMAGE0, COORDS0, 1, mode="periodic"), ValueError,
     "mode must be one of"),
    (lambda: map_coordinates(IMAGE0, COORDS0, 3), NotImplementedError, "order 0"),
    (lambda: map_coordinates(np.float32(1), [], 1), ValueError, "1-dimensional"),
    (lambda: map_coordinates(np.zeros((0, 2)), COORDS0, 1), ValueError, "empty"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
