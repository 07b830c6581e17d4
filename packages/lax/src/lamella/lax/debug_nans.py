"""`config.debug_nans` / `config.debug_infs`: find the operation that made a NaN (or
an infinity) and the user's line that wrote it.

With a flag on, every eagerly applied primitive has its outputs checked, and so
do a jitted function's outputs. When those hold a NaN the jaxpr runs again op
by op, each equation eagerly (a nested `jit` is checked and re-run the same
way), until one produces it: the error names that primitive and the source
line the equation was traced from, also for equations that `grad` derived
from the user's code. With both flags off the executor pays one test of a
module-level boolean per call; turning a flag on sends jitted calls through
Python (the C++ fast path cannot check).

>>> import numpy as np
>>> import lamella.core as lc
>>> import lamella.lax as lax
>>> with lc.debug_nans(True):
...     lc.jit(lambda x: lax.log(x))(np.float32(-1.0))  # doctest: +ELLIPSIS
Traceback (most recent call last):
FloatingPointError: invalid value (nan) encountered in log at ...
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core.config import config
from lamella.core.jaxpr import ClosedJaxpr, Literal
from lamella.core.source_info import SourceInfo, carry_source_info, describe, user_frame
from lamella.lax import runtime

__all__ = ["active", "check_jit_outputs", "check_primitive_outputs", "maybe_active"]

maybe_active = bool(config.read("debug_nans") or config.read("debug_infs"))
"""False until either flag is set anywhere: the executor's cheap first test."""


def _flag_changed(value: Any, local: bool) -> None:
    global maybe_active
    if value is True:
        maybe_active = True
        runtime.clear_fast_path_caches()


config.observe("debug_nans", _flag_changed)
config.observe("debug_infs", _flag_changed)


def active() -> bool:
    """Whether this thread checks for NaNs or infinities now."""
    return bool(config.read("debug_nans") or config.read("debug_infs"))


def _invalid(values: Sequence[Any]) -> str | None:
    """'nan' or 'inf' when a value holds one that a flag asks about, else None."""
    nans, infs = config.read("debug_nans"), config.read("debug_infs")
    for value in values:
        dtype = getattr(value, "dtype", None)
        if dtype is None or not np.issubdtype(dtype, np.inexact):
            continue
        array = np.asarray(value)
        if nans and np.isnan(array).any():
            return "nan"
        if infs and np.isinf(array).any():
            return "inf"
    return None


def _error(kind: str, name: str, where: SourceInfo | None) -> FloatingPointError:
    return FloatingPointError(f"invalid value ({kind}) encountered in {name} at "
                              f"{describe(where)}")


def check_primitive_outputs(primitive: Any, out: Any) -> None:
    """Raises if an eagerly applied primitive produced a NaN/infinity (the location
    is the equation being re-run, or the user's line calling it)."""
    kind = _invalid(out if primitive.multiple_results else [out])
    if kind is not None:
        raise _error(kind, primitive.name, user_frame())


class _Rerunning(threading.local):
    def __init__(self) -> None:
        self.jaxprs: set[int] = set()


_rerunning = _Rerunning()


def check_jit_outputs(closed: ClosedJaxpr, args: Sequence[Any], outs: Sequence[Any],
                      name: str) -> None:
    """Raises if a jitted function's outputs hold a NaN/infinity, naming the first
    equation that produces one when the jaxpr runs op by op."""
    kind = _invalid(outs)
    if kind is None or id(closed) in _rerunning.jaxprs:
        return
    _rerunning.jaxprs.add(id(closed))
    try:
        _rerun(closed, args)
    finally:
        _rerunning.jaxprs.discard(id(closed))
    raise FloatingPointError(
        f"invalid value ({kind}) encountered in the output of jit({name}); running it op by "
        "op produced none (XLA's fused arithmetic rounds differently)")


def _rerun(closed: ClosedJaxpr, args: Sequence[Any]) -> None:
    jaxpr = closed.jaxpr
    env = dict(zip(jaxpr.constvars, closed.consts))
    env.update(zip(jaxpr.invars, args))
    for eqn in jaxpr.eqns:
        invals = [v.val if type(v) is Literal else env[v] for v in eqn.invars]
        with carry_source_info(eqn.source_info):
            outs = eqn.primitive.bind(*invals, **eqn.params)
        outs = outs if eqn.primitive.multiple_results else [outs]
        kind = _invalid(outs)
        if kind is not None:
            raise _error(kind, eqn.primitive.name, eqn.source_info)
        env.update(zip(eqn.outvars, outs))
