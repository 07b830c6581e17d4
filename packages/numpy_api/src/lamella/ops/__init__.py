"""lamella.ops: `jax.ops`'s functions, and the numerics shared by several higher layers.

`segment_sum`, `segment_prod`, `segment_max` and `segment_min` (in `segments.py`)
are `jax.ops`. `lamella.ops.special` holds the one implementation of `logsumexp`,
`softmax` and `log_softmax` that `lamella.nn` and `lamella.scipy.special` both
re-export, as `jax._src.ops.special` does for `jax.nn` and `jax.scipy.special`.

>>> import numpy as np
>>> segment_max(np.float32([1, 5, 2]), np.int32([0, 0, 1]))
Array([5., 2.], dtype=float32)
"""

import os as _os

from lamella.core.source_info import register_internal_path as _register_internal_path
from lamella.ops.segments import segment_max, segment_min, segment_prod, segment_sum

__all__ = ["segment_max", "segment_min", "segment_prod", "segment_sum"]

_register_internal_path(_os.path.dirname(__file__))  # user lines, not ours, in errors
