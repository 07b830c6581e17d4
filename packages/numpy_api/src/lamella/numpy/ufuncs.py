"""NumPy's elementwise functions (jax.numpy style) built from lamella.lax primitives.

Every function promotes its inputs with JAX's lattice (Python scalars stay
weakly typed, so `add(float16 array, 2.0)` is float16), broadcasts them with
NumPy's rules, and then applies lax operations, so all of them work under
jit, grad and vmap. Functions that only make sense for inexact values
(`divide`, `sqrt`, `sin`, ...) promote integers and bools to the default float
(float32 unless x64 is enabled), as JAX does.

>>> import numpy as np
>>> add(np.arange(3, dtype=np.float16), 2.0)
Array([2., 3., 4.], dtype=float16)
>>> true_divide(np.int32(7), np.int32(2))
Array(3.5, dtype=float32)
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from lamella import lax
from lamella.core import config, custom_jvp
from lamella.core import dtypes as core_dtypes
from lamella.core.trace import aval_of
from lamella.numpy.dtypes import (
    finfo,
    promote_dtypes,
    promote_dtypes_inexact,
    promote_dtypes_numeric,
)
from lamella.numpy.util import dtype_of, eager_fast

__all__ = [
    "abs", "absolute", "add", "allclose", "angle", "arccos", "arccosh", "arcsin", "arcsinh",
    "arctan", "arctan2", "arctanh", "around", "bitwise_and", "bitwise_not", "bitwise_or",
    "bitwise_xor", "cbrt", "ceil", "clip", "conj", "conjugate", "copysign", "cos", "cosh",
    "deg2rad", "degrees", "divide", "divmod", "equal", "exp", "exp2", "expm1", "float_power",
    "floor", "floor_divide", "fmax", "fmin", "fmod", "frexp", "greater", "greater_equal",
    "heaviside", "hypot", "imag", "invert", "isclose", "isfinite", "isinf", "isnan",
    "isneginf", "isposinf", "ldexp", "left_shift", "less", "less_equal", "log", "log1p",
    "log2", "log10", "logaddexp", "logaddexp2", "logical_and", "logical_not", "logical_or",
    "logical_xor", "maximum", "minimum", "mod", "multiply", "nan_to_num", "negative",
    "nextafter", "not_equal", "positive", "power", "rad2deg", "radians", "real",
    "reciprocal", "remainder", "right_shift", "rint", "round", "sign", "signbit", "sin",
    "sinc", "sinh", "sqrt", "square", "subtract", "tan", "tanh", "true_divide", "trunc",
    "where",
]

_PROMOTERS = {"all": promote_dtypes, "inexact": promote_dtypes_inexact,
              "numeric": promote_dtypes_numeric}


# --- promotion and broadcasting ------------------------------------------------------
def _broadcast_shapes(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    rank = max(len(s) for s in shapes)
    result = [1] * rank
    for shape in shapes:
        for i, d in enumerate(shape, start=rank - len(shape)):
            if d == result[i] or d == 1:
                continue
            if result[i] != 1:
                listed = " ".join(str(s).replace(" ", "") for s in shapes)
                raise ValueError(f"operands could not be broadcast together with shapes {listed}")
            result[i] = d
    return tuple(result)


def _check_rank_promotion(name: str, shapes: list[tuple[int, ...]]) -> None:
    # Like JAX, scalars never count: only operands of different nonzero ranks.
    mode = config.read("numpy_rank_promotion")
    if mode == "allow" or len({len(s) for s in shapes if s}) < 2:
        return
    listed = " ".join(str(s) for s in shapes)
    msg = (f"{name}: operands with shapes {listed} need implicit rank promotion, which "
           f"numpy_rank_promotion={mode!r} forbids; add leading axes explicitly "
           "(reshape or expand_dims), or set numpy_rank_promotion to 'allow'.")
    if mode == "raise":
        raise ValueError(msg)
    warnings.warn(msg, stacklevel=3)


def _broadcast_to(x: Any, shape: tuple[int, ...]) -> Any:
    x_shape = aval_of(x).shape
    if x_shape == shape:
        return x
    return lax.broadcast_in_dim(x, shape, tuple(range(len(shape) - len(x_shape), len(shape))))


def _promote_and_broadcast(name: str, *args: Any, kind: str = "all") -> list[Any]:
    """`args` promoted together (`kind`: "all", "inexact" or "numeric", choosing
    `promote_dtypes*`) and broadcast to their common NumPy broadcast shape."""
    if _already_promoted(args, kind):
        return list(args)
    for a in args:
        if a is None or isinstance(a, str):
            raise TypeError(f"{name}: expected array-like arguments, got {type(a).__name__}")
    return _broadcast(name, *_PROMOTERS[kind](*args))


def _promote_and_align(name: str, *args: Any, kind: str = "all") -> list[Any]:
    """`args` promoted together and brought to one rank, as JAX's binary ufuncs do:
    lax's elementwise primitives broadcast rank-0 and size-1 operands themselves,
    so scalars stay scalars (staged as `mul a 2.0:f32[]`) and a lower-rank operand
    only gains leading axes of size 1."""
    if _already_promoted(args, kind):
        return list(args)
    for a in args:
        if a is None or isinstance(a, str):
            raise TypeError(f"{name}: expected array-like arguments, got {type(a).__name__}")
    args = _PROMOTERS[kind](*args)
    shapes = [aval_of(x).shape for x in args]
    if len({len(s) for s in shapes if s}) < 2:
        if len({len(s) for s in shapes}) > 1:
            _broadcast_shapes(shapes)  # the error names incompatible shapes
        return list(args)
    _check_rank_promotion(name, shapes)
    rank = len(_broadcast_shapes(shapes))
    return [x if len(s) == rank else lax.broadcast_in_dim(
        x, (1,) * (rank - len(s)) + s, tuple(range(rank - len(s), rank)))
        for x, s in zip(args, shapes)]


def _already_promoted(args: tuple[Any, ...], kind: str) -> bool:
    # The common eager case, arrays of one shape, dtype and weak type, skips the
    # promotion lattice and broadcasting: this is most of a small op's overhead.
    first = None
    for a in args:
        aval = getattr(a, "aval", None)  # Arrays and tracers carry one; NumPy values do not
        if aval is None:
            return False
        key = (aval.shape, aval.dtype, aval.weak_type)
        if first is None:
            first = key
        elif key != first:
            return False
    dtype = first[1]
    if kind == "inexact":
        return core_dtypes.is_inexact(dtype)
    return kind == "all" or dtype != np.bool_


def _broadcast(name: str, *args: Any) -> list[Any]:
    shapes = [aval_of(x).shape for x in args]
    _check_rank_promotion(name, shapes)
    shape = _broadcast_shapes(shapes)
    return [_broadcast_to(x, shape) for x in args]


def _is_int(x: Any) -> bool:
    return dtype_of(x).kind in "iu"


def _is_complex(x: Any) -> bool:
    return dtype_of(x).kind == "c"


def _const(x: Any, value: Any, dtype: Any = None) -> Any:
    # Shaped like x and weak when x is, so constants never change a result's dtype.
    return lax.full_like(x, value, dtype)


def _no_out(name: str, out: Any) -> None:
    if out is not None:
        raise NotImplementedError(f"the out argument of {name}: lamella arrays are immutable, "
                                  "so the result is returned instead")


def _require_real(name: str, x: Any) -> None:
    if _is_complex(x):
        raise TypeError(f"{name} is not defined for complex inputs (got {dtype_of(x)})")


def _require_integral(name: str, x: Any) -> None:
    if dtype_of(x).kind not in "biu":
        raise TypeError(f"{name} requires integer or boolean inputs, got {dtype_of(x)}")


def _unary(name: str, fn: Callable[[Any], Any], kind: str, doc: str) -> Callable[[Any], Any]:
    def ufunc(x: Any, /) -> Any:
        (x,) = _promote_and_broadcast(name, x, kind=kind)
        return fn(x)
    ufunc.__name__ = ufunc.__qualname__ = name
    ufunc.__doc__ = doc
    return ufunc


# --- arithmetic ----------------------------------------------------------------------
def add(x1: Any, x2: Any, /) -> Any:
    """Elementwise x1 + x2 (logical or for bools).

    >>> add(np.int32([1, 2]), 3)
    Array([4, 5], dtype=int32)
    """
    x1, x2 = _promote_and_align("add", x1, x2)
    return lax.bitwise_or(x1, x2) if dtype_of(x1) == np.bool_ else lax.add(x1, x2)


def subtract(x1: Any, x2: Any, /) -> Any:
    """Elementwise x1 - x2."""
    x1, x2 = _promote_and_align("subtract", x1, x2)
    if dtype_of(x1) == np.bool_:
        raise TypeError("subtract is not defined for booleans; use logical_xor")
    return lax.sub(x1, x2)


def multiply(x1: Any, x2: Any, /) -> Any:
    """Elementwise x1 * x2 (logical and for bools)."""
    x1, x2 = _promote_and_align("multiply", x1, x2)
    return lax.bitwise_and(x1, x2) if dtype_of(x1) == np.bool_ else lax.mul(x1, x2)


def true_divide(x1: Any, x2: Any, /) -> Any:
    """Elementwise x1 / x2; integers and bools divide as the default float.

    >>> true_divide(np.int32([1, 3]), 2)
    Array([0.5, 1.5], dtype=float32)
    """
    x1, x2 = _promote_and_align("true_divide", x1, x2, kind="inexact")
    return lax.div(x1, x2)


divide = true_divide


def _int_floor_divide(x1: Any, x2: Any) -> Any:
    # lax.div truncates toward zero; step down where the signs differ and the
    # division was inexact to get NumPy's floor. Division by zero keeps XLA's
    # defined quotient (-1, all bits set) and, as in JAX, the sign test steps it
    # down to -2 for a nonzero dividend.
    quotient = lax.div(x1, x2)
    if dtype_of(x1).kind == "u":
        return quotient
    zero = _const(x1, 0)
    differ = lax.ne(lax.sign(x1), lax.sign(x2))
    inexact = lax.ne(lax.rem(x1, x2), zero)
    return lax.select(lax.bitwise_and(differ, inexact), lax.sub(quotient, _const(x1, 1)),
                      quotient)


def _float_divmod(x1: Any, x2: Any) -> tuple[Any, Any]:
    # Python's divmod for floats: the remainder takes the divisor's sign, the
    # quotient is then exact up to rounding, so round it to an integer value.
    # Dividing by zero gives x1 / 0 (an infinity, or NaN) and a NaN remainder.
    mod = lax.rem(x1, x2)
    zero = _const(x1, 0)
    dividend = lax.select(lax.eq(x2, zero), x1, lax.sub(x1, mod))
    quotient = lax.div(dividend, x2)
    fix = lax.bitwise_and(lax.ne(mod, zero), lax.ne(lax.lt(x2, zero), lax.lt(mod, zero)))
    mod = lax.select(fix, lax.add(mod, x2), mod)
    quotient = lax.select(fix, lax.sub(quotient, _const(x1, 1)), quotient)
    return lax.round(quotient, lax.RoundingMethod.TO_NEAREST_EVEN), mod


def floor_divide(x1: Any, x2: Any, /) -> Any:
    """Elementwise floor(x1 / x2), NumPy's `//` (rounds toward minus infinity).

    >>> floor_divide(np.int32([7, -7]), 2)
    Array([ 3, -4], dtype=int32)
    """
    x1, x2 = _promote_and_broadcast("floor_divide", x1, x2, kind="numeric")
    _require_real("floor_divide", x1)
    if _is_int(x1):
        return _int_floor_divide(x1, x2)
    return _float_divmod(x1, x2)[0]


def _int_remainder(x1: Any, x2: Any) -> Any:
    # x % 0 is 0, as in JAX (XLA's rem would give x): divide by 1 there instead.
    x2 = lax.select(lax.eq(x2, _const(x2, 0)), _const(x2, 1), x2)
    mod = lax.rem(x1, x2)
    if dtype_of(x1).kind == "u":
        return mod
    zero = _const(x1, 0)
    fix = lax.bitwise_and(lax.ne(mod, zero), lax.ne(lax.lt(x2, zero), lax.lt(mod, zero)))
    return lax.select(fix, lax.add(mod, x2), mod)


def remainder(x1: Any, x2: Any, /) -> Any:
    """Elementwise remainder of floor division; the result has the divisor's sign.

    >>> remainder(np.int32([7, -7]), 3)
    Array([1, 2], dtype=int32)
    """
    x1, x2 = _promote_and_broadcast("remainder", x1, x2, kind="numeric")
    _require_real("remainder", x1)
    return _int_remainder(x1, x2) if _is_int(x1) else _float_divmod(x1, x2)[1]


mod = remainder


def fmod(x1: Any, x2: Any, /) -> Any:
    """Elementwise C-style remainder; the result has the dividend's sign.

    >>> fmod(np.int32([7, -7]), 3)
    Array([ 1, -1], dtype=int32)
    """
    x1, x2 = _promote_and_broadcast("fmod", x1, x2, kind="numeric")
    _require_real("fmod", x1)
    if _is_int(x1):
        # Integer division by zero is undefined in XLA; NumPy gives 0, which
        # x % 1 also gives.
        x2 = lax.select(lax.eq(x2, _const(x2, 0)), _const(x2, 1), x2)
    return lax.rem(x1, x2)


def divmod(x1: Any, x2: Any, /) -> tuple[Any, Any]:
    """(floor_divide(x1, x2), remainder(x1, x2)) computed together.

    >>> q, r = divmod(np.float32([7.5, -7.5]), 2.0)
    >>> q, r
    (Array([ 3., -4.], dtype=float32), Array([1.5, 0.5], dtype=float32))
    """
    x1, x2 = _promote_and_broadcast("divmod", x1, x2, kind="numeric")
    _require_real("divmod", x1)
    if _is_int(x1):
        return _int_floor_divide(x1, x2), _int_remainder(x1, x2)
    return _float_divmod(x1, x2)


def _int_power(base: Any, exponent: Any) -> Any:
    # Binary exponentiation over the exponent's low bits. Like JAX, six bits
    # suffice: any base above 1 overflows for larger exponents; negative
    # exponents are not meaningful for integers.
    zero, one = _const(exponent, 0), _const(exponent, 1)
    acc = lax.select(lax.bitwise_and(lax.eq(base, _const(base, 0)), lax.ne(exponent, zero)),
                     _const(base, 0), _const(base, 1))
    for _ in range(6):
        bit = lax.ne(lax.bitwise_and(exponent, one), zero)
        acc = lax.select(bit, lax.mul(acc, base), acc)
        base = lax.mul(base, base)
        exponent = lax.shift_right_logical(exponent, one)
    return acc


def power(x1: Any, x2: Any, /) -> Any:
    """Elementwise x1 ** x2. Integer ** integer stays integer.

    A concrete integer exponent uses repeated squaring (`lax.integer_pow`)
    and keeps x1's dtype; as in JAX, a negative one with an integer base
    raises TypeError.

    >>> power(np.int32([2, 3]), 3)
    Array([ 8, 27], dtype=int32)
    >>> power(np.float32(2), np.float32([0.5, -1]))
    Array([1.4142135, 0.5      ], dtype=float32)
    """
    if isinstance(x2, (int, np.integer)) and not isinstance(x2, (bool, np.bool_)):
        return _integer_power(x1, operator.index(x2))
    return _array_power(x1, x2)


@eager_fast("exponent")
def _integer_power(x1: Any, exponent: int) -> Any:
    (x1,) = _promote_and_broadcast("power", x1, kind="numeric")
    return lax.integer_pow(x1, exponent)


@eager_fast()
def _array_power(x1: Any, x2: Any) -> Any:
    x1, x2 = _promote_and_broadcast("power", x1, x2, kind="numeric")
    return _int_power(x1, x2) if _is_int(x1) else lax.pow(x1, x2)


def float_power(x: Any, y: Any, /) -> Any:
    """Elementwise x ** y computed in the inexact promoted dtype."""
    x, y = _promote_and_broadcast("float_power", x, y, kind="inexact")
    return lax.pow(x, y)


def negative(x: Any, /) -> Any:
    """Elementwise -x."""
    (x,) = _promote_and_broadcast("negative", x)
    if dtype_of(x) == np.bool_:
        raise TypeError("negative is not defined for booleans; use logical_not")
    return lax.neg(x)


def positive(x: Any, /) -> Any:
    """Elementwise +x (x itself, as an Array)."""
    (x,) = _promote_and_broadcast("positive", x)
    return x


def absolute(x: Any, /) -> Any:
    """Elementwise |x|; complex inputs give their real magnitude.

    >>> absolute(np.complex64([3 + 4j]))
    Array([5.], dtype=float32)
    """
    (x,) = _promote_and_broadcast("absolute", x)
    return x if dtype_of(x).kind in "bu" else lax.abs(x)


abs = absolute


def sign(x: Any, /) -> Any:
    """Elementwise sign: -1, 0 or 1 (x / |x| for complex, 0 at 0)."""
    (x,) = _promote_and_broadcast("sign", x)
    if _is_complex(x):
        magnitude = lax.abs(x)
        is_zero = lax.eq(magnitude, _const(magnitude, 0))
        safe = lax.select(is_zero, _const(magnitude, 1), magnitude)
        quotient = lax.div(x, lax.convert_element_type(safe, dtype_of(x)))
        return lax.select(is_zero, _const(x, 0), quotient)
    if dtype_of(x).kind in "bu":
        return lax.convert_element_type(lax.ne(x, _const(x, 0)), dtype_of(x))
    return lax.sign(x)


def reciprocal(x: Any, /) -> Any:
    """Elementwise 1 / x (integers promote to the default float)."""
    (x,) = _promote_and_broadcast("reciprocal", x, kind="inexact")
    return lax.integer_pow(x, -1)


def square(x: Any, /) -> Any:
    """Elementwise x * x, keeping x's (numeric) dtype."""
    (x,) = _promote_and_broadcast("square", x, kind="numeric")
    return lax.integer_pow(x, 2)


