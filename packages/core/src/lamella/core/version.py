"""lamella-core's version (JAX's `jax.version`).

>>> __version_info__ >= (0, 1, 0)
True
"""

__version__ = "0.1.0"
__version_info__ = tuple(int(part) for part in __version__.split("."))
