"""The inexact line search that BFGS and L-BFGS step with: a step length along a
descent direction satisfying the strong Wolfe conditions, by Moré and Thuente's
safeguarded cubic interpolation ("Line search algorithms with guaranteed sufficient
decrease", ACM TOMS 20, 1994) -- the search behind SciPy's BFGS.

Every trial uses the slope as well as the value (both come from one evaluation), so
extrapolation and zooming fit cubics to two points with derivatives. Bracketing and
zooming are one `lax.while_loop` with one evaluation per trip, so the search runs
under `jit` and `vmap` (a batch of searches advances together, each in its own
phase). JAX 0.10.2's zoom tests the *signed* width `a_hi - a_lo` and so gives up on
every bracket that points backwards (float32 BFGS stalls on Rosenbrock, L-BFGS fails
on small quadratics); the bracket here may point either way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import lamella.core as lc
import lamella.lax as lax
import lamella.numpy as jnp

__all__ = ["LineSearchResults", "line_search", "rounding_level", "slope", "value_and_grad"]

# Moré and Thuente's constants: while extrapolating, the next trial lies between 1.1
# and 4 times the last advance; a bracket that did not shrink to 2/3 of its width
# two trips ago is bisected.
_EXTRAPOLATE_MIN = 1.1
_EXTRAPOLATE_MAX = 4.0
_SHRINK = 0.66
_MAX_ZOOM = 30
_MAX_STEP = 1e10

NOT_DESCENT = 2
"""Line-search status: `pk` does not point downhill (the slope at 0 is >= 0)."""


class LineSearchResults(NamedTuple):
    """What a line search found.

    Attributes:
      failed: True when no step satisfying the strong Wolfe conditions was found.
      nit: iterations (trial steps) used; k: `nit + 1`, as JAX counts.
      nfev, ngev: function and gradient evaluations (equal: each evaluates both).
      a_k: the step length; on failure the best step seen (the lowest value with
        sufficient decrease, 0 if none).
      f_k, g_k: the function value and gradient at `xk + a_k * pk`.
      status: 0 success, 1 the bracketed search could not narrow further (rounding
        errors, or 30 zoom trips), 2 `pk` is not a descent direction, 3 no bracket
        within `maxiter` trips.
    """

    failed: Any
    nit: Any
    nfev: Any
    ngev: Any
    k: Any
    a_k: Any
    f_k: Any
    g_k: Any
    status: Any


class _Point(NamedTuple):
    a: Any  # step length
    f: Any  # value there
    d: Any  # slope there


class _State(NamedTuple):
    x: _Point  # best step so far
    y: _Point  # the other end of the interval
    trial: Any  # the step to evaluate next
    lo: Any  # the interval the trial must lie in
    hi: Any
    width: Any  # |y - x| now and one trip ago, to force bisection when stuck
    width1: Any
    bracketed: Any
    stage2: Any  # sufficient decrease and a nonnegative slope were seen
    best_f: Any  # the exact value and gradient at x
    best_g: Any
    done: Any
    failed: Any
    status: Any
    i: Any  # trips before a bracket
    j: Any  # trips once bracketed


def value_and_grad(fun: Callable) -> Callable:
    """`fun`'s value and JAX's gradient convention, for real *and* complex arguments.

    For complex `x` the gradient is the cotangent of the real output, the conjugate
    of the steepest-ascent direction (what `jax.grad` returns), so the slope along
    `p` is `real(sum(g * p))` and the steepest descent is `-conj(g)`.

    >>> import lamella.numpy as jnp
    >>> value_and_grad(lambda x: jnp.sum(x ** 2))(jnp.array([1.0, 2.0]))
    (Array(5., dtype=float32), Array([2., 4.], dtype=float32))
    """

    def evaluate(x):
        value, pullback = lc.vjp(fun, x)
        if jnp.shape(value) != ():
            raise TypeError("the objective must return a scalar, but it returned shape "
                            f"{jnp.shape(value)}")
        if jnp.iscomplexobj(value):
            raise TypeError("the objective must return a real scalar, but it returned "
                            f"{jnp.result_type(value)}")
        (grad,) = pullback(jnp.ones_like(value))
        return value, grad

    return evaluate


def slope(g: Any, p: Any) -> Any:
    """The directional derivative `real(sum(g * p))` of a function with gradient `g`.

    >>> import lamella.numpy as jnp
    >>> slope(jnp.array([1.0, 2.0]), jnp.array([3.0, -1.0]))
    Array(1., dtype=float32)
    """
    return jnp.real(jnp.sum(g * p))


def rounding_level(f: Any) -> Any:
    """10 ulps of `f`: values closer than this to `f` count as equal to it.

    >>> import lamella.numpy as jnp
    >>> rounding_level(jnp.float32(1.0))
    Array(1.1920929e-06, dtype=float32)
    """
    return jnp.abs(f) * (10 * jnp.finfo(jnp.result_type(f)).eps)


def _cubic_step(a: _Point, b: _Point):
    """The minimiser of the cubic with a's and b's values and slopes, as `a + r (b - a)`.

    Returns the minimiser, r and gamma (0 when the cubic has no minimiser beyond a).
    """
    theta = 3 * (b.f - a.f) / (a.a - b.a) + a.d + b.d
    scale = jnp.maximum(jnp.maximum(jnp.abs(theta), jnp.abs(a.d)), jnp.abs(b.d))
    discriminant = (theta / scale) ** 2 - (a.d / scale) * (b.d / scale)
    gamma = scale * jnp.sqrt(jnp.maximum(discriminant, 0))
    gamma = jnp.where(a.a > b.a, -gamma, gamma)
    r = ((gamma - a.d) + theta) / (((gamma - a.d) + gamma) + b.d)
    return a.a + r * (b.a - a.a), r, gamma


def _secant_step(p: _Point, x: _Point):
    """Where the slope, linear between p and x, vanishes."""
    return p.a + (p.d / (p.d - x.d)) * (x.a - p.a)


def _next_step(x: _Point, y: _Point, p: _Point, bracketed, lo, hi):
    """Moré and Thuente's safeguarded trial step after evaluating p, and the new interval.

    Four cases: a higher value than at x (a minimiser lies between x and p), slopes of
    opposite signs (likewise), a slope shrinking in magnitude, and one that does not.
    """
    higher = p.f > x.f
    opposite = jnp.sign(p.d) * jnp.sign(x.d) < 0
    shrinking = jnp.abs(p.d) < jnp.abs(x.d)

    # Case 1: the cubic step if nearer x than the quadratic's, else their mean.
    cubic1, _, _ = _cubic_step(x, p)
    quad1 = x.a + (x.d / ((x.f - p.f) / (p.a - x.a) + x.d)) / 2 * (p.a - x.a)
    step1 = jnp.where(jnp.abs(cubic1 - x.a) <= jnp.abs(quad1 - x.a), cubic1,
                      cubic1 + (quad1 - cubic1) / 2)

    # Cases 2 and 3 share the cubic through p and x and the secant step.
    cubic23, r, gamma = _cubic_step(p, x)
    secant = _secant_step(p, x)
    step2 = jnp.where(jnp.abs(cubic23 - p.a) > jnp.abs(secant - p.a), cubic23, secant)

    # Case 3: trust the cubic only if its minimiser lies beyond p, else go to the end.
    cubic3 = jnp.where((r < 0) & (gamma != 0), cubic23, jnp.where(p.a > x.a, hi, lo))
    inner = jnp.where(jnp.abs(cubic3 - p.a) < jnp.abs(secant - p.a), cubic3, secant)
    limit = p.a + _SHRINK * (y.a - p.a)
    inner = jnp.where(p.a > x.a, jnp.minimum(limit, inner), jnp.maximum(limit, inner))
    outer = jnp.where(jnp.abs(cubic3 - p.a) > jnp.abs(secant - p.a), cubic3, secant)
    step3 = jnp.where(bracketed, inner, jnp.clip(outer, lo, hi))

    # Case 4: the cubic through p and y once bracketed, else the end of the range.
    cubic4, _, _ = _cubic_step(p, y)
    step4 = jnp.where(bracketed, cubic4, jnp.where(p.a > x.a, hi, lo))

    step = jnp.where(higher, step1, jnp.where(opposite, step2,
                                              jnp.where(shrinking, step3, step4)))
    moved = ~higher
    new_y = _pick(higher, p, _pick(opposite, x, y))
    new_x = _pick(moved, p, x)
    return new_x, new_y, step, bracketed | higher | opposite, moved


def _pick(flag, new, old):
    return type(old)(*(jnp.where(flag, n, o) for n, o in zip(new, old)))


def line_search(f: Callable, xk: Any, pk: Any, old_fval: Any = None, old_old_fval: Any = None,
                gfk: Any = None, c1: float = 1e-4, c2: float = 0.9,
                maxiter: int = 20) -> LineSearchResults:
    """A step length `a` along `pk` from `xk` satisfying the strong Wolfe conditions:
    `f(xk + a pk) <= f(xk) + c1 a f'(xk; pk)` (sufficient decrease) and
    `|f'(xk + a pk; pk)| <= c2 |f'(xk; pk)|` (curvature).

    The first trial is 1, or, given the previous iterate's value `old_old_fval`, the
    step a quadratic model predicts (at most 1), as SciPy does. Where the value has
    stopped changing beyond rounding errors (within 10 ulps of `f(xk)`), the curvature
    condition alone certifies a step (Hager and Zhang's approximate Wolfe conditions,
    whose decrease test is implied by the curvature test for `c2 < 1 - 2 c1`): float32
    searches then still converge to gradients near rounding level.

    Args:
      f: the objective, a real scalar function of one 1-D array.
      xk: the current point; pk: a descent direction of the same shape.
      old_fval, gfk: `f(xk)` and its gradient, if already known (saves an evaluation).
      old_old_fval: the value at the previous iterate, for the first trial step.
      c1, c2: the Wolfe constants, `0 < c1 < c2 < 1`.
      maxiter: trips allowed before the minimiser is bracketed (30 more after).

    Returns:
      A `LineSearchResults`.

    >>> import lamella.numpy as jnp
    >>> f = lambda x: jnp.sum((x - 3.0) ** 2)
    >>> res = line_search(f, jnp.zeros(2), jnp.full(2, 10.0))  # overshoots, then zooms
    >>> bool(res.failed), round(float(res.a_k), 6), float(res.f_k), int(res.nfev)
    (False, 0.3, 0.0, 3)
    """
    if not 0 < c1 < c2 < 1:
        raise ValueError(f"line_search needs 0 < c1 < c2 < 1, got c1={c1}, c2={c2}")
    xk = jnp.asarray(xk)
    if not jnp.issubdtype(xk.dtype, jnp.inexact):
        xk = xk.astype(jnp.result_type(float))
    pk = jnp.asarray(pk, dtype=xk.dtype)
    if pk.shape != xk.shape:
        raise ValueError(f"line_search: pk has shape {pk.shape} but xk has shape {xk.shape}")
    evaluate = value_and_grad(f)
    real = jnp.real(xk).dtype

    def along(a):
        value, g = evaluate(xk + a.astype(xk.dtype) * pk)
        return value.astype(real), g.astype(xk.dtype), slope(g, pk).astype(real)

    zero = jnp.zeros((), real)
    if old_fval is None or gfk is None:
        f0, g0, d0 = along(zero)
        first_evaluations = 1
    else:
        f0, g0 = jnp.asarray(old_fval, real), jnp.asarray(gfk, xk.dtype)
        d0 = slope(g0, pk).astype(real)
        first_evaluations = 0
    start = jnp.ones((), real)
    if old_old_fval is not None:
        predicted = 1.01 * 2 * (f0 - jnp.asarray(old_old_fval, real)) / d0
        start = jnp.where(jnp.isfinite(predicted) & (predicted > 0),
                          jnp.minimum(predicted, 1), 1).astype(real)

    decrease = c1 * d0  # the slope of the sufficient-decrease line
    noise = rounding_level(f0)
    xtol = jnp.maximum(jnp.finfo(real).eps, 1e-14).astype(real)
    origin = _Point(zero, f0, d0)
    descent = d0 < 0
    init = _State(x=origin, y=origin, trial=start, lo=zero, hi=start * (1 + _EXTRAPOLATE_MAX),
                  width=jnp.asarray(_MAX_STEP, real), width1=jnp.asarray(2 * _MAX_STEP, real),
                  bracketed=jnp.array(False), stage2=jnp.array(False), best_f=f0, best_g=g0,
                  done=jnp.array(False), failed=~descent,
                  status=jnp.where(descent, 0, NOT_DESCENT), i=jnp.array(0), j=jnp.array(0))

    def body(s: _State) -> _State:
        a = s.trial
        value, g, d = along(a)
        sufficient = value <= f0 + a * decrease
        # Where values differ by rounding errors only, sufficient decrease cannot be
        # seen; there the slopes decide (Hager and Zhang's approximate Wolfe test).
        level = jnp.abs(value - f0) <= noise
        accept = (sufficient | level) & (jnp.abs(d) <= -c2 * d0)
        stage2 = s.stage2 | (sufficient & (d >= 0))
        stuck = s.bracketed & ((a <= s.lo) | (a >= s.hi) | (s.hi - s.lo <= xtol * s.hi))
        # Until stage 2, a lower but not sufficiently lower value is judged on
        # value - a * decrease, whose minimisers have sufficient decrease.
        shift = jnp.where(~stage2 & (value <= s.x.f) & ~sufficient, decrease, 0)

        def shifted(pt, sign):
            return _Point(pt.a, pt.f + sign * pt.a * shift, pt.d + sign * shift)

        trial = _Point(a, value, d)
        x, y, step, bracketed, moved = _next_step(shifted(s.x, -1), shifted(s.y, -1),
                                                  shifted(trial, -1), s.bracketed, s.lo, s.hi)
        x, y = shifted(x, 1), shifted(y, 1)
        # A non-finite value is "too high": halve the step back towards x.
        finite = jnp.isfinite(value) & jnp.isfinite(d)
        y = _pick(finite, y, _Point(a, jnp.asarray(jnp.inf, real), zero))
        x = _pick(finite, x, s.x)
        moved = moved & finite
        bracketed = jnp.where(finite, bracketed, True)
        step = jnp.where(finite, step, s.x.a + (a - s.x.a) / 2)

        bisect = bracketed & (jnp.abs(y.a - x.a) >= _SHRINK * s.width1)
        step = jnp.where(bisect, x.a + (y.a - x.a) / 2, step)
        width1 = jnp.where(bracketed, s.width, s.width1)
        width = jnp.where(bracketed, jnp.abs(y.a - x.a), s.width)
        lo = jnp.where(bracketed, jnp.minimum(x.a, y.a), step + _EXTRAPOLATE_MIN * (step - x.a))
        hi = jnp.where(bracketed, jnp.maximum(x.a, y.a), step + _EXTRAPOLATE_MAX * (step - x.a))
        step = jnp.clip(step, 0, _MAX_STEP)
        no_room = bracketed & ((step <= lo) | (step >= hi) | (hi - lo <= xtol * hi))
        step = jnp.where(no_room | ~jnp.isfinite(step), x.a, step)

        i = jnp.where(s.bracketed, s.i, s.i + 1)
        j = jnp.where(s.bracketed, s.j + 1, s.j)
        exhausted = jnp.where(bracketed, j >= _MAX_ZOOM, i >= maxiter)
        failed = ~accept & (stuck | exhausted)
        best_f = jnp.where(accept | moved, value, s.best_f)
        best_g = jnp.where(accept | moved, g, s.best_g)
        x = _pick(accept, trial, x)
        status = jnp.where(failed, jnp.where(bracketed | stuck, 1, 3), 0)
        return _State(x, y, step, lo, hi, width, width1, bracketed, stage2, best_f, best_g,
                      accept, failed, status, i, j)

    s = lax.while_loop(lambda s: ~s.done & ~s.failed, body, init)
    trips = s.i + s.j
    return LineSearchResults(failed=s.failed, nit=trips, nfev=trips + first_evaluations,
                             ngev=trips + first_evaluations, k=trips + 1, a_k=s.x.a,
                             f_k=s.best_f, g_k=s.best_g, status=s.status)
