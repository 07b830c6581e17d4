"""lamella.nn's helpers: logmeanexp, standardize, one_hot and the softmax family against
JAX 0.10.2's outputs (recorded by benchmarks/record_jax_activations.py) and float64
NumPy; masks, algorithms, derivatives, vmap, jit, dtypes and errors."""

import inspect
import json
import pathlib

import numpy as np
import pytest
from nn_testing import check

import lamella.core as lc
import lamella.numpy as lnp
from lamella import nn
from lamella.ops import special

DATA = json.loads((pathlib.Path(__file__).parent / "data" / "jax_activations.json").read_text())
X = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32) * 3
MASK = np.array([[True, False, True, True], [False] * 4, [True] * 4])

JAX_NN_NAMES = [
    "celu", "dot_product_attention", "elu", "gelu", "get_scaled_dot_general_config", "glu",
    "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "identity", "initializers",
    "leaky_relu", "log1mexp", "log_sigmoid", "log_softmax", "logmeanexp", "logsumexp", "mish",
    "one_hot", "relu", "relu6", "scaled_dot_general", "scaled_matmul", "selu", "sigmoid",
    "silu", "soft_sign", "softmax", "softplus", "sparse_plus", "sparse_sigmoid", "squareplus",
    "standardize", "swish", "tanh"]


def test_every_jax_nn_name_is_here():
    assert sorted(nn.__all__) == JAX_NN_NAMES
    assert all(hasattr(nn, name) for name in JAX_NN_NAMES)
    assert str(inspect.signature(nn.softmax)) == (
        "(x: 'Any', axis: 'Axis' = -1, where: 'Any' = None) -> 'Any'")
    assert nn.logsumexp is special.logsumexp and nn.log_softmax is special.log_softmax


def _decode(value):
    if isinstance(value, dict):
        return np.asarray(value["array"], dtype=value["dtype"])
    return tuple(value) if isinstance(value, list) else value


@pytest.mark.parametrize("case", DATA["functions"],
                         ids=[f"{c['fn']}-{i}" for i, c in enumerate(DATA["functions"])])
def test_outputs_match_jax(case):
    kwargs = {k: _decode(v) for k, v in case["kwargs"].items()}
    out = getattr(nn, case["fn"])(**kwargs)
    assert str(out.dtype) == case["dtype"]
    np.testing.assert_allclose(np.asarray(out, np.float64), np.asarray(case["out"]),
                               rtol=1e-6, atol=1e-6, equal_nan=True)


# --- logmeanexp -----------------------------------------------------------------------
def ref_logmeanexp(x, axis=None, where=None, keepdims=False):
    x = np.asarray(x, np.float64)
    w = np.ones(x.shape, bool) if where is None else np.broadcast_to(where, x.shape)
    with np.errstate(divide="ignore", invalid="ignore"):  # a row masked out entirely
        total = np.sum(np.where(w, np.exp(x), 0.0), axis=axis, keepdims=keepdims)
        return np.log(total / np.sum(w, axis=axis, keepdims=keepdims))


