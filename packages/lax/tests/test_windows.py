"""reduce_window (sum, max, min, general computations) against NumPy sliding
windows, and select_and_scatter_add / select_and_gather_add (the max-pool
gradient and its transpose), through lamella.lax.test_util: values, jit,
derivatives (first and second order), vmap; plus the error messages."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import sliding_window_view

import lamella.core as lc
import lamella.lax as lax
from lamella.lax import windows as W
from lamella.lax.convolution import padtype_to_pads
from lamella.lax.logical import ge_p, le_p
from lamella.lax.test_util import check, check_derivatives, check_values

RNG = np.random.default_rng(0)


def window_reference(x, init, reducer, window, strides, padding, base_dilation=None,
                     window_dilation=None):
    """The definition: dilate and pad with `init`, slide the dilated window, reduce."""
    n = x.ndim
    base_dilation = base_dilation or (1,) * n
    window_dilation = window_dilation or (1,) * n
    if isinstance(padding, str):
        padding = padtype_to_pads(x.shape, window, strides, padding)
    shape = tuple((s - 1) * d + 1 if s else 0 for s, d in zip(x.shape, base_dilation))
    full = np.full(shape, init, x.dtype)
    full[tuple(slice(None, None, d) for d in base_dilation)] = x
    for axis, (lo, hi) in enumerate(padding):
        widths = [(0, 0)] * n
        widths[axis] = (max(lo, 0), max(hi, 0))
        full = np.pad(full, widths, constant_values=init)
        full = np.take(full, np.arange(max(-lo, 0), full.shape[axis] - max(-hi, 0)), axis=axis)
    span = [(w - 1) * d + 1 for w, d in zip(window, window_dilation)]
    views = sliding_window_view(full, span)
    views = views[tuple(slice(None, None, s) for s in strides)
                  + tuple(slice(None, None, d) for d in window_dilation)]
    return reducer.reduce(views, axis=tuple(range(n, 2 * n))).astype(x.dtype)


def _distinct(shape, dtype=np.float32):
    # A permutation, so windows have no ties and max/min derivatives are defined.
    return (RNG.permutation(int(np.prod(shape))).reshape(shape) * 0.5 - 3).astype(dtype)


# (operand shape, window_dimensions, window_strides, padding, base_dilation, window_dilation)
WINDOWS = [
    ((4, 5), (2, 2), (1, 1), "VALID", None, None),
    ((5, 4), (3, 2), (2, 1), "SAME", None, None),
    ((2, 5, 3), (1, 3, 2), (1, 2, 2), ((0, 0), (1, 2), (0, -1)), None, None),
    ((6,), (2,), (3,), "SAME_LOWER", None, None),
]
DILATED = [
    ((3, 4), (2, 2), (1, 2), ((1, 0), (0, 1)), (2, 1), (1, 2)),
    ((5,), (2,), (1,), "VALID", None, (3,)),
]
MONOIDS = [(lax.add, 0.0, np.add), (lax.max, -np.inf, np.maximum),
           (lax.min, np.inf, np.minimum)]


@pytest.mark.parametrize("computation,init,reducer", MONOIDS,
                         ids=["sum", "max", "min"])
@pytest.mark.parametrize("shape,window,strides,padding,base,wdil", WINDOWS)
def test_monoid_windows(computation, init, reducer, shape, window, strides, padding, base,
                        wdil):
    def fun(x):
        return W.reduce_window(x, init, computation, window, strides, padding, base, wdil)

    check(fun, [_distinct(shape)],
          lambda x: window_reference(x, init, reducer, window, strides, padding, base, wdil))


@pytest.mark.parametrize("shape,window,strides,padding,base,wdil", DILATED)
def test_dilated_windows(shape, window, strides, padding, base, wdil):
    x = _distinct(shape)
    total = lambda x: W.reduce_window(x, 0.0, lax.add, window, strides, padding, base, wdil)
    check(total, [x], lambda x: window_reference(x, 0.0, np.add, window, strides, padding,
                                                 base, wdil))
    biggest = lambda x: W.reduce_window(x, -np.inf, lax.max, window, strides, padding, base,
                                        wdil)
    check_values(biggest, [x], lambda x: window_reference(x, -np.inf, np.maximum, window,
                                                          strides, padding, base, wdil))
    # Forward mode works with dilation: compare with central differences.
    t = RNG.standard_normal(shape).astype(np.float32)
    _, tangent = lc.jvp(biggest, (x,), (t,))
    numerical = (np.asarray(biggest(x + 1e-2 * t)) - np.asarray(biggest(x - 1e-2 * t))) / 2e-2
    np.testing.assert_allclose(tangent, numerical, rtol=1e-3, atol=1e-3)
    # Reverse mode needs XLA's SelectAndScatter, which has no dilation.
    with pytest.raises(NotImplementedError, match="base_dilation or window_dilation"):
        lc.grad(lambda x: lax.reduce_sum(biggest(x), tuple(range(x.ndim))))(x)


def test_integer_windows():
    x = RNG.integers(-9, 9, (4, 5)).astype(np.int32)
    for computation, init, reducer in [(lax.add, 0, np.add),
                                       (lax.max, np.iinfo(np.int32).min, np.maximum),
                                       (lax.min, np.iinfo(np.int32).max, np.minimum)]:
        out = W.reduce_window(x, init, computation, (2, 3), (1, 2), "SAME")
        np.testing.assert_array_equal(
            out, window_reference(x, init, reducer, (2, 3), (1, 2), "SAME"))


def test_general_computation():
    x = _distinct((4, 5))
    # A product (not a monoid with its own primitive) and a non-identity init.
    check(lambda x: W.reduce_window(x, 1.0, lax.mul, (2, 2), (1, 2), "SAME"), [x * 0.1],
          lambda x: window_reference(x, 1.0, np.multiply, (2, 2), (1, 2), "SAME"),
          diff_argnums=None)
    check(lambda x: W.reduce_window(x, 2.0, lax.add, (2, 1), (1, 1), "VALID"), [x],
          lambda x: window_reference(x, 0.0, np.add, (2, 1), (1, 1), "VALID") + 2,
          diff_argnums=None)
    with pytest.raises(NotImplementedError, match="general computation"):
        lc.grad(lambda x: lax.reduce_sum(
            W.reduce_window(x, 1.0, lax.mul, (2, 2), (1, 1), "VALID"), (0, 1)))(x)


def test_variadic_argmax_window():
    x = _distinct((3, 6))
    idx = np.arange(18, dtype=np.int32).reshape(3, 6)

    def best(a, b):
        take = lax.ge(a[0], b[0])
        return lax.select(take, a[0], b[0]), lax.select(take, a[1], b[1])

    def fun(x, idx):
        return W.reduce_window((x, idx), (-np.inf, np.int32(-1)), best, (2, 3), (1, 3),
                               "VALID")

    def reference(x, idx):
        views = sliding_window_view(x, (2, 3))[:, ::3].reshape(2, 2, 6)
        where = views.argmax(-1)
        ids = sliding_window_view(idx, (2, 3))[:, ::3].reshape(2, 2, 6)
        return views.max(-1), np.take_along_axis(ids, where[..., None], -1)[..., 0]

    check(fun, [x, idx], reference, diff_argnums=None)


@settings(max_examples=10, deadline=None)
@given(size=st.integers(1, 7), window=st.integers(1, 3), stride=st.integers(1, 3),
       lo=st.integers(-1, 2), hi=st.integers(0, 2), base=st.integers(1, 2),
       wdil=st.integers(1, 2), which=st.sampled_from(MONOIDS))
def test_windows_hypothesis(size, window, stride, lo, hi, base, wdil, which):
    computation, init, reducer = which
    if (size - 1) * base + 1 + lo + hi < (window - 1) * wdil + 1:
        return  # no full window: the reference's sliding view can't express that
    x = _distinct((2, size))
    args = ((1, window), (1, stride), ((0, 0), (lo, hi)), (1, base), (1, wdil))
    check_values(lambda x: W.reduce_window(x, init, computation, *args), [x],
                 lambda x: window_reference(x, init, reducer, *args))


def _scatter_reference(source, x, select, window, strides, padding):
    padding = padtype_to_pads(x.shape, window, strides, padding) \
        if isinstance(padding, str) else padding
    out = np.zeros(x.shape, source.dtype)
    for index in np.ndindex(*source.shape):
        best = None
        for offset in np.ndindex(*window):
            pos = tuple(i * s + o - lo for i, s, o, (lo, _)
                        in zip(index, strides, offset, padding))
            if all(0 <= p < n for p, n in zip(pos, x.shape)) and (
                    best is None or select(x[pos], x[best]) and x[pos] != x[best]):
                best = pos
        if best is not None:
            out[best] += source[index]
    return out


@pytest.mark.parametrize("select_prim,select", [(ge_p, np.greater_equal),
                                                (le_p, np.less_equal)], ids=["ge", "le"])
@pytest.mark.parametrize("shape,window,strides,padding", [
    ((4, 5), (2, 2), (1, 1), "VALID"),
    ((5, 4), (3, 2), (2, 1), "SAME"),
    ((6,), (3,), (2,), ((1, 1),)),
])
def test_select_and_scatter_add(select_prim, select, shape, window, strides, padding):
    x = _distinct(shape)
    out_shape = np.shape(window_reference(x, 0.0, np.add, window, strides, padding))
    source = RNG.standard_normal(out_shape).astype(np.float32)

    def fun(source, x):
        return W.select_and_scatter_add(source, x, select_prim, window, strides, padding)

    # Linear in `source`: its transpose (select_and_gather_add) is checked by the VJP.
    check(fun, [source, x],
          lambda s, x: _scatter_reference(s, x, select, window, strides, padding))


def test_select_and_gather_add():
    x = _distinct((5, 4))
    t = RNG.standard_normal((5, 4)).astype(np.float32)

    def fun(t, x):
        return W.select_and_gather_add(t, x, ge_p, (2, 2), (2, 1), "SAME")

    def reference(t, x):
        pads = padtype_to_pads(x.shape, (2, 2), (2, 1), "SAME")
        big = window_reference(x, -np.inf, np.maximum, (2, 2), (2, 1), pads)
        padded_x = np.pad(x, pads, constant_values=-np.inf)
        padded_t = np.pad(t, pads)
        vx = sliding_window_view(padded_x, (2, 2))[::2].reshape(*big.shape, 4)
        vt = sliding_window_view(padded_t, (2, 2))[::2].reshape(*big.shape, 4)
        return np.take_along_axis(vt, vx.argmax(-1)[..., None], -1)[..., 0]

    check(fun, [t, x], reference)


def test_max_pool_gradients():
    x = _distinct((2, 5, 6))

    def pool(x):
        return W.reduce_window(x, -np.inf, lax.max, (1, 2, 3), (1, 2, 2), "SAME")

    def loss(x):
        y = pool(x)
        return lax.reduce_sum(lax.mul(y, y), (0, 1, 2))

    # First order against central differences, second order through the
    # transposes of select_and_scatter_add and select_and_gather_add.
    check_derivatives(pool, [x])
    check_derivatives(lc.grad(loss), [x])
    with lc.enable_x64():
        x64 = x.astype(np.float64)
        grad = np.asarray(lc.grad(loss)(x64))
        assert grad.shape == x.shape
        pooled = np.asarray(pool(x64))
        # The gradient of sum(y**2) sends 2y to each window's maximum (windows overlap).
        np.testing.assert_allclose(grad, _scatter_reference(2 * pooled, x64, np.greater_equal,
                                                            (1, 2, 3), (1, 2, 2), "SAME"))


@pytest.mark.parametrize("call,match", [
    (lambda: W.reduce_window(np.ones((3, 3), np.float32), 0.0, lax.add, (2,), (1, 1),
                             "VALID"),
     r"window_dimensions \(2,\) must have one entry per operand axis"),
    (lambda: W.reduce_window(np.ones((3, 3), np.float32), 0.0, lax.add, (2, 2), (0, 1),
                             "VALID"),
     r"window_strides \(0, 1\) must be positive"),
    (lambda: W.reduce_window(np.ones((3,), np.float32), 0.0, lax.add, (2,), (1,), "FULL"),
     "Unknown padding 'FULL'"),
    (lambda: W.select_and_scatter_add(np.ones((3,), np.float32), np.ones((4,), np.float32),
                                      ge_p, (2,), (2,), "VALID"),
     r"source of shape \(3,\) must have one entry per window, shape \(2,\)"),
    (lambda: W.select_and_scatter_add(np.ones((2,), np.float32), np.ones((4,), np.float32),
                                      lax.add_p, (2,), (2,), "VALID"),
     "select_prim must be lax.ge_p"),
])
def test_errors(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()
