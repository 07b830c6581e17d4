"""Tests of lamella.lax.runtime (and mlir_context) against NumPy.

Programs are tiny hand-written StableHLO modules; compiles are kept few
because XLA's compile time dominates on small machines.
"""

import doctest
import os
import subprocess
import sys
import textwrap
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import ml_dtypes
import numpy as np
import pytest

from lamella.lax import mlir_context, runtime
from lamella.lax.mlir_context import ir, parse_module
from lamella.lax.runtime import Array, DeletedArrayError

BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture
def x64():
    """Turn 64-bit types on for one test."""
    runtime.set_x64(True)
    yield
    runtime.set_x64(False)


def module(text: str) -> ir.Module:
    return parse_module(textwrap.dedent(text))


ADD_F32 = """
    func.func public @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
      %0 = stablehlo.add %x, %y : tensor<4xf32>
      return %0 : tensor<4xf32>
    }"""


@pytest.fixture(scope="module")
def add_f32() -> runtime.Executable:
    return runtime.compile(module(ADD_F32))


# ----------------------------------------------------------------------------
# Devices


def test_devices():
    devs = runtime.devices()
    assert runtime.device_count() == len(devs) >= 1
    assert runtime.default_device() == devs[0]
    assert runtime.devices("cpu")[0].platform == "cpu"
    sharding = runtime.sharding_for(devs[0])
    assert sharding is runtime.sharding_for(devs[0])
    assert sharding._device == devs[0] and sharding.num_devices == 1
    assert sharding.is_fully_addressable and sharding.is_fully_replicated
    assert sharding.device_set == {devs[0]} and sharding._device_assignment == (devs[0],)
    assert sharding == type(sharding)(devs[0])  # equal instances compare equal
    with pytest.raises(RuntimeError, match="not available"):
        runtime.devices("tpu")


# ----------------------------------------------------------------------------
# Host <-> device

ROUND_TRIP_DTYPES = [
    np.bool_,
    np.int8,
    np.int16,
    np.int32,
    np.uint8,
    np.uint16,
    np.uint32,
    np.float16,
    BF16,
    np.float32,
    np.complex64,
]


@pytest.mark.parametrize("dtype", ROUND_TRIP_DTYPES, ids=lambda d: np.dtype(d).name)
def test_round_trip(dtype):
    host = (np.arange(6).reshape(2, 3) % 3).astype(dtype)
    x = runtime.device_put(host)
    assert type(x) is Array
    assert x.dtype == np.dtype(dtype) and x.shape == (2, 3) and x.ndim == 2 and x.size == 6
    assert not x.weak_type and not x.committed
    back = runtime.device_get(x)
    assert back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back, host)
    np.testing.assert_array_equal(np.asarray(x), host)


def test_64_bit_values_narrow_without_x64():
    for wide, narrow in [(np.float64, np.float32), (np.int64, np.int32), (np.uint64, np.uint32)]:
        x = runtime.device_put(np.arange(3, dtype=wide))
        assert x.dtype == narrow == runtime.device_get(x).dtype
    assert runtime.device_put(np.complex128(1j)).dtype == np.complex64


def test_64_bit_values_with_x64(x64):
    assert runtime.x64_enabled()
    for dtype in [np.float64, np.int64, np.uint64, np.complex128]:
        host = np.arange(3).astype(dtype) + 2**40
        x = runtime.device_put(host)
        assert x.dtype == dtype
        np.testing.assert_array_equal(runtime.device_get(x), host)
    assert runtime.device_put(1).dtype == np.int64
    assert runtime.device_put(1.5).dtype == np.float64


def test_python_scalars_are_weak_and_0d():
    for value, dtype in [(2, np.int32), (2.5, np.float32), (1 + 2j, np.complex64)]:
        x = runtime.device_put(value)
        assert x.shape == () and x.ndim == 0 and x.size == 1
        assert x.dtype == dtype and x.weak_type and x.aval.weak_type
        assert runtime.device_get(x) == value
    flag = runtime.device_put(True)
    assert flag.dtype == np.bool_ and not flag.weak_type
    assert not runtime.device_put(np.float32(1)).weak_type
    assert runtime.device_put(np.float32(1), weak_type=True).weak_type


