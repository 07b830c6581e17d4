"""Eager lamella.numpy against eager jax.numpy: the per-call cost of common small calls.

Each row times one eager call on tiny arrays (f32[8], f32[8, 8], i32[8]), where the
time is all dispatch: argument checks, the cached compiled program, the execute.
Both sides compute the same thing and the results are checked equal (values,
dtypes and weak types) before timing.

JAX's operators and methods live on jaxlib's ArrayImpl, which lamella patches
too (and JAX's own internals use them on concrete arrays), so each side is timed
with its own methods installed on the class: `ArrayImpl`'s attributes are swapped
between the two sets around every timing block, never inside one.
"""

from __future__ import annotations

import contextlib
import operator
import sys

import numpy as np
from harness import QUICK, Row, best_time, jax_or_none, pick
from jaxlib import _jax

import lamella.numpy as lnp
import lamella.random as lr

N = pick(8, 4)


def _inputs(m):
    """The operands every row uses, built with the module `m` (lamella or jax numpy)."""
    rng = np.random.default_rng(0)
    return {
        "x": m.asarray(rng.normal(size=N).astype(np.float32)),
        "y": m.asarray(rng.normal(size=N).astype(np.float32)),
        "m": m.asarray(rng.normal(size=(N, N)).astype(np.float32)),
        "i": m.asarray(rng.integers(-20, 20, size=N).astype(np.int32)),
        "idx": m.asarray(np.array([0, 2, N - 1], np.int32)),
    }


def _cases(np_, ops):
    """(name, call) pairs; `np_` is the numpy module and `ops` the operator/method table
    of one side, so both sides run the very same expressions."""
    mul, add, sub, gt, eq, mod, floordiv, pow_, neg, matmul = (
        ops["mul"], ops["add"], ops["sub"], ops["gt"], ops["eq"], ops["mod"],
        ops["floordiv"], ops["pow"], ops["neg"], ops["matmul"])
    getitem, at, T, sum_, max_, reshape, astype = (
        ops["getitem"], ops["at"], ops["T"], ops["sum"], ops["max"], ops["reshape"],
        ops["astype"])
    return [
        ("x * 2", lambda v: mul(v["x"], 2)),
        ("x + 1", lambda v: add(v["x"], 1)),
        ("x * 2.5", lambda v: mul(v["x"], 2.5)),
        ("x + y", lambda v: add(v["x"], v["y"])),
        ("m - x (broadcast)", lambda v: sub(v["m"], v["x"])),
        ("x > 0", lambda v: gt(v["x"], 0)),
        ("x == y", lambda v: eq(v["x"], v["y"])),
        ("-x", lambda v: neg(v["x"])),
        ("x ** 2", lambda v: pow_(v["x"], 2)),
        ("i % 3 (int32)", lambda v: mod(v["i"], 3)),
        ("i // 2 (int32)", lambda v: floordiv(v["i"], 2)),
        ("sin(x)", lambda v: np_.sin(v["x"])),
        ("exp(m) - 1", lambda v: sub(np_.exp(v["m"]), 1)),
        ("maximum(x, 0)", lambda v: np_.maximum(v["x"], 0)),
        ("where(x > 0, x, 0)", lambda v: np_.where(gt(v["x"], 0), v["x"], 0)),
        ("clip(x, -1, 1)", lambda v: np_.clip(v["x"], -1, 1)),
        ("x[0]", lambda v: getitem(v["x"], 0)),
        ("x[1:5]", lambda v: getitem(v["x"], slice(1, 5))),
        ("x[idx] (int array)", lambda v: getitem(v["x"], v["idx"])),
        ("m[:, 1]", lambda v: getitem(v["m"], (slice(None), 1))),
        ("m.sum(axis=0)", lambda v: sum_(v["m"], axis=0)),
        ("x.sum()", lambda v: sum_(v["x"])),
        ("m.max(axis=1)", lambda v: max_(v["m"], axis=1)),
        ("mean(m, axis=0)", lambda v: np_.mean(v["m"], axis=0)),
        ("x.reshape(2, -1)", lambda v: reshape(v["x"], 2, -1)),
        ("m.T", lambda v: T(v["m"])),
        ("concatenate([x, y])", lambda v: np_.concatenate([v["x"], v["y"]])),
        ("stack([x, y])", lambda v: np_.stack([v["x"], v["y"]])),
        ("zeros((8,))", lambda v: np_.zeros((N,), np.float32)),
        ("arange(8)", lambda v: np_.arange(N)),
        ("full_like(x, 3)", lambda v: np_.full_like(v["x"], 3)),
        ("x.astype(int32)", lambda v: astype(v["x"], np.int32)),
        ("m @ m", lambda v: matmul(v["m"], v["m"])),
        ("m @ x", lambda v: matmul(v["m"], v["x"])),
        ("x @ y", lambda v: matmul(v["x"], v["y"])),
        ("x.at[0].set(1)", lambda v: at(v["x"])[0].set(1.0)),
        ("x.at[idx].add(1)", lambda v: at(v["x"])[v["idx"]].add(1.0)),
    ]


