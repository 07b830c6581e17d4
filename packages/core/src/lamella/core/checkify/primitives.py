"""The two primitives checkify stages: `error_merge`, which folds a new error into
the error so far, and `check`, a check that no checkify has functionalized yet.

`error_merge(old_pred, old_code, *old_payload, new_pred, new_code, *new_payload)`
keeps the old error if one happened, else takes the new one. Shapes line up from
the left: under `vmap` every operand gets the batch axis in front, so a predicate
of shape S goes with payloads of shape S + (the payload's own shape). The new part
may have `reduce_ndim` more axes after S (a `check` under `vmap`): those elements are
reduced to one error, the last one that failed, as JAX reduces them. Core gives
the NumPy impl and the JVP and batching rules; a compiler layer lowers it
(lamella.lax does, in `lamella/lax/checkify_rules.py`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lamella.core.avals import ShapedArray
from lamella.core.checkify.errors import (
    Error,
    ErrorEffect,
    JaxException,
    next_code,
    raise_if_failed,
)
from lamella.core.primitive import Primitive
from lamella.core.rules import Zero, at_front, not_mapped, primitive_batchers, primitive_jvps
from lamella.core.trace import aval_of
from lamella.core.tree_util import tree_flatten, tree_unflatten


class _MultipleResults(Primitive):
    multiple_results = True


class _CheckPrimitive(_MultipleResults):
    def pp_params(self, params):  # the error's structure is printed by its arrays
        return [("debug", params["debug"])]


error_merge_p = _MultipleResults("error_merge")
check_p = _CheckPrimitive("check")


def split_merge_operands(args: tuple | list, num_payload: int) -> tuple:
    """(old_pred, old_code, old_payload, new_pred, new_code, new_payload)."""
    n = num_payload
    return (args[0], args[1], list(args[2:2 + n]), args[2 + n], args[3 + n],
            list(args[4 + n:]))


def _expand(x: Any, shape: tuple[int, ...]) -> np.ndarray:
    """`x` broadcast to `shape` with its axes aligned on the left."""
    x = np.asarray(x)
    return np.broadcast_to(x.reshape(x.shape + (1,) * (len(shape) - x.ndim)), shape)


@error_merge_p.def_impl
def _error_merge_impl(*args, num_payload, negate_new, reduce_ndim):
    old_pred, old_code, old_payload, new_pred, new_code, new_payload = \
        split_merge_operands(args, num_payload)
    failed = np.asarray(new_pred, bool)
    failed = np.logical_not(failed) if negate_new else failed
    batch = failed.shape[:failed.ndim - reduce_ndim]
    flat = failed.reshape(batch + (-1,))
    last = flat.shape[-1] - 1 - np.argmax(flat[..., ::-1], axis=-1)

    def pick(x, own):  # each batch element's value at its last failing index
        x = _expand(x, failed.shape + own).reshape(batch + (-1,) + own)
        picked = np.take_along_axis(x, last.reshape(batch + (1,) * (1 + len(own))),
                                    axis=len(batch))
        return picked.reshape(batch + own)

    old = _expand(old_pred, batch)
    code = np.where(old, _expand(old_code, batch), pick(new_code, ()))
    payload = []
    for o, n in zip(old_payload, new_payload):
        own = np.shape(n)[failed.ndim:]
        kept = np.where(_expand(old, batch + own), _expand(o, batch + own), pick(n, own))
        payload.append(kept.astype(np.asarray(o).dtype))
    return [old | flat.any(-1), code.astype(np.int32), *payload]


@error_merge_p.def_abstract_eval
def _error_merge_abstract_eval(*avals, num_payload, negate_new, reduce_ndim):
    old_pred, _, old_payload, new_pred, _, new_payload = split_merge_operands(avals,
                                                                               num_payload)
    batch = new_pred.shape[:new_pred.ndim - reduce_ndim]
    if old_pred.shape != batch[:old_pred.ndim] or new_pred.dtype != np.bool_:
        raise TypeError(f"error_merge: predicates {old_pred.str_short()} and "
                        f"{new_pred.str_short()} don't line up")
    return [ShapedArray(batch, np.dtype(bool)), ShapedArray(batch, np.dtype(np.int32)),
            *(ShapedArray(batch + n.shape[new_pred.ndim:], o.dtype)
              for o, n in zip(old_payload, new_payload))]


def _error_merge_jvp(primals, tangents, **params):
    outs = error_merge_p.bind(*primals, **params)
    return outs, [Zero.from_primal_value(o) for o in outs]  # flags and messages: no slope


def _error_merge_batch(args, dims, **params):
    size = next(np.shape(a)[d] for a, d in zip(args, dims) if d is not not_mapped)
    outs = error_merge_p.bind(*(at_front(a, d, size) for a, d in zip(args, dims)), **params)
    return outs, [0] * len(outs)


primitive_jvps[error_merge_p] = _error_merge_jvp
primitive_batchers[error_merge_p] = _error_merge_batch


# ---------------------------------------------------------------------------
# Building errors.


def placeholder(effect: ErrorEffect) -> tuple[Any, Any, list]:
    """The (pred, code, payload) of an error of this kind that has not happened."""
    return (np.False_, np.int32(-1), [np.ones(s, d) for s, d in effect.shape_dtypes])


def update_error(error: Error, effect: ErrorEffect, failed: Any, code: Any, payload: list,
                 metadata: dict, *, negate: bool = False, reduce_ndim: int = 0) -> Error:
    """`error` with a new error of kind `effect` folded in; the first one stays."""
    if effect in error._pred:
        old = error._pred[effect], error._code[effect], error._payload[effect]
    else:
        old = placeholder(effect)
    outs = error_merge_p.bind(old[0], old[1], *old[2], failed, code, *payload,
                              num_payload=len(payload), negate_new=negate,
                              reduce_ndim=reduce_ndim)
    return Error({**error._pred, effect: outs[0]}, {**error._code, effect: outs[1]},
                 {**error._metadata, **metadata}, {**error._payload, effect: list(outs[2:])})


def assert_func(error: Error, failed: Any, exception: JaxException, *,
                negate: bool = False) -> Error:
    """`error` with `exception` recorded where `failed` (or, with `negate`, where it is
    False). The exception's static fields become the metadata of a fresh code."""
    code = next_code()
    payload, treedef = tree_flatten(exception)
    return update_error(error, exception.get_effect_type(), failed, np.int32(code), payload,
                        {code: treedef}, negate=negate)


