"""Reductions and statistics against NumPy: values over shapes (0-d, empty, up to
3-D), axes (None, int, negative, tuple), keepdims and dtypes, with JAX's result
dtypes written out; `where=`, `initial=`, ddof; NaN-ignoring variants; quantile
methods; weighted averages; errors; and gradients, vmap and jit through `check`."""

import warnings

import ml_dtypes
import numpy as np
import pytest
from checks import check_derivatives, check_values, check_vmap
from hypothesis import given, settings
from hypothesis import strategies as st

import lamella.core as lc
from lamella.core.trace import aval_of
from lamella.numpy import reductions as r
from lamella.numpy.util import AxisError

BF16 = np.dtype(ml_dtypes.bfloat16)
SHAPES = [(), (0,), (4,), (2, 3), (0, 3), (2, 3, 2)]
FEW = settings(max_examples=10, deadline=None)


def jitted(fn, *args, **kwargs):
    """fn(*args, **kwargs) under jit: one compile per case instead of one per primitive."""
    return lc.jit(lambda *a: fn(*a, **kwargs))(*args)


@st.composite
def shape_axis(draw, shapes=SHAPES):
    shape = draw(st.sampled_from(shapes))
    nd = len(shape)
    if nd == 0:
        return shape, draw(st.sampled_from([None, ()]))
    single = st.integers(-nd, nd - 1)
    several = st.lists(st.integers(0, nd - 1), min_size=1, max_size=nd, unique=True).map(
        lambda axes: tuple(a - nd if i % 2 else a for i, a in enumerate(axes)))
    return shape, draw(st.one_of(st.none(), single, several))


def data(shape, dtype, seed, nan_fraction=0.0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -3, 4, shape).astype(dtype)
    x = rng.uniform(-2, 2, shape)
    if dtype.kind == "c":
        x = x + 1j * rng.uniform(-2, 2, shape)
    x = x.astype(dtype)
    if nan_fraction:
        x[rng.random(shape) < nan_fraction] = np.nan
    return x


def expect(got, want, dtype, tol=None):
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    if np.dtype(dtype).kind in "biu":
        np.testing.assert_array_equal(got, want)
        return
    if tol is None:
        tol = 2e-2 if np.dtype(dtype).itemsize <= 2 else 2e-5
    np.testing.assert_allclose(got.astype(np.complex128 if got.dtype.kind == "c" else
                                          np.float64), want, rtol=tol, atol=tol,
                               equal_nan=True)


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


def wide(x):
    """x in float64/complex128/int64 for a NumPy reference."""
    x = np.asarray(x)
    return x.astype(np.complex128 if x.dtype.kind == "c" else np.int64 if
                    x.dtype.kind in "biu" else np.float64)


def reduces_empty(shape, axis):
    axes = range(len(shape)) if axis is None else np.atleast_1d(axis)
    return any(shape[a] == 0 for a in axes)


# --- sum, prod, mean, max, min, all, any: values and JAX's result dtypes -----------------
RESULT_DTYPES = {
    # input: (sum/prod, mean, max/min)
    "bool": ("int32", "float32", "bool"),
    "int8": ("int32", "float32", "int8"),
    "uint8": ("uint32", "float32", "uint8"),
    "int32": ("int32", "float32", "int32"),
    "float16": ("float16", "float16", "float16"),
    "bfloat16": ("bfloat16", "bfloat16", "bfloat16"),
    "float32": ("float32", "float32", "float32"),
    "complex64": ("complex64", "complex64", None),
}
REDUCTIONS = [
    ("sum", np.sum, 0), ("prod", np.prod, 0), ("mean", np.mean, 1),
    ("max", np.max, 2), ("min", np.min, 2), ("amax", np.amax, 2),
    ("all", np.all, None), ("any", np.any, None),
]


@pytest.mark.parametrize("name, ref, column", REDUCTIONS, ids=[t[0] for t in REDUCTIONS])
@FEW
@given(sa=shape_axis(), keepdims=st.booleans(), dtype=st.sampled_from(list(RESULT_DTYPES)),
       seed=st.integers(0, 2**16))
