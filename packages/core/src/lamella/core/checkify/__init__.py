"""Checks that survive transformations (JAX's `jax.experimental.checkify`).

`check(pred, msg, *args)` inside a function and `checkify(f)` around it give
`(err, out)`: `err.get()` is the message of the first failed check, or None, and
`err.throw()` raises it. Automatic checks for NaNs, division by zero and
out-of-bounds indexing are enabled with `errors=` (`nan_checks`, `div_checks`,
`index_checks`, `float_checks`, `automatic_checks`, `all_checks`); their rules
live with the primitives' layer (lamella.lax) in `error_checks`.

>>> import numpy as np
>>> def reciprocal(x):
...     check(x != 0, "x is zero")
...     return 1 / x
>>> err, out = checkify(reciprocal)(np.float32(0))
>>> err.get()
'x is zero (`check` failed)'
"""

from lamella.core.checkify.api import check, check_error, checkify, debug_check
from lamella.core.checkify.errors import (
    BatchedError,
    DivisionByZeroError,
    Error,
    ErrorCategory,
    ErrorEffect,
    FailedCheckError,
    JaxException,
    JaxRuntimeError,
    NaNError,
    OOBError,
    all_checks,
    automatic_checks,
    div_checks,
    float_checks,
    index_checks,
    init_error,
    nan_checks,
    user_checks,
)
from lamella.core.checkify.interpreter import (
    checkify_jaxpr,
    error_checks,
    jaxpr_to_checkify_jaxpr,
    num_leaves,
    with_placeholders,
)
from lamella.core.checkify.primitives import (
    assert_func,
    check_p,
    error_merge_p,
    split_merge_operands,
    update_error,
)

__all__ = [
    "BatchedError", "DivisionByZeroError", "Error", "ErrorCategory", "ErrorEffect",
    "FailedCheckError", "JaxException", "JaxRuntimeError", "NaNError", "OOBError",
    "all_checks", "assert_func", "automatic_checks", "check", "check_error", "check_p",
    "checkify", "checkify_jaxpr", "debug_check", "div_checks", "error_checks",
    "error_merge_p", "float_checks", "index_checks", "init_error", "jaxpr_to_checkify_jaxpr",
    "nan_checks", "num_leaves", "split_merge_operands", "update_error", "user_checks",
    "with_placeholders",
]
