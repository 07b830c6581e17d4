"""Fails when the modules of a lamella package import each other in a cycle.

Every import counts, at module level or inside a function: a function-local
import that closes a loop is still a loop, only hidden. `from pkg import name`
is an edge to the submodule `pkg.name` when one exists, else to `pkg` itself.

    python tools/import_cycles.py          # all packages; exit status 1 on a cycle
"""

from __future__ import annotations

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def modules_of(src: pathlib.Path) -> dict[str, pathlib.Path]:
    """Module name -> file, for every module under a package's `src/`."""
    found = {}
    for path in src.rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(name: str, path: pathlib.Path, known: set[str]) -> set[str]:
    """The modules of `known` that module `name` imports."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in known else base)
    edges = set()
    for target in targets:
        while target and target not in known:  # `import a.b.c` also imports a.b and a
            target = target.rpartition(".")[0]
        if target and target != name:
            edges.add(target)
    return edges


def tangles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module: each is a set of
    modules that import each other in a loop (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def main() -> int:
    failed = False
    for src in sorted(ROOT.glob("packages/*/src")):
        modules = modules_of(src)
        graph = {name: imports_of(name, path, set(modules)) for name, path in modules.items()}
        package = src.parent.name
        components = tangles(graph)
        for component in components:
            print(f"{package}: these modules import each other in a loop: "
                  f"{', '.join(component)}")
        failed = failed or bool(components)
        if not components:
            print(f"{package}: {len(modules)} modules, no import cycle")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