def test_reductions_vs_numpy(name, ref, column, sa, keepdims, dtype, seed):
    shape, axis = sa
    dtype = BF16 if dtype == "bfloat16" else np.dtype(dtype)
    out_dtype = "bool" if column is None else RESULT_DTYPES[dtype.name][column]
    if out_dtype is None or name in ("max", "min", "amax") and reduces_empty(shape, axis):
        return
    x = data(shape, dtype, seed)
    got = jitted(getattr(r, name), x, axis=axis, keepdims=keepdims)
    want = quiet(ref, wide(x), axis=axis, keepdims=keepdims)
    expect(got, np.asarray(want).astype(np.dtype(out_dtype)) if out_dtype == "bool" else
           want, out_dtype)


@pytest.mark.parametrize("name, ref", [("sum", np.sum), ("prod", np.prod), ("max", np.max),
                                       ("min", np.min), ("mean", np.mean), ("all", np.all),
                                       ("any", np.any), ("var", np.var), ("std", np.std)])
@FEW
@given(sa=shape_axis([(4,), (2, 3), (2, 3, 2)]), keepdims=st.booleans(),
       seed=st.integers(0, 2**16), mask_shape=st.sampled_from(["full", "last"]))
def test_where(name, ref, sa, keepdims, seed, mask_shape):
    shape, axis = sa
    x = data(shape, np.float32, seed)
    rng = np.random.default_rng(seed + 1)
    mask = rng.random(shape if mask_shape == "full" else shape[-1:]) < 0.7
    extra = {"initial": -5.0} if name == "max" else {"initial": 5.0} if name == "min" else {}
    got = jitted(lambda v, m: getattr(r, name)(v, axis=axis, keepdims=keepdims, where=m,
                                              **extra), x, mask)
    want = quiet(ref, wide(x), axis=axis, keepdims=keepdims, where=mask, **extra)
    expect(got, want, "bool" if name in ("all", "any") else "float32")


@pytest.mark.parametrize("name, ref", [("sum", np.sum), ("prod", np.prod),
                                       ("max", np.max), ("min", np.min)])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_initial(name, ref, dtype):
    x = data((2, 3), dtype, 0)
    for axis in (None, 0, (0, 1)):
        expect(getattr(r, name)(x, axis=axis, initial=2), ref(x, axis=axis, initial=2), dtype)
    empty = np.zeros((0, 3), dtype)
    expect(getattr(r, name)(empty, axis=0, initial=2), ref(empty, axis=0, initial=2), dtype)


def test_dtype_argument_and_promotion_flags():
    i8 = np.int8([100, 100, 100])
    expect(r.sum(i8), 300, "int32")
    expect(r.sum(i8, promote_integers=False), np.int8(44), "int8")
    expect(r.sum(i8, dtype=np.int16), 300, "int16")
    expect(r.sum(np.float32([1.5, 2]), dtype=np.int32), 3, "int32")
    expect(r.prod(np.array([True, True]), dtype=bool), True, "bool")
    expect(r.sum(np.array([True, False]), dtype=bool), True, "bool")
    expect(r.mean(np.int32([1, 2]), dtype=np.float16), 1.5, "float16")
    expect(r.mean(np.float16([1, 2])), 1.5, "float16")
    # Half precision accumulates in float32: 4096 + 1 + 1 would round back to 4096.
    expect(r.sum(np.float16([2048, 1, 1, 1, 1])), 2052, "float16", tol=0)
    expect(r.sum(3.0), 3.0, "float32")
    assert not aval_of(r.sum(3.0)).weak_type  # reductions give strongly typed results
    with lc.enable_x64():
        expect(r.sum(np.int8([1, 2])), 3, "int64")
        expect(r.mean(np.int32([1, 2])), 1.5, "float64")
        expect(r.argmax(np.float32([1, 2])), 1, "int64")


def test_empty_reductions():
    empty = np.zeros((0,), np.float32)
    expect(r.sum(empty), 0, "float32")
    expect(r.prod(np.zeros((0, 2), np.int8), axis=0), [1, 1], "int32")
    expect(quiet(r.mean, empty), np.nan, "float32")
    expect(r.all(empty), True, "bool")
    expect(r.any(empty), False, "bool")
    expect(r.max(np.zeros((2, 0)), axis=0), np.zeros((0,)), "float32")


