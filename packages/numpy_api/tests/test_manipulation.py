"""Shape manipulation, joining, splitting, selection and padding against NumPy:
values over shapes (0-d and empty included) and dtypes (bool, int, float16,
bfloat16, float32), every pad mode against np.pad, derivatives, vmap, jit, traced
arguments where JAX allows them, and the errors for bad input."""

import ml_dtypes
import numpy as np
import pytest
from checks import check, check_jit_matches_eager
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella.core.errors import ConcretizationTypeError
from lamella.numpy import manipulation as m
from lamella.numpy.util import AxisError

SHAPES = [(), (0,), (3,), (2, 3), (1, 3, 2), (2, 0, 1)]
DTYPES = [np.bool_, np.int32, np.float16, ml_dtypes.bfloat16, np.float32]


def make(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    return rng.integers(-5, 6, shape).astype(dtype)  # integral, so exact in every dtype


def same(got, want, dtype=None):
    """Equal values, shapes and dtypes (`dtype` overrides NumPy's), lists elementwise."""
    if isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w, dtype)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == np.dtype(dtype or want.dtype), (got.dtype, dtype or want.dtype)
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


# --- values against NumPy over shapes and dtypes ----------------------------------------
def _flat_ops(x):
    shape = x.shape
    return [
        (lambda a: m.ravel(a, order="F"), lambda a: np.ravel(a, order="F")),
        (lambda a: m.reshape(a, (1, -1)), lambda a: np.reshape(a, (1, -1))),
        (lambda a: m.reshape(a, shape[::-1], order="F"),
         lambda a: np.reshape(a, shape[::-1], order="F")),
        (m.transpose, np.transpose), (m.flip, np.flip), (m.squeeze, np.squeeze),
        (m.atleast_1d, np.atleast_1d), (m.atleast_2d, np.atleast_2d),
        (m.atleast_3d, np.atleast_3d),
        (lambda a: m.expand_dims(a, (0, -1)), lambda a: np.expand_dims(a, (0, -1))),
        (lambda a: m.tile(a, (2, 1)), lambda a: np.tile(a, (2, 1))),
        (lambda a: m.repeat(a, 2), lambda a: np.repeat(a, 2)),
        (lambda a: m.roll(a, 4), lambda a: np.roll(a, 4)),
        (lambda a: m.broadcast_to(a, (2, *shape)), lambda a: np.broadcast_to(a, (2, *shape))),
        (lambda a: m.resize(a, (2, 3)), lambda a: np.resize(a, (2, 3))),
    ]


def _axis_ops(x):
    n = x.shape[0]
    counts = np.arange(n) % 3
    return [
        (lambda a: m.moveaxis(a, 0, -1), lambda a: np.moveaxis(a, 0, -1)),
        (lambda a: m.swapaxes(a, 0, -1), lambda a: np.swapaxes(a, 0, -1)),
        (lambda a: m.flipud(a), np.flipud),
        (lambda a: m.roll(a, -2, 0), lambda a: np.roll(a, -2, 0)),
        (lambda a: m.array_split(a, 2), lambda a: np.array_split(a, 2)),
        (lambda a: m.split(a, [1, -1]), lambda a: np.split(a, [1, -1])),
        (m.unstack, lambda a: tuple(np.unstack(a))),
        (lambda a: m.repeat(a, counts, axis=0), lambda a: np.repeat(a, counts, axis=0)),
        (lambda a: m.insert(a, [0, n], 3, axis=0), lambda a: np.insert(a, [0, n], 3, axis=0)),
        (lambda a: m.delete(a, slice(None, None, 2), axis=0),
         lambda a: np.delete(a, slice(None, None, 2), axis=0)),
        (lambda a: m.append(a, a, axis=0), lambda a: np.append(a, a, axis=0)),
        (lambda a: m.hsplit(a, [1]), lambda a: np.hsplit(a, [1])),
    ]


