"""Arrays and tracers as Python objects, as JAX's behave: pickling, copies, format(),
NumPy interop through __array_priority__, truth values, the methods tracers carry,
error classes (ValueError for truth, TypeError for contraction mismatches), the
UserWarning for truncated 64-bit dtypes, XLA's integer division by zero, and the
static out-of-bounds index read."""

import copy
import pickle
import warnings

import ml_dtypes
import numpy as np
import pytest

import lamella.core as lc
import lamella.numpy as lnp
from lamella.core.errors import ConcretizationTypeError


@pytest.mark.parametrize("value", [np.float32([[1.5, -2], [0, 3]]), np.int8([1, -2]),
                                   np.array(True), np.arange(3).astype(ml_dtypes.bfloat16)])
def test_pickle_and_copies_round_trip(value):
    x = lnp.asarray(value)
    for clone in (pickle.loads(pickle.dumps(x)), copy.copy(x), copy.deepcopy(x)):
        assert clone is not x and type(clone) is type(x)
        assert clone.dtype == x.dtype and clone.weak_type == x.weak_type
        np.testing.assert_array_equal(np.asarray(clone), np.asarray(x))
    weak = lnp.asarray(2.0)
    assert pickle.loads(pickle.dumps(weak)).weak_type
    assert copy.deepcopy({"w": x})["w"] is not x


def test_copies_own_their_buffer():
    x = lnp.ones(3)
    assert lnp.array(x) is not x and x.copy() is not x and lnp.copy(x) is not x
    assert lnp.asarray(x) is x and lnp.array(x, copy=False) is x
    assert lnp.astype(x, lnp.float32) is x and lnp.astype(x, lnp.float32, copy=True) is not x
    y = x.copy()
    lc.jit(lambda v: v * 2, donate_argnums=0)(y)  # donating the copy leaves x alive
    assert float(x.sum()) == 3.0


def test_format():
    assert format(lnp.float32(3.14159), ".3f") == "3.142"
    assert f"{lnp.int32(5):04d}" == "0005"
    assert format(lnp.arange(3), "") == str(lnp.arange(3))
    with pytest.raises(TypeError, match="unsupported format string"):
        format(lnp.arange(3.0), ".3f")


def test_numpy_operands_give_lamella_arrays():
    x = lnp.arange(3.0)
    assert x.__array_priority__ == 100
    for result in (np.ones(3) + x, np.float32(2) * x, np.float64(2) * x, np.ones(3) @ x,
                   np.int32([1, 2, 3]) - x):
        assert isinstance(result, lnp.ndarray) and not isinstance(result, np.ndarray)
    assert (np.float64(2) * x).dtype == np.float32  # x64 off: no silent float64
    np.testing.assert_array_equal(np.asarray(np.float32(2) * x), [0, 2, 4])


def test_truth_values():
    assert bool(lnp.ones(1)) and not bool(lnp.zeros(()))
    with pytest.raises(ValueError, match="more than one element is ambiguous"):
        bool(lnp.ones(2))
    with pytest.raises(ValueError, match="empty array is ambiguous"):
        bool(lnp.ones(0))
    with pytest.raises(ValueError, match="more than one element is ambiguous"):
        lc.jit(lambda v: 1 if v else 0)(lnp.ones(2))


def test_tracers_carry_the_array_methods():
    seen = {}

    def f(v):
        for name in ("item", "tolist", "tobytes"):
            with pytest.raises(ConcretizationTypeError, match=f"passed to `{name}`"):
                getattr(v, name)()
        with pytest.raises(ConcretizationTypeError):
            pickle.dumps(v)
        for name in ("device", "sharding", "block_until_ready", "is_deleted"):
            with pytest.raises(AttributeError, match="traced array"):
                getattr(v, name)
        seen["format"] = format(v, "")
        assert copy.copy(v) is v and copy.deepcopy(v) is v
        return v.byteswap()

    out = lc.jit(f)(lnp.arange(3, dtype=lnp.int32))
    np.testing.assert_array_equal(np.asarray(out), np.arange(3, dtype=np.int32).byteswap())
    assert seen["format"] == "JitTracer(int32[3])"  # as JAX formats a tracer
    # A concrete value inside a transformation still converts.
    assert lc.jvp(lambda v: v * v.item(), (np.float32(3),), (np.float32(1),))[1] == 3.0


