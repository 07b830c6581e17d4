"""lamella.nn's activations: JAX 0.10.2's values and derivatives on a grid from -inf to
NaN (recorded by benchmarks/record_jax_activations.py), float64 NumPy/SciPy formulas on
hypothesis inputs with ±inf, NaN, huge and tiny values, derivatives at the kinks,
numerical derivatives, vmap and jit, dtype rules and errors."""

import json
import pathlib

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from nn_testing import arrays32, check

import lamella.core as lc
import lamella.numpy as lnp
from lamella import nn

DATA = json.loads((pathlib.Path(__file__).parent / "data" / "jax_activations.json").read_text())
GRID = np.float32(DATA["grid"])
EPS = float(np.finfo(np.float32).eps)
TINY = float(np.finfo(np.float32).tiny)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946

FNS = {
    "celu": nn.celu, "elu": nn.elu, "gelu": nn.gelu, "hard_sigmoid": nn.hard_sigmoid,
    "hard_silu": nn.hard_silu, "hard_swish": nn.hard_swish, "hard_tanh": nn.hard_tanh,
    "identity": nn.identity, "leaky_relu": nn.leaky_relu, "log1mexp": nn.log1mexp,
    "log_sigmoid": nn.log_sigmoid, "mish": nn.mish, "relu": nn.relu, "relu6": nn.relu6,
    "selu": nn.selu, "sigmoid": nn.sigmoid, "silu": nn.silu, "soft_sign": nn.soft_sign,
    "softplus": nn.softplus, "sparse_plus": nn.sparse_plus,
    "sparse_sigmoid": nn.sparse_sigmoid, "squareplus": nn.squareplus, "swish": nn.swish,
    "tanh": nn.tanh,
    "gelu(approximate=False)": lambda x: nn.gelu(x, approximate=False),
    "leaky_relu(negative_slope=0.5)": lambda x: nn.leaky_relu(x, 0.5),
    "elu(alpha=2.0)": lambda x: nn.elu(x, 2.0),
    "celu(alpha=2.0)": lambda x: nn.celu(x, 2.0),
    "squareplus(b=1.0)": lambda x: nn.squareplus(x, 1.0),
}


# --- float64 references ---------------------------------------------------------------
def _squareplus(x, b=4.0):
    with np.errstate(all="ignore"):
        s = np.sqrt(x * x + b)
        # Without cancellation for x < 0: (x + s) / 2 = b / (2 (s - x)).
        return np.where(x >= 0, (x + s) / 2, b / (2 * (s - x)))


def _elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _log1mexp(x):
    return np.where(x < np.log(2), np.log(-np.expm1(-x)), np.log1p(-np.exp(-x)))


REFS = {
    "celu": lambda x, a=1.0: np.maximum(x, 0) + a * np.expm1(np.minimum(x, 0) / a),
    "elu": _elu,
    "gelu": lambda x: x * 0.5 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    "gelu(approximate=False)": lambda x: 0.5 * x * scipy.special.erfc(-x / np.sqrt(2)),
    "hard_sigmoid": lambda x: np.clip(x + 3, 0, 6) / 6,
    "hard_silu": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "hard_tanh": lambda x: np.clip(x, -1, 1),
    "identity": lambda x: x,
    "leaky_relu": lambda x, s=0.01: np.where(x >= 0, x, s * x),
    "log1mexp": _log1mexp,
    "log_sigmoid": lambda x: -np.logaddexp(0, -x),
    "mish": lambda x: x * np.tanh(np.logaddexp(0, x)),
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "selu": lambda x: SELU_SCALE * _elu(x, SELU_ALPHA),
    "sigmoid": scipy.special.expit,
    "silu": lambda x: x * scipy.special.expit(x),
    "soft_sign": lambda x: x / (np.abs(x) + 1),
    "softplus": lambda x: np.logaddexp(0, x),
    "sparse_plus": lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
    "sparse_sigmoid": lambda x: 0.5 * np.clip(x + 1, 0, 2),
    "squareplus": _squareplus,
    "tanh": np.tanh,
}
REFS |= {"hard_swish": REFS["hard_silu"], "swish": REFS["silu"],
         "leaky_relu(negative_slope=0.5)": lambda x: REFS["leaky_relu"](x, 0.5),
         "elu(alpha=2.0)": lambda x: _elu(x, 2.0),
         "celu(alpha=2.0)": lambda x: REFS["celu"](x, 2.0),
         "squareplus(b=1.0)": lambda x: _squareplus(x, 1.0)}


def _allowed_error(name, x, ref):
    """A few float32 ulps of the result, plus what float32 rounding of x itself costs:
    JAX's formulas cancel (squareplus for x < 0, gelu and silu in the far tails)."""
    x = np.abs(np.where(np.isfinite(x), x, 0.0).astype(np.float64))
    # Intermediates below float32's smallest normal are flushed to zero by XLA on CPU.
    tol = 8 * EPS * np.abs(np.where(np.isfinite(ref), ref, 0.0)) + 2 * TINY * (1 + x)
    if name.startswith("squareplus"):
        tol += 2 * EPS * x
    if name.startswith(("gelu", "silu", "swish", "mish")):
        tol += 1e-6 * np.minimum(x, 1e-1 / EPS) * (x < 20)
    return tol


