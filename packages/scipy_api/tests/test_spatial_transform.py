"""Rotation and Slerp against scipy.spatial.transform: every representation both
ways, all 24 Euler sequences (gimbal lock included), composition, application
with broadcasting, inverse, magnitude, mean, slerp, float32 and float64;
pytrees under jit and vmap; derivatives (finite at the identity); errors."""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.spatial.transform import Rotation as SR
from scipy.spatial.transform import Slerp as SSlerp

import lamella.core as lc
import lamella.random
from lamella.lax.test_util import check_derivatives, check_jit_matches_eager, check_vmap
from lamella.scipy.spatial.transform import Rotation, Slerp

SEQUENCES = ["".join(p) for p in itertools.permutations("xyz")] + \
            [a + b + a for a, b in itertools.permutations("xyz", 2)]
SEQUENCES += [s.upper() for s in SEQUENCES]
# XLA flushes subnormals to zero on CPU: a component that is (or, once normalized,
# becomes) subnormal would count as 0, which flips the sign conventions at w = 0.
QUATS = hnp.arrays(np.float32, (5, 4), elements=st.floats(-1, 1, width=32).filter(
    lambda v: v == 0 or abs(v) > 1e-30)).filter(lambda q: np.all(np.linalg.norm(q, axis=1) > 0.1))
TOL = 2e-5


def _close(got, want, tol=TOL):
    got = np.asarray(got)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _same_rotation(got_quat, want_quat, tol=TOL):
    """Quaternions q and -q are the same rotation."""
    got, want = np.asarray(got_quat), np.asarray(want_quat)
    sign = np.sign(np.sum(got * want, axis=-1, keepdims=True))
    _close(got * sign, want, tol)


@lc.jit
def _representations(quat):
    r = Rotation.from_quat(quat)
    m = r.as_matrix()
    return dict(matrix=m, rotvec=r.as_rotvec(), degrees=r.as_rotvec(degrees=True),
                mrp=r.as_mrp(), canonical=r.as_quat(canonical=True, scalar_first=True),
                magnitude=r.magnitude(), inverse=r.inv().as_quat(),
                from_matrix=Rotation.from_matrix(m).as_quat(),
                from_rotvec=Rotation.from_rotvec(r.as_rotvec()).as_quat(),
                from_degrees=Rotation.from_rotvec(r.as_rotvec(True), degrees=True).as_quat(),
                from_mrp=Rotation.from_mrp(r.as_mrp()).as_quat(),
                from_scalar_first=Rotation.from_quat(r.as_quat(scalar_first=True),
                                                     scalar_first=True).as_quat())


@settings(max_examples=30, deadline=None)
@given(quat=QUATS)
def test_representations(quat):
    got, want = _representations(quat), SR.from_quat(quat.astype(np.float64))
    _close(got["matrix"], want.as_matrix())
    _close(got["rotvec"], want.as_rotvec(), 1e-4)
    _close(got["degrees"], want.as_rotvec(degrees=True), 1e-2)
    _close(got["mrp"], want.as_mrp(), 1e-4)
    _close(got["canonical"], want.as_quat(canonical=True, scalar_first=True))
    _close(got["magnitude"], want.magnitude(), 1e-4)
    _close(got["inverse"], want.inv().as_quat())
    for name in ("from_matrix", "from_rotvec", "from_degrees", "from_mrp", "from_scalar_first"):
        _same_rotation(got[name], want.as_quat(), 1e-4)


def _check_euler(quat, sequences, tol):
    # Eagerly: every sequence reuses the same compiled operations.
    r, want = Rotation.from_quat(quat), SR.from_quat(quat.astype(np.float64))
    for seq in sequences:
        got = np.asarray(r.as_euler(seq))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SciPy's gimbal lock warning
            expected = want.as_euler(seq)
        # -pi and pi are the same angle.
        assert np.all(np.abs(np.angle(np.exp(1j * (got - expected)))) < tol), (seq, got, expected)
        _same_rotation(Rotation.from_euler(seq, got).quat, want.as_quat(), 1e-4)


