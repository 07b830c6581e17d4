"""JAX's type promotion for lamella.numpy: the lattice, weak types, dtype helpers.

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

from collections.abc import Callable
from typing import Any

import ml_dtypes

import numpy as np
from lamella.core import device_put
from lamella.core import dtypes as core_dtypes
from lamella.core.trace import aval_of
from lamella.lax.conversion import convert_element_type

__all__ = [
    "TypePromotionError", "bfloat16", "bool_", "can_cast", "complex64", "complex128",
    "complex_", "dtype", "finfo", "float16", "float32", "float64", "float_", "iinfo",
    "int8", "int16", "int32", "int64", "int_", "isdtype", "issubdtype", "promote_dtypes",
    "promote_dtypes_complex", "promote_dtypes_inexact", "promote_dtypes_numeric",
    "promote_types", "result_type", "uint8", "uint16", "uint32", "uint64",
]


class TypePromotionError(ValueError):
    """Raised when two dtypes have no implicit promotion (e.g. float8 with float32)."""


# --- the lattice ---------------------------------------------------------------
# Nodes are dtype names plus three weak kinds; names (not np.dtype objects) keep
# lookups exact, since np.dtype("int64") == int compares equal.
_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX = "i*", "f*", "c*"
_WEAK_NODES = (_WEAK_INT, _WEAK_FLOAT, _WEAK_COMPLEX)

# ml_dtypes' narrow floats have no implicit promotion to wider floats, so they
# sit directly above the weak float and below nothing.
_NARROW_FLOATS = tuple(
    name for name in ("float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn",
                      "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
                      "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn")
    if hasattr(ml_dtypes, name))

_EDGES: dict[str, tuple[str, ...]] = {
    "bool": (_WEAK_INT,),
    _WEAK_INT: ("uint8", "int8"),
    # An unsigned type's successor on the signed side is the next wider signed
    # type, which holds both; uint64 has none, so it meets signed ints at f*.
    "uint8": ("uint16", "int16"),
    "uint16": ("uint32", "int32"),
    "uint32": ("uint64", "int64"),
    "uint64": (_WEAK_FLOAT,),
    "int8": ("int16",),
    "int16": ("int32",),
    "int32": ("int64",),
    "int64": (_WEAK_FLOAT,),
    _WEAK_FLOAT: ("float16", "bfloat16", _WEAK_COMPLEX, *_NARROW_FLOATS),
    "float16": ("float32",),
    "bfloat16": ("float32",),
    "float32": ("float64", "complex64"),
    "float64": ("complex128",),
    _WEAK_COMPLEX: ("complex64",),
    "complex64": ("complex128",),
    "complex128": (),
    **{name: () for name in _NARROW_FLOATS},
}


def _upper_bounds() -> dict[str, frozenset[str]]:
    """Each node's set of upper bounds (itself included): the transitive closure."""
    closure: dict[str, frozenset[str]] = {}

    def visit(node: str) -> frozenset[str]:
        if node not in closure:
            above = {node}
            for succ in _EDGES[node]:
                above |= visit(succ)
            closure[node] = frozenset(above)
        return closure[node]

    for node in _EDGES:
        visit(node)
    return closure


_UPPER = _upper_bounds()

_WEAK_DEFAULTS = {
    _WEAK_INT: np.dtype("int64"), _WEAK_FLOAT: np.dtype("float64"),
    _WEAK_COMPLEX: np.dtype("complex128"),
}


def _least_upper_bound(nodes: set[str]) -> str:
    common = frozenset.intersection(*(_UPPER[n] for n in nodes))
    # The join is the common bound that every other common bound lies above.
    for candidate in common:
        if common <= _UPPER[candidate]:
            return candidate
    names = ", ".join(sorted(nodes))
    raise TypePromotionError(
        f"Input dtypes ({names}) have no implicit promotion path; narrow float types "
        "(float8, float6, float4) do not promote implicitly. Convert explicitly, "
        "e.g. x.astype('float32').")


