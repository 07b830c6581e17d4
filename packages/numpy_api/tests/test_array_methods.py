"""Methods and protocols of Arrays and tracers (x.sum(), x.reshape(...), iteration,
view, DLPack, __array_namespace__), and the issue's bad-input errors through the
public namespace."""

import numpy as np
import pytest

import lamella.core as lc
import lamella.numpy as lnp
from lamella.core.trace import Tracer

X = np.arange(12, dtype=np.float32).reshape(3, 4) - 4.5

METHODS = [
    ("sum", (), {}), ("sum", (0,), {"keepdims": True}), ("mean", (1,), {}),
    ("max", (), {}), ("min", (0,), {}), ("argmax", (1,), {}), ("argmin", (), {}),
    ("prod", (0,), {}), ("std", (), {"ddof": 1}), ("var", (1,), {}),
    ("cumsum", (1,), {}), ("cumprod", (0,), {}), ("all", (), {}), ("any", (0,), {}),
    ("clip", (-1, 2), {}), ("round", (), {}), ("conj", (), {}), ("flatten", (), {}),
    ("ravel", (), {}), ("squeeze", (), {}), ("swapaxes", (0, 1), {}), ("trace", (), {}),
    ("diagonal", (), {}), ("sort", (1,), {}), ("argsort", (0,), {}), ("copy", (), {}),
    ("repeat", (2,), {"axis": 0}), ("take", (np.int32([0, 2]),), {"axis": 1}),
    ("ptp", (0,), {}), ("dot", (X.T,), {}), ("nonzero", (), {}),
]


@pytest.mark.parametrize("name, args, kwargs", METHODS, ids=[m[0] for m in METHODS])
def test_methods_match_numpy_on_arrays_and_tracers(name, args, kwargs):
    # ndarray.sort works in place and NumPy 2 has no ndarray.ptp: use the functions.
    reference = getattr(np, name) if name in ("sort", "ptp") else getattr(X, name)
    want = reference(X, *args, **kwargs) if name in ("sort", "ptp") else reference(*args, **kwargs)
    got = getattr(lnp.asarray(X), name)(*args, **kwargs)
    for g, w in zip(got if isinstance(got, tuple) else [got],
                    want if isinstance(want, tuple) else [want]):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-6)
    if name != "nonzero":  # data-dependent shape: needs concrete input
        traced = lc.jit(lambda x: getattr(x, name)(*args, **kwargs))(X)
        np.testing.assert_allclose(np.asarray(traced), want, rtol=1e-6)


def test_shape_methods_accept_numpy_spellings():
    x = lnp.asarray(X)
    assert x.reshape(2, 6).shape == x.reshape((2, 6)).shape == (2, 6)
    assert x.reshape(-1).shape == (12,)
    assert x.T.shape == x.transpose().shape == x.transpose(1, 0).shape == (4, 3)
    assert x.transpose((1, 0)).shape == (4, 3)
    assert lnp.ones((2, 3, 4)).mT.shape == (2, 4, 3)
    assert x.astype(np.int8).dtype == np.int8 and x.astype(lnp.float16).dtype == np.float16
    assert x.nbytes == 48 and x.itemsize == 4
    assert x.item(1) == X.item(1) and x.tolist() == X.tolist()
    c = lnp.asarray(np.complex64([1 + 2j]))
    assert float(c.real[0]) == 1 and float(c.imag[0]) == 2


def test_iteration_len_and_containment():
    x = lnp.asarray(X)
    rows = list(x)
    assert len(rows) == len(x) == 3
    np.testing.assert_array_equal(np.asarray(rows[2]), X[2])
    with pytest.raises(TypeError, match="0-d"):
        iter(lnp.asarray(1.0))
    assert 3.5 in x and 100.0 not in x
    # Under a trace, iteration unstacks along the first axis.
    total = lc.jit(lambda x: sum(row.sum() for row in x))(X)
    assert float(total) == pytest.approx(float(X.sum()))


