"""Complex parts: real, imag, conj, complex."""

from __future__ import annotations

import numpy as np

from lamella.core import ad
from lamella.core.trace import aval_of
from lamella.lax.lowering import chlo, hlo, register_lowering
from lamella.lax.standard import COMPLEX, FLOAT, INEXACT, broadcast_operands, naryop, unop


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64 if dtype == np.complex128 else np.float32)


def _complex_dtype(dtype: np.dtype) -> np.dtype:
    if dtype.kind != "c" and dtype.itemsize < 4:  # float16, bfloat16
        # XLA has no complex type with 16-bit parts (stablehlo.complex rejects them).
        raise TypeError(f"complex numbers have float32 or float64 parts, got {dtype.name}; "
                        "convert to float32 first.")
    return np.dtype(np.complex128 if dtype in (np.float64, np.complex128) else np.complex64)


real_p = unop("real", COMPLEX, hlo.real, result_dtype=_real_dtype)
imag_p = unop("imag", COMPLEX, hlo.imag, result_dtype=_real_dtype)
conj_p = unop("conj", INEXACT, lambda x: x, result_dtype=_complex_dtype)
complex_p = naryop("complex", FLOAT, hlo.complex,
                   result_dtype=lambda x, y: _complex_dtype(x))


def real(x):
    """The real part of a complex array."""
    return real_p.bind(x)


def imag(x):
    """The imaginary part of a complex array."""
    return imag_p.bind(x)


def conj(x):
    """The complex conjugate (a complex array, also for real x)."""
    return conj_p.bind(x)


def complex(x, y):
    """x + i y from two real arrays."""
    return complex_p.bind(*broadcast_operands("complex", x, y))


def _conj_lowering(ctx, x):
    if ctx.avals_in[0].dtype.kind != "c":
        zero = hlo.broadcast_in_dim(x.type, _zero(ctx.avals_in[0].dtype), [])
        return [hlo.complex(x, zero)]
    return [chlo.conj(x)]


def _zero(dtype):
    from lamella.lax.lowering import constant
    return constant(0, dtype)


register_lowering(conj_p, _conj_lowering)
ad.deflinear(real_p, lambda ct: [complex(ct, ad.zeros_like_aval(aval_of(ct)))])
ad.deflinear(imag_p, lambda ct: [complex(ad.zeros_like_aval(aval_of(ct)), _neg(ct))])
ad.deflinear2(conj_p, lambda ct, x: [conj(ct) if x.aval.dtype.kind == "c" else real(ct)])
ad.deflinear(complex_p, lambda ct: [real(ct), _neg(imag(ct))])


def _neg(x):
    from lamella.lax.arithmetic import neg
    return neg(x)
