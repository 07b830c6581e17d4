"""Random bits: the Threefry-2x32 hash, JAX's key derivations, and rng_bit_generator.

`threefry2x32_p` is the counter-based hash that `lamella.random` builds keys
and distributions on (Salmon et al., "Parallel random numbers: as easy as
1, 2, 3", SC'11: Threefry-2x32 with 20 rounds). It lowers to plain uint32
adds, xors and shifts, so XLA fuses it with whatever consumes the bits.

The helpers reproduce JAX's derivations from a raw uint32[2] key, so that
seeded programs give JAX's numbers:

- `threefry_seed(seed)`: the key `[hi, lo]` of an integer seed (`hi` is 0
  for 32-bit seeds), JAX's `PRNGKey`.
- `threefry_2x32(key, count)`: the hash of a uint32 array, its flattened
  entries split into a first and second half (odd sizes padded with a 0).
- `threefry_split(key, shape)`, `threefry_fold_in(key, data)`,
  `threefry_random_bits(key, bit_width, shape)`: see each for the counters it
  hashes. `partitionable=False` is JAX's original derivation (the
  `jax_threefry_partitionable=False` flag); `partitionable=True` is the one
  that flag turns on, which hashes each output position's own counter.

`rng_bit_generator` exposes XLA's stateful-looking generator, a pure function
from a key to (new key, bits) whose stream is defined by the backend.

>>> import numpy as np
>>> [hex(int(w)) for w in threefry2x32(np.uint32(0), np.uint32(0),
...                                    np.uint32(0), np.uint32(0))]
['0x6b200159', '0x99ba4efe']
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core import ShapedArray, ad, batching, config, dtypes
from lamella.core.trace import aval_of
from lamella.lax.arithmetic import add, mul
from lamella.lax.control_flow import map as loop_map
from lamella.lax.conversion import convert_element_type
from lamella.lax.logical import (
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    shift_left,
    shift_right_logical,
)
from lamella.lax.lowering import aval_to_ir_type, constant, hlo, ir, lower_fun, register_lowering
from lamella.lax.shapes import (
    broadcast_in_dim,
    broadcasted_iota,
    concatenate,
    iota,
    reshape,
    slice,
    squeeze,
)
from lamella.lax.standard import (
    broadcast_operands,
    canonicalize_shape,
    check_out_sharding,
    elementwise_batcher,
    standard_primitive,
)

__all__ = ["RandomAlgorithm", "rng_bit_generator", "rng_bit_generator_p", "rng_uniform",
           "rng_uniform_p", "threefry2x32",
           "threefry2x32_p", "threefry_2x32", "threefry_fold_in", "threefry_random_bits",
           "threefry_seed", "threefry_split"]

_U32 = np.dtype(np.uint32)

# --- threefry2x32 -------------------------------------------------------------
threefry2x32_p = standard_primitive("threefry2x32", multiple_results=True)

# Random123's Threefry-2x32 constants: the rotation schedule (the two halves
# alternate every four rounds) and the key-schedule parity word.
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KS_PARITY = 0x1BD11BDA


def threefry2x32(key1: Any, key2: Any, x1: Any, x2: Any) -> tuple[Any, Any]:
    """Threefry-2x32 (20 rounds) of the counter words (x1, x2) under key (key1, key2).

    All four are uint32; rank-0 and size-1 operands broadcast to the common
    shape. Returns the two output words.

    >>> import numpy as np
    >>> y1, y2 = threefry2x32(np.uint32(0), np.uint32(0), np.arange(2, dtype=np.uint32),
    ...                       np.zeros(2, np.uint32))
    >>> [hex(w) for w in np.asarray(y1)], [hex(w) for w in np.asarray(y2)]
    (['0x6b200159', '0x508efb2c'], ['0x99ba4efe', '0xc0de3f32'])
    """
    return tuple(threefry2x32_p.bind(*broadcast_operands("threefry2x32", key1, key2, x1, x2)))


@threefry2x32_p.def_abstract_eval
def _threefry2x32_abstract_eval(*avals: ShapedArray) -> list[ShapedArray]:
    if any(a.dtype != _U32 for a in avals):
        raise TypeError("threefry2x32 requires uint32 arguments, got "
                        f"{', '.join(a.dtype.name for a in avals)}")
    if len({a.shape for a in avals}) > 1:
        raise TypeError("threefry2x32 requires arguments of equal shapes, got "
                        f"{', '.join(str(a.shape) for a in avals)}")
    out = ShapedArray(avals[0].shape, _U32)
    return [out, out]


def _rotate_left(x: Any, distance: int) -> Any:
    return bitwise_or(shift_left(x, np.uint32(distance)),
                      shift_right_logical(x, np.uint32(32 - distance)))


def _threefry2x32_rounds(key1: Any, key2: Any, x1: Any, x2: Any) -> list[Any]:
    """The 20 rounds as lax ops: five groups of four, a key injection after each."""
    keys = (key1, key2, bitwise_xor(bitwise_xor(key1, key2), np.uint32(_KS_PARITY)))
    x = [add(x1, keys[0]), add(x2, keys[1])]
    for group in range(5):
        for distance in _ROTATIONS[group % 2]:
            x[0] = add(x[0], x[1])
            x[1] = bitwise_xor(x[0], _rotate_left(x[1], distance))
        x[0] = add(x[0], keys[(group + 1) % 3])
        x[1] = add(add(x[1], keys[(group + 2) % 3]), np.uint32(group + 1))
    return x


def _threefry2x32_reference(key1, key2, x1, x2) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32-20 in NumPy, written from the Random123 specification.

    Independent of the lax lowering (it loops over the 20 rounds one by one and
    injects the key schedule when the round index is a multiple of 4), it is
    the reference the tests check `threefry2x32` against.

    >>> [hex(int(w)) for w in _threefry2x32_reference(0, 0, 0, 0)]
    ['0x6b200159', '0x99ba4efe']
    """
    k1, k2, y1, y2 = np.broadcast_arrays(*(np.asarray(a, np.uint64) for a in (key1, key2, x1,
                                                                               x2)))
    mask = np.uint64(0xFFFFFFFF)
    schedule = (k1, k2, k1 ^ k2 ^ np.uint64(_KS_PARITY))
    rotations = _ROTATIONS[0] + _ROTATIONS[1]
    y1, y2 = (y1 + schedule[0]) & mask, (y2 + schedule[1]) & mask
    for r in range(20):
        y1 = (y1 + y2) & mask
        d = np.uint64(rotations[r % 8])
        y2 = ((y2 << d) | (y2 >> (np.uint64(32) - d))) & mask
        y2 ^= y1
        if r % 4 == 3:
            s = r // 4 + 1
            y1 = (y1 + schedule[s % 3]) & mask
            y2 = (y2 + schedule[(s + 1) % 3] + np.uint64(s)) & mask
    return y1.astype(np.uint32), y2.astype(np.uint32)


