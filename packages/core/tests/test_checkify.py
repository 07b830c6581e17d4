"""checkify with core alone: checks functionalized through jit, vmap and grad on the
NumPy interpreter, and an automatic check registered as a rule, as a layer would."""

import numpy as np
import pytest
from numpy_prims import div, div_p, greater, log, mul, sin

import lamella.core as lc
from lamella.core import Primitive, ShapedArray, batching, checkify

f32 = np.float32
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # log(-1), 1/0


def positive_log(x):
    checkify.check(greater(x, 0.0), "{} must be positive, twice is {twice}", x,
                   twice=mul(x, 2.0))
    return log(x)


def test_check_passes_and_fails_with_formatted_arrays():
    err, out = checkify.checkify(positive_log)(f32(2.0))
    assert err.get() is None and str(err) == "Error(None)"
    np.testing.assert_allclose(out, np.log(2.0))
    err, _ = checkify.checkify(positive_log)(f32(-2.0))
    assert err.get() == "-2.0 must be positive, twice is -4.0 (`check` failed)"
    assert isinstance(err.get_exception(), checkify.FailedCheckError)
    with pytest.raises(checkify.JaxRuntimeError, match="-2.0 must be positive"):
        err.throw()


def test_check_outside_checkify_raises_at_once():
    with pytest.raises(checkify.JaxRuntimeError,
                       match=r"^-1.0 must be positive, twice is -2.0 \(`check` failed\)$"):
        positive_log(f32(-1.0))
    positive_log(f32(1.0))
    with pytest.raises(TypeError, match="check takes a scalar pred"):
        checkify.check(np.array([True]), "x")
    with pytest.raises(TypeError, match="need to be PyTrees of arrays, but got 3"):
        checkify.check(True, "x {}", 3)


def test_debug_check_only_runs_under_checkify():
    def f(x):
        checkify.debug_check(greater(x, 0.0), "not positive")
        return x
    f(f32(-1.0))
    assert checkify.checkify(f)(f32(-1.0))[0].get() == "not positive (`check` failed)"


def test_the_first_failing_check_is_reported():
    def f(x):
        checkify.check(greater(x, 0.0), "a")
        checkify.check(greater(x, 1.0), "b {}", x)
        return x
    assert checkify.checkify(f)(f32(-1.0))[0].get() == "a (`check` failed)"
    assert checkify.checkify(f)(f32(0.5))[0].get() == "b 0.5 (`check` failed)"
    assert checkify.checkify(f)(f32(2.0))[0].get() is None


def test_under_jit_both_ways():
    for fun in (lc.jit(checkify.checkify(positive_log)), checkify.checkify(lc.jit(positive_log))):
        err, out = fun(f32(-3.0))
        assert err.get() == "-3.0 must be positive, twice is -6.0 (`check` failed)"
        assert fun(f32(3.0))[0].get() is None


def test_vmap_of_checkify_reports_each_failing_element():
    xs = np.array([1.0, -2.0, -3.0], f32)
    err, out = lc.vmap(checkify.checkify(positive_log))(xs)
    assert err.get() == ("at mapped index 1: -2.0 must be positive, twice is -4.0 (`check` "
                         "failed)\nat mapped index 2: -3.0 must be positive, twice is -6.0 "
                         "(`check` failed)")
    assert isinstance(err.get_exception(), checkify.BatchedError)
    assert lc.vmap(checkify.checkify(positive_log))(np.ones(3, f32))[0].get() is None


def test_checkify_of_vmap_reports_the_last_failing_element_as_jax():
    err, _ = checkify.checkify(lc.vmap(positive_log))(np.array([-1.0, -2.0, 3.0], f32))
    assert err.get() == "-2.0 must be positive, twice is -4.0 (`check` failed)"
    with pytest.raises(checkify.JaxRuntimeError, match="-2.0 must be positive"):
        lc.vmap(positive_log)(np.array([-1.0, -2.0, 3.0], f32))


