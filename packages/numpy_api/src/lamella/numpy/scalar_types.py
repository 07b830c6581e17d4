"""Type names of jax.numpy: the dtype categories (generic, number, floating, ...),
scalar types (double, single, ...), the ml_dtypes types, and `ndarray` for
isinstance checks of Arrays and traced values."""

from __future__ import annotations

from typing import Any

import ml_dtypes

import numpy as np
from lamella import lax
from lamella.core.trace import Tracer
from lamella.numpy.dtypes import _scalar_type, complex64, complex128, float32, float64, uint64

try:
    from numpy.exceptions import ComplexWarning
except ImportError:  # NumPy < 1.25
    from numpy import ComplexWarning  # type: ignore[attr-defined,no-redef]

__all__ = [
    "ComplexWarning", "cdouble", "character", "complexfloating", "csingle", "double",
    "flexible", "floating", "generic", "inexact", "integer", "ndarray", "number", "object_",
    "signedinteger", "single", "uint", "unsignedinteger",
]


generic = np.generic
number = np.number
inexact = np.inexact
floating = np.floating
complexfloating = np.complexfloating
integer = np.integer
signedinteger = np.signedinteger
unsignedinteger = np.unsignedinteger
character = np.character
flexible = np.flexible
object_ = np.object_

# NumPy's C-style names are the same classes as the sized ones, as in jax.numpy.
double = float64
single = float32
cdouble = complex128
csingle = complex64
uint = uint64

_ML_DTYPE_NAMES = (
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3b11fnuz", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e3m4", "float8_e4m3", "float8_e8m0fnu", "float4_e2m1fn", "float6_e2m3fn",
    "float6_e3m2fn", "int1", "int2", "int4", "uint1", "uint2", "uint4",
)
for _name in _ML_DTYPE_NAMES:
    if hasattr(ml_dtypes, _name):
        globals()[_name] = _scalar_type(_name, getattr(ml_dtypes, _name))
        __all__.append(_name)
__all__.sort()


class _ArrayMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, (lax.Array, Tracer))

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, (lax.Array, Tracer))


class ndarray(metaclass=_ArrayMeta):
    """The array type: `isinstance(x, ndarray)` holds for Arrays and for traced values
    inside jit/grad/vmap, as for `jax.numpy.ndarray`.

    >>> from lamella.numpy import fabs
    >>> isinstance(fabs(1.0), ndarray)
    True
    """
