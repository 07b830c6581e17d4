"""The batching interpreter behind `vmap` (JAX's `jax.interpreters.batching`).

The public `vmap` is in `vmap_api.py`; the rule tables and axis helpers are in
`rules.py`, re-exported here.

A `BatchTracer` holds a value with one extra axis, `batch_dim`, that the user's
function cannot see. A batching rule takes the unwrapped values and their batch
dims (`not_mapped` for values shared by the whole batch) and returns outputs
and their batch dims:

    rule(batched_args, batch_dims, **params) -> (out, out_dim)

Rules that need the axis itself (its size or name, for collectives) go in
`fancy_primitive_batchers` and take the `AxisData` first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lamella.core.avals import ShapedArray
from lamella.core.jaxpr import ClosedJaxpr, eval_jaxpr
from lamella.core.primitive import Primitive
from lamella.core.rules import (
    AxisData,
    Zero,
    at_front,
    broadcast,
    collective_axis_names,
    defbroadcasting,
    defvectorized,
    fancy_primitive_batchers,
    matchaxis,
    moveaxis,
    not_mapped,
    primitive_batchers,
)
from lamella.core.source_info import call_site
from lamella.core.staging import trace_to_jaxpr
from lamella.core.trace import (
    Trace,
    Tracer,
    TraceTag,
    aval_of,
    check_foreign_tracer,
    current_trace,
    set_current_trace,
)
from lamella.core.util import weakref_lru_cache

__all__ = [  # the interpreter, and the rule tables and helpers re-exported from rules
    "AxisData", "BatchTrace", "BatchTracer", "at_front", "axis_primitive_batchers",
    "batch_jaxpr", "bdim_at_front", "broadcast", "collective_axis_names", "defbroadcasting",
    "defreducer", "defvectorized", "fancy_primitive_batchers", "mapped_aval", "matchaxis",
    "moveaxis", "not_mapped", "primitive_batchers", "unmapped_aval",
]

def _remove_axis(aval: ShapedArray, dim: int) -> ShapedArray:
    shape = aval.shape[:dim] + aval.shape[dim + 1:]
    if aval.sharding is None:
        return aval.update(shape=shape)
    return aval.update(shape=shape, sharding=_respec(aval, lambda spec: spec.pop(dim), shape))


def _insert_axis(aval: ShapedArray, dim: int, size: int) -> ShapedArray:
    shape = aval.shape[:dim] + (size,) + aval.shape[dim:]
    if aval.sharding is None:
        return aval.update(shape=shape)
    return aval.update(shape=shape,
                       sharding=_respec(aval, lambda spec: spec.insert(dim, None), shape))


def _respec(aval: ShapedArray, change: Callable[[list], Any], shape: tuple) -> Any:
    """The explicit sharding of `aval` with its spec changed in place by `change`: a
    batch dimension is unsharded, the others keep their mesh axes."""
    from lamella.core.sharding_rules import spec_of, typed_sharding
    spec = list(spec_of(aval))
    change(spec)
    return typed_sharding(aval.sharding.mesh, spec, len(shape))


def mapped_aval(size: int, axis: int | None, aval: ShapedArray) -> ShapedArray:
    """The type of one batch element of a value of type `aval` batched at `axis`.

    >>> import numpy as np
    >>> mapped_aval(3, 0, ShapedArray((3, 2), np.float32)).str_short()
    'f32[2]'
    """
    if axis is not_mapped:
        return aval
    if aval.shape[axis] != size:
        raise ValueError(f"mapped_aval: axis {axis} of {aval.str_short()} has size "
                         f"{aval.shape[axis]}, not the batch size {size}")
    return _remove_axis(aval, axis)


def unmapped_aval(size: int, axis: int | None, aval: ShapedArray,
                  explicit_mesh_axis: Any = None) -> ShapedArray:
    """The type of a whole batch of `size` values of type `aval`, stacked at `axis`.

    >>> import numpy as np
    >>> unmapped_aval(3, 1, ShapedArray((2,), np.float32)).str_short()
    'f32[2,3]'
    """
    if axis is not_mapped:
        return aval
    return _insert_axis(aval, axis, size)


def bdim_at_front(x: Any, bdim: int | None, size: int, mesh_axis: Any = None) -> Any:
    """`x` with its batch axis first (broadcast to `size` if it has none)."""
    return at_front(x, bdim, size)


def defreducer(prim: Primitive) -> None:
    """Batching for a reduction whose `axes` param lists the reduced axes: the batch axis
    is kept and the reduced axes renumbered around it."""
    def rule(args, dims, *, axes, **params):
        (x,), (d,) = args, dims
        moved = tuple(a + (a >= d) for a in axes)
        out = prim.bind(x, axes=moved, **params)
        return out, d - sum(a < d for a in moved)
    primitive_batchers[prim] = rule


axis_primitive_batchers = fancy_primitive_batchers
"""JAX's name for the batching rules that need the axis (collectives)."""


