"""lamella.scipy signal, fft, ndimage, interpolate, cluster and spatial.transform, jitted,
against SciPy and JAX."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.cluster.vq
import scipy.fft
import scipy.interpolate
import scipy.ndimage
import scipy.signal
from harness import Row, compare, jax_or_none, pick
from scipy.spatial.transform import Rotation as ScipyRotation

import lamella.core as lc
import lamella.scipy as lsp
from lamella.scipy.spatial.transform import Rotation

SIGNAL = pick(1_000_000, 4096)
IMAGE = pick(512, 32)
POINTS = pick(1_000_000, 1000)


def _row(name: str, jax, lamella: Callable, scipy_fn: Callable | None, jax_fn: Callable | None,
         args: tuple, unit: str = "ms") -> Row:
    """Times `lamella` (jitted) against `scipy_fn` and `jax_fn` (jitted) on `args`."""
    fun = lc.jit(lamella)
    dargs = [lc.device_put(a) for a in args]
    cands = {"lamella": lambda: lc.block_until_ready(fun(*dargs)),
             "scipy": None if scipy_fn is None else lambda: scipy_fn(*args)}
    if jax is not None and jax_fn is not None:
        jfun = jax.jit(jax_fn)
        jargs = [jax.device_put(a) for a in args]
        cands["jax"] = lambda: jax.block_until_ready(jfun(*jargs))
    t = compare(cands, rounds=2, repeat=3)
    return Row(name, t["lamella"], {"scipy": t.get("scipy"), "jax": t.get("jax")}, unit=unit)


def run() -> list[Row]:
    jax = jax_or_none()
    jsp = None
    if jax is not None:
        import jax.scipy.cluster.vq
        import jax.scipy.spatial.transform
        jsp = jax.scipy
    rng = np.random.default_rng(0)
    x = rng.standard_normal(SIGNAL).astype(np.float32)
    kernel = rng.standard_normal(65).astype(np.float32)
    image = rng.standard_normal((IMAGE, IMAGE)).astype(np.float32)
    small = rng.standard_normal((7, 7)).astype(np.float32)
    coords = rng.uniform(-2, IMAGE + 2, (2, POINTS)).astype(np.float32)
    quats = rng.standard_normal((POINTS, 4)).astype(np.float32)
    vectors = rng.standard_normal((POINTS, 3)).astype(np.float32)
    obs = rng.standard_normal((pick(20_000, 100), 16)).astype(np.float32)
    codes = rng.standard_normal((64, 16)).astype(np.float32)
    grid = (np.linspace(0, 1, IMAGE, dtype=np.float32),) * 2
    xi = rng.uniform(0, 1, (POINTS, 2)).astype(np.float32)

    def j(name):
        return None if jsp is None else name

    rows = [
        _row(f"convolve f32[{SIGNAL}] * f32[65], direct", jax,
             lambda a, b: lsp.signal.convolve(a, b), lambda a, b: scipy.signal.convolve(a, b),
             j(lambda a, b: jsp.signal.convolve(a, b)), (x, kernel)),
        _row(f"fftconvolve f32[{IMAGE},{IMAGE}] * f32[7,7]", jax,
             lambda a, b: lsp.signal.fftconvolve(a, b), scipy.signal.fftconvolve,
             j(lambda a, b: jsp.signal.fftconvolve(a, b)), (image, small)),
        _row(f"convolve2d f32[{IMAGE},{IMAGE}] * f32[7,7], same", jax,
             lambda a, b: lsp.signal.convolve2d(a, b, "same"),
             lambda a, b: scipy.signal.convolve2d(a, b, "same"),
             j(lambda a, b: jsp.signal.convolve2d(a, b, "same")), (image, small)),
        _row(f"convolve2d f32[{IMAGE},{IMAGE}] * f32[7,7], symm (JAX: none)", jax,
             lambda a, b: lsp.signal.convolve2d(a, b, "same", "symm"),
             lambda a, b: scipy.signal.convolve2d(a, b, "same", "symm"), None, (image, small)),
        _row(f"welch f32[{SIGNAL}], nperseg 1024", jax,
             lambda a: lsp.signal.welch(a, nperseg=1024),
             lambda a: scipy.signal.welch(a, nperseg=1024),
             j(lambda a: jsp.signal.welch(a, nperseg=1024)), (x,)),
        _row(f"stft f32[{SIGNAL}], nperseg 256", jax,
             lambda a: lsp.signal.stft(a, nperseg=256), lambda a: scipy.signal.stft(a, nperseg=256),
             j(lambda a: jsp.signal.stft(a, nperseg=256)), (x,)),
        _row(f"istft of stft f32[{SIGNAL}], nperseg 256", jax,
             lambda a: lsp.signal.istft(lsp.signal.stft(a, nperseg=256)[2], nperseg=256),
             lambda a: scipy.signal.istft(scipy.signal.stft(a, nperseg=256)[2], nperseg=256),
             j(lambda a: jsp.signal.istft(jsp.signal.stft(a, nperseg=256)[2], nperseg=256)),
             (x,)),
        _row(f"detrend f32[{SIGNAL}], 3 pieces", jax,
             lambda a: lsp.signal.detrend(a, bp=[SIGNAL // 3, SIGNAL // 2]),
             lambda a: scipy.signal.detrend(a, bp=[SIGNAL // 3, SIGNAL // 2]),
             j(lambda a: jsp.signal.detrend(a, bp=[SIGNAL // 3, SIGNAL // 2])), (x,)),
        _row(f"dctn f32[{IMAGE},{IMAGE}] type 2 ortho", jax,
             lambda a: lsp.fft.dctn(a, norm="ortho"), lambda a: scipy.fft.dctn(a, norm="ortho"),
             j(lambda a: jsp.fft.dctn(a, norm="ortho")), (image,)),
        _row(f"idctn f32[{IMAGE},{IMAGE}] type 2", jax, lsp.fft.idctn, scipy.fft.idctn,
             j(lambda a: jsp.fft.idctn(a)), (image,)),
        _row(f"map_coordinates order 1 f32[{IMAGE},{IMAGE}] at {POINTS} points", jax,
             lambda a, c: lsp.ndimage.map_coordinates(a, [c[0], c[1]], 1, "reflect"),
             lambda a, c: scipy.ndimage.map_coordinates(a, c, order=1, mode="reflect",
                                                        prefilter=False),
             j(lambda a, c: jsp.ndimage.map_coordinates(a, [c[0], c[1]], 1, "reflect")),
             (image, coords)),
        _row(f"RegularGridInterpolator linear {IMAGE}x{IMAGE} at {POINTS} points", jax,
             lambda v, p: lsp.interpolate.RegularGridInterpolator(grid, v)(p),
             lambda v, p: scipy.interpolate.RegularGridInterpolator(grid, v)(p),
             j(lambda v, p: jsp.interpolate.RegularGridInterpolator(grid, v)(p)), (image, xi)),
        _row(f"vq f32[{obs.shape[0]},16] to 64 codes", jax, lsp.cluster.vq.vq,
             scipy.cluster.vq.vq, j(lambda o, c: jsp.cluster.vq.vq(o, c)), (obs, codes)),
        _row(f"Rotation.from_quat(f32[{POINTS},4]).apply", jax,
             lambda q, v: Rotation.from_quat(q).apply(v),
             lambda q, v: ScipyRotation.from_quat(q).apply(v),
             j(lambda q, v: jsp.spatial.transform.Rotation.from_quat(q).apply(v)),
             (quats, vectors)),
        _row(f"Rotation.from_quat(f32[{POINTS},4]).as_euler('xyz')", jax,
             lambda q: Rotation.from_quat(q).as_euler("xyz"),
             lambda q: ScipyRotation.from_quat(q).as_euler("xyz"),
             j(lambda q: jsp.spatial.transform.Rotation.from_quat(q).as_euler("xyz")), (quats,)),
    ]
    return rows
