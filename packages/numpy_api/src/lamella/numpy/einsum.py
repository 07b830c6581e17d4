"""einsum and einsum_path: Einstein summation as a chain of pairwise dot_generals.

opt_einsum picks the order of the pairwise contractions; that is pure Python
work on the subscripts and shapes, so it is cached. Each step then takes the
diagonals of indices repeated within an operand, drops size-1 axes that
broadcast against the other operand, sums out indices that neither the other
operand nor the step's result needs, and contracts what is left with one
dot_general whose result is transposed into the step's index order.

>>> import numpy as np
>>> einsum("ij,j->i", np.ones((2, 3), np.float32), np.arange(3, dtype=np.float32))
Array([3., 3.], dtype=float32)
"""

from __future__ import annotations

import functools
import string
from collections.abc import Callable, Sequence
from typing import Any

import opt_einsum

import numpy as np
from lamella import lax
from lamella.core.trace import aval_of
from lamella.lax.conversion import convert_element_type
from lamella.lax.explicit_sharding import unshard_dims
from lamella.numpy import util
from lamella.numpy.dtypes import (
    canonicalize_user_dtype,
    promote_dtypes,
    promote_types,
    result_type,
)
from lamella.numpy.placement import out_sharding_of, with_out_sharding
from lamella.numpy.util import asarray_internal, check_arraylike

__all__ = ["einsum", "einsum_path"]

# Sublist labels 0..51 map to "A".."Z", "a".."z" so that sorting the letters
# (implicit output order) sorts the labels numerically, as NumPy does.
_LETTERS = string.ascii_uppercase + string.ascii_lowercase


def einsum(subscripts: Any, /, *operands: Any, out: None = None, optimize: Any = "auto",
           precision: Any = None, preferred_element_type: Any = None,
           _dot_general: Callable[..., Any] = lax.dot_general, out_sharding: Any = None
           ) -> Any:
    """Einstein summation over `operands` as described by `subscripts`.

    `subscripts` is a string such as "ij,jk->ik" (without "->" the result has the
    indices that occur once, sorted; "..." stands for broadcast leading axes), or
    the interleaved form `einsum(x, [0, 1], y, [1, 2], [0, 2])`. `optimize`
    ("auto", "greedy", "optimal", True, False or an explicit path such as
    `einsum_path` returns) chooses the order of pairwise contractions.
    `preferred_element_type` sets the accumulation and result dtype.

    >>> import numpy as np
    >>> x = np.arange(6, dtype=np.int32).reshape(2, 3)
    >>> einsum("ij,kj->ik", x, x)
    Array([[ 5, 14],
           [14, 50]], dtype=int32)
    >>> einsum("ii", np.eye(3, dtype=np.float32))
    Array(3., dtype=float32)
    """
    if out is not None:
        raise NotImplementedError("einsum: the `out` argument is not supported "
                                  "(lamella arrays are immutable)")
    sharding = out_sharding_of("einsum", out_sharding)
    spec, operands = _string_form(subscripts, operands)
    check_arraylike("einsum", *operands)
    operands = [asarray_internal(x) for x in operands]
    if sharding is not None:
        operands = _unshard_contracted(spec, operands)
    steps = _contraction_steps(spec, tuple(aval_of(x).shape for x in operands),
                               _optimize_key(optimize))
    if preferred_element_type is None:
        dtype, weak = result_type(*operands, return_weak_type_flag=True)
        accumulate = None
    else:
        dtype = accumulate = canonicalize_user_dtype(preferred_element_type, "einsum")
        weak = False
    operands = promote_dtypes(*operands)
    contract = _Contractor(_dot_general, precision, accumulate)
    for indices, in_specs, out_spec in steps:
        taken = [operands.pop(i) for i in indices]
        operands.append(contract.many(taken, in_specs, out_spec))
    (result,) = operands
    return with_out_sharding(convert_element_type(result, dtype, weak), sharding)


