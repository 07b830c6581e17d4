"""lamella demo: recover a damped oscillator's parameters by differentiating its model.

Uses lamella.core alone (no compiler): the model is written with five
NumPy-backed primitives defined below the way a user adds primitives (impl,
abstract eval, JVP or transpose rule, batching rule); then `grad`, `jit`,
`vmap` and `make_jaxpr` all apply to it.
"""

from __future__ import annotations

import time

import numpy as np

import lamella.core as lc
from lamella.core import ShapedArray, ad, batching
from lamella.core.structural import broadcast_in_dim, reduce_sum


def elementwise(name: str, numpy_fn) -> lc.Primitive:
    """A primitive applying `numpy_fn` to operands of one shape, with its batching rule."""
    prim = lc.Primitive(name)
    prim.def_impl(lambda *xs: np.asarray(numpy_fn(*xs)))
    prim.def_abstract_eval(lambda *avals: ShapedArray(avals[0].shape, avals[0].dtype))

    def batch(args, dims):
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        return prim.bind(*[batching.at_front(a, d, size) for a, d in zip(args, dims)]), 0
    batching.primitive_batchers[prim] = batch
    return prim


sin_p, cos_p, exp_p = (elementwise(n, f) for n, f in [("sin", np.sin), ("cos", np.cos),
                                                       ("exp", np.exp)])
neg_p, mul_p, add_p = (elementwise(n, f) for n, f in [("neg", np.negative),
                                                       ("mul", np.multiply), ("add", np.add)])
sin, cos, exp, neg, mul, add = (p.bind for p in (sin_p, cos_p, exp_p, neg_p, mul_p, add_p))

ad.defjvp(sin_p, lambda t, x: mul(t, cos(x)))
ad.defjvp(cos_p, lambda t, x: neg(mul(t, sin(x))))
ad.defjvp2(exp_p, lambda t, out, x: mul(t, out))
ad.defjvp(mul_p, lambda t, x, y: mul(t, y), lambda t, x, y: mul(x, t))
ad.deflinear(neg_p, lambda ct: [neg(ct)])
ad.deflinear(add_p, lambda ct: [ct, ct])
ad.primitive_transposes[mul_p] = lambda ct, x, y: (
    [mul(ct, y), None] if ad.is_undefined_primal(x) else [None, mul(x, ct)])


def model(params, t):
    """x(t) = exp(-damping * t) * cos(frequency * t)."""
    damping, frequency = (broadcast_in_dim(p, t.shape, ()) for p in params)
    return mul(exp(neg(mul(damping, t))), cos(mul(frequency, t)))


def loss(params, t, observed):
    residual = add(model(params, t), neg(observed))
    return reduce_sum(mul(residual, residual), (0,))


def main() -> None:
    t = np.linspace(0, 6, 200, dtype=np.float32)
    truth = np.array([0.35, 2.2], np.float32)
    observed = np.exp(-truth[0] * t) * np.cos(truth[1] * t)
    print(f"lamella.core {lc.__version__}: jit runs on core's NumPy interpreter\n")
    print("The loss as a jaxpr:")
    print(lc.make_jaxpr(loss)((np.float32(0), np.float32(0)), t, observed))

    # Pick a starting frequency by scanning the loss over a grid, vectorized by vmap.
    grid = np.linspace(1.0, 3.0, 9, dtype=np.float32)
    losses = lc.jit(lc.vmap(lambda f: loss((np.float32(0.1), f), t, observed)))(grid)
    params = (np.float32(0.1), grid[int(np.argmin(losses))])
    print("\nloss over a frequency grid:", np.round(losses, 2), "-> start at", params[1])

    step = lc.jit(lc.value_and_grad(loss))
    lr = np.float32(0.01)
    start = time.perf_counter()
    for i in range(201):
        value, (g_damping, g_frequency) = step(params, t, observed)
        params = (params[0] - lr * g_damping, params[1] - lr * g_frequency)
        if i % 50 == 0:
            print(f"step {i:3d}  loss {value:9.5f}  damping {params[0]:.4f}  "
                  f"frequency {params[1]:.4f}")
    per_step = (time.perf_counter() - start) / 201 * 1e6
    print(f"\nrecovered damping {params[0]:.3f} (true {truth[0]:.3f}), frequency "
          f"{params[1]:.3f} (true {truth[1]:.3f}); {per_step:.0f} us per jitted gradient step")
    hess = lc.hessian(loss)(params, t, observed)
    print("Hessian at the optimum (jacfwd of jacrev):\n", np.array(hess, dtype=np.float32))


if __name__ == "__main__":
    main()
