"""Batching: the trace behind `vmap`, and the batching rule tables.

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
from typing import Any, NamedTuple

from lamella.core.avals import ShapedArray
from lamella.core.jaxpr import ClosedJaxpr, eval_jaxpr
from lamella.core.source_info import call_site
from lamella.core.staging import trace_to_jaxpr
from lamella.core.trace import (
    Trace,
    Tracer,
    aval_of,
    check_foreign_tracer,
    current_trace,
    set_current_trace,
)
from lamella.core.util import weakref_lru_cache

not_mapped = None
"""The batch dim of a value that is the same for every batch element."""

primitive_batchers: dict[Any, Callable] = {}
fancy_primitive_batchers: dict[Any, Callable] = {}


class AxisData(NamedTuple):
    """The axis being vmapped over: its name (for collectives) and size."""

    name: Any
    size: int
    spmd_name: Any = None


def _remove_axis(aval: ShapedArray, dim: int) -> ShapedArray:
    return aval.update(shape=aval.shape[:dim] + aval.shape[dim + 1:])


def _insert_axis(aval: ShapedArray, dim: int, size: int) -> ShapedArray:
    return aval.update(shape=aval.shape[:dim] + (size,) + aval.shape[dim:])


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

    def _origin(self) -> str:
        return (f"The value is batched by {self._trace.description}, so it differs across "
                "the batch and has no single concrete value.")


class BatchTrace(Trace):
    """Interprets primitives on batched values with the batching rules."""

    def __init__(self, parent: Trace, tag: object, axis_data: AxisData,
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
        if all(d is not_mapped for d in dims):
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
        from lamella.core.ad import Zero
        vals, dims = zip(*map(self.to_batch_info, args)) if args else ((), ())
        # Even with no batched argument the function may close over this trace's
        # tracers, so it always runs batched (its outputs batched at axis 0).
        size = self.axis_data.size

        def batched_jvp(primals, tangents):
            sub = self._subtrace()
            primals_in = list(map(sub.wrap, primals, dims))
            tangents_in = [Zero(_remove_axis(t.aval, d)) if type(t) is Zero and d is not None
                           else t if type(t) is Zero else sub.wrap(t, d)
                           for t, d in zip(tangents, dims)]
            with set_current_trace(sub):
                primal_outs, tangent_outs = jvp(primals_in, tangents_in)
            sub.invalidate()
            primal_outs = [at_front(*sub.to_batch_info(p), size) for p in primal_outs]
            tangent_outs = [Zero(_insert_axis(t.aval, 0, size)) if type(t) is Zero
                            else at_front(*sub.to_batch_info(t), size) for t in tangent_outs]
            return primal_outs, tangent_outs

        with set_current_trace(self.parent):
            outs = self.parent.process_custom_jvp_call(
                primitive, self._batched_fun(fun, dims), batched_jvp, vals, symbolic_zeros)
        return [BatchTracer(self, o, 0) for o in outs]

    def process_custom_vjp_call(self, primitive, fun, fwd, bwd, args, out_trees, symbolic_zeros):
        from lamella.core.ad import Zero
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
# Moving batch axes around (with core's structural primitives).


def moveaxis(x: Any, src: int, dst: int) -> Any:
    from lamella.core import structural
    if src == dst:
        return x
    ndim = aval_of(x).ndim
    perm = [i for i in range(ndim) if i != src]
    perm.insert(dst, src)
    return structural.transpose(x, tuple(perm))


def broadcast(x: Any, size: int, axis: int) -> Any:
    """Adds an axis of length `size` at `axis`, repeating `x` along it."""
    from lamella.core import structural
    aval = aval_of(x)
    shape = aval.shape[:axis] + (size,) + aval.shape[axis:]
    dims = tuple(i if i < axis else i + 1 for i in range(aval.ndim))
    return structural.broadcast_in_dim(x, shape, dims)


def matchaxis(size: int, src: int | None, dst: int | None, x: Any,
              sum_match: bool = False) -> Any:
    """Moves (or creates, or sums away with `sum_match`) a batch axis from src to dst."""
    from lamella.core import structural
    if src == dst:
        return x
    if src is not_mapped:
        return broadcast(x, size, dst)
    if dst is not_mapped:
        if sum_match:
            return structural.reduce_sum(x, (src,))
        raise ValueError(f"can't match a batched axis {src} to an unbatched value")
    return moveaxis(x, src, dst)


def at_front(x: Any, dim: int | None, size: int) -> Any:
    """`x` with its batch axis at 0, broadcasting unbatched values."""
    return matchaxis(size, dim, 0, x)


# ---------------------------------------------------------------------------
# Rule helpers.


def defvectorized(primitive) -> None:
    """Batching for primitives that act elementwise on one operand."""
    def rule(args, dims, **params):
        (x,), (d,) = args, dims
        return primitive.bind(x, **params), d
    primitive_batchers[primitive] = rule


def defbroadcasting(primitive) -> None:
    """Batching for n-ary primitives with NumPy broadcasting semantics.

    Batched operands get their batch axis at the front, padded with size-1 axes
    to a common rank; unbatched operands are left for broadcasting to align.
    """
    def rule(args, dims, **params):
        ranks = [aval_of(x).ndim - (d is not not_mapped) for x, d in zip(args, dims)]
        rank = max(ranks)
        aligned = []
        for x, d, r in zip(args, dims, ranks):
            if d is not_mapped:
                aligned.append(x)
                continue
            x = moveaxis(x, d, 0)
            if r < rank:
                from lamella.core import structural
                shape = aval_of(x).shape
                x = structural.reshape(x, (shape[0],) + (1,) * (rank - r) + shape[1:])
            aligned.append(x)
        out = primitive.bind(*aligned, **params)
        if primitive.multiple_results:
            return out, [0] * len(out)
        return out, 0
    primitive_batchers[primitive] = rule


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
        trace = BatchTrace(current_trace(), object(), axis_data)
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