# --- exponentials, logarithms, trigonometry -------------------------------------------
_LN2, _LN10 = math.log(2.0), math.log(10.0)

sqrt = _unary("sqrt", lax.sqrt, "inexact", """Elementwise square root.

    >>> sqrt(np.int32([4, 9]))
    Array([2., 3.], dtype=float32)
    """)
cbrt = _unary("cbrt", lax.cbrt, "inexact", "Elementwise real cube root.")
exp = _unary("exp", lax.exp, "inexact", "Elementwise e**x.")
exp2 = _unary("exp2", lax.exp2, "inexact", "Elementwise 2**x.")
expm1 = _unary("expm1", lax.expm1, "inexact", "Elementwise e**x - 1, accurate near 0.")
log = _unary("log", lax.log, "inexact", "Elementwise natural logarithm.")
log1p = _unary("log1p", lax.log1p, "inexact", "Elementwise log(1 + x), accurate near 0.")
log2 = _unary("log2", lambda x: lax.div(lax.log(x), _const(x, _LN2)), "inexact",
              "Elementwise base-2 logarithm.")
log10 = _unary("log10", lambda x: lax.div(lax.log(x), _const(x, _LN10)), "inexact",
               "Elementwise base-10 logarithm.")
sin = _unary("sin", lax.sin, "inexact", """Elementwise sine (radians).

    >>> sin(0)
    Array(0., dtype=float32, weak_type=True)
    """)
