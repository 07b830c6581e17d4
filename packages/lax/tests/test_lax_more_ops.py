"""Tests of the rest of jax.lax's names in lamella.lax: shape helpers, stack/unstack/
tile, identities (copy, stage, dce_sink, device_put_p), empty, dtype, the total-order
comparisons, rng_uniform, index_take, the convolution variants, ragged and scaled
dots, approximate top-k, top_k(axis=), betainc, composite, platform_dependent,
select_and_scatter_p, cond(operand=) and reduce_window's defaults.

Values against NumPy/SciPy or the defining identity, derivatives, vmap against loops
and jit against eager through `lamella.lax.test_util.check`. Every function here
was also compared with JAX 0.10.2 on the same inputs while it was written.
"""

import numpy as np
import pytest
import scipy.special

import lamella.core as lc
import lamella.lax as lax
from lamella.lax.test_util import check, check_vmap

RNG = np.random.default_rng(1)
X = RNG.standard_normal((2, 3)).astype(np.float32)
Y = RNG.standard_normal((2, 3)).astype(np.float32)

# --- shape helpers --------------------------------------------------------------


def test_broadcast_shapes_and_errors():
    assert lax.broadcast_shapes((2, 1), (1, 3), (3,)) == (2, 3)
    assert lax.broadcast_shapes() == ()
    with pytest.raises(ValueError, match="Incompatible shapes"):
        lax.broadcast_shapes((2,), (3,))


def test_broadcast_to_rank_collapse_broadcast_like_shape_as_value():
    check(lambda x: lax.broadcast_to_rank(x, 4), [X], lambda x: x.reshape(1, 1, 2, 3))
    check(lambda x: lax.collapse(x, 0), [X], lambda x: x.reshape(6))
    assert lax.collapse(np.zeros((2, 3, 4, 5)), 1, -1).shape == (2, 12, 5)
    check(lambda x: lax.broadcast_like(x, np.zeros((4, 2, 3))), [X],
          lambda x: np.broadcast_to(x, (4, 2, 3)))
    check(lambda x: lax.broadcast_like(lax.slice(x, (0, 0), (1, 3)), np.zeros((2, 3))), [X],
          lambda x: np.broadcast_to(x[:1], (2, 3)))
    np.testing.assert_array_equal(np.asarray(lax.shape_as_value((2, 3))), [2, 3])
    assert np.asarray(lax.shape_as_value(())).shape == (0,)


def test_shape_tuples_match_the_operations():
    assert lax.reduce_window_shape_tuple((4, 5), (2, 2), (2, 1), [(0, 0), (1, 0)], (2, 1),
                                         (1, 2)) == (3, 4)
    x = np.zeros((1, 8, 8, 3), np.float32)
    w = np.zeros((3, 3, 3, 4), np.float32)
    dn = ("NHWC", "HWIO", "NHWC")
    for padding in ("SAME", "VALID"):
        out = lax.conv_general_dilated(x, w, (2, 1), padding, dimension_numbers=dn)
        assert lax.conv_general_shape_tuple(x.shape, w.shape, (2, 1), padding, dn) \
            == out.shape
        y = lax.conv_transpose(x, w, (2, 2), padding)
        assert lax.conv_transpose_shape_tuple(x.shape, w.shape, (2, 2), padding, dn) \
            == y.shape
    assert lax.conv_shape_tuple((2, 1, 5, 5), (3, 1, 2, 2), (1, 1), [(0, 0), (1, 1)]) \
        == (2, 3, 4, 6)


# --- stack, unstack, tile ----------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack_and_unstack(axis):
    check(lambda x, y: lax.stack([x, y], axis), [X, Y],
          lambda x, y: np.stack([x, y], axis), diff_argnums=(0, 1))
    # Reversed and stacked again: one output, so reverse mode is checked too.
    check(lambda x: lax.stack(lax.unstack(x, axis)[::-1]), [X],
          lambda x: np.moveaxis(x, axis, 0)[::-1])