# --- var and std -----------------------------------------------------------------------------
@pytest.mark.parametrize("name, ref", [("var", np.var), ("std", np.std)])
@FEW
@given(sa=shape_axis([(), (4,), (2, 3), (2, 3, 2)]), keepdims=st.booleans(),
       dtype=st.sampled_from(["int32", "float16", "float32", "complex64"]),
       ddof=st.sampled_from([0, 1]), seed=st.integers(0, 2**16))
def test_var_std(name, ref, sa, keepdims, dtype, ddof, seed):
    shape, axis = sa
    x = data(shape, dtype, seed)
    out_dtype = {"int32": "float32", "complex64": "float32"}.get(dtype, dtype)
    got = jitted(getattr(r, name), x, axis=axis, keepdims=keepdims, ddof=ddof)
    want = quiet(ref, wide(x), axis=axis, keepdims=keepdims, ddof=ddof)
    expect(got, want, out_dtype)


def test_correction_alias():
    x = data((5,), np.float32, 0)
    expect(r.var(x, correction=1), np.var(x, ddof=1), "float32")
    expect(r.std(x, correction=2), np.std(x, ddof=2), "float32")
    with pytest.raises(ValueError, match="ddof and correction"):
        r.var(x, ddof=1, correction=1)


# --- NaN-ignoring variants -------------------------------------------------------------------
NAN_FUNCS = [
    ("nansum", np.nansum), ("nanprod", np.nanprod), ("nanmean", np.nanmean),
    ("nanvar", np.nanvar), ("nanstd", np.nanstd), ("nanmax", np.nanmax),
    ("nanmin", np.nanmin), ("nanmedian", np.nanmedian),
]


@pytest.mark.parametrize("name, ref", NAN_FUNCS, ids=[t[0] for t in NAN_FUNCS])
@FEW
@given(sa=shape_axis([(4,), (2, 3), (3, 2, 2)]), keepdims=st.booleans(),
       seed=st.integers(0, 2**16))
def test_nan_reductions(name, ref, sa, keepdims, seed):
    shape, axis = sa
    x = data(shape, np.float32, seed, nan_fraction=0.4)
    got = jitted(getattr(r, name), x, axis=axis, keepdims=keepdims)
    expect(got, quiet(ref, wide(x), axis=axis, keepdims=keepdims), "float32")


def test_nan_reductions_all_nan_and_ints():
    x = np.float32([[np.nan, np.nan], [1, np.nan]])
    expect(r.nanmax(x, axis=1), [np.nan, 1], "float32")
    expect(r.nanmin(x, axis=1, initial=0), [0, 0], "float32")
    expect(r.nansum(x, axis=1), [0, 1], "float32")
    expect(r.nanprod(x, axis=1), [1, 1], "float32")
    expect(r.nanmean(x, axis=1), [np.nan, 1], "float32")
    expect(r.nanvar(x, axis=1, ddof=1), [np.nan, np.nan], "float32")
    expect(r.nanargmax(x, axis=1), [-1, 0], "int32")
    expect(r.nanargmin(x, axis=1, keepdims=True), [[-1], [0]], "int32")
    expect(r.nanmean(np.int32([1, 2])), 1.5, "float32")
    expect(r.nanmax(np.int32([1, 2])), 2, "int32")
    expect(r.nansum(np.array([True, True])), 2, "int32")


@FEW
@given(sa=shape_axis([(5,), (2, 3), (3, 2, 2)]), seed=st.integers(0, 2**16))
def test_nanargmax_nanargmin(sa, seed):
    shape, axis = sa
    if isinstance(axis, tuple):
        axis = axis[0]
    x = data(shape, np.float32, seed, nan_fraction=0.3)
    if np.isnan(x).all(axis=axis).any():
        return
    expect(jitted(r.nanargmax, x, axis=axis), np.nanargmax(x, axis=axis), "int32")
    expect(jitted(r.nanargmin, x, axis=axis), np.nanargmin(x, axis=axis), "int32")


# --- argmax and argmin --------------------------------------------------------------------------
@pytest.mark.parametrize("name, ref", [("argmax", np.argmax), ("argmin", np.argmin)])
@FEW
@given(sa=shape_axis([(5,), (2, 3), (3, 2, 2)]), keepdims=st.booleans(),
       dtype=st.sampled_from(["bool", "int32", "float16", "float32"]),
       nan=st.booleans(), seed=st.integers(0, 2**16))
