"""Stax: neural networks as pairs of functions, `jax.example_libraries.stax`.

A layer is a pair `(init_fun, apply_fun)`:

- `init_fun(rng, input_shape) -> (output_shape, params)` draws the layer's
  parameters from a `lamella.random` key; shapes may hold -1 for a batch size
  not yet known;
- `apply_fun(params, inputs, **kwargs) -> outputs` is pure lamella.numpy, so
  it runs under `jit`, `grad` and `vmap`. Layers that need randomness
  (`Dropout`) take `rng=` among the keyword arguments.

Combinators (`serial`, `parallel`, `FanOut`, `FanInSum`, `FanInConcat`,
`shape_dependent`) build networks out of layers. The same key gives JAX's
initial parameters: the initializers are `lamella.nn.initializers`, which
reproduce JAX's numbers, and keys are split as stax splits them.

One deliberate difference: a -1 batch size stays -1 through the pooling
layers' output shapes (JAX's arithmetic turns it into 0).

>>> import lamella.random as lr
>>> init_fun, apply_fun = serial(Dense(16), Relu, Dense(3), LogSoftmax)
>>> out_shape, params = init_fun(lr.PRNGKey(0), (-1, 8))
>>> out_shape
(-1, 3)
>>> apply_fun(params, lnp.ones((5, 8))).shape
(5, 3)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import lamella.lax as lax
import lamella.numpy as lnp
import lamella.random as lr
from lamella.nn import (
    elu,
    gelu,
    leaky_relu,
    log_softmax,
    relu,
    selu,
    sigmoid,
    softmax,
    softplus,
    standardize,
)
from lamella.nn.initializers import glorot_normal, normal, ones, zeros

__all__ = ["AvgPool", "BatchNorm", "Conv", "Conv1DTranspose", "ConvTranspose", "Dense",
           "Dropout", "Elu", "Exp", "FanInConcat", "FanInSum", "FanOut", "Flatten", "Gelu",
           "GeneralConv", "GeneralConvTranspose", "Identity", "LeakyRelu", "Log", "LogSoftmax",
           "MaxPool", "Relu", "Selu", "Sigmoid", "Softmax", "Softplus", "SumPool", "Tanh",
           "elementwise", "elu", "gelu", "glorot", "glorot_normal", "leaky_relu", "log_softmax",
           "logsoftmax", "normal", "ones", "parallel", "randn", "relu", "selu", "serial",
           "shape_dependent", "sigmoid", "softmax", "softplus", "standardize", "zeros"]

glorot = glorot_normal
randn = normal
logsoftmax = log_softmax

Shape = Any  # a tuple of ints (-1 for an unknown batch size), or a list of them
InitFun = Callable[[Any, Shape], tuple[Shape, Any]]
ApplyFun = Callable[..., Any]
Layer = tuple[InitFun, ApplyFun]
Initializer = Callable[[Any, Sequence[int]], Any]

# JAX's default initializers, built once and shared by every layer, as JAX's are.
_WEIGHTS = glorot_normal()
_BIASES = normal()
_CONV_BIASES = normal(1e-6)


# --- shape arithmetic -------------------------------------------------------------------
# lamella.lax has no conv_general_shape_tuple, conv_transpose(_shape_tuple) or
# reduce_window_shape_tuple; these work on plain ints so that a -1 batch size
# passes through init_fun untouched.

def _conv_output_shape(input_shape: Shape, kernel_shape: Shape,
                       spatial_sizes: Callable[[list, list], list],
                       dimension_numbers: Sequence[str]) -> tuple[int, ...]:
    """The output shape of a convolution whose spatial sizes `spatial_sizes(in, kernel)` gives."""
    # Axis permutations (batch or out-feature, feature or in-feature, spatial...).
    dn = lax.conv_dimension_numbers(input_shape, kernel_shape, dimension_numbers)
    spatial = spatial_sizes([input_shape[i] for i in dn.lhs_spec[2:]],
                            [kernel_shape[i] for i in dn.rhs_spec[2:]])
    out = [0] * len(input_shape)
    out[dn.out_spec[0]] = input_shape[dn.lhs_spec[0]]
    out[dn.out_spec[1]] = kernel_shape[dn.rhs_spec[0]]
    for axis, size in zip(dn.out_spec[2:], spatial):
        out[axis] = size
    return tuple(out)


def _transpose_padding(kernel: int, stride: int, padding: str) -> tuple[int, int]:
    """Padding of the stride-dilated input that makes a transposed convolution the
    gradient of a forward convolution with `padding` ('SAME' or 'VALID')."""
    if padding.upper() == "SAME":
        total = kernel + stride - 2
        before = kernel - 1 if stride > kernel - 1 else math.ceil(total / 2)
    elif padding.upper() == "VALID":
        total = kernel + stride - 2 + max(kernel - stride, 0)
        before = kernel - 1
    else:
        raise ValueError(f"padding must be 'SAME', 'VALID' or a sequence of (low, high) pairs, "
                         f"got {padding!r}")
    return before, total - before


def _transpose_pads(kernel_sizes: Sequence[int], strides: Sequence[int],
                    padding: Any) -> list[tuple[int, int]]:
    if isinstance(padding, str):
        return [_transpose_padding(k, s, padding) for k, s in zip(kernel_sizes, strides)]
    return [tuple(p) for p in padding]


def _conv_transpose(inputs: Any, kernel: Any, strides: Sequence[int], padding: Any,
                    dimension_numbers: Sequence[str]) -> Any:
    """JAX's `lax.conv_transpose` (without kernel flipping): a convolution of the
    input dilated by `strides`, with the padding that undoes a forward conv's."""
    dn = lax.conv_dimension_numbers(inputs.shape, kernel.shape, dimension_numbers)
    kernel_sizes = [kernel.shape[i] for i in dn.rhs_spec[2:]]
    pads = _transpose_pads(kernel_sizes, strides, padding)
    one = (1,) * len(strides)
    return lax.conv_general_dilated(inputs, kernel, one, pads, lhs_dilation=strides,
                                    rhs_dilation=one, dimension_numbers=dimension_numbers)


