"""Spatial data structures and algorithms (`jax.scipy.spatial`): rotations in
`transform`."""

from lamella.scipy.spatial import transform as transform

__all__ = ["transform"]