def test_python_int_too_large_for_int32():
    with pytest.raises(OverflowError):
        runtime.device_put(2**40)


def test_unsupported_values():
    with pytest.raises(TypeError, match="got list"):
        runtime.device_put([1, 2])
    with pytest.raises(TypeError, match="dtype <U1"):
        runtime.device_put(np.array(["a"]))


def test_device_put_copies_host_data():
    host = np.arange(1024, dtype=np.float32)
    x = runtime.device_put(host)
    host[0] = 99.0
    assert runtime.device_get(x)[0] == 0.0


def test_device_put_of_an_array():
    x = runtime.device_put(np.ones(3, np.float32))
    assert runtime.device_put(x) is x
    committed = runtime.device_put(x, runtime.default_device())
    assert committed.committed and not x.committed
    assert runtime.device_put(committed, runtime.default_device()) is committed
    np.testing.assert_array_equal(np.asarray(committed), np.ones(3))


def test_device_get_of_leaves():
    x, y = runtime.device_put(np.arange(3)), runtime.device_put(np.float32(2))
    out = runtime.device_get((x, 7, y))
    assert isinstance(out, tuple) and out[1] == 7
    np.testing.assert_array_equal(out[0], np.arange(3))
    assert out[2] == 2.0
    assert runtime.device_get("leaf") == "leaf"


def test_host_views_are_read_only_and_copy_on_request():
    x = runtime.device_put(np.arange(3, dtype=np.float32))
    assert not np.asarray(x).flags.writeable
    assert np.array(x, copy=True).flags.writeable
    assert np.asarray(x, dtype=np.float64).dtype == np.float64


def test_block_until_ready():
    x = runtime.device_put(np.zeros(3))
    assert runtime.block_until_ready(x) is x and x.is_ready()
    pair = [x, runtime.device_put(1.0)]
    assert runtime.block_until_ready(pair) is pair
    assert x.block_until_ready() is x


# ----------------------------------------------------------------------------
# The Array type


def test_repr():
    assert repr(runtime.device_put(np.array([1.0, 2.0], np.float32))) == (
        "Array([1., 2.], dtype=float32)"
    )
    assert repr(runtime.device_put(1.0)) == "Array(1., dtype=float32, weak_type=True)"
    assert repr(runtime.device_put(np.int8(3))) == "Array(3, dtype=int8)"
    assert repr(runtime.device_put(np.array([1, 2], BF16))) == "Array([1, 2], dtype=bfloat16)"
    assert repr(runtime.device_put(np.zeros((0, 2), np.float32))) == (
        "Array([], shape=(0, 2), dtype=float32)"
    )
    wide = repr(runtime.device_put(np.arange(30, dtype=np.float32)))
    assert wide.startswith("Array([ 0.,  1.,") and wide.endswith("29.], dtype=float32)")
    assert "\n       13.," in wide  # continuation lines align under the data
    assert str(runtime.device_put(np.arange(3))) == "[0 1 2]"


def test_len_device_and_metadata():
    x = runtime.device_put(np.zeros((3, 2), np.float32))
    assert len(x) == 3
    with pytest.raises(TypeError, match="unsized"):
        len(runtime.device_put(1.0))
    assert x.device == runtime.default_device()
    assert x.devices() == {runtime.default_device()}
    assert x.sharding is runtime.sharding_for(runtime.default_device())
    assert (x.aval.shape, x.aval.dtype, x.aval.weak_type, x.aval.ndim) == (
        (3, 2),
        np.float32,
        False,
        2,
    )


def test_delete():
    x = runtime.device_put(np.arange(3, dtype=np.float32))
    x.delete()
    assert x.is_deleted()
    assert repr(x) == "Array(<deleted>, shape=(3,), dtype=float32)"
    with pytest.raises(DeletedArrayError, match=r"float32\[3\] has been deleted"):
        np.asarray(x)
    with pytest.raises(DeletedArrayError):
        runtime.device_put(x, runtime.default_device())


