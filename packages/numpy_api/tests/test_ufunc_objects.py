"""lamella.numpy's ufunc objects against NumPy's ufuncs (values of reduce, accumulate,
at, outer and reduceat over dtypes, axes, initial and where), against JAX's recorded
attributes and result dtypes, the scan-based methods of `frompyfunc` ufuncs, and
`logaddexp.reduce`'s gradients (softmax weights; NaN where every input is -inf)."""

import numpy as np
import pytest
from checks import check
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
import lamella.numpy as lnp

FEW = settings(max_examples=25, deadline=None)

# name: (nin, nout, identity) as jax.numpy 0.10.2 has them.
JAX_UFUNCS = {
    "add": (2, 1, 0), "bitwise_and": (2, 1, -1), "bitwise_or": (2, 1, 0),
    "bitwise_xor": (2, 1, 0), "logaddexp": (2, 1, -np.inf), "logaddexp2": (2, 1, -np.inf),
    "logical_and": (2, 1, True), "logical_or": (2, 1, False), "logical_xor": (2, 1, False),
    "maximum": (2, 1, None), "minimum": (2, 1, None), "multiply": (2, 1, 1),
    "negative": (1, 1, None), "subtract": (2, 1, None),
}
NUMERIC = ["add", "subtract", "multiply", "maximum", "minimum"]
LOGICAL = ["logical_and", "logical_or", "logical_xor"]
BITWISE = ["bitwise_and", "bitwise_or", "bitwise_xor"]


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype) == np.bool_:
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-3 if np.dtype(dtype).kind == "i" else 0, 5, shape).astype(dtype)
    return rng.uniform(-2, 2, shape).astype(dtype)


def same(got, want, rtol=1e-5):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6)


def test_the_ufuncs_are_jaxs():
    ours = sorted(n for n in dir(lnp) if isinstance(getattr(lnp, n), lnp.ufunc))
    assert ours == sorted(JAX_UFUNCS)
    for name, (nin, nout, identity) in JAX_UFUNCS.items():
        u = getattr(lnp, name)
        assert (u.nin, u.nout, u.__name__) == (nin, nout, name)
        assert u.identity == identity or (identity is None and u.identity is None)
    assert repr(lnp.add) == "<lamella.numpy.ufunc 'add'>"


def test_call_checks_its_arguments():
    x = np.float32([1, 2])
    same(lnp.add(x, 1), x + 1)
    with pytest.raises(TypeError, match="takes 2 positional arguments but 3"):
        lnp.add(x, x, x)
    with pytest.raises(TypeError, match="lists and tuples are not accepted"):
        lnp.multiply([1, 2], x)
    with pytest.raises(NotImplementedError, match="out argument"):
        lnp.add(x, x, out=x)
    with pytest.raises(NotImplementedError, match="where argument"):
        lnp.add(x, x, where=x > 1)


# --- reduce ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", NUMERIC + LOGICAL + BITWISE)
@pytest.mark.parametrize("dtype", ["int8", "int32", "bool", "float32"])
def test_reduce_matches_numpy(name, dtype):
    if (name in BITWISE and dtype == "float32") or (name == "subtract" and dtype == "bool"):
        pytest.skip("not defined for this dtype in NumPy either")
    x = data((3, 4), dtype)
    ours, theirs = getattr(lnp, name), getattr(np, name)
    for axis in (0, 1, None, (0, 1)):
        want = theirs.reduce(x.ravel() if axis in (None, (0, 1)) else x,
                             axis=0 if axis in (None, (0, 1)) else axis)
        same(ours.reduce(x, axis=axis), np.asarray(want).astype(np.asarray(want).dtype))
    same(ours.reduce(x, axis=1, keepdims=True), theirs.reduce(x, axis=1, keepdims=True))


