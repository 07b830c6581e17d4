"""Optimizers as `(init_fun, update_fun, get_params)` triples over pytrees of
parameters, step-size schedules, and gradient clipping: `jax.example_libraries.optimizers`.

An optimizer is written for one array (`init(x0) -> state`, `update(i, g, state)
-> state`, `get_params(state) -> x`) and the `optimizer` decorator lifts it to
any pytree of arrays. The lifted state is an `OptimizerState`: the flattened
per-leaf states with the tree structures needed to rebuild them, itself a
pytree, so it passes through `jit` and can be stored with
`unpack_optimizer_state` / `pack_optimizer_state`.

>>> import lamella.core as lc
>>> import lamella.numpy as lnp
>>> opt_init, opt_update, get_params = adam(0.1)
>>> state = opt_init({"w": lnp.ones(2)})
>>> grads = lc.grad(lambda p: lnp.sum(p["w"] ** 2))(get_params(state))
>>> get_params(lc.jit(opt_update)(0, grads, state))["w"]
Array([0.90000063, 0.90000063], dtype=float32)
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import lamella.core as lc
import lamella.numpy as lnp

__all__ = ["Array", "InitFn", "JoinPoint", "Optimizer", "OptimizerState", "Params",
           "ParamsFn", "Schedule", "State", "Step", "UpdateFn", "Updates", "adagrad", "adam",
           "adamax", "clip_grads", "constant", "exponential_decay", "inverse_time_decay",
           "l2_norm", "make_schedule", "momentum", "nesterov", "optimizer",
           "pack_optimizer_state", "piecewise_constant", "polynomial_decay", "rmsprop",
           "rmsprop_momentum", "sgd", "sm3", "unpack_optimizer_state"]

Array = Any
Params = Any  # any pytree of arrays
State = Any  # the per-array state an optimizer keeps
Updates = Params  # gradients have the structure of the parameters


class OptimizerState(NamedTuple):
    """The state of an optimizer over a pytree of parameters.

    `packed_state` holds, for each parameter leaf, the flattened leaves of that
    leaf's state; `tree_def` is the parameters' structure and `subtree_defs`
    the structure of each leaf's state. Only `packed_state` holds arrays.
    """

    packed_state: Any
    tree_def: Any
    subtree_defs: Any


# Only packed_state holds arrays: the tree structures are static data, so the
# default namedtuple flattening (every field a child) is replaced, and the
# registry's warning about overriding a namedtuple is expected.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=".*subclass of `collections.namedtuple`")
    lc.tree_util.register_pytree_node(
        OptimizerState,
        lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
        lambda aux, children: OptimizerState(children[0], aux[0], aux[1]))

Step = int
InitFn = Callable[[Params], OptimizerState]
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]
Schedule = Callable[[Step], float]


class Optimizer(NamedTuple):
    """The `(init_fn, update_fn, params_fn)` triple every optimizer here returns."""

    init_fn: InitFn
    update_fn: UpdateFn
    params_fn: ParamsFn


def _flatten_each(trees: list) -> tuple[tuple, tuple]:
    """(leaves of each tree, structure of each tree), as two tuples."""
    pairs = [lc.tree_util.tree_flatten(t) for t in trees]
    return tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)


def optimizer(opt_maker: Callable[..., tuple[Callable, Callable, Callable]]
              ) -> Callable[..., Optimizer]:
    """Lifts an optimizer written for single arrays to pytrees of arrays.

    `opt_maker(*args)` returns `(init, update, get_params)` acting on one
    array and its state; the decorated maker returns an `Optimizer` whose
    functions act on any pytree of arrays, with an `OptimizerState` as state.

    >>> @optimizer
    ... def halve(step_size):
    ...     return (lambda x: x), (lambda i, g, x: x / 2), (lambda x: x)
    >>> init, update, get = halve(1.0)
    >>> get(update(0, [1.0, 1.0], init([4.0, 2.0])))
    [2.0, 1.0]
    """

    @functools.wraps(opt_maker)
    def tree_opt_maker(*args: Any, **kwargs: Any) -> Optimizer:
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def tree_init(x0_tree: Params) -> OptimizerState:
            x0_flat, tree = lc.tree_util.tree_flatten(x0_tree)
            states_flat, subtrees = _flatten_each([init(x0) for x0 in x0_flat])
            return OptimizerState(states_flat, tree, subtrees)

        @functools.wraps(update)
        def tree_update(i: Step, grad_tree: Updates, opt_state: OptimizerState
                        ) -> OptimizerState:
            states_flat, tree, subtrees = opt_state
            grad_flat, grad_tree_def = lc.tree_util.tree_flatten(grad_tree)
            if grad_tree_def != tree:
                raise TypeError(
                    "optimizer update function was passed a gradient tree that does not "
                    f"match the parameter tree it was initialized with: parameter tree {tree}, "
                    f"gradient tree {grad_tree_def}. Pass gradients of get_params(opt_state).")
            states = [lc.tree_util.tree_unflatten(d, s) for d, s in zip(subtrees, states_flat)]
            new_states = [update(i, g, s) for g, s in zip(grad_flat, states)]
            new_states_flat, new_subtrees = _flatten_each(new_states)
            for before, after in zip(subtrees, new_subtrees):
                if before != after:
                    raise TypeError(
                        "optimizer update function produced a state whose structure does "
                        f"not match its input state: input {before}, output {after}.")
            return OptimizerState(new_states_flat, tree, subtrees)

        @functools.wraps(get_params)
        def tree_get_params(opt_state: OptimizerState) -> Params:
            states_flat, tree, subtrees = opt_state
            states = [lc.tree_util.tree_unflatten(d, s) for d, s in zip(subtrees, states_flat)]
            return lc.tree_util.tree_unflatten(tree, [get_params(s) for s in states])

        return Optimizer(tree_init, tree_update, tree_get_params)

    return tree_opt_maker


# --- optimizers -------------------------------------------------------------------------

def _first(state: tuple) -> Array:
    return state[0]


@optimizer
def sgd(step_size: float | Schedule) -> Optimizer:
    """Stochastic gradient descent: `x <- x - step_size(i) * g`.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.

    >>> init, update, get = sgd(0.5)
    >>> get(update(0, 2.0, init(1.0)))
    0.0
    """
    step_size = make_schedule(step_size)

    def update(i, g, x):
        return x - step_size(i) * g

    return Optimizer(lambda x0: x0, update, lambda x: x)


@optimizer
def momentum(step_size: float | Schedule, mass: float) -> Optimizer:
    """SGD with (heavy-ball) momentum: `v <- mass * v + g; x <- x - step_size(i) * v`.

    >>> init, update, get = momentum(0.1, mass=0.9)
    >>> state = update(0, lnp.float32(1.0), init(lnp.float32(1.0)))
    >>> get(update(1, lnp.float32(1.0), state))
    Array(0.71, dtype=float32)
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, lnp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    return init, update, _first


