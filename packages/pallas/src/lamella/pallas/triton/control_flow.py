"""Triton rules for control flow and calls: `cond` (`pl.when`) as `scf.if`,
`scan` without stacked operands (`fori_loop` with static bounds, `pl.loop`) as
`scf.for`, a `while` of `fori_loop` form as `scf.for` and any other as
`scf.while`; `jit`, `custom_jvp_call`, `custom_vjp_call` and `checkpoint` inline
their bodies; `debug_print` is `tt.print`.

Refs cross into branches and bodies as the same `KernelRef`s (pointers are
not loop-carried); loop carries are values.

>>> from lamella.lax import cond_p, while_p
>>> from lamella.pallas.triton.rule_table import triton_rules
>>> cond_p in triton_rules and while_p in triton_rules
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import arith, scf
from jaxlib.triton import dialect as tt

import lamella.core as lc
import lamella.lax as lax
from lamella.core import ClosedJaxpr, Literal
from lamella.pallas.language import debug_print_p
from lamella.pallas.triton.builder import cast, constant, ir_type, is_signed
from lamella.pallas.triton.memory import KernelRef
from lamella.pallas.triton.rule_table import RuleContext, register

__all__: list[str] = []


def _closed(j: Any) -> tuple[Any, list[Any]]:
    return (j.jaxpr, list(j.consts)) if isinstance(j, ClosedJaxpr) else (j, [])


def _types(avals: Sequence[Any]) -> list[ir.Type]:
    return [ir_type(a.shape, a.dtype) for a in avals]


def _check_values(ctx: RuleContext, values: Sequence[Any], what: str) -> None:
    if any(isinstance(v, KernelRef) for v in values):
        raise TypeError(f"{ctx.kernel.name}: a ref can't be carried by a {what} on GPU; "
                        "close over it instead")


@register(lax.cond_p)
def _cond(ctx: RuleContext, index, *args, branches, **_):
    index_dtype = np.dtype(ctx.avals_in[0].dtype)
    out_types = _types(ctx.avals_out)

    def emit(k: int, index):
        if k == len(branches) - 1:
            jaxpr, consts = _closed(branches[k])
            return ctx.lower(jaxpr, consts, args)
        # Branch k where index == k (index clamped as lax.switch does), else the rest.
        hit = (arith.cmpi(arith.CmpIPredicate.sle, index, constant(k, index_dtype))
               if k == 0 else arith.cmpi(arith.CmpIPredicate.eq, index,
                                         constant(k, index_dtype)))
        op = scf.IfOp(hit, out_types, has_else=True)
        with ir.InsertionPoint(op.then_block):
            jaxpr, consts = _closed(branches[k])
            outs = ctx.lower(jaxpr, consts, args)
            scf.YieldOp(outs)
        with ir.InsertionPoint(op.else_block):
            scf.YieldOp(emit(k + 1, index))
        return list(op.results)

    if index_dtype == np.bool_:
        index, index_dtype = cast(index, np.bool_, np.int32), np.dtype(np.int32)
    return emit(0, index)


def _for(ctx: RuleContext, lower: ir.Value, upper: ir.Value, consts, carry, body) -> list[Any]:
    """`scf.for` from lower to upper (i32) carrying `carry`; `body(i, *carry)` emits
    the body and returns the new carry."""
    one = constant(1, np.int32)
    op = scf.ForOp(lower, upper, one, list(carry))
    with ir.InsertionPoint(op.body):
        outs = body(op.induction_variable, *op.inner_iter_args)
        scf.YieldOp(outs)
    return list(op.results)


@register(lax.scan_p)
def _scan(ctx: RuleContext, *args, jaxpr, length, reverse, num_consts, num_carry, **_):
    body, body_consts = _closed(jaxpr)
    if len(args) != num_consts + num_carry or len(ctx.avals_out) != num_carry:
        raise TypeError(f"{ctx.kernel.name}: on GPU a scan can't have stacked inputs or "
                        "outputs (lax.scan over arrays); use fori_loop or pl.loop, which "
                        "carry values and read refs")
    consts, carry = args[:num_consts], args[num_consts:]
    _check_values(ctx, carry, "loop")
    return _for(ctx, constant(0, np.int32), constant(length, np.int32), consts, carry,
                lambda i, *c: ctx.lower(body, body_consts, [*consts, *c]))


def _fori_form(cond_jaxpr, body_jaxpr, cond_nconsts: int, body_nconsts: int) -> bool:
    """Whether a while loop is fori_loop's: carry (i, upper, ...), cond `i < upper`,
    body i + 1 and upper unchanged."""
    if cond_nconsts or len(cond_jaxpr.eqns) != 1:
        return False
    eqn = cond_jaxpr.eqns[0]
    i, upper = cond_jaxpr.invars[:2] if len(cond_jaxpr.invars) >= 2 else (None, None)
    if eqn.primitive is not lax.lt_p or list(eqn.invars) != [i, upper]:
        return False
    if i.aval.dtype != np.int32 or upper.aval.dtype != np.int32:
        return False
    b_i, b_upper = body_jaxpr.invars[body_nconsts:body_nconsts + 2]
    if body_jaxpr.outvars[1] is not b_upper:
        return False
    out_i = body_jaxpr.outvars[0]
    return any(e.primitive is lax.add_p and e.outvars[0] is out_i and e.invars[0] is b_i
               and isinstance(e.invars[1], Literal) and int(e.invars[1].val) == 1
               for e in body_jaxpr.eqns)


@register(lax.while_p)
def _while(ctx: RuleContext, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cond, cond_consts_ = _closed(cond_jaxpr)
    body, body_consts_ = _closed(body_jaxpr)
    cond_consts = args[:cond_nconsts]
    body_consts = args[cond_nconsts:cond_nconsts + body_nconsts]
    carry = list(args[cond_nconsts + body_nconsts:])
    _check_values(ctx, carry, "loop")
    if _fori_form(cond, body, cond_nconsts, body_nconsts):
        lower, upper, rest = carry[0], carry[1], carry[2:]

        def step(i, *c):
            outs = ctx.lower(body, body_consts_, [*body_consts, i, upper, *c])
            return outs[2:]
        outs = _for(ctx, lower, upper, body_consts, rest, step)
        return [arith.maxsi(lower, upper), upper, *outs]
    types = [c.type for c in carry]
    op = scf.WhileOp(types, carry)
    before = op.before.blocks.append(*types)
    with ir.InsertionPoint(before):
        [go] = ctx.lower(cond, cond_consts_, [*cond_consts, *before.arguments])
        scf.ConditionOp(go, list(before.arguments))
    after = op.after.blocks.append(*types)
    with ir.InsertionPoint(after):
        scf.YieldOp(ctx.lower(body, body_consts_, [*body_consts, *after.arguments]))
    return list(op.results)


@register(lc.jit_p)
def _call(ctx: RuleContext, *args, jaxpr, **_):
    inner, consts = _closed(jaxpr)
    return ctx.lower(inner, consts, args)


@register(lc.custom_jvp_call_p, lc.custom_vjp_call_p)
def _custom_call(ctx: RuleContext, *args, call_jaxpr, **_):
    inner, consts = _closed(call_jaxpr)
    return ctx.lower(inner, consts, args)


@register(lc.remat_p)
def _checkpoint(ctx: RuleContext, *args, jaxpr, **_):
    inner, consts = _closed(jaxpr)
    return ctx.lower(inner, consts, args)


@register(debug_print_p)
def _debug_print(ctx: RuleContext, *args, fmt):
    # Triton prints its operands after a prefix: the text before the first field.
    prefix = fmt.split("{", 1)[0]
    signed = [int(is_signed(a.dtype)) for a in ctx.avals_in]
    tt.print_(prefix, False, list(args), signed)
    return []