def test_flat_raises_jaxs_error():
    with pytest.raises(NotImplementedError, match="consider arr.flatten"):
        getattr(lnp.ones(3), "flat")  # noqa: B009 (the property raises)
    with pytest.raises(NotImplementedError, match="consider arr.flatten"):
        lc.jit(lambda v: v.flat)(lnp.ones(3))


def test_byteswap_tobytes_and_addressable_data():
    x = lnp.asarray(np.float32([1.5, -2]))
    assert x.tobytes() == np.float32([1.5, -2]).tobytes()
    np.testing.assert_array_equal(np.asarray(x.byteswap()), np.float32([1.5, -2]).byteswap())
    assert x.addressable_data(0) is x and x.is_fully_addressable and x.is_fully_replicated


def test_contraction_mismatches_are_type_errors_as_in_jax():
    for fn in (lambda: lnp.dot(lnp.ones(3), lnp.ones(4)),
               lambda: lnp.ones((2, 3)) @ lnp.ones((4, 2)),
               lambda: lnp.tensordot(lnp.ones(3), lnp.ones(4), 1),
               lambda: lnp.vdot(lnp.ones(3), lnp.ones(4)),
               lambda: lnp.inner(lnp.ones(3), lnp.ones(4))):
        with pytest.raises(TypeError, match="3"):
            fn()


CALLS_THAT_WARN = [
    ("zeros", lambda: lnp.zeros(2, lnp.float64)), ("array", lambda: lnp.array([1], "float64")),
    ("asarray", lambda: lnp.asarray([1.0], dtype="float64")),
    ("astype", lambda: lnp.ones(2).astype(lnp.float64)),
    ("arange", lambda: lnp.arange(3, dtype=lnp.float64)), ("asarray", lambda: lnp.float64(3)),
    ("ones_like", lambda: lnp.ones_like(lnp.ones(2), dtype=lnp.float64)),
    ("full", lambda: lnp.full(2, 1.0, lnp.float64)), ("eye", lambda: lnp.eye(2, dtype="float64")),
    ("sum", lambda: lnp.sum(lnp.ones(2), dtype=lnp.float64)),
    ("zeros", lambda: lnp.zeros(2, lnp.int64)),
]


@pytest.mark.parametrize("name, call", CALLS_THAT_WARN, ids=[c[0] for c in CALLS_THAT_WARN])
def test_truncated_64_bit_dtypes_warn(name, call):
    with pytest.warns(UserWarning, match=f"requested in {name} is not available") as record:
        out = call()
    assert out.dtype.itemsize == 4
    assert record[0].filename == __file__  # the warning points at the user's line


def test_no_warning_without_an_explicit_dtype():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lnp.asarray(np.ones(2))  # a float64 NumPy array, no dtype asked for
        lnp.linspace(0, 1, 3)
    with lc.enable_x64(), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert lnp.zeros(2, lnp.float64).dtype == np.float64


_FLOOR_DIV = lc.jit(lambda a, b: (a // b, a % b, lnp.divmod(a, b)[0]))


def test_integer_division_by_zero_gives_xlas_results_as_jax():
    a = lnp.asarray(np.int32([7, -7, 0, -2 ** 31]))
    eager = (a // 0, a % 0, lnp.divmod(a, 0)[0])
    jitted = _FLOOR_DIV(a, np.int32(0))
    for got in (eager, jitted):
        np.testing.assert_array_equal(np.asarray(got[0]), [-2, -2, -1, -2])
        np.testing.assert_array_equal(np.asarray(got[1]), [0, 0, 0, 0])
        np.testing.assert_array_equal(np.asarray(got[2]), [-2, -2, -1, -2])
    u = lnp.asarray(np.uint32([7, 0]))
    np.testing.assert_array_equal(np.asarray(u // 0), [2 ** 32 - 1, 2 ** 32 - 1])
    np.testing.assert_array_equal(np.asarray(u % 0), [0, 0])
    np.testing.assert_array_equal(np.asarray(lnp.int8(-128) // lnp.int8(-1)), -128)
    f = lnp.asarray(np.float32([7, -7, 0, np.inf]))
    np.testing.assert_array_equal(np.asarray(f // 0.0), [np.inf, -np.inf, np.nan, np.inf])
    assert np.isnan(np.asarray(f % 0.0)).all()
