"""Measures the accuracy of lamella.scipy.special's error-function, normal,
Bessel, logistic, information and related functions (and of JAX's, when it is
installed) against SciPy's float64 answers, for the README's table.

    python benchmarks/accuracy_scipy_special.py

For each function and for float32 and float64 inputs on a fixed grid it prints
the largest error in ulps of the input dtype, |got - want| / (eps |want|), over
the points where SciPy's answer is a normal number of that dtype; "NaN" marks a
NaN where SciPy has a number. Rows marked "abs" measure |got - want| / eps
instead: functions that oscillate through zeros (J_n, Ci) are accurate in that
sense only, in SciPy too. In float64 SciPy is itself the less accurate one for
several functions (see the known-answer tests against mpmath).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.special as sp
from harness import jax_or_none

import lamella.core as lc
from lamella.scipy import special

LD = np.longdouble


@dataclass
class Case:
    name: str
    inputs: Callable[[type], list[np.ndarray]]  # the arguments, as float64 arrays
    reference: Callable[..., np.ndarray]
    lamella: Callable[..., object]
    jax_name: str | None = None
    absolute: bool = False
    kwargs: dict | None = None


def _grid(lo: float, hi: float, n: int = 20001) -> np.ndarray:
    return np.linspace(lo, hi, n)


def _logs(lo: float, hi: float, n: int = 4001) -> np.ndarray:
    return np.logspace(np.log10(lo), np.log10(hi), n)


def _both_signs(x: np.ndarray) -> np.ndarray:
    return np.concatenate([-x[::-1], x])


def _erfc_reference(x: np.ndarray) -> np.ndarray:
    # SciPy's float64 erfc is up to ~260 ulps off past x = 23; exp(-x**2) erfcx(x) in
    # 80-bit floats is not.
    with np.errstate(under="ignore"):
        tail = (np.exp(-np.asarray(x, LD) ** 2) * sp.erfcx(x)).astype(np.float64)
    return np.where(x > 0.5, tail, sp.erfc(x))


def _erfcx_reference(x: np.ndarray) -> np.ndarray:
    # SciPy forms exp(x**2) from a rounded x**2 for x < 0; an 80-bit square does not.
    negative = 2 * np.exp(np.asarray(x, LD) ** 2) - sp.erfcx(-x)
    with np.errstate(over="ignore"):
        return np.where(x < 0, negative.astype(np.float64), sp.erfcx(x))


def _normal_reference(x: np.ndarray, log: bool) -> np.ndarray:
    """ndtr or log_ndtr from SciPy's erfcx and an 80-bit exp(-x**2/2): SciPy's own
    ndtr is erfc of a rounded x/sqrt(2), ~x**2/2 ulps off in the tail (700 at -30)."""
    t = np.abs(x)
    log_tail = -np.asarray(t, LD) ** 2 / 2 + np.log(sp.erfcx(t / np.sqrt(2)) / 2)
    tail = np.exp(log_tail)
    if log:
        return np.where(x < 0, log_tail, np.log1p(-tail)).astype(np.float64)
    return np.where(x < 0, tail, 1 - tail).astype(np.float64)


def _logit_reference(x: np.ndarray) -> np.ndarray:
    # SciPy rounds x / (1 - x) first, which costs the result's precision near x = 1/2.
    x = np.asarray(x, LD)
    with np.errstate(divide="ignore"):
        return np.log(x / (1 - x)).astype(np.float64)


def _divergence_reference(p: np.ndarray, q: np.ndarray, kl: bool) -> np.ndarray:
    """rel_entr or kl_div in 80-bit floats, with kl_div's cancellation near p = q
    avoided by its series in t = (p - q)/q (SciPy's float64 formula keeps it)."""
    p, q = np.asarray(p, LD), np.asarray(q, LD)
    t = (p - q) / q
    if not kl:
        return (p * np.log1p(t)).astype(np.float64)
    series = sum((-t) ** n / (n * (n - 1)) for n in range(2, 80))
    direct = p * np.log(p / q) - p + q
    return np.where(np.abs(t) < 0.5, q * series, direct).astype(np.float64)


def _boxcox1p_reference(x: np.ndarray, lmbda: np.ndarray) -> np.ndarray:
    # SciPy's float64 log1p is exact; XLA's is not, so this compares with 80-bit math.
    log1p = np.log1p(np.asarray(x, LD))
    lmbda = np.asarray(lmbda, LD)
    safe = np.where(lmbda == 0, 1, lmbda)
    return np.where(lmbda == 0, log1p, np.expm1(lmbda * log1p) / safe).astype(np.float64)


def _pairs(h: np.ndarray, a: np.ndarray) -> list[np.ndarray]:
    hh, aa = np.meshgrid(h, a)
    return [hh.ravel(), aa.ravel()]


def _cases() -> list[Case]:
    def by_dtype(f32, f64):
        return lambda dtype: f64() if dtype == np.float64 else f32()

    normal_x = by_dtype(lambda: [_grid(-13, 8)], lambda: [_grid(-37.5, 9)])
    log_normal_x = lambda d: [np.concatenate([_both_signs(_logs(1e-3, 1e4)), _grid(-40, 10)])]  # noqa: E731
    p = lambda dtype: [np.concatenate([_grid(0, 1)[1:-1], _logs(2 * np.finfo(dtype).tiny, 0.5),  # noqa: E731
                                       1 - _logs(np.finfo(dtype).eps / 2, 0.5)])]
    return [
        Case("erf", lambda d: [_grid(-6, 6)], sp.erf, special.erf, "erf"),
        Case("erfc", by_dtype(lambda: [_grid(-6, 9.1)], lambda: [_grid(-6, 26.5)]),
             _erfc_reference, special.erfc, "erfc"),
        Case("erfinv", lambda d: [np.concatenate([_grid(-1, 1)[1:-1], 1 - _logs(1e-15, 0.5)])],
             sp.erfinv, special.erfinv, "erfinv"),
        Case("erfcx", by_dtype(lambda: [np.concatenate([_grid(-9.3, 30), _logs(30, 1e30)])],
                               lambda: [np.concatenate([_grid(-26.5, 30), _logs(30, 1e300)])]),
             _erfcx_reference, special.erfcx, "erfcx"),
        Case("ndtr", normal_x, functools.partial(_normal_reference, log=False), special.ndtr,
             "ndtr"),
        Case("log_ndtr", log_normal_x, functools.partial(_normal_reference, log=True),
             special.log_ndtr, "log_ndtr"),
        Case("ndtri", p, sp.ndtri, special.ndtri, "ndtri"),
        Case("dawsn", lambda d: [_both_signs(np.concatenate([_logs(1e-6, 1e6), _grid(0, 12)]))],
             sp.dawsn, special.dawsn, "dawsn"),
        Case("fresnel S", lambda d: [np.concatenate([_logs(1e-4, 1e4), _grid(0, 12)])],
             lambda x: sp.fresnel(x)[0], lambda x: special.fresnel(x)[0], "fresnel"),
        Case("fresnel C", lambda d: [np.concatenate([_logs(1e-4, 1e4), _grid(0, 12)])],
             lambda x: sp.fresnel(x)[1], lambda x: special.fresnel(x)[1], "fresnel"),
        Case("sici Si", lambda d: [np.concatenate([_logs(1e-4, 1e4), _grid(0, 20)])],
             lambda x: sp.sici(x)[0], lambda x: special.sici(x)[0], "sici"),
        Case("sici Ci", lambda d: [np.concatenate([_logs(1e-4, 1e4), _grid(0, 20)])],
             lambda x: sp.sici(x)[1], lambda x: special.sici(x)[1], "sici", absolute=True),
        Case("wofz", lambda d: [_logs(1e-3, 30, 141)[:, None] * np.exp(1j * _grid(0, np.pi, 141))
                                .ravel()[None, :]], sp.wofz, special.wofz, "wofz"),
        Case("owens_t", lambda d: _pairs(_grid(-12, 12, 121), np.concatenate([
            -_logs(1e-4, 1e3, 61), _logs(1e-4, 1e3, 61)])), sp.owens_t, special.owens_t,
             "owens_t"),
        Case("i0", by_dtype(lambda: [_grid(-90, 90)], lambda: [_grid(-700, 700)]), sp.i0,
             special.i0, "i0"),
        Case("i0e", lambda d: [_both_signs(_logs(1e-6, 1e6))], sp.i0e, special.i0e, "i0e"),
        Case("i1", by_dtype(lambda: [_grid(-90, 90)], lambda: [_grid(-700, 700)]), sp.i1,
             special.i1, "i1"),
        Case("i1e", lambda d: [_both_signs(_logs(1e-6, 1e6))], sp.i1e, special.i1e, "i1e"),
        Case("bessel_jn (v=0..4)", lambda d: [_both_signs(_logs(1e-6, 20))],
             lambda z: np.stack([sp.jv(k, z) for k in range(5)]), special.bessel_jn,
             "bessel_jn", absolute=True, kwargs={"v": 4}),
        Case("expit", lambda d: [_grid(-80, 80)], sp.expit, special.expit, "expit"),
        Case("logit", lambda d: [np.concatenate([_grid(0, 1)[1:-1], _logs(1e-30, 0.5)])],
             _logit_reference, special.logit, "logit"),
        Case("entr", lambda d: [_logs(1e-30, 1e30)], sp.entr, special.entr, "entr"),
        Case("xlogy", lambda d: _pairs(_logs(1e-3, 1e3, 101), _logs(1e-5, 1e5, 101)), sp.xlogy,
             special.xlogy, "xlogy"),
        Case("xlog1py", lambda d: _pairs(_logs(1e-3, 1e3, 101), np.concatenate([
            -_logs(1e-6, 0.9, 51), _logs(1e-6, 1e5, 51)])),
             lambda x, y: (x * np.log1p(np.asarray(y, LD))).astype(np.float64), special.xlog1py,
             "xlog1py"),
        Case("rel_entr", lambda d: _pairs(_logs(1e-3, 1e3, 101), _logs(1e-3, 1e3, 101)),
             functools.partial(_divergence_reference, kl=False), special.rel_entr, "rel_entr"),
        Case("kl_div", lambda d: _pairs(_logs(1e-3, 1e3, 101), _logs(1e-3, 1e3, 101)),
             functools.partial(_divergence_reference, kl=True), special.kl_div, "kl_div"),
        Case("boxcox", lambda d: _pairs(_logs(1e-3, 1e3, 101), _grid(-3, 3, 101)), sp.boxcox,
             special.boxcox, "boxcox"),
        Case("boxcox1p", lambda d: _pairs(np.concatenate([-_logs(1e-6, 0.9, 51),
                                                          _logs(1e-6, 1e3, 51)]),
                                          _grid(-3, 3, 101)), _boxcox1p_reference,
             special.boxcox1p, "boxcox1p"),
    ]


def _error(got: np.ndarray, want: np.ndarray, dtype: type, absolute: bool) -> float:
    got = np.asarray(got)
    got = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64)
    finfo = np.finfo(dtype)
    magnitude = np.abs(want)
    normal = np.isfinite(want) & (magnitude >= finfo.tiny) & (magnitude <= finfo.max)
    if np.any(np.isnan(got[normal])):
        return np.nan
    scale = 1.0 if absolute else magnitude[normal]
    return float(np.max(np.abs(got[normal] - want[normal]) / scale / finfo.eps, initial=0.0))


