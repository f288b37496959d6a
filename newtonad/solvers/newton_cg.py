"""newton-cg: truncated (inexact) Newton with a line search.

Each outer iteration solves ``H p = -g`` approximately by conjugate gradients,
stopping at the relative residual ``η_k``, then searches along ``p`` for a
decrease. This is the line-search Newton–CG method, algorithm 7.1 of Nocedal &
Wright, *Numerical Optimization*, 2nd ed. (2006), with

* the forcing sequence ``η_k = min(1/2, ‖g_k‖)`` of their theorem 7.2, which
  makes the local convergence quadratic; the residual is measured in the
  1-norm as scipy's Newton-CG does. Eisenstat–Walker's choice 2 (S. C.
  Eisenstat and H. F. Walker, SIAM J. Sci. Comput. 17, 1996) was measured
  against it on the built-in problem set: used alone it leads chained
  Rosenbrock (n = 10^4) into its local minimum, and bounded below by
  ``min(1/2, ‖g_k‖)`` or ``min(1/2, sqrt(‖g_k‖))`` it needs more outer
  iterations than scipy on more problems (12 and 16 of 57, against 8);
* negative curvature used, not discarded: when CG meets a direction ``d`` with
  ``d @ H d <= 0`` the step goes on along ``d`` (a descent direction) as far as a
  positive-curvature step of the same size would, and the line search may then
  lengthen it (Gould, Lucidi, Roma & Toint, "Exploiting negative curvature
  directions in linesearch methods for unconstrained optimization", Optim.
  Methods Softw. 14, 2000);
* a strong Wolfe line search (Moré–Thuente), with Armijo backtracking as the
  fallback that also copes with non-finite trial values (:mod:`.line_search`).
"""

from __future__ import annotations

import math
from typing import Callable, NamedTuple, Optional

import numpy as np
from scipy.optimize import OptimizeResult

from .linalg import asum, axpy, dot, norm, truncated_cg_step
from .line_search import backtracking, wolfe
from .monitor import Monitor, Status, past
from .problem import FlatProblem, HessOperator
from .scratch import POOL_FROM, Workspace, borrow, give_back
from .trust_region import check_start, converged

_EPS = float(np.finfo(float).eps)

__all__ = ["minimize_newton_cg", "truncated_cg", "CGStep", "run_native"]


class CGStep(NamedTuple):
    """A truncated-CG direction and how CG ended.

    ``p``, the CG iterations, whether negative curvature was met, and whether a
    Hessian product came out nan or inf (CG stopped without using it).
    """

    p: np.ndarray
    iterations: int
    negative_curvature: bool
    nonfinite_hessian: bool = False


#: backtracking searches restarted 10 times shorter after a non-finite gradient
_MAX_RESTARTS = 20


def truncated_cg(hv: HessOperator, g: np.ndarray, gnorm: float, eta: float,
                 maxiter: int, deadline: float = math.inf,
                 workspace: Optional[Workspace] = None) -> CGStep:
    """Approximately solve ``H p = -g`` by CG until ``‖H p + g‖₁ <= η ‖g‖₁``.

    This is the inner loop of algorithm 7.1 of Nocedal & Wright, 2nd ed. On a
    direction ``d`` of non-positive curvature the loop stops and returns
    ``z + (r @ r / |d @ H d|) d`` (for the first direction, ``d = -g``), a
    descent direction that exploits the curvature instead of discarding it.
    A product ``H d`` with nan or inf in it, or the :func:`.monitor.clock`
    ``deadline``, stops the loop at the current iterate ``z`` (which is 0, no
    direction, if the very first product is not finite).

    Each iteration's vector work is one function
    (:func:`~newtonad.solvers.linalg.truncated_cg_step`). With a ``workspace``
    (:mod:`.scratch`) the vectors are its own and the direction returned is valid
    until the next call with it; without, they are new arrays.
    """
    n = g.size
    if workspace is None or n < POOL_FROM:
        z, r, d = np.empty(n), np.empty(n), np.empty(n)
    else:
        z, r, d = (workspace.vector(name, n) for name in ("cg-z", "cg-r", "cg-d"))
    np.negative(g, out=d)  # z and r are set by the first iteration (z = 0, r = g before it)
    rr = gnorm * gnorm
    r1 = asum(g)  # sum(|r|), kept up to date by truncated_cg_step
    tol1 = eta * r1
    for j in range(maxiter):
        if r1 <= tol1 or (j > 0 and past(deadline)):
            return CGStep(_started(z, j), j, False)
        bd = hv(d)
        # curv = d @ H d and, when positive: z += alpha d, r += alpha H d, d = beta d - r
        curv, rr_new, r1_new = truncated_cg_step(d, bd, z, r, g, rr, j == 0)
        if not math.isfinite(curv):
            return CGStep(_started(z, j), j + 1, False, True)
        if curv <= 0.0:
            # along d the model falls as -t rr + t^2 curv / 2 without bound; go as
            # far as a positive-curvature step of the same magnitude would
            scale = rr / -curv if curv < 0.0 else 1.0
            if not math.isfinite(scale):
                scale = 1.0
            axpy(scale, d, _started(z, j))
            return CGStep(z, j + 1, True)
        rr, r1 = rr_new, r1_new
    return CGStep(z, maxiter, False)