def test_install_array_methods():
    runtime.install_array_methods({"twice": lambda self: np.asarray(self) * 2})
    try:
        np.testing.assert_array_equal(runtime.device_put(np.arange(3)).twice(), [0, 2, 4])
    finally:
        del Array.twice


def test_aval_factory():
    class MyAval:
        def __init__(self, shape, dtype, weak_type):
            self.shape, self.dtype, self.weak_type, self.ndim = shape, dtype, weak_type, len(shape)

    previous = runtime.set_aval_factory(MyAval)
    try:
        x = runtime.device_put(np.ones((2,), np.int16))
        assert type(x.aval) is MyAval and x.shape == (2,) and x.dtype == np.int16
        exe = runtime.compile(module(ADD_F32))
        assert all(type(a) is MyAval for a in exe.in_avals + exe.out_avals)
        (out,) = exe(np.ones(4, np.float32), np.ones(4, np.float32))
        assert type(out.aval) is MyAval
    finally:
        runtime.set_aval_factory(previous)


# ----------------------------------------------------------------------------
# Compilation and execution

# One program over every 32-bit-or-narrower dtype: doubles numbers, negates bools.
MIXED = """
    func.func public @main(%a: tensor<3xi8>, %b: tensor<3xi16>, %c: tensor<3xi32>,
                           %d: tensor<3xui8>, %e: tensor<3xui32>, %f: tensor<3xf16>,
                           %g: tensor<3xbf16>, %h: tensor<2x3xf32>, %i: tensor<complex<f32>>,
                           %j: tensor<3xi1>)
        -> (tensor<3xi8>, tensor<3xi16>, tensor<3xi32>, tensor<3xui8>, tensor<3xui32>,
            tensor<3xf16>, tensor<3xbf16>, tensor<2x3xf32>, tensor<complex<f32>>, tensor<3xi1>) {
      %0 = stablehlo.add %a, %a : tensor<3xi8>
      %1 = stablehlo.add %b, %b : tensor<3xi16>
      %2 = stablehlo.add %c, %c : tensor<3xi32>
      %3 = stablehlo.add %d, %d : tensor<3xui8>
      %4 = stablehlo.add %e, %e : tensor<3xui32>
      %5 = stablehlo.add %f, %f : tensor<3xf16>
      %6 = stablehlo.add %g, %g : tensor<3xbf16>
      %7 = stablehlo.add %h, %h : tensor<2x3xf32>
      %8 = stablehlo.add %i, %i : tensor<complex<f32>>
      %9 = stablehlo.not %j : tensor<3xi1>
      return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<3xi8>, tensor<3xi16>, tensor<3xi32>,
        tensor<3xui8>, tensor<3xui32>, tensor<3xf16>, tensor<3xbf16>, tensor<2x3xf32>,
        tensor<complex<f32>>, tensor<3xi1>
    }"""


def test_execute_many_dtypes():
    exe = runtime.compile(module(MIXED))
    dtypes = [np.int8, np.int16, np.int32, np.uint8, np.uint32, np.float16, BF16]
    inputs = [np.array([1, 2, 3], dt) for dt in dtypes]
    inputs += [np.arange(6, dtype=np.float32).reshape(2, 3), np.complex64(1 - 2j)]
    inputs += [np.array([True, False, True])]
    # Half the arguments go in as Arrays, half as host values put on the device.
    args = [runtime.device_put(v) if k % 2 else v for k, v in enumerate(inputs)]
    outs = exe(*args)
    assert len(outs) == len(inputs) == len(exe.out_avals)
    for out, value, aval in zip(outs, inputs[:-1], exe.out_avals):
        assert type(out) is Array and out.dtype == value.dtype == aval.dtype
        np.testing.assert_array_equal(np.asarray(out), value + value)
    np.testing.assert_array_equal(np.asarray(outs[-1]), [False, True, False])


