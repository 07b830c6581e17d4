"""Issue 13, numerics: numbers JAX defines where lamella used to differ, valid input it
used to refuse, and errors it used to leave unclear; each case was checked against
JAX 0.10.2 (the expected values below are JAX's).

Programs are few and small and jitted once at module level, so the file compiles
little; the one that used to abort the process runs in a subprocess.
"""

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp

# --- complex max/min/comparisons: lexicographic on (real, imag), as JAX -------------
# Parts from a small grid so that equal real parts (the imaginary tie-break) are common.
_PART = st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0])
_COMPLEX = st.builds(complex, _PART, _PART)
_PAIRS = st.lists(st.tuples(_COMPLEX, _COMPLEX), min_size=1, max_size=6)


def _key(z: complex) -> tuple[float, float]:
    return (z.real, z.imag)


@settings(max_examples=30, deadline=None)
@given(_PAIRS)
def test_complex_maximum_minimum_and_orderings_are_lexicographic(pairs):
    x = np.complex64([a for a, _ in pairs])
    y = np.complex64([b for _, b in pairs])
    np.testing.assert_array_equal(
        lnp.maximum(x, y), [a if _key(a) > _key(b) else b for a, b in zip(x, y)])
    np.testing.assert_array_equal(
        lnp.minimum(x, y), [a if _key(a) < _key(b) else b for a, b in zip(x, y)])
    for name, fn in [("less", np.less), ("less_equal", np.less_equal),
                     ("greater", np.greater), ("greater_equal", np.greater_equal)]:
        # NumPy orders complex numbers lexicographically too.
        np.testing.assert_array_equal(getattr(lnp, name)(x, y), fn(x, y), err_msg=name)
    np.testing.assert_array_equal(x < y, np.less(x, y))


def test_complex_max_of_zero_breaks_the_tie_on_the_imaginary_part():
    # Real parts equal (0): 0 has the larger imaginary part.
    assert complex(lnp.maximum(0 - 1j, 0)) == 0j
    assert complex(lnp.minimum(0 - 1j, 0)) == -1j
    assert complex(lax.max(np.complex64(-1j), np.complex64(0))) == 0j
    assert bool(lnp.array(1 + 1j) >= lnp.array(1 + 0j))


_relu6 = lc.jit(lambda x: lnp.minimum(lnp.maximum(x, 0), 6))


