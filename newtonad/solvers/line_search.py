"""Line searches: strong Wolfe (MINPACK's dcsrch via scipy), Armijo backtracking.

:func:`wolfe` finds a step satisfying the strong Wolfe conditions with the
Moré–Thuente search (J. J. Moré and D. J. Thuente, "Line search algorithms with
guaranteed sufficient decrease", ACM TOMS 20, 1994), scipy's
``scalar_search_wolfe1``, starting from scipy's initial step
``min(1, 2.02 (f_k - f_{k-1}) / φ'(0))``. It may lengthen the step. When it fails
(for instance on non-finite values) :func:`backtracking` takes over.

:func:`backtracking` is algorithm 3.1 of Nocedal & Wright, *Numerical Optimization*, 2nd ed.
(2006), with the step-length selection of section 3.5: the first backtrack
minimises the quadratic interpolating ``φ(0)``, ``φ'(0)`` and ``φ(α)``, later ones
the cubic through the last two trial values; every new step is kept within
``[α/10, α/2]`` of the previous one (Dennis & Schnabel, *Numerical Methods for
Unconstrained Optimization*, algorithm A6.3.1). A trial point where ``f`` is
not finite is treated as too long and the step is cut by 10.
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple, Optional

import numpy as np

try:  # scipy's MINPACK-2 dcsrch port (private module, stable since scipy 1.8)
    from scipy.optimize._linesearch import scalar_search_wolfe1 as _scalar_search_wolfe1
except ImportError:  # pragma: no cover
    _scalar_search_wolfe1 = None

__all__ = ["LineSearchResult", "backtracking", "wolfe"]


def wolfe(fun: Callable[[np.ndarray], float], jac: Callable[[np.ndarray], np.ndarray],
          x: np.ndarray, p: np.ndarray, f0: float, slope: float, f_prev: Optional[float], *,
          c1: float = 1e-4, c2: float = 0.9):
    """Strong Wolfe step along ``p``: ``(alpha, x_new, f_new, g_new)`` or ``None``.

    Parameters
    ----------
    fun, jac : callable
        Value and gradient on flat vectors.
    x, p : ndarray
        Point and descent direction.
    f0, slope : float
        ``f(x)`` and ``g @ p < 0``.
    f_prev : float or None
        Value at the previous iterate (for the initial step), if any.
    c1, c2 : float
        Wolfe constants, ``0 < c1 < c2 < 1``.

    Returns
    -------
    tuple or None
        ``None`` when the search fails or meets a non-finite value or gradient.
    """
    if _scalar_search_wolfe1 is None:
        return None
    seen: dict[float, tuple[np.ndarray, float]] = {}
    grads: dict[float, np.ndarray] = {}
    bad = [False]

    def phi(s: float) -> float:
        if s not in seen:
            xs = p * s
            xs += x
            seen[s] = (xs, fun(xs))
        f = seen[s][1]
        if not math.isfinite(f):
            bad[0] = True
        return f

    def derphi(s: float) -> float:
        if s not in grads:
            phi(s)
            grads[s] = jac(seen[s][0])
        d = float(grads[s] @ p)
        if not math.isfinite(d):
            bad[0] = True
        return d

    # dcsrch's first trial step (scipy's rule in scalar_search_wolfe1); when it
    # passes dcsrch's own convergence test dcsrch returns it at once, so test it
    # here and spare the (pure Python) search its set-up
    alpha1 = 1.0
    if f_prev is not None:
        alpha1 = min(1.0, 1.01 * 2.0 * (f0 - f_prev) / slope)
        if alpha1 < 0.0:
            alpha1 = 1.0
    with np.errstate(all="ignore"):
        f1 = phi(alpha1)
        if (not bad[0] and f1 <= f0 + alpha1 * (c1 * slope)
                and abs(derphi(alpha1)) <= c2 * -slope and not bad[0]):
            alpha, f_new = alpha1, f1
        else:
            alpha, f_new, _ = _scalar_search_wolfe1(phi, derphi, f0, f_prev, slope, c1=c1,
                                                    c2=c2, amax=1e10, amin=1e-100, xtol=1e-14)
    if alpha is None or bad[0] or not math.isfinite(f_new):
        return None
    if alpha not in grads:
        derphi(alpha)
    g_new = grads[alpha]
    if not np.isfinite(g_new).all():
        return None
    return alpha, seen[alpha][0], seen[alpha][1], g_new


class LineSearchResult(NamedTuple):
    """Outcome of :func:`backtracking`: ``alpha`` is 0 when no step was found."""

    alpha: float
    fun: float
    x: Optional[np.ndarray]
    evaluations: int


def backtracking(fun: Callable[[np.ndarray], float], x: np.ndarray, p: np.ndarray, f0: float,
                 slope: float, *, alpha0: float = 1.0, c1: float = 1e-4,
                 min_alpha: float = 0.0, max_evaluations: int = 60) -> LineSearchResult:
    """Find ``α`` with ``f(x + α p) <= f0 + c1 α slope`` by safeguarded backtracking.

    Parameters
    ----------
    fun : callable
        Objective on flat vectors; may return nan or inf.
    x, p : ndarray
        Point and descent direction (``slope = g @ p < 0``).
    f0, slope : float
        ``f(x)`` and the directional derivative ``g @ p``.
    alpha0 : float
        First trial step.
    c1 : float
        Armijo (sufficient decrease) constant.
    min_alpha : float
        Give up once the step falls below this.
    max_evaluations : int
        Give up after this many trial points.

    Returns
    -------
    LineSearchResult
        The accepted step, its value and point, and the number of evaluations;
        ``alpha == 0`` means failure.
    """
    alpha = alpha0
    prev_alpha = prev_f = None
    for evals in range(1, max_evaluations + 1):
        x_new = x + alpha * p
        f_new = fun(x_new)
        if math.isfinite(f_new):
            if f_new <= f0 + c1 * alpha * slope:
                return LineSearchResult(alpha, f_new, x_new, evals)
            trial = _interpolate(f0, slope, alpha, f_new, prev_alpha, prev_f)
            new_alpha = min(max(trial, 0.1 * alpha), 0.5 * alpha)
            prev_alpha, prev_f = alpha, f_new
        else:
            new_alpha = 0.1 * alpha
            prev_alpha = prev_f = None
        alpha = new_alpha
        if alpha < min_alpha:
            return LineSearchResult(0.0, f0, None, evals)
    return LineSearchResult(0.0, f0, None, max_evaluations)


def _interpolate(f0: float, slope: float, a: float, fa: float, b: Optional[float],
                 fb: Optional[float]) -> float:
    """Minimiser of the quadratic (or, with a second point, cubic) model of φ."""
    if b is None:
        denom = 2.0 * (fa - f0 - slope * a)
        return -slope * a * a / denom if denom > 0.0 else 0.5 * a
    # cubic through (0, f0, slope), (a, fa), (b, fb): N&W eq. 3.59
    ra = fa - f0 - slope * a
    rb = fb - f0 - slope * b
    det = a * a * b * b * (a - b)
    if det == 0.0:
        return 0.5 * a
    c3 = (b * b * ra - a * a * rb) / det
    c2 = (-b ** 3 * ra + a ** 3 * rb) / det
    if c3 == 0.0:
        return -slope / (2.0 * c2) if c2 > 0.0 else 0.5 * a
    disc = c2 * c2 - 3.0 * c3 * slope
    if disc < 0.0:
        return 0.5 * a
    return (-c2 + math.sqrt(disc)) / (3.0 * c3)