def test_stack_staged_as_one_primitive_and_errors():
    assert "stack[axis=0]" in str(lc.make_jaxpr(lambda x: lax.stack([x, x]))(X))
    with pytest.raises(ValueError, match="same shape"):
        lax.stack([X, X[:1]])
    with pytest.raises(ValueError, match="at least one operand"):
        lax.stack([])


def test_tile():
    check(lambda x: lax.tile(x, (2, 3)), [X], lambda x: np.tile(x, (2, 3)))
    with pytest.raises(ValueError, match="one entry per axis"):
        lax.tile(X, (2,))


# --- identities, empty, dtype -------------------------------------------------------


def test_copy_and_stage_are_identities():
    check(lax.copy, [X], lambda x: x)
    check(lax.stage, [X], lambda x: x)
    assert "copy" in str(lc.make_jaxpr(lax.copy)(X))
    # As in JAX, a staged scalar is a literal and a staged array a constant.
    assert str(lc.make_jaxpr(lambda x: lax.add(x, lax.stage(np.float32(2))))(X)) == (
        "{ lambda ; a:f32[2,3]. let b:f32[2,3] = add a 2.0:f32[] in (b,) }")
    assert str(lc.make_jaxpr(lambda x: lax.add(x, lax.stage(Y)))(X)) == (
        "{ lambda a:f32[2,3]; b:f32[2,3]. let c:f32[2,3] = add b a in (c,) }")


def test_dce_sink_keeps_a_value_alive():
    def f(x):
        lax.dce_sink(lax.sin(x))
        return x
    assert lax.dce_sink(X) is None
    assert "dce_sink" in str(lc.make_jaxpr(f)(X))
    np.testing.assert_array_equal(np.asarray(lc.jit(f)(X)), X)
    np.testing.assert_array_equal(np.asarray(lc.grad(lambda x: lax.reduce_sum(f(x), (0, 1)))(X)),
                                  np.ones_like(X))


def test_device_put_p_is_an_identity_with_params():
    params = dict(devices=[None], srcs=[None], copy_semantics=[None])
    out, = lax.device_put_p.bind(X, **params)
    np.testing.assert_array_equal(np.asarray(out), X)
    ys = lc.jit(lambda x: lax.device_put_p.bind(x, **params))(X)
    np.testing.assert_array_equal(np.asarray(ys[0]), X)


def test_empty_and_dtype():
    out = lax.empty((2, 3), np.int32)
    assert out.shape == (2, 3) and out.dtype == np.int32
    assert lc.jit(lambda: lax.empty((4,), np.float32))().shape == (4,)
    assert [lax.dtype(v) for v in (1.0, 1, True, np.int8(1), "float64", np.float16)] == [
        np.float32, np.int32, np.bool_, np.int8, np.float32, np.float16]


# --- comparisons in the total order ---------------------------------------------------

TOTAL = np.float32([-np.nan, -np.inf, -1, -0.0, 0.0, 1, np.inf, np.nan])


def _total_key(x):
    # -nan < -inf < ... < -0 < 0 < ... < inf < nan: the sign-magnitude bits as integers.
    bits = x.view(np.int32).astype(np.int64)
    return np.where(bits < 0, -(bits & 0x7FFFFFFF) - 1, bits)


@pytest.mark.parametrize("prim, op", [("eq_to_p", np.equal), ("le_to_p", np.less_equal),
                                      ("lt_to_p", np.less)])
def test_total_order_comparisons(prim, op):
    x, y = np.meshgrid(TOTAL, TOTAL)
    x = np.copysign(np.where(np.isnan(x), np.nan, x), x).astype(np.float32)
    got = np.asarray(lc.jit(getattr(lax, prim).bind)(x, y))
    np.testing.assert_array_equal(got, op(_total_key(x), _total_key(y)))


def test_rng_uniform_draws_in_range():
    out = np.asarray(lc.jit(lambda a, b: lax.rng_uniform(a, b, (1000,)))(
        np.float32(2), np.float32(3)))
    assert out.shape == (1000,) and (out >= 2).all() and (out < 3).all() and out.std() > 0.1
    with pytest.raises(TypeError, match="scalars of one dtype"):
        lax.rng_uniform(np.float32(0), np.int32(1), (2,))


