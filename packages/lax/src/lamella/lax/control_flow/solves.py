"""`custom_linear_solve` and `custom_root`: solvers differentiated implicitly.

A solver (conjugate gradients, Newton's method) is usually an iteration whose
derivative is both expensive and wrong to differentiate step by step. Both
operators here run the user's solver for the value and differentiate the
equation it solves instead:

- `custom_linear_solve(matvec, b, solve)`: x with `matvec(x) = b`. From
  `A x = b`, `dx = A^-1 (db - dA x)`: the tangent is one more solve. The
  primitive `linear_solve_p` is linear in `b`; its transpose solves with the
  transposed operator (`transpose_solve`, or `solve` when symmetric).
- `custom_root(f, guess, solve, tangent_solve)`: x with `f(x) = 0`. By the
  implicit function theorem `dx = -(df/dx)^-1 (df/dθ dθ)` for the values θ that
  `f` closes over; the inverse is a `custom_linear_solve` of the linearized `f`
  with `tangent_solve`, so reverse mode works too.

`linear_solve_p` carries four closed jaxprs (`matvec`, `vecmat`, `solve`,
`transpose_solve`, the last two possibly None) whose consts come first among its
operands, then `b`. It lowers by inlining the `solve` jaxpr.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

from lamella.core import ShapedArray, ad, batching, custom_derivatives
from lamella.core.autodiff_api import linearize
from lamella.core.jaxpr import jaxpr_as_fun
from lamella.core.trace import current_trace
from lamella.core.tree_util import (
    PyTreeDef,
    tree_flatten,
    tree_leaves,
    tree_structure,
    tree_unflatten,
    treedef_children,
)
from lamella.core.util import split_list
from lamella.lax.arithmetic import neg
from lamella.lax.control_flow.common import (
    TracedFunction,
    avals_of,
    describe_types,
    same_types,
    trace_fun,
)
from lamella.lax.lowering import closed_consts, lower_jaxpr, register_lowering
from lamella.lax.standard import standard_primitive

__all__ = ["custom_linear_solve", "custom_root", "linear_solve_p"]


class _LinearSolveTuple(NamedTuple):
    """One entry per function of a linear solve (jaxprs, const counts, consts ...);
    JAX's name, which printed jaxprs show."""

    matvec: Any
    vecmat: Any
    solve: Any
    transpose_solve: Any

    def transpose(self) -> _LinearSolveTuple:
        """The parts of the transposed problem: A^T takes A's place, and its solver."""
        return _LinearSolveTuple(self.vecmat, self.matvec, self.transpose_solve, self.solve)


def _split_operands(args, const_lengths: _LinearSolveTuple) -> tuple[_LinearSolveTuple, list]:
    *consts, b = split_list(list(args), list(const_lengths))
    return _LinearSolveTuple(*consts), b


def _flat(parts: _LinearSolveTuple) -> list:
    return [x for part in parts for x in part]


# ---------------------------------------------------------------------------
# custom_linear_solve.


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable,
                        transpose_solve: Callable | None = None, symmetric: bool = False,
                        has_aux: bool = False) -> Any:
    """The solution x of `matvec(x) = b` computed by `solve(matvec, b)`, with
    derivatives by implicit differentiation rather than through `solve`.

    `matvec` must be linear, and `solve(matvec, b)` return x with b's structure
    and types (and auxiliary data, with `has_aux=True`: then the result is the
    pair `(x, aux)`). Derivatives with respect to b and to the values `matvec`
    closes over are exact whatever `solve` does inside. Reverse mode needs
    `transpose_solve(vecmat, b)`, solving with the transposed operator; with
    `symmetric=True` (matvec is its own transpose) `solve` serves by default.

    Args:
      matvec: the linear operator, `x -> A x` on pytrees like b.
      b: the right-hand side, a pytree of arrays.
      solve: `(matvec, b) -> x` (and aux with `has_aux`), any algorithm.
      transpose_solve: `(vecmat, b) -> x` solving with the transposed operator,
        needed for reverse mode unless `symmetric`.
      symmetric: `matvec` is its own transpose.
      has_aux: `solve` also returns auxiliary data.

    Returns:
      x (or `(x, aux)`), differentiable with respect to b and to what `matvec`
      closes over.

    >>> import numpy as np
    >>> import lamella.lax as lax
    >>> matvec = lambda x: lax.mul(np.float32(4.0), x)
    >>> solve = lambda mv, b: lax.div(b, mv(np.float32(1.0)))
    >>> custom_linear_solve(matvec, np.float32(2.0), solve, symmetric=True)
    Array(0.5, dtype=float32)
    """
    b_flat, args_tree = tree_flatten((b,))
    b_tree = tree_structure(b)
    b_avals = avals_of(b_flat)
    mv = trace_fun(matvec, args_tree, b_avals, "custom_linear_solve matvec")
    _check_like_b("matvec", mv, b_tree, b_avals, has_aux=False)
    sv = trace_fun(partial(solve, matvec), args_tree, b_avals, "custom_linear_solve solve")
    _check_like_b("solve", sv, b_tree, b_avals, has_aux)
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    if transpose_solve is None:
        vecmat = tsv = None
    else:
        if symmetric:
            vecmat, vecmat_fun = mv, matvec
        else:
            # matvec is linear, so its transpose is its jaxpr transposed in b,
            # over the same consts.
            vecmat = TracedFunction(ad.transpose_jaxpr(mv.closed, [False] * len(mv.consts)
                                               + [True] * len(b_flat)), mv.consts, b_tree)
            vecmat_fun = partial(_apply_operator, vecmat, b_tree, "vecmat")
        tsv = trace_fun(partial(transpose_solve, vecmat_fun), args_tree, b_avals,
                        "custom_linear_solve transpose_solve")
        _check_like_b("transpose_solve", tsv, b_tree, b_avals, has_aux)
    traced = _LinearSolveTuple(mv, vecmat, sv, tsv)
    consts = _LinearSolveTuple(*(t.consts if t is not None else [] for t in traced))
    outs = linear_solve_p.bind(
        *_flat(consts), *b_flat, const_lengths=_LinearSolveTuple(*map(len, consts)),
        jaxprs=_LinearSolveTuple(*(t.closed if t is not None else None for t in traced)))
    return tree_unflatten(sv.out_tree, outs)


