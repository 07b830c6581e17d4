"""Operators, NumPy-style methods and Python protocols on lamella Arrays and tracers,
installed when lamella.numpy is imported.

`x + y`, `x < y`, `x @ y`, `-x` and friends call the lamella.numpy functions, so
they promote types and broadcast as jax.numpy does, on concrete Arrays and on
tracers alike; so do methods like `x.sum(axis=0)` and `x.reshape(2, -1)`.
Item assignment raises: arrays are immutable (use `x.at[i].set(v)`).

Arrays are also ordinary Python objects: they pickle (with their weak type),
`copy.copy`/`copy.deepcopy` give new Arrays, `format(x, ".3f")` formats 0-d
arrays, and `__array_priority__` makes `numpy_array + array` a lamella Array.
Tracers carry the same methods; those that need data (`item`, `tolist`,
`tobytes`, ...) raise the concretization error when the value is abstract.
"""

from __future__ import annotations

import importlib
import types
from typing import Any

import numpy as np
from lamella import lax
from lamella.core.trace import Tracer, aval_of
from lamella.lax import runtime
from lamella.numpy import ufuncs
from lamella.numpy.placement import copy_array
from lamella.numpy.products import matmul


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


# Methods that are the lamella.numpy function of the same name with the array
# first; looked up at call time because those functions live in modules that
# import this one's package.
_DELEGATED = (
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "choose", "clip",
    "compress", "conj", "conjugate", "cumprod", "cumsum", "diagonal", "dot", "max", "mean",
    "min", "nonzero", "prod", "ptp", "repeat", "round", "searchsorted", "sort", "squeeze",
    "std", "sum", "swapaxes", "take", "trace", "var",
)


def _numpy() -> Any:
    global _lamella_numpy
    if _lamella_numpy is None:  # an import per call costs a microsecond on every method
        _lamella_numpy = importlib.import_module("lamella.numpy")
    return _lamella_numpy


_lamella_numpy = None


def _delegate(name: str):
    def method(self, *args, **kwargs):
        return getattr(_lamella_numpy or _numpy(), name)(self, *args, **kwargs)
    method.__name__ = name
    method.__doc__ = f"Same as `lamella.numpy.{name}(self, ...)`."
    return method


def _shape_args(args: tuple) -> Any:
    # x.reshape(2, 3) and x.reshape((2, 3)) both work, as in NumPy.
    return args[0] if len(args) == 1 and not isinstance(args[0], int) else args


def _reshape(self, *shape, order: str = "C"):
    return _numpy().reshape(self, _shape_args(shape), order=order)


def _transpose(self, *axes):
    return _numpy().transpose(self, _shape_args(axes) if axes else None)


def _flatten(self, order: str = "C"):
    return _numpy().ravel(self, order=order)


