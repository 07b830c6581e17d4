"""QR factorization: ``qr`` (modes full, economic and r; column pivoting) and
``qr_multiply``, on lamella.lax.linalg's ``qr`` (LAPACK geqrf, or geqp3 with
column pivoting, as in JAX and SciPy: the same column order and factors).
"""

from __future__ import annotations

from typing import Any

import lamella.lax.linalg as lax_linalg
import lamella.numpy as lnp
from lamella.scipy.linalg.common import check_matrix, compiled, inexact

__all__ = ["qr", "qr_multiply"]


def _qr_factors(a: Any, full_matrices: bool, pivoting: bool) -> tuple[Any, Any, Any]:
    factors = lax_linalg.qr(a, pivoting=pivoting, full_matrices=full_matrices)
    return factors if pivoting else (*factors, None)


def qr(a: Any, overwrite_a: bool = False, lwork: Any = None, mode: str = "full",
       pivoting: bool = False, check_finite: bool = True) -> tuple[Any, ...]:
    """QR decomposition ``a[:, p] = q @ r`` of (batches of) m-by-n matrices.

    `mode`: ``'full'`` (q is m-by-m, r m-by-n), ``'economic'`` (q m-by-k, r
    k-by-n, k = min(m, n)) or ``'r'`` (r alone, m-by-n). With `pivoting`, the
    column order `p` (int32) is returned last and ``abs(diag(r))`` decreases.

    >>> import lamella.numpy as lnp
    >>> q, r = qr(lnp.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> abs(r).round(3)
    Array([[5. , 2.2],
           [0. , 0.4]], dtype=float32)
    """
    del overwrite_a, lwork, check_finite
    if mode not in ("full", "economic", "r"):
        raise ValueError(f"qr: unsupported mode {mode!r}; expected 'full', 'economic' or 'r'")
    a, = inexact(a)
    check_matrix("qr", a, square=False)
    q, r, order = compiled(_qr_factors, full_matrices=mode == "full",
                           pivoting=bool(pivoting))(a)
    if mode == "r":
        # The economic R padded with zero rows is the full R, and has a derivative.
        m, n = a.shape[-2:]
        r = lnp.pad(r, [(0, 0)] * (a.ndim - 2) + [(0, m - min(m, n)), (0, 0)])
    out = (r,) if mode == "r" else (q, r)
    return (*out, order) if pivoting else out


def qr_multiply(a: Any, c: Any, mode: str = "right", pivoting: bool = False,
                conjugate: bool = False, overwrite_a: bool = False,
                overwrite_c: bool = False) -> tuple[Any, ...]:
    """``(c @ q, r)`` (`mode` ``'right'``) or ``(q @ c, r)`` (``'left'``) for the economic
    QR decomposition of `a` (q m-by-k, r k-by-n); with `conjugate`, q is conjugated.
    A 1-D `c` is a row (right) or a column (left); with `pivoting`, the column
    order is returned last.

    >>> import lamella.numpy as lnp
    >>> cq, r = qr_multiply(lnp.array([[3.0, 1.0], [4.0, 2.0]]), lnp.array([3.0, 4.0]))
    >>> cq
    Array([-5.,  0.], dtype=float32)
    """
    del overwrite_a, overwrite_c
    if mode not in ("right", "left"):
        raise ValueError(f"qr_multiply: mode must be 'right' or 'left'; got {mode!r}")
    a, c = inexact(a, c)
    check_matrix("qr_multiply", a, square=False)
    m, n = a.shape[-2:]
    k = min(m, n)
    vector = c.ndim == 1
    if vector:
        c = c[:, None] if mode == "left" else c[None, :]
    if c.ndim < 2:
        raise ValueError(f"qr_multiply: c must be a vector or a (batched) matrix; got shape "
                         f"{c.shape}")
    if mode == "left" and c.shape[-2] != k:
        raise ValueError(f"qr_multiply: a has shape {a.shape}, so q has {k} columns, and c "
                         f"must have {k} rows for q @ c; got c of shape {c.shape}")
    if mode == "right" and c.shape[-1] != m:
        raise ValueError(f"qr_multiply: a has shape {a.shape}, so q has {m} rows, and c must "
                         f"have {m} columns for c @ q; got c of shape {c.shape}")
    cq, r, order = compiled(_multiply, left=mode == "left", pivoting=bool(pivoting),
                            conjugate=bool(conjugate))(a, c)
    if vector:
        cq = cq[..., :, 0] if mode == "left" else cq[..., 0, :]
    return (cq, r, order) if pivoting else (cq, r)


def _multiply(a: Any, c: Any, left: bool, pivoting: bool, conjugate: bool) -> tuple[Any, ...]:
    q, r, order = _qr_factors(a, False, pivoting)
    if conjugate:
        q = lnp.conj(q)
    return (q @ c if left else c @ q), r, order

