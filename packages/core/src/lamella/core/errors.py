"""Errors a user can act on: each names what went wrong and what to change."""

from __future__ import annotations


class ConcretizationTypeError(TypeError):
    """A traced (abstract) value was used where Python needs a concrete one."""


class TracerArrayConversionError(TypeError):
    """A traced value was converted to a NumPy array."""


class TracerIntegerConversionError(TypeError):
    """A traced value was used as a Python integer (an index, a size)."""


class UnexpectedTracerError(Exception):
    """A tracer escaped the transformation that created it."""


class JaxprTypeError(TypeError):
    """A jaxpr is ill-typed (found by `check_jaxpr`)."""