def _threefry2x32_batch(args, dims):
    # Elementwise: align every batch axis at the front; both outputs share it.
    outs, dim = elementwise_batcher(threefry2x32_p, args, dims)
    return outs, [dim, dim]


ad.defjvp_zero(threefry2x32_p)
batching.primitive_batchers[threefry2x32_p] = _threefry2x32_batch
register_lowering(threefry2x32_p, lower_fun(_threefry2x32_rounds))

# --- JAX's key derivations ----------------------------------------------------


def _key_words(key: Any) -> tuple[Any, Any]:
    """The two uint32 scalars of a uint32[2] key (or of a (key1, key2) pair)."""
    if isinstance(key, (tuple, list)):
        return key[0], key[1]
    aval = aval_of(key)
    if aval.shape != (2,) or aval.dtype != _U32:
        raise TypeError(f"a threefry key is a uint32[2] array, got {aval.dtype.name}"
                        f"{list(aval.shape)}")
    return tuple(squeeze(slice(key, (i,), (i + 1,)), (0,)) for i in (0, 1))


def threefry_2x32(keypair: Any, count: Any) -> Any:
    """The Threefry-2x32 hash of a uint32 array `count` under `keypair` (JAX's derivation).

    The flattened counts are padded with one 0 when their number is odd, and
    the first half is hashed as the words x1 against the second half as x2;
    the concatenated outputs, trimmed to the input size, take `count`'s shape.

    >>> import numpy as np
    >>> threefry_2x32(np.array([0, 0], np.uint32), np.array([0, 0], np.uint32))
    Array([1797259609, 2579123966], dtype=uint32)
    """
    key1, key2 = _key_words(keypair)
    aval = aval_of(count)
    if aval.dtype != _U32:
        raise TypeError(f"threefry_2x32 counts must be uint32, got {aval.dtype.name}")
    flat = reshape(count, (aval.size,))
    if aval.size % 2:
        flat = concatenate([flat, np.zeros(1, np.uint32)], 0)
    flat_size = aval_of(flat).shape[0]
    half = flat_size // 2
    y1, y2 = threefry2x32(key1, key2, slice(flat, (0,), (half,)),
                          slice(flat, (half,), (flat_size,)))
    out = concatenate([y1, y2], 0)
    if aval.size % 2:
        out = slice(out, (0,), (aval.size,))
    return reshape(out, aval.shape)


