"""Lowering functions whose shapes hold symbolic dimensions (shape-polymorphic export).

A symbolic dimension lowers as a dynamic size (``tensor<?x4xf32>``). Each
function of the module derives its dimension variables from its arguments
(``stablehlo.get_dimension_size``, as i64 scalars); @main also asserts, with
JAX's ``shape_assertion`` custom calls, that every variable is >= 1, that
the sizes of the arguments agree with one another and with the export's
constraints. Operations whose result shape is an attribute use the dynamic
StableHLO forms, their sizes computed from the variables. StableHLO's shape
refinement later makes every shape static for concrete argument sizes.

Only primitives known to lower correctly with dynamic sizes are accepted; any
other one meeting a symbolic shape is an error naming it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lamella.core import Primitive, shape_poly
from lamella.core.shape_poly import DimExpr, is_symbolic_shape
from lamella.lax.lowering import (
    aval_to_ir_type,
    constant,
    func,
    hlo,
    ir,
    register_lowering,
    shape_tensor,
    symbolic_hooks,
)

__all__ = ["SymbolicFunction", "broadcast_in_dim", "check_supported", "dim_as_value_p",
           "dim_value", "dynamic_broadcast", "iota", "reshape", "slice", "splat",
           "shape_value", "supports_symbolic"]


class _State(threading.local):
    def __init__(self) -> None:
        self.dims: list[dict[str, ir.Value]] = []


_state = _State()

# Primitives whose lowering handles symbolic shapes.
_supported: set[str] = set()


def supports_symbolic(*names: str) -> None:
    """Declares that the lowerings of the primitives ``names`` handle dynamic sizes."""
    _supported.update(names)


def check_supported(primitive: Any, avals: Sequence[Any]) -> None:
    """Raises when ``primitive`` meets a symbolic shape and cannot lower it."""
    if primitive.name not in _supported and any(
            is_symbolic_shape(getattr(a, "shape", ())) for a in avals):
        shapes = ", ".join(a.str_short() for a in avals if hasattr(a, "str_short"))
        raise ValueError(f"The primitive '{primitive.name}' does not support symbolic "
                         f"dimensions (shape-polymorphic export); it meets {shapes}")


def _i64() -> ir.Type:
    return ir.RankedTensorType.get([], ir.IntegerType.get_signless(64))


class SymbolicFunction:
    """While lowering one function's body: its dimension variables, read from its
    arguments at entry (``with SymbolicFunction(avals, args, main=...)``)."""

    def __init__(self, avals: Sequence[Any], args: Sequence[ir.Value], *, main: bool = False):
        self.avals, self.args, self.main = avals, args, main

    def __enter__(self) -> SymbolicFunction:
        sizes: dict[str, ir.Value] = {}
        where: dict[str, str] = {}
        occurrences = []
        for i, (aval, arg) in enumerate(zip(self.avals, self.args)):
            for axis, d in enumerate(getattr(aval, "shape", ())):
                if not isinstance(d, DimExpr):
                    continue
                size = hlo.convert(_i64(), hlo.get_dimension_size(arg, axis))
                name = d.variable_name
                if name is not None and name not in sizes:
                    sizes[name], where[name] = size, f"args[{i}].shape[{axis}]"
                else:
                    occurrences.append((d, size, f"args[{i}].shape[{axis}]"))
        for d, size, place in occurrences:  # a variable seen only as k*v + c: solve it
            linear = d.as_linear()
            if linear is not None and linear[0] not in sizes:
                v, k, c = linear
                sizes[v] = _floor_div(hlo.subtract(size, constant(np.int64(c))),
                                      constant(np.int64(k)))
                where[v] = f"{place} (= {d})"
        missing = sorted(shape_poly.all_dim_vars([a.shape for a in self.avals]) - sizes.keys())
        if missing:
            raise ValueError(f"cannot lower with symbolic dimensions: the dimension variables "
                             f"{missing} must each be found from some argument dimension "
                             "that is k*v + c (e.g. 'b' or '2*b', not only 'a*b')")
        _state.dims.append(sizes)
        if self.main:
            self._assert_shapes(sizes, where, occurrences)
        return self

    def __exit__(self, *exc: Any) -> None:
        _state.dims.pop()

    def _assert_shapes(self, sizes: dict[str, ir.Value], where: dict[str, str],
                       occurrences: list) -> None:
        # The messages' {i} are filled in with the values of `inputs` (the variables
        # first) by whoever runs the assertions: StableHLO's shape refinement.
        inputs = list(sizes.values())
        found = ", ".join(f"'{v}' = {{{k}}} from {where[v]}" for k, v in enumerate(sizes))
        specs = "; ".join(f"args[{i}].shape = {tuple(a.shape)}"
                          for i, a in enumerate(self.avals) if is_symbolic_shape(a.shape))
        context = f" (with {found}; the arguments were exported as {specs})"
        signed = hlo.ComparisonTypeAttr.get("SIGNED")

        def holds(value: ir.Value, direction: str, than: ir.Value) -> ir.Value:
            return hlo.compare(value, than, hlo.ComparisonDirectionAttr.get(direction),
                               compare_type=signed)

        for k, name in enumerate(sizes):
            _shape_assertion(holds(sizes[name], "GE", constant(np.int64(1))), inputs,
                             f"Shape assertion failed: dimension variable '{name}' must be "
                             f">= 1, got {{{k}}}{context}")
        for d, size, place in occurrences:
            expected = dim_value(d)
            n = len(inputs)
            _shape_assertion(holds(size, "EQ", expected), [*inputs, size, expected],
                             f"Shape assertion failed: {place} is {{{n}}}, but the "
                             f"specification '{d}' is {{{n + 1}}}{context}")
        scopes = {id(d.scope): d.scope for a in self.avals for d in a.shape
                  if isinstance(d, DimExpr)}
        for scope in scopes.values():
            for kind, diff, text in scope.constraints:
                if not diff.variables() <= sizes.keys():
                    continue  # about variables this function does not take
                ok = holds(dim_value(diff), "EQ" if kind == "==" else "GE",
                           constant(np.int64(0)))
                _shape_assertion(ok, inputs, f"Shape assertion failed: the symbolic shape "
                                 f"constraint {text} does not hold{context}")


def _shape_assertion(ok: ir.Value, inputs: list[ir.Value], message: str) -> None:
    # JAX's convention: shape refinement evaluates these and reports `message`, its {i}
    # replaced by the values of the inputs.
    op = hlo.CustomCallOp([], [ok, *inputs], call_target_name="shape_assertion",
                          has_side_effect=True)
    op.attributes["api_version"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 2)
    op.attributes["error_message"] = ir.StringAttr.get(message)


def _current() -> dict[str, ir.Value]:
    if not _state.dims:
        raise ValueError("a symbolic dimension is lowered outside a function whose "
                         "arguments define it")
    return _state.dims[-1]


def _floor_div(x: ir.Value, k: ir.Value) -> ir.Value:
    # StableHLO divides toward zero; floor division steps down when signs differ and
    # the division is inexact.
    q, r = hlo.divide(x, k), hlo.remainder(x, k)
    zero = constant(np.int64(0))
    inexact = hlo.compare(r, zero, hlo.ComparisonDirectionAttr.get("NE"))
    signs = hlo.compare(hlo.compare(r, zero, hlo.ComparisonDirectionAttr.get("LT")),
                        hlo.compare(k, zero, hlo.ComparisonDirectionAttr.get("LT")),
                        hlo.ComparisonDirectionAttr.get("NE"))
    return hlo.select(hlo.and_(inexact, signs), hlo.subtract(q, constant(np.int64(1))), q)


def _floor_mod(x: ir.Value, k: ir.Value) -> ir.Value:
    return hlo.subtract(x, hlo.multiply(_floor_div(x, k), k))


def dim_value(d: int | DimExpr, dtype: Any = np.int64) -> ir.Value:
    """The size ``d`` as a scalar of ``dtype``, computed from the dimension variables."""
    if not isinstance(d, DimExpr):
        return constant(np.asarray(d, dtype))
    dims = _current()

    def variable(name: str) -> ir.Value:
        if name not in dims:
            raise ValueError(f"the symbolic dimension '{d}' is used in a function (a nested "
                             f"jit, say) none of whose arguments has '{name}' in its shape; "
                             "pass the value as an argument instead of closing over it")
        return dims[name]

    value = d.evaluate_with(variable, hlo.add, hlo.multiply,
                            lambda x, k: _floor_div(x, constant(np.int64(k))),
                            lambda x, k: _floor_mod(x, constant(np.int64(k))),
                            lambda c: constant(np.int64(c)),
                            maximum=hlo.maximum, minimum=hlo.minimum)
    if np.dtype(dtype) != np.int64:
        from lamella.lax.mlir_context import element_type
        value = hlo.convert(ir.RankedTensorType.get([], element_type(np.dtype(dtype))), value)
    return value


def shape_value(shape: Sequence[int | DimExpr]) -> ir.Value:
    """``shape`` as the 1-D i32 tensor the dynamic StableHLO operations take."""
    return shape_tensor(None, [d if isinstance(d, int) else dim_value(d) for d in shape])


def dynamic_broadcast(result_type: ir.Type, value: ir.Value, shape: Sequence[Any],
                      dims: Sequence[int]) -> ir.Value:
    """``broadcast_in_dim`` of ``value`` to ``shape`` (whose sizes may be symbolic)."""
    return hlo.dynamic_broadcast_in_dim(result_type, value, shape_value(shape), list(dims))


# A dimension used as a number in traced code (``x / x.shape[0]``): a weakly typed
# integer scalar computed from the dimension variables (JAX's primitive).
dim_as_value_p = Primitive("dim_as_value")
dim_as_value_p.def_abstract_eval(lambda *, dim: dim.aval)


@dim_as_value_p.def_impl
def _dim_as_value_impl(*, dim: DimExpr) -> Any:
    raise shape_poly.InconclusiveDimensionOperation(
        f"Symbolic dimension '{dim}' has a value only inside a function traced for export")


register_lowering(dim_as_value_p, lambda ctx, *, dim: [
    dim_value(dim, ctx.avals_out[0].dtype)])
supports_symbolic("dim_as_value")
shape_poly._dimension_as_value = lambda dim: dim_as_value_p.bind(dim=dim)
symbolic_hooks.update(function=SymbolicFunction, dim_value=dim_value, check=check_supported)


# --- operations whose result shape is an attribute, in their dynamic forms ------------
def reshape(aval_out: Any, x: ir.Value) -> ir.Value:
    """``x`` reshaped to ``aval_out``'s shape (`dynamic_reshape` when it is symbolic)."""
    result = aval_to_ir_type(aval_out)
    if is_symbolic_shape(aval_out.shape):
        return hlo.dynamic_reshape(result, x, shape_value(aval_out.shape))
    return hlo.reshape(result, x)


