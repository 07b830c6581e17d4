"""What a kernel body calls: masked loads and stores, atomics, `dot`, control flow
(`when`, `loop`), scoped scratch buffers (`run_scoped`), hints and `debug_print`.

Each stateful operation is a primitive with a discharge rule, so a kernel
discharges into functional lax code like one that only indexes its refs. Masked
accesses may reach outside the ref (that is what their mask is for): their
rules pad the ref's contents before slicing, so the in-bounds lanes are exact.

>>> import numpy as np
>>> cdiv(7, 2), next_power_of_2(5)
(4, 8)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

import lamella.lax as lax
import lamella.numpy as jnp
from lamella.core import Primitive, ShapedArray, ShapeDtypeStruct, debug
from lamella.core.state import (
    AbstractRef,
    Ref,
    chain_shape,
    eval_discharged,
    is_ref_aval,
    register_discharge_rule,
    stateful_primitives,
    trace_stateful_body,
)
from lamella.core.tree_util import tree_flatten, tree_unflatten
from lamella.lax.lowering import lower_fun, register_lowering
from lamella.lax.state_rules import read_window, update_window
from lamella.pallas.specs import MemoryRef

__all__ = ["atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min", "atomic_or",
           "atomic_xchg", "atomic_xor", "cdiv", "debug_print", "dot", "load", "loop",
           "max_contiguous", "multiple_of", "next_power_of_2", "poison", "run_scoped", "store",
           "when"]


def cdiv(a: Any, b: Any) -> Any:
    """Ceiling division `(a + b - 1) // b`, for ints or integer arrays."""
    if isinstance(a, int) and isinstance(b, int):
        return -(-a // b)
    return lax.div(a + b - 1, b)


def next_power_of_2(x: int) -> int:
    """The smallest power of two that is >= x (x >= 0)."""
    if x < 0:
        raise ValueError("next_power_of_2 needs a non-negative int")
    return 1 if x == 0 else 1 << (int(x) - 1).bit_length()


def multiple_of(x: Any, values: Any) -> Any:
    """A hint that `x` is a multiple of `values`; the CPU executor does not need it."""
    return x


def max_contiguous(x: Any, values: Any) -> Any:
    """A hint that the first `values` elements of `x` are contiguous; returns `x`."""
    return x


def poison(aval: ShapedArray) -> Any:
    """What an uninitialised buffer holds: NaN for inexact dtypes, the minimum integer,
    False (as JAX's interpreter fills outputs the kernel never writes)."""
    dtype = np.dtype(aval.dtype)
    if jnp.issubdtype(dtype, jnp.inexact):
        value = np.array(np.nan, dtype)
    elif dtype == np.bool_:
        value = np.array(False)
    else:
        value = np.array(jnp.iinfo(dtype).min, dtype)
    return jnp.full(aval.shape, value, dtype)


# ---------------------------------------------------------------------------
# Masked access: pad, access the window, cut the padding off.


def _padded(x: Any, specs):
    pads = [max(n, (d.size - 1) * d.stride + 1) for n, d in zip(x.shape, specs[0].dims)]
    big = lax.pad(x, np.zeros((), x.dtype), [(0, p, 0) for p in pads])
    first = dataclasses.replace(specs[0], in_shape=tuple(big.shape))
    return big, (first, *specs[1:])


def _masked_read(x, specs, dyn, mask, other):
    big, specs = _padded(x, specs)
    window = read_window(big, specs, dyn)
    if mask is None:
        return window
    other = jnp.zeros((), x.dtype) if other is None else jnp.asarray(other, x.dtype)
    return jnp.where(jnp.broadcast_to(mask, window.shape), window, other)


def _masked_update(x, specs, dyn, mask, fn):
    """`x` with the window updated to `fn(old)` where `mask` holds; also `old`."""
    big, specs = _padded(x, specs)

    def update(old):
        new = fn(old)
        if mask is not None:
            new = jnp.where(jnp.broadcast_to(mask, old.shape), new, old)
        return new, old
    big, old = update_window(big, specs, dyn, update)
    return lax.slice(big, [0] * x.ndim, x.shape), old


def _split(ref: Any, idx: Any):
    """The underlying ref, index specs and dynamic operands for `ref[idx]`."""
    if not isinstance(ref, Ref):
        raise TypeError(f"Expected a ref (a kernel argument or a view of one), got {ref!r}")
    specs, dynamic = ref._index(... if idx is None else idx)
    return ref._ref, specs, dynamic


def _window_aval(ref_aval, specs):
    return ShapedArray(chain_shape(ref_aval.shape, specs), ref_aval.dtype)


def _check_ref(aval, what):
    if not is_ref_aval(aval):
        raise TypeError(f"{what} expects a ref, got a value of type {aval.str_short()}")


masked_load_p = Primitive("masked_load")


@masked_load_p.def_abstract_eval
def _masked_load_abstract_eval(ref, mask, *rest, specs, has_other):
    _check_ref(ref, "load")
    return _window_aval(ref, specs)


@register_discharge_rule(masked_load_p)
def _masked_load_discharge(in_avals, out_avals, ref, mask, *rest, specs, has_other):
    other, dyn = (rest[0], rest[1:]) if has_other else (None, rest)
    return [None] * (2 + len(rest)), _masked_read(ref, specs, list(dyn), mask, other)


def load(ref: Ref, idx: Any = None, *, mask: Any = None, other: Any = None,
         cache_modifier: str | None = None, eviction_policy: str | None = None,
         volatile: bool = False) -> Any:
    """Reads `ref[idx]` (the whole ref by default); where `mask` is false the result is
    `other` (0 by default), and those lanes may lie outside the ref.

    `cache_modifier`, `eviction_policy` and `volatile` are GPU memory hints.
    """
    base, specs, dynamic = _split(ref, idx)
    if mask is None:
        return Ref(base, specs, tuple(dynamic))[...]
    mask = jnp.broadcast_to(jnp.asarray(mask, bool), chain_shape(base.shape, specs))
    operands = [base, mask, *([other] if other is not None else []), *dynamic]
    return masked_load_p.bind(*operands, specs=specs, has_other=other is not None)


masked_store_p = Primitive("masked_store")
masked_store_p.multiple_results = True


@masked_store_p.def_abstract_eval
def _masked_store_abstract_eval(ref, val, mask, *dyn, specs):
    _check_ref(ref, "store")
    window = _window_aval(ref, specs)
    if val.shape != window.shape or val.dtype != window.dtype:
        raise TypeError(f"store: the value of type {val.str_short()} does not match the "
                        f"window {window.str_short()} of {ref.str_short()}")
    return []


@register_discharge_rule(masked_store_p)
def _masked_store_discharge(in_avals, out_avals, ref, val, mask, *dyn, specs):
    new, _ = _masked_update(ref, specs, list(dyn), mask, lambda old: val)
    return [new, *[None] * (2 + len(dyn))], []


def _value_for(ref: Ref, specs, base, val: Any, what: str) -> Any:
    shape = chain_shape(base.shape, specs)
    return Ref(base, specs, name=ref.name)._coerce(jnp.asarray(val) if not isinstance(
        val, (bool, int, float, complex)) else val, shape, what)


def store(ref: Ref, val: Any, idx: Any = None, *, mask: Any = None,
          eviction_policy: str | None = None) -> None:
    """Writes `val` into `ref[idx]` (the whole ref by default) where `mask` holds."""
    base, specs, dynamic = _split(ref, idx)
    if mask is None:
        Ref(base, specs, tuple(dynamic), ref.name)[...] = val
        return
    val = _value_for(ref, specs, base, val, "store into")
    mask = jnp.broadcast_to(jnp.asarray(mask, bool), val.shape)
    masked_store_p.bind(base, val, mask, *dynamic, specs=specs)


# ---------------------------------------------------------------------------
# Atomics: read-modify-write of a window, returning the old contents.

_ATOMIC_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda old, v: old + v,
    "max": jnp.maximum,
    "min": jnp.minimum,
    "xchg": lambda old, v: v,
    "and": jnp.bitwise_and,
    "or": jnp.bitwise_or,
    "xor": jnp.bitwise_xor,
}

