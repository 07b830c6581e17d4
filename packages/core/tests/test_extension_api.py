"""The names a primitive's author imports from `jax.extend.core` and
`jax.interpreters.ad/batching`, and the porting names of `jax` added with them:
custom_vmap, fwd_and_bwd, clear_caches, make_user_context, dlpack, typing (core alone)."""

import numpy as np
import numpy_prims as P
import pytest

import lamella.core as lc
from lamella.core import ad, batching
from lamella.core.custom_batching import custom_vmap
from lamella.core.structural import broadcast_in_dim, reduce_sum
from lamella.core.test_util import check_grads

F32 = np.float32


def close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


# --- custom_vmap -----------------------------------------------------------------


def _rule_calls():
    calls = []

    @custom_vmap
    def f(x, y):
        return P.mul(P.sin(x), y)

    @f.def_vmap
    def f_rule(axis_size, in_batched, x, y):
        calls.append((axis_size, list(in_batched)))
        # Deliberately not f's batching: marks that the rule ran.
        out = P.add(P.mul(P.sin(x), y), 100.0)
        return out, any(in_batched)
    return f, calls


def test_custom_vmap_runs_the_rule_only_under_vmap():
    f, calls = _rule_calls()
    x, y = np.arange(3, dtype=F32), F32(2)
    close(f(F32(1), y), np.sin(1) * 2)
    assert not calls
    close(lc.vmap(f, in_axes=(0, None))(x, y), np.sin(x) * 2 + 100)
    assert calls == [(3, [True, False])]
    # jit keeps the call in the jaxpr, so a later vmap still finds the rule.
    jaxpr = lc.make_jaxpr(f)(F32(1), y)
    assert "custom_vmap_call" in str(jaxpr)
    close(lc.vmap(lc.jit(f), in_axes=(0, None))(x, y), np.sin(x) * 2 + 100)


def test_custom_vmap_forward_mode_uses_the_rules_jvp():
    f, calls = _rule_calls()
    x = np.arange(3, dtype=F32)
    y_dot = lc.vmap(lambda xi: lc.jvp(f, (xi, F32(2)), (F32(1), F32(0)))[1])(x)
    close(y_dot, 2 * np.cos(x))
    jac = lc.jacfwd(lambda v: f(v, F32(2)))(x)  # jacfwd vmaps a JVP
    close(jac, np.diag(2 * np.cos(x)))


def test_custom_vmap_errors_name_the_function():
    f, _ = _rule_calls()
    with pytest.raises(TypeError, match="custom_vmap function f cannot be differentiated "
                                        "in reverse mode"):
        lc.grad(f)(F32(1), F32(2))

    @custom_vmap
    def g(x):
        return x
    with pytest.raises(AttributeError, match="No batching rule defined for custom_vmap "
                                             "function g"):
        g(F32(1))

    @g.def_vmap
    def bad_rule(axis_size, in_batched, x):
        return reduce_sum(x, (0,)), True   # claims batched, drops the batch axis
    with pytest.raises(TypeError, match="marked batched; expected f32\\[3\\]"):
        lc.vmap(g)(np.zeros(3, F32))


def test_custom_vmap_pytrees_and_out_batched_prefix():
    @custom_vmap
    def f(d):
        return {"a": d["a"], "b": (d["b"], d["b"])}

    @f.def_vmap
    def rule(axis_size, in_batched, d):
        assert in_batched == [{"a": True, "b": False}]
        b = broadcast_in_dim(d["b"], (axis_size,), ())
        return {"a": d["a"], "b": (b, d["b"])}, {"a": True, "b": (True, False)}

    out = lc.vmap(f, in_axes=({"a": 0, "b": None},))({"a": np.arange(2, dtype=F32),
                                                        "b": F32(5)})
    close(out["b"][0], [5, 5])
    close(out["b"][1], 5)


# --- fwd_and_bwd, clear_caches, make_user_context ---------------------------------


def test_fwd_and_bwd_reuses_one_compiled_backward_pass():
    def f(x, w):
        return reduce_sum(P.sin(P.mul(x, w)), (0,))
    fwd, bwd = lc.fwd_and_bwd(f, argnums=(0, 1))
    x, w = np.arange(3, dtype=F32), np.full(3, 2, F32)
    structures = set()
    for _ in range(3):
        y, residuals = fwd(x, w)
        gx, gw = bwd(residuals, F32(1))
        structures.add(lc.tree_util.tree_structure(residuals))
    close(y, np.sin(x * w).sum())
    close(gx, w * np.cos(x * w))
    close(gw, x * np.cos(x * w))
    # One treedef (the arrays are the leaves, the backward jaxpr is static): one trace of bwd.
    assert len(structures) == 1
    fwd1, bwd1 = lc.fwd_and_bwd(f, argnums=1, jitted=False)
    close(bwd1(fwd1(x, w)[1], F32(1)), x * np.cos(x * w))


