"""L-BFGS: quasi-Newton minimisation from the last `maxcor` steps and gradient changes
instead of a dense inverse Hessian (Nocedal & Wright, *Numerical Optimization*,
Algorithms 7.4 and 7.5), as one `lax.while_loop`; complex variables as in Sorber, Van
Barel and De Lathauwer, "Unconstrained optimization of real functions in complex
variables" (SIAM J. Optim. 22, 2012), the way JAX treats them.

The history is a ring buffer written in place (JAX rolls it, copying it every
iteration), and only pairs with positive curvature `Re(s.y) > 0` enter it, so every
direction is a descent direction.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

import lamella.lax as lax
import lamella.numpy as jnp
from lamella.scipy.optimize.line_search import (
    line_search,
    rounding_level,
    slope,
    value_and_grad,
)

__all__ = ["LBFGSResults", "minimize_lbfgs"]


class LBFGSResults(NamedTuple):
    """The state of L-BFGS, and its end state.

    Attributes:
      converged: the gradient norm fell below `gtol`, or an iteration lowered the
        value by less than `ftol` (SciPy's reading of `ftol`; JAX 0.10.2 counts that
        as a failure). A change within rounding errors of the value is no evidence
        either way and does not stop the iteration (in float32 `ftol`'s default is
        below the resolution of most values).
      failed: stopped for any other reason (see status).
      k: iterations done; nfev, ngev: function and gradient evaluations.
      x_k, f_k, g_k: the current point, its value and gradient.
      s_history, y_history, rho_history: the last `maxcor` steps, gradient changes and
        `1 / Re(s.y)`, a ring buffer (row `stored % maxcor` is written next).
      stored: how many pairs were ever stored.
      gamma: the scale of the initial inverse Hessian, `Re(s.y) / |y|^2` of the last pair.
      status: 0 converged (gradient), 1 `maxiter` reached, 2 `maxfun` reached,
        3 `maxgrad` reached, 4 converged (the value decreased by less than `ftol`),
        5 line search failed.
      ls_status: the last line search's status.
    """

    converged: Any
    failed: Any
    k: Any
    nfev: Any
    ngev: Any
    x_k: Any
    f_k: Any
    g_k: Any
    s_history: Any
    y_history: Any
    rho_history: Any
    stored: Any
    gamma: Any
    status: Any
    ls_status: Any


def _direction(state: LBFGSResults, maxcor: int):
    """`-H g` by the two-loop recursion, newest pair first, then oldest first.

    Unused rows hold zeros and `rho = 0`, so they change nothing. In JAX's convention
    for complex variables the gradient is `conj(g)` and its changes are `conj(y)`.
    """
    newest = state.stored - 1

    def newest_first(i, carry):
        q, alphas = carry
        row = (newest - i) % maxcor
        alpha = state.rho_history[row] * slope(jnp.conj(state.s_history[row]), q)
        return q - alpha * jnp.conj(state.y_history[row]), alphas.at[row].set(alpha)

    q, alphas = lax.fori_loop(0, maxcor, newest_first,
                              (-jnp.conj(state.g_k), jnp.zeros_like(state.rho_history)))

    def oldest_first(i, r):
        row = (newest - maxcor + 1 + i) % maxcor
        beta = state.rho_history[row] * slope(state.y_history[row], r)
        return r + (alphas[row] - beta) * state.s_history[row]

    return lax.fori_loop(0, maxcor, oldest_first, state.gamma * q)


def minimize_lbfgs(fun: Callable, x0: Any, maxiter: float | None = None, norm: Any = np.inf,
                   maxcor: int = 10, ftol: float = 2.220446049250313e-09, gtol: float = 1e-05,
                   maxfun: float | None = None, maxgrad: float | None = None,
                   maxls: int = 20) -> LBFGSResults:
    """Minimise `fun` from `x0` with L-BFGS.

    Args:
      fun: a real scalar function of one 1-D real or complex array.
      x0: the starting point, shape `(n,)`.
      maxiter: iterations before giving up (default `200 * n` when neither `maxfun`
        nor `maxgrad` is given, else unlimited).
      norm: the order of the gradient norm that `gtol` bounds (default infinity).
      maxcor: how many step pairs the inverse-Hessian estimate remembers.
      ftol: stop once an iteration lowers the value by less than this.
      gtol: converged once `norm(gradient) < gtol`.
      maxfun, maxgrad: function and gradient evaluations before giving up.
      maxls: line-search trips before the minimiser is bracketed.

    Returns:
      An `LBFGSResults`.

    >>> import lamella.numpy as jnp
    >>> res = minimize_lbfgs(lambda x: jnp.sum((x - 2.0) ** 2), jnp.zeros(3))
    >>> bool(res.converged), res.x_k
    (True, Array([2., 2., 2.], dtype=float32))
    """
    n = x0.shape[0]
    if maxiter is None and maxfun is None and maxgrad is None:
        maxiter = 200 * n
    limits = [np.inf if v is None else v for v in (maxiter, maxfun, maxgrad)]
    maxiter, maxfun, maxgrad = limits
    evaluate = value_and_grad(fun)
    f0, g0 = evaluate(x0)
    real = f0.dtype

    init = LBFGSResults(
        converged=jnp.array(False), failed=jnp.array(False), k=jnp.array(0),
        nfev=jnp.array(1), ngev=jnp.array(1), x_k=x0, f_k=f0, g_k=g0,
        s_history=jnp.zeros((maxcor, n), x0.dtype), y_history=jnp.zeros((maxcor, n), x0.dtype),
        rho_history=jnp.zeros((maxcor,), real), stored=jnp.array(0), gamma=jnp.ones((), real),
        status=jnp.array(0), ls_status=jnp.array(0))

    def body(state: LBFGSResults) -> LBFGSResults:
        p = _direction(state, maxcor)
        # The first direction is the bare gradient, of arbitrary scale: its first trial
        # step is the one a quadratic model predicts from a unit change, as in BFGS.
        old_old = jnp.where(state.k == 0, state.f_k + jnp.linalg.norm(state.g_k) / 2, jnp.inf)
        ls = line_search(fun, state.x_k, p, old_fval=state.f_k, old_old_fval=old_old,
                         gfk=state.g_k, maxiter=maxls)
        s = ls.a_k.astype(x0.dtype) * p
        y = ls.g_k - state.g_k
        sy = slope(y, s)
        keep = sy > 0
        row = state.stored % maxcor
        nfev, ngev = state.nfev + ls.nfev, state.ngev + ls.ngev
        small_gradient = jnp.linalg.norm(ls.g_k, ord=norm) < gtol
        # Progress below ftol counts only where it is measurable: a float32 value
        # stops changing long before the gradient stops shrinking.
        drop = state.f_k - ls.f_k
        stalled = (drop < ftol) & (jnp.abs(drop) > rounding_level(state.f_k))
        status = jnp.select([small_gradient, ls.failed, state.k + 1 >= maxiter, nfev >= maxfun,
                             ngev >= maxgrad, stalled], [0, 5, 1, 2, 3, 4], 0)
        converged = small_gradient | (status == 4)

        def remember(history, new):
            return history.at[row].set(jnp.where(keep, new, history[row]))

        return LBFGSResults(
            converged=converged, failed=~converged & (status > 0), k=state.k + 1, nfev=nfev,
            ngev=ngev, x_k=state.x_k + s, f_k=ls.f_k, g_k=ls.g_k,
            s_history=remember(state.s_history, s), y_history=remember(state.y_history, y),
            rho_history=remember(state.rho_history, 1 / sy),
            stored=state.stored + keep.astype(state.stored.dtype),
            gamma=jnp.where(keep, sy / jnp.real(jnp.vdot(y, y)), state.gamma),
            status=status, ls_status=ls.status)

    return lax.while_loop(lambda st: ~st.converged & ~st.failed, body, init)
