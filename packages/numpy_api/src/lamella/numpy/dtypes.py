"""Dtypes in lamella.numpy: scalar types, JAX's type promotion (the lattice lives in
lamella.core.dtypes and is re-exported here) and the promotion helpers the
numpy functions use.

Promotion is the least upper bound in a lattice (not NumPy's value-based
table). Python scalars are *weakly typed*: they sit at the bottom of their kind
(`i*`, `f*`, `c*`) and adopt the other operand's dtype, so
`float16 array + 2.0` stays float16. Without `enable_x64` every result is
canonicalized to 32 bits, so nothing silently becomes float64.

>>> promote_types(int8, uint8)
dtype('int16')
>>> result_type(float16, 2.0)
dtype('float16')
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any

import ml_dtypes

import numpy as np
from lamella.core import device_put, enable_x64
from lamella.core import dtypes as core_dtypes
from lamella.core.dtypes import (
    TypePromotionError,
    _dtype_and_weak_type,
    _raw_dtype,
    result_type,
)
from lamella.core.source_info import user_frame
from lamella.lax.conversion import convert_element_type

__all__ = [
    "TypePromotionError", "bfloat16", "bool_", "can_cast", "complex64", "complex128",
    "complex_", "dtype", "finfo", "float16", "float32", "float64", "float_", "iinfo",
    "int8", "int16", "int32", "int64", "int_", "isdtype", "issubdtype", "promote_dtypes",
    "promote_dtypes_complex", "promote_dtypes_inexact", "promote_dtypes_numeric",
    "promote_types", "result_type", "uint8", "uint16", "uint32", "uint64",
    "canonicalize_user_dtype",
]


def issubdtype(arg1: Any, arg2: Any) -> bool:
    """Whether `arg1` (a dtype or scalar type) is a subtype of `arg2` in NumPy's type
    hierarchy, with bfloat16 and the float8 types as floating types.

    >>> issubdtype(bfloat16, np.floating), issubdtype(np.int8, np.unsignedinteger)
    (True, False)
    """
    return core_dtypes.issubdtype(arg1, arg2)


def _is_narrow(t: Any) -> bool:
    """A dtype that canonicalization leaves alone (not a Python type, not 64-bit)."""
    if t in (int, float, complex):
        return False
    dt = np.dtype(t)
    return core_dtypes.canonicalize_dtype(dt) == dt


def promote_types(a: Any, b: Any) -> np.dtype:
    """The least upper bound of two dtypes in JAX's lattice (Python's int, float and
    complex types count as weak). As jax.numpy's, it is not canonicalized when an
    argument is 64-bit or a Python type (`float` alone stands for float64); a result
    that climbs to 64 bits from narrower dtypes (uint32 with a signed type) is.

    >>> promote_types(np.float32, np.float64), promote_types(float, np.float16)
    (dtype('float64'), dtype('float16'))
    >>> promote_types(np.uint32, np.int8), promote_types(float, float)
    (dtype('int32'), dtype('float64'))
    """
    if not (_is_narrow(a) and _is_narrow(b)):
        with enable_x64(True):  # canonicalizing under x64 changes nothing
            return core_dtypes.promote_types(a, b)
    return core_dtypes.promote_types(a, b)


# As in jax.numpy: NumPy's dtype class, and ml_dtypes' machine-limit classes (which know
# bfloat16 and the float8 types); `finfo(float64)` describes float64 even without x64.
dtype = np.dtype
finfo = ml_dtypes.finfo
iinfo = ml_dtypes.iinfo


def can_cast(from_: Any, to: Any, casting: str = "safe") -> bool:
    """Whether NumPy's `casting` rule allows `from_` (a dtype or array) to become `to`.

    >>> can_cast(int8, int32)
    True
    >>> can_cast(float32, bfloat16)
    False
    >>> can_cast(float32, bfloat16, casting="same_kind")
    True
    """
    if core_dtypes.is_python_scalar(from_):
        # As in NumPy 2: the answer for a Python scalar used to depend on its value.
        raise TypeError("can_cast does not accept Python scalars; pass a dtype or an array")
    return bool(np.can_cast(_raw_dtype(from_), _raw_dtype(to), casting=casting))


_KIND_TESTS: dict[str, Callable[[np.dtype], bool]] = {
    "bool": lambda d: d.kind == "b",
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": lambda d: d.kind in "iu",
    "real floating": core_dtypes.is_float,
    "complex floating": lambda d: d.kind == "c",
    "numeric": lambda d: d.kind in "iuc" or core_dtypes.is_float(d),
}


def isdtype(dtype: Any, kind: Any) -> bool:
    """The array API's `isdtype`: is `dtype` of `kind` (a kind name, a dtype or a tuple)?

    >>> isdtype(bfloat16, "real floating")
    True
    >>> isdtype(int32, ("bool", "integral"))
    True
    """
    dt = np.dtype(dtype)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for k in kinds:
        if isinstance(k, str):
            if k not in _KIND_TESTS:
                raise ValueError(f"Unknown dtype kind {k!r}; expected one of {sorted(_KIND_TESTS)}")
            if _KIND_TESTS[k](dt):
                return True
        elif dt == np.dtype(k):
            return True
    return False


# --- scalar types ----------------------------------------------------------------
def _as_array(x: Any) -> Any:
    # NumPy values whose dtype is not canonical would pass through lax
    # conversions unchanged (their aval is already canonical); put them on the
    # device first so every result is an Array.
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
    if isinstance(x, (np.ndarray, np.generic)):
        return device_put(x)
    return x


class _ScalarMeta(type):
    """The metaclass of lamella.numpy's scalar types (`float32`, `int8`, ...).

    Each scalar type is a class, as in jax.numpy: calling it builds an Array of
    its dtype, it compares equal to the NumPy scalar type, and `isinstance`
    asks whether a value is a NumPy scalar of that type (an Array never is).
    """

    dtype: np.dtype

    @property
    def __numpy_dtype__(cls) -> np.dtype:  # NumPy >= 2.4 reads this for np.dtype(cls)
        return cls.dtype

    def __hash__(cls) -> int:
        return hash(cls.dtype.type)

    def __eq__(cls, other: object) -> bool:
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other: object) -> bool:
        return not cls == other

    def __call__(cls, x: Any) -> Any:
        dt = canonicalize_user_dtype(cls.dtype, "asarray")
        if type(x) is int:
            x = np.asarray(x, dtype=dt)  # must fit (OverflowError), as asarray(x, dtype)
        return convert_element_type(_as_array(x), dt, False)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls.dtype.type)


def _scalar_type(name: str, scalar: Any) -> _ScalarMeta:
    dt = np.dtype(scalar)
    doc = (f"The {dt.name} scalar type: `{name}(x)` is x as a {dt.name} Array, and "
           f"`{name}` works wherever a dtype is expected.")
    return _ScalarMeta(name, (), {"dtype": dt, "__module__": "lamella.numpy",
                                  "__qualname__": name, "__doc__": doc})


bool_ = _scalar_type("bool_", np.bool_)
int8 = _scalar_type("int8", np.int8)
int16 = _scalar_type("int16", np.int16)
int32 = _scalar_type("int32", np.int32)
int64 = _scalar_type("int64", np.int64)
uint8 = _scalar_type("uint8", np.uint8)
uint16 = _scalar_type("uint16", np.uint16)
uint32 = _scalar_type("uint32", np.uint32)
uint64 = _scalar_type("uint64", np.uint64)
float16 = _scalar_type("float16", np.float16)
bfloat16 = _scalar_type("bfloat16", ml_dtypes.bfloat16)
float32 = _scalar_type("float32", np.float32)
float64 = _scalar_type("float64", np.float64)
complex64 = _scalar_type("complex64", np.complex64)
complex128 = _scalar_type("complex128", np.complex128)
# The 64-bit defaults; constructing one without x64 gives a 32-bit Array.
float_ = float64
int_ = int64
complex_ = complex128


# --- dtypes a caller asks for ---------------------------------------------------------
def canonicalize_user_dtype(dtype: Any, name: str) -> np.dtype:
    """The canonical form of a dtype a caller asked `name` for; like JAX, a
    UserWarning when x64 is off and it is a 64-bit one (it is truncated).

    >>> canonicalize_user_dtype("int8", "zeros")
    dtype('int8')
    """
    requested = np.dtype(dtype)
    canonical = core_dtypes.canonicalize_dtype(requested)
    if canonical != requested:
        warnings.warn(
            f"Explicitly requested dtype {requested.name} requested in {name} is not "
            f"available, and will be truncated to dtype {canonical.name}. To enable more "
            "dtypes, set lamella.core.config.update('enable_x64', True) or the "
            "LAMELLA_ENABLE_X64=1 environment variable.", UserWarning,
            stacklevel=_user_stacklevel())
    return canonical


def _user_stacklevel() -> int:
    """The `stacklevel` (seen from `canonicalize_user_dtype`) of the user's line."""
    info = user_frame(2)
    frame, level = sys._getframe(1), 1
    while frame is not None and info is not None:
        if frame.f_code.co_filename == info.filename and frame.f_lineno == info.lineno:
            return level
        frame, level = frame.f_back, level + 1
    return 2


