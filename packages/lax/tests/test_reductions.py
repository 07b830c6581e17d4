"""Reductions, argmax/argmin, the generic reduce and the cumulative reductions,
through lamella.lax.test_util (values, jit, derivatives, vmap) plus the edge cases
each one has: ties, NaNs, zeros, empty axes and inputs, and error messages."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
import lamella.lax as lax
from lamella.lax import reductions as R
from lamella.lax.test_util import check

RNG = np.random.default_rng(0)
X = RNG.uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
INTS = RNG.integers(-5, 6, (2, 3, 4)).astype(np.int32)
BOOLS = RNG.integers(0, 2, (2, 3, 4)).astype(bool)
AXES = [(), (1,), (0, 2), (0, 1, 2), (-1,)]


# --- reductions with a monoid ----------------------------------------------------


@pytest.mark.parametrize("axes", AXES)
@pytest.mark.parametrize("name, ref", [("reduce_sum", np.sum), ("reduce_prod", np.prod),
                                       ("reduce_max", np.max), ("reduce_min", np.min)])
def test_numeric_reductions(name, ref, axes):
    check(lambda x: getattr(R, name)(x, axes), [X], lambda x: ref(x, axis=axes))


@pytest.mark.parametrize("axes", [(), (0,), (1, 2), (0, 1, 2)])
@pytest.mark.parametrize("name, ref", [("reduce_sum", np.sum), ("reduce_prod", np.prod),
                                       ("reduce_max", np.max), ("reduce_min", np.min)])
def test_integer_reductions(name, ref, axes):
    check(lambda x: getattr(R, name)(x, axes), [INTS],
          lambda x: ref(x, axis=axes).astype(np.int32), diff_argnums=None)


@pytest.mark.parametrize("axes", [(), (0,), (1, 2), (0, 1, 2)])
@pytest.mark.parametrize("name, ref", [("reduce_and", np.logical_and),
                                       ("reduce_or", np.logical_or),
                                       ("reduce_xor", np.logical_xor)])
def test_boolean_reductions(name, ref, axes):
    check(lambda x: getattr(R, name)(x, axes), [BOOLS], lambda x: ref.reduce(x, axis=axes),
          diff_argnums=None)


@pytest.mark.parametrize("name, ref", [("reduce_and", np.bitwise_and),
                                       ("reduce_or", np.bitwise_or),
                                       ("reduce_xor", np.bitwise_xor)])
def test_bitwise_reductions_of_integers(name, ref):
    x = RNG.integers(0, 256, (3, 4)).astype(np.uint8)
    check(lambda x: getattr(R, name)(x, (0,)), [x], lambda x: ref.reduce(x, axis=0),
          diff_argnums=None)
    signed = INTS[0]
    np.testing.assert_array_equal(getattr(R, name)(signed, (1,)), ref.reduce(signed, axis=1))


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"])
def test_zero_dimensional_operands(name):
    check(lambda x: getattr(R, name)(x, ()), [np.float32(3.0)], lambda x: x)


def test_empty_operands_give_the_identity():
    empty = np.zeros((0, 3), np.float32)
    np.testing.assert_array_equal(R.reduce_sum(empty, (0,)), np.zeros(3))
    np.testing.assert_array_equal(R.reduce_prod(empty, (0,)), np.ones(3))
    np.testing.assert_array_equal(R.reduce_max(empty, (0,)), np.full(3, -np.inf))
    np.testing.assert_array_equal(R.reduce_min(empty, (0,)), np.full(3, np.inf))
    assert np.asarray(R.reduce_max(np.zeros((0,), np.int8), (0,))) == -128
    assert np.asarray(R.reduce_min(np.zeros((0,), np.uint8), (0,))) == 255
    assert np.asarray(R.reduce_and(np.zeros((0,), bool), (0,))) == np.True_
    assert np.asarray(R.reduce_and(np.zeros((0,), np.int32), (0,))) == -1
    assert np.asarray(R.reduce_or(np.zeros((0,), bool), (0,))) == np.False_
    assert R.reduce_sum(empty, (1,)).shape == (0,)
    check(lambda x: R.reduce_prod(x, (0,)), [empty], lambda x: np.prod(x, axis=0))


@pytest.mark.parametrize("x", [
    np.array([[2.0, 0.0, 3.0], [1.5, 2.0, -1.0]], np.float32),  # one zero
    np.array([[0.0, 0.0, 3.0], [0.0, 2.0, -1.0]], np.float32),  # two zeros
])
def test_reduce_prod_gradient_at_zeros(x):
    check(lambda x: R.reduce_prod(x, (0, 1)), [x], lambda x: np.prod(x))
    others = np.array([np.prod(np.delete(x.ravel(), i)) for i in range(x.size)])
    np.testing.assert_array_equal(lc.grad(lambda x: R.reduce_prod(x, (0, 1)))(x),
                                  others.reshape(x.shape))


def test_reduce_prod_second_derivatives():
    hessian = lc.hessian(lambda x: R.reduce_prod(x, (0,)))(np.array([2.0, 3.0, 5.0], np.float32))
    np.testing.assert_allclose(hessian, [[0, 5, 3], [5, 0, 2], [3, 2, 0]])


def test_reduce_max_and_min_split_the_gradient_among_ties():
    x = np.array([[1.0, 3.0, 3.0, 2.0], [4.0, 4.0, 4.0, 0.0]], np.float32)
    grad = lc.grad(lambda x: R.reduce_sum(R.reduce_max(x, (1,)), (0,)))(x)
    np.testing.assert_allclose(grad, [[0, 0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3, 0]])
    grad = lc.grad(lambda x: R.reduce_min(x, (0,)))(np.array([1.0, 2.0, 1.0], np.float32))
    np.testing.assert_allclose(grad, [0.5, 0, 0.5])


def test_reduce_max_and_min_propagate_nan():
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, 3.0]], np.float32)
    np.testing.assert_array_equal(R.reduce_max(x, (1,)), [np.nan, 3.0])
    np.testing.assert_array_equal(R.reduce_min(x, (1,)), [np.nan, 1.0])


def test_logical_reductions_have_zero_derivatives():
    _, tangent = lc.jvp(lambda x: R.reduce_or(x, (0,)), (BOOLS,),
                        (np.zeros(BOOLS.shape, lc.float0),))
    assert tangent.dtype == lc.float0


def test_reductions_keep_weak_types_and_batch_with_jit():
    f = lc.jit(lc.vmap(lambda x: R.reduce_max(x, (0, 1)), in_axes=1))
    np.testing.assert_allclose(f(X), np.max(X, axis=(0, 2)))


# --- argmax, argmin ---------------------------------------------------------------

WITH_TIES_AND_NANS = np.array([[1.0, 7.0, 7.0, 2.0],
                               [np.nan, 2.0, np.nan, 9.0],
                               [-np.inf, -np.inf, -np.inf, -np.inf]], np.float32)


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("name, ref", [("argmax", np.argmax), ("argmin", np.argmin)])
def test_argmax_argmin(name, ref, axis):
    check(lambda x: getattr(R, name)(x, axis, np.int32), [X[0]],
          lambda x: ref(x, axis=axis).astype(np.int32), diff_argnums=None)
    np.testing.assert_array_equal(getattr(R, name)(WITH_TIES_AND_NANS, axis, np.int32),
                                  ref(WITH_TIES_AND_NANS, axis=axis))


@pytest.mark.parametrize("x", [INTS[0], INTS[0].astype(np.uint16), BOOLS[0]])
@pytest.mark.parametrize("name, ref", [("argmax", np.argmax), ("argmin", np.argmin)])
def test_argmax_argmin_of_integers_and_booleans(name, ref, x):
    check(lambda x: getattr(R, name)(x, 1, np.uint8), [x],
          lambda x: ref(x, axis=1).astype(np.uint8), diff_argnums=None)


def test_argmax_index_dtype_is_canonicalized():
    assert R.argmax(X, 0, np.int64).dtype == np.int32
    with lc.enable_x64():
        assert R.argmax(X, 0, np.int64).dtype == np.int64


def test_argmax_has_zero_derivative():
    _, tangent = lc.jvp(lambda x: R.argmax(x, 1, np.int32), (X[0],), (np.ones_like(X[0]),))
    assert tangent.dtype == lc.float0 and tangent.shape == (3,)
    grad = lc.grad(lambda x: R.reduce_sum(lax.mul(
        x, lax.convert_element_type(R.argmax(x, 0, np.int32), np.float32)), (0,)))(X[0, 0])
    np.testing.assert_array_equal(grad, np.full(4, np.argmax(X[0, 0]), np.float32))


# --- reduce: a user's computation ------------------------------------------------


def _logaddexp(a, b):
    m = lax.max(a, b)
    return lax.add(m, lax.log(lax.add(lax.exp(lax.sub(a, m)), lax.exp(lax.sub(b, m)))))


def _first_max(a, b):
    """(value, index) of the larger value, the smaller index on ties: argmax as a monoid."""
    (va, ia), (vb, ib) = a, b
    pick_a = lax.bitwise_or(lax.gt(va, vb), lax.bitwise_and(lax.eq(va, vb), lax.lt(ia, ib)))
    return lax.select(pick_a, va, vb), lax.select(pick_a, ia, ib)


@pytest.mark.parametrize("dims", [(0,), (1, 2), (0, 1, 2), ()])
def test_reduce_with_a_user_computation(dims):
    reduced = lambda x: R.reduce(x, -np.inf, _logaddexp, dims)
    check(reduced, [X], lambda x: np.log(np.sum(np.exp(x), axis=dims)), grad_rtol=1e-5)
    assert "reduce[" in str(lc.make_jaxpr(reduced)(X))


def test_reduce_with_two_operands():
    index = np.arange(X.size, dtype=np.int32).reshape(X.shape)
    values = X.copy()
    values[0, 2, 0] = values[0, 1, 1] = values.max() + 1  # a tie: the first index wins
    reduced = lambda x, i: R.reduce((x, i), (-np.inf, np.int32(2**31 - 1)), _first_max, (1, 2))
    check(reduced, [values, index], lambda x, i: (
        np.max(x, axis=(1, 2)),
        np.take_along_axis(i.reshape(2, -1), np.argmax(x.reshape(2, -1), axis=1)[:, None],
                           1)[:, 0]), diff_argnums=None)
    check(lambda x: reduced(x, index)[0], [X], lambda x: np.max(x, axis=(1, 2)))
    assert np.asarray(reduced(values, index)[1])[0] == index[0, 1, 1]


def test_reduce_of_pytrees_and_traced_init_values():
    x = {"a": X, "b": INTS}
    add_both = lambda p, q: {"a": lax.add(p["a"], q["a"]), "b": lax.add(p["b"], q["b"])}
    out = R.reduce(x, {"a": 0.0, "b": 0}, add_both, (2,))
    np.testing.assert_allclose(out["a"], X.sum(2), rtol=1e-6)
    np.testing.assert_array_equal(out["b"], INTS.sum(2))
    jitted = lc.jit(lambda x, init: R.reduce(x, init, lax.max, (0, 2)))
    np.testing.assert_array_equal(jitted(X, np.float32(-np.inf)), X.max((0, 2)))
    assert "reduce[" in str(lc.make_jaxpr(lambda x, init: R.reduce(x, init, lax.max, (0,)))(
        X, np.float32(0)))


@pytest.mark.parametrize("computation, init, prim", [
    (lax.add, 0.0, "reduce_sum"), (lax.mul, 1.0, "reduce_prod"),
    (lax.max, -np.inf, "reduce_max"), (lambda a, b: lax.min(b, a), np.inf, "reduce_min"),
])
def test_reduce_recognises_monoids(computation, init, prim):
    jaxpr = str(lc.make_jaxpr(lambda x: R.reduce(x, init, computation, (1,)))(X))
    assert f"{prim}[" in jaxpr and "reduce[" not in jaxpr
    not_identity = str(lc.make_jaxpr(lambda x: R.reduce(x, 5.0, computation, (1,)))(X))
    assert "reduce[" in not_identity


@pytest.mark.parametrize("computation, init, prim", [
    (lax.bitwise_and, True, "reduce_and"), (lax.bitwise_or, False, "reduce_or"),
    (lax.bitwise_xor, False, "reduce_xor"), (lax.bitwise_and, -1, "reduce_and"),
])
def test_reduce_recognises_logical_monoids(computation, init, prim):
    x = BOOLS if isinstance(init, bool) else INTS
    assert f"{prim}[" in str(lc.make_jaxpr(lambda x: R.reduce(x, init, computation, (0,)))(x))


def test_reduce_of_zero_dimensional_and_empty_operands():
    np.testing.assert_allclose(R.reduce(np.float32(2.0), -np.inf, _logaddexp, ()), 2.0)
    empty = np.zeros((0, 2), np.float32)
    np.testing.assert_array_equal(R.reduce(empty, -np.inf, _logaddexp, (0,)), [-np.inf] * 2)
    np.testing.assert_array_equal(
        lc.grad(lambda x: R.reduce_sum(R.reduce(x, -np.inf, _logaddexp, (0,)), (0,)))(empty),
        empty)


def test_reduce_second_derivatives():
    f = lambda x: R.reduce(x, -np.inf, _logaddexp, (0,))
    x = np.array([0.5, -1.0, 2.0], np.float32)
    softmax = np.exp(x) / np.exp(x).sum()
    np.testing.assert_allclose(lc.hessian(f)(x), np.diag(softmax) - np.outer(softmax, softmax),
                               rtol=1e-5, atol=1e-6)


def test_vmap_of_reduce_gradients():
    grads = lc.vmap(lc.grad(lambda x: R.reduce(x, -np.inf, _logaddexp, (0,))))(X[0])
    softmax = np.exp(X[0]) / np.exp(X[0]).sum(1, keepdims=True)
    np.testing.assert_allclose(grads, softmax, rtol=1e-5)


# --- cumulative reductions ------------------------------------------------------------

CUMULATIVE = [("cumsum", np.cumsum), ("cumprod", np.cumprod),
              ("cummax", np.maximum.accumulate), ("cummin", np.minimum.accumulate),
              ("cumlogsumexp", np.logaddexp.accumulate)]


def _reference(ref, axis, reverse):
    if reverse:
        return lambda x: np.flip(ref(np.flip(x, axis), axis=axis), axis)
    return lambda x: ref(x, axis=axis)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name, ref", CUMULATIVE)
def test_cumulative(name, ref, reverse):
    check(lambda x: getattr(R, name)(x, 1, reverse), [X], _reference(ref, 1, reverse))


@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("name, ref", CUMULATIVE[:3])
def test_cumulative_other_axes(name, ref, axis):
    check(lambda x: getattr(R, name)(x, axis, True), [X[0]], _reference(ref, axis % 2, True))


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("name, ref", CUMULATIVE[:4])
def test_cumulative_integers(name, ref, reverse):
    check(lambda x: getattr(R, name)(x, 0, reverse), [INTS[0]],
          lambda x: _reference(ref, 0, reverse)(x).astype(np.int32), diff_argnums=None)


def test_cumulative_of_empty_and_long_arrays():
    for name, _ in CUMULATIVE:
        assert getattr(R, name)(np.zeros((0, 3), np.float32), 0).shape == (0, 3)
        assert getattr(R, name)(np.zeros((2, 0), np.float32), 0).shape == (2, 0)
    long = RNG.uniform(-1, 1, 100_000).astype(np.float32)
    np.testing.assert_allclose(lc.jit(R.cumsum)(long), np.cumsum(long.astype(np.float64)),
                               atol=1e-3)
    np.testing.assert_array_equal(R.cummax(long, reverse=True),
                                  np.flip(np.maximum.accumulate(np.flip(long))))


def test_cumprod_gradient_at_zeros():
    x = np.array([[3.0, 0.0, 4.0, 0.0, 2.0], [0.5, 2.0, 0.0, 1.5, 3.0]], np.float32)
    check(lambda x: R.cumprod(x, 1), [x], lambda x: np.cumprod(x, axis=1))
    hessian = lc.hessian(lambda x: R.reduce_sum(R.cumprod(x, 0), (0,)))(
        np.array([2.0, 3.0, 5.0], np.float32))
    np.testing.assert_allclose(hessian, [[0, 6, 3], [6, 0, 2], [3, 2, 0]])


def test_cummax_ties_and_nans():
    x = np.array([1.0, 3.0, 3.0, 2.0], np.float32)
    np.testing.assert_allclose(lc.grad(lambda x: R.reduce_sum(R.cummax(x), (0,)))(x),
                               [1, 2, 1, 0])
    # Every running maximum's tangent is a convex combination of the tied elements.
    jacobian = np.asarray(lc.jacrev(R.cummax)(np.full(6, 3.0, np.float32)))
    np.testing.assert_allclose(jacobian.sum(1), np.ones(6), rtol=1e-6)
    assert np.all(np.triu(jacobian, 1) == 0)
    with_nan = np.array([1.0, np.nan, 3.0], np.float32)
    np.testing.assert_array_equal(R.cummax(with_nan), [1.0, np.nan, np.nan])
    np.testing.assert_array_equal(R.cummin(with_nan, reverse=True), [np.nan, np.nan, 3.0])


def test_cumlogsumexp_of_infinities():
    x = np.array([-np.inf, -np.inf, 0.0, np.inf, 1.0], np.float32)
    np.testing.assert_array_equal(R.cumlogsumexp(x), np.logaddexp.accumulate(x))
    grad = lc.grad(lambda x: R.reduce_sum(R.cumlogsumexp(x), (0,)))(x[:3])
    np.testing.assert_allclose(grad, [1.5, 0.5, 1.0])
    big = np.array([1000.0, 1000.0], np.float32)
    np.testing.assert_allclose(R.cumlogsumexp(big), [1000.0, 1000.0 + np.log(2)])


def test_cumsum_transposes_to_a_reverse_cumsum():
    _, pullback = lc.vjp(lambda x: R.cumsum(x, 1), X)
    jaxpr = str(lc.make_jaxpr(pullback)(X))
    assert "reverse=True" in jaxpr
    np.testing.assert_allclose(pullback(X)[0], np.flip(np.cumsum(np.flip(X, 1), 1), 1),
                               rtol=1e-6)


def test_vmap_of_gradients():
    grads = lc.vmap(lc.grad(lambda x: R.reduce_sum(R.cumprod(x, 0), (0,))))(X[0])
    expected = np.stack([lc.grad(lambda x: R.reduce_sum(R.cumprod(x, 0), (0,)))(row)
                         for row in X[0]])
    np.testing.assert_allclose(grads, expected, rtol=1e-6)
    grads = lc.vmap(lc.grad(lambda x: R.reduce_max(x, (0,))), in_axes=1)(X[0])
    np.testing.assert_array_equal(grads, (X[0] == X[0].max(0)).T)


@pytest.mark.parametrize("low, high", [(1, -1), (-1, 1), (2, 0), (0, -2), (-1, -1)])
def test_pad_axis(low, high):
    # The private linear primitive behind the derivatives above: pads or crops axis 0.
    def reference(x, value):
        kept = x[max(-low, 0):x.shape[0] - max(-high, 0)]
        fill = lambda n: np.full((max(n, 0), *x.shape[1:]), value, x.dtype)
        return np.concatenate([fill(low), kept, fill(high)])
    check(lambda x, value: R._pad_axis(x, value, 0, low, high), [X[0], np.float32(2.5)],
          reference, diff_argnums=(0, 1))


# --- properties -------------------------------------------------------------------


@settings(max_examples=10, deadline=None)
@given(st.data())
def test_reductions_match_numpy(data):
    shape = data.draw(st.sampled_from([(3,), (2, 3), (2, 1, 3)]))
    axes = tuple(data.draw(st.sets(st.integers(0, len(shape) - 1))))
    sign = data.draw(st.sampled_from([1.0, -1.0]))
    x = (sign * X.ravel()[:int(np.prod(shape))]).reshape(shape)
    name, ref = data.draw(st.sampled_from([("reduce_sum", np.sum), ("reduce_max", np.max),
                                           ("reduce_min", np.min), ("reduce_prod", np.prod)]))
    np.testing.assert_allclose(getattr(R, name)(x, axes), ref(x, axis=axes), rtol=1e-6)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    np.testing.assert_array_equal(R.argmax(x, axis, np.int32), np.argmax(x, axis=axis))
    np.testing.assert_allclose(R.cumsum(x, axis, reverse=True),
                               _reference(np.cumsum, axis % len(shape), True)(x), rtol=1e-6)


# --- errors -----------------------------------------------------------------------------


@pytest.mark.parametrize("fn, error, message", [
    (lambda: R.reduce_max(X[0], (3,)), ValueError,
     "reduce_max: axes (3,) out of range for operand of rank 2"),
    (lambda: R.reduce_sum(X[0], (1, -1)), ValueError, "reduce_sum: duplicate axes (1, -1)"),
    (lambda: R.reduce_max_p.bind(X[0], axes=(-1,)), ValueError,
     "reduce_max: axes (-1,) out of range for operand of rank 2"),
    (lambda: R.reduce_prod_p.bind(X[0], axes=(0, 0)), ValueError,
     "reduce_prod: duplicate axes (0, 0)"),
    (lambda: R.reduce_sum(BOOLS, (0,)), TypeError, "reduce_sum does not accept dtype bool"),
    (lambda: R.argmax(X.astype(np.complex64), 0, np.int32), TypeError,
     "argmax does not accept dtype complex64"),
    (lambda: R.reduce_and(X, (0,)), TypeError, "reduce_and does not accept dtype float32"),
    (lambda: R.argmax(X, 3, np.int32), ValueError,
     "argmax: axis 3 out of range for operand of rank 3"),
    (lambda: R.argmin(np.zeros((2, 0), np.float32), 1, np.int32), ValueError,
     "argmin: the reduced axis 1 of an operand of shape (2, 0) is empty"),
    (lambda: R.argmax(X, 0, np.float32), TypeError,
     "argmax: index_dtype must be an integer type, got float32"),
    (lambda: R.argmax_p.bind(X, axes=(0, 1), index_dtype=np.dtype(np.int32)), ValueError,
     "argmax: takes exactly one axis, got axes (0, 1)"),
    (lambda: R.cumsum(X[0], 2), ValueError, "cumsum: axis 2 out of range for operand of rank 2"),
    (lambda: R.cumsum_p.bind(X[0], axis=-1, reverse=False), ValueError,
     "cumsum: axis -1 out of range for operand of rank 2"),
    (lambda: R.cumlogsumexp(INTS, 0), TypeError, "cumlogsumexp does not accept dtype int32"),
    (lambda: R.cummax(BOOLS, 0), TypeError, "cummax does not accept dtype bool"),
    (lambda: R.reduce((X, X), (0.0,), lax.add, (0,)), TypeError,
     "reduce: operands and init_values must have the same structure"),
    (lambda: R.reduce(X, 0.0, lambda a, b: lax.convert_element_type(a, np.int32), (0,)),
     TypeError, "reduce: computation must return scalars of dtypes ['float32'], got ['i32[]']"),
    (lambda: R.reduce(X, 0.0, lambda a, b: (a, b), (0,)), TypeError,
     "reduce: computation must return the structure of the operands"),
    (lambda: R.reduce((X, X[0]), (0.0, 0.0), lambda a, b: a, (0,)), TypeError,
     "reduce: operands must have one shape, got (2, 3, 4), (3, 4)"),
    (lambda: R.reduce(X, np.zeros(2, np.float32), _logaddexp, (0,)), TypeError,
     "reduce: init_values must be scalars, got shape (2,)"),
    (lambda: R.reduce(X, np.float16(0), _logaddexp, (0,)), TypeError,
     "reduce: operand dtype float32 must match its init value (float16)"),
    (lambda: R.reduce(X, 0.0, _logaddexp, (5,)), ValueError,
     "reduce: axes (5,) out of range for operand of rank 3"),
])
def test_error_messages(fn, error, message):
    with pytest.raises(error, match=re.escape(message)):
        fn()


def test_reduce_errors_under_transformations():
    with pytest.raises(TypeError, match="reduce: computation closes over traced values"):
        lc.grad(lambda s: R.reduce_sum(R.reduce(
            X, -np.inf, lambda a, b: lax.add(_logaddexp(a, b), lax.mul(s, 0.0)), (0,)),
            (0, 1)))(np.float32(1.0))
    with pytest.raises(NotImplementedError, match="reduce: vmap over init_values"):
        lc.vmap(lambda i: R.reduce(X, i, _logaddexp, (0,)))(np.zeros(3, np.float32))
    with pytest.raises(NotImplementedError, match="with respect to init_values"):
        lc.grad(lambda i: R.reduce_sum(R.reduce(X, i, _logaddexp, (0,)), (0, 1)))(
            np.float32(-np.inf))