def test_index_take():
    src = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    idxs = (np.int32([1, -1, 3]), np.int32([0, 2, -5]))
    check(lambda s: lax.index_take(s, idxs, (0, 2)), [src],
          lambda s: np.moveaxis(s[idxs[0] % 2, :, idxs[1] % 4], 0, 0))


# --- convolution variants -------------------------------------------------------------
XC = RNG.standard_normal((1, 4, 4, 2)).astype(np.float32)
WC = RNG.standard_normal((3, 3, 2, 2)).astype(np.float32)


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_conv_transpose_with_transposed_kernel_is_the_gradient_of_conv(padding):
    dn = ("NHWC", "HWIO", "NHWC")

    def forward(x):
        return lax.conv_general_dilated(x, WC, (2, 2), padding, dimension_numbers=dn)
    big = np.zeros((1, 7, 7, 2), np.float32) if padding == "VALID" else \
        np.zeros((1, 8, 8, 2), np.float32)
    y = RNG.standard_normal(forward(big).shape).astype(np.float32)
    _, vjp = lc.vjp(forward, big)
    want, = vjp(y)
    got = lax.conv_transpose(y, WC, (2, 2), padding, transpose_kernel=True)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5)
    check(lambda x, w: lax.conv_transpose(x, w, (2, 2), padding), [XC, WC],
          diff_argnums=(0, 1), grad_rtol=1e-3, grad_atol=1e-3, jit_rtol=1e-6)


def _patches_reference(x, window, strides):
    n, c, h, w = x.shape
    oh, ow = (h - window[0]) // strides[0] + 1, (w - window[1]) // strides[1] + 1
    out = np.zeros((n, c * window[0] * window[1], oh, ow), x.dtype)
    for i in range(oh):
        for j in range(ow):
            block = x[:, :, i * strides[0]:i * strides[0] + window[0],
                      j * strides[1]:j * strides[1] + window[1]]
            out[:, :, i, j] = block.reshape(n, -1)
    return out


def test_conv_general_dilated_patches():
    x = RNG.standard_normal((2, 3, 5, 4)).astype(np.float32)
    check(lambda x: lax.conv_general_dilated_patches(x, (2, 3), (1, 1), "VALID"), [x],
          lambda x: _patches_reference(x, (2, 3), (1, 1)))
    np.testing.assert_array_equal(
        np.asarray(lax.conv_general_dilated_patches(x, (2, 2), (2, 1), "VALID")),
        _patches_reference(x, (2, 2), (2, 1)))


def test_conv_general_dilated_local_uses_one_kernel_per_position():
    x = RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)
    w = RNG.standard_normal((5, 3 * 4, 3, 3)).astype(np.float32)  # O, I*window, H, W

    def reference(x, w):
        patches = _patches_reference(x, (2, 2), (1, 1))           # n, I*window, 3, 3
        return np.einsum("nkhw,okhw->nohw", patches, w)
    check(lambda x, w: lax.conv_general_dilated_local(x, w, (1, 1), "VALID", (2, 2)),
          [x, w], reference, diff_argnums=(0, 1), grad_rtol=1e-3, grad_atol=1e-3,
          jit_rtol=1e-5)


# --- ragged and scaled dots -----------------------------------------------------------
LHS = RNG.standard_normal((7, 4)).astype(np.float32)
RHS = RNG.standard_normal((3, 4, 2)).astype(np.float32)
GROUPS = np.int32([2, 3, 1])   # the last row is past every group: zeros


def _ragged_reference(lhs, rhs):
    out = np.zeros((lhs.shape[0], rhs.shape[2]), np.float32)
    start = 0
    for g, size in enumerate(GROUPS):
        out[start:start + size] = lhs[start:start + size] @ rhs[g]
        start += size
    return out


