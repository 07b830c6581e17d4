"""threefry2x32, JAX's key derivations and rng_bit_generator.

Values are checked against Random123's known answers and a NumPy reference;
the derivations against NumPy re-statements of JAX's; jit against eager,
vmap against loops. Shapes are few and small: every new one compiles.
"""

import math

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
from lamella.lax.random_bits import (
    RandomAlgorithm,
    _threefry2x32_reference,
    rng_bit_generator,
    threefry2x32,
    threefry_2x32,
    threefry_fold_in,
    threefry_random_bits,
    threefry_seed,
    threefry_split,
)
from lamella.lax.test_util import check_jit_matches_eager

# Random123's kat_vectors for threefry2x32_20: (key, counter, expected output).
KNOWN_ANSWERS = [
    ((0x00000000, 0x00000000), (0x00000000, 0x00000000), (0x6b200159, 0x99ba4efe)),
    ((0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff), (0x1cb996fc, 0xbb002be7)),
    ((0x13198a2e, 0x03707344), (0x243f6a88, 0x85a308d3), (0xc4923a9c, 0x483df7a0)),
]


def u32(x):
    return np.asarray(x, np.uint32)


def _reference_2x32(key, count):
    """JAX's threefry_2x32 (split the flat counts in halves, pad odd sizes) in NumPy."""
    flat = np.ravel(count)
    padded = np.concatenate([flat, u32([0])]) if flat.size % 2 else flat
    y1, y2 = _threefry2x32_reference(key[0], key[1], *np.split(padded, 2))
    return np.concatenate([y1, y2])[:flat.size].reshape(np.shape(count))


@pytest.mark.parametrize("key, counter, expected", KNOWN_ANSWERS)
def test_known_answers(key, counter, expected):
    batch = u32([[*key, *counter]] * 2).T  # one eager program serves all three vectors
    out = threefry2x32(*batch)
    np.testing.assert_array_equal(np.stack(out)[:, 0], expected)
    np.testing.assert_array_equal(np.stack(_threefry2x32_reference(*key, *counter)), expected)


@pytest.mark.parametrize("shapes", [
    ((), (), (), ()),
    ((), (), (7,), (7,)),
    ((3, 4), (1, 4), (3, 4), (3, 1)),
])
def test_against_reference(shapes):
    rng = np.random.default_rng(len(shapes[2]))
    args = [u32(rng.integers(0, 2 ** 32, s, dtype=np.uint64)) for s in shapes]
    fun = lc.jit(threefry2x32)
    outs = fun(*args)
    for out, expected in zip(outs, _threefry2x32_reference(*args)):
        assert out.dtype == np.uint32
        np.testing.assert_array_equal(out, expected)
    check_jit_matches_eager(threefry2x32, args)


def test_rejects_bad_operands():
    with pytest.raises(TypeError, match="uint32"):
        threefry2x32(np.int32(0), u32(0), u32(0), u32(0))
    with pytest.raises(TypeError, match="broadcasting"):
        threefry2x32(u32(0), u32(0), u32([1, 2]), u32([1, 2, 3]))
    with pytest.raises(TypeError, match="uint32\\[2\\]"):
        threefry_2x32(u32([1, 2, 3]), u32([0, 1]))


def test_vmap_of_primitive_against_loop():
    rng = np.random.default_rng(1)
    keys = u32(rng.integers(0, 2 ** 32, (3, 2), dtype=np.uint64))
    x = u32(rng.integers(0, 2 ** 32, (5, 3), dtype=np.uint64))
    # key words batched at axis 0, the counter words at axis 1 of x, x2 unbatched.
    out = lc.vmap(lambda k1, k2, xs: threefry2x32(k1, k2, xs, u32(7)),
                  in_axes=(0, 0, 1))(keys[:, 0], keys[:, 1], x)
    for b in range(3):
        expected = _threefry2x32_reference(keys[b, 0], keys[b, 1], x[:, b], 7)
        for o, e in zip(out, expected):
            np.testing.assert_array_equal(np.asarray(o)[b], e)