def _apply_operator(op: TracedFunction, b_tree: PyTreeDef, name: str, x: Any) -> Any:
    leaves, tree = tree_flatten(x)
    if tree != b_tree:
        raise TypeError(f"custom_linear_solve: {name} expects an argument with the structure "
                        f"of b, {b_tree}, got {tree}.")
    return tree_unflatten(b_tree, jaxpr_as_fun(op.closed)(*op.consts, *leaves))


def _solution_part(name: str, traced: TracedFunction, has_aux: bool) -> tuple[PyTreeDef, list]:
    """The structure and types of the solution that `name` returned, without aux."""
    tree, avals = traced.out_tree, traced.out_avals
    if not has_aux:
        return tree, avals
    children = treedef_children(tree)
    if len(children) != 2:
        raise TypeError(f"{name} must return a pair (solution, aux) because has_aux=True, "
                        f"but it returned a value of structure {tree}.")
    return children[0], avals[:children[0].num_leaves]


def _check_like_b(name: str, traced: TracedFunction, b_tree: PyTreeDef, b_avals: list[ShapedArray],
                  has_aux: bool) -> None:
    """`name`'s output (the x part, with has_aux) must have b's structure and types."""
    tree, avals = _solution_part(f"custom_linear_solve: {name}", traced, has_aux)
    if tree != b_tree or not same_types(avals, b_avals):
        raise TypeError(f"custom_linear_solve: {name} must return a value with the structure "
                        f"and types of b.\n  b:      {describe_types(b_tree, b_avals)}\n"
                        f"  {name + ':':7} {describe_types(tree, avals)}")


linear_solve_p = standard_primitive("custom_linear_solve", multiple_results=True)


@linear_solve_p.def_abstract_eval
def _linear_solve_abstract_eval(*avals, const_lengths, jaxprs):
    _, b = _split_operands(avals, const_lengths)
    x = jaxprs.solve.out_avals
    if not same_types(x[:len(b)], b):
        raise TypeError(f"custom_linear_solve's solve maps b of types "
                        f"({', '.join(a.str_short() for a in b)}) to "
                        f"({', '.join(a.str_short() for a in x[:len(b)])}).")
    return x


def _linear_solve_jvp(primals, tangents, *, const_lengths, jaxprs):
    # A x = b  =>  dA x + A dx = db  =>  dx = A^-1 (db - dA x).
    # Tangents of the solvers' consts do not matter: x depends on A and b only.
    params = dict(const_lengths=const_lengths, jaxprs=jaxprs)
    x = linear_solve_p.bind(*primals, **params)
    consts, _ = _split_operands(primals, const_lengths)
    consts_dot, b_dot = _split_operands(tangents, const_lengths)
    x_leaves, aux = x[:len(b_dot)], x[len(b_dot):]
    rhs = b_dot
    if any(type(t) is not ad.Zero for t in consts_dot.matvec):
        zeros = [ad.Zero.from_primal_value(v) for v in x_leaves]
        _, dmatvec_x = ad.jvp_flat(jaxpr_as_fun(jaxprs.matvec), [*consts.matvec, *x_leaves],
                                   [*consts_dot.matvec, *zeros], current_trace())
        rhs = [ad.add_tangents(db, t if type(t) is ad.Zero else neg(t))
               for db, t in zip(b_dot, dmatvec_x)]
    if all(type(t) is ad.Zero for t in rhs):
        return x, [ad.Zero.from_primal_value(v) for v in x]
    x_dot = linear_solve_p.bind(*_flat(consts), *map(ad.instantiate_zeros, rhs), **params)
    return x, [*x_dot[:len(b_dot)], *(ad.Zero.from_primal_value(a) for a in aux)]


