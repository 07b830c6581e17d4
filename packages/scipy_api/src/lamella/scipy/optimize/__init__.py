"""lamella.scipy.optimize: `jax.scipy.optimize` -- `minimize` with BFGS and L-BFGS.

The line search (`lamella.scipy.optimize.line_search.line_search`), BFGS and L-BFGS
live in their own modules; the public names are JAX's.

>>> import lamella.numpy as jnp
>>> from lamella.scipy.optimize import minimize
>>> res = minimize(lambda x: jnp.sum((x - 1.0) ** 2), jnp.zeros(2), method="BFGS")
>>> res.x
Array([1., 1.], dtype=float32)
"""

from lamella.scipy.optimize.minimize import OptimizeResults, minimize

__all__ = ["OptimizeResults", "minimize"]
