"""NumPy-backed primitives defined the way a user of lamella.core would.

The core tests use these to exercise every transformation with no compiler:
each primitive has an impl, an abstract eval, a JVP (or linearity and a
transpose) and a batching rule. Binary ones follow NumPy broadcasting.
"""

from __future__ import annotations

import numpy as np

from lamella.core import Primitive, ShapedArray, ad, batching
from lamella.core.structural import reduce_sum, reshape, transpose
from lamella.core.trace import aval_of

# Counts of impl calls per primitive name, for tests that check what ran.
impl_calls: dict[str, int] = {}


def _counted(name, fn):
    def impl(*args, **params):
        impl_calls[name] = impl_calls.get(name, 0) + 1
        return fn(*args, **params)
    return impl


def _broadcast_shapes(*avals: ShapedArray) -> tuple[int, ...]:
    try:
        return np.broadcast_shapes(*(a.shape for a in avals))
    except ValueError:
        raise TypeError("operands could not be broadcast together with shapes "
                        + " ".join(str(a.shape) for a in avals)) from None


_KIND_ORDER = "biufc"


def _result_dtype(*avals: ShapedArray):
    """NumPy promotion among strongly typed operands; a weakly typed Python scalar only
    lifts the result to its kind (int * 2.0 is float), as in JAX."""
    strong = [a.dtype for a in avals if not a.weak_type]
    result = np.result_type(*(strong or [a.dtype for a in avals]))
    for a in avals:
        if a.weak_type and _KIND_ORDER.index(a.dtype.kind) > _KIND_ORDER.index(result.kind):
            result = a.dtype
    return result


def unbroadcast(ct, aval: ShapedArray):
    """Sums a cotangent back down to the shape of an operand that was broadcast."""
    shape = aval_of(ct).shape
    if shape == aval.shape:
        return ct
    lead = len(shape) - len(aval.shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(aval.shape)
                                      if d == 1 and shape[lead + i] != 1)
    out = reduce_sum(ct, axes)
    return reshape(out, aval.shape) if aval_of(out).shape != aval.shape else out


def _unary(name, fn):
    p = Primitive(name)
    p.def_impl(_counted(name, lambda x: np.asarray(fn(x))))
    p.def_abstract_eval(lambda x: x)
    batching.defvectorized(p)
    return p


def _binary(name, fn, out_dtype=None):
    p = Primitive(name)
    p.def_impl(_counted(name, lambda x, y: np.asarray(fn(x, y))))

    @p.def_abstract_eval
    def _(x, y):
        dtype = out_dtype or _result_dtype(x, y)
        return ShapedArray(_broadcast_shapes(x, y), dtype, x.weak_type and y.weak_type)
    batching.defbroadcasting(p)
    return p


sin_p = _unary("sin", np.sin)
cos_p = _unary("cos", np.cos)
exp_p = _unary("exp", np.exp)
log_p = _unary("log", np.log)
tanh_p = _unary("tanh", np.tanh)
neg_p = _unary("neg", np.negative)
add_p = _binary("add", np.add)
sub_p = _binary("sub", np.subtract)
mul_p = _binary("mul", np.multiply)
div_p = _binary("div", np.divide)
greater_p = _binary("greater", np.greater, out_dtype=np.dtype(bool))


def sin(x): return sin_p.bind(x)
def cos(x): return cos_p.bind(x)
def exp(x): return exp_p.bind(x)
def log(x): return log_p.bind(x)
def tanh(x): return tanh_p.bind(x)
def neg(x): return neg_p.bind(x)
def add(x, y): return add_p.bind(x, y)
def sub(x, y): return sub_p.bind(x, y)
def mul(x, y): return mul_p.bind(x, y)
def div(x, y): return div_p.bind(x, y)
def greater(x, y): return greater_p.bind(x, y)
def square(x): return mul(x, x)


ad.defjvp(sin_p, lambda t, x: mul(t, cos(x)))
ad.defjvp(cos_p, lambda t, x: neg(mul(t, sin(x))))
ad.defjvp2(exp_p, lambda t, ans, x: mul(t, ans))
ad.defjvp(log_p, lambda t, x: div(t, x))
ad.defjvp2(tanh_p, lambda t, ans, x: mul(t, sub(1.0, mul(ans, ans))))
ad.deflinear(neg_p, lambda ct: [neg(ct)])
ad.defjvp_zero(greater_p)


def _linear_binary_jvp(p, sign):
    def jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        out = p.bind(x, y)
        shape = aval_of(out).shape
        tangent = ad.Zero.from_primal_value(out)
        if type(tx) is not ad.Zero:
            tangent = ad.add_tangents(tangent, _broadcast_to(tx, shape))
        if type(ty) is not ad.Zero:
            ty = _broadcast_to(ty, shape)
            tangent = ad.add_tangents(tangent, neg(ty) if sign < 0 else ty)
        return out, tangent
    return jvp


def _broadcast_to(x, shape):
    from lamella.core.structural import broadcast_in_dim
    aval = aval_of(x)
    if aval.shape == tuple(shape):
        return x
    lead = len(shape) - aval.ndim
    return broadcast_in_dim(x, shape, tuple(range(lead, len(shape))))


