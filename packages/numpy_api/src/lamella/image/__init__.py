"""lamella.image: `jax.image`'s resampling of arrays (images, volumes, signals) to new
shapes: `resize`, `scale_and_translate` and the `ResizeMethod`s (nearest, linear,
cubic, PyTorch's cubic, Lanczos 3 and 5, area), with JAX's half-pixel-centre
conventions and antialiasing when downsampling.

>>> import numpy as np
>>> resize(np.float32([[0, 1], [2, 3]]), (3, 3), "linear")
Array([[0. , 0.5, 1. ],
       [1. , 1.5, 2. ],
       [2. , 2.5, 3. ]], dtype=float32)
"""

import os as _os

from lamella.core.source_info import register_internal_path as _register_internal_path
from lamella.image.resampling import ResizeMethod, resize, scale_and_translate

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]

_register_internal_path(_os.path.dirname(__file__))  # user lines, not ours, in errors
