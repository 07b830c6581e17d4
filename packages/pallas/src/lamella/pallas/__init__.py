"""lamella.pallas: write kernels on refs (JAX's `jax.experimental.pallas`)."""

__version__ = "0.1.0"
