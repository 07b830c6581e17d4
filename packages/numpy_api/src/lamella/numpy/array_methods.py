"""Operators on lamella Arrays and tracers, installed when lamella.numpy is imported.

`x + y`, `x < y`, `x @ y`, `-x` and friends call the lamella.numpy functions, so
they promote types and broadcast as jax.numpy does, on concrete Arrays and on
tracers alike. Item assignment raises: arrays are immutable.
"""

from __future__ import annotations

from typing import Any

from lamella.core.trace import Tracer
from lamella.lax import runtime
from lamella.numpy import ufuncs
from lamella.numpy.products import matmul


def _forward(fn):
    return lambda self, other: fn(self, other)


def _reflected(fn):
    return lambda self, other: fn(other, self)


_BINARY = {
    "add": ufuncs.add, "sub": ufuncs.subtract, "mul": ufuncs.multiply,
    "truediv": ufuncs.true_divide, "floordiv": ufuncs.floor_divide, "mod": ufuncs.remainder,
    "pow": ufuncs.power, "matmul": matmul, "and": ufuncs.bitwise_and, "or": ufuncs.bitwise_or,
    "xor": ufuncs.bitwise_xor, "lshift": ufuncs.left_shift, "rshift": ufuncs.right_shift,
    "divmod": ufuncs.divmod,
}
_COMPARISONS = {
    "eq": ufuncs.equal, "ne": ufuncs.not_equal, "lt": ufuncs.less, "le": ufuncs.less_equal,
    "gt": ufuncs.greater, "ge": ufuncs.greater_equal,
}
_UNARY = {
    "neg": ufuncs.negative, "pos": ufuncs.positive, "abs": ufuncs.absolute,
    "invert": ufuncs.invert,
}


def _setitem(self, index, value):
    raise TypeError("lamella arrays are immutable: item assignment is not supported. Use "
                    "x = x.at[index].set(value) (or .add, .multiply, ...) to get an updated "
                    "copy.")


def operator_methods() -> dict[str, Any]:
    """The dunder methods lamella.numpy gives Arrays and tracers."""
    methods: dict[str, Any] = {"__setitem__": _setitem, "__hash__": None}
    for name, fn in _BINARY.items():
        methods[f"__{name}__"] = _forward(fn)
        methods[f"__r{name}__"] = _reflected(fn)
    for name, fn in _COMPARISONS.items():
        methods[f"__{name}__"] = _forward(fn)
    for name, fn in _UNARY.items():
        methods[f"__{name}__"] = fn
    return methods


def install() -> None:
    methods = operator_methods()
    runtime.install_array_methods(methods)
    for name, method in methods.items():
        setattr(Tracer, name, method)
