"""What lamella.nn's tests share: float32 data strategies that reach the edges
(±inf, NaN, huge, tiny, zero signs), and lamella.lax's test toolkit with jit
compared to eager to a tolerance (compositions fuse into FMAs under jit).

    from nn_testing import check, floats32
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lamella.lax import test_util
from lamella.lax.test_util import (  # noqa: F401  (re-exported for the tests)
    check_derivatives,
    check_vmap,
)

F32 = np.finfo(np.float32)
EDGES = (0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, float(F32.max), -float(F32.max),
         float(F32.tiny), -float(F32.tiny), 1e-45, 88.7, -88.7, 1e30, -1e30)


def floats32(edges: bool = True, nan: bool = True, lo: float | None = None,
             hi: float | None = None) -> st.SearchStrategy:
    """float32 scalars: mostly ordinary values, often one of EDGES (when `edges`)."""
    plain = st.floats(lo if lo is not None else -50.0, hi if hi is not None else 50.0,
                      width=32)
    if not edges:
        return plain
    picks = [e for e in EDGES if (nan or e == e)
             and (lo is None or e >= lo) and (hi is None or e <= hi)]
    return st.one_of(plain, st.sampled_from(picks),
                     st.floats(width=32, allow_nan=nan, allow_infinity=True,
                               min_value=lo, max_value=hi))


def arrays32(shape: tuple[int, ...], **kwargs) -> st.SearchStrategy:
    return hnp.arrays(np.float32, shape, elements=floats32(**kwargs))


def check(*args, jit_rtol: float = 1e-6, **kwargs):
    return test_util.check(*args, jit_rtol=jit_rtol, **kwargs)