def broadcast_in_dim(aval_out: Any, x: ir.Value, dims: Sequence[int]) -> ir.Value:
    """``x`` broadcast to ``aval_out``'s shape (`dynamic_broadcast_in_dim` when symbolic)."""
    result = aval_to_ir_type(aval_out)
    if is_symbolic_shape(aval_out.shape):
        return dynamic_broadcast(result, x, aval_out.shape, dims)
    return hlo.broadcast_in_dim(result, x, list(dims))


def iota(aval_out: Any, dimension: int) -> ir.Value:
    """An iota of ``aval_out`` along ``dimension`` (`dynamic_iota` when symbolic)."""
    result = aval_to_ir_type(aval_out)
    if is_symbolic_shape(aval_out.shape):
        return hlo.dynamic_iota(result, shape_value(aval_out.shape), iota_dimension=dimension)
    return hlo.iota(result, dimension)


def slice(aval_out: Any, x: ir.Value, start: Sequence[Any], limit: Sequence[Any],
          strides: Sequence[int]) -> ir.Value:
    """A strided slice of ``x`` (`real_dynamic_slice` when a bound is symbolic)."""
    if is_symbolic_shape((*start, *limit)) or is_symbolic_shape(aval_out.shape):
        return hlo.real_dynamic_slice(aval_to_ir_type(aval_out), x, shape_value(start),
                                      shape_value(limit), shape_value(strides))
    return hlo.slice(x, list(start), list(limit), list(strides))


