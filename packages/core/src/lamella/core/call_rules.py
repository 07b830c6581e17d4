"""Rules for primitives that call a closed jaxpr (`jit`, `checkpoint`).

Such a primitive carries its body in the `jaxpr` param; each transformation
transforms that jaxpr (JVP, transposition, batching, partial evaluation) and
binds the same primitive on the result, so the structure survives: `grad` of
a jitted function is a jitted function. A primitive registers these rules with
`register_call_rules`, passing how the derived calls' other params differ.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from lamella.core import ad, batching, partial_eval
from lamella.core.jaxpr import ClosedJaxpr, eval_jaxpr
from lamella.core.primitive import Primitive
from lamella.core.rules import (
    Zero,
    fancy_primitive_batchers,
    instantiate_zeros,
    is_undefined_primal,
    primitive_jvps,
    primitive_transposes,
)
from lamella.core.trace import set_current_trace
from lamella.core.util import merge_lists, partition_list

DeriveParams = Callable[[str, dict, int], dict]
"""`derive(kind, params, num_args) -> params` for a derived call of `num_args`
arguments; kind is "jvp", "transpose", "known" or "unknown" (partial evaluation)."""


def _same_params(kind: str, params: dict, num_args: int) -> dict:
    return params


def register_call_rules(primitive: Primitive, derive: DeriveParams = _same_params,
                        partial_eval_rule: bool = True) -> None:
    """Registers JVP, transpose, batching and (unless told not to) partial-eval
    rules for `primitive`, a call of the closed jaxpr in its `jaxpr` param."""
    primitive_jvps[primitive] = partial(_call_jvp, primitive, derive)
    primitive_transposes[primitive] = partial(_call_transpose, primitive, derive)
    fancy_primitive_batchers[primitive] = partial(_call_batch, primitive)
    if partial_eval_rule:
        partial_eval.partial_eval_rules[primitive] = partial(_call_partial_eval, primitive,
                                                             derive)


def _call_jvp(primitive, derive, primals, tangents, *, jaxpr, **params):
    nonzeros = [type(t) is not Zero for t in tangents]
    jvp_closed, out_nonzeros = ad.jvp_jaxpr(jaxpr, nonzeros)
    nonzero_tangents = [t for t in tangents if type(t) is not Zero]
    args = [*primals, *nonzero_tangents]
    outs = primitive.bind(*args, jaxpr=jvp_closed, **derive("jvp", params, len(args)))
    n = len(jaxpr.out_avals)
    tangents_out = iter(outs[n:])
    return outs[:n], [next(tangents_out) if nz else Zero(a.to_tangent_aval())
                      for a, nz in zip(jaxpr.out_avals, out_nonzeros)]


def _call_transpose(primitive, derive, cts, *args, jaxpr, **params):
    linear = [is_undefined_primal(x) for x in args]
    transposed = ad.transpose_jaxpr(jaxpr, linear)
    call_args = [*(x for x, lin in zip(args, linear) if not lin), *map(instantiate_zeros, cts)]
    outs = iter(primitive.bind(*call_args, jaxpr=transposed,
                               **derive("transpose", params, len(call_args))))
    return [next(outs) if lin else None for lin in linear]


def _call_batch(primitive, axis_data, args, dims, *, jaxpr, **params):
    batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims)
    return primitive.bind(*args, jaxpr=batched, **params), out_dims


def _call_partial_eval(primitive, derive, trace, args, *, jaxpr, **params) -> list[Any]:
    unknowns = [trace.is_unknown(x) for x in args]
    known, unknown, out_unknowns, num_res = partial_eval.partial_eval_jaxpr(jaxpr, unknowns)
    known_args, unknown_args = partition_list(unknowns, args)
    with set_current_trace(trace.known):
        known_outs = primitive.bind(*known_args, jaxpr=known,
                                    **derive("known", params, len(known_args)))
    split = len(known_outs) - num_res
    known_outs, residuals = known_outs[:split], known_outs[split:]
    unknown_call_args = [*residuals, *unknown_args]
    with set_current_trace(trace.unknown):
        unknown_outs = primitive.bind(*unknown_call_args, jaxpr=unknown,
                                      **derive("unknown", params, len(unknown_call_args)))
    return merge_lists(out_unknowns, known_outs, unknown_outs)


# ---------------------------------------------------------------------------
# CallPrimitive: a new call-like primitive with all of the above.

_call_primitive_listeners: list[Callable[[Primitive], None]] = []
_call_primitives: list[Primitive] = []


def on_new_call_primitive(listener: Callable[[Primitive], None]) -> None:
    """Calls `listener(p)` for every CallPrimitive, those made so far and later ones (the
    runtime installs their lowering this way)."""
    _call_primitive_listeners.append(listener)
    for primitive in _call_primitives:
        listener(primitive)


def call_impl(f: Any, *args: Any, **params: Any) -> list[Any]:
    """Evaluates a call: `f` is the body, a closed jaxpr or a function of flat arrays.

    >>> import numpy as np
    >>> call_impl(lambda x: [x + 1], np.float32(1))
    [np.float32(2.0)]
    """
    if isinstance(f, ClosedJaxpr):
        return eval_jaxpr(f.jaxpr, f.consts, *args)
    return list(f(*args))


class CallPrimitive(Primitive):
    """A primitive that calls the closed jaxpr in its `jaxpr` param (JAX's
    `jax.extend.core.CallPrimitive`): it evaluates, differentiates, transposes, batches
    and lowers as that body, and shows up in jaxprs under its own name.

    >>> import numpy as np
    >>> from lamella.core import grad, make_jaxpr
    >>> from lamella.core.structural import reduce_sum
    >>> tagged_p = CallPrimitive("tagged")
    >>> def tagged(f, x):
    ...     body = make_jaxpr(lambda y: [f(y)])(x)
    ...     return tagged_p.bind(x, jaxpr=body)[0]
    >>> grad(lambda x: tagged(lambda y: reduce_sum(y, (0,)), x))(np.ones(2, np.float32))
    array([1., 1.], dtype=float32)
    """

    multiple_results = True

    def __init__(self, name: str):
        super().__init__(name)
        self.def_impl(lambda *args, jaxpr, **params: call_impl(jaxpr, *args))
        self.def_abstract_eval(lambda *avals, jaxpr, **params: jaxpr.out_avals)
        register_call_rules(self)
        _call_primitives.append(self)
        for listener in _call_primitive_listeners:
            listener(self)
