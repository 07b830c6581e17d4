"""`lamella.core` as `import jax`, with the XLA runtime loaded: the names and behaviours a
ported program relies on that need a compiler (stages, devices, transfers, threads)."""

import logging
import threading

import numpy as np
import pytest

import lamella.core as jax
import lamella.lax as lax
import lamella.numpy as jnp
from lamella.core.errors import JaxRuntimeError

F32 = np.float32


def test_arrays_devices_and_backend():
    x = jnp.ones(3)
    assert isinstance(x, jax.Array) and isinstance(jax.devices()[0], jax.Device)
    assert jax.default_backend() == "cpu"
    assert any(a is x for a in jax.live_arrays())
    assert jax.typeof(x) == jax.ShapedArray((3,), F32)
    y = jax.make_array_from_callback((2, 2), jax.devices()[0], lambda i: np.eye(2)[i])
    assert isinstance(y, lax.Array)
    np.testing.assert_array_equal(y, np.eye(2))
    assert issubclass(JaxRuntimeError, RuntimeError)


def test_stages_lower_to_stablehlo_and_hlo():
    lowered = jax.jit(lambda x: jnp.sin(x) * 2).trace(jnp.ones(3)).lower()
    assert "stablehlo.sine" in lowered.as_text()
    assert "HloModule" in lowered.as_text("hlo")
    assert type(lowered.compiler_ir("hlo")).__name__ == "XlaComputation"
    compiled = lowered.compile({"xla_cpu_enable_fast_math": False})
    assert compiled.memory_analysis().argument_size_in_bytes == 12
    assert compiled.input_shardings[0][0].device_set == {jax.devices()[0]}
    assert type(compiled.runtime_executable()).__name__ == "LoadedExecutable"
    np.testing.assert_allclose(compiled(jnp.ones(3)), 2 * np.sin(1.0) * np.ones(3), rtol=1e-6)


def test_named_scopes_name_the_stablehlo_operations():
    def f(x):
        with jax.named_scope("block"):
            return jnp.cos(x) + 1
    text = jax.jit(jax.named_call(f, name="layer")).lower(1.0).as_text(debug_info=True)
    assert 'loc("layer/block/cos"' in text and "test_jax_surface_runtime.py" in text


def test_x64_and_disable_jit_overrides_stay_in_their_thread():
    double = jax.jit(lambda x: x * 2)
    seen = {}

    def worker():
        with jax.enable_x64():
            seen["x64"] = double(np.float64(1.0)).dtype
        with jax.disable_jit():
            seen["disabled"] = type(jax.jit(lambda x: x)(np.float32(1.0))).__name__
    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen == {"x64": np.float64, "disabled": "float32"}
    assert double(np.float64(1.0)).dtype == F32


def test_a_cached_jit_call_retraces_under_a_thread_local_override():
    # The C++ dispatcher keys its cache on the thread's overrides: a program traced
    # without `numpy_rank_promotion("raise")` must not serve a call made under it (in
    # this thread or another), nor leak the override into other threads.
    add = jax.jit(lambda x, y: x + y)
    x, y = jnp.ones((2, 3)), jnp.ones(3)
    assert add(x, y).shape == (2, 3)
    assert (x + y).shape == (2, 3)
    with jax.numpy_rank_promotion("raise"):
        with pytest.raises(ValueError, match="rank promotion"):
            add(x, y)
        with pytest.raises(ValueError, match="rank promotion"):
            x + y
        seen = []
        thread = threading.Thread(target=lambda: seen.append((add(x, y) + x).shape))
        thread.start()
        thread.join()
        assert seen == [(2, 3)]
    assert add(x, y).shape == (2, 3)


def test_eager_functions_called_while_tracing_are_staged():
    # jnp.sin with a concrete argument inside a trace: the C++ cache (which has run
    # jnp.sin eagerly on this signature) keys on the thread tracing, so it is staged.
    c = np.linspace(0, 1, 4, dtype=F32)
    jnp.sin(c)
    jnp.sin(c)
    jaxpr = jax.make_jaxpr(lambda x: jnp.sin(c) * x)(c)
    assert [e.primitive.name for e in jaxpr.eqns] == ["sin", "mul"]
    assert np.allclose(jax.jit(lambda x: jnp.sin(c) * x)(c), np.sin(c) * c)