def test_clear_caches_forgets_traces():
    traces = []

    @lc.jit
    def f(x):
        traces.append(1)
        return P.add(x, 1.0)
    f(F32(1))
    f(F32(2))
    assert len(traces) == 1
    lc.clear_caches()
    close(f(F32(3)), 4)
    assert len(traces) == 2


def test_make_user_context_joins_the_cache_key():
    traces = []
    mode = lc.make_user_context(default_value=None)

    @lc.jit
    def f(x):
        traces.append(1)
        return x
    f(F32(1))
    with mode(1):
        f(F32(1))
    with mode(1):
        f(F32(1))
    with mode(2):
        f(F32(1))
    assert len(traces) == 3


# --- jax.extend.core and jax.interpreters names ------------------------------------


def test_call_primitive_has_every_rule():
    tagged_p = lc.CallPrimitive("tagged")

    def tagged(x):
        body = lc.make_jaxpr(lambda y: [P.sin(P.mul(y, y))])(x)
        return tagged_p.bind(x, jaxpr=body)[0]
    x = np.linspace(-1, 1, 4).astype(np.float64)
    close(tagged(x), np.sin(x * x))
    check_grads(tagged, (x,), order=2, modes=("fwd", "rev"))
    close(lc.vmap(tagged)(x[:, None]), np.sin(x * x)[:, None])
    assert "tagged[" in str(lc.make_jaxpr(tagged)(x))


def test_jaxpr_builders_make_a_runnable_jaxpr():
    a, b = lc.gensym()(lc.ShapedArray((), np.float32)), lc.DropVar(lc.ShapedArray((), F32))
    out = lc.gensym()(lc.ShapedArray((), np.float32))
    eqns = [lc.new_jaxpr_eqn([a], [b], P.sin_p, {}, lc.no_effects),
            lc.new_jaxpr_eqn([a], [out], P.cos_p, {}, lc.no_effects)]
    jaxpr = lc.Jaxpr([], [a], [out], eqns)
    close(lc.eval_jaxpr(jaxpr, [], F32(0))[0], 1)
    nested = lc.make_jaxpr(lambda x: lc.jit(P.sin)(x))(F32(1)).jaxpr
    assert [len(j.eqns) for j in lc.subjaxprs(nested)] == [1]
    assert list(lc.jaxprs_in_params({"n": 1})) == []
    with pytest.raises(TypeError, match="ctx=None"):
        lc.new_jaxpr_eqn([a], [out], P.cos_p, {}, lc.no_effects, None, object())


def test_trace_queries():
    assert not lc.unsafe_am_i_under_a_jit_DO_NOT_USE()
    seen = {}

    def f(x):
        seen["jit"] = lc.unsafe_am_i_under_a_jit_DO_NOT_USE()
        seen["vmap"] = lc.unsafe_am_i_under_a_vmap_DO_NOT_USE()
        seen["names"] = lc.unsafe_get_axis_names_DO_NOT_USE()
        seen["top"] = lc.find_top_trace([x]) is x._trace
        return x
    lc.jit(lc.vmap(f, axis_name="i"))(np.zeros(2, F32))
    assert seen == {"jit": True, "vmap": True, "names": ["i"], "top": True}
    assert lc.get_opaque_trace_state() == lc.get_opaque_trace_state()
    with lc.take_current_trace() as trace:
        with pytest.raises(RuntimeError, match="take_current_trace"):
            P.sin(F32(1))
    assert trace is lc.find_top_trace([1.0])
    assert lc.concrete_or_error(int, F32(3)) == 3
    with pytest.raises(lc.ConcretizationTypeError, match="needed for a shape"):
        lc.jit(lambda x: lc.concrete_or_error(int, x, "needed for a shape"))(F32(1))