def _linear_solve_transpose(cts, *args, const_lengths, jaxprs):
    consts, b = _split_operands(args, const_lengths)
    if any(ad.is_undefined_primal(c) for c in _flat(consts)) or \
            not all(ad.is_undefined_primal(x) for x in b):
        raise TypeError("custom_linear_solve is linear in b only: it can't be transposed with "
                        "respect to the values its functions close over.")
    if jaxprs.transpose_solve is None:
        raise TypeError("custom_linear_solve needs transpose_solve for reverse-mode "
                        "differentiation (grad, vjp): pass transpose_solve=..., a function "
                        "solving vecmat(x) = b given the transposed operator, or "
                        "symmetric=True if matvec is its own transpose, so that solve serves.")
    cts_x = [ad.instantiate_zeros(ct) for ct in cts[:len(b)]]
    cts_b = linear_solve_p.bind(*_flat(consts.transpose()), *cts_x,
                                const_lengths=const_lengths.transpose(),
                                jaxprs=jaxprs.transpose())
    return [None] * sum(const_lengths) + list(cts_b[:len(b)])


def _linear_solve_batch(axis_data, args, dims, *, const_lengths, jaxprs):
    size = axis_data.size
    args = [batching.at_front(x, d, size) if d is not batching.not_mapped else x
            for x, d in zip(args, dims)]
    consts_bat, orig_b_bat = _split_operands([d is not batching.not_mapped for d in dims],
                                             const_lengths)
    num_aux = len(jaxprs.solve.out_avals) - len(orig_b_bat)

    def batch(jaxpr, const_bat, in_bat, instantiate):
        dims = [0 if b else batching.not_mapped for b in [*const_bat, *in_bat]]
        batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims, instantiate)
        return batched, [d is not batching.not_mapped for d in out_dims]

    # x and b are batched alike in all four functions (solve and vecmat map b to
    # x, matvec and transpose_solve map x to b): grow both sets to a fixpoint.
    b_bat, x_bat = list(orig_b_bat), [False] * len(jaxprs.solve.out_avals)
    while True:
        solve, solve_x_bat = batch(jaxprs.solve, consts_bat.solve, b_bat, x_bat)
        x_bat_out = solve_x_bat
        vecmat = None
        if jaxprs.vecmat is not None:
            vecmat, vecmat_x_bat = batch(jaxprs.vecmat, consts_bat.vecmat, b_bat,
                                         x_bat[:len(b_bat)])
            x_bat_out = [a or b for a, b in zip(solve_x_bat, vecmat_x_bat + [True] * num_aux)]
        x_noaux = x_bat_out[:len(b_bat)]
        matvec, b_bat_out = batch(jaxprs.matvec, consts_bat.matvec, x_noaux, b_bat)
        b_bat_out = [a or b for a, b in zip(b_bat_out, orig_b_bat)]
        transpose_solve = None
        if jaxprs.transpose_solve is not None:
            transpose_solve, tsolve_bat = batch(jaxprs.transpose_solve,
                                                consts_bat.transpose_solve, x_noaux, x_bat_out)
            b_bat_out = [a or b for a, b in zip(b_bat_out, tsolve_bat)]
        if x_bat_out == x_bat and b_bat_out == b_bat:
            break
        x_bat, b_bat = x_bat_out, b_bat_out
    consts, b = _split_operands(args, const_lengths)
    b = [batching.broadcast(x, size, 0) if now and not was else x
         for x, was, now in zip(b, orig_b_bat, b_bat)]
    outs = linear_solve_p.bind(*_flat(consts), *b, const_lengths=const_lengths,
                               jaxprs=_LinearSolveTuple(matvec, vecmat, solve, transpose_solve))
    return outs, [0 if bat else batching.not_mapped for bat in solve_x_bat]


def _linear_solve_lowering(ctx, *args, const_lengths, jaxprs):
    consts, b = _split_operands(args, const_lengths)
    return lower_jaxpr(ctx.module_context, jaxprs.solve.jaxpr, closed_consts(jaxprs.solve),
                       [*consts.solve, *b])


ad.primitive_jvps[linear_solve_p] = _linear_solve_jvp
ad.primitive_transposes[linear_solve_p] = _linear_solve_transpose
batching.fancy_primitive_batchers[linear_solve_p] = _linear_solve_batch
register_lowering(linear_solve_p, _linear_solve_lowering)


