"""The von Mises distribution on the circle, density
exp(kappa cos x) / (2 pi I0(kappa)): jax.scipy.stats.vonmises's functions (JAX's
set and signatures: logpdf and pdf of (x, kappa); x is not reduced modulo 2 pi,
as in SciPy and JAX).

It is computed as -2 kappa sin(x/2)**2 - log(2 pi I0e(kappa)) with the scaled
Bessel function, so large kappa neither overflows nor loses cos(x) - 1 near
x = 0. kappa = 0 is the uniform density 1 / (2 pi) (SciPy's value; JAX gives
NaN); kappa < 0 gives NaN, as SciPy.

>>> import numpy as np
>>> from lamella.scipy.stats import vonmises
>>> vonmises.logpdf(np.float32([0.0, 1e-3]), np.float32([1e6, 1e6]))
Array([5.9888167, 5.4888167], dtype=float32)
"""

from __future__ import annotations

import math

import lamella.numpy as lnp
from lamella.scipy import special
from lamella.scipy.stats._common import Array, ArrayLike, apply, nan_unless, safe

__all__ = ["logpdf", "pdf"]


def _logpdf(x, kappa):
    valid = kappa >= 0
    kappa = safe(valid, kappa, 1.0)
    half_sine = lnp.sin(0.5 * x)
    value = -2 * kappa * half_sine * half_sine - lnp.log(2 * math.pi * special.i0e(kappa))
    return nan_unless(valid, value)


def _pdf(x, kappa):
    return lnp.exp(_logpdf(x, kappa))


def logpdf(x: ArrayLike, kappa: ArrayLike) -> Array:
    """log density kappa (cos x - 1) - log(2 pi I0e(kappa)).

    >>> import numpy as np
    >>> logpdf(np.float32([0.0, 1.0]), 2.0)
    Array([-0.6618706, -1.581266 ], dtype=float32)
    """
    return apply("vonmises.logpdf", _logpdf, x, kappa)


def pdf(x: ArrayLike, kappa: ArrayLike) -> Array:
    """The density exp(kappa cos x) / (2 pi I0(kappa)).

    >>> import numpy as np
    >>> pdf(np.float32([0.0]), 0.0)
    Array([0.1591549], dtype=float32)
    """
    return apply("vonmises.pdf", _pdf, x, kappa)
