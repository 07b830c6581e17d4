"""Dtypes as lamella sees them: 32-bit canonicalization, weak types, float0.

With `enable_x64` off (the default) 64-bit requests become 32-bit, as in JAX.
Python scalars are *weakly typed*: `x * 2.0` keeps `x`'s float16. Integer and
boolean values have tangents of dtype `float0`, a zero-sized type that says
"no derivative here".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lamella.core.config import config

float0: np.dtype = np.dtype([("float0", np.void, 0)])
"""The tangent dtype of integer and boolean values."""

_TO_32BIT = {
    np.dtype("int64"): np.dtype("int32"),
    np.dtype("uint64"): np.dtype("uint32"),
    np.dtype("float64"): np.dtype("float32"),
    np.dtype("complex128"): np.dtype("complex64"),
}

# Floating dtypes that NumPy does not classify as inexact (they come from
# ml_dtypes); recognised by name so that core does not need ml_dtypes.
_EXTRA_FLOAT_NAMES = frozenset({
    "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e4m3b11fnuz", "float8_e5m2",
    "float8_e5m2fnuz", "float8_e3m4", "float8_e4m3", "float8_e8m0fnu", "float4_e2m1fn",
    "float6_e2m3fn", "float6_e3m2fn",
})

_PYTHON_SCALAR_DTYPES = {
    bool: np.dtype("bool"),
    int: np.dtype("int64"),
    float: np.dtype("float64"),
    complex: np.dtype("complex128"),
}


def canonicalize_dtype(dtype: Any) -> np.dtype:
    """Maps a dtype to the one lamella computes in (32-bit unless x64 is on).

    >>> canonicalize_dtype("float64")
    dtype('float32')
    """
    dtype = np.dtype(dtype)
    if config.read("enable_x64"):
        return dtype
    return _TO_32BIT.get(dtype, dtype)


def python_scalar_dtype(value: Any) -> np.dtype:
    """The canonical dtype of a Python scalar (`2.0` is float32 without x64)."""
    return canonicalize_dtype(_PYTHON_SCALAR_DTYPES[type(value)])


def is_python_scalar(value: Any) -> bool:
    return type(value) in _PYTHON_SCALAR_DTYPES


def is_weakly_typed(value: Any) -> bool:
    """Python ints, floats and complexes are weakly typed; bools are not."""
    return type(value) in (int, float, complex)


def is_float(dtype: np.dtype) -> bool:
    """True for real floating dtypes, bfloat16 and the float8 family included."""
    return dtype.kind == "f" or dtype.name in _EXTRA_FLOAT_NAMES


def is_inexact(dtype: np.dtype) -> bool:
    """True for the dtypes that have derivatives: real floats and complexes."""
    return dtype.kind in "fc" or dtype.name in _EXTRA_FLOAT_NAMES


def is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


def tangent_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype of a tangent (or cotangent) for values of `dtype`."""
    return dtype if is_inexact(dtype) else float0


_SHORT_NAMES = {
    "float16": "f16", "float32": "f32", "float64": "f64", "bfloat16": "bf16",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "complex64": "c64", "complex128": "c128", "bool": "bool",
}


def short_name(dtype: np.dtype) -> str:
    """The short dtype name used in jaxprs: `f32`, `i32`, `bool`, `float0` ..."""
    if dtype == float0:
        return "float0"
    return _SHORT_NAMES.get(dtype.name, dtype.name)