atomic_rmw_p = Primitive("atomic_rmw")


@atomic_rmw_p.def_abstract_eval
def _atomic_rmw_abstract_eval(ref, val, mask, *dyn, specs, op):
    _check_ref(ref, f"atomic_{op}")
    return _window_aval(ref, specs)


@register_discharge_rule(atomic_rmw_p)
def _atomic_rmw_discharge(in_avals, out_avals, ref, val, mask, *dyn, specs, op):
    new, old = _masked_update(ref, specs, list(dyn), mask,
                              lambda old: _ATOMIC_OPS[op](old, val).astype(old.dtype))
    return [new, *[None] * (2 + len(dyn))], old


def _atomic(op: str):
    def atomic(x_ref_or_view: Ref, idx: Any, val: Any, *, mask: Any = None) -> Any:
        base, specs, dynamic = _split(x_ref_or_view, idx)
        if op in ("and", "or", "xor") and not jnp.issubdtype(base.dtype, jnp.integer):
            raise TypeError(f"atomic_{op} needs an integer ref, got {base.dtype}")
        val = _value_for(x_ref_or_view, specs, base, val, f"atomic_{op} into")
        mask = jnp.broadcast_to(jnp.asarray(True if mask is None else mask, bool), val.shape)
        return atomic_rmw_p.bind(base, val, mask, *dynamic, specs=specs, op=op)
    atomic.__name__ = f"atomic_{op}"
    atomic.__doc__ = (f"Atomically combines `val` into `x_ref[idx]` with {op} where `mask` "
                      "holds; returns the previous contents.")
    return atomic


