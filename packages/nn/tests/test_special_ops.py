"""lamella.ops.special (logsumexp, softmax, log_softmax) against float64 SciPy/NumPy
on hypothesis inputs with ±inf, NaN and huge values; masks, signs, complex inputs,
dtypes, both softmax derivative rules, gradients, vmap and jit."""

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from nn_testing import arrays32, check, check_derivatives

import lamella.core as lc
import lamella.numpy as lnp
from lamella.ops.special import log_softmax, logsumexp, softmax

SHAPE = (3, 4)
AXES = [None, 0, 1, -1, (0, 1)]
MASKS = {None: None, "full": SHAPE, "row": SHAPE[1:]}
SETTINGS = settings(max_examples=40, deadline=None)


def _close(got, want, dtype=np.float32, tol=2e-6):
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


# --- logsumexp ------------------------------------------------------------------------
def ref_logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    a = np.asarray(a, np.float64 if np.asarray(a).dtype.kind != "c" else np.complex128)
    if where is not None:
        a = np.where(where, a, -np.inf)
    if b is not None:
        a, b = np.broadcast_arrays(a, np.asarray(b, np.float64))
        a = np.where(b != 0, a, -np.inf)
    with np.errstate(all="ignore"):
        return scipy.special.logsumexp(a, axis, b, keepdims, return_sign)


bool_masks = st.sampled_from(list(MASKS)).flatmap(
    lambda kind: st.just(None) if kind is None else hnp.arrays(bool, MASKS[kind]))
positive_b = hnp.arrays(np.float32, SHAPE, elements=st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5])
                        | st.floats(0.125, 4.0, width=32))


# Compiled whole (logsumexp itself runs op by op): one compile per combination of options.
jitted_logsumexp = lc.jit(logsumexp, static_argnames=("axis", "keepdims"))


@SETTINGS
@given(a=arrays32(SHAPE), axis=st.sampled_from(AXES), keepdims=st.booleans(),
       b=st.none() | positive_b, where=bool_masks)
def test_logsumexp_matches_scipy(a, axis, keepdims, b, where):
    got = jitted_logsumexp(a, axis=axis, b=b, keepdims=keepdims, where=where)
    _close(got, ref_logsumexp(a, axis, b, keepdims, where=where))


def test_logsumexp_edge_rows_as_jax():
    inf, nan = np.inf, np.nan
    rows = np.float32([[-inf, -inf], [inf, 1.0], [inf, -inf], [nan, 1.0], [inf, inf],
                       [3e38, 3e38], [-3e38, -3e38], [88.8, 88.8]])
    _close(logsumexp(rows, axis=1),
            [-inf, inf, inf, nan, inf, 3e38, -3e38, 88.8 + np.log(2)])
    _close(logsumexp(np.float32([1.0, 2.0]), where=np.array([False, False])), -inf)
    _close(logsumexp(3.0), 3.0)
    # A zero scale removes an infinite term, as in SciPy.
    _close(logsumexp(np.float32([inf, 0.0]), b=np.float32([0.0, 1.0])), 0.0)


def test_logsumexp_signs():
    a = np.float32([[1.0, 2.0, 0.5], [0.0, 0.0, 3.0]])
    b = np.float32([[1.0, -2.0, 0.5], [1.0, 1.0, -1.0]])
    out, sign = logsumexp(a, axis=1, b=b, return_sign=True)
    want_out, want_sign = ref_logsumexp(a, 1, b, return_sign=True)
    _close(out, want_out)
    _close(sign, want_sign)
    # Without return_sign a negative sum has no real logarithm: NaN, as in JAX.
    _close(logsumexp(a, axis=1, b=b), [np.nan, np.nan])
    out, sign = logsumexp(np.float32([0.0, 0.0]), b=np.float32([1.0, -1.0]), return_sign=True)
    _close(out, -np.inf)
    _close(sign, 0.0)


