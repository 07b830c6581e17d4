"""`jax.nn`'s activation functions on lamella.numpy, with JAX 0.10.2's formulas,
dtype rules and derivatives at the kinks.

Each public function checks its argument and calls one jitted body, so an eager
call is a single compiled program, and under `jit`, `grad` and `vmap` the body is
traced like any other function. `gelu` alone runs op by op, as JAX's does: XLA fuses
what it compiles together, so compiling the same functions as JAX gives JAX's bits.

Gradients at kinks are JAX's: relu'(0) = 0, relu6'(0) = relu6'(6) = 0 and log1mexp'
come from custom JVPs; leaky_relu'(0) = 1, elu'(0) = alpha, celu'(0) = 1,
hard_tanh'(±1) = 1, hard_sigmoid'(±3) = 0 and sparse_sigmoid'(±1) = 0.25 follow from
the same `where`, `maximum` and `minimum` compositions JAX uses (ties in max/min split
the gradient).

One deliberate difference: `squareplus` does not overflow for |x| beyond
sqrt(finfo.max), where JAX's x**2 makes it return inf (or NaN at -inf).

>>> import numpy as np
>>> relu(np.float32([-1.0, 0.0, 2.0]))
Array([0., 0., 2.], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import numpy as np

import lamella.core as lc
import lamella.numpy as lnp
from lamella import lax
from lamella.nn._checks import arraylike, float_constant, inexact, promote_inexact, real

__all__ = ["celu", "elu", "gelu", "glu", "hard_sigmoid", "hard_silu", "hard_swish",
           "hard_tanh", "identity", "leaky_relu", "log1mexp", "log_sigmoid", "mish", "relu",
           "relu6", "selu", "sigmoid", "silu", "soft_sign", "softplus", "sparse_plus",
           "sparse_sigmoid", "squareplus", "swish", "tanh"]

tanh = lnp.tanh

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


# --- rectifiers with custom derivatives at the kinks ---------------------------------
def _zero_tangent_unless(keep: Any, g: Any) -> Any:
    return lax.select(keep, g, lax.full_like(g, 0))


_relu = lc.custom_jvp(lc.jit(lambda x: lnp.maximum(x, 0)))
_relu.defjvps(lambda g, ans, x: _zero_tangent_unless(x > 0, g))

_relu6 = lc.custom_jvp(lc.jit(lambda x: lnp.minimum(lnp.maximum(x, 0), 6.0)))
_relu6.defjvps(lambda g, ans, x: _zero_tangent_unless((x > 0) & (x < 6), g))


def relu(x: Any) -> Any:
    """max(x, 0), with gradient 0 at x = 0; integer inputs keep their dtype (bool → int32).

    >>> import numpy as np
    >>> relu(np.int32([-2, 3]))
    Array([0, 3], dtype=int32)
    """
    return _relu(real("relu", x))


def relu6(x: Any) -> Any:
    """min(max(x, 0), 6), with gradient 0 at both kinks (always a float result).

    >>> import numpy as np
    >>> relu6(np.float32([-1.0, 3.0, 7.0]))
    Array([0., 3., 6.], dtype=float32)
    """
    return _relu6(real("relu6", x))


@lc.jit
def _hard_sigmoid(x: Any) -> Any:
    return _relu6(x + 3.0) / 6.0


def hard_sigmoid(x: Any) -> Any:
    """relu6(x + 3) / 6: a piecewise-linear sigmoid.

    >>> import numpy as np
    >>> hard_sigmoid(np.float32([-4.0, 0.0, 1.5]))
    Array([0.  , 0.5 , 0.75], dtype=float32)
    """
    return _hard_sigmoid(real("hard_sigmoid", x))


@lc.jit
def _hard_silu(x: Any) -> Any:
    return x * _hard_sigmoid(x)


def hard_silu(x: Any) -> Any:
    """x * hard_sigmoid(x) (also called hard_swish).

    >>> import numpy as np
    >>> hard_silu(np.float32([-4.0, 1.5]))
    Array([-0.   ,  1.125], dtype=float32)
    """
    return _hard_silu(real("hard_silu", x))


hard_swish = hard_silu


@lc.jit
def _leaky_relu(x: Any, negative_slope: Any) -> Any:
    return lnp.where(x >= 0, x, negative_slope * x)


def leaky_relu(x: Any, negative_slope: Any = 1e-2) -> Any:
    """x for x >= 0, negative_slope * x below (gradient 1 at 0).

    >>> import numpy as np
    >>> leaky_relu(np.float32([-2.0, 3.0]), negative_slope=0.5)
    Array([-1.,  3.], dtype=float32)
    """
    return _leaky_relu(real("leaky_relu", x), negative_slope)


@lc.jit
def _hard_tanh(x: Any) -> Any:
    return lnp.where(x > 1, 1, lnp.where(x < -1, -1, x))


def hard_tanh(x: Any) -> Any:
    """x clipped to [-1, 1] (gradient 1 at ±1); integer inputs keep their dtype.

    >>> import numpy as np
    >>> hard_tanh(np.float32([-3.0, 0.25, 2.0]))
    Array([-1.  ,  0.25,  1.  ], dtype=float32)
    """
    return _hard_tanh(real("hard_tanh", x))


# --- exponential linear units ---------------------------------------------------------
@lc.jit
def _elu(x: Any, alpha: Any) -> Any:
    # expm1 of the negative part only: exp of a large positive x would overflow and
    # poison the gradient of the branch `where` does not take.
    return lnp.where(x > 0, x, alpha * lnp.expm1(lnp.where(x > 0, 0.0, x)))


def elu(x: Any, alpha: Any = 1.0) -> Any:
    """x for x > 0, alpha * (exp(x) - 1) otherwise (gradient alpha at 0).

    >>> import numpy as np
    >>> elu(np.float32([-1.0, 2.0]))
    Array([-0.63212055,  2.        ], dtype=float32)
    """
    return _elu(real("elu", x), alpha)


@lc.jit
def _celu(x: Any, alpha: Any) -> Any:
    return lnp.maximum(x, 0.0) + alpha * lnp.expm1(lnp.minimum(x, 0.0) / alpha)


def celu(x: Any, alpha: Any = 1.0) -> Any:
    """max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1): an ELU with a continuous
    derivative (1 at 0).

    >>> import numpy as np
    >>> celu(np.float32([-1.0, 2.0]), alpha=2.0)
    Array([-0.78693867,  2.        ], dtype=float32)
    """
    return _celu(real("celu", x), alpha)


@lc.jit
def _selu(x: Any) -> Any:
    return _SELU_SCALE * _elu(x, _SELU_ALPHA)


def selu(x: Any) -> Any:
    """scale * elu(x, alpha) with the self-normalising constants (scale ≈ 1.0507,
    alpha ≈ 1.6733).

    >>> import numpy as np
    >>> selu(np.float32([-1.0, 1.0]))
    Array([-1.1113307,  1.050701 ], dtype=float32)
    """
    return _selu(real("selu", x))


# --- sigmoids and smooth rectifiers ---------------------------------------------------
@lc.jit
def _sigmoid(x: Any) -> Any:
    return lax.logistic(x)


def sigmoid(x: Any) -> Any:
    """1 / (1 + exp(-x)), via `lax.logistic` (floating-point or complex input only).

    >>> import numpy as np
    >>> sigmoid(np.float32([0.0, 100.0]))
    Array([0.5, 1. ], dtype=float32)
    """
    return _sigmoid(inexact("sigmoid", x))


@lc.jit
def _silu(x: Any) -> Any:
    return x * lax.logistic(x)


def silu(x: Any) -> Any:
    """x * sigmoid(x) (also called swish; floating-point or complex input only).

    >>> import numpy as np
    >>> silu(np.float32([0.0, 1.0]))
    Array([0.       , 0.7310586], dtype=float32)
    """
    return _silu(inexact("silu", x))


swish = silu


@lc.jit
def _softplus(x: Any) -> Any:
    return lnp.logaddexp(x, 0)


def softplus(x: Any) -> Any:
    """log(1 + exp(x)), as logaddexp(x, 0): no overflow for large x.

    >>> import numpy as np
    >>> softplus(np.float32([0.0, 1000.0]))
    Array([6.931472e-01, 1.000000e+03], dtype=float32)
    """
    return _softplus(real("softplus", x))


@lc.jit
def _log_sigmoid(x: Any) -> Any:
    return -_softplus(-x)


def log_sigmoid(x: Any) -> Any:
    """log(sigmoid(x)) = -softplus(-x), finite for very negative x.

    >>> import numpy as np
    >>> log_sigmoid(np.float32([-1000.0, 0.0]))
    Array([-1.000000e+03, -6.931472e-01], dtype=float32)
    """
    return _log_sigmoid(real("log_sigmoid", x))


@lc.jit
def _mish(x: Any) -> Any:
    return x * lnp.tanh(_softplus(x))


def mish(x: Any) -> Any:
    """x * tanh(softplus(x)).

    >>> import numpy as np
    >>> mish(np.float32([1.0]))
    Array([0.8650985], dtype=float32)
    """
    return _mish(real("mish", x))


@lc.jit
def _soft_sign(x: Any) -> Any:
    return x / (lnp.abs(x) + 1)


def soft_sign(x: Any) -> Any:
    """x / (|x| + 1).

    >>> import numpy as np
    >>> soft_sign(np.float32([-3.0, 1.0]))
    Array([-0.75,  0.5 ], dtype=float32)
    """
    return _soft_sign(arraylike("soft_sign", x))


@lc.jit
def _squareplus(x: Any, b: Any) -> Any:
    if lnp.issubdtype(lnp.result_type(x, b), lnp.complexfloating):
        return (x + lnp.sqrt(lnp.square(x) + b)) / 2
    # Where x**2 overflows, JAX's (x + sqrt(x**2 + b)) / 2 is inf or NaN; there it is
    # computed around h = hypot(x, sqrt(b)) instead: x/2 + h/2 for x >= 0, and
    # (b/4) / (h/2 + |x|/2) for x < 0 (the same number without cancellation). Elsewhere
    # JAX's formula is kept, so results agree with JAX bit for bit wherever JAX is
    # finite. Each branch sees a harmless stand-in where it is not taken, so that its
    # gradient there is finite (a NaN times the zero cotangent would poison the sum).
    overflows = ~lnp.isfinite(lnp.square(x) + b) & ~lnp.isnan(x)
    small_x = lnp.where(overflows, lax.full_like(x, 0), x)
    as_jax = (small_x + lnp.sqrt(lnp.square(small_x) + b)) / 2
    big_x = lnp.where(overflows, x, lax.full_like(x, 1))
    b = lax.full_like(big_x, 0) + b  # b promoted with x, as in x**2 + b
    # hypot(x, sqrt(b)) scaled by the larger term, so neither value nor slope overflows;
    # the scale is a constant for differentiation (h does not depend on it).
    root_b = lnp.sqrt(b)
    larger = lax.stop_gradient(lnp.maximum(lnp.abs(big_x), root_b))
    scaled = larger * lnp.sqrt(lnp.square(big_x / larger) + lnp.square(root_b / larger))
    h = lnp.where(lnp.isinf(larger), larger, scaled)
    rescued = lnp.where(big_x >= 0, big_x / 2 + h / 2, (b / 4) / (h / 2 + lnp.abs(big_x) / 2))
    return lnp.where(overflows, rescued, as_jax)


def squareplus(x: Any, b: Any = 4) -> Any:
    """(x + sqrt(x**2 + b)) / 2: a smooth rectifier with an algebraic tail.

    Unlike JAX, it does not overflow for |x| > sqrt(finfo.max) (JAX returns inf
    there, e.g. squareplus(-1e30) in float32, where the value is 1e-30).

    >>> import numpy as np
    >>> squareplus(np.float32([0.0, -1e30, 1e30]))
    Array([1.e+00, 1.e-30, 1.e+30], dtype=float32)
    """
    return _squareplus(arraylike("squareplus", x), arraylike("squareplus", b))


@lc.jit
def _sparse_plus(x: Any) -> Any:
    return lnp.where(x <= -1.0, 0.0, lnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def sparse_plus(x: Any) -> Any:
    """0 for x <= -1, (x + 1)**2 / 4 on (-1, 1), x for x >= 1: softplus's sparse twin.

    >>> import numpy as np
    >>> sparse_plus(np.float32([-2.0, 0.0, 3.0]))
    Array([0.  , 0.25, 3.  ], dtype=float32)
    """
    return _sparse_plus(real("sparse_plus", x))


@lc.jit
def _sparse_sigmoid(x: Any) -> Any:
    return 0.5 * lnp.clip(x + 1.0, 0.0, 2.0)


def sparse_sigmoid(x: Any) -> Any:
    """(x + 1) / 2 clipped to [0, 1]: the derivative of sparse_plus (gradient 0.25 at ±1).

    >>> import numpy as np
    >>> sparse_sigmoid(np.float32([-2.0, 0.0, 0.5]))
    Array([0.  , 0.5 , 0.75], dtype=float32)
    """
    return _sparse_sigmoid(real("sparse_sigmoid", x, ValueError))


# --- gelu, glu, log1mexp, identity ----------------------------------------------------
# Not jitted, as in JAX: compiled, x + 0.044715 * x**3 would fuse into one rounding
# and the result would no longer be JAX's, bit for bit.
def _gelu(x: Any, approximate: bool) -> Any:
    if approximate:
        sqrt_2_over_pi = float_constant(np.sqrt(2 / np.pi), x.dtype)
        cdf = 0.5 * (1.0 + lnp.tanh(sqrt_2_over_pi * (x + 0.044715 * (x ** 3))))
        return x * cdf
    sqrt_half = float_constant(np.sqrt(0.5), x.dtype)
    return (0.5 * x * lax.erfc(-x * sqrt_half)).astype(x.dtype)


def gelu(x: Any, approximate: bool = True) -> Any:
    """Gaussian error linear unit: x * Φ(x), by default with the tanh approximation
    x/2 * (1 + tanh(sqrt(2/π) (x + 0.044715 x³))); `approximate=False` uses
    x/2 * erfc(-x/√2).

    >>> import numpy as np
    >>> gelu(np.float32([1.0])), gelu(np.float32([1.0]), approximate=False)
    (Array([0.841192], dtype=float32), Array([0.8413447], dtype=float32))
    """
    return _gelu(promote_inexact("gelu", x), bool(approximate))


@lc.jit(static_argnames=("axis",))
def _glu(x: Any, axis: int) -> Any:
    first, second = lnp.split(x, 2, axis)
    return first * lax.logistic(second)


def glu(x: Any, axis: int = -1) -> Any:
    """Gated linear unit: the first half of `x` along `axis` times the sigmoid of the
    second half (the axis must have even length; floating-point input only).

    >>> import numpy as np
    >>> glu(np.float32([2.0, 4.0, 0.0, 100.0]))
    Array([1., 4.], dtype=float32)
    """
    x = inexact("glu", x)
    if x.ndim == 0:
        raise ValueError("glu requires an array with at least one axis, got a scalar")
    size = x.shape[axis]
    if size % 2:
        raise ValueError(f"glu splits axis {axis} in two halves, but its length is {size} "
                         "(odd)")
    return _glu(x, axis)


def _log1mexp_impl(x: Any) -> Any:
    # Mächler's switch at log 2: -expm1(-x) is accurate for small x, 1 - exp(-x) for
    # large x (where log1p keeps the tiny difference from 1).
    c = lnp.log(2.0)
    return lnp.where(x < c, lnp.log(-lnp.expm1(-x)), lnp.log1p(-lnp.exp(-x)))


_log1mexp = lc.custom_jvp(lc.jit(_log1mexp_impl))
_log1mexp.defjvps(lambda g, ans, x: g / lnp.expm1(x))


def log1mexp(x: Any) -> Any:
    """log(1 - exp(-x)) for x >= 0, accurate for small and large x (NaN for x < 0).

    >>> import numpy as np
    >>> log1mexp(np.float32([1e-5, 1.0, 50.0]))
    Array([-1.1512931e+01, -4.5867515e-01, -1.9287499e-22], dtype=float32)
    """
    return _log1mexp(real("log1mexp", x))


@lc.jit
def _identity(x: Any) -> Any:
    return x


def identity(x: Any) -> Any:
    """The argument, unchanged (as an array).

    >>> identity(2.5)
    Array(2.5, dtype=float32, weak_type=True)
    """
    return _identity(arraylike("identity", x))