@settings(max_examples=40, deadline=None)
@given(quat=QUATS, seq=st.sampled_from(SEQUENCES))
def test_euler(quat, seq):
    _check_euler(quat, [seq], 1e-3)


def test_euler_every_sequence_and_degrees():
    quat = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32)
    _check_euler(quat, SEQUENCES, 1e-4)
    r = Rotation.from_quat(quat)
    degrees = Rotation.from_euler("ZXY", r.as_euler("ZXY", degrees=True), degrees=True)
    _same_rotation(degrees.quat, r.quat, 1e-5)


def test_euler_gimbal_lock():
    # Middle angles at the locks of the symmetric (0, pi) and the Tait-Bryan (+-pi/2)
    # sequences.
    quats = []
    for seq in ("zxz", "xyz", "ZYX", "YXY"):
        symmetric = seq[0].lower() == seq[2].lower()
        for middle in ((0.0, np.pi) if symmetric else (-np.pi / 2, np.pi / 2)):
            quats.append(SR.from_euler(seq, [0.3, middle, -0.4]).as_quat())
    with lc.enable_x64():
        _check_euler(np.float64(quats), ["zxz", "xyz", "ZYX", "YXY"], 1e-6)


@settings(max_examples=25, deadline=None)
@given(p=QUATS, q=QUATS, v=hnp.arrays(np.float32, (5, 3), elements=st.floats(-10, 10, width=32)),
       layout=st.sampled_from(["NN", "1N", "N1", "11"]), inverse=st.booleans())
def test_compose_and_apply(p, q, v, layout, inverse):
    p = p if layout[0] == "N" else p[0]
    v = v if layout[1] == "N" else v[0]
    got_r, got_v = _compose_and_apply(p, q, v, inverse)
    want = SR.from_quat(p) * SR.from_quat(q)
    _same_rotation(got_r, want.as_quat())
    _close(got_v, SR.from_quat(p).apply(v, inverse=inverse), 1e-4 * (1 + np.abs(v).max()))


@lc.jit
def _compose_and_apply(p, q, v, inverse):
    r = Rotation.from_quat(p)
    return (r * Rotation.from_quat(q)).as_quat(), r.apply(v, inverse=inverse)


@settings(max_examples=20, deadline=None)
@given(quat=QUATS, weights=hnp.arrays(np.float32, (5,), elements=st.floats(0.125, 2, width=32)))
def test_mean(quat, weights):
    got = _mean(quat, weights)
    _same_rotation(got, SR.from_quat(quat).mean(weights).as_quat(), 1e-3)


_mean = lc.jit(lambda q, w: Rotation.from_quat(q).mean(w).as_quat())


@settings(max_examples=20, deadline=None)
@given(quat=QUATS, steps=hnp.arrays(np.float32, (5,), elements=st.floats(0.125, 2, width=32)),
       fractions=hnp.arrays(np.float32, (6,), elements=st.floats(0, 1, width=32)))
def test_slerp(quat, steps, fractions):
    times = np.cumsum(steps) - 1
    at = times[0] + fractions * (times[-1] - times[0])
    got = _slerp(times, quat, at)
    want = SSlerp(times.astype(np.float64), SR.from_quat(quat))(np.clip(at, times[0], times[-1]))
    _same_rotation(got, want.as_quat(), 1e-4)


_slerp = lc.jit(lambda t, q, at: Slerp.init(t, Rotation.from_quat(q))(at).as_quat())


