"""Records jax.example_libraries.stax known answers for lamella.nn.stax's tests.

Run with an environment that has jax 0.10.2 installed (jax only, no lamella):

    /tmp/jaxenv/bin/python benchmarks/record_jax_stax.py

It writes packages/nn/tests/data/jax_stax_known_answers.json: for each case the
layer (a Python expression over stax's names, evaluated in both libraries),
the input shape given to init_fun, the seed of the raw `PRNGKey` it gets, and
JAX's results: the output shape, every parameter leaf, and the output of
apply_fun on a fixed input (with `PRNGKey(seed + 1)` as its rng).
"""

from __future__ import annotations

import json
import pathlib

import jax
import numpy as np
from jax.example_libraries import stax

OUT = (pathlib.Path(__file__).resolve().parents[1] / "packages" / "nn" / "tests" / "data"
       / "jax_stax_known_answers.json")

# (layer expression, init input shape, apply batch size replacing a -1 batch, seed)
CASES = [
    ("serial(Dense(4), Relu, Dense(3), LogSoftmax)", (-1, 5), 2, 0),
    ("Dense(3, W_init=randn(0.5), b_init=zeros)", (2, 2, 4), None, 7),
    ("Conv(3, (2, 2), strides=(1, 2), padding='SAME')", (2, 5, 6, 2), None, 1),
    ("Conv(2, (3, 3))", (1, 5, 5, 1), None, 2),
    ("Conv(2, (2, 3), padding=((1, 0), (2, 1)))", (1, 4, 4, 2), None, 3),
    ("GeneralConv(('NCHW', 'OIHW', 'NCHW'), 3, (2, 2), padding='SAME')", (1, 2, 4, 4), None, 4),
    ("ConvTranspose(2, (3, 3), strides=(2, 2), padding='SAME')", (1, 3, 3, 2), None, 5),
    ("ConvTranspose(2, (3, 2), strides=(2, 1))", (1, 3, 3, 2), None, 6),
    ("ConvTranspose(1, (2, 2), strides=(2, 2), padding='SAME')", (1, 3, 3, 1), None, 8),
    ("ConvTranspose(2, (3, 3), padding=((1, 0), (0, 2)))", (1, 3, 3, 1), None, 9),
    ("Conv1DTranspose(2, (3,), strides=(2,), padding='SAME')", (2, 4, 1), None, 10),
    ("GeneralConvTranspose(('NCHW', 'IOHW', 'NCHW'), 2, (2, 3), strides=(2, 2))",
     (1, 2, 3, 3), None, 11),
    ("BatchNorm()", (2, 3, 3, 2), None, 12),
    ("BatchNorm(axis=0, center=False, beta_init=ones)", (4, 3), None, 13),
    ("BatchNorm(axis=(0, 1), scale=False, epsilon=0.1)", (3, 2, 2), None, 14),
    ("MaxPool((2, 2), strides=(2, 2))", (1, 4, 5, 2), None, 15),
    ("MaxPool((3,), padding='SAME')", (2, 5, 1), None, 16),
    ("SumPool((2, 2), strides=(1, 2), padding='SAME')", (1, 3, 5, 1), None, 17),
    ("AvgPool((2, 2), padding='SAME')", (1, 3, 3, 2), None, 18),
    ("AvgPool((3, 2), strides=(2, 2), padding='SAME', spec='NCHW')", (1, 2, 5, 4), None, 19),
    ("serial(Flatten, Identity)", (-1, 2, 3), 2, 20),
    ("serial(FanOut(2), parallel(Dense(3), Identity), FanInSum)", (-1, 3), 2, 21),
    ("serial(FanOut(3), parallel(Dense(2), Tanh, Dense(1)), FanInConcat(-1))", (-1, 4), 2, 22),
    ("serial(FanOut(2), parallel(Identity, Relu), FanInConcat(0))", (2, 3), None, 23),
    ("Dropout(0.7)", (4, 5), None, 24),
    ("Dropout(0.4, mode='test')", (2, 3), None, 25),
    ("serial(Dense(6), Dropout(0.5), Relu, Dense(2))", (-1, 3), 4, 26),
    ("shape_dependent(lambda shape: Dense(2 * shape[-1]))", (-1, 3), 2, 27),
    ("serial(Conv(4, (3, 3), padding='SAME'), Relu, MaxPool((2, 2), (2, 2)), Flatten, "
     "Dense(3), Softmax)", (-1, 4, 4, 1), 2, 28),
    ("serial(Tanh, Exp, Softplus, Sigmoid)", (2, 3), None, 29),
    ("serial(Elu, LeakyRelu, Selu, Gelu, Softmax)", (2, 3), None, 30),
]


def fixed_input(shape):
    """The input every case is applied to: deterministic, in about [-2, 2]."""
    n = int(np.prod(shape))
    return (2 * np.sin(0.37 * np.arange(n) + 0.5)).astype(np.float32).reshape(shape)


def record(expr, in_shape, batch, seed):
    init_fun, apply_fun = eval(expr, vars(stax))
    out_shape, params = init_fun(jax.random.PRNGKey(seed), in_shape)
    shape = tuple(batch if d == -1 else d for d in in_shape)
    out = apply_fun(params, fixed_input(shape), rng=jax.random.PRNGKey(seed + 1))
    leaves = jax.tree.leaves(params)
    return {"layer": expr, "input_shape": list(in_shape), "apply_shape": list(shape),
            "seed": seed, "output_shape": [int(d) for d in out_shape],
            "params": [{"shape": list(p.shape), "values": np.asarray(p).ravel().tolist()}
                       for p in leaves],
            "output": {"shape": list(out.shape), "values": np.asarray(out).ravel().tolist()}}


def main() -> None:
    answers = {"jax": jax.__version__, "cases": [record(*case) for case in CASES]}
    OUT.write_text(json.dumps(answers, indent=1) + "\n")
    print(f"wrote {len(answers['cases'])} cases to {OUT}")


if __name__ == "__main__":
    main()
