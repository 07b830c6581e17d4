"""lamella.nn: `jax.nn` on lamella.numpy — activations, attention, one-hot and
normalisation helpers — with `lamella.nn.initializers`, and the small
neural-network libraries JAX ships: `lamella.nn.stax` and `lamella.nn.optimizers`.
"""

__version__ = "0.1.0"
