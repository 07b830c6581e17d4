"""The elementwise lax primitives against NumPy: values over dtypes, derivatives,
vmap against loops, jit against eager, and the errors a user sees.

Every primitive gets one full `check` (values, jit, JVP/VJP, vmap) in float32
and value-and-jit checks in its other dtypes; semantics NumPy does not share
(integer division, rounding modes, NaN comparisons, XLA's shift rules, ties in
max/min gradients) get tests of their own. Shapes are kept to a few so the
compile cache does most of the work.
"""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
import lamella.lax as lax
from lamella.lax.test_util import (
    check,
    check_derivatives,
    check_jit_matches_eager,
    check_values,
    check_vmap,
)

F32, F64, F16, C64 = (np.dtype(t) for t in (np.float32, np.float64, np.float16, np.complex64))
BF16 = np.dtype(ml_dtypes.bfloat16)

# Inputs away from the kinks and jumps of every function applied to them.
ANY = np.array([[0.3, -1.2, 2.2], [0.7, 1.6, -0.4]])
POS = np.array([[0.3, 1.2, 2.2], [0.7, 1.6, 0.4]])
UNIT = np.array([[0.3, -0.8, 0.5], [-0.1, 0.6, -0.4]])
ABOVE_ONE = np.array([[1.3, 1.2, 2.2], [3.7, 1.6, 5.4]])
OTHER = np.array([[1.1, 0.5, -0.8], [2.0, -1.3, 0.9]])
COMPLEX = ANY + 1j * OTHER
DOMAINS = {"any": ANY, "pos": POS, "unit": UNIT, "above_one": ABOVE_ONE}

SETTINGS = settings(max_examples=10, deadline=None)


def on_x64(dtype) -> bool:
    return np.dtype(dtype) in (np.dtype(np.float64), np.dtype(np.complex128),
                               np.dtype(np.int64), np.dtype(np.uint64))


def reference_in_float64(reference):
    """`reference` evaluated in float64 (complex128), whatever the inputs' dtype."""
    def ref(*args):
        wide = [a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) for a in args]
        return reference(*wide)
    return ref


def check_in_dtype(fun, args, reference, dtype, **tolerances):
    """Values (against a float64 reference) and jit against eager, in `dtype`."""
    with lc.enable_x64(on_x64(dtype)):
        cast = [np.asarray(a).astype(dtype) for a in args]
        out = check_values(fun, cast, reference_in_float64(reference), **tolerances)
        assert np.asarray(out).dtype == np.dtype(dtype)
        check_jit_matches_eager(fun, cast)


# ---------------------------------------------------------------------------
# Unary floating-point functions.

UNARY = [
    # name, reference, domain, whether it takes complex numbers too
    ("neg", np.negative, "any", True),
    ("sign", np.sign, "any", False),
    ("floor", np.floor, "any", False),
    ("ceil", np.ceil, "any", False),
    ("exp", np.exp, "any", True),
    ("exp2", np.exp2, "any", True),
    ("log", np.log, "pos", True),
    ("log1p", np.log1p, "pos", True),
    ("expm1", np.expm1, "any", True),
    ("tanh", np.tanh, "any", True),
    ("logistic", lambda x: 1 / (1 + np.exp(-x)), "any", True),
    ("sin", np.sin, "any", True),
    ("cos", np.cos, "any", True),
    ("tan", np.tan, "any", True),
    ("asin", np.arcsin, "unit", True),
    ("acos", np.arccos, "unit", True),
    ("atan", np.arctan, "any", True),
    ("sinh", np.sinh, "any", True),
    ("cosh", np.cosh, "any", True),
    ("asinh", np.arcsinh, "any", True),
    ("acosh", np.arccosh, "above_one", True),
    ("atanh", np.arctanh, "unit", True),
    ("sqrt", np.sqrt, "pos", True),
    ("rsqrt", lambda x: 1 / np.sqrt(x), "pos", True),
    ("cbrt", np.cbrt, "any", False),
    ("abs", np.abs, "any", True),
]
UNARY_NAMES = [u[0] for u in UNARY]


@pytest.mark.parametrize("name, reference, domain, has_complex", UNARY, ids=UNARY_NAMES)
def test_unary_float32_full_check(name, reference, domain, has_complex):
    check(getattr(lax, name), [DOMAINS[domain].astype(np.float32)], reference)


@pytest.mark.parametrize("dtype", [F64, F16, BF16], ids=str)
@pytest.mark.parametrize("name, reference, domain, has_complex", UNARY, ids=UNARY_NAMES)
def test_unary_other_float_dtypes(name, reference, domain, has_complex, dtype):
    check_in_dtype(getattr(lax, name), [DOMAINS[domain]], reference, dtype)


@pytest.mark.parametrize("name, reference, domain, has_complex",
                         [u for u in UNARY if u[3]], ids=[u[0] for u in UNARY if u[3]])
def test_unary_complex64(name, reference, domain, has_complex):
    z = DOMAINS[domain] + 0.25j * OTHER
    out_dtype = F32 if name == "abs" else C64
    out = getattr(lax, name)(z.astype(C64))
    assert np.asarray(out).dtype == out_dtype
    np.testing.assert_allclose(np.asarray(out), reference(z.astype(C64).astype(np.complex128)),
                               rtol=1e-5, atol=1e-6)
    check_jit_matches_eager(getattr(lax, name), [z.astype(C64)])


@pytest.mark.parametrize("name", ["sin", "exp", "log", "tanh", "sqrt", "asinh"])
def test_holomorphic_complex_derivatives(name):
    # The JVP of a holomorphic f multiplies by f'(z): compare with central differences
    # along a complex direction.
    fun = getattr(lax, name)
    z = (POS + 0.5j * OTHER).astype(np.complex128)
    t = (OTHER - 0.3j * ANY).astype(np.complex128)
    with lc.enable_x64():
        _, tangent = lc.jvp(fun, [z], [t])
        h = 1e-6
        numerical = (np.asarray(fun(z + h * t)) - np.asarray(fun(z - h * t))) / (2 * h)
    np.testing.assert_allclose(np.asarray(tangent), numerical, rtol=1e-7, atol=1e-8)


def test_integer_unary_values():
    x = np.array([-7, 0, 3, 12], np.int32)
    np.testing.assert_array_equal(lax.neg(x), -x)
    np.testing.assert_array_equal(lax.sign(x), np.sign(x))
    np.testing.assert_array_equal(lax.abs(x), np.abs(x))
    u = np.array([0, 1, 200], np.uint8)
    np.testing.assert_array_equal(lax.sign(u), np.sign(u))
    np.testing.assert_array_equal(lax.neg(u), (-u.astype(np.int64)).astype(np.uint8))
    with lc.enable_x64():
        big = np.array([-(2**40), 2**40 + 1], np.int64)
        np.testing.assert_array_equal(lax.neg(big), -big)
        np.testing.assert_array_equal(lax.sign(big), np.sign(big))


