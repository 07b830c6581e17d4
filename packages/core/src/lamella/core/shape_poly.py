"""Symbolic dimensions for shape-polymorphic export (JAX's `jax.export` shape polymorphism).

A `DimExpr` is an integer polynomial over dimension variables (``b``, ``n``),
whose factors may also be ``floordiv(e, k)`` and ``mod(e, k)`` of another
expression by a constant, and ``max(e1, e2)`` / ``min(e1, e2)`` of two
expressions (what clamping a slice to a symbolic size gives, `max_dim` /
`min_dim`). Arithmetic with ints and other expressions stays
symbolic; a result that is a constant comes back as a Python int. Every
dimension variable is >= 1, and a `SymbolicScope` may add constraints
(``"b >= 16"``). A comparison is decided from bounds over all admissible
values (a ``max``, ``min`` or ``floordiv`` term is also bounded by the
expressions it is made of), or raises `InconclusiveDimensionOperation`; ``==`` is never
inconclusive: it is True only for expressions that are provably equal
(JAX's choice, since hashing relies on it).

>>> b, n = symbolic_shape("b, n")
>>> (2 * b + n) * 3 - b
3*n + 5*b
>>> (b * 4) // 4, b >= 1, b == 4
(b, True, False)
>>> min_dim(b, 2), b - min_dim(b, 5) >= 0, b - b // 2 >= 0
(min(b, 2), True, True)
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

import numpy as np

from lamella.core import dtypes
from lamella.core.avals import ShapedArray
from lamella.core.errors import InconclusiveDimensionOperation as _CoreInconclusive

__all__ = ["DimExpr", "InconclusiveDimensionOperation", "SymbolicScope", "all_dim_vars",
           "dimension_as_value",
           "evaluate_shape", "is_symbolic_dim", "is_symbolic_shape", "max_dim", "min_dim",
           "symbolic_args_specs",
           "symbolic_shape"]

DimSize = Union[int, "DimExpr"]

_HELP = ("\n\nThe answer differs between values of the dimension variables. Compare only "
         "what holds for every size, or state what you know as a constraint "
         "(symbolic_shape(..., constraints=['b >= 4'])).")


class InconclusiveDimensionOperation(_CoreInconclusive):
    """A comparison or conversion of symbolic dimensions with no single answer."""

    def __init__(self, message: str):
        super().__init__(message + _HELP)


# A factor is a variable name, or (operation, operand, divisor) for floordiv and mod,
# or (operation, e1, e2) for max and min. A term (monomial) is a tuple of
# (factor, exponent) sorted by `_factor_key`; the constant term is ().
_Factor = str | tuple
_Term = tuple


def _factor_str(f: _Factor) -> str:
    return f if isinstance(f, str) else f"{f[0]}({_operand_str(f[1])}, {_operand_str(f[2])})"


def _operand_str(e: DimSize) -> str:
    return f"- {-e}" if type(e) is int and e < 0 else str(e)  # JAX's "max(a - 5, - 3)"


def _term_str(term: _Term) -> str:
    return "*".join(_factor_str(f) if k == 1 else f"{_factor_str(f)}^{k}" for f, k in term)


# JAX orders factors, terms and expressions by their size (a variable is 1, an operation 1
# plus its operands'), then by their parts; an expression prints its largest terms first
# ("3*n + 5*b", "- floordiv(b, 2) + b"). These keys sort the same way, so that lamella
# prints what JAX prints.
def _factor_key(f: _Factor) -> tuple:
    if isinstance(f, str):
        return (1, f, ())
    operands = tuple(_expr_key(o) for o in f[1:])
    return (1 + sum(k[0] for k in operands), f[0], operands)


def _term_key(term: _Term) -> tuple:
    factors = tuple((_factor_key(f), k) for f, k in term)
    return (sum(1 + k * fk[0] for fk, k in factors), factors)


def _expr_key(e: DimSize) -> tuple:
    if type(e) is DimExpr:
        return e._key()
    return (1, (((0, ()), e),))


def _sorted_factors(powers: Mapping[_Factor, int]) -> _Term:
    return tuple(sorted(powers.items(), key=lambda fk: _factor_key(fk[0])))


class SymbolicScope:
    """The constraints that hold for the dimension variables of one export, e.g.
    ``SymbolicScope(["b >= 16", "b <= 1024"])`` (forms ``e1 >= e2``, ``e1 <= e2``,
    ``e1 == e2``). Comparisons consult them; `Exported.call` checks them."""

    def __init__(self, constraints_str: Sequence[str] = ()):
        if isinstance(constraints_str, str):
            raise ValueError("The symbolic constraints should be a sequence of strings. "
                             f"Got {constraints_str!r}")
        self.constraints: list[tuple[str, DimSize, str]] = []  # (">=" or "==", e1 - e2, text)
        for text in constraints_str:
            self._add(text)

    def _add(self, text: str) -> None:
        for op in (">=", "<=", "=="):
            if op in text:
                left, right = text.split(op, 1)
                e1, e2 = _parse_expr(left, self), _parse_expr(right, self)
                break
        else:
            raise ValueError(f"Constraint parsing error: must contain one of '==' or '>=' or "
                             f"'<=' in {text!r}")
        diff = e2 - e1 if op == "<=" else e1 - e2
        kind = "==" if op == "==" else ">="
        if not isinstance(diff, DimExpr):
            holds = diff == 0 if kind == "==" else diff >= 0
            if not holds:
                raise ValueError(f"Unsatisfiable explicit constraint: {text}")
            return
        self.constraints.append((kind, diff, text.strip()))

    def __str__(self) -> str:
        return "\n".join(f"  {text}" for _, _, text in self.constraints)

    def variable_bounds(self, var: str) -> tuple[float, float]:
        """The bounds the constraints put on ``var`` (beyond >= 1) when they are of the
        form ``k*var + c >= 0`` or ``k*var + c == 0``."""
        lo, hi = 1.0, math.inf
        for kind, diff, _ in self.constraints:
            terms = diff._terms
            linear = [(t, c) for t, c in terms if t]
            if len(linear) != 1 or linear[0][0] != ((var, 1),):
                continue
            k, c = linear[0][1], dict(terms).get((), 0)
            if kind == "==":
                lo = hi = -c / k
            elif k > 0:
                lo = max(lo, math.ceil(-c / k))
            else:
                hi = min(hi, math.floor(-c / k))
        return lo, hi


_default_scope = SymbolicScope()


class DimExpr:
    """A symbolic dimension: an integer polynomial over dimension variables."""

    __slots__ = ("_terms", "_scope", "_hash", "_sort_key")

    def __init__(self, terms: Mapping[_Term, int], scope: SymbolicScope):
        self._terms = tuple(sorted(((t, c) for t, c in terms.items() if c),
                                   key=lambda tc: (_term_key(tc[0]), tc[1]), reverse=True))
        self._scope = scope
        self._hash = hash(self._terms)
        self._sort_key: tuple | None = None

    def _key(self) -> tuple:
        if self._sort_key is None:
            terms = tuple((_term_key(t), c) for t, c in self._terms)
            self._sort_key = (sum(1 + abs(c) * tk[0] for tk, c in terms), terms)
        return self._sort_key

    @staticmethod
    def _normalized(terms: Mapping[_Term, int], scope: SymbolicScope) -> DimSize:
        nonzero = {t: c for t, c in terms.items() if c}
        if not nonzero:
            return 0
        if list(nonzero) == [()]:
            return nonzero[()]
        return DimExpr(nonzero, scope)

    @classmethod
    def variable(cls, name: str, scope: SymbolicScope | None = None) -> DimExpr:
        return cls({((name, 1),): 1}, scope or _default_scope)

    @property
    def scope(self) -> SymbolicScope:
        return self._scope

    # --- arithmetic ----------------------------------------------------------
    def _join_scope(self, other: Any) -> SymbolicScope:
        if isinstance(other, DimExpr) and other._scope is not self._scope \
                and not self._scope.constraints:
            return other._scope
        return self._scope

    def _terms_of(self, other: Any) -> dict | None:
        if isinstance(other, DimExpr):
            return dict(other._terms)
        if isinstance(other, (int, np.integer)) and not isinstance(other, bool):
            return {(): int(other)}
        return None

    def __add__(self, other: Any) -> Any:
        theirs = self._terms_of(other)
        if theirs is None:
            return _as_value(self).__add__(other) if _is_traced(other) else NotImplemented
        out = dict(self._terms)
        for t, c in theirs.items():
            out[t] = out.get(t, 0) + c
        return DimExpr._normalized(out, self._join_scope(other))

    def __radd__(self, other: Any) -> Any:
        if self._terms_of(other) is None:
            return _as_value(self).__radd__(other) if _is_traced(other) else NotImplemented
        return self.__add__(other)

    def __neg__(self) -> DimExpr:
        return DimExpr({t: -c for t, c in self._terms}, self._scope)

    def __pos__(self) -> DimExpr:
        return self

    def __sub__(self, other: Any) -> Any:
        theirs = self._terms_of(other)
        if theirs is None:
            return _as_value(self).__sub__(other) if _is_traced(other) else NotImplemented
        return self.__add__(DimExpr._normalized({t: -c for t, c in theirs.items()},
                                                self._scope))

    def __rsub__(self, other: Any) -> Any:
        if self._terms_of(other) is None:
            return _as_value(self).__rsub__(other) if _is_traced(other) else NotImplemented
        return (-self).__add__(other)

    def __mul__(self, other: Any) -> Any:
        theirs = self._terms_of(other)
        if theirs is None:
            return _as_value(self).__mul__(other) if _is_traced(other) else NotImplemented
        out: dict[_Term, int] = {}
        for t1, c1 in self._terms:
            for t2, c2 in theirs.items():
                t = _term_mul(t1, t2)
                out[t] = out.get(t, 0) + c1 * c2
        return DimExpr._normalized(out, self._join_scope(other))

    def __rmul__(self, other: Any) -> Any:
        if self._terms_of(other) is None:
            return _as_value(self).__rmul__(other) if _is_traced(other) else NotImplemented
        return self.__mul__(other)

    def __pow__(self, power: int) -> DimSize:
        if not isinstance(power, int) or power < 0:
            raise InconclusiveDimensionOperation(
                f"Symbolic dimension '{self}' raised to a non-constant or negative power "
                f"{power}")
        out: DimSize = 1
        for _ in range(power):
            out = self * out
        return out

    def divmod(self, divisor: DimSize) -> tuple[DimSize, DimSize]:
        """(quotient, remainder), floor division as Python's; symbolic when the division
        is not exact.

        >>> b, = symbolic_shape("b")
        >>> (4 * b + 8).divmod(4), b.divmod(2)
        ((b + 2, 0), (floordiv(b, 2), mod(b, 2)))
        """
        if isinstance(divisor, DimExpr):
            quotient = _exact_division(self, divisor)
            if quotient is None:
                raise InconclusiveDimensionOperation(
                    f"Cannot divide '{self}' by '{divisor}': the division is not exact for "
                    "every value of the dimension variables")
            return quotient, 0
        divisor = operator.index(divisor)
        if divisor == 0:
            raise ZeroDivisionError(f"Symbolic dimension '{self}' divided by 0")
        if all(c % divisor == 0 for _, c in self._terms):
            return DimExpr._normalized({t: c // divisor for t, c in self._terms},
                                       self._scope), 0
        quotient = DimExpr({(((("floordiv", self, divisor)), 1),): 1}, self._scope)
        remainder = DimExpr({(((("mod", self, divisor)), 1),): 1}, self._scope)
        return quotient, remainder

    def max(self, other: DimSize) -> DimSize:
        """The larger of the two (see `max_dim`)."""
        return max_dim(self, other)

    def min(self, other: DimSize) -> DimSize:
        """The smaller of the two (see `min_dim`)."""
        return min_dim(self, other)

    def __floordiv__(self, divisor: Any) -> Any:
        if self._terms_of(divisor) is None:
            return _as_value(self).__floordiv__(divisor) if _is_traced(divisor) \
                else NotImplemented
        return self.divmod(divisor)[0]

    def __rfloordiv__(self, dividend: Any) -> Any:
        if isinstance(dividend, (int, np.integer)):
            quotient = _exact_division(DimExpr({(): int(dividend)}, self._scope), self)
            if quotient is None:
                raise InconclusiveDimensionOperation(
                    f"Cannot divide '{dividend}' by '{self}'")
            return quotient
        return _as_value(self).__rfloordiv__(dividend) if _is_traced(dividend) \
            else NotImplemented

    def __mod__(self, divisor: Any) -> Any:
        if self._terms_of(divisor) is None:
            return _as_value(self).__mod__(divisor) if _is_traced(divisor) else NotImplemented
        return self.divmod(divisor)[1]

    def __divmod__(self, divisor: Any) -> Any:
        return self.divmod(divisor)

    def __truediv__(self, other: Any) -> Any:
        # b / 2 is a float in NumPy terms: compute it on the dimension's value.
        return _as_value(self).__truediv__(other)

    def __rtruediv__(self, other: Any) -> Any:
        return _as_value(self).__rtruediv__(other)

    # --- comparisons -----------------------------------------------------------
    def __eq__(self, other: Any) -> bool:
        if isinstance(other, DimExpr):
            # Scopes with different constraints make different dimensions (a jaxpr traced
            # knowing b >= 4 is not one for every b).
            return self._terms == other._terms and (
                self._scope is other._scope
                or not self._scope.constraints and not other._scope.constraints)
        return False  # a constant is never equal to a non-constant expression

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return self._hash

    def __ge__(self, other: Any) -> bool:
        return _geq(self, other, lambda: f"'{self}' >= '{other}'")

    def __gt__(self, other: Any) -> bool:
        return _geq(self, other + 1, lambda: f"'{self}' > '{other}'")

    def __le__(self, other: Any) -> bool:
        return _geq(other, self, lambda: f"'{self}' <= '{other}'")

    def __lt__(self, other: Any) -> bool:
        return _geq(other, self + 1, lambda: f"'{self}' < '{other}'")

    def __int__(self) -> int:
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension '{self}' used in a context that requires a constant")

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        # lamella.numpy takes anything with __array__ as an array-like operand (then
        # reads its aval); NumPy itself cannot hold a symbolic value.
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension '{self}' has no concrete value for a NumPy array")

    # lamella.numpy reads the aval of what it is given: as a value, a dimension is a
    # weakly typed integer scalar (lowered from the dimension variables' sizes).
    @property
    def aval(self) -> ShapedArray:
        return ShapedArray((), dtypes.canonicalize_dtype(np.int64), weak_type=True)

    ndim = 0  # what np.ndim and np.shape read first
    shape = ()

    # --- queries ---------------------------------------------------------------
    def __str__(self) -> str:
        out = []
        for term, c in self._terms:
            sign = "-" if c < 0 else "+"
            text = str(abs(c)) if not term else (_term_str(term) if abs(c) == 1
                                                 else f"{abs(c)}*{_term_str(term)}")
            out.append(f"{sign} {text}")
        return " ".join(out).removeprefix("+ ")

    __repr__ = __str__

    def __reduce__(self) -> tuple:
        return (_from_string, (str(self),))

    def variables(self) -> set[str]:
        """The dimension variables the expression mentions.

        >>> sorted(symbolic_shape("a * b + floordiv(c, 2)")[0].variables())
        ['a', 'b', 'c']
        """
        found: set[str] = set()
        for term, _ in self._terms:
            for f, _ in term:
                if isinstance(f, str):
                    found.add(f)
                else:
                    found |= _variables(f[1]) | _variables(f[2])
        return found

    @property
    def variable_name(self) -> str | None:
        """The name of the variable when the expression is one variable.

        >>> [d.variable_name for d in symbolic_shape("b, 2*b")]
        ['b', None]
        """
        if len(self._terms) == 1:
            term, c = self._terms[0]
            if c == 1 and len(term) == 1 and term[0][1] == 1 and isinstance(term[0][0], str):
                return term[0][0]
        return None

    def as_linear(self) -> tuple[str, int, int] | None:
        """``(v, k, c)`` when the expression is ``k*v + c`` for one variable ``v``: the
        form a variable can be solved from (``v = (size - c) // k``).

        >>> symbolic_shape("2*b + 1")[0].as_linear(), symbolic_shape("b*b")[0].as_linear()
        (('b', 2, 1), None)
        """
        terms = dict(self._terms)
        linear = [(t, c) for t, c in terms.items() if t]
        if len(linear) != 1 or len(linear[0][0]) != 1:
            return None
        (((factor, power),), k) = linear[0]
        if power != 1 or not isinstance(factor, str):
            return None
        return factor, k, terms.get((), 0)

    def evaluate(self, env: Mapping[str, int]) -> int:
        """The value at integers ``env`` for the dimension variables.

        >>> symbolic_shape("2*b + mod(b, 3)")[0].evaluate({"b": 5})
        12
        """
        return self.evaluate_with(env.__getitem__, operator.add, operator.mul,
                                  lambda x, k: x // k, lambda x, k: x % k, lambda c: c,
                                  maximum=max, minimum=min)

    def evaluate_with(self, var: Callable[[str], Any], add: Callable, mul: Callable,
                      floordiv: Callable, mod: Callable, const: Callable[[int], Any], *,
                      maximum: Callable, minimum: Callable) -> Any:
        """The expression computed with the given operations (lowering uses this with
        StableHLO ops on the variables' values)."""
        ops = {"floordiv": floordiv, "mod": mod, "max": maximum, "min": minimum}

        def operand(o: DimSize) -> Any:
            return o.evaluate_with(var, add, mul, floordiv, mod, const, maximum=maximum,
                                   minimum=minimum) if isinstance(o, DimExpr) else const(o)

        total = None
        for term, c in self._terms:
            value = None
            for f, k in term:
                if isinstance(f, str):
                    base = var(f)
                elif f[0] in ("max", "min"):
                    base = ops[f[0]](operand(f[1]), operand(f[2]))
                else:  # the divisor of floordiv and mod stays a Python int
                    base = ops[f[0]](operand(f[1]), f[2])
                for _ in range(k):
                    value = base if value is None else mul(value, base)
            piece = const(c) if value is None else value if c == 1 else mul(const(c), value)
            total = piece if total is None else add(total, piece)
        return total

    def bounds(self) -> tuple[float, float]:
        """Lower and upper bounds over every admissible value of the variables.

        >>> symbolic_shape("2*b - 1")[0].bounds(), symbolic_shape("mod(b, 4)")[0].bounds()
        ((1.0, inf), (0.0, 3.0))
        """
        nonnegative = lambda term: self._term_bounds(term, 1)[0] >= 0  # noqa: E731
        lo_total = sum(self._term_bounds(t, c)[0]
                       for t, c in _dominated(self._terms, nonnegative).items())
        hi_total = sum(self._term_bounds(t, c)[1] for t, c in self._terms)
        return lo_total, hi_total

    def _term_bounds(self, term: _Term, c: int) -> tuple[float, float]:
        lo, hi = 1.0, 1.0
        for f, k in term:
            flo, fhi = _factor_bounds(f, self._scope)
            for _ in range(k):
                lo, hi = _interval_mul((lo, hi), (flo, fhi))
        return _interval_mul((lo, hi), (c, c))


def _variables(e: DimSize) -> set[str]:
    return e.variables() if isinstance(e, DimExpr) else set()


def _is_traced(x: Any) -> bool:
    """Whether ``x`` is an array value (not a dimension) that arithmetic with a
    dimension must compute with: then the dimension turns into a value."""
    return hasattr(x, "aval") and not isinstance(x, DimExpr) or isinstance(
        x, (np.ndarray, np.generic, float, complex))


def dimension_as_value(dim: DimSize) -> Any:
    """The dimension as an array value: a traced int scalar inside a function traced
    for export (an int stays an int)."""
    return _as_value(dim) if isinstance(dim, DimExpr) else dim


def _as_value(dim: DimExpr) -> Any:
    if _dimension_as_value is None:
        raise InconclusiveDimensionOperation(
            f"Symbolic dimension '{dim}' used as a value needs lamella.lax: import it first")
    return _dimension_as_value(dim)


# lamella.lax installs the function making a traced value of a dimension.
_dimension_as_value: Callable[[DimExpr], Any] | None = None


def _term_mul(t1: _Term, t2: _Term) -> _Term:
    powers: dict[_Factor, int] = dict(t1)
    for f, k in t2:
        powers[f] = powers.get(f, 0) + k
    return _sorted_factors(powers)


def _exact_division(e: DimExpr, divisor: DimExpr) -> DimSize | None:
    """``e / divisor`` when ``divisor`` is one term dividing every term of ``e``."""
    if len(divisor._terms) != 1:
        return 1 if e == divisor else None
    (dterm, dc), = divisor._terms
    dpowers = dict(dterm)
    out: dict[_Term, int] = {}
    for term, c in e._terms:
        powers = dict(term)
        if c % dc or any(powers.get(f, 0) < k for f, k in dpowers.items()):
            return None
        rest = {f: k - dpowers.get(f, 0) for f, k in powers.items() if k - dpowers.get(f, 0)}
        out[_sorted_factors(rest)] = c // dc
    return DimExpr._normalized(out, e._scope)


def _dominated(terms: Sequence[tuple[_Term, int]],
               nonnegative: Callable[[_Term], bool]) -> dict[_Term, int]:
    """Terms with the same lower bound or a higher one: a negative term ``-c*m`` with
    ``m >= 0`` is absorbed by a positive ``c2*m*v`` (``v`` a product of variables, so
    ``m*v >= m``), e.g. ``b^2 - b >= 0``."""
    out = dict(terms)
    for term, c in terms:
        if c >= 0 or out.get(term, 0) >= 0 or not nonnegative(term):
            continue
        for other, c2 in list(out.items()):
            if c2 <= 0 or other == term or not _divides_by_variables(term, other):
                continue
            need = -out[term]
            if c2 >= need:
                out[other], out[term] = c2 - need, 0
            else:  # c2*m*v - need*m >= (c2 - need)*m
                out[other], out[term] = 0, c2 - need
            if out[term] >= 0:
                break
    return {t: c for t, c in out.items() if c}


def _divides_by_variables(small: _Term, big: _Term) -> bool:
    powers = dict(big)
    for f, k in small:
        if powers.get(f, 0) < k:
            return False
        powers[f] -= k
    return all(isinstance(f, str) for f, k in powers.items() if k)


def _factor_bounds(f: _Factor, scope: SymbolicScope) -> tuple[float, float]:
    if isinstance(f, str):
        return scope.variable_bounds(f)
    operation, operand, k = f
    lo, hi = operand.bounds() if isinstance(operand, DimExpr) else (operand, operand)
    if operation in ("max", "min"):
        lo2, hi2 = k.bounds() if isinstance(k, DimExpr) else (k, k)
        pick = max if operation == "max" else min
        return pick(lo, lo2), pick(hi, hi2)
    if operation == "mod":
        return (0, k - 1) if k > 0 else (k + 1, 0)
    ends = [x / k if math.isinf(x) else x // k for x in (lo, hi)]
    return min(ends), max(ends)


def _interval_mul(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    products = [0.0 if 0 in (x, y) else x * y for x in a for y in b]
    return min(products), max(products)


# How deep `_lower_bound` rewrites max, min and floordiv terms into their operands.
_REWRITE_DEPTH = 3


def _lower_bound(e: DimSize, depth: int = _REWRITE_DEPTH) -> float:
    """A lower bound of ``e``: its interval bound, improved by rewriting one term
    ``c*F`` whose factor ``F`` is an operation into the expressions ``F`` is made of.
    ``rest + c*max(e1, e2)`` is the larger (c > 0) or the smaller (c < 0) of
    ``rest + c*e1`` and ``rest + c*e2`` (min the other way round); ``k*floordiv(e, k)``
    lies in ``[e - k + 1, e]``. So ``b - min(b, 5) >= 0`` and ``b - floordiv(b, 2) >= 0``."""
    if type(e) is not DimExpr:
        return e
    best = e.bounds()[0]
    if depth == 0:
        return best
    for term, c in e._terms:
        if len(term) != 1 or term[0][1] != 1 or isinstance(term[0][0], str):
            continue
        (operation, a, k), _ = term[0]
        rest = e - DimExpr({term: c}, e._scope)
        if operation in ("max", "min"):
            options = (_lower_bound(rest + c * a, depth - 1),
                       _lower_bound(rest + c * k, depth - 1))
            larger = (operation == "max") == (c > 0)
            best = max(best, max(options) if larger else min(options))
        elif operation == "floordiv" and k > 0:
            # k*e_total = k*rest + c*(a - mod(a, k)), with 0 <= mod(a, k) <= k - 1.
            scaled = k * rest + c * a - (c * (k - 1) if c > 0 else 0)
            lo = _lower_bound(scaled, depth - 1) / k
            best = max(best, lo if math.isinf(lo) else math.ceil(lo))
    return best


def _decide_nonnegative(diff: DimSize) -> bool | None:
    """Whether ``diff >= 0`` for every admissible value (None when it depends)."""
    if type(diff) is not DimExpr:
        return diff >= 0
    if _lower_bound(diff) >= 0:
        return True
    if _lower_bound(-diff) > 0:
        return False
    for kind, constraint, _ in diff.scope.constraints:  # e1 - e2 >= constraint >= 0?
        if _lower_bound(diff - constraint) >= 0:
            return True
        if kind == "==":
            rest = diff + constraint
            if not isinstance(rest, DimExpr) and rest >= 0:
                return True
    return None


def max_dim(d1: DimSize, d2: DimSize) -> DimSize:
    """The larger of two dimensions: one of them when the comparison is decided for every
    size, else the expression ``max(d1, d2)`` (JAX's `core.max_dim`).

    >>> b, = symbolic_shape("b")
    >>> max_dim(b, 1), max_dim(0, b - 2), max_dim(3, 4)
    (b, max(0, b - 2), 4)
    """
    if type(d1) is not DimExpr and type(d2) is not DimExpr:
        return max(d1, d2)
    return _max_min("max", d1, d2)


def min_dim(d1: DimSize, d2: DimSize) -> DimSize:
    """The smaller of two dimensions: one of them when the comparison is decided for
    every size, else the expression ``min(d1, d2)`` (JAX's `core.min_dim`).

    >>> b, = symbolic_shape("b")
    >>> min_dim(b, 1), min_dim(b, 2), min_dim(3, 4)
    (1, min(b, 2), 3)
    """
    if type(d1) is not DimExpr and type(d2) is not DimExpr:
        return min(d1, d2)
    return _max_min("min", d1, d2)


def _max_min(operation: str, d1: DimSize, d2: DimSize) -> DimSize:
    for d in (d1, d2):
        if type(d) is not DimExpr and (not isinstance(d, (int, np.integer))
                                       or isinstance(d, bool)):
            raise TypeError(f"{operation}_dim takes dimensions (ints or symbolic "
                            f"dimensions), got {d!r}")
    d1, d2 = (d if type(d) is DimExpr else int(d) for d in (d1, d2))
    if _decide_nonnegative(d1 - d2):  # d1 >= d2
        return d1 if operation == "max" else d2
    if _decide_nonnegative(d2 - d1):
        return d2 if operation == "max" else d1
    scope = (d1 if type(d1) is DimExpr else d2).scope
    return DimExpr({(((operation, d1, d2), 1),): 1}, scope)


def _geq(e1: Any, e2: Any, describe: Callable[[], str]) -> bool:
    diff = e1 - e2
    if not isinstance(diff, DimExpr):
        return diff >= 0
    decided = _decide_nonnegative(diff)
    if decided is not None:
        return decided
    scope = diff.scope
    where = f"\nUsing symbolic scope with constraints:\n{scope}" if scope.constraints else ""
    raise InconclusiveDimensionOperation(
        f"Symbolic dimension comparison {describe()} is inconclusive.{where}")


# --- parsing --------------------------------------------------------------------
def _parse_expr(text: str, scope: SymbolicScope) -> DimSize:
    try:
        tree = ast.parse(text.strip().replace("^", "**"), mode="eval").body
    except SyntaxError:
        raise ValueError(f"syntax error in dimension expression {text.strip()!r}") from None

    def walk(node: ast.AST) -> DimSize:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            return DimExpr.variable(node.id, scope)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = walk(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and not isinstance(right, int):
                raise ValueError(f"exponent must be a constant in {text.strip()!r}")
            return _BINOPS[type(node.op)](left, right)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in _CALLS and len(node.args) == 2:
            return _CALLS[node.func.id](walk(node.args[0]), walk(node.args[1]))
        raise ValueError(f"invalid dimension expression {text.strip()!r}: dimensions are "
                         "integers, variables, +, -, *, ^, floordiv(e, k), mod(e, k), "
                         "max(e1, e2) and min(e1, e2)")

    return walk(tree)


_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}


_CALLS: dict[str, Callable[[Any, Any], Any]] = {
    "floordiv": operator.floordiv, "mod": operator.mod, "max": max_dim, "min": min_dim}


def _from_string(text: str) -> DimSize:
    return _parse_expr(text, _default_scope)


def _split_top_level(spec: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(spec):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(spec[start:i])
            start = i + 1
    parts.append(spec[start:])
    return [p.strip() for p in parts]


def symbolic_shape(shape_spec: str | None, *, constraints: Sequence[str] = (),
                   scope: SymbolicScope | None = None,
                   like: Sequence[int | None] | None = None) -> tuple[DimSize, ...]:
    """The shape written in ``shape_spec``: ints and `DimExpr`s (JAX's
    `jax.export.symbolic_shape`). ``"_"`` takes the size from ``like``, ``"..."``
    (or None) the remaining sizes of ``like``. ``constraints`` (or a ``scope``
    holding them) restrict the variables.

    >>> symbolic_shape("b, 2*b + 1, 4")
    (b, 2*b + 1, 4)
    >>> symbolic_shape("(n, _)", like=(None, 3))
    (n, 3)
    """
    if scope is None:
        scope = SymbolicScope(constraints)
    elif constraints:
        raise ValueError("Cannot specify both a `scope` and `constraints`.")
    if shape_spec is None:
        shape_spec = "..."
    if not isinstance(shape_spec, str):
        raise ValueError(f"polymorphic shape spec should be None or a string. "
                         f"Found {shape_spec!r}.")
    spec = shape_spec.strip()
    if spec.startswith("(") and spec.endswith(")") and _balanced(spec[1:-1]):
        spec = spec[1:-1]
    parts = [p for p in _split_top_level(spec) if p] if spec.strip() else []
    dims: list[DimSize] = []
    for i, part in enumerate(parts):
        if part == "...":
            if i != len(parts) - 1 or like is None:
                raise ValueError(f"'...' must be last in shape {shape_spec!r} and needs the "
                                 "actual shape (like=)")
            dims.extend(_like_dim(like, j, shape_spec) for j in range(len(dims), len(like)))
        elif part == "_":
            dims.append(_like_dim(like, i, shape_spec))
        else:
            dim = _parse_expr(part, scope)
            if like is not None and i < len(like) and like[i] is not None \
                    and isinstance(dim, int) and dim != like[i]:
                raise ValueError(f"shape {shape_spec!r} has {dim} in dimension {i} where "
                                 f"the actual shape has {like[i]}")
            dims.append(dim)
    if like is not None and len(dims) != len(like):
        raise ValueError(f"shape {shape_spec!r} has {len(dims)} dimensions, the actual shape "
                         f"{tuple(like)} has {len(like)}")
    return tuple(dims)


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if depth < 0:
            return False
    return depth == 0


def _like_dim(like: Sequence[int | None] | None, i: int, spec: str) -> int:
    if like is None or i >= len(like) or like[i] is None:
        raise ValueError(f"shape {spec!r}: the placeholder in dimension {i} needs a known "
                         "size in the actual shape")
    return int(like[i])


def symbolic_args_specs(args: Any, shapes_specs: Any, constraints: Sequence[str] = (),
                        scope: SymbolicScope | None = None) -> Any:
    """`ShapeDtypeStruct`s like ``args`` (arrays or structs), their shapes given by
    ``shapes_specs``: None, one spec for every argument, or a pytree prefix of
    ``args`` with a spec (or None) per subtree. All share one scope.

    >>> import numpy as np
    >>> symbolic_args_specs((np.zeros((3, 4), np.float32),), "b, _")
    (ShapeDtypeStruct(shape=(b, 4), dtype=float32),)
    """
    from lamella.core.avals import ShapeDtypeStruct, get_aval
    from lamella.core.tree_util import tree_flatten, tree_map, tree_unflatten

    if scope is None:
        scope = SymbolicScope(constraints)
    elif constraints:
        raise ValueError("Cannot use both `scope` and `constraints`")
    leaves, tree = tree_flatten(args)
    if shapes_specs is None or isinstance(shapes_specs, str):
        specs = [shapes_specs] * len(leaves)
    else:
        if isinstance(args, tuple) and isinstance(shapes_specs, list):
            shapes_specs = tuple(shapes_specs)
        specs = []
        tree_map(lambda spec, sub: specs.extend([spec] * len(tree_flatten(sub)[0])),
                 shapes_specs, args, is_leaf=lambda x: x is None)
    out = []
    for leaf, spec in zip(leaves, specs):
        aval = get_aval(leaf) if not isinstance(leaf, ShapeDtypeStruct) else leaf
        shape = aval.shape if spec is None else symbolic_shape(spec, scope=scope,
                                                                like=aval.shape)
        out.append(ShapeDtypeStruct(shape, aval.dtype))
    return tree_unflatten(tree, out)


# --- helpers for tracing and lowering -------------------------------------------
def is_symbolic_dim(d: Any) -> bool:
    """Whether ``d`` is a symbolic dimension (a `DimExpr`).

    >>> is_symbolic_dim(symbolic_shape("b")[0]), is_symbolic_dim(4)
    (True, False)
    """
    return type(d) is DimExpr


def is_symbolic_shape(shape: Sequence[Any]) -> bool:
    """Whether any dimension of ``shape`` is symbolic."""
    return any(type(d) is DimExpr for d in shape)


def all_dim_vars(shapes: Sequence[Sequence[Any]]) -> list[str]:
    """The dimension variables of ``shapes``, sorted."""
    found: set[str] = set()
    for shape in shapes:
        for d in shape:
            found |= _variables(d)
    return sorted(found)


def evaluate_shape(shape: Sequence[DimSize], env: Mapping[str, int]) -> tuple[int, ...]:
    """``shape`` with its dimensions evaluated at ``env``."""
    return tuple(d.evaluate(env) if isinstance(d, DimExpr) else int(d) for d in shape)