def test_float64():
    rng = np.random.default_rng(0)
    quat, v = rng.standard_normal((4, 4)), rng.standard_normal((4, 3))
    want = SR.from_quat(quat)

    @lc.jit
    def representations(quat, v):
        r = Rotation.from_quat(quat)
        return (r.quat, r.as_matrix(), r.as_rotvec(), r.as_euler("YZX"), r.apply(v),
                Rotation.from_matrix(r.as_matrix()).quat)

    with lc.enable_x64():
        q, matrix, rotvec, euler, applied, from_matrix = representations(quat, v)
    assert q.dtype == np.float64
    _close(matrix, want.as_matrix(), 1e-13)
    _close(rotvec, want.as_rotvec(), 1e-13)
    _close(euler, want.as_euler("YZX"), 1e-12)
    _close(applied, want.apply(v), 1e-13)
    _same_rotation(from_matrix, want.as_quat(), 1e-13)


def test_batches_and_constructors():
    r = Rotation.from_rotvec(np.float32([[0, 0, 1], [0, 2, 0], [3, 0, 0]]))
    assert len(r) == 3 and not r.single and r[1].single and len(r[1:]) == 2
    _close(r[-1].as_rotvec(), [3, 0, 0])
    both = Rotation.concatenate([r, r[0]])
    assert len(both) == 4
    _close(both[3].as_quat(), r[0].as_quat())
    assert Rotation.identity().single and Rotation.identity(3).quat.shape == (3, 4)
    _close(Rotation.identity(2).as_matrix(), np.stack([np.eye(3)] * 2))
    assert r.count(r.quat) == 1 and r.index(r.quat) == 0  # a named tuple, as in JAX
    grid = Rotation.from_quat(np.ones((2, 3, 4), np.float32))  # any batch shape
    assert grid.as_matrix().shape == (2, 3, 3, 3) and grid.as_euler("xyz").shape == (2, 3, 3)
    assert Rotation.from_euler("z", 0.5).single


def test_random_rotations_are_uniform():
    r = Rotation.random(lamella.random.key(0), 4000)
    assert r.quat.shape == (4000, 4) and Rotation.random(lamella.random.key(1)).single
    np.testing.assert_allclose(np.linalg.norm(r.quat, axis=1), 1, rtol=1e-6)
    # Haar measure: the mean matrix vanishes, and the angle has density (1 - cos) / pi.
    np.testing.assert_allclose(np.mean(r.as_matrix(), axis=0), 0, atol=0.05)
    angle_mean = (np.pi ** 2 / 2 + 2) / np.pi  # the mean of that density
    assert abs(float(np.mean(r.magnitude())) - angle_mean) < 0.05


def test_pytree_under_jit_and_vmap():
    quat = np.random.default_rng(2).standard_normal((3, 4)).astype(np.float32)
    r = Rotation.from_quat(quat)
    matrices = lc.vmap(lambda r: r.as_matrix())(r)
    _close(matrices, r.as_matrix())
    twice = lc.jit(lambda r: r * r)(r)
    assert isinstance(twice, Rotation)
    _same_rotation(twice.quat, (SR.from_quat(quat) ** 2).as_quat())
    slerp = Slerp.init(np.float32([0, 1, 3]), r)
    _same_rotation(lc.jit(lambda s, t: s(t).quat)(slerp, np.float32(2.0)),
                   SSlerp([0, 1, 3], SR.from_quat(quat))(2.0).as_quat())


Q = np.float32([[0.3, -0.2, 0.5, 0.8], [-0.6, 0.1, 0.2, 0.4]])
V = np.float32([[1.0, -2.0, 0.5], [0.3, 0.2, -1.0]])


