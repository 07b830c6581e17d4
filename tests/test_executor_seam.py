"""The one seam between core and a backend: with lamella.lax loaded, lax's primitives
run eagerly through XLA, and a primitive that only has a NumPy impl still runs
through its impl. Core's own test suite passes in a process where lax is loaded."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
from lamella.core.dispatch import Executor, current_executor
from lamella.core.structural import broadcast_in_dim

ROOT = pathlib.Path(__file__).resolve().parents[1]

cube_p = lc.Primitive("numpy_cube")
cube_p.def_impl(lambda x: np.asarray(x) ** 3)
cube_p.def_abstract_eval(lambda aval: aval)


def test_the_xla_executor_is_registered_and_declares_the_interface():
    executor = current_executor()
    assert executor.name == "xla" and isinstance(executor, Executor)


def test_an_impl_only_primitive_runs_eagerly_through_its_impl():
    np.testing.assert_array_equal(cube_p.bind(np.float32(2.0)), np.float32(8.0))


def test_an_impl_only_primitive_under_jit_names_the_missing_lowering():
    with pytest.raises(NotImplementedError, match="numpy_cube"):
        lc.jit(cube_p.bind)(np.float32(2.0))


def test_lax_and_structural_primitives_stay_on_the_device():
    x = lax.add(np.float32(1.0), np.float32(2.0))
    assert isinstance(x, lax.Array)
    assert isinstance(broadcast_in_dim(x, (3,), ()), lax.Array)


def test_core_tests_pass_with_lax_loaded():
    script = ("import sys, lamella.lax, pytest; "
              "sys.exit(pytest.main(['tests', '-q', '-x', '-p', 'no:cacheprovider']))")
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT / "packages" / "core",
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
