"""`Primitive`: an operation that every transformation knows how to handle.

A primitive has an `impl` (run on concrete values), an `abstract_eval` (shapes
and dtypes, for tracing), and rules for each transformation kept in tables
keyed by the primitive (`ad.primitive_jvps`, `ad.primitive_transposes`,
`batching.primitive_batchers`). `bind` hands the primitive to the current trace.

>>> import numpy as np
>>> from lamella.core import ShapedArray
>>> double_p = Primitive("double")
>>> double_p.def_impl(lambda x: 2 * x)  # doctest: +ELLIPSIS
<function ...>
>>> double_p.def_abstract_eval(lambda aval: aval)  # doctest: +ELLIPSIS
<function ...>
>>> double_p.bind(np.float32(3.0))
np.float32(6.0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lamella.core import trace as trace_lib
from lamella.core.jaxpr import ClosedJaxpr, Jaxpr


class Primitive:
    """A named operation; subclasses may set `multiple_results = True`."""

    multiple_results = False

    def __init__(self, name: str):
        self.name = name
        self.impl: Callable | None = None
        self._abstract_eval: Callable | None = None

    def __repr__(self) -> str:
        return self.name

    def bind(self, *args: Any, **params: Any) -> Any:
        """Applies the primitive through the current trace."""
        return trace_lib._state.trace.process_primitive(self, args, params)

    def bind_with_trace(self, trace, args, params):
        return trace.process_primitive(self, args, params)

    def def_impl(self, impl: Callable) -> Callable:
        """Sets the evaluation rule: `impl(*concrete_values, **params)`."""
        self.impl = impl
        return impl

    def def_abstract_eval(self, rule: Callable) -> Callable:
        """Sets the shape rule: `rule(*avals, **params) -> aval(s)`."""
        self._abstract_eval = rule
        return rule

    def abstract_eval(self, *avals, **params):
        if self._abstract_eval is None:
            raise NotImplementedError(
                f"Abstract evaluation rule for primitive '{self.name}' not implemented: "
                f"define it with {self.name}_p.def_abstract_eval(...).")
        return self._abstract_eval(*avals, **params)

    def pp_params(self, params: dict) -> list[tuple[str, Any]]:
        """The params to print in a jaxpr, in order; primitives may hide defaults."""
        return sorted(params.items())

    def subjaxprs(self, params: dict):
        """The closed jaxprs this primitive carries in its params (for printing, checks)."""
        for value in params.values():
            if isinstance(value, (ClosedJaxpr, Jaxpr)):
                yield value
            elif isinstance(value, tuple):
                yield from (v for v in value if isinstance(v, (ClosedJaxpr, Jaxpr)))