def _cast(args: list[np.ndarray], dtype: type) -> list[np.ndarray]:
    return [a.astype(np.complex128 if dtype == np.float64 else np.complex64)
            if a.dtype.kind == "c" else a.astype(dtype) for a in args]


def measure(case: Case, dtype: type, jax) -> tuple[float, float | None]:
    args = _cast(case.inputs(dtype), dtype)
    kwargs = case.kwargs or {}
    with np.errstate(all="ignore"):
        want = case.reference(*[a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
                                for a in args])
    if jax is not None:
        # jaxlib's dispatch reads JAX's x64 flag even for lamella's calls: keep them equal.
        jax.config.update("jax_enable_x64", dtype == np.float64)
    with lc.enable_x64(dtype == np.float64):
        ours = _error(case.lamella(*args, **kwargs), want, dtype, case.absolute)
    theirs = None
    if jax is not None and case.jax_name is not None:
        import jax.scipy.special as jsp
        # Under jit: eagerly, JAX would meet lamella's methods on their shared array type.
        out = jax.jit(functools.partial(getattr(jsp, case.jax_name), **kwargs))(*args)
        if case.name.startswith(("fresnel", "sici")):
            out = out[0 if case.name.endswith(("S", "Si")) else 1]
        theirs = _error(np.asarray(out), want, dtype, case.absolute)
    if jax is not None:
        jax.config.update("jax_enable_x64", False)
    return ours, theirs


def _cell(v: float | None) -> str:
    if v is None:
        return "-"
    return "NaN" if np.isnan(v) else f"{v:.3g}"


def main(names: list[str]) -> None:
    jax = jax_or_none()
    print("| function | lamella f32 | JAX f32 | lamella f64 | JAX f64 |")
    print("|---|---|---|---|---|")
    for case in _cases():
        if names and not any(n in case.name for n in names):
            continue
        f32, j32 = measure(case, np.float32, jax)
        f64, j64 = measure(case, np.float64, jax)
        label = case.name + (" (abs)" if case.absolute else "")
        print(f"| {label} | {_cell(f32)} | {_cell(j32)} | {_cell(f64)} | {_cell(j64)} |",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