def _node(dt: np.dtype, weak: bool) -> str:
    if weak:
        if dt.kind in "iu":
            return _WEAK_INT
        if core_dtypes.is_float(dt):
            return _WEAK_FLOAT
        if dt.kind == "c":
            return _WEAK_COMPLEX
    if dt.name not in _EDGES:
        raise TypePromotionError(f"dtype {dt} does not take part in type promotion")
    return dt.name


def _node_dtype(node: str) -> np.dtype:
    return _WEAK_DEFAULTS[node] if node in _WEAK_NODES else np.dtype(getattr(ml_dtypes, node, node))


# --- reading dtypes off arguments ----------------------------------------------
_PYTHON_WEAK_TYPES = {int: np.dtype("int64"), float: np.dtype("float64"),
                      complex: np.dtype("complex128")}


def _is_dtype_like(x: Any) -> bool:
    return isinstance(x, (np.dtype, str, type, _ScalarType))


def _dtype_and_weak_type(x: Any) -> tuple[np.dtype, bool]:
    """The (uncanonicalized for dtype specs) dtype of `x` and whether it is weak."""
    if x is None:
        return np.dtype("float64"), False
    # The Python types int/float/complex stand for weakly typed scalars, as in JAX.
    for py_type, default in _PYTHON_WEAK_TYPES.items():
        if x is py_type:
            return default, True
    if _is_dtype_like(x):
        return np.dtype(x), False
    aval = aval_of(x)
    return aval.dtype, aval.weak_type


def _lattice_result_type(*args: Any) -> tuple[np.dtype, bool]:
    """The uncanonicalized join of `args` and whether it is weakly typed."""
    if not args:
        raise ValueError("at least one array or dtype is required")
    pairs = [_dtype_and_weak_type(a) for a in args]
    found = {d for d, _ in pairs}
    weak_flags = [w for _, w in pairs]
    if len(pairs) == 1:
        out, weak = pairs[0]
    elif len(found) == 1 and not all(weak_flags):
        # Identical dtypes need no lattice, which also admits dtypes outside it.
        out, weak = found.pop(), False
    elif all(weak_flags):
        # All weak: join the concrete dtypes (weak float16 with weak float32 is
        # float32) and keep the result weak.
        out, weak = _node_dtype(_least_upper_bound({_node(d, False) for d in found})), True
    else:
        node = _least_upper_bound({_node(d, w) for d, w in pairs})
        out, weak = _node_dtype(node), node in _WEAK_NODES
    return out, weak and out != np.dtype(bool)


def result_type(*args: Any, return_weak_type_flag: bool = False) -> Any:
    """The dtype JAX's promotion gives `args`: arrays, dtypes, scalar types or Python scalars.

    >>> result_type(float16(1), 2.0)
    dtype('float16')
    >>> result_type(2, 2.0, return_weak_type_flag=True)
    (dtype('float32'), True)
    >>> result_type(int32, uint32)        # int64, canonicalized without x64
    dtype('int32')
    """
    out, weak = _lattice_result_type(*args)
    out = core_dtypes.canonicalize_dtype(out)
    return (out, weak) if return_weak_type_flag else out


def promote_types(a: Any, b: Any) -> np.dtype:
    """The least upper bound of two dtypes, canonicalized (Python int/float/complex are weak).

    >>> promote_types(uint8, int8)
    dtype('int16')
    >>> promote_types(bfloat16, float16)
    dtype('float32')
    >>> promote_types(float, float16)     # the Python type is a weak float
    dtype('float16')
    """
    (da, wa), (db, wb) = _dtype_and_weak_type(a), _dtype_and_weak_type(b)
    if da == db and wa == wb:
        return core_dtypes.canonicalize_dtype(da)
    return core_dtypes.canonicalize_dtype(_node_dtype(_least_upper_bound({_node(da, wa),
                                                                          _node(db, wb)})))


def dtype(x: Any) -> np.dtype:
    """The canonical dtype of a dtype spec, scalar type, array or Python scalar.

    >>> dtype("float64")                  # without x64
    dtype('float32')
    >>> dtype(bfloat16)
    dtype(bfloat16)
    >>> dtype(3)
    dtype('int32')
    """
    return core_dtypes.canonicalize_dtype(_dtype_and_weak_type(x)[0])


