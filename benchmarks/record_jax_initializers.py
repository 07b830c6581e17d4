"""Records jax.nn.initializers known answers for lamella.nn's tests.

Run with JAX installed (see the shared brief: /tmp/jaxenv):

    /tmp/jaxenv/bin/python benchmarks/record_jax_initializers.py

It writes packages/nn/tests/data/jax_initializers_known_answers.json: one entry per
case, each the initializer builder's name and keyword arguments, the seed of a raw
`PRNGKey`, the shape and dtype passed to the initializer (a null dtype means the
builder's default), whether x64 was on, and JAX's output (real and imaginary parts
for complex results; a null output records that JAX raised, with the exception's
type). The tests replay every case through lamella.nn.initializers.
"""

from __future__ import annotations

import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

OUT = (pathlib.Path(__file__).resolve().parents[1] / "packages" / "nn" / "tests" / "data"
       / "jax_initializers_known_answers.json")


def case(name, shape, dtype=None, seed=0, x64=False, **kwargs):
    return {"name": name, "kwargs": kwargs, "seed": seed, "shape": list(shape),
            "dtype": dtype, "x64": x64}


def cases() -> list[dict]:
    out = [
        case("zeros", (2, 3)), case("ones", (3,), "int32"), case("constant", (2, 2), value=-7),
        case("constant", (3,), "float16", value=0.1),
        case("uniform", (4, 5)), case("uniform", (6,), "float16", scale=10.0),
        case("uniform", (6,), "bfloat16", seed=3), case("uniform", (5,), "float64", x64=True),
        case("normal", (4, 5), stddev=2.0), case("normal", (7,), "float16", seed=1),
        case("normal", (3, 2), "complex64"),
        case("truncated_normal", (4, 5), stddev=1.0),
        case("truncated_normal", (8,), lower=-1.0, upper=0.5),
        case("truncated_normal", (6,), "bfloat16", seed=5, stddev=3.0),
        case("orthogonal", (3, 3)), case("orthogonal", (3, 5), scale=2.0),
        case("orthogonal", (5, 3)), case("orthogonal", (2, 3, 4), column_axis=0),
        case("orthogonal", (2, 0)), case("orthogonal", (4, 4), "float64", x64=True),
        case("delta_orthogonal", (3, 2, 2)), case("delta_orthogonal", (3, 3, 2, 3)),
        case("delta_orthogonal", (2, 2, 3, 3, 3), seed=9),
        case("delta_orthogonal", (3, 3, 3, 2)),
    ]
    for name in ("glorot_uniform", "glorot_normal", "lecun_uniform", "lecun_normal",
                 "he_uniform", "he_normal", "xavier_uniform", "xavier_normal",
                 "kaiming_uniform", "kaiming_normal"):
        out.append(case(name, (4, 6), seed=7))
    out += [
        case("glorot_normal", (3, 3, 4, 8)), case("he_uniform", (5, 2, 3)),
        case("lecun_normal", (2, 3, 3, 3, 5), "float16"),
        case("glorot_uniform", (3, 4, 6), in_axis=0, out_axis=2),
        case("glorot_uniform", (2, 3, 4, 6), in_axis=(0, 1), out_axis=-1, batch_axis=2),
        case("he_normal", (5,), in_axis=0, out_axis=0),
        case("he_normal", (8,)),
    ]
    for mode in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        for distribution in ("truncated_normal", "normal", "uniform"):
            out.append(case("variance_scaling", (3, 2, 4), seed=11, scale=2.0, mode=mode,
                            distribution=distribution))
    for distribution in ("truncated_normal", "normal", "uniform"):
        out.append(case("variance_scaling", (3, 4), "complex64", scale=1.5, mode="fan_avg",
                        distribution=distribution))
        out.append(case("variance_scaling", (2, 3), "float64", x64=True, scale=1.0,
                        mode="fan_in", distribution=distribution))
    out += [
        case("variance_scaling", (3, 4), "complex128", x64=True, scale=1.0, mode="fan_out",
             distribution="truncated_normal"),
        case("variance_scaling", (2, 3), "bfloat16", scale=0.3, mode="fan_out",
             distribution="uniform"),
        case("variance_scaling", (2, 3), scale=1.0, mode="fan_geo", distribution="normal"),
        case("variance_scaling", (2, 3), scale=1.0, mode="fan_in", distribution="gaussian"),
    ]
    return out


def run(c: dict):
    builder = getattr(jax.nn.initializers, c["name"])
    if c["name"] in ("zeros", "ones"):
        init = builder
    else:
        init = builder(**c["kwargs"])
    key = jax.random.PRNGKey(c["seed"])
    args = (key, tuple(c["shape"])) + (() if c["dtype"] is None else (jnp.dtype(c["dtype"]),))
    return init(*args)


def main() -> None:
    records = []
    for c in cases():
        jax.config.update("jax_enable_x64", c["x64"])
        try:
            out = np.asarray(run(c))
        except Exception as e:  # noqa: BLE001  (the exception's type is the record)
            records.append(c | {"out": None, "error": type(e).__name__, "out_dtype": None})
            continue
        value = (out.astype(np.complex128) if out.dtype.kind == "c"
                 else out.astype(np.float64))
        entry = {"real": value.real.tolist(), "imag": value.imag.tolist()} \
            if out.dtype.kind == "c" else value.tolist()
        records.append(c | {"out": entry, "out_dtype": str(out.dtype)})
    jax.config.update("jax_enable_x64", False)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"jax_version": jax.__version__, "cases": records}) + "\n")
    print(f"wrote {len(records)} cases to {OUT}")


if __name__ == "__main__":
    main()
