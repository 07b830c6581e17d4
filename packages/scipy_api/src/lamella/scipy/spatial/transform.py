"""Rotations in three dimensions (`jax.scipy.spatial.transform`): `Rotation`, held
as unit quaternions (x, y, z, w) with any leading batch shape, and `Slerp`,
spherical linear interpolation between key rotations. Both are named tuples,
so they are pytrees that pass through `jit`, `vmap` and `grad`.

>>> import numpy as np
>>> r = Rotation.from_euler("z", 90, degrees=True)
>>> r.apply(np.float32([1, 0, 0])).round(6)
Array([0., 1., 0.], dtype=float32)
"""

from __future__ import annotations

import re
import typing
from typing import Any

import numpy as np

import lamella.numpy as jnp
import lamella.random as jrandom
from lamella.scipy._arguments import concrete, inexact

__all__ = ["Rotation", "Slerp"]

_AXIS_INDEX = {"x": 0, "y": 1, "z": 2}


def _parse_seq(seq: str, lengths: tuple[int, ...]) -> tuple[list[int], bool]:
    """(axis indices, intrinsic) of an Euler sequence such as 'xyz' or 'ZXZ'."""
    if not isinstance(seq, str) or len(seq) not in lengths:
        raise ValueError(f"Euler sequence must be a string of {' or '.join(map(str, lengths))} "
                         f"axes, got {seq!r}")
    intrinsic = re.fullmatch(r"[XYZ]+", seq) is not None
    if not intrinsic and re.fullmatch(r"[xyz]+", seq) is None:
        raise ValueError(f"Euler axes must all be from 'xyz' (extrinsic) or all from 'XYZ' "
                         f"(intrinsic), got {seq!r}")
    if any(a == b for a, b in zip(seq, seq[1:])):
        raise ValueError(f"consecutive Euler axes must differ, got {seq!r}")
    return [_AXIS_INDEX[c] for c in seq.lower()], intrinsic


def _parts(quat: Any) -> tuple[Any, Any, Any, Any]:
    return quat[..., 0], quat[..., 1], quat[..., 2], quat[..., 3]


def _compose(p: Any, q: Any) -> Any:
    """The Hamilton product p q of quaternions (scalar last): q applied first."""
    px, py, pz, pw = _parts(p)
    qx, qy, qz, qw = _parts(q)
    return jnp.stack([pw * qx + qw * px + py * qz - pz * qy,
                      pw * qy + qw * py + pz * qx - px * qz,
                      pw * qz + qw * pz + px * qy - py * qx,
                      pw * qw - px * qx - py * qy - pz * qz], axis=-1)


def _normalize(quat: Any) -> Any:
    # Component by component: XLA's CPU reductions over a minor axis of 4 are slow.
    x, y, z, w = _parts(quat)
    return quat / jnp.sqrt(x * x + y * y + z * z + w * w)[..., None]


def _canonical(quat: Any) -> Any:
    """The one of +-quat whose first nonzero entry in the order w, x, y, z is positive."""
    x, y, z, w = _parts(quat)
    flip = (w < 0) | ((w == 0) & ((x < 0) | ((x == 0) & ((y < 0) | ((y == 0) & (z < 0))))))
    return jnp.where(flip[..., None], -quat, quat)


def _check_last(name: str, x: Any, size: int, what: str) -> None:
    if x.ndim == 0 or x.shape[-1] != size:
        raise ValueError(f"{name}: expected {what} of shape ({size},) or (..., {size}), got "
                         f"shape {x.shape}")


def _apply_if(flag: Any, fun: Any, x: Any) -> Any:
    """`fun(x)` if `flag`, else `x`; a traced flag selects (JAX allows traced `degrees`
    and `inverse`)."""
    if isinstance(flag, (bool, np.bool_)):
        return fun(x) if flag else x
    return jnp.where(flag, fun(x), x)


def _rotvec_to_quat(rotvec: Any) -> Any:
    # sin(a/2)/a and cos(a/2) as series near a = 0, where the division (and the norm's
    # derivative) is undefined; the safe argument keeps the other branch's gradient finite.
    angle2 = jnp.sum(rotvec * rotvec, axis=-1, keepdims=True)
    small = angle2 <= 1e-6
    angle = jnp.sqrt(jnp.where(small, 1, angle2))
    scale = jnp.where(small, 0.5 - angle2 / 48 + angle2 * angle2 / 3840,
                      jnp.sin(angle / 2) / angle)
    w = jnp.where(small, 1 - angle2 / 8 + angle2 * angle2 / 384, jnp.cos(angle / 2))
    return jnp.concatenate([scale * rotvec, w], axis=-1)