def test_execute_64_bit(x64):
    exe = runtime.compile(
        module("""
        func.func public @main(%a: tensor<2xf64>, %b: tensor<2xi64>, %c: tensor<2xui64>,
                               %d: tensor<2xcomplex<f64>>)
            -> (tensor<2xf64>, tensor<2xi64>, tensor<2xui64>, tensor<2xcomplex<f64>>) {
          %0 = stablehlo.multiply %a, %a : tensor<2xf64>
          %1 = stablehlo.multiply %b, %b : tensor<2xi64>
          %2 = stablehlo.multiply %c, %c : tensor<2xui64>
          %3 = stablehlo.multiply %d, %d : tensor<2xcomplex<f64>>
          return %0, %1, %2, %3 : tensor<2xf64>, tensor<2xi64>, tensor<2xui64>,
            tensor<2xcomplex<f64>>
        }""")
    )
    inputs = [
        np.array([1e150, 1 / 3]),
        np.array([2**31, -3]),
        np.array([2**32, 5], np.uint64),
        np.array([1 + 1e-12j, 2j]),
    ]
    for out, value in zip(exe(*inputs), inputs):
        assert out.dtype == value.dtype
        np.testing.assert_array_equal(np.asarray(out), value * value)


def test_python_scalar_arguments():
    exe = runtime.compile(
        module("""
        func.func public @main(%x: tensor<f32>, %n: tensor<i32>) -> (tensor<f32>, tensor<i32>) {
          %0 = stablehlo.negate %x : tensor<f32>
          %1 = stablehlo.negate %n : tensor<i32>
          return %0, %1 : tensor<f32>, tensor<i32>
        }""")
    )
    x, n = exe(2.5, 7)
    assert float(np.asarray(x)) == -2.5 and int(np.asarray(n)) == -7
    assert x.shape == () and n.dtype == np.int32


def test_argument_errors(add_f32):
    good = np.ones(4, np.float32)
    with pytest.raises(TypeError, match="takes 2 arguments, got 1"):
        add_f32(good)
    # Same byte size, other dtype: XLA would reinterpret the bits.
    with pytest.raises(
        TypeError, match=r"argument 0 of main: expected float32\[4\], got int32\[4\]"
    ):
        add_f32(runtime.device_put(np.ones(4, np.int32)), good)
    with pytest.raises(
        TypeError, match=r"argument 1 of main: expected float32\[4\], got float32\[3\]"
    ):
        add_f32(good, np.ones(3, np.float32))


def test_outputs_are_uncommitted_unless_a_device_is_named(add_f32):
    ones = np.ones(4, np.float32)
    assert not add_f32(ones, ones)[0].committed and not add_f32.committed
    committed = runtime.compile(module(ADD_F32), runtime.default_device())
    assert committed(ones, ones)[0].committed


def test_out_avals_with_weak_types():
    text = """
        func.func public @main(%x: tensor<f32>) -> tensor<f32> {
          %0 = stablehlo.add %x, %x : tensor<f32>
          return %0 : tensor<f32>
        }"""
    weak = runtime.device_put(1.0).aval
    exe = runtime.compile(module(text), out_avals=[weak])
    (out,) = exe(runtime.device_put(1.5))
    assert out.weak_type and repr(out) == "Array(3., dtype=float32, weak_type=True)"
    with pytest.raises(ValueError, match="do not match"):
        runtime.compile(module(text), out_avals=[runtime.device_put(np.int32(1)).aval])


def test_as_text_and_cost_analysis():
    exe = runtime.compile(
        module("""
        func.func public @main(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
          %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
            : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
          return %0 : tensor<8x4xf32>
        }""")
    )
    a = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((16, 4)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(exe(a, b)[0]), a @ b, rtol=1e-5, atol=1e-5)
    assert exe.as_text().startswith("HloModule")
    assert "dot" in exe.as_text()
    assert exe.cost_analysis()["flops"] >= 2 * 8 * 16 * 4 > 0
    assert repr(exe) == (
        f"Executable(main: (float32[8,16], float32[16,4]) -> (float32[8,4]) "
        f"on {runtime.default_device()})"
    )


def test_module_without_main():
    with pytest.raises(ValueError, match="no `func.func public @main`"):
        runtime.compile(parse_module("func.func public @other() { return }"))


# ----------------------------------------------------------------------------
# Donation

DONATE = """
    func.func public @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<i32>) {
      %0 = stablehlo.add %x, %y : tensor<4xf32>
      %c = stablehlo.constant dense<1> : tensor<i32>
      return %0, %c : tensor<4xf32>, tensor<i32>
    }"""


