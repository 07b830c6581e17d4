"""`shard_map`: a function written for one device's block, run on every device of a mesh.

`shard_map(f, mesh=, in_specs=, out_specs=)(*args)` splits each argument as its
spec says, runs `f` on each device's block (collectives over the mesh's axis
names combine blocks), and puts the results together as `out_specs` says.
Axes a spec does not name replicate: an input is passed whole to each device
along them, an output is taken from one device (they must agree).

`axis_names=` makes only some mesh axes manual: the body sees blocks split over
those, the other axes stay Auto (XLA's partitioner spreads the body's work over
them). Inside the body, `shard_map` again (mesh omitted: the enclosing one)
is manual over further axes; its specs and collectives name only axes manual
there, its body may also use the enclosing manual axes. Where no other mesh is
set, the body's current mesh is the region's (manual axes typed Manual), so
PartitionSpecs there name its axes; a layout given inside (a sharding constraint,
an explicit sharding) can split a block only over the axes that stay Auto.

`f` is traced once, on the blocks' shapes, into the `shard_map` primitive's
jaxpr. The primitive lowers to XLA's manual-sharding region (custom calls
`Sharding`, `SPMDFullToShardShape` / `SPMDShardToFullShape`; manual over a
subgroup of the devices where some axes are manual already or stay Auto), the
collectives inside it to StableHLO's all_reduce, all_gather, reduce_scatter,
all_to_all and collective_permute over the mesh's device groups. It differentiates (JVP,
partial evaluation, transposition: an output replicated over an axis passes
each device 1/n of its cotangent, an input replicated over an axis sums its
cotangents over the axis) and batches (an unsplit leading dimension).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad, batching, partial_eval
from lamella.core.jaxpr import ClosedJaxpr, eval_jaxpr
from lamella.core.primitive import Primitive
from lamella.core.rules import Zero, instantiate_zeros, is_undefined_primal
from lamella.core.sharding import AxisType, Mesh, PartitionSpec, get_mesh
from lamella.core.staging import hoist_tracer_consts, trace_to_jaxpr
from lamella.core.trace import set_current_trace
from lamella.core.trace_queries import extend_axis_env
from lamella.core.tree_util import tree_flatten, tree_unflatten
from lamella.core.util import merge_lists, partition_list
from lamella.lax import lowering
from lamella.lax.arithmetic import div
from lamella.lax.control_flow.cond import cond_p
from lamella.lax.control_flow.loops import while_p
from lamella.lax.control_flow.scan import scan_p
from lamella.lax.lowering import hlo, ir, register_lowering
from lamella.lax.manual_regions import (
    manual_mesh,
    manual_region_sharding,
    mesh_parts,
    subgroup_sharding,
)
from lamella.lax.shapes import reshape
from lamella.lax.varying_axes import typed_body, typing_on, vma_rules

__all__ = ["manual_region_sharding", "shard_map", "shard_map_p", "subgroup_sharding"]

Spec = tuple  # one tuple of mesh axis names per dimension


def _spec(entry: Any, ndim: int, what: str) -> Spec:
    if entry is None:
        entry = PartitionSpec()
    if not isinstance(entry, PartitionSpec):
        raise TypeError(f"shard_map {what}: expected PartitionSpecs, got {entry!r}")
    if len(entry) > ndim:
        raise ValueError(f"shard_map {what}: {entry!r} has {len(entry)} entries for a value "
                         f"of rank {ndim}")
    return entry._normalized(ndim)


def _as_partition_spec(spec: Spec) -> PartitionSpec:
    return PartitionSpec(*[(e if len(e) > 1 else e[0]) if e else None for e in spec])


def _local_aval(aval: ShapedArray, spec: Spec, mesh: Mesh, what: str) -> ShapedArray:
    shape = []
    for dim, (size, names) in enumerate(zip(aval.shape, spec)):
        for n in names:
            if n not in mesh.axis_names:
                raise ValueError(f"shard_map {what}: the spec names the axis {n!r}, which the "
                                 f"mesh lacks (its axes: {mesh.axis_names})")
        parts = mesh_parts(mesh, names)
        if size % parts:
            raise ValueError(f"shard_map {what}: dimension {dim} of shape {aval.shape} has "
                             f"size {size}, not divisible by the {parts} devices of mesh axes "
                             f"{names}")
        shape.append(size // parts)
    return aval.update(shape=tuple(shape))


def _global_aval(aval: ShapedArray, spec: Spec, mesh: Mesh, manual: frozenset
                 ) -> ShapedArray:
    # Outside the region the value no longer varies over its manual axes (it may still
    # vary over an enclosing region's).
    return aval.update(shape=tuple(s * mesh_parts(mesh, names)
                                   for s, names in zip(aval.shape, spec)),
                       vma=aval.vma - manual)


def _typed(avals: Sequence[ShapedArray], specs: Sequence[Spec], manual: frozenset
           ) -> list[ShapedArray]:
    """The blocks' types in a body typed with vma (see `_region`): each varies over the
    manual axes its spec splits it over, besides those it varied over already."""
    if not typing_on():
        return list(avals)
    return [a.update(vma=a.vma | (frozenset(n for names in s for n in names) & manual))
            for a, s in zip(avals, specs)]


def _unmentioned(mesh: Mesh, manual: frozenset, spec: Spec) -> tuple:
    """The region's manual axes `spec` does not split over (the value is replicated
    along them), in mesh order."""
    named = {n for names in spec for n in names}
    return tuple(n for n in mesh.axis_names if n in manual and n not in named)


class _Regions(threading.local):
    """The shard_map bodies being traced or transformed, innermost last: each a mesh and
    every axis manual there (its own and its enclosing regions'); and for each, whether
    it made its mesh the current one."""

    def __init__(self) -> None:
        self.stack: list[tuple[Mesh, frozenset]] = []
        self.current: list[bool] = []


_regions = _Regions()


def _enclosing() -> tuple[Mesh, frozenset] | None:
    return _regions.stack[-1] if _regions.stack else None


class _region:
    """Inside the body of a shard_map manual over `manual`: its axes are bound names
    (for collectives) and nested shard_maps see them as manual. Where no mesh is
    current (none set, or only enclosing regions'), the region's mesh is, its manual
    axes typed Manual, as in JAX: PartitionSpecs inside name its axes, and
    `get_abstract_mesh()` shows which are manual."""

    def __init__(self, mesh: Mesh, manual: frozenset, check_vma: bool):
        outer = _enclosing()
        self.entry = (mesh, manual | (outer[1] if outer else frozenset()))
        self.typed = typed_body(check_vma, mesh.axis_names)
        self.env = extend_axis_env([(n, mesh.shape[n]) for n in mesh.axis_names
                                    if n in manual])
        self.mesh = mesh

    def __enter__(self) -> None:
        self.env.__enter__()
        self.typed.__enter__()
        _regions.stack.append(self.entry)
        current = get_mesh() is None or bool(_regions.current and _regions.current[-1])
        _regions.current.append(current)
        if current:
            manual_mesh(self.mesh, self.entry[1]).__enter__()

    def __exit__(self, *exc: Any) -> None:
        if _regions.current.pop():
            get_mesh().__exit__(*exc)
        _regions.stack.pop()
        self.typed.__exit__(*exc)
        self.env.__exit__(*exc)


def _trace(fun: Callable, avals: Sequence[ShapedArray], mesh: Mesh, manual: frozenset,
           check_vma: bool, specs: Sequence[Spec]) -> ClosedJaxpr:
    """`fun` traced on blocks of types `avals`, split as `specs` say."""
    with _region(mesh, manual, check_vma):
        jaxpr, consts = trace_to_jaxpr(fun, _typed(avals, specs, manual))
    return ClosedJaxpr(jaxpr, consts)


# ---------------------------------------------------------------------------
# The primitive.

shard_map_p = Primitive("shard_map")
shard_map_p.multiple_results = True


@shard_map_p.def_abstract_eval
def _abstract_eval(*avals, jaxpr, mesh, manual_axes, in_specs, out_specs, check_vma):
    return [_global_aval(a, s, mesh, manual_axes) for a, s in zip(jaxpr.out_avals, out_specs)]


def _vma_rule(*in_vmas, jaxpr, mesh, manual_axes, in_specs, out_specs, check_vma):
    if check_vma:
        return [a.vma - manual_axes for a in jaxpr.out_avals]
    # An untyped body inside a typed one: its results may vary as any operand does.
    return [frozenset().union(*in_vmas) - manual_axes] * len(out_specs)


vma_rules[shard_map_p] = _vma_rule


# Control flow: results vary as their sub-jaxprs' outputs do. Where branches or a loop's
# carry disagree (JAX raises for these), every result is typed as varying over all the
# axes involved: a larger vma only makes the out_specs check stricter, never unsound.


def _cond_vma(index_vma, *vmas, branches):
    # As JAX 0.10.2: the predicate's vma does not reach the results.
    return [frozenset().union(*(b.out_avals[i].vma for b in branches))
            for i in range(len(branches[0].out_avals))]


def _loop_vma(in_vmas: Sequence[frozenset], carry_in: Sequence[frozenset],
              body_outs: Sequence[ShapedArray], num_carry: int, extra: frozenset = frozenset()
              ) -> list[frozenset]:
    carry_out = [a.vma for a in body_outs[:num_carry]]
    if all(o <= i for i, o in zip(carry_in, carry_out)) and not extra:
        return [*carry_in, *(a.vma for a in body_outs[num_carry:])]
    every = frozenset().union(*in_vmas, *(a.vma for a in body_outs), extra)
    return [every] * len(body_outs)


def _scan_vma(*vmas, jaxpr, num_consts, num_carry, **params):
    return _loop_vma(vmas, vmas[num_consts:num_consts + num_carry], jaxpr.out_avals,
                     num_carry)


def _while_vma(*vmas, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    carry = vmas[cond_nconsts + body_nconsts:]
    # A predicate that varies runs the members' loops a different number of times.
    return _loop_vma(vmas, carry, body_jaxpr.out_avals, len(carry),
                     cond_jaxpr.out_avals[0].vma)


vma_rules[cond_p] = _cond_vma
vma_rules[scan_p] = _scan_vma
vma_rules[while_p] = _while_vma


_impl_programs: dict[tuple, tuple[Any, Callable]] = {}


@shard_map_p.def_impl
def _impl(*args, jaxpr, mesh, manual_axes, in_specs, out_specs, check_vma):
    # Evaluated on its own (outside any jit), the call is compiled as a program of
    # this one equation, kept while the body's jaxpr lives.
    from lamella.core import jit
    params = dict(jaxpr=jaxpr, mesh=mesh, manual_axes=manual_axes, in_specs=in_specs,
                  out_specs=out_specs, check_vma=check_vma)
    key = (id(jaxpr), mesh, manual_axes, in_specs, out_specs)
    entry = _impl_programs.get(key)
    if entry is None or entry[0]() is not jaxpr:
        def drop(_, key=key):
            _impl_programs.pop(key, None)
        entry = (weakref.ref(jaxpr, drop), jit(lambda *xs: shard_map_p.bind(*xs, **params)))
        _impl_programs[key] = entry
    return entry[1](*args)


def _jvp(primals, tangents, *, jaxpr, mesh, manual_axes, in_specs, out_specs, check_vma):
    nonzeros = [type(t) is not Zero for t in tangents]
    with _region(mesh, manual_axes, check_vma):
        jvp_closed, out_nonzeros = ad.jvp_jaxpr(jaxpr, nonzeros)
    args = [*primals, *(t for t in tangents if type(t) is not Zero)]
    specs_in = (*in_specs, *(s for s, nz in zip(in_specs, nonzeros) if nz))
    specs_out = (*out_specs, *(s for s, nz in zip(out_specs, out_nonzeros) if nz))
    outs = shard_map_p.bind(*args, jaxpr=jvp_closed, mesh=mesh, manual_axes=manual_axes,
                            in_specs=specs_in, out_specs=specs_out, check_vma=check_vma)
    n = len(out_specs)
    tangents_out = iter(outs[n:])
    return outs[:n], [next(tangents_out) if nz else Zero(a.to_tangent_aval())
                      for a, nz in zip(_abstract_eval(*primals, jaxpr=jaxpr, mesh=mesh,
                                                      manual_axes=manual_axes,
                                                      in_specs=in_specs, out_specs=out_specs,
                                                      check_vma=check_vma), out_nonzeros)]


def _transpose(cts, *args, jaxpr, mesh, manual_axes, in_specs, out_specs, check_vma):
    from lamella.lax.parallel import psum_p
    linear = [is_undefined_primal(x) for x in args]
    with _region(mesh, manual_axes, check_vma):
        transposed = ad.transpose_jaxpr(jaxpr, linear)
    nonlinear_specs = [s for s, lin in zip(in_specs, linear) if not lin]
    linear_specs = [s for s, lin in zip(in_specs, linear) if lin]

    def body(*xs):
        res, local_cts = xs[:len(nonlinear_specs)], xs[len(nonlinear_specs):]
        # A replicated output's cotangent reaches every copy: each takes its share.
        local_cts = [c if not unmentioned(s) else
                     div(c, np.array(mesh_parts(mesh, unmentioned(s)), c.dtype))
                     for c, s in zip(local_cts, out_specs)]
        in_cts = eval_jaxpr(transposed.jaxpr, transposed.consts, *res, *local_cts)
        # The primitive, not lax.psum: a cotangent may vary over only some of the axes.
        return [psum_p.bind(c, axes=unmentioned(s), axis_index_groups=None)[0]
                if unmentioned(s) else c for c, s in zip(in_cts, linear_specs)]

    def unmentioned(spec):
        return _unmentioned(mesh, manual_axes, spec)

    res_args = [x for x, lin in zip(args, linear) if not lin]
    local = [_local_aval(ShapedArray(np.shape(x), np.result_type(x)) if not hasattr(x, "aval")
                         else x.aval, s, mesh, "transpose")
             for x, s in zip(res_args, nonlinear_specs)]
    local += [a for a in jaxpr.out_avals]
    body_closed = _trace(body, local, mesh, manual_axes, check_vma,
                         (*nonlinear_specs, *out_specs))
    outs = iter(shard_map_p.bind(*res_args, *map(instantiate_zeros, cts), jaxpr=body_closed,
                                 mesh=mesh, manual_axes=manual_axes,
                                 in_specs=(*nonlinear_specs, *out_specs),
                                 out_specs=tuple(linear_specs), check_vma=check_vma))
    return [next(outs) if lin else None for lin in linear]


def _all_axes(mesh: Mesh, manual: frozenset, ndim: int) -> Spec:
    return (tuple(n for n in mesh.axis_names if n in manual),) + ((),) * (ndim - 1)


def _partial_eval(trace, args, *, jaxpr, mesh, manual_axes, in_specs, out_specs, check_vma):
    unknowns = [trace.is_unknown(x) for x in args]
    with _region(mesh, manual_axes, check_vma):
        known, unknown, out_unknowns, num_res = partial_eval.partial_eval_jaxpr(jaxpr, unknowns)
    known_specs, unknown_specs = partition_list(unknowns, list(in_specs))
    known_out_specs = [s for s, u in zip(out_specs, out_unknowns) if not u]
    unknown_out_specs = [s for s, u in zip(out_specs, out_unknowns) if u]
    res_avals = known.out_avals[len(known.out_avals) - num_res:]
    # Residuals are per-device values: each device's goes out as one row of a
    # (devices, ...) array split over every manual axis, and comes back the same way.

    def known_body(*xs):
        outs = eval_jaxpr(known.jaxpr, known.consts, *xs)
        split = len(outs) - num_res
        return [*outs[:split], *(reshape(r, (1, *np.shape(r))) for r in outs[split:])]

    def unknown_body(*xs):
        res = [reshape(r, a.shape) for r, a in zip(xs[:num_res], res_avals)]
        return eval_jaxpr(unknown.jaxpr, unknown.consts, *res, *xs[num_res:])

    res_specs = [_all_axes(mesh, manual_axes, a.ndim + 1) for a in res_avals]
    known_closed = _trace(known_body, known.in_avals, mesh, manual_axes, check_vma,
                          known_specs)
    unknown_closed = _trace(unknown_body, [a.update(shape=(1, *a.shape)) for a in res_avals]
                            + list(unknown.in_avals[num_res:]), mesh, manual_axes, check_vma,
                            (*res_specs, *unknown_specs))
    known_args, unknown_args = partition_list(unknowns, args)
    with set_current_trace(trace.known):
        known_outs = shard_map_p.bind(*known_args, jaxpr=known_closed, mesh=mesh,
                                      manual_axes=manual_axes, in_specs=tuple(known_specs),
                                      out_specs=(*known_out_specs, *res_specs),
                                      check_vma=check_vma)
    split = len(known_outs) - num_res
    known_outs, residuals = known_outs[:split], known_outs[split:]
    with set_current_trace(trace.unknown):
        unknown_outs = shard_map_p.bind(*residuals, *unknown_args, jaxpr=unknown_closed,
                                        mesh=mesh, manual_axes=manual_axes,
                                        in_specs=(*res_specs, *unknown_specs),
                                        out_specs=tuple(unknown_out_specs), check_vma=check_vma)
    return merge_lists(out_unknowns, known_outs, unknown_outs)


def _batch(axis_data, args, dims, *, jaxpr, mesh, manual_axes, in_specs, out_specs,
           check_vma):
    args = [batching.at_front(x, d, axis_data.size) for x, d in zip(args, dims)]
    with _region(mesh, manual_axes, check_vma):
        batched, _ = batching.batch_jaxpr(jaxpr, axis_data, (0,) * len(args), instantiate=True)
    outs = shard_map_p.bind(*args, jaxpr=batched, mesh=mesh, manual_axes=manual_axes,
                            in_specs=tuple(((),) + s for s in in_specs),
                            out_specs=tuple(((),) + s for s in out_specs), check_vma=check_vma)
    return outs, [0] * len(outs)


ad.primitive_jvps[shard_map_p] = _jvp
ad.primitive_transposes[shard_map_p] = _transpose
partial_eval.partial_eval_rules[shard_map_p] = _partial_eval
batching.fancy_primitive_batchers[shard_map_p] = _batch


# ---------------------------------------------------------------------------
# Lowering: XLA's manual region, the body inside it.


def _sharding_call(value: ir.Value, result_type: ir.Type, target: str, sharding: str,
                   ndim: int, auto: bool) -> ir.Value:
    op = hlo.CustomCallOp([result_type], [value], call_target_name=target)
    op.attributes["mhlo.sharding"] = ir.StringAttr.get(sharding)
    if auto and ndim:
        # Axes that stay Auto: the partitioner chooses how they split the value.
        op.attributes["backend_config"] = ir.StringAttr.get(
            "unspecified_dims=[" + ",".join(map(str, range(ndim))) + "]")
    return op.results[0]


def _lowering(ctx, *args, jaxpr, mesh, manual_axes, in_specs, out_specs, check_vma):
    module = ctx.module_context
    enclosing = module.axis_context
    # Axes manual in an enclosing region: this region is a subgroup of each of its
    # devices sets (the module's axis context is the mesh with those axes Manual).
    outer = frozenset() if enclosing is None else frozenset(
        n for n, t in zip(enclosing.axis_names, enclosing.axis_types) if t == AxisType.Manual)
    inside = outer | manual_axes
    auto = len(inside) < len(mesh.axis_names)
    if auto and mesh_parts(mesh, tuple(inside)) == 1:
        # Manual axes of size 1 beside Auto ones: the body is the whole computation, and
        # XLA takes no manual region over a single device set.
        module.axis_context = manual_mesh(mesh, inside)
        try:
            return lowering.lower_jaxpr(module, jaxpr.jaxpr, lowering.closed_consts(jaxpr),
                                        list(args))
        finally:
            module.axis_context = enclosing
    local_args = []
    for x, aval, spec, local in zip(args, ctx.avals_in, in_specs, jaxpr.in_avals):
        x = _sharding_call(x, lowering.aval_to_ir_type(aval), "Sharding",
                           subgroup_sharding(mesh, spec, outer), aval.ndim, auto)
        local_args.append(_sharding_call(
            x, lowering.aval_to_ir_type(local), "SPMDFullToShardShape",
            subgroup_sharding(mesh, ((),) * local.ndim, inside), local.ndim, auto))
    module.axis_context = manual_mesh(mesh, inside)
    try:
        outs = lowering.lower_jaxpr(module, jaxpr.jaxpr, lowering.closed_consts(jaxpr),
                                    local_args)
    finally:
        module.axis_context = enclosing
    results = []
    for y, aval, spec, local in zip(outs, ctx.avals_out, out_specs, jaxpr.out_avals):
        y = _sharding_call(
            y, lowering.aval_to_ir_type(local), "Sharding",
            subgroup_sharding(mesh, ((),) * local.ndim, inside), local.ndim, auto)
        results.append(_sharding_call(y, lowering.aval_to_ir_type(aval),
                                      "SPMDShardToFullShape",
                                      subgroup_sharding(mesh, spec, outer), aval.ndim, auto))
    return results


register_lowering(shard_map_p, _lowering)


# ---------------------------------------------------------------------------
# The user's function.


def _broadcast_specs(specs: Any, tree: Any, count: int, what: str) -> list:
    """One spec per leaf: `specs` is a prefix of the values' tree (a PartitionSpec
    stands for all the leaves below it)."""
    if isinstance(specs, PartitionSpec) or specs is None:
        return [specs] * count
    values = tree_unflatten(tree, list(range(count)))
    out: list = [None] * count

    def walk(spec, value):
        if isinstance(spec, PartitionSpec) or spec is None:
            for i in tree_flatten(value)[0]:
                out[i] = spec
            return
        if isinstance(spec, (tuple, list)) and isinstance(value, (tuple, list)) \
                and len(spec) == len(value):
            for s, v in zip(spec, value):
                walk(s, v)
            return
        if isinstance(spec, dict) and isinstance(value, dict) and spec.keys() == value.keys():
            for k in spec:
                walk(spec[k], value[k])
            return
        raise ValueError(f"shard_map {what}: {spec!r} does not match the structure of the "
                         f"values ({value!r}); give one PartitionSpec per value or a prefix")
    walk(specs, values)
    return out


def shard_map(f: Callable | None = None, /, *, out_specs: Any, in_specs: Any = None,
              mesh: Mesh | None = None, axis_names: Any = frozenset(),
              check_vma: bool = True) -> Any:
    """`f` (written for one device's block) mapped over the devices of `mesh`.

    Args:
      f: the per-device function; collectives in it (`psum(x, 'x')`, ...) name
        mesh axes.
      out_specs: how the results are put together: a PartitionSpec per result
        (or a prefix of the results' tree).
      in_specs: how each argument is split (a prefix of the arguments' tree).
      mesh: the devices; by default the enclosing shard_map's mesh inside one, else
        the current mesh (`set_mesh`/`use_mesh`).
      axis_names: the mesh axes `f` is manual over (specs and collectives name only
        these); the others stay Auto. Default: every axis not already manual.
      check_vma: type the body's values with the manual axes they vary over
        (`typeof(x)` shows `f32[2]{V:x}`), and raise a ValueError where an out_spec
        leaves out an axis its output varies over (one device's block would be
        returned). False: no typing, no check.

    >>> import numpy as np, lamella.core as lc, lamella.lax as lax
    >>> from lamella.core.sharding import P, make_mesh
    >>> mesh = make_mesh((1,), ("x",))
    >>> shard_map(lambda b: lax.psum(b, "x"), mesh=mesh, in_specs=P("x"),
    ...           out_specs=P())(np.arange(4.0, dtype=np.float32))
    Array([0., 1., 2., 3.], dtype=float32)

    Manual over "x" only, with a shard_map over "y" nested inside:

    >>> mesh2 = make_mesh((1, 1), ("x", "y"))
    >>> def outer(b):
    ...     return shard_map(lambda c: lax.psum(c, ("x", "y")), in_specs=P("y"),
    ...                      out_specs=P(), axis_names={"y"})(b)
    >>> lc.jit(shard_map(outer, mesh=mesh2, in_specs=P("x"), out_specs=P(),
    ...                  axis_names={"x"}))(np.arange(4.0, dtype=np.float32))
    Array([0., 1., 2., 3.], dtype=float32)
    """
    if f is None:
        return lambda g: shard_map(g, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                                   axis_names=axis_names, check_vma=check_vma)
    if not callable(f):
        raise TypeError(f"shard_map expects a callable, got {f!r}")
    enclosing = _enclosing()
    chosen = mesh if mesh is not None else enclosing[0] if enclosing else get_mesh()
    if chosen is None:
        raise ValueError("shard_map needs a mesh: pass mesh=..., or set one with "
                         "lamella.core.sharding.set_mesh / use_mesh")
    if not isinstance(chosen, Mesh):
        raise TypeError(f"shard_map: mesh must be a Mesh, got {type(chosen).__name__}")
    from lamella.core.api_util import abstractify_args
    from lamella.core.config import config
    from lamella.core.trace import current_trace, eval_trace

    requested = frozenset(axis_names)
    if not requested <= set(chosen.axis_names):
        raise ValueError(f"shard_map requires axis_names={set(requested)} to be a subset of "
                         f"mesh.axis_names={set(chosen.axis_names)}")
    traces: dict = {}  # (tree, avals, config) -> (params, out tree): eager calls reuse them

    def mapped(*args):
        flat, tree = tree_flatten(args)
        avals = abstractify_args(flat, lambda: [f"argument {i}" for i in range(len(flat))],
                                 "shard_map")
        if current_trace() is eval_trace and _enclosing() is None:
            key = (tree, tuple(avals), config.trace_key())
            traced = traces.get(key)
            if traced is None:
                traced = traces[key] = _trace_call(tree, avals)
        else:  # the body may close over this trace's values: traced for this call only
            traced = _trace_call(tree, avals)
        params, out_tree = traced
        body, closed_over = hoist_tracer_consts(params["jaxpr"].jaxpr, params["jaxpr"].consts)
        if closed_over:  # values of an enclosing trace: whole on every device, as in JAX
            params = dict(params, jaxpr=body, in_specs=(
                *(((),) * len(v.aval.shape) for v in closed_over), *params["in_specs"]))
        return tree_unflatten(out_tree, list(shard_map_p.bind(*closed_over, *flat, **params)))

    def _trace_call(tree, avals):
        manual = _manual_axes(chosen, requested)
        leaf_specs = _broadcast_specs(in_specs, tree, len(avals), "in_specs")
        specs = tuple(_spec(s, a.ndim, "in_specs") for s, a in zip(leaf_specs, avals))
        _check_manual(specs, chosen, manual, "in_specs")
        local = [_local_aval(a, s, chosen, "in_specs") for a, s in zip(avals, specs)]
        out_tree = []

        def body(*xs):
            leaves, t = tree_flatten(f(*tree_unflatten(tree, list(xs))))
            out_tree.append(t)
            return leaves
        closed = _trace(body, local, chosen, manual, bool(check_vma), specs)
        leaf_out = _broadcast_specs(out_specs, out_tree[0], len(closed.out_avals), "out_specs")
        outs_specs = tuple(_spec(s, a.ndim, "out_specs")
                           for s, a in zip(leaf_out, closed.out_avals))
        for names in (n for s in outs_specs for n in s):
            for n in names:
                if n not in chosen.axis_names:
                    raise ValueError(f"shard_map out_specs: the spec names the axis {n!r}, "
                                     f"which the mesh lacks (its axes: {chosen.axis_names})")
        _check_manual(outs_specs, chosen, manual, "out_specs")
        if check_vma:
            _check_vma(f, chosen, manual, out_tree[0], leaf_out, closed.out_avals, outs_specs)
        return dict(jaxpr=closed, mesh=chosen, manual_axes=manual, in_specs=specs,
                    out_specs=outs_specs, check_vma=bool(check_vma)), out_tree[0]

    mapped.__name__ = getattr(f, "__name__", "shard_map")
    mapped.__wrapped__ = f
    return mapped


def _same_devices(a: Mesh, b: Mesh) -> bool:
    return a.axis_names == b.axis_names and a.devices.shape == b.devices.shape and all(
        x.id == y.id for x, y in zip(a.devices.flat, b.devices.flat))


def _manual_axes(mesh: Mesh, requested: frozenset) -> frozenset:
    """The axes a shard_map called now is manual over: `requested` (all axes not already
    manual if empty), checked against the shard_maps it is nested in."""
    enclosing = _enclosing()
    outer = enclosing[1] if enclosing else frozenset()
    if enclosing and not _same_devices(enclosing[0], mesh):
        raise ValueError(f"The context mesh {manual_mesh(enclosing[0], outer)._short()} "
                         f"should match the mesh passed to shard_map {mesh._short()}")
    already = sorted(requested & outer, key=mesh.axis_names.index)
    if already:
        raise ValueError(f"shard_map axis_names={set(requested)}: the mesh axes {already} "
                         "are already manual in the enclosing shard_map; a nested shard_map "
                         "is manual over other axes (its block is the enclosing block)")
    manual = requested or frozenset(n for n in mesh.axis_names if n not in outer)
    if not manual:
        raise ValueError("shard_map inside shard_map: every mesh axis is already manual, "
                         "so there is no axis left to map over")
    return manual


def _check_manual(specs: Sequence[Spec], mesh: Mesh, manual: frozenset, what: str) -> None:
    """Specs name only the manual axes (an axis the mesh lacks is reported later)."""
    for spec in specs:
        for n in (n for names in spec for n in names):
            if n not in manual and n in mesh.axis_names:
                raise ValueError(
                    f"shard_map {what} argument must refer to an axis marked as manual "
                    f"({manual!r}), but:\n\n  {what} refers to {n!r}\n\n"
                    f"Check the {what} values passed to shard_map.")


def _check_vma(f: Callable, mesh: Mesh, manual: frozenset, tree: Any, user_specs: list,
               avals: Sequence[ShapedArray], specs: Sequence[Spec]) -> None:
    """Each output varies only over manual axes its out_spec splits it over (JAX's
    check_vma): a spec that replicates a varying value would silently return one
    device's block."""
    from lamella.core.tree_util import keystr, tree_flatten_with_path

    paths = [keystr(p) for p, _ in tree_flatten_with_path(
        tree_unflatten(tree, list(range(len(avals)))))[0]]
    msgs = []
    for path, user_spec, aval, spec in zip(paths, user_specs, avals, specs):
        named = {n for names in spec for n in names}
        unmentioned = [n for n in mesh.axis_names if n in manual and n not in named]
        if not set(unmentioned) & aval.vma:
            continue
        shown = user_spec if user_spec is not None else PartitionSpec()
        if len(unmentioned) > 1:
            def axes(names):
                return ",".join(n for n in mesh.axis_names if n in names)
            msgs.append(
                f"* out_specs{path} is {shown!r} which implies that the corresponding "
                f"output value is only varying across mesh axes {{{axes(named)}}} and not "
                f"{{{axes(set(unmentioned) & aval.vma)}}}, but it was inferred to be "
                f"possibly varying over {{{axes(aval.vma)}}}")
        else:
            msgs.append(
                f"* out_specs{path} is {shown!r} which implies that the corresponding "
                f"output value is replicated across mesh axis '{unmentioned[0]}', but "
                "could not infer replication over any axes")
    if not msgs:
        return
    if len(msgs) == 1:
        msgs = [msgs[0][2:]]
    name = getattr(f, "__name__", str(f))
    raise ValueError(
        f"shard_map applied to the function '{name}' was given out_specs which require "
        "replication which can't be statically inferred given the mesh:\n\n"
        f"The mesh given has shape {tuple(mesh.shape.values())} with corresponding axis "
        f"names {mesh.axis_names}.\n\n" + "\n\n".join(msgs) + "\n\n"
        "Check if these output values are meant to be replicated over those mesh axes. "
        "If not, consider revising the corresponding out_specs entries. If so, consider "
        "disabling the check by passing the check_vma=False argument to "
        "`lamella.core.shard_map`.")