def threefry_seed(seed: Any) -> Any:
    """The uint32[2] key of an integer seed, as JAX's `PRNGKey(seed)`.

    The key is `[high 32 bits, low 32 bits]` of the seed's two's complement;
    the high word is 0 for seeds of 32 bits or fewer. A Python int becomes an
    int64 (with x64 on) or int32 (wrapped modulo 2**32, as JAX does) first.

    >>> threefry_seed(42)
    Array([ 0, 42], dtype=uint32)
    """
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        seed = np.int64(seed)
        if not config.read("enable_x64"):
            seed = seed.astype(np.int32)
    aval = aval_of(seed)
    if aval.shape:
        raise TypeError(f"a PRNG key seed must be a scalar, got shape {aval.shape}")
    if aval.dtype.kind not in "iu":
        raise TypeError(f"a PRNG key seed must be an integer, got {aval.dtype.name}")
    if aval.dtype.itemsize > 4:
        high = convert_element_type(shift_right_logical(seed, np.array(32, aval.dtype)), _U32)
        low = convert_element_type(bitwise_and(seed, np.array(0xFFFFFFFF, aval.dtype)), _U32)
    else:
        high, low = np.uint32(0), convert_element_type(seed, _U32)
    return concatenate([broadcast_in_dim(w, (1,), ()) for w in (high, low)], 0)


def _iota_2x32(shape: tuple[int, ...]) -> tuple[Any, Any]:
    """(high, low) uint32 words of the row-major position of each entry of `shape`."""
    size = math.prod(shape)
    if size > 2 ** 32:
        raise NotImplementedError(f"threefry counters for {size} > 2**32 entries")
    zeros = broadcast_in_dim(np.uint32(0), shape, ())
    if not shape:
        return zeros, zeros
    return zeros, reshape(iota(_U32, size), shape)


def threefry_split(key: Any, shape: Sequence[int] = (2,), *, partitionable: bool = False
                   ) -> Any:
    """`shape` new uint32[2] keys from `key` (an array of shape `(*shape, 2)`).

    Original derivation: `threefry_2x32(key, iota(2 * n))` reshaped to
    `(*shape, 2)`, n = prod(shape). Partitionable: the new key at flat
    position i is `threefry2x32(key, (0, i))`.

    >>> import numpy as np
    >>> threefry_split(np.array([0, 0], np.uint32), (2,)).shape
    (2, 2)
    """
    shape = canonicalize_shape("threefry_split", shape)
    key1, key2 = _key_words(key)
    if partitionable:
        y1, y2 = threefry2x32(key1, key2, *_iota_2x32(shape))
        return concatenate([reshape(y, (*shape, 1)) for y in (y1, y2)], len(shape))
    counts = iota(_U32, 2 * math.prod(shape))
    return reshape(threefry_2x32((key1, key2), counts), (*shape, 2))


def threefry_fold_in(key: Any, data: Any) -> Any:
    """A new key mixing the scalar integer `data` into `key`.

    `data` becomes uint32 (Python ints modulo 2**32), then the new key is
    `threefry_2x32(key, threefry_seed(data))`, i.e. the hash of `[0, data]`.

    >>> import numpy as np
    >>> threefry_fold_in(np.array([0, 0], np.uint32), 1).shape
    (2,)
    """
    if isinstance(data, (int, np.integer)) and not isinstance(data, (bool, np.bool_)):
        data = np.uint32(int(data) % 2 ** 32)
    if aval_of(data).shape:
        raise TypeError(f"fold_in data must be a scalar, got shape {aval_of(data).shape}")
    return threefry_2x32(key, threefry_seed(convert_element_type(data, _U32)))


_UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32,
                64: np.dtype(np.uint64)}


