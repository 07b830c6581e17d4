"""Window reductions: reduce_window, its sum/max/min forms, and the max-pool gradient.

`reduce_window` reduces every window of an operand (pooling): the window
slides with `window_strides` over the operand, optionally padded, dilated
(`base_dilation` inserts holes between entries) and with a dilated window.
Sums, maxima and minima with their identity as init value become the
specialised primitives `reduce_window_sum_p`, `reduce_window_max_p` and
`reduce_window_min_p`, which have derivatives; any other computation is one
`reduce_window_p`, lowered to a single `stablehlo.reduce_window`.

The window sum is linear: its transpose pads the cotangent (interior padding
undoes the strides) and sums windows of it again. The derivative of a window
maximum picks, per window, the tangent at the maximum's position
(`select_and_gather_add`); its transpose sends each cotangent back to that
position (`select_and_scatter_add`, XLA's SelectAndScatter, the max-pool
gradient), and the two transpose into each other, so derivatives of every
order are covered (reverse mode without base or window dilation, which
SelectAndScatter lacks).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad, batching, dtypes
from lamella.core.shape_poly import DimExpr, max_dim
from lamella.core.structural import reduce_sum_p
from lamella.core.trace import aval_of
from lamella.core.tree_util import tree_flatten, tree_unflatten
from lamella.lax.convolution import padding_pairs, padtype_to_pads
from lamella.lax.logical import ge_p, le_p
from lamella.lax.lowering import (
    aval_to_ir_type,
    closed_consts,
    constant,
    hlo,
    ir,
    lower_jaxpr,
    register_lowering,
)
from lamella.lax.reductions import (
    _compare,
    _highest,
    _lowest,
    _monoid_reduction,
    _reduction_jaxpr,
    _scalar_type,
    reduce_max_p,
    reduce_min_p,
)
from lamella.lax.shapes import pad
from lamella.lax.standard import (
    ANY,
    FLOAT,
    NUMBER,
    SINT,
    UINT,
    check_dtypes,
    standard_primitive,
)

__all__ = ["reduce_window", "reduce_window_max_p", "reduce_window_min_p", "reduce_window_p",
           "reduce_window_shape_tuple", "reduce_window_sum_p", "select_and_gather_add",
           "select_and_gather_add_p", "select_and_scatter_add", "select_and_scatter_add_p",
           "select_and_scatter_p"]


def _dilate(sizes: Sequence[int], dilation: Sequence[int]) -> tuple[int, ...]:
    return tuple(0 if s == 0 else 1 + d * (s - 1) for s, d in zip(sizes, dilation))


def reduce_window_shape_tuple(operand_shape: Sequence[int], window_dimensions: Sequence[int],
                              window_strides: Sequence[int], padding: Sequence[tuple[int, int]],
                              base_dilation: Sequence[int] | None = None,
                              window_dilation: Sequence[int] | None = None) -> tuple[int, ...]:
    """The shape `reduce_window` gives, for explicit (low, high) `padding` pairs.

    >>> reduce_window_shape_tuple((4, 5), (2, 2), (2, 1), [(0, 0), (1, 0)])
    (2, 5)
    """
    shape = [int(d) for d in operand_shape]
    window = [int(d) for d in window_dimensions]
    if base_dilation is not None:
        shape = [0 if d == 0 else 1 + b * (d - 1) for d, b in zip(shape, base_dilation)]
    if window_dilation is not None:
        window = [0 if w == 0 else 1 + r * (w - 1) for w, r in zip(window, window_dilation)]
    padded = [d + lo + hi for d, (lo, hi) in zip(shape, padding)]
    return tuple(0 if p < w else (p - w) // s + 1
                 for p, w, s in zip(padded, window, window_strides))


def _window_params(name: str, shape: tuple[int, ...], window_dimensions, window_strides,
                   padding, base_dilation=None, window_dilation=None) -> dict:
    """Canonical window parameters (tuples of ints, padding as pairs), checked."""
    ndim = len(shape)

    def ints(what, values, default=1):
        values = (default,) * ndim if values is None else tuple(int(v) for v in values)
        if len(values) != ndim:
            raise TypeError(f"{name}: {what} {values} must have one entry per operand axis "
                            f"(operand shape {shape})")
        if any(v < 1 for v in values):
            raise TypeError(f"{name}: {what} {values} must be positive")
        return values

    window_dimensions = ints("window_dimensions", window_dimensions)
    window_strides = ints("window_strides", window_strides)
    if isinstance(padding, str):
        padding = padtype_to_pads(shape, window_dimensions, window_strides, padding)
    padding = padding_pairs(name, padding, ndim, f"operand axis (operand shape {shape})")
    return dict(window_dimensions=window_dimensions, window_strides=window_strides,
                padding=padding, base_dilation=ints("base_dilation", base_dilation),
                window_dilation=ints("window_dilation", window_dilation))


def _window_shape(name: str, shape, window_dimensions, window_strides, padding,
                  base_dilation, window_dilation) -> tuple[int, ...]:
    for what, values in (("window_dimensions", window_dimensions),
                         ("window_strides", window_strides), ("padding", padding),
                         ("base_dilation", base_dilation),
                         ("window_dilation", window_dilation)):
        if len(values) != len(shape):
            raise TypeError(f"{name}: {what} {values} must have one entry per axis of the "
                            f"operand of shape {shape}")
    out = []
    for size, (lo, hi), stride, window in zip(
            _dilate(shape, base_dilation), padding, window_strides,
            _dilate(window_dimensions, window_dilation)):
        padded = size + lo + hi
        if type(padded) is DimExpr:  # symbolic (shape-polymorphic export), as JAX writes it
            out.append(max_dim((padded - window) // stride + 1, 0))
        else:
            out.append(0 if padded < window else (padded - window) // stride + 1)
    return tuple(out)


def _unit_window(params: dict) -> dict:
    """`params` with a leading axis of window 1 (a vmapped axis) in its window parameters."""
    return dict(params, window_dimensions=(1, *params["window_dimensions"]),
                window_strides=(1, *params["window_strides"]),
                padding=((0, 0), *params["padding"]),
                **{k: (1, *params[k]) for k in ("base_dilation", "window_dilation")
                   if k in params})


def _attrs(window_dimensions, window_strides, padding, base_dilation=None,
           window_dilation=None) -> dict:
    attrs = dict(window_strides=list(window_strides),
                 padding=ir.DenseIntElementsAttr.get(
                     np.asarray(padding, np.int64).reshape(len(window_dimensions), 2)))
    if base_dilation is not None:
        attrs.update(base_dilations=list(base_dilation), window_dilations=list(window_dilation))
    return attrs


def _reduce_window_op(avals_out, operands, inits, body: Callable, **params) -> list:
    """One stablehlo.reduce_window over `operands`; `body(*accs, *xs)` returns the scalars."""
    dtypes_ = [a.dtype for a in avals_out]
    op = hlo.ReduceWindowOp([aval_to_ir_type(a) for a in avals_out], list(operands),
                            list(inits), list(params["window_dimensions"]),
                            **_attrs(**params))
    scalars = [_scalar_type(d) for d in dtypes_]
    block = op.regions[0].blocks.append(*scalars, *scalars)
    with ir.InsertionPoint(block):
        hlo.return_(list(body(*block.arguments)))
    return list(op.results)


# --- reduce_window_sum / max / min ------------------------------------------------------


def _monoid_window(name: str, accepted, identity: Callable[[np.dtype], Any], combine):
    prim = standard_primitive(name)

    @prim.def_abstract_eval
    def abstract_eval(x: ShapedArray, **params) -> ShapedArray:
        check_dtypes(name, accepted, x)
        return x.update(shape=_window_shape(name, x.shape, **params))

    def batch(args, dims, **params):
        (x,), (d,) = args, dims
        return prim.bind(batching.moveaxis(x, d, 0), **_unit_window(params)), 0

    def lowering(ctx, x, **params):
        init = constant(identity(ctx.avals_in[0].dtype))
        return _reduce_window_op(ctx.avals_out, [x], [init], lambda a, b: [combine(a, b)], **params)

    batching.primitive_batchers[prim] = batch
    register_lowering(prim, lowering)
    return prim


reduce_window_sum_p = _monoid_window("reduce_window_sum", NUMBER,
                                     lambda dtype: np.zeros((), dtype), hlo.add)
reduce_window_max_p = _monoid_window("reduce_window_max", (SINT, UINT, FLOAT), _lowest,
                                     hlo.maximum)
reduce_window_min_p = _monoid_window("reduce_window_min", (SINT, UINT, FLOAT), _highest,
                                     hlo.minimum)


def _reduce_window_sum_transpose(ct, operand, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
    # Each input entry received the windows covering it: spread the cotangent back
    # (interior padding undoes the strides, edge padding makes every input
    # position see a full window), then sum windows again, stepping by the base
    # dilation so only real input positions are produced.
    shape = operand.aval.shape
    lhs_dilated = _dilate(shape, base_dilation)
    window = _dilate(window_dimensions, window_dilation)
    out_dilated = _dilate(aval_of(ct).shape, window_strides)
    before = [k - lo - 1 for k, (lo, _) in zip(window, padding)]
    after = [i + k - 1 - o - b for i, k, o, b in zip(lhs_dilated, window, out_dilated, before)]
    padded = pad(ct, np.zeros((), aval_of(ct).dtype),
                 [(b, a, s - 1) for b, a, s in zip(before, after, window_strides)])
    ones = (1,) * len(shape)
    result = reduce_window_sum_p.bind(
        padded, window_dimensions=window_dimensions, window_strides=base_dilation,
        padding=((0, 0),) * len(shape), base_dilation=ones, window_dilation=window_dilation)
    return [result]


ad.deflinear2(reduce_window_sum_p, _reduce_window_sum_transpose)


def _chooser_jvp(prim, select_prim):
    def jvp(primals, tangents, **params):
        (x,), (t,) = primals, tangents
        out = prim.bind(x, **params)
        if type(t) is ad.Zero:
            return out, ad.Zero.from_primal_value(out)
        return out, select_and_gather_add_p.bind(t, x, select_prim=select_prim, **params)
    return jvp


ad.primitive_jvps[reduce_window_max_p] = _chooser_jvp(reduce_window_max_p, ge_p)
ad.primitive_jvps[reduce_window_min_p] = _chooser_jvp(reduce_window_min_p, le_p)


# --- generic reduce_window ----------------------------------------------------------------

reduce_window_p = standard_primitive("reduce_window", multiple_results=True)

_MONOID_WINDOWS = {reduce_sum_p: reduce_window_sum_p, reduce_max_p: reduce_window_max_p,
                   reduce_min_p: reduce_window_min_p}


def reduce_window(operand: Any, init_value: Any, computation: Callable,
                  window_dimensions: Sequence[int],
                  window_strides: Sequence[int] | None = None, padding: Any = "VALID",
                  base_dilation: Sequence[int] | None = None,
                  window_dilation: Sequence[int] | None = None) -> Any:
    """Reduces each window of `operand` with `computation(accumulated, element)`.

    `window_strides` default to 1. `padding` is 'VALID' (the default), 'SAME',
    'SAME_LOWER' or one (low, high) pair per axis; padded positions hold
    `init_value`. `operand` and `init_value` may be
    matching pytrees (several arrays reduced together). An add, max or min with
    its identity as init value (0, -inf, +inf) becomes reduce_window_sum_p,
    reduce_window_max_p or reduce_window_min_p, which are differentiable.

    >>> import numpy as np
    >>> import lamella.lax as lax
    >>> x = np.array([[1., 2., 3.], [4., 5., 6.]], np.float32)
    >>> reduce_window(x, -np.inf, lax.max, (2, 2), (1, 1), "VALID")
    Array([[5., 6.]], dtype=float32)
    >>> reduce_window(x, 0., lax.add, (1, 2), (1, 2), "SAME")
    Array([[3., 3.],
           [9., 6.]], dtype=float32)
    """
    flat_operands, tree = tree_flatten(operand)
    flat_inits, init_tree = tree_flatten(init_value)
    if tree != init_tree:
        raise TypeError(f"reduce_window: operand and init_value must have the same "
                        f"structure, got {tree} and {init_tree}")
    if not flat_operands:
        raise TypeError("reduce_window: needs at least one operand")
    avals = [aval_of(x) for x in flat_operands]
    if len({a.shape for a in avals}) > 1:
        raise TypeError(f"reduce_window: operands must have one shape, got "
                        f"{', '.join(str(a.shape) for a in avals)}")
    params = _window_params("reduce_window", avals[0].shape, window_dimensions,
                            window_strides, padding, base_dilation, window_dilation)
    flat_inits = [np.asarray(i, a.dtype) if dtypes.is_python_scalar(i) else i
                  for i, a in zip(flat_inits, avals)]
    scalar_avals = tuple(ShapedArray((), aval_of(i).dtype) for i in flat_inits)
    jaxpr = _reduction_jaxpr(computation, tree, scalar_avals)
    if len(flat_operands) == 1:
        monoid = _monoid_reduction(jaxpr, flat_inits[0])
        if monoid in _MONOID_WINDOWS:
            return tree_unflatten(tree, [_MONOID_WINDOWS[monoid].bind(flat_operands[0],
                                                                      **params)])
    outs = reduce_window_p.bind(*flat_operands, *flat_inits, jaxpr=jaxpr, **params)
    return tree_unflatten(tree, outs)


@reduce_window_p.def_abstract_eval
def _reduce_window_abstract_eval(*avals: ShapedArray, jaxpr, **params):
    n = len(avals) // 2
    operands, inits = avals[:n], avals[n:]
    for x, init, out in zip(operands, inits, jaxpr.out_avals):
        check_dtypes("reduce_window", ANY, x)
        if init.shape != ():
            raise TypeError(f"reduce_window: init values must be scalars, got shape "
                            f"{init.shape}")
        if init.dtype != x.dtype or out.dtype != x.dtype:
            raise TypeError(f"reduce_window: operand dtype {x.dtype.name} must match its "
                            f"init value ({init.dtype.name}) and computation result "
                            f"({out.dtype.name})")
    shape = _window_shape("reduce_window", operands[0].shape, **params)
    return [ShapedArray(shape, x.dtype) for x in operands]


def _reduce_window_jvp(primals, tangents, *, jaxpr, **params):
    if all(type(t) is ad.Zero for t in tangents):
        outs = reduce_window_p.bind(*primals, jaxpr=jaxpr, **params)
        return outs, [ad.Zero.from_primal_value(o) for o in outs]
    raise NotImplementedError("reduce_window: differentiating a general computation is not "
                              "supported; an add, max or min with its identity as init value "
                              "(0, -inf or +inf) is differentiable")


def _reduce_window_batch(args, dims, *, jaxpr, **params):
    n = len(args) // 2
    if any(d is not None for d in dims[n:]):
        raise NotImplementedError("reduce_window: vmap over init values is not supported; "
                                  "batch the operands and keep the init values shared")
    size = next(aval_of(x).shape[d] for x, d in zip(args, dims) if d is not None)
    operands = [batching.at_front(x, d, size) for x, d in zip(args[:n], dims[:n])]
    outs = reduce_window_p.bind(*operands, *args[n:], jaxpr=jaxpr, **_unit_window(params))
    return outs, [0] * n


def _reduce_window_lowering(ctx, *args, jaxpr, **params):
    n = len(args) // 2

    def body(*scalars):
        return lower_jaxpr(ctx.module_context, jaxpr.jaxpr, closed_consts(jaxpr), scalars)
    return _reduce_window_op(ctx.avals_out, args[:n], args[n:], body, **params)


ad.primitive_jvps[reduce_window_p] = _reduce_window_jvp
batching.primitive_batchers[reduce_window_p] = _reduce_window_batch
register_lowering(reduce_window_p, _reduce_window_lowering)


# --- select_and_gather_add / select_and_scatter_add --------------------------------------


def _select_direction(select_prim) -> str:
    if select_prim is ge_p:
        return "GE"
    if select_prim is le_p:
        return "LE"
    raise TypeError(f"select_prim must be lax.ge_p (maxima) or lax.le_p (minima), got "
                    f"{select_prim}")


select_and_gather_add_p = standard_primitive("select_and_gather_add")


def select_and_gather_add(tangents: Any, operand: Any, select_prim, window_dimensions,
                          window_strides, padding, base_dilation=None,
                          window_dilation=None) -> Any:
    """For each window of `operand`, the entry of `tangents` where `operand` is
    largest (`select_prim=ge_p`) or smallest (`le_p`): the JVP of a window max/min.

    >>> import numpy as np
    >>> from lamella.lax.logical import ge_p
    >>> x = np.array([1., 3., 2., 0.], np.float32)
    >>> select_and_gather_add(np.float32([10, 20, 30, 40]), x, ge_p, (2,), (2,), "VALID")
    Array([20., 30.], dtype=float32)
    """
    _select_direction(select_prim)
    params = _window_params("select_and_gather_add", aval_of(operand).shape,
                            window_dimensions, window_strides, padding, base_dilation,
                            window_dilation)
    return select_and_gather_add_p.bind(tangents, operand, select_prim=select_prim, **params)


@select_and_gather_add_p.def_abstract_eval
def _select_and_gather_add_abstract_eval(t: ShapedArray, x: ShapedArray, *, select_prim,
                                         **params) -> ShapedArray:
    check_dtypes("select_and_gather_add", (SINT, UINT, FLOAT), x)
    if t.shape != x.shape:
        raise TypeError(f"select_and_gather_add: tangents of shape {t.shape} must match the "
                        f"operand of shape {x.shape}")
    return t.update(shape=_window_shape("select_and_gather_add", x.shape, **params))


def _select_and_gather_add_transpose(ct, t, x, *, select_prim, window_dimensions,
                                     window_strides, padding, base_dilation, window_dilation):
    if any(d != 1 for d in (*base_dilation, *window_dilation)):
        raise NotImplementedError("reverse-mode derivative of a window max/min with "
                                  "base_dilation or window_dilation is not supported (XLA's "
                                  "SelectAndScatter has no dilation)")
    if type(ct) is ad.Zero:
        return [None, None]
    return [select_and_scatter_add_p.bind(ct, x, select_prim=select_prim,
                                          window_dimensions=window_dimensions,
                                          window_strides=window_strides, padding=padding),
            None]


def _select_and_gather_add_lowering(ctx, t, x, *, select_prim, **params):
    dtype = ctx.avals_in[1].dtype
    direction = _select_direction(select_prim)
    worst = _lowest(dtype) if direction == "GE" else _highest(dtype)
    # One variadic reduce_window over (operand, tangent) pairs keeps the pair
    # whose operand wins; the tangent of the winner is the result.
    out_x = ctx.avals_out[0].update(dtype=dtype)

    def body(a, ta, b, tb):
        pick = _compare(a, b, direction, dtype)
        return [hlo.select(pick, a, b), hlo.select(pick, ta, tb)]

    zero = constant(np.zeros((), ctx.avals_out[0].dtype))
    _, result = _reduce_window_op([out_x, ctx.avals_out[0]], [x, t], [constant(worst), zero],
                                  body, **params)
    return [result]


def _linear_in_first(prim):
    def jvp(primals, tangents, **params):
        out = prim.bind(*primals, **params)
        if type(tangents[0]) is ad.Zero:
            return out, ad.Zero.from_primal_value(out)
        return out, prim.bind(tangents[0], primals[1], **params)
    return jvp


def _batch_pair(prim):
    def batch(args, dims, **params):
        size = next(aval_of(x).shape[d] for x, d in zip(args, dims) if d is not None)
        t, x = (batching.at_front(a, d, size) for a, d in zip(args, dims))
        return prim.bind(t, x, **_unit_window(params)), 0
    return batch


ad.primitive_jvps[select_and_gather_add_p] = _linear_in_first(select_and_gather_add_p)
ad.primitive_transposes[select_and_gather_add_p] = _select_and_gather_add_transpose
batching.primitive_batchers[select_and_gather_add_p] = _batch_pair(select_and_gather_add_p)
register_lowering(select_and_gather_add_p, _select_and_gather_add_lowering)


select_and_scatter_add_p = standard_primitive("select_and_scatter_add")


def select_and_scatter_add(source: Any, operand: Any, select_prim, window_dimensions,
                           window_strides, padding) -> Any:
    """Adds each entry of `source` (one per window) at the position where its
    window of `operand` is largest (`select_prim=ge_p`) or smallest (`le_p`):
    the gradient of max pooling.

    >>> import numpy as np
    >>> from lamella.lax.logical import ge_p
    >>> x = np.array([1., 3., 2., 0.], np.float32)
    >>> select_and_scatter_add(np.float32([10, 20]), x, ge_p, (2,), (2,), "VALID")
    Array([ 0., 10., 20.,  0.], dtype=float32)
    """
    _select_direction(select_prim)
    params = _window_params("select_and_scatter_add", aval_of(operand).shape,
                            window_dimensions, window_strides, padding)
    del params["base_dilation"], params["window_dilation"]
    return select_and_scatter_add_p.bind(source, operand, select_prim=select_prim, **params)


@select_and_scatter_add_p.def_abstract_eval
def _select_and_scatter_add_abstract_eval(source: ShapedArray, x: ShapedArray, *,
                                          select_prim, window_dimensions, window_strides,
                                          padding) -> ShapedArray:
    check_dtypes("select_and_scatter_add", (SINT, UINT, FLOAT), x)
    ones = (1,) * x.ndim
    expected = _window_shape("select_and_scatter_add", x.shape, window_dimensions,
                             window_strides, padding, ones, ones)
    if source.shape != expected:
        raise TypeError(f"select_and_scatter_add: source of shape {source.shape} must have "
                        f"one entry per window, shape {expected}, for the operand of shape "
                        f"{x.shape}")
    return source.update(shape=x.shape)


def _select_and_scatter_add_transpose(ct, source, x, *, select_prim, window_dimensions,
                                      window_strides, padding):
    if type(ct) is ad.Zero:
        return [None, None]
    ones = (1,) * len(window_dimensions)
    return [select_and_gather_add_p.bind(ct, x, select_prim=select_prim,
                                         window_dimensions=window_dimensions,
                                         window_strides=window_strides, padding=padding,
                                         base_dilation=ones, window_dilation=ones), None]


def _select_and_scatter_add_lowering(ctx, source, x, *, select_prim, window_dimensions,
                                     window_strides, padding):
    x_dtype, dtype = ctx.avals_in[1].dtype, ctx.avals_out[0].dtype
    direction = _select_direction(select_prim)
    op = hlo.SelectAndScatterOp(aval_to_ir_type(ctx.avals_out[0]), x, source,
                                constant(np.zeros((), dtype)),
                                window_dimensions=list(window_dimensions),
                                **_attrs(window_dimensions, window_strides, padding))
    x_scalar, scalar = _scalar_type(x_dtype), _scalar_type(dtype)
    select = op.select.blocks.append(x_scalar, x_scalar)
    with ir.InsertionPoint(select):
        hlo.return_([_compare(*select.arguments, direction, x_dtype)])
    scatter = op.scatter.blocks.append(scalar, scalar)
    with ir.InsertionPoint(scatter):
        hlo.return_([hlo.add(*scatter.arguments)])
    return [op.result]


ad.primitive_jvps[select_and_scatter_add_p] = _linear_in_first(select_and_scatter_add_p)
ad.primitive_transposes[select_and_scatter_add_p] = _select_and_scatter_add_transpose
batching.primitive_batchers[select_and_scatter_add_p] = _batch_pair(select_and_scatter_add_p)
register_lowering(select_and_scatter_add_p, _select_and_scatter_add_lowering)


# --- select_and_scatter: the general form, with select and scatter computations -------
# A primitive only, as in JAX (it has no public wrapper): operand, source and a scalar
# init_value; `select_jaxpr` picks within each window of the operand, `scatter_jaxpr`
# combines the source entries landing on one position (with init_value elsewhere).
select_and_scatter_p = standard_primitive("select_and_scatter")


@select_and_scatter_p.def_abstract_eval
def _select_and_scatter_abstract_eval(x: ShapedArray, source: ShapedArray,
                                      init_value: ShapedArray, *, select_jaxpr,
                                      select_consts, scatter_jaxpr, scatter_consts,
                                      window_dimensions, window_strides, padding):
    if len(window_dimensions) != len(window_strides):
        raise TypeError(f"select_and_scatter got inconsistent window_strides and "
                        f"window_dimensions: got window_strides {window_strides} and "
                        f"window_dimensions {window_dimensions}.")
    return source.update(shape=x.shape)


def _select_and_scatter_lowering(ctx, x, source, init_value, *, select_jaxpr, select_consts,
                                 scatter_jaxpr, scatter_consts, window_dimensions,
                                 window_strides, padding):
    op = hlo.SelectAndScatterOp(aval_to_ir_type(ctx.avals_out[0]), x, source, init_value,
                                window_dimensions=list(window_dimensions),
                                **_attrs(window_dimensions, window_strides, padding))
    for region, jaxpr, consts, dtype in (
            (op.select, select_jaxpr, select_consts, ctx.avals_in[0].dtype),
            (op.scatter, scatter_jaxpr, scatter_consts, ctx.avals_in[1].dtype)):
        block = region.blocks.append(_scalar_type(dtype), _scalar_type(dtype))
        with ir.InsertionPoint(block):
            hlo.return_(lower_jaxpr(ctx.module_context, jaxpr,
                                    [constant(np.asarray(c)) for c in consts],
                                    list(block.arguments)))
    return [op.result]


register_lowering(select_and_scatter_p, _select_and_scatter_lowering)