def _window_output_shape(input_shape: Shape, window: Sequence[int], strides: Sequence[int],
                         padding: Any) -> tuple[int, ...]:
    pads = lax.padtype_to_pads(input_shape, window, strides, padding)
    # (-1 + 0 + 0 - 1) // 1 + 1 = -1: an unknown batch size stays unknown.
    return tuple((d + lo + hi - w) // s + 1
                 for d, w, s, (lo, hi) in zip(input_shape, window, strides, pads))


# --- layers with parameters -------------------------------------------------------------

def Dense(out_dim: int, W_init: Initializer = _WEIGHTS, b_init: Initializer = _BIASES) -> Layer:
    """A fully connected layer: `inputs @ W + b` on the last axis.

    >>> init_fun, apply_fun = Dense(3)
    >>> out_shape, (W, b) = init_fun(lr.PRNGKey(0), (-1, 4))
    >>> out_shape, W.shape, b.shape
    ((-1, 3), (4, 3), (3,))
    """
    def init_fun(rng, input_shape):
        output_shape = tuple(input_shape[:-1]) + (out_dim,)
        k1, k2 = lr.split(rng)
        return output_shape, (W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,)))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return lnp.dot(inputs, W) + b

    return init_fun, apply_fun


def _kernel_shape(dimension_numbers: Sequence[str], out_chan: int,
                  filter_shape: Sequence[int], input_shape: Shape) -> list[int]:
    lhs_spec, rhs_spec, _ = dimension_numbers
    n_spatial = len(rhs_spec) - 2
    if len(filter_shape) != n_spatial:
        raise ValueError(f"filter_shape {tuple(filter_shape)} must have one size per spatial "
                         f"dimension of the kernel layout {rhs_spec!r} ({n_spatial})")
    if len(input_shape) != len(lhs_spec):
        raise ValueError(f"the input shape {tuple(input_shape)} does not match the input "
                         f"layout {lhs_spec!r}")
    sizes = iter(filter_shape)
    return [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
            else next(sizes) for c in rhs_spec]


def _conv_init(dimension_numbers: Sequence[str], out_chan: int, filter_shape: Sequence[int],
               spatial_sizes: Any, W_init: Initializer, b_init: Initializer) -> Any:
    """The `init_fun` shared by the convolutions: kernel, output and bias shapes from
    the layouts, `spatial_sizes(sizes, kernel_sizes)` giving the output's spatial sizes."""
    out_spec = dimension_numbers[2]

    def init_fun(rng, input_shape):
        kernel_shape = _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape)
        output_shape = _conv_output_shape(input_shape, kernel_shape, spatial_sizes,
                                          dimension_numbers)
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = lr.split(rng)
        return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))
    return init_fun


