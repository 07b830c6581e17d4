"""lamella.core.state: mutable references inside traced code, and their discharge.

Refs (`AbstractRef` avals, held through `Ref` views) are read and written with
the `get`, `swap` and `addupdate` primitives; `discharge_state` turns a jaxpr
that does so into a functional one, and `run_state` runs a function of refs.
This is what Pallas kernels are built on.

>>> import numpy as np
>>> from lamella.core.structural import add_any_p
>>> def double(ref):
...     ref[...] = add_any_p.bind(ref[...], ref[...])
>>> float(run_state(double)(np.float32(2)))
4.0
"""

from lamella.core.state.discharge import (
    discharge_rules,
    discharge_state,
    eval_discharged,
    register_discharge_rule,
    run_state,
    stateful_primitives,
    trace_stateful,
    trace_stateful_body,
)
from lamella.core.state.primitives import (
    addupdate_p,
    get_p,
    ref_addupdate,
    ref_get,
    ref_swap,
    swap_p,
)
from lamella.core.state.types import (
    AbstractRef,
    DimIndex,
    IndexSpec,
    Slice,
    chain_shape,
    ds,
    dslice,
    index_spec,
    is_ref_aval,
)
from lamella.core.state.views import Ref, is_ref

__all__ = [
    "AbstractRef", "DimIndex", "IndexSpec", "Ref", "Slice", "addupdate_p", "chain_shape",
    "discharge_rules", "discharge_state", "ds", "dslice", "eval_discharged", "get_p",
    "index_spec", "is_ref", "is_ref_aval", "ref_addupdate", "ref_get", "ref_swap",
    "register_discharge_rule", "run_state", "stateful_primitives", "swap_p", "trace_stateful",
    "trace_stateful_body",
]
