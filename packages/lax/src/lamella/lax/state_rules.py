"""Discharge rules for the state primitives and for lax's control flow over refs.

`lamella.core.state` discharges whole-ref access itself; these rules read and
write any window of a ref's contents with lax's slicing operations — a static
`slice` or a `dynamic_slice` for reads, `dynamic_update_slice` for writes
(strided windows interleave the written values with `pad` and a mask) — and
let `cond`, `scan` (hence `fori_loop`) and `while_loop` bodies use refs that
they close over: a ref becomes an operand (a branch input, or a loop carry) and
its final contents a result.

>>> import numpy as np
>>> from lamella.core.state import run_state, ds
>>> def body(ref):
...     ref[1, ds(0, 2)] = np.full(2, 5.0, np.float32)
>>> run_state(body)(np.zeros((2, 3), np.float32))
Array([[0., 0., 0.],
       [5., 5., 0.]], dtype=float32)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lamella.core.jaxpr import ClosedJaxpr, jaxpr_as_fun
from lamella.core.staging import trace_to_jaxpr
from lamella.core.state import (
    IndexSpec,
    addupdate_p,
    discharge_state,
    get_p,
    is_ref_aval,
    register_discharge_rule,
    swap_p,
)
from lamella.core.trace import aval_of
from lamella.core.util import split_list
from lamella.lax.arithmetic import add
from lamella.lax.control_flow.cond import cond_p
from lamella.lax.control_flow.loops import while_p
from lamella.lax.control_flow.scan import scan_p
from lamella.lax.conversion import convert_element_type
from lamella.lax.logical import select_n
from lamella.lax.shapes import (
    dynamic_slice,
    dynamic_update_slice,
    pad,
    reshape,
)
from lamella.lax.shapes import (
    slice as static_slice,
)

__all__ = ["read_window", "update_window"]


def _starts(spec: IndexSpec, dyn: list[Any]) -> list[Any]:
    it = iter(dyn)
    return [d.start if d.start is not None else next(it) for d in spec.dims]


def _extents(spec: IndexSpec) -> list[int]:
    """The size of the contiguous region covering each dimension's window."""
    return [1 if d.is_int else max((d.size - 1) * d.stride + 1, 0) for d in spec.dims]


def _read_one(x: Any, spec: IndexSpec, dyn: list[Any]) -> Any:
    if spec.is_full():
        return x
    starts, extents = _starts(spec, dyn), _extents(spec)
    strides = [d.stride for d in spec.dims]
    strided = any(s != 1 for s in strides)
    if all(isinstance(s, int) for s in starts):
        region = static_slice(x, starts, [s + e for s, e in zip(starts, extents)],
                              strides if strided else None)
    else:
        region = dynamic_slice(x, [_index(s) for s in starts], extents)
        if strided:
            region = static_slice(region, [0] * len(extents), extents, strides)
    return reshape(region, spec.out_shape) if region.shape != spec.out_shape else region


def _index(s: Any) -> Any:
    return np.int32(s) if isinstance(s, int) else convert_element_type(s, np.int32)


def _write_one(x: Any, spec: IndexSpec, dyn: list[Any], window: Any) -> Any:
    if spec.is_full():
        return window
    starts, extents = _starts(spec, dyn), _extents(spec)
    shape = tuple(1 if d.is_int else d.size for d in spec.dims)
    window = reshape(window, shape) if window.shape != shape else window
    strides = [d.stride for d in spec.dims]
    if any(s != 1 for s in strides):
        # Spread the values `stride` apart and keep the old contents in between.
        config = [(0, 0, s - 1) for s in strides]
        spread = pad(window, np.zeros((), window.dtype), config)
        written = pad(np.ones(shape, bool), np.bool_(False), config)
        old = dynamic_slice(x, [_index(s) for s in starts], extents)
        window = select_n(written, old, spread)
    return dynamic_update_slice(x, window, [_index(s) for s in starts])


