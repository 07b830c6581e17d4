"""The shared function checker from lamella.lax's test suite (values against a
reference, jit vs eager, float64 derivatives against central differences, vmap
against loops), loaded by path so both suites use one implementation.

lamella.numpy functions are compositions of primitives, which XLA may fuse
under jit (a * b + c as one FMA), so jit is compared with eager to 1e-6 here
rather than bit for bit.

    from checks import check
    check(lambda x: lnp.cumsum(x, 0), [x], lambda x: np.cumsum(x, 0))
"""

import importlib.util
import pathlib

import numpy as np

_PATH = pathlib.Path(__file__).resolve().parents[2] / "lax" / "tests" / "harness.py"
_spec = importlib.util.spec_from_file_location("lax_test_harness", _PATH)
_harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_harness)


def check(*args, jit_rtol: float = 1e-6, **kwargs):
    return _harness.check(*args, jit_rtol=jit_rtol, **kwargs)


def assert_close(got, want, dtype, tol: float = 2e-5) -> None:
    """`got` has exactly `dtype` and `want`'s shape, and values within `tol`."""
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


check_values = _harness.check_values
check_jit_matches_eager = _harness.check_jit_matches_eager
check_grads = _harness.check_grads
check_vmap = _harness.check_vmap
