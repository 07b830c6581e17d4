"""Tests for lamella.numpy.dtypes: JAX's promotion lattice, weak types, dtype helpers."""

import ml_dtypes
import numpy as np
import pytest

import lamella.numpy as lnp
from lamella.core import canonicalize_dtype, enable_x64
from lamella.numpy import dtypes as ldt

# The promotion table, written out from JAX's documented lattice (x64 enabled).
# `i*`/`f*`/`c*` are weakly typed results; `-` means no implicit promotion.
COLS = "b1 u8 u16 u32 u64 i8 i16 i32 i64 bf16 f16 f32 f64 c64 c128 e4m3 e5m2 i* f* c*".split()
TABLE = """
b1   b1   u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 e4m3 e5m2 i*   f*   c*
u8   u8   u8   u16  u32  u64  i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128 e4m3 e5m2 u8   f*   c*
u16  u16  u16  u16  u32  u64  i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128 e4m3 e5m2 u16  f*   c*
u32  u32  u32  u32  u32  u64  i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128 e4m3 e5m2 u32  f*   c*
u64  u64  u64  u64  u64  u64  f*   f*   f*   f*   bf16 f16  f32  f64  c64  c128 e4m3 e5m2 u64  f*   c*
i8   i8   i16  i32  i64  f*   i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 e4m3 e5m2 i8   f*   c*
i16  i16  i16  i32  i64  f*   i16  i16  i32  i64  bf16 f16  f32  f64  c64  c128 e4m3 e5m2 i16  f*   c*
i32  i32  i32  i32  i64  f*   i32  i32  i32  i64  bf16 f16  f32  f64  c64  c128 e4m3 e5m2 i32  f*   c*
i64  i64  i64  i64  i64  f*   i64  i64  i64  i64  bf16 f16  f32  f64  c64  c128 e4m3 e5m2 i64  f*   c*
bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 bf16 f32  f32  f64  c64  c128 -    -    bf16 bf16 c64
f16  f16  f16  f16  f16  f16  f16  f16  f16  f16  f32  f16  f32  f64  c64  c128 -    -    f16  f16  c64
f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f32  f64  c64  c128 -    -    f32  f32  c64
f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  f64  c128 c128 -    -    f64  f64  c128
c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c64  c128 c64  c128 -    -    c64  c64  c64
c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 c128 -    -    c128 c128 c128
e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 e4m3 -    -    -    -    -    -    e4m3 -    e4m3 e4m3 -
e5m2 e5m2 e5m2 e5m2 e5m2 e5m2 e5m2 e5m2 e5m2 e5m2 -    -    -    -    -    -    -    e5m2 e5m2 e5m2 -
i*   i*   u8   u16  u32  u64  i8   i16  i32  i64  bf16 f16  f32  f64  c64  c128 e4m3 e5m2 i*   f*   c*
f*   f*   f*   f*   f*   f*   f*   f*   f*   f*   bf16 f16  f32  f64  c64  c128 e4m3 e5m2 f*   f*   c*
c*   c*   c*   c*   c*   c*   c*   c*   c*   c*   c64  c64  c64  c128 c64  c128 -    -    c*   c*   c*
"""  # noqa: E501
ROWS = {line.split()[0]: dict(zip(COLS, line.split()[1:], strict=True))
        for line in TABLE.strip().splitlines()}

DTYPES = {
    "b1": np.dtype(bool), "u8": np.dtype("uint8"), "u16": np.dtype("uint16"),
    "u32": np.dtype("uint32"), "u64": np.dtype("uint64"), "i8": np.dtype("int8"),
    "i16": np.dtype("int16"), "i32": np.dtype("int32"), "i64": np.dtype("int64"),
    "bf16": np.dtype(ml_dtypes.bfloat16), "f16": np.dtype("float16"),
    "f32": np.dtype("float32"), "f64": np.dtype("float64"), "c64": np.dtype("complex64"),
    "c128": np.dtype("complex128"), "e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
    "e5m2": np.dtype(ml_dtypes.float8_e5m2),
}
# Weak kinds: the Python types stand for weakly typed scalars; the 64-bit dtype
# is what a weak result has with x64 on.
WEAK = {"i*": (int, "i64"), "f*": (float, "f64"), "c*": (complex, "c128")}
TO_32 = {"i64": "i32", "u64": "u32", "f64": "f32", "c128": "c64"}


