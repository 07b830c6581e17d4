"""Records high-precision known answers for lamella.scipy.special's float64 tests.

SciPy's float64 answers are themselves off by tens to hundreds of ulps in places
(wofz and dawsn near the real axis and the origin, the Fresnel integrals past
x = 100, owens_t for small a, ndtr near its underflow), so the float64 tests of
the functions that do better also compare with these values, computed with
mpmath at 40 digits. Run with any Python that has mpmath and NumPy:

    python benchmarks/record_special_mpmath.py

It writes packages/scipy_api/tests/data/special_mpmath_known_answers.json: per
function, the float64 arguments and the correctly rounded float64 results (complex
ones as [real, imag]).
"""

from __future__ import annotations

import json
import pathlib

import mpmath as mp
import numpy as np

OUT = (pathlib.Path(__file__).resolve().parents[1] / "packages" / "scipy_api" / "tests"
       / "data" / "special_mpmath_known_answers.json")
mp.mp.dps = 40


def _owens_t(h: float, a: float) -> mp.mpf:
    h, a = abs(mp.mpf(h)), mp.mpf(a)
    # exp(-h**2/2) outside the integral: inside, mpmath's quadrature loses digits
    # for large h. The Gaussian peak of width 1/h at 0 gets its own subintervals.
    f = lambda t: mp.exp(-h * h * t * t / 2) / (1 + t * t)  # noqa: E731
    top = min(abs(a), 12 / h) if h > 0 else abs(a)
    points = [top * k / 32 for k in range(33)] + ([abs(a)] if abs(a) > top else [])
    return mp.sign(a) * mp.exp(-h * h / 2) * mp.quad(f, points) / (2 * mp.pi)


def _lower_quantile(p: mp.mpf) -> mp.mpf:
    """Phi^-1(p) for small p, as the root of log Phi(x) = log p (1 - 2p would round)."""
    guess = -mp.sqrt(-2 * mp.log(p))
    return mp.findroot(lambda x: mp.log(mp.ncdf(x)) - mp.log(p), guess)


def _wofz(z: complex) -> mp.mpc:
    z = mp.mpc(z)
    return mp.exp(-z * z) * mp.erfc(-1j * z)


def _points() -> dict[str, list]:
    rng = np.random.default_rng(20240611)
    logs = lambda lo, hi, n: list(np.exp(rng.uniform(np.log(lo), np.log(hi), n)))  # noqa: E731
    radius = logs(1e-3, 40.0, 40)
    angle = list(rng.uniform(-np.pi, np.pi, 40))
    # The lower half plane only where w stays well conditioned (|z| < 5).
    wofz = [complex(r * np.cos(t), r * np.sin(t) if r < 5 else abs(r * np.sin(t)))
            for r, t in zip(radius, angle)]
    wofz += [complex(x, 0.0) for x in (-12.0, -0.5, 1e-8, 3.0, 30.0)]
    wofz += [complex(0.0, y) for y in (1e-8, 2.0, 50.0)]
    return {
        "erfcx": [[-26.0, -9.0, -1.0, -1e-6, 0.0, 1e-6, 0.3, 2.0, 7.5, 30.0, 1e3, 1e10]],
        "ndtr": [[-37.5, -30.0, -20.0, -8.0, -2.0, -1e-3, 0.0, 0.5, 3.0, 8.0]],
        "log_ndtr": [[-1e5, -200.0, -38.5, -20.0, -5.0, -1.0, 0.0, 1.0, 5.0, 9.0, 30.0]],
        "ndtri": [[1e-300, 1e-100, 1e-20, 1e-5, 0.02, 0.3, 0.5, 0.7, 0.98, 1 - 1e-5,
                   1 - 1e-12, 1 - 2 ** -52]],
        "erfinv": [[-1 + 2 ** -53, -0.99999, -0.5, -1e-10, 0.3, 0.6, 0.999, 1 - 1e-12,
                    1 - 2 ** -53]],
        "dawsn": [[-50.0, -3.0, -0.6, -1e-3, 1e-9, 0.011, 0.3, 0.99, 1.0, 2.5, 7.9, 8.1, 1e3]],
        "wofz": [wofz],
        "fresnel_s": [[-3.0, 1e-4, 0.1, 0.9, 1.0, 1.1, 2.5, 7.0, 55.5, 777.4555, 2e4]],
        "fresnel_c": [[-3.0, 1e-4, 0.1, 0.9, 1.0, 1.1, 2.5, 7.0, 55.5, 973.0694, 2e4]],
        "sici_si": [[-5.0, 1e-6, 0.5, 2.9, 3.0, 3.1, 3.85, 10.0, 100.0, 1e4]],
        "sici_ci": [[-5.0, 1e-6, 0.5, 0.7, 2.9, 3.0, 3.1, 3.365, 10.0, 100.0, 1e4]],
        "owens_t": [list(rng.uniform(-12, 12, 24)) + [0.0, 5.375, 26.2, 0.5],
                    logs(1e-5, 30.0, 24) + [0.7, -5.0e-5, 0.0627, -3.0]],
    }


_REFERENCE = {
    "erfcx": lambda x: mp.exp(x * x) * mp.erfc(x),
    "ndtr": mp.ncdf,
    "log_ndtr": lambda x: mp.log(mp.ncdf(x)),
    "ndtri": lambda p: mp.sqrt(2) * mp.erfinv(2 * p - 1) if p > 0.25 else _lower_quantile(p),
    "erfinv": mp.erfinv,
    "dawsn": lambda x: mp.sqrt(mp.pi) / 2 * mp.exp(-x * x) * mp.erfi(x),
    "wofz": _wofz,
    "fresnel_s": mp.fresnels,
    "fresnel_c": mp.fresnelc,
    "sici_si": mp.si,
    "sici_ci": lambda x: mp.ci(abs(x)),
    "owens_t": _owens_t,
}


def _to_json(value: mp.mpf | mp.mpc) -> float | list[float]:
    if isinstance(value, mp.mpc):
        return [float(value.real), float(value.imag)]
    return float(value)


def main() -> None:
    table = {}
    for name, args in _points().items():
        args = [[complex(a) if isinstance(a, complex) else float(a) for a in column]
                for column in args]
        want = [_to_json(_REFERENCE[name](*(mp.mpmathify(a) for a in point)))
                for point in zip(*args)]
        stored_args = [[[a.real, a.imag] if isinstance(a, complex) else a for a in column]
                       for column in args]
        table[name] = {"args": stored_args, "want": want}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{json.dumps(name)}: {json.dumps(entry)}" for name, entry in table.items()]
    OUT.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
