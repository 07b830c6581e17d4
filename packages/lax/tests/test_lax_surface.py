"""Tests of the jax.lax names added to complete lamella.lax's surface: values
against NumPy or the defining identity, derivatives (`check_derivatives`), vmap
against loops and jit against eager (through `lamella.lax.test_util.check`).

Shapes are few and small: XLA compiles dominate the run time.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
import lamella.lax as lax
from lamella.lax.test_util import check

RNG = np.random.default_rng(0)
X = RNG.uniform(0.5, 2.0, (2, 3)).astype(np.float32)
V = RNG.uniform(-2.0, 2.0, 4).astype(np.float32)

# --- arithmetic: square, reciprocal, mul(out_dtype=), mulhi ----------------------


def test_square_and_reciprocal():
    check(lax.square, [V], np.square)
    check(lax.reciprocal, [X], np.reciprocal)
    assert "square a" in str(lc.make_jaxpr(lax.square)(V))


def test_mul_with_out_dtype():
    x, y = np.int8([100, -100, 7]), np.int8([3, 3, -2])
    out = check(lambda x, y: lax.mul(x, y, out_dtype=np.int32), [x, y],
                lambda x, y: x.astype(np.int32) * y, diff_argnums=None)
    assert out.dtype == np.int32
    check(lambda x: lax.mul(x, 2.0, out_dtype=x.dtype), [V], lambda x: 2 * x)
    assert "out_dtype=int32" in str(lc.make_jaxpr(
        lambda x, y: lax.mul(x, y, out_dtype=np.int32))(x, y))


def _mulhi_reference(x, y):
    bits = 8 * x.dtype.itemsize
    wide = [(int(a) * int(b)) >> bits for a, b in zip(x.ravel(), y.ravel())]
    return np.array([w % 2 ** bits for w in wide], dtype=object).astype(
        np.dtype(f"uint{bits}")).view(x.dtype).reshape(x.shape)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([np.int8, np.uint8, np.int16, np.int32, np.uint32]), st.integers(0, 2**31))
def test_mulhi_is_the_high_half_of_the_double_width_product(dtype, seed):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    x = rng.integers(info.min, info.max, 4, endpoint=True).astype(dtype)
    y = rng.integers(info.min, info.max, 4, endpoint=True).astype(dtype)
    x[0], y[0] = info.min, info.max
    np.testing.assert_array_equal(lc.jit(lax.mulhi)(x, y), _mulhi_reference(x, y))


def test_mulhi_64_bit_vmap_and_jit():
    with lc.enable_x64():
        for dtype in (np.int64, np.uint64):
            info = np.iinfo(dtype)
            x = np.array([info.min, info.max, 12345678901234, 7], dtype)
            y = np.array([info.max, info.max, -98765432109 if info.min else 98765432109, 9],
                         dtype)
            check(lax.mulhi, [x, y], _mulhi_reference, diff_argnums=None)
    check(lax.mulhi, [np.int32([5, -7]), np.int32([2 ** 30, 2 ** 31 - 1])], _mulhi_reference,
          diff_argnums=None)