def _preconditioned_cg(problem: FlatProblem, x: np.ndarray, hv: HessOperator, g: np.ndarray,
                       eta: float, maxiter: int, deadline: float, kind: str) -> CGStep:
    """:func:`truncated_cg` in the variables ``y = Cᵀ p`` of ``M = C Cᵀ`` at ``x``
    (:mod:`.preconditioners`); the direction returned is ``p = C⁻ᵀ y``."""
    from .preconditioners import make_preconditioner, precondition_products, sparse_hessian_at

    m = make_preconditioner(kind, sparse_hessian_at(problem, x, kind))
    assert m is not None
    gt = m.left(g)
    step = truncated_cg(precondition_products(m, hv), gt, norm(gt), eta, maxiter, deadline)
    return step._replace(p=m.right(step.p))


def _started(z: np.ndarray, j: int) -> np.ndarray:
    """The iterate ``z`` after ``j`` iterations: zero before the first (which sets it)."""
    if j == 0:
        z.fill(0.0)
    return z


def minimize_newton_cg(problem: FlatProblem, x0: np.ndarray, *, gtol: Optional[float] = None,
                       xtol: Optional[float] = None, maxiter: Optional[int] = None,
                       c1: float = 1e-4, c2: float = 0.9, max_time: Optional[float] = None,
                       disp: bool = False, return_all: bool = False,
                       callback: Optional[Callable[[np.ndarray, float], None]] = None,
                       start: Optional[tuple[float, np.ndarray]] = None,
                       started: Optional[float] = None,
                       preconditioner: Optional[str] = None) -> OptimizeResult:
    """Minimise by line-search truncated Newton (see the module docstring).

    Parameters
    ----------
    problem : FlatProblem
        The objective on flat vectors.
    x0 : ndarray, shape (n,)
        Starting point (finite).
    gtol : float, optional
        Stop when the Euclidean norm of the gradient is below this: 1e-5 by
        default, 0 when ``xtol`` is given, so that a caller who sets scipy's
        option gets scipy's stopping rule, which has no gradient test. Without
        ``xtol`` the run also ends, with status 2, on a step that leaves ``f`` and
        ``x`` as they were to rounding (where a singular Hessian's gradient is
        noise above ``gtol``: see :func:`_stalled`).
    xtol : float, optional
        scipy's test: stop when the step's 1-norm is at most ``n * xtol``.
        Off by default: that test stops scipy's Newton-CG far from the minimum
        on badly scaled problems (chained Rosenbrock, n = 10^4, ends at f = 9.9e3).
    maxiter : int, optional
        Iteration budget, ``200 * n`` by default.
    c1, c2 : float
        Wolfe constants of the line search, ``0 < c1 < c2 < 1``.
    max_time : float, optional
        Wall-clock limit in seconds.
    disp, return_all, callback : optional
        See :class:`~newtonad.solvers.monitor.Monitor`.
    start : (float, ndarray), optional
        Value and gradient at ``x0``, finite, when the caller has them (``minimize``
        evaluates them first, :mod:`.start`); else they are computed here and a value
        or gradient that is not finite raises ``ValueError``.
    started : float, optional
        :func:`.monitor.clock` value at which the run started, when before this call
        (``minimize`` evaluates ``x0`` first): ``max_time`` counts from it.
    preconditioner : {None, "diagonal", "ichol"}
        Preconditioned CG (:mod:`.preconditioners`): CG on ``C⁻¹ H C⁻ᵀ y = -C⁻¹ g``,
        ``p = C⁻ᵀ y``, with ``M = C Cᵀ`` formed at each iterate from the sparse
        Hessian there.

    Returns
    -------
    OptimizeResult
        The last (and best) point with the reason for stopping.
    """
    if not 0 < c1 < c2 < 1:
        raise ValueError(f"need 0 < c1 < c2 < 1, got c1 = {c1}, c2 = {c2}")
    maxiter = 200 * problem.n if maxiter is None else int(maxiter)
    if gtol is None:
        gtol = 1e-5 if xtol is None else 0.0
    monitor = Monitor(problem, maxiter=maxiter, max_time=max_time, callback=callback,
                      disp=disp, return_all=return_all, step_label="step",
                      started=started)
    workspace = borrow()  # the CG vectors, warm from an earlier run if any
    try:
        return _newton_cg_loop(problem, x0, monitor, workspace, gtol=gtol, xtol=xtol,
                               maxiter=maxiter, c1=c1, c2=c2, start=start,
                               preconditioner=preconditioner)
    finally:
        give_back(workspace)