def _arg(name):
    return WEAK[name][0] if name in WEAK else DTYPES[name]


def _expected(entry, x64):
    """(dtype, weak) for a table entry; None for no promotion."""
    if entry == "-":
        return None
    weak = entry in WEAK
    name = WEAK[entry][1] if weak else entry
    return DTYPES[name if x64 else TO_32.get(name, name)], weak


def test_table_is_symmetric():
    for a in COLS:
        for b in COLS:
            assert ROWS[a][b] == ROWS[b][a], (a, b)


PAIRS = [(a, b) for a in COLS for b in COLS]


@pytest.mark.parametrize("x64", [True, False], ids=["x64", "x32"])
@pytest.mark.parametrize("a,b", PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_promotion_table(a, b, x64):
    expected = _expected(ROWS[a][b], x64)
    with enable_x64(x64):
        if expected is None:
            with pytest.raises(ldt.TypePromotionError):
                lnp.result_type(_arg(a), _arg(b))
            with pytest.raises(ldt.TypePromotionError):
                lnp.promote_types(_arg(a), _arg(b))
            return
        assert ldt.result_type(_arg(a), _arg(b), return_weak_type_flag=True) == expected
        # jnp.promote_types is canonicalized only when both arguments are narrow dtypes
        # (the other cases are in test_promote_types_is_jaxs_...).
        if x64 or all(n not in TO_32 and n not in WEAK for n in (a, b)):
            assert lnp.promote_types(_arg(a), _arg(b)) == expected[0]


@pytest.mark.parametrize("a", ["u8", "i16", "f16", "bf16", "c64", "b1"])
def test_promotion_with_python_values_matches_weak_column(a):
    # Arrays and Python scalars give what the table's dtype and weak columns say.
    x = np.zeros(3, DTYPES[a])
    for value, col in ((1, "i*"), (1.0, "f*"), (1j, "c*")):
        got = ldt.result_type(x, value, return_weak_type_flag=True)
        assert got == _expected(ROWS[a][col], False)


def test_result_type_mixed_scalars_and_arrays():
    assert lnp.result_type(np.float16(1), 2.0) == np.float16
    assert ldt.result_type(2, 2.0, return_weak_type_flag=True) == (np.dtype("float32"), True)
    assert ldt.result_type(2, 3, return_weak_type_flag=True) == (np.dtype("int32"), True)
    assert ldt.result_type(True, 2, return_weak_type_flag=True) == (np.dtype("int32"), True)
    assert ldt.result_type(True, False, return_weak_type_flag=True) == (np.dtype(bool), False)
    assert ldt.result_type(np.int8(1), 2, 3.0, return_weak_type_flag=True) == \
        (np.dtype("float32"), True)
    assert lnp.result_type(lnp.int8(1), np.int16(2)) == np.int16
    assert lnp.result_type(lnp.bfloat16(1), 1.0) == ml_dtypes.bfloat16
    assert lnp.result_type("float16", np.uint8) == np.float16
    assert lnp.result_type(lnp.float32) == np.float32
    with enable_x64():
        assert lnp.result_type(2, 2.0) == np.float64
        assert lnp.result_type(np.float32(1), 2.0) == np.float32
        assert lnp.result_type(np.zeros(2, np.int64), 1.0) == np.float64


def test_result_type_reads_weak_arrays():
    weak_f16 = ldt.convert_element_type(2.0, np.float16, True)
    assert ldt.result_type(weak_f16, return_weak_type_flag=True) == (np.dtype("float16"), True)
    # All weak: the concrete dtypes join and the result stays weak.
    assert ldt.result_type(weak_f16, 1, return_weak_type_flag=True) == (np.dtype("float16"), True)
    assert ldt.result_type(weak_f16, 1.0, return_weak_type_flag=True) == \
        (np.dtype("float32"), True)
    assert ldt.result_type(weak_f16, np.int8(1), return_weak_type_flag=True) == \
        (np.dtype("float32"), True)
    assert ldt.result_type(weak_f16, lnp.float16(1), return_weak_type_flag=True) == \
        (np.dtype("float16"), False)


def test_result_type_under_jit_reads_tracers():
    from lamella.core import jit
    seen = []

    def f(x, y):
        seen.append(ldt.result_type(x, y, 1.0, return_weak_type_flag=True))
        return x

    jit(f)(np.zeros(2, np.int8), np.zeros(2, np.uint8))
    assert seen == [(np.dtype("float32"), True)]


def test_result_type_errors():
    with pytest.raises(ValueError, match="at least one"):
        lnp.result_type()
    with pytest.raises(TypeError):
        lnp.result_type(object())
    with pytest.raises(ldt.TypePromotionError, match="no implicit promotion"):
        lnp.result_type(ml_dtypes.float8_e4m3fn, np.float32)


def test_promote_types_is_jaxs_without_canonicalizing_64_bit_arguments():
    # JAX 0.10.2 without x64: 64-bit arguments and Python types give 64-bit results,
    # but uint32 with a signed type climbs only to int32.
    assert lnp.promote_types(np.float64, np.float64) == np.float64
    assert lnp.promote_types(np.float32, np.float64) == np.float64
    assert lnp.promote_types(np.uint64, np.int64) == np.float64
    assert lnp.promote_types(int, int) == np.int64 and lnp.promote_types(bool, int) == np.int64
    assert lnp.promote_types(np.int8, float) == np.float64
    assert lnp.promote_types(complex, np.int32) == np.complex128
    assert lnp.promote_types(float, np.float16) == np.float16
    assert lnp.promote_types(np.int32, np.uint32) == np.int32
    assert lnp.promote_types(np.int8, np.uint32) == np.int32
    assert lnp.promote_types(ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e4m3fn) == \
        ml_dtypes.float8_e4m3fn
    with enable_x64():
        assert lnp.promote_types(np.int32, np.uint32) == np.int64
        assert lnp.promote_types(float, float) == np.float64
        assert lnp.promote_types(lnp.float64, "float32") == np.float64


def test_dtype_finfo_iinfo_are_jaxs_classes():
    # As in jax.numpy: NumPy's dtype class (no canonicalization), ml_dtypes' finfo/iinfo.
    assert lnp.dtype is np.dtype and lnp.dtype("float64") == np.float64
    assert lnp.dtype(lnp.bfloat16) == ml_dtypes.bfloat16
    assert lnp.dtype(lnp.uint8(3)) == np.uint8
    assert isinstance(lnp.finfo(lnp.float32), lnp.finfo)
    assert isinstance(lnp.iinfo(lnp.int8), lnp.iinfo) and lnp.iinfo(lnp.int8).max == 127
    assert lnp.finfo(lnp.float64).bits == 64  # describes the dtype asked for
    assert lnp.finfo(lnp.ones(2)).dtype == np.float32
    assert float(lnp.finfo(lnp.bfloat16).eps) == 2.0 ** -7


def test_can_cast():
    assert lnp.can_cast(lnp.int8, lnp.int32)
    assert not lnp.can_cast(np.int32, np.int8)
    assert lnp.can_cast(np.int32, np.int8, casting="unsafe")
    assert lnp.can_cast(lnp.bfloat16, np.float32)
    assert not lnp.can_cast(np.float32, lnp.bfloat16)
    assert lnp.can_cast(np.float32, lnp.bfloat16, casting="same_kind")
    assert lnp.can_cast(lnp.float32(1), np.float64)
    assert not lnp.can_cast(np.float64, np.int64, casting="same_kind")
    with pytest.raises(TypeError, match="Python scalars"):
        lnp.can_cast(1, np.int8)


def test_issubdtype():
    assert lnp.issubdtype(lnp.bfloat16, np.floating)
    assert lnp.issubdtype(ml_dtypes.bfloat16, np.inexact)
    assert lnp.issubdtype(ml_dtypes.float8_e5m2, np.number)
    assert not lnp.issubdtype(lnp.bfloat16, np.integer)
    assert not lnp.issubdtype(lnp.bfloat16, np.complexfloating)
    assert lnp.issubdtype(lnp.bfloat16, lnp.bfloat16)
    assert not lnp.issubdtype(lnp.bfloat16, np.float16)
    assert lnp.issubdtype(np.float32, np.floating)
    assert lnp.issubdtype(lnp.int8, np.signedinteger)
    assert not lnp.issubdtype(lnp.uint8, np.signedinteger)
    assert lnp.issubdtype(np.floating, np.inexact)
    assert lnp.issubdtype("complex64", np.complexfloating)


@pytest.mark.parametrize("dt,kind,expected", [
    (lnp.bfloat16, "real floating", True),
    (ml_dtypes.float8_e4m3fn, "numeric", True),
    (np.float32, "integral", False),
    (np.int32, ("bool", "integral"), True),
    (np.uint8, "signed integer", False),
    (np.uint8, "unsigned integer", True),
    (np.bool_, "numeric", False),
    (np.bool_, "bool", True),
    (np.complex64, "complex floating", True),
    (np.complex64, "real floating", False),
    (np.float16, np.float16, True),
    (np.float16, (np.float32, "integral"), False),
])
def test_isdtype(dt, kind, expected):
    assert lnp.isdtype(dt, kind) is expected


def test_isdtype_rejects_unknown_kind():
    with pytest.raises(ValueError, match="Unknown dtype kind"):
        lnp.isdtype(np.float32, "floating")


def test_finfo_iinfo():
    assert float(lnp.finfo(lnp.bfloat16).eps) == 2.0 ** -7
    assert float(lnp.finfo(lnp.bfloat16).max) == float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)
    assert lnp.finfo(lnp.bfloat16).bits == 16
    assert float(lnp.finfo(ml_dtypes.float8_e4m3fn).max) == 448.0
    assert float(lnp.finfo(ml_dtypes.float8_e5m2).max) == 57344.0
    assert lnp.finfo(np.float32).eps == np.finfo(np.float32).eps
    assert lnp.finfo(lnp.float64).bits == 64
    assert lnp.finfo(lnp.float16(1)).bits == 16
    with pytest.raises(TypeError):  # as in JAX: a Python float is not a dtype
        lnp.finfo(1.0)
    assert lnp.iinfo(lnp.int8).min == -128
    assert lnp.iinfo(np.uint16).max == 65535
    assert lnp.iinfo(lnp.int32(1)).max == 2 ** 31 - 1
    with pytest.raises(ValueError):
        lnp.iinfo(np.float32)


