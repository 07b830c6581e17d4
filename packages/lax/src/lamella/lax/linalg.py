"""Linear algebra primitives (``jax.lax.linalg``): factorizations through LAPACK.

Each decomposition is a primitive with JAX's name, parameters and outputs:
``cholesky``, ``triangular_solve``, ``lu``, ``qr``, ``eigh``, ``svd``, ``eig``
and ``schur``. All take batches of matrices (leading dimensions), in float32,
float64, complex64 and complex128, and have JVPs (hence VJPs through
transposition), batching rules and CPU lowerings; ``eig`` (eigenvalue
derivatives only) and ``schur`` (no derivative) keep JAX's limits.

A decomposition lowers to one of jaxlib's LAPACK FFI kernels (a StableHLO
``custom_call`` to ``lapack_?potrf_ffi`` and friends), wrapped in ordinary lax
operations that read the kernel's ``info`` output: failed factorizations come
back filled with NaN, as in JAX. The kernels batch over leading dimensions
themselves, so the batching rules only move the vmapped axis to the front.

    >>> import numpy as np
    >>> a = np.array([[4.0, 2.0], [2.0, 3.0]], np.float32)
    >>> cholesky(a)
    Array([[2.       , 0.       ],
           [1.       , 1.4142135]], dtype=float32)

Caveat, as in JAX: derivatives of eigenvectors (``eigh``) and of singular
vectors (``svd``) are ill-defined where eigenvalues (singular values) repeat;
their JVPs divide by differences of eigenvalues and return infinities or NaNs
there. Derivatives of the eigenvalues and singular values themselves, and of
functions invariant to the choice of basis, are fine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core import Primitive, ShapedArray, ad, batching
from lamella.core.trace import aval_of
from lamella.lax import runtime
from lamella.lax.arithmetic import add, conj, div, integer_pow, mul, neg, real, sub
from lamella.lax.arithmetic import complex as complex_op
from lamella.lax.contraction import Precision, dot_general
from lamella.lax.control_flow import fori_loop
from lamella.lax.conversion import convert_element_type
from lamella.lax.fill import full, full_like
from lamella.lax.logical import eq, ge, le, select
from lamella.lax.lowering import aval_to_ir_type, hlo, ir, lower_fun, register_lowering
from lamella.lax.reductions import reduce_sum
from lamella.lax.shapes import (
    broadcast_in_dim,
    broadcasted_iota,
    expand_dims,
    pad,
    slice,
    squeeze,
    transpose,
)
from lamella.lax.standard import COMPLEX, FLOAT, check_dtypes, standard_primitive

__all__ = ["cholesky", "cholesky_p", "eig", "eig_p", "eigh", "eigh_p", "lu", "lu_p",
           "lu_pivots_to_permutation", "qr", "qr_p", "schur", "schur_p", "svd", "svd_p",
           "symmetrize", "triangular_solve", "triangular_solve_p"]

_LAPACK_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
                  np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}


# --- small matrix helpers (lax operations, so they trace, batch and differentiate) ---


def _is_complex(x: Any) -> bool:
    return aval_of(x).dtype.kind == "c"


def _T(x: Any) -> Any:
    ndim = aval_of(x).ndim
    return transpose(x, (*range(ndim - 2), ndim - 1, ndim - 2))


def _H(x: Any) -> Any:
    return conj(_T(x)) if _is_complex(x) else _T(x)


def _matmul(a: Any, b: Any) -> Any:
    """Matrix product over the last two axes, batched over equal leading axes."""
    ndim = aval_of(a).ndim
    batch = tuple(range(ndim - 2))
    return dot_general(a, b, (((ndim - 1,), (ndim - 2,)), (batch, batch)),
                       precision=Precision.HIGHEST)


def _int32(value: int) -> Any:
    # Explicitly typed: under x64 a Python int would be an int64 operand.
    return full((), value, np.int32)


def _tri_mask(shape: Sequence[int], k: int, lower: bool) -> Any:
    """True on and below diagonal k (``lower``), or on and above it."""
    ndim = len(shape)
    rows = broadcasted_iota(np.int32, shape, ndim - 2)
    cols = broadcasted_iota(np.int32, shape, ndim - 1)
    return le(cols, add(rows, _int32(k))) if lower else ge(cols, add(rows, _int32(k)))


def _tril(x: Any, k: int = 0) -> Any:
    return select(_tri_mask(aval_of(x).shape, k, True), x, full_like(x, 0))


def _triu(x: Any, k: int = 0) -> Any:
    return select(_tri_mask(aval_of(x).shape, k, False), x, full_like(x, 0))


def _eye(n: int, dtype: Any) -> Any:
    """The n-by-n identity."""
    return convert_element_type(eq(broadcasted_iota(np.int32, (n, n), 0),
                                   broadcasted_iota(np.int32, (n, n), 1)), dtype)


def _diagonal(x: Any) -> Any:
    """The main diagonal of each (square) matrix, as a vector."""
    aval = aval_of(x)
    eye = _broadcast_to(_eye(aval.shape[-1], aval.dtype), aval.shape)
    return reduce_sum(mul(x, eye), (aval.ndim - 1,))


def _broadcast_to(x: Any, shape: Sequence[int]) -> Any:
    """A matrix `x` broadcast over the leading axes of `shape`."""
    return broadcast_in_dim(x, (*shape[:-2], *aval_of(x).shape), (len(shape) - 2, len(shape) - 1))


def _real_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.complex64 else \
        np.dtype(np.float64) if dtype == np.complex128 else dtype


def symmetrize(x: Any) -> Any:
    """``(x + x^H) / 2``: the Hermitian part of each matrix.

    >>> symmetrize(np.array([[1.0, 2.0], [0.0, 1.0]], np.float32))
    Array([[1., 1.],
           [1., 1.]], dtype=float32)
    """
    return div(add(x, _H(x)), full((), 2, aval_of(x).dtype))


# --- the LAPACK custom call ---------------------------------------------------------
#
# One internal primitive stands for every kernel: its params name the target, the
# character attributes and the result types. It only ever appears inside the
# lowerings of the public primitives below, so it needs no impl, JVP or batching.
# The kernels exist for CPU only: on other platforms lowering reports no rule.

lapack_call_p = Primitive("lapack_call")
lapack_call_p.multiple_results = True


@lapack_call_p.def_abstract_eval
def _lapack_call_abstract_eval(*avals, target, attrs, results):
    return [ShapedArray(shape, np.dtype(dtype)) for shape, dtype in results]


def _layout(ndim: int, column_major: bool) -> ir.Attribute:
    # Minor-to-major order. The kernels read matrices column-major with the batch
    # dims outermost; XLA inserts the physical transposes these layouts ask for.
    order = [ndim - 2, ndim - 1, *range(ndim - 3, -1, -1)] if column_major \
        else list(range(ndim - 1, -1, -1))
    return ir.DenseIntElementsAttr.get(np.array(order, np.int64), type=ir.IndexType.get())


def _lapack_call_lowering(ctx, *operands, target, attrs, results):
    runtime.register_lapack_targets()
    rank = max(a.ndim for a in ctx.avals_in)
    ui8 = ir.IntegerType.get_unsigned(8)
    config = ir.DictAttr.get({name: ir.IntegerAttr.get(ui8, ord(char)) for name, char in attrs})
    op = hlo.CustomCallOp(
        [aval_to_ir_type(a) for a in ctx.avals_out], list(operands), target,
        api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4),
        backend_config=config,
        operand_layouts=ir.ArrayAttr.get([_layout(a.ndim, a.ndim == rank)
                                          for a in ctx.avals_in]),
        result_layouts=ir.ArrayAttr.get([_layout(a.ndim, a.ndim == rank)
                                         for a in ctx.avals_out]))
    return list(op.results)


register_lowering(lapack_call_p, _lapack_call_lowering, platform="cpu")


def _lapack(kernel: str, operands: Sequence[Any], results: Sequence[tuple], **attrs: str):
    """Binds kernel `lapack_<prefix><kernel>_ffi`; `results` lists (shape, dtype) pairs."""
    dtype = aval_of(operands[0]).dtype
    target = f"lapack_{_LAPACK_PREFIX[dtype]}{kernel}_ffi"
    results = tuple((tuple(int(d) for d in shape), np.dtype(dt).name) for shape, dt in results)
    return lapack_call_p.bind(*operands, target=target, attrs=tuple(sorted(attrs.items())),
                              results=results)


def _nan_fill(ok: Any, x: Any) -> Any:
    """`x` where the batch element's `ok` holds, NaN elsewhere."""
    shape = aval_of(x).shape
    mask = broadcast_in_dim(ok, shape, tuple(range(aval_of(ok).ndim)))
    return select(mask, x, full_like(x, np.nan))


