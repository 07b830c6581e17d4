"""The three state primitives, each with its rules: abstract eval, JVP, transpose, batching.

- `get_p(ref, *dyn, specs)` reads the window of `ref` that `specs` (a chain of
  `IndexSpec`s, one per `.at[...]` view, then the access itself) describes.
- `swap_p(ref, val, *dyn, specs)` writes `val` there and returns what was there.
- `addupdate_p(ref, val, *dyn, specs)` adds `val` there; it has no result.

`dyn` are the traced starts and indices of the specs, in order. The tangent of
a ref is a ref (of the tangent dtype), so the JVP of each primitive applies it
to the tangent ref too; `get` is linear in the ref and `swap`/`addupdate` in
the value, and their transposes follow JAX's convention: the ref operand of a
transposed equation is the cotangent ref, which is read where the primal wrote
and accumulated into where the primal read.

>>> import numpy as np
>>> from lamella.core.state.types import AbstractRef
>>> from lamella.core.avals import ShapedArray
>>> ref = AbstractRef(ShapedArray((4, 8), np.float32))
>>> spec, _ = index_spec((4, 8), (1,))
>>> get_p.abstract_eval(ref, specs=(spec,))
ShapedArray(float32[8])
"""

from __future__ import annotations

from typing import Any

from lamella.core.avals import ShapedArray
from lamella.core.primitive import Primitive
from lamella.core.rules import (
    Zero,
    broadcast,
    instantiate_zeros,
    is_undefined_primal,
    moveaxis,
    primitive_batchers,
    primitive_jvps,
    primitive_transposes,
)
from lamella.core.state.types import DimIndex, IndexSpec, chain_shape, index_spec, is_ref_aval
from lamella.core.trace import aval_of

__all__ = ["addupdate_p", "get_p", "index_spec", "ref_addupdate", "ref_get", "ref_swap",
           "swap_p"]


class _StatePrimitive(Primitive):
    def pp_params(self, params: dict) -> list[tuple[str, Any]]:
        return [("idx", " | ".join(f"[{s}]" for s in params["specs"]))]


get_p = _StatePrimitive("get")
swap_p = _StatePrimitive("swap")
addupdate_p = _StatePrimitive("addupdate")
addupdate_p.multiple_results = True


def ref_get(ref: Any, specs: tuple[IndexSpec, ...], dynamic: list[Any]) -> Any:
    """Reads `ref` through the index chain `specs`."""
    return get_p.bind(ref, *dynamic, specs=specs)


def ref_swap(ref: Any, val: Any, specs: tuple[IndexSpec, ...], dynamic: list[Any]) -> Any:
    """Writes `val` into `ref` through `specs`; returns the value it replaced."""
    return swap_p.bind(ref, val, *dynamic, specs=specs)


def ref_addupdate(ref: Any, val: Any, specs: tuple[IndexSpec, ...], dynamic: list[Any]) -> None:
    """Adds `val` into `ref` through `specs`."""
    addupdate_p.bind(ref, val, *dynamic, specs=specs)


# ---------------------------------------------------------------------------
# Abstract evaluation.


def _window(ref: ShapedArray, dyn: tuple, specs: tuple[IndexSpec, ...], what: str
            ) -> tuple[int, ...]:
    if not is_ref_aval(ref):
        raise TypeError(f"{what} expects a ref as its first operand, got a value of type "
                        f"{ref.str_short()}")
    if len(dyn) != sum(s.num_dynamic for s in specs):
        raise TypeError(f"{what} got {len(dyn)} index operands for specs needing "
                        f"{sum(s.num_dynamic for s in specs)}")
    for d in dyn:
        if d.shape != () or d.dtype.kind not in "iu":
            raise TypeError(f"{what}: ref indices must be integer scalars, got {d.str_short()}")
    return chain_shape(ref.shape, specs)


@get_p.def_abstract_eval
def _get_abstract_eval(ref, *dyn, specs):
    return ShapedArray(_window(ref, dyn, specs, "get"), ref.dtype)


def _check_value(ref, val, shape, what):
    if tuple(val.shape) != shape or val.dtype != ref.dtype:
        raise TypeError(
            f"{what}: the value of type {val.str_short()} does not match the ref window "
            f"{ShapedArray(shape, ref.dtype).str_short()} of {ref.str_short()}")


@swap_p.def_abstract_eval
def _swap_abstract_eval(ref, val, *dyn, specs):
    shape = _window(ref, dyn, specs, "swap")
    _check_value(ref, val, shape, "swap")
    return ShapedArray(shape, ref.dtype)


@addupdate_p.def_abstract_eval
def _addupdate_abstract_eval(ref, val, *dyn, specs):
    _check_value(ref, val, _window(ref, dyn, specs, "addupdate"), "addupdate")
    return []


# ---------------------------------------------------------------------------
# JVP: the tangent of a ref is a ref; a Zero tangent ref is never written to.


def _get_jvp(primals, tangents, *, specs):
    ref, *dyn = primals
    out = get_p.bind(ref, *dyn, specs=specs)
    tref = tangents[0]
    if type(tref) is Zero:
        return out, Zero(aval_of(out).to_tangent_aval())
    return out, get_p.bind(tref, *dyn, specs=specs)