def test_argmax_argmin(name, ref, sa, keepdims, dtype, nan, seed):
    shape, axis = sa
    if isinstance(axis, tuple):
        axis = axis[0]
    x = data(shape, dtype, seed, nan_fraction=0.2 if nan and dtype != "bool" and
             dtype != "int32" else 0)
    got = jitted(getattr(r, name), x, axis=axis, keepdims=keepdims)
    expect(got, ref(x, axis=axis, keepdims=keepdims), "int32")


# --- cumulative reductions ------------------------------------------------------------------
CUMULATIVE = [("cumsum", np.cumsum), ("cumprod", np.cumprod),
              ("nancumsum", np.nancumsum), ("nancumprod", np.nancumprod)]


@pytest.mark.parametrize("name, ref", CUMULATIVE, ids=[t[0] for t in CUMULATIVE])
@FEW
@given(shape=st.sampled_from([(), (0,), (4,), (2, 3), (2, 2, 2)]),
       axis_pick=st.integers(-3, 3), dtype=st.sampled_from(["bool", "int8", "int32",
                                                           "float16", "float32"]),
       seed=st.integers(0, 2**16))
def test_cumulative(name, ref, shape, axis_pick, dtype, seed):
    axis = None if not shape or axis_pick == 3 else axis_pick % len(shape) - (
        len(shape) if axis_pick < 0 else 0)
    nan_fraction = 0.3 if name.startswith("nan") and dtype.startswith("float") else 0
    x = data(shape, dtype, seed, nan_fraction)
    out_dtype = "int32" if dtype == "bool" else dtype
    got = jitted(getattr(r, name), x, axis=axis)
    expect(got, ref(wide(x), axis=axis), out_dtype, tol=5e-2 if dtype == "float16" else None)


def test_cumulative_dtype_argument():
    x = np.int32([1, 0, 2])
    expect(r.cumsum(x, dtype=bool), [True, True, True], "bool")
    expect(r.cumsum(x, dtype=np.float32), [1, 1, 3], "float32")
    expect(r.cumprod(np.int8([2, 3]), dtype=np.int16), [2, 6], "int16")


@pytest.mark.parametrize("name, ref, start", [("cumulative_sum", np.cumsum, 0),
                                              ("cumulative_prod", np.cumprod, 1)])
def test_array_api_cumulative(name, ref, start):
    fn = getattr(r, name)
    x = np.int8([[1, 2, 3], [2, 1, 1]])
    expect(fn(x, axis=1), ref(x, axis=1), "int32")  # integers widen, unlike cumsum
    expect(fn(x, axis=0, include_initial=True),
           np.concatenate([np.full((1, 3), start), ref(x, axis=0)]), "int32")
    expect(fn(np.array([True, True]), include_initial=True),
           [start, 1, 2 if start == 0 else 1], "int32")
    expect(fn(np.float32([1, 2]), dtype=np.float16), ref([1., 2.]), "float16")
    with pytest.raises(ValueError, match="axis must be given"):
        fn(x)
    with pytest.raises(ValueError, match="at least one dimension"):
        fn(np.float32(1))


# --- quantiles -------------------------------------------------------------------------------
METHODS = ["linear", "lower", "higher", "midpoint", "nearest"]


@pytest.mark.parametrize("method", METHODS)
@FEW
@given(sa=shape_axis([(4,), (5,), (2, 3), (3, 2, 2)]), keepdims=st.booleans(),
       q=st.sampled_from([0.0, 0.5, 1.0, 0.3, (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)]),
       nan=st.sampled_from(["none", "quantile", "nanquantile"]), seed=st.integers(0, 2**16))
