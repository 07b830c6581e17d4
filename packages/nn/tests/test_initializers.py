"""lamella.nn.initializers: JAX 0.10.2's numbers for the same key (a known-answer
table recorded by benchmarks/record_jax_initializers.py), fans for dense and
convolution kernels of every rank, variances and supports (fixed keys, bounds far
outside sampling error), orthogonality, jit and vmap, and errors."""

import builtins
import inspect
import json
import math
import pathlib

import numpy as np
import pytest

import lamella.core as lc
import lamella.numpy as lnp
import lamella.random as lr
from lamella.nn import initializers as init_lib

DATA = pathlib.Path(__file__).parent / "data" / "jax_initializers_known_answers.json"
CASES = json.loads(DATA.read_text())["cases"]
# QR goes through LAPACK, whose last bits vary between CPUs.
THROUGH_LAPACK = ("orthogonal", "delta_orthogonal")

PUBLIC = ["Initializer", "constant", "delta_orthogonal", "glorot_normal", "glorot_uniform",
          "he_normal", "he_uniform", "kaiming_normal", "kaiming_uniform", "lecun_normal",
          "lecun_uniform", "normal", "ones", "orthogonal", "truncated_normal", "uniform",
          "variance_scaling", "xavier_normal", "xavier_uniform", "zeros"]


def _initializer(case):
    builder = getattr(init_lib, case["name"])
    return builder if case["name"] in ("zeros", "ones") else builder(**case["kwargs"])


def _case_id(case):
    args = ",".join(f"{k}={v}" for k, v in case["kwargs"].items())
    return f"{case['name']}({args}){case['shape']}{case['dtype'] or ''}"


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_known_answers_from_jax(case):
    init = _initializer(case)
    with lc.enable_x64(case["x64"]):
        args = (lr.PRNGKey(case["seed"]), tuple(case["shape"]))
        if case["dtype"] is not None:
            args += (lnp.dtype(case["dtype"]),)
        if case["out"] is None:
            with pytest.raises(getattr(builtins, case["error"])):
                init(*args)
            return
        out = np.asarray(init(*args))
    want = case["out"]
    if isinstance(want, dict):
        want = np.asarray(want["real"]) + 1j * np.asarray(want["imag"])
    want = np.asarray(want).astype(out.dtype)
    assert str(out.dtype) == case["out_dtype"]
    assert out.shape == want.shape
    if case["name"] in THROUGH_LAPACK:
        eps = np.finfo(out.dtype).eps
        np.testing.assert_allclose(out, want, rtol=8 * eps, atol=8 * eps)
    else:
        np.testing.assert_array_equal(out, want)


def test_public_names_and_signatures():
    assert sorted(init_lib.__all__) == PUBLIC
    assert all(callable(getattr(init_lib, name)) for name in PUBLIC)
    for name in ("glorot_normal", "he_uniform", "lecun_normal", "xavier_uniform"):
        assert str(inspect.signature(getattr(init_lib, name))) == (
            "(in_axis: 'Axes' = -2, out_axis: 'Axes' = -1, batch_axis: 'Axes' = (), "
            "dtype: 'Any' = None) -> 'Initializer'")
    assert init_lib.xavier_normal is init_lib.glorot_normal
    assert init_lib.kaiming_uniform is init_lib.he_uniform
    for init in (init_lib.zeros, init_lib.glorot_normal(), init_lib.constant(1.0),
                 init_lib.orthogonal(), init_lib.delta_orthogonal()):
        assert isinstance(init, init_lib.Initializer)


