"""vectorize (with and without gufunc signatures, excluded arguments, several
outputs), apply_along_axis and apply_over_axes against NumPy; jit, grad and
errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella import lax
from lamella.numpy.contractions import dot
from lamella.numpy.vectorize import apply_along_axis, apply_over_axes, vectorize

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def assert_matches(got, want, tol=1e-5):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _add_scaled(x, y):
    return x + 2 * y


@settings(max_examples=10, deadline=None)
@given(st.sampled_from([((), ()), ((3,), ()), ((2, 1), (3,)), ((2, 3), (2, 3)),
                        ((1, 4, 1), (2, 1, 3)), ((0, 2), (2,))]))
def test_elementwise_broadcasting_matches_numpy(shapes):
    x, y = rand(*shapes[0]), rand(*shapes[1])
    want = np.vectorize(_add_scaled, otypes=[np.float32])(x, y)
    assert_matches(vectorize(_add_scaled)(x, y), want)


SIGNATURES = [
    ("(m,n),(n)->(m)", lambda m, v: dot(m, v), np.dot, [(5, 2, 3), (4, 1, 3)]),
    ("(m,n),(n)->(m)", lambda m, v: dot(m, v), np.dot, [(2, 3), (3,)]),
    ("(n),(n)->()", lambda a, b: dot(a, b), np.dot, [(2, 1, 3), (4, 3)]),
    ("(n)->(n,n)", lambda v: lax.mul(lax.expand_dims(v, (0,)), lax.expand_dims(v, (1,))),
     lambda v: np.outer(v, v), [(2, 3)]),
]


@pytest.mark.parametrize("signature, fn, reference, shapes", SIGNATURES,
                         ids=[f"{s[0]}-{i}" for i, s in enumerate(SIGNATURES)])
def test_signatures_match_numpy(signature, fn, reference, shapes):
    args = [rand(*s) for s in shapes]
    got = vectorize(fn, signature=signature)(*args)
    assert_matches(got, np.vectorize(reference, signature=signature)(*args))


def test_multiple_outputs():
    def stats(v):
        return lax.reduce_sum(v, (0,)), lax.reduce_max(v, (0,))

    x = rand(2, 3, 4)
    got = vectorize(stats, signature="(n)->(),()")(x)
    want = np.vectorize(lambda v: (v.sum(), v.max()), signature="(n)->(),()")(x)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want):
        assert_matches(g, w)


def test_excluded_positional_and_keyword_arguments():
    def scale(x, factor, *, power=1):
        assert isinstance(factor, list) and isinstance(power, int)  # passed unchanged
        return lax.integer_pow(x * factor[0], power)

    x = rand(2, 3)
    got = vectorize(scale, excluded={1, "power"})(x, [3.0], power=2)
    assert_matches(got, (x * 3.0) ** 2, tol=1e-4)


def test_non_excluded_keywords_are_vectorized():
    f = vectorize(lambda x, y=0.0: x - y)
    x, y = rand(3), rand(2, 1)
    assert_matches(f(x, y=y), np.vectorize(lambda x, y=0.0: x - y)(x, y=y))


def test_jit_and_grad_through_vectorize():
    norm = vectorize(lambda v: dot(v, v), signature="(n)->()")
    x = rand(2, 3)
    assert_matches(lc.jit(norm)(x), (x * x).sum(-1))
    grad = lc.grad(lambda x: lax.reduce_sum(norm(x), (0,)))(x)
    assert_matches(grad, 2 * x)


SIGNATURE_ERRORS = [
    ("(m,n),(n)->(m)", [(2, 3), (4,)], "inconsistent size for core dimension 'n': 3"),
    ("(n)->(m", [(2,)], "not a valid gufunc signature"),
    ("(n)->(n)", [(2,), (2,)], "has 1 inputs but the function was called with 2"),
    ("(m,n)->()", [(3,)], r"input 0 has shape \(3,\) .* 2 core dimension"),
    ("(n)->()", [(3,)], r"output 0 has shape \(3,\)"),
    ("(n)->(),()", [(3,)], "signature has 2 output"),
]


@pytest.mark.parametrize("signature, shapes, message", SIGNATURE_ERRORS,
                         ids=[e[0] for e in SIGNATURE_ERRORS])
def test_signature_errors(signature, shapes, message):
    with pytest.raises((ValueError, TypeError), match=message):
        vectorize(lambda *xs: xs[0], signature=signature)(*[rand(*s) for s in shapes])


def test_loop_dimensions_must_broadcast():
    with pytest.raises(ValueError, match=r"loop \(non-core\) dimensions \(2,\), \(3,\)"):
        vectorize(lambda x, y: x + y)(rand(2), rand(3))


def test_output_core_size_must_match_inputs():
    with pytest.raises(ValueError, match="size 2 for core dimension 'n'"):
        vectorize(lambda v: lax.slice(v, (0,), (2,)), signature="(n)->(n)")(rand(4, 3))


# --- apply_along_axis / apply_over_axes --------------------------------------------------
X = rand(2, 3, 4)


def _outer_self(v):
    return lax.mul(lax.expand_dims(v, (0,)), lax.expand_dims(v, (1,)))


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_apply_along_axis_matches_numpy(axis):
    assert_matches(apply_along_axis(lambda v: dot(v, v), axis, X),
                   np.apply_along_axis(lambda v: v @ v, axis, X))
    assert_matches(apply_along_axis(_outer_self, axis, X),
                   np.apply_along_axis(lambda v: np.outer(v, v), axis, X))


def test_apply_along_axis_extra_arguments_and_errors():
    got = apply_along_axis(lambda v, w, *, shift: dot(v, w) + shift, 1, X, rand(3) * 0 + 1,
                           shift=1.0)
    assert_matches(got, X.sum(1) + 1)
    with pytest.raises(Exception, match="out of bounds"):
        apply_along_axis(lambda v: v, 3, X)


def _sum_axis(a, axis):
    return lax.reduce_sum(a, (axis,))


@pytest.mark.parametrize("axes", [0, [0, 2], [-1], [2, 1, 0]], ids=str)
def test_apply_over_axes_matches_numpy(axes):
    assert_matches(apply_over_axes(_sum_axis, X, axes), np.apply_over_axes(np.sum, X, axes),
                   tol=1e-5)


def test_apply_over_axes_keeps_rank_and_rejects_other_shapes():
    kept = apply_over_axes(lambda a, ax: lax.cumsum(a, ax), X, [1])
    assert_matches(kept, np.cumsum(X, 1))
    with pytest.raises(ValueError, match="keep the rank or drop exactly that axis"):
        apply_over_axes(lambda a, ax: lax.reduce_sum(a, (0, 1)), X, [0])
