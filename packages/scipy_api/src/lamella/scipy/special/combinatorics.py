"""Counting with the gamma function: factorial, comb, poch and the Bernoulli numbers.

factorial(n, exact=True) and bernoulli(n) need concrete integers (their results
are exact Python integers or a table whose length depends on n), so they run on
the host; everything else is traced like any other function.

>>> import numpy as np
>>> factorial(np.float32([0.0, 4.0, 4.5]))
Array([ 1.     , 24.     , 52.34278], dtype=float32)
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp
from lamella.scipy.special._numerics import (
    Array,
    ArrayLike,
    apply,
    eps,
    is_nonpositive_integer,
    zeta_minus_one,
)
from lamella.scipy.special.beta import _beta, _lgamma_difference
from lamella.scipy.special.gamma import _digamma, _gamma, _gammasgn, _largest_argument

__all__ = ["bernoulli", "comb", "factorial", "poch"]


# --- factorial ----------------------------------------------------------------------
def _factorial(n: Array) -> Array:
    return lnp.where(n < 0, 0.0, _gamma(lnp.where(n < 0, 0.0, n) + 1))


def _exact_factorial(n: Any) -> Any:
    if isinstance(n, lc.Tracer):
        raise TypeError("factorial(n, exact=True) computes exact integers on the host, so n "
                        "must be concrete; under jit/vmap/grad use exact=False.")
    values = np.asarray(n)
    if values.dtype.kind not in "iub":
        raise ValueError(f"factorial(n, exact=True) needs integers, got dtype {values.dtype} "
                         "(as SciPy); use exact=False for non-integer n.")
    if values.ndim == 0:
        return math.factorial(int(values)) if values >= 0 else 0
    exact = [math.factorial(int(v)) if v >= 0 else 0 for v in values.ravel()]
    fits = all(v <= np.iinfo(np.int64).max for v in exact)
    return np.array(exact, np.int64 if fits else object).reshape(values.shape)


def factorial(n: ArrayLike, exact: bool = False) -> Array:
    """n! = Gamma(n + 1), 0 for n < 0.

    With `exact=True` n must be concrete integers and the result is exact, as in
    SciPy: a Python int for a scalar, an int64 array (an object array of Python
    ints where int64 would overflow) otherwise. JAX has no exact mode.

    >>> factorial(5, exact=True), factorial(25, exact=True)
    (120, 15511210043330985984000000)
    """
    if exact:
        return _exact_factorial(n)
    return apply("factorial", _factorial, n)


# --- comb ---------------------------------------------------------------------------
def _whole_binomial(n: Array, k: Array) -> Array:
    """C(n, k) for whole 0 <= k <= n as the product of (n - m + j) / j, j = 1 ... m,
    m = min(k, n - k): every partial product is itself a binomial coefficient and
    the largest intermediate is C(n, m) m, so it is exact while that is below
    2^mantissa. C(n, m) >= 2^m, so m never needs to pass the mantissa's width."""
    m = lnp.minimum(k, n - k)

    def multiply(j, product):
        # XLA may divide through a reciprocal, a rounding off: the quotient is whole.
        return lnp.where(j <= m, lnp.round(product * (n - m + j) / j), product)

    return lax.fori_loop(1, lnp.finfo(n.dtype).nmant + 2, multiply, lnp.ones_like(n))


def _binomial(n: Array, k: Array) -> Array:
    """C(n, k) = 1 / ((n + 1) B(n - k + 1, k + 1)) for 0 <= k <= n, else 0; for
    whole n and k an exact product where the answer fits the mantissa (so
    comb(5, 2) is 10, not 9.999999)."""
    defined = (k <= n) & (n >= 0) & (k >= 0)
    safe_n, safe_k = lnp.where(defined, n, 1.0), lnp.where(defined, k, 0.0)
    out = 1 / ((safe_n + 1) * _beta(safe_n - safe_k + 1, safe_k + 1))
    whole = (n == lnp.floor(n)) & (k == lnp.floor(k)) & defined
    exact = _whole_binomial(lnp.where(whole, n, 1.0), lnp.where(whole, k, 0.0))
    # The product's value with the smooth function's derivative (out - out is 0 exactly).
    exact = lax.stop_gradient(exact) + (out - lax.stop_gradient(out))
    fits = exact * lnp.minimum(safe_k, safe_n - safe_k) < 1 / eps(out)
    out = lnp.where(whole & fits, exact, out)
    return lnp.where(defined, out, 0.0)


def _comb_with_repetition(n: Array, k: Array) -> Array:
    return _binomial(n + k - 1, k)


def comb(N: ArrayLike, k: ArrayLike, *, repetition: bool = False) -> Array:
    """The number of ways to choose k things out of N, as floats (SciPy's
    `exact=False`), 0 unless 0 <= k <= N; with `repetition`, C(N + k - 1, k).
    Non-integer N and k continue it through the beta function.

    >>> import numpy as np
    >>> comb(np.float32([5.0, 10.0, 3.0]), np.float32([2.0, 3.0, 5.0]))
    Array([ 10., 120.,   0.], dtype=float32)
    """
    return apply("comb", _comb_with_repetition if repetition else _binomial, N, k)


