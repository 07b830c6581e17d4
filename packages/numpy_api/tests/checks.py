"""lamella.lax's test toolkit, with jit compared to eager to 1e-6 by default.

lamella.numpy functions are compositions of primitives, which XLA may fuse
under jit (a * b + c as one FMA), so jit is compared with eager to a
tolerance here rather than bit for bit.

    from checks import check
    check(lambda x: lnp.cumsum(x, 0), [x], lambda x: np.cumsum(x, 0))
"""

from lamella.lax import test_util
from lamella.lax.test_util import (  # noqa: F401  (re-exported for the tests)
    assert_close,
    check_derivatives,
    check_jit_matches_eager,
    check_values,
    check_vmap,
)


def check(*args, jit_rtol: float = 1e-6, **kwargs):
    return test_util.check(*args, jit_rtol=jit_rtol, **kwargs)
