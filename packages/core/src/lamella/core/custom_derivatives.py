"""`custom_jvp` and `custom_vjp`: user-defined derivative rules for Python functions.

Both are bound as primitives that carry the function and its rules, so every
trace decides what to do: evaluation calls the function, JVP applies the rule,
vmap batches the function and the rules, staging records the function's jaxpr
(and keeps the rules for later). Under JVP a custom_vjp function runs its `fwd`
now and records `custom_lin`, whose transpose calls `bwd`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from lamella.core import dtypes
from lamella.core.api_util import flatten_outputs, fun_name
from lamella.core.jaxpr import eval_jaxpr, jaxpr_as_fun
from lamella.core.linear_call import linear_call
from lamella.core.primitive import Primitive
from lamella.core.rules import Zero, add_tangents, instantiate_zeros, zeros_like_aval
from lamella.core.staging import trace_to_jaxpr
from lamella.core.trace import aval_of, current_trace
from lamella.core.tree_util import Partial, tree_flatten, tree_map, tree_structure, tree_unflatten

__all__ = ["CustomVJPPrimal", "SymbolicZero", "closure_convert", "custom_gradient", "custom_jvp",
           "custom_jvp_call_p", "custom_vjp", "custom_vjp_call_p",
           "custom_vjp_primal_tree_values", "linear_call", "zero_from_primal"]

SymbolicZero = Zero
"""With `symbolic_zeros=True`, zero tangents/cotangents reach the rules as these."""


class CustomJVPCallPrimitive(Primitive):
    """Binds a function together with its custom JVP rule."""

    multiple_results = True

    def bind_with_fun(self, fun: Callable, jvp: Callable, args, symbolic_zeros: bool):
        return current_trace().process_custom_jvp_call(self, fun, jvp, args, symbolic_zeros)

    def bind(self, *args, call_jaxpr, jvp_jaxpr_fun, num_consts, symbolic_zeros):
        return self.bind_with_fun(jaxpr_as_fun(call_jaxpr), jvp_jaxpr_fun, args, symbolic_zeros)


class CustomVJPCallPrimitive(Primitive):
    """Binds a function together with its custom forward and backward rules."""

    multiple_results = True

    def bind_with_fun(self, fun, fwd, bwd, args, out_trees, symbolic_zeros):
        return current_trace().process_custom_vjp_call(self, fun, fwd, bwd, args, out_trees,
                                                       symbolic_zeros)

    def bind(self, *args, call_jaxpr, fwd_jaxpr_thunk, bwd, num_consts, out_trees,
             symbolic_zeros):
        return self.bind_with_fun(jaxpr_as_fun(call_jaxpr), fwd_jaxpr_thunk, bwd, args,
                                  out_trees, symbolic_zeros)


custom_jvp_call_p = CustomJVPCallPrimitive("custom_jvp_call")
custom_vjp_call_p = CustomVJPCallPrimitive("custom_vjp_call")
for _p in (custom_jvp_call_p, custom_vjp_call_p):
    _p.def_abstract_eval(lambda *avals, call_jaxpr, **_: call_jaxpr.out_avals)

def _nondiff_positions(fun: Callable, argnums: Sequence[int],
                       argnames: Sequence[str]) -> tuple[int, ...]:
    """`nondiff_argnums` completed with the positions of `nondiff_argnames`."""
    positions = list(argnums)
    if argnames:
        params = list(inspect.signature(fun).parameters)
        for name in (argnames,) if isinstance(argnames, str) else argnames:
            if name not in params:
                raise ValueError(f"nondiff_argnames: {fun_name(fun)} has no parameter "
                                 f"{name!r} (its parameters are {params})")
            positions.append(params.index(name))
    return tuple(sorted(set(positions)))


class CustomVJPPrimal:
    """A primal argument leaf of a `custom_vjp` forward rule when `symbolic_zeros` is set:
    its `value`, and whether it is `perturbed` (has a nonzero tangent)."""

    __slots__ = ("value", "perturbed")

    def __init__(self, value: Any, perturbed: bool):
        self.value = value
        self.perturbed = perturbed

    def __repr__(self) -> str:
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed})"


def custom_vjp_primal_tree_values(tree: Any) -> Any:
    """`tree` with each `CustomVJPPrimal` leaf replaced by its value.

    >>> custom_vjp_primal_tree_values((CustomVJPPrimal(1.0, True), 2.0))
    (1.0, 2.0)
    """
    def value(x):
        return x.value if isinstance(x, CustomVJPPrimal) else x
    return tree_map(value, tree, is_leaf=lambda x: isinstance(x, CustomVJPPrimal))


def zero_from_primal(val: Any, symbolic_zeros: bool = False) -> Any:
    """A zero tangent for each leaf of `val`: `SymbolicZero`s, or arrays of zeros.

    >>> import numpy as np
    >>> zero_from_primal(np.ones(2, np.float32))
    array([0., 0.], dtype=float32)
    """
    def zero(x):
        aval = aval_of(x.value if isinstance(x, CustomVJPPrimal) else x).to_tangent_aval()
        return Zero(aval) if symbolic_zeros else zeros_like_aval(aval)
    return tree_map(zero, val, is_leaf=lambda x: isinstance(x, CustomVJPPrimal))


def _resolve_args(fun: Callable, args: tuple, kwargs: dict) -> tuple:
    """Keyword arguments bound to positions and defaults filled in (as JAX does), so
    rules see one positional tuple whether or not the caller spelled out defaults."""
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError) as e:
        if not kwargs:
            return args  # no usable signature: the call itself reports bad arguments
        raise TypeError(f"Could not bind the arguments of {fun_name(fun)}: {e}") from None
    bound.apply_defaults()
    if bound.kwargs:
        raise TypeError(f"{fun_name(fun)}: keyword-only arguments are not supported by "
                        "custom_jvp/custom_vjp; make them positional.")
    return bound.args


class _Signature:
    """Splits positional args into differentiable ones and `nondiff_argnums`."""

    def __init__(self, fun, nondiff_argnums, args, kwargs):
        self.args = _resolve_args(fun, args, kwargs)
        n = len(self.args)
        self.nondiff = sorted({i % n for i in nondiff_argnums if -n <= i < n})
        self.dyn_positions = [i for i in range(n) if i not in self.nondiff]
        self.flat, self.in_tree = tree_flatten(tuple(self.args[i] for i in self.dyn_positions))
        self.out_tree = None

    def full_args(self, flat_leaves) -> list:
        full = list(self.args)
        for pos, value in zip(self.dyn_positions, tree_unflatten(self.in_tree, flat_leaves)):
            full[pos] = value
        return full

    def dyn(self, flat_leaves) -> tuple:
        return tuple(tree_unflatten(self.in_tree, flat_leaves))

    def nondiff_args(self) -> list:
        return [self.args[i] for i in self.nondiff]

    def set_out_tree(self, tree, where: str) -> None:
        if self.out_tree is not None and self.out_tree != tree:
            raise TypeError(f"{where} must produce outputs with the same container (pytree) "
                            f"structure as the function's, {self.out_tree}, but got {tree}.")
        self.out_tree = tree


class custom_jvp:
    """A function with a custom JVP rule, defined with `defjvp` or `defjvps`.

    Args:
      fun: the function (its rule is attached with `defjvp` or `defjvps`).
      nondiff_argnums: arguments that are not differentiated; they are passed to
        the rule first, as Python values if they are not arrays.
      nondiff_argnames: the same, by parameter name.

    The rule `jvp(primals, tangents) -> (primal_out, tangent_out)` takes tuples
    of the function's arguments and tangents.

    >>> import numpy as np
    >>> from lamella.core import jvp
    >>> @custom_jvp
    ... def f(x):
    ...     return x
    >>> @f.defjvp
    ... def f_jvp(primals, tangents):
    ...     return primals[0], tangents[0] * 0 + 5.0
    >>> jvp(f, (np.float32(1.0),), (np.float32(1.0),))[1]
    np.float32(5.0)
    """

    def __init__(self, fun: Callable, nondiff_argnums: tuple[int, ...] = (),
                 nondiff_argnames: tuple[str, ...] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff_positions(fun, nondiff_argnums, nondiff_argnames)
        self.jvp: Callable | None = None
        self.symbolic_zeros = False

    def defjvp(self, jvp: Callable, symbolic_zeros: bool = False) -> Callable:
        """Sets the rule `jvp(*nondiff_args, primals, tangents) -> (primal_out, tangent_out)`."""
        self.jvp = jvp
        self.symbolic_zeros = symbolic_zeros
        return jvp

    def defjvps(self, *tangent_fns: Callable | None) -> None:
        """Sets one rule per argument: `fn(tangent, primal_out, *primals)`, summed."""
        if self.nondiff_argnums:
            raise TypeError("defjvps can't be used with nondiff_argnums; use defjvp.")

        def jvp(primals, tangents):
            primal_out = self(*primals)
            contributions = [fn(t, primal_out, *primals)
                             for fn, t in zip(tangent_fns, tangents) if fn is not None]
            if not contributions:
                return primal_out, _zeros_tree(primal_out)
            total = contributions[0]
            for c in contributions[1:]:
                total = _add_trees(total, c)
            return primal_out, total
        self.defjvp(jvp)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        name = fun_name(self.fun)
        if self.jvp is None:
            raise AttributeError(f"No JVP defined for custom_jvp function {name} using defjvp.")
        sig = _Signature(self.fun, self.nondiff_argnums, args, kwargs)

        def flat_fun(*leaves):
            flat_out, tree = flatten_outputs(self.fun(*sig.full_args(leaves)), name)
            sig.set_out_tree(tree, f"custom_jvp function {name}")
            return flat_out

        def flat_jvp(primals, tangents):
            if not self.symbolic_zeros:
                tangents = [instantiate_zeros(t) for t in tangents]
            out = self.jvp(*sig.nondiff_args(), sig.dyn(primals), sig.dyn(tangents))
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError("Custom JVP rule must produce a pair (list or tuple of length "
                                f"two) representing primal and tangent outputs, got {out!r}.")
            primal_flat, primal_tree = tree_flatten(out[0])
            tangent_flat, tangent_tree = tree_flatten(out[1], is_leaf=_is_zero)
            if primal_tree != tangent_tree:
                raise TypeError("Custom JVP rule must produce primal and tangent outputs with "
                                f"equal container (pytree) structures, but got {primal_tree} "
                                f"and {tangent_tree} respectively.")
            sig.set_out_tree(primal_tree, f"The custom JVP rule of {name}")
            return primal_flat, [_as_tangent(p, t) for p, t in zip(primal_flat, tangent_flat)]

        outs = custom_jvp_call_p.bind_with_fun(flat_fun, flat_jvp, sig.flat, self.symbolic_zeros)
        return tree_unflatten(sig.out_tree, outs)


class custom_vjp:
    """A function with custom reverse-mode rules, defined with `defvjp(fwd, bwd)`.

    `fwd` takes the function's arguments and returns `(output, residuals)`;
    `bwd(*nondiff_args, residuals, output_cotangent)` returns a tuple with one
    cotangent (or None for zero) per differentiable argument.

    Args:
      fun: the function (its rules are attached with `defvjp(fwd, bwd)`).
      nondiff_argnums: arguments that are not differentiated; they are passed to
        `bwd` first.
      nondiff_argnames: the same, by parameter name.

    With `defvjp(..., symbolic_zeros=True)`, `fwd` receives each argument leaf as a
    `CustomVJPPrimal(value, perturbed)` and `bwd` may see `SymbolicZero` cotangents.

    >>> import numpy as np
    >>> from lamella.core import grad
    >>> @custom_vjp
    ... def f(x):
    ...     return x
    >>> f.defvjp(lambda x: (x, None), lambda res, g: (g * 0 + 3.0,))
    >>> grad(f)(np.float32(1.0))
    np.float32(3.0)
    """

    def __init__(self, fun: Callable, nondiff_argnums: tuple[int, ...] = (),
                 nondiff_argnames: tuple[str, ...] = ()):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.nondiff_argnums = _nondiff_positions(fun, nondiff_argnums, nondiff_argnames)
        self.fwd: Callable | None = None
        self.bwd: Callable | None = None
        self.symbolic_zeros = False

    def defvjp(self, fwd: Callable, bwd: Callable, symbolic_zeros: bool = False,
               optimize_remat: bool = False) -> None:
        """Sets the forward and backward rules (`optimize_remat` is accepted and unused)."""
        self.fwd, self.bwd, self.symbolic_zeros = fwd, bwd, symbolic_zeros

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        name = fun_name(self.fun)
        if self.fwd is None:
            raise AttributeError(f"No VJP defined for custom_vjp function {name} using defvjp.")
        sig = _Signature(self.fun, self.nondiff_argnums, args, kwargs)
        res_tree: list = []

        def flat_fun(*leaves):
            flat_out, tree = flatten_outputs(self.fun(*sig.full_args(leaves)), name)
            sig.set_out_tree(tree, f"custom_vjp function {name}")
            return flat_out

        def flat_fwd(primals, nonzeros):
            if self.symbolic_zeros:
                primals = [CustomVJPPrimal(p, nz) for p, nz in zip(primals, nonzeros)]
            out = self.fwd(*sig.full_args(primals))
            if not (isinstance(out, (tuple, list)) and len(out) == 2):
                raise TypeError("Custom VJP fwd rule must produce a pair (list or tuple of "
                                "length two) representing primal outputs and residuals (values "
                                "stored from the forward pass for use on the backward pass), "
                                f"got {out!r}.")
            flat_out, tree = flatten_outputs(out[0], f"The fwd rule of {name}")
            sig.set_out_tree(tree, f"The custom VJP fwd rule of {name}")
            res_flat, tree = tree_flatten(out[1])
            res_tree[:] = [tree]
            return flat_out, res_flat

        def flat_bwd(res_flat, cts_flat):
            if not self.symbolic_zeros:
                cts_flat = [instantiate_zeros(c) for c in cts_flat]
            residuals = tree_unflatten(res_tree[0], res_flat)
            cts_in = self.bwd(*sig.nondiff_args(), residuals,
                              tree_unflatten(sig.out_tree, cts_flat))
            return _flatten_bwd_output(name, cts_in, sig, len(sig.dyn_positions))

        outs = custom_vjp_call_p.bind_with_fun(
            flat_fun, flat_fwd, flat_bwd, sig.flat, lambda: (sig.out_tree, res_tree[0]),
            self.symbolic_zeros)
        return tree_unflatten(sig.out_tree, outs)


def _flatten_bwd_output(name, cts_in, sig: _Signature, num_args: int) -> list:
    if not isinstance(cts_in, (tuple, list)) or len(cts_in) != num_args:
        raise TypeError(f"Custom VJP bwd rule of {name} must produce a tuple with one "
                        f"cotangent per differentiable argument ({num_args}), got {cts_in!r}.")
    flat = []
    primal_args = tree_unflatten(sig.in_tree, sig.flat)
    for i, (ct, primal) in enumerate(zip(cts_in, primal_args)):
        primal_leaves, primal_tree = tree_flatten(primal)
        if ct is None:
            flat += [None] * len(primal_leaves)
            continue
        ct_leaves, ct_tree = tree_flatten(ct, is_leaf=_is_zero)
        if ct_tree != primal_tree:
            raise TypeError(f"Custom VJP bwd rule of {name} must produce an output with the "
                            f"same container (pytree) structure as the args tuple of the "
                            f"primal function: argument {i} has structure {primal_tree}, but "
                            f"its cotangent has structure {ct_tree}.")
        for c, p in zip(ct_leaves, primal_leaves):
            if type(c) is not Zero and aval_of(c).shape != aval_of(p).shape:
                raise ValueError(f"Custom VJP bwd rule of {name} produced a cotangent of shape "
                                 f"{aval_of(c).shape} for argument {i} of shape "
                                 f"{aval_of(p).shape}.")
            flat.append(c)
    return flat


def _is_zero(x: Any) -> bool:
    return type(x) is Zero


def _as_tangent(primal: Any, tangent: Any) -> Any:
    if type(tangent) is Zero:
        return tangent
    if aval_of(tangent).dtype == dtypes.float0:
        return Zero.from_primal_value(primal)
    return tangent


def _zeros_tree(tree: Any) -> Any:
    leaves, treedef = tree_flatten(tree)
    return tree_unflatten(treedef, [zeros_like_aval(aval_of(x).to_tangent_aval())
                                    for x in leaves])


def _add_trees(a: Any, b: Any) -> Any:
    if tree_structure(a) != tree_structure(b):
        raise TypeError("defjvps rules must return tangents with the output's structure.")
    leaves_a, treedef = tree_flatten(a)
    return tree_unflatten(treedef, [add_tangents(x, y)
                                    for x, y in zip(leaves_a, tree_flatten(b)[0])])


# ---------------------------------------------------------------------------
# closure_convert and custom_gradient.


def closure_convert(fun: Callable, *example_args: Any) -> tuple[Callable, list[Any]]:
    """`fun` with the floating-point values it closes over made explicit arguments.

    Returns `(converted, consts)` where `converted(*args, *consts)` equals
    `fun(*args)`. A `custom_vjp` function must not close over values it should
    differentiate: closure conversion makes them arguments, so their gradients
    flow (the example arguments give the argument types).

    Args:
      fun: a function of arrays (or pytrees of arrays).
      *example_args: arguments of the types `fun` will be called with.

    Returns:
      `(converted, consts)`.

    >>> import numpy as np
    >>> from lamella.core.structural import reduce_sum
    >>> converted, consts = closure_convert(lambda x: reduce_sum(x, (0,)), np.ones(2))
    >>> converted(np.ones(2, np.float32), *consts)
    np.float32(2.0)
    """
    flat_args, in_tree = tree_flatten(example_args)
    out_trees: list = []

    def flat_fun(*leaves):
        outs, tree = flatten_outputs(fun(*tree_unflatten(in_tree, leaves)), fun_name(fun))
        out_trees.append(tree)
        return outs

    jaxpr, consts = trace_to_jaxpr(flat_fun, [aval_of(x) for x in flat_args])
    hoisted = [dtypes.is_inexact(aval_of(c).dtype) for c in consts]
    kept = [c for c, h in zip(consts, hoisted) if not h]
    out_tree = out_trees[0]
    n_args = len(flat_args)

    def converted(*args_and_consts: Any) -> Any:
        args, hoisted_consts = args_and_consts[:n_args], list(args_and_consts[n_args:])
        leaves, tree = tree_flatten(tuple(args))
        if tree != in_tree:
            raise TypeError(f"closure_convert: the converted {fun_name(fun)} expects arguments "
                            f"with structure {in_tree}, got {tree}")
        it_hoisted, it_kept = iter(hoisted_consts), iter(kept)
        all_consts = [next(it_hoisted) if h else next(it_kept) for h in hoisted]
        return tree_unflatten(out_tree, eval_jaxpr(jaxpr, all_consts, *leaves))

    converted.__name__ = fun_name(fun)
    return converted, [c for c, h in zip(consts, hoisted) if h]


def custom_gradient(fun: Callable) -> Callable:
    """A function with a gradient written alongside it.

    `fun(*args)` returns `(output, vjp)` where `vjp(output_cotangent)` returns the
    cotangents of the arguments (a tuple, or one value for one argument). Values
    `vjp` closes over are saved for the backward pass.

    Args:
      fun: the function returning its output and its VJP function.

    Returns:
      The function computing only the output, differentiable by `vjp`.

    >>> import numpy as np
    >>> from lamella.core import grad
    >>> from lamella.core.structural import add_any_p
    >>> twice_the_gradient = custom_gradient(lambda x: (x, lambda g: add_any_p.bind(g, g)))
    >>> grad(twice_the_gradient)(np.float32(1.0))
    np.float32(2.0)
    """
    @custom_vjp
    def wrapped(*args):
        return fun(*args)[0]

    def fwd(*args):
        out, vjp_rule = fun(*args)
        rule, saved = closure_convert(vjp_rule, out)
        return out, (Partial(rule), saved)

    def bwd(residuals, cotangent):
        rule, saved = residuals
        cts = rule(cotangent, *saved)
        return cts if isinstance(cts, tuple) else (cts,)

    wrapped.defvjp(fwd, bwd)
    functools.update_wrapper(wrapped, fun)
    return wrapped
