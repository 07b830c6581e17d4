"""Spherical harmonics Y_n^m(theta, phi) (SciPy's `sph_harm_y`: theta the polar angle,
phi the azimuth, with the Condon-Shortley phase and orthonormal on the sphere).

The orthonormalised associated Legendre function Pbar_n^|m|(cos theta) comes from
the standard stable recurrences, run for every element at once up to the static
`n_max`:

    Pbar_m^m = -sqrt((2m + 1) / 2m) sin(theta) Pbar_(m-1)^(m-1),  Pbar_0^0 = 1/sqrt(4 pi),
    Pbar_l^m = a_lm (cos(theta) Pbar_(l-1)^m - Pbar_(l-2)^m / a_(l-1)m),
    a_lm = sqrt((4 l**2 - 1) / (l**2 - m**2)).

Y_n^m = Pbar_n^m exp(i m phi) and Y_n^-m = (-1)^m conj(Y_n^m). Unlike JAX's, the
arguments broadcast against each other (JAX's take 1-D n, m, theta, phi of one
length, which broadcasting includes) and |m| > n gives 0, as in SciPy.

>>> import numpy as np
>>> sph_harm_y(np.array([0, 1]), np.array([0, 1]), np.float32(0.5), np.float32(0.0))
Array([ 0.2820948 +0.j, -0.16563874-0.j], dtype=complex64)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp
from lamella.scipy.special._numerics import Array

__all__ = ["sph_harm_y"]


def _legendre(n: Array, am: Array, x: Array, s: Array, n_max: int) -> Array:
    """Pbar_n^am(x) for x = cos(theta), s = sin(theta), n <= n_max (0 where am > n)."""
    amf = am.astype(x.dtype)

    def diagonal(k, p):
        factor = -lnp.sqrt((2 * k + 1) / (2 * k)) * s
        return lnp.where(k <= am, p * factor, p)

    pmm = lax.fori_loop(1, n_max + 1, diagonal, lnp.full_like(x, 1 / math.sqrt(4 * math.pi)))

    def a(l):
        # Only used for l > am; elsewhere it is 1, so no NaN reaches the gradients
        # through the branch that is not taken.
        above = l > amf
        return lnp.sqrt(lnp.where(above, (4 * l * l - 1) / lnp.where(above, l * l - amf * amf,
                                                                     1.0), 1.0))

    def upward(l, state):
        two_below, below, result = state
        lf = lnp.asarray(l, x.dtype)
        previous_a = a(lf - 1)
        recurred = a(lf) * (x * below - lnp.where(lf - 1 > amf, two_below / previous_a, 0.0))
        p = lnp.where(l == am, pmm, lnp.where(l > am, recurred, 0.0))
        return below, p, lnp.where(l == n, p, result)

    zero = lnp.zeros_like(x)
    return lax.fori_loop(0, n_max + 1, upward, (zero, zero, zero))[2]


def _sph_harm_y(n: Array, m: Array, theta: Array, phi: Array, n_max: int) -> Array:
    n, m, theta, phi = lnp.broadcast_arrays(n, m, theta, phi)
    am = lnp.abs(m)
    p = _legendre(lnp.minimum(n, n_max), am, lnp.cos(theta), lnp.sin(theta), n_max)
    # (-1)^|m| for negative m: Y_n^-m = (-1)^m conj(Y_n^m).
    sign = lnp.where((m < 0) & (lnp.fmod(am, 2) == 1), -1.0, 1.0).astype(p.dtype)
    angle = m.astype(phi.dtype) * phi
    return lax.complex(sign * p * lnp.cos(angle), sign * p * lnp.sin(angle))


_sph_harm_y_compiled = lc.jit(_sph_harm_y, static_argnums=(4,))


def _as_integers(name: str, x: Any) -> Array:
    x = lnp.asarray(x)
    if not lnp.issubdtype(x.dtype, lnp.integer):
        raise TypeError(f"sph_harm_y: {name} must hold integers, got dtype {x.dtype}.")
    return x


def sph_harm_y(n: Array, m: Array, theta: Array, phi: Array, diff_n: int | None = None,
               n_max: int | None = None) -> Array:
    """The spherical harmonic Y_n^m(theta, phi) of degree n and order m.

    Args:
      n: degrees, integers >= 0.
      m: orders, integers; |m| > n gives 0.
      theta: polar angles (colatitudes) in [0, pi].
      phi: azimuths in [0, 2 pi].
      diff_n: derivatives of Y (SciPy's); JAX does not support them, nor does this.
      n_max: the largest degree, a static int (needed under jit, where n is
        traced). Degrees above it are computed as n_max, as in JAX.

    Returns:
      The complex values, of the broadcast shape of the arguments (complex64 for
      float32 angles, complex128 for float64).

    >>> import numpy as np
    >>> y = sph_harm_y(np.array([2]), np.array([-1]), np.float32(1.0), np.float32(2.0))
    >>> y.shape, y.dtype
    ((1,), dtype('complex64'))
    """
    if diff_n is not None:
        raise NotImplementedError("sph_harm_y: diff_n (derivatives) is not supported, as in "
                                  "JAX; differentiate with lamella.core.grad instead.")
    n, m = _as_integers("n", n), _as_integers("m", m)
    theta, phi = lnp.asarray(theta), lnp.asarray(phi)
    dtype = lnp.result_type(theta, phi)
    if not lnp.issubdtype(dtype, lnp.floating):
        dtype = lnp.result_type(float)
    if n_max is None:
        if isinstance(n, lc.Tracer):
            raise lc.ConcretizationTypeError(
                "sph_harm_y: n is traced, so its maximum is unknown; pass n_max= "
                "(a Python int) to use sph_harm_y under jit, vmap or grad.")
        n_max = int(np.max(np.asarray(n))) if n.size else 0
    return _sph_harm_y_compiled(n, m, theta.astype(dtype), phi.astype(dtype), int(n_max))