def _check_matrix(name: str, aval: ShapedArray, square: bool) -> None:
    check_dtypes(name, (FLOAT, COMPLEX), aval)
    if aval.dtype not in _LAPACK_PREFIX:
        raise TypeError(f"{name} supports float32, float64, complex64 and complex128, got "
                        f"{aval.dtype.name}")
    if aval.ndim < 2 or (square and aval.shape[-1] != aval.shape[-2]):
        kind = "square matrices, shape (..., n, n)" if square else "matrices, shape (..., m, n)"
        raise ValueError(f"{name}: argument must be a batch of {kind}; got shape {aval.shape}")


def _front_batcher(prim: Primitive):
    """Batching by moving every vmapped axis to the front: the kernels batch natively."""
    def rule(args, dims, **params):
        size = next(aval_of(x).shape[d] for x, d in zip(args, dims) if d is not None)
        args = [batching.at_front(x, d, size) for x, d in zip(args, dims)]
        out = prim.bind(*args, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)
    batching.primitive_batchers[prim] = rule


# --- cholesky -----------------------------------------------------------------------

cholesky_p = standard_primitive("cholesky")


def cholesky(x: Any, *, symmetrize_input: bool = True) -> Any:
    """The lower Cholesky factor L of each Hermitian positive-definite matrix: x = L L^H.

    With `symmetrize_input`, factors ``(x + x^H) / 2`` (only the lower triangle is
    read otherwise). Matrices that are not positive definite give NaNs, as in JAX.

    >>> cholesky(np.array([[1.0, 0.0], [0.0, -1.0]], np.float32))
    Array([[nan,  0.],
           [nan, nan]], dtype=float32)
    """
    if symmetrize_input:
        _check_matrix("cholesky", aval_of(x), square=True)
        x = symmetrize(x)
    return cholesky_p.bind(x)