def test_view_reinterprets_bits():
    x = lnp.asarray(np.float32([1.0, -2.0]))
    np.testing.assert_array_equal(np.asarray(x.view(np.int32)), np.float32([1, -2]).view(np.int32))
    np.testing.assert_array_equal(np.asarray(x.view(np.uint16)),
                                  np.float32([1, -2]).view(np.uint16))
    y = lnp.asarray(np.int16([1, 2, 3, 4]))
    np.testing.assert_array_equal(np.asarray(y.view(np.int32)),
                                  np.int16([1, 2, 3, 4]).view(np.int32))
    with pytest.raises(ValueError, match="multiple of 2"):
        lnp.asarray(np.int16([1, 2, 3])).view(np.int32)


def test_protocols():
    x = lnp.asarray(X)
    assert x.__array_namespace__() is lnp
    assert lnp.__array_api_version__ == "2023.12"
    np.testing.assert_array_equal(np.asarray(x), X)
    np.testing.assert_array_equal(np.from_dlpack(x), X)
    np.testing.assert_array_equal(np.asarray(lnp.from_dlpack(X)), X)
    info = lnp.__array_namespace_info__()
    assert info.default_dtypes()["integral"] == np.int32
    assert "float32" in info.dtypes(kind="real floating")
    assert lnp.isscalar(1.0) and not lnp.isscalar(X) and lnp.iscomplexobj(np.complex64(1))


def test_methods_are_installed_on_tracers():
    seen = []

    def f(x):
        seen.append(isinstance(x, Tracer))
        return x.reshape(4, 3).T.sum(axis=0).astype(np.float16)

    np.testing.assert_allclose(np.asarray(lc.jit(f)(X)), X.reshape(4, 3).T.sum(0), rtol=1e-3)
    g = lc.grad(lambda x: (x.reshape(-1) ** 2).mean())(X)
    np.testing.assert_allclose(np.asarray(g), 2 * X / X.size, rtol=1e-6)
    assert seen == [True]


# --- the bad-input cases, through the public namespace --------------------------
def test_in_place_operators_say_arrays_are_immutable():
    x = lnp.asarray(X)
    with pytest.raises(TypeError, match=r"immutable.*\.at\[index\]\.set"):
        x[0] = 1.0

    def f(x):
        x[0, 0] = 2.0
        return x
    with pytest.raises(TypeError, match="immutable"):
        lc.jit(f)(X)


def test_broadcast_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"\(3,4\).*\(5,\)|\(3, 4\).*\(5,\)"):
        lnp.add(X, np.ones(5, np.float32))
    with pytest.raises(ValueError, match=r"\(3,4\).*\(2,\)|\(3, 4\).*\(2,\)"):
        lnp.asarray(X) * lnp.ones(2)


def test_out_of_range_axis_is_an_axis_error():
    with pytest.raises(np.exceptions.AxisError, match="axis 2 is out of bounds"):
        lnp.sum(X, axis=2)
    with pytest.raises(np.exceptions.AxisError):
        lnp.concatenate([X, X], axis=-3)
    with pytest.raises(np.exceptions.AxisError):
        lnp.asarray(X).cumsum(axis=5)


def test_boolean_mask_under_jit_suggests_where_or_size():
    with pytest.raises(IndexError, match=r"where.*size="):
        lc.jit(lambda x: x[x > 0])(X)
    np.testing.assert_array_equal(np.asarray(lnp.asarray(X)[X > 0]), X[X > 0])


def test_float_index_is_rejected():
    with pytest.raises(TypeError, match="integer"):
        lnp.asarray(X)[1.5]


def test_wrong_dtype_argument_is_named():
    with pytest.raises(TypeError, match="not understood|data type"):
        lnp.zeros(3, dtype="float33")
    with pytest.raises(TypeError):
        lnp.ones(2).astype("no such type")


def test_to_device_commits_to_the_device():
    from lamella import lax
    x = lnp.ones(2)
    assert not x.committed and x.to_device(lax.devices()[0]).committed
