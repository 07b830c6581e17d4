"""`export(jit_f)(*args)`: lower a jitted function to an `Exported` (JAX's `jax.export.export`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lamella.core.autodiff_api import vjp
from lamella.core.avals import ShapedArray, ShapeDtypeStruct
from lamella.core.export.exported import (
    DisabledSafetyCheck,
    Exported,
    _backend,
    _operations,
    is_symbolic,
    maximum_supported_calling_convention_version,
)
from lamella.core.jit import jit
from lamella.core.tree_util import tree_flatten, tree_leaves, tree_unflatten


def default_export_platform() -> str:
    """The platform `export` lowers for when none is named: the default device's
    ('cpu', 'cuda', ...)."""
    return _backend("default_export_platform").default_platform()


def export(fun_jit: Callable[..., Any], *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[Any] = ()) -> Callable[..., Exported]:
    """Returns a function that lowers ``fun_jit`` for its arguments (arrays or
    `ShapeDtypeStruct`s) into an `Exported`.

    ``fun_jit`` must be a `jit`-wrapped function. ``platforms`` names the one
    platform to lower for (default: `default_export_platform()`);
    ``disabled_checks`` lists `DisabledSafetyCheck`s the Exported's callers skip.

    (needs lamella.lax to lower; tests/test_export.py runs it)

    >>> import numpy as np  # doctest: +SKIP
    >>> import lamella.core as lc  # doctest: +SKIP
    >>> import lamella.lax as lax  # doctest: +SKIP
    >>> spec = lc.ShapeDtypeStruct((3,), np.float32)  # doctest: +SKIP
    >>> exp = export(lc.jit(lambda x: lax.mul(x, 2.0)))(spec)  # doctest: +SKIP
    >>> exp.in_avals, exp.platforms  # doctest: +SKIP
    ((ShapedArray(float32[3]),), ('cpu',))
    >>> exp.call(np.arange(3, dtype=np.float32))  # doctest: +SKIP
    Array([0., 2., 4.], dtype=float32)
    """
    if not hasattr(fun_jit, "lower"):
        raise TypeError(f"export needs a function wrapped in jit, got {fun_jit!r}: "
                        "write export(jit(f)).")
    if platforms is not None:
        platforms = tuple(platforms)
        if len(platforms) != 1:
            raise ValueError(f"lamella exports for one platform at a time; got {platforms}")

    for check in disabled_checks:
        if not isinstance(check, DisabledSafetyCheck):
            raise TypeError(f"disabled_checks holds DisabledSafetyCheck values, got {check!r}")

    def do_export(*args: Any, **kwargs: Any) -> Exported:
        return _export(fun_jit, args, kwargs, platforms, tuple(disabled_checks))

    return do_export


def _export(fun_jit: Callable[..., Any], args: tuple, kwargs: dict,
            platforms: tuple[str, ...] | None, disabled_checks: tuple) -> Exported:
    backend = _backend("export")
    platform = (platforms or (backend.default_platform(),))[0]
    module, in_tree, in_avals, out_tree, out_avals, *more = backend.lower(
        fun_jit, args, kwargs, platform, disabled_checks)
    in_avals = tuple(ShapedArray(a.shape, a.dtype) for a in in_avals)
    out_avals = tuple(ShapedArray(a.shape, a.dtype) for a in out_avals)
    # The backend's word on devices and effects: shardings, nr_devices, effects.
    fields = dict(in_shardings_hlo=(None,) * len(in_avals),
                  out_shardings_hlo=(None,) * len(out_avals), nr_devices=1,
                  ordered_effects=(), unordered_effects=())
    fields.update(more[0] if more else {})
    return Exported(
        fun_name=getattr(fun_jit, "__name__", "fun"),
        in_tree=in_tree, in_avals=in_avals, out_tree=out_tree, out_avals=out_avals,
        platforms=(platform,), disabled_safety_checks=disabled_checks, **fields,
        mlir_module_serialized=backend.module_bytes(module),
        calling_convention_version=maximum_supported_calling_convention_version,
        module_kept_var_idx=tuple(range(len(in_avals))),
        uses_global_constants=any(is_symbolic(a) for a in in_avals),
        _get_vjp=lambda primal: _export_vjp(fun_jit, primal))


def _export_vjp(fun_jit: Callable[..., Any], primal: Exported) -> Exported:
    """The VJP of ``fun_jit`` at ``primal``'s signature: (*primals, *out_cts) -> in_cts."""
    n_in = len(primal.in_avals)

    def fun_vjp(*primals_and_cts: Any) -> list[Any]:
        primals, cts = primals_and_cts[:n_in], primals_and_cts[n_in:]

        def flat_fun(*flat: Any) -> list[Any]:
            args, kwargs = tree_unflatten(primal.in_tree, flat)
            return tree_leaves(fun_jit(*args, **kwargs))

        _, pullback = vjp(flat_fun, *primals)
        return list(pullback(list(cts)))

    fun_vjp.__name__ = f"vjp_{primal.fun_name}"
    specs = [ShapeDtypeStruct(a.shape, a.dtype) for a in (*primal.in_avals, *primal.out_avals)]
    return _export(jit(fun_vjp), tuple(specs), {}, primal.platforms, ())


def call_flat(exported: Exported, flat: Sequence[Any]) -> list[Any]:
    """Calls ``exported`` on flat arguments, differentiable through its VJP when it has one."""
    backend = _backend("call")
    if not exported.has_vjp():
        return backend.call(exported, flat)
    from lamella.core.custom_derivatives import custom_vjp

    @custom_vjp
    def primal(*xs: Any) -> list[Any]:
        return backend.call(exported, xs)

    def fwd(*xs: Any) -> tuple[list[Any], tuple]:
        return backend.call(exported, xs), xs

    def bwd(xs: tuple, cts: Any) -> tuple:
        return tuple(call_flat(exported.vjp(), [*xs, *tree_flatten(cts)[0]]))

    primal.defvjp(fwd, bwd)
    return primal(*flat)


_operations["call_flat"] = call_flat