# --- fans: the normal samples are scaled by exactly sqrt(scale / n) -------------------
FANS = [  # shape, axes, (fan_in, fan_out)
    ((5, 7), {}, (5, 7)),                                          # dense
    ((3, 4, 6), {}, (12, 18)),                                     # conv1d (w, in, out)
    ((3, 3, 4, 6), {}, (36, 54)),                                  # conv2d (h, w, in, out)
    ((2, 3, 3, 4, 6), {}, (72, 108)),                              # conv3d
    ((6, 4, 3, 3), {"in_axis": 1, "out_axis": 0}, (36, 54)),       # OIHW
    ((5,), {"in_axis": 0, "out_axis": 0}, (1, 1)),                 # 1-D: 5 / 5 / 5 * 5
    ((2, 3, 4, 6), {"in_axis": (0, 1), "out_axis": -1, "batch_axis": 2}, (6, 6)),
    ((4, 3, 5), {"batch_axis": 0}, (3, 5)),                        # batched dense
]
MODES = {"fan_in": lambda i, o: i, "fan_out": lambda i, o: o,
         "fan_avg": lambda i, o: (i + o) / 2, "fan_geo_avg": lambda i, o: math.sqrt(i * o)}


@pytest.mark.parametrize("shape, axes, fans", FANS, ids=[str(f[0]) for f in FANS])
def test_fans_of_dense_and_conv_kernels(shape, axes, fans):
    inits = [init_lib.variance_scaling(2.0, mode, "normal", **axes) for mode in MODES]
    # One compiled program per shape: eagerly, every step would compile on its own.
    unit, *scaled = lc.jit(lambda k: [lr.normal(k, shape)] + [i(k, shape) for i in inits])(
        lr.PRNGKey(3))
    for got, (mode, n) in zip(scaled, MODES.items()):
        np.testing.assert_allclose(got, np.asarray(unit, np.float64) * math.sqrt(2.0 / n(*fans)),
                                   rtol=2e-6, err_msg=mode)


# --- variances and supports -----------------------------------------------------------
SHAPE = (256, 256)  # 65536 samples: a variance estimate within ~0.6% (1 sigma)
N = math.prod(SHAPE)


def _moments(x):
    x = np.asarray(x).astype(np.complex128 if np.iscomplexobj(x) else np.float64)
    return np.mean(x), np.mean(np.abs(x) ** 2)


@pytest.mark.parametrize("distribution", ["truncated_normal", "normal", "uniform"])
@pytest.mark.parametrize("dtype", [np.float32, np.complex64], ids=["real", "complex"])
def test_variance_scaling_variance_and_support(distribution, dtype):
    init = init_lib.variance_scaling(3.0, "fan_avg", distribution, dtype=dtype)
    x = np.asarray(lc.jit(lambda k: init(k, SHAPE))(lr.PRNGKey(0)))
    assert x.dtype == dtype
    variance = 3.0 / 256
    mean, second = _moments(x)
    # Fixed key, so no flakes; 6% is about ten standard errors of the estimate.
    assert abs(mean) < 10 * math.sqrt(variance / N)
    assert abs(second / variance - 1) < 0.06, second / variance
    radius = np.abs(x).max()
    if distribution == "uniform":
        bound = math.sqrt((3.0 if dtype == np.float32 else 2.0) * variance)
        assert radius <= bound * (1 + 1e-6)
        assert radius > 0.99 * bound
    if distribution == "truncated_normal":
        untruncated = math.sqrt(variance) / (0.87962566103423978 if dtype == np.float32
                                             else 0.95311164380491208)
        assert radius <= 2 * untruncated * (1 + 1e-6)


@pytest.mark.parametrize("name, scale, n", [
    ("glorot_normal", 1.0, 256), ("glorot_uniform", 1.0, 256), ("he_normal", 2.0, 128),
    ("he_uniform", 2.0, 128), ("lecun_normal", 1.0, 128), ("lecun_uniform", 1.0, 128)])
def test_named_initializers_variance(name, scale, n):
    init = getattr(init_lib, name)()
    x = np.asarray(lc.jit(lambda k: init(k, (128, 384)))(lr.PRNGKey(1)), np.float64)
    assert abs(np.var(x) * n / scale - 1) < 0.06


