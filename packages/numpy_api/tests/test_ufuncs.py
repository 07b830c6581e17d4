"""Elementwise functions against NumPy: values over several dtypes, JAX's dtype
results and weak types, broadcasting (and its errors), rank promotion,
gradients, vmap and jit."""

import warnings

import numpy as np
import pytest

import lamella.core as lc
from lamella import lax
from lamella.numpy import ufuncs as u

RNG = np.random.default_rng(0)
F32 = np.float32([-2.5, -1.0, -0.5, 0.0, 0.3, 0.5, 1.5, 2.5, 3.7])
I32 = np.int32([-7, -3, -1, 0, 1, 2, 5, 8, 9])
POS = np.float32([0.1, 0.5, 1.0, 2.0, 3.5])
UNIT = np.float32([-0.9, -0.5, 0.0, 0.25, 0.8])
C64 = np.complex64([1 + 2j, -3 + 0.5j, 0j, -1 - 1j, 2.5 - 4j])


def check(got, want, dtype=None, rtol=1e-5, atol=1e-6):
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype or np.asarray(want).dtype), (got.dtype, dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


# --- unary inexact functions: float32 values, and int32 becomes float32 --------------
UNARY_INEXACT = [
    ("sqrt", np.sqrt, POS), ("cbrt", np.cbrt, F32), ("exp", np.exp, F32),
    ("exp2", np.exp2, F32), ("expm1", np.expm1, F32), ("log", np.log, POS),
    ("log2", np.log2, POS), ("log10", np.log10, POS), ("log1p", np.log1p, POS),
    ("sin", np.sin, F32), ("cos", np.cos, F32), ("tan", np.tan, UNIT),
    ("arcsin", np.arcsin, UNIT), ("arccos", np.arccos, UNIT), ("arctan", np.arctan, F32),
    ("sinh", np.sinh, F32), ("cosh", np.cosh, F32), ("tanh", np.tanh, F32),
    ("arcsinh", np.arcsinh, F32), ("arccosh", np.arccosh, POS + 1),
    ("arctanh", np.arctanh, UNIT), ("deg2rad", np.deg2rad, F32),
    ("rad2deg", np.rad2deg, F32), ("radians", np.radians, F32),
    ("degrees", np.degrees, F32), ("sinc", np.sinc, F32), ("reciprocal", np.reciprocal, POS),
    ("rint", np.rint, F32),
]


@pytest.mark.parametrize("name, ref, data", UNARY_INEXACT, ids=[t[0] for t in UNARY_INEXACT])
def test_unary_inexact(name, ref, data):
    fn = getattr(u, name)
    check(fn(data), ref(data), np.float32, rtol=2e-5)
    ints = np.int32([0] if name in ("arcsin", "arccos", "arctanh", "tan") else [1, 2, 3])
    check(fn(ints), ref(ints.astype(np.float64)).astype(np.float32), np.float32, rtol=2e-5)


UNARY_SAME = [
    ("negative", np.negative), ("positive", np.positive), ("absolute", np.absolute),
    ("abs", np.abs), ("sign", np.sign), ("square", np.square), ("floor", np.floor),
    ("ceil", np.ceil), ("trunc", np.trunc),
]


@pytest.mark.parametrize("name, ref", UNARY_SAME, ids=[t[0] for t in UNARY_SAME])
@pytest.mark.parametrize("data", [F32, I32], ids=["f32", "i32"])
def test_unary_keeps_dtype(name, ref, data):
    check(getattr(u, name)(data), ref(data))


# --- binary arithmetic against NumPy -----------------------------------------------------
A_F = np.float32([-7.5, -3.0, 2.0, 5.25, 0.0, 9.0])
B_F = np.float32([2.0, -2.5, 0.5, -3.0, 4.0, 3.0])
A_I, B_I = np.int32([-7, -3, 2, 5, 0, 9]), np.int32([2, -2, 3, -3, 4, 3])

BINARY = [
    ("add", np.add), ("subtract", np.subtract), ("multiply", np.multiply),
    ("floor_divide", np.floor_divide), ("remainder", np.remainder), ("mod", np.mod),
    ("fmod", np.fmod), ("maximum", np.maximum), ("minimum", np.minimum),
    ("fmax", np.fmax), ("fmin", np.fmin),
]


@pytest.mark.parametrize("name, ref", BINARY, ids=[t[0] for t in BINARY])
@pytest.mark.parametrize("a, b", [(A_F, B_F), (A_I, B_I)], ids=["f32", "i32"])
def test_binary_same_dtype(name, ref, a, b):
    check(getattr(u, name)(a, b), ref(a, b))


BINARY_INEXACT = [
    ("true_divide", np.true_divide), ("divide", np.divide), ("arctan2", np.arctan2),
    ("hypot", np.hypot), ("logaddexp", np.logaddexp), ("logaddexp2", np.logaddexp2),
    ("copysign", np.copysign), ("heaviside", np.heaviside), ("float_power", np.float_power),
]


@pytest.mark.parametrize("name, ref", BINARY_INEXACT, ids=[t[0] for t in BINARY_INEXACT])
def test_binary_inexact(name, ref):
    a, b = (np.abs(A_F), B_F) if name == "float_power" else (A_F, B_F)
    check(getattr(u, name)(a, b), ref(a, b).astype(np.float32))
    # JAX's rule: integer inputs give the default float (float32), not float64.
    a, b = (np.abs(A_I), B_I) if name == "float_power" else (A_I, B_I)
    check(getattr(u, name)(a, b), ref(a, b).astype(np.float32), np.float32)


def test_division_family_edge_cases():
    a = np.float32([np.inf, -np.inf, 1.0, -1.0, np.nan, 0.0])
    b = np.float32([2.0, 3.0, np.inf, np.inf, 1.0, -1.0])
    for name in ("floor_divide", "remainder", "fmod"):
        with np.errstate(all="ignore"):
            check(getattr(u, name)(a[2:], b[2:]), getattr(np, name)(a[2:], b[2:]))
    q, r = u.divmod(A_I, B_I)
    check(q, A_I // B_I)
    check(r, A_I % B_I)
    q, r = u.divmod(A_F, B_F)
    check(q, A_F // B_F)
    check(r, A_F % B_F)
    check(u.fmod(np.int32([5, -5]), np.int32([0, 0])), np.int32([0, 0]))
    check(u.floor_divide(np.uint8([7, 9]), np.uint8([2, 4])), np.uint8([3, 2]))
    check(u.remainder(np.uint8([7, 9]), np.uint8([2, 4])), np.uint8([1, 1]))


def test_power():
    check(u.power(A_I, np.int32([0, 1, 2, 3, 4, 5])), A_I ** np.int32([0, 1, 2, 3, 4, 5]))
    check(u.power(np.int32([0, 0, 2]), np.int32([0, 3, 10])), np.int32([1, 0, 1024]))
    check(u.power(A_I, 3), A_I ** 3)
    check(u.power(np.float16([1.5, 2]), 2), np.float16([2.25, 4]))
    check(u.power(POS, np.float32(-1.5)), POS ** np.float32(-1.5))
    check(u.power(POS, 2.5), POS ** 2.5, np.float32)
    check(u.power(np.float32(2.0), np.int32([-1, 2])), np.float32([0.5, 4]))
    with pytest.raises(TypeError, match="negative"):
        u.power(A_I, -1)


def test_bool_arithmetic_is_logical():
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    check(u.add(a, b), a + b)
    check(u.multiply(a, b), a * b)
    check(u.maximum(a, b), np.maximum(a, b))
    check(u.absolute(a), a)
    with pytest.raises(TypeError, match="subtract"):
        u.subtract(a, b)
    check(u.sqrt(a), np.sqrt(a).astype(np.float32))
    check(u.square(a), np.int32([1, 1, 0, 0]))


# --- comparisons, logic and bits ------------------------------------------------------------
COMPARISONS = ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal"]


@pytest.mark.parametrize("name", COMPARISONS)
def test_comparisons(name):
    check(getattr(u, name)(A_F, B_F), getattr(np, name)(A_F, B_F))
    check(getattr(u, name)(A_I, 2.0), getattr(np, name)(A_I, 2.0))
    assert not getattr(u, name)(1.0, 2.0).weak_type


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical(name):
    check(getattr(u, name)(A_I, B_F), getattr(np, name)(A_I, B_F))
    check(getattr(u, name)(A_I > 0, True), getattr(np, name)(A_I > 0, True))
    check(u.logical_not(A_F), np.logical_not(A_F))


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_])
def test_bitwise(dtype):
    a = np.array([0, 1, 5, 12, 7], dtype)
    b = np.array([3, 1, 6, 10, 0], dtype)
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        check(getattr(u, name)(a, b), getattr(np, name)(a, b))
    check(u.bitwise_not(a), np.bitwise_not(a))
    check(u.invert(a), np.invert(a))
    if dtype != np.bool_:
        s = np.array([0, 1, 2, 3, 4], dtype)
        check(u.left_shift(a, s), np.left_shift(a, s))
        check(u.right_shift(a, s), np.right_shift(a, s))
    with pytest.raises(TypeError, match="integer or boolean"):
        u.bitwise_and(F32, F32)


def test_signed_right_shift_is_arithmetic():
    check(u.right_shift(np.int32([-8, -1, 8]), 2), np.int32([-2, -1, 2]))


# --- complex -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["add", "multiply", "subtract", "true_divide"])
def test_complex_binary(name):
    other = C64[::-1] + 1
    check(getattr(u, name)(C64, other), getattr(np, name)(C64, other))


def test_complex_unary():
    check(u.absolute(C64), np.abs(C64))
    check(u.sign(C64), np.where(C64 == 0, 0, C64 / np.where(C64 == 0, 1, np.abs(C64))))
    for name in ("sqrt", "exp", "log", "real", "imag", "conj", "conjugate", "negative",
                 "square", "rint", "isnan", "isfinite", "isinf"):
        data = C64 + 0.1 if name == "log" else C64
        check(getattr(u, name)(data), getattr(np, name)(data), rtol=1e-4)
    check(u.angle(C64), np.angle(C64))
    check(u.angle(C64, deg=True), np.angle(C64, deg=True), rtol=1e-4)
    check(u.angle(A_I), np.angle(A_I).astype(np.float32))
    check(u.real(A_I), A_I)
    check(u.imag(A_F), np.zeros_like(A_F))
    check(u.round(C64 * 1.37, 1), np.round(C64 * 1.37, 1))
    with pytest.raises(TypeError, match="complex"):
        u.floor(C64)


# --- float64 under x64 ------------------------------------------------------------------------
def test_float64_under_x64():
    with lc.enable_x64():
        a, b = A_F.astype(np.float64), B_F.astype(np.float64)
        for name in ("add", "true_divide", "floor_divide", "remainder", "hypot", "logaddexp"):
            check(getattr(u, name)(a, b), getattr(np, name)(a, b), rtol=1e-12)
        check(u.true_divide(A_I, B_I), A_I / B_I, np.float64, rtol=1e-12)
        check(u.exp(a), np.exp(a), rtol=1e-12)
        check(u.nextafter(a, b), np.nextafter(a, b), rtol=0, atol=0)
        m, e = u.frexp(a)
        check(m, np.frexp(a)[0])
        check(e, np.frexp(a)[1].astype(np.int32))


# --- rounding, classification, bit manipulation -------------------------------------------------
def test_round():
    x = np.float32([0.5, 1.5, 2.5, -0.5, -2.5, 1.25, 123.456, -7.77])
    check(u.round(x), np.round(x))
    check(u.around(x, 1), np.round(x, 1))
    check(u.round(x, -1), np.round(x, -1))
    check(u.round(x.astype(np.float16), 2), np.round(x.astype(np.float16), 2), rtol=1e-3)
    check(u.round(A_I, 2), A_I)
    check(u.rint(A_I), A_I.astype(np.float32))
    with pytest.raises(NotImplementedError, match="decimals < 0"):
        u.round(A_I, -1)


def test_classification():
    x = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 2.0])
    for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit"):
        check(getattr(u, name)(x), getattr(np, name)(x))
        check(getattr(u, name)(A_I), getattr(np, name)(A_I))
    check(u.copysign(np.float32([1, 2, 3]), np.float32([-0.0, 0.0, -5])),
          np.float32([-1, 2, -3]))
    check(u.nan_to_num(x), np.nan_to_num(x))
    check(u.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0),
          np.nan_to_num(x, nan=1.0, posinf=2.0, neginf=-2.0))
    cx = np.complex64([complex(np.nan, np.inf), 1 + 2j])
    check(u.nan_to_num(cx), np.nan_to_num(cx))
    check(u.nan_to_num(A_I), A_I)
    check(u.maximum(x, np.float32(0)), np.maximum(x, np.float32(0)))
    check(u.fmin(x, np.float32(0)), np.fmin(x, np.float32(0)))


