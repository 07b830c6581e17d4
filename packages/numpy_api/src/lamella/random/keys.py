"""PRNG keys: typed key arrays, raw uint32[2] keys, and the key operations.

A key is the state of JAX's counter-based generator: two uint32 words that
Threefry-2x32 hashes counters under. lamella accepts a key in JAX's two forms:

- a *typed* key, `key(seed)`: a `PRNGKeyArray` of shape `()` and dtype
  `key<fry>` wrapping the uint32[..., 2] words (a pytree, so it goes through
  jit and vmap);
- a *raw* key, `PRNGKey(seed)`: the uint32[2] array of the words itself.

Every operation returns keys of the form it was given. New keys and bits use
JAX's default (`jax_threefry_partitionable=True`) derivations, so seeded
programs give JAX's numbers bit for bit.

>>> k = key(42)
>>> k.shape, str(k.dtype)
((), 'key<fry>')
>>> key_data(split(k)[1])
Array([  64467757, 2916123636], dtype=uint32)
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from lamella import lax
from lamella.core import config
from lamella.core import dtypes as core_dtypes
from lamella.core.source_info import user_stacklevel
from lamella.core.trace import Tracer, aval_of
from lamella.core.tree_util import register_pytree_node
from lamella.lax import random_bits as rb
from lamella.numpy import dtypes as np_dtypes
from lamella.numpy.placement import places_result
from lamella.numpy.util import asarray_internal, is_arraylike

__all__ = ["PRNGImpl", "PRNGKey", "PRNGKeyArray", "PRNGKeyDType", "bits", "clone", "fold_in",
           "key", "key_data", "key_dtype", "key_impl", "split", "wrap_key_data"]

_U32 = np.dtype(np.uint32)
_UNSIGNED = {np.dtype(t): np.dtype(t).itemsize * 8
             for t in (np.uint8, np.uint16, np.uint32, np.uint64)}
def _partitionable() -> bool:
    """Which Threefry derivation splits keys and draws bits: the `threefry_partitionable`
    flag (True, JAX's default since 0.5; False reproduces older JAX's streams)."""
    return bool(config.read("threefry_partitionable"))


class PRNGImpl:
    """A PRNG implementation: only Threefry-2x32 (JAX's default, `"threefry2x32"`)."""

    name = "threefry2x32"
    tag = "fry"
    key_shape = (2,)

    def __repr__(self) -> str:
        return f"PRNGImpl('{self.name}')"

    __str__ = __repr__


THREEFRY = PRNGImpl()


def _resolve_impl(impl: Any, dtype: Any = None) -> PRNGImpl:
    """The implementation `impl` names, or the one of the key dtype `dtype`."""
    if dtype is not None:
        if impl is not None:
            raise TypeError("pass either impl or dtype to choose a PRNG implementation, "
                            "not both")
        impl = dtype.impl if isinstance(dtype, PRNGKeyDType) else dtype
    if impl is None or impl is THREEFRY or impl == THREEFRY.name:
        return THREEFRY
    raise ValueError(f"unsupported PRNG implementation {impl!r}: lamella.random implements "
                     "only 'threefry2x32'")


class PRNGKeyDType:
    """The dtype of typed keys, printed `key<fry>`; an extended dtype whose scalar type
    is `lamella.core.dtypes.prng_key` (`issubdtype(keys.dtype, prng_key)` holds)."""

    impl = THREEFRY
    name = "key<fry>"
    kind = "V"
    type = core_dtypes.prng_key

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PRNGKeyDType) or other == self.name

    def __hash__(self) -> int:
        return hash(self.name)


_KEY_DTYPE = PRNGKeyDType()