cos = _unary("cos", lax.cos, "inexact", "Elementwise cosine (radians).")
tan = _unary("tan", lax.tan, "inexact", "Elementwise tangent (radians).")
arcsin = _unary("arcsin", lax.asin, "inexact", "Elementwise inverse sine.")
arccos = _unary("arccos", lax.acos, "inexact", "Elementwise inverse cosine.")
arctan = _unary("arctan", lax.atan, "inexact", "Elementwise inverse tangent.")
sinh = _unary("sinh", lax.sinh, "inexact", "Elementwise hyperbolic sine.")
cosh = _unary("cosh", lax.cosh, "inexact", "Elementwise hyperbolic cosine.")
tanh = _unary("tanh", lax.tanh, "inexact", "Elementwise hyperbolic tangent.")
arcsinh = _unary("arcsinh", lax.asinh, "inexact", "Elementwise inverse hyperbolic sine.")
arccosh = _unary("arccosh", lax.acosh, "inexact", "Elementwise inverse hyperbolic cosine.")
arctanh = _unary("arctanh", lax.atanh, "inexact", "Elementwise inverse hyperbolic tangent.")


def _scale(x: Any, factor: float) -> Any:
    return lax.mul(x, _const(x, factor))


deg2rad = _unary("deg2rad", lambda x: _scale(x, math.pi / 180), "inexact",
                 "Elementwise conversion of degrees to radians.")
