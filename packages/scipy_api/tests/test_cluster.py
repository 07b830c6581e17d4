"""cluster.vq.vq against scipy.cluster.vq: 2-D and 1-D observations, ties, float32
and float64; derivatives (finite where an observation equals its code), vmap,
jit; errors."""

import numpy as np
import pytest
import scipy.cluster.vq as svq
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lamella.core as lc
from lamella.lax.test_util import check_derivatives, check_jit_matches_eager, check_vmap
from lamella.scipy.cluster.vq import vq

ELEMENTS = st.integers(-20, 20).map(lambda i: i / 4)  # coarse: ties and exact hits happen
_vq = lc.jit(vq)


@settings(max_examples=40, deadline=None)
@given(obs=hnp.arrays(np.float32, (7, 3), elements=ELEMENTS),
       code_book=hnp.arrays(np.float32, (4, 3), elements=ELEMENTS), flat=st.booleans())
def test_values(obs, code_book, flat):
    if flat:
        obs, code_book = obs[:, 0], code_book[:, 0]
    code, dist = _vq(obs, code_book)
    want_code, want_dist = svq.vq(obs, code_book)
    np.testing.assert_array_equal(code, want_code)
    np.testing.assert_allclose(dist, want_dist, rtol=1e-6, atol=1e-6)
    assert np.asarray(code).dtype == np.int32 and np.asarray(dist).dtype == np.float32


def test_float64_and_integers():
    rng = np.random.default_rng(0)
    obs, code_book = rng.standard_normal((5, 2)), rng.standard_normal((3, 2))
    with lc.enable_x64():
        code, dist = _vq(obs, code_book)
        np.testing.assert_array_equal(code, svq.vq(obs, code_book)[0])
        np.testing.assert_allclose(dist, svq.vq(obs, code_book)[1], rtol=1e-15)
    code, dist = vq(np.int32([[0, 0], [3, 5]]), np.int32([[3, 4], [0, 1]]))
    np.testing.assert_array_equal(code, [1, 0])
    np.testing.assert_allclose(dist, [1.0, 1.0])


OBS = np.float32([[0.3, 1.2], [2.0, -1.0], [1.0, 1.0]])
CODES = np.float32([[0.0, 1.0], [2.0, -1.0]])  # the second observation is a code


def test_derivatives():
    check_derivatives(lc.jit(lambda o, c: vq(o, c)[1]), [OBS, CODES], diff_argnums=(0, 1))
    grads = lc.grad(lambda o: vq(o, CODES)[1].sum())(OBS)
    assert np.all(np.isfinite(grads)) and np.all(np.asarray(grads)[1] == 0)


def test_vmap_and_jit():
    check_vmap(lc.jit(lambda o, c: vq(o, c)[1]), [OBS, CODES])
    check_jit_matches_eager(vq, [OBS, CODES])


@pytest.mark.parametrize("obs, code_book, match", [
    (OBS, CODES[:, 0], "same rank"),
    (OBS[None], CODES[None], "1- or 2-dimensional"),
    (OBS, np.ones((2, 3), np.float32), "features"),
    (OBS, np.ones((0, 2), np.float32), "at least one code"),
])
def test_errors(obs, code_book, match):
    with pytest.raises(ValueError, match=match):
        vq(obs, code_book)
