"""The eager fast path (each lamella.numpy function run as one cached jit through
jaxlib's C++ dispatcher) gives exactly what the op-by-op path gives: the same
values bit for bit, dtypes and weak types, and the same errors with the same
messages. The op-by-op reference is the same call under `disable_jit`, which
sends the dispatcher back to the Python function.

No timing here: benchmarks/bench_eager.py measures the speed.
"""

import threading

import numpy as np
import pytest

import lamella.core as lc
import lamella.numpy as lnp
import lamella.random as lr
from lamella.core import config

X = lnp.asarray(np.float32([-2.5, -1.0, 0.0, 0.5, 3.0]))
I = lnp.asarray(np.int32([-7, -3, 0, 2, 9]))
B = lnp.asarray(np.array([True, False, True, True, False]))
H = lnp.asarray(np.float16([0.5, -1.5, 2.0, 0.0, 4.0]))
WEAK = lnp.sin(1.0)  # a weakly typed float32 Array
M = lnp.asarray(np.arange(15, dtype=np.float32).reshape(3, 5) / 7)

OPERAND_PAIRS = [
    (X, 3), (X, 2.5), (I, 3), (I, -4), (I, 2.5), (X, I), (B, True), (H, 2), (H, X),
    (I, np.float32(2)), (X, np.arange(5.0)), (I, np.int16(3)), (WEAK, I), (WEAK, 2),
    (3, X), (I, 1j), (X, M), (B, I),
]
BINARY = ["add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "power",
          "maximum", "minimum", "equal", "greater", "less_equal", "logical_and",
          "bitwise_and", "arctan2", "hypot", "logaddexp", "copysign", "fmod", "left_shift"]
UNARY = ["sin", "exp", "negative", "absolute", "sqrt", "sign", "floor", "isnan", "square",
         "reciprocal", "logical_not", "bitwise_not", "round", "nan_to_num", "sinc", "expm1"]
UNARY_OPERANDS = [X, I, B, H, WEAK, 2, 2.5, True, np.float32([1.5, -2]), np.arange(3)]


def outcome(fn, *args, **kwargs):
    """(values, dtypes, weak types) of fn's result, or (error type, message)."""
    try:
        out = fn(*args, **kwargs)
    except Exception as err:  # noqa: BLE001 (the error is the outcome compared)
        return ("raised", type(err), str(err))
    leaves = out if isinstance(out, tuple) else (out,)
    return tuple((np.asarray(a).tobytes(), np.asarray(a).dtype, np.shape(a),
                  getattr(a, "weak_type", None)) for a in leaves)


def assert_same_as_op_by_op(fn, *args, **kwargs):
    with lc.disable_jit():
        want = outcome(fn, *args, **kwargs)
    # The first call misses jaxlib's cache and runs in Python; the second is served in C++.
    assert outcome(fn, *args, **kwargs) == want
    assert outcome(fn, *args, **kwargs) == want


@pytest.mark.parametrize("name", BINARY)
def test_binary_functions_match_op_by_op(name):
    fn = getattr(lnp, name)
    for a, b in OPERAND_PAIRS:
        assert_same_as_op_by_op(fn, a, b)


@pytest.mark.parametrize("name", UNARY)
def test_unary_functions_match_op_by_op(name):
    fn = getattr(lnp, name)
    for a in UNARY_OPERANDS:
        assert_same_as_op_by_op(fn, a)


OPERATORS = [
    lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a - b, lambda a, b: a / b,
    lambda a, b: a % b, lambda a, b: a // b, lambda a, b: a ** b, lambda a, b: a > b,
    lambda a, b: a == b, lambda a, b: a & b, lambda a, b: b - a,
]


@pytest.mark.parametrize("op", range(len(OPERATORS)))
def test_operators_with_scalars_match_op_by_op(op):
    for a, b in [(X, 2), (X, 0.5), (I, 3), (I, -2), (I, 0), (B, True), (WEAK, 3), (H, 1.5)]:
        assert_same_as_op_by_op(OPERATORS[op], a, b)


def test_bool_division_by_false_gives_jaxs_bits():
    # One compiled program, as in JAX (whose jnp functions are jitted): XLA folds
    # 0/0 of converted bools to +0.0 there, where op by op it is NaN.
    out = np.asarray(B / False)
    assert out.tobytes() == np.float32([np.inf, 0, np.inf, np.inf, 0]).tobytes()


def test_where_clip_and_comparisons_match_op_by_op():
    for args in [(X > 0, X, 0), (X > 0, X, 0.5), (B, I, 7), (I, X, WEAK), (True, 1, 2.5),
                 (B, H, X)]:
        assert_same_as_op_by_op(lnp.where, *args)
    for args, kwargs in [((X, -1, 1), {}), ((I, 0), {}), ((X,), {"max": 0.5}),
                         ((I,), {"min": -1, "max": 2.5}), ((H, None, 1), {})]:
        assert_same_as_op_by_op(lnp.clip, *args, **kwargs)
    assert_same_as_op_by_op(lnp.isclose, X, X + 1e-7)
    assert_same_as_op_by_op(lnp.isclose, X, 0.5, 1e-3, 0.0, True)