def test_quantile_methods(method, sa, keepdims, q, nan, seed):
    shape, axis = sa
    fn, ref = (r.nanquantile, np.nanquantile) if nan == "nanquantile" else \
        (r.quantile, np.quantile)
    x = data(shape, np.float32, seed, nan_fraction=0.3 if nan != "none" else 0)
    q = np.float32(q)
    got = jitted(fn, x, q, axis=axis, method=method, keepdims=keepdims)
    want = float32_rank_quantile(x, q, axis, method, keepdims, skip_nan=nan == "nanquantile")
    expect(got, want, "float32")
    # The reference is NumPy's wherever the two ranks select the same values: always
    # for "linear" (continuous in the rank), and for quarters, whose ranks are exact.
    numpy_want = quiet(ref, wide(x), np.float64(q), axis=axis, method=method, keepdims=keepdims)
    if method == "linear" or np.all(np.atleast_1d(q) * 4 % 1 == 0):
        np.testing.assert_allclose(want, numpy_want, rtol=1e-6, atol=1e-6)


def float32_rank_quantile(x, q, axis, method, keepdims, skip_nan):
    """NumPy's quantile with the rank q (n - 1) computed in float32, as JAX and
    lamella compute it for float32 input: NumPy's float64 rank of float32(0.3) over
    11 values is 3.0000001, and "higher" then takes the next value where float32's
    3.0 does not. The values themselves are interpolated in float64."""
    axes = tuple(range(x.ndim)) if axis is None else tuple(np.atleast_1d(axis) % max(x.ndim, 1))
    kept = [d for d in range(x.ndim) if d not in axes]
    rows = np.transpose(x, kept + list(axes)).reshape(-1, int(np.prod([x.shape[d] for d in axes])))
    qs = np.atleast_1d(q).astype(np.float32)
    out = np.empty((qs.size, rows.shape[0]))
    for j, row in enumerate(rows):
        values = np.sort(row[~np.isnan(row)] if skip_nan else row).astype(np.float64)
        for i, qi in enumerate(qs):
            if values.size == 0 or np.isnan(values).any():
                out[i, j] = np.nan
                continue
            rank = np.float32(qi) * np.float32(values.size - 1)  # float32 arithmetic
            lo, hi = int(np.floor(rank)), int(np.ceil(rank))
            out[i, j] = {
                "linear": values[lo] + (float(rank) - lo) * (values[hi] - values[lo]),
                "lower": values[lo], "higher": values[hi],
                "midpoint": (values[lo] + values[hi]) / 2,
                "nearest": values[int(np.round(rank))],
            }[method]
    reduced = [1 if d in axes else x.shape[d] for d in range(x.ndim)] if keepdims else \
        [x.shape[d] for d in kept]
    return out.reshape(np.shape(q) + tuple(reduced))


def test_quantile_dtypes_percentile_median():
    x = np.int32([[3, 1, 4], [1, 5, 9]])
    expect(jitted(r.median, x, axis=1), np.median(x, axis=1), "float32")
    expect(jitted(r.median, x, keepdims=True), np.median(x, keepdims=True), "float32")
    expect(jitted(r.percentile, x, np.float32([10, 50]), axis=0),
           np.percentile(x, [10, 50], axis=0), "float32")
    expect(jitted(r.nanpercentile, np.float32([1, np.nan, 3]), 25), 1.5, "float32")
    expect(jitted(r.quantile, np.float16([1, 2, 3]), 0.5), 2, "float16")  # weak q
    expect(jitted(r.quantile, np.float16([1, 2, 3]), np.float32(0.5)), 2, "float32")
    expect(jitted(r.nanmedian, np.float32([[np.nan, np.nan], [1, 2]]), axis=1), [np.nan, 1.5],
           "float32")
    expect(jitted(r.quantile, np.zeros((0,), np.float32), 0.5), np.nan, "float32")
    with pytest.raises(ValueError, match="method must be one of"):
        r.quantile(x, 0.5, method="weibull")
    with pytest.raises(ValueError, match="rank <= 1"):
        r.quantile(x, np.float32([[0.5]]))
    with pytest.raises(ValueError, match="complex"):
        r.quantile(np.complex64([1]), 0.5)


# --- average, count_nonzero, ptp --------------------------------------------------------------
@FEW
@given(sa=shape_axis([(4,), (2, 3), (3, 2, 2)]), keepdims=st.booleans(),
       kind=st.sampled_from(["none", "full", "1d"]), returned=st.booleans(),
       seed=st.integers(0, 2**16))
