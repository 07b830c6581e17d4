"""lamella.core.state: ref indexing, the state primitives' rules, discharge and run_state.

Each test discharges stateful code (through `run_state` or `discharge_state`)
and compares with the same computation written on NumPy arrays.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as jnp
from lamella.core import ShapedArray, ad, batching
from lamella.core.state import (
    AbstractRef,
    Ref,
    addupdate_p,
    discharge_state,
    ds,
    get_p,
    index_spec,
    run_state,
    swap_p,
    trace_stateful,
)

F32 = np.float32


def test_abstract_ref_aval():
    ref = AbstractRef(ShapedArray((2, 3), F32))
    assert ref.str_short() == "Ref{f32[2,3]}"
    assert ref == AbstractRef(ShapedArray((2, 3), F32)) and ref != ShapedArray((2, 3), F32)
    assert ref.inner_aval == ShapedArray((2, 3), F32)
    assert ref.to_tangent_aval() == ref


def test_index_spec_normalizes_keys():
    spec, dyn = index_spec((4, 5, 6), (1, ..., ds(1, 3, stride=2)))
    assert spec.out_shape == (5, 3) and dyn == []
    spec, _ = index_spec((4, 5), (-1,))
    assert spec.dims[0].start == 3 and spec.out_shape == (5,)
    spec, _ = index_spec((8,), slice(1, 7, 3))
    assert (spec.dims[0].start, spec.dims[0].size, spec.dims[0].stride) == (1, 2, 3)
    assert ds(4) == slice(0, 4)


@pytest.mark.parametrize("key, message", [
    ((0, 0, 0), "Too many indices"),
    ((5,), "out of bounds"),
    ((ds(3, 4),), "out of bounds"),
    ((None,), "newaxis"),
    ((np.ones(2, np.int32),), "integer scalars"),
])
def test_index_spec_errors(key, message):
    with pytest.raises((IndexError, TypeError), match=message):
        index_spec((4, 4), key)


def test_ref_errors_name_the_ref():
    def body(r):
        Ref(r._ref, name="o_ref")[...] = np.ones(3, np.int32)
    with pytest.raises(TypeError, match="'o_ref' of dtype float32"):
        run_state(body)(np.zeros(3, F32))

    def body2(r):
        Ref(r._ref, name="o_ref")[0:2] = np.ones(3, F32)
    with pytest.raises(TypeError, match="window has shape \\(2,\\)"):
        run_state(body2)(np.zeros(3, F32))


def _window_keys():
    def one(n):
        static = st.builds(lambda a, b, s: slice(min(a, b), max(a, b), s),
                           st.integers(0, n), st.integers(0, n), st.integers(1, 3))
        dyn = st.integers(0, n - 1).flatmap(
            lambda s: st.builds(lambda k, stride: ds(np.int32(s), k, stride),
                                st.integers(1, max(1, (n - s + 1) // 2)), st.integers(1, 2))
            .filter(lambda d: s + (d.size - 1) * d.stride < n))
        return st.one_of(st.integers(-n, n - 1), static, dyn)
    return st.tuples(one(5), one(6))


def _numpy_key(key):
    return tuple(slice(int(k.start), int(k.start) + k.size * k.stride, k.stride)
                 if hasattr(k, "stride") else k for k in key)


_x = np.arange(30, dtype=F32).reshape(5, 6)


@settings(max_examples=40, deadline=None)
@given(_window_keys())
def test_get_swap_addupdate_match_numpy(key):
    want_read = _x[_numpy_key(key)]
    vals = np.full(want_read.shape, -1.0, F32)

    def body(refs):
        x, out, acc = refs
        out[...] = jnp.zeros_like(out[...])
        read = x[key]
        old = x.swap(vals, key)
        acc.addupdate(read, key)
        out[key] = old - read  # zero where the read and the swap agree
    x, out, acc = run_state(body)((_x, np.ones_like(_x), np.ones_like(_x)))
    want_x = _x.copy()
    want_x[_numpy_key(key)] = vals
    want_acc = np.ones_like(_x)
    want_acc[_numpy_key(key)] += want_read
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_array_equal(acc, want_acc)
    np.testing.assert_array_equal(out, np.zeros_like(_x))


def test_views_compose():
    def body(ref):
        row = ref.at[2]
        assert row.shape == (6,)
        row.at[ds(1, 4)][::2] = np.array([-1, -2], F32)
        ref.at[:, 4][1:3] = ref[0, 0:2]
    got = run_state(body)(_x)
    want = _x.copy()
    want[2, 1:5:2] = [-1, -2]
    want[1:3, 4] = _x[0, 0:2]
    np.testing.assert_array_equal(got, want)


def test_traced_indices_under_jit_and_grad():
    def f(x, i):
        def body(refs):
            xr, acc = refs
            acc[ds(i, 2)] = xr[ds(i, 2)] * xr[ds(i, 2)]
        return run_state(body)((x, jnp.zeros_like(x)))[1]
    x = np.arange(5, dtype=F32)
    np.testing.assert_array_equal(lc.jit(f)(x, 2), [0, 0, 4, 9, 0])
    np.testing.assert_allclose(lc.grad(lambda x: f(x, 1).sum())(x), [0, 2, 4, 0, 0])


def test_control_flow_over_refs():
    def body(refs):
        x, acc = refs

        def step(i, c):
            acc[ds(i, 1)] = acc[ds(i, 1)] + 2 * x[ds(i, 1)]
            return c + 1
        lax.fori_loop(0, 4, step, 0)

        def set_first():
            acc[0] = 100.0
        lax.cond(acc[1] > 1, set_first, lambda: None)

        def bump(c):
            acc[3] = acc[3] + 1
            return c + 1
        lax.while_loop(lambda c: acc[3] < 20.0, bump, 0)
    x = np.arange(4, dtype=F32)
    want = [100, 2, 4, 20]
    for run in (run_state(body), lc.jit(run_state(body))):
        np.testing.assert_array_equal(run((x, np.zeros(4, F32)))[1], want)
    batched = lc.vmap(lambda x: run_state(body)((x, jnp.zeros(4)))[1])(np.stack([x, x + 1]))
    np.testing.assert_array_equal(batched, [want, [100, 4, 6, 20]])


def test_discharge_state_is_functional():
    def kernel(a, b):
        b[::2] = a[1::2] * 3
        return [a[0]]
    avals = [AbstractRef(ShapedArray((6,), F32))] * 2
    jaxpr, consts = trace_stateful(kernel, avals)
    assert "swap[idx=[0:+3:2]]" in str(jaxpr)
    closed = discharge_state(jaxpr, consts)
    assert [a.str_short() for a in closed.in_avals] == ["f32[6]", "f32[6]"]
    a = np.arange(6, dtype=F32)
    out, a_final, b_final = lc.jaxpr_as_fun(closed)(a, np.zeros(6, F32))
    assert out == 0
    np.testing.assert_array_equal(a_final, a)
    np.testing.assert_array_equal(b_final, [3, 0, 9, 0, 15, 0])


def _stateful(fun, *shapes):
    jaxpr, consts = trace_stateful(fun, [AbstractRef(ShapedArray(s, F32)) for s in shapes])
    return lc.ClosedJaxpr(jaxpr, consts)


def _body(x, y):
    y[1:3] = y[1:3] + x[0:2] * x[2:4]
    y.addupdate(x[0:4], slice(0, 4))
    return [x[3] * y[0]]


def test_jvp_rule_matches_jvp_of_discharged():
    closed = _stateful(_body, (4,), (4,))
    jvp_closed, nonzeros = ad.jvp_jaxpr(closed, [True, True])
    primals = [np.arange(4, dtype=F32) + 1, np.ones(4, F32)]
    tangents = [np.full(4, 0.5, F32), np.arange(4, dtype=F32)]
    got = lc.jaxpr_as_fun(discharge_state(jvp_closed))(*primals, *tangents)
    want_p, want_t = lc.jvp(lc.jaxpr_as_fun(discharge_state(closed)), primals, tangents)
    # outputs: primal out, tangent out; then final refs: primals then tangent refs
    np.testing.assert_allclose(got[0], want_p[0])
    np.testing.assert_allclose(got[1], want_t[0])
    np.testing.assert_allclose(got[2:4], want_p[1:])
    np.testing.assert_allclose(got[4:6], want_t[1:])


def test_batching_rule_matches_loop():
    closed = _stateful(_body, (4,), (4,))
    axis = batching.AxisData(None, 3)
    batched, out_dims = batching.batch_jaxpr(closed, axis, (1, 0), instantiate=True)
    xs = np.arange(12, dtype=F32).reshape(4, 3)  # batched along axis 1
    ys = np.arange(12, dtype=F32).reshape(3, 4) / 4
    got = lc.jaxpr_as_fun(discharge_state(batched))(xs, ys)
    plain = lc.jaxpr_as_fun(discharge_state(closed))
    for b in range(3):
        want = plain(xs[:, b], ys[b])
        np.testing.assert_allclose(got[0][b], want[0])
        np.testing.assert_allclose(np.moveaxis(np.asarray(got[1]), 1, 0)[b], want[1])
        np.testing.assert_allclose(got[2][b], want[2])


def test_batched_index_is_an_error():
    closed = _stateful(lambda r: [r[0]], (4,))
    jaxpr, consts = trace_stateful(lambda r, i: [r[ds(i, 1)]],
                                   [AbstractRef(ShapedArray((4,), F32)), ShapedArray((), "int32")])
    with pytest.raises(ValueError, match="batched indices"):
        batching.batch_jaxpr(lc.ClosedJaxpr(jaxpr, consts), batching.AxisData(None, 2), (None, 0))
    assert closed is not None


def test_transpose_rules_are_adjoint():
    # <get(r), c> == <r, transpose(c)>: the transpose of get accumulates c into the ct ref.
    c = np.arange(3, dtype=F32) + 1
    spec, _ = index_spec((5,), (ds(1, 3),))

    def get_t(ct_ref):
        ad.primitive_transposes[get_p](c, ct_ref._ref, specs=(spec,))
    np.testing.assert_array_equal(run_state(get_t)(np.zeros(5, F32)), [0, 1, 2, 3, 0])

    def swap_t(refs):
        ct_ref, out = refs
        _, ct_val = ad.primitive_transposes[swap_p](c, ct_ref._ref, ad.UndefinedPrimal(None),
                                                    specs=(spec,))[:2]
        out[ds(1, 3)] = ct_val
    ct_ref, out = run_state(swap_t)((np.full(5, 7, F32), np.zeros(5, F32)))
    np.testing.assert_array_equal(ct_ref, [7, 1, 2, 3, 7])
    np.testing.assert_array_equal(out, [0, 7, 7, 7, 0])

    def add_t(refs):
        ct_ref, out = refs
        ct_val = ad.primitive_transposes[addupdate_p]([], ct_ref._ref, ad.UndefinedPrimal(None),
                                                      specs=(spec,))[1]
        out[ds(1, 3)] = ct_val
    _, out = run_state(add_t)((np.arange(5, dtype=F32), np.zeros(5, F32)))
    np.testing.assert_array_equal(out, [0, 1, 2, 3, 0])


def test_core_discharges_whole_refs_without_lax():
    jaxpr, consts = trace_stateful(lambda r: (r.set(r[...]), [])[1],
                                   [AbstractRef(ShapedArray((2,), F32))])
    assert len(discharge_state(jaxpr, consts).jaxpr.eqns) == 0