def test_complex_relu6_compiles_without_killing_the_process():
    # XLA's simplifier turned min(max(x, 0), 6) on complex numbers into a clamp and
    # aborted (MinMaxToClamp: "unhandled direction for conversion to Comparison").
    program = ("import lamella.core as lc, lamella.numpy as lnp\n"
               "f = lc.jit(lambda x: lnp.minimum(lnp.maximum(x, 0), 6))\n"
               "print(complex(f(lnp.complex64(7 + 1j))))\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "(6+0j)"
    x = np.complex64([1 + 1j, -1 + 0j, 0 - 1j, 6 + 1j, 6 - 1j])
    np.testing.assert_array_equal(_relu6(x), [1 + 1j, 0, 0, 6, 6 - 1j])
    np.testing.assert_array_equal(lax.clamp(np.complex64(0), x, np.complex64(6)),
                                  [1 + 1j, 0, 0, 6, 6 - 1j])


def test_complex_reductions_choose_lexicographically():
    x = np.complex64([[0 - 1j, 0, -1 + 5j], [np.nan, 1 + 1j, 1 + 2j]])
    # JAX's values, NaN included (a comparison with NaN is false, so it never wins).
    np.testing.assert_array_equal(lnp.max(x, axis=1), [0, 1 + 2j])
    np.testing.assert_array_equal(lax.reduce_min(x, (1,)), [-1 + 5j, 1 + 1j])
    assert complex(lnp.min(x)) == 1 + 1j
    assert complex(lnp.nanmax(x)) == 1 + 2j
    np.testing.assert_array_equal(lax.cummax(x[0]), [-1j, 0, 0])
    assert complex(lax.reduce_max(np.zeros(0, np.complex64), (0,))) == complex(-np.inf, 0)
    np.testing.assert_array_equal(lc.grad(lambda z: lnp.max(z).real)(x[0]), [0, 1, 0])


def test_clip_refuses_complex_values_as_jax():
    with pytest.raises(ValueError, match="complex"):
        lnp.clip(np.complex64([1 + 1j]), 0, 6)
    with pytest.raises(ValueError, match="complex"):
        lnp.clip(np.float32([1.0]), 0j, 6)


def test_argmax_of_complex_is_a_type_error_as_jax():
    with pytest.raises(TypeError, match="complex64"):
        lnp.argmax(np.complex64([1j, 2]))


# --- Python ints beyond int32: valid values of the requested dtype work -------------
_BIG = 2**31 + 5


def test_uint32_values_above_int32_are_accepted():
    for got in (lnp.full(3, _BIG, lnp.uint32), lnp.array(_BIG, dtype=lnp.uint32),
                lnp.asarray(_BIG, dtype=lnp.uint32), lnp.uint32(_BIG),
                lax.full((3,), _BIG, np.uint32), lax.convert_element_type(_BIG, np.uint32),
                lnp.full_like(lnp.zeros(3, lnp.uint32), _BIG),
                lc.jit(lambda: lax.convert_element_type(_BIG, np.uint32))()):
        assert got.dtype == np.uint32
        np.testing.assert_array_equal(got, np.full(np.shape(got), _BIG, np.uint32))
    np.testing.assert_array_equal(lnp.zeros(2, lnp.uint32).at[0].set(_BIG), [_BIG, 0])
    # Beyond int64, converting to a float is still exact enough (JAX's value).
    assert float(lnp.array(2**70, dtype=lnp.float32)) == float(np.float32(2**70))


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype uint64")
def test_out_of_range_python_ints_raise_where_jax_does_and_wrap_where_it_wraps():
    # array/asarray and scalar types check that the value fits, as NumPy and JAX do ...
    for make in (lambda: lnp.array(300, dtype=lnp.int8), lambda: lnp.int8(300),
                 lambda: lnp.array(-1, dtype=lnp.uint32), lambda: lnp.uint32(-1),
                 lambda: lnp.array(2**32, dtype=lnp.uint32),
                 lambda: lnp.array(2**63 + 5, dtype=lnp.uint64)):  # uint32 without x64
        with pytest.raises(OverflowError, match="out of bounds"):
            make()
    # ... while full and lax conversions wrap as NumPy's astype does (JAX's values).
    np.testing.assert_array_equal(lnp.full(2, 300, lnp.int8), [44, 44])
    np.testing.assert_array_equal(lnp.full(2, 2**63 + 5, lnp.uint64), [5, 5])
    # An operand of a ufunc is an int32 argument in JAX: beyond it, OverflowError, even
    # op by op (where the promoted dtype could hold it).
    with lc.disable_jit():
        for use in (lambda: lnp.ones(2, lnp.uint32) + _BIG,
                    lambda: lnp.where(True, lnp.uint32(1), _BIG)):
            with pytest.raises(OverflowError, match="int32"):
                use()


def test_uint64_values_under_x64():
    with lc.enable_x64():
        big = 2**63 + 5
        got = lnp.array(big, dtype=lnp.uint64)
        assert got.dtype == np.uint64 and int(got) == big
        np.testing.assert_array_equal(lnp.full(2, big, lnp.uint64), [big, big])
        with pytest.raises(OverflowError):
            lnp.array(2**40, dtype=lnp.int32)


# --- linalg: NaN eigenvalues, norms of empty matrices, 16-bit determinants ---------


def test_eig_of_a_nan_matrix_is_nan_in_both_parts():
    for dtype in (np.float32, np.complex64):
        w, v = lnp.linalg.eig(np.full((2, 2), np.nan, dtype))
        for out in (w, v, lnp.linalg.eigvals(np.full((2, 2), np.nan, dtype))):
            assert np.isnan(np.real(out)).all() and np.isnan(np.imag(out)).all()
    # Every failed complex decomposition fills NaN + NaN j, as JAX.
    chol = np.asarray(lnp.linalg.cholesky(-np.eye(2, dtype=np.complex64)))
    assert np.isnan(chol[1, 1].real) and np.isnan(chol[1, 1].imag)


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0)])
@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, 2, np.inf, -1, -2, -np.inf])
def test_matrix_norms_of_empty_matrices(shape, ord):
    x = np.ones(shape, np.float32)
    # JAX's answers: 0, or no minimum over an empty axis (NumPy's ValueError).
    empty_min = ord in (-1, -2, -np.inf) and (
        ord == -2 or shape[1 if ord == -1 else 0] == 0)
    if empty_min:
        with pytest.raises(ValueError, match="zero-size"):
            lnp.linalg.norm(x, ord)
    else:
        assert float(lnp.linalg.norm(x, ord)) == 0.0


