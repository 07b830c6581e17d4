"""lamella.scipy.sparse.linalg: `jax.scipy.sparse.linalg`'s Krylov solvers for `A x = b`
-- conjugate gradients (`cg`), restarted GMRES (`gmres`) and BiCGSTAB (`bicgstab`).

`A` (and the preconditioner `M`) is a square matrix, an object with `@`, or a
function computing the linear map; `b` and `x0` may be any pytree of arrays. Each
solver is one `lax.while_loop` inside `lax.custom_linear_solve`, so it runs under
`jit` and `vmap`, and its derivatives -- with respect to `b` and to whatever `A`
closes over -- are those of the exact solution (implicit differentiation by a
second solve with the transposed operator), not of the iterations.

Tolerances follow SciPy's non-legacy rule: stop once
`norm(b - A x) <= max(tol * norm(b), atol)`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as jnp
from lamella.core.tree_util import tree_leaves, tree_map, tree_structure

__all__ = ["bicgstab", "cg", "gmres"]


# --- pytree vector arithmetic -----------------------------------------------------------

def _add(x, y):
    return tree_map(operator.add, x, y)


def _sub(x, y):
    return tree_map(operator.sub, x, y)


def _scale(a, x):
    return tree_map(lambda leaf: a.astype(leaf.dtype) * leaf, x)


def _axpy(a, x, y):
    """`a x + y` on pytrees."""
    return tree_map(lambda u, v: a.astype(u.dtype) * u + v, x, y)


def _vdot(x, y):
    """`sum(conj(x) * y)` over all leaves."""
    return sum(jnp.vdot(u, v) for u, v in zip(tree_leaves(x), tree_leaves(y)))


def _vdot_real(x, y):
    """`Re(x^H y)`: the inner product CG needs, real for Hermitian forms."""
    return jnp.real(_vdot(x, y))


def _norm(x):
    return jnp.sqrt(_vdot_real(x, x))


def _dtype(tree):
    return jnp.result_type(*tree_leaves(tree))


# --- arguments --------------------------------------------------------------------------

def _identity(x):
    return x


def _shapes(tree):
    return [(tuple(leaf.shape), jnp.result_type(leaf).name) for leaf in tree_leaves(tree)]


def _as_operator(A: Any, name: str, b: Any) -> Callable:
    """A function for the linear map that `A` (a function, matrix or `@`-object) is."""
    if callable(A) and not hasattr(A, "shape"):
        return A
    if not hasattr(A, "__matmul__") and not hasattr(A, "shape"):
        raise TypeError(f"{name} must be a function, a matrix or an object with `@`, "
                        f"got {type(A).__name__}")
    shape = tuple(A.shape)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"{name} must be a square matrix, but has shape {shape}")
    leaves = tree_leaves(b)
    if len(leaves) != 1 or tuple(leaves[0].shape) != (shape[1],):
        raise ValueError(f"{name} is a {shape} matrix, so b must be one array of shape "
                         f"({shape[1]},), but b has shapes {[leaf.shape for leaf in leaves]}")
    if isinstance(A, (np.ndarray, lax.Array, lc.Tracer)):
        return partial(jnp.matmul, A)
    return partial(operator.matmul, A)


def _check_operator(op: Callable, name: str, b: Any) -> None:
    """`op` maps arrays shaped like b to arrays shaped like b."""
    out = lc.eval_shape(op, b)
    if tree_structure(out) != tree_structure(b) or _shapes(out) != _shapes(b):
        raise ValueError(f"{name}(x) must return arrays with the structure, shapes and dtypes "
                         f"of b: b is {tree_structure(b)} with {_shapes(b)}, but {name}(x) "
                         f"gave {tree_structure(out)} with {_shapes(out)}")


def _prepare(A: Any, b: Any, x0: Any, M: Any):
    """Operators and arrays, checked: b's leaves inexact, x0 shaped like b."""
    b = tree_map(jnp.asarray, b)
    if not tree_leaves(b):
        raise ValueError("b must contain at least one array")
    # A matrix sets the precision too: b (and so x) takes its common type with A.
    matrix_dtype = [] if callable(A) else [getattr(A, "dtype", None)]
    dtype = jnp.result_type(*tree_leaves(b), *(d for d in matrix_dtype if d is not None), float)
    b = tree_map(lambda leaf: leaf.astype(jnp.result_type(leaf, dtype)), b)
    if x0 is None:
        x0 = tree_map(jnp.zeros_like, b)
    else:
        x0 = tree_map(jnp.asarray, x0)
        if tree_structure(x0) != tree_structure(b):
            raise ValueError(f"x0 and b must have the same tree structure: "
                             f"{tree_structure(x0)} vs {tree_structure(b)}")
        if [s for s, _ in _shapes(x0)] != [s for s, _ in _shapes(b)]:
            raise ValueError(f"arrays in x0 and b must have the same shapes: "
                             f"{[s for s, _ in _shapes(x0)]} vs {[s for s, _ in _shapes(b)]}")
        x0 = tree_map(lambda x, leaf: x.astype(leaf.dtype), x0, b)
    matvec = _as_operator(A, "A", b)
    _check_operator(matvec, "A", b)
    if M is None:
        precondition = _identity
    else:
        precondition = _as_operator(M, "M", b)
        _check_operator(precondition, "M", b)
    return matvec, b, x0, precondition


