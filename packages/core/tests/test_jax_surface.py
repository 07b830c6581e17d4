"""The names a JAX user meets in `jax` itself, as lamella.core has them: configuration,
devices, AOT stages, and the transformations added for porting (core alone)."""

import functools
import logging
import threading

import numpy as np
import numpy_prims as P
import pytest

import lamella.core as lc
from lamella.core import config
from lamella.core.custom_derivatives import (
    CustomVJPPrimal,
    custom_vjp_primal_tree_values,
    linear_call,
    zero_from_primal,
)
from lamella.core.errors import UnexpectedTracerError
from lamella.core.structural import broadcast_in_dim, reduce_sum
from lamella.core.test_util import check_grads, check_jvp, check_vjp, numerical_grad

F32 = np.float32


def close(a, b, **kw):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6, **kw)


# --- configuration ---------------------------------------------------------------


def test_config_api_as_jaxs():
    assert config.x64_enabled is False
    with lc.enable_x64():
        assert config.x64_enabled and config.jax_enable_x64
    assert config.values["jax_enable_x64"] is False
    assert config.read("jax_numpy_rank_promotion") == "allow"
    with pytest.raises(ValueError, match="Invalid value 'sometimes'"):
        config.update("jax_numpy_rank_promotion", "sometimes")
    with lc.numpy_rank_promotion("raise"):
        assert config.numpy_rank_promotion == "raise"
    with pytest.raises(TypeError, match="needs the value"):
        lc.default_matmul_precision()
    with lc.transfer_guard("log"):
        assert config.read("transfer_guard_host_to_device") == "log"


def test_overrides_stay_in_their_thread():
    seen = {}

    def worker():
        with lc.enable_x64():
            seen["inside"] = config.x64_enabled
    thread = threading.Thread(target=worker)
    with lc.log_compiles(True):
        thread.start()
        thread.join()
        assert config.log_compiles is True
    assert seen["inside"] is True and config.x64_enabled is False


# --- devices and arrays ------------------------------------------------------------


def test_devices_and_runtime_names_with_core_alone():
    (device,) = lc.devices()
    assert isinstance(device, lc.Device) and device.platform == "cpu"
    assert lc.local_devices() == [device] and lc.device_count() == lc.local_device_count() == 1
    assert lc.default_backend() == "cpu"
    assert lc.typeof(np.ones(2, F32)) == lc.ShapedArray((2,), F32)
    x = lc.make_array_from_callback((2, 3), device, lambda index: np.ones((2, 3))[index])
    assert x.shape == (2, 3) and x.dtype == F32
    assert lc.copy_to_host_async(x) is x
    with pytest.raises(RuntimeError, match="lamella-lax"):
        lc.live_arrays()
    assert "lamella-core" in lc.print_environment_info(return_string=True)


def test_array_is_the_abstract_type_of_tracers():
    seen = []
    lc.make_jaxpr(lambda x: seen.append(isinstance(x, lc.Array)) or x)(np.ones(2, F32))
    assert seen == [True]
    assert not isinstance(np.ones(2), lc.Array)


# --- jit: caches, options, stages ---------------------------------------------------


def test_jit_made_anew_for_the_same_function_reuses_its_trace():
    calls = []

    def f(x):
        calls.append(1)
        return P.sin(x)
    for _ in range(3):
        lc.jit(f)(np.ones(2, F32))
    assert len(calls) == 1
    lc.jit(f, static_argnums=())(np.ones(3, F32))  # another signature: traced again
    assert len(calls) == 2


def test_jit_cache_does_not_keep_functions_alive():
    import gc
    import weakref

    def f(x):
        return P.sin(x)
    ref = weakref.ref(f)
    lc.jit(f)(np.ones(2, F32))
    del f
    gc.collect()
    assert ref() is None


def test_inline_puts_the_body_in_the_enclosing_jaxpr():
    inner = lc.jit(P.sin, inline=True)
    jaxpr = lc.make_jaxpr(lambda x: inner(x))(np.ones(2, F32))
    assert [e.primitive.name for e in jaxpr.eqns] == ["sin"]
    nested = lc.make_jaxpr(lambda x: lc.jit(P.sin)(x))(np.ones(2, F32))
    assert [e.primitive.name for e in nested.eqns] == ["jit"]


