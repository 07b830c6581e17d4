"""Host callbacks: Python functions called from traced code (JAX's `jax.pure_callback`
and `jax.experimental.io_callback`).

A callback is a primitive whose parameters hold the Python callable and the
declared result types. Eagerly it calls the function right away; a backend
that compiles (lamella.lax) calls it back from the running program. Either way
the function receives NumPy arrays and its results are checked against the
declared shapes and dtypes before they go on (`host_function`): a mismatch is
an error naming the callback, never garbage read from a wrong buffer.

`pure_callback` is pure: it may be called once per batch element, not at all
when its results are unused, or in another order. `io_callback` has an effect
(`IOEffect`, or `OrderedIOEffect` with `ordered=True`, whose calls happen in
program order), so it is never dropped. Neither is differentiable (wrap it in
`custom_jvp`); under `vmap` a pure callback follows its `vmap_method`.

In a program over several devices a callback runs once with whole values, on the
device its `sharding` (a `SingleDeviceSharding`) names or else the first, as in
JAX; inside `shard_map` or `pmap` it runs on every device with that device's part.

>>> import numpy as np
>>> from lamella.core import ShapeDtypeStruct, jit
>>> out_type = ShapeDtypeStruct((3,), np.float32)
>>> print(jit(lambda x: pure_callback(np.sin, out_type, x))(np.zeros(3, np.float32)))
[0. 0. 0.]
"""

from __future__ import annotations

import dataclasses
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lamella.core import dtypes, errors
from lamella.core.avals import ShapedArray
from lamella.core.devices import device_put
from lamella.core.effects import Effect, effect_rules, ordered_effects
from lamella.core.primitive import Primitive
from lamella.core.rules import (
    broadcast_in_dim_p,
    moveaxis,
    not_mapped,
    primitive_batchers,
    primitive_jvps,
    primitive_transposes,
)
from lamella.core.trace import aval_of
from lamella.core.tree_util import PyTreeDef, tree_flatten, tree_leaves, tree_unflatten

__all__ = ["FlatCallback", "IOEffect", "OrderedIOEffect", "VMAP_METHODS", "callback_name",
           "host_function", "io_callback", "io_callback_p", "pure_callback",
           "pure_callback_p"]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                "legacy_vectorized", None)
"""The values of `pure_callback`'s `vmap_method` (JAX 0.10's)."""


class IOEffect(Effect):
    """The effect of an unordered `io_callback`."""

    def __str__(self) -> str:
        return "IO"


class OrderedIOEffect(Effect):
    """The effect of an `io_callback(..., ordered=True)`: calls happen in program order."""

    def __str__(self) -> str:
        return "OrderedIO"


ordered_effects.add_type(OrderedIOEffect)


# ---------------------------------------------------------------------------
# The callables the primitives carry, and the check of what they return.


def callback_name(callback: Any) -> str:
    """The user's name for a callback (through the wrappers below)."""
    while hasattr(callback, "callback_func") or hasattr(callback, "inner"):
        callback = getattr(callback, "callback_func", None) or callback.inner
    return getattr(callback, "__qualname__", None) or repr(callback)


@dataclasses.dataclass(frozen=True)
class FlatCallback:
    """The user's function called with flat arguments, returning flat results.

    Equal for the same function and argument structure, so jit caches hit."""

    callback_func: Callable[..., Any]
    in_tree: PyTreeDef

    def __post_init__(self) -> None:
        # Positional array arguments, the usual case, skip unflattening on every call.
        positional = self.in_tree == tree_flatten(((0,) * self.in_tree.num_leaves, {}))[1]
        object.__setattr__(self, "_positional", positional)

    def __call__(self, *flat_args: Any) -> list[Any]:
        if self._positional:
            out = self.callback_func(*flat_args)
        else:
            args, kwargs = tree_unflatten(self.in_tree, flat_args)
            out = self.callback_func(*args, **kwargs)
        return [out] if type(out) is np.ndarray else tree_leaves(out)