def _newton_cg_loop(problem: FlatProblem, x0: np.ndarray, monitor: Monitor,
                    workspace: Workspace, *, gtol: float, xtol: Optional[float],
                    maxiter: int, c1: float, c2: float,
                    start: Optional[tuple[float, np.ndarray]],
                    preconditioner: Optional[str] = None) -> OptimizeResult:
    """The outer loop of :func:`minimize_newton_cg` (arguments checked there)."""
    n = problem.n
    cg_maxiter = max(2 * n, 20)
    if start is None:
        problem.expect_products(x0)  # the gradient at x0 then keeps the residuals
        start = check_start(problem, x0)
    f, g = start
    x = x0
    gnorm = norm(g)
    monitor.start_run(x, f, gnorm, 0.0)
    f_prev = None
    k = 0
    status = Status.SUCCESS if converged(gnorm, gtol) else None
    if status is None and maxiter <= 0:
        status = Status.MAXITER
    while status is None:
        if monitor.out_of_time():  # no Hessian products past the time limit
            status = Status.MAX_TIME
            break
        eta = min(0.5, gnorm)
        hv = problem.linearize_hessp(x, scratch=True)  # truncated_cg drops each H d at once
        if preconditioner is None:
            step = truncated_cg(hv, g, gnorm, eta, cg_maxiter, monitor.deadline, workspace)
        else:
            step = _preconditioned_cg(problem, x, hv, g, eta, cg_maxiter, monitor.deadline,
                                      preconditioner)
        if step.nonfinite_hessian:
            problem.note_nonfinite_hessian()
        if monitor.out_of_time():
            # no line search past the time limit: the direction CG found by then gets
            # one trial, as a trust-region step does (one value, one gradient)
            found = _unit_step(problem, x, f, g, step.p, c1)
            if found is not None:
                x, f, g = found[1], found[2], found[3]
                k += 1
                monitor.iteration(k, x, f, norm(g), norm(step.p), step.iterations)
            status = Status.MAX_TIME
            break
        if xtol is not None and np.array_equal(x + step.p, x):
            # a step below the rounding of x: scipy's test of the step's 1-norm
            # against n * xtol holds whatever xtol is, and no search can move x
            k += 1
            status = monitor.iteration(k, x, f, gnorm, 0.0, step.iterations)
            if status is not Status.CALLBACK:
                status = Status.SUCCESS
            break
        found = _search(problem, x, f, g, step, f_prev, c1, c2)
        if found is None:  # p failed: fall back on steepest descent once
            ghg = dot(g, hv(g)) if not step.nonfinite_hessian else math.nan
            # the Cauchy step of the quadratic model, or a unit-free guess without curvature
            scale = gnorm * gnorm / ghg if 0.0 < ghg < math.inf else 1.0 / max(gnorm, 1.0)
            found = _search(problem, x, f, g, CGStep(-scale * g, 0, False), None, c1, c2)
        k += 1
        if found is None:
            monitor.iteration(k, x, f, gnorm, 0.0, step.iterations)
            status = Status.NO_PROGRESS
            break
        alpha, x_new, f_new, g_new = found
        step_norm = alpha * norm(step.p)
        x, f, f_prev, g = x_new, f_new, f, g_new
        gnorm, g_before = norm(g), gnorm
        stalled = _stalled(f_prev, f, step_norm, x, gnorm, g_before)
        status = monitor.iteration(k, x, f, gnorm, step_norm, step.iterations)
        if status is Status.CALLBACK:
            break
        if converged(gnorm, gtol):
            status = Status.SUCCESS
        elif xtol is not None and alpha * asum(step.p) <= n * xtol:
            status = Status.SUCCESS
        elif stalled:
            status = Status.NO_PROGRESS
    return monitor.result(status, x, f, g, k)


