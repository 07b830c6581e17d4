"""Comparing lamella.scipy.special with SciPy's float64 answers, in ulps of the
dtype under test, and the hypothesis strategies the special-function tests share.

    from special_accuracy import assert_ulps, floats
    assert_ulps(special.gamma(x), scipy.special.gamma(x.astype(np.float64)), np.float32, 8)
"""

import numpy as np
from hypothesis import strategies as st

SIZE = 8  # one array shape for every hypothesis case keeps the compiles few


def assert_ulps(got, want, dtype, ulps: float, atol: float = 0.0) -> None:
    """`got` has `dtype`, NaN and infinities where `want` has them, and elsewhere
    |got - want| <= ulps * eps * |want| + atol * eps (eps of `dtype`)."""
    got = np.asarray(got)
    want = np.broadcast_to(np.asarray(want, np.float64), got.shape)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    wide = got.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(wide), np.isnan(want), err_msg=f"{got} vs {want}")
    infinite = np.isinf(want)
    np.testing.assert_array_equal(wide[infinite], want[infinite], err_msg=f"{got} vs {want}")
    finite = np.isfinite(want)
    eps = np.finfo(dtype).eps
    err = np.abs(wide[finite] - want[finite])
    bound = ulps * eps * np.abs(want[finite]) + atol * eps
    # float32 cannot hold what underflows or overflows it.
    representable = np.abs(want[finite]) < np.finfo(dtype).max
    bad = (err > bound) & representable
    assert not bad.any(), (f"off by {np.max(err[bad] / (eps * np.abs(want[finite][bad])))} "
                           f"ulps at {np.flatnonzero(finite)[bad]}: {got} vs {want}")


def floats(low: float, high: float, dtype) -> st.SearchStrategy:
    """Arrays of SIZE values of `dtype` in [low, high], none subnormal: XLA on CPU
    flushes subnormals to zero (as in JAX), so SciPy would answer another question."""
    width = np.finfo(dtype).bits
    low, high = (float(np.asarray(v, dtype)) for v in (low, high))
    element = st.floats(low, high, width=width, allow_nan=False, allow_infinity=False,
                        allow_subnormal=False)
    return st.lists(element, min_size=SIZE, max_size=SIZE).map(lambda v: np.array(v, dtype))


def assert_vmap_matches_loop(fun, args, rtol: float = 1e-6) -> None:
    """vmap of `fun` over a leading batch axis of every argument (a batch of 3
    variations) against a Python loop: one compile, where the full matrix of
    `check_vmap` would need one per combination of batched arguments and axes."""
    import lamella.core as lc

    batched = [np.stack([np.asarray(a) * (1 + 0.05 * i) for i in range(3)]) for a in args]
    got = np.asarray(lc.vmap(fun)(*batched))
    want = np.stack([np.asarray(fun(*[b[i] for b in batched])) for i in range(3)])
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)