def _matrix_ops(x):
    return [
        (lambda a: m.rot90(a), np.rot90), (lambda a: m.rot90(a, 2), lambda a: np.rot90(a, 2)),
        (lambda a: m.rot90(a, -1, (1, 0)), lambda a: np.rot90(a, -1, (1, 0))),
        (m.fliplr, np.fliplr), (m.matrix_transpose, np.matrix_transpose),
        (lambda a: m.vsplit(a, [1]), lambda a: np.vsplit(a, [1])),
        (lambda a: m.column_stack([a, a]), lambda a: np.column_stack([a, a])),
        (lambda a: m.dstack([a, a]), lambda a: np.dstack([a, a])),
    ]


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(SHAPES), st.sampled_from(DTYPES), st.integers(0, 3))
def test_structural_functions_match_numpy(shape, dtype, seed):
    x = make(shape, dtype, seed)
    ops = _flat_ops(x)
    if x.ndim >= 1:
        ops += _axis_ops(x)
    if x.ndim >= 2:
        ops += _matrix_ops(x)
    if x.ndim >= 3:
        ops.append((lambda a: m.dsplit(a, [1]), lambda a: np.dsplit(a, [1])))
    # One jitted program per example: eagerly, each primitive of each op compiles alone.
    outs = lc.jit(lambda a: [ours(a) for ours, _ in ops])(x)
    for out, (_, theirs) in zip(outs, ops):
        same(out, theirs(x))


I32 = np.arange(6, dtype=np.int32).reshape(2, 3)
F16 = np.float16([[0.5, 1.5, -2.0]])
F32 = np.float32([[1.25, -3.0, 4.0]])
B = np.array([[True, False, True]])


