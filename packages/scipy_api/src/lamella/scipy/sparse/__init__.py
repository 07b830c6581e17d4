"""lamella.scipy.sparse: `jax.scipy.sparse` -- its `linalg` module of Krylov solvers
(`cg`, `gmres`, `bicgstab`) for linear operators given as matrices or functions."""

from lamella.scipy.sparse import linalg

__all__ = ["linalg"]