rad2deg = _unary("rad2deg", lambda x: _scale(x, 180 / math.pi), "inexact",
                 "Elementwise conversion of radians to degrees.")
radians = deg2rad
degrees = rad2deg


def arctan2(x1: Any, x2: Any, /) -> Any:
    """Elementwise arctan(x1 / x2) in the quadrant of the point (x2, x1)."""
    x1, x2 = _promote_and_broadcast("arctan2", x1, x2, kind="inexact")
    _require_real("arctan2", x1)
    return lax.atan2(x1, x2)


def hypot(x1: Any, x2: Any, /) -> Any:
    """Elementwise sqrt(x1**2 + x2**2) without intermediate overflow.

    >>> hypot(3, 4)
    Array(5., dtype=float32, weak_type=True)
    """
    x1, x2 = _promote_and_broadcast("hypot", x1, x2, kind="inexact")
    _require_real("hypot", x1)
    a, b = lax.abs(x1), lax.abs(x2)
    big, small = lax.max(a, b), lax.min(a, b)
    # Scale by the larger magnitude; guard 0/0 and inf/inf, which would give NaN.
    zero, one, inf = _const(big, 0), _const(big, 1), _const(big, np.inf)
    is_zero = lax.eq(big, zero)
    ratio = lax.div(small, lax.select(is_zero, one, big))
    out = lax.mul(big, lax.sqrt(lax.add(one, lax.mul(ratio, ratio))))
    any_inf = lax.bitwise_or(lax.eq(a, inf), lax.eq(b, inf))
    return lax.select(any_inf, inf, lax.select(is_zero, zero, out))


def logaddexp(x1: Any, x2: Any, /) -> Any:
    """Elementwise log(exp(x1) + exp(x2)) without overflow (complex inputs too).

    The slopes are exp(x_i - result): NaN where an input is NaN or both are -inf,
    as in JAX; where the result is +inf, 1 for the infinite inputs and 0 for the
    finite ones.

    >>> logaddexp(np.float32(1000), np.float32(1000))
    Array(1000.6932, dtype=float32)
    """
    x1, x2 = _promote_and_broadcast("logaddexp", x1, x2, kind="inexact")
    if _is_complex(x1):
        return _complex_logaddexp(x1, x2)
    return _logaddexp_real(x1, x2)


def logaddexp2(x1: Any, x2: Any, /) -> Any:
    """Elementwise log2(2**x1 + 2**x2) without overflow (complex inputs too)."""
    x1, x2 = _promote_and_broadcast("logaddexp2", x1, x2, kind="inexact")
    if _is_complex(x1):
        ln2 = _const(x1, _LN2)
        return lax.div(_complex_logaddexp(lax.mul(x1, ln2), lax.mul(x2, ln2)), ln2)
    return _logaddexp2_real(x1, x2)


def _logaddexp(x1: Any, x2: Any, softplus_neg: Callable[[Any], Any]) -> Any:
    amax = lax.max(x1, x2)
    delta = lax.sub(x1, x2)
    # delta is NaN when both are the same infinity (or either is NaN); then
    # x1 + x2 gives the right inf (or NaN).
    is_nan = lax.ne(delta, delta)
    safe = lax.select(is_nan, _const(delta, 0), delta)
    return lax.select(is_nan, lax.add(x1, x2),
                      lax.add(amax, softplus_neg(lax.neg(lax.abs(safe)))))


def _logaddexp_slopes(x1: Any, x2: Any, out: Any, power: Callable[[Any], Any]
                      ) -> tuple[Any, Any]:
    # d out / d x_i = power(x_i - out), the weights of a two-term softmax. At an
    # infinite result that is inf - inf: take the limit, all weight on the infinite
    # inputs (JAX gives the finite one e**x there).
    inf = _const(out, np.inf)
    at_inf = lax.eq(out, inf)

    def slope(x: Any) -> Any:
        limit = lax.select(lax.eq(x, inf), _const(x, 1), _const(x, 0))
        return lax.select(at_inf, limit, power(lax.sub(x, out)))
    return slope(x1), slope(x2)


@custom_jvp
def _logaddexp_real(x1: Any, x2: Any) -> Any:
    return _logaddexp(x1, x2, lambda d: lax.log1p(lax.exp(d)))


@_logaddexp_real.defjvp
def _logaddexp_real_jvp(primals: tuple[Any, Any], tangents: tuple[Any, Any]) -> tuple[Any, Any]:
    x1, x2 = primals
    out = _logaddexp_real(x1, x2)
    s1, s2 = _logaddexp_slopes(x1, x2, out, lax.exp)
    return out, lax.add(lax.mul(s1, tangents[0]), lax.mul(s2, tangents[1]))


