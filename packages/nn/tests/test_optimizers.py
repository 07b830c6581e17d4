"""lamella.nn.optimizers: each optimizer's first steps against its update rule
written in NumPy (float64), on a pytree of parameters, eager and under jit, on
hypothesis data incl. zero gradients; schedules against their formulas (traced
steps too); l2_norm and clip_grads; the state as a pytree, pack/unpack round
trips; the `optimizer` decorator on a user optimizer; and bad input."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
import lamella.numpy as lnp
from lamella.nn import optimizers as opt

FEW = settings(max_examples=25, deadline=None)
STEPS = 3


# --- the update rules in NumPy: (init, update) on one float64 array ---------------------

def np_sgd(lr):
    return (lambda x: x), (lambda i, g, x: x - lr * g)


def np_momentum(lr, mass):
    def update(i, g, s):
        x, v = s
        v = mass * v + g
        return x - lr * v, v
    return (lambda x: (x, 0 * x)), update


def np_nesterov(lr, mass):
    def update(i, g, s):
        x, v = s
        v = mass * v + g
        return x - lr * (mass * v + g), v
    return (lambda x: (x, 0 * x)), update


def np_adagrad(lr, mom=0.9):
    def update(i, g, s):
        x, acc, m = s
        acc = acc + g * g
        scale = np.divide(1.0, np.sqrt(acc), out=np.zeros_like(acc), where=acc > 0)
        m = (1 - mom) * g * scale + mom * m
        return x - lr * m, acc, m
    return (lambda x: (x, 0 * x, 0 * x)), update


def np_rmsprop(lr, gamma=0.9, eps=1e-8):
    def update(i, g, s):
        x, avg = s
        avg = gamma * avg + (1 - gamma) * g * g
        return x - lr * g / np.sqrt(avg + eps), avg
    return (lambda x: (x, 0 * x)), update


def np_rmsprop_momentum(lr, gamma=0.9, eps=1e-8, mom=0.9):
    def update(i, g, s):
        x, avg, v = s
        avg = gamma * avg + (1 - gamma) * g * g
        v = mom * v + lr * g / np.sqrt(avg + eps)
        return x - v, avg, v
    return (lambda x: (x, 0 * x, 0 * x)), update


def np_adam(lr, b1=0.9, b2=0.999, eps=1e-8):
    def update(i, g, s):
        x, m, v = s
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        mhat, vhat = m / (1 - b1 ** (i + 1)), v / (1 - b2 ** (i + 1))
        return x - lr * mhat / (np.sqrt(vhat) + eps), m, v
    return (lambda x: (x, 0 * x, 0 * x)), update


def np_adamax(lr, b1=0.9, b2=0.999, eps=1e-8):
    def update(i, g, s):
        x, m, u = s
        m = b1 * m + (1 - b1) * g
        u = np.maximum(b2 * u, np.abs(g))
        return x - lr / (1 - b1 ** (i + 1)) * m / (u + eps), m, u
    return (lambda x: (x, 0 * x, 0 * x)), update


def np_sm3(lr, mom=0.9):
    """SM3 on a 1-d or 2-d array: one accumulator per row and one per column."""
    def init(x):
        x = np.atleast_1d(x)
        return x, 0 * x, [np.zeros(n) for n in x.shape]

    def update(i, g, s):
        x, m, accs = s
        g = np.broadcast_to(g, x.shape)
        if x.ndim == 1:
            bound = accs[0]
        else:
            bound = np.minimum(accs[0][:, None], accs[1][None, :])
        acc = bound + g * g
        scale = np.divide(1.0, np.sqrt(acc), out=np.zeros_like(acc), where=acc > 0)
        m = (1 - mom) * g * scale + mom * m
        if x.ndim == 1:
            accs = [acc]
        else:
            accs = [acc.max(1), acc.max(0)]
        return x - lr * m, m, accs
    return init, update


CASES = {
    "sgd": (opt.sgd(0.1), np_sgd(0.1)),
    "momentum": (opt.momentum(0.1, 0.9), np_momentum(0.1, 0.9)),
    "nesterov": (opt.nesterov(0.1, 0.8), np_nesterov(0.1, 0.8)),
    "adagrad": (opt.adagrad(0.1), np_adagrad(0.1)),
    "rmsprop": (opt.rmsprop(0.01, gamma=0.8), np_rmsprop(0.01, gamma=0.8)),
    "rmsprop_momentum": (opt.rmsprop_momentum(0.01), np_rmsprop_momentum(0.01)),
    "adam": (opt.adam(0.01), np_adam(0.01)),
    "adamax": (opt.adamax(0.01, b2=0.99), np_adamax(0.01, b2=0.99)),
    "sm3": (opt.sm3(0.1), np_sm3(0.1)),
}
JITTED_UPDATE = {name: lc.jit(o.update_fn) for name, (o, _) in CASES.items()}


def params_and_grads(seed, zero_fraction):
    """A pytree of float32 parameters and STEPS gradient pytrees, some entries exactly 0."""
    rng = np.random.default_rng(seed)

    def tree(scale):
        w = (rng.standard_normal((2, 3)) * scale).astype(np.float32)
        b = (rng.standard_normal(3) * scale).astype(np.float32)
        w[rng.random(w.shape) < zero_fraction] = 0
        b[rng.random(b.shape) < zero_fraction] = 0
        return {"w": w, "b": b}

    return tree(1.0), [tree(rng.choice([1e-3, 1.0, 30.0])) for _ in range(STEPS)]


def numpy_trajectory(np_opt, params, grads):
    init, update = np_opt
    states = {k: init(v.astype(np.float64)) for k, v in params.items()}
    for i, g in enumerate(grads):
        states = {k: update(i, g[k].astype(np.float64), s) for k, s in states.items()}
    return {k: s[0] if isinstance(s, tuple) else s for k, s in states.items()}


@pytest.mark.parametrize("name", sorted(CASES))
@FEW
@given(seed=st.integers(0, 2**31), zero_fraction=st.sampled_from([0.0, 0.5, 1.0]))
def test_first_steps_follow_the_update_rule(name, seed, zero_fraction):
    optimizer, np_opt = CASES[name]
    params, grads = params_and_grads(seed, zero_fraction)
    state = optimizer.init_fn(params)
    for i, g in enumerate(grads):
        state = JITTED_UPDATE[name](i, g, state)
    got = optimizer.params_fn(state)
    want = numpy_trajectory(np_opt, params, grads)
    for k in params:
        assert np.asarray(got[k]).dtype == np.float32
        np.testing.assert_allclose(got[k], want[k], rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jit_matches_eager(name):
    optimizer, _ = CASES[name]
    params, grads = params_and_grads(1, 0.2)
    eager = jitted = optimizer.init_fn(params)
    for i, g in enumerate(grads):
        eager = optimizer.update_fn(i, g, eager)
        jitted = JITTED_UPDATE[name](i, g, jitted)
    for e, j in zip(lc.tree_util.tree_leaves(eager), lc.tree_util.tree_leaves(jitted)):
        np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(CASES))
def test_scalar_parameters_keep_their_shape(name):
    optimizer, np_opt = CASES[name]
    state = optimizer.init_fn(np.float32(2.0))
    state = optimizer.update_fn(0, np.float32(0.5), state)
    got = optimizer.params_fn(state)
    want = numpy_trajectory(np_opt, {"x": np.float32(2.0)}, [{"x": np.float32(0.5)}])["x"]
    assert np.shape(got) == ()
    np.testing.assert_allclose(got, np.reshape(want, ()), rtol=2e-6)


def test_adam_minimises_a_quadratic_in_a_jitted_loop():
    init, update, get_params = opt.adam(0.1)
    target = lnp.array([1.0, -2.0, 3.0])
    loss = lambda p: lnp.sum((p["x"] - target) ** 2)  # noqa: E731

    @lc.jit
    def step(i, state):
        return update(i, lc.grad(loss)(get_params(state)), state)

    state = init({"x": lnp.zeros(3)})
    for i in range(300):
        state = step(i, state)
    np.testing.assert_allclose(get_params(state)["x"], target, atol=1e-3)


def test_sm3_get_params_works_under_jit():
    # JAX's sm3 keeps the parameter shape as state leaves and fails here.
    init, update, get_params = opt.sm3(0.1)
    state = update(0, np.ones((2, 3), np.float32), init(np.ones((2, 3), np.float32)))
    out = lc.jit(get_params)(state)
    np.testing.assert_allclose(out, get_params(state))
    assert out.shape == (2, 3)


def test_step_size_schedule_gets_the_step_index():
    seen = []
    init, update, get_params = opt.sgd(lambda i: seen.append(i) or 0.5)
    x = update(7, 2.0, init(1.0))
    assert seen == [7] and get_params(x) == 0.0


# --- schedules --------------------------------------------------------------------------

SCHEDULES = [
    (opt.constant(0.3), lambda i: 0.3),
    (opt.exponential_decay(0.5, 10, 0.3), lambda i: 0.5 * 0.3 ** (i / 10)),
    (opt.inverse_time_decay(0.5, 10, 2.0), lambda i: 0.5 / (1 + 2.0 * i / 10)),
    (opt.inverse_time_decay(0.5, 10, 2.0, staircase=True),
     lambda i: 0.5 / (1 + 2.0 * np.floor(i / 10))),
    (opt.polynomial_decay(1.0, 20, 0.1, power=2.0),
     lambda i: (1 - min(i, 20) / 20) ** 2 * 0.9 + 0.1),
    (opt.piecewise_constant([5, 15], [1.0, 0.5, 0.1]),
     lambda i: 1.0 if i <= 5 else 0.5 if i <= 15 else 0.1),
]
TRACED_SCHEDULES = [lc.jit(s) for s, _ in SCHEDULES]


@pytest.mark.parametrize("k", range(len(SCHEDULES)))
@FEW
@given(i=st.one_of(st.integers(0, 40), st.sampled_from([0, 5, 6, 15, 16, 20, 21])))
def test_schedules_follow_their_formulas(k, i):
    schedule, formula = SCHEDULES[k]
    np.testing.assert_allclose(np.asarray(schedule(i), np.float64), formula(i), rtol=1e-6)
    np.testing.assert_allclose(TRACED_SCHEDULES[k](np.int32(i)), formula(i), rtol=1e-6)


def test_piecewise_constant_switches_after_the_boundary():
    schedule = opt.piecewise_constant([10, 20], [1.0, 0.1, 0.01])
    got = [float(schedule(i)) for i in (0, 10, 11, 20, 21)]
    np.testing.assert_allclose(got, [1.0, 1.0, 0.1, 0.1, 0.01], rtol=1e-7)


def test_make_schedule():
    assert opt.make_schedule(0.25)(9) == 0.25
    schedule = opt.exponential_decay(1.0, 1, 0.5)
    assert opt.make_schedule(schedule) is schedule
    assert float(opt.make_schedule(lnp.float32(0.5))(3)) == 0.5


# --- utilities --------------------------------------------------------------------------

@FEW
@given(seed=st.integers(0, 2**31), max_norm=st.sampled_from([0.1, 1.0, 3.0, 1e3]))
def test_l2_norm_and_clip_grads(seed, max_norm):
    params, _ = params_and_grads(seed, 0.0)
    flat = np.concatenate([v.ravel() for v in params.values()]).astype(np.float64)
    norm = np.linalg.norm(flat)
    np.testing.assert_allclose(opt.l2_norm(params), norm, rtol=1e-6)
    clipped = opt.clip_grads(params, max_norm)
    scale = 1.0 if norm < max_norm else max_norm / norm
    for k in params:
        np.testing.assert_allclose(clipped[k], params[k] * scale, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(opt.l2_norm(clipped), min(norm, max_norm), rtol=1e-5)


# --- the state: a pytree, serialisable --------------------------------------------------

def test_state_is_a_pytree_of_the_per_parameter_states():
    init, _, _ = opt.adam(0.1)
    state = init({"w": np.ones((2, 3), np.float32), "b": np.zeros(3, np.float32)})
    assert isinstance(state, opt.OptimizerState)
    leaves, treedef = lc.tree_util.tree_flatten(state)
    assert len(leaves) == 6  # (x, m, v) for each of two parameters
    rebuilt = lc.tree_util.tree_unflatten(treedef, leaves)
    assert rebuilt.tree_def == state.tree_def and rebuilt.subtree_defs == state.subtree_defs


@pytest.mark.parametrize("name", ["momentum", "adam", "sm3"])
def test_pack_unpack_round_trip(name):
    optimizer, _ = CASES[name]
    params, grads = params_and_grads(3, 0.0)
    state = optimizer.update_fn(0, grads[0], optimizer.init_fn(params))
    marked = opt.unpack_optimizer_state(state)
    assert set(marked) == {"w", "b"}
    assert all(isinstance(v, opt.JoinPoint) for v in marked.values())
    assert list(marked["w"]) == [marked["w"].subtree]
    packed = opt.pack_optimizer_state(marked)
    assert packed.tree_def == state.tree_def and packed.subtree_defs == state.subtree_defs
    for a, b in zip(lc.tree_util.tree_leaves(packed), lc.tree_util.tree_leaves(state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # Training goes on from the restored state exactly as from the original.
    resumed = optimizer.update_fn(1, grads[1], packed)
    original = optimizer.update_fn(1, grads[1], state)
    for k in params:
        np.testing.assert_array_equal(optimizer.params_fn(resumed)[k],
                                      optimizer.params_fn(original)[k])


def test_user_optimizer_through_the_decorator():
    @opt.optimizer
    def sign_sgd(step_size):
        def update(i, g, state):
            x, count = state
            return x - step_size * lnp.sign(g), count + 1
        return (lambda x: (x, 0)), update, (lambda state: state[0])

    init, update, get_params = sign_sgd(0.5)
    assert sign_sgd.__name__ == "sign_sgd"
    state = update(0, [np.float32([-3.0, 2.0]), np.float32(0.0)],
                   init([np.float32([1.0, 1.0]), np.float32(4.0)]))
    x, y = get_params(state)
    np.testing.assert_array_equal(x, [1.5, 0.5])
    assert float(y) == 4.0
    assert [int(c) for c in lc.tree_util.tree_leaves(state)[1::2]] == [1, 1]


# --- bad input --------------------------------------------------------------------------

def test_gradient_tree_must_match_the_parameters():
    init, update, _ = opt.sgd(0.1)
    state = init({"w": np.ones(2, np.float32)})
    with pytest.raises(TypeError, match="gradient tree"):
        update(0, {"v": np.ones(2, np.float32)}, state)


def test_update_must_keep_the_state_structure():
    @opt.optimizer
    def broken(step_size):
        return (lambda x: (x, x)), (lambda i, g, s: (s[0], s[1], g)), (lambda s: s[0])

    init, update, _ = broken(0.1)
    with pytest.raises(TypeError, match="structure"):
        update(0, [1.0], init([1.0]))


def test_bad_schedules_and_packs():
    with pytest.raises(TypeError, match="scalar or a schedule"):
        opt.sgd(np.ones(3))
    with pytest.raises(ValueError, match="one shorter"):
        opt.piecewise_constant([1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="sequences"):
        opt.piecewise_constant(1, [1.0, 2.0])
    with pytest.raises(TypeError, match="JoinPoint"):
        opt.pack_optimizer_state({"w": np.ones(2)})


def test_names_match_jax_example_libraries_optimizers():
    names = {"Array", "InitFn", "JoinPoint", "Optimizer", "OptimizerState", "Params",
             "ParamsFn", "Schedule", "State", "Step", "UpdateFn", "Updates", "adagrad",
             "adam", "adamax", "clip_grads", "constant", "exponential_decay",
             "inverse_time_decay", "l2_norm", "make_schedule", "momentum", "nesterov",
             "optimizer", "pack_optimizer_state", "piecewise_constant", "polynomial_decay",
             "rmsprop", "rmsprop_momentum", "sgd", "sm3", "unpack_optimizer_state"}
    assert names <= set(dir(opt))
    assert opt.Optimizer._fields == ("init_fn", "update_fn", "params_fn")
    assert opt.OptimizerState._fields == ("packed_state", "tree_def", "subtree_defs")
