"""lamella.numpy: a drop-in accelerated NumPy built from lamella.lax primitives.

Names, signatures and dtype rules follow `jax.numpy`; this module currently
exports the dtype layer (type promotion, scalar types, machine limits).
"""

from lamella.numpy import array_methods as _array_methods
from lamella.numpy.dtypes import (
    TypePromotionError,
    bfloat16,
    bool_,
    can_cast,
    complex64,
    complex128,
    complex_,
    dtype,
    finfo,
    float16,
    float32,
    float64,
    float_,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    int_,
    isdtype,
    issubdtype,
    promote_types,
    result_type,
    uint8,
    uint16,
    uint32,
    uint64,
)
from lamella.numpy.products import matmul
from lamella.numpy.ufuncs import *  # noqa: F403
from lamella.numpy.ufuncs import __all__ as _ufunc_names

__version__ = "0.1.0"

__all__ = [
    "TypePromotionError", "bfloat16", "bool_", "can_cast", "complex64", "complex128",
    "complex_", "dtype", "finfo", "float16", "float32", "float64", "float_", "iinfo",
    "int8", "int16", "int32", "int64", "int_", "isdtype", "issubdtype", "promote_types",
    "result_type", "uint8", "uint16", "uint32", "uint64", "matmul", *_ufunc_names,
]

_array_methods.install()  # operators on Arrays and tracers call the functions above
