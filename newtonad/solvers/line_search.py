"""Line searches: strong Wolfe (Moré–Thuente), Armijo backtracking.

:func:`wolfe` finds a step satisfying the strong Wolfe conditions with the
Moré–Thuente search (J. J. Moré and D. J. Thuente, "Line search algorithms with
guaranteed sufficient decrease", ACM TOMS 20, 1994), the algorithm of MINPACK-2's
``dcsrch`` that scipy's Newton-CG uses. newtonad carries its own implementation
(:class:`MoreThuente` and :func:`_safeguarded_step`) because scipy exposes it
only through a private module. The first trial step is scipy's
``min(1, 2.02 (f_k - f_{k-1}) / φ'(0))``, so newton-cg takes the steps scipy's
Newton-CG takes. The search may lengthen the step. When it fails (for instance on
non-finite values) :func:`wolfe` returns ``None`` and the caller falls back to
:func:`backtracking`.

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

from .linalg import dot

__all__ = ["LineSearchResult", "MoreThuente", "backtracking", "first_step", "wolfe",
           "wolfe_scalar"]

# Moré–Thuente's constants: extrapolation bounds of a trial step before the
# minimiser is bracketed (section 4 of the paper), the fraction of the bracket
# a step must cut (else bisect), and the bound on trial steps of one search.
_XTRAP_LOWER = 1.1
_XTRAP_UPPER = 4.0
_BISECT_IF_ABOVE = 0.66
_MAX_TRIALS = 100
# the bounds and tolerance :func:`wolfe` searches with: those of scipy's
# line_search_wolfe1 (MINPACK-2's dcsrch), which scipy's Newton-CG calls with its
# defaults; a step capped at 50 keeps a step taken on negative curvature from
# crossing many basins of a periodic objective
_STPMIN, _STPMAX, _XTOL = 1e-8, 50.0, 1e-14


def _cubic_minimiser(a: float, fa: float, da: float, b: float, fb: float, db: float,
                     clip_sqrt: bool = False) -> tuple[float, float]:
    """``(γ, θ)`` of the cubic through ``(a, fa, da)`` and ``(b, fb, db)``.

    The cubic's minimiser is ``b + r (a - b)`` with ``r = (γ - db + θ) / (2γ - db + da)``
    when ``γ`` carries the sign that makes it the minimiser (callers set it).
    ``θ`` and ``γ`` are scaled by ``s = max(|θ|, |da|, |db|)`` against overflow.
    """
    theta = 3.0 * (fa - fb) / (b - a) + da + db
    s = max(abs(theta), abs(da), abs(db))
    disc = (theta / s) ** 2 - (da / s) * (db / s)
    if clip_sqrt:
        disc = max(0.0, disc)
    return s * math.sqrt(disc), theta


def _safeguarded_step(stx: float, fx: float, dx: float, sty: float, fy: float, dy: float,
                      stp: float, fp: float, dp: float, bracketed: bool, stmin: float,
                      stmax: float) -> tuple[float, float, float, float, float, float, float, bool]:
    """One safeguarded trial step and the updated interval of uncertainty.

    The four cases of section 4 of Moré & Thuente (1994): ``stx`` is the best step
    so far, ``sty`` the other end of the interval, ``stp`` the current trial step;
    ``f*`` are values and ``d*`` derivatives. Returns
    ``(stx, fx, dx, sty, fy, dy, new_stp, bracketed)``.
    """
    same_sign = dp * math.copysign(1.0, dx)
    if fp > fx:
        # case 1: higher value; the minimiser is bracketed. Take the cubic step if
        # it is closer to stx than the quadratic (value-and-slope) step, else their mean.
        gamma, theta = _cubic_minimiser(stx, fx, dx, stp, fp, dp)
        if stp < stx:
            gamma = -gamma
        r = ((gamma - dx) + theta) / (((gamma - dx) + gamma) + dp)
        cubic = stx + r * (stp - stx)
        quad = stx + ((dx / ((fx - fp) / (stp - stx) + dx)) / 2.0) * (stp - stx)
        new = cubic if abs(cubic - stx) < abs(quad - stx) else cubic + (quad - cubic) / 2.0
        bracketed = True
    elif same_sign < 0.0:
        # case 2: lower value, derivatives of opposite sign: bracketed. Take the step
        # farther from stp of the cubic and the secant step.
        gamma, theta = _cubic_minimiser(stx, fx, dx, stp, fp, dp)
        if stp > stx:
            gamma = -gamma
        r = ((gamma - dp) + theta) / (((gamma - dp) + gamma) + dx)
        cubic = stp + r * (stx - stp)
        secant = stp + (dp / (dp - dx)) * (stx - stp)
        new = cubic if abs(cubic - stp) > abs(secant - stp) else secant
        bracketed = True
    elif abs(dp) < abs(dx):
        # case 3: lower value, same sign, smaller derivative magnitude. The cubic may
        # have no minimiser in the right direction; then go to the bound.
        gamma, theta = _cubic_minimiser(stx, fx, dx, stp, fp, dp, clip_sqrt=True)
        if stp > stx:
            gamma = -gamma
        r = ((gamma - dp) + theta) / ((gamma + (dx - dp)) + gamma)
        if r < 0.0 and gamma != 0.0:
            cubic = stp + r * (stx - stp)
        elif stp > stx:
            cubic = stmax
        else:
            cubic = stmin
        secant = stp + (dp / (dp - dx)) * (stx - stp)
        if bracketed:
            # the nearer step, kept inside 66 % of the way to sty
            new = cubic if abs(cubic - stp) < abs(secant - stp) else secant
            if stp > stx:
                new = min(stp + _BISECT_IF_ABOVE * (sty - stp), new)
            else:
                new = max(stp + _BISECT_IF_ABOVE * (sty - stp), new)
        else:
            new = cubic if abs(cubic - stp) > abs(secant - stp) else secant
            new = max(stmin, min(stmax, new))
    else:
        # case 4: lower value, same sign, derivative not smaller: the minimiser of
        # the cubic through stp and sty when bracketed, else a bound.
        if bracketed:
            gamma, theta = _cubic_minimiser(stp, fp, dp, sty, fy, dy)
            if stp > sty:
                gamma = -gamma
            r = ((gamma - dp) + theta) / (((gamma - dp) + gamma) + dy)
            new = stp + r * (sty - stp)
        elif stp > stx:
            new = stmax
        else:
            new = stmin

    # the interval of uncertainty keeps the best step at stx
    if fp > fx:
        sty, fy, dy = stp, fp, dp
    else:
        if same_sign < 0.0:
            sty, fy, dy = stx, fx, dx
        stx, fx, dx = stp, fp, dp
    return stx, fx, dx, sty, fy, dy, new, bracketed


class MoreThuente:
    """Moré–Thuente's search for a step with ``φ(α) <= φ(0) + c1 α φ'(0)`` and
    ``|φ'(α)| <= c2 |φ'(0)|`` (sufficient decrease and strong curvature).

    A reverse-communication state machine, as in the paper: :meth:`start` takes
    ``φ(0)``, ``φ'(0)`` and the first trial step; :meth:`next_step` takes ``φ`` and
    ``φ'`` at the current trial and returns the next trial step, or ``None`` when
    the search has ended (then :attr:`converged` says whether the current trial
    step satisfies both conditions).

    Parameters
    ----------
    c1, c2 : float
        Sufficient-decrease and curvature constants, ``0 < c1 < c2 < 1``.
    xtol : float
        Stop (without convergence) when the interval of uncertainty is shorter
        than ``xtol`` times its right end.
    stpmin, stpmax : float
        Bounds on the step.
    """

    def __init__(self, c1: float = 1e-4, c2: float = 0.9, xtol: float = _XTOL,
                 stpmin: float = _STPMIN, stpmax: float = _STPMAX) -> None:
        if not 0.0 < c1 < c2 < 1.0:
            raise ValueError(f"Wolfe constants need 0 < c1 < c2 < 1, got c1={c1}, c2={c2}")
        self.c1, self.c2, self.xtol = c1, c2, xtol
        self.stpmin, self.stpmax = stpmin, stpmax
        self.converged = False

    def start(self, f0: float, d0: float, stp: float) -> float:
        """Begin a search from ``φ(0) = f0``, ``φ'(0) = d0 < 0``; return the first trial step."""
        if not d0 < 0.0:
            raise ValueError(f"not a descent direction: φ'(0) = {d0}")
        if not self.stpmin <= stp <= self.stpmax:
            raise ValueError(f"first step {stp} outside [{self.stpmin}, {self.stpmax}]")
        self.f0, self.d0 = f0, d0
        self.dtest = self.c1 * d0  # slope of the sufficient-decrease line
        self.bracketed = False
        self.stage1 = True  # until a step with decrease and φ' >= 0 is seen
        self.width = self.stpmax - self.stpmin
        self.width_before = 2.0 * self.width
        self.stx = self.sty = 0.0
        self.fx = self.fy = f0
        self.dx = self.dy = d0
        self.stmin = 0.0
        self.stmax = stp + _XTRAP_UPPER * stp
        self.stp = stp
        self.converged = False
        return stp

    def next_step(self, f: float, d: float) -> Optional[float]:
        """Given ``φ(stp) = f`` and ``φ'(stp) = d``, the next trial step or ``None`` when done."""
        stp = self.stp
        ftest = self.f0 + stp * self.dtest
        if self.stage1 and f <= ftest and d >= 0.0:
            self.stage1 = False
        if f <= ftest and abs(d) <= self.c2 * -self.d0:
            self.converged = True
            return None
        # the search cannot make progress: rounding errors, interval below xtol,
        # or a bound reached with the conditions that keep pushing towards it
        if ((self.bracketed and (stp <= self.stmin or stp >= self.stmax))
                or (self.bracketed and self.stmax - self.stmin <= self.xtol * self.stmax)
                or (stp == self.stpmax and f <= ftest and d <= self.dtest)
                or (stp == self.stpmin and (f > ftest or d >= self.dtest))):
            return None

        if self.stage1 and self.fx >= f > ftest:
            # stage 1 on the auxiliary ψ(α) = φ(α) - φ(0) - c1 α φ'(0), as the paper
            # prescribes while no step with decrease and φ' >= 0 has been seen
            g = self.dtest
            stx, fxm, dxm, sty, fym, dym, new, self.bracketed = _safeguarded_step(
                self.stx, self.fx - self.stx * g, self.dx - g,
                self.sty, self.fy - self.sty * g, self.dy - g,
                stp, f - stp * g, d - g, self.bracketed, self.stmin, self.stmax)
            self.stx, self.fx, self.dx = stx, fxm + stx * g, dxm + g
            self.sty, self.fy, self.dy = sty, fym + sty * g, dym + g
        else:
            (self.stx, self.fx, self.dx, self.sty, self.fy, self.dy, new,
             self.bracketed) = _safeguarded_step(
                self.stx, self.fx, self.dx, self.sty, self.fy, self.dy,
                stp, f, d, self.bracketed, self.stmin, self.stmax)

        if self.bracketed:
            # bisect when the interval did not shrink enough in two steps
            if abs(self.sty - self.stx) >= _BISECT_IF_ABOVE * self.width_before:
                new = self.stx + 0.5 * (self.sty - self.stx)
            self.width_before = self.width
            self.width = abs(self.sty - self.stx)
            self.stmin, self.stmax = min(self.stx, self.sty), max(self.stx, self.sty)
        else:
            self.stmin = new + _XTRAP_LOWER * (new - self.stx)
            self.stmax = new + _XTRAP_UPPER * (new - self.stx)
        new = min(max(new, self.stpmin), self.stpmax)
        # no progress possible: try the best step so far as the last trial
        if self.bracketed and (new <= self.stmin or new >= self.stmax
                               or self.stmax - self.stmin <= self.xtol * self.stmax):
            new = self.stx
        self.stp = new
        return new