def _canonical(value: Any) -> np.ndarray:
    array = np.asarray(value)
    dtype = dtypes.canonicalize_dtype(array.dtype)
    return array if dtype == array.dtype else array.astype(dtype)


def check_results(callback: Any, outs: Sequence[Any], result_avals: Sequence[ShapedArray],
                  kind: str) -> tuple[np.ndarray, ...]:
    """`outs` as contiguous NumPy arrays of the declared types, or an error naming
    the callback (Python scalars and 64-bit values canonicalize first, as in JAX)."""
    if len(outs) != len(result_avals):
        raise RuntimeError(
            f"{kind} callback {callback_name(callback)} returned {len(outs)} values, but "
            f"result_shape_dtypes declares {len(result_avals)}")
    checked = []
    for i, (out, aval) in enumerate(zip(outs, result_avals)):
        if type(out) is np.ndarray and out.dtype == aval.dtype and out.shape == aval.shape \
                and out.flags.c_contiguous:  # the common case, checked first and cheaply
            checked.append(out)
            continue
        array = _canonical(out)
        if array.shape != tuple(aval.shape) or array.dtype != aval.dtype:
            got = ShapedArray(array.shape, array.dtype).str_short()
            raise RuntimeError(
                f"{kind} callback {callback_name(callback)} returned {got} for result {i}, "
                f"but result_shape_dtypes declares {aval.str_short()}")
        checked.append(array if array.flags.c_contiguous else np.array(array, order="C"))
    return tuple(checked)


def host_function(callback: Callable[..., Sequence[Any]], result_avals: Sequence[ShapedArray],
                  kind: str) -> Callable[..., tuple[np.ndarray, ...]]:
    """What runs on the host: `callback` on copies of the arguments (a compiled
    program lends views of its buffers), results checked against `result_avals`."""
    if not (isinstance(callback, FlatCallback) and callback._positional):
        def call(*args: Any) -> tuple[np.ndarray, ...]:
            outs = callback(*map(np.array, args))
            return check_results(callback, outs, result_avals, kind)
        call.callback = callback
        return call
    # The usual case, once per call of a compiled program: the user's function takes
    # the arguments as they are and returns one array of the declared type, which is
    # passed on after one inline check (anything else goes through check_results).
    function = callback.callback_func
    one = len(result_avals) == 1
    shape = tuple(result_avals[0].shape) if one else None
    dtype = result_avals[0].dtype if one else None

    def call_positional(*args: Any) -> tuple[np.ndarray, ...]:
        out = function(*map(np.array, args))  # copies: XLA lends its buffers
        if type(out) is np.ndarray:
            if one and out.dtype == dtype and out.shape == shape and out.flags.c_contiguous:
                return (out,)
            return check_results(callback, [out], result_avals, kind)
        return check_results(callback, tree_leaves(out), result_avals, kind)
    call_positional.callback = callback
    return call_positional


@dataclasses.dataclass(frozen=True)
class SequentialCallback:
    """`inner` called once per element of the batched arguments (leading axis),
    its results checked against `element_avals` and stacked: how a callback is
    batched with vmap_method "sequential" (and io_callback always)."""

    inner: Callable[..., Sequence[Any]]
    batched: tuple[bool, ...]
    element_avals: tuple[ShapedArray, ...]
    kind: str

    def __call__(self, *args: Any) -> list[np.ndarray]:
        size = next(np.shape(a)[0] for a, b in zip(args, self.batched) if b)
        per_element = [
            check_results(self.inner, self.inner(*[a[i] if b else a
                                                   for a, b in zip(args, self.batched)]),
                          self.element_avals, self.kind)
            for i in range(size)]
        return [np.stack(outs) if per_element
                else np.zeros((0, *aval.shape), aval.dtype)
                for outs, aval in zip(zip(*per_element) if per_element
                                      else [()] * len(self.element_avals),
                                      self.element_avals)]


def _batched_avals(size: int, avals: Sequence[ShapedArray]) -> tuple[ShapedArray, ...]:
    return tuple(a.update(shape=(size, *a.shape)) for a in avals)


