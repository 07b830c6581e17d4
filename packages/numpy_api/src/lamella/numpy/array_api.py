"""What makes lamella.numpy an array API standard namespace beyond jax.numpy's names:
the version, the inspection object, `astype`, `from_dlpack`, constants, and small
introspection helpers NumPy also has (`ndim`, `isscalar`, `iscomplexobj`, ...).

>>> astype(np.int32([1, 2]), np.float16)
Array([1., 2.], dtype=float16)
>>> __array_namespace_info__().default_dtypes()["real floating"]
dtype('float32')
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from lamella import lax
from lamella.core import dtypes as core_dtypes
from lamella.core.trace import Tracer, aval_of
from lamella.lax import runtime
from lamella.numpy import dtypes, ufuncs, util
from lamella.numpy.placement import copy_array
from lamella.numpy.util import asarray_internal

__all__ = [
    "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_invert",
    "bitwise_left_shift", "bitwise_right_shift", "bool", "pow",
    "__array_api_version__", "__array_namespace_info__", "astype", "e", "euler_gamma",
    "from_dlpack", "inf", "iscomplex", "iscomplexobj", "isreal", "isrealobj", "isscalar",
    "nan", "ndim", "newaxis", "pi", "result_type", "shape", "size",
]

__array_api_version__ = "2023.12"

e = np.e
pi = np.pi
inf = np.inf
nan = np.nan
euler_gamma = np.euler_gamma
newaxis = None

# The array API's spellings of NumPy's functions (jax.numpy has both).
acos, acosh, asin, asinh = ufuncs.arccos, ufuncs.arccosh, ufuncs.arcsin, ufuncs.arcsinh
atan, atan2, atanh = ufuncs.arctan, ufuncs.arctan2, ufuncs.arctanh
bitwise_invert = ufuncs.invert
bitwise_left_shift, bitwise_right_shift = ufuncs.left_shift, ufuncs.right_shift
pow = ufuncs.power
bool = dtypes.bool_


def ndim(a: Any) -> int:
    """The number of dimensions of an array-like.

    >>> ndim([[1, 2]])
    2
    """
    return util.ndim(a)


def shape(a: Any) -> tuple[int, ...]:
    """The shape of an array-like (tracers included).

    >>> shape(np.zeros((2, 3)))
    (2, 3)
    """
    return util.shape(a)


def size(a: Any, axis: int | Sequence[int] | None = None) -> int:
    """The number of elements of an array-like, or along `axis` (an int or a tuple).

    >>> size(np.zeros((2, 3))), size(np.zeros((2, 3)), axis=1)
    (6, 3)
    """
    dims = util.shape(a)
    if axis is None:
        return util.size(a)
    return math.prod(dims[d] for d in util.canonicalize_axes(axis, len(dims)))


def result_type(*args: Any) -> np.dtype:
    """The dtype JAX's promotion gives `args` (arrays, dtypes, scalars), canonical for
    the x64 setting.

    >>> result_type(np.int8, 2.0)
    dtype('float32')
    """
    return dtypes.result_type(*args)


def astype(x: Any, dtype: Any, /, *, copy: builtins.bool = False, device: Any = None) -> Any:
    """`x` converted to `dtype` (the array API's spelling of `x.astype(dtype)`); with
    `copy=False` an Array already of that dtype is returned as it is.

    >>> astype(np.float32([1.7]), np.int32)
    Array([1], dtype=int32)
    """
    x = asarray_internal(x)
    out = lax.convert_element_type(x, dtypes.canonicalize_user_dtype(dtype, "astype"))
    if copy and out is x:
        out = copy_array(out)
    if device is not None and not isinstance(out, Tracer):
        out = lax.device_put(out, device)
    return out


def from_dlpack(x: Any, /, *, device: Any = None, copy: builtins.bool | None = None) -> Any:
    """An Array from any DLPack producer on the CPU (NumPy arrays, torch tensors...).

    Foreign data is copied unless `copy=False`, which shares it (row-major data aligned
    to 64 bytes, or a ValueError): writes through the producer then show in the Array.

    >>> from_dlpack(np.arange(2, dtype=np.int32))
    Array([0, 1], dtype=int32)
    """
    return runtime.from_dlpack(x, device, copy)


def isscalar(element: Any) -> builtins.bool:
    """True for Python and NumPy scalars and 0-d arrays (as in jax.numpy).

    >>> isscalar(1.0), isscalar(np.ones(2))
    (True, False)
    """
    if isinstance(element, (np.generic, int, float, complex, builtins.bool)):
        return True
    if isinstance(element, (Tracer, lax.Array, np.ndarray)):
        return aval_of(element).shape == ()
    return False


def iscomplexobj(x: Any) -> builtins.bool:
    """True when `x` has a complex dtype (whatever its values)."""
    if x is None:
        return False
    return dtypes.issubdtype(dtypes.result_type(x), np.complexfloating)


def isrealobj(x: Any) -> builtins.bool:
    """True when `x` does not have a complex dtype."""
    return not iscomplexobj(x)


def iscomplex(x: Any) -> Any:
    """Elementwise: a nonzero imaginary part."""
    return ufuncs.not_equal(ufuncs.imag(x), 0)


def isreal(x: Any) -> Any:
    """Elementwise: a zero imaginary part."""
    return ufuncs.equal(ufuncs.imag(x), 0)


class _NamespaceInfo:
    """The array API's inspection object (`__array_namespace_info__()`)."""

    def capabilities(self) -> dict[str, builtins.bool]:
        # Boolean-mask indexing and unique/nonzero need concrete data: their
        # output shape depends on it (outside jit they work).
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": 64}

    def default_device(self) -> Any:
        return runtime.default_device()

    def devices(self) -> list[Any]:
        return runtime.devices()

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        canon = core_dtypes.canonicalize_dtype
        return {"real floating": canon(np.dtype(np.float64)),
                "complex floating": canon(np.dtype(np.complex128)),
                "integral": canon(np.dtype(np.int64)), "indexing": canon(np.dtype(np.int64))}

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype]:
        names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float32", "float64", "complex64", "complex128"]
        available = {n: np.dtype(n) for n in names
                     if core_dtypes.canonicalize_dtype(np.dtype(n)) == np.dtype(n)}
        if kind is None:
            return available
        return {n: d for n, d in available.items() if dtypes.isdtype(d, kind)}


def __array_namespace_info__() -> _NamespaceInfo:
    """The inspection object of the array API standard (2023.12)."""
    return _NamespaceInfo()