def test_reduce_result_dtypes_are_jaxs():
    i8, b = np.int8([1, 2, 3]), np.array([True, False, True])
    assert lnp.add.reduce(i8).dtype == np.int32 and lnp.add.reduce(b).dtype == np.int32
    assert lnp.multiply.reduce(i8).dtype == np.int32 and lnp.maximum.reduce(i8).dtype == np.int8
    assert lnp.logical_and.reduce(i8).dtype == np.bool_
    assert lnp.bitwise_or.reduce(i8).dtype == np.int8 and lnp.subtract.reduce(i8) == -4
    assert lnp.logaddexp.reduce(i8).dtype == np.float32


def test_reduce_initial_and_where():
    x = np.float32([0, 1, 2, 3])
    keep = np.array([True, False, True, False])
    same(lnp.maximum.reduce(x, where=keep, initial=-1.0), 2.0)
    same(lnp.add.reduce(x, where=keep), 2.0)
    same(lnp.subtract.reduce(x, where=keep, initial=10.0), 8.0)  # 10 - 0 - 2
    same(lnp.subtract.reduce(x, initial=10.0), 4.0)
    same(lnp.maximum.reduce(np.zeros(0, np.float32), initial=2.0), 2.0)
    with pytest.raises(ValueError, match="does not have an identity"):
        lnp.subtract.reduce(x, where=keep)
    with pytest.raises(ValueError, match="zero-size array to reduction operation subtract"):
        lnp.subtract.reduce(np.zeros(0, np.float32))
    with pytest.raises(ValueError, match="only supported for binary ufuncs"):
        lnp.negative.reduce(x)


def test_logaddexp_reduce_values_and_slopes():
    x = data((3, 5), "float32", 1) * 20
    same(lnp.logaddexp.reduce(x, axis=1), np.logaddexp.reduce(x.astype(np.float64), axis=1))
    same(lnp.logaddexp2.reduce(x, axis=0), np.logaddexp2.reduce(x.astype(np.float64), axis=0))
    same(lnp.logaddexp.reduce(x, axis=None, initial=3.0),
         np.logaddexp(np.logaddexp.reduce(x.ravel().astype(np.float64)), 3.0))
    same(lnp.logaddexp.reduce(np.zeros(0, np.float32)), -np.inf)
    # The slopes are softmax weights: they sum to 1, and are NaN when every input is -inf.
    weights = lc.grad(lnp.logaddexp.reduce)(x[0])
    same(weights, np.exp(x[0] - np.logaddexp.reduce(x[0].astype(np.float64))), rtol=1e-4)
    assert abs(float(np.sum(weights)) - 1) < 1e-6
    assert np.isnan(np.asarray(lc.grad(lnp.logaddexp.reduce)(np.float32([-np.inf] * 3)))).all()
    same(lc.grad(lnp.logaddexp.reduce)(np.float32([-np.inf, 1.0])), [0.0, 1.0])
    check(lambda v: lnp.logaddexp.reduce(v, axis=1), [x], None, jit_rtol=1e-5)


# --- accumulate ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", NUMERIC + LOGICAL + BITWISE + ["logaddexp"])
def test_accumulate_matches_numpy(name):
    for dtype in ("int32", "bool", "float32"):
        if (name in BITWISE and dtype == "float32") or (name == "subtract" and dtype == "bool"):
            continue
        x = data((3, 4), dtype, 2)
        ours, theirs = getattr(lnp, name), getattr(np, name)
        for axis in (0, 1):
            # NumPy's logaddexp of bools is float16; JAX's (and ours) the default float.
            ref_x = x.astype(np.float32) if name == "logaddexp" else x
            want = theirs.accumulate(ref_x, axis=axis)
            got = ours.accumulate(x, axis=axis)
            if name in ("add", "multiply") and dtype == "bool":
                want = want.astype(np.int32)  # JAX's: booleans add as integers
            same(got, want)


