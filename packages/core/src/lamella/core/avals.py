"""Abstract values: what tracing knows about an array (shape, dtype, weak type).

`get_aval` maps any value a transformation may see (NumPy arrays and scalars,
Python scalars, tracers, and array types registered by higher layers) to its
`ShapedArray`. Unknown types get an error that names the type.

>>> import numpy as np
>>> get_aval(np.ones((5, 10), np.float32)).str_short()
'f32[5,10]'
>>> get_aval(2.0)
ShapedArray(float32[], weak_type=True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lamella.core import dtypes


class ShapedArray:
    """The abstract value of an array: `ShapedArray((3,), np.float32)`.

    `sharding` is the array's layout when it is part of its type (a NamedSharding
    over a mesh with Explicit axes, JAX 0.10's explicit sharding); None otherwise.
    `vma` is, inside a shard_map body, the set of manual mesh axes the value varies
    over (JAX's varying manual axes, printed `f32[4]{V:x}`); empty everywhere else.
    """

    __slots__ = ("shape", "dtype", "weak_type", "sharding", "vma")
    array_abstraction_level = 1

    def __init__(self, shape: Sequence[int], dtype: Any, weak_type: bool = False,
                 sharding: Any = None, vma: frozenset = frozenset()):
        # Abstract-eval rules build avals for every traced operation: skip the
        # conversions when the shape is already a tuple and the dtype a dtype.
        self.shape = shape if type(shape) is tuple else tuple(int(d) for d in shape)
        self.dtype = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
        self.weak_type = bool(weak_type)
        self.sharding = sharding
        self.vma = vma

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    def update(self, shape=None, dtype=None, weak_type=None, sharding=False,
               vma=None) -> ShapedArray:
        """A copy with the given fields replaced; a new shape drops the sharding
        unless one is given (`sharding=None` drops it too), the vma stays."""
        if sharding is False:
            sharding = self.sharding if shape is None else None
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type, sharding,
                           self.vma if vma is None else vma)

    def strip_weak_type(self) -> ShapedArray:
        return self.update(weak_type=False) if self.weak_type else self

    def to_tangent_aval(self) -> ShapedArray:
        """The aval of this value's tangents: same shape, float0 for integers."""
        return ShapedArray(self.shape, dtypes.tangent_dtype(self.dtype), self.weak_type,
                           self.sharding, self.vma)

    def str_short(self, short_dtypes: bool = True) -> str:
        """`f32[8,4]`; a sharded dimension shows its mesh axes: `f32[8@x,4@(y,z)]`;
        a value varying over manual axes inside shard_map: `f32[2]{V:x}`, `{V:(x,y)}`."""
        name = dtypes.short_name(self.dtype) if short_dtypes else self.dtype.name
        if self.sharding is None:
            text = f"{name}[{','.join(map(str, self.shape))}]"
        else:
            dims = []
            for size, entry in zip(self.shape,
                                   self.sharding.spec._normalized(len(self.shape))):
                axes = entry[0] if len(entry) == 1 else f"({','.join(entry)})"
                dims.append(f"{size}@{axes}" if entry else str(size))
            text = f"{name}[{','.join(dims)}]"
        if self.vma:
            axes = [str(n) for n in manual_axes_typing.order(self.vma)]
            text += "{V:" + (str(axes[0]) if len(axes) == 1 else f"({','.join(axes)})") + "}"
        return text

    def __eq__(self, other: object) -> bool:
        return (type(other) is ShapedArray and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type
                and self.sharding == other.sharding and self.vma == other.vma)

    def __hash__(self) -> int:
        if self.vma:
            return hash((self.shape, self.dtype, self.weak_type, self.sharding, self.vma))
        return hash((self.shape, self.dtype, self.weak_type, self.sharding))

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.str_short(short_dtypes=False)}{weak})"

    def __str__(self) -> str:
        return ("~" if self.weak_type else "") + self.str_short(short_dtypes=False)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d array)")
        return self.shape[0]


class _ExplicitSharding:
    """Whether any aval has carried an explicit sharding in this process, and the step
    that then sets each traced equation's result shardings (`sharding_rules.propagate`).
    Until one does, tracing and lowering skip their explicit-sharding steps entirely:
    they install them from the hooks `when_enabled` registers."""

    on = False
    propagate: Callable[..., Any] | None = None

    def __init__(self) -> None:
        self._hooks: list[Callable[[], None]] = []

    def when_enabled(self, hook: Callable[[], None]) -> None:
        """Runs `hook` once explicit sharding is first used (at once if it has been)."""
        self._hooks.append(hook)
        if self.on:
            hook()

    def enable(self) -> None:
        if not self.on:
            self.on = True
            for hook in self._hooks:
                hook()


explicit_sharding = _ExplicitSharding()


class _ManualAxesTyping:
    """The step that, while a shard_map body is traced, gives each traced equation's
    results the manual axes they vary over (`lamella.lax`'s vma rules); None outside
    one, so tracing elsewhere does no vma work."""

    propagate: Callable[..., Any] | None = None
    # The axes in the order types print them: JAX's is the mesh's, which lamella.lax
    # knows (an aval does not); sorted until it says.
    order: Callable[[frozenset], list] = staticmethod(lambda vma: sorted(vma, key=str))