def test_transfer_guard_disallows_implicit_host_to_device_transfers():
    f = jax.jit(lambda x: x + 1)
    x = jnp.ones(2)
    with jax.transfer_guard("disallow"):
        f(x)  # already on the device
        with pytest.raises(JaxRuntimeError, match="Disallowed host-to-device transfer"):
            f(np.ones(2, F32))
        jax.device_put(np.ones(2, F32))  # explicit: allowed


def test_log_compiles(caplog):
    with caplog.at_level(logging.WARNING, logger="lamella"), jax.log_compiles(True):
        jax.jit(lambda x: x * 3)(np.ones(4, F32))
    assert "Compiling" in caplog.text and "f32[4]" in caplog.text


def test_default_matmul_precision_shows_in_the_jaxpr():
    a = np.ones((2, 2), F32)
    with jax.default_matmul_precision("float32"):
        text = str(jax.make_jaxpr(lambda x: lax.dot(x, x))(a))
    assert "Precision.HIGHEST" in text


def test_gradients_are_arrays_with_jaxs_weak_types():
    g = jax.grad(lambda x: x * 2.0)(1.0)
    assert isinstance(g, lax.Array) and g.weak_type
    zero = jax.grad(lambda x: 2.0)(1.0)
    assert isinstance(zero, lax.Array) and zero.weak_type and float(zero) == 0.0
    _, pullback = jax.vjp(lambda x, z: x * 2, jnp.ones(2), 3.0)
    assert all(isinstance(c, lax.Array) for c in pullback(jnp.ones(2)))


def test_grad_of_real_function_of_complex_input_is_jaxs():
    assert complex(jax.grad(lambda z: jnp.abs(z) ** 2)(1.0 + 2.0j)) == 2 - 4j
    assert complex(jax.grad(lambda z: (z * z).real)(1.0 + 2.0j)) == 2 + 4j


def test_dict_outputs_have_sorted_keys_as_in_jax():
    out = jax.jit(lambda d: {"b": d["b"], "a": d["a"]})({"b": jnp.ones(1), "a": jnp.zeros(1)})
    assert list(out) == ["a", "b"]
    assert list(jax.tree_util.tree_map(lambda v: v, {"z": 1, "y": 2})) == ["y", "z"]


def test_linear_transpose_and_custom_gradient_with_numpy():
    w = jnp.arange(3.0)
    transpose = jax.linear_transpose(lambda x: jnp.dot(w, x), jnp.ones(3))
    np.testing.assert_allclose(transpose(jnp.float32(2.0))[0], 2 * np.arange(3.0))

    @jax.custom_gradient
    def clip_gradient(x):
        return x, lambda g: (jnp.clip(g, -1.0, 1.0),)
    assert float(jax.grad(lambda x: 5.0 * clip_gradient(x))(2.0)) == 1.0


def test_sequential_vmap_loops_with_lax_map():
    from lamella.core.custom_batching import custom_vmap, sequential_vmap
    calls = []

    @sequential_vmap
    def f(x):
        calls.append(jax.typeof(x).shape)
        return jnp.sin(x) * 2
    x = jnp.arange(3.0)
    np.testing.assert_allclose(jax.vmap(f)(x), np.sin(np.arange(3.0)) * 2, rtol=1e-6)
    assert all(shape == () for shape in calls)  # one element at a time, never the batch
    assert "scan" in str(jax.make_jaxpr(jax.vmap(f))(x))

    @custom_vmap
    def g(x):
        return jnp.sin(x)

    @g.def_vmap
    def g_rule(axis_size, in_batched, xs):
        return jnp.cos(xs), in_batched[0]
    np.testing.assert_allclose(jax.jit(jax.vmap(g))(x), np.cos(np.arange(3.0)), rtol=1e-6)
    np.testing.assert_allclose(jax.vmap(jax.jit(g))(x), np.cos(np.arange(3.0)), rtol=1e-6)


