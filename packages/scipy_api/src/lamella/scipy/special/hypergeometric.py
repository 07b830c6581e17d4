"""The confluent and Gauss hypergeometric functions hyp1f1 and hyp2f1.

Both are their power series summed in a `while_loop` until every element has
converged, after a transformation that makes the series converge well:
Kummer's M(a, b, x) = e^x M(b - a, b, -x) for x < 0 (the direct series would
alternate and cancel — JAX's hyp1f1 is wrong there) and Pfaff's
F(a, b; c; x) = (1 - x)^-a F(a, c - b; c; x / (x - 1)) for x < 0. The loop also
sums the derivatives of the terms in every parameter, so the gradients in a, b
(and c) are as accurate as the value.

>>> import numpy as np
>>> hyp1f1(np.float32(1.0), np.float32(2.0), np.float32([-3.0, 3.0]))
Array([0.31673762, 6.3618455 ], dtype=float32)
"""

from __future__ import annotations

import lamella.core as lc
import lamella.numpy as lnp
from lamella.scipy.special._numerics import Array, ArrayLike, apply, eps, iterate, log1p
from lamella.scipy.special.gamma import _gamma

__all__ = ["hyp1f1", "hyp2f1"]

_MAX_TERMS = 10_000


def _series(up: list[Array], down: list[Array], x: Array, active: Array):
    """sum_k prod_i (up_i)_k / prod_j (down_j)_k x^k / k! and its derivatives in
    every up and down parameter (the term's derivative in p is the term times
    sum_{j<k} 1/(p + j), negated for the lower ones)."""
    one, zero = lnp.ones_like(x), lnp.zeros_like(x)
    tolerance = eps(x)
    params = up + down

    def step(state):
        k, term, total, logs, slopes = state
        ratio = x / (k + 1)
        for p in up:
            ratio = ratio * (p + k)
        for p in down:
            ratio = ratio / (p + k)
        logs = [s + (1 if i < len(up) else -1) / (p + k)
                for i, (s, p) in enumerate(zip(logs, params))]
        term = term * ratio
        slopes = [d + term * s for d, s in zip(slopes, logs)]
        changing = lnp.abs(term) > tolerance * lnp.abs(total + term)
        for d, s in zip(slopes, logs):
            changing = changing | (lnp.abs(term * s) > tolerance * lnp.abs(d))
        return (k + 1, term, total + term, logs, slopes), changing

    state = (zero, one, one, [zero for _ in params], [zero for _ in params])
    _, _, total, _, slopes = iterate(step, state, active, _MAX_TERMS)
    return total, slopes


# --- hyp1f1 ---------------------------------------------------------------------------
def _kummer(a: Array, b: Array, x: Array):
    """M(a, b, x) and its derivatives in a and b."""
    negative = x < 0
    c = lnp.where(negative, b - a, a)
    finite = lnp.isfinite(x)
    total, (slope_c, slope_b) = _series([c], [b], lnp.where(finite, lnp.abs(x), 0.0), finite)
    scale = lnp.where(negative, lnp.exp(x), 1.0)
    value = scale * total
    slope_a = lnp.where(negative, -scale * slope_c, slope_c)
    slope_b = scale * (slope_b + lnp.where(negative, slope_c, 0.0))
    value = lnp.where(x == lnp.inf, lnp.inf, lnp.where(x == -lnp.inf, 0.0, value))
    return value, slope_a, slope_b


@lc.custom_jvp
def _hyp1f1(a: Array, b: Array, x: Array) -> Array:
    return _kummer(a, b, x)[0]


@_hyp1f1.defjvp
def _hyp1f1_jvp(primals, tangents):
    a, b, x = primals
    ta, tb, tx = tangents
    value, slope_a, slope_b = _kummer(a, b, x)
    slope_x = a / b * _kummer(a + 1, b + 1, x)[0]
    return value, ta * slope_a + tb * slope_b + tx * slope_x


def hyp1f1(a: ArrayLike, b: ArrayLike, x: ArrayLike) -> Array:
    """Kummer's confluent hypergeometric function M(a, b, x) = 1F1(a; b; x), the sum
    of (a)_k / (b)_k x^k / k!. Differentiable in a, b and x.

    >>> import numpy as np
    >>> hyp1f1(np.float32(1.0), np.float32(1.0), np.float32(2.0))  # exp(2)
    Array(7.3890567, dtype=float32)
    """
    return apply("hyp1f1", _hyp1f1, a, b, x)


# --- hyp2f1 ---------------------------------------------------------------------------
def _gauss(a: Array, b: Array, c: Array, x: Array):
    """F(a, b; c; x) for x < 1 and its derivatives in a, b and c."""
    negative = x < 0
    z = lnp.where(negative, x / (x - 1), x)
    second = lnp.where(negative, c - b, b)
    inside = (x < 1) & lnp.isfinite(x)
    total, (slope_a, slope_second, slope_c) = _series(
        [a, second], [c], lnp.where(inside, z, 0.0), inside)
    scale = lnp.where(negative, lnp.exp(-a * log1p(-lnp.where(negative, x, 0.0))), 1.0)
    value = scale * total
    slope_a = scale * slope_a - lnp.where(negative, log1p(-lnp.minimum(x, 0.0)), 0.0) * value
    slope_b = lnp.where(negative, -scale * slope_second, slope_second)
    slope_c = scale * (slope_c + lnp.where(negative, slope_second, 0.0))
    # At x = 1, Gauss's sum Gamma(c) Gamma(c-a-b) / (Gamma(c-a) Gamma(c-b)) where it converges.
    gammas = _gamma(lnp.stack([c, c - a - b, c - a, c - b]))
    at_one = lnp.where(c - a - b > 0, gammas[0] * gammas[1] / (gammas[2] * gammas[3]), lnp.inf)
    value = lnp.where(x == 1, at_one, lnp.where(x > 1, lnp.nan, value))
    return value, slope_a, slope_b, slope_c


@lc.custom_jvp
def _hyp2f1(a: Array, b: Array, c: Array, x: Array) -> Array:
    return _gauss(a, b, c, x)[0]


@_hyp2f1.defjvp
def _hyp2f1_jvp(primals, tangents):
    a, b, c, x = primals
    ta, tb, tc, tx = tangents
    value, slope_a, slope_b, slope_c = _gauss(a, b, c, x)
    slope_x = a * b / c * _gauss(a + 1, b + 1, c + 1, x)[0]
    return value, ta * slope_a + tb * slope_b + tc * slope_c + tx * slope_x


def hyp2f1(a: ArrayLike, b: ArrayLike, c: ArrayLike, x: ArrayLike) -> Array:
    """The Gauss hypergeometric function 2F1(a, b; c; x), the sum of
    (a)_k (b)_k / (c)_k x^k / k!, for x <= 1 (NaN above, where it is complex).

    Differentiable in all four arguments. Close to x = 1 the series needs many
    terms (thousands at 1 - x = 1e-3) and it stops at 10000.

    >>> import numpy as np
    >>> hyp2f1(np.float32(1.0), np.float32(1.0), np.float32(2.0), np.float32(-1.0))  # log(2)
    Array(0.6931473, dtype=float32)
    """
    return apply("hyp2f1", _hyp2f1, a, b, c, x)
