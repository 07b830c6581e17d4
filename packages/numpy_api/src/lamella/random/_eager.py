"""The eager fast path of lamella.random's samplers and key functions.

Each runs eagerly as one cached jit through jaxlib's C++ dispatcher (see
`lamella.numpy.util.eager_fast`), as JAX's jitted samplers do, instead of one
dispatch per primitive. Calls whose checks speak at every call (a warning for
a 64-bit dtype with x64 off, the legacy raw-key policy, fold_in's range
check of a Python int) run op by op, so they warn and raise as before.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from lamella.core import dtypes as core_dtypes
from lamella.core.config import config
from lamella.numpy.util import eager_fast, eager_operand_type
from lamella.random.keys import PRNGKeyArray

eager_operand_type(PRNGKeyArray)

# The parameters of each sampler that are Python values (static under jit).
STATIC_PARAMETERS: dict[str, tuple[str, ...]] = {
    "normal": ("shape", "dtype", "out_sharding"),
    "uniform": ("shape", "dtype", "out_sharding"),
    "bits": ("shape", "dtype", "out_sharding"),
    "randint": ("shape", "dtype", "out_sharding"),
    "bernoulli": ("shape", "mode", "out_sharding"),
    "categorical": ("axis", "shape", "replace", "mode", "out_sharding"),
    "truncated_normal": ("shape", "dtype", "out_sharding"),
    "gumbel": ("shape", "dtype", "mode", "out_sharding"),
    "exponential": ("shape", "dtype", "out_sharding"),
    "laplace": ("shape", "dtype", "out_sharding"),
    "logistic": ("shape", "dtype", "out_sharding"),
    "cauchy": ("shape", "dtype", "out_sharding"),
    "rademacher": ("shape", "dtype", "out_sharding"),
    "split": ("num",),
    "fold_in": (),
}


# dtypes canonical whatever enable_x64 says (the common case skips np.dtype()).
_CANONICAL = frozenset({np.float32, np.float16, np.int32, np.uint32, np.dtype(np.float32),
                        np.dtype(np.int32), np.dtype(np.uint32), np.dtype(np.float16)})


def _canonical(dtype: Any) -> bool:
    try:
        if dtype in _CANONICAL:
            return True
        dt = np.dtype(dtype)
    except TypeError:
        return False
    return core_dtypes.canonicalize_dtype(dt) == dt


def eager_sampler(fun: Callable, static: tuple[str, ...]) -> Callable:
    """`fun` with the eager fast path, for calls whose checks stay silent."""
    fast = eager_fast(*static)(fun)
    names = list(inspect.signature(fun).parameters)
    dtype_at = names.index("dtype") if "dtype" in names else None
    data_at = names.index("data") if "data" in names else None

    @functools.wraps(fun)
    def call(*args: Any, **kwargs: Any) -> Any:
        key = args[0] if args else kwargs.get("key")
        if type(key) is not PRNGKeyArray and config.read("legacy_prng_key") != "allow":
            return fun(*args, **kwargs)
        if dtype_at is not None:
            dtype = args[dtype_at] if len(args) > dtype_at else kwargs.get("dtype")
            if dtype is not None and not _canonical(dtype):
                return fun(*args, **kwargs)
        if data_at is not None:
            data = args[data_at] if len(args) > data_at else kwargs.get("data")
            if isinstance(data, (int, np.integer)) and not 0 <= data < 2**31:
                return fun(*args, **kwargs)
        return fast(*args, **kwargs)
    return call