@cholesky_p.def_abstract_eval
def _cholesky_abstract_eval(x):
    _check_matrix("cholesky", x, square=True)
    return x


def _cholesky_lower(x):
    aval = aval_of(x)
    factor, info = _lapack("potrf", [x], [(aval.shape, aval.dtype), (aval.shape[:-2], np.int32)],
                           uplo="L")
    # The upper triangle still holds the input: zero it, after the NaN fill.
    return _tril(_nan_fill(eq(info, _int32(0)), factor))


def _cholesky_jvp(primals, tangents):
    # Forward-mode rule from https://arxiv.org/pdf/1602.07527.pdf (as JAX):
    # L_dot = L phi(L^-1 sigma_dot L^-H), phi taking the lower triangle with a halved diagonal.
    (x,), (sigma_dot,) = primals, tangents
    factor = cholesky_p.bind(x)
    sigma_dot = ad.instantiate_zeros(sigma_dot)
    aval = aval_of(x)
    tmp = triangular_solve(factor, sigma_dot, left_side=False, transpose_a=True,
                           conjugate_a=True, lower=True)
    inner = triangular_solve(factor, tmp, left_side=True, transpose_a=False, lower=True)
    halve = add(_broadcast_to(_eye(aval.shape[-1], aval.dtype), aval.shape),
                full((), 1, aval.dtype))
    phi = div(_tril(inner), halve)
    return factor, _matmul(factor, phi)


register_lowering(cholesky_p, lower_fun(_cholesky_lower, multiple_results=False))
ad.primitive_jvps[cholesky_p] = _cholesky_jvp
_front_batcher(cholesky_p)


# --- triangular_solve ---------------------------------------------------------------

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
    _check_matrix("triangular_solve", a, square=True)
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
    if conjugate_a and not transpose_a and _is_complex(a):
        a = conj(a)  # LAPACK has no plain-conjugate mode
    trans = "C" if transpose_a and conjugate_a and _is_complex(a) else \
        "T" if transpose_a else "N"
    (x,) = _lapack("trsm", [a, b], [(aval_of(b).shape, aval_of(b).dtype)],
                   side="L" if left_side else "R", uplo="L" if lower else "U", trans_x=trans,
                   diag="U" if unit_diagonal else "N")
    return x


def _triangular_solve_jvp_a(g_a, ans, a, b, *, left_side, lower, transpose_a, conjugate_a,
                            unit_diagonal):
    # d(op(a)^-1 b) = -op(a)^-1 op(da) x (left side), cheaper order first, as JAX.
    m, n = aval_of(b).shape[-2:]
    k = 1 if unit_diagonal else 0
    g_a = neg(_tril(g_a, -k) if lower else _triu(g_a, k))
    g_a = _T(g_a) if transpose_a else g_a
    g_a = conj(g_a) if conjugate_a and _is_complex(g_a) else g_a

    def a_inverse(rhs):
        return triangular_solve_p.bind(a, rhs, left_side=left_side, lower=lower,
                                       transpose_a=transpose_a, conjugate_a=conjugate_a,
                                       unit_diagonal=unit_diagonal)
    if left_side:
        return a_inverse(_matmul(g_a, ans)) if m > n else _matmul(a_inverse(g_a), ans)
    return a_inverse(_matmul(ans, g_a)) if m < n else _matmul(ans, a_inverse(g_a))


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
_front_batcher(triangular_solve_p)


# --- lu -----------------------------------------------------------------------------

lu_p = standard_primitive("lu", multiple_results=True)


def lu(x: Any) -> tuple[Any, Any, Any]:
    """LU decomposition with partial pivoting: ``(lu, pivots, permutation)``.

    `lu` holds the unit-lower L below its diagonal and U on and above it;
    `pivots` (int32, length min(m, n)) says row i was swapped with row pivots[i],
    in order; `permutation` (int32, length m) is their result, so that
    ``x[permutation] = L @ U``. Singular matrices factor without NaNs (U has a
    zero on its diagonal), as in JAX.

    >>> _, pivots, perm = lu(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    >>> pivots, perm
    (Array([1, 1], dtype=int32), Array([1, 0], dtype=int32))
    """
    out = lu_p.bind(x)
    return out[0], out[1], out[2]


@lu_p.def_abstract_eval
def _lu_abstract_eval(x):
    _check_matrix("lu", x, square=False)
    batch, (m, n) = x.shape[:-2], x.shape[-2:]
    return [x, ShapedArray((*batch, min(m, n)), np.dtype(np.int32)),
            ShapedArray((*batch, m), np.dtype(np.int32))]


