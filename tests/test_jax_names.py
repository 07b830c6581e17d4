"""Every public name of JAX 0.10.2's modules exists where a porting user looks for it in
lamella, and the functions take JAX's parameters (names, order, defaults).

The names and signatures were recorded from JAX by `benchmarks/record_jax_names.py` into
`tests/data/jax_public_names.json`; this test never imports JAX. Names that lamella does
not have yet are listed below, each with the reason: most belong to the issues on
parallelism (#17) and on debugging and export (#18).
"""

from __future__ import annotations

import importlib
import inspect
import json
import pathlib

import pytest

TABLE = json.loads((pathlib.Path(__file__).parent / "data" / "jax_public_names.json")
                   .read_text())

# Where a JAX module's names live in lamella (the porting recipe's imports).
MODULES = {
    "jax": "lamella.core",
    "jax.ad_checkpoint": "lamella.core.ad_checkpoint",
    "jax.custom_derivatives": "lamella.core.custom_derivatives",
    "jax.dtypes": "lamella.core.dtypes",
    "jax.errors": "lamella.core.errors",
    "jax.extend.core": "lamella.core",
    "jax.interpreters.ad": "lamella.core.ad",
    "jax.interpreters.batching": "lamella.core.batching",
    "jax.interpreters.mlir": "lamella.lax.lowering",
    "jax.stages": "lamella.core.stages",
    "jax.test_util": "lamella.core.test_util",
    "jax.tree": "lamella.core.tree",
    "jax.tree_util": "lamella.core.tree_util",
    "jax.lax": "lamella.lax",
    "jax.lax.linalg": "lamella.lax.linalg",
    "jax.numpy": "lamella.numpy",
    "jax.numpy.fft": "lamella.numpy.fft",
    "jax.numpy.linalg": "lamella.numpy.linalg",
    "jax.random": "lamella.random",
    "jax.flatten_util": "lamella.flatten_util",
    "jax.image": "lamella.image",
    "jax.ops": "lamella.ops",
    "jax.nn": "lamella.nn",
    "jax.nn.initializers": "lamella.nn.initializers",
    "jax.example_libraries.stax": "lamella.nn.stax",
    "jax.example_libraries.optimizers": "lamella.nn.optimizers",
    "jax.scipy.cluster.vq": "lamella.scipy.cluster.vq",
    "jax.scipy.fft": "lamella.scipy.fft",
    "jax.scipy.integrate": "lamella.scipy.integrate",
    "jax.scipy.interpolate": "lamella.scipy.interpolate",
    "jax.scipy.linalg": "lamella.scipy.linalg",
    "jax.scipy.ndimage": "lamella.scipy.ndimage",
    "jax.scipy.optimize": "lamella.scipy.optimize",
    "jax.scipy.signal": "lamella.scipy.signal",
    "jax.scipy.sparse.linalg": "lamella.scipy.sparse.linalg",
    "jax.scipy.spatial.transform": "lamella.scipy.spatial.transform",
    "jax.scipy.special": "lamella.scipy.special",
    "jax.scipy.stats": "lamella.scipy.stats",
}

PARALLELISM = "issue 17 (multiple devices, sharding, collectives)"
DEBUGGING = "issue 18 (callbacks, effects, checkify, export, debugging)"
LAYERS = "a layer of its own: the package is imported directly (the porting recipe)"
IMPORTS = "a helper JAX's module imports for itself, not part of its API"

# Names lamella leaves out, with the reason for each.
LEFT_OUT: dict[str, dict[str, str]] = {
    "jax": {
        # Submodules of `jax` that are separate lamella packages or modules.
        **dict.fromkeys(["lax", "numpy", "scipy", "nn", "random", "image", "ops", "core",
                         "interpreters", "experimental", "lib"], LAYERS),
        **dict.fromkeys(["Shard", "smap", "memory",
                         "auto_pcast", "remove_size_one_mesh_axis_from_type", "thread_guard"],
                        PARALLELISM),
        **dict.fromkeys(["debug_key_reuse", "effects_barrier", "ffi", "no_execution",
                         "no_tracing", "profiler", "monitoring",
                         "array_garbage_collection_guard"], DEBUGGING),
        **dict.fromkeys(["Ref", "ref", "new_ref", "empty_ref", "free_ref", "freeze", "ds"],
                        "issue 16 (mutable references, the state layer pallas builds on)"),
    },
    "jax.custom_derivatives": {
        "remat_opt_p": "JAX-internal: the primitive of its checkpoint-of-custom_vjp "
                       "optimization, imported into the module",
    },
    "jax.example_libraries.optimizers": dict.fromkeys(
        ["jax", "jnp", "map", "zip", "partial", "namedtuple", "safe_map", "safe_zip", "unzip2"],
        IMPORTS),
    "jax.example_libraries.stax": dict.fromkeys(["jnp", "random"], IMPORTS),
    "jax.extend.core": {
        "primitives": LAYERS + " (lax's primitives are lamella.lax.*_p)",
        "Token": DEBUGGING + ": tokens order effects",
        "AbstractToken": DEBUGGING + ": tokens order effects",
        "InconclusiveDimensionOperation": DEBUGGING + ": shape polymorphism is export's",
    },
    "jax.interpreters.ad": {
        # JAX's internal generator-based JVP and linearize; lamella's are ad.jvp_flat and
        # autodiff_api.linearize, with other signatures.
        "jvp": "JAX-internal generator protocol (lamella: ad.jvp_flat)",
        "linearize": "JAX-internal (lamella: lamella.core.linearize)",
    },
    "jax.interpreters.batching": {
        "register_vmappable": "JAX-internal protocol for non-pytree containers (jumbles); "
                              "lamella batches such types as pytrees",
        "unregister_vmappable": "as register_vmappable",
    },
    "jax.interpreters.mlir": {
        **dict.fromkeys(["Mesh", "MeshAxisName", "AxisContext", "SPMDAxisContext",
                         "ShardingContext"], PARALLELISM),
        **dict.fromkeys(["emit_python_callback", "SEND_TO_HOST_TYPE", "RECV_FROM_HOST_TYPE",
                         "DEVICE_TO_DEVICE_TYPE", "lowerable_effects",
                         "ShapePolyLoweringState"], DEBUGGING),
    },
    "jax.lax": dict.fromkeys(
        ["pbroadcast", "precv", "psend", "ragged_all_to_all", "ragged_all_to_all_p"],
        PARALLELISM),
}