def reduce_error(error: Error) -> Error:
    """A batched error reduced to one: per kind, the last batch element that failed."""
    out = Error({}, {}, error._metadata, {})
    for effect, pred in error._pred.items():
        out = update_error(out, effect, pred, error._code[effect], error._payload[effect], {},
                           reduce_ndim=aval_of(pred).ndim)
    return out


def bind_error_check(error: Error, debug: bool) -> None:
    """Stages (or, on concrete values, performs) the check that `error` holds nothing."""
    if any(aval_of(p).ndim for p in error._pred.values()):
        error = reduce_error(error)
    leaves, tree = tree_flatten(error)
    check_p.bind(*leaves, err_tree=tree, debug=debug)


# ---------------------------------------------------------------------------
# `check`: raises on concrete values; checkify turns it into error_merge.


@check_p.def_impl
def _check_impl(*leaves, err_tree, debug):
    if not debug:  # a debug_check does nothing unless checkify functionalizes it
        raise_if_failed(tree_unflatten(err_tree, leaves))
    return []


@check_p.def_abstract_eval
def _check_abstract_eval(*avals, err_tree, debug):
    return []


def _check_jvp(primals, tangents, *, err_tree, debug):
    check_p.bind(*primals, err_tree=err_tree, debug=debug)
    return [], []


def _check_batch(args, dims, *, err_tree, debug):
    size = next(np.shape(a)[d] for a, d in zip(args, dims) if d is not not_mapped)
    error = tree_unflatten(err_tree, [at_front(a, d, size) for a, d in zip(args, dims)])
    bind_error_check(reduce_error(error), debug)
    return [], []


primitive_jvps[check_p] = _check_jvp
primitive_batchers[check_p] = _check_batch