def test_accumulate_dtypes_and_empty():
    assert lnp.add.accumulate(np.int8([1, 2])).dtype == np.int8
    assert lnp.add.accumulate(np.array([True, False])).dtype == np.int32
    assert lnp.logaddexp.accumulate(np.int8([1, 2])).dtype == np.float32
    assert lnp.subtract.accumulate(np.zeros((0, 2), np.float32)).shape == (0, 2)
    # The slopes of a running logaddexp: NaN while every input so far is -inf (as JAX).
    slopes = lc.grad(lambda v: lnp.logaddexp.accumulate(v).sum())(
        np.float32([-np.inf, -np.inf, 1.0]))
    assert np.isnan(np.asarray(slopes)[:2]).all() and float(slopes[2]) == 1.0


# --- at ---------------------------------------------------------------------------------
AT_CASES = [
    ("add", np.int32([0, 0, 2, -1]), np.float32([1, 2, 3, 4])),
    ("subtract", np.int32([1, 1]), np.float32(1.5)),
    ("multiply", np.int32([3, 3, 0]), np.float32([2, 3, 4])),
    ("maximum", np.int32([0, 0]), np.float32([2, 5])),
    ("minimum", (np.int32([1, 2]),), np.float32(-7)),
    ("logaddexp", np.int32([0, 0, 4]), np.float32([2, 5, 1])),
]


@pytest.mark.parametrize("name, index, b", AT_CASES, ids=[c[0] for c in AT_CASES])
def test_at_matches_numpy(name, index, b):
    a = data((5,), "float32", 3)
    want = a.copy()
    getattr(np, name).at(want, index, b)
    same(getattr(lnp, name).at(a, index, b, inplace=False), want)


def test_at_on_integers_bools_and_unary_ufuncs():
    i8 = np.int8([1, 2, 3])
    same(lnp.bitwise_xor.at(i8, np.int32([0, 0, 2]), np.int8(3), inplace=False), [1, 2, 0])
    same(lnp.add.at(np.array([False, False, True]), np.int32([0, 0]), True, inplace=False),
         [True, False, True])
    same(lnp.negative.at(np.float32([0, 1, 2]), np.int32([1, 1, 2]), inplace=False),
         [0, 1, -2])  # applied once per occurrence, as NumPy does
    grid = np.zeros((2, 3), np.float32)
    same(lnp.add.at(grid, (np.int32([0, 1, 0]), np.int32([1, 1, 1])), 1.0, inplace=False),
         [[0, 2, 0], [0, 1, 0]])
    same(lnp.add.at(grid, slice(None), 1.0, inplace=False), np.ones((2, 3)))
    with pytest.raises(NotImplementedError, match="inplace=False"):
        lnp.add.at(grid, 0, 1.0)
    with pytest.raises(TypeError, match="second operand"):
        lnp.add.at(grid, 0, inplace=False)
    with pytest.raises(TypeError, match="unary"):
        lnp.negative.at(grid, 0, 1.0, inplace=False)


# --- outer and reduceat -----------------------------------------------------------------
@pytest.mark.parametrize("name", NUMERIC + ["logaddexp", "logical_xor", "bitwise_or"])
def test_outer_matches_numpy(name):
    a, b = data((2, 2), "int32", 4), data((3,), "int32", 5)
    got = getattr(lnp, name).outer(a, b)
    want = getattr(np, name).outer(a, b)
    same(got, want.astype(np.float32) if name == "logaddexp" else want)
    with pytest.raises(ValueError, match="binary"):
        lnp.negative.outer(a, b)


REDUCEAT_INDICES = [np.int32([0, 2, 3]), np.int32([3, 1, 4]), np.int32([0, 0, 5, 2]),
                    np.int32([4])]


@pytest.mark.parametrize("name", NUMERIC + LOGICAL + BITWISE + ["logaddexp"])
def test_reduceat_matches_numpy(name):
    dtype = "float32" if name in NUMERIC + ["logaddexp"] else "int32"
    x = data((6, 2), dtype, 6)
    for indices in REDUCEAT_INDICES:
        for axis in (0, 1):
            if axis == 1:
                indices = np.int32([1, 0])
            want = getattr(np, name).reduceat(x, indices, axis=axis)
            same(getattr(lnp, name).reduceat(x, indices, axis=axis), want, rtol=1e-4)


