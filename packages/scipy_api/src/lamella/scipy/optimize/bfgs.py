"""BFGS: quasi-Newton minimisation with a dense inverse-Hessian estimate (Nocedal &
Wright, *Numerical Optimization*, Algorithm 6.1), as one `lax.while_loop`.

The inverse Hessian is updated by its rank-two formula in O(n^2) per iteration (JAX
forms two n-by-n matrix products, O(n^3)), and only from pairs with positive
curvature `s.y > 0`, which keeps it positive definite even after a step the line
search could not fully certify.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import lamella.lax as lax
import lamella.numpy as jnp
from lamella.scipy.optimize.line_search import line_search, value_and_grad

__all__ = ["BFGSResults", "minimize_bfgs"]


class BFGSResults(NamedTuple):
    """The state of BFGS, and its end state.

    Attributes:
      converged: the gradient norm fell below `gtol`.
      failed: the last line search failed (and the best point it found has not
        converged either).
      k: iterations done; nfev, ngev: function and gradient evaluations (nhev: 0).
      x_k, f_k, g_k: the current point, its value and gradient.
      H_k: the inverse-Hessian estimate.
      old_old_fval: the previous iterate's value (sets the first trial step).
      status: 0 converged, 1 `maxiter` reached, 3 line search failed in its zoom,
        4 no descent direction (a saddle point or a lost positive definiteness),
        5 line search ran out of bracketing iterations, -1 otherwise.
      line_search_status: the last line search's status.
    """

    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    nhev: Any
    x_k: Any
    f_k: Any
    g_k: Any
    H_k: Any
    old_old_fval: Any
    status: Any
    line_search_status: Any


def _inverse_hessian_update(H, s, y):
    """`(I - rho s y^T) H (I - rho y s^T) + rho s s^T` with `rho = 1 / (s.y)`, expanded.

    Pairs without positive curvature leave H as it is.
    """
    sy = jnp.dot(s, y)
    Hy = jnp.dot(H, y)
    rho = 1 / sy
    new = (H - rho * (jnp.outer(s, Hy) + jnp.outer(Hy, s))
           + (rho * rho * jnp.dot(y, Hy) + rho) * jnp.outer(s, s))
    return jnp.where((sy > 0) & jnp.isfinite(rho), new, H)


def minimize_bfgs(fun: Callable, x0: Any, maxiter: int | None = None, norm: Any = np.inf,
                  gtol: float = 1e-5, line_search_maxiter: int = 10) -> BFGSResults:
    """Minimise `fun` from `x0` with BFGS.

    Args:
      fun: a real scalar function of one 1-D real array.
      x0: the starting point, shape `(n,)`.
      maxiter: iterations before giving up (default `200 * n`).
      norm: the order of the gradient norm that `gtol` bounds (default infinity).
      gtol: converged once `norm(gradient) < gtol`.
      line_search_maxiter: bracketing iterations per line search.

    Returns:
      A `BFGSResults`.

    >>> import lamella.numpy as jnp
    >>> res = minimize_bfgs(lambda x: jnp.sum((x - 2.0) ** 2), jnp.zeros(3))
    >>> bool(res.converged), res.x_k
    (True, Array([2., 2., 2.], dtype=float32))
    """
    if maxiter is None:
        maxiter = 200 * x0.shape[0]
    evaluate = value_and_grad(fun)
    f0, g0 = evaluate(x0)

    def converged(g):
        return jnp.linalg.norm(g, ord=norm) < gtol

    init = BFGSResults(
        converged=converged(g0), failed=jnp.array(False), k=jnp.array(0), nfev=jnp.array(1),
        ngev=jnp.array(1), nhev=jnp.array(0), x_k=x0, f_k=f0, g_k=g0,
        H_k=jnp.eye(x0.shape[0], dtype=x0.dtype),
        # SciPy's choice: the first trial step then has length about 1.01 (H_0 = I).
        old_old_fval=f0 + jnp.linalg.norm(g0) / 2, status=jnp.array(0),
        line_search_status=jnp.array(0))

    def body(state: BFGSResults) -> BFGSResults:
        p = -jnp.dot(state.H_k, state.g_k)
        ls = line_search(fun, state.x_k, p, old_fval=state.f_k,
                         old_old_fval=state.old_old_fval, gfk=state.g_k,
                         maxiter=line_search_maxiter)
        s = ls.a_k * p
        done = converged(ls.g_k)
        return state._replace(
            converged=done, failed=ls.failed & ~done, k=state.k + 1,
            nfev=state.nfev + ls.nfev, ngev=state.ngev + ls.ngev, x_k=state.x_k + s,
            f_k=ls.f_k, g_k=ls.g_k, H_k=_inverse_hessian_update(state.H_k, s, ls.g_k - state.g_k),
            old_old_fval=state.f_k, line_search_status=ls.status)

    state = lax.while_loop(lambda st: ~st.converged & ~st.failed & (st.k < maxiter), body, init)
    status = jnp.where(state.converged, 0,
                       jnp.where(state.k >= maxiter, 1,
                                 jnp.where(state.failed, 2 + state.line_search_status, -1)))
    return state._replace(status=status)
