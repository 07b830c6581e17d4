"""lamella.scipy.stats: jax.scipy.stats's distributions and statistics, with JAX's
names, signatures and defaults and SciPy's values.

Each distribution is a module of functions, as in JAX (`stats.norm.logpdf(x,
loc=0, scale=1)`), with exactly JAX's set of functions; all of them work under
jit, grad and vmap. Outside the support a log density is -inf (a density 0);
invalid parameters (a scale <= 0, a probability outside [0, 1], ...) give NaN,
as in SciPy. The module docstrings say where the numerics differ from the
textbook formulas (tails, huge parameters) and where they differ from JAX.

>>> import numpy as np
>>> from lamella.scipy import stats
>>> stats.norm.logsf(np.float32(40.0))
Array(-804.60846, dtype=float32)
"""

from lamella.scipy.stats import bernoulli as bernoulli
from lamella.scipy.stats import beta as beta
from lamella.scipy.stats import betabinom as betabinom
from lamella.scipy.stats import binom as binom
from lamella.scipy.stats import cauchy as cauchy
from lamella.scipy.stats import chi2 as chi2
from lamella.scipy.stats import dirichlet as dirichlet
from lamella.scipy.stats import expon as expon
from lamella.scipy.stats import gamma as gamma
from lamella.scipy.stats import gennorm as gennorm
from lamella.scipy.stats import geom as geom
from lamella.scipy.stats import gumbel_l as gumbel_l
from lamella.scipy.stats import gumbel_r as gumbel_r
from lamella.scipy.stats import laplace as laplace
from lamella.scipy.stats import logistic as logistic
from lamella.scipy.stats import multinomial as multinomial
from lamella.scipy.stats import multivariate_normal as multivariate_normal
from lamella.scipy.stats import nbinom as nbinom
from lamella.scipy.stats import norm as norm
from lamella.scipy.stats import pareto as pareto
from lamella.scipy.stats import poisson as poisson
from lamella.scipy.stats import t as t
from lamella.scipy.stats import truncnorm as truncnorm
from lamella.scipy.stats import uniform as uniform
from lamella.scipy.stats import vonmises as vonmises
from lamella.scipy.stats import wrapcauchy as wrapcauchy
from lamella.scipy.stats._descriptive import mode as mode
from lamella.scipy.stats._descriptive import rankdata as rankdata
from lamella.scipy.stats._descriptive import sem as sem
from lamella.scipy.stats._kde import gaussian_kde as gaussian_kde