def GeneralConv(dimension_numbers: Sequence[str], out_chan: int, filter_shape: Sequence[int],
                strides: Sequence[int] | None = None, padding: Any = "VALID",
                W_init: Initializer | None = None, b_init: Initializer = _CONV_BIASES) -> Layer:
    """A convolution with layouts `dimension_numbers = (input, kernel, output)`,
    e.g. `('NCHW', 'OIHW', 'NCHW')`, plus a bias per output channel.

    >>> init_fun, apply_fun = GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (3, 3), padding="SAME")
    >>> out_shape, (W, b) = init_fun(lr.PRNGKey(0), (-1, 2, 8, 8))
    >>> out_shape, W.shape, b.shape
    ((-1, 4, 8, 8), (4, 2, 3, 3), (1, 4, 1, 1))
    """
    rhs_spec = dimension_numbers[1]
    one = (1,) * len(filter_shape)
    strides = tuple(strides or one)
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def spatial_sizes(sizes, kernel_sizes):
        pads = (lax.padtype_to_pads(sizes, kernel_sizes, strides, padding)
                if isinstance(padding, str) else padding)
        return [max(0, (d + lo + hi - k) // s + 1)
                for d, k, s, (lo, hi) in zip(sizes, kernel_sizes, strides, pads)]

    init_fun = _conv_init(dimension_numbers, out_chan, filter_shape, spatial_sizes, W_init,
                          b_init)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                        dimension_numbers=dimension_numbers) + b

    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))
Conv.__doc__ = "`GeneralConv` with layouts ('NHWC', 'HWIO', 'NHWC')."


def GeneralConvTranspose(dimension_numbers: Sequence[str], out_chan: int,
                         filter_shape: Sequence[int], strides: Sequence[int] | None = None,
                         padding: Any = "VALID", W_init: Initializer | None = None,
                         b_init: Initializer = _CONV_BIASES) -> Layer:
    """A transposed convolution (the gradient of a strided convolution, so it
    upsamples by `strides`) with layouts `dimension_numbers`, plus a bias.

    'SAME' gives `input size * stride`, 'VALID' `input size * stride + max(kernel - stride, 0)`;
    explicit `(low, high)` pairs pad the stride-dilated input directly.

    >>> init_fun, apply_fun = GeneralConvTranspose(("NHWC", "HWIO", "NHWC"), 2, (3, 3),
    ...                                            strides=(2, 2), padding="SAME")
    >>> out_shape, params = init_fun(lr.PRNGKey(0), (1, 4, 4, 3))
    >>> out_shape, apply_fun(params, lnp.ones((1, 4, 4, 3))).shape
    ((1, 8, 8, 2), (1, 8, 8, 2))
    """
    rhs_spec = dimension_numbers[1]
    one = (1,) * len(filter_shape)
    strides = tuple(strides or one)
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def spatial_sizes(sizes, kernel_sizes):
        pads = _transpose_pads(kernel_sizes, strides, padding)
        return [(d - 1) * s - k + 2 + lo + hi
                for d, k, s, (lo, hi) in zip(sizes, kernel_sizes, strides, pads)]

    init_fun = _conv_init(dimension_numbers, out_chan, filter_shape, spatial_sizes, W_init,
                          b_init)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return _conv_transpose(inputs, W, strides, padding, dimension_numbers) + b

    return init_fun, apply_fun


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
Conv1DTranspose.__doc__ = "`GeneralConvTranspose` with layouts ('NHC', 'HIO', 'NHC')."
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))
ConvTranspose.__doc__ = "`GeneralConvTranspose` with layouts ('NHWC', 'HWIO', 'NHWC')."