manual_axes_typing = _ManualAxesTyping()


class ShapeDtypeStruct:
    """A shape and dtype standing in for an array, e.g. to trace without data.

    >>> ShapeDtypeStruct((2, 3), np.float32)
    ShapeDtypeStruct(shape=(2, 3), dtype=float32)
    """

    __slots__ = ("shape", "dtype", "sharding", "weak_type")

    def __init__(self, shape: Sequence[int], dtype: Any, *, sharding: Any = None,
                 weak_type: bool = False):
        # Symbolic dimensions (lamella.core.shape_poly's, for export) stay symbolic.
        self.shape = tuple(d if hasattr(d, "evaluate") else int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.sharding = sharding
        self.weak_type = weak_type

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))

    @classmethod
    def like(cls, x: Any) -> ShapeDtypeStruct:
        """The shape, dtype and weak type of the array (or scalar, or tracer) `x`.

        >>> ShapeDtypeStruct.like(np.ones((2, 2), np.int8))
        ShapeDtypeStruct(shape=(2, 2), dtype=int8)
        """
        aval = get_aval(x)
        return cls(aval.shape, aval.dtype, sharding=getattr(x, "sharding", None),
                   weak_type=aval.weak_type)

    def update(self, **changes: Any) -> ShapeDtypeStruct:
        """A copy with `shape`, `dtype`, `sharding` or `weak_type` replaced."""
        fields = dict(shape=self.shape, dtype=self.dtype, sharding=self.sharding,
                      weak_type=self.weak_type)
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"ShapeDtypeStruct.update got unexpected fields {sorted(unknown)}")
        fields.update(changes)
        return ShapeDtypeStruct(fields.pop("shape"), fields.pop("dtype"), **fields)

    def __repr__(self) -> str:
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype, self.weak_type))


def _aval_of_numpy(x: np.ndarray | np.generic) -> ShapedArray:
    return ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype))


def _aval_of_python_scalar(x: Any) -> ShapedArray:
    return ShapedArray((), dtypes.python_scalar_dtype(x), dtypes.is_weakly_typed(x))


# Installed by lamella.core.sharding_rules: (aval, sharding) -> the aval laid out as
# `sharding` says when its mesh has Explicit axes.
typed_aval: Callable[[ShapedArray, Any], ShapedArray] = lambda aval, sharding: aval


def _aval_of_struct(x: ShapeDtypeStruct) -> ShapedArray:
    aval = ShapedArray(x.shape, dtypes.canonicalize_dtype(x.dtype), x.weak_type)
    if x.sharding is None:
        return aval
    return typed_aval(aval, x.sharding)


pytype_aval_mappings: dict[type, Callable[[Any], ShapedArray]] = {
    np.ndarray: _aval_of_numpy,
    bool: _aval_of_python_scalar,
    int: _aval_of_python_scalar,
    float: _aval_of_python_scalar,
    complex: _aval_of_python_scalar,
    ShapeDtypeStruct: _aval_of_struct,
}
"""How each concrete type maps to its aval; higher layers add their Array type."""

array_types: set[type] = {np.ndarray, *(np.dtype(c).type for c in "?bhilqBHILQefdgFDG")}
"""The concrete array types (NumPy's, and the runtime's Array that a higher layer adds)."""


def valid_jaxtype(x: Any) -> bool:
    """Whether `x` is a value lamella computes with: an array, a NumPy or Python scalar
    (a ShapeDtypeStruct describes one but is not one).

    >>> valid_jaxtype(1.0), valid_jaxtype("a"), valid_jaxtype(ShapeDtypeStruct((), "f4"))
    (True, False, False)
    """
    return not isinstance(x, ShapeDtypeStruct) and is_array_like(x)


def get_aval(x: Any) -> ShapedArray:
    """The abstract value of `x`; raises TypeError for non-array values."""
    handler = pytype_aval_mappings.get(type(x))
    if handler is not None:
        return handler(x)
    aval = getattr(x, "aval", None)  # tracers, and any array type that carries one
    if isinstance(aval, ShapedArray):
        return aval
    if isinstance(x, np.generic):
        return _aval_of_numpy(x)
    for base in type(x).__mro__[1:]:
        handler = pytype_aval_mappings.get(base)
        if handler is not None:
            return handler(x)
    raise TypeError(f"Value {x!r} of type {type(x)} is not a valid lamella type: "
                    "expected an array, a NumPy scalar or a Python bool/int/float/complex.")


def is_array_like(x: Any) -> bool:
    """Whether `get_aval` accepts `x`."""
    try:
        get_aval(x)
    except TypeError:
        return False
    return True


def zeros_value(aval: ShapedArray) -> np.ndarray:
    """A concrete NumPy array of zeros with the aval's shape and dtype."""
    return np.zeros(aval.shape, aval.dtype)