@custom_jvp
def _logaddexp2_real(x1: Any, x2: Any) -> Any:
    return _logaddexp(x1, x2, lambda d: lax.div(lax.log1p(lax.exp2(d)), _const(d, _LN2)))


@_logaddexp2_real.defjvp
def _logaddexp2_real_jvp(primals: tuple[Any, Any], tangents: tuple[Any, Any]
                         ) -> tuple[Any, Any]:
    x1, x2 = primals
    out = _logaddexp2_real(x1, x2)
    s1, s2 = _logaddexp_slopes(x1, x2, out, lax.exp2)
    return out, lax.add(lax.mul(s1, tangents[0]), lax.mul(s2, tangents[1]))


def _complex_logaddexp(x1: Any, x2: Any) -> Any:
    # log(e**a + e**b) = a + log1p(e**(b - a)) with a the operand of larger real
    # part, so e**(b - a) cannot overflow.
    first = lax.ge(lax.real(x1), lax.real(x2))
    big, small = lax.select(first, x1, x2), lax.select(first, x2, x1)
    return lax.add(big, lax.log1p(lax.exp(lax.sub(small, big))))


def sinc(x: Any, /) -> Any:
    """Elementwise normalized sinc, sin(pi x) / (pi x), with sinc(0) = 1.

    >>> sinc(np.float32([0, 0.5]))
    Array([1.        , 0.63661975], dtype=float32)
    """
    (x,) = _promote_and_broadcast("sinc", x, kind="inexact")
    is_zero = lax.eq(x, _const(x, 0))
    # Substitute 1 at zero so neither the value nor its gradient sees 0/0.
    pi_x = _scale(lax.select(is_zero, _const(x, 1), x), math.pi)
    return lax.select(is_zero, _const(x, 1), lax.div(lax.sin(pi_x), pi_x))


# --- extrema ---------------------------------------------------------------------------
def maximum(x1: Any, x2: Any, /) -> Any:
    """Elementwise maximum, propagating NaNs."""
    x1, x2 = _promote_and_align("maximum", x1, x2)
    return lax.max(x1, x2)


def minimum(x1: Any, x2: Any, /) -> Any:
    """Elementwise minimum, propagating NaNs."""
    x1, x2 = _promote_and_align("minimum", x1, x2)
    return lax.min(x1, x2)


def fmax(x1: Any, x2: Any) -> Any:
    """Elementwise maximum ignoring NaNs (NaN only where both are NaN).

    >>> fmax(np.float32([1, np.nan]), np.float32([np.nan, np.nan]))
    Array([ 1., nan], dtype=float32)
    """
    x1, x2 = _promote_and_broadcast("fmax", x1, x2)
    return lax.select(lax.bitwise_or(lax.gt(x1, x2), lax.ne(x2, x2)), x1, x2)


def fmin(x1: Any, x2: Any) -> Any:
    """Elementwise minimum ignoring NaNs (NaN only where both are NaN)."""
    x1, x2 = _promote_and_broadcast("fmin", x1, x2)
    return lax.select(lax.bitwise_or(lax.lt(x1, x2), lax.ne(x2, x2)), x1, x2)


def clip(arr: Any = None, /, min: Any = None, max: Any = None) -> Any:  # noqa: A002
    """`arr` limited to [min, max] (either bound may be None), as
    `minimum(max, maximum(min, arr))`, so the bounds take part in promotion.

    >>> clip(np.int32([-2, 5, 9]), 0, 6)
    Array([0, 5, 6], dtype=int32)
    """
    if arr is None:
        raise ValueError("No input was provided to the clip function: pass the array to clip")
    if any(v is not None and _is_complex(v) for v in (arr, min, max)):
        # As JAX: maximum/minimum order complex numbers, but clip refuses them.
        raise ValueError("clip got a complex value (the array or a bound): complex numbers "
                         "have no natural order to clip by; clip their real or imaginary "
                         "parts (lamella.numpy.real / imag) instead")
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    if min is None and max is None:
        (arr,) = _promote_and_broadcast("clip", arr)
    return arr


# --- rounding --------------------------------------------------------------------------
def floor(x: Any, /) -> Any:
    """Elementwise floor; integers and bools are returned unchanged."""
    (x,) = _promote_and_broadcast("floor", x)
    _require_real("floor", x)
    return x if dtype_of(x).kind in "biu" else lax.floor(x)


def ceil(x: Any, /) -> Any:
    """Elementwise ceiling; integers and bools are returned unchanged."""
    (x,) = _promote_and_broadcast("ceil", x)
    _require_real("ceil", x)
    return x if dtype_of(x).kind in "biu" else lax.ceil(x)


def trunc(x: Any) -> Any:
    """Elementwise rounding toward zero; integers and bools are returned unchanged."""
    (x,) = _promote_and_broadcast("trunc", x)
    _require_real("trunc", x)
    if dtype_of(x).kind in "biu":
        return x
    return lax.select(lax.lt(x, _const(x, 0)), lax.ceil(x), lax.floor(x))


def _round_even(x: Any) -> Any:
    if _is_complex(x):
        return lax.complex(_round_even(lax.real(x)), _round_even(lax.imag(x)))
    return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


def rint(x: Any, /) -> Any:
    """Elementwise round to the nearest integer value, ties to even; like JAX,
    integers and bools become the default float.

    >>> rint(np.float32([0.5, 1.5, -2.5]))
    Array([ 0.,  2., -2.], dtype=float32)
    """
    (x,) = _promote_and_broadcast("rint", x, kind="inexact")
    return _round_even(x)


def round(a: Any, decimals: int = 0, out: None = None) -> Any:  # noqa: A001
    """`a` rounded to `decimals` decimal places, ties to even (as NumPy).

    Integers are returned unchanged for decimals >= 0; float16 and bfloat16
    are scaled in float32 so that `a * 10**decimals` cannot overflow.

    >>> round(np.float32([1.25, 2.5, 123.456]), 1)
    Array([  1.2,   2.5, 123.5], dtype=float32)
    """
    if out is not None:
        raise NotImplementedError("round: the out argument is not supported (arrays are "
                                  "immutable)")
    decimals = operator.index(decimals)
    (a,) = _promote_and_broadcast("round", a, kind="numeric")
    dtype = dtype_of(a)
    if dtype.kind in "iu":
        if decimals < 0:
            raise NotImplementedError("round: integer inputs with decimals < 0")
        return a
    if decimals == 0:
        return _round_even(a)
    narrow = dtype.itemsize < 4 and dtype.kind == "f"
    work = lax.convert_element_type(a, np.float32) if narrow else a
    factor = _const(work, 10.0 ** decimals)
    scaled = _round_even(lax.mul(work, factor))
    result = lax.div(scaled, factor)
    return lax.convert_element_type(result, dtype) if narrow else result