# --- promotion helpers for lamella.numpy --------------------------------------------
def _convert_all(args: tuple[Any, ...], to: np.dtype, weak: bool) -> list[Any]:
    return [convert_element_type(_as_array(_operand_int(x)), to, weak) for x in args]


def _operand_int(x: Any) -> Any:
    """A Python int operand must fit the default integer type, as in JAX (whose
    jitted ufuncs take it as an int32 argument): `x + 2**40` is an OverflowError
    rather than a silently wrapped value."""
    if type(x) is int:
        info = np.iinfo(core_dtypes.canonicalize_dtype(np.int64))
        if not int(info.min) <= x <= int(info.max):
            raise OverflowError(f"Python integer {x} out of bounds for {info.dtype.name}")
    return x


def promote_dtypes(*args: Any) -> list[Any]:
    """`args` as Arrays of their common dtype; weak when the promotion result is weak.

    >>> promote_dtypes(int8(1), 2.0)
    [Array(1., dtype=float32, weak_type=True), Array(2., dtype=float32, weak_type=True)]
    """
    if len(args) < 2:
        return [convert_element_type(_as_array(x), *_canonical_and_weak(x)) for x in args]
    to, weak = result_type(*args, return_weak_type_flag=True)
    return _convert_all(args, to, weak)