_REDUCEAT_JIT = lc.jit(lambda x, i: lnp.add.reduceat(x, i))


def test_reduceat_traced_indices_and_errors():
    x = np.arange(6, dtype=np.float32)
    same(_REDUCEAT_JIT(x, np.int32([0, 2, 2, 5])), np.add.reduceat(x, [0, 2, 2, 5]))
    with pytest.raises(IndexError, match="index 7 out-of-bounds"):
        lnp.add.reduceat(x, np.int32([0, 7]))
    same(lnp.logaddexp.reduceat(np.int8([1, 2, 3]), np.int32([0, 2])),
         np.logaddexp.reduceat(np.float32([1, 2, 3]), [0, 2]))


# --- frompyfunc: the generic, scan-based methods ----------------------------------------------
def _ref_fold(fn, values, start=None):
    acc = values[0] if start is None else start
    for v in values[0 if start is not None else 1:]:
        acc = fn(acc, v)
    return acc


def test_frompyfunc_methods_fold_in_numpys_order():
    fn = lambda a, b: a * b + 1  # noqa: E731  (not associative: order matters)
    f = lnp.frompyfunc(fn, 2, 1, identity=1)
    assert (f.nin, f.nout, f.nargs, f.identity, f.__name__) == (2, 1, 2, 1, "<lambda>")
    x = np.float32([0.5, 1.5, -1.0, 2.0])
    same(f(x, 2.0), x * 2 + 1)
    same(f.reduce(x), _ref_fold(fn, list(x.astype(np.float64))))
    same(f.accumulate(x), [_ref_fold(fn, list(x[:k + 1].astype(np.float64))) for k in range(4)])
    same(f.reduce(x, where=x > 0), _ref_fold(fn, [1.0, 0.5, 1.5, 2.0]))
    same(f.reduceat(x, np.int32([0, 2])), [fn(0.5, 1.5), fn(-1.0, 2.0)])
    want = x.copy()
    for i in (0, 0, 3):
        want[i] = fn(want[i], 2.0)
    same(f.at(x, np.int32([0, 0, 3]), 2.0, inplace=False), want)
    same(f.outer(x[:2], x), fn(x[:2, None], x[None, :]))
    pair = lnp.frompyfunc(lambda a: (a, a + 1), 1, 2)
    lo, hi = pair(x)
    same(lo, x) and same(hi, x + 1)
    with pytest.raises(ValueError, match="binary"):
        pair.reduce(x)


@FEW
@given(st.integers(1, 5), st.integers(0, 2 ** 31 - 1))
def test_frompyfunc_reduce_matches_a_python_fold(n, seed):
    fn = lambda a, b: a - 0.5 * b  # noqa: E731
    x = data((n, 2), "float32", seed)
    got = lnp.frompyfunc(fn, 2, 1).reduce(x, axis=0)
    same(got, _ref_fold(fn, list(x.astype(np.float64))))


def test_methods_under_jit_grad_and_vmap():
    x = data((3, 4), "float32", 7)
    check(lambda v: lnp.subtract.reduce(v, axis=1), [x], lambda v: np.subtract.reduce(v, 1),
          jit_rtol=1e-5)
    check(lambda v: lnp.multiply.accumulate(v, axis=1), [x],
          lambda v: np.multiply.accumulate(v, 1), jit_rtol=1e-5)
    check(lambda v: lnp.maximum.reduceat(v, np.int32([0, 2]), axis=1), [x],
          lambda v: np.maximum.reduceat(v, [0, 2], axis=1), jit_rtol=1e-5)
    check(lambda v: lnp.add.at(v, (0, np.int32([1, 1])), 2.0, inplace=False), [x], None)
