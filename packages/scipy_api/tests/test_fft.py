"""dct, idct, dctn and idctn against scipy.fft: types 1-4, every norm, resizing
with n/s, axes, complex and integer inputs, float32 and float64; derivatives,
vmap, jit; errors."""

import numpy as np
import pytest
import scipy.fft as sf
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import lamella.core as lc
from lamella.lax.test_util import check_derivatives, check_jit_matches_eager, check_vmap
from lamella.scipy import fft as lf

NORMS = [None, "backward", "ortho", "forward"]
DATA = hnp.arrays(np.float32, (3, 6), elements=st.floats(-1e3, 1e3, width=32))
# One compile per function, shape and static arguments.
JIT = {name: lc.jit(getattr(lf, name), static_argnums=(1, 2, 3, 4))
       for name in ("dct", "idct", "dctn", "idctn")}


def _close(got, want, x, dtype, eps):
    got = np.asarray(got)
    assert got.dtype == dtype, (got.dtype, dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    # Each output is a sum over the input: errors scale with the input's size.
    np.testing.assert_allclose(got, want, rtol=0, atol=eps * (np.abs(x).sum() + 1e-30))


@settings(max_examples=40, deadline=None)
@given(x=DATA, name=st.sampled_from(["dct", "idct"]), type=st.sampled_from([1, 2, 3, 4]),
       n=st.sampled_from([None, 2, 9]), axis=st.sampled_from([0, -1]),
       norm=st.sampled_from(NORMS))
def test_dct_and_idct(x, name, type, n, axis, norm):
    want = getattr(sf, name)(x.astype(np.float64), type, n, axis, norm)
    _close(JIT[name](x, type, n, axis, norm), want, x, np.float32, 2e-6)


@settings(max_examples=25, deadline=None)
@given(x=hnp.arrays(np.float32, (2, 3, 4), elements=st.floats(-1e3, 1e3, width=32)),
       name=st.sampled_from(["dctn", "idctn"]), type=st.sampled_from([1, 2, 3, 4]),
       s_axes=st.sampled_from([(None, None), ((5, 2), None), (None, (0, 2)), ((3, 6), (2, 0)),
                               ((4,), (-1,))]),
       norm=st.sampled_from(NORMS))
def test_dctn_and_idctn(x, name, type, s_axes, norm):
    s, axes = s_axes
    want = getattr(sf, name)(x.astype(np.float64), type, s, axes, norm)
    _close(JIT[name](x, type, s, axes, norm), want, x, np.float32, 4e-6)


@pytest.mark.parametrize("type", [1, 2, 3, 4])
@pytest.mark.parametrize("norm", NORMS)
def test_round_trip(type, norm):
    x = np.random.default_rng(type).standard_normal((4, 5)).astype(np.float32)
    y = JIT["idctn"](JIT["dctn"](x, type, None, None, norm), type, None, None, norm)
    np.testing.assert_allclose(y, x, atol=1e-5)


def test_dtypes_and_float64():
    x = np.arange(6, dtype=np.int32)
    _close(lf.dct(x, 3), sf.dct(x.astype(np.float64), 3), x, np.float32, 2e-6)
    z = (np.random.default_rng(0).standard_normal((3, 5)) * (1 - 2j))
    with lc.enable_x64():
        for type in (1, 2, 3, 4):
            _close(JIT["dctn"](z, type, None, None, "ortho"), sf.dctn(z, type, norm="ortho"),
                   z, np.complex128, 1e-15)
            _close(JIT["idct"](z.real, type, None, 0, "forward"),
                   sf.idct(z.real, type, axis=0, norm="forward"), z.real, np.float64, 1e-15)
    _close(lf.idct(z.astype(np.complex64), 2), sf.idct(z, 2), z, np.complex64, 2e-6)


X = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)


@pytest.mark.parametrize("type", [1, 2, 3, 4])
def test_derivatives(type):
    check_derivatives(lc.jit(lambda x: lf.dct(x, type, norm="ortho")), [X])
    check_derivatives(lc.jit(lambda x: lf.idctn(x, type, s=(4, 6))), [X])


def test_vmap_and_jit():
    check_vmap(lc.jit(lambda x: lf.dctn(x, 4, axes=(0,), norm="forward")), [X])
    check_vmap(lc.jit(lambda x: lf.idct(x, 1, n=4)), [X])
    check_jit_matches_eager(lambda x: lf.dct(x, 2, norm="ortho"), [X], rtol=1e-5)


@pytest.mark.parametrize("call, error, match", [
    (lambda: lf.dct(X, type=5), ValueError, "type must be"),
    (lambda: lf.idctn(X, norm="unitary"), ValueError, "norm must be"),
    (lambda: lf.dct(X, n=0), ValueError, "positive"),
    (lambda: lf.dct(X[:, :1], type=1), ValueError, "at least 2 points"),
    (lambda: lf.dct(np.float32(1)), ValueError, "1-dimensional"),
    (lambda: lf.dct(X, axis=2), ValueError, "out of bounds"),
    (lambda: lf.dctn(X, axes=(0, 0)), ValueError, "unique"),
    (lambda: lf.dctn(X, s=(2, 3, 4)), ValueError, "at most"),
    (lambda: lf.dctn(X, s=(2, 3), axes=(0,)), ValueError, "same length"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
