"""Sharding annotations inside shard_map's manual regions (8 CPU devices): whatever a
user writes there (a sharding constraint, a reshard or `out_sharding=` over Explicit
axes, a host callback), in a fully manual region, one whose other axes stay Auto, a
nested shard_map, a pmap, under vmap and grad, either runs (values against NumPy) or
raises JAX's error. XLA aborts the process on a wrong annotation there, so the programs
that used to abort it also run in a child process, which must exit normally."""

import os
import re
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as jnp
from lamella.core import export
from lamella.core.sharding import (
    AxisType,
    NamedSharding,
    P,
    get_abstract_mesh,
    get_mesh,
    make_mesh,
    reshard,
    set_mesh,
)

MESH = make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
EXPLICIT = make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
X = np.arange(16, dtype=np.float32).reshape(8, 2)
wsc = lax.with_sharding_constraint


def _mapped(body, axis_names=frozenset(), mesh=MESH):
    return lc.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"),
                        axis_names=axis_names)


def _constrained(spec, mesh=MESH):
    return lambda b: wsc(b * 2, NamedSharding(mesh, spec))


def _callback(b):
    return lc.pure_callback(lambda v: np.asarray(v) * 2, lc.ShapeDtypeStruct(b.shape, b.dtype),
                            b)


def _region_annotations(f):
    """The shardings annotated inside the manual region of `f`'s program (from the
    region's entry to its exit, both included)."""
    text = f.lower(X).as_text()
    start = text.index("@SPMDFullToShardShape")
    body = text[start:text.index("@SPMDShardToFullShape", start)]
    return re.findall(r'mhlo.sharding = "([^"]*)"', body)


FULL_REPLICATED = lc.jit(_mapped(_constrained(P())))
PARTIAL = {spec: lc.jit(_mapped(_constrained(spec), {"x"}))
           for spec in (P(), P(None, "y"), P("y"))}


# ---------------------------------------------------------------------------
# with_sharding_constraint


def test_a_constraint_naming_no_axis_in_a_fully_manual_region_does_nothing():
    np.testing.assert_array_equal(np.asarray(FULL_REPLICATED(X)), X * 2)
    # Eagerly (the call is compiled on its own) and with a spec under the current mesh.
    np.testing.assert_array_equal(np.asarray(_mapped(_constrained(P()))(X)), X * 2)
    with set_mesh(MESH):
        got = lc.jit(_mapped(lambda b: wsc(b * 2, P())))(X)
    np.testing.assert_array_equal(np.asarray(got), X * 2)
    assert set(_region_annotations(FULL_REPLICATED)) == {"{manual}"}


@pytest.mark.parametrize("spec,laid_out", [
    (P(), P("x")), (P(None, "y"), P("x", "y")), (P("y"), None)])
def test_a_constraint_over_the_auto_axes_of_a_partial_region_is_a_subgroup_sharding(
        spec, laid_out):
    f = PARTIAL[spec]
    got = f(X)
    np.testing.assert_array_equal(np.asarray(got), X * 2)
    if laid_out is not None:  # JAX 0.10.2's layout (for P("y") it has P(("x", "y")))
        assert got.sharding.spec == laid_out
    inside = _region_annotations(f)
    assert len(inside) >= 3 and all("last_tile_dims={manual" in s for s in inside)


@pytest.mark.parametrize("axis_names,spec", [
    (frozenset(), P("x")), (frozenset(), P(None, "y")), ({"x"}, P(None, "x")),
    ({"x"}, P("z")),
])
def test_a_constraint_naming_a_manual_axis_is_jaxs_error(axis_names, spec):
    mesh = make_mesh((2, 2, 2), ("x", "y", "z"), axis_types=(AxisType.Auto,) * 3) \
        if "z" in spec else MESH
    f = lc.jit(lc.shard_map(_constrained(spec, mesh), mesh=MESH, in_specs=P(),
                            out_specs=P(), axis_names=axis_names))
    with pytest.raises(ValueError, match="can only refer to Auto axes|not the mesh"):
        f(np.ones((8, 8), np.float32))


def test_a_constraint_over_another_mesh_in_a_partial_region_is_an_error():
    other = make_mesh((8, 1), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    with pytest.raises(ValueError, match="not the mesh of the enclosing shard_map"):
        lc.jit(_mapped(_constrained(P(None, "y"), other), {"x"}))(X)
    reversed_devices = make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2,
                                 devices=lc.devices()[::-1])
    with pytest.raises(ValueError, match="incompatible devices"):
        lc.jit(_mapped(_constrained(P(None, "y"), reversed_devices), {"x"}))(X)