def first_step(f0: float, slope: float, f_prev: Optional[float]) -> float:
    """scipy's first trial step: ``min(1, 2.02 (f0 - f_prev) / slope)``, or 1."""
    if f_prev is None or slope == 0.0:
        return 1.0
    alpha = min(1.0, 1.01 * 2.0 * (f0 - f_prev) / slope)
    return 1.0 if alpha < 0.0 else alpha


class _NonFinite(Exception):
    """A trial step met a non-finite value or slope: :func:`wolfe` gives up on the search."""


def wolfe_scalar(phi: Callable[[float], float], derphi: Callable[[float], float], f0: float,
                 slope: float, f_prev: Optional[float] = None, *, c1: float = 1e-4,
                 c2: float = 0.9, stpmin: float = _STPMIN, stpmax: float = _STPMAX,
                 xtol: float = _XTOL, max_trials: int = _MAX_TRIALS
                 ) -> tuple[Optional[float], float]:
    """A strong Wolfe step of ``φ`` by :class:`MoreThuente`: ``(alpha, φ(alpha))``.

    ``alpha`` is ``None`` when the search ends without satisfying both conditions
    (rounding errors, a bound reached, ``max_trials`` trial steps, or a first step
    outside ``[stpmin, stpmax]``); the value is then that of the last trial step.

    Parameters
    ----------
    phi, derphi : callable
        ``φ(α)`` and ``φ'(α)``; each trial step calls both once, value first.
    f0, slope : float
        ``φ(0)`` and ``φ'(0) < 0``.
    f_prev : float, optional
        The objective at the previous iterate, which sets the first trial step
        (see :func:`first_step`).
    c1, c2, stpmin, stpmax, xtol : float
        See :class:`MoreThuente`.
    max_trials : int
        Bound on the trial steps.

    Returns
    -------
    tuple
        ``(alpha or None, value at the last trial step)``.

    Examples
    --------
    On ``φ(α) = (α - 3)^2`` the first trial step ``α = 1`` fails the curvature
    condition with ``c2 = 0.1`` (``|φ'(1)| = 4 > 0.6``); the second trial step, the
    minimiser of the cubic through ``α = 0`` and ``α = 1``, is exact for a quadratic:

    >>> alpha, f = wolfe_scalar(lambda a: (a - 3) ** 2, lambda a: 2 * (a - 3), 9.0, -6.0,
    ...                         c2=0.1)
    >>> alpha, f
    (3.0, 0.0)
    """
    search = MoreThuente(c1, c2, xtol, stpmin, stpmax)
    stp = first_step(f0, slope, f_prev)
    if not stpmin <= stp <= stpmax:  # e.g. 0 when f did not change: no search possible
        return None, f0
    search.start(f0, slope, stp)
    f = f0
    for _ in range(max_trials):
        f = phi(stp)
        nxt = search.next_step(f, derphi(stp))
        if nxt is None:
            return (stp if search.converged else None), f
        stp = nxt
    return None, f


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
    seen: dict[float, tuple[np.ndarray, float]] = {}
    grads: dict[float, np.ndarray] = {}

    def phi(s: float) -> float:
        if s not in seen:
            xs = p * s
            xs += x
            seen[s] = (xs, fun(xs))
        f = seen[s][1]
        if not math.isfinite(f):
            raise _NonFinite
        return f

    def derphi(s: float) -> float:
        if s not in grads:
            phi(s)
            grads[s] = jac(seen[s][0])
        d = dot(grads[s], p)
        if not math.isfinite(d):
            raise _NonFinite
        return d

    try:
        with np.errstate(all="ignore"):
            alpha, _ = wolfe_scalar(phi, derphi, f0, slope, f_prev, c1=c1, c2=c2)
    except _NonFinite:  # a nan or inf: the caller's backtracking copes with those
        return None
    if alpha is None:
        return None
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