class BatchTracer(Tracer):
    """A value with a hidden batch axis at `batch_dim`."""

    __slots__ = ("val", "batch_dim")

    def __init__(self, trace: BatchTrace, val: Any, batch_dim: int):
        self._trace = trace
        self.val = val
        self.batch_dim = batch_dim

    @property
    def aval(self) -> ShapedArray:
        return _remove_axis(aval_of(self.val), self.batch_dim)

    def _describe(self, type_of) -> str:
        return f"VmapTracer(aval={type_of(self.aval)}, batched={type_of(aval_of(self.val))})"

    def _origin(self) -> str:
        return (f"The value is batched by {self._trace.description}, so it differs across "
                "the batch and has no single concrete value.")


class BatchTrace(Trace):
    """Interprets primitives on batched values with the batching rules."""

    def __init__(self, parent: Trace, tag: TraceTag, axis_data: AxisData,
                 description: str = "vmap"):
        self.parent = parent
        self.tag = tag
        self.axis_data = axis_data
        self.description = description

    def to_batch_info(self, x: Any) -> tuple[Any, int | None]:
        if isinstance(x, BatchTracer) and x._trace.tag is self.tag:
            return x.val, x.batch_dim
        if isinstance(x, Tracer):
            check_foreign_tracer(x)
        return x, not_mapped

    def wrap(self, val: Any, dim: int | None) -> Any:
        return val if dim is not_mapped else BatchTracer(self, val, dim)

    def process_primitive(self, primitive, args, params):
        vals, dims = zip(*map(self.to_batch_info, args)) if args else ((), ())
        if all(d is not_mapped for d in dims) and not self._acts_over_this_axis(primitive,
                                                                                params):
            with set_current_trace(self.parent):
                return primitive.bind(*vals, **params)
        with set_current_trace(self.parent), call_site():
            fancy = fancy_primitive_batchers.get(primitive)
            if fancy is not None:
                out, out_dims = fancy(self.axis_data, vals, dims, **params)
            else:
                rule = primitive_batchers.get(primitive)
                if rule is None:
                    raise NotImplementedError(
                        f"Batching rule for primitive '{primitive.name}' not implemented: "
                        f"register one in batching.primitive_batchers[{primitive.name}_p] "
                        "to use it under vmap.")
                out, out_dims = rule(vals, dims, **params)
        if primitive.multiple_results:
            return [self.wrap(o, d) for o, d in zip(out, out_dims)]
        return self.wrap(out, out_dims)

    def _acts_over_this_axis(self, primitive, params) -> bool:
        names_of = collective_axis_names.get(primitive)
        return (names_of is not None and self.axis_data.name is not None
                and self.axis_data.name in names_of(params))

    # custom_jvp / custom_vjp: batch the function and its rules, all outputs at axis 0.

    def _subtrace(self) -> BatchTrace:
        return BatchTrace(current_trace(), self.tag, self.axis_data, self.description)

    def _batched_fun(self, fun: Callable, dims) -> Callable:
        size = self.axis_data.size

        def batched(*vals):
            sub = self._subtrace()
            with set_current_trace(sub):
                outs = fun(*map(sub.wrap, vals, dims))
            sub.invalidate()
            return [at_front(*sub.to_batch_info(o), size) for o in outs]
        return batched

    def process_custom_jvp_call(self, primitive, fun, jvp, args, symbolic_zeros):
        vals, dims = zip(*map(self.to_batch_info, args)) if args else ((), ())
        size = self.axis_data.size
        # Which outputs carry the batch axis is known only once the function (or its
        # rule) has run; the first of the two to run decides, the other follows it. An
        # output nothing batched stays unbatched (jacfwd's primal outputs, say).
        out_dims: list[int | None] = []

        def settle(outs, found, batched=None):
            if not out_dims:
                batched = batched or [d is not not_mapped for d in found]
                out_dims.extend(0 if b else not_mapped for b in batched)
            try:
                return [matchaxis(size, d, want, o) for o, d, want in zip(outs, found, out_dims)]
            except ValueError:
                raise ValueError("custom_jvp under vmap: the function and its JVP rule batch "
                                 "their primal outputs differently (one depends on a batched "
                                 "value, the other not)") from None

        def batched_fun(*inner):
            sub = self._subtrace()
            with set_current_trace(sub):
                outs = fun(*map(sub.wrap, inner, dims))
            sub.invalidate()
            outs, found = zip(*map(sub.to_batch_info, outs)) if outs else ((), ())
            return settle(outs, found)

        def batched_jvp(primals, tangents):
            sub = self._subtrace()
            primals_in = list(map(sub.wrap, primals, dims))
            tangents_in = [Zero(_remove_axis(t.aval, d)) if type(t) is Zero and d is not None
                           else t if type(t) is Zero else sub.wrap(t, d)
                           for t, d in zip(tangents, dims)]
            with set_current_trace(sub):
                primal_outs, tangent_outs = jvp(primals_in, tangents_in)
            sub.invalidate()
            primal_info = [sub.to_batch_info(p) for p in primal_outs]
            tangent_info = [(t, not_mapped) if type(t) is Zero else sub.to_batch_info(t)
                            for t in tangent_outs]
            # A primal is batched if it or its tangent is: they share one batch layout.
            batched = [pd is not not_mapped or td is not not_mapped
                       for (_, pd), (_, td) in zip(primal_info, tangent_info)]
            primal_outs = settle([p for p, _ in primal_info], [d for _, d in primal_info],
                                 batched)
            tangent_outs = [Zero(t.aval if want is not_mapped else _insert_axis(t.aval, 0, size))
                            if type(t) is Zero else matchaxis(size, td, want, t)
                            for (t, td), want in zip(tangent_info, out_dims)]
            return primal_outs, tangent_outs

        with set_current_trace(self.parent):
            outs = self.parent.process_custom_jvp_call(primitive, batched_fun, batched_jvp,
                                                       vals, symbolic_zeros)
        return [self.wrap(o, d) for o, d in zip(outs, out_dims)]

    def process_custom_vjp_call(self, primitive, fun, fwd, bwd, args, out_trees, symbolic_zeros):
        vals, dims = zip(*map(self.to_batch_info, args)) if args else ((), ())
        size = self.axis_data.size  # always batched, as for custom_jvp above

        def batched_fwd(primals, nonzeros):
            sub = self._subtrace()
            with set_current_trace(sub):
                outs, res = fwd(list(map(sub.wrap, primals, dims)), nonzeros)
            sub.invalidate()
            return ([at_front(*sub.to_batch_info(o), size) for o in outs],
                    [at_front(*sub.to_batch_info(r), size) for r in res])

        def batched_bwd(res, cts):
            sub = self._subtrace()
            res_in = [sub.wrap(r, 0) for r in res]
            cts_in = [Zero(_remove_axis(c.aval, 0)) if type(c) is Zero else sub.wrap(c, 0)
                      for c in cts]
            with set_current_trace(sub):
                cts_out = bwd(res_in, cts_in)
            sub.invalidate()

            def to_arg_dim(c, d):  # the argument's batch dim; summed if it has none
                val, dim = sub.to_batch_info(c)
                return matchaxis(size, dim, d, val, sum_match=True)
            return [c if c is None or type(c) is Zero else to_arg_dim(c, d)
                    for c, d in zip(cts_out, dims)]

        with set_current_trace(self.parent):
            outs = self.parent.process_custom_vjp_call(
                primitive, self._batched_fun(fun, dims), batched_fwd, batched_bwd, vals,
                out_trees, symbolic_zeros)
        return [BatchTracer(self, o, 0) for o in outs]