# ---------------------------------------------------------------------------
# custom_root.


def custom_root(f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False) -> Any:
    """A root of `f` computed by `solve(f, initial_guess)`, differentiated implicitly.

    The derivative with respect to the values `f` closes over follows the
    implicit function theorem at the root, using `tangent_solve(g, y)`, which
    must return x with `g(x) = y` for the linear map `g` (`f` linearized at the
    root): `lambda g, y: y / g(1.0)` for a scalar. Nothing differentiates
    through `solve`. With `has_aux=True`, `solve` returns `(root, aux)` and so
    does `custom_root` (aux is not differentiated).

    Args:
      f: the function whose root is sought, `x -> f(x)` with x's structure.
      initial_guess: where `solve` starts, a pytree of arrays.
      solve: `(f, initial_guess) -> root` (and aux with `has_aux`).
      tangent_solve: `(g, y) -> x` with `g(x) = y` for the linearized `f`.
      has_aux: `solve` also returns auxiliary data.

    Returns:
      The root (or `(root, aux)`), differentiable implicitly.

    >>> import numpy as np
    >>> import lamella.lax as lax
    >>> def newton(f, x):  # two steps suffice for this example
    ...     for _ in range(2):
    ...         x = lax.sub(x, lax.div(f(x), np.float32(2.0)))
    ...     return x
    >>> custom_root(lambda x: lax.sub(lax.mul(np.float32(2.0), x), np.float32(3.0)),
    ...             np.float32(0.0), newton, lambda g, y: lax.div(y, g(np.float32(1.0))))
    Array(1.5, dtype=float32)
    """
    guess_flat, args_tree = tree_flatten((initial_guess,))
    tree = tree_structure(initial_guess)
    avals = avals_of(guess_flat)
    fun = trace_fun(f, args_tree, avals, "custom_root f")
    if fun.out_tree != tree or not same_types(fun.out_avals, avals):
        raise TypeError("custom_root: f must return a value with the structure and types of "
                        f"initial_guess.\n  initial_guess: {describe_types(tree, avals)}\n"
                        f"  f returned:    {describe_types(fun.out_tree, fun.out_avals)}")
    solver = trace_fun(partial(solve, f), args_tree, avals, "custom_root solve")
    _check_root(solver, tree, avals, has_aux)
    nf, ns, n = len(fun.consts), len(solver.consts), len(guess_flat)

    def run_solve(*args):
        _, solve_consts, guess = split_list(args, [nf, ns])
        return jaxpr_as_fun(solver.closed)(*solve_consts, *guess)

    def root(*args):
        return custom_derivatives.custom_jvp_call_p.bind_with_fun(run_solve, root_jvp, args,
                                                                  True)

    def root_jvp(primals, tangents):
        # f(θ, x*(θ)) = 0  =>  ∂f/∂θ dθ + ∂f/∂x dx = 0  =>  dx = -(∂f/∂x)^-1 (∂f/∂θ dθ).
        # The solver's consts and the initial guess do not move the root.
        params, _, _ = split_list(primals, [nf, ns])
        params_dot = tangents[:nf]
        outs = root(*primals)
        sol = outs[:n]
        zeros = [ad.Zero.from_primal_value(v) for v in outs]
        if all(type(t) is ad.Zero for t in params_dot):
            return outs, zeros
        f_fun = jaxpr_as_fun(fun.closed)
        _, df_dtheta = ad.jvp_flat(lambda *p: f_fun(*p, *sol), params, params_dot,
                                   current_trace())
        if all(type(t) is ad.Zero for t in df_dtheta):
            return outs, zeros
        rhs = tree_unflatten(tree, map(ad.instantiate_zeros, df_dtheta))
        _, f_lin = linearize(lambda x: tree_unflatten(tree, f_fun(*params, *tree_leaves(x))),
                             tree_unflatten(tree, sol))
        dx = custom_linear_solve(f_lin, rhs, tangent_solve, transpose_solve=tangent_solve)
        return outs, [*map(neg, tree_leaves(dx)), *zeros[n:]]

    outs = root(*fun.consts, *solver.consts, *guess_flat)
    return tree_unflatten(solver.out_tree, outs)


def _check_root(solver: TracedFunction, tree: PyTreeDef, avals: list[ShapedArray], has_aux: bool):
    out_tree, out_avals = _solution_part("custom_root: solve", solver, has_aux)
    if out_tree != tree or not same_types(out_avals, avals):
        raise TypeError("custom_root: solve must return a root with the structure and types "
                        f"of initial_guess.\n  initial_guess:  {describe_types(tree, avals)}\n"
                        f"  solve returned: {describe_types(out_tree, out_avals)}")
