"""lamella.random: JAX's `jax.random` on lamella.lax.

Counter-based random numbers: a key (typed, from `key(seed)`, or raw uint32[2],
from `PRNGKey(seed)`) is split into independent keys and consumed by the
samplers, which are pure functions of (key, parameters) and so work under
jit, vmap and grad. Keys, bits, `uniform`, `normal` and the samplers built
on them reproduce JAX's default (partitionable Threefry) numbers bit for bit.

>>> import lamella.random as random
>>> k1, k2 = random.split(random.key(0))
>>> random.uniform(k1, (2,)).shape
(2,)
"""

import os as _os

from lamella.core.source_info import register_internal_path as _register_internal_path
from lamella.random._eager import STATIC_PARAMETERS as _STATIC_PARAMETERS
from lamella.random._eager import eager_sampler as _eager_sampler
from lamella.random.continuous import *  # noqa: F403
from lamella.random.continuous import __all__ as _continuous
from lamella.random.discrete import *  # noqa: F403
from lamella.random.discrete import __all__ as _discrete
from lamella.random.gamma_based import *  # noqa: F403
from lamella.random.gamma_based import __all__ as _gamma
from lamella.random.keys import *  # noqa: F403
from lamella.random.keys import __all__ as _keys

__all__ = sorted([*_keys, *_continuous, *_discrete, *_gamma])

for _name, _static in _STATIC_PARAMETERS.items():  # eager calls run as one cached jit
    globals()[_name] = _eager_sampler(globals()[_name], _static)

_register_internal_path(_os.path.dirname(__file__))  # user lines, not ours, in errors
