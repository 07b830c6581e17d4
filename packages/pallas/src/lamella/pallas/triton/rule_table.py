"""The rule table of the Triton lowering and the loop that applies it to a jaxpr.

`triton_rules` maps a primitive to its rule, `rule(ctx, *operands, **params)`,
which emits Triton/arith/math/scf operations at the current insertion point and
returns the result value (a list for primitives with several results).
Operands are `ir.Value`s, or `KernelRef`s for refs (which are pointers with a
block layout, not values). `lower_jaxpr` walks a jaxpr's equations; a
primitive with no rule is an error naming it.

>>> from lamella.lax import add_p
>>> add_p in triton_rules
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import arith

from lamella.core import Jaxpr, Literal, ShapedArray
from lamella.pallas.triton.builder import cast, constant, ir_type, splat

__all__ = ["KernelContext", "RuleContext", "TritonLoweringError", "lower_jaxpr", "register",
           "triton_rules"]

Rule = Callable[..., Any]
triton_rules: dict[Any, Rule] = {}


class TritonLoweringError(NotImplementedError):
    """A kernel uses something the Triton lowering has no rule for."""


def register(*primitives: Any) -> Callable[[Rule], Rule]:
    """Decorator: installs the rule for each of `primitives`."""
    def install(rule: Rule) -> Rule:
        for p in primitives:
            triton_rules[p] = rule
        return rule
    return install


@dataclasses.dataclass
class KernelContext:
    """What every rule of one kernel shares: its name and its program ids."""

    name: str
    program_ids: Sequence[ir.Value]
    grid: tuple[int, ...]


@dataclasses.dataclass
class RuleContext:
    """What a rule knows besides its operands."""

    kernel: KernelContext
    avals_in: Sequence[ShapedArray]
    avals_out: Sequence[ShapedArray]
    used_outputs: Sequence[bool]

    def lower(self, jaxpr: Jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
        """Emits a sub-jaxpr (a branch, a loop body) inline."""
        return lower_jaxpr(self.kernel, jaxpr, consts, args)


def array_constant(value: Any, aval: ShapedArray) -> ir.Value:
    """A constant array: a scalar, or a (splat or dense) tensor."""
    value = np.asarray(value, aval.dtype)
    if value.ndim == 0:
        return constant(value, aval.dtype)
    if np.all(value == value.flat[0]):
        return splat(constant(value.flat[0], aval.dtype), value.shape)
    if value.dtype == np.bool_:
        as_int = array_constant(value.astype(np.int8), ShapedArray(value.shape, np.int8))
        return cast(as_int, np.int8, np.bool_)
    t = ir_type(value.shape, aval.dtype)
    return arith.constant(t, ir.DenseElementsAttr.get(value, type=t))


def _used_vars(jaxpr: Jaxpr) -> set[Any]:
    used = {v for v in jaxpr.outvars if not isinstance(v, Literal)}
    for eqn in jaxpr.eqns:
        used.update(v for v in eqn.invars if not isinstance(v, Literal))
    return used


def lower_jaxpr(kernel: KernelContext, jaxpr: Jaxpr, consts: Sequence[Any],
                args: Sequence[Any]) -> list[Any]:
    """Emits `jaxpr` with its constvars bound to `consts` and invars to `args`."""
    env: dict[Any, Any] = {}
    for v, c in zip(jaxpr.constvars, consts):
        env[v] = c if isinstance(c, ir.Value) or hasattr(c, "ptr") else array_constant(c, v.aval)
    env.update(zip(jaxpr.invars, args))
    used = _used_vars(jaxpr)

    def read(v):
        if isinstance(v, Literal):
            return array_constant(v.val, v.aval)
        return env[v]

    for eqn in jaxpr.eqns:
        rule = triton_rules.get(eqn.primitive)
        if rule is None:
            raise TritonLoweringError(
                f"Kernel {kernel.name!r}: the Triton lowering has no rule for the primitive "
                f"'{eqn.primitive.name}' ({eqn.primitive.name} "
                f"{', '.join(v.aval.str_short() for v in eqn.invars)}); rewrite the kernel "
                "without it or run it on CPU.")
        ctx = RuleContext(kernel, [v.aval for v in eqn.invars], [v.aval for v in eqn.outvars],
                          [v in used for v in eqn.outvars])
        outs = rule(ctx, *map(read, eqn.invars), **eqn.params)
        if not eqn.primitive.multiple_results:
            outs = [outs]
        if len(outs) != len(eqn.outvars):
            raise ValueError(f"The Triton rule for '{eqn.primitive.name}' returned {len(outs)} "
                             f"values for {len(eqn.outvars)} outputs")
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]
