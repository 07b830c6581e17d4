"""dot_general in every dimension-number pattern, dtype and preferred_element_type,
through lamella.lax.test_util (values, jit, derivatives, vmap of each operand and
both), plus dot, batch_matmul, Precision and the error messages."""

import re

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella.lax import contraction as D
from lamella.lax.reductions import reduce_sum
from lamella.lax.test_util import check

RNG = np.random.default_rng(0)

# (lhs shape, rhs shape, dimension_numbers, the same contraction as an einsum)
PATTERNS = [
    ((3, 4), (4, 5), (((1,), (0,)), ((), ())), "ij,jk->ik"),
    ((4,), (4,), (((0,), (0,)), ((), ())), "i,i->"),
    ((3, 4), (4,), (((1,), (0,)), ((), ())), "ij,j->i"),
    ((4,), (4, 3), (((0,), (0,)), ((), ())), "j,jk->k"),
    ((3,), (4,), (((), ()), ((), ())), "i,j->ij"),
    ((4, 3), (5, 4), (((0,), (1,)), ((), ())), "ji,kj->ik"),
    ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,))), "bij,bjk->bik"),
    ((2, 3, 4), (3, 4, 5), (((1, 2), (0, 1)), ((), ())), "ijk,jkl->il"),
    ((2, 3, 4), (4, 3, 5), (((1, 2), (1, 0)), ((), ())), "ijk,kjl->il"),
    ((2, 3), (3, 2), (((0, 1), (1, 0)), ((), ())), "ij,ji->"),
    ((3, 2, 4), (4, 5, 2), (((2,), (0,)), ((1,), (2,))), "ibj,jkb->bik"),
    ((2, 3, 4, 5), (5, 3, 2, 6), (((3,), (0,)), ((0, 1), (2, 1))), "abcd,dbae->abce"),
    ((2, 3), (2, 3), (((), ()), ((0, 1), (0, 1))), "ij,ij->ij"),
    ((3, 0), (0, 4), (((1,), (0,)), ((), ())), "ij,jk->ik"),
]


def _operand(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("lhs_shape, rhs_shape, numbers, spec", PATTERNS,
                         ids=[p[3] for p in PATTERNS])
def test_dot_general_patterns(lhs_shape, rhs_shape, numbers, spec):
    check(lambda x, y: D.dot_general(x, y, numbers), [_operand(lhs_shape), _operand(rhs_shape)],
          lambda x, y: np.einsum(spec, x, y), diff_argnums=(0, 1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("index", [0, 6, 10, 11])
def test_complex_dot_general(index):
    lhs_shape, rhs_shape, numbers, spec = PATTERNS[index]
    x = (_operand(lhs_shape) + 1j * _operand(lhs_shape)).astype(np.complex64)
    y = (_operand(rhs_shape) + 1j * _operand(rhs_shape)).astype(np.complex64)
    check(lambda x, y: D.dot_general(x, y, numbers), [x, y],
          lambda x, y: np.einsum(spec, x, y), diff_argnums=(0, 1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8, bool])
def test_integer_and_boolean_dot_general(dtype):
    lhs_shape, rhs_shape, numbers, spec = PATTERNS[10]
    x = RNG.integers(0, 3, lhs_shape).astype(dtype)
    y = RNG.integers(0, 3, rhs_shape).astype(dtype)
    expected = np.einsum(spec, x.astype(np.int64), y.astype(np.int64))
    reference = (lambda x, y: expected > 0) if dtype is bool \
        else (lambda x, y: expected.astype(dtype))  # wraps around as XLA does
    check(lambda x, y: D.dot_general(x, y, numbers), [x, y], reference, diff_argnums=None)


def test_preferred_element_type():
    big = np.full((2, 64), 100, np.int8)
    exact = np.full((2, 2), 64 * 100 * 100)
    out = D.dot(big, big.T, preferred_element_type=np.int32)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, exact)
    out = D.dot(big, big.T, preferred_element_type=np.float32)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, exact)
    check(lambda x, y: D.dot(x, y, preferred_element_type=np.int32),
          [big[:, :3], big[:, :3].T.astype(np.int8)],
          lambda x, y: x.astype(np.int32) @ y.astype(np.int32), diff_argnums=None)
    for dtype in (np.float16, ml_dtypes.bfloat16):
        x, y = _operand((3, 4), dtype), _operand((4, 2), dtype)
        out = D.dot(x, y, preferred_element_type=np.float32)
        assert out.dtype == np.float32
        np.testing.assert_allclose(out, x.astype(np.float32) @ y.astype(np.float32), rtol=1e-6)
    assert D.dot(_operand(3), _operand(3), preferred_element_type=np.float64).dtype == np.float32


def test_gradients_with_a_preferred_element_type():
    x, y = _operand((3, 4), np.float16), _operand((4, 2), np.float16)
    loss = lambda x, y: _sum(D.dot(x, y, preferred_element_type=np.float32))
    gx, gy = lc.grad(loss, argnums=(0, 1))(x, y)
    assert gx.dtype == np.float16 and gy.dtype == np.float16
    ones = np.ones((3, 2), np.float32)
    np.testing.assert_allclose(gx, (ones @ y.astype(np.float32).T).astype(np.float16))
    np.testing.assert_allclose(gy, (x.astype(np.float32).T @ ones).astype(np.float16))


def _sum(x):
    return reduce_sum(x, tuple(range(np.ndim(x))))


def test_composed_transformations():
    x, y = _operand((5, 3, 4)), _operand((4, 2))
    f = lambda x, y: _sum(D.dot(x, y))
    per_example = lc.jit(lc.vmap(lc.grad(f, argnums=1), in_axes=(0, None)))(x, y)
    expected = np.stack([x_i.T @ np.ones((3, 2), np.float32) for x_i in x])
    np.testing.assert_allclose(per_example, expected, rtol=1e-5)
    hessian = lc.hessian(lambda v: D.dot(v, D.dot(x[0].T @ x[0], v)))(_operand(4))
    np.testing.assert_allclose(hessian, 2 * x[0].T @ x[0], rtol=1e-5)


# --- dot, batch_matmul --------------------------------------------------------------


@pytest.mark.parametrize("lhs_shape, rhs_shape", [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 3)),
                                                  ((3, 4), (4, 2))])