class Rotation(typing.NamedTuple):
    """One rotation or a batch of rotations, stored as unit quaternions `quat`
    (x, y, z, w): shape (4,) for a single rotation, (..., 4) for a batch.

    Build one with `from_quat`, `from_matrix`, `from_rotvec`, `from_euler`,
    `from_mrp`, `identity`, `random` or `concatenate`; `r * s` applies `s`,
    then `r`.

    >>> import numpy as np
    >>> r = Rotation.from_rotvec(np.float32([[0, 0, np.pi / 2], [np.pi, 0, 0]]))
    >>> len(r), r[1].as_euler("xyz").round(6)
    (2, Array([3.141593, 0.      , 0.      ], dtype=float32))
    """

    quat: Any

    # --- construction -------------------------------------------------------------
    @classmethod
    def from_quat(cls, quat: Any, *, scalar_first: bool = False) -> Rotation:
        """Rotations from quaternions (x, y, z, w), normalized; `scalar_first` reads
        (w, x, y, z).

        >>> Rotation.from_quat([0, 0, 2.0, 0]).quat
        Array([0., 0., 1., 0.], dtype=float32)
        """
        (quat,) = inexact(quat)
        _check_last("Rotation.from_quat", quat, 4, "quaternions")
        if scalar_first:
            quat = jnp.roll(quat, -1, axis=-1)
        return cls(_normalize(quat))

    @classmethod
    def from_matrix(cls, matrix: Any) -> Rotation:
        """Rotations from 3x3 rotation matrices (..., 3, 3).

        >>> Rotation.from_matrix([[0, -1.0, 0], [1, 0, 0], [0, 0, 1]]).as_rotvec().round(6)
        Array([0.      , 0.      , 1.570796], dtype=float32)
        """
        (m,) = inexact(matrix)
        if m.ndim < 2 or m.shape[-2:] != (3, 3):
            raise ValueError(f"Rotation.from_matrix: expected matrices of shape (3, 3) or "
                             f"(..., 3, 3), got shape {m.shape}")
        # Of the four algebraically equal expressions for the quaternion, use the one
        # dividing by the largest of (diagonal entries, trace): the best conditioned.
        diag = [m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]]
        trace = diag[0] + diag[1] + diag[2]
        choice = jnp.argmax(jnp.stack([*diag, trace], axis=-1), axis=-1)
        candidates = []
        for i in range(3):
            j, k = (i + 1) % 3, (i + 2) % 3
            q = [None] * 4
            q[i] = 1 - trace + 2 * m[..., i, i]
            q[j] = m[..., j, i] + m[..., i, j]
            q[k] = m[..., k, i] + m[..., i, k]
            q[3] = m[..., k, j] - m[..., j, k]
            candidates.append(jnp.stack(q, axis=-1))
        candidates.append(jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                                     m[..., 1, 0] - m[..., 0, 1], 1 + trace], axis=-1))
        quat = candidates[3]
        for i in range(3):
            quat = jnp.where((choice == i)[..., None], candidates[i], quat)
        return cls(_normalize(quat))

    @classmethod
    def from_rotvec(cls, rotvec: Any, degrees: bool = False) -> Rotation:
        """Rotations from rotation vectors: axis times angle (radians, or degrees).

        >>> Rotation.from_rotvec([0, 0, 90.0], degrees=True).quat.round(6)
        Array([0.      , 0.      , 0.707107, 0.707107], dtype=float32)
        """
        (rotvec,) = inexact(rotvec)
        _check_last("Rotation.from_rotvec", rotvec, 3, "rotation vectors")
        rotvec = _apply_if(degrees, jnp.deg2rad, rotvec)
        return cls(_rotvec_to_quat(rotvec))

    @classmethod
    def from_mrp(cls, mrp: Any) -> Rotation:
        """Rotations from Modified Rodrigues Parameters: axis times tan(angle / 4).

        >>> Rotation.from_mrp([0, 0, 1.0]).as_rotvec().round(6)
        Array([0.      , 0.      , 3.141593], dtype=float32)
        """
        (mrp,) = inexact(mrp)
        _check_last("Rotation.from_mrp", mrp, 3, "MRPs")
        norm2 = jnp.sum(mrp * mrp, axis=-1, keepdims=True)
        return cls(_normalize(jnp.concatenate([2 * mrp, 1 - norm2], axis=-1) / (1 + norm2)))

    @classmethod
    def from_euler(cls, seq: str, angles: Any, degrees: bool = False) -> Rotation:
        """Rotations from Euler angles about the axes of `seq`: lower case for
        extrinsic (fixed) axes, upper case for intrinsic (rotating) axes, 1 to 3 of them.

        `angles` has shape (len(seq),) for one rotation, (..., len(seq)) for a batch;
        with one axis a scalar works too.

        >>> Rotation.from_euler("xy", [90, 90], degrees=True).as_matrix().round(6)
        Array([[ 0.,  1.,  0.],
               [ 0.,  0., -1.],
               [-1.,  0.,  0.]], dtype=float32)
        """
        axes, intrinsic = _parse_seq(seq, (1, 2, 3))
        (angles,) = inexact(angles)
        if len(axes) == 1 and angles.ndim == 0:
            angles = angles[None]
        if angles.ndim == 0 or angles.shape[-1] != len(axes):
            raise ValueError(f"Rotation.from_euler: expected angles of shape ({len(axes)},) or "
                             f"(..., {len(axes)}) for seq {seq!r}, got shape {angles.shape}")
        angles = _apply_if(degrees, jnp.deg2rad, angles)
        quat = None
        for n, axis in enumerate(axes):
            half = angles[..., n] / 2
            parts = [jnp.zeros_like(half)] * 3 + [jnp.cos(half)]
            parts[axis] = jnp.sin(half)
            q = jnp.stack(parts, axis=-1)
            # Intrinsic rotations act about the already rotated axes: multiply on the right.
            quat = q if quat is None else (_compose(quat, q) if intrinsic else _compose(q, quat))
        return cls(quat)

    @classmethod
    def identity(cls, num: int | None = None, dtype: Any = float) -> Rotation:
        """The identity rotation, or `num` of them.

        >>> Rotation.identity(2).quat
        Array([[0., 0., 0., 1.],
               [0., 0., 0., 1.]], dtype=float32)
        """
        quat = jnp.asarray([0.0, 0.0, 0.0, 1.0], dtype=dtype)
        return cls(quat if num is None else jnp.tile(quat, (num, 1)))

    @classmethod
    def random(cls, random_key: Any, num: int | None = None) -> Rotation:
        """Rotations drawn uniformly (by the Haar measure) with `random_key`: one, or
        `num`. (JAX raises NotImplementedError here.)

        >>> import lamella.random
        >>> Rotation.random(lamella.random.key(0), 3).quat.shape
        (3, 4)
        """
        shape = (4,) if num is None else (num, 4)
        # A standard normal 4-vector points in a uniformly random direction: a
        # uniformly random unit quaternion.
        return cls(_normalize(jrandom.normal(random_key, shape)))

    @classmethod
    def concatenate(cls, rotations: typing.Sequence) -> Rotation:
        """One batch of all the rotations in `rotations` (single ones count as one).

        >>> Rotation.concatenate([Rotation.identity(), Rotation.identity(2)]).quat.shape
        (3, 4)
        """
        if not rotations or not all(isinstance(r, Rotation) for r in rotations):
            raise TypeError("Rotation.concatenate: expected a non-empty sequence of Rotations")
        return cls(jnp.concatenate([jnp.atleast_2d(r.quat) for r in rotations]))

    # --- batches --------------------------------------------------------------------
    @property
    def single(self) -> bool:
        """Whether this holds one rotation (quat of shape (4,))."""
        return self.quat.ndim == 1

    def __len__(self) -> int:
        """The number of rotations in a batch."""
        if self.single:
            raise TypeError("a single rotation has no len()")
        return self.quat.shape[0]

    def __getitem__(self, indexer: Any) -> Rotation:
        """The rotation(s) at `indexer` of a batch."""
        if self.single:
            raise TypeError("a single rotation is not subscriptable")
        return Rotation(self.quat[indexer])

    def __mul__(self, other: Rotation) -> Rotation:
        """The composition: `other` applied first, then `self`.

        >>> r = Rotation.from_euler("z", 90, degrees=True)
        >>> (r * r).as_euler("xyz", degrees=True).round(4)
        Array([  0.,   0., 180.], dtype=float32)
        """
        if not isinstance(other, Rotation):
            return NotImplemented
        if not (self.single or other.single) and len(self) != len(other) \
                and 1 not in (len(self), len(other)):
            raise ValueError(f"cannot compose {len(self)} rotations with {len(other)}: expected "
                             "equal numbers, or a single rotation on either side")
        return Rotation(_normalize(_compose(self.quat, other.quat)))

    # --- representations -----------------------------------------------------------
    def as_quat(self, canonical: bool = False, scalar_first: bool = False) -> Any:
        """The quaternions (x, y, z, w), or (w, x, y, z) with `scalar_first`;
        `canonical` picks the sign with w >= 0.

        >>> Rotation.from_quat([0, 0, 0, -1.0]).as_quat(canonical=True)
        Array([-0., -0., -0.,  1.], dtype=float32)
        """
        quat = _canonical(self.quat) if canonical else self.quat
        return jnp.roll(quat, 1, axis=-1) if scalar_first else quat

    def as_matrix(self) -> Any:
        """The rotation matrices (..., 3, 3).

        >>> Rotation.identity().as_matrix()
        Array([[1., 0., 0.],
               [0., 1., 0.],
               [0., 0., 1.]], dtype=float32)
        """
        x, y, z, w = _parts(self.quat)
        xx, yy, zz, ww = x * x, y * y, z * z, w * w
        xy, xz, xw, yz, yw, zw = x * y, x * z, x * w, y * z, y * w, z * w
        rows = [[xx - yy - zz + ww, 2 * (xy - zw), 2 * (xz + yw)],
                [2 * (xy + zw), -xx + yy - zz + ww, 2 * (yz - xw)],
                [2 * (xz - yw), 2 * (yz + xw), -xx - yy + zz + ww]]
        return jnp.stack([jnp.stack(row, axis=-1) for row in rows], axis=-2)

    def as_rotvec(self, degrees: bool = False) -> Any:
        """The rotation vectors: axis times angle in [0, pi] (radians, or degrees).

        >>> Rotation.from_euler("x", 90, degrees=True).as_rotvec(degrees=True).round(4)
        Array([90.,  0.,  0.], dtype=float32)
        """
        # The canonical sign (w >= 0) puts the angle in [0, pi]; at w = 0 it picks the
        # sign of x (then y, z), as SciPy 1.17 does (JAX keeps the sign there).
        quat = _canonical(self.quat)
        vector, w = quat[..., :3], quat[..., 3:]
        norm2 = jnp.sum(vector * vector, axis=-1, keepdims=True)
        # angle / sin(angle / 2) as a series for angles below 1e-3, where it is 0 / 0;
        # angle^2 ~ 4 |v|^2 / w^2 there.
        small = 4 * norm2 <= 1e-6 * w * w
        angle = 2 * jnp.arctan2(jnp.sqrt(jnp.where(small, 1, norm2)), w)
        angle2 = 4 * norm2 / jnp.where(small, w * w, 1)
        scale = jnp.where(small, 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880,
                          angle / jnp.sin(jnp.where(small, 1, angle) / 2))
        rotvec = scale * vector
        return _apply_if(degrees, jnp.rad2deg, rotvec)

    def as_mrp(self) -> Any:
        """The Modified Rodrigues Parameters (of the rotation's angle in [0, pi]).

        >>> Rotation.from_rotvec([0, 0, np.pi / 2]).as_mrp().round(6)
        Array([0.      , 0.      , 0.414214], dtype=float32)
        """
        sign = jnp.where(self.quat[..., 3:] < 0, -1, 1).astype(self.quat.dtype)
        return sign * self.quat[..., :3] / (1 + sign * self.quat[..., 3:])

    def as_euler(self, seq: str, degrees: bool = False) -> Any:
        """The Euler angles about the three axes of `seq` (see `from_euler`), the
        first and third in [-pi, pi], the second in [0, pi] (symmetric sequences
        like 'zxz') or [-pi/2, pi/2]. At gimbal lock the third angle is set to 0.

        >>> Rotation.from_euler("ZYX", [10, 20, 30], degrees=True).as_euler(
        ...     "ZYX", degrees=True).round(4)
        Array([10., 20., 30.], dtype=float32)
        """
        axes, intrinsic = _parse_seq(seq, (3,))
        # Bernardes & Viollet (2022): angles straight from the quaternion. Intrinsic
        # sequences are the reversed extrinsic ones, with the angles reversed.
        if intrinsic:
            axes = axes[::-1]
        i, j, k = axes
        symmetric = i == k
        if symmetric:
            k = 3 - i - j
        sign = (i - j) * (j - k) * (k - i) // 2
        q = self.quat
        if symmetric:
            a, b, c, d = q[..., 3], q[..., i], q[..., j], q[..., k] * sign
        else:
            a, b = q[..., 3] - q[..., j], q[..., i] + q[..., k] * sign
            c, d = q[..., j] + q[..., 3], q[..., k] * sign - q[..., i]
        middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
        half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
        eps = 1e-7
        at_zero = jnp.abs(middle) <= eps
        at_pi = jnp.abs(middle - np.pi) <= eps
        locked = at_zero | at_pi
        first_index, third_index = (2, 0) if intrinsic else (0, 2)
        angles = [None, middle, None]
        angles[first_index] = half_sum - half_diff
        angles[third_index] = half_sum + half_diff
        # At gimbal lock only the sum (or difference) of the outer angles is defined:
        # it goes to angle 0, and angle 2 is set to zero.
        degenerate = jnp.where(at_zero, 2 * half_sum, 2 * half_diff * (1 if intrinsic else -1))
        angles[0] = jnp.where(locked, degenerate, angles[0])
        angles[2] = jnp.where(locked, 0, angles[2])
        if not symmetric:
            angles[third_index] = angles[third_index] * sign
            angles[1] = angles[1] - np.pi / 2
        angles = jnp.stack(angles, axis=-1)
        angles = jnp.where(angles < -np.pi, angles + 2 * np.pi,
                           jnp.where(angles > np.pi, angles - 2 * np.pi, angles))
        return _apply_if(degrees, jnp.rad2deg, angles)

    # --- operations -------------------------------------------------------------------
    def apply(self, vectors: Any, inverse: bool = False) -> Any:
        """The vectors (3,) or (N, 3) rotated (by the inverse rotation with `inverse`).

        >>> Rotation.from_euler("z", 90, degrees=True).apply([1.0, 0, 0], inverse=True).round(6)
        Array([ 0., -1.,  0.], dtype=float32)
        """
        (vectors,) = inexact(vectors)
        _check_last("Rotation.apply", vectors, 3, "vectors")
        if self.quat.ndim == 2 and vectors.ndim == 2 \
                and 1 not in (len(self), vectors.shape[0]) and len(self) != vectors.shape[0]:
            raise ValueError(f"Rotation.apply: cannot apply {len(self)} rotations to "
                             f"{vectors.shape[0]} vectors: expected equal numbers, or a single "
                             "rotation or vector")
        # v + w t + q x t with t = 2 q x v (q's vector part): no matrix, no reductions.
        x, y, z, w = _parts(self.quat)
        x, y, z = (_apply_if(inverse, jnp.negative, c) for c in (x, y, z))
        vx, vy, vz = vectors[..., 0], vectors[..., 1], vectors[..., 2]
        tx, ty, tz = 2 * (y * vz - z * vy), 2 * (z * vx - x * vz), 2 * (x * vy - y * vx)
        return jnp.stack([vx + w * tx + y * tz - z * ty, vy + w * ty + z * tx - x * tz,
                          vz + w * tz + x * ty - y * tx], axis=-1)

    def inv(self) -> Rotation:
        """The inverse rotation(s).

        >>> Rotation.from_rotvec([0.25, 0.5, 0.5]).inv().as_rotvec().round(6)
        Array([-0.25, -0.5 , -0.5 ], dtype=float32)
        """
        return Rotation(self.quat * jnp.asarray([-1, -1, -1, 1], self.quat.dtype))

    def magnitude(self) -> Any:
        """The rotation angles, in [0, pi].

        >>> Rotation.from_rotvec([0, 3.0, 4.0]).magnitude().round(5)
        Array(1.28319, dtype=float32)
        """
        vector_norm = jnp.linalg.norm(self.quat[..., :3], axis=-1)
        return 2 * jnp.arctan2(vector_norm, jnp.abs(self.quat[..., 3]))

    def mean(self, weights: Any = None) -> Rotation:
        """The rotation closest (in the chordal L2 sense) to the `weights`-weighted
        rotations: the principal eigenvector of sum_i w_i q_i q_i^T.

        >>> Rotation.from_euler("z", [[0], [90.0]], degrees=True).mean().magnitude().round(5)
        Array(0.7854, dtype=float32)
        """
        quat = jnp.atleast_2d(self.quat)
        if quat.ndim != 2:
            raise ValueError(f"Rotation.mean: expected one batch axis, got quaternions of "
                             f"shape {self.quat.shape}")
        if weights is None:
            weights = jnp.ones(quat.shape[0], quat.dtype)
        else:
            weights = jnp.asarray(weights).astype(quat.dtype)
            if weights.ndim != 1:
                raise ValueError(f"Rotation.mean: expected 1-D weights, got shape "
                                 f"{weights.shape}")
            if weights.shape[0] != quat.shape[0]:
                raise ValueError(f"Rotation.mean: got {weights.shape[0]} weights for "
                                 f"{quat.shape[0]} rotations")
        k = (quat * weights[:, None]).T @ quat
        _, vectors = jnp.linalg.eigh(k)
        return Rotation(vectors[:, -1])


