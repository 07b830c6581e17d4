"""Errors a user can act on: each names what went wrong and what to change.

The classes and their bases are JAX's (`jax.errors`), so a ported program's
`except` clauses catch the same errors: a tracer used in an `if` raises
`TracerBoolConversionError`, which is a `ConcretizationTypeError`, which is a
`TypeError`.

>>> issubclass(TracerBoolConversionError, ConcretizationTypeError)
True
"""

from __future__ import annotations


class JAXTypeError(TypeError):
    """Base class of the type errors transformations raise."""


class JAXIndexError(IndexError):
    """Base class of the index errors transformations raise."""


class ConcretizationTypeError(JAXTypeError):
    """A traced (abstract) value was used where Python needs a concrete one."""


class TracerBoolConversionError(ConcretizationTypeError):
    """A traced value was used as a Python bool (`if x:`, `while x:`, `and`/`or`)."""


class TracerArrayConversionError(JAXTypeError):
    """A traced value was converted to a NumPy array."""


class TracerIntegerConversionError(JAXTypeError):
    """A traced value was used as a Python integer (an index, a size)."""


class UnexpectedTracerError(JAXTypeError):
    """A tracer escaped the transformation that created it."""


class KeyReuseError(JAXTypeError):
    """A random key was consumed twice (raised by key-reuse checking)."""


class NonConcreteBooleanIndexError(JAXIndexError):
    """A boolean mask whose value is not known while tracing was used as an index:
    the result's shape would depend on the data."""


class JaxprTypeError(TypeError):
    """A jaxpr is ill-typed (found by `check_jaxpr`)."""


class InconclusiveDimensionOperation(Exception):
    """A comparison of symbolic dimensions has no single answer for every size."""


class JaxRuntimeError(RuntimeError):
    """An error reported by the runtime while compiling or running a program.

    lamella.lax replaces this name with jaxlib's own runtime error class when it
    loads, so `except lamella.core.errors.JaxRuntimeError` catches what XLA raises.
    """