def _stalled(f_before: float, f: float, step_norm: float, x: np.ndarray, gnorm: float,
             g_before: float) -> bool:
    """Whether an accepted step left ``f`` where it was to rounding: the end of the run.

    scipy's Newton-CG stops when the step's 1-norm is at most ``n * xtol``, an absolute
    length that ends badly scaled problems far from a stationary point; this is the
    test at the level of rounding instead. A decrease of ``f`` of at most
    ``10 ε max(1, |f|)`` is no decrease that can be measured, and then the step says
    which kind of point this is:

    * a step of at most ``10 ε ‖x‖`` moved ``x`` by a few units in its last place:
      the Newton direction is at the rounding of ``x``, so no later step can move it
      either (a singular Hessian's noise floor: there ``‖g‖`` is ``ε ‖H‖ ‖x‖``-sized
      noise above ``gtol`` that still falls or rises by any factor from step to step,
      so that the gradient says nothing);
    * a longer step that did not lower ``‖g‖`` by 10% either: rounding noise along a
      direction where ``f`` is flat.

    A step that lowers ``f`` by more than its rounding, or moves ``x`` by more than its
    rounding and lowers ``‖g‖`` by 10% or more (Newton's fast phase on a problem whose
    ``f`` is flat to rounding near its minimum), never ends the run here.

    Parameters
    ----------
    f_before, f : float
        ``f`` before and after the step.
    step_norm : float
        Euclidean length of the step taken.
    x : ndarray
        The point after the step.
    gnorm, g_before : float
        ``‖g‖`` after and before the step.
    """
    if f_before - f > 10.0 * _EPS * max(1.0, abs(f_before)):
        return False
    return gnorm >= 0.9 * g_before or step_norm <= 10.0 * _EPS * norm(x)


def _unit_step(problem: FlatProblem, x: np.ndarray, f: float, g: np.ndarray, p: np.ndarray,
               c1: float):
    """``(1, x + p, f, g)`` there if the whole step ``p`` decreases ``f`` enough (Armijo)
    and the gradient there is finite, else ``None``: a line search of one trial."""
    slope = dot(g, p)
    if not (slope < 0.0 and math.isfinite(slope) and np.isfinite(p).all()):
        return None
    x_new = x + p
    f_new = problem.fun(x_new)
    if not (math.isfinite(f_new) and f_new <= f + c1 * slope):
        return None
    g_new = problem.jac(x_new)
    return (1.0, x_new, f_new, g_new) if np.isfinite(g_new).all() else None


def _search(problem: FlatProblem, x: np.ndarray, f: float, g: np.ndarray, step: CGStep,
            f_prev: Optional[float], c1: float, c2: float):
    """Line search along ``step.p``: ``(alpha, x, f, g)`` at the new point, or ``None``.

    Strong Wolfe first; if that fails, Armijo backtracking, where a trial point
    whose gradient is not finite is treated like one whose value is not.
    """
    p = step.p
    slope = dot(g, p)
    if not (slope < 0.0 and math.isfinite(slope) and np.isfinite(p).all()):
        return None
    found = wolfe(problem.fun, problem.jac, x, p, f, slope, f_prev, c1=c1, c2=c2)
    if found is not None:
        return found
    pnorm = norm(p)
    min_alpha = 1e-16 * (1.0 + norm(x)) / pnorm
    alpha0 = 1.0
    for _ in range(_MAX_RESTARTS):
        ls = backtracking(problem.fun, x, p, f, slope, alpha0=alpha0, c1=c1, min_alpha=min_alpha)
        if ls.alpha == 0.0:
            return None
        g_new = problem.jac(ls.x)
        if np.isfinite(g_new).all():
            return ls.alpha, ls.x, ls.fun, g_new
        alpha0 = 0.1 * ls.alpha
    return None


def run_native(problem: FlatProblem, x0: np.ndarray, opts: dict,
               callback: Optional[Callable[[np.ndarray, float], None]],
               bounds: Optional[object] = None) -> OptimizeResult:
    """newton-cg as ``minimize`` runs it: the start checked (:mod:`.start`), then
    :func:`minimize_newton_cg` with the parsed options ``opts``."""
    from . import monitor
    from .start import native_start

    started = monitor.clock()
    start = native_start(problem, x0)
    if isinstance(start, OptimizeResult):
        return start
    return minimize_newton_cg(problem, x0, callback=callback, start=start, started=started,
                              **opts)