def dynamic_slice(aval_in: Any, aval_out: Any, x: ir.Value, indices: Sequence[ir.Value],
                  sizes: Sequence[Any]) -> ir.Value:
    """`dynamic_slice` with symbolic window sizes: `real_dynamic_slice` from starts
    clamped (as dynamic_slice's are) so that the window fits."""
    starts, limits = [], []
    for d, size, index in zip(aval_in.shape, sizes, indices):
        index = hlo.convert(_i64(), index)
        size = dim_value(size)
        start = hlo.clamp(constant(np.int64(0)), index, hlo.subtract(dim_value(d), size))
        starts.append(start)
        limits.append(hlo.add(start, size))
    ones = [constant(np.int64(1))] * len(sizes)
    return hlo.real_dynamic_slice(aval_to_ir_type(aval_out), x, _vector(starts),
                                  _vector(limits), _vector(ones))


def dynamic_gather(aval_out: Any, operand: ir.Value, indices: ir.Value, dimension_numbers: Any,
                   slice_sizes: Sequence[Any], indices_are_sorted: bool) -> ir.Value:
    """`gather` with symbolic window sizes: StableHLO's `dynamic_gather`, which takes the
    sizes as an operand."""
    sizes = _vector([dim_value(s) for s in slice_sizes])
    return hlo.DynamicGatherOp(operand, indices, sizes, dimension_numbers,
                               indices_are_sorted=indices_are_sorted,
                               results=[aval_to_ir_type(aval_out)]).result