class Slerp(typing.NamedTuple):
    """Spherical linear interpolation between key rotations at key times: each
    interval is traversed at constant angular velocity about a fixed axis.

    Build it with `Slerp.init(times, rotations)`; calling it at `times` gives
    the interpolated Rotation (single for a scalar time). Times outside the key
    times extrapolate the first or last interval (JAX's result there is
    discontinuous; SciPy raises).

    >>> import numpy as np
    >>> slerp = Slerp.init([0, 1], Rotation.from_euler("z", [[0], [90.0]], degrees=True))
    >>> slerp(0.5).as_euler("xyz", degrees=True).round(4)
    Array([ 0.,  0., 45.], dtype=float32)
    """

    times: Any
    timedelta: Any
    rotations: Rotation
    rotvecs: Any

    @classmethod
    def init(cls, times: Any, rotations: Rotation) -> Slerp:
        """The interpolator through `rotations` (at least 2) at increasing `times`."""
        if not isinstance(rotations, Rotation):
            raise TypeError(f"Slerp.init: rotations must be a Rotation, got "
                            f"{type(rotations).__name__}")
        if rotations.single or len(rotations) < 2:
            raise ValueError("Slerp.init: rotations must hold at least 2 rotations")
        times = jnp.asarray(times).astype(rotations.quat.dtype)
        if times.ndim != 1:
            raise ValueError(f"Slerp.init: times must be 1-dimensional, got shape {times.shape}")
        if times.shape[0] != len(rotations):
            raise ValueError(f"Slerp.init: got {len(rotations)} rotations but "
                             f"{times.shape[0]} times")
        known = concrete(times)
        if known is not None and not np.all(np.diff(known) > 0):
            raise ValueError("Slerp.init: times must be strictly increasing")
        start = Rotation(rotations.quat[:-1])
        steps = (start.inv() * Rotation(rotations.quat[1:])).as_rotvec()
        return cls(times, jnp.diff(times), start, steps)

    def __call__(self, times: Any) -> Rotation:
        """The interpolated rotations at `times` (a scalar or a 1-D array)."""
        times = jnp.asarray(times).astype(self.times.dtype)
        if times.ndim > 1:
            raise ValueError(f"Slerp: times must be at most 1-dimensional, got shape "
                             f"{times.shape}")
        at = jnp.atleast_1d(times)
        interval = jnp.clip(jnp.searchsorted(self.times, at) - 1, 0, self.timedelta.shape[0] - 1)
        fraction = (at - self.times[interval]) / self.timedelta[interval]
        step = Rotation.from_rotvec(self.rotvecs[interval] * fraction[:, None])
        result = self.rotations[interval] * step
        return result[0] if times.ndim == 0 else result
