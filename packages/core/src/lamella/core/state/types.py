"""Mutable references: the aval of a ref, index specifications, and the `Ref` view.

A stateful computation (a Pallas kernel, the body of `run_state`) receives
*refs*: values whose aval is `AbstractRef(inner)` and which are read and written
only through the `get`, `swap` and `addupdate` primitives. Indexing a ref
(`ref[0, pl.ds(i, 4)]`) is described statically by an `IndexSpec`, one entry
per dimension of the ref; traced starts and indices travel as operands of the
primitive, so a spec is hashable and a jaxpr stays printable.

>>> import numpy as np
>>> ref = AbstractRef(ShapedArray((4, 8), np.float32))
>>> ref.str_short()
'Ref{f32[4,8]}'
>>> spec, dynamic = index_spec((4, 8), (1, ds(2, 4)))
>>> spec.out_shape, dynamic
((4,), [])
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from lamella.core.avals import ShapedArray
from lamella.core.trace import Tracer, aval_of


class AbstractRef(ShapedArray):
    """The aval of a mutable reference to an array of aval `inner_aval`.

    It is a `ShapedArray` (shape and dtype are the referenced array's), so tracing
    machinery that only looks at shapes handles refs unchanged; the primitives of
    `lamella.core.state` are the only ones that accept it.
    """

    __slots__ = ()

    def __init__(self, inner_aval: ShapedArray):
        super().__init__(inner_aval.shape, inner_aval.dtype, False)

    @property
    def inner_aval(self) -> ShapedArray:
        return ShapedArray(self.shape, self.dtype)

    def update(self, shape=None, dtype=None, weak_type=None) -> AbstractRef:
        return AbstractRef(self.inner_aval.update(shape=shape, dtype=dtype))

    def to_tangent_aval(self) -> AbstractRef:
        return AbstractRef(self.inner_aval.to_tangent_aval())

    def str_short(self, short_dtypes: bool = True) -> str:
        return f"Ref{{{super().str_short(short_dtypes)}}}"

    def __eq__(self, other: object) -> bool:
        return (type(other) is AbstractRef and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self) -> int:
        return hash(("ref", self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"AbstractRef({self.inner_aval!r})"


def is_ref_aval(aval: Any) -> bool:
    return type(aval) is AbstractRef


@dataclasses.dataclass(frozen=True)
class Slice:
    """A strided window `start, start + stride, ..., start + (size - 1) * stride` of one
    dimension; `start` may be traced, `size` and `stride` are static."""

    start: Any
    size: int
    stride: int = 1

    def __post_init__(self):
        if not isinstance(self.size, (int, np.integer)) or self.size < 0:
            raise TypeError(f"A slice's size must be a static non-negative int, got {self.size!r}")
        if not isinstance(self.stride, (int, np.integer)) or self.stride < 1:
            raise TypeError(f"A slice's stride must be a static positive int, got {self.stride!r}")


def ds(start: Any, size: int | None = None, stride: int | None = None) -> Slice | slice:
    """A dynamic slice of `size` elements from `start` (which may be traced).

    `ds(n)` alone is `slice(0, n)`, as in JAX's `pl.ds`.

    >>> ds(2, 4)
    Slice(start=2, size=4, stride=1)
    >>> ds(3)
    slice(0, 3, None)
    """
    if size is None:
        return slice(0, start)
    return Slice(start, int(size) if not isinstance(size, Tracer) else size, stride or 1)


dslice = ds


@dataclasses.dataclass(frozen=True)
class DimIndex:
    """How one dimension of a ref is indexed: an integer (the dimension disappears) or a
    strided slice. `start` is the static start, or None when it is the next operand."""

    is_int: bool
    start: int | None
    size: int = 1
    stride: int = 1


@dataclasses.dataclass(frozen=True)
class IndexSpec:
    """The static description of indexing a ref of `in_shape`, one `DimIndex` per dim."""

    in_shape: tuple[int, ...]
    dims: tuple[DimIndex, ...]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(d.size for d in self.dims if not d.is_int)

    @property
    def num_dynamic(self) -> int:
        return sum(d.start is None for d in self.dims)

    def is_full(self) -> bool:
        """Whether this indexes the whole ref (`ref[...]`)."""
        return all(not d.is_int and d.start == 0 and d.stride == 1 and d.size == n
                   for d, n in zip(self.dims, self.in_shape))

    def __str__(self) -> str:
        if self.is_full():
            return "..."
        parts = []
        for d in self.dims:
            start = "*" if d.start is None else str(d.start)
            if d.is_int:
                parts.append(start)
            else:
                stride = "" if d.stride == 1 else f":{d.stride}"
                parts.append(f"{start}:+{d.size}{stride}")
        return ", ".join(parts)


def _static_int(x: Any) -> int | None:
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"Booleans can't index a ref, got {x!r}")
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, Tracer):
        value = x.to_concrete_value()
        if value is not None and np.ndim(value) == 0:
            return int(value)
        return None
    if isinstance(x, np.ndarray) and x.ndim == 0:
        return int(x)
    return None


def _check_scalar_index(x: Any, shape: tuple[int, ...]) -> None:
    aval = aval_of(x)
    if aval.shape != () or aval.dtype.kind not in "iu":
        raise TypeError(
            f"A ref of shape {shape} was indexed with a value of type {aval.str_short()}: ref "
            "indices must be integer scalars, slices or pl.ds(start, size) (gather-style "
            "array indices are not supported on refs).")


def index_spec(shape: tuple[int, ...], key: Any, check_bounds: bool = True
               ) -> tuple[IndexSpec, list[Any]]:
    """Normalizes a NumPy-style index of a ref of `shape` (ints, scalars, slices with
    static bounds, `ds`, `...`) into a spec and the list of its traced operands.

    A view may overhang the ref (`check_bounds=False`) for masked accesses."""
    key = key if isinstance(key, tuple) else (key,)
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("An index can only have a single ellipsis ('...')")
    if any(k is Ellipsis for k in key):
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        fill = len(shape) - (len(key) - 1)
        key = (*key[:at], *(slice(None),) * max(fill, 0), *key[at + 1:])
    if len(key) > len(shape):
        raise IndexError(f"Too many indices for a ref of shape {shape}: got {len(key)} "
                         f"({key!r})")
    key = (*key, *(slice(None),) * (len(shape) - len(key)))
    dims, dynamic = [], []
    for k, n in zip(key, shape):
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            size = max(0, -(-(stop - start) // step)) if step > 0 else None
            if size is None:
                raise IndexError(f"Negative slice steps can't index a ref, got {k!r}")
            dims.append(DimIndex(False, start, size, step))
        elif isinstance(k, Slice):
            static = _static_int(k.start)
            if static is None:
                _check_scalar_index(k.start, shape)
                dynamic.append(k.start)
            elif check_bounds and k.size and (static < 0 or static + (k.size - 1) * k.stride >= n):
                raise IndexError(f"ds({static}, {k.size}, stride={k.stride}) is out of bounds "
                                 f"for a dimension of size {n} of a ref of shape {shape}")
            dims.append(DimIndex(False, static, int(k.size), int(k.stride)))
        elif k is None:
            raise IndexError("None (np.newaxis) can't index a ref: reshape the value read")
        else:
            static = _static_int(k)
            if static is None:
                _check_scalar_index(k, shape)
                dynamic.append(k)
            else:
                if not -n <= static < n:
                    raise IndexError(f"Index {static} is out of bounds for a dimension of "
                                     f"size {n} of a ref of shape {shape}")
                static %= n
            dims.append(DimIndex(True, static))
    return IndexSpec(tuple(shape), tuple(dims)), dynamic


def chain_shape(base_shape: tuple[int, ...], specs: tuple[IndexSpec, ...]) -> tuple[int, ...]:
    """The shape seen through a chain of index specs applied one after the other."""
    shape = base_shape
    for spec in specs:
        if spec.in_shape != shape:
            raise ValueError(f"Index spec for shape {spec.in_shape} applied to shape {shape}")
        shape = spec.out_shape
    return shape
