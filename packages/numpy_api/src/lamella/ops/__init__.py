"""lamella.ops: `jax.ops`'s functions, and the numerics shared by several higher layers.

`lamella.ops.special` holds the one implementation of `logsumexp`, `softmax` and
`log_softmax` that `lamella.nn` and `lamella.scipy.special` both re-export, as
`jax._src.ops.special` does for `jax.nn` and `jax.scipy.special`.
"""