def test_logsumexp_complex():
    a = np.complex64([[1 + 1j, 2.0, -0.5 - 3j], [0.3j, -1.0, 4 + 2j]])
    _close(logsumexp(a, axis=1), ref_logsumexp(a, 1), np.complex64, 1e-5)
    out, sign = logsumexp(a, axis=1, return_sign=True)
    want = np.log(np.sum(np.exp(a.astype(np.complex128)), axis=1))
    _close(out, want.real, np.float32, 1e-5)
    _close(sign, np.exp(1j * want.imag), np.complex64, 1e-5)


@pytest.mark.parametrize("data, dtype", [
    (np.int32([1, 2, 3]), np.float32), (np.array([True, False]), np.float32),
    (np.float16([1.0, 2.0]), np.float16), (lnp.asarray([1.0, 2.0], lnp.bfloat16), lnp.bfloat16),
    (2.0, np.float32),
])
def test_logsumexp_dtypes(data, dtype):
    assert logsumexp(data).dtype == np.dtype(dtype)


def test_logsumexp_x64():
    with lc.enable_x64():
        assert logsumexp(np.int32([1, 2])).dtype == np.float64
        _close(logsumexp(np.float64([1000.0, 1e-3])), np.logaddexp(1000.0, 1e-3), np.float64,
               1e-14)


X = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
B = np.random.default_rng(1).uniform(0.5, 2.0, SHAPE).astype(np.float32)
W = np.array([[True, False, True, True], [False] * 4, [True] * 4])


# The functions checked are jitted: each transformation then compiles once rather than
# once per step.
def test_logsumexp_derivatives():
    check(lc.jit(lambda a: logsumexp(a, axis=1)), [X], lambda a: ref_logsumexp(a, 1))
    check(lc.jit(lambda a, b: logsumexp(a, axis=0, b=b, keepdims=True)), [X, B],
          lambda a, b: ref_logsumexp(a, 0, b, True), diff_argnums=(0, 1))
    # A masked-out element gets no gradient.
    g = lc.grad(lambda a: logsumexp(a, where=W[0]))(X[0])
    np.testing.assert_array_equal(np.asarray(g)[~W[0]], 0.0)
    np.testing.assert_allclose(np.asarray(g)[W[0]], scipy.special.softmax(X[0][W[0]]),
                               rtol=1e-6)


def test_logsumexp_bad_input():
    with pytest.raises(TypeError, match="logsumexp.*lamella.numpy.asarray"):
        logsumexp([1.0, 2.0])
    with pytest.raises(ValueError, match="axis 2 is out of bounds"):
        logsumexp(X, axis=2)


# --- softmax and log_softmax ----------------------------------------------------------
def ref_softmax(x, axis=-1, where=None, log=False):
    x = np.asarray(x, np.float64)
    w = np.ones(x.shape, bool) if where is None else np.broadcast_to(where, x.shape)
    with np.errstate(all="ignore"):
        xm = np.where(w, x, -np.inf)
        shifted = xm - np.max(xm, axis, keepdims=True)
        e = np.exp(shifted)
        total = np.sum(e, axis, keepdims=True)
        if log:  # a log-probability below -3.4e38 is -inf in float32 (as in JAX)
            return np.where(w, shifted - np.log(total), -np.inf).astype(np.float32)
        return np.where(w, e / total, 0.0)


SOFTMAX_AXES = [-1, 0, (0, 1), None]


@SETTINGS
@given(x=arrays32(SHAPE), axis=st.sampled_from(SOFTMAX_AXES), where=bool_masks)
def test_softmax_matches_reference(x, axis, where):
    _close(softmax(x, axis, where), ref_softmax(x, axis, where))
    if where is None and axis is not None:
        with np.errstate(all="ignore"):
            _close(softmax(x, axis), scipy.special.softmax(x.astype(np.float64), axis))


@SETTINGS
@given(x=arrays32(SHAPE), axis=st.sampled_from(SOFTMAX_AXES), where=bool_masks)
def test_log_softmax_matches_reference(x, axis, where):
    _close(log_softmax(x, axis, where), ref_softmax(x, axis, where, log=True))


