"""Runs every benchmark module and prints their tables.

Each `bench_*.py` here defines `run() -> list[Row]`; rows are printed with
lamella's time, the reference times (NumPy, JAX when installed) and ratios.
`python benchmarks/run.py [name ...]` runs a subset; `--quick` runs each
benchmark once at tiny sizes, to check that every benchmark still works.
"""

from __future__ import annotations

import importlib
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import harness  # noqa: E402


def main(names: list[str]) -> None:
    here = pathlib.Path(__file__).parent
    modules = sorted(p.stem for p in here.glob("bench_*.py"))
    for name in modules:
        if names and not any(n in name for n in names):
            continue
        module = importlib.import_module(name)
        print(f"\n## {name[len('bench_'):]}: {module.__doc__.strip().splitlines()[0]}")
        harness.print_table(module.run())


if __name__ == "__main__":
    args = sys.argv[1:]
    harness.QUICK = "--quick" in args
    main([a for a in args if a != "--quick"])
