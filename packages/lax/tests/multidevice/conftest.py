"""This folder's tests run with 8 CPU devices: run it on its own
(`pytest packages/lax/tests/multidevice`), so the count is set before lamella starts."""

import os

_SET_HERE = "LAMELLA_NUM_CPU_DEVICES" not in os.environ
os.environ.setdefault("LAMELLA_NUM_CPU_DEVICES", "8")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # XLA's GSPMD deprecation notice

import pytest  # noqa: E402

import lamella.core as lc  # noqa: E402
import lamella.lax  # noqa: E402, F401  (XLA's devices: lamella.core alone has the interpreter's)

lc.device_count()  # the backend starts now, with the count above
if _SET_HERE:  # other tests' subprocesses choose their own device count
    del os.environ["LAMELLA_NUM_CPU_DEVICES"]


def pytest_collection_modifyitems(config, items):
    if lc.device_count() >= 8:
        return
    skip = pytest.mark.skip(reason="needs 8 CPU devices: run packages/lax/tests/multidevice "
                                   "in its own pytest session")
    for item in items:
        if "multidevice" in str(item.fspath):
            item.add_marker(skip)