class PRNGKeyArray:
    """An array of typed PRNG keys over uint32 words of shape `(*shape, 2)`.

    Indexing, `reshape`, `ravel` and iteration act on the key axes; the words
    are `key_data(keys)`.

    >>> keys = split(key(0), 4)
    >>> keys.shape, keys[1:3].shape, keys.reshape(2, 2).shape
    ((4,), (2,), (2, 2))
    """

    __slots__ = ("_base",)

    def __init__(self, base: Any):
        # No checks: pytree unflattening passes placeholders through here.
        self._base = base

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(aval_of(self._base).shape[:-1])

    @property
    def dtype(self) -> PRNGKeyDType:
        return _KEY_DTYPE

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    # Placement is the words': a key committed to a device keeps its samples there.
    def devices(self) -> set[Any]:
        return self._base.devices()

    @property
    def sharding(self) -> Any:
        return self._base.sharding

    @property
    def device(self) -> Any:
        return self._base.device

    def block_until_ready(self) -> PRNGKeyArray:
        self._base.block_until_ready()
        return self

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object (a key array of shape ())")
        return self.shape[0]

    def __iter__(self) -> Iterator[PRNGKeyArray]:
        if not self.shape:
            raise TypeError("iteration over a 0-d key array")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, index: Any) -> PRNGKeyArray:
        return PRNGKeyArray(_index_leading(self._base, index, self.shape))

    def reshape(self, *shape: Any) -> PRNGKeyArray:
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        new = _resolve_reshape(tuple(operator.index(d) for d in shape), self.size)
        return PRNGKeyArray(lax.reshape(self._base, (*new, 2)))

    def ravel(self) -> PRNGKeyArray:
        return self.reshape(self.size)

    flatten = ravel

    def __repr__(self) -> str:
        if isinstance(self._base, Tracer):  # JAX's tracer reprs, with the key type
            return self._base._describe(
                lambda aval: f"{self.dtype}[{','.join(map(str, aval.shape[:-1]))}]")
        return f"Array({self.shape}, dtype={self.dtype}) overlaying:\n{np.asarray(self._base)}"


register_pytree_node(PRNGKeyArray, lambda k: ((k._base,), None),
                     lambda _, children: PRNGKeyArray(children[0]))


def _resolve_reshape(shape: tuple[int, ...], size: int) -> tuple[int, ...]:
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        shape = tuple(size // known if known and d == -1 else d for d in shape)
    if int(np.prod(shape, dtype=np.int64)) != size:
        raise ValueError(f"cannot reshape a key array of size {size} into shape {shape}")
    return shape


def _index_leading(base: Any, index: Any, shape: tuple[int, ...]) -> Any:
    """`base[index]` for integer/slice/Ellipsis indices over the key axes only."""
    index = index if isinstance(index, tuple) else (index,)
    if Ellipsis in index:
        at = index.index(Ellipsis)
        fill = len(shape) - (len(index) - 1)
        index = index[:at] + (slice(None),) * fill + index[at + 1:]
    if len(index) > len(shape):
        raise IndexError(f"too many indices for a key array of shape {shape}")
    for axis in reversed(range(len(index))):
        i, n = index[axis], shape[axis]
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step < 0:
                raise IndexError("negative slice steps are not supported on key arrays")
            base = lax.slice_in_dim(base, start, max(start, stop), step, axis)
        elif isinstance(i, (int, np.integer)):
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {n}")
            base = lax.index_in_dim(base, int(i) % n, axis, keepdims=False)
        elif is_arraylike(i) and not aval_of(i).shape and aval_of(i).dtype.kind in "iu":
            i = lax.convert_element_type(i, np.int32)
            i = lax.select(lax.lt(i, np.int32(0)), lax.add(i, np.int32(n)), i)
            base = lax.dynamic_index_in_dim(base, i, axis, keepdims=False)
        else:
            raise IndexError(f"key arrays support integer, slice and Ellipsis indices, got {i!r}")
    return base


# --- key forms ----------------------------------------------------------------

_KEY_FORMS = ("a typed key from lamella.random.key(seed) or a raw uint32[2] key from "
              "lamella.random.PRNGKey(seed)")


def _describe(x: Any) -> str:
    try:
        aval = aval_of(x)
        return f"{aval.dtype.name}{list(aval.shape)}"
    except Exception:
        return type(x).__name__


def _key_words(name: str, keys: Any) -> tuple[Any, bool]:
    """The uint32[..., 2] words of typed or raw keys, and whether they were typed."""
    if isinstance(keys, PRNGKeyArray):
        return keys._base, True
    if is_arraylike(keys) and not isinstance(keys, (int, float, complex, bool)):
        aval = aval_of(keys if isinstance(keys, Tracer) else asarray_internal(keys))
        if aval.dtype == _U32 and aval.shape[-1:] == (2,):
            _check_legacy_key_allowed()
            return (keys if isinstance(keys, Tracer) else asarray_internal(keys)), False
    raise TypeError(f"{name}: expected a PRNG key, {_KEY_FORMS} (or an array of them); "
                    f"got {_describe(keys)}")


_LEGACY_KEY_MESSAGE = (
    "Legacy uint32 key array passed as key to lamella.random function. Please create keys "
    "using lamella.random.key(). If use of a raw key array was intended, set "
    "jax_legacy_prng_key=\"allow\".")


def _check_legacy_key_allowed() -> None:
    """Raw uint32 keys obey the `legacy_prng_key` flag: 'allow', 'warn' or 'error'."""
    policy = config.read("legacy_prng_key")
    if policy == "warn":
        warnings.warn(_LEGACY_KEY_MESSAGE, UserWarning, stacklevel=user_stacklevel())
    elif policy == "error":
        raise ValueError(_LEGACY_KEY_MESSAGE)


def _single_key(name: str, keys: Any) -> tuple[Any, bool]:
    """The uint32[2] words of one key (typed or raw), and whether it was typed."""
    words, typed = _key_words(name, keys)
    shape = aval_of(words).shape[:-1]
    if shape:
        raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                         f"{shape} != (). Use lamella.core.vmap for batching.")
    return words, typed


