"""The IR: jaxprs, their printed form, a type checker and an interpreter.

A `Jaxpr` is a list of equations in A-normal form over typed variables; a
`ClosedJaxpr` pairs it with the values of its constant variables. The printed
form is JAX's:

    { lambda ; a:f32[5]. let b:f32[5] = tanh a; c:f32[5] = exp b in (c,) }

Variables are named by order of appearance when printed, so a jaxpr prints
the same however it was built.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from lamella.core import dtypes
from lamella.core.avals import ShapedArray, get_aval
from lamella.core.errors import JaxprTypeError
from lamella.core.source_info import SourceInfo, carry_source_info, describe

NO_EFFECTS: frozenset = frozenset()


class Var:
    """A variable of a jaxpr; identity is the object itself."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self) -> str:
        return f"Var(id={id(self):#x}):{self.aval.str_short()}"


class Literal:
    """A constant scalar written inline in an equation: `2.0:f32[]`."""

    __slots__ = ("val", "aval")

    def __init__(self, val: Any, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self) -> str:
        return f"Literal({self.val!r}:{self.aval.str_short()})"

    def pretty(self) -> str:
        val = str(np.asarray(self.val).item()) if not np.shape(self.val) else "[...]"
        return f"{val}:{self.aval.str_short()}"


Atom = Var | Literal


class DebugInfo(NamedTuple):
    """What a traced function was: for error messages and printing."""

    traced_for: str  # "jit", "make_jaxpr", "vmap", ...
    func_name: str
    func_src: str | None
    arg_names: tuple[str, ...] | None


class JaxprEqn:
    """`outvars = primitive[params] invars`, with effects and the user's location."""

    __slots__ = ("invars", "outvars", "primitive", "params", "effects", "source_info")

    def __init__(self, invars: list[Atom], outvars: list[Var], primitive, params: dict,
                 effects: frozenset = NO_EFFECTS, source_info: SourceInfo | None = None):
        self.invars = invars
        self.outvars = outvars
        self.primitive = primitive
        self.params = params
        self.effects = effects
        self.source_info = source_info

    def replace(self, **changes) -> JaxprEqn:
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        return JaxprEqn(**fields)

    def __repr__(self) -> str:
        return _pp_eqn(self, PpContext()).format()


class Jaxpr:
    """`{ lambda constvars ; invars . let eqns in outvars }`."""

    __slots__ = ("constvars", "invars", "outvars", "eqns", "effects", "debug_info",
                 "__weakref__")

    def __init__(self, constvars: Sequence[Var], invars: Sequence[Var],
                 outvars: Sequence[Atom], eqns: Sequence[JaxprEqn],
                 effects: frozenset = NO_EFFECTS, debug_info: DebugInfo | None = None):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.eqns = list(eqns)
        self.effects = effects
        self.debug_info = debug_info

    in_avals = property(lambda self: [v.aval for v in self.invars])
    out_avals = property(lambda self: [v.aval for v in self.outvars])

    def __str__(self) -> str:
        return pp_jaxpr(self)

    __repr__ = __str__

    def pretty_print(self, *, source_info: bool = False, print_shapes: bool = True,
                     custom_pp_eqn_rules: bool = True, name_stack: bool = False,
                     print_effects: bool = False, width: int = 80, **kwargs: Any) -> str:
        """The printed jaxpr; with `source_info=True` each equation is annotated with
        the user's source line that made it (`# file:line (function)`), as JAX does."""
        return pp_jaxpr(self, width=width, source_info=source_info, print_shapes=print_shapes,
                        custom_pp_eqn_rules=custom_pp_eqn_rules)