around = round


# --- floating-point classification and bits ---------------------------------------------
def isnan(x: Any, /) -> Any:
    """Elementwise test for NaN (a complex value is NaN if either part is)."""
    (x,) = _promote_and_broadcast("isnan", x)
    if dtype_of(x).kind in "biu":
        return _const(x, False, np.bool_)
    return _strong(lax.ne(x, x))


def isinf(x: Any, /) -> Any:
    """Elementwise test for positive or negative infinity."""
    (x,) = _promote_and_broadcast("isinf", x)
    if dtype_of(x).kind in "biu":
        return _const(x, False, np.bool_)
    if _is_complex(x):
        return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
    return _strong(lax.eq(lax.abs(x), _const(x, np.inf)))


def isfinite(x: Any, /) -> Any:
    """Elementwise test for values that are neither infinite nor NaN.

    >>> isfinite(np.float32([1, np.inf, np.nan]))
    Array([ True, False, False], dtype=bool)
    """
    (x,) = _promote_and_broadcast("isfinite", x)
    if dtype_of(x).kind in "biu":
        return _const(x, True, np.bool_)
    if _is_complex(x):
        return _strong(lax.bitwise_and(lax.is_finite(lax.real(x)),
                                       lax.is_finite(lax.imag(x))))
    return _strong(lax.is_finite(x))


def isposinf(x: Any, /, out: None = None) -> Any:
    """Elementwise test for positive infinity."""
    _no_out("isposinf", out)
    (x,) = _promote_and_broadcast("isposinf", x)
    _require_real("isposinf", x)
    if dtype_of(x).kind in "biu":
        return _const(x, False, np.bool_)
    return _strong(lax.eq(x, _const(x, np.inf)))


def isneginf(x: Any, /, out: None = None) -> Any:
    """Elementwise test for negative infinity."""
    _no_out("isneginf", out)
    (x,) = _promote_and_broadcast("isneginf", x)
    _require_real("isneginf", x)
    if dtype_of(x).kind in "biu":
        return _const(x, False, np.bool_)
    return _strong(lax.eq(x, _const(x, -np.inf)))


def _int_type(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"int{8 * dtype.itemsize}")


def signbit(x: Any, /) -> Any:
    """Elementwise test of the sign bit (true for -0.0 and negative NaNs too).

    >>> signbit(np.float32([-0.0, 0.0, -3]))
    Array([ True, False,  True], dtype=bool)
    """
    (x,) = _promote_and_broadcast("signbit", x)
    _require_real("signbit", x)
    dtype = dtype_of(x)
    if dtype.kind in "bu":
        return _const(x, False, np.bool_)
    if dtype.kind == "i":
        return _strong(lax.lt(x, _const(x, 0)))
    # The sign bit is the integer's sign bit after a same-width bitcast.
    bits = lax.bitcast_convert_type(x, _int_type(dtype))
    return lax.lt(bits, lax.full_like(bits, 0))


def copysign(x1: Any, x2: Any, /) -> Any:
    """Elementwise |x1| with the sign (bit) of x2."""
    x1, x2 = _promote_and_broadcast("copysign", x1, x2, kind="inexact")
    _require_real("copysign", x1)
    magnitude = lax.abs(x1)
    return lax.select(signbit(x2), lax.neg(magnitude), magnitude)


def heaviside(x1: Any, x2: Any, /) -> Any:
    """Elementwise step function: 0 for x1 < 0, x2 at 0, 1 for x1 > 0."""
    x1, x2 = _promote_and_broadcast("heaviside", x1, x2, kind="inexact")
    _require_real("heaviside", x1)
    zero = _const(x1, 0)
    return lax.select(lax.lt(x1, zero), zero,
                      lax.select(lax.gt(x1, zero), _const(x1, 1), x2))


def nextafter(x: Any, y: Any, /) -> Any:
    """Elementwise next representable value after x toward y."""
    x1, x2 = _promote_and_broadcast("nextafter", x, y, kind="inexact")
    _require_real("nextafter", x1)
    return lax.nextafter(x1, x2)


def _pow2(k: Any, dtype: np.dtype) -> Any:
    # 2**k built exactly from its bits (lax.exp2 may be approximate); k is
    # clamped to the normal exponent range.
    info = finfo(dtype)
    int_t = _int_type(dtype)
    bias = -int(info.minexp) + 1
    k = lax.convert_element_type(k, int_t)
    k = lax.clamp(lax.full_like(k, 1 - bias), k, lax.full_like(k, bias))
    bits = lax.shift_left(lax.add(k, lax.full_like(k, bias)),
                          lax.full_like(k, int(info.nmant)))
    return lax.bitcast_convert_type(bits, dtype)


def ldexp(x1: Any, x2: Any, /) -> Any:
    """Elementwise x1 * 2**x2 for integer x2.

    >>> ldexp(np.float32([1, 3]), np.int32([3, -1]))
    Array([8. , 1.5], dtype=float32)
    """
    (x1,) = promote_dtypes_inexact(x1)
    (x2,) = promote_dtypes(x2)
    _require_real("ldexp", x1)
    if dtype_of(x2).kind not in "iu":
        raise TypeError(f"ldexp: the exponent must be an integer, got {dtype_of(x2)}")
    x1, x2 = _broadcast("ldexp", x1, lax.convert_element_type(x2, np.int32))
    dtype = dtype_of(x1)
    # Two factors of 2**(k/2) reach results (subnormal ones included) that one
    # normal power of two cannot.
    half = lax.shift_right_arithmetic(x2, _const(x2, 1))
    return lax.mul(lax.mul(x1, _pow2(half, dtype)), _pow2(lax.sub(x2, half), dtype))