def threefry_random_bits(key: Any, bit_width: int, shape: Sequence[int], *,
                         partitionable: bool = False) -> Any:
    """An array of `shape` of random unsigned integers of `bit_width` bits (8, 16, 32, 64).

    Original derivation: n = ceil(bit_width * size / 32) words
    `threefry_2x32(key, iota(n))`; 64-bit values are `first half << 32 |
    second half`, 8- and 16-bit values are the words' pieces, least
    significant first (a little-endian view), and the first `size` are kept.
    Partitionable: entry i hashes `(0, i)` to (y1, y2); 32-bit values are
    `y1 ^ y2` (truncated for 8 and 16 bits), 64-bit ones `y1 << 32 | y2`.

    >>> import numpy as np
    >>> threefry_random_bits(np.array([0, 42], np.uint32), 8, (3,)).dtype
    dtype('uint8')
    """
    if bit_width not in _UINT_DTYPES:
        raise ValueError(f"bit_width must be 8, 16, 32 or 64, got {bit_width}")
    if bit_width == 64 and not config.read("enable_x64"):
        raise ValueError("64-bit random bits need x64: enable it with "
                         "lamella.core.config.update('enable_x64', True)")
    shape = canonicalize_shape("threefry_random_bits", shape)
    dtype = _UINT_DTYPES[bit_width]
    key1, key2 = _key_words(key)
    if partitionable:
        y1, y2 = threefry2x32(key1, key2, *_iota_2x32(shape))
        if bit_width == 64:
            return bitwise_or(shift_left(convert_element_type(y1, dtype), np.uint64(32)),
                              convert_element_type(y2, dtype))
        return convert_element_type(bitwise_xor(y1, y2), dtype)
    size = math.prod(shape)
    words = -(-bit_width * size // 32)
    if words >= 2 ** 32 - 1:
        raise NotImplementedError(f"{words} threefry words exceed one uint32 counter block")
    bits = threefry_2x32((key1, key2), iota(_U32, words))
    if bit_width == 64:
        high, low = (convert_element_type(slice(bits, (a,), (b,)), dtype)
                     for a, b in ((0, size), (size, 2 * size)))
        bits = bitwise_or(shift_left(high, np.uint64(32)), low)
    elif bit_width < 32:
        per_word = 32 // bit_width
        pieces = shift_right_logical(
            broadcast_in_dim(bits, (words, per_word), (0,)),
            mul(broadcasted_iota(_U32, (words, per_word), 1), np.uint32(bit_width)))
        pieces = bitwise_and(pieces, np.uint32(2 ** bit_width - 1))
        bits = slice(convert_element_type(reshape(pieces, (words * per_word,)), dtype),
                     (0,), (size,))
    return reshape(bits, shape)


# --- rng_bit_generator --------------------------------------------------------


class RandomAlgorithm(enum.IntEnum):
    """XLA's bit-generator algorithms (the values are XLA's `RandomAlgorithm`)."""

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self) -> str:
        return self.name


_RNG_ALGORITHM_NAMES = {RandomAlgorithm.RNG_DEFAULT: "DEFAULT",
                        RandomAlgorithm.RNG_THREE_FRY: "THREE_FRY",
                        RandomAlgorithm.RNG_PHILOX: "PHILOX"}
_RBG_DTYPES = frozenset(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))

rng_bit_generator_p = standard_primitive("rng_bit_generator", multiple_results=True)


def rng_bit_generator(key: Any, shape: Sequence[int], dtype: Any = np.uint32,
                      algorithm: RandomAlgorithm = RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding: Any = None) -> tuple[Any, Any]:
    """XLA's bit generator: `(new_key, bits)`, bits an unsigned array of `shape`.

    `key` is uint32[4] (or uint64[2] with x64). The stream depends on the
    backend and algorithm: the same key gives the same bits on one backend,
    but not necessarily across backends or versions.

    >>> import numpy as np
    >>> new_key, bits = rng_bit_generator(np.zeros(4, np.uint32), (2, 3), np.uint8)
    >>> new_key.shape, bits.shape, bits.dtype
    ((4,), (2, 3), dtype('uint8'))
    """
    check_out_sharding("rng_bit_generator", out_sharding)
    dtype = dtypes.canonicalize_dtype(dtype)
    if dtype not in _RBG_DTYPES:
        raise TypeError(f"rng_bit_generator: unsupported dtype {dtype.name}; use an unsigned "
                        "integer type (uint8, uint16, uint32, uint64)")
    shape = canonicalize_shape("rng_bit_generator", shape)
    return tuple(rng_bit_generator_p.bind(key, shape=shape, dtype=dtype,
                                          algorithm=RandomAlgorithm(algorithm),
                                          out_sharding=None))


