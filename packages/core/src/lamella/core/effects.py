"""Effects: what a jaxpr does besides computing its outputs (JAX's `Effect`).

Every jaxpr and equation carries a frozenset of `Effect` instances; pure
computations carry `no_effects`. An extension that stages an effectful
primitive (a host callback, I/O) defines an `Effect` subclass and puts an
instance in the equations' effects, so that transformations and the runtime
know not to drop or reorder them.

>>> class Prints(Effect):
...     pass
>>> Effects is frozenset and no_effects == frozenset()
True
"""

from __future__ import annotations

from lamella.core.jaxpr import NO_EFFECTS

__all__ = ["Effect", "Effects", "no_effects"]


class Effect:
    """Base class of effects; an effect type's instances compare by value."""

    def __repr__(self) -> str:
        return type(self).__name__


Effects = frozenset
no_effects: frozenset = NO_EFFECTS