def test_average(sa, keepdims, kind, returned, seed):
    shape, axis = sa
    if kind == "1d" and not isinstance(axis, int):
        axis = -1
    x = data(shape, np.float32, seed)
    w = None if kind == "none" else np.random.default_rng(seed).uniform(
        0.5, 2, shape if kind == "full" else shape[axis]).astype(np.float32)
    got = jitted(lambda v, w: r.average(v, axis=axis, weights=w, returned=returned,
                                        keepdims=keepdims), x, w)
    want = np.average(wide(x), axis=axis, weights=w, returned=returned, keepdims=keepdims)
    for g, e in zip(got, want) if returned else [(got, want)]:
        expect(g, e, "float32")


def test_average_ints_and_errors():
    expect(r.average(np.int32([1, 2, 6])), 3, "float32")
    expect(r.average(np.int32([1, 3]), weights=np.int32([3, 1])), 1.5, "float32")
    x = np.ones((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"weights \(2,\).*a \(2, 3\)"):
        r.average(x, axis=1, weights=np.ones(2, np.float32))
    with pytest.raises(ValueError, match="axis must be specified.*differ"):
        r.average(x, weights=np.ones(3, np.float32))
    with pytest.raises(ValueError, match=r"1-D weights.*\(2, 3\).*\(1, 3\)"):
        r.average(x, axis=1, weights=np.ones((1, 3), np.float32))
    with pytest.raises(ValueError, match="single axis"):
        r.average(x, axis=(0, 1), weights=np.ones(3, np.float32))


@FEW
@given(sa=shape_axis(), keepdims=st.booleans(),
       dtype=st.sampled_from(["bool", "int32", "float32", "complex64"]),
       seed=st.integers(0, 2**16))
def test_count_nonzero(sa, keepdims, dtype, seed):
    shape, axis = sa
    x = data(shape, dtype, seed)
    expect(jitted(r.count_nonzero, x, axis=axis, keepdims=keepdims),
           np.count_nonzero(x, axis=axis, keepdims=keepdims), "int32")


def test_ptp():
    x = data((3, 4), np.int32, 0)
    expect(r.ptp(x), np.ptp(x), "int32")
    expect(r.ptp(x, axis=1, keepdims=True), np.ptp(x, axis=1, keepdims=True), "int32")
    expect(r.ptp(np.float32([1, np.nan])), np.nan, "float32")


def test_complex_sum_prod_mean():
    z = data((2, 3), np.complex64, 0)
    expect(r.sum(z, axis=1), np.sum(z, axis=1), "complex64")
    expect(r.prod(z, axis=0), np.prod(wide(z), axis=0), "complex64")
    expect(r.mean(z), np.mean(z), "complex64")
    expect(r.var(z, axis=0), np.var(wide(z), axis=0), "float32")
    expect(r.any(np.complex64([1j, 0])), True, "bool")


def test_nan_is_extremum():
    x = np.float32([1, np.nan, 3, np.nan])
    expect(r.max(x), np.nan, "float32")
    expect(r.min(x), np.nan, "float32")
    expect(r.argmax(x), 1, "int32")
    expect(r.argmin(x), 1, "int32")


# --- errors ---------------------------------------------------------------------------------------
def test_errors():
    x = np.ones((2, 3), np.float32)
    for fn in (r.sum, r.max, r.mean, r.var, r.all, r.count_nonzero, r.nansum):
        with pytest.raises(AxisError, match="axis 2 is out of bounds"):
            fn(x, axis=2)
    with pytest.raises(AxisError):
        r.argmax(x, axis=-3)
    with pytest.raises(AxisError):
        r.cumsum(x, axis=2)
    with pytest.raises(ValueError, match="repeated axis"):
        r.sum(x, axis=(0, -2))
    for fn in (r.sum, r.mean, r.max, r.var, r.cumsum, r.argmax, r.nanmean, r.quantile):
        args = (x, 0.5) if fn is r.quantile else (x,)
        with pytest.raises(NotImplementedError, match="The 'out' argument to .* not supported"):
            fn(*args, out=x)
    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum "
                                         "which has no identity"):
        r.max(np.zeros((0,), np.float32))
    with pytest.raises(ValueError, match="minimum which has no identity"):
        r.min(np.zeros((2, 0), np.float32), axis=1)
    with pytest.raises(ValueError, match="to use a where mask one has to specify 'initial'"):
        r.max(x, where=x > 0)
    with pytest.raises(ValueError, match="empty sequence"):
        r.argmax(np.zeros((0, 2), np.float32), axis=0)
    with pytest.raises(ValueError, match=r"where mask of shape \(4,\).*\(2, 3\)"):
        r.sum(x, where=np.ones(4, bool))
    with pytest.raises(ValueError, match="initial value must be a scalar"):
        r.sum(x, initial=np.ones(2, np.float32))
    with pytest.raises(TypeError, match="lists and tuples are not accepted"):
        r.sum([1, 2])


