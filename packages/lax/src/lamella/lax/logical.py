"""Comparisons, selection and logic: eq/ne/lt/le/gt/ge, select_n, clamp, not,
and, or, xor, shifts, population_count, clz."""

from __future__ import annotations

import numpy as np

from lamella.core import ShapedArray, ad, batching
from lamella.core.structural import broadcast_in_dim
from lamella.core.trace import aval_of
from lamella.lax import symbolic_lowering
from lamella.lax.lowering import constant, hlo, register_lowering
from lamella.lax.mlir_context import dtype_of, ir
from lamella.lax.standard import (
    ANY,
    BOOL,
    INT,
    binary_op,
    category,
    check_dtypes,
    check_same_dtypes,
    naryop,
    standard_primitive,
    unop,
)

# --- comparisons --------------------------------------------------------------


def _compare_lowering(direction: str, total_order: bool = False):
    def lower(x, y):
        kind = category(dtype_of(x))
        compare_type = {"bool": "UNSIGNED", "unsigned integer": "UNSIGNED",
                        "signed integer": "SIGNED"}.get(
                            kind, "TOTALORDER" if total_order else "FLOAT")
        return hlo.compare(x, y, hlo.ComparisonDirectionAttr.get(direction),
                           compare_type=hlo.ComparisonTypeAttr.get(compare_type))
    return lower


def _comparison(name: str, direction: str, accepted, total_order: bool = False):
    prim = naryop(name, accepted, _compare_lowering(direction, total_order),
                  result_dtype=lambda *_: np.dtype(bool))
    ad.defjvp_zero(prim)
    return prim, binary_op(prim, doc=f"Elementwise comparison `{name}`, a boolean array.")


_ORDERED = ("bool", "signed integer", "unsigned integer", "floating")
eq_p, eq = _comparison("eq", "EQ", ANY)
ne_p, ne = _comparison("ne", "NE", ANY)
lt_p, lt = _comparison("lt", "LT", _ORDERED)
le_p, le = _comparison("le", "LE", _ORDERED)
gt_p, gt = _comparison("gt", "GT", _ORDERED)
ge_p, ge = _comparison("ge", "GE", _ORDERED)
# Comparisons in the total order of floats (-nan < -inf < ... < -0 < 0 < ... < inf <
# nan): what sort comparators use. Primitives only, as in JAX.
eq_to_p, _ = _comparison("eq_to", "EQ", ANY, total_order=True)
le_to_p, _ = _comparison("le_to", "LE", _ORDERED, total_order=True)
lt_to_p, _ = _comparison("lt_to", "LT", _ORDERED, total_order=True)

def complex_choose(x: ir.Value, y: ir.Value, direction: str) -> ir.Value:
    """Lowering of a complex max ("GT") or min ("LT"): x or y in the lexicographic
    order of (real, imag), as JAX orders complex numbers, with float comparisons and
    a select. XLA's own complex maximum/minimum must never reach its simplifier: it
    rewrites min(max(x, lo), hi) into a clamp and aborts the process comparing
    complex numbers (MinMaxToClamp)."""
    def compare(a, b, how):
        return hlo.compare(a, b, hlo.ComparisonDirectionAttr.get(how),
                           compare_type=hlo.ComparisonTypeAttr.get("FLOAT"))
    rx, ry = hlo.real(x), hlo.real(y)
    pick_x = hlo.select(compare(rx, ry, "EQ"), compare(hlo.imag(x), hlo.imag(y), direction),
                        compare(rx, ry, direction))
    return hlo.select(pick_x, x, y)


# --- select_n -----------------------------------------------------------------
select_n_p = standard_primitive("select_n")


def select_n(which, *cases):
    """cases[which], elementwise: `which` is boolean (two cases) or int32.

    A scalar `which` selects whole arrays.
    """
    if not cases:
        raise ValueError("select_n needs at least one case")
    return select_n_p.bind(which, *cases)


def select(pred, on_true, on_false):
    """on_true where pred is true, else on_false."""
    return select_n(pred, on_false, on_true)


