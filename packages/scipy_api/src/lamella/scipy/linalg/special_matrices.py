"""Structured and special matrices: ``block_diag``, ``circulant``, ``companion``,
``convolution_matrix``, ``dft``, ``fiedler``, ``fiedler_companion``, ``hadamard``,
``hankel``, ``helmert``, ``hilbert``, ``invhilbert``, ``invpascal``, ``leslie``,
``pascal`` and ``toeplitz``, as ``jax.scipy.linalg`` has them.

Matrices built from array arguments gather their entries from a vector of
values through an index table fixed by the static shapes (so they batch over
leading axes, trace and differentiate); matrices defined by a size alone are
exact constants computed on the host in float64 or integers, then cast
(``pascal(n)`` holds exact binomials, ``invhilbert(n)`` exact integers).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import lamella.numpy as lnp
from lamella.scipy.linalg.common import inexact

__all__ = ["block_diag", "circulant", "companion", "convolution_matrix", "dft", "fiedler",
           "fiedler_companion", "hadamard", "hankel", "helmert", "hilbert", "invhilbert",
           "invpascal", "leslie", "pascal", "toeplitz"]


def _vector_arg(name: str, arg: str, x: Any, min_length: int = 0) -> Any:
    x = lnp.asarray(x)
    if x.ndim < 1:
        raise ValueError(f"{name}: {arg} must be at least 1-dimensional, got a scalar.")
    if x.shape[-1] < min_length:
        raise ValueError(f"{name}: the length of {arg} along the last axis must be at least "
                         f"{min_length}; got shape {x.shape}.")
    return x


def _from_table(values: Any, table: np.ndarray) -> Any:
    """``values[..., table]``: each entry of the result is the value its table entry names."""
    return lnp.take(values, lnp.asarray(table, dtype=np.int32), axis=-1)


def _with_zero_and_one(values: Any) -> Any:
    """``[0, 1, *values]`` along the last axis, so that tables can name 0 and 1 too."""
    batch = values.shape[:-1]
    constants = lnp.broadcast_to(lnp.asarray([0, 1], dtype=values.dtype), (*batch, 2))
    return lnp.concatenate([constants, values], axis=-1)


def toeplitz(c: Any, r: Any = None) -> Any:
    """The Toeplitz matrix with first column `c` and first row `r` (``r[0]`` is ignored).

    Without `r`, the matrix is Hermitian: ``r = conj(c)``. Leading axes of `c`
    and `r` are batch axes.

    >>> toeplitz(lnp.array([1, 2, 3]), lnp.array([1, 4, 5, 6]))
    Array([[1, 4, 5, 6],
           [2, 1, 4, 5],
           [3, 2, 1, 4]], dtype=int32)
    """
    c = _vector_arg("toeplitz", "c", c)
    r = lnp.conj(c) if r is None else _vector_arg("toeplitz", "r", r)
    c, r = lnp.asarray(c), lnp.asarray(r)
    m, n = c.shape[-1], r.shape[-1]
    batch = lnp.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    dtype = lnp.result_type(c, r)
    c = lnp.broadcast_to(c, (*batch, m)).astype(dtype)
    r = lnp.broadcast_to(r, (*batch, n)).astype(dtype)
    # values = [r[n-1], ..., r[1], c[0], ..., c[m-1]]: entry (i, j) is values[n-1+i-j].
    values = lnp.concatenate([lnp.flip(r[..., 1:], axis=-1), c], axis=-1)
    return _from_table(values, n - 1 + np.arange(m)[:, None] - np.arange(n)[None, :])


def hankel(c: Any, r: Any = None) -> Any:
    """The Hankel matrix with first column `c` and last row `r` (``r[0]`` is ignored).

    Without `r`, the entries below the anti-diagonal are zero. Leading axes are
    batch axes.

    >>> hankel(lnp.array([1, 2, 3]), lnp.array([3, 4, 5]))
    Array([[1, 2, 3],
           [2, 3, 4],
           [3, 4, 5]], dtype=int32)
    """
    c = _vector_arg("hankel", "c", c)
    r = lnp.zeros_like(c) if r is None else _vector_arg("hankel", "r", r)
    m, n = c.shape[-1], r.shape[-1]
    batch = lnp.broadcast_shapes(c.shape[:-1], r.shape[:-1])
    dtype = lnp.result_type(c, r)
    c = lnp.broadcast_to(c, (*batch, m)).astype(dtype)
    r = lnp.broadcast_to(r, (*batch, n)).astype(dtype)
    values = lnp.concatenate([c, r[..., 1:]], axis=-1)
    return _from_table(values, np.arange(m)[:, None] + np.arange(n)[None, :])


def circulant(c: Any) -> Any:
    """The circulant matrix whose first column is `c` (leading axes are batch axes).

    >>> circulant(lnp.array([1, 2, 3]))
    Array([[1, 3, 2],
           [2, 1, 3],
           [3, 2, 1]], dtype=int32)
    """
    c = _vector_arg("circulant", "c", c)
    n = c.shape[-1]
    return _from_table(c, (np.arange(n)[:, None] - np.arange(n)[None, :]) % max(n, 1))


def leslie(f: Any, s: Any) -> Any:
    """The Leslie matrix: fecundities `f` (length n) on the first row, survival
    rates `s` (length n-1) on the subdiagonal. Leading axes are batch axes.

    >>> leslie(lnp.array([0.1, 2.0, 1.0]), lnp.array([0.5, 0.25]))
    Array([[0.1 , 2.  , 1.  ],
           [0.5 , 0.  , 0.  ],
           [0.  , 0.25, 0.  ]], dtype=float32)
    """
    f = _vector_arg("leslie", "f", f, min_length=1)
    s = _vector_arg("leslie", "s", s, min_length=1)
    n = f.shape[-1]
    if s.shape[-1] != n - 1:
        raise ValueError(f"leslie: the length of s along the last axis must be one less than "
                         f"the length of f; got f.shape={f.shape} and s.shape={s.shape}.")
    batch = lnp.broadcast_shapes(f.shape[:-1], s.shape[:-1])
    dtype = lnp.result_type(f, s)
    values = _with_zero_and_one(lnp.concatenate(
        [lnp.broadcast_to(f, (*batch, n)).astype(dtype),
         lnp.broadcast_to(s, (*batch, n - 1)).astype(dtype)], axis=-1))
    table = np.zeros((n, n), np.int64)
    table[0] = 2 + np.arange(n)
    table[np.arange(1, n), np.arange(n - 1)] = 2 + n + np.arange(n - 1)
    return _from_table(values, table)


def companion(a: Any) -> Any:
    """The companion matrix of the polynomial with coefficients `a` (highest degree
    first): its eigenvalues are the polynomial's roots. Leading axes are batch axes;
    a zero leading coefficient gives infinities, as in JAX.

    >>> companion(lnp.array([1.0, -3.0, 2.0]))
    Array([[ 3., -2.],
           [ 1.,  0.]], dtype=float32)
    """
    a, = inexact(_vector_arg("companion", "a", a, min_length=2))
    n = a.shape[-1] - 1
    values = _with_zero_and_one(-a[..., 1:] / a[..., :1])
    table = np.zeros((n, n), np.int64)
    table[0] = 2 + np.arange(n)
    table[np.arange(1, n), np.arange(n - 1)] = 1
    return _from_table(values, table)


def fiedler(a: Any) -> Any:
    """The symmetric Fiedler matrix ``|a[i] - a[j]|`` (leading axes are batch axes).

    >>> fiedler(lnp.array([1, 4, 12]))
    Array([[ 0,  3, 11],
           [ 3,  0,  8],
           [11,  8,  0]], dtype=int32)
    """
    a = _vector_arg("fiedler", "a", a)
    return lnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a: Any) -> Any:
    """The pentadiagonal Fiedler companion matrix of the polynomial with coefficients
    `a` (highest degree first, normalized by ``a[0]``): same eigenvalues as
    :func:`companion`, better conditioned. Leading axes are batch axes.

    >>> fiedler_companion(lnp.array([1.0, 2.0, 3.0, 4.0]))
    Array([[-2., -3.,  1.],
           [ 1.,  0.,  0.],
           [ 0., -4.,  0.]], dtype=float32)
    """
    a, = inexact(_vector_arg("fiedler_companion", "a", a, min_length=1))
    k = a.shape[-1] - 1
    # values[1 + i] is -a[i] / a[0] for i >= 1; values[0] is 0, values[1] is 1.
    values = _with_zero_and_one(-a[..., 1:] / a[..., :1])
    table = np.zeros((k, k), np.int64)
    for row in range(k):
        if row % 2 == 0:
            entries = {max(row - 1, 0): 2 + row, row + 1: 3 + row, row + 2: 1}
        else:
            entries = {max(row - 2, 0): 1}
        for col, index in entries.items():
            if col < k:
                table[row, col] = index
    return _from_table(values, table)


def convolution_matrix(a: Any, n: int, mode: str = "full") -> Any:
    """The matrix ``A`` with ``A @ v == convolve(a, v, mode)`` for vectors `v` of length `n`.

    `mode` is ``'full'`` (m+n-1 rows), ``'same'`` (max(m, n) rows) or ``'valid'``
    (max(m, n) - min(m, n) + 1 rows). Leading axes of `a` are batch axes.

    >>> convolution_matrix(lnp.array([1, 2, 3]), 4, mode="valid")
    Array([[3, 2, 1, 0],
           [0, 3, 2, 1]], dtype=int32)
    """
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n <= 0:
        raise ValueError(f"convolution_matrix: n must be a positive integer; got {n}.")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"convolution_matrix: mode must be 'full', 'valid' or 'same'; "
                         f"got {mode!r}.")
    a = _vector_arg("convolution_matrix", "a", a, min_length=1)
    m = a.shape[-1]
    if mode == "full":
        first, stop = 0, m + n - 1
    elif mode == "valid":
        first, stop = min(m, n) - 1, max(m, n)
    else:
        trim = min(m, n) - 1
        first, stop = trim // 2, m + n - 1 - (trim - trim // 2)
    offsets = np.arange(first, stop)[:, None] - np.arange(n)[None, :]
    inside = (offsets >= 0) & (offsets < m)
    values = lnp.concatenate([lnp.zeros((*a.shape[:-1], 1), a.dtype), a], axis=-1)
    return _from_table(values, np.where(inside, offsets + 1, 0))


def block_diag(*arrs: Any) -> Any:
    """The block diagonal matrix of the arguments (scalars are 1x1, vectors 1xn).

    >>> block_diag(lnp.ones((2, 2), dtype=int), lnp.array([3, 4]))
    Array([[1, 1, 0, 0],
           [1, 1, 0, 0],
           [0, 0, 3, 4]], dtype=int32)
    """
    if not arrs:
        return lnp.zeros((1, 0))
    blocks = [lnp.asarray(a) for a in arrs]
    for i, b in enumerate(blocks):
        if b.ndim > 2:
            raise ValueError("block_diag: arguments must have at most 2 dimensions; "
                             f"argument {i} has shape {b.shape}.")
    dtype = lnp.result_type(*blocks)
    blocks = [lnp.atleast_2d(b).astype(dtype) for b in blocks]
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        rows.append(lnp.pad(b, ((0, 0), (left, width - left - b.shape[1]))))
        left += b.shape[1]
    return lnp.concatenate(rows, axis=0)


# --- matrices defined by their size: exact host constants ----------------------------


def _check_size(name: str, n: Any) -> int:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"{name}: n must be a non-negative integer; got {n!r}.")
    return int(n)


def _default_float(x: np.ndarray) -> Any:
    """A host float64 constant as an array of the default float dtype."""
    return lnp.asarray(np.asarray(x, np.float64), dtype=lnp.result_type(float))


def dft(n: int, scale: str | None = None, *, dtype: Any = None) -> Any:
    """The n-by-n discrete Fourier transform matrix: ``dft(n) @ x == fft(x)``.

    `scale` is None, ``'sqrtn'`` (divide by sqrt(n): unitary) or ``'n'`` (divide by n).
    The entries are roots of unity rounded once to `dtype` (default complex).

    >>> dft(2)
    Array([[ 1.+0.j,  1.+0.j],
           [ 1.+0.j, -1.+0.j]], dtype=complex64)
    """
    n = _check_size("dft", n)
    if scale not in (None, "sqrtn", "n"):
        raise ValueError(f"dft: scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
    # The FFT of the identity's columns: pocketfft's twiddles are accurate to an ulp,
    # where exp(-2 pi i j k / n) loses a few for large j k.
    m = np.fft.fft(np.eye(n), axis=0) if n else np.zeros((0, 0), np.complex128)
    m = m / {None: 1.0, "sqrtn": math.sqrt(n) if n else 1.0, "n": float(n or 1)}[scale]
    return lnp.asarray(m, dtype=lnp.result_type(complex) if dtype is None else dtype)


def hadamard(n: int, dtype: Any = int) -> Any:
    """The n-by-n Hadamard matrix of ±1 (Sylvester's construction); n a power of 2.

    >>> hadamard(2)
    Array([[ 1,  1],
           [ 1, -1]], dtype=int32)
    """
    if not isinstance(n, (int, np.integer)) or n < 1 or (int(n) & (int(n) - 1)):
        raise ValueError(f"hadamard: n must be a positive power of 2; got {n}.")
    h = np.ones((1, 1), np.int64)
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return lnp.asarray(h, dtype=dtype)


def helmert(n: int, full: bool = False) -> Any:
    """The Helmert matrix: orthonormal rows, the first (kept when `full`) constant.

    >>> helmert(2, full=True)
    Array([[ 0.70710677,  0.70710677],
           [ 0.70710677, -0.70710677]], dtype=float32)
    """
    n = _check_size("helmert", n)
    h = np.tril(np.ones((n, n)), -1) - np.diag(np.arange(n, dtype=np.float64))
    norms = np.sqrt(np.arange(n) * np.arange(1, n + 1, dtype=np.float64))
    h[1:] /= norms[1:, None]
    if n:
        h[0] = 1.0 / math.sqrt(n)
    return _default_float(h if full else h[1:])


def hilbert(n: int) -> Any:
    """The Hilbert matrix ``1 / (i + j + 1)``.

    >>> hilbert(2)
    Array([[1.        , 0.5       ],
           [0.5       , 0.33333334]], dtype=float32)
    """
    n = _check_size("hilbert", n)
    return _default_float(1.0 / (np.arange(n)[:, None] + np.arange(n)[None, :] + 1.0))


def invhilbert(n: int) -> Any:
    """The inverse of the n-by-n Hilbert matrix, from its exact integer entries.

    >>> invhilbert(2)
    Array([[ 4., -6.],
           [-6., 12.]], dtype=float32)
    """
    n = _check_size("invhilbert", n)
    entries = [[(-1) ** (i + j) * (i + j + 1) * math.comb(n + i, n - j - 1)
                * math.comb(n + j, n - i - 1) * math.comb(i + j, i) ** 2
                for j in range(n)] for i in range(n)]
    return _default_float(np.array([[float(v) for v in row] for row in entries]
                                   ).reshape(n, n))


def _pascal_lower(n: int) -> np.ndarray:
    """The lower-triangular Pascal matrix of exact binomials C(i, j), as Python ints."""
    return np.array([[math.comb(i, j) for j in range(n)] for i in range(n)],
                    dtype=object).reshape(n, n)


def _pascal_kind(name: str, kind: str | None) -> str:
    kind = "symmetric" if kind is None else kind
    if kind not in ("symmetric", "lower", "upper"):
        raise ValueError(f"{name}: kind must be one of 'symmetric', 'lower', 'upper'; "
                         f"got {kind!r}")
    return kind


def pascal(n: int, kind: str | None = None) -> Any:
    """The Pascal matrix of binomial coefficients: ``'symmetric'`` (default), ``'lower'``
    or ``'upper'``; exact integers, in the default float dtype as in JAX.

    >>> pascal(3)
    Array([[1., 1., 1.],
           [1., 2., 3.],
           [1., 3., 6.]], dtype=float32)
    """
    kind = _pascal_kind("pascal", kind)
    lower = _pascal_lower(_check_size("pascal", n))
    exact = {"lower": lower, "upper": lower.T, "symmetric": lower.dot(lower.T)}[kind]
    return _default_float(exact.astype(np.float64))


def invpascal(n: int, kind: str | None = None) -> Any:
    """The inverse of :func:`pascal` ``(n, kind)``, from its exact integer entries.

    >>> invpascal(3)
    Array([[ 3., -3.,  1.],
           [-3.,  5., -2.],
           [ 1., -2.,  1.]], dtype=float32)
    """
    kind = _pascal_kind("invpascal", kind)
    n = _check_size("invpascal", n)
    # The inverse of the lower Pascal matrix is itself with alternating signs.
    signs = np.array([[(-1) ** (i + j) for j in range(n)] for i in range(n)],
                     dtype=object).reshape(n, n)
    inv_lower = _pascal_lower(n) * signs
    exact = {"lower": inv_lower, "upper": inv_lower.T,
             "symmetric": inv_lower.T.dot(inv_lower)}[kind]
    return _default_float(exact.astype(np.float64))
