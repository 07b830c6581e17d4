"""``qdwh``: the polar decomposition x = u h by the QR-based dynamically weighted
Halley iteration (QDWH), as a composition of qr, cholesky and triangular_solve.

Reference: Y. Nakatsukasa, Z. Bai and F. Gygi, "Optimizing Halley's iteration
for computing the matrix polar decomposition", SIAM J. Matrix Anal. Appl. 31(5),
2010. Each step maps the singular values of the iterate through the rational
function x (a + b x^2) / (1 + c x^2), whose weights (a, b, c) are chosen from a
lower bound l on the smallest singular value so that l rises to 1 as fast as
possible. The bounds and weights do not depend on the data (l starts at eps
after scaling x by a bound on its norm), so the schedule is computed in Python
and the loops are staged. Steps with c > 100 form (I + c u^H u)^-1 implicitly
through a QR decomposition of [sqrt(c) u; I], the rest through a Cholesky
factor, which is cheaper and stable once c is moderate; when the schedule is
exhausted, Halley's own weights (3, 1, 3) continue until the iterate settles.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from lamella.core import jit
from lamella.core.trace import aval_of
from lamella.lax.arithmetic import abs as abs_op
from lamella.lax.arithmetic import add, div, mul, sub
from lamella.lax.control_flow import fori_loop, while_loop
from lamella.lax.conversion import convert_element_type
from lamella.lax.fill import full
from lamella.lax.linalg.matrices import H, eye, int32, matmul, real_dtype, rows, scalar
from lamella.lax.linalg.positive_definite import cholesky
from lamella.lax.linalg.qr_decomposition import qr
from lamella.lax.linalg.triangular import triangular_solve
from lamella.lax.logical import bitwise_and, bitwise_not, eq, gt, lt, select
from lamella.lax.reductions import reduce_max, reduce_sum
from lamella.lax.shapes import (
    broadcasted_iota,
    dynamic_index_in_dim,
    dynamic_slice,
    dynamic_update_slice,
    pad,
)
from lamella.lax.transcendental import rsqrt, sqrt

# Steps whose c exceeds this use the QR form; the Cholesky form is accurate below it.
_CHOLESKY_CUTOFF = 100.0


def _weights(l: float) -> tuple[float, float, float]:
    """The optimal (a, b, c) for a lower bound l on the smallest singular value."""
    l2 = l * l
    d = (4.0 * (1.0 - l2) / (l2 * l2)) ** (1.0 / 3.0)
    root = math.sqrt(1.0 + d)
    a = root + 0.5 * math.sqrt(8.0 - 4.0 * d + 8.0 * (2.0 - l2) / (l2 * root))
    b = (a - 1.0) ** 2 / 4.0
    return a, b, a + b - 1.0


def _schedule(eps: float, max_iterations: int) -> list[tuple[float, float, float]]:
    """The weights of each step, until the bound l is within 5 eps of 1."""
    l, steps = eps, []
    while l + 5.0 * eps < 1.0 and len(steps) < max_iterations:
        a, b, c = _weights(l)
        steps.append((a, b, c))
        l = l * (a + b * l * l) / (1.0 + c * l * l)
    return steps


class _Weights:
    """A schedule of (a, b, c) as constant tables, indexed by a loop counter."""

    def __init__(self, steps: list[tuple[float, float, float]], dtype: np.dtype):
        self.tables = [np.asarray([step[j] for step in steps], dtype) for j in range(3)]

    def __len__(self) -> int:
        return len(self.tables[0])

    def __getitem__(self, i: Any) -> list[Any]:
        return [dynamic_index_in_dim(t, i, keepdims=False) for t in self.tables]


def _mask(x: Any, m: Any, n: Any) -> Any:
    """x with the entries outside its leading m-by-n block zeroed."""
    shape = aval_of(x).shape
    inside = bitwise_and(lt(broadcasted_iota(np.int32, shape, 0), m),
                         lt(broadcasted_iota(np.int32, shape, 1), n))
    return select(inside, x, full(shape, 0, aval_of(x).dtype))


def _qr_step(u: Any, weights: Any, m: Any, n: Any) -> Any:
    """e u + (a - e)/sqrt(c) q1 q2^H, where [sqrt(c) u; I] = [q1; q2] r and e = b/c."""
    a, b, c = (convert_element_type(w, aval_of(u).dtype) for w in weights)
    big_m, big_n = aval_of(u).shape
    e = div(b, c)
    # The identity block starts at row m: below the true rows when u is padded.
    stacked = pad(mul(sqrt(c), u), scalar(0, aval_of(u).dtype), [(0, big_n, 0), (0, 0, 0)])
    stacked = dynamic_update_slice(stacked, eye(big_n, aval_of(u).dtype), (m, int32(0)))
    q, _ = qr(stacked, full_matrices=False)
    q1 = _mask(rows(q, 0, big_m), m, n)
    q2 = _mask(dynamic_slice(q, (m, int32(0)), (big_n, big_n)), n, n)
    return add(mul(e, u), mul(div(sub(a, e), sqrt(c)), matmul(q1, H(q2))))


def _cholesky_step(u: Any, weights: Any) -> Any:
    """e u + (a - e) u (I + c u^H u)^-1, with e = b/c, through the Cholesky factor w."""
    a, b, c = (convert_element_type(w, aval_of(u).dtype) for w in weights)
    n = aval_of(u).shape[1]
    e = div(b, c)
    # Padding columns of u are zero, so the padded block of the matrix is the identity.
    w = cholesky(add(eye(n, aval_of(u).dtype), mul(c, matmul(H(u), u))),
                 symmetrize_input=False)
    y = triangular_solve(w, u, left_side=False, lower=True, transpose_a=True, conjugate_a=True)
    z = triangular_solve(w, y, left_side=False, lower=True)  # u (w w^H)^-1
    return add(mul(e, u), mul(sub(a, e), z))


def _frobenius(x: Any) -> Any:
    magnitude = abs_op(x)
    return sqrt(reduce_sum(mul(magnitude, magnitude), (0, 1)))


def _qdwh(x, m, n, *, max_iterations, eps):
    dtype = aval_of(x).dtype
    x = _mask(x, m, n)
    magnitude = abs_op(x)
    one_norm = reduce_max(reduce_sum(magnitude, (0,)), (0,))
    inf_norm = reduce_max(reduce_sum(magnitude, (1,)), (0,))
    # ||x||_2 <= sqrt(||x||_1 ||x||_inf): scaled by it, every singular value is <= 1.
    real = aval_of(one_norm).dtype
    scale = select(eq(one_norm, scalar(0, real)), scalar(1, real),
                   mul(rsqrt(one_norm), rsqrt(inf_norm)))
    u = mul(x, convert_element_type(scale, dtype))
    tolerance = scalar((5.0 * eps) ** (1.0 / 3.0), real_dtype(dtype))

    steps = _schedule(eps, max_iterations)
    qr_steps = _Weights([s for s in steps if s[2] > _CHOLESKY_CUTOFF], real_dtype(dtype))
    cholesky_steps = _Weights([s for s in steps if s[2] <= _CHOLESKY_CUTOFF], real_dtype(dtype))

    def qr_body(i, u):
        return _qr_step(u, qr_steps[i], m, n)

    def cholesky_body(i, state):
        u, _ = state
        new_u = _cholesky_step(u, cholesky_steps[i])
        return new_u, gt(_frobenius(sub(new_u, u)), tolerance)

    moving = full((), True, np.bool_)
    # A loop over an empty table would still trace its body: skip it instead.
    if len(qr_steps):
        u = fori_loop(0, len(qr_steps), qr_body, u)
    if len(cholesky_steps):
        u, moving = fori_loop(0, len(cholesky_steps), cholesky_body, (u, moving))

    halley = [scalar(v, real_dtype(dtype)) for v in (3.0, 1.0, 3.0)]

    def halley_body(state):
        k, u, _ = state
        new_u = _cholesky_step(u, halley)
        return add(k, 1), new_u, gt(_frobenius(sub(new_u, u)), tolerance)

    def keep_going(state):
        k, _, moving = state
        return bitwise_and(moving, lt(k, max_iterations))

    iterations, u, moving = while_loop(keep_going, halley_body, (len(steps), u, moving))
    # One Newton-Schulz step polishes orthogonality: u (3 I - u^H u) / 2.
    u = sub(mul(scalar(1.5, dtype), u), mul(scalar(0.5, dtype), matmul(u, matmul(H(u), u))))
    h = matmul(H(u), x)
    h = div(add(h, H(h)), scalar(2, dtype))
    return u, h, iterations, bitwise_not(moving)


_qdwh_jit = jit(_qdwh, static_argnames=("max_iterations", "eps"))


def qdwh(x: Any, *, is_hermitian: bool = False, max_iterations: int | None = None,
         eps: float | None = None, dynamic_shape: tuple[int, int] | None = None
         ) -> tuple[Any, Any, Any, Any]:
    """Polar decomposition x = u h by QDWH: ``(u, h, num_iters, is_converged)``.

    `x` is a full-rank M-by-N matrix with M >= N; u has orthonormal columns and
    h is Hermitian positive semi-definite. The iteration stops when successive
    iterates differ by less than (5 eps)^(1/3) in the Frobenius norm, or after
    `max_iterations` (default 10) steps; `eps` defaults to the machine epsilon
    of x's dtype. With ``dynamic_shape=(m, n)``, only the leading m-by-n block
    of x counts (the rest is padding, zeroed in u and h). `is_hermitian` is
    accepted and unused, as in JAX.

    >>> import numpy as np
    >>> u, h, _, converged = qdwh(np.array([[0.0, 2.0], [3.0, 0.0]], np.float32))
    >>> np.allclose(u, [[0, 1], [1, 0]], atol=1e-6), np.allclose(h, [[3, 0], [0, 2]], atol=1e-5)
    (True, True)
    >>> converged
    Array(True, dtype=bool)
    """
    del is_hermitian  # JAX's signature keeps it for compatibility; nothing uses it.
    aval = aval_of(x)
    if aval.ndim != 2 or aval.dtype.kind not in "fc":
        raise ValueError("qdwh takes one floating-point or complex matrix of shape (M, N) "
                         f"(vmap it for batches), got {aval.dtype.name}{list(aval.shape)}")
    big_m, big_n = aval.shape
    if big_m < big_n:
        raise ValueError(f"qdwh: the input matrix of shape M x N must have M >= N, got shape "
                         f"{aval.shape} (decompose the conjugate transpose instead)")
    max_iterations = 10 if max_iterations is None else int(max_iterations)
    eps = float(np.finfo(real_dtype(aval.dtype)).eps) if eps is None else float(eps)
    m, n = (big_m, big_n) if dynamic_shape is None else dynamic_shape
    return _qdwh_jit(x, np.int32(m) if isinstance(m, int) else m,
                     np.int32(n) if isinstance(n, int) else n,
                     max_iterations=max_iterations, eps=eps)