def read_window(x: Any, specs: tuple[IndexSpec, ...], dyn: list[Any]) -> Any:
    """The window of the array `x` that the chain `specs` selects."""
    for spec in specs:
        n = spec.num_dynamic
        x = _read_one(x, spec, dyn[:n])
        dyn = dyn[n:]
    return x


def update_window(x: Any, specs: tuple[IndexSpec, ...], dyn: list[Any], fn) -> tuple[Any, Any]:
    """`x` with the window `specs` selects replaced by `fn(window)[0]`; also `fn(window)[1]`."""
    if not specs:
        return fn(x)
    spec, n = specs[0], specs[0].num_dynamic
    window = _read_one(x, spec, dyn[:n])
    new_window, result = update_window(window, specs[1:], dyn[n:], fn)
    return _write_one(x, spec, dyn[:n], new_window), result


@register_discharge_rule(get_p)
def _get_discharge(in_avals, out_avals, ref, *dyn, specs):
    return [None] * (1 + len(dyn)), read_window(ref, specs, list(dyn))


@register_discharge_rule(swap_p)
def _swap_discharge(in_avals, out_avals, ref, val, *dyn, specs):
    new, old = update_window(ref, specs, list(dyn), lambda w: (val, w))
    return [new, *[None] * (1 + len(dyn))], old


@register_discharge_rule(addupdate_p)
def _addupdate_discharge(in_avals, out_avals, ref, val, *dyn, specs):
    new, _ = update_window(ref, specs, list(dyn), lambda w: (add(w, val), None))
    return [new, *[None] * (1 + len(dyn))], []


# ---------------------------------------------------------------------------
# Control flow whose bodies use refs.


def _ref_positions(avals) -> list[int]:
    return [i for i, a in enumerate(avals) if is_ref_aval(a)]


def _reordered(fun, in_avals) -> ClosedJaxpr:
    jaxpr, consts = trace_to_jaxpr(fun, in_avals)
    return ClosedJaxpr(jaxpr, consts)


@register_discharge_rule(cond_p)
def _cond_discharge(in_avals, out_avals, index, *ops, branches):
    refs = _ref_positions(in_avals[1:])
    new_branches = tuple(discharge_state(b) for b in branches)
    outs = cond_p.bind(index, *ops, branches=new_branches)
    results, finals = outs[:len(out_avals)], outs[len(out_avals):]
    new_ops = [None] * len(ops)
    for pos, final in zip(refs, finals):
        new_ops[pos] = final
    return [None, *new_ops], results


@register_discharge_rule(scan_p)
def _scan_discharge(in_avals, out_avals, *args, jaxpr, length, reverse, unroll, num_consts,
                    num_carry, linear):
    consts, carry, xs = split_list(list(args), [num_consts, num_carry])
    const_avals = in_avals[:num_consts]
    refs = _ref_positions(const_avals)
    if _ref_positions(in_avals[num_consts:]):
        raise TypeError("scan can't carry refs or scan over them: close over them instead")
    plain = [i for i in range(num_consts) if i not in refs]
    body = discharge_state(jaxpr)
    body_fun = jaxpr_as_fun(body)
    n_out = len(jaxpr.out_avals)
    plain_avals = [const_avals[i] for i in plain]
    ref_avals = [const_avals[i].inner_aval for i in refs]
    rest_avals = [v.aval for v in jaxpr.jaxpr.invars[num_consts:]]

    def new_body(*vals):
        plain_vals, ref_vals, rest = split_list(list(vals), [len(plain), len(refs)])
        full = [None] * num_consts
        for i, v in zip(plain, plain_vals):
            full[i] = v
        for i, v in zip(refs, ref_vals):
            full[i] = v
        outs = body_fun(*full, *rest)
        carry_out, ys, finals = outs[:num_carry], outs[num_carry:n_out], outs[n_out:]
        return [*finals, *carry_out, *ys]

    new_jaxpr = _reordered(new_body, [*plain_avals, *ref_avals, *rest_avals])
    outs = scan_p.bind(*[consts[i] for i in plain], *[consts[i] for i in refs], *carry, *xs,
                       jaxpr=new_jaxpr, length=length, reverse=reverse, unroll=unroll,
                       num_consts=len(plain), num_carry=len(refs) + num_carry,
                       linear=(False,) * (len(args)))
    finals, results = outs[:len(refs)], outs[len(refs):]
    new_args = [None] * len(args)
    for i, final in zip(refs, finals):
        new_args[i] = final
    return new_args, results


