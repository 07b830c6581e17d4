"""Lifting functions of small arrays to arrays with more axes, with vmap instead
of Python loops: vectorize (NumPy's gufunc signatures included),
apply_along_axis and apply_over_axes.

>>> import numpy as np
>>> norm = vectorize(lambda v: v @ v, signature="(n)->()")
>>> norm(np.float32([[3, 4], [1, 0]]))
Array([25.,  1.], dtype=float32)
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Sequence
from typing import Any

from lamella import lax
from lamella.core import vmap
from lamella.core.trace import aval_of
from lamella.numpy.ufuncs import _broadcast_shapes
from lamella.numpy.util import asarray_internal, canonicalize_axis, check_arraylike

__all__ = ["apply_along_axis", "apply_over_axes", "vectorize"]

_CORE = r"\((?:\w+(?:,\w+)*)?\)"
_CORE_LIST = rf"{_CORE}(?:,{_CORE})*"
_SIGNATURE = re.compile(rf"^{_CORE_LIST}->{_CORE_LIST}$")

CoreDims = tuple[str, ...]


def vectorize(pyfunc: Callable, *, excluded: Collection[int | str] = frozenset(),
              signature: str | None = None) -> Callable:
    """`pyfunc` made to broadcast over leading axes, with `vmap` doing the looping.

    Without `signature`, `pyfunc` sees scalars (0-d arrays) and all arguments
    broadcast together. With a gufunc signature such as "(m,n),(n)->(m)",
    `pyfunc` sees arrays with the named core axes (the trailing ones), whose
    sizes must agree across arguments, and the leading axes broadcast; several
    outputs, "(n)->(),()", come back as a tuple. Positional indices and keyword
    names in `excluded` are passed to `pyfunc` unchanged; other keyword arguments
    are vectorized after the positional ones.

    >>> import numpy as np
    >>> power = vectorize(lambda x, n: x ** n, excluded={1})
    >>> power(np.float32([1, 2, 3]), 2)
    Array([1., 4., 9.], dtype=float32)
    """
    cores = None if signature is None else _parse_signature(signature)

    @functools.wraps(pyfunc)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        call, arrays = _split_excluded(pyfunc, excluded, args, kwargs)
        in_cores, out_cores = cores if cores is not None else ([()] * len(arrays), None)
        if len(in_cores) != len(arrays):
            raise TypeError(f"vectorize: signature {signature!r} has {len(in_cores)} inputs "
                            f"but the function was called with {len(arrays)} vectorized "
                            "arguments")
        sizes = _core_sizes(arrays, in_cores)
        loop_shapes = [aval_of(x).shape[:aval_of(x).ndim - len(c)]
                       for x, c in zip(arrays, in_cores)]
        try:
            loop = _broadcast_shapes(loop_shapes) if loop_shapes else ()
        except ValueError:
            raise ValueError(f"vectorize: the loop (non-core) dimensions "
                             f"{', '.join(map(str, loop_shapes))} do not broadcast") from None

        def core(*xs: Any) -> Any:
            out = call(*xs)
            return out if out_cores is None else _check_outputs(out, out_cores, dict(sizes))

        return _map_over_loop(core, arrays, loop_shapes, loop)

    return wrapped


def _parse_signature(signature: str) -> tuple[list[CoreDims], list[CoreDims]]:
    """The core dimension names of each input and each output."""
    compact = re.sub(r"\s+", "", signature) if isinstance(signature, str) else None
    if compact is None or not _SIGNATURE.match(compact):
        raise ValueError(f"vectorize: not a valid gufunc signature: {signature!r} "
                         "(expected something like '(m,n),(n)->(m)')")
    inputs, outputs = compact.split("->")
    return tuple([tuple(re.findall(r"\w+", core)) for core in re.findall(r"\([^()]*\)", part)]
                 for part in (inputs, outputs))


def _split_excluded(pyfunc: Callable, excluded: Collection[int | str], args: tuple,
                    kwargs: dict) -> tuple[Callable, list]:
    """`pyfunc` with the excluded arguments bound, taking the vectorized arguments
    (positional ones, then keyword ones) positionally; and those arguments as arrays."""
    positions = [i for i in range(len(args)) if i not in excluded]
    names = [k for k in kwargs if k not in excluded]
    static_kwargs = {k: v for k, v in kwargs.items() if k in excluded}

    def call(*xs: Any) -> Any:
        full = list(args)
        for i, x in zip(positions, xs):
            full[i] = x
        return pyfunc(*full, **static_kwargs, **dict(zip(names, xs[len(positions):])))

    dynamic = [args[i] for i in positions] + [kwargs[k] for k in names]
    return call, [asarray_internal(x) for x in dynamic]


def _core_sizes(arrays: list, cores: list[CoreDims]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for i, (x, core) in enumerate(zip(arrays, cores)):
        shape = aval_of(x).shape
        if len(shape) < len(core):
            raise ValueError(f"vectorize: input {i} has shape {shape} but the signature "
                             f"gives it {len(core)} core dimension(s) {core}")
        for name, size in zip(core, shape[len(shape) - len(core):]):
            if sizes.setdefault(name, size) != size:
                raise ValueError(f"vectorize: inconsistent size for core dimension {name!r}: "
                                 f"{sizes[name]} earlier but {size} in input {i} (shape "
                                 f"{shape})")
    return sizes


def _check_outputs(out: Any, cores: list[CoreDims], sizes: dict[str, int]) -> Any:
    outs = out if len(cores) > 1 else (out,)
    if not isinstance(outs, tuple) or len(outs) != len(cores):
        got = f"a tuple of {len(out)}" if isinstance(out, tuple) else "a single value"
        raise ValueError(f"vectorize: the signature has {len(cores)} output(s) but the "
                         f"function returned {got}")
    outs = tuple(asarray_internal(o) for o in outs)
    for i, (o, core) in enumerate(zip(outs, cores)):
        shape = aval_of(o).shape
        if len(shape) != len(core):
            raise ValueError(f"vectorize: output {i} has shape {shape} but the signature "
                             f"gives it core dimensions {core}")
        for name, size in zip(core, shape):
            if sizes.setdefault(name, size) != size:
                raise ValueError(f"vectorize: output {i} has size {size} for core dimension "
                                 f"{name!r}, which the inputs give size {sizes[name]}")
    return outs if len(cores) > 1 else outs[0]


def _map_over_loop(core: Callable, arrays: list, loop_shapes: list, loop: tuple) -> Any:
    """`core` mapped over the broadcast loop shape: one vmap per loop axis. An
    argument of size 1 along an axis is squeezed and not mapped there, so nothing is
    materialised at the broadcast shape; axes of size 1 everywhere are added back."""
    filled = [(1,) * (len(loop) - len(s)) + tuple(s) for s in loop_shapes]
    squeezed = [lax.reshape(x, tuple(d for d in s if d != 1) + aval_of(x).shape[len(s):])
                if 1 in s else x for x, s in zip(arrays, loop_shapes)]
    fn, unmapped = core, []
    for axis in reversed(range(len(loop))):
        in_axes = tuple(None if f[axis] == 1 else 0 for f in filled)
        if all(a is None for a in in_axes):
            unmapped.append(axis)
        else:
            fn = vmap(fn, in_axes=in_axes)
    result = fn(*squeezed)
    if not unmapped:
        return result
    if isinstance(result, tuple):
        return tuple(lax.expand_dims(r, sorted(unmapped)) for r in result)
    return lax.expand_dims(result, sorted(unmapped))


def apply_along_axis(func1d: Callable, axis: int, arr: Any, *args: Any, **kwargs: Any) -> Any:
    """`func1d(v, *args, **kwargs)` for each 1-D slice `v` of `arr` along `axis`; the
    result's axes replace `axis`.

    >>> import numpy as np
    >>> apply_along_axis(lambda v: v @ v, 1, np.int32([[1, 2, 3], [4, 5, 6]]))
    Array([14, 77], dtype=int32)
    """
    check_arraylike("apply_along_axis", arr)
    arr = asarray_internal(arr)
    rank = aval_of(arr).ndim
    axis = canonicalize_axis(axis, rank)
    others = [i for i in range(rank) if i != axis]
    def one(v: Any) -> Any:
        return asarray_internal(func1d(v, *args, **kwargs))

    mapped = one
    for _ in others:
        mapped = vmap(mapped)
    result = mapped(lax.transpose(arr, (*others, axis)))
    # result axes: the `others`, then func1d's own axes, which belong at `axis`.
    n_out = aval_of(result).ndim - len(others)
    before, after = range(axis), range(axis, len(others))
    own = range(len(others), len(others) + n_out)
    permutation = (*before, *own, *after)
    if permutation == tuple(range(len(permutation))):
        return result
    return lax.transpose(result, permutation)


def apply_over_axes(func: Callable, a: Any, axes: int | Sequence[int]) -> Any:
    """Applies `func(a, axis)` for each axis in turn, keeping the rank: a result
    that lost the axis gets it back with size 1.

    >>> import numpy as np
    >>> from lamella import lax
    >>> apply_over_axes(lambda x, ax: lax.reduce_sum(x, (ax,)), np.ones((2, 3), np.int32), [0, 1])
    Array([[6]], dtype=int32)
    """
    check_arraylike("apply_over_axes", a)
    a = asarray_internal(a)
    for axis in [axes] if isinstance(axes, int) else axes:
        axis = canonicalize_axis(axis, aval_of(a).ndim)
        b = asarray_internal(func(a, axis))
        if aval_of(b).ndim == aval_of(a).ndim - 1:
            b = lax.expand_dims(b, (axis,))
        elif aval_of(b).ndim != aval_of(a).ndim:
            raise ValueError(f"apply_over_axes: func returned shape {aval_of(b).shape} for an "
                             f"input of shape {aval_of(a).shape} and axis {axis}; it must "
                             "keep the rank or drop exactly that axis")
        a = b
    return a