def _default_maxiter(b: Any, maxiter: int | None) -> int:
    # SciPy's default: ten times the number of unknowns.
    return 10 * sum(leaf.size for leaf in tree_leaves(b)) if maxiter is None else maxiter


def _threshold(b, tol, atol):
    """`max(tol * norm(b), atol)`, squared."""
    bb = _vdot_real(b, b)
    return jnp.maximum(tol * tol * bb, jnp.square(jnp.asarray(atol, bb.dtype)))


def _is_real(tree) -> bool:
    return not any(jnp.iscomplexobj(leaf) for leaf in tree_leaves(tree))


# --- conjugate gradients ----------------------------------------------------------------

def _cg_solve(A, b, *, x0, tol, atol, maxiter, M):
    """Preconditioned CG (Hestenes-Stiefel), iterating while `|r|^2 > threshold`."""
    threshold = _threshold(b, tol, atol)
    dtype = _dtype(b)
    r = _sub(b, A(x0))
    z = M(r)
    gamma = _vdot_real(r, z)
    rr = gamma if M is _identity else _vdot_real(r, r)

    def body(carry):
        x, r, p, gamma, _, k = carry
        Ap = A(p)
        alpha = (gamma / _vdot_real(p, Ap)).astype(dtype)
        x = _axpy(alpha, p, x)
        r = _axpy(-alpha, Ap, r)
        z = M(r)
        gamma_new = _vdot_real(r, z)
        rr = gamma_new if M is _identity else _vdot_real(r, r)
        p = _axpy((gamma_new / gamma).astype(dtype), p, z)
        return x, r, p, gamma_new, rr, k + 1

    init = (x0, r, z, gamma, rr, jnp.array(0))
    x, *_ = lax.while_loop(lambda c: (c[4] > threshold) & (c[5] < maxiter), body, init)
    return x


def cg(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
       maxiter: int | None = None, M: Any = None) -> tuple[Any, None]:
    """Solve `A x = b` by conjugate gradients, for Hermitian positive-definite `A`.

    Args:
      A: the operator: a square matrix, an object with `@`, or a function `x -> A x`
        returning arrays shaped like its argument.
      b: the right-hand side, an array or a pytree of arrays.
      x0: the starting guess, shaped like `b` (default zeros).
      tol, atol: stop once `norm(b - A x) <= max(tol * norm(b), atol)`.
      maxiter: iterations before giving up (default 10 times the size of b).
      M: a preconditioner approximating the inverse of A (matrix or function).

    Returns:
      `(x, None)`: the solution, shaped like `b`, and JAX's placeholder for info.

    >>> import lamella.numpy as jnp
    >>> A = jnp.array([[4.0, 1.0], [1.0, 3.0]])
    >>> x, _ = cg(A, jnp.array([1.0, 2.0]))
    >>> x
    Array([0.09090909, 0.6363636 ], dtype=float32)
    """
    A, b, x0, M = _prepare(A, b, x0, M)
    solve = partial(_cg_solve, x0=x0, tol=tol, atol=atol, maxiter=_default_maxiter(b, maxiter),
                    M=M)
    # A real symmetric operator is its own transpose; a complex Hermitian one is not
    # (its transpose is its conjugate, also Hermitian positive definite, so CG serves).
    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve,
                                symmetric=_is_real(b))
    return x, None


