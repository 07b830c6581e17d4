"""Records `jax.export` artifacts for tests/test_export.py, and checks lamella's artifacts in JAX.

Three modes, each run by the interpreter that has the package it imports:

    /tmp/jaxenv/bin/python benchmarks/record_jax_exports.py record
        JAX 0.10.2 exports the functions below; writes tests/data/jax_exports/<name>.exported
        (JAX's bytes) and <name>.npz (inputs, JAX's outputs, and gradients where vjp'd).
        (`record-symbolic` writes the shape-polymorphic ones only.)
    /tmp/jaxold/bin/python benchmarks/record_jax_exports.py record-legacy   (JAX 0.7.2)
        an older JAX exports sharded_matmul (HloSharding protos) next to the others.
    python benchmarks/record_jax_exports.py lamella-export DIR      (lamella's venv)
        lamella exports the same functions into DIR, with lamella's outputs.
    /tmp/jaxenv/bin/python benchmarks/record_jax_exports.py check DIR
        JAX deserializes lamella's artifacts, calls them (and their VJPs) and compares.

Needs `flatbuffers` in the JAX venv (jax.export's serializer imports it).

The functions over several devices (`sharded_matmul` and `shard_map_psum`, a (4, 2)
mesh of 8 CPU devices) are recorded into tests/data/jax_exports_multidevice and
checked by the same modes (lamella-export writes them with the others); 8 devices
are asked of each library here.
"""

from __future__ import annotations

import os
import sys

import numpy as np

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("LAMELLA_NUM_CPU_DEVICES", "8")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

DATA = os.path.join(os.path.dirname(__file__), "..", "tests", "data", "jax_exports")
# Artifacts over 8 devices, for packages/lax/tests/multidevice (run with 8 devices).
DATA_MULTIDEVICE = DATA + "_multidevice"


def cases(jax, jnp, lax):
    """name -> (function, inputs, vjp?, platforms); written once for both libraries."""
    rng = np.random.default_rng(0)
    x3 = rng.standard_normal(3).astype(np.float32)
    m = rng.standard_normal((4, 4)).astype(np.float32)
    spd = (m @ m.T + 4 * np.eye(4)).astype(np.float32)
    return {
        "pytree_sin": (lambda x, y: {"a": jnp.sin(x) * y, "b": (x + 1.0, [y])},
                       (x3, np.float32(1.5)), True, None),
        "matmul_tanh": (lambda a, b: jnp.tanh(a @ b).sum(axis=0),
                        (m, rng.standard_normal((4, 2)).astype(np.float32)), True, None),
        "integer_ops": (lambda i, j: (jnp.argmax(i), jnp.where(i > j, i, j * 2), i.astype(bool)),
                        (np.array([3, -1, 7, 2], np.int32), np.int32(2)), False, None),
        "unused_argument": (lambda x, unused, z: x * z, (x3, np.float32(0), x3), True, None),
        "cholesky_solve": (lambda a, b: jnp.linalg.solve(a, b) + jnp.linalg.cholesky(a)[:, 0],
                           (spd, rng.standard_normal(4).astype(np.float32)), True, None),
        "float64_cumsum": (lambda x: jnp.cumsum(x * x), (np.linspace(0, 1, 5),), False, None),
        "two_platforms": (lambda x: jnp.exp(x) - 1.0, (x3,), False, ("cpu", "cuda")),
        "scan_loop": (lambda x: lax.scan(lambda c, v: (c * 0.5 + v, c), 0.0, x),
                      (x3,), True, None),
    }


def _cotangents(outs):
    return [np.ones(np.shape(o), np.asarray(o).dtype) for o in outs]


def record() -> None:
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax import export, lax

    os.makedirs(DATA, exist_ok=True)
    for name, (fun, args, with_vjp, platforms) in cases(jax, jnp, lax).items():
        exp = export.export(jax.jit(fun), platforms=platforms)(*args)
        blob = exp.serialize(vjp_order=1 if with_vjp else 0)
        with open(os.path.join(DATA, f"{name}.exported"), "wb") as f:
            f.write(blob)
        outs = jax.tree_util.tree_leaves(exp.call(*args))
        record = {f"arg{i}": np.asarray(a) for i, a in enumerate(args)}
        record.update({f"out{i}": np.asarray(o) for i, o in enumerate(outs)})
        if with_vjp:
            flat_args = jax.tree_util.tree_leaves(args)
            _, pullback = jax.vjp(lambda *a, e=exp: jax.tree_util.tree_leaves(e.call(*a)),
                                  *flat_args)
            cts = pullback(_cotangents(outs))
            record.update({f"ct{i}": np.asarray(c) for i, c in enumerate(cts)})
        np.savez(os.path.join(DATA, f"{name}.npz"), **record)
        print(f"recorded {name}: {len(blob)} bytes, kept {exp.module_kept_var_idx}")
    record_symbolic()
    from jax.sharding import AxisType, NamedSharding, PartitionSpec
    mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    os.makedirs(DATA_MULTIDEVICE, exist_ok=True)
    _record_sharded(jax, jnp, NamedSharding, PartitionSpec, mesh, DATA_MULTIDEVICE)
    print("recorded sharded_matmul (8 devices)")


