"""A first pass over the elementwise primitives through lamella.lax.test_util."""

import numpy as np
import pytest

import lamella.lax as lax
from lamella.lax.test_util import check

X = np.array([[0.3, -1.2, 2.0], [0.7, 1.5, -0.4]], np.float32)
Y = np.array([[1.1, 0.5, -0.8], [2.0, -1.3, 0.9]], np.float32)
POS = np.abs(X) + 0.5


@pytest.mark.parametrize("name, ref, arg", [
    ("sin", np.sin, X), ("cos", np.cos, X), ("tanh", np.tanh, X), ("exp", np.exp, X),
    ("log", np.log, POS), ("sqrt", np.sqrt, POS), ("neg", np.negative, X),
])
def test_unary(name, ref, arg):
    check(getattr(lax, name), [arg], ref)


@pytest.mark.parametrize("name, ref", [
    ("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide),
])
def test_binary(name, ref):
    check(getattr(lax, name), [X, Y], ref, diff_argnums=(0, 1))
