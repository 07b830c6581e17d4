"""Primitives that compute nothing: identities that say something to the tracer or
the compiler, as JAX's do.

- `copy_p` / `copy`: an explicit copy (the output never aliases the input).
- `stage_p` / `stage`: lifts a constant (a Python or NumPy value) into the
  active trace, so it becomes a traced value rather than a baked-in constant.
- `dce_sink_p` / `dce_sink`: uses a value, so dead-code elimination keeps what
  computes it; it has no outputs.
- `device_put_p`: the identity `jax.device_put` binds under tracing, with its
  per-operand `devices`, `srcs` and `copy_semantics` params (one device here).

>>> import numpy as np
>>> copy(np.float32([1, 2]))
Array([1., 2.], dtype=float32)
"""

from __future__ import annotations

import enum
from typing import Any

from lamella.core import Primitive, ad, batching, get_aval, tree_util
from lamella.core.staging import const_fold_rules
from lamella.core.trace import Tracer, current_trace
from lamella.lax.lowering import register_lowering
from lamella.lax.standard import standard_primitive

__all__ = ["ArrayCopySemantics", "copy", "copy_p", "dce_sink", "dce_sink_p", "device_put_p",
           "stage", "stage_p"]


def _identity_primitive(name: str):
    prim = standard_primitive(name)
    prim.def_abstract_eval(lambda x, **_: x)
    ad.deflinear(prim, lambda ct, **params: [prim.bind(ct, **params)])
    batching.defvectorized(prim)
    register_lowering(prim, lambda ctx, x, **_: [x])
    return prim


# --- copy ---------------------------------------------------------------------
copy_p = _identity_primitive("copy")


def copy(x: Any) -> Any:
    """A copy of `x` (an array that does not alias it).

    >>> import numpy as np
    >>> copy(np.int32(3))
    Array(3, dtype=int32)
    """
    return copy_p.bind(x)


# --- stage --------------------------------------------------------------------
stage_p = _identity_primitive("stage")
# Staging a constant makes it a literal (or constant) of the jaxpr, as JAX does.
const_fold_rules[stage_p] = lambda x: (x, get_aval(x))


def stage(x: Any, /) -> Any:
    """`x` lifted into the active trace: a constant (a Python or NumPy value) becomes
    a value of the traced program; a value already traced there is returned as is.
    Outside any transformation, an Array.

    >>> stage(2.0)
    Array(2., dtype=float32, weak_type=True)
    """
    if isinstance(x, Tracer) and x._trace is current_trace():
        return x
    return stage_p.bind(x)


# --- dce_sink -------------------------------------------------------------------
# Not compiled eagerly: applied to an array, it does nothing at all.
dce_sink_p = Primitive("dce_sink")
dce_sink_p.multiple_results = True


def dce_sink(val: Any, *, prevent_mlir_dce: bool = False) -> None:
    """Marks every array of the pytree `val` as used, so that jaxpr dead-code
    elimination keeps the computation of it. Returns None.

    >>> import numpy as np
    >>> dce_sink(np.float32(1.0)) is None
    True
    """
    tree_util.tree_map(lambda x: dce_sink_p.bind(x, prevent_mlir_dce=prevent_mlir_dce), val)


dce_sink_p.def_impl(lambda x, **_: [])
dce_sink_p.def_abstract_eval(lambda x, **_: [])
ad.deflinear(dce_sink_p, lambda cts, **_: [None])
batching.primitive_batchers[dce_sink_p] = lambda args, dims, **params: (
    dce_sink_p.bind(*args, **params), [])
# Lowered to nothing: the compiled program has no effect to keep.
register_lowering(dce_sink_p, lambda ctx, x, **_: [])


# --- device_put_p -------------------------------------------------------------


class ArrayCopySemantics(enum.Enum):
    """Whether a device_put may return its input's buffer (JAX's values)."""

    ALWAYS_COPY = 0
    REUSE_INPUT = 1
    DONATE_INPUT = 2

    def __repr__(self) -> str:
        return f"ArrayCopySemantics.{self.name}"


device_put_p = standard_primitive("device_put", multiple_results=True)


@device_put_p.def_abstract_eval
def _device_put_abstract_eval(*avals, devices, srcs, copy_semantics):
    return list(avals)


ad.deflinear(device_put_p, lambda cts, **params: device_put_p.bind(*map(
    ad.instantiate_zeros, cts), **params))
batching.primitive_batchers[device_put_p] = lambda args, dims, **params: (
    device_put_p.bind(*args, **params), dims)
register_lowering(device_put_p, lambda ctx, *xs, **_: list(xs))