def test_donation_deletes_the_input():
    mod = module(DONATE)
    exe = runtime.compile(mod, donated_args=(0,))
    assert exe.donated_args == (0,)
    assert "tf.aliasing_output = 0 : i32" in mlir_context.module_to_string(mod)
    assert "input_output_alias" in exe.as_text()
    x, y = runtime.device_put(np.arange(4, dtype=np.float32)), runtime.device_put(np.ones(4))
    out, _ = exe(x, y)
    np.testing.assert_array_equal(np.asarray(out), np.arange(4) + 1)
    assert x.is_deleted() and not y.is_deleted()
    with pytest.raises(DeletedArrayError, match="donating it to an earlier call"):
        exe(x, y)
    with pytest.raises(DeletedArrayError):
        np.asarray(x)
    # Host values and fresh arrays still work.
    out, _ = exe(np.zeros(4, np.float32), y)
    np.testing.assert_array_equal(np.asarray(out), np.ones(4))
    # The annotation stays on the module: compiling it again keeps the alias.
    assert runtime.compile(mod).donated_args == (0,)


def test_donation_without_a_matching_output_warns():
    with pytest.warns(UserWarning, match=r"not usable: float32\[4\]"):
        exe = runtime.compile(module(DONATE), donated_args=(0, 1))
    assert exe.donated_args == (0,)
    x, y = runtime.device_put(np.ones(4)), runtime.device_put(np.ones(4))
    exe(x, y)
    assert x.is_deleted() and not y.is_deleted()


def test_donated_argument_out_of_range():
    with pytest.raises(ValueError, match="out of range"):
        runtime.compile(module(DONATE), donated_args=(2,))


def test_deleted_argument_without_donation(add_f32):
    x = runtime.device_put(np.ones(4, np.float32))
    x.delete()
    with pytest.raises(DeletedArrayError):
        add_f32(x, np.ones(4, np.float32))


# ----------------------------------------------------------------------------
# The C++ fast path


class Jitted:
    """A minimal jit built as the jit layer will be: cache_miss compiles once."""

    def __init__(self, text, static_argnums=(), donated_args=()):
        self.text, self.donated_args = text, donated_args
        self.misses = 0
        self.executable = None
        self.fast = runtime.make_fast_function(
            "f", self.miss, static_argnums, donates=bool(donated_args)
        )
        self.static_argnums = static_argnums

    def miss(self, *args, **kwargs):
        self.misses += 1
        _, leaves = runtime.flatten_arguments(args, kwargs, self.static_argnums)
        if self.executable is None:
            self.executable = runtime.compile(module(self.text), donated_args=self.donated_args)
        outs = self.executable(*leaves)
        return self.unflatten(outs), runtime.fast_path_data(self.executable, self.treedef)

    treedef = runtime.pytree_registry().flatten(0)[1]

    def unflatten(self, outs):
        return self.treedef.unflatten(outs)


def test_fast_path_hits_skip_python():
    f = Jitted(ADD_F32)
    x, y = runtime.device_put(np.arange(4, dtype=np.float32)), runtime.device_put(np.ones(4))
    for _ in range(5):
        out = f.fast(x, y)
        assert type(out) is Array
        np.testing.assert_array_equal(np.asarray(out), np.arange(4) + 1)
    assert f.misses == 1
    # Host values sign differently: one more miss, then C++ puts them on the device.
    for k in range(3):
        out = f.fast(np.full(4, k, np.float32), np.ones(4, np.float32))
        np.testing.assert_array_equal(np.asarray(out), np.full(4, k + 1))
    assert f.misses == 2