def _moved_to_front(args, dims) -> tuple[list[Any], int]:
    size = next(aval_of(a).shape[d] for a, d in zip(args, dims) if d is not not_mapped)
    return [a if d is not_mapped else moveaxis(a, d, 0) for a, d in zip(args, dims)], size


def _with_leading_axis(x: Any, size: int) -> Any:
    aval = aval_of(x)
    return broadcast_in_dim_p.bind(x, shape=(size, *aval.shape),
                                   broadcast_dimensions=tuple(range(1, aval.ndim + 1)))


def _result_avals(result_shape_dtypes: Any) -> tuple[list[ShapedArray], PyTreeDef]:
    def aval(leaf):
        dtype = np.dtype(leaf.dtype)
        if dtypes.canonicalize_dtype(dtype) != dtype:
            raise ValueError("result_shape_dtypes cannot specify 64-bit types when "
                             "`jax_enable_x64` is disabled")
        return ShapedArray(tuple(leaf.shape), dtype)
    leaves, tree = tree_flatten(result_shape_dtypes)
    return [aval(leaf) for leaf in leaves], tree


def _call_eagerly(callback, args, result_avals, kind) -> list[Any]:
    # JAX runs even an eager callback as a program, so what it raises reaches the
    # caller as the runtime's error with its traceback in the text: so here.
    try:
        outs = host_function(callback, result_avals, kind)(*args)
    except Exception as error:
        text = "".join(traceback.format_exception(error))
        raise errors.JaxRuntimeError(
            f"INTERNAL: CpuCallback error calling callback: {text}") from error
    return [device_put(o) for o in outs]


# ---------------------------------------------------------------------------
# pure_callback

pure_callback_p = Primitive("pure_callback")
pure_callback_p.multiple_results = True


def pure_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                  sharding: Any = None, vmap_method: str | None = None, **kwargs: Any) -> Any:
    """Calls a pure Python function from traced code; works under jit, vmap, scan.

    `callback(*args, **kwargs)` receives NumPy arrays and must return a pytree
    matching `result_shape_dtypes` (leaves with `shape` and `dtype`, such as
    `ShapeDtypeStruct`); what it returns is checked against them. Being pure, it
    may run any number of times or not at all. Under `vmap`, `vmap_method`
    decides: "sequential" (or "sequential_unrolled") calls it once per batch
    element, "expand_dims" passes unbatched arguments with a leading axis of
    size 1, "broadcast_all" tiles them to the batch size, "legacy_vectorized"
    passes batched arguments as they are; None refuses vmap.

    >>> import numpy as np
    >>> from lamella.core import ShapeDtypeStruct, vmap
    >>> square = lambda x: pure_callback(lambda v: v * v, ShapeDtypeStruct((), np.float32),
    ...                                  x, vmap_method="sequential")
    >>> print(vmap(square)(np.arange(3, dtype=np.float32)))
    [0. 1. 4.]
    """
    if vmap_method not in VMAP_METHODS:
        raise ValueError(f"vmap_method must be on of the allowed methods {list(VMAP_METHODS)}, "
                         f"but got: {vmap_method}")
    flat_args, in_tree = tree_flatten((args, kwargs))
    result_avals, out_tree = _result_avals(result_shape_dtypes)
    outs = pure_callback_p.bind(*flat_args, callback=FlatCallback(callback, in_tree),
                                result_avals=tuple(result_avals), sharding=sharding,
                                vmap_method=vmap_method)
    return tree_unflatten(out_tree, outs)


@pure_callback_p.def_impl
def _pure_callback_impl(*args, callback, result_avals, sharding, vmap_method):
    return _call_eagerly(callback, args, result_avals, "pure_callback")


@pure_callback_p.def_abstract_eval
def _pure_callback_abstract_eval(*avals, callback, result_avals, sharding, vmap_method):
    return list(result_avals)


def _pure_callback_jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use "
                     "callbacks while taking gradients.")


