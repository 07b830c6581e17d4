"""`estimate_cost`: what XLA's cost analysis says a function costs, as a `CostEstimate`.

>>> import numpy as np
>>> estimate_cost(lambda a, b: a @ b, np.ones((8, 8), np.float32), np.ones((8, 8), np.float32))
CostEstimate(flops=1024, transcendentals=0, bytes_accessed=768, remote_bytes_transferred=0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lamella.core import jit
from lamella.pallas.specs import CostEstimate

__all__ = ["estimate_cost"]


def estimate_cost(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> CostEstimate:
    """The flops, transcendental operations and bytes accessed of `fun(*args, **kwargs)`,
    from XLA's cost analysis of the compiled function."""
    analysis = jit(fun).lower(*args, **kwargs).compile().cost_analysis()
    if isinstance(analysis, list):
        analysis = analysis[0] if analysis else {}
    analysis = analysis or {}
    return CostEstimate(flops=int(analysis.get("flops", 0)),
                        transcendentals=int(analysis.get("transcendentals", 0)),
                        bytes_accessed=int(analysis.get("bytes accessed", 0)))