@select_n_p.def_abstract_eval
def _select_n_abstract_eval(which: ShapedArray, *cases: ShapedArray) -> ShapedArray:
    if which.dtype != np.dtype(bool) and which.dtype != np.dtype(np.int32):
        raise TypeError(f"select_n `which` must be boolean or int32, got {which.dtype.name}")
    if which.dtype == np.dtype(bool) and len(cases) > 2:
        raise TypeError("select_n with a boolean `which` takes at most two cases")
    check_same_dtypes("select_n", *cases)
    if len({c.shape for c in cases}) > 1:
        raise TypeError("select_n cases must have the same shapes, got "
                        f"{', '.join(str(c.shape) for c in cases)}")
    if which.shape and which.shape != cases[0].shape:
        raise TypeError(f"select_n `which` must be scalar or have the cases' shape "
                        f"{cases[0].shape}, got {which.shape}")
    return ShapedArray(cases[0].shape, cases[0].dtype, all(c.weak_type for c in cases))


def _select_n_lowering(ctx, which, *cases):
    out_type = cases[0].type
    if ctx.avals_in[0].shape != ctx.avals_out[0].shape:
        which = symbolic_lowering.splat(cases[0], which)
    if ctx.avals_in[0].dtype == np.dtype(bool):
        return [hlo.select(which, cases[1], cases[0]) if len(cases) == 2 else cases[0]]
    return [_select_tree(which, list(cases), 0, out_type)]


def _select_tree(which, cases, offset, out_type):
    if len(cases) == 1:
        return cases[0]
    half = len(cases) // 2
    pivot = symbolic_lowering.splat(which, constant(np.int32(offset + half)))
    is_low = hlo.compare(which, pivot, hlo.ComparisonDirectionAttr.get("LT"),
                         compare_type=hlo.ComparisonTypeAttr.get("SIGNED"))
    return hlo.select(is_low, _select_tree(which, cases[:half], offset, out_type),
                      _select_tree(which, cases[half:], offset + half, out_type))


def _select_n_jvp(primals, tangents):
    which, *cases = primals
    case_tangents = tangents[1:]
    out = select_n(which, *cases)
    if all(type(t) is ad.Zero for t in case_tangents):
        return out, ad.Zero.from_primal_value(out)
    return out, select_n(which, *map(ad.instantiate_zeros, case_tangents))


def _select_n_transpose(ct, which, *cases):
    if ad.is_undefined_primal(which):
        raise TypeError("select_n is not linear in its predicate")
    zeros = ad.zeros_like_aval(aval_of(ct))
    return [None] + [select_n(which, *[ct if j == i else zeros for j in range(len(cases))])
                     if ad.is_undefined_primal(c) else None for i, c in enumerate(cases)]


def _select_n_batch(args, dims):
    which, *cases = args
    size = next(aval_of(x).shape[d] for x, d in zip(args, dims) if d is not None)
    cases = [batching.at_front(c, d, size) for c, d in zip(cases, dims[1:])]
    if dims[0] is None and aval_of(which).ndim == 0:
        return select_n(which, *cases), 0
    which = batching.at_front(which, dims[0], size)
    case_shape = aval_of(cases[0]).shape
    if aval_of(which).shape != case_shape:
        which = broadcast_in_dim(which, case_shape, (0,))
    return select_n(which, *cases), 0


register_lowering(select_n_p, _select_n_lowering)
ad.primitive_jvps[select_n_p] = _select_n_jvp
ad.primitive_transposes[select_n_p] = _select_n_transpose
batching.primitive_batchers[select_n_p] = _select_n_batch

# --- clamp --------------------------------------------------------------------
clamp_p = standard_primitive("clamp")


def clamp(min, x, max):
    """min(max(x, min), max), with scalar or x-shaped bounds."""
    return clamp_p.bind(min, x, max)


@clamp_p.def_abstract_eval
def _clamp_abstract_eval(lo: ShapedArray, x: ShapedArray, hi: ShapedArray) -> ShapedArray:
    check_dtypes("clamp", ("signed integer", "unsigned integer", "floating",
                           "complex floating"), x)
    check_same_dtypes("clamp", lo, x, hi)
    for bound in (lo, hi):
        if bound.shape and bound.shape != x.shape:
            raise TypeError(f"clamp requires min and max to be scalars or have the shape of "
                            f"x {x.shape}, got {bound.shape}")
    return x


