"""Batch-polymorphic export: an MLP exported for f32[b, 64], called at new and cached sizes.

Rows: exporting a 2-layer MLP with a symbolic batch size (trace, lower,
serialize), a first call at a new batch size (shape refinement and compile), and
a cached call.

The "new batch size" row calls a freshly deserialized Exported at a size never used
before (a counter), so every call specializes and compiles: lamella refines the
module's shapes with StableHLO's refinement, JAX does the same inside its jit.
"""

from __future__ import annotations

import itertools

import numpy as np
from harness import Row, compare, jax_or_none, pick

import lamella.core as lc
import lamella.numpy as lnp
from lamella.core import export as lexport

D = pick(64, 8)
BATCH = pick(256, 4)


def _mlp(jnp):
    def mlp(x, w1, w2):
        h = jnp.tanh(x @ w1)
        logits = h @ w2
        return logits - logits.max(axis=1, keepdims=True)
    return mlp


def _specs(lib, export):
    b, = export.symbolic_shape("b")
    return (lib.ShapeDtypeStruct((b, D), np.float32), lib.ShapeDtypeStruct((D, D), np.float32),
            lib.ShapeDtypeStruct((D, 10), np.float32))


def run() -> list[Row]:
    jax = jax_or_none()
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((D, D)).astype(np.float32) / 8
    w2 = rng.standard_normal((D, 10)).astype(np.float32) / 8
    x = rng.standard_normal((BATCH, D)).astype(np.float32)
    rows = []

    def export_lamella():
        return lexport.export(lc.jit(_mlp(lnp)))(*_specs(lc, lexport)).serialize()

    exports = {"lamella": export_lamella}
    if jax is not None:
        from jax import export as jexport

        def export_jax():
            return jexport.export(jax.jit(_mlp(jax.numpy)))(*_specs(jax, jexport)).serialize()
        exports["jax"] = export_jax
    t = compare(exports, rounds=2, repeat=3)
    rows.append(Row(f"export MLP for f32[b,{D}] (trace, lower, serialize)", t["lamella"],
                    {"jax": t.get("jax")}, unit="ms"))

    blob = bytes(export_lamella())
    sizes = itertools.count(2)
    first = {"lamella": lambda: lexport.deserialize(blob).call(
        np.ones((next(sizes), D), np.float32), w1, w2)}
    cached_exp = lexport.deserialize(blob)
    cached = {"lamella": lambda: cached_exp.call(x, w1, w2).block_until_ready()}
    if jax is not None:
        jblob = bytearray(export_jax())
        jsizes = itertools.count(2)
        first["jax"] = lambda: jexport.deserialize(jblob).call(
            np.ones((next(jsizes), D), np.float32), w1, w2).block_until_ready()
        jexp = jexport.deserialize(jblob)
        cached["jax"] = lambda: jexp.call(x, w1, w2).block_until_ready()
    t = compare(first, rounds=2, repeat=3, number=1)
    rows.append(Row("first call at a new batch size (refine + compile)", t["lamella"],
                    {"jax": t.get("jax")}, unit="ms"))
    t = compare(cached)
    rows.append(Row(f"cached call at b={BATCH}", t["lamella"], {"jax": t.get("jax")}))
    return rows
