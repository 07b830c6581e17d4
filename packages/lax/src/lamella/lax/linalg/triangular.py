"""``triangular_solve``: solving with a triangular matrix (LAPACK trsm)."""

from __future__ import annotations

from typing import Any

from lamella.core import ad
from lamella.core.trace import aval_of
from lamella.lax.arithmetic import conj, neg
from lamella.lax.linalg.kernels import check_matrix, front_batcher, lapack
from lamella.lax.linalg.matrices import T, is_complex, matmul, tril, triu
from lamella.lax.lowering import lower_fun, register_lowering
from lamella.lax.shapes import expand_dims, squeeze
from lamella.lax.standard import standard_primitive

triangular_solve_p = standard_primitive("triangular_solve")


def triangular_solve(a: Any, b: Any, *, left_side: bool = False, lower: bool = False,
                     transpose_a: bool = False, conjugate_a: bool = False,
                     unit_diagonal: bool = False) -> Any:
    """Solves op(a) x = b (`left_side`) or x op(a) = b for x, with `a` triangular.

    op(a) is a, its transpose (`transpose_a`), its conjugate (`conjugate_a`) or its
    conjugate transpose (both). Only the `lower` (or upper) triangle of a is read,
    and its diagonal is taken as ones with `unit_diagonal`. Leading dimensions are
    batch dimensions and must agree; `b` may also be a vector (one dimension less
    than `a`), solved as a column (left side) or a row.

    >>> import numpy as np
    >>> a = np.array([[2.0, 0.0], [1.0, 1.0]], np.float32)
    >>> triangular_solve(a, np.array([2.0, 3.0], np.float32), left_side=True, lower=True)
    Array([1., 2.], dtype=float32)
    """
    vector = aval_of(b).ndim == aval_of(a).ndim - 1
    if vector:
        b = expand_dims(b, (aval_of(b).ndim if left_side else aval_of(b).ndim - 1,))
    out = triangular_solve_p.bind(a, b, left_side=bool(left_side), lower=bool(lower),
                                  transpose_a=bool(transpose_a), conjugate_a=bool(conjugate_a),
                                  unit_diagonal=bool(unit_diagonal))
    if vector:
        ndim = aval_of(out).ndim
        out = squeeze(out, (ndim - 1 if left_side else ndim - 2,))
    return out


@triangular_solve_p.def_abstract_eval
def _triangular_solve_abstract_eval(a, b, *, left_side, lower, transpose_a, conjugate_a,
                                    unit_diagonal):
    check_matrix("triangular_solve", a, square=True)
    if b.dtype != a.dtype:
        raise TypeError(f"triangular_solve requires a and b of one dtype, got {a.dtype.name} "
                        f"and {b.dtype.name}")
    if b.ndim != a.ndim or b.shape[:-2] != a.shape[:-2]:
        raise ValueError(f"triangular_solve requires a and b with equal batch dimensions, got "
                         f"shapes {a.shape} and {b.shape}")
    side = b.shape[-2] if left_side else b.shape[-1]
    if side != a.shape[-1]:
        which = "rows" if left_side else "columns"
        raise ValueError(f"triangular_solve: b's {which} ({side}) must match the size of a "
                         f"({a.shape[-1]}), got shapes {a.shape} and {b.shape} with "
                         f"left_side={left_side}")
    return b


def _triangular_solve_lower(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    if conjugate_a and not transpose_a and is_complex(a):
        a = conj(a)  # LAPACK has no plain-conjugate mode
    trans = "C" if transpose_a and conjugate_a and is_complex(a) else \
        "T" if transpose_a else "N"
    (x,) = lapack("trsm", [a, b], [(aval_of(b).shape, aval_of(b).dtype)],
                  side="L" if left_side else "R", uplo="L" if lower else "U", trans_x=trans,
                  diag="U" if unit_diagonal else "N")
    return x


def _triangular_solve_jvp_a(g_a, ans, a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
    # d(op(a)^-1 b) = -op(a)^-1 op(da) x (left side), cheaper order first, as JAX.
    m, n = aval_of(b).shape[-2:]
    k = 1 if unit_diagonal else 0
    g_a = neg(tril(g_a, -k) if lower else triu(g_a, k))
    g_a = T(g_a) if transpose_a else g_a
    g_a = conj(g_a) if conjugate_a and is_complex(g_a) else g_a

    def a_inverse(rhs):
        return triangular_solve_p.bind(a, rhs, left_side=left_side, lower=lower,
                                       transpose_a=transpose_a, conjugate_a=conjugate_a,
                                       unit_diagonal=unit_diagonal)
    if left_side:
        return a_inverse(matmul(g_a, ans)) if m > n else matmul(a_inverse(g_a), ans)
    return a_inverse(matmul(ans, g_a)) if m < n else matmul(ans, a_inverse(g_a))


def _triangular_solve_jvp_b(g_b, ans, a, b, **params):
    return triangular_solve_p.bind(a, g_b, **params)


def _triangular_solve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a,
                                unit_diagonal):
    # Linear in b only: the transpose solves with op(a) transposed.
    if ad.is_undefined_primal(a):
        raise ValueError("triangular_solve is not linear in a: it cannot be transposed in a")
    if type(ct) is ad.Zero:
        return [None, ad.Zero(b.aval)]
    return [None, triangular_solve_p.bind(a, ct, left_side=left_side, lower=lower,
                                          transpose_a=not transpose_a, conjugate_a=conjugate_a,
                                          unit_diagonal=unit_diagonal)]


register_lowering(triangular_solve_p, lower_fun(_triangular_solve_lower, multiple_results=False))
ad.defjvp2(triangular_solve_p, _triangular_solve_jvp_a, _triangular_solve_jvp_b)
ad.primitive_transposes[triangular_solve_p] = _triangular_solve_transpose
front_batcher(triangular_solve_p)
