"""Host callbacks in programs over 8 CPU devices, as JAX 0.10.2 runs them: in a sharded
jit a callback runs once, on the first device, with whole values; inside shard_map or
pmap (and for a partitioned debug callback) once per device with that device's part."""

import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy  # noqa: F401  (operators on traced values)
from lamella.core import io_callback, pure_callback, shard_map
from lamella.core.sharding import Mesh, NamedSharding, SingleDeviceSharding
from lamella.core.sharding import PartitionSpec as P

MESH = Mesh(np.array(lc.devices()[:8]), ("x",))
SPREAD = NamedSharding(MESH, P("x"))
HOST = np.arange(16, dtype=np.float32)
X = lc.device_put(HOST, SPREAD)
PARTS = [HOST[2 * i:2 * i + 2].tolist() for i in range(8)]
F32_16 = lc.ShapeDtypeStruct((16,), np.float32)
F32_2 = lc.ShapeDtypeStruct((2,), np.float32)


def _recorder():
    calls = []

    def record(tag):
        def call(*values):
            calls.append((tag, *[np.asarray(v).tolist() for v in values]))
            return values[0] * 2 if tag in ("p", "a") else None
        return call
    return calls, record


def test_pure_callback_in_a_sharded_jit_runs_once_with_the_whole_value():
    calls, record = _recorder()
    f = lc.jit(lambda x: pure_callback(record("p"), F32_16, x) + 1)
    for n in (1, 2):  # the second call runs from the C++ dispatcher
        out = lc.block_until_ready(f(X))  # a pure callback is not waited for (JAX)
        assert calls == [("p", HOST.tolist())] * n
        np.testing.assert_array_equal(np.asarray(out), HOST * 2 + 1)
    assert out.sharding == NamedSharding(MESH, P())  # JAX's: replicated


@pytest.mark.parametrize("ordered", [False, True])
def test_io_callback_in_a_sharded_jit_runs_once_in_program_order(ordered):
    calls, record = _recorder()

    def f(x):
        a = io_callback(record("a"), F32_16, x, ordered=ordered)
        io_callback(record("b"), None, a, ordered=ordered)
        return a + x

    jitted = lc.jit(f)
    for _ in range(3):
        out = jitted(X)
    assert calls == [("a", HOST.tolist()), ("b", (HOST * 2).tolist())] * 3
    np.testing.assert_array_equal(np.asarray(out), HOST * 3)


def test_debug_print_in_a_sharded_jit_prints_the_whole_value_once(capsys):
    f = lc.jit(lambda x: (lc.debug.print("x={}", x), x * 2)[1])
    f(X)
    # JAX 0.10.2 refuses ordered=True over several devices ("ordered effects are not
    # supported for more than 1 device"); it runs on one device, so lamella keeps its order.
    g = lc.jit(lambda x: (lc.debug.print("a={}", x[0], ordered=True),
                          lc.debug.print("b={}", x[15], ordered=True), x)[2])
    g(X)
    assert capsys.readouterr().out == f"x={HOST}\na=0.0\nb=15.0\n"


def test_a_callbacks_result_returned_as_it_is_is_replicated():
    # JAX 0.10.2 fails here ("Cannot convert GSPMDSharding {maximal device=0} into
    # SdyArray"); lamella gives the value replicated over the devices.
    calls, record = _recorder()
    for f in (lambda x: io_callback(record("a"), F32_16, x),
              lambda x: pure_callback(record("p"), F32_16, x)):
        out = lc.jit(f)(X)
        assert out.sharding == NamedSharding(MESH, P())
        np.testing.assert_array_equal(np.asarray(out), HOST * 2)
        for shard in out.addressable_shards:
            np.testing.assert_array_equal(np.asarray(shard.data), HOST * 2)
    assert calls == [("a", HOST.tolist()), ("p", HOST.tolist())]


def test_a_callback_runs_on_the_device_its_sharding_names():
    calls, record = _recorder()
    on_3 = SingleDeviceSharding(lc.devices()[3])
    f = lc.jit(lambda x: io_callback(record("a"), F32_16, x, sharding=on_3) + 1)
    assert "maximal device=3" in f.lower(X).as_text()
    np.testing.assert_array_equal(np.asarray(f(X)), HOST * 2 + 1)
    assert calls == [("a", HOST.tolist())]
    g = lc.jit(lambda x: pure_callback(record("p"), F32_16, x, sharding=SPREAD))
    with pytest.raises(NotImplementedError, match="pure_callback only supports "
                                                  "SingleDeviceSharding"):  # JAX's refusal
        g(X)


def test_partitioned_debug_callback_sees_each_devices_part():
    calls, record = _recorder()
    f = lc.jit(lambda x: (lc.debug.callback(record("d"), x, partitioned=True), x + 1)[1])
    np.testing.assert_array_equal(np.asarray(f(X)), HOST + 1)
    assert sorted(calls) == [("d", part) for part in PARTS]


def _per_shard(block, axis, record):
    lc.debug.print("shard {} {}", lax.axis_index(axis), block)
    c = pure_callback(record("p"), F32_2, block)
    return io_callback(lambda v: v + 1, F32_2, c)


def _printed_shards(out: str) -> list[tuple[int, list[float]]]:
    lines = out.splitlines()
    assert len(lines) == 8
    found = []
    for line in lines:
        i, a, b = re.fullmatch(r"shard (\d) \[ *(\S+) +(\S+)\]", line).groups()
        found.append((int(i), [float(a), float(b)]))
    return sorted(found)