@register_discharge_rule(while_p)
def _while_discharge(in_avals, out_avals, *args, cond_jaxpr, body_jaxpr, cond_nconsts,
                     body_nconsts):
    cc, bc, carry = split_list(list(args), [cond_nconsts, body_nconsts])
    cc_avals, bc_avals = in_avals[:cond_nconsts], in_avals[cond_nconsts:][:body_nconsts]
    if _ref_positions(in_avals[cond_nconsts + body_nconsts:]):
        raise TypeError("while_loop can't carry refs: close over them instead")
    # A ref the condition and the body both close over is one carried value.
    unique: list[Any] = []
    for x, a in zip([*cc, *bc], [*cc_avals, *bc_avals]):
        if is_ref_aval(a) and not any(x is u for u in unique):
            unique.append(x)
    slot = lambda x: next(k for k, u in enumerate(unique) if u is x)  # noqa: E731
    cond_fun = jaxpr_as_fun(discharge_state(cond_jaxpr))
    body_fun = jaxpr_as_fun(discharge_state(body_jaxpr))
    c_plain = [i for i, a in enumerate(cc_avals) if not is_ref_aval(a)]
    b_plain = [i for i, a in enumerate(bc_avals) if not is_ref_aval(a)]
    c_slots = {i: slot(cc[i]) for i, a in enumerate(cc_avals) if is_ref_aval(a)}
    b_slots = {i: slot(bc[i]) for i, a in enumerate(bc_avals) if is_ref_aval(a)}
    unique_avals = [aval_of(u).strip_weak_type() for u in unique]
    carry_avals = list(in_avals[cond_nconsts + body_nconsts:])

    def fill(n, plain, slots, plain_vals, ref_vals):
        full = [None] * n
        for i, v in zip(plain, plain_vals):
            full[i] = v
        for i, k in slots.items():
            full[i] = ref_vals[k]
        return full

    def new_cond(*vals):
        plain_vals, ref_vals, rest = split_list(list(vals), [len(c_plain), len(unique)])
        return cond_fun(*fill(cond_nconsts, c_plain, c_slots, plain_vals, ref_vals), *rest)[:1]

    def new_body(*vals):
        plain_vals, ref_vals, rest = split_list(list(vals), [len(b_plain), len(unique)])
        outs = body_fun(*fill(body_nconsts, b_plain, b_slots, plain_vals, ref_vals), *rest)
        carry_out, finals = outs[:len(carry)], outs[len(carry):]
        new_refs = list(ref_vals)
        for (_, k), final in zip(sorted(b_slots.items()), finals):
            new_refs[k] = final
        return [*new_refs, *carry_out]

    new_cond_jaxpr = _reordered(new_cond, [*(cc_avals[i] for i in c_plain), *unique_avals,
                                           *carry_avals])
    new_body_jaxpr = _reordered(new_body, [*(bc_avals[i] for i in b_plain), *unique_avals,
                                           *carry_avals])
    outs = while_p.bind(*(cc[i] for i in c_plain), *(bc[i] for i in b_plain), *unique, *carry,
                        cond_jaxpr=new_cond_jaxpr, body_jaxpr=new_body_jaxpr,
                        cond_nconsts=len(c_plain), body_nconsts=len(b_plain))
    finals, results = outs[:len(unique)], outs[len(unique):]
    new_args = [None] * len(args)
    for i in c_slots:
        new_args[i] = finals[c_slots[i]]
    for i in b_slots:
        new_args[cond_nconsts + i] = finals[b_slots[i]]
    return new_args, results