def _random_cases(random, key):
    return [
        ("random.normal(key, (8,))", lambda: random.normal(key, (N,))),
        ("random.uniform(key, (8,))", lambda: random.uniform(key, (N,))),
        ("random.split(key)", lambda: random.split(key)),
    ]


_LAMELLA_OPS = {
    "mul": operator.mul, "add": operator.add, "sub": operator.sub, "gt": operator.gt,
    "eq": operator.eq, "mod": operator.mod, "floordiv": operator.floordiv,
    "pow": operator.pow, "neg": operator.neg, "matmul": operator.matmul,
    "getitem": operator.getitem, "at": lambda a: a.at, "T": lambda a: a.T,
    "sum": lambda a, **kw: a.sum(**kw), "max": lambda a, **kw: a.max(**kw),
    "reshape": lambda a, *s: a.reshape(*s), "astype": lambda a, d: a.astype(d),
}


def _method_sets():
    """JAX (or None) and the attribute sets of jaxlib's ArrayImpl: (JAX's, lamella's)."""
    jax_set = None
    if "jax" not in sys.modules:
        try:
            import jax  # noqa: F401  (patches ArrayImpl with JAX's methods)
            jax_set = dict(vars(_jax.ArrayImpl))
        except ImportError:
            return None, (None, None)
    jax = jax_or_none()  # puts lamella's methods back
    if jax is None:
        return None, (None, None)
    lamella_set = dict(vars(_jax.ArrayImpl))
    if jax_set is None:  # JAX came in earlier in this process: rebuild its methods
        from jax._src.numpy import array_methods, indexing
        array_methods.register_jax_array_methods()
        _jax.ArrayImpl.__getitem__ = lambda self, idx, /: indexing.rewriting_take(self, idx)
        jax_set = dict(vars(_jax.ArrayImpl))
        _install(lamella_set)
    return jax, (jax_set, lamella_set)


def _install(attributes: dict) -> None:
    current = vars(_jax.ArrayImpl)
    for name, value in attributes.items():
        if current.get(name) is not value and name not in ("__dict__", "__weakref__"):
            setattr(_jax.ArrayImpl, name, value)


@contextlib.contextmanager
def _using(attributes: dict | None):
    if attributes is not None:
        _install(attributes)
    yield


def _same(a, b) -> None:
    a, b = (a,) if not isinstance(a, tuple) else a, (b,) if not isinstance(b, tuple) else b
    for u, v in zip(a, b):
        assert np.asarray(u).dtype == np.asarray(v).dtype, (u, v)
        np.testing.assert_array_equal(np.asarray(u), np.asarray(v))


def _time(name: str, lam, jfn, sets) -> Row:
    """Interleaved rounds, each side timed with its own ArrayImpl methods installed."""
    rounds = 1 if QUICK else 5
    t_lam, t_jax = float("inf"), None if jfn is None else float("inf")
    for _ in range(rounds):
        if jfn is not None:
            with _using(sets[0]):
                t_jax = min(t_jax, best_time(jfn, repeat=5))
        with _using(sets[1]):
            t_lam = min(t_lam, best_time(lam, repeat=5))
    return Row(name, t_lam, {"jax": t_jax})


def _check(name: str, lam, jfn, sets, weak: bool = True) -> None:
    with _using(sets[0]):
        expected = jfn()
        jax_weak = getattr(expected, "weak_type", None)
        expected = np.asarray(expected)
    with _using(sets[1]):
        got = lam()
        lam_weak = getattr(got, "weak_type", None)
        got = np.asarray(got)
    assert got.dtype == expected.dtype, (name, got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected, err_msg=name)
    assert not weak or lam_weak == jax_weak, (name, lam_weak, jax_weak)


def run() -> list[Row]:
    jax, sets = _method_sets()
    lam_inputs = _inputs(lnp)
    cases = [(name, lambda fn=fn: fn(lam_inputs), None)
             for name, fn in _cases(lnp, _LAMELLA_OPS)]
    cases += [(name, fn, None) for name, fn in _random_cases(lr, lr.key(0))]
    if jax is not None:
        with _using(sets[0]):
            jax_inputs = _inputs(jax.numpy)
        jax_ops = {**_LAMELLA_OPS, "at": lambda a: a.at}
        jax_cases = [lambda fn=fn: fn(jax_inputs) for _, fn in _cases(jax.numpy, jax_ops)]
        jax_cases += [fn for _, fn in _random_cases(jax.random, jax.random.key(0))]
        cases = [(name, lam, jfn) for (name, lam, _), jfn in zip(cases, jax_cases)]
        for name, lam, jfn in cases:
            if "split" not in name:  # keys print differently; their data is checked below
                _check(name, lam, jfn, sets, weak="random" not in name)
    rows = [_time(name, lam, jfn, sets) for name, lam, jfn in cases]
    ratios = sorted(r.lamella_s / r.references["jax"] for r in rows if r.references.get("jax"))
    if ratios:
        print(f"  lamella/jax: median {ratios[len(ratios) // 2]:.2f}, worst {ratios[-1]:.2f}")
    return rows
