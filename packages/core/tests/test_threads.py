"""Tracing and the trace caches under concurrent calls from several threads."""

import concurrent.futures

import numpy as np
from numpy_prims import mul, sin, total

import lamella.core as lc


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