@pytest.mark.parametrize("ours, theirs, dtype", [
    (lambda: m.concatenate([I32, F16]), lambda: np.concatenate([I32, F16]), np.float16),
    (lambda: m.concatenate([I32, B], axis=None), lambda: np.concatenate([I32, B], axis=None),
     np.int32),
    (lambda: m.concatenate([I32, F32], axis=-2, dtype=np.float16),
     lambda: np.concatenate([I32, F32], axis=-2).astype(np.float16), np.float16),
    (lambda: m.concatenate(I32, axis=0), lambda: np.concatenate(I32, axis=0), np.int32),
    (lambda: m.concat([I32.T, I32.T], axis=1), lambda: np.concatenate([I32.T, I32.T], 1),
     np.int32),
    (lambda: m.stack([F32, F16], axis=-1), lambda: np.stack([F32, F16], axis=-1), np.float32),
    (lambda: m.stack([B, B], axis=1, dtype=np.int32), lambda: np.stack([B, B], 1), np.int32),
    (lambda: m.vstack([I32[0], I32]), lambda: np.vstack([I32[0], I32]), None),
    (lambda: m.hstack([I32[0], np.int32([7])]), lambda: np.hstack([I32[0], np.int32([7])]),
     None),
    (lambda: m.hstack([I32, I32]), lambda: np.hstack([I32, I32]), None),
    (lambda: m.dstack([I32[0], I32[1]]), lambda: np.dstack([I32[0], I32[1]]), None),
    (lambda: m.column_stack([I32[0], I32.T]), lambda: np.column_stack([I32[0], I32.T]), None),
    (lambda: m.block([[I32, I32[:, :1]], [np.int32([[7, 8, 9, 10]])]]),
     lambda: np.block([[I32, I32[:, :1]], [np.int32([[7, 8, 9, 10]])]]), None),
    (lambda: m.block([np.int32(1), I32[0]]), lambda: np.block([np.int32(1), I32[0]]), None),
    (lambda: m.block([[F32], [F16]]), lambda: np.block([[F32], [F16]]), np.float32),
    (lambda: m.append(I32, F32), lambda: np.append(I32, F32), np.float32),
    (lambda: m.broadcast_arrays(I32, np.int32([[1], [2]])),
     lambda: np.broadcast_arrays(I32, np.int32([[1], [2]])), None),
    (lambda: m.insert(I32, 1, np.int32([7, 8]), axis=1),
     lambda: np.insert(I32, 1, [7, 8], axis=1), None),
    (lambda: m.insert(I32, [2, 0, 2], 9.7, axis=1),
     lambda: np.insert(I32, [2, 0, 2], 9.7, axis=1), None),
    (lambda: m.insert(I32, -1, np.int32([[5, 6, 7]]), axis=0),
     lambda: np.insert(I32, -1, [[5, 6, 7]], 0), None),
    (lambda: m.insert(I32, slice(0, 3, 2), 0), lambda: np.insert(I32, slice(0, 3, 2), 0), None),
    (lambda: m.delete(I32, 1), lambda: np.delete(I32, 1), None),
    (lambda: m.delete(I32, np.array([True, False, True]), axis=1),
     lambda: np.delete(I32, np.array([True, False, True]), axis=1), None),
    (lambda: m.delete(np.arange(30, dtype=np.int32), np.arange(0, 30, 3)),  # gather path
     lambda: np.delete(np.arange(30, dtype=np.int32), np.arange(0, 30, 3)), None),
    (lambda: m.trim_zeros(np.int32([0, 0, 3, 0, 4, 0])), lambda: np.int32([3, 0, 4]), None),
    (lambda: m.trim_zeros(np.int32([0, 0, 3, 0]), "b"), lambda: np.int32([0, 0, 3]), None),
    (lambda: m.trim_zeros(np.float32([0, 0])), lambda: np.float32([]), None),
    # N-D as NumPy 2.2 / JAX: every axis (axis=None) or the ones given.
    (lambda: m.trim_zeros(np.int32([[0, 0, 0], [0, 1, 0], [0, 0, 0]])),
     lambda: np.int32([[1]]), None),
    (lambda: m.trim_zeros(np.int32([[0, 0, 0], [0, 1, 0], [0, 0, 0]]), axis=0),
     lambda: np.int32([[0, 1, 0]]), None),
    (lambda: m.repeat(np.int32([[1, 2], [3, 4]]), np.int32([2]), axis=1),
     lambda: np.repeat(np.int32([[1, 2], [3, 4]]), [2], axis=1), None),
    (lambda: m.repeat(np.int32([1, 2, 3]), 2, total_repeat_length=4),
     lambda: np.int32([1, 1, 2, 2]), None),
    (lambda: m.repeat(np.arange(12, dtype=np.int32), np.arange(12) % 2),  # gather path
     lambda: np.repeat(np.arange(12, dtype=np.int32), np.arange(12) % 2), None),
    (lambda: m.roll(I32, (1, -1), (0, 1)), lambda: np.roll(I32, (1, -1), (0, 1)), None),
    (lambda: m.roll(I32, (1, 2), 1), lambda: np.roll(I32, (1, 2), 1), None),
    (lambda: m.split(np.arange(6, dtype=np.int32), [4, 2, 9]),
     lambda: np.split(np.arange(6, dtype=np.int32), [4, 2, 9]), None),
    (lambda: m.tile(np.int32(3), 2), lambda: np.tile(np.int32(3), 2), None),
    (lambda: m.tile(I32, (2, 1, 0)), lambda: np.tile(I32, (2, 1, 0)), None),
    (lambda: m.rollaxis(np.zeros((2, 3, 4), np.float32), 2, 1),
     lambda: np.rollaxis(np.zeros((2, 3, 4), np.float32), 2, 1), None),
    (lambda: m.permute_dims(I32, (1, 0)), lambda: np.permute_dims(I32, (1, 0)), None),
    (lambda: m.squeeze(np.zeros((1, 2, 1), np.int32), (0, -1)), lambda: np.zeros(2, np.int32),
     None),
    (lambda: m.choose(np.int32([[0, 4], [-1, 1]]), [I32[:, :2], np.int32([10, 20]), 7],
                      mode="wrap"),
     lambda: np.choose(np.int32([[0, 4], [-1, 1]]), [I32[:, :2], [10, 20], 7], mode="wrap"),
     np.int32),
    (lambda: m.choose(np.int32([5, -3]), np.float32([[1, 2], [3, 4]]), mode="clip"),
     lambda: np.choose(np.int32([5, -3]), np.float32([[1, 2], [3, 4]]), mode="clip"), None),
    (lambda: m.choose(np.int32([0, 1]), [np.float16([1, 2]), I32[0, :2]]),
     lambda: np.float16([1, 1]), None),
    (lambda: m.select([I32 > 3, I32 > 1], [I32, -I32]),
     lambda: np.select([I32 > 3, I32 > 1], [I32, -I32]), None),
    (lambda: m.select([B], [F16], default=2.5), lambda: np.float16([[0.5, 2.5, -2.0]]), None),
    (lambda: m.piecewise(I32, I32 > 2, [lambda v: v * 2]),
     lambda: np.piecewise(I32, [I32 > 2], [lambda v: v * 2]), None),
    (lambda: m.piecewise(F32, [F32 < 0, F32 < 2], [lambda v, k: v * k, 1.5, -1], 3),
     lambda: np.piecewise(F32, [F32 < 0, F32 < 2], [lambda v, k: v * k, 1.5, -1], 3), None),
    (lambda: m.resize(np.zeros((0,), np.int32), 3), lambda: np.zeros(3, np.int32), None),
])
def test_joining_selection_and_indices_match_numpy(ours, theirs, dtype):
    same(ours(), theirs(), dtype)