def test_ad_and_batching_names():
    assert ad.add_jaxvals_p is ad.add_jaxvals_p and ad.add_jaxvals(F32(1), F32(2)) == 3
    assert ad.get_primitive_transpose(P.add_p) is ad.primitive_transposes[P.add_p]
    with pytest.raises(NotImplementedError, match="'sin' not implemented"):
        ad.get_primitive_transpose(P.sin_p)
    aval = lc.ShapedArray((3, 2), F32)
    assert lc.mapped_aval(3, 0, aval).shape == (2,)
    assert lc.unmapped_aval(4, 1, aval).shape == (3, 4, 2)
    assert batching.axis_primitive_batchers is batching.fancy_primitive_batchers
    close(batching.bdim_at_front(np.zeros((2, 3)), 1, 3), np.zeros((3, 2)))
    assert lc.primal_dtype_to_tangent_dtype(np.int32) == lc.float0
    assert lc.valid_jaxtype(np.ones(2)) and not lc.valid_jaxtype("x")
    assert np.ndarray in lc.array_types


def test_defbilinear_and_defreducer():
    outer_p = lc.Primitive("outer_product")
    outer_p.def_impl(np.multiply.outer)
    outer_p.def_abstract_eval(lambda x, y: lc.ShapedArray(x.shape + y.shape, x.dtype))
    ad.defbilinear(outer_p,
                   lambda ct, x, y: reduce_sum(P.mul(ct, broadcast_in_dim(y, lc.get_aval(ct).shape,
                                                                          (1,))), (1,)),
                   lambda ct, x, y: reduce_sum(P.mul(ct, broadcast_in_dim(x, lc.get_aval(ct).shape,
                                                                          (0,))), (0,)))
    x, y = np.arange(1.0, 3.0), np.arange(1.0, 4.0)
    with lc.enable_x64():
        check_grads(lambda a, b: outer_p.bind(a, b), (x, y), order=1, modes=("fwd", "rev"))

    total_p = lc.Primitive("total")
    total_p.def_impl(lambda v, *, axes: np.sum(v, axis=axes))
    total_p.def_abstract_eval(lambda v, *, axes: lc.ShapedArray(
        tuple(d for i, d in enumerate(v.shape) if i not in axes), v.dtype))
    batching.defreducer(total_p)
    v = np.arange(24.0).reshape(2, 3, 4)
    close(lc.vmap(lambda t: total_p.bind(t, axes=(1,)), in_axes=1)(v), v.sum(axis=2).T)


def test_dlpack_typing_version():
    x = np.arange(3, dtype=np.int32)
    close(lc.dlpack.from_dlpack(x), x)
    assert lc.dlpack.is_supported_dtype(np.float32)
    with pytest.raises(TypeError, match="DLPack protocol"):
        lc.dlpack.from_dlpack([1, 2])
    assert isinstance(1.0, lc.typing.ArrayLike)
    assert lc.__version__ == lc.version.__version__


def test_jaxs_remaining_parameters():
    from lamella.core.trace_queries import axis_size
    seen = []
    lc.make_jaxpr(lambda x: seen.append((lc.unsafe_get_axis_names_DO_NOT_USE(),
                                         axis_size("i"))) or x, axis_env=[("i", 4)])(F32(1))
    assert seen == [(["i"], 4)] and lc.unsafe_get_axis_names_DO_NOT_USE() == []
    with pytest.warns(DeprecationWarning, match="backend and device argument on jit"):
        f = lc.jit(lambda x: x, device=lc.devices()[0], backend="cpu")
    close(f(F32(2)), 2)
    with pytest.warns(DeprecationWarning), pytest.raises(RuntimeError, match="gpu"):
        lc.jit(lambda x: x, backend="gpu")
    with pytest.raises(NotImplementedError, match="static_argnums"):
        lc.checkpoint(lambda x: x, concrete=True)
    assert lc.dtypes.issubdtype(a=np.float32, b=np.floating)
    key_dtype = type("KeyDType", (), {"type": lc.dtypes.prng_key,
                                       "__repr__": lambda self: "key<test>"})()
    with pytest.raises(ValueError, match="allow_extended_dtype=False"):
        lc.dtypes.canonicalize_dtype(key_dtype)
    assert lc.dtypes.canonicalize_dtype(key_dtype, allow_extended_dtype=True) is key_dtype


def test_shape_dtype_struct_like_and_update():
    s = lc.ShapeDtypeStruct.like(np.ones((2, 3), np.int8))
    assert s == lc.ShapeDtypeStruct((2, 3), np.int8)
    assert lc.ShapeDtypeStruct.like(2.0).weak_type
    assert s.update(shape=(4,)) == lc.ShapeDtypeStruct((4,), np.int8)
    with pytest.raises(TypeError, match="unexpected fields"):
        s.update(rank=2)