def _assert_matches(name, got, ref, x):
    got = np.asarray(got, np.float64)
    with np.errstate(invalid="ignore"):  # results beyond float32's range round to ±inf
        ref = np.where(np.abs(ref) > np.finfo(np.float32).max, np.sign(ref) * np.inf, ref)
    both_nan = np.isnan(got) & np.isnan(ref)
    same_inf = np.isinf(ref) & (got == ref)
    with np.errstate(invalid="ignore"):
        err = np.where(both_nan | same_inf, 0.0, np.abs(got - ref))
    bad = ~(err <= _allowed_error(name, x, ref))
    assert not bad.any(), f"{name}: x={x[bad]} got={got[bad]} want={ref[bad]}"


# --- JAX's values and derivatives on a grid from -inf to NaN --------------------------
def _squareplus_overflows(x):
    # Where x**2 overflows float32, JAX returns inf (or NaN); lamella returns the value.
    return np.abs(x.astype(np.float64)) > np.sqrt(np.finfo(np.float32).max)


@pytest.mark.parametrize("name", list(FNS))
def test_values_match_jax_on_the_grid(name):
    got = np.asarray(FNS[name](GRID), np.float64)
    want = np.asarray(DATA["values"][name])
    if name.startswith("squareplus"):
        rescued = _squareplus_overflows(GRID)
        b = 1.0 if "b=1.0" in name else 4.0
        _assert_matches(name, got[rescued], _squareplus(GRID[rescued].astype(np.float64), b),
                        GRID[rescued])
        got, want = got[~rescued], want[~rescued]
    np.testing.assert_allclose(got, want, rtol=4 * EPS, atol=1e-38, equal_nan=True,
                               err_msg=name)


def _squareplus_slope(x, b=4.0):
    with np.errstate(all="ignore"):
        s = np.sqrt(x * x + b)
        return np.where(x >= 0, (1 + x / s) / 2, b / (2 * s * (s - x)))


@pytest.mark.parametrize("name", list(FNS))
def test_derivatives_match_jax_on_the_grid(name):
    got = np.asarray(lc.jit(lc.vmap(lc.grad(FNS[name])))(GRID), np.float64)
    want = np.asarray(DATA["grads"][name])
    keep = np.ones(GRID.shape, bool)
    if name.startswith("squareplus"):
        keep = ~_squareplus_overflows(GRID)
        b = 1.0 if "b=1.0" in name else 4.0
        rescued = ~keep & np.isfinite(GRID)
        np.testing.assert_allclose(got[rescued],
                                   _squareplus_slope(GRID[rescued].astype(np.float64), b),
                                   rtol=1e-6, atol=1e-38)
    if name in ("softplus", "log_sigmoid"):
        keep &= ~np.isnan(GRID)  # lamella.numpy's logaddexp has slope 1 at NaN (JAX: NaN)
    # The derivative rules of lax's primitives are written differently from JAX's
    # (tanh' as (1 - t)(1 + t) rather than 1 - t**2, for one), so the last bits differ,
    # and more where JAX's form cancels.
    np.testing.assert_allclose(got[keep], want[keep], rtol=1e-5, atol=4e-7, equal_nan=True,
                               err_msg=name)


# --- float64 formulas on hypothesis inputs --------------------------------------------
@pytest.mark.parametrize("name", list(FNS))
@settings(max_examples=25, deadline=None)
@given(x=arrays32((16,)))
def test_values_match_float64_formulas(name, x):
    if name.startswith("log1mexp"):
        x = np.abs(x)  # defined for x >= 0
    # XLA on CPU flushes subnormal inputs to zero (as JAX does); so does the reference.
    flushed = np.where(np.abs(x) < TINY, np.copysign(0.0, x), x)
    with np.errstate(all="ignore"):
        want = REFS[name](flushed.astype(np.float64))
    _assert_matches(name, FNS[name](x), want, x)


# --- derivatives: numerical away from kinks, JAX's choices at them --------------------
SMOOTH = np.float32([-4.2, -2.5, -1.7, -0.6, 0.3, 0.8, 1.4, 2.6, 4.1, 7.3])
ALL_OF_THEM = [f for name, f in FNS.items() if name != "log1mexp"]


def test_numerical_derivatives_vmap_and_jit():
    # All activations in one jitted function: one compile per transformation checked.
    check(lc.jit(lambda x: lnp.stack([f(x) for f in ALL_OF_THEM])), [SMOOTH],
          lambda x: np.stack([REFS[name](x.astype(np.float64)) for name in FNS
                              if name != "log1mexp"]),
          rtol=2e-6, atol=2e-6, grad_rtol=1e-5, grad_atol=1e-6, eps=1e-7)
    check(nn.log1mexp, [np.abs(SMOOTH)], lambda x: _log1mexp(x.astype(np.float64)),
          grad_rtol=1e-5, eps=1e-7)


