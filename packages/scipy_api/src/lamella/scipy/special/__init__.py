"""lamella.scipy.special: jax.scipy.special's functions (SciPy's names, JAX's
signatures and dtypes), one module per family.

>>> import numpy as np
>>> from lamella.scipy import special
>>> special.gammaln(np.float32(4.0))
Array(1.7917595, dtype=float32)
"""

from lamella.scipy.special.bessel import bessel_jn, i0, i0e, i1, i1e
from lamella.scipy.special.beta import beta, betainc, betaln
from lamella.scipy.special.boxcox import boxcox, boxcox1p
from lamella.scipy.special.combinatorics import bernoulli, comb, factorial, poch
from lamella.scipy.special.dilogarithm import spence
from lamella.scipy.special.error import erf, erfc, erfcx, erfinv
from lamella.scipy.special.exponential_integrals import exp1, expi, expn
from lamella.scipy.special.faddeeva import dawsn, wofz
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
from lamella.scipy.special.information import entr, kl_div, rel_entr, xlog1py, xlogy
from lamella.scipy.special.logistic import expit, logit
from lamella.scipy.special.normal import log_ndtr, ndtr, ndtri
from lamella.scipy.special.owens_t import owens_t
from lamella.scipy.special.softmax import log_softmax, logsumexp, softmax
from lamella.scipy.special.spherical import sph_harm_y
from lamella.scipy.special.trig_integrals import fresnel, sici
from lamella.scipy.special.zeta import zeta
