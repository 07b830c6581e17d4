"""Dtypes as lamella sees them (JAX's `jax.dtypes`): 32-bit canonicalization,
weak types, float0, and JAX's type-promotion lattice.

With `enable_x64` off (the default) 64-bit requests become 32-bit, as in JAX.
Python scalars are *weakly typed*: `x * 2.0` keeps `x`'s float16. Integer and
boolean values have tangents of dtype `float0`, a zero-sized type that says
"no derivative here".

Promotion is the least upper bound in a lattice (not NumPy's value-based
table): weak Python scalars sit at the bottom of their kind and adopt the
other operand's dtype, so nothing silently becomes float64.

>>> result_type(np.int8, np.uint8)
dtype('int16')
>>> result_type(np.float16, 2.0)
dtype('float16')

bfloat16 and the float8 family come from ml_dtypes, which lamella.lax depends
on; core alone works without it (those dtypes are then unavailable).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lamella.core.config import config

try:
    import ml_dtypes
except ImportError:  # core alone: NumPy's dtypes only
    ml_dtypes = None

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


def canonicalize_dtype(dtype: Any, allow_extended_dtype: bool = False) -> np.dtype:
    """Maps a dtype to the one lamella computes in (32-bit unless x64 is on). Extended
    dtypes (PRNG keys) have no NumPy counterpart: they pass through only when allowed.

    >>> canonicalize_dtype("float64")
    dtype('float32')
    """
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        if _extended_type(dtype) is None:
            raise
        if not allow_extended_dtype:
            raise ValueError(f"canonicalize_dtype called on extended dtype {dtype} with "
                             f"allow_extended_dtype=False") from None
        return dtype
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


def primal_dtype_to_tangent_dtype(primal_dtype: Any) -> np.dtype:
    """JAX's name for `tangent_dtype`: float0 for integers and booleans.

    >>> primal_dtype_to_tangent_dtype(np.int32) == float0
    True
    """
    return tangent_dtype(np.dtype(primal_dtype))


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


# ---------------------------------------------------------------------------
# Extended dtypes: types NumPy has no dtype for (typed PRNG keys).


class extended(np.generic):
    """Base of the scalar types of extended dtypes (an extended dtype's `.type`)."""


class prng_key(extended):
    """The scalar type of typed PRNG key dtypes: `issubdtype(key.dtype, prng_key)`."""


def _extended_type(x: Any) -> type | None:
    """The `.type` of an extended dtype object, or None for NumPy dtypes and others."""
    typ = getattr(x, "type", None)
    if isinstance(typ, type) and issubclass(typ, extended) and not isinstance(x, type):
        return typ
    return None


# ---------------------------------------------------------------------------
# The promotion lattice.


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
    if ml_dtypes is not None and hasattr(ml_dtypes, name))

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
        if is_float(dt):
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
    """A dtype spec (a dtype, a name, a scalar type, an object with a `dtype`), not a value."""
    if isinstance(x, (np.dtype, str, type)):
        return True
    return isinstance(getattr(x, "dtype", None), np.dtype) and not hasattr(x, "shape")


