"""Records jax.image known answers for lamella.image's tests.

Run with JAX installed (never in lamella's own environments), e.g.

    /tmp/jaxenv/bin/python benchmarks/record_jax_image.py

It writes packages/numpy_api/tests/data/jax_image_known_answers.json: one entry per
case, the function (`resize` or `scale_and_translate`), the input image (from a
seeded NumPy generator, spelled `{"array": [...], "dtype": ...}`), the arguments and
JAX's output. The tests replay every case through lamella.image.
"""

from __future__ import annotations

import json
import pathlib

import jax.numpy as jnp
import numpy as np
from jax import image

OUT = (pathlib.Path(__file__).resolve().parents[1] / "packages" / "numpy_api" / "tests"
       / "data" / "jax_image_known_answers.json")
METHODS = ("nearest", "linear", "cubic", "cubic-pytorch", "lanczos3", "lanczos5", "area")


def arr(values):
    values = np.asarray(values)
    return {"array": values.astype(np.float64).tolist() if values.dtype.kind == "f"
            else values.tolist(), "dtype": str(values.dtype)}


def picture(shape, seed, dtype="float32"):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "u":
        return rng.integers(0, 256, shape).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dtype)


def cases():
    out = []
    # Down in 1-D; down and up at once in 2-D; an image with channels (HWC).
    resize_shapes = [((7,), (3,)), ((6, 4), (3, 8)), ((3, 4, 2), (5, 3, 2))]
    for k, (src, dst) in enumerate(resize_shapes):
        for method in METHODS:
            for antialias in (True, False):
                if method == "nearest" and not antialias:
                    continue
                out.append({"fn": "resize", "image": arr(picture(src, k)), "shape": dst,
                            "method": method, "antialias": antialias})
    out.append({"fn": "resize", "image": arr(picture((4, 5), 9, "uint8")), "shape": (6, 3),
                "method": "linear", "antialias": True})
    out.append({"fn": "resize", "image": arr(picture((4, 5), 9, "uint8")), "shape": (6, 3),
                "method": "nearest", "antialias": True})
    # Outputs falling off both edges of the input, and partly covered ones.
    transforms = [((5, 6), (4, 8), (0, 1), (0.7, 1.4), (0.3, -1.2)),
                  ((4, 4, 2), (6, 3, 2), (0, 1), (1.6, 0.8), (-0.4, 0.5))]
    for k, (src, dst, dims, scale, shift) in enumerate(transforms):
        for method in METHODS[1:]:
            for antialias in (True, False):
                out.append({"fn": "scale_and_translate", "image": arr(picture(src, 20 + k)),
                            "shape": dst, "spatial_dims": dims, "scale": scale,
                            "translation": shift, "method": method, "antialias": antialias})
    return out


def run(case):
    x = jnp.asarray(np.asarray(case["image"]["array"], dtype=case["image"]["dtype"]))
    if case["fn"] == "resize":
        return image.resize(x, case["shape"], case["method"], antialias=case["antialias"])
    return image.scale_and_translate(x, case["shape"], case["spatial_dims"],
                                     jnp.float32(case["scale"]), jnp.float32(case["translation"]),
                                     case["method"], antialias=case["antialias"])


def main() -> None:
    table = []
    for case in cases():
        case["output"] = arr(np.asarray(run(case)))
        table.append(case)
    OUT.write_text(json.dumps(table, separators=(",", ":")) + "\n")
    print(f"wrote {len(table)} cases to {OUT}")


if __name__ == "__main__":
    main()
