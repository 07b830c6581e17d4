"""lamella.random's JAX surface: the `random_gamma_p` primitive (its jaxpr, batching
and gradient), key(dtype=), wrap_key_data(dtype=), choice(mode=) against JAX's
numbers, dtype defaults and warnings, and out_sharding."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.numpy as lnp
import lamella.random as jr


def test_random_gamma_p_is_a_primitive_with_rules():
    k = jr.key(0)
    jaxpr = str(lc.make_jaxpr(lambda key, a: jr.gamma(key, a))(k, np.ones(2, np.float32)))
    assert "random_gamma[log_space=False]" in jaxpr
    words = jr.key_data(jr.split(k, 2))
    direct = jr.random_gamma_p.bind(words, lnp.float32([1.0, 2.0]), log_space=False)
    # JAX 0.10.2's numbers for gamma(key(0), [1, 2]).
    np.testing.assert_allclose(np.asarray(direct), [0.6184863, 1.7599413], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(jr.gamma(k, lnp.float32([1.0, 2.0]))),
                               np.asarray(direct), rtol=0)
    keys, alphas = jr.split(k, 3), lnp.float32([1.0, 2.0, 3.0])
    batched = lc.vmap(lambda kk, a: jr.gamma(kk, a))(keys, alphas)
    np.testing.assert_allclose(np.asarray(batched), [0.6031933, 3.9326215, 3.189435], rtol=1e-6)
    np.testing.assert_allclose(float(lc.grad(lambda a: jr.gamma(k, a, (3,)).sum())(2.0)),
                               2.7869487, rtol=1e-5)
    with pytest.raises(TypeError, match=r"alphas.shape \+ \(2,\)"):
        jr.random_gamma_p.bind(words, lnp.float32([1.0, 2.0, 3.0]), log_space=False)


def test_key_and_wrap_key_data_take_a_dtype():
    assert str(jr.key(0, dtype=jr.key_dtype()).dtype) == "key<fry>"
    assert str(jr.key(0, dtype="threefry2x32").dtype) == "key<fry>"
    wrapped = jr.wrap_key_data(np.zeros(2, np.uint32), dtype=jr.key_impl(jr.key(1)))
    assert wrapped.shape == ()
    with pytest.raises(TypeError, match="either impl or dtype"):
        jr.key(0, impl="threefry2x32", dtype=jr.key_dtype())


def test_choice_mode_reaches_the_gumbel_sampler():
    k, p = jr.key(0), lnp.float32([0.1, 0.2, 0.3, 0.25, 0.15])
    # JAX 0.10.2's numbers: mode matters only without replacement with p.
    for mode in (None, "low", "high"):
        assert jr.choice(k, 5, (3,), mode=mode).tolist() == [4, 0, 2]
        assert jr.choice(k, 5, (3,), p=p, mode=mode).tolist() == [0, 0, 3]
    assert jr.choice(k, 5, (3,), replace=False, p=p, mode="low").tolist() == [1, 0, 3]
    assert jr.choice(k, 5, (3,), replace=False, p=p, mode="high").tolist() == [2, 3, 4]
    with pytest.raises(ValueError, match="mode must be"):
        jr.choice(k, 5, (3,), replace=False, p=p, mode="bad")


def test_dtype_defaults_warnings_and_sharding():
    k = jr.key(0)
    assert jr.normal(k, (2,)).dtype == np.float32 and jr.randint(k, (2,), 0, 3).dtype == np.int32
    with pytest.warns(UserWarning, match="float64 requested in normal"):
        assert jr.normal(k, (2,), lnp.float64).dtype == np.float32
    with pytest.raises(lnp.TypePromotionError, match="cannot safely cast"):
        jr.lognormal(k, shape=(2,), dtype=lnp.float16)  # JAX's float32 default sigma
    with pytest.raises(TypeError, match="argument of uniform only supports instances of "
                                        "`NamedSharding` or `PartitionSpec`"):
        jr.uniform(k, (2,), out_sharding="x")