def test_dot(lhs_shape, rhs_shape):
    check(D.dot, [_operand(lhs_shape), _operand(rhs_shape)], np.dot, diff_argnums=(0, 1),
          rtol=1e-5, atol=1e-5)


def test_batch_matmul():
    check(D.batch_matmul, [_operand((2, 3, 4, 5)), _operand((2, 3, 5, 2))], np.matmul,
          diff_argnums=(0, 1), rtol=1e-5, atol=1e-5)


# --- precision -------------------------------------------------------------------------


@pytest.mark.parametrize("spelling, expected", [
    ("highest", D.Precision.HIGHEST), ("float32", D.Precision.HIGHEST),
    ("HIGH", D.Precision.HIGH), ("tensorfloat32", D.Precision.HIGH),
    ("bfloat16_3x", D.Precision.HIGH), ("default", D.Precision.DEFAULT),
    ("bfloat16", D.Precision.DEFAULT), ("fastest", D.Precision.DEFAULT),
    (D.Precision.HIGH, D.Precision.HIGH),
])
def test_precision_spellings(spelling, expected):
    assert D.Precision(spelling) is expected
    assert D.canonicalize_precision(spelling) == (expected, expected)


def test_precision_reaches_the_lowering():
    assert D.canonicalize_precision(None) is None
    assert D.Precision(2) is D.Precision.HIGHEST
    assert D.canonicalize_precision(("high", D.Precision.DEFAULT)) == (D.Precision.HIGH,
                                                                       D.Precision.DEFAULT)
    assert repr(D.Precision.HIGH) == "Precision.HIGH" and str(D.Precision.HIGH) == "HIGH"
    x, y = _operand((2, 3)), _operand((3, 2))
    text = lc.jit(lambda x, y: D.dot(x, y, precision=("highest", "default"))).trace(
        x, y).lower().as_text()
    assert "precision = [HIGHEST, DEFAULT]" in text
    np.testing.assert_allclose(D.dot(x, y, precision=D.Precision.HIGHEST), x @ y, rtol=1e-6)
    assert "precision" not in lc.jit(D.dot).trace(x, y).lower().as_text()


# --- properties ---------------------------------------------------------------------


