"""dot, vdot, vecdot, inner, outer, kron, tensordot, matvec, vecmat, diagonal,
trace, cov and corrcoef against NumPy: values over shapes (0-d and empty
included) and dtypes, JAX's result dtypes, derivatives, vmap, jit, and errors."""

import numpy as np
import pytest
from checks import check, check_derivatives
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella.numpy import contractions as C

RNG = np.random.default_rng(0)


def rand(*shape, dtype=np.float32):
    if np.dtype(dtype).kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(-3 if np.dtype(dtype).kind == "i" else 0, 4, shape).astype(dtype)
    if np.dtype(dtype).kind == "b":
        return RNG.integers(0, 2, shape).astype(bool)
    return RNG.standard_normal(shape).astype(dtype)


def assert_matches(got, want, dtype=None, tol=2e-5):
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype or np.asarray(want).dtype), (got.dtype, dtype)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# --- products against NumPy -------------------------------------------------------------
PRODUCT_SHAPES = {
    "dot": [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 2, 3), (4, 3, 5)),
            ((), (2, 3)), ((2,), ()), ((2, 0), (0, 3))],
    "inner": [((3,), (3,)), ((2, 3), (4, 3)), ((), (2,)), ((2, 2, 3), (3,))],
    "outer": [((3,), (2,)), ((2, 3), (2,)), ((), ()), ((0,), (2,))],
    "kron": [((3,), (2,)), ((2, 3), (2, 2)), ((2,), (2, 3)), ((), (3,)), ((2, 1, 3), (2, 2))],
    "vdot": [((3,), (3,)), ((2, 3), (6,)), ((), ())],
    "vecdot": [((3,), (3,)), ((2, 3), (4, 1, 3)), ((2, 0), (0,))],
    "matvec": [((4, 2, 3), (3,)), ((2, 3), (5, 3)), ((1, 2, 3), (4, 1, 3))],
    "vecmat": [((2,), (4, 2, 3)), ((5, 2), (2, 3))],
}
CASES = [(name, a, b) for name, shapes in PRODUCT_SHAPES.items() for a, b in shapes]


@pytest.mark.parametrize("name, a_shape, b_shape", CASES,
                         ids=[f"{n}-{a}-{b}" for n, a, b in CASES])
def test_products_match_numpy(name, a_shape, b_shape):
    a, b = rand(*a_shape), rand(*b_shape)
    assert_matches(getattr(C, name)(a, b), getattr(np, name)(a, b))


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.float16, np.complex64])
@pytest.mark.parametrize("name", ["dot", "outer", "kron", "vecdot"])
def test_product_dtypes(name, dtype):
    a, b = rand(2, 3, dtype=dtype), rand(3, 3, dtype=dtype)
    if name == "dot":
        b = rand(3, 2, dtype=dtype)
    if name == "vecdot":
        b = rand(2, 3, dtype=dtype)
    got = getattr(C, name)(a, b)
    want = getattr(np, name)(a, b)
    tol = 2e-2 if dtype == np.float16 else 1e-5
    assert_matches(got, want.astype(dtype), dtype, tol)


def test_complex_products_conjugate_the_first_operand():
    a, b = rand(2, 3, dtype=np.complex64), rand(2, 3, dtype=np.complex64)
    assert_matches(C.vdot(a, b), np.vdot(a, b))
    assert_matches(C.vecdot(a, b), np.vecdot(a, b))
    assert_matches(C.vecmat(a[0, :2], b[:2]), np.vecmat(a[0, :2], b[:2]))
    assert_matches(C.matvec(a, b[0]), np.matvec(a, b[0]))
    assert_matches(C.dot(a, b.T), np.dot(a, b.T))


def test_result_dtypes_follow_jax():
    assert C.dot(np.int32([1, 2]), np.float32([1, 2])).dtype == np.float32
    weak = C.dot(2.0, 3)
    assert weak.dtype == np.float32 and weak.aval.weak_type and float(weak) == 6.0
    assert C.outer(np.float16([1]), 2.0).dtype == np.float16
    big = np.int8([100, 100])
    assert int(C.dot(big, big)) == int(np.dot(big, big))  # int8 wraps, like NumPy
    wide = C.dot(big, big, preferred_element_type=np.int32)
    assert wide.dtype == np.int32 and int(wide) == 20000
    assert C.tensordot(big, big, 1, preferred_element_type=np.float32).dtype == np.float32


TENSORDOT = [(0, (2, 3), (4,)), (1, (2, 3, 4), (4, 3)), (2, (2, 3, 4), (3, 4, 5)),
             (([1, 2], [1, 0]), (2, 3, 4), (4, 3, 2)), ((1, 0), (2, 3), (3, 5)),
             (([-1], [0]), (2, 4), (4, 5)), (((), ()), (2,), (3,))]


