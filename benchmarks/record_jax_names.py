"""Records JAX 0.10.2's public names and signatures, module by module, as test data.

Run with JAX installed (never in lamella's own environments):

    python benchmarks/record_jax_names.py tests/data/jax_public_names.json

For each module: every public name (no leading underscore) with its kind and,
for callables, its parameters (name, kind, default). `tests/test_jax_surface.py`
checks that lamella has each name and that signatures agree.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys

import jax

MODULES = [
    "jax", "jax.lax", "jax.lax.linalg", "jax.tree_util", "jax.tree", "jax.dtypes",
    "jax.errors", "jax.custom_derivatives", "jax.numpy", "jax.numpy.linalg", "jax.numpy.fft",
    "jax.random", "jax.stages", "jax.flatten_util", "jax.ops", "jax.image", "jax.test_util",
    "jax.ad_checkpoint", "jax.interpreters.ad", "jax.interpreters.batching",
    "jax.interpreters.mlir", "jax.extend.core", "jax.nn", "jax.nn.initializers",
    "jax.example_libraries.stax", "jax.example_libraries.optimizers",
    "jax.scipy.special", "jax.scipy.stats", "jax.scipy.linalg", "jax.scipy.optimize",
    "jax.scipy.sparse.linalg", "jax.scipy.signal", "jax.scipy.fft", "jax.scipy.ndimage",
    "jax.scipy.integrate", "jax.scipy.interpolate", "jax.scipy.cluster.vq",
    "jax.scipy.spatial.transform",
]
# Classes whose public attributes are part of the API (the AOT stages).
CLASSES = {"jax.stages.Lowered": "Lowered", "jax.stages.Compiled": "Compiled",
           "jax.stages.Traced": "Traced"}


def _default(value):
    if value is inspect.Parameter.empty:
        return None
    text = repr(value)
    return text if len(text) < 80 else text[:77] + "..."


def signature(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [{"name": p.name, "kind": p.kind.name, "default": _default(p.default),
             "has_default": p.default is not inspect.Parameter.empty}
            for p in sig.parameters.values()]


def kind(obj):
    if inspect.ismodule(obj):
        return "module"
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "value"


def describe(module_name: str) -> dict:
    module = importlib.import_module(module_name)
    names = {}
    for name in sorted(dir(module)):
        if name.startswith("_"):
            continue
        obj = getattr(module, name)
        entry = {"kind": kind(obj)}
        if entry["kind"] in ("function", "class"):
            entry["signature"] = signature(obj)
        names[name] = entry
    return names


def main(path: str) -> None:
    table = {"meta": {"jax": jax.__version__}, "modules": {}, "classes": {}}
    for name in MODULES:
        table["modules"][name] = describe(name)
    for qualified, short in CLASSES.items():
        cls = getattr(importlib.import_module(qualified.rpartition(".")[0]), short)
        table["classes"][qualified] = sorted(n for n in dir(cls) if not n.startswith("_"))
    with open(path, "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
        f.write("\n")
    counts = {m: len(v) for m, v in table["modules"].items()}
    print(json.dumps(counts, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