def test_ragged_dot():
    check(lambda lhs, rhs: lax.ragged_dot(lhs, rhs, GROUPS), [LHS, RHS], _ragged_reference,
          diff_argnums=(0, 1), vmap=False, grad_rtol=1e-3, grad_atol=1e-3, jit_rtol=1e-6)
    check_vmap(lambda lhs: lax.ragged_dot(lhs, RHS, GROUPS), [LHS])


def test_ragged_dot_general_in_a_contracting_dimension():
    dn = lax.RaggedDotDimensionNumbers((((1,), (0,)), ((), ())), (1,), ())
    lhs, rhs = LHS.T.copy(), RNG.standard_normal((7, 2)).astype(np.float32)

    def reference(lhs, rhs):
        ends = np.cumsum(GROUPS)
        return np.stack([lhs[:, e - s:e] @ rhs[e - s:e] for s, e in zip(GROUPS, ends)])
    check(lambda lhs, rhs: lax.ragged_dot_general(lhs, rhs, GROUPS, dn), [lhs, rhs], reference,
          diff_argnums=(0, 1), vmap=False, grad_rtol=1e-3, grad_atol=1e-3, jit_rtol=1e-6)


def test_scaled_dot_scales_blocks_of_the_contracting_dimension():
    lhs = RNG.standard_normal((2, 4)).astype(np.float32)
    rhs = RNG.standard_normal((4, 3)).astype(np.float32)
    scale = np.float32([[1, 2], [3, 4]])
    got = lax.scaled_dot(lhs, rhs, lhs_scale=scale, preferred_element_type=np.float32)
    np.testing.assert_allclose(np.asarray(got), (lhs * np.repeat(scale, 2, axis=1)) @ rhs,
                               rtol=1e-5)
    assert lax.scaled_dot(lhs, rhs).dtype.name == "bfloat16"


# --- top-k ------------------------------------------------------------------------------
V = RNG.permutation(60).astype(np.float32).reshape(3, 20) / 7


@pytest.mark.parametrize("axis", [0, 1])
def test_top_k_along_an_axis(axis):
    def reference(v):
        order = np.argsort(-v, axis=axis, kind="stable")[(slice(None),) * axis + (slice(2),)]
        return np.take_along_axis(v, order, axis), order.astype(np.int32)
    check(lambda v: lax.top_k(v, 2, axis=axis), [V], reference, diff_argnums=None)
    check(lambda v: lax.top_k(v, 2, axis=axis)[0], [V], lambda v: reference(v)[0])


@pytest.mark.parametrize("name, sign", [("approx_max_k", -1), ("approx_min_k", 1)])
def test_approx_k_is_exact_on_cpu(name, sign):
    def reference(v):
        order = np.argsort(sign * v, axis=1, kind="stable")[:, :4]
        return np.take_along_axis(v, order, 1), order.astype(np.int32)
    check(lambda v: getattr(lax, name)(v, 4), [V], reference, diff_argnums=None)
    check(lambda v: getattr(lax, name)(v, 4)[0], [V], lambda v: reference(v)[0])
    values, indices = getattr(lax, name)(V.T.copy(), 2, reduction_dimension=0)
    np.testing.assert_array_equal(np.asarray(values), reference(V)[0][:, :2].T)
    # Without aggregation the output keeps XLA's longer prefix (here the whole axis).
    assert getattr(lax, name)(V, 4, aggregate_to_topk=False)[0].shape == (3, 20)


# --- betainc ----------------------------------------------------------------------------


def test_betainc_against_scipy():
    a = np.float32([0.5, 2, 3, 0.1, 10, 1, 2, 5])
    b = np.float32([0.5, 3, 1, 0.2, 20, 1, 0.7, 0.5])
    x = np.float32([0.3, 0.4, 0.9, 0.999, 0.3, 0.2, 0.5, 0.95])
    check(lax.betainc, [a, b, x], lambda a, b, x: scipy.special.betainc(a, b, x),
          diff_argnums=(2,), rtol=2e-5, atol=2e-6, grad_rtol=2e-3, grad_atol=2e-4,
          jit_rtol=1e-5)
    edge = np.asarray(lax.betainc(np.float32([2, 2, -1, 2]), np.float32([3, 3, 1, 3]),
                                  np.float32([0, 1, 0.5, 1.5])))
    np.testing.assert_array_equal(edge[:2], [0, 1])
    assert np.isnan(edge[2:]).all()
    with pytest.raises(TypeError, match="with respect to x only"):
        lc.grad(lambda a: lax.betainc(a, np.float32(2), np.float32(0.5)))(np.float32(1))


