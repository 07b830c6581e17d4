"""config.debug_nans / debug_infs: the primitive and the user's line that made a NaN
or an infinity, from eager code, jitted code, nested jits and inside grad."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as jnp

F32 = np.float32


def _line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def innermost(x):
    return jnp.log(x)


def middle(x):
    return innermost(x) * 2.0


def outer(x):
    return middle(x) * x


jitted_grad = lc.jit(lc.grad(outer))


def test_nan_three_calls_deep_in_jitted_grad_is_reported_at_the_users_line():
    with lc.debug_nans(True):
        with pytest.raises(FloatingPointError) as info:
            jitted_grad(F32(-1.0))
    assert str(info.value) == (f"invalid value (nan) encountered in log at {__file__}:"
                               f"{_line_of(innermost, 'jnp.log')} (innermost)")


def test_eager_grad_and_nested_jit():
    inner = lc.jit(lambda x: jnp.sqrt(x) + 1.0)
    with lc.debug_nans(True):
        with pytest.raises(FloatingPointError, match=r"nan\) encountered in log at .*innermost"):
            lc.grad(outer)(F32(-1.0))
        with pytest.raises(FloatingPointError, match=r"encountered in sqrt at .*test_debug_nans"):
            lc.jit(lambda x: inner(x) * 2.0)(F32(-1.0))


def test_infs_and_the_flags_off():
    divide = lc.jit(lambda x: 1.0 / x)
    assert np.isinf(divide(F32(0.0)))  # off: no check
    with lc.debug_infs(True):
        with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in div"):
            divide(F32(0.0))
        assert float(divide(F32(2.0))) == 0.5
    with lc.debug_nans(True):
        assert np.isinf(divide(F32(0.0)))  # infinities are debug_infs' business
    assert np.isnan(jitted_grad(F32(-1.0)))


def test_check_inside_control_flow_names_the_loop():
    loop = lc.jit(lambda x: lax.fori_loop(0, 3, lambda i, c: jnp.log(c) - 1.0, x))
    with lc.debug_nans(True):
        with pytest.raises(FloatingPointError, match="encountered in"):
            loop(F32(0.5))
        assert np.isfinite(loop(F32(1e30)))