def _names(module: str) -> list[str]:
    return sorted(TABLE["modules"][module])


@pytest.mark.parametrize("jax_module", sorted(MODULES))
def test_every_public_name_exists(jax_module):
    module = importlib.import_module(MODULES[jax_module])
    left_out = LEFT_OUT.get(jax_module, {})
    missing = [n for n in _names(jax_module) if n not in left_out and not hasattr(module, n)]
    assert not missing, f"{MODULES[jax_module]} lacks {jax_module}'s {missing}"
    # A name on the left-out list that lamella has now must leave the list.
    stale = [n for n in left_out if hasattr(module, n) and n in TABLE["modules"][jax_module]]
    assert not stale, f"{stale} exist now: remove them from LEFT_OUT[{jax_module!r}]"


@pytest.mark.parametrize("cls", sorted(TABLE["classes"]))
def test_stage_objects_have_jaxs_attributes(cls):
    stages = importlib.import_module("lamella.core.stages")
    ours = getattr(stages, cls.rsplit(".", 1)[1])
    left_out = ATTRIBUTES_LEFT_OUT.get(cls, {})
    missing = [n for n in TABLE["classes"][cls] if not hasattr(ours, n) and n not in left_out]
    assert not missing, f"lamella's {cls} lacks {missing}"


# Parameters that only matter with several devices (issue 17) are not compared.
SHARDING_PARAMETERS = {"out_sharding", "sharding", "out_shardings", "in_shardings"}
SIMPLE_DEFAULTS = {"None", "True", "False"}

# Functions whose signatures differ from JAX's on purpose.
SIGNATURES_LEFT_OUT: dict[str, str] = {
    "jax.interpreters.batching.broadcast": "mesh_axis (issue 17) defaults to None, so "
                                           "one-device rules need not pass it",
    **dict.fromkeys(["jax.interpreters.mlir.aval_to_ir_type",
                     "jax.interpreters.mlir.aval_to_ir_types"],
                    "JAX's (ctx, aval) form works; the module context is unused here, so "
                    "lamella's own rules call it with the aval alone (aval defaults to None)"),
}
# Attributes of the stage objects lamella leaves out.
ATTRIBUTES_LEFT_OUT = {"jax.stages.Traced": {"lojax": "JAX-internal (its low-level jaxpr)"}}


def _ours(module: object, name: str) -> object:
    obj = getattr(module, name, None)
    return obj if callable(obj) else None


def _signature_problems(theirs: list[dict], ours: inspect.Signature) -> list[str]:
    theirs = [p for p in theirs if p["name"] not in SHARDING_PARAMETERS]
    params = [p for p in ours.parameters.values() if p.name not in SHARDING_PARAMETERS]
    by_name = {p.name: p for p in params}
    catch_all = any(p.kind is p.VAR_KEYWORD for p in params)
    problems = []
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    jax_positional = [p["name"] for p in theirs
                      if p["kind"] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
    if positional[:len(jax_positional)] != jax_positional and not any(
            p.kind is p.VAR_POSITIONAL for p in params):
        problems.append(f"positional parameters {positional}, JAX's {jax_positional}")
    for p in theirs:
        if p["kind"] in ("VAR_POSITIONAL", "VAR_KEYWORD"):
            continue
        mine = by_name.get(p["name"])
        if mine is None:
            if not catch_all:
                problems.append(f"no parameter {p['name']!r}")
            continue
        if p["has_default"] != (mine.default is not mine.empty):
            problems.append(f"{p['name']!r} {'has' if p['has_default'] else 'has no'} "
                            f"default in JAX")
        elif p["has_default"] and p["default"] in SIMPLE_DEFAULTS | {"0", "1", "-1"} \
                and repr(mine.default) != p["default"]:
            problems.append(f"{p['name']!r} defaults to {mine.default!r}, JAX's to "
                            f"{p['default']}")
    return problems


@pytest.mark.parametrize("jax_module", sorted(MODULES))
def test_signatures_match_jaxs(jax_module):
    module = importlib.import_module(MODULES[jax_module])
    wrong = {}
    for name, entry in TABLE["modules"][jax_module].items():
        qualified = f"{jax_module}.{name}"
        theirs = entry.get("signature")
        ours = _ours(module, name)
        if theirs is None or ours is None or entry["kind"] != "function" \
                or qualified in SIGNATURES_LEFT_OUT:
            continue
        try:
            sig = inspect.signature(ours)
        except (TypeError, ValueError):
            continue
        problems = _signature_problems(theirs, sig)
        if problems:
            wrong[name] = problems
    assert not wrong, f"{MODULES[jax_module]}: signatures differ from JAX's: {wrong}"