def test_specs_inside_shard_map_name_the_region_mesh_without_set_mesh():
    # As in JAX: the body's current mesh is the region's, its manual axes typed Manual.
    seen = []

    def inner(c):
        seen.append(get_abstract_mesh().axis_types)
        return wsc(c, P())

    def outer(b):
        seen.append(get_abstract_mesh().axis_types)
        b = wsc(b * 2, P(None, "y"))
        return lc.shard_map(inner, in_specs=P(None, "y"), out_specs=P(None, "y"),
                            axis_names={"y"})(b)
    assert get_mesh() is None
    got = lc.jit(_mapped(outer, {"x"}))(X)
    np.testing.assert_array_equal(np.asarray(got), X * 2)
    manual, auto = AxisType.Manual, AxisType.Auto
    assert seen == [(manual, auto), (manual, manual)]
    assert get_mesh() is None
    with pytest.raises(ValueError, match=r"can only refer to Auto axes.*axis_types=\(Manual, "
                                         r"Auto\)"):
        lc.jit(_mapped(lambda b: wsc(b, P("x")), {"x"}))(np.ones((32, 2), np.float32))
    assert get_mesh() is None


def test_constraints_under_vmap_grad_scan_and_remat_in_a_partial_region():
    y_split = NamedSharding(MESH, P(None, "y"))
    rows = lc.jit(_mapped(lc.vmap(lambda r: wsc(r * 2, NamedSharding(MESH, P("y")))),
                          {"x"}))
    np.testing.assert_array_equal(np.asarray(rows(X)), X * 2)

    def loss(v):
        return _mapped(lc.checkpoint(lambda b: wsc(jnp.sin(b) * b, y_split)), {"x"})(v).sum()
    np.testing.assert_allclose(np.asarray(lc.jit(lc.grad(loss))(X)),
                               np.sin(X) + X * np.cos(X), rtol=1e-5, atol=1e-6)

    def twice(b):
        return lax.scan(lambda c, _: (wsc(c * 2, y_split), None), b, None, length=2)[0]
    np.testing.assert_array_equal(np.asarray(lc.jit(_mapped(twice, {"x"}))(X)), X * 4)
    batched = lc.vmap(PARTIAL[P(None, "y")])(np.stack([X, X + 1]))
    np.testing.assert_array_equal(np.asarray(batched), np.stack([X, X + 1]) * 2)


def test_constraints_in_nested_shard_maps_and_in_pmap():
    def outer(b):
        inner = lc.shard_map(_constrained(P()), in_specs=P(None, "y"),
                             out_specs=P(None, "y"), axis_names={"y"})
        return wsc(inner(b), NamedSharding(MESH, P(None, "y"))) + 1
    np.testing.assert_array_equal(np.asarray(lc.jit(_mapped(outer, {"x"}))(X)), X * 2 + 1)
    line = make_mesh((8,), ("i",), axis_types=(AxisType.Auto,))
    for mesh in (line, MESH):
        got = lc.pmap(_constrained(P(), mesh), axis_name="i")(X)
        np.testing.assert_array_equal(np.asarray(got), X * 2)
    nested_jit = lc.jit(lambda b: b * 2, in_shardings=NamedSharding(MESH, P(None, "y")),
                        out_shardings=NamedSharding(MESH, P("y")))
    np.testing.assert_array_equal(np.asarray(lc.jit(_mapped(nested_jit, {"x"}))(X)), X * 2)


@pytest.mark.parametrize("axis_names", [frozenset(), {"x"}])
def test_a_body_closing_over_an_enclosing_traces_value(axis_names):
    # The traced value enters the region whole on every device (it used to reach the
    # lowering as a constant, a TracerArrayConversionError); its gradient sums over them.
    v = np.linspace(1, 2, 16, dtype=np.float32).reshape(8, 2)

    def loss(w, a):
        return _mapped(lambda b: jnp.sin(b * w[:2]), axis_names)(a).sum()
    blocks = X.reshape(4, 2, 2)
    np.testing.assert_allclose(float(lc.jit(loss)(v, X)), np.sin(blocks * v[:2]).sum(),
                               rtol=1e-5)
    want = np.zeros_like(v)
    want[:2] = sum(b * np.cos(b * v[:2]) for b in blocks)
    np.testing.assert_allclose(np.asarray(lc.jit(lc.grad(loss))(v, X)), want, rtol=1e-5,
                               atol=1e-5)


