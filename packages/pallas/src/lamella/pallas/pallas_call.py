"""`pallas_call`: run a kernel written on refs over a grid of blocks.

`pallas_call(kernel, out_shape, grid=, in_specs=, out_specs=)(*args)` traces
`kernel(*in_refs, *out_refs, *scratch_refs)` once, with refs of block shape and
the grid indices as the kernel's leading inputs (what `program_id` returns),
and binds `pallas_call_p`. The primitive carries the stateful kernel jaxpr and
the resolved block mappings; its rules:

- lowering (CPU): discharge the kernel and run the grid as one XLA program
  (`executor.run_compiled`);
- batching: the batch becomes a new leading grid axis, every batched operand
  gets a leading squeezed block dimension indexed by it;
- JVP: a kernel over primal and tangent refs that reads its blocks, applies
  the JVP of the discharged kernel, and writes primal and tangent blocks back;
- transpose: none, as in JAX — wrap the call in `custom_vjp` for reverse mode.

>>> import numpy as np
>>> from lamella.core import ShapeDtypeStruct
>>> def add_kernel(x_ref, y_ref, o_ref):
...     o_ref[...] = x_ref[...] + y_ref[...]
>>> x = np.arange(8, dtype=np.float32)
>>> pallas_call(add_kernel, out_shape=ShapeDtypeStruct(x.shape, x.dtype))(x, x)
Array([ 0.,  2.,  4.,  6.,  8., 10., 12., 14.], dtype=float32)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

import lamella.numpy as jnp
from lamella.core import (
    ClosedJaxpr,
    Jaxpr,
    Primitive,
    ShapedArray,
    Tracer,
    Var,
    ad,
    batching,
    jaxpr_as_fun,
    jit,
    jvp,
)
from lamella.core.state import AbstractRef, discharge_state, trace_stateful
from lamella.core.tree_util import tree_flatten, tree_unflatten
from lamella.lax.lowering import lower_fun, register_lowering
from lamella.pallas.executor import plan_grid, run_compiled, run_stepwise
from lamella.pallas.grid_context import grid_env
from lamella.pallas.language import debug_print_p
from lamella.pallas.specs import (
    BlockMapping,
    BlockSpec,
    GridSpec,
    block_mapping,
    no_block_spec,
)

__all__ = ["pallas_call", "pallas_call_p"]


def _normalize_grid(grid: Any, kernel: str) -> tuple[int, ...]:
    grid = (grid,) if isinstance(grid, (int, np.integer)) else tuple(grid)
    for g in grid:
        if isinstance(g, Tracer) or not isinstance(g, (int, np.integer)) or g < 0:
            raise TypeError(f"Kernel {kernel!r}: grid sizes must be static non-negative ints, "
                            f"got the grid {grid!r}")
    return tuple(int(g) for g in grid)


def _flat_specs(specs: Any, n: int, what: str, kernel: str) -> list[Any]:
    if specs is no_block_spec or specs is None:
        return [no_block_spec] * n
    leaves, _ = tree_flatten(specs, is_leaf=lambda s: s is None or isinstance(s, BlockSpec))
    if len(leaves) != n:
        raise ValueError(f"Kernel {kernel!r}: {len(leaves)} {what} specs for {n} {what}s")
    return leaves


def _ref_names(kernel: Callable, n: int) -> list[str | None]:
    try:
        params = [p.name for p in inspect.signature(kernel).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[k] if k < len(params) else None for k in range(n)]


def pallas_call(kernel: Callable[..., None], out_shape: Any, *,
                grid_spec: GridSpec | None = None, grid: Any = (),
                in_specs: Any = no_block_spec, out_specs: Any = no_block_spec,
                scratch_shapes: Sequence[Any] = (),
                input_output_aliases: Mapping[int, int] = {},  # noqa: B006 (JAX's default)
                debug: bool = False, interpret: Any = False, name: str | None = None,
                compiler_params: Any = None, cost_estimate: Any = None,
                metadata: dict[str, str] | None = None) -> Callable[..., Any]:
    """A function running `kernel` over `grid` on blocks of its arguments.

    `kernel(*in_refs, *out_refs, *scratch_refs)` reads its input blocks and writes
    its output blocks; `out_shape` is a pytree of `ShapeDtypeStruct`s (or arrays)
    giving the outputs. `in_specs`/`out_specs` (pytrees of `BlockSpec` matching the
    arguments and outputs) say which block each grid point sees; without them a
    kernel sees whole arrays. `interpret=True` runs the step interpreter.
    """
    kernel_name = name or getattr(kernel, "__name__", "kernel")
    if grid_spec is not None:
        grid, in_specs, out_specs = grid_spec.grid, grid_spec.in_specs, grid_spec.out_specs
        scratch_shapes = grid_spec.scratch_shapes
    grid = _normalize_grid(grid, kernel_name)
    out_leaves, out_tree = tree_flatten(out_shape)
    out_avals = [ShapedArray(tuple(o.shape), jnp.dtype(o.dtype)) for o in out_leaves]
    scratch_avals = tuple(ShapedArray(tuple(s.shape), jnp.dtype(s.dtype))
                          for s in tree_flatten(scratch_shapes)[0])

    def call(*args: Any) -> Any:
        flat_args, in_tree = tree_flatten(args)
        flat_args = [jnp.asarray(a) if not isinstance(a, Tracer) else a for a in flat_args]
        ins = _flat_specs(in_specs, len(flat_args), "input", kernel_name)
        outs = _flat_specs(out_specs, len(out_avals), "output", kernel_name)
        in_maps = tuple(block_mapping(s, a.shape, a.dtype, grid=grid, what=f"input {k}",
                                      kernel=kernel_name)
                        for k, (s, a) in enumerate(zip(ins, flat_args)))
        out_maps = tuple(block_mapping(s, a.shape, a.dtype, grid=grid, what=f"output {k}",
                                       kernel=kernel_name)
                         for k, (s, a) in enumerate(zip(outs, out_avals)))
        aliases = _check_aliases(input_output_aliases, in_maps, out_maps, kernel_name)
        closed = _trace_kernel(kernel, kernel_name, grid, in_maps, out_maps, scratch_avals,
                               in_tree, out_tree)
        results = pallas_call_p.bind(
            *flat_args, kernel=closed, grid=grid, in_mappings=in_maps, out_mappings=out_maps,
            scratch_avals=scratch_avals, aliases=aliases, interpret=bool(interpret),
            name=kernel_name, debug=debug, compiler_params=compiler_params,
            cost_estimate=cost_estimate)
        return tree_unflatten(out_tree, results)
    return call


def _check_aliases(aliases, in_maps, out_maps, kernel) -> tuple[tuple[int, int], ...]:
    for i, o in aliases.items():
        if not (0 <= i < len(in_maps) and 0 <= o < len(out_maps)):
            raise ValueError(f"Kernel {kernel!r}: input_output_aliases {{{i}: {o}}} is out of "
                             f"range ({len(in_maps)} inputs, {len(out_maps)} outputs)")
        a, b = in_maps[i], out_maps[o]
        if a.array_shape != b.array_shape or a.dtype != b.dtype:
            raise ValueError(f"Kernel {kernel!r}: input {i} of shape {a.array_shape} "
                             f"({a.dtype}) can't alias output {o} of shape {b.array_shape} "
                             f"({b.dtype})")
    return tuple(sorted(aliases.items()))


def _trace_kernel(kernel, kernel_name, grid, in_maps, out_maps, scratch_avals, in_tree,
                  out_tree) -> ClosedJaxpr:
    ref_avals = [AbstractRef(ShapedArray(m.kernel_shape, m.dtype)) for m in (*in_maps,
                                                                             *out_maps)]
    ref_avals += [AbstractRef(a) for a in scratch_avals]
    pid_avals = [ShapedArray((), np.int32)] * len(grid)
    n_in, n_out = len(in_maps), len(out_maps)
    names = [None] * len(grid) + _ref_names(kernel, len(ref_avals))

    def flat_kernel(*vals):
        pids, refs = vals[:len(grid)], vals[len(grid):]
        with grid_env(pids, grid):
            outs = tree_unflatten(out_tree, refs[n_in:n_in + n_out])
            kernel(*tree_unflatten(in_tree, refs[:n_in]),
                   *(outs if isinstance(outs, (tuple, list)) else (outs,)),
                   *refs[n_in + n_out:])
        return []

    jaxpr, consts = trace_stateful(flat_kernel, [*pid_avals, *ref_avals], names)
    if any(isinstance(c, Tracer) for c in consts):
        raise TypeError(f"Kernel {kernel_name!r} closes over a traced value (an argument of an "
                        "enclosing jit, vmap or grad): pass it to the pallas_call as an input.")
    return ClosedJaxpr(jaxpr, consts)


# ---------------------------------------------------------------------------
# The primitive.

pallas_call_p = Primitive("pallas_call")
pallas_call_p.multiple_results = True


def _pp_params(params):
    return [("name", params["name"]), ("grid", params["grid"]), ("jaxpr", params["kernel"])]


pallas_call_p.pp_params = _pp_params


@pallas_call_p.def_abstract_eval
def _abstract_eval(*avals, kernel, grid, in_mappings, out_mappings, **_):
    for k, (a, m) in enumerate(zip(avals, in_mappings)):
        if tuple(a.shape) != m.array_shape or a.dtype != m.dtype:
            raise TypeError(f"pallas_call: input {k} has type {a.str_short()} but the kernel was "
                            f"traced for {ShapedArray(m.array_shape, m.dtype).str_short()}")
    return [ShapedArray(m.array_shape, m.dtype) for m in out_mappings]


def _has_debug_print(jaxpr) -> bool:
    for eqn in jaxpr.eqns:
        if eqn.primitive is debug_print_p:
            return True
        for value in eqn.params.values():
            for sub in (value if isinstance(value, tuple) else (value,)):
                if isinstance(sub, ClosedJaxpr) and _has_debug_print(sub.jaxpr):
                    return True
                if isinstance(sub, Jaxpr) and _has_debug_print(sub):
                    return True
    return False


def _dimension_semantics(compiler_params, n: int) -> list[bool]:
    semantics = getattr(compiler_params, "dimension_semantics", None)
    if not semantics:
        return [False] * n
    return [str(s).lower().endswith("arbitrary") for s in semantics]


def _lowered(*args, kernel, grid, in_mappings, out_mappings, scratch_avals, aliases,
             compiler_params, **_):
    prints = _has_debug_print(kernel.jaxpr)
    # A kernel that prints runs its grid points one after the other, in grid order.
    arbitrary = [True] * len(grid) if prints else _dimension_semantics(compiler_params,
                                                                       len(grid))
    plan = plan_grid(grid, in_mappings, out_mappings, arbitrary)
    return run_compiled(args, kernel=kernel, grid=grid, in_mappings=in_mappings,
                        out_mappings=out_mappings, scratch_avals=scratch_avals,
                        aliases=dict(aliases), plan=plan, unroll=not prints)


register_lowering(pallas_call_p, lower_fun(_lowered, multiple_results=True))


@pallas_call_p.def_impl
def _impl(*args, **params):
    if params["interpret"]:
        return run_stepwise(args, kernel=params["kernel"], grid=params["grid"],
                            in_mappings=params["in_mappings"],
                            out_mappings=params["out_mappings"],
                            scratch_avals=params["scratch_avals"],
                            aliases=dict(params["aliases"]))
    return _compiled(**params)(*args)


@functools.lru_cache(maxsize=64)
def _compiled_cache(key):
    params = dict(key)
    return jit(lambda *args: pallas_call_p.bind(*args, **params))


def _compiled(**params):
    try:
        return _compiled_cache(tuple(sorted(params.items(), key=lambda kv: kv[0])))
    except TypeError:  # unhashable compiler params
        return jit(lambda *args: pallas_call_p.bind(*args, **params))


# ---------------------------------------------------------------------------
# Batching: the batch is a new leading grid axis.


def _batched_mapping(m: BlockMapping, batched: bool, size: int, grid) -> BlockMapping:
    index_map = m.index_map or (lambda *_: (0,) * len(m.array_shape))
    if batched:
        spec = BlockSpec((None, *(m.spec_block_shape or m.array_shape)),
                         lambda b, *idx: (b, *_tuple(index_map(*idx))))
        shape = (size, *m.array_shape)
    else:
        spec = BlockSpec(m.spec_block_shape, lambda b, *idx: index_map(*idx))
        shape = m.array_shape
    return block_mapping(spec, shape, m.dtype, grid=grid, what="a batched operand",
                         kernel="batched kernel")


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _with_leading_pid(kernel: ClosedJaxpr) -> ClosedJaxpr:
    j = kernel.jaxpr
    return ClosedJaxpr(Jaxpr(j.constvars, [Var(ShapedArray((), np.int32)), *j.invars],
                             j.outvars, j.eqns, j.effects, j.debug_info), kernel.consts)


def _batch_rule(args, dims, *, kernel, grid, in_mappings, out_mappings, aliases, **params):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    aliased = dict(aliases)
    # An aliased input becomes a batched output's initial value, so it is batched too.
    args = [jnp.moveaxis(a, d, 0) if d is not None else
            jnp.broadcast_to(a, (size, *a.shape)) if i in aliased else a
            for i, (a, d) in enumerate(zip(args, dims))]
    batched = [d is not None or i in aliased for i, d in enumerate(dims)]
    new_grid = (size, *grid)
    in_maps = tuple(_batched_mapping(m, b, size, new_grid)
                    for m, b in zip(in_mappings, batched))
    out_maps = tuple(_batched_mapping(m, True, size, new_grid) for m in out_mappings)
    outs = pallas_call_p.bind(*args, kernel=_with_leading_pid(kernel), grid=new_grid,
                              in_mappings=in_maps, out_mappings=out_maps, aliases=aliases,
                              **params)
    return outs, [0] * len(outs)


batching.primitive_batchers[pallas_call_p] = _batch_rule


# ---------------------------------------------------------------------------
# JVP: the kernel of the JVP reads all its blocks, applies the discharged kernel's
# JVP, and writes primal and tangent blocks.


def _jvp_rule(primals, tangents, *, kernel, grid, in_mappings, out_mappings, scratch_avals,
              aliases, name, **params):
    tangents = [ad.instantiate_zeros(t) for t in tangents]
    n_in, n_out, n_s, n_g = len(in_mappings), len(out_mappings), len(scratch_avals), len(grid)
    functional = discharge_state(kernel)
    n_ref = n_in + n_out + n_s

    def jvp_kernel(*refs):
        pids = refs[:n_g]
        primal_refs = refs[n_g:n_g + n_ref]
        tangent_refs = refs[n_g + n_ref:]
        values = [r[...] for r in primal_refs]
        dots = [r[...] for r in tangent_refs]
        f = lambda *vals: jaxpr_as_fun(functional)(*pids, *vals)  # noqa: E731
        outs, out_dots = jvp(f, values, dots)
        for r, v in zip(primal_refs, outs):
            r[...] = v
        for r, v in zip(tangent_refs, out_dots):
            r[...] = v
        return []

    ref_avals = [v.aval for v in kernel.jaxpr.invars[n_g:]]
    pid_avals = [v.aval for v in kernel.jaxpr.invars[:n_g]]
    tangent_avals = [a.to_tangent_aval() for a in ref_avals]
    # Reorder to the pallas_call layout: ins, tangent ins, outs, tangent outs, scratch, ...
    order = [*range(n_in), *range(n_ref, n_ref + n_in),
             *range(n_in, n_in + n_out), *range(n_ref + n_in, n_ref + n_in + n_out),
             *range(n_in + n_out, n_ref), *range(n_ref + n_in + n_out, 2 * n_ref)]
    inverse = np.argsort(order)
    avals = [*ref_avals, *tangent_avals]

    def laid_out(*vals):
        pids, refs = vals[:n_g], vals[n_g:]
        return jvp_kernel(*pids, *[refs[int(inverse[k])] for k in range(2 * n_ref)])

    jaxpr, consts = trace_stateful(laid_out, [*pid_avals, *[avals[k] for k in order]])
    new_kernel = ClosedJaxpr(jaxpr, consts)
    tangent_in_maps = tuple(_tangent_mapping(m) for m in in_mappings)
    tangent_out_maps = tuple(_tangent_mapping(m) for m in out_mappings)
    new_aliases = (*aliases, *((i + n_in, o + n_out) for i, o in aliases))
    outs = pallas_call_p.bind(
        *primals, *tangents, kernel=new_kernel, grid=grid,
        in_mappings=(*in_mappings, *tangent_in_maps),
        out_mappings=(*out_mappings, *tangent_out_maps),
        scratch_avals=(*scratch_avals, *(a.to_tangent_aval() for a in scratch_avals)),
        aliases=tuple(sorted(new_aliases)), name=f"{name}_jvp", **params)
    return outs[:n_out], outs[n_out:]


def _tangent_mapping(m: BlockMapping) -> BlockMapping:
    return dataclasses.replace(m, dtype=np.dtype(ShapedArray((), m.dtype).to_tangent_aval().dtype))


ad.primitive_jvps[pallas_call_p] = _jvp_rule


def _transpose_rule(cts, *args, **params):
    raise TypeError(
        f"Reverse-mode differentiation of pallas_call (kernel {params['name']!r}) is not "
        "supported, as in JAX: define the backward pass with lamella.core.custom_vjp around "
        "the call (forward mode, jvp, works).")


ad.primitive_transposes[pallas_call_p] = _transpose_rule
