"""`minimize`, the entry point of `lamella.scipy.optimize`: checks the arguments, runs
the chosen method and reports in JAX's `OptimizeResults`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import lamella.numpy as jnp
from lamella.scipy.optimize.bfgs import minimize_bfgs
from lamella.scipy.optimize.lbfgs import minimize_lbfgs

__all__ = ["OptimizeResults", "minimize"]

_LBFGS = "l-bfgs-experimental-do-not-rely-on-this"
_OPTIONS = {
    "bfgs": ("maxiter", "norm", "gtol", "line_search_maxiter"),
    _LBFGS: ("maxiter", "norm", "maxcor", "ftol", "gtol", "maxfun", "maxgrad", "maxls"),
}


class OptimizeResults(NamedTuple):
    """What `minimize` found.

    Attributes:
      x: the final point.
      success: True if the method converged.
      status: the method's end state. BFGS: 0 converged, 1 `maxiter` reached,
        3 line search failed (rounding errors prevent progress), 4 no descent
        direction, 5 line search found no bracket, -1 undefined. L-BFGS: 0
        converged, 1 `maxiter`, 2 `maxfun`, 3 `maxgrad` reached, 4 converged with a
        decrease below `ftol` (a success, as in SciPy; JAX 0.10.2 counts it a
        failure), 5 line search failed.
      fun: the objective's value at `x`.
      jac: its gradient at `x`.
      hess_inv: the inverse-Hessian estimate (BFGS), or None (L-BFGS).
      nfev, njev: function and gradient evaluations.
      nit: iterations.
    """

    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def _starting_point(x0: Any, method: str):
    x0 = jnp.asarray(x0)
    if x0.ndim != 1 or x0.shape[0] == 0:
        raise ValueError(f"minimize: x0 must be a non-empty 1-D array of shape (n,), but it has "
                         f"shape {x0.shape}; pass x0.ravel() and reshape inside fun.")
    if not jnp.issubdtype(x0.dtype, jnp.inexact):
        x0 = x0.astype(jnp.result_type(float))
    if method == "bfgs" and jnp.iscomplexobj(x0):
        raise TypeError("minimize: method 'BFGS' needs a real x0, got "
                        f"{x0.dtype}; use method='{_LBFGS}' for complex variables.")
    return x0


def minimize(fun: Callable, x0: Any, args: tuple = (), *, method: str, tol: float | None = None,
             options: Mapping[str, Any] | None = None) -> OptimizeResults:
    """Minimise a scalar function of one or more variables, as `jax.scipy.optimize.minimize`.

    Gradients come from automatic differentiation, and the whole minimisation is one
    `lax.while_loop`, so `minimize` works under `jit` and `vmap` (over starting points
    or over `args`).

    Args:
      fun: the objective, `fun(x, *args) -> real scalar`, with `x` of shape `(n,)`.
      x0: the starting point, a 1-D array (integers are converted to floats).
      args: extra arguments of `fun`, a tuple.
      method: "BFGS", or "l-bfgs-experimental-do-not-rely-on-this" (any case), which
        also accepts complex `x0`.
      tol: the gradient tolerance `gtol` unless `options` sets it (as in SciPy; JAX
        0.10.2 ignores `tol`).
      options: method options. BFGS: `maxiter` (default `200 n`), `norm` (of the
        gradient, default inf), `gtol` (1e-5), `line_search_maxiter` (10). L-BFGS:
        `maxiter`, `norm`, `maxcor` (10), `ftol` (2.2e-9), `gtol` (1e-5), `maxfun`,
        `maxgrad`, `maxls` (20).

    Returns:
      An `OptimizeResults`.

    >>> import lamella.numpy as jnp
    >>> def f(x, a):
    ...     return jnp.sum((x - a) ** 2) + x[0] * x[1]
    >>> res = minimize(f, jnp.zeros(2), args=(1.0,), method="BFGS")
    >>> bool(res.success), res.x.round(4)
    (True, Array([0.6667, 0.6667], dtype=float32))
    """
    if not isinstance(args, tuple):
        raise TypeError(f"minimize: args must be a tuple, got {type(args).__name__}: {args!r}")
    if not isinstance(method, str) or method.lower() not in _OPTIONS:
        raise ValueError(f"minimize: method {method!r} not recognized; lamella.scipy.optimize "
                         f"has 'BFGS' and '{_LBFGS}'.")
    method = method.lower()
    options = dict(options or {})
    unknown = sorted(set(options) - set(_OPTIONS[method]))
    if unknown:
        raise TypeError(f"minimize: unknown option(s) {unknown} for method {method!r}; it "
                        f"accepts {list(_OPTIONS[method])}.")
    if tol is not None:
        options.setdefault("gtol", tol)
    x0 = _starting_point(x0, method)

    def objective(x):
        return fun(x, *args)

    if method == "bfgs":
        r = minimize_bfgs(objective, x0, **options)
        hess_inv = r.H_k
    else:
        r = minimize_lbfgs(objective, x0, **options)
        hess_inv = None
    return OptimizeResults(x=r.x_k, success=r.converged & ~r.failed, status=r.status,
                           fun=r.f_k, jac=r.g_k, hess_inv=hess_inv, nfev=r.nfev, njev=r.ngev,
                           nit=r.k)