# --- gradients, vmap, jit -----------------------------------------------------------------------
def check(fn, args, ref, diff_argnums=(0,), vmap=True):
    """Values against NumPy, jit against eager, float64 derivatives against central
    differences, and vmap against a loop. Jit is compared to a few ulps, not bit for bit:
    XLA may fuse a composite (contracting a*b + c into an FMA, reordering a sum)."""
    eager = check_values(fn, args, ref) if ref is not None else fn(*args)
    jit = lc.jit(fn)
    assert np.asarray(jit(*args)).dtype == np.asarray(eager).dtype
    np.testing.assert_allclose(np.asarray(jit(*args)), np.asarray(eager), rtol=1e-6, atol=1e-7)
    # Derivatives and batching of the jitted function: one compile per transformation.
    if diff_argnums:
        check_derivatives(jit, args, diff_argnums, rtol=1e-5, atol=1e-6)
    if vmap:
        check_vmap(jit, args)


X = np.float32([[0.3, -1.2, 2.1], [1.7, 0.4, -0.8]])
Q = np.float32([0.1, 0.45, 0.9])
W = np.float32([0.5, 2.0, 1.5])

GRAD_CASES = [
    ("sum", lambda x: r.sum(x, axis=1), lambda x: np.sum(x, axis=1), True),
    ("sum_where", lambda x: r.sum(x, axis=0, where=X > 0), None, False),
    ("prod", lambda x: r.prod(x, axis=0), lambda x: np.prod(x, axis=0), False),
    ("mean", lambda x: r.mean(x, axis=(0, 1)), np.mean, False),
    ("var", lambda x: r.var(x, axis=1, ddof=1), lambda x: np.var(x, axis=1, ddof=1), True),
    ("std", lambda x: r.std(x, axis=0, keepdims=True),
     lambda x: np.std(x, axis=0, keepdims=True), False),
    ("max", lambda x: r.max(x, axis=1), lambda x: np.max(x, axis=1), True),
    ("min", lambda x: r.min(x), np.min, False),
    ("cumsum", lambda x: r.cumsum(x, axis=1), lambda x: np.cumsum(x, axis=1), True),
    ("cumprod", lambda x: r.cumprod(x, axis=0), lambda x: np.cumprod(x, axis=0), False),
    ("median", lambda x: r.median(x, axis=1), lambda x: np.median(x, axis=1), True),
    ("nanmean", lambda x: r.nanmean(x, axis=0), lambda x: np.nanmean(x, axis=0), False),
    ("nansum", lambda x: r.nansum(x), np.nansum, False),
]


@pytest.mark.parametrize("name, fn, ref, vmap", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_grad_vmap_jit(name, fn, ref, vmap):
    check(fn, [X], ref, vmap=vmap)


def test_quantile_grads():
    check(lambda x, q: r.quantile(x, q, axis=1), [X, Q],
          lambda x, q: np.quantile(x, q, axis=1).astype(np.float32), diff_argnums=(0, 1))


def test_average_grads():
    check(lambda x, w: r.average(x, axis=1, weights=w), [X, W],
          lambda x, w: np.average(x, axis=1, weights=w), diff_argnums=(0, 1))


def test_vmap_argmax_and_cumulative_sum():
    check(lambda x: r.argmax(x, axis=1), [X], lambda x: np.argmax(x, axis=1), diff_argnums=None)
    check(lambda x: r.cumulative_sum(x, axis=0, include_initial=True), [X], None,
          diff_argnums=None)


def test_max_grad_splits_ties():
    g = lc.grad(lambda x: r.max(x))(np.float32([1, 3, 3]))
    np.testing.assert_allclose(g, [0, 0.5, 0.5])