def test_sign_of_special_floats():
    x = np.array([-2.0, -0.0, 0.0, 3.0, -np.inf, np.nan], np.float32)
    out = np.asarray(lax.sign(x))
    np.testing.assert_array_equal(out, np.array([-1, -0.0, 0, 1, -1, np.nan], np.float32))
    assert np.signbit(out[1]) and not np.signbit(out[2])


def test_sign_of_complex():
    z = np.array([3 + 4j, 0j, -2j], np.complex64)
    np.testing.assert_allclose(lax.sign(z), [0.6 + 0.8j, 0, -1j], rtol=1e-6)


@pytest.mark.parametrize("dtype", [F32, F16, BF16, F64], ids=str)
def test_round_both_methods(dtype):
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 2.4, -2.6])
    away = np.array([1, 2, 3, -1, -3, 2, -3])
    even = np.array([0, 2, 2, -0.0, -2, 2, -3])
    with lc.enable_x64(on_x64(dtype)):
        xs = x.astype(dtype)
        for method, expected in ((lax.RoundingMethod.AWAY_FROM_ZERO, away),
                                 (lax.RoundingMethod.TO_NEAREST_EVEN, even), (1, even)):
            out = lax.round(xs, method)
            assert np.asarray(out).dtype == np.dtype(dtype)
            np.testing.assert_array_equal(np.asarray(out).astype(np.float64), expected)
        np.testing.assert_array_equal(np.asarray(lax.round(xs)).astype(np.float64), away)


def test_round_check():
    check(lambda x: lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
          [ANY.astype(np.float32)], np.round)


@pytest.mark.parametrize("dtype", [F32, F16, BF16, F64], ids=str)
def test_is_finite(dtype):
    x = np.array([1.0, -np.inf, np.inf, np.nan, 0.0, -3.5])
    with lc.enable_x64(on_x64(dtype)):
        out = lax.is_finite(x.astype(dtype))
    assert np.asarray(out).dtype == np.dtype(bool)
    np.testing.assert_array_equal(out, np.isfinite(x))


def test_is_finite_check():
    check(lax.is_finite, [ANY.astype(np.float32)], np.isfinite, diff_argnums=None)


@pytest.mark.parametrize("dtype", [F32, F64], ids=str)
def test_exp2_is_exact_at_integers(dtype):
    n = np.array([-20.0, -1.0, 0.0, 3.0, 10.0, 100.0])
    with lc.enable_x64(on_x64(dtype)):
        np.testing.assert_array_equal(lax.exp2(n.astype(dtype)), np.exp2(n).astype(dtype))


def test_abs_of_complex_derivatives():
    # d|z| = Re(conj(z) dz) / |z|; the VJP (JAX's convention: transpose, no conjugate)
    # of a real cotangent c is c conj(z) / |z|; at z = 0 both are taken as 0.
    z = np.complex64(3 + 4j)
    _, tangent = lc.jvp(lax.abs, [z], [np.complex64(1j)])
    np.testing.assert_allclose(tangent, 0.8, rtol=1e-6)
    (g,) = lc.vjp(lax.abs, z)[1](np.float32(1))
    np.testing.assert_allclose(g, 0.6 - 0.8j, rtol=1e-6)
    (g,) = lc.vjp(lax.abs, np.complex64(0))[1](np.float32(1))
    assert complex(g) == 0
    check_derivatives(lambda x, y: lax.abs(lax.complex(x, y)), [ANY, OTHER], diff_argnums=(0, 1))


def test_abs_real_dtypes():
    for dtype in (np.int8, np.int32, np.float16):
        x = np.array([-3, 0, 5], dtype)
        out = lax.abs(x)
        assert np.asarray(out).dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out, np.abs(x))
    with lc.enable_x64():
        assert np.asarray(lax.abs(np.complex128(3 + 4j))).dtype == np.float64


# ---------------------------------------------------------------------------
# Binary arithmetic.

BINARY = [
    # name, reference, x, y, derivative arguments
    ("add", np.add, ANY, OTHER, (0, 1)),
    ("sub", np.subtract, ANY, OTHER, (0, 1)),
    ("mul", np.multiply, ANY, OTHER, (0, 1)),
    ("div", np.divide, ANY, OTHER, (0, 1)),
    ("rem", np.fmod, ANY * 3, OTHER, (0, 1)),
    ("pow", np.power, POS, OTHER, (0, 1)),
    ("max", np.maximum, ANY, OTHER, (0, 1)),
    ("min", np.minimum, ANY, OTHER, (0, 1)),
    ("atan2", np.arctan2, ANY, OTHER, (0, 1)),
    ("nextafter", np.nextafter, ANY, OTHER, None),
]
BINARY_NAMES = [b[0] for b in BINARY]


@pytest.mark.parametrize("name, reference, x, y, diff", BINARY, ids=BINARY_NAMES)
def test_binary_float32_full_check(name, reference, x, y, diff):
    check(getattr(lax, name), [x.astype(np.float32), y.astype(np.float32)], reference,
          diff_argnums=diff)


@pytest.mark.parametrize("dtype", [F64, F16, BF16], ids=str)
@pytest.mark.parametrize("name, reference, x, y, diff", BINARY, ids=BINARY_NAMES)
def test_binary_other_float_dtypes(name, reference, x, y, diff, dtype):
    if name == "nextafter":  # one ulp of the dtype itself: compare in that dtype
        with lc.enable_x64(on_x64(dtype)):
            xs, ys = x.astype(dtype), y.astype(dtype)
            np.testing.assert_array_equal(lax.nextafter(xs, ys), np.nextafter(xs, ys))
        return
    check_in_dtype(getattr(lax, name), [x, y], reference, dtype)


@pytest.mark.parametrize("name, reference", [
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide),
    ("pow", np.power),
])
def test_binary_complex64(name, reference):
    x, y = COMPLEX.astype(C64), (OTHER - 0.5j * POS).astype(C64)
    out = getattr(lax, name)(x, y)
    assert np.asarray(out).dtype == C64
    np.testing.assert_allclose(out, reference(x.astype(np.complex128), y.astype(np.complex128)),
                               rtol=2e-6)