@optimizer
def nesterov(step_size: float | Schedule, mass: float) -> Optimizer:
    """SGD with Nesterov momentum: `v <- mass * v + g; x <- x - step_size(i) * (mass * v + g)`.

    >>> init, update, get = nesterov(0.1, mass=0.9)
    >>> get(update(0, lnp.float32(1.0), init(lnp.float32(1.0))))
    Array(0.81, dtype=float32)
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, lnp.zeros_like(x0)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    return init, update, _first


@optimizer
def adagrad(step_size: float | Schedule, momentum: float = 0.9) -> Optimizer:
    """Adagrad (Duchi et al., 2011) with momentum on the scaled gradient.

    The running sum of squared gradients scales each gradient by its inverse
    square root (0 where the sum is still 0); the result is averaged with
    weight `momentum` before the step.

    >>> init, update, get = adagrad(1.0)
    >>> get(update(0, lnp.float32(2.0), init(lnp.float32(1.0))))
    Array(0.9, dtype=float32)
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, lnp.zeros_like(x0), lnp.zeros_like(x0)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + lnp.square(g)
        g_sq_inv_sqrt = lnp.where(g_sq > 0, 1. / lnp.sqrt(g_sq), 0.0)
        m = (1. - momentum) * (g * g_sq_inv_sqrt) + momentum * m
        return x - step_size(i) * m, g_sq, m

    return init, update, _first


