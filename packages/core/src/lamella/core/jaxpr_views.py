"""Pictures of jaxprs: graphviz `dot` text of a jaxpr's dataflow, and an SVG of it when the
`dot` program is installed. JAX has no such view (only text); a graph of a few hundred
equations is easier to follow than the same lines of text.

Inputs are ellipses, equations boxes (primitive name and short params), outputs
double octagons; an edge carries a value from the equation that makes it to the
ones that read it, labelled with its type. A jaxpr inside an equation (a `jit`,
a loop body, cond branches) is drawn as a cluster next to it, joined by a dashed edge.
"""

from __future__ import annotations

import shutil
import subprocess

from lamella.core.jaxpr import ClosedJaxpr, Jaxpr, Literal, Var

_MAX_PARAM_CHARS = 40


def _quote(s: str) -> str:
    """A dot string; a newline becomes dot's centred line break."""
    escaped = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _params_text(eqn) -> str:
    shown = []
    for key, value in eqn.primitive.pp_params(eqn.params):
        if isinstance(value, (Jaxpr, ClosedJaxpr)) or (
                isinstance(value, tuple) and value
                and all(isinstance(v, (Jaxpr, ClosedJaxpr)) for v in value)):
            continue
        item = f"{key}={value}"
        shown.append(item if len(item) <= _MAX_PARAM_CHARS else item[:_MAX_PARAM_CHARS] + "…")
    return "\n".join(shown)


class _Graph:
    def __init__(self, source_info: bool) -> None:
        self.lines: list[str] = []
        self.count = 0
        self.source_info = source_info

    def node(self, label: str, indent: str, **attrs: str) -> str:
        name = f"n{self.count}"
        self.count += 1
        extra = "".join(f", {k}={v}" for k, v in attrs.items())
        self.lines.append(f"{indent}{name} [label={_quote(label)}{extra}];")
        return name

    def edge(self, a: str, b: str, indent: str, label: str = "", **attrs: str) -> None:
        extra = "".join(f", {k}={v}" for k, v in attrs.items())
        self.lines.append(f"{indent}{a} -> {b} [label={_quote(label)}{extra}];")

    def jaxpr(self, jaxpr: Jaxpr, indent: str) -> None:
        made: dict[Var, str] = {}
        for v in jaxpr.constvars:
            made[v] = self.node(f"const {v.aval.str_short()}", indent, shape="ellipse",
                                style="dashed")
        for i, v in enumerate(jaxpr.invars):
            made[v] = self.node(f"in{i}: {v.aval.str_short()}", indent, shape="ellipse")
        for eqn in jaxpr.eqns:
            label = eqn.primitive.name
            params = _params_text(eqn)
            if params:
                label += "\n" + params
            if self.source_info and eqn.source_info is not None:
                label += "\n" + str(eqn.source_info)
            node = self.node(label, indent, shape="box")
            for atom in eqn.invars:
                if isinstance(atom, Literal):
                    self.edge(self.node(atom.pretty(), indent, shape="plaintext"), node, indent)
                else:
                    self.edge(made[atom], node, indent, atom.aval.str_short())
            for v in eqn.outvars:
                made[v] = node
            for sub in eqn.primitive.subjaxprs(eqn.params):
                self.cluster(sub.jaxpr if isinstance(sub, ClosedJaxpr) else sub, node,
                             eqn.primitive.name, indent)
        for i, atom in enumerate(jaxpr.outvars):
            out = self.node(f"out{i}: {atom.aval.str_short()}", indent, shape="doubleoctagon")
            source = (made[atom] if isinstance(atom, Var) else
                      self.node(atom.pretty(), indent, shape="plaintext"))
            self.edge(source, out, indent)

    def cluster(self, jaxpr: Jaxpr, caller: str, name: str, indent: str) -> None:
        cluster = f"cluster_{self.count}"
        self.count += 1
        self.lines.append(f"{indent}subgraph {cluster} {{")
        self.lines.append(f"{indent}  label={_quote(name)}; style=rounded; color=gray;")
        first = self.count
        self.jaxpr(jaxpr, indent + "  ")
        self.lines.append(f"{indent}}}")
        if self.count > first:
            self.edge(caller, f"n{first}", indent, style="dashed", lhead=cluster)


def jaxpr_graph(jaxpr: Jaxpr | ClosedJaxpr, *, source_info: bool = False) -> str:
    """The dataflow graph of `jaxpr` as graphviz `dot` text (render it with
    `dot -Tsvg`, or `jaxpr_svg`). With `source_info`, equations show the user's line.

    >>> import numpy as np
    >>> from lamella.core import make_jaxpr
    >>> from lamella.core.structural import reduce_sum
    >>> print(jaxpr_graph(make_jaxpr(lambda x: reduce_sum(x, (0,)))(np.ones(3, np.float32))))
    digraph jaxpr {
      rankdir=TB; compound=true; node [fontname="monospace"];
      n0 [label="in0: f32[3]", shape=ellipse];
      n1 [label="reduce_sum\\naxes=(0,)\\nout_sharding=None", shape=box];
      n0 -> n1 [label="f32[3]"];
      n2 [label="out0: f32[]", shape=doubleoctagon];
      n1 -> n2 [label=""];
    }
    """
    graph = _Graph(source_info)
    graph.jaxpr(jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr, "  ")
    header = ['digraph jaxpr {', '  rankdir=TB; compound=true; node [fontname="monospace"];']
    return "\n".join([*header, *graph.lines, "}"])


def jaxpr_svg(jaxpr: Jaxpr | ClosedJaxpr, *, source_info: bool = False) -> str:
    """The graph of `jaxpr` rendered as SVG text by graphviz's `dot` program.

    Raises RuntimeError naming what to install when `dot` is not on the PATH (the
    text from `jaxpr_graph` can still be rendered elsewhere).
    """
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError("jaxpr_svg needs graphviz's `dot` program, which is not on the "
                           "PATH: install graphviz (e.g. `apt-get install graphviz` or "
                           "`conda install graphviz`), or render the text of "
                           "jaxpr_graph(jaxpr) elsewhere.")
    text = jaxpr_graph(jaxpr, source_info=source_info)
    result = subprocess.run([dot, "-Tsvg"], input=text, capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        raise RuntimeError(f"dot failed to render the jaxpr's graph: {result.stderr.strip()}")
    return result.stdout