def lu_pivots_to_permutation(pivots: Any, permutation_size: int) -> Any:
    """The permutation that LAPACK-style (0-based, sequential-swap) `pivots` make.

    Batched over leading dimensions of `pivots`.

    >>> lu_pivots_to_permutation(np.array([2, 2, 2], np.int32), 4)
    Array([2, 0, 1, 3], dtype=int32)
    """
    aval = aval_of(pivots)
    batch, k = aval.shape[:-1], aval.shape[-1]
    shape = (*batch, permutation_size)
    axis = len(batch)
    positions = broadcasted_iota(np.int32, shape, axis)
    pivot_positions = broadcasted_iota(np.int32, aval.shape, axis)

    def pick(vector, mask):
        # vector[..., j] for the one j where mask holds; one-hot sums batch freely,
        # where a gather per batch element would not.
        return reduce_sum(select(mask, vector, full_like(vector, 0)), (axis,))

    def spread(scalar):
        return broadcast_in_dim(scalar, shape, tuple(range(axis)))

    def swap(i, perm):
        i = convert_element_type(i, np.int32)  # the loop counter is int64 under x64
        j = pick(pivots, eq(pivot_positions, i))
        at_i, at_j = eq(positions, i), eq(positions, spread(j))
        perm_i, perm_j = pick(perm, at_i), pick(perm, at_j)
        return select(at_i, spread(perm_j), select(at_j, spread(perm_i), perm))

    return fori_loop(0, min(k, permutation_size), swap, positions)


def _permutation_matrix(permutation: Any, dtype: Any) -> Any:
    """P with P[..., i, permutation[..., i]] = 1, so that P a = a[permutation]."""
    aval = aval_of(permutation)
    shape = (*aval.shape, aval.shape[-1])
    return convert_element_type(
        eq(broadcast_in_dim(permutation, shape, tuple(range(aval.ndim))),
           broadcasted_iota(np.int32, shape, aval.ndim)), dtype)


def _lu_lower(x):
    aval = aval_of(x)
    batch, (m, n) = aval.shape[:-2], aval.shape[-2:]
    factors, ipiv, info = _lapack("getrf", [x], [(aval.shape, aval.dtype),
                                                 ((*batch, min(m, n)), np.int32),
                                                 (batch, np.int32)])
    # info > 0 flags an exactly singular U, which is still a valid factorization.
    pivots = sub(ipiv, _int32(1))
    return [_nan_fill(ge(info, _int32(0)), factors), pivots, lu_pivots_to_permutation(pivots, m)]


def _lu_jvp(primals, tangents):
    # JAX's rule: with P A = L U, L^-1 P dA U^-1 = L^-1 dL + dU U^-1 splits into its
    # strictly lower part (dL) and upper part (dU).
    (a,), (a_dot,) = primals, tangents
    a_dot = ad.instantiate_zeros(a_dot)
    lu_, pivots, permutation = lu_p.bind(a)
    aval = aval_of(a)
    ndim, dtype = aval.ndim, aval.dtype
    m, n = aval.shape[-2:]
    k = min(m, n)
    # P dA as a product with a one-hot matrix: rows permuted per batch element.
    x = _matmul(_permutation_matrix(permutation, dtype), a_dot)
    zero = full((), 0, dtype)
    no_pad = [(0, 0, 0)] * (ndim - 2)
    l_part = _tril(slice(lu_, (0,) * ndim, (*aval.shape[:-1], k)), -1)
    l_full = add(pad(l_part, zero, [*no_pad, (0, 0, 0), (0, m - k, 0)]),
                 _broadcast_to(_eye(m, dtype), (*aval.shape[:-2], m, m)))
    u_part = _triu(slice(lu_, (0,) * ndim, (*aval.shape[:-2], k, n)))
    u_eye = pad(_eye(n - k, dtype), zero, [(k, 0, 0), (k, 0, 0)])
    u_full = add(pad(u_part, zero, [*no_pad, (0, n - k, 0), (0, 0, 0)]),
                 _broadcast_to(u_eye, (*aval.shape[:-2], n, n)))
    la = triangular_solve(l_full, x, left_side=True, lower=True, unit_diagonal=True)
    lau = triangular_solve(u_full, la, left_side=False, lower=False)
    lu_dot = add(_matmul(l_full, _tril(lau, -1)), _matmul(_triu(lau), u_full))
    return (lu_, pivots, permutation), (lu_dot, ad.Zero.from_primal_value(pivots),
                                        ad.Zero.from_primal_value(permutation))


register_lowering(lu_p, lower_fun(_lu_lower))
ad.primitive_jvps[lu_p] = _lu_jvp
_front_batcher(lu_p)


# --- qr -----------------------------------------------------------------------------

qr_p = standard_primitive("qr", multiple_results=True)