INT_DTYPES = [np.dtype(t) for t in (np.int8, np.int32, np.uint8, np.uint32, np.int64)]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_integer_arithmetic(dtype):
    signed = dtype.kind == "i"
    x = np.array([7, 9, 0, 100, 5, 13]) * (np.array([1, -1, 1, -1, 1, -1]) if signed else 1)
    y = np.array([2, 4, 3, 7, 5, 1]) * (np.array([1, 1, -1, -1, 1, -1]) if signed else 1)
    x, y = x.astype(dtype), y.astype(dtype)
    with lc.enable_x64(on_x64(dtype)):
        for name, reference in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                                ("max", np.maximum), ("min", np.minimum)):
            out = getattr(lax, name)(x, y)
            assert np.asarray(out).dtype == dtype
            np.testing.assert_array_equal(out, reference(x, y))
        # Integer division rounds toward zero and rem takes the sign of the dividend (C).
        wide_x, wide_y = x.astype(np.int64), y.astype(np.int64)
        quotient = np.trunc(wide_x / wide_y).astype(np.int64)
        np.testing.assert_array_equal(lax.div(x, y), quotient.astype(dtype))
        np.testing.assert_array_equal(lax.rem(x, y), (wide_x - quotient * wide_y).astype(dtype))
        np.testing.assert_array_equal(lax.rem(x, y), np.fmod(x, y))
        check_jit_matches_eager(lax.div, [x, y])
        check_vmap(lax.rem, [x, y])


def test_integer_division_rounds_toward_zero():
    x = np.array([-7, 7, -7, 7, -1, 1], np.int32)
    y = np.array([2, -2, -2, 2, 3, -3], np.int32)
    np.testing.assert_array_equal(lax.div(x, y), [-3, -3, 3, 3, 0, 0])
    np.testing.assert_array_equal(lax.rem(x, y), [-1, 1, -1, 1, -1, 1])


def test_float_rem_has_the_sign_of_the_dividend():
    x = np.array([-7.5, 7.5, -7.5, 7.5], np.float32)
    y = np.array([2.0, -2.0, -2.0, 2.0], np.float32)
    np.testing.assert_array_equal(lax.rem(x, y), [-1.5, 1.5, -1.5, 1.5])


@pytest.mark.parametrize("y", [0, 1, 2, 3, 7, -1, -2, -3])
def test_integer_pow_float(y):
    x = POS.astype(np.float32)
    check(lambda x: lax.integer_pow(x, y), [x], lambda x: x ** float(y),
          rtol=1e-5 if abs(y) > 3 else None, vmap=y in (3, -2))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int8], ids=str)
def test_integer_pow_integers(dtype):
    x = np.array([0, 1, 2, 3], dtype)
    for y in (0, 1, 2, 5):
        out = lax.integer_pow(x, y)
        assert np.asarray(out).dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out, (x.astype(np.int64) ** y).astype(dtype))


def test_integer_pow_zero_exponent_of_zero_is_one_with_zero_gradient():
    np.testing.assert_array_equal(lax.integer_pow(np.float32(0), 0), 1)
    assert float(lc.grad(lambda x: lax.integer_pow(x, 0))(np.float32(0))) == 0
    assert float(lc.grad(lambda x: lax.integer_pow(x, 1))(np.float32(0))) == 1


def test_integer_pow_complex():
    z = COMPLEX.astype(C64)
    np.testing.assert_allclose(lax.integer_pow(z, 3), z.astype(np.complex128) ** 3, rtol=1e-5)
    np.testing.assert_allclose(lax.integer_pow(z, -2), z.astype(np.complex128) ** -2, rtol=1e-5)


def test_integer_pow_rejects_negative_powers_of_integers():
    with pytest.raises(TypeError, match="integer_pow cannot raise integers"):
        lax.integer_pow(np.array([2], np.int32), -1)


def test_square():
    check(lax.square, [ANY.astype(np.float32)], np.square)


def test_pow_derivatives_at_zero():
    # d/dx x**y at x = 0, y = 0 is 0, and d/dy x**y at x = 0 is 0 (0 * log 0 taken as 0).
    gx = lc.grad(lax.pow, argnums=0)(np.float32(0), np.float32(0))
    gy = lc.grad(lax.pow, argnums=1)(np.float32(0), np.float32(2))
    assert float(gx) == 0 and float(gy) == 0
    assert float(lc.grad(lax.pow, argnums=0)(np.float32(0), np.float32(2))) == 0
    assert float(lc.grad(lax.pow, argnums=0)(np.float32(2), np.float32(3))) == 12


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_gradients_split_at_ties(name):
    fun = getattr(lax, name)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    y = np.array([1.0, 1.0, 4.0], np.float32)
    gx, gy = lc.grad(lambda a, b: lax.reduce_sum(fun(a, b), (0,)), argnums=(0, 1))(x, y)
    wins_x = (x > y) if name == "max" else (x < y)
    expected_x = np.where(x == y, 0.5, wins_x.astype(np.float32))
    np.testing.assert_array_equal(gx, expected_x)
    np.testing.assert_array_equal(gy, 1 - expected_x)
    # max(x, x) has derivative 1 in x: both halves come back to the same input.
    assert float(lc.grad(lambda a: fun(a, a))(np.float32(2.0))) == 1.0


def test_max_min_of_bool_and_nan():
    a, b = np.array([True, False, False]), np.array([False, False, True])
    np.testing.assert_array_equal(lax.max(a, b), a | b)
    np.testing.assert_array_equal(lax.min(a, b), a & b)
    x = np.array([np.nan, 1.0], np.float32)
    y = np.array([1.0, np.nan], np.float32)
    assert np.all(np.isnan(lax.max(x, y))) and np.all(np.isnan(lax.min(x, y)))


def test_atan2_quadrants():
    x = np.array([1.0, 1.0, -1.0, -1.0, 0.0, 0.0], np.float32)
    y = np.array([1.0, -1.0, -1.0, 1.0, -1.0, 1.0], np.float32)
    np.testing.assert_allclose(lax.atan2(x, y), np.arctan2(x, y), rtol=1e-6)


def test_nextafter_steps_one_ulp():
    x = np.array([1.0, 1.0, 0.0, -0.0, np.inf], np.float32)
    y = np.array([2.0, 0.0, 1.0, -1.0, 0.0], np.float32)
    np.testing.assert_array_equal(lax.nextafter(x, y), np.nextafter(x, y))


# ---------------------------------------------------------------------------
# Comparisons.

COMPARISONS = [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less),
               ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)]


@pytest.mark.parametrize("name, reference", COMPARISONS, ids=[c[0] for c in COMPARISONS])
@pytest.mark.parametrize("dtype", [F32, F64, F16, BF16, np.dtype(np.int32),
                                   np.dtype(np.uint8), np.dtype(np.int64), np.dtype(bool)],
                         ids=str)