class ClosedJaxpr:
    """A jaxpr together with the values of its constvars (`consts`)."""

    __slots__ = ("jaxpr", "consts", "__weakref__")

    def __init__(self, jaxpr: Jaxpr, consts: Sequence[Any]):
        if len(consts) != len(jaxpr.constvars):
            raise ValueError(f"ClosedJaxpr needs {len(jaxpr.constvars)} consts, "
                             f"got {len(consts)}")
        self.jaxpr = jaxpr
        self.consts = list(consts)

    literals = property(lambda self: self.consts)
    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)
    effects = property(lambda self: self.jaxpr.effects)

    def __str__(self) -> str:
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__

    def pretty_print(self, *, source_info: bool = False, print_shapes: bool = True,
                     name_stack: bool = False, custom_pp_eqn_rules: bool = True,
                     print_effects: bool = False, **kwargs: Any) -> str:
        """`Jaxpr.pretty_print` of the jaxpr (JAX's signature)."""
        return self.jaxpr.pretty_print(source_info=source_info, print_shapes=print_shapes,
                                       custom_pp_eqn_rules=custom_pp_eqn_rules, **kwargs)


# ---------------------------------------------------------------------------
# Printing: a small Wadler-Lindig document printer, and jaxprs laid out in it
# exactly as JAX lays them out (so the same program prints the same text).
#
# A document is text, concatenation, an optional line break, a nesting level and
# a group. A group prints on one line if all of it fits in the rest of the line
# (only the group is measured, not what follows it); otherwise its own breaks
# become newlines indented to the enclosing nesting level, and each group inside
# it decides again.


class Doc:
    """A document for the pretty-printer; `format(width)` lays it out."""

    __slots__ = ()

    def __add__(self, other: Doc) -> Doc:
        return concat([self, other])

    def format(self, width: int = 80) -> str:
        return _format(self, width)

    def __str__(self) -> str:
        return self.format()


class _Text(Doc):
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class _Concat(Doc):
    __slots__ = ("children",)

    def __init__(self, children: Sequence[Doc]):
        self.children = children


class _Break(Doc):
    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class _Group(Doc):
    __slots__ = ("child",)

    def __init__(self, child: Doc):
        self.child = child


