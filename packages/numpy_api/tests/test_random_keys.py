"""lamella.random keys: typed and raw keys, split/fold_in/bits, pytree behaviour, errors."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.random as random
from lamella import lax

# Random123's known answers for Threefry-2x32 with 20 rounds: (key, counter, output).
KAT = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6b200159, 0x99ba4efe)),
    ((0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff), (0x1cb996fc, 0xbb002be7)),
    ((0x13198a2e, 0x03707344), (0x243f6a88, 0x85a308d3), (0xc4923a9c, 0x483df7a0)),
]


def words(k):
    return np.asarray(random.key_data(k))


@pytest.mark.parametrize("key_words,counter,expected", KAT)
def test_threefry_known_answers(key_words, counter, expected):
    out = lax.threefry2x32(*(np.uint32(w) for w in (*key_words, *counter)))
    assert [int(w) for w in out] == list(expected)
    if counter[0] == 0 and counter[1] == 0:
        # A one-way split hashes the counter (0, 0) under the key.
        k = random.wrap_key_data(np.array(key_words, np.uint32))
        assert words(random.split(k, 1)[0]).tolist() == list(expected)
    # fold_in(key, d) hashes the counter (0, d).
    k = random.wrap_key_data(np.array(key_words, np.uint32))
    folded = lax.threefry2x32(np.uint32(key_words[0]), np.uint32(key_words[1]), np.uint32(0),
                              np.uint32(counter[1]))
    assert words(random.fold_in(k, counter[1])).tolist() == [int(w) for w in folded]


def test_typed_key_basics():
    k = random.key(42)
    assert k.shape == () and k.ndim == 0 and k.size == 1
    assert str(k.dtype) == "key<fry>" and k.dtype == "key<fry>"
    assert repr(k) == "Array((), dtype=key<fry>) overlaying:\n[ 0 42]"
    assert words(k).tolist() == [0, 42]
    assert random.key_data(k).dtype == np.uint32
    assert str(random.key_impl(k)) == "PRNGImpl('threefry2x32')"
    assert random.key_impl(random.PRNGKey(0)).name == "threefry2x32"
    assert random.key_dtype() == k.dtype and str(random.key_dtype("threefry2x32")) == "key<fry>"
    assert random.key_dtype(random.key_dtype()) is k.dtype
    with pytest.raises(ValueError, match="threefry2x32"):
        random.key_dtype("rbg")
    raw = np.array([[1, 2], [3, 4]], np.uint32)
    wrapped = random.wrap_key_data(raw)
    assert wrapped.shape == (2,) and np.array_equal(words(wrapped), raw)
    assert random.clone(k) is k
    assert np.array_equal(words(random.key(7, impl="threefry2x32")), [0, 7])


@pytest.mark.parametrize("seed,x64,expected", [
    (0, False, [0, 0]), (42, False, [0, 42]), (-1, False, [0, 2 ** 32 - 1]),
    (2 ** 31 + 5, False, [0, 2 ** 31 + 5]), (2 ** 40 + 5, False, [0, 5]),
    (-1, True, [2 ** 32 - 1, 2 ** 32 - 1]), (2 ** 40 + 5, True, [256, 5]),
    (np.uint32(4_000_000_000), False, [0, 4_000_000_000]),
])
def test_seeds(seed, x64, expected):
    with lc.enable_x64(x64):
        assert np.asarray(random.PRNGKey(seed)).tolist() == expected
        assert words(random.key(seed)).tolist() == expected


def test_seed_errors():
    with pytest.raises(OverflowError, match="64-bit"):
        random.PRNGKey(2 ** 64 + 1)
    with pytest.raises(TypeError, match="integer"):
        random.key(1.5)
    with pytest.raises(ValueError, match="threefry2x32"):
        random.key(0, impl="rbg")


def test_split_shapes_and_forms():
    raw, typed = random.PRNGKey(3), random.key(3)
    assert random.split(raw).shape == (2, 2)
    assert random.split(raw, 5).shape == (5, 2)
    assert random.split(raw, (2, 3)).shape == (2, 3, 2)
    assert random.split(typed, (2, 3)).shape == (2, 3)
    assert isinstance(random.split(typed), random.PRNGKeyArray)
    assert np.array_equal(np.asarray(random.split(raw, (2, 3))),
                          words(random.split(typed, (2, 3))))
    # A split into (2, 3) is the 6-way split reshaped (positions hash their counters).
    assert np.array_equal(np.asarray(random.split(raw, (2, 3))).reshape(6, 2),
                          np.asarray(random.split(raw, 6)))
    assert np.array_equal(np.asarray(random.fold_in(raw, 5)), words(random.fold_in(typed, 5)))
    assert np.array_equal(np.asarray(random.bits(raw, (4,))), np.asarray(random.bits(typed, (4,))))


def test_key_array_indexing_and_reshape():
    keys = random.split(random.key(0), 6)
    data = words(keys)
    assert np.array_equal(words(keys[2]), data[2])
    assert np.array_equal(words(keys[-1]), data[-1])
    assert np.array_equal(words(keys[1:5:2]), data[1:5:2])
    grid = keys.reshape(2, 3)
    assert grid.shape == (2, 3) and np.array_equal(words(grid[1, ...]), data[3:])
    assert np.array_equal(words(grid[:, 1]), data[[1, 4]])
    assert grid.reshape(-1).shape == (6,) and keys.ravel().shape == (6,)
    assert [words(k).tolist() for k in keys] == data.tolist()
    assert len(keys) == 6
    with pytest.raises(IndexError, match="out of bounds"):
        keys[6]
    with pytest.raises(ValueError, match="reshape"):
        keys.reshape(4)
    with pytest.raises(TypeError, match="len"):
        len(random.key(0))


def test_typed_keys_through_jit_and_vmap():
    k = random.key(1)
    out = lc.jit(lambda k: random.split(k, 3))(k)
    assert isinstance(out, random.PRNGKeyArray) and out.shape == (3,)
    assert np.array_equal(words(out), words(random.split(k, 3)))
    keys = random.split(k, 4)
    batched = lc.vmap(lambda k: random.normal(k, (3,)))(keys)
    loop = np.stack([np.asarray(random.normal(kk, (3,))) for kk in keys])
    assert np.array_equal(np.asarray(batched), loop)
    folded = lc.vmap(lambda k: random.fold_in(k, 7))(keys)
    assert isinstance(folded, random.PRNGKeyArray) and folded.shape == (4,)
    assert np.array_equal(words(folded), np.stack([words(random.fold_in(kk, 7)) for kk in keys]))
    # A traced fold_in datum equals the concrete one.
    traced = lc.jit(lambda k, d: random.fold_in(k, d))(k, np.uint32(9))
    assert np.array_equal(words(traced), words(random.fold_in(k, 9)))
    # Raw keys batch as arrays.
    raw = random.key_data(keys)
    assert np.array_equal(np.asarray(lc.vmap(lambda k: random.normal(k, (3,)))(raw)), loop)
    seen = []
    lc.jit(lambda k: seen.append(repr(k)) or k)(k)
    assert seen == ["JitTracer(key<fry>[])"]
    lc.vmap(lambda k: seen.append(repr(k)) or k)(random.split(k))
    assert seen[1] == "VmapTracer(aval=key<fry>[], batched=key<fry>[2])"


def test_keys_are_distinct_across_split_and_fold_in_trees():
    root = random.PRNGKey(0)
    split64 = lc.jit(lc.vmap(lambda k: random.split(k, 64)))
    level1 = np.asarray(random.split(root, 64))
    level2 = np.asarray(split64(level1)).reshape(-1, 2)
    level3 = np.asarray(split64(level2)).reshape(-1, 2)
    fold = lc.jit(lc.vmap(lambda k: lc.vmap(lambda d: random.fold_in(k, d))(
        np.arange(64, 128, dtype=np.uint32))))
    folded = np.asarray(fold(level2)).reshape(-1, 2)
    tree = np.concatenate([np.asarray(root)[None], level1, level2, level3, folded])
    as_u64 = tree[:, 0].astype(np.uint64) << np.uint64(32) | tree[:, 1].astype(np.uint64)
    assert np.unique(as_u64).size == len(tree) == 1 + 64 + 64 ** 2 + 2 * 64 ** 3
    # fold_in(k, i) is the i-th key of a large split (both hash the counter (0, i)), as in JAX.
    folds = lc.vmap(lambda d: random.fold_in(root, d))(np.arange(64, dtype=np.uint32))
    assert np.array_equal(np.asarray(folds), level1)


@pytest.mark.parametrize("dtype,bound", [(np.uint8, 2 ** 8), (np.uint16, 2 ** 16),
                                         (np.uint32, 2 ** 32)])
def test_bits_dtypes(dtype, bound):
    b = np.asarray(random.bits(random.key(5), (4000,), dtype))
    assert b.dtype == dtype and b.shape == (4000,)
    # Roughly uniform: each half of the range holds about half of the draws.
    assert 0.45 < np.mean(b < bound // 2) < 0.55
    assert np.asarray(random.bits(random.key(5))).shape == ()


def test_bits_uint64_without_x64_warns_and_gives_uint32_as_jax():
    with pytest.warns(UserWarning, match="uint64 requested in bits"):
        wide = random.bits(random.key(0), (2,), np.uint64)
    assert wide.dtype == np.uint32
    # JAX 0.10.2's numbers: the bits of uint32, and of uint64 with x64.
    assert wide.tolist() == [4070199207, 4202968722]
    with pytest.raises(ValueError, match="must be an unsigned int dtype, got int32"):
        random.bits(random.key(0), (2,), np.int32)
    with lc.enable_x64():
        assert random.bits(random.key(0), (2,), np.uint64).tolist() == [7719171245655871230,
                                                                        3989946895414531357]
        assert random.bits(random.key(0), (2,), np.uint64).dtype == np.uint64


def test_key_errors():
    with pytest.raises(TypeError, match=r"typed key .* raw uint32\[2\] key.*float32\[3\]"):
        random.normal(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match=r"uint32\[3\]"):
        random.uniform(np.zeros(3, np.uint32))
    with pytest.raises(TypeError, match="PRNG key"):
        random.split(5)
    with pytest.raises(ValueError, match=r"single key.*shape \(4,\)"):
        random.normal(random.split(random.key(0), 4))
    with pytest.raises(ValueError, match=r"single key.*shape \(2,\)"):
        random.split(random.split(random.PRNGKey(0)))
    with pytest.raises(OverflowError, match="uint32"):
        random.fold_in(random.key(0), -3)
    with pytest.raises(TypeError, match="integer scalar"):
        random.fold_in(random.key(0), np.float32(1.5))
    with pytest.raises(TypeError, match="typed key"):
        random.wrap_key_data(random.key(0))
    with pytest.raises(ValueError, match="non-negative"):
        random.split(random.key(0), -1)
