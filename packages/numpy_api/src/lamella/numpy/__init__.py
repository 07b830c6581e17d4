"""lamella.numpy: a drop-in accelerated NumPy built from lamella.lax primitives.

Names, signatures and dtype rules follow `jax.numpy`. Every function is a
composition of lax primitives, so all of it works under jit, grad and vmap.
It is also an array API standard namespace (`__array_api_version__`).

>>> import lamella.numpy as lnp
>>> x = lnp.arange(6.0).reshape(2, 3)
>>> (x @ x.T).sum(), x[:, ::2].mean(axis=0)
(Array(83., dtype=float32), Array([1.5, 3.5], dtype=float32))
"""

import os as _os

from lamella.core.source_info import register_internal_path as _register_internal_path
from lamella.numpy import array_methods as _array_methods
from lamella.numpy import fft, linalg
from lamella.numpy import indexing as _indexing
from lamella.numpy import ufunc_objects as _ufunc_objects
from lamella.numpy.array_api import *  # noqa: F403
from lamella.numpy.array_api import __all__ as _array_api_names
from lamella.numpy.array_api import __array_api_version__, __array_namespace_info__
from lamella.numpy.bit_packing import *  # noqa: F403
from lamella.numpy.bit_packing import __all__ as _bit_packing_names
from lamella.numpy.contractions import *  # noqa: F403
from lamella.numpy.contractions import __all__ as _contraction_names
from lamella.numpy.creation import *  # noqa: F403
from lamella.numpy.creation import __all__ as _creation_names
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
    uint8,
    uint16,
    uint32,
    uint64,
)
from lamella.numpy.einsum import einsum, einsum_path
from lamella.numpy.elementwise_extras import *  # noqa: F403
from lamella.numpy.elementwise_extras import __all__ as _elementwise_extra_names
from lamella.numpy.host_io import *  # noqa: F403
from lamella.numpy.host_io import __all__ as _host_io_names
from lamella.numpy.index_tricks import *  # noqa: F403
from lamella.numpy.index_tricks import __all__ as _index_trick_names
from lamella.numpy.indexing import *  # noqa: F403
from lamella.numpy.indexing import __all__ as _indexing_names
from lamella.numpy.manipulation import *  # noqa: F403
from lamella.numpy.manipulation import __all__ as _manipulation_names
from lamella.numpy.polynomial import *  # noqa: F403
from lamella.numpy.polynomial import __all__ as _polynomial_names
from lamella.numpy.products import matmul
from lamella.numpy.reductions import *  # noqa: F403
from lamella.numpy.reductions import __all__ as _reduction_names
from lamella.numpy.scalar_types import *  # noqa: F403
from lamella.numpy.scalar_types import __all__ as _scalar_type_names
from lamella.numpy.setops import *  # noqa: F403
from lamella.numpy.setops import __all__ as _setop_names
from lamella.numpy.signal import *  # noqa: F403
from lamella.numpy.signal import __all__ as _signal_names
from lamella.numpy.sorting import *  # noqa: F403
from lamella.numpy.sorting import __all__ as _sorting_names
from lamella.numpy.sorting import where as _full_where
from lamella.numpy.ufuncs import *  # noqa: F403
from lamella.numpy.ufuncs import __all__ as _ufunc_names
from lamella.numpy.vectorize import *  # noqa: F403
from lamella.numpy.vectorize import __all__ as _vectorize_names
from lamella.numpy.windows import *  # noqa: F403
from lamella.numpy.windows import __all__ as _window_names

# The full `where` (one-argument form, size=) rather than the three-argument ufunc.
where = _full_where
# The ufunc objects (with reduce, accumulate, at, ...) in place of the plain functions.
_ufunc_object_names = _ufunc_objects.__all__
globals().update({name: getattr(_ufunc_objects, name) for name in _ufunc_object_names})

__version__ = "0.1.0"

_DTYPE_NAMES = [
    "TypePromotionError", "bfloat16", "bool_", "can_cast", "complex64", "complex128",
    "complex_", "dtype", "finfo", "float16", "float32", "float64", "float_", "iinfo",
    "int8", "int16", "int32", "int64", "int_", "isdtype", "issubdtype", "promote_types",
    "result_type", "uint8", "uint16", "uint32", "uint64",
]
_MODULE_NAMES = [
    _array_api_names, _bit_packing_names, _contraction_names, _creation_names,
    _elementwise_extra_names, _host_io_names, _index_trick_names, _indexing_names,
    _manipulation_names, _polynomial_names, _reduction_names, _scalar_type_names,
    _setop_names, _signal_names, _sorting_names, _ufunc_names, _ufunc_object_names,
    _vectorize_names,
    _window_names,
]
__all__ = sorted({
    *_DTYPE_NAMES, "einsum", "einsum_path", "matmul", "fft", "linalg",
    *(name for names in _MODULE_NAMES for name in names),
} - {"install"})

# Operators, methods, __getitem__ and .at on Arrays and tracers call the functions above.
_array_methods.install()
_indexing.install()

_register_internal_path(_os.path.dirname(__file__))  # user lines, not ours, in errors