def test_nextafter_frexp_ldexp():
    # Subnormals are left out: XLA on CPU flushes them to zero (as in JAX).
    x = np.float32([0.0, 1.0, -3.5, 1e-30, -2e-38, np.inf, np.nan, 6e37])
    y = np.float32([1.0, 0.0, 10, -1, 1, 0, 0, np.inf])
    check(u.nextafter(x, y), np.nextafter(x, y), rtol=0, atol=0)
    m, e = u.frexp(x)
    check(m, np.frexp(x)[0], rtol=0, atol=0)
    check(e, np.frexp(x)[1].astype(np.int32))
    mant, ex = np.float32([0.5, -0.75, 1.0, 3.0, 1.0]), np.int32([4, 0, -120, 100, -126])
    check(u.ldexp(mant, ex), np.ldexp(mant, ex), rtol=0, atol=0)
    check(u.ldexp(*u.frexp(x)), x, rtol=0, atol=0)
    check(u.ldexp(np.float16([1.5]), 3), np.float16([12]))
    with pytest.raises(TypeError, match="integer"):
        u.ldexp(mant, mant)


def test_clip_where_isclose():
    check(u.clip(A_I, -2, 4), np.clip(A_I, -2, 4))
    check(u.clip(A_F, max=1.0), np.clip(A_F, None, 1.0))
    check(u.clip(A_I, 0.5), np.maximum(A_I, np.float32(0.5)), np.float32)
    check(u.where(A_I > 0, A_I, B_F), np.where(A_I > 0, A_I, B_F).astype(np.float32))
    check(u.where(A_I, 1, 0), np.where(A_I, 1, 0).astype(np.int32))
    check(u.where(np.array([[True], [False]]), F32[:3], 0.0),
          np.where([[True], [False]], F32[:3], 0.0).astype(np.float32))
    a = np.float32([1, 1, np.inf, np.inf, np.nan, 1e-9, 1])
    b = np.float32([1 + 1e-6, 1.1, np.inf, -np.inf, np.nan, 0, 2])
    check(u.isclose(a, b), np.isclose(a, b))
    check(u.isclose(a, b, equal_nan=True), np.isclose(a, b, equal_nan=True))
    check(u.isclose(a, b, rtol=0.2, atol=1.0), np.isclose(a, b, rtol=0.2, atol=1.0))
    check(u.isclose(np.int32([1, 5]), np.int32([2, 5]), atol=1), np.array([True, True]))
    check(u.isclose(C64, C64 + 1e-7), np.isclose(C64, C64 + 1e-7))
    assert bool(u.allclose(a[:2], a[:2])) and not bool(u.allclose(a, b))
    assert u.allclose(np.ones((2, 3)), 1.0).shape == ()