SCALAR_TYPES = [
    ("bool_", "bool"), ("int8", "int8"), ("int16", "int16"), ("int32", "int32"),
    ("int64", "int64"), ("uint8", "uint8"), ("uint16", "uint16"), ("uint32", "uint32"),
    ("uint64", "uint64"), ("float16", "float16"), ("bfloat16", "bfloat16"),
    ("float32", "float32"), ("float64", "float64"), ("complex64", "complex64"),
    ("complex128", "complex128"), ("float_", "float64"), ("int_", "int64"),
    ("complex_", "complex128"),
]


@pytest.mark.parametrize("name,dt_name", SCALAR_TYPES)
def test_scalar_types_are_dtype_like_and_build_arrays(name, dt_name):
    scalar_type = getattr(lnp, name)
    dt = np.dtype(getattr(ml_dtypes, dt_name, dt_name))
    assert np.dtype(scalar_type) == dt
    assert scalar_type == dt and dt == scalar_type
    assert np.zeros(2, scalar_type).dtype == dt
    for x64 in (False, True):
        with enable_x64(x64):
            want = canonicalize_dtype(dt)
            x = scalar_type(3)
            assert x.dtype == want and x.shape == () and not x.weak_type
            assert type(x).__name__ != "ndarray"
            assert np.asarray(x) == np.asarray(3, want)
            y = scalar_type([1, 0, 2])
            assert y.dtype == want and y.shape == (3,)
            np.testing.assert_array_equal(np.asarray(y), np.array([1, 0, 2]).astype(want))


