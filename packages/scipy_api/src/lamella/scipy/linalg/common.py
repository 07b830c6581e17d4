"""Helpers every family of `lamella.scipy.linalg` shares: dtype promotion,
shape checks that name the user's mistake, and small batched matrix operations.

Everything here is lamella.numpy / lamella.lax, so it traces, batches and
differentiates; the checks read only static shapes.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import lamella.lax.linalg as lax_linalg
import lamella.numpy as lnp
from lamella.core import jit, vmap


def inexact(*xs: Any) -> list[Any]:
    """The arguments as arrays of one inexact dtype (integers and bools become the
    default float), as ``jax.numpy`` promotes them."""
    arrays = [lnp.asarray(x) for x in xs]
    dtype = lnp.result_type(*arrays)
    if not lnp.issubdtype(dtype, lnp.inexact):
        dtype = lnp.result_type(dtype, float)
    return [a.astype(dtype) for a in arrays]


def check_matrix(name: str, a: Any, arg: str = "a", square: bool = True) -> None:
    """Raises a ValueError naming `name` and `arg` unless `a` is a (batched) matrix,
    square when `square`."""
    shape = lnp.shape(a)
    if len(shape) < 2 or (square and shape[-1] != shape[-2]):
        kind = "square matrix, of shape (..., n, n)" if square else "matrix, of shape (..., m, n)"
        raise ValueError(f"{name}: expected {arg} to be a (batched) {kind}; got shape {shape}")


def is_complex(x: Any) -> bool:
    return lnp.issubdtype(lnp.result_type(x), lnp.complexfloating)


def real_dtype(dtype: Any) -> Any:
    """float32 for complex64 and float32; float64 for complex128 and float64."""
    return lnp.finfo(dtype).dtype


def complex_dtype(dtype: Any) -> Any:
    """complex64 for float32 and complex64; complex128 for the 64-bit dtypes."""
    return lnp.result_type(dtype, lnp.complex64)


def mT(x: Any) -> Any:
    """The transpose of each matrix (the last two axes)."""
    return lnp.swapaxes(x, -1, -2)


def mH(x: Any) -> Any:
    """The conjugate transpose of each matrix."""
    return lnp.conj(lnp.swapaxes(x, -1, -2))


def eye_like(a: Any) -> Any:
    """The identity of each square matrix's size and dtype, broadcast over a's batch."""
    shape = lnp.shape(a)
    return lnp.broadcast_to(lnp.eye(shape[-1], dtype=a.dtype), shape)


def batch_shape(name: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast of batch shapes, or a ValueError that shows them."""
    try:
        return tuple(lnp.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"{name}: batch dimensions {' and '.join(map(str, shapes))} "
                         "do not broadcast") from None


def compiled(fun: Callable, core_ndims: tuple[int, ...] | None = None, **static: Any) -> Callable:
    """`fun` with the keyword arguments `static` fixed, compiled as one jitted function
    (so an eager call compiles once per shape, not once per operation).

    With `core_ndims`, `fun` takes unbatched arguments (argument i has
    `core_ndims[i]` core axes) and the result maps it with vmap over any
    leading batch axes, broadcast between the arguments. The jitted functions
    are cached by `fun`, `core_ndims` and `static`, whose values must be hashable.
    """
    return _compiled(fun, core_ndims, tuple(sorted(static.items())))


@functools.lru_cache(maxsize=256)
def _compiled(fun: Callable, core_ndims: tuple[int, ...] | None,
              static: tuple[tuple[str, Any], ...]) -> Callable:
    bound = functools.partial(fun, **dict(static))
    if core_ndims is None:
        return jit(bound)

    def batched(*args):
        batch = batch_shape(getattr(fun, "__name__", "function"), *(lnp.shape(a)[:lnp.ndim(a) - k]
                                            for a, k in zip(args, core_ndims)))
        args = [lnp.broadcast_to(a, batch + lnp.shape(a)[lnp.ndim(a) - k:])
                for a, k in zip(args, core_ndims)]
        mapped = bound
        for _ in batch:
            mapped = vmap(mapped)
        return mapped(*args)
    return jit(batched)


def hermitian_from(a: Any, lower: bool, conjugate: bool = True) -> Any:
    """The Hermitian (symmetric, without `conjugate`) matrix whose lower (upper)
    triangle is a's, as LAPACK reads a matrix of which it is told one triangle."""
    tri = lnp.tril(a) if lower else lnp.triu(a)
    strict = tri - lnp.tril(lnp.triu(a))
    return tri + (mH(strict) if conjugate else mT(strict))


def right_hand_side(name: str, n: int, b: Any, a_ndim: int | None = None,
                    warn: bool = True) -> tuple[Any, bool]:
    """`b` as a batch of (n, k) matrices, and whether it was a vector.

    A 1-D `b` is one vector. Given `a_ndim`, as in JAX's cho_solve, lu_solve and
    solve_triangular, a `b` with one axis fewer than `a` whose last axis has
    length n is a batch of vectors (deprecated in the first and last, with a
    FutureWarning that `warn` keeps here); any other `b` is a batch of matrices.
    """
    shape = lnp.shape(b)
    if len(shape) == 1:
        vector = True
    elif a_ndim == len(shape) + 1 and shape[-1] == n:
        if warn:
            warnings.warn(f"lamella.scipy.linalg.{name}: batched 1D solves with b.ndim > 1 are "
                          "deprecated (as in JAX), and in the future will be treated as a "
                          f"batched 2D solve. Use {name}(..., b[..., None]).squeeze(-1) to "
                          "avoid this warning.", FutureWarning, stacklevel=3)
        vector = True
    else:
        vector = False
    if len(shape) == 0 or shape[-1 if vector else -2] != n:
        raise ValueError(f"{name}: b must have shape ({n},) or (..., {n}, k) to match a "
                         f"matrix of size {n}; got shape {shape}")
    return (b[..., None] if vector else b), vector


def broadcast_batches(name: str, a: Any, b: Any) -> tuple[Any, Any]:
    """`a` and `b` (matrices) broadcast to one batch shape."""
    batch = batch_shape(name, lnp.shape(a)[:-2], lnp.shape(b)[:-2])
    return (lnp.broadcast_to(a, batch + lnp.shape(a)[-2:]),
            lnp.broadcast_to(b, batch + lnp.shape(b)[-2:]))


def triangular_solve(a: Any, b: Any, *, lower: bool, transpose_a: bool = False,
                     conjugate_a: bool = False, unit_diagonal: bool = False) -> Any:
    """op(a)^-1 b for triangular a and (..., n, k) b, batches broadcast."""
    a, b = broadcast_batches("solve_triangular", a, b)
    return lax_linalg.triangular_solve(a, b, left_side=True, lower=lower,
                                       transpose_a=transpose_a, conjugate_a=conjugate_a,
                                       unit_diagonal=unit_diagonal)