@rng_bit_generator_p.def_abstract_eval
def _rng_bit_generator_abstract_eval(key: ShapedArray, *, shape, dtype, algorithm,
                                     out_sharding):
    if (key.shape, key.dtype) not in (((4,), _U32), ((2,), np.dtype(np.uint64))):
        raise TypeError("rng_bit_generator key must be uint32[4] or uint64[2], got "
                        f"{key.dtype.name}{list(key.shape)}")
    return [ShapedArray(key.shape, key.dtype),
            ShapedArray(canonicalize_shape("rng_bit_generator", shape), dtype)]


def _rng_bit_generator_lowering(ctx, key, *, shape, dtype, algorithm, out_sharding):
    # XLA's state is u64[2]; a u32[4] key (usable without x64) is reinterpreted.
    key_aval, bits_aval = ctx.avals_in[0], ctx.avals_out[1]
    u64_state = ir.RankedTensorType.get([2], ir.IntegerType.get_unsigned(64))
    if key_aval.dtype == _U32:
        pairs = ir.RankedTensorType.get([2, 2], ir.IntegerType.get_unsigned(32))
        key = hlo.bitcast_convert(u64_state, hlo.reshape(pairs, key))
    # Narrow outputs are drawn as uint32 and truncated, as JAX does.
    draw_aval = bits_aval.update(dtype=_U32) if dtype.itemsize < 4 else bits_aval
    new_key, bits = hlo.rng_bit_generator(
        u64_state, aval_to_ir_type(draw_aval),
        hlo.RngAlgorithmAttr.get(_RNG_ALGORITHM_NAMES[algorithm]), key)
    if key_aval.dtype == _U32:
        pairs = ir.RankedTensorType.get([2, 2], ir.IntegerType.get_unsigned(32))
        new_key = hlo.reshape(aval_to_ir_type(key_aval), hlo.bitcast_convert(pairs, new_key))
    if draw_aval is not bits_aval:
        bits = hlo.convert(aval_to_ir_type(bits_aval), bits)
    return [new_key, bits]


def _rng_bit_generator_batch(args, dims, **params):
    # One generator call draws one stream, so a batch of keys needs one call
    # per key: a loop (lax.map) over the keys, whose size does not grow the program.
    (keys,), (dim,) = args, dims
    keys = batching.moveaxis(keys, dim, 0)
    new_keys, bits = loop_map(lambda k: tuple(rng_bit_generator_p.bind(k, **params)), keys)
    return [new_keys, bits], [0, 0]


ad.defjvp_zero(rng_bit_generator_p)
batching.primitive_batchers[rng_bit_generator_p] = _rng_bit_generator_batch
register_lowering(rng_bit_generator_p, _rng_bit_generator_lowering)


# --- rng_uniform: XLA's stateful uniform generator ---------------------------------
rng_uniform_p = standard_primitive("rng_uniform")


def rng_uniform(a: Any, b: Any, shape: Sequence[int]) -> Any:
    """Draws from XLA's stateful uniform generator: an array of `shape` uniform in
    [a, b) (a and b scalars of one dtype). Not reproducible: the state is the
    backend's; use lamella.random for reproducible streams.

    >>> out = np.asarray(rng_uniform(np.float32(0), np.float32(1), (3,)))
    >>> out.shape, bool(((out >= 0) & (out < 1)).all())
    ((3,), True)
    """
    return rng_uniform_p.bind(a, b, shape=canonicalize_shape("rng_uniform", shape))


@rng_uniform_p.def_abstract_eval
def _rng_uniform_abstract_eval(a: ShapedArray, b: ShapedArray, *, shape) -> ShapedArray:
    if a.dtype != b.dtype or a.shape or b.shape:
        raise TypeError(f"rng_uniform: a and b must be scalars of one dtype, got "
                        f"{a.str_short()} and {b.str_short()}")
    if a.dtype.kind not in "iuf" and a.dtype.name != "bfloat16":
        raise TypeError(f"rng_uniform: a and b must be integers or floats, got {a.dtype.name}")
    return ShapedArray(canonicalize_shape("rng_uniform", shape), a.dtype)


def _rng_uniform_lowering(ctx, a, b, *, shape):
    dims = constant(np.array(shape, np.int64))
    return [hlo.rng(a, b, dims, hlo.RngDistributionAttr.get("UNIFORM"))]


register_lowering(rng_uniform_p, _rng_uniform_lowering)