# --- promotion, weak types, broadcasting ---------------------------------------------------------
def test_weak_python_scalars_and_jax_dtypes():
    h = np.float16([1, 2])
    assert u.add(h, 2.0).dtype == np.float16
    assert u.multiply(np.int8([1]), 300).dtype == np.int8
    assert u.add(np.int32([1]), 2.5).dtype == np.float32
    assert u.true_divide(np.int32([1]), np.int32([2])).dtype == np.float32
    assert u.sqrt(np.int8([4])).dtype == np.float32
    assert u.add(np.int8([1]), np.uint8([1])).dtype == np.int16
    assert u.add(np.float32([1]), np.float64([1])).dtype == np.float32  # no implicit x64
    assert u.exp(1.0).weak_type and u.exp(1.0).dtype == np.float32
    assert not u.exp(np.float32(1.0)).weak_type
    assert u.add(1, 2).weak_type and u.add(1, 2).dtype == np.int32
    assert u.floor_divide(np.float16([7]), 2).dtype == np.float16


@pytest.mark.parametrize("sa, sb", [((2, 3), (3,)), ((1, 3), (2, 1)), ((2, 3), ()),
                                    ((), (4,)), ((0, 3), (1,))])
def test_broadcasting(sa, sb):
    a = RNG.standard_normal(sa).astype(np.float32)
    b = RNG.standard_normal(sb).astype(np.float32)
    check(u.add(a, b), a + b)
    check(u.where(a > 0, a, b), np.where(a > 0, a, b))
    check(u.hypot(a, 1.0), np.hypot(a, np.float32(1.0)))