# --- poch ---------------------------------------------------------------------------
@lc.custom_jvp
def _poch(z: Array, m: Array) -> Array:
    end = z + m
    z_pole, end_pole = is_nonpositive_integer(z), is_nonpositive_integer(end)
    # Both ends at poles of Gamma (m a whole number): the finite ratio
    # (-1)^m Gamma(1 - z) / Gamma(1 - z - m), from the reflection formula.
    sign = 1 - 2 * lnp.abs(lnp.remainder(m, 2))
    # Gamma(z + m) / Gamma(z) directly where both are in range, else through
    # Stirling (one lgamma difference, no cancellation) for z, z + m >= 8.
    top = _largest_argument(z)
    both_poles = z_pole & end_pole
    p, q = lnp.where(both_poles, 1 - z, z), lnp.where(both_poles, 1 - end, end)
    in_range = (lnp.abs(p) < top) & (lnp.abs(q) < top)
    gamma_q, gamma_p = _gamma(lnp.stack([lnp.where(in_range, q, 1.0),
                                         lnp.where(in_range, p, 1.0)]))
    ratio = gamma_q / gamma_p
    large = (p >= 8) & (q >= 8)
    step = lnp.where(large, lnp.where(both_poles, -m, m), 0.0)  # q - p, unrounded
    by_stirling = lnp.exp(-_lgamma_difference(step, lnp.where(large, p, 8.0)))
    stirling_sign = _gammasgn(q) * _gammasgn(p)
    out = lnp.where(in_range, ratio, lnp.where(large, by_stirling, stirling_sign * lnp.inf))
    out = lnp.where(both_poles, sign / out, out)
    out = lnp.where(z_pole & ~end_pole, 0.0, out)
    out = lnp.where(end_pole & ~z_pole, lnp.inf, out)
    return lnp.where(m == 0, 1.0, out)


@_poch.defjvp
def _poch_jvp(primals, tangents):
    z, m = primals
    tz, tm = tangents
    out = _poch(z, m)
    end = _digamma(z + m)
    slope_z = out * (end - _digamma(z))
    # At a pole z = -n of Gamma alone, poch = Gamma(z + m) / Gamma(z) is 0 but its
    # z-slope is Gamma(z + m) (1/Gamma)'(-n) = Gamma(z + m) (-1)^n n!.
    n = -z
    at_pole = is_nonpositive_integer(z) & ~is_nonpositive_integer(z + m)
    pole_slope = _gamma(z + m) * (1 - 2 * lnp.remainder(n, 2)) * _gamma(n + 1)
    slope_z = lnp.where(at_pole, pole_slope, slope_z)
    return out, tz * slope_z + tm * lnp.where(at_pole, 0.0, out * end)


def poch(z: ArrayLike, m: ArrayLike) -> Array:
    """The Pochhammer symbol (rising factorial) (z)_m = Gamma(z + m) / Gamma(z).

    1 for m = 0; at the poles of Gamma it takes SciPy's limits (0 when only z is a
    pole, (-1)^m Gamma(1 - z) / Gamma(1 - z - m) when both are).

    >>> import numpy as np
    >>> poch(np.float32([2.0, -3.0, 0.5]), np.float32([3.0, 2.0, 2.0]))
    Array([24.  ,  6.  ,  0.75], dtype=float32)
    """
    return apply("poch", _poch, z, m)


# --- bernoulli ----------------------------------------------------------------------
def _bernoulli_numbers(n: int) -> list[float]:
    """B_0 ... B_n in float64, with SciPy's B_1 = -1/2.

    B_2k = (-1)^(k+1) 2 zeta(2k) (2k)! / (2 pi)^(2k): the ratio is built one factor
    at a time (a rounding each), so B_2k is within ~k ulps; past B_258 it overflows
    to +-inf as in SciPy.
    """
    values = [1.0, -0.5][: n + 1]
    ratio = 1.0  # (2k)! / (2 pi)^(2k)
    for k in range(1, n // 2 + 1):
        ratio *= (2 * k - 1) * (2 * k) / (2 * math.pi) ** 2
        values += [(-1) ** (k + 1) * 2 * (1 + zeta_minus_one(2 * k)) * ratio, 0.0]
    return values[: n + 1]


def bernoulli(n: int) -> Array:
    """The Bernoulli numbers B_0, ..., B_n (n a concrete non-negative integer), as
    an array of the default float dtype.

    >>> bernoulli(4).tolist()
    [1.0, -0.5, 0.1666666716337204, 0.0, -0.03333333507180214]
    """
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError(f"bernoulli: n must be a concrete integer (the table's length depends "
                        f"on it), got {n!r}") from None
    if n < 0:
        raise ValueError(f"bernoulli: n must be a non-negative integer, got {n}")
    with np.errstate(over="ignore"):
        return lnp.asarray(np.array(_bernoulli_numbers(n)), lnp.result_type(float))