def test_broadcast_shapes():
    assert m.broadcast_shapes((2, 1), (1, 3), 3) == np.broadcast_shapes((2, 1), (1, 3), 3)
    assert m.broadcast_shapes((0, 1), ()) == (0, 1)
    assert m.broadcast_shapes() == ()


# --- pad: every mode against np.pad ----------------------------------------------------
PAD_CASES = [
    ("constant", {}), ("constant", {"constant_values": -4}),
    ("constant", {"constant_values": ((1, 2), (3, 4))}), ("constant", {"constant_values": 2.7}),
    ("edge", {}), ("wrap", {}), ("reflect", {}), ("reflect", {"reflect_type": "odd"}),
    ("symmetric", {}), ("symmetric", {"reflect_type": "odd"}), ("linear_ramp", {}),
    ("linear_ramp", {"end_values": ((6, -2), (10, 0))}), ("maximum", {}), ("minimum", {}),
    ("mean", {}), ("median", {}), ("mean", {"stat_length": ((1, 2), (2, 3))}),
    ("median", {"stat_length": 2}), ("maximum", {"stat_length": 1}),
]
V1 = np.float32([1.5, 5, 2, 7.25])
M2 = np.int32([[1, 4, 2], [8, 3, 9], [-8, 16, 0]])


@pytest.mark.parametrize("mode, kwargs", PAD_CASES, ids=[f"{md}-{'-'.join(kw)}"
                                                         for md, kw in PAD_CASES])
def test_pad_matches_numpy(mode, kwargs):
    for x, widths in ((V1, [(1, 3), 7]), (M2, [((2, 0), (1, 4)), 1])):
        if x.ndim == 1 and any(np.ndim(v) == 2 for v in kwargs.values()):
            continue
        # Both widths in one jitted program (eager pads are checked elsewhere).
        outs = lc.jit(lambda a, ws=widths: [m.pad(a, w, mode=mode, **kwargs) for w in ws])(x)
        for w, got in zip(widths, outs):
            want = np.pad(x, w, mode=mode, **kwargs)
            got = np.asarray(got)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-6)


