"""Reference derivatives by central differences, in float64."""

from __future__ import annotations

import numpy as np


def numerical_jvp(f, primals, tangents, eps=1e-6):
    """(f(x + eps t) - f(x - eps t)) / 2 eps for a function of float64 arrays."""
    plus = f(*[p + eps * t for p, t in zip(primals, tangents)])
    minus = f(*[p - eps * t for p, t in zip(primals, tangents)])
    return (np.asarray(plus, np.float64) - np.asarray(minus, np.float64)) / (2 * eps)


def numerical_grad(f, x, eps=1e-6):
    """Gradient of a scalar function of one float64 array, one coordinate at a time."""
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = 1.0
        g[i] = numerical_jvp(f, [x], [e], eps)
    return g