# ---------------------------------------------------------------------------
# Batching a whole jaxpr (for higher-order primitives).


def batch_jaxpr(closed: ClosedJaxpr, axis_data: AxisData, in_dims: tuple,
                instantiate: bool | tuple[bool, ...] = False
                ) -> tuple[ClosedJaxpr, tuple[int | None, ...]]:
    """The jaxpr computing `closed` over a batch: inputs batched at `in_dims`,
    outputs batched at axis 0 (or unbatched, unless `instantiate` says so)."""
    if isinstance(instantiate, bool):
        instantiate = (instantiate,) * len(closed.out_avals)
    return _batch_jaxpr(closed, axis_data, tuple(in_dims), tuple(instantiate))


@weakref_lru_cache()
def _batch_jaxpr(closed, axis_data, in_dims, instantiate):
    size = axis_data.size
    in_avals = [a if d is not_mapped else _insert_axis(a, d, size)
                for a, d in zip(closed.in_avals, in_dims)]
    out_dims: list = []

    def batched(*vals):
        trace = BatchTrace(current_trace(), TraceTag(), axis_data)
        with set_current_trace(trace):
            outs = eval_jaxpr(closed.jaxpr, closed.consts, *map(trace.wrap, vals, in_dims))
        trace.invalidate()
        results = []
        for out, inst in zip(outs, instantiate):
            val, dim = trace.to_batch_info(out)
            if dim is not_mapped and not inst:
                out_dims.append(not_mapped)
                results.append(val)
            else:
                out_dims.append(0)
                results.append(at_front(val, dim, size))
        return results

    jaxpr, consts = trace_to_jaxpr(batched, in_avals)
    return ClosedJaxpr(jaxpr, consts), tuple(out_dims)