def test_softmax_edge_rows_as_jax():
    inf, nan = np.inf, np.nan
    _close(softmax(np.float32([inf, 1.0])), [nan, nan])
    _close(softmax(np.float32([-inf, -inf])), [nan, nan])
    _close(softmax(np.float32([1e30, -1e30])), [1.0, 0.0])
    _close(log_softmax(np.float32([-inf, 1.0])), [-inf, 0.0])
    _close(log_softmax(np.float32([1e30, 0.0])), [0.0, -1e30])
    none = np.array([False, False])
    _close(softmax(np.float32([1.0, 2.0]), where=none), [0.0, 0.0])
    _close(log_softmax(np.float32([1.0, 2.0]), where=none), [-inf, -inf])
    # `initial` bounds the maximum from below: the result is the same softmax.
    _close(softmax(np.float32([1.0, 2.0]), initial=5.0), softmax(np.float32([1.0, 2.0])))


@pytest.mark.parametrize("fn", [softmax, log_softmax], ids=["softmax", "log_softmax"])
def test_softmax_dtypes(fn):
    assert fn(np.int32([1, 2])).dtype == np.float32
    assert fn(np.float16([1, 2])).dtype == np.float16
    with lc.enable_x64():
        assert fn(np.int32([1, 2])).dtype == np.float64


@pytest.fixture(params=[False, True], ids=["stop_gradient", "custom_jvp"])
def softmax_rule(request):
    with lc.config.override("softmax_custom_jvp", request.param):
        yield request.param


def test_softmax_derivatives(softmax_rule):
    check(lc.jit(lambda x: softmax(x, axis=1)), [X], lambda x: ref_softmax(x, 1))
    check(lc.jit(lambda x: softmax(x, axis=(0, 1))), [X], lambda x: ref_softmax(x, (0, 1)),
          vmap=False)
    check(lc.jit(lambda x, w: softmax(x, axis=1, where=w)), [X, W],
          lambda x, w: ref_softmax(x, 1, w))
    # Second derivatives agree between the two rules (both are exact).
    hessian = lc.jit(lc.hessian(lambda x: softmax(x)[1]))
    hess = hessian(X[0])
    with lc.config.override("softmax_custom_jvp", not softmax_rule):
        other = hessian(X[0])
    np.testing.assert_allclose(hess, other, rtol=1e-5, atol=1e-6)


def test_softmax_rules_differ_in_their_jaxprs(softmax_rule):
    text = str(lc.make_jaxpr(softmax)(X[0]))
    assert ("custom_jvp_call" in text) == softmax_rule
    assert ("stop_gradient" in text) != softmax_rule


def test_softmax_fully_masked_rows_have_zero_gradient(softmax_rule):
    g = lc.grad(lambda x: lnp.sum(softmax(x, where=W) * X))(X)
    assert np.all(np.isfinite(np.asarray(g)))
    np.testing.assert_array_equal(np.asarray(g)[1], 0.0)


def test_log_softmax_derivatives():
    check(lc.jit(lambda x: log_softmax(x, axis=0)), [X], lambda x: ref_softmax(x, 0, log=True))
    # Masked-out outputs are -inf; finite differences need finite outputs there.
    check(lc.jit(lambda x, w: lnp.where(w, log_softmax(x, axis=-1, where=w), 0.0)),
          [X, W[[0, 2, 0]]],
          lambda x, w: np.where(w, ref_softmax(x, -1, w, log=True), 0.0))
    check_derivatives(lc.jit(lambda x: log_softmax(x, axis=None)), [X])


def test_softmax_bad_input():
    with pytest.raises(TypeError, match="softmax.*lamella.numpy.asarray"):
        softmax([1.0, 2.0])
    with pytest.raises(ValueError, match="log_softmax: axis -3 is out of bounds"):
        log_softmax(X, axis=-3)
