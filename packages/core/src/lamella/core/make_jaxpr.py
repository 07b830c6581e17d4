"""`make_jaxpr` and `eval_shape`: trace a function without running it.

>>> import numpy as np
>>> from lamella.core.structural import reduce_sum
>>> print(make_jaxpr(lambda x: reduce_sum(x, (0,)))(np.ones(5, np.float32)))
{ lambda ; a:f32[5]. let
    b:f32[] = reduce_sum[axes=(0,) out_sharding=None] a
  in (b,) }
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from lamella.core.jaxpr import ClosedJaxpr
from lamella.core.jit import JitFunction, out_info
from lamella.core.trace_queries import extend_axis_env


def make_jaxpr(fun: Callable, static_argnums: int | Sequence[int] = (),
               axis_env: Sequence[tuple[Any, int]] | None = None,
               return_shape: bool = False) -> Callable[..., Any]:
    """A function that returns `fun`'s jaxpr for the given example arguments.

    Arguments may be arrays or `ShapeDtypeStruct`s; `static_argnums` are passed
    to `fun` as Python values. With `return_shape=True` it also returns the
    output shapes as a pytree of `ShapeDtypeStruct`.

    Args:
      fun: the function to trace.
      static_argnums: arguments passed to `fun` as Python values.
      axis_env: `(name, size)` pairs of named axes in scope while tracing, as if
        `fun` ran inside vmaps with those axis names (for collectives).
      return_shape: also return the outputs' shapes and dtypes.

    Returns:
      A function that takes `fun`'s arguments (arrays or ShapeDtypeStructs) and
      returns its `ClosedJaxpr` (and a pytree of ShapeDtypeStruct with
      `return_shape=True`).
    """
    traced = JitFunction(fun, static_argnums=static_argnums, traced_for="make_jaxpr")

    @functools.wraps(fun)
    def make(*args, **kwargs) -> ClosedJaxpr | tuple[ClosedJaxpr, Any]:
        with extend_axis_env(axis_env or ()):
            entry, _ = traced._prepare(args, kwargs)
        traced.clear_cache()
        if return_shape:
            return entry.closed, out_info(entry)
        return entry.closed

    return make


def eval_shape(fun: Callable, *args: Any, **kwargs: Any) -> Any:
    """The shapes and dtypes `fun` would return, as a pytree of `ShapeDtypeStruct`.

    Args:
      fun: the function to evaluate abstractly.
      *args, **kwargs: its arguments, as arrays or ShapeDtypeStructs (no data is
        read and nothing runs).

    Returns:
      A pytree of `ShapeDtypeStruct` like `fun`'s output.

    >>> import numpy as np
    >>> from lamella.core import ShapeDtypeStruct
    >>> from lamella.core.structural import reduce_sum
    >>> eval_shape(lambda x: reduce_sum(x, (1,)), ShapeDtypeStruct((2, 3), np.float32))
    ShapeDtypeStruct(shape=(2,), dtype=float32)
    """
    return JitFunction(fun, traced_for="eval_shape").eval_shape(*args, **kwargs)
