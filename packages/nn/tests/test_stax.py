"""lamella.nn.stax: every layer's output shape (init_fun) against the shape its
apply_fun produces, and its values against a NumPy reference (convolutions and
pooling by explicit windows, on hypothesis layouts, strides and paddings);
JAX's recorded initial parameters and outputs for the same keys
(data/jax_stax_known_answers.json, written by benchmarks/record_jax_stax.py);
Dropout's keep-probability semantics; combinators; derivatives against finite
differences, vmap against loops, jit against eager; and bad input."""

import json
import math
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

import lamella.core as lc
import lamella.numpy as lnp
import lamella.random as lr
from lamella.lax.test_util import check_derivatives, check_vmap
from lamella.nn import stax

FEW = settings(max_examples=12, deadline=None)
KEY = lr.PRNGKey(0)
KNOWN = json.loads((pathlib.Path(__file__).parent / "data" / "jax_stax_known_answers.json")
                   .read_text())


def data(shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


def close(got, want, tol=2e-5):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


# --- NumPy references -------------------------------------------------------------------

def same_pads(size, window, stride):
    """TensorFlow's 'SAME': output ceil(size / stride), the extra padding mostly high."""
    total = max((math.ceil(size / stride) - 1) * stride + window - size, 0)
    return total // 2, total - total // 2


def forward_pads(sizes, windows, strides, padding):
    if padding == "VALID":
        return [(0, 0)] * len(sizes)
    if padding == "SAME":
        return [same_pads(n, k, s) for n, k, s in zip(sizes, windows, strides)]
    return [tuple(p) for p in padding]


def transpose_pads(windows, strides, padding):
    """Padding of the stride-dilated input for a transposed convolution: 'SAME'
    outputs size * stride, 'VALID' size * stride + max(kernel - stride, 0), and
    the input's first element lands on the kernel's first tap (Keras' layout)."""
    pads = []
    for k, s in zip(windows, strides):
        if padding == "VALID":
            pads.append((k - 1, s - 1 + max(k - s, 0)))
        elif padding == "SAME":
            lo = k - 1 if s > k - 1 else math.ceil((k + s - 2) / 2)
            pads.append((lo, k + s - 2 - lo))
        else:
            return [tuple(p) for p in padding]
    return pads


def np_conv(x, w, strides, pads, lhs_dilation=None):
    """Correlation of x (N, C, *spatial) with w (O, I, *window), explicit windows."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    if lhs_dilation is not None:
        sizes = [(n - 1) * d + 1 for n, d in zip(x.shape[2:], lhs_dilation)]
        dilated = np.zeros(x.shape[:2] + tuple(sizes))
        dilated[(..., *[slice(None, None, d) for d in lhs_dilation])] = x
        x = dilated
    x = np.pad(x, [(0, 0), (0, 0)] + list(pads))
    window = w.shape[2:]
    out_sizes = [(n - k) // s + 1 for n, k, s in zip(x.shape[2:], window, strides)]
    out = np.zeros((x.shape[0], w.shape[0], *out_sizes))
    for offset in np.ndindex(*window):
        patch = x[(slice(None), slice(None), *[slice(o, o + (m - 1) * s + 1, s) for o, m, s
                                               in zip(offset, out_sizes, strides)])]
        out += np.einsum("nc...,oc->no...", patch, w[(slice(None), slice(None), *offset)])
    return out


def canonical(spec, first_two):
    """The axis order that takes layout `spec` to (first_two..., spatial in HWD order)."""
    spatial = [c for c in "HWD" if c in spec]
    return [spec.index(c) for c in first_two] + [spec.index(c) for c in spatial]


def np_general_conv(x, w, b, dn, strides, padding, transpose=False):
    lhs, rhs, out = dn
    xc = np.transpose(x, canonical(lhs, "NC"))
    wc = np.transpose(w, canonical(rhs, "OI"))
    windows = wc.shape[2:]
    if transpose:
        y = np_conv(xc, wc, (1,) * len(windows), transpose_pads(windows, strides, padding),
                    lhs_dilation=strides)
    else:
        y = np_conv(xc, wc, strides, forward_pads(xc.shape[2:], windows, strides, padding))
    return np.transpose(y, np.argsort(canonical(out, "NC"))) + b


def np_pool(x, window, strides, padding, kind, spec=None):
    """Pooling over the spatial axes of x (batch and channel at spec's N and C)."""
    nd = len(window)
    spec = spec or "N" + "HWD"[:nd] + "C"
    perm = canonical(spec, "NC")
    xc = np.transpose(x.astype(np.float64), perm)
    pads = forward_pads(xc.shape[2:], window, strides, padding)
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(xc, [(0, 0), (0, 0)] + pads, constant_values=fill)
    counts = np.pad(np.ones(xc.shape[2:]), pads)
    sizes = [(n - k) // s + 1 for n, k, s in zip(xp.shape[2:], window, strides)]
    out = np.full(xc.shape[:2] + tuple(sizes), fill)
    covered = np.zeros(sizes)
    for offset in np.ndindex(*window):
        sl = tuple(slice(o, o + (m - 1) * s + 1, s) for o, m, s in zip(offset, sizes, strides))
        patch = xp[(slice(None), slice(None), *sl)]
        out = np.maximum(out, patch) if kind == "max" else out + patch
        covered += counts[sl]
    if kind == "avg":
        out = out / covered
    return np.transpose(out, np.argsort(perm))


# --- every layer: init's shape is apply's shape, values match NumPy ---------------------

def init_apply(layer, in_shape, x, seed=0, **kwargs):
    init_fun, apply_fun = layer
    out_shape, params = init_fun(lr.PRNGKey(seed), in_shape)
    out = apply_fun(params, x, **kwargs)
    shapes = out_shape if isinstance(out, list) else [out_shape]
    for s, o in zip(shapes, out if isinstance(out, list) else [out]):
        # -1 in an init shape stands for any batch size.
        assert len(s) == o.ndim and all(d in (-1, n) for d, n in zip(s, o.shape)), (s, o.shape)
    return params, out


def test_dense():
    x = data((2, 3, 4))
    (W, b), out = init_apply(stax.Dense(5), (2, 3, 4), x)
    assert W.shape == (4, 5) and b.shape == (5,)
    close(out, np.asarray(x, np.float64) @ np.asarray(W, np.float64) + np.asarray(b))


@st.composite
def conv_cases(draw, transpose):
    layout = draw(st.sampled_from([("NHWC", "HWIO", "NHWC"), ("NCHW", "OIHW", "NCHW"),
                                   ("NHC", "HIO", "NHC"), ("NCHW", "IOHW", "NHWC")]))
    nd = len(layout[0]) - 2
    window = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    strides = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    sizes = tuple(draw(st.integers(max(window), 5)) for _ in range(nd))
    explicit = st.tuples(*[st.tuples(st.integers(0, 2), st.integers(0, 2)) for _ in range(nd)])
    padding = draw(st.one_of(st.sampled_from(["SAME", "VALID"]), explicit))
    return layout, window, strides, sizes, padding


def conv_input_shape(layout, sizes, channels=2, batch=2):
    spatial = iter(sizes)
    return tuple(batch if c == "N" else channels if c == "C" else next(spatial)
                 for c in layout[0])


@FEW
@given(case=conv_cases(transpose=False), seed=st.integers(0, 1000))
def test_general_conv_against_numpy(case, seed):
    layout, window, strides, sizes, padding = case
    shape = conv_input_shape(layout, sizes)
    x = data(shape, seed)
    layer = stax.GeneralConv(layout, 3, window, strides, padding, b_init=stax.randn(1.0))
    (W, b), out = init_apply(layer, shape, x, seed)
    close(out, np_general_conv(x, np.asarray(W), np.asarray(b), layout, strides, padding))


@FEW
@given(case=conv_cases(transpose=True), seed=st.integers(0, 1000))
def test_general_conv_transpose_against_numpy(case, seed):
    layout, window, strides, sizes, padding = case
    shape = conv_input_shape(layout, sizes)
    x = data(shape, seed)
    layer = stax.GeneralConvTranspose(layout, 3, window, strides, padding,
                                      b_init=stax.randn(1.0))
    (W, b), out = init_apply(layer, shape, x, seed)
    close(out, np_general_conv(x, np.asarray(W), np.asarray(b), layout, strides, padding,
                               transpose=True))


def test_conv_transpose_output_sizes():
    # 'SAME' multiplies by the stride; 'VALID' adds what the kernel overhangs.
    for padding, want in [("SAME", (1, 8, 6, 2)), ("VALID", (1, 9, 6, 2))]:
        out_shape, _ = stax.ConvTranspose(2, (3, 1), (2, 2), padding)[0](KEY, (1, 4, 3, 5))
        assert out_shape == want
    assert stax.Conv1DTranspose(4, (2,), (3,))[0](KEY, (-1, 5, 1))[0] == (-1, 15, 4)


def test_conv_defaults_and_layout():
    out_shape, (W, b) = stax.Conv(4, (3, 2))[0](KEY, (-1, 6, 5, 3))
    assert out_shape == (-1, 4, 4, 4) and W.shape == (3, 2, 3, 4) and b.shape == (1, 1, 1, 4)
    # The bias starts at normal(1e-6): tiny but not zero.
    assert 0 < float(lnp.max(lnp.abs(b))) < 1e-5


@pytest.mark.parametrize("axis,center,scale", [((0, 1, 2), True, True), (0, True, False),
                                               ((0, 1), False, True), ((0,), False, False)])
def test_batch_norm(axis, center, scale):
    shape = (3, 2, 2, 4)
    x = data(shape, 3, scale=3.0) + 1.0
    layer = stax.BatchNorm(axis, epsilon=1e-3, center=center, scale=scale,
                           beta_init=stax.randn(1.0), gamma_init=stax.randn(1.0))
    (beta, gamma), out = init_apply(layer, shape, x)
    axes = (axis,) if isinstance(axis, int) else axis
    kept = tuple(d for i, d in enumerate(shape) if i not in axes)
    x64 = x.astype(np.float64)
    want = ((x64 - x64.mean(axes, keepdims=True))
            / np.sqrt(x64.var(axes, keepdims=True) + 1e-3))
    expand = tuple(None if i in axes else slice(None) for i in range(len(shape)))
    if scale:
        assert gamma.shape == kept
        want = want * np.asarray(gamma)[expand]
    if center:
        assert beta.shape == kept
        want = want + np.asarray(beta)[expand]
    assert isinstance(beta, tuple) is (not center) and isinstance(gamma, tuple) is (not scale)
    close(out, want, tol=1e-4)


@st.composite
def pool_cases(draw):
    nd = draw(st.integers(1, 2))
    window = tuple(draw(st.integers(1, 3)) for _ in range(nd))
    strides = draw(st.one_of(st.none(), st.tuples(*[st.integers(1, 3)] * nd)))
    sizes = tuple(draw(st.integers(max(window), 5)) for _ in range(nd))
    spec = draw(st.sampled_from([None, "NC" + "HW"[:nd], "C" + "HW"[:nd] + "N"]))
    return window, strides, sizes, draw(st.sampled_from(["SAME", "VALID"])), spec


@FEW
@given(case=pool_cases(), kind=st.sampled_from(["max", "sum", "avg"]))
def test_pooling_against_numpy(case, kind):
    window, strides, sizes, padding, spec = case
    layout = spec or "N" + "HW"[:len(window)] + "C"
    shape = conv_input_shape((layout,), sizes, channels=2, batch=2)
    x = data(shape, 5)
    layer = {"max": stax.MaxPool, "sum": stax.SumPool, "avg": stax.AvgPool}[kind](
        window, strides, padding, spec)
    _, out = init_apply(layer, shape, x)
    close(out, np_pool(x, window, strides or (1,) * len(window), padding, kind, spec))


def test_pooling_keeps_an_unknown_batch_size():
    # JAX's shape arithmetic turns -1 into 0 here; -1 is what the user meant.
    init_fun, _ = stax.serial(stax.Conv(2, (3, 3), padding="SAME"), stax.MaxPool((2, 2), (2, 2)),
                              stax.AvgPool((2, 2)), stax.Flatten)
    assert init_fun(KEY, (-1, 8, 8, 1))[0] == (-1, 18)


ACTIVATIONS = {
    "Tanh": np.tanh, "Relu": lambda x: np.maximum(x, 0), "Exp": np.exp,
    "Log": lambda x: np.log(np.abs(x)),
    "Sigmoid": special.expit, "Softplus": lambda x: np.logaddexp(x, 0),
    "Elu": lambda x: np.where(x > 0, x, np.expm1(x)),
    "LeakyRelu": lambda x: np.where(x >= 0, x, 0.01 * x),
    "Selu": lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
    "Gelu": lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
    "Softmax": lambda x: special.softmax(x, axis=-1),
    "LogSoftmax": lambda x: special.log_softmax(x, axis=-1),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_layers(name):
    x = data((3, 4), 7, scale=2.0)
    if name == "Log":
        x = np.abs(x)
    _, out = init_apply(getattr(stax, name), (-1, 4), x)
    close(out, ACTIVATIONS[name](x.astype(np.float64)), tol=1e-5)
    assert getattr(stax, name)[0](KEY, (-1, 4)) == ((-1, 4), ())


def test_flatten_identity_and_fans():
    x = data((2, 3, 4))
    _, out = init_apply(stax.Flatten, (-1, 3, 4), x)
    close(out, x.reshape(2, 12))
    _, out = init_apply(stax.Identity, (2, 3, 4), x)
    close(out, x)
    _, outs = init_apply(stax.FanOut(3), (2, 3, 4), x)
    assert len(outs) == 3 and all(o is x for o in outs)
    y = data((2, 3, 4), 1)
    assert stax.FanInSum[0](KEY, [(2, 3, 4), (2, 3, 4)]) == ((2, 3, 4), ())
    close(stax.FanInSum[1]((), [x, y, x]), 2 * x.astype(np.float64) + y)
    z = data((2, 3, 1), 2)
    init_fun, apply_fun = stax.FanInConcat(-1)
    assert init_fun(KEY, [(2, 3, 4), (2, 3, 1)]) == ((2, 3, 5), ())
    close(apply_fun((), [x, z]), np.concatenate([x, z], -1))
    assert stax.FanInConcat(1)[0](KEY, [(-1, 3, 4), (-1, 2, 4)])[0] == (-1, 5, 4)


def test_residual_block_with_parallel():
    block = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(3), stax.Identity),
                        stax.FanInSum, stax.Relu)
    x = data((4, 3))
    params, out = init_apply(block, (-1, 3), x)
    (_, ((W, b), ()), _, _) = params
    close(out, np.maximum(x @ np.asarray(W, np.float64) + np.asarray(b) + x, 0))


def test_parallel_init_returns_a_zip_iterator():
    init_fun, apply_fun = stax.parallel(stax.Dense(2), stax.Tanh)
    result = init_fun(KEY, [(-1, 3), (-1, 4)])
    assert isinstance(result, zip)
    shapes, params = result
    assert shapes == ((-1, 2), (-1, 4)) and params[1] == ()
    outs = apply_fun(params, [data((2, 3)), data((2, 4))])
    assert [o.shape for o in outs] == [(2, 2), (2, 4)]


def test_serial_splits_keys_per_layer():
    init_fun, apply_fun = stax.serial(stax.Dense(3), stax.Dense(3))
    _, (p1, p2) = init_fun(KEY, (-1, 3))
    k1, k2 = lr.split(lr.split(KEY)[0])
    # The second layer's key comes from splitting what the first split left.
    np.testing.assert_array_equal(p1[0], stax.Dense(3)[0](lr.split(KEY)[1], (-1, 3))[1][0])
    np.testing.assert_array_equal(p2[0], stax.Dense(3)[0](k2, (-1, 3))[1][0])
    assert not np.allclose(p1[0], p2[0])


def test_shape_dependent():
    layer = stax.shape_dependent(lambda shape: stax.Dense(shape[-1] + 1))
    x = data((2, 4))
    (W, _), out = init_apply(layer, (2, 4), x)
    assert W.shape == (4, 5) and out.shape == (2, 5)


# --- Dropout: rate is the probability of keeping ----------------------------------------

def test_dropout_keeps_with_probability_rate():
    rate = 0.3
    x = np.full((200, 50), 2.0, np.float32)
    init_fun, apply_fun = stax.Dropout(rate)
    assert init_fun(KEY, x.shape) == (x.shape, ())
    out = np.asarray(apply_fun((), x, rng=lr.PRNGKey(1)))
    kept = out != 0
    assert abs(kept.mean() - rate) < 0.02
    np.testing.assert_allclose(out[kept], 2.0 / rate, rtol=1e-6)
    # The mask is lamella.random.bernoulli's for that key.
    np.testing.assert_array_equal(kept, lr.bernoulli(lr.PRNGKey(1), rate, x.shape))


def test_dropout_needs_an_rng_in_both_modes():
    x = np.ones((2, 3), np.float32)
    for mode in ("train", "test"):
        with pytest.raises(ValueError, match="PRNG key"):
            stax.Dropout(0.5, mode)[1]((), x)
    np.testing.assert_array_equal(stax.Dropout(0.5, "test")[1]((), x, rng=KEY), x)


def test_serial_passes_rng_to_dropout_under_jit():
    net_init, net_apply = stax.serial(stax.Dense(8), stax.Dropout(0.5), stax.Dense(2))
    _, params = net_init(KEY, (-1, 3))
    x = data((4, 3))
    jitted = lc.jit(lambda p, x, k: net_apply(p, x, rng=k))
    a, b = jitted(params, x, lr.PRNGKey(1)), jitted(params, x, lr.PRNGKey(2))
    close(a, net_apply(params, x, rng=lr.PRNGKey(1)), tol=1e-6)
    assert not np.allclose(a, b)
    with pytest.raises(ValueError, match="PRNG key"):
        net_apply(params, x)


# --- JAX's numbers for the same keys ----------------------------------------------------

def fixed_input(shape):
    n = int(np.prod(shape))
    return (2 * np.sin(0.37 * np.arange(n) + 0.5)).astype(np.float32).reshape(shape)


@pytest.mark.parametrize("case", KNOWN["cases"], ids=lambda c: c["layer"][:50])
def test_jax_known_answers(case):
    init_fun, apply_fun = eval(case["layer"], vars(stax))
    out_shape, params = init_fun(lr.PRNGKey(case["seed"]), tuple(case["input_shape"]))
    want_shape = case["output_shape"]
    if "MaxPool" in case["layer"] and case["input_shape"][0] == -1:
        want_shape = [-1, *want_shape[1:]]  # see test_pooling_keeps_an_unknown_batch_size
    assert list(out_shape) == want_shape
    leaves = lc.tree_util.tree_leaves(params)
    assert len(leaves) == len(case["params"])
    for got, want in zip(leaves, case["params"]):
        close(np.ravel(got), want["values"], tol=1e-6)
        assert list(np.shape(got)) == want["shape"]
    out = apply_fun(params, fixed_input(tuple(case["apply_shape"])),
                    rng=lr.PRNGKey(case["seed"] + 1))
    assert list(out.shape) == case["output"]["shape"]
    close(np.ravel(out), case["output"]["values"], tol=2e-6)


# --- transformations --------------------------------------------------------------------

MLP = stax.serial(stax.Dense(4), stax.Tanh, stax.Dense(3), stax.LogSoftmax)
CNN = stax.serial(stax.Conv(2, (2, 2), padding="SAME"), stax.Relu, stax.AvgPool((2, 2)),
                  stax.Flatten, stax.Dense(2))


@pytest.mark.parametrize("layer,in_shape", [
    (MLP, (3, 5)),
    (CNN, (2, 4, 4, 1)),
    (stax.ConvTranspose(2, (2, 2), (2, 2), "SAME"), (1, 2, 2, 1)),
    (stax.BatchNorm(), (2, 2, 2, 3)),
    (stax.MaxPool((2, 2), padding="SAME"), (1, 3, 3, 2)),
], ids=["mlp", "cnn", "conv_transpose", "batch_norm", "max_pool"])
def test_derivatives_vmap_and_jit(layer, in_shape):
    init_fun, apply_fun = layer
    _, params = init_fun(KEY, in_shape)
    x = data(in_shape, 11)
    leaves, treedef = lc.tree_util.tree_flatten(params)

    def of_leaves(*args):
        return apply_fun(lc.tree_util.tree_unflatten(treedef, args[:-1]), args[-1])

    check_derivatives(of_leaves, [*leaves, x], diff_argnums=range(len(leaves) + 1),
                      rtol=1e-5, atol=1e-5)
    check_vmap(lambda x: apply_fun(params, x), [x])
    close(lc.jit(apply_fun)(params, x), apply_fun(params, x), tol=1e-6)


def test_a_stax_network_trains_with_an_optimizer():
    from lamella.nn import optimizers

    init_fun, apply_fun = MLP
    _, params = init_fun(KEY, (-1, 5))
    x = data((32, 5), 1)
    labels = (x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 0)
    onehot = np.eye(3, dtype=np.float32)[labels]
    loss = lambda p: -lnp.mean(lnp.sum(apply_fun(p, x) * onehot, -1))  # noqa: E731
    opt_init, opt_update, get_params = optimizers.adam(0.05)

    @lc.jit
    def step(i, state):
        return opt_update(i, lc.grad(loss)(get_params(state)), state)

    state = opt_init(params)
    before = float(loss(params))
    for i in range(100):
        state = step(i, state)
    assert float(loss(get_params(state))) < 0.3 * before


# --- bad input and names ----------------------------------------------------------------

def test_bad_input():
    with pytest.raises(ValueError, match="filter_shape"):
        stax.Conv(2, (3,))[0](KEY, (1, 4, 4, 1))
    with pytest.raises(ValueError, match="layout"):
        stax.Conv(2, (3, 3))[0](KEY, (4, 4, 1))
    with pytest.raises(ValueError, match="padding must be"):
        stax.ConvTranspose(2, (3, 3), padding="FULL")[0](KEY, (1, 4, 4, 1))


def test_names_match_jax_example_libraries_stax():
    jax_names = {
        "AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense",
        "Dropout", "Elu", "Exp", "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu",
        "GeneralConv", "GeneralConvTranspose", "Identity", "LeakyRelu", "LogSoftmax",
        "MaxPool", "Relu", "Selu", "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh",
        "elementwise", "elu", "gelu", "glorot", "glorot_normal", "leaky_relu", "log_softmax",
        "logsoftmax", "normal", "ones", "parallel", "randn", "relu", "selu", "serial",
        "shape_dependent", "sigmoid", "softmax", "softplus", "standardize", "zeros"}
    assert len(jax_names) == 48
    assert jax_names <= set(dir(stax))
    assert stax.glorot is stax.glorot_normal and stax.randn is stax.normal
    assert stax.logsoftmax is stax.log_softmax