@pytest.mark.parametrize("axes, a_shape, b_shape", TENSORDOT, ids=[str(t[0]) for t in TENSORDOT])
def test_tensordot_matches_numpy(axes, a_shape, b_shape):
    a, b = rand(*a_shape), rand(*b_shape)
    assert_matches(C.tensordot(a, b, axes), np.tensordot(a, b, axes))


# --- diagonal and trace -----------------------------------------------------------------
M = rand(3, 4, 5)


@settings(max_examples=12, deadline=None)
@given(st.integers(-5, 6), st.sampled_from([(0, 1), (1, 2), (2, 0), (-1, -2), (0, 2)]))
def test_diagonal_and_trace_match_numpy(offset, axes):
    assert_matches(C.diagonal(M, offset, *axes), np.diagonal(M, offset, *axes))
    assert_matches(C.trace(M, offset, *axes), np.trace(M, offset, *axes), tol=1e-5)


def test_trace_dtypes():
    assert C.trace(np.eye(3, dtype=np.int8)).dtype == np.int32   # sum's promotion
    assert C.trace(np.eye(3, dtype=np.uint8)).dtype == np.uint32
    bools = C.trace(np.eye(3, dtype=bool))
    assert bools.dtype == np.int32 and int(bools) == 3
    assert C.trace(np.eye(3, dtype=np.float16)).dtype == np.float16
    assert C.trace(np.eye(3, dtype=np.int32), dtype=np.float32).dtype == np.float32
    assert_matches(C.diagonal(np.zeros((0, 3), np.float32)), np.zeros((0,), np.float32))


# --- cov and corrcoef ---------------------------------------------------------------------
X, Y = rand(3, 6), rand(2, 6)
FW, AW = np.int32([1, 2, 1, 3, 1, 1]), np.float32([0.5, 1, 2, 1, 0.3, 1])
COV_KWARGS = [{}, {"bias": True}, {"ddof": 2}, {"fweights": FW}, {"aweights": AW},
              {"fweights": FW, "aweights": AW}, {"fweights": FW, "aweights": AW, "ddof": 0},
              {"aweights": AW, "ddof": 3}]


@pytest.mark.parametrize("kwargs", COV_KWARGS, ids=lambda k: ",".join(k) or "plain")
def test_cov_matches_numpy(kwargs):
    assert_matches(C.cov(X, **kwargs), np.cov(X, **kwargs).astype(np.float32), tol=1e-5)


def test_cov_and_corrcoef_layouts():
    assert_matches(C.cov(X, Y), np.cov(X, Y).astype(np.float32), tol=1e-5)
    assert_matches(C.cov(X.T, rowvar=False), np.cov(X.T, rowvar=False).astype(np.float32))
    assert_matches(C.cov(X[0]), np.cov(X[0]).astype(np.float32))
    assert C.cov(np.int32([[1, 2, 4]])).dtype == np.float32
    assert C.cov(np.zeros((0, 3), np.float32)).shape == (0, 0)
    z = rand(2, 5, dtype=np.complex64)
    assert_matches(C.cov(z), np.cov(z).astype(np.complex64), tol=1e-5)


def test_corrcoef_layouts():
    z = rand(2, 5, dtype=np.complex64)
    assert_matches(C.corrcoef(X), np.corrcoef(X).astype(np.float32), tol=1e-5)
    assert_matches(C.corrcoef(X, Y), np.corrcoef(X, Y).astype(np.float32), tol=1e-5)
    assert_matches(C.corrcoef(X[0]), np.corrcoef(X[0]).astype(np.float32))
    assert_matches(C.corrcoef(z), np.corrcoef(z).astype(np.complex64), tol=1e-5)


# --- transformations --------------------------------------------------------------------
GRAD_CASES = [
    ("dot", lambda a, b: C.dot(a, b), [(2, 3), (3, 2)], np.dot),
    ("tensordot", lambda a, b: C.tensordot(a, b, ([0, 1], [1, 0])), [(2, 3), (3, 2)],
     lambda a, b: np.tensordot(a, b, ([0, 1], [1, 0]))),
    ("kron", C.kron, [(2, 2), (1, 3)], np.kron),
    ("outer", C.outer, [(2,), (3,)], np.outer),
    ("inner", C.inner, [(2, 3), (3,)], np.inner),
    ("vdot", C.vdot, [(2, 2), (4,)], np.vdot),
]