def _unshard_contracted(spec: str, operands: list) -> list:
    """Every operand but the last with its summed-over dimensions unsplit, so that no
    pairwise contraction is over a dimension split on both sides: the layout of the
    result is then the one `out_sharding` asks for."""
    inputs, _, output = spec.partition("->")
    terms = inputs.split(",")
    if "..." in spec or len(terms) != len(operands):
        return [unshard_dims(x) for x in operands[:-1]] + operands[-1:]
    kept = set(output) if "->" in spec else {c for c in inputs if inputs.count(c) == 1}
    return [unshard_dims(x, [d for d, c in enumerate(term) if c not in kept])
            if i < len(operands) - 1 else x
            for i, (x, term) in enumerate(zip(operands, terms))]


def einsum_path(subscripts: Any, /, *operands: Any,
                optimize: Any = "auto") -> tuple[list[tuple[int, ...]], Any]:
    """The contraction order `einsum` would use, as opt_einsum reports it: a list
    of operand-index tuples (pass it to `einsum(..., optimize=path)`) and a
    printable description of the cost.

    >>> import numpy as np
    >>> a, b, c = np.ones((2, 3)), np.ones((3, 4)), np.ones((4, 5))
    >>> einsum_path("ij,jk,kl->il", a, b, c)[0]
    [(0, 1), (0, 1)]
    """
    spec, operands = _string_form(subscripts, operands)
    shapes = tuple(util.shape(x) for x in operands)
    _check_subscripts(spec, shapes)
    return opt_einsum.contract_path(spec, *shapes, shapes=True,
                                    optimize=_optimize_key(optimize))


# --- parsing and the cached contraction plan ----------------------------------------

def _string_form(subscripts: Any, operands: tuple) -> tuple[str, list]:
    """The subscripts string (spaces removed) and the operands, from either calling form."""
    if isinstance(subscripts, str):
        return subscripts.replace(" ", ""), list(operands)
    args = (subscripts, *operands)
    output = args[-1] if len(args) % 2 else None
    pairs = args[:-1] if len(args) % 2 else args
    arrays, sublists = list(pairs[0::2]), list(pairs[1::2])
    terms = ",".join(_sublist_term(s) for s in sublists)
    spec = terms if output is None else f"{terms}->{_sublist_term(output)}"
    return spec, arrays


def _sublist_term(sublist: Any) -> str:
    if isinstance(sublist, str) or not isinstance(sublist, Sequence):
        raise TypeError(f"einsum: in the interleaved form each subscript must be a list of "
                        f"integers or Ellipsis, got {sublist!r}")
    term = []
    for label in sublist:
        if label is Ellipsis:
            term.append("...")
        elif isinstance(label, (int, np.integer)) and 0 <= label < len(_LETTERS):
            term.append(_LETTERS[label])
        else:
            raise ValueError(f"einsum: sublist labels must be integers in [0, {len(_LETTERS)}) "
                             f"or Ellipsis, got {label!r}")
    return "".join(term)


def _optimize_key(optimize: Any) -> Any:
    if optimize is True:
        return "greedy"
    if isinstance(optimize, (str, bool)) or optimize is None:
        return optimize
    if isinstance(optimize, Sequence):
        path = list(optimize)
        if path and path[0] == "einsum_path":  # NumPy's einsum_path spelling
            path = path[1:]
        return tuple(tuple(int(i) for i in step) for step in path)
    return optimize  # an opt_einsum PathOptimizer


@functools.lru_cache(maxsize=512)
def _contraction_steps(spec: str, shapes: tuple, optimize: Any
                       ) -> tuple[tuple[tuple[int, ...], tuple[str, ...], str], ...]:
    """(operand positions to pop, their index strings, the step's result indices)
    per contraction, with "..." already replaced by letters."""
    _check_subscripts(spec, shapes)
    path_arg = list(optimize) if isinstance(optimize, tuple) else optimize
    # opt_einsum plans with int sizes: a symbolic dimension (shape-polymorphic export)
    # stands as 8 for planning, as in JAX.
    plan_shapes = [tuple(d if type(d) is int else 8 for d in shape) for shape in shapes]
    try:
        _, contractions = opt_einsum.contract_path(spec, *plan_shapes, shapes=True,
                                                   einsum_call=True, optimize=path_arg)
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"einsum: invalid subscripts {spec!r} for operand shapes "
                         f"{list(shapes)}: {e}") from None
    steps = []
    for contraction in contractions:
        indices, step_spec = contraction[0], contraction[2]
        inputs, _, output = step_spec.partition("->")
        steps.append((tuple(indices), tuple(inputs.split(",")), output))
    return tuple(steps)