atomic_add = _atomic("add")
atomic_max = _atomic("max")
atomic_min = _atomic("min")
atomic_xchg = _atomic("xchg")
atomic_and = _atomic("and")
atomic_or = _atomic("or")
atomic_xor = _atomic("xor")


atomic_cas_p = Primitive("atomic_cas")


@atomic_cas_p.def_abstract_eval
def _atomic_cas_abstract_eval(ref, cmp, val, *dyn, specs):
    _check_ref(ref, "atomic_cas")
    return _window_aval(ref, specs)


@register_discharge_rule(atomic_cas_p)
def _atomic_cas_discharge(in_avals, out_avals, ref, cmp, val, *dyn, specs):
    new, old = update_window(ref, specs, list(dyn),
                             lambda old: (jnp.where(old == cmp, val, old), old))
    return [new, *[None] * (2 + len(dyn))], old


def atomic_cas(ref: Ref, cmp: Any, val: Any) -> Any:
    """Compare-and-swap: where `ref` holds `cmp` it becomes `val`; returns the old value."""
    base, specs, dynamic = _split(ref, None)
    val = _value_for(ref, specs, base, val, "atomic_cas into")
    cmp = _value_for(ref, specs, base, cmp, "compare with")
    return atomic_cas_p.bind(base, cmp, val, *dynamic, specs=specs)


# ---------------------------------------------------------------------------
# Matrix products and control flow.


def dot(a: Any, b: Any, trans_a: bool = False, trans_b: bool = False,
        allow_tf32: bool | None = None, precision: Any = None) -> Any:
    """`a @ b` (optionally transposing either), accumulated in float32 (int32 for
    integer inputs), as Triton's `tl.dot`."""
    a, b = jnp.asarray(a), jnp.asarray(b)
    if trans_a:
        a = jnp.swapaxes(a, -1, -2)
    if trans_b:
        b = jnp.swapaxes(b, -1, -2)
    out_dtype = jnp.int32 if jnp.issubdtype(a.dtype, jnp.integer) else jnp.float32
    return jnp.dot(a, b, precision=precision, preferred_element_type=out_dtype)