def test_comparison_values(name, reference, dtype):
    if dtype == np.dtype(bool):
        x = np.array([True, True, False, False])
        y = np.array([True, False, True, False])
    elif dtype.kind in "iu":
        x = np.array([0, 3, 200, 7]).astype(dtype)
        y = np.array([1, 3, 100, 250]).astype(dtype)
    else:
        x = np.array([1.0, np.nan, np.nan, 2.0, -np.inf, 0.0, -0.0]).astype(dtype)
        y = np.array([1.0, np.nan, 1.0, np.inf, -np.inf, -0.0, 1.0]).astype(dtype)
    with lc.enable_x64(on_x64(dtype)), np.errstate(invalid="ignore"):
        out = getattr(lax, name)(x, y)
        assert np.asarray(out).dtype == np.dtype(bool)
        np.testing.assert_array_equal(out, reference(x, y))
        check_jit_matches_eager(getattr(lax, name), [x, y])


@pytest.mark.parametrize("name, reference", COMPARISONS[:2], ids=["eq", "ne"])
def test_complex_equality(name, reference):
    x = np.array([1 + 1j, 1 + 1j, np.nan], np.complex64)
    y = np.array([1 + 1j, 1 - 1j, np.nan], np.complex64)
    np.testing.assert_array_equal(getattr(lax, name)(x, y), reference(x, y))


def test_comparisons_are_flat_and_batch():
    check(lax.lt, [ANY.astype(np.float32), OTHER.astype(np.float32)], np.less,
          diff_argnums=None)
    _, tangent = lc.jvp(lambda x: lax.convert_element_type(lax.gt(x, 0.0), np.float32),
                        [ANY.astype(np.float32)], [np.ones((2, 3), np.float32)])
    np.testing.assert_array_equal(tangent, 0)


@pytest.mark.parametrize("name", ["lt", "le", "gt", "ge"])
def test_ordering_rejects_complex(name):
    z = np.array([1j], np.complex64)
    with pytest.raises(TypeError, match=f"{name} does not accept dtype complex64"):
        getattr(lax, name)(z, z)


# ---------------------------------------------------------------------------
# Selection and clamping.


def test_select_n_bool_which():
    which = np.array([[True, False, True], [False, False, True]])
    a, b = ANY.astype(np.float32), OTHER.astype(np.float32)
    check(lax.select_n, [which, a, b], lambda w, a, b: np.where(w, b, a), diff_argnums=(1, 2))
    np.testing.assert_array_equal(lax.select(which, a, b), np.where(which, a, b))


def test_select_n_int32_which():
    which = np.array([[0, 1, 2], [2, 1, 0]], np.int32)
    cases = [ANY.astype(np.float32), OTHER.astype(np.float32), POS.astype(np.float32)]
    check(lax.select_n, [which, *cases], lambda w, *cs: np.choose(w, cs), diff_argnums=(1, 2, 3))


def test_select_n_many_cases():
    which = np.arange(7, dtype=np.int32)
    cases = [np.full(7, k, np.int32) for k in range(7)]
    np.testing.assert_array_equal(lax.select_n(which, *cases), np.arange(7))
    np.testing.assert_array_equal(lax.select_n(np.zeros(7, np.int32), cases[3]), cases[3])


@pytest.mark.parametrize("which", [np.bool_(True), np.int32(2)], ids=["bool", "int32"])
def test_select_n_scalar_which(which):
    cases = [ANY.astype(np.float32), OTHER.astype(np.float32), POS.astype(np.float32)]
    cases = cases[:2] if which.dtype == bool else cases
    out = lax.select_n(which, *cases)
    np.testing.assert_array_equal(out, cases[int(which)])
    check(lax.select_n, [which, *cases], lambda w, *cs: cs[int(w)],
          diff_argnums=tuple(range(1, len(cases) + 1)))


def test_select_n_gradient_routes_to_the_chosen_case():
    which = np.array([True, False])
    ga, gb = lc.grad(lambda a, b: lax.reduce_sum(lax.select_n(which, a, b), (0,)),
                     argnums=(0, 1))(np.ones(2, np.float32), np.ones(2, np.float32))
    np.testing.assert_array_equal(ga, [0, 1])
    np.testing.assert_array_equal(gb, [1, 0])


def test_select_n_errors():
    a = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="boolean or int32"):
        lax.select_n(np.ones(3, np.float32), a, a)
    with pytest.raises(TypeError, match="at most two cases"):
        lax.select_n(np.ones(3, bool), a, a, a)
    with pytest.raises(TypeError, match="same dtypes"):
        lax.select_n(np.ones(3, bool), a, a.astype(np.float16))
    with pytest.raises(TypeError, match="scalar or have the cases' shape"):
        lax.select_n(np.ones(2, bool), a, a)
    with pytest.raises(ValueError, match="at least one case"):
        lax.select_n(np.ones(3, bool))


def test_clamp_scalar_bounds():
    x = np.array([[-2.0, 0.3, 1.7], [0.9, -0.1, 5.0]], np.float32)
    check(lax.clamp, [np.float32(-0.5), x, np.float32(1.5)],
          lambda lo, x, hi: np.clip(x, lo, hi), diff_argnums=(0, 1, 2))


def test_clamp_array_bounds():
    x = np.array([[-2.0, 0.3, 1.7], [0.9, -0.1, 5.0]], np.float32)
    lo = np.array([[-1.0, 0.5, 0.0], [0.0, 0.0, 0.0]], np.float32)
    hi = np.array([[1.0, 1.0, 1.0], [2.0, 0.5, 4.0]], np.float32)
    check(lax.clamp, [lo, x, hi], lambda lo, x, hi: np.clip(x, lo, hi), diff_argnums=(0, 1, 2))


def test_clamp_integers_and_python_scalars():
    x = np.array([-5, 3, 12], np.int32)
    np.testing.assert_array_equal(lax.clamp(np.int32(0), x, np.int32(10)), [0, 3, 10])
    np.testing.assert_array_equal(lax.clamp(0.0, np.array([-1.0, 2.0], np.float32), 1.0),
                                  [0.0, 1.0])


def test_clamp_gradients_go_to_the_active_bound():
    x = np.array([-2.0, 0.3, 5.0], np.float32)
    g_lo, g_x, g_hi = lc.grad(lambda lo, x, hi: lax.reduce_sum(lax.clamp(lo, x, hi), (0,)),
                              argnums=(0, 1, 2))(np.float32(-1), x, np.float32(1))
    assert float(g_lo) == 1 and float(g_hi) == 1
    np.testing.assert_array_equal(g_x, [0, 1, 0])