def test_vector_norms_and_cond_of_empty_inputs():
    for ord in (None, 2, np.inf, 0, 1, -1, 0.5):
        with np.errstate(divide="ignore"):  # NumPy's own 0 ** -1 for ord=-1
            want = float(np.linalg.norm(np.ones(0), ord))
        assert float(lnp.linalg.norm(np.ones(0, np.float32), ord)) == want
    with pytest.raises(ValueError, match="zero-size"):
        lnp.linalg.norm(np.ones(0, np.float32), -np.inf)
    np.testing.assert_array_equal(
        lnp.linalg.norm(np.ones((2, 0, 0), np.float32), 2, axis=(1, 2)), [0, 0])
    with pytest.raises(ValueError, match="empty"):
        lnp.linalg.cond(np.ones((0, 0), np.float32))


@pytest.mark.parametrize("dtype", [lnp.float16, lnp.bfloat16])
def test_det_and_slogdet_of_16_bit_matrices_upcast(dtype):
    a = lnp.array([[4.0, 1.0], [1.0, 3.0]], dtype)
    got = lnp.linalg.det(a)
    assert got.dtype == np.dtype(dtype) and float(got) == 11.0
    sign, logdet = lnp.linalg.slogdet(a)
    assert sign.dtype == logdet.dtype == np.dtype(dtype)
    assert float(sign) == 1.0
    np.testing.assert_allclose(float(logdet), np.log(11.0), rtol=1e-2)
    grad = lc.grad(lnp.linalg.det)(a)
    assert grad.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(np.asarray(grad, np.float32), [[3, -1], [-1, 4]])
    # The rest of linalg has no 16-bit LAPACK routine: a clear error, not a crash.
    with pytest.raises(TypeError, match="float32, float64"):
        lnp.linalg.inv(a)


# --- random: sampling follows the key's device -------------------------------------


