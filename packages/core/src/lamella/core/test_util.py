"""Checking derivatives numerically: JAX's `jax.test_util.check_grads`, and the
central differences it is built on.

`numerical_jvp` is the one finite-difference routine of the project; every
test that needs a reference derivative uses it (or `numerical_grad` /
`numerical_jacobian`, built on it). `check_grads` compares a function's JVP
and VJP with it, to any order, as JAX's does.

>>> import numpy as np
>>> from lamella.core.structural import reduce_sum
>>> float(numerical_jvp(lambda x: x * x, [np.float64(3.0)], [np.float64(1.0)]))
6.000000000838668
>>> check_grads(lambda x: reduce_sum(x, (0,)), (np.ones(3),), order=2)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from lamella.core.autodiff_api import jvp, vjp
from lamella.core.dtypes import canonicalize_dtype
from lamella.core.tree_util import tree_flatten, tree_map

EPS = 1e-4
_DEFAULT_TOLERANCE = {
    np.dtype(np.float16): 1e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5,
}


def numerical_jvp(fun: Callable, primals: Sequence[Any], tangents: Sequence[Any],
                  eps: float = 1e-6) -> Any:
    """`(fun(x + eps t) - fun(x - eps t)) / 2 eps`: a central difference along `tangents`.

    `primals` and `tangents` are sequences of pytrees of arrays; the result is a
    pytree like `fun`'s output, in float64 (complex128 for complex outputs).

    Args:
      fun: the function to differentiate.
      primals: its arguments.
      tangents: one direction per argument, of the arguments' shapes.
      eps: the step.

    Returns:
      The directional derivative, with `fun`'s output structure.

    >>> round(float(numerical_jvp(lambda x, y: x * y, [2.0, 5.0], [1.0, 0.0])), 6)
    5.0
    """
    def step(sign):
        moved = [tree_map(lambda p, t: np.asarray(p) + sign * eps * np.asarray(t), p, t)
                 for p, t in zip(primals, tangents)]
        return fun(*moved)

    return tree_map(lambda a, b: (_widen(a) - _widen(b)) / (2 * eps), step(1), step(-1))


def _widen(x: Any) -> np.ndarray:
    x = np.asarray(x)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)


def numerical_grad(fun: Callable, x: Any, eps: float = 1e-6) -> np.ndarray:
    """The gradient of a scalar function of one array, one coordinate at a time.

    >>> numerical_grad(lambda v: (v * v).sum(), np.array([1.0, 2.0])).round(6)
    array([2., 4.])
    """
    x = np.asarray(x, np.float64)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        basis = np.zeros_like(x)
        basis[index] = 1.0
        grad[index] = numerical_jvp(fun, [x], [basis], eps)
    return grad


def numerical_jacobian(fun: Callable, x: Any, eps: float = 1e-6) -> np.ndarray:
    """The Jacobian of a function of one array, shaped `out.shape + x.shape`.

    >>> numerical_jacobian(lambda v: v * 3.0, np.zeros(2)).round(6)
    array([[3., 0.],
           [0., 3.]])
    """
    x = np.asarray(x, np.float64)
    columns = []
    for index in np.ndindex(x.shape):
        basis = np.zeros_like(x)
        basis[index] = 1.0
        columns.append(np.asarray(numerical_jvp(fun, [x], [basis], eps)))
    out_shape = columns[0].shape
    return np.stack(columns, axis=-1).reshape(out_shape + x.shape)


# ---------------------------------------------------------------------------
# check_grads, as JAX's.


def _default_tolerance(tree: Any) -> float:
    """The loosest default tolerance among the leaves' computing dtypes."""
    return max((_DEFAULT_TOLERANCE.get(canonicalize_dtype(np.asarray(x).dtype), 1e-5)
                for x in tree_flatten(tree)[0]), default=1e-5)


def _check_close(got: Any, want: Any, atol: float, rtol: float, message: str) -> None:
    got_leaves, got_tree = tree_flatten(got)
    want_leaves, want_tree = tree_flatten(want)
    if got_tree != want_tree:
        raise AssertionError(f"{message}: structure {got_tree} differs from {want_tree}")
    for g, w in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(_widen(g), _widen(w), atol=atol, rtol=rtol, err_msg=message)


def _random_like(rng: np.random.Generator, tree: Any) -> Any:
    def sample(x):
        x = np.asarray(x)
        if x.dtype.kind == "c":
            return (rng.standard_normal(x.shape) + 1j * rng.standard_normal(x.shape)
                    ).astype(x.dtype)
        return rng.standard_normal(x.shape).astype(x.dtype)
    return tree_map(sample, tree)


def _inner_product(xs: Any, ys: Any) -> Any:
    total = 0.0
    for x, y in zip(tree_flatten(xs)[0], tree_flatten(ys)[0]):
        total = total + np.sum(_widen(x) * _widen(y))
    return total