def test_stages_have_jaxs_attributes():
    f = lc.jit(lambda x, y: P.mul(x, y), donate_argnums=1)
    traced = f.trace(np.ones(3, F32), np.float32(2))
    assert traced.in_avals == ((lc.ShapedArray((3,), F32), lc.ShapedArray((), F32)), {})
    assert [a.donated for a in traced.args_info[0]] == [False, True]
    assert traced.out_avals == lc.ShapedArray((3,), F32)
    assert traced.donate_argnums == (1,)
    lowered = traced.lower()
    assert "mul" in lowered.as_text()
    with pytest.raises(ValueError, match="lamella-lax"):
        lowered.as_text("hlo")
    compiled = lowered.compile()
    assert compiled.memory_analysis()["argument_size_in_bytes"] == 16
    close(compiled(np.ones(3, F32), np.float32(2)), np.full(3, 2.0))
    assert compiled.input_formats == ((None, None), {})


def test_explain_cache_misses_and_enable_checks(caplog):
    f = lc.jit(lambda x: P.sin(x))
    with caplog.at_level(logging.WARNING, logger="lamella"), lc.explain_cache_misses(True):
        f(np.ones(2, F32))
        f(np.ones(3, F32))
    assert "never seen function" in caplog.text
    assert "the type was f32[2], now f32[3]" in caplog.text
    with lc.enable_checks(True):
        close(lc.jit(P.cos)(np.zeros(2, F32)), np.ones(2))


def test_check_tracer_leaks_finds_a_stored_tracer():
    stash = []

    def leaky(x):
        stash.append(x)
        return P.sin(x)
    with lc.checking_leaks(), pytest.raises(UnexpectedTracerError, match="leaked tracer"):
        lc.jit(leaky)(np.ones(2, F32))
    lc.jit(P.sin)(np.ones(5, F32))  # a clean function passes the check


# --- transformations -----------------------------------------------------------------


def test_jacobian_is_jacrev():
    assert lc.jacobian is lc.jacrev


def test_linear_transpose():
    f = lambda x, y: (P.add(P.mul(x, 2.0), y), P.sub(x, y))  # noqa: E731
    transpose = lc.linear_transpose(f, np.float32(1.0), np.float32(2.0))
    ct_x, ct_y = transpose((np.float32(3.0), np.float32(4.0)))
    close(ct_x, 10.0)
    close(ct_y, -1.0)
    with pytest.raises(TypeError, match="cotangent type does not match"):
        transpose((np.ones(2, F32), np.float32(1.0)))
    with pytest.raises(TypeError, match="float and complex inputs"):
        lc.linear_transpose(lambda i: i, np.int32(1))


def test_cotangent_dtype_is_checked():
    _, pullback = lc.vjp(P.sin, np.ones(2, F32))
    with pytest.raises(ValueError, match=r"Type of cotangent input .*\(f16\).*\(f32\)"):
        pullback(np.ones(2, np.float16))


def test_closure_convert_and_custom_gradient():
    w = np.full(3, 2.0, F32)
    converted, consts = lc.closure_convert(lambda x: reduce_sum(P.mul(x, w), (0,)),
                                           np.ones(3, F32))
    assert len(consts) == 1
    close(converted(np.ones(3, F32), *consts), 6.0)

    @lc.custom_gradient
    def f(x, y):
        return P.mul(x, y), lambda g: (P.mul(g, 10.0), P.mul(g, x))
    gx, gy = lc.grad(f, argnums=(0, 1))(np.float32(2.0), np.float32(3.0))
    close(gx, 10.0)
    close(gy, 2.0)


def test_linear_call_uses_its_transpose():
    total = lambda r, x: reduce_sum(x, (0,))  # noqa: E731
    spread = lambda r, ct: P.mul(broadcast_in_dim(ct, (3,), ()), r)  # deliberately not total's
    f = lambda x: linear_call(total, spread, np.float32(5.0), x)  # noqa: E731
    close(f(np.ones(3, F32)), 3.0)
    close(lc.linear_transpose(f, np.ones(3, F32))(np.float32(2.0))[0], np.full(3, 10.0))
    close(lc.grad(f)(np.ones(3, F32)), np.full(3, 5.0))
    close(lc.vmap(f)(np.ones((2, 3), F32)), [3.0, 3.0])
    close(lc.jit(f)(np.ones(3, F32)), 3.0)