def _pure_callback_transpose(cts, *args, **params):
    raise ValueError("Pure callbacks do not support transpose. Please use `jax.custom_vjp` to "
                     "use callbacks while taking gradients.")


def _pure_callback_batch(args, dims, *, callback, result_avals, sharding, vmap_method):
    args, size = _moved_to_front(args, dims)
    batched = _batched_avals(size, result_avals)
    params = dict(result_avals=batched, sharding=sharding, vmap_method=vmap_method)
    if vmap_method in ("sequential", "sequential_unrolled"):
        sequential = SequentialCallback(callback, tuple(d is not not_mapped for d in dims),
                                        tuple(result_avals), "pure_callback")
        outs = pure_callback_p.bind(*args, callback=sequential, **params)
    elif vmap_method == "legacy_vectorized":
        outs = pure_callback_p.bind(*args, callback=callback, **params)
    elif vmap_method in ("expand_dims", "broadcast_all"):
        n = size if vmap_method == "broadcast_all" else 1
        args = [_with_leading_axis(a, n) if d is not_mapped else a for a, d in zip(args, dims)]
        outs = pure_callback_p.bind(*args, callback=callback, **params)
    else:
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one of "
            "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            f"'legacy_vectorized'. Got vmap_method={vmap_method!r}.")
    return outs, [0] * len(outs)


primitive_jvps[pure_callback_p] = _pure_callback_jvp
primitive_transposes[pure_callback_p] = _pure_callback_transpose
primitive_batchers[pure_callback_p] = _pure_callback_batch


# ---------------------------------------------------------------------------
# io_callback

io_callback_p = Primitive("io_callback")
io_callback_p.multiple_results = True


def io_callback(callback: Callable[..., Any], result_shape_dtypes: Any, *args: Any,
                sharding: Any = None, ordered: bool = False, **kwargs: Any) -> Any:
    """Calls an impure Python function from traced code; it is never dropped.

    As `pure_callback`, with an effect: with `ordered=True` the calls happen in
    program order (within one program and across programs); under `vmap` an
    unordered one is called once per batch element, an ordered one refuses.

    >>> import numpy as np
    >>> from lamella.core import jit
    >>> seen = []
    >>> f = jit(lambda x: io_callback(seen.append, None, x, ordered=True))
    >>> f(np.float32(1.0)); f(np.float32(2.0)); seen
    [array(1., dtype=float32), array(2., dtype=float32)]
    """
    flat_args, in_tree = tree_flatten((args, kwargs))
    result_avals, out_tree = _result_avals(result_shape_dtypes)
    outs = io_callback_p.bind(*flat_args, callback=FlatCallback(callback, in_tree),
                              result_avals=tuple(result_avals), sharding=sharding,
                              ordered=ordered)
    return tree_unflatten(out_tree, outs)


@io_callback_p.def_impl
def _io_callback_impl(*args, callback, result_avals, sharding, ordered):
    return _call_eagerly(callback, args, result_avals, "io_callback")


@io_callback_p.def_abstract_eval
def _io_callback_abstract_eval(*avals, callback, result_avals, sharding, ordered):
    return list(result_avals)


def _io_callback_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


def _io_callback_transpose(cts, *args, **params):
    raise ValueError("IO callbacks do not support transpose.")


def _io_callback_batch(args, dims, *, callback, result_avals, sharding, ordered):
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    args, size = _moved_to_front(args, dims)
    sequential = SequentialCallback(callback, tuple(d is not not_mapped for d in dims),
                                    tuple(result_avals), "io_callback")
    outs = io_callback_p.bind(*args, callback=sequential,
                              result_avals=_batched_avals(size, result_avals),
                              sharding=sharding, ordered=False)
    return outs, [0] * len(outs)


primitive_jvps[io_callback_p] = _io_callback_jvp
primitive_transposes[io_callback_p] = _io_callback_transpose
primitive_batchers[io_callback_p] = _io_callback_batch
effect_rules[io_callback_p] = lambda *, ordered, **_: frozenset(
    {OrderedIOEffect() if ordered else IOEffect()})