def test_scalar_type_conversions():
    assert float(lnp.int32(3.7)) == 3
    assert bool(lnp.bool_(2.5)) is True
    assert lnp.float32(np.arange(3, dtype=np.float64)).dtype == np.float32
    assert lnp.float16(lnp.int32(7)).dtype == np.float16
    assert repr(lnp.float32) == "<class 'lamella.numpy.float32'>"
    assert hash(lnp.float32) == hash(np.float32) and lnp.float32 != "float32"  # as JAX's


def test_scalar_types_are_classes_as_in_jax():
    assert isinstance(lnp.float32, type) and lnp.double is lnp.float64
    # isinstance asks about NumPy scalars of the type; an Array never is one (as in JAX).
    assert isinstance(np.float32(1), lnp.float32)
    assert not isinstance(lnp.float32(1), lnp.float32)
    assert not isinstance(lnp.ones(2, lnp.float32), lnp.float32)
    assert lnp.issubdtype(lnp.float32, lnp.floating) and lnp.int4.dtype == ml_dtypes.int4
    assert lnp.int1.dtype == ml_dtypes.int1 and lnp.uint1.dtype == ml_dtypes.uint1


def test_promote_dtypes_keeps_weak_types():
    a, b = ldt.promote_dtypes(1, 2.0)
    assert (a.dtype, a.weak_type, b.dtype, b.weak_type) == (np.float32, True, np.float32, True)
    a, b = ldt.promote_dtypes(lnp.float16(1), 2.0)
    assert (a.dtype, a.weak_type, b.dtype, b.weak_type) == (np.float16, False, np.float16, False)
    a, b = ldt.promote_dtypes(lnp.int8(1), lnp.uint8(1))
    assert (a.dtype, b.dtype, a.weak_type) == (np.int16, np.int16, False)
    (c,) = ldt.promote_dtypes(3)
    assert (c.dtype, c.weak_type) == (np.int32, True)
    (d,) = ldt.promote_dtypes(np.arange(2, dtype=np.float64))
    assert (d.dtype, d.weak_type, type(d).__name__ != "ndarray") == (np.float32, False, True)
    # A weak join reached from strong inputs (uint64 with int8) is weak too.
    with enable_x64():
        a, b = ldt.promote_dtypes(lnp.uint64(1), lnp.int8(1))
        assert (a.dtype, a.weak_type) == (np.float64, True)


