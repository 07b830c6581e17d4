"""The test toolkit every lamella package checks its functions with.

`check(fun, args, reference)` verifies a function of arrays four ways:

- values against a NumPy/SciPy `reference` (`check_values`);
- jit against eager, bit for bit or to `jit_rtol` (`check_jit_matches_eager`);
- JVP against central differences and VJP against JVP, in float64 with x64 on,
  for the arguments in `diff_argnums` (`check_derivatives`);
- vmap against a Python loop, batching each argument in turn and all
  together, at the first and last axis (`check_vmap`).

Compiles are the slow part: keep shapes small and reuse functions.

>>> import numpy as np
>>> import lamella.lax as lax
>>> check(lax.neg, [np.arange(3, dtype=np.float32)], np.negative)
Array([-0., -1., -2.], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import lamella.core as lc
from lamella.core.test_util import numerical_jvp

__all__ = ["assert_close", "check", "check_derivatives", "check_jit_matches_eager",
           "check_values", "check_vmap", "numerical_jvp", "tolerance"]


def tolerance(dtype: Any) -> tuple[float, float]:
    """Default (rtol, atol) for comparing results of `dtype` with a float64 reference.

    >>> tolerance(np.float32)
    (2e-06, 2e-06)
    """
    dtype = np.dtype(dtype)
    if dtype in (np.float64, np.complex128):
        return 1e-12, 1e-12
    if dtype == np.float16 or dtype.name == "bfloat16":
        return 1e-2, 1e-2
    return 2e-6, 2e-6


def _as_list(x: Any) -> list:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def assert_close(got: Any, want: Any, dtype: Any, tol: float = 2e-5) -> None:
    """`got` has exactly `dtype`, `want`'s shape, and values within `tol` (rel. and abs.).

    >>> assert_close(np.float32(1.0), 1.0000001, np.float32)
    """
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def check_values(fun: Callable, args: Sequence, reference: Callable,
                 rtol: float | None = None, atol: float | None = None) -> Any:
    """`fun(*args)` equals `reference(*numpy_args)` (exactly for integers and bools).

    Returns `fun(*args)`.
    """
    out = fun(*args)
    expected = reference(*[np.asarray(a) for a in args])
    for o, e in zip(_as_list(out), _as_list(expected)):
        o = np.asarray(o)
        default_rtol, default_atol = tolerance(o.dtype)
        if o.dtype.kind in "biu":
            np.testing.assert_array_equal(o, e)
        else:
            np.testing.assert_allclose(o.astype(np.float64) if o.dtype.name == "bfloat16" else o,
                                       e, rtol=rtol or default_rtol, atol=atol or default_atol)
        assert o.shape == np.shape(e), (o.shape, np.shape(e))
    return out


def check_jit_matches_eager(fun: Callable, args: Sequence, rtol: float = 0.0) -> None:
    """`jit(fun)` gives eager `fun`'s results and dtypes.

    Bit equality by default; pass `rtol` > 0 for compositions, where XLA may
    fuse `a * b + c` into one rounding (an FMA) under jit.
    """
    eager = fun(*args)
    jitted = lc.jit(fun)(*args)
    for e, j in zip(_as_list(eager), _as_list(jitted)):
        if rtol:
            np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=rtol, atol=rtol)
        else:
            np.testing.assert_array_equal(np.asarray(e), np.asarray(j))
        assert np.asarray(e).dtype == np.asarray(j).dtype


def _as_float64(a: Any) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind == "f" or a.dtype.name == "bfloat16":
        return a.astype(np.float64)
    if a.dtype.kind == "c":
        return a.astype(np.complex128)
    return a


def check_derivatives(fun: Callable, args: Sequence, diff_argnums: Sequence[int] = (0,),
                      eps: float = 1e-6, rtol: float = 1e-6, atol: float = 1e-6,
                      seed: int = 0) -> None:
    """JVP against central differences and VJP against JVP, in float64 (x64 on).

    The VJP check is the bilinear identity `<ct, J t> = <J^T ct, t>`: VJPs
    transpose, they do not conjugate-transpose. Where complex numbers are
    involved the maps are only real-linear (a real input with a complex output,
    `conj`, `abs`), and the identity holds for the real parts.
    """
    rng = np.random.default_rng(seed)

    def draw(like):
        like = np.asarray(like)
        noise = rng.standard_normal(like.shape)
        if like.dtype.kind == "c":
            noise = noise + 1j * rng.standard_normal(like.shape)
        return noise.astype(like.dtype)

    with lc.enable_x64():
        args = [_as_float64(a) for a in args]

        def of_diff_args(*diff):
            full = list(args)
            for i, d in zip(diff_argnums, diff):
                full[i] = d
            return fun(*full)

        primals = [args[i] for i in diff_argnums]
        tangents = [draw(p) for p in primals]
        out, out_dot = lc.jvp(of_diff_args, primals, tangents)
        np.testing.assert_allclose(out_dot, numerical_jvp(of_diff_args, primals, tangents, eps),
                                   rtol=rtol, atol=atol)
        ct = draw(out)
        _, f_vjp = lc.vjp(of_diff_args, *primals)
        cts = f_vjp(ct)
        lhs = np.sum(ct * np.asarray(out_dot))
        rhs = sum(np.sum(np.asarray(c) * t) for c, t in zip(cts, tangents))
        np.testing.assert_allclose(np.real(lhs), np.real(rhs), rtol=rtol, atol=atol)


def _batch_of(a: Any, batch_size: int, rng: np.random.Generator) -> np.ndarray:
    """`batch_size` distinct variations of `a`, stacked on a new leading axis."""
    a = np.asarray(a)
    if a.dtype.kind == "b":
        return np.stack([a ^ (i % 2 == 1) for i in range(batch_size)])
    if a.dtype.kind in "iu":
        return np.stack([a + i for i in range(batch_size)]).astype(a.dtype)
    noise = rng.uniform(0.9, 1.1, (batch_size, *a.shape)).astype(a.dtype)
    return a[None] * noise


def check_vmap(fun: Callable, args: Sequence, batch_size: int = 3, seed: int = 0) -> None:
    """vmap over each argument alone and over all, at axis 0 and -1, against a loop."""
    rng = np.random.default_rng(seed)
    batched = [_batch_of(a, batch_size, rng) for a in args]
    choices = [(i,) for i in range(len(args))]
    if len(args) > 1:
        choices.append(tuple(range(len(args))))
    for which in choices:
        for axis in (0, -1):
            in_axes = tuple(axis if i in which else None for i in range(len(args)))
            vargs = [np.moveaxis(b, 0, axis) if i in which else a
                     for i, (a, b) in enumerate(zip(args, batched))]
            out = lc.vmap(fun, in_axes=in_axes)(*vargs)
            expected = [fun(*[b[k] if i in which else a
                              for i, (a, b) in enumerate(zip(args, batched))])
                        for k in range(batch_size)]
            for j, o in enumerate(_as_list(out)):
                e = np.stack([np.asarray(_as_list(x)[j]) for x in expected])
                rtol, atol = tolerance(np.asarray(o).dtype)
                np.testing.assert_allclose(np.asarray(o), e, rtol=rtol * 10, atol=atol * 10)


def check(fun: Callable, args: Sequence, reference: Callable | None = None, *,
          diff_argnums: Sequence[int] | None = (0,), rtol: float | None = None,
          atol: float | None = None, grad_rtol: float = 1e-6, grad_atol: float = 1e-6,
          vmap: bool = True, eps: float = 1e-6, jit_rtol: float = 0.0) -> Any:
    """All four checks; `diff_argnums=None` (or empty) skips derivatives.

    Args:
      fun: a function of arrays returning an array or a tuple/list of arrays.
      args: example arguments (NumPy arrays).
      reference: a NumPy/SciPy function with `fun`'s meaning, or None.
      diff_argnums: the arguments to differentiate with respect to.
      rtol, atol: value tolerances (defaults from the output dtype).
      grad_rtol, grad_atol, eps: derivative tolerances and finite-difference step.
      vmap: whether to check batching.
      jit_rtol: 0 for bit equality of jit and eager, else a tolerance.

    Returns:
      `fun(*args)`, when a reference was given; otherwise None.
    """
    out = None
    if reference is not None:
        out = check_values(fun, args, reference, rtol, atol)
    check_jit_matches_eager(fun, args, jit_rtol)
    if diff_argnums:
        check_derivatives(fun, args, diff_argnums, eps=eps, rtol=grad_rtol, atol=grad_atol)
    if vmap:
        check_vmap(fun, args)
    return out