class _Annotation(Doc):
    """A comment for the end of the line this is on: `# text`, aligned with the others."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class _Nest(Doc):
    __slots__ = ("indent", "child")

    def __init__(self, indent: int, child: Doc):
        self.indent = indent
        self.child = child


def text(s: str) -> Doc:
    return _Text(s)


def concat(docs: Sequence[Doc]) -> Doc:
    return _Concat(list(docs))


def brk(s: str = " ") -> Doc:
    """A line break, printed as `s` when its group fits on the line."""
    return _Break(s)


def group(doc: Doc) -> Doc:
    return _Group(doc)


def nest(indent: int, doc: Doc) -> Doc:
    return _Nest(indent, doc)


def join(sep: Doc, docs: Sequence[Doc]) -> Doc:
    docs = list(docs)
    parts: list[Doc] = docs[:1]
    for d in docs[1:]:
        parts += [sep, d]
    return concat(parts)


_FLAT, _BROKEN = False, True


def _fits(doc: Doc, room: int) -> bool:
    stack = [doc]
    while stack and room >= 0:
        d = stack.pop()
        if type(d) is _Text or type(d) is _Break:
            room -= len(d.text)
        elif type(d) is _Annotation:
            continue
        elif type(d) is _Concat:
            stack.extend(reversed(d.children))
        else:  # _Group, _Nest: flat, so only their contents matter
            stack.append(d.child)
    return room >= 0


def _format(doc: Doc, width: int) -> str:
    out: list[str] = []
    column = 0
    annotations: dict[int, str] = {}  # line number -> the first annotation on it
    stack: list[tuple[int, bool, Doc]] = [(0, _BROKEN, doc)]
    while stack:
        indent, mode, d = stack.pop()
        kind = type(d)
        if kind is _Text:
            out.append(d.text)
            column += len(d.text)
        elif kind is _Annotation:
            annotations.setdefault(sum(piece.count("\n") for piece in out), d.text)
        elif kind is _Concat:
            stack.extend((indent, mode, c) for c in reversed(d.children))
        elif kind is _Nest:
            stack.append((indent + d.indent, mode, d.child))
        elif kind is _Break:
            if mode is _FLAT:
                out.append(d.text)
                column += len(d.text)
            else:
                out.append("\n" + " " * indent)
                column = indent
        else:
            flat = mode is _FLAT or _fits(d.child, width - column)
            stack.append((indent, _FLAT if flat else _BROKEN, d.child))
    return _annotated("".join(out), annotations)


def _annotated(printed: str, annotations: dict[int, str]) -> str:
    """Appends ` # annotation` to the annotated lines, padded to one column (JAX's layout)."""
    if not annotations:
        return printed
    lines = printed.split("\n")
    column = max(len(lines[i]) for i in annotations)
    for i, note in annotations.items():
        lines[i] = f"{lines[i].ljust(column)} # {note}"
    return "\n".join(lines)


def _alphabetic(n: int) -> str:
    """0 -> 'a', 25 -> 'z', 26 -> 'ba': base 26 with digits a..z, like JAX's names."""
    letters = chr(ord("a") + n % 26)
    while n >= 26:
        n //= 26
        letters = chr(ord("a") + n % 26) + letters
    return letters


class PpContext:
    """Variable names while printing one jaxpr: given in order of first appearance,
    global across nested jaxprs; `_` for outputs never read. Jaxprs that occur more
    than once (or nested ones over ten equations) print once, up front, by name."""

    def __init__(self, names: dict[Var, str] | None = None, *, source_info: bool = False,
                 print_shapes: bool = True, custom_pp_eqn_rules: bool = True) -> None:
        self.names: dict[Var, str] = dict(names or {})
        self.shared_jaxprs: dict[Jaxpr, str] = {}
        self._fresh = 0
        self.source_info = source_info  # annotate equations with the user's source line
        self.print_shapes = print_shapes
        self.custom_pp_eqn_rules = custom_pp_eqn_rules

    def name(self, v: Var) -> str:
        name = self.names.get(v)
        if name is None:
            taken = set(self.shared_jaxprs.values())
            while (name := _alphabetic(self._fresh)) in taken:
                self._fresh += 1
            self._fresh += 1
            self.names[v] = name
        return name

    def suggest_same_var_names(self, for_vars: Sequence[Atom], like_vars: Sequence[Atom]
                               ) -> None:
        """Names the variables of a called jaxpr after the caller's operands and
        results, where those are distinct variables (as JAX prints `jit`)."""
        if len(for_vars) != len(like_vars):
            return
        used: set[Var] = set()
        for for_v, like_v in zip(for_vars, like_vars):
            if (isinstance(like_v, Var) and like_v not in used and isinstance(for_v, Var)
                    and for_v not in self.names):
                used.add(like_v)
                self.names[for_v] = self.name(like_v)


# Custom layouts of equations: `rule(eqn, context) -> Doc`, usually a call of
# `pp_eqn(eqn, context, params)` with some params hidden or reformatted.
pp_eqn_rules: dict[Any, Callable[[JaxprEqn, PpContext], Doc]] = {}


def pp_atom(v: Atom, context: PpContext) -> str:
    if isinstance(v, Literal):
        return v.pretty()
    return context.name(v)


def _pp_vars(vs: Sequence[Atom], context: PpContext, separator: str = "",
             binders: bool = False) -> Doc:
    items = [text(f"{context.name(v)}:{v.aval.str_short()}"
                  if context.print_shapes else context.name(v)) if binders
             else text(pp_atom(v, context)) for v in vs]
    return nest(2, group(join(text(separator) + group(brk()), items)))


def pp_eqn(eqn: JaxprEqn, context: PpContext,
           params: Sequence[tuple[str, Any]] | None = None) -> Doc:
    """An equation with the given params (by default all, sorted)."""
    if params is None:
        params = eqn.primitive.pp_params(eqn.params)
    lhs = _pp_vars(eqn.outvars, context, binders=True)
    rhs = [text(eqn.primitive.name), _pp_kv_pairs(params, context),
           text(" ") + _pp_vars(eqn.invars, context)]
    return concat([lhs, text(" = "), *rhs]) if eqn.outvars else concat(rhs)


def _pp_eqn(eqn: JaxprEqn, context: PpContext) -> Doc:
    if context.source_info:
        where = "" if eqn.source_info is None else str(eqn.source_info)
        return concat([_Annotation(where), _pp_eqn_body(eqn, context)])
    return _pp_eqn_body(eqn, context)


def _pp_eqn_body(eqn: JaxprEqn, context: PpContext) -> Doc:
    rule = pp_eqn_rules.get(eqn.primitive) if context.custom_pp_eqn_rules else None
    if rule is not None:
        return rule(eqn, context)
    if eqn.primitive.name == "jit":
        _share_call_names(eqn, context)
    return pp_eqn(eqn, context)


def _share_call_names(eqn: JaxprEqn, context: PpContext) -> None:
    closed = eqn.params.get("jaxpr")
    inner = closed.jaxpr if isinstance(closed, ClosedJaxpr) else closed
    if isinstance(inner, Jaxpr) and inner not in context.shared_jaxprs:
        context.suggest_same_var_names(inner.invars, eqn.invars)
        context.suggest_same_var_names(inner.outvars, eqn.outvars)


def _pp_kv_pairs(params: Sequence[tuple[str, Any]], context: PpContext) -> Doc:
    if not params:
        return concat([])
    pairs = [text(f"{k}=") + _pp_param(v, context) for k, v in params]
    return group(concat([nest(2, concat([text("["), brk(""), join(brk(), pairs)])),
                         brk(""), text("]")]))


def _pp_param(value: Any, context: PpContext) -> Doc:
    if isinstance(value, (Jaxpr, ClosedJaxpr)):
        return _pp_jaxpr(_open(value), context)
    if type(value) is tuple and value and all(isinstance(v, (Jaxpr, ClosedJaxpr))
                                              for v in value):
        docs = [_pp_jaxpr(_open(v), context) for v in value]
        return group(concat([nest(2, concat([text("("), brk(""), join(brk(), docs)])),
                             brk(""), text(")")]))
    return text(_param_text(value))


def _param_text(value: Any) -> str:
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if isinstance(value, ShapedArray):
        return value.str_short()
    if isinstance(value, frozenset):
        return f"frozenset({{{', '.join(repr(e) for e in sorted(value))}}})"
    if callable(value) and hasattr(value, "__name__") and not isinstance(value, type):
        return value.__name__
    return re.sub(r" at 0x([0-9a-fA-F]+)", lambda m: " at 0x" + "X" * len(m.group(1)),
                  str(value))


def _open(jaxpr: Jaxpr | ClosedJaxpr) -> Jaxpr:
    return jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr


def _pp_jaxpr(jaxpr: Jaxpr, context: PpContext) -> Doc:
    shared = context.shared_jaxprs.get(jaxpr)
    if shared is not None:
        return text(shared)
    return _pp_skeleton(jaxpr, context)


def _pp_skeleton(jaxpr: Jaxpr, context: PpContext) -> Doc:
    constvars = _pp_vars(jaxpr.constvars, context, binders=True)
    invars = _pp_vars(jaxpr.invars, context, binders=True)
    eqns = join(brk("; "), [_pp_eqn(e, context) for e in jaxpr.eqns])
    outvars = concat([text("("), _pp_vars(jaxpr.outvars, context, separator=","),
                      text(",)" if len(jaxpr.outvars) == 1 else ")")])
    return group(concat([nest(2, concat([
        text("{ lambda "), constvars, text("; "), invars, text(". let"),
        nest(2, brk() + eqns), brk(), text("in "), outvars])), text(" }")]))


def _unread_outvars(jaxpr: Jaxpr) -> dict[Var, str]:
    """`_` for every equation output that nothing reads (JAX's dropped variables)."""
    read = {v for v in jaxpr.outvars if isinstance(v, Var)}
    names = {}
    for eqn in reversed(jaxpr.eqns):
        for v in eqn.outvars:
            if v not in read:
                names[v] = "_"
        read.update(v for v in eqn.invars if isinstance(v, Var))
    return names


def _share_jaxprs(top: Jaxpr, context: PpContext) -> list[tuple[str, Jaxpr]]:
    """Names jaxprs that occur more than once, or nested ones of more than ten
    equations (counted twice), after the call that names them (`jaxpr` if none)."""
    counts: dict[Jaxpr, int] = {}
    suggested: dict[Jaxpr, str] = {}
    queue = deque([top])
    while queue:
        jaxpr = queue.popleft()
        counts[jaxpr] = counts.get(jaxpr, 0) + (2 if jaxpr is not top
                                                and len(jaxpr.eqns) > 10 else 1)
        for eqn in jaxpr.eqns:
            name = eqn.params.get("name")
            for sub in map(_open, eqn.primitive.subjaxprs(eqn.params)):
                queue.append(sub)
                if isinstance(name, str):
                    suggested.setdefault(sub, name.strip("<>"))
    used: dict[str, int] = {}
    shared = []
    for jaxpr, count in counts.items():
        if count == 1:
            continue
        name = suggested.get(jaxpr, "jaxpr")
        seen = used.get(name, 0)
        used[name] = seen + 1
        if seen:
            name += str(seen)
            used[name] = used.get(name, 0) + 1
        context.shared_jaxprs[jaxpr] = name
        shared.append((name, jaxpr))
    return shared


def pp_jaxpr(jaxpr: Jaxpr, context: PpContext | None = None, width: int = 80, *,
             source_info: bool = False, print_shapes: bool = True,
             custom_pp_eqn_rules: bool = True) -> str:
    """The printed form of a jaxpr, as JAX prints it; `source_info` annotates each
    equation with the user's source line."""
    context = context or PpContext(_unread_outvars(jaxpr), source_info=source_info,
                                   print_shapes=print_shapes,
                                   custom_pp_eqn_rules=custom_pp_eqn_rules)
    docs = [concat([text(f"let {name} = "), _pp_skeleton(shared, context), text(" in"),
                    brk()]) for name, shared in _share_jaxprs(jaxpr, context)]
    docs.append(_pp_jaxpr(jaxpr, context))
    return concat(docs).format(width)


# ---------------------------------------------------------------------------
# Type checking.


def _typematch(a: ShapedArray, b: ShapedArray) -> bool:
    # Weak types are a property of values, not of the program's types.
    return a.shape == b.shape and a.dtype == b.dtype


def check_jaxpr(jaxpr: Jaxpr | ClosedJaxpr) -> None:
    """Checks that every variable is defined once before use and every equation's
    output types agree with its primitive's abstract evaluation."""
    if isinstance(jaxpr, ClosedJaxpr):
        for var, const in zip(jaxpr.jaxpr.constvars, jaxpr.consts):
            aval = _aval_of_const(const)
            if aval is not None and not _typematch(var.aval, aval):
                raise JaxprTypeError(f"constvar of type {var.aval.str_short()} bound to a "
                                     f"value of type {aval.str_short()}")
        jaxpr = jaxpr.jaxpr
    defined: set[Var] = set()
    context = PpContext()
    printed = pp_jaxpr(jaxpr, context)  # names every variable, so messages match it

    def binder(v: Var) -> str:
        return f"{context.name(v)}:{v.aval.str_short()}"

    def define(v: Var, where: str) -> None:
        if v in defined:
            raise JaxprTypeError(f"Variable {binder(v)} defined twice ({where}) in\n{printed}")
        defined.add(v)

    def read(v: Atom, where: str) -> ShapedArray:
        if isinstance(v, Var) and v not in defined:
            raise JaxprTypeError(f"Variable {binder(v)} used before it is defined "
                                 f"({where}) in\n{printed}")
        return v.aval

    for v in jaxpr.constvars:
        define(v, "constvar")
    for v in jaxpr.invars:
        define(v, "invar")
    for eqn in jaxpr.eqns:
        where = (f"equation `{_pp_eqn(eqn, context).format()}` from "
                 f"{describe(eqn.source_info)}")
        in_avals = [read(v, where) for v in eqn.invars]
        for sub in eqn.primitive.subjaxprs(eqn.params):
            check_jaxpr(sub)
        try:
            out = eqn.primitive.abstract_eval(*in_avals, **eqn.params)
        except Exception as e:
            raise JaxprTypeError(f"{where} fails abstract evaluation: {e}") from e
        out_avals = out if eqn.primitive.multiple_results else [out]
        if len(out_avals) != len(eqn.outvars):
            raise JaxprTypeError(f"{where} has {len(eqn.outvars)} outputs, but its "
                                 f"primitive produces {len(out_avals)}")
        for var, aval in zip(eqn.outvars, out_avals):
            if not _typematch(var.aval, aval):
                raise JaxprTypeError(f"{where} binds a variable of type "
                                     f"{var.aval.str_short()} to a value of type "
                                     f"{aval.str_short()}")
            define(var, where)
    for v in jaxpr.outvars:
        read(v, "jaxpr outputs")


def _aval_of_const(const: Any) -> ShapedArray | None:
    try:
        return get_aval(const)
    except TypeError:
        return None


# ---------------------------------------------------------------------------
# Interpretation.


def eval_jaxpr(jaxpr: Jaxpr, consts: Sequence[Any], *args: Any) -> list[Any]:
    """Evaluates a jaxpr by binding each equation's primitive on the current trace.

    Under a transformation this re-traces the jaxpr through it; at the top level
    it computes values.
    """
    if len(args) != len(jaxpr.invars):
        raise TypeError(f"jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}")
    env: dict[Var, Any] = dict(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    for eqn in jaxpr.eqns:
        invals = [v.val if type(v) is Literal else env[v] for v in eqn.invars]
        with carry_source_info(eqn.source_info):
            outs = eqn.primitive.bind(*invals, **eqn.params)
        if eqn.primitive.multiple_results:
            env.update(zip(eqn.outvars, outs))
        else:
            env[eqn.outvars[0]] = outs
    return [v.val if type(v) is Literal else env[v] for v in jaxpr.outvars]


def jaxpr_as_fun(closed_jaxpr: ClosedJaxpr) -> Callable[..., list[Any]]:
    """The closed jaxpr as a Python function of its inputs, returning a list."""
    def fun(*args):
        return eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)
    fun.__name__ = "jaxpr_fun"
    return fun


def literal_if_scalar(value: Any, aval: ShapedArray) -> Literal | None:
    """A Literal for Python and NumPy scalars; None for anything bigger."""
    if type(value) in (bool, int, float, complex):
        return Literal(value, aval)
    if isinstance(value, (np.generic, np.ndarray)) and np.shape(value) == () \
            and value.dtype != dtypes.float0:
        return Literal(value, aval)
    return None


def dce_jaxpr(jaxpr: Jaxpr, used_outputs: Sequence[bool] | None = None) -> Jaxpr:
    """Drops equations whose results no (used) output needs; equations with
    effects (a host callback, say) stay, if the jaxpr defines their inputs (a
    caller may cut a jaxpr down to some of its inputs)."""
    outvars = list(jaxpr.outvars) if used_outputs is None \
        else [v for v, used in zip(jaxpr.outvars, used_outputs) if used]
    live = {v for v in outvars if isinstance(v, Var)}
    effectful = _effectful_eqns(jaxpr)
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if id(eqn) in effectful or any(v in live for v in eqn.outvars):
            kept.append(eqn)
            live.update(v for v in eqn.invars if isinstance(v, Var))
    kept.reverse()
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, kept, jaxpr.effects, jaxpr.debug_info)


def _effectful_eqns(jaxpr: Jaxpr) -> set[int]:
    """The ids of the equations with effects whose inputs the jaxpr defines."""
    if not any(eqn.effects for eqn in jaxpr.eqns):
        return set()
    defined = {*jaxpr.constvars, *jaxpr.invars}
    found = set()
    for eqn in jaxpr.eqns:
        if all(type(v) is Literal or v in defined for v in eqn.invars):
            defined.update(eqn.outvars)
            if eqn.effects:
                found.add(id(eqn))
    return found