# --- composite ----------------------------------------------------------------------------


def _tangent(x, *, scale=1.0):
    return lax.mul(lax.div(lax.sin(x), lax.cos(x)), scale)


def test_composite_lowers_to_a_named_composite_and_differentiates():
    tangent = lax.composite(_tangent, name="my.tangent", version=2)
    x = np.float32([0.1, 0.5])
    check(lambda x: tangent(x, scale=2.0), [x], lambda x: 2 * np.tan(x), jit_rtol=1e-6)
    jaxpr = str(lc.make_jaxpr(lambda x: tangent(x, scale=2.0))(x))
    assert "composite" in jaxpr and "my.tangent" in jaxpr
    text = lc.jit(lambda x: tangent(x, scale=2.0)).lower(x).as_text()
    assert 'stablehlo.composite "my.tangent"' in text and "version = 2" in text
    assert "scale = 2.0" in text
    with pytest.raises(TypeError, match="must be static"):
        lc.jit(lambda x: tangent(x, scale=x))(x)


# --- platform_dependent -----------------------------------------------------------------


def test_platform_dependent_picks_the_cpu_branch():
    def f(x):
        return lax.platform_dependent(x, cpu=lambda x: lax.mul(x, 10.0),
                                      default=lambda x: x)
    x = np.float32([1, 2])
    for g in (f, lc.jit(f)):
        np.testing.assert_array_equal(np.asarray(g(x)), [10, 20])
    other = lc.jit(lambda x: lax.platform_dependent(x, tpu=lax.neg, default=lax.sin))
    np.testing.assert_allclose(np.asarray(other(x)), np.sin(x), rtol=1e-6)
    with pytest.raises(ValueError, match="no branch for platform 'cpu'"):
        lc.jit(lambda x: lax.platform_dependent(x, tpu=lax.neg))(x)
    with pytest.raises(ValueError, match="'cuda' or 'rocm'"):
        lax.platform_dependent(x, gpu=lax.neg)


# --- select_and_scatter_p, cond(operand=), reduce_window defaults ------------------------


def test_select_and_scatter_p_with_ge_and_add_is_select_and_scatter_add():
    operand = RNG.permutation(16).astype(np.float32).reshape(4, 4)
    source = RNG.standard_normal((2, 2)).astype(np.float32)
    scalar = np.float32(0)
    select = lc.make_jaxpr(lax.ge)(scalar, scalar)
    scatter = lc.make_jaxpr(lax.add)(scalar, scalar)
    got = lc.jit(lambda o, s: lax.select_and_scatter_p.bind(
        o, s, np.float32(0), select_jaxpr=select.jaxpr, select_consts=(),
        scatter_jaxpr=scatter.jaxpr, scatter_consts=(), window_dimensions=(2, 2),
        window_strides=(2, 2), padding=((0, 0), (0, 0))))(operand, source)
    want = lax.select_and_scatter_add(source, operand, lax.ge_p, (2, 2), (2, 2),
                                      ((0, 0), (0, 0)))
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_cond_and_switch_take_the_operand_keyword():
    assert float(lax.cond(True, lax.neg, lax.sin, operand=np.float32(2))) == -2.0
    assert float(lax.switch(1, [lax.neg, lax.exp], operand=np.float32(0))) == 1.0
    with pytest.raises(TypeError, match="no positional operands"):
        lax.cond(True, lax.neg, lax.neg, np.float32(1), operand=np.float32(2))


def test_reduce_window_defaults_to_unit_strides_and_valid_padding():
    x = np.arange(5, dtype=np.float32)
    out = lax.reduce_window(x, np.float32(0), lax.add, (2,))
    np.testing.assert_array_equal(np.asarray(out), [1, 3, 5, 7])
