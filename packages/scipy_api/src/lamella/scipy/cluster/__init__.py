"""Clustering (`jax.scipy.cluster`): vector quantization in `vq`."""

from lamella.scipy.cluster import vq as vq

__all__ = ["vq"]
