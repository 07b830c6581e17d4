"""Effects: what a jaxpr does besides computing its outputs (JAX's `Effect`).

Every jaxpr and equation carries a frozenset of `Effect` instances; pure
computations carry `no_effects`. An extension that stages an effectful
primitive (a host callback, I/O) defines an `Effect` subclass and registers
the effects of its equations in `effect_rules`, so that transformations and
the runtime know not to drop or reorder them: dead-code elimination keeps an
equation with effects, a higher-order primitive has the effects of the jaxprs
it carries, and a backend threads an order through the effects whose type is
in `ordered_effects`.

>>> class Prints(Effect):
...     pass
>>> ordered_effects.add_type(Prints)
>>> ordered_effects.contains(Prints()), Effects is frozenset and no_effects == frozenset()
(True, True)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from lamella.core.jaxpr import NO_EFFECTS

__all__ = ["Effect", "EffectTypeSet", "Effects", "effect_rules", "effects_of", "no_effects",
           "ordered_effects"]


class Effect:
    """Base class of effects; an effect type's instances compare by value."""

    def __repr__(self) -> str:
        return type(self).__name__

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


Effects = frozenset
no_effects: frozenset = NO_EFFECTS


class EffectTypeSet:
    """A set of effect types (JAX's): `add_type`, and `contains` for an effect."""

    def __init__(self) -> None:
        self._types: set[type] = set()

    def add_type(self, effect_type: type[Effect]) -> None:
        self._types.add(effect_type)

    def contains(self, effect: Any) -> bool:
        return type(effect) in self._types

    def filter_in(self, effects: Iterable[Any]) -> list[Any]:
        return [e for e in effects if type(e) in self._types]

    def filter_not_in(self, effects: Iterable[Any]) -> list[Any]:
        return [e for e in effects if type(e) not in self._types]


ordered_effects = EffectTypeSet()
"""Effects whose occurrences must happen in program order (and across programs)."""

effect_rules: dict[Any, Callable[..., frozenset]] = {}
"""Per effectful primitive: `rule(**params) -> frozenset of effects` of its equations."""


def effects_of(primitive: Any, params: dict) -> frozenset:
    """The effects of an equation of `primitive` with `params`: its own (from
    `effect_rules`), or those of the jaxprs it carries."""
    rule = effect_rules.get(primitive)
    if rule is not None:
        return rule(**params)
    effects = NO_EFFECTS
    if params:
        for sub in primitive.subjaxprs(params):
            if sub.effects:
                effects = effects | sub.effects
    return effects