def test_fast_path_dict_output_order():
    # {"sum": s, "prod": p} flattens as (prod, sum): the program must return
    # its results in that order, or fast-path calls would swap them.
    leaves, treedef = runtime.pytree_registry().flatten({"sum": 0, "prod": 0})
    assert leaves == [0, 0] and treedef.unflatten(["P", "S"]) == {"prod": "P", "sum": "S"}
    text = """
        func.func public @main(%x: tensor<4xf32>, %y: tensor<4xf32>)
            -> (tensor<4xf32>, tensor<4xf32>) {
          %p = stablehlo.multiply %x, %y : tensor<4xf32>
          %s = stablehlo.add %x, %y : tensor<4xf32>
          return %p, %s : tensor<4xf32>, tensor<4xf32>
        }"""
    f = Jitted(text)
    f.treedef = treedef
    x, y = np.arange(4, dtype=np.float32), np.full(4, 3, np.float32)
    for _ in range(3):
        out = f.fast(x, y)
        np.testing.assert_array_equal(np.asarray(out["sum"]), x + y)
        np.testing.assert_array_equal(np.asarray(out["prod"]), x * y)
    assert f.misses == 1


def test_fast_path_static_args_kwargs_and_custom_nodes():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    runtime.register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    sig, leaves = runtime.flatten_arguments(("static", Pair(1, 2)), {"z": 4, "y": 3}, (0,))
    assert leaves == [1, 2, 3, 4]
    f = Jitted(ADD_F32, static_argnums=(0,))
    x = runtime.device_put(np.ones(4, np.float32))
    for _ in range(2):
        np.testing.assert_array_equal(np.asarray(f.fast("a", Pair(x, x))), np.full(4, 2))
    assert f.misses == 1
    f.fast("b", Pair(x, x))  # another static value: another entry
    assert f.misses == 2


def test_fast_path_with_a_donated_input():
    f = Jitted(ADD_F32, donated_args=(0,))
    y = runtime.device_put(np.ones(4, np.float32))
    x0 = runtime.device_put(np.zeros(4, np.float32))
    out = f.fast(x0, y)
    for _ in range(3):
        out = f.fast(out, y)
    np.testing.assert_array_equal(np.asarray(out), np.full(4, 4))
    assert x0.is_deleted() and f.misses == 1
    assert f.fast._cache_size() == 1
    with pytest.raises(DeletedArrayError, match="donating it"):
        f.fast(x0, y)
    x1 = runtime.device_put(np.zeros(4, np.float32))
    x1.delete()
    with pytest.raises(DeletedArrayError, match="donating it"):
        f.fast(x1, y)
    # The errors left the cache entry intact: fresh arrays still hit C++.
    np.testing.assert_array_equal(np.asarray(f.fast(runtime.device_put(np.ones(4)), y)), 2)
    # Both deleted arrays went to cache_miss (a donated input is .delete()d after
    # its call, so every fast function sends it to Python, not to XLA).
    assert f.misses == 3


def test_fast_path_follows_x64():
    text = """
        func.func public @main(%x: tensor<f32>) -> tensor<f32> {
          %0 = stablehlo.negate %x : tensor<f32>
          return %0 : tensor<f32>
        }"""
    f = Jitted(text)
    assert float(np.asarray(f.fast(2.0))) == -2.0
    assert float(np.asarray(f.fast(3.0))) == -3.0
    assert f.misses == 1
    runtime.set_x64(True)
    try:
        # x64 joins the cache key: a Python float is f64 now, so it misses.
        with pytest.raises(TypeError, match="expected float32"):
            f.fast(4.0)
        assert f.misses == 2
    finally:
        runtime.set_x64(False)
    assert float(np.asarray(f.fast(5.0))) == -5.0 and f.misses == 2


def test_disable_jit_calls_fun():
    calls = []

    def fun(x):
        calls.append(x)
        return "eager"

    fast = runtime.make_fast_function("g", lambda x: ("compiled", None), fun=fun)
    assert fast(1) == "compiled"
    runtime.set_disable_jit(True)
    try:
        assert fast(2) == "eager" and calls == [2]
    finally:
        runtime.set_disable_jit(False)


# ----------------------------------------------------------------------------
# Threads


def test_concurrent_calls(add_f32):
    f = Jitted(ADD_F32)
    f.executable = add_f32
    barrier = threading.Barrier(4)

    def work(seed):
        barrier.wait()
        rng = np.random.default_rng(seed)
        for _ in range(200):
            x = rng.standard_normal(4).astype(np.float32)
            y = rng.standard_normal(4).astype(np.float32)
            (out,) = add_f32(runtime.device_put(x), y)
            np.testing.assert_array_equal(np.asarray(out), x + y)
            np.testing.assert_array_equal(np.asarray(f.fast(x, y)), x + y)
        return True

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, range(8)))