def test_threefry_2x32_odd_and_even_counts():
    key = u32([0x13198a2e, 0x03707344])
    for count in (u32(np.arange(6).reshape(2, 3)), u32(np.arange(5))):
        out = threefry_2x32(key, count)
        assert out.shape == count.shape and out.dtype == np.uint32
        np.testing.assert_array_equal(out, _reference_2x32(key, count))


def test_vmap_over_keys_against_loop():
    keys = lc.vmap(threefry_seed)(np.arange(4, dtype=np.int32))
    np.testing.assert_array_equal(keys, [[0, i] for i in range(4)])
    counts = u32(np.arange(6))
    out, keys = (np.asarray(a) for a in (lc.vmap(threefry_2x32, in_axes=(0, None))(keys, counts),
                                        keys))
    for b in range(4):
        np.testing.assert_array_equal(out[b], _reference_2x32(keys[b], counts))


def test_seed():
    np.testing.assert_array_equal(threefry_seed(42), [0, 42])
    np.testing.assert_array_equal(threefry_seed(-1), [0, 0xFFFFFFFF])
    np.testing.assert_array_equal(threefry_seed(2 ** 32 + 5), [0, 5])  # 32-bit: wraps
    with lc.enable_x64():
        np.testing.assert_array_equal(threefry_seed(2 ** 32 + 5), [1, 5])
        np.testing.assert_array_equal(threefry_seed(-1), [0xFFFFFFFF, 0xFFFFFFFF])
    with pytest.raises(TypeError, match="scalar"):
        threefry_seed(np.zeros(2, np.int32))
    with pytest.raises(TypeError, match="integer"):
        threefry_seed(np.float32(1))


def test_split_fold_in_and_bits_match_jax_derivation():
    key = u32([0, 0])
    # JAX (jax_threefry_partitionable=False): jax.random.split(jax.random.PRNGKey(0)).
    np.testing.assert_array_equal(threefry_split(key, (2,)),
                                  [[4146024105, 967050713], [2718843009, 1272950319]])
    key = u32([0x13198a2e, 0x03707344])
    np.testing.assert_array_equal(threefry_split(key, (2, 3)),
                                  _reference_2x32(key, u32(np.arange(12))).reshape(2, 3, 2))
    np.testing.assert_array_equal(threefry_fold_in(key, 7), _reference_2x32(key, u32([0, 7])))
    np.testing.assert_array_equal(threefry_fold_in(key, -1),
                                  _reference_2x32(key, u32([0, 0xFFFFFFFF])))
    words = _reference_2x32(key, u32(np.arange(5)))
    np.testing.assert_array_equal(threefry_random_bits(key, 32, (5,)), words)
    bits8 = threefry_random_bits(key, 8, (2, 3))
    assert bits8.dtype == np.uint8
    # 6 bytes need ceil(48 / 32) = 2 words, read little-endian; so do 3 uint16s.
    two_words = _reference_2x32(key, u32([0, 1]))
    np.testing.assert_array_equal(bits8, two_words.view(np.uint8)[:6].reshape(2, 3))
    bits16 = threefry_random_bits(key, 16, (3,))
    np.testing.assert_array_equal(bits16, two_words.view(np.uint16)[:3])


def test_partitionable_derivations():
    key = u32([0x13198a2e, 0x03707344])
    y1, y2 = _threefry2x32_reference(key[0], key[1], 0, np.arange(6))
    np.testing.assert_array_equal(threefry_split(key, (2, 3), partitionable=True),
                                  np.stack([y1, y2], -1).reshape(2, 3, 2))
    np.testing.assert_array_equal(threefry_random_bits(key, 32, (6,), partitionable=True),
                                  y1 ^ y2)
    np.testing.assert_array_equal(threefry_random_bits(key, 8, (6,), partitionable=True),
                                  (y1 ^ y2).astype(np.uint8))


def test_64_bit_random_bits():
    key = u32([0, 42])
    with pytest.raises(ValueError, match="x64"):
        threefry_random_bits(key, 64, (3,))
    with lc.enable_x64():
        words = _reference_2x32(key, u32(np.arange(6))).astype(np.uint64)
        out = threefry_random_bits(key, 64, (3,))
        assert out.dtype == np.uint64
        np.testing.assert_array_equal(out, (words[:3] << np.uint64(32)) | words[3:])