@settings(max_examples=10, deadline=None)
@given(st.data())
def test_dot_general_matches_einsum(data):
    # One batch, one contracting and one free dimension per operand, in random positions.
    letters = {"b": 2, "c": 3, "l": 1, "r": 2}
    lhs = data.draw(st.permutations("bcl"))
    rhs = data.draw(st.permutations("bcr"))
    numbers = (((lhs.index("c"),), (rhs.index("c"),)), ((lhs.index("b"),), (rhs.index("b"),)))
    x = _operand(tuple(letters[c] for c in lhs))
    y = _operand(tuple(letters[c] for c in rhs))
    spec = f"{''.join(lhs)},{''.join(rhs)}->blr"
    np.testing.assert_allclose(D.dot_general(x, y, numbers), np.einsum(spec, x, y), rtol=1e-5,
                               atol=1e-6)


# --- errors -------------------------------------------------------------------------------

M34, M45 = _operand((3, 4)), _operand((4, 5))


@pytest.mark.parametrize("fn, error, message", [
    (lambda: D.dot_general(M34, M45, (((0,), (0,)), ((), ()))), TypeError,
     "dot_general: contracting dimension 0 of lhs (size 3) does not match contracting "
     "dimension 0 of rhs (size 4), for shapes (3, 4) and (4, 5)"),
    (lambda: D.dot_general(_operand((2, 3)), _operand((4, 3)), (((1,), (1,)), ((0,), (0,)))),
     TypeError, "dot_general: batch dimension 0 of lhs (size 2) does not match batch "
                "dimension 0 of rhs (size 4)"),
    (lambda: D.dot_general(M34, M45, (((2,), (0,)), ((), ()))), TypeError,
     "dot_general: lhs contracting dimensions (2,) and batch dimensions () must be in range "
     "for lhs of rank 2 (shape (3, 4))"),
    (lambda: D.dot_general(M34, M34, (((1,), (1,)), ((1,), (0,)))), TypeError,
     "dot_general: lhs contracting dimensions (1,) and batch dimensions (1,) must be distinct"),
    (lambda: D.dot_general(M34, M45, (((1,), (0, 1)), ((), ()))), TypeError,
     "dot_general: lhs and rhs need as many contracting dimensions ((1,) vs (0, 1))"),
    (lambda: D.dot_general(M34, M45, ((1, 0), ())), TypeError,
     "dot_general: dimension_numbers must be ((lhs_contracting, rhs_contracting), "
     "(lhs_batch, rhs_batch))"),
    (lambda: D.dot(M34, M45.astype(np.float16)), TypeError,
     "dot_general requires lhs and rhs of one dtype, got float32 and float16"),
    (lambda: D.dot(M34, M45, preferred_element_type=np.int32), TypeError,
     "dot_general: preferred_element_type int32 is incompatible with inputs of dtype float32"),
    (lambda: D.dot(M34, M45, preferred_element_type=np.float16), TypeError,
     "dot_general: preferred_element_type float16 is narrower than the inputs' dtype float32"),
    (lambda: D.dot(M34, M34), ValueError,
     "vector-vector products; got lhs_shape=(3, 4) rhs_shape=(3, 4)"),
    (lambda: D.dot(_operand((2, 3, 4)), M45), ValueError,
     "vector-vector products; got lhs_shape=(2, 3, 4) rhs_shape=(4, 5)"),
    (lambda: D.batch_matmul(M34, _operand(4)), ValueError,
     "Arguments to batch_matmul must be at least 2D, got 2, 1"),
    (lambda: D.batch_matmul(_operand((2, 3, 4)), M45), ValueError,
     "Arguments to batch_matmul must have same ndim, got 3, 2"),
    (lambda: D.dot(M34, M45, precision="fast"), ValueError,
     "Unrecognized precision value 'fast'"),
    (lambda: D.dot(M34, M45, precision=("high",)), ValueError,
     "precision must be None, a lax.Precision, a string, a pair of them"),
])
def test_error_messages(fn, error, message):
    with pytest.raises(error, match=re.escape(message)):
        fn()


def test_shape_errors_name_the_source_line_under_jit():
    with pytest.raises(TypeError, match="does not match contracting dimension"):
        lc.jit(lambda x, y: D.dot_general(x, y, (((0,), (0,)), ((), ()))))(M34, M45)