def test_round_gives_jaxs_bits():
    # One compiled program, as in JAX: XLA turns the division by the constant 10**d
    # into a multiplication there, so the last bit can differ from op-by-op division.
    want = {1: [3227097498, 3216192307, 0, 1060320051, 1082340147],
            2: [3227181383, 3215940649, 0, 1059984507, 1082361119]}  # JAX 0.10.2
    for decimals, bits in want.items():
        for out in (lnp.round(X * 1.37, decimals), lnp.round(X * 1.37, decimals=decimals)):
            assert np.asarray(out).view(np.uint32).tolist() == bits


def test_matmul_and_reductions_match_op_by_op():
    v = lnp.asarray(np.float32([1.0, -2.0, 0.5, 3.0, 0.25]))
    for a, b in [(M, v), (v, v), (M, M.T), (M.T, M), (I, I), (M, I)]:
        assert_same_as_op_by_op(lnp.matmul, a, b)
        assert_same_as_op_by_op(lambda a, b: a @ b, a, b)
    assert_same_as_op_by_op(lnp.matmul, M, v, precision="highest")
    assert_same_as_op_by_op(lnp.matmul, I, I, preferred_element_type=np.float32)
    for kwargs in [{}, {"axis": 0}, {"axis": 1, "keepdims": True}, {"axis": (0, 1)},
                   {"dtype": np.float16}, {"where": M > 0.5}, {"initial": 2.0}]:
        assert_same_as_op_by_op(lnp.sum, M, **kwargs)
        assert_same_as_op_by_op(lambda m, kw=kwargs: m.sum(**kw), M)
    for fn in [lnp.max, lnp.argmin, lnp.cumsum]:
        assert_same_as_op_by_op(fn, M, axis=1)
    # mean and var divide by a count, a constant XLA folds into a multiplication in
    # one program: they have always run as one jit eagerly (as in JAX), so compare
    # them with jit.
    for fn in [lnp.mean, lnp.var]:
        want = outcome(lc.jit(lambda m, fn=fn: fn(m, axis=1)), M)
        assert outcome(fn, M, axis=1) == want
        assert outcome(fn, M, axis=1) == want


def test_errors_keep_their_types_and_messages():
    cases = [
        (lnp.add, X, M[:, :2]),                          # shapes that do not broadcast
        (lnp.subtract, B, B),                            # no subtraction of bools
        (lnp.bitwise_and, X, 1),                         # bitwise ops need integers
        (lnp.add, I, 2**40),                             # Python int beyond int32
        (lnp.matmul, M, M),                              # contracted sizes differ
        (lnp.matmul, X, 2.0),                            # a scalar operand
        (lnp.add, X, "1"),                               # not array-like
        (lnp.add, X, [1, 2, 3, 4, 5]),                   # a list (JAX refuses it)
        (lnp.sum, M, 2),                                 # axis out of range
        (lnp.power, I, -1),                              # negative integer power of ints
        (lnp.round, X, 1.5),                             # decimals must be an integer
    ]
    for fn, *args in cases:
        with lc.disable_jit():
            want = outcome(fn, *args)
        assert want[0] == "raised", (fn, args)
        assert outcome(fn, *args) == want
        assert outcome(fn, *args) == want
    # 64-bit NumPy integers narrow as the op-by-op path narrows them (x64 off).
    assert_same_as_op_by_op(lnp.add, np.int64(2)**40 + 3, X)
    assert_same_as_op_by_op(lnp.add, np.arange(3, dtype=np.int64) + 2**33, 1)


def test_traced_calls_stay_inline():
    # Under a transformation nothing is wrapped in a jit: the jaxpr is flat.
    jaxpr = lc.make_jaxpr(lambda x: lnp.where(x > 0, x * 2, x % 3) @ x)(X)
    names = {eqn.primitive.name for eqn in jaxpr.jaxpr.eqns}
    assert not names & {"pjit", "jit", "closed_call"}, names
    assert lc.grad(lambda x: lnp.sum(lnp.sin(x) * 2))(X).dtype == np.float32
    np.testing.assert_array_equal(lc.vmap(lambda a: a * 2 + 1)(X), np.asarray(X) * 2 + 1)