def frexp(x: Any, /) -> tuple[Any, Any]:
    """(mantissa, exponent) with x = mantissa * 2**exponent and 0.5 <= |mantissa| < 1.

    Zeros, infinities and NaNs give (x, 0). Subnormal inputs are handled, but
    XLA on CPU flushes them to zero before they get here, as in JAX.

    >>> frexp(np.float32([8, -0.75]))
    (Array([ 0.5 , -0.75], dtype=float32), Array([4, 0], dtype=int32))
    """
    (x,) = _promote_and_broadcast("frexp", x, kind="inexact")
    _require_real("frexp", x)
    dtype = dtype_of(x)
    info = finfo(dtype)
    int_t = _int_type(dtype)
    nmant, bias = int(info.nmant), -int(info.minexp) + 1
    exp_mask = (1 << int(info.nexp)) - 1
    # Subnormals have no implicit leading bit: scale them into the normal range
    # first and account for the scaling in the exponent.
    subnormal = lax.lt(lax.abs(x), _const(x, float(info.smallest_normal)))
    scaled = lax.select(subnormal, lax.mul(x, _const(x, float(2 ** nmant))), x)
    bits = lax.bitcast_convert_type(scaled, int_t)
    zero_i = lax.full_like(bits, 0)
    offset = lax.select(subnormal, lax.full_like(bits, -nmant), zero_i)
    biased = lax.bitwise_and(lax.shift_right_logical(bits, lax.full_like(bits, nmant)),
                             lax.full_like(bits, exp_mask))
    exponent = lax.add(offset, lax.sub(biased, lax.full_like(bits, bias - 1)))
    # Replace the exponent field with that of 0.5, keeping sign and mantissa.
    field = np.array(exp_mask << nmant, np.uint64).astype(int_t)
    cleared = lax.bitwise_and(bits, lax.full_like(bits, ~field))
    mantissa_bits = lax.bitwise_or(cleared, lax.full_like(bits, (bias - 1) << nmant))
    mantissa = lax.bitcast_convert_type(mantissa_bits, dtype)
    special = lax.bitwise_or(lax.bitwise_not(lax.is_finite(x)), lax.eq(x, _const(x, 0)))
    exponent = lax.select(special, zero_i, exponent)
    return lax.select(special, x, mantissa), lax.convert_element_type(exponent, np.int32)