# ---------------------------------------------------------------------------
# Typed layouts of explicit sharding


def test_reshard_and_out_sharding_over_the_explicit_axes_of_a_partial_region():
    with set_mesh(EXPLICIT):
        xs = lc.device_put(X, NamedSharding(EXPLICIT, P("x")))
        moved = lc.jit(_mapped(lambda b: reshard(jnp.sin(b) * 2, P(None, "y")), {"x"},
                               EXPLICIT))(xs)
        gram = lc.jit(_mapped(lambda b: jnp.dot(b, b.T, out_sharding=P(None, "y")), {"x"},
                              EXPLICIT))(xs)
    np.testing.assert_allclose(np.asarray(moved), np.sin(X) * 2, rtol=1e-6)
    blocks = X.reshape(4, 2, 2)
    np.testing.assert_array_equal(np.asarray(gram),
                                  np.concatenate([b @ b.T for b in blocks]))


# ---------------------------------------------------------------------------
# An Exported over several devices called in a manual region


def _exported_doubling(spec):
    sharding = NamedSharding(MESH, spec)
    return export.export(lc.jit(lambda v: v * 2, in_shardings=sharding,
                                out_shardings=sharding))(lc.ShapeDtypeStruct((2, 2), np.float32))


@pytest.mark.parametrize("axis_names", [frozenset(), {"x"}])
def test_an_exported_with_replicated_layouts_runs_on_each_block(axis_names):
    # As in JAX: its layouts become "each device holds its block whole".
    got = lc.jit(_mapped(_exported_doubling(P()).call, axis_names))(X)
    np.testing.assert_array_equal(np.asarray(got), X * 2)


@pytest.mark.parametrize("axis_names", [frozenset(), {"x"}])
def test_an_exported_that_splits_values_over_devices_is_an_error_in_a_region(axis_names):
    # JAX fails too (a ValueError from Shardy's verifier).
    with pytest.raises(ValueError, match="cannot be called inside shard_map: it splits"):
        lc.jit(_mapped(_exported_doubling(P("y")).call, axis_names))(X)


# ---------------------------------------------------------------------------
# Host callbacks


@pytest.mark.parametrize("kind", ["pure", "io", "vmapped"])
def test_callbacks_in_a_partial_region_are_jaxs_not_implemented_error(kind):
    shape = lc.ShapeDtypeStruct((2, 2), np.float32)
    body = {
        "pure": _callback,
        "io": lambda b: lc.io_callback(lambda v: np.asarray(v) * 2, shape, b),
        "vmapped": lc.vmap(lambda r: lc.pure_callback(
            lambda v: np.asarray(v) * 2, lc.ShapeDtypeStruct(r.shape, r.dtype), r,
            vmap_method="sequential")),
    }[kind]
    with pytest.raises(NotImplementedError, match="all mesh axes are partitioned manually"
                                                  r".*\['y'\] are not manual"):
        lc.jit(_mapped(body, {"x"}))(X)


def test_callbacks_where_every_axis_is_manual_run_on_each_block():
    np.testing.assert_array_equal(np.asarray(lc.jit(_mapped(_callback))(X)), X * 2)
    np.testing.assert_array_equal(np.asarray(lc.pmap(_callback, axis_name="i")(X)), X * 2)

    def outer(b):  # manual over x, then over y inside: every axis manual
        return lc.shard_map(_callback, in_specs=P(None, "y"), out_specs=P(None, "y"),
                            axis_names={"y"})(b)
    np.testing.assert_array_equal(np.asarray(lc.jit(_mapped(outer, {"x"}))(X)), X * 2)


@pytest.mark.parametrize("ordered,partitioned", [(False, False), (False, True),
                                                 (True, False)])