@pytest.mark.parametrize("fun, args", [
    (lambda q, v: Rotation.from_quat(q).apply(v, inverse=True), [Q, V]),
    (lambda q: Rotation.from_quat(q).as_euler("zyz"), [Q]),
    (lambda q: Rotation.from_quat(q).as_rotvec(), [Q]),
    (lambda r: Rotation.from_rotvec(r).as_mrp(), [V]),
    (lambda m: Rotation.from_matrix(m).as_quat(canonical=True),
     [SR.from_quat(Q).as_matrix().astype(np.float32)]),
    (lambda t: Slerp.init(np.float64([0, 1]), Rotation.from_quat(np.float64(Q)))(t).as_quat(),
     [np.float32([0.2, 0.7])]),
], ids=["apply", "as_euler", "as_rotvec", "from_rotvec", "from_matrix", "slerp"])
def test_derivatives(fun, args):
    check_derivatives(lc.jit(fun), args, diff_argnums=tuple(range(len(args))), rtol=1e-5,
                      atol=1e-5)


def test_derivatives_finite_at_identity():
    for fun, x in [(lambda v: Rotation.from_rotvec(v).as_matrix().sum(), np.zeros(3, np.float32)),
                   (lambda q: Rotation.from_quat(q).as_rotvec().sum(),
                    np.float32([0, 0, 0, 1]))]:
        grad = lc.jit(lc.grad(fun))(x)
        assert np.all(np.isfinite(grad)), grad
    check_derivatives(lc.jit(lambda v: Rotation.from_rotvec(v).as_quat()),
                      [np.float32([1e-5, -2e-5, 0])], eps=1e-8, rtol=1e-5, atol=1e-5)


def test_vmap_and_jit():
    check_vmap(lc.jit(lambda q, v: Rotation.from_quat(q).apply(v)), [Q[0], V[0]])
    check_jit_matches_eager(lambda q: Rotation.from_quat(q).as_euler("xyz"), [Q], rtol=1e-5)


R2 = Rotation.from_quat(Q)


@pytest.mark.parametrize("call, error, match", [
    (lambda: Rotation.from_quat(np.ones(3)), ValueError, "quaternions of shape"),
    (lambda: Rotation.from_matrix(np.eye(2)), ValueError, r"\(3, 3\)"),
    (lambda: Rotation.from_rotvec(np.ones((2, 4))), ValueError, "rotation vectors"),
    (lambda: Rotation.from_mrp(np.ones(2)), ValueError, "MRPs"),
    (lambda: Rotation.from_euler("xyzx", np.ones(4)), ValueError, "1 or 2 or 3 axes"),
    (lambda: Rotation.from_euler("xYz", np.ones(3)), ValueError, "all from"),
    (lambda: Rotation.from_euler("xxy", np.ones(3)), ValueError, "consecutive"),
    (lambda: Rotation.from_euler("xaz", np.ones(3)), ValueError, "all from"),
    (lambda: Rotation.from_euler("xy", np.ones(3)), ValueError, "angles of shape"),
    (lambda: R2.as_euler("xy"), ValueError, "3 axes"),
    (lambda: R2[0][0], TypeError, "not subscriptable"),
    (lambda: len(R2[0]), TypeError, "no len"),
    (lambda: R2 * Rotation.identity(3), ValueError, "cannot compose"),
    (lambda: R2.apply(np.ones((3, 3))), ValueError, "cannot apply"),
    (lambda: R2.apply(np.ones(4)), ValueError, "vectors of shape"),
    (lambda: R2.mean(np.ones(3)), ValueError, "3 weights for 2"),
    (lambda: R2.mean(np.ones((2, 1))), ValueError, "1-D weights"),
    (lambda: Rotation.concatenate([R2, Q]), TypeError, "sequence of Rotations"),
    (lambda: Slerp.init([0, 1], Q), TypeError, "must be a Rotation"),
    (lambda: Slerp.init([0], R2[:1]), ValueError, "at least 2"),
    (lambda: Slerp.init([0, 1, 2], R2), ValueError, "2 rotations but 3 times"),
    (lambda: Slerp.init([[0, 1]], R2), ValueError, "1-dimensional"),
    (lambda: Slerp.init([1, 0], R2), ValueError, "strictly increasing"),
    (lambda: Slerp.init([0, 1], R2)(np.zeros((2, 2))), ValueError, "at most 1-dimensional"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