def test_keys_never_repeat_across_split_and_fold_in_tree():
    split4 = lc.jit(lc.vmap(lambda k: threefry_split(k, (4,))))
    fold = lc.jit(lc.vmap(lc.vmap(threefry_fold_in, in_axes=(None, 0)), in_axes=(0, None)))
    keys, seen = u32([[0, 0]]), [np.array([[0, 0]], np.uint32)]
    for _ in range(3):
        keys = np.asarray(split4(keys)).reshape(-1, 2)
        seen.append(keys)
    seen.append(np.asarray(fold(keys, u32(np.arange(8)))).reshape(-1, 2))
    all_keys = np.concatenate(seen)
    assert len(all_keys) == 1 + 4 + 16 + 64 + 64 * 8
    assert len(np.unique(all_keys, axis=0)) == len(all_keys)


def test_random_bits_bytes_are_uniform():
    bits = np.asarray(lc.jit(lambda k: threefry_random_bits(k, 8, (1 << 16,)))(u32([0, 3])))
    counts = np.bincount(bits, minlength=256)
    expected = bits.size / 256
    chi2 = float(np.sum((counts - expected) ** 2 / expected))
    # 255 degrees of freedom: the 99.99th percentile is about 347.
    assert chi2 < 347, chi2
    assert abs(float(np.mean(np.unpackbits(bits))) - 0.5) < 0.01


@pytest.mark.parametrize("algorithm", list(RandomAlgorithm))
def test_rng_bit_generator(algorithm):
    key = u32([1, 2, 3, 4])
    draw = lc.jit(lambda k: rng_bit_generator(k, (3, 5), np.uint32, algorithm))
    new_key, bits = draw(key)
    assert new_key.shape == (4,) and new_key.dtype == np.uint32
    assert bits.shape == (3, 5) and bits.dtype == np.uint32
    again_key, again = draw(key)
    np.testing.assert_array_equal(bits, again)
    np.testing.assert_array_equal(new_key, again_key)
    assert not np.array_equal(new_key, key)
    assert len(np.unique(np.asarray(bits))) == bits.size
    _, next_bits = draw(np.asarray(new_key))
    assert not np.array_equal(next_bits, bits)


def test_rng_bit_generator_dtypes_eager_and_errors():
    key = u32([5, 6, 7, 8])
    for dtype in (np.uint8, np.uint16):
        new_key, bits = rng_bit_generator(key, (4,), dtype)
        assert bits.dtype == dtype and bits.shape == (4,) and new_key.dtype == np.uint32
    check_jit_matches_eager(lambda k: rng_bit_generator(k, (2, 2)), [key])
    with lc.enable_x64():
        _, bits = rng_bit_generator(np.array([1, 2], np.uint64), (3,), np.uint64)
        assert bits.dtype == np.uint64
    with pytest.raises(TypeError, match="unsigned"):
        rng_bit_generator(key, (2,), np.int32)
    with pytest.raises(TypeError, match="uint32\\[4\\]"):
        rng_bit_generator(u32([1, 2]), (2,))


def test_rng_bit_generator_vmap_against_loop():
    keys = u32(np.arange(12).reshape(3, 4))
    draw = lambda k: rng_bit_generator(k, (2,), np.uint32)  # noqa: E731
    new_keys, bits = map(np.asarray, lc.vmap(draw, in_axes=1, out_axes=0)(keys.T))
    for b in range(3):
        expected_key, expected_bits = draw(keys[b])
        np.testing.assert_array_equal(new_keys[b], expected_key)
        np.testing.assert_array_equal(bits[b], expected_bits)
    assert math.prod(bits.shape) == 6


def test_derivative_flows_around_the_bits():
    # The bits are integers (a zero derivative); a float function of them differentiates.
    def f(x, seed):
        bits = threefry_random_bits(threefry_seed(seed), 32, ())
        scale = lax.convert_element_type(lax.shift_right_logical(bits, u32(24)), np.float32)
        return lax.mul(x, scale)

    scale = float(np.asarray(threefry_random_bits(threefry_seed(np.int32(3)), 32, ())) >> 24)
    assert float(lc.grad(f)(np.float32(1.5), np.int32(3))) == scale