def _wrap(words: Any, typed: bool) -> Any:
    return PRNGKeyArray(words) if typed else words


def _seed_words(seed: Any) -> Any:
    if isinstance(seed, PRNGKeyArray) or isinstance(seed, (float, complex)):
        raise TypeError(f"a PRNG seed must be an integer scalar, got {_describe(seed)}")
    if isinstance(seed, int) and not -2 ** 63 <= seed < 2 ** 63:
        raise OverflowError(f"seed {seed} does not fit in a signed 64-bit integer")
    return rb.threefry_seed(seed)


def key(seed: Any, *, impl: Any = None, dtype: Any = None) -> PRNGKeyArray:
    """A typed PRNG key (shape `()`, dtype `key<fry>`) from an integer seed; the
    implementation may be named by `impl` or by a key `dtype` (`key_dtype()`).

    As in JAX, without x64 a Python int seed keeps only its low 32 bits.

    >>> key(42)
    Array((), dtype=key<fry>) overlaying:
    [ 0 42]
    """
    _resolve_impl(impl, dtype)
    return PRNGKeyArray(_seed_words(seed))


def PRNGKey(seed: Any, *, impl: Any = None) -> Any:  # noqa: N802 (JAX's name)
    """A raw PRNG key: the uint32[2] array `[high word, low word]` of an integer seed.

    >>> PRNGKey(-1)
    Array([         0, 4294967295], dtype=uint32)
    """
    _resolve_impl(impl)
    words = _seed_words(seed)
    # With `enable_custom_prng`, even the legacy constructor makes typed keys (as JAX).
    return PRNGKeyArray(words) if config.read("enable_custom_prng") else words


def key_data(keys: Any) -> Any:
    """The uint32[..., 2] words underlying typed keys (raw keys are returned as they are).

    >>> key_data(key(7))
    Array([0, 7], dtype=uint32)
    """
    return _key_words("key_data", keys)[0]


def wrap_key_data(key_bits_array: Any, *, impl: Any = None, dtype: Any = None) -> PRNGKeyArray:
    """Typed keys wrapping uint32[..., 2] words (the inverse of `key_data`).

    >>> import numpy as np
    >>> wrap_key_data(np.zeros((3, 2), np.uint32)).shape
    (3,)
    """
    _resolve_impl(impl, dtype)
    if isinstance(key_bits_array, PRNGKeyArray):
        raise TypeError("wrap_key_data expects uint32 key data, got a typed key array")
    return PRNGKeyArray(_key_words("wrap_key_data", key_bits_array)[0])