def test_pad_widths_forms_dtypes_and_empty_mode():
    x = make((2, 3), np.float32, 1)
    for w in (0, (1,), (1, 2), [[0, 1], [2, 0]], np.int32([[1, 1], [0, 2]])):
        same(m.pad(x, w), np.pad(x, w))
    same(m.pad(np.float32(3), 2), np.pad(np.float32(3), 2))
    for dtype in (np.bool_, np.float16, ml_dtypes.bfloat16):
        v = make((4,), dtype, 2)
        for mode in ("constant", "edge", "reflect", "wrap"):
            same(m.pad(v, (2, 5), mode=mode), np.pad(v, (2, 5), mode=mode))
    same(m.pad(np.zeros((0, 2), np.int32), 1, constant_values=5),
         np.pad(np.zeros((0, 2), np.int32), 1, constant_values=5))
    assert m.pad(x, 1, mode="empty").shape == (4, 5)


def test_pad_callable_mode():
    def numpy_mode(vector, width, axis, kwargs):
        vector[:width[0]] = kwargs.get("value", 10) + axis
        vector[vector.size - width[1]:] = kwargs.get("value", 10) + axis

    def ours(vector, width, axis, kwargs):
        n = vector.shape[0]
        lo, mid, hi = m.split(vector, [width[0], n - width[1]])
        fill = kwargs.get("value", 10) + axis
        return m.concatenate([lo * 0 + fill, mid, hi * 0 + fill])

    x = make((2, 3), np.int32, 3)
    same(m.pad(x, ((1, 0), (2, 1)), ours, value=5), np.pad(x, ((1, 0), (2, 1)), numpy_mode,
                                                           value=5))
    same(lc.jit(lambda a: m.pad(a, 1, ours))(x), np.pad(x, 1, numpy_mode))


# --- derivatives, jit and vmap ----------------------------------------------------------
RNG = np.random.default_rng(7)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)
A = RNG.standard_normal((3, 4)).astype(np.float32)
C = RNG.standard_normal((3, 2)).astype(np.float32)
PAD_MODES = [("constant", {}), ("reflect", {"reflect_type": "odd"}), ("edge", {}), ("wrap", {}),
             ("mean", {"stat_length": 2})]


def _all_pads(pad):
    def run(x):
        lib = m if pad is m.pad else np
        return lib.concatenate([lib.ravel(pad(x, ((1, 5), (2, 0)), mode=md, **kw))
                                for md, kw in PAD_MODES])
    return run


def _weighted_split(split, concatenate):
    def run(x):
        return concatenate([p * (i + 1) for i, p in enumerate(split(x, [1, 3], axis=1))], 1)
    return run


GRAD_CASES = [
    ("reshape", lambda x: m.reshape(x, (4, 6), order="F"),
     lambda x: np.reshape(x, (4, 6), order="F"), [X]),
    ("transpose", lambda x: m.transpose(x, (2, 0, 1)), lambda x: np.transpose(x, (2, 0, 1)),
     [X]),
    ("concatenate", lambda a, c: m.concatenate([a, c], axis=1),
     lambda a, c: np.concatenate([a, c], axis=1), [A, C]),
    ("stack", lambda a, b: m.stack([a, b], axis=-1), lambda a, b: np.stack([a, b], -1),
     [A, A[::-1]]),
    ("tile", lambda x: m.tile(x, (2, 1, 2)), lambda x: np.tile(x, (2, 1, 2)), [A]),
    ("repeat", lambda x: m.repeat(x, np.int32([1, 0, 2, 1]), axis=1),
     lambda x: np.repeat(x, [1, 0, 2, 1], axis=1), [A]),
    ("repeat-gather", lambda x: m.repeat(x, np.arange(12) % 3),  # too many runs for slices
     lambda x: np.repeat(x, np.arange(12) % 3), [A]),
    ("roll", lambda x: m.roll(x, (1, -2), (0, 1)), lambda x: np.roll(x, (1, -2), (0, 1)), [A]),
    ("flip-rot90", lambda x: m.rot90(m.flip(x, (0, 2)), 1, (2, 1)),
     lambda x: np.rot90(np.flip(x, (0, 2)), 1, (2, 1)), [X]),
    ("split", _weighted_split(m.split, m.concatenate), _weighted_split(np.split, np.concatenate),
     [A]),
    ("insert-delete", lambda x, v: m.delete(m.insert(x, [0, 2], v, axis=1), 1, axis=0),
     lambda x, v: np.delete(np.insert(x, [0, 2], v, axis=1), 1, axis=0), [A, C]),
]