def _value_dtype_and_weak_type(x: Any) -> tuple[np.dtype, bool]:
    """The dtype of a value, and whether it is weak (Python scalars, weak arrays)."""
    if type(x) in _PYTHON_SCALAR_DTYPES:
        return python_scalar_dtype(x), is_weakly_typed(x)
    aval = getattr(x, "aval", None)  # tracers and the runtime's arrays
    if aval is not None and isinstance(getattr(aval, "dtype", None), np.dtype):
        return aval.dtype, bool(aval.weak_type)
    if isinstance(x, (np.ndarray, np.generic)):
        return canonicalize_dtype(x.dtype), False
    if isinstance(getattr(x, "dtype", None), np.dtype):  # ShapeDtypeStruct, avals, ...
        return x.dtype, bool(getattr(x, "weak_type", False))
    raise TypeError(f"Value {x!r} of type {type(x).__name__} is not a valid lamella type: "
                    "expected an array, a scalar, a dtype or a scalar type.")


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
    return _value_dtype_and_weak_type(x)


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

    >>> result_type(np.float16(1), 2.0)
    dtype('float16')
    >>> result_type(2, 2.0, return_weak_type_flag=True)
    (dtype('float32'), True)
    >>> result_type(np.int32, np.uint32)        # int64, canonicalized without x64
    dtype('int32')
    """
    out, weak = _lattice_result_type(*args)
    out = canonicalize_dtype(out)
    if config.read("numpy_dtype_promotion") == "strict":
        _check_strict(args, out)
    return (out, weak) if return_weak_type_flag else out


def _check_strict(args: tuple[Any, ...], out: np.dtype) -> None:
    """Strict promotion: strongly typed inputs must all have the result's dtype, so only
    weakly typed Python scalars of a kind the result can hold promote."""
    pairs = [_dtype_and_weak_type(a) for a in args]
    strong = {canonicalize_dtype(d) for d, weak in pairs if not weak}
    if strong and strong != {out}:
        names = ", ".join(repr(str(d)) if not w else repr(str(type(a)))
                          for a, (d, w) in zip(args, pairs))
        raise TypePromotionError(
            f"Input dtypes ({names}) have no available implicit dtype promotion path when "
            "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired "
            "output type, or set jax_numpy_dtype_promotion=standard.")


def promote_types(a: Any, b: Any) -> np.dtype:
    """The least upper bound of two dtypes, canonicalized (Python int/float/complex are weak).

    >>> promote_types(np.uint8, np.int8)
    dtype('int16')
    >>> promote_types(np.float16, np.int32)
    dtype('float16')
    >>> promote_types(float, np.float16)     # the Python type is a weak float
    dtype('float16')
    """
    (da, wa), (db, wb) = _dtype_and_weak_type(a), _dtype_and_weak_type(b)
    if da == db and wa == wb:
        return canonicalize_dtype(da)
    return canonicalize_dtype(_node_dtype(_least_upper_bound({_node(da, wa),
                                                                          _node(db, wb)})))


def _raw_dtype(x: Any) -> np.dtype:
    """Like `dtype` but uncanonicalized, so `finfo(float64)` describes float64."""
    if _is_dtype_like(x) or x is None:
        return np.dtype(x if x is not None else "float64")
    return _value_dtype_and_weak_type(x)[0]


# ---------------------------------------------------------------------------
# Classification and machine limits.

_FLOAT_ANCESTORS = (np.floating, np.inexact, np.number, np.generic)
_ABSTRACT_SCALARS = frozenset({np.generic, np.number, np.integer, np.signedinteger,
                               np.unsignedinteger, np.inexact, np.floating,
                               np.complexfloating, np.flexible, np.character})


def issubdtype(a: Any, b: Any) -> bool:
    """`np.issubdtype` that also files bfloat16 and the float8 family under np.floating.

    (With ml_dtypes installed, as lamella.lax requires, ``issubdtype("bfloat16",
    np.floating)`` is True; NumPy's own answer is False.)

    >>> issubdtype(np.float16, np.floating)
    True
    >>> issubdtype(np.int8, np.floating)
    False
    """
    arg1, arg2 = a, b
    if isinstance(arg2, type) and issubclass(arg2, extended):
        typ = _extended_type(arg1)
        return typ is not None and issubclass(typ, arg2)
    if _extended_type(arg1) is not None:
        return False
    if not isinstance(arg1, (np.dtype, str, type)) and _is_dtype_like(arg1):
        arg1 = arg1.dtype
    if not isinstance(arg2, (np.dtype, str, type)) and _is_dtype_like(arg2):
        arg2 = arg2.dtype
    if isinstance(arg1, type) and arg1 in _ABSTRACT_SCALARS:
        return bool(np.issubdtype(arg1, arg2))
    dt = np.dtype(arg1)
    # ml_dtypes' floats subclass np.generic directly, so NumPy says no here.
    if is_float(dt) and any(arg2 is ancestor for ancestor in _FLOAT_ANCESTORS):
        return True
    return bool(np.issubdtype(dt, arg2))


def finfo(x: Any) -> ml_dtypes.finfo:
    """Machine limits of a floating dtype, bfloat16 and float8 included.

    >>> float(finfo(np.float16).eps)        # finfo("bfloat16").eps is 2**-7
    0.0009765625
    >>> finfo(np.float64).bits              # describes the dtype asked for
    64
    """
    return (np.finfo if ml_dtypes is None else ml_dtypes.finfo)(_raw_dtype(x))


def iinfo(x: Any) -> ml_dtypes.iinfo:
    """Machine limits of an integer dtype.

    >>> iinfo(np.int8).max
    127
    """
    return (np.iinfo if ml_dtypes is None else ml_dtypes.iinfo)(_raw_dtype(x))


def scalar_type_of(x: Any) -> type:
    """The Python scalar type a value of `x`'s dtype converts to (bool, int, float, complex).

    >>> scalar_type_of(1.0), scalar_type_of(np.int8(3)), scalar_type_of(np.complex64(1))
    (<class 'float'>, <class 'int'>, <class 'complex'>)
    """
    dtype = _dtype_and_weak_type(x)[0]
    if dtype.kind == "b":
        return bool
    if dtype.kind in "iu":
        return int
    if is_float(dtype):
        return float
    if dtype.kind == "c":
        return complex
    raise TypeError(f"Invalid scalar value {x!r} of dtype {dtype}")


_SUB_BYTE_BITS = {"int2": 2, "uint2": 2, "int4": 4, "uint4": 4, "float4_e2m1fn": 4}


def itemsize_bits(dtype: Any) -> int:
    """The number of bits one element of `dtype` takes (4 for int4, 8 for bool).

    >>> itemsize_bits(np.float32), itemsize_bits(np.bool_)
    (32, 8)
    """
    dt = np.dtype(dtype)
    return _SUB_BYTE_BITS.get(dt.name, dt.itemsize * 8)


if ml_dtypes is not None:
    bfloat16: type = ml_dtypes.bfloat16