def reduce_window(ctx: Any, x: ir.Value, init: ir.Value, window: Sequence[Any],
                  padding: Sequence[tuple[Any, Any]],
                  combine: Callable[[ir.Value, ir.Value], ir.Value]) -> ir.Value:
    """A `reduce_window` (strides and dilations 1) whose window or padding is symbolic:
    JAX's ``stablehlo.dynamic_reduce_window`` custom call, its reducer a private
    function of the module; shape refinement turns it into a `reduce_window`."""
    scalar = ir.RankedTensorType.get([], x.type.element_type)
    name = ctx.module_context.unique_name("dynamic_reduce_window_reducer")
    with ir.InsertionPoint(ctx.module_context.module.body), ir.Location.unknown():
        reducer = func.FuncOp(name, ([scalar, scalar], [scalar]))
        reducer.attributes["sym_visibility"] = ir.StringAttr.get("private")
        entry = reducer.add_entry_block()
        with ir.InsertionPoint(entry):
            func.ReturnOp([combine(*entry.arguments)])
    pair = ir.RankedTensorType.get([1, 2], ir.IntegerType.get_signless(32))
    pads = hlo.concatenate([hlo.reshape(pair, shape_value(p)) for p in padding], 0)
    ones = shape_value([1] * len(window))
    op = hlo.CustomCallOp([x.type], [x, init, shape_value(window), ones, ones, ones, pads],
                          call_target_name="stablehlo.dynamic_reduce_window",
                          called_computations=ir.ArrayAttr.get(
                              [ir.FlatSymbolRefAttr.get(name)]))
    op.attributes["api_version"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 2)
    return op.result


def _vector(scalars: Sequence[ir.Value]) -> ir.Value:
    vector = ir.RankedTensorType.get([1], ir.IntegerType.get_signless(64))
    return hlo.concatenate([hlo.reshape(vector, v) for v in scalars], 0)


# Primitives checked to lower with dynamic sizes: elementwise ones (whose operands
# broadcast through `broadcast_in_dim` above), reductions and contractions (result types
# from their avals), the structural ones rewritten above, and calls and control flow
# (their bodies are checked equation by equation).
supports_symbolic(
    "abs", "acos", "acosh", "add", "add_any", "and", "asin", "asinh", "atan", "atan2",
    "atanh", "cbrt", "ceil", "clamp", "convert_element_type", "copy", "copy_p", "cos",
    "cosh", "div", "eq", "erf", "erf_inv", "erfc", "exp", "exp2", "expm1", "floor", "ge",
    "gt", "imag", "is_finite", "le", "lgamma", "digamma", "log", "log1p", "logistic", "lt",
    "max", "min", "mul", "ne", "neg", "nextafter", "not", "or", "pow", "real", "rem",
    "round", "rsqrt", "select_n", "sin", "sinh", "sqrt", "square", "sub", "tan", "tanh",
    "xor", "stop_gradient", "reduce_precision", "name", "sign", "integer_pow", "conj",
    "exp2", "pad",
    "reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or",
    "argmax", "argmin", "sort", "scan",
    "dot_general", "transpose", "reshape", "broadcast_in_dim", "squeeze", "expand_dims",
    "concatenate", "slice", "iota", "rev", "empty", "dynamic_slice", "dynamic_update_slice",
    "split", "gather", "scatter", "scatter-add", "scatter_add", "scatter-mul", "scatter_mul",
    "scatter-min", "scatter_min", "scatter-max", "scatter_max", "scatter_sub", "scatter-sub",
    "scatter_apply", "cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp",
    "reduce_window_sum", "reduce_window_max", "reduce_window_min", "reduce_window",
    "jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
    "custom_vjp_call_jaxpr", "checkpoint", "optimization_barrier", "cond", "while",
    "call_exported")


def splat(like: ir.Value, scalar: ir.Value) -> ir.Value:
    """The rank-0 ``scalar`` broadcast to the shape of ``like``, whose sizes may be
    dynamic (then read from it with `get_dimension_size`)."""
    shape = like.type.shape
    result = ir.RankedTensorType.get(shape, scalar.type.element_type)
    if like.type.has_static_shape:
        return hlo.broadcast_in_dim(result, scalar, [])
    sizes = [hlo.get_dimension_size(like, i) if like.type.is_dynamic_dim(i) else d
             for i, d in enumerate(shape)]
    return hlo.dynamic_broadcast_in_dim(result, scalar, shape_tensor(None, sizes), [])
