"""Polynomials as 1-D coefficient arrays, highest power first (`numpy.poly*`
with `jax.numpy` semantics): evaluation, fitting, roots, arithmetic and calculus.

Least squares (`polyfit`) goes through an SVD and roots through the
eigenvalues of the companion matrix (`lax.linalg.eig`), so both follow their
inputs through `jit`, `grad` and `vmap`. Stripping leading zeros needs
concrete values, as in JAX.

>>> import numpy as np
>>> polyval(np.float32([1, 0, -1]), np.float32([0, 2]))
Array([-1.,  3.], dtype=float32)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from lamella import lax
from lamella.core.trace import aval_of
from lamella.lax import linalg
from lamella.lax.contraction import Precision
from lamella.numpy import ufuncs
from lamella.numpy.dtypes import finfo, promote_dtypes, promote_dtypes_inexact
from lamella.numpy.signal import _at, _static_int, convolve
from lamella.numpy.util import (
    asarray_internal,
    check_arraylike,
    concrete_int,
    concrete_value,
    eager_jit,
)
from lamella.numpy.util import shape as _shape

__all__ = ["poly", "polyadd", "polyder", "polydiv", "polyfit", "polyint", "polymul",
           "polysub", "polyval", "roots"]


# --- helpers --------------------------------------------------------------------------

def _vector(name: str, x: Any) -> Any:
    """`x` as a 1-D array (scalars become length 1)."""
    if not _shape(x):
        return lax.reshape(x, (1,))
    if len(_shape(x)) != 1:
        raise ValueError(f"{name}: coefficients must be a 1-D array, got shape {_shape(x)}")
    return x


def _matmul(a: Any, b: Any) -> Any:
    return lax.dot_general(a, b, (((1,), (0,)), ((), ())), precision=Precision.HIGHEST)


def _conj_t(x: Any) -> Any:
    x = lax.transpose(x, (1, 0))
    return lax.conj(x) if aval_of(x).dtype.kind == "c" else x


def _trim_front(name: str, x: Any, tol: float = 0.0) -> Any:
    """`x` without its leading entries of magnitude <= tol (zeros by default)."""
    value = concrete_value(x, f"the coefficients given to {name} with trim_leading_zeros")
    nonzero = np.flatnonzero(np.abs(value) > tol) if tol else np.flatnonzero(value)
    start = int(nonzero[0]) if nonzero.size else value.shape[0]
    return lax.slice_in_dim(x, start, _shape(x)[0])


# --- evaluation and fitting -----------------------------------------------------------
@eager_jit("unroll")  # one compiled scan per shape, not one per call
def polyval(p: Any, x: Any, *, unroll: int = 16) -> Any:
    """The polynomial `p[0] * x**(M-1) + ... + p[M-1]` at `x`, by Horner's rule (a
    `lax.scan` over the coefficients unrolled `unroll` steps at a time).

    >>> import numpy as np
    >>> polyval(np.int32([2, 5, 1]), 3)
    Array(34., dtype=float32)
    """
    check_arraylike("polyval", p, x)
    p, x = promote_dtypes_inexact(p, x)
    shape = ufuncs._broadcast_shapes([_shape(p)[1:], _shape(x)])
    y = lax.full(shape, 0, aval_of(x).dtype)
    y, _ = lax.scan(lambda acc, c: (ufuncs.add(ufuncs.multiply(acc, x), c), None), y, p,
                    unroll=unroll)
    return y


def _vander(x: Any, order: int) -> Any:
    """Columns x**(order-1), ..., x, 1."""
    ones = lax.full((_shape(x)[0], 1), 1, aval_of(x).dtype)
    if order == 1:
        return ones
    xs = lax.broadcast_in_dim(x, (_shape(x)[0], order - 1), (0,))
    powers = lax.cumprod(lax.concatenate([ones, xs], 1), axis=1)
    return lax.rev(powers, (1,))


def polyfit(x: Any, y: Any, deg: int, rcond: float | None = None, full: bool = False,
            w: Any = None, cov: bool | str = False) -> Any:
    """The least-squares polynomial of degree `deg` through the points (`x`, `y`):
    coefficients highest power first, one column per column of a 2-D `y`.

    `w` weights the residuals; `full=True` also returns the residual sums of squares,
    the rank and singular values of the (scaled) Vandermonde matrix and `rcond`;
    `cov=True` (or 'unscaled') returns the coefficients' covariance instead.

    >>> import numpy as np
    >>> polyfit(np.float32([0, 1, 2, 3]), np.float32([1, 3, 5, 7]), 1).round(4)
    Array([2., 1.], dtype=float32)
    """
    if w is None:
        check_arraylike("polyfit", x, y)
        x, y = promote_dtypes_inexact(x, y)
    else:
        check_arraylike("polyfit", x, y, w)
        x, y, w = promote_dtypes_inexact(x, y, w)
    deg = _static_int(deg, "the degree deg of polyfit")
    order = deg + 1
    if deg < 0:
        raise ValueError(f"polyfit: expected deg >= 0, got {deg}")
    if len(_shape(x)) != 1:
        raise TypeError(f"polyfit: expected a 1-D vector for x, got shape {_shape(x)}")
    if _shape(x)[0] == 0:
        raise TypeError("polyfit: expected a non-empty vector for x")
    if not 1 <= len(_shape(y)) <= 2:
        raise TypeError(f"polyfit: expected a 1-D or 2-D array for y, got shape {_shape(y)}")
    if _shape(x)[0] != _shape(y)[0]:
        raise TypeError(f"polyfit: expected x and y to have the same length, got shapes "
                        f"{_shape(x)} and {_shape(y)}")
    if rcond is None:
        rcond = _shape(x)[0] * float(finfo(aval_of(x).dtype).eps)
    rcond = float(concrete_value(rcond, "the rcond argument of polyfit"))

    lhs = _vander(x, order)
    rhs = y if len(_shape(y)) == 2 else lax.reshape(y, (_shape(y)[0], 1))
    if w is not None:
        if _shape(w) != _shape(x):
            raise TypeError(f"polyfit: expected a 1-D array of weights of the length of x, "
                            f"got shape {_shape(w)} for x of shape {_shape(x)}")
        weights = lax.reshape(w, (_shape(w)[0], 1))
        lhs, rhs = ufuncs.multiply(lhs, weights), ufuncs.multiply(rhs, weights)
    # Unit columns improve the conditioning; the solution is rescaled afterwards.
    scale = ufuncs.sqrt(lax.reduce_sum(ufuncs.multiply(lhs, lhs), (0,)))
    lhs = ufuncs.divide(lhs, scale)

    u, s, vh = linalg.svd(lhs, full_matrices=False)
    mask = lax.ge(s, lax.mul(lax.slice_in_dim(s, 0, 1), np.array(rcond, aval_of(s).dtype)))
    s_inv = ufuncs.where(mask, ufuncs.reciprocal(ufuncs.where(mask, s, 1)), 0)
    s_inv = lax.reshape(s_inv, (_shape(s)[0], 1))
    coef = _matmul(_conj_t(vh), ufuncs.multiply(s_inv, _matmul(_conj_t(u), rhs)))
    misfit = ufuncs.abs(ufuncs.subtract(rhs, _matmul(lhs, coef)))
    resids = lax.reduce_sum(ufuncs.multiply(misfit, misfit), (0,))
    coef = ufuncs.divide(coef, lax.reshape(scale, (order, 1)))
    if len(_shape(y)) == 1:
        coef = lax.reshape(coef, (order,))

    if full:
        rank = lax.reduce_sum(lax.convert_element_type(mask, np.int32), (0,))
        return coef, resids, rank, s, asarray_internal(rcond)
    if not cov:
        return coef
    # inv(lhs^H lhs) from the SVD: V diag(1/s^2) V^H.
    s_inv2 = lax.reshape(ufuncs.reciprocal(ufuncs.multiply(s, s)), (_shape(s)[0], 1))
    base = _matmul(_conj_t(vh), ufuncs.multiply(s_inv2, vh))
    base = ufuncs.divide(base, ufuncs.multiply(lax.reshape(scale, (order, 1)), scale))
    if cov == "unscaled":
        fac = lax.full((1,), 1, aval_of(resids).dtype)
    else:
        if _shape(x)[0] <= order:
            raise ValueError("polyfit: the number of data points must exceed order to scale "
                             f"the covariance matrix (got {_shape(x)[0]} points, order "
                             f"{order})")
        fac = ufuncs.divide(resids, _shape(x)[0] - order)
    if len(_shape(y)) == 1:
        return coef, ufuncs.multiply(base, lax.reshape(fac, ()))
    return coef, ufuncs.multiply(lax.expand_dims(base, (2,)), fac)


# --- roots ----------------------------------------------------------------------------
def _complex_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.complex128 if dtype in (np.float64, np.complex128) else np.complex64)


def _eigvals(a: Any) -> Any:
    (w,) = linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    return w


def _companion_roots(p: Any) -> Any:
    n = _shape(p)[0]
    dtype = aval_of(p).dtype
    if n < 2:
        return lax.full((0,), 0, _complex_dtype(dtype))
    top = lax.reshape(ufuncs.negative(ufuncs.divide(lax.slice_in_dim(p, 1, n), _at(p, 0))),
                      (1, n - 1))
    below = np.eye(n - 2, n - 1, dtype=dtype)
    return _eigvals(lax.concatenate([top, asarray_internal(below)], 0) if n > 2 else top)


def roots(p: Any, *, strip_zeros: bool = True) -> Any:
    """The roots of the polynomial with coefficients `p`: the eigenvalues of its
    companion matrix, complex.

    Leading zeros are stripped, which needs concrete `p`; under `jit` pass
    `strip_zeros=False`, and each leading zero then gives a NaN root (at the end).

    >>> import numpy as np
    >>> roots(np.float32([1, -3, 2])).real
    Array([2., 1.], dtype=float32)
    """
    check_arraylike("roots", p)
    (p,) = promote_dtypes_inexact(p)
    p = _vector("roots", p)
    n = _shape(p)[0]
    if n < 2:
        return lax.full((0,), 0, _complex_dtype(aval_of(p).dtype))
    is_zero = lax.eq(p, lax.full_like(p, 0))
    # Leading zeros: all n if p is zero, else the position of the first nonzero.
    leading = lax.select(lax.reduce_and(is_zero, (0,)), np.int32(n),
                         lax.argmin(is_zero, 0, np.int32))
    if strip_zeros:
        start = concrete_int(leading, "the leading-zero count of roots' coefficients (pass "
                             "strip_zeros=False to trace roots; leading zeros then give NaN "
                             "roots)")
        return _companion_roots(lax.slice_in_dim(p, start, n))
    # Rolling the leading zeros to the end multiplies the polynomial by x**leading:
    # that many extra zero roots, which are sorted last and replaced by NaN.
    p = ufuncs.where(lax.eq(leading, np.int32(n)), 1, p)
    p = lax.dynamic_slice(lax.concatenate([p, p], 0), (leading,), (n,))
    found = _companion_roots(p)
    zero = lax.eq(found, lax.full_like(found, 0))
    _, found = lax.sort_key_val(lax.convert_element_type(zero, np.int32), found)
    keep = lax.lt(lax.iota(np.int32, n - 1), lax.sub(np.int32(n - 1), leading))
    return ufuncs.where(keep, found, complex(np.nan, np.nan))


@eager_jit()
def poly(seq_of_zeros: Any) -> Any:
    """The coefficients of the monic polynomial with the given roots (or with the
    eigenvalues of a square matrix as roots, then complex).

    >>> import numpy as np
    >>> poly(np.int32([1, 2, 3]))
    Array([ 1., -6., 11., -6.], dtype=float32)
    """
    check_arraylike("poly", seq_of_zeros)
    (zeros,) = promote_dtypes_inexact(seq_of_zeros)
    if not _shape(zeros):
        zeros = lax.reshape(zeros, (1,))
    shape = _shape(zeros)
    if len(shape) == 2 and shape[0] == shape[1] and shape[0]:
        zeros = _eigvals(zeros)
    if len(_shape(zeros)) != 1:
        raise ValueError(f"poly: input must be 1-D or a non-empty square 2-D array, got shape "
                         f"{shape}")
    n = _shape(zeros)[0]
    dtype = aval_of(zeros).dtype
    if n == 0:
        return lax.full((), 1, dtype)

    def times_root(coef, root):
        # (x - root) * c(x): shift down one power, subtract root times c.
        shifted = lax.pad(coef, np.zeros((), dtype), [(1, -1, 0)])
        return lax.sub(coef, lax.mul(root, shifted)), None

    coef = asarray_internal(np.eye(1, n + 1, dtype=dtype)[0])
    coef, _ = lax.scan(times_root, coef, zeros)
    return coef


# --- arithmetic -----------------------------------------------------------------------
def polyadd(a1: Any, a2: Any) -> Any:
    """The sum of two polynomials, the shorter aligned with the end of the longer
    (along axis 0).

    >>> import numpy as np
    >>> polyadd(np.int32([2, 3]), np.int32([5, 4, 1]))
    Array([5, 6, 4], dtype=int32)
    """
    check_arraylike("polyadd", a1, a2)
    a1, a2 = promote_dtypes(a1, a2)
    a1 = a1 if _shape(a1) else lax.reshape(a1, (1,))
    a2 = a2 if _shape(a2) else lax.reshape(a2, (1,))
    big, small = (a1, a2) if _shape(a2)[0] <= _shape(a1)[0] else (a2, a1)
    target = (_shape(small)[0], *_shape(big)[1:])
    if ufuncs._broadcast_shapes([_shape(small), target]) != target:
        raise ValueError(f"polyadd: coefficients of shapes {_shape(a1)} and {_shape(a2)} "
                         "do not broadcast together")
    small = ufuncs._broadcast_to(small, target)
    rank = len(target)
    small = lax.pad(small, np.zeros((), aval_of(small).dtype),
                    [(_shape(big)[0] - target[0], 0, 0)] + [(0, 0, 0)] * (rank - 1))
    return ufuncs.add(big, small)


def polysub(a1: Any, a2: Any) -> Any:
    """The difference of two polynomials (see `polyadd`).

    >>> import numpy as np
    >>> polysub(np.int32([2, 10, -2]), np.int32([3, 4]))
    Array([ 2,  7, -6], dtype=int32)
    """
    check_arraylike("polysub", a1, a2)
    a1, a2 = promote_dtypes(a1, a2)
    return polyadd(a1, ufuncs.negative(a2))


def polymul(a1: Any, a2: Any, *, trim_leading_zeros: bool = False) -> Any:
    """The product of two polynomials (the convolution of their coefficients).

    >>> import numpy as np
    >>> polymul(np.float32([1, 1]), np.float32([1, -1]))
    Array([ 1.,  0., -1.], dtype=float32)
    """
    check_arraylike("polymul", a1, a2)
    a1, a2 = (_vector("polymul", a) for a in promote_dtypes_inexact(a1, a2))
    if trim_leading_zeros and (_shape(a1)[0] > 1 or _shape(a2)[0] > 1):
        a1, a2 = _trim_front("polymul", a1), _trim_front("polymul", a2)
    if _shape(a1)[0] == 0:
        a1 = lax.full((1,), 0, aval_of(a2).dtype)
    if _shape(a2)[0] == 0:
        a2 = lax.full((1,), 0, aval_of(a1).dtype)
    return convolve(a1, a2, mode="full")


def polydiv(u: Any, v: Any, *, trim_leading_zeros: bool = False) -> tuple[Any, Any]:
    """Quotient and remainder of polynomial division; the remainder keeps the length
    of `u` (leading zeros included) unless `trim_leading_zeros`, which needs
    concrete values.

    >>> import numpy as np
    >>> q, r = polydiv(np.float32([1, 0, -1]), np.float32([1, 1]))
    >>> q, r
    (Array([ 1., -1.], dtype=float32), Array([0., 0., 0.], dtype=float32))
    """
    check_arraylike("polydiv", u, v)
    u, v = (_vector("polydiv", a) for a in promote_dtypes_inexact(u, v))
    m, n = _shape(u)[0] - 1, _shape(v)[0] - 1
    if n < 0:
        raise ValueError("polydiv: the divisor v must have at least one coefficient")
    scale = ufuncs.reciprocal(_at(v, 0))
    quotient = []
    zero = np.zeros((), aval_of(u).dtype)
    for k in range(m - n + 1):
        d = lax.mul(scale, _at(u, k))
        quotient.append(lax.reshape(d, (1,)))
        # u[k:k + n + 1] -= d * v, with d * v zero-padded to the length of u.
        u = lax.sub(u, lax.pad(lax.mul(d, v), zero, [(k, m - n - k, 0)]))
    q = lax.concatenate(quotient, 0) if quotient else lax.full((1,), 0, aval_of(u).dtype)
    if trim_leading_zeros:
        # NumPy's tolerance is relative; sqrt(eps) stands in for it, as in JAX.
        u = _trim_front("polydiv", u, math.sqrt(float(finfo(aval_of(u).dtype).eps)))
    return q, u


# --- calculus -------------------------------------------------------------------------
def polyder(p: Any, m: int = 1) -> Any:
    """The coefficients of the `m`-th derivative of `p`.

    >>> import numpy as np
    >>> polyder(np.float32([1, 1, 1, 1]))
    Array([3., 2., 1.], dtype=float32)
    """
    check_arraylike("polyder", p)
    m = _static_int(m, "the order m of polyder")
    (p,) = promote_dtypes_inexact(p)
    p = _vector("polyder", p)
    if m < 0:
        raise ValueError(f"polyder: order of derivative must be non-negative, got {m}")
    if m == 0:
        return p
    n = _shape(p)[0]
    # Falling factorials (n-1-i)(n-2-i)...(n-m-i) of each surviving power.
    powers = np.arange(n - 1, m - 1, -1)
    coeff = np.prod(powers[None, :] - np.arange(m)[:, None], axis=0)
    kept = lax.slice_in_dim(p, 0, max(n - m, 0))
    return lax.mul(kept, coeff.astype(aval_of(p).dtype))


def polyint(p: Any, m: int = 1, k: Any = None) -> Any:
    """The coefficients of the `m`-th antiderivative of `p`, with integration
    constants `k` (a scalar, or `m` values, the first for the first integration).

    >>> import numpy as np
    >>> polyint(np.float32([3, 2, 1]), k=4)
    Array([1., 1., 1., 4.], dtype=float32)
    """
    m = _static_int(m, "the order m of polyint")
    k = 0 if k is None else k
    check_arraylike("polyint", p, k)
    p, k = promote_dtypes_inexact(p, k)
    p = _vector("polyint", p)
    if m < 0:
        raise ValueError(f"polyint: order of integral must be non-negative, got {m}")
    k = k if _shape(k) else lax.reshape(k, (1,))
    if _shape(k) == (1,):
        k = lax.broadcast_in_dim(lax.reshape(k, ()), (m,), ())
    if _shape(k) != (m,):
        raise ValueError(f"polyint: k must be a scalar or a 1-D array of length 1 or m = {m}, "
                         f"got shape {_shape(k)}")
    if m == 0:
        return p
    # Entry j of concat(p, k) is divided by the product of the m powers it climbs.
    grid = np.arange(_shape(p)[0] + m)[None, :] - np.arange(m)[:, None]
    coeff = np.prod(np.maximum(1, grid), axis=0)[::-1]
    return lax.div(lax.concatenate([p, k], 0), coeff.astype(aval_of(p).dtype))
