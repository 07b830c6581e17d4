"""Abstract values, dtype canonicalization, weak types, float0, configuration."""

import os
import subprocess
import sys

import numpy as np
import pytest

import lamella.core as lc
from lamella.core import ShapedArray, ShapeDtypeStruct, config, dtypes, get_aval
from lamella.core.config import NO_OVERRIDE


def test_shaped_array_basics():
    a = ShapedArray((5, 10), np.float32)
    assert a.str_short() == "f32[5,10]" and a.ndim == 2 and a.size == 50
    assert repr(ShapedArray((), np.int32, weak_type=True)) == "ShapedArray(int32[], weak_type=True)"
    assert a == ShapedArray([5, 10], "float32") and hash(a) == hash(ShapedArray((5, 10), "f4"))
    assert a != a.update(weak_type=True)
    assert ShapedArray((3,), np.int32).to_tangent_aval().dtype == lc.float0
    assert ShapedArray((3,), np.bool_).str_short() == "bool[3]"


def test_canonicalization_follows_x64():
    assert get_aval(np.ones(2)).dtype == np.float32
    assert get_aval(np.int64(1)).dtype == np.int32
    assert get_aval(1.0) == ShapedArray((), np.float32, weak_type=True)
    assert get_aval(True) == ShapedArray((), np.bool_)
    assert get_aval(1j).dtype == np.complex64
    with lc.enable_x64():
        assert get_aval(np.ones(2)).dtype == np.float64
        assert get_aval(1).dtype == np.int64
    assert dtypes.canonicalize_dtype(np.uint64) == np.uint32


def test_bad_values_are_rejected_with_their_type():
    with pytest.raises(TypeError, match="of type <class 'str'> is not a valid lamella type"):
        get_aval("abc")


def test_shape_dtype_struct():
    s = ShapeDtypeStruct((2, 3), np.float64)
    assert repr(s) == "ShapeDtypeStruct(shape=(2, 3), dtype=float64)"
    assert get_aval(s) == ShapedArray((2, 3), np.float32)
    assert s.size == 6 and s.ndim == 2 and s == ShapeDtypeStruct((2, 3), "float64")


def test_config_update_override_and_errors():
    assert config.read("enable_x64") is False
    with config.override("jax_enable_x64", True):
        assert config.enable_x64 is True
    assert config.enable_x64 is False
    with pytest.raises(AttributeError, match="Unrecognized config option: 'nonsense'"):
        config.update("nonsense", 1)
    seen = []
    config.observe("debug_nans", lambda value, local: seen.append((value, local)))
    config.update("debug_nans", True)
    config.update("debug_nans", False)
    with config.override("debug_nans", True):
        pass
    assert seen == [(True, False), (False, False), (True, True), (NO_OVERRIDE, True)]


def test_overrides_are_thread_local():
    import threading
    results = []
    with lc.enable_x64():
        t = threading.Thread(target=lambda: results.append(config.read("enable_x64")))
        t.start()
        t.join()
    assert results == [False]


def test_environment_variable_turns_on_x64():
    env = dict(os.environ, LAMELLA_ENABLE_X64="1")
    out = subprocess.run([sys.executable, "-c", "import lamella.core as lc, numpy as np; "
                          "print(lc.get_aval(np.ones(1)).dtype)"], env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "float64"


def test_core_never_imports_jaxlib():
    code = ("import sys, lamella.core, lamella.core.tree_util; "
            "print(any(m.startswith('jaxlib') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_version():
    assert lc.__version__ == "0.1.0"