def test_grad_and_checkify_compose():
    err, g = checkify.checkify(lc.grad(positive_log))(f32(-2.0))
    assert err.get().startswith("-2.0 must be positive") and g == f32(-0.5)
    assert lc.grad(lambda x: checkify.checkify(positive_log)(x)[1])(f32(4.0)) == f32(0.25)
    (err, out), (err_dot, out_dot) = lc.jvp(checkify.checkify(positive_log), (f32(2.0),),
                                            (f32(1.0),))
    assert err.get() is None and out_dot == f32(0.5)


def test_check_error_is_functionalized_by_checkify():
    inner, _ = checkify.checkify(positive_log)(f32(-1.0))
    with pytest.raises(checkify.JaxRuntimeError, match="-1.0 must be positive"):
        checkify.check_error(inner)
    err, _ = checkify.checkify(lambda: checkify.check_error(inner))()
    assert err.get().startswith("-1.0 must be positive")
    with pytest.raises(TypeError, match="check_error takes an Error"):
        checkify.check_error("not an error")


def test_the_error_is_a_pytree_and_jaxpr_shows_the_check():
    err, _ = checkify.checkify(positive_log)(f32(-1.0))
    leaves = lc.tree_util.tree_leaves(err)
    assert len(leaves) == 4  # pred, code, two payload arrays
    rebuilt = lc.tree_util.tree_unflatten(lc.tree_util.tree_structure(err), leaves)
    assert rebuilt.get() == err.get()
    text = str(lc.make_jaxpr(positive_log)(f32(1.0)))
    assert "check[debug=False]" in text and "err_tree" not in text
    assert "check[" not in str(lc.make_jaxpr(checkify.checkify(positive_log))(f32(1.0)))


# An automatic check, registered as a compiler layer registers its own: division by
# zero for the NumPy `div`, with a predicate primitive of its own.
any_zero_p = Primitive("any_zero")
any_zero_p.def_impl(lambda y: np.any(np.asarray(y) == 0))
any_zero_p.def_abstract_eval(lambda y: ShapedArray((), np.dtype(bool)))
batching.primitive_batchers[any_zero_p] = lambda args, dims: (
    any_zero_p.bind(args[0]) if dims[0] is None else
    np.any(np.moveaxis(np.asarray(args[0]), dims[0], 0).reshape(args[0].shape[dims[0]], -1)
           == 0, axis=1), 0)


def _div_check(error, enabled, x, y):
    if checkify.DivisionByZeroError in enabled:
        error = checkify.assert_func(error, any_zero_p.bind(y),
                                     checkify.DivisionByZeroError(None))
    return error, div(x, y)


@pytest.fixture
def div_rule():
    checkify.error_checks[div_p] = _div_check
    yield
    del checkify.error_checks[div_p]


def test_an_automatic_check_runs_only_when_enabled(div_rule):
    f = lambda x, y: sin(div(x, y))  # noqa: E731
    assert checkify.checkify(f)(f32(1.0), f32(0.0))[0].get() is None
    err, _ = checkify.checkify(f, errors=checkify.div_checks)(f32(1.0), f32(0.0))
    assert err.get() == "division by zero"
    err, _ = checkify.checkify(f, errors=checkify.all_checks)(f32(1.0), f32(2.0))
    assert err.get() is None
    err, _ = lc.vmap(checkify.checkify(f, errors=checkify.float_checks))(
        np.array([1.0, 1.0], f32), np.array([1.0, 0.0], f32))
    assert err.get() == "at mapped index 1: division by zero"


def test_error_sets_are_jaxs():
    assert checkify.float_checks == checkify.nan_checks | checkify.div_checks
    assert checkify.automatic_checks == checkify.float_checks | checkify.index_checks
    assert checkify.all_checks == checkify.automatic_checks | checkify.user_checks
    assert issubclass(checkify.JaxRuntimeError, ValueError)