@pytest.mark.parametrize("name, fn, shapes, reference", GRAD_CASES,
                         ids=[c[0] for c in GRAD_CASES])
def test_grads_and_jit(name, fn, shapes, reference):
    check(fn, [rand(*s) for s in shapes], reference, diff_argnums=(0, 1), vmap=False,
          rtol=1e-5, atol=1e-5)


def test_trace_grads():
    check(lambda m: C.trace(m, 1), [rand(3, 4)], lambda m: np.trace(m, 1), vmap=False)


def test_cov_grads():
    check(lambda m: C.cov(m, aweights=AW[:4]), [rand(2, 4)],
          lambda m: np.cov(m, aweights=AW[:4]), vmap=False, rtol=1e-5, atol=1e-5)


def test_corrcoef_grads_and_jit():
    # corrcoef's divisions may fuse differently under jit: equal to rounding, not bits.
    m = rand(2, 4)
    assert_matches(lc.jit(C.corrcoef)(m), np.corrcoef(m).astype(np.float32), tol=1e-6)
    check_derivatives(C.corrcoef, [m], rtol=1e-5, atol=1e-5)


def test_vmap_matches_loops():
    check(C.dot, [rand(2, 3), rand(3)], np.dot, diff_argnums=None)
    check(lambda m: C.diagonal(m, -1), [rand(3, 3)], lambda m: np.diagonal(m, -1),
          diff_argnums=None)
    batched = rand(4, 2, 5)
    out = lc.vmap(C.cov)(batched)
    assert_matches(out, np.stack([np.cov(b) for b in batched]).astype(np.float32), tol=1e-5)


# --- errors -----------------------------------------------------------------------------
ERRORS = [
    (C.dot, (rand(2, 3), rand(2, 3)), TypeError, r"dot: shapes \(2, 3\) and \(2, 3\) are not"),
    (C.inner, (rand(2), rand(3)), TypeError, r"inner: shapes \(2,\) and \(3,\)"),
    (C.tensordot, (rand(2, 3), rand(2, 3), 1), TypeError,
     r"a.shape\[1\] = 3 but b.shape\[0\] = 2"),
    (C.tensordot, (rand(2, 3), rand(2, 3), 3), ValueError, "between 0 and the smaller rank"),
    (C.tensordot, (rand(2, 3), rand(2, 3), ([0], [0, 1])), ValueError, "same length"),
    (C.tensordot, (rand(2, 3), rand(2, 3), "x"), TypeError, "axes must be"),
    (C.tensordot, (rand(2, 3), rand(2, 3), ([0, 0], [0, 1])), ValueError, "repeated axis"),
    (C.vdot, (rand(2), rand(3)), TypeError, "2 and 3 elements"),
    (C.matvec, (rand(2, 3), rand(2)), TypeError, r"shapes \(2, 3\) and \(2,\)"),
    (C.matvec, (rand(2, 2, 3), rand(3, 3)), ValueError, r"batch dimensions \(2,\) and \(3,\)"),
    (C.matvec, (rand(3), rand(3)), ValueError, "at least 2 dimension"),
    (C.vecdot, (rand(2, 3), rand(2, 4)), TypeError, r"vecdot: shapes \(2, 3\) and \(2, 4\)"),
    (C.diagonal, (rand(3),), ValueError, "at least two dimensions"),
    (C.diagonal, (rand(3, 3), 0, 1, -1), ValueError, "axis1 and axis2 must differ"),
    (C.diagonal, (rand(3, 3), 0, 0, 2), Exception, "axis2 2 is out of bounds"),
    (C.cov, (rand(2, 2, 2),), ValueError, "more than 2 dimensions"),
    (C.cov, (rand(2, 3), None, True, False, None, np.float32([1, 1, 1])), TypeError,
     "fweights must be integers"),
    (C.cov, (rand(2, 3), None, True, False, None, np.int32([1, 1])), ValueError,
     r"one weight per observation \(3\)"),
    (C.cov, (rand(2, 3), rand(2, 4)), ValueError, "same number of observations"),
    (C.dot, ([1, 2], [1, 2]), TypeError, "lists and tuples are not accepted"),
]


@pytest.mark.parametrize("fn, args, error, message", ERRORS,
                         ids=[f"{e[0].__name__}-{i}" for i, e in enumerate(ERRORS)])
def test_errors_name_the_mistake(fn, args, error, message):
    with pytest.raises(error, match=message):
        fn(*args)


def test_out_is_rejected():
    with pytest.raises(NotImplementedError):
        C.outer(rand(2), rand(2), out=rand(2, 2))
    with pytest.raises(NotImplementedError):
        C.trace(rand(2, 2), out=rand())
