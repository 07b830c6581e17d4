"""The IR: jaxprs, their printed form, a type checker and an interpreter.

A `Jaxpr` is a list of equations in A-normal form over typed variables; a
`ClosedJaxpr` pairs it with the values of its constant variables. The printed
form is JAX's:

    { lambda ; a:f32[5]. let b:f32[5] = tanh a; c:f32[5] = exp b in (c,) }

Variables are named by order of appearance when printed, so a jaxpr prints
the same however it was built.
"""

from __future__ import annotations

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
        val = self.val.item() if isinstance(self.val, (np.ndarray, np.generic)) else self.val
        return f"{val!r}:{self.aval.str_short()}"


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
        return _pp_eqn(self, _Names(), 0)


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


# ---------------------------------------------------------------------------
# Printing.


def _alphabetic(n: int) -> str:
    """0 -> 'a', 25 -> 'z', 26 -> 'ba': base 26 with digits a..z, like JAX's names."""
    letters = chr(ord("a") + n % 26)
    while n >= 26:
        n //= 26
        letters = chr(ord("a") + n % 26) + letters
    return letters


class _Names:
    def __init__(self) -> None:
        self.names: dict[Var, str] = {}

    def __call__(self, v: Atom) -> str:
        if isinstance(v, Literal):
            return v.pretty()
        name = self.names.get(v)
        if name is None:
            name = self.names[v] = _alphabetic(len(self.names))
        return name

    def binder(self, v: Var) -> str:
        return f"{self(v)}:{v.aval.str_short()}"


_ONE_LINE_WIDTH = 80


def pp_jaxpr(jaxpr: Jaxpr, names: _Names | None = None, indent: int = 0) -> str:
    """Prints a jaxpr; `indent` is the column where it starts (for nesting)."""
    names = names or _Names()
    consts = " ".join(map(names.binder, jaxpr.constvars))
    ins = " ".join(map(names.binder, jaxpr.invars))
    head = f"{{ lambda {consts}; {ins}. let"
    eqns = [_pp_eqn(e, names, indent + 4) for e in jaxpr.eqns]
    outs = ", ".join(map(names, jaxpr.outvars))
    outs = f"({outs},)" if len(jaxpr.outvars) == 1 else f"({outs})"
    one_line = f"{head} {'; '.join(eqns)}{' ' if eqns else ''}in {outs} }}"
    if indent + len(one_line) <= _ONE_LINE_WIDTH and "\n" not in one_line:
        return one_line
    body = "".join(f"\n{' ' * (indent + 4)}{e}" for e in eqns)
    return f"{head}{body}\n{' ' * (indent + 2)}in {outs} }}"


def _pp_eqn(eqn: JaxprEqn, names: _Names, indent: int) -> str:
    lhs = " ".join(map(names.binder, eqn.outvars))
    rhs_args = " ".join(map(names, eqn.invars))
    params = eqn.primitive.pp_params(eqn.params)
    has_jaxpr = any(_contains_jaxpr(v) for _, v in params)
    name = eqn.primitive.name
    if not params:
        rhs = f"{name} {rhs_args}" if rhs_args else name
    elif not has_jaxpr:
        rhs = f"{name}[{' '.join(f'{k}={_pp_param(v, names, 0)}' for k, v in params)}]"
        rhs = f"{rhs} {rhs_args}" if rhs_args else rhs
    else:
        inner = indent + 2
        lines = "".join(f"\n{' ' * inner}{k}={_pp_param(v, names, inner + len(k) + 1)}"
                        for k, v in params)
        rhs = f"{name}[{lines}\n{' ' * indent}] {rhs_args}".rstrip()
    return f"{lhs} = {rhs}" if lhs else rhs


def _contains_jaxpr(value: Any) -> bool:
    if isinstance(value, (Jaxpr, ClosedJaxpr)):
        return True
    return isinstance(value, tuple) and any(_contains_jaxpr(v) for v in value)


def _pp_param(value: Any, names: _Names, indent: int) -> str:
    if isinstance(value, ClosedJaxpr):
        return pp_jaxpr(value.jaxpr, names, indent)
    if isinstance(value, Jaxpr):
        return pp_jaxpr(value, names, indent)
    if isinstance(value, tuple) and _contains_jaxpr(value):
        parts = [_pp_param(v, names, indent + 1) for v in value]
        return "(" + f"\n{' ' * (indent + 1)}".join(parts) + ")"
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    if isinstance(value, ShapedArray):
        return value.str_short()
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    return str(value)


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
    names = _Names()
    text = pp_jaxpr(jaxpr, names)  # names every variable, so messages match the printout

    def define(v: Var, where: str) -> None:
        if v in defined:
            raise JaxprTypeError(f"Variable {names.binder(v)} defined twice ({where}) in\n{text}")
        defined.add(v)

    def read(v: Atom, where: str) -> ShapedArray:
        if isinstance(v, Var) and v not in defined:
            raise JaxprTypeError(f"Variable {names.binder(v)} used before it is defined "
                                 f"({where}) in\n{text}")
        return v.aval

    for v in jaxpr.constvars:
        define(v, "constvar")
    for v in jaxpr.invars:
        define(v, "invar")
    for eqn in jaxpr.eqns:
        where = f"equation `{_pp_eqn(eqn, names, 0)}` from {describe(eqn.source_info)}"
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
    """Drops equations whose results no (used) output needs."""
    outvars = list(jaxpr.outvars) if used_outputs is None \
        else [v for v, used in zip(jaxpr.outvars, used_outputs) if used]
    live = {v for v in outvars if isinstance(v, Var)}
    kept = []
    for eqn in reversed(jaxpr.eqns):
        if any(v in live for v in eqn.outvars):
            kept.append(eqn)
            live.update(v for v in eqn.invars if isinstance(v, Var))
    kept.reverse()
    return Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, kept, jaxpr.effects, jaxpr.debug_info)
