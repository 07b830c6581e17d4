"""What the distributions share: argument promotion (JAX's promote_args_inexact:
one floating dtype, integers becoming the default float), one compiled kernel per
public function, SciPy's NaN for invalid parameters, the standardized variable
(x - loc) / scale, and log-space arithmetic: log(1 - e^x), and log p from p or
from 1 - p, whichever keeps the digits.

>>> import numpy as np
>>> log1mexp(np.float32([-1e-10, -1.0, -100.0]))
Array([-23.02585   ,  -0.45867515,  -0.        ], dtype=float32)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache
from typing import Any

import lamella.core as lc
import lamella.numpy as lnp
from lamella.scipy.special._elementary import log1p

Array = Any
ArrayLike = Any

LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)

__all__ = ["Array", "ArrayLike", "LOG_SQRT_2PI", "apply", "compiled", "float_dtypes", "log1mexp",
           "log1p", "log_of_either", "nan_unless", "promote", "safe", "standardize"]


def float_dtypes(name: str, *arrays: Array) -> tuple[Any, Any]:
    """(the dtype to compute in, the dtype to return) for arguments of these
    dtypes: JAX's promotion to an inexact dtype (integers and bools become the
    default float), with 16-bit floats computed in float32. Complex is refused."""
    dtype = lnp.result_type(*arrays)
    if lnp.issubdtype(dtype, lnp.complexfloating):
        raise TypeError(f"{name} takes real arguments, got {dtype}.")
    if not lnp.issubdtype(dtype, lnp.floating):
        dtype = lnp.result_type(float)
    return (lnp.float32 if lnp.finfo(dtype).bits < 32 else dtype), dtype


def promote(name: str, *args: ArrayLike) -> tuple[list[Array], Any]:
    """The arguments as arrays of one floating dtype (see `float_dtypes`) broadcast
    to one shape, and the dtype to return."""
    arrays = [lnp.asarray(a) for a in args]
    work, dtype = float_dtypes(name, *arrays)
    return list(lnp.broadcast_arrays(*[a.astype(work) for a in arrays])), dtype


@cache
def compiled(kernel: Callable) -> Callable:
    """One jitted `kernel` per function, cached (eager calls reuse its executables)."""
    return lc.jit(kernel)


def apply(name: str, kernel: Callable, *args: ArrayLike, output: int | None = None) -> Array:
    """`kernel` (elementwise, on arrays of one float dtype and shape) on `args`
    promoted by `promote`, as one compiled call: an eager call runs one cached
    executable; under a transformation it is traced like any other jit.

    A kernel may return several results (a distribution's CDF, survival function
    and their logs, which share their expensive part); `output` picks one. The
    functions sharing the kernel then share its compilation, and under jit XLA
    drops the results nobody uses.
    """
    arrays, dtype = promote(name, *args)
    out = compiled(kernel)(*arrays)
    if output is not None:
        out = out[output]
    return out if out.dtype == dtype else out.astype(dtype)


def nan_unless(valid: Array, value: Array) -> Array:
    """`value` where the parameters are `valid`, NaN elsewhere (SciPy's answer for
    a negative scale, a probability outside [0, 1], ...)."""
    return lnp.where(valid, value, lnp.nan)


def safe(use: Array, x: Array, fallback: float) -> Array:
    """`x` where `use`, else `fallback`: a branch that `where` will discard is then
    evaluated on harmless values, so its NaN or infinite derivatives cannot leak
    into the gradient (0 * inf is NaN)."""
    return lnp.where(use, x, lnp.asarray(fallback, x.dtype))


def standardize(x: Array, loc: Array, scale: Array) -> tuple[Array, Array]:
    """z = (x - loc) / scale and whether the result is defined: the scale is
    valid (> 0; SciPy's NaN otherwise) and z is not NaN (a support test would
    otherwise send a NaN point to -inf or 0). An invalid scale is replaced by 1
    so z stays harmless."""
    valid = scale > 0
    z = (x - loc) / safe(valid, scale, 1.0)
    return z, valid & ~lnp.isnan(z)


def log1mexp(x: Array) -> Array:
    """log(1 - e^x) for x <= 0: log(-expm1(x)) near 0, log1p(-e^x) below -log 2
    (Maechler's split), each where it keeps the relative accuracy."""
    near = x > -math.log(2)
    return lnp.where(near, lnp.log(-lnp.expm1(safe(near, x, -1.0))),
                     log1p(-lnp.exp(safe(~near, x, -1.0))))


def log_of_either(p: Array, q: Array) -> Array:
    """log p for p = 1 - q, as log1p(-q) where q < 1/2 (log of a p rounded near 1
    keeps no relative accuracy)."""
    return lnp.where(q < 0.5, log1p(-lnp.minimum(q, 0.5)), lnp.log(p))