def _tangent_ref_for(tref, tval, what):
    if type(tref) is Zero and type(tval) is not Zero:
        raise TypeError(f"{what}: a value with a nonzero tangent is written into a ref whose "
                        "tangent is symbolically zero; differentiate with respect to the ref "
                        "too (give it a tangent).")
    return tref


def _swap_jvp(primals, tangents, *, specs):
    ref, val, *dyn = primals
    tref, tval = _tangent_ref_for(tangents[0], tangents[1], "swap"), tangents[1]
    out = swap_p.bind(ref, val, *dyn, specs=specs)
    if type(tref) is Zero:
        return out, Zero(aval_of(out).to_tangent_aval())
    return out, swap_p.bind(tref, instantiate_zeros(tval), *dyn, specs=specs)


def _addupdate_jvp(primals, tangents, *, specs):
    ref, val, *dyn = primals
    tref, tval = _tangent_ref_for(tangents[0], tangents[1], "addupdate"), tangents[1]
    addupdate_p.bind(ref, val, *dyn, specs=specs)
    if type(tref) is not Zero and type(tval) is not Zero:
        addupdate_p.bind(tref, tval, *dyn, specs=specs)
    return [], []


primitive_jvps[get_p] = _get_jvp
primitive_jvps[swap_p] = _swap_jvp
primitive_jvps[addupdate_p] = _addupdate_jvp


# ---------------------------------------------------------------------------
# Transposes (the ref operand is the cotangent ref).


def _get_transpose(ct, ref, *dyn, specs):
    if type(ct) is not Zero:
        addupdate_p.bind(ref, ct, *dyn, specs=specs)
    return [None] * (1 + len(dyn))


def _swap_transpose(ct, ref, val, *dyn, specs):
    if not is_undefined_primal(val):
        raise TypeError("swap is linear only in the value it writes")
    ct_val = swap_p.bind(ref, instantiate_zeros(ct), *dyn, specs=specs)
    return [None, ct_val, *([None] * len(dyn))]


def _addupdate_transpose(cts, ref, val, *dyn, specs):
    if not is_undefined_primal(val):
        raise TypeError("addupdate is linear only in the value it adds")
    return [None, get_p.bind(ref, *dyn, specs=specs), *([None] * len(dyn))]


primitive_transposes[get_p] = _get_transpose
primitive_transposes[swap_p] = _swap_transpose
primitive_transposes[addupdate_p] = _addupdate_transpose


# ---------------------------------------------------------------------------
# Batching: a batched ref is indexed with an extra full slice over its batch
# dimension, which every spec of the chain carries along.


def _with_batch_dim(specs: tuple[IndexSpec, ...], dim: int, size: int
                    ) -> tuple[tuple[IndexSpec, ...], int]:
    """The specs for a ref with a batch dimension at `dim`, and where the batch
    dimension ends up in the window."""
    new = []
    for spec in specs:
        full = DimIndex(False, 0, size, 1)
        dims = (*spec.dims[:dim], full, *spec.dims[dim:])
        shape = (*spec.in_shape[:dim], size, *spec.in_shape[dim:])
        new.append(IndexSpec(shape, dims))
        dim = sum(not d.is_int for d in spec.dims[:dim])
    return tuple(new), dim


def _check_unbatched_indices(dims, what):
    if any(d is not None for d in dims):
        raise ValueError(
            f"vmap of a ref {what} with batched indices is not supported: index refs with "
            "unbatched starts (map over a grid axis instead), or read the whole ref and index "
            "the value.")


def _ref_batch_info(args, dims, what):
    ref_dim = dims[0]
    if ref_dim is None:
        raise TypeError(f"vmap of a ref {what}: the value is batched but the ref it goes into "
                        "is not; a ref shared by all batch elements can't hold several values.")
    return args[0].shape[ref_dim], ref_dim


def _get_batch(args, dims, *, specs):
    ref, *dyn = args
    _check_unbatched_indices(dims[1:], "read")
    size, ref_dim = _ref_batch_info(args, dims, "read")
    new_specs, out_dim = _with_batch_dim(specs, ref_dim, size)
    return get_p.bind(ref, *dyn, specs=new_specs), out_dim


def _update_batch(prim, what):
    def rule(args, dims, *, specs):
        ref, val, *dyn = args
        _check_unbatched_indices(dims[2:], what)
        size, ref_dim = _ref_batch_info(args, dims, what)
        new_specs, val_dim = _with_batch_dim(specs, ref_dim, size)
        if dims[1] is None:
            val = broadcast(val, size, val_dim)
        else:
            val = moveaxis(val, dims[1], val_dim)
        out = prim.bind(ref, val, *dyn, specs=new_specs)
        return (out, val_dim) if not prim.multiple_results else (out, [])
    return rule


primitive_batchers[get_p] = _get_batch
primitive_batchers[swap_p] = _update_batch(swap_p, "swap")
primitive_batchers[addupdate_p] = _update_batch(addupdate_p, "addupdate")