def test_debug_callbacks_in_a_partial_region_run_once_per_block(ordered, partitioned):
    # As in JAX 0.10.2: once per manual subgroup (4 here, not once per device), with
    # the block whole; ordered ones keep their order on each (JAX refuses those).
    seen = []

    def body(b):
        for offset in (0, 100):
            lc.debug.callback(lambda v, o=offset: seen.append(np.asarray(v) + o), b,
                              ordered=ordered, partitioned=partitioned)
        return b * 2
    out = lc.jit(_mapped(body, {"x"}))(X)
    np.testing.assert_array_equal(np.asarray(out), X * 2)
    blocks = sorted(tuple(b.ravel()) for b in X.reshape(4, 2, 2))
    assert sorted(tuple(s.ravel()) for s in seen) == sorted(
        blocks + [tuple(np.add(b, 100)) for b in blocks])
    if ordered:  # each block's two calls in order (the blocks run side by side)
        position = {tuple(np.ravel(s)): i for i, s in enumerate(seen)}
        assert all(position[b] < position[tuple(np.add(b, 100))] for b in blocks)


def test_debug_print_in_a_partial_region_prints_each_block_once(capsys):
    lc.jit(_mapped(lambda b: (lc.debug.print("row {r}", r=b[0]), b)[1], {"x"}))(X)
    lines = sorted(capsys.readouterr().out.splitlines())
    assert lines == sorted(f"row {b[0]}" for b in X.reshape(4, 2, 2))


# ---------------------------------------------------------------------------
# The programs that used to abort the process, each in a child process.

CHILD = """
import numpy as np
import lamella.core as lc, lamella.lax as lax, lamella.numpy as jnp
from lamella.core import export
from lamella.core.sharding import (
    AxisType,
    NamedSharding,
    P,
    get_abstract_mesh,
    get_mesh,
    make_mesh,
    reshard,
    set_mesh,
)

mesh = make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto, AxisType.Auto))
x = np.arange(16, dtype=np.float32).reshape(8, 2)
wsc = lax.with_sharding_constraint

def mapped(body, names=frozenset(), m=mesh):
    return lc.shard_map(body, mesh=m, in_specs=P("x"), out_specs=P("x"), axis_names=names)

def expect(value, want):
    np.testing.assert_array_equal(np.asarray(value), want)

print("wsc", flush=True)
expect(lc.jit(mapped(lambda b: wsc(b * 2, NamedSharding(mesh, P()))))(x), x * 2)
print("wsc_partial", flush=True)
expect(lc.jit(mapped(lambda b: wsc(b * 2, NamedSharding(mesh, P(None, "y"))), {"x"}))(x),
       x * 2)
print("cb_partial", flush=True)
try:
    lc.jit(mapped(lambda b: lc.pure_callback(lambda v: v * 2, lc.ShapeDtypeStruct(
        b.shape, b.dtype), b), {"x"}))(x)
    raise AssertionError("no error")
except NotImplementedError:
    pass
print("wsc_pmap", flush=True)
expect(lc.pmap(lambda b: wsc(b * 2, NamedSharding(mesh, P())), axis_name="i")(x), x * 2)
print("wsc_full_named_auto_axis", flush=True)
try:
    lc.jit(mapped(lambda b: wsc(b * 2, NamedSharding(mesh, P(None, "y")))))(x)
    raise AssertionError("no error")
except ValueError:
    pass
print("vmap_wsc_partial", flush=True)
expect(lc.jit(mapped(lc.vmap(lambda r: wsc(r * 2, NamedSharding(mesh, P("y")))), {"x"}))(x),
       x * 2)
print("explicit_reshard_partial", flush=True)
explicit = make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Explicit))
with set_mesh(explicit):
    xs = lc.device_put(x, NamedSharding(explicit, P("x")))
    expect(lc.jit(mapped(lambda b: reshard(b * 2, P(None, "y")), {"x"}, explicit))(xs), x * 2)
print("exported_in_region", flush=True)
from lamella.core import export
exp = export.export(lc.jit(lambda v: v * 2, in_shardings=NamedSharding(mesh, P()),
                           out_shardings=NamedSharding(mesh, P())))(
    lc.ShapeDtypeStruct((2, 2), np.float32))
expect(lc.jit(mapped(exp.call))(x), x * 2)
expect(lc.jit(mapped(exp.call, {"x"}))(x), x * 2)
print("done", flush=True)
"""


def test_the_programs_that_aborted_the_process_now_end_normally():
    env = dict(os.environ, LAMELLA_NUM_CPU_DEVICES="8", TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD)], env=env,
                          capture_output=True, text=True, timeout=300)
    died = -proc.returncode if proc.returncode < 0 else None
    last = proc.stdout.strip().splitlines()[-1:] or ["(before the first program)"]
    assert died is None, (f"the child died by {signal.Signals(died).name} in {last[0]}:\n"
                          f"{proc.stderr[-3000:]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert last == ["done"]
