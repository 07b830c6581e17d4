"""Issue 13: every shape-taking lax function and primitive rejects a negative,
fractional or non-integer dimension with an error naming it, eagerly and under jit,
instead of handing MLIR a type it refuses ("invalid tensor dimension size").

Errors are raised while tracing, so nothing here compiles a program except the
few valid shapes, which check that what JAX accepts (one int, NumPy integers,
0-d integer arrays) still works.
"""

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as lnp
import lamella.random as lrandom
from lamella.lax.fill import empty_p

_KEY4 = np.zeros(4, np.uint32)

# (name, function of one shape): each takes the shape in a different position.
SHAPE_TAKERS = [
    ("full", lambda s: lax.full(s, 0.0)),
    ("full_like", lambda s: lax.full_like(np.float32(0), 1.0, shape=s)),
    ("broadcast", lambda s: lax.broadcast(np.float32(1), s)),
    ("broadcast_in_dim", lambda s: lax.broadcast_in_dim(np.float32(1), s, ())),
    ("reshape", lambda s: lax.reshape(np.zeros(0, np.float32), s)),
    ("broadcasted_iota", lambda s: lax.broadcasted_iota(np.int32, s, 0)),
    ("empty", lambda s: lax.empty(s, np.float32)),
    ("rng_uniform", lambda s: lax.rng_uniform(np.float32(0), np.float32(1), s)),
    ("rng_bit_generator", lambda s: lax.rng_bit_generator(_KEY4, s)),
    ("zeros", lnp.zeros),
    ("full (numpy)", lambda s: lnp.full(s, 2.0)),
    ("normal", lambda s: lrandom.normal(lrandom.key(0), s)),
    ("bits", lambda s: lrandom.bits(lrandom.key(0), s)),
]


@pytest.mark.parametrize("name,fn", SHAPE_TAKERS, ids=[n for n, _ in SHAPE_TAKERS])
@pytest.mark.parametrize("shape", [(-1,), (0, -2)])
def test_negative_dimensions_are_refused_by_name(name, fn, shape):
    for run in (fn, lc.jit(fn, static_argnums=0)):
        with pytest.raises((TypeError, ValueError), match="negative") as info:
            run(shape)
        assert "MLIR" not in type(info.value).__name__
        assert "invalid tensor dimension" not in str(info.value)


@pytest.mark.parametrize("name,fn", SHAPE_TAKERS[:9], ids=[n for n, _ in SHAPE_TAKERS[:9]])
@pytest.mark.parametrize("shape", [(2.0,), (None,), ((1,),), ("2",)])
def test_non_integer_dimensions_are_refused(name, fn, shape):
    # A float dimension used to be truncated silently (full((2.5,), 0.) had shape (2,)).
    with pytest.raises(TypeError, match="concrete integers"):
        fn(shape)


def test_iota_size_must_be_an_integer():
    with pytest.raises(TypeError, match="concrete integers"):
        lax.iota(np.int32, 3.0)
    with pytest.raises(TypeError, match="negative"):
        lax.iota(np.int32, -3)


def test_tile_and_expand_dims_refuse_fractional_counts():
    with pytest.raises(TypeError, match="reps"):
        lax.tile(np.ones(2, np.float32), (2.5,))
    with pytest.raises(TypeError):
        lax.expand_dims(np.ones(2, np.float32), (0.0,))


def test_integer_shapes_in_every_form_jax_accepts():
    assert lax.full(3, 1.0).shape == (3,)
    assert lax.full((np.int64(2), np.int8(1)), 1.0).shape == (2, 1)
    assert lax.full(np.array([2, 3]), 1.0).shape == (2, 3)
    assert lax.full((np.array(2), lnp.array(1)), 1.0).shape == (2, 1)
    assert lax.broadcast(np.float32(1), (0,)).shape == (0,)
    np.testing.assert_array_equal(lax.iota(np.int32, np.int64(3)), [0, 1, 2])


def test_direct_binds_of_lax_primitives_validate_in_their_abstract_eval():
    # Shape params reach the abstract evals without the wrappers' checks.
    with pytest.raises(TypeError, match="negative"):
        lax.iota_p.bind(dtype=np.dtype(np.int32), shape=(-2,), dimension=0, sharding=None)
    with pytest.raises(TypeError, match="negative"):
        empty_p.bind(shape=(-2,), dtype=np.float32, out_sharding=None)
    with pytest.raises(TypeError, match="negative"):
        lax.rng_uniform_p.bind(np.float32(0), np.float32(1), shape=(-2,))
    with pytest.raises(TypeError, match="negative"):
        lax.rng_bit_generator_p.bind(_KEY4, shape=(-2,), dtype=np.dtype(np.uint32),
                                     algorithm=lax.RandomAlgorithm.RNG_DEFAULT,
                                     out_sharding=None)


def test_lowering_never_hands_mlir_a_negative_dimension():
    # Core's broadcast_in_dim primitive, bound directly, is caught by its abstract eval;
    # the lowering is the last line of defence for a primitive whose abstract eval
    # would miss one.
    from lamella.core import ShapedArray
    from lamella.core.structural import broadcast_in_dim
    from lamella.lax.lowering import aval_to_ir_type
    from lamella.lax.mlir_context import make_context

    with pytest.raises(TypeError, match=r"broadcast_in_dim: shape \(-1,\) has a negative"):
        lc.jit(lambda: broadcast_in_dim(np.float32(0), (-1,), ()))()
    with make_context(), pytest.raises(TypeError, match=r"shape \(-1,\).*>= 0"):
        aval_to_ir_type(ShapedArray((-1,), np.dtype(np.float32)))