# --- BiCGSTAB ---------------------------------------------------------------------------

def _bicgstab_solve(A, b, *, x0, tol, atol, maxiter, M):
    """Preconditioned BiCGSTAB (van der Vorst), stopping on convergence or breakdown."""
    threshold = _threshold(b, tol, atol)
    dtype = _dtype(b)
    r = _sub(b, A(x0))
    one = jnp.ones((), dtype)
    zero = tree_map(jnp.zeros_like, r)

    def body(carry):
        x, r, r_hat, rho, alpha, omega, p, v, _, k = carry
        rho_new = _vdot(r_hat, r)
        beta = (rho_new / rho) * (alpha / omega)
        p = _add(r, _scale(beta, _axpy(-omega, v, p)))
        p_hat = M(p)
        v = A(p_hat)
        alpha = rho_new / _vdot(r_hat, v)
        s = _axpy(-alpha, v, r)
        s_small = _vdot_real(s, s) <= threshold
        s_hat = M(s)
        t = A(s_hat)
        omega = _vdot(t, s) / _vdot(t, t)
        x = _axpy(alpha, p_hat, x)
        x = tree_map(partial(jnp.where, s_small), x, _axpy(omega, s_hat, x))
        r = tree_map(partial(jnp.where, s_small), s, _axpy(-omega, t, s))
        rr = _vdot_real(r, r)
        # A vanishing rho, alpha or omega is a breakdown: no further progress is possible.
        broke = (rho_new == 0) | (alpha == 0) | (omega == 0)
        rr = jnp.where(broke & ~s_small, -1.0, rr).astype(rr.dtype)
        return x, r, r_hat, rho_new, alpha, omega, p, v, rr, k + 1

    init = (x0, r, r, one, one, one, zero, zero, _vdot_real(r, r), jnp.array(0))
    x, *_ = lax.while_loop(lambda c: (c[8] > threshold) & (c[9] < maxiter), body, init)
    return x


def bicgstab(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
             maxiter: int | None = None, M: Any = None) -> tuple[Any, None]:
    """Solve `A x = b` by BiCGSTAB, for a general (nonsymmetric) nonsingular `A`.

    Arguments as `cg`'s. Returns `(x, None)`.

    >>> import lamella.numpy as jnp
    >>> A = jnp.array([[3.0, 1.0], [-1.0, 2.0]])
    >>> x, _ = bicgstab(A, jnp.array([5.0, 3.0]))
    >>> x.round(5)
    Array([1., 2.], dtype=float32)
    """
    A, b, x0, M = _prepare(A, b, x0, M)
    solve = partial(_bicgstab_solve, x0=x0, tol=tol, atol=atol,
                    maxiter=_default_maxiter(b, maxiter), M=M)
    return lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve), None


# --- GMRES ------------------------------------------------------------------------------

def _basis_column(V, k):
    return tree_map(lambda leaf: lax.dynamic_index_in_dim(leaf, k, 0, keepdims=False), V)


def _set_basis_column(V, k, v):
    return tree_map(lambda leaf, col: lax.dynamic_update_index_in_dim(leaf, col, k, 0), V, v)


def _project(V, w):
    """`V^H w`: the coefficients of w along each basis vector (rows of V's leaves)."""
    return sum(jnp.tensordot(jnp.conj(leaf), x, axes=x.ndim)
               for leaf, x in zip(tree_leaves(V), tree_leaves(w)))


def _combine(V, h):
    """`V h`: the combination of basis vectors with coefficients h."""
    return tree_map(lambda leaf: jnp.tensordot(h.astype(leaf.dtype), leaf, axes=1), V)


