"""One checker for every lax primitive: values, derivatives, batching, jit.

`check(fun, args, reference)` verifies, for a function of arrays:
- values against a NumPy/SciPy `reference` (in the arguments' dtypes);
- jit against eager, bit for bit;
- JVP against central differences and VJP against JVP (float64, x64 on), for
  the arguments listed in `diff_argnums`;
- vmap against a Python loop, batching each argument in turn and all together,
  at the first and last axis.

Compiles are the slow part, so keep shapes small and reuse functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import lamella.core as lc


def _tolerances(dtype) -> tuple[float, float]:
    dtype = np.dtype(dtype)
    if dtype in (np.float64, np.complex128):
        return 1e-12, 1e-12
    if dtype in (np.float16,) or dtype.name == "bfloat16":
        return 1e-2, 1e-2
    return 2e-6, 2e-6


def check_values(fun, args, reference, rtol=None, atol=None):
    out = fun(*args)
    expected = reference(*[np.asarray(a) for a in args])
    outs = out if isinstance(out, (tuple, list)) else [out]
    expects = expected if isinstance(expected, (tuple, list)) else [expected]
    for o, e in zip(outs, expects):
        o = np.asarray(o)
        default_rtol, default_atol = _tolerances(o.dtype)
        if o.dtype.kind in "biu":
            np.testing.assert_array_equal(o, e)
        else:
            np.testing.assert_allclose(o.astype(np.float64) if o.dtype.name == "bfloat16" else o,
                                       e, rtol=rtol or default_rtol, atol=atol or default_atol)
        assert o.shape == np.shape(e), (o.shape, np.shape(e))
    return out


def check_jit_matches_eager(fun, args, rtol: float = 0.0):
    """Bit equality by default; `rtol` > 0 for compositions, where XLA may fuse
    a * b + c into one rounding (an FMA) under jit."""
    eager = fun(*args)
    jitted = lc.jit(fun)(*args)
    for e, j in zip(*(x if isinstance(x, (tuple, list)) else [x] for x in (eager, jitted))):
        if rtol:
            np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=rtol, atol=rtol)
        else:
            np.testing.assert_array_equal(np.asarray(e), np.asarray(j))
        assert np.asarray(e).dtype == np.asarray(j).dtype


def _numerical_jvp(fun, args, tangents, eps):
    plus = fun(*[a + eps * t for a, t in zip(args, tangents)])
    minus = fun(*[a - eps * t for a, t in zip(args, tangents)])
    return (np.asarray(plus) - np.asarray(minus)) / (2 * eps)


def check_grads(fun, args, diff_argnums: Sequence[int] = (0,), eps: float = 1e-6,
                rtol: float = 1e-6, atol: float = 1e-6, seed: int = 0):
    """JVP against central differences and VJP against JVP, in float64."""
    rng = np.random.default_rng(seed)
    with lc.enable_x64():
        args = [np.asarray(a, np.float64) if np.asarray(a).dtype.kind == "f" else
                np.asarray(a, np.complex128) if np.asarray(a).dtype.kind == "c" else np.asarray(a)
                for a in args]

        def partial(*diff):
            full = list(args)
            for i, d in zip(diff_argnums, diff):
                full[i] = d
            return fun(*full)

        primals = [args[i] for i in diff_argnums]
        tangents = [rng.standard_normal(np.shape(p)).astype(p.dtype) for p in primals]
        out, out_dot = lc.jvp(partial, primals, tangents)
        np.testing.assert_allclose(out_dot, _numerical_jvp(partial, primals, tangents, eps),
                                   rtol=rtol, atol=atol)
        ct = rng.standard_normal(np.shape(out)).astype(np.asarray(out).dtype)
        _, f_vjp = lc.vjp(partial, *primals)
        cts = f_vjp(ct)
        # VJPs transpose, they do not conjugate-transpose: <ct, J t> = <J^T ct, t>, bilinear.
        lhs = np.sum(ct * np.asarray(out_dot))
        rhs = sum(np.sum(np.asarray(c) * t) for c, t in zip(cts, tangents))
        np.testing.assert_allclose(lhs, rhs, rtol=rtol, atol=atol)


def check_vmap(fun, args, batch_size: int = 3, seed: int = 0):
    """vmap over each argument alone and over all, at axis 0 and -1, against a loop."""
    rng = np.random.default_rng(seed)

    def batch_of(a):
        a = np.asarray(a)
        if a.dtype.kind == "b":
            return np.stack([a ^ (i % 2 == 1) for i in range(batch_size)])
        if a.dtype.kind in "iu":
            return np.stack([a + i for i in range(batch_size)]).astype(a.dtype)
        noise = rng.uniform(0.9, 1.1, (batch_size, *a.shape)).astype(a.dtype)
        return a[None] * noise

    batched = [batch_of(a) for a in args]
    choices = [(i,) for i in range(len(args))] + ([tuple(range(len(args)))] if len(args) > 1
                                                     else [])
    for which in choices:
        for axis in (0, -1):
            in_axes = tuple(axis if i in which else None for i in range(len(args)))
            vargs = [np.moveaxis(b, 0, axis) if i in which else a
                     for i, (a, b) in enumerate(zip(args, batched))]
            out = lc.vmap(fun, in_axes=in_axes)(*vargs)
            expected = [fun(*[b[k] if i in which else a
                              for i, (a, b) in enumerate(zip(args, batched))])
                        for k in range(batch_size)]
            outs = out if isinstance(out, (tuple, list)) else [out]
            for j, o in enumerate(outs):
                e = np.stack([np.asarray(x[j] if isinstance(x, (tuple, list)) else x)
                              for x in expected])
                rtol, atol = _tolerances(np.asarray(o).dtype)
                np.testing.assert_allclose(np.asarray(o), e, rtol=rtol * 10, atol=atol * 10)


def check(fun: Callable, args: Sequence, reference: Callable | None = None, *,
          diff_argnums: Sequence[int] | None = (0,), rtol=None, atol=None,
          grad_rtol: float = 1e-6, grad_atol: float = 1e-6, vmap: bool = True,
          eps: float = 1e-6, jit_rtol: float = 0.0):
    """All four checks; `diff_argnums=None` skips derivatives."""
    if reference is not None:
        check_values(fun, args, reference, rtol, atol)
    check_jit_matches_eager(fun, args, jit_rtol)
    if diff_argnums:
        check_grads(fun, args, diff_argnums, eps=eps, rtol=grad_rtol, atol=grad_atol)
    if vmap:
        check_vmap(fun, args)
