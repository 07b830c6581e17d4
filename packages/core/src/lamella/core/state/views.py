"""`Ref`: how user code holds a ref — indexing reads, assignment writes, `.at` views.

A kernel or a `run_state` body receives `Ref`s. `ref[idx]` binds `get`,
`ref[idx] = v` binds `swap`, and `ref.at[idx]` is a view whose own indexing is
relative to the window `idx` selects (the primitives receive the chain of
index specs). A `Ref` may carry a name (the kernel's parameter name) so that
errors say which ref was misused.

>>> import numpy as np
>>> from lamella.core.avals import ShapedArray
>>> from lamella.core.state.types import AbstractRef
>>> from lamella.core.make_jaxpr import make_jaxpr
>>> from lamella.core.staging import trace_to_jaxpr
>>> def body(ref):
...     Ref(ref).at[1][2:4] = np.ones(2, np.float32)
...     return []
>>> jaxpr, _ = trace_to_jaxpr(body, [AbstractRef(ShapedArray((4, 8), np.float32))])
>>> print(jaxpr)
{ lambda a:f32[2]; b:Ref{f32[4,8]}. let
    _:f32[2] = swap[idx=[1, 0:+8] | [2:+2]] b a
  in () }
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lamella.core.avals import ShapedArray
from lamella.core.state.primitives import addupdate_p, get_p, swap_p
from lamella.core.state.types import IndexSpec, chain_shape, index_spec
from lamella.core.structural import broadcast_in_dim_p

__all__ = ["Ref", "is_ref"]
from lamella.core.trace import aval_of


class Ref:
    """A mutable reference to an array (JAX's `Ref`), seen through zero or more views."""

    __slots__ = ("_ref", "_specs", "_dynamic", "name")

    def __init__(self, ref: Any, specs: tuple[IndexSpec, ...] = (), dynamic: tuple = (),
                 name: str | None = None):
        self._ref = ref
        self._specs = specs
        self._dynamic = dynamic
        self.name = name

    @property
    def shape(self) -> tuple[int, ...]:
        return chain_shape(aval_of(self._ref).shape, self._specs)

    @property
    def dtype(self) -> np.dtype:
        return aval_of(self._ref).dtype

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape)))

    @property
    def aval(self) -> ShapedArray:
        """The aval of the window this view shows (an array's, not a ref's)."""
        return ShapedArray(self.shape, self.dtype)

    def _label(self) -> str:
        return f"ref {self.name!r}" if self.name else "a ref"

    def _index(self, key: Any, check_bounds: bool = True
               ) -> tuple[tuple[IndexSpec, ...], list[Any]]:
        try:
            spec, dynamic = index_spec(self.shape, key, check_bounds)
        except (IndexError, TypeError) as e:
            raise type(e)(f"Indexing {self._label()} of shape {self.shape}: {e}") from None
        return (*self._specs, spec), [*self._dynamic, *dynamic]

    @property
    def at(self) -> _RefViewMaker:
        """`ref.at[idx]`: the view of `ref` through `idx`, itself a `Ref`."""
        return _RefViewMaker(self)

    def get(self, idx: Any = ...) -> Any:
        specs, dynamic = self._index(idx)
        return get_p.bind(self._ref, *dynamic, specs=specs)

    def swap(self, value: Any, idx: Any = ...) -> Any:
        specs, dynamic = self._index(idx)
        value = self._coerce(value, chain_shape(aval_of(self._ref).shape, specs), "store")
        return swap_p.bind(self._ref, value, *dynamic, specs=specs)

    def set(self, value: Any, idx: Any = ...) -> None:
        self.swap(value, idx)

    def addupdate(self, value: Any, idx: Any = ...) -> None:
        specs, dynamic = self._index(idx)
        value = self._coerce(value, chain_shape(aval_of(self._ref).shape, specs), "add into")
        addupdate_p.bind(self._ref, value, *dynamic, specs=specs)

    def __getitem__(self, idx: Any) -> Any:
        return self.get(idx)

    def __setitem__(self, idx: Any, value: Any) -> None:
        self.swap(value, idx)

    def _coerce(self, value: Any, shape: tuple[int, ...], what: str) -> Any:
        """Python scalars take the ref's dtype; rank-0 values broadcast to the window."""
        if isinstance(value, (bool, int, float, complex)):
            value = np.asarray(value, self.dtype)
        aval = aval_of(value)
        if aval.dtype != self.dtype:
            raise TypeError(f"Can't {what} {self._label()} of dtype {self.dtype.name} a value "
                            f"of type {aval.str_short()}: convert it with .astype first.")
        if aval.shape != shape:
            if aval.shape != ():
                raise TypeError(f"Can't {what} {self._label()}: the value has shape "
                                f"{aval.shape} but the window has shape {shape}.")
            if isinstance(value, np.ndarray):
                return np.broadcast_to(value, shape).copy()
            value = broadcast_in_dim_p.bind(value, shape=shape, broadcast_dimensions=())
        return value

    def __repr__(self) -> str:
        name = f" {self.name}" if self.name else ""
        return f"Ref{name}<{ShapedArray(self.shape, self.dtype).str_short()}>"

    def __hash__(self) -> int:
        return id(self)

    def __iter__(self):
        raise TypeError(f"{self._label()} can't be iterated: index it (ref[i]) instead")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"{self._label()} was used as an array; read it first: ref[...]")


class _RefViewMaker:
    __slots__ = ("_ref",)

    def __init__(self, ref: Ref):
        self._ref = ref

    def __getitem__(self, idx: Any) -> Ref:
        specs, dynamic = self._ref._index(idx, check_bounds=False)
        return Ref(self._ref._ref, specs, tuple(dynamic), self._ref.name)


def is_ref(x: Any) -> bool:
    return isinstance(x, Ref)