def _view(self, dtype: Any = None, type: Any = None):
    if type is not None:
        raise NotImplementedError("view(type=...) is not supported: lamella has one array type")
    if dtype is None:
        return self
    new, old = np.dtype(dtype), aval_of(self).dtype
    shape = aval_of(self).shape
    if new.itemsize == old.itemsize:
        return lax.bitcast_convert_type(self, new)
    if not shape:
        raise ValueError(f"view: changing the item size from {old} to {new} needs at least "
                         "one dimension")
    if new.itemsize < old.itemsize:  # each item splits into several along the last axis
        out = lax.bitcast_convert_type(self, new)
        return lax.reshape(out, (*shape[:-1], shape[-1] * (old.itemsize // new.itemsize)))
    ratio = new.itemsize // old.itemsize
    if shape[-1] % ratio:
        raise ValueError(f"view: the last axis ({shape[-1]}) of a {old} array must be a "
                         f"multiple of {ratio} to view it as {new}")
    grouped = lax.reshape(self, (*shape[:-1], shape[-1] // ratio, ratio))
    return lax.bitcast_convert_type(grouped, new)


def _iter(self):
    shape = aval_of(self).shape
    if not shape:
        raise TypeError("iteration over a 0-d array")  # at iter(x), as NumPy raises
    return (lax.index_in_dim(self, i, 0, keepdims=False) for i in range(shape[0]))


def _to_device(self, device: Any, /, *, stream: Any = None):
    if isinstance(self, Tracer):
        return self  # placement of traced values is the caller's
    return lax.device_put(self, device)


def _array_namespace(self, *, api_version: str | None = None):
    if api_version not in (None, "2021.12", "2022.12", "2023.12"):
        raise ValueError(f"lamella.numpy implements array API 2023.12, not {api_version!r}")
    return _numpy()


# --- Python object protocols -------------------------------------------------------------
def _reconstruct_array(value: np.ndarray, weak_type: bool) -> Any:
    """Unpickles an Array: its host value put back on the default device."""
    return lax.device_put(value) if not weak_type else lax.convert_element_type(
        lax.device_put(value), value.dtype, True)


def _reduce(self):
    return _reconstruct_array, (np.array(self), bool(self.aval.weak_type))


def _format(self, format_spec: str) -> str:
    if not self.shape:  # 0-d: format the Python scalar, as NumPy does
        return format(self.item(), format_spec)
    if format_spec:
        raise TypeError(f"unsupported format string {format_spec!r} passed to "
                        f"{type(self).__name__}.__format__ (only 0-d arrays take one)")
    return str(self)


def _truth(self) -> bool:
    size = aval_of(self).size
    if size == 1:
        return bool(self.item() if isinstance(self, lax.Array) else _core_truth(self))
    if size == 0:
        raise ValueError("The truth value of an empty array is ambiguous. Use `array.size > 0` "
                         "to check that an array is not empty.")
    raise ValueError("The truth value of an array with more than one element is ambiguous. "
                     "Use a.any() or a.all()")


_core_truth = Tracer.__bool__


def _byteswap(self, inplace: bool = False):
    if inplace:
        raise ValueError("byteswap(inplace=True) is not possible: lamella arrays are immutable")
    dtype = aval_of(self).dtype
    if dtype.itemsize == 1:
        return self
    as_bytes = lax.bitcast_convert_type(self, np.uint8)  # a trailing axis of the bytes
    return lax.bitcast_convert_type(lax.rev(as_bytes, (len(aval_of(self).shape),)), dtype)


def array_protocols() -> dict[str, Any]:
    """Pickling, copying, formatting, truth and NumPy interop for concrete Arrays."""
    return {
        "__reduce__": _reduce, "__copy__": lambda self: copy_array(self),
        "__deepcopy__": lambda self, memo: copy_array(self), "__format__": _format,
        "__bool__": _truth, "__array_priority__": 100, "byteswap": _byteswap,
        "tobytes": lambda self, order="C": np.asarray(self).tobytes(order),
    }


# Array methods that read the buffer: on a tracer they need its concrete value.
_DATA_METHODS = {
    "item": lambda value, *args: value.item(*args),
    "tolist": lambda value: value.tolist(),
    "tobytes": lambda value, order="C": value.tobytes(order),
    "__dlpack__": lambda value, **kwargs: value.__dlpack__(**kwargs),
    "__reduce__": lambda value: value.__reduce__(),
}
# Array attributes about one buffer's placement, which traced values do not have.
_PLACEMENT_ATTRIBUTES = ("addressable_data", "block_until_ready", "clone", "committed",
                         "copy_to_host_async", "delete", "device", "devices", "is_deleted",
                         "is_ready", "on_device_size_in_bytes", "platform", "sharding",
                         "traceback", "unsafe_buffer_pointer")


def _concrete_method(name: str, method: Any):
    def on_tracer(self, *args, **kwargs):
        return method(np.asarray(self._concrete(name)), *args, **kwargs)
    on_tracer.__name__ = name
    return on_tracer


def _placement_attribute(name: str) -> property:
    def missing(self):
        raise AttributeError(
            f"The {name!r} attribute is not available on a traced array of type "
            f"{self.aval.str_short()}: it describes a concrete Array's buffer, and this value "
            f"is being traced. {self._origin()} Use it outside the transformed function.")
    return property(missing)


def tracer_protocols() -> dict[str, Any]:
    """Tracers' versions of the Array methods: data methods need a concrete value;
    formatting, copying and truth work as on Arrays."""
    methods: dict[str, Any] = {name: _concrete_method(name, fn)
                               for name, fn in _DATA_METHODS.items()}
    methods.update({name: _placement_attribute(name) for name in _PLACEMENT_ATTRIBUTES})
    methods.update({
        "__copy__": lambda self: self, "__deepcopy__": lambda self, memo: self,
        "__format__": lambda self, spec: format(repr(self), spec), "__bool__": _truth,
        "byteswap": _byteswap, "is_fully_addressable": property(lambda self: True),
        "is_fully_replicated": property(lambda self: True),
    })
    return methods


def _flat(self):
    # JAX's own error, so a ported program fails with the message its authors know.
    raise NotImplementedError("JAX Arrays do not implement the arr.flat property: consider "
                              "arr.flatten() instead.")


def numpy_methods() -> dict[str, Any]:
    """The NumPy-style methods and properties lamella.numpy gives Arrays and tracers."""
    methods: dict[str, Any] = {name: _delegate(name) for name in _DELEGATED}
    methods.update({
        "reshape": _reshape, "transpose": _transpose,
        "flatten": _flatten, "ravel": _flatten, "view": _view, "__iter__": _iter,
        "flat": property(_flat),
        "copy": lambda self: _numpy().array(self, copy=True),
        "T": property(lambda self: _numpy().transpose(self)),
        "mT": property(lambda self: _numpy().matrix_transpose(self)),
        "real": property(lambda self: ufuncs.real(self)),
        "imag": property(lambda self: ufuncs.imag(self)),
        "nbytes": property(lambda self: aval_of(self).dtype.itemsize * self.size),
        "itemsize": property(lambda self: aval_of(self).dtype.itemsize),
        "__array_namespace__": _array_namespace, "to_device": _to_device,
        "__round__": lambda self, ndigits=None: _numpy().round(self, ndigits or 0),
        "__contains__": lambda self, item: bool(_numpy().any(ufuncs.equal(self, item))),
    })
    return methods


def operator_methods() -> dict[str, Any]:
    """The dunder methods lamella.numpy gives Arrays and tracers."""
    methods: dict[str, Any] = {"__setitem__": _setitem, "__hash__": None}
    # The functions themselves (no forwarding frame): `x * 2` is `multiply(x, 2)`.
    for name, fn in _BINARY.items():
        methods[f"__{name}__"] = fn
        methods[f"__r{name}__"] = _reflected(fn)
    for name, fn in _COMPARISONS.items():
        methods[f"__{name}__"] = fn
    for name, fn in _UNARY.items():
        methods[f"__{name}__"] = fn
    return methods


def install() -> None:
    methods = {**operator_methods(), **numpy_methods()}
    # lamella.numpy's functions are all defined by now: a plain function becomes the
    # method itself (`x.sum(axis=0)` is `sum(x, axis=0)`), saving a forwarding frame
    # per call, as the operators do.
    for name in _DELEGATED:
        function = getattr(_numpy(), name)
        if type(function) is types.FunctionType:
            methods[name] = function
    runtime.install_array_methods({**methods, **array_protocols()})
    for name, method in {**methods, **tracer_protocols()}.items():
        setattr(Tracer, name, method)
