"""check_grads checked on itself: it accepts correct derivatives, to any order and
in both modes, and rejects a custom_jvp whose rule is wrong (at the order where it
goes wrong)."""

import numpy as np
import pytest
from numpy_prims import cos, exp, mul, sin, tanh

import lamella.core as lc
from lamella.core.test_util import check_grads, check_jvp, check_vjp


@pytest.fixture(autouse=True)
def x64():
    with lc.enable_x64():
        yield


X = np.array([0.3, -1.2, 2.0])


@pytest.mark.parametrize("order", [1, 2, 3])
def test_correct_functions_pass(order):
    check_grads(lambda x: sin(mul(x, tanh(x))), (X,), order)
    check_grads(lambda x, y: exp(mul(x, y)), (X, X[::-1].copy()), order, modes=("rev",))
    check_grads(lambda tree: mul(tree["a"], cos(tree["b"])), ({"a": X, "b": X + 1},), order,
                modes=("fwd",))


def cube_with(rule):
    @lc.custom_jvp
    def cube(x):
        return mul(x, mul(x, x))

    @cube.defjvp
    def cube_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return cube(x), rule(x, t)
    return cube


right_cube = cube_with(lambda x, t: mul(mul(3.0, mul(x, x)), t))
wrong_cube = cube_with(lambda x, t: mul(mul(2.0, mul(x, x)), t))
# Right slopes, but written with the slope frozen: its own derivative is zero, so the
# second derivative comes out wrong.
frozen_cube = cube_with(lambda x, t: mul(lc.stop_gradient(mul(3.0, mul(x, x))), t))


def test_a_right_custom_jvp_passes():
    check_grads(right_cube, (X,), order=2)


@pytest.mark.parametrize("modes", [("fwd",), ("rev",)])
def test_a_wrong_custom_jvp_fails(modes):
    with pytest.raises(AssertionError, match="JVP tangent" if modes == ("fwd",)
                       else "VJP inner product"):
        check_grads(wrong_cube, (X,), order=1, modes=modes)


def test_a_rule_wrong_only_at_second_order_fails_only_there():
    check_grads(frozen_cube, (X,), order=1)
    with pytest.raises(AssertionError, match="JVP of JVP tangent"):
        check_grads(frozen_cube, (X,), order=2, modes=("fwd",))
    with pytest.raises(AssertionError, match="VJP of VJP"):
        check_grads(frozen_cube, (X,), order=2, modes=("rev",))


def test_tolerances_and_step_are_used():
    nearly = cube_with(lambda x, t: mul(mul(3.03, mul(x, x)), t))  # 1% off
    with pytest.raises(AssertionError):
        check_grads(nearly, (X,), order=1)
    check_grads(nearly, (X,), order=1, atol=0.2, rtol=0.05)
    with pytest.raises(AssertionError):  # a huge step makes the reference wrong
        check_grads(right_cube, (X,), order=1, eps=0.5)


def test_jvp_and_vjp_checks_and_bad_modes():
    check_jvp(sin, lambda args, ts: lc.jvp(sin, args, ts), (X,))
    check_vjp(sin, lambda *args: lc.vjp(sin, *args), (X,))
    with pytest.raises(AssertionError, match="primal"):  # the JVP's primal output, too
        check_jvp(sin, lambda args, ts: lc.jvp(cos, args, ts), (X,))
    with pytest.raises(ValueError, match="modes must be 'fwd' and/or 'rev'"):
        check_grads(sin, (X,), 1, modes=("forward",))