ad.primitive_jvps[add_p] = _linear_binary_jvp(add_p, +1)
ad.primitive_jvps[sub_p] = _linear_binary_jvp(sub_p, -1)


def _add_transpose(ct, x, y):
    return [unbroadcast(ct, x.aval) if ad.is_undefined_primal(x) else None,
            unbroadcast(ct, y.aval) if ad.is_undefined_primal(y) else None]


def _sub_transpose(ct, x, y):
    return [unbroadcast(ct, x.aval) if ad.is_undefined_primal(x) else None,
            unbroadcast(neg(ct), y.aval) if ad.is_undefined_primal(y) else None]


ad.primitive_transposes[add_p] = _add_transpose
ad.primitive_transposes[sub_p] = _sub_transpose
ad.defjvp(mul_p, lambda t, x, y: mul(t, y), lambda t, x, y: mul(x, t))
ad.defjvp(div_p, lambda t, x, y: div(t, y),
          lambda t, x, y: neg(div(mul(t, x), mul(y, y))))


def _mul_transpose(ct, x, y):
    if ad.is_undefined_primal(x):
        return [unbroadcast(mul(ct, y), x.aval), None]
    return [None, unbroadcast(mul(x, ct), y.aval)]


def _div_transpose(ct, x, y):
    assert not ad.is_undefined_primal(y), "div is linear only in its numerator"
    return [unbroadcast(div(ct, y), x.aval), None]


ad.primitive_transposes[mul_p] = _mul_transpose
ad.primitive_transposes[div_p] = _div_transpose

# select(pred, on_true, on_false): NumPy's where.
select_p = Primitive("select")
select_p.def_impl(_counted("select", lambda p, x, y: np.asarray(np.where(p, x, y))))


@select_p.def_abstract_eval
def _select_abstract_eval(p, x, y):
    if p.dtype != np.dtype(bool):
        raise TypeError(f"select predicate must be boolean, got {p.str_short()}")
    return ShapedArray(_broadcast_shapes(p, x, y), _result_dtype(x, y))


def select(pred, x, y):
    return select_p.bind(pred, x, y)


def _select_jvp(primals, tangents):
    p, x, y = primals
    _, tx, ty = tangents
    out = select(p, x, y)
    if type(tx) is ad.Zero and type(ty) is ad.Zero:
        return out, ad.Zero.from_primal_value(out)
    return out, select(p, ad.instantiate_zeros(tx), ad.instantiate_zeros(ty))


def _select_transpose(ct, p, x, y):
    zeros = np.zeros((), aval_of(ct).dtype)
    return [None,
            unbroadcast(select(p, ct, zeros), x.aval) if ad.is_undefined_primal(x) else None,
            unbroadcast(select(p, zeros, ct), y.aval) if ad.is_undefined_primal(y) else None]


ad.primitive_jvps[select_p] = _select_jvp
ad.primitive_transposes[select_p] = _select_transpose
batching.defbroadcasting(select_p)

# matmul of two matrices, with a hand-written batching rule.
matmul_p = Primitive("matmul")
matmul_p.def_impl(_counted("matmul", lambda x, y: np.asarray(np.matmul(x, y))))


@matmul_p.def_abstract_eval
def _matmul_abstract_eval(x, y):
    if x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[0]:
        raise TypeError(f"matmul needs matrices with matching inner dimensions, got "
                        f"{x.str_short()} and {y.str_short()}")
    return ShapedArray((x.shape[0], y.shape[1]), _result_dtype(x, y))


def matmul(x, y):
    return matmul_p.bind(x, y)


def _mT(x):
    return transpose(x, (1, 0))


ad.defjvp(matmul_p, lambda t, x, y: matmul(t, y), lambda t, x, y: matmul(x, t))
ad.primitive_transposes[matmul_p] = lambda ct, x, y: (
    [matmul(ct, _mT(y)), None] if ad.is_undefined_primal(x) else [None, matmul(_mT(x), ct)])


def _matmul_batch(args, dims):
    (x, y), (dx, dy) = args, dims
    if dy is None:  # (B, m, k) @ (k, n): one big matmul
        x = batching.moveaxis(x, dx, 0)
        b, m, k = aval_of(x).shape
        return reshape(matmul(reshape(x, (b * m, k)), y), (b, m, aval_of(y).shape[1])), 0
    if dx is None:  # (m, k) @ (B, k, n)
        y = batching.moveaxis(y, dy, 1)
        k, b, n = aval_of(y).shape
        return reshape(matmul(x, reshape(y, (k, b * n))), (aval_of(x).shape[0], b, n)), 1
    x, y = batching.moveaxis(x, dx, 0), batching.moveaxis(y, dy, 0)
    b, m, k = aval_of(x).shape
    n = aval_of(y).shape[2]
    products = mul(reshape(x, (b, m, k, 1)), reshape(y, (b, 1, k, n)))
    return reduce_sum(products, (2,)), 0


batching.primitive_batchers[matmul_p] = _matmul_batch


def total(x):
    """Sum of all elements."""
    return reduce_sum(x, tuple(range(aval_of(x).ndim)))
