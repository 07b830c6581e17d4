"""float64 results against mpmath's 40-digit values (recorded by
benchmarks/record_special_mpmath.py), where SciPy's own float64 answers are too
loose to hold lamella to its accuracy: dawsn and wofz near the real axis and 0,
the Fresnel integrals far out, owens_t for small a, ndtr near its underflow, the
quantiles next to 0 and 1, Ci next to its zero at 3.38.
"""

import json
import pathlib

import numpy as np
import pytest

import lamella.core as lc
from lamella.scipy import special

TABLE = json.loads((pathlib.Path(__file__).parent / "data"
                    / "special_mpmath_known_answers.json").read_text())

# The function for each entry, and the largest error allowed, in ulps.
CASES = {
    "erfcx": (special.erfcx, 6),
    "ndtr": (special.ndtr, 4),
    "log_ndtr": (special.log_ndtr, 4),
    "ndtri": (special.ndtri, 6),
    "erfinv": (special.erfinv, 4),
    "dawsn": (special.dawsn, 6),
    "wofz": (special.wofz, 8),
    "fresnel_s": (lambda x: special.fresnel(x)[0], 4),
    "fresnel_c": (lambda x: special.fresnel(x)[1], 4),
    "sici_si": (lambda x: special.sici(x)[0], 4),
    "sici_ci": (lambda x: special.sici(x)[1], 16),  # ~0.02 from its zero: cancellation
    "owens_t": (special.owens_t, 8),
}


def _array(column):
    if column and isinstance(column[0], list):
        return np.array([complex(*v) for v in column])
    return np.array(column, np.float64)


@pytest.mark.parametrize("name", sorted(CASES))
def test_float64_against_mpmath(name):
    fun, ulps = CASES[name]
    entry = TABLE[name]
    args = [_array(column) for column in entry["args"]]
    want = _array(entry["want"])
    with lc.enable_x64():
        got = np.asarray(fun(*args))
    with np.errstate(divide="ignore", invalid="ignore"):
        err = np.abs(got - want) / np.abs(want) / np.finfo(np.float64).eps
    err[want == 0] = np.abs(got[want == 0])
    assert np.all(err <= ulps), {str(a): e for a, e in zip(zip(*args), err) if e > ulps}