def test_callbacks_in_shard_map_run_per_device_on_its_part(capsys):
    calls, record = _recorder()
    f = lc.jit(shard_map(lambda b: _per_shard(b, "x", record), mesh=MESH, in_specs=P("x"),
                         out_specs=P("x")))
    out = f(X)
    np.testing.assert_array_equal(np.asarray(out), HOST * 2 + 1)
    assert sorted(calls) == [("p", part) for part in PARTS]
    assert _printed_shards(capsys.readouterr().out) == list(enumerate(PARTS))


def test_callbacks_in_pmap_run_per_device_on_its_part(capsys):
    calls, record = _recorder()
    out = lc.pmap(lambda b: _per_shard(b, "i", record), axis_name="i")(HOST.reshape(8, 2))
    np.testing.assert_array_equal(np.asarray(out), (HOST * 2 + 1).reshape(8, 2))
    assert sorted(calls) == [("p", part) for part in PARTS]
    assert _printed_shards(capsys.readouterr().out) == list(enumerate(PARTS))
    calls.clear()
    lc.pmap(lambda b: io_callback(record("o"), None, b, ordered=True))(HOST.reshape(8, 2))
    assert sorted(calls) == [("o", part) for part in PARTS]  # JAX accepts it too


def test_callbacks_with_several_results_in_both_regions():
    two = (F32_2, lc.ShapeDtypeStruct((), np.int32))

    def body(b):
        y, n = pure_callback(lambda v: (v * 3, np.int32(v.size)), two, b)
        return y + n

    f = lc.jit(shard_map(body, mesh=MESH, in_specs=P("x"), out_specs=P("x")))
    np.testing.assert_array_equal(np.asarray(f(X)), HOST * 3 + 2)
    whole = (F32_16, lc.ShapeDtypeStruct((), np.float32))
    g = lc.jit(lambda x: pure_callback(lambda v: (v - 1, v.sum()), whole, x))
    y, total = g(X)
    np.testing.assert_array_equal(np.asarray(y), HOST - 1)
    assert float(total) == HOST.sum()


def test_io_callback_in_a_scan_of_a_sharded_jit_runs_in_order():
    seen = []

    def step(carry, _):
        io_callback(lambda c: seen.append(float(c)), None, carry[0], ordered=True)
        return carry + 1, None

    out = lc.jit(lambda x: lax.scan(step, x, None, length=4)[0])(X)
    assert seen == [0.0, 1.0, 2.0, 3.0]
    np.testing.assert_array_equal(np.asarray(out), HOST + 4)


class Boom(Exception):
    pass


def test_a_callbacks_exception_is_raised_not_a_hang():
    # JAX 0.10.2 aborts the process here after 40 s: the devices whose callback did not
    # fail wait for the failed one at the collective after it.
    failing = [True]

    def fail(v):
        if failing[0]:
            raise Boom(f"bad {v.shape}")
        return v

    f = lc.jit(lambda x: pure_callback(fail, F32_16, x) * 2)
    for _ in range(2):
        with pytest.raises(Exception, match=r"Boom: bad \(16,\)"):
            f(X)
    g = lc.jit(shard_map(lambda b: lax.psum(pure_callback(fail, F32_2, b), "x"), mesh=MESH,
                         in_specs=P("x"), out_specs=P()))
    with pytest.raises(Exception, match=r"Boom: bad \(2,\)"):
        g(X)
    failing[0] = False  # the programs still run
    np.testing.assert_array_equal(np.asarray(f(X)), HOST * 2)
    np.testing.assert_array_equal(np.asarray(g(X)), HOST.reshape(8, 2).sum(0))


def test_callbacks_from_4_threads_at_once():
    # One thread's callback fails every time; the others' calls are not disturbed.
    calls = []

    def twice(v):
        if v[1] == 0:
            raise Boom("zero")
        calls.append(v[1])
        return v * 2

    f = lc.jit(lambda x, k: pure_callback(twice, F32_16, x * k) + k)

    def run(k):
        outs = []
        for _ in range(5):
            try:
                outs.append(np.asarray(f(X, np.float32(k))))
            except Exception as error:  # XLA's error, carrying the callback's
                outs.append(str(error))
        return outs

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, range(4)))
    assert all("Boom: zero" in out for out in results[0])
    for k, outs in enumerate(results[1:], start=1):
        for out in outs:
            np.testing.assert_array_equal(out, HOST * k * 2 + k)
    assert sorted(calls) == sorted([1.0, 2.0, 3.0] * 5)


def test_ordered_io_callback_in_shard_map_keeps_each_devices_order():
    seen = []

    def body(b):
        io_callback(lambda v: seen.append(("a", v.tolist())), None, b, ordered=True)
        io_callback(lambda v: seen.append(("b", v.tolist())), None, b + 1, ordered=True)
        return b

    lc.jit(shard_map(body, mesh=MESH, in_specs=P("x"), out_specs=P("x")))(X)
    assert len(seen) == 16
    for part in PARTS:  # on each device "a" with its part, then "b"
        mine = [s for s in seen if s[1] in (part, [p + 1 for p in part])]
        assert mine == [("a", part), ("b", [p + 1 for p in part])]


def test_a_wrong_result_type_names_the_callback():
    def wrong(v):
        return v[:3]

    with pytest.raises(Exception, match="wrong"):
        lc.jit(lambda x: pure_callback(wrong, F32_16, x))(X)


def test_a_program_of_callbacks_alone_has_run_when_its_call_returns():
    # No results to wait for: the call waits for every device's program itself (before,
    # about 4 calls in 10 returned while other devices were still calling back).
    calls = []
    f = lc.pmap(lambda b: io_callback(lambda v: calls.append(1), None, b, ordered=True))
    for _ in range(50):
        calls.clear()
        f(HOST.reshape(8, 2))
        assert len(calls) == 8