KINKS = [  # function, point, JAX's derivative there
    (nn.relu, 0.0, 0.0), (nn.relu6, 0.0, 0.0), (nn.relu6, 6.0, 0.0),
    (nn.leaky_relu, 0.0, 1.0), (nn.elu, 0.0, 1.0), (lambda x: nn.elu(x, 2.5), 0.0, 2.5),
    (nn.celu, 0.0, 1.0), (lambda x: nn.celu(x, 3.0), 0.0, 1.0),
    (nn.hard_tanh, 1.0, 1.0), (nn.hard_tanh, -1.0, 1.0),
    (nn.hard_sigmoid, 3.0, 0.0), (nn.hard_sigmoid, -3.0, 0.0),
    (nn.sparse_sigmoid, 1.0, 0.25), (nn.sparse_sigmoid, -1.0, 0.25),
    (nn.sparse_plus, -1.0, 0.0), (nn.sparse_plus, 1.0, 1.0),
    (nn.log1mexp, 0.0, np.inf), (nn.selu, 0.0, SELU_SCALE * SELU_ALPHA),
]


@pytest.mark.parametrize("fn, x, slope", KINKS)
def test_derivatives_at_the_kinks(fn, x, slope):
    got = float(lc.grad(fn)(np.float32(x)))
    assert got == pytest.approx(slope, rel=1e-6), (x, got, slope)


def test_second_derivatives():
    x = np.float32([-1.5, 0.5, 2.0])
    np.testing.assert_allclose(lc.vmap(lc.grad(lc.grad(nn.softplus)))(x),
                               scipy.special.expit(x) * scipy.special.expit(-x), rtol=1e-6)
    np.testing.assert_allclose(lc.vmap(lc.grad(lc.grad(nn.relu)))(x), 0.0)


# --- dtypes and errors ----------------------------------------------------------------
DTYPE_INPUTS = {
    "int32": np.int32([1, 2]), "bool": np.array([True, False]),
    "float16": np.float16([1, 2]), "bfloat16": lnp.asarray([1, 2], lnp.bfloat16),
    "python_float": 2.0, "python_int": 2, "uint8": np.uint8([1, 2]),
}


@pytest.mark.parametrize("name", sorted(DATA["dtypes"]))
def test_dtypes_and_weak_types_as_jax(name):
    for kind, want in DATA["dtypes"][name].items():
        fn = getattr(nn, name)
        if want[0].isupper():  # JAX raised; lamella raises a clear error of its own
            with pytest.raises((TypeError, ValueError)):
                fn(DTYPE_INPUTS[kind])
            continue
        out = fn(DTYPE_INPUTS[kind])
        got = str(out.dtype) + ("w" if out.weak_type else "")
        assert got == want, (name, kind, got, want)


COMPLEX = np.complex64([1 + 1j, -2 + 0.5j, 0 - 1j, 0.5 + 0j])


@pytest.mark.parametrize("name", ["sigmoid", "silu", "tanh", "soft_sign", "squareplus",
                                  "gelu", "identity"])
def test_complex_inputs(name):
    z = COMPLEX.astype(np.complex128)
    ref = {"sigmoid": lambda z: 1 / (1 + np.exp(-z)), "silu": lambda z: z / (1 + np.exp(-z)),
           "tanh": np.tanh, "soft_sign": lambda z: z / (np.abs(z) + 1),
           "squareplus": lambda z: (z + np.sqrt(z * z + 4)) / 2,
           "gelu": REFS["gelu"], "identity": lambda z: z}[name]
    out = getattr(nn, name)(COMPLEX)
    assert out.dtype == np.complex64
    np.testing.assert_allclose(out, ref(z), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", ["relu", "relu6", "elu", "celu", "selu", "leaky_relu",
                                  "hard_tanh", "hard_sigmoid", "hard_silu", "sparse_plus",
                                  "log1mexp", "softplus", "log_sigmoid", "mish"])
def test_thresholds_refuse_complex_input(name):
    with pytest.raises(TypeError, match=f"{name} compares its input with thresholds"):
        getattr(nn, name)(COMPLEX)


def test_errors_name_the_mistake():
    with pytest.raises(TypeError, match="relu requires an array, got a list"):
        nn.relu([1.0, 2.0])
    with pytest.raises(TypeError, match="sigmoid requires a floating-point.*int32"):
        nn.sigmoid(np.int32([1]))
    with pytest.raises(TypeError, match="silu requires a floating-point"):
        nn.silu(2)
    with pytest.raises(ValueError, match="glu splits axis 0 in two halves.*3"):
        nn.glu(np.ones((3, 2), np.float32), axis=0)
    with pytest.raises(ValueError, match="sparse_sigmoid compares its input"):
        nn.sparse_sigmoid(COMPLEX)


def test_glu():
    x = np.float32([[1.0, -2.0, 0.5, 3.0], [0.0, 4.0, -1.0, 2.0]])
    want = x[:, :2] * scipy.special.expit(x[:, 2:])
    check(nn.glu, [x], lambda x: want, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(nn.glu(x.T, axis=0), want.T, rtol=1e-6)
