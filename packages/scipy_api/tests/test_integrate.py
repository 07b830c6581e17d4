"""integrate.trapezoid against scipy.integrate.trapezoid: spacing by dx, by 1-D and
N-d sample points, along each axis, float32 and float64; derivatives, vmap, jit."""

import numpy as np
import pytest
import scipy.integrate as si
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lamella.core as lc
from lamella.lax.test_util import check_derivatives, check_jit_matches_eager, check_vmap
from lamella.scipy.integrate import trapezoid

# XLA flushes subnormal floats to zero on CPU: absolute tolerances start at the
# smallest normal float32.
TINY = np.finfo(np.float32).tiny
Y = hnp.arrays(np.float32, (3, 5), elements=st.floats(-1e3, 1e3, width=32))
_trapezoid = lc.jit(trapezoid, static_argnums=(3,))


@settings(max_examples=25, deadline=None)
@given(y=Y, spacing=st.sampled_from(["dx", "x1d", "xnd"]), axis=st.sampled_from([0, -1]),
       dx=st.sampled_from([1.0, 0.25]))
def test_values(y, spacing, axis, dx):
    x = None
    if spacing == "x1d":
        x = np.cumsum(np.arange(1, y.shape[axis] + 1, dtype=np.float32) / 3)
    elif spacing == "xnd":
        x = np.cumsum(np.full(y.shape, 0.5, np.float32), axis=axis)
    got = _trapezoid(y, x, dx, axis)
    want = si.trapezoid(y.astype(np.float64), x, dx, axis)
    scale = np.abs(y).sum() * (dx if x is None else np.abs(x).max())
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * scale + TINY)
    assert np.asarray(got).dtype == np.float32


def test_float64():
    y, x = np.random.default_rng(0).standard_normal((2, 4)), np.float64([0, 0.5, 2, 3])
    with lc.enable_x64():
        np.testing.assert_allclose(_trapezoid(y, x, 1.0, -1), si.trapezoid(y, x), rtol=1e-14)


@pytest.mark.parametrize("with_x", [False, True])
def test_derivatives_vmap_and_jit(with_x):
    y = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    args = [y, np.float32([0, 1, 1.5, 3, 4])] if with_x else [y]
    fun = (lambda y, x: trapezoid(y, x)) if with_x else (lambda y: trapezoid(y, dx=0.5, axis=0))
    check_derivatives(lc.jit(fun), args, diff_argnums=tuple(range(len(args))))
    check_vmap(lc.jit(fun), args)
    check_jit_matches_eager(fun, args, rtol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="rank"):
        trapezoid(np.ones(3, np.float32), np.ones((2, 3), np.float32))