# ----------------------------------------------------------------------------
# Several devices (a fresh process: the client is made once per process)

MULTI_DEVICE = """
import numpy as np, pytest
from lamella.lax import runtime
from lamella.lax.mlir_context import parse_module
d0, d1 = runtime.devices()
assert runtime.device_count() == 2
x = runtime.device_put(np.arange(4, dtype=np.float32), d1)
assert x.device == d1 and x.committed
moved = runtime.device_put(x, d0)
assert moved.device == d0 and np.asarray(moved).tolist() == [0, 1, 2, 3]
exe = runtime.compile(parse_module('''
func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}'''), d1)
(out,) = exe(x)
assert out.device == d1 and np.asarray(out).tolist() == [0, 2, 4, 6]
(out,) = exe(runtime.device_put(np.ones(4, np.float32)))  # uncommitted on d0: moved
assert out.device == d1 and np.asarray(out).tolist() == [2, 2, 2, 2]
with pytest.raises(ValueError, match="committed to"):
    exe(moved)
print("ok")
"""


def test_several_cpu_devices():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2")
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run(
        [sys.executable, "-c", MULTI_DEVICE], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "ok"


# ----------------------------------------------------------------------------
# mlir_context


def test_dtype_table_round_trips():
    with mlir_context.make_context():
        for dtype in mlir_context.SUPPORTED_DTYPES:
            t = mlir_context.tensor_type((2, 1), dtype)
            assert mlir_context.shape_and_dtype(t) == ((2, 1), dtype)
        with pytest.raises(TypeError, match="dynamic"):
            mlir_context.shape_and_dtype(ir.Type.parse("tensor<?xf32>"))
        with pytest.raises(TypeError, match="ranked tensor"):
            mlir_context.shape_and_dtype(ir.Type.parse("!stablehlo.token"))
        with pytest.raises(TypeError, match="no StableHLO element type"):
            mlir_context.element_type(np.dtype("U1"))


def test_builders_and_printing():
    ctx = mlir_context.make_context()
    stablehlo, func = mlir_context.stablehlo, mlir_context.func
    with ctx, ir.Location.unknown():
        mod = ir.Module.create()
        t = mlir_context.tensor_type((3,), np.float32)
        with ir.InsertionPoint(mod.body):
            main = func.FuncOp("main", ir.FunctionType.get([t], [t]))
            main.attributes["sym_visibility"] = ir.StringAttr.get("public")
            block = main.add_entry_block()
            with ir.InsertionPoint(block):
                func.ReturnOp([stablehlo.ExpOp(block.arguments[0]).result])
    text = mlir_context.module_to_string(mod)
    assert "stablehlo.exponential" in text
    assert '"stablehlo.exponential"' in mlir_context.module_to_string(mod, generic=True)
    assert mlir_context.main_signature(mod) == ([((3,), np.float32)], [((3,), np.float32)])
    (out,) = runtime.compile(mod)(np.zeros(3, np.float32))
    np.testing.assert_array_equal(np.asarray(out), np.ones(3))


def test_docstring_examples():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for mod in (mlir_context, runtime):
            result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
            assert result.failed == 0 and result.attempted > 0


def test_dlpack_round_trip_shares_cpu_memory():
    x = runtime.device_put(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert x.__dlpack_device__() == (1, 0)
    host = np.from_dlpack(x)
    np.testing.assert_array_equal(host, np.arange(6, dtype=np.float32).reshape(2, 3))
    back = runtime.from_dlpack(np.arange(4, dtype=np.int16))
    assert back.dtype == np.int16 and back.shape == (4,)
    np.testing.assert_array_equal(np.asarray(back), np.arange(4))
    # 64-bit data is narrowed like every host value when x64 is off.
    assert runtime.from_dlpack(np.arange(2.0)).dtype == np.float32
    with pytest.raises(TypeError, match="DLPack"):
        runtime.from_dlpack([1, 2])
