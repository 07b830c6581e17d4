"""The matrix exponential and its Fréchet derivative: ``expm``, ``expm_frechet``.

Scaling and squaring with a diagonal Padé approximant (Higham 2005): the
1-norm of A picks the smallest order of 3, 5, 7, 9, 13 (3, 5, 7 in single
precision) whose error bound θ_m holds after scaling A by 2^-s. The Fréchet
derivative L(A, E) comes from the same approximant and the same squarings
(Al-Mohy & Higham 2009, "computing the Fréchet derivative of the matrix
exponential", Algorithm 6.4), and it is ``expm``'s JVP: the derivative costs a
few more products and reuses the factorization of the denominator.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

import lamella.lax as lax
import lamella.lax.linalg as lax_linalg
import lamella.numpy as lnp
from lamella.core import custom_jvp
from lamella.scipy.linalg.common import check_matrix, compiled, inexact, mT
from lamella.scipy.linalg.lu import permutation_matrix

__all__ = ["expm", "expm_frechet"]

# Coefficients b_0..b_m of the numerator p_m(x) = sum b_j x^j; q_m(x) = p_m(-x).
_PADE = {
    3: [120.0, 60.0, 12.0, 1.0],
    5: [30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0],
    7: [17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0],
    9: [17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0,
        110880.0, 3960.0, 90.0, 1.0],
    13: [64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
         129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
         40840800.0, 960960.0, 16380.0, 182.0, 1.0],
}

# (order m, θ_m): the largest 1-norm for which order m is accurate to the unit roundoff.
_THETA = {
    np.dtype(np.float64): [(3, 1.495585217958292e-2), (5, 2.539398330063230e-1),
                           (7, 9.504178996162932e-1), (9, 2.097847961257068),
                           (13, 5.371920351148152)],
    np.dtype(np.float32): [(3, 4.258730016922831e-1), (5, 1.880152677804762),
                           (7, 3.925724783138660)],
}


def _pade(m: int, a: Any, e: Any) -> tuple[Any, ...]:
    """(U, V) with p_m(a) = V + U, q_m(a) = V - U; with `e`, also their derivatives
    (Lu, Lv) in the direction e."""
    b = _PADE[m]
    eye = lnp.eye(a.shape[-1], dtype=a.dtype)
    a2 = a @ a
    # powers[k] = a^2k, for as many k as the order needs (up to a^6 for m = 13).
    powers = [eye, a2]
    while len(powers) < (4 if m == 13 else (m + 1) // 2):
        powers.append(powers[-1] @ a2)
    # dpowers[k] = d(a^2k)[e], from d(a^2k) = d(a^2(k-1)) a^2 + a^2(k-1) d(a^2).
    dpowers = None
    if e is not None:
        dpowers = [None, a @ e + e @ a]
        for k in range(2, len(powers)):
            dpowers.append(dpowers[-1] @ a2 + powers[k - 1] @ dpowers[1])

    def combine(coefficients, terms, start=0):
        return sum(c * t for c, t in zip(coefficients[start:], terms[start:]))

    if m < 13:
        odd, even = combine(b[1::2], powers), combine(b[0::2], powers)
        u, v = a @ odd, even
        if e is None:
            return u, v
        lu = a @ combine(b[1::2], dpowers, 1) + e @ odd
        return u, v, lu, combine(b[0::2], dpowers, 1)
    # m = 13 splits each sum as a^6 (high part) + low part, so only a^2, a^4, a^6 are formed.
    a6 = powers[3]
    w1, w2 = combine(b[13:8:-2], powers[3:0:-1]), combine(b[7::-2], powers[3::-1])
    z1, z2 = combine(b[12:7:-2], powers[3:0:-1]), combine(b[6::-2], powers[3::-1])
    w = a6 @ w1 + w2
    u, v = a @ w, a6 @ z1 + z2
    if e is None:
        return u, v
    m6 = dpowers[3]
    lw1, lw2 = combine(b[13:8:-2], dpowers[3:0:-1]), combine(b[7:2:-2], dpowers[3:0:-1])
    lz1, lz2 = combine(b[12:7:-2], dpowers[3:0:-1]), combine(b[6:1:-2], dpowers[3:0:-1])
    lw = a6 @ lw1 + m6 @ w1 + lw2
    return u, v, a @ lw + e @ w, a6 @ lz1 + m6 @ z1 + lz2


def _scaling_and_order(a: Any) -> tuple[Any, Any, list[int]]:
    """(s, index of the Padé order, the orders) for one matrix."""
    thetas = _THETA[np.dtype(lnp.finfo(a.dtype).dtype)]
    norm = lnp.max(lnp.sum(lnp.abs(a), axis=0))
    theta_max = thetas[-1][1]
    s = lnp.maximum(0.0, lnp.ceil(lnp.log2(norm / theta_max)))
    scaled_norm = norm / lnp.exp2(s)
    index = lnp.sum(scaled_norm > lnp.asarray([t for _, t in thetas[:-1]], norm.dtype))
    return s.astype(np.int32), index.astype(np.int32), [m for m, _ in thetas]


def _expm_and_frechet(a: Any, e: Any, upper_triangular: bool,
                      max_squarings: int) -> tuple[Any, Any]:
    """(expm(a), L(a, e)) for one matrix; L is None when e is."""
    s, index, orders = _scaling_and_order(a)
    scale = lnp.exp2(-s.astype(lnp.finfo(a.dtype).dtype)).astype(a.dtype)
    args = (a * scale,) if e is None else (a * scale, e * scale)
    branches = [functools.partial(lambda m, *xs: _pade(m, xs[0], xs[1] if len(xs) > 1 else None),
                                  m) for m in orders]
    parts = lax.switch(index, branches, *args)
    u, v = parts[0], parts[1]
    q = v - u
    if upper_triangular:
        def solve(rhs):
            return lax_linalg.triangular_solve(q, rhs, left_side=True, lower=False)
    else:
        factors, _, permutation = lax_linalg.lu(q)
        q_perm = mT(permutation_matrix(permutation, q.dtype))

        def solve(rhs):
            y = lax_linalg.triangular_solve(factors, q_perm @ rhs, left_side=True, lower=True,
                                            unit_diagonal=True)
            return lax_linalg.triangular_solve(factors, y, left_side=True, lower=False)
    r = solve(v + u)
    frechet = None
    if e is not None:
        lu, lv = parts[2], parts[3]
        frechet = solve(lu + lv + (lu - lv) @ r)

    if frechet is None:
        r = lax.fori_loop(0, lnp.minimum(s, max_squarings), lambda _, r: r @ r, r)
    else:
        # A scan of fixed length (each step squaring or not), unlike the while loop
        # above, is transposable: reverse mode differentiates through the JVP.
        def square(state, i):
            return lax.cond(i < s, lambda r, l: (r @ r, r @ l + l @ r), lambda r, l: (r, l),
                            *state), None

        (r, frechet), _ = lax.scan(square, (r, frechet), lnp.arange(max_squarings))
    # Beyond max_squarings the result would be inaccurate: NaN, as in JAX.
    too_large = s > max_squarings
    r = lnp.where(too_large, lnp.nan, r)
    return r, (None if frechet is None else lnp.where(too_large, lnp.nan, frechet))


@functools.partial(custom_jvp, nondiff_argnums=(1, 2))
def _expm_2d(a: Any, upper_triangular: bool, max_squarings: int) -> Any:
    return _expm_and_frechet(a, None, upper_triangular, max_squarings)[0]


@_expm_2d.defjvp
def _expm_2d_jvp(upper_triangular, max_squarings, primals, tangents):
    (a,), (da,) = primals, tangents
    return _expm_and_frechet(a, da, upper_triangular, max_squarings)


def expm(A: Any, *, upper_triangular: bool = False, max_squarings: int = 16) -> Any:
    """The matrix exponential of each square matrix (leading axes are batch axes).

    `upper_triangular` promises that A is upper triangular (triangular solves
    then replace LU). A matrix whose norm needs more than `max_squarings`
    squarings gives NaN. The JVP is the Fréchet derivative (:func:`expm_frechet`).

    >>> import lamella.numpy as lnp
    >>> expm(lnp.array([[0.0, 1.0], [0.0, 0.0]]))
    Array([[1., 1.],
           [0., 1.]], dtype=float32)
    """
    A, = inexact(A)
    check_matrix("expm", A, "A")
    if A.shape[-1] == 0:
        return A
    return compiled(_expm_call, (2,), upper_triangular=bool(upper_triangular),
                    max_squarings=int(max_squarings))(A)


def _expm_call(a: Any, upper_triangular: bool, max_squarings: int) -> Any:
    return _expm_2d(a, upper_triangular, max_squarings)


def _frechet_sps(a: Any, e: Any) -> tuple[Any, Any]:
    return _expm_and_frechet(a, e, False, 16)


def _frechet_block_enlarge(a: Any, e: Any) -> tuple[Any, Any]:
    """expm([[a, e], [0, a]]) holds expm(a) on its diagonal and L(a, e) top right."""
    n = a.shape[-1]
    big = lnp.block([[a, e], [lnp.zeros_like(a), a]])
    out = _expm_2d(big, False, 16)
    return out[:n, :n], out[:n, n:]


def expm_frechet(A: Any, E: Any, *, method: str | None = None,
                 compute_expm: bool = True) -> Any:
    """The Fréchet derivative of expm at A in the direction E:
    ``(expm(A), L(A, E))``, or ``L(A, E)`` without `compute_expm`.

    `method`: ``'SPS'`` (default: scaling-Padé-squaring, both at once) or
    ``'blockEnlarge'`` (the exponential of a 2n-by-2n block matrix).
    Leading axes are batch axes.

    >>> import lamella.numpy as lnp
    >>> a = lnp.array([[1.0, 0.0], [0.0, 2.0]])
    >>> expm_frechet(a, lnp.eye(2), compute_expm=False)
    Array([[2.7182817, 0.       ],
           [0.       , 7.389056 ]], dtype=float32)
    """
    if method not in (None, "SPS", "blockEnlarge"):
        raise ValueError(f"expm_frechet: unknown method {method!r}; expected 'SPS' or "
                         "'blockEnlarge'")
    A, E = inexact(A, E)
    check_matrix("expm_frechet", A, "A")
    check_matrix("expm_frechet", E, "E")
    if A.shape != E.shape:
        raise ValueError(f"expm_frechet: A and E must have the same shape; got "
                         f"A.shape={A.shape} and E.shape={E.shape}")
    if A.shape[-1] == 0:
        return (A, E) if compute_expm else E
    fun = _frechet_block_enlarge if method == "blockEnlarge" else _frechet_sps
    expm_a, frechet = compiled(fun, (2, 2))(A, E)
    return (expm_a, frechet) if compute_expm else frechet