def test_flag_changes_are_seen_by_cached_calls():
    a, b = lnp.ones((2, 3)), lnp.ones(3)
    assert (a + b).shape == (2, 3)  # cached in C++ now
    config.update("numpy_rank_promotion", "raise")
    try:
        with pytest.raises(ValueError, match="rank promotion"):
            a + b
    finally:
        config.update("numpy_rank_promotion", "allow")
    assert (a + b).shape == (2, 3)
    with config.override("numpy_rank_promotion", "raise"):
        with pytest.raises(ValueError, match="rank promotion"):
            a + b
    errors = []

    def other_thread():  # another thread's override never reaches this thread's calls
        with config.override("numpy_rank_promotion", "raise"):
            try:
                a + b
            except ValueError as err:
                errors.append(err)
    thread = threading.Thread(target=other_thread)
    thread.start()
    thread.join()
    assert len(errors) == 1 and (a + b).shape == (2, 3)


def test_x64_results_follow_the_flag():
    with lc.enable_x64():
        out = lnp.asarray(np.float64([1.5])) * 2
        assert out.dtype == np.float64 and not out.weak_type
        assert (lnp.asarray([1, 2]) % 3).dtype == np.int64
    out = X * 2
    assert out.dtype == np.float32


@pytest.mark.parametrize("name", ["normal", "uniform", "bernoulli", "gumbel", "exponential"])
def test_samplers_match_op_by_op(name):
    fn = getattr(lr, name)
    for key in [lr.key(3), lr.PRNGKey(5)]:
        assert_same_as_op_by_op(fn, key, (4,))
        assert_same_as_op_by_op(fn, key, shape=(2, 3))


def test_keys_and_integers_match_op_by_op():
    for key in [lr.key(3), lr.PRNGKey(5)]:
        assert_same_as_op_by_op(lambda k: lr.key_data(lr.split(k)), key)
        assert_same_as_op_by_op(lambda k: lr.key_data(lr.split(k, 3)), key)
        assert_same_as_op_by_op(lambda k: lr.key_data(lr.fold_in(k, 7)), key)
        assert_same_as_op_by_op(lr.randint, key, (4,), 0, 10)
        assert_same_as_op_by_op(lr.normal, key, (3,), np.float16)
    # With bounds, one program (as JAX runs it) fuses the scaling into a multiply-add:
    # the bits are JAX's, where op by op the last bit could differ.
    for key, bits in [(lr.key(3), [3209109676, 1072185175, 1064461860]),
                      (lr.PRNGKey(5), [1053580296, 1071750730, 1067093269])]:  # JAX 0.10.2
        for _ in range(2):
            out = lr.uniform(key, (3,), np.float32, -1.0, 2.0)
            assert np.asarray(out).view(np.uint32).tolist() == bits
    assert_same_as_op_by_op(lr.normal, lr.key(0), (-1,))  # a bad shape's error
    assert_same_as_op_by_op(lr.uniform, lr.key(0), (2,), np.int32)  # a bad dtype's error


def test_concatenate_and_stack_match_op_by_op():
    v = lnp.asarray(np.float32([1.0, -2.0, 0.5, 3.0, 0.25]))
    for fn in [lnp.concatenate, lnp.stack, lnp.hstack, lnp.vstack]:
        assert_same_as_op_by_op(fn, [X, v])
        assert_same_as_op_by_op(fn, (X, I))
        assert_same_as_op_by_op(fn, [X, v], dtype=np.float16)
        assert_same_as_op_by_op(fn, [X, M])  # shapes that do not fit
    assert_same_as_op_by_op(lnp.concatenate, [M, M], axis=1)
    assert_same_as_op_by_op(lnp.concatenate, [M, M], None)
    assert_same_as_op_by_op(lnp.stack, [M, M], axis=-1)
    assert_same_as_op_by_op(lnp.concatenate, [X])
    assert_same_as_op_by_op(lnp.add, (X, X), 1)  # a tuple where an array is expected


def test_index_updates_match_op_by_op():
    idx = lnp.asarray(np.int32([0, 2, 2, -1]))
    indices = [0, -1, 7, slice(1, 4), slice(None, None, 2), idx, (1, 2), (slice(None), 3),
               (Ellipsis, idx), (None, 1), (idx, slice(0, 2)), X > 0]
    for index in indices:
        for op, values in [("set", 1.5), ("add", 1), ("multiply", X), ("min", WEAK),
                           ("set", np.float32(2)), ("max", 0)]:
            for arr in (X, M, I):
                assert_same_as_op_by_op(lambda a, v, i=index, o=op: getattr(a.at[i], o)(v),
                                        arr, values)
    assert_same_as_op_by_op(lambda a: a.at[idx].add(1.0, mode="clip"), X)
    assert_same_as_op_by_op(lambda a: a.at[idx].set(2, indices_are_sorted=True), X)
    assert_same_as_op_by_op(lambda a: a.at[9].set(2, mode="drop"), X)
    assert_same_as_op_by_op(lambda a: a.at[0].set(M), X)  # values of the wrong shape
    assert_same_as_op_by_op(lambda a: a.at[0.5].set(1), X)  # a float index
