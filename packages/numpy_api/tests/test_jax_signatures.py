"""Every public name of jax.numpy (and its linalg and fft), jax.random,
jax.flatten_util, jax.ops and jax.image exists in lamella with JAX 0.10.2's
signature: parameter names, kinds, order and defaults, as recorded in
tests/data/jax_public_names.json by benchmarks/record_jax_names.py."""

import importlib
import inspect
import json
import pathlib

import pytest

TABLE = pathlib.Path(__file__).resolve().parents[3] / "tests" / "data" / "jax_public_names.json"
MODULES = {"jax.numpy": "lamella.numpy", "jax.numpy.linalg": "lamella.numpy.linalg",
           "jax.numpy.fft": "lamella.numpy.fft", "jax.random": "lamella.random",
           "jax.flatten_util": "lamella.flatten_util", "jax.ops": "lamella.ops",
           "jax.image": "lamella.image"}
# Defaults whose repr names an object's address, not a value.
UNCOMPARABLE_DEFAULTS = {("jax.numpy", "einsum", "_dot_general")}


def _default(value):
    if value is inspect.Parameter.empty:
        return None
    text = repr(value)
    return text if len(text) < 80 else text[:77] + "..."


def _signature(obj):
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind.name, _default(p.default)) for p in params]


@pytest.mark.parametrize("jax_module", sorted(MODULES))
def test_names_and_signatures_are_jaxs(jax_module):
    recorded = json.loads(TABLE.read_text())["modules"][jax_module]
    ours = importlib.import_module(MODULES[jax_module])
    missing = sorted(name for name in recorded if not hasattr(ours, name))
    assert not missing, f"{MODULES[jax_module]} lacks {missing}"
    differ = []
    for name, entry in recorded.items():
        if not entry.get("signature"):
            continue
        theirs = [(p["name"], p["kind"], p["default"]) for p in entry["signature"]]
        mine = _signature(getattr(ours, name))
        if mine is None:
            differ.append(f"{name}: no signature")
            continue
        theirs = [t if (jax_module, name, t[0]) not in UNCOMPARABLE_DEFAULTS else t[:2]
                  for t in theirs]
        mine = [m if (jax_module, name, m[0]) not in UNCOMPARABLE_DEFAULTS else m[:2]
                for m in mine]
        if mine != theirs:
            differ.append(f"{name}: jax {theirs}\n   ours {mine}")
    assert not differ, "\n".join(differ)