def _canonical_and_weak(x: Any) -> tuple[np.dtype, bool]:
    dt, weak = _dtype_and_weak_type(x)
    return core_dtypes.canonicalize_dtype(dt), weak


def _promote_then(args: tuple[Any, ...], widen: Callable[[np.dtype], np.dtype]) -> list[Any]:
    to, weak = result_type(*args, return_weak_type_flag=True)
    return _convert_all(args, core_dtypes.canonicalize_dtype(widen(to)), weak)


def _to_inexact(dt: np.dtype) -> np.dtype:
    return dt if core_dtypes.is_inexact(dt) else np.dtype("float64")


def _to_numeric(dt: np.dtype) -> np.dtype:
    return np.dtype("int64") if dt.kind == "b" else dt


def _to_complex(dt: np.dtype) -> np.dtype:
    return np.dtype("complex128" if _to_inexact(dt).name in ("float64", "complex128")
                    else "complex64")


def promote_dtypes_inexact(*args: Any) -> list[Any]:
    """Like `promote_dtypes`, then integers and bools become the default float.

    >>> promote_dtypes_inexact(int32(1), int8(2))[0].dtype
    dtype('float32')
    """
    return _promote_then(args, _to_inexact)


def promote_dtypes_numeric(*args: Any) -> list[Any]:
    """Like `promote_dtypes`, then bools become the default integer.

    >>> promote_dtypes_numeric(bool_(True))[0].dtype
    dtype('int32')
    """
    return _promote_then(args, _to_numeric)


def promote_dtypes_complex(*args: Any) -> list[Any]:
    """Like `promote_dtypes`, then the result becomes complex (float64 goes to complex128).

    >>> promote_dtypes_complex(float32(1), 2)[0].dtype
    dtype('complex64')
    """
    return _promote_then(args, _to_complex)