def check_jvp(f: Callable, f_jvp: Callable, args: Sequence[Any], atol: float | None = None,
              rtol: float | None = None, eps: float = EPS, err_msg: str = "") -> None:
    """Checks `f_jvp(args, tangents) -> (out, out_tangent)` against `f` and central
    differences along random tangents (JAX's `check_jvp`; `f_jvp` is usually
    `functools.partial(jvp, f)`)."""
    _check_jvp(f, f_jvp, tuple(args), atol, rtol, eps, np.random.default_rng(0), err_msg)


def check_vjp(f: Callable, f_vjp: Callable, args: Sequence[Any], atol: float | None = None,
              rtol: float | None = None, eps: float = EPS, err_msg: str = "") -> None:
    """Checks `f_vjp(*args) -> (out, pullback)` against central differences of `f`
    through the identity `<pullback(ct), t> = <ct, J t>` (JAX's `check_vjp`; `f_vjp`
    is usually `functools.partial(vjp, f)`)."""
    _check_vjp(f, f_vjp, tuple(args), atol, rtol, eps, np.random.default_rng(0), err_msg)


def _check_jvp(fun, fun_jvp, args, atol, rtol, eps, rng, message) -> None:
    atol = _default_tolerance(args) if atol is None else atol
    rtol = _default_tolerance(args) if rtol is None else rtol
    tangents = _random_like(rng, args)
    out, out_dot = fun_jvp(args, tangents)
    _check_close(out, fun(*args), atol, rtol, f"{message} primal")
    expected = numerical_jvp(fun, args, tangents, eps)
    _check_close(out_dot, expected, atol, rtol, f"{message} tangent")


def _check_vjp(fun, fun_vjp, args, atol, rtol, eps, rng, message) -> None:
    atol = _default_tolerance(args) if atol is None else atol
    rtol = _default_tolerance(args) if rtol is None else rtol
    out, pullback = fun_vjp(*args)
    _check_close(out, fun(*args), atol, rtol, f"{message} primal")
    tangents = _random_like(rng, args)
    tangent_out = numerical_jvp(fun, args, tangents, eps)
    cotangent = _random_like(rng, out)
    conjugate = functools.partial(tree_map, np.conj)
    cotangent_in = conjugate(pullback(conjugate(cotangent)))
    got = _inner_product(tangents, cotangent_in)
    want = _inner_product(tangent_out, cotangent)
    _check_close(got, want, atol, rtol, f"{message} inner product")


def check_grads(f: Callable, args: Sequence[Any], order: int,
                modes: Sequence[str] = ("fwd", "rev"), atol: float | None = None,
                rtol: float | None = None, eps: float | None = None) -> None:
    """Checks `f`'s derivatives up to `order` against central differences.

    Forward mode compares `jvp(f)` with a numerical JVP along random tangents;
    reverse mode checks `<vjp(ct), t> = <ct, jvp(t)>`. Higher orders repeat
    the check on the JVP / VJP functions themselves. Raises AssertionError on
    a mismatch. Use float64 arguments (x64) for tight tolerances.

    Args:
      f: a function of arrays (or pytrees of arrays) returning arrays.
      args: the point at which to check, a tuple of `f`'s arguments.
      order: how many times to differentiate (1 for first derivatives).
      modes: "fwd", "rev" or both.
      atol, rtol: tolerances; by default from the dtypes (2e-3 for float32,
        1e-5 for float64).
      eps: the finite-difference step (default 1e-4).

    >>> import numpy as np
    >>> from lamella.core.structural import transpose
    >>> check_grads(lambda x: transpose(x, (1, 0)), (np.ones((2, 3)),), order=2)
    """
    args = tuple(args)
    eps = EPS if eps is None else eps
    atol = _default_tolerance(args) if atol is None else atol
    rtol = _default_tolerance(args) if rtol is None else rtol
    rng = np.random.default_rng(0)
    unknown = set(modes) - {"fwd", "rev"}
    if unknown:
        raise ValueError(f"check_grads modes must be 'fwd' and/or 'rev', got {sorted(unknown)}")

    def check(fun, fun_args, order_left, message):
        if "fwd" in modes:
            fwd_message = f"JVP of {message}" if message else "JVP"
            _check_jvp(fun, functools.partial(jvp, fun), fun_args, atol, rtol, eps, rng,
                       fwd_message)
            if order_left > 1:
                check(functools.partial(jvp, fun), (fun_args, fun_args), order_left - 1,
                      fwd_message)
        if "rev" in modes:
            rev_message = f"VJP of {message}" if message else "VJP"
            _check_vjp(fun, functools.partial(vjp, fun), fun_args, atol, rtol, eps, rng,
                       rev_message)
            if order_left > 1:
                def pulled_back(*xs):
                    out, pullback = vjp(fun, *xs)
                    return pullback(out)
                check(pulled_back, fun_args, order_left - 1, rev_message)

    check(f, args, order, "")

