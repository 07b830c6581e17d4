"""lamella.core.dtypes and lamella.core.errors: JAX's `jax.dtypes` and `jax.errors`."""

import importlib.util

import numpy as np
import pytest

import lamella.core as lc
from lamella.core import dtypes, errors

HAS_ML_DTYPES = importlib.util.find_spec("ml_dtypes") is not None


def test_promotion_lattice():
    assert dtypes.result_type(np.int8, np.uint8) == np.int16
    assert dtypes.result_type(np.float16, 2.0) == np.float16
    assert dtypes.result_type(np.int32, 2.5) == np.float32
    assert dtypes.result_type(2, 2.0, return_weak_type_flag=True) == (np.float32, True)
    assert dtypes.result_type(np.ones(2, np.int64)) == np.int32  # canonical without x64
    with lc.enable_x64():
        assert dtypes.result_type(np.int32, np.uint32) == np.int64
    assert dtypes.promote_types(float, np.float16) == np.float16
    # Anything with a dtype takes part, as in JAX (solvers promote ShapeDtypeStructs).
    assert dtypes.result_type(lc.ShapeDtypeStruct((2,), np.float16), np.int8) == np.float16
    with pytest.raises(ValueError, match="at least one"):
        dtypes.result_type()
    with pytest.raises(TypeError, match="not a valid lamella type"):
        dtypes.result_type(object())


def test_strict_promotion_allows_only_weak_scalars_of_the_same_kind():
    with lc.config.override("numpy_dtype_promotion", "strict"):
        assert dtypes.result_type(np.float32, float) == np.float32
        assert dtypes.result_type(np.int32, int) == np.int32
        assert dtypes.result_type(np.int32, np.int32) == np.int32
        for a, b in [(np.int32, np.float32), (np.int32, float), (np.float16, np.float32),
                     (np.int8, np.int16), (np.float32, complex), (np.bool_, int)]:
            with pytest.raises(dtypes.TypePromotionError, match="strict"):
                dtypes.result_type(a, b)
    assert dtypes.result_type(np.int32, np.float32) == np.float32
    assert issubclass(dtypes.TypePromotionError, ValueError)


def test_issubdtype_finfo_iinfo_and_scalar_types():
    assert dtypes.issubdtype(np.float32, np.floating)
    assert not dtypes.issubdtype(np.int8, np.floating)
    assert dtypes.finfo(np.float64).bits == 64 and dtypes.finfo(1.0).bits == 32
    assert dtypes.iinfo(np.int8).max == 127
    assert dtypes.scalar_type_of(1.0) is float and dtypes.scalar_type_of(np.int8(1)) is int
    assert dtypes.scalar_type_of(True) is bool and dtypes.scalar_type_of(1j) is complex
    assert dtypes.itemsize_bits(np.float32) == 32 and dtypes.itemsize_bits(np.bool_) == 8
    assert dtypes.canonicalize_dtype(np.float64) == np.float32


@pytest.mark.skipif(not HAS_ML_DTYPES, reason="bfloat16 comes from ml_dtypes")
def test_ml_dtypes_names():
    import ml_dtypes
    assert dtypes.bfloat16 is ml_dtypes.bfloat16
    assert dtypes.issubdtype(dtypes.bfloat16, np.floating)
    assert float(dtypes.finfo(dtypes.bfloat16).eps) == 2.0 ** -7
    assert dtypes.itemsize_bits(ml_dtypes.int4) == 4
    with pytest.raises(dtypes.TypePromotionError, match="no implicit promotion"):
        dtypes.result_type(ml_dtypes.float8_e4m3fn, np.float32)


def test_extended_dtypes():
    class KeyDType:
        type = dtypes.prng_key
    assert dtypes.issubdtype(KeyDType(), dtypes.prng_key)
    assert dtypes.issubdtype(KeyDType(), dtypes.extended)
    assert not dtypes.issubdtype(KeyDType(), np.floating)
    assert not dtypes.issubdtype(np.float32, dtypes.extended)


def test_error_classes_are_jaxs():
    assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)
    assert issubclass(errors.ConcretizationTypeError, errors.JAXTypeError)
    assert issubclass(errors.JAXTypeError, TypeError)
    assert issubclass(errors.UnexpectedTracerError, TypeError)
    assert issubclass(errors.NonConcreteBooleanIndexError, errors.JAXIndexError)
    assert issubclass(errors.JAXIndexError, IndexError)
    assert issubclass(errors.KeyReuseError, errors.JAXTypeError)
    assert issubclass(errors.JaxRuntimeError, RuntimeError)


def test_if_on_a_tracer_raises_tracer_bool_conversion_error():
    def f(x):
        return 1.0 if x else 0.0
    with pytest.raises(errors.TracerBoolConversionError, match="bool"):
        lc.make_jaxpr(f)(np.float32(1.0))
