"""Host-side construction, I/O and printing through NumPy: fromiter, fromstring,
save, savez, load, array_str, array_repr, print options, iterable."""

from __future__ import annotations

from typing import Any

import numpy as np
from lamella import lax
from lamella.core import dtypes as core_dtypes
from lamella.core.trace import Tracer
from lamella.numpy.util import (
    asarray_internal,
    concrete_value,
)
from lamella.numpy.util import shape as _shape

__all__ = [
    "array_repr", "array_str", "fromfile", "fromiter", "fromstring", "get_printoptions",
    "iterable",
    "load", "printoptions", "save", "savez", "set_printoptions",
]


def _from_host(x: np.ndarray) -> Any:
    return asarray_internal(x, core_dtypes.canonicalize_dtype(x.dtype))


def fromiter(*args: Any, **kwargs: Any) -> Any:
    """An Array from a Python iterable: `numpy.fromiter(*args, **kwargs)` read on the
    host, then put on the device (consuming an iterator is a side effect, so it is done
    eagerly, outside any transformation). JAX refuses this function; lamella reads.

    >>> fromiter((i * i for i in range(4)), np.int32)
    Array([0, 1, 4, 9], dtype=int32)
    """
    return _from_host(np.fromiter(*args, **kwargs))


def fromfile(*args: Any, **kwargs: Any) -> Any:
    """An Array from a binary or text file: `numpy.fromfile(*args, **kwargs)` read on
    the host, then put on the device (reading a file is a side effect, done eagerly).
    JAX refuses this function; lamella reads.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.bin")
    >>> np.int32([1, 2, 3]).tofile(path)
    >>> fromfile(path, dtype=np.int32)
    Array([1, 2, 3], dtype=int32)
    """
    return _from_host(np.fromfile(*args, **kwargs))


def fromstring(string: str, dtype: Any = float, count: int = -1, *, sep: str) -> Any:
    """An Array parsed from text with separator `sep` (required: NumPy's binary mode is
    deprecated).

    >>> fromstring("1 2 3", dtype=np.int32, sep=" ")
    Array([1, 2, 3], dtype=int32)
    """
    return _from_host(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def iterable(y: Any) -> bool:
    """Whether `y` can be iterated over (0-d arrays cannot).

    >>> from lamella.numpy import fabs
    >>> iterable(np.int32([1, 2])), iterable(fabs(3.0))
    (True, False)
    """
    if isinstance(y, (lax.Array, Tracer, np.ndarray)) and not _shape(y):
        return False  # Array's __iter__ only raises for 0-d once iteration starts
    try:
        iter(y)
    except TypeError:
        return False
    return True


def array_str(a: Any, max_line_width: int | None = None, precision: int | None = None,
              suppress_small: bool | None = None) -> str:
    """NumPy's string form of the (concrete) data of `a`.

    >>> array_str(np.float32([1.5, 2]))
    '[1.5 2. ]'
    """
    return np.array_str(concrete_value(a, "the argument of array_str"), max_line_width,
                        precision, suppress_small)


def array_repr(arr: Any, max_line_width: int | None = None, precision: int | None = None,
               suppress_small: bool | None = None) -> str:
    """NumPy's repr of the (concrete) data of `arr`.

    >>> array_repr(np.int32([1, 2]))
    'array([1, 2], dtype=int32)'
    """
    return np.array_repr(concrete_value(arr, "the argument of array_repr"), max_line_width,
                         precision, suppress_small)


printoptions = np.printoptions
get_printoptions = np.get_printoptions


def set_printoptions(*args: Any, **kwargs: Any) -> None:
    """NumPy's `set_printoptions`, which also formats lamella Arrays' reprs."""
    np.set_printoptions(*args, **kwargs)


def save(file: Any, arr: Any, allow_pickle: bool = True) -> None:
    """Writes `arr` to a .npy file through NumPy."""
    np.save(file, concrete_value(arr, "the array passed to save"), allow_pickle=allow_pickle)


def savez(file: Any, *args: Any, allow_pickle: bool = True, **kwds: Any) -> None:
    """Writes several arrays to an uncompressed .npz file through NumPy."""
    np.savez(file, *(concrete_value(a, "an array passed to savez") for a in args),
             allow_pickle=allow_pickle,
             **{k: concrete_value(v, "an array passed to savez") for k, v in kwds.items()})


def load(file: Any, *args: Any, **kwargs: Any) -> Any:
    """Reads a .npy file as an Array (a .npz file gives NumPy's lazy NpzFile mapping)."""
    out = np.load(file, *args, **kwargs)
    return _from_host(out) if isinstance(out, np.ndarray) else out
