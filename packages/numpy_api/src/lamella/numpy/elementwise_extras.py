"""More elementwise functions of jax.numpy: fabs, modf, spacing, i0, and the integer
functions gcd, lcm and bitwise_count.

>>> gcd(np.int32([12, 18]), 8)
Array([4, 2], dtype=int32)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from lamella import lax
from lamella.numpy import ufuncs
from lamella.numpy.util import dtype_of, eager_jit
from lamella.numpy.util import shape as _shape

__all__ = [
    "bitwise_count", "fabs", "gcd", "i0", "lcm", "modf", "spacing",
]


def _unary_real_inexact(name: str, x: Any) -> Any:
    (x,) = ufuncs._promote_and_broadcast(name, x, kind="inexact")
    if dtype_of(x).kind == "c":
        raise TypeError(f"{name} does not support complex-valued inputs")
    return x


def fabs(x: Any, /) -> Any:
    """Elementwise |x| as a float; complex inputs are refused, as in NumPy.

    >>> fabs(np.int32([-2, 3]))
    Array([2., 3.], dtype=float32)
    """
    return lax.abs(_unary_real_inexact("fabs", x))


def modf(x: Any, /, out: None = None) -> tuple[Any, Any]:
    """(fractional part, integral part) of x, both carrying x's sign.

    >>> modf(np.float32([2.5, -1.25]))
    (Array([ 0.5 , -0.25], dtype=float32), Array([ 2., -1.], dtype=float32))
    """
    ufuncs._no_out("modf", out)
    x = _unary_real_inexact("modf", x)
    whole = lax.select(lax.ge(x, lax.full_like(x, 0)), lax.floor(x), lax.ceil(x))
    return lax.sub(x, whole), whole


def spacing(x: Any, /) -> Any:
    """Distance from x to its next representable neighbour away from zero (negative for
    negative x, as in NumPy).

    >>> spacing(np.float32([1.0, -1.0]))
    Array([ 1.1920929e-07, -1.1920929e-07], dtype=float32)
    """
    x = _unary_real_inexact("spacing", x)
    inf = lax.full_like(x, np.inf)
    away = lax.select(lax.lt(x, lax.full_like(x, 0)), lax.neg(inf), inf)
    return lax.sub(lax.nextafter(x, away), x)


def i0(x: Any) -> Any:
    """The modified Bessel function of the first kind, order zero (differentiable).

    >>> i0(np.float32([1.0, 2.0]))
    Array([1.266066 , 2.2795851], dtype=float32)
    """
    x = _unary_real_inexact("i0", x)
    # bessel_i0e is exp(-|x|) * I0(x); its derivative rule gives i0's gradient.
    return lax.mul(lax.exp(lax.abs(x)), lax.bessel_i0e(x))


def _integer_args(name: str, x1: Any, x2: Any) -> list[Any]:
    args = ufuncs._promote_and_broadcast(name, x1, x2, kind="numeric")
    if dtype_of(args[0]).kind not in "iu":
        raise TypeError(f"{name} requires integer arguments, got dtype {dtype_of(args[0])}")
    return args


def _abs_int(x: Any) -> Any:
    return x if dtype_of(x).kind == "u" else lax.abs(x)


@eager_jit()  # one compiled while loop per shape, not one per call
def gcd(x1: Any, x2: Any) -> Any:
    """Elementwise greatest common divisor of integers (non-negative).

    >>> gcd(np.int32([12, -18, 0]), np.int32([8, 12, 5]))
    Array([4, 6, 5], dtype=int32)
    """
    x1, x2 = _integer_args("gcd", x1, x2)
    zero, one = lax.full_like(x1, 0), lax.full_like(x1, 1)

    def cond(state: tuple[Any, Any]) -> Any:
        return lax.reduce_or(lax.ne(state[1], zero), tuple(range(len(_shape(x1)))))

    def body(state: tuple[Any, Any]) -> tuple[Any, Any]:
        a, b = state
        active = lax.ne(b, zero)
        # Euclid's step where b != 0; finished elements keep their pair.
        safe_b = lax.select(active, b, one)
        return lax.select(active, b, a), lax.select(active, lax.rem(a, safe_b), b)

    return lax.while_loop(cond, body, (_abs_int(x1), _abs_int(x2)))[0]


@eager_jit()
def lcm(x1: Any, x2: Any) -> Any:
    """Elementwise least common multiple of integers (non-negative; 0 if either is 0).

    >>> lcm(np.int32([4, 6, 0]), np.int32([6, -4, 3]))
    Array([12, 12,  0], dtype=int32)
    """
    x1, x2 = _integer_args("lcm", x1, x2)
    d = gcd(x1, x2)
    zero = lax.full_like(d, 0)
    is_zero = lax.eq(d, zero)
    quotient = lax.div(_abs_int(x2), lax.select(is_zero, lax.full_like(d, 1), d))
    return lax.select(is_zero, zero, lax.mul(_abs_int(x1), quotient))


def bitwise_count(x: Any, /) -> Any:
    """Number of 1 bits in |x| as uint8, as NumPy counts them.

    >>> bitwise_count(np.int32([7, -8, 0]))
    Array([3, 1, 0], dtype=uint8)
    """
    (x,) = ufuncs._promote_and_broadcast("bitwise_count", x, kind="numeric")
    if dtype_of(x).kind not in "iu":
        raise TypeError(f"bitwise_count requires integer arguments, got dtype {dtype_of(x)}")
    return lax.convert_element_type(lax.population_count(_abs_int(x)), np.uint8)
