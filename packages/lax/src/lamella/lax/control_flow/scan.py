"""`scan`, `map` and `fori_loop`: loops with a trip count known when tracing.

`scan_p` carries one closed jaxpr, the body, taking `(consts, carry, x)` to
`(carry, y)`. Its operands are the consts, the initial carry and the stacked
xs (leading axis `length`); its results are the final carry and the stacked
ys. Every rule sits here, next to the others:

- JVP: the loop carries primals and tangents; which carry tangents are nonzero
  is a fixpoint over the body.
- Partial evaluation (reverse mode): which carries are unknown is a fixpoint;
  the known scan runs the primal body once per iteration and emits, as extra
  stacked outputs, the residuals the unknown scan needs, which reads them as
  extra xs. Residuals that don't change across iterations (they depend on
  consts alone, like a weight matrix) are computed once and passed as consts,
  and residuals that are known xs are passed through, not copied.
- Transposition: a scan in the opposite direction over the transposed body;
  the consts' cotangents are accumulated in the carry, the xs' come out as ys.
- Batching: which carries are batched is a fixpoint too (a carry updated with
  a batched value is batched from its init on).
- Lowering: one `stablehlo.while` whose state is a counter, the consts, the
  xs, the carry and the ys buffers. Each iteration reads its x with
  `dynamic_slice`, lowers the body in place with `lower_jaxpr` (so nested
  control flow nests), and writes its y with `dynamic_update_slice`. With
  `unroll=k` the loop body holds k copies and the `length % k` leftover
  iterations follow the loop as straight-line code.

`fori_loop` with concrete bounds is a `scan` (so it has reverse mode); with
traced bounds it is a `while_loop`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import numpy as np

from lamella.core import ShapedArray, ad, batching, dtypes, partial_eval
from lamella.core.api_util import abstractify_args, fun_name
from lamella.core.config import config
from lamella.core.jaxpr import (
    ClosedJaxpr,
    Jaxpr,
    Var,
    dce_jaxpr,
    eval_jaxpr,
    pp_eqn,
    pp_eqn_rules,
)
from lamella.core.shape_poly import DimExpr, is_symbolic_shape
from lamella.core.staging import trace_to_jaxpr
from lamella.core.structural import add_any_p
from lamella.core.trace import aval_of, set_current_trace
from lamella.core.tree_util import (
    keystr,
    tree_flatten,
    tree_flatten_with_path,
    tree_map,
    tree_structure,
    tree_unflatten,
    treedef_children,
)
from lamella.core.util import merge_lists, split_list, weakref_lru_cache
from lamella.core.vmap_api import vmap
from lamella.lax import symbolic_lowering
from lamella.lax.arithmetic import add
from lamella.lax.control_flow.common import (
    TraceCache,
    check_carry,
    promote_weak_carry,
    trace_fun,
)
from lamella.lax.control_flow.loops import while_loop
from lamella.lax.conversion import convert_element_type
from lamella.lax.logical import lt
from lamella.lax.lowering import (
    _physical,
    aval_to_ir_type,
    closed_consts,
    constant,
    hlo,
    ir,
    lower_jaxpr,
    register_lowering,
)
from lamella.lax.shapes import concatenate, expand_dims, index_in_dim, reshape, slice_in_dim
from lamella.lax.standard import standard_primitive

__all__ = ["fori_loop", "map", "scan", "scan_p"]

Carry = TypeVar("Carry")
X = TypeVar("X")
Y = TypeVar("Y")


def scan(f: Callable[[Carry, X], tuple[Carry, Y]], init: Carry, xs: X | None = None,
         length: int | None = None, reverse: bool = False,
         unroll: int | bool = 1, _split_transpose: bool = False) -> tuple[Carry, Y]:
    """Loops `f` over the leading axis of `xs`, threading a carry; stacks the outputs.

    The semantics of this Python loop, staged as one loop of the compiled program:

        def scan(f, init, xs, length=None):
            carry, ys = init, []
            for x in xs:
                carry, y = f(carry, x)
                ys.append(y)
            return carry, np.stack(ys)

    `init`, `xs` and the outputs may be pytrees; `xs=None` with `length` loops
    without inputs. `reverse=True` runs from the last element to the first (ys
    keep their positions). `unroll=k` puts k iterations in each trip of the
    compiled loop (`True`: all of them). Reverse-mode derivatives save each
    iteration's residuals; wrap `f` in `lamella.core.checkpoint` to recompute
    them instead.

    Args:
      f: `(carry, x) -> (carry, y)`, keeping the carry's structure, shapes and dtypes.
      init: the initial carry, a pytree of arrays.
      xs: a pytree of arrays scanned along their leading axis, or None.
      length: the number of iterations (required when `xs` is None).
      reverse: scan from the end.
      unroll: iterations per trip of the compiled loop (True: all).
      _split_transpose: JAX's experimental flag (its transpose in two scans, for
        memory); the derivatives are the same, so it is accepted and has no effect.

    Returns:
      `(final carry, ys)`, where ys stacks the per-iteration outputs on a new
      leading axis.

    >>> import numpy as np
    >>> import lamella.lax as lax
    >>> def cumsum(total, x):
    ...     total = lax.add(total, x)
    ...     return total, total
    >>> scan(cumsum, np.float32(0), np.arange(4, dtype=np.float32))
    (Array(6., dtype=float32), Array([0., 1., 3., 6.], dtype=float32))
    """
    if not callable(f):
        raise TypeError(f"lax.scan: f must be a callable, got {f!r}")
    xs_flat = tree_flatten(xs)[0]
    length = _scan_length(xs, xs_flat, length)
    unroll = _unroll_count(unroll, length)
    if config.read("disable_jit"):
        return _scan_in_python(f, init, xs, length, reverse)
    init_flat, init_tree = tree_flatten(init)
    in_tree = tree_structure((init, xs))

    def names():
        return [f"init{keystr(path)}" for path, _ in tree_flatten_with_path(init)[0]]

    carry_avals = abstractify_args(init_flat, names, "lax.scan")
    x_avals = [_unstacked(aval_of(x)) for x in xs_flat]
    closed, consts, carry_tree, y_tree = _trace_body(f, in_tree, (*carry_avals, *x_avals))
    n = len(carry_avals)
    if carry_tree == init_tree:
        init_flat, changed = promote_weak_carry(init_flat, carry_avals, closed.out_avals[:n])
        if changed:
            carry_avals = [aval_of(x) for x in init_flat]
            closed, consts, carry_tree, y_tree = _trace_body(f, in_tree,
                                                             (*carry_avals, *x_avals))
    check_carry(f"lax.scan body function ({fun_name(f)})", init_tree, carry_avals,
                carry_tree, closed.out_avals[:carry_tree.num_leaves])
    outs = scan_p.bind(*consts, *init_flat, *xs_flat, jaxpr=closed, length=length,
                       reverse=bool(reverse), unroll=unroll, num_consts=len(consts),
                       num_carry=n, linear=(False,) * (len(consts) + n + len(xs_flat)))
    return tree_unflatten(carry_tree, outs[:n]), tree_unflatten(y_tree, outs[n:])


def _scan_length(xs: Any, xs_flat: list, length: Any) -> int:
    if length is not None:
        try:
            length = operator.index(length)
        except TypeError:
            raise TypeError(f"lax.scan's length must be a concrete Python integer, got "
                            f"{length!r}") from None
        if length < 0:
            raise ValueError(f"lax.scan's length must be non-negative, got {length}")
    paths = [keystr(path) for path, _ in tree_flatten_with_path(xs)[0]]
    avals = [aval_of(x) for x in xs_flat]
    scalars = [f"xs{p} of type {a.str_short()}" for p, a in zip(paths, avals) if not a.ndim]
    if scalars:
        raise ValueError(f"lax.scan got values with no leading axis to scan over: "
                         f"{', '.join(scalars)}.")
    sizes = {a.shape[0] for a in avals}
    if len(sizes) > 1:
        listed = ", ".join(f"xs{p} of shape {a.shape}" for p, a in zip(paths, avals))
        raise ValueError(f"lax.scan got values with different leading axis sizes: {listed}. "
                         "All of xs must have the same length along axis 0.")
    if length is None:
        if not sizes:
            raise ValueError("lax.scan got no values to scan over and `length` not provided.")
        return sizes.pop()
    if sizes and sizes != {length}:
        raise ValueError(f"lax.scan got `length` argument of {length} which disagrees with "
                         f"the leading axis size {sizes.pop()} of xs.")
    return length


def _unroll_count(unroll: int | bool, length: int) -> int:
    if isinstance(unroll, (bool, np.bool_)):
        return max(length, 1) if unroll else 1
    try:
        unroll = operator.index(unroll)
    except TypeError:
        raise TypeError(f"lax.scan's unroll must be a bool or a positive int, got "
                        f"{unroll!r}") from None
    if unroll < 1:
        raise ValueError(f"lax.scan's unroll must be a bool or a positive int, got {unroll}")
    return unroll


def _unstacked(aval: ShapedArray) -> ShapedArray:
    return aval.update(shape=aval.shape[1:])


def _stacked(aval: ShapedArray, length: int) -> ShapedArray:
    return aval.update(shape=(length, *aval.shape))


def _scan_in_python(f, init, xs, length, reverse):
    """scan under `disable_jit`: a Python loop calling `f` on concrete values."""
    if length == 0:
        raise ValueError("zero-length scan is not supported under disable_jit: the output "
                         "types are unknown without tracing the body.")
    carry, ys = init, []
    for i in range(length):
        index = length - 1 - i if reverse else i
        carry, y = f(carry, tree_map(lambda x, i=index: index_in_dim(x, i, keepdims=False), xs))
        ys.append(y)
    if reverse:
        ys.reverse()
    return carry, tree_map(lambda *y: concatenate([expand_dims(v, (0,)) for v in y], 0), *ys)


# ---------------------------------------------------------------------------
# Tracing the body.

_traces = TraceCache()


def _trace_body(f, in_tree, avals):
    return _traces((f,), (in_tree, avals), lambda: _trace_body_uncached(f, in_tree, avals))


def _trace_body_uncached(f, in_tree, avals):
    def pair(carry, x):
        out = f(carry, x)
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise TypeError(f"lax.scan body function ({fun_name(f)}) must return a pair "
                            f"(carry, y), got {_describe(out)}.")
        return tuple(out)

    pair.__name__ = fun_name(f)  # errors about the outputs name the user's function
    traced = trace_fun(pair, in_tree, avals, "lax.scan body function")
    carry_tree, y_tree = treedef_children(traced.out_tree)
    return traced.closed, traced.consts, carry_tree, y_tree


def _describe(out: Any) -> str:
    if isinstance(out, (tuple, list)):
        return f"a {type(out).__name__} of length {len(out)}"
    return f"a value of type {type(out).__name__}"


# ---------------------------------------------------------------------------
# The primitive.

scan_p = standard_primitive("scan", multiple_results=True)


@scan_p.def_abstract_eval
def _scan_abstract_eval(*avals, jaxpr, length, reverse, unroll, num_consts, num_carry, linear):
    consts, init, xs = split_list(avals, [num_consts, num_carry])
    body_consts, body_carry, body_xs = split_list(jaxpr.in_avals, [num_consts, num_carry])
    expected = [*body_consts, *body_carry, *(_stacked(x, length) for x in body_xs)]
    if len(avals) != len(expected) or any(
            a.shape != b.shape or a.dtype != b.dtype for a, b in zip(avals, expected)):
        got = ", ".join(a.str_short() for a in avals)
        want = ", ".join(a.str_short() for a in expected)
        raise TypeError(f"scan of length {length} applied to operands ({got}) but its body "
                        f"expects ({want})")
    carry_out, ys = split_list(jaxpr.out_avals, [num_carry])
    if any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(init, carry_out)):
        raise TypeError(f"scan's body maps a carry of types "
                        f"({', '.join(a.str_short() for a in init)}) to "
                        f"({', '.join(a.str_short() for a in carry_out)}).")
    # The final carry is the init (no iteration) or a body output: weak only if both are.
    return [*(a.update(weak_type=a.weak_type and b.weak_type) for a, b in zip(init, carry_out)),
            *(_stacked(y, length) for y in ys)]


def _permuted(closed: ClosedJaxpr, in_order: list[int], out_order: list[int]) -> ClosedJaxpr:
    """`closed` with input i being old input in_order[i], and likewise for outputs."""
    j = closed.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, [j.invars[i] for i in in_order],
                             [j.outvars[i] for i in out_order], j.eqns, j.effects,
                             j.debug_info), closed.consts)


def _blocks(sizes: list[int], order: list[int]) -> list[int]:
    """Indices of consecutive blocks of the given sizes, the blocks rearranged by `order`."""
    starts = np.cumsum([0, *sizes]).tolist()
    return [i for b in order for i in range(starts[b], starts[b] + sizes[b])]


# --- JVP ----------------------------------------------------------------------


@weakref_lru_cache()
def _jvp_body(closed, const_nz, init_nz, xs_nz, num_consts, num_carry):
    """The body computing primals and nonzero tangents, grouped for a scan:
    (consts, const tangents, carry, carry tangents, xs, xs tangents) ->
    (carry, carry tangents, ys, ys tangents). Also which carries and ys have tangents."""
    num_ys = len(closed.out_avals) - num_carry
    carry_nz = init_nz
    while True:
        body, out_nz = ad.jvp_jaxpr(closed, const_nz + carry_nz + xs_nz,
                                    instantiate=carry_nz + (False,) * num_ys)
        if out_nz[:num_carry] == carry_nz:
            break
        carry_nz = tuple(a or b for a, b in zip(carry_nz, out_nz))
    ys_nz = out_nz[num_carry:]
    sizes = [num_consts, num_carry, len(xs_nz), sum(const_nz), sum(carry_nz), sum(xs_nz)]
    out_sizes = [num_carry, num_ys, sum(carry_nz), sum(ys_nz)]
    return (_permuted(body, _blocks(sizes, [0, 3, 1, 4, 2, 5]), _blocks(out_sizes, [0, 2, 1, 3])),
            carry_nz, ys_nz)


def _scan_jvp(primals, tangents, *, jaxpr, length, reverse, unroll, num_consts, num_carry,
              linear):
    nz = [type(t) is not ad.Zero for t in tangents]
    const_nz, init_nz, xs_nz = (tuple(g) for g in split_list(nz, [num_consts, num_carry]))
    body, carry_nz, ys_nz = _jvp_body(jaxpr, const_nz, init_nz, xs_nz, num_consts, num_carry)
    consts, init, xs = split_list(primals, [num_consts, num_carry])
    consts_dot, init_dot, xs_dot = split_list(tangents, [num_consts, num_carry])
    consts_dot = [t for t in consts_dot if type(t) is not ad.Zero]
    init_dot = [ad.instantiate_zeros(t) for t, n in zip(init_dot, carry_nz) if n]
    xs_dot = [t for t in xs_dot if type(t) is not ad.Zero]
    lin_consts, lin_init, lin_xs = split_list(linear, [num_consts, num_carry])
    outs = scan_p.bind(*consts, *consts_dot, *init, *init_dot, *xs, *xs_dot, jaxpr=body,
                       length=length, reverse=reverse, unroll=unroll,
                       num_consts=num_consts + len(consts_dot),
                       num_carry=num_carry + len(init_dot),
                       linear=(*lin_consts, *[True] * len(consts_dot), *lin_init,
                               *[True] * len(init_dot), *lin_xs, *[True] * len(xs_dot)))
    carry, carry_dot, ys, ys_dot = split_list(outs, [num_carry, len(init_dot), len(ys_nz)])
    carry_dot, ys_dot = iter(carry_dot), iter(ys_dot)
    out_avals = _scan_abstract_eval(*(aval_of(x) for x in primals), jaxpr=jaxpr, length=length,
                                    reverse=reverse, unroll=unroll, num_consts=num_consts,
                                    num_carry=num_carry, linear=linear)
    out_dot = [next(carry_dot) if n else ad.Zero(a.to_tangent_aval())
               for n, a in zip(carry_nz, out_avals[:num_carry])]
    out_dot += [next(ys_dot) if n else ad.Zero(a.to_tangent_aval())
                for n, a in zip(ys_nz, out_avals[num_carry:])]
    return [*carry, *ys], out_dot


ad.primitive_jvps[scan_p] = _scan_jvp


# --- partial evaluation -------------------------------------------------------


class _Split(NamedTuple):
    """A scan body split into the bodies of a known and an unknown scan.

    - known: (known consts, carry, xs) -> (known carry, ys, stacked residuals)
    - unknown: (invariant residuals, unknown consts, carry, stacked residuals,
      forwarded xs, unknown xs) -> (unknown carry, ys)
    - invariant: known consts -> the residuals that are the same every iteration
    - forwarded: the known xs that are residuals as they are (by position)
    """

    known: ClosedJaxpr
    unknown: ClosedJaxpr
    invariant: ClosedJaxpr
    carry_uk: tuple[bool, ...]
    ys_uk: tuple[bool, ...]
    forwarded: tuple[int, ...]
    num_stacked: int


@weakref_lru_cache()
def _split_body(closed, const_uk, init_uk, xs_uk, num_consts, num_carry):
    num_ys = len(closed.out_avals) - num_carry
    carry_uk = init_uk
    while True:
        known, unknown, out_uk, num_res = partial_eval.partial_eval_jaxpr(
            closed, const_uk + carry_uk + xs_uk, instantiate=carry_uk + (False,) * num_ys)
        if out_uk[:num_carry] == carry_uk:
            break
        carry_uk = tuple(a or b for a, b in zip(carry_uk, out_uk))
    ys_uk = out_uk[num_carry:]
    k = known.jaxpr
    n_kc = const_uk.count(False)
    known_xs = k.invars[n_kc + carry_uk.count(False):]
    n_known_outs = len(k.outvars) - num_res
    residuals = k.outvars[n_known_outs:]
    # Residuals that depend on the carry or xs change every iteration and are
    # stacked; the others are computed once, outside the loop.
    varying = set(k.invars[n_kc:])
    for eqn in k.eqns:
        if any(type(v) is Var and v in varying for v in eqn.invars):
            varying.update(eqn.outvars)
    kinds = []  # per residual: "invariant", "stacked", or the index of a known x
    for r in residuals:
        if type(r) is not Var or r not in varying:
            kinds.append("invariant")
        elif r in known_xs:
            kinds.append(known_xs.index(r))
        else:
            kinds.append("stacked")
    invariant_vars = [r for r, kind in zip(residuals, kinds) if kind == "invariant"]
    stacked_vars = [r for r, kind in zip(residuals, kinds) if kind == "stacked"]
    forwarded = tuple(kind for kind in kinds if type(kind) is int)
    invariant = ClosedJaxpr(dce_jaxpr(Jaxpr(k.constvars, k.invars[:n_kc], invariant_vars,
                                            k.eqns)), known.consts)
    known = ClosedJaxpr(dce_jaxpr(Jaxpr(k.constvars, k.invars,
                                        [*k.outvars[:n_known_outs], *stacked_vars], k.eqns)),
                        known.consts)
    j = unknown.jaxpr
    res, uc, ucarry, ux = split_list(j.invars, [num_res, const_uk.count(True),
                                                carry_uk.count(True)])

    def res_of(selected):
        return [v for v, kind in zip(res, kinds) if selected(kind)]
    order = [*res_of(lambda kind: kind == "invariant"), *uc, *ucarry,
             *res_of(lambda kind: kind == "stacked"), *res_of(lambda kind: type(kind) is int),
             *ux]
    unknown = ClosedJaxpr(Jaxpr(j.constvars, order, j.outvars, j.eqns, j.effects, j.debug_info),
                          unknown.consts)
    return _Split(known, unknown, invariant, carry_uk, ys_uk, forwarded, len(stacked_vars))


def _scan_partial_eval(trace, args, *, jaxpr, length, reverse, unroll, num_consts, num_carry,
                       linear):
    unknowns = [trace.is_unknown(x) for x in args]
    const_uk, init_uk, xs_uk = (tuple(g) for g in split_list(unknowns, [num_consts, num_carry]))
    split = _split_body(jaxpr, const_uk, init_uk, xs_uk, num_consts, num_carry)
    uk = (*const_uk, *split.carry_uk, *xs_uk)
    known_args = [x for x, u in zip(args, uk) if not u]
    unknown_args = [x for x, u in zip(args, uk) if u]
    known_lin = tuple(lin for lin, u in zip(linear, uk) if not u)
    unknown_lin = [lin for lin, u in zip(linear, uk) if u]
    n_kc, n_kk = const_uk.count(False), split.carry_uk.count(False)
    known_xs = known_args[n_kc + n_kk:]
    with set_current_trace(trace.known):
        invariant = eval_jaxpr(split.invariant.jaxpr, split.invariant.consts,
                               *known_args[:n_kc])
        known_outs = scan_p.bind(*known_args, jaxpr=split.known, length=length,
                                 reverse=reverse, unroll=unroll, num_consts=n_kc,
                                 num_carry=n_kk, linear=known_lin)
    known_outs, stacked = split_list(known_outs, [len(known_outs) - split.num_stacked])
    if not any(split.carry_uk) and not any(split.ys_uk):
        return known_outs
    n_uc, n_uk = const_uk.count(True), split.carry_uk.count(True)
    uconsts, ucarry, uxs = split_list(unknown_args, [n_uc, n_uk])
    ulin_consts, ulin_carry, ulin_xs = split_list(unknown_lin, [n_uc, n_uk])
    forwarded = [known_xs[i] for i in split.forwarded]
    res_xs = [*stacked, *forwarded]
    with set_current_trace(trace.unknown):
        unknown_outs = scan_p.bind(
            *invariant, *uconsts, *ucarry, *res_xs, *uxs, jaxpr=split.unknown, length=length,
            reverse=reverse, unroll=unroll, num_consts=len(invariant) + n_uc, num_carry=n_uk,
            linear=(*[False] * len(invariant), *ulin_consts, *ulin_carry,
                    *[False] * len(res_xs), *ulin_xs))
    return merge_lists((*split.carry_uk, *split.ys_uk), known_outs, unknown_outs)


partial_eval.partial_eval_rules[scan_p] = _scan_partial_eval


# --- transposition ------------------------------------------------------------


@weakref_lru_cache()
def _transposed_body(closed, const_lin, xs_lin, num_consts, num_carry):
    """The body of the transposed scan:
    (nonlinear consts, const cotangent sums, carry cotangents, ys cotangents,
    nonlinear xs) -> (const cotangent sums, carry cotangents, xs cotangents)."""
    transposed = ad.transpose_jaxpr(closed, const_lin + (True,) * num_carry + xs_lin)
    consts, carry, xs = split_list(closed.in_avals, [num_consts, num_carry])
    res_consts = [a for a, lin in zip(consts, const_lin) if not lin]
    lin_consts = [a.to_tangent_aval() for a, lin in zip(consts, const_lin) if lin]
    res_xs = [a for a, lin in zip(xs, xs_lin) if not lin]
    ct_carry = [a.to_tangent_aval() for a in carry]
    ct_ys = [a.to_tangent_aval() for a in closed.out_avals[num_carry:]]

    def body(*args):
        res_c, sums, ct_c, ct_y, res_x = split_list(
            args, [len(res_consts), len(lin_consts), num_carry, len(ct_ys)])
        cts = eval_jaxpr(transposed.jaxpr, transposed.consts, *res_c, *res_x, *ct_c, *ct_y)
        ct_consts, ct_carry_in, ct_xs = split_list(cts, [len(lin_consts), num_carry])
        return [*(add_any_p.bind(s, c) for s, c in zip(sums, ct_consts)), *ct_carry_in, *ct_xs]

    jaxpr, consts = trace_to_jaxpr(body, [*res_consts, *lin_consts, *ct_carry, *ct_ys, *res_xs])
    return ClosedJaxpr(jaxpr, consts)


def _scan_transpose(cts, *args, jaxpr, length, reverse, unroll, num_consts, num_carry, linear):
    # The carries of a scan being transposed are linear (partial evaluation puts
    # every carry that depends on a tangent in the unknown scan, and only those);
    # an init given as a value (an instantiated zero tangent) gets no cotangent.
    consts, init, xs = split_list(args, [num_consts, num_carry])
    const_lin = tuple(ad.is_undefined_primal(x) for x in consts)
    xs_lin = tuple(ad.is_undefined_primal(x) for x in xs)
    body = _transposed_body(jaxpr, const_lin, xs_lin, num_consts, num_carry)
    res_consts = [x for x, lin in zip(consts, const_lin) if not lin]
    res_xs = [x for x, lin in zip(xs, xs_lin) if not lin]
    sums = [ad.zeros_like_aval(x.aval.to_tangent_aval()) for x in consts
            if ad.is_undefined_primal(x)]
    cts = [ad.instantiate_zeros(ct) for ct in cts]
    ct_carry, ct_ys = split_list(cts, [num_carry])
    outs = scan_p.bind(*res_consts, *sums, *ct_carry, *ct_ys, *res_xs, jaxpr=body,
                       length=length, reverse=not reverse, unroll=unroll,
                       num_consts=len(res_consts), num_carry=len(sums) + num_carry,
                       linear=(*[False] * len(res_consts), *[True] * (len(sums) + num_carry
                                                                      + len(ct_ys)),
                               *[False] * len(res_xs)))
    ct_consts, ct_init, ct_xs = split_list(outs, [len(sums), num_carry])
    ct_consts, ct_xs = iter(ct_consts), iter(ct_xs)
    return [*(next(ct_consts) if lin else None for lin in const_lin),
            *(ct if ad.is_undefined_primal(x) else None for x, ct in zip(init, ct_init)),
            *(next(ct_xs) if lin else None for lin in xs_lin)]


ad.primitive_transposes[scan_p] = _scan_transpose


# --- batching -----------------------------------------------------------------


@weakref_lru_cache()
def _batched_body(closed, axis_data, const_b, init_b, xs_b, num_consts, num_carry):
    """The body over a batch (every batched value at axis 0 of a slice), and
    which carries and ys come out batched."""
    num_ys = len(closed.out_avals) - num_carry
    carry_b = init_b
    while True:
        in_dims = [0 if b else batching.not_mapped for b in const_b + carry_b + xs_b]
        body, out_dims = batching.batch_jaxpr(closed, axis_data, tuple(in_dims),
                                              carry_b + (False,) * num_ys)
        out_b = tuple(d is not batching.not_mapped for d in out_dims)
        if out_b[:num_carry] == carry_b:
            return body, carry_b, out_b[num_carry:]
        carry_b = tuple(a or b for a, b in zip(carry_b, out_b))


def _scan_batch(axis_data, args, dims, *, jaxpr, length, reverse, unroll, num_consts,
                num_carry, linear):
    size = axis_data.size
    batched = [d is not batching.not_mapped for d in dims]
    const_b, init_b, xs_b = (tuple(g) for g in split_list(batched, [num_consts, num_carry]))
    body, carry_b, ys_b = _batched_body(jaxpr, axis_data, const_b, init_b, xs_b, num_consts,
                                        num_carry)
    consts, init, xs = split_list(args, [num_consts, num_carry])
    const_dims, init_dims, xs_dims = split_list(dims, [num_consts, num_carry])
    consts = [batching.moveaxis(x, d, 0) if d is not None else x
              for x, d in zip(consts, const_dims)]
    init = [batching.at_front(x, d, size) if b else x
            for x, d, b in zip(init, init_dims, carry_b)]
    # The scanned axis stays in front; the batch axis goes right after it.
    xs = [batching.moveaxis(x, d, 1) if d is not None else x for x, d in zip(xs, xs_dims)]
    outs = scan_p.bind(*consts, *init, *xs, jaxpr=body, length=length, reverse=reverse,
                       unroll=unroll, num_consts=num_consts, num_carry=num_carry,
                       linear=linear)
    out_dims = [0 if b else batching.not_mapped for b in carry_b]
    out_dims += [1 if b else batching.not_mapped for b in ys_b]
    return outs, out_dims


batching.fancy_primitive_batchers[scan_p] = _scan_batch


# --- lowering -----------------------------------------------------------------


def _scan_lowering(ctx, *args, jaxpr, length, reverse, unroll, num_consts, num_carry, linear):
    module = ctx.module_context
    # A symbolic length (shape-polymorphic export) loops over the dimension's value.
    symbolic = isinstance(length, DimExpr)
    if symbolic:
        unroll = 1
    index_dtype = np.dtype(np.int32 if symbolic or length < 2 ** 31 else np.int64)
    consts, init, xs = split_list(list(args), [num_consts, num_carry])
    ys_avals = ctx.avals_out[num_carry:]
    ys = [symbolic_lowering.broadcast_in_dim(a, constant(np.zeros((), _physical(a))), [])
          for a in ys_avals]
    x_avals = ctx.avals_in[num_consts + num_carry:]
    if any(is_symbolic_shape(a.shape[1:]) for a in (*x_avals, *ys_avals)):
        raise ValueError("The primitive 'scan' does not support symbolic dimensions in the "
                         "slices it scans over or stacks (only in its length and carry)")

    def index(t: int | DimExpr) -> ir.Value:
        return constant(t if isinstance(t, DimExpr) else np.asarray(t, index_dtype),
                        index_dtype)

    def iteration(t, consts, body_consts, xs, carry, ys):
        """Emits iteration `t` (counting from 0 in loop order: a Python int, or
        a value inside the loop)."""
        if isinstance(t, int):
            i = index(length - 1 - t if reverse else t)
        else:
            i = hlo.subtract(index(length - 1), t) if reverse else t
        zero = index(0)
        x_slices = [hlo.reshape(aval_to_ir_type(_unstacked(a)),
                                hlo.dynamic_slice(x, [i, *[zero] * (a.ndim - 1)],
                                                  [1, *a.shape[1:]]))
                    for x, a in zip(xs, x_avals)]
        outs = lower_jaxpr(module, jaxpr.jaxpr, body_consts, [*consts, *carry, *x_slices])
        carry, y = outs[:num_carry], outs[num_carry:]
        ys = [hlo.dynamic_update_slice(
            buf, hlo.reshape(aval_to_ir_type(_stacked(_unstacked(a), 1)), v),
            [i, *[zero] * (a.ndim - 1)]) for buf, v, a in zip(ys, y, ys_avals)]
        return carry, ys

    trips = length // unroll
    carry, done = init, 0
    if symbolic or trips > 1:
        state = [index(0), *consts, *xs, *carry, *ys]
        types = [v.type for v in state]
        loop = hlo.WhileOp(types, state)
        cond = loop.regions[0].blocks.append(*types)
        with ir.InsertionPoint(cond):
            hlo.return_([hlo.compare(cond.arguments[0], index(trips * unroll),
                                     hlo.ComparisonDirectionAttr.get("LT"),
                                     compare_type=hlo.ComparisonTypeAttr.get("SIGNED"))])
        body = loop.regions[1].blocks.append(*types)
        with ir.InsertionPoint(body):
            t, b_consts, b_xs, b_carry, b_ys = split_list(
                list(body.arguments), [1, num_consts, len(xs), num_carry])
            body_consts = closed_consts(jaxpr)
            for k in range(unroll):
                step = hlo.add(t[0], index(k)) if k else t[0]
                b_carry, b_ys = iteration(step, b_consts, body_consts, b_xs, b_carry, b_ys)
            hlo.return_([hlo.add(t[0], index(unroll)), *b_consts, *b_xs, *b_carry, *b_ys])
        _, _, _, carry, ys = split_list(list(loop.results), [1, num_consts, len(xs), num_carry])
        done = trips * unroll
    if done < length:
        body_consts = closed_consts(jaxpr)
        for t in range(done, length):
            carry, ys = iteration(t, consts, body_consts, xs, carry, ys)
    return [*carry, *ys]


register_lowering(scan_p, _scan_lowering)
# `linear` (which operands are linear, for transposition) is lamella's own
# bookkeeping; equations print with JAX's params.
pp_eqn_rules[scan_p] = lambda eqn, context: pp_eqn(
    eqn, context, [(k, v) for k, v in sorted(eqn.params.items()) if k != "linear"])


# ---------------------------------------------------------------------------
# map and fori_loop.


def map(f: Callable[[X], Y], xs: X, *, batch_size: int | None = None) -> Y:
    """Applies `f` to each slice of `xs` along its leading axis, as a loop; stacks the results.

    `batch_size=b` runs `vmap(f)` on chunks of b slices per iteration (and on
    the leftover slices after the loop), trading memory for fewer iterations.

    Args:
      f: the function applied to each slice.
      xs: a pytree of arrays sliced along their leading axis.
      batch_size: slices per iteration, evaluated with `vmap(f)`.

    Returns:
      The results stacked along a new leading axis.

    >>> import numpy as np
    >>> import lamella.lax as lax
    >>> map(lambda x: lax.mul(x, x), np.arange(4, dtype=np.float32))
    Array([0., 1., 4., 9.], dtype=float32)
    """
    if batch_size is None:
        _, ys = scan(lambda _, x: ((), f(x)), (), xs)
        return ys
    batch_size = operator.index(batch_size)
    if batch_size < 1:
        raise ValueError(f"lax.map's batch_size must be a positive integer, got {batch_size}")
    leaves = tree_flatten(xs)[0]
    n = _scan_length(xs, leaves, None)
    chunks, leftover = divmod(n, batch_size)
    batched_f = vmap(f)
    if not chunks:
        return batched_f(xs)
    main = tree_map(lambda x: reshape(slice_in_dim(x, 0, chunks * batch_size),
                                      (chunks, batch_size, *aval_of(x).shape[1:])), xs)
    _, ys = scan(lambda _, x: ((), batched_f(x)), (), main)
    ys = tree_map(lambda y: reshape(y, (chunks * batch_size, *aval_of(y).shape[2:])), ys)
    if not leftover:
        return ys
    rest = batched_f(tree_map(lambda x: slice_in_dim(x, chunks * batch_size, n), xs))
    return tree_map(lambda a, b: concatenate([a, b], 0), ys, rest)


def fori_loop(lower: Any, upper: Any, body_fun: Callable[[Any, Carry], Carry], init_val: Carry,
              *, unroll: int | bool | None = None) -> Carry:
    """Runs `val = body_fun(i, val)` for i from `lower` to `upper - 1`; returns `val`.

    With concrete bounds (Python ints or concrete arrays) the loop is a `scan`
    of `upper - lower` iterations, so it supports reverse-mode differentiation
    and `unroll`; with traced bounds it is a `while_loop` (forward mode only).

    Args:
      lower, upper: the integer bounds of the loop (`range(lower, upper)`).
      body_fun: `(i, carry) -> carry`.
      init_val: the initial carry, a pytree of arrays.
      unroll: iterations per trip of the compiled loop.

    Returns:
      The final carry.

    >>> import numpy as np
    >>> import lamella.lax as lax
    >>> fori_loop(0, 5, lambda i, total: lax.add(total, i), np.int32(0))
    Array(10, dtype=int32)
    """
    dtype = _bounds_dtype(lower, upper)
    try:
        lower_, upper_ = int(lower), int(upper)
    except TypeError:  # traced bounds (a ConcretizationTypeError is a TypeError)
        return _fori_while(lower, upper, body_fun, init_val, unroll, dtype)
    length = max(upper_ - lower_, 0)
    if config.read("disable_jit") and length == 0:
        return init_val
    # The counter keeps the bounds' type: weak for Python ints.
    start = lower_ if dtype is None else np.asarray(lower_, dtype)

    def step(carry, _):
        i, val = carry
        return (_add_one(i), body_fun(i, val)), None

    (_, result), _ = scan(step, (start, init_val), None, length=length,
                          unroll=False if unroll is None else unroll)
    return result


def _add_one(i: Any) -> Any:
    return add(i, np.asarray(1, aval_of(i).dtype))


def _bounds_dtype(lower: Any, upper: Any) -> np.dtype | None:
    """The counter's dtype: that of the bounds that are not Python ints (None if both are)."""
    for b in (lower, upper):
        if aval_of(b).dtype.kind not in "iu":
            raise TypeError(f"lax.fori_loop bounds must be integers, got {b!r} of type "
                            f"{aval_of(b).str_short()}")
    strong = [aval_of(b).dtype for b in (lower, upper) if not dtypes.is_python_scalar(b)]
    return dtypes.canonicalize_dtype(np.result_type(*strong)) if strong else None


def _fori_while(lower, upper, body_fun, init_val, unroll, dtype):
    if unroll not in (None, False, 1):
        raise ValueError("lax.fori_loop can only unroll when its bounds are concrete (Python "
                         "ints or concrete arrays): with traced bounds it is a while_loop.")
    lower, upper = (convert_element_type(b, dtype) for b in (lower, upper))

    def body(carry):
        i, upper, val = carry
        return _add_one(i), upper, body_fun(i, val)

    _, _, result = while_loop(lambda carry: lt(carry[0], carry[1]), body,
                              (lower, upper, init_val))
    return result
