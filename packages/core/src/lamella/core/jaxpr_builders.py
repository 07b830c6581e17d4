"""Building and walking jaxprs by hand (the jaxpr helpers of JAX's `jax.extend.core`):
fresh variables, equations, dropped outputs, and the jaxprs nested in parameters.

>>> import numpy as np
>>> from lamella.core import jit, make_jaxpr
>>> from lamella.core.structural import reduce_sum
>>> outer = make_jaxpr(lambda x: jit(lambda y: reduce_sum(y, (0,)))(x))(np.ones(2))
>>> [len(inner.eqns) for inner in subjaxprs(outer.jaxpr)]
[1]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from lamella.core.avals import ShapedArray
from lamella.core.jaxpr import ClosedJaxpr, Jaxpr, JaxprEqn, Var

__all__ = ["DropVar", "gensym", "jaxprs_in_params", "new_jaxpr_eqn", "subjaxprs"]


class DropVar(Var):
    """An equation output that nothing reads (printed `_`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "_"


def gensym(suffix: str = "") -> Callable[[ShapedArray], Var]:
    """A factory of fresh variables: `gensym()(aval)` is a new `Var` of type `aval`
    (names are given when a jaxpr is printed, so `suffix` is accepted and unused)."""
    return Var


def new_jaxpr_eqn(invars: Sequence[Any], outvars: Sequence[Var], primitive: Any,
                  params: Mapping[str, Any], effects: frozenset,
                  source_info: Any = None, ctx: Any = None) -> JaxprEqn:
    """An equation `outvars = primitive[params] invars`; `ctx` (JAX's per-equation
    compiler context) has no counterpart here and must be None."""
    if ctx is not None:
        raise TypeError("new_jaxpr_eqn: lamella equations carry no JaxprEqnContext; pass "
                        "ctx=None.")
    return JaxprEqn(list(invars), list(outvars), primitive, dict(params), effects,
                    source_info)


def jaxprs_in_params(params: Mapping[str, Any]) -> Iterator[Jaxpr]:
    """Every jaxpr held by an equation's params (bodies of calls, branches of conds)."""
    for value in params.values():
        values = value if isinstance(value, (tuple, list)) else (value,)
        for v in values:
            if isinstance(v, ClosedJaxpr):
                yield v.jaxpr
            elif isinstance(v, Jaxpr):
                yield v


def subjaxprs(jaxpr: Jaxpr) -> Iterator[Jaxpr]:
    """The jaxprs nested one level inside `jaxpr`'s equations."""
    for eqn in jaxpr.eqns:
        yield from jaxprs_in_params(eqn.params)
