"""Timing helpers shared by the benchmarks: medians of repeated runs, and tables."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

QUICK = False
"""Set by `run.py --quick`: each benchmark runs once, at tiny sizes (a smoke test for CI)."""


def pick(full: T, quick: T) -> T:
    """`full` normally, `quick` in quick mode: `N = pick(1_000_000, 64)`."""
    return quick if QUICK else full


@dataclass
class Row:
    name: str
    lamella_s: float
    references: dict[str, float | None]  # e.g. {"jax": 1e-5, "numpy": None}
    unit: str = "us"


def best_time(fn: Callable[[], object], repeat: int = 7, number: int | None = None) -> float:
    """Seconds per call of `fn`: the best of `repeat` runs of `number` calls.

    The minimum, not the median: on a shared machine, load only ever adds time.
    """
    if QUICK:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    fn()
    if number is None:
        start = time.perf_counter()
        fn()
        once = time.perf_counter() - start
        number = max(1, min(10_000, int(0.05 / max(once, 1e-9))))
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number)
    return min(samples)


def compare(candidates: dict[str, Callable[[], object] | None], rounds: int = 3,
            **kwargs) -> dict[str, float | None]:
    """Times each candidate in interleaved rounds (so load drifts hit all alike)."""
    rounds = 1 if QUICK else rounds
    best: dict[str, float | None] = {k: (None if f is None else float("inf"))
                                     for k, f in candidates.items()}
    for _ in range(rounds):
        for name, fn in candidates.items():
            if fn is not None:
                best[name] = min(best[name], best_time(fn, **kwargs))
    return best


def jax_or_none():
    """JAX, when the bench session has it installed (for side-by-side figures only).

    jax and lamella both patch jaxlib's ArrayImpl, the concrete array type they
    share, so importing jax replaces lamella.numpy's methods; they are put back
    here, and benchmarks drive JAX through its functions and jit only (never
    through methods or operators on its concrete arrays).
    """
    try:
        import jax  # noqa: F401  (benchmarks may import jax to compare)
    except ImportError:
        return None
    try:
        import lamella.numpy as lnp
    except ImportError:
        return jax
    lnp._array_methods.install()
    lnp._indexing.install()
    return jax


_SCALE = {"us": 1e6, "ms": 1e3, "s": 1.0}


def print_table(rows: list[Row]) -> None:
    refs = sorted({k for r in rows for k in r.references})
    header = ["benchmark", "lamella"] + refs + [f"lamella/{k}" for k in refs]
    lines = [header]
    for r in rows:
        scale = _SCALE[r.unit]
        cells = [r.name, f"{r.lamella_s * scale:.2f} {r.unit}"]
        for k in refs:
            v = r.references.get(k)
            cells.append("-" if v is None else f"{v * scale:.2f} {r.unit}")
        for k in refs:
            v = r.references.get(k)
            cells.append("-" if not v else f"{r.lamella_s / v:.2f}")
        lines.append(cells)
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
    for i, line in enumerate(lines):
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(line, widths)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