def nan_to_num(x: Any, copy: bool = True, nan: Any = 0.0, posinf: Any = None,
               neginf: Any = None) -> Any:
    """`x` with NaN replaced by `nan` and infinities by `posinf`/`neginf`
    (default: the dtype's largest finite values); complex parts separately.

    >>> nan_to_num(np.float32([np.nan, np.inf, 1]), posinf=9.0)
    Array([0., 9., 1.], dtype=float32)
    """
    del copy  # arrays are immutable; a new Array is always returned
    (x,) = _promote_and_broadcast("nan_to_num", x)
    dtype = dtype_of(x)
    if dtype.kind in "biu":
        return x
    if dtype.kind == "c":
        return lax.complex(nan_to_num(lax.real(x), nan=nan, posinf=posinf, neginf=neginf),
                           nan_to_num(lax.imag(x), nan=nan, posinf=posinf, neginf=neginf))
    info = finfo(dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    out = lax.select(lax.ne(x, x), _const(x, nan), x)
    out = lax.select(lax.eq(out, _const(x, np.inf)), _const(x, posinf), out)
    return lax.select(lax.eq(out, _const(x, -np.inf)), _const(x, neginf), out)


# --- comparisons and logic ---------------------------------------------------------------
def _comparison(name: str, fn: Callable[[Any, Any], Any], doc: str,
                ordering: bool = False) -> Callable[[Any, Any], Any]:
    def compare(x: Any, y: Any, /) -> Any:
        x, y = _promote_and_align(name, x, y)
        if ordering and _is_complex(x):
            # Complex numbers order lexicographically on (real, imag), as in JAX.
            real_x, real_y = lax.real(x), lax.real(y)
            return _strong(lax.select(lax.eq(real_x, real_y), fn(lax.imag(x), lax.imag(y)),
                                      fn(real_x, real_y)))
        return _strong(fn(x, y))
    compare.__name__ = compare.__qualname__ = name
    compare.__doc__ = doc
    return compare


equal = _comparison("equal", lax.eq, """Elementwise x1 == x2.

    >>> equal(np.int32([1, 2]), 2.0)
    Array([False,  True], dtype=bool)
    """)
not_equal = _comparison("not_equal", lax.ne, "Elementwise x1 != x2.")
less = _comparison("less", lax.lt, """Elementwise x1 < x2 (complex numbers in the
    lexicographic order of (real, imag), as JAX orders them).

    >>> less(np.complex64([1 + 1j, 1 + 0j]), np.complex64([1 + 0j, 1 + 1j]))
    Array([False,  True], dtype=bool)
    """, ordering=True)
less_equal = _comparison("less_equal", lax.le, "Elementwise x1 <= x2.", ordering=True)
greater = _comparison("greater", lax.gt, "Elementwise x1 > x2.", ordering=True)
greater_equal = _comparison("greater_equal", lax.ge, "Elementwise x1 >= x2.", ordering=True)


def _truth(x: Any) -> Any:
    return _strong(x if dtype_of(x) == np.bool_ else lax.ne(x, _const(x, 0)))


def _strong(mask: Any) -> Any:
    # lax comparisons of weakly typed operands give weak bools; NumPy-level
    # predicates are always strongly typed bool, as in JAX.
    return lax.convert_element_type(mask, np.bool_) if aval_of(mask).weak_type else mask


def _logical(name: str, fn: Callable[[Any, Any], Any], doc: str) -> Callable[[Any, Any], Any]:
    def logical(x1: Any, x2: Any, /) -> Any:
        x1, x2 = _promote_and_broadcast(name, x1, x2)
        return fn(_truth(x1), _truth(x2))
    logical.__name__ = logical.__qualname__ = name
    logical.__doc__ = doc
    return logical


logical_and = _logical("logical_and", lax.bitwise_and, """Elementwise truth of x1 and x2.

    >>> logical_and(np.int32([0, 1, 2]), True)
    Array([False,  True,  True], dtype=bool)
    """)
logical_or = _logical("logical_or", lax.bitwise_or, "Elementwise truth of x1 or x2.")
logical_xor = _logical("logical_xor", lax.bitwise_xor, "Elementwise truth of x1 xor x2.")


def logical_not(x: Any, /) -> Any:
    """Elementwise truth of not x."""
    (x,) = _promote_and_broadcast("logical_not", x)
    return lax.bitwise_not(_truth(x))


def _bitwise(name: str, fn: Callable[[Any, Any], Any], doc: str) -> Callable[[Any, Any], Any]:
    def bitwise(x1: Any, x2: Any, /) -> Any:
        x1, x2 = _promote_and_broadcast(name, x1, x2)
        _require_integral(name, x1)
        return fn(x1, x2)
    bitwise.__name__ = bitwise.__qualname__ = name
    bitwise.__doc__ = doc
    return bitwise


bitwise_and = _bitwise("bitwise_and", lax.bitwise_and, """Elementwise bitwise and.

    >>> bitwise_and(np.int32([12, 10]), 6)
    Array([4, 2], dtype=int32)
    """)
bitwise_or = _bitwise("bitwise_or", lax.bitwise_or, "Elementwise bitwise or.")
bitwise_xor = _bitwise("bitwise_xor", lax.bitwise_xor, "Elementwise bitwise xor.")


def bitwise_not(x: Any, /) -> Any:
    """Elementwise bitwise inversion (logical not for bools)."""
    (x,) = _promote_and_broadcast("bitwise_not", x)
    _require_integral("bitwise_not", x)
    return lax.bitwise_not(x)


invert = bitwise_not

def left_shift(x: Any, y: Any, /) -> Any:
    """Elementwise x << y.

    >>> left_shift(np.int32([1, 3]), 2)
    Array([ 4, 12], dtype=int32)
    """
    x, y = _promote_and_broadcast("left_shift", x, y)
    _require_integral("left_shift", x)
    return lax.shift_left(x, y)


def right_shift(x1: Any, x2: Any, /) -> Any:
    """Elementwise x1 >> x2: arithmetic (sign-filling) for signed integers.

    >>> right_shift(np.int32([-8, 8]), 1)
    Array([-4,  4], dtype=int32)
    """
    x1, x2 = _promote_and_broadcast("right_shift", x1, x2)
    _require_integral("right_shift", x1)
    if dtype_of(x1).kind == "i":
        return lax.shift_right_arithmetic(x1, x2)
    return lax.shift_right_logical(x1, x2)


def where(condition: Any, x: Any, y: Any, /) -> Any:
    """Elementwise `x` where `condition` is true, else `y` (all three broadcast;
    x and y promoted together).

    >>> where(np.array([True, False]), 1, np.float32(0.5))
    Array([1. , 0.5], dtype=float32)
    """
    (condition,) = promote_dtypes(condition)
    x, y = promote_dtypes(x, y)
    condition, x, y = _broadcast("where", condition, x, y)
    return lax.select(_truth(condition), x, y)


# --- complex numbers ---------------------------------------------------------------------
def real(val: Any, /) -> Any:
    """Elementwise real part (the value itself for real inputs)."""
    (x,) = _promote_and_broadcast("real", val)
    return lax.real(x) if _is_complex(x) else x


def imag(val: Any, /) -> Any:
    """Elementwise imaginary part (zeros for real inputs)."""
    (x,) = _promote_and_broadcast("imag", val)
    return lax.imag(x) if _is_complex(x) else _const(x, 0)


def conjugate(x: Any, /) -> Any:
    """Elementwise complex conjugate (x itself for real inputs).

    >>> conjugate(np.complex64([1 + 2j]))
    Array([1.-2.j], dtype=complex64)
    """
    (x,) = _promote_and_broadcast("conjugate", x)
    return lax.conj(x) if _is_complex(x) else x


conj = conjugate


def angle(z: Any, deg: bool = False) -> Any:
    """Elementwise argument of a complex number (radians, or degrees with `deg`)."""
    (z,) = _promote_and_broadcast("angle", z, kind="inexact")
    if _is_complex(z):
        result = lax.atan2(lax.imag(z), lax.real(z))
    else:
        result = lax.atan2(_const(z, 0), z)
    return _scale(result, 180 / math.pi) if deg else result


# --- closeness ---------------------------------------------------------------------------
def isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
            equal_nan: bool = False) -> Any:
    """Elementwise |a - b| <= atol + rtol * |b|, with infinities equal only to
    themselves and NaNs unequal unless `equal_nan`.

    >>> isclose(np.float32([1, 1, np.inf]), np.float32([1 + 1e-6, 1.1, np.inf]))
    Array([ True, False,  True], dtype=bool)
    """
    a, b = _promote_and_broadcast("isclose", a, b, kind="inexact")
    magnitude = lax.abs(lax.sub(a, b))
    real_b = lax.abs(b)
    tolerance = lax.add(_const(real_b, atol), lax.mul(_const(real_b, rtol), real_b))
    out = lax.le(magnitude, tolerance)
    a_inf, b_inf = isinf(a), isinf(b)
    # Infinities are close only to the identical infinity.
    out = lax.bitwise_and(out, lax.bitwise_not(lax.bitwise_or(a_inf, b_inf)))
    out = lax.bitwise_or(out, lax.bitwise_and(lax.bitwise_and(a_inf, b_inf), lax.eq(a, b)))
    a_nan, b_nan = lax.ne(a, a), lax.ne(b, b)
    out = lax.bitwise_and(out, lax.bitwise_not(lax.bitwise_or(a_nan, b_nan)))
    if equal_nan:
        out = lax.bitwise_or(out, lax.bitwise_and(a_nan, b_nan))
    return _strong(out)


def allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08,
             equal_nan: bool = False) -> Any:
    """Whether `isclose(a, b, ...)` holds everywhere, as a 0-d bool Array.

    >>> allclose(np.float32([1, 2]), 2 * np.float32([0.5, 1]))
    Array(True, dtype=bool)
    """
    close = isclose(a, b, rtol, atol, equal_nan)
    return lax.reduce_and(close, tuple(range(len(aval_of(close).shape))))


# --- the eager fast path ------------------------------------------------------------------
# Each function runs eagerly as one cached jit (see `eager_fast`); the parameters
# named here are Python values (static), the others operands. power dispatches
# itself, on whether its exponent is a concrete integer.
_STATIC_PARAMETERS = {
    "round": ("decimals", "out"), "around": ("decimals", "out"),
    "isclose": ("rtol", "atol", "equal_nan"), "allclose": ("rtol", "atol", "equal_nan"),
    "nan_to_num": ("copy", "nan", "posinf", "neginf"), "angle": ("deg",),
    "isposinf": ("out",), "isneginf": ("out",),
}
for _name in __all__:
    if _name != "power":
        globals()[_name] = eager_fast(*_STATIC_PARAMETERS.get(_name, ()))(globals()[_name])