@optimizer
def rmsprop(step_size: float | Schedule, gamma: float = 0.9, eps: float = 1e-8) -> Optimizer:
    """RMSProp: steps of `g / sqrt(avg + eps)`, `avg` a `gamma`-decayed mean of `g**2`.

    >>> init, update, get = rmsprop(0.1)
    >>> get(update(0, lnp.float32(1.0), init(lnp.float32(1.0))))
    Array(0.68377227, dtype=float32)
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, lnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad = state
        avg_sq_grad = avg_sq_grad * gamma + lnp.square(g) * (1. - gamma)
        return x - step_size(i) * g / lnp.sqrt(avg_sq_grad + eps), avg_sq_grad

    return init, update, _first


@optimizer
def rmsprop_momentum(step_size: float | Schedule, gamma: float = 0.9, eps: float = 1e-8,
                     momentum: float = 0.9) -> Optimizer:
    """RMSProp whose scaled steps accumulate in a `momentum`-decayed velocity.

    >>> init, update, get = rmsprop_momentum(0.1)
    >>> get(update(0, lnp.float32(1.0), init(lnp.float32(1.0))))
    Array(0.68377227, dtype=float32)
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, lnp.zeros_like(x0), lnp.zeros_like(x0)

    def update(i, g, state):
        x, avg_sq_grad, mom = state
        avg_sq_grad = avg_sq_grad * gamma + lnp.square(g) * (1. - gamma)
        mom = momentum * mom + step_size(i) * g / lnp.sqrt(avg_sq_grad + eps)
        return x - mom, avg_sq_grad, mom

    return init, update, _first


