"""Comparing lamella.scipy.stats with float64 references, in ulps of the dtype under
test, and the hypothesis strategies the stats tests share.

    assert_ulps_of(got, want, np.float32, 8, log=True)

Log-densities and log-probabilities cross 0, where only absolute accuracy means
anything, so `log=True` measures their error in ulps of max(1, |want|).
"""

import json
import pathlib

import numpy as np
from hypothesis import strategies as st

SIZE = 8  # one shape for every hypothesis case keeps the compiles few
DTYPES = [np.float32, np.float64]
KNOWN_ANSWERS = json.loads((pathlib.Path(__file__).parent / "data"
                            / "stats_mpmath_known_answers.json").read_text())


def assert_ulps_of(got, want, dtype, ulps: float, log: bool = False, where=None,
                   exponential: bool = False) -> None:
    """`got` has `dtype`, NaN and infinities exactly where `want` has them, and
    elsewhere |got - want| <= ulps * eps * |want| (max(1, |want|) if `log`).
    Points where `want` is not a normal number of `dtype` are skipped, and so are
    those outside `where` (a boolean mask) if given.

    `exponential` marks a value computed as exp(log-value) (a pdf far from 1):
    exp turns the log's absolute error into a relative one, so the allowance
    grows with max(1, |log want|).
    """
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    want = np.broadcast_to(np.asarray(want, np.float64), got.shape)
    wide = got.astype(np.float64)
    keep = np.ones(got.shape, bool) if where is None else np.broadcast_to(where, got.shape)
    np.testing.assert_array_equal(np.isnan(wide)[keep], np.isnan(want)[keep],
                                  err_msg=f"NaNs differ: {got} vs {want}")
    infinite = np.isinf(want) & keep
    np.testing.assert_array_equal(wide[infinite], want[infinite], err_msg=f"{got} vs {want}")
    info = np.finfo(dtype)
    normal = np.isfinite(want) & (np.abs(want) >= info.tiny) & (np.abs(want) <= info.max) & keep
    scale = np.maximum(np.abs(want), 1.0) if log else np.abs(want)
    if exponential:
        with np.errstate(divide="ignore"):
            scale = scale * np.maximum(np.abs(np.log(np.abs(want))), 1.0)
    err = np.abs(wide - want) / (info.eps * scale)
    bad = normal & ~(err <= ulps)
    assert not bad.any(), (f"off by {np.max(np.where(bad, err, 0))} ulps (allowed {ulps}) at "
                           f"{np.flatnonzero(bad)}: {got} vs {want}")


def unit() -> st.SearchStrategy:
    """SIZE float64 values in [0, 1], to be mapped onto each distribution's range
    (no subnormals: XLA on CPU flushes them to zero, as JAX does)."""
    element = st.floats(0.0, 1.0, allow_nan=False, allow_subnormal=False)
    return st.lists(element, min_size=SIZE, max_size=SIZE).map(np.array)


def log_spread(u, low: float, high: float):
    """u in [0, 1] spread log-uniformly over [low, high]."""
    return np.exp(np.log(low) + np.asarray(u) * (np.log(high) - np.log(low)))


def signed(u, low: float, high: float):
    """Both signs, magnitudes log-uniform over [low, high]: |2u - 1| sets the size."""
    u = np.asarray(u)
    return np.where(u < 0.5, -1.0, 1.0) * log_spread(np.abs(2 * u - 1), low, high)


def probabilities(u):
    """Probabilities from 1e-30 to 1 - 1e-7 with both tails represented."""
    u = np.asarray(u)
    tail = log_spread(np.abs(2 * u - 1), 1e-30, 0.5)
    return np.where(u < 0.5, tail, 1 - tail * 0.999)


def flush_subnormals(x):
    """x with subnormal values set to zero, as XLA on CPU reads them."""
    x = np.asarray(x)
    return np.where(np.abs(x) < np.finfo(x.dtype).tiny, np.zeros_like(x), x)
