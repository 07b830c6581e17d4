"""Core's tests exercise core's own executor, the NumPy interpreter, even when a
higher layer that registers another executor (lamella.lax) is loaded in the
same process."""

import pytest

from lamella.core.dispatch import InterpreterExecutor, register_executor


@pytest.fixture(autouse=True)
def interpreter_executor():
    previous = register_executor(InterpreterExecutor())
    yield
    register_executor(previous)
