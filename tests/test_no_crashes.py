"""Nothing a user does kills the interpreter: each program below runs in a child
process, and none may die by a signal (jaxlib answers some misuse with an abort or
a segfault: DLPack exports outliving their array, deleted or donated buffers used
again, deletion racing a read in another thread, shapes too large to represent).

Programs are grouped so that each child imports lamella once; a child prints each
program's name before running it, so a crash is attributed to its program. Each
program must also end normally: it asserts the error or the values it expects.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

PRELUDE = """
import gc, threading, random
import numpy as np
import lamella.core as jax
import lamella.numpy as jnp
from lamella.lax.runtime import DeletedArrayError

def fresh():
    return jnp.arange(4, dtype=jnp.float32)

def raises(error, fn, *args):
    try:
        fn(*args)
    except error:
        return
    raise AssertionError(f"{fn} did not raise {error.__name__}")

def aligned(n):  # float32 data in a buffer aligned to 64 bytes (XLA could use it in place)
    raw = np.empty(4 * n + 64, np.uint8)
    start = (-raw.ctypes.data) % 64
    return raw[start:start + 4 * n].view(np.float32)

double = jax.jit(lambda a: a * 2)
donating = jax.jit(lambda a: a * 2, donate_argnums=0)
"""

DLPACK = {
    "capsule outlives its array": """
        x = fresh(); cap = x.__dlpack__(); x.delete(); del cap; gc.collect()""",
    "numpy view outlives its array": """
        x = fresh(); n = np.from_dlpack(x); x.delete(); assert n.tolist() == [0, 1, 2, 3]
        del n; gc.collect()""",
    "import outlives its source": """
        x = fresh(); y = jnp.from_dlpack(x); x.delete()
        assert (y + 1).tolist() == [1, 2, 3, 4]; y.delete()""",
    "source outlives its import": """
        x = fresh(); y = jax.dlpack.from_dlpack(x); y.delete()
        assert (x + 1).tolist() == [1, 2, 3, 4]; x.delete()""",
    "chain of imports deleted in order": """
        x = fresh(); y = jnp.from_dlpack(x); z = jnp.from_dlpack(y); x.delete(); y.delete()
        assert z.tolist() == [0, 1, 2, 3]; z.delete()""",
    "two numpy views, source deleted": """
        x = fresh(); a = np.from_dlpack(x); b = np.from_dlpack(x); x.delete(); del a; gc.collect()
        assert b.tolist() == [0, 1, 2, 3]""",
    "exported array donated": """
        # A buffer with a DLPack consumer can't be reused: the donation is skipped, as in JAX.
        x = fresh(); n = np.from_dlpack(x); donating(x); assert n.tolist() == [0, 1, 2, 3]
        assert (x + 1).tolist() == [1, 2, 3, 4]""",
    "import donated, source still read": """
        x = fresh(); y = jnp.from_dlpack(x); donating(y); assert x.tolist() == [0, 1, 2, 3]""",
    "capsule of a deleted array": """
        x = fresh(); x.delete(); raises(DeletedArrayError, x.__dlpack__)
        raises(DeletedArrayError, jnp.from_dlpack, x)""",
    "column-major imports compute on their values": """
        for make in (lambda: aligned(6).reshape(3, 2).T, lambda: np.asfortranarray(
                np.arange(6, dtype=np.float32).reshape(2, 3))):
            for _ in range(20):
                host = make(); host[...] = np.arange(6, dtype=np.float32).reshape(host.shape)
                for imp in (jnp.from_dlpack, jax.dlpack.from_dlpack, jnp.asarray):
                    x = imp(host)
                    assert (x + 0).tolist() == host.tolist(), (imp, host)
                    assert x.sum(axis=0).tolist() == host.sum(axis=0).tolist()""",
    "numpy memory written after the import": """
        host = aligned(4); host[:] = 1; x = jnp.from_dlpack(host); host[:] = 5
        assert x.tolist() == [1, 1, 1, 1]""",
}

HUGE = {
    "zeros of 2**64 bytes": """
        raises(MemoryError, jnp.zeros, (1 << 32, 1 << 32), jnp.int8)""",
    "ones of a petabyte": """
        raises(MemoryError, jnp.ones, (1 << 20, 1 << 20, 1 << 10), jnp.int8)""",
    "full and broadcast": """
        raises(MemoryError, jnp.full, (1 << 40, 1 << 30), 2.0)
        raises(MemoryError, jnp.broadcast_to, jnp.ones(3), (1 << 31, 1 << 31, 3))""",
    "huge intermediate in jit": """
        raises(MemoryError, jax.jit(lambda: jnp.zeros((1 << 32, 1 << 32), jnp.int8).sum()))""",
    "huge arange": """
        raises(MemoryError, jnp.arange, 1 << 45)""",
    "device_put of a broadcast numpy view": """
        raises(MemoryError, jax.device_put, np.broadcast_to(np.float32(0), (1 << 40,)))""",
}

DELETED = {
    "every use of a deleted array": """
        ops = [lambda x: x + 1, np.asarray, repr, str, double, donating, jnp.sum,
               lambda x: x.block_until_ready(), lambda x: x.is_ready(), lambda x: x.platform(),
               lambda x: x.clone(), lambda x: x.unsafe_buffer_pointer(), lambda x: x.delete(),
               lambda x: x.on_device_size_in_bytes(), lambda x: x.copy_to_host_async(),
               np.from_dlpack, jnp.from_dlpack, jnp.array, lambda x: x[0], lambda x: x.tolist(),
               lambda x: jax.device_put(x, jax.devices()[0]), jax.device_get,
               lambda x: x.at[0].set(1.0), lambda x: x.astype(jnp.int32)]
        for how in ("delete", "donate"):
            for op in ops:
                x = fresh(); double(x); donating(fresh())  # warm the C++ fast paths
                x.delete() if how == "delete" else donating(x)
                try:
                    op(x)
                except Exception:
                    pass""",
    "donated argument passed again": """
        x = fresh(); donating(x); raises(DeletedArrayError, donating, x)
        raises((DeletedArrayError, ValueError), double, x)""",
}

THREADS = {
    "deletion racing reads, computations and exports": """
        f = jax.jit(lambda a: a @ a + 1)
        ops = [f, lambda x: x + 1, np.asarray, lambda x: x.block_until_ready(),
               lambda x: x.is_ready(), donating, np.from_dlpack, jnp.from_dlpack,
               lambda x: x.copy_to_host_async(), lambda x: x.delete(), repr,
               lambda x: jax.device_put(x, jax.devices()[0])]

        def use(x, op):
            try:
                op(x)
            except Exception:
                pass
        for _ in range(300):
            x = f(jnp.ones((32, 32)))
            threads = [threading.Thread(target=use, args=(x, random.choice(ops)))
                       for _ in range(3)]
            threads.append(threading.Thread(target=x.delete))
            random.shuffle(threads)
            for t in threads:
                t.start()
            for t in threads:
                t.join()""",
    "deletion while a computation reads the buffer": """
        f = jax.jit(lambda a: a @ a + 1)
        for _ in range(30):
            x = jnp.ones((128, 128)); y = f(x); x.delete(); y.block_until_ready()
            x = jnp.ones((128, 128)); n = np.from_dlpack(x); y = f(x); x.delete(); del n
            y.block_until_ready()""",
}


def _child_source(programs: dict[str, str]) -> str:
    lines = [PRELUDE]
    for name, body in programs.items():
        lines.append(f"print({name!r}, flush=True)")
        lines.append("if True:")
        lines.append(textwrap.indent(textwrap.dedent(body).strip(), "    "))
    lines.append("print('<all done>', flush=True)")
    return "\n".join(lines)


def _run(programs: dict[str, str]) -> None:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    child = subprocess.run([sys.executable, "-c", _child_source(programs)], env=env,
                           capture_output=True, text=True, timeout=600)
    started = child.stdout.split("\n")
    last = next((line for line in reversed(started) if line), "<import>")
    if child.returncode < 0:
        name = signal.Signals(-child.returncode).name
        pytest.fail(f"the program {last!r} killed the interpreter with {name}:\n"
                    f"{child.stderr[-3000:]}")
    assert child.returncode == 0 and last == "<all done>", (
        f"the program {last!r} failed:\n{child.stderr[-3000:]}")


@pytest.mark.parametrize("group", [DLPACK, HUGE, DELETED, THREADS],
                         ids=["dlpack", "huge", "deleted", "threads"])
def test_no_program_kills_the_interpreter(group):
    _run(group)
