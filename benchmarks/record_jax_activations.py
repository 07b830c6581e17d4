"""Records jax.nn's activation values, derivatives and dtypes for lamella.nn's tests.

Run with JAX installed (see the shared brief: /tmp/jaxenv):

    /tmp/jaxenv/bin/python benchmarks/record_jax_activations.py

It writes packages/nn/tests/data/jax_activations.json:
- "grid": float32 inputs from -inf to NaN, through huge, tiny and kink points;
- "values" / "grads": for each activation (and parameter variant), JAX's outputs on
  the grid and its elementwise derivative (vmap of grad) there;
- "dtypes": per activation and input kind, JAX's result dtype (suffix "w" for a weak
  type) or the name of the exception it raises;
- "functions": outputs of logsumexp, softmax, log_softmax, logmeanexp, standardize
  and one_hot on small fixed inputs (each with its keyword arguments);
- "attention": dot_product_attention's output and the gradients of sum(out * ct) for
  query, key and value, on seeded random inputs, per combination of options.
Floats are JSON numbers with NaN/Infinity tokens (Python's json reads them back).
"""

from __future__ import annotations

import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

OUT = (pathlib.Path(__file__).resolve().parents[1] / "packages" / "nn" / "tests" / "data"
       / "jax_activations.json")

GRID = np.float32([-np.inf, -3e38, -1e30, -1e19, -100.0, -20.0, -6.0, -3.0, -1.5, -1.0, -0.5,
                   -1e-30, -0.0, 0.0, 1e-45, 1e-30, 1e-4, 0.5, 0.6931472, 1.0, 1.5, 3.0, 6.0,
                   20.0, 88.7, 100.0, 1e19, 1e30, 3e38, np.inf, np.nan])

ELEMENTWISE = ["celu", "elu", "gelu", "hard_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
               "identity", "leaky_relu", "log1mexp", "log_sigmoid", "mish", "relu", "relu6",
               "selu", "sigmoid", "silu", "soft_sign", "softplus", "sparse_plus",
               "sparse_sigmoid", "squareplus", "swish", "tanh"]
VARIANTS = {
    "gelu(approximate=False)": lambda x: jax.nn.gelu(x, approximate=False),
    "leaky_relu(negative_slope=0.5)": lambda x: jax.nn.leaky_relu(x, 0.5),
    "elu(alpha=2.0)": lambda x: jax.nn.elu(x, 2.0),
    "celu(alpha=2.0)": lambda x: jax.nn.celu(x, 2.0),
    "squareplus(b=1.0)": lambda x: jax.nn.squareplus(x, 1.0),
}
DTYPE_INPUTS = {
    "int32": lambda: jnp.array([1, 2], jnp.int32), "bool": lambda: jnp.array([True, False]),
    "float16": lambda: jnp.array([1, 2], jnp.float16),
    "bfloat16": lambda: jnp.array([1, 2], jnp.bfloat16), "python_float": lambda: 2.0,
    "python_int": lambda: 2, "uint8": lambda: jnp.array([1, 2], jnp.uint8),
}

RNG = np.random.default_rng(0)
X34 = RNG.standard_normal((3, 4)).astype(np.float32) * 3
MASK = np.array([[True, False, True, True], [False] * 4, [True] * 4])
FUNCTIONS = [
    ("logsumexp", {"a": X34, "axis": 1}), ("logsumexp", {"a": X34, "axis": None}),
    ("logsumexp", {"a": X34, "axis": 0, "keepdims": True, "where": MASK}),
    ("logsumexp", {"a": X34, "axis": 1, "b": np.abs(X34)}),
    ("softmax", {"x": X34}), ("softmax", {"x": X34, "axis": 0}),
    ("softmax", {"x": X34, "axis": (0, 1)}), ("softmax", {"x": X34, "where": MASK}),
    ("log_softmax", {"x": X34}), ("log_softmax", {"x": X34, "axis": None, "where": MASK}),
    ("logmeanexp", {"x": X34}), ("logmeanexp", {"x": X34, "axis": 1, "keepdims": True}),
    ("logmeanexp", {"x": X34, "axis": 1, "where": MASK}),
    ("standardize", {"x": X34}), ("standardize", {"x": X34, "axis": 0, "epsilon": 0.5}),
    ("standardize", {"x": X34, "where": MASK}),
    ("standardize", {"x": X34, "mean": np.float32(1.0), "variance": np.float32(4.0)}),
    ("standardize", {"x": X34, "axis": None, "algorithm": "stable"}),
    ("standardize", {"x": X34 + 1000, "axis": 1}),
    ("one_hot", {"x": np.int32([0, 2, -1, 3]), "num_classes": 3}),
    ("one_hot", {"x": np.int32([[0, 1], [2, 0]]), "num_classes": 3, "axis": 0,
                 "dtype": "int32"}),
]


def attention_inputs():
    """Seeded inputs (B, T, S, N, K, H) = (2, 5, 7, 4, 2, 8); the tests rebuild them."""
    rng = np.random.default_rng(1)
    q = rng.standard_normal((2, 5, 4, 8)).astype(np.float32)
    k = rng.standard_normal((2, 7, 2, 8)).astype(np.float32)
    v = rng.standard_normal((2, 7, 2, 8)).astype(np.float32)
    ct = rng.standard_normal((2, 5, 4, 8)).astype(np.float32)
    bias = rng.standard_normal((1, 4, 5, 7)).astype(np.float32)
    mask = rng.random((2, 1, 5, 7)) > 0.3
    mask[0, 0, 1, :] = False
    return q, k, v, ct, bias, mask


ATTENTION = [
    {}, {"is_causal": True}, {"bias": True}, {"mask": True},
    {"query_seq_lengths": [3, 5], "key_value_seq_lengths": [7, 4]},
    {"local_window_size": [1, 2]}, {"scale": 0.3, "is_causal": True, "bias": True},
    {"mask": True, "bias": True, "is_causal": True, "local_window_size": 2,
     "query_seq_lengths": [4, 2]},
    {"kv_heads": 1}, {"kv_heads": 4, "is_causal": True},
]


def attention_case(spec: dict) -> dict:
    q, k, v, ct, bias, mask = attention_inputs()
    kv_heads = spec.get("kv_heads", 2)
    k, v = (np.repeat(x, 2, axis=2)[:, :, :kv_heads] for x in (k, v))
    kwargs = {}
    for name, value in spec.items():
        if name == "bias":
            kwargs["bias"] = bias
        elif name == "mask":
            kwargs["mask"] = mask
        elif name.endswith("seq_lengths"):
            kwargs[name] = jnp.asarray(value, jnp.int32)
        elif name == "local_window_size":
            kwargs[name] = tuple(value) if isinstance(value, list) else value
        elif name != "kv_heads":
            kwargs[name] = value

    def loss(q, k, v):
        return jnp.sum(jax.nn.dot_product_attention(q, k, v, **kwargs) * ct)

    out = jax.nn.dot_product_attention(q, k, v, **kwargs)
    grads = jax.grad(loss, argnums=(0, 1, 2))(q, k, v)
    return {"spec": spec, "out": as_list(out), "grads": [as_list(g) for g in grads]}


def as_list(a) -> list:
    return np.asarray(a, np.float64).tolist()


def encode(value):
    if isinstance(value, np.ndarray):
        return {"array": value.tolist(), "dtype": str(value.dtype)}
    if isinstance(value, np.generic):
        return {"array": value.item(), "dtype": str(value.dtype)}
    if isinstance(value, tuple):
        return list(value)
    return value


def dtype_name(out) -> str:
    return str(out.dtype) + ("w" if getattr(out, "weak_type", False) else "")


def main() -> None:
    fns = {name: getattr(jax.nn, name) for name in ELEMENTWISE} | VARIANTS
    values, grads = {}, {}
    for name, fn in fns.items():
        values[name] = as_list(fn(GRID))
        grads[name] = as_list(jax.vmap(jax.grad(fn))(GRID))
    dtypes = {}
    for name in ELEMENTWISE + ["glu"]:
        row = {}
        for kind, make in DTYPE_INPUTS.items():
            try:
                row[kind] = dtype_name(getattr(jax.nn, name)(make()))
            except Exception as e:  # noqa: BLE001  (the exception's type is the record)
                row[kind] = type(e).__name__
        dtypes[name] = row
    functions = []
    for name, kwargs in FUNCTIONS:
        out = getattr(jax.nn, name)(**kwargs)
        functions.append({"fn": name, "kwargs": {k: encode(v) for k, v in kwargs.items()},
                          "dtype": str(out.dtype), "out": as_list(out)})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    attention = [attention_case(spec) for spec in ATTENTION]
    OUT.write_text(json.dumps({"jax_version": jax.__version__, "grid": as_list(GRID),
                               "values": values, "grads": grads, "dtypes": dtypes,
                               "functions": functions, "attention": attention},
                              separators=(",", ":")) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
