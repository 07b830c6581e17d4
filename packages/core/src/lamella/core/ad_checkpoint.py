"""JAX's `jax.ad_checkpoint` names: checkpointing, its policies, and what a gradient saves.

>>> import numpy as np
>>> from lamella.core.structural import reduce_sum
>>> print_saved_residuals(lambda x: reduce_sum(x, (0,)), np.ones(3, np.float32))
"""

from lamella.core.checkpoint import (
    Offloadable,
    Recompute,
    Saveable,
    checkpoint,
    checkpoint_name,
    checkpoint_policies,
    print_saved_residuals,
    remat,
    saved_residuals,
)

__all__ = ["Offloadable", "Recompute", "Saveable", "checkpoint", "checkpoint_name",
           "checkpoint_policies", "print_saved_residuals", "remat", "saved_residuals"]