@pytest.mark.parametrize("fun, reference, args", [c[1:] for c in GRAD_CASES],
                         ids=[c[0] for c in GRAD_CASES])
def test_derivatives_jit_and_vmap(fun, reference, args):
    check(fun, args, reference, diff_argnums=tuple(range(len(args))))


def test_pad_derivatives_jit_and_vmap():
    # Jitted for the derivative and vmap checks: eagerly, each of the many small
    # primitives in five pads would compile on its own.
    check_jit_matches_eager(_all_pads(m.pad), [A])
    check(lc.jit(_all_pads(m.pad)), [A], _all_pads(np.pad))


def test_select_piecewise_choose_derivatives():
    x = np.float32([-1.5, -0.5, 0.7, 2.0, 3.5])
    y = np.float32([0.2, 0.9, 0.1, 1.4, 0.3])
    check(lambda a, b: m.select([a > 1, b > 0.5], [a * b, a - b], default=a * 3),
          [x, y], lambda a, b: np.select([a > 1, b > 0.5], [a * b, a - b], default=a * 3),
          diff_argnums=(0, 1))
    check(lambda a: m.piecewise(a, [a < 0, a > 1], [lambda v: v * v, lambda v: v * 3, 0.5]),
          [x], lambda a: np.piecewise(a, [a < 0, a > 1], [lambda v: v * v, lambda v: v * 3,
                                                          0.5]))
    idx = np.int32([0, 2, 1, 1, 0])
    check(lambda a, b: m.choose(idx, [a, b, a * b], mode="clip"), [x, y],
          lambda a, b: np.choose(idx, [a, b, a * b], mode="clip"), diff_argnums=(0, 1))


# --- traced arguments where JAX allows them -----------------------------------------------
def test_traced_shift_repeats_and_deletions():
    v = np.arange(5, dtype=np.float32)
    rolled = lc.jit(lambda x, s: m.roll(x, s))(v, np.int32(-7))
    same(rolled, np.roll(v, -7))
    shifts = np.int32([0, 1, -1, 6])
    same(lc.vmap(lambda s: m.roll(I32, s, 1))(shifts), np.stack([np.roll(I32, s, 1)
                                                                  for s in shifts]))
    same(lc.jit(lambda s: m.roll(I32, s, (0, 1)))(np.int32([1, 2])),
         np.roll(I32, (1, 2), (0, 1)))
    counts = np.int32([2, 0, 3])
    rep = lc.jit(lambda r, total: m.repeat(np.int32([4, 5, 6]), r, total_repeat_length=total),
                 static_argnums=1)
    same(rep(counts, 5), np.repeat([4, 5, 6], counts).astype(np.int32))
    same(rep(counts, 3), np.int32([4, 4, 6]))
    same(rep(counts, 7), np.int32([4, 4, 6, 6, 6, 6, 6]))
    same(lc.jit(lambda r: m.repeat(I32, r, axis=1, total_repeat_length=4))(np.int32([0, 3, 1])),
         np.repeat(I32, [0, 3, 1], axis=1))
    dropped = lc.jit(lambda i: m.delete(I32, i, axis=1, assume_unique_indices=True))
    same(dropped(np.int32([2, -3])), np.delete(I32, [2, 0], axis=1))
    same(lc.vmap(lambda i: m.choose(i, [np.float32(1), np.float32(2)], mode="wrap"))(
        np.int32([0, 3, -1])), np.float32([1, 2, 2]))
    same(lc.jit(lambda c: m.pad(V1, 1, constant_values=c))(np.float32(9)),
         np.pad(V1, 1, constant_values=9))