def qr(x: Any, *, full_matrices: bool = True) -> tuple[Any, Any]:
    """QR decomposition ``(q, r)``: x = q r, q with orthonormal columns, r upper triangular.

    For an m-by-n x and k = min(m, n): with `full_matrices`, q is m-by-m and r
    m-by-n; otherwise q is m-by-k and r k-by-n.

    >>> q, r = qr(np.ones((3, 2), np.float32), full_matrices=False)
    >>> q.shape, r.shape
    ((3, 2), (2, 2))
    """
    q, r = qr_p.bind(x, full_matrices=bool(full_matrices))
    return q, r


@qr_p.def_abstract_eval
def _qr_abstract_eval(x, *, full_matrices):
    _check_matrix("qr", x, square=False)
    batch, (m, n) = x.shape[:-2], x.shape[-2:]
    k = m if full_matrices else min(m, n)
    return [x.update(shape=(*batch, m, k)), x.update(shape=(*batch, k, n))]


def _qr_lower(x, *, full_matrices):
    aval = aval_of(x)
    batch, (m, n) = aval.shape[:-2], aval.shape[-2:]
    ndim, k = aval.ndim, min(m, n)
    if k == 0:
        # Nothing to factor: q is (the first columns of) the identity, r is empty.
        kq = m if full_matrices else k
        q = _broadcast_to(slice(_eye(m, aval.dtype), (0, 0), (m, kq)), (*batch, m, kq))
        return [q, full((*batch, kq, n), 0, aval.dtype)]
    reflectors, taus = _lapack("geqrf", [x], [(aval.shape, aval.dtype),
                                              ((*batch, k), aval.dtype)])
    orgqr = "ungqr" if _is_complex(x) else "orgqr"

    def householder_product(a):
        shape = aval_of(a).shape
        return _lapack(orgqr, [a, taus], [(shape, aval.dtype)])[0]

    if m < n:
        q = householder_product(slice(reflectors, (0,) * ndim, (*batch, m, m)))
        r = _triu(reflectors)
    elif full_matrices and m > n:
        # orgqr makes as many columns as it gets: pad to m with zero reflectors.
        padded = pad(reflectors, full((), 0, aval.dtype),
                     [(0, 0, 0)] * (ndim - 1) + [(0, m - n, 0)])
        q, r = householder_product(padded), _triu(reflectors)
    else:
        q = householder_product(reflectors)
        r = _triu(slice(reflectors, (0,) * ndim, (*batch, n, n)))
    return [q, r]


def _qr_jvp(primals, tangents, *, full_matrices):
    # JAX's qr_jvp_rule (j-towns.github.io/papers/qr-derivative.pdf).
    (x,), (dx,) = primals, tangents
    dx = ad.instantiate_zeros(dx)
    aval = aval_of(x)
    m, n = aval.shape[-2:]
    if m < n or (full_matrices and m != n):
        raise NotImplementedError("Unimplemented case of QR decomposition derivative: it needs "
                                  f"m >= n and, for m > n, full_matrices=False (shape "
                                  f"{aval.shape}, full_matrices={full_matrices})")
    q, r = qr_p.bind(x, full_matrices=full_matrices)
    dx_rinv = triangular_solve(r, dx)  # right side, upper: dx r^-1
    qt_dx_rinv = _matmul(_H(q), dx_rinv)
    lower_part = _tril(qt_dx_rinv, -1)
    do = sub(lower_part, _H(lower_part))  # skew-Hermitian
    if _is_complex(x):
        # The diagonal's imaginary part is left for the rotation (complex inputs).
        imag_diag = sub(qt_dx_rinv, convert_element_type(real(qt_dx_rinv), aval.dtype))
        do = add(do, mul(_broadcast_to(_eye(n, aval.dtype), aval_of(do).shape), imag_diag))
    dq = add(_matmul(q, sub(do, qt_dx_rinv)), dx_rinv)
    dr = _matmul(sub(qt_dx_rinv, do), r)
    return [q, r], [dq, dr]


register_lowering(qr_p, lower_fun(_qr_lower))
ad.primitive_jvps[qr_p] = _qr_jvp
_front_batcher(qr_p)


# --- eigh ---------------------------------------------------------------------------

eigh_p = standard_primitive("eigh", multiple_results=True)


def eigh(x: Any, *, lower: bool = True, symmetrize_input: bool = True,
         sort_eigenvalues: bool = True) -> tuple[Any, Any]:
    """Eigendecomposition of Hermitian matrices: ``(v, w)`` with x = v diag(w) v^H.

    `w` (real) is in ascending order, `v` holds the eigenvectors as columns. With
    `symmetrize_input`, decomposes ``(x + x^H) / 2``; otherwise only the `lower`
    (or upper) triangle is read. LAPACK always returns sorted eigenvalues, so
    `sort_eigenvalues` is accepted for JAX compatibility only. Eigenvector
    derivatives are ill-defined where eigenvalues repeat (see the module notes).

    >>> v, w = eigh(np.array([[2.0, 1.0], [1.0, 2.0]], np.float32))
    >>> w
    Array([1., 3.], dtype=float32)
    """
    if symmetrize_input:
        _check_matrix("eigh", aval_of(x), square=True)
        x = symmetrize(x)
    v, w = eigh_p.bind(x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues))
    return v, w