def _check_subscripts(spec: str, shapes: tuple) -> None:
    """Errors naming the operand for the mistakes opt_einsum reports obscurely."""
    inputs, arrow, output = spec.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: subscripts {spec!r} describe {len(terms)} operand(s) but "
                         f"{len(shapes)} were given")
    sizes: dict[str, tuple[int, int]] = {}
    ellipsis_shapes = []
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        letters = _letters_of(term, f"operand {i}")
        if "..." in term:
            if len(letters) > len(shape):
                raise ValueError(f"einsum: operand {i} has {len(shape)} dimensions (shape "
                                 f"{shape}) but its subscripts {term!r} name more")
            before = term.index("...")
            n_ellipsis = len(shape) - len(letters)
            ellipsis_shapes.append(shape[before:before + n_ellipsis])
            dims = shape[:before] + shape[before + n_ellipsis:]
        elif len(letters) != len(shape):
            raise ValueError(f"einsum: operand {i} has {len(shape)} dimensions (shape {shape}) "
                             f"but its subscripts {term!r} name {len(letters)}")
        else:
            dims = shape
        own: dict[str, int] = {}
        for c, d in zip(letters, dims):
            if c in own and own[c] != d:
                raise ValueError(f"einsum: index {c!r} is repeated in operand {i} (shape "
                                 f"{shape}) with different sizes {own[c]} and {d}")
            own[c] = d
            if c in sizes and sizes[c][1] != d and 1 not in (sizes[c][1], d):
                j, size = sizes[c]
                raise ValueError(f"einsum: index {c!r} has size {size} in operand {j} but "
                                 f"size {d} in operand {i}")
            if c not in sizes or sizes[c][1] == 1:
                sizes[c] = (i, d)
    _check_ellipsis_broadcast(ellipsis_shapes)
    if arrow:
        letters = _letters_of(output, "the output")
        for c in letters:
            if letters.count(c) > 1:
                raise ValueError(f"einsum: output index {c!r} is repeated in {output!r}")
            if c not in sizes:
                raise ValueError(f"einsum: output index {c!r} does not occur in any operand "
                                 f"of {spec!r}")


def _letters_of(term: str, what: str) -> str:
    letters = term.replace("...", "", 1)
    for c in letters:
        if c not in _LETTERS:
            raise ValueError(f"einsum: subscripts {term!r} of {what} contain {c!r}; indices "
                             "must be letters, with at most one '...'")
    return letters


def _check_ellipsis_broadcast(shapes: list[tuple[int, ...]]) -> None:
    rank = max((len(s) for s in shapes), default=0)
    for axis in range(1, rank + 1):
        sizes = {s[-axis] for s in shapes if len(s) >= axis} - {1}
        if len(sizes) > 1:
            raise ValueError(f"einsum: the axes under '...' do not broadcast: shapes "
                             f"{', '.join(str(s) for s in shapes)}")


# --- executing one step ---------------------------------------------------------------