def test_clamp_errors():
    x = np.ones(3, np.float32)
    with pytest.raises(TypeError, match="scalars or have the shape of x"):
        lax.clamp(np.zeros(2, np.float32), x, np.float32(1))
    with pytest.raises(TypeError, match="same dtypes"):
        lax.clamp(np.float16(0), x, np.float32(1))


# ---------------------------------------------------------------------------
# Logic and bits.

LOGIC = [("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or),
         ("bitwise_xor", np.bitwise_xor)]
BIT_DTYPES = [np.dtype(t) for t in (bool, np.int8, np.int32, np.uint8, np.uint32, np.int64)]


@pytest.mark.parametrize("dtype", BIT_DTYPES, ids=str)
def test_logic(dtype):
    if dtype == np.dtype(bool):
        x, y = np.array([True, True, False, False]), np.array([True, False, True, False])
    else:
        x = np.array([0b1100, -1 if dtype.kind == "i" else 255, 0, 77]).astype(dtype)
        y = np.array([0b1010, 5, 9, 77]).astype(dtype)
    with lc.enable_x64(on_x64(dtype)):
        for name, reference in LOGIC:
            out = getattr(lax, name)(x, y)
            assert np.asarray(out).dtype == dtype
            np.testing.assert_array_equal(out, reference(x, y))
        np.testing.assert_array_equal(lax.bitwise_not(x), np.invert(x))
        check_jit_matches_eager(lax.bitwise_xor, [x, y])
        check_vmap(lax.bitwise_and, [x, y])


def test_logic_primitive_names():
    x = np.array([True, False])
    jaxpr = str(lc.make_jaxpr(lambda x: lax.bitwise_not(lax.bitwise_and(x, x)))(x))
    assert "not" in jaxpr and "and" in jaxpr


def unsigned_view(x):
    return x.view(np.dtype(f"uint{8 * x.dtype.itemsize}"))


@pytest.mark.parametrize("dtype", [np.dtype(t) for t in (np.int8, np.int32, np.uint8,
                                                           np.uint32, np.int64)], ids=str)
def test_population_count_and_clz(dtype):
    bits = 8 * dtype.itemsize
    x = np.array([0, 1, 5, 64, -1 if dtype.kind == "i" else 2 ** bits - 1]).astype(dtype)
    ones = [bin(int(v)).count("1") for v in unsigned_view(x)]
    leading = [bits - int(v).bit_length() for v in unsigned_view(x)]
    with lc.enable_x64(on_x64(dtype)):
        popcount, clz = lax.population_count(x), lax.clz(x)
        check_vmap(lax.clz, [x])
    assert np.asarray(popcount).dtype == dtype and np.asarray(clz).dtype == dtype
    np.testing.assert_array_equal(popcount, ones)
    np.testing.assert_array_equal(clz, leading)


@pytest.mark.parametrize("dtype", [np.dtype(t) for t in (np.int8, np.int32, np.uint8,
                                                           np.uint32)], ids=str)
def test_shifts(dtype):
    bits = 8 * dtype.itemsize
    x = np.array([1, 3, -8 if dtype.kind == "i" else 200, 77, 5, 9]).astype(dtype)
    s = np.array([0, 1, 2, bits - 1, bits, bits + 3]).astype(dtype)
    in_range = s.astype(np.int64) < bits
    unsigned = unsigned_view(x)
    left = np.where(in_range, np.left_shift(x, np.minimum(s, bits - 1)), 0).astype(dtype)
    logical = np.where(in_range, np.right_shift(unsigned, np.minimum(s, bits - 1)
                                                .astype(unsigned.dtype)), 0).view(dtype)
    # XLA: shifting by the width or more gives 0 (all sign bits for arithmetic shifts).
    # An arithmetic shift copies the top bit down, for unsigned types too.
    signed = x.view(np.dtype(f"int{bits}"))
    arithmetic = np.where(in_range, np.right_shift(signed, np.minimum(s, bits - 1)),
                          np.where(signed < 0, -1, 0)).astype(signed.dtype).view(dtype)
    np.testing.assert_array_equal(lax.shift_left(x, s), left)
    np.testing.assert_array_equal(lax.shift_right_logical(x, s), logical)
    np.testing.assert_array_equal(lax.shift_right_arithmetic(x, s), arithmetic)
    check_vmap(lax.shift_right_logical, [x, s])


@SETTINGS
@given(st.lists(st.integers(-2 ** 31, 2 ** 31 - 1), min_size=4, max_size=4),
       st.lists(st.integers(0, 31), min_size=4, max_size=4))
def test_shifts_match_numpy_in_range(values, shifts):
    x, s = np.array(values, np.int32), np.array(shifts, np.int32)
    np.testing.assert_array_equal(lax.shift_left(x, s), np.left_shift(x, s))
    np.testing.assert_array_equal(lax.shift_right_arithmetic(x, s), np.right_shift(x, s))
    np.testing.assert_array_equal(lax.shift_right_logical(x, s),
                                  np.right_shift(x.view(np.uint32), s.view(np.uint32))
                                  .view(np.int32))


FLOATS = st.floats(width=32, allow_nan=True, allow_infinity=True)


@SETTINGS
@given(st.lists(FLOATS, min_size=4, max_size=4), st.lists(FLOATS, min_size=4, max_size=4))
def test_exactly_rounded_float_ops_match_numpy(xs, ys):
    # IEEE add, sub, mul, div, max, min and comparisons are exact: bitwise equal to NumPy
    # (XLA on CPU keeps subnormals off, so those are flushed on both sides).
    x, y = np.array(xs, np.float32), np.array(ys, np.float32)
    tiny = np.finfo(np.float32).tiny
    x, y = (np.where(np.abs(v) < tiny, np.float32(0), v) for v in (x, y))
    with np.errstate(all="ignore"):
        for name, reference in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                                ("div", np.divide), ("max", np.maximum), ("min", np.minimum)):
            expected = reference(x, y)
            out = np.asarray(getattr(lax, name)(x, y))
            normal = ~(np.abs(expected) < tiny)
            np.testing.assert_array_equal(out[normal], expected[normal])
        for name, reference in COMPARISONS:
            np.testing.assert_array_equal(getattr(lax, name)(x, y), reference(x, y))


@SETTINGS
@given(st.lists(st.integers(-1000, 1000), min_size=4, max_size=4),
       st.lists(st.integers(1, 50), min_size=4, max_size=4),
       st.lists(st.booleans(), min_size=4, max_size=4))