def _arnoldi_step(A, M, V, k):
    """Extend the orthonormal Krylov basis V of `M A` by column k + 1.

    Returns the new basis, the Hessenberg column (length restart + 1) and whether the
    space became invariant. Classical Gram-Schmidt applied twice ("twice is enough")
    keeps the basis orthogonal to working precision; unused columns of V are zero, so
    projecting on all of them is exact.
    """
    w = M(A(_basis_column(V, k)))
    w_norm = _norm(w)
    h = _project(V, w)
    w = _sub(w, _combine(V, h))
    correction = _project(V, w)
    w = _sub(w, _combine(V, correction))
    h = h + correction
    new_norm = _norm(w)
    invariant = new_norm <= jnp.finfo(new_norm.dtype).eps * w_norm
    unit = _scale(jnp.where(invariant, 0, 1 / new_norm), w)
    h = h.at[k + 1].set(jnp.where(invariant, 0, new_norm).astype(h.dtype))
    return _set_basis_column(V, k + 1, unit), h, invariant


def _givens(a, b):
    """(c, s) with c real, rotating (a, b) to (r, 0): `c a + s b = r`, `-conj(s) a + c b = 0`."""
    abs_a, abs_b = jnp.abs(a), jnp.abs(b)
    r = jnp.sqrt(abs_a * abs_a + abs_b * abs_b)
    safe_r = jnp.where(r == 0, 1, r)
    phase = jnp.where(abs_a == 0, 1, a / jnp.where(abs_a == 0, 1, abs_a).astype(a.dtype))
    c = jnp.where(r == 0, 1, abs_a / safe_r)
    s = jnp.where(r == 0, 0, phase * jnp.conj(b) / safe_r.astype(a.dtype))
    return c.astype(a.dtype), s


def _rotate(v, i, c, s):
    """Apply the rotation (c, s) to entries i and i + 1 of v."""
    x, y = v[i], v[i + 1]
    return v.at[i].set(c * x + s * y).at[i + 1].set(-jnp.conj(s) * x + c * y)


def _upper_solve(R, g):
    return lax.linalg.triangular_solve(R, g[:, None], left_side=True, lower=False)[:, 0]


def _cycle_incremental(A, M, V, beta, ptol, restart, dtype):
    """One GMRES cycle keeping the QR factors of the Hessenberg matrix by Givens
    rotations, which gives the residual at every step and stops the cycle early."""
    R = jnp.eye(restart, dtype=dtype)  # unused columns stay the identity: solvable
    rotations = jnp.zeros((restart, 2), dtype)
    g = jnp.zeros(restart + 1, dtype).at[0].set(beta.astype(dtype))

    def body(carry):
        V, R, rotations, g, _, k = carry
        V, h, _ = _arnoldi_step(A, M, V, k)
        h = lax.fori_loop(0, k, lambda i, h: _rotate(h, i, rotations[i, 0], rotations[i, 1]), h)
        c, s = _givens(h[k], h[k + 1])
        h = _rotate(h, k, c, s)
        g = _rotate(g, k, c, s)
        R = lax.dynamic_update_index_in_dim(R, h[:restart], k, 1)
        rotations = rotations.at[k].set(jnp.stack([c, s]))
        return V, R, rotations, g, jnp.abs(g[k + 1]), k + 1

    init = (V, R, rotations, g, beta, jnp.array(0))
    V, R, _, g, _, k = lax.while_loop(lambda c: (c[5] < restart) & (c[4] > ptol), body, init)
    used = jnp.arange(restart) < k
    return V, _upper_solve(R, jnp.where(used, g[:restart], 0))