def key_dtype(impl_spec: Any = None) -> PRNGKeyDType:
    """The dtype of typed keys of a PRNG implementation (only Threefry-2x32: `key<fry>`).

    >>> key_dtype() == key(0).dtype
    True
    """
    _resolve_impl(impl_spec.impl if isinstance(impl_spec, PRNGKeyDType) else impl_spec)
    return _KEY_DTYPE


def key_impl(keys: Any) -> PRNGImpl:
    """The PRNG implementation of keys (always Threefry-2x32 in lamella).

    >>> key_impl(key(0))
    PRNGImpl('threefry2x32')
    """
    _key_words("key_impl", keys)
    return THREEFRY


def _num_shape(num: int | Sequence[int]) -> tuple[int, ...]:
    shape = (num,) if isinstance(num, (int, np.integer)) else tuple(num)
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"split: num must be an int or a tuple of ints, got {num!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"split: num must be non-negative, got {num!r}")
    return shape


def split(key: Any, num: int | Sequence[int] = 2) -> Any:
    """`num` new keys from one key (`num` an int or a shape), of the key's form.

    >>> split(PRNGKey(42))
    Array([[1832780943,  270669613],
           [  64467757, 2916123636]], dtype=uint32)
    """
    words, typed = _single_key("split", key)
    return _wrap(_split_words(words, _num_shape(num)), typed)


def _split_words(words: Any, shape: tuple[int, ...] = (2,)) -> Any:
    return rb.threefry_split(words, shape, partitionable=_partitionable())


def _split_n(words: Any, n: int) -> list[Any]:
    """`n` raw subkeys of raw words, as a list."""
    keys = _split_words(words, (n,))
    return [lax.index_in_dim(keys, i, 0, keepdims=False) for i in range(n)]


def fold_in(key: Any, data: Any) -> Any:
    """A new key mixing the integer `data` (a uint32 value) into `key`.

    >>> fold_in(PRNGKey(42), 0)
    Array([1832780943,  270669613], dtype=uint32)
    """
    words, typed = _single_key("fold_in", key)
    if isinstance(data, (int, np.integer)) and not isinstance(data, (bool, np.bool_)):
        if not 0 <= int(data) < 2 ** 32:
            raise OverflowError(f"fold_in: data {int(data)} is out of range for uint32")
    else:
        aval = aval_of(asarray_internal(data) if not isinstance(data, Tracer) else data)
        if aval.shape or aval.dtype.kind not in "iub":
            raise TypeError(f"fold_in: data must be an integer scalar, got {_describe(data)}")
    return _wrap(rb.threefry_fold_in(words, data), typed)


def clone(key: Any) -> Any:
    """A copy of a key (keys are immutable values in lamella, so the key itself).

    >>> clone(PRNGKey(1))
    Array([0, 1], dtype=uint32)
    """
    _key_words("clone", key)
    return key


def _canonical_shape(name: str, shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{name}: shape must be a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"{name}: shape must not have negative dimensions, got {shape}")
    return shape


def _random_bits(words: Any, bit_width: int, shape: tuple[int, ...]) -> Any:
    return rb.threefry_random_bits(words, bit_width, shape, partitionable=_partitionable())


@places_result
def bits(key: Any, shape: Sequence[int] = (), dtype: Any = None,
         *, out_sharding: Any = None) -> Any:
    """Uniformly random unsigned integers of `shape` (dtype uint8/16/32/64, default uint32).

    >>> bits(PRNGKey(42), (3,))
    Array([2098992034, 2919706841, 2646866425], dtype=uint32)
    """
    words, _ = _single_key("bits", key)
    if np.dtype(np.uint32 if dtype is None else dtype) not in _UNSIGNED:
        raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got "
                         f"{np.dtype(dtype)}")
    # Without x64, uint64 warns and becomes uint32, as in JAX (the same bits as uint32's).
    dtype = (np.dtype(np.uint32) if dtype is None
             else np_dtypes.canonicalize_user_dtype(dtype, "bits"))
    return _random_bits(words, _UNSIGNED[dtype], _canonical_shape("bits", shape))