def _clamp_lowering(ctx, lo, x, hi):
    shape = ctx.avals_out[0].shape
    lo, hi = (b if ctx.avals_in[i].shape == shape
              else symbolic_lowering.splat(x, b) for i, b in ((0, lo), (2, hi)))
    if dtype_of(x).kind == "c":
        return [complex_choose(complex_choose(x, lo, "GT"), hi, "LT")]
    return [hlo.clamp(lo, x, hi)]


def _clamp_batch(args, dims):
    size = next(aval_of(a).shape[d] for a, d in zip(args, dims) if d is not None)
    lo, x, hi = args
    x = batching.at_front(x, dims[1], size)
    shape = aval_of(x).shape

    def full(bound, d):
        if d is None and aval_of(bound).ndim == 0:
            return broadcast_in_dim(bound, shape, ())
        bound = batching.at_front(bound, d, size)
        if aval_of(bound).shape != shape:
            bound = broadcast_in_dim(bound, shape, (0,))
        return bound
    return clamp(full(lo, dims[0]), x, full(hi, dims[2])), 0


def _broadcast_like(t, x):
    shape = aval_of(x).shape
    return t if aval_of(t).shape == shape else broadcast_in_dim(t, shape, ())


def _where(mask, t, x):
    """t (broadcast to x's shape) where mask, else zeros."""
    t = _broadcast_like(t, x)
    return select(mask, t, ad.zeros_like_aval(aval_of(t)))


ad.defjvp(clamp_p,
          lambda t, lo, x, hi: _where(bitwise_and(gt(lo, x), lt(lo, hi)), t, x),
          lambda t, lo, x, hi: _where(bitwise_and(gt(x, lo), lt(x, hi)), t, x),
          lambda t, lo, x, hi: _where(lt(hi, x), t, x))
register_lowering(clamp_p, _clamp_lowering)
batching.primitive_batchers[clamp_p] = _clamp_batch

# --- logic and bits -----------------------------------------------------------
not_p = unop("not", (BOOL,) + INT, hlo.not_)
and_p = naryop("and", (BOOL,) + INT, hlo.and_)
or_p = naryop("or", (BOOL,) + INT, hlo.or_)
xor_p = naryop("xor", (BOOL,) + INT, hlo.xor)
shift_left_p = naryop("shift_left", INT, hlo.shift_left)
shift_right_logical_p = naryop("shift_right_logical", INT, hlo.shift_right_logical)
shift_right_arithmetic_p = naryop("shift_right_arithmetic", INT, hlo.shift_right_arithmetic)
population_count_p = unop("population_count", INT, hlo.popcnt)
clz_p = unop("clz", INT, hlo.count_leading_zeros)
for _p in (not_p, and_p, or_p, xor_p, shift_left_p, shift_right_logical_p,
           shift_right_arithmetic_p, population_count_p, clz_p):
    ad.defjvp_zero(_p)


def bitwise_not(x):
    """Logical not of booleans, bitwise not of integers."""
    return not_p.bind(x)


bitwise_and = binary_op(and_p, "bitwise_and", "Logical and of booleans, bitwise and of integers.")
bitwise_or = binary_op(or_p, "bitwise_or", "Logical or of booleans, bitwise or of integers.")
bitwise_xor = binary_op(xor_p, "bitwise_xor", "Logical xor of booleans, bitwise xor of integers.")
shift_left = binary_op(shift_left_p, doc="x shifted left by y bits.")
shift_right_logical = binary_op(shift_right_logical_p,
                                doc="x shifted right by y bits, filling with zeros.")
shift_right_arithmetic = binary_op(shift_right_arithmetic_p,
                                   doc="x shifted right by y bits, filling with the sign bit.")


def population_count(x):
    """The number of set bits of each integer."""
    return population_count_p.bind(x)


def clz(x):
    """The number of leading zero bits of each integer."""
    return clz_p.bind(x)

