"""The LAPACK custom call behind lamella.lax.linalg, and what its primitives share.

One internal primitive, ``lapack_call``, stands for every jaxlib CPU kernel
(``lapack_?potrf_ffi`` and friends, see ``shared/notes/lapack-ffi.md``): its
params name the target, the kernel's attributes and the result types. It only
ever appears inside the lowerings of the public primitives, so it needs no
impl, JVP or batching rule. The kernels exist for CPU only: on other platforms
lowering reports that no rule exists.

The kernels batch over leading dimensions themselves, so the public
primitives' batching rules only move the vmapped axis to the front
(`front_batcher`), and a failed factorization is reported per batch element in
an ``info`` output that `nan_fill` turns into NaNs, as JAX does.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

import numpy as np

from lamella.core import Primitive, ShapedArray, batching
from lamella.core.trace import aval_of
from lamella.lax import runtime
from lamella.lax.fill import full_like
from lamella.lax.logical import select
from lamella.lax.lowering import aval_to_ir_type, hlo, ir, register_lowering
from lamella.lax.shapes import broadcast_in_dim
from lamella.lax.standard import COMPLEX, FLOAT, check_dtypes

LAPACK_PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d",
                 np.dtype(np.complex64): "c", np.dtype(np.complex128): "z"}

lapack_call_p = Primitive("lapack_call")
lapack_call_p.multiple_results = True


@lapack_call_p.def_abstract_eval
def _lapack_call_abstract_eval(*avals, target, attrs, results):
    return [ShapedArray(shape, np.dtype(dtype)) for shape, dtype in results]


def _layout(ndim: int, column_major: bool) -> ir.Attribute:
    # Minor-to-major order. The kernels read matrices column-major with the batch
    # dims outermost; XLA inserts the physical transposes these layouts ask for.
    order = [ndim - 2, ndim - 1, *range(ndim - 3, -1, -1)] if column_major \
        else list(range(ndim - 1, -1, -1))
    return ir.DenseIntElementsAttr.get(np.array(order, np.int64), type=ir.IndexType.get())


def _attribute(value: str | bool | int) -> ir.Attribute:
    # The kernels decode exact types: a character option is a ui8 ASCII code,
    # a flag (ormqr's left/transpose) an i1, an index (gehrd's low/high) an i32.
    if isinstance(value, str):
        return ir.IntegerAttr.get(ir.IntegerType.get_unsigned(8), ord(value))
    if isinstance(value, bool):
        return ir.BoolAttr.get(value)
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(32), value)


def _lapack_call_lowering(ctx, *operands, target, attrs, results):
    runtime.register_lapack_targets()
    # Operands and results of the largest rank are the matrices: column-major.
    rank = max(a.ndim for a in ctx.avals_in)
    op = hlo.CustomCallOp(
        [aval_to_ir_type(a) for a in ctx.avals_out], list(operands), target,
        api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4),
        backend_config=ir.DictAttr.get({name: _attribute(v) for name, v in attrs}),
        operand_layouts=ir.ArrayAttr.get([_layout(a.ndim, a.ndim == rank)
                                          for a in ctx.avals_in]),
        result_layouts=ir.ArrayAttr.get([_layout(a.ndim, a.ndim == rank)
                                         for a in ctx.avals_out]))
    return list(op.results)


register_lowering(lapack_call_p, _lapack_call_lowering, platform="cpu")


def custom_call(target: str, operands: Sequence[Any], results: Sequence[tuple],
                **attrs: str | bool | int) -> list[Any]:
    """Binds kernel `target`; `results` lists (shape, dtype) pairs."""
    results = tuple((tuple(int(d) for d in shape), np.dtype(dt).name) for shape, dt in results)
    return lapack_call_p.bind(*operands, target=target, attrs=tuple(sorted(attrs.items())),
                              results=results)


def lapack(kernel: str, operands: Sequence[Any], results: Sequence[tuple],
           **attrs: str | bool | int) -> list[Any]:
    """Binds `lapack_<prefix><kernel>_ffi`, the prefix naming the first operand's dtype."""
    prefix = LAPACK_PREFIX[aval_of(operands[0]).dtype]
    return custom_call(f"lapack_{prefix}{kernel}_ffi", operands, results, **attrs)


