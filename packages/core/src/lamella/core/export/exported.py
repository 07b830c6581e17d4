"""`Exported`: a function lowered to StableHLO with everything needed to call it later.

It is JAX's `jax.export.Exported`: the flattened input and output avals and
trees, shardings (single device: None), platforms, effects, the module as a
StableHLO portable artifact (bytes), the calling-convention version, and
optionally its VJP as another Exported. The runtime half (turning the module
into bytes, calling it inside a program) is registered by the executor
(lamella.lax) through `register_backend`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from lamella.core.avals import ShapedArray

# serialization.py reads the shapes of avals with symbolic_shape.
from lamella.core.shape_poly import is_symbolic_shape, symbolic_shape  # noqa: F401
from lamella.core.tree_util import PyTreeDef, tree_flatten, tree_unflatten

# Calling conventions of the module's @main (JAX 0.10.2's range): 9 adds the
# platform index and dimension-variable arguments, 10 keeps unused arguments.
minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10


@dataclasses.dataclass(frozen=True)
class DisabledSafetyCheck:
    """A check `export` or `Exported.call` skips, as JAX's: `platform()` (call on a
    platform it was not exported for), `custom_call(target)` (lamella checks one target,
    host callbacks' `xla_ffi_python_cpu_callback`: disabled, their functions export for
    calls in this process), `shape_assertions()` (a polymorphic export's constraints)."""

    kind: int
    target: str | None = None

    @classmethod
    def platform(cls) -> DisabledSafetyCheck:
        return cls(0)

    @classmethod
    def custom_call(cls, target_name: str) -> DisabledSafetyCheck:
        return cls(1, target_name)

    @classmethod
    def shape_assertions(cls) -> DisabledSafetyCheck:
        return cls(2)


def is_symbolic(aval: Any) -> bool:
    """Whether ``aval``'s shape has a symbolic dimension."""
    return is_symbolic_shape(aval.shape)


@dataclasses.dataclass(frozen=True, eq=False)
class Exported:
    """A lowered function, its signature and its StableHLO module bytes.

    Make one with `export(jit(f))(*args)` or `deserialize(bytes)`; call it with
    `call(*args)` (inside jit too), differentiate it through `vjp()`, store it
    with `serialize()`.
    """

    fun_name: str
    in_tree: PyTreeDef
    in_avals: tuple[ShapedArray, ...]
    out_tree: PyTreeDef
    out_avals: tuple[ShapedArray, ...]
    in_shardings_hlo: tuple[Any, ...]
    out_shardings_hlo: tuple[Any, ...]
    nr_devices: int
    platforms: tuple[str, ...]
    ordered_effects: tuple[Any, ...]
    unordered_effects: tuple[Any, ...]
    disabled_safety_checks: tuple[Any, ...]
    mlir_module_serialized: bytes
    calling_convention_version: int
    module_kept_var_idx: tuple[int, ...]
    uses_global_constants: bool
    _get_vjp: Callable[[Exported], Exported] | None = None
    # Over several devices: each argument's and result's NamedSharding (None: as XLA
    # chooses), what JAX serializes; in/out_shardings_hlo are XLA's form of them.
    _in_named_shardings: tuple[Any, ...] = ()
    _out_named_shardings: tuple[Any, ...] = ()

    @property
    def in_shardings(self) -> tuple[Any, ...]:
        return self.in_shardings_hlo

    @property
    def out_shardings(self) -> tuple[Any, ...]:
        return self.out_shardings_hlo

    def in_shardings_jax(self, mesh: Any) -> tuple[Any, ...]:
        """The arguments' shardings over ``mesh``'s devices (JAX's: what `device_put` and
        `jit` take; None where the export gave none)."""
        return _operations["shardings_jax"](self._in_named_shardings, self.in_avals, mesh)

    def out_shardings_jax(self, mesh: Any) -> tuple[Any, ...]:
        """The results' shardings over ``mesh``'s devices (JAX's)."""
        return _operations["shardings_jax"](self._out_named_shardings, self.out_avals, mesh)

    def __str__(self) -> str:
        return f"Exported(fun_name={self.fun_name}, ...)"

    __repr__ = __str__

    def mlir_module(self) -> str:
        """The StableHLO module as text."""
        return _backend("mlir_module").module_text(self.mlir_module_serialized)

    def has_vjp(self) -> bool:
        """Whether `vjp()` is available (always after `export`; after `deserialize`,
        if the bytes were serialized with ``vjp_order`` >= 1)."""
        return self._get_vjp is not None

    def vjp(self) -> Exported:
        """The Exported VJP: arguments the primal inputs then the output cotangents
        (flattened), results the input cotangents."""
        if self._get_vjp is None:
            raise ValueError(
                f"No VJP is available for {self.fun_name}: it was deserialized from bytes "
                "serialized with vjp_order=0; serialize with vjp_order>=1 to keep one.")
        return self._get_vjp(self)

    def serialize(self, vjp_order: int = 0) -> bytearray:
        """The JAX-compatible bytes of this Exported (see `lamella.core.export.serialize`)."""
        return _operations["serialize"](self, vjp_order=vjp_order)

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the exported function on ``args`` (arrays of the exported shapes and
        dtypes, in the exported pytree structure), eagerly or inside a traced function."""
        flat, tree = tree_flatten((args, kwargs))
        if tree != self.in_tree:
            raise TypeError(f"{self.fun_name} was exported for arguments of structure "
                            f"{self.in_tree}, but is called with {tree}")
        return tree_unflatten(self.out_tree, _operations["call_flat"](self, flat))


@dataclasses.dataclass(frozen=True)
class ExportBackend:
    """What the executor provides: `lower(jit_f, args, kwargs, platforms)` ->
    (ir module, in_tree, in_avals, out_tree, out_avals), `module_bytes(module)` ->
    portable artifact, `module_text(bytes)` -> str, `call(exported, flat_args)` ->
    flat outputs."""

    lower: Callable[..., Any]
    module_bytes: Callable[[Any], bytes]
    module_text: Callable[[bytes], str]
    call: Callable[[Exported, Sequence[Any]], list[Any]]
    default_platform: Callable[[], str]


_backends: list[ExportBackend] = []

# serialization.py and exporting.py build on this module; they install the entry points
# Exported's methods use ("serialize", "call_flat") when lamella.core.export is imported.
_operations: dict[str, Callable] = {}


def register_backend(backend: ExportBackend) -> None:
    """Installs the executor's half of export (lamella.lax does on import)."""
    _backends[:] = [backend]


def _backend(what: str) -> ExportBackend:
    if not _backends:
        raise RuntimeError(f"Exported.{what} needs an executor: import lamella.lax first.")
    return _backends[0]
