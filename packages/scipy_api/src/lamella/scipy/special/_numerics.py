"""Numerical building blocks shared by the special-function families: argument
promotion, sin(pi x) and cos(pi x) without the rounding of pi x, a log1p without
XLA's float64 hole, Horner evaluation, a per-element convergence loop, and float64
constants (Hurwitz zeta values) for Taylor tables built at import time.

>>> import numpy as np
>>> sinpi(np.float32([0.5, 1.0, -2.5]))
Array([ 1.,  0., -1.], dtype=float32)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import numpy as np

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp

Array = Any
ArrayLike = Any


def promote_inexact(name: str, *args: ArrayLike) -> tuple[list[Array], Any]:
    """The arguments as arrays of one floating dtype, broadcast to one shape, and the
    dtype to return.

    Integers and bools become the default float (as in JAX); 16-bit floats are
    computed in float32 (their range cannot even hold the series coefficients)
    and the result is cast back. Complex arguments are refused.
    """
    arrays = [lnp.asarray(a) for a in args]
    dtype = lnp.result_type(*arrays)
    if lnp.issubdtype(dtype, lnp.complexfloating):
        raise TypeError(f"{name} takes real arguments, got {dtype}; scipy.special.{name} "
                        "has no complex version here either.")
    if not lnp.issubdtype(dtype, lnp.floating):
        dtype = lnp.result_type(float)
    work = lnp.float32 if lnp.finfo(dtype).bits < 32 else dtype
    arrays = lnp.broadcast_arrays(*[a.astype(work) for a in arrays])
    return list(arrays), dtype


@cache
def _compiled(fun: Callable) -> Callable:
    return lc.jit(fun)


def apply(name: str, fun: Callable, *args: ArrayLike) -> Array:
    """`fun` (elementwise, on arrays of one float dtype and shape) on `args` promoted
    by `promote_inexact`, as one compiled call, cast to the promoted dtype.

    Eager calls then run one cached executable instead of dozens of operations;
    under a transformation the call is traced like any other jit.
    """
    arrays, dtype = promote_inexact(name, *args)
    out = _compiled(fun)(*arrays)
    return out if out.dtype == dtype else out.astype(dtype)


def eps(x: Array) -> float:
    """The machine epsilon of `x`'s dtype."""
    return float(lnp.finfo(x.dtype).eps)


def is_float64(x: Array) -> bool:
    return lnp.finfo(x.dtype).bits == 64


def sinpi(x: Array) -> Array:
    """sin(pi x), exactly zero at the integers and exact at the half-integers.

    pi * x rounds, so sin(pi * x) is only ~1e-16 at x = 1; reducing x to [-1/2, 1/2]
    first (exact in floating point) avoids it.
    """
    r = x - 2 * lnp.round(x / 2)  # in [-1, 1], with the sign of sin(pi x)
    r = lnp.where(x == 0, x, r)  # keeps the sign of -0
    r = lnp.where(lnp.abs(r) > 0.5, lnp.sign(r) - r, r)
    return lnp.sin(np.pi * r)


def cospi(x: Array) -> Array:
    """cos(pi x), exactly zero at the half-integers (see `sinpi`)."""
    r = x - 2 * lnp.round(x / 2)  # in [-1, 1]; cos(pi r) = sin(pi (1/2 - |r|)), exactly
    return lnp.sin(np.pi * (0.5 - lnp.abs(r)))


def log1p(x: Array) -> Array:
    """log(1 + x). XLA's float64 log1p is ~120 ulps off on [-1/2, -1/4]; there 1 + x
    rounds by at most half an ulp of 1/2, so log(1 + x) is within a few ulps."""
    return lnp.where((x >= -0.5) & (x <= -0.25), lnp.log(1 + x), lnp.log1p(x))


def is_nonpositive_integer(x: Array) -> Array:
    """Where x is 0, -1, -2, ... (the poles of Gamma)."""
    return (x <= 0) & (x == lnp.floor(x))


def horner(x: Array, coefficients: Sequence[float]) -> Array:
    """The polynomial with `coefficients` (highest order first) at x."""
    out = lnp.zeros_like(x) + coefficients[0]
    for c in coefficients[1:]:
        out = out * x + c
    return out


def iterate(step: Callable[[Any], tuple[Any, Array]], state: Any, active: Array,
            max_steps: int) -> Any:
    """Applies `step(state) -> (new_state, still_changing)` elementwise until no
    element is changing (or `max_steps`). Elements that have converged, or were
    never `active`, keep their state, so a slow element does not spoil the others.
    """
    def cond(carry):
        i, going, _ = carry
        return (i < max_steps) & lnp.any(going)

    def body(carry):
        i, going, old = carry
        new, changing = step(old)
        kept = lc.tree_util.tree_map(lambda n, o: lnp.where(going, n, o), new, old)
        return i + 1, going & changing, kept

    return lax.while_loop(cond, body, (0, active, state))[2]


# Bernoulli numbers B_2, B_4, ..., B_12, enough for Euler-Maclaurin tails in float64.
BERNOULLI_EVEN = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730)


@cache
def hurwitz_zeta_float(s: float, q: float) -> float:
    """The Hurwitz zeta function, the sum over j >= 0 of (j + q)**-s, for s > 1 and
    q > 0, in float64: 20 terms, then the Euler-Maclaurin tail.

    >>> round(hurwitz_zeta_float(2, 1), 15) == round(math.pi ** 2 / 6, 15)
    True
    """
    n = 20
    w = n + q
    head = math.fsum((j + q) ** -s for j in range(n))
    tail = w ** (1 - s) / (s - 1) + w ** -s / 2
    rising = s  # s (s + 1) ... (s + 2m - 2)
    for m, b in enumerate(BERNOULLI_EVEN, start=1):
        tail += b / math.factorial(2 * m) * rising * w ** (-s - 2 * m + 1)
        rising *= (s + 2 * m - 1) * (s + 2 * m)
    return head + tail


def zeta_minus_one(k: int) -> float:
    """zeta(k) - 1 for k > 1, in float64 (without the rounding of 1 + small).

    >>> zeta_minus_one(40)
    9.094947840263888e-13
    """
    return hurwitz_zeta_float(k, 2.0)
