"""NumPy's ufunc objects, as jax.numpy has them: `lamella.numpy.ufunc`, `frompyfunc`,
and the fourteen functions jax.numpy makes ufuncs (`add`, `subtract`, `multiply`,
`maximum`, `minimum`, `logaddexp`, `logaddexp2`, the logical and bitwise
`and`/`or`/`xor`, and `negative`).

A ufunc is callable like the function it wraps and carries NumPy's methods:
`reduce`, `accumulate`, `at` (functional: it returns the updated array),
`outer` and `reduceat`. The built-in ufuncs use lax's reductions, cumulative
operations and scatters; any other ufunc (from `frompyfunc`) runs them as a
`lax.scan` that applies the function in NumPy's order, so every method works
under jit, grad and vmap.

>>> import numpy as np
>>> add.reduce(np.float32([1, 2, 3]))
Array(6., dtype=float32)
>>> subtract.accumulate(np.int32([10, 1, 2]))
Array([10,  9,  7], dtype=int32)
>>> add.at(np.zeros(3, np.float32), np.int32([0, 0, 2]), 1.0, inplace=False)
Array([2., 0., 1.], dtype=float32)
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
from lamella import lax
from lamella.core import ShapeDtypeStruct, eval_shape, stop_gradient
from lamella.core.trace import Tracer, aval_of
from lamella.numpy import manipulation, reductions
from lamella.numpy import ufuncs as _uf
from lamella.numpy.creation import arange, asarray, full, zeros
from lamella.numpy.dtypes import iinfo, promote_dtypes_inexact
from lamella.numpy.util import canonicalize_axis, check_arraylike, concrete_value
from lamella.numpy.vectorize import vectorize

__all__ = [
    "add", "bitwise_and", "bitwise_or", "bitwise_xor", "frompyfunc", "logaddexp",
    "logaddexp2", "logical_and", "logical_or", "logical_xor", "maximum", "minimum",
    "multiply", "negative", "subtract", "ufunc",
]


_PLAIN_OPERANDS = frozenset({lax.Array, np.ndarray, float, int, complex, bool})


def _no_out(name: str, out: Any) -> None:
    if out is not None:
        raise NotImplementedError(
            f"the out argument of {name}: lamella arrays are immutable, so ufuncs return "
            "their result instead of writing into `out`")


class ufunc:
    """A universal function: `func` applied elementwise with broadcasting, plus NumPy's
    methods `reduce`, `accumulate`, `at`, `outer` and `reduceat`.

    `call`, `reduce`, `accumulate`, `at` and `reduceat` optionally replace the
    generic implementations (which vectorize `func` and fold with `lax.scan`).

    >>> import numpy as np
    >>> add_twice = ufunc(lambda a, b: a + 2 * b, 2, 1, name="add_twice")
    >>> add_twice.accumulate(np.float32([1, 2, 3]))  # 1, 1 + 2*2, 5 + 2*3
    Array([ 1.,  5., 11.], dtype=float32)
    """

    def __init__(self, func: Callable[..., Any], /, nin: int, nout: int, *,
                 name: str | None = None, nargs: int | None = None, identity: Any = None,
                 call: Callable[..., Any] | None = None, reduce: Callable[..., Any] | None = None,
                 accumulate: Callable[..., Any] | None = None,
                 at: Callable[..., Any] | None = None,
                 reduceat: Callable[..., Any] | None = None):
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self.__doc__ = getattr(func, "__doc__", None) or ufunc.__doc__
        self._func = func
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs = self.nin if nargs is None else operator.index(nargs)
        self.identity = identity
        self._call = call or vectorize(func)
        self._reduce, self._accumulate, self._at, self._reduceat = (
            reduce, accumulate, at, reduceat)

    def __repr__(self) -> str:
        return f"<lamella.numpy.ufunc '{self.__name__}'>"

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __call__(self, *args: Any, out: None = None, where: None = None) -> Any:
        if out is not None or where is not None:
            what = "out" if out is not None else "where"
            raise NotImplementedError(
                f"the {what} argument of {self!r}: lamella arrays are immutable, so a ufunc "
                "call computes every element and returns it (use lamella.numpy.where to "
                "combine results)")
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} positional argument"
                            f"{'s' if self.nin != 1 else ''} but {len(args)} were given")
        for a in args:  # the common types first: this check is most of a call's overhead
            if type(a) not in _PLAIN_OPERANDS:
                check_arraylike(self.__name__, *args)
                break
        return self._call(*args)

    # --- reduce ---------------------------------------------------------------------
    def _require_binary(self, method: str) -> None:
        if self.nin != 2 or self.nout != 1:
            raise ValueError(f"{method} only supported for binary ufuncs (nin=2, nout=1); "
                             f"{self.__name__} has nin={self.nin}, nout={self.nout}")

    def reduce(self, a: Any, axis: int | None = 0, dtype: Any = None, out: None = None,
               keepdims: bool = False, initial: Any = None, where: Any = None) -> Any:
        """`a` folded with this binary ufunc along `axis` (None: all axes), starting from
        `initial` (default: the first element); `where` masks elements out (it needs
        `initial` unless the ufunc has an identity).

        >>> import numpy as np
        >>> multiply.reduce(np.float32([[1, 2], [3, 4]]), axis=1)
        Array([ 2., 12.], dtype=float32)
        """
        self._require_binary("reduce")
        _no_out(f"{self.__name__}.reduce", out)
        check_arraylike(f"{self.__name__}.reduce", a)
        if where is not None and initial is None and self.identity is None:
            raise ValueError(f"reduction operation {self.__name__!r} does not have an "
                             "identity, so to use a where mask one has to specify 'initial'.")
        if self._reduce is not None:
            return self._reduce(a, axis, dtype, keepdims, initial, where)
        return self._reduce_via_scan(a, axis, dtype, keepdims, initial, where)

    def _out_dtype(self, *dtypes: np.dtype) -> np.dtype:
        structs = [ShapeDtypeStruct((), dt) for dt in dtypes]
        result = eval_shape(self._call, *structs)
        return (result[0] if isinstance(result, tuple) else result).dtype

    def _reduce_via_scan(self, a: Any, axis: Any, dtype: Any, keepdims: bool, initial: Any,
                         where: Any) -> Any:
        a = asarray(a, dtype)
        shape = aval_of(a).shape
        axes = _reduced_axes(axis, len(shape))
        if where is not None:
            where = manipulation.broadcast_to(asarray(where, bool), shape)
            if initial is None:
                initial = self.identity
        x, kept_shape = _front_flattened(a, axes)
        mask = None if where is None else _front_flattened(where, axes)[0]
        out_dtype = self._out_dtype(aval_of(a).dtype, aval_of(a).dtype)
        if initial is None:
            if aval_of(x).shape[0] == 0:
                raise ValueError(f"zero-size array to reduction operation {self.__name__} "
                                 "which has no identity")
            carry = lax.convert_element_type(x[0], out_dtype)
            x = x[1:]
        else:
            carry = full(kept_shape, asarray(initial, out_dtype), out_dtype)

        def step(acc: Any, item: Any) -> tuple[Any, None]:
            xi, keep = item
            new = lax.convert_element_type(self._call(acc, xi), out_dtype)
            return (new if keep is None else lax.select(keep, new, acc)), None

        result, _ = lax.scan(step, carry, (x, mask))
        return _keep_dims(result, shape, axes) if keepdims else result

    # --- accumulate -----------------------------------------------------------------
    def accumulate(self, a: Any, axis: int = 0, dtype: Any = None, out: None = None) -> Any:
        """The running fold of `a` along `axis` (NumPy's `ufunc.accumulate`).

        >>> import numpy as np
        >>> maximum.accumulate(np.int32([1, 3, 2, 5]))
        Array([1, 3, 3, 5], dtype=int32)
        """
        self._require_binary("accumulate")
        _no_out(f"{self.__name__}.accumulate", out)
        check_arraylike(f"{self.__name__}.accumulate", a)
        if self._accumulate is not None:
            return self._accumulate(a, axis, dtype)
        return self._accumulate_via_scan(a, axis, dtype)

    def _accumulate_via_scan(self, a: Any, axis: Any, dtype: Any) -> Any:
        a = asarray(a, dtype)
        if axis is None:
            a, axis = manipulation.ravel(a), 0
        axis = canonicalize_axis(axis, len(aval_of(a).shape))
        out_dtype = self._out_dtype(aval_of(a).dtype, aval_of(a).dtype)
        x = manipulation.moveaxis(a, axis, 0)
        if aval_of(x).shape[0] == 0:
            return manipulation.moveaxis(lax.convert_element_type(x, out_dtype), 0, axis)
        first = lax.convert_element_type(x[0], out_dtype)

        def step(acc: Any, xi: Any) -> tuple[Any, Any]:
            new = lax.convert_element_type(self._call(acc, xi), out_dtype)
            return new, new

        _, rest = lax.scan(step, first, x[1:])
        out = lax.concatenate([lax.expand_dims(first, (0,)), rest], 0)
        return manipulation.moveaxis(out, 0, axis)

    # --- at -------------------------------------------------------------------------
    def at(self, a: Any, indices: Any, b: Any = None, /, *, inplace: bool = True) -> Any:
        """`a` with `a[indices] = ufunc(a[indices], b)` applied once per index, repeated
        indices included (NumPy's unbuffered `ufunc.at`). Arrays are immutable, so pass
        `inplace=False` and use the result, as in JAX.

        >>> import numpy as np
        >>> negative.at(np.float32([1, 2, 3]), np.int32([0, 2]), inplace=False)
        Array([-1.,  2., -3.], dtype=float32)
        """
        if inplace:
            raise NotImplementedError(
                f"{self.__name__}.at cannot work in place: lamella arrays are immutable. "
                f"Pass inplace=False and use the result: a = {self.__name__}.at(a, indices"
                f"{', b' if self.nin == 2 else ''}, inplace=False)")
        if self.nout != 1:
            raise ValueError(f"at only supported for ufuncs with one output; {self.__name__} "
                             f"has nout={self.nout}")
        if self.nin == 2 and b is None:
            raise TypeError(f"{self.__name__}.at needs the second operand `b`")
        if self.nin == 1 and b is not None:
            raise TypeError(f"{self.__name__}.at takes no second operand: {self.__name__} is "
                            "unary")
        if self.nin not in (1, 2):
            raise ValueError(f"at only supported for unary and binary ufuncs; "
                             f"{self.__name__} has nin={self.nin}")
        check_arraylike(f"{self.__name__}.at", a)
        if self._at is not None:
            return self._at(a, indices, b)
        return self._at_via_scan(a, indices, b)

    def _at_via_scan(self, a: Any, indices: Any, b: Any) -> Any:
        a = asarray(a)
        shape, size = aval_of(a).shape, math.prod(aval_of(a).shape)
        # The flat position of every element `indices` selects (-1 where it is out of
        # bounds: dropped, as updates drop them); NumPy's indexing does the work.
        grid = lax.reshape(arange(size, dtype=np.int32), shape)
        positions = grid.at[indices].get(mode="fill", fill_value=-1)
        positions = manipulation.ravel(positions)
        count = aval_of(positions).shape[0]
        if self.nin == 2:
            b = asarray(b)
            b_flat = manipulation.ravel(manipulation.broadcast_to(
                b, aval_of(grid.at[indices].get(mode="fill", fill_value=-1)).shape))
            out_dtype = self._out_dtype(aval_of(a).dtype, aval_of(b).dtype)
        else:
            b_flat = zeros((count,), np.int32)  # a placeholder the body ignores
            out_dtype = self._out_dtype(aval_of(a).dtype)
        flat = lax.convert_element_type(manipulation.ravel(a), out_dtype)

        def step(values: Any, item: Any) -> tuple[Any, None]:
            pos, operand = item
            valid = lax.ge(pos, np.int32(0))
            safe = lax.max(pos, np.int32(0))
            current = lax.dynamic_index_in_dim(values, safe, 0, keepdims=False)
            new = self._call(current, operand) if self.nin == 2 else self._call(current)
            new = lax.select(valid, lax.convert_element_type(new, out_dtype), current)
            return lax.dynamic_update_index_in_dim(values, new, safe, 0), None

        flat, _ = lax.scan(step, flat, (positions, b_flat))
        return lax.reshape(flat, shape)

    # --- outer ----------------------------------------------------------------------
    def outer(self, A: Any, B: Any, /) -> Any:  # noqa: N803 (NumPy's names)
        """`ufunc(A[i, j, ...], B[k, l, ...])` for every pair: shape `A.shape + B.shape`.

        >>> import numpy as np
        >>> multiply.outer(np.int32([1, 2]), np.int32([1, 10, 100]))
        Array([[  1,  10, 100],
               [  2,  20, 200]], dtype=int32)
        """
        if self.nin != 2:
            raise ValueError(f"outer only supported for binary ufuncs; {self.__name__} has "
                             f"nin={self.nin}")
        check_arraylike(f"{self.__name__}.outer", A, B)
        A, B = asarray(A), asarray(B)
        a_rank, b_rank = len(aval_of(A).shape), len(aval_of(B).shape)
        A = lax.expand_dims(A, tuple(range(a_rank, a_rank + b_rank))) if b_rank else A
        return self(A, B)

    # --- reduceat -------------------------------------------------------------------
    def reduceat(self, a: Any, indices: Any, axis: int = 0, dtype: Any = None,
                 out: None = None) -> Any:
        """Reductions over the slices `a[indices[i]:indices[i + 1]]` along `axis` (to the
        end for the last index); where `indices[i] >= indices[i + 1]` the entry is
        `a[indices[i]]`, as in NumPy.

        >>> import numpy as np
        >>> add.reduceat(np.float32([0, 1, 2, 3, 4]), np.int32([0, 2, 3]))
        Array([1., 2., 7.], dtype=float32)
        """
        self._require_binary("reduceat")
        _no_out(f"{self.__name__}.reduceat", out)
        check_arraylike(f"{self.__name__}.reduceat", a, indices)
        a = asarray(a, dtype)
        axis = canonicalize_axis(axis, len(aval_of(a).shape))
        x = manipulation.moveaxis(a, axis, 0)
        n = aval_of(x).shape[0]
        starts = _segment_starts(f"{self.__name__}.reduceat", indices, n)
        ends = lax.concatenate([starts[1:], np.full((1,), n, np.int32)], 0)
        out_dtype = self._out_dtype(aval_of(a).dtype, aval_of(a).dtype)
        first = lax.convert_element_type(x.at[starts].get(mode="clip"), out_dtype)
        if self._reduceat is not None:
            if out_dtype != np.bool_:  # the identity fills in the result's dtype
                x = lax.convert_element_type(x, out_dtype)
            result = self._reduceat(x, starts, ends, first)
        else:
            result = _reduceat_via_scan(self._call, x, starts, ends, first, out_dtype)
        return manipulation.moveaxis(lax.convert_element_type(result, out_dtype), 0, axis)


def frompyfunc(func: Callable[..., Any], /, nin: int, nout: int, *,
               identity: Any = None) -> ufunc:
    """A `ufunc` from a function of `nin` scalars (vectorized with `lamella.numpy.vectorize`),
    with every ufunc method.

    >>> import numpy as np
    >>> cap_add = frompyfunc(lambda a, b: lax.min(a + b, 10.0), 2, 1, identity=0.0)
    >>> cap_add.reduce(np.float32([4, 5, 6]))
    Array(10., dtype=float32)
    """
    return ufunc(func, nin, nout, identity=identity)


# --- shared helpers ----------------------------------------------------------------------
def _reduced_axes(axis: Any, rank: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(rank))
    if isinstance(axis, (tuple, list)):
        axes = tuple(canonicalize_axis(ax, rank) for ax in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"duplicate value in 'axis': {tuple(axis)}")
        return axes
    return (canonicalize_axis(axis, rank),)


def _front_flattened(a: Any, axes: tuple[int, ...]) -> tuple[Any, tuple[int, ...]]:
    """`a` with the reduced axes moved to the front and merged into one (in their
    order, so a fold visits elements as a row-major walk of those axes)."""
    shape = aval_of(a).shape
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    kept_shape = tuple(shape[d] for d in kept)
    moved = lax.transpose(a, (*axes, *kept)) if (*axes, *kept) != tuple(range(len(shape))) \
        else a
    count = math.prod(shape[d] for d in axes)
    return lax.reshape(moved, (count, *kept_shape)), kept_shape


def _keep_dims(result: Any, shape: tuple[int, ...], axes: tuple[int, ...]) -> Any:
    return lax.reshape(result, tuple(1 if d in axes else n for d, n in enumerate(shape)))


def _segment_starts(name: str, indices: Any, n: int) -> Any:
    indices = asarray(indices)
    aval = aval_of(indices)
    if aval.dtype.kind not in "iu" or len(aval.shape) != 1:
        raise TypeError(f"{name}: indices must be a 1-d integer array, got "
                        f"{aval.dtype.name}{list(aval.shape)}")
    if not isinstance(indices, Tracer) or indices.to_concrete_value() is not None:
        bad = [int(i) for i in concrete_value(indices, "indices") if not 0 <= int(i) < n]
        if bad:
            raise IndexError(f"{name}: index {bad[0]} out-of-bounds in [0, {n})")
    # Traced indices cannot be checked: they are clamped into range, as gathers clamp.
    return lax.clamp(np.int32(0), lax.convert_element_type(indices, np.int32),
                     np.int32(max(n - 1, 0)))


def _reduceat_via_scan(call: Callable[..., Any], x: Any, starts: Any, ends: Any, first: Any,
                       out_dtype: np.dtype) -> Any:
    # One pass over the axis updates every output at once: output i folds in element j
    # when starts[i] < j < ends[i], so each sees its slice in NumPy's order.
    extra = (1,) * (len(aval_of(x).shape) - 1)
    starts_b = lax.reshape(starts, (*aval_of(starts).shape, *extra))
    ends_b = lax.reshape(ends, (*aval_of(ends).shape, *extra))

    def step(acc: Any, item: Any) -> tuple[Any, None]:
        j, xj = item
        inside = lax.bitwise_and(lax.lt(starts_b, j), lax.lt(j, ends_b))
        new = lax.convert_element_type(call(acc, manipulation.broadcast_to(
            xj, aval_of(acc).shape)), out_dtype)
        return _uf.where(inside, new, acc), None

    positions = arange(aval_of(x).shape[0], dtype=np.int32)
    result, _ = lax.scan(step, first, (positions, x))
    return result


def _masked_reduceat(reduce: Callable[..., Any], identity: Callable[[np.dtype], Any]
                     ) -> Callable[..., Any]:
    """A reduceat for a ufunc with an identity: output i reduces `x` with everything
    outside its slice replaced by the identity, all outputs in one reduction."""
    def reduceat(x: Any, starts: Any, ends: Any, first: Any) -> Any:
        n = aval_of(x).shape[0]
        extra = len(aval_of(x).shape) - 1
        j = lax.reshape(arange(n, dtype=np.int32), (1, n) + (1,) * extra)
        lo = lax.reshape(starts, (aval_of(starts).shape[0], 1) + (1,) * extra)
        hi = lax.reshape(ends, (aval_of(ends).shape[0], 1) + (1,) * extra)
        inside = lax.bitwise_and(lax.le(lo, j), lax.lt(j, hi))
        dtype = aval_of(x).dtype
        masked = _uf.where(inside, lax.expand_dims(x, (0,)), np.asarray(identity(dtype), dtype))
        reduced = lax.convert_element_type(reduce(masked, axis=1), aval_of(first).dtype)
        nonempty = lax.reshape(lax.lt(starts, ends), (aval_of(starts).shape[0],) + (1,) * extra)
        return _uf.where(nonempty, reduced, first)
    return reduceat


# --- the built-in ufuncs -------------------------------------------------------------------
def _lowest(dtype: np.dtype) -> Any:
    if dtype.kind == "b":
        return False
    return -np.inf if dtype.kind in "fc" or dtype.kind == "V" else iinfo(dtype).min


def _highest(dtype: np.dtype) -> Any:
    if dtype.kind == "b":
        return True
    return np.inf if dtype.kind in "fc" or dtype.kind == "V" else iinfo(dtype).max


def _all_ones(dtype: np.dtype) -> Any:
    return True if dtype.kind == "b" else (-1 if dtype.kind == "i" else iinfo(dtype).max)


def _sum(a, axis, dtype, keepdims, initial, where):
    return reductions.sum(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                          where=where)


def _prod(a, axis, dtype, keepdims, initial, where):
    return reductions.prod(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial,
                           where=where)


def _extremum(reduce: Callable[..., Any]) -> Callable[..., Any]:
    def extremum(a, axis, dtype, keepdims, initial, where):
        return reduce(asarray(a, dtype), axis=axis, keepdims=keepdims, initial=initial,
                      where=where)
    return extremum


def _logical(reduce: Callable[..., Any], combine: Callable[[Any, Any], Any]
             ) -> Callable[..., Any]:
    def logical(a, axis, dtype, keepdims, initial, where):
        out = reduce(asarray(a, dtype), axis=axis, keepdims=keepdims, where=where)
        return out if initial is None else combine(out, initial)
    return logical


def _lax_monoid(name: str, lax_reduce: Callable[..., Any], identity: Callable[..., Any],
                combine: Callable[[Any, Any], Any], truth: bool = False) -> Callable[..., Any]:
    """A reduce over lax's `reduce_and`/`or`/`xor` (of truth values when `truth`)."""
    def reduce(a, axis, dtype, keepdims, initial, where):
        a = asarray(a, dtype)
        a = _uf.not_equal(a, 0) if truth else a
        if not truth:
            _uf._require_integral(f"{name}.reduce", a)
        shape = aval_of(a).shape
        axes = _reduced_axes(axis, len(shape))
        if where is not None:
            dt = aval_of(a).dtype
            a = _uf.where(where, a, np.asarray(identity(dt), dt))
        out = lax_reduce(a, axes)
        out = _keep_dims(out, shape, axes) if keepdims else out
        return out if initial is None else combine(out, initial)
    return reduce


def _logaddexp_reduce(base2: bool) -> Callable[..., Any]:
    """log(sum(exp(a))) shifted by a stop_gradient maximum: the slopes are the softmax
    weights (summing to 1), and NaN where every input is -inf, as JAX has them."""
    def reduce(a, axis, dtype, keepdims, initial, where):
        (a,) = promote_dtypes_inexact(asarray(a, dtype))
        if aval_of(a).dtype.kind == "c":
            raise TypeError("logaddexp.reduce is not defined for complex inputs")
        shape = aval_of(a).shape
        axes = _reduced_axes(axis, len(shape))
        ln2 = np.asarray(math.log(2.0), aval_of(a).dtype)
        if base2:
            a = lax.mul(a, ln2)
        if where is not None:
            a = _uf.where(where, a, -np.inf)
        peak = reductions.max(a, axis=axes, keepdims=True, initial=-np.inf)
        peak = stop_gradient(_uf.where(_uf.isfinite(peak), peak, 0))
        total = reductions.sum(lax.exp(lax.sub(a, peak)), axis=axes, keepdims=True)
        out = lax.add(lax.log(total), peak)
        out = out if keepdims else lax.reshape(
            out, tuple(n for d, n in enumerate(shape) if d not in axes))
        if base2:
            out = lax.div(out, ln2)
        if initial is not None:
            out = (_uf.logaddexp2 if base2 else _uf.logaddexp)(out, initial)
        return out
    return reduce


def _axis_only(reduce: Callable[..., Any]) -> Callable[..., Any]:
    return lambda a, axis: reduce(a, axis, None, False, None, None)


def _cumulative(fn: Callable[..., Any]) -> Callable[..., Any]:
    def accumulate(a, axis, dtype):
        return fn(a, axis=axis, dtype=dtype)
    return accumulate


def _lax_cumulative(lax_fn: Callable[..., Any]) -> Callable[..., Any]:
    def accumulate(a, axis, dtype):
        a = asarray(a, dtype)
        if axis is None:
            a, axis = manipulation.ravel(a), 0
        axis = canonicalize_axis(axis, len(aval_of(a).shape))
        if aval_of(a).dtype.kind == "b":  # lax's cumulative max/min take numbers only
            return _uf.not_equal(lax_fn(lax.convert_element_type(a, np.uint8), axis), 0)
        return lax_fn(a, axis)
    return accumulate


# On booleans add is `or` and multiply is `and`: a scatter max / min of 0s and 1s.
_BOOL_SCATTER = {"add": "max", "multiply": "min", "max": "max", "min": "min"}


def _scatter_at(method: str) -> Callable[..., Any]:
    def at(a, indices, b):
        a = asarray(a)
        if aval_of(a).dtype.kind == "b":
            bits = lax.convert_element_type(a, np.uint8).at[indices]
            updated = getattr(bits, _BOOL_SCATTER[method])(
                lax.convert_element_type(asarray(b, bool), np.uint8))
            return _uf.not_equal(updated, 0)
        return getattr(a.at[indices], method)(b)
    return at


add = ufunc(_uf.add, 2, 1, name="add", identity=0, call=_uf.add, reduce=_sum,
            accumulate=_cumulative(reductions.cumsum), at=_scatter_at("add"),
            reduceat=_masked_reduceat(reductions.sum, lambda dt: 0))
subtract = ufunc(_uf.subtract, 2, 1, name="subtract", call=_uf.subtract)
multiply = ufunc(_uf.multiply, 2, 1, name="multiply", identity=1, call=_uf.multiply,
                 reduce=_prod, accumulate=_cumulative(reductions.cumprod),
                 at=_scatter_at("multiply"),
                 reduceat=_masked_reduceat(reductions.prod, lambda dt: 1))
maximum = ufunc(_uf.maximum, 2, 1, name="maximum", call=_uf.maximum,
                reduce=_extremum(reductions.max), accumulate=_lax_cumulative(lax.cummax),
                at=_scatter_at("max"), reduceat=_masked_reduceat(reductions.max, _lowest))
minimum = ufunc(_uf.minimum, 2, 1, name="minimum", call=_uf.minimum,
                reduce=_extremum(reductions.min), accumulate=_lax_cumulative(lax.cummin),
                at=_scatter_at("min"), reduceat=_masked_reduceat(reductions.min, _highest))
logical_and = ufunc(_uf.logical_and, 2, 1, name="logical_and", identity=True,
                    call=_uf.logical_and, reduce=_logical(reductions.all, _uf.logical_and),
                    reduceat=_masked_reduceat(reductions.all, lambda dt: True))
logical_or = ufunc(_uf.logical_or, 2, 1, name="logical_or", identity=False,
                   call=_uf.logical_or, reduce=_logical(reductions.any, _uf.logical_or),
                   reduceat=_masked_reduceat(reductions.any, lambda dt: False))
logical_xor = ufunc(_uf.logical_xor, 2, 1, name="logical_xor", identity=False,
                    call=_uf.logical_xor,
                    reduce=_lax_monoid("logical_xor", lax.reduce_xor, lambda dt: False,
                                       _uf.logical_xor, truth=True))
bitwise_and = ufunc(_uf.bitwise_and, 2, 1, name="bitwise_and", identity=-1,
                    call=_uf.bitwise_and,
                    reduce=_lax_monoid("bitwise_and", lax.reduce_and, _all_ones,
                                       _uf.bitwise_and))
bitwise_or = ufunc(_uf.bitwise_or, 2, 1, name="bitwise_or", identity=0, call=_uf.bitwise_or,
                   reduce=_lax_monoid("bitwise_or", lax.reduce_or, lambda dt: 0,
                                      _uf.bitwise_or))
bitwise_xor = ufunc(_uf.bitwise_xor, 2, 1, name="bitwise_xor", identity=0,
                    call=_uf.bitwise_xor,
                    reduce=_lax_monoid("bitwise_xor", lax.reduce_xor, lambda dt: 0,
                                       _uf.bitwise_xor))
logaddexp = ufunc(_uf.logaddexp, 2, 1, name="logaddexp", identity=-np.inf,
                  call=_uf.logaddexp, reduce=_logaddexp_reduce(base2=False),
                  reduceat=_masked_reduceat(_axis_only(_logaddexp_reduce(base2=False)),
                                            _lowest))
logaddexp2 = ufunc(_uf.logaddexp2, 2, 1, name="logaddexp2", identity=-np.inf,
                   call=_uf.logaddexp2, reduce=_logaddexp_reduce(base2=True),
                   reduceat=_masked_reduceat(_axis_only(_logaddexp_reduce(base2=True)),
                                             _lowest))
negative = ufunc(_uf.negative, 1, 1, name="negative", call=_uf.negative)