@pytest.mark.parametrize("fun, message", [
    (lambda r: m.repeat(V1, r), "repeats"),
    (lambda i: m.delete(V1, i), "obj"),
    (lambda i: m.insert(V1, i, 0.0), "obj"),
    (lambda i: m.choose(i, [V1, V1]), "mode='raise'"),
    (lambda f: m.trim_zeros(f), "filt"),
    (lambda w: m.pad(V1, w), "pad_width"),
    (lambda k: m.split(V1, k), "split"),
    (lambda s: m.reshape(V1, s), "shape"),
])
def test_traced_static_arguments_raise(fun, message):
    with pytest.raises(ConcretizationTypeError, match=message):
        lc.jit(fun)(np.int32(2) if message != "filt" else V1)


# --- errors ---------------------------------------------------------------------------------
Z = np.zeros((2, 3), np.float32)


@pytest.mark.parametrize("fun, error, match", [
    (lambda: m.reshape(Z, (4,)), ValueError, r"shape \(2, 3\) \(size 6\).*shape \(4,\)"),
    (lambda: m.reshape(Z, (-1, -1)), ValueError, "one unknown dimension"),
    (lambda: m.reshape(Z, (4, -1)), ValueError, "cannot reshape"),
    (lambda: m.reshape(Z, 6, order="A"), NotImplementedError, "order='A'"),
    (lambda: m.ravel(Z, order="X"), ValueError, "order must be"),
    (lambda: m.reshape([1, 2], 2), TypeError, "lists and tuples"),
    (lambda: m.broadcast_to(np.zeros(3), (2, 4)), ValueError, r"\(3,\).*\(2, 4\)"),
    (lambda: m.broadcast_to(Z, (3,)), ValueError, "Incompatible shapes"),
    (lambda: m.broadcast_shapes((2,), (3,)), ValueError, "could not be broadcast"),
    (lambda: m.concatenate([Z, np.zeros((2, 2))], 0), ValueError,
     r"concatenation axis \(0\).*\(2, 3\), \(2, 2\)"),
    (lambda: m.concatenate([Z, np.zeros(3)]), ValueError, "same number of dimensions"),
    (lambda: m.concatenate([np.float32(1)]), ValueError, "Zero-dimensional"),
    (lambda: m.concatenate([]), ValueError, "at least one array"),
    (lambda: m.concatenate([Z, Z], axis=2), AxisError, "axis 2"),
    (lambda: m.stack([Z, Z.T]), ValueError, r"same shape.*\(2, 3\), \(3, 2\)"),
    (lambda: m.stack([Z], axis=3), AxisError, "axis 3"),
    (lambda: m.moveaxis(Z, 2, 0), AxisError, "source 2"),
    (lambda: m.moveaxis(Z, (0, 1), 0), ValueError, "same number"),
    (lambda: m.swapaxes(Z, 0, -3), AxisError, "axis2 -3"),
    (lambda: m.transpose(Z, (0, 0)), ValueError, "not a permutation"),
    (lambda: m.expand_dims(Z, 3), AxisError, "axis 3"),
    (lambda: m.expand_dims(Z, (0, 0)), ValueError, "repeated axis"),
    (lambda: m.squeeze(Z, 0), ValueError, "size not equal to one"),
    (lambda: m.squeeze(Z, 2), AxisError, "axis 2"),
    (lambda: m.flip(Z, 2), AxisError, "axis 2"),
    (lambda: m.roll(Z, 1, 2), AxisError, "axis 2"),
    (lambda: m.roll(Z, (1, 2, 3), (0, 1)), ValueError, "matching lengths"),
    (lambda: m.split(np.zeros(5), 2), ValueError, "equal division"),
    (lambda: m.split(Z, 2, axis=2), AxisError, "axis 2"),
    (lambda: m.array_split(Z, 0), ValueError, "larger than 0"),
    (lambda: m.hsplit(np.float32(1), 1), ValueError, "1 or more dimensions"),
    (lambda: m.vsplit(np.zeros(4), 2), ValueError, "2 or more dimensions"),
    (lambda: m.dsplit(Z, 1), ValueError, "3 or more dimensions"),
    (lambda: m.unstack(np.float32(1)), ValueError, "rank > 0"),
    (lambda: m.tile(Z, -1), ValueError, "non-negative"),
    (lambda: m.repeat(Z, np.int32([1, 2]), axis=1), ValueError, "do not match axis 1"),
    (lambda: m.repeat(Z, -1), ValueError, "negative"),
    (lambda: m.repeat(Z, 1.5), TypeError, "integer"),
    (lambda: m.repeat(Z, 2, axis=2), AxisError, "axis 2"),
    (lambda: m.rot90(np.zeros(3), 1), ValueError, "at least 2 dimensions"),
    (lambda: m.rot90(Z, 1, (1, -1)), ValueError, "axes must be different"),
    (lambda: m.matrix_transpose(np.zeros(3)), ValueError, "at least 2 dimensions"),
    (lambda: m.fliplr(np.zeros(3)), ValueError, "at least 2 dimensions"),
    (lambda: m.insert(Z, 4, 1.0, axis=1), IndexError, "index 4 is out of bounds"),
    (lambda: m.delete(Z, [0, -4], axis=1), IndexError, "index -4 is out of bounds"),
    (lambda: m.delete(Z, np.array([True]), axis=1), ValueError, "boolean mask"),
    (lambda: m.trim_zeros(np.float32(1)), ValueError, "at least one dimension"),
    (lambda: m.trim_zeros(Z, "x"), ValueError, "trim must be"),
    (lambda: m.select([Z > 0], [Z, Z]), ValueError, "same length"),
    (lambda: m.select([], []), ValueError, "empty condition list"),
    (lambda: m.select([Z], [Z]), TypeError, "invalid entry 0"),
    (lambda: m.choose(np.int32([0, 2]), [Z, Z]), ValueError, "invalid entry"),
    (lambda: m.choose(np.int32([0]), [Z], mode="bad"), ValueError, "mode"),
    (lambda: m.piecewise(Z, [Z > 0], [1, 2, 3]), ValueError, "either 1 or 2 functions"),
    (lambda: m.block([[Z], Z]), ValueError, "depths are mismatched"),
    (lambda: m.block([[], [Z]]), ValueError, "cannot be empty"),
    (lambda: m.block((Z, Z)), TypeError, "tuple"),
    (lambda: m.resize(Z, (-1, 2)), ValueError, "non-negative"),
    (lambda: m.pad(Z, -1), ValueError, "negative"),
    (lambda: m.pad(Z, ((1, 2, 3),)), ValueError, "cannot be broadcast"),
    (lambda: m.pad(Z, 1.5), TypeError, "integral"),
    (lambda: m.pad(Z, 1, mode="nearest"), ValueError, "unimplemented padding mode"),
    (lambda: m.pad(Z, 1, mode="edge", constant_values=1), ValueError, "unsupported keyword"),
    (lambda: m.pad(np.zeros((0, 2)), 1, mode="edge"), ValueError, "empty axis 0"),
    (lambda: m.pad(Z, 1, mode="reflect", reflect_type="both"), ValueError, "reflect_type"),
    (lambda: m.pad(Z, 1, mode="mean", stat_length=0), ValueError, "stat_length of 0"),
    (lambda: m.pad(Z, 1, constant_values=np.zeros(3)), ValueError, "constant_values"),
    (lambda: m.pad(Z, 1, lambda v, w, a, kw: None), TypeError, "must return"),
])
def test_errors(fun, error, match):
    with pytest.raises(error, match=match):
        fun()