def test_custom_vjp_symbolic_zeros_helpers_and_nondiff_argnames():
    assert custom_vjp_primal_tree_values((CustomVJPPrimal(1.0, True), 2.0)) == (1.0, 2.0)
    zeros = zero_from_primal({"a": np.ones(2, F32)}, symbolic_zeros=True)
    assert type(zeros["a"]).__name__ == "Zero"

    @functools.partial(lc.custom_jvp, nondiff_argnames=("power",))
    def f(x, power):
        return P.mul(x, float(power))

    @f.defjvp
    def f_jvp(power, primals, tangents):
        return f(primals[0], power), P.mul(tangents[0], 100.0)
    assert lc.jvp(lambda x: f(x, power=3), (np.float32(1.0),), (np.float32(1.0),))[1] == 100.0


def test_named_scope_and_named_call_and_compile_time_eval():
    def f(x):
        with lc.named_scope("block"):
            return P.sin(x)
    jaxpr = lc.make_jaxpr(lc.named_call(f, name="outer"))(np.ones(2, F32))
    assert jaxpr.eqns[0].source_info.name_stack == "outer/block"

    @lc.jit
    def g(x):
        with lc.ensure_compile_time_eval():
            n = reduce_sum(np.ones(3, F32), (0,))
            assert not isinstance(n, lc.Tracer)
        return broadcast_in_dim(x, (int(n),), ())
    assert g(np.float32(2.0)).shape == (3,)


def test_vmap_sum_match_and_checkpoint_static_argnames():
    close(lc.vmap(lambda x: P.mul(x, 2.0), out_axes=None, sum_match=True)(np.ones(3, F32)), 6.0)

    def power(x, n):
        return P.mul(x, float(n)) if n else x
    close(lc.grad(lc.checkpoint(power, static_argnames=("n",)))(np.float32(2.0), n=3), 3.0)


def test_saved_residuals_and_offload_policies():
    from lamella.core.ad_checkpoint import Offloadable, saved_residuals
    found = saved_residuals(lambda x: P.mul(P.sin(P.sin(x)), x), np.ones(3, F32))
    assert sorted(where.split(" from ")[0] for _, where in found) == [
        "from the argument x", "output of cos", "output of cos", "output of sin"]
    policies = lc.checkpoint_policies
    policy = policies.save_from_both_policies(policies.nothing_saveable,
                                              policies.everything_saveable)
    assert policy(P.sin_p)
    offload = policies.offload_dot_with_no_batch_dims("device", "pinned_host")
    assert not offload(P.sin_p)
    assert Offloadable("device", "pinned_host").dst == "pinned_host"


def test_check_grads_checks_and_fails_on_a_wrong_rule():
    with lc.enable_x64():
        x = np.array([0.3, -1.2])
        check_grads(P.sin, (x,), order=2)
        check_jvp(P.sin, functools.partial(lc.jvp, P.sin), (x,))
        check_vjp(P.sin, functools.partial(lc.vjp, P.sin), (x,))

        @lc.custom_jvp
        def wrong(x):
            return P.sin(x)
        wrong.defjvp(lambda primals, tangents: (wrong(primals[0]), P.mul(tangents[0], 2.0)))
        with pytest.raises(AssertionError):
            check_grads(wrong, (x,), order=1, modes=("fwd",))
        close(lc.grad(lambda v: reduce_sum(P.sin(v), (0,)))(x),
              numerical_grad(lambda v: np.sum(np.sin(v)), x))


def test_structural_primitives_refuse_negative_shapes():
    from lamella.core.structural import reshape
    with pytest.raises(TypeError, match=r"broadcast_in_dim: shape \(2, -1\) has a negative"):
        lc.make_jaxpr(lambda x: broadcast_in_dim(x, (2, -1), ()))(np.float32(1.0))
    with pytest.raises(TypeError, match="can't reshape"):
        lc.make_jaxpr(lambda x: reshape(x, (-1, -2)))(np.ones(2, np.float32))
