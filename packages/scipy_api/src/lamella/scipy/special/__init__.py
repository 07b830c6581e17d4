"""lamella.scipy.special: jax.scipy.special's functions (SciPy's names, JAX's
signatures and dtypes), one module per family.

>>> import numpy as np
>>> from lamella.scipy import special
>>> special.gammaln(np.float32(4.0))
Array(1.7917595, dtype=float32)
"""

from lamella.scipy.special.beta import beta, betainc, betaln
from lamella.scipy.special.combinatorics import bernoulli, comb, factorial, poch
from lamella.scipy.special.dilogarithm import spence
from lamella.scipy.special.exponential_integrals import exp1, expi, expn
from lamella.scipy.special.gamma import (
    digamma,
    gamma,
    gammaln,
    gammasgn,
    loggamma,
    multigammaln,
    polygamma,
)
from lamella.scipy.special.hypergeometric import hyp1f1, hyp2f1
from lamella.scipy.special.incomplete_gamma import gammainc, gammaincc
from lamella.scipy.special.zeta import zeta
