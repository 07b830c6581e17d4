"""The README's "More than one device" example runs with 8 CPU devices (in a fresh
process: the device count is fixed when the backend starts) and prints JAX 0.10.2's
numbers."""

import os
import pathlib
import re
import subprocess
import sys

README = pathlib.Path(__file__).parent.parent / "README.md"


def test_data_parallel_mlp_example_prints_what_jax_prints():
    section = README.read_text().split("## More than one device", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    env = {k: v for k, v in os.environ.items()
           if k not in ("LAMELLA_NUM_CPU_DEVICES", "JAX_NUM_CPU_DEVICES", "XLA_FLAGS")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    # JAX 0.10.2 printed 0.006287, then P('data',) True, for the same program.
    assert abs(float(lines[0]) - 0.006287) <= 2e-6, lines[0]
    assert lines[1] == "P('data',) True"
    assert [line for line in lines if "CPU" in line] == [f"│ CPU {i} │" for i in range(8)]


def test_explicit_sharding_example_prints_what_jax_prints():
    section = README.read_text().split("## More than one device", 1)[1].split("\n## ", 1)[0]
    code = re.findall(r"```python\n(.*?)```", section, re.S)[1]
    env = {k: v for k, v in os.environ.items()
           if k not in ("LAMELLA_NUM_CPU_DEVICES", "JAX_NUM_CPU_DEVICES", "XLA_FLAGS")}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    # JAX 0.10.2 printed these three lines for the same program.
    assert done.stdout.splitlines() == ["float32[8@x,4] float32[4,6@y]", "h: float32[8@x,6@y]",
                                        "float32[8@x,4] P('x', None)"]