@pytest.mark.parametrize("axis, keepdims", [(None, False), (1, True), (0, False)])
def test_logmeanexp(axis, keepdims):
    check(lambda x: nn.logmeanexp(x, axis=axis, keepdims=keepdims), [X],
          lambda x: ref_logmeanexp(x, axis, keepdims=keepdims), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(nn.logmeanexp(X, axis=axis, where=MASK, keepdims=keepdims),
                               ref_logmeanexp(X, axis, MASK, keepdims), rtol=1e-6, atol=1e-6)
    big = np.float32([1000.0, 1000.0, 999.0])
    np.testing.assert_allclose(nn.logmeanexp(big), 1000 + np.log((2 + np.exp(-1)) / 3),
                               rtol=1e-7)
    assert nn.logmeanexp(np.int32([1, 2])).dtype == np.float32


# --- standardize ----------------------------------------------------------------------
def ref_standardize(x, axis=-1, epsilon=1e-5, where=None):
    x = np.asarray(x, np.float64)
    w = np.ones(x.shape, bool) if where is None else np.broadcast_to(where, x.shape)
    n = np.sum(w, axis=axis, keepdims=True)
    mean = np.sum(np.where(w, x, 0), axis=axis, keepdims=True) / n
    var = np.sum(np.where(w, (x - mean) ** 2, 0), axis=axis, keepdims=True) / n
    return (x - mean) / np.sqrt(var + epsilon)


@pytest.mark.parametrize("algorithm", ["fast", "stable"])
def test_standardize(algorithm):
    check(lambda x: nn.standardize(x, algorithm=algorithm), [X], ref_standardize,
          rtol=1e-5, atol=1e-5, grad_rtol=1e-5, grad_atol=1e-5)
    np.testing.assert_allclose(nn.standardize(X, axis=(0, 1), algorithm=algorithm),
                               ref_standardize(X, (0, 1)), rtol=1e-5, atol=1e-5)
    rows = MASK[[0, 2, 0]]
    np.testing.assert_allclose(nn.standardize(X, where=rows, algorithm=algorithm),
                               ref_standardize(X, where=rows), rtol=1e-5, atol=1e-5)


def test_standardize_fast_clips_a_negative_variance():
    # E[x^2] - E[x]^2 of a constant row is -0.1875 in float32; JAX's fast algorithm clips
    # it to 0, so only epsilon remains under the root. The values are JAX's.
    x = np.full((1, 7), 1000.1, np.float32)
    mean = lnp.mean(x, -1, keepdims=True)
    assert float((lnp.mean(lnp.square(x), -1, keepdims=True) - lnp.square(mean))[0, 0]) < 0
    np.testing.assert_allclose(nn.standardize(x), np.full((1, 7), -0.03860202), rtol=1e-6)
    np.testing.assert_allclose(nn.standardize(x, algorithm="stable"),
                               np.full((1, 7), -0.03857329), rtol=1e-6)


def test_standardize_with_given_statistics():
    out = nn.standardize(X, mean=1.0, variance=4.0, epsilon=0.0)
    np.testing.assert_allclose(out, (X - 1.0) / 2.0, rtol=1e-6)
    assert nn.standardize(np.int32([[1, 2, 3]])).dtype == np.float32


# --- one_hot --------------------------------------------------------------------------
def test_one_hot():
    x = np.int32([[0, 3], [2, -1]])
    want = (x[..., None] == np.arange(3)).astype(np.float32)
    check(lambda x: nn.one_hot(x, 3), [x], lambda x: want, diff_argnums=None)
    np.testing.assert_array_equal(nn.one_hot(x, 3, axis=0), np.moveaxis(want, -1, 0))
    np.testing.assert_array_equal(nn.one_hot(x, 3, axis=1), np.moveaxis(want, -1, 1))
    assert nn.one_hot(x, 3, dtype=lnp.bfloat16).dtype == lnp.bfloat16
    assert nn.one_hot(np.int32(2), 4).shape == (4,)
    with lc.enable_x64():
        assert nn.one_hot(x, 3).dtype == np.float64
    out = lc.jit(lambda x: nn.one_hot(x, 3))(x)
    np.testing.assert_array_equal(out, want)
    with pytest.warns(DeprecationWarning, match="integer-typed"):
        np.testing.assert_array_equal(nn.one_hot(np.float32([1.0]), 2), [[0.0, 1.0]])


def test_one_hot_errors():
    with pytest.raises(TypeError, match="num_classes must be a concrete integer"):
        lc.jit(lambda n: nn.one_hot(np.int32([0]), n))(3)
    with pytest.raises(ValueError, match="axis 3 is out of bounds"):
        nn.one_hot(np.int32([0, 1]), 2, axis=3)
    with pytest.raises(ValueError, match="named"):
        nn.one_hot(np.int32([0, 1]), 2, axis="batch")


def test_softmax_through_nn():
    np.testing.assert_allclose(nn.softmax(X, where=MASK),
                               special.softmax(X, -1, MASK), rtol=0, atol=0)
    with pytest.raises(TypeError, match="requires an array"):
        nn.standardize([1.0, 2.0])
    with pytest.raises(ValueError, match="Unknown algorithm 'exact'"):
        nn.standardize(X, algorithm="exact")
    with pytest.raises(ValueError, match="complex"):
        nn.standardize(X.astype(np.complex64))
