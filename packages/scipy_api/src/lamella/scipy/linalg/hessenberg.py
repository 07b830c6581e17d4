"""Hessenberg reduction ``a = q h q^H``: LAPACK's gehrd (`lax.linalg.hessenberg`) and,
for q, orgqr on its reflectors (`lax.linalg.householder_product`), as in JAX. The
reflectors follow LAPACK's convention, so `h` and `q` are SciPy's to rounding, signs
included.

The kernels have no derivative; this module's JVP follows from ``a = q h q^H`` with
q's first column fixed at e1 and, for complex matrices, h's subdiagonal real. With
``Ω = q^H dq`` (skew-Hermitian, zero first column) and ``C = q^H da q``,
``dh = C - Ω h + h Ω`` must vanish below the subdiagonal; read column by column, that
gives Ω's column j + 1 from its columns up to j, divided by ``h[j + 1, j]``
(an unreduced h, the generic case, never divides by zero).
"""

from __future__ import annotations

from typing import Any

import lamella.lax as lax
import lamella.lax.linalg as lax_linalg
import lamella.numpy as lnp
from lamella.core import custom_jvp
from lamella.scipy.linalg.common import check_matrix, compiled, inexact, is_complex, mH

__all__ = ["hessenberg"]


@custom_jvp
def _reduce(a: Any) -> tuple[Any, Any]:
    reflectors, taus = lax_linalg.hessenberg(a)
    h = lnp.triu(reflectors, -1)
    # q = diag(1, H(1) ... H(n-1)): gehrd leaves reflector i in column i, from row i + 2.
    tail = lax_linalg.householder_product(reflectors[1:, :-1], taus)
    q = lnp.pad(tail, ((1, 0), (1, 0))) + lnp.pad(lnp.ones((1, 1), a.dtype),
                                                   ((0, a.shape[0] - 1), (0, a.shape[0] - 1)))
    return h, q


def _rotation(h: Any, c: Any) -> Any:
    """Ω = q^H dq, skew-Hermitian with a zero first column, such that c - Ω h + h Ω is
    upper Hessenberg (with a real subdiagonal, for complex h)."""
    n = h.shape[0]
    rows = lnp.arange(n)

    def column(j, omega):
        # Column j of c - Ω h + h Ω, with Ω's column j + 1 still zero below row j: the
        # entries below row j + 1 must vanish, and h[j + 1, j] multiplies the unknowns.
        r = c[:, j] + h @ omega[:, j] - omega @ h[:, j]
        # Row j + 1 is dh's subdiagonal: Ω's diagonal entry (imaginary) keeps it real.
        r = lnp.where(rows == j + 1, r - lnp.real(r), r)
        new = lnp.where(rows > j, r, 0) / h[j + 1, j]
        strictly_below = lnp.where(rows > j + 1, new, 0)
        return (omega + new[:, None] * (rows == j + 1)[None, :]
                - lnp.conj(strictly_below)[None, :] * (rows == j + 1)[:, None])

    return lax.fori_loop(0, n - 1, column, lnp.zeros_like(h))


@_reduce.defjvp
def _reduce_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    h, q = _reduce(a)
    c = mH(q) @ da @ q
    omega = _rotation(h, c)
    dh = lnp.triu(c - omega @ h + h @ omega, -1)
    if is_complex(h):  # zero to rounding already; exactly zero, as h's is
        subdiagonal = lnp.arange(h.shape[0])[:, None] == lnp.arange(h.shape[0])[None, :] + 1
        dh = dh - lnp.where(subdiagonal, dh - lnp.real(dh), 0)
    return (h, q), (dh, q @ omega)


def _hessenberg_2d(a: Any, calc_q: bool) -> Any:
    h, q = _reduce(a)
    return (h, q) if calc_q else h


def hessenberg(a: Any, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> Any:
    """The upper Hessenberg form `h` of each square matrix (zero below the first
    subdiagonal), or ``(h, q)`` with unitary `q` and ``a = q @ h @ q^H`` when
    `calc_q`. Leading axes are batch axes; differentiable (h and q).

    >>> import lamella.numpy as lnp
    >>> h = hessenberg(lnp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]]))
    >>> float(h[2, 0])
    0.0
    """
    del overwrite_a, check_finite
    a, = inexact(a)
    check_matrix("hessenberg", a)
    if a.shape[-1] <= 2:  # already Hessenberg: SciPy returns it as it is
        return (a, lnp.broadcast_to(lnp.eye(a.shape[-1], dtype=a.dtype), a.shape)) \
            if calc_q else a
    return compiled(_hessenberg_2d, (2,), calc_q=bool(calc_q))(a)
