"""newton-cg: truncated (inexact) Newton with a line search.

Each outer iteration solves ``H p = -g`` approximately by conjugate gradients,
stopping at the relative residual ``η_k`` given by the Eisenstat–Walker forcing
terms, then searches along ``p`` for a decrease. This is the line-search Newton–CG
method, algorithm 7.1 of Nocedal & Wright, *Numerical Optimization*, 2nd ed.
(2006), with

* forcing terms of S. C. Eisenstat and H. F. Walker, "Choosing the forcing terms
  in an inexact Newton method", SIAM J. Sci. Comput. 17 (1996), choice 2 with its
  safeguards (loose far from the solution, superlinear close to it);
* negative curvature used, not discarded: when CG meets a direction ``d`` with
  ``d @ H d <= 0`` the step goes on along ``d`` (a descent direction) as far as a
  positive-curvature step of the same size would, and the line search may then
  lengthen it (Gould, Lucidi, Roma & Toint, "Exploiting negative curvature
  directions in linesearch methods for unconstrained optimization", Optim.
  Methods Softw. 14, 2000);
* Armijo backtracking with safeguarded interpolation (:mod:`.line_search`).
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple, Optional

import numpy as np
from scipy.optimize import OptimizeResult

from .line_search import backtracking
from .linalg import axpy, scal_sub
from .monitor import Monitor, Status
from .problem import FlatProblem, HessOperator
from .trust_region import check_start

__all__ = ["minimize_newton_cg", "truncated_cg", "forcing_term", "CGStep"]


class CGStep(NamedTuple):
    """A truncated-CG direction: ``p``, CG iterations, negative curvature met."""

    p: np.ndarray
    iterations: int
    negative_curvature: bool


def forcing_term(gnorm: float, gnorm_prev: float, eta_prev: float, *, gamma: float = 0.9,
                 power: float = 2.0, eta_max: float = 0.9) -> float:
    """Eisenstat–Walker choice 2 with its safeguard: ``γ (‖g_k‖ / ‖g_{k-1}‖)^α``.

    The safeguard keeps ``η_k >= γ η_{k-1}^α`` while that is above 0.1, so one
    lucky decrease of ``‖g‖`` does not make the next solve needlessly accurate.
    """
    eta = gamma * (gnorm / gnorm_prev) ** power
    floor = gamma * eta_prev ** power
    if floor > 0.1:
        eta = max(eta, floor)
    return min(eta, eta_max)


def truncated_cg(hv: HessOperator, g: np.ndarray, gnorm: float, eta: float,
                 maxiter: int) -> CGStep:
    """Approximately solve ``H p = -g`` by CG to ``‖H p + g‖ <= η ‖g‖``.

    This is the inner loop of algorithm 7.1 of Nocedal & Wright, 2nd ed. On a
    direction ``d`` of non-positive curvature the loop stops and returns
    ``z + (r @ r / |d @ H d|) d`` (or the scaled steepest descent direction if
    it is the first), a descent direction that exploits the curvature.
    """
    n = g.size
    z = np.zeros(n)
    r = g.copy()
    d = -g
    rr = gnorm * gnorm
    tol2 = (eta * gnorm) ** 2
    for j in range(maxiter):
        bd = hv(d)
        curv = float(d @ bd)
        if curv <= 0.0:
            dd = float(d @ d)
            # along d the model falls as -t rr + t^2 curv / 2; step as far as a
            # positive-curvature step of magnitude |curv| would
            scale = rr / max(-curv, 1e-300 * dd, 1e-300)
            if not math.isfinite(scale):
                scale = 1.0
            axpy(scale, d, z)
            return CGStep(z, j + 1, True)
        alpha = rr / curv
        axpy(alpha, d, z)
        axpy(alpha, bd, r)
        rr_new = float(r @ r)
        if rr_new <= tol2:
            return CGStep(z, j + 1, False)
        scal_sub(rr_new / rr, d, r)
        rr = rr_new
    return CGStep(z, maxiter, False)


def minimize_newton_cg(problem: FlatProblem, x0: np.ndarray, *, gtol: float = 1e-5,
                       xtol: Optional[float] = None, maxiter: Optional[int] = None,
                       c1: float = 1e-4, max_time: Optional[float] = None, disp: bool = False,
                       return_all: bool = False,
                       callback: Optional[Callable[[np.ndarray, float], None]] = None
                       ) -> OptimizeResult:
    """Minimise by line-search truncated Newton (see the module docstring).

    Parameters
    ----------
    problem : FlatProblem
        The objective on flat vectors.
    x0 : ndarray, shape (n,)
        Starting point (finite).
    gtol : float
        Stop when the Euclidean norm of the gradient is below this.
    xtol : float, optional
        scipy's test: also stop when the step's 1-norm is at most ``n * xtol``.
        Off by default: that test stops scipy's Newton-CG far from the minimum
        on badly scaled problems (chained Rosenbrock, n = 10^4, ends at f = 9.9e3).
    maxiter : int, optional
        Iteration budget, ``200 * n`` by default.
    c1 : float
        Armijo constant of the line search.
    max_time : float, optional
        Wall-clock limit in seconds.
    disp, return_all, callback : optional
        See :class:`~newtonad.solvers.monitor.Monitor`.

    Returns
    -------
    OptimizeResult
        The last (and best) point with the reason for stopping.
    """
    n = problem.n
    maxiter = 200 * n if maxiter is None else int(maxiter)
    cg_maxiter = max(2 * n, 20)
    monitor = Monitor(problem, maxiter=maxiter, max_time=max_time, callback=callback,
                      disp=disp, return_all=return_all, step_label="step")
    f, g = check_start(problem, x0)
    x = x0
    gnorm = math.sqrt(g @ g)
    monitor.start_run(x, f, gnorm, 0.0)
    gnorm_prev, eta = gnorm, 0.5
    k = 0
    status = Status.SUCCESS if gnorm < gtol else None
    if status is None and maxiter <= 0:
        status = Status.MAXITER
    while status is None:
        if k > 0:
            eta = forcing_term(gnorm, gnorm_prev, eta)
        eta = max(eta, min(0.5, 0.5 * gtol / gnorm))  # no more accuracy than gtol needs
        hv = problem.linearize_hessp(x)
        step = truncated_cg(hv, g, gnorm, eta, cg_maxiter)
        found = _search(problem, x, f, g, step, c1)
        if found is None:  # p failed: fall back on steepest descent once
            sd = CGStep(-g * (gnorm / max(math.sqrt(abs(g @ hv(g))), gnorm)), 0, False)
            found = _search(problem, x, f, g, sd, c1)
        k += 1
        if found is None:
            status = Status.NO_PROGRESS
            monitor.iteration(k, x, f, gnorm, 0.0, step.iterations)
            break
        x_new, f_new, g_new, step_norm1, step_norm = found
        x, f = x_new, f_new
        g = g_new
        gnorm_prev, gnorm = gnorm, math.sqrt(g @ g)
        status = monitor.iteration(k, x, f, gnorm, step_norm, step.iterations)
        if status is Status.CALLBACK:
            break
        if gnorm < gtol:
            status = Status.SUCCESS
        elif xtol is not None and step_norm1 <= n * xtol:
            status = Status.SUCCESS
    return monitor.result(status, x, f, g, k)


def _search(problem: FlatProblem, x: np.ndarray, f: float, g: np.ndarray, step: CGStep,
            c1: float):
    """Line search along ``step.p``; the new point with its gradient, or ``None``.

    A trial point whose gradient is not finite is treated like one whose value
    is not: the step is cut and the search goes on.
    """
    p = step.p
    slope = float(g @ p)
    if not slope < 0.0:
        return None
    pnorm = math.sqrt(p @ p)
    xnorm = math.sqrt(x @ x)
    min_alpha = 1e-16 * (1.0 + xnorm) / pnorm
    alpha0 = 1.0
    while True:
        ls = backtracking(problem.fun, x, p, f, slope, alpha0=alpha0, c1=c1, min_alpha=min_alpha)
        if ls.alpha == 0.0:
            return None
        alpha, x_new, f_new = ls.alpha, ls.x, ls.fun
        if step.negative_curvature and alpha == alpha0:
            # the model is unbounded along p: try longer steps while f keeps falling
            for _ in range(10):
                x_try = x + (2.0 * alpha) * p
                f_try = problem.fun(x_try)
                if not (math.isfinite(f_try) and f_try <= f + c1 * 2.0 * alpha * slope
                        and f_try < f_new):
                    break
                alpha, x_new, f_new = 2.0 * alpha, x_try, f_try
        g_new = problem.jac(x_new)
        if np.isfinite(g_new).all():
            return x_new, f_new, g_new, alpha * float(np.abs(p).sum()), alpha * pnorm
        alpha0 = 0.1 * alpha