def when(condition: Any) -> Callable[[Callable[[], None]], None]:
    """Decorator: runs the decorated function (of no arguments) only if `condition`.

    A Python bool decides while tracing; a traced one becomes a `lax.cond`.
    """
    def decorator(f: Callable[[], None]) -> None:
        if isinstance(condition, (bool, np.bool_)):
            if condition:
                f()
            return None
        lax.cond(condition, lambda: (f(), None)[1], lambda: None)
        return None
    return decorator


def loop(lower: Any, upper: Any, *, init_carry: Any = None, step: Any = 1,
         unroll: int | bool | None = None) -> Callable[[Callable[..., Any]], Any]:
    """Decorator: runs the decorated `body(i)` (or `body(i, carry) -> carry` when
    `init_carry` is given) for i in range(lower, upper, step); returns the carry."""
    def decorator(body: Callable[..., Any]) -> Any:
        trips = cdiv(upper - lower, step) if isinstance(upper - lower, int) and \
            isinstance(step, int) else lax.div(upper - lower + step - 1, step)

        def fori_body(k, carry):
            i = lower + k * step
            if init_carry is None:
                body(i)
                return carry
            return body(i, carry)
        return lax.fori_loop(0, trips, fori_body, init_carry, unroll=unroll)
    return decorator


# ---------------------------------------------------------------------------
# Scoped scratch buffers.

run_scoped_p = Primitive("run_scoped")
run_scoped_p.multiple_results = True
stateful_primitives.add(run_scoped_p)


@run_scoped_p.def_abstract_eval
def _run_scoped_abstract_eval(*consts, jaxpr, scoped_avals):
    return jaxpr.out_avals


@register_discharge_rule(run_scoped_p)
def _run_scoped_discharge(in_avals, out_avals, *consts, jaxpr, scoped_avals):
    scoped = [poison(a) for a in scoped_avals]
    outs, finals = eval_discharged(jaxpr.jaxpr, jaxpr.consts, [*consts, *scoped])
    finals = iter(finals)
    return [next(finals) if is_ref_aval(a) else None for a in in_avals], outs


def _scratch_aval(t: Any) -> ShapedArray:
    if isinstance(t, (MemoryRef, ShapeDtypeStruct)) or hasattr(t, "shape"):
        return ShapedArray(tuple(t.shape), jnp.dtype(t.dtype))
    raise TypeError(f"A scratch buffer needs a shape and dtype (pl.ANY(shape, dtype) or "
                    f"ShapeDtypeStruct), got {t!r}")


def run_scoped(f: Callable[..., Any], *types: Any, collective_axes: Any = (),
               **kw_types: Any) -> Any:
    """Calls `f` with fresh scratch refs of the given types (positional and keyword);
    the buffers live only during the call. Returns `f`'s result."""
    avals = [_scratch_aval(t) for t in (*types, *kw_types.values())]
    keys = list(kw_types)
    out_trees = []

    def body(*refs):
        out = f(*refs[:len(types)], **dict(zip(keys, refs[len(types):])))
        leaves, tree = tree_flatten(out)
        out_trees.append(tree)
        return leaves

    closed, consts = trace_stateful_body(body, [AbstractRef(a) for a in avals])
    outs = run_scoped_p.bind(*consts, jaxpr=closed, scoped_avals=tuple(avals))
    return tree_unflatten(out_trees[0], outs)


# ---------------------------------------------------------------------------
# Printing.

debug_print_p = Primitive("debug_print")
debug_print_p.multiple_results = True


@debug_print_p.def_abstract_eval
def _debug_print_abstract_eval(*avals, fmt):
    return []


@debug_print_p.def_impl
def _debug_print_impl(*args, fmt):
    print(fmt.format(*(np.asarray(a) for a in args)))
    return []


def _debug_print_callback(*args, fmt):
    debug.print(fmt, *args)
    return []


register_lowering(debug_print_p, lower_fun(_debug_print_callback, multiple_results=True))


def debug_print(fmt: str, *args: Any) -> None:
    """Prints `fmt.format(*args)` when the kernel instance runs, in grid order (from
    the step interpreter with `interpret=True`, and from compiled code through a host
    callback)."""
    debug_print_p.bind(*args, fmt=fmt)

