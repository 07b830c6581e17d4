"""Rounding and float classification: floor, ceil, round, is_finite, nextafter."""

from __future__ import annotations

import enum

import numpy as np

from lamella.core import ad
from lamella.lax.lowering import chlo, hlo
from lamella.lax.standard import FLOAT, naryop, unop


class RoundingMethod(enum.IntEnum):
    """How `round` breaks ties: away from zero (0) or to the nearest even (1)."""

    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


floor_p = unop("floor", FLOAT, hlo.floor)
ceil_p = unop("ceil", FLOAT, hlo.ceil)
round_p = unop("round", FLOAT, lambda x, *, rounding_method: (
    hlo.round_nearest_even(x) if rounding_method == RoundingMethod.TO_NEAREST_EVEN
    else hlo.round_nearest_afz(x)))
is_finite_p = unop("is_finite", FLOAT, hlo.is_finite, result_dtype=lambda _: np.dtype(bool))
nextafter_p = naryop("nextafter", FLOAT, chlo.next_after)
for _p in (floor_p, ceil_p, round_p, is_finite_p, nextafter_p):
    ad.defjvp_zero(_p)


def floor(x):
    """The largest integer-valued float not above x."""
    return floor_p.bind(x)


def ceil(x):
    """The smallest integer-valued float not below x."""
    return ceil_p.bind(x)


def round(x, rounding_method: RoundingMethod | int = RoundingMethod.AWAY_FROM_ZERO):
    """x rounded to an integer value; ties go away from zero or to even."""
    return round_p.bind(x, rounding_method=RoundingMethod(rounding_method))


def is_finite(x):
    """True where x is neither infinite nor NaN."""
    return is_finite_p.bind(x)


def nextafter(x1, x2):
    """The next representable float after x1 in the direction of x2."""
    return nextafter_p.bind(x1, x2)
