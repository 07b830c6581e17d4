"""The public autodiff API: jvp, linearize, vjp, grad, value_and_grad, jacfwd, jacrev,
hessian (the interpreters they drive are in `ad.py`).

Reverse mode is linearize-then-transpose: `vjp` runs the function once under
JVP on a partial-evaluation trace, so the primal computation happens now and
the tangent computation is recorded as a linear jaxpr over residuals; the
returned function transposes that jaxpr. Nothing is recomputed unless
`checkpoint` asks for it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lamella.core import dtypes
from lamella.core.ad import backward_pass, jvp_flat
from lamella.core.api_util import flatten_outputs, fun_name, fun_source
from lamella.core.dispatch import current_executor
from lamella.core.jaxpr import DebugInfo, Jaxpr, eval_jaxpr
from lamella.core.jit import jit
from lamella.core.partial_eval import PartialEvalTrace
from lamella.core.rules import UndefinedPrimal, Zero, instantiate_zeros, scalar_like
from lamella.core.staging import StagingTrace
from lamella.core.structural import reshape, transpose
from lamella.core.trace import EvalTrace, Tracer, aval_of, current_trace, set_current_trace
from lamella.core.tree_util import Partial, PyTreeDef, tree_flatten, tree_unflatten
from lamella.core.vmap_api import vmap


def _flat_fun(fun: Callable, in_tree: PyTreeDef, has_aux: bool, what: str):
    """`fun` as a function of flat leaves returning flat leaves; records output trees."""
    trees: dict[str, PyTreeDef] = {}

    def flat(*leaves):
        out = fun(*tree_unflatten(in_tree, leaves))
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError(f"{what} with has_aux=True requires the function to return a "
                                f"pair (output, auxiliary data), got {type(out).__name__}.")
            out, aux = out
            aux_flat, trees["aux"] = tree_flatten(aux)
        out_flat, trees["out"] = flatten_outputs(out, what)
        return [*out_flat, *aux_flat] if has_aux else out_flat
    return flat, trees


def _check_args_are_tuple(what: str, name: str, value: Any) -> None:
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{name} arguments to {what} must be a tuple or a list, found "
                        f"{type(value).__name__}.")


def jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any],
        has_aux: bool = False) -> tuple[Any, ...]:
    """Forward-mode derivative: `(fun(*primals), d fun(primals) . tangents)`.

    Args:
      fun: a function of arrays (or pytrees of arrays) returning arrays.
      primals: a tuple or list of `fun`'s arguments.
      tangents: a tuple or list like `primals`: the direction to differentiate in
        (float0 for integer primals).
      has_aux: `fun` returns `(output, aux)`; aux is returned undifferentiated.

    Returns:
      `(primals_out, tangents_out)`, or `(primals_out, tangents_out, aux)`.

    >>> import numpy as np
    >>> from lamella.core.structural import reduce_sum
    >>> jvp(lambda x: reduce_sum(x, (0,)), (np.ones(3, np.float32),),
    ...     (np.arange(3, dtype=np.float32),))
    (np.float32(3.0), np.float32(3.0))
    """
    _check_args_are_tuple("jvp", "primal", primals)
    _check_args_are_tuple("jvp", "tangent", tangents)
    flat_primals, in_tree = tree_flatten(tuple(primals))
    flat_tangents, tangent_tree = tree_flatten(tuple(tangents))
    if in_tree != tangent_tree:
        raise TypeError("primal and tangent arguments to jvp must have the same tree structure; "
                        f"primals have tree structure {in_tree} whereas tangents have tree "
                        f"structure {tangent_tree}.")
    tangents_in = [_check_tangent_input(p, t) for p, t in zip(flat_primals, flat_tangents)]
    flat, trees = _flat_fun(fun, in_tree, has_aux, "jvp")
    outs, tangent_outs = jvp_flat(flat, flat_primals, tangents_in, current_trace(),
                                  f"jvp of {fun_name(fun)}")
    n = trees["out"].num_leaves
    primal_out = tree_unflatten(trees["out"], outs[:n])
    tangent_out = tree_unflatten(trees["out"], [instantiate_zeros(t) for t in tangent_outs[:n]])
    if has_aux:
        return primal_out, tangent_out, tree_unflatten(trees["aux"], outs[n:])
    return primal_out, tangent_out


def _check_tangent_input(primal: Any, tangent: Any) -> Any:
    p, t = aval_of(primal), aval_of(tangent)
    expected = dtypes.tangent_dtype(p.dtype)
    if t.dtype != expected and not (expected != dtypes.float0 and dtypes.is_inexact(t.dtype)):
        raise TypeError(
            "primal and tangent arguments to jvp do not match; dtypes must be equal, or in case "
            f"of int/bool primal dtype the tangent dtype must be float0. Got primal dtype "
            f"{p.dtype.name} and so expected tangent dtype {dtypes.short_name(expected)}, "
            f"but got tangent dtype {dtypes.short_name(t.dtype)} instead.")
    if p.shape != t.shape:
        raise ValueError("jvp called with different primal and tangent shapes; got primal shape "
                         f"{p.shape} and tangent shape {t.shape}.")
    return Zero(t) if t.dtype == dtypes.float0 else tangent


class _Linearized:
    """What linearize records: the linear jaxpr, its residuals, and trees."""

    def __init__(self, fun, primals, has_aux, what):
        flat_primals, self.in_tree = tree_flatten(tuple(primals))
        flat, trees = _flat_fun(fun, self.in_tree, has_aux, what)
        name = fun_name(fun)
        tangent_trace = StagingTrace(DebugInfo(what, name, fun_source(fun), None))
        trace = PartialEvalTrace(current_trace(), tangent_trace)
        self.in_avals = [aval_of(p) for p in flat_primals]
        tangent_args = [tangent_trace.new_arg(a.to_tangent_aval()) for a in self.in_avals]
        tangents = [Zero(t.aval) if t.aval.dtype == dtypes.float0 else t for t in tangent_args]
        outs, tangent_outs = jvp_flat(flat, flat_primals, tangents, trace, f"{what} of {name}")
        trace.invalidate()
        self.out_tree = trees["out"]
        n = self.out_tree.num_leaves
        self.primal_outs = outs[:n]
        self.aux = tree_unflatten(trees["aux"], outs[n:]) if has_aux else None
        with set_current_trace(tangent_trace):
            tangent_outs = [instantiate_zeros(t) for t in tangent_outs[:n]]
        self.jaxpr, self.residuals = tangent_trace.to_jaxpr(tangent_outs)
        self.out_avals = [aval_of(o) for o in self.primal_outs]


def linearize(fun: Callable, *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """Returns `fun(*primals)` and its JVP as a function of the tangents alone.

    The primal computation runs now, once; the returned function evaluates a
    linear jaxpr over saved residuals.

    Args:
      fun: a function of arrays (or pytrees of arrays) returning arrays.
      *primals: the point to linearize at.
      has_aux: `fun` returns `(output, aux)`.

    Returns:
      `(fun(*primals), f_jvp)` (plus `aux`), where `f_jvp(*tangents)` gives the
      output tangents.

    >>> import numpy as np
    >>> from lamella.core.structural import reduce_sum
    >>> y, f_jvp = linearize(lambda x: reduce_sum(x, (0,)), np.ones(3, np.float32))
    >>> f_jvp(np.arange(3, dtype=np.float32))
    np.float32(3.0)
    """
    lin = _Linearized(fun, primals, has_aux, "linearize")
    f_jvp = Partial(_LinearFunction(lin.jaxpr, lin.in_tree, lin.out_tree, lin.in_avals),
                    lin.residuals)
    primal_out = tree_unflatten(lin.out_tree, lin.primal_outs)
    return (primal_out, f_jvp, lin.aux) if has_aux else (primal_out, f_jvp)


class _LinearFunction:
    """`linearize`'s JVP as the static part of a `Partial` whose children are the
    residuals: passing it to a jitted function traces again only for new residual types."""

    __slots__ = ("jaxpr", "in_tree", "out_tree", "in_avals")

    def __init__(self, jaxpr: Jaxpr, in_tree: PyTreeDef, out_tree: PyTreeDef, in_avals):
        self.jaxpr, self.in_tree, self.out_tree, self.in_avals = jaxpr, in_tree, out_tree, in_avals

    def __call__(self, residuals: Sequence[Any], *tangents: Any) -> Any:
        flat, tree = tree_flatten(tuple(tangents))
        if tree != self.in_tree:
            raise TypeError(f"The linearized function expects tangents with structure "
                            f"{self.in_tree}, got {tree}.")
        for t, a in zip(flat, self.in_avals):
            if aval_of(t).shape != a.shape:
                raise ValueError(f"The linearized function expects a tangent of shape "
                                 f"{a.shape}, got {aval_of(t).shape}.")
        return tree_unflatten(self.out_tree, eval_jaxpr(self.jaxpr, residuals, *flat))


def _no_reduce_axes(what: str, reduce_axes: Sequence[Any]) -> None:
    if reduce_axes:
        raise NotImplementedError(f"The reduce_axes argument to {what} was removed from JAX; "
                                  "sum the gradients over named axes with psum instead.")


def vjp(fun: Callable, *primals: Any, has_aux: bool = False,
        reduce_axes: Sequence[Any] = ()) -> tuple[Any, ...]:
    """Reverse-mode derivative: `(fun(*primals), vjp_fun)` with
    `vjp_fun(cotangent) -> tuple of cotangents, one per primal`.

    Args:
      fun: a function of arrays (or pytrees of arrays) returning arrays.
      *primals: the point at which to differentiate.
      has_aux: `fun` returns `(output, aux)`; aux is returned undifferentiated.

    Returns:
      `(fun(*primals), f_vjp)` (plus `aux`); `f_vjp(cotangent)` takes a cotangent
      shaped like the output and returns a tuple with one cotangent per primal.

    >>> import numpy as np
    >>> from lamella.core.structural import reduce_sum
    >>> y, f_vjp = vjp(lambda x: reduce_sum(x, (0,)), np.ones(3, np.float32))
    >>> f_vjp(np.float32(2.0))
    (array([2., 2., 2.], dtype=float32),)
    """
    _no_reduce_axes("vjp", reduce_axes)
    lin = _Linearized(fun, primals, has_aux, "vjp")
    f_vjp = Partial(_Pullback(lin.jaxpr, lin.in_tree, lin.out_tree, lin.out_avals),
                    lin.residuals)
    primal_out = tree_unflatten(lin.out_tree, lin.primal_outs)
    return (primal_out, f_vjp, lin.aux) if has_aux else (primal_out, f_vjp)


class _Pullback:
    """`vjp`'s backward function as the static part of a `Partial` whose children are the
    residuals (see `_LinearFunction`); `fwd_and_bwd` relies on it."""

    __slots__ = ("jaxpr", "in_tree", "out_tree", "out_avals")

    def __init__(self, jaxpr: Jaxpr, in_tree: PyTreeDef, out_tree: PyTreeDef, out_avals):
        self.jaxpr, self.in_tree, self.out_tree, self.out_avals = (jaxpr, in_tree, out_tree,
                                                                   out_avals)

    def __call__(self, residuals: Sequence[Any], cotangent: Any) -> Any:
        return _pullback(self.jaxpr, self.in_tree, self.out_tree, self.out_avals, residuals,
                         cotangent)


def _pullback(jaxpr: Jaxpr, in_tree, out_tree, out_avals, residuals, cotangent):
    flat, tree = tree_flatten(cotangent)
    if tree != out_tree:
        raise TypeError(f"Tree structure of cotangent input {tree} does not match structure of "
                        f"primal output {out_tree}.")
    cts = []
    for ct, out in zip(flat, out_avals):
        ct_aval = aval_of(ct)
        if ct_aval.shape != out.shape:
            raise ValueError(f"Shape of cotangent input to vjp pullback function "
                             f"{ct_aval.shape} must be the same as the shape of the "
                             f"corresponding primal output {out.shape}.")
        expected = dtypes.tangent_dtype(out.dtype)
        if ct_aval.dtype != expected and ct_aval.dtype != dtypes.float0:
            raise ValueError(f"Type of cotangent input to vjp pullback function "
                             f"({dtypes.short_name(ct_aval.dtype)}) is not the expected tangent "
                             f"type ({dtypes.short_name(expected)}) of corresponding primal "
                             f"output with dtype {out.dtype.name}.")
        cts.append(Zero(ct_aval) if ct_aval.dtype == dtypes.float0 else ct)
    undefined = [UndefinedPrimal(v.aval) for v in jaxpr.invars]
    cts_in = backward_pass(jaxpr, residuals, undefined, cts)
    return tree_unflatten(in_tree, [as_result(instantiate_zeros(ct)) for ct in cts_in])


def as_result(x: Any) -> Any:
    """A value a transformation returns to the user: the executor's array type (a Python
    number or NumPy value made by a rule is put on the device; tracers stay)."""
    if isinstance(x, Tracer) or not (isinstance(x, (np.ndarray, np.generic))
                                     or dtypes.is_python_scalar(x)):
        return x
    if isinstance(current_trace(), EvalTrace):
        return current_executor().device_put(x)
    return x


# ---------------------------------------------------------------------------
# grad and friends.


def _argnums_tuple(argnums: int | Sequence[int]) -> tuple[int, ...]:
    return (argnums,) if isinstance(argnums, int) else tuple(argnums)


def _dyn_args(what: str, args: tuple, argnums: tuple[int, ...]):
    if any(i >= len(args) or i < -len(args) for i in argnums):
        needed = max(i + 1 if i >= 0 else -i for i in argnums)
        raise TypeError(f"differentiating with respect to argnums={argnums} requires at least "
                        f"{needed} positional arguments to be passed by the caller, "
                        f"but got only {len(args)} positional arguments.")
    argnums = tuple(i % len(args) for i in argnums)

    def with_dyn(*dyn):
        full = list(args)
        for i, value in zip(argnums, dyn):
            full[i] = value
        return full
    return tuple(args[i] for i in argnums), with_dyn


def _check_input_dtypes(what: str, holomorphic: bool, allow_int: bool, dyn: tuple) -> None:
    for leaf in tree_flatten(dyn)[0]:
        dtype = aval_of(leaf).dtype
        if holomorphic:
            if not dtypes.is_complex(dtype):
                raise TypeError(f"{what} with holomorphic=True requires inputs with complex "
                                f"dtype, but got {dtype.name}.")
        elif not dtypes.is_inexact(dtype) and not allow_int:
            raise TypeError(f"{what} requires real- or complex-valued inputs (input dtype that "
                            f"is a sub-dtype of np.inexact), but got {dtype.name}. If you want "
                            "to use Boolean- or integer-valued inputs, use vjp or set "
                            "allow_int to True.")


def value_and_grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
                   holomorphic: bool = False, allow_int: bool = False,
                   reduce_axes: Sequence[Any] = ()) -> Callable:
    """A function returning `(fun(*args), gradient of fun w.r.t. args[argnums])`.

    Args:
      fun: a function returning a real scalar (complex with `holomorphic=True`).
      argnums: which positional argument(s) to differentiate with respect to.
      has_aux: `fun` returns `(value, aux)`.
      holomorphic: differentiate a complex-to-complex holomorphic function.
      allow_int: allow integer arguments (their gradients are float0 zeros).

    Returns:
      A function returning `(value, gradient)` (`((value, aux), gradient)` with
      `has_aux`); the gradient has the structure of `args[argnums]`.

    >>> import numpy as np
    >>> from lamella.core.structural import reduce_sum
    >>> value_and_grad(lambda x: reduce_sum(x, (0,)))(np.ones(2, np.float32))
    (np.float32(2.0), array([1., 1.], dtype=float32))
    """
    _no_reduce_axes("value_and_grad", reduce_axes)
    nums = _argnums_tuple(argnums)
    name = fun_name(fun)

    @functools.wraps(fun)
    def value_and_grad_f(*args, **kwargs):
        dyn, with_dyn = _dyn_args("grad", args, nums)
        _check_input_dtypes("grad", holomorphic, allow_int, dyn)
        # wraps: errors and descriptions name `fun`, not this lambda.
        with_args = functools.wraps(fun)(lambda *d: fun(*with_dyn(*d), **kwargs))
        lin = _Linearized(with_args, dyn, has_aux, "grad")
        if lin.out_tree.num_leaves != 1 or lin.out_tree != tree_flatten(0.0)[1]:
            raise TypeError(f"Gradient only defined for scalar-output functions: {name} "
                            f"returned a value with structure {lin.out_tree}.")
        out_aval = lin.out_avals[0]
        if out_aval.shape != ():
            raise TypeError("Gradient only defined for scalar-output functions. Output had "
                            f"shape: {out_aval.shape}.")
        if holomorphic and not dtypes.is_complex(out_aval.dtype):
            raise TypeError("grad with holomorphic=True requires outputs with complex dtype, "
                            f"but got {out_aval.dtype.name}.")
        if not holomorphic and not dtypes.is_float(out_aval.dtype):
            raise TypeError("grad requires real-valued outputs (output dtype that is a "
                            f"sub-dtype of np.floating), but got {out_aval.dtype.name}. For "
                            "holomorphic differentiation, pass holomorphic=True. For "
                            "differentiation of non-holomorphic functions involving complex "
                            "outputs, use vjp directly.")
        grads = _pullback(lin.jaxpr, lin.in_tree, lin.out_tree, lin.out_avals, lin.residuals,
                          scalar_like(1, out_aval))
        grads = grads[0] if isinstance(argnums, int) else grads
        value = lin.primal_outs[0]
        return ((value, lin.aux), grads) if has_aux else (value, grads)

    return value_and_grad_f


def grad(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
         holomorphic: bool = False, allow_int: bool = False,
         reduce_axes: Sequence[Any] = ()) -> Callable:
    """The gradient of a scalar function with respect to `args[argnums]`.

    Args:
      fun: a function returning a real scalar (complex with `holomorphic=True`).
      argnums: which positional argument(s) to differentiate with respect to: an
        int gives one gradient, a tuple a tuple of gradients.
      has_aux: `fun` returns `(value, aux)`; the result is then `(gradient, aux)`.
      holomorphic: differentiate a complex-to-complex holomorphic function.
      allow_int: allow integer arguments (their gradients are float0 zeros).

    Returns:
      A function with `fun`'s arguments returning the gradient, shaped like
      `args[argnums]`.

    >>> import numpy as np
    >>> from lamella.core.structural import reduce_sum
    >>> grad(lambda x: reduce_sum(x, (0,)))(np.ones(2, np.float32))
    array([1., 1.], dtype=float32)
    """
    _no_reduce_axes("grad", reduce_axes)
    value_and_grad_f = value_and_grad(fun, argnums, has_aux, holomorphic, allow_int)

    @functools.wraps(fun)
    def grad_f(*args, **kwargs):
        value, g = value_and_grad_f(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return grad_f


def fwd_and_bwd(fun: Callable, argnums: int | Sequence[int], has_aux: bool = False,
                jitted: bool = True) -> tuple[Callable, Callable]:
    """The forward and backward passes of `fun` as two functions, so a loop can reuse a
    compiled backward pass (`jit(f_vjp)` would trace anew for every new `f_vjp`).

    Args:
      fun: the function to differentiate.
      argnums: which positional argument(s) to differentiate with respect to.
      has_aux: `fun` returns `(output, aux)`.
      jitted: return the two functions jitted.

    Returns:
      `(fwd, bwd)`: `fwd(*args)` is `(fun(*args), residuals)` (plus `aux`), and
      `bwd(residuals, cotangent)` the cotangents of `args[argnums]` (a tuple when
      `argnums` is a sequence).

    >>> import numpy as np
    >>> from lamella.core.structural import reduce_sum
    >>> fwd, bwd = fwd_and_bwd(lambda x: reduce_sum(x, (0,)), argnums=0)
    >>> y, residuals = fwd(np.ones(2, np.float32))
    >>> np.asarray(bwd(residuals, np.float32(2)))
    array([2., 2.], dtype=float32)
    """
    nums = _argnums_tuple(argnums)

    def fwd(*args, **kwargs):
        dyn, with_dyn = _dyn_args("fwd_and_bwd", args, nums)
        return vjp(functools.wraps(fun)(lambda *d: fun(*with_dyn(*d), **kwargs)), *dyn,
                   has_aux=has_aux)

    def bwd(residuals, cotangent):
        cts = residuals(cotangent)
        return cts[0] if isinstance(argnums, int) else cts

    if jitted:
        return jit(fwd), jit(bwd)
    return fwd, bwd


def _basis(aval, index: int, flat_avals, dtype) -> np.ndarray:
    """Rows of the identity for input leaf `index`, shaped (size, *shape)."""
    return np.eye(aval.size, dtype=dtype).reshape((aval.size, *aval.shape))


def _to_jacobian_layout(x, batch_first: bool, lead_shape, tail_shape):
    """Batch-of-tangents (size, *lead) -> (*lead, *tail): the Jacobian block."""
    rank = len(aval_of(x).shape)
    if batch_first and rank > 1:
        x = transpose(x, (*range(1, rank), 0))
    shape = (*lead_shape, *tail_shape)
    return reshape(x, shape) if aval_of(x).shape != shape else x


def jacfwd(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False) -> Callable:
    """The Jacobian by forward mode: one JVP per input element, vectorized with vmap.

    Output layout: for each output leaf, an array of shape `out.shape + in.shape`.

    Args:
      fun: a function of arrays returning arrays (or pytrees of them).
      argnums: which positional argument(s) to differentiate with respect to.
      has_aux: `fun` returns `(output, aux)`.
      holomorphic: differentiate a holomorphic complex function.

    Returns:
      A function returning the Jacobian: per output leaf, `out.shape + in.shape`.

    >>> import numpy as np
    >>> from lamella.core.structural import reduce_sum
    >>> jacfwd(lambda x: reduce_sum(x, (0,)))(np.ones(2, np.float32))
    array([1., 1.], dtype=float32)
    """
    nums = _argnums_tuple(argnums)

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        dyn, with_dyn = _dyn_args("jacfwd", args, nums)
        _check_input_dtypes("jacfwd", holomorphic, True, dyn)
        flat_in, in_tree = tree_flatten(dyn)
        flat, trees = _flat_fun(lambda *d: fun(*with_dyn(*d), **kwargs), in_tree, has_aux,
                                "jacfwd")
        in_avals = [aval_of(x) for x in flat_in]
        columns = []  # columns[i][j]: d out_j / d in_i, shaped (size_i, *out_j.shape)
        outs = None
        for i, aval in enumerate(in_avals):
            def pushforward(t, i=i):
                tangents = [t if k == i else Zero(a.to_tangent_aval())
                            for k, a in enumerate(in_avals)]
                primal_outs, tangent_outs = jvp_flat(flat, flat_in, tangents, current_trace())
                return primal_outs, [instantiate_zeros(t) for t in tangent_outs]
            basis = _basis(aval, i, in_avals, aval.dtype)
            outs, tangents = vmap(pushforward, out_axes=(None, 0))(basis)
            columns.append(tangents)
        if outs is None:
            outs = flat(*flat_in)
        n = trees["out"].num_leaves
        out_avals = [aval_of(o) for o in outs[:n]]
        blocks = [[_to_jacobian_layout(columns[i][j], True, out_avals[j].shape, in_avals[i].shape)
                   for i in range(len(in_avals))] for j in range(n)]
        jac = _assemble(blocks, trees["out"], in_tree, isinstance(argnums, int))
        return (jac, tree_unflatten(trees["aux"], outs[n:])) if has_aux else jac

    return jacfun


def jacrev(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
           holomorphic: bool = False, allow_int: bool = False) -> Callable:
    """The Jacobian by reverse mode: one VJP per output element, vectorized with vmap.

    Args:
      fun: a function of arrays returning arrays (or pytrees of them).
      argnums: which positional argument(s) to differentiate with respect to.
      has_aux: `fun` returns `(output, aux)`.
      holomorphic: differentiate a holomorphic complex function.
      allow_int: allow integer arguments.

    Returns:
      A function returning the Jacobian: per output leaf, `out.shape + in.shape`.

    >>> import numpy as np
    >>> from lamella.core.structural import reduce_sum
    >>> jacrev(lambda x: reduce_sum(x, (0,)))(np.ones(2, np.float32))
    array([1., 1.], dtype=float32)
    """
    nums = _argnums_tuple(argnums)

    @functools.wraps(fun)
    def jacfun(*args, **kwargs):
        dyn, with_dyn = _dyn_args("jacrev", args, nums)
        _check_input_dtypes("jacrev", holomorphic, allow_int, dyn)
        # wraps: errors and descriptions name `fun`, not this lambda.
        with_args = functools.wraps(fun)(lambda *d: fun(*with_dyn(*d), **kwargs))
        lin = _Linearized(with_args, dyn, has_aux, "jacrev")
        in_avals = lin.in_avals
        rows = []  # rows[j][i]: d out_j / d in_i, shaped (size_j, *in_i.shape)
        for j, out_aval in enumerate(lin.out_avals):
            def pullback(ct, j=j):
                cts = [ct if k == j else Zero(a.to_tangent_aval())
                       for k, a in enumerate(lin.out_avals)]
                undefined = [UndefinedPrimal(v.aval) for v in lin.jaxpr.invars]
                cts_in = backward_pass(lin.jaxpr, lin.residuals, undefined, cts)
                return [instantiate_zeros(c) for c in cts_in]
            rows.append(vmap(pullback)(_basis(out_aval, j, lin.out_avals, out_aval.dtype)))
        blocks = [[_to_jacobian_layout(rows[j][i], False, (lin.out_avals[j].size,),
                                       in_avals[i].shape)
                   for i in range(len(in_avals))] for j in range(len(lin.out_avals))]
        blocks = [[reshape(b, (*lin.out_avals[j].shape, *in_avals[i].shape))
                   if aval_of(b).shape != (*lin.out_avals[j].shape, *in_avals[i].shape) else b
                   for i, b in enumerate(row)] for j, row in enumerate(blocks)]
        jac = _assemble(blocks, lin.out_tree, lin.in_tree, isinstance(argnums, int))
        return (jac, lin.aux) if has_aux else jac

    return jacfun


def _assemble(blocks, out_tree: PyTreeDef, in_tree: PyTreeDef, single_arg: bool):
    """Nests Jacobian blocks: the output tree outside, the argument tree inside."""
    per_output = []
    for row in blocks:
        inner = tree_unflatten(in_tree, row)
        per_output.append(inner[0] if single_arg else inner)
    return tree_unflatten(out_tree, per_output)


def hessian(fun: Callable, argnums: int | Sequence[int] = 0, has_aux: bool = False,
            holomorphic: bool = False) -> Callable:
    """The Hessian, as `jacfwd(jacrev(fun))`.

    Args:
      fun: a function returning a scalar.
      argnums: which positional argument(s) to differentiate with respect to.
      has_aux: `fun` returns `(value, aux)`.
      holomorphic: differentiate a holomorphic complex function.

    Returns:
      A function returning the Hessian, shaped `in.shape + in.shape`.

    >>> import numpy as np
    >>> from lamella.core.structural import reduce_sum
    >>> hessian(lambda x: reduce_sum(x, (0,)))(np.ones(2, np.float32))
    array([[0., 0.],
           [0., 0.]], dtype=float32)
    """
    return jacfwd(jacrev(fun, argnums, has_aux=has_aux, holomorphic=holomorphic), argnums,
                  has_aux=has_aux, holomorphic=holomorphic)


jacobian = jacrev
"""`jax.jacobian`: the Jacobian by reverse mode, `jacrev` itself."""


def linear_transpose(fun: Callable, *primals: Any, reduce_axes: Sequence[Any] = ()) -> Callable:
    """The transpose of a linear function, as a function of output cotangents.

    `primals` (arrays or ShapeDtypeStructs) give the input types; `fun` must be
    linear in them. The result maps a cotangent shaped like `fun`'s output to
    a tuple with one cotangent per primal.

    Args:
      fun: a linear function of arrays (or pytrees of arrays).
      *primals: example inputs; only their shapes and dtypes are used.

    Returns:
      `transpose_fun(cotangent) -> tuple of input cotangents`.

    >>> import numpy as np
    >>> from lamella.core.structural import reduce_sum
    >>> transpose_fun = linear_transpose(lambda x: reduce_sum(x, (0,)), np.ones(3, np.float32))
    >>> transpose_fun(np.float32(2.0))
    (array([2., 2., 2.], dtype=float32),)
    """
    _no_reduce_axes("linear_transpose", reduce_axes)
    flat_primals, in_tree = tree_flatten(tuple(primals))
    in_avals = [aval_of(p) for p in flat_primals]
    for aval in in_avals:
        if not dtypes.is_inexact(aval.dtype):
            raise TypeError(f"linear_transpose only supports float and complex inputs, got "
                            f"{aval.str_short()}")
    flat, trees = _flat_fun(fun, in_tree, False, "linear_transpose")
    staging = StagingTrace(DebugInfo("linear_transpose", fun_name(fun), fun_source(fun), None))
    args = [staging.new_arg(a) for a in in_avals]
    with set_current_trace(staging):
        outs = flat(*args)
    jaxpr, consts = staging.to_jaxpr(outs)
    out_tree = trees["out"]
    out_avals = [v.aval for v in jaxpr.outvars]

    def transpose_fun(out_cotangent: Any) -> tuple[Any, ...]:
        cts, tree = tree_flatten(out_cotangent)
        got = [aval_of(c) for c in cts]
        if tree != out_tree or any(g.shape != a.shape or g.dtype != a.dtype
                                   for g, a in zip(got, out_avals)):
            raise TypeError("cotangent type does not match function output, expected "
                            f"{out_tree.unflatten([a.str_short() for a in out_avals])} but got "
                            f"{tree.unflatten([g.str_short() for g in got])}")
        undefined = [UndefinedPrimal(a) for a in in_avals]
        cts_in = backward_pass(jaxpr, consts, undefined, cts)
        return tree_unflatten(in_tree, [as_result(instantiate_zeros(ct)) for ct in cts_in])

    return transpose_fun