@eigh_p.def_abstract_eval
def _eigh_abstract_eval(x, *, lower, sort_eigenvalues):
    _check_matrix("eigh", x, square=True)
    return [x, ShapedArray(x.shape[:-1], _real_dtype(x.dtype))]


def _eigh_lower(x, *, lower, sort_eigenvalues):
    aval = aval_of(x)
    v, w, info = _lapack("syevd" if not _is_complex(x) else "heevd", [x],
                         [(aval.shape, aval.dtype), (aval.shape[:-1], _real_dtype(aval.dtype)),
                          (aval.shape[:-2], np.int32)], mode="V", uplo="L" if lower else "U")
    ok = eq(info, _int32(0))
    return [_nan_fill(ok, v), _nan_fill(ok, w)]


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues):
    # dw = diag(V^H dA V); dV = V (F * V^H dA V) with F_ij = 1 / (w_j - w_i) off
    # the diagonal, 0 on it: infinite where eigenvalues repeat (the caveat above).
    (a,), (a_dot,) = primals, tangents
    a_dot = ad.instantiate_zeros(a_dot)
    v, w_real = eigh_p.bind(a, lower=lower, sort_eigenvalues=sort_eigenvalues)
    aval = aval_of(a)
    n, ndim = aval.shape[-1], aval.ndim
    w = convert_element_type(w_real, aval.dtype)
    matrix = (*aval.shape[:-2], n, n)
    w_cols = broadcast_in_dim(w, matrix, (*range(ndim - 2), ndim - 1))
    w_rows = broadcast_in_dim(w, matrix, tuple(range(ndim - 1)))
    eye = _broadcast_to(_eye(n, aval.dtype), matrix)
    f_mat = sub(integer_pow(add(eye, sub(w_cols, w_rows)), -1), eye)
    vdag_adot_v = _matmul(_matmul(_H(v), a_dot), v)
    dv = _matmul(v, mul(f_mat, vdag_adot_v))
    dw = _diagonal(vdag_adot_v)
    dw = real(dw) if _is_complex(a) else dw
    return [v, w_real], [dv, dw]


register_lowering(eigh_p, lower_fun(_eigh_lower))
ad.primitive_jvps[eigh_p] = _eigh_jvp
_front_batcher(eigh_p)


# --- svd ----------------------------------------------------------------------------

svd_p = standard_primitive("svd", multiple_results=True)