def test_sampling_with_a_key_committed_to_another_device_computes_there():
    # Two CPU devices need a fresh process (the device count is fixed at start-up).
    program = """
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
import lamella.core as lc, lamella.numpy as lnp, lamella.random as lr
other = lc.devices()[1]
key = lc.device_put(lr.key(0), other)
assert key.devices() == {other} and lc.device_put(lnp.ones(2), other).committed
samples = [lr.normal(key, (3,)), lr.uniform(key, (3,)), lr.split(key), lr.bits(key, (2,)),
           lr.randint(key, (3,), 0, 5), lr.gamma(key, 2.0, (2,)), lr.permutation(key, 4),
           lr.fold_in(key, 1), lr.normal(lc.device_put(lr.PRNGKey(0), other), (3,)),
           lc.jit(lambda k: lr.normal(k, (3,)))(key)]
for s in samples:
    assert s.devices() == {other}, s.devices()
here = lr.normal(lr.key(0), (3,))
assert (lr.normal(key, (3,)) == here).all()  # the same numbers, on the key's device
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


# --- integer division by zero: XLA's defined results, eager and jitted alike -------
_floor_divide = lc.jit(lambda a, b: a // b)
_mod = lc.jit(lambda a, b: a % b)


@pytest.mark.parametrize("dtype,x,y,quotient,remainder", [
    # JAX 0.10.2's values: floor division fixes XLA's truncating x / 0 = -1 by the
    # remainder's sign, so 5 // 0 is -2, and x % 0 is 0.
    (np.int32, [5, -5, 0, 7], [0, 0, 0, 0], [-2, -2, -1, -2], [0, 0, 0, 0]),
    (np.int8, [5, -5, -128], [0, 0, -1], [-2, -2, -128], [0, 0, 0]),
    (np.uint32, [5, 0], [0, 0], [2**32 - 1, 2**32 - 1], [0, 0]),
])
def test_integer_floor_divide_and_mod_by_zero(dtype, x, y, quotient, remainder):
    x, y = np.array(x, dtype), np.array(y, dtype)
    for q, r in [(lnp.floor_divide(x, y), lnp.remainder(x, y)),
                 (lnp.asarray(x) // lnp.asarray(y), lnp.asarray(x) % lnp.asarray(y)),
                 (_floor_divide(x, y), _mod(x, y)), lnp.divmod(x, y)]:
        assert q.dtype == r.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(q, np.array(quotient, dtype))
        np.testing.assert_array_equal(r, np.array(remainder, dtype))
    # A Python 0 divisor gives the same (it is a weakly typed operand).
    np.testing.assert_array_equal(lnp.asarray(x) // 0, lnp.floor_divide(x, np.zeros_like(x)))


def test_lax_integer_div_and_rem_by_zero_are_xlas():
    x, zero = np.int32([5, -5, 0]), np.zeros(3, np.int32)
    np.testing.assert_array_equal(lax.div(x, zero), [-1, -1, -1])
    np.testing.assert_array_equal(lax.rem(x, zero), [5, -5, 0])
    np.testing.assert_array_equal(lnp.fmod(x, 0), [0, 0, 0])


# --- derivatives at kinks: JAX's conventions ---------------------------------------
_KINKS = [
    # (function, JAX 0.10.2's derivative at 0)
    (lnp.abs, 1.0), (lax.abs, 1.0), (lnp.fabs, 1.0), (lnp.absolute, 1.0),
    (lnp.sign, 0.0), (lax.sign, 0.0),
    (lambda x: lnp.maximum(x, 0.0), 0.5), (lambda x: lnp.minimum(x, 0.0), 0.5),
    (lambda x: lax.max(x, 0.0), 0.5), (lambda x: lax.min(x, 0.0), 0.5),
    (lambda x: lnp.maximum(x, x), 1.0), (lambda x: lnp.minimum(x, x), 1.0),
    (lambda x: lnp.clip(x, 0.0, 1.0), 0.5), (lambda x: lnp.clip(x, -1.0, 0.0), 0.5),
    (lambda x: lax.clamp(0.0, x, 1.0), 0.0), (lambda x: lax.clamp(-1.0, x, 0.0), 0.0),
    (lambda x: lnp.fmax(x, 0.0), 0.0), (lambda x: lnp.fmin(x, 0.0), 0.0),
    (lambda x: lnp.where(x > 0, x, 0.0), 0.0),
    (lambda x: lnp.heaviside(x, 0.5), 0.0), (lnp.floor, 0.0), (lnp.round, 0.0),
    (lambda x: lnp.copysign(1.0, x), 0.0), (lambda x: lnp.copysign(x, 1.0), 1.0),
    (lambda x: lnp.max(lnp.stack([x, x, 0.0 * x])), 2 / 3),
    (lambda x: lnp.min(lnp.stack([x, x, 0.0 * x])), 2 / 3),
    (lambda x: lnp.fmod(x, 1.0), 1.0), (lambda x: lnp.mod(x, 1.0), 1.0),
]


@pytest.mark.parametrize("fn,want", _KINKS)
def test_derivatives_at_kinks_follow_jax(fn, want):
    np.testing.assert_allclose(float(lc.grad(fn)(0.0)), want, rtol=1e-6)
    np.testing.assert_allclose(float(lc.jit(lc.grad(fn))(0.0)), want, rtol=1e-6)


def test_abs_of_complex_zero_has_zero_gradient():
    assert complex(lc.grad(lnp.abs)(0j + 0.0)) == 0


# --- log-sum-exp at -inf everywhere: NaN weights, as JAX (never a total above 1) ----
_NEG_INF = np.float32([-np.inf, -np.inf])


@pytest.mark.parametrize("fn", [
    lambda x: lnp.logaddexp(x[0], x[1]),
    lambda x: lnp.logaddexp2(x[0], x[1]),
    lambda x: lax.reduce(x, np.float32(-np.inf), lnp.logaddexp, (0,)),
])
def test_logsumexp_gradient_at_all_minus_infinity(fn):
    for grad in (lc.grad(fn), lc.jit(lc.grad(fn))):
        assert np.isnan(np.asarray(grad(_NEG_INF))).all()
    # Elsewhere the weights are a distribution: they sum to 1.
    for x in ([-np.inf, 0.0], [1.0, 1.0], [3.0, -2.0]):
        weights = np.asarray(lc.grad(fn)(np.float32(x)))
        assert (weights >= 0).all() and abs(weights.sum() - 1) < 1e-6, weights


# --- a vjp pullback given the wrong cotangent dtype says so --------------------------


def test_vjp_pullback_names_a_wrong_cotangent_dtype():
    _, pullback = lc.vjp(lambda x: x * 2, lnp.ones(3, lnp.float32))
    with pytest.raises((TypeError, ValueError), match=r"(?s)f(loat)?16.*f(loat)?32"):
        pullback(lnp.ones(3, lnp.float16))
    np.testing.assert_array_equal(pullback(lnp.ones(3, lnp.float32))[0], [2, 2, 2])


# --- DLPack copy=, deleted and donated arrays ----------------------------------------


def _aligned_host(values: list[float]) -> np.ndarray:
    """A float32 NumPy array whose data starts on a 64-byte boundary (shareable)."""
    buffer = np.empty(64 + 4 * len(values), np.uint8)
    start = (-buffer.ctypes.data) % 64
    host = buffer[start:start + 4 * len(values)].view(np.float32)
    host[:] = values
    return host


def test_from_dlpack_honours_copy():
    host = _aligned_host([1, 2, 3, 4])
    shared, copied = lnp.from_dlpack(host, copy=False), lnp.from_dlpack(host)
    host[0] = 9
    np.testing.assert_array_equal(shared, [9, 2, 3, 4])  # copy=False shares, as asked
    np.testing.assert_array_equal(copied, [1, 2, 3, 4])  # the default copies
    with pytest.raises(ValueError, match="copy"):
        lnp.from_dlpack(np.arange(6, dtype=np.float32)[::2], copy=False)


def test_asarray_of_a_deleted_array_raises():
    x = lnp.ones(3)
    x.delete()
    for make in (lnp.asarray, lnp.array, lambda v: lnp.asarray(v, dtype=lnp.float32)):
        with pytest.raises(RuntimeError, match="deleted") as info:
            make(x)
        assert type(info.value).__name__ == "DeletedArrayError"


def test_a_donated_array_given_to_other_functions_raises_deleted_array_error():
    donating = lc.jit(lambda x: x + 1, donate_argnums=0)
    plain = lc.jit(lambda x: x * 2)
    plain(lnp.ones(3))  # its C++ fast path is warm for f32[3]
    y = lnp.ones(3)
    donating(y)
    for use in (plain, lambda v: v + 1, lnp.sin, lc.jit(lambda v: v - 1), lnp.asarray):
        with pytest.raises(RuntimeError, match="donating") as info:
            use(y)
        assert type(info.value).__name__ == "DeletedArrayError"
