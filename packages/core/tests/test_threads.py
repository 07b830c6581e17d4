"""Tracing and the trace caches under concurrent calls from several threads."""

import concurrent.futures

import numpy as np
from numpy_prims import mul, sin, total

import lamella.core as lc
from lamella.core.config import config
from lamella.core.trace import current_trace, eval_trace


def test_concurrent_jit_grad_and_vmap_calls_with_racing_cache_misses():
    f = lc.jit(lambda x: total(mul(sin(x), x)))
    g = lc.jit(lc.grad(lambda x: total(mul(sin(x), x))))
    f._CACHE_SIZE = 3  # force evictions while other threads look entries up

    def work(i):
        x = np.linspace(0, 1, 2 + i % 7).astype(np.float64)
        value, grad = f(x), g(x)
        batched = lc.vmap(g)(np.stack([x, x + 1]))
        return i, x, value, grad, batched

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(64)))
    for _, x, value, grad, batched in results:
        x32 = x.astype(np.float32)
        np.testing.assert_allclose(value, np.sum(np.sin(x32) * x32), rtol=1e-5)
        np.testing.assert_allclose(grad, np.cos(x32) * x32 + np.sin(x32), rtol=1e-5)
        np.testing.assert_allclose(batched[1], np.cos(x32 + 1) * (x32 + 1) + np.sin(x32 + 1),
                                   rtol=1e-5)


def test_top_level_observers_see_a_thread_start_and_stop_tracing():
    from lamella.core import trace as core_trace
    seen = []
    core_trace.observe_top_level(seen.append)
    try:
        lc.make_jaxpr(lambda x: lc.jvp(sin, (x,), (x,))[0])(np.float32(1.0))
    finally:
        core_trace._top_level_observers.remove(seen.append)
    # entering the first trace (False) and leaving the last (True), nothing in between
    assert seen and seen[0] is False and seen[-1] is True
    assert all(a != b for a, b in zip(seen, seen[1:]))


def test_override_observers_see_each_threads_overrides():
    seen = []
    config.observe_overrides(lambda local: seen.append(dict(local)))
    try:
        with config.override("numpy_rank_promotion", "raise"):
            pass
    finally:
        config._override_observers.pop()
    assert seen == [{"numpy_rank_promotion": "raise"}, {}]


def test_default_fast_dispatch_runs_the_function_itself_when_asked():
    from lamella.core.dispatch import InterpreterExecutor
    from lamella.core.jit import JitFunction
    calls, inline = [], [False]
    jitted = JitFunction(lambda x: calls.append(current_trace()) or sin(x))
    dispatch = InterpreterExecutor().fast_dispatch(
        jitted, inline_when=lambda args, kwargs: inline[0])
    x = np.float32(0.5)
    assert np.allclose(dispatch(x), np.sin(x))
    inline[0] = True
    assert np.allclose(dispatch(x), np.sin(x))
    # traced once (under a staging trace), then run inline at the top level
    assert len(calls) == 2 and calls[0] is not eval_trace and calls[1] is eval_trace