def svd(x: Any, *, full_matrices: bool = True, compute_uv: bool = True) -> Any:
    """Singular value decomposition: ``(u, s, vt)`` with x = u diag(s) vt, or just `s`.

    `s` (real, descending) has length k = min(m, n); with `full_matrices` u is
    m-by-m and vt n-by-n, otherwise m-by-k and k-by-n. Singular-vector
    derivatives are ill-defined where singular values repeat (see the module
    notes), and, as in JAX, not implemented for `full_matrices` of non-square
    matrices.

    >>> svd(np.array([[3.0, 0.0], [0.0, -2.0]], np.float32), compute_uv=False)
    Array([3., 2.], dtype=float32)
    """
    out = svd_p.bind(x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    if not compute_uv:
        return out[0]
    s, u, vt = out
    return u, s, vt


@svd_p.def_abstract_eval
def _svd_abstract_eval(x, *, full_matrices, compute_uv):
    _check_matrix("svd", x, square=False)
    batch, (m, n) = x.shape[:-2], x.shape[-2:]
    k = min(m, n)
    s = ShapedArray((*batch, k), _real_dtype(x.dtype))
    if not compute_uv:
        return [s]
    ku, kv = (m, n) if full_matrices else (k, k)
    return [s, x.update(shape=(*batch, m, ku)), x.update(shape=(*batch, kv, n))]


def _svd_lower(x, *, full_matrices, compute_uv):
    aval = aval_of(x)
    batch, (m, n) = aval.shape[:-2], aval.shape[-2:]
    k = min(m, n)
    if k == 0:
        # Nothing to factor (LAPACK would be asked for empty workspaces): identities.
        s = full((*batch, 0), 0, _real_dtype(aval.dtype))
        if not compute_uv:
            return [s]
        ku, kv = (m, n) if full_matrices else (0, 0)
        u = _broadcast_to(slice(_eye(m, aval.dtype), (0, 0), (m, ku)), (*batch, m, ku))
        vt = _broadcast_to(slice(_eye(n, aval.dtype), (0, 0), (kv, n)), (*batch, kv, n))
        return [s, u, vt]
    # Mode N still wants full-size u and vt buffers declared (the kernel reads their
    # leading dimensions), as JAX emits it.
    mode = "A" if full_matrices or not compute_uv else "S"
    ku, kv = (m, n) if mode == "A" else (k, k)
    _, s, u, vt, info = _lapack(
        "gesdd", [x], [(aval.shape, aval.dtype), ((*batch, k), _real_dtype(aval.dtype)),
                       ((*batch, m, ku), aval.dtype), ((*batch, kv, n), aval.dtype),
                       (batch, np.int32)], mode=mode if compute_uv else "N")
    ok = eq(info, _int32(0))
    if not compute_uv:
        return [_nan_fill(ok, s)]
    return [_nan_fill(ok, s), _nan_fill(ok, u), _nan_fill(ok, vt)]


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv):
    # JAX's rule: with dS = U^H dA V, ds = re diag(dS); the singular vectors'
    # derivatives divide by s_i^2 - s_j^2 (the caveat above).
    (a,), (da,) = primals, tangents
    da = ad.instantiate_zeros(da)
    aval = aval_of(a)
    m, n = aval.shape[-2:]
    ndim, dtype = aval.ndim, aval.dtype
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError("Singular value decomposition JVP not implemented for "
                                  f"full_matrices=True with non-square input (shape "
                                  f"{aval.shape}): use full_matrices=False")
    s, u, vt = svd_p.bind(a, full_matrices=False, compute_uv=True)
    ut, v = _H(u), _H(vt)
    ds_mat = _matmul(_matmul(ut, da), v)
    ds = _diagonal(ds_mat)
    ds = real(ds) if _is_complex(a) else ds
    if not compute_uv:
        return [s], [ds]
    k = min(m, n)
    rdtype = aval_of(s).dtype
    matrix = (*aval.shape[:-2], k, k)
    s_cols = broadcast_in_dim(s, matrix, (*range(ndim - 2), ndim - 1))  # s_j at [i, j]
    s_rows = broadcast_in_dim(s, matrix, tuple(range(ndim - 1)))  # s_i at [i, j]
    s_diffs = mul(add(s_cols, s_rows), sub(s_cols, s_rows))
    eye = _broadcast_to(_eye(k, rdtype), matrix)
    f_mat = convert_element_type(sub(div(full((), 1, rdtype), add(s_diffs, eye)), eye), dtype)
    s_cols_c = convert_element_type(s_cols, dtype)
    s_rows_c = convert_element_type(s_rows, dtype)
    dss = mul(s_cols_c, ds_mat)  # dS diag(s)
    sds = mul(s_rows_c, ds_mat)  # diag(s) dS
    s_zeros = convert_element_type(eq(s, full((), 0, rdtype)), rdtype)
    s_inv = sub(div(full((), 1, rdtype), add(s, s_zeros)), s_zeros)
    s_inv_mat = mul(eye, broadcast_in_dim(s_inv, matrix, tuple(range(ndim - 1))))
    dudv_diag = mul(mul(sub(ds_mat, _H(ds_mat)), convert_element_type(s_inv_mat, dtype)),
                    full((), 0.5, dtype))
    du = _matmul(u, add(mul(f_mat, add(dss, _H(dss))), dudv_diag))
    dv = _matmul(v, mul(f_mat, add(sds, _H(sds))))
    if m > n:
        dav = _matmul(da, v)
        resid = sub(dav, _matmul(u, _matmul(ut, dav)))
        du = add(du, div(resid, broadcast_in_dim(convert_element_type(s, dtype),
                                                 aval_of(resid).shape,
                                                 (*range(ndim - 2), ndim - 1))))
    if n > m:
        dahu = _matmul(_H(da), u)
        resid = sub(dahu, _matmul(v, _matmul(vt, dahu)))
        dv = add(dv, div(resid, broadcast_in_dim(convert_element_type(s, dtype),
                                                 aval_of(resid).shape,
                                                 (*range(ndim - 2), ndim - 1))))
    return [s, u, vt], [ds, du, _H(dv)]


register_lowering(svd_p, lower_fun(_svd_lower))
ad.primitive_jvps[svd_p] = _svd_jvp
_front_batcher(svd_p)


# --- eig ----------------------------------------------------------------------------

eig_p = standard_primitive("eig", multiple_results=True)


def _complex_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.complex64) if dtype in (np.float32, np.complex64) \
        else np.dtype(np.complex128)


def eig(x: Any, *, compute_left_eigenvectors: bool = True,
        compute_right_eigenvectors: bool = True) -> list[Any]:
    """Eigendecomposition of general square matrices: ``[w, vl, vr]``.

    `w` holds the (complex, unordered) eigenvalues; `vr` the right eigenvectors
    as columns (x vr = vr diag(w)) and `vl` the left ones (vl^H x = diag(w) vl^H),
    each column of unit norm. Vectors not asked for are left out of the list.
    Only the eigenvalues are differentiable, as in JAX.

    >>> w, = eig(np.array([[0.0, -1.0], [1.0, 0.0]], np.float32),
    ...          compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    >>> w
    Array([0.+1.j, 0.-1.j], dtype=complex64)
    """
    return list(eig_p.bind(x, compute_left_eigenvectors=bool(compute_left_eigenvectors),
                           compute_right_eigenvectors=bool(compute_right_eigenvectors)))


@eig_p.def_abstract_eval
def _eig_abstract_eval(x, *, compute_left_eigenvectors, compute_right_eigenvectors):
    _check_matrix("eig", x, square=True)
    dtype = _complex_dtype(x.dtype)
    vectors = ShapedArray(x.shape, dtype)
    return [ShapedArray(x.shape[:-1], dtype),
            *([vectors] if compute_left_eigenvectors else []),
            *([vectors] if compute_right_eigenvectors else [])]


