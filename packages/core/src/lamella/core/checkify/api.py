"""The public functions of checkify: `checkify`, `check`, `debug_check`, `check_error`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from lamella.core.api_util import fun_name
from lamella.core.array import Array
from lamella.core.checkify.errors import Error, FailedCheckError, init_error, user_checks
from lamella.core.checkify.interpreter import checkify_jaxpr_flat
from lamella.core.checkify.primitives import assert_func, bind_error_check
from lamella.core.jaxpr import DebugInfo
from lamella.core.source_info import user_frame
from lamella.core.staging import trace_to_jaxpr
from lamella.core.trace import aval_of
from lamella.core.tree_util import tree_flatten, tree_leaves, tree_unflatten

Out = TypeVar("Out")


def checkify(f: Callable[..., Out], errors: frozenset = user_checks
             ) -> Callable[..., tuple[Error, Out]]:
    """`f`, returning `(error, out)`: its `check`s (and the automatic checks named in
    `errors`) are turned into an `Error` value instead of raising, so the function can
    be jitted, vmapped, differentiated and run in loops.

    Args:
      f: the function to check.
      errors: the enabled kinds of checks: `user_checks` (the default), `nan_checks`,
        `div_checks`, `index_checks`, or unions such as `float_checks | user_checks`.

    Returns:
      A function with `f`'s arguments, returning the `Error` of the first failed check
      (`err.get()` is None if none failed) and `f`'s output.

    >>> import numpy as np
    >>> def f(x):
    ...     check(x > 0, "{} must be positive", x)
    ...     return x
    >>> err, out = checkify(f)(np.float32(-2.0))
    >>> err.get()
    '-2.0 must be positive (`check` failed)'
    """
    @functools.wraps(f)
    def checked_fun(*args: Any, **kwargs: Any) -> tuple[Error, Out]:
        out_tree: list = []

        def flat() -> list:
            leaves, tree = tree_flatten(f(*args, **kwargs))
            out_tree.append(tree)
            return leaves

        # The arguments are closed over, so concrete ones stay concrete while tracing.
        jaxpr, consts = trace_to_jaxpr(flat, [], DebugInfo("checkify", fun_name(f), None,
                                                          None))
        error, outs = checkify_jaxpr_flat(jaxpr, consts, errors, init_error)
        return error, tree_unflatten(out_tree[0], outs)
    return checked_fun


def check(pred: Any, msg: str, *fmt_args: Any, debug: bool = False, **fmt_kwargs: Any
          ) -> None:
    """Checks that the scalar boolean `pred` holds; if not, fails with `msg` formatted
    with `fmt_args` and `fmt_kwargs` (arrays, formatted when the error is reported).

    On concrete values it raises `JaxRuntimeError` at once; inside `checkify` it
    records the failure in the returned `Error`. Staged under `jit` (or a loop)
    without `checkify`, it cannot run: functionalize it with `checkify` first.

    >>> import numpy as np
    >>> check(np.array(True), "never shown")
    """
    _check(pred, msg, debug, fmt_args, fmt_kwargs)


def debug_check(pred: Any, msg: str, *fmt_args: Any, **fmt_kwargs: Any) -> None:
    """A `check` that only `checkify` runs: elsewhere (eagerly, under `jit`) it does
    nothing.

    >>> import numpy as np
    >>> debug_check(np.array(False), "ignored without checkify")
    >>> checkify(lambda: debug_check(np.array(False), "caught"))()[0].get()
    'caught (`check` failed)'
    """
    _check(pred, msg, True, fmt_args, fmt_kwargs)


def check_error(error: Error) -> None:
    """Raises `JaxRuntimeError` if `error` holds a failed check. Like `check`, it is
    functionalized by `checkify`: it is checkify's inverse.

    >>> from lamella.core.checkify import init_error
    >>> check_error(init_error)
    """
    if not isinstance(error, Error):
        raise TypeError(f"check_error takes an Error as argument, got type {type(error)} "
                        "instead.")
    bind_error_check(error, debug=False)


def _is_scalar_pred(pred: Any) -> bool:
    if isinstance(pred, (bool, np.bool_)):
        return True
    return (isinstance(pred, (Array, np.ndarray)) and aval_of(pred).shape == ()
            and aval_of(pred).dtype == np.dtype(bool))


def _check(pred: Any, msg: str, debug: bool, fmt_args: tuple, fmt_kwargs: dict) -> None:
    if not _is_scalar_pred(pred):
        name = "debug_check" if debug else "check"
        raise TypeError(f"{name} takes a scalar pred as argument, got {pred}")
    for arg in tree_leaves((fmt_args, fmt_kwargs)):
        if not isinstance(arg, (Array, np.ndarray, np.generic)):
            raise TypeError("Formatting arguments to checkify.check need to be PyTrees of "
                            f"arrays, but got {arg!r} of type {type(arg)}.")
    exception = FailedCheckError(user_frame(), msg, *fmt_args, **fmt_kwargs)
    bind_error_check(assert_func(init_error, pred, exception, negate=True), debug)