def test_div_rem_identity(values, divisors, negate):
    x = np.array(values, np.int32)
    y = np.where(negate, -1, 1).astype(np.int32) * np.array(divisors, np.int32)
    q, r = np.asarray(lax.div(x, y)), np.asarray(lax.rem(x, y))
    np.testing.assert_array_equal(q * y + r, x)
    assert np.all((r == 0) | (np.sign(r) == np.sign(x)))
    assert np.all(np.abs(r) < np.abs(y))


def test_bit_ops_have_zero_derivatives():
    # x * popcount(int(x)): the integer path contributes nothing to the derivative.
    def f(x):
        bits = lax.population_count(lax.convert_element_type(x, np.int32))
        return lax.mul(x, lax.convert_element_type(bits, np.float32))
    x = np.array([3.5, 7.25], np.float32)
    _, tangent = lc.jvp(f, [x], [np.ones(2, np.float32)])
    np.testing.assert_array_equal(tangent, [2, 3])


# ---------------------------------------------------------------------------
# Complex parts.


def test_real_imag_conj_complex_values():
    z = COMPLEX.astype(C64)
    check(lax.real, [z], np.real, diff_argnums=None)
    check(lax.imag, [z], np.imag, diff_argnums=None)
    check(lax.conj, [z], np.conj, diff_argnums=None)
    x, y = ANY.astype(np.float32), OTHER.astype(np.float32)
    check(lax.complex, [x, y], lambda x, y: x + 1j * y, diff_argnums=None)
    out = lax.conj(x)
    assert np.asarray(out).dtype == C64
    np.testing.assert_array_equal(out, x.astype(C64))
    with lc.enable_x64():
        assert np.asarray(lax.real(np.complex128(1 + 2j))).dtype == np.float64
        assert np.asarray(lax.complex(np.float64(1), np.float64(2))).dtype == np.complex128


def test_complex_parts_transpose():
    # real, imag, complex, conj are linear; VJPs follow JAX's (non-conjugating) convention.
    z = np.array([1 + 2j, -3 + 0.5j], np.complex64)
    x, y = np.array([1.0, 2.0], np.float32), np.array([3.0, -1.0], np.float32)
    ct_real = np.array([1.0, 2.0], np.float32)
    (g,) = lc.vjp(lax.real, z)[1](ct_real)
    np.testing.assert_array_equal(g, ct_real.astype(C64))
    (g,) = lc.vjp(lax.imag, z)[1](ct_real)
    np.testing.assert_array_equal(g, -1j * ct_real.astype(C64))
    ct = np.array([1 + 1j, 2 - 1j], np.complex64)
    gx, gy = lc.vjp(lax.complex, x, y)[1](ct)
    np.testing.assert_array_equal(gx, ct.real)
    np.testing.assert_array_equal(gy, -ct.imag)
    (g,) = lc.vjp(lax.conj, z)[1](ct)
    np.testing.assert_array_equal(g, np.conj(ct))
    (g,) = lc.vjp(lax.conj, x)[1](ct)
    np.testing.assert_array_equal(g, ct.real)


def test_complex_parts_derivatives_through_real_functions():
    # f(x, y) = |x + iy|^2 through complex, conj, mul and real.
    def f(x, y):
        z = lax.complex(x, y)
        return lax.real(lax.mul(z, lax.conj(z)))
    check_derivatives(f, [ANY, OTHER], diff_argnums=(0, 1))
    check_derivatives(lambda x: lax.imag(lax.mul(lax.complex(x, x), lax.complex(x, OTHER))), [ANY])


def test_derivative_checks_of_real_to_complex_and_complex_to_real_functions():
    # check_derivatives compares real parts where the maps are only real-linear
    # (it used to compare a complex number with a real one and fail).
    check_derivatives(lambda x: lax.complex(x, lax.mul(x, x)), [ANY])
    check_derivatives(lambda x: lax.exp(lax.complex(OTHER, x)), [ANY])
    z = lax.complex(ANY, OTHER)
    check_derivatives(lax.abs, [z])
    check_derivatives(lax.conj, [z])
    check_derivatives(lambda z: lax.mul(z, lax.sin(z)), [z])


def test_complex_parts_reject_wrong_dtypes():
    with pytest.raises(TypeError, match="real does not accept dtype float32"):
        lax.real(np.float32(1))
    with pytest.raises(TypeError, match="complex does not accept dtype complex64"):
        lax.complex(np.complex64(1), np.complex64(1))
    # No complex dtype has 16-bit parts.
    for dtype in (F16, BF16):
        with pytest.raises(TypeError, match=f"float32 or float64 parts, got {dtype.name}"):
            lax.complex(np.ones(1, dtype), np.ones(1, dtype))
        with pytest.raises(TypeError, match=f"float32 or float64 parts, got {dtype.name}"):
            lax.conj(np.ones(1, dtype))


# ---------------------------------------------------------------------------
# Conversions.


def test_convert_float_to_int_truncates():
    x = np.array([-2.7, -0.5, 0.5, 1.9, 3.0], np.float32)
    out = lax.convert_element_type(x, np.int32)
    assert np.asarray(out).dtype == np.int32
    np.testing.assert_array_equal(out, [-2, 0, 0, 1, 3])
    np.testing.assert_array_equal(lax.convert_element_type(np.float32(200.9), np.uint8), 200)


def test_convert_complex_to_real_keeps_the_real_part():
    z = np.array([1.5 + 2j, -3 - 1j], np.complex64)
    out = lax.convert_element_type(z, np.float32)
    assert np.asarray(out).dtype == np.float32
    np.testing.assert_array_equal(out, [1.5, -3])
    np.testing.assert_array_equal(lax.convert_element_type(z, np.int32), [1, -3])


@pytest.mark.parametrize("dtype", [np.dtype(t) for t in (np.float32, np.float16, np.int32,
                                                           np.uint32, np.int8, np.uint8)],
                         ids=str)
def test_convert_to_bool_tests_nonzero(dtype):
    values = [0, 1, 3, 0] if dtype.kind == "u" else [0, -1, 3, 0]
    if dtype.kind == "f":
        values = [0.0, -0.5, np.nan, -0.0]
    x = np.array(values, dtype)
    out = lax.convert_element_type(x, bool)
    assert np.asarray(out).dtype == np.dtype(bool)
    np.testing.assert_array_equal(out, x != 0)


def test_convert_bool_to_numbers():
    b = np.array([True, False])
    for dtype in (np.float32, np.int32, np.uint8, np.complex64):
        np.testing.assert_array_equal(lax.convert_element_type(b, dtype), b.astype(dtype))


def test_convert_between_floats():
    x = np.array([1 / 3, 6e4, -2.5])
    for dtype in (np.float16, ml_dtypes.bfloat16):
        out = lax.convert_element_type(x.astype(np.float32), dtype)
        np.testing.assert_array_equal(np.asarray(out).astype(np.float64),
                                      x.astype(np.float32).astype(dtype).astype(np.float64))
    with lc.enable_x64():
        out = lax.convert_element_type(x, np.float32)
        np.testing.assert_array_equal(out, x.astype(np.float32))


def test_convert_canonicalizes_without_x64():
    out = lax.convert_element_type(np.float32(1), np.float64)
    assert np.asarray(out).dtype == np.float32
    assert np.asarray(lax.convert_element_type(np.int32(1), np.int64)).dtype == np.int32


def test_convert_weak_types():
    def aval(fun, *args):
        return lc.make_jaxpr(fun)(*args).out_avals[0]
    assert aval(lambda: lax.full((), 2.0)).weak_type
    strong = aval(lambda x: lax.convert_element_type(x, np.float32), 2.0)
    assert strong.dtype == np.float32 and not strong.weak_type
    assert aval(lambda x: lax.add(x, 2.0), np.float32(1)).weak_type is False
    assert aval(lambda: lax.add(lax.full((), 1.0), 2.0)).weak_type is True


def test_convert_derivatives():
    check(lambda x: lax.convert_element_type(x, np.complex64), [ANY.astype(np.float32)],
          lambda x: x.astype(np.complex64), diff_argnums=None)
    with lc.enable_x64():
        x = ANY.astype(np.float32)
        _, tangent = lc.jvp(lambda x: lax.convert_element_type(x, np.float64), [x],
                            [np.ones_like(x)])
        assert np.asarray(tangent).dtype == np.float64
        g = lc.grad(lambda x: lax.convert_element_type(x, np.float64))(np.float32(2))
        assert np.asarray(g).dtype == np.float32 and float(g) == 1
    # Through an integer the derivative is zero.
    g = lc.grad(lambda x: lax.convert_element_type(lax.convert_element_type(x, np.int32),
                                                   np.float32))(np.float32(2.5))
    assert float(g) == 0
    check_derivatives(lambda x: lax.real(lax.convert_element_type(x, np.complex128)), [ANY])
    check_vmap(lambda x: lax.convert_element_type(x, np.int32), [ANY.astype(np.float32)])


@pytest.mark.parametrize("src, dst", [
    (np.float32, np.int32), (np.int32, np.float32), (np.uint16, np.float16),
    (np.float16, np.int16), (np.float32, ml_dtypes.bfloat16), (np.uint32, np.int8),
    (np.float32, np.uint8),
], ids=lambda t: np.dtype(t).name)
def test_bitcast_convert_type(src, dst):
    src, dst = np.dtype(src), np.dtype(dst)
    x = np.array([[1.0, -2.5, 3.25], [0.0, 7.0, 1e-3]]).astype(src)
    if src.itemsize < dst.itemsize:
        x = np.arange(24).reshape(2, 3, dst.itemsize // src.itemsize).astype(src)
    expected = x.view(dst)
    if src.itemsize < dst.itemsize:
        expected = expected.reshape(x.shape[:-1])
    elif src.itemsize > dst.itemsize:
        expected = expected.reshape(*x.shape, src.itemsize // dst.itemsize)
    out = lax.bitcast_convert_type(x, dst)
    assert np.asarray(out).dtype == dst and np.shape(out) == expected.shape
    np.testing.assert_array_equal(np.asarray(out).view(np.uint8), expected.view(np.uint8))
    check_jit_matches_eager(lambda x: lax.bitcast_convert_type(x, dst), [x])
    check_vmap(lambda x: lax.bitcast_convert_type(x, dst), [x])


def test_bitcast_errors():
    with pytest.raises(TypeError, match="trailing axis of size 4"):
        lax.bitcast_convert_type(np.zeros((2, 3), np.uint8), np.float32)
    with pytest.raises(TypeError, match="cannot reinterpret bool"):
        lax.bitcast_convert_type(np.array([True]), np.uint8)
    with pytest.raises(TypeError, match="cannot reinterpret complex64"):
        lax.bitcast_convert_type(np.array([1j], np.complex64), np.float64)


def test_bitcast_canonicalizes_the_new_dtype():
    out = lax.bitcast_convert_type(np.array([1, 2], np.int32), np.float64)
    assert np.asarray(out).dtype == np.float32 and np.shape(out) == (2,)


@pytest.mark.parametrize("exponent_bits, mantissa_bits, dtype", [
    (8, 7, ml_dtypes.bfloat16), (5, 10, np.float16), (8, 23, np.float32),
])
def test_reduce_precision_matches_narrow_formats(exponent_bits, mantissa_bits, dtype):
    x = np.array([[1 / 3, 3.14159265, -2.71828], [1e-3, 100.7, 1.0000001]], np.float32)
    out = lax.reduce_precision(x, exponent_bits, mantissa_bits)
    assert np.asarray(out).dtype == np.float32
    np.testing.assert_array_equal(out, x.astype(dtype).astype(np.float32))


def test_reduce_precision_full_check_and_errors():
    x = ANY.astype(np.float32)
    check(lambda x: lax.reduce_precision(x, 8, 7), [x],
          lambda x: x.astype(ml_dtypes.bfloat16).astype(np.float32), diff_argnums=None)
    # It is linear (its transpose rounds the cotangent too), so exact formats are exact.
    check_derivatives(lambda x: lax.reduce_precision(x, 11, 52), [x])
    with pytest.raises(ValueError, match="exponent_bits >= 1"):
        lax.reduce_precision(x, 0, 3)
    with pytest.raises(TypeError, match="reduce_precision does not accept dtype int32"):
        lax.reduce_precision(np.int32(1), 8, 7)


# ---------------------------------------------------------------------------
# full, full_like.


def test_full():
    out = lax.full((2, 3), 1.5)
    assert np.asarray(out).dtype == np.float32 and out.aval.weak_type
    np.testing.assert_array_equal(out, np.full((2, 3), 1.5))
    out = lax.full((2,), 3, np.float16)
    assert np.asarray(out).dtype == np.float16 and not out.aval.weak_type
    assert np.asarray(lax.full((), True)).dtype == np.dtype(bool)
    assert np.shape(lax.full((0, 2), 1.0)) == (0, 2)
    np.testing.assert_array_equal(lax.full((2,), np.int8(7)), np.array([7, 7], np.int8))
    with pytest.raises(TypeError, match="scalar fill_value"):
        lax.full((2,), np.ones(2))
    with lc.enable_x64():
        assert np.asarray(lax.full((1,), 1.0, np.float64)).dtype == np.float64


def test_full_like():
    x = np.ones((2, 3), np.int32)
    out = lax.full_like(x, 3.7)
    assert np.asarray(out).dtype == np.int32
    np.testing.assert_array_equal(out, np.full((2, 3), 3))
    out = lax.full_like(x, 0.5, np.float16, (4,))
    assert np.asarray(out).dtype == np.float16 and np.shape(out) == (4,)
    np.testing.assert_array_equal(lax.zeros_like_array(x), np.zeros_like(x))
    weak = lc.make_jaxpr(lambda: lax.full_like(lax.full((), 1.0), 2.0))().out_avals[0]
    assert weak.weak_type
    check_vmap(lambda x: lax.add(x, lax.full_like(x, 2.0)), [ANY.astype(np.float32)])


# ---------------------------------------------------------------------------
# Errors and implicit broadcasting.


@pytest.mark.parametrize("name", ["sin", "exp", "log", "tanh", "sqrt", "floor", "round",
                                  "is_finite", "cbrt", "logistic"])
def test_float_functions_reject_integers(name):
    with pytest.raises(TypeError, match=f"{name} does not accept dtype int32"):
        getattr(lax, name)(np.array([1], np.int32))


@pytest.mark.parametrize("name, dtype", [
    ("add", bool), ("neg", bool), ("abs", np.uint8), ("cbrt", np.complex64),
    ("atan2", np.complex64), ("population_count", np.float32), ("bitwise_not", np.float32),
    ("shift_left", bool), ("rem", np.complex64), ("pow", np.int32),
])
def test_dtype_errors_name_the_primitive_and_dtype(name, dtype):
    dtype = np.dtype(dtype)
    prim_name = {"bitwise_not": "not", "population_count": "population_count"}.get(name, name)
    x = np.zeros(2, dtype)
    fun = getattr(lax, name)
    arity = 1 if name in ("neg", "abs", "cbrt", "population_count", "bitwise_not") else 2
    with pytest.raises(TypeError, match=f"{prim_name} does not accept dtype {dtype.name}"):
        fun(*[x] * arity)


def test_mismatched_dtypes():
    with pytest.raises(TypeError, match="add requires arguments to have the same dtypes"):
        lax.add(np.ones(2, np.float32), np.ones(2, np.float16))
    with pytest.raises(TypeError, match="same dtypes, got int32, float32"):
        lax.mul(np.ones(2, np.int32), np.ones(2, np.float32))
    with pytest.raises(TypeError, match="same dtypes"):
        lc.jit(lax.atan2)(np.ones(2, np.float32), np.ones(2, np.float16))


def test_incompatible_shapes():
    with pytest.raises(TypeError, match=r"add got incompatible shapes for broadcasting: "
                                        r"\(2,\), \(3,\)"):
        lax.add(np.ones(2, np.float32), np.ones(3, np.float32))
    with pytest.raises(TypeError, match=r"max: arrays must have the same number of "
                                        r"dimensions, got \{1, 2\}"):
        lax.max(np.ones((2, 3), np.float32), np.ones(3, np.float32))
    with pytest.raises(TypeError, match="incompatible shapes"):
        lc.jit(lax.sub)(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32))


def test_python_scalars_and_size_one_axes_broadcast():
    x = ANY.astype(np.float32)
    out = lax.add(x, 2.0)
    assert np.asarray(out).dtype == np.float32 and not out.aval.weak_type
    np.testing.assert_allclose(out, x + 2)
    np.testing.assert_allclose(lax.mul(3.0, x), 3 * x)
    np.testing.assert_allclose(lax.sub(x, np.float32(1)), x - 1)
    np.testing.assert_allclose(lax.div(x, np.ones((1, 3), np.float32) * 2), x / 2)
    np.testing.assert_array_equal(lax.lt(x, 0.0), x < 0)
    np.testing.assert_array_equal(lax.add(np.array([1, 2], np.int32), 3), [4, 5])
    np.testing.assert_allclose(lc.jit(lambda x: lax.pow(x, 2.0))(x), x ** 2, rtol=1e-6)
    check_vmap(lambda x: lax.mul(x, 2.0), [x])
    check_derivatives(lambda x: lax.max(x, 0.5), [x])


def test_weak_scalars_stay_weak():
    jaxpr = lc.make_jaxpr(lambda: lax.add(1.0, 2.0))()
    assert jaxpr.out_avals[0].weak_type


# ---------------------------------------------------------------------------
# Every primitive in a jitted, vmapped, differentiated composition.


def test_composition_of_many_primitives():
    def f(x, y):
        a = lax.mul(lax.sin(x), lax.exp(lax.neg(lax.square(y))))
        b = lax.atan2(lax.tanh(x), lax.add(lax.cosh(y), 1.0))
        c = lax.select(lax.gt(x, y), lax.log1p(lax.abs(x)), lax.rsqrt(lax.add(lax.abs(y), 1.0)))
        return lax.clamp(-1.0, lax.add(lax.add(a, b), c), 1.5)
    x, y = ANY.astype(np.float32), OTHER.astype(np.float32)
    # XLA fuses the jitted whole and may round differently from op-by-op: allclose only.
    np.testing.assert_allclose(lc.jit(f)(x, y), f(x, y), rtol=2e-6)
    np.testing.assert_allclose(lc.jit(lc.vmap(f))(x, y), f(x, y), rtol=2e-6)
    check_derivatives(f, [x, y], diff_argnums=(0, 1))
    check_vmap(f, [x, y])


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint32])
def test_integer_division_of_constants_by_zero_does_not_kill_the_process(dtype):
    # XLA folds constant integer division in C, where x / 0 and MIN / -1 trap
    # (SIGFPE); the lowering guards the divisor and keeps XLA's runtime results.
    info = np.iinfo(dtype)
    x = np.array([7, info.min, 9], dtype)
    y = np.array([0, -1 if info.min else 1, 2], dtype)
    quotient = lc.jit(lambda: lax.div(x, y))()
    remainder = lc.jit(lambda: lax.rem(x, y))()
    np.testing.assert_array_equal(np.asarray(quotient)[[0, 2]], [-1 if info.min else info.max, 4])
    np.testing.assert_array_equal(np.asarray(remainder)[[0, 2]], [7, 1])
    if info.min:
        assert np.asarray(quotient)[1] == info.min and np.asarray(remainder)[1] == 0
    # Eager (traced arguments, no folding) gives the same numbers.
    np.testing.assert_array_equal(np.asarray(lax.div(x, y)), np.asarray(quotient))
    np.testing.assert_array_equal(np.asarray(lax.rem(x, y)), np.asarray(remainder))