def test_promote_dtypes_inexact_numeric_complex():
    a, b = ldt.promote_dtypes_inexact(lnp.int32(1), lnp.int8(2))
    assert (a.dtype, b.dtype, a.weak_type) == (np.float32, np.float32, False)
    (a,) = ldt.promote_dtypes_inexact(2)
    assert (a.dtype, a.weak_type) == (np.float32, True)
    a, b = ldt.promote_dtypes_inexact(lnp.bfloat16(1), 2)
    assert (a.dtype, b.dtype) == (ml_dtypes.bfloat16, ml_dtypes.bfloat16)
    with enable_x64():
        (a,) = ldt.promote_dtypes_inexact(lnp.int16(1))
        assert a.dtype == np.float64
    (a,) = ldt.promote_dtypes_numeric(lnp.bool_(True))
    assert (a.dtype, a.weak_type) == (np.int32, False)
    a, b = ldt.promote_dtypes_numeric(lnp.uint8(1), True)
    assert (a.dtype, b.dtype) == (np.uint8, np.uint8)
    a, b = ldt.promote_dtypes_complex(lnp.float32(1), 2)
    assert (a.dtype, b.dtype, a.weak_type) == (np.complex64, np.complex64, False)
    (a,) = ldt.promote_dtypes_complex(lnp.float16(1))
    assert a.dtype == np.complex64
    with enable_x64():
        (a,) = ldt.promote_dtypes_complex(lnp.float64(1))
        assert a.dtype == np.complex128
        (a,) = ldt.promote_dtypes_complex(lnp.int32(1))
        assert a.dtype == np.complex128
        (a,) = ldt.promote_dtypes_complex(1.0)
        assert (a.dtype, a.weak_type) == (np.complex128, True)