def test_plain_distributions():
    key = lr.PRNGKey(2)
    inits = (init_lib.uniform(3.0), init_lib.normal(2.0),
             init_lib.truncated_normal(2.0, lower=-1.0, upper=0.5))
    u, x, t = (np.asarray(a, np.float64)
               for a in lc.jit(lambda k: [i(k, SHAPE) for i in inits])(key))
    assert u.min() >= 0 and u.max() < 3.0 and abs(u.mean() - 1.5) < 0.02
    assert abs(x.std() / 2.0 - 1) < 0.02
    assert t.min() >= -2.0 and t.max() <= 1.0
    assert np.array_equal(init_lib.constant(2.5, np.float16)(key, (2,)),
                          np.float16([2.5, 2.5]))
    assert init_lib.zeros(key, (2, 0)).shape == (2, 0)
    with lc.enable_x64():
        assert init_lib.normal()(key, (2,)).dtype == np.float64
        assert init_lib.ones(key, (2,)).dtype == np.float64


# --- orthogonal -----------------------------------------------------------------------
@pytest.mark.parametrize("shape, column_axis", [((4, 6), -1), ((6, 4), -1), ((2, 3, 4), 0),
                                                ((3, 5, 2), 1)])
def test_orthogonal_rows_or_columns(shape, column_axis):
    q = np.asarray(init_lib.orthogonal(scale=2.0, column_axis=column_axis)(lr.PRNGKey(5),
                                                                           shape), np.float64)
    assert q.shape == shape
    matrix = np.moveaxis(q, column_axis, -1).reshape(-1, shape[column_axis]) / 2.0
    small = min(matrix.shape)
    gram = matrix.T @ matrix if matrix.shape[0] >= matrix.shape[1] else matrix @ matrix.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-5)


@pytest.mark.parametrize("shape", [(3, 2, 4), (3, 5, 3, 3), (3, 3, 3, 2, 2)])
def test_delta_orthogonal_is_zero_off_centre(shape):
    w = np.asarray(init_lib.delta_orthogonal(scale=1.5)(lr.PRNGKey(4), shape), np.float64)
    centre = tuple((k - 1) // 2 for k in shape[:-2])
    matrix = w[centre]
    np.testing.assert_allclose(matrix.T @ matrix if shape[-2] >= shape[-1]
                               else matrix @ matrix.T, 2.25 * np.eye(min(shape[-2:])),
                               atol=1e-5)
    w[centre] = 0
    assert not w.any()


# --- transformations and errors -------------------------------------------------------
def test_jit_and_vmap():
    init = init_lib.glorot_uniform()
    key = lr.PRNGKey(0)
    eager = init(key, (3, 4))
    jitted = lc.jit(init, static_argnums=(1,))(key, (3, 4))
    np.testing.assert_allclose(jitted, eager, rtol=1e-6, atol=1e-7)
    keys = lr.split(key, 3)
    batched = lc.vmap(lambda k: init(k, (3, 4)))(keys)
    for i in range(3):
        np.testing.assert_allclose(batched[i], init(keys[i], (3, 4)), rtol=1e-6, atol=1e-7)
    typed = init(lr.key(0), (3, 4))
    np.testing.assert_array_equal(typed, eager)


def test_errors_name_the_problem():
    key = lr.PRNGKey(0)
    bad_mode = init_lib.variance_scaling(1.0, "fan_geo", "normal")  # built without error
    with pytest.raises(ValueError, match="invalid mode.*fan_geo"):
        bad_mode(key, (2, 3))
    with pytest.raises(ValueError, match="invalid distribution.*gaussian"):
        init_lib.variance_scaling(1.0, "fan_in", "gaussian")(key, (2, 3))
    with pytest.raises(ValueError, match="1-dimensional weights tensor with default in_axis"):
        init_lib.he_normal()(key, (8,))
    with pytest.raises(ValueError, match="out of range for a weights shape"):
        init_lib.he_normal(in_axis=3)(key, (2, 3))
    with pytest.raises(ValueError, match="at least a 2D shape"):
        init_lib.orthogonal()(key, (3,))
    with pytest.raises(ValueError, match="3D, 4D or 5D"):
        init_lib.delta_orthogonal()(key, (3, 3))
    with pytest.raises(ValueError, match="fan_in.*less or equal"):
        init_lib.delta_orthogonal()(key, (3, 3, 4, 2))
    with pytest.raises(TypeError, match="sequence of ints"):
        init_lib.normal()(key, 3)