def test_fwd_and_bwd_compiles_the_backward_pass_once():
    fwd, bwd = jax.fwd_and_bwd(lambda x, w: jnp.sin(x @ w).sum(), argnums=(0, 1))
    x = jnp.ones((2, 2))
    for _ in range(3):
        y, residuals = fwd(x, x)
        gx, _ = bwd(residuals, 1.0)
    assert bwd._cache_size() == 1 and fwd._cache_size() == 1
    np.testing.assert_allclose(gx, np.full((2, 2), 2 * np.cos(2.0)), rtol=1e-6)


def test_clear_caches_empties_the_runtime_caches():
    f = jax.jit(lambda x: x * 2)
    f(F32(1))
    assert f._cache_size() == 1
    jax.clear_caches()
    assert f._cache_size() == 0
    assert float(f(F32(2))) == 4


def test_threefry_partitionable_false_gives_older_jaxs_streams():
    # Recorded from JAX 0.10.2 with jax_threefry_partitionable=False.
    import lamella.random as jr
    with jax.threefry_partitionable(False):
        key = jr.key(0)
        np.testing.assert_array_equal(jr.key_data(jr.split(key)),
                                      [[4146024105, 967050713], [2718843009, 1272950319]])
        np.testing.assert_array_equal(jr.bits(key, (3,)), [4146024105, 1351547692, 2718843009])
        np.testing.assert_allclose(jr.uniform(jr.PRNGKey(1), (4,)),
                                   [0.5685525, 0.322456, 0.8893297, 0.47169125], rtol=1e-6)


def test_raw_key_policies_and_custom_prng():
    import lamella.random as jr
    raw = jr.PRNGKey(0)
    with jax.legacy_prng_key("warn"), pytest.warns(UserWarning, match="Legacy uint32 key"):
        jr.uniform(raw)
    with jax.legacy_prng_key("error"), pytest.raises(ValueError, match="Legacy uint32 key"):
        jr.split(raw)
    with jax.enable_custom_prng(True):
        typed = jr.PRNGKey(0)
    assert jnp.issubdtype(typed.dtype, jax.dtypes.prng_key)
    np.testing.assert_array_equal(jr.key_data(typed), raw)


def test_allow_f16_reductions_false_refuses_half_precision_sums():
    x = jnp.ones(3, jnp.float16)
    with jax.allow_f16_reductions(False):
        assert float(jnp.sum(x)) == 3  # jnp.sum accumulates in float32, as in JAX
        with pytest.raises(ValueError, match="jax_allow_f16_reductions=False"):
            lax.reduce_sum(x, (0,))


def test_dlpack_shares_host_memory():
    host = np.arange(4, dtype=np.float32)
    shared = jax.dlpack.from_dlpack(host)
    assert isinstance(shared, jax.Array)
    np.testing.assert_array_equal(shared, host)
    copied = jax.dlpack.from_dlpack(host, copy=True)
    host[0] = 7
    assert float(copied[0]) == 0


def test_tracer_reprs_read_as_jax_0_10_2s():
    seen = []

    def show(x):
        seen.append(repr(x))
        return x

    x = jnp.ones(3, jnp.float32)
    jax.jvp(show, (x,), (x,))
    jax.vmap(show)(jnp.ones((2, 3), jnp.float32))
    jax.jit(show)(x)
    jax.grad(lambda v: show(v).sum())(x)
    jax.jit(jax.grad(lambda v: show(v).sum()))(x)
    jax.jvp(show, (1.0,), (1.0,))
    assert seen == ["JVPTracer(primal=[1. 1. 1.], tangent=[1. 1. 1.])",
                    "VmapTracer(aval=float32[3], batched=float32[2,3])",
                    "JitTracer(float32[3])",
                    "GradTracer(primal=[1. 1. 1.], typeof(tangent)=f32[3])",
                    "GradTracer(primal=JitTracer(float32[3]), typeof(tangent)=f32[3])",
                    "JVPTracer(primal=1.0, tangent=1.0)"]