def _eig_lower(x, *, compute_left_eigenvectors, compute_right_eigenvectors):
    aval = aval_of(x)
    batch, vector = aval.shape[:-2], aval.shape[:-1]
    cdtype = _complex_dtype(aval.dtype)
    # Vectors not computed must still be declared full size: the kernel writes
    # nothing there, but reads their leading dimensions.
    vector_results = [(aval.shape, cdtype), (aval.shape, cdtype), (batch, np.int32)]
    flags = {"compute_left": "V" if compute_left_eigenvectors else "N",
             "compute_right": "V" if compute_right_eigenvectors else "N"}
    if _is_complex(x):
        w, vl, vr, info = _lapack("geev", [x], [(vector, cdtype), *vector_results], **flags)
    else:
        wr, wi, vl, vr, info = _lapack("geev", [x], [(vector, aval.dtype), (vector, aval.dtype),
                                                     *vector_results], **flags)
        w = complex_op(wr, wi)
    ok = eq(info, _int32(0))
    return [_nan_fill(ok, w), *([_nan_fill(ok, vl)] if compute_left_eigenvectors else []),
            *([_nan_fill(ok, vr)] if compute_right_eigenvectors else [])]


def _solve(a: Any, b: Any) -> Any:
    """a^-1 b for square a, through its LU factors."""
    factors, _, permutation = lu(a)
    x = _matmul(_permutation_matrix(permutation, aval_of(a).dtype), b)
    x = triangular_solve(factors, x, left_side=True, lower=True, unit_diagonal=True)
    return triangular_solve(factors, x, left_side=True, lower=False)


def _eig_jvp(primals, tangents, *, compute_left_eigenvectors, compute_right_eigenvectors):
    # dw = diag(V^-1 dA V) (eq. 4.60 of arXiv:1701.00392), as JAX; eigenvector
    # derivatives are not implemented there either (jax-ml/jax#2748).
    if compute_left_eigenvectors or compute_right_eigenvectors:
        raise NotImplementedError("The derivatives of eigenvectors are not implemented, only "
                                  "eigenvalues: call eig with compute_left_eigenvectors=False "
                                  "and compute_right_eigenvectors=False to differentiate")
    (a,), (da,) = primals, tangents
    da = ad.instantiate_zeros(da)
    w, v = eig_p.bind(a, compute_left_eigenvectors=False, compute_right_eigenvectors=True)
    dw = _diagonal(_matmul(_solve(v, convert_element_type(da, aval_of(v).dtype)), v))
    return [w], [dw]


register_lowering(eig_p, lower_fun(_eig_lower))
ad.primitive_jvps[eig_p] = _eig_jvp
_front_batcher(eig_p)


# --- schur --------------------------------------------------------------------------

schur_p = standard_primitive("schur", multiple_results=True)


def schur(x: Any, *, compute_schur_vectors: bool = True, sort_eig_vals: bool = False,
          select_callable: Any = None) -> Any:
    """Schur decomposition x = vs t vs^H: ``(t, vs)``, or ``(t,)`` without vectors.

    `t` is upper triangular for complex inputs and quasi-upper-triangular (2-by-2
    blocks for complex-conjugate eigenvalue pairs) for real ones; `vs` is
    orthogonal (unitary). Eigenvalue sorting is not supported, as in JAX on
    CPU; there is no derivative.

    >>> t, vs = schur(np.array([[1.0, 2.0], [0.0, 3.0]], np.float32))
    >>> t
    Array([[1., 2.],
           [0., 3.]], dtype=float32)
    """
    if sort_eig_vals or select_callable is not None:
        raise NotImplementedError("schur: sorting eigenvalues (sort_eig_vals, "
                                  "select_callable) is not supported")
    return tuple(schur_p.bind(x, compute_schur_vectors=bool(compute_schur_vectors)))


@schur_p.def_abstract_eval
def _schur_abstract_eval(x, *, compute_schur_vectors):
    _check_matrix("schur", x, square=True)
    return [x, x] if compute_schur_vectors else [x]


def _schur_lower(x, *, compute_schur_vectors):
    aval = aval_of(x)
    batch, vector = aval.shape[:-2], aval.shape[:-1]
    eigenvalues = [(vector, aval.dtype)] * (1 if _is_complex(x) else 2)
    t, vs, *_, info = _lapack("gees", [x], [(aval.shape, aval.dtype), (aval.shape, aval.dtype),
                                             *eigenvalues, (batch, np.int32), (batch, np.int32)],
                              mode="V" if compute_schur_vectors else "N", sort="N")
    ok = eq(info, _int32(0))
    return [_nan_fill(ok, t), _nan_fill(ok, vs)] if compute_schur_vectors \
        else [_nan_fill(ok, t)]


register_lowering(schur_p, lower_fun(_schur_lower))
_front_batcher(schur_p)
