"""Hessenberg reduction ``a = q h q^H`` by Householder reflections.

lamella.lax.linalg has no ``gehrd`` kernel yet, so this is a ``fori_loop`` of
n - 1 reflections, each a pair of rank-one updates (O(n^2) per step). The
reflectors follow LAPACK's convention (``?larfg``: ``H = I - tau v v^H`` with
``v[0] = 1`` and a real subdiagonal ``beta = -sign(Re alpha) * norm``), so `h`
and `q` agree with SciPy's to rounding, not just up to signs.
"""

from __future__ import annotations

from typing import Any

import lamella.lax as lax
import lamella.numpy as lnp
from lamella.scipy.linalg.common import check_matrix, compiled, inexact

__all__ = ["hessenberg"]


def householder(x: Any, j: Any) -> tuple[Any, Any]:
    """(v, tau) of the reflector acting on entries j.. of x that zeroes entries j+1..:
    ``(I - tau v v^H)^H x`` is real at j and zero below."""
    rows = lnp.arange(x.shape[0])
    x = lnp.where(rows >= j, x, 0)
    alpha = x[j]
    tail = lnp.where(rows > j, x, 0)
    tail_norm2 = lnp.sum(lnp.abs(tail) ** 2)
    norm = lnp.sqrt(lnp.abs(alpha) ** 2 + tail_norm2)
    beta = -lnp.where(lnp.real(alpha) >= 0, 1, -1) * norm
    # Nothing to do when the tail is zero and alpha is real: the identity (tau = 0).
    trivial = (tail_norm2 == 0) & (lnp.imag(alpha) == 0)
    safe_beta = lnp.where(trivial, 1, beta)
    tau = lnp.where(trivial, 0, (safe_beta - alpha) / safe_beta)
    scale = lnp.where(trivial, 0, 1 / lnp.where(trivial, 1, alpha - safe_beta))
    v = lnp.where(rows == j, 1, tail * scale).astype(x.dtype)
    return v, tau.astype(x.dtype)


def _hessenberg_2d(a: Any, calc_q: bool) -> tuple[Any, Any]:
    n = a.shape[0]
    rows = lnp.arange(n)

    def step(j, state):
        h, q = state
        v, tau = householder(h[:, j], j + 1)
        # h <- H^H h H, with H = I - tau v v^H; q <- q H.
        h = h - lnp.conj(tau) * v[:, None] * (lnp.conj(v) @ h)[None, :]
        h = h - tau * (h @ v)[:, None] * lnp.conj(v)[None, :]
        h = lnp.where(rows[:, None] > j + 1, lnp.where(rows[None, :] == j, 0, h), h)
        if q is not None:
            q = q - tau * (q @ v)[:, None] * lnp.conj(v)[None, :]
        return h, q

    q0 = lnp.eye(n, dtype=a.dtype) if calc_q else None
    if n <= 2:  # already Hessenberg: SciPy returns it as it is
        return a, q0
    # n - 1 reflections: the last one (trivial for real matrices) makes h[n-1, n-2] real.
    return lax.fori_loop(0, n - 1, step, (a, q0))


def hessenberg(a: Any, *, calc_q: bool = False, overwrite_a: bool = False,
               check_finite: bool = True) -> Any:
    """The upper Hessenberg form `h` of each square matrix (zero below the first
    subdiagonal), or ``(h, q)`` with unitary `q` and ``a = q @ h @ q^H`` when
    `calc_q`. Leading axes are batch axes.

    >>> import lamella.numpy as lnp
    >>> h = hessenberg(lnp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 10.0]]))
    >>> float(h[2, 0])
    0.0
    """
    del overwrite_a, check_finite
    a, = inexact(a)
    check_matrix("hessenberg", a)
    h, q = compiled(_hessenberg_2d, (2,), calc_q=bool(calc_q))(a)
    return (h, q) if calc_q else h