class _Contractor:
    """Executes contraction steps with one dot_general implementation, precision and
    accumulation dtype."""

    def __init__(self, dot_general: Callable[..., Any], precision: Any,
                 accumulate: np.dtype | None):
        self.dot_general, self.precision, self.accumulate = dot_general, precision, accumulate

    def many(self, operands: list, specs: Sequence[str], out: str) -> Any:
        """Contracts any number of operands, pairwise from the left (opt_einsum gives
        more than two only for optimize=False)."""
        x, x_spec = operands[0], specs[0]
        if len(operands) == 1:
            x, x_spec = self._reduce_alone(x, x_spec, set(out))
            return _transpose_to(x, x_spec, out)
        for k in range(1, len(operands)):
            needed = set(out).union(*specs[k + 1:])
            target = out if k == len(operands) - 1 else "".join(
                dict.fromkeys(c for c in x_spec + specs[k] if c in needed))
            x, x_spec = self.pair(x, x_spec, operands[k], specs[k], target), target
        return x

    def pair(self, x: Any, x_spec: str, y: Any, y_spec: str, out: str) -> Any:
        x, x_spec = _diagonals(x, x_spec)
        y, y_spec = _diagonals(y, y_spec)
        x, x_spec = _drop_broadcast_axes(x, x_spec, y, y_spec)
        y, y_spec = _drop_broadcast_axes(y, y_spec, x, x_spec)
        x, x_spec = self._reduce_alone(x, x_spec, set(y_spec) | set(out))
        y, y_spec = self._reduce_alone(y, y_spec, set(x_spec) | set(out))
        x, y = _common_dtype(x, y)
        shared = [c for c in x_spec if c in y_spec]
        batch = [c for c in shared if c in out]
        contracting = [c for c in shared if c not in out]
        dims = ((tuple(x_spec.index(c) for c in contracting),
                 tuple(y_spec.index(c) for c in contracting)),
                (tuple(x_spec.index(c) for c in batch), tuple(y_spec.index(c) for c in batch)))
        result = self.dot_general(x, y, dims, precision=self.precision,
                                  preferred_element_type=self.accumulate)
        result_spec = ("".join(batch) + "".join(c for c in x_spec if c not in y_spec)
                       + "".join(c for c in y_spec if c not in x_spec))
        return _transpose_to(result, result_spec, out)

    def _reduce_alone(self, x: Any, spec: str, keep: set[str]) -> tuple[Any, str]:
        """Takes diagonals, then sums out the indices not in `keep`."""
        x, spec = _diagonals(x, spec)
        axes = tuple(i for i, c in enumerate(spec) if c not in keep)
        if not axes:
            return x, spec
        if self.accumulate is not None and aval_of(x).dtype != self.accumulate:
            x = lax.convert_element_type(x, self.accumulate)
        reduce = lax.reduce_or if aval_of(x).dtype == np.bool_ else lax.reduce_sum
        return reduce(x, axes), "".join(c for c in spec if c in keep)


def _diagonals(x: Any, spec: str) -> tuple[Any, str]:
    """For each index repeated in `spec`, the diagonal over its axes (placed last)."""
    for c in dict.fromkeys(spec):
        axes = [i for i, d in enumerate(spec) if d == c]
        if len(axes) > 1:
            x = _diagonal_of_axes(x, axes)
            spec = "".join(d for d in spec if d != c) + c
    return x, spec


def _diagonal_of_axes(x: Any, axes: list[int]) -> Any:
    # With the k equal-sized axes last and flattened, the diagonal x[..., i, ..., i]
    # sits at i * (1 + n + ... + n**(k-1)): one strided slice, no gather.
    shape = aval_of(x).shape
    rest = [i for i in range(len(shape)) if i not in axes]
    n, k = shape[axes[0]], len(axes)
    lead = tuple(shape[i] for i in rest)
    x = lax.reshape(x, (*lead, n ** k), dimensions=(*rest, *axes))
    if n > 1:
        stride = (n ** k - 1) // (n - 1)
        x = lax.slice(x, (0,) * len(lead) + (0,), (*lead, n ** k), (1,) * len(lead) + (stride,))
    return x


def _drop_broadcast_axes(x: Any, spec: str, other: Any, other_spec: str) -> tuple[Any, str]:
    """Removes x's size-1 axes whose index has a larger size in `other` (NumPy
    broadcasting): x is constant along them, so they need no dot_general dimension."""
    shape, other_shape = aval_of(x).shape, aval_of(other).shape
    drop = [i for i, c in enumerate(spec)
            if shape[i] == 1 and c in other_spec and other_shape[other_spec.index(c)] != 1]
    if not drop:
        return x, spec
    kept = [i for i in range(len(spec)) if i not in drop]
    return (lax.reshape(x, tuple(shape[i] for i in kept)),
            "".join(spec[i] for i in kept))


def _common_dtype(x: Any, y: Any) -> tuple[Any, Any]:
    # Operands differ only after an earlier step accumulated in preferred_element_type.
    x_dtype, y_dtype = aval_of(x).dtype, aval_of(y).dtype
    if x_dtype == y_dtype:
        return x, y
    common = promote_types(x_dtype, y_dtype)
    return lax.convert_element_type(x, common), lax.convert_element_type(y, common)


def _transpose_to(x: Any, spec: str, out: str) -> Any:
    permutation = tuple(spec.index(c) for c in out)
    if permutation == tuple(range(len(permutation))):
        return x
    return lax.transpose(x, permutation)