@optimizer
def adam(step_size: float | Schedule, b1: float = 0.9, b2: float = 0.999,
         eps: float = 1e-8) -> Optimizer:
    """Adam (Kingma and Ba, 2015): bias-corrected first and second moment estimates.

    Args:
      step_size: a positive scalar, or a schedule mapping the step index to one.
      b1: decay rate of the first moment estimate.
      b2: decay rate of the second moment estimate.
      eps: added to the root of the second moment, for numerical stability.

    >>> init, update, get = adam(0.1)
    >>> get(update(0, lnp.float32(3.0), init(lnp.float32(1.0))))
    Array(0.9000007, dtype=float32)
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, lnp.zeros_like(x0), lnp.zeros_like(x0)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * lnp.square(g) + b2 * v
        # The decay powers are taken in the state's dtype, as JAX does.
        mhat = m / (1 - lnp.asarray(b1, m.dtype) ** (i + 1))
        vhat = v / (1 - lnp.asarray(b2, m.dtype) ** (i + 1))
        return x - step_size(i) * mhat / (lnp.sqrt(vhat) + eps), m, v

    return init, update, _first


@optimizer
def adamax(step_size: float | Schedule, b1: float = 0.9, b2: float = 0.999,
           eps: float = 1e-8) -> Optimizer:
    """AdaMax: Adam with the second moment replaced by a decayed infinity norm.

    >>> init, update, get = adamax(0.1)
    >>> get(update(0, lnp.float32(3.0), init(lnp.float32(1.0))))
    Array(0.90000004, dtype=float32)
    """
    step_size = make_schedule(step_size)

    def init(x0):
        return x0, lnp.zeros_like(x0), lnp.zeros_like(x0)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = lnp.maximum(b2 * u, lnp.abs(g))
        x = x - (step_size(i) / (1 - lnp.asarray(b1, m.dtype) ** (i + 1))) * m / (u + eps)
        return x, m, u

    return init, update, _first


@optimizer
def sm3(step_size: float | Schedule, momentum: float = 0.9) -> Optimizer:
    """SM3 (Anil et al., 2019): Adagrad whose squared-gradient sums are kept per axis.

    For an array of shape (n1, ..., nk) the state holds one accumulator of
    length n_j per axis j instead of one per element; an element's sum is the
    minimum over its axes' accumulators. The state keeps the original shape,
    so 0-d parameters come back 0-d.

    >>> init, update, get = sm3(1.0)
    >>> get(update(0, lnp.ones((2, 2)), init(lnp.ones((2, 2)))))
    Array([[0.9, 0.9],
           [0.9, 0.9]], dtype=float32)
    """
    step_size = make_schedule(step_size)

    def init(x0):
        x_shape = lnp.shape(x0)
        x0 = lnp.atleast_1d(x0)
        accumulators = [lnp.zeros(n, dtype=x0.dtype) for n in x0.shape]
        return x0, lnp.zeros_like(x0), accumulators, x_shape

    def along(ndim: int, v: Array, axis: int) -> Array:
        """`v` shaped to broadcast along `axis` of an `ndim`-dimensional array."""
        return lnp.reshape(v, tuple(-1 if d == axis else 1 for d in range(ndim)))

    def update(i, g, state):
        x, m, accumulators, x_shape = state
        bounds = [along(x.ndim, v, axis) for axis, v in enumerate(accumulators)]
        accum = functools.reduce(lnp.minimum, bounds) + lnp.square(g)
        accum_inv_sqrt = lnp.where(accum > 0, 1. / lnp.sqrt(accum), 0)
        m = (1. - momentum) * (g * accum_inv_sqrt) + momentum * m
        x = x - step_size(i) * m
        accumulators = [lnp.max(accum, axis=tuple(d for d in range(x.ndim) if d != axis))
                        for axis in range(x.ndim)]
        return x, m, accumulators, x_shape

    def get_params(state):
        x, _, _, x_shape = state
        # x_shape's entries are state leaves (traced under jit), but only a 0-d
        # parameter was reshaped by init, and its shape () has no leaves.
        return lnp.reshape(x, ()) if len(x_shape) == 0 else x

    return init, update, get_params


# --- step-size schedules ----------------------------------------------------------------

def constant(step_size: float) -> Schedule:
    """The schedule that is `step_size` at every step.

    >>> constant(0.1)(100)
    0.1
    """
    def schedule(i):
        return step_size
    return schedule


def exponential_decay(step_size: float, decay_steps: float, decay_rate: float) -> Schedule:
    """`step_size * decay_rate ** (i / decay_steps)`.

    >>> exponential_decay(1.0, 10, 0.5)(20)
    0.25
    """
    def schedule(i):
        return step_size * decay_rate ** (i / decay_steps)
    return schedule


def inverse_time_decay(step_size: float, decay_steps: float, decay_rate: float,
                       staircase: bool = False) -> Schedule:
    """`step_size / (1 + decay_rate * i / decay_steps)`, with `i / decay_steps`
    rounded down when `staircase`.

    >>> inverse_time_decay(1.0, 10, 1.0)(10)
    0.5
    """
    if staircase:
        def schedule(i):
            return step_size / (1 + decay_rate * lnp.floor(i / decay_steps))
    else:
        def schedule(i):
            return step_size / (1 + decay_rate * i / decay_steps)
    return schedule


def polynomial_decay(step_size: float, decay_steps: float, final_step_size: float,
                     power: float = 1.0) -> Schedule:
    """From `step_size` to `final_step_size` along `(1 - i / decay_steps) ** power`,
    constant after `decay_steps`.

    >>> float(polynomial_decay(1.0, 10, 0.0)(5))
    0.5
    """
    def schedule(step_num):
        step_num = lnp.minimum(step_num, decay_steps)
        step_mult = (1 - step_num / decay_steps) ** power
        return step_mult * (step_size - final_step_size) + final_step_size
    return schedule


def piecewise_constant(boundaries: Any, values: Any) -> Schedule:
    """`values[k]` where `k` counts the boundaries that the step index is past
    (`i > boundary`: the switch happens at the step after each boundary).

    >>> schedule = piecewise_constant([10], [1.0, 0.1])
    >>> schedule(10), schedule(11)
    (Array(1., dtype=float32), Array(0.1, dtype=float32))
    """
    boundaries = lnp.array(boundaries)
    values = lnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise ValueError("piecewise_constant: boundaries and values must be sequences, got "
                         f"arrays of shapes {boundaries.shape} and {values.shape}")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise ValueError("piecewise_constant: boundaries must be one shorter than values, got "
                         f"{boundaries.shape[0]} boundaries and {values.shape[0]} values")

    def schedule(i):
        return values[lnp.sum(i > boundaries)]
    return schedule


def make_schedule(scalar_or_schedule: float | Schedule) -> Schedule:
    """A schedule unchanged, or a scalar as a `constant` schedule.

    >>> make_schedule(0.5)(3), make_schedule(lambda i: i / 2)(3)
    (0.5, 1.5)
    """
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if lnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise TypeError("a step size must be a scalar or a schedule (a function of the step "
                    f"index), got {type(scalar_or_schedule).__name__} of shape "
                    f"{lnp.shape(scalar_or_schedule)}")


# --- utilities --------------------------------------------------------------------------

def l2_norm(tree: Any) -> Array:
    """The l2 norm of all the arrays of a pytree taken together (for weight decay).

    >>> l2_norm({"a": lnp.float32([3.0]), "b": lnp.float32([4.0])})
    Array(5., dtype=float32)
    """
    leaves = lc.tree_util.tree_leaves(tree)
    return lnp.sqrt(sum(lnp.vdot(x, x) for x in leaves))


def clip_grads(grad_tree: Any, max_norm: float) -> Any:
    """`grad_tree` scaled down to l2 norm `max_norm` when its norm is larger.

    >>> clip_grads([lnp.float32([3.0, 4.0])], 1.0)
    [Array([0.6, 0.8], dtype=float32)]
    """
    norm = l2_norm(grad_tree)
    return lc.tree_util.tree_map(
        lambda g: lnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


# --- serialization ----------------------------------------------------------------------

class JoinPoint:
    """Marks where an inner pytree (one parameter's optimizer state) joins the
    outer pytree of parameters, so the two levels survive a round trip
    through a serializer that only knows plain pytrees."""

    def __init__(self, subtree: Any):
        self.subtree = subtree

    def __iter__(self):
        # Serializers treat pytrees as containers of arrays, so a JoinPoint
        # looks like a one-element container.
        yield self.subtree

    def __repr__(self) -> str:
        return f"JoinPoint({self.subtree!r})"


def unpack_optimizer_state(opt_state: OptimizerState) -> Any:
    """The parameter pytree with each leaf replaced by a `JoinPoint` holding
    that parameter's optimizer state (a form fit for serialization).

    >>> init, _, _ = momentum(0.1, 0.9)
    >>> unpack_optimizer_state(init({"w": lnp.float32(1.0)}))
    {'w': JoinPoint((Array(1., dtype=float32), Array(0., dtype=float32)))}
    """
    states_flat, tree_def, subtree_defs = opt_state
    subtrees = [lc.tree_util.tree_unflatten(d, s) for d, s in zip(subtree_defs, states_flat)]
    return lc.tree_util.tree_unflatten(tree_def, [JoinPoint(s) for s in subtrees])


def pack_optimizer_state(marked_pytree: Any) -> OptimizerState:
    """The inverse of `unpack_optimizer_state`.

    >>> init, _, _ = sgd(0.1)
    >>> pack_optimizer_state(unpack_optimizer_state(init([1.0]))).packed_state
    ([1.0],)
    """
    sentinels, tree_def = lc.tree_util.tree_flatten(marked_pytree)
    stray = [s for s in sentinels if not isinstance(s, JoinPoint)]
    if stray:
        raise TypeError("pack_optimizer_state expects a pytree whose leaves are all JoinPoints "
                        f"(as unpack_optimizer_state returns), got a leaf {stray[0]!r}")
    states_flat, subtree_defs = _flatten_each([s.subtree for s in sentinels])
    return OptimizerState(states_flat, tree_def, subtree_defs)