def nan_fill(ok: Any, x: Any) -> Any:
    """`x` where the batch element's `ok` holds, NaN elsewhere (NaN in both parts of
    complex numbers, as JAX fills them)."""
    shape = aval_of(x).shape
    mask = broadcast_in_dim(ok, shape, tuple(range(aval_of(ok).ndim)))
    nan = complex(np.nan, np.nan) if aval_of(x).dtype.kind == "c" else np.nan
    return select(mask, x, full_like(x, nan))


def check_lapack_dtype(name: str, aval: ShapedArray) -> None:
    check_dtypes(name, (FLOAT, COMPLEX), aval)
    if aval.dtype not in LAPACK_PREFIX:
        raise TypeError(f"{name} supports float32, float64, complex64 and complex128, got "
                        f"{aval.dtype.name}")


def check_matrix(name: str, aval: ShapedArray, square: bool) -> None:
    check_lapack_dtype(name, aval)
    if aval.ndim < 2 or (square and aval.shape[-1] != aval.shape[-2]):
        kind = "square matrices, shape (..., n, n)" if square else "matrices, shape (..., m, n)"
        raise ValueError(f"{name}: argument must be a batch of {kind}; got shape {aval.shape}")


def check_batch_dims(name: str, **avals: tuple[ShapedArray, int]) -> tuple[int, ...]:
    """Checks that operands, each `(aval, core_rank)`, share their leading (batch) dims."""
    batches = {arg: aval.shape[:aval.ndim - rank] for arg, (aval, rank) in avals.items()}
    first = next(iter(batches.values()))
    if any(b != first for b in batches.values()):
        got = ", ".join(f"{arg} {aval.shape}" for arg, (aval, _) in avals.items())
        raise ValueError(f"{name}: the leading (batch) dimensions of the operands must agree, "
                         f"got shapes {got}")
    return first


def check_same_dtype(name: str, **avals: ShapedArray) -> None:
    if len({a.dtype for a in avals.values()}) > 1:
        got = ", ".join(f"{arg} {aval.dtype.name}" for arg, aval in avals.items())
        raise TypeError(f"{name} requires operands of one dtype, got {got}")


def front_batcher(prim: Primitive) -> None:
    """Batching by moving every vmapped axis to the front: the kernels batch natively."""
    def rule(args, dims, **params):
        size = next(aval_of(x).shape[d] for x, d in zip(args, dims) if d is not None)
        args = [batching.at_front(x, d, size) for x, d in zip(args, dims)]
        out = prim.bind(*args, **params)
        return out, ([0] * len(out) if prim.multiple_results else 0)
    batching.primitive_batchers[prim] = rule


def enum_option(name: str, value: Any, options: type[enum.Enum]) -> enum.Enum | None:
    """`value` as a member of `options` (also given by its value string), or None."""
    if value is None or isinstance(value, options):
        return value
    try:
        return options(value)
    except ValueError:
        choices = ", ".join(f"{options.__name__}.{m.name}" for m in options)
        raise TypeError(f"{name} must be None or one of {choices}; got {value!r}") from None


def subset_range(name: str, subset_by_index: tuple[int, int] | None, size: int
                 ) -> tuple[int, int]:
    """The (start, end) that `subset_by_index` selects among `size` eigen/singular values."""
    if subset_by_index is None:
        return 0, size
    if len(subset_by_index) != 2 or not 0 <= subset_by_index[0] <= subset_by_index[1] <= size:
        raise ValueError(f"{name}: subset_by_index must be (start, end) with 0 <= start <= end "
                         f"<= {size}, got {subset_by_index}")
    return subset_by_index
