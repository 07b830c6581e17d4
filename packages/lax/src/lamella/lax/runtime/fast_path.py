"""The C++ dispatch fast path: jaxlib's `PjitFunction` and the pytree registry it
flattens arguments with.

On a signature it has seen, a fast function flattens the arguments, puts host
values on the device, executes and unflattens the outputs without running any
Python.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from jaxlib import _jax

from lamella.lax.runtime.arrays import Array, DeletedArrayError, deleted_message, device_put
from lamella.lax.runtime.executables import Executable

# ----------------------------------------------------------------------------
# The C++ dispatch fast path.
#
# jaxlib's PjitFunction keeps a signature cache in C++: on a hit it flattens
# the arguments with the registry below, puts host values on the device,
# executes and unflattens the outputs without running any Python.

REGISTRY = _jax.pytree.PyTreeRegistry()
_PJIT_CACHE = _jax.PjitFunctionCache()


def clear_fast_path_caches() -> None:
    """Forgets every signature the C++ dispatchers have seen (each jit wrapper's own
    entries and the shared cache): their next calls go through Python again."""
    _PJIT_CACHE.clear()
    _jax.PjitFunctionCache.clear_all()


def pytree_registry() -> Any:
    """The ``PyTreeRegistry`` the fast path flattens arguments with.

    Flatten outputs with it too (``pytree_registry().flatten(out)``), so the
    treedef given to :func:`fast_path_data` matches what C++ unflattens.

    >>> leaves, treedef = pytree_registry().flatten({"b": 1, "a": 2})
    >>> leaves
    [2, 1]
    """
    return REGISTRY


def register_pytree_node(
    nodetype: type,
    flatten: Callable[[Any], tuple[Iterable[Any], Hashable]],
    unflatten: Callable[[Hashable, Iterable[Any]], Any],
) -> None:
    """Teach the fast path's registry a container type (mirror of tree_util's).

    >>> class Pair:
    ...     def __init__(self, a, b): self.a, self.b = a, b
    >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda _, c: Pair(*c))
    >>> pytree_registry().flatten(Pair(1, 2))[0]
    [1, 2]
    """
    REGISTRY.register_node(nodetype, flatten, unflatten)


def flatten_arguments(
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    static_argnums: Sequence[int] = (),
    static_argnames: Sequence[str] = (),
) -> tuple[Any, list[Any]]:
    """Flatten call arguments exactly as the fast path does: (signature, dynamic leaves).

    Leaves come positional arguments first, then keyword arguments sorted by
    name; the executable's parameters must follow this order.

    >>> flatten_arguments((1, [2, 3]), {"z": 5, "y": 4})[1]
    [1, 2, 3, 4, 5]
    """
    return _jax.jax_jit.parse_arguments(
        tuple(args),
        tuple(kwargs.values()),
        tuple(kwargs),
        list(static_argnums),
        list(static_argnames),
        REGISTRY,
    )


class FastPathData(NamedTuple):
    """What a ``cache_miss`` returns so that later calls stay in C++ (fields read by name)."""

    xla_executable: Any
    out_pytree_def: Any
    in_shardings: list[Any]
    out_shardings: list[Any]
    out_avals: list[Any]
    out_committed: list[bool]
    kept_var_bitvec: list[bool]
    in_device_local_layouts: list[None]
    const_args: list[Array]


def fast_path_data(
    executable: Executable,
    out_treedef: Any,
    *,
    kept_var_bitvec: Sequence[bool] | None = None,
    const_args: Sequence[Array] = (),
) -> FastPathData:
    """Fast-path data for ``executable``, whose outputs unflatten with ``out_treedef``.

    The executable's outputs must be in the treedef's leaf order (C++
    unflattens them positionally; a dict flattens by sorted key). Its
    parameters are ``const_args`` followed by the kept flat arguments;
    ``kept_var_bitvec`` (one bool per const arg + flat argument, default all
    True) marks which flat arguments are passed.

    >>> from lamella.lax.mlir_context import parse_module
    >>> from lamella.lax.runtime import compile
    >>> exe = compile(parse_module(
    ...     "func.func public @main(%x: tensor<f32>) -> tensor<f32> {"
    ...     " return %x : tensor<f32> }"))
    >>> fast_path_data(exe, pytree_registry().flatten(0)[1]).out_committed
    [False]
    """
    n_in, n_out = len(executable.in_avals), len(executable.out_avals)
    if out_treedef.num_leaves != n_out:
        leaves = out_treedef.num_leaves
        raise ValueError(f"the treedef has {leaves} leaves but the program {n_out} outputs")
    kept = [True] * n_in if kept_var_bitvec is None else [bool(k) for k in kept_var_bitvec]
    if sum(kept) != n_in or not all(kept[: len(const_args)]):
        raise ValueError(f"kept_var_bitvec must keep the const args and {n_in} parameters in all")
    sharding = executable._sharding
    return FastPathData(
        xla_executable=executable.xla_executable,
        out_pytree_def=out_treedef,
        in_shardings=[sharding] * n_in,
        out_shardings=[sharding] * n_out,
        out_avals=list(executable.out_avals),
        out_committed=[executable.committed] * n_out,
        kept_var_bitvec=kept,
        in_device_local_layouts=[None] * n_in,
        const_args=list(const_args),
    )


# How the fallback lays an argument out over a sharding of a given class, besides one
# device (the multi-device runtime registers its own).
_placements: dict[type, Callable[[Any, Any], Array]] = {}


def register_placement(sharding_type: type, place: Callable[[Any, Any], Array]) -> None:
    """`place(x, sharding)` lays `x` out over a `sharding_type` for C++ calls of
    programs over several devices (host values, Arrays laid out otherwise)."""
    _placements[sharding_type] = place


def _shard_arg_fallback(x: Any, sharding: Any, layout: Any) -> Array:
    # C++ calls this for inputs it cannot place by itself: for a single-device program
    # an Array living on a different number of devices, for a program over several
    # devices host values and Arrays laid out otherwise.
    if isinstance(sharding, _jax.SingleDeviceSharding):
        return device_put(x, sharding._device)
    for sharding_type, place in _placements.items():
        if isinstance(sharding, sharding_type):
            return place(x, sharding)
    raise TypeError(f"no placement of an argument over {sharding!r}")


def make_fast_function(
    name: str,
    cache_miss: Callable[..., tuple[Any, FastPathData | None]],
    static_argnums: Sequence[int] = (),
    static_argnames: Sequence[str] = (),
    *,
    fun: Callable[..., Any] | None = None,
    cache_key: Hashable | None = None,
    donates: bool = False,
) -> Callable[..., Any]:
    """A C++ dispatcher: calls whose argument signature was seen run without Python.

    On a new signature (dtypes, shapes, weak types, shardings, treedefs, static
    values, the x64 flag) C++ calls ``cache_miss(*args, **kwargs)``, which must
    return ``(outputs, fast_path_data_or_None)``; with fast-path data, later
    calls of that signature execute in C++. ``cache_miss`` must also handle
    arguments C++ cannot sign (tracers); those always miss. If ``cache_miss``
    raises on a signature's first call, that signature keeps going to Python.

    With ``fun`` given, :func:`set_disable_jit` routes calls to ``fun``, and
    fast functions with the same ``fun`` and ``cache_key`` share cache entries;
    the default ``cache_key`` (None) shares with nobody.

    Pass ``donates=True`` when the executables donate inputs: C++ runs a
    donated (deleted) Array without checking it, and XLA's complaint is then
    turned into a :class:`DeletedArrayError` by a thin Python wrapper (which
    costs a fraction of a microsecond per call, so only donating functions
    get it).

    >>> import numpy as np
    >>> from lamella.lax.mlir_context import parse_module
    >>> from lamella.lax.runtime import compile
    >>> exe = compile(parse_module(
    ...     "func.func public @main(%x: tensor<f32>) -> tensor<f32> {"
    ...     " %0 = stablehlo.negate %x : tensor<f32> return %0 : tensor<f32> }"))
    >>> def miss(x):
    ...     (out,) = exe(x)
    ...     return out, fast_path_data(exe, pytree_registry().flatten(out)[1])
    >>> neg = make_fast_function("neg", miss)
    >>> neg(np.float32(2.0)), neg(np.float32(3.0))
    (Array(-2., dtype=float32), Array(-3., dtype=float32))
    """
    fast = _jax.pjit(
        name,
        fun,
        cache_miss,
        list(static_argnums),
        list(static_argnames),
        object() if cache_key is None else cache_key,
        REGISTRY,
        _shard_arg_fallback,
        _PJIT_CACHE,
    )
    return _explain_deleted_inputs(fast) if donates else fast


def _explain_deleted_inputs(fast: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``fast`` so that a call with a deleted Array raises DeletedArrayError.

    C++ sends Arrays deleted with ``.delete()`` to ``cache_miss``, but runs
    donated ones, and XLA answers with a ValueError "Buffer has been deleted
    or donated" that does not say which argument. So the inputs a call donated
    are deleted explicitly after it: every other fast function (a jit that does
    not donate, an eager operation) then sends them to its ``cache_miss`` too,
    which raises DeletedArrayError, instead of XLA's error.
    """

    def call(*args: Any, **kwargs: Any) -> Any:
        leaves = REGISTRY.flatten((args, kwargs))[0]
        try:
            out = fast(*args, **kwargs)
        except ValueError:
            for leaf in leaves:
                if isinstance(leaf, Array) and leaf.is_deleted():
                    raise DeletedArrayError(deleted_message(leaf)) from None
            raise
        for leaf in leaves:
            if isinstance(leaf, Array) and leaf.is_deleted():
                leaf.delete()
        return out

    call._cache_size = fast._cache_size
    call._clear_cache = fast._clear_cache
    call.__wrapped__ = fast
    return call