def record_symbolic() -> None:
    """JAX's shape-polymorphic artifacts only (record runs this too)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    from jax import export, lax

    _record_polymorphic(jax, jnp, export, DATA)
    _record_polymorphic_shapes(jax, jnp, lax, export, DATA)
    _record_clamped_shapes(jax, jnp, export, DATA)
    print("recorded batch_polymorphic, polymorphic_shapes, clamped_shapes")


def _record_polymorphic(jax, jnp, export, directory: str) -> None:
    """A batch-polymorphic export (f32[b, 4], f32[4] -> f32[b]) in ``directory``, with
    its outputs at b = 3 and b = 5 and its cotangents at b = 3; written the same way
    by JAX (record) and lamella (lamella-export)."""
    b, = export.symbolic_shape("b")
    poly = export.export(jax.jit(lambda x, y: (jnp.tanh(x) @ y) * x.shape[0]))(
        jax.ShapeDtypeStruct((b, 4), np.float32), jax.ShapeDtypeStruct((4,), np.float32))
    with open(os.path.join(directory, "batch_polymorphic.exported"), "wb") as f:
        f.write(poly.serialize(vjp_order=1))
    rng = np.random.default_rng(1)
    y = rng.standard_normal(4).astype(np.float32)
    record = {"arg1": y}
    for size in (3, 5):
        x = rng.standard_normal((size, 4)).astype(np.float32)
        record[f"arg0_b{size}"] = x
        record[f"out0_b{size}"] = np.asarray(poly.call(x, y))
    record["arg0"], record["out0"] = record["arg0_b3"], record["out0_b3"]
    _, pullback = jax.vjp(poly.call, record["arg0"], y)
    record["ct0"], record["ct1"] = map(np.asarray, pullback(np.ones(3, np.float32)))
    np.savez(os.path.join(directory, "batch_polymorphic.npz"), **record)


def _record_polymorphic_shapes(jax, jnp, lax, export, directory: str) -> None:
    """`polymorphic_shapes`: x: f32[b, 4] and y: f32[2*b] -> two f32[b] (a reshape by
    -1, concatenation, iota broadcast to x's shape, the batch size as a number), with
    its arguments and outputs at b = 2 and b = 3; written alike by JAX and lamella."""
    def fun(x, y):
        flat = jnp.concatenate([x.reshape(-1, 2).sum(axis=1), y])
        rows = lax.broadcast_in_dim(lax.iota(np.float32, x.shape[0]), x.shape, (0,))
        return flat.reshape(-1, 4).max(axis=1) * x.shape[0], (jnp.tanh(x) * rows).sum(axis=1)

    b, = export.symbolic_shape("b")
    exp = export.export(jax.jit(fun))(jax.ShapeDtypeStruct((b, 4), np.float32),
                                      jax.ShapeDtypeStruct((2 * b,), np.float32))
    with open(os.path.join(directory, "polymorphic_shapes.exported"), "wb") as f:
        f.write(exp.serialize())
    rng = np.random.default_rng(2)
    record = {}
    for size in (2, 3):
        args = (rng.standard_normal((size, 4)).astype(np.float32),
                rng.standard_normal(2 * size).astype(np.float32))
        record.update({f"arg{i}_b{size}": a for i, a in enumerate(args)})
        record.update({f"out{i}_b{size}": np.asarray(o) for i, o in enumerate(exp.call(*args))})
    record.update({k[:-3]: v for k, v in record.items() if k.endswith("_b2")})
    np.savez(os.path.join(directory, "polymorphic_shapes.npz"), **record)


def _record_clamped_shapes(jax, jnp, export, directory: str) -> None:
    """`clamped_shapes`: x: f32[b, 4] -> slices whose sizes are min/max dimension
    expressions (f32[min(b, 2), 4], f32[- min(b, 5) + b, 4], i32[max(0, - b + 10)]), a
    gather, a scatter-add and a cumsum over b; arguments and outputs at b = 1 and b = 7."""
    def fun(x):
        return (x[:2], x[5:], jnp.arange(x.shape[0], 10), x[jnp.array([0, 2])],
                x.at[jnp.array([1, 1])].add(1.0), jnp.cumsum(x, axis=0))

    b, = export.symbolic_shape("b")
    exp = export.export(jax.jit(fun))(jax.ShapeDtypeStruct((b, 4), np.float32))
    with open(os.path.join(directory, "clamped_shapes.exported"), "wb") as f:
        f.write(exp.serialize())
    rng = np.random.default_rng(3)
    record = {}
    for size in (1, 7):
        x = rng.standard_normal((size, 4)).astype(np.float32)
        record[f"arg0_b{size}"] = x
        record.update({f"out{i}_b{size}": np.asarray(o) for i, o in enumerate(exp.call(x))})
    # Unsuffixed names: the case every recorded artifact is run at (tests/test_export.py).
    record.update({k[: -len("_b7")]: v for k, v in record.items() if k.endswith("_b7")})
    np.savez(os.path.join(directory, "clamped_shapes.npz"), **record)


def _record_sharded(jax, jnp, named, spec, mesh, directory: str) -> None:
    """The functions over 8 devices, written the same way by JAX (record) and lamella
    (lamella-export) into ``directory``."""
    _record_sharded_matmul(jax, jnp, named, spec, mesh, directory)
    _record_shard_map(jax, jnp, named, spec, mesh, directory)


def _record_sharded_matmul(jax, jnp, named, spec, mesh, directory: str) -> None:
    """`sharded_matmul`: (sin(a) @ b, sum(a)) with a split over x, b over y, the
    product over (x, y), the sum replicated; inputs, outputs and cotangents."""
    shardings = dict(in_shardings=(named(mesh, spec("x", None)), named(mesh, spec(None, "y"))),
                     out_shardings=(named(mesh, spec("x", "y")), named(mesh, spec())))
    f = jax.jit(lambda a, b: (jnp.sin(a) @ b, jnp.sum(a)), **shardings)
    a = np.arange(32, dtype=np.float32).reshape(8, 4) / 8
    b = np.arange(8, dtype=np.float32).reshape(4, 2) - 3
    exp = _export_module(jax).export(f)(a, b)
    with open(os.path.join(directory, "sharded_matmul.exported"), "wb") as file:
        file.write(exp.serialize(vjp_order=1))
    placed = [jax.device_put(x, s) for x, s in zip((a, b), shardings["in_shardings"])]
    outs, pullback = jax.vjp(lambda *xs: tuple(exp.call(*xs)), *placed)
    cts = pullback(tuple(_cotangents(outs)))
    np.savez(os.path.join(directory, "sharded_matmul.npz"), arg0=a, arg1=b,
             out0=np.asarray(outs[0]), out1=np.asarray(outs[1]),
             ct0=np.asarray(cts[0]), ct1=np.asarray(cts[1]))


def _record_shard_map(jax, jnp, named, spec, mesh, directory: str) -> None:
    """`shard_map_psum` (8 devices): a jitted shard_map over both mesh axes whose body
    psums; jit gets no shardings (the Exported's are None, the module's manual region
    lays the argument out)."""
    lib = jax.__name__.split(".")[0]
    shard_map = jax.shard_map
    psum = __import__(f"{lib}.lax", fromlist=["psum"]).psum
    both = spec(("x", "y"))
    f = jax.jit(shard_map(lambda v: psum(jnp.sin(v), ("x", "y")) * v, mesh=mesh,
                          in_specs=both, out_specs=both))
    x = np.linspace(-1, 1, 16).astype(np.float32)
    exp = _export_module(jax).export(f)(x)
    with open(os.path.join(directory, "shard_map_psum.exported"), "wb") as file:
        file.write(exp.serialize())
    out = exp.call(jax.device_put(x, named(mesh, both)))
    np.savez(os.path.join(directory, "shard_map_psum.npz"), arg0=x, out0=np.asarray(out))


def record_legacy() -> None:
    """`sharded_matmul_legacy`: `sharded_matmul` exported by a JAX from before its
    serialization version 9 (its shardings stored as HloSharding protos), which JAX
    0.10.2 still reads; run with such a JAX (e.g. 0.7.2) in its own venv."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("x", "y"))
    os.makedirs(DATA_MULTIDEVICE, exist_ok=True)
    directory = os.path.join(DATA_MULTIDEVICE, "legacy")
    os.makedirs(directory, exist_ok=True)
    _record_sharded_matmul(jax, jnp, NamedSharding, PartitionSpec, mesh, directory)
    for ext in ("exported", "npz"):
        os.replace(os.path.join(directory, f"sharded_matmul.{ext}"),
                   os.path.join(DATA_MULTIDEVICE, f"sharded_matmul_legacy_jax_{jax.__version__}"
                                f".{ext}"))
    os.rmdir(directory)
    print(f"recorded sharded_matmul_legacy with JAX {jax.__version__}")


def _export_module(lib):
    return __import__(f"{lib.__name__}.export", fromlist=["export"])


def lamella_export(directory: str) -> None:
    import lamella.core as lc
    import lamella.lax as lax
    import lamella.numpy as jnp
    from lamella.core import export

    lc.config.update("jax_enable_x64", True)
    os.makedirs(directory, exist_ok=True)
    for name, (fun, args, with_vjp, platforms) in cases(lc, jnp, lax).items():
        if platforms is not None:
            continue  # lamella exports for its own platform only
        exp = export.export(lc.jit(fun))(*args)
        with open(os.path.join(directory, f"{name}.exported"), "wb") as f:
            f.write(export.serialize(exp, vjp_order=1 if with_vjp else 0))
        outs = lc.tree_util.tree_leaves(exp.call(*args))
        record = {f"arg{i}": np.asarray(a) for i, a in enumerate(args)}
        record.update({f"out{i}": np.asarray(o) for i, o in enumerate(outs)})
        if with_vjp:
            flat_args = lc.tree_util.tree_leaves(args)
            _, pullback = lc.vjp(lambda *a, e=exp: lc.tree_util.tree_leaves(e.call(*a)), *flat_args)
            cts = pullback(_cotangents(outs))
            record.update({f"ct{i}": np.asarray(c) for i, c in enumerate(cts)})
        np.savez(os.path.join(directory, f"{name}.npz"), **record)
        print(f"lamella exported {name}")
    _record_polymorphic(lc, jnp, export, directory)
    _record_polymorphic_shapes(lc, jnp, lax, export, directory)
    print("lamella exported batch_polymorphic, polymorphic_shapes (f32[b,4])")
    from lamella.core.sharding import AxisType, NamedSharding, PartitionSpec, make_mesh
    mesh = make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    _record_sharded(lc, jnp, NamedSharding, PartitionSpec, mesh, directory)
    print("lamella exported sharded_matmul (8 devices)")


def check(directory: str) -> None:
    import jax

    jax.config.update("jax_enable_x64", True)
    from jax import export

    failures = 0
    for file in sorted(os.listdir(directory)):
        if not file.endswith(".exported"):
            continue
        name = file[:-len(".exported")]
        with open(os.path.join(directory, file), "rb") as f:
            exp = export.deserialize(bytearray(f.read()))
        data = np.load(os.path.join(directory, f"{name}.npz"))
        args = [data[f"arg{i}"] for i in range(len(exp.in_avals))]
        if exp.nr_devices > 1:  # laid out over a mesh of that many devices, as exported
            mesh = jax.make_mesh((4, 2), ("x", "y"),
                                 axis_types=(jax.sharding.AxisType.Auto,) * 2)
            replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
            args = [jax.device_put(x, replicated if s is None else s)
                    for x, s in zip(args, exp.in_shardings_jax(mesh))]
        args = jax.tree_util.tree_unflatten(exp.in_tree, args)[0]
        outs = jax.tree_util.tree_leaves(exp.call(*args))
        ok = all(np.allclose(np.asarray(o), data[f"out{i}"], rtol=1e-5, atol=1e-6)
                 for i, o in enumerate(outs))
        note = ""
        if exp.has_vjp():
            flat = jax.tree_util.tree_leaves(args)
            _, pullback = jax.vjp(lambda *a, e=exp: jax.tree_util.tree_leaves(e.call(*a)), *flat)
            cts = pullback(_cotangents(outs))
            ok = ok and all(np.allclose(np.asarray(c), data[f"ct{i}"], rtol=1e-5, atol=1e-6)
                            for i, c in enumerate(cts))
            note = f", and its VJP ({len(cts)} cotangents, lamella's values)"
        if exp.nr_devices > 1:
            specs = [o.sharding.spec for o in outs]
            ok = ok and all(s is None or o == s.spec
                            for o, s in zip(specs, exp.out_shardings_jax(mesh)))
            note += f", on {exp.nr_devices} devices, results laid out as {specs}"
        sizes = sorted(int(k[len("arg0_b"):]) for k in data.files if k.startswith("arg0_b"))
        flat_args = jax.tree_util.tree_leaves(args)
        for size in sizes:  # a shape-polymorphic export, called at each recorded size
            sized = [data.get(f"arg{i}_b{size}", a) for i, a in enumerate(flat_args)]
            sized = jax.tree_util.tree_unflatten(exp.in_tree, sized)[0]
            outs = jax.tree_util.tree_leaves(exp.call(*sized))
            ok = ok and all(np.allclose(np.asarray(o), data[f"out{i}_b{size}"], rtol=1e-5,
                                        atol=1e-6) for i, o in enumerate(outs))
        if sizes:
            note += f", at b = {', '.join(map(str, sizes))} from in_avals {exp.in_avals}"
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: JAX ran lamella's export{note}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "record"
    if mode == "record":
        record()
    elif mode == "record-symbolic":
        record_symbolic()
    elif mode == "record-legacy":
        record_legacy()
    elif mode == "lamella-export":
        lamella_export(sys.argv[2])
    elif mode == "check":
        check(sys.argv[2])
    else:
        raise SystemExit(__doc__)