def _cycle_batched(A, M, V, beta, ptol, restart, dtype):
    """One GMRES cycle building the whole Arnoldi basis first, then solving the small
    least-squares problem at once by QR (fewer, larger operations)."""
    del ptol  # the cycle runs to its end (or to an invariant subspace)
    H = jnp.eye(restart + 1, restart, dtype=dtype)  # unused columns: solvable padding

    def body(carry):
        V, H, _, k = carry
        V, h, invariant = _arnoldi_step(A, M, V, k)
        return V, lax.dynamic_update_index_in_dim(H, h, k, 1), invariant, k + 1

    init = (V, H, jnp.array(False), jnp.array(0))
    V, H, _, _ = lax.while_loop(lambda c: (c[3] < restart) & ~c[2], body, init)
    Q, R = jnp.linalg.qr(H)
    return V, _upper_solve(R, beta.astype(dtype) * jnp.conj(Q[0]))


def _gmres_solve(A, b, *, x0, tol, atol, restart, maxiter, M, cycle):
    """Restarted, left-preconditioned GMRES: each cycle minimises `|M (b - A x)|` over
    a Krylov space of dimension `restart`; cycles repeat while the true residual
    exceeds the tolerance."""
    dtype = _dtype(b)
    b_norm = _norm(b)
    target = jnp.maximum(tol * b_norm, atol)
    # Inside a cycle the preconditioned residual is what is known: aim at the same
    # relative reduction of it.
    ptol = _norm(M(b)) * jnp.minimum(1.0, jnp.where(b_norm > 0, target / b_norm, 0))
    basis = tree_map(lambda leaf: jnp.zeros((restart + 1, *leaf.shape), leaf.dtype), b)

    def residuals(x):
        r = _sub(b, A(x))
        z = M(r)
        return _norm(r), z, _norm(z)

    def body(carry):
        x, _, z, z_norm, k = carry
        V = _set_basis_column(basis, 0, _scale(jnp.where(z_norm > 0, 1 / z_norm, 0), z))
        V, y = cycle(A, M, V, z_norm, ptol, restart, dtype)
        x = _add(x, _combine(tree_map(lambda leaf: leaf[:restart], V), y))
        r_norm, z, z_norm = residuals(x)
        return x, r_norm, z, z_norm, k + 1

    r_norm, z, z_norm = residuals(x0)
    init = (x0, r_norm, z, z_norm, jnp.array(0))
    x, *_ = lax.while_loop(lambda c: (c[1] > target) & (c[4] < maxiter), body, init)
    return x


def gmres(A: Any, b: Any, x0: Any = None, *, tol: float = 1e-5, atol: float = 0.0,
          restart: int = 20, maxiter: int | None = None, M: Any = None,
          solve_method: str = "batched") -> tuple[Any, Any]:
    """Solve `A x = b` by restarted GMRES, for a general nonsingular `A`.

    Args:
      A, b, x0, tol, atol, M: as `cg`'s (M preconditions from the left).
      restart: the dimension of the Krylov space built per cycle (at most the size
        of b).
      maxiter: cycles before giving up (default 10 times the size of b).
      solve_method: "batched" solves each cycle's least-squares problem at its end
        (fewer, larger operations); "incremental" keeps it factored by Givens
        rotations and may end a cycle early.

    Returns:
      `(x, info)`: the solution, shaped like `b`, and `info`, -1 where x is NaN
      (a breakdown) and 0 otherwise, as JAX reports.

    >>> import lamella.numpy as jnp
    >>> A = jnp.array([[3.0, 1.0], [-1.0, 2.0]])
    >>> x, info = gmres(A, jnp.array([5.0, 3.0]))
    >>> x.round(5), int(info)
    (Array([1., 2.], dtype=float32), 0)
    """
    cycles = {"batched": _cycle_batched, "incremental": _cycle_incremental}
    if solve_method not in cycles:
        raise ValueError(f"gmres: solve_method must be 'incremental' or 'batched', got "
                         f"{solve_method!r}")
    A, b, x0, M = _prepare(A, b, x0, M)
    size = sum(leaf.size for leaf in tree_leaves(b))
    if restart < 1:
        raise ValueError(f"gmres: restart must be at least 1, got {restart}")
    solve = partial(_gmres_solve, x0=x0, tol=tol, atol=atol, restart=min(restart, size),
                    maxiter=_default_maxiter(b, maxiter), M=M, cycle=cycles[solve_method])
    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
    info = jnp.where(jnp.isnan(_norm(x)), -1, 0)
    return x, info