def BatchNorm(axis: int | Sequence[int] = (0, 1, 2), epsilon: float = 1e-5, center: bool = True,
              scale: bool = True, beta_init: Initializer = zeros,
              gamma_init: Initializer = ones) -> Layer:
    """Normalises the inputs to zero mean and unit variance over `axis` (statistics
    of the batch at hand; no running averages), then scales by `gamma` and shifts
    by `beta`, each shaped like the axes not in `axis`.

    >>> init_fun, apply_fun = BatchNorm(axis=0)
    >>> out_shape, (beta, gamma) = init_fun(lr.PRNGKey(0), (4, 3))
    >>> apply_fun((beta, gamma), lnp.float32([[0, 1, 2], [2, 3, 6]]))
    Array([[-0.999995  , -0.999995  , -0.99999875],
           [ 0.999995  ,  0.999995  ,  0.99999875]], dtype=float32)
    """
    axis = (axis,) if lnp.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = lr.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        # Index with None to put the normalised axes back as size-1 axes.
        expand = tuple(None if i in axis else slice(None) for i in range(lnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if center and scale:
            return gamma[expand] * z + beta[expand]
        if center:
            return z + beta[expand]
        if scale:
            return gamma[expand] * z
        return z

    return init_fun, apply_fun


# --- elementwise layers -----------------------------------------------------------------

def elementwise(fun: Callable[..., Any], **fun_kwargs: Any) -> Layer:
    """A layer without parameters that applies `fun(inputs, **fun_kwargs)`.

    >>> init_fun, apply_fun = elementwise(lnp.clip, min=0.0, max=1.0)
    >>> apply_fun((), lnp.float32([-1.0, 0.5, 2.0]))
    Array([0. , 0.5, 1. ], dtype=float32)
    """
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)

    return init_fun, apply_fun


Tanh = elementwise(lnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(lnp.exp)
Log = elementwise(lnp.log)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


# --- pooling ----------------------------------------------------------------------------

def _with_unit_axes(sizes: Sequence[int], axes: Sequence[int]) -> tuple[int, ...]:
    """`sizes` with a 1 inserted at each of `axes` (ascending)."""
    out = list(sizes)
    for i in sorted(axes):
        out.insert(i, 1)
    return tuple(out)


def _pooling_layer(reducer: Callable, init_value: float, average: bool = False):
    def PoolingLayer(window_shape: Sequence[int], strides: Sequence[int] | None = None,
                     padding: str = "VALID", spec: str | None = None) -> Layer:
        strides = tuple(strides or (1,) * len(window_shape))
        n = len(window_shape) + 2
        non_spatial = (0, n - 1) if spec is None else (spec.index("N"), spec.index("C"))
        window = _with_unit_axes(window_shape, non_spatial)
        full_strides = _with_unit_axes(strides, non_spatial)

        def init_fun(rng, input_shape):
            return _window_output_shape(input_shape, window, full_strides, padding), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_value, reducer, window, full_strides, padding)
            if not average:
                return out
            # Divide by the number of input elements each window covered: fewer
            # than the window's size where 'SAME' padding overlaps it.
            spatial = [d for i, d in enumerate(inputs.shape) if i not in non_spatial]
            counts = lax.reduce_window(lnp.ones(spatial, inputs.dtype), 0., lax.add,
                                       tuple(window_shape), strides, padding)
            return out / lnp.expand_dims(counts, sorted(non_spatial))

        return init_fun, apply_fun

    return PoolingLayer


MaxPool = _pooling_layer(lax.max, -lnp.inf)
MaxPool.__name__ = MaxPool.__qualname__ = "MaxPool"
MaxPool.__doc__ = """Maximum over windows of the spatial axes.

    `window_shape` and `strides` cover the spatial axes only; `spec` (e.g.
    'NCHW') says where the batch and channel axes are (default: first and last).

    >>> init_fun, apply_fun = MaxPool((2, 2), strides=(2, 2))
    >>> init_fun(lr.PRNGKey(0), (-1, 4, 4, 3))[0]
    (-1, 2, 2, 3)
    """
SumPool = _pooling_layer(lax.add, 0.)
SumPool.__name__ = SumPool.__qualname__ = "SumPool"
SumPool.__doc__ = """Sum over windows of the spatial axes (arguments as `MaxPool`'s).

    >>> init_fun, apply_fun = SumPool((2,))
    >>> apply_fun((), lnp.float32([1, 2, 3]).reshape(1, 3, 1)).ravel()
    Array([3., 5.], dtype=float32)
    """
AvgPool = _pooling_layer(lax.add, 0., average=True)
AvgPool.__name__ = AvgPool.__qualname__ = "AvgPool"
AvgPool.__doc__ = """Mean over windows of the spatial axes (arguments as `MaxPool`'s); with
    'SAME' padding, over the input elements each window covers.

    >>> init_fun, apply_fun = AvgPool((2,), padding="SAME")
    >>> apply_fun((), lnp.float32([1, 2, 3]).reshape(1, 3, 1)).ravel()
    Array([1.5, 2.5, 3. ], dtype=float32)
    """


# --- reshaping, routing and randomness --------------------------------------------------

def _flatten() -> Layer:
    def init_fun(rng, input_shape):
        return (input_shape[0], math.prod(input_shape[1:])), ()

    def apply_fun(params, inputs, **kwargs):
        return lnp.reshape(inputs, (inputs.shape[0], -1))

    return init_fun, apply_fun


# Flatten, Identity and FanInSum are layers, not constructors: `serial(..., Flatten)`.
Flatten = _flatten()  # all but the leading (batch) axis into one


def _identity() -> Layer:
    return (lambda rng, input_shape: (input_shape, ()),
            lambda params, inputs, **kwargs: inputs)


Identity = _identity()


def FanOut(num: int) -> Layer:
    """Copies its input into a list of `num` inputs (for `parallel`).

    >>> FanOut(2)[0](None, (3,))
    ([(3,), (3,)], ())
    """
    return (lambda rng, input_shape: ([input_shape] * num, ()),
            lambda params, inputs, **kwargs: [inputs] * num)


def _fan_in_sum() -> Layer:
    return (lambda rng, input_shape: (input_shape[0], ()),
            lambda params, inputs, **kwargs: sum(inputs))


FanInSum = _fan_in_sum()  # adds a list of inputs, e.g. for a residual connection


def FanInConcat(axis: int = -1) -> Layer:
    """Concatenates a list of inputs along `axis`.

    >>> FanInConcat()[0](None, [(2, 3), (2, 5)])
    ((2, 8), ())
    """
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        return tuple(input_shape[0][:ax]) + (size,) + tuple(input_shape[0][ax + 1:]), ()

    def apply_fun(params, inputs, **kwargs):
        return lnp.concatenate(inputs, axis)

    return init_fun, apply_fun


def Dropout(rate: float, mode: str = "train") -> Layer:
    """Dropout: in `mode='train'` each element is KEPT with probability `rate`
    (and divided by `rate`), otherwise zeroed; any other mode passes inputs through.

    `apply_fun` needs `rng=` in both modes.

    >>> init_fun, apply_fun = Dropout(0.5)
    >>> out = apply_fun((), lnp.ones(1000), rng=lr.PRNGKey(0))
    >>> sorted(set(out.tolist()))
    [0.0, 2.0]
    """
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError(
                "Dropout layer requires apply_fun to be called with a PRNG key argument. "
                "That is, instead of `apply_fun(params, inputs)`, call it like "
                "`apply_fun(params, inputs, rng=key)` where `key` is a PRNG key "
                "(e.g. from `lamella.random.key`).")
        if mode == "train":
            keep = lr.bernoulli(rng, rate, inputs.shape)
            return lnp.where(keep, inputs / rate, 0)
        return inputs

    return init_fun, apply_fun


# --- combinators ------------------------------------------------------------------------

def serial(*layers: Layer) -> Layer:
    """Composes layers in sequence. `init_fun` gives each layer its own key;
    `apply_fun` splits `rng=` (when given) into one key per layer.

    >>> init_fun, apply_fun = serial(Dense(4), Tanh, Dense(2))
    >>> init_fun(lr.PRNGKey(0), (-1, 3))[0]
    (-1, 2)
    """
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        params = []
        for layer_init in init_funs:
            rng, layer_rng = lr.split(rng)
            input_shape, param = layer_init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = lr.split(rng, nlayers) if rng is not None else (None,) * nlayers
        for fun, param, layer_rng in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=layer_rng, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers: Layer) -> Layer:
    """Applies the i-th layer to the i-th of a list of inputs (use with `FanOut`
    and `FanInSum`/`FanInConcat`). As in JAX, `init_fun` returns a `zip`
    iterator of (output shapes, parameters).

    >>> init_fun, apply_fun = parallel(Dense(2), Identity)
    >>> out_shapes, params = init_fun(lr.PRNGKey(0), [(-1, 3), (-1, 5)])
    >>> out_shapes
    ((-1, 2), (-1, 5))
    """
    nlayers = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        rngs = lr.split(rng, nlayers)
        return zip(*[init(layer_rng, shape)
                     for init, layer_rng, shape in zip(init_funs, rngs, input_shape)])

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = lr.split(rng, nlayers) if rng is not None else (None,) * nlayers
        return [f(p, x, rng=r, **kwargs)
                for f, p, x, r in zip(apply_funs, params, inputs, rngs)]

    return init_fun, apply_fun


def shape_dependent(make_layer: Callable[[Shape], Layer]) -> Layer:
    """A layer built by `make_layer(input_shape)` once the input shape is known.

    >>> init_fun, apply_fun = shape_dependent(lambda shape: Dense(2 * shape[-1]))
    >>> init_fun(lr.PRNGKey(0), (-1, 3))[0]
    (-1, 6)
    """
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun
