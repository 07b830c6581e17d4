"""Records jax.random known answers for lamella.random's tests.

Run with the bench environment (the only one with jax installed):

    /work/main/.nox/bench/bin/python benchmarks/record_jax_random.py

It writes packages/numpy_api/tests/data/jax_random_known_answers.json: one
entry per case, each the function name, the seed of a raw `PRNGKey`, the
keyword arguments (arrays spelled `{"array": [...], "dtype": ...}`) and JAX's
output (small outputs in full, large ones as their first and last values and
their sum). The tests replay every case through lamella.random.
"""

from __future__ import annotations

import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

OUT = (pathlib.Path(__file__).resolve().parents[1] / "packages" / "numpy_api" / "tests"
       / "data" / "jax_random_known_answers.json")
SEEDS = (0, 1, 42, -1, 2 ** 31 + 5)
FULL_LIMIT = 64  # outputs larger than this are summarised
EDGE = 8


def arr(values, dtype):
    return {"array": values, "dtype": dtype}


def case(fn, seed=42, x64=False, **kwargs):
    return {"fn": fn, "seed": seed, "x64": x64, "kwargs": kwargs}


def cases():
    out = []
    for seed in SEEDS:
        out.append(case("PRNGKey", seed))
        out.append(case("split", seed))
        out.append(case("uniform", seed, shape=[3]))
        out.append(case("normal", seed, shape=[3]))
    for seed in (-1, 2 ** 31 + 5, 2 ** 40 + 5, -(2 ** 40)):
        out.append(case("PRNGKey", seed, x64=True))
    out += [
        case("split", num=3), case("split", num=[2, 3]), case("split", num=1),
        case("fold_in", data=0), case("fold_in", data=1), case("fold_in", data=2 ** 32 - 1),
        case("fold_in", seed=7, data=12345),
        case("bits"), case("bits", shape=[3]), case("bits", shape=[2, 5]),
        case("bits", shape=[1000]), case("bits", shape=[5], dtype="uint8"),
        case("bits", shape=[5], dtype="uint16"), case("bits", shape=[4], dtype="uint64", x64=True),
        case("uniform"), case("uniform", shape=[2, 5]), case("uniform", shape=[1000]),
        case("uniform", shape=[4], minval=-2.0, maxval=3.0),
        case("uniform", shape=[2, 3], minval=arr([0.0, 1.0, 2.0], "float32"), maxval=5.0),
        case("uniform", shape=[6], dtype="float16"), case("uniform", shape=[6], dtype="bfloat16"),
        case("uniform", shape=[6], dtype="float64", x64=True),
        case("normal"), case("normal", shape=[2, 5]), case("normal", shape=[1000]),
        case("normal", seed=0, shape=[1000]), case("normal", shape=[6], dtype="float16"),
        case("normal", shape=[6], dtype="bfloat16"),
        case("normal", shape=[6], dtype="float64", x64=True),
        case("normal", shape=[3], dtype="complex64"),
        case("randint", shape=[8], minval=0, maxval=10),
        case("randint", shape=[8], minval=-5, maxval=5, dtype="int32"),
        case("randint", shape=[8], minval=0, maxval=256, dtype="uint8"),
        case("randint", shape=[8], minval=-300, maxval=300, dtype="int8"),
        case("randint", shape=[2, 3], minval=arr([0, 10, 100], "int32"), maxval=1000),
        case("randint", shape=[4], minval=5, maxval=5),
        case("randint", shape=[1000], minval=0, maxval=7),
        case("bernoulli", shape=[10], p=0.3), case("bernoulli", p=arr([0.1, 0.5, 0.9], "float32")),
        case("exponential", shape=[6]), case("laplace", shape=[6]), case("logistic", shape=[6]),
        case("cauchy", shape=[6]), case("gumbel", shape=[6]), case("rademacher", shape=[6]),
        case("truncated_normal", lower=-1.0, upper=2.0, shape=[6]),
        case("truncated_normal", lower=arr([0.0, -3.0], "float32"), upper=1.0, shape=[3, 2]),
        case("pareto", b=3.0, shape=[6]), case("weibull_min", scale=2.0, concentration=1.5,
                                                shape=[6]),
        case("rayleigh", scale=2.0, shape=[6]), case("wald", mean=1.5, shape=[6]),
        case("triangular", left=0.0, mode=1.0, right=3.0, shape=[6]),
        case("maxwell", shape=[6]), case("double_sided_maxwell", loc=1.0, scale=2.0, shape=[6]),
        case("geometric", p=0.3, shape=[6]),
        case("permutation", x=10), case("permutation", x=arr([[1, 2, 3], [4, 5, 6]], "int32"),
                                        axis=1, independent=True),
        case("permutation", x=arr([[1, 2, 3], [4, 5, 6]], "int32"), axis=1),
        case("choice", a=10, shape=[5]), case("choice", a=10, shape=[5], replace=False),
        case("choice", a=5, shape=[6], p=arr([0.1, 0.2, 0.3, 0.2, 0.2], "float32")),
        case("choice", a=5, shape=[3], replace=False,
             p=arr([0.1, 0.2, 0.3, 0.2, 0.2], "float32")),
        case("categorical", logits=arr([0.0, 1.0, 2.0], "float32"), shape=[6]),
        case("categorical", logits=arr([[0.0, 1.0], [2.0, 0.5], [1.0, 1.0]], "float32"), axis=0),
        case("gumbel", shape=[6], mode="high"), case("bernoulli", shape=[6], p=0.3, mode="high"),
        case("categorical", logits=arr([0.5, 1.0, 0.0, 2.0, 1.5, 0.1, 0.3, 0.9], "float32"),
             shape=[4], replace=False),
        case("choice", a=arr([[1, 2, 3], [4, 5, 6]], "int32"), shape=[2], axis=1),
        case("gamma", a=2.5, shape=[6]), case("gamma", a=0.3, shape=[6]),
        case("loggamma", a=0.3, shape=[6]), case("beta", a=2.0, b=3.0, shape=[6]),
        case("dirichlet", alpha=arr([1.0, 2.0, 3.0], "float32"), shape=[2]),
        case("chisquare", df=3.0, shape=[6]), case("f", dfnum=3.0, dfden=5.0, shape=[6]),
        case("t", df=4.0, shape=[6]), case("generalized_normal", p=1.5, shape=[6]),
        case("ball", d=3, shape=[2]),
        case("poisson", lam=3.0, shape=[6]), case("poisson", lam=30.0, shape=[6]),
        case("binomial", n=10.0, p=0.3, shape=[6]), case("binomial", n=200.0, p=0.4, shape=[6]),
        case("orthogonal", n=3), case("multivariate_normal", mean=arr([0.0, 1.0], "float32"),
                                      cov=arr([[2.0, 0.5], [0.5, 1.0]], "float32"), shape=[3]),
        # Three cases keep the later entries' positions modulo 3 (the eager tests' stride).
        case("multinomial", n=20.0, p=arr([0.1, 0.2, 0.3, 0.4], "float32"), shape=[3, 4]),
        case("lognormal", sigma=arr([0.5, 1.0, 2.0], "float32"), shape=[2, 3]),
        case("multinomial", n=arr([5.0, 300.0], "float32"),
             p=arr([[0.5, 0.0, 0.5], [0.2, 0.7, 0.1]], "float32")),
    ]
    return out


def decode(value):
    if isinstance(value, dict) and "array" in value:
        return np.asarray(value["array"], dtype=jnp.dtype(value["dtype"]))
    if isinstance(value, list):
        return tuple(value)
    return value


def run(spec):
    key = jax.random.PRNGKey(spec["seed"])
    kwargs = {k: decode(v) for k, v in spec["kwargs"].items()}
    if "dtype" in kwargs:
        kwargs["dtype"] = jnp.dtype(kwargs["dtype"])
    fn = spec["fn"]
    if fn == "PRNGKey":
        return key
    return getattr(jax.random, fn)(key, **kwargs)


def encode(x):
    x = np.asarray(x)
    flat = x.reshape(-1)
    if x.dtype.kind == "c":
        flat = np.stack([flat.real, flat.imag], -1).reshape(-1)
    kind = int if x.dtype.kind in "iub" else float
    values = [kind(v) for v in flat]
    out = {"dtype": str(x.dtype), "shape": list(x.shape)}
    if len(values) <= FULL_LIMIT:
        out["values"] = values
    else:
        out["first"], out["last"] = values[:EDGE], values[-EDGE:]
        out["sum"] = float(np.sum(flat.astype(np.float64)))
    return out


def main():
    entries = []
    for x64 in (False, True):
        jax.config.update("jax_enable_x64", x64)
        for spec in cases():
            if spec["x64"] == x64:
                entries.append({**spec, "out": encode(run(spec))})
    meta = {"jax_version": jax.__version__,
            "jax_threefry_partitionable": bool(jax.config.jax_threefry_partitionable)}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"meta": meta, "cases": entries}, indent=0) + "\n")
    print(f"wrote {len(entries)} cases to {OUT}")


if __name__ == "__main__":
    main()
