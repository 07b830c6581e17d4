"""logsumexp, softmax and log_softmax with `scipy.special`'s signatures: the one
implementation in `lamella.ops.special`, shared with `lamella.nn` as JAX shares
it between `jax.nn` and `jax.scipy.special`. Here softmax and log_softmax take
`axis` by keyword only and default to all axes.

>>> import numpy as np
>>> softmax(np.float32([[0.0, 0.0], [0.0, 0.0]]))
Array([[0.25, 0.25],
       [0.25, 0.25]], dtype=float32)
"""

from __future__ import annotations

from lamella.ops import special as _ops
from lamella.ops.special import logsumexp
from lamella.scipy.special._numerics import Array, ArrayLike

__all__ = ["log_softmax", "logsumexp", "softmax"]


def softmax(x: ArrayLike, /, *, axis: int | tuple[int, ...] | None = None) -> Array:
    """exp(x) / sum(exp(x)) over `axis` (None: all axes); a +inf input gives NaN.

    >>> import numpy as np
    >>> softmax(np.float32([0.0, np.log(3.0)]), axis=0)
    Array([0.25      , 0.75000006], dtype=float32)
    """
    return _ops.softmax(x, axis=axis)


def log_softmax(x: ArrayLike, /, *, axis: int | tuple[int, ...] | None = None) -> Array:
    """log(softmax(x)) over `axis` (None: all axes), as x - logsumexp(x).

    >>> import numpy as np
    >>> log_softmax(np.float32([0.0, 0.0]))
    Array([-0.6931472, -0.6931472], dtype=float32)
    """
    return _ops.log_softmax(x, axis=axis)