def _raw_dtype(x: Any) -> np.dtype:
    """Like `dtype` but uncanonicalized, so `finfo(float64)` describes float64."""
    if _is_dtype_like(x) or x is None:
        return np.dtype(x if x is not None else "float64")
    return aval_of(x).dtype


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


# --- classification --------------------------------------------------------------
_FLOAT_ANCESTORS = (np.floating, np.inexact, np.number, np.generic)
_ABSTRACT_SCALARS = frozenset({np.generic, np.number, np.integer, np.signedinteger,
                               np.unsignedinteger, np.inexact, np.floating,
                               np.complexfloating, np.flexible, np.character})


def issubdtype(arg1: Any, arg2: Any) -> bool:
    """`np.issubdtype` that also files bfloat16 and the float8 family under np.floating.

    >>> issubdtype(bfloat16, np.floating)
    True
    >>> issubdtype(int8, np.floating)
    False
    """
    if isinstance(arg1, _ScalarType):
        arg1 = arg1.dtype
    if isinstance(arg2, _ScalarType):
        arg2 = arg2.dtype
    if isinstance(arg1, type) and arg1 in _ABSTRACT_SCALARS:
        return bool(np.issubdtype(arg1, arg2))
    dt = np.dtype(arg1)
    # ml_dtypes' floats subclass np.generic directly, so NumPy says no here.
    if core_dtypes.is_float(dt) and any(arg2 is ancestor for ancestor in _FLOAT_ANCESTORS):
        return True
    return bool(np.issubdtype(dt, arg2))


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


def finfo(x: Any) -> ml_dtypes.finfo:
    """Machine limits of a floating dtype, bfloat16 and float8 included.

    >>> float(finfo(bfloat16).eps)
    0.0078125
    >>> finfo(float64).bits              # describes the dtype asked for
    64
    """
    return ml_dtypes.finfo(_raw_dtype(x))


def iinfo(x: Any) -> ml_dtypes.iinfo:
    """Machine limits of an integer dtype.

    >>> iinfo(int8).max
    127
    """
    return ml_dtypes.iinfo(_raw_dtype(x))


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


class _ScalarType:
    """A dtype-like object (`np.dtype(float32)` works) that builds Arrays when called."""

    __slots__ = ("dtype",)

    def __init__(self, dt: Any):
        self.dtype = np.dtype(dt)

    def __call__(self, x: Any) -> Any:
        return convert_element_type(_as_array(x), self.dtype, False)

    def __repr__(self) -> str:
        return f"lamella.numpy.{self.dtype.name}"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _ScalarType):
            return self.dtype == other.dtype
        try:
            return bool(self.dtype == np.dtype(other))
        except (TypeError, ValueError):  # not dtype-like at all
            return False

    def __hash__(self) -> int:
        return hash(self.dtype)


bool_ = _ScalarType(np.bool_)
int8 = _ScalarType(np.int8)
int16 = _ScalarType(np.int16)
int32 = _ScalarType(np.int32)
int64 = _ScalarType(np.int64)
uint8 = _ScalarType(np.uint8)
uint16 = _ScalarType(np.uint16)
uint32 = _ScalarType(np.uint32)
uint64 = _ScalarType(np.uint64)
float16 = _ScalarType(np.float16)
bfloat16 = _ScalarType(ml_dtypes.bfloat16)
float32 = _ScalarType(np.float32)
float64 = _ScalarType(np.float64)
complex64 = _ScalarType(np.complex64)
complex128 = _ScalarType(np.complex128)
# The 64-bit defaults; constructing one without x64 gives a 32-bit Array.
float_ = float64
int_ = int64
complex_ = complex128


# --- promotion helpers for lamella.numpy --------------------------------------------
def _convert_all(args: tuple[Any, ...], to: np.dtype, weak: bool) -> list[Any]:
    return [convert_element_type(_as_array(x), to, weak) for x in args]


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
