"""lamella.nn: `jax.nn` on lamella.numpy — activations, attention, one-hot and
normalisation helpers — with `lamella.nn.initializers`, and the small
neural-network libraries JAX ships: `lamella.nn.stax` and `lamella.nn.optimizers`
(imported on demand, as `jax.example_libraries` is not part of `jax.nn`).

>>> import numpy as np
>>> import lamella.nn as nn
>>> nn.relu(np.float32([-1.0, 2.0]))
Array([0., 2.], dtype=float32)
"""

from lamella.nn import initializers
from lamella.nn.activations import (
    celu,
    elu,
    gelu,
    glu,
    hard_sigmoid,
    hard_silu,
    hard_swish,
    hard_tanh,
    identity,
    leaky_relu,
    log1mexp,
    log_sigmoid,
    mish,
    relu,
    relu6,
    selu,
    sigmoid,
    silu,
    soft_sign,
    softplus,
    sparse_plus,
    sparse_sigmoid,
    squareplus,
    swish,
    tanh,
)
from lamella.nn.attention import dot_product_attention
from lamella.nn.functions import (
    log_softmax,
    logmeanexp,
    logsumexp,
    one_hot,
    softmax,
    standardize,
)
from lamella.nn.scaled import get_scaled_dot_general_config, scaled_dot_general, scaled_matmul

__version__ = "0.1.0"

__all__ = [
    "celu", "dot_product_attention", "elu", "gelu", "get_scaled_dot_general_config", "glu",
    "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh", "identity", "initializers",
    "leaky_relu", "log1mexp", "log_sigmoid", "log_softmax", "logmeanexp", "logsumexp", "mish",
    "one_hot", "relu", "relu6", "scaled_dot_general", "scaled_matmul", "selu", "sigmoid",
    "silu", "soft_sign", "softmax", "softplus", "sparse_plus", "sparse_sigmoid", "squareplus",
    "standardize", "swish", "tanh",
]