def test_broadcast_error_names_both_shapes():
    with pytest.raises(ValueError, match=r"could not be broadcast together with shapes "
                                         r"\(2,3\) \(4,\)"):
        u.add(np.ones((2, 3)), np.ones(4))
    with pytest.raises(ValueError, match="broadcast"):
        u.where(np.ones(2, bool), np.ones(3), 0.0)


def test_rank_promotion_config():
    a, b = np.ones((2, 3), np.float32), np.ones(3, np.float32)
    old = lc.config.read("numpy_rank_promotion")
    try:
        lc.config.update("numpy_rank_promotion", "raise")
        with pytest.raises(ValueError, match="rank promotion"):
            u.add(a, b)
        check(u.add(a, 1.0), a + 1)  # scalars are always allowed
        lc.config.update("numpy_rank_promotion", "warn")
        with pytest.warns(UserWarning, match="rank promotion"):
            u.add(a, b)
    finally:
        lc.config.update("numpy_rank_promotion", old)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        u.add(a, b)


def test_non_array_input_is_rejected():
    with pytest.raises(TypeError, match="array-like"):
        u.add(None, 1)


# --- transformations -------------------------------------------------------------------------
def _numerical_grad(f, x, eps=1e-3):
    x = x.astype(np.float64)
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


GRAD_CASES = [
    ("sin", lambda x: u.sin(x), np.sin),
    ("logaddexp", lambda x: u.logaddexp(x, 0.5), lambda x: np.logaddexp(x, 0.5)),
    ("hypot", lambda x: u.hypot(x, 2.0), lambda x: np.hypot(x, 2.0)),
    ("sinc", lambda x: u.sinc(x), np.sinc),
    # (a kink-free base: abs's derivative at 0 is 1 as JAX's, unlike a central difference)
    ("power", lambda x: u.power(u.add(u.multiply(x, x), 1), 1.5), lambda x: (x * x + 1) ** 1.5),
    ("arctan2", lambda x: u.arctan2(x, 1.5), lambda x: np.arctan2(x, 1.5)),
    ("true_divide", lambda x: u.true_divide(1.0, u.add(x, 3.0)), lambda x: 1 / (x + 3)),
    ("ldexp", lambda x: u.ldexp(x, 3), lambda x: x * 8),
]


@pytest.mark.parametrize("name, f, ref", GRAD_CASES, ids=[t[0] for t in GRAD_CASES])
def test_gradients(name, f, ref):
    x = np.float32([-1.3, -0.4, 0.0, 0.7, 2.1])
    got = lc.grad(lambda v: lax.reduce_sum(f(v), (0,)))(x)
    want = _numerical_grad(lambda v: ref(v).sum(), x)
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name", ["add", "remainder", "logaddexp", "copysign", "where"])
def test_vmap_and_jit_agree(name):
    a = RNG.standard_normal((4, 3)).astype(np.float32)
    b = RNG.standard_normal(3).astype(np.float32)
    fn = (lambda x, y: u.where(u.greater(x, 0), x, y)) if name == "where" else getattr(u, name)
    eager = np.asarray(fn(a, b))
    np.testing.assert_allclose(np.asarray(lc.jit(fn)(a, b)), eager, rtol=1e-6)
    batched = lc.vmap(fn, in_axes=(0, None))(a, b)
    np.testing.assert_allclose(np.asarray(batched), np.stack([np.asarray(fn(r, b)) for r in a]),
                               rtol=1e-6)


def test_jit_power_and_frexp():
    x = np.int32([2, 3, -4])
    check(lc.jit(u.power)(x, np.int32([3, 2, 5])), x ** np.int32([3, 2, 5]))
    m, e = lc.jit(u.frexp)(F32)
    check(m, np.frexp(F32)[0])
    check(e, np.frexp(F32)[1].astype(np.int32))
