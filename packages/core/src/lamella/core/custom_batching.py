"""`custom_vmap`: a function with its own batching rule (JAX's `jax.custom_batching`).

`f = custom_vmap(fun)` computes `fun` everywhere except under `vmap`, where the
rule given with `@f.def_vmap` runs instead:

    rule(axis_size, in_batched, *args) -> (out, out_batched)

`in_batched` has one entry per positional argument, a pytree of bools shaped like
that argument saying which leaves carry the batch axis (always at the front);
`out_batched` says the same of `out` (a single bool stands for a whole subtree).

The call is a primitive, `custom_vmap_call`, holding `fun`'s jaxpr and the rule,
so `jit` keeps it and a `vmap` applied later still finds the rule. Forward-mode
derivatives go through (the JVP of the call is a custom_vmap call of the JVP of
`fun`, batched by the JVP of the rule). Reverse mode does not, as in JAX: a
custom_vmap function has no transpose; give it a `custom_vjp` for `grad`.

>>> import numpy as np
>>> import lamella.core as lc
>>> from lamella.core.structural import broadcast_in_dim, reduce_sum
>>> @custom_vmap
... def spread(x):
...     return x
>>> @spread.def_vmap
... def spread_rule(axis_size, in_batched, xs):   # every element becomes the batch's sum
...     return broadcast_in_dim(reduce_sum(xs, (0,)), (axis_size,), ()), True
>>> lc.vmap(spread)(np.arange(3, dtype=np.float32))
array([3., 3., 3.], dtype=float32)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from lamella.core.ad import jvp_flat, jvp_jaxpr
from lamella.core.api_util import fun_name
from lamella.core.batching import BatchTrace
from lamella.core.jaxpr import eval_jaxpr
from lamella.core.partial_eval import partial_eval_rules
from lamella.core.primitive import Primitive
from lamella.core.rules import (
    AxisData,
    Zero,
    at_front,
    fancy_primitive_batchers,
    instantiate_zeros,
    not_mapped,
    primitive_jvps,
)
from lamella.core.staging import trace_subjaxpr
from lamella.core.trace import TraceTag, aval_of, current_trace, set_current_trace
from lamella.core.tree_util import (
    PyTreeDef,
    tree_broadcast,
    tree_flatten,
    tree_map,
    tree_structure,
    tree_unflatten,
)

__all__ = ["custom_vmap", "sequential_vmap", "custom_vmap_call_p"]


class CustomVmapCallPrimitive(Primitive):
    multiple_results = True

    def pp_params(self, params):
        return [("call", params["call"]), ("in_tree", params["in_tree"]),
                ("out_tree", params["out_tree"]), ("rule", params["rule"])]


custom_vmap_call_p = CustomVmapCallPrimitive("custom_vmap_call")


@custom_vmap_call_p.def_impl
def _custom_vmap_call_impl(*args, call, rule, in_tree, out_tree, num_consts):
    return eval_jaxpr(call.jaxpr, call.consts, *args)


@custom_vmap_call_p.def_abstract_eval
def _custom_vmap_call_abstract_eval(*avals, call, **params):
    return call.out_avals


class _FlatRule:
    """The user's rule on flat leaves: `(axis_size, in_batched_leaves, *leaves) ->
    (out_leaves, out_batched_leaves)`. Shown in jaxprs under the user's function name."""

    __slots__ = ("rule", "in_tree", "out_tree", "name")

    def __init__(self, rule: Callable, in_tree: PyTreeDef, out_tree: PyTreeDef, name: str):
        self.rule, self.in_tree, self.out_tree, self.name = rule, in_tree, out_tree, name

    def __call__(self, axis_size: int, in_batched: Sequence[bool], *leaves: Any):
        args = tree_unflatten(self.in_tree, leaves)
        batched = tree_unflatten(self.in_tree, list(in_batched))
        result = self.rule(axis_size, list(batched), *args)
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            raise TypeError(f"The vmap rule of custom_vmap function {self.name} must return a "
                            f"pair (out, out_batched), got {type(result).__name__}.")
        out, out_batched = result
        out_leaves, tree = tree_flatten(out)
        if tree != self.out_tree:
            raise TypeError(f"The vmap rule of custom_vmap function {self.name} returned an "
                            f"output with structure {tree}; the function itself returns "
                            f"{self.out_tree}.")
        return out_leaves, _batched_leaves(out_batched, out, self.name)

    def __repr__(self) -> str:
        return f"<vmap rule of {self.name}>"


def _batched_leaves(out_batched: Any, out: Any, name: str) -> list[bool]:
    """`out_batched` (a pytree of bools shaped like `out`, or a prefix of it) as one bool
    per leaf of `out`."""
    try:
        flags = tree_flatten(tree_broadcast(out_batched, out))[0]
    except (ValueError, TypeError):
        raise TypeError(f"The vmap rule of custom_vmap function {name} returned out_batched "
                        f"{out_batched!r}, which is not a pytree of bools shaped like its "
                        f"output {tree_structure(out)}.") from None
    if any(not isinstance(b, bool) for b in flags):
        raise TypeError(f"The vmap rule of custom_vmap function {name} must return bools in "
                        f"out_batched, got {out_batched!r}.")
    return flags


def _custom_vmap_batch(axis_data, args, dims, *, call, rule, in_tree, out_tree, num_consts):
    size = axis_data.size
    if any(d is not not_mapped for d in dims[:num_consts]):
        raise TypeError(f"custom_vmap function {rule.name} closes over a value batched by "
                        f"this vmap; pass it as an argument so its vmap rule sees it.")
    args = [at_front(x, d, size) if d is not not_mapped else x
            for x, d in zip(args[num_consts:], dims[num_consts:])]
    in_batched = [d is not not_mapped for d in dims[num_consts:]]
    outs, out_batched = rule(size, in_batched, *args)
    for out, batched, aval in zip(outs, out_batched, call.out_avals):
        got = aval_of(out)
        want = (size, *aval.shape) if batched else aval.shape
        if tuple(got.shape) != tuple(want) or got.dtype != aval.dtype:
            raise TypeError(f"The vmap rule of custom_vmap function {rule.name} returned an "
                            f"output of type {got.str_short()} marked "
                            f"{'batched' if batched else 'unbatched'}; expected "
                            f"{aval.update(shape=want).str_short()}.")
    return list(outs), [0 if b else not_mapped for b in out_batched]


fancy_primitive_batchers[custom_vmap_call_p] = _custom_vmap_batch


class _JvpRule:
    """The vmap rule of a custom_vmap call's JVP (as JAX builds it): the original rule
    batches the arguments whose primal and tangent are both batched, inside the JVP; an
    argument batched on one side only is batched by an ordinary vmap around that (so
    `jacfwd`, which batches tangents alone, leaves the primal output unbatched)."""

    __slots__ = ("rule", "n", "name")

    def __init__(self, rule: _FlatRule | _JvpRule, n: int):
        self.rule, self.n, self.name = rule, n, rule.name

    def __call__(self, axis_size: int, in_batched: Sequence[bool], *args: Any):
        n = self.n
        batched_p, batched_t = in_batched[:n], in_batched[n:]
        mutual = [p and t for p, t in zip(batched_p, batched_t)]
        extra = [0 if p and not t else not_mapped for p, t in zip(batched_p, batched_t)] + \
                [0 if t and not p else not_mapped for p, t in zip(batched_p, batched_t)]
        out_mutual: list[list[bool]] = []

        def jvp_of_rule(*primals_and_tangents):
            def primal_rule(*primals):
                outs, flags = self.rule(axis_size, mutual, *primals)
                out_mutual.append(flags)
                return outs
            outs, out_tangents = jvp_flat(primal_rule, primals_and_tangents[:n],
                                          primals_and_tangents[n:], current_trace())
            return [*outs, *map(instantiate_zeros, out_tangents)]

        if all(d is not_mapped for d in extra):
            outs = jvp_of_rule(*args)
            out_extra = [False] * len(outs)
        else:
            outs, out_extra = _vmap_with_out_dims(jvp_of_rule, args, extra, axis_size)
        flags = out_mutual[0]
        m = len(flags)
        both = [f and (out_extra[i] or out_extra[m + i]) for i, f in enumerate(flags)]
        if any(both):
            raise TypeError(
                f"custom_vmap function {self.name}: under vmap of its JVP an output depends on "
                f"arguments whose primal and tangent are both batched and on arguments batched "
                f"on one side only; batch primals and tangents alike.")
        return outs, [f or e for f, e in zip(flags + flags, out_extra)]

    def __repr__(self) -> str:
        return f"<jvp of the vmap rule of {self.name}>"


def _vmap_with_out_dims(fun: Callable, args: Sequence[Any], in_dims: Sequence[int | None],
                        axis_size: int) -> tuple[list[Any], list[bool]]:
    """`vmap(fun)` where each output comes back batched at 0 or unbatched, as it happens
    (with which it was)."""
    trace = BatchTrace(current_trace(), TraceTag(), AxisData(None, axis_size))
    try:
        with set_current_trace(trace):
            outs = fun(*map(trace.wrap, args, in_dims))
        results, batched = [], []
        for out in outs:
            val, dim = trace.to_batch_info(out)
            results.append(val if dim is not_mapped else at_front(val, dim, axis_size))
            batched.append(dim is not not_mapped)
        return results, batched
    finally:
        trace.invalidate()


def _custom_vmap_jvp(primals, tangents, *, call, rule, in_tree, out_tree, num_consts):
    if any(type(t) is not Zero for t in tangents[:num_consts]):
        raise TypeError(f"custom_vmap function {rule.name} closes over a value being "
                        f"differentiated; pass it as an argument instead.")
    n = len(primals) - num_consts
    arg_tangents = [instantiate_zeros(t) for t in tangents[num_consts:]]
    jvp_call, _ = jvp_jaxpr(call, [False] * num_consts + [True] * n, instantiate=True)
    pair_in = tree_structure((tuple(range(n)), tuple(range(n))))
    pair_out = tree_structure((tuple(range(len(call.out_avals))),) * 2)
    outs = custom_vmap_call_p.bind(*primals, *arg_tangents, call=jvp_call,
                                   rule=_JvpRule(rule, n), in_tree=pair_in, out_tree=pair_out,
                                   num_consts=num_consts)
    m = len(call.out_avals)
    return outs[:m], outs[m:]


primitive_jvps[custom_vmap_call_p] = _custom_vmap_jvp


def _custom_vmap_partial_eval(trace, args, *, rule, **params):
    if not all(map(trace.is_unknown, args)):
        raise TypeError(
            f"custom_vmap function {rule.name} cannot be differentiated in reverse mode "
            f"(grad, vjp, linearize): its vmap rule has a JVP but no transpose. Use forward "
            f"mode (jvp, jacfwd), or give the function a custom_vjp.")
    with set_current_trace(trace.unknown):
        return custom_vmap_call_p.bind(*args, rule=rule, **params)


partial_eval_rules[custom_vmap_call_p] = _custom_vmap_partial_eval


class custom_vmap:
    """Wraps `fun` so that `vmap` uses a rule given with `def_vmap` instead of
    batching `fun`'s body.

    Args:
      fun: the function (positional arguments, pytrees of arrays).

    >>> import numpy as np
    >>> import lamella.core as lc
    >>> from lamella.core.structural import add_any_p
    >>> @custom_vmap
    ... def double(x):
    ...     return add_any_p.bind(x, x)
    >>> @double.def_vmap
    ... def double_rule(axis_size, in_batched, x):
    ...     print("batched over", axis_size)
    ...     return add_any_p.bind(x, x), in_batched[0]
    >>> lc.vmap(double)(np.ones(2, np.float32))
    batched over 2
    array([2., 2.], dtype=float32)
    """

    def __init__(self, fun: Callable[..., Any]):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule: Callable[..., Any] | None = None

    def def_vmap(self, vmap_rule: Callable[..., Any]) -> Callable[..., Any]:
        """Sets the rule `vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)`;
        returns it, so it works as a decorator."""
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        name = fun_name(self.fun)
        if self.vmap_rule is None:
            raise AttributeError(f"No batching rule defined for custom_vmap function {name} "
                                 f"using def_vmap.")
        if kwargs:
            args = _positional(self.fun, args, kwargs)
        leaves, in_tree = tree_flatten(args)
        out_trees: list[PyTreeDef] = []

        def flat_fun(*flat):
            out_leaves, out_tree = tree_flatten(self.fun(*tree_unflatten(in_tree, flat)))
            out_trees.append(out_tree)
            return out_leaves

        call, consts = trace_subjaxpr(flat_fun, [aval_of(x) for x in leaves])
        out_tree = out_trees[0]
        outs = custom_vmap_call_p.bind(
            *consts, *leaves, call=call, rule=_FlatRule(self.vmap_rule, in_tree, out_tree,
                                                          name),
            in_tree=in_tree, out_tree=out_tree, num_consts=len(consts))
        return tree_unflatten(out_tree, outs)


def _positional(fun: Callable, args: tuple, kwargs: dict) -> tuple:
    """Keyword arguments bound to their positions (the rule sees positional ones only)."""
    import inspect
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        raise TypeError(f"custom_vmap function {fun_name(fun)}: {e}") from None
    if bound.kwargs:
        raise TypeError(f"custom_vmap function {fun_name(fun)} takes keyword-only arguments "
                        f"{sorted(bound.kwargs)}; pass them positionally.")
    return tuple(bound.args)


# How `sequential_vmap` loops: a `map(f, xs)` over the leading axis of the pytree
# `xs`, registered by the layer that has a loop primitive (lamella.lax: lax.map).
_sequential_map: list[Callable[[Callable, Any], Any]] = []


def register_sequential_map(map_fn: Callable[[Callable, Any], Any]) -> None:
    """Installs the loop `sequential_vmap` runs its function in: `map_fn(f, xs)` applies
    `f` to each slice of `xs` along axis 0 and stacks the results (lax.map)."""
    _sequential_map[:] = [map_fn]


def sequential_vmap(f: Callable[..., Any]) -> custom_vmap:
    """`f` batched by a loop over the batch, calling `f` once per element (as `lax.map`
    would) instead of batching its body.

    With lamella.lax imported (it provides the loop)::

        g = sequential_vmap(lambda x: x * 2)
        lamella.core.vmap(g)(np.arange(3.0))   # three calls of the lambda, in a scan
    """
    wrapped = custom_vmap(f)

    @wrapped.def_vmap
    def rule(axis_size, in_batched, *args):
        if not _sequential_map:
            raise RuntimeError("sequential_vmap loops with a loop primitive, which lamella.core "
                               "lacks: install and import lamella-lax (`import lamella.lax`).")
        flags = tree_flatten(in_batched)[0]
        leaves, tree = tree_flatten(list(args))
        batched_leaves = [x for x, b in zip(leaves, flags) if b]

        def one(xs):
            it = iter(xs)
            merged = [next(it) if b else x for x, b in zip(leaves, flags)]
            # The wrapped function again, so a vmap outside this one loops too.
            return wrapped(*tree_unflatten(tree, merged))

        out = _sequential_map[0](one, batched_leaves)
        return out, tree_map(lambda _: True, out)

    return wrapped
